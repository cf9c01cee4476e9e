/*
 * Every byte a client makes the proxy hold is counted (proxy/core/client.h,
 * client.h's backlog). Regression tests for issue 20's second point: a
 * client that sent BLPOP nokey 0 and kept pipelining SETs took the proxy
 * from 7 MB to over 500 MB, because requests parked behind a blocking
 * command (or a retry's backoff) left the input buffer and nothing counted
 * them.
 *
 *   1. behind a blocking command: past client-backlog-limit (16mb) the
 *      client is no longer read; the proxy's peak RSS grows by about the
 *      limit, not by what the client pushed; once the BLPOP is answered
 *      every SET is answered, in order
 *   2. the same behind a command that retries into a backoff (MGET on a
 *      migrating slot answers TRYAGAIN until the slot is stable again)
 *   3. maxmemory-clients 128mb, 20 clients each pushing 50 MB behind a
 *      BLPOP ... 0, over 2 worker threads: the largest are evicted (INFO's
 *      evicted_clients, /metrics), the proxy's peak RSS stays under 128 MB
 *      + MEM_SLACK_MB, and clients beside them see no error
 *
 * Each test starts its own proxy (h_proxy_start) in front of the test
 * cluster.
 */
#include "harness.h"

#define SET_VALUE_LEN   1024
#define MAX_SETS        300000      /* 300 MB in all */
#define STUCK_MS        1500        /* a flood ends once the proxy takes nothing this long */
#define BACKLOG_MB      16          /* client-backlog-limit's default */
/* What the proxy itself, its pools and malloc's arenas add (docs/commands.md); under
 * AddressSanitizer each allocation's redzones and the freed memory it
 * quarantines add more. */
#ifdef __SANITIZE_ADDRESS__
#define MEM_SLACK_MB    96
#define MEM_FACTOR_PCT  150
#else
#define MEM_SLACK_MB    48
#define MEM_FACTOR_PCT  100
#endif
#define HEAVY_CLIENTS   20
#define HEAVY_MB        50
#define HEAVY_VALUE_LEN 16384
#define POLITE_CLIENTS  3

static struct h_proxy P;
static struct h_node g_migrating_on;    /* a master with MIGRATING_SLOT migrating */
#define MIGRATING_SLOT 4242

static void teardown(void)
{
    h_proxy_stop(&P);
    if (g_migrating_on.port) {          /* the slot back as it was, whatever failed */
        redisContext *c = h_connect_node(&g_migrating_on);
        freeReplyObject(h_cmd(c, "CLUSTER SETSLOT %d STABLE", MIGRATING_SLOT));
        redisFree(c);
        g_migrating_on.port = 0;
    }
}

/* The proxy's peak resident memory so far (VmHWM), in KB. */
static long proxy_peak_kb(void)
{
    char path[64], line[256];
    long kb = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)P.pid);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no %s", path);
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    fclose(f);
    ck_assert_msg(kb > 0, "no VmHWM for the proxy");
    return kb;
}

/* One client pushing copies of one command as fast as the proxy takes them. */
struct flood {
    int fd;
    const char *cmd;
    size_t cmd_len, off;        /* off: bytes of the current copy sent */
    long sent, want;            /* copies sent whole, copies to send */
    int closed;                 /* the proxy closed it */
    char *in;                   /* what came back */
    size_t got, cap;
};

static void flood_open(struct flood *f, const char *first, const char *cmd, size_t len,
                       long want)
{
    struct h_node n = P.addr;
    memset(f, 0, sizeof *f);
    f->fd = h_raw_connect(&n);
    h_raw_sends(f->fd, first);
    ck_assert_int_eq(fcntl(f->fd, F_SETFL, O_NONBLOCK), 0);
    f->cmd = cmd;
    f->cmd_len = len;
    f->want = want;
    f->cap = 1 << 20;
    f->in = malloc(f->cap);
    ck_assert_ptr_nonnull(f->in);
}

static void flood_close(struct flood *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    free(f->in);
    f->in = NULL;
}

/* Send what the socket takes now; 1 when something was sent. */
static int flood_send(struct flood *f)
{
    int progress = 0;
    while (!f->closed && f->sent < f->want) {
        ssize_t n = send(f->fd, f->cmd + f->off, f->cmd_len - f->off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            f->closed = 1;
            break;
        }
        progress = 1;
        f->off += (size_t)n;
        if (f->off == f->cmd_len) {
            f->off = 0;
            f->sent++;
        }
    }
    return progress;
}

/* Read what has come back; 1 when something was read. */
static int flood_recv(struct flood *f)
{
    int progress = 0;
    while (!f->closed) {
        if (f->got == f->cap) {
            f->cap *= 2;
            f->in = realloc(f->in, f->cap);
            ck_assert_ptr_nonnull(f->in);
        }
        ssize_t n = recv(f->fd, f->in + f->got, f->cap - f->got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            f->closed = 1;
            break;
        }
        f->got += (size_t)n;
        progress = 1;
    }
    return progress;
}

/* Push on every flood until each has sent all it wants, was closed, or the
 * proxy took nothing for STUCK_MS; between rounds, poke(arg) (may be NULL). */
static void flood_push(struct flood *fs, int n, void (*poke)(void *), void *arg)
{
    long long last = h_now_ms();
    for (;;) {
        int active = 0, progress = 0;
        for (int i = 0; i < n; i++) {
            progress |= flood_send(&fs[i]);
            flood_recv(&fs[i]);
            active |= !fs[i].closed && fs[i].sent < fs[i].want;
        }
        if (poke)
            poke(arg);
        if (progress)
            last = h_now_ms();
        if (!active || h_now_ms() - last > STUCK_MS)
            return;
        h_sleep_ms(1);
    }
}

/* Send the rest and read until `want` bytes came back (or 60 s). */
static void flood_finish(struct flood *f, size_t want)
{
    long long end = h_now_ms() + 60000;
    while (!f->closed && (f->sent < f->want || f->got < want) && h_now_ms() < end) {
        int progress = flood_send(f) | flood_recv(f);
        if (!progress) {
            struct pollfd pfd = { f->fd, POLLIN | (f->sent < f->want ? POLLOUT : 0), 0 };
            poll(&pfd, 1, 100);
        }
    }
}

/* A SET of a SET_VALUE_LEN value, as a client sends it. */
static char *set_command(const char *key, size_t value_len, size_t *len)
{
    size_t cap = value_len + 128;
    char *cmd = malloc(cap);
    ck_assert_ptr_nonnull(cmd);
    int head = snprintf(cmd, cap, "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%zu\r\n", strlen(key), key,
                        value_len);
    memset(cmd + head, 'v', value_len);
    memcpy(cmd + head + value_len, "\r\n", 2);
    *len = (size_t)head + value_len + 2;
    return cmd;
}

/* f's replies are `first` and then one +OK per SET it sent, nothing else. */
static void expect_first_then_oks(const struct flood *f, const char *first)
{
    size_t flen = strlen(first);
    ck_assert_msg(f->got >= flen && memcmp(f->in, first, flen) == 0,
                  "the first reply is not %s: %s", h_esc_str(first),
                  h_esc(f->in, f->got < 64 ? f->got : 64));
    ck_assert_msg(f->got == flen + 5 * (size_t)f->sent,
                  "%ld SETs sent, %zu bytes of replies after the first (want %zu)", f->sent,
                  f->got - flen, 5 * (size_t)f->sent);
    for (size_t at = flen; at < f->got; at += 5)
        ck_assert_msg(memcmp(f->in + at, "+OK\r\n", 5) == 0, "reply %zu is %s",
                      (at - flen) / 5, h_esc(f->in + at, 16));
}

/* The flood's growth against the limit it should be held to. */
static void expect_bounded(const char *what, long base_kb, long limit_mb, const struct flood *f)
{
    long peak = proxy_peak_kb();
    fprintf(stderr, "%s: %ld SETs of %d bytes taken; proxy peak RSS %ld KB (+%ld KB from %ld)\n",
            what, f->sent, SET_VALUE_LEN, peak, peak - base_kb, base_kb);
    ck_assert_msg(f->sent < MAX_SETS, "%s: the proxy took every SET (%ld) while blocked", what,
                  f->sent);
    long bound_mb = limit_mb * MEM_FACTOR_PCT / 100 + MEM_SLACK_MB;
    ck_assert_msg(peak - base_kb < bound_mb * 1024,
                  "%s: the proxy's peak RSS grew by %ld KB, over %ld MB", what, peak - base_kb,
                  bound_mb);
}

START_TEST(test_backlog_behind_blocking_command)
{
    const char *args[] = { NULL };
    size_t len;
    struct flood f;
    h_proxy_start(&P, args);
    long base = proxy_peak_kb();
    char *cmd = set_command("backlog:k", SET_VALUE_LEN, &len);
    flood_open(&f, "*3\r\n$5\r\nBLPOP\r\n$13\r\nbacklog:block\r\n$1\r\n0\r\n", cmd, len, MAX_SETS);
    flood_push(&f, 1, NULL, NULL);
    ck_assert_msg(!f.closed, "the proxy closed the client");
    ck_assert_msg(f.got == 0, "a reply came while BLPOP blocks: %s", h_esc(f.in, 32));
    expect_bounded("blocked", base, BACKLOG_MB, &f);

    redisContext *c = h_connect_extra(&P);
    redisReply *r = h_cmd(c, "RPUSH backlog:block x");
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    const char *first = "*2\r\n$13\r\nbacklog:block\r\n$1\r\nx\r\n";
    flood_finish(&f, strlen(first) + 5 * (size_t)MAX_SETS);
    ck_assert_int_eq(f.sent, MAX_SETS);
    expect_first_then_oks(&f, first);
    freeReplyObject(h_cmd(c, "DEL backlog:k"));
    redisFree(c);
    flood_close(&f);
    free(cmd);
}
END_TEST

START_TEST(test_backlog_behind_retry)
{
    const char *args[] = { "--retry-attempts", "1000", "--retry-base-ms", "10",
                           "--retry-max-ms", "50", NULL };
    struct h_topo t;
    char tag[32], ka[48], kb[48], cmd_mget[160];
    size_t len;
    struct flood f;
    h_topo_load(&t);
    h_tag_for_slot(MIGRATING_SLOT, tag, sizeof tag);
    int m = h_topo_owner(&t, MIGRATING_SLOT), other = (m + 1) % t.nmasters;
    H_FMT(ka, sizeof ka, "{%s}a", tag);
    H_FMT(kb, sizeof kb, "{%s}b", tag);
    redisContext *owner = h_connect_node(&t.masters[m]);
    freeReplyObject(h_cmd(owner, "SET %s 1", ka));
    freeReplyObject(h_cmd(owner, "DEL %s", kb));
    g_migrating_on = t.masters[m];
    redisReply *r = h_cmd(owner, "CLUSTER SETSLOT %d MIGRATING %s", MIGRATING_SLOT,
                          t.master_id[other]);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);

    h_proxy_start(&P, args);
    long base = proxy_peak_kb();
    char *cmd = set_command("backlog:r", SET_VALUE_LEN, &len);
    H_FMT(cmd_mget, sizeof cmd_mget, "*3\r\n$4\r\nMGET\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
          strlen(ka), ka, strlen(kb), kb);
    flood_open(&f, cmd_mget, cmd, len, MAX_SETS);
    flood_push(&f, 1, NULL, NULL);
    int closed = f.closed;
    size_t early = f.got;
    r = h_cmd(owner, "CLUSTER SETSLOT %d STABLE", MIGRATING_SLOT);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    g_migrating_on.port = 0;
    ck_assert_msg(!closed, "the proxy closed the client");
    ck_assert_msg(early == 0, "a reply came while MGET retries: %s", h_esc(f.in, 32));
    expect_bounded("retrying", base, BACKLOG_MB, &f);

    const char *first = "*2\r\n$1\r\n1\r\n$-1\r\n";
    flood_finish(&f, strlen(first) + 5 * (size_t)MAX_SETS);
    ck_assert_int_eq(f.sent, MAX_SETS);
    expect_first_then_oks(&f, first);
    freeReplyObject(h_cmd(owner, "DEL %s", ka));
    redisFree(owner);
    redisContext *c = h_connect_extra(&P);
    freeReplyObject(h_cmd(c, "DEL backlog:r"));
    redisFree(c);
    flood_close(&f);
    free(cmd);
}
END_TEST

/* Clients beside the heavy ones: a SET and a GET each per round. */
struct polite {
    redisContext *c[POLITE_CLIENTS];
    long rounds, errors;
    char first_error[160];
};

static void polite_round(void *arg)
{
    struct polite *p = arg;
    for (int i = 0; i < POLITE_CLIENTS; i++) {
        redisReply *r = redisCommand(p->c[i], "SET polite:%d %ld", i, p->rounds);
        redisReply *g = r ? redisCommand(p->c[i], "GET polite:%d", i) : NULL;
        int ok = r && r->type == REDIS_REPLY_STATUS && g && g->type == REDIS_REPLY_STRING &&
                 atol(g->str) == p->rounds;
        if (!ok && p->errors++ == 0)
            snprintf(p->first_error, sizeof p->first_error, "client %d: %s / %s", i,
                     r ? h_show(r) : p->c[i]->errstr, g ? h_show(g) : "-");
        if (r)
            freeReplyObject(r);
        if (g)
            freeReplyObject(g);
    }
    p->rounds++;
}

START_TEST(test_maxmemory_clients)
{
    const char *args[] = { "--maxmemory-clients", "128mb", "--threads", "2", NULL };
    static struct flood heavy[HEAVY_CLIENTS];
    struct polite polite = { .rounds = 0 };
    char first[96];
    size_t len;
    h_proxy_start(&P, args);
    for (int i = 0; i < POLITE_CLIENTS; i++)
        polite.c[i] = h_connect_extra(&P);
    long base = proxy_peak_kb();
    char *cmd = set_command("evict:k", HEAVY_VALUE_LEN, &len);
    for (int i = 0; i < HEAVY_CLIENTS; i++) {
        H_FMT(first, sizeof first, "*3\r\n$5\r\nBLPOP\r\n$8\r\nevict:%02d\r\n$1\r\n0\r\n", i);
        flood_open(&heavy[i], first, cmd, len, (long)HEAVY_MB * 1024 * 1024 / (long)len);
    }
    flood_push(heavy, HEAVY_CLIENTS, polite_round, &polite);
    long peak = proxy_peak_kb();
    int evicted = 0;
    long sent = 0;
    for (int i = 0; i < HEAVY_CLIENTS; i++) {
        flood_recv(&heavy[i]);
        evicted += heavy[i].closed;
        sent += heavy[i].sent;
    }
    redisContext *c = h_connect_extra(&P);
    long long counted = h_info_field(c, "evicted_clients");
    fprintf(stderr, "maxmemory-clients: %d heavy clients closed (INFO evicted_clients %lld), "
            "%ld MB sent in all; polite rounds %ld, errors %ld; proxy peak RSS %ld KB "
            "(from %ld)\n", evicted, counted, sent * (long)len >> 20, polite.rounds,
            polite.errors, peak, base);
    ck_assert_msg(polite.errors == 0, "a polite client saw an error: %s", polite.first_error);
    ck_assert_msg(polite.rounds > 0, "no polite round ran");
    ck_assert_msg(evicted > 0 && counted == evicted,
                  "%d heavy clients were closed, INFO counts %lld evicted", evicted, counted);
    ck_assert_msg(evicted < HEAVY_CLIENTS, "every heavy client was evicted");
    long bound_mb = 128L * MEM_FACTOR_PCT / 100 + MEM_SLACK_MB;
    ck_assert_msg(peak < bound_mb * 1024, "the proxy's peak RSS %ld KB is over %ld MB (128 MB "
                  "and its slack)", peak, bound_mb);
    redisReply *r = h_cmd(c, "CLIENT NO-EVICT on");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    for (int i = 0; i < HEAVY_CLIENTS; i++)
        flood_close(&heavy[i]);
    for (int i = 0; i < POLITE_CLIENTS; i++)
        redisFree(polite.c[i]);
    redisFree(c);
    free(cmd);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_memory");
    TCase *tc = tcase_create("client_memory");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_backlog_behind_blocking_command);
    tcase_add_test(tc, test_backlog_behind_retry);
    tcase_add_test(tc, test_maxmemory_clients);
    suite_add_tcase(s, tc);
    return h_run(s);
}
