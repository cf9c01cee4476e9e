/*
 * The command line's own answers (proxy/ops/cli.h), run as users run them: the
 * binary, its output and exit status. --help and -h list usage and every
 * directive; --version names the release of lib/base/version.h, the git
 * revision and the libraries; --dump-config writes the config merged from
 * the file, the environment and the command line, secrets redacted, and
 * what it writes is a config the proxy accepts (-t). Neither touches the
 * network.
 */
#include "harness.h"
#include "lib/base/version.h"

START_TEST(test_help)
{
    char out[16384];
    static const char *const asks[] = { "--help", "-h", "conf/tagproxy.conf --help" };
    for (size_t i = 0; i < sizeof asks / sizeof *asks; i++) {
        ck_assert_int_eq(h_tagproxy(out, sizeof out, "%s", asks[i]), 0);
        ck_assert_msg(strstr(out, "usage: tagproxy [CONF-FILE]") &&
                      strstr(out, "\nNetwork:\n  --listen HOST:PORT ") &&
                      strstr(out, "\n  --layout-rules FILE [PREFIX...] ") &&
                      strstr(out, "\n  --pidfile FILE "), "%s: %s", asks[i], out);
    }
}
END_TEST

START_TEST(test_version)
{
    char out[4096], want[128];
    ck_assert_int_eq(h_tagproxy(out, sizeof out, "--version"), 0);
    H_FMT(want, sizeof want, "tagproxy %s (revision ", TAGPROXY_VERSION);
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);
    ck_assert_msg(strstr(out, "libevent 2.") && strstr(out, "hiredis ") &&
                  strstr(out, "OpenSSL 3") && strstr(out, "liburing "), "%s", out);
    ck_assert_msg(strstr(out, "(revision unknown)") == NULL, "no git revision: %s", out);
}
END_TEST

/* File, then environment, then command line; the password redacted; the
 * dump, loaded again, is a valid config with the same values. */
START_TEST(test_dump_config)
{
    char out[16384], path[512], again[16384];
    int rc = h_shell(out, sizeof out, "TAGPROXY_THREADS=3 TAGPROXY_MAX_CLIENTS=77 '%s' "
                     "conf/tagproxy.conf --max-clients 88 --requirepass hunter2 --dump-config "
                     "--retry-attempts 4 2>&1", h_env("TAGPROXY_TEST_BIN"));
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "\nthreads 3\n") && strstr(out, "\nmax-clients 88\n") &&
                  strstr(out, "\nretry-attempts 4\n") && strstr(out, "\ncluster 127.0.0.1:7000\n") &&
                  strstr(out, "\nrequirepass <redacted>\n") &&
                  strstr(out, "\nclient-query-buffer-limit 1gb\n"), "%s", out);
    ck_assert_msg(strstr(out, "hunter2") == NULL, "the password shows: %s", out);
    H_FMT(path, sizeof path, "%s/dumped-%ld.conf", h_env("TAGPROXY_TEST_DIR"), (long)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(out, f);
    fclose(f);
    ck_assert_msg(h_tagproxy(again, sizeof again, "-t '%s'", path) == 0, "%s", again);
    ck_assert_int_eq(h_tagproxy(again, sizeof again, "'%s' --dump-config", path), 0);
    const char *body = strstr(out, "\n\n"), *body2 = strstr(again, "\n\n");
    ck_assert_msg(body && body2 && strcmp(body, body2) == 0, "%s\nagainst\n%s", out, again);
    unlink(path);
    /* a bad directive: the loader's error, exit 1 */
    ck_assert_int_eq(h_tagproxy(out, sizeof out, "--bogus 1 --dump-config"), 1);
    ck_assert_msg(strstr(out, "argv --bogus: unknown directive 'bogus'"), "%s", out);
}
END_TEST

static Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *t = tcase_create("cli");
    tcase_add_test(t, test_help);
    tcase_add_test(t, test_version);
    tcase_add_test(t, test_dump_config);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return h_run(cli_suite());
}
