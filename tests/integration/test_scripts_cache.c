/*
 * SCRIPT and FUNCTION across the masters, and the proxy's script bodies:
 * SCRIPT LOAD reaches every master, SCRIPT EXISTS is 1 only where every
 * master has the script, SCRIPT FLUSH empties them all (and a later EVALSHA
 * gets NOSCRIPT, as from one server); an EVALSHA that meets NOSCRIPT on one
 * master (flushed directly on that node) is recovered, runs exactly once and
 * the client never sees the NOSCRIPT; FUNCTION LOAD/DELETE reach every
 * master and FCALL runs by its keys; SCRIPT KILL stops a busy script on the
 * master that runs it; script-map replaces a legacy script. Every check of
 * the masters' state is made on the nodes directly.
 */
#include "harness.h"

/* EXISTS sha on master m, directly: 0 or 1. */
static long long master_has(const struct h_topo *t, int m, const char *sha)
{
    redisContext *c = h_connect_node(&t->masters[m]);
    redisReply *r = h_cmd(c, "SCRIPT EXISTS %s", sha);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    long long v = r->element[0]->integer;
    freeReplyObject(r);
    redisFree(c);
    return v;
}

static void master_flush_scripts(const struct h_topo *t, int m)
{
    redisContext *c = h_connect_node(&t->masters[m]);
    H_OK(c, "SCRIPT FLUSH");
    redisFree(c);
}

/* SCRIPT LOAD through the proxy; the SHA into sha (41 bytes). */
static void proxy_load(redisContext *p, const char *body, char *sha)
{
    redisReply *r = h_cmd(p, "SCRIPT LOAD %s", body);
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    ck_assert_uint_eq(r->len, 40);
    memcpy(sha, r->str, 41);
    freeReplyObject(r);
}

/* A script body unique to this run and tag (so no earlier test loaded it). */
static void unique_body(char *buf, size_t size, const char *tag, const char *lua)
{
    H_FMT(buf, size, "-- %s %s\n%s", h_prefix(), tag, lua);
}

START_TEST(test_script_load_exists_flush_everywhere)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    redisReply *r;
    char body[256], sha[41];
    const char *unknown = "0123456789abcdef0123456789abcdef01234567";

    h_topo_load(&t);
    unique_body(body, sizeof(body), "load", "return 'loaded'");
    proxy_load(p, body, sha);
    for (int m = 0; m < t.nmasters; m++)
        ck_assert_msg(master_has(&t, m, sha) == 1, "master %d lacks the script", m);

    r = h_cmd(p, "SCRIPT EXISTS %s %s %s", sha, unknown, sha);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 3);
    H_EXPECT_INT(r->element[0], 1);
    H_EXPECT_INT(r->element[1], 0);
    H_EXPECT_INT(r->element[2], 1);
    freeReplyObject(r);

    /* one master without it: no longer "exists" through the proxy */
    master_flush_scripts(&t, t.nmasters - 1);
    r = h_cmd(p, "SCRIPT EXISTS %s", sha);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    H_EXPECT_INT(r->element[0], 0);
    freeReplyObject(r);

    /* a script that does not compile: the masters' error */
    r = h_cmd(p, "SCRIPT LOAD %s", "return (");
    H_EXPECT_ERR(r, "ERR Error compiling script");
    freeReplyObject(r);

    /* SCRIPT FLUSH through the proxy: gone everywhere, and EVALSHA now
     * gets NOSCRIPT as from one server */
    proxy_load(p, body, sha);
    H_OK(p, "SCRIPT FLUSH ASYNC");
    for (int m = 0; m < t.nmasters; m++)
        ck_assert_msg(master_has(&t, m, sha) == 0, "master %d still has the script", m);
    r = h_cmd(p, "EVALSHA %s 0", sha);
    H_EXPECT_ERR(r, "NOSCRIPT");
    freeReplyObject(r);
    r = h_cmd(p, "SCRIPT FLUSH BOGUS");
    H_EXPECT_ERR(r, "ERR");
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/* SHA1 of body as a node computes it (SCRIPT LOAD on master m directly). */
static void node_sha(const struct h_topo *t, int m, const char *body, char *sha)
{
    redisContext *c = h_connect_node(&t->masters[m]);
    redisReply *r = h_cmd(c, "SCRIPT LOAD %s", body);
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    memcpy(sha, r->str, 41);
    freeReplyObject(r);
    redisFree(c);
}

/* A master loses its scripts while the proxy's connection to it has run
 * them already (flushed on that node only): the EVALSHA meets NOSCRIPT, and
 * the proxy loads the body there and resends it. EVALSHA and EVALSHA_RO
 * still answer, the body is back on that master, and a write ran once. */
START_TEST(test_evalsha_recovered_after_flush_on_one_master)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    redisReply *r;
    char body[256], ro_body[256], sha[41], ro_sha[41], key[128], prefix[128];

    h_topo_load(&t);
    unique_body(body, sizeof(body), "incr", "return redis.call('INCR', KEYS[1])");
    unique_body(ro_body, sizeof(ro_body), "get", "return redis.call('GET', KEYS[1])");
    proxy_load(p, body, sha);
    node_sha(&t, 0, ro_body, ro_sha);
    for (int i = 0; i < 40; i++)            /* Redis takes SHAs in any case */
        if (ro_sha[i] >= 'a' && ro_sha[i] <= 'f')
            ro_sha[i] = (char)(ro_sha[i] - 'a' + 'A');
    H_FMT(prefix, sizeof(prefix), "%s:recover", h_prefix());
    for (int m = 0; m < t.nmasters; m++) {
        h_key_on_master(&t, m, prefix, 0, key, sizeof(key));
        r = h_cmd(p, "EVAL %s 1 %s", ro_body, key);  /* the proxy sees this body in an EVAL */
        H_EXPECT_NIL(r);
        freeReplyObject(r);
        r = h_cmd(p, "EVALSHA %s 1 %s", sha, key);     /* the connection runs it once */
        H_EXPECT_INT(r, 1);
        freeReplyObject(r);
        r = h_cmd(p, "EVALSHA_RO %s 1 %s", ro_sha, key);
        H_EXPECT_BULK(r, "1");
        freeReplyObject(r);
        master_flush_scripts(&t, m);
        ck_assert_int_eq(master_has(&t, m, sha), 0);
        r = h_cmd(p, "EVALSHA %s 1 %s", sha, key);
        H_EXPECT_INT(r, 2);                     /* ran exactly once more */
        freeReplyObject(r);
        ck_assert_int_eq(master_has(&t, m, sha), 1);
        r = h_cmd(p, "EVALSHA_RO %s 1 %s", ro_sha, key);
        H_EXPECT_BULK(r, "2");
        freeReplyObject(r);
        r = h_cmd(p, "GET %s", key);
        H_EXPECT_BULK(r, "2");
        freeReplyObject(r);
    }
    /* a SHA the proxy never saw: NOSCRIPT, as one server answers */
    r = h_cmd(p, "EVALSHA %s 0", "ffffffffffffffffffffffffffffffffffffffff");
    H_EXPECT_ERR(r, "NOSCRIPT No matching script");
    freeReplyObject(r);
    r = h_cmd(p, "EVALSHA %s 0", "not-a-sha");
    H_EXPECT_ERR(r, "NOSCRIPT");
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/* Masters without the script (as a new master after a failover), and a
 * pipeline of EVALSHAs each followed by a write of the same key: the proxy
 * loads the body on each connection before its first EVALSHA of it, so
 * nothing meets NOSCRIPT and every command runs once, in the client's order. */
START_TEST(test_evalsha_recovery_pipelined)
{
    enum { N = 30 };
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    char body[256], sha[41], keys[N][128], prefix[128];

    h_topo_load(&t);
    unique_body(body, sizeof(body), "pipe", "return redis.call('INCRBY', KEYS[1], ARGV[1])");
    proxy_load(p, body, sha);
    for (int m = 0; m < t.nmasters; m++)
        master_flush_scripts(&t, m);
    H_FMT(prefix, sizeof(prefix), "%s:rpipe", h_prefix());
    for (int i = 0; i < N; i++) {
        h_key_on_master(&t, i % t.nmasters, prefix, i / t.nmasters, keys[i], sizeof(keys[i]));
        redisAppendCommand(p, "EVALSHA %s 1 %s %d", sha, keys[i], i + 1);
        redisAppendCommand(p, "INCR %s", keys[i]);
    }
    for (int i = 0; i < N; i++) {
        redisReply *r = h_get_reply(p);
        H_EXPECT_INT(r, i + 1);
        freeReplyObject(r);
        r = h_get_reply(p);
        H_EXPECT_INT(r, i + 2);
        freeReplyObject(r);
    }
    redisFree(p);
}
END_TEST

/* FUNCTION LOAD reaches every master; FCALL runs by its keys on each; LIST
 * answers from one; DELETE removes it everywhere. */
START_TEST(test_function_load_fcall_delete)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    redisReply *r;
    char lib[64], code[512], fn[64], key[128], prefix[128];

    h_topo_load(&t);
    H_FMT(lib, sizeof(lib), "tp%d", (int)getpid());
    H_FMT(fn, sizeof(fn), "tp%d_bump", (int)getpid());
    H_FMT(code, sizeof(code),
          "#!lua name=%s\n"
          "redis.register_function('%s', function(keys, args) "
          "return redis.call('INCRBY', keys[1], args[1]) end)\n"
          "redis.register_function{function_name='%s_get', callback=function(keys) "
          "return redis.call('GET', keys[1]) end, flags={'no-writes'}}\n",
          lib, fn, fn);
    r = h_cmd(p, "FUNCTION LOAD %s", code);
    H_EXPECT_BULK(r, lib);
    freeReplyObject(r);
    for (int m = 0; m < t.nmasters; m++) {
        redisContext *c = h_connect_node(&t.masters[m]);
        r = h_cmd(c, "FUNCTION LIST LIBRARYNAME %s", lib);
        H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
        ck_assert_msg(r->elements == 1, "master %d does not have the library", m);
        freeReplyObject(r);
        redisFree(c);
    }
    r = h_cmd(p, "FUNCTION LOAD %s", code);         /* exists: the masters say so */
    H_EXPECT_ERR(r, "ERR Library");
    freeReplyObject(r);

    H_FMT(prefix, sizeof(prefix), "%s:fcall", h_prefix());
    for (int m = 0; m < t.nmasters; m++) {
        h_key_on_master(&t, m, prefix, 0, key, sizeof(key));
        r = h_cmd(p, "FCALL %s 1 %s 5", fn, key);
        H_EXPECT_INT(r, 5);
        freeReplyObject(r);
        r = h_cmd(p, "FCALL_RO %s_get 1 %s", fn, key);
        H_EXPECT_BULK(r, "5");
        freeReplyObject(r);
    }
    r = h_cmd(p, "FUNCTION LIST LIBRARYNAME %s", lib);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 1);
    freeReplyObject(r);
    r = h_cmd(p, "FUNCTION STATS");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    freeReplyObject(r);

    r = h_cmd(p, "FUNCTION DELETE %s", lib);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    for (int m = 0; m < t.nmasters; m++) {
        redisContext *c = h_connect_node(&t.masters[m]);
        r = h_cmd(c, "FUNCTION LIST LIBRARYNAME %s", lib);
        ck_assert_msg(r->elements == 0, "master %d still has the library", m);
        freeReplyObject(r);
        redisFree(c);
    }
    r = h_cmd(p, "FCALL %s 1 %s 5", fn, key);
    H_EXPECT_ERR(r, "ERR Function not found");
    freeReplyObject(r);
    r = h_cmd(p, "SCRIPT DEBUG YES");
    H_EXPECT_ERR(r, "ERR 'script|debug' is refused");
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/* SCRIPT KILL reaches the master whose script is busy, on a connection of
 * its own; the script's caller gets Redis's error; nothing busy: NOTBUSY.
 * (busy-reply-threshold is lowered on the masters for the test.) */
static void masters_busy_threshold(const struct h_topo *t, const char *ms)
{
    for (int m = 0; m < t->nmasters; m++) {
        redisContext *c = h_connect_node(&t->masters[m]);
        /* a script killed a moment ago may still be ending: BUSY until then */
        for (long long deadline = h_now_ms() + 5000;; h_sleep_ms(20)) {
            redisReply *r = h_cmd(c, "CONFIG SET busy-reply-threshold %s", ms);
            int busy = r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSY", 4) == 0;
            if (!busy || h_now_ms() > deadline) {
                H_EXPECT_STATUS(r, "OK");
                freeReplyObject(r);
                break;
            }
            freeReplyObject(r);
        }
        redisFree(c);
    }
}

START_TEST(test_script_kill)
{
    struct h_topo t;
    struct h_proxy px;
    redisReply *r;
    char spin[256];

    h_topo_load(&t);
    h_proxy_start(&px, NULL);
    redisContext *a = h_connect_extra(&px), *b = h_connect_extra(&px);
    r = h_cmd(b, "SCRIPT KILL");
    H_EXPECT_ERR(r, "NOTBUSY");
    freeReplyObject(r);

    masters_busy_threshold(&t, "100");
    unique_body(spin, sizeof(spin), "spin", "local i = 0 while true do i = i + 1 end");
    redisAppendCommand(a, "EVAL %s 0", spin);
    redisBufferWrite(a, &(int){ 0 });
    /* NOTBUSY until the script runs (a loaded machine may take a while) */
    long long deadline = h_now_ms() + 10000;
    for (;;) {
        h_sleep_ms(100);
        r = h_cmd(b, "SCRIPT KILL");
        if (r->type != REDIS_REPLY_ERROR || strncmp(r->str, "NOTBUSY", 7) != 0 ||
            h_now_ms() > deadline)
            break;
        freeReplyObject(r);
    }
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    r = h_get_reply(a);                 /* the script has ended */
    H_EXPECT_ERR(r, "ERR Script killed by user with SCRIPT KILL");
    freeReplyObject(r);
    masters_busy_threshold(&t, "5000");
    r = h_cmd(a, "PING");
    H_EXPECT_STATUS(r, "PONG");
    freeReplyObject(r);
    redisFree(a);
    redisFree(b);
    h_proxy_stop(&px);
}
END_TEST

/* Redis's own "test function kill" (unit/functions) through the proxy: a
 * function spins on a master whose busy-reply-threshold is 10 ms; PING from
 * another client answers BUSY, as one busy server does, FUNCTION KILL stops
 * it (its caller gets Redis's error), and PING answers PONG again. */
START_TEST(test_ping_busy_function_kill)
{
    struct h_topo t;
    struct h_proxy px;
    redisReply *r;
    char lib[64], code[256];

    h_topo_load(&t);
    h_proxy_start(&px, NULL);
    redisContext *a = h_connect_extra(&px), *b = h_connect_extra(&px);
    H_FMT(lib, sizeof(lib), "tp%dspin", (int)getpid());
    H_FMT(code, sizeof(code), "#!lua name=%s\nredis.register_function('%s', function() "
          "local a = 1 while true do a = a + 1 end end)", lib, lib);
    r = h_cmd(b, "FUNCTION LOAD REPLACE %s", code);
    H_EXPECT_BULK(r, lib);
    freeReplyObject(r);
    masters_busy_threshold(&t, "10");
    redisAppendCommand(a, "FCALL %s 0", lib);
    redisBufferWrite(a, &(int){ 0 });
    h_sleep_ms(200);
    H_ERR(b, "BUSY", "PING");
    H_OK(b, "FUNCTION KILL");
    r = h_get_reply(a);
    H_EXPECT_ERR(r, "ERR Script killed by user with");  /* Redis 7.0 says SCRIPT KILL */
    freeReplyObject(r);
    h_sleep_ms(200);
    H_STATUS(b, "PONG", "PING");
    r = h_cmd(b, "PING hello");
    H_EXPECT_BULK(r, "hello");
    freeReplyObject(r);
    masters_busy_threshold(&t, "5000");
    r = h_cmd(b, "FUNCTION DELETE %s", lib);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    redisFree(a);
    redisFree(b);
    h_proxy_stop(&px);
}
END_TEST

/* A script body (unique_body's) that runs `seconds` and answers "done". */
static void timed_body(char *buf, size_t size, const char *tag, int seconds)
{
    char lua[160];
    H_FMT(lua, sizeof lua, "local t = redis.call('TIME')[1] + %d "
          "while tonumber(redis.call('TIME')[1]) < t do end return 'done'", seconds);
    unique_body(buf, size, tag, lua);
}

/* A script that runs 8 s, past busy-reply-threshold (Redis's 5000 ms, as
 * long as the proxy's node-timeout-ms), answers its client as one server
 * does: its node answers nobody until the threshold, then BUSY to the
 * proxy's probe, which shows it alive. Another client's command behind it
 * on the same connection waits for it and then runs; nothing fails as
 * "may have run". */
START_TEST(test_slow_script_answers)
{
    static const char *const one_thread[] = { "--threads", "1", NULL };
    struct h_topo t;
    struct h_proxy px;
    char body[256], key[128];
    redisReply *r;

    h_topo_load(&t);
    masters_busy_threshold(&t, "5000");
    h_proxy_start(&px, one_thread);
    redisContext *a = h_connect_extra(&px), *b = h_connect_extra(&px);
    h_key_on_master(&t, 0, h_prefix(), 9, key, sizeof key);
    H_OK(b, "SET %s before", key);
    long long lost = h_info_field(b, "lost_replies");
    timed_body(body, sizeof body, "slow", 8);
    redisAppendCommand(a, "EVAL %s 1 %s", body, key);
    redisBufferWrite(a, &(int){ 0 });
    h_sleep_ms(300);
    r = h_cmd(b, "GET %s", key);        /* behind the script, on its connection */
    H_EXPECT_BULK(r, "before");
    freeReplyObject(r);
    r = h_get_reply(a);
    H_EXPECT_BULK(r, "done");
    freeReplyObject(r);
    ck_assert_int_eq(h_info_field(b, "lost_replies"), lost);
    redisFree(a);
    redisFree(b);
    h_proxy_stop(&px);
}
END_TEST

/* A restricted user's script runs on connections of its own (as that
 * user's node user): a slow one is waited for there too. The node's
 * busy-reply-threshold is 200 ms and the proxy's node-timeout-ms 1000, so
 * a 3-second script is silent past the timeout, and alive by its BUSY. */
START_TEST(test_restricted_users_slow_script_answers)
{
    static const char *const args[] = { "--threads", "1", "--node-timeout-ms", "1000",
                                        "--user", "erin", "erin-secret", "~*", "&*",
                                        "allcommands", "-@dangerous", NULL };
    struct h_topo t;
    struct h_proxy px;
    char body[256], key[128];
    redisReply *r;

    h_topo_load(&t);
    masters_busy_threshold(&t, "200");
    h_proxy_start(&px, args);
    redisContext *a = h_connect_extra(&px);
    H_OK(a, "AUTH erin erin-secret");
    h_key_on_master(&t, 0, h_prefix(), 11, key, sizeof key);
    timed_body(body, sizeof body, "slow-user", 3);
    r = h_cmd(a, "EVAL %s 1 %s", body, key);
    H_EXPECT_BULK(r, "done");
    freeReplyObject(r);
    masters_busy_threshold(&t, "5000");
    redisFree(a);
    h_proxy_stop(&px);
}
END_TEST

/* slow-command-timeout-ms bounds the wait behind a script whose node
 * answers BUSY (busy-reply-threshold lowered: at once): its client gets the
 * error that says so, as "may have run"; SCRIPT KILL through the proxy
 * stops the script, and the master serves again. */
START_TEST(test_slow_command_timeout_bounds_a_busy_script)
{
    static const char *const args[] = { "--threads", "1", "--slow-command-timeout-ms", "1500",
                                        NULL };
    struct h_topo t;
    struct h_proxy px;
    char body[256], key[128];
    redisReply *r;

    h_topo_load(&t);
    masters_busy_threshold(&t, "200");
    h_proxy_start(&px, args);
    redisContext *a = h_connect_extra(&px), *b = h_connect_extra(&px);
    h_key_on_master(&t, 0, h_prefix(), 10, key, sizeof key);
    unique_body(body, sizeof body, "spin-bounded", "local i = 0 while true do i = i + 1 end");
    long long t0 = h_now_ms();
    r = h_cmd(a, "EVAL %s 1 %s", body, key);
    H_EXPECT_ERR(r, "ERR node ");
    ck_assert_msg(strstr(r->str, "slow-command-timeout-ms") && strstr(r->str, "may have run"),
                  "error: %s", r->str);
    freeReplyObject(r);
    ck_assert_msg(h_now_ms() - t0 >= 1400, "answered after %lld ms", h_now_ms() - t0);
    r = h_cmd(b, "SCRIPT KILL");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    masters_busy_threshold(&t, "5000");
    H_OK(a, "SET %s after", key);
    redisFree(a);
    redisFree(b);
    h_proxy_stop(&px);
}
END_TEST

/* script-map: a legacy script that touches an undeclared key (refused by a
 * cluster) is replaced by its cluster-aware version read at start, in EVAL,
 * EVALSHA, SCRIPT LOAD and SCRIPT EXISTS. */
START_TEST(test_script_map)
{
    static const char legacy[] =
        "redis.call('INCR', 'legacy-global-calls') return redis.call('INCR', KEYS[1])";
    static const char aware[] = "return redis.call('INCR', KEYS[1])";
    struct h_topo t;
    struct h_proxy px;
    redisReply *r;
    char path[512], legacy_sha[41], key[128], prefix[128];
    FILE *f;

    h_topo_load(&t);
    node_sha(&t, 0, legacy, legacy_sha);
    H_FMT(path, sizeof(path), "%s/script-map-%d.lua", h_env("TAGPROXY_TEST_DIR"), (int)getpid());
    f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(aware, f);
    fclose(f);
    const char *args[] = { "--script-map", legacy_sha, path, NULL };
    h_proxy_start(&px, args);
    redisContext *p = h_connect_extra(&px), *shared = h_connect_proxy();

    /* a key in another slot than the undeclared one: the legacy script
     * fails on a cluster, the mapped one runs */
    H_FMT(prefix, sizeof(prefix), "%s:map", h_prefix());
    int other = (h_topo_owner(&t, h_slot("legacy-global-calls")) + 1) % t.nmasters;
    h_key_on_master(&t, other, prefix, 0, key, sizeof(key));
    r = h_cmd(shared, "EVAL %s 1 %s", legacy, key);
    H_EXPECT_ERR(r, "ERR Script attempted to access a non local key");
    freeReplyObject(r);
    r = h_cmd(p, "EVAL %s 1 %s", legacy, key);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    r = h_cmd(p, "EVALSHA %s 1 %s", legacy_sha, key);    /* recovered: never loaded */
    H_EXPECT_INT(r, 2);
    freeReplyObject(r);
    r = h_cmd(p, "SCRIPT LOAD %s", legacy);
    H_EXPECT_BULK(r, legacy_sha);
    freeReplyObject(r);
    r = h_cmd(p, "SCRIPT EXISTS %s", legacy_sha);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    H_EXPECT_INT(r->element[0], 1);
    freeReplyObject(r);
    r = h_cmd(p, "EVALSHA_RO %s 1 %s", legacy_sha, key);    /* the aware one writes */
    H_EXPECT_ERR(r, "ERR Write commands are not allowed from read-only scripts");
    freeReplyObject(r);
    redisContext *c = h_connect_owner(&t, "legacy-global-calls");
    r = h_cmd(c, "EXISTS legacy-global-calls");
    H_EXPECT_INT(r, 0);
    freeReplyObject(r);
    redisFree(c);
    redisFree(p);
    redisFree(shared);
    h_proxy_stop(&px);
    unlink(path);
}
END_TEST

/* An unreadable script-map file stops the start, naming where and why. */
START_TEST(test_script_map_unreadable)
{
    struct h_proxy px;
    char seed[128], buf[2048];
    int status;

    h_seed(seed, sizeof(seed));
    h_proxy_place(&px);
    H_FMT(px.log, sizeof(px.log), "%s/proxy-map-%d.log", h_env("TAGPROXY_TEST_DIR"), px.addr.port);
    const char *args[] = { "--script-map", "0123456789abcdef0123456789abcdef01234567",
                           "/nonexistent/legacy.lua", NULL };
    h_proxy_launch(&px, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    ck_assert_int_eq(waitpid(px.pid, &status, 0), px.pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0, "the proxy started");
    FILE *f = fopen(px.log, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    ck_assert_msg(strstr(buf, "argv --script-map: 'script-map' cannot read '/nonexistent/legacy.lua'"),
                  "log: %s", buf);
}
END_TEST

/* Bodies are shared by the workers: a proxy with 4 threads, the script
 * loaded through one connection, every master flushed directly, then 16
 * connections (spread over the workers by SO_REUSEPORT) call EVALSHA on
 * keys of every master: each is answered, and each ran once. */
START_TEST(test_bodies_shared_by_workers)
{
    enum { NCONN = 16 };
    struct h_topo t;
    struct h_proxy px;
    redisContext *c[NCONN];
    char body[256], sha[41], key[128], prefix[128];
    const char *args[] = { "--threads", "4", NULL };

    h_topo_load(&t);
    h_proxy_start(&px, args);
    redisContext *loader = h_connect_extra(&px);
    unique_body(body, sizeof(body), "workers", "return redis.call('INCR', KEYS[1])");
    proxy_load(loader, body, sha);
    redisFree(loader);
    for (int m = 0; m < t.nmasters; m++)
        master_flush_scripts(&t, m);
    H_FMT(prefix, sizeof(prefix), "%s:workers", h_prefix());
    for (int i = 0; i < NCONN; i++)
        c[i] = h_connect_extra(&px);
    for (int round = 1; round <= 2; round++)
        for (int i = 0; i < NCONN; i++) {
            h_key_on_master(&t, i % t.nmasters, prefix, i, key, sizeof(key));
            redisReply *r = h_cmd(c[i], "EVALSHA %s 1 %s", sha, key);
            H_EXPECT_INT(r, round);
            freeReplyObject(r);
        }
    for (int i = 0; i < NCONN; i++)
        redisFree(c[i]);
    h_proxy_stop(&px);
}
END_TEST

/* cmd on master m directly, expecting OK. */
static void master_ok(const struct h_topo *t, int m, const char *fmt, const char *a,
                      const char *b)
{
    redisContext *c = h_connect_node(&t->masters[m]);
    redisReply *r = h_cmd(c, fmt, a, b);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    redisFree(c);
}

/* A slot half-way through a migration (IMPORTING on the target, MIGRATING
 * on the source, one of its two keys moved): scripts on the moved key are
 * answered ASK by the source and run on the target with ASKING; an EVALSHA
 * whose body the target lacks is loaded there ahead of ASKING (which must
 * stay right before its command), and after a NOSCRIPT from the target it
 * is loaded and resent through the same ASK. The slot is then left as found. */
START_TEST(test_scripts_follow_ask)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    redisReply *r;
    char tag[64], kept[128], moved[128], slot[16], body[256], sha[41];

    h_topo_load(&t);
    H_FMT(tag, sizeof(tag), "%s:ask", h_prefix());
    H_FMT(kept, sizeof(kept), "{%s}:kept", tag);
    H_FMT(moved, sizeof(moved), "{%s}:moved", tag);
    H_FMT(slot, sizeof(slot), "%d", h_slot(kept));
    int src = h_topo_owner(&t, h_slot(kept)), dst = (src + 1) % t.nmasters;
    unique_body(body, sizeof(body), "ask", "return redis.call('INCR', KEYS[1])");
    proxy_load(p, body, sha);
    H_OK(p, "SET %s 10", kept);
    H_OK(p, "SET %s 20", moved);

    master_ok(&t, dst, "CLUSTER SETSLOT %s IMPORTING %s", slot, t.master_id[src]);
    master_ok(&t, src, "CLUSTER SETSLOT %s MIGRATING %s", slot, t.master_id[dst]);
    redisContext *s = h_connect_node(&t.masters[src]);
    char port[16];
    H_FMT(port, sizeof(port), "%d", t.masters[dst].port);
    const char *mig[] = { "MIGRATE", t.masters[dst].host, port, "", "0", "5000", "KEYS", moved };
    r = h_cmd_argv(s, 8, mig);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    master_flush_scripts(&t, dst);

    r = h_cmd(p, "EVAL %s 1 %s", "return redis.call('GET', KEYS[1])", moved);
    H_EXPECT_BULK(r, "20");
    freeReplyObject(r);
    r = h_cmd(p, "EVALSHA %s 1 %s", sha, moved);       /* loaded ahead, then ASKING */
    H_EXPECT_INT(r, 21);
    freeReplyObject(r);
    r = h_cmd(p, "EVALSHA %s 1 %s", sha, kept);        /* still on the source */
    H_EXPECT_INT(r, 11);
    freeReplyObject(r);
    master_flush_scripts(&t, dst);                     /* behind the proxy's back */
    r = h_cmd(p, "EVALSHA %s 1 %s", sha, moved);       /* NOSCRIPT, loaded, resent */
    H_EXPECT_INT(r, 22);
    freeReplyObject(r);

    /* back as found: the moved key read and removed on the target (with
     * ASKING, as the slot is importing there), the slot stable on both */
    redisContext *d = h_connect_node(&t.masters[dst]);
    redisAppendCommand(d, "ASKING");
    redisAppendCommand(d, "GET %s", moved);
    redisAppendCommand(d, "ASKING");
    redisAppendCommand(d, "DEL %s", moved);
    r = h_get_reply(d);
    freeReplyObject(r);
    r = h_get_reply(d);
    H_EXPECT_BULK(r, "22");
    freeReplyObject(r);
    r = h_get_reply(d);
    freeReplyObject(r);
    r = h_get_reply(d);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    master_ok(&t, src, "CLUSTER SETSLOT %s STABLE", slot, NULL);
    master_ok(&t, dst, "CLUSTER SETSLOT %s STABLE", slot, NULL);
    redisFree(s);
    redisFree(d);
    redisFree(p);
}
END_TEST

static Suite *scripts_cache_suite(void)
{
    Suite *s = suite_create("scripts_cache");
    TCase *tc = tcase_create("scripts_cache");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_script_load_exists_flush_everywhere);
    tcase_add_test(tc, test_evalsha_recovered_after_flush_on_one_master);
    tcase_add_test(tc, test_evalsha_recovery_pipelined);
    tcase_add_test(tc, test_bodies_shared_by_workers);
    tcase_add_test(tc, test_function_load_fcall_delete);
    tcase_add_test(tc, test_scripts_follow_ask);
    tcase_add_test(tc, test_script_kill);
    tcase_add_test(tc, test_slow_script_answers);
    tcase_add_test(tc, test_ping_busy_function_kill);
    tcase_add_test(tc, test_restricted_users_slow_script_answers);
    tcase_add_test(tc, test_slow_command_timeout_bounds_a_busy_script);
    tcase_add_test(tc, test_script_map);
    tcase_add_test(tc, test_script_map_unreadable);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(scripts_cache_suite());
}
