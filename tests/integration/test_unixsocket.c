/*
 * unixsocket: clients on a Unix socket, against extra proxies (lifecycle.h):
 *  - the socket file has unixsocketperm's mode; over it, with two worker
 *    threads, keys on every master are written and read back (and seen on
 *    the masters), a pipeline of 2,000 commands is answered in order, and
 *    CLIENT INFO says what a redis-server 7.0 on a Unix socket says: addr
 *    and laddr PATH:0, flag U. A TCP client of the same proxy keeps flags=N.
 *  - a stale socket file at the path is replaced; one a running proxy
 *    accepts on is not (the second proxy exits 1, the first still serves);
 *    a regular file there stops the start (exit 1, the path named) and is
 *    left as it was; a path in a missing folder stops the start too.
 *  - SIGTERM removes the file at once, so a new client finds no socket,
 *    while a client already on it still gets its reply; exit 0.
 */
#include <sys/stat.h>
#include <sys/un.h>

#include "lifecycle.h"

enum { PIPELINE = 2000 };

static struct h_proxy proxy, ref;

static void teardown(void)
{
    h_proxy_stop(&proxy);
    h_proxy_stop(&ref);
}

/* DIR/unix-TAG-PID.sock: short enough for sun_path, unique per test. */
static void sock_path(const char *tag, char *buf, size_t size)
{
    H_FMT(buf, size, "%s/unix-%s-%ld.sock", h_env("TAGPROXY_TEST_DIR"), tag, (long)getpid());
    unlink(buf);
}

static redisContext *connect_unix(const char *path)
{
    struct timeval tv = { H_IO_TIMEOUT_S, 0 };
    redisContext *c = redisConnectUnixWithTimeout(path, tv);
    ck_assert_msg(c != NULL && !c->err, "connect %s: %s", path, c ? c->errstr : "out of memory");
    redisSetTimeout(c, tv);
    return c;
}

/* Start the extra proxy with --unixsocket path [--unixsocketperm perm]. */
static void start_unix_proxy(const char *path, const char *perm)
{
    const char *args[] = { "--threads", "2", "--unixsocket", path,
                           perm ? "--unixsocketperm" : NULL, perm, NULL };
    lc_start(&proxy, NULL, NULL, 0, args);
}

/* The value of field (like "addr=") in a CLIENT INFO line, into buf. */
static void info_field(const char *line, const char *field, char *buf, size_t size)
{
    const char *at = strstr(line, field);
    ck_assert_msg(at != NULL && (at == line || at[-1] == ' '), "no %s in '%s'", field, line);
    at += strlen(field);
    size_t n = strcspn(at, " \n");
    ck_assert_uint_lt(n, size);
    memcpy(buf, at, n);
    buf[n] = '\0';
}

static void client_info(redisContext *c, char *buf, size_t size)
{
    redisReply *r = h_cmd(c, "CLIENT INFO");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    H_FMT(buf, size, "%s", r->str);
    freeReplyObject(r);
}

/* A redis-server 7.0 listening on path only, as ref; waits until it answers. */
static void start_ref_on(const char *path)
{
    const char *argv[] = { "redis-server", "--port", "0", "--unixsocket", path,
                           "--save", "", "--appendonly", "no",
                           "--dir", h_env("TAGPROXY_TEST_DIR"), NULL };
    h_place_named(&ref, "unix-ref");
    h_spawn(&ref, argv, SIGTERM, 1);
    for (long long deadline = h_now_ms() + 20000;; h_sleep_ms(20)) {
        redisContext *c = redisConnectUnix(path);
        int ok = c && !c->err;
        redisFree(c);
        if (ok)
            return;
        ck_assert_msg(h_now_ms() < deadline, "redis-server on %s does not answer", path);
    }
}

START_TEST(unix_clients_are_served)
{
    char path[300], refpath[300], key[128], got[160], want[160], line[2048];
    struct h_topo topo;
    struct stat st;

    sock_path("serve", path, sizeof path);
    start_unix_proxy(path, "770");
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_msg(S_ISSOCK(st.st_mode), "%s is not a socket", path);
    ck_assert_int_eq(st.st_mode & 0777, 0770);

    redisContext *c = connect_unix(path);
    h_topo_load(&topo);
    for (int m = 0; m < topo.nmasters; m++) {       /* every master, checked on it */
        h_key_on_master(&topo, m, h_prefix(), 0, key, sizeof key);
        H_OK(c, "SET %s unix-%d", key, m);
        redisReply *r = h_cmd(c, "GET %s", key);
        H_FMT(want, sizeof want, "unix-%d", m);
        H_EXPECT_BULK(r, want);
        freeReplyObject(r);
        redisContext *node = h_connect_node(&topo.masters[m]);
        r = h_cmd(node, "GET %s", key);
        H_EXPECT_BULK(r, want);
        freeReplyObject(r);
        redisFree(node);
    }

    H_FMT(key, sizeof key, "%s:unix:counter", h_prefix());
    H_OK(c, "SET %s 0", key);
    for (int i = 0; i < PIPELINE; i++)
        redisAppendCommand(c, i % 2 ? "GET %s" : "INCR %s", key);
    for (int i = 0; i < PIPELINE; i++) {
        redisReply *r = h_get_reply(c);
        if (i % 2 == 0) {
            H_EXPECT_INT(r, i / 2 + 1);
        } else {
            H_FMT(want, sizeof want, "%d", i / 2 + 1);
            H_EXPECT_BULK(r, want);
        }
        freeReplyObject(r);
    }

    /* CLIENT INFO as redis-server 7.0 words it for a Unix socket client */
    sock_path("ref", refpath, sizeof refpath);
    start_ref_on(refpath);
    redisContext *rc = connect_unix(refpath);
    client_info(rc, line, sizeof line);
    redisFree(rc);
    info_field(line, "addr=", want, sizeof want);
    H_FMT(got, sizeof got, "%s:0", refpath);
    ck_assert_str_eq(want, got);                    /* what the reference says */
    info_field(line, "flags=", want, sizeof want);
    ck_assert_str_eq(want, "U");
    client_info(c, line, sizeof line);
    H_FMT(want, sizeof want, "%s:0", path);
    info_field(line, "addr=", got, sizeof got);
    ck_assert_str_eq(got, want);
    info_field(line, "laddr=", got, sizeof got);
    ck_assert_str_eq(got, want);
    info_field(line, "flags=", got, sizeof got);
    ck_assert_str_eq(got, "U");
    redisContext *tcp = h_connect_extra(&proxy);
    client_info(tcp, line, sizeof line);
    info_field(line, "flags=", got, sizeof got);
    ck_assert_str_eq(got, "N");
    redisFree(tcp);
    redisFree(c);
}
END_TEST

START_TEST(stale_socket_replaced_other_file_kept)
{
    char path[300], seed[128], log[8192], bad[400];
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct stat st;

    /* a socket file nobody listens on, as a killed proxy leaves it */
    sock_path("stale", path, sizeof path);
    H_FMT(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    close(fd);
    start_unix_proxy(path, NULL);
    redisContext *c = connect_unix(path);
    H_STATUS(c, "PONG", "PING");

    /* a second proxy on the same path: refused, the first one unharmed */
    h_seed(seed, sizeof seed);
    const char *args[] = { "--unixsocket", path, NULL };
    h_proxy_start_fails("unix-fail", seed, args, log, sizeof log);
    H_FMT(bad, sizeof bad, "unixsocket %s: another process listens there", path);
    ck_assert_msg(strstr(log, bad) != NULL, "log: %s", log);
    H_STATUS(c, "PONG", "PING");
    redisFree(c);
    c = connect_unix(path);
    H_STATUS(c, "PONG", "PING");
    redisFree(c);
    h_proxy_stop(&proxy);

    /* a regular file: refused, and left alone */
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("not a socket\n", f);
    fclose(f);
    h_proxy_start_fails("unix-fail", seed, args, log, sizeof log);
    H_FMT(bad, sizeof bad, "unixsocket %s: exists and is not a socket", path);
    ck_assert_msg(strstr(log, bad) != NULL, "log: %s", log);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_msg(S_ISREG(st.st_mode) && st.st_size == 13, "the file was touched");
    unlink(path);

    /* a folder that does not exist */
    H_FMT(path, sizeof path, "%s/no-such-folder/tp.sock", h_env("TAGPROXY_TEST_DIR"));
    h_proxy_start_fails("unix-fail", seed, args, log, sizeof log);
    H_FMT(bad, sizeof bad, "unixsocket %s: bind: No such file or directory", path);
    ck_assert_msg(strstr(log, bad) != NULL, "log: %s", log);
}
END_TEST

START_TEST(sigterm_removes_the_socket_file)
{
    char path[300], key[128], cmd[256], buf[256];
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct stat st;
    int closed = 0;

    sock_path("drain", path, sizeof path);
    start_unix_proxy(path, NULL);
    H_FMT(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    /* a command begun before SIGTERM: the drain waits for it */
    H_FMT(key, sizeof key, "%s:unix:drain", h_prefix());
    H_FMT(cmd, sizeof cmd, "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$4\r\ndo", strlen(key), key);
    h_raw_sends(fd, cmd);
    h_wait_client_listed(&proxy.addr, fd, NULL, 5000, "the Unix client with half a command");
    lc_signal(&proxy, SIGTERM, "draining: no new connections", 1);
    for (long long deadline = h_now_ms() + 2000; stat(path, &st) == 0; h_sleep_ms(5))
        ck_assert_msg(h_now_ms() < deadline, "%s still exists while draining", path);
    redisContext *late = redisConnectUnix(path);
    ck_assert_msg(late == NULL || late->err, "a new client connected while draining");
    redisFree(late);
    h_raw_sends(fd, "ne\r\n");                  /* finished: answered, then closed */
    h_raw_recv(fd, buf, sizeof buf, NULL, 5000, &closed);
    ck_assert_str_eq(buf, "+OK\r\n");
    ck_assert_msg(closed, "the client was not closed after its reply");
    close(fd);
    LC_EXPECT_EXIT_0(&proxy, 5000);
    ck_assert_msg(stat(path, &st) < 0 && errno == ENOENT, "%s is left behind", path);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("unixsocket");
    TCase *tc = tcase_create("unixsocket");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, unix_clients_are_served);
    tcase_add_test(tc, stale_socket_replaced_other_file_kept);
    tcase_add_test(tc, sigterm_removes_the_socket_file);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(suite());
}
