/*
 * The layout marker at start (LAYOUT.md "Marker and guards"), for a
 * run-unique prefix P on the real cluster: an empty prefix gets
 * P:{meta}:layout = cluster:v1 written and is served; a prefix holding keys
 * but no marker is refused (exit 1, a message that says to migrate first or
 * set layout-allow-legacy-data yes), and served with that switch (nothing
 * written); a marker of another value is refused; a marker cluster:v1 is
 * served whatever the prefix holds. A rules file with an error fails the
 * start with FILE:LINE.
 */
#include <sys/wait.h>

#include "harness.h"

static char prefix[64];
static struct h_topo topo;

static void setup(void)
{
    static int n;
    H_FMT(prefix, sizeof prefix, "mk%ld%lld%d", (long)getpid(), h_now_ms() % 1000000, n++);
    h_topo_load(&topo);
}

static const char *P(const char *rest)
{
    static char ring[8][256];
    static int next;
    char *b = ring[next++ % 8];
    H_FMT(b, sizeof ring[0], "%s%s", prefix, rest);
    return b;
}

/* A command on the master owning key, directly. */
static redisReply *direct(const char *key, const char *fmt, const char *a, const char *b)
{
    redisContext *c = h_connect_owner(&topo, key);
    redisReply *r = h_cmd(c, fmt, a, b);
    redisFree(c);
    return r;
}

static void launch(struct h_proxy *p, const char *rules, const char *extra)
{
    char seed[128];
    const char *const args[] = { "--layout-rules", rules, "--layout-prefix", prefix,
                                 extra ? "--layout-allow-legacy-data" : NULL, extra, NULL };
    h_proxy_place(p);
    H_FMT(p->log, sizeof p->log, "%s/proxy-marker-%d.log", h_env("TAGPROXY_TEST_DIR"),
          p->addr.port);
    h_seed(seed, sizeof seed);
    h_proxy_launch(p, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
}

static void expect_served(const char *extra)
{
    struct h_proxy p;
    launch(&p, "conf/layouts/botmesh-v1.rules", extra);
    h_spawn_wait(&p, h_pings, 20000, "proxy with a layout");
    h_proxy_stop(&p);
}

/* The proxy exits with status 1 and its log holds needle. */
static void expect_refused(const char *rules, const char *extra, const char *needle)
{
    struct h_proxy p;
    int status = 0;
    launch(&p, rules, extra);
    long long deadline = h_now_ms() + 20000;
    while (waitpid(p.pid, &status, WNOHANG) == 0) {
        if (h_now_ms() > deadline) {
            h_proxy_stop(&p);
            ck_abort_msg("the proxy did not refuse to start");
        }
        h_sleep_ms(20);
    }
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "exit status %d", status);
    char log[8192] = "";
    FILE *f = fopen(p.log, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(log, 1, sizeof log - 1, f);
    log[n] = '\0';
    fclose(f);
    ck_assert_msg(strstr(log, needle), "log lacks '%s':\n%s", needle, log);
}

static void expect_marker(const char *value)
{
    redisReply *r = direct(P(":{meta}:layout"), "GET %s", P(":{meta}:layout"), NULL);
    if (value) {
        H_EXPECT_BULK(r, value);
    } else {
        H_EXPECT_NIL(r);
    }
    freeReplyObject(r);
}

START_TEST(test_empty_prefix_gets_the_marker)
{
    expect_marker(NULL);
    expect_served(NULL);
    expect_marker("cluster:v1");
    expect_served(NULL);          /* and is served from then on */
}
END_TEST

/* Legacy keys, or cluster names written without the proxy: not migrated. */
START_TEST(test_keys_without_marker_refused)
{
    redisReply *r = direct(P(":chat:tg:42"), "SET %s %s", P(":chat:tg:42"), "legacy");
    freeReplyObject(r);
    char needle[256];
    H_FMT(needle, sizeof needle, "layout-prefix \"%s\": keys of the prefix exist", prefix);
    expect_refused("conf/layouts/botmesh-v1.rules", NULL, needle);
    char how[256];
    H_FMT(how, sizeof how, "Migrate it first (the migration writes the marker: tagproxy "
          "migrate --source redis://HOST:PORT --prefix %s), or set layout-allow-legacy-data "
          "yes to serve it anyway", prefix);
    expect_refused("conf/layouts/botmesh-v1.rules", NULL, how);
    expect_marker(NULL);
    expect_served("yes");
    expect_marker(NULL);          /* allowed, not marked */
    expect_refused("conf/layouts/botmesh-v1.rules", "no", needle);
}
END_TEST

START_TEST(test_other_marker_refused)
{
    redisReply *r = direct(P(":{meta}:layout"), "SET %s %s", P(":{meta}:layout"), "legacy:v0");
    freeReplyObject(r);
    char needle[256];
    H_FMT(needle, sizeof needle, "the layout marker %s:{meta}:layout holds \"legacy:v0\", not "
          "\"cluster:v1\"", prefix);
    expect_refused("conf/layouts/botmesh-v1.rules", NULL, needle);
    expect_refused("conf/layouts/botmesh-v1.rules", "yes", needle);
    expect_marker("legacy:v0");
}
END_TEST

START_TEST(test_marked_prefix_with_keys_served)
{
    redisReply *r = direct(P(":{meta}:layout"), "SET %s %s", P(":{meta}:layout"), "cluster:v1");
    freeReplyObject(r);
    r = direct(P(":{ch:25}:r:chat-1"), "SET %s %s", P(":{ch:25}:r:chat-1"), "v");
    freeReplyObject(r);
    expect_served(NULL);
}
END_TEST

START_TEST(test_bad_rules_file_refused)
{
    char path[512];
    H_FMT(path, sizeof path, "%s/bad-%s.rules", h_env("TAGPROXY_TEST_DIR"), prefix);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("# ok\nkeep p:conv:*\nrule chat p:chat:<id...> -> p:{ch:<b>}:r:<nope...>\n", f);
    fclose(f);
    char needle[600];
    H_FMT(needle, sizeof needle, "cannot start: %s:3: ", path);
    expect_refused(path, NULL, needle);
}
END_TEST

static Suite *marker_suite(void)
{
    Suite *s = suite_create("layout marker");
    TCase *t = tcase_create("marker");
    tcase_set_timeout(t, 120);
    tcase_add_checked_fixture(t, setup, NULL);
    tcase_add_test(t, test_empty_prefix_gets_the_marker);
    tcase_add_test(t, test_keys_without_marker_refused);
    tcase_add_test(t, test_other_marker_refused);
    tcase_add_test(t, test_marked_prefix_with_keys_served);
    tcase_add_test(t, test_bad_rules_file_refused);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return h_run(marker_suite());
}
