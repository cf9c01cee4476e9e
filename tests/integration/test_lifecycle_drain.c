/*
 * SIGTERM drains (lifecycle.h), against extra proxies:
 *  - pipelined load: a client writes 25,000 of its 50,000 commands, SIGTERM
 *    arrives, it writes the other 25,000; replies it has not read yet hold
 *    the proxy's output, so commands are surely in flight at the signal
 *    (two worker threads: both stop accepting).
 *    Every command gets its reply, in order (INCR counts 1, 2, 3, ... per
 *    counter; GETs return their value), each INCR ran once (the counters on
 *    the nodes), then the connection closes and the process exits 0. New
 *    connections are refused from the drain's start.
 *  - idle clients: closed at once, exit 0 well before shutdown-timeout-ms.
 *  - a client that never finishes its command: the drain ends at
 *    shutdown-timeout-ms, not before, and the process still exits 0.
 *  - during a drain a second SIGTERM changes nothing; SIGINT stops at once.
 */
#include "lifecycle.h"

enum {
    TOTAL = 50000,
    AT_SIGTERM = 25000,
    NKEYS = 3,
    VALUE_LEN = 1024,       /* 12,500 GETs x 1 KB: far more than socket buffers hold */
};

static struct h_proxy proxy;

static void teardown(void)
{
    h_proxy_stop(&proxy);
}

/* Keys on three different masters (counters and values share a tag). */
static void keys_on_masters(char counters[NKEYS][128], char values[NKEYS][128])
{
    struct h_topo t;
    char base[128];

    h_topo_load(&t);
    ck_assert_msg(t.nmasters >= NKEYS, "the cluster has %d masters", t.nmasters);
    for (int m = 0; m < NKEYS; m++) {
        h_key_on_master(&t, m, h_prefix(), 0, base, sizeof(base));
        H_FMT(counters[m], sizeof(counters[m]), "{%s}:drain:n", base);
        H_FMT(values[m], sizeof(values[m]), "{%s}:drain:v", base);
    }
}

/* Command i: even ones GET a value, odd ones INCR a counter. */
static size_t command(int i, char counters[NKEYS][128], char values[NKEYS][128], char *buf,
                      size_t size)
{
    const char *key = i % 2 ? counters[(i / 2) % NKEYS] : values[(i / 2) % NKEYS];
    const char *verb = i % 2 ? "INCR" : "GET";
    H_FMT(buf, size, "*2\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n", strlen(verb), verb, strlen(key), key);
    return strlen(buf);
}

struct stream {
    char *bytes;
    size_t len, sent;
    size_t mark;            /* offset where command AT_SIGTERM starts */
};

static void build_stream(struct stream *s, char counters[NKEYS][128], char values[NKEYS][128])
{
    size_t cap = (size_t)TOTAL * 96;
    s->bytes = malloc(cap);
    ck_assert_ptr_nonnull(s->bytes);
    s->len = s->sent = s->mark = 0;
    for (int i = 0; i < TOTAL; i++) {
        if (i == AT_SIGTERM)
            s->mark = s->len;
        s->len += command(i, counters, values, s->bytes + s->len, cap - s->len);
    }
}

/* Write s up to `until`, blocking; never reads. */
static void send_until(int fd, struct stream *s, size_t until)
{
    if (until > s->sent)
        h_raw_send(fd, s->bytes + s->sent, until - s->sent);
    s->sent = until;
}

struct replies {
    char *buf;
    size_t len, cap, at;
    int count;
    long long incr_next[NKEYS];
};

/* Check every complete reply in r: in order, the right one. */
static void check_replies(struct replies *r, const char *value)
{
    size_t one;
    while ((one = h_resp_complete(r->buf + r->at, r->len - r->at)) > 0) {
        const char *p = r->buf + r->at;
        int i = r->count;
        if (i % 2) {
            int k = (i / 2) % NKEYS;
            char want[32];
            H_FMT(want, sizeof(want), ":%lld\r\n", ++r->incr_next[k]);
            ck_assert_msg(one == strlen(want) && memcmp(p, want, one) == 0,
                          "reply %d: expected %s, got %s", i, h_esc_str(want), h_esc(p, one));
        } else {
            ck_assert_msg(one == (size_t)VALUE_LEN + 9 && memcmp(p, "$1024\r\n", 7) == 0 &&
                          memcmp(p + 7, value, VALUE_LEN) == 0,
                          "reply %d: not the value: %s", i, h_esc(p, one));
        }
        r->at += one;
        r->count++;
    }
    if (r->at > (1 << 20)) {        /* keep the buffer small */
        memmove(r->buf, r->buf + r->at, r->len - r->at);
        r->len -= r->at;
        r->at = 0;
    }
}

/* Read replies until the proxy closes; 10 s of silence fails. */
static void read_to_eof(int fd, struct replies *r, const char *value)
{
    for (;;) {
        struct pollfd pfd = { fd, POLLIN, 0 };
        int rc = poll(&pfd, 1, 10000);
        ck_assert_msg(rc > 0, "no reply nor close for 10 s after %d replies", r->count);
        if (r->cap - r->len < 65536) {
            r->cap = r->cap * 2 + 65536;
            r->buf = realloc(r->buf, r->cap);
            ck_assert_ptr_nonnull(r->buf);
        }
        ssize_t n = recv(fd, r->buf + r->len, r->cap - r->len - 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        r->len += (size_t)n;
        check_replies(r, value);
    }
    ck_assert_msg(r->at == r->len, "a cut reply at the end: %s", h_esc(r->buf + r->at, r->len - r->at));
}

/* Connecting to p is refused (its listener is closed), within 2 s. */
static void expect_refused(const struct h_proxy *p)
{
    long long deadline = h_now_ms() + 2000;
    for (;;) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((unsigned short)p->addr.port) };
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        inet_pton(AF_INET, p->addr.host, &sa.sin_addr);
        int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
        int err = errno;
        close(fd);
        if (rc < 0 && err == ECONNREFUSED)
            return;
        ck_assert_msg(h_now_ms() < deadline, "new connections still accepted 2 s into the drain");
        h_sleep_ms(10);
    }
}

START_TEST(drain_pipelined_load)
{
    char counters[NKEYS][128], values[NKEYS][128], value[VALUE_LEN + 1];
    struct stream s;
    struct replies r = { 0 };
    redisReply *rep;

    keys_on_masters(counters, values);
    memset(value, 'v', VALUE_LEN);
    value[VALUE_LEN] = '\0';
    for (int k = 0; k < NKEYS; k++) {       /* set up on the nodes themselves */
        struct h_topo t;
        h_topo_load(&t);
        redisContext *n = h_connect_owner(&t, counters[k]);
        H_OK(n, "SET %s %s", values[k], value);
        rep = h_cmd(n, "DEL %s", counters[k]);
        freeReplyObject(rep);
        redisFree(n);
    }
    build_stream(&s, counters, values);
    static const char *const two_workers[] = { "--threads", "2", NULL };
    lc_start(&proxy, NULL, NULL, 0, two_workers);      /* both listeners must close */

    int fd = h_raw_connect(&proxy.addr);
    send_until(fd, &s, s.mark);
    ck_assert_int_eq(kill(proxy.pid, SIGTERM), 0);
    send_until(fd, &s, s.len);              /* the rest, during the drain */
    expect_refused(&proxy);
    read_to_eof(fd, &r, value);
    close(fd);
    ck_assert_msg(r.count == TOTAL, "%d replies to %d commands", r.count, TOTAL);
    LC_EXPECT_EXIT_0(&proxy, 5000);
    ck_assert_int_eq(lc_count(proxy.log, "drained: every client answered"), 1);

    /* every INCR ran exactly once */
    struct h_topo t;
    h_topo_load(&t);
    for (int k = 0; k < NKEYS; k++) {
        redisContext *n = h_connect_owner(&t, counters[k]);
        rep = h_cmd(n, "GET %s", counters[k]);
        char want[32];
        H_FMT(want, sizeof(want), "%lld", r.incr_next[k]);
        H_EXPECT_BULK(rep, want);
        freeReplyObject(rep);
        redisFree(n);
    }
    free(s.bytes);
    free(r.buf);
}
END_TEST

START_TEST(drain_idle_clients_exit_promptly)
{
    static const char *const args[] = { "--shutdown-timeout-ms", "10000", NULL };
    redisContext *c[5];
    char buf[64];
    int closed;

    lc_start(&proxy, NULL, NULL, 0, args);
    for (int i = 0; i < 5; i++) {
        c[i] = h_connect_node(&proxy.addr);
        redisReply *r = h_cmd(c[i], "PING");
        H_EXPECT_STATUS(r, "PONG");
        freeReplyObject(r);
    }
    long long t0 = h_now_ms();
    ck_assert_int_eq(kill(proxy.pid, SIGTERM), 0);
    LC_EXPECT_EXIT_0(&proxy, 2000);
    long long took = h_now_ms() - t0;
    ck_assert_msg(took < 2000, "exit took %lld ms with idle clients", took);
    for (int i = 0; i < 5; i++) {       /* each saw its connection closed */
        h_raw_recv(c[i]->fd, buf, sizeof(buf), NULL, 2000, &closed);
        ck_assert_msg(closed, "idle client %d not closed", i);
        redisFree(c[i]);
    }
}
END_TEST

START_TEST(drain_ends_at_shutdown_timeout)
{
    static const char *const args[] = { "--shutdown-timeout-ms", "600", NULL };
    char buf[64];
    int closed;

    lc_start(&proxy, NULL, NULL, 0, args);
    int fd = h_raw_connect(&proxy.addr);
    h_raw_sends(fd, "*2\r\n$3\r\nGET\r\n$5\r\nhal");     /* never finished */
    h_wait_client_listed(&proxy.addr, fd, NULL, 5000, "the client with half a command");
    long long t0 = h_now_ms();
    ck_assert_int_eq(kill(proxy.pid, SIGTERM), 0);
    LC_EXPECT_EXIT_0(&proxy, 5000);
    long long took = h_now_ms() - t0;
    ck_assert_msg(took >= 550, "the drain ended after %lld ms, before shutdown-timeout-ms", took);
    ck_assert_msg(lc_count(proxy.log, "shutdown-timeout-ms (600 ms) passed: closing 1 client") == 1,
                  "the timeout is not logged");
    h_raw_recv(fd, buf, sizeof(buf), NULL, 2000, &closed);
    ck_assert_msg(closed, "the client was not closed");
    close(fd);
}
END_TEST

START_TEST(drain_second_signal)
{
    static const char *const args[] = { "--shutdown-timeout-ms", "20000", NULL };
    int status;

    lc_start(&proxy, NULL, NULL, 0, args);
    int fd = h_raw_connect(&proxy.addr);
    h_raw_sends(fd, "*2\r\n$3\r\nGET\r\n$5\r\nhal");     /* keeps the drain going */
    h_wait_client_listed(&proxy.addr, fd, NULL, 5000, "the client with half a command");
    lc_signal(&proxy, SIGTERM, "draining: no new connections", 1);
    lc_signal(&proxy, SIGTERM, "received SIGTERM while draining: already stopping", 1);
    ck_assert_msg(!lc_wait_exit(&proxy, 300, &status), "a second SIGTERM ended the drain");
    long long t0 = h_now_ms();
    ck_assert_int_eq(kill(proxy.pid, SIGINT), 0);
    LC_EXPECT_EXIT_0(&proxy, 3000);
    ck_assert_msg(h_now_ms() - t0 < 3000, "SIGINT did not stop the drain at once");
    ck_assert_int_eq(lc_count(proxy.log, "received SIGINT while draining: stopping now"), 1);
    close(fd);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lifecycle_drain");
    TCase *tc = tcase_create("sigterm");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, drain_pipelined_load);
    tcase_add_test(tc, drain_idle_clients_exit_promptly);
    tcase_add_test(tc, drain_ends_at_shutdown_timeout);
    tcase_add_test(tc, drain_second_signal);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(suite());
}
