/*
 * The reply scanner and redirect classifier (lib/proto/reply.h).
 *
 * A scan vector is a node's byte stream and a transcript of what the scanner
 * finds in it, one entry per complete reply:
 *   <type><len>          e.g. "$9" for "$3\r\nbar\r\n"
 *   -<len>:<errline>     an error reply (- or !) and its first line
 *   ...@<body>           after <len>: the offset of the reply proper, when
 *                        top-level attributes come first (":16@12")
 *   ...                  the stream ends inside a reply
 *   !                    the node broke the protocol
 * Each vector is fed whole, one byte at a time, cut in two at every byte
 * boundary and in random pieces, and must give the same transcript.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/proto/reply.h"

/* Check records the location of every ck_assert (a write(2) each); the
 * harness runs millions of checks, so it calls Check only on failure. */
#define REQUIRE(cond) do { \
        if (!(cond)) \
            ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #cond); \
    } while (0)

struct out {
    char  *s;
    size_t len, cap;
};

static void out_str(struct out *o, const char *s)
{
    size_t n = strlen(s);
    if (o->len + n + 1 > o->cap) {
        o->cap = (o->len + n + 1) * 2;
        o->s = realloc(o->s, o->cap);
        REQUIRE(o->s != NULL);
    }
    memcpy(o->s + o->len, s, n + 1);
    o->len += n;
}

struct run {
    struct reply_scanner s;
    size_t since;           /* bytes since the last reply ended */
    int    failed;
    struct out t;
};

static void run_piece(struct run *r, const char *buf, size_t len)
{
    size_t off = 0;
    while (!r->failed && off < len) {
        enum reply_scan_status st;
        size_t used = reply_scan(&r->s, buf + off, len - off, &st);
        REQUIRE(used <= len - off);
        off += used;
        r->since += used;
        if (st == REPLY_SCAN_DONE) {
            char e[REPLY_ERRLINE_MAX + 64], body[32] = "";
            REQUIRE(r->s.len == r->since);
            REQUIRE(r->s.body < r->s.len);
            if (r->s.body)
                snprintf(body, sizeof body, "@%zu", r->s.body);
            if (r->s.type == '-')
                snprintf(e, sizeof e, "%s-%zu%s:%s", r->t.len ? " " : "", r->s.len, body,
                         r->s.errline);
            else
                snprintf(e, sizeof e, "%s%c%zu%s", r->t.len ? " " : "", r->s.type, r->s.len,
                         body);
            out_str(&r->t, e);
            reply_scanner_init(&r->s);
            r->since = 0;
        } else if (st == REPLY_SCAN_ERROR) {
            out_str(&r->t, r->t.len ? " !" : "!");
            r->failed = 1;
        } else {
            REQUIRE(st == REPLY_SCAN_MORE);
            REQUIRE(off == len);
        }
    }
}

static struct out transcript(const char *in, size_t len, const size_t *cuts, int ncuts)
{
    struct run r;
    memset(&r, 0, sizeof r);
    reply_scanner_init(&r.s);
    size_t at = 0;
    for (int i = 0; i < ncuts && at < len; i++) {
        size_t n = cuts[i] < len - at ? cuts[i] : len - at;
        run_piece(&r, in + at, n);
        at += n;
    }
    if (at < len)
        run_piece(&r, in + at, len - at);
    if (!r.failed && r.since > 0)
        out_str(&r.t, r.t.len ? " ..." : "...");
    out_str(&r.t, "");
    return r.t;
}

static uint64_t rng_state = 0x2545F4914F6CDD1DULL;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void check_one(struct out got, const char *want, const char *in, const char *how)
{
    if (strcmp(got.s, want) != 0)
        ck_abort_msg("input %.40s fed %s: got \"%.200s\", want \"%.200s\"", in, how, got.s, want);
    free(got.s);
}

static void check_all_feedings(const char *in, size_t len, const char *want, int every_cut)
{
    check_one(transcript(in, len, NULL, 0), want, in, "whole");
    size_t *ones = malloc((len + 1) * sizeof *ones);
    for (size_t i = 0; i <= len; i++)
        ones[i] = 1;
    check_one(transcript(in, len, ones, (int)len), want, in, "byte by byte");
    free(ones);
    if (every_cut)
        for (size_t cut = 0; cut <= len; cut++)
            check_one(transcript(in, len, &cut, 1), want, in, "in two");
    size_t cuts[64];
    for (int k = 0; k < 30; k++) {
        int n = 1 + (int)(rng() % 63);
        for (int i = 0; i < n; i++)
            cuts[i] = (size_t)(rng() % (len / 8 + 2));
        check_one(transcript(in, len, cuts, n), want, in, "in random pieces");
    }
}

struct vec {
    const char *in;
    size_t      len;
    const char *want;
};

#define V(in, want) { in, sizeof(in) - 1, want }

static const struct vec replies[] = {
    /* every RESP2 shape */
    V("+OK\r\n", "+5"),
    V("-ERR wrong type\r\n", "-17:ERR wrong type"),
    V(":1000\r\n", ":7"),
    V(":-5\r\n", ":5"),
    V("$3\r\nbar\r\n", "$9"),
    V("$0\r\n\r\n", "$6"),
    V("$-1\r\n", "$5"),
    V("*-1\r\n", "*5"),
    V("*0\r\n", "*4"),
    V("$9\r\na\r\n*$:\r\n+\r\n", "$15"),
    V("$3\r\n\0\0\0\r\n", "$9"),
    V("*2\r\n$3\r\nfoo\r\n:1\r\n", "*17"),
    V("*3\r\n*-1\r\n*0\r\n$-1\r\n", "*18"),
    V("*1\r\n*1\r\n*1\r\n+x\r\n", "*16"),
    V("*2\r\n*2\r\n:1\r\n:2\r\n*0\r\n", "*20"),
    /* errors inside an array are elements, not the reply's error line */
    V("*2\r\n-ERR a\r\n+OK\r\n", "*17"),
    V("-MOVED 3999 127.0.0.1:6381\r\n", "-28:MOVED 3999 127.0.0.1:6381"),
    V("-\r\n", "-3:"),
    V("-ERR a\nb\r\n", "-10:ERR a b"),   /* errline is one line */
    /* replies back to back: each ends where it ends */
    V("+OK\r\n:1\r\n$-1\r\n*1\r\n$1\r\nx\r\n-ASK 1 h:2\r\n", "+5 :4 $5 *11 -12:ASK 1 h:2"),
    /* incomplete */
    V("$3\r\nba", "..."),
    V("*2\r\n:1\r\n", "..."),
    V("+OK\r", "..."),
    V("+OK\r\n*", "+5 ..."),
    /* protocol violations */
    V("!x\r\n", "!"),
    V("\r\n", "!"),
    V("$-2\r\n", "!"),
    V("$--1\r\n", "!"),
    V("$-\r\n", "!"),
    V("$-10\r\n", "!"),
    V("$x\r\n", "!"),
    V("$\r\n", "!"),
    V("$1x\r\n", "!"),
    V("$ 1\r\n", "!"),
    V("$1234567890123456789\r\n", "!"),
    V("*-2\r\n", "!"),
    V("*\r\n", "!"),
    V("$3\r\nbarX\r\n", "!"),
    V("$3\r\nbar\rX", "!"),
    V("$3\rX", "!"),
    V("+OK\rX", "!"),
    V("*1\r\nfoo\r\n", "!"),
    V("+OK\r\n+OK\rX", "+5 !"),
    /* owing more than LLONG_MAX elements */
    V("*999999999999999999\r\n*999999999999999999\r\n*999999999999999999\r\n"
      "*999999999999999999\r\n*999999999999999999\r\n*999999999999999999\r\n"
      "*999999999999999999\r\n*999999999999999999\r\n*999999999999999999\r\n"
      "*999999999999999999\r\n", "!"),
};

/* RESP3, as redis-server 7.0 writes it */
static const struct vec resp3[] = {
    /* simple types: line contents are not checked */
    V("_\r\n", "_3"),
    V("#t\r\n", "#4"),
    V("#f\r\n", "#4"),
    V(",1.5\r\n", ",6"),
    V(",inf\r\n", ",6"),
    V(",-inf\r\n", ",7"),
    V(",nan\r\n", ",6"),
    V(",1e+300\r\n", ",9"),
    V("(3492890328409238509324850943850943825024385\r\n", "(46"),
    V("(-1\r\n", "(5"),
    /* blobs: verbatim strings and blob errors */
    V("=15\r\ntxt:Some string\r\n", "=22"),
    V("=4\r\nmkd:\r\n", "=10"),
    V("=6\r\ntxt:\r\n\r\n", "=12"),
    V("!21\r\nSYNTAX invalid syntax\r\n", "-28:SYNTAX invalid syntax"),
    V("!0\r\n\r\n", "-6:"),
    /* a blob error's CR and LF are spaces in errline */
    V("!8\r\nERR a\r\nb\r\n", "-14:ERR a  b"),
    /* aggregates */
    V("%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n", "%29"),
    V("%0\r\n", "%4"),
    V("~3\r\n+a\r\n+b\r\n:1\r\n", "~16"),
    V("~0\r\n", "~4"),
    V(">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n", ">36"),
    V(">0\r\n", ">4"),
    /* maps, sets and pushes nested in arrays and maps */
    V("*3\r\n%1\r\n+k\r\n~2\r\n:1\r\n:2\r\n>1\r\n_\r\n#f\r\n", "*35"),
    V("%1\r\n*2\r\n:1\r\n:2\r\n%1\r\n,1.5\r\n(7\r\n", "%30"),
    V("*2\r\n!3\r\nbad\r\n-ERR x\r\n", "*21"),     /* errors as elements */
    /* attributes: not values, the value they annotate follows */
    V("|1\r\n+a\r\n+b\r\n:5\r\n", ":16@12"),
    V("|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n"
      "*2\r\n:2039123\r\n:9543892\r\n", "*81@57"),
    V("|0\r\n+OK\r\n", "+9@4"),
    V("|1\r\n+a\r\n+b\r\n|1\r\n+c\r\n+d\r\n#t\r\n", "#28@24"),   /* two */
    V("|1\r\n+a\r\n|1\r\n+b\r\n+c\r\n+d\r\n$1\r\nx\r\n", "$31@24"), /* in one */
    V("*2\r\n|1\r\n+ttl\r\n:3600\r\n:1\r\n:2\r\n", "*29"),       /* nested */
    V("%1\r\n|1\r\n+a\r\n+b\r\n+k\r\n|1\r\n+c\r\n+d\r\n+v\r\n", "%36"),
    /* the reply proper's type, past attributes: errors and pushes are seen */
    V("|1\r\n+a\r\n+b\r\n-MOVED 3999 127.0.0.1:6381\r\n", "-40@12:MOVED 3999 127.0.0.1:6381"),
    V("|1\r\n+a\r\n+b\r\n!25\r\nMOVED 3999 127.0.0.1:6381\r\n",
      "-44@12:MOVED 3999 127.0.0.1:6381"),
    V("|1\r\n-ERR in attr\r\n!3\r\nbad\r\n+OK\r\n", "+32@27"),
    V("|1\r\n+a\r\n+b\r\n>2\r\n+x\r\n+y\r\n", ">24@12"),
    /* back to back */
    V("|1\r\n+a\r\n+b\r\n:5\r\n_\r\n>1\r\n+x\r\n!1\r\nE\r\n", ":16@12 _3 >8 -7:E"),
    /* incomplete: an attribute is owed its value */
    V("|1\r\n+a\r\n+b\r\n", "..."),
    V("|1\r\n+a\r\n", "..."),
    V("%1\r\n+a\r\n", "..."),
    V("#t\r", "..."),
    V("=5\r\ntxt:", "..."),
    /* booleans are exactly #t or #f, nulls exactly _ */
    V("#x\r\n", "!"),
    V("#T\r\n", "!"),
    V("#\r\n", "!"),
    V("#tt\r\n", "!"),
    V("#1\r\n", "!"),
    V("_x\r\n", "!"),
    V("_\rX", "!"),
    /* no negative count but RESP2's $-1 and *-1 */
    V("%-1\r\n", "!"),
    V("~-1\r\n", "!"),
    V(">-1\r\n", "!"),
    V("|-1\r\n", "!"),
    V("=-1\r\n", "!"),
    V("!-1\r\n", "!"),
    V("%-2\r\n", "!"),
    V("%\r\n", "!"),
    V("|x\r\n", "!"),
    /* streamed forms: never sent by redis-server */
    V("$?\r\n;4\r\nHell\r\n;0\r\n", "!"),
    V("*?\r\n:1\r\n.\r\n", "!"),
    V("%?\r\n", "!"),
    V("~?\r\n", "!"),
    V(";4\r\nHell\r\n", "!"),
    V(".\r\n", "!"),
    /* a verbatim string has its 4-byte format prefix */
    V("=3\r\ntxt\r\n", "!"),
    V("=0\r\n\r\n", "!"),
    /* blob payloads followed by CRLF */
    V("=5\r\ntxt:xY\r\n", "!"),
    V("!3\r\nbadXY", "!"),
    V("!3\r\nbad\rX", "!"),
    V("~1\r\nfoo\r\n", "!"),
    V("|1\r\n+a\r\n+b\r\n+OK\r\n?", "+17@12 !"),
    /* owing more than LLONG_MAX elements: maps and attributes count twice */
    V("%999999999999999999\r\n%999999999999999999\r\n%999999999999999999\r\n"
      "%999999999999999999\r\n%999999999999999999\r\n", "!"),
    V("|999999999999999999\r\n|999999999999999999\r\n|999999999999999999\r\n"
      "|999999999999999999\r\n|999999999999999999\r\n", "!"),
};


START_TEST(test_reply_shapes)
{
    for (size_t i = 0; i < sizeof replies / sizeof replies[0]; i++)
        check_all_feedings(replies[i].in, replies[i].len, replies[i].want, 1);
}
END_TEST

START_TEST(test_resp3_shapes)
{
    for (size_t i = 0; i < sizeof resp3 / sizeof resp3[0]; i++)
        check_all_feedings(resp3[i].in, resp3[i].len, resp3[i].want, 1);
}
END_TEST

START_TEST(test_errline_is_cut_to_fit)
{
    char in[400], want[400];
    memset(in, 'E', sizeof in);
    in[0] = '-';
    memcpy(in + 301, "\r\n", 2);
    int n = snprintf(want, sizeof want, "-303:%.*s", REPLY_ERRLINE_MAX - 1, in + 1);
    ck_assert_int_eq(n, 5 + REPLY_ERRLINE_MAX - 1);
    check_all_feedings(in, 303, want, 1);
}
END_TEST

/* A blob error's payload, CR and LF as spaces, cut to fit, behind an
 * attribute: the payload is skipped in one step or in pieces alike. */
START_TEST(test_blob_errline_is_cut_to_fit)
{
    char in[400], want[400];
    memcpy(in, "|1\r\n+a\r\n+b\r\n!300\r\n", 18);
    memset(in + 18, 'E', 300);
    memcpy(in + 18 + 100, "\r\n", 2);
    memcpy(in + 318, "\r\n", 2);
    char line[REPLY_ERRLINE_MAX];
    memset(line, 'E', sizeof line - 1);
    line[100] = line[101] = ' ';
    line[sizeof line - 1] = '\0';
    snprintf(want, sizeof want, "-320@12:%s", line);
    check_all_feedings(in, 320, want, 1);
}
END_TEST

struct bulk_max_vec {
    const char *in;
    long long   want;
};

/* bulk_max: the longest blob header, of any blob type, anywhere in the reply. */
START_TEST(test_bulk_max)
{
    static const struct bulk_max_vec v[] = {
        { "+OK\r\n", 0 },
        { "$3\r\nabc\r\n", 3 },
        { "*2\r\n$3\r\nabc\r\n=10\r\ntxt:abcdef\r\n", 10 },
        { "!12\r\nERR too long\r\n", 12 },
        { "|1\r\n$20\r\n01234567890123456789\r\n+v\r\n$2\r\nab\r\n", 20 },
        { "%1\r\n$0\r\n\r\n$-1\r\n", 0 },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t len = strlen(v[i].in);
        for (size_t piece = 1; piece <= len; piece++) {
            struct reply_scanner s;
            enum reply_scan_status st = REPLY_SCAN_MORE;
            reply_scanner_init(&s);
            for (size_t at = 0; at < len && st == REPLY_SCAN_MORE; ) {
                size_t n = piece < len - at ? piece : len - at;
                at += reply_scan(&s, v[i].in + at, n, &st);
            }
            ck_assert_int_eq(st, REPLY_SCAN_DONE);
            ck_assert_msg(s.bulk_max == v[i].want, "%s in pieces of %zu: bulk_max %lld",
                          v[i].in, piece, s.bulk_max);
        }
    }
}
END_TEST

/* type while a reply is incomplete: 0, then '|' through top-level
 * attributes, then the reply proper's. */
START_TEST(test_type_in_progress)
{
    static const char in[] = "|1\r\n+a\r\n+b\r\n!3\r\nbad\r\n";
    struct reply_scanner s;
    enum reply_scan_status st;
    reply_scanner_init(&s);
    ck_assert_int_eq(s.type, 0);
    for (size_t i = 0; i < sizeof in - 1; i++) {
        ck_assert_uint_eq(reply_scan(&s, in + i, 1, &st), 1);
        ck_assert_int_eq(st, i + 2 == sizeof in ? REPLY_SCAN_DONE : REPLY_SCAN_MORE);
        ck_assert_int_eq(s.type, i < 12 ? '|' : '-');
    }
    ck_assert_uint_eq(s.body, 12);
    ck_assert_str_eq(s.errline, "bad");
    reply_scanner_init(&s);
    ck_assert_uint_eq(s.body, 0);
    ck_assert_int_eq(s.type, 0);
    ck_assert_str_eq(s.errline, "");
}
END_TEST

static void gen(struct out *o, const char *s, long times)
{
    for (long i = 0; i < times; i++)
        out_str(o, s);
}

START_TEST(test_deep_nesting)
{
    /* deeper than hiredis 0.14's limit of 7, and far beyond */
    static const int depths[] = { 7, 8, 20, 1000, 100000 };
    for (size_t k = 0; k < sizeof depths / sizeof depths[0]; k++) {
        struct out in = {0};
        gen(&in, "*1\r\n", depths[k]);
        out_str(&in, "+deep\r\n");
        char want[32];
        snprintf(want, sizeof want, "*%zu", in.len);
        check_all_feedings(in.s, in.len, want, depths[k] <= 20);
        /* a Lua-like table: two elements at every level */
        struct out t = {0};
        gen(&t, "*2\r\n:1\r\n", depths[k]);
        out_str(&t, "$-1\r\n");
        snprintf(want, sizeof want, "*%zu", t.len);
        check_all_feedings(t.s, t.len, want, depths[k] <= 20);
        free(in.s);
        free(t.s);
        /* RESP3: sets in maps, each annotated by an attribute */
        struct out m = {0};
        gen(&m, "%1\r\n|1\r\n+k\r\n+v\r\n#t\r\n~1\r\n", depths[k]);
        out_str(&m, "_\r\n");
        snprintf(want, sizeof want, "%%%zu", m.len);
        check_all_feedings(m.s, m.len, want, depths[k] <= 20);
        /* attributes nested in attributes, then the value */
        struct out a = {0};
        gen(&a, "|1\r\n", depths[k]);
        gen(&a, "+k\r\n+v\r\n", depths[k]);
        out_str(&a, ">1\r\n+x\r\n");
        snprintf(want, sizeof want, ">%zu@%zu", a.len, a.len - 8);
        check_all_feedings(a.s, a.len, want, depths[k] <= 20);
        free(m.s);
        free(a.s);
    }
}
END_TEST

START_TEST(test_million_elements)
{
    struct out in = {0};
    out_str(&in, "*1000000\r\n");
    for (int i = 0; i < 1000000; i++) {
        char e[32];
        if (i % 3)
            snprintf(e, sizeof e, "$6\r\nv%05d\r\n", i % 100000);
        else
            snprintf(e, sizeof e, ":%d\r\n", i);
        out_str(&in, e);
    }
    char want[64];
    snprintf(want, sizeof want, "*%zu", in.len);
    check_all_feedings(in.s, in.len, want, 0);
    /* one element short (":999999\r\n"): still waiting */
    size_t last = in.len - 9;
    check_one(transcript(in.s, last, NULL, 0), "...", "1M minus one", "whole");
    /* followed by a second reply in the same stream */
    out_str(&in, "+OK\r\n");
    snprintf(want, sizeof want, "*%zu +5", in.len - 5);
    check_one(transcript(in.s, in.len, NULL, 0), want, "1M then +OK", "whole");
    free(in.s);
}
END_TEST

START_TEST(test_big_bulk)
{
    size_t n = 8u << 20;
    char *in = malloc(n + 16);
    int h = snprintf(in, 16, "$%zu\r\n", n);
    memset(in + h, '\r', n);        /* payload of CRs: length, not content, ends it */
    memcpy(in + h + n, "\r\n", 2);
    char want[32];
    snprintf(want, sizeof want, "$%zu", (size_t)h + n + 2);
    check_all_feedings(in, (size_t)h + n + 2, want, 0);
    free(in);
}
END_TEST

START_TEST(test_init_resets)
{
    struct reply_scanner s;
    enum reply_scan_status st;
    reply_scanner_init(&s);
    ck_assert_uint_eq(reply_scan(&s, "-ERR x\r\n+OK\r\n", 13, &st), 8);
    ck_assert_int_eq(st, REPLY_SCAN_DONE);
    ck_assert_str_eq(s.errline, "ERR x");
    /* until init, nothing more is taken */
    ck_assert_uint_eq(reply_scan(&s, "+OK\r\n", 5, &st), 0);
    ck_assert_int_eq(st, REPLY_SCAN_DONE);
    reply_scanner_init(&s);
    ck_assert_uint_eq(reply_scan(&s, "+OK\r\n", 5, &st), 5);
    ck_assert_int_eq(st, REPLY_SCAN_DONE);
    ck_assert_int_eq(s.type, '+');
    ck_assert_uint_eq(s.len, 5);
    ck_assert_str_eq(s.errline, "");
    /* an error is sticky */
    reply_scanner_init(&s);
    ck_assert_uint_eq(reply_scan(&s, "?", 1, &st), 0);
    ck_assert_int_eq(st, REPLY_SCAN_ERROR);
    ck_assert_uint_eq(reply_scan(&s, "+OK\r\n", 5, &st), 0);
    ck_assert_int_eq(st, REPLY_SCAN_ERROR);
}
END_TEST

/* ---- reply_classify ---- */

static const struct {
    const char *line;
    enum reply_redirect want;
    int slot;
    const char *addr;
} classify[] = {
    { "MOVED 3999 127.0.0.1:6381", REPLY_MOVED, 3999, "127.0.0.1:6381" },
    { "ASK 3999 127.0.0.1:6381", REPLY_ASK, 3999, "127.0.0.1:6381" },
    { "MOVED 0 h:1", REPLY_MOVED, 0, "h:1" },
    { "MOVED 16383 node-3.cluster.local:65535", REPLY_MOVED, 16383, "node-3.cluster.local:65535" },
    /* IPv6 (issue 20): Redis writes the host bare, a topology announces it
     * bracketed; both spellings come out as the topology's */
    { "MOVED 12182 ::1:6381", REPLY_MOVED, 12182, "[::1]:6381" },
    { "MOVED 12182 [::1]:6381", REPLY_MOVED, 12182, "[::1]:6381" },
    { "ASK 7 ::1:7000", REPLY_ASK, 7, "[::1]:7000" },
    { "ASK 7 [::1]:7000", REPLY_ASK, 7, "[::1]:7000" },
    { "MOVED 1 fd00:1:2::3:65535", REPLY_MOVED, 1, "[fd00:1:2::3]:65535" },
    { "MOVED 1 [fd00:1:2::3]:65535", REPLY_MOVED, 1, "[fd00:1:2::3]:65535" },
    { "MOVED 3999 :6381", REPLY_MOVED, 3999, ":6381" },     /* unknown endpoint */
    { "TRYAGAIN Multiple keys request during rehashing of slot", REPLY_TRYAGAIN, -1, NULL },
    { "TRYAGAIN", REPLY_TRYAGAIN, -1, NULL },
    { "CLUSTERDOWN The cluster is down", REPLY_CLUSTERDOWN, -1, NULL },
    { "CLUSTERDOWN Hash slot not served", REPLY_CLUSTERDOWN, -1, NULL },
    /* malformed redirects and look-alikes are plain errors */
    { "MOVED 16384 127.0.0.1:6381", REPLY_PLAIN, -1, NULL },
    { "MOVED 99999 127.0.0.1:6381", REPLY_PLAIN, -1, NULL },
    { "MOVED 123456 127.0.0.1:6381", REPLY_PLAIN, -1, NULL },
    { "MOVED -1 127.0.0.1:6381", REPLY_PLAIN, -1, NULL },
    { "MOVED x 127.0.0.1:6381", REPLY_PLAIN, -1, NULL },
    { "MOVED  3999 127.0.0.1:6381", REPLY_PLAIN, -1, NULL },
    { "MOVED 3999  127.0.0.1:6381", REPLY_PLAIN, -1, NULL },
    { "MOVED 3999", REPLY_PLAIN, -1, NULL },
    { "MOVED 3999 ", REPLY_PLAIN, -1, NULL },
    { "MOVED", REPLY_PLAIN, -1, NULL },
    { "MOVED ", REPLY_PLAIN, -1, NULL },
    { "MOVED 3999 127.0.0.1", REPLY_PLAIN, -1, NULL },
    { "MOVED 3999 127.0.0.1:", REPLY_PLAIN, -1, NULL },
    { "MOVED 3999 127.0.0.1:0", REPLY_PLAIN, -1, NULL },
    { "MOVED 3999 127.0.0.1:65536", REPLY_PLAIN, -1, NULL },
    { "MOVED 3999 127.0.0.1:6381x", REPLY_PLAIN, -1, NULL },
    { "MOVED 3999 [::1:6381", REPLY_PLAIN, -1, NULL },
    { "MOVED 3999 ::1]:6381", REPLY_PLAIN, -1, NULL },
    { "MOVED 3999 [::1]x:6381", REPLY_PLAIN, -1, NULL },
    { "MOVED 3999 [::1]:", REPLY_PLAIN, -1, NULL },
    { "MOVED 3999 []:6381", REPLY_PLAIN, -1, NULL },
    { "ASK 3999 [[::1]]:6381", REPLY_PLAIN, -1, NULL },
    { "MOVED 3999 127.0.0.1:6381 extra", REPLY_PLAIN, -1, NULL },
    { "MOVED 3999 127.0.0.1:6381\r", REPLY_PLAIN, -1, NULL },
    { "MOVEDX 3999 127.0.0.1:6381", REPLY_PLAIN, -1, NULL },
    { "moved 3999 127.0.0.1:6381", REPLY_PLAIN, -1, NULL },
    { "ASK 3999", REPLY_PLAIN, -1, NULL },
    { "ASKING 3999 127.0.0.1:6381", REPLY_PLAIN, -1, NULL },
    { "ERR MOVED 3999 127.0.0.1:6381", REPLY_PLAIN, -1, NULL },
    { "TRYAGAINX", REPLY_PLAIN, -1, NULL },
    { "CLUSTERDOWNX", REPLY_PLAIN, -1, NULL },
    { "ERR CLUSTERDOWN", REPLY_PLAIN, -1, NULL },
    { "ERR unknown command", REPLY_PLAIN, -1, NULL },
    { "", REPLY_PLAIN, -1, NULL },
};

/* The nils of both protocols, and what only looks like one. */
START_TEST(test_is_null)
{
    ck_assert(reply_is_null("$-1\r\n", 5));
    ck_assert(reply_is_null("*-1\r\n", 5));
    ck_assert(reply_is_null("_\r\n", 3));
    ck_assert(!reply_is_null("$0\r\n\r\n", 6));
    ck_assert(!reply_is_null("*0\r\n", 4));
    ck_assert(!reply_is_null(":-1\r\n", 5));
    ck_assert(!reply_is_null("$1\r\n_\r\n", 7));
}
END_TEST

START_TEST(test_classify)
{
    for (size_t i = 0; i < sizeof classify / sizeof classify[0]; i++) {
        int slot = 7;
        char addr[64] = "untouched";
        enum reply_redirect r = reply_classify(classify[i].line, strlen(classify[i].line),
                                               &slot, addr, sizeof addr);
        ck_assert_msg(r == classify[i].want, "\"%s\": got %d, want %d", classify[i].line,
                      r, classify[i].want);
        ck_assert_int_eq(slot, classify[i].slot);
        ck_assert_str_eq(addr, classify[i].addr ? classify[i].addr : "");
    }
}
END_TEST

START_TEST(test_classify_addr_must_fit)
{
    int slot = -1;
    char addr[8];
    /* "h:6381" + NUL fits in 7; "hh:6381" + NUL needs 8 */
    ck_assert_int_eq(reply_classify("MOVED 1 hh:6381", 15, &slot, addr, 8), REPLY_MOVED);
    ck_assert_str_eq(addr, "hh:6381");
    ck_assert_int_eq(reply_classify("MOVED 1 hhh:6381", 16, &slot, addr, 8), REPLY_PLAIN);
    ck_assert_int_eq(reply_classify("ASK 2 hh:6381", 13, &slot, addr, 0), REPLY_PLAIN);
    /* the line is taken by length, not up to a NUL */
    ck_assert_int_eq(reply_classify("MOVED 1 h:1 junk", 11, &slot, addr, 8), REPLY_MOVED);
    ck_assert_str_eq(addr, "h:1");
    ck_assert_int_eq(slot, 1);
}
END_TEST

/* The brackets an unbracketed IPv6 host gains count against the room. */
START_TEST(test_classify_v6_addr_must_fit)
{
    int slot = -1;
    char addr[16];
    /* "::1:6381" is 8 bytes, "[::1]:6381" 10 + NUL */
    ck_assert_int_eq(reply_classify("MOVED 1 ::1:6381", 16, &slot, addr, 11), REPLY_MOVED);
    ck_assert_str_eq(addr, "[::1]:6381");
    ck_assert_int_eq(reply_classify("MOVED 1 ::1:6381", 16, &slot, addr, 10), REPLY_PLAIN);
    ck_assert_int_eq(reply_classify("MOVED 1 [::1]:6381", 18, &slot, addr, 10), REPLY_PLAIN);
}
END_TEST

/* The iterator reads an array's elements in order, ends after the last,
 * and stops at one that is not whole. */
START_TEST(test_iter_elements)
{
    static const char arr[] = "*3\r\n$1\r\na\r\n*2\r\n:1\r\n+x\r\n:42\r\n";
    struct reply_iter it;
    const char *e;
    size_t el;
    ck_assert_int_eq(reply_iter_array(&it, arr, sizeof arr - 1), 0);
    ck_assert_int_eq(it.n, 3);
    ck_assert_int_eq(reply_iter_next(&it, &e, &el), 1);
    ck_assert_int_eq(el, 7);
    ck_assert_int_eq(memcmp(e, "$1\r\na\r\n", el), 0);
    ck_assert_int_eq(reply_iter_next(&it, &e, &el), 1);
    ck_assert_int_eq(memcmp(e, "*2\r\n:1\r\n+x\r\n", el), 0);
    ck_assert_int_eq(reply_iter_next(&it, &e, &el), 1);
    ck_assert_int_eq(memcmp(e, ":42\r\n", el), 0);
    ck_assert_int_eq(reply_iter_next(&it, &e, &el), 0);
    /* cut inside the second element */
    ck_assert_int_eq(reply_iter_array(&it, arr, 16), 0);
    ck_assert_int_eq(reply_iter_next(&it, &e, &el), 1);
    ck_assert_int_eq(reply_iter_next(&it, &e, &el), -1);
    /* not an array, a null array, an empty one */
    ck_assert_int_eq(reply_iter_array(&it, ":3\r\n", 4), -1);
    ck_assert_int_eq(reply_iter_array(&it, "*-1\r\n", 5), -1);
    ck_assert_int_eq(reply_iter_array(&it, "*0\r\n", 4), 0);
    ck_assert_int_eq(reply_iter_next(&it, &e, &el), 0);
    ck_assert_int_eq(reply_array_elements(arr, sizeof arr - 1, NULL, NULL, 2), -1);
    ck_assert_int_eq(reply_array_elements(arr, sizeof arr - 1, NULL, NULL, -1), 3);
    ck_assert_int_eq(reply_array_elements(arr, 16, NULL, NULL, -1), -1);
}
END_TEST

static Suite *reply_suite(void)
{
    Suite *s = suite_create("reply");
    TCase *tc = tcase_create("scan");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_reply_shapes);
    tcase_add_test(tc, test_resp3_shapes);
    tcase_add_test(tc, test_errline_is_cut_to_fit);
    tcase_add_test(tc, test_blob_errline_is_cut_to_fit);
    tcase_add_test(tc, test_bulk_max);
    tcase_add_test(tc, test_type_in_progress);
    tcase_add_test(tc, test_deep_nesting);
    tcase_add_test(tc, test_million_elements);
    tcase_add_test(tc, test_big_bulk);
    tcase_add_test(tc, test_init_resets);
    suite_add_tcase(s, tc);
    TCase *tk = tcase_create("classify");
    tcase_add_test(tk, test_is_null);
    tcase_add_test(tk, test_iter_elements);
    tcase_add_test(tk, test_classify);
    tcase_add_test(tk, test_classify_addr_must_fit);
    tcase_add_test(tk, test_classify_v6_addr_must_fit);
    suite_add_tcase(s, tk);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(reply_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
