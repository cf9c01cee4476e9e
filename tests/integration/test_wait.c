/*
 * WAIT through the proxy against the real cluster (3 masters, one replica
 * each): it waits for the replicas of the masters the client wrote to
 * (after a write, WAIT 1 answers 1; WAIT 2 times out with 1), asks only
 * those masters, leaves no key of its own behind, is refused inside MULTI,
 * and a client that leaves while WAIT blocks frees the node connection.
 */
#include "harness.h"

/* INFO field of one master, read on the node directly. */
static long long master_info(const struct h_node *n, const char *section, const char *field)
{
    redisContext *c = h_connect_node(n);
    redisReply *r = h_cmd(c, "INFO %s", section);
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    const char *at = strstr(r->str, field);
    long long v = at ? atoll(at + strlen(field)) : 0;
    freeReplyObject(r);
    redisFree(c);
    return v;
}

/* WAIT commands each master has run. */
static void wait_calls(const struct h_topo *t, long long *calls)
{
    for (int m = 0; m < t->nmasters; m++)
        calls[m] = master_info(&t->masters[m], "commandstats", "cmdstat_wait:calls=");
}

static long long blocked_sum(const struct h_topo *t)
{
    long long sum = 0;
    for (int m = 0; m < t->nmasters; m++)
        sum += master_info(&t->masters[m], "clients", "blocked_clients:");
    return sum;
}

/* The masters' blocked clients once they are want, or after ms. */
static long long blocked_sum_reaches(const struct h_topo *t, long long want, long ms)
{
    long long deadline = h_now_ms() + ms, have;
    while ((have = blocked_sum(t)) != want && h_now_ms() < deadline)
        h_sleep_ms(20);
    return have;
}

/* Waits (10 s at most) until the replica of master n has acknowledged all
 * the master has written: slave0's offset reaches master_repl_offset. */
static void expect_replica_acked(const struct h_node *n)
{
    long long deadline = h_now_ms() + 10000, master = -1, acked = -2;
    while (h_now_ms() < deadline) {
        master = master_info(n, "replication", "master_repl_offset:");
        acked = master_info(n, "replication", ",offset=");
        if (acked == master)
            return;
        h_sleep_ms(20);
    }
    ck_abort_msg("the replica of %s:%d acknowledged offset %lld of %lld", n->host, n->port,
                 acked, master);
}

/* No key of the proxy's WAIT is left on any master. */
static void expect_no_wait_keys(const struct h_topo *t)
{
    for (int m = 0; m < t->nmasters; m++) {
        redisContext *c = h_connect_node(&t->masters[m]);
        redisReply *r = h_cmd(c, "SCAN 0 MATCH tagproxy:wait* COUNT 100000");
        H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
        ck_assert_int_eq(r->elements, 2);
        ck_assert_msg(r->element[1]->elements == 0 && strcmp(r->element[0]->str, "0") == 0,
                      "a tagproxy:wait key is left on master %d", m);
        freeReplyObject(r);
        redisFree(c);
    }
}

START_TEST(test_write_then_wait_one_replica)
{
    struct h_topo t;
    char key[128];
    redisContext *p = h_connect_proxy();
    redisReply *r;

    h_topo_load(&t);
    h_key_on_master(&t, 0, h_prefix(), 0, key, sizeof key);
    r = h_cmd(p, "SET %s v", key);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    r = h_cmd(p, "WAIT 1 1000");
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    expect_no_wait_keys(&t);
    redisFree(p);
}
END_TEST

/* Writes on two masters: both are asked (and only they), the answer is 1. */
START_TEST(test_writes_on_two_masters)
{
    struct h_topo t;
    char prefix[128], k0[128], k1[128];
    long long before[H_MAX_NODES], after[H_MAX_NODES];
    redisContext *p = h_connect_proxy();
    redisReply *r;

    h_topo_load(&t);
    ck_assert_int_ge(t.nmasters, 3);
    H_FMT(prefix, sizeof prefix, "%s:two", h_prefix());
    h_key_on_master(&t, 0, prefix, 0, k0, sizeof k0);
    h_key_on_master(&t, 1, prefix, 0, k1, sizeof k1);
    r = h_cmd(p, "SET %s a", k0);
    freeReplyObject(r);
    r = h_cmd(p, "RPUSH %s b", k1);
    freeReplyObject(r);
    r = h_cmd(p, "GET %s", k0);     /* a read adds no master */
    freeReplyObject(r);
    wait_calls(&t, before);
    r = h_cmd(p, "WAIT 1 1000");
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    wait_calls(&t, after);
    ck_assert_int_eq(after[0] - before[0], 1);
    ck_assert_int_eq(after[1] - before[1], 1);
    ck_assert_int_eq(after[2] - before[2], 0);
    /* the set was cleared: a second WAIT without writes asks one master */
    r = h_cmd(p, "WAIT 1 1000");
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    wait_calls(&t, before);
    ck_assert_int_eq(before[0] + before[1] + before[2] - after[0] - after[1] - after[2], 1);
    /* a split write (MSET's parts) and a script count too */
    h_key_on_master(&t, 2, prefix, 0, k1, sizeof k1);
    r = h_cmd(p, "MSET %s a %s b", k0, k1);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    h_key_on_master(&t, 1, prefix, 1, k1, sizeof k1);
    r = h_cmd(p, "EVAL %s 1 %s", "return redis.call('set', KEYS[1], 'e')", k1);
    freeReplyObject(r);
    wait_calls(&t, before);
    r = h_cmd(p, "WAIT 1 1000");
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    wait_calls(&t, after);
    for (int m = 0; m < 3; m++)
        ck_assert_int_eq(after[m] - before[m], 1);
    expect_no_wait_keys(&t);
    redisFree(p);
}
END_TEST

/* Two replicas cannot answer (one per master): WAIT times out with 1. */
START_TEST(test_wait_two_times_out_with_one)
{
    struct h_topo t;
    char key[128];
    redisContext *p = h_connect_proxy();
    redisReply *r;

    h_topo_load(&t);
    h_key_on_master(&t, 2, h_prefix(), 0, key, sizeof key);
    r = h_cmd(p, "INCR %s", key);
    freeReplyObject(r);
    long long start = h_now_ms();
    r = h_cmd(p, "WAIT 2 300");
    long long took = h_now_ms() - start;
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    ck_assert_msg(took >= 250, "WAIT 2 300 answered after %lld ms", took);
    /* what follows WAIT runs after it, in order */
    ck_assert_int_eq(redisAppendCommand(p, "WAIT 2 200"), REDIS_OK);
    ck_assert_int_eq(redisAppendCommand(p, "INCR %s", key), REDIS_OK);
    r = h_get_reply(p);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    r = h_get_reply(p);
    H_EXPECT_INT(r, 2);
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/* Inside MULTI: refused (the block's connection's offset is not the
 * client's), which aborts EXEC as any refused command does. */
START_TEST(test_wait_inside_multi_refused)
{
    redisContext *p = h_connect_proxy();
    redisReply *r;

    r = h_cmd(p, "MULTI");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    r = h_cmd(p, "WAIT 1 100");
    H_EXPECT_ERR(r, "ERR WAIT inside MULTI is not supported through the proxy");
    freeReplyObject(r);
    r = h_cmd(p, "EXEC");
    H_EXPECT_ERR(r, "EXECABORT");
    freeReplyObject(r);
    /* the node's own argument errors come through */
    r = h_cmd(p, "WAIT x 1");
    H_EXPECT_ERR(r, "ERR value is not an integer or out of range");
    freeReplyObject(r);
    r = h_cmd(p, "WAIT 1 -1");
    H_EXPECT_ERR(r, "ERR timeout is negative");
    freeReplyObject(r);
    r = h_cmd(p, "PING");
    H_EXPECT_STATUS(r, "PONG");
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/* WAIT 2 0 blocks for good; the client leaving ends it on the node at once. */
START_TEST(test_client_leaves_during_wait)
{
    struct h_topo t;
    char key[128];
    redisContext *p = h_connect_proxy();
    redisReply *r;

    h_topo_load(&t);
    long long base = blocked_sum(&t);
    h_key_on_master(&t, 1, h_prefix(), 0, key, sizeof key);
    r = h_cmd(p, "SET %s x", key);
    freeReplyObject(r);
    ck_assert_int_eq(redisAppendCommand(p, "WAIT 2 0"), REDIS_OK);
    h_flush(p);
    ck_assert_int_eq(blocked_sum_reaches(&t, base + 1, 5000), base + 1);
    redisFree(p);
    ck_assert_int_eq(blocked_sum_reaches(&t, base, 2000), base);
    expect_no_wait_keys(&t);
}
END_TEST

/* CLIENT UNBLOCK (by another client) ends a WAIT that blocks on two
 * masters: TIMEOUT gives the replicas that did acknowledge (one per
 * master), ERROR Redis's -UNBLOCKED; nothing stays blocked on the nodes. */
START_TEST(test_client_unblock_ends_wait)
{
    struct h_topo t;
    char prefix[128], k0[128], k1[128];
    redisContext *p = h_connect_proxy(), *q = h_connect_proxy();
    redisReply *r;

    h_topo_load(&t);
    long long base = blocked_sum(&t);
    long long id = h_client_id(p);
    H_FMT(prefix, sizeof prefix, "%s:unblock", h_prefix());
    h_key_on_master(&t, 0, prefix, 0, k0, sizeof k0);
    h_key_on_master(&t, 1, prefix, 0, k1, sizeof k1);
    for (int round = 0; round < 2; round++) {
        H_OK(p, "SET %s a", k0);
        H_OK(p, "SET %s b", k1);
        /* both replicas have acknowledged the writes first: the count the
         * unblocked WAIT gives does not race their acknowledgements */
        expect_replica_acked(&t.masters[0]);
        expect_replica_acked(&t.masters[1]);
        ck_assert_int_eq(redisAppendCommand(p, "WAIT 2 0"), REDIS_OK);
        h_flush(p);
        ck_assert_int_eq(blocked_sum_reaches(&t, base + 2, 5000), base + 2);
        r = round ? h_cmd(q, "CLIENT UNBLOCK %lld ERROR", id) : h_cmd(q, "CLIENT UNBLOCK %lld", id);
        H_EXPECT_INT(r, 1);
        freeReplyObject(r);
        r = h_get_reply(p);
        if (round)
            H_EXPECT_ERR(r, "UNBLOCKED client unblocked via CLIENT UNBLOCK");
        else
            H_EXPECT_INT(r, 1);
        freeReplyObject(r);
        ck_assert_int_eq(blocked_sum_reaches(&t, base, 2000), base);
    }
    r = h_cmd(q, "CLIENT UNBLOCK %lld", id);
    H_EXPECT_INT(r, 0);
    freeReplyObject(r);
    expect_no_wait_keys(&t);
    redisFree(p);
    redisFree(q);
}
END_TEST

static Suite *wait_suite(void)
{
    Suite *s = suite_create("wait");
    TCase *tc = tcase_create("wait");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_write_then_wait_one_replica);
    tcase_add_test(tc, test_writes_on_two_masters);
    tcase_add_test(tc, test_wait_two_times_out_with_one);
    tcase_add_test(tc, test_wait_inside_multi_refused);
    tcase_add_test(tc, test_client_leaves_during_wait);
    tcase_add_test(tc, test_client_unblock_ends_wait);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(wait_suite());
}
