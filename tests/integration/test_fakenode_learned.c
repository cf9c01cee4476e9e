/*
 * Commands learned from the cluster (cluster/learned.h), with fake nodes
 * that report commands newer than any server here in their COMMAND reply,
 * as the servers' command docs describe them: Redis 7.4's HEXPIRE (one key
 * at argument 1), a multi_shard command keyed as MSET (split by slot, its
 * parts' replies merged by response_policy:all_succeeded), Redis 8.4's
 * MSETEX (multi_shard with numkeys: split, each part its own count), an
 * all_shards agg_sum command (every master's reply added), one whose key
 * spec is incomplete, and built-in commands the cluster describes
 * otherwise: ZRANK with Redis 7.2's arity (-3: WITHSCORE), SINTERSTORE with
 * 7.2's key spec flags (OW destination), WATCH with Valkey 8's no-multi.
 *
 * Two masters, A (slots 0-8191) and B (8192-16383). A runs "7.4.1" and
 * knows them all; B runs "7.0.15" and knows none until it is upgraded (its
 * INFO says 7.4.1 and its COMMAND holds them), as in a rolling upgrade:
 * until then the proxy refuses HEXPIRE saying only one master of two knows
 * it; then it forwards it by its key to the master that owns the key, and
 * the reply comes back as the node wrote it. Users' rules apply to a learned
 * command by its ACL categories and its keys; the incomplete one is refused
 * with its reason; ZRANK ... WITHSCORE passes the cluster's arity; COMMAND
 * DOCS is the node's own. With a key layout, a learned command's keys are
 * rewritten as a built-in command's.
 */
#include "harness.h"
#include "fakenode.h"

static struct {
    struct fake_node a, b;
    struct h_proxy proxy;
} W;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_b_upgraded;
static int g_hexpire_runs, g_hexpire_on_b, g_mshard_parts;
static char g_msetex_a[256], g_msetex_b[256];      /* the last MSETEX each master ran */
static char g_hexpire_key[256];                     /* the last HEXPIRE's key */

#define H_INT_IS(c, n, ...) do { \
        redisReply *r_ = h_cmd((c), __VA_ARGS__); \
        H_EXPECT_INT(r_, (n)); \
        freeReplyObject(r_); \
    } while (0)

/* A key spec: keys from argument index to lastkey (0: that one; -1: the
 * last argument). */
#define RANGE_SPEC(index, lastkey) \
    "*6\r\n$5\r\nflags\r\n*2\r\n+RW\r\n+update\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n" \
    "$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:" index "\r\n$9\r\nfind_keys\r\n*4\r\n" \
    "$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:" lastkey "\r\n" \
    "$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n"

/* A key spec of flags (a RESP set of 2), keys from argument index to
 * lastkey. */
#define RANGE_SPEC_FLAGS(flag1, flag2, index, lastkey) \
    "*6\r\n$5\r\nflags\r\n*2\r\n+" flag1 "\r\n+" flag2 "\r\n$12\r\nbegin_search\r\n*4\r\n" \
    "$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:" index "\r\n" \
    "$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n" \
    "$7\r\nlastkey\r\n:" lastkey "\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n"

/* What a 7.4 node's COMMAND says of them (only these: the rest is built in). */
static const char newer_commands[] =
    "*8\r\n"
    /* SINTERSTORE as Redis 7.2 describes it: its destination OW, not RW */
    "*10\r\n$11\r\nsinterstore\r\n:-3\r\n*2\r\n+write\r\n+denyoom\r\n:1\r\n:-1\r\n:1\r\n"
    "*3\r\n+@write\r\n+@set\r\n+@slow\r\n*0\r\n*2\r\n"
    RANGE_SPEC_FLAGS("OW", "update", "1", "0") RANGE_SPEC_FLAGS("RO", "access", "2", "-1") "*0\r\n"
    /* WATCH as Valkey 8 describes it: no-multi */
    "*10\r\n$5\r\nwatch\r\n:-2\r\n*6\r\n+noscript\r\n+loading\r\n+stale\r\n+fast\r\n"
    "+no_multi\r\n+allow_busy\r\n:1\r\n:-1\r\n:1\r\n*2\r\n+@fast\r\n+@transaction\r\n*0\r\n"
    "*1\r\n*6\r\n$5\r\nflags\r\n*1\r\n+RO\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n"
    "$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n"
    "$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:-1\r\n$7\r\n"
    "keystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n"
    "*10\r\n$7\r\nhexpire\r\n:-6\r\n*3\r\n+write\r\n+denyoom\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"
    "*3\r\n+@write\r\n+@hash\r\n+@fast\r\n*0\r\n*1\r\n" RANGE_SPEC("1", "0") "*0\r\n"
    "*10\r\n$9\r\nmshardcmd\r\n:-2\r\n*1\r\n+write\r\n:1\r\n:-1\r\n:1\r\n*1\r\n+@write\r\n"
    "*2\r\n$26\r\nrequest_policy:multi_shard\r\n$29\r\nresponse_policy:all_succeeded\r\n"
    "*1\r\n" RANGE_SPEC("1", "-1") "*0\r\n"
    "*10\r\n$9\r\nincompcmd\r\n:-2\r\n*1\r\n+write\r\n:0\r\n:0\r\n:0\r\n*1\r\n+@write\r\n*0\r\n"
    "*1\r\n*6\r\n$5\r\nflags\r\n*3\r\n+RW\r\n+update\r\n+incomplete\r\n$12\r\nbegin_search\r\n"
    "*4\r\n$4\r\ntype\r\n$7\r\nunknown\r\n$4\r\nspec\r\n*0\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\n"
    "type\r\n$7\r\nunknown\r\n$4\r\nspec\r\n*0\r\n*0\r\n"
    "*10\r\n$5\r\nzrank\r\n:-3\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"
    "*3\r\n+@read\r\n+@sortedset\r\n+@fast\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n*2\r\n+RO\r\n"
    "+access\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n"
    "$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n"
    "*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n"
    /* MSETEX numkeys key value ... as Redis 8.4 describes it: multi_shard, keynum */
    "*10\r\n$6\r\nmsetex\r\n:-4\r\n*2\r\n+write\r\n+denyoom\r\n:0\r\n:0\r\n:0\r\n"
    "*2\r\n+@write\r\n+@string\r\n"
    "*2\r\n$26\r\nrequest_policy:multi_shard\r\n$29\r\nresponse_policy:all_succeeded\r\n"
    "*1\r\n*6\r\n$5\r\nflags\r\n*2\r\n+OW\r\n+update\r\n$12\r\nbegin_search\r\n*4\r\n"
    "$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\n"
    "find_keys\r\n*4\r\n$4\r\ntype\r\n$6\r\nkeynum\r\n$4\r\nspec\r\n*6\r\n$9\r\n"
    "keynumidx\r\n:0\r\n$8\r\nfirstkey\r\n:1\r\n$7\r\nkeystep\r\n:2\r\n*0\r\n"
    /* a keyless all_shards command whose replies add up */
    "*10\r\n$8\r\ncountall\r\n:1\r\n*1\r\n+readonly\r\n:0\r\n:0\r\n:0\r\n*1\r\n+@read\r\n"
    "*2\r\n$25\r\nrequest_policy:all_shards\r\n$23\r\nresponse_policy:agg_sum\r\n*0\r\n*0\r\n";

static int knows_newer(struct fake_node *f)
{
    pthread_mutex_lock(&g_mu);
    int yes = f == &W.a || g_b_upgraded;
    pthread_mutex_unlock(&g_mu);
    return yes;
}

static int write_info(struct fn_conn *c)
{
    char text[128], bulk[200];
    snprintf(text, sizeof text, "# Server\r\nredis_version:%s\r\nredis_mode:cluster\r\n",
             knows_newer(c->f) ? "7.4.1" : "7.0.15");
    int n = snprintf(bulk, sizeof bulk, "$%zu\r\n%s\r\n", strlen(text), text);
    return fn_write(c, bulk, (size_t)n);
}

static int learned_filter(struct fn_conn *c, int *rc)
{
    const char *cmd = c->argv[0];
    if (strcasecmp(cmd, "COMMAND") == 0 && c->argc == 1) {
        *rc = knows_newer(c->f) ? fn_write(c, newer_commands, sizeof newer_commands - 1)
                                : fn_writes(c, "*0\r\n");
    } else if (strcasecmp(cmd, "INFO") == 0) {
        *rc = write_info(c);
    } else if (strcasecmp(cmd, "HEXPIRE") == 0) {
        pthread_mutex_lock(&g_mu);
        g_hexpire_runs++;
        g_hexpire_on_b += c->f == &W.b;
        snprintf(g_hexpire_key, sizeof g_hexpire_key, "%s", c->argv[1]);
        pthread_mutex_unlock(&g_mu);
        *rc = fn_writes(c, "*1\r\n:1\r\n");
    } else if (strcasecmp(cmd, "MSHARDCMD") == 0) {
        pthread_mutex_lock(&g_mu);
        g_mshard_parts++;
        pthread_mutex_unlock(&g_mu);
        *rc = fn_writes(c, "+OK\r\n");
    } else if (strcasecmp(cmd, "COUNTALL") == 0) {
        *rc = fn_writes(c, c->f == &W.a ? ":3\r\n" : ":4\r\n");
    } else if (strcasecmp(cmd, "MSETEX") == 0) {
        /* as Redis 8.4: numkeys must count the pairs; the part's words kept */
        long n = strtol(c->argv[1], NULL, 10);
        if (n < 1 || 2 + 2 * n > c->argc) {
            *rc = fn_writes(c, "-ERR invalid numkeys value\r\n");
            return 1;
        }
        pthread_mutex_lock(&g_mu);
        char *at = c->f == &W.a ? g_msetex_a : g_msetex_b;
        at[0] = '\0';
        for (int i = 0; i < c->argc; i++)
            snprintf(at + strlen(at), 256 - strlen(at), "%s%s", i ? " " : "", c->argv[i]);
        pthread_mutex_unlock(&g_mu);
        *rc = fn_writes(c, ":1\r\n");
    } else if (strcasecmp(cmd, "GET") == 0 && c->argc == 2 && strstr(c->argv[1], ":{meta}:layout")) {
        *rc = fn_writes(c, "$10\r\ncluster:v1\r\n");     /* the layout's marker: served */
    } else if (strcasecmp(cmd, "SINTERSTORE") == 0) {
        *rc = fn_writes(c, ":0\r\n");
    } else if (strcasecmp(cmd, "COMMAND") == 0 && c->argc >= 2 &&
               strcasecmp(c->argv[1], "DOCS") == 0) {
        *rc = fn_writes(c, "*2\r\n$7\r\nhexpire\r\n*2\r\n$7\r\nsummary\r\n$14\r\nthe node's own\r\n");
    } else if (strcasecmp(cmd, "ZRANK") == 0) {
        *rc = fn_writes(c, "*2\r\n:0\r\n$1\r\n1\r\n");
    } else {
        return 0;
    }
    return 1;
}

static void world_with(const char *layout_prefix);

static void world(void)
{
    world_with(NULL);
}

/* The two masters and a proxy in front; with layout_prefix, the proxy
 * serves conf/layouts/botmesh-v1.rules for that prefix. */
static void world_with(const char *layout_prefix)
{
    fn_start(&W.a, 'A', NULL, 0);
    fn_start(&W.b, 'B', NULL, 0);
    W.a.filter = W.b.filter = learned_filter;
    const int ranges[2][3] = { { 0, 8191, W.a.port }, { 8192, H_SLOTS - 1, W.b.port } };
    fn_set_slots(&W.a, 2, ranges);
    fn_set_slots(&W.b, 2, ranges);
    const char *args[] = { "--topology-refresh-ms", "200",
                           "--user", "hashes", "pw", "+@hash", "~*",
                           "--user", "nohash", "pw", "+@all", "-@hash", "~*",
                           "--user", "otherkeys", "pw", "+@all", "~other:*",
                           "--user", "writer", "pw", "+@all", "%W~dst:*", "%R~src:*",
                           layout_prefix ? "--layout-rules" : NULL,
                           "conf/layouts/botmesh-v1.rules", "--layout-prefix", layout_prefix,
                           NULL };
    fn_proxy_start(&W.proxy, "learned", W.a.port, args);
}

static void teardown(void)
{
    h_proxy_stop(&W.proxy);
    fn_stop(&W.a);
    fn_stop(&W.b);
    g_b_upgraded = 0;
    g_hexpire_runs = g_hexpire_on_b = g_mshard_parts = 0;
    g_msetex_a[0] = g_msetex_b[0] = '\0';
}

/* The reply to HEXPIRE, once it is not the rolling-upgrade refusal (5 s). */
static redisReply *hexpire_when_served(redisContext *c, const char *key)
{
    for (long long deadline = h_now_ms() + 5000;; h_sleep_ms(100)) {
        redisReply *r = h_cmd(c, "HEXPIRE %s 100 FIELDS 1 f", key);
        if (r->type != REDIS_REPLY_ERROR || h_now_ms() > deadline)
            return r;
        freeReplyObject(r);
    }
}

START_TEST(test_rolling_upgrade_then_served)
{
    char on_b[32];
    world();
    h_tag_for_slot(9000, on_b, sizeof on_b);        /* a key of B's */
    redisContext *c = h_connect_node(&W.proxy.addr);
    H_ERR(c, "ERR 'hexpire' is known to 1 of the cluster's 2 masters", "HEXPIRE %s 100 FIELDS 1 f",
          on_b);
    ck_assert_int_eq(g_hexpire_runs, 0);
    pthread_mutex_lock(&g_mu);
    g_b_upgraded = 1;
    pthread_mutex_unlock(&g_mu);
    redisReply *r = hexpire_when_served(c, on_b);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 1);
    ck_assert_int_eq(r->element[0]->integer, 1);
    freeReplyObject(r);
    pthread_mutex_lock(&g_mu);
    ck_assert_int_eq(g_hexpire_runs, 1);              /* once, on the key's master */
    ck_assert_int_eq(g_hexpire_on_b, 1);
    pthread_mutex_unlock(&g_mu);
    redisFree(c);
}
END_TEST

START_TEST(test_refusals_and_arity)
{
    pthread_mutex_lock(&g_mu);
    g_b_upgraded = 1;
    pthread_mutex_unlock(&g_mu);
    world();
    redisContext *c = h_connect_node(&W.proxy.addr);
    redisReply *r = hexpire_when_served(c, "h");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    /* multi_shard, keys as MSET's: split by slot, all_succeeded */
    char on_a[32], on_b[32];
    h_tag_for_slot(100, on_a, sizeof on_a);
    h_tag_for_slot(9000, on_b, sizeof on_b);
    H_OK(c, "MSHARDCMD %s %s", on_a, on_b);
    pthread_mutex_lock(&g_mu);
    ck_assert_int_eq(g_mshard_parts, 2);
    pthread_mutex_unlock(&g_mu);
    H_INT_IS(c, 7, "COUNTALL");                     /* all_shards, agg_sum: 3 + 4 */
    /* multi_shard with numkeys (MSETEX): each master its keys, counted, and
     * the arguments after them */
    H_INT_IS(c, 1, "MSETEX 3 {%s}x v %s w {%s}y u NX EX 10", on_a, on_b, on_a);
    pthread_mutex_lock(&g_mu);
    char want[256];
    snprintf(want, sizeof want, "MSETEX 2 {%s}x v {%s}y u NX EX 10", on_a, on_a);
    ck_assert_str_eq(g_msetex_a, want);
    snprintf(want, sizeof want, "MSETEX 1 %s w NX EX 10", on_b);
    ck_assert_str_eq(g_msetex_b, want);
    g_msetex_a[0] = g_msetex_b[0] = '\0';
    pthread_mutex_unlock(&g_mu);
    /* a numkeys that counts no pairs there are: whole, to one master, whose error it is */
    H_ERR(c, "ERR invalid numkeys value", "MSETEX 3 %s v", on_a);
    /* the cluster's key specs for a built-in command: SINTERSTORE's
     * destination is OW (a write), so %W~dst:* allows it */
    redisContext *w = h_connect_node(&W.proxy.addr);
    H_OK(w, "AUTH writer pw");
    H_INT_IS(w, 0, "SINTERSTORE dst:{x} src:{x}a src:{x}b");
    H_ERR(w, "NOPERM", "SINTERSTORE src:{x} src:{x}a");
    redisFree(w);
    /* its flags: WATCH no-multi (Valkey 8) refuses it inside MULTI and aborts */
    H_OK(c, "MULTI");
    H_ERR(c, "ERR Command not allowed inside a transaction", "WATCH k");
    H_ERR(c, "EXECABORT", "EXEC");
    /* COMMAND DOCS: the cluster's oldest master's own */
    r = h_cmd(c, "COMMAND DOCS hexpire");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 2);
    ck_assert_str_eq(r->element[1]->element[1]->str, "the node's own");
    freeReplyObject(r);
    H_ERR(c, "ERR 'incompcmd' is known to the cluster but not served through the proxy: its key "
          "specs", "INCOMPCMD a");
    H_ERR(c, "ERR wrong number of arguments for 'hexpire' command", "HEXPIRE h 100");
    r = h_cmd(c, "ZRANK z m WITHSCORE");             /* 7.0's arity is 3 */
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    H_ERR(c, "ERR unknown command 'NOSUCHCMD'", "NOSUCHCMD x");
    r = h_cmd(c, "COMMAND INFO hexpire");             /* the entry the cluster gave */
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 1);
    H_EXPECT_TYPE(r->element[0], REDIS_REPLY_ARRAY);
    ck_assert_str_eq(r->element[0]->element[0]->str, "hexpire");
    ck_assert_int_eq(r->element[0]->element[1]->integer, -6);
    freeReplyObject(r);
    r = h_cmd(c, "COMMAND GETKEYS HEXPIRE hk 100 FIELDS 1 f");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 1);
    ck_assert_str_eq(r->element[0]->str, "hk");
    freeReplyObject(r);
    r = h_cmd(c, "INFO proxy");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    ck_assert_msg(strstr(r->str, "\r\ncommands_learned:5\r\n") &&
                  strstr(r->str, "\r\ncommands_learned_overrides:3\r\n") &&
                  strstr(r->str, "\r\ncommands_learned_refused:1\r\n"), "%s", r->str);
    freeReplyObject(r);
    /* users' rules, by the learned command's categories and its keys */
    redisContext *u = h_connect_node(&W.proxy.addr);
    H_OK(u, "AUTH hashes pw");
    r = h_cmd(u, "HEXPIRE h 100 FIELDS 1 f");              /* +@hash: HEXPIRE is @hash */
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    H_ERR(u, "NOPERM", "COUNTALL");                         /* @read, not @hash */
    H_OK(u, "AUTH nohash pw");
    H_ERR(u, "NOPERM", "HEXPIRE h 100 FIELDS 1 f");         /* +@all -@hash */
    H_INT_IS(u, 7, "COUNTALL");
    H_OK(u, "AUTH otherkeys pw");
    H_ERR(u, "NOPERM", "HEXPIRE h 100 FIELDS 1 f");         /* its key is not other:* */
    r = h_cmd(u, "HEXPIRE other:h 100 FIELDS 1 f");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    redisFree(u);
    redisFree(c);
}
END_TEST

/* The key layout rewrites a learned command's keys, at the positions its
 * key specs give, as a built-in command's. */
START_TEST(test_layout_rewrites_learned_keys)
{
    pthread_mutex_lock(&g_mu);
    g_b_upgraded = 1;
    pthread_mutex_unlock(&g_mu);
    world_with("lrn");
    redisContext *c = h_connect_node(&W.proxy.addr);
    redisReply *r = hexpire_when_served(c, "lrn:lock:door7");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    pthread_mutex_lock(&g_mu);
    ck_assert_str_eq(g_hexpire_key, "lrn:{lk:door7}:l");      /* the lock rule */
    pthread_mutex_unlock(&g_mu);
    redisFree(c);
}
END_TEST

static Suite *learned_suite(void)
{
    Suite *s = suite_create("fakenode_learned");
    TCase *tc = tcase_create("learned");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_rolling_upgrade_then_served);
    tcase_add_test(tc, test_refusals_and_arity);
    tcase_add_test(tc, test_layout_rewrites_learned_keys);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return fn_main(learned_suite, "fakenode-learned-", "fakenode-learned");
}
