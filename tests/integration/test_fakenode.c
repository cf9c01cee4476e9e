/*
 * The proxy against a scripted fake node (fakenode.h) that misbehaves on
 * demand, as no real redis-server will: forged redirects, replies nested
 * deeper than hiredis reads, huge arrays and bulks, garbage, silence, retry
 * errors, redirects to a known node, and a connection cut after the command
 * was written.
 *
 * Each test starts its own fake node(s) and its own proxy (TAGPROXY_TEST_BIN,
 * else ./build/tagproxy) seeded with the fake node; teardown stops both
 * (Check also kills the test's process group when a test fails). The
 * cluster of scripts/test.sh is not used. Proxy logs go to TAGPROXY_TEST_DIR
 * if set, else to a temporary folder removed at the end; on failure their
 * tails are printed.
 *
 * The fake node answers GET by key:
 *
 *   ok              bulk "ok"
 *   forged-moved    -MOVED 1234 127.0.0.1:<trap>   (an address never announced)
 *   forged-ask      -ASK 1234 127.0.0.1:<trap>
 *   deep:N          *1 nested N levels around bulk "deep"
 *   huge            an array of HUGE_N small bulks, in writes of random sizes
 *   big             a BIG_LEN-byte bulk, likewise
 *   bad             "?garbage\r\n" (not RESP)
 *   slow            nothing; "stale:slow" after SLOW_MS if the connection lives
 *   tryagain:N      -TRYAGAIN the first N times, then bulk "done"
 *   clusterdown:N   -CLUSTERDOWN likewise
 *   die             the connection closed without a reply
 *   moveme          on A: -MOVED <slot> <B>; on B: bulk "fromB"
 *   {moveme}ask     on A: -ASK <slot> <B>; on B: "fromB" right after ASKING,
 *                   else -MOVED back to A, as a real node answers
 *   anything else   nil
 */
#include "harness.h"
#include "fakenode.h"

#define HUGE_N   2000000
#define BIG_LEN  (64L * 1024 * 1024)
#define SLOW_MS  1500
#define TRYAGAIN_MSG "TRYAGAIN Multiple keys request during rehashing of slot"
#define CLUSTERDOWN_MSG "CLUSTERDOWN The cluster is down"

/* Everything a test runs; teardown stops whatever is running. */
static struct {
    struct fake_node a, b, trap;
    struct h_proxy proxy;
} W;

/* Read by the scripts; set before the fake nodes' threads start. */
static char *g_huge, *g_big;
static size_t g_huge_len, g_big_len;
static int g_moveme_slot;

/* ---------- replies, built the same way for the script and the check ---------- */

/* "*1\r\n" n times, then $4 "deep". Caller frees. */
static char *deep_reply(int n, size_t *len)
{
    static const char leaf[] = "$4\r\ndeep\r\n";
    char *buf = malloc((size_t)n * 4 + sizeof(leaf));

    ck_assert_ptr_nonnull(buf);
    for (int i = 0; i < n; i++)
        memcpy(buf + (size_t)i * 4, "*1\r\n", 4);
    memcpy(buf + (size_t)n * 4, leaf, sizeof(leaf));
    *len = (size_t)n * 4 + sizeof(leaf) - 1;
    return buf;
}

/* *HUGE_N of bulks "0", "1", ...: distinct, so a lost or swapped element shows. */
static void huge_build(void)
{
    size_t cap = 16 + (size_t)HUGE_N * 16, len;

    g_huge = malloc(cap);
    ck_assert_ptr_nonnull(g_huge);
    len = (size_t)sprintf(g_huge, "*%d\r\n", HUGE_N);
    for (int i = 0; i < HUGE_N; i++) {
        char num[16];
        int n = sprintf(num, "%d", i);
        len += (size_t)sprintf(g_huge + len, "$%d\r\n%s\r\n", n, num);
    }
    g_huge_len = len;
}

/* $BIG_LEN of pseudo-random bytes (CR and LF among them). */
static void big_build(void)
{
    size_t head;
    unsigned x = 88172645u;

    g_big = malloc((size_t)BIG_LEN + 32);
    ck_assert_ptr_nonnull(g_big);
    head = (size_t)sprintf(g_big, "$%ld\r\n", BIG_LEN);
    for (long i = 0; i < BIG_LEN; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        g_big[head + (size_t)i] = (char)(x >> 11);
    }
    memcpy(g_big + head + BIG_LEN, "\r\n", 2);
    g_big_len = head + (size_t)BIG_LEN + 2;
}

/* ---------- the scripts ---------- */

static int write_redirect(struct fn_conn *c, const char *kind, int slot, int port)
{
    char line[128];
    snprintf(line, sizeof(line), "-%s %d 127.0.0.1:%d\r\n", kind, slot, port);
    return fn_writes(c, line);
}

/* "-<msg>" for the first n GETs of key, then bulk "done". */
static int write_fail_n(struct fn_conn *c, const char *key, const char *msg, int n)
{
    char line[160];
    if (fn_bump(c->f, key) > n) {
        return fn_write_bulk(c, "done");
    }
    snprintf(line, sizeof(line), "-%s\r\n", msg);
    return fn_writes(c, line);
}

static int script_a(struct fn_conn *c, const char *key, size_t len)
{
    (void)len;
    if (strcmp(key, "ok") == 0)
        return fn_write_bulk(c, "ok");
    if (strcmp(key, "forged-moved") == 0)
        return write_redirect(c, "MOVED", 1234, W.trap.port);
    if (strcmp(key, "forged-ask") == 0)
        return write_redirect(c, "ASK", 1234, W.trap.port);
    if (strncmp(key, "deep:", 5) == 0) {
        size_t n;
        char *r = deep_reply(atoi(key + 5), &n);
        int rc = fn_write_chunked(c, r, n);
        free(r);
        return rc;
    }
    if (strcmp(key, "huge") == 0)
        return fn_write_chunked(c, g_huge, g_huge_len);
    if (strcmp(key, "big") == 0)
        return fn_write_chunked(c, g_big, g_big_len);
    if (strcmp(key, "bad") == 0)
        return fn_writes(c, "?garbage\r\n");
    if (strcmp(key, "slow") == 0) {
        if (fn_wait_peer_close(c, SLOW_MS))
            return -1;
        return fn_write_bulk(c, "stale:slow");
    }
    if (strncmp(key, "tryagain:", 9) == 0)
        return write_fail_n(c, key, TRYAGAIN_MSG, atoi(key + 9));
    if (strncmp(key, "clusterdown:", 12) == 0)
        return write_fail_n(c, key, CLUSTERDOWN_MSG, atoi(key + 12));
    if (strcmp(key, "die") == 0)
        return -1;
    if (strcmp(key, "moveme") == 0)
        return write_redirect(c, "MOVED", g_moveme_slot, W.b.port);
    if (strcmp(key, "{moveme}ask") == 0)
        return write_redirect(c, "ASK", g_moveme_slot, W.b.port);
    return fn_writes(c, "$-1\r\n");
}

static int script_b(struct fn_conn *c, const char *key, size_t len)
{
    (void)len;
    if (strcmp(key, "moveme") == 0)
        return fn_write_bulk(c, "fromB");
    if (strcmp(key, "{moveme}ask") == 0) {
        if (c->prev_asking)
            return fn_write_bulk(c, "fromB");
        return write_redirect(c, "MOVED", g_moveme_slot, W.a.port);
    }
    return fn_writes(c, "$-1\r\n");
}

/* ---------- the proxy ---------- */

/* Fake node A owning every slot, and a proxy in front of it. */
static void world_single(const char *name, const char *const *args)
{
    fn_start(&W.a, 'A', script_a, 0);
    fn_own_all_slots(&W.a);
    fn_proxy_start(&W.proxy, name, W.a.port, args);
}

static void teardown(void)
{
    h_proxy_stop(&W.proxy);
    fn_stop(&W.a);
    fn_stop(&W.b);
    fn_stop(&W.trap);
    free(g_huge);
    free(g_big);
    g_huge = g_big = NULL;
}

static redisContext *client(void)
{
    return h_connect_node(&W.proxy.addr);
}

static int raw_client(void)
{
    return h_raw_connect(&W.proxy.addr);
}

/* GET key as RESP. */
static void send_get(int fd, const char *key)
{
    char req[256];
    H_FMT(req, sizeof(req), "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", strlen(key), key);
    h_raw_sends(fd, req);
}

/* Exactly n bytes into buf within timeout_ms in all; the count read. */
static size_t read_exact(int fd, char *buf, size_t n, int timeout_ms)
{
    long long deadline = h_now_ms() + timeout_ms;
    size_t got = 0;

    while (got < n) {
        long long left = deadline - h_now_ms();
        struct pollfd pfd = { fd, POLLIN, 0 };
        ssize_t r;

        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
            break;
        r = recv(fd, buf + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

/* No byte arrives within ms. */
static void expect_silence(int fd, int ms)
{
    char extra[64];
    size_t n = h_raw_recv(fd, extra, sizeof(extra), NULL, ms, NULL);
    ck_assert_msg(n == 0, "%zu unexpected bytes after the reply: '%.40s'", n, extra);
}

/* Reads want's length from fd and fails the test at the first difference. */
static void expect_bytes(int fd, const char *want, size_t len, int timeout_ms, const char *what)
{
    char *got = malloc(len + 1);
    size_t n, i;

    ck_assert_ptr_nonnull(got);
    n = read_exact(fd, got, len, timeout_ms);
    for (i = 0; i < n && got[i] == want[i]; i++)
        ;
    if (i < len) {
        size_t from = i > 20 ? i - 20 : 0;
        ck_abort_msg("%s: %zu of %zu bytes read; first difference at byte %zu: got '%.40s', want '%.40s'",
                     what, n, len, i, i < n ? got + from : "(nothing)", want + from);
    }
    free(got);
}

/* Waits up to ms for cond(f) >= want; the last value seen. */
static int wait_for(int (*cond)(struct fake_node *), struct fake_node *f, int want, int ms)
{
    long long deadline = h_now_ms() + ms;
    int v;
    while ((v = cond(f)) < want && h_now_ms() < deadline)
        h_sleep_ms(10);
    return v;
}

#define EXPECT_MAY_HAVE_RUN(r) do { \
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR); \
    ck_assert_msg(strstr((r)->str, "may have run") != NULL, \
                  "error does not say the command may have run: %s", h_show(r)); \
} while (0)

/* GET ok through a new client answers "ok". */
static void expect_get_ok(void)
{
    redisContext *c = client();
    redisReply *r = h_cmd(c, "GET ok");
    H_EXPECT_BULK(r, "ok");
    freeReplyObject(r);
    redisFree(c);
}

/* ---------- the fake node itself ---------- */

/* The scaffolding answers as documented, so the tests below can fail. */
START_TEST(test_fake_node_answers)
{
    redisContext *c;
    redisReply *r;

    world_single("fake", NULL);
    c = h_connect("127.0.0.1", W.a.port);
    r = h_cmd(c, "CLUSTER SLOTS");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 1);
    ck_assert_uint_eq(r->element[0]->elements, 3);
    H_EXPECT_INT(r->element[0]->element[0], 0);
    H_EXPECT_INT(r->element[0]->element[1], 16383);
    ck_assert_uint_eq(r->element[0]->element[2]->elements, 4);
    H_EXPECT_BULK(r->element[0]->element[2]->element[0], "127.0.0.1");
    H_EXPECT_INT(r->element[0]->element[2]->element[1], W.a.port);
    ck_assert_uint_eq(r->element[0]->element[2]->element[2]->len, 40);
    freeReplyObject(r);
    H_OK(c, "ASKING");
    r = h_cmd(c, "GET ok");
    H_EXPECT_BULK(r, "ok");
    freeReplyObject(r);
    r = h_cmd(c, "GET tryagain:1");
    H_EXPECT_ERR(r, "TRYAGAIN ");
    freeReplyObject(r);
    r = h_cmd(c, "GET tryagain:1");
    H_EXPECT_BULK(r, "done");
    freeReplyObject(r);
    redisFree(c);
    ck_assert_int_eq(fn_count(&W.a, "GET tryagain:1"), 2);
    /* the proxy's own connection plus this one */
    ck_assert_int_ge(fn_accepted(&W.a), 2);
    expect_get_ok();
}
END_TEST

/* ---------- 1. forged redirects ---------- */

/* A redirect to an address the cluster never announced is not followed:
 * the client gets an error, the trap never sees a connection. */
static void forged(const char *key)
{
    static const char *const args[] = { "--retry-attempts", "2", "--retry-base-ms", "5", NULL };
    redisContext *c;
    redisReply *r;
    char cmd[64];
    int n;

    fn_start(&W.trap, 'T', NULL, 1);
    world_single(key, args);
    c = client();
    r = h_cmd(c, "GET %s", key);
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    h_sleep_ms(300);           /* a late refresh or resend would connect now */
    ck_assert_msg(fn_accepted(&W.trap) == 0, "the proxy connected to the forged address %d time(s)",
                  fn_accepted(&W.trap));
    snprintf(cmd, sizeof(cmd), "GET %s", key);
    n = fn_count(&W.a, cmd);
    ck_assert_msg(n >= 1 && n <= 3, "'%s' reached the node %d times; want 1 to 3 (2 retries)", cmd, n);
    r = h_cmd(c, "GET ok");
    H_EXPECT_BULK(r, "ok");
    freeReplyObject(r);
    redisFree(c);

    /* the trap counts what reaches it */
    close(h_raw_connect(&(struct h_node){ "127.0.0.1", W.trap.port }));
    ck_assert_int_eq(wait_for(fn_accepted, &W.trap, 1, 2000), 1);
}

START_TEST(test_forged_moved_not_followed)
{
    forged("forged-moved");
}
END_TEST

START_TEST(test_forged_ask_not_followed)
{
    forged("forged-ask");
}
END_TEST

/* ---------- 2. deep nesting ---------- */

START_TEST(test_deep_nesting_forwarded)
{
    static const int depths[] = { 8, 100, 1000 };
    int fd;

    world_single("deep", NULL);
    fd = raw_client();
    for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
        char key[32], what[64];
        size_t len;
        char *want;

        snprintf(key, sizeof(key), "deep:%d", depths[i]);
        snprintf(what, sizeof(what), "GET %s", key);
        send_get(fd, key);
        h_raw_sends(fd, "PING\r\n");
        want = deep_reply(depths[i], &len);
        expect_bytes(fd, want, len, 5000, what);
        expect_bytes(fd, "+PONG\r\n", 7, 5000, "PING after it");
        free(want);
    }
    expect_silence(fd, 100);
    close(fd);
}
END_TEST

/* ---------- 3. huge array ---------- */

START_TEST(test_huge_array_then_ping)
{
    int fd;
    long long t0;

    huge_build();
    world_single("huge", NULL);
    fd = raw_client();
    t0 = h_now_ms();
    h_raw_sends(fd, "*2\r\n$3\r\nGET\r\n$4\r\nhuge\r\n*1\r\n$4\r\nPING\r\n");
    expect_bytes(fd, g_huge, g_huge_len, 20000, "GET huge");
    expect_bytes(fd, "+PONG\r\n", 7, 5000, "PING pipelined after GET huge");
    expect_silence(fd, 100);
    fprintf(stderr, "huge: %zu bytes, %d elements in %lld ms\n", g_huge_len, HUGE_N, h_now_ms() - t0);
    close(fd);
    ck_assert_int_eq(fn_count(&W.a, "GET huge"), 1);
}
END_TEST

/* ---------- 4. big bulk ---------- */

START_TEST(test_big_bulk_forwarded)
{
    int fd;

    big_build();
    world_single("big", NULL);
    fd = raw_client();
    h_raw_sends(fd, "*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n*1\r\n$4\r\nPING\r\n");
    expect_bytes(fd, g_big, g_big_len, 20000, "GET big");
    expect_bytes(fd, "+PONG\r\n", 7, 5000, "PING pipelined after GET big");
    expect_silence(fd, 100);
    close(fd);
}
END_TEST

/* ---------- 5. malformed reply ---------- */

START_TEST(test_malformed_reply)
{
    redisContext *c;
    redisReply *r;

    world_single("bad", NULL);
    c = client();
    r = h_cmd(c, "GET bad");
    H_EXPECT_ERR(r, "ERR ");
    EXPECT_MAY_HAVE_RUN(r);
    freeReplyObject(r);
    ck_assert_msg(wait_for(fn_peer_closed, &W.a, 1, 2000) >= 1,
                  "the proxy kept the connection that sent garbage");
    ck_assert_int_eq(fn_count(&W.a, "GET bad"), 1);
    expect_get_ok();           /* reconnected */
    r = h_cmd(c, "GET ok");    /* and the first client still works */
    H_EXPECT_BULK(r, "ok");
    freeReplyObject(r);
    redisFree(c);
}
END_TEST

/* ---------- 6. node timeout ---------- */

/*
 * GET slow gets no reply. A second client's GET ok is queued behind it on
 * the same node connection (one worker). After node-timeout-ms the first
 * client gets an error; the second gets an error or "ok", never the late
 * "stale:slow" the node would send if the connection lived; and later GETs
 * get their own replies.
 */
START_TEST(test_node_timeout)
{
    static const char *const args[] = { "--node-timeout-ms", "300", NULL };
    redisContext *a, *b;
    redisReply *r;
    long long t0, took;

    world_single("slow", args);
    a = client();
    b = client();
    redisAppendCommand(a, "GET slow");
    h_flush(a);
    t0 = h_now_ms();
    while (fn_count(&W.a, "GET slow") < 1) {    /* on the node: GET ok goes behind it */
        ck_assert_msg(h_now_ms() - t0 < 5000, "the node never received GET slow");
        h_sleep_ms(5);
    }
    redisAppendCommand(b, "GET ok");
    h_flush(b);

    r = h_get_reply(a);
    took = h_now_ms() - t0;
    EXPECT_MAY_HAVE_RUN(r);
    freeReplyObject(r);
    ck_assert_msg(took >= 250 && took <= 2000, "timeout error after %lld ms (node-timeout-ms 300)", took);

    r = h_get_reply(b);
    ck_assert_msg(r->type == REDIS_REPLY_ERROR ||
                  (r->type == REDIS_REPLY_STRING && strcmp(r->str, "ok") == 0),
                  "GET ok queued behind the timed-out GET got %s", h_show(r));
    freeReplyObject(r);
    ck_assert_msg(wait_for(fn_peer_closed, &W.a, 1, 1000) >= 1,
                  "the proxy did not close the connection that timed out");

    while (h_now_ms() < t0 + SLOW_MS + 200)    /* past the late reply */
        h_sleep_ms(20);
    expect_get_ok();
    r = h_cmd(a, "GET ok");
    H_EXPECT_BULK(r, "ok");
    freeReplyObject(r);
    r = h_cmd(b, "GET ok");
    H_EXPECT_BULK(r, "ok");
    freeReplyObject(r);
    ck_assert_int_eq(fn_count(&W.a, "GET slow"), 1);
    redisFree(a);
    redisFree(b);
}
END_TEST

/* ---------- 7. TRYAGAIN and CLUSTERDOWN ---------- */

static const char *const retry5[] = {
    "--retry-attempts", "5", "--retry-base-ms", "5", "--retry-max-ms", "20", NULL
};

START_TEST(test_retry_then_success)
{
    static const char *const keys[] = { "tryagain:3", "clusterdown:3" };
    redisContext *c;

    world_single("retry", retry5);
    c = client();
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        char cmd[64];
        redisReply *r = h_cmd(c, "GET %s", keys[i]);
        ck_assert_msg(r->type == REDIS_REPLY_STRING && strcmp(r->str, "done") == 0,
                      "GET %s: %s, want bulk 'done'", keys[i], h_show(r));
        freeReplyObject(r);
        snprintf(cmd, sizeof(cmd), "GET %s", keys[i]);
        ck_assert_int_eq(fn_count(&W.a, cmd), 4);
    }
    redisFree(c);
}
END_TEST

/* More failures than retry-attempts: the node's last error, after
 * 1 + retry-attempts tries. */
/* How many times cmd was logged before the last later_cmd. */
static int count_before_last(struct fake_node *f, const char *cmd, const char *later_cmd)
{
    int last = -1, n = 0;
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < f->nlog; i++)
        if (strcmp(f->log[i].cmd, later_cmd) == 0)
            last = i;
    for (int i = 0; i < last; i++)
        if (strcmp(f->log[i].cmd, cmd) == 0)
            n++;
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* Polls (5 s at most) until the proxy's INFO counts a retry: a request
 * holds for its backoff. */
static void expect_retry_held(void)
{
    redisContext *c = client();
    long long deadline = h_now_ms() + 5000;
    for (;;) {
        redisReply *r = h_cmd(c, "INFO proxy");
        H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
        const char *at = strstr(r->str, "\nretries:");
        ck_assert_msg(at != NULL, "INFO proxy has no retries: %s", h_esc(r->str, r->len));
        long long retries = atoll(at + 9);
        freeReplyObject(r);
        if (retries >= 1)
            break;
        ck_assert_msg(h_now_ms() < deadline, "no retry held 5 s after the refusal");
        h_sleep_ms(5);
    }
    redisFree(c);
}

/*
 * Regression: a command sent while an earlier one of the same client waited
 * out a CLUSTERDOWN backoff went out at once, and ran before the earlier
 * one's retry (SET k then GET k ran as GET k then SET k). It must wait
 * behind the retry: the node sees the retry, then the later command.
 */
START_TEST(test_retry_keeps_client_order)
{
    static const char *const slow_retry[] = { "--retry-base-ms", "400", NULL };
    redisContext *c;
    redisReply *r;

    world_single("order", slow_retry);
    c = client();
    redisAppendCommand(c, "GET clusterdown:1");
    h_flush(c);
    /* the refusal is back and the proxy waits 400 ms before the retry */
    for (long long end = h_now_ms() + 2000; fn_count(&W.a, "GET clusterdown:1") < 1 &&
                                            h_now_ms() < end;)
        h_sleep_ms(5);
    expect_retry_held();
    ck_assert_int_eq(fn_count(&W.a, "GET clusterdown:1"), 1);
    redisAppendCommand(c, "GET ok");
    ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
    H_EXPECT_BULK(r, "done");
    freeReplyObject(r);
    ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
    H_EXPECT_BULK(r, "ok");
    freeReplyObject(r);
    ck_assert_int_eq(fn_count(&W.a, "GET clusterdown:1"), 2);
    ck_assert_msg(count_before_last(&W.a, "GET clusterdown:1", "GET ok") == 2,
                  "the later GET reached the node before the earlier one's retry");
    redisFree(c);
}
END_TEST

START_TEST(test_retries_exhausted)
{
    static const struct {
        const char *key, *err;
    } cases[] = {
        { "tryagain:9", TRYAGAIN_MSG },
        { "clusterdown:9", CLUSTERDOWN_MSG },
    };
    redisContext *c;

    world_single("exhausted", retry5);
    c = client();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char cmd[64];
        redisReply *r = h_cmd(c, "GET %s", cases[i].key);
        H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
        ck_assert_msg(strcmp(r->str, cases[i].err) == 0, "GET %s: %s, want error '%s'",
                      cases[i].key, h_show(r), cases[i].err);
        freeReplyObject(r);
        snprintf(cmd, sizeof(cmd), "GET %s", cases[i].key);
        ck_assert_int_eq(fn_count(&W.a, cmd), 6);
    }
    redisFree(c);
}
END_TEST

/* ---------- 8. redirects to a known node ---------- */

/* A and B share the slots; A owns the half holding "moveme"'s slot. */
static void world_pair(const char *name)
{
    int ranges[2][3], a_first;

    g_moveme_slot = h_slot("moveme");
    ck_assert_int_eq(h_slot("{moveme}ask"), g_moveme_slot);
    fn_start(&W.a, 'A', script_a, 0);
    fn_start(&W.b, 'B', script_b, 0);
    a_first = g_moveme_slot < H_SLOTS / 2;
    ranges[0][0] = 0;
    ranges[0][1] = H_SLOTS / 2 - 1;
    ranges[0][2] = a_first ? W.a.port : W.b.port;
    ranges[1][0] = H_SLOTS / 2;
    ranges[1][1] = H_SLOTS - 1;
    ranges[1][2] = a_first ? W.b.port : W.a.port;
    fn_set_slots(&W.a, 2, (const int (*)[3])ranges);
    fn_set_slots(&W.b, 2, (const int (*)[3])ranges);
    fn_proxy_start(&W.proxy, name, W.a.port, NULL);
}

START_TEST(test_moved_to_known_node)
{
    redisContext *c;
    redisReply *r;

    world_pair("moved");
    c = client();
    r = h_cmd(c, "GET moveme");
    H_EXPECT_BULK(r, "fromB");
    freeReplyObject(r);
    redisFree(c);
    ck_assert_int_ge(fn_count(&W.a, "GET moveme"), 1);
    ck_assert_int_eq(fn_count(&W.b, "GET moveme"), 1);
}
END_TEST

START_TEST(test_ask_to_known_node)
{
    redisContext *c;
    redisReply *r;
    char before[FN_LOG_CMD];

    world_pair("ask");
    c = client();
    r = h_cmd(c, "GET {moveme}ask");
    if (r->type != REDIS_REPLY_STRING) {
        fn_dump_log(&W.a);
        fn_dump_log(&W.b);
    }
    H_EXPECT_BULK(r, "fromB");
    freeReplyObject(r);
    fn_before_last(&W.b, "GET {moveme}ask", before, sizeof(before));
    ck_assert_msg(strcmp(before, "ASKING") == 0,
                  "on B's connection, GET {moveme}ask came after '%s', not ASKING", before);
    ck_assert_int_eq(fn_count(&W.a, "GET {moveme}ask"), 1);
    ck_assert_int_eq(fn_count(&W.b, "GET {moveme}ask"), 1);
    /* ASK is for one command: the slot still belongs to A */
    r = h_cmd(c, "GET {moveme}ask");
    H_EXPECT_BULK(r, "fromB");
    freeReplyObject(r);
    ck_assert_int_eq(fn_count(&W.a, "GET {moveme}ask"), 2);
    redisFree(c);
}
END_TEST

/* ---------- 9. connection lost after the write ---------- */

START_TEST(test_lost_after_write_not_resent)
{
    static const char *const args[] = { "--retry-attempts", "3", "--retry-base-ms", "5", NULL };
    redisContext *c;
    redisReply *r;

    world_single("die", args);
    c = client();
    r = h_cmd(c, "GET die");
    EXPECT_MAY_HAVE_RUN(r);
    freeReplyObject(r);
    h_sleep_ms(300);           /* a resend would arrive now */
    ck_assert_int_eq(fn_count(&W.a, "GET die"), 1);
    r = h_cmd(c, "GET ok");
    H_EXPECT_BULK(r, "ok");
    freeReplyObject(r);
    redisFree(c);
}
END_TEST

/* ---------- running ---------- */

static Suite *fakenode_suite(void)
{
    Suite *s = suite_create("fakenode");
    TCase *tc = tcase_create("fakenode");

    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_fake_node_answers);
    tcase_add_test(tc, test_forged_moved_not_followed);
    tcase_add_test(tc, test_forged_ask_not_followed);
    tcase_add_test(tc, test_deep_nesting_forwarded);
    tcase_add_test(tc, test_huge_array_then_ping);
    tcase_add_test(tc, test_big_bulk_forwarded);
    tcase_add_test(tc, test_malformed_reply);
    tcase_add_test(tc, test_node_timeout);
    tcase_add_test(tc, test_retry_then_success);
    tcase_add_test(tc, test_retries_exhausted);
    tcase_add_test(tc, test_retry_keeps_client_order);
    tcase_add_test(tc, test_moved_to_known_node);
    tcase_add_test(tc, test_ask_to_known_node);
    tcase_add_test(tc, test_lost_after_write_not_resent);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return fn_main(fakenode_suite, "fakenode-", "fakenode");
}
