/*
 * INFO as one redis-server 7.0 writes it: the same sections for the same
 * arguments (no argument, default, all, everything, several names, an
 * unknown one), in the same order, and in each section every field the
 * reference writes (the proxy may write more, and its own proxy and nodes
 * sections); the figures of the server the client sees (role:master
 * without replicas, cluster_enabled:0); errorstats counting the error
 * replies the proxy sent by their code; persistence from the masters; and
 * CONFIG RESETSTAT starting INFO's figures again; CONFIG SET requirepass
 * the proxy's (the other settings of the proxy: test_configset). The
 * reference is a
 * standalone redis-server started and stopped here.
 */
#include "harness.h"

static struct h_proxy ref, extra;

static void setup(void)
{
    h_ref_start(&ref, "redis-info", NULL);
    const char *args[] = { "--enable-dangerous-commands", "yes", "--acl-mutable", "yes", NULL };
    h_proxy_start(&extra, args);
}

static void teardown(void)
{
    h_proxy_stop(&extra);
    h_proxy_stop(&ref);
}

/* INFO's "# Title" lines, blank-separated, into out; the proxy's own
 * sections left out. */
static void titles(redisContext *c, const char *args, char *out, size_t cap)
{
    redisReply *r = args[0] ? h_cmd(c, "INFO %s", args) : h_cmd(c, "INFO");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    size_t at = 0;
    out[0] = '\0';
    for (const char *l = r->str; l && *l; l = strstr(l, "\r\n") ? strstr(l, "\r\n") + 2 : NULL) {
        if (l[0] != '#' || strncmp(l, "# Proxy\r", 8) == 0 || strncmp(l, "# Nodes\r", 8) == 0)
            continue;
        size_t n = strcspn(l, "\r");
        at += (size_t)snprintf(out + at, cap - at, "%.*s ", (int)n, l);
    }
    freeReplyObject(r);
}

START_TEST(test_sections_as_redis)
{
    redisContext *p = h_connect_proxy(), *r = h_connect_node(&ref.addr);
    static const char *const asks[] = { "", "default", "all", "everything", "server clients",
                                        "SERVER", "errorstats cpu", "bogus", "commandstats",
                                        "keyspace replication", "default commandstats" };
    for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
        char a[512], b[512];
        titles(p, asks[i], a, sizeof a);
        titles(r, asks[i], b, sizeof b);
        ck_assert_msg(strcmp(a, b) == 0, "INFO %s: proxy '%s', redis '%s'", asks[i], a, b);
    }
    redisFree(p);
    redisFree(r);
}
END_TEST

/* Where name:value lines begin in text's section titled title (or NULL). */
static const char *section_of(const char *text, const char *title)
{
    char head[64];
    snprintf(head, sizeof head, "# %s\r\n", title);
    const char *at = strstr(text, head);
    return at ? at + strlen(head) : NULL;
}

static int has_field(const char *section, const char *name, size_t len)
{
    for (const char *l = section; l && *l && *l != '#' && *l != '\r';
         l = strstr(l, "\r\n") ? strstr(l, "\r\n") + 2 : NULL)
        if (strncmp(l, name, len) == 0 && l[len] == ':')
            return 1;
    return 0;
}

/* Every field of the reference's fixed sections is in the proxy's. */
START_TEST(test_fields_as_redis)
{
    redisContext *p = h_connect_proxy(), *r = h_connect_node(&ref.addr);
    redisReply *a = h_cmd(p, "INFO everything"), *b = h_cmd(r, "INFO everything");
    H_EXPECT_TYPE(a, REDIS_REPLY_STRING);
    H_EXPECT_TYPE(b, REDIS_REPLY_STRING);
    static const char *const fixed[] = { "Server", "Clients", "Memory", "Persistence", "Stats",
                                         "Replication", "CPU", "Cluster" };
    int checked = 0;
    for (size_t s = 0; s < sizeof fixed / sizeof fixed[0]; s++) {
        const char *want = section_of(b->str, fixed[s]), *got = section_of(a->str, fixed[s]);
        ck_assert_msg(want && got, "section %s: redis %d, proxy %d", fixed[s], !!want, !!got);
        for (const char *l = want; *l && *l != '\r' && *l != '#'; l = strstr(l, "\r\n") + 2) {
            size_t n = strcspn(l, ":");
            ck_assert_msg(has_field(got, l, n), "INFO %s has no %.*s", fixed[s], (int)n, l);
            checked++;
        }
    }
    ck_assert_int_gt(checked, 150);
    static const char *const values[] = { "role:master\r\n", "connected_slaves:0\r\n",
                                          "cluster_enabled:0\r\n", "redis_mode:standalone\r\n",
                                          "arch_bits:64\r\n", "master_failover_state:no-failover\r\n" };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        ck_assert_msg(strstr(a->str, values[i]), "INFO has no %s", values[i]);
    freeReplyObject(a);
    freeReplyObject(b);
    redisFree(p);
    redisFree(r);
}
END_TEST

/* The fields Redis 7.2 and 7.4 and Valkey 8.0 write beyond 7.0's, in the
 * default sections (genRedisInfoString / genValkeyInfoString at 7.2.6,
 * 7.4.1 and 8.0.1; the server's name and version are the cluster's, not
 * listed here): every one is in the proxy's, whatever the cluster runs. */
START_TEST(test_fields_of_newer_servers)
{
    static const struct { const char *section, *field; } newer[] = {
        { "Server", "listener0" },
        { "Clients", "total_blocking_keys" }, { "Clients", "total_blocking_keys_on_nokey" },
        { "Clients", "pubsub_clients" }, { "Clients", "watching_clients" },
        { "Clients", "total_watched_keys" },
        { "Memory", "allocator_muzzy" }, { "Memory", "mem_overhead_db_hashtable_rehashing" },
        { "Stats", "eventloop_cycles" }, { "Stats", "eventloop_duration_sum" },
        { "Stats", "eventloop_duration_cmd_sum" },
        { "Stats", "instantaneous_eventloop_cycles_per_sec" },
        { "Stats", "instantaneous_eventloop_duration_usec" },
        { "Stats", "acl_access_denied_auth" }, { "Stats", "acl_access_denied_cmd" },
        { "Stats", "acl_access_denied_key" }, { "Stats", "acl_access_denied_channel" },
        { "Stats", "expired_subkeys" }, { "Stats", "evicted_scripts" },
        { "Stats", "client_query_buffer_limit_disconnections" },
        { "Stats", "client_output_buffer_limit_disconnections" },
        { "Stats", "io_threaded_freed_objects" }, { "Stats", "io_threaded_poll_processed" },
        { "Stats", "io_threaded_total_prefetch_batches" },
        { "Stats", "io_threaded_total_prefetch_entries" },
        { "Replication", "replicas_waiting_psync" },
    };
    redisContext *p = h_connect_proxy();
    redisReply *a = h_cmd(p, "INFO");
    H_EXPECT_TYPE(a, REDIS_REPLY_STRING);
    for (size_t i = 0; i < sizeof newer / sizeof newer[0]; i++) {
        const char *got = section_of(a->str, newer[i].section);
        ck_assert_msg(got && has_field(got, newer[i].field, strlen(newer[i].field)),
                      "INFO %s has no %s", newer[i].section, newer[i].field);
    }
    char listener[128];
    snprintf(listener, sizeof listener, "\r\nlistener0:name=tcp,bind=%s,port=%d\r\n",
             h_proxy_addr().host, h_proxy_addr().port);
    ck_assert_msg(strstr(a->str, listener), "INFO has no %s", listener + 2);
    freeReplyObject(a);
    redisFree(p);
}
END_TEST

/* The number after "name:" in c's INFO section (or -1 when absent). */
static long long info_number(redisContext *c, const char *section, const char *name)
{
    redisReply *r = h_cmd(c, "INFO %s", section);
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    char key[128];
    snprintf(key, sizeof key, "\r\n%s:", name);
    const char *at = strstr(r->str, key);
    long long v = at ? atoll(at + strlen(key)) : -1;
    freeReplyObject(r);
    return v;
}

static long long errorstat(redisContext *c, const char *code)
{
    redisReply *r = h_cmd(c, "INFO errorstats");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    char key[128];
    snprintf(key, sizeof key, "errorstat_%s:count=", code);
    const char *at = strstr(r->str, key);
    long long v = at ? atoll(at + strlen(key)) : 0;
    freeReplyObject(r);
    return v;
}

/* Error replies counted by code, as they went out: the proxy's own
 * (unknown command), a node's (WRONGTYPE); CONFIG RESETSTAT starts the
 * counts, the commands and the connections again. */
START_TEST(test_errorstats_and_resetstat)
{
    redisContext *c = h_connect_node(&extra.addr);
    char key[128];
    snprintf(key, sizeof key, "{%s}:info:list", h_prefix());
    long long err = errorstat(c, "ERR"), wrongtype = errorstat(c, "WRONGTYPE");
    long long total = info_number(c, "stats", "total_error_replies");
    redisReply *r = h_cmd(c, "NOSUCHCOMMAND");
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    freeReplyObject(h_cmd(c, "RPUSH %s a", key));
    r = h_cmd(c, "GET %s", key);
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    ck_assert_int_eq(errorstat(c, "ERR"), err + 1);
    ck_assert_int_eq(errorstat(c, "WRONGTYPE"), wrongtype + 1);
    ck_assert_int_eq(info_number(c, "stats", "total_error_replies"), total + 2);
    ck_assert_int_gt(info_number(c, "stats", "total_commands_processed"), 5);

    H_OK(c, "CONFIG RESETSTAT");
    ck_assert_int_eq(errorstat(c, "WRONGTYPE"), 0);
    ck_assert_int_eq(info_number(c, "stats", "total_error_replies"), 0);
    /* the two INFOs since and this one, as one server counts (its
     * RESETSTAT, its two INFOs) */
    ck_assert_int_le(info_number(c, "stats", "total_commands_processed"), 3);
    ck_assert_int_eq(info_number(c, "stats", "total_connections_received"), 0);
    redisReply *cs = h_cmd(c, "INFO commandstats");
    ck_assert_msg(strstr(cs->str, "cmdstat_get:") == NULL, "%s", cs->str);
    freeReplyObject(cs);
    freeReplyObject(h_cmd(c, "DEL %s", key));
    redisFree(c);
}
END_TEST

/* Stats of Redis 7.2 and 7.4 the proxy keeps: a command a user's rules
 * refuse and a failed AUTH count; CONFIG RESETSTAT starts them again. */
START_TEST(test_acl_denials_counted)
{
    redisContext *c = h_connect_node(&extra.addr);
    H_OK(c, "ACL SETUSER info-denied on >info-pw +get ~info:*");
    long long cmd = info_number(c, "stats", "acl_access_denied_cmd");
    long long key = info_number(c, "stats", "acl_access_denied_key");
    long long auth = info_number(c, "stats", "acl_access_denied_auth");
    redisContext *d = h_connect_node(&extra.addr);
    H_ERR(d, "WRONGPASS", "AUTH info-denied wrong");
    H_OK(d, "AUTH info-denied info-pw");
    H_ERR(d, "NOPERM", "SET info:a 1");
    H_ERR(d, "NOPERM", "GET other:a");
    ck_assert_int_eq(info_number(c, "stats", "acl_access_denied_cmd"), cmd + 1);
    ck_assert_int_eq(info_number(c, "stats", "acl_access_denied_key"), key + 1);
    ck_assert_int_eq(info_number(c, "stats", "acl_access_denied_auth"), auth + 1);
    H_OK(c, "CONFIG RESETSTAT");
    ck_assert_int_eq(info_number(c, "stats", "acl_access_denied_cmd"), 0);
    redisFree(d);
    redisFree(c);
}
END_TEST

/* Persistence as the masters report it: a BGSAVE on one master shows. */
START_TEST(test_persistence_from_masters)
{
    redisContext *c = h_connect_proxy();
    long long changes = info_number(c, "persistence", "rdb_changes_since_last_save");
    ck_assert_int_ge(changes, 0);
    ck_assert_int_eq(info_number(c, "persistence", "loading"), 0);
    ck_assert_int_ge(info_number(c, "persistence", "rdb_last_save_time"), 1);
    char key[128];
    snprintf(key, sizeof key, "{%s}:info:changes", h_prefix());
    for (int i = 0; i < 5; i++)
        freeReplyObject(h_cmd(c, "INCR %s", key));
    ck_assert_int_ge(info_number(c, "persistence", "rdb_changes_since_last_save"), changes + 5);
    freeReplyObject(h_cmd(c, "DEL %s", key));
    redisFree(c);
}
END_TEST

/* CONFIG SET requirepass sets the proxy's password, as Redis sets its own
 * (new connections must AUTH, those logged in stay), never the nodes' (it
 * would lock the proxy out of its cluster); set alone; a mix of the
 * proxy's settings and the nodes' refused whole; other settings reach
 * every master. */
START_TEST(test_config_set_proxy_settings)
{
    redisContext *c = h_connect_node(&extra.addr);
    H_OK(c, "CONFIG SET requirepass tp-info-pw");
    redisContext *d = h_connect_node(&extra.addr);
    H_ERR(d, "NOAUTH", "PING");
    H_OK(d, "AUTH tp-info-pw");
    H_STATUS(d, "PONG", "PING");
    H_STATUS(c, "PONG", "PING");                    /* still logged in */
    redisReply *r = h_cmd(c, "CONFIG GET requirepass");     /* a master's */
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 2);
    ck_assert_str_eq(r->element[1]->str, "");
    freeReplyObject(r);
    H_ERR(c, "ERR CONFIG SET requirepass through the proxy", "CONFIG SET requirepass a maxclients 5");
    H_ERR(c, "ERR CONFIG SET maxclients is the proxy's own setting and slowlog-max-len the "
          "nodes'", "CONFIG SET slowlog-max-len 128 maxclients 5");
    H_OK(c, "CONFIG SET slowlog-max-len 128");
    const char *clear[] = { "CONFIG", "SET", "requirepass", "" };
    r = h_cmd_argv(c, 4, clear);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    redisContext *e = h_connect_node(&extra.addr);
    H_STATUS(e, "PONG", "PING");                    /* no password again */
    redisFree(c);
    redisFree(d);
    redisFree(e);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("info");
    TCase *t = tcase_create("info");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_sections_as_redis);
    tcase_add_test(t, test_fields_as_redis);
    tcase_add_test(t, test_fields_of_newer_servers);
    tcase_add_test(t, test_errorstats_and_resetstat);
    tcase_add_test(t, test_acl_denials_counted);
    tcase_add_test(t, test_persistence_from_masters);
    tcase_add_test(t, test_config_set_proxy_settings);
    suite_add_tcase(s, t);
    return h_run(s);
}
