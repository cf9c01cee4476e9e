/*
 * A cluster that announces IPv6 addresses (issue 20): its nodes bound to ::1
 * only, the proxy seeded with [::1]:port. Redis writes a redirect's IPv6
 * host without brackets ("MOVED 3999 ::1:7001") while CLUSTER SLOTS gives
 * the host alone, so the proxy must match both spellings to the same node:
 * a real MOVED (a slot given to another master with SETSLOT NODE) is
 * followed at once, not retried until a refresh, and a real ASK (a slot
 * migrating) is followed, never turned into an error.
 */
#include "harness.h"

static char cdir[512];
static int cbase;
static struct h_proxy proxy;

static void cluster_up(void)
{
    cbase = h_cluster_start(cdir, sizeof cdir, "ipv6-cluster", "--bind ::1");
}

static void cluster_down(void)
{
    h_proxy_stop(&proxy);
    h_cluster_stop(cdir);
}

static redisContext *node(int i)
{
    return h_connect("::1", cbase + i);
}

static void node_id(int i, char *id, size_t size)
{
    redisContext *c = node(i);
    redisReply *r = h_cmd(c, "CLUSTER MYID");
    ck_assert_msg(r->type == REDIS_REPLY_STRING, "CLUSTER MYID: %s", h_show(r));
    snprintf(id, size, "%s", r->str);
    freeReplyObject(r);
    redisFree(c);
}

/* CLUSTER SETSLOT slot how id on master i */
static void setslot(int i, int slot, const char *how, const char *id)
{
    redisContext *c = node(i);
    redisReply *r = h_cmd(c, "CLUSTER SETSLOT %d %s %s", slot, how, id);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    redisFree(c);
}

/* The master that serves key: the one of the three that answers GET
 * without a redirect. */
static int owner_of(const char *key)
{
    for (int i = 0; i < 3; i++) {
        redisContext *c = node(i);
        redisReply *r = h_cmd(c, "GET %s", key);
        int moved = r->type == REDIS_REPLY_ERROR && strncmp(r->str, "MOVED ", 6) == 0;
        freeReplyObject(r);
        redisFree(c);
        if (!moved)
            return i;
    }
    ck_abort_msg("no master serves %s", key);
    return -1;
}

static long long info_field(redisContext *c, const char *name)
{
    redisReply *r = h_cmd(c, "INFO proxy");
    char pat[64];
    ck_assert_msg(r->type == REDIS_REPLY_STRING, "INFO proxy: %s", h_show(r));
    snprintf(pat, sizeof pat, "\r\n%s:", name);
    const char *p = strstr(r->str, pat);
    ck_assert_msg(p != NULL, "INFO proxy has no %s", name);
    long long v = strtoll(p + strlen(pat), NULL, 10);
    freeReplyObject(r);
    return v;
}

static int key_slot(const char *key)
{
    redisContext *c = node(0);
    redisReply *r = h_cmd(c, "CLUSTER KEYSLOT %s", key);
    H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
    int slot = (int)r->integer;
    freeReplyObject(r);
    redisFree(c);
    return slot;
}

START_TEST(test_ipv6_moved_and_ask_are_followed)
{
    char seed[64], ids[3][48], key[64], key2[64];
    const char *args[] = { "--retry-attempts", "3", NULL };

    for (int i = 0; i < 3; i++)
        node_id(i, ids[i], sizeof ids[i]);
    H_FMT(key, sizeof key, "{%s:v6}a", h_prefix());
    H_FMT(key2, sizeof key2, "{%s:v6}b", h_prefix());
    int slot = key_slot(key), from = owner_of(key), to = (from + 1) % 3;

    h_place_named(&proxy, "ipv6-proxy");
    H_FMT(seed, sizeof seed, "[::1]:%d", cbase);
    h_proxy_launch(&proxy, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    h_spawn_wait(&proxy, h_pings, 20000, "proxy of the ::1 cluster");
    redisContext *c = h_connect_extra(&proxy);
    H_OK(c, "SET %s before", key);

    /* MOVED: the (now empty) slot goes to another master on every node */
    redisContext *o = node(from);
    redisReply *r = h_cmd(o, "DEL %s", key);
    freeReplyObject(r);
    redisFree(o);
    for (int i = 0; i < 3; i++)
        setslot(i, slot, "NODE", ids[to]);
    long long retries = info_field(c, "retries");
    H_OK(c, "SET %s moved", key);
    ck_assert_msg(info_field(c, "retries") == retries,
                  "the MOVED to ::1:%d was retried, not followed", cbase + to);
    o = node(to);
    r = h_cmd(o, "GET %s", key);
    H_EXPECT_BULK(r, "moved");
    freeReplyObject(r);
    redisFree(o);

    /* ASK: the slot migrates back; a key not on its owner is asked for on
     * the importing node */
    setslot(from, slot, "IMPORTING", ids[to]);
    setslot(to, slot, "MIGRATING", ids[from]);
    long long asks = info_field(c, "redirects_ask");
    H_OK(c, "SET %s asked", key2);
    ck_assert_msg(info_field(c, "redirects_ask") > asks, "SET %s was not asked for", key2);
    o = node(from);
    r = h_cmd(o, "ASKING");
    freeReplyObject(r);
    r = h_cmd(o, "GET %s", key2);
    H_EXPECT_BULK(r, "asked");
    freeReplyObject(r);
    redisFree(o);
    redisFree(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ipv6");
    TCase *tc = tcase_create("ipv6");
    tcase_add_unchecked_fixture(tc, cluster_up, cluster_down);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_ipv6_moved_and_ask_are_followed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
