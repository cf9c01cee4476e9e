/*
 * Named users (user NAME PASSWORD RULES): what each may run, the exact
 * -NOPERM and -WRONGPASS texts, AUTH user pass, HELLO 2 AUTH, switching
 * users on one connection, RESET back to the default user, and CLIENT LIST's
 * user= field.
 *
 * Each test starts an extra proxy with --requirepass and --user lines, and a
 * reference redis-server 7.0 (standalone) given the same users through
 * ACL SETUSER (on >PASS ~* &* RULES). The same commands go to both and the
 * replies must be equal (type and text), so the proxy's words are Redis's
 * words; the rows also state the expected words, so the reference is checked
 * too. Both processes die with the test and are stopped in the teardown.
 */
#include "harness.h"

#define DEFPW "tp-acl-default"

static const char *const users[][2] = {
    /* name, password; rules below */
    { "bob", "bob-secret" },
    { "carl", "carl-secret" },
    { "dana", "dana-secret" },
};
static const char *const rules[][4] = {
    { "+get", "+@connection", "-client|kill", NULL },
    { "allcommands", "-@dangerous", "+client|list", NULL },
    { "nocommands", NULL },
};

static struct h_proxy proxy, ref;

static void ref_users(void)
{
    redisContext *c = h_connect_node(&ref.addr);
    H_OK(c, "AUTH %s", DEFPW);
    for (size_t u = 0; u < sizeof users / sizeof users[0]; u++) {
        const char *argv[16] = { "ACL", "SETUSER", users[u][0], "on", NULL, "~*", "&*" };
        char pass[80];
        int argc = 7;
        snprintf(pass, sizeof pass, ">%s", users[u][1]);
        argv[4] = pass;
        for (int i = 0; rules[u][i]; i++)
            argv[argc++] = rules[u][i];
        redisReply *r = h_cmd_argv(c, argc, argv);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);
    }
    redisFree(c);
}

static void setup(void)
{
    char seed[128];
    h_ref_start(&ref, "redis-acl", DEFPW);
    ref_users();

    const char *args[64] = { "--requirepass", DEFPW };
    int n = 2;
    for (size_t u = 0; u < sizeof users / sizeof users[0]; u++) {
        args[n++] = "--user";
        args[n++] = users[u][0];
        args[n++] = users[u][1];
        for (int i = 0; rules[u][i]; i++)
            args[n++] = rules[u][i];
    }
    args[n] = NULL;
    h_place_named(&proxy, "proxy-acl");
    h_seed(seed, sizeof seed);
    h_proxy_launch(&proxy, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    h_spawn_wait(&proxy, h_answers, 20000, "proxy");
}

static void teardown(void)
{
    h_proxy_stop(&proxy);
    h_proxy_stop(&ref);
}

/* ---------- one command to both ---------- */

struct pair {
    redisContext *p, *r;
};

static struct pair pair_open(void)
{
    struct pair x = { h_connect_node(&proxy.addr), h_connect_node(&ref.addr) };
    return x;
}

static void pair_close(struct pair *x)
{
    redisFree(x->p);
    redisFree(x->r);
}

/* words split at blanks; {K} is replaced by a run-unique key. The reply
 * must be the same on both, and be `expect` ("+OK", "-NOPERM ...", ":1",
 * "$" for any bulk, "_" for nil, "*" for any array). */
static void same(struct pair *x, const char *words, const char *expect)
{
    char buf[512], key[128], *save = NULL;
    const char *argv[32];
    int argc = 0;
    snprintf(key, sizeof key, "{%s}:acl", h_prefix());
    snprintf(buf, sizeof buf, "%s", words);
    for (char *w = strtok_r(buf, " ", &save); w && argc < 32; w = strtok_r(NULL, " ", &save))
        argv[argc++] = strcmp(w, "{K}") == 0 ? key : w;
    redisReply *a = h_cmd_argv(x->p, argc, argv), *b = h_cmd_argv(x->r, argc, argv);
    char got[300];
    snprintf(got, sizeof got, "%s", h_show(a));
    ck_assert_msg(a->type == b->type, "'%s': proxy %s, redis %s", words, got, h_show(b));
    if (a->type == REDIS_REPLY_ERROR || a->type == REDIS_REPLY_STATUS)
        ck_assert_msg(strcmp(a->str, b->str) == 0, "'%s': proxy %s, redis %s", words, got,
                      h_show(b));
    if (a->type == REDIS_REPLY_INTEGER)
        ck_assert_msg(a->integer == b->integer, "'%s': proxy %s, redis %s", words, got, h_show(b));
    switch (expect[0]) {
    case '+': H_EXPECT_STATUS(a, expect + 1); break;
    case '-': H_EXPECT_TYPE(a, REDIS_REPLY_ERROR);
              ck_assert_msg(strcmp(a->str, expect + 1) == 0, "'%s': got %s", words, got); break;
    case ':': H_EXPECT_INT(a, atoll(expect + 1)); break;
    case '$': H_EXPECT_TYPE(a, REDIS_REPLY_STRING); break;
    case '_': H_EXPECT_NIL(a); break;
    case '*': H_EXPECT_TYPE(a, REDIS_REPLY_ARRAY); break;
    }
    freeReplyObject(a);
    freeReplyObject(b);
}

#define NOPERM(cmd) "-NOPERM this user has no permissions to run the '" cmd "' command"
#define WRONGPASS "-WRONGPASS invalid username-password pair or user is disabled."

/* ---------- tests ---------- */

START_TEST(test_allowed_and_denied)
{
    struct pair x = pair_open();
    same(&x, "GET {K}", "-NOAUTH Authentication required.");
    same(&x, "AUTH bob bob-secret", "+OK");
    same(&x, "GET {K}", "_");
    same(&x, "SET {K} v", NOPERM("set"));
    same(&x, "DEL {K}", NOPERM("del"));
    same(&x, "MGET {K} {K}", NOPERM("mget"));
    same(&x, "FLUSHALL", NOPERM("flushall"));
    same(&x, "PING", "+PONG");                          /* @connection */
    same(&x, "ECHO hi", "$");
    same(&x, "CLIENT GETNAME", "_");                    /* client|getname: @connection */
    same(&x, "CLIENT KILL ID 999999999", NOPERM("client|kill"));
    same(&x, "AUTH carl carl-secret", "+OK");           /* another user, same connection */
    same(&x, "SET {K} v", "+OK");
    same(&x, "GET {K}", "$");
    same(&x, "KEYS nothing-matches-this", NOPERM("keys"));   /* @dangerous */
    same(&x, "CONFIG GET maxmemory", NOPERM("config|get"));
    same(&x, "DEL {K}", ":1");
    same(&x, "AUTH dana dana-secret", "+OK");
    same(&x, "PING", NOPERM("ping"));
    same(&x, "GET {K}", NOPERM("get"));
    same(&x, "HELLO 2 AUTH bob bob-secret", "*");       /* HELLO and AUTH: never denied */
    same(&x, "GET {K}", "_");
    pair_close(&x);
}
END_TEST

START_TEST(test_wrong_passwords)
{
    struct pair x = pair_open();
    same(&x, "AUTH bob wrong", WRONGPASS);
    same(&x, "AUTH bob bob-secre", WRONGPASS);
    same(&x, "AUTH bob bob-secret2", WRONGPASS);
    same(&x, "AUTH Bob bob-secret", WRONGPASS);
    same(&x, "AUTH nosuchuser bob-secret", WRONGPASS);
    same(&x, "AUTH default bob-secret", WRONGPASS);
    same(&x, "AUTH bob-secret", WRONGPASS);
    same(&x, "HELLO 2 AUTH bob wrong", WRONGPASS);
    same(&x, "HELLO 2 AUTH nosuchuser x", WRONGPASS);
    same(&x, "GET {K}", "-NOAUTH Authentication required.");   /* still nobody */
    same(&x, "AUTH " DEFPW, "+OK");                     /* requirepass: the default user */
    same(&x, "SET {K} v", "+OK");
    same(&x, "AUTH bob wrong", WRONGPASS);              /* a failed AUTH keeps the user */
    same(&x, "DEL {K}", ":1");
    same(&x, "AUTH default " DEFPW, "+OK");
    pair_close(&x);
}
END_TEST

/* HELLO 2 AUTH h_answers the HELLO map as the user; RESET goes back to the
 * default user, unauthenticated again. CLIENT LIST names the user. */
START_TEST(test_hello_reset_client_list)
{
    redisContext *c = h_connect_node(&proxy.addr);
    redisReply *r = h_cmd(c, "HELLO 2 AUTH bob bob-secret");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 14);
    freeReplyObject(r);
    r = h_cmd(c, "SET x y");
    H_EXPECT_ERR(r, "NOPERM");                          /* as bob */
    freeReplyObject(r);
    r = h_cmd(c, "AUTH carl carl-secret");
    freeReplyObject(r);
    r = h_cmd(c, "CLIENT LIST");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    ck_assert_msg(strstr(r->str, " user=carl ") != NULL, "no user=carl in %s", r->str);
    freeReplyObject(r);
    r = h_cmd(c, "RESET");
    H_EXPECT_STATUS(r, "RESET");
    freeReplyObject(r);
    r = h_cmd(c, "GET x");
    H_EXPECT_ERR(r, "NOAUTH");
    freeReplyObject(r);
    redisFree(c);
}
END_TEST

/* A rule naming no command stops the start with FILE:LINE-style words. */
START_TEST(test_bad_rule_refused_at_start)
{
    struct h_proxy bad;
    int status;
    const char *const args[] = { "--user", "bob", "pw", "+nosuchcommand", NULL };
    h_place_named(&bad, "proxy-acl-bad");
    h_proxy_launch(&bad, h_env("TAGPROXY_TEST_BIN"), "127.0.0.1:1", NULL, args, SIGTERM);
    ck_assert_int_eq(waitpid(bad.pid, &status, 0), bad.pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d", status);
    FILE *f = fopen(bad.log, "r");
    char text[2048] = "";
    ck_assert_ptr_nonnull(f);
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    ck_assert_msg(strstr(text, "argv --user: unknown command 'nosuchcommand' in ACL rule"),
                  "log: %s", text);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("acl");
    TCase *t = tcase_create("users");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_allowed_and_denied);
    tcase_add_test(t, test_wrong_passwords);
    tcase_add_test(t, test_hello_reset_client_list);
    suite_add_tcase(s, t);
    TCase *b = tcase_create("start");
    tcase_add_test(b, test_bad_rule_refused_at_start);
    suite_add_tcase(s, b);
    return h_run(s);
}
