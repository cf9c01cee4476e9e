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
 * another chat.
 */
#include "harness.h"

#define RULES "conf/layouts/botmesh-v1.rules"

/* How many of each; legacy_keyspace's comment says what they are. */
enum {
    N_CHATS = 24000, N_CONTACTS = 10000, N_CHECKPOINTS = 10000, N_SCHEDULES = 5000,
    N_SCHEDULES_DELETED = 500, N_USERS = 1000, N_USER_KEYS = 10, N_LOGS = 4000,
    N_LOG_ITEMS = 8, N_LOCKS = 1000, N_LEADERS = 100, N_TURNS = 200, N_KEEPS = 250,
};

#define N_ORPHANS (N_LOGS / 8)              /* one per eighth log */
#define N_ELSEWHERE (N_LOGS / 20)           /* one per twentieth log */
#define N_NOT_COPIED (N_TURNS * 3 + N_ORPHANS + N_ELSEWHERE)
#define N_KEYS (N_CHATS + N_CONTACTS + N_CHECKPOINTS + N_SCHEDULES + N_SCHEDULES_DELETED + \
                N_USERS * N_USER_KEYS + N_LOGS * (1 + N_LOG_ITEMS) + N_ORPHANS + N_ELSEWHERE + \
                N_LOCKS * 2 + N_LEADERS * 2 + N_TURNS * 3 + N_KEEPS * 4)

static struct h_proxy legacy, px;
static char prefix[64];

static void setup(void)
{
    H_FMT(prefix, sizeof prefix, "ms%ld%lld", (long)getpid(), h_now_ms() % 1000000);
    memset(&legacy, 0, sizeof legacy);
    memset(&px, 0, sizeof px);
}

static void teardown(void)
{
    h_proxy_stop(&px);
    h_proxy_stop(&legacy);
}

/* Pipelined: one reply read for each command appended, every 1000. */
struct pipe {
    redisContext *c;
    int pending;
};

static void pipe_drain(struct pipe *pp)
{
    for (; pp->pending > 0; pp->pending--) {
        redisReply *r = h_get_reply(pp->c);
        ck_assert_msg(r->type != REDIS_REPLY_ERROR, "%s", r->str);
        freeReplyObject(r);
    }
}

static void pipe_cmd(struct pipe *pp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ck_assert_int_eq(redisvAppendCommand(pp->c, fmt, ap), REDIS_OK);
    va_end(ap);
    if (++pp->pending == 1000)
        pipe_drain(pp);
}

/* The chat of log i: provider-qualified ids (with ':') and plain ones. */
static void log_chat(int i, char *buf, size_t size)
{
    H_FMT(buf, size, i % 2 ? "tg:%d" : "c%d", i);
}

/*
 * The legacy keyspace of prefix p, N_KEYS keys:
 *  - chats (a third with a TTL, every 50th a hash with a provider id),
 *    contacts, checkpoints (half with a TTL), schedules (hashes with a
 *    fencing token) and deleted schedule markers (token, deleted 1);
 *  - user data, N_USER_KEYS per user in two namespaces, half with a TTL;
 *  - message logs of N_LOG_ITEMS items (every third a hash), every
 *    twentieth log with a member whose item name is another chat's
 *    (`x:m9`: chat `<chat>:x`), and that item; an orphan item per eighth;
 *  - locks (with a TTL) and their fences, leaderships and terms;
 *  - turn counters (no pending ticket: tix = serving);
 *  - the keeps: conversations, cursors, leases (with a TTL), a durability
 *    journal.
 */
static void legacy_keyspace(redisContext *c, const char *p)
{
    struct pipe pp = { c, 0 };
    char chat[32];
    for (int i = 0; i < N_CHATS; i++) {
        if (i % 50 == 0)
            pipe_cmd(&pp, "HSET %s:chat:tg:%d title chat-%d members %d", p, i, i, i % 7);
        else if (i % 3 == 0)
            pipe_cmd(&pp, "SET %s:chat:c%d chat-%d PX 900000", p, i, i);
        else
            pipe_cmd(&pp, "SET %s:chat:c%d chat-%d", p, i, i);
    }
    for (int i = 0; i < N_CONTACTS; i++)
        pipe_cmd(&pp, i % 5 ? "SET %s:contact:u:%d {\"name\":\"n%d\"}"
                            : "SET %s:contact:u:%d {\"name\":\"n%d\"} PX 800000", p, i, i);
    for (int i = 0; i < N_CHECKPOINTS; i++)
        pipe_cmd(&pp, i % 2 ? "SET %s:checkpoint:run-%d state-%d"
                            : "SET %s:checkpoint:run-%d state-%d PX 700000", p, i, i);
    for (int i = 0; i < N_SCHEDULES; i++)
        pipe_cmd(&pp, "HSET %s:schedule:job-%d at 09:%02d token %d", p, i, i % 60, i % 97 + 1);
    for (int i = 0; i < N_SCHEDULES_DELETED; i++)
        pipe_cmd(&pp, "HSET %s:schedule:gone-%d token %d deleted 1", p, i, i + 3);
    for (int u = 0; u < N_USERS; u++)
        for (int k = 0; k < N_USER_KEYS; k++)
            pipe_cmd(&pp, k % 2 ? "SET %s:user:u%d:ns%d:key%d v%d"
                                : "SET %s:user:u%d:ns%d:key%d v%d PX 600000", p, u, k % 2, k, k);
    for (int i = 0; i < N_LOGS; i++) {
        log_chat(i, chat, sizeof chat);
        for (int j = 1; j <= N_LOG_ITEMS; j++) {
            pipe_cmd(&pp, "ZADD %s:msgs:%s %d m%d", p, chat, j, j);
            if (j % 3 == 0)
                pipe_cmd(&pp, "HSET %s:msg:%s:m%d text t%d from u%d", p, chat, j, j, i);
            else
                pipe_cmd(&pp, "SET %s:msg:%s:m%d text-%d-%d", p, chat, j, i, j);
        }
        if (i % 20 == 0) {
            pipe_cmd(&pp, "ZADD %s:msgs:%s 9 x:m9", p, chat);
            pipe_cmd(&pp, "SET %s:msg:%s:x:m9 elsewhere", p, chat);
        }
        if (i % 8 == 0)
            pipe_cmd(&pp, "SET %s:msg:%s:orphan%d lost", p, chat, i);
    }
    for (int i = 0; i < N_LOCKS; i++) {
        pipe_cmd(&pp, "SET %s:lock:job:%d holder-%d PX 500000", p, i, i);
        pipe_cmd(&pp, "SET %s:lock:job:%d:fence %d", p, i, i + 1);
    }
    for (int i = 0; i < N_LEADERS; i++) {
        pipe_cmd(&pp, "SET %s:co:leader:svc%d r%d", p, i, i % 3);
        pipe_cmd(&pp, "SET %s:co:leader:svc%d:term %d", p, i, i + 2);
    }
    for (int i = 0; i < N_TURNS; i++) {
        pipe_cmd(&pp, "SET %s:co:turn:c%d:seq 5", p, i);
        pipe_cmd(&pp, "SET %s:co:turn:c%d:tix 3", p, i);
        pipe_cmd(&pp, "SET %s:co:turn:c%d:serving 3", p, i);
    }
    for (int i = 0; i < N_KEEPS; i++) {
        pipe_cmd(&pp, "SET %s:conv:%d z%d", p, i, i);
        pipe_cmd(&pp, "SET %s:cursor:%d %d", p, i, i);
        pipe_cmd(&pp, "SET %s:lease:%d r1 PX 400000", p, i);
        pipe_cmd(&pp, "SET %s:{durable:t1}:%d e%d", p, i, i);
    }
    pipe_drain(&pp);
    redisReply *r = h_cmd(c, "DBSIZE");
    ck_assert_int_eq(r->integer, N_KEYS);
    freeReplyObject(r);
}

/* What the copy leaves out: turn counters, orphans, items of another chat. */
static int not_copied(const char *key)
{
    size_t n = strlen(key);
    return strstr(key, ":co:turn:") || strstr(key, ":orphan") ||
           (n > 5 && strcmp(key + n - 5, ":x:m9") == 0);
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
            if (not_copied(key)) {
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
    ck_assert_int_eq(absent, N_NOT_COPIED);
    ck_assert_int_eq(compared, N_KEYS - N_NOT_COPIED);
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
        if (legacy_name(a->element[i]->str) && !(drop && not_copied(a->element[i]->str)))
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
    long copied = N_KEYS - N_NOT_COPIED - (keeps_copied ? 0 : N_KEEPS * 4);
    H_FMT(want, sizeof want, "copied %ld, skipped 0 (the target's key won), orphans %d "
          "(items no log references), %d log members naming another chat's item", copied,
          N_ORPHANS + N_ELSEWHERE, N_ELSEWHERE);
    ck_assert_msg(strstr(out, want) != NULL, "want '%s' in:\n%s", want, out);
    ck_assert_msg(strstr(out, ": written\n") != NULL, "%s", out);
}

/* The keys of p on every master of the test cluster, unlinked. */
static void cluster_forget(const char *p)
{
    struct h_topo t;
    h_topo_load(&t);
    for (int m = 0; m < t.nmasters; m++) {
        redisContext *c = h_connect_node(&t.masters[m]);
        long long cursor = 0;
        do {
            redisReply *r = h_cmd(c, "SCAN %lld MATCH %s:* COUNT 1000", cursor, p);
            cursor = strtoll(r->element[0]->str, NULL, 10);
            for (size_t k = 0; k < r->element[1]->elements; k++)
                redisAppendCommand(c, "UNLINK %s", r->element[1]->element[k]->str);
            for (size_t k = 0; k < r->element[1]->elements; k++)
                freeReplyObject(h_get_reply(c));
            freeReplyObject(r);
        } while (cursor != 0);
        redisFree(c);
    }
}

/* A layout proxy for p on the cluster that seed (host:port) names. */
static void layout_proxy(const char *seed, const char *p)
{
    const char *args[] = { "--layout-rules", RULES, "--layout-prefix", p, NULL };
    h_place_named(&px, "proxy-migrated");
    h_proxy_launch(&px, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    h_spawn_wait(&px, h_pings, 20000, "layout proxy");
}

START_TEST(test_straight_into_the_cluster)
{
    char out[16384], seed[128];
    h_ref_start(&legacy, "redis-migrate-session", NULL);
    redisContext *lg = h_connect_node(&legacy.addr);
    legacy_keyspace(lg, prefix);
    h_seed(seed, sizeof seed);
    int rc = h_tagproxy(out, sizeof out, "migrate --source redis://127.0.0.1:%d "
                        "--target-cluster %s --prefix %s --layout-rules " RULES,
                        legacy.addr.port, seed, prefix);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    expect_report(out, 1);
    layout_proxy(seed, prefix);
    redisContext *x = h_connect_extra(&px);
    expect_every_record(lg, x, prefix);
    expect_every_listing(lg, x, prefix);
    redisFree(x);
    redisFree(lg);
    h_proxy_stop(&px);
    cluster_forget(prefix);
}
END_TEST

/* A redis-server in cluster mode that holds every slot alone, as n. */
static void one_node_cluster(struct h_proxy *n)
{
    char port[16], conf[64];
    h_place_named(n, "redis-one-node");
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
