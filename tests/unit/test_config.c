/*
 * config: defaults, every directive, memory units, host:port, redis.conf
 * quoting, every error with its exact "WHERE: what" message, the order
 * file < environment < command line, the shipped conf/tagproxy.conf, and
 * the directives described and written back (dump.h).
 */
#include "lib/base/hostport.h"
#include "proxy/config/config.h"
#include "proxy/config/dump.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MB (1024LL * 1024)

static char tmpdir[256];
static char err[1024];

/* Writes len bytes (so a test can put a NUL in a file) to tmpdir/name. */
static const char *write_file_len(const char *name, const char *text, size_t len)
{
    static char path[512];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    fclose(f);
    return path;
}

static const char *write_file(const char *name, const char *text)
{
    return write_file_len(name, text, strlen(text));
}

/* config_load of text as a file, no env, no argv. */
static int load_text(struct config *c, const char *text)
{
    return config_load(c, write_file("t.conf", text), NULL, 0, NULL, err, sizeof err);
}

static void assert_str_eq_null(const char *a, const char *b)
{
    if (!a || !b)
        ck_assert_ptr_eq(a, b);
    else
        ck_assert_str_eq(a, b);
}

/* Every field but path. */
static void assert_config_eq(const struct config *a, const struct config *b)
{
    ck_assert_str_eq(a->listen, b->listen);
    assert_str_eq_null(a->admin_listen, b->admin_listen);
    ck_assert_int_eq(a->ncluster, b->ncluster);
    for (int i = 0; i < a->ncluster; i++)
        ck_assert_str_eq(a->cluster[i], b->cluster[i]);
    ck_assert_int_eq(a->threads, b->threads);
    assert_str_eq_null(a->requirepass, b->requirepass);
    assert_str_eq_null(a->unixsocket, b->unixsocket);
    ck_assert_int_eq(a->unixsocketperm, b->unixsocketperm);
    assert_str_eq_null(a->tls_listen, b->tls_listen);
    ck_assert_int_eq(a->tls_auth_clients, b->tls_auth_clients);
    ck_assert_int_eq(a->cluster_tls, b->cluster_tls);
    ck_assert_int_eq(a->cluster_tls_insecure, b->cluster_tls_insecure);
    assert_str_eq_null(a->cluster_user, b->cluster_user);
    assert_str_eq_null(a->cluster_password, b->cluster_password);
    ck_assert_int_eq(a->max_clients, b->max_clients);
    ck_assert_int_eq(a->client_query_buffer_limit, b->client_query_buffer_limit);
    ck_assert_int_eq(a->client_backlog_limit, b->client_backlog_limit);
    ck_assert_int_eq(a->maxmemory_clients, b->maxmemory_clients);
    ck_assert_int_eq(a->proto_max_bulk_len, b->proto_max_bulk_len);
    ck_assert_int_eq(a->client_output_hard_limit, b->client_output_hard_limit);
    ck_assert_int_eq(a->client_output_soft_limit, b->client_output_soft_limit);
    ck_assert_int_eq(a->client_output_soft_seconds, b->client_output_soft_seconds);
    ck_assert_int_eq(a->node_connect_timeout_ms, b->node_connect_timeout_ms);
    ck_assert_int_eq(a->node_timeout_ms, b->node_timeout_ms);
    ck_assert_int_eq(a->topology_refresh_ms, b->topology_refresh_ms);
    ck_assert_int_eq(a->max_redirects, b->max_redirects);
    ck_assert_int_eq(a->retry_attempts, b->retry_attempts);
    ck_assert_int_eq(a->retry_base_ms, b->retry_base_ms);
    ck_assert_int_eq(a->retry_max_ms, b->retry_max_ms);
    ck_assert_int_eq(a->round_pause_us, b->round_pause_us);
    ck_assert_int_eq(a->io_uring, b->io_uring);
    ck_assert_int_eq(a->worker_nice, b->worker_nice);
    ck_assert_int_eq(a->naddress_map, b->naddress_map);
    ck_assert_int_eq(a->nusers, b->nusers);
    for (int i = 0; i < a->nusers; i++) {
        ck_assert_int_eq(a->users[i].argc, b->users[i].argc);
        for (int j = 0; j < a->users[i].argc; j++)
            ck_assert_str_eq(a->users[i].argv[j], b->users[i].argv[j]);
    }
    for (int i = 0; i < a->naddress_map; i++) {
        ck_assert_str_eq(a->address_map[i].from, b->address_map[i].from);
        ck_assert_str_eq(a->address_map[i].to, b->address_map[i].to);
    }
    ck_assert_int_eq(a->enable_dangerous_commands, b->enable_dangerous_commands);
    ck_assert_int_eq(a->nlayout_rules, b->nlayout_rules);
    for (int i = 0; i < a->nlayout_rules; i++) {
        ck_assert_str_eq(a->layout_rules[i].path, b->layout_rules[i].path);
        ck_assert_int_eq(a->layout_rules[i].nprefix, b->layout_rules[i].nprefix);
        for (int j = 0; j < a->layout_rules[i].nprefix; j++)
            ck_assert_str_eq(a->layout_rules[i].prefix[j], b->layout_rules[i].prefix[j]);
    }
    ck_assert_int_eq(a->nlayout_prefix, b->nlayout_prefix);
    for (int i = 0; i < a->nlayout_prefix; i++)
        ck_assert_str_eq(a->layout_prefix[i], b->layout_prefix[i]);
    ck_assert_int_eq(a->layout_allow_legacy_data, b->layout_allow_legacy_data);
    ck_assert_int_eq(a->log_level, b->log_level);
    assert_str_eq_null(a->log_file, b->log_file);
    ck_assert_int_eq(a->shutdown_timeout_ms, b->shutdown_timeout_ms);
    ck_assert_int_eq(a->daemonize, b->daemonize);
    assert_str_eq_null(a->pidfile, b->pidfile);
}

/* ---- defaults ---- */

START_TEST(test_defaults)
{
    struct config d, c;

    config_defaults(&d);
    ck_assert_str_eq(d.listen, "127.0.0.1:6380");
    ck_assert_str_eq(d.admin_listen, "127.0.0.1:8380");
    ck_assert_int_eq(d.ncluster, 0);
    ck_assert_ptr_null(d.cluster);
    ck_assert_int_eq(d.threads, 1);
    ck_assert_ptr_null(d.requirepass);
    ck_assert_ptr_null(d.cluster_user);
    ck_assert_ptr_null(d.cluster_password);
    ck_assert_int_eq(d.max_clients, 10000);
    ck_assert_int_eq(d.client_query_buffer_limit, 1024 * MB);
    ck_assert_int_eq(d.client_backlog_limit, 16 * MB);
    ck_assert_int_eq(d.maxmemory_clients, 0);
    ck_assert_int_eq(d.proto_max_bulk_len, 512 * MB);
    ck_assert_int_eq(d.client_output_hard_limit, 256 * MB);
    ck_assert_int_eq(d.client_output_soft_limit, 64 * MB);
    ck_assert_int_eq(d.client_output_soft_seconds, 60);
    ck_assert_int_eq(d.node_connect_timeout_ms, 1000);
    ck_assert_int_eq(d.node_timeout_ms, 5000);
    ck_assert_int_eq(d.topology_refresh_ms, 10000);
    ck_assert_int_eq(d.round_pause_us, 30);
    ck_assert_int_eq(d.io_uring, 1);
    ck_assert_int_eq(d.worker_nice, 5);
    ck_assert_ptr_null(d.unixsocket);
    ck_assert_int_eq(d.unixsocketperm, 0);
    ck_assert_int_eq(d.max_redirects, 5);
    ck_assert_int_eq(d.retry_attempts, 10);
    ck_assert_int_eq(d.retry_base_ms, 10);
    ck_assert_int_eq(d.retry_max_ms, 500);
    ck_assert_int_eq(d.naddress_map, 0);
    ck_assert_int_eq(d.enable_dangerous_commands, 0);
    ck_assert_ptr_null(d.layout_rules);
    ck_assert_int_eq(d.nlayout_prefix, 0);
    ck_assert_ptr_null(d.layout_prefix);
    ck_assert_int_eq(d.layout_allow_legacy_data, 0);
    ck_assert_int_eq(d.log_level, LOG_NOTICE);
    ck_assert_ptr_null(d.log_file);
    ck_assert_int_eq(d.shutdown_timeout_ms, 5000);
    ck_assert_int_eq(d.daemonize, 0);
    ck_assert_ptr_null(d.pidfile);
    ck_assert_ptr_null(d.path);

    ck_assert_int_eq(config_load(&c, NULL, NULL, 0, NULL, err, sizeof err), 0);
    assert_config_eq(&c, &d);
    ck_assert_ptr_null(c.path);
    config_free(&c);
    assert_config_eq(&c, &d);
    config_free(&d);            /* the static default listen is not freed */
}
END_TEST

/* ---- every directive ---- */

START_TEST(test_every_directive)
{
    char text[4096];
    struct config c;

    snprintf(text, sizeof text,
             "listen 0.0.0.0:7777\n"
             "admin-listen 0.0.0.0:9122\n"
             "cluster 10.0.0.1:7000 10.0.0.2:7001\n"
             "cluster [::1]:7002\n"
             "THREADS 4\n"
             "requirepass s3cret\n"
             "user bob bobpw +get -@dangerous +client|id\n"
             "user carl nopass allcommands\n"
             "unixsocket /run/tagproxy/tp.sock\n"
             "unixsocketperm 770\n"
             "tls-listen 0.0.0.0:6390\n"
             "tls-cert-file /c.crt\n"
             "tls-key-file /c.key\n"
             "tls-ca-cert-file /ca.crt\n"
             "tls-auth-clients optional\n"
             "cluster-tls yes\n"
             "cluster-tls-ca-cert-file /cca.crt\n"
             "cluster-tls-cert-file /cc.crt\n"
             "cluster-tls-key-file /cc.key\n"
             "cluster-tls-server-name redis.internal\n"
             "cluster-tls-insecure yes\n"
             "cluster-user proxyuser\n"
             "cluster-password nodepass\n"
             "max-clients 123\n"
             "slowlog-log-slower-than -1\n"
             "slowlog-max-len 7\n"
             "timeout 30\n"
             "tcp-keepalive 0\n"
             "client-query-buffer-limit 2mb\n"
             "client-backlog-limit 0\n"
             "maxmemory-clients 128mb\n"
             "proto-max-bulk-len 1mb\n"
             "client-output-buffer-limit 0 32mb 7\n"
             "node-connect-timeout-ms 250\n"
             "node-timeout-ms 750\n"
             "topology-refresh-ms 0\n"
             "max-redirects 0\n"
             "retry-attempts 0\n"
             "retry-base-ms 1\n"
             "retry-max-ms 2000\n"
             "round-pause-us 0\n"
             "io-uring no\n"
             "worker-nice 0\n"
             "address-map 172.18.0.2:6379 127.0.0.1:7000\n"
             "Address-Map 172.18.0.3:6379 127.0.0.1:7001 172.18.0.4:6379 127.0.0.1:7002\n"
             "enable-dangerous-commands YES\n"
             "log-level Debug\n"
             "shutdown-timeout-ms 0\n"
             "daemonize yes\n"
             "pidfile /run/tp.pid\n"
             "log-file %s/every.log\n", tmpdir);
    ck_assert_msg(load_text(&c, text) == 0, "%s", err);
    ck_assert_str_eq(c.listen, "0.0.0.0:7777");
    ck_assert_str_eq(c.admin_listen, "0.0.0.0:9122");
    ck_assert_int_eq(c.ncluster, 3);
    ck_assert_str_eq(c.cluster[0], "10.0.0.1:7000");
    ck_assert_str_eq(c.cluster[1], "10.0.0.2:7001");
    ck_assert_str_eq(c.cluster[2], "[::1]:7002");
    ck_assert_int_eq(c.threads, 4);
    ck_assert_str_eq(c.requirepass, "s3cret");
    ck_assert_int_eq(c.nusers, 2);
    ck_assert_int_eq(c.users[0].argc, 5);
    ck_assert_str_eq(c.users[0].argv[0], "bob");
    ck_assert_str_eq(c.users[0].argv[1], "bobpw");
    ck_assert_str_eq(c.users[0].argv[4], "+client|id");
    ck_assert_str_eq(c.users[1].argv[1], "nopass");
    ck_assert_str_eq(c.unixsocket, "/run/tagproxy/tp.sock");
    ck_assert_int_eq(c.unixsocketperm, 0770);
    ck_assert_int_eq(c.slowlog_log_slower_than, -1);
    ck_assert_int_eq(c.slowlog_max_len, 7);
    ck_assert_int_eq(c.timeout, 30);
    ck_assert_int_eq(c.tcp_keepalive, 0);
    ck_assert_str_eq(c.tls_listen, "0.0.0.0:6390");
    ck_assert_str_eq(c.tls_cert_file, "/c.crt");
    ck_assert_str_eq(c.tls_key_file, "/c.key");
    ck_assert_str_eq(c.tls_ca_cert_file, "/ca.crt");
    ck_assert_int_eq(c.tls_auth_clients, TLS_VERIFY_OPTIONAL);
    ck_assert_int_eq(c.cluster_tls, 1);
    ck_assert_str_eq(c.cluster_tls_ca_cert_file, "/cca.crt");
    ck_assert_str_eq(c.cluster_tls_cert_file, "/cc.crt");
    ck_assert_str_eq(c.cluster_tls_key_file, "/cc.key");
    ck_assert_str_eq(c.cluster_tls_server_name, "redis.internal");
    ck_assert_int_eq(c.cluster_tls_insecure, 1);
    ck_assert_str_eq(c.cluster_user, "proxyuser");
    ck_assert_str_eq(c.cluster_password, "nodepass");
    ck_assert_int_eq(c.max_clients, 123);
    ck_assert_int_eq(c.client_query_buffer_limit, 2 * MB);
    ck_assert_int_eq(c.client_backlog_limit, 0);
    ck_assert_int_eq(c.maxmemory_clients, 128 * MB);
    ck_assert_int_eq(c.proto_max_bulk_len, MB);
    ck_assert_int_eq(c.client_output_hard_limit, 0);
    ck_assert_int_eq(c.client_output_soft_limit, 32 * MB);
    ck_assert_int_eq(c.client_output_soft_seconds, 7);
    ck_assert_int_eq(c.node_connect_timeout_ms, 250);
    ck_assert_int_eq(c.node_timeout_ms, 750);
    ck_assert_int_eq(c.topology_refresh_ms, 0);
    ck_assert_int_eq(c.max_redirects, 0);
    ck_assert_int_eq(c.retry_attempts, 0);
    ck_assert_int_eq(c.retry_base_ms, 1);
    ck_assert_int_eq(c.retry_max_ms, 2000);
    ck_assert_int_eq(c.round_pause_us, 0);
    ck_assert_int_eq(c.io_uring, 0);
    ck_assert_int_eq(c.worker_nice, 0);
    ck_assert_int_eq(c.naddress_map, 3);
    ck_assert_str_eq(c.address_map[0].from, "172.18.0.2:6379");
    ck_assert_str_eq(c.address_map[0].to, "127.0.0.1:7000");
    ck_assert_str_eq(c.address_map[1].from, "172.18.0.3:6379");
    ck_assert_str_eq(c.address_map[1].to, "127.0.0.1:7001");
    ck_assert_str_eq(c.address_map[2].from, "172.18.0.4:6379");
    ck_assert_str_eq(c.address_map[2].to, "127.0.0.1:7002");
    ck_assert_int_eq(c.enable_dangerous_commands, 1);
    ck_assert_int_eq(c.log_level, LOG_DEBUG);
    ck_assert_str_eq(c.log_file + strlen(tmpdir), "/every.log");
    ck_assert_int_eq(c.shutdown_timeout_ms, 0);
    ck_assert_int_eq(c.daemonize, 1);
    ck_assert_str_eq(c.pidfile, "/run/tp.pid");
    ck_assert_ptr_nonnull(c.path);
    ck_assert_int_eq(access(c.log_file, F_OK), 0);     /* opened for append */
    config_free(&c);
}
END_TEST

/* Later lines win; empty strings unset; layout of the file does not matter. */
START_TEST(test_file_layout)
{
    struct config c;

    ck_assert_msg(load_text(&c,
        "# comment\r\n"
        "   \t# indented comment\r\n"
        "\r\n"
        "  threads 2  \r\n"
        "threads 3\r\n"
        "requirepass a#b\n"
        "cluster-user \"\"\n"
        "log-level warning\n"
        "log-file ''\n"
        "enable-dangerous-commands no\n"
        "max-clients 9") == 0, "%s", err);
    ck_assert_int_eq(c.threads, 3);
    ck_assert_str_eq(c.requirepass, "a#b");
    ck_assert_ptr_null(c.cluster_user);
    ck_assert_int_eq(c.log_level, LOG_WARNING);
    ck_assert_ptr_null(c.log_file);
    ck_assert_int_eq(c.enable_dangerous_commands, 0);
    ck_assert_int_eq(c.max_clients, 9);
    config_free(&c);
}
END_TEST

START_TEST(test_log_levels)
{
    static const struct { const char *text; enum log_level level; } v[] = {
        { "debug", LOG_DEBUG }, { "verbose", LOG_VERBOSE },
        { "notice", LOG_NOTICE }, { "WARNING", LOG_WARNING },
    };
    char line[64];
    struct config c;

    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        snprintf(line, sizeof line, "log-level %s\n", v[i].text);
        ck_assert_msg(load_text(&c, line) == 0, "%s", err);
        ck_assert_int_eq(c.log_level, v[i].level);
        config_free(&c);
    }
    ck_assert_str_eq(config_log_level_name(LOG_DEBUG), "debug");
    ck_assert_str_eq(config_log_level_name(LOG_VERBOSE), "verbose");
    ck_assert_str_eq(config_log_level_name(LOG_NOTICE), "notice");
    ck_assert_str_eq(config_log_level_name(LOG_WARNING), "warning");
    ck_assert_str_eq(config_log_level_name((enum log_level)9), "?");
}
END_TEST

/* ---- values ---- */

static const struct { const char *text; int ok; long long bytes; } memory_vectors[] = {
    { "0", 1, 0 },
    { "100", 1, 100 },
    { "100b", 1, 100 },
    { "100B", 1, 100 },
    { "1k", 1, 1000 },
    { "1K", 1, 1000 },
    { "1kb", 1, 1024 },
    { "1Kb", 1, 1024 },
    { "1m", 1, 1000000 },
    { "1mb", 1, 1048576 },
    { "1MB", 1, 1048576 },
    { "5mb", 1, 5 * 1048576 },
    { "1g", 1, 1000000000 },
    { "1gb", 1, 1073741824 },
    { "1GB", 1, 1073741824 },
    { "512mb", 1, 536870912 },
    { "9223372036854775807", 1, 9223372036854775807LL },
    { "8589934591gb", 1, 8589934591LL * 1073741824 },
    { "9223372036854775808", 0, 0 },
    { "8589934592gb", 0, 0 },
    { "", 0, 0 },
    { "k", 0, 0 },
    { "mb", 0, 0 },
    { "-1", 0, 0 },
    { "+1", 0, 0 },
    { " 1", 0, 0 },
    { "1 ", 0, 0 },
    { "1 mb", 0, 0 },
    { "1.5mb", 0, 0 },
    { "1tb", 0, 0 },
    { "1kbb", 0, 0 },
    { "1x", 0, 0 },
    { "0x10", 0, 0 },
};

START_TEST(test_memory_units)
{
    long long v = -7;
    int rc = config_parse_memory(memory_vectors[_i].text, &v);

    ck_assert_msg(rc == (memory_vectors[_i].ok ? 0 : -1), "'%s'", memory_vectors[_i].text);
    if (memory_vectors[_i].ok)
        ck_assert_int_eq(v, memory_vectors[_i].bytes);
    else
        ck_assert_int_eq(v, -7);
}
END_TEST

static const struct { const char *text; const char *host; int port; } hostport_vectors[] = {
    { "127.0.0.1:6379", "127.0.0.1", 6379 },
    { "localhost:1", "localhost", 1 },
    { "redis-0.redis.svc:65535", "redis-0.redis.svc", 65535 },
    { "[::1]:7000", "::1", 7000 },
    { "[fe80::1%eth0]:7000", "fe80::1%eth0", 7000 },
    { "*:6380", "*", 6380 },
    { "127.0.0.1", NULL, 0 },
    { "127.0.0.1:", NULL, 0 },
    { ":6379", NULL, 0 },
    { "host:0", NULL, 0 },
    { "host:65536", NULL, 0 },
    { "host:-1", NULL, 0 },
    { "host:+1", NULL, 0 },
    { "host:12ab", NULL, 0 },
    { "host:6379 ", NULL, 0 },
    { "::1:7000", NULL, 0 },
    { "[::1]7000", NULL, 0 },
    { "[::1:7000", NULL, 0 },
    { "[]:7000", NULL, 0 },
    { "a b:7000", NULL, 0 },
    { "a\tb:7000", NULL, 0 },
    { "a]:7000", NULL, 0 },
    { "[a[b]:7000", NULL, 0 },
    { "", NULL, 0 },
};

START_TEST(test_hostport)
{
    char *host = NULL;
    int port = -7;
    int rc = hostport_parse(hostport_vectors[_i].text, &host, &port);

    if (hostport_vectors[_i].host) {
        ck_assert_msg(rc == 0, "'%s'", hostport_vectors[_i].text);
        ck_assert_str_eq(host, hostport_vectors[_i].host);
        ck_assert_int_eq(port, hostport_vectors[_i].port);
    } else {
        ck_assert_msg(rc == -1, "'%s'", hostport_vectors[_i].text);
        ck_assert_ptr_null(host);
        ck_assert_int_eq(port, -7);
    }
    free(host);
}
END_TEST

/* Edges of every integer range, and what is not an integer. */
static const struct { const char *line; int ok; } int_vectors[] = {
    { "threads 1", 1 }, { "threads 64", 1 }, { "threads 0", 0 }, { "threads 65", 0 },
    { "threads -1", 0 }, { "threads +1", 0 }, { "threads 4x", 0 }, { "threads x4", 0 },
    { "threads 0x4", 0 }, { "threads 1.0", 0 }, { "threads ''", 0 }, { "threads \" 4\"", 0 },
    { "threads 99999999999999999999", 0 }, { "threads 004", 1 },
    { "max-clients 1", 1 }, { "max-clients 1000000", 1 }, { "max-clients 0", 0 },
    { "max-clients 1000001", 0 },
    { "node-connect-timeout-ms 1", 1 }, { "node-connect-timeout-ms 0", 0 },
    { "node-connect-timeout-ms 3600000", 1 }, { "node-connect-timeout-ms 3600001", 0 },
    { "node-timeout-ms 1", 1 }, { "node-timeout-ms 0", 0 },
    { "node-timeout-ms 3600000", 1 }, { "node-timeout-ms 3600001", 0 },
    { "topology-refresh-ms 0", 1 }, { "topology-refresh-ms -1", 0 },
    { "topology-refresh-ms 86400000", 1 }, { "topology-refresh-ms 86400001", 0 },
    { "max-redirects 0", 1 }, { "max-redirects 100", 1 }, { "max-redirects 101", 0 },
    { "retry-attempts 0", 1 }, { "retry-attempts 1000", 1 }, { "retry-attempts 1001", 0 },
    { "retry-base-ms 1", 1 }, { "retry-base-ms 0", 0 },
    { "retry-base-ms 60000", 1 }, { "retry-base-ms 60001", 0 },
    { "retry-max-ms 1", 1 }, { "retry-max-ms 0", 0 },
    { "retry-max-ms 600000", 1 }, { "retry-max-ms 600001", 0 },
    { "shutdown-timeout-ms 0", 1 }, { "shutdown-timeout-ms -1", 0 },
    { "shutdown-timeout-ms 3600000", 1 }, { "shutdown-timeout-ms 3600001", 0 },
    { "round-pause-us 0", 1 }, { "round-pause-us 1000", 1 }, { "round-pause-us 1001", 0 },
    { "round-pause-us -1", 0 },
    { "io-uring yes", 1 }, { "io-uring no", 1 }, { "io-uring maybe", 0 },
    { "worker-nice 0", 1 }, { "worker-nice 19", 1 }, { "worker-nice 20", 0 },
    { "worker-nice -1", 0 },
    { "unixsocketperm 0", 1 }, { "unixsocketperm 777", 1 }, { "unixsocketperm 0700", 1 },
    { "unixsocketperm 1000", 0 }, { "unixsocketperm 800", 0 }, { "unixsocketperm 77x", 0 },
    { "unixsocketperm -7", 0 }, { "unixsocketperm ''", 0 },
    { "unixsocket /tmp/t.sock", 1 }, { "unixsocket ''", 1 },
    { "unixsocket /tmp/01234567890123456789012345678901234567890123456789012345678901234"
      "5678901234567890123456789012345678901", 1 },      /* 107 bytes: fits sun_path */
    { "unixsocket /tmp/01234567890123456789012345678901234567890123456789012345678901234"
      "56789012345678901234567890123456789012", 0 },     /* 108: does not */
    { "daemonize no", 1 }, { "daemonize maybe", 0 },
    { "client-query-buffer-limit 1mb", 1 }, { "client-query-buffer-limit 1048576", 1 },
    { "client-query-buffer-limit 1048575", 0 }, { "client-query-buffer-limit 1m", 0 },
    { "proto-max-bulk-len 1mb", 1 }, { "proto-max-bulk-len 1048575", 0 },
    { "proto-max-bulk-len 0", 0 }, { "proto-max-bulk-len 4gb", 1 },
    { "client-output-buffer-limit 0 0 0", 1 },
    { "client-output-buffer-limit 1 1 86400", 1 },
    { "client-output-buffer-limit 1 1 86401", 0 },
    { "client-output-buffer-limit 1 1 -1", 0 },
    { "client-output-buffer-limit 1x 1 1", 0 },
    { "client-output-buffer-limit 1 -1 1", 0 },
};

START_TEST(test_int_ranges)
{
    struct config c;
    int rc = load_text(&c, int_vectors[_i].line);

    ck_assert_msg(rc == (int_vectors[_i].ok ? 0 : -1), "'%s': %s", int_vectors[_i].line,
                  rc ? err : "accepted");
    if (rc == 0)
        config_free(&c);
}
END_TEST

/* ---- quoting, as redis.conf (sdssplitargs) ---- */

static const struct { const char *args; const char *value; } quote_vectors[] = {
    { "plain", "plain" },
    { "\"a b\"", "a b" },
    { "'a b'", "a b" },
    { "\"\"", NULL },                           /* empty: unset */
    { "\"a\\nb\"", "a\nb" },
    { "\"a\\r\\t\\b\\ab\"", "a\r\t\b\ab" },
    { "\"\\x41\\x62\"", "Ab" },
    { "\"\\xff\"", "\xff" },
    { "\"\\x4\"", "x4" },                       /* not two hex digits: \x is x */
    { "\"\\xZZ\"", "xZZ" },
    { "\"\\q\\\\\\\"\"", "q\\\"" },
    { "'it\\'s'", "it's" },
    { "'a\\nb'", "a\\nb" },                     /* single quotes: no escapes */
    { "'a\\\\b'", "a\\\\b" },
    { "'a\"b'", "a\"b" },
    { "\"a'b\"", "a'b" },
    { "a\"b c\"", "ab c" },                     /* a quote opens mid-word */
    { "a'b c'", "ab c" },
    { "\"#not a comment\"", "#not a comment" },
    { "a\\nb", "a\\nb" },                       /* unquoted: no escapes */
    { "\t\"x\"\t", "x" },
};

START_TEST(test_quoting)
{
    char line[128];
    struct config c;

    snprintf(line, sizeof line, "requirepass %s\n", quote_vectors[_i].args);
    ck_assert_msg(load_text(&c, line) == 0, "%s: %s", line, err);
    assert_str_eq_null(c.requirepass, quote_vectors[_i].value);
    config_free(&c);
}
END_TEST

/* The directive name itself may be quoted, and any word of a list. */
START_TEST(test_quoted_words)
{
    struct config c;

    ck_assert_msg(load_text(&c, "\"cluster\" 'a:1' \"b:2\" c:3\n") == 0, "%s", err);
    ck_assert_int_eq(c.ncluster, 3);
    ck_assert_str_eq(c.cluster[0], "a:1");
    ck_assert_str_eq(c.cluster[1], "b:2");
    ck_assert_str_eq(c.cluster[2], "c:3");
    config_free(&c);
}
END_TEST

/* ---- errors: "FILE:LINE: what is wrong", %s stands for the file ---- */

static const struct { const char *text; const char *message; } error_vectors[] = {
    { "# 1\n# 2\n# 3\n# 4\n# 5\n# 6\n# 7\n# 8\n# 9\n# 10\n# 11\nlisen 127.0.0.1:1\n",
      "%s:12: unknown directive 'lisen'" },
    { "listen 127.0.0.1:1\n\nthreads 65\n",
      "%s:3: 'threads' must be an integer between 1 and 64" },
    { "threads four\n", "%s:1: 'threads' must be an integer between 1 and 64" },
    { "threads\n", "%s:1: wrong number of arguments for 'threads' (expected 1, got 0)" },
    { "threads 1 2\n", "%s:1: wrong number of arguments for 'threads' (expected 1, got 2)" },
    { "cluster\n",
      "%s:1: wrong number of arguments for 'cluster' (expected at least 1, got 0)" },
    { "cluster a:1 b\n",
      "%s:1: 'cluster' wants host:port with a port from 1 to 65535, not 'b'" },
    { "listen 127.0.0.1\n",
      "%s:1: 'listen' wants host:port with a port from 1 to 65535, not '127.0.0.1'" },
    { "listen a:1 b:2\n", "%s:1: wrong number of arguments for 'listen' (expected 1, got 2)" },
    { "address-map a:1\n",
      "%s:1: wrong number of arguments for 'address-map' (expected FROM TO pairs, got 1)" },
    { "address-map a:1 b:2 c:3\n",
      "%s:1: wrong number of arguments for 'address-map' (expected FROM TO pairs, got 3)" },
    { "address-map a:1 b:0\n",
      "%s:1: 'address-map' wants host:port with a port from 1 to 65535, not 'b:0'" },
    { "requirepass\n",
      "%s:1: wrong number of arguments for 'requirepass' (expected 1, got 0)" },
    { "tls-auth-clients maybe\n", "%s:1: 'tls-auth-clients' must be yes, no or optional" },
    { "tls-listen 6390\n",
      "%s:1: 'tls-listen' wants host:port with a port from 1 to 65535, not '6390'" },
    { "cluster-tls on\n", "%s:1: 'cluster-tls' must be yes or no" },
    { "user bob\n", "%s:1: wrong number of arguments for 'user' (expected at least 2, got 1)" },
    { "user bob pw +nosuchcmd\n", "%s:1: unknown command 'nosuchcmd' in ACL rule" },
    { "user bob pw +@nosuchcat\n", "%s:1: unknown ACL category 'nosuchcat' (see ACL CAT)" },
    { "user alice on >s3cret +get\n", "%s:1: user 'alice': the word after the name is its "
      "password (or nopass), and this one reads as an ACL rule: write user NAME PASSWORD "
      "RULE..., or put Redis's form (user NAME RULE...) in an aclfile" },
    { "user bob pw <nosuch\n", "%s:1: Error in ACL rule '<(a password)': The password you are "
      "trying to remove from the user does not exist" },
    { "user bob pw '(~\"*\"' '+get)'\n", "%s:1: Error in ACL rule '(~\"*\" +get)': a selector's "
      "rules may not hold quotes or backslashes" },
    { "user bob pw %X~x\n", "%s:1: syntax error in ACL key rule '%%X~x' (expected ~pattern, "
      "%%R~pattern, %%W~pattern or %%RW~pattern)" },
    { "user bob pw allkeys ~x\n", "%s:1: Error in ACL rule '~x': Adding a pattern after the * "
      "pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try "
      "'resetkeys' to start with an empty list of patterns" },
    { "user bob pw\nuser bob pw2\n", "%s:2: user 'bob' is defined twice" },
    { "requirepass a b\n",
      "%s:1: wrong number of arguments for 'requirepass' (expected 1, got 2)" },
    { "cluster-user a b\n",
      "%s:1: wrong number of arguments for 'cluster-user' (expected 1, got 2)" },
    { "cluster-password a b\n",
      "%s:1: wrong number of arguments for 'cluster-password' (expected 1, got 2)" },
    { "max-clients 0\n", "%s:1: 'max-clients' must be an integer between 1 and 1000000" },
    { "client-query-buffer-limit 1kb\n",
      "%s:1: 'client-query-buffer-limit' must be a memory size (like 512mb) of at least 1mb" },
    { "client-backlog-limit -1\n",
      "%s:1: 'client-backlog-limit' must be a memory size (like 512mb) of at least 0" },
    { "maxmemory-clients 10%\n",
      "%s:1: 'maxmemory-clients' must be a memory size (like 128mb), not a percentage: the "
      "proxy has no maxmemory" },
    { "maxmemory-clients lots\n",
      "%s:1: 'maxmemory-clients' must be a memory size (like 512mb) of at least 0" },
    { "proto-max-bulk-len lots\n",
      "%s:1: 'proto-max-bulk-len' must be a memory size (like 512mb) of at least 1mb" },
    { "client-output-buffer-limit 256mb 64mb\n",
      "%s:1: wrong number of arguments for 'client-output-buffer-limit' (expected 3, got 2)" },
    { "client-output-buffer-limit normal 256mb 64mb 60\n",
      "%s:1: wrong number of arguments for 'client-output-buffer-limit' (expected 3, got 4)" },
    { "client-output-buffer-limit 256mb x 60\n",
      "%s:1: 'client-output-buffer-limit' limits must be memory sizes (like 256mb, 0 for none)" },
    { "client-output-buffer-limit 256mb 64mb 1m\n",
      "%s:1: 'client-output-buffer-limit' soft seconds must be an integer between 0 and 86400" },
    { "node-connect-timeout-ms 0\n",
      "%s:1: 'node-connect-timeout-ms' must be an integer between 1 and 3600000" },
    { "node-timeout-ms 1s\n",
      "%s:1: 'node-timeout-ms' must be an integer between 1 and 3600000" },
    { "topology-refresh-ms -5\n",
      "%s:1: 'topology-refresh-ms' must be an integer between 0 and 86400000" },
    { "max-redirects 1000\n", "%s:1: 'max-redirects' must be an integer between 0 and 100" },
    { "retry-attempts many\n", "%s:1: 'retry-attempts' must be an integer between 0 and 1000" },
    { "retry-base-ms 0\n", "%s:1: 'retry-base-ms' must be an integer between 1 and 60000" },
    { "retry-max-ms 0\n", "%s:1: 'retry-max-ms' must be an integer between 1 and 600000" },
    { "enable-dangerous-commands 1\n", "%s:1: 'enable-dangerous-commands' must be yes or no" },
    { "log-level info\n",
      "%s:1: 'log-level' must be one of debug, verbose, notice, warning" },
    { "log-file a b\n", "%s:1: wrong number of arguments for 'log-file' (expected 1, got 2)" },
    { "log-file /nonexistent-dir/tagproxy.log\n",
      "%s:1: cannot open log file '/nonexistent-dir/tagproxy.log': No such file or directory" },
    { "requirepass \"abc\n", "%s:1: unbalanced quotes" },
    { "requirepass 'abc\n", "%s:1: unbalanced quotes" },
    { "requirepass '\\\\'\n", "%s:1: unbalanced quotes" },   /* \' is no closing quote */
    { "requirepass \"abc\\\"\n", "%s:1: unbalanced quotes" },
    { "requirepass \"ab\"c\n", "%s:1: a closing quote must be followed by a space" },
    { "requirepass 'ab'c\n", "%s:1: a closing quote must be followed by a space" },
    { "requirepass \"a\\x00b\"\n", "%s:1: an argument contains a NUL byte" },
    { "threads 2\nthreads 3\nbogus\nthreads 4\n", "%s:3: unknown directive 'bogus'" },
    { "layout-prefix\n",
      "%s:1: wrong number of arguments for 'layout-prefix' (expected at least 1, got 0)" },
    { "layout-prefix bot\nlayout-prefix {bot}\n",
      "%s:2: layout-prefix \"{bot}\": a prefix may not contain { or } (it would break the hash tags)" },
    { "layout-prefix bo}t\n",
      "%s:1: layout-prefix \"bo}t\": a prefix may not contain { or } (it would break the hash tags)" },
    { "layout-prefix a b:c\n",
      "%s:1: layout-prefix \"b:c\": a prefix is one segment: it may not contain :" },
    { "layout-prefix \"\"\n", "%s:1: layout-prefix \"\": a prefix may not be empty" },
    { "layout-rules\n",
      "%s:1: wrong number of arguments for 'layout-rules' (expected at least 1, got 0)" },
    { "layout-rules a.rules bot b:c\n",
      "%s:1: layout-prefix \"b:c\": a prefix is one segment: it may not contain :" },
    { "layout-rules \"\" bot\n", "%s:1: 'layout-rules' needs a file before its prefixes" },
    { "layout-allow-legacy-data maybe\n", "%s:1: 'layout-allow-legacy-data' must be yes or no" },
};

START_TEST(test_errors)
{
    char expected[1024];
    struct config c;
    const char *path = write_file("e.conf", error_vectors[_i].text);

    config_defaults(&c);
    c.threads = 42;
    ck_assert_int_eq(config_load(&c, path, NULL, 0, NULL, err, sizeof err), -1);
    snprintf(expected, sizeof expected, error_vectors[_i].message, path);
    ck_assert_str_eq(err, expected);
    ck_assert_int_eq(c.threads, 42);    /* untouched */
}
END_TEST

START_TEST(test_error_nul_in_line)
{
    static const char text[] = "threads 2\nrequirepass a\0b\n";
    char expected[1024];
    struct config c;
    const char *path = write_file_len("nul.conf", text, sizeof text - 1);

    ck_assert_int_eq(config_load(&c, path, NULL, 0, NULL, err, sizeof err), -1);
    snprintf(expected, sizeof expected, "%s:2: the line contains a NUL byte", path);
    ck_assert_str_eq(err, expected);
}
END_TEST

START_TEST(test_error_unreadable_file)
{
    char path[512], expected[1024];
    struct config c;

    snprintf(path, sizeof path, "%s/missing.conf", tmpdir);
    ck_assert_int_eq(config_load(&c, path, NULL, 0, NULL, err, sizeof err), -1);
    snprintf(expected, sizeof expected,
             "%s: cannot open config file: No such file or directory", path);
    ck_assert_str_eq(err, expected);

    ck_assert_int_eq(config_load(&c, tmpdir, NULL, 0, NULL, err, sizeof err), -1);
    snprintf(expected, sizeof expected, "%s: cannot read config file: Is a directory", tmpdir);
    ck_assert_str_eq(err, expected);
}
END_TEST

/* script-cache-max-bytes; script-map SHA1 PATH reads PATH at load, keeps
 * the SHA in lower case, repeats, and names FILE:LINE when it cannot. */
START_TEST(test_script_directives)
{
    char text[2048], expected[1024];
    struct config c;
    const char *lua = write_file("aware.lua", "return redis.call('INCR', KEYS[1])");
    char aware[512];

    snprintf(aware, sizeof aware, "%s", lua);
    ck_assert_int_eq(load_text(&c, "listen 127.0.0.1:1\n"), 0);
    ck_assert_int_eq(c.script_cache_max_bytes, 16 * MB);
    ck_assert_int_eq(c.nscript_map, 0);
    config_free(&c);

    snprintf(text, sizeof text,
             "script-cache-max-bytes 0\n"
             "script-map 0123456789ABCDEF0123456789abcdef01234567 %s\n"
             "script-map ffffffffffffffffffffffffffffffffffffffff \"%s\"\n", aware, aware);
    ck_assert_msg(load_text(&c, text) == 0, "%s", err);
    ck_assert_int_eq(c.script_cache_max_bytes, 0);
    ck_assert_int_eq(c.nscript_map, 2);
    ck_assert_str_eq(c.script_map[0].sha, "0123456789abcdef0123456789abcdef01234567");
    ck_assert_str_eq(c.script_map[0].path, aware);
    ck_assert_uint_eq(c.script_map[0].len, strlen("return redis.call('INCR', KEYS[1])"));
    ck_assert_int_eq(memcmp(c.script_map[0].body, "return redis.call('INCR', KEYS[1])",
                            c.script_map[0].len), 0);
    ck_assert_str_eq(c.script_map[1].sha, "ffffffffffffffffffffffffffffffffffffffff");
    config_free(&c);

    ck_assert_int_eq(load_text(&c, "\nscript-map 0123 /x.lua\n"), -1);
    snprintf(expected, sizeof expected, "%s/t.conf:2: 'script-map' wants the SHA1 of a script "
             "(40 hex digits), not '0123'", tmpdir);
    ck_assert_str_eq(err, expected);
    ck_assert_int_eq(load_text(&c, "script-map ffffffffffffffffffffffffffffffffffffffff "
                                   "/nonexistent/x.lua\n"), -1);
    snprintf(expected, sizeof expected, "%s/t.conf:1: 'script-map' cannot read "
             "'/nonexistent/x.lua': No such file or directory", tmpdir);
    ck_assert_str_eq(err, expected);
    write_file("empty.lua", "");
    snprintf(text, sizeof text, "script-map ffffffffffffffffffffffffffffffffffffffff %s/empty.lua\n",
             tmpdir);
    ck_assert_int_eq(load_text(&c, text), -1);
    ck_assert_msg(strstr(err, "t.conf:1: 'script-map' cannot read") && strstr(err, "the file is empty"),
                  "%s", err);
    ck_assert_int_eq(load_text(&c, "script-map ffffffffffffffffffffffffffffffffffffffff\n"), -1);
    ck_assert_msg(strstr(err, "wrong number of arguments for 'script-map'"), "%s", err);
    ck_assert_int_eq(load_text(&c, "script-cache-max-bytes lots\n"), -1);
    ck_assert_msg(strstr(err, "'script-cache-max-bytes' must be a memory size"), "%s", err);
}
END_TEST

/* A failed load leaves a loaded config exactly as it was (nothing half-applied). */
START_TEST(test_error_applies_nothing)
{
    struct config c, before;
    char *argv[] = { "--threads", "9", "--max-clients", "0" };

    ck_assert_msg(load_text(&c, "cluster a:1 b:2\nthreads 3\nrequirepass x\n") == 0, "%s", err);
    memcpy(&before, &c, sizeof c);
    ck_assert_int_eq(load_text(&c, "cluster c:3\nthreads 5\nrequirepass y\nthreads 0\n"), -1);
    ck_assert_int_eq(config_load(&c, NULL, NULL, 4, argv, err, sizeof err), -1);
    ck_assert_str_eq(err, "argv --max-clients: 'max-clients' must be an integer between 1 and 1000000");
    ck_assert_int_eq(memcmp(&c, &before, sizeof c), 0);
    ck_assert_str_eq(c.cluster[1], "b:2");
    ck_assert_str_eq(c.requirepass, "x");
    config_free(&c);
}
END_TEST

/* ---- environment ---- */

START_TEST(test_env_overrides_file)
{
    char *envp[] = {
        "PATH=/usr/bin",
        "TAGPROXY_THREADS=8",
        "TAGPROXY_CLUSTER=a:1   \"b:2\"",
        "TAGPROXY_CLIENT_OUTPUT_BUFFER_LIMIT=1mb 2mb 3",
        "TAGPROXY_ADDRESS_MAP=x:1 y:1 x:2 y:2",
        "TAGPROXY_REQUIREPASS=",
        "TAGPROXY_LOG_LEVEL=verbose",
        "TAGPROXY_PORT=tcp://10.0.0.1:6380",        /* Kubernetes' own: ignored */
        "TAGPROXY_SERVICE_HOST=10.0.0.1",
        "tagproxy_max_clients=5",                   /* not ours: ignored */
        "TAGPROXY_MAX_CLIENTSX=5",
        NULL,
    };
    struct config c;
    const char *path = write_file("env.conf",
        "threads 2\ncluster f:1\ncluster f:2\naddress-map p:1 q:1\nrequirepass filepass\n"
        "max-clients 77\n");

    ck_assert_msg(config_load(&c, path, envp, 0, NULL, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(c.threads, 8);
    ck_assert_int_eq(c.ncluster, 2);                /* replaced, not appended */
    ck_assert_str_eq(c.cluster[0], "a:1");
    ck_assert_str_eq(c.cluster[1], "b:2");
    ck_assert_int_eq(c.client_output_hard_limit, MB);
    ck_assert_int_eq(c.client_output_soft_limit, 2 * MB);
    ck_assert_int_eq(c.client_output_soft_seconds, 3);
    ck_assert_int_eq(c.naddress_map, 2);
    ck_assert_str_eq(c.address_map[0].from, "x:1");
    ck_assert_str_eq(c.address_map[1].to, "y:2");
    ck_assert_ptr_null(c.requirepass);              /* NAME= unsets */
    ck_assert_int_eq(c.log_level, LOG_VERBOSE);
    ck_assert_int_eq(c.max_clients, 77);
    config_free(&c);
}
END_TEST

static const struct { const char *env; const char *message; } env_error_vectors[] = {
    { "TAGPROXY_THREADS=0", "env TAGPROXY_THREADS: 'threads' must be an integer between 1 and 64" },
    { "TAGPROXY_THREADS=", "env TAGPROXY_THREADS: 'threads' must be an integer between 1 and 64" },
    { "TAGPROXY_THREADS=1 2",
      "env TAGPROXY_THREADS: wrong number of arguments for 'threads' (expected 1, got 2)" },
    { "TAGPROXY_CLUSTER=a:1 b",
      "env TAGPROXY_CLUSTER: 'cluster' wants host:port with a port from 1 to 65535, not 'b'" },
    { "TAGPROXY_REQUIREPASS=\"open", "env TAGPROXY_REQUIREPASS: unbalanced quotes" },
    { "TAGPROXY_LOG_FILE=/nonexistent-dir/x.log",
      "env TAGPROXY_LOG_FILE: cannot open log file '/nonexistent-dir/x.log': "
      "No such file or directory" },
    { "TAGPROXY_ENABLE_DANGEROUS_COMMANDS=true",
      "env TAGPROXY_ENABLE_DANGEROUS_COMMANDS: 'enable-dangerous-commands' must be yes or no" },
};

START_TEST(test_env_errors)
{
    char *envp[] = { (char *)env_error_vectors[_i].env, NULL };
    struct config c;

    ck_assert_int_eq(config_load(&c, NULL, envp, 0, NULL, err, sizeof err), -1);
    ck_assert_str_eq(err, env_error_vectors[_i].message);
}
END_TEST

/* ---- command line ---- */

START_TEST(test_argv_overrides_env_and_file)
{
    char *envp[] = { "TAGPROXY_THREADS=8", "TAGPROXY_CLUSTER=e:1 e:2",
                     "TAGPROXY_LOG_LEVEL=debug", NULL };
    char *argv[] = {
        "--threads", "16",
        "--cluster", "c:1",
        "--requirepass", "--looks-like-an-option",  /* first word: always a value */
        "--CLUSTER", "c:2", "c:3",                  /* repeats append within argv */
        "--cluster-password", "a b",                /* one word, taken literally */
        "--client-output-buffer-limit", "0", "0", "0",
        "--address-map", "m:1", "n:1",
        "--log-file", "",
    };
    struct config c;
    const char *path = write_file("argv.conf",
        "threads 2\ncluster f:1\naddress-map p:1 q:1\naddress-map p:2 q:2\n"
        "max-redirects 7\nlog-file /nonexistent-dir/never-opened.log\n");

    ck_assert_msg(config_load(&c, path, envp, sizeof argv / sizeof argv[0], argv,
                              err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(c.threads, 16);
    ck_assert_int_eq(c.ncluster, 3);
    ck_assert_str_eq(c.cluster[0], "c:1");
    ck_assert_str_eq(c.cluster[1], "c:2");
    ck_assert_str_eq(c.cluster[2], "c:3");
    ck_assert_str_eq(c.requirepass, "--looks-like-an-option");
    ck_assert_str_eq(c.cluster_password, "a b");
    ck_assert_int_eq(c.client_output_hard_limit, 0);
    ck_assert_int_eq(c.client_output_soft_limit, 0);
    ck_assert_int_eq(c.client_output_soft_seconds, 0);
    ck_assert_int_eq(c.naddress_map, 1);
    ck_assert_str_eq(c.address_map[0].from, "m:1");
    ck_assert_int_eq(c.max_redirects, 7);           /* file, untouched by env and argv */
    ck_assert_int_eq(c.log_level, LOG_DEBUG);       /* env, untouched by argv */
    ck_assert_ptr_null(c.log_file);                 /* the file's is never opened */
    config_free(&c);
}
END_TEST

/* An environment list survives when the command line does not give one. */
START_TEST(test_env_list_kept_without_argv)
{
    char *envp[] = { "TAGPROXY_CLUSTER=e:1", NULL };
    char *argv[] = { "--threads", "2" };
    struct config c;

    ck_assert_msg(config_load(&c, write_file("k.conf", "cluster f:1\ncluster f:2\n"),
                              envp, 2, argv, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(c.ncluster, 1);
    ck_assert_str_eq(c.cluster[0], "e:1");
    config_free(&c);
}
END_TEST

static const struct { int argc; char *argv[3]; const char *message; } argv_error_vectors[] = {
    { 2, { "--lisen", "x:1" }, "argv --lisen: unknown directive 'lisen'" },
    { 1, { "--threads" },
      "argv --threads: wrong number of arguments for 'threads' (expected 1, got 0)" },
    { 3, { "--threads", "1", "2" },
      "argv --threads: wrong number of arguments for 'threads' (expected 1, got 2)" },
    { 2, { "--threads", "--listen" },               /* first word: always a value */
      "argv --threads: 'threads' must be an integer between 1 and 64" },
    { 3, { "--threads", "--listen", "x:1" },
      "argv --threads: wrong number of arguments for 'threads' (expected 1, got 2)" },
    { 2, { "threads", "2" }, "argv 'threads': expected --name value" },
    { 2, { "--", "x" }, "argv --: unknown directive ''" },
    { 2, { "--log-level", "loud" },
      "argv --log-level: 'log-level' must be one of debug, verbose, notice, warning" },
    { 2, { "--log-file", "/nonexistent-dir/x.log" },
      "argv --log-file: cannot open log file '/nonexistent-dir/x.log': No such file or directory" },
};

START_TEST(test_argv_errors)
{
    struct config c;
    ck_assert_int_eq(config_load(&c, NULL, NULL, argv_error_vectors[_i].argc,
                                 (char **)argv_error_vectors[_i].argv, err, sizeof err), -1);
    ck_assert_str_eq(err, argv_error_vectors[_i].message);
}
END_TEST

START_TEST(test_load_main)
{
    struct config c;
    const char *path = write_file("main.conf", "threads 2\ncluster a:1\n");
    char *with_file[] = { "tagproxy", (char *)path, "--threads", "3", NULL };
    char *without_file[] = { "tagproxy", "--threads", "4", NULL };
    char *nothing[] = { "tagproxy", NULL };

    ck_assert_msg(config_load_main(&c, 4, with_file, NULL, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(c.threads, 3);
    ck_assert_int_eq(c.ncluster, 1);
    ck_assert_str_eq(c.path, path);
    config_free(&c);

    ck_assert_msg(config_load_main(&c, 3, without_file, NULL, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(c.threads, 4);
    ck_assert_ptr_null(c.path);
    config_free(&c);

    ck_assert_msg(config_load_main(&c, 1, nothing, NULL, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(c.threads, 1);
    config_free(&c);
}
END_TEST

/* ---- validation ---- */

START_TEST(test_validate)
{
    struct config c;

    ck_assert_int_eq(config_load(&c, NULL, NULL, 0, NULL, err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&c, err, sizeof err), -1);
    ck_assert_str_eq(err, "no cluster seed given (directive: cluster HOST:PORT)");
    config_free(&c);

    ck_assert_int_eq(load_text(&c, "cluster 127.0.0.1:7000\n"), 0);
    ck_assert_int_eq(config_validate(&c, err, sizeof err), 0);
    config_free(&c);

    ck_assert_int_eq(load_text(&c, "cluster 127.0.0.1:7000\nlayout-rules r.rules\n"), 0);
    ck_assert_int_eq(config_validate(&c, err, sizeof err), -1);
    ck_assert_str_eq(err, "layout-rules r.rules is set but no layout-prefix is given "
                          "(directive: layout-prefix P, one per prefix the rules serve; or "
                          "layout-rules FILE P ...)");
    config_free(&c);

    /* a file with prefixes of its own needs no layout-prefix, and one given
     * then serves the files that name none */
    ck_assert_int_eq(load_text(&c, "cluster 127.0.0.1:7000\nlayout-rules r.rules bot\n"), 0);
    ck_assert_int_eq(config_validate(&c, err, sizeof err), 0);
    config_free(&c);
    ck_assert_int_eq(load_text(&c, "cluster 127.0.0.1:7000\nlayout-rules r.rules bot\n"
                                   "layout-rules s.rules\nlayout-prefix x\n"), 0);
    ck_assert_int_eq(config_validate(&c, err, sizeof err), 0);
    config_free(&c);
    ck_assert_int_eq(load_text(&c, "cluster 127.0.0.1:7000\nlayout-rules r.rules bot\n"
                                   "layout-rules s.rules\n"), 0);
    ck_assert_int_eq(config_validate(&c, err, sizeof err), -1);
    ck_assert_str_eq(err, "layout-rules s.rules is set but no layout-prefix is given "
                          "(directive: layout-prefix P, one per prefix the rules serve; or "
                          "layout-rules FILE P ...)");
    config_free(&c);
    ck_assert_int_eq(load_text(&c, "cluster 127.0.0.1:7000\nlayout-rules r.rules bot\n"
                                   "layout-prefix x\n"), 0);
    ck_assert_int_eq(config_validate(&c, err, sizeof err), -1);
    ck_assert_str_eq(err, "layout-prefix is set but every layout-rules file names its own "
                          "prefixes, so none serves it");
    config_free(&c);

    ck_assert_int_eq(load_text(&c, "cluster 127.0.0.1:7000\nlayout-prefix bot\n"), 0);
    ck_assert_int_eq(config_validate(&c, err, sizeof err), -1);
    ck_assert_str_eq(err, "layout-prefix is set but no layout-rules file is given "
                          "(directive: layout-rules PATH)");
    config_free(&c);
}
END_TEST

/* layout-prefix appends within a source (several a line too); a later source
 * replaces the list; an empty layout-rules is unset. */
START_TEST(test_layout_directives)
{
    struct config c;
    char *env[] = { "TAGPROXY_LAYOUT_PREFIX=env1 env2", NULL };
    char *argv[] = { "--layout-prefix", "cli", "--layout-allow-legacy-data", "yes" };

    ck_assert_int_eq(load_text(&c, "cluster 127.0.0.1:7000\nlayout-rules conf/x.rules\n"
                                   "layout-prefix bot\nlayout-prefix a b\n"
                                   "layout-allow-legacy-data yes\n"), 0);
    ck_assert_int_eq(c.nlayout_rules, 1);
    ck_assert_str_eq(c.layout_rules[0].path, "conf/x.rules");
    ck_assert_int_eq(c.layout_rules[0].nprefix, 0);
    ck_assert_int_eq(c.nlayout_prefix, 3);
    ck_assert_str_eq(c.layout_prefix[0], "bot");
    ck_assert_str_eq(c.layout_prefix[1], "a");
    ck_assert_str_eq(c.layout_prefix[2], "b");
    ck_assert_int_eq(c.layout_allow_legacy_data, 1);
    ck_assert_int_eq(config_validate(&c, err, sizeof err), 0);
    config_free(&c);

    ck_assert_int_eq(config_load(&c, write_file("l.conf", "layout-prefix bot\nlayout-rules \"\"\n"),
                                 env, 0, NULL, err, sizeof err), 0);
    ck_assert_ptr_null(c.layout_rules);
    ck_assert_int_eq(c.nlayout_prefix, 2);
    ck_assert_str_eq(c.layout_prefix[0], "env1");
    ck_assert_str_eq(c.layout_prefix[1], "env2");
    config_free(&c);

    ck_assert_int_eq(config_load(&c, NULL, env, 4, argv, err, sizeof err), 0);
    ck_assert_int_eq(c.nlayout_prefix, 1);
    ck_assert_str_eq(c.layout_prefix[0], "cli");
    ck_assert_int_eq(c.layout_allow_legacy_data, 1);
    config_free(&c);
}
END_TEST

/* layout-rules FILE [P ...] appends a file a line within a source; a later
 * source replaces the list; in the environment ';' cuts the value into
 * lines (blank pieces are none); a file with no prefix serves
 * layout-prefix's. */
START_TEST(test_layout_rules_files)
{
    struct config c;
    char *env[] = { "TAGPROXY_LAYOUT_RULES=e1.rules a b; e2.rules ;", NULL };
    char *argv[] = { "--layout-rules", "c1.rules", "x", "--layout-rules", "c2.rules" };
    int n;

    ck_assert_int_eq(load_text(&c, "layout-rules f1.rules bot courier\nlayout-rules f2.rules\n"
                                   "layout-prefix p1 p2\n"), 0);
    ck_assert_int_eq(c.nlayout_rules, 2);
    ck_assert_str_eq(c.layout_rules[0].path, "f1.rules");
    const char *const *p = config_layout_prefixes(&c, 0, &n);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(p[0], "bot");
    ck_assert_str_eq(p[1], "courier");
    p = config_layout_prefixes(&c, 1, &n);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(p[0], "p1");
    ck_assert_str_eq(p[1], "p2");
    config_free(&c);

    ck_assert_int_eq(config_load(&c, write_file("r.conf", "layout-rules f1.rules bot\n"), env, 0,
                                 NULL, err, sizeof err), 0);
    ck_assert_int_eq(c.nlayout_rules, 2);
    ck_assert_str_eq(c.layout_rules[0].path, "e1.rules");
    ck_assert_int_eq(c.layout_rules[0].nprefix, 2);
    ck_assert_str_eq(c.layout_rules[0].prefix[1], "b");
    ck_assert_str_eq(c.layout_rules[1].path, "e2.rules");
    ck_assert_int_eq(c.layout_rules[1].nprefix, 0);
    config_free(&c);

    ck_assert_int_eq(config_load(&c, NULL, env, 5, argv, err, sizeof err), 0);
    ck_assert_int_eq(c.nlayout_rules, 2);
    ck_assert_str_eq(c.layout_rules[0].path, "c1.rules");
    ck_assert_str_eq(c.layout_rules[0].prefix[0], "x");
    ck_assert_str_eq(c.layout_rules[1].path, "c2.rules");
    config_free(&c);

    /* an empty value empties the list of the sources before */
    char *unset[] = { "TAGPROXY_LAYOUT_RULES=", NULL };
    ck_assert_int_eq(config_load(&c, write_file("r.conf", "layout-rules f1.rules bot\n"), unset,
                                 0, NULL, err, sizeof err), 0);
    ck_assert_ptr_null(c.layout_rules);
    ck_assert_int_eq(c.nlayout_rules, 0);
    config_free(&c);

    char *bad[] = { "TAGPROXY_LAYOUT_RULES=a.rules bot;b.rules {x}", NULL };
    ck_assert_int_eq(config_load(&c, NULL, bad, 0, NULL, err, sizeof err), -1);
    ck_assert_str_eq(err, "env TAGPROXY_LAYOUT_RULES: layout-prefix \"{x}\": a prefix may not "
                          "contain { or } (it would break the hash tags)");
}
END_TEST

/* ---- the shipped file ---- */

/* conf/tagproxy.conf gives exactly the defaults, with the `make run` seed. */
START_TEST(test_shipped_conf)
{
    struct config c, expected;
    char *seed[] = { "127.0.0.1:7000" };

    ck_assert_msg(config_load(&c, "conf/tagproxy.conf", NULL, 0, NULL, err, sizeof err) == 0,
                  "%s (run from the repository root)", err);
    config_defaults(&expected);
    expected.cluster = seed;
    expected.ncluster = 1;
    assert_config_eq(&c, &expected);
    ck_assert_str_eq(c.path, "conf/tagproxy.conf");
    ck_assert_int_eq(config_validate(&c, err, sizeof err), 0);
    config_free(&c);
}
END_TEST

/* Every directive config_load() accepts is in the shipped file, set or
 * commented out. */
START_TEST(test_shipped_conf_mentions_every_directive)
{
    char buf[65536], needle[80], needle2[80];
    FILE *f = fopen("conf/tagproxy.conf", "r");
    size_t n;

    ck_assert_ptr_nonnull(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    ck_assert_int_ge(n, 1000);
    for (size_t i = 0; config_directive_name(i); i++) {
        snprintf(needle, sizeof needle, "\n%s ", config_directive_name(i));
        snprintf(needle2, sizeof needle2, "\n# %s ", config_directive_name(i));
        ck_assert_msg(strstr(buf, needle) || strstr(buf, needle2), "%s missing",
                      config_directive_name(i));
    }
}
END_TEST

/* ---- --help and --dump-config (dump.h) ---- */

/* What fn writes for c, as a string the caller frees. */
static char *written(void (*fn)(const struct config *, FILE *), const struct config *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    fn(c, f);
    fclose(f);
    return text;
}

static void help_of(const struct config *c, FILE *out)
{
    (void)c;
    config_help(out);
}

/* --help lists every directive of the one table (directives.h), with its
 * arguments and help; each that is not one field has its own writer. */
START_TEST(test_dump_knows_every_directive)
{
    char *help = written(help_of, NULL), needle[96];
    const struct directive *d;
    size_t n = 0;
    for (; (d = directive_at(n)) != NULL; n++) {
        ck_assert_msg(d->args && d->help, "%s: no --help text", d->name);
        snprintf(needle, sizeof needle, "\n  --%s %s", d->name, d->args);
        ck_assert_msg(strstr(help, needle), "--help does not list %s", d->name);
        ck_assert_msg(d->kind != K_SPECIAL || d->write, "%s: no writer", d->name);
        ck_assert_str_eq(config_directive_name(n), d->name);
    }
    ck_assert_int_gt(n, 50);
    ck_assert_ptr_null(config_directive_name(n));
    free(help);
}
END_TEST

/* A config written back by config_dump loads to the same config, and
 * writes back the same text: the defaults, and a value for everything. */
static void expect_round_trip(const char *text)
{
    struct config a, b;
    ck_assert_msg(load_text(&a, text) == 0, "%s", err);
    char *dump = written(config_dump, &a);
    ck_assert_msg(config_load(&b, write_file("dump.conf", dump), NULL, 0, NULL, err,
                              sizeof err) == 0, "%s in:\n%s", err, dump);
    assert_config_eq(&a, &b);
    char *again = written(config_dump, &b);
    ck_assert_str_eq(dump, again);
    free(dump);
    free(again);
    config_free(&a);
    config_free(&b);
}

START_TEST(test_dump_round_trip)
{
    char text[4096];
    const char *script = write_file("legacy.lua", "return 1");
    expect_round_trip("");
    snprintf(text, sizeof text,
             "listen 0.0.0.0:7777\nadmin-listen off\ncluster 10.0.0.1:7000 [::1]:7002\n"
             "threads 4\nuser carl nopass allcommands\nuser dan nopass \"+client|id\" -@dangerous\n"
             "unixsocket \"/run/tag proxy/tp.sock\"\nunixsocketperm 770\n"
             "tls-listen 0.0.0.0:6390\ntls-cert-file /c.crt\ntls-key-file /c.key\n"
             "tls-ca-cert-file /ca.crt\ntls-auth-clients optional\ncluster-tls yes\n"
             "cluster-tls-ca-cert-file /cca.crt\ncluster-tls-cert-file /cc.crt\n"
             "cluster-tls-key-file /cc.key\ncluster-tls-server-name redis.internal\n"
             "cluster-tls-insecure yes\ncluster-user proxyuser\nmax-clients 123\n"
             "client-query-buffer-limit 2mb\nclient-backlog-limit 1000\n"
             "maxmemory-clients 128mb\nproto-max-bulk-len 1mb\n"
             "client-output-buffer-limit 0 32mb 7\n"
             "client-output-buffer-limit-pubsub 1gb 3kb 0\nnode-connect-timeout-ms 250\n"
             "node-timeout-ms 750\ntopology-refresh-ms 0\ncluster-wait-at-start no\n"
             "max-redirects 0\nretry-attempts 0\nretry-base-ms 1\nretry-max-ms 2000\n"
             "dedicated-connections-max 9\nround-pause-us 0\nio-uring no\nworker-nice 0\n"
             "address-map 172.18.0.2:6379 127.0.0.1:7000 172.18.0.3:6379 127.0.0.1:7001\n"
             "enable-dangerous-commands yes\n"
             "layout-rules conf/layouts/botmesh-v1.rules bot app\n"
             "layout-rules conf/layouts/courier-v1.rules\nlayout-prefix courier\n"
             "layout-allow-legacy-data yes\nscript-cache-max-bytes 0\n"
             "script-map 0123456789abcdef0123456789abcdef01234567 %s\nlog-level warning\n"
             "log-file %s/dump.log\nshutdown-timeout-ms 0\ndaemonize yes\n"
             "pidfile /run/tp.pid\n", script, tmpdir);
    expect_round_trip(text);
}
END_TEST

/* Passwords never show: requirepass, cluster-password, a user's. */
START_TEST(test_dump_redacts_secrets)
{
    struct config c;
    ck_assert_msg(load_text(&c, "requirepass s3cret-a\ncluster-password s3cret-b\n"
                                "user bob s3cret-c +get -@dangerous\n") == 0,
                  "%s", err);
    char *dump = written(config_dump, &c);
    ck_assert_msg(strstr(dump, "s3cret") == NULL, "a secret in:\n%s", dump);
    ck_assert_msg(strstr(dump, "\nrequirepass <redacted>\n") &&
                  strstr(dump, "\ncluster-password <redacted>\n") &&
                  strstr(dump, "\nuser bob <redacted> +get -@dangerous\n"),
                  "%s", dump);
    free(dump);
    config_free(&c);
}
END_TEST

/* What config_validate() asks of the TLS directives. */
static const struct { const char *text, *err; } tls_validate_vectors[] = {
    { "cluster a:1\ntls-listen 127.0.0.1:6390\n",
      "tls-listen needs tls-cert-file and tls-key-file" },
    { "cluster a:1\ntls-listen 127.0.0.1:6390\ntls-cert-file c\ntls-key-file k\n",
      "tls-auth-clients yes needs tls-ca-cert-file (the CA that signs client certificates); "
      "or set tls-auth-clients no" },
    { "cluster a:1\ntls-listen 127.0.0.1:6390\ntls-cert-file c\ntls-key-file k\n"
      "tls-auth-clients no\n", NULL },
    { "cluster a:1\ncluster-tls yes\ncluster-tls-cert-file c\n",
      "cluster-tls-cert-file and cluster-tls-key-file go together" },
    { "cluster a:1\ncluster-tls yes\n", NULL },
};

START_TEST(test_tls_validate)
{
    struct config c;
    ck_assert_msg(load_text(&c, tls_validate_vectors[_i].text) == 0, "%s", err);
    int rc = config_validate(&c, err, sizeof err);
    if (tls_validate_vectors[_i].err) {
        ck_assert_int_eq(rc, -1);
        ck_assert_str_eq(err, tls_validate_vectors[_i].err);
    } else {
        ck_assert_msg(rc == 0, "%s", err);
    }
    config_free(&c);
}
END_TEST

/* ---- runner ---- */

/* admin-listen: host:port or off, from each source; later wins. */
START_TEST(test_admin_listen)
{
    char *env_on[] = { "TAGPROXY_ADMIN_LISTEN=127.0.0.1:1", NULL };
    char *env_off[] = { "TAGPROXY_ADMIN_LISTEN=off", NULL };
    char *argv_off[] = { "--admin-listen", "OFF" };
    char *argv_on[] = { "--admin-listen", "[::1]:8380" };
    struct config c;

    ck_assert_msg(load_text(&c, "admin-listen off\n") == 0, "%s", err);
    ck_assert_ptr_null(c.admin_listen);
    config_free(&c);
    ck_assert_int_eq(config_load(&c, write_file("a.conf", "admin-listen off\n"), env_on, 0, NULL,
                                 err, sizeof err), 0);
    ck_assert_str_eq(c.admin_listen, "127.0.0.1:1");
    config_free(&c);
    ck_assert_int_eq(config_load(&c, NULL, env_on, 2, argv_off, err, sizeof err), 0);
    ck_assert_ptr_null(c.admin_listen);
    config_free(&c);
    ck_assert_int_eq(config_load(&c, NULL, env_off, 2, argv_on, err, sizeof err), 0);
    ck_assert_str_eq(c.admin_listen, "[::1]:8380");
    config_free(&c);
    ck_assert_int_eq(config_load(&c, NULL, env_off, 0, NULL, err, sizeof err), 0);
    ck_assert_ptr_null(c.admin_listen);
    config_free(&c);
    ck_assert_int_eq(load_text(&c, "admin-listen 8380\n"), -1);
    ck_assert_msg(strstr(err, ":1: 'admin-listen' wants host:port with a port from 1 to 65535, "
                              "or off, not '8380'") != NULL, "%s", err);
    ck_assert_int_eq(load_text(&c, "admin-listen\n"), -1);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *t = tcase_create("config");

    tcase_add_test(t, test_defaults);
    tcase_add_test(t, test_every_directive);
    tcase_add_loop_test(t, test_tls_validate, 0,
                        sizeof tls_validate_vectors / sizeof tls_validate_vectors[0]);
    tcase_add_test(t, test_admin_listen);
    tcase_add_test(t, test_file_layout);
    tcase_add_test(t, test_log_levels);
    tcase_add_loop_test(t, test_memory_units, 0, sizeof memory_vectors / sizeof memory_vectors[0]);
    tcase_add_loop_test(t, test_hostport, 0, sizeof hostport_vectors / sizeof hostport_vectors[0]);
    tcase_add_loop_test(t, test_int_ranges, 0, sizeof int_vectors / sizeof int_vectors[0]);
    tcase_add_loop_test(t, test_quoting, 0, sizeof quote_vectors / sizeof quote_vectors[0]);
    tcase_add_test(t, test_quoted_words);
    tcase_add_loop_test(t, test_errors, 0, sizeof error_vectors / sizeof error_vectors[0]);
    tcase_add_test(t, test_error_nul_in_line);
    tcase_add_test(t, test_error_unreadable_file);
    tcase_add_test(t, test_error_applies_nothing);
    tcase_add_test(t, test_script_directives);
    tcase_add_test(t, test_env_overrides_file);
    tcase_add_loop_test(t, test_env_errors, 0,
                        sizeof env_error_vectors / sizeof env_error_vectors[0]);
    tcase_add_test(t, test_argv_overrides_env_and_file);
    tcase_add_test(t, test_env_list_kept_without_argv);
    tcase_add_loop_test(t, test_argv_errors, 0,
                        sizeof argv_error_vectors / sizeof argv_error_vectors[0]);
    tcase_add_test(t, test_load_main);
    tcase_add_test(t, test_validate);
    tcase_add_test(t, test_layout_directives);
    tcase_add_test(t, test_layout_rules_files);
    tcase_add_test(t, test_shipped_conf);
    tcase_add_test(t, test_shipped_conf_mentions_every_directive);
    tcase_add_test(t, test_dump_knows_every_directive);
    tcase_add_test(t, test_dump_round_trip);
    tcase_add_test(t, test_dump_redacts_secrets);
    suite_add_tcase(s, t);
    return s;
}

/* Every file the tests wrote (whatever their names), then the folder. */
static void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    char path[512];

    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(tmpdir);
}

int main(void)
{
    SRunner *r;
    int failed;

    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_config.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    r = srunner_create(config_suite());
    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    remove_tmpdir();
    return failed ? 1 : 0;
}
