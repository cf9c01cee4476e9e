/*
 * Routing: keys of every type land on the master that owns their slot, on
 * all three masters, and read back through the proxy as written. Each write
 * is checked on the owner node directly.
 */
#include "harness.h"

/* The slot vectors of the Redis Cluster spec and a real 7.0 node. */
static const struct {
    const char *key;
    int slot;
} slot_vectors[] = {
    { "foo", 12182 },
    { "bar", 5061 },
    { "123456789", 12739 },
    { "{user1000}.following", 3443 },
    { "user1000", 3443 },
    { "{}foo", 9500 },
    { "foo{}{bar}", 8363 },
    { "foo{{bar}}zap", 4015 },
    { "foo{bar}{zap}", 5061 },
    { "", 0 },
};

/* The harness's own CRC16 must be right before any test relies on it. */
START_TEST(test_harness_slot_vectors)
{
    ck_assert_uint_eq(h_crc16("123456789", 9), 0x31c3);
    for (size_t i = 0; i < sizeof(slot_vectors) / sizeof(slot_vectors[0]); i++)
        ck_assert_msg(h_slot(slot_vectors[i].key) == slot_vectors[i].slot,
                      "slot of '%s': %d, want %d", slot_vectors[i].key,
                      h_slot(slot_vectors[i].key), slot_vectors[i].slot);
}
END_TEST

/* ... and agree with a node's CLUSTER KEYSLOT on odd keys. */
START_TEST(test_harness_slot_matches_node)
{
    struct h_node nodes[H_MAX_NODES];
    redisContext *c;
    char key[64];

    h_nodes(nodes, H_MAX_NODES);
    c = h_connect_node(&nodes[0]);
    for (int i = 0; i < 300; i++) {
        redisReply *r;
        switch (i % 4) {
        case 0: snprintf(key, sizeof(key), "k%d", i * 7919); break;
        case 1: snprintf(key, sizeof(key), "{t%d}x", i); break;
        case 2: snprintf(key, sizeof(key), "a{}b{%d}", i); break;
        default: snprintf(key, sizeof(key), "{%d}}{", i); break;
        }
        r = h_cmd(c, "CLUSTER KEYSLOT %s", key);
        H_EXPECT_INT(r, h_slot(key));
        freeReplyObject(r);
    }
    redisFree(c);
}
END_TEST

START_TEST(test_cluster_has_three_masters)
{
    struct h_topo t;
    int covered = 0;

    h_topo_load(&t);
    ck_assert_int_ge(t.nmasters, 3);
    for (int s = 0; s < H_SLOTS; s++)
        covered += h_topo_owner(&t, s) >= 0;
    ck_assert_int_eq(covered, H_SLOTS);
}
END_TEST

/* A string key per master: through the proxy, on the owner, nowhere else. */
START_TEST(test_strings_on_every_master)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    char key[128], val[160];

    h_topo_load(&t);
    for (int m = 0; m < t.nmasters; m++) {
        for (int n = 0; n < 5; n++) {
            redisContext *owner, *other;
            redisReply *r;

            h_key_on_master(&t, m, h_prefix(), n, key, sizeof(key));
            snprintf(val, sizeof(val), "value of %s", key);
            H_OK(p, "SET %s %s", key, val);
            r = h_cmd(p, "GET %s", key);
            H_EXPECT_BULK(r, val);
            freeReplyObject(r);

            owner = h_connect_node(&t.masters[m]);
            r = h_cmd(owner, "GET %s", key);
            H_EXPECT_BULK(r, val);
            freeReplyObject(r);

            /* any other master redirects: the key is not stored there */
            other = h_connect_node(&t.masters[(m + 1) % t.nmasters]);
            r = h_cmd(other, "GET %s", key);
            H_EXPECT_ERR(r, "MOVED ");
            freeReplyObject(r);
            redisFree(other);

            r = h_cmd(p, "DEL %s", key);
            H_EXPECT_INT(r, 1);
            freeReplyObject(r);
            r = h_cmd(owner, "EXISTS %s", key);
            H_EXPECT_INT(r, 0);
            freeReplyObject(r);
            redisFree(owner);
        }
    }
    redisFree(p);
}
END_TEST

/* Hashes, lists, sets, sorted sets and streams, one of each per master. */
START_TEST(test_types_on_every_master)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    char prefix[128], key[128];
    static const char *types[] = { "hash", "list", "set", "zset", "stream" };

    h_topo_load(&t);
    for (int m = 0; m < t.nmasters; m++) {
        redisContext *owner = h_connect_node(&t.masters[m]);
        for (int i = 0; i < 5; i++) {
            redisReply *r;

            snprintf(prefix, sizeof(prefix), "%s:%s", h_prefix(), types[i]);
            h_key_on_master(&t, m, prefix, 0, key, sizeof(key));
            switch (i) {
            case 0:
                r = h_cmd(p, "HSET %s f1 v1 f2 v2", key);
                H_EXPECT_INT(r, 2);
                freeReplyObject(r);
                r = h_cmd(p, "HGET %s f2", key);
                H_EXPECT_BULK(r, "v2");
                break;
            case 1:
                r = h_cmd(p, "RPUSH %s a b c", key);
                H_EXPECT_INT(r, 3);
                freeReplyObject(r);
                r = h_cmd(p, "LRANGE %s 0 -1", key);
                H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
                ck_assert_uint_eq(r->elements, 3);
                H_EXPECT_BULK(r->element[0], "a");
                H_EXPECT_BULK(r->element[2], "c");
                break;
            case 2:
                r = h_cmd(p, "SADD %s x y x", key);
                H_EXPECT_INT(r, 2);
                freeReplyObject(r);
                r = h_cmd(p, "SISMEMBER %s y", key);
                H_EXPECT_INT(r, 1);
                break;
            case 3:
                r = h_cmd(p, "ZADD %s 2 two 1 one", key);
                H_EXPECT_INT(r, 2);
                freeReplyObject(r);
                r = h_cmd(p, "ZRANGE %s 0 -1 WITHSCORES", key);
                H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
                ck_assert_uint_eq(r->elements, 4);
                H_EXPECT_BULK(r->element[0], "one");
                H_EXPECT_BULK(r->element[3], "2");
                break;
            default:
                r = h_cmd(p, "XADD %s 1-1 f v", key);
                H_EXPECT_BULK(r, "1-1");
                freeReplyObject(r);
                r = h_cmd(p, "XLEN %s", key);
                H_EXPECT_INT(r, 1);
                break;
            }
            freeReplyObject(r);
            r = h_cmd(owner, "TYPE %s", key);
            H_EXPECT_STATUS(r, types[i]);
            freeReplyObject(r);
        }
        redisFree(owner);
    }
    redisFree(p);
}
END_TEST

/* 600 keys named without regard to slots reach all masters, each its owner. */
START_TEST(test_many_keys_spread)
{
    enum { N = 600 };
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    redisContext *owners[H_MAX_NODES];
    int per_master[H_MAX_NODES] = { 0 };
    char key[128];

    h_topo_load(&t);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "%s:spread:%d", h_prefix(), i);
        redisAppendCommand(p, "SET %s v%d", key, i);
    }
    for (int i = 0; i < N; i++) {
        redisReply *r = h_get_reply(p);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);
    }
    for (int m = 0; m < t.nmasters; m++)
        owners[m] = h_connect_node(&t.masters[m]);
    for (int i = 0; i < N; i++) {
        char want[32];
        int m;
        redisReply *r;

        snprintf(key, sizeof(key), "%s:spread:%d", h_prefix(), i);
        snprintf(want, sizeof(want), "v%d", i);
        m = h_topo_owner(&t, h_slot(key));
        per_master[m]++;
        r = h_cmd(owners[m], "GET %s", key);
        H_EXPECT_BULK(r, want);
        freeReplyObject(r);
    }
    for (int m = 0; m < t.nmasters; m++) {
        ck_assert_msg(per_master[m] > N / t.nmasters / 2, "master %d got only %d keys",
                      m, per_master[m]);
        redisFree(owners[m]);
    }
    redisFree(p);
}
END_TEST

/* Keys sharing a hash tag share a slot and so an owner. */
START_TEST(test_hash_tag_keys_together)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy(), *owner;
    char a[128], b[128];
    redisReply *r;

    h_topo_load(&t);
    snprintf(a, sizeof(a), "{%s:user}:name", h_prefix());
    snprintf(b, sizeof(b), "{%s:user}:mail", h_prefix());
    ck_assert_int_eq(h_slot(a), h_slot(b));
    H_OK(p, "SET %s alice", a);
    H_OK(p, "SET %s alice@example.org", b);
    owner = h_connect_owner(&t, a);
    r = h_cmd(owner, "MGET %s %s", a, b);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    H_EXPECT_BULK(r->element[0], "alice");
    H_EXPECT_BULK(r->element[1], "alice@example.org");
    freeReplyObject(r);
    redisFree(owner);
    redisFree(p);
}
END_TEST

/* Binary, empty and large values cross the proxy intact. */
START_TEST(test_values_binary_and_large)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy(), *owner;
    static const size_t sizes[] = { 0, 1, 2, 16 * 1024 - 1, 1024 * 1024, 8 * 1024 * 1024 + 3 };
    char key[128];
    const char *argv[3];
    size_t lens[3];

    h_topo_load(&t);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        char *val = malloc(n + 1);
        redisReply *r;

        ck_assert_ptr_nonnull(val);
        for (size_t j = 0; j < n; j++)
            val[j] = "\0\r\n$*+-:x"[(j * 31 + i) % 9];
        snprintf(key, sizeof(key), "%s:bin:%zu", h_prefix(), i);
        argv[0] = "SET"; argv[1] = key; argv[2] = val;
        lens[0] = 3; lens[1] = strlen(key); lens[2] = n;
        r = redisCommandArgv(p, 3, argv, lens);
        ck_assert_msg(r != NULL, "SET: %s", p->errstr);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);

        r = h_cmd(p, "GET %s", key);
        H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
        ck_assert_msg(r->len == n && memcmp(r->str, val, n) == 0, "value %zu differs", i);
        freeReplyObject(r);

        owner = h_connect_owner(&t, key);
        r = h_cmd(owner, "STRLEN %s", key);
        H_EXPECT_INT(r, n);
        freeReplyObject(r);
        redisFree(owner);
        free(val);
    }
    redisFree(p);
}
END_TEST

static Suite *routing_suite(void)
{
    Suite *s = suite_create("routing");
    TCase *tc = tcase_create("routing");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_harness_slot_vectors);
    tcase_add_test(tc, test_harness_slot_matches_node);
    tcase_add_test(tc, test_cluster_has_three_masters);
    tcase_add_test(tc, test_strings_on_every_master);
    tcase_add_test(tc, test_types_on_every_master);
    tcase_add_test(tc, test_many_keys_spread);
    tcase_add_test(tc, test_hash_tag_keys_together);
    tcase_add_test(tc, test_values_binary_and_large);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(routing_suite());
}
