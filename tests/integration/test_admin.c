/*
 * The admin endpoint (admin-listen) and INFO's proxy sections:
 *
 *  - /healthz answers 200, an unknown path 404; an idle proxy stays live
 *    past liveness-stall-ms (its workers' heartbeats);
 *  - /readyz answers 200 while every master answers, still 200 within
 *    readiness-grace-ms of a master stopping, then 503 naming the master
 *    and the grace (SIGSTOP, longer than the extra proxy's small
 *    node-timeout-ms, far shorter than the cluster's cluster-node-timeout,
 *    so no failover), and 200 again after SIGCONT;
 *  - /metrics counters move by exactly what the test sent: commands by
 *    name (calls, errors, histogram count), unknown commands, clients,
 *    bytes in and out (counted on a raw socket);
 *  - /metrics passes `promtool check metrics` and holds the build info and
 *    the process_* family;
 *  - INFO proxy / INFO nodes / INFO commandstats as sections of their own,
 *    with the same figures;
 *  - an admin port already taken stops the start with a clear message.
 *
 * Each test that counts uses its own extra proxy, so no other traffic moves
 * its counters. HTTP is spoken over a plain socket (HTTP/1.0: the server
 * closes after the reply).
 */
#include "harness.h"
#include "lib/base/version.h"
#include "lib/net/iobatch.h"
#include "lifecycle.h"

enum {
    NODE_TIMEOUT_MS = 500,          /* the extra proxy's: a stopped master is seen fast */
    GUARD_DEADLINE_MS = 15000,      /* well under the cluster's cluster-node-timeout 30000 */
    STATE_WITHIN_MS = 8000,         /* probe interval + node timeout + slack */
};

/* ---------- a tiny HTTP client ---------- */

struct http_reply {
    int status;
    char body[65536 * 4];
};

/* GET path from host:port; fills rep; 0, or -1 when nothing valid came back. */
static int http_get(const struct h_node *n, const char *path, struct http_reply *rep)
{
    static char buf[65536 * 4 + 4096];
    char req[512];
    int fd = h_raw_connect(n), closed = 0;
    const char *body;

    H_FMT(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s:%d\r\n\r\n", path, n->host, n->port);
    h_raw_sends(fd, req);
    h_raw_recv(fd, buf, sizeof(buf), NULL, H_IO_TIMEOUT_S * 1000, &closed);
    close(fd);
    rep->status = 0;
    rep->body[0] = '\0';
    if (sscanf(buf, "HTTP/1.%*d %d", &rep->status) != 1)
        return -1;
    body = strstr(buf, "\r\n\r\n");
    if (body == NULL)
        return -1;
    snprintf(rep->body, sizeof(rep->body), "%s", body + 4);
    return 0;
}

static struct h_node main_admin(void)
{
    struct h_node n;
    const char *s = h_env("TAGPROXY_TEST_ADMIN");
    ck_assert_msg(h_parse_addr(s, &n) == 0, "bad TAGPROXY_TEST_ADMIN '%s'", s);
    return n;
}

/* Polls path until it answers status (body containing want, if not NULL);
 * the last reply stays in rep. 1 on success, 0 after within_ms. */
static int http_wait(const struct h_node *n, const char *path, int status, const char *want,
                     long within_ms, struct http_reply *rep)
{
    long long deadline = h_now_ms() + within_ms;
    for (;;) {
        if (http_get(n, path, rep) == 0 && rep->status == status &&
            (want == NULL || strstr(rep->body, want) != NULL))
            return 1;
        if (h_now_ms() > deadline)
            return 0;
        h_sleep_ms(50);
    }
}

/* ---------- an extra proxy with its admin endpoint ---------- */

struct admin_proxy {
    struct h_proxy px;
    struct h_node admin;
};

/* grace: readiness-grace-ms ("0": a master is down for /readyz at once).
 * liveness-stall-ms 2500: an idle worker's heartbeat (every second) keeps
 * /healthz 200 past it, which a test longer than that shows. */
static void admin_proxy_start(struct admin_proxy *a, const char *node_timeout, const char *grace)
{
    static char listen[64];
    const char *args[] = { "--admin-listen", listen, "--node-timeout-ms", node_timeout,
                           "--readiness-grace-ms", grace, "--liveness-stall-ms", "2500", NULL };

    snprintf(a->admin.host, sizeof(a->admin.host), "127.0.0.1");
    a->admin.port = h_free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", a->admin.port);
    h_proxy_start(&a->px, args);
}

/* ---------- reading Prometheus text ---------- */

/* The number after `name` and sep at the start of a line of text, or -1
 * when no line has it. */
static long long line_value(const char *text, const char *name, char sep)
{
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == sep)
            return atoll(p + n + 1);
    return -1;
}

/* The value of the sample whose name and labels are exactly `series`
 * ("name" or "name{l=\"v\"}"), or -1 when absent. */
static long long metric(const char *text, const char *series)
{
    return line_value(text, series, ' ');
}

static void scrape(const struct h_node *admin, struct http_reply *rep)
{
    ck_assert_msg(http_get(admin, "/metrics", rep) == 0, "no reply from /metrics");
    ck_assert_msg(rep->status == 200, "/metrics answered %d", rep->status);
}

/* INFO's "name:value" as a number, -1 when absent. */
static long long info_field(const char *text, const char *name)
{
    return line_value(text, name, ':');
}

/* ---------- /healthz, /readyz ---------- */

/* io-uring yes (the default; make test's first pass): where this machine
 * lets a process use io_uring, every worker does, and the traffic's socket
 * reads and sends went out in batches. */
static void check_io_batches(const char *before, const char *after)
{
    char why[160];
    struct iobatch *probe = iobatch_open(4, why, sizeof why);
    long long workers = metric(after, "tagproxy_io_uring_workers");
    long long calls = metric(after, "tagproxy_io_batches_total") -
                      metric(before, "tagproxy_io_batches_total");
    long long ops = metric(after, "tagproxy_io_batched_operations_total") -
                    metric(before, "tagproxy_io_batched_operations_total");
    ck_assert_msg(workers >= 0, "no tagproxy_io_uring_workers");
    if (probe && !getenv("TAGPROXY_IO_URING")) {
        ck_assert_msg(workers >= 1, "io_uring works here, but no worker uses it");
        ck_assert_msg(calls >= 1 && ops >= calls, "%lld batches carrying %lld operations",
                      calls, ops);
    } else if (workers == 0) {
        ck_assert_int_eq(calls, 0);
    }
    iobatch_close(probe);
}

START_TEST(test_healthz_and_unknown_paths)
{
    static struct http_reply rep;
    struct h_node admin = main_admin();

    ck_assert_int_eq(http_get(&admin, "/healthz", &rep), 0);
    ck_assert_msg(rep.status == 200 && strcmp(rep.body, "ok\n") == 0,
                  "/healthz: %d '%s'", rep.status, h_esc_str(rep.body));
    ck_assert_int_eq(http_get(&admin, "/healthz?verbose=1", &rep), 0);
    ck_assert_int_eq(rep.status, 200);
    ck_assert_int_eq(http_get(&admin, "/nosuch", &rep), 0);
    ck_assert_int_eq(rep.status, 404);
    ck_assert_int_eq(http_get(&admin, "/", &rep), 0);
    ck_assert_int_eq(rep.status, 404);
    ck_assert_msg(http_wait(&admin, "/readyz", 200, "ready", STATE_WITHIN_MS, &rep),
                  "/readyz of the test proxy: %d '%s'", rep.status, h_esc_str(rep.body));
}
END_TEST

/* The pid of a redis-server, from its own INFO server. */
static pid_t node_pid_by_info(const struct h_node *n)
{
    redisContext *c = h_connect_node(n);
    redisReply *r = h_cmd(c, "INFO server");
    long long pid;

    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    pid = info_field(r->str, "process_id");
    ck_assert_msg(pid > 0, "no process_id in INFO server of %s:%d", n->host, n->port);
    freeReplyObject(r);
    redisFree(c);
    return (pid_t)pid;
}

/* The replicas CLUSTER SLOTS (asked of master m) lists for m's ranges. */
static int replicas_listed(const struct h_node *m)
{
    redisContext *c = h_connect_node(m);
    redisReply *r = h_cmd(c, "CLUSTER SLOTS");
    int n = -1;
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < r->elements && n < 0; i++) {
        const redisReply *range = r->element[i];
        if (range->elements >= 3 && range->element[2]->element[1]->integer == m->port)
            n = (int)range->elements - 3;
    }
    ck_assert_msg(n >= 0, "no range of %s:%d in CLUSTER SLOTS", m->host, m->port);
    freeReplyObject(r);
    redisFree(c);
    return n;
}

START_TEST(test_readyz_while_a_master_is_stopped)
{
    static struct http_reply rep, during, after;
    struct admin_proxy a;
    struct h_guard g = { 0, 0, -1 };
    struct h_topo t;
    char want[128];
    int saw_503, saw_200;
    long long t0, stopped_ms;

    h_topo_load(&t);
    admin_proxy_start(&a, "500", "2000");
    ck_assert_msg(http_wait(&a.admin, "/readyz", 200, "ready", STATE_WITHIN_MS, &rep),
                  "/readyz before: %d '%s'", rep.status, h_esc_str(rep.body));

    /* the last master: not the first node, which seeds the extra proxy */
    const struct h_node *m = &t.masters[t.nmasters - 1];
    H_FMT(want, sizeof(want), "master %s:%d is not connected for ", m->host, m->port);
    h_freeze(&g, node_pid_by_info(m), GUARD_DEADLINE_MS);
    t0 = h_now_ms();
    /* within the grace: seen down no sooner than node-timeout-ms (500) after
     * the stop, so still ready until at least 2500 ms after it */
    h_sleep_ms(1200);
    int graced = http_get(&a.admin, "/readyz", &rep) == 0 && rep.status == 200;
    long long graced_at = h_now_ms() - t0;
    saw_503 = http_wait(&a.admin, "/readyz", 503, want, STATE_WITHIN_MS, &during);
    stopped_ms = h_now_ms() - t0;
    h_thaw(&g);         /* before any assertion: the node must not stay stopped */
    saw_200 = http_wait(&a.admin, "/readyz", 200, "ready", STATE_WITHIN_MS, &after);

    ck_assert_msg(graced || graced_at >= 2400, "/readyz %lld ms into the stop, within "
                  "readiness-grace-ms: %d '%s'", graced_at, rep.status, h_esc_str(rep.body));
    ck_assert_msg(saw_503, "/readyz with %s:%d stopped for %lld ms: %d '%s'", m->host, m->port,
                  stopped_ms, during.status, h_esc_str(during.body));
    ck_assert_msg(strstr(during.body, " ms, past readiness-grace-ms 2000: "), "%s", during.body);
    ck_assert_msg(strchr(during.body, '\n') == during.body + strlen(during.body) - 1,
                  "the reason is not one line: '%s'", h_esc_str(during.body));
    ck_assert_msg(saw_200, "/readyz after SIGCONT: %d '%s'", after.status,
                  h_esc_str(after.body));
    /* liveness never depended on the master; the idle worker's heartbeat
     * kept it past liveness-stall-ms */
    ck_assert_int_eq(http_get(&a.admin, "/healthz", &rep), 0);
    ck_assert_msg(rep.status == 200 && h_now_ms() - t0 > 2500, "/healthz %lld ms in: %d '%s'",
                  h_now_ms() - t0, rep.status, h_esc_str(rep.body));
    h_proxy_stop(&a.px);
}
END_TEST

/* A drain (SIGTERM) makes /readyz 503 "draining" from its first moment,
 * while a command is still in flight (its master stopped, so the drain
 * lasts); /healthz stays 200; the proxy exits 0 once the reply is out. */
START_TEST(test_readyz_during_a_drain)
{
    static struct http_reply rep, ready, live;
    static char out[4096];
    struct admin_proxy a;
    struct h_guard g = { 0, 0, -1 };
    struct h_topo t;
    char key[128], cmd[256];
    int fd, draining, alive, status = 0, exited = 0;

    h_topo_load(&t);
    admin_proxy_start(&a, "3000", "0");
    ck_assert_msg(http_wait(&a.admin, "/readyz", 200, "ready", STATE_WITHIN_MS, &rep),
                  "/readyz before: %d '%s'", rep.status, h_esc_str(rep.body));
    const struct h_node *m = &t.masters[t.nmasters - 1];
    h_key_on_master(&t, t.nmasters - 1, h_prefix(), 0, key, sizeof(key));
    H_FMT(cmd, sizeof(cmd), "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", strlen(key), key);
    fd = h_raw_connect(&a.px.addr);

    h_freeze(&g, node_pid_by_info(m), GUARD_DEADLINE_MS);
    h_raw_sends(fd, cmd);                   /* in flight until the master answers */
    h_wait_client_listed(&a.px.addr, fd, " cmd=get ", 5000, "the GET before the drain");
    kill(a.px.pid, SIGTERM);
    draining = http_wait(&a.admin, "/readyz", 503, "draining", 2000, &ready);
    alive = http_get(&a.admin, "/healthz", &live) == 0 && live.status == 200;
    h_thaw(&g);
    h_raw_recv(fd, out, sizeof(out), "\r\n", H_IO_TIMEOUT_S * 1000, NULL);
    close(fd);
    for (long long t0 = h_now_ms(); h_now_ms() - t0 < 10000; h_sleep_ms(20))
        if (waitpid(a.px.pid, &status, WNOHANG) == a.px.pid) {
            exited = 1;
            a.px.pid = 0;
            break;
        }

    ck_assert_msg(draining, "/readyz while draining: %d '%s'", ready.status,
                  h_esc_str(ready.body));
    ck_assert_msg(alive, "/healthz while draining: %d '%s'", live.status, h_esc_str(live.body));
    ck_assert_msg(out[0] == '$', "the command in flight got '%s'", h_esc_str(out));
    ck_assert_msg(exited && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the proxy did not exit 0 after the drain (status %d)", status);
}
END_TEST

/* The probes follow a reload: with node-timeout-ms 20000 a stopped master
 * still counts as connected after 2.5 s; after SIGHUP with 500, it does not. */
START_TEST(test_readyz_follows_a_reloaded_node_timeout)
{
    static struct http_reply rep, still, during, after;
    struct h_proxy px;
    struct h_guard g = { 0, 0, -1 };
    struct h_topo t;
    struct h_node admin = { "127.0.0.1", 0 };
    char conf[512], text[256], want[128], listen[64];
    int still_ready, saw_503, saw_200;

    h_topo_load(&t);
    admin.port = h_free_port();
    H_FMT(listen, sizeof(listen), "127.0.0.1:%d", admin.port);
    const char *args[] = { "--admin-listen", listen, NULL };   /* the test env says off */
    /* no periodic refresh: a CLUSTER SLOTS to the stopped master would
     * hold the control thread (and the reload) for the node timeout */
    H_FMT(text, sizeof(text), "node-timeout-ms 20000\ntopology-refresh-ms 0\n"
          "readiness-grace-ms 0\n");
    lc_start(&px, text, conf, sizeof(conf), args);
    ck_assert_msg(http_wait(&admin, "/readyz", 200, "ready", STATE_WITHIN_MS, &rep),
                  "/readyz before: %d '%s'", rep.status, h_esc_str(rep.body));

    const struct h_node *m = &t.masters[t.nmasters - 1];
    H_FMT(want, sizeof(want), "master %s:%d is not connected", m->host, m->port);
    h_freeze(&g, node_pid_by_info(m), GUARD_DEADLINE_MS);
    /* a time, not a state: 2.5 s stopped, well within node-timeout-ms 20000 */
    h_sleep_ms(2500);
    still_ready = http_get(&admin, "/readyz", &still) == 0 && still.status == 200;
    H_FMT(text, sizeof(text), "node-timeout-ms 500\ntopology-refresh-ms 0\n"
          "readiness-grace-ms 0\n");
    lc_write(conf, text);
    kill(px.pid, SIGHUP);
    saw_503 = http_wait(&admin, "/readyz", 503, want, STATE_WITHIN_MS, &during);
    h_thaw(&g);
    saw_200 = http_wait(&admin, "/readyz", 200, "ready", STATE_WITHIN_MS, &after);

    ck_assert_msg(still_ready, "with node-timeout-ms 20000, 2.5 s stopped: %d '%s'",
                  still.status, h_esc_str(still.body));
    ck_assert_msg(saw_503, "after the reload to 500 ms: %d '%s'", during.status,
                  h_esc_str(during.body));
    ck_assert_msg(saw_200, "after SIGCONT: %d '%s'", after.status, h_esc_str(after.body));
    ck_assert_int_eq(lc_count(px.log, "reloaded"), 1);
    h_proxy_stop(&px);
}
END_TEST

/* ---------- /metrics ---------- */

/* Sends bytes on fd and reads n complete replies; returns the bytes read. */
static size_t raw_exchange(int fd, const char *bytes, int n, char *out, size_t size)
{
    size_t got = 0, at = 0;
    int replies = 0;
    long long deadline = h_now_ms() + H_IO_TIMEOUT_S * 1000;

    h_raw_sends(fd, bytes);
    while (replies < n) {
        size_t one = h_resp_complete(out + at, got - at);
        if (one > 0) {
            at += one;
            replies++;
            continue;
        }
        ck_assert_msg(h_now_ms() < deadline, "only %d of %d replies", replies, n);
        got += h_raw_recv(fd, out + got, size - got, NULL, 200, NULL);
    }
    ck_assert_msg(at == got, "more bytes than %d replies: '%s'", n, h_esc(out, got));
    return got;
}

struct counts {
    long long set_calls, get_calls, get_errors, incr_calls, incr_errors, set_count;
    long long commands, unknown, accepted, connected, bytes_in, bytes_out, inf_set;
    long long reads_master, reads_replica;
};

static void read_counts(const char *text, struct counts *c)
{
    c->set_calls = metric(text, "tagproxy_command_calls_total{cmd=\"set\"}");
    c->get_calls = metric(text, "tagproxy_command_calls_total{cmd=\"get\"}");
    c->get_errors = metric(text, "tagproxy_command_errors_total{cmd=\"get\"}");
    c->incr_calls = metric(text, "tagproxy_command_calls_total{cmd=\"incr\"}");
    c->incr_errors = metric(text, "tagproxy_command_errors_total{cmd=\"incr\"}");
    c->set_count = metric(text, "tagproxy_command_duration_seconds_count{cmd=\"set\"}");
    c->inf_set = metric(text, "tagproxy_command_duration_seconds_bucket{cmd=\"set\",le=\"+Inf\"}");
    c->commands = metric(text, "tagproxy_commands_total");
    c->unknown = metric(text, "tagproxy_commands_unknown_total");
    c->accepted = metric(text, "tagproxy_clients_accepted_total");
    c->connected = metric(text, "tagproxy_clients_connected");
    c->bytes_in = metric(text, "tagproxy_client_bytes_received_total");
    c->bytes_out = metric(text, "tagproxy_client_bytes_sent_total");
    c->reads_master = metric(text, "tagproxy_reads_master_total");
    c->reads_replica = metric(text, "tagproxy_reads_replica_total");
}

/*
 * Scrapes once no client is connected. Bytes are counted right after the
 * write() or read() that moved them, so a peer may see them before the
 * counter does; the proxy sees a client's close only after it has written
 * and counted that client's replies, so with no client left nothing is
 * still to be counted. The scrape returned is one taken after a scrape
 * that saw no client.
 */
static void scrape_quiet(const struct h_node *admin, struct http_reply *rep, struct counts *c)
{
    long long t0 = h_now_ms();
    for (;;) {
        scrape(admin, rep);
        read_counts(rep->body, c);
        if (c->connected == 0)
            break;
        ck_assert_msg(h_now_ms() - t0 < 5000, "%lld clients still connected", c->connected);
        h_sleep_ms(20);
    }
    scrape(admin, rep);
    read_counts(rep->body, c);
}

/*
 * The scrape follows Prometheus's conventions, as `promtool check metrics`
 * (Debian's prometheus package, installed by make deps) reads them, and
 * holds the build info and the process_* family with figures that can be
 * this process's.
 */
START_TEST(test_metrics_conventions)
{
    static struct http_reply rep;
    struct admin_proxy a;
    char path[512], out[8192], want[128];
    admin_proxy_start(&a, "5000", "0");
    scrape(&a.admin, &rep);
    H_FMT(want, sizeof want, "\ntagproxy_build_info{version=\"%s\",revision=\"",
          TAGPROXY_VERSION);
    ck_assert_msg(strstr(rep.body, want), "no %s in:\n%.2000s", want + 1, rep.body);
    ck_assert_msg(metric(rep.body, "process_resident_memory_bytes") > 1000000 &&
                  metric(rep.body, "process_virtual_memory_bytes") >
                  metric(rep.body, "process_resident_memory_bytes"), "memory figures");
    ck_assert_msg(metric(rep.body, "process_open_fds") > 3 &&
                  metric(rep.body, "process_max_fds") >= metric(rep.body, "process_open_fds"),
                  "fd figures");
    long long started = metric(rep.body, "process_start_time_seconds"), now = time(NULL);
    ck_assert_msg(started > now - 600 && started <= now, "started %lld, now %lld", started, now);
    ck_assert_msg(metric(rep.body, "process_cpu_seconds_total") >= 0, "no CPU seconds");
    ck_assert_msg(metric(rep.body, "tagproxy_config_reloads_total{result=\"applied\"}") == 0 &&
                  metric(rep.body, "tagproxy_auth_failures_total") == 0, "event counters");
    H_FMT(path, sizeof path, "%s/metrics-%ld.txt", h_env("TAGPROXY_TEST_DIR"), (long)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(rep.body, f);
    fclose(f);
    int rc = h_shell(out, sizeof out, "promtool check metrics < '%s' 2>&1", path);
    unlink(path);
    ck_assert_msg(rc == 0 && out[0] == '\0', "promtool check metrics (exit %d):\n%s", rc, out);
    h_proxy_stop(&a.px);
}
END_TEST

/* A counter absent before (never counted) is 0. */
static long long delta(long long after, long long before)
{
    return after - (before < 0 ? 0 : before);
}

START_TEST(test_metrics_move_with_traffic)
{
    static struct http_reply before_rep, after_rep;
    static char out[65536], cmds[16384];
    struct admin_proxy a;
    struct counts b, c;
    struct h_topo t;
    const char *k = h_prefix();
    size_t sent = 0, got;
    int fd, n = 0;

    h_topo_load(&t);
    admin_proxy_start(&a, "5000", "0");
    scrape_quiet(&a.admin, &before_rep, &b);     /* the start's PING client is gone */

    /* 7 SET, 5 GET (one of them on a list: WRONGTYPE), 2 INCR (one fails),
     * 1 unknown command, pipelined in one write */
    for (int i = 0; i < 7; i++)
        sent += (size_t)snprintf(cmds + sent, sizeof(cmds) - sent,
                                 "*3\r\n$3\r\nSET\r\n$%zu\r\n%s:%d\r\n$1\r\nv\r\n",
                                 strlen(k) + 2, k, i);
    n += 7;
    for (int i = 0; i < 4; i++)
        sent += (size_t)snprintf(cmds + sent, sizeof(cmds) - sent,
                                 "*2\r\n$3\r\nget\r\n$%zu\r\n%s:%d\r\n", strlen(k) + 2, k, i);
    n += 4;
    sent += (size_t)snprintf(cmds + sent, sizeof(cmds) - sent,
                             "*3\r\n$5\r\nRPUSH\r\n$%zu\r\n%s:l\r\n$1\r\nx\r\n"
                             "*2\r\n$3\r\nGET\r\n$%zu\r\n%s:l\r\n"
                             "*2\r\n$4\r\nINCR\r\n$%zu\r\n%s:n\r\n"
                             "*2\r\n$4\r\nINCR\r\n$%zu\r\n%s:0\r\n"
                             "*1\r\n$9\r\nNOSUCHCMD\r\n",
                             strlen(k) + 2, k, strlen(k) + 2, k, strlen(k) + 2, k,
                             strlen(k) + 2, k);
    n += 5;
    fd = h_raw_connect(&a.px.addr);
    got = raw_exchange(fd, cmds, n, out, sizeof(out));
    ck_assert_msg(strstr(out, "-WRONGTYPE") != NULL && strstr(out, "-ERR value is not") != NULL
                  && strstr(out, "-ERR unknown command 'NOSUCHCMD'") != NULL,
                  "replies: '%s'", h_esc(out, got));

    scrape(&a.admin, &after_rep);
    read_counts(after_rep.body, &c);
    ck_assert_int_eq(c.connected, 1);
    ck_assert_msg(metric(after_rep.body, "tagproxy_node_connections{state=\"ready\"}") >= 1,
                  "no node connection ready after traffic");
    /* the 15 known commands reached the masters in 1 to 15 batches */
    long long batches = metric(after_rep.body, "tagproxy_node_batches_total") -
                        metric(before_rep.body, "tagproxy_node_batches_total");
    ck_assert_msg(batches >= 1 && batches <= n - 1, "%lld node batches for %d commands",
                  batches, n - 1);
    ck_assert_msg(metric(after_rep.body, "tagproxy_round_pauses_total") >= 0,
                  "no tagproxy_round_pauses_total");
    check_io_batches(before_rep.body, after_rep.body);
    close(fd);
    scrape_quiet(&a.admin, &after_rep, &c);
    ck_assert_int_eq(delta(c.set_calls, b.set_calls), 7);
    ck_assert_int_eq(delta(c.set_count, b.set_count), 7);
    ck_assert_int_eq(delta(c.inf_set, b.inf_set), 7);
    ck_assert_int_eq(delta(c.get_calls, b.get_calls), 5);
    ck_assert_int_eq(delta(c.get_errors, b.get_errors), 1);
    /* read-from master: the reads by the role of their node */
    ck_assert_int_eq(delta(c.reads_master, b.reads_master), 5);
    ck_assert_int_eq(delta(c.reads_replica, b.reads_replica), 0);
    ck_assert_int_eq(delta(c.incr_calls, b.incr_calls), 2);
    ck_assert_int_eq(delta(c.incr_errors, b.incr_errors), 1);
    ck_assert_int_eq(delta(c.commands, b.commands), n);
    ck_assert_int_eq(delta(c.unknown, b.unknown), 1);
    ck_assert_int_eq(delta(c.accepted, b.accepted), 1);
    ck_assert_msg(delta(c.bytes_in, b.bytes_in) == (long long)sent,
                  "bytes received: %lld, the test sent %zu", delta(c.bytes_in, b.bytes_in), sent);
    ck_assert_msg(delta(c.bytes_out, b.bytes_out) == (long long)got,
                  "bytes sent: %lld, the test read %zu", delta(c.bytes_out, b.bytes_out), got);
    /* the histogram's buckets are cumulative and end at the count */
    {
        long long prev = 0;
        const char *p = after_rep.body, *name = "tagproxy_command_duration_seconds_bucket{cmd=\"set\",le=\"";
        int buckets = 0;
        while ((p = strstr(p, name)) != NULL) {
            const char *v = strstr(p, "} ");
            long long cur = atoll(v + 2);
            ck_assert_msg(cur >= prev, "bucket counts go down: %lld then %lld", prev, cur);
            prev = cur;
            buckets++;
            p = v;
        }
        ck_assert_int_ge(buckets, 2);
        ck_assert_int_eq(prev, c.set_count);
    }
    /* every master probed and up; the map covers every slot */
    ck_assert_int_eq(metric(after_rep.body, "tagproxy_masters"), t.nmasters);
    ck_assert_int_eq(metric(after_rep.body, "tagproxy_slots_covered"), H_SLOTS);
    for (int i = 0; i < t.nmasters; i++) {
        char series[160];
        H_FMT(series, sizeof(series), "tagproxy_master_up{master=\"%s:%d\"}", t.masters[i].host,
              t.masters[i].port);
        long long up = metric(after_rep.body, series);
        for (long long t0 = h_now_ms(); up != 1 && h_now_ms() - t0 < STATE_WITHIN_MS;) {
            h_sleep_ms(100);
            scrape(&a.admin, &after_rep);
            up = metric(after_rep.body, series);
        }
        ck_assert_msg(up == 1, "%s is %lld", series, up);
    }
    ck_assert_msg(strstr(after_rep.body, "# TYPE tagproxy_command_duration_seconds histogram\n"),
                  "no histogram TYPE line");
    h_proxy_stop(&a.px);
}
END_TEST

/* Index-sync scripts and listings from the indexes (proxy/families/index.h) count
 * once per wrapped write and once per listing; plain reads count neither. */
START_TEST(test_index_counters)
{
    static struct http_reply rep;
    static char listen[64], prefix[64];
    struct h_proxy px;
    struct h_node admin = { "127.0.0.1", 0 };
    struct counts q;
    redisContext *c;
    redisReply *r;
    long long syncs, fanouts;

    admin.port = h_free_port();
    H_FMT(listen, sizeof(listen), "127.0.0.1:%d", admin.port);
    H_FMT(prefix, sizeof(prefix), "ad%ld%lld", (long)getpid(), h_now_ms() % 1000000);
    const char *args[] = { "--admin-listen", listen, "--layout-rules",
                           "conf/layouts/botmesh-v1.rules", "--layout-prefix", prefix, NULL };
    h_proxy_start(&px, args);
    scrape_quiet(&admin, &rep, &q);
    syncs = metric(rep.body, "tagproxy_index_sync_scripts_total");
    fanouts = metric(rep.body, "tagproxy_listing_fanouts_total");
    ck_assert_msg(syncs >= 0 && fanouts >= 0, "no index counters: '%s'", h_esc_str(rep.body));

    c = h_connect_extra(&px);
    H_OK(c, "SET %s:chat:a 1", prefix);
    H_OK(c, "SET %s:chat:b 2", prefix);
    r = h_cmd(c, "GET %s:chat:a", prefix);
    H_EXPECT_BULK(r, "1");
    freeReplyObject(r);
    r = h_cmd(c, "KEYS %s:chat:*", prefix);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 2);
    freeReplyObject(r);
    r = h_cmd(c, "SCAN 0 MATCH %s:chat:*", prefix);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    scrape(&admin, &rep);
    ck_assert_int_eq(metric(rep.body, "tagproxy_index_sync_scripts_total") - syncs, 2);
    ck_assert_int_eq(metric(rep.body, "tagproxy_listing_fanouts_total") - fanouts, 2);
    r = h_cmd(c, "DEL %s:chat:a %s:chat:b", prefix, prefix);
    H_EXPECT_INT(r, 2);
    freeReplyObject(r);
    redisFree(c);
    h_proxy_stop(&px);
}
END_TEST

/* ---------- INFO ---------- */

static redisReply *info(redisContext *c, const char *section)
{
    redisReply *r = section ? h_cmd(c, "INFO %s", section) : h_cmd(c, "INFO");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    return r;
}

START_TEST(test_info_sections)
{
    struct admin_proxy a;
    struct h_topo t;
    redisContext *c;
    redisReply *r, *r2;
    char key[128];
    long long before, after, calls_before;

    h_topo_load(&t);
    admin_proxy_start(&a, "5000", "0");
    c = h_connect_extra(&a.px);

    /* INFO proxy: that section only, every figure there */
    r = info(c, "proxy");
    ck_assert_msg(strncmp(r->str, "# Proxy\r\n", 9) == 0 && strstr(r->str, "# Nodes") == NULL &&
                  strstr(r->str, "# Keyspace") == NULL && strstr(r->str, "# Server") == NULL,
                  "INFO proxy: '%s'", h_esc(r->str, r->len));
    static const char *fields[] = {
        "clients_connected", "clients_refused", "commands", "command_errors",
        "redirects_moved", "redirects_ask", "retries", "retries_exhausted", "lost_replies",
        "replica_acks_waits", "replica_acks_short",
        "client_bytes_received", "client_bytes_sent", "index_sync_scripts", "listing_fanouts",
    };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        ck_assert_msg(info_field(r->str, fields[i]) >= 0, "INFO proxy without %s", fields[i]);
    freeReplyObject(r);
    /* this client only, once the proxy has seen the start's PING client go */
    for (long long t0 = h_now_ms();; h_sleep_ms(20)) {
        r = info(c, "proxy");
        if (info_field(r->str, "clients_connected") == 1 || h_now_ms() - t0 > 5000)
            break;
        freeReplyObject(r);
    }
    ck_assert_int_eq(info_field(r->str, "clients_connected"), 1);
    before = info_field(r->str, "commands");
    freeReplyObject(r);

    /* counts move by exactly what was sent (the second INFO counts itself) */
    H_FMT(key, sizeof(key), "%s:info", h_prefix());
    r = info(c, "commandstats");
    calls_before = 0;
    if (strstr(r->str, "cmdstat_set:calls=") != NULL)
        calls_before = atoll(strstr(r->str, "cmdstat_set:calls=") + 18);
    freeReplyObject(r);
    for (int i = 0; i < 3; i++)
        H_OK(c, "SET %s %d", key, i);
    r = info(c, "PROXY");       /* section names are case-insensitive */
    after = info_field(r->str, "commands");
    freeReplyObject(r);
    ck_assert_msg(after - before == 1 + 3 + 1, "commands went from %lld to %lld", before, after);
    r = info(c, "commandstats");
    ck_assert_msg(strncmp(r->str, "# Commandstats\r\n", 16) == 0, "'%s'", h_esc(r->str, r->len));
    ck_assert_msg(strstr(r->str, "cmdstat_set:calls=") != NULL, "'%s'", h_esc(r->str, r->len));
    ck_assert_int_eq(atoll(strstr(r->str, "cmdstat_set:calls=") + 18) - calls_before, 3);
    ck_assert_msg(strstr(r->str, "cmdstat_info:calls=") != NULL, "'%s'", h_esc(r->str, r->len));
    freeReplyObject(r);

    /* INFO nodes: every master of the map, with its slots, state and replicas */
    r = info(c, "nodes");
    ck_assert_msg(strncmp(r->str, "# Nodes\r\n", 9) == 0 && strstr(r->str, "# Proxy") == NULL,
                  "INFO nodes: '%s'", h_esc(r->str, r->len));
    ck_assert_int_eq(info_field(r->str, "masters"), t.nmasters);
    ck_assert_int_eq(info_field(r->str, "slots_covered"), H_SLOTS);
    ck_assert_int_ge(info_field(r->str, "node_connections_ready"), 1);
    for (int i = 0; i < t.nmasters; i++) {
        char want[160];
        int slots = 0;
        for (int k = 0; k < t.nranges; k++)
            if (t.r[k].master == i)
                slots += t.r[k].end - t.r[k].start + 1;
        H_FMT(want, sizeof(want), "addr=%s:%d,slots=%d,state=up,replicas=%d",
              t.masters[i].host, t.masters[i].port, slots, replicas_listed(&t.masters[i]));
        for (long long t0 = h_now_ms(); !strstr(r->str, want) && h_now_ms() - t0 < STATE_WITHIN_MS;) {
            freeReplyObject(r);
            h_sleep_ms(100);
            r = info(c, "nodes");
        }
        ck_assert_msg(strstr(r->str, want) != NULL, "INFO nodes without '%s': '%s'", want,
                      h_esc(r->str, r->len));
    }
    freeReplyObject(r);

    /* the default INFO has them too, with the keyspace; "all" adds commandstats */
    r = info(c, NULL);
    ck_assert_msg(strstr(r->str, "# Proxy\r\n") && strstr(r->str, "# Nodes\r\n") &&
                  strstr(r->str, "# Keyspace\r\n") && !strstr(r->str, "# Commandstats"),
                  "INFO: '%s'", h_esc(r->str, r->len));
    r2 = info(c, "all");
    ck_assert_msg(strstr(r2->str, "# Proxy\r\n") && strstr(r2->str, "# Commandstats\r\n"),
                  "INFO all: '%s'", h_esc(r2->str, r2->len));
    freeReplyObject(r);
    freeReplyObject(r2);
    r = h_cmd(c, "INFO proxy nodes");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    ck_assert_msg(strstr(r->str, "# Proxy\r\n") && strstr(r->str, "# Nodes\r\n") &&
                  !strstr(r->str, "# Server"), "INFO proxy nodes: '%s'", h_esc(r->str, r->len));
    freeReplyObject(r);
    r = h_cmd(c, "DEL %s", key);
    freeReplyObject(r);
    redisFree(c);
    h_proxy_stop(&a.px);
}
END_TEST

/* ---------- start-up ---------- */

START_TEST(test_admin_port_taken_stops_the_start)
{
    struct h_proxy p;
    struct sockaddr_in sa;
    char taken[64], seed[128], log[8192] = "";
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1, status = 0;
    socklen_t len = sizeof(sa);
    FILE *f;

    /* hold a port */
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, 1), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(taken, sizeof(taken), "127.0.0.1:%d", ntohs(sa.sin_port));

    h_proxy_place(&p);
    snprintf(p.log, sizeof(p.log), "%s/proxy-admin-taken-%d.log", h_env("TAGPROXY_TEST_DIR"),
             p.addr.port);
    h_seed(seed, sizeof(seed));
    {
        const char *args[] = { "--admin-listen", taken, NULL };
        h_proxy_launch(&p, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    }
    for (long long t0 = h_now_ms(); waitpid(p.pid, &status, WNOHANG) == 0;) {
        if (h_now_ms() - t0 > 10000) {
            kill(p.pid, SIGKILL);
            waitpid(p.pid, &status, 0);
            ck_abort_msg("the proxy runs with its admin port taken");
        }
        h_sleep_ms(20);
    }
    close(fd);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0, "exit status %d", status);
    f = fopen(p.log, "r");
    ck_assert_ptr_nonnull(f);
    log[fread(log, 1, sizeof(log) - 1, f)] = '\0';
    fclose(f);
    ck_assert_msg(strstr(log, "admin-listen") != NULL && strstr(log, taken) != NULL,
                  "the message does not name admin-listen %s: '%s'", taken, log);
}
END_TEST

static Suite *admin_suite(void)
{
    Suite *s = suite_create("admin");
    TCase *tc = tcase_create("admin");

    tcase_set_timeout(tc, 60);
    tcase_add_unchecked_fixture(tc, NULL, h_thaw_all_nodes);
    tcase_add_test(tc, test_healthz_and_unknown_paths);
    tcase_add_test(tc, test_metrics_move_with_traffic);
    tcase_add_test(tc, test_metrics_conventions);
    tcase_add_test(tc, test_info_sections);
    tcase_add_test(tc, test_index_counters);
    tcase_add_test(tc, test_readyz_while_a_master_is_stopped);
    tcase_add_test(tc, test_readyz_during_a_drain);
    tcase_add_test(tc, test_readyz_follows_a_reloaded_node_timeout);
    tcase_add_test(tc, test_admin_port_taken_stops_the_start);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(admin_suite());
}
