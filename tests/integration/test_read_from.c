/*
 * read-from prefer-replica|replica against the real cluster (3 masters, one
 * replica each), through a proxy of the test's own:
 *
 * - reads spread over the replicas: each replica's INFO commandstats counts
 *   the GETs, the proxy's INFO reads_replica too; writes stay on masters;
 * - read-your-writes: a client that writes a key and reads it back,
 *   100,000 reads over 16 keys (one per bucket of slots), while the
 *   replicas lag in turns (replication paused by CLIENT PAUSE WRITE, which
 *   still serves reads, or stopped by SIGSTOP), never reads an older value
 *   than its own last write, though many of its reads go to replicas;
 * - a replica that fails mid-load (stopped past node-timeout-ms, its
 *   connections killed) costs no error and no wrong value: its reads go to
 *   the master;
 * - a replica that answers MOVED (its master no longer owns the slot) has
 *   the read sent to the master, which redirects it, ahead of the write the
 *   client sent behind the read;
 * - a slot seen migrating (a write met ASK) is read from masters: master
 *   0's replica, which does not know of the migration, would answer nil
 *   for the keys already moved;
 * - what stays on masters: MULTI blocks, scripts, a tracking client's
 *   reads;
 * - read-from replica refuses a read no replica can take (a stopped one,
 *   past replica-max-lag-ms), with its own error, and serves again once
 *   the replica is back.
 */
#include "harness.h"
#include "lifecycle.h"

#define GUARD_MS 20000
/* topology-refresh-ms: Valkey lists a replica in CLUSTER SLOTS only once
 * it has replicated something, which a cluster just made may not have */
#define CONF "threads 1\nread-from prefer-replica\nreplica-max-lag-ms 5000\n" \
             "node-timeout-ms 1000\ntopology-refresh-ms 500\n"
#define KEYS 16                 /* one per bucket of slots (readfrom.h) */

static struct h_proxy proxy;
static char conf[600];

/* Masters whose replica the proxy's topology lists (INFO: replicas=1). */
static int masters_with_replica(void)
{
    redisContext *c = h_connect_extra(&proxy);
    redisReply *r = h_cmd(c, "INFO");
    int n = 0;
    for (const char *at = r->str; (at = strstr(at, ",replicas=1")) != NULL; at++)
        n++;
    freeReplyObject(r);
    redisFree(c);
    return n;
}

static void proxy_up(void)
{
    lc_start(&proxy, CONF, conf, sizeof conf, NULL);
    for (long long until = h_now_ms() + 30000; masters_with_replica() < 3 && h_now_ms() < until;)
        h_sleep_ms(100);
}

static void proxy_down(void)
{
    h_proxy_stop(&proxy);
}

static long long proxy_stat(const char *field)
{
    redisContext *c = h_connect_extra(&proxy);
    long long v = h_info_field(c, field);
    redisFree(c);
    return v;
}

/* GETs node n has run (INFO commandstats). */
static long long gets_on(const struct h_node *n)
{
    redisContext *c = h_connect_node(n);
    redisReply *r = h_cmd(c, "INFO commandstats");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    const char *at = strstr(r->str, "cmdstat_get:calls=");
    long long v = at ? atoll(at + strlen("cmdstat_get:calls=")) : 0;
    freeReplyObject(r);
    redisFree(c);
    return v;
}

static void set_ok(redisContext *c, const char *key, const char *val)
{
    H_OK(c, "SET %s %s", key, val);
}

static void get_is(redisContext *c, const char *key, const char *val)
{
    redisReply *r = h_cmd(c, "GET %s", key);
    H_EXPECT_BULK(r, val);
    freeReplyObject(r);
}

/* A first read starts the proxy's polling of the replicas; a moment later
 * they are known fresh. */
static void replicas_known(redisContext *c, const char *key)
{
    redisReply *r = h_cmd(c, "GET %s", key);
    freeReplyObject(r);
    usleep(500 * 1000);
}

/* Until the proxy reads key from rep (a replica stopped in the test
 * before comes back a second or so after it is thawed). */
static void replica_serves(redisContext *c, const char *key, const struct h_node *rep)
{
    for (long long until = h_now_ms() + 10000; h_now_ms() < until; h_sleep_ms(100)) {
        long long before = gets_on(rep);
        redisReply *r = h_cmd(c, "GET %s", key);
        freeReplyObject(r);
        if (gets_on(rep) > before)
            return;
    }
    ck_abort_msg("the proxy never read %s from %s:%d", key, rep->host, rep->port);
}

START_TEST(test_reads_spread_over_replicas)
{
    struct h_topo t;
    char key[3][128];
    long long before[3];
    h_topo_load(&t);
    redisContext *w = h_connect_extra(&proxy);
    for (int m = 0; m < 3; m++) {
        h_key_on_master(&t, m, h_prefix(), 0, key[m], sizeof key[m]);
        set_ok(w, key[m], "spread");
    }
    redisContext *r = h_connect_extra(&proxy);     /* a client that wrote nothing */
    for (int m = 0; m < 3; m++) {
        struct h_node rep = h_replica_of(&t.masters[m]);
        replica_serves(r, key[m], &rep);
        before[m] = gets_on(&rep);
    }
    long long replica_reads = proxy_stat("reads_replica");
    for (int i = 0; i < 300; i++)
        get_is(r, key[i % 3], "spread");
    for (int m = 0; m < 3; m++) {
        struct h_node rep = h_replica_of(&t.masters[m]);
        ck_assert_msg(gets_on(&rep) - before[m] >= 50,
                      "replica %s:%d ran %lld of its master's 100 GETs", rep.host, rep.port,
                      gets_on(&rep) - before[m]);
    }
    ck_assert_int_ge(proxy_stat("reads_replica") - replica_reads, 150);
    redisFree(r);
    redisFree(w);
}
END_TEST

/* KEYS keys, each in a bucket of its own (slot % 16), across the masters. */
static void bucket_keys(char keys[KEYS][64])
{
    char tag[32];
    for (int b = 0; b < KEYS; b++) {
        h_tag_for_slot(1000 * b + b % KEYS - (1000 * b) % KEYS, tag, sizeof tag);
        H_FMT(keys[b], sizeof keys[b], "%s:ryw:{%s}", h_prefix(), tag);
    }
}

START_TEST(test_own_writes_read_back_under_lag)
{
    struct h_topo t;
    char keys[KEYS][64], val[32];
    long long last[KEYS];
    struct h_node reps[3];
    h_topo_load(&t);
    bucket_keys(keys);
    for (int m = 0; m < 3; m++)
        reps[m] = h_replica_of(&t.masters[m]);
    redisContext *c = h_connect_extra(&proxy);
    for (int b = 0; b < KEYS; b++) {
        last[b] = -1;
        set_ok(c, keys[b], "-1");
    }
    replicas_known(c, keys[0]);
    long long replica_reads = proxy_stat("reads_replica");
    struct h_guard g = { 0, 0, -1 };
    int frozen = 0;
    for (int i = 0; i < 100000; i++) {
        if (frozen && i % 2500 == 0) {
            h_thaw(&g);
            frozen = 0;
        }
        /* in each 2500 reads, one replica lags: its replication paused
         * (CLIENT PAUSE WRITE: it still serves reads) or it is stopped */
        if (i % 10000 == 7500) {
            h_freeze(&g, h_node_pid(reps[(i / 10000) % 3].port), GUARD_MS);
            frozen = 1;
        } else if (i % 2500 == 0) {
            redisContext *n = h_connect_node(&reps[(i / 2500) % 3]);
            H_OK(n, "CLIENT PAUSE 400 WRITE");
            redisFree(n);
        }
        if (i % 500 == 0) {         /* each key written every 8000 reads */
            int b = (i / 500) % KEYS;
            H_FMT(val, sizeof val, "%d", i);
            set_ok(c, keys[b], val);
            last[b] = i;
            get_is(c, keys[b], val);    /* at once: its master's */
        } else if (i % 500 == 250) {    /* a write and its read in one pipeline */
            int b = (i / 500 + KEYS / 2) % KEYS;
            H_FMT(val, sizeof val, "%d", i);
            redisAppendCommand(c, "SET %s %s", keys[b], val);
            redisAppendCommand(c, "GET %s", keys[b]);
            redisReply *r;
            ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
            H_EXPECT_STATUS(r, "OK");
            freeReplyObject(r);
            ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
            H_EXPECT_BULK(r, val);
            freeReplyObject(r);
            last[b] = i;
        }
        H_FMT(val, sizeof val, "%lld", last[i % KEYS]);
        get_is(c, keys[i % KEYS], val);
    }
    if (frozen)
        h_thaw(&g);
    /* the reads of keys written long enough before went to replicas: the
     * check above ran on them too (a fifth of them, where the machine is
     * fast enough; the rest read a bucket the client had just written) */
    ck_assert_int_ge(proxy_stat("reads_replica") - replica_reads, 10000);
    redisFree(c);
}
END_TEST

START_TEST(test_replica_failure_costs_no_errors)
{
    struct h_topo t;
    char key[3][128];
    struct h_guard g = { 0, 0, -1 };
    h_topo_load(&t);
    redisContext *c = h_connect_extra(&proxy);
    for (int m = 0; m < 3; m++) {
        h_key_on_master(&t, m, h_prefix(), 1, key[m], sizeof key[m]);
        set_ok(c, key[m], "steady");
    }
    redisContext *r = h_connect_extra(&proxy);
    struct h_node rep0 = h_replica_of(&t.masters[0]), rep1 = h_replica_of(&t.masters[1]);
    replica_serves(r, key[0], &rep0);
    long long back = proxy_stat("reads_replica_back");
    /* stopped past node-timeout-ms: the reads it holds go to its master */
    h_freeze(&g, h_node_pid(rep0.port), GUARD_MS);
    long long until = h_now_ms() + 2500;
    for (int i = 0; h_now_ms() < until; i++)
        get_is(r, key[i % 3], "steady");
    h_thaw(&g);
    /* its connections killed under load */
    for (int i = 0; i < 3000; i++) {
        if (i == 1500) {
            redisContext *n = h_connect_node(&rep1);
            redisReply *k = h_cmd(n, "CLIENT KILL TYPE normal SKIPME yes");
            freeReplyObject(k);
            redisFree(n);
        }
        get_is(r, key[i % 3], "steady");
    }
    ck_assert_int_ge(proxy_stat("reads_replica_back"), back + 1);
    redisFree(r);
    redisFree(c);
}
END_TEST

/* A slot of master 0's that holds no key, the n-th such from its first
 * (other tests leave keys behind). */
static int empty_slot_of_master0(const struct h_topo *t, int n)
{
    redisContext *c = h_connect_node(&t->masters[0]);
    for (int s = 0; s < 16384; s++) {
        if (h_topo_owner(t, s) != 0)
            continue;
        redisReply *r = h_cmd(c, "CLUSTER COUNTKEYSINSLOT %d", s);
        H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
        int empty = r->integer == 0;
        freeReplyObject(r);
        if (empty && n-- == 0) {
            redisFree(c);
            return s;
        }
    }
    ck_abort_msg("master 0 has no empty slot");
    return -1;
}

/* The replica of key's master, with READONLY: what it answers to GET. */
static int replica_moves(const struct h_node *rep, const char *key)
{
    redisContext *c = h_connect_node(rep);
    redisReply *r = h_cmd(c, "READONLY");
    freeReplyObject(r);
    r = h_cmd(c, "GET %s", key);
    int moved = r->type == REDIS_REPLY_ERROR && strncmp(r->str, "MOVED", 5) == 0;
    freeReplyObject(r);
    redisFree(c);
    return moved;
}

START_TEST(test_replica_moved_sends_read_to_master)
{
    struct h_topo t;
    char tag[32], key[96];
    h_topo_load(&t);
    /* an empty slot of master 0's, moved to master 1 behind the proxy's back */
    int slot = empty_slot_of_master0(&t, 7);
    h_tag_for_slot(slot, tag, sizeof tag);
    H_FMT(key, sizeof key, "%s:moved:{%s}", h_prefix(), tag);
    /* no refresh from now on: the proxy learns of the move from MOVED */
    lc_write(conf, "threads 1\nread-from prefer-replica\nreplica-max-lag-ms 5000\n"
                   "node-timeout-ms 1000\ntopology-refresh-ms 0\n");
    lc_signal(&proxy, SIGHUP, "config generation 1 in use by every worker", 1);
    redisContext *c = h_connect_extra(&proxy);
    replicas_known(c, key);
    struct h_node rep = h_replica_of(&t.masters[0]);
    long long back = proxy_stat("reads_replica_back");
    h_move_empty_slot(&t, slot, 0, 1);
    for (int i = 0; i < 100 && !replica_moves(&rep, key); i++)
        usleep(50 * 1000);
    ck_assert_msg(replica_moves(&rep, key), "the replica never learned the slot moved");
    /* the write behind the read waits for it, and so for its resend */
    redisReply *r;
    redisAppendCommand(c, "GET %s", key);
    redisAppendCommand(c, "SET %s after", key);
    ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
    H_EXPECT_NIL(r);
    freeReplyObject(r);
    ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    ck_assert_int_ge(proxy_stat("reads_replica_back"), back + 1);
    redisReply *d = h_cmd(c, "DEL %s", key);
    freeReplyObject(d);
    h_move_empty_slot(&t, slot, 1, 0);
    redisFree(c);
}
END_TEST

START_TEST(test_migrating_slot_read_from_masters)
{
    struct h_topo t;
    char tag[32], ka[96], kb[96];
    h_topo_load(&t);
    int slot = empty_slot_of_master0(&t, 11);
    h_tag_for_slot(slot, tag, sizeof tag);
    H_FMT(ka, sizeof ka, "%s:mig:{%s}a", h_prefix(), tag);
    H_FMT(kb, sizeof kb, "%s:mig:{%s}b", h_prefix(), tag);
    redisContext *w = h_connect_extra(&proxy), *r = h_connect_extra(&proxy);
    set_ok(w, ka, "va");
    set_ok(w, kb, "vb");
    replicas_known(r, ka);
    /* the slot starts migrating to master 1 and both keys move: master 0's
     * replica (Redis 7) answers nil for them, not knowing of it */
    redisContext *src = h_connect_node(&t.masters[0]), *dst = h_connect_node(&t.masters[1]);
    H_OK(dst, "CLUSTER SETSLOT %d IMPORTING %s", slot, t.master_id[0]);
    H_OK(src, "CLUSTER SETSLOT %d MIGRATING %s", slot, t.master_id[1]);
    redisReply *x = h_cmd(src, "MIGRATE %s %d %s 0 5000 KEYS %s %s", t.masters[1].host,
                          t.masters[1].port, "", ka, kb);
    H_EXPECT_STATUS(x, "OK");
    freeReplyObject(x);
    /* a write through the proxy meets ASK: the slot's reads go to masters,
     * also once the replica is fresh past it */
    set_ok(w, kb, "vb2");
    h_sleep_ms(1000);
    get_is(r, ka, "va");
    get_is(r, kb, "vb2");
    /* the migration ends (the slot is master 1's), and goes back */
    H_OK(dst, "CLUSTER SETSLOT %d NODE %s", slot, t.master_id[1]);
    H_OK(src, "CLUSTER SETSLOT %d NODE %s", slot, t.master_id[1]);
    redisContext *o = h_connect_node(&t.masters[2]);
    H_OK(o, "CLUSTER SETSLOT %d NODE %s", slot, t.master_id[1]);
    redisFree(o);
    x = h_cmd(dst, "DEL %s %s", ka, kb);
    H_EXPECT_INT(x, 2);
    freeReplyObject(x);
    h_move_empty_slot(&t, slot, 1, 0);
    redisFree(src);
    redisFree(dst);
    redisFree(r);
    redisFree(w);
}
END_TEST

START_TEST(test_what_stays_on_masters)
{
    struct h_topo t;
    char key[128];
    h_topo_load(&t);
    h_key_on_master(&t, 2, h_prefix(), 2, key, sizeof key);
    redisContext *c = h_connect_extra(&proxy);
    set_ok(c, key, "m");
    redisContext *r = h_connect_extra(&proxy);
    replicas_known(r, key);
    long long replica_reads = proxy_stat("reads_replica");
    H_OK(r, "MULTI");
    H_STATUS(r, "QUEUED", "GET %s", key);
    redisReply *x = h_cmd(r, "EXEC");
    H_EXPECT_TYPE(x, REDIS_REPLY_ARRAY);
    freeReplyObject(x);
    x = h_cmd(r, "EVAL_RO %s 1 %s", "return redis.call('GET', KEYS[1])", key);
    H_EXPECT_BULK(x, "m");
    freeReplyObject(x);
    redisContext *sub = h_connect_extra(&proxy), *tr = h_connect_extra(&proxy);
    long long id = h_client_id(sub);
    x = h_cmd(sub, "SUBSCRIBE __redis__:invalidate");
    freeReplyObject(x);
    H_OK(tr, "CLIENT TRACKING ON REDIRECT %lld", id);
    get_is(tr, key, "m");
    redisFree(sub);
    ck_assert_int_eq(proxy_stat("reads_replica"), replica_reads);
    redisFree(tr);
    redisFree(r);
    redisFree(c);
}
END_TEST

/* Last: it reloads (after the MOVED test's reload). */
START_TEST(test_read_from_replica_refuses_without_replica)
{
    struct h_topo t;
    char key0[128], key1[128];
    struct h_guard g = { 0, 0, -1 };
    h_topo_load(&t);
    h_key_on_master(&t, 0, h_prefix(), 3, key0, sizeof key0);
    h_key_on_master(&t, 1, h_prefix(), 3, key1, sizeof key1);
    redisContext *w = h_connect_extra(&proxy);
    set_ok(w, key0, "r0");
    set_ok(w, key1, "r1");
    lc_write(conf, "threads 1\nread-from replica\nreplica-max-lag-ms 300\nnode-timeout-ms 300\n"
                   "topology-refresh-ms 500\n");
    lc_signal(&proxy, SIGHUP, "config generation 2 in use by every worker", 1);
    redisContext *c = h_connect_extra(&proxy);
    replicas_known(c, key0);
    get_is(c, key0, "r0");
    h_freeze(&g, h_node_pid(h_replica_of(&t.masters[0]).port), GUARD_MS);
    redisReply *r = NULL;
    long long until = h_now_ms() + 5000;
    do {
        if (r)
            freeReplyObject(r);
        r = h_cmd(c, "GET %s", key0);
    } while (r->type != REDIS_REPLY_ERROR && h_now_ms() < until);
    H_EXPECT_ERR(r, "CLUSTERDOWN No replica of the master of this slot can serve reads");
    freeReplyObject(r);
    get_is(c, key1, "r1");          /* another master's replica serves */
    h_thaw(&g);
    until = h_now_ms() + 5000;
    for (r = h_cmd(c, "GET %s", key0); r->type == REDIS_REPLY_ERROR && h_now_ms() < until;
         r = h_cmd(c, "GET %s", key0))
        freeReplyObject(r);
    H_EXPECT_BULK(r, "r0");
    freeReplyObject(r);
    redisFree(c);
    redisFree(w);
}
END_TEST

static Suite *read_from_suite(void)
{
    Suite *s = suite_create("read_from");
    TCase *tc = tcase_create("read_from");
    tcase_set_timeout(tc, 300);
    tcase_add_unchecked_fixture(tc, proxy_up, proxy_down);
    tcase_add_unchecked_fixture(tc, NULL, h_thaw_all_nodes);
    tcase_add_test(tc, test_reads_spread_over_replicas);
    tcase_add_test(tc, test_own_writes_read_back_under_lag);
    tcase_add_test(tc, test_replica_failure_costs_no_errors);
    tcase_add_test(tc, test_what_stays_on_masters);
    tcase_add_test(tc, test_migrating_slot_read_from_masters);
    tcase_add_test(tc, test_replica_moved_sends_read_to_master);   /* reloads */
    tcase_add_test(tc, test_read_from_replica_refuses_without_replica);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(read_from_suite());
}
