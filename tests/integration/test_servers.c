/*
 * HELLO and INFO name the server the cluster runs, as that server names
 * itself: Redis 7.0 as redis and its version, Valkey 8 as valkey with its
 * own version (INFO: server_name, valkey_version, server_mode, and the
 * redis_version Valkey writes); a cluster of mixed versions as its oldest
 * master, through a rolling upgrade (a master restarted on the new binary
 * at a time) until every master runs the new one. A cluster of the test's
 * own, started with scripts/cluster.sh on redis-server or valkey-server.
 */
#include "harness.h"

static char cdir[512];
static int cbase;
static struct h_proxy proxy;

static struct h_proxy ref;

static void stop_all(void)
{
    h_proxy_stop(&ref);
    h_proxy_stop(&proxy);
    h_cluster_stop(cdir);
    cdir[0] = '\0';
}

/* A cluster on server (redis-server, valkey-server), the proxy in front,
 * refreshing its map every 200 ms. */
static void start_on(const char *server)
{
    char extra[64], seed[64];
    snprintf(extra, sizeof extra, "--server %s", server);
    cbase = h_cluster_start(cdir, sizeof cdir, "servers-cluster", extra);
    snprintf(seed, sizeof seed, "127.0.0.1:%d", cbase);
    const char *args[] = { "--topology-refresh-ms", "200", NULL };
    h_place_named(&proxy, "servers-proxy");
    h_proxy_launch(&proxy, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    h_spawn_wait(&proxy, h_pings, 20000, "proxy of the servers cluster");
}

/* The value of field in master i's INFO server, into out. */
static void master_field(int i, const char *field, char *out, size_t cap)
{
    redisContext *c = h_connect("127.0.0.1", cbase + i);
    redisReply *r = h_cmd(c, "INFO server");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    char key[64];
    snprintf(key, sizeof key, "\r\n%s:", field);
    const char *at = strstr(r->str, key);
    ck_assert_msg(at, "master %d's INFO has no %s", i, field);
    snprintf(out, cap, "%.*s", (int)strcspn(at + strlen(key), "\r\n"), at + strlen(key));
    freeReplyObject(r);
    redisFree(c);
}

/* HELLO's server and version through the proxy (HELLO 2: hiredis 0.14
 * reads RESP2 only; HELLO 3 gives the same map). */
static void hello(char *server, char *version, size_t cap)
{
    redisContext *c = h_connect_node(&proxy.addr);
    redisReply *r = h_cmd(c, "HELLO 2");
    ck_assert_msg(r->type == REDIS_REPLY_ARRAY, "%s", h_show(r));
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        if (strcmp(r->element[i]->str, "server") == 0)
            snprintf(server, cap, "%s", r->element[i + 1]->str);
        if (strcmp(r->element[i]->str, "version") == 0)
            snprintf(version, cap, "%s", r->element[i + 1]->str);
    }
    freeReplyObject(r);
    redisFree(c);
}

static int has_line(const char *info, const char *line)
{
    char want[128];
    snprintf(want, sizeof want, "\r\n%s\r\n", line);
    return strstr(info, want) != NULL;
}

START_TEST(test_redis_cluster)
{
    char server[64], version[64], want[64], line[128];
    master_field(0, "redis_version", want, sizeof want);
    hello(server, version, sizeof server);
    ck_assert_str_eq(server, "redis");
    ck_assert_str_eq(version, want);
    redisContext *c = h_connect_node(&proxy.addr);
    redisReply *r = h_cmd(c, "INFO server");
    snprintf(line, sizeof line, "redis_version:%s", want);
    ck_assert_msg(has_line(r->str, line), "%s", r->str);
    ck_assert_msg(has_line(r->str, "redis_mode:standalone"), "%s", r->str);
    ck_assert_msg(!strstr(r->str, "server_name:"), "%s", r->str);
    freeReplyObject(r);
    redisFree(c);
}
END_TEST

START_TEST(test_valkey_cluster)
{
    char server[64], version[64], want[64], compat[64], line[128];
    master_field(0, "valkey_version", want, sizeof want);
    master_field(0, "redis_version", compat, sizeof compat);
    hello(server, version, sizeof server);
    ck_assert_str_eq(server, "valkey");
    ck_assert_str_eq(version, want);
    redisContext *c = h_connect_node(&proxy.addr);
    redisReply *r = h_cmd(c, "INFO server");
    snprintf(line, sizeof line, "redis_version:%s", compat);
    ck_assert_msg(has_line(r->str, line), "%s", r->str);
    ck_assert_msg(has_line(r->str, "server_name:valkey"), "%s", r->str);
    snprintf(line, sizeof line, "valkey_version:%s", want);
    ck_assert_msg(has_line(r->str, line), "%s", r->str);
    ck_assert_msg(has_line(r->str, "server_mode:standalone"), "%s", r->str);
    freeReplyObject(r);
    redisFree(c);
}
END_TEST

/* A standalone valkey-server to compare with, as ref (stopped by stop_all). */
static void valkey_ref_start(void)
{
    char port[16];
    const char *argv[] = { "valkey-server", "--bind", "127.0.0.1", "--port", port, "--save", "",
                           "--appendonly", "no", "--dir", h_env("TAGPROXY_TEST_DIR"), NULL };
    h_place_named(&ref, "valkey-ref");
    snprintf(port, sizeof port, "%d", ref.addr.port);
    h_spawn(&ref, argv, SIGTERM, 1);
    h_spawn_wait(&ref, h_answers, 20000, "valkey-server");
}

/* The same command's reply through the proxy and from the standalone
 * server, as hiredis reads them. */
static void same_reply(redisContext *p, redisContext *v, const char *what, const char *cmd,
                       const char *arg)
{
    redisReply *a = arg ? h_cmd(p, cmd, arg) : h_cmd(p, cmd);
    redisReply *b = arg ? h_cmd(v, cmd, arg) : h_cmd(v, cmd);
    char sa[512], sb[512];
    snprintf(sa, sizeof sa, "%s", h_show(a));
    snprintf(sb, sizeof sb, "%s", h_show(b));
    ck_assert_msg(strcmp(sa, sb) == 0, "%s: proxy %s, valkey %s", what, sa, sb);
    for (size_t i = 0; a->type == REDIS_REPLY_ARRAY && i < a->elements; i++) {
        snprintf(sa, sizeof sa, "%s", h_show(a->element[i]));
        snprintf(sb, sizeof sb, "%s", h_show(b->element[i]));
        ck_assert_msg(strcmp(sa, sb) == 0, "%s [%zu]: proxy %s, valkey %s", what, i, sa, sb);
    }
    freeReplyObject(a);
    freeReplyObject(b);
}

/* Commands Valkey 8 has and the proxy's built-in table (Redis 7.0's) lacks,
 * learned from the cluster: answered as one valkey-server answers them, or
 * refused saying why. */
START_TEST(test_valkey_commands)
{
    redisContext *p = h_connect_node(&proxy.addr), *v = h_connect_node(&ref.addr);
    same_reply(p, v, "CLIENT SETINFO", "CLIENT SETINFO lib-name %s", "mylib");
    same_reply(p, v, "CLIENT SETINFO, a space", "CLIENT SETINFO lib-ver %s", "1 2");
    same_reply(p, v, "CLIENT SETINFO, no such attribute", "CLIENT SETINFO %s x", "lib-nom");
    redisReply *r = h_cmd(p, "CLIENT INFO");
    ck_assert_msg(strstr(r->str, " lib-name=mylib lib-ver=") != NULL, "%s", r->str);
    freeReplyObject(r);
    freeReplyObject(h_cmd(p, "ZADD {servers}z 1 m"));
    freeReplyObject(h_cmd(v, "ZADD {servers}z 1 m"));
    same_reply(p, v, "ZRANK WITHSCORE (Redis 7.2's arity)", "ZRANK {servers}z %s WITHSCORE", "m");
    same_reply(p, v, "CLIENT CAPA", "CLIENT CAPA %s", "redirect");
    r = h_cmd(p, "CLUSTER MYSHARDID");
    ck_assert_msg(r->type == REDIS_REPLY_STRING && r->len == 40, "%s", h_show(r));
    freeReplyObject(r);
    H_ERR(p, "ERR CLIENT NO-TOUCH is not supported through the proxy", "CLIENT NO-TOUCH on");
    /* what redis-py 8 sends on a RESP3 connect: Valkey 8's own answer */
    same_reply(p, v, "CLIENT MAINT_NOTIFICATIONS", "CLIENT MAINT_NOTIFICATIONS %s", "on");
    /* WAITAOF (Redis 7.2's) after a write, as WAIT: its masters' counts */
    freeReplyObject(h_cmd(p, "SET {servers}w 1"));
    freeReplyObject(h_cmd(v, "SET {servers}w 1"));
    same_reply(p, v, "WAITAOF 0 0 0", "WAITAOF 0 0 %s", "0");
    same_reply(p, v, "WAITAOF 1 0 0 without appendonly", "WAITAOF 1 0 %s", "0");
    /* COMMAND answers with the cluster's commands, as the server writes them */
    same_reply(p, v, "COMMAND COUNT", "COMMAND COUNT", NULL);
    r = h_cmd(p, "COMMAND INFO zrank client|setinfo");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 2);
    ck_assert_int_eq(r->element[0]->element[1]->integer, -3);      /* Redis 7.2's arity */
    ck_assert_str_eq(r->element[1]->element[0]->str, "client|setinfo");
    freeReplyObject(r);
    redisFree(p);
    redisFree(v);
}
END_TEST

/* The PID of node port in the test's cluster (its D/pids). */
static pid_t node_pid(int port)
{
    char path[600], line[64];
    snprintf(path, sizeof path, "%s/pids", cdir);
    FILE *f = fopen(path, "r");
    ck_assert(f != NULL);
    pid_t pid = 0;
    while (fgets(line, sizeof line, f)) {
        int p, q;
        if (sscanf(line, "%d %d", &p, &q) == 2 && p == port)
            pid = q;
    }
    fclose(f);
    return pid;
}

/* Master i stopped and started again on server, with its data and
 * nodes.conf: a step of a rolling upgrade. */
static void upgrade(int i, const char *server)
{
    char out[4096];
    pid_t pid = node_pid(cbase + i);
    ck_assert(pid > 0);
    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    for (int n = 0; n < 100 && kill(pid, 0) == 0; n++)
        h_sleep_ms(50);
    ck_assert_msg(h_shell(out, sizeof out, "scripts/cluster.sh restart-node --dir '%s' --port %d "
                          "--server %s 2>&1", cdir, cbase + i, server) == 0, "%s", out);
}

/* HELLO's server and version, once they are want_server (10 s at most). */
static void wait_hello(const char *want_server, char *version, size_t cap)
{
    char server[64] = "";
    for (long long deadline = h_now_ms() + 10000; h_now_ms() < deadline; h_sleep_ms(100)) {
        hello(server, version, cap);
        if (strcmp(server, want_server) == 0)
            return;
    }
    ck_abort_msg("HELLO says server %s, not %s", server, want_server);
}

/* The proxy's INFO nodes topology_refreshes. */
static long long refreshes(redisContext *c)
{
    redisReply *r = h_cmd(c, "INFO nodes");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    const char *at = strstr(r->str, "\ntopology_refreshes:");
    ck_assert_msg(at != NULL, "INFO nodes has no topology_refreshes: %s", h_esc(r->str, r->len));
    long long n = atoll(at + strlen("\ntopology_refreshes:"));
    freeReplyObject(r);
    return n;
}

/* Waits (10 s at most) until the proxy has read its map n more times, the
 * last n - 1 begun after now. */
static void wait_refreshes(int n)
{
    redisContext *c = h_connect_node(&proxy.addr);
    long long from = refreshes(c), have = from;
    for (long long deadline = h_now_ms() + 10000; have < from + n; h_sleep_ms(20)) {
        ck_assert_msg(h_now_ms() < deadline, "%lld topology refreshes in 10 s, not %d",
                      have - from, n);
        have = refreshes(c);
    }
    redisFree(c);
}

/* ZRANK with Redis 7.2's WITHSCORE through the proxy: its reply's type. */
static int zrank_withscore(void)
{
    redisContext *c = h_connect_node(&proxy.addr);
    redisReply *r = h_cmd(c, "ZRANK {servers}z m WITHSCORE");
    int type = r->type;
    freeReplyObject(r);
    redisFree(c);
    return type;
}

/* Through a rolling upgrade from Redis 7.0 to Valkey 8, HELLO names the
 * oldest master, and what only the new build knows (ZRANK's WITHSCORE) is
 * refused as the old build refuses it until every master runs the new. */
START_TEST(test_rolling_upgrade_shows_the_oldest)
{
    char version[64], redis7[64], valkey[64];
    redisContext *c = h_connect_node(&proxy.addr);
    freeReplyObject(h_cmd(c, "ZADD {servers}z 1 m"));
    redisFree(c);
    master_field(0, "redis_version", redis7, sizeof redis7);
    upgrade(0, "valkey-server");
    master_field(0, "valkey_version", valkey, sizeof valkey);
    upgrade(1, "valkey-server");
    wait_refreshes(3);                  /* three refreshes: still redis on master 2 */
    wait_hello("redis", version, sizeof version);
    ck_assert_str_eq(version, redis7);
    ck_assert_int_eq(zrank_withscore(), REDIS_REPLY_ERROR);
    upgrade(2, "valkey-server");
    wait_hello("valkey", version, sizeof version);
    ck_assert_str_eq(version, valkey);
    ck_assert_int_ne(zrank_withscore(), REDIS_REPLY_ERROR);    /* nil: the restarts lost z */
}
END_TEST

static void redis_up(void)
{
    start_on("redis-server");
}

static void valkey_up(void)
{
    start_on("valkey-server");
    valkey_ref_start();
}

/* A case on a cluster of its own, started and stopped outside the tests'
 * processes (an unchecked fixture), so a failing test leaves no server
 * running. */
static TCase *cluster_case(Suite *s, const char *name, void (*up)(void))
{
    TCase *tc = tcase_create(name);
    tcase_add_unchecked_fixture(tc, up, stop_all);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return tc;
}

int main(void)
{
    Suite *s = suite_create("servers");
    TCase *redis = cluster_case(s, "redis", redis_up);
    TCase *valkey = cluster_case(s, "valkey", valkey_up);
    TCase *upgrade = cluster_case(s, "upgrade", redis_up);
    tcase_add_test(redis, test_redis_cluster);
    tcase_add_test(valkey, test_valkey_cluster);
    tcase_add_test(valkey, test_valkey_commands);
    tcase_add_test(upgrade, test_rolling_upgrade_shows_the_oldest);
    return h_run(s);
}
