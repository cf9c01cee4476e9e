/*
 * lifecycle.h: helpers of the test_lifecycle_*.c tests (reload, drain,
 * daemonize): extra proxies started from a config file the test writes
 * and rewrites, their log searched for what they said, their exit awaited.
 */
#ifndef TAGPROXY_TEST_LIFECYCLE_H
#define TAGPROXY_TEST_LIFECYCLE_H

#include "harness.h"

/* Write text to path (replaced whole: a reload reads it all or nothing). */
H_UNUSED static void lc_write(const char *path, const char *text)
{
    char tmp[600];
    FILE *f;

    H_FMT(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    ck_assert_msg(f != NULL, "cannot write %s: %s", tmp, strerror(errno));
    ck_assert_msg(fputs(text, f) >= 0 && fclose(f) == 0, "cannot write %s", tmp);
    ck_assert_msg(rename(tmp, path) == 0, "rename %s: %s", tmp, strerror(errno));
}

/* host:port answers PING with anything (a NOAUTH error too). */
H_UNUSED static int lc_answers(const char *host, int port)
{
    redisReply *r = h_ping_once(host, port);

    if (r == NULL)
        return 0;
    freeReplyObject(r);
    return 1;
}

/* "DIR/lifecycle-PORT.NAME" for p into buf. */
H_UNUSED static void lc_path(const struct h_proxy *p, const char *name, char *buf, size_t size)
{
    H_FMT(buf, size, "%s/lifecycle-%d.%s", h_env("TAGPROXY_TEST_DIR"), p->addr.port, name);
}

/*
 * Start TAGPROXY_TEST_BIN [conf] --listen <free port> --cluster <seed>
 * [args...] as p (conf and args may be NULL), its output in
 * DIR/lifecycle-PORT.log, and wait until it answers. conf is written first
 * when text is not NULL (its path: DIR/lifecycle-PORT.conf, into conf_path).
 */
H_UNUSED static void lc_start(struct h_proxy *p, const char *text, char *conf_path,
                              size_t conf_size, const char *const *args)
{
    const char *argv[64];
    char listen[64], seed[128];
    int argc = 0;

    h_proxy_place(p);
    lc_path(p, "log", p->log, sizeof(p->log));
    h_seed(seed, sizeof(seed));
    H_FMT(listen, sizeof(listen), "%s:%d", p->addr.host, p->addr.port);
    argv[argc++] = h_env("TAGPROXY_TEST_BIN");
    if (text != NULL) {
        lc_path(p, "conf", conf_path, conf_size);
        lc_write(conf_path, text);
        argv[argc++] = conf_path;
    }
    argv[argc++] = "--listen";
    argv[argc++] = listen;
    argv[argc++] = "--cluster";
    argv[argc++] = seed;
    /* reloads come from the test's SIGHUPs; args may turn the watch on */
    argv[argc++] = "--config-watch";
    argv[argc++] = "no";
    for (int i = 0; args != NULL && args[i] != NULL; i++) {
        ck_assert_msg(argc < 63, "too many proxy arguments");
        argv[argc++] = args[i];
    }
    argv[argc] = NULL;
    h_spawn(p, argv, SIGKILL, 0);
    h_spawn_wait(p, lc_answers, 20000, "lifecycle proxy");
}

/* How many times needle occurs in the file at path (0 when unreadable). */
H_UNUSED static int lc_count(const char *path, const char *needle)
{
    char buf[1 << 16];
    FILE *f = fopen(path, "r");
    size_t n;
    int count = 0;

    if (f == NULL)
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (const char *at = buf; (at = strstr(at, needle)) != NULL; at += strlen(needle))
        count++;
    return count;
}

/* Wait until needle occurs n times in p's log; fails the test after 5 s. */
H_UNUSED static void lc_log_wait(const struct h_proxy *p, const char *needle, int n)
{
    long long deadline = h_now_ms() + 5000;

    while (lc_count(p->log, needle) < n) {
        if (h_now_ms() > deadline) {
            h_print_tail(p->log, 3000);
            ck_abort_msg("the proxy's log does not say '%s' (%d times) after 5 s", needle, n);
        }
        h_sleep_ms(10);
    }
}

/* Send sig to p, then wait until the log has said `logged` n times. */
H_UNUSED static void lc_signal(const struct h_proxy *p, int sig, const char *logged, int n)
{
    ck_assert_int_eq(kill(p->pid, sig), 0);
    lc_log_wait(p, logged, n);
}

/* Wait up to timeout_ms for p to exit (reaped, p->pid 0 then): 1 and its
 * status, or 0 when it still runs. */
H_UNUSED static int lc_wait_exit(struct h_proxy *p, long timeout_ms, int *status)
{
    long long deadline = h_now_ms() + timeout_ms;

    for (;;) {
        if (waitpid(p->pid, status, WNOHANG) == p->pid) {
            p->pid = 0;
            return 1;
        }
        if (h_now_ms() > deadline)
            return 0;
        h_sleep_ms(5);
    }
}

/* p exited by itself with status 0 within timeout_ms. */
#define LC_EXPECT_EXIT_0(p, timeout_ms) do { \
    int lc_st_ = 0; \
    if (!lc_wait_exit((p), (timeout_ms), &lc_st_)) { \
        h_print_tail((p)->log, 3000); \
        ck_abort_msg("the proxy still runs %ld ms after SIGTERM", (long)(timeout_ms)); \
    } \
    ck_assert_msg(WIFEXITED(lc_st_) && WEXITSTATUS(lc_st_) == 0, \
                  "the proxy ended with status 0x%x, not exit 0", lc_st_); \
} while (0)

#endif
