/*
 * `tagproxy migrate` on a generated legacy keyspace of every family of
 * conf/layouts/botmesh-v1.rules, 100,000 keys (see legacy_keyspace), then
 * a bot reading it through a layout proxy for the prefix, as the layout
 * session reads: everything it read before on the legacy server.
 *
 *  - straight into the test's 3-master cluster from a standalone
 *    redis-server;
 *  - in place, on one server: a cluster of one node holding every slot,
 *    so that a proxy can serve it once the copy is there.
 *
 * Every legacy key gives through the proxy the DUMP it gives on the legacy
 * server (the same bytes: values are never re-encoded) and the same PTTL
 * within a second, but those the copy leaves out, which read as absent:
 * turn counters, orphan items and items of another chat. Each family's
 * listing gives the same names, with KEYS and with a whole SCAN MATCH
 * walk. The report counts what was copied, the orphans and the items of
 * another chat. Into the cluster, a dry run first, and a rollback after
 * the bot changed a few records.
 */
#include "legacykeys.h"

#define RULES "conf/layouts/botmesh-v1.rules"

static struct h_proxy legacy, expected, px;
static char prefix[64];

static void setup(void)
{
    H_FMT(prefix, sizeof prefix, "ms%ld%lld", (long)getpid(), h_now_ms() % 1000000);
    memset(&legacy, 0, sizeof legacy);
    memset(&expected, 0, sizeof expected);
    memset(&px, 0, sizeof px);
}

static void teardown(void)
{
    h_proxy_stop(&px);
    h_proxy_stop(&legacy);
    h_proxy_stop(&expected);
}

/* A name of the legacy layout (in place, the server holds both). */
static int legacy_name(const char *key)
{
    return !strchr(key, '{') || strstr(key, ":{durable:");
}

/* Every legacy key of p on the server lg, read through the proxy x: the
 * same DUMP and PTTL (within a second), or absent where not copied. */
static void expect_every_record(redisContext *lg, redisContext *x, const char *p)
{
    long long cursor = 0;
    long compared = 0, absent = 0;
    do {
        redisReply *r = h_cmd(lg, "SCAN %lld MATCH %s:* COUNT 1000", cursor, p);
        cursor = strtoll(r->element[0]->str, NULL, 10);
        const redisReply *keys = r->element[1];
        for (size_t k = 0; k < keys->elements; k++) {
            const char *key = keys->element[k]->str;
            if (!legacy_name(key))
                continue;
            redisAppendCommand(lg, "DUMP %s", key);
            redisAppendCommand(lg, "PTTL %s", key);
            redisAppendCommand(x, "DUMP %s", key);
            redisAppendCommand(x, "PTTL %s", key);
        }
        for (size_t k = 0; k < keys->elements; k++) {
            const char *key = keys->element[k]->str;
            if (!legacy_name(key))
                continue;
            redisReply *da = h_get_reply(lg), *ta = h_get_reply(lg);
            redisReply *db = h_get_reply(x), *tb = h_get_reply(x);
            ck_assert_msg(db->type != REDIS_REPLY_ERROR && tb->type == REDIS_REPLY_INTEGER,
                          "%s through the proxy: %s", key, h_show(db));
            if (legacy_not_copied(key)) {
                ck_assert_msg(db->type == REDIS_REPLY_NIL, "%s was not to be copied", key);
                absent++;
            } else {
                ck_assert_msg(db->type == REDIS_REPLY_STRING && da->len == db->len &&
                              memcmp(da->str, db->str, da->len) == 0,
                              "%s reads otherwise through the proxy: %s", key, h_show(db));
                ck_assert_msg((ta->integer < 0) == (tb->integer < 0) &&
                              llabs(ta->integer - tb->integer) < 1000,
                              "%s: PTTL %lld through the proxy, %lld before", key, tb->integer,
                              ta->integer);
                compared++;
            }
            freeReplyObject(da);
            freeReplyObject(ta);
            freeReplyObject(db);
            freeReplyObject(tb);
        }
        freeReplyObject(r);
    } while (cursor != 0);
    ck_assert_int_eq(absent, LEGACY_NOT_COPIED);
    ck_assert_int_eq(compared, LEGACY_KEYS - LEGACY_NOT_COPIED);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of a listing reply's array, sorted, duplicates and the names
 * the test drops (drop: legacy names the copy left out) removed; *n
 * their count. The strings are r's. */
static const char **names_of(const redisReply *a, int drop, size_t *n)
{
    const char **v = calloc(a->elements + 1, sizeof *v);
    ck_assert_ptr_nonnull(v);
    size_t m = 0;
    for (size_t i = 0; i < a->elements; i++)
        if (legacy_name(a->element[i]->str) && !(drop && legacy_not_copied(a->element[i]->str)))
            v[m++] = a->element[i]->str;
    qsort(v, m, sizeof *v, by_name);
    size_t u = 0;
    for (size_t i = 0; i < m; i++)
        if (u == 0 || strcmp(v[u - 1], v[i]) != 0)
            v[u++] = v[i];
    *n = u;
    return v;
}

static void expect_same_names(const char *what, const redisReply *before, const redisReply *now)
{
    size_t nb, nn;
    const char **b = names_of(before, 1, &nb), **w = names_of(now, 0, &nn);
    ck_assert_msg(nb > 0, "%s: an empty listing proves nothing", what);
    for (size_t i = 0; i < nb && i < nn; i++)
        ck_assert_msg(strcmp(b[i], w[i]) == 0, "%s: %s before, %s through the proxy", what,
                      b[i], w[i]);
    ck_assert_msg(nb == nn, "%s: %zu names before, %zu through the proxy", what, nb, nn);
    free(b);
    free(w);
}

/* A whole SCAN MATCH walk through x, as one array reply (the caller frees
 * it with freeReplyObject). */
static redisReply *scan_walk(redisContext *x, const char *match)
{
    redisReply *all = calloc(1, sizeof *all);
    ck_assert_ptr_nonnull(all);
    all->type = REDIS_REPLY_ARRAY;
    size_t cap = 0;
    long long cursor = 0;
    do {
        redisReply *r = h_cmd(x, "SCAN %lld MATCH %s COUNT 1000", cursor, match);
        H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
        cursor = strtoll(r->element[0]->str, NULL, 10);
        redisReply *keys = r->element[1];
        if (all->elements + keys->elements > cap) {
            cap = (all->elements + keys->elements) * 2;
            all->element = realloc(all->element, cap * sizeof *all->element);
            ck_assert_ptr_nonnull(all->element);
        }
        for (size_t k = 0; k < keys->elements; k++) {
            all->element[all->elements++] = keys->element[k];
            keys->element[k] = NULL;
        }
        keys->elements = 0;
        freeReplyObject(r);
    } while (cursor != 0);
    return all;
}

/* Each family's listing: KEYS through the proxy and on the legacy server
 * give the same names (less those not copied); a whole SCAN too. */
static void expect_every_listing(redisContext *lg, redisContext *x, const char *p)
{
    static const char *const globs[] = {
        "chat:*", "chat:tg:*", "chat:c1?", "contact:*", "checkpoint:*", "checkpoint:run-7*",
        "schedule:*", "schedule:gone-*", "user:*", "user:u7:*", "user:u1?:ns1:*", "msgs:*",
        "msgs:tg:*", "msg:tg:1:*", "msg:*", "lock:*", "co:leader:*", "conv:*", "cursor:*",
        "lease:*", "{durable:t1}:*", "*",
    };
    for (size_t i = 0; i < sizeof globs / sizeof *globs; i++) {
        char match[128];
        H_FMT(match, sizeof match, "%s:%s", p, globs[i]);
        redisReply *before = h_cmd(lg, "KEYS %s", match), *now = h_cmd(x, "KEYS %s", match);
        H_EXPECT_TYPE(now, REDIS_REPLY_ARRAY);
        expect_same_names(match, before, now);
        freeReplyObject(now);
        if (i % 3 == 0 || globs[i][0] == '*') {
            now = scan_walk(x, match);
            expect_same_names(match, before, now);
            freeReplyObject(now);
        }
        freeReplyObject(before);
    }
}

/* The copy's report: everything but what it leaves out, the orphans
 * (items of another chat count there too) and the marker. */
static void expect_report(const char *out, int keeps_copied)
{
    char want[256];
    long copied = LEGACY_KEYS - LEGACY_NOT_COPIED - (keeps_copied ? 0 : N_KEEPS * 4);
    H_FMT(want, sizeof want, "copied %ld, skipped 0 (the target's key won), orphans %d "
          "(items no log references), %d log members naming another chat's item", copied,
          N_ORPHANS + N_ELSEWHERE, N_ELSEWHERE);
    ck_assert_msg(strstr(out, want) != NULL, "want '%s' in:\n%s", want, out);
    ck_assert_msg(strstr(out, ": written\n") != NULL, "%s", out);
}

/* The keys of p on every master of the test cluster, unlinked; how many. */
static long cluster_unlink(const char *p)
{
    struct h_topo t;
    long n = 0;
    h_topo_load(&t);
    for (int m = 0; m < t.nmasters; m++) {
        redisContext *c = h_connect_node(&t.masters[m]);
        long long cursor = 0;
        do {
            redisReply *r = h_cmd(c, "SCAN %lld MATCH %s:* COUNT 1000", cursor, p);
            cursor = strtoll(r->element[0]->str, NULL, 10);
            for (size_t k = 0; k < r->element[1]->elements; k++)
                redisAppendCommand(c, "UNLINK %s", r->element[1]->element[k]->str);
            for (size_t k = 0; k < r->element[1]->elements; k++, n++)
                freeReplyObject(h_get_reply(c));
            freeReplyObject(r);
        } while (cursor != 0);
        redisFree(c);
    }
    return n;
}

/* What the bot changes after the migration, through the proxy x, or on
 * the legacy server x directly: a chat, a checkpoint and a user's key
 * deleted, a chat written. */
static void bot_changes(redisContext *x, const char *p)
{
    static const char *const cmds[] = {
        "DEL %s:chat:c1", "DEL %s:checkpoint:run-1", "DEL %s:user:u1:ns1:key1",
        "SET %s:chat:c2 newer",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        redisReply *r = h_cmd(x, cmds[i], p);
        ck_assert_msg(r->type == REDIS_REPLY_INTEGER ? r->integer == 1
                                                     : r->type == REDIS_REPLY_STATUS,
                      "%s: %s", cmds[i], h_show(r));
        freeReplyObject(r);
    }
}

/* The legacy keyspace after bot_changes and a mirroring rollback: the
 * items the copy left out pruned (the turn counters stay). */
static void expected_after_rollback(redisContext *c, const char *p)
{
    bot_changes(c, p);
    long long cursor = 0;
    do {
        redisReply *r = h_cmd(c, "SCAN %lld MATCH %s:msg:* COUNT 1000", cursor, p);
        cursor = strtoll(r->element[0]->str, NULL, 10);
        for (size_t k = 0; k < r->element[1]->elements; k++)
            if (legacy_not_copied(r->element[1]->element[k]->str))
                freeReplyObject(h_cmd(c, "DEL %s", r->element[1]->element[k]->str));
        freeReplyObject(r);
    } while (cursor != 0);
    ck_assert_int_eq(dbsize(c), LEGACY_KEYS - 3 - N_ORPHANS - N_ELSEWHERE);
}

/* A layout proxy for p on the cluster that seed (host:port) names. */
static void layout_proxy(const char *seed, const char *p)
{
    const char *args[] = { "--layout-rules", RULES, "--layout-prefix", p, NULL };
    h_place_named(&px, "proxy-migrated");
    h_proxy_launch(&px, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    h_spawn_wait(&px, h_pings, 20000, "layout proxy");
}

/*
 * Into the cluster: a dry run writes nothing there; the copy; the bot
 * reads everything it read before; it changes a few records; the
 * mirroring rollback from the cluster into the legacy server gives the
 * original keyspace with those changes, less the items the copy left out
 * (pruned), as a server where the bot made the same changes shows.
 */
START_TEST(test_straight_into_the_cluster)
{
    char out[16384], seed[128], want[256];
    h_ref_start(&legacy, "redis-migrate-session", NULL);
    h_ref_start(&expected, "redis-migrate-expected", NULL);
    redisContext *lg = h_connect_node(&legacy.addr), *ex = h_connect_node(&expected.addr);
    legacy_keyspace(lg, prefix);
    legacy_keyspace(ex, prefix);
    h_seed(seed, sizeof seed);
    /* on a terminal (script(1) gives it one): the progress bar */
    int rc = h_shell(out, sizeof out, "script -qec \"'%s' migrate --source "
                     "redis://127.0.0.1:%d --target-cluster %s --prefix %s --layout-rules "
                     RULES " --dry-run\" /dev/null", h_env("TAGPROXY_TEST_BIN"),
                     legacy.addr.port, seed, prefix);
    H_FMT(want, sizeof want, "[##############################] %d/%d keys", LEGACY_KEYS,
          LEGACY_KEYS);
    ck_assert_msg(rc == 0 && strstr(out, "dry run (nothing written)") && strstr(out, want) &&
                  strstr(out, " keys/s  ETA 0 s"), "exit %d: %s", rc, out);
    ck_assert_int_eq(cluster_unlink(prefix), 0);
    rc = h_tagproxy(out, sizeof out, "migrate --source redis://127.0.0.1:%d "
                    "--target-cluster %s --prefix %s --layout-rules " RULES,
                    legacy.addr.port, seed, prefix);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    expect_report(out, 1);
    /* elsewhere: plain lines */
    H_FMT(want, sizeof want, "migrate: %d of %d keys read, ", LEGACY_KEYS, LEGACY_KEYS);
    ck_assert_msg(strstr(out, want) && strstr(out, " keys/s, done\n"), "%s", out);
    layout_proxy(seed, prefix);
    redisContext *x = h_connect_extra(&px);
    expect_every_record(lg, x, prefix);
    expect_every_listing(lg, x, prefix);
    bot_changes(x, prefix);
    redisFree(x);
    h_proxy_stop(&px);

    rc = h_tagproxy(out, sizeof out, "migrate --source redis://%s --target redis://127.0.0.1:%d "
                    "--prefix %s --layout-rules " RULES " --direction cluster-to-legacy", seed,
                    legacy.addr.port, prefix);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    H_FMT(want, sizeof want, "legacy records pruned (the source no longer holds them): %d\n",
          3 + N_ORPHANS + N_ELSEWHERE);
    ck_assert_msg(strstr(out, want) != NULL, "want '%s' in:\n%s", want, out);
    expected_after_rollback(ex, prefix);
    expect_same_keyspace(&expected.addr, &legacy.addr);
    redisFree(lg);
    redisFree(ex);
    cluster_unlink(prefix);
}
END_TEST

/* A redis-server in cluster mode that holds every slot alone, as n. */
static void one_node_cluster(struct h_proxy *n)
{
    char port[16], conf[64];
    h_place_named(n, "redis-one-node");
    n->addr.port = h_cluster_base(1);       /* its bus port (+10000) free too */
    H_FMT(n->log, sizeof n->log, "%s/redis-one-node-%d.log", h_env("TAGPROXY_TEST_DIR"),
          n->addr.port);
    snprintf(port, sizeof port, "%d", n->addr.port);
    H_FMT(conf, sizeof conf, "nodes-one-%d.conf", n->addr.port);
    const char *argv[] = {
        "redis-server", "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly",
        "no", "--dir", h_env("TAGPROXY_TEST_DIR"), "--cluster-enabled", "yes",
        "--cluster-config-file", conf, NULL,
    };
    h_spawn(n, argv, SIGTERM, 1);
    h_spawn_wait(n, h_answers, 20000, "redis-server (cluster of one)");
    redisContext *c = h_connect_node(&n->addr);
    redisReply *r = h_cmd(c, "CLUSTER ADDSLOTSRANGE 0 16383");
    H_EXPECT_TYPE(r, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    long long deadline = h_now_ms() + 20000;
    for (int ok = 0; !ok; h_sleep_ms(50)) {
        r = h_cmd(c, "CLUSTER INFO");
        ok = r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") != NULL;
        freeReplyObject(r);
        ck_assert_msg(ok || h_now_ms() < deadline, "the cluster of one is not ok after 20 s");
    }
    redisFree(c);
}

START_TEST(test_in_place_on_one_server)
{
    char out[16384], seed[64];
    one_node_cluster(&legacy);
    redisContext *lg = h_connect_node(&legacy.addr);
    legacy_keyspace(lg, prefix);
    int rc = h_tagproxy(out, sizeof out, "migrate --source redis://127.0.0.1:%d --prefix %s "
                        "--layout-rules " RULES, legacy.addr.port, prefix);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    expect_report(out, 0);
    H_FMT(seed, sizeof seed, "127.0.0.1:%d", legacy.addr.port);
    layout_proxy(seed, prefix);
    redisContext *x = h_connect_extra(&px);
    expect_every_record(lg, x, prefix);
    expect_every_listing(lg, x, prefix);
    redisFree(x);
    redisFree(lg);
}
END_TEST

static Suite *migrate_session_suite(void)
{
    Suite *s = suite_create("migrate_session");
    TCase *t = tcase_create("session");
    tcase_set_timeout(t, 300);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_straight_into_the_cluster);
    tcase_add_test(t, test_in_place_on_one_server);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return h_run(migrate_session_suite());
}
