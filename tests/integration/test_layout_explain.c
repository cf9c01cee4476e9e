/*
 * `tagproxy layout explain` (proxy/ops/explain.h), run as users run it: the
 * binary, offline, its output and exit status. The examples of
 * docs/key-layouts.md ("Checking rules") with
 * the shipped botmesh-v1 rules (a chat id holding ':', a lock fence, a
 * turn counter with its copy mode and sign of a running bot, a user-data key, a cluster name mapped back, a key no rule matches), two
 * rules files each for its prefix, a config file, and the errors: a bad
 * rules file and two overlapping files exit 1 with FILE:LINE, a usage
 * error exits 2.
 */
#include <sys/stat.h>

#include "harness.h"

#define RULES "conf/layouts/botmesh-v1.rules"

static char tmp[512];

static void setup(void)
{
    H_FMT(tmp, sizeof tmp, "%s/explain-%ld", h_env("TAGPROXY_TEST_DIR"), (long)getpid());
    ck_assert_int_eq(mkdir(tmp, 0700), 0);
}

static void teardown(void)
{
    char out[256];
    h_shell(out, sizeof out, "rm -rf '%s'", tmp);
}

static const char *write_tmp(const char *name, const char *text)
{
    static char path[600];
    H_FMT(path, sizeof path, "%s/%s", tmp, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* The line of the shipped file that starts with start. */
static int line_of(const char *start)
{
    char out[64];
    ck_assert_int_eq(h_shell(out, sizeof out, "grep -n '^%s' " RULES " | cut -d: -f1", start), 0);
    ck_assert_int_gt(atoi(out), 0);
    return atoi(out);
}

static int rule_line(const char *name)
{
    char start[64];
    H_FMT(start, sizeof start, "rule %s ", name);
    return line_of(start);
}

/* Runs `tagproxy layout explain ARGS` (shell words); stdout (and stderr
 * with 2>&1 in args) into out; the exit status. */
static int explain(char *out, size_t size, const char *args)
{
    return h_shell(out, size, "'%s' layout explain %s", h_env("TAGPROXY_TEST_BIN"), args);
}

START_TEST(test_readme_examples)
{
    static char out[8192], want[8192];
    int rc = explain(out, sizeof out, "--layout-rules " RULES " --layout-prefix bot "
                     "bot:msgs:tg:77 bot:lock:a:b:fence bot:co:turn:tg:77:tix bot:user:u1:prefs:theme:dark "
                     "'bot:{ch:16}:r:tg%3A42' bot:conv:7 'bot:{ch:3}:idx' other:key");
    ck_assert_int_eq(rc, 0);
    H_FMT(want, sizeof want,
          "bot:msgs:tg:77\n"
          "  rule     msg-log (" RULES ":%d)\n"
          "  legacy   bot:msgs:tg:77\n"
          "  cluster  bot:{m:tg%%3A77}:z\n"
          "  slot     %d\n"
          "  copy     log msg-item\n"
          "\n"
          "bot:lock:a:b:fence\n"
          "  rule     lock-fence (" RULES ":%d)\n"
          "  legacy   bot:lock:a:b:fence\n"
          "  cluster  bot:{lk:a%%3Ab}:f\n"
          "  slot     %d\n"
          "  copy     greater\n"
          "\n"
          "bot:co:turn:tg:77:tix\n"
          "  rule     turn (" RULES ":%d)\n"
          "  legacy   bot:co:turn:tg:77:tix\n"
          "  cluster  bot:co:{t:tg%%3A77}:tix\n"
          "  slot     %d\n"
          "  copy     never\n"
          "  live     ticket tix>serving\n"
          "\n"
          "bot:user:u1:prefs:theme:dark\n"
          "  rule     user-data (" RULES ":%d)\n"
          "  legacy   bot:user:u1:prefs:theme:dark\n"
          "  cluster  bot:{ud:u1}:e:prefs:theme%%3Adark\n"
          "  slot     %d\n"
          "  index    bot:{ud:u1}:idx\n"
          "  member   prefs:theme:dark\n"
          "\n"
          "bot:{ch:16}:r:tg%%3A42\n"
          "  rule     chat (" RULES ":%d)\n"
          "  legacy   bot:chat:tg:42\n"
          "  cluster  bot:{ch:16}:r:tg%%3A42\n"
          "  slot     %d\n"
          "  index    bot:{ch:16}:idx\n"
          "  member   tg:42\n"
          "\n"
          "bot:conv:7\n"
          "  keep     p:conv:* (" RULES ":%d)\n"
          "  legacy   bot:conv:7\n"
          "  cluster  bot:conv:7\n"
          "  slot     %d\n"
          "\n"
          "bot:{ch:3}:idx\n"
          "  index of chat (" RULES ":%d)\n"
          "  slot     %d\n"
          "\n"
          "other:key\n"
          "  no rule: passes through\n"
          "  slot     %d\n",
          rule_line("msg-log"), h_slot("bot:{m:tg%3A77}:z"), rule_line("lock-fence"),
          h_slot("bot:{lk:a%3Ab}:f"), rule_line("turn"), h_slot("bot:co:{t:tg%3A77}:tix"),
          rule_line("user-data"), h_slot("bot:{ud:u1}:e:x"),
          rule_line("chat"), h_slot("bot:{ch:16}:r:x"), line_of("keep p:conv:"), h_slot("bot:conv:7"),
          rule_line("chat"), h_slot("bot:{ch:3}:idx"), h_slot("other:key"));
    ck_assert_str_eq(out, want);
}
END_TEST

/* Two rules files, each for its own prefix; and a config file. */
START_TEST(test_files_and_config)
{
    char out[4096], args[2048];
    const char *rules = write_tmp("presence.rules", "rule presence p:presence:<u> -> p:{pr:<u>}:s\n");
    H_FMT(args, sizeof args, "--layout-rules " RULES " bot --layout-rules '%s' cour -- "
          "cour:presence:u1 bot:presence:u1", rules);
    ck_assert_int_eq(explain(out, sizeof out, args), 0);
    char want[2048];
    H_FMT(want, sizeof want,
          "cour:presence:u1\n"
          "  rule     presence (%s:1)\n"
          "  legacy   cour:presence:u1\n"
          "  cluster  cour:{pr:u1}:s\n"
          "  slot     %d\n"
          "\n"
          "bot:presence:u1\n"
          "  no rule: passes through\n"
          "  slot     %d\n", rules, h_slot("cour:{pr:u1}:s"), h_slot("bot:presence:u1"));
    ck_assert_str_eq(out, want);

    char conf[1024];
    H_FMT(conf, sizeof conf, "layout-rules %s cour\n", rules);
    H_FMT(args, sizeof args, "-c '%s' cour:presence:u2", write_tmp("t.conf", conf));
    ck_assert_int_eq(explain(out, sizeof out, args), 0);
    ck_assert_msg(strstr(out, "  cluster  cour:{pr:u2}:s\n") != NULL, "%s", out);
}
END_TEST

START_TEST(test_errors)
{
    char out[4096], args[2048], want[1024];
    const char *bad = write_tmp("bad.rules", "# two lines\nrule b p:y:<q -> p:{b}\n");
    H_FMT(args, sizeof args, "--layout-rules '%s' bot bot:y:1 2>&1", bad);
    ck_assert_int_eq(explain(out, sizeof out, args), 1);
    H_FMT(want, sizeof want, "%s:2: \"p:y:<q\": segment \"<q\" is neither a literal nor a "
          "capture (<name>, <name...>, <name=a|b>)\n", bad);
    ck_assert_str_eq(out, want);

    const char *locks = write_tmp("locks.rules", "rule mylock p:lock:<k> -> p:{x:<k>}:l\n");
    H_FMT(args, sizeof args, "--layout-rules " RULES " bot --layout-rules '%s' bot bot:lock:a 2>&1",
          locks);
    ck_assert_int_eq(explain(out, sizeof out, args), 1);
    H_FMT(want, sizeof want, RULES ":%d: rule lock and %s:1: rule mylock both match "
          "\"bot:lock:x\"", rule_line("lock"), locks);
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);

    ck_assert_int_eq(explain(out, sizeof out, "--layout-rules " RULES " bot 2>&1"), 2);
    ck_assert_msg(strstr(out, "no KEY given") != NULL, "%s", out);
    ck_assert_int_eq(explain(out, sizeof out, "--frob x 2>&1"), 2);
    ck_assert_int_eq(explain(out, sizeof out, "bot:x 2>&1"), 1);
    ck_assert_msg(strstr(out, "no layout-rules file given") != NULL, "%s", out);
    ck_assert_int_eq(explain(out, sizeof out, "--layout-rules /nonexistent.rules bot a:b 2>&1"), 1);
    ck_assert_str_eq(out, "/nonexistent.rules: No such file or directory\n");
}
END_TEST

static Suite *explain_suite(void)
{
    Suite *s = suite_create("layout_explain");
    TCase *t = tcase_create("explain");
    tcase_set_timeout(t, 30);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_readme_examples);
    tcase_add_test(t, test_files_and_config);
    tcase_add_test(t, test_errors);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return h_run(explain_suite());
}
