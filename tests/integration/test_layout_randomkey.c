/*
 * RANDOMKEY through a layout proxy on a cluster of the test's own, empty
 * at first, against one redis-server: with only the layout's marker on the
 * cluster the answer is nil, as from an empty server, never the marker's
 * name; once a legacy key is written (a message log, on another master
 * than the marker), RANDOMKEY gives its legacy name and only that, as a
 * server holding that one key does. Both alone and inside MULTI/EXEC, in
 * RESP2 and in RESP3, byte for byte.
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

#define RANDOMKEY "*1\r\n$9\r\nRANDOMKEY\r\n"

/* RANDOMKEY alone, then inside MULTI/EXEC, in RESP2 and in RESP3: every
 * reply the proxy sends is the reference's, byte for byte. */
static void expect_randomkey_as_ref(const struct h_proxy *via, const struct h_proxy *ref)
{
    static const char *const calls[] = { RANDOMKEY, "*1\r\n$5\r\nMULTI\r\n", RANDOMKEY,
                                         "*1\r\n$4\r\nEXEC\r\n" };
    static const char hello3[] = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
    const char *who[2] = { "the proxy", "redis-server" };
    for (int proto = 2; proto <= 3; proto++) {
        int fd[2] = { h_raw_connect(&via->addr), h_raw_connect(&ref->addr) };
        size_t cap[2] = { 4096, 4096 }, len[2];
        char *buf[2] = { malloc(cap[0]), malloc(cap[1]) };
        for (int k = 0; k < 2 && proto == 3; k++) {
            h_raw_sends(fd[k], hello3);
            h_raw_reply(fd[k], &buf[k], &cap[k], who[k], "HELLO 3");
            ck_assert_msg(buf[k][0] == '%', "HELLO 3: %s", who[k]);
        }
        for (int i = 0; i < 40; i++) {
            const char *cmd = calls[i % 4];
            for (int k = 0; k < 2; k++) {
                h_raw_sends(fd[k], cmd);
                len[k] = h_raw_reply(fd[k], &buf[k], &cap[k], who[k], cmd);
            }
            ck_assert_msg(len[0] == len[1] && memcmp(buf[0], buf[1], len[0]) == 0,
                          "RESP%d %s: proxy '%s', redis-server '%s'", proto, h_esc_str(cmd),
                          h_esc(buf[0], len[0]), h_esc(buf[1], len[1]));
        }
        for (int k = 0; k < 2; k++) {
            close(fd[k]);
            free(buf[k]);
        }
    }
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
    expect_randomkey_as_ref(&proxy, &ref);

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
    expect_randomkey_as_ref(&proxy, &ref);
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
