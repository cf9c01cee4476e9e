/*
 * Commands with a huge number of arguments: the proxy answers each (or
 * refuses it with an error) and keeps serving. A SUBSCRIBE of 700,000
 * distinct channels is the regression case: its argument arrays lay on
 * the worker's stack and the process died of SIGSEGV. Then one command of
 * a million arguments for each variadic family, the same bytes sent to a
 * standalone redis-server and to the proxy, the replies compared (type,
 * first line, element count, reply count); MGET and the like spread over
 * every master are the regression case of the split, which grouped keys by
 * slot in keys times slots steps and stalled its worker past the node
 * timeout.
 */
#include "harness.h"

#define HOSTILE_CHANNELS 700000

/* The proxy still answers another client: PING, SET and GET. */
static void expect_serving(void)
{
    redisContext *c = h_connect_proxy();
    redisReply *r = h_cmd(c, "PING");
    H_EXPECT_STATUS(r, "PONG");
    freeReplyObject(r);
    r = h_cmd(c, "SET %s:hostile:after v", h_prefix());
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    r = h_cmd(c, "GET %s:hostile:after", h_prefix());
    H_EXPECT_BULK(r, "v");
    freeReplyObject(r);
    redisFree(c);
}

/* argv of verb and n distinct names "<prefix>:hostile:<i>". */
static const char **names_argv(const char *verb, int n, char **store)
{
    const char **argv = malloc(sizeof *argv * (size_t)(n + 1));
    char *s = malloc((size_t)n * 48);
    ck_assert(argv && s);
    argv[0] = verb;
    for (int i = 0; i < n; i++) {
        argv[i + 1] = s + (size_t)i * 48;
        snprintf(s + (size_t)i * 48, 48, "%s:hostile:%d", h_prefix(), i);
    }
    *store = s;
    return argv;
}

START_TEST(test_subscribe_700k_channels)
{
    char *store;
    const char **argv = names_argv("SUBSCRIBE", HOSTILE_CHANNELS, &store);
    redisContext *c = h_connect_proxy();
    struct timeval tv = { 120, 0 };
    redisSetTimeout(c, tv);
    ck_assert_int_eq(redisAppendCommandArgv(c, HOSTILE_CHANNELS + 1, argv, NULL), REDIS_OK);
    /* one confirmation per channel, as redis-server sends, counted at the
     * first and the last; or the connection closed for passing the pubsub
     * output limit (32mb), as redis-server closes a subscriber that falls
     * that far behind. Either way the proxy lives on. */
    redisReply *r = NULL;
    int got = 0;
    while (got < HOSTILE_CHANNELS && redisGetReply(c, (void **)&r) == REDIS_OK && r) {
        ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
        ck_assert_int_eq(r->elements, 3);
        if (got == 0 || got == HOSTILE_CHANNELS - 1)
            ck_assert_int_eq(r->element[2]->integer, got + 1);
        freeReplyObject(r);
        got++;
    }
    ck_assert_msg(got == HOSTILE_CHANNELS || c->err == REDIS_ERR_EOF,
                  "after %d confirmations: %s", got, c->errstr);
    expect_serving();
    redisFree(c);
    free(argv);
    free(store);
    expect_serving();
}
END_TEST

/* ---------- one command of a million arguments, against redis-server ---------- */

/* One command in RESP, built in one growing malloc'd buffer. */
struct big {
    char *s;
    size_t len, cap;
};

static void big_put(struct big *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 20;
        while (cap < b->len + n)
            cap *= 2;
        b->s = realloc(b->s, cap);
        ck_assert_ptr_nonnull(b->s);
        b->cap = cap;
    }
    memcpy(b->s + b->len, p, n);
    b->len += n;
}

static void big_argn(struct big *b, const char *s, size_t n)
{
    char head[32];
    int hl = snprintf(head, sizeof head, "$%zu\r\n", n);
    big_put(b, head, (size_t)hl);
    big_put(b, s, n);
    big_put(b, "\r\n", 2);
}

static void big_arg(struct big *b, const char *s)
{
    big_argn(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void big_argf(struct big *b, const char *fmt, ...)
{
    char s[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s, sizeof s, fmt, ap);
    va_end(ap);
    ck_assert(n > 0 && (size_t)n < sizeof s);
    big_argn(b, s, (size_t)n);
}

/* Starts a command of argc arguments (the caller adds exactly that many). */
static void big_cmd(struct big *b, long argc)
{
    char head[32];
    int hl = snprintf(head, sizeof head, "*%ld\r\n", argc);
    big_put(b, head, (size_t)hl);
}

/* Adds n key names: "<prefix>:<what>:{<tag>}:<i>" under one hash tag, or
 * "<prefix>:<what>:<i>" (spread over every slot) when tag is NULL; with
 * value, each followed by the value "v". */
static void big_keys(struct big *b, const char *what, const char *tag, long n, int value)
{
    for (long i = 0; i < n; i++) {
        if (tag)
            big_argf(b, "%s:%s:{%s}:%ld", h_prefix(), what, tag, i);
        else
            big_argf(b, "%s:%s:%ld", h_prefix(), what, i);
        if (value)
            big_arg(b, "v");
    }
}

/*
 * What came back for a command: how many top-level replies, and of the
 * first and the last the first line (type and first bytes) and, for an
 * array, its element count. Counted while reading, nothing kept whole.
 */
struct answer {
    long replies;
    int closed;                     /* the peer closed the connection */
    char first[64], last[64];
    long long first_n, last_n;      /* element count, -1: no array */
};

/* A streaming RESP2 reader: nested arrays of simple elements and bulks. */
struct counter {
    struct answer *a;
    int depth;
    long long left[16];
    long long skip;                 /* bulk bytes (and CRLF) still to pass */
    char head[64];
    long long head_n;
};

static void counter_reply_done(struct counter *k)
{
    struct answer *a = k->a;
    if (a->replies == 0) {
        memcpy(a->first, k->head, sizeof a->first);
        a->first_n = k->head_n;
    }
    memcpy(a->last, k->head, sizeof a->last);
    a->last_n = k->head_n;
    a->replies++;
}

/* One element is complete: it ends the arrays it completes. */
static void counter_elem_done(struct counter *k)
{
    while (k->depth > 0) {
        if (--k->left[k->depth - 1] > 0)
            return;
        k->depth--;
    }
    counter_reply_done(k);
}

/* Consumes what it can of buf; returns the bytes consumed. */
static size_t counter_feed(struct counter *k, const char *buf, size_t len)
{
    size_t at = 0;
    for (;;) {
        if (k->skip > 0) {
            size_t n = len - at < (size_t)k->skip ? len - at : (size_t)k->skip;
            at += n;
            k->skip -= (long long)n;
            if (k->skip > 0)
                return at;
            counter_elem_done(k);
            continue;
        }
        const char *line = buf + at, *crlf = memmem(line, len - at, "\r\n", 2);
        if (!crlf)
            return at;
        size_t ll = (size_t)(crlf - line);
        long long n = ll > 1 ? strtoll(line + 1, NULL, 10) : 0;
        at += ll + 2;
        if (k->depth == 0) {
            size_t hl = ll < sizeof k->head - 1 ? ll : sizeof k->head - 1;
            memcpy(k->head, line, hl);
            k->head[hl] = '\0';
            k->head_n = line[0] == '*' ? n : -1;
        }
        if (line[0] == '*' && n > 0) {
            ck_assert_msg(k->depth < 16, "replies nested too deep");
            k->left[k->depth++] = n;
        } else if (line[0] == '$' && n >= 0) {
            k->skip = n + 2;
        } else {
            counter_elem_done(k);
        }
    }
}

/* Nothing at all for this long counts as a hang (a generous bound: a
 * million-argument command takes the proxy seconds on a shared machine). */
#define BIG_IDLE_MS 60000

/*
 * Sends cmd to addr on a fresh connection, reading while it writes (so that
 * replies that come early, as to MULTI's queued commands, never stall it),
 * until `replies` replies came or the peer closed.
 */
static void big_exchange(const struct h_node *addr, const struct big *cmd, long replies,
                         struct answer *a)
{
    int fd = h_raw_connect(addr);
    size_t sent = 0, have = 0, cap = 1 << 20;
    char *buf = malloc(cap);
    struct counter k = { .a = a };

    ck_assert_ptr_nonnull(buf);
    memset(a, 0, sizeof *a);
    while (a->replies < replies && !a->closed) {
        struct pollfd pfd = { fd, POLLIN | (sent < cmd->len ? POLLOUT : 0), 0 };
        int rc = poll(&pfd, 1, BIG_IDLE_MS);
        if (rc < 0 && errno == EINTR)
            continue;
        ck_assert_msg(rc > 0, "%s:%d: nothing for %d ms after %ld replies, %zu of %zu bytes sent",
                      addr->host, addr->port, BIG_IDLE_MS, a->replies, sent, cmd->len);
        if ((pfd.revents & POLLOUT) && sent < cmd->len) {
            ssize_t n = send(fd, cmd->s + sent, cmd->len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0)
                sent += (size_t)n;
            else if (n < 0 && errno != EAGAIN && errno != EINTR)
                a->closed = 1;      /* reset while sending: closed at a limit */
        }
        if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = recv(fd, buf + have, cap - have, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                a->closed = 1;
                break;
            }
            if (n > 0) {
                have += (size_t)n;
                size_t used = counter_feed(&k, buf, have);
                memmove(buf, buf + used, have - used);
                have -= used;
                ck_assert_msg(have < cap, "a reply line longer than %zu bytes", cap);
            }
        }
    }
    close(fd);
    free(buf);
}

/* How a proxy answer may differ from redis-server's and still be right. */
enum {
    SAME_HEAD = 1,      /* the first reply's first line, byte for byte */
    SAME_LAST = 2,      /* the last reply's first line too */
    MAY_CLOSE = 4,      /* or closed early at a documented limit (pubsub output) */
};

struct big_case {
    const char *what;
    long replies;       /* replies redis-server sends */
    int flags;
    const char *error;  /* an error the proxy may answer instead (prefix), or NULL */
};

/* Sends cmd to the reference and to the proxy and compares; then the proxy
 * still serves another client. */
static void big_check(const struct h_node *ref, const struct big_case *c, struct big *cmd)
{
    struct answer want, got;
    struct h_node proxy = h_proxy_addr();

    big_exchange(ref, cmd, c->replies, &want);
    big_exchange(&proxy, cmd, c->replies, &got);
    cmd->len = 0;
    fprintf(stderr, "%s: redis-server %ld replies (%s%s, %lld) .. (%s, %lld); "
            "proxy %ld (%s%s, %lld) .. (%s, %lld)\n", c->what, want.replies, want.first,
            want.closed ? ", closed" : "", want.first_n, want.last, want.last_n, got.replies,
            got.first, got.closed ? ", closed" : "", got.first_n, got.last, got.last_n);
    if (c->error && got.replies == 1 && got.first[0] == '-' &&
        strncmp(got.first + 1, c->error, strlen(c->error)) == 0) {
        ck_assert_msg(want.replies == c->replies, "%s: redis-server answered %ld replies", c->what,
                      want.replies);
    } else if ((c->flags & MAY_CLOSE) && got.closed) {
        ck_assert_msg(got.replies < c->replies, "%s: closed after all replies", c->what);
    } else {
        ck_assert_msg(want.replies == c->replies || ((c->flags & MAY_CLOSE) && want.closed),
                      "%s: redis-server answered %ld of %ld replies", c->what, want.replies,
                      c->replies);
        ck_assert_msg(got.replies == c->replies, "%s: the proxy answered %ld of %ld replies%s",
                      c->what, got.replies, c->replies, got.closed ? " and closed" : "");
        ck_assert_msg(got.first[0] == want.first[0], "%s: first reply '%s', redis-server '%s'",
                      c->what, got.first, want.first);
        ck_assert_msg(got.first_n == want.first_n,
                      "%s: first reply of %lld elements, redis-server %lld", c->what, got.first_n,
                      want.first_n);
        if (c->flags & SAME_HEAD)
            ck_assert_msg(strcmp(got.first, want.first) == 0,
                          "%s: first reply '%s', redis-server '%s'", c->what, got.first,
                          want.first);
        if (want.replies == c->replies) {
            ck_assert_msg(got.last[0] == want.last[0] && got.last_n == want.last_n,
                          "%s: last reply '%s' (%lld), redis-server '%s' (%lld)", c->what, got.last,
                          got.last_n, want.last, want.last_n);
            if (c->flags & SAME_LAST)
                ck_assert_msg(strcmp(got.last, want.last) == 0,
                              "%s: last reply '%s', redis-server '%s'", c->what, got.last,
                              want.last);
        }
    }
    expect_serving();
}

#define MILLION 1000000L

static struct h_proxy ref;

static void ref_setup(void)
{
    h_ref_start(&ref, "redis-hostile", NULL);
}

static void ref_teardown(void)
{
    h_proxy_stop(&ref);
}

/* A hash tag of the run's own (one slot for the whole command). */
static const char *run_tag(void)
{
    static char tag[64];
    if (!tag[0])
        snprintf(tag, sizeof tag, "hostile%ld", (long)getpid());
    return tag;
}

/* Fewer for PSUBSCRIBE: redis-server 7.0 looks each new pattern up in a
 * list of the client's patterns, so a million take it hours (a million
 * channels or shard channels, in a dict, take it a second). */
#define PSUB_PATTERNS 30000L

START_TEST(test_big_psubscribe_ssubscribe_unsubscribe)
{
    struct big b = { 0 };
    /* one confirmation per pattern or channel; or closed at the pubsub
     * output limit (32mb), as redis-server closes such a subscriber */
    const struct big_case psub = { "PSUBSCRIBE", PSUB_PATTERNS, SAME_HEAD | SAME_LAST | MAY_CLOSE,
                                   NULL };
    big_cmd(&b, PSUB_PATTERNS + 1);
    big_arg(&b, "PSUBSCRIBE");
    for (long i = 0; i < PSUB_PATTERNS; i++)
        big_argf(&b, "%s:hostile:p%ld:*", h_prefix(), i);
    big_check(&ref.addr, &psub, &b);

    const struct big_case ssub = { "SSUBSCRIBE", MILLION, SAME_HEAD | MAY_CLOSE, NULL };
    big_cmd(&b, MILLION + 1);
    big_arg(&b, "SSUBSCRIBE");
    big_keys(&b, "sch", run_tag(), MILLION, 0);
    big_check(&ref.addr, &ssub, &b);

    /* SUBSCRIBE of three, then UNSUBSCRIBE of a million (the three among them) */
    const struct big_case unsub = { "UNSUBSCRIBE", 3 + MILLION, SAME_HEAD | MAY_CLOSE, NULL };
    big_cmd(&b, 4);
    big_arg(&b, "SUBSCRIBE");
    big_keys(&b, "uch", NULL, 3, 0);
    big_cmd(&b, MILLION + 1);
    big_arg(&b, "UNSUBSCRIBE");
    big_keys(&b, "uch", NULL, MILLION, 0);
    big_check(&ref.addr, &unsub, &b);

    const struct big_case numsub = { "PUBSUB NUMSUB", 1, SAME_HEAD, NULL };
    big_cmd(&b, MILLION + 2);
    big_arg(&b, "PUBSUB");
    big_arg(&b, "NUMSUB");
    big_keys(&b, "nch", NULL, MILLION, 0);
    big_check(&ref.addr, &numsub, &b);
    free(b.s);
}
END_TEST

START_TEST(test_big_scan_keys)
{
    struct big b = { 0 };
    /* the cursor differs (the proxy's encodes the node), the shape not */
    const struct big_case scan = { "SCAN", 1, SAME_HEAD, NULL };
    big_cmd(&b, 2 + 4 * (MILLION / 2));
    big_arg(&b, "SCAN");
    big_arg(&b, "0");
    for (long i = 0; i < MILLION / 2; i++) {
        big_arg(&b, "MATCH");
        big_argf(&b, "%s:hostile:none:*", h_prefix());
        big_arg(&b, "COUNT");
        big_arg(&b, "10");
    }
    big_check(&ref.addr, &scan, &b);

    const struct big_case keys = { "KEYS", 1, SAME_HEAD, NULL };
    big_cmd(&b, MILLION + 1);
    big_arg(&b, "KEYS");
    big_keys(&b, "k", NULL, MILLION, 0);
    big_check(&ref.addr, &keys, &b);
    free(b.s);
}
END_TEST

/* MGET/DEL/EXISTS/UNLINK/TOUCH of a million keys under one hash tag and
 * spread over every master (the split path); MSET of 500,000 pairs both
 * ways, then DEL of those. */
START_TEST(test_big_multikey)
{
    static const char *const verbs[] = { "MGET", "DEL", "EXISTS", "UNLINK", "TOUCH" };
    struct big b = { 0 };
    for (int spread = 0; spread < 2; spread++) {
        const char *tag = spread ? NULL : run_tag();
        for (size_t v = 0; v < sizeof verbs / sizeof verbs[0]; v++) {
            char what[64];
            snprintf(what, sizeof what, "%s %s", verbs[v], spread ? "spread" : "one slot");
            const struct big_case c = { what, 1, SAME_HEAD | SAME_LAST, NULL };
            big_cmd(&b, MILLION + 1);
            big_arg(&b, verbs[v]);
            big_keys(&b, "mk", tag, MILLION, 0);
            big_check(&ref.addr, &c, &b);
        }
        char what[64];
        snprintf(what, sizeof what, "MSET %s", spread ? "spread" : "one slot");
        const struct big_case mset = { what, 1, SAME_HEAD, NULL };
        big_cmd(&b, MILLION + 1);
        big_arg(&b, "MSET");
        big_keys(&b, "ms", tag, MILLION / 2, 1);
        big_check(&ref.addr, &mset, &b);
        snprintf(what, sizeof what, "DEL after MSET %s", spread ? "spread" : "one slot");
        const struct big_case del = { what, 1, SAME_HEAD, NULL };   /* :500000 */
        big_cmd(&b, MILLION / 2 + 1);
        big_arg(&b, "DEL");
        big_keys(&b, "ms", tag, MILLION / 2, 0);
        big_check(&ref.addr, &del, &b);
    }
    free(b.s);
}
END_TEST

/* EVAL and FCALL with numkeys 1,000,000 (one slot): the script counts them. */
START_TEST(test_big_scripts)
{
    struct big b = { 0 };
    char lib[64], fn[64], code[256];
    snprintf(lib, sizeof lib, "hostile%ld", (long)getpid());
    snprintf(fn, sizeof fn, "hostile%ld_nkeys", (long)getpid());
    snprintf(code, sizeof code,
             "#!lua name=%s\nredis.register_function('%s', function(keys, args) "
             "return #keys end)\n", lib, fn);
    redisContext *r = h_connect_node(&ref.addr), *p = h_connect_proxy();
    redisReply *rep = h_cmd(r, "FUNCTION LOAD %s", code);
    H_EXPECT_BULK(rep, lib);
    freeReplyObject(rep);
    rep = h_cmd(p, "FUNCTION LOAD %s", code);
    H_EXPECT_BULK(rep, lib);
    freeReplyObject(rep);

    const struct big_case eval = { "EVAL", 1, SAME_HEAD, NULL };   /* :1000000 */
    big_cmd(&b, MILLION + 3);
    big_arg(&b, "EVAL");
    big_arg(&b, "return #KEYS");
    big_argf(&b, "%ld", MILLION);
    big_keys(&b, "ek", run_tag(), MILLION, 0);
    big_check(&ref.addr, &eval, &b);

    const struct big_case fcall = { "FCALL", 1, SAME_HEAD, NULL };
    big_cmd(&b, MILLION + 3);
    big_arg(&b, "FCALL");
    big_arg(&b, fn);
    big_argf(&b, "%ld", MILLION);
    big_keys(&b, "fk", run_tag(), MILLION, 0);
    big_check(&ref.addr, &fcall, &b);

    rep = h_cmd(p, "FUNCTION DELETE %s", lib);
    H_EXPECT_STATUS(rep, "OK");
    freeReplyObject(rep);
    redisFree(p);
    redisFree(r);
    free(b.s);
}
END_TEST

/* XREAD STREAMS of 500,000 keys and ids, ZUNIONSTORE and SINTERCARD of
 * numkeys 1,000,000 (one slot): none exists. */
START_TEST(test_big_numkeys)
{
    struct big b = { 0 };
    const struct big_case xread = { "XREAD", 1, SAME_HEAD, NULL };   /* nil */
    big_cmd(&b, 2 + MILLION);
    big_arg(&b, "XREAD");
    big_arg(&b, "STREAMS");
    big_keys(&b, "xk", run_tag(), MILLION / 2, 0);
    for (long i = 0; i < MILLION / 2; i++)
        big_arg(&b, "0-0");
    big_check(&ref.addr, &xread, &b);

    const struct big_case zu = { "ZUNIONSTORE", 1, SAME_HEAD, NULL };   /* :0 */
    big_cmd(&b, 3 + MILLION);
    big_arg(&b, "ZUNIONSTORE");
    big_argf(&b, "%s:zdest:{%s}", h_prefix(), run_tag());
    big_argf(&b, "%ld", MILLION);
    big_keys(&b, "zk", run_tag(), MILLION, 0);
    big_check(&ref.addr, &zu, &b);

    const struct big_case si = { "SINTERCARD", 1, SAME_HEAD, NULL };   /* :0 */
    big_cmd(&b, 2 + MILLION);
    big_arg(&b, "SINTERCARD");
    big_argf(&b, "%ld", MILLION);
    big_keys(&b, "sk", run_tag(), MILLION, 0);
    big_check(&ref.addr, &si, &b);
    free(b.s);
}
END_TEST

#define QUEUED 100000L

/* MULTI, 100,000 INCRs of one key queued, EXEC; CLIENT KILL with 500,000
 * filter pairs (an ID no client has). */
START_TEST(test_big_multi_client_kill)
{
    struct big b = { 0 };
    /* +OK, +QUEUED each, then EXEC's array of 100,000 (the last :100000) */
    const struct big_case tx = { "MULTI/EXEC", QUEUED + 2, SAME_HEAD | SAME_LAST, NULL };
    big_cmd(&b, 1);
    big_arg(&b, "MULTI");
    for (long i = 0; i < QUEUED; i++) {
        big_cmd(&b, 2);
        big_arg(&b, "INCR");
        big_argf(&b, "%s:ctr:{%s}", h_prefix(), run_tag());
    }
    big_cmd(&b, 1);
    big_arg(&b, "EXEC");
    big_check(&ref.addr, &tx, &b);

    const struct big_case kill = { "CLIENT KILL", 1, SAME_HEAD, NULL };   /* :0 */
    big_cmd(&b, 2 + MILLION);
    big_arg(&b, "CLIENT");
    big_arg(&b, "KILL");
    for (long i = 0; i < MILLION / 2; i++) {
        big_arg(&b, "ID");
        big_arg(&b, "999999999");
    }
    big_check(&ref.addr, &kill, &b);
    free(b.s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_args");
    TCase *tc = tcase_create("many_args");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_subscribe_700k_channels);
    suite_add_tcase(s, tc);
    /* one command of a million arguments per family, against redis-server */
    TCase *big = tcase_create("million_args");
    tcase_set_timeout(big, 300);
    tcase_add_checked_fixture(big, ref_setup, ref_teardown);
    tcase_add_test(big, test_big_psubscribe_ssubscribe_unsubscribe);
    tcase_add_test(big, test_big_scan_keys);
    tcase_add_test(big, test_big_multikey);
    tcase_add_test(big, test_big_scripts);
    tcase_add_test(big, test_big_numkeys);
    tcase_add_test(big, test_big_multi_client_kill);
    suite_add_tcase(s, big);
    return h_run(s);
}
