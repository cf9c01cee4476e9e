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
    { "erin", "erin-secret" },
};
static const char *const rules[][5] = {
    { "+get", "+@connection", "-client|kill", NULL },
    { "allcommands", "-@dangerous", "+client|list", NULL },
    { "nocommands", NULL },
    { "allcommands", "-@dangerous", "-flushall", "-keys", NULL },
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
        args[n++] = "~*";           /* (the reference's users have them too) */
        args[n++] = "&*";
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
    /* without acl-mutable the proxy's users are the config's */
    redisContext *c = h_connect_node(&proxy.addr);
    H_OK(c, "AUTH %s", DEFPW);
    redisReply *r = h_cmd(c, "ACL SETUSER mallory on nopass +@all ~*");
    H_EXPECT_ERR(r, "ERR 'acl|setuser' changes the proxy's users, and acl-mutable is no");
    freeReplyObject(r);
    r = h_cmd(c, "AUTH mallory x");
    H_EXPECT_ERR(r, "WRONGPASS");
    freeReplyObject(r);
    redisFree(c);
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

/* A script's calls have the calling user's rights, as on one server: erin
 * may run EVAL and FCALL but not FLUSHALL or KEYS, so a script of hers
 * that calls them is refused, with the server's words, and flushes
 * nothing; her allowed calls run. Inside MULTI too. */
START_TEST(test_scripts_run_with_the_users_rights)
{
    struct pair x = pair_open();
    same(&x, "AUTH erin erin-secret", "+OK");
    same(&x, "SET {K} v", "+OK");
    same(&x, "FLUSHALL", NOPERM("flushall"));
    same(&x, "KEYS *", NOPERM("keys"));
    const char *flush[] = { "EVAL", "return redis.call('FLUSHALL')", "0" };
    const char *keys[] = { "EVAL", "return redis.call('KEYS','*')", "0" };
    const char *flush_ro[] = { "EVAL_RO", "return redis.call('FLUSHALL')", "0" };
    const char **refused[] = { flush, keys, flush_ro };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        redisReply *a = h_cmd_argv(x.p, 3, refused[i]), *b = h_cmd_argv(x.r, 3, refused[i]);
        H_EXPECT_TYPE(b, REDIS_REPLY_ERROR);
        ck_assert_msg(a->type == REDIS_REPLY_ERROR && strcmp(a->str, b->str) == 0,
                      "%s: proxy %s, redis %s", refused[i][1], h_show(a), h_show(b));
        freeReplyObject(a);
        freeReplyObject(b);
    }
    same(&x, "GET {K}", "$");                           /* nothing was flushed */

    char key[128];
    snprintf(key, sizeof key, "{%s}:acl", h_prefix());
    const char *set[] = { "EVAL", "return redis.call('SET',KEYS[1],'w')", "1", key };
    redisReply *a = h_cmd_argv(x.p, 4, set), *b = h_cmd_argv(x.r, 4, set);
    H_EXPECT_STATUS(a, "OK");
    H_EXPECT_STATUS(b, "OK");
    freeReplyObject(a);
    freeReplyObject(b);

    /* a library loaded by anyone: FCALL runs it as erin */
    const char *lib[] = { "FUNCTION", "LOAD", "REPLACE",
                          "#!lua name=tpacl\nredis.register_function('tpacl_flush', "
                          "function() return redis.call('FLUSHALL') end)" };
    const char *fcall[] = { "FCALL", "tpacl_flush", "0" };
    a = h_cmd_argv(x.p, 4, lib);
    b = h_cmd_argv(x.r, 4, lib);
    H_EXPECT_BULK(a, "tpacl");
    H_EXPECT_BULK(b, "tpacl");
    freeReplyObject(a);
    freeReplyObject(b);
    a = h_cmd_argv(x.p, 3, fcall);
    b = h_cmd_argv(x.r, 3, fcall);
    H_EXPECT_TYPE(b, REDIS_REPLY_ERROR);
    ck_assert_msg(a->type == REDIS_REPLY_ERROR && strcmp(a->str, b->str) == 0,
                  "FCALL: proxy %s, redis %s", h_show(a), h_show(b));
    freeReplyObject(a);
    freeReplyObject(b);

    /* in MULTI: EXEC's array holds the script's error, the rest ran */
    same(&x, "MULTI", "+OK");
    same(&x, "INCR {K}:n", "+QUEUED");
    a = h_cmd_argv(x.p, 3, flush);
    b = h_cmd_argv(x.r, 3, flush);
    H_EXPECT_STATUS(a, "QUEUED");
    H_EXPECT_STATUS(b, "QUEUED");
    freeReplyObject(a);
    freeReplyObject(b);
    a = h_cmd(x.p, "EXEC");
    b = h_cmd(x.r, "EXEC");
    H_EXPECT_TYPE(a, REDIS_REPLY_ARRAY);
    H_EXPECT_TYPE(b, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(a->elements, 2);
    ck_assert_int_eq(b->elements, 2);
    H_EXPECT_INT(a->element[0], 1);
    ck_assert_msg(a->element[1]->type == REDIS_REPLY_ERROR &&
                  strcmp(a->element[1]->str, b->element[1]->str) == 0,
                  "EXEC: proxy %s, redis %s", h_show(a->element[1]), h_show(b->element[1]));
    freeReplyObject(a);
    freeReplyObject(b);
    same(&x, "GET {K}", "$");
    same(&x, "DEL {K} {K}:n", ":2");
    same(&x, "FUNCTION DELETE tpacl", "+OK");
    pair_close(&x);
}
END_TEST

/* One side's EXEC after WATCH key, MULTI, a script that INCRs key and one
 * that calls FLUSHALL; another client's SET in between when `touch`. */
static redisReply *watched_scripts(redisContext *c, redisContext *other, const char *key,
                                   int touch)
{
    H_OK(c, "WATCH %s", key);
    if (touch)
        H_OK(other, "SET %s 5", key);
    H_OK(c, "MULTI");
    H_STATUS(c, "QUEUED", "EVAL %s 1 %s", "return redis.call('INCR',KEYS[1])", key);
    H_STATUS(c, "QUEUED", "EVAL %s 0", "return redis.call('FLUSHALL')");
    return h_cmd(c, "EXEC");
}

/* A restricted user's scripts in a transaction after WATCH run with the
 * user's rights on the watched connection, which then serves no one else
 * as that user: EXEC answers as one server does, and a WATCH of the
 * default user's after it runs with the default user's rights. */
START_TEST(test_scripts_after_watch)
{
    struct pair x = pair_open();
    redisContext *other = h_connect_node(&proxy.addr), *ref_other = h_connect_node(&ref.addr);
    char key[128];
    snprintf(key, sizeof key, "{%s}:acl", h_prefix());
    H_OK(other, "AUTH default %s", DEFPW);
    H_OK(ref_other, "AUTH default %s", DEFPW);
    same(&x, "AUTH erin erin-secret", "+OK");
    same(&x, "SET {K} 1", "+OK");
    redisReply *a = watched_scripts(x.p, other, key, 0);
    redisReply *b = watched_scripts(x.r, ref_other, key, 0);
    H_EXPECT_TYPE(a, REDIS_REPLY_ARRAY);
    H_EXPECT_TYPE(b, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(a->elements, 2);
    H_EXPECT_INT(a->element[0], 2);
    ck_assert_msg(a->element[1]->type == REDIS_REPLY_ERROR &&
                  strcmp(a->element[1]->str, b->element[1]->str) == 0,
                  "EXEC: proxy %s, redis %s", h_show(a->element[1]), h_show(b->element[1]));
    freeReplyObject(a);
    freeReplyObject(b);
    same(&x, "GET {K}", "$");                           /* nothing was flushed */

    a = watched_scripts(x.p, other, key, 1);            /* the watch still works */
    b = watched_scripts(x.r, ref_other, key, 1);
    H_EXPECT_TYPE(a, REDIS_REPLY_NIL);
    H_EXPECT_TYPE(b, REDIS_REPLY_NIL);
    freeReplyObject(a);
    freeReplyObject(b);

    /* RESTORE is @dangerous: erin may not, the default user may */
    redisReply *dump = h_cmd(x.p, "DUMP %s", key);
    H_EXPECT_TYPE(dump, REDIS_REPLY_STRING);
    same(&x, "AUTH default " DEFPW, "+OK");
    H_OK(x.p, "WATCH %s", key);
    H_OK(x.p, "MULTI");
    H_STATUS(x.p, "QUEUED", "RESTORE %s:r 0 %b REPLACE", key, dump->str, dump->len);
    a = h_cmd(x.p, "EXEC");
    H_EXPECT_TYPE(a, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(a->elements, 1);
    H_EXPECT_STATUS(a->element[0], "OK");
    freeReplyObject(a);
    freeReplyObject(dump);
    same(&x, "DEL {K}", ":1");
    a = h_cmd(x.p, "DEL %s:r", key);
    H_EXPECT_INT(a, 1);
    freeReplyObject(a);
    redisFree(other);
    redisFree(ref_other);
    pair_close(&x);
}
END_TEST

/* A pipeline mixing a restricted user's scripts (on connections of their
 * own) with plain commands keeps one server's order: each script sees the
 * writes before it, and the commands after it see its write. */
START_TEST(test_script_order_in_a_pipeline)
{
    redisContext *c = h_connect_node(&proxy.addr);
    char key[128];
    snprintf(key, sizeof key, "{%s}:order", h_prefix());
    H_OK(c, "AUTH erin erin-secret");
    for (int i = 0; i < 50; i++) {
        redisAppendCommand(c, "SET %s %d", key, i);
        redisAppendCommand(c, "EVAL %s 1 %s", "return redis.call('INCR',KEYS[1])", key);
        redisAppendCommand(c, "GET %s", key);
    }
    for (int i = 0; i < 50; i++) {
        redisReply *r;
        ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);
        ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
        H_EXPECT_INT(r, i + 1);
        freeReplyObject(r);
        ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
        char want[16];
        snprintf(want, sizeof want, "%d", i + 1);
        H_EXPECT_BULK(r, want);
        freeReplyObject(r);
    }
    H_STATUS(c, "OK", "AUTH default %s", DEFPW);
    redisReply *r = h_cmd(c, "DEL %s", key);
    freeReplyObject(r);
    redisFree(c);
}
END_TEST

/* A run-unique layout prefix, from tag. */
static void layout_prefix(char prefix[H_LAYOUT_PREFIX_LEN], const char *tag)
{
    H_FMT(prefix, H_LAYOUT_PREFIX_LEN, "%s%ld%lld", tag, (long)getpid(), h_now_ms() % 1000000);
}

/* An extra proxy with the botmesh-v1 layout for prefix and one user: its
 * name, password and rules (NULL-ended). */
static void layout_proxy_start(struct h_proxy *lp, const char *prefix, const char *name,
                               const char *password, ...)
{
    const char *args[24] = { "--layout-rules", "conf/layouts/botmesh-v1.rules",
                             "--layout-prefix", prefix, "--user", name, password };
    int n = 7;
    va_list ap;
    va_start(ap, password);
    for (const char *rule; (rule = va_arg(ap, const char *)) != NULL && n < 23;)
        args[n++] = rule;
    va_end(ap);
    args[n] = NULL;
    h_proxy_start(lp, args);
}

/* With a key layout, keys are checked as the client names them, once: a
 * command parked behind a restricted user's script (its keys rewritten by
 * then) is not refused for its cluster name when it goes out. */
START_TEST(test_layout_keys_checked_once)
{
    struct h_proxy lp;
    char prefix[H_LAYOUT_PREFIX_LEN], pattern[128], key[160];
    layout_prefix(prefix, "acllay");
    H_FMT(pattern, sizeof pattern, "~%s:lock:*", prefix);
    H_FMT(key, sizeof key, "%s:lock:x", prefix);
    layout_proxy_start(&lp, prefix, "lay", "lay-pw", pattern, "allchannels", "+@all", NULL);
    redisContext *c = h_connect_node(&lp.addr);
    H_OK(c, "AUTH lay lay-pw");
    for (int i = 0; i < 20; i++) {
        redisAppendCommand(c, "EVAL %s 0", "return 1");
        redisAppendCommand(c, "SET %s v%d", key, i);
        redisAppendCommand(c, "GET %s", key);
    }
    for (int i = 0; i < 20; i++) {
        redisReply *r;
        char want[16];
        ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
        H_EXPECT_INT(r, 1);
        freeReplyObject(r);
        ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);
        ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
        snprintf(want, sizeof want, "v%d", i);
        H_EXPECT_BULK(r, want);
        freeReplyObject(r);
    }
    redisReply *r = h_cmd(c, "DEL %s", key);
    freeReplyObject(r);
    redisFree(c);
    h_proxy_stop(&lp);
}
END_TEST

/* With a key layout, a restricted user's transaction may hold a script and
 * writes to indexed records: the block runs as the user, the writes as they
 * came, and their indexes are kept once EXEC has run (KEYS answers from
 * them). */
START_TEST(test_layout_script_beside_indexed_writes)
{
    struct h_proxy lp;
    char prefix[H_LAYOUT_PREFIX_LEN], key[160], pattern[160];
    layout_prefix(prefix, "aclidx");
    H_FMT(key, sizeof key, "%s:user:u1:ns:a", prefix);
    H_FMT(pattern, sizeof pattern, "%s:user:u1:*", prefix);
    layout_proxy_start(&lp, prefix, "idx", "idx-pw", "allkeys", "allchannels", "+@all",
                       "-flushall", NULL);
    redisContext *c = h_connect_node(&lp.addr);
    H_OK(c, "AUTH idx idx-pw");
    H_OK(c, "MULTI");
    H_STATUS(c, "QUEUED", "SET %s v1", key);
    H_STATUS(c, "QUEUED", "EVAL %s 1 %s", "return redis.call('GET',KEYS[1])", key);
    H_STATUS(c, "QUEUED", "EVAL %s 0", "return redis.call('FLUSHALL')");
    H_STATUS(c, "QUEUED", "DEL %s:user:u1:ns:b", prefix);
    redisReply *r = h_cmd(c, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 4);
    H_EXPECT_STATUS(r->element[0], "OK");
    H_EXPECT_BULK(r->element[1], "v1");
    H_EXPECT_TYPE(r->element[2], REDIS_REPLY_ERROR);
    H_EXPECT_INT(r->element[3], 0);
    freeReplyObject(r);
    r = h_cmd(c, "KEYS %s", pattern);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 1);
    H_EXPECT_BULK(r->element[0], key);
    freeReplyObject(r);
    r = h_cmd(c, "DEL %s", key);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    r = h_cmd(c, "KEYS %s", pattern);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 0);
    freeReplyObject(r);
    redisFree(c);
    h_proxy_stop(&lp);
}
END_TEST

/* With a key layout, a user's key patterns hold inside its scripts for the
 * cluster names the layout gives the names they match, and for no other
 * rewritten name. */
START_TEST(test_layout_script_key_patterns)
{
    struct h_proxy lp;
    char prefix[H_LAYOUT_PREFIX_LEN], own[160], other[160], own_pattern[160];
    layout_prefix(prefix, "aclpat");
    H_FMT(own, sizeof own, "%s:user:u1:ns:k", prefix);
    H_FMT(other, sizeof other, "%s:user:u2:ns:k", prefix);
    H_FMT(own_pattern, sizeof own_pattern, "~%s:user:u1:*", prefix);
    layout_proxy_start(&lp, prefix, "pat", "pat-pw", own_pattern, "allchannels", "+@all",
                       "-flushall", NULL);
    redisContext *c = h_connect_node(&lp.addr), *admin = h_connect_node(&lp.addr);
    H_OK(c, "AUTH pat pat-pw");
    /* its own key, through a script: the node user may write its cluster name */
    H_STATUS(c, "OK", "EVAL %s 1 %s", "return redis.call('SET',KEYS[1],'v1')", own);
    redisReply *r = h_cmd(c, "GET %s", own);
    H_EXPECT_BULK(r, "v1");
    freeReplyObject(r);
    /* the same key by its cluster name, undeclared: still its own */
    char cluster[200];
    H_FMT(cluster, sizeof cluster, "%s:{ud:u1}:e:ns:k", prefix);
    const char *get_own[] = { "EVAL", "return redis.call('GET',ARGV[1])", "1", own, cluster };
    r = h_cmd_argv(c, 5, get_own);
    H_EXPECT_BULK(r, "v1");
    freeReplyObject(r);
    /* another user's key: refused by the proxy when declared; a name its
     * patterns do not give, in the same slot, refused by the node */
    r = h_cmd(c, "EVAL %s 1 %s", "return redis.call('SET',KEYS[1],'x')", other);
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    ck_assert_msg(strstr(r->str, "NOPERM") != NULL, "%s", r->str);
    freeReplyObject(r);
    H_FMT(cluster, sizeof cluster, "%s:{ud:u1}:zz", prefix);
    const char *set_other[] = { "EVAL", "return redis.call('SET',ARGV[1],'x')", "1", own,
                                cluster };
    r = h_cmd_argv(c, 5, set_other);
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    ck_assert_msg(strstr(r->str, "access") != NULL, "%s", r->str);
    freeReplyObject(r);
    r = h_cmd(admin, "EXISTS %s %s", other, cluster);
    H_EXPECT_INT(r, 0);
    freeReplyObject(r);
    r = h_cmd(admin, "DEL %s", own);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    redisFree(c);
    redisFree(admin);
    h_proxy_stop(&lp);
}
END_TEST

/* On every node of the cluster: ACL SETUSER name rules... (NULL-ended). */
static void nodes_setuser(const char *const *words)
{
    struct h_node nodes[H_MAX_NODES];
    int n = h_nodes(nodes, H_MAX_NODES);
    for (int i = 0; i < n; i++) {
        redisContext *c = h_connect_node(&nodes[i]);
        const char *argv[16] = { "ACL" };
        int argc = 1;
        while (words[argc - 1] && argc < 16) {
            argv[argc] = words[argc - 1];
            argc++;
        }
        redisReply *r = h_cmd_argv(c, argc, argv);
        ck_assert_msg(r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_INTEGER,
                      "ACL %s: %s", words[0], h_show(r));
        freeReplyObject(r);
        redisFree(c);
    }
}

/* A cluster-user the cluster does not let ACL SETUSER cannot run a
 * restricted user's scripts as that user: they are refused, saying so,
 * and nothing of them runs; the user's plain commands still do. */
START_TEST(test_scripts_refused_when_the_node_user_cannot_be_made)
{
    static const char *const add[] = { "SETUSER", "tp-acl-nosetuser", "on", ">tp-acl-pw", "~*",
                                       "&*", "+@all", "-acl", NULL };
    static const char *const del[] = { "DELUSER", "tp-acl-nosetuser", NULL };
    struct h_proxy p2;
    char seed[128], key[128];
    nodes_setuser(add);
    const char *args[] = { "--cluster-user", "tp-acl-nosetuser", "--cluster-password",
                           "tp-acl-pw", "--user", "erin", "erin-secret", "~*", "&*", "allcommands",
                           "-@dangerous", NULL };
    h_place_named(&p2, "proxy-acl-nosetuser");
    h_seed(seed, sizeof seed);
    h_proxy_launch(&p2, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    h_spawn_wait(&p2, h_answers, 20000, "proxy");

    /* the start says so, naming the user */
    FILE *f = fopen(p2.log, "r");
    char text[8192] = "";
    ck_assert_ptr_nonnull(f);
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    ck_assert_msg(strstr(text, "refused ACL SETUSER tagproxy:") &&
                  strstr(text, "the scripts of user 'erin' will be refused"), "log: %s", text);

    redisContext *c = h_connect_node(&p2.addr);
    snprintf(key, sizeof key, "{%s}:nosetuser", h_prefix());
    H_OK(c, "AUTH erin erin-secret");
    H_OK(c, "SET %s v", key);
    redisReply *r = h_cmd(c, "EVAL %s 1 %s", "return redis.call('SET',KEYS[1],'w')", key);
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    ck_assert_msg(strstr(r->str, "cluster-user must be allowed ACL SETUSER"), "%s", r->str);
    freeReplyObject(r);
    r = h_cmd(c, "GET %s", key);
    H_EXPECT_BULK(r, "v");                              /* the script did not run */
    freeReplyObject(r);
    r = h_cmd(c, "DEL %s", key);
    freeReplyObject(r);
    redisFree(c);
    h_proxy_stop(&p2);
    nodes_setuser(del);
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
    tcase_add_test(t, test_scripts_run_with_the_users_rights);
    tcase_add_test(t, test_scripts_after_watch);
    tcase_add_test(t, test_script_order_in_a_pipeline);
    tcase_add_test(t, test_scripts_refused_when_the_node_user_cannot_be_made);
    tcase_add_test(t, test_layout_keys_checked_once);
    tcase_add_test(t, test_layout_script_beside_indexed_writes);
    tcase_add_test(t, test_layout_script_key_patterns);
    suite_add_tcase(s, t);
    TCase *b = tcase_create("start");
    tcase_add_test(b, test_bad_rule_refused_at_start);
    suite_add_tcase(s, b);
    return h_run(s);
}
