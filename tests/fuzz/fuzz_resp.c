/*
 * libFuzzer harness for the RESP request parser (lib/proto/resp.h).
 *
 * Input: 4 control bytes, then the client's byte stream.
 *   byte 0: limits (max_bulk_len, max_command_len) and the pre-AUTH flag
 *   bytes 1-3: seed of the piece lengths the stream is fed in
 * The stream is parsed twice, whole and in pieces, and must give the same
 * transcript (commands and error), since the outcome may not depend on
 * fragmentation. Along the way: a feed never takes more than it is given,
 * MORE means it took everything, a command's cmd_len is exactly the bytes
 * taken since the previous one ended, every argument lies inside its
 * command, and the command's bytes are the canonical multibulk of its args.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/proto/resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct out {
    char  *s;
    size_t len, cap;
};

static void out_add(struct out *o, const void *p, size_t n)
{
    if (o->len + n > o->cap) {
        o->cap = (o->len + n) * 2 + 64;
        o->s = realloc(o->s, o->cap);
        if (!o->s)
            abort();
    }
    memcpy(o->s + o->len, p, n);
    o->len += n;
}

static void check_canonical(const char *base, size_t len, const struct resp_arg *a, int argc)
{
    char hdr[32];
    size_t w = 0;
    int n = snprintf(hdr, sizeof hdr, "*%d\r\n", argc);
    if (w + (size_t)n > len || memcmp(base + w, hdr, (size_t)n) != 0)
        abort();
    w += (size_t)n;
    for (int i = 0; i < argc; i++) {
        n = snprintf(hdr, sizeof hdr, "$%u\r\n", a[i].len);
        if (w + (size_t)n > len || memcmp(base + w, hdr, (size_t)n) != 0)
            abort();
        w += (size_t)n;
        if (a[i].off != w || w + a[i].len + 2 > len)
            abort();
        w += a[i].len;
        if (base[w] != '\r' || base[w + 1] != '\n')
            abort();
        w += 2;
    }
    if (w != len)
        abort();
}

static struct out run(const char *in, size_t len, const uint8_t *seed, int pieces,
                      long long max_bulk, size_t max_cmd, int unauth)
{
    struct resp_parser p;
    struct out t = {0};
    uint32_t r = seed ? (uint32_t)seed[0] << 16 | (uint32_t)seed[1] << 8 | seed[2] : 0;
    size_t at = 0, since = 0;

    resp_parser_init(&p, max_bulk, max_cmd);
    p.unauthenticated = unauth;
    while (at < len) {
        size_t piece = len - at;
        if (pieces) {
            r = r * 1103515245u + 12345u;
            piece = 1 + (r >> 16) % 17;
            if (piece > len - at)
                piece = len - at;
        }
        size_t off = 0;
        enum resp_parse_status st = RESP_PARSE_MORE;
        while (off < piece) {
            size_t used = resp_parser_feed(&p, in + at + off, piece - off, &st);
            if (used > piece - off)
                abort();
            off += used;
            since += used;
            if (st == RESP_PARSE_MORE) {
                if (off != piece)
                    abort();
            } else if (st == RESP_PARSE_DONE) {
                if (p.cmd_len != since)
                    abort();
                const char *base = p.is_inline ? p.inline_mb : in + at + off - p.cmd_len;
                size_t blen = p.is_inline ? p.inline_mb_len : p.cmd_len;
                if (p.argc > 0 || p.is_inline)
                    check_canonical(base, blen, p.args, p.argc);
                if (p.empty_inline != (p.is_inline && p.argc == 0))
                    abort();
                out_add(&t, p.is_inline ? "I" : "M", 1);
                for (int i = 0; i < p.argc; i++) {
                    out_add(&t, &p.args[i].len, sizeof p.args[i].len);
                    out_add(&t, base + p.args[i].off, p.args[i].len);
                }
                out_add(&t, ";", 1);
                resp_parser_next(&p);
                since = 0;
            } else {
                if (!p.err)
                    abort();
                out_add(&t, "!", 1);
                out_add(&t, p.err, strlen(p.err));
                if (resp_parser_feed(&p, "*1\r\n", 4, &st) != 0 || st != RESP_PARSE_ERROR)
                    abort();
                goto out;
            }
        }
        at += piece;
    }
    if (since)
        out_add(&t, "...", 3);
out:
    resp_parser_free(&p);
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const long long bulks[4] = { 512LL << 20, 0, 3, 100 };
    static const size_t cmds[4] = { 0, 16, 40, 1 << 20 };
    if (size < 4)
        return 0;
    long long max_bulk = bulks[data[0] & 3];
    size_t max_cmd = cmds[(data[0] >> 2) & 3];
    int unauth = (data[0] >> 4) & 1;
    const char *in = (const char *)data + 4;
    size_t len = size - 4;

    struct out whole = run(in, len, NULL, 0, max_bulk, max_cmd, unauth);
    struct out split = run(in, len, data + 1, 1, max_bulk, max_cmd, unauth);
    if (whole.len != split.len || (whole.len && memcmp(whole.s, split.s, whole.len) != 0))
        abort();
    free(whole.s);
    free(split.s);

    /* the standalone inline splitter on the raw bytes */
    char *mb = NULL;
    size_t mb_len = 0;
    struct resp_arg *args = NULL;
    int argc = 0;
    if (resp_inline_to_multibulk(in, len, &mb, &mb_len, &args, &argc) == 0) {
        check_canonical(mb, mb_len, args, argc);
        free(mb);
        free(args);
    }
    return 0;
}
