/*
 * Client-side caching through the events after which the proxy can no
 * longer promise an invalidation (issue 40), on a cluster of the test's own
 * (3 masters with a replica each, node-timeout 2 s): a reader with a cache
 * (kept here, as a client library keeps it) reads keys over the masters
 * through a proxy of two workers while writers change them through the
 * proxy and straight on the masters; meanwhile, one after the other, a
 * failover (CLUSTER FAILOVER on a replica), slots moved by `redis-cli
 * --cluster reshard`, a master killed (kill -9: its replica takes over),
 * a SIGHUP that changes the key layout's rules, and SIGHUPs that turn
 * tracking-node-bcast on (the masters push every write) and off again. After every round,
 * once what each master pushed is in, each value the reader's cache holds
 * must be its master's now: each event told the reader to flush (a null
 * key), or the invalidations kept coming. The proxy counts the flushes by
 * cause.
 */
#include <signal.h>

#include "lifecycle.h"
#include "trackcache.h"

#define FKEYS 24
#define FROUNDS 240
#define FWRITES 8

static char cdir[512], rules[600], conf[600], conf_text[1400], prefix[64];
static int cbase;
static struct h_proxy proxy;

static void setup(void)
{
    char nodes[256] = "", seed[64];
    size_t at = 0;
    cbase = h_cluster_start(cdir, sizeof cdir, "trackfault", "--replicas 1 --node-timeout 2000");
    for (int i = 0; i < 6; i++)
        at += (size_t)snprintf(nodes + at, sizeof nodes - at, "%s127.0.0.1:%d", i ? " " : "",
                               cbase + i);
    setenv("TAGPROXY_TEST_NODES", nodes, 1);    /* h_topo_load: this cluster */
    H_FMT(prefix, sizeof prefix, "tf%ld%lld", (long)getpid(), h_now_ms() % 1000000);
    H_FMT(rules, sizeof rules, "%s/trackfault-%s.rules", h_env("TAGPROXY_TEST_DIR"), prefix);
    lc_write(rules, "rule thing p:thing:<id> -> p:{t:<id>}:one\n");
    h_place_named(&proxy, "trackfault-proxy");
    H_FMT(conf, sizeof conf, "%s/trackfault-%s.conf", h_env("TAGPROXY_TEST_DIR"), prefix);
    H_FMT(conf_text, sizeof conf_text, "threads 2\ntopology-refresh-ms 200\nlayout-rules %s\n"
          "layout-prefix %s\n", rules, prefix);
    lc_write(conf, conf_text);
    char listen[64];
    H_FMT(listen, sizeof listen, "127.0.0.1:%d", proxy.addr.port);
    H_FMT(seed, sizeof seed, "127.0.0.1:%d", cbase);
    const char *argv[] = { h_env("TAGPROXY_TEST_BIN"), conf, "--listen", listen,
                           "--cluster", seed, "--admin-listen", "off", NULL };
    h_spawn(&proxy, argv, SIGTERM, 0);
    h_spawn_wait(&proxy, h_pings, 20000, "the proxy of the trackfault cluster");
}

static void teardown(void)
{
    h_proxy_stop(&proxy);
    h_cluster_stop(cdir);
}

/* ---------- the reader ---------- */

static char fkey[FKEYS][TRACK_CACHE_KEY];

/* What every master of t pushed before now is in: a read of a key of each,
 * on the reader's connection, until one is answered without an error. */
static void reader_sync(struct conn3 *c, struct track_cache *fc, const struct h_topo *t)
{
    char cmd[128], out[4096];
    for (int m = 0; m < t->nmasters; m++)
        for (int k = 0; k < FKEYS; k++) {
            if (h_topo_owner(t, h_slot(fkey[k])) != m)
                continue;
            long long deadline = h_now_ms() + 20000;
            do {
                H_FMT(cmd, sizeof cmd, "EXISTS %s", fkey[k]);
                send_words(c, cmd);
                cache_reply(c, fc, out, sizeof out);
                if (out[0] == '-')
                    h_sleep_ms(100);
            } while (out[0] == '-' && h_now_ms() < deadline);
            ck_assert_msg(out[0] == ':', "EXISTS through the proxy: %s", h_esc_str(out));
            break;
        }
}

/* ---------- the events ---------- */

/* The cluster serves every slot from a master that answers: t loaded. */
static void settled(struct h_topo *t)
{
    long long deadline = h_now_ms() + 30000;
    for (;;) {
        h_topo_load(t);
        int covered = 0, up = 1;
        for (int i = 0; i < t->nranges; i++)
            covered += t->r[i].end - t->r[i].start + 1;
        for (int m = 0; m < t->nmasters && up; m++)
            up = h_pings(t->masters[m].host, t->masters[m].port);
        if (covered == 16384 && up)
            return;
        ck_assert_msg(h_now_ms() < deadline, "the cluster did not settle within 30 s");
        h_sleep_ms(200);
    }
}

/* The port of a replica of master m (from CLUSTER NODES), or 0. */
static int replica_of(const struct h_topo *t, int m)
{
    redisContext *c = h_connect_node(&t->masters[m]);
    redisReply *r = h_cmd(c, "CLUSTER NODES");
    int port = 0;
    for (const char *l = r->str; l && *l && !port; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        char id[64], addr[128], flags[128], master[64];
        if (sscanf(l, "%63s %127s %127s %63s", id, addr, flags, master) == 4 &&
            strstr(flags, "slave") && !strstr(flags, "fail") &&
            strcmp(master, t->master_id[m]) == 0)
            port = atoi(strchr(addr, ':') + 1);
    }
    freeReplyObject(r);
    redisFree(c);
    return port;
}

static void do_failover(struct h_topo *t)
{
    int port = replica_of(t, 0);
    ck_assert_msg(port > 0, "master 0 has no replica");
    redisContext *c = h_connect("127.0.0.1", port);
    redisReply *r = h_cmd(c, "CLUSTER FAILOVER");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    long long deadline = h_now_ms() + 20000;
    for (int master = 0; !master;) {
        r = h_cmd(c, "ROLE");
        master = r->type == REDIS_REPLY_ARRAY && strcmp(r->element[0]->str, "master") == 0;
        freeReplyObject(r);
        ck_assert_msg(master || h_now_ms() < deadline, "the replica did not take over");
        if (!master)
            h_sleep_ms(100);
    }
    redisFree(c);
}

static void do_reshard(struct h_topo *t)
{
    char out[8192];
    int rc = h_shell(out, sizeof out, "redis-cli --cluster reshard 127.0.0.1:%d --cluster-from %s "
                     "--cluster-to %s --cluster-slots 300 --cluster-yes 2>&1", t->masters[0].port,
                     t->master_id[1], t->master_id[2]);
    ck_assert_msg(rc == 0, "redis-cli --cluster reshard: %s", out);
}

static void do_kill(struct h_topo *t)
{
    char path[600], line[128];
    int port = t->masters[2].port, killed = 0;
    H_FMT(path, sizeof path, "%s/pids", cdir);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no %s", path);
    while (fgets(line, sizeof line, f)) {
        int p, pid;
        if (sscanf(line, "%d %d", &p, &pid) == 2 && p == port)
            killed = kill(pid, SIGKILL) == 0;
    }
    fclose(f);
    ck_assert_msg(killed, "master on port %d not killed", port);
    /* until its replica serves its slots */
    long long deadline = h_now_ms() + 30000;
    for (;;) {
        h_topo_load(t);
        int still = 0;
        for (int m = 0; m < t->nmasters; m++)
            still |= t->masters[m].port == port;
        if (!still)
            return;
        ck_assert_msg(h_now_ms() < deadline, "no replica took over from port %d", port);
        h_sleep_ms(200);
    }
}

static void do_sighup(struct h_topo *t)
{
    (void)t;
    lc_write(rules, "rule thing p:thing:<id> -> p:{t:<id>}:two\n");
    lc_signal(&proxy, SIGHUP, "config generation 1 in use by every worker", 1);
}

/* The config again, with tracking-node-bcast set to yes or no. */
static void node_bcast(const char *yesno, int generation)
{
    char text[1500], logged[80];
    H_FMT(text, sizeof text, "%stracking-node-bcast %s\n", conf_text, yesno);
    lc_write(conf, text);
    H_FMT(logged, sizeof logged, "config generation %d in use by every worker", generation);
    lc_signal(&proxy, SIGHUP, logged, 1);
}

static void do_node_bcast_on(struct h_topo *t)
{
    (void)t;
    node_bcast("yes", 2);
}

static void do_node_bcast_off(struct h_topo *t)
{
    (void)t;
    node_bcast("no", 3);
}

static const struct event {
    int round;
    const char *name;
    void (*run)(struct h_topo *t);
} events[] = {
    { 40, "a failover", do_failover },
    { 80, "a reshard", do_reshard },
    { 120, "a killed master", do_kill },
    { 160, "a SIGHUP that changes the rules", do_sighup },
    { 190, "a SIGHUP that turns tracking-node-bcast on", do_node_bcast_on },
    { 215, "a SIGHUP that turns tracking-node-bcast off", do_node_bcast_off },
};

START_TEST(test_no_stale_value_through_events)
{
    struct h_topo t;
    struct conn3 c;
    struct track_cache fc;
    char out[4096];
    for (int k = 0; k < FKEYS; k++)
        H_FMT(fkey[k], sizeof fkey[k], "trkf:%s:%d", prefix, k);
    cache_init(&fc, fkey, FKEYS);
    settled(&t);
    redisContext *pw = h_connect_node(&proxy.addr);
    conn3_open(&c, &proxy.addr);
    send_words(&c, "CLIENT TRACKING ON");
    cache_reply(&c, &fc, out, sizeof out);
    ck_assert_str_eq(out, "+OK\r\n");
    unsigned seed = 4242;
    const char *after = "nothing yet";
    size_t next = 0;
    long n = 0;
    for (int round = 0; round < FROUNDS; round++) {
        if (next < sizeof events / sizeof events[0] && round == events[next].round) {
            events[next].run(&t);
            after = events[next++].name;
            settled(&t);
        }
        for (int i = 0; i < FWRITES; i++) {
            int k = (int)(rand_r(&seed) % FKEYS);
            redisContext *w = rand_r(&seed) % 2 ? pw : h_connect_owner(&t, fkey[k]);
            freeReplyObject(redisCommand(w, "SET %s v%ld", fkey[k], ++n));  /* errors too */
            if (w != pw)
                redisFree(w);
        }
        reader_sync(&c, &fc, &t);
        cache_check(&fc, &t, round, after);
        for (int k = 0; k < FKEYS; k++)
            cache_get(&c, &fc, (k * 7 + round) % FKEYS);
    }
    ck_assert_msg(fc.hits > 0 && fc.flushes >= 3, "hits %ld, flushes %ld", fc.hits, fc.flushes);
    redisContext *o = h_connect_node(&proxy.addr);
    ck_assert_int_ge(h_info_field(o, "tracking_flushes_topology"), 1);
    ck_assert_int_ge(h_info_field(o, "tracking_flushes_connection"), 1);
    ck_assert_int_ge(h_info_field(o, "tracking_flushes_layout"), 1);
    ck_assert_int_ge(h_info_field(o, "tracking_flushes_mode"), 1);   /* BCAST left */
    fprintf(stderr, "tracking faults: %ld hits, %ld invalidations, %ld flushes; INFO: topology "
            "%lld, connection %lld, layout %lld\n", fc.hits, fc.invalidations, fc.flushes,
            h_info_field(o, "tracking_flushes_topology"),
            h_info_field(o, "tracking_flushes_connection"),
            h_info_field(o, "tracking_flushes_layout"));
    redisFree(o);
    redisFree(pw);
    close(c.fd);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tracking_faults");
    TCase *tc = tcase_create("events");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_no_stale_value_through_events);
    suite_add_tcase(s, tc);
    return h_run(s);
}
