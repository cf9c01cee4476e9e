/*
 * daemonize and pidfile (daemon.h):
 *  - `daemonize yes`: the command returns 0 once the daemon serves; the
 *    pidfile names the daemon (not the command that started it), which
 *    answers PING; SIGTERM ends it and removes the pidfile.
 *  - a daemon that cannot start (no seed answers): the command exits 1 and
 *    no pidfile is left.
 *  - in the foreground, the pidfile holds the proxy's own PID while it runs.
 * The daemon is not this test's child: an atexit() handler kills it should
 * the test fail before it stops it.
 */
#include "lifecycle.h"

static struct h_proxy proxy;
static pid_t daemon_pid;

static void kill_daemon(void)
{
    if (daemon_pid > 0)
        kill(daemon_pid, SIGKILL);
}

static void teardown(void)
{
    h_proxy_stop(&proxy);
    kill_daemon();
}

static pid_t read_pidfile(const char *path)
{
    char buf[32] = "";
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    if (fgets(buf, sizeof(buf), f) == NULL)
        buf[0] = '\0';
    fclose(f);
    ck_assert_msg(strlen(buf) > 1 && buf[strlen(buf) - 1] == '\n', "pidfile holds '%s'", buf);
    return (pid_t)atol(buf);
}

/* Run the proxy's command line as `tagproxy --daemonize yes ...` and wait
 * for that command (not the daemon) to return: its exit status. */
static int run_daemonizing(const char *seed, const char *pidfile)
{
    const char *const args[] = { "--daemonize", "yes", "--pidfile", pidfile, NULL };
    int status;

    h_proxy_place(&proxy);
    lc_path(&proxy, "log", proxy.log, sizeof(proxy.log));
    h_proxy_launch(&proxy, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGKILL);
    long long deadline = h_now_ms() + 20000;
    while (waitpid(proxy.pid, &status, WNOHANG) != proxy.pid) {
        ck_assert_msg(h_now_ms() < deadline, "tagproxy --daemonize yes did not return in 20 s");
        h_sleep_ms(10);
    }
    proxy.pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

START_TEST(daemonize_and_pidfile)
{
    char seed[128], pidfile[600];

    h_seed(seed, sizeof(seed));
    atexit(kill_daemon);
    H_FMT(pidfile, sizeof(pidfile), "%s/lifecycle-daemon-%d.pid", h_env("TAGPROXY_TEST_DIR"),
          (int)getpid());
    int rc = run_daemonizing(seed, pidfile);
    ck_assert_msg(rc == 0, "tagproxy --daemonize yes exited %d", rc);
    daemon_pid = read_pidfile(pidfile);
    ck_assert_msg(daemon_pid > 1, "no pidfile at %s once the command returned", pidfile);
    ck_assert_msg(kill(daemon_pid, 0) == 0, "the pidfile's process %d does not run", (int)daemon_pid);
    ck_assert_msg(h_pings(proxy.addr.host, proxy.addr.port), "the daemon does not answer PING");

    ck_assert_int_eq(kill(daemon_pid, SIGTERM), 0);
    long long deadline = h_now_ms() + 5000;
    while (kill(daemon_pid, 0) == 0 || access(pidfile, F_OK) == 0) {
        ck_assert_msg(h_now_ms() < deadline, "daemon or pidfile still there 5 s after SIGTERM");
        h_sleep_ms(10);
    }
    daemon_pid = 0;
}
END_TEST

START_TEST(daemon_that_cannot_start_fails)
{
    char seed[64], pidfile[600];
    int port = h_free_port();       /* nothing listens there */

    /* the start that refuses: by default the proxy waits for the cluster */
    setenv("TAGPROXY_CLUSTER_WAIT_AT_START", "no", 1);
    H_FMT(seed, sizeof(seed), "127.0.0.1:%d", port);
    H_FMT(pidfile, sizeof(pidfile), "%s/lifecycle-nodaemon-%d.pid", h_env("TAGPROXY_TEST_DIR"),
          (int)getpid());
    int rc = run_daemonizing(seed, pidfile);
    ck_assert_msg(rc == 1, "a daemon without a cluster: the command exited %d, not 1", rc);
    ck_assert_msg(access(pidfile, F_OK) != 0, "a pidfile was left by a failed start");
    ck_assert_msg(lc_count(proxy.log, "no cluster seed gave a slot map") == 1,
                  "the reason is not in the output");
}
END_TEST

START_TEST(foreground_pidfile)
{
    char pidfile[600];

    H_FMT(pidfile, sizeof(pidfile), "%s/lifecycle-fg-%d.pid", h_env("TAGPROXY_TEST_DIR"),
          (int)getpid());
    const char *const args[] = { "--pidfile", pidfile, NULL };
    lc_start(&proxy, NULL, NULL, 0, args);
    ck_assert_int_eq(read_pidfile(pidfile), proxy.pid);
    ck_assert_int_eq(kill(proxy.pid, SIGTERM), 0);
    LC_EXPECT_EXIT_0(&proxy, 5000);
    ck_assert_msg(access(pidfile, F_OK) != 0, "the pidfile is left after exit");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lifecycle_daemon");
    TCase *tc = tcase_create("daemon");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, daemonize_and_pidfile);
    tcase_add_test(tc, daemon_that_cannot_start_fails);
    tcase_add_test(tc, foreground_pidfile);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(suite());
}
