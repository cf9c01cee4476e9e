/*
 * Scripts through the proxy, as bots use them: EVAL and EVALSHA run on the
 * master that owns their keys' slot; keys in different slots get CROSSSLOT
 * naming the command before anything runs; a script without keys runs on
 * one master, always the same. The patterns are the courier adapters'
 * rate-limit script (one key, the server's clock) and presence sweep (two
 * keys sharing a hash tag), and a SET NX EX lock released by a Lua
 * compare-and-delete. Effects are checked on the owning nodes directly.
 */
#include "harness.h"

#define CROSSSLOT "CROSSSLOT Keys in request don't hash to the same slot"

/* A sliding-window rate limit on Redis's clock: ARGV limit, window ms,
 * request id; {allowed, remaining}. The key expires with its window. */
static const char rate_limit_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)\n"
    "local n = redis.call('ZCARD', KEYS[1])\n"
    "if n < limit then\n"
    "  redis.call('ZADD', KEYS[1], now, ARGV[3])\n"
    "  redis.call('PEXPIRE', KEYS[1], window)\n"
    "  return {1, limit - n - 1}\n"
    "end\n"
    "return {0, 0}\n";

/* Presence sweep: entries of the score set older than ARGV[1] ms (Redis's
 * clock) leave both keys; returns id, metadata pairs. */
static const char sweep_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local stale = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))\n"
    "local out = {}\n"
    "for _, id in ipairs(stale) do\n"
    "  out[#out + 1] = id\n"
    "  out[#out + 1] = redis.call('HGET', KEYS[2], id) or ''\n"
    "  redis.call('ZREM', KEYS[1], id)\n"
    "  redis.call('HDEL', KEYS[2], id)\n"
    "end\n"
    "return out\n";

static const char unlock_lua[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
    "  return redis.call('DEL', KEYS[1])\n"
    "end\n"
    "return 0\n";

/* A reply straight from the master that owns key. */
static redisReply *owner_cmd(const struct h_topo *t, const char *key, const char *fmt,
                             const char *arg)
{
    redisContext *c = h_connect_owner(t, key);
    redisReply *r = h_cmd(c, fmt, key, arg);
    redisFree(c);
    return r;
}

/* Milliseconds on the clock of the node that owns key. */
static long long owner_time_ms(const struct h_topo *t, const char *key)
{
    redisContext *c = h_connect_owner(t, key);
    redisReply *r = h_cmd(c, "TIME");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    long long ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    redisFree(c);
    return ms;
}

static void expect_int_pair(const redisReply *r, long long a, long long b)
{
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 2);
    H_EXPECT_INT(r->element[0], a);
    H_EXPECT_INT(r->element[1], b);
}

/* The courier rate limit, loaded with SCRIPT LOAD and called with EVALSHA
 * as ioredis' defineCommand does, on keys of every master. */
START_TEST(test_rate_limit_script)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    redisReply *r;
    char key[128], prefix[128], sha[41];

    h_topo_load(&t);
    r = h_cmd(p, "SCRIPT LOAD %s", rate_limit_lua);
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    ck_assert_uint_eq(r->len, 40);
    snprintf(sha, sizeof(sha), "%s", r->str);
    freeReplyObject(r);
    H_FMT(prefix, sizeof(prefix), "%s:courier:ratelimit", h_prefix());
    for (int m = 0; m < t.nmasters; m++) {
        h_key_on_master(&t, m, prefix, 0, key, sizeof(key));
        for (int i = 0; i < 7; i++) {
            r = h_cmd(p, "EVALSHA %s 1 %s 5 60000 req-%d", sha, key, i);
            if (i < 5)
                expect_int_pair(r, 1, 4 - i);
            else
                expect_int_pair(r, 0, 0);
            freeReplyObject(r);
        }
        r = owner_cmd(&t, key, "ZCARD %s", NULL);
        H_EXPECT_INT(r, 5);
        freeReplyObject(r);
        r = owner_cmd(&t, key, "PTTL %s", NULL);
        H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
        ck_assert_msg(r->integer > 0 && r->integer <= 60000, "PTTL %lld", r->integer);
        freeReplyObject(r);
        /* the same script sent whole, as EVAL */
        r = h_cmd(p, "EVAL %s 1 %s 5 60000 req-x", rate_limit_lua, key);
        expect_int_pair(r, 0, 0);
        freeReplyObject(r);
    }
    redisFree(p);
}
END_TEST

/* Presence: score and meta share the room's hash tag, so the sweep is one
 * script; stale entries leave both keys, fresh ones stay. */
START_TEST(test_presence_sweep_two_keys_one_tag)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    redisReply *r;
    char score[160], meta[160];

    h_topo_load(&t);
    H_FMT(score, sizeof(score), "courier:presence:score:{%s:room:general}", h_prefix());
    H_FMT(meta, sizeof(meta), "courier:presence:meta:{%s:room:general}", h_prefix());
    long long now = owner_time_ms(&t, score);
    r = h_cmd(p, "ZADD %s %lld c1 %lld c2 %lld c3", score, now - 60000, now - 45000, now + 5000);
    H_EXPECT_INT(r, 3);
    freeReplyObject(r);
    r = h_cmd(p, "HSET %s c1 {\"userId\":\"u1\"} c2 {\"userId\":\"u2\"} c3 {\"userId\":\"u3\"}", meta);
    H_EXPECT_INT(r, 3);
    freeReplyObject(r);

    r = h_cmd(p, "EVAL %s 2 %s %s 30000", sweep_lua, score, meta);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 4);
    H_EXPECT_BULK(r->element[0], "c1");
    H_EXPECT_BULK(r->element[1], "{\"userId\":\"u1\"}");
    H_EXPECT_BULK(r->element[2], "c2");
    H_EXPECT_BULK(r->element[3], "{\"userId\":\"u2\"}");
    freeReplyObject(r);

    r = owner_cmd(&t, score, "ZRANGE %s 0 -1", NULL);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 1);
    H_EXPECT_BULK(r->element[0], "c3");
    freeReplyObject(r);
    r = owner_cmd(&t, meta, "HKEYS %s", NULL);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 1);
    H_EXPECT_BULK(r->element[0], "c3");
    freeReplyObject(r);

    /* a second sweep finds nothing */
    r = h_cmd(p, "EVAL %s 2 %s %s 30000", sweep_lua, score, meta);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 0);
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/* SET NX EX lock; released only by its holder's token (compare-and-delete). */
START_TEST(test_lock_set_nx_ex_and_lua_release)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy(), *q = h_connect_proxy();
    redisReply *r;
    char lock[128];

    h_topo_load(&t);
    H_FMT(lock, sizeof(lock), "%s:lock:cache:product:7", h_prefix());
    H_OK(p, "SET %s token-a NX EX 10", lock);
    r = h_cmd(q, "SET %s token-b NX EX 10", lock);
    H_EXPECT_NIL(r);
    freeReplyObject(r);

    r = h_cmd(q, "EVAL %s 1 %s token-b", unlock_lua, lock);   /* not the holder */
    H_EXPECT_INT(r, 0);
    freeReplyObject(r);
    r = owner_cmd(&t, lock, "GET %s", NULL);
    H_EXPECT_BULK(r, "token-a");
    freeReplyObject(r);
    r = owner_cmd(&t, lock, "TTL %s", NULL);
    H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
    ck_assert_msg(r->integer > 0 && r->integer <= 10, "TTL %lld", r->integer);
    freeReplyObject(r);

    r = h_cmd(p, "EVAL %s 1 %s token-a", unlock_lua, lock);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    r = owner_cmd(&t, lock, "EXISTS %s", NULL);
    H_EXPECT_INT(r, 0);
    freeReplyObject(r);
    H_OK(q, "SET %s token-b NX EX 10", lock);       /* free again */
    r = h_cmd(q, "EVAL %s 1 %s token-b", unlock_lua, lock);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    redisFree(p);
    redisFree(q);
}
END_TEST

/* Keys on two masters: every script command answers CROSSSLOT naming
 * itself, and nothing ran on either master. */
START_TEST(test_crossslot_runs_nothing)
{
    static const char set_both[] =
        "redis.call('SET', KEYS[1], 'x') redis.call('SET', KEYS[2], 'y') return 1";
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    redisReply *r;
    char k0[128], k1[128], prefix[128], sha[41];
    const char *names[] = { "eval", "eval_ro", "evalsha", "evalsha_ro", "fcall", "fcall_ro" };

    h_topo_load(&t);
    ck_assert_int_ge(t.nmasters, 2);
    H_FMT(prefix, sizeof(prefix), "%s:xs", h_prefix());
    h_key_on_master(&t, 0, prefix, 0, k0, sizeof(k0));
    h_key_on_master(&t, 1, prefix, 0, k1, sizeof(k1));
    r = h_cmd(p, "SCRIPT LOAD %s", set_both);
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    snprintf(sha, sizeof(sha), "%s", r->str);
    freeReplyObject(r);

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char want[160];
        const char *body = strncmp(names[i], "evalsha", 7) == 0 ? sha
                         : strncmp(names[i], "fcall", 5) == 0 ? "nosuchfunction" : set_both;
        const char *argv[] = { names[i], body, "2", k0, k1 };
        r = h_cmd_argv(p, 5, argv);
        H_FMT(want, sizeof(want), CROSSSLOT " (command '%s')", names[i]);
        H_EXPECT_ERR(r, want);
        freeReplyObject(r);
    }
    /* three keys, the third elsewhere: still refused */
    r = h_cmd(p, "EVAL %s 3 %s %s %s", set_both, k0, k0, k1);
    H_EXPECT_ERR(r, CROSSSLOT);
    freeReplyObject(r);
    r = owner_cmd(&t, k0, "EXISTS %s", NULL);
    H_EXPECT_INT(r, 0);
    freeReplyObject(r);
    r = owner_cmd(&t, k1, "EXISTS %s", NULL);
    H_EXPECT_INT(r, 0);
    freeReplyObject(r);

    /* the same keys under one hash tag run */
    char a[128], b[128];
    H_FMT(a, sizeof(a), "{%s:xs}:a", h_prefix());
    H_FMT(b, sizeof(b), "{%s:xs}:b", h_prefix());
    r = h_cmd(p, "EVALSHA %s 2 %s %s", sha, a, b);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    r = owner_cmd(&t, b, "GET %s", NULL);
    H_EXPECT_BULK(r, "y");
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/* Without keys: one master, the same every time (the owner of slot 0). */
START_TEST(test_keyless_script_one_master)
{
    static const char port_lua[] =
        "return string.match(redis.call('INFO', 'server'), 'tcp_port:(%d+)')";
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    redisReply *r;
    char want[16];

    h_topo_load(&t);
    H_FMT(want, sizeof(want), "%d", t.masters[h_topo_owner(&t, 0)].port);
    for (int i = 0; i < 5; i++) {
        r = h_cmd(p, i % 2 ? "EVAL %s 0" : "EVAL_RO %s 0", port_lua);
        H_EXPECT_BULK(r, want);
        freeReplyObject(r);
    }
    r = h_cmd(p, "EVAL %s 0", "return {1, 'two', {3}}");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 3);
    H_EXPECT_INT(r->element[0], 1);
    H_EXPECT_BULK(r->element[1], "two");
    freeReplyObject(r);
    /* errors as one server words them */
    r = h_cmd(p, "EVAL %s abc", "return 1");
    H_EXPECT_ERR(r, "ERR value is not an integer or out of range");
    freeReplyObject(r);
    r = h_cmd(p, "EVAL %s 3 a", "return 1");
    H_EXPECT_ERR(r, "ERR Number of keys can't be greater than number of args");
    freeReplyObject(r);
    r = h_cmd(p, "EVAL %s 0", "return redis.call('NOSUCHCOMMAND')");
    H_EXPECT_ERR(r, "ERR");
    freeReplyObject(r);
    r = h_cmd(p, "EVAL");
    H_EXPECT_ERR(r, "ERR wrong number of arguments for 'eval' command");
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/* Scripts in a pipeline, over every master, answer in order. */
START_TEST(test_scripts_pipelined_in_order)
{
    enum { N = 60 };
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    char keys[N][128], prefix[128];

    h_topo_load(&t);
    H_FMT(prefix, sizeof(prefix), "%s:pipe", h_prefix());
    for (int i = 0; i < N; i++)
        h_key_on_master(&t, i % t.nmasters, prefix, i / t.nmasters, keys[i], sizeof(keys[i]));
    for (int i = 0; i < N; i++) {
        redisAppendCommand(p, "EVAL %s 1 %s %d", "return redis.call('INCRBY', KEYS[1], ARGV[1])",
                           keys[i], i + 1);
        redisAppendCommand(p, "GET %s", keys[i]);
    }
    for (int i = 0; i < N; i++) {
        char want[16];
        redisReply *r = h_get_reply(p);
        H_EXPECT_INT(r, i + 1);
        freeReplyObject(r);
        r = h_get_reply(p);
        snprintf(want, sizeof(want), "%d", i + 1);
        H_EXPECT_BULK(r, want);
        freeReplyObject(r);
    }
    redisFree(p);
}
END_TEST

static Suite *scripts_suite(void)
{
    Suite *s = suite_create("scripts");
    TCase *tc = tcase_create("scripts");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_rate_limit_script);
    tcase_add_test(tc, test_presence_sweep_two_keys_one_tag);
    tcase_add_test(tc, test_lock_set_nx_ex_and_lua_release);
    tcase_add_test(tc, test_crossslot_runs_nothing);
    tcase_add_test(tc, test_keyless_script_one_master);
    tcase_add_test(tc, test_scripts_pipelined_in_order);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(scripts_suite());
}
