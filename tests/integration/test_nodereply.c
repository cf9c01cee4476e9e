/*
 * A node's reply is bounded (fake nodes, fakenode.h): a bulk longer than
 * proto-max-bulk-len, or a reply larger than its client's output hard limit,
 * is not buffered whole. The proxy resets the node connection, the client
 * gets an error that says why, other nodes serve meanwhile, and the proxy
 * connects to the node again for the next command.
 *
 * Two fake nodes, A and B, share the slots. A answers GET by key:
 *
 *   ok          bulk "ok"
 *   stream      "$600000000\r\n", then bytes until the proxy closes the
 *               connection (STREAM_MAX at most, then it waits)
 *   bulk2mb     a whole 2 MB bulk
 *   array5mb    an array of small bulks, 5 MB in all
 *   run         bulk "ran"
 *   die         the connection closed without a reply
 *
 * With refuse_filter, A refuses every AUTH once g_refuse is set, as a node
 * whose default user has no password runs what follows a wrong AUTH for a
 * named user: it answers GET noauth with -NOAUTH, the rest as above.
 *
 * B answers every GET with bulk "fromB".
 */
#include "harness.h"
#include "fakenode.h"

#define STREAM_MAX   (64L * 1024 * 1024)
#define BULK2MB      (2L * 1024 * 1024)
#define ARRAY_N      500000         /* "$5\r\nxxxxx\r\n": 11 bytes each */

static struct {
    struct fake_node a, b;
    struct h_proxy proxy;
} W;

/* Bytes written to the node: a test that sends `len` and nothing more. */
static int write_filler(struct fn_conn *c, long len)
{
    static char chunk[65536];
    memset(chunk, 'x', sizeof(chunk));
    for (long sent = 0; sent < len; ) {
        long n = len - sent < (long)sizeof(chunk) ? len - sent : (long)sizeof(chunk);
        if (fn_write(c, chunk, (size_t)n) < 0)
            return -1;
        sent += n;
    }
    return 0;
}

/* key is "{tag}name" */
static int has_name(const char *key, const char *name)
{
    const char *end = strchr(key, '}');
    return end != NULL && strcmp(end + 1, name) == 0;
}

static int script_a(struct fn_conn *c, const char *key, size_t len)
{
    char head[64];
    (void)len;
    if (has_name(key, "run"))
        return fn_write_bulk(c, "ran");
    if (has_name(key, "die"))
        return -1;
    if (has_name(key, "ok"))
        return fn_write_bulk(c, "ok");
    if (has_name(key, "stream")) {
        if (fn_writes(c, "$600000000\r\n") < 0 || write_filler(c, STREAM_MAX) < 0)
            return -1;
        fn_wait_peer_close(c, 20000);
        return -1;
    }
    if (has_name(key, "bulk2mb")) {
        snprintf(head, sizeof(head), "$%ld\r\n", BULK2MB);
        if (fn_writes(c, head) < 0 || write_filler(c, BULK2MB) < 0)
            return -1;
        return fn_writes(c, "\r\n");
    }
    if (has_name(key, "array5mb")) {
        static char elems[64 * 11 + 1];
        if (elems[0] == '\0')
            for (int i = 0; i < 64; i++)
                memcpy(elems + i * 11, "$5\r\nxxxxx\r\n", 11);
        snprintf(head, sizeof(head), "*%d\r\n", ARRAY_N);
        if (fn_writes(c, head) < 0)
            return -1;
        for (int i = 0; i < ARRAY_N; i += 64) {
            int n = ARRAY_N - i < 64 ? ARRAY_N - i : 64;
            if (fn_write(c, elems, (size_t)n * 11) < 0)
                return -1;
        }
        return 0;
    }
    return fn_writes(c, "$-1\r\n");
}

static int script_b(struct fn_conn *c, const char *key, size_t len)
{
    (void)key;
    (void)len;
    return fn_write_bulk(c, "fromB");
}

static int g_refuse;

/* On a refused AUTH, the answer waits until the GET noauth the test sends
 * behind it has arrived too: both were written before the proxy read the
 * refusal. */
static int refuse_filter(struct fn_conn *c, int *rc)
{
    if (strcasecmp(c->argv[0], "AUTH") == 0) {
        if (!__atomic_load_n(&g_refuse, __ATOMIC_SEQ_CST)) {
            *rc = fn_writes(c, "+OK\r\n");
            return 1;
        }
        c->filter_state = 1;
        while (memmem(c->buf + c->start, c->end - c->start, "noauth", 6) == NULL)
            if (fn_fill(c) < 0) {
                *rc = -1;
                return 1;
            }
        *rc = fn_writes(c, "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
        return 1;
    }
    if (c->filter_state && c->argc == 2 && strcasecmp(c->argv[0], "GET") == 0 &&
        has_name(c->argv[1], "noauth")) {
        *rc = fn_writes(c, "-NOAUTH Authentication required.\r\n");
        return 1;
    }
    return 0;
}

/* A and B each own half the slots; the proxy in front, with args. */
static void world_filtered(const char *name, const char *const *args, fn_filter *filter)
{
    int ranges[2][3];
    fn_start(&W.a, 'A', script_a, 0);
    W.a.filter = filter;
    fn_start(&W.b, 'B', script_b, 0);
    ranges[0][0] = 0;
    ranges[0][1] = H_SLOTS / 2 - 1;
    ranges[0][2] = W.a.port;
    ranges[1][0] = H_SLOTS / 2;
    ranges[1][1] = H_SLOTS - 1;
    ranges[1][2] = W.b.port;
    fn_set_slots(&W.a, 2, (const int (*)[3])ranges);
    fn_set_slots(&W.b, 2, (const int (*)[3])ranges);
    fn_proxy_start(&W.proxy, name, W.a.port, args);
}

static void world(const char *name, const char *const *args)
{
    world_filtered(name, args, NULL);
}

static void teardown(void)
{
    __atomic_store_n(&g_refuse, 0, __ATOMIC_SEQ_CST);
    h_proxy_stop(&W.proxy);
    fn_stop(&W.a);
    fn_stop(&W.b);
}

/* A key whose slot A (0: the lower half) or B (1) owns, with the given prefix. */
static const char *key_on(int node, const char *prefix)
{
    static char key[2][64];
    for (int i = 0; ; i++) {
        snprintf(key[node], sizeof(key[node]), "{%s%d}", prefix, i);
        if ((h_slot(key[node]) >= H_SLOTS / 2) == node)
            return key[node];
    }
}

static long proxy_rss_kb(void)
{
    char path[64], line[256];
    long kb = -1;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)W.proxy.pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

static int wait_for(int (*cond)(struct fake_node *), struct fake_node *f, int want, int ms)
{
    long long deadline = h_now_ms() + ms;
    int v;
    while ((v = cond(f)) < want && h_now_ms() < deadline)
        h_sleep_ms(10);
    return v;
}

/* GET name on A: the key is name behind a hash tag of A's half. */
static redisReply *get_on_a(redisContext *c, const char *name)
{
    return h_cmd(c, "GET %s%s", key_on(0, "a"), name);
}

static void append_get_on_a(redisContext *c, const char *name)
{
    ck_assert_int_eq(redisAppendCommand(c, "GET %s%s", key_on(0, "a"), name), REDIS_OK);
    h_flush(c);
}

/* The error of a reset node connection, naming the bound. */
static void expect_reset(redisReply *r, const char *bound)
{
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    ck_assert_msg(strstr(r->str, bound) != NULL && strstr(r->str, "reset its connection") != NULL,
                  "error does not say the reply passed %s: %s", bound, h_show(r));
}

/* A, then B still answer, and A's connection is made again. */
static void expect_serving(redisContext *c, int accepted_before)
{
    redisReply *r = h_cmd(c, "GET %s", key_on(1, "b"));
    H_EXPECT_BULK(r, "fromB");
    freeReplyObject(r);
    r = get_on_a(c, "ok");
    H_EXPECT_BULK(r, "ok");
    freeReplyObject(r);
    ck_assert_int_gt(fn_accepted(&W.a), accepted_before);
}

/* A bulk header past proto-max-bulk-len (512mb by default) resets the
 * connection as soon as it is read: the bytes that stream after it are not
 * buffered. */
START_TEST(test_bulk_header_too_long)
{
    redisContext *a, *b;
    redisReply *r;
    long rss0, rss1;
    int accepted;

    world("stream", NULL);
    a = h_connect_node(&W.proxy.addr);
    b = h_connect_node(&W.proxy.addr);
    expect_serving(b, 0);
    accepted = fn_accepted(&W.a);
    rss0 = proxy_rss_kb();
    append_get_on_a(a, "stream");
    r = h_cmd(b, "GET %s", key_on(1, "b"));     /* B serves meanwhile */
    H_EXPECT_BULK(r, "fromB");
    freeReplyObject(r);
    r = h_get_reply(a);
    expect_reset(r, "proto-max-bulk-len (512mb)");
    freeReplyObject(r);
    rss1 = proxy_rss_kb();
    ck_assert_msg(rss0 > 0 && rss1 - rss0 < 32 * 1024,
                  "the proxy's VmRSS grew from %ld KB to %ld KB", rss0, rss1);
    ck_assert_msg(wait_for(fn_peer_closed, &W.a, 1, 5000) >= 1,
                  "the proxy kept the connection");
    expect_serving(a, accepted);
    redisFree(a);
    redisFree(b);
}
END_TEST

/* A whole bulk over a smaller proto-max-bulk-len is refused too. */
START_TEST(test_bulk_over_small_max)
{
    static const char *const args[] = { "--proto-max-bulk-len", "1mb", NULL };
    redisContext *a;
    redisReply *r;
    int accepted;

    world("bulk2mb", args);
    a = h_connect_node(&W.proxy.addr);
    expect_serving(a, 0);
    accepted = fn_accepted(&W.a);
    r = get_on_a(a, "bulk2mb");
    expect_reset(r, "proto-max-bulk-len (1mb)");
    freeReplyObject(r);
    expect_serving(a, accepted);
    redisFree(a);
}
END_TEST

/* A reply that grows past the client's output hard limit: reset, not
 * buffered; another client's command to B is answered meanwhile. */
START_TEST(test_reply_over_output_limit)
{
    static const char *const args[] = { "--client-output-buffer-limit", "1mb", "0", "0", NULL };
    redisContext *a, *b;
    redisReply *r;
    int accepted;

    world("array5mb", args);
    a = h_connect_node(&W.proxy.addr);
    b = h_connect_node(&W.proxy.addr);
    expect_serving(a, 0);
    accepted = fn_accepted(&W.a);
    append_get_on_a(a, "array5mb");
    r = h_cmd(b, "GET %s", key_on(1, "b"));
    H_EXPECT_BULK(r, "fromB");
    freeReplyObject(r);
    r = h_get_reply(a);
    expect_reset(r, "output buffer hard limit (1mb)");
    freeReplyObject(r);
    ck_assert_msg(wait_for(fn_peer_closed, &W.a, 1, 5000) >= 1,
                  "the proxy kept the connection");
    expect_serving(a, accepted);
    expect_serving(b, accepted);
    redisFree(a);
    redisFree(b);
}
END_TEST

/*
 * A refused AUTH does not prove that what was written behind it did not
 * run: GET run, answered normally, is answered once to its client and not
 * sent again; GET noauth, answered NOAUTH, did not run: it is retried, then
 * answered with the refusal, not with "may have run".
 */
START_TEST(test_refused_login_replies_read)
{
    static const char *const args[] = { "--cluster-password", "secret", "--topology-refresh-ms", "0",
                                        "--retry-attempts", "2", "--retry-base-ms", "5", NULL };
    char run_cmd[128], noauth_cmd[128];
    redisContext *c;
    redisReply *r;

    world_filtered("refused", args, refuse_filter);
    snprintf(run_cmd, sizeof(run_cmd), "GET %srun", key_on(0, "a"));
    snprintf(noauth_cmd, sizeof(noauth_cmd), "GET %snoauth", key_on(0, "a"));
    c = h_connect_node(&W.proxy.addr);
    r = get_on_a(c, "ok");
    H_EXPECT_BULK(r, "ok");
    freeReplyObject(r);
    __atomic_store_n(&g_refuse, 1, __ATOMIC_SEQ_CST);
    r = get_on_a(c, "die");                     /* the next connection logs in again */
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    /* one write: the proxy reads both at once and queues them while it
     * connects, so both go out behind the AUTH. Sent apart, the second may
     * wait for the first batch's replies (node-batch-window), which wait
     * for it (refuse_filter). */
    ck_assert_int_eq(redisAppendCommand(c, "GET %srun", key_on(0, "a")), REDIS_OK);
    ck_assert_int_eq(redisAppendCommand(c, "GET %snoauth", key_on(0, "a")), REDIS_OK);
    h_flush(c);
    r = h_get_reply(c);
    H_EXPECT_BULK(r, "ran");
    freeReplyObject(r);
    r = h_get_reply(c);
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    ck_assert_msg(strstr(r->str, "refused the proxy's login (WRONGPASS)") != NULL &&
                  strstr(r->str, "may have run") == NULL,
                  "GET noauth did not run, yet: %s", h_show(r));
    freeReplyObject(r);
    __atomic_store_n(&g_refuse, 0, __ATOMIC_SEQ_CST);
    r = get_on_a(c, "ok");
    H_EXPECT_BULK(r, "ok");
    freeReplyObject(r);
    ck_assert_int_eq(fn_count(&W.a, run_cmd), 1);
    ck_assert_int_ge(fn_count(&W.a, noauth_cmd), 1);
    ck_assert_int_le(fn_count(&W.a, noauth_cmd), 3);
    redisFree(c);
}
END_TEST

static Suite *nodereply_suite(void)
{
    Suite *s = suite_create("nodereply");
    TCase *tc = tcase_create("nodereply");

    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_bulk_header_too_long);
    tcase_add_test(tc, test_bulk_over_small_max);
    tcase_add_test(tc, test_reply_over_output_limit);
    tcase_add_test(tc, test_refused_login_replies_read);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return fn_main(nodereply_suite, "nodereply-", "nodereply");
}
