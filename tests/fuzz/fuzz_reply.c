/*
 * libFuzzer harness for the reply scanner and classifier (lib/proto/reply.h).
 *
 * Input: 3 bytes of seed for the piece lengths, then a node's byte stream.
 * The stream is scanned whole and in pieces; both must find the same
 * replies (type, length, body offset, error line) and the same protocol
 * error. A scan never takes more than it is given, MORE means it took
 * everything, a reply's len is the bytes taken since the previous one
 * ended, and the byte at its body offset is the type it reports ('!' for
 * '-', a blob error). Every error line, and the raw input, goes through
 * reply_classify(), whose redirects must carry a slot in range and a
 * NUL-terminated host:port that fits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/proto/reply.h"

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

static void classify(const char *line, size_t len)
{
    char addr[32];
    int slot = 7;
    memset(addr, 'Z', sizeof addr);
    enum reply_redirect r = reply_classify(line, len, &slot, addr, sizeof addr);
    if (r == REPLY_MOVED || r == REPLY_ASK) {
        if (slot < 0 || slot > 16383)
            abort();
        size_t n = strnlen(addr, sizeof addr);
        if (n == sizeof addr || !memchr(addr, ':', n))
            abort();
    } else if (slot != -1 || addr[0] != '\0') {
        abort();        /* no slot and no address unless a redirect */
    }
}

static struct out run(const char *in, size_t len, const uint8_t *seed)
{
    struct reply_scanner s;
    struct out t = {0};
    uint32_t r = seed ? (uint32_t)seed[0] << 16 | (uint32_t)seed[1] << 8 | seed[2] : 0;
    size_t at = 0, since = 0;

    reply_scanner_init(&s);
    while (at < len) {
        size_t piece = len - at;
        if (seed) {
            r = r * 1103515245u + 12345u;
            piece = 1 + (r >> 16) % 13;
            if (piece > len - at)
                piece = len - at;
        }
        size_t off = 0;
        while (off < piece) {
            enum reply_scan_status st;
            size_t used = reply_scan(&s, in + at + off, piece - off, &st);
            if (used > piece - off)
                abort();
            off += used;
            since += used;
            if (st == REPLY_SCAN_MORE) {
                if (off != piece)
                    abort();
            } else if (st == REPLY_SCAN_DONE) {
                if (s.len != since || strlen(s.errline) >= REPLY_ERRLINE_MAX)
                    abort();
                if (s.type != '-' && s.errline[0])
                    abort();
                char wire = s.body < s.len ? in[at + off - s.len + s.body] : 0;
                if (wire != s.type && !(s.type == '-' && wire == '!'))
                    abort();
                out_add(&t, &s.type, 1);
                out_add(&t, &s.len, sizeof s.len);
                out_add(&t, &s.body, sizeof s.body);
                out_add(&t, s.errline, strlen(s.errline) + 1);
                if (s.type == '-')
                    classify(s.errline, strlen(s.errline));
                reply_scanner_init(&s);
                since = 0;
            } else {
                out_add(&t, "!", 1);
                if (reply_scan(&s, "+OK\r\n", 5, &st) != 0 || st != REPLY_SCAN_ERROR)
                    abort();
                return t;
            }
        }
        at += piece;
    }
    if (since)
        out_add(&t, "...", 3);
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    const char *in = (const char *)data + 3;
    size_t len = size - 3;
    struct out whole = run(in, len, NULL);
    struct out split = run(in, len, data);
    if (whole.len != split.len || (whole.len && memcmp(whole.s, split.s, whole.len) != 0))
        abort();
    free(whole.s);
    free(split.s);
    classify(in, len);
    return 0;
}
