/*
 * A master that stops answering: frozen with SIGSTOP (the process lives, its
 * sockets accept, nothing replies), seen through an extra proxy with
 * node-timeout-ms 3000. Commands for its keys must fail within the timeout
 * plus slack instead of hanging, keys on the other masters must keep working
 * meanwhile, and after SIGCONT the node serves again. A master that only
 * pauses writes (CLIENT PAUSE WRITE) still answers: a write waits the pause
 * out, however longer than node-timeout-ms, and runs once.
 *
 * The node always gets SIGCONT: h_freeze's guard process sends it as soon as
 * the test process goes away for any reason, or after a deadline; and
 * Check's parent process sends SIGCONT to every node after the test
 * (h_thaw_all_nodes).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "harness.h"

enum {
    NODE_TIMEOUT_MS = 3000,
    ERROR_WITHIN_MS = NODE_TIMEOUT_MS + 2000,   /* timeout plus slack */
    /* other masters: unaffected, i.e. well under the timeout a command stuck
     * behind the frozen master would wait (wide: CI machines are loaded) */
    OTHER_WITHIN_MS = NODE_TIMEOUT_MS / 2,
    GUARD_DEADLINE_MS = 12000,                  /* well under cluster-node-timeout */
    RESUME_WITHIN_MS = 10000,
};

struct other_load {
    pthread_t thread;
    struct h_node proxy;
    char keys[4][128];
    int nkeys;
    atomic_int *stop;
    long ops, errors;
    long long worst_ms;
    char first_error[256];
};

/* SET/GET on keys of the other masters until told to stop, timing each. */
static void *other_main(void *arg)
{
    struct other_load *o = arg;
    redisContext *c = h_connect_try(o->proxy.host, o->proxy.port);

    if (c == NULL) {
        o->errors = 1;
        snprintf(o->first_error, sizeof(o->first_error), "cannot connect");
        return NULL;
    }
    while (!atomic_load(o->stop)) {
        const char *key = o->keys[o->ops % o->nkeys];
        long long t0 = h_now_ms(), dt;
        redisReply *r = redisCommand(c, "SET %s %ld", key, o->ops), *r2 = NULL;
        int ok = r != NULL && r->type == REDIS_REPLY_STATUS;

        if (ok) {
            r2 = redisCommand(c, "GET %s", key);
            ok = r2 != NULL && r2->type == REDIS_REPLY_STRING && atol(r2->str) == o->ops;
        }
        dt = h_now_ms() - t0;
        if (dt > o->worst_ms)
            o->worst_ms = dt;
        if (!ok && o->errors++ == 0)
            snprintf(o->first_error, sizeof(o->first_error), "%s",
                     r == NULL ? c->errstr : h_show(r2 != NULL ? r2 : r));
        if (r != NULL)
            freeReplyObject(r);
        if (r2 != NULL)
            freeReplyObject(r2);
        if (c->err != 0)
            break;
        o->ops++;
        h_sleep_ms(5);          /* a pace for the load, not a wait for a state */
    }
    redisFree(c);
    return NULL;
}

/* Sends cmd and checks it fails with an error reply within the limit. */
#define EXPECT_FAST_ERROR(c, ...) do { \
    long long t0_ = h_now_ms(), dt_; \
    redisReply *r_ = redisCommand((c), __VA_ARGS__); \
    dt_ = h_now_ms() - t0_; \
    ck_assert_msg(r_ != NULL, "no reply after %lld ms (%s): the proxy hangs", dt_, (c)->errstr); \
    H_EXPECT_TYPE(r_, REDIS_REPLY_ERROR); \
    ck_assert_msg(dt_ <= ERROR_WITHIN_MS, "error after %lld ms, want <= %d", dt_, \
                  ERROR_WITHIN_MS); \
    freeReplyObject(r_); \
} while (0)

START_TEST(test_paused_master)
{
    static const char *args[] = { "--node-timeout-ms", "3000", NULL };
    struct h_topo t;
    struct h_proxy px;
    struct h_guard g = { 0, 0, -1 };
    struct other_load o;
    atomic_int stop = 0;
    struct h_node seed;
    char seedbuf[128], key[128], val[64];
    redisContext *c;
    redisReply *r;
    int m = -1;
    long long t0;

    h_topo_load(&t);
    /* freeze a master that is not the extra proxy's seed */
    h_seed(seedbuf, sizeof(seedbuf));
    ck_assert_int_eq(h_parse_addr(seedbuf, &seed), 0);
    for (int i = 0; i < t.nmasters && m < 0; i++)
        if (t.masters[i].port != seed.port || strcmp(t.masters[i].host, seed.host) != 0)
            m = i;
    ck_assert_int_ge(m, 0);

    h_proxy_start(&px, args);
    c = h_connect_extra(&px);

    h_key_on_master(&t, m, h_prefix(), 0, key, sizeof(key));
    snprintf(val, sizeof(val), "before pause");
    H_OK(c, "SET %s %s", key, val);
    memset(&o, 0, sizeof(o));
    o.proxy = px.addr;
    o.stop = &stop;
    for (int i = 0, n = 0; i < t.nmasters; i++) {
        char prefix[160];
        if (i == m)
            continue;
        snprintf(prefix, sizeof(prefix), "%s:other", h_prefix());
        h_key_on_master(&t, i, prefix, 0, o.keys[n], sizeof(o.keys[n]));
        h_key_on_master(&t, i, prefix, 1, o.keys[n + 1], sizeof(o.keys[n + 1]));
        n += 2;
        o.nkeys = n;
        if (n == 4)
            break;
    }
    H_OK(c, "SET %s warm", o.keys[0]);

    h_freeze(&g, h_node_pid(t.masters[m].port), GUARD_DEADLINE_MS);
    ck_assert_msg(h_proc_state(g.node_pid) == 'T', "node %d not stopped", t.masters[m].port);
    ck_assert_int_eq(pthread_create(&o.thread, NULL, other_main, &o), 0);

    /* a read, then a pipeline mixing the frozen master and another one */
    EXPECT_FAST_ERROR(c, "GET %s", key);
    t0 = h_now_ms();
    redisAppendCommand(c, "GET %s", key);
    redisAppendCommand(c, "GET %s", o.keys[0]);
    r = h_get_reply(c);
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    r = h_get_reply(c);
    ck_assert_msg(h_now_ms() - t0 <= ERROR_WITHIN_MS, "pipeline took %lld ms", h_now_ms() - t0);
    ck_assert_msg(r->type != REDIS_REPLY_ERROR, "other master's key: %s", h_show(r));
    freeReplyObject(r);
    /* still no hang once the node's connection has been given up */
    EXPECT_FAST_ERROR(c, "EXISTS %s", key);

    atomic_store(&stop, 1);
    pthread_join(o.thread, NULL);
    ck_assert_msg(h_proc_state(g.node_pid) == 'T', "node resumed too early: the test is void");
    h_thaw(&g);

    ck_assert_msg(o.errors == 0, "other masters: %ld errors of %ld; first: %s", o.errors, o.ops,
                  o.first_error);
    ck_assert_msg(o.ops > 10, "other masters: only %ld operations", o.ops);
    ck_assert_msg(o.worst_ms <= OTHER_WITHIN_MS, "other masters: slowest took %lld ms",
                  o.worst_ms);

    /* service resumes: the key reads back as it was */
    t0 = h_now_ms();
    for (;;) {
        r = redisCommand(c, "GET %s", key);
        if (r == NULL) {
            redisFree(c);
            c = h_connect_extra(&px);
        } else if (r->type == REDIS_REPLY_STRING) {
            H_EXPECT_BULK(r, val);
            freeReplyObject(r);
            break;
        } else {
            freeReplyObject(r);
        }
        ck_assert_msg(h_now_ms() - t0 < RESUME_WITHIN_MS, "no service %d ms after SIGCONT",
                      RESUME_WITHIN_MS);
        h_sleep_ms(100);
    }
    H_OK(c, "SET %s %s", key, "after pause");
    redisFree(c);
    h_proxy_stop(&px);
}
END_TEST

/* A master that pauses writes (CLIENT PAUSE WRITE, as a manual failover
 * does) holds an INCR back for longer than node-timeout-ms but answers a
 * PING: the INCR waits the pause out and runs once, as on one server. */
START_TEST(test_write_paused_master)
{
    static const char *args[] = { "--node-timeout-ms", "600", NULL };
    enum { PAUSE_MS = 2000 };
    struct h_topo t;
    struct h_proxy px;
    char key[128];
    redisReply *r;

    h_topo_load(&t);
    h_proxy_start(&px, args);
    redisContext *c = h_connect_extra(&px);
    h_key_on_master(&t, 0, h_prefix(), 7, key, sizeof(key));
    H_OK(c, "SET %s 0", key);
    redisContext *admin = h_connect_node(&t.masters[0]);
    long long t0 = h_now_ms();
    H_OK(admin, "CLIENT PAUSE %d WRITE", PAUSE_MS);
    r = h_cmd(c, "INCR %s", key);
    long long took = h_now_ms() - t0;
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    ck_assert_msg(took >= PAUSE_MS / 2, "INCR answered after %lld ms: the pause did not hold it, "
                  "the test is void", took);
    r = h_cmd(admin, "GET %s", key);
    H_EXPECT_BULK(r, "1");
    freeReplyObject(r);
    redisFree(admin);
    redisFree(c);
    h_proxy_stop(&px);
}
END_TEST

static Suite *pause_suite(void)
{
    Suite *s = suite_create("pause");
    TCase *tc = tcase_create("pause");

    tcase_set_timeout(tc, 60);
    tcase_add_unchecked_fixture(tc, NULL, h_thaw_all_nodes);
    tcase_add_test(tc, test_paused_master);
    tcase_add_test(tc, test_write_paused_master);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(pause_suite());
}
