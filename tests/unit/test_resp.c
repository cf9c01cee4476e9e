/*
 * The RESP request parser and reply writers (lib/proto/resp.h).
 *
 * Every vector is an input byte stream and what the parser makes of it,
 * written as a transcript:
 *   [3:GET 3:foo]   a multibulk command, each argument as <len>:<bytes>
 *   i[4:PING]       an inline command (its args index p->inline_mb)
 *   []  i[]         an empty command (argc 0), which the caller skips
 *   ...             the input ends inside a command (parser wants more)
 *   !<text>         a protocol error with exactly that text
 * Each vector is fed whole, one byte at a time, cut in two at every byte
 * boundary, and in random pieces; every feeding must give the same
 * transcript, since Redis's outcome does not depend on fragmentation.
 * Error texts were checked against redis-server 7.0.15.
 */
#include <check.h>
#include <event2/buffer.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/proto/resp.h"

#define DEF_BULK  (512LL * 1024 * 1024)
#define DEF_CMD   ((size_t)1 << 30)

/* ---- transcript harness ---- */

/* Check's ck_assert_* records every call's location (a write(2) each); the
 * harness checks millions of invariants, so it only calls Check on failure. */
#define REQUIRE(cond) do { \
        if (!(cond)) \
            ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #cond); \
    } while (0)

struct out {
    char  *s;
    size_t len, cap;
};

static void out_add(struct out *o, const void *p, size_t n)
{
    if (o->len + n + 1 > o->cap) {
        o->cap = (o->len + n + 1) * 2;
        o->s = realloc(o->s, o->cap);
        REQUIRE(o->s != NULL);
    }
    memcpy(o->s + o->len, p, n);
    o->len += n;
    o->s[o->len] = '\0';
}

static void out_str(struct out *o, const char *s)
{
    out_add(o, s, strlen(s));
}

struct run {
    struct resp_parser p;
    const char *input;      /* the whole stream, to find a command's bytes */
    size_t      abs;        /* bytes consumed so far */
    size_t      since;      /* bytes consumed since the last command ended */
    int         failed;
    struct out  t;
};

static void run_init(struct run *r, const char *input, long long max_bulk, size_t max_cmd,
                     int unauth)
{
    memset(r, 0, sizeof *r);
    resp_parser_init(&r->p, max_bulk, max_cmd);
    r->p.unauthenticated = unauth;
    r->input = input;
}

/* The multibulk encoding of args over base: what the client must have sent. */
static void encode(struct out *o, const char *base, const struct resp_arg *a, int argc)
{
    char hdr[32];
    snprintf(hdr, sizeof hdr, "*%d\r\n", argc);
    out_str(o, hdr);
    for (int i = 0; i < argc; i++) {
        snprintf(hdr, sizeof hdr, "$%u\r\n", a[i].len);
        out_str(o, hdr);
        out_add(o, base + a[i].off, a[i].len);
        out_str(o, "\r\n");
    }
}

static void record_command(struct run *r)
{
    struct resp_parser *p = &r->p;
    REQUIRE(p->cmd_len == r->since);
    const char *base;
    size_t base_len;
    if (p->is_inline) {
        base = p->inline_mb;
        base_len = p->inline_mb_len;
        out_str(&r->t, "i");
        REQUIRE(p->empty_inline == (p->argc == 0));
    } else {
        base = r->input + r->abs - p->cmd_len;
        base_len = p->cmd_len;
        REQUIRE(p->empty_inline == 0);
    }
    out_str(&r->t, "[");
    for (int i = 0; i < p->argc; i++) {
        char n[24];
        REQUIRE((size_t)p->args[i].off + p->args[i].len <= base_len);
        snprintf(n, sizeof n, "%s%u:", i ? " " : "", p->args[i].len);
        out_str(&r->t, n);
        out_add(&r->t, base + p->args[i].off, p->args[i].len);
    }
    out_str(&r->t, "]");
    /* the bytes forwarded are exactly the canonical encoding of the args */
    if (p->argc > 0 || p->is_inline) {
        struct out e = {0};
        encode(&e, base, p->args, p->argc);
        REQUIRE(e.len == base_len);
        REQUIRE(memcmp(e.s, base, base_len) == 0);
        free(e.s);
    }
}

/* Feed one piece, taking every command that completes in it. */
static void run_piece(struct run *r, const char *buf, size_t len)
{
    size_t off = 0;
    while (!r->failed && off < len) {
        enum resp_parse_status st;
        size_t used = resp_parser_feed(&r->p, buf + off, len - off, &st);
        REQUIRE(used <= len - off);
        off += used;
        r->abs += used;
        r->since += used;
        if (st == RESP_PARSE_DONE) {
            record_command(r);
            resp_parser_next(&r->p);
            r->since = 0;
        } else if (st == RESP_PARSE_ERROR) {
            REQUIRE(r->p.err != NULL);
            out_str(&r->t, "!");
            out_str(&r->t, r->p.err);
            r->failed = 1;
            /* sticky */
            size_t again = resp_parser_feed(&r->p, "*1\r\n", 4, &st);
            REQUIRE(again == 0);
            REQUIRE(st == RESP_PARSE_ERROR);
        } else {
            REQUIRE(st == RESP_PARSE_MORE);
            REQUIRE(off == len);
        }
    }
}

static void run_finish(struct run *r)
{
    if (!r->failed && r->since > 0)
        out_str(&r->t, "...");
    resp_parser_free(&r->p);
}

/* Feed in pieces of the given lengths (the last piece takes the rest). */
static struct out transcript(const char *in, size_t len, const size_t *cuts, int ncuts,
                             long long max_bulk, size_t max_cmd, int unauth)
{
    struct run r;
    run_init(&r, in, max_bulk, max_cmd, unauth);
    size_t at = 0;
    for (int i = 0; i < ncuts && at < len; i++) {
        size_t n = cuts[i] < len - at ? cuts[i] : len - at;
        run_piece(&r, in + at, n);
        at += n;
    }
    if (at < len)
        run_piece(&r, in + at, len - at);
    run_finish(&r);
    out_str(&r.t, "");
    return r.t;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

struct vec {
    const char *in;
    size_t      in_len;
    const char *want;
    size_t      want_len;
    long long   max_bulk;       /* 0: default */
    size_t      max_cmd;        /* 0: default */
    int         unauth;
};

#define V(in, want) { in, sizeof(in) - 1, want, sizeof(want) - 1, 0, 0, 0 }
#define VL(in, want, bulk, cmd, unauth) \
    { in, sizeof(in) - 1, want, sizeof(want) - 1, bulk, cmd, unauth }

static void check_transcript(struct out got, const char *want, size_t want_len,
                             const char *in, const char *how)
{
    if (got.len != want_len || memcmp(got.s, want, want_len) != 0)
        ck_abort_msg("input %.60s fed %s: got \"%.200s\", want \"%.*s\"", in, how, got.s,
                     want_len > 200 ? 200 : (int)want_len, want);
    free(got.s);
}

/* Whole, byte by byte, every cut in two, and random pieces. */
static void check_all_feedings(const char *in, size_t len, const char *want, size_t want_len,
                               long long max_bulk, size_t max_cmd, int unauth, int every_cut)
{
    long long mb = max_bulk ? max_bulk : DEF_BULK;
    size_t mc = max_cmd ? max_cmd : DEF_CMD;
    check_transcript(transcript(in, len, NULL, 0, mb, mc, unauth), want, want_len, in,
                     "whole");

    size_t *ones = malloc((len + 1) * sizeof *ones);
    for (size_t i = 0; i <= len; i++)
        ones[i] = 1;
    check_transcript(transcript(in, len, ones, (int)len, mb, mc, unauth), want, want_len, in,
                     "byte by byte");
    free(ones);

    if (every_cut) {
        for (size_t cut = 0; cut <= len; cut++) {
            check_transcript(transcript(in, len, &cut, 1, mb, mc, unauth), want, want_len, in,
                             "in two");
        }
    }
    size_t cuts[64];
    for (int k = 0; k < 50; k++) {
        int n = 1 + (int)(rng() % 63);
        for (int i = 0; i < n; i++)
            cuts[i] = (size_t)(rng() % (len / 4 + 2));
        check_transcript(transcript(in, len, cuts, n, mb, mc, unauth), want, want_len, in,
                         "in random pieces");
    }
}

static void check_table(const struct vec *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        check_all_feedings(v[i].in, v[i].in_len, v[i].want, v[i].want_len, v[i].max_bulk,
                           v[i].max_cmd, v[i].unauth, 1);
}

/* ---- valid requests ---- */

static const struct vec valid[] = {
    V("*1\r\n$4\r\nPING\r\n", "[4:PING]"),
    V("*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n", "[3:GET 3:foo]"),
    V("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", "[3:SET 1:k 0:]"),
    /* payloads are opaque: CRLF, NUL, '*', '$' inside */
    V("*2\r\n$4\r\nECHO\r\n$8\r\na\r\n\0*$\r\n\r\n", "[4:ECHO 8:a\r\n\0*$\r\n]"),
    V("*1\r\n$10\r\n0123456789\r\n", "[10:0123456789]"),
    /* a count <= 0 is an empty command Redis skips */
    V("*0\r\n", "[]"),
    V("*-1\r\n", "[]"),
    V("*-5\r\n", "[]"),
    V("*-9223372036854775808\r\n", "[]"),
    /* anything not starting with '*' is inline, as redis-server reads it */
    V("PING\r\n", "i[4:PING]"),
    V("PING\n", "i[4:PING]"),
    V("  GET \t foo  \r\n", "i[3:GET 3:foo]"),
    V("GET foo\r\r\n", "i[3:GET 3:foo]"),
    V("$4\r\n", "i[2:$4]"),
    V("\r\n", "i[]"),
    V("\n", "i[]"),
    V("   \t\r\n", "i[]"),
    /* sdssplitargs quoting */
    V("SET \"a b\" 'c d'\r\n", "i[3:SET 3:a b 3:c d]"),
    V("ECHO \"\\x41\\x7a\\n\\r\\t\\b\\a\\\\\\\"\"\r\n", "i[4:ECHO 9:Az\n\r\t\b\a\\\"]"),
    V("ECHO \"\\xzz\\q\"\r\n", "i[4:ECHO 4:xzzq]"),
    V("ECHO \"\\x4g\"\r\n", "i[4:ECHO 3:x4g]"),
    V("ECHO 'a\\'b'\r\n", "i[4:ECHO 3:a'b]"),
    V("ECHO 'a\\nb\"'\r\n", "i[4:ECHO 5:a\\nb\"]"),
    V("ECHO \"it's\"\r\n", "i[4:ECHO 4:it's]"),
    V("ECHO a\"b c\"\r\n", "i[4:ECHO 4:ab c]"),
    V("ECHO \"\" ''\r\n", "i[4:ECHO 0: 0:]"),
    V("ECHO \"a\"\t\"b\"\r\n", "i[4:ECHO 1:a 1:b]"),
    V("ECHO \"a\"\v\r\n", "i[4:ECHO 1:a]"),
    V("ECHO a\vb\r\n", "i[4:ECHO 3:a\vb]"),
    V("\vPING\r\n", "i[4:PING]"),
    /* a NUL ends an inline line's arguments, as in C */
    V("PING\0x\r\n", "i[4:PING]"),
    V("\0PING\r\n", "i[]"),
    /* pipelines: commands of every kind back to back */
    V("*1\r\n$4\r\nPING\r\nPING\r\n*0\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n\r\n",
      "[4:PING]i[4:PING][][3:GET 1:k]i[]"),
    V("PING\r\nPING\r\nECHO x\r\n", "i[4:PING]i[4:PING]i[4:ECHO 1:x]"),
    V("*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI", "[4:PING]..."),
    /* incomplete: waits, as Redis does */
    V("*", "..."),
    V("*1\r", "..."),
    V("*1\r\n$4\r\nPING\r", "..."),
    V("*2147483647\r\n", "..."),
    V("PING", "..."),
    V("*1\r\nx", "..."),              /* Redis decides at the CR */
    V("*1\r\nx\r", "..."),
    /* limits: exactly at the limit is allowed */
    VL("*1\r\n$10\r\n0123456789\r\n", "[10:0123456789]", 10, 0, 0),
    VL("*1\r\n$4\r\nPING\r\n", "[4:PING]", 0, 14, 0),
    VL("PING\r\n", "i[4:PING]", 0, 6, 0),
    VL("*10\r\n", "...", 0, 0, 1),
    VL("*1\r\n$16384\r\n", "...", 0, 0, 1),
    VL("*-1\r\n*1\r\n$4\r\nAUTH\r\n", "[][4:AUTH]", 0, 0, 1),
};

START_TEST(test_valid_requests)
{
    check_table(valid, sizeof valid / sizeof valid[0]);
}
END_TEST

/* ---- malformed requests ---- */

#define E_MB    "!Protocol error: invalid multibulk length"
#define E_BULK  "!Protocol error: invalid bulk length"

static const struct vec malformed[] = {
    /* the count: Redis's string2ll, at most INT_MAX */
    V("*x\r\n", E_MB),
    V("*\r\n", E_MB),
    V("* 1\r\n", E_MB),
    V("*1 \r\n", E_MB),
    V("*+1\r\n", E_MB),
    V("*01\r\n", E_MB),
    V("*-0\r\n", E_MB),
    V("*--1\r\n", E_MB),
    V("*1x\r\n", E_MB),
    V("*1\0\r\n", E_MB),
    V("*2147483648\r\n", E_MB),
    V("*9223372036854775808\r\n", E_MB),
    V("*99999999999999999999999999\r\n", E_MB),
    V("*1\n$4\r\nPING\r\n", E_MB),          /* LF alone ends nothing: line "*1\n$4" */
    /* every element of a request is a bulk string: no nesting, no types */
    V("*1\r\n*1\r\n$4\r\nPING\r\n", "!Protocol error: expected '$', got '*'"),
    V("*1\r\n:1\r\n", "!Protocol error: expected '$', got ':'"),
    V("*1\r\n+PING\r\n", "!Protocol error: expected '$', got '+'"),
    V("*1\r\nx\r\n", "!Protocol error: expected '$', got 'x'"),
    V("*1\r\n\r\n", "!Protocol error: expected '$', got ' '"),
    V("*1\r\n\n\r\n", "!Protocol error: expected '$', got ' '"),
    V("*1\r\n\0\r\n", "!Protocol error: expected '$', got ' '"),
    V("*2\r\n$4\r\nECHO\r\n%1\r\n", "!Protocol error: expected '$', got '%'"),
    /* bulk lengths */
    V("*1\r\n$-1\r\n", E_BULK),
    V("*1\r\n$\r\n", E_BULK),
    V("*1\r\n$\r\r\n", E_BULK),
    V("*1\r\n$04\r\nPING\r\n", E_BULK),
    V("*1\r\n$4x\r\n", E_BULK),
    V("*1\r\n$+4\r\n", E_BULK),
    V("*1\r\n$ 4\r\n", E_BULK),
    V("*1\r\n$-0\r\n", E_BULK),
    V("*1\r\n$99999999999999999999\r\n", E_BULK),
    V("*1\r\n$536870913\r\n", E_BULK),                /* over proto-max-bulk-len */
    VL("*1\r\n$11\r\n", E_BULK, 10, 0, 0),
    /* the bulk payload must end in CRLF (Redis skips two bytes unchecked) */
    V("*1\r\n$4\r\nPINGxx", "!" RESP_ERR_BULK_CRLF),
    V("*1\r\n$4\r\nPING\rx", "!" RESP_ERR_BULK_CRLF),
    V("*1\r\n$4\r\nPING\n", "!" RESP_ERR_BULK_CRLF),
    V("*1\r\n$4\r\nPINGPING\r\n", "!" RESP_ERR_BULK_CRLF),
    V("*1\r\n$0\r\nx\r\n", "!" RESP_ERR_BULK_CRLF),
    /* a header line's CR must be followed by LF */
    V("*1\rX$4\r\nPING\r\n", "!" RESP_ERR_CRLF),
    V("*1\r\n$4\rXPING\r\n", "!" RESP_ERR_CRLF),
    V("*-1\r\r", "!" RESP_ERR_CRLF),
    /* Redis's checks come first */
    V("*x\rX", E_MB),
    V("*1\r\nx\rX", "!Protocol error: expected '$', got 'x'"),
    /* before AUTH */
    VL("*11\r\n", "!Protocol error: unauthenticated multibulk length", 0, 0, 1),
    VL("*1048577\r\n", "!Protocol error: unauthenticated multibulk length", 0, 0, 1),
    VL("*2147483648\r\n", E_MB, 0, 0, 1),
    VL("*1\r\n$16385\r\n", "!Protocol error: unauthenticated bulk length", 0, 0, 1),
    VL("*1\r\n$536870913\r\n", E_BULK, 0, 0, 1),
    /* one command may not pass max_command_len; a bulk is refused at its header */
    VL("*1\r\n$4\r\nPING\r\n", "!" RESP_ERR_LIMIT, 0, 13, 0),
    VL("*2\r\n$3\r\nGET\r\n$8\r\nkey:1234\r\n", "!" RESP_ERR_LIMIT, 0, 20, 0),
    VL("*1\r\n$4\r\nPING\r\n*1\r\n$5\r\nHELLO\r\n", "[4:PING]!" RESP_ERR_LIMIT, 0, 14, 0),
    VL("PING\r\n", "!" RESP_ERR_LIMIT, 0, 5, 0),
    VL("PING PING\r\n", "!" RESP_ERR_LIMIT, 0, 5, 0),
    VL("*123456\r\n", "!" RESP_ERR_LIMIT, 0, 5, 0),
    VL("*x\r\n", E_MB, 0, 4, 0),
    /* inline quoting */
    V("ECHO \"abc\r\n", "!Protocol error: unbalanced quotes in request"),
    V("ECHO \"abc\"d\r\n", "!Protocol error: unbalanced quotes in request"),
    V("ECHO 'abc'd\r\n", "!Protocol error: unbalanced quotes in request"),
    V("ECHO 'abc\r\n", "!Protocol error: unbalanced quotes in request"),
    V("ECHO \"a\\\"\r\n", "!Protocol error: unbalanced quotes in request"),
    V("ECHO \"a\\\r\n", "!Protocol error: unbalanced quotes in request"),
    V("ECHO \"a\0\"\r\n", "!Protocol error: unbalanced quotes in request"),
    V("PING\r\nECHO \"\r\nPING\r\n", "i[4:PING]!Protocol error: unbalanced quotes in request"),
};

START_TEST(test_malformed_requests)
{
    check_table(malformed, sizeof malformed / sizeof malformed[0]);
}
END_TEST

/* ---- the 64 KiB line caps (PROTO_INLINE_MAX_SIZE) ---- */

static void check_generated(const char *prefix, char fill, size_t n, const char *suffix,
                            const char *want, size_t max_cmd)
{
    size_t plen = strlen(prefix), slen = strlen(suffix);
    size_t len = plen + n + slen;
    char *in = malloc(len + 1);
    memcpy(in, prefix, plen);
    memset(in + plen, fill, n);
    memcpy(in + plen + n, suffix, slen);
    in[len] = '\0';
    struct out w = {0};
    if (want) {
        out_str(&w, want);
    } else {        /* one inline command of one argument: the fill */
        char hdr[32];
        snprintf(hdr, sizeof hdr, "i[%zu:", n);
        out_str(&w, hdr);
        out_add(&w, in + plen, n);
        out_str(&w, "]");
    }
    check_all_feedings(in, len, w.s, w.len, 0, max_cmd, 0, 0);
    free(w.s);
    free(in);
}

START_TEST(test_line_caps)
{
    /* a '*' line: at most 65536 bytes before its CR, then "too big" */
    check_generated("*", '1', 65535, "", "...", 0);
    check_generated("*", '1', 65536, "", "!Protocol error: too big mbulk count string", 0);
    check_generated("*", '1', 70000, "\r\n", "!Protocol error: too big mbulk count string", 0);
    check_generated("*", '1', 65535, "\r\n", E_MB, 0);
    /* a '$' line likewise, whatever its first byte */
    check_generated("*1\r\n$", '0', 65535, "", "...", 0);
    check_generated("*1\r\n$", '0', 65536, "", "!Protocol error: too big bulk count string", 0);
    check_generated("*1\r\n", 'x', 65537, "", "!Protocol error: too big bulk count string", 0);
    check_generated("*1\r\n", 'x', 65536, "\r\n", "!Protocol error: expected '$', got 'x'", 0);
    /* an inline line: at most 65536 bytes before its LF (a CR counts) */
    check_generated("", 'P', 65536, "", "...", 0);
    check_generated("", 'P', 65537, "", "!Protocol error: too big inline request", 0);
    check_generated("", 'P', 65535, "\r\n", NULL, 0);
    check_generated("", 'P', 65536, "\r\n", "!Protocol error: too big inline request", 0);
    /* whichever limit a byte crosses first is the one reported */
    check_generated("", 'P', 70000, "", "!" RESP_ERR_LIMIT, 1000);
    check_generated("*", '1', 70000, "", "!" RESP_ERR_LIMIT, 1000);
}
END_TEST

/* ---- big valid requests, generated ---- */

static void mb_append_arg(struct out *o, const char *p, size_t n)
{
    char hdr[32];
    snprintf(hdr, sizeof hdr, "$%zu\r\n", n);
    out_str(o, hdr);
    out_add(o, p, n);
    out_str(o, "\r\n");
}

START_TEST(test_big_requests)
{
    /* a 1 MiB bulk of every byte value */
    size_t n = 1 << 20;
    char *val = malloc(n);
    for (size_t i = 0; i < n; i++)
        val[i] = (char)(rng() & 0xff);
    struct out in = {0}, want = {0};
    out_str(&in, "*2\r\n");
    mb_append_arg(&in, "SET", 3);
    mb_append_arg(&in, val, n);
    out_str(&want, "[3:SET 1048576:");
    out_add(&want, val, n);
    out_str(&want, "]");
    check_all_feedings(in.s, in.len, want.s, want.len, 0, 0, 0, 0);
    /* the same command is refused by a limit one byte short */
    const char *lim = "!" RESP_ERR_LIMIT, *bulk = E_BULK;
    check_transcript(transcript(in.s, in.len, NULL, 0, DEF_BULK, in.len - 1, 0), lim,
                     strlen(lim), "1 MiB SET", "with a limit one byte short");
    check_transcript(transcript(in.s, in.len, NULL, 0, (long long)n - 1, DEF_CMD, 0), bulk,
                     strlen(bulk), "1 MiB SET", "with max_bulk_len one byte short");
    free(val);
    free(in.s);
    free(want.s);

    /* 100,000 arguments */
    struct out big = {0}, bw = {0};
    out_str(&big, "*100000\r\n");
    out_str(&bw, "[");
    for (int i = 0; i < 100000; i++) {
        char a[16];
        int l = snprintf(a, sizeof a, "%d", i);
        mb_append_arg(&big, a, (size_t)l);
        char e[24];
        snprintf(e, sizeof e, "%s%d:%s", i ? " " : "", l, a);
        out_str(&bw, e);
    }
    out_str(&bw, "]");
    check_all_feedings(big.s, big.len, bw.s, bw.len, 0, 0, 0, 0);
    free(big.s);
    free(bw.s);
}
END_TEST

START_TEST(test_pipeline_of_many)
{
    /* 1000 commands of every kind in one stream */
#define K(in, want) { in, want, sizeof(want) - 1 }
    static const struct { const char *in, *want; size_t want_len; } kinds[] = {
        K("*2\r\n$3\r\nGET\r\n$8\r\nkey:1234\r\n", "[3:GET 8:key:1234]"),
        K("PING\r\n", "i[4:PING]"),
        K("*0\r\n", "[]"),
        K("SET 'a b' \"\\x00\"\n", "i[3:SET 3:a b 1:\0]"),
        K("*1\r\n$0\r\n\r\n", "[0:]"),
    };
    struct out in = {0}, want = {0};
    for (int i = 0; i < 1000; i++) {
        int k = (int)(rng() % 5);
        out_str(&in, kinds[k].in);
        out_add(&want, kinds[k].want, kinds[k].want_len);
    }
    check_all_feedings(in.s, in.len, want.s, want.len, 0, 0, 0, 0);
    free(in.s);
    free(want.s);
}
END_TEST

START_TEST(test_steady_state_reuses_buffers)
{
    const char *cmd = "*2\r\n$3\r\nGET\r\n$8\r\nkey:1234\r\nGET inline\r\n";
    size_t len = strlen(cmd);
    struct resp_parser p;
    resp_parser_init(&p, DEF_BULK, DEF_CMD);
    struct resp_arg *args = NULL;
    char *mb = NULL;
    for (int round = 0; round < 100; round++) {
        size_t off = 0;
        while (off < len) {
            enum resp_parse_status st;
            off += resp_parser_feed(&p, cmd + off, len - off, &st);
            ck_assert_int_eq(st, RESP_PARSE_DONE);
            resp_parser_next(&p);
        }
        if (round == 1) {
            args = p.args;
            mb = p.inline_mb;
        } else if (round > 1) {
            ck_assert_ptr_eq(p.args, args);
            ck_assert_ptr_eq(p.inline_mb, mb);
        }
    }
    resp_parser_free(&p);
}
END_TEST

START_TEST(test_done_until_next_and_limits_change)
{
    struct resp_parser p;
    enum resp_parse_status st;
    resp_parser_init(&p, DEF_BULK, DEF_CMD);
    const char *two = "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n";
    ck_assert_uint_eq(resp_parser_feed(&p, two, 28, &st), 14);
    ck_assert_int_eq(st, RESP_PARSE_DONE);
    /* without resp_parser_next() nothing more is taken */
    ck_assert_uint_eq(resp_parser_feed(&p, two + 14, 14, &st), 0);
    ck_assert_int_eq(st, RESP_PARSE_DONE);
    resp_parser_next(&p);
    /* an empty feed is a no-op */
    ck_assert_uint_eq(resp_parser_feed(&p, two, 0, &st), 0);
    ck_assert_int_eq(st, RESP_PARSE_MORE);
    /* limits apply from the next command */
    p.unauthenticated = 1;
    ck_assert_uint_eq(resp_parser_feed(&p, "*11\r\n", 5, &st), 5);
    ck_assert_int_eq(st, RESP_PARSE_ERROR);
    ck_assert_str_eq(p.err, "Protocol error: unauthenticated multibulk length");
    resp_parser_free(&p);
}
END_TEST

/* ---- resp_inline_to_multibulk ---- */

START_TEST(test_inline_to_multibulk)
{
    static const struct { const char *line, *mb; int rc; } v[] = {
        { "GET foo", "*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n", 0 },
        { "SET \"a b\" 'c\\'d'", "*3\r\n$3\r\nSET\r\n$3\r\na b\r\n$3\r\nc'd\r\n", 0 },
        { "", "*0\r\n", 0 },
        { "   ", "*0\r\n", 0 },
        { "\"\\x41\"", "*1\r\n$1\r\nA\r\n", 0 },
        { "\"open", NULL, -1 },
        { "'a'b", NULL, -1 },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char *out = NULL;
        size_t out_len = 0;
        struct resp_arg *args = NULL;
        int argc = -1;
        int rc = resp_inline_to_multibulk(v[i].line, strlen(v[i].line), &out, &out_len,
                                          &args, &argc);
        ck_assert_int_eq(rc, v[i].rc);
        if (rc == 0) {
            ck_assert_uint_eq(out_len, strlen(v[i].mb));
            ck_assert(memcmp(out, v[i].mb, out_len) == 0);
            struct out e = {0};
            encode(&e, out, args, argc);
            ck_assert_str_eq(e.s, v[i].mb);
            free(e.s);
            free(out);
            free(args);
        }
    }
}
END_TEST

/* ---- writers ---- */

static char *drain(struct evbuffer *b, size_t *len)
{
    *len = evbuffer_get_length(b);
    char *s = malloc(*len + 1);
    evbuffer_remove(b, s, *len);
    s[*len] = '\0';
    return s;
}

#define CHECK_OUT(b, want) do { \
        size_t n_; char *s_ = drain(b, &n_); \
        ck_assert_uint_eq(n_, sizeof(want) - 1); \
        ck_assert(memcmp(s_, want, n_) == 0); \
        free(s_); \
    } while (0)

START_TEST(test_writers)
{
    struct evbuffer *b = evbuffer_new();
    resp_add_simple(b, "OK");
    CHECK_OUT(b, "+OK\r\n");
    resp_add_error(b, "ERR bad\r\nthing");
    CHECK_OUT(b, "-ERR bad  thing\r\n");
    resp_add_errorf(b, "ERR unknown command '%s', with args beginning with: ", "x\ny");
    CHECK_OUT(b, "-ERR unknown command 'x y', with args beginning with: \r\n");
    resp_add_integer(b, 0);
    resp_add_integer(b, -1);
    resp_add_integer(b, LLONG_MAX);
    resp_add_integer(b, LLONG_MIN);
    CHECK_OUT(b, ":0\r\n:-1\r\n:9223372036854775807\r\n:-9223372036854775808\r\n");
    resp_add_bulk(b, "a\r\n\0b", 5);
    resp_add_bulk(b, "", 0);
    resp_add_bulk_str(b, "foo");
    resp_add_null(b, RESP2);
    resp_add_null_array(b, RESP2);
    resp_add_array(b, 3);
    resp_add_array(b, 0);
    CHECK_OUT(b, "$5\r\na\r\n\0b\r\n$0\r\n\r\n$3\r\nfoo\r\n$-1\r\n*-1\r\n*3\r\n*0\r\n");
    const char *argv[] = { "SET", "k", "" };
    const size_t lens[] = { 3, 1, 0 };
    resp_add_command(b, 3, argv, lens);
    CHECK_OUT(b, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");

    /* long texts and payloads take the other path */
    char big[1000];
    memset(big, 'x', sizeof big);
    resp_add_bulk(b, big, sizeof big);
    size_t n;
    char *s = drain(b, &n);
    ck_assert_uint_eq(n, 7 + 1000 + 2);
    ck_assert(memcmp(s, "$1000\r\n", 7) == 0 && s[7] == 'x' && memcmp(s + 1007, "\r\n", 2) == 0);
    free(s);
    char msg[600];
    memset(msg, 'e', sizeof msg - 1);
    msg[sizeof msg - 1] = '\0';
    resp_add_errorf(b, "ERR %s", msg);
    s = drain(b, &n);
    ck_assert_uint_eq(n, 1 + 4 + 599 + 2);
    ck_assert(memcmp(s, "-ERR eee", 8) == 0 && memcmp(s + n - 3, "e\r\n", 3) == 0);
    free(s);
    resp_add_simple(b, msg);
    s = drain(b, &n);
    ck_assert_uint_eq(n, 1 + 599 + 2);
    free(s);
    evbuffer_free(b);
}
END_TEST

/* The types whose bytes depend on the protocol, as redis-server 7.0 writes
 * them to a RESP2 and to a RESP3 client. */
START_TEST(test_writers_by_protocol)
{
    struct evbuffer *b = evbuffer_new();
    resp_add_null(b, RESP2);
    resp_add_null_array(b, RESP2);
    resp_add_map(b, RESP2, 2);
    resp_add_set(b, RESP2, 3);
    resp_add_push(b, RESP2, 3);
    resp_add_bool(b, RESP2, 1);
    resp_add_bool(b, RESP2, 0);
    resp_add_double(b, RESP2, 1.5);
    resp_add_double(b, RESP2, -1.0 / 0.0);
    resp_add_verbatim(b, RESP2, "a:1\r\n", 5);
    CHECK_OUT(b, "$-1\r\n*-1\r\n*4\r\n*3\r\n*3\r\n:1\r\n:0\r\n$3\r\n1.5\r\n$4\r\n-inf\r\n"
                 "$5\r\na:1\r\n\r\n");
    resp_add_null(b, RESP3);
    resp_add_null_array(b, RESP3);
    resp_add_map(b, RESP3, 2);
    resp_add_set(b, RESP3, 3);
    resp_add_push(b, RESP3, 3);
    resp_add_bool(b, RESP3, 1);
    resp_add_bool(b, RESP3, 0);
    resp_add_double(b, RESP3, 1.5);
    resp_add_double(b, RESP3, 1.0 / 0.0);
    resp_add_double(b, RESP3, 0.1);
    resp_add_verbatim(b, RESP3, "a:1\r\n", 5);
    CHECK_OUT(b, "_\r\n_\r\n%2\r\n~3\r\n>3\r\n#t\r\n#f\r\n,1.5\r\n,inf\r\n"
                 ",0.10000000000000001\r\n=9\r\ntxt:a:1\r\n\r\n");
    evbuffer_free(b);
}
END_TEST

static Suite *resp_suite(void)
{
    Suite *s = suite_create("resp");
    TCase *tc = tcase_create("parser");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_valid_requests);
    tcase_add_test(tc, test_malformed_requests);
    tcase_add_test(tc, test_writers_by_protocol);
    tcase_add_test(tc, test_line_caps);
    tcase_add_test(tc, test_big_requests);
    tcase_add_test(tc, test_pipeline_of_many);
    tcase_add_test(tc, test_steady_state_reuses_buffers);
    tcase_add_test(tc, test_done_until_next_and_limits_change);
    tcase_add_test(tc, test_inline_to_multibulk);
    suite_add_tcase(s, tc);
    TCase *tw = tcase_create("writers");
    tcase_add_test(tw, test_writers);
    suite_add_tcase(s, tw);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(resp_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
