/*
 * SLOWLOG through the proxy: the proxy's own slow requests kept as one
 * redis-server 7.0 keeps its slow commands (the same arguments for the same
 * commands: cut at 32 arguments and 128 bytes, AUTH redacted; the client's
 * address and name), merged with every master's log newest first, the
 * master named in the client-name field; LEN and RESET over both; GET's
 * count as Redis reads it; slowlog-max-len bounding the proxy's; refused
 * without enable-dangerous-commands. The reference is a standalone
 * redis-server started and stopped here.
 */
#include "harness.h"

static struct h_proxy ref, logged;

static void setup(void)
{
    h_ref_start(&ref, "redis-slowlog", NULL);
    const char *args[] = { "--enable-dangerous-commands", "yes",
                           "--slowlog-log-slower-than", "0", "--slowlog-max-len", "6", NULL };
    h_proxy_start(&logged, args);
}

static void teardown(void)
{
    h_proxy_stop(&logged);
    h_proxy_stop(&ref);
}

/* The commands both logs are shown: a long argument, more than 32
 * arguments, an AUTH that fails, a named client. */
static void run_commands(redisContext *c)
{
    char big[300];
    memset(big, 'v', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    const char *many[40] = { "DEL" };
    char names[39][8];
    for (int i = 1; i < 40; i++) {
        H_FMT(names[i - 1], sizeof names[0], "sl:%d", i);
        many[i] = names[i - 1];
    }
    H_OK(c, "CLIENT SETNAME slow-one");
    freeReplyObject(h_cmd(c, "SET sl:big %s", big));
    freeReplyObject(h_cmd_argv(c, 40, many));
    H_ERR(c, "WRONGPASS", "AUTH nobody secret-word");
    freeReplyObject(h_cmd(c, "GET sl:big"));
}

/* Entry e's arguments, joined by spaces, into out. */
static void entry_args(const redisReply *e, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = '\0';
    ck_assert_int_eq(e->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(e->elements, 6);
    const redisReply *a = e->element[3];
    for (size_t i = 0; i < a->elements && at < cap; i++)
        at += (size_t)snprintf(out + at, cap - at, "%s%s", i ? " " : "", a->element[i]->str);
}

/* How many of SLOWLOG GET -1's entries are the proxy's own (not naming a
 * master); the newest one's arguments into newest. */
static int own_entries(redisContext *c, char *newest, size_t cap)
{
    redisReply *all = h_cmd(c, "SLOWLOG GET -1");
    H_EXPECT_TYPE(all, REDIS_REPLY_ARRAY);
    int n = 0;
    newest[0] = '\0';
    for (size_t i = 0; i < all->elements; i++) {
        if (strncmp(all->element[i]->element[5]->str, "node=", 5) == 0)
            continue;
        if (n++ == 0)
            entry_args(all->element[i], newest, cap);
    }
    freeReplyObject(all);
    return n;
}

START_TEST(test_entries_as_redis)
{
    redisContext *p = h_connect_node(&logged.addr), *r = h_connect_node(&ref.addr);
    H_OK(r, "CONFIG SET slowlog-log-slower-than 0");
    H_OK(p, "SLOWLOG RESET");
    H_OK(r, "SLOWLOG RESET");
    run_commands(p);
    run_commands(r);
    redisReply *pr = h_cmd(p, "SLOWLOG GET 4"), *rr = h_cmd(r, "SLOWLOG GET 4");
    H_EXPECT_TYPE(pr, REDIS_REPLY_ARRAY);
    H_EXPECT_TYPE(rr, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(pr->elements, 4);
    ck_assert_int_eq(rr->elements, 4);
    redisReply *info = h_cmd(p, "CLIENT INFO");
    char addr[128];
    ck_assert(sscanf(strstr(info->str, "addr="), "addr=%127s", addr) == 1);
    freeReplyObject(info);
    for (size_t i = 0; i < 4; i++) {
        char a[8192], b[8192];
        const redisReply *e = pr->element[i];
        entry_args(e, a, sizeof a);
        entry_args(rr->element[i], b, sizeof b);
        ck_assert_msg(strcmp(a, b) == 0, "entry %zu: proxy '%s', redis '%s'", i, a, b);
        ck_assert_str_eq(e->element[4]->str, addr);
        ck_assert_str_eq(e->element[5]->str, "slow-one");
        ck_assert_int_eq(e->element[0]->type, REDIS_REPLY_INTEGER);
        ck_assert(e->element[1]->integer > 1700000000);
        if (i > 0)      /* newest first */
            ck_assert_int_lt(e->element[0]->integer, pr->element[i - 1]->element[0]->integer);
    }
    ck_assert_str_eq(pr->element[1]->element[3]->element[1]->str, "(redacted)");
    freeReplyObject(pr);
    freeReplyObject(rr);
    H_OK(r, "CONFIG SET slowlog-log-slower-than 10000");
    redisFree(p);
    redisFree(r);
}
END_TEST

/* The masters' entries are merged in, each naming its master; LEN counts
 * both logs, RESET empties both. */
START_TEST(test_masters_merged)
{
    redisContext *p = h_connect_node(&logged.addr);
    struct h_topo t;
    h_topo_load(&t);
    char owner[96];
    int m = h_topo_owner(&t, h_slot("sl:merged"));
    H_FMT(owner, sizeof owner, "node=%s:%d", t.masters[m].host, t.masters[m].port);
    H_OK(p, "CONFIG SET slowlog-log-slower-than 0");        /* every master's */
    H_OK(p, "SET sl:merged on-the-node");
    H_OK(p, "CONFIG SET slowlog-log-slower-than 10000");
    redisReply *all = h_cmd(p, "SLOWLOG GET -1");
    H_EXPECT_TYPE(all, REDIS_REPLY_ARRAY);
    int from_node = 0, from_proxy = 0;
    for (size_t i = 0; i < all->elements; i++) {
        const redisReply *e = all->element[i];
        char a[8192];
        entry_args(e, a, sizeof a);
        if (strcasecmp(a, "set sl:merged on-the-node") != 0)
            continue;
        if (strncmp(e->element[5]->str, "node=", 5) == 0) {
            ck_assert_str_eq(e->element[5]->str, owner);
            from_node++;
        } else {
            from_proxy++;
        }
        if (i > 0)
            ck_assert_int_le(e->element[1]->integer, all->element[i - 1]->element[1]->integer);
    }
    ck_assert_int_eq(from_node, 1);
    ck_assert_int_eq(from_proxy, 1);
    redisReply *len = h_cmd(p, "SLOWLOG LEN");
    H_EXPECT_TYPE(len, REDIS_REPLY_INTEGER);
    /* LEN also counts the GET -1 before it, the proxy's newest */
    ck_assert_int_ge(len->integer, (long long)all->elements);
    freeReplyObject(len);
    freeReplyObject(all);
    redisReply *two = h_cmd(p, "SLOWLOG GET 2");
    H_EXPECT_TYPE(two, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(two->elements, 2);
    freeReplyObject(two);
    H_OK(p, "SLOWLOG RESET");
    char newest[256];
    ck_assert_int_eq(own_entries(p, newest, sizeof newest), 1);
    ck_assert_str_eq(newest, "SLOWLOG RESET");
    redisFree(p);
}
END_TEST

/* GET's count as Redis 7.0 reads it; slowlog-max-len bounds the proxy's. */
START_TEST(test_count_and_bound)
{
    redisContext *p = h_connect_node(&logged.addr);
    H_ERR(p, "ERR count should be greater than or equal to -1", "SLOWLOG GET -2");
    H_ERR(p, "ERR count should be greater than or equal to -1", "SLOWLOG GET many");
    H_OK(p, "SLOWLOG RESET");
    for (int i = 0; i < 20; i++)
        H_STATUS(p, "PONG", "PING");
    char newest[256];
    ck_assert_int_eq(own_entries(p, newest, sizeof newest), 6);   /* slowlog-max-len */
    ck_assert_str_eq(newest, "PING");
    redisReply *z = h_cmd(p, "SLOWLOG GET 0");
    H_EXPECT_TYPE(z, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(z->elements, 0);
    freeReplyObject(z);
    redisFree(p);
}
END_TEST

START_TEST(test_refused_without_admin)
{
    redisContext *c = h_connect_proxy();
    H_ERR(c, "ERR 'slowlog|get' is a dangerous command", "SLOWLOG GET");
    H_ERR(c, "ERR 'slowlog|len' is a dangerous command", "SLOWLOG LEN");
    H_ERR(c, "ERR 'slowlog|reset' is a dangerous command", "SLOWLOG RESET");
    redisFree(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("slowlog");
    TCase *t = tcase_create("slowlog");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_entries_as_redis);
    tcase_add_test(t, test_masters_merged);
    tcase_add_test(t, test_count_and_bound);
    tcase_add_test(t, test_refused_without_admin);
    suite_add_tcase(s, t);
    return h_run(s);
}
