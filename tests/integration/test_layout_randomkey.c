/*
 * RANDOMKEY through a layout proxy on a cluster of the test's own, empty
 * at first, against one redis-server: with only the layout's marker on the
 * cluster the answer is nil, as from an empty server, never the marker's
 * name; once a legacy key is written (a message log, on another master
 * than the marker), RANDOMKEY gives its legacy name and only that, as a
 * server holding that one key does.
 */
#include "harness.h"

static char cdir[512];
static int cbase;
static struct h_proxy proxy;

static void cluster_up(void)
{
    cbase = h_cluster_start(cdir, sizeof cdir, "randomkey-cluster", "");
}

static void cluster_down(void)
{
    h_proxy_stop(&proxy);
    h_cluster_stop(cdir);
}

START_TEST(test_randomkey_hides_the_layout_keys)
{
    char seed[64];
    const char *args[] = { "--layout-rules", "conf/layouts/botmesh-v1.rules",
                           "--layout-prefix", "bot", NULL };
    struct h_proxy ref;

    h_place_named(&proxy, "randomkey-proxy");
    H_FMT(seed, sizeof seed, "127.0.0.1:%d", cbase);
    h_proxy_launch(&proxy, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    h_spawn_wait(&proxy, h_pings, 20000, "layout proxy");
    h_ref_start(&ref, "randomkey-ref", NULL);
    redisContext *c = h_connect_extra(&proxy), *s = h_connect_extra(&ref);
    redisReply *r;

    /* the marker is all the cluster holds: nil, as the empty server says */
    long long keys = 0;
    for (int n = 0; n < 3; n++) {
        redisContext *node = h_connect("127.0.0.1", cbase + n);
        redisReply *d = h_cmd(node, "DBSIZE");
        H_EXPECT_TYPE(d, REDIS_REPLY_INTEGER);
        keys += d->integer;
        freeReplyObject(d);
        redisFree(node);
    }
    ck_assert_int_eq(keys, 1);
    for (int i = 0; i < 20; i++) {
        r = h_cmd(s, "RANDOMKEY");
        H_EXPECT_NIL(r);
        freeReplyObject(r);
        r = h_cmd(c, "RANDOMKEY");
        H_EXPECT_NIL(r);
        freeReplyObject(r);
    }

    /* one legacy key, on another master than the marker (3 even ranges):
     * its legacy name every time, on both */
    char key[64], tag[64];
    int id = 0;
    do {
        H_FMT(tag, sizeof tag, "m:%d", ++id);
    } while (h_slot(tag) / 5462 == h_slot("meta") / 5462);
    H_FMT(key, sizeof key, "bot:msgs:%d", id);
    r = h_cmd(c, "ZADD %s 1 a", key);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    r = h_cmd(s, "ZADD %s 1 a", key);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    for (int i = 0; i < 20; i++) {
        r = h_cmd(s, "RANDOMKEY");
        H_EXPECT_BULK(r, key);
        freeReplyObject(r);
        r = h_cmd(c, "RANDOMKEY");
        H_EXPECT_BULK(r, key);
        freeReplyObject(r);
    }
    redisFree(c);
    redisFree(s);
    h_proxy_stop(&ref);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("layout_randomkey");
    TCase *tc = tcase_create("randomkey");
    tcase_add_unchecked_fixture(tc, cluster_up, cluster_down);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_randomkey_hides_the_layout_keys);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(suite());
}
