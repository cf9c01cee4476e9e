/*
 * `tagproxy migrate` (migrate/copy.h), legacy -> cluster layout, run as
 * users run it:
 *
 *  - in place on a redis-server of the test's own: a dry run changes
 *    nothing; the run copies every family as copy.h says (turn counters
 *    not, keeps not in place), counts the orphan item, writes the marker
 *    last; a second run copies nothing (the target's keys win);
 *  - into the test cluster, then read through a layout proxy for the
 *    prefix as a bot reads it: records, TTLs, the listing from the
 *    indexes, the message log and its items; a fence the cluster held
 *    higher is not lowered; schedules keep the higher fencing token
 *    without --overwrite (a source's deleted marker replaces a lower
 *    one's schedule), and with it the source's record keeps the target's
 *    higher token; keeps copied into the other server; turn counters
 *    not; then rolled back from the cluster into a new server: the
 *    original legacy keys, as they were;
 *  - a coordinator heartbeat refuses the run (exit 1), --allow-live runs;
 *    a pending turn ticket on a separate target refuses it too;
 *  - --delete-source removes the legacy keys the cluster layout holds;
 *  - the rollback, in place: with --mirror no the legacy keys win; with
 *    the mirror, deleted records pruned, a schedule left as a deleted
 *    marker with its token, the fence kept, the marker removed;
 *  - --include copies those families and leaves the marker unset;
 *    --report writes the counts as JSON;
 *  - SIGKILL at three points of a copy of the generated keyspace of every
 *    family (legacykeys.h), each run again, then a whole run: the target
 *    equals an uninterrupted run's, value for value and TTL for TTL;
 *  - all of the above but the SIGKILLs again, with botmesh-v1's rules
 *    under other family and capture names: the same guarantees, as the
 *    copy reads each family's semantics from its copy and live clauses.
 */
#include "legacykeys.h"

/* The rules file and the prefix of its family names, for the shell of
 * each run: botmesh-v1's, or the same rules under other names. */
#define RULES "\"$MIGRATE_RULES\""
#define FAM "${MIGRATE_FAM}"

static struct h_proxy ref;
static char rules_path[512];
static const char *fam = "";

static void setup_rules(void)
{
    H_FMT(rules_path, sizeof rules_path, "conf/layouts/botmesh-v1.rules");
    setenv("MIGRATE_RULES", rules_path, 1);
    setenv("MIGRATE_FAM", fam, 1);
    h_ref_start(&ref, "redis-migrate-copy", NULL);
}

static void setup(void)
{
    fam = "";
    setup_rules();
}

/* botmesh-v1 with every family renamed (r-chat, r-msg-log, ...) and the
 * captures the copy used to know by name renamed too (chat: room,
 * member: post, part: stage): the copy reads its semantics from the
 * rules' copy and live clauses, never from a name. */
static void setup_renamed(void)
{
    char out[256];
    fam = "r-";
    setup_rules();
    H_FMT(rules_path, sizeof rules_path, "%s/renamed-%ld.rules", h_env("TAGPROXY_TEST_DIR"),
          (long)getpid());
    ck_assert_int_eq(h_shell(out, sizeof out, "sed -E 's/^rule +([^ ]+)/rule r-\\1/; "
                             "s/copy log /copy log r-/; s/<chat/<room/g; s/<member>/<post>/g; "
                             "s/<part/<stage/g' conf/layouts/botmesh-v1.rules > '%s'; "
                             "grep -c '^rule r-' '%s'", rules_path, rules_path), 0);
    ck_assert_int_eq(atoi(out), 12);
    setenv("MIGRATE_RULES", rules_path, 1);
}

static void teardown(void)
{
    h_proxy_stop(&ref);
    if (fam[0])
        unlink(rules_path);
}

#define migrate(out, size, ...) h_tagproxy(out, size, "migrate " __VA_ARGS__)

static void cmd_ok(redisContext *c, const char *fmt, const char *p, const char *a)
{
    char line[512];
    H_FMT(line, sizeof line, fmt, p, a);
    redisReply *r;
    int argc = 0;
    char *argv[16], *save = NULL;
    for (char *w = strtok_r(line, " ", &save); w && argc < 16; w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    r = redisCommandArgv(c, argc, (const char **)argv, NULL);
    ck_assert_msg(r && r->type != REDIS_REPLY_ERROR, "%s: %s", line, r ? r->str : c->errstr);
    freeReplyObject(r);
}

/* A legacy keyspace of prefix p: 20 chats (every fourth with a TTL), a
 * contact, a checkpoint with a TTL, user data, a schedule (token 5), a
 * fence (7), a leadership term (3) and leader, a message log of two items
 * and one member naming another chat's item, an orphan item, turn
 * counters, a conversation. */
static void small_keyspace(redisContext *c, const char *p)
{
    for (int i = 0; i < 20; i++) {
        char n[16];
        H_FMT(n, sizeof n, "%d", i);
        cmd_ok(c, i % 4 ? "SET %s:chat:c%s chat" : "SET %s:chat:c%s chat PX 600000", p, n);
    }
    cmd_ok(c, "SET %s:contact:%s u", p, "tg:42");
    cmd_ok(c, "SET %s:checkpoint:%s state PX 600000", p, "k1");
    cmd_ok(c, "SET %s:user:%s v", p, "u1:ns:key");
    cmd_ok(c, "HSET %s:schedule:%s at 0900 token 5", p, "daily");
    cmd_ok(c, "SET %s:lock:%s 7", p, "x:fence");
    cmd_ok(c, "SET %s:lock:%s holder", p, "x");
    cmd_ok(c, "SET %s:co:leader:%s 3", p, "main:term");
    cmd_ok(c, "SET %s:co:leader:%s r1", p, "main");
    cmd_ok(c, "ZADD %s:msgs:%s 1 m1 2 m2 3 other:m3", p, "c1");
    cmd_ok(c, "SET %s:msg:c1:%s hi", p, "m1");
    cmd_ok(c, "SET %s:msg:c1:%s yo", p, "m2");
    cmd_ok(c, "SET %s:msg:c1:%s lost", p, "orphan");
    cmd_ok(c, "SET %s:co:turn:%s 4", p, "c1:seq");
    cmd_ok(c, "SET %s:conv:%s z", p, "1");
}

/* cmd (one %s: the prefix p, a word of its own) answers type, with the
 * integer n or the bulk want. */
static void expect_reply(redisContext *c, const char *cmd, const char *p, int type, long long n,
                         const char *want)
{
    char line[512];
    H_FMT(line, sizeof line, cmd, p);
    char *argv[4], *save = NULL;
    int argc = 0;
    for (char *w = strtok_r(line, " ", &save); w && argc < 4; w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    redisReply *r = redisCommandArgv(c, argc, (const char **)argv, NULL);
    ck_assert_msg(r && r->type == type, "%s: %s", cmd, r ? h_show(r) : c->errstr);
    if (want)
        ck_assert_msg(strcmp(r->str, want) == 0, "%s: '%s', want '%s'", cmd, r->str, want);
    else
        ck_assert_msg(r->integer == n, "%s: %lld, want %lld", cmd, r->integer, n);
    freeReplyObject(r);
}

START_TEST(test_in_place)
{
    char out[8192], want[256];
    redisContext *c = h_connect_node(&ref.addr);
    small_keyspace(c, "bot");
    long long before = dbsize(c);
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --prefix bot "
                             "--layout-rules " RULES " --dry-run", ref.addr.port), 0);
    ck_assert_msg(strstr(out, "dry run (nothing written)") != NULL, "%s", out);
    ck_assert_int_eq(dbsize(c), before);
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --prefix bot "
                             "--layout-rules " RULES, ref.addr.port), 0);
    /* 20 chats, contact, checkpoint, user data, schedule, fence, lock,
     * term, leader, the log and its 2 items: not the turn, not the keep */
    ck_assert_msg(strstr(out, "copied 31, skipped 0 (the target's key won), orphans 1 ") != NULL,
                  "%s", out);
    ck_assert_msg(strstr(out, "1 log members naming another chat's item") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "layout marker bot:{meta}:layout: written") != NULL, "%s", out);
    ck_assert_int_eq(migrate(out, sizeof out, "inspect --source redis://127.0.0.1:%d --prefix bot "
                             "--layout-rules " RULES, ref.addr.port), 0);
    ck_assert_msg(strstr(out, "keys with a TTL: 12\n") != NULL, "%s", out);   /* 6 and 6 */
    H_FMT(want, sizeof want, "layout marker bot:{meta}:layout: cluster:v1\n");
    ck_assert_msg(strstr(out, want) != NULL, "%s", out);
    long long after = dbsize(c);
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --prefix bot "
                             "--layout-rules " RULES, ref.addr.port), 0);
    ck_assert_msg(strstr(out, "copied 0, skipped 31") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "already cluster:v1") != NULL, "%s", out);
    ck_assert_int_eq(dbsize(c), after);
    redisFree(c);
}
END_TEST

/* The cluster layout of prefix p rolled back from the cluster (every
 * master) into a new server: every legacy key of the original (ref) comes
 * back as it was, value and TTL, but the fence and the schedule whose
 * token the cluster held higher (9), the turn counter and the orphan item
 * (never copied), which are not. */
static void rolled_back_equal(const char *p, const char *seed)
{
    struct h_proxy back;
    char out[8192], key[256];
    h_ref_start(&back, "redis-migrate-back", NULL);
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://%s --target redis://127.0.0.1:%d "
                             "--prefix %s --layout-rules " RULES " --direction cluster-to-legacy",
                             seed, back.addr.port, p), 0);
    redisContext *o = h_connect_node(&ref.addr), *n = h_connect_node(&back.addr);
    H_FMT(key, sizeof key, "%s:*", p);
    redisReply *keys = h_cmd(o, "KEYS %s", key);
    int compared = 0;
    for (size_t k = 0; k < keys->elements; k++) {
        const char *name = keys->element[k]->str;
        redisReply *a = h_cmd(o, "DUMP %s", name), *b = h_cmd(n, "DUMP %s", name);
        redisReply *ta = h_cmd(o, "PTTL %s", name), *tb = h_cmd(n, "PTTL %s", name);
        if (strstr(name, ":schedule:late")) {
            redisReply *g = h_cmd(n, "HGET %s token", name);
            ck_assert_msg(g->type == REDIS_REPLY_STRING && strcmp(g->str, "9") == 0, "%s: %s",
                          name, h_show(g));
            freeReplyObject(g);
        } else if (strstr(name, ":co:turn:") || strstr(name, ":orphan") || strstr(name, ":fence")) {
            H_FMT(key, sizeof key, "%s", strstr(name, ":fence") ? "9" : "");
            redisReply *g = h_cmd(n, "GET %s", name);
            ck_assert_msg(key[0] ? g->type == REDIS_REPLY_STRING && strcmp(g->str, key) == 0
                                 : g->type == REDIS_REPLY_NIL, "%s: %s", name, h_show(g));
            freeReplyObject(g);
        } else {
            ck_assert_msg(b->type == REDIS_REPLY_STRING && a->len == b->len &&
                          memcmp(a->str, b->str, a->len) == 0, "%s did not come back as it was",
                          name);
            ck_assert_msg((ta->integer < 0) == (tb->integer < 0) &&
                          llabs(ta->integer - tb->integer) < 60000, "%s: PTTL %lld against %lld",
                          name, ta->integer, tb->integer);
            compared++;
        }
        freeReplyObject(a);
        freeReplyObject(b);
        freeReplyObject(ta);
        freeReplyObject(tb);
    }
    freeReplyObject(keys);
    ck_assert_int_eq(compared, 32);     /* the 36 keys but those four */
    redisFree(o);
    redisFree(n);
    h_proxy_stop(&back);
}

START_TEST(test_into_the_cluster)
{
    struct h_topo t;
    struct h_proxy px;
    char p[64], out[8192], seed[128], name[256];
    H_FMT(p, sizeof p, "mc%ld%lld", (long)getpid(), h_now_ms() % 1000000);
    redisContext *c = h_connect_node(&ref.addr);
    small_keyspace(c, p);
    redisFree(c);
    h_topo_load(&t);
    /* the source: a deleted schedule marker (token 8), a schedule (4) */
    c = h_connect_node(&ref.addr);
    cmd_ok(c, "HSET %s:schedule:%s token 8 deleted 1", p, "gone");
    cmd_ok(c, "HSET %s:schedule:%s at 1100 token 4", p, "late");
    redisFree(c);
    /* the cluster already holds a higher fence (9), schedules with lower
     * tokens (daily 3, gone 6) and one with a higher token (late 9) */
    static const char *const held[][2] = {
        { "%s:{lk:x}:f", "SET %s 9" }, { "%s:{sc:30}:r:daily", "HSET %s at 0800 token 3" },
        { "%s:{sc:14}:r:gone", "HSET %s at 1000 token 6" },
        { "%s:{sc:1}:r:late", "HSET %s at 1200 token 9" },
    };
    for (size_t i = 0; i < sizeof held / sizeof *held; i++) {
        H_FMT(name, sizeof name, held[i][0], p);
        redisContext *o = h_connect_owner(&t, name);
        cmd_ok(o, held[i][1], name, "");
        redisFree(o);
    }
    h_seed(seed, sizeof seed);
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --target redis://%s "
                             "--prefix %s --layout-rules " RULES, ref.addr.port, seed, p), 0);
    ck_assert_msg(strstr(out, "layout marker") && strstr(out, ": written"), "%s", out);

    const char *args[] = { "--layout-rules", rules_path, "--layout-prefix", p, NULL };
    h_proxy_start(&px, args);
    redisContext *b = h_connect_extra(&px);
    expect_reply(b, "GET %s:chat:c1", p, REDIS_REPLY_STRING, 0, "chat");
    expect_reply(b, "GET %s:lock:x:fence", p, REDIS_REPLY_STRING, 0, "9");
    expect_reply(b, "GET %s:co:leader:main:term", p, REDIS_REPLY_STRING, 0, "3");
    /* the higher token wins, without --overwrite, a deleted marker too */
    expect_reply(b, "HGET %s:schedule:daily token", p, REDIS_REPLY_STRING, 0, "5");
    expect_reply(b, "HGET %s:schedule:daily at", p, REDIS_REPLY_STRING, 0, "0900");
    expect_reply(b, "HGET %s:schedule:gone deleted", p, REDIS_REPLY_STRING, 0, "1");
    expect_reply(b, "HEXISTS %s:schedule:gone at", p, REDIS_REPLY_INTEGER, 0, NULL);
    expect_reply(b, "HGET %s:schedule:late at", p, REDIS_REPLY_STRING, 0, "1200");
    expect_reply(b, "ZCARD %s:msgs:c1", p, REDIS_REPLY_INTEGER, 3, NULL);
    expect_reply(b, "GET %s:msg:c1:m2", p, REDIS_REPLY_STRING, 0, "yo");
    expect_reply(b, "EXISTS %s:msg:c1:orphan", p, REDIS_REPLY_INTEGER, 0, NULL);
    expect_reply(b, "EXISTS %s:co:turn:c1:seq", p, REDIS_REPLY_INTEGER, 0, NULL);
    expect_reply(b, "GET %s:conv:1", p, REDIS_REPLY_STRING, 0, "z");
    redisReply *r;
    H_FMT(name, sizeof name, "%s:chat:c4", p);
    r = h_cmd(b, "PTTL %s", name);
    ck_assert_msg(r->type == REDIS_REPLY_INTEGER && r->integer > 500000, "PTTL %s", h_show(r));
    freeReplyObject(r);
    H_FMT(name, sizeof name, "%s:chat:*", p);
    r = h_cmd(b, "KEYS %s", name);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 20);
    freeReplyObject(r);
    /* --overwrite: the source's record, keeping the target's higher token */
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --target redis://%s "
                             "--prefix %s --layout-rules " RULES " --overwrite --include "
                             FAM "schedule", ref.addr.port, seed, p), 0);
    expect_reply(b, "HGET %s:schedule:late at", p, REDIS_REPLY_STRING, 0, "1100");
    expect_reply(b, "HGET %s:schedule:late token", p, REDIS_REPLY_STRING, 0, "9");
    redisFree(b);
    h_proxy_stop(&px);
    rolled_back_equal(p, seed);
}
END_TEST

START_TEST(test_live_bots_refuse)
{
    char out[8192];
    redisContext *c = h_connect_node(&ref.addr);
    small_keyspace(c, "bot");
    cmd_ok(c, "SET %s:co:rep:%s alive PX 60000", "bot", "replica-1");
    long long before = dbsize(c);
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --prefix bot "
                             "--layout-rules " RULES, ref.addr.port), 1);
    ck_assert_msg(strstr(out, "still running: 1 coordinator heartbeats") != NULL, "%s", out);
    ck_assert_int_eq(dbsize(c), before);
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --prefix bot "
                             "--layout-rules " RULES " --allow-live", ref.addr.port), 0);
    ck_assert_int_gt(dbsize(c), before);
    /* a separate target: a pending turn ticket there (tix past serving) */
    struct h_proxy target;
    h_ref_start(&target, "redis-migrate-live-target", NULL);
    redisContext *t = h_connect_node(&target.addr);
    cmd_ok(t, "SET %s:co:turn:%s 4", "bot", "c9:tix");
    cmd_ok(t, "SET %s:co:turn:%s 2", "bot", "c9:serving");
    freeReplyObject(h_cmd(c, "DEL bot:co:rep:replica-1"));
    long long on_target = dbsize(t);
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --target "
                             "redis://127.0.0.1:%d --prefix bot --layout-rules " RULES,
                             ref.addr.port, target.addr.port), 1);
    ck_assert_msg(strstr(out, "the target shows bots of bot still running: 0 coordinator "
                              "heartbeats (bot:co:rep:*), 1 pending turn tickets") != NULL,
                  "%s", out);
    ck_assert_int_eq(dbsize(t), on_target);
    redisFree(t);
    h_proxy_stop(&target);
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --prefix bot "
                             "--mirror no", ref.addr.port), 2);
    ck_assert_msg(strstr(out, "--mirror goes with --direction cluster-to-legacy") != NULL, "%s",
                  out);
    redisFree(c);
}
END_TEST

/* --delete-source in place: the legacy keys the cluster layout now holds
 * are gone; turn counters (not copied), the orphan item and the keeps
 * stay. */
START_TEST(test_delete_source)
{
    char out[8192];
    redisContext *c = h_connect_node(&ref.addr);
    small_keyspace(c, "bot");
    redisFree(c);
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --prefix bot "
                             "--layout-rules " RULES " --delete-source", ref.addr.port), 0);
    ck_assert_msg(strstr(out, "source keys deleted: 31\n") != NULL, "%s", out);
    ck_assert_int_eq(migrate(out, sizeof out, "inspect --source redis://127.0.0.1:%d --prefix bot "
                             "--layout-rules " RULES, ref.addr.port), 0);
    long want[][3] = { { 0, 20, 0 }, { 1, 2, 0 }, { 1, 0, 0 }, { 0, 1, 0 } };
    const char *family[] = { "chat", "msg-item", "turn", "msg-log" };
    for (int i = 0; i < 4; i++) {
        char head[64];
        long got[3] = { -1, -1, -1 };
        H_FMT(head, sizeof head, "\n%s%s ", fam, family[i]);
        const char *line = strstr(out, head);
        ck_assert_msg(line && sscanf(line + strlen(head), "%ld %ld %ld", &got[0], &got[1],
                                     &got[2]) == 3, "%s in:\n%s", family[i], out);
        ck_assert_msg(got[0] == want[i][0] && got[1] == want[i][1], "%s: %ld legacy, %ld cluster\n%s",
                      family[i], got[0], got[1], out);
    }
    ck_assert_msg(strstr(out, "\np:conv:*                              1") != NULL, "%s", out);
}
END_TEST

/* The rollback, in place, mirroring: after the forward copy, the bot
 * deletes a chat and the schedule and changes a chat in the cluster
 * layout; the legacy records follow (the orphan item, never copied, is
 * pruned too), the schedule becomes a deleted marker keeping its token,
 * the fence stays. --mirror no keeps the legacy keys that exist; each
 * whole rollback removes the marker. */
START_TEST(test_rollback_mirror)
{
    char out[8192];
    redisContext *c = h_connect_node(&ref.addr);
    small_keyspace(c, "bot");
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --prefix bot "
                             "--layout-rules " RULES, ref.addr.port), 0);
    /* cluster names, as the layout writes them (bucket of c1: 25, c2: 0) */
    freeReplyObject(h_cmd(c, "DEL bot:{ch:25}:r:c1 bot:{sc:30}:r:daily"));
    freeReplyObject(h_cmd(c, "SET bot:{ch:0}:r:c2 newer"));
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --prefix bot "
                             "--layout-rules " RULES " --direction cluster-to-legacy --mirror no",
                             ref.addr.port), 0);
    ck_assert_msg(strstr(out, "layout marker bot:{meta}:layout: removed"), "%s", out);
    expect_reply(c, "GET %s:chat:c2", "bot", REDIS_REPLY_STRING, 0, "chat");
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --prefix bot "
                             "--layout-rules " RULES " --direction cluster-to-legacy",
                             ref.addr.port), 0);
    /* c1, the schedule (a marker now), the orphan item (never copied) */
    int pruned = strstr(out, "legacy records pruned (the source no longer holds them): 3\n") &&
                 strstr(out, "layout marker bot:{meta}:layout: absent");
    for (char *q = out; !pruned && *q; q++)
        *q = *q == '\n' ? '|' : *q;
    ck_assert_msg(pruned, "%s", out);
    expect_reply(c, "EXISTS %s:chat:c1", "bot", REDIS_REPLY_INTEGER, 0, NULL);
    expect_reply(c, "EXISTS %s:msg:c1:orphan", "bot", REDIS_REPLY_INTEGER, 0, NULL);
    expect_reply(c, "GET %s:chat:c2", "bot", REDIS_REPLY_STRING, 0, "newer");
    expect_reply(c, "HGET %s:schedule:daily token", "bot", REDIS_REPLY_STRING, 0, "5");
    expect_reply(c, "HGET %s:schedule:daily deleted", "bot", REDIS_REPLY_STRING, 0, "1");
    expect_reply(c, "HEXISTS %s:schedule:daily at", "bot", REDIS_REPLY_INTEGER, 0, NULL);
    expect_reply(c, "GET %s:lock:x:fence", "bot", REDIS_REPLY_STRING, 0, "7");
    expect_reply(c, "EXISTS %s:{meta}:layout", "bot", REDIS_REPLY_INTEGER, 0, NULL);
    redisFree(c);
}
END_TEST

/* SIGKILL at three points of a copy, each run again from where the last
 * stopped, then a whole run: the target equals an uninterrupted run's. */
START_TEST(test_killed_and_resumed)
{
    struct h_proxy whole, resumed;
    char out[8192];
    redisContext *c = h_connect_node(&ref.addr);
    legacy_keyspace(c, "bot");
    redisFree(c);
    h_ref_start(&whole, "redis-migrate-whole", NULL);
    h_ref_start(&resumed, "redis-migrate-resumed", NULL);
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --target "
                             "redis://127.0.0.1:%d --prefix bot --layout-rules " RULES,
                             ref.addr.port, whole.addr.port), 0);
    static const char *const after[] = { "0.3", "0.8", "1.5" };
    int killed = 0;
    for (int i = 0; i < 3; i++) {
        int rc = h_shell(out, sizeof out, "timeout -s KILL %s '%s' migrate --source "
                         "redis://127.0.0.1:%d --target redis://127.0.0.1:%d --prefix bot "
                         "--layout-rules " RULES " >/dev/null 2>&1; echo $?", after[i],
                         h_env("TAGPROXY_TEST_BIN"), ref.addr.port, resumed.addr.port);
        ck_assert_int_eq(rc, 0);
        killed += atoi(out) == 137;
    }
    fprintf(stderr, "migrate: %d of 3 runs killed before they ended\n", killed);
    ck_assert_msg(killed >= 1, "no run was killed before it ended: the test is void");
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --target "
                             "redis://127.0.0.1:%d --prefix bot --layout-rules " RULES,
                             ref.addr.port, resumed.addr.port), 0);
    ck_assert_msg(strstr(out, ": written") || strstr(out, "already cluster:v1"), "%s", out);
    expect_same_keyspace(&whole.addr, &resumed.addr);
    h_proxy_stop(&whole);
    h_proxy_stop(&resumed);
}
END_TEST

/* --include copies those families only and leaves the marker unset;
 * --report writes the counts as JSON. */
START_TEST(test_include_and_report)
{
    char out[8192], path[512], json[4096];
    redisContext *c = h_connect_node(&ref.addr);
    small_keyspace(c, "bot");
    redisFree(c);
    H_FMT(path, sizeof path, "%s/migrate-report-%ld.json", h_env("TAGPROXY_TEST_DIR"),
          (long)getpid());
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --prefix bot "
                             "--layout-rules " RULES " --include " FAM "chat," FAM "msg-log --report %s",
                             ref.addr.port, path), 0);
    ck_assert_msg(strstr(out, "copied 23, skipped 0") != NULL, "%s", out);   /* 20 + log + 2 */
    ck_assert_msg(strstr(out, "not written: --include") != NULL, "%s", out);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    json[fread(json, 1, sizeof json - 1, f)] = '\0';
    fclose(f);
    unlink(path);
    char chats[64];
    H_FMT(chats, sizeof chats, "\"%schat\": {\"copied\": 20, \"skipped\": 0}", fam);
    ck_assert_msg(strstr(json, "\"copied\": 23, \"skipped\": 0, \"orphans\": 1") != NULL &&
                  strstr(json, chats) != NULL &&
                  strstr(json, "\"layoutMarker\": \"not written") != NULL, "%s", json);
}
END_TEST

static Suite *migrate_copy_suite(void)
{
    Suite *s = suite_create("migrate_copy");
    TCase *t = tcase_create("copy");
    tcase_set_timeout(t, 120);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_in_place);
    tcase_add_test(t, test_into_the_cluster);
    tcase_add_test(t, test_live_bots_refuse);
    tcase_add_test(t, test_include_and_report);
    tcase_add_test(t, test_delete_source);
    tcase_add_test(t, test_rollback_mirror);
    tcase_add_test(t, test_killed_and_resumed);
    suite_add_tcase(s, t);
    TCase *renamed = tcase_create("renamed families");
    tcase_set_timeout(renamed, 120);
    tcase_add_checked_fixture(renamed, setup_renamed, teardown);
    tcase_add_test(renamed, test_in_place);
    tcase_add_test(renamed, test_into_the_cluster);
    tcase_add_test(renamed, test_live_bots_refuse);
    tcase_add_test(renamed, test_include_and_report);
    tcase_add_test(renamed, test_delete_source);
    tcase_add_test(renamed, test_rollback_mirror);
    suite_add_tcase(s, renamed);
    return s;
}

int main(void)
{
    return h_run(migrate_copy_suite());
}
