/*
 * The proxy's cluster-side directives against scripted fake nodes
 * (fakenode.h): address-map, cluster-user and cluster-password, and the
 * order in which seeds are tried (and which answer wins).
 *
 * Each test starts its own fake node(s) and its own proxy (TAGPROXY_TEST_BIN,
 * else ./build/tagproxy); teardown stops both. A proxy that must refuse to
 * start is waited for and its exit status and output (stdout and stderr, in
 * one log) are checked. Logs go to TAGPROXY_TEST_DIR if set, else to a
 * temporary folder removed at the end; on failure their tails are printed.
 *
 * Announced names end in ".invalid" (RFC 2606): they can never resolve, so
 * only address-map can make them reachable.
 *
 * The fake nodes answer GET, whatever the key, with their own name ("A", "B").
 * A node with a login (g_password) answers as Redis does: -NOAUTH to anything
 * before a successful AUTH on the connection, -WRONGPASS to a wrong AUTH.
 */
#include "harness.h"
#include "fakenode.h"

#define PASSWORD       "s3cret"
#define WRONG_PASSWORD "wr0ng-pw"
#define USER           "bot"
#define NOAUTH_MSG     "NOAUTH Authentication required."
#define WRONGPASS_MSG  "WRONGPASS invalid username-password pair or user is disabled."
#define REFUSE_MS      15000    /* a proxy that must refuse has this long to exit */

/* Everything a test runs; teardown stops whatever is running. */
static struct {
    struct fake_node a, b, trap;
    struct h_proxy proxy;
} W;

/* The login the fake nodes require; set before their threads start. */
static const char *g_user;         /* NULL: "AUTH password" */
static const char *g_password;     /* NULL: no login required */

/* ---------- the fake nodes ---------- */

/* GET anything: the node's name. */
static int script_name(struct fn_conn *c, const char *key, size_t len)
{
    char name[2] = { c->f->name, '\0' };
    (void)key;
    (void)len;
    return fn_write_bulk(c, name);
}

static int auth_matches(const struct fn_conn *c)
{
    if (g_user == NULL)
        return c->argc == 2 && strcmp(c->argv[1], g_password) == 0;
    return c->argc == 3 && strcmp(c->argv[1], g_user) == 0 && strcmp(c->argv[2], g_password) == 0;
}

/* A node with a login: filter_state is 1 once AUTH succeeded. */
static int auth_filter(struct fn_conn *c, int *rc)
{
    if (strcasecmp(c->argv[0], "AUTH") == 0) {
        int ok = auth_matches(c);
        if (ok)
            c->filter_state = 1;
        *rc = fn_writes(c, ok ? "+OK\r\n" : "-" WRONGPASS_MSG "\r\n");
        return 1;
    }
    if (!c->filter_state) {
        *rc = fn_writes(c, "-" NOAUTH_MSG "\r\n");
        return 1;
    }
    return 0;
}

/*
 * A node on which AUTH is renamed away answers it as Redis 7 answers an
 * unknown command: quoting the password. The first g_quoting_after logins
 * succeed (so the proxy can start), the later ones get that answer.
 */
static int g_quoting_after = -1;   /* -1: off */
static int g_logins;

static int quoting_filter(struct fn_conn *c, int *rc)
{
    if (strcasecmp(c->argv[0], "AUTH") == 0) {
        char msg[256];
        if (__atomic_fetch_add(&g_logins, 1, __ATOMIC_SEQ_CST) < g_quoting_after) {
            c->filter_state = 1;
            *rc = fn_writes(c, "+OK\r\n");
            return 1;
        }
        snprintf(msg, sizeof msg, "-ERR unknown command 'AUTH', with args beginning with: '%s' \r\n",
                 c->argc > 1 ? c->argv[c->argc - 1] : "");
        *rc = fn_writes(c, msg);
        return 1;
    }
    if (!c->filter_state) {
        *rc = fn_writes(c, "-" NOAUTH_MSG "\r\n");
        return 1;
    }
    return 0;
}

/* A fake node serving script_name; with g_password set, it requires a login. */
static void node_start(struct fake_node *f, char name)
{
    fn_start(f, name, script_name, 0);
    if (g_password != NULL)
        f->filter = g_quoting_after >= 0 ? quoting_filter : auth_filter;
}

struct announced {
    int start, end;         /* slots, inclusive */
    const char *host;       /* as the node announces its master */
    int port;
};

/* CLUSTER SLOTS as fn_set_slots() shapes it, with each master's host given. */
static void set_slots_announced(struct fake_node *f, int n, const struct announced *r)
{
    char buf[sizeof(f->slots)];
    size_t len = (size_t)snprintf(buf, sizeof(buf), "*%d\r\n", n);

    for (int i = 0; i < n; i++) {
        ck_assert_msg(len < sizeof(buf), "CLUSTER SLOTS reply too long");
        len += (size_t)snprintf(buf + len, sizeof(buf) - len,
                                "*3\r\n:%d\r\n:%d\r\n*4\r\n$%zu\r\n%s\r\n:%d\r\n$40\r\n%040d\r\n*0\r\n",
                                r[i].start, r[i].end, strlen(r[i].host), r[i].host,
                                r[i].port, r[i].port);
    }
    ck_assert_msg(len < sizeof(buf), "CLUSTER SLOTS reply too long");
    pthread_mutex_lock(&f->mu);
    memcpy(f->slots, buf, len);
    f->slots_len = len;
    pthread_mutex_unlock(&f->mu);
}

/* Node A owning every slot, announced as host:<its port>. */
static void world_single(const char *host)
{
    struct announced all = { 0, H_SLOTS - 1, host, 0 };

    node_start(&W.a, 'A');
    all.port = W.a.port;
    set_slots_announced(&W.a, 1, &all);
}

/* Nodes A (slots below 8192) and B (the rest), announced as ha and hb; both
 * answer CLUSTER SLOTS alike. */
static void world_pair(const char *ha, const char *hb)
{
    struct announced r[2] = {
        { 0, H_SLOTS / 2 - 1, ha, 0 },
        { H_SLOTS / 2, H_SLOTS - 1, hb, 0 },
    };

    node_start(&W.a, 'A');
    node_start(&W.b, 'B');
    r[0].port = W.a.port;
    r[1].port = W.b.port;
    set_slots_announced(&W.a, 2, r);
    set_slots_announced(&W.b, 2, r);
}

/* Whether every connection f accepted began with the request first, and how
 * many did. Call once the peer has closed them all (no request in flight). */
static int conns_begin_with(struct fake_node *f, const char *first, int *nconns)
{
    int ok = 1, n;

    pthread_mutex_lock(&f->mu);
    n = f->accepted;
    for (int id = 1; id <= n; id++) {
        const char *seen = "(nothing)";
        for (int i = 0; i < f->nlog; i++)
            if (f->log[i].conn == id) {
                seen = f->log[i].cmd;
                break;
            }
        if (strcmp(seen, first) != 0) {
            fprintf(stderr, "fake node %c: connection %d began with '%s', not '%s'\n",
                    f->name, id, seen, first);
            ok = 0;
        }
    }
    pthread_mutex_unlock(&f->mu);
    *nconns = n;
    return ok;
}

/* ---------- the proxy ---------- */

/* The whole of a (small) file into buf, NUL-terminated. */
static void read_log(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    size_t n;

    ck_assert_msg(f != NULL, "cannot open %s: %s", path, strerror(errno));
    n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* fn_proxy_spawn(), then wait for it to exit, as it must: its output into log,
 * returns its exit status. Fails the test if it serves or outlives REFUSE_MS. */
static int proxy_refused(const char *name, const char *const *args, char *log, size_t size)
{
    struct h_proxy *p = &W.proxy;
    long long deadline;
    int status = 0;

    /* the start that refuses: by default the proxy waits for the cluster */
    setenv("TAGPROXY_CLUSTER_WAIT_AT_START", "no", 1);
    fn_proxy_spawn(p, name, 0, args);
    unsetenv("TAGPROXY_CLUSTER_WAIT_AT_START");
    deadline = h_now_ms() + REFUSE_MS;
    while (waitpid(p->pid, &status, WNOHANG) != p->pid) {
        ck_assert_msg(!h_pings(p->addr.host, p->addr.port), "proxy (%s) serves; it should refuse to start",
                      name);
        ck_assert_msg(h_now_ms() < deadline, "proxy (%s) still runs after %d ms; it should refuse to start",
                      name, REFUSE_MS);
        h_sleep_ms(20);
    }
    p->pid = 0;
    read_log(p->log, log, size);
    ck_assert_msg(WIFEXITED(status), "proxy (%s) did not exit but died of signal %d", name,
                  WTERMSIG(status));
    return WEXITSTATUS(status);
}

/* Stops the proxy, then waits until the fake node has read everything it
 * sent and seen each of its connections close. */
static void proxy_stop_and_drain(struct fake_node *f)
{
    long long deadline = h_now_ms() + 5000;

    h_proxy_stop(&W.proxy);
    while (fn_peer_closed(f) < fn_accepted(f) && h_now_ms() < deadline)
        h_sleep_ms(10);
    ck_assert_msg(fn_peer_closed(f) >= fn_accepted(f),
                  "fake node %c: %d connections accepted, only %d closed by the proxy",
                  f->name, fn_accepted(f), fn_peer_closed(f));
}

static void teardown(void)
{
    h_proxy_stop(&W.proxy);
    fn_stop(&W.a);
    fn_stop(&W.b);
    fn_stop(&W.trap);
    g_user = g_password = NULL;
    g_quoting_after = -1;
    g_logins = 0;
}

/* GET key through the proxy answers bulk want. */
static void expect_get(const char *key, const char *want)
{
    redisContext *c = h_connect_node(&W.proxy.addr);
    redisReply *r = h_cmd(c, "GET %s", key);
    H_EXPECT_BULK(r, want);
    freeReplyObject(r);
    redisFree(c);
}

static void expect_log_has(const char *log, const char *what, const char *why)
{
    ck_assert_msg(strstr(log, what) != NULL, "%s: the proxy's output does not contain '%s':\n%s",
                  why, what, log);
}

static void expect_log_lacks(const char *path, const char *secret)
{
    char log[65536];
    read_log(path, log, sizeof(log));
    ck_assert_msg(strstr(log, secret) == NULL, "the proxy's log shows the password '%s':\n%s",
                  secret, log);
}

/* A key whose slot is in [lo, hi]. */
static void key_in_slots(int lo, int hi, char *buf, size_t size)
{
    for (int i = 0; i < 100000; i++) {
        int s;
        snprintf(buf, size, "key:%d", i);
        s = h_slot(buf);
        if (s >= lo && s <= hi)
            return;
    }
    ck_abort_msg("no key found for slots %d-%d", lo, hi);
}

/* ---------- 1. address-map ---------- */

/* Announced as node-a.invalid:P, reached as 127.0.0.1:P through the map. */
START_TEST(test_address_map_one_node)
{
    char seed[64], from[64], to[64];

    world_single("node-a.invalid");
    snprintf(seed, sizeof(seed), "127.0.0.1:%d", W.a.port);
    snprintf(from, sizeof(from), "node-a.invalid:%d", W.a.port);
    snprintf(to, sizeof(to), "127.0.0.1:%d", W.a.port);
    {
        const char *const args[] = { "--cluster", seed, "--address-map", from, to, NULL };
        fn_proxy_start(&W.proxy, "map-one", 0, args);
    }
    expect_get("k", "A");
    ck_assert_int_eq(fn_count(&W.a, "GET k"), 1);
}
END_TEST

/* Without the map the announced name cannot be reached: no start, and the
 * message says which address was the problem. */
START_TEST(test_address_map_missing_refuses)
{
    char seed[64], log[8192];
    int rc;

    world_single("node-a.invalid");
    snprintf(seed, sizeof(seed), "127.0.0.1:%d", W.a.port);
    {
        const char *const args[] = { "--cluster", seed, NULL };
        rc = proxy_refused("map-missing", args, log, sizeof(log));
    }
    ck_assert_msg(rc == 1, "exit status %d, want 1; output:\n%s", rc, log);
    expect_log_has(log, "node-a.invalid", "the unreachable announced address is not named");
    ck_assert_int_ge(fn_count(&W.a, "CLUSTER SLOTS"), 1);
}
END_TEST

/* Two masters announced by name, each mapped: a key on each is served by
 * its own node. how: "one" gives both pairs to one --address-map, "two"
 * gives --address-map twice. */
static void address_map_pair(const char *how)
{
    char seed[64], from_a[64], to_a[64], from_b[64], to_b[64], ka[32], kb[32];
    char cmd[64];

    world_pair("node-a.invalid", "node-b.invalid");
    snprintf(seed, sizeof(seed), "127.0.0.1:%d", W.a.port);
    snprintf(from_a, sizeof(from_a), "node-a.invalid:%d", W.a.port);
    snprintf(to_a, sizeof(to_a), "127.0.0.1:%d", W.a.port);
    snprintf(from_b, sizeof(from_b), "node-b.invalid:%d", W.b.port);
    snprintf(to_b, sizeof(to_b), "127.0.0.1:%d", W.b.port);
    if (strcmp(how, "one") == 0) {
        const char *const args[] = { "--cluster", seed,
                                     "--address-map", from_a, to_a, from_b, to_b, NULL };
        fn_proxy_start(&W.proxy, "map-pair-one", 0, args);
    } else {
        const char *const args[] = { "--cluster", seed, "--address-map", from_a, to_a,
                                     "--address-map", from_b, to_b, NULL };
        fn_proxy_start(&W.proxy, "map-pair-two", 0, args);
    }
    key_in_slots(0, H_SLOTS / 2 - 1, ka, sizeof(ka));
    key_in_slots(H_SLOTS / 2, H_SLOTS - 1, kb, sizeof(kb));
    expect_get(ka, "A");
    expect_get(kb, "B");
    snprintf(cmd, sizeof(cmd), "GET %s", ka);
    ck_assert_int_eq(fn_count(&W.a, cmd), 1);
    snprintf(cmd, sizeof(cmd), "GET %s", kb);
    ck_assert_int_eq(fn_count(&W.b, cmd), 1);
}

START_TEST(test_address_map_two_nodes_one_directive)
{
    address_map_pair("one");
}
END_TEST

START_TEST(test_address_map_two_nodes_two_directives)
{
    address_map_pair("two");
}
END_TEST

/* A map for A but not for B: B is left out, its name in the log and its
 * slots unserved (CLUSTERDOWN), while A's keys are served. */
START_TEST(test_address_map_partial_serves_the_rest)
{
    char seed[64], from_a[64], to_a[64], log[8192];

    world_pair("node-a.invalid", "node-b.invalid");
    snprintf(seed, sizeof(seed), "127.0.0.1:%d", W.a.port);
    snprintf(from_a, sizeof(from_a), "node-a.invalid:%d", W.a.port);
    snprintf(to_a, sizeof(to_a), "127.0.0.1:%d", W.a.port);
    {
        const char *const args[] = { "--cluster", seed, "--address-map", from_a, to_a, NULL };
        fn_proxy_start(&W.proxy, "map-partial", 0, args);
    }
    expect_get("k", "A");                       /* slot 7629: A's half */
    {
        redisContext *c = h_connect_node(&W.proxy.addr);
        redisReply *r = h_cmd(c, "GET a");      /* slot 15495: B's */
        H_EXPECT_ERR(r, "CLUSTERDOWN");
        freeReplyObject(r);
        redisFree(c);
    }
    read_log(W.proxy.log, log, sizeof log);
    expect_log_has(log, "node-b.invalid", "the unmapped announced address is not named");
    expect_log_has(log, "left out", "the log does not say the master is left out");
}
END_TEST

/* ---------- 2. cluster-user, cluster-password ---------- */

/*
 * A node with a login, and a proxy given it: GET is served, and every
 * connection the proxy opened (topology reads, the first and the refreshes,
 * and the worker's data connection) began with want_auth. The log, at debug
 * level, never shows the password.
 */
static void login_served(const char *name, const char *user, const char *want_auth)
{
    char seed[64], before[FN_LOG_CMD];
    int nconns;

    g_user = user;
    g_password = PASSWORD;
    world_single("127.0.0.1");
    snprintf(seed, sizeof(seed), "127.0.0.1:%d", W.a.port);
    {
        const char *const args[] = { "--cluster", seed, "--cluster-password", PASSWORD,
                                     "--cluster-user", user != NULL ? user : "",
                                     "--topology-refresh-ms", "100", "--log-level", "debug", NULL };
        fn_proxy_start(&W.proxy, name, 0, args);
    }
    expect_get("k", "A");
    /* a refresh or two, each on a connection of its own */
    for (long long end = h_now_ms() + 3000; fn_count(&W.a, "CLUSTER SLOTS") < 3 && h_now_ms() < end;)
        h_sleep_ms(20);
    ck_assert_int_ge(fn_count(&W.a, "CLUSTER SLOTS"), 3);
    expect_get("k2", "A");

    proxy_stop_and_drain(&W.a);
    if (!conns_begin_with(&W.a, want_auth, &nconns))
        fn_dump_log(&W.a);
    ck_assert_msg(conns_begin_with(&W.a, want_auth, &nconns),
                  "a connection to the node did not begin with '%s'", want_auth);
    ck_assert_msg(nconns >= 4, "%d connections; want the first topology read, 2 refreshes and "
                  "the data connection", nconns);
    fn_before_last(&W.a, "GET k2", before, sizeof(before));
    ck_assert_msg(strcmp(before, "GET k") == 0 || strcmp(before, want_auth) == 0,
                  "on its connection, GET k2 came after '%s'", before);
    expect_log_lacks(W.proxy.log, PASSWORD);
}

START_TEST(test_cluster_password)
{
    login_served("password", NULL, "AUTH " PASSWORD);
}
END_TEST

START_TEST(test_cluster_user_and_password)
{
    login_served("user", USER, "AUTH " USER " " PASSWORD);
}
END_TEST

/* A proxy seeded with node A (world_single) and given --cluster-password
 * password refuses to start: exit status 1, a message that says
 * authentication failed, and the password nowhere in its output. */
static void expect_auth_refusal(const char *name, const char *password)
{
    char seed[64], log[8192];
    int rc;

    world_single("127.0.0.1");
    snprintf(seed, sizeof(seed), "127.0.0.1:%d", W.a.port);
    {
        const char *const args[] = { "--cluster", seed, "--cluster-password", password,
                                     "--log-level", "debug", NULL };
        rc = proxy_refused(name, args, log, sizeof(log));
    }
    ck_assert_msg(rc == 1, "exit status %d, want 1; output:\n%s", rc, log);
    expect_log_has(log, "authentication failed", "the refusal does not say why");
    ck_assert_msg(strstr(log, password) == NULL, "the proxy's output shows the password:\n%s", log);
}

/* A password the node refuses: no start, a message that says
 * authentication failed, and neither there nor anywhere in the output the
 * password given. Nothing is asked after the refused AUTH. */
START_TEST(test_cluster_password_wrong_refuses)
{
    g_password = PASSWORD;
    expect_auth_refusal("password-wrong", WRONG_PASSWORD);
    ck_assert_int_eq(fn_count(&W.a, "AUTH " WRONG_PASSWORD), 1);
    ck_assert_int_eq(fn_count(&W.a, "CLUSTER SLOTS"), 0);
}
END_TEST

/* Regression: a node's answer to AUTH was shown in the start-up error, and
 * it can quote the password ("unknown command 'AUTH', with args beginning
 * with: '<password>'"). */
START_TEST(test_cluster_auth_answer_quoting_password_at_start)
{
    g_password = PASSWORD;
    g_quoting_after = 0;
    expect_auth_refusal("password-quoted", PASSWORD);
}
END_TEST

/* Regression: the same answer on a data connection was put in the error
 * every waiting client got, and in the log. The command did not run, so it
 * is retried, then answered with an error that names no password. */
START_TEST(test_cluster_auth_answer_quoting_password_on_data)
{
    char seed[64];

    g_password = PASSWORD;
    g_quoting_after = 1;            /* the topology read logs in; nothing after */
    world_single("127.0.0.1");
    snprintf(seed, sizeof(seed), "127.0.0.1:%d", W.a.port);
    {
        const char *const args[] = { "--cluster", seed, "--cluster-password", PASSWORD,
                                     "--topology-refresh-ms", "0", "--retry-attempts", "2",
                                     "--retry-base-ms", "5", "--log-level", "debug", NULL };
        fn_proxy_start(&W.proxy, "password-quoted-data", 0, args);
    }
    redisContext *c = h_connect_node(&W.proxy.addr);
    redisReply *r = h_cmd(c, "GET k");
    ck_assert_msg(r->type == REDIS_REPLY_ERROR, "GET answered type %d, want an error", r->type);
    ck_assert_msg(strstr(r->str, PASSWORD) == NULL, "the client's error shows the password: %s", r->str);
    ck_assert_msg(strstr(r->str, "may have run") == NULL, "GET was never run, yet: %s", r->str);
    /* never more than the first try and both retries; the node may not log
     * a GET whose connection the proxy reset right after the refused AUTH */
    ck_assert_int_le(fn_count(&W.a, "GET k"), 3);
    freeReplyObject(r);
    redisFree(c);
    proxy_stop_and_drain(&W.a);
    expect_log_lacks(W.proxy.log, PASSWORD);
}
END_TEST

/* ---------- 3. seeds in order ---------- */

/* The first seed refuses connections; the second serves. */
START_TEST(test_seeds_first_closed)
{
    char closed[64], seed[64];

    world_single("127.0.0.1");
    snprintf(closed, sizeof(closed), "127.0.0.1:%d", h_free_port());
    snprintf(seed, sizeof(seed), "127.0.0.1:%d", W.a.port);
    {
        const char *const args[] = { "--cluster", closed, seed, NULL };
        fn_proxy_start(&W.proxy, "seeds-first-closed", 0, args);
    }
    expect_get("k", "A");
    ck_assert_int_ge(fn_count(&W.a, "CLUSTER SLOTS"), 1);
}
END_TEST

/* B answers CLUSTER SLOTS only after a while. */
static int slow_slots_filter(struct fn_conn *c, int *rc)
{
    (void)rc;
    if (strcasecmp(c->argv[0], "CLUSTER") == 0)
        fn_sleep(c->f, 300);
    return 0;
}

/* The first seed answers at once with a map that leaves B's half out (a
 * node that does not know B), the second later with the whole map: the
 * complete map wins, and B's keys are served. */
START_TEST(test_seeds_complete_map_wins)
{
    char seed_a[64], seed_b[64];
    struct announced half = { 0, H_SLOTS / 2 - 1, "127.0.0.1", 0 };

    world_pair("127.0.0.1", "127.0.0.1");
    half.port = W.a.port;
    set_slots_announced(&W.a, 1, &half);
    W.b.filter = slow_slots_filter;
    snprintf(seed_a, sizeof(seed_a), "127.0.0.1:%d", W.a.port);
    snprintf(seed_b, sizeof(seed_b), "127.0.0.1:%d", W.b.port);
    {
        const char *const args[] = { "--cluster", seed_a, seed_b, NULL };
        fn_proxy_start(&W.proxy, "seeds-complete-wins", 0, args);
    }
    expect_get("a", "B");                       /* slot 15495: B's half */
    expect_get("k", "A");                       /* slot 7629: A's */
}
END_TEST

/* No seed answers (one refuses connections, one closes each it accepts):
 * no start, and the message names each seed, in the order given. */
START_TEST(test_no_seed_answers)
{
    char closed[64], trap[64], log[8192];
    const char *at_closed, *at_trap;
    int rc;

    fn_start(&W.trap, 'T', NULL, 1);
    snprintf(closed, sizeof(closed), "127.0.0.1:%d", h_free_port());
    snprintf(trap, sizeof(trap), "127.0.0.1:%d", W.trap.port);
    {
        const char *const args[] = { "--cluster", closed, trap, NULL };
        rc = proxy_refused("no-seed", args, log, sizeof(log));
    }
    ck_assert_msg(rc == 1, "exit status %d, want 1; output:\n%s", rc, log);
    at_closed = strstr(log, closed);
    at_trap = strstr(log, trap);
    ck_assert_msg(at_closed != NULL && at_trap != NULL, "the message does not name both seeds (%s, %s):\n%s",
                  closed, trap, log);
    ck_assert_msg(at_closed < at_trap, "the seeds are not named in the order given:\n%s", log);
    ck_assert_int_ge(fn_accepted(&W.trap), 1);
}
END_TEST

/* ---------- running ---------- */

static Suite *config_suite(void)
{
    Suite *s = suite_create("fakenode_config");
    TCase *tc = tcase_create("fakenode_config");

    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_address_map_one_node);
    tcase_add_test(tc, test_address_map_missing_refuses);
    tcase_add_test(tc, test_address_map_two_nodes_one_directive);
    tcase_add_test(tc, test_address_map_two_nodes_two_directives);
    tcase_add_test(tc, test_address_map_partial_serves_the_rest);
    tcase_add_test(tc, test_cluster_password);
    tcase_add_test(tc, test_cluster_user_and_password);
    tcase_add_test(tc, test_cluster_password_wrong_refuses);
    tcase_add_test(tc, test_cluster_auth_answer_quoting_password_at_start);
    tcase_add_test(tc, test_cluster_auth_answer_quoting_password_on_data);
    tcase_add_test(tc, test_seeds_first_closed);
    tcase_add_test(tc, test_seeds_complete_map_wins);
    tcase_add_test(tc, test_no_seed_answers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return fn_main(config_suite, "config-", "fnconfig");
}
