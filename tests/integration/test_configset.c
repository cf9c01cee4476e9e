/*
 * CONFIG SET and CONFIG GET of the Redis settings that are the proxy's own
 * (with enable-dangerous-commands yes): maxclients, timeout, tcp-keepalive,
 * the client buffer limits, proto-max-bulk-len change the running proxy and
 * read back from it, as one redis-server's do; refused ones (a restart's,
 * a mix with the nodes', a duplicate, a bad value) change nothing and say
 * why; a reload (SIGHUP) brings back the config's values.
 */
#include "harness.h"

#include <arpa/inet.h>

static struct h_proxy px;

static void setup(void)
{
    const char *args[] = { "--enable-dangerous-commands", "yes", NULL };
    h_proxy_start(&px, args);
}

static void teardown(void)
{
    h_proxy_stop(&px);
}

/* CONFIG GET setting's value, into out. */
static void config_get(redisContext *c, const char *setting, char *out, size_t cap)
{
    redisReply *r = h_cmd(c, "CONFIG GET %s", setting);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 2);
    snprintf(out, cap, "%s", r->element[1]->str);
    freeReplyObject(r);
}

#define H_CONFIG_IS(c, setting, value) do { \
        char got_[256]; \
        config_get((c), (setting), got_, sizeof got_); \
        ck_assert_str_eq(got_, (value)); \
    } while (0)

START_TEST(test_maxclients)
{
    redisContext *c = h_connect_node(&px.addr);
    H_CONFIG_IS(c, "maxclients", "10000");
    H_OK(c, "CONFIG SET maxclients 2");
    H_CONFIG_IS(c, "maxclients", "2");
    redisContext *second = h_connect_node(&px.addr);
    H_STATUS(second, "PONG", "PING");
    redisContext *third = h_connect_node(&px.addr);
    H_ERR(third, "ERR max number of clients reached", "PING");
    redisFree(third);
    H_OK(c, "CONFIG SET maxclients 10000");
    third = h_connect_node(&px.addr);
    H_STATUS(third, "PONG", "PING");
    redisFree(third);
    redisFree(second);
    redisFree(c);
}
END_TEST

/* Is c closed by the proxy within limit_ms? */
static int closed_within(redisContext *c, int limit_ms)
{
    for (int waited = 0; waited < limit_ms; waited += 100) {
        char b;
        ssize_t n = recv(c->fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);
        if (n == 0)
            return 1;
        usleep(100 * 1000);
    }
    return 0;
}

START_TEST(test_timeout)
{
    redisContext *c = h_connect_node(&px.addr);
    H_CONFIG_IS(c, "timeout", "0");
    H_OK(c, "CONFIG SET timeout 1");
    H_CONFIG_IS(c, "timeout", "1");
    redisContext *idle = h_connect_node(&px.addr), *sub = h_connect_node(&px.addr),
                 *blocked = h_connect_node(&px.addr);
    H_STATUS(idle, "PONG", "PING");
    freeReplyObject(h_cmd(sub, "SUBSCRIBE cfg:idle-channel"));
    redisAppendCommand(blocked, "BLPOP cfg:never-pushed 4");
    redisBufferWrite(blocked, &(int){ 0 });
    ck_assert_msg(closed_within(idle, 10000), "an idle client outlived timeout 1");
    redisReply *r = NULL;
    ck_assert_int_eq(redisGetReply(blocked, (void **)&r), REDIS_OK);  /* its own timeout */
    H_EXPECT_TYPE(r, REDIS_REPLY_NIL);
    freeReplyObject(r);
    ck_assert(!closed_within(sub, 100));      /* subscribed: never idle */
    ck_assert(closed_within(c, 100));         /* as idle as any */
    redisFree(c);
    c = h_connect_node(&px.addr);
    H_OK(c, "CONFIG SET timeout 0");
    redisFree(idle);
    redisFree(sub);
    redisFree(blocked);
    redisFree(c);
}
END_TEST

/* The proxy's side of c in /proc/net/tcp: its timer kind ("tr") and
 * jiffies to go; -1 when not found. */
static int proxy_side_timer(redisContext *c, long *when)
{
    struct sockaddr_in me;
    socklen_t len = sizeof me;
    ck_assert(getsockname(c->fd, (struct sockaddr *)&me, &len) == 0);
    FILE *f = fopen("/proc/net/tcp", "r");
    ck_assert(f != NULL);
    char line[512];
    int tr = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned lport, rport, timer;
        long w;
        if (sscanf(line, " %*d: %*x:%x %*x:%x %*x %*x:%*x %x:%lx", &lport, &rport, &timer,
                   &w) == 4 && (int)lport == px.addr.port && rport == ntohs(me.sin_port)) {
            tr = (int)timer;
            *when = w;
        }
    }
    fclose(f);
    return tr;
}

START_TEST(test_tcp_keepalive)
{
    redisContext *c = h_connect_node(&px.addr);
    long when = 0;
    H_CONFIG_IS(c, "tcp-keepalive", "300");
    H_OK(c, "CONFIG SET tcp-keepalive 7");
    H_CONFIG_IS(c, "tcp-keepalive", "7");
    redisContext *kept = h_connect_node(&px.addr);
    H_STATUS(kept, "PONG", "PING");
    ck_assert_int_eq(proxy_side_timer(kept, &when), 2);    /* the keepalive timer */
    ck_assert_msg(when <= 7 * 100, "keepalive due in %ld ticks, past 7 s", when);
    H_OK(c, "CONFIG SET tcp-keepalive 0");
    redisContext *bare = h_connect_node(&px.addr);
    H_STATUS(bare, "PONG", "PING");
    ck_assert_int_eq(proxy_side_timer(bare, &when), 0);
    redisFree(bare);
    redisFree(kept);
    redisFree(c);
}
END_TEST

/* The buffer limits and proto-max-bulk-len read back as Redis writes them;
 * a new connection meets the new proto-max-bulk-len. */
START_TEST(test_limits)
{
    redisContext *c = h_connect_node(&px.addr);
    H_OK(c, "CONFIG SET client-output-buffer-limit %s", "normal 1mb 0 0 pubsub 2mb 1mb 30");
    H_CONFIG_IS(c, "client-output-buffer-limit",
                "normal 1048576 0 0 slave 268435456 67108864 60 pubsub 2097152 1048576 30");
    H_OK(c, "CONFIG SET client-query-buffer-limit 4mb maxmemory-clients 64mb");
    H_CONFIG_IS(c, "client-query-buffer-limit", "4194304");
    H_CONFIG_IS(c, "maxmemory-clients", "67108864");
    H_OK(c, "CONFIG SET proto-max-bulk-len 1mb");
    H_CONFIG_IS(c, "proto-max-bulk-len", "1048576");
    redisContext *d = h_connect_node(&px.addr);
    static char big[2 * 1024 * 1024];
    memset(big, 'b', sizeof big);
    redisReply *r = redisCommand(d, "SET cfg:big %b", big, sizeof big);
    ck_assert_msg(r == NULL || r->type == REDIS_REPLY_ERROR, "a 2mb bulk passed a 1mb limit");
    if (r)
        ck_assert_msg(strstr(r->str, "Protocol error") != NULL, "%s", r->str);
    freeReplyObject(r);
    redisFree(d);
    redisFree(c);
}
END_TEST

START_TEST(test_refusals_change_nothing)
{
    redisContext *c = h_connect_node(&px.addr);
    H_ERR(c, "ERR CONFIG SET failed (possibly related to argument 'timeout') - duplicate",
          "CONFIG SET timeout 5 timeout 6");
    H_ERR(c, "ERR CONFIG SET failed (possibly related to argument 'maxclients')",
          "CONFIG SET timeout 5 maxclients lots");
    H_ERR(c, "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit')",
          "CONFIG SET client-output-buffer-limit %s", "replica 1mb 1mb 1");
    H_ERR(c, "ERR CONFIG SET timeout is the proxy's own setting and maxmemory the nodes'",
          "CONFIG SET timeout 5 maxmemory 0");
    H_ERR(c, "ERR CONFIG SET port is refused through the proxy", "CONFIG SET port 1");
    H_CONFIG_IS(c, "timeout", "0");
    H_CONFIG_IS(c, "maxclients", "10000");
    redisFree(c);
}
END_TEST

START_TEST(test_reload_restores)
{
    redisContext *c = h_connect_node(&px.addr);
    H_OK(c, "CONFIG SET timeout 77");
    H_CONFIG_IS(c, "timeout", "77");
    ck_assert_int_eq(kill(px.pid, SIGHUP), 0);
    char got[64] = "77";
    for (int i = 0; i < 100 && strcmp(got, "0") != 0; i++) {
        usleep(100 * 1000);
        config_get(c, "timeout", got, sizeof got);
    }
    ck_assert_str_eq(got, "0");
    redisFree(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("configset");
    TCase *t = tcase_create("configset");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_maxclients);
    tcase_add_test(t, test_timeout);
    tcase_add_test(t, test_tcp_keepalive);
    tcase_add_test(t, test_limits);
    tcase_add_test(t, test_refusals_change_nothing);
    tcase_add_test(t, test_reload_restores);
    suite_add_tcase(s, t);
    return h_run(s);
}
