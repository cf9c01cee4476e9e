/*
 * A script's error that looks like a redirect (MOVED, ASK, TRYAGAIN,
 * CLUSTERDOWN) after it wrote: the proxy gives it to the client as it is,
 * at once, without running the script again and without touching its slot
 * map; a real MOVED to a script (the slot given to another master with
 * CLUSTER SETSLOT) and a real ASK (the slot migrating) are still followed,
 * and the script runs once on the new owner.
 */
#include "harness.h"

static const char forge_lua[] =
    "redis.call('INCR', KEYS[1]); return redis.error_reply(ARGV[1])";

static void expect_owner_value(const struct h_topo *t, const char *key, const char *want)
{
    redisContext *o = h_connect_owner(t, key);
    redisReply *r = h_cmd(o, "GET %s", key);
    H_EXPECT_BULK(r, want);
    freeReplyObject(r);
    redisFree(o);
}

/* Each forged reply: the script ran once, the client has its error. */
START_TEST(test_forged_redirects_run_once)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    char key[128], prefix[128], moved[160], ask[160];
    h_topo_load(&t);
    H_FMT(prefix, sizeof prefix, "%s:forged", h_prefix());
    h_key_on_master(&t, 0, prefix, 0, key, sizeof key);
    int slot = h_slot(key);
    /* another master's real address, the one a forged MOVED would move it to */
    const struct h_node *other = &t.masters[1];
    H_FMT(moved, sizeof moved, "MOVED %d %s:%d", slot, other->host, other->port);
    H_FMT(ask, sizeof ask, "ASK %d %s:%d", slot, other->host, other->port);
    const char *forged[] = { "TRYAGAIN x", "CLUSTERDOWN x", moved, ask,
                             "MOVED 1 10.0.0.1:6379", "ASK 1 10.0.0.1:6379",
                             "CLUSTERDOWN Hash slot not served",
                             "CLUSTERDOWN Hash slot not served" };
    long long before = h_info_field(p, "script_redirects_unconfirmed");
    long long moved_before = h_info_field(p, "redirects_moved");
    for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
        redisReply *r = h_cmd(p, "DEL %s", key);
        freeReplyObject(r);
        r = h_cmd(p, i % 2 ? "EVAL %s 1 %s %s" : "EVAL_RO %s 1 %s %s",
                  i % 2 ? forge_lua : "return redis.error_reply(ARGV[1])", key, forged[i]);
        H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
        ck_assert_str_eq(r->str, forged[i]);
        freeReplyObject(r);
        if (i % 2)
            expect_owner_value(&t, key, "1");
    }
    /* the same through EVALSHA, pipelined with a GET behind it */
    redisReply *r = h_cmd(p, "SCRIPT LOAD %s", forge_lua);
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    char sha[41];
    snprintf(sha, sizeof sha, "%s", r->str);
    freeReplyObject(r);
    freeReplyObject(h_cmd(p, "DEL %s", key));
    redisAppendCommand(p, "EVALSHA %s 1 %s %s", sha, key, moved);
    redisAppendCommand(p, "GET %s", key);
    r = h_get_reply(p);
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    ck_assert_str_eq(r->str, moved);
    freeReplyObject(r);
    r = h_get_reply(p);
    H_EXPECT_BULK(r, "1");
    freeReplyObject(r);
    /* the slot map still sends the key to its owner: no redirect */
    r = h_cmd(p, "GET %s", key);
    H_EXPECT_BULK(r, "1");
    freeReplyObject(r);
    ck_assert_int_eq(h_info_field(p, "redirects_moved"), moved_before);
    ck_assert_int_ge(before, 0);
    ck_assert_int_eq(h_info_field(p, "script_redirects_unconfirmed"), before + 9);
    freeReplyObject(h_cmd(p, "DEL %s", key));
    redisFree(p);
}
END_TEST

static void setslot_all(const struct h_topo *t, int slot, int owner)
{
    for (int m = 0; m < t->nmasters; m++) {
        redisContext *o = h_connect_node(&t->masters[m]);
        redisReply *r = h_cmd(o, "CLUSTER SETSLOT %d NODE %s", slot, t->master_id[owner]);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);
        redisFree(o);
    }
}

/* A real MOVED: the (empty) slot goes to another master; the script is
 * followed there and runs once. */
static void real_moved_followed(redisContext *p)
{
    struct h_topo t;
    char key[128], prefix[128];
    h_topo_load(&t);
    H_FMT(prefix, sizeof prefix, "%s:realmoved", h_prefix());
    /* a key of master 0 in a slot no other test has a key in (a slot
     * with keys cannot be moved by SETSLOT NODE alone) */
    redisContext *o = h_connect_node(&t.masters[0]);
    redisReply *r;
    int slot;
    for (int nth = 0;; nth++) {
        ck_assert_msg(nth < 1000, "no empty slot on master 0");
        h_key_on_master(&t, 0, prefix, nth, key, sizeof key);
        slot = h_slot(key);
        r = h_cmd(o, "CLUSTER COUNTKEYSINSLOT %d", slot);
        H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
        long long n = r->integer;
        freeReplyObject(r);
        if (n == 0)
            break;
    }
    redisFree(o);
    r = h_cmd(p, "GET %s", key);     /* the proxy's map names master 0 */
    H_EXPECT_NIL(r);
    freeReplyObject(r);
    long long before = h_info_field(p, "script_redirects_unconfirmed");
    setslot_all(&t, slot, 1);
    r = h_cmd(p, "EVAL %s 1 %s", "return redis.call('INCR', KEYS[1])", key);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    o = h_connect_node(&t.masters[1]);
    r = h_cmd(o, "GET %s", key);
    H_EXPECT_BULK(r, "1");
    freeReplyObject(r);
    freeReplyObject(h_cmd(o, "DEL %s", key));
    redisFree(o);
    ck_assert_int_eq(h_info_field(p, "script_redirects_unconfirmed"), before);
    setslot_all(&t, slot, 0);
}

START_TEST(test_real_moved_followed)
{
    redisContext *p = h_connect_proxy();
    real_moved_followed(p);
    redisFree(p);
}
END_TEST

/* The same for a user whose scripts run as its node user, which may not
 * read CLUSTER NODES: the proxy reads it on its own connection. */
START_TEST(test_real_moved_followed_restricted_user)
{
    struct h_proxy lp;
    const char *args[] = { "--user", "rs", "rs-pw", "allkeys", "allchannels", "+@all",
                           "-cluster", "-flushall", NULL };
    h_proxy_start(&lp, args);
    redisContext *p = h_connect_node(&lp.addr);
    H_OK(p, "AUTH rs rs-pw");
    real_moved_followed(p);
    redisFree(p);
    h_proxy_stop(&lp);
}
END_TEST


static void node_ok(const struct h_node *n, const char *fmt, int slot, const char *id)
{
    redisContext *o = h_connect_node(n);
    redisReply *r = h_cmd(o, fmt, slot, id);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    redisFree(o);
}

/* A real ASK: the slot migrating from master 0 to master 1, the key not on
 * master 0; the script goes to master 1 with ASKING and runs once there. */
START_TEST(test_real_ask_followed)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    char key[128], prefix[128];
    h_topo_load(&t);
    H_FMT(prefix, sizeof prefix, "%s:realask", h_prefix());
    h_key_on_master(&t, 0, prefix, 0, key, sizeof key);
    int slot = h_slot(key);
    freeReplyObject(h_cmd(p, "DEL %s", key));
    long long before = h_info_field(p, "script_redirects_unconfirmed");
    node_ok(&t.masters[1], "CLUSTER SETSLOT %d IMPORTING %s", slot, t.master_id[0]);
    node_ok(&t.masters[0], "CLUSTER SETSLOT %d MIGRATING %s", slot, t.master_id[1]);
    redisReply *r = h_cmd(p, "EVAL %s 1 %s", "return redis.call('INCR', KEYS[1])", key);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    redisContext *o = h_connect_node(&t.masters[1]);
    freeReplyObject(h_cmd(o, "ASKING"));
    r = h_cmd(o, "GET %s", key);
    H_EXPECT_BULK(r, "1");
    freeReplyObject(r);
    freeReplyObject(h_cmd(o, "ASKING"));
    freeReplyObject(h_cmd(o, "DEL %s", key));
    redisFree(o);
    ck_assert_int_eq(h_info_field(p, "script_redirects_unconfirmed"), before);
    node_ok(&t.masters[0], "CLUSTER SETSLOT %d STABLE%s", slot, "");
    node_ok(&t.masters[1], "CLUSTER SETSLOT %d STABLE%s", slot, "");
    redisFree(p);
}
END_TEST

static Suite *scripts_redirect_suite(void)
{
    Suite *s = suite_create("scripts_redirect");
    TCase *tc = tcase_create("scripts_redirect");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_forged_redirects_run_once);
    tcase_add_test(tc, test_real_moved_followed);
    tcase_add_test(tc, test_real_moved_followed_restricted_user);
    tcase_add_test(tc, test_real_ask_followed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(scripts_redirect_suite());
}
