/*
 * TLS on both sides, and the cluster's login.
 *
 * Certificates are made here with the openssl CLI in the run's folder: a CA,
 * a server certificate for 127.0.0.1 and localhost, a client certificate.
 *
 * Clients: an extra proxy (on the suite's plain cluster) with tls-listen,
 * spoken to with `redis-cli --tls`: commands and a 1 MB value round trip;
 * tls-auth-clients yes refuses a client without a certificate, no accepts
 * it; the plain listen keeps working beside it; TLS 1.1 is refused
 * (openssl s_client).
 *
 * Cluster: a separate cluster of 3 masters started here with
 * scripts/cluster.sh --tls (nodes on --tls-port only) and --requirepass.
 * A proxy with cluster-tls, the CA and the password serves keys on every
 * master (checked on the nodes themselves with redis-cli --tls); the node's
 * name is checked (cluster-tls-server-name localhost passes, another name
 * stops the start with "hostname mismatch"); a wrong cluster-password stops
 * the start with exit 1 and a message saying the cluster refused the
 * credentials, never the password; no password says one is needed.
 */
#include "harness.h"

#define CLUSTER_PASS "tp-tls-cluster-secret"

static char certs[512];         /* ca.crt server.* client.* */
static char cdir[512];          /* the TLS cluster's folder */
static int cbase;               /* its first port */

/* ---------- helpers ---------- */

static void make_certs(void)
{
    char out[4096];
    H_FMT(certs, sizeof certs, "%s/tls-certs-%d", h_env("TAGPROXY_TEST_DIR"), (int)getpid());
    int rc = h_shell(out, sizeof out,
        "set -e; mkdir -p '%s'; cd '%s';"
        "openssl req -x509 -new -nodes -newkey rsa:2048 -keyout ca.key -out ca.crt -days 2"
        "  -subj '/CN=tagproxy test CA' 2>&1;"
        "mk() { openssl req -new -nodes -newkey rsa:2048 -keyout $1.key -out $1.csr"
        "  -subj \"/CN=$2\" 2>&1;"
        "  printf 'subjectAltName=%%s\\nextendedKeyUsage=serverAuth,clientAuth\\n' \"$3\" > $1.ext;"
        "  openssl x509 -req -in $1.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out $1.crt"
        "  -days 2 -extfile $1.ext 2>&1; };"
        "mk server localhost 'IP:127.0.0.1,DNS:localhost';"
        "mk client 'tagproxy test client' 'DNS:client'",
        certs, certs);
    ck_assert_msg(rc == 0, "openssl failed: %s", out);
}

static void start_tls_cluster(void)
{
    char extra[1200];
    make_certs();
    H_FMT(extra, sizeof extra, "--tls '%s' --requirepass '%s'", certs, CLUSTER_PASS);
    cbase = h_cluster_start(cdir, sizeof cdir, "tls-cluster", extra);
}

static void stop_tls_cluster(void)
{
    char out[4096];
    h_cluster_stop(cdir);
    if (certs[0])
        h_shell(out, sizeof out, "rm -rf '%s'", certs);
}

static char tls_port[16];

/* A proxy on the suite's cluster with tls-listen on a second free port. */
static void start_tls_proxy(struct h_proxy *p, const char *auth_clients)
{
    char seed[128], cert[600], key[600], ca[600];
    h_seed(seed, sizeof seed);
    H_FMT(cert, sizeof cert, "%s/server.crt", certs);
    H_FMT(key, sizeof key, "%s/server.key", certs);
    H_FMT(ca, sizeof ca, "%s/ca.crt", certs);
    char listen[64];
    h_place_named(p, "proxy-tls");
    snprintf(tls_port, sizeof tls_port, "%d", h_free_port());
    H_FMT(listen, sizeof listen, "127.0.0.1:%s", tls_port);
    const char *const args[] = { "--tls-listen", listen, "--tls-cert-file", cert,
                                 "--tls-key-file", key, "--tls-ca-cert-file", ca,
                                 "--tls-auth-clients", auth_clients, NULL };
    h_proxy_launch(p, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    h_spawn_wait(p, h_pings, 20000, "TLS proxy");
}

/* redis-cli --tls to the proxy's tls-listen; with_cert: the client's. */
static int tls_cli(char *out, size_t size, int with_cert, const char *cmd)
{
    return h_shell(out, size, "redis-cli -h 127.0.0.1 -p %s --tls --cacert '%s/ca.crt' %s%s%s%s%s %s 2>&1",
               tls_port, certs, with_cert ? "--cert '" : "", with_cert ? certs : "",
               with_cert ? "/client.crt' --key '" : "", with_cert ? certs : "",
               with_cert ? "/client.key'" : "", cmd);
}

/* The proxy exits with 1 before serving; its log. */
static void expect_start_fails(const char *const *args, char *log, size_t size)
{
    char seed[64];
    H_FMT(seed, sizeof seed, "127.0.0.1:%d", cbase);
    /* the start that refuses: by default the proxy waits for the cluster */
    setenv("TAGPROXY_CLUSTER_WAIT_AT_START", "no", 1);
    h_proxy_start_fails("proxy-tls-fail", seed, args, log, size);
    unsetenv("TAGPROXY_CLUSTER_WAIT_AT_START");
}

/* ---------- clients over TLS ---------- */

START_TEST(test_client_tls)
{
    struct h_proxy p;
    char out[4096], cmd[256];
    start_tls_proxy(&p, "yes");
    H_FMT(cmd, sizeof cmd, "SET {%s}:tls hello", h_prefix());
    ck_assert_msg(tls_cli(out, sizeof out, 1, cmd) == 0 && strcmp(out, "OK\n") == 0, "%s", out);
    H_FMT(cmd, sizeof cmd, "GET {%s}:tls", h_prefix());
    ck_assert_msg(tls_cli(out, sizeof out, 1, cmd) == 0 && strcmp(out, "hello\n") == 0, "%s", out);
    ck_assert_msg(tls_cli(out, sizeof out, 1, "PING") == 0 && strcmp(out, "PONG\n") == 0, "%s",
                  out);
    /* no client certificate: refused, nothing answered */
    int rc = tls_cli(out, sizeof out, 0, cmd);
    ck_assert_msg(rc != 0 && strstr(out, "hello") == NULL, "without a certificate: rc %d, %s",
                  rc, out);
    /* the plain listen still serves, the same data */
    redisContext *c = h_connect_extra(&p);
    redisReply *r = h_cmd(c, "GET {%s}:tls", h_prefix());
    H_EXPECT_BULK(r, "hello");
    freeReplyObject(r);
    redisFree(c);
    h_proxy_stop(&p);
}
END_TEST

/* A value far bigger than a TLS record and the read buffer, both ways. */
START_TEST(test_client_tls_big_value)
{
    struct h_proxy p;
    char out[4096], path[600], cmd[2048];
    start_tls_proxy(&p, "optional");
    H_FMT(path, sizeof path, "%s/big", certs);
    ck_assert_int_eq(h_shell(out, sizeof out, "head -c 750000 /dev/urandom | base64 -w0 > '%s'",
                         path), 0);
    H_FMT(cmd, sizeof cmd, "-x SET {%s}:big < '%s'", h_prefix(), path);
    ck_assert_msg(tls_cli(out, sizeof out, 1, cmd) == 0 && strcmp(out, "OK\n") == 0, "%s", out);
    /* redis-cli ends the value with a newline of its own */
    H_FMT(cmd, sizeof cmd, "GET {%s}:big | head -c -1 | cmp - '%s' && echo SAME", h_prefix(),
          path);
    tls_cli(out, sizeof out, 1, cmd);
    ck_assert_msg(strcmp(out, "SAME\n") == 0, "%s", out);
    h_proxy_stop(&p);
}
END_TEST

/* tls-auth-clients no: a client without a certificate is served. */
START_TEST(test_client_tls_no_auth)
{
    struct h_proxy p;
    char out[4096];
    start_tls_proxy(&p, "no");
    ck_assert_msg(tls_cli(out, sizeof out, 0, "PING") == 0 && strcmp(out, "PONG\n") == 0, "%s",
                  out);
    h_proxy_stop(&p);
}
END_TEST

/* TLS 1.2 is the oldest accepted: a TLS 1.1 hello gets the server's
 * "protocol version" alert (the client's own security level is lowered so
 * that it does offer 1.1), a TLS 1.2 one completes. */
START_TEST(test_client_tls_min_version)
{
    struct h_proxy p;
    char out[8192];
    start_tls_proxy(&p, "no");
    h_shell(out, sizeof out, "echo | timeout 10 openssl s_client -connect 127.0.0.1:%s -tls1_1 "
        "-cipher 'DEFAULT@SECLEVEL=0' 2>&1", tls_port);
    ck_assert_msg(strstr(out, "alert protocol version"), "TLS 1.1 not refused by the proxy: %s",
                  out);
    h_shell(out, sizeof out, "echo | timeout 10 openssl s_client -connect 127.0.0.1:%s -tls1_2 "
        "-CAfile '%s/ca.crt' 2>&1", tls_port, certs);
    ck_assert_msg(strstr(out, "Protocol  : TLSv1.2") && strstr(out, "Verify return code: 0 (ok)"),
                  "TLS 1.2 with the CA: %s", out);
    h_proxy_stop(&p);
}
END_TEST

/* ---------- the proxy to a TLS cluster ---------- */

static void start_cluster_proxy(struct h_proxy *p, const char *const *extra)
{
    char seed[64], ca[600];
    const char *args[32] = { "--cluster-tls", "yes", "--cluster-tls-ca-cert-file", ca,
                             "--cluster-password", CLUSTER_PASS };
    int n = 6;
    H_FMT(seed, sizeof seed, "127.0.0.1:%d", cbase);
    H_FMT(ca, sizeof ca, "%s/ca.crt", certs);
    for (int i = 0; extra && extra[i]; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    h_place_named(p, "proxy-tlscluster");
    h_proxy_launch(p, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    h_spawn_wait(p, h_pings, 20000, "proxy of the TLS cluster");
}

/* Keys on every master through the proxy; each read on its node itself. */
static void check_every_master(struct h_proxy *p)
{
    redisContext *c = h_connect_extra(p);
    int seen[3] = { 0 };
    char out[4096];
    for (int i = 0; i < 60 && !(seen[0] && seen[1] && seen[2]); i++) {
        char key[64];
        H_FMT(key, sizeof key, "%s:k%d", h_prefix(), i);
        H_OK(c, "SET %s v%d", key, i);
        /* which node has it: ask each one over TLS */
        for (int n = 0; n < 3; n++) {
            h_shell(out, sizeof out, "redis-cli -h 127.0.0.1 -p %d --tls --cacert '%s/ca.crt' "
                "-a '%s' --no-auth-warning GET %s 2>&1", cbase + n, certs, CLUSTER_PASS, key);
            char want[32];
            snprintf(want, sizeof want, "v%d\n", i);
            if (strcmp(out, want) == 0)
                seen[n] = 1;
        }
        redisReply *r = h_cmd(c, "GET %s", key);
        char want[32];
        snprintf(want, sizeof want, "v%d", i);
        H_EXPECT_BULK(r, want);
        freeReplyObject(r);
    }
    ck_assert_msg(seen[0] && seen[1] && seen[2], "not every master got a key: %d %d %d",
                  seen[0], seen[1], seen[2]);
    redisFree(c);
}

/* Bytes far past a TLS record both ways, and a deep pipeline whose replies
 * arrive many per record (what OpenSSL holds decrypted must be read too). */
static void check_big_and_pipelined(struct h_proxy *p)
{
    redisContext *c = h_connect_extra(p);
    size_t big = 3 * 1024 * 1024 + 17;
    char *v = malloc(big), key[64];
    for (size_t i = 0; i < big; i++)
        v[i] = (char)('a' + (i * 7919) % 26);
    H_FMT(key, sizeof key, "%s:big", h_prefix());
    redisReply *r = redisCommand(c, "SET %s %b", key, v, big);
    ck_assert_ptr_nonnull(r);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    r = h_cmd(c, "GET %s", key);
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    ck_assert_msg(r->len == big && memcmp(r->str, v, big) == 0, "big value differs (%zu bytes)",
                  (size_t)r->len);
    freeReplyObject(r);
    free(v);
    enum { N = 5000 };
    for (int i = 0; i < N; i++)
        redisAppendCommand(c, "INCR %s:n%d", h_prefix(), i % 50);
    for (int i = 0; i < N; i++) {
        r = h_get_reply(c);
        H_EXPECT_INT(r, i / 50 + 1);
        freeReplyObject(r);
    }
    redisFree(c);
}

/* A RESP3 client's commands go on node connections opened with HELLO 3
 * AUTH default <cluster-password>, over TLS: its reply comes in RESP3. */
static void check_resp3(struct h_proxy *p)
{
    char cmd[512], out[4096];
    int fd = h_raw_connect(&p->addr);
    int n = snprintf(cmd, sizeof cmd, "HELLO 3\r\nHSET %s:h3 f v\r\nHGETALL %s:h3\r\n"
                     "DEL %s:h3\r\nPING\r\n", h_prefix(), h_prefix(), h_prefix());
    h_raw_send(fd, cmd, (size_t)n);
    h_raw_recv(fd, out, sizeof out, "+PONG\r\n", 5000, NULL);
    const char *after = strstr(out, "*0\r\n");      /* HELLO's map ends with modules */
    ck_assert_msg(strncmp(out, "%7\r\n", 4) == 0 && after &&
                  strcmp(after + 4, ":1\r\n%1\r\n$1\r\nf\r\n$1\r\nv\r\n:1\r\n+PONG\r\n") == 0,
                  "RESP3 through a TLS cluster with a password: %s", h_esc_str(out));
    close(fd);
}

START_TEST(test_cluster_tls)
{
    struct h_proxy p;
    start_cluster_proxy(&p, NULL);
    check_every_master(&p);
    check_big_and_pipelined(&p);
    check_resp3(&p);
    h_proxy_stop(&p);
}
END_TEST

/* tagproxy migrate over rediss://: a legacy keyspace of a plain server
 * copied into the TLS cluster (the password and the CA given), then
 * inspected there; without the CA the node's certificate is refused. The
 * password is never printed. */
START_TEST(test_migrate_rediss)
{
    struct h_proxy src;
    char out[8192], p[64], want[128];
    H_FMT(p, sizeof p, "mt%ld%lld", (long)getpid(), h_now_ms() % 1000000);
    h_ref_start(&src, "redis-migrate-tls-source", NULL);
    redisContext *c = h_connect_node(&src.addr);
    for (int i = 0; i < 50; i++)
        H_OK(c, "SET %s:chat:c%d chat-%d", p, i, i);
    redisFree(c);
    int rc = h_tagproxy(out, sizeof out, "migrate --source redis://127.0.0.1:%d --target "
                        "rediss://:%s@127.0.0.1:%d --tls-ca-cert-file '%s/ca.crt' --prefix %s",
                        src.addr.port, CLUSTER_PASS, cbase, certs, p);
    ck_assert_msg(rc == 0 && strstr(out, "copied 50, skipped 0") && strstr(out, ": written"),
                  "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, CLUSTER_PASS) == NULL, "the password was printed: %s", out);
    rc = h_tagproxy(out, sizeof out, "migrate inspect --source rediss://:%s@127.0.0.1:%d "
                    "--tls-ca-cert-file '%s/ca.crt' --prefix %s", CLUSTER_PASS, cbase + 1, certs,
                    p);
    H_FMT(want, sizeof want, "\n%-28s %10d %10d", "chat", 0, 50);
    ck_assert_msg(rc == 0 && strstr(out, want) && strstr(out, "(a cluster: every master)"),
                  "exit %d: %s", rc, out);
    rc = h_tagproxy(out, sizeof out, "migrate inspect --source rediss://:%s@127.0.0.1:%d "
                    "--prefix %s", CLUSTER_PASS, cbase, p);
    ck_assert_msg(rc == 1 && strstr(out, "certificate") && !strstr(out, CLUSTER_PASS),
                  "exit %d: %s", rc, out);
    h_proxy_stop(&src);
}
END_TEST

START_TEST(test_cluster_tls_server_name)
{
    struct h_proxy p;
    char cert[600], key[600];
    H_FMT(cert, sizeof cert, "%s/client.crt", certs);
    H_FMT(key, sizeof key, "%s/client.key", certs);
    const char *const extra[] = { "--cluster-tls-server-name", "localhost",
                                  "--cluster-tls-cert-file", cert, "--cluster-tls-key-file", key,
                                  NULL };
    start_cluster_proxy(&p, extra);
    check_every_master(&p);
    h_proxy_stop(&p);
}
END_TEST

START_TEST(test_cluster_tls_wrong_name_fails_start)
{
    char ca[600], log[8192];
    H_FMT(ca, sizeof ca, "%s/ca.crt", certs);
    const char *const args[] = { "--cluster-tls", "yes", "--cluster-tls-ca-cert-file", ca,
                                 "--cluster-password", CLUSTER_PASS,
                                 "--cluster-tls-server-name", "not-this-node.example", NULL };
    expect_start_fails(args, log, sizeof log);
    ck_assert_msg(strstr(log, "hostname mismatch"), "log: %s", log);
}
END_TEST

/* Without the CA the node's certificate cannot be trusted: no start. */
START_TEST(test_cluster_tls_unknown_ca_fails_start)
{
    char log[8192];
    const char *const args[] = { "--cluster-tls", "yes", "--cluster-password", CLUSTER_PASS,
                                 NULL };
    expect_start_fails(args, log, sizeof log);
    ck_assert_msg(strstr(log, "certificate verify failed"), "log: %s", log);
}
END_TEST

START_TEST(test_wrong_cluster_password_fails_start)
{
    char ca[600], log[8192];
    H_FMT(ca, sizeof ca, "%s/ca.crt", certs);
    const char *const args[] = { "--cluster-tls", "yes", "--cluster-tls-ca-cert-file", ca,
                                 "--cluster-password", "tp-not-the-password", NULL };
    expect_start_fails(args, log, sizeof log);
    ck_assert_msg(strstr(log, "the cluster refused the proxy's credentials"), "log: %s", log);
    ck_assert_msg(strstr(log, "WRONGPASS"), "log: %s", log);
    ck_assert_msg(strstr(log, "tp-not-the-password") == NULL, "the password is logged: %s", log);
}
END_TEST

START_TEST(test_missing_cluster_password_fails_start)
{
    char ca[600], log[8192];
    H_FMT(ca, sizeof ca, "%s/ca.crt", certs);
    const char *const args[] = { "--cluster-tls", "yes", "--cluster-tls-ca-cert-file", ca, NULL };
    expect_start_fails(args, log, sizeof log);
    ck_assert_msg(strstr(log, "the cluster requires a password"), "log: %s", log);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tls");
    TCase *clients = tcase_create("clients");
    tcase_add_unchecked_fixture(clients, make_certs, stop_tls_cluster);
    tcase_set_timeout(clients, 60);
    tcase_add_test(clients, test_client_tls);
    tcase_add_test(clients, test_client_tls_big_value);
    tcase_add_test(clients, test_client_tls_no_auth);
    tcase_add_test(clients, test_client_tls_min_version);
    suite_add_tcase(s, clients);
    TCase *cluster = tcase_create("cluster");
    tcase_add_unchecked_fixture(cluster, start_tls_cluster, stop_tls_cluster);
    tcase_set_timeout(cluster, 60);
    tcase_add_test(cluster, test_cluster_tls);
    tcase_add_test(cluster, test_migrate_rediss);
    tcase_add_test(cluster, test_cluster_tls_server_name);
    tcase_add_test(cluster, test_cluster_tls_wrong_name_fails_start);
    tcase_add_test(cluster, test_cluster_tls_unknown_ca_fails_start);
    tcase_add_test(cluster, test_wrong_cluster_password_fails_start);
    tcase_add_test(cluster, test_missing_cluster_password_fails_start);
    suite_add_tcase(s, cluster);
    return h_run(s);
}
