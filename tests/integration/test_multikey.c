/*
 * Multi-key commands across slots: MSET, MGET, DEL, UNLINK, EXISTS and TOUCH
 * are split by slot and their results merged in the client's argument order,
 * as one Redis server would answer; other multi-key commands run when their
 * keys share a slot and get CROSSSLOT otherwise.
 */
#include "harness.h"

#define CROSSSLOT "CROSSSLOT Keys in request don't hash to the same slot"

/* keys[i] for i < n: interleaved over the masters (m0, m1, m2, m0, ...). */
static void keys_interleaved(const struct h_topo *t, const char *tag, int n, char keys[][128])
{
    char prefix[128];
    H_FMT(prefix, sizeof(prefix), "%s:%s", h_prefix(), tag);
    for (int i = 0; i < n; i++)
        h_key_on_master(t, i % t->nmasters, prefix, i / t->nmasters, keys[i], sizeof(keys[i]));
}

/* GET key on its owner, directly. */
static redisReply *owner_get(const struct h_topo *t, const char *key)
{
    redisContext *c = h_connect_owner(t, key);
    redisReply *r = h_cmd(c, "GET %s", key);
    redisFree(c);
    return r;
}

START_TEST(test_mset_mget_across_masters)
{
    enum { N = 9 };
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    char keys[N][128], vals[N][32], missing[128];
    const char *argv[2 * N + 1];
    redisReply *r;

    h_topo_load(&t);
    keys_interleaved(&t, "mset", N, keys);
    argv[0] = "MSET";
    for (int i = 0; i < N; i++) {
        snprintf(vals[i], sizeof(vals[i]), "val-%d", i);
        argv[1 + 2 * i] = keys[i];
        argv[2 + 2 * i] = vals[i];
    }
    r = h_cmd_argv(p, 2 * N + 1, argv);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);

    for (int i = 0; i < N; i++) {
        r = owner_get(&t, keys[i]);
        H_EXPECT_BULK(r, vals[i]);
        freeReplyObject(r);
    }

    /* reversed, with a missing key in the middle and one key twice */
    snprintf(missing, sizeof(missing), "%s:mset:missing", h_prefix());
    r = h_cmd(p, "MGET %s %s %s %s %s %s %s", keys[8], keys[4], missing, keys[3], keys[1],
              keys[8], keys[0]);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 7);
    H_EXPECT_BULK(r->element[0], vals[8]);
    H_EXPECT_BULK(r->element[1], vals[4]);
    H_EXPECT_NIL(r->element[2]);
    H_EXPECT_BULK(r->element[3], vals[3]);
    H_EXPECT_BULK(r->element[4], vals[1]);
    H_EXPECT_BULK(r->element[5], vals[8]);
    H_EXPECT_BULK(r->element[6], vals[0]);
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/* 500 keys, every other one set: one MGET answers all, in order. */
START_TEST(test_mget_500_keys)
{
    enum { N = 500 };
    redisContext *p = h_connect_proxy();
    static char keys[N][128];
    const char *argv[N + 1];
    redisReply *r;

    argv[0] = "MGET";
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof(keys[i]), "%s:many:%d", h_prefix(), i);
        argv[i + 1] = keys[i];
        if (i % 2 == 0)
            redisAppendCommand(p, "SET %s %d", keys[i], i);
    }
    for (int i = 0; i < N; i += 2) {
        r = h_get_reply(p);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);
    }
    r = h_cmd_argv(p, N + 1, argv);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, N);
    for (int i = 0; i < N; i++) {
        char want[16];
        snprintf(want, sizeof(want), "%d", i);
        if (i % 2 == 0)
            H_EXPECT_BULK(r->element[i], want);
        else
            H_EXPECT_NIL(r->element[i]);
    }
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/* A key that holds no string reads as nil in MGET, as on one server. */
START_TEST(test_mget_wrong_type_is_nil)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    char keys[3][128];
    redisReply *r;

    h_topo_load(&t);
    keys_interleaved(&t, "wt", 3, keys);
    H_OK(p, "SET %s s", keys[0]);
    r = h_cmd(p, "RPUSH %s l", keys[1]);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    H_OK(p, "SET %s s2", keys[2]);
    r = h_cmd(p, "MGET %s %s %s", keys[0], keys[1], keys[2]);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 3);
    H_EXPECT_BULK(r->element[0], "s");
    H_EXPECT_NIL(r->element[1]);
    H_EXPECT_BULK(r->element[2], "s2");
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/*
 * Counting commands summed over the parts, with one server's semantics for
 * repeated keys: EXISTS and TOUCH count each occurrence, DEL and UNLINK
 * delete a key once.
 */
START_TEST(test_exists_touch_del_unlink_counts)
{
    enum { N = 6 };
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    char keys[N][128], missing[128];
    redisReply *r;

    h_topo_load(&t);
    keys_interleaved(&t, "cnt", N, keys);
    snprintf(missing, sizeof(missing), "%s:cnt:missing", h_prefix());
    for (int i = 0; i < N; i++)
        H_OK(p, "SET %s %d", keys[i], i);

    r = h_cmd(p, "EXISTS %s %s %s %s %s", keys[0], keys[1], missing, keys[2], keys[0]);
    H_EXPECT_INT(r, 4);
    freeReplyObject(r);
    r = h_cmd(p, "TOUCH %s %s %s %s", keys[3], missing, keys[4], keys[5]);
    H_EXPECT_INT(r, 3);
    freeReplyObject(r);

    r = h_cmd(p, "DEL %s %s %s %s", keys[0], keys[1], missing, keys[0]);
    H_EXPECT_INT(r, 2);
    freeReplyObject(r);
    r = h_cmd(p, "UNLINK %s %s %s %s", keys[2], keys[3], keys[4], keys[2]);
    H_EXPECT_INT(r, 3);
    freeReplyObject(r);

    for (int i = 0; i < N; i++) {
        r = owner_get(&t, keys[i]);
        if (i < 5) {
            H_EXPECT_NIL(r);
        } else {
            H_EXPECT_BULK(r, "5");
        }
        freeReplyObject(r);
    }
    r = h_cmd(p, "EXISTS %s %s %s", keys[0], keys[4], keys[5]);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/* Multi-key commands that cannot be split: fine in one slot, CROSSSLOT else. */
START_TEST(test_same_slot_and_crossslot)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    char a[128], b[128], c[128], x[2][128];
    redisReply *r;

    h_topo_load(&t);
    snprintf(a, sizeof(a), "{%s:tag}:a", h_prefix());
    snprintf(b, sizeof(b), "{%s:tag}:b", h_prefix());
    snprintf(c, sizeof(c), "{%s:tag}:c", h_prefix());
    keys_interleaved(&t, "xs", 2, x);

    r = h_cmd(p, "MSETNX %s 1 %s 2", a, b);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    H_OK(p, "RENAME %s %s", a, c);
    r = h_cmd(p, "MGET %s %s %s", a, b, c);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    H_EXPECT_NIL(r->element[0]);
    H_EXPECT_BULK(r->element[1], "2");
    H_EXPECT_BULK(r->element[2], "1");
    freeReplyObject(r);
    r = h_cmd(p, "SADD %s m", a);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    r = h_cmd(p, "SUNIONSTORE %s:u %s", a, a);
    /* "{tag}:a:u" shares the tag */
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);

    /* keys on two different masters */
    r = h_cmd(p, "MSETNX %s 1 %s 2", x[0], x[1]);
    H_EXPECT_ERR(r, CROSSSLOT);
    freeReplyObject(r);
    r = h_cmd(p, "RENAME %s %s", c, x[1]);
    H_EXPECT_ERR(r, CROSSSLOT);
    freeReplyObject(r);
    r = h_cmd(p, "SINTERSTORE %s %s %s", x[0], a, x[1]);
    H_EXPECT_ERR(r, CROSSSLOT);
    freeReplyObject(r);
    r = h_cmd(p, "LMOVE %s %s LEFT RIGHT", x[0], x[1]);
    H_EXPECT_ERR(r, CROSSSLOT);
    freeReplyObject(r);

    /* nothing was written by the refused commands */
    r = h_cmd(p, "EXISTS %s %s", x[0], x[1]);
    H_EXPECT_INT(r, 0);
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/* Arity errors as one server words them, before anything is split. */
START_TEST(test_multikey_arity_errors)
{
    redisContext *p = h_connect_proxy();
    static const struct {
        const char *cmd;
        const char *err;
    } cases[] = {
        { "MSET a", "ERR wrong number of arguments for 'mset' command" },
        { "MSET a 1 b", "ERR wrong number of arguments for 'mset' command" },
        { "MGET", "ERR wrong number of arguments for 'mget' command" },
        { "DEL", "ERR wrong number of arguments for 'del' command" },
        { "EXISTS", "ERR wrong number of arguments for 'exists' command" },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        redisReply *r = h_cmd(p, cases[i].cmd);
        H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
        ck_assert_msg(strcmp(r->str, cases[i].err) == 0, "%s: got '%s', want '%s'",
                      cases[i].cmd, r->str, cases[i].err);
        freeReplyObject(r);
    }
    redisFree(p);
}
END_TEST

/* Multi-key commands in a pipeline with single-key ones keep their places. */
START_TEST(test_multikey_in_pipeline)
{
    enum { N = 6, ROUNDS = 200 };
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    char keys[N][128];

    h_topo_load(&t);
    keys_interleaved(&t, "pl", N, keys);
    for (int i = 0; i < ROUNDS; i++) {
        redisAppendCommand(p, "MSET %s %d %s %d %s %d", keys[0], i, keys[1], i, keys[2], i);
        redisAppendCommand(p, "INCR %s", keys[3]);
        redisAppendCommand(p, "MGET %s %s %s %s", keys[2], keys[1], keys[0], keys[3]);
        redisAppendCommand(p, "EXISTS %s %s %s", keys[4], keys[0], keys[5]);
    }
    for (int i = 0; i < ROUNDS; i++) {
        char want[16], ctr[16];
        redisReply *r;

        snprintf(want, sizeof(want), "%d", i);
        snprintf(ctr, sizeof(ctr), "%d", i + 1);
        r = h_get_reply(p);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);
        r = h_get_reply(p);
        H_EXPECT_INT(r, i + 1);
        freeReplyObject(r);
        r = h_get_reply(p);
        H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
        ck_assert_uint_eq(r->elements, 4);
        for (int j = 0; j < 3; j++)
            H_EXPECT_BULK(r->element[j], want);
        H_EXPECT_BULK(r->element[3], ctr);
        freeReplyObject(r);
        r = h_get_reply(p);
        H_EXPECT_INT(r, 1);
        freeReplyObject(r);
    }
    redisFree(p);
}
END_TEST

static Suite *multikey_suite(void)
{
    Suite *s = suite_create("multikey");
    TCase *tc = tcase_create("multikey");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_mset_mget_across_masters);
    tcase_add_test(tc, test_mget_500_keys);
    tcase_add_test(tc, test_mget_wrong_type_is_nil);
    tcase_add_test(tc, test_exists_touch_del_unlink_counts);
    tcase_add_test(tc, test_same_slot_and_crossslot);
    tcase_add_test(tc, test_multikey_arity_errors);
    tcase_add_test(tc, test_multikey_in_pipeline);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(multikey_suite());
}
