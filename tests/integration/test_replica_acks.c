/*
 * replica-acks N TIMEOUT-MS against the real cluster (3 masters, one replica
 * each), through a proxy of the test's own with `replica-acks 1 1500`:
 *
 * - a write is answered once the replica has it: right after each reply,
 *   the replica (read directly) holds the value;
 * - with the replica stopped (SIGSTOP), the write answers NOREPLICAS that
 *   says it ran on the master (the master has it), counted in INFO; a read
 *   of another client is answered while the write waits, also when the
 *   write came right behind a read of its own client;
 * - every kind of write waits: MULTI/EXEC, EVAL, MSET over two masters (its
 *   part on the stopped replica's master fails it), a pipeline of 64, and a
 *   RESP3 client's; a read-only script, a read-only MULTI block and reads
 *   do not;
 * - a client's replies keep its order across the reads and writes
 *   connections (GET, SET, GET, INCR, ... as one server answers them);
 * - a SIGHUP turns it off and on again.
 */
#include "harness.h"
#include "lifecycle.h"

/* the window in which other clients' reads must be answered before a held
 * write: wide, so that a slow machine does not close it first */
#define TIMEOUT_MS "1500"
#define GUARD_MS 20000
#define CONF_ON "threads 1\nreplica-acks 1 " TIMEOUT_MS "\n"

static struct h_proxy proxy;
static char conf[600];

static void proxy_up(void)
{
    lc_start(&proxy, CONF_ON, conf, sizeof conf, NULL);
}

static void proxy_down(void)
{
    h_proxy_stop(&proxy);
}

static long long info_field(const char *info, const char *field)
{
    char pat[128];
    H_FMT(pat, sizeof pat, "\n%s:", field);
    const char *at = strstr(info, pat);
    return at ? atoll(at + strlen(pat)) : -1;
}

static long long proxy_stat(const char *field)
{
    redisContext *c = h_connect_extra(&proxy);
    redisReply *r = h_cmd(c, "INFO");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    long long v = info_field(r->str, field);
    ck_assert_msg(v >= 0, "no %s in the proxy's INFO", field);
    freeReplyObject(r);
    redisFree(c);
    return v;
}

/* The reply of the raw connection fd: whole, or fail the test. */
static void raw_reply(int fd, char *buf, size_t size)
{
    size_t n = h_raw_recv(fd, buf, size, "\r\n", 5000, NULL);
    ck_assert_msg(n > 0 && h_resp_complete(buf, n) == n, "no whole reply: '%s'",
                  h_esc_str(buf));
}

START_TEST(test_write_answered_once_the_replica_has_it)
{
    struct h_topo t;
    char key[128], val[32];
    h_topo_load(&t);
    struct h_node rep = h_replica_of(&t.masters[0]);
    redisContext *p = h_connect_extra(&proxy), *rc = h_connect_node(&rep);
    redisReply *r = h_cmd(rc, "READONLY");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    h_key_on_master(&t, 0, h_prefix(), 0, key, sizeof key);
    for (int i = 0; i < 100; i++) {
        H_FMT(val, sizeof val, "v%d", i);
        r = h_cmd(p, "SET %s %s", key, val);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);
        r = h_cmd(rc, "GET %s", key);
        H_EXPECT_BULK(r, val);
        freeReplyObject(r);
    }
    ck_assert_int_ge(proxy_stat("replica_acks_waits"), 1);
    redisFree(rc);
    redisFree(p);
}
END_TEST

START_TEST(test_stopped_replica_write_error_reads_go_on)
{
    struct h_topo t;
    struct h_guard g = { 0, 0, -1 };
    char key[128], other[128], buf[1024];
    h_topo_load(&t);
    struct h_node rep = h_replica_of(&t.masters[0]);
    h_key_on_master(&t, 0, h_prefix(), 0, key, sizeof key);
    h_key_on_master(&t, 0, h_prefix(), 1, other, sizeof other);
    redisContext *p = h_connect_extra(&proxy);
    redisReply *r = h_cmd(p, "SET %s before", other);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    long long short_before = proxy_stat("replica_acks_short");

    h_freeze(&g, h_node_pid(rep.port), GUARD_MS);
    int writer = h_raw_connect(&proxy.addr);
    char cmd[300];
    H_FMT(cmd, sizeof cmd, "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$5\r\nafter\r\n", strlen(key), key);
    h_raw_sends(writer, cmd);
    /* another client's read of the same master is answered meanwhile */
    r = h_cmd(p, "GET %s", other);
    H_EXPECT_BULK(r, "before");
    freeReplyObject(r);
    size_t early = h_raw_recv(writer, buf, sizeof buf, "\r\n", 0, NULL);
    if (early == 0)
        raw_reply(writer, buf, sizeof buf);
    h_thaw(&g);
    ck_assert_msg(early == 0, "the write was answered before the read: '%s'", h_esc_str(buf));
    ck_assert_msg(strncmp(buf, "-NOREPLICAS The write ran on the master, but 0 of the 1", 55) == 0,
                  "the write got '%s'", h_esc_str(buf));
    close(writer);
    /* it ran */
    redisContext *m = h_connect_node(&t.masters[0]);
    r = h_cmd(m, "GET %s", key);
    H_EXPECT_BULK(r, "after");
    freeReplyObject(r);
    redisFree(m);
    ck_assert_int_eq(proxy_stat("replica_acks_short") - short_before, 1);
    redisFree(p);
}
END_TEST

/* A client's write right behind its read of another master waits for that
 * read, then goes on the writes connection: the WAIT never holds the
 * connection other clients' reads share. */
START_TEST(test_write_behind_a_read_keeps_wait_off_reads)
{
    struct h_topo t;
    struct h_guard g = { 0, 0, -1 };
    char k0[128], k0b[128], k1[128], buf[1024], cmd[600];
    h_topo_load(&t);
    struct h_node rep = h_replica_of(&t.masters[0]);
    h_key_on_master(&t, 0, h_prefix(), 5, k0, sizeof k0);
    h_key_on_master(&t, 0, h_prefix(), 6, k0b, sizeof k0b);
    h_key_on_master(&t, 1, h_prefix(), 5, k1, sizeof k1);
    redisContext *p = h_connect_extra(&proxy);
    redisReply *r = h_cmd(p, "SET %s before", k0b);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);

    h_freeze(&g, h_node_pid(rep.port), GUARD_MS);
    int writer = h_raw_connect(&proxy.addr);
    H_FMT(cmd, sizeof cmd, "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n"
          "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$5\r\nafter\r\n", strlen(k1), k1,
          strlen(k0), k0);
    h_raw_sends(writer, cmd);
    raw_reply(writer, buf, sizeof buf);         /* the GET's */
    int read_first = 1;
    for (int i = 0; i < 5; i++) {               /* other clients' reads of master 0 */
        r = h_cmd(p, "GET %s", k0b);
        H_EXPECT_BULK(r, "before");
        freeReplyObject(r);
        read_first &= h_raw_recv(writer, buf, sizeof buf, "\r\n", 0, NULL) == 0;
    }
    if (read_first)
        raw_reply(writer, buf, sizeof buf);
    h_thaw(&g);
    ck_assert_msg(read_first, "the write was answered before the others' reads: '%s'",
                  h_esc_str(buf));
    ck_assert_msg(strncmp(buf, "-NOREPLICAS The write ran", 25) == 0, "the write got '%s'",
                  h_esc_str(buf));
    close(writer);
    redisFree(p);
}
END_TEST

/* The replies to n commands, pipelined on a new connection to the proxy
 * (RESP3 when resp3: HELLO 3 first, its reply dropped), into buf. */
static void pipeline(const char *const *cmds, int n, int resp3, char *buf, size_t size)
{
    int fd = h_raw_connect(&proxy.addr);
    size_t have = 0, at = 0;
    int got = 0;
    if (resp3) {
        h_raw_sends(fd, "HELLO 3\r\n");
        ck_assert_uint_gt(h_raw_recv(fd, buf, size, "$7\r\nmodules\r\n*0\r\n", 5000, NULL), 0);
    }
    for (int i = 0; i < n; i++)
        h_raw_sends(fd, cmds[i]);
    while (got < n) {
        size_t one;
        while (got < n && (one = h_resp_complete(buf + at, have - at)) > 0) {
            at += one;
            got++;
        }
        if (got == n)
            break;
        size_t more = h_raw_recv(fd, buf + have, size - have, "\r\n", 5000, NULL);
        ck_assert_msg(more > 0, "reply %d of %d did not come: '%s'", got + 1, n,
                      h_esc_str(buf));
        have += more;
    }
    buf[have] = '\0';
    close(fd);
}

/* Each reply of buf (n of them) starts with prefix. */
static void expect_each(const char *buf, int n, const char *prefix)
{
    const char *at = buf;
    for (int i = 0; i < n; i++) {
        size_t one = h_resp_complete(at, strlen(at));
        ck_assert_msg(one > 0, "reply %d of %d missing in '%s'", i + 1, n, h_esc_str(buf));
        ck_assert_msg(strncmp(at, prefix, strlen(prefix)) == 0, "reply %d: '%.*s', not '%s'",
                      i + 1, (int)one, at, prefix);
        at += one;
    }
    ck_assert_msg(*at == '\0', "more replies than %d: '%s'", n, h_esc_str(at));
}

static char *cmd_of(const char *fmt, const char *a, const char *b)
{
    char *s = malloc(600);
    ck_assert_ptr_nonnull(s);
    snprintf(s, 600, fmt, a, b);
    return s;
}

START_TEST(test_every_kind_of_write_waits)
{
    struct h_topo t;
    struct h_guard g = { 0, 0, -1 };
    char k0[128], k1[128];
    static char buf[65536];
    h_topo_load(&t);
    struct h_node rep = h_replica_of(&t.masters[0]);
    h_key_on_master(&t, 0, h_prefix(), 0, k0, sizeof k0);
    h_key_on_master(&t, 1, h_prefix(), 0, k1, sizeof k1);
    char *multi[] = { cmd_of("MULTI\r\n", NULL, NULL), cmd_of("SET %s m\r\n", k0, NULL),
                      cmd_of("EXEC\r\n", NULL, NULL) };
    char *eval = cmd_of("EVAL \"return redis.call('set', KEYS[1], 'e')\" 1 %s\r\n", k0, NULL);
    char *eval_ro = cmd_of("EVAL_RO \"return redis.call('get', KEYS[1])\" 1 %s\r\n", k0, NULL);
    char *multi_ro[] = { cmd_of("MULTI\r\n", NULL, NULL), cmd_of("GET %s\r\n", k0, NULL),
                         cmd_of("EXEC\r\n", NULL, NULL) };
    char *mset = cmd_of("MSET %s a %s b\r\n", k0, k1);
    char *set = cmd_of("SET %s p\r\n", k0, NULL);
    char *get = cmd_of("GET %s\r\n", k0, NULL);
    const char *pipe64[64];
    for (int i = 0; i < 64; i++)
        pipe64[i] = set;
    long long short_before = proxy_stat("replica_acks_short");

    /* with the replica up, each answers as it would */
    pipeline((const char *const *)multi, 3, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n");
    pipeline((const char *const *)&eval, 1, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "+OK\r\n");
    pipeline((const char *const *)&mset, 1, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "+OK\r\n");
    pipeline(pipe64, 64, 0, buf, sizeof buf);
    expect_each(buf, 64, "+OK");

    h_freeze(&g, h_node_pid(rep.port), GUARD_MS);
    pipeline((const char *const *)multi, 3, 0, buf, sizeof buf);
    ck_assert_msg(strncmp(buf, "+OK\r\n+QUEUED\r\n-NOREPLICAS The write ran", 39) == 0,
                  "MULTI: '%s'", h_esc_str(buf));
    pipeline((const char *const *)&eval, 1, 0, buf, sizeof buf);
    expect_each(buf, 1, "-NOREPLICAS The write ran");
    pipeline((const char *const *)&mset, 1, 0, buf, sizeof buf);
    expect_each(buf, 1, "-NOREPLICAS The write ran");
    pipeline(pipe64, 64, 0, buf, sizeof buf);
    expect_each(buf, 64, "-NOREPLICAS The write ran");
    pipeline((const char *const *)&set, 1, 1, buf, sizeof buf);
    expect_each(buf, 1, "-NOREPLICAS The write ran");
    /* a read-only script and a read go on */
    pipeline((const char *const *)&eval_ro, 1, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "$1\r\np\r\n");
    pipeline((const char *const *)&get, 1, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "$1\r\np\r\n");
    pipeline((const char *const *)multi_ro, 3, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "+OK\r\n+QUEUED\r\n*1\r\n$1\r\np\r\n");
    h_thaw(&g);
    ck_assert_int_eq(proxy_stat("replica_acks_short") - short_before, 1 + 1 + 1 + 64 + 1);

    for (int i = 0; i < 3; i++) {
        free(multi[i]);
        free(multi_ro[i]);
    }
    free(eval);
    free(eval_ro);
    free(mset);
    free(set);
    free(get);
}
END_TEST

/* Reads and writes of one client, pipelined, as one server answers them:
 * its reads follow its writes onto the writes connection, and back. */
START_TEST(test_client_order_across_connections)
{
    struct h_topo t;
    char key[128], n[128];
    static char buf[65536], want[65536];
    const char *cmds[200];
    char *own[200];
    int ncmds = 0;
    size_t wlen = 0;
    h_topo_load(&t);
    h_key_on_master(&t, 0, h_prefix(), 2, key, sizeof key);
    h_key_on_master(&t, 0, h_prefix(), 3, n, sizeof n);
    redisContext *p = h_connect_extra(&proxy);
    redisReply *r = h_cmd(p, "DEL %s %s", key, n);
    freeReplyObject(r);
    redisFree(p);
    for (int i = 0; i < 40; i++) {
        char v[16];
        H_FMT(v, sizeof v, "v%d", i);
        own[ncmds] = cmd_of("GET %s\r\n", key, NULL);
        if (i == 0) {
            wlen += (size_t)snprintf(want + wlen, sizeof want - wlen, "$-1\r\n");
        } else {
            char prev[16];
            H_FMT(prev, sizeof prev, "v%d", i - 1);
            wlen += (size_t)snprintf(want + wlen, sizeof want - wlen, "$%zu\r\n%s\r\n",
                                     strlen(prev), prev);
        }
        cmds[ncmds] = own[ncmds];
        ncmds++;
        own[ncmds] = cmd_of("SET %s %s\r\n", key, v);
        cmds[ncmds] = own[ncmds];
        ncmds++;
        wlen += (size_t)snprintf(want + wlen, sizeof want - wlen, "+OK\r\n");
        own[ncmds] = cmd_of("INCR %s\r\n", n, NULL);
        cmds[ncmds] = own[ncmds];
        ncmds++;
        wlen += (size_t)snprintf(want + wlen, sizeof want - wlen, ":%d\r\n", i + 1);
    }
    pipeline(cmds, ncmds, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, want);
    for (int i = 0; i < ncmds; i++)
        free(own[i]);
}
END_TEST

/* The one write of a new connection: its reply, into buf. */
static void one_write(const char *key, char *buf, size_t size)
{
    char cmd[300];
    const char *cmds[1] = { cmd };
    H_FMT(cmd, sizeof cmd, "SET %s reload\r\n", key);
    pipeline(cmds, 1, 0, buf, size);
}

/* A SIGHUP turns it off (writes answer at once, replica or not) and on. */
START_TEST(test_reload_turns_it_off_and_on)
{
    struct h_topo t;
    struct h_guard g = { 0, 0, -1 };
    char key[128], buf[1024];
    h_topo_load(&t);
    struct h_node rep = h_replica_of(&t.masters[0]);
    h_key_on_master(&t, 0, h_prefix(), 4, key, sizeof key);
    h_freeze(&g, h_node_pid(rep.port), GUARD_MS);
    one_write(key, buf, sizeof buf);
    expect_each(buf, 1, "-NOREPLICAS The write ran");
    lc_write(conf, "threads 1\nreplica-acks 0\n");
    lc_signal(&proxy, SIGHUP, "config generation 1 in use by every worker", 1);
    one_write(key, buf, sizeof buf);
    ck_assert_str_eq(buf, "+OK\r\n");
    lc_write(conf, CONF_ON);
    lc_signal(&proxy, SIGHUP, "config generation 2 in use by every worker", 1);
    one_write(key, buf, sizeof buf);
    h_thaw(&g);
    expect_each(buf, 1, "-NOREPLICAS The write ran");
}
END_TEST

static Suite *replica_acks_suite(void)
{
    Suite *s = suite_create("replica_acks");
    TCase *tc = tcase_create("replica_acks");
    tcase_set_timeout(tc, 300);     /* (a replica that acknowledges slowly on a busy machine) */
    tcase_add_unchecked_fixture(tc, proxy_up, proxy_down);
    tcase_add_unchecked_fixture(tc, NULL, h_thaw_all_nodes);
    tcase_add_test(tc, test_write_answered_once_the_replica_has_it);
    tcase_add_test(tc, test_stopped_replica_write_error_reads_go_on);
    tcase_add_test(tc, test_write_behind_a_read_keeps_wait_off_reads);
    tcase_add_test(tc, test_every_kind_of_write_waits);
    tcase_add_test(tc, test_client_order_across_connections);
    tcase_add_test(tc, test_reload_turns_it_off_and_on);     /* last: it reloads */
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(replica_acks_suite());
}
