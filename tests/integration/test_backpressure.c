/*
 * Backpressure: a node that stops reading must not make the proxy buffer
 * everything its clients keep sending. Past NODE_OUTPUT_HIGH (4 MB) unwritten
 * to a node, the client that sent the command is no longer read until that
 * node catches up or its connection closes (proxy/core/router.c, router_send).
 *
 * Each test starts fake nodes (fakenode.h) and its own proxy
 * (TAGPROXY_TEST_BIN, else ./build/tagproxy, one worker thread) seeded with
 * them; teardown stops both. The fake nodes answer:
 *
 *   GET <tagA>block  nothing for g_block_ms, reading nothing meanwhile and
 *                    answering nothing on any connection (a node busy with
 *                    one command, fakenode.h); then bulk "unblocked", or
 *                    nothing more once the proxy closes the connection
 *   GET <other key>  the key as a bulk
 *   SET k v          +OK; checked (k is "{tag}k<i>", v the 1 MB value of SET
 *                    i: its length, its first bytes, its fn_sum) and counted
 *                    per i
 *
 * A flooding client (a raw non-blocking socket) sends the blocking GET, then
 * 1 MB SETs as fast as the proxy takes them, reading whatever comes back,
 * while the proxy's VmRSS is sampled every 50 ms. Without backpressure the
 * proxy would read and queue them all (hundreds of MB); with it, the client's
 * socket fills and blocks a few MB in.
 *
 *   1. memory stays bounded while the node reads nothing, and every SET is
 *      answered once the node wakes up, in order, and ran exactly once
 *   2. a client of another node is served at once while the flooder waits
 *   3. a node that times out lets its paused client go: the GET it left
 *      unanswered fails as "may have run"; the SETs queued behind it were
 *      never written (the shared connection writes no new batch while one
 *      is unanswered, cluster/node.h), so each is retried on a new
 *      connection and runs once, or, when it has waited node-timeout-ms
 *      already, fails with an error that does not say it may have run and
 *      has not run; the client is read again, the proxy lives on
 */
#include <sys/uio.h>

#include "harness.h"
#include "fakenode.h"

#define VALUE_LEN     (1024 * 1024)
#define VALUE_HEAD    16            /* "%015d:" says which SET a value is */
#define MAX_SETS      300           /* 300 MB at most */
#define FLOOD_MS      2000
#define STUCK_MS      2000          /* the flood also ends after this long blocked */
#define SAMPLE_MS     50
#define RSS_LIMIT_KB  (64L * 1024)
#define OTHER_NODE_MS 1000          /* generous: loaded CI machines */
#define MAX_REPLIES   (MAX_SETS + 8)
#define IN_CAP        65536

/* Everything a test runs; teardown stops whatever is running. */
static struct {
    struct fake_node a, b;
    struct h_proxy proxy;
} W;

/* Set before the fake nodes start; read by their threads. */
static char g_tag_a[16], g_tag_b[16];   /* hash tags of slots in A's, B's half */
static char g_block_key[32];
static long g_block_ms;
static char *g_value;                   /* the current SET's value (sender only) */
static unsigned long long g_rest_sum;   /* fn_sum of every value past its head */

/* Written by the fake nodes' threads, under g_mu. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_seen[MAX_SETS];            /* SET i received this many times */
static int g_bad;                       /* SETs that were not as sent */
static char g_bad_why[256];
static int g_block_done;                /* the blocking GET has stopped sleeping */

/* ---------- the values ---------- */

static void value_head(int i, char *head)
{
    char buf[VALUE_HEAD + 1];
    snprintf(buf, sizeof(buf), "%015d:", i);
    memcpy(head, buf, VALUE_HEAD);
}

/* Pseudo-random bytes (CR and LF among them) after a head left for each SET. */
static void value_build(void)
{
    unsigned x = 2654435761u;

    g_value = malloc(VALUE_LEN);
    ck_assert_ptr_nonnull(g_value);
    for (size_t i = VALUE_HEAD; i < VALUE_LEN; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        g_value[i] = (char)(x >> 7);
    }
    g_rest_sum = fn_sum(g_value + VALUE_HEAD, VALUE_LEN - VALUE_HEAD, VALUE_HEAD);
}

/* ---------- the fake nodes ---------- */

/* i of key "{<tag>}k<i>", or -1. */
static int set_index(const char *key)
{
    const char *k = strstr(key, "}k");
    char *end;
    long i;

    if (k == NULL || k[2] < '0' || k[2] > '9')
        return -1;
    i = strtol(k + 2, &end, 10);
    return *end == '\0' && i < MAX_SETS ? (int)i : -1;
}

/* What is wrong with the SET on c, or NULL. */
static const char *set_check(const struct fn_conn *c, int i)
{
    char head[VALUE_HEAD];

    if (c->argc != 3)
        return "not 3 arguments";
    if (i < 0)
        return "a key never sent";
    if (c->lens[2] != VALUE_LEN)
        return "a value of the wrong length";
    value_head(i, head);
    if (memcmp(c->argv[2], head, VALUE_HEAD) != 0)
        return "the value of another SET";
    if (c->sums[2] != fn_sum(head, VALUE_HEAD, 0) + g_rest_sum)
        return "a value with bytes lost or altered";
    return NULL;
}

static int filter_set(struct fn_conn *c, int *rc)
{
    int i;
    const char *why;

    if (strcasecmp(c->argv[0], "SET") != 0)
        return 0;
    i = c->argc > 1 ? set_index(c->argv[1]) : -1;
    why = set_check(c, i);
    pthread_mutex_lock(&g_mu);
    if (why != NULL) {
        if (g_bad++ == 0)
            snprintf(g_bad_why, sizeof(g_bad_why), "SET %.40s: %s", c->argv[1], why);
    } else {
        g_seen[i]++;
    }
    pthread_mutex_unlock(&g_mu);
    *rc = fn_writes(c, "+OK\r\n");
    return 1;
}

static int script(struct fn_conn *c, const char *key, size_t len)
{
    (void)len;
    if (strcmp(key, g_block_key) == 0) {
        int closed = fn_wait_peer_close(c, g_block_ms);
        pthread_mutex_lock(&g_mu);
        g_block_done = 1;
        pthread_mutex_unlock(&g_mu);
        return closed ? -1 : fn_write_bulk(c, "unblocked");
    }
    return fn_write_bulk(c, key);
}

static int block_done(void)
{
    int d;
    pthread_mutex_lock(&g_mu);
    d = g_block_done;
    pthread_mutex_unlock(&g_mu);
    return d;
}

static void node_start(struct fake_node *f, char name)
{
    fn_start(f, name, script, 0);
    pthread_mutex_lock(&f->mu);     /* seen by every connection thread */
    f->filter = filter_set;
    f->long_args = 1;
    pthread_mutex_unlock(&f->mu);
}

/* ---------- the proxy ---------- */

/* The proxy's resident set in KB, or -1 when it is gone. */
static long proxy_rss_kb(void)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)W.proxy.pid);
    f = fopen(path, "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

static int proxy_alive(void)
{
    int status;
    return W.proxy.pid > 0 && waitpid(W.proxy.pid, &status, WNOHANG) == 0;
}

/* ---------- the worlds ---------- */

/* A tag (no braces) whose slot is in [lo, hi]. */
static void tag_in(int lo, int hi, char *buf, size_t size)
{
    for (long i = 0; i < 100000; i++) {
        int slot;
        H_FMT(buf, size, "t%ld", i);
        slot = h_slot(buf);
        if (slot >= lo && slot <= hi)
            return;
    }
    ck_abort_msg("no tag in slots %d-%d", lo, hi);
}

static void world_common(long block_ms)
{
    tag_in(0, H_SLOTS / 2 - 1, g_tag_a, sizeof(g_tag_a));
    tag_in(H_SLOTS / 2, H_SLOTS - 1, g_tag_b, sizeof(g_tag_b));
    H_FMT(g_block_key, sizeof(g_block_key), "{%s}block", g_tag_a);
    g_block_ms = block_ms;
    value_build();
}

/* Fake node A owning every slot, and a proxy in front of it. */
static void world_single(const char *name, long block_ms, const char *const *args)
{
    world_common(block_ms);
    node_start(&W.a, 'A');
    fn_own_all_slots(&W.a);
    fn_proxy_start(&W.proxy, name, W.a.port, args);
}

/* A owns slots 0-8191, B 8192-16383. */
static void world_pair(const char *name, long block_ms, const char *const *args)
{
    int ranges[2][3] = { { 0, H_SLOTS / 2 - 1, 0 }, { H_SLOTS / 2, H_SLOTS - 1, 0 } };

    world_common(block_ms);
    node_start(&W.a, 'A');
    node_start(&W.b, 'B');
    ranges[0][2] = W.a.port;
    ranges[1][2] = W.b.port;
    fn_set_slots(&W.a, 2, (const int (*)[3])ranges);
    fn_set_slots(&W.b, 2, (const int (*)[3])ranges);
    fn_proxy_start(&W.proxy, name, W.a.port, args);
}

static void teardown(void)
{
    h_proxy_stop(&W.proxy);
    fn_stop(&W.a);
    fn_stop(&W.b);
    free(g_value);
    g_value = NULL;
}

/* ---------- the flooding client ---------- */

/* A reply as the client read it: its first byte and up to 200 more. */
struct reply {
    char type;
    char text[201];
};

struct flood {
    int fd;
    int nsets;                  /* SETs begun (a first byte sent) */
    char head[128];             /* the current SET up to its value */
    size_t head_len;
    size_t off;                 /* bytes of the current SET sent; 0: none begun */
    int blocked;                /* the last write found the socket full */
    long long progress_ms;      /* when bytes last left */
    int nsets_at_first_reply;   /* -1 until a reply came */
    int closed;                 /* the proxy closed the connection */
    long rss_base_kb, rss_peak_kb;
    long long next_sample_ms;
    char in[IN_CAP];            /* read, not yet a whole reply */
    size_t in_len;
    struct reply replies[MAX_REPLIES];
    int nreplies;
};

static void flood_sample(struct flood *fl)
{
    long kb = proxy_rss_kb();

    ck_assert_msg(kb > 0, "the proxy is gone (no /proc/%d/status)", (int)W.proxy.pid);
    if (kb > fl->rss_peak_kb)
        fl->rss_peak_kb = kb;
    fl->next_sample_ms = h_now_ms() + SAMPLE_MS;
}

/* The whole reply at p, len bytes: its length, or 0 when not all there.
 * Status, error, integer: the line; bulk: the content; nil: "(nil)". */
static size_t reply_split(const char *p, size_t len, struct reply *r)
{
    const char *crlf = memmem(p, len, "\r\n", 2);
    size_t line, used, n;
    long blen;

    if (crlf == NULL)
        return 0;
    line = (size_t)(crlf - p);
    r->type = p[0];
    if (p[0] != '$') {
        n = line - 1 < sizeof(r->text) - 1 ? line - 1 : sizeof(r->text) - 1;
        memcpy(r->text, p + 1, n);
        r->text[n] = '\0';
        return line + 2;
    }
    blen = strtol(p + 1, NULL, 10);
    if (blen < 0) {
        snprintf(r->text, sizeof(r->text), "(nil)");
        return line + 2;
    }
    ck_assert_msg(blen < IN_CAP / 2, "a bulk of %ld bytes: no such reply is sent here", blen);
    used = line + 2 + (size_t)blen + 2;
    if (len < used)
        return 0;
    n = (size_t)blen < sizeof(r->text) - 1 ? (size_t)blen : sizeof(r->text) - 1;
    memcpy(r->text, p + line + 2, n);
    r->text[n] = '\0';
    return used;
}

/* Whole replies off the front of fl->in into fl->replies. */
static void flood_split(struct flood *fl)
{
    size_t used = 0, n;
    struct reply r;

    while ((n = reply_split(fl->in + used, fl->in_len - used, &r)) > 0) {
        ck_assert_msg(fl->nreplies < MAX_REPLIES, "more replies than commands: %d", fl->nreplies + 1);
        if (fl->nreplies == 0)
            fl->nsets_at_first_reply = fl->nsets;
        fl->replies[fl->nreplies++] = r;
        used += n;
    }
    memmove(fl->in, fl->in + used, fl->in_len - used);
    fl->in_len -= used;
    ck_assert_msg(fl->in_len < IN_CAP, "%d bytes without a whole reply", IN_CAP);
}

static void flood_read(struct flood *fl)
{
    for (;;) {
        ssize_t n = recv(fl->fd, fl->in + fl->in_len, IN_CAP - fl->in_len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            fl->closed = 1;
            return;
        }
        fl->in_len += (size_t)n;
        flood_split(fl);
    }
}

/* The next SET's head into fl->head, its value's head into g_value. */
static void flood_next(struct flood *fl)
{
    char key[64];

    H_FMT(key, sizeof(key), "{%s}k%d", g_tag_a, fl->nsets);
    fl->head_len = (size_t)snprintf(fl->head, sizeof(fl->head),
                                    "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%d\r\n",
                                    strlen(key), key, VALUE_LEN);
    value_head(fl->nsets, g_value);
}

/* Sends until the socket is full: the current SET's rest, then (if more)
 * new SETs up to MAX_SETS; between two SETs, returns when replies came, so
 * they are read as they come even from a proxy that takes the SETs as fast
 * as they are written (else every SET could go before the first reply is
 * looked at). */
static void flood_write(struct flood *fl, int more)
{
    for (;;) {
        size_t total = fl->head_len + VALUE_LEN + 2, off = fl->off;
        struct iovec iov[3];
        struct msghdr msg;
        int n = 0;
        ssize_t sent;

        if (fl->off == 0) {
            if (!more || fl->nsets == MAX_SETS)
                return;
            flood_next(fl);
            total = fl->head_len + VALUE_LEN + 2;
        }
        if (off < fl->head_len)
            iov[n++] = (struct iovec){ fl->head + off, fl->head_len - off };
        off = off > fl->head_len ? off - fl->head_len : 0;
        if (off < VALUE_LEN)
            iov[n++] = (struct iovec){ g_value + off, VALUE_LEN - off };
        off = off > VALUE_LEN ? off - VALUE_LEN : 0;
        iov[n++] = (struct iovec){ (char *)"\r\n" + off, 2 - off };
        memset(&msg, 0, sizeof(msg));
        msg.msg_iov = iov;
        msg.msg_iovlen = (size_t)n;
        sent = sendmsg(fl->fd, &msg, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR)
            continue;
        if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            fl->blocked = 1;
            return;
        }
        ck_assert_msg(sent > 0, "the proxy dropped the flooding client after %d SETs: %s",
                      fl->nsets, strerror(errno));
        if (fl->off == 0)
            fl->nsets++;
        fl->off += (size_t)sent;
        fl->blocked = 0;
        fl->progress_ms = h_now_ms();
        if (fl->off == total) {
            struct pollfd in = { fl->fd, POLLIN, 0 };
            fl->off = 0;
            if (poll(&in, 1, 0) > 0)
                return;     /* replies came: read them before the next SET */
        }
    }
}

/* One round: waits (at most until the next RSS sample) for the socket,
 * reads what came, writes what it can (new SETs only if more), samples. */
static void flood_round(struct flood *fl, int more)
{
    long long wait = fl->next_sample_ms - h_now_ms();
    struct pollfd pfd = { fl->fd, POLLIN, 0 };

    if (more || fl->off > 0)
        pfd.events |= POLLOUT;
    if (fl->closed)
        h_sleep_ms(wait > 0 ? (long)wait : 0);
    else if (poll(&pfd, 1, wait > 0 ? (int)wait : 0) > 0) {
        if (pfd.revents & (POLLIN | POLLHUP | POLLERR))
            flood_read(fl);
        if ((pfd.revents & POLLOUT) && !fl->closed)
            flood_write(fl, more);
    }
    if (h_now_ms() >= fl->next_sample_ms)
        flood_sample(fl);
}

/* Floods for ms, or until MAX_SETS are sent, or the socket stays full for
 * STUCK_MS. */
static void flood_run(struct flood *fl, long ms)
{
    long long end = h_now_ms() + ms;

    while (h_now_ms() < end && !fl->closed) {
        if (fl->nsets == MAX_SETS && fl->off == 0)
            return;
        if (fl->blocked && h_now_ms() - fl->progress_ms >= STUCK_MS)
            return;
        flood_round(fl, 1);
    }
}

/* Floods on until a SET goes out after the first reply came (the proxy read
 * the client again), at most max_ms: a loaded machine can close a timed-out
 * node's connection well after node-timeout-ms. */
static void flood_until_resumed(struct flood *fl, long max_ms)
{
    long long end = h_now_ms() + max_ms;

    while (h_now_ms() < end && !fl->closed && !(fl->nsets == MAX_SETS && fl->off == 0) &&
           !(fl->nsets_at_first_reply >= 0 && fl->nsets > fl->nsets_at_first_reply))
        flood_round(fl, 1);
}

/* Floods until the socket has been full for ms (at most max_ms). */
static void flood_until_held(struct flood *fl, long ms, long max_ms)
{
    long long end = h_now_ms() + max_ms;

    while (h_now_ms() < end && !fl->closed && !(fl->nsets == MAX_SETS && fl->off == 0)) {
        if (fl->blocked && h_now_ms() - fl->progress_ms >= ms)
            return;
        flood_round(fl, 1);
    }
}

/* Finishes the SET begun and reads until want replies came (at most ms). */
static void flood_drain(struct flood *fl, int want, long ms)
{
    long long end = h_now_ms() + ms;

    while (h_now_ms() < end && !fl->closed && (fl->nreplies < want || fl->off > 0))
        flood_round(fl, 0);
}

/* The flooding client: connected, its blocking GET received by node A, the
 * proxy's RSS baseline taken. */
static void flood_begin(struct flood *fl)
{
    char cmd[128];
    long long deadline = h_now_ms() + 5000;

    memset(fl, 0, sizeof(*fl));
    fl->nsets_at_first_reply = -1;
    fl->fd = h_raw_connect(&W.proxy.addr);
    H_FMT(cmd, sizeof(cmd), "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", strlen(g_block_key), g_block_key);
    h_raw_sends(fl->fd, cmd);
    H_FMT(cmd, sizeof(cmd), "GET %s", g_block_key);
    while (fn_count(&W.a, cmd) == 0) {
        ck_assert_msg(h_now_ms() < deadline, "node A never received %s", cmd);
        h_sleep_ms(5);
    }
    ck_assert_msg(fcntl(fl->fd, F_SETFL, fcntl(fl->fd, F_GETFL) | O_NONBLOCK) == 0, "fcntl");
    fl->rss_base_kb = proxy_rss_kb();
    ck_assert_msg(fl->rss_base_kb > 0, "no VmRSS for the proxy (pid %d)", (int)W.proxy.pid);
    fl->rss_peak_kb = fl->rss_base_kb;
    fl->progress_ms = h_now_ms();
    fl->next_sample_ms = h_now_ms() + SAMPLE_MS;
}

/* ---------- what the tests expect ---------- */

static void flood_report(const char *name, const struct flood *fl)
{
    fprintf(stderr, "%s: %d SETs of 1 MB sent; proxy VmRSS %ld KB, peak %ld KB (+%ld KB)\n",
            name, fl->nsets, fl->rss_base_kb, fl->rss_peak_kb, fl->rss_peak_kb - fl->rss_base_kb);
}

static void expect_rss_bounded(const struct flood *fl)
{
    ck_assert_msg(fl->rss_peak_kb - fl->rss_base_kb < RSS_LIMIT_KB,
                  "the proxy's VmRSS grew by %ld KB (from %ld KB), over %ld KB, "
                  "while %d SETs of 1 MB were sent behind a node that stopped reading",
                  fl->rss_peak_kb - fl->rss_base_kb, fl->rss_base_kb, RSS_LIMIT_KB, fl->nsets);
}

/* Every reply came: the blocking GET's, then +OK per SET, in order. */
static void expect_all_ok(const struct flood *fl)
{
    ck_assert_msg(!fl->closed, "the proxy closed the flooding client (%d replies read)", fl->nreplies);
    ck_assert_msg(fl->nreplies == 1 + fl->nsets, "%d replies read, %d owed (1 GET + %d SETs)",
                  fl->nreplies, 1 + fl->nsets, fl->nsets);
    ck_assert_msg(fl->replies[0].type == '$' && strcmp(fl->replies[0].text, "unblocked") == 0,
                  "the GET's reply is '%c%s', not bulk 'unblocked'", fl->replies[0].type,
                  fl->replies[0].text);
    for (int i = 1; i <= fl->nsets; i++)
        ck_assert_msg(fl->replies[i].type == '+' && strcmp(fl->replies[i].text, "OK") == 0,
                      "reply to SET k%d is '%c%s', not +OK", i - 1, fl->replies[i].type,
                      fl->replies[i].text);
}

static int seen(int i)
{
    int n;
    pthread_mutex_lock(&g_mu);
    n = g_seen[i];
    pthread_mutex_unlock(&g_mu);
    return n;
}

static void expect_no_bad_set(void)
{
    pthread_mutex_lock(&g_mu);
    ck_assert_msg(g_bad == 0, "the node received %d SETs not as sent; the first: %s", g_bad, g_bad_why);
    pthread_mutex_unlock(&g_mu);
}

/* The node received SETs 0..n-1 once each, and no other. */
static void expect_each_set_once(int n)
{
    expect_no_bad_set();
    for (int i = 0; i < MAX_SETS; i++)
        ck_assert_msg(seen(i) == (i < n), "the node received SET k%d %d times (%d SETs sent)",
                      i, seen(i), n);
}

static int may_have_run(const struct reply *r)
{
    return r->type == '-' && strstr(r->text, "may have run") != NULL;
}

/* ---------- 1. memory stays bounded ---------- */

static struct flood g_fl;       /* large: not on the stack */

START_TEST(test_memory_bounded_while_node_reads_nothing)
{
    static const char *const args[] = { "--node-timeout-ms", "10000", NULL };
    struct flood *fl = &g_fl;

    world_single("bounded", 3000, args);
    flood_begin(fl);
    flood_run(fl, FLOOD_MS);
    ck_assert_msg(!block_done(), "node A answered before the flood ended: nothing was measured");
    ck_assert_msg(fl->nreplies == 0, "a reply came before the blocking GET's: '%c%s'",
                  fl->replies[0].type, fl->replies[0].text);
    flood_drain(fl, 1 + fl->nsets, 15000);
    flood_report("bounded", fl);
    expect_rss_bounded(fl);
    ck_assert_msg(fl->nsets > 4, "only %d SETs of 1 MB sent: the proxy's 4 MB limit was never tested",
                  fl->nsets);
    expect_all_ok(fl);
    expect_each_set_once(fl->nsets);
}
END_TEST

/* ---------- 2. other nodes are not held up ---------- */

START_TEST(test_other_node_served_while_client_held)
{
    static const char *const args[] = { "--node-timeout-ms", "10000", NULL };
    struct flood *fl = &g_fl;
    redisContext *c2;

    world_pair("other-node", 4000, args);
    flood_begin(fl);
    flood_until_held(fl, 300, FLOOD_MS);
    ck_assert_msg(fl->blocked && h_now_ms() - fl->progress_ms >= 300,
                  "client 1 was never held: its socket still took bytes after %d SETs", fl->nsets);
    c2 = h_connect_node(&W.proxy.addr);
    for (int j = 0; j < 10; j++) {
        char key[64];
        long long t0 = h_now_ms(), ms;
        redisReply *r;

        H_FMT(key, sizeof(key), "{%s}b%d", g_tag_b, j);
        r = h_cmd(c2, "GET %s", key);
        ms = h_now_ms() - t0;
        H_EXPECT_BULK(r, key);
        freeReplyObject(r);
        ck_assert_msg(ms < OTHER_NODE_MS, "GET %s on node B took %lld ms while client 1 was held",
                      key, ms);
        ck_assert_msg(!block_done() && fl->nreplies == 0 && fl->blocked,
                      "client 1 was no longer held when GET %d on B was answered", j);
        flood_run(fl, 100);
    }
    redisFree(c2);
    flood_drain(fl, 1 + fl->nsets, 15000);
    flood_report("other-node", fl);
    expect_all_ok(fl);
    expect_each_set_once(fl->nsets);
}
END_TEST

/* ---------- 3. resumed when the node's connection closes ---------- */

/* The flooder's replies after a timeout: the GET and every SET written
 * before it "may have run"; the rest +OK, or an error for a SET that had
 * waited node-timeout-ms when the connection closed and did not run.
 * Returns how many SETs failed as may-have-run. */
static int expect_timeout_replies(const struct flood *fl)
{
    int failed = 0;

    ck_assert_msg(!fl->closed, "the proxy closed the flooding client (%d replies read)", fl->nreplies);
    ck_assert_msg(fl->nreplies == 1 + fl->nsets, "%d replies read, %d owed (1 GET + %d SETs)",
                  fl->nreplies, 1 + fl->nsets, fl->nsets);
    ck_assert_msg(may_have_run(&fl->replies[0]),
                  "the timed-out GET's reply is '%c%s', not an error saying it may have run",
                  fl->replies[0].type, fl->replies[0].text);
    for (int i = 0; i < fl->nsets; i++) {
        const struct reply *r = &fl->replies[1 + i];
        if (may_have_run(r)) {
            failed++;
            ck_assert_msg(seen(i) <= 1, "SET k%d failed as may-have-run but ran %d times", i, seen(i));
            continue;
        }
        if (r->type == '-') {
            ck_assert_msg(seen(i) == 0, "SET k%d failed ('%s') but ran %d times", i, r->text, seen(i));
            continue;
        }
        ck_assert_msg(r->type == '+' && strcmp(r->text, "OK") == 0,
                      "reply to SET k%d is '%c%s', neither +OK nor an error", i, r->type, r->text);
        ck_assert_msg(seen(i) == 1, "SET k%d answered +OK, received %d times by the node", i, seen(i));
    }
    return failed;
}

START_TEST(test_resumed_when_node_times_out)
{
    static const char *const args[] = { "--node-timeout-ms", "1000", NULL };
    struct flood *fl = &g_fl;
    redisContext *c;
    redisReply *r;
    char key[64], buf[256];
    int failed;

    world_single("timeout", 5000, args);
    flood_begin(fl);
    flood_run(fl, FLOOD_MS);
    flood_until_resumed(fl, 8000);
    flood_drain(fl, 1 + fl->nsets, 10000);
    flood_report("timeout", fl);
    failed = expect_timeout_replies(fl);
    fprintf(stderr, "timeout: %d SETs failed as may-have-run, %d sent before the first reply\n",
            failed, fl->nsets_at_first_reply);
    ck_assert_msg(failed == 0, "%d SETs failed as may-have-run, though none may be written "
                  "while the GET before them is unanswered", failed);
    ck_assert_msg(fl->nsets > fl->nsets_at_first_reply,
                  "the flooding client was not read again: %d SETs, none after the timeout",
                  fl->nsets);
    expect_no_bad_set();

    /* the flooding client itself, then a new one */
    ck_assert_msg(fcntl(fl->fd, F_SETFL, fcntl(fl->fd, F_GETFL) & ~O_NONBLOCK) == 0, "fcntl");
    H_FMT(key, sizeof(key), "{%s}again", g_tag_a);
    H_FMT(buf, sizeof(buf), "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", strlen(key), key);
    h_raw_sends(fl->fd, buf);
    h_raw_recv(fl->fd, buf, sizeof(buf), "again\r\n", 5000, NULL);
    ck_assert_msg(strstr(buf, key) != NULL, "the flooding client's next GET got '%.80s'", buf);
    c = h_connect_node(&W.proxy.addr);
    H_FMT(key, sizeof(key), "{%s}after", g_tag_a);
    r = h_cmd(c, "GET %s", key);
    H_EXPECT_BULK(r, key);
    freeReplyObject(r);
    redisFree(c);
    ck_assert_msg(proxy_alive(), "the proxy died");
    expect_rss_bounded(fl);
}
END_TEST

/* ---------- running ---------- */

static Suite *backpressure_suite(void)
{
    Suite *s = suite_create("backpressure");
    TCase *tc = tcase_create("backpressure");

    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_memory_bounded_while_node_reads_nothing);
    tcase_add_test(tc, test_other_node_served_while_client_held);
    tcase_add_test(tc, test_resumed_when_node_times_out);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return fn_main(backpressure_suite, "backpressure-", "backpressure");
}
