/*
 * A bot session written only in legacy names, run twice: through a proxy
 * with layout-rules conf/layouts/botmesh-v1.rules and a run-unique
 * layout-prefix P, and directly against a single standalone redis-server
 * the test starts (--save '' --appendonly no). Every reply must be the same
 * (listings compared as sets: their order is the server's). It covers every
 * family of LAYOUT.md: the message log and items; chats, contacts,
 * checkpoints (with TTLs, one expiring during the session), schedules; user
 * data with TTLs; locks and fences; turn counters; leaderships; the
 * unchanged families; and multi-key commands, a script's KEYS[], replies
 * that name keys (XREAD, XREADGROUP, LMPOP, ZMPOP, BLPOP, BRPOP, BLMPOP,
 * BZPOPMIN, BZPOPMAX, BZMPOP, served at once or timed out), KEYS and SCAN,
 * each alone and inside MULTI/EXEC. Whole SCANs are walked with each call
 * alone and each inside MULTI/EXEC. A second test blocks each of those
 * pops and reads on empty keys and feeds them from another client.
 *
 * Afterwards the cluster (read with SCAN on every master directly) holds
 * exactly the cluster names of the keys the reference holds, plus the
 * layout's own keys (indexes, the marker), and no legacy name.
 *
 * Each test runs twice, each time with a fresh proxy, prefix and
 * reference: in RESP2 (the session through hiredis, replies compared by
 * value; SCANs and woken pops on raw connections, byte for byte), and in
 * RESP3 (HELLO 3 on raw connections, every reply compared byte for byte but
 * the listings, compared as sets of their elements): maps from HGETALL and
 * XREAD with the key names mapped back, doubles, `_` nulls.
 */
#include <stdbool.h>

#include "harness.h"
#include "proxy/core/rewrite.h"
#include "keylayout/layout.h"
#include "keylayout/layoutload.h"

#define RULES "conf/layouts/botmesh-v1.rules"

static struct h_proxy proxy, ref;
static char prefix[64];

/* Far enough ahead for the whole run; fixed so both servers agree. */
#define EXAT "4102444800"        /* 2100-01-01 */
#define PXAT "4102444800123"

/*
 * The session, one command a line, arguments separated by '|', $P the
 * prefix. A line starting with "~" has a reply whose listings (arrays of
 * strings) are in the server's order (compared sorted), at any depth, as
 * in EXEC's array; "SLEEP|ms" waits.
 */
static const char *const session[] = {
    /* messages: a chat's log and its items */
    "ZADD|$P:msgs:tg:42|1|m1|2|m2|3|m3",
    "SET|$P:msg:tg:42:m1|hello",
    "SET|$P:msg:tg:42:m2|{\"text\":\"hi there\"}",
    "HSET|$P:msg:tg:42:m3|text|yo|from|u1",
    "ZRANGE|$P:msgs:tg:42|0|-1|WITHSCORES",
    "MGET|$P:msg:tg:42:m1|$P:msg:tg:42:m2|$P:msg:tg:42:nope",
    "HGETALL|$P:msg:tg:42:m3",
    "ZREM|$P:msgs:tg:42|m2",
    "DEL|$P:msg:tg:42:m2",
    "ZCARD|$P:msgs:tg:42",
    /* chats, contacts: indexed records */
    "HSET|$P:chat:tg:42|title|Team|members|3",
    "HSET|$P:chat:tg:7|title|Other",
    "HSET|$P:chat:chat-1|title|x",
    "HGET|$P:chat:tg:42|title",
    "HINCRBY|$P:chat:tg:42|members|2",
    "EXISTS|$P:chat:tg:42|$P:chat:tg:7|$P:chat:none",
    "SET|$P:contact:u:1|{\"name\":\"Ann\"}",
    "SET|$P:contact:u:2|{\"name\":\"Bob\"}",
    "GETDEL|$P:contact:u:2",
    "GET|$P:contact:u:2",
    "~KEYS|$P:chat:*",
    "~KEYS|$P:contact:*",
    /* checkpoints with TTLs; one expires during the session */
    "SET|$P:checkpoint:run-1|state1|EXAT|" EXAT,
    "SET|$P:checkpoint:run-2|state2",
    "SET|$P:checkpoint:short|gone|PX|50",
    "EXPIRETIME|$P:checkpoint:run-1",
    "TTL|$P:checkpoint:run-2",
    "PEXPIREAT|$P:checkpoint:run-2|" PXAT,
    "PEXPIRETIME|$P:checkpoint:run-2",
    "PERSIST|$P:checkpoint:run-1",
    "TTL|$P:checkpoint:run-1",
    "SLEEP|120",
    "GET|$P:checkpoint:short",
    "~KEYS|$P:checkpoint:*",
    /* schedules */
    "HSET|$P:schedule:daily|at|0900|token|5",
    "HINCRBY|$P:schedule:daily|token|1",
    "HMGET|$P:schedule:daily|at|token|none",
    "RENAME|$P:schedule:daily|$P:schedule:daily",
    /* user data with TTLs */
    "SET|$P:user:u1:prefs:lang|en|EXAT|" EXAT,
    "SET|$P:user:u1:prefs:tz|UTC",
    "HSET|$P:user:u1:state:flow:step|n|2",
    "SET|$P:user:u2:prefs:lang|fr",
    "EXPIRETIME|$P:user:u1:prefs:lang",
    "EXPIRE|$P:user:u1:prefs:tz|1000",
    "TTL|$P:user:u1:prefs:tz",
    "MGET|$P:user:u1:prefs:lang|$P:user:u1:prefs:tz|$P:user:u2:prefs:lang",
    "~KEYS|$P:user:u1:*",
    "UNLINK|$P:user:u2:prefs:lang",
    /* locks and fences */
    "SET|$P:lock:job:1|owner-a|NX|PX|30000",
    "SET|$P:lock:job:1|owner-b|NX|PX|30000",
    "GET|$P:lock:job:1",
    "INCR|$P:lock:job:1:fence",
    "INCR|$P:lock:job:1:fence",
    "EVAL|if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) "
    "else return 0 end|1|$P:lock:job:1|owner-a",
    "GET|$P:lock:job:1",
    "GET|$P:lock:job:1:fence",
    /* turn counters: one chat's counters share a slot */
    "INCR|$P:co:turn:tg:42:seq",
    "INCR|$P:co:turn:tg:42:tix",
    "INCR|$P:co:turn:tg:42:tix",
    "SET|$P:co:turn:tg:42:serving|1",
    "SET|$P:co:turn:tg:42:owner|w1",
    "MSET|$P:co:turn:tg:42:last|9|$P:co:turn:tg:42:serving|2",
    "MGET|$P:co:turn:tg:42:seq|$P:co:turn:tg:42:tix|$P:co:turn:tg:42:serving|"
    "$P:co:turn:tg:42:owner|$P:co:turn:tg:42:last",
    "RENAME|$P:co:turn:tg:42:owner|$P:co:turn:tg:42:last",
    "EVAL|return redis.call('INCRBY', KEYS[1], ARGV[1]) + redis.call('INCR', KEYS[2])|2|"
    "$P:co:turn:tg:42:seq|$P:co:turn:tg:42:tix|10",
    /* leaderships */
    "SET|$P:co:leader:main|node-1|NX|EXAT|" EXAT,
    "SET|$P:co:leader:main|node-2|NX|EXAT|" EXAT,
    "INCR|$P:co:leader:main:term",
    "GET|$P:co:leader:main",
    "EXPIRETIME|$P:co:leader:main",
    /* the unchanged families */
    "RPUSH|$P:conv:tg:42|a|b|c",
    "LRANGE|$P:conv:tg:42|0|-1",
    "SET|$P:cursor:feed|100",
    "SET|$P:lease:w1|x|EXAT|" EXAT,
    "HSET|$P:co:rep:w1|beat|1",
    "HSET|$P:{durable:orders}:row:1|total|5",
    "HGETALL|$P:{durable:orders}:row:1",
    /* several families at once */
    "MSET|$P:chat:tg:99|c|$P:cursor:feed|101|$P:lock:x|l",
    "MGET|$P:chat:tg:99|$P:cursor:feed|$P:lock:x|$P:msg:tg:42:m1",
    "EXISTS|$P:chat:tg:99|$P:lock:x|$P:co:leader:main|$P:conv:tg:42",
    "DEL|$P:chat:tg:99|$P:lock:x|$P:nothing",
    "TYPE|$P:msgs:tg:42",
    "TYPE|$P:schedule:daily",
    /* replies that name keys: a stream log and an item of one chat (one
     * slot), a chat's turn counters used as lists, an indexed record */
    "XADD|$P:msgs:s1|1-1|f|v1",
    "XADD|$P:msg:s1:side|1-2|f|v2",
    "XREAD|COUNT|10|STREAMS|$P:msgs:s1|$P:msg:s1:side|0|0",
    "XGROUP|CREATE|$P:msgs:s1|g|0",
    "XREADGROUP|GROUP|g|c1|COUNT|5|STREAMS|$P:msgs:s1|>",
    "XREAD|STREAMS|$P:msgs:s1|9-9",
    "RPUSH|$P:co:turn:q1:owner|a|b|c",
    "LMPOP|2|$P:co:turn:q1:last|$P:co:turn:q1:owner|LEFT|COUNT|2",
    "LMPOP|1|$P:co:turn:q1:last|LEFT",
    "ZMPOP|1|$P:msgs:tg:42|MIN",
    "RPUSH|$P:chat:list1|x|y",
    "LMPOP|1|$P:chat:list1|RIGHT",
    "LMPOP|1|$P:chat:list1|RIGHT|COUNT|3",
    "EXISTS|$P:chat:list1",
    /* blocking pops and reads, served at once and timed out (nil) */
    "RPUSH|$P:co:turn:q3:owner|a|b|c|d",
    "BLPOP|$P:co:turn:q3:last|$P:co:turn:q3:owner|0",
    "BRPOP|$P:co:turn:q3:last|$P:co:turn:q3:owner|0",
    "BLMPOP|0|2|$P:co:turn:q3:last|$P:co:turn:q3:owner|LEFT",
    "BLMPOP|0.05|1|$P:co:turn:q3:owner|RIGHT|COUNT|2",
    "BLPOP|$P:co:turn:q3:owner|0.05",
    "BRPOP|$P:co:turn:q3:last|$P:co:turn:q3:owner|0.05",
    "BLMPOP|0.05|1|$P:co:turn:q3:owner|LEFT",
    "ZADD|$P:msgs:z1|1|m1|2|m2|3|m3|4.5|m4",
    "ZADD|$P:msg:z1:side|5|s1",
    "BZPOPMIN|$P:msg:z1:side|$P:msgs:z1|0",
    "BZPOPMAX|$P:msg:z1:side|$P:msgs:z1|0",
    "BZMPOP|0|2|$P:msg:z1:side|$P:msgs:z1|MIN|COUNT|2",
    "BZMPOP|0.05|1|$P:msgs:z1|MAX",
    "BZPOPMIN|$P:msgs:z1|0.05",
    "BZPOPMAX|$P:msg:z1:side|$P:msgs:z1|0.05",
    "BZMPOP|0.05|1|$P:msgs:z1|MIN",
    "ZMPOP|2|$P:msg:z1:side|$P:msgs:z1|MAX",
    "RPUSH|$P:chat:list2|x|y|z",
    "BLPOP|$P:chat:list2|0",
    "BRPOP|$P:chat:list2|0",
    "BLMPOP|0|1|$P:chat:list2|LEFT|COUNT|5",
    "EXISTS|$P:chat:list2",
    "XREAD|BLOCK|0|STREAMS|$P:msgs:s1|$P:msg:s1:side|0|0",
    "XREAD|BLOCK|50|STREAMS|$P:msgs:s1|$",
    "XADD|$P:msgs:s1|2-1|f|v3",
    "XREADGROUP|GROUP|g|c2|BLOCK|0|STREAMS|$P:msgs:s1|>",
    "XREADGROUP|GROUP|g|c2|BLOCK|50|STREAMS|$P:msgs:s1|>",
    /* inside EXEC's array too, the replies that name keys name legacy ones */
    "MULTI",
    "RPUSH|$P:co:turn:q2:owner|a|b|c|d",
    "BLPOP|$P:co:turn:q2:owner|0",
    "LMPOP|1|$P:co:turn:q2:owner|LEFT",
    "BRPOP|$P:co:turn:q2:owner|$P:co:turn:q2:last|0",
    "ZADD|$P:co:turn:q2:seq|1|m1|2|m2",
    "ZMPOP|1|$P:co:turn:q2:seq|MIN",
    "BZPOPMAX|$P:co:turn:q2:seq|0",
    "EXEC",
    "MULTI",
    "RPUSH|$P:co:turn:q4:owner|a|b|c",
    "BLMPOP|0|2|$P:co:turn:q4:last|$P:co:turn:q4:owner|RIGHT|COUNT|2",
    "BLMPOP|0|1|$P:co:turn:q4:last|LEFT",
    "BLPOP|$P:co:turn:q4:last|0",
    "BRPOP|$P:co:turn:q4:owner|0",
    "BRPOP|$P:co:turn:q4:owner|0",
    "ZADD|$P:co:turn:q4:seq|1|m1|2.5|m2|3|m3",
    "BZPOPMIN|$P:co:turn:q4:seq|0",
    "BZMPOP|0|1|$P:co:turn:q4:seq|MAX|COUNT|5",
    "BZPOPMIN|$P:co:turn:q4:seq|0",
    "BZMPOP|0|1|$P:co:turn:q4:seq|MIN",
    "LMPOP|1|$P:co:turn:q4:owner|LEFT",
    "ZMPOP|1|$P:co:turn:q4:seq|MIN",
    "EXEC",
    "MULTI",
    "RPUSH|$P:chat:list3|x|y|z",
    "BLPOP|$P:chat:list3|0",
    "BLMPOP|0|1|$P:chat:list3|RIGHT|COUNT|5",
    "BRPOP|$P:chat:list3|0",
    "EXEC",
    "EXISTS|$P:chat:list3",
    "MULTI",
    "XADD|$P:msgs:s2|1-1|f|v1",
    "XADD|$P:msg:s2:side|1-2|f|v2",
    "XGROUP|CREATE|$P:msgs:s2|g|0",
    "XREAD|COUNT|10|STREAMS|$P:msgs:s2|$P:msg:s2:side|0|0",
    "XREADGROUP|GROUP|g|c1|COUNT|5|STREAMS|$P:msgs:s2|>",
    "XREAD|STREAMS|$P:msgs:s2|9-9",
    "XREAD|BLOCK|0|STREAMS|$P:msgs:s2|$P:msg:s2:side|1-0|1-0",
    "XREADGROUP|GROUP|g|c1|BLOCK|0|STREAMS|$P:msgs:s2|>",
    "XREADGROUP|GROUP|g|c2|STREAMS|$P:msgs:s2|0",
    "EXEC",
    /* listings inside EXEC's array, after the block's writes */
    "MULTI",
    "SET|$P:chat:tg:5|v",
    "GET|$P:chat:tg:5",
    "KEYS|$P:chat:*",
    "KEYS|$P:co:*",
    "KEYS|$P:user:u1:*",
    "KEYS|$P:[lu]*",
    "~EXEC",
    /* listings over everything */
    "~KEYS|$P:*",
    "~KEYS|$P:c*",
    "~KEYS|$P:co:*",
    "~KEYS|$P:[lu]*",
    NULL,
};

/* ---- processes ---- */

static void setup(void)
{
    char seed[128];
    H_FMT(prefix, sizeof prefix, "ses%ld%lld", (long)getpid(), h_now_ms() % 1000000);
    h_ref_start(&ref, "redis-ref", NULL);

    const char *const args[] = { "--layout-rules", RULES, "--layout-prefix", prefix, NULL };
    h_proxy_place(&proxy);
    H_FMT(proxy.log, sizeof proxy.log, "%s/proxy-session-%d.log", h_env("TAGPROXY_TEST_DIR"),
          proxy.addr.port);
    h_seed(seed, sizeof seed);
    h_proxy_launch(&proxy, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    h_spawn_wait(&proxy, h_pings, 20000, "proxy with a layout");
}

static void teardown(void)
{
    h_proxy_stop(&proxy);
    h_proxy_stop(&ref);
}

/* ---- running one line on a connection ---- */

struct line {
    int argc;
    char *argv[32];
    size_t lens[32];
    bool unordered;
    char buf[2048];
};

static void line_parse(const char *text, struct line *l)
{
    memset(l, 0, sizeof *l);
    l->unordered = text[0] == '~';
    if (l->unordered)
        text++;
    size_t n = 0, plen = strlen(prefix);
    for (const char *s = text; *s; s++) {
        if (s[0] == '$' && s[1] == 'P') {
            ck_assert(n + plen < sizeof l->buf);
            memcpy(l->buf + n, prefix, plen);
            n += plen;
            s++;
        } else {
            ck_assert(n + 1 < sizeof l->buf);
            l->buf[n++] = *s == '|' ? '\0' : *s;
        }
    }
    l->buf[n] = '\0';
    for (size_t i = 0; i <= n; i += strlen(l->buf + i) + 1) {
        ck_assert(l->argc < 32);
        l->argv[l->argc] = l->buf + i;
        l->lens[l->argc] = strlen(l->buf + i);
        l->argc++;
    }
}

static int cmp_reply(const void *a, const void *b)
{
    const redisReply *x = *(redisReply *const *)a, *y = *(redisReply *const *)b;
    if (x->type != y->type)
        return x->type - y->type;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = x->str && y->str ? memcmp(x->str, y->str, n) : 0;
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* r is an array of strings: a listing. */
static bool flat_array(const redisReply *r)
{
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_ARRAY)
            return false;
    return true;
}

/* The same reply (listings sorted first when unordered). */
static void expect_same(redisReply *got, redisReply *want, bool unordered, const char *what)
{
    ck_assert_msg(got->type == want->type, "%s: proxy %s, redis-server %s", what,
                  h_type_name(got->type), h_type_name(want->type));
    switch (want->type) {
    case REDIS_REPLY_INTEGER:
        ck_assert_msg(got->integer == want->integer, "%s: proxy %lld, redis-server %lld", what,
                      got->integer, want->integer);
        break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        ck_assert_msg(got->len == want->len && memcmp(got->str, want->str, got->len) == 0,
                      "%s: proxy '%s', redis-server '%s'", what, h_esc(got->str, got->len),
                      h_esc(want->str, want->len));
        break;
    case REDIS_REPLY_ARRAY:
        ck_assert_msg(got->elements == want->elements, "%s: proxy %zu elements, redis-server %zu",
                      what, got->elements, want->elements);
        if (unordered && flat_array(want) && flat_array(got)) {
            qsort(got->element, got->elements, sizeof *got->element, cmp_reply);
            qsort(want->element, want->elements, sizeof *want->element, cmp_reply);
        }
        for (size_t i = 0; i < want->elements; i++)
            expect_same(got->element[i], want->element[i], unordered, what);
        break;
    default:
        break;
    }
}

static void run_session(redisContext *viaproxy, redisContext *direct)
{
    for (int i = 0; session[i]; i++) {
        struct line l;
        line_parse(session[i], &l);
        if (strcmp(l.argv[0], "SLEEP") == 0) {
            h_sleep_ms(atoi(l.argv[1]));    /* a time: past a TTL (PX 50) */
            continue;
        }
        redisReply *got = h_cmd_argv(viaproxy, l.argc, (const char **)l.argv);
        redisReply *want = h_cmd_argv(direct, l.argc, (const char **)l.argv);
        char what[300];
        snprintf(what, sizeof what, "line %d (%.200s)", i, session[i]);
        expect_same(got, want, l.unordered, what);
        freeReplyObject(got);
        freeReplyObject(want);
    }
}

/* A whole SCAN MATCH pattern through c: every name into *names. */
static size_t scan_all(redisContext *c, const char *pattern, char ***names)
{
    char cursor[64] = "0";
    size_t n = 0;
    *names = NULL;
    do {
        redisReply *r = h_cmd(c, "SCAN %s MATCH %s COUNT 7", cursor, pattern);
        H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        *names = realloc(*names, (n + r->element[1]->elements + 1) * sizeof **names);
        for (size_t i = 0; i < r->element[1]->elements; i++)
            (*names)[n++] = strdup(r->element[1]->element[i]->str);
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return n;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static void expect_same_names(char **got, size_t ngot, char **want, size_t nwant, const char *what)
{
    qsort(got, ngot, sizeof *got, cmp_str);
    qsort(want, nwant, sizeof *want, cmp_str);
    for (size_t i = 0; i < ngot || i < nwant; i++)
        ck_assert_msg(i < ngot && i < nwant && strcmp(got[i], want[i]) == 0,
                      "%s: entry %zu: got '%s', want '%s'", what, i, i < ngot ? got[i] : "(none)",
                      i < nwant ? want[i] : "(none)");
}

/* Every master's names of the prefix (SCAN directly) are exactly the
 * cluster names of the reference's keys, plus the layout's own keys. */
static void expect_cluster_names(redisContext *direct)
{
    const char *prefixes[] = { prefix };
    char err[512], pattern[128];
    struct layout *l = layout_load_file(RULES, prefixes, 1, err, sizeof err);
    ck_assert_msg(l != NULL, "%s", err);
    H_FMT(pattern, sizeof pattern, "%s:*", prefix);

    char **legacy;
    size_t nlegacy = scan_all(direct, pattern, &legacy);
    char **want = calloc(nlegacy + 1, sizeof *want);
    for (size_t i = 0; i < nlegacy; i++) {
        char out[1024];
        size_t len;
        enum layout_result res = layout_to_cluster(l, legacy[i], strlen(legacy[i]), out,
                                                   sizeof out - 1, &len, NULL);
        ck_assert(res != LAYOUT_SHORT);
        want[i] = res == LAYOUT_MAPPED ? strndup(out, len) : strdup(legacy[i]);
    }

    struct h_topo topo;
    h_topo_load(&topo);
    char **got = NULL;
    size_t ngot = 0;
    for (int m = 0; m < topo.nmasters; m++) {
        redisContext *c = h_connect_node(&topo.masters[m]);
        char **names;
        size_t n = scan_all(c, pattern, &names);
        redisFree(c);
        got = realloc(got, (ngot + n + 1) * sizeof *got);
        for (size_t i = 0; i < n; i++) {
            char out[1024];
            size_t len;
            enum layout_result res = layout_to_cluster(l, names[i], strlen(names[i]), out,
                                                       sizeof out, &len, NULL);
            ck_assert_msg(res == LAYOUT_PASS || res == LAYOUT_KEEP,
                          "the cluster holds the legacy name %s", names[i]);
            if (rewrite_is_internal(l, names[i], strlen(names[i])))
                free(names[i]);       /* indexes, the marker */
            else
                got[ngot++] = names[i];
        }
        free(names);
    }
    expect_same_names(got, ngot, want, nlegacy, "cluster names");
    free_names(got, ngot);
    free_names(want, nlegacy);
    free_names(legacy, nlegacy);
    layout_free(l);
}

/* ---- the session in RESP3, on raw connections ---- */

/* A raw connection to the proxy or the reference, in one protocol. */
struct raw {
    int fd;
    char *buf;
    size_t cap;
    const char *who;
};

static void raw_send_line(const struct raw *c, const struct line *l)
{
    char cmd[4096];
    size_t n = (size_t)snprintf(cmd, sizeof cmd, "*%d\r\n", l->argc);
    for (int k = 0; k < l->argc; k++) {
        ck_assert_uint_lt(n + l->lens[k] + 32, sizeof cmd);
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, "$%zu\r\n", l->lens[k]);
        memcpy(cmd + n, l->argv[k], l->lens[k]);
        n += l->lens[k];
        memcpy(cmd + n, "\r\n", 2);
        n += 2;
    }
    h_raw_send(c->fd, cmd, n);
}

/* The session line text sent on c; its reply's length in c->buf. */
static size_t raw_call(struct raw *c, const char *text, const char *what)
{
    struct line l;
    line_parse(text, &l);
    raw_send_line(c, &l);
    return h_raw_reply(c->fd, &c->buf, &c->cap, c->who, what);
}

/* A connection to n speaking proto (3: HELLO 3 first). */
static struct raw raw_open(const struct h_node *n, int proto, const char *who)
{
    struct raw c = { h_raw_connect(n), malloc(1 << 16), 1 << 16, who };
    ck_assert(c.buf != NULL);
    if (proto == 3) {
        size_t len = raw_call(&c, "HELLO|3", "HELLO 3");
        ck_assert_msg(c.buf[0] == '%', "HELLO 3: %s answered '%s'", who, h_esc(c.buf, len));
    }
    return c;
}

static void raw_close(struct raw *c)
{
    close(c->fd);
    free(c->buf);
}

static int cmp_rv(const void *a, const void *b)
{
    const struct h_rv *x = a, *y = b;
    if (x->type != y->type)
        return x->type - y->type;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->str, y->str, n) : 0;
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static bool rv_aggregate(const struct h_rv *v)
{
    return strchr(H_RESP_AGGR_TYPES, v->type) != NULL;
}

/* v is an aggregate of scalars: a listing. */
static bool rv_flat(const struct h_rv *v)
{
    for (long long i = 0; i < v->num; i++)
        if (rv_aggregate(&v->elem[i]))
            return false;
    return true;
}

/* g and w the same value, listings at any depth compared as sets of their
 * elements; false where they differ. */
static bool same_unordered(struct h_rv *g, struct h_rv *w)
{
    if (g->type != w->type || g->num != w->num)
        return false;
    if (!rv_aggregate(w) || w->num <= 0)
        return cmp_rv(g, w) == 0;
    if (rv_flat(w) && rv_flat(g)) {
        qsort(g->elem, (size_t)g->num, sizeof *g->elem, cmp_rv);
        qsort(w->elem, (size_t)w->num, sizeof *w->elem, cmp_rv);
    }
    for (long long i = 0; i < w->num; i++)
        if (!same_unordered(&g->elem[i], &w->elem[i]))
            return false;
    return true;
}

/* A reply holding listings compared with them as sets of their elements. */
static void expect_same_listing(const char *got, size_t lgot, const char *want, size_t lwant,
                                const char *what)
{
    struct h_rv g, w;
    ck_assert(h_resp_parse(got, lgot, &g) > 0 && h_resp_parse(want, lwant, &w) > 0);
    ck_assert_msg(rv_aggregate(&w) && same_unordered(&g, &w), "%s: proxy '%s', redis-server '%s'",
                  what, h_esc(got, lgot), h_esc(want, lwant));
    h_rv_free(&g);
    h_rv_free(&w);
}

/* The last replies read on the proxy (lb bytes) and on the reference (la
 * bytes) are the same bytes. */
static void expect_same_bytes(const struct raw *viaproxy, size_t lb, const struct raw *direct,
                              size_t la, const char *what)
{
    ck_assert_msg(la == lb && memcmp(direct->buf, viaproxy->buf, la) == 0,
                  "%s: proxy '%s', redis-server '%s'", what, h_esc(viaproxy->buf, lb),
                  h_esc(direct->buf, la));
}

static void run_session_raw(struct raw *viaproxy, struct raw *direct)
{
    for (int i = 0; session[i]; i++) {
        struct line l;
        line_parse(session[i], &l);
        if (strcmp(l.argv[0], "SLEEP") == 0) {
            h_sleep_ms(atoi(l.argv[1]));    /* a time: past a TTL (PX 50) */
            continue;
        }
        char what[300];
        snprintf(what, sizeof what, "RESP3 line %d (%.200s)", i, session[i]);
        raw_send_line(viaproxy, &l);
        raw_send_line(direct, &l);
        size_t lb = h_raw_reply(viaproxy->fd, &viaproxy->buf, &viaproxy->cap, viaproxy->who, what);
        size_t la = h_raw_reply(direct->fd, &direct->buf, &direct->cap, direct->who, what);
        if (l.unordered)
            expect_same_listing(viaproxy->buf, lb, direct->buf, la, what);
        else
            expect_same_bytes(viaproxy, lb, direct, la, what);
    }
}

/* ---- whole SCANs, alone and inside MULTI/EXEC, in either protocol ---- */

/* The reply of one SCAN call (alone: v; in EXEC's array: its only
 * element), its cursor copied into cursor and its names appended. */
static void scan_reply_take(struct h_rv *v, bool in_multi, char *cursor, size_t size,
                            char ***names, size_t *n, const char *what)
{
    struct h_rv *r = in_multi ? (v->type == '*' && v->num == 1 ? &v->elem[0] : NULL) : v;
    ck_assert_msg(r && r->type == '*' && r->num == 2 && r->elem[0].type == '$' &&
                  r->elem[1].type == '*', "%s: not a SCAN reply", what);
    ck_assert(r->elem[0].len < size);
    memcpy(cursor, r->elem[0].str, r->elem[0].len);
    cursor[r->elem[0].len] = '\0';
    struct h_rv *keys = &r->elem[1];
    *names = realloc(*names, (*n + (size_t)keys->num + 1) * sizeof **names);
    for (long long i = 0; i < keys->num; i++)
        (*names)[(*n)++] = strndup(keys->elem[i].str, keys->elem[i].len);
}

/* A whole SCAN MATCH $P<rest> on c, each call alone or inside
 * MULTI/EXEC: every name into *names. */
static size_t scan_walk(struct raw *c, const char *rest, bool in_multi, char ***names)
{
    char cursor[64] = "0", text[256], what[300];
    size_t n = 0;
    *names = NULL;
    do {
        H_FMT(text, sizeof text, "SCAN|%s|MATCH|$P%s|COUNT|7", cursor, rest);
        snprintf(what, sizeof what, "%s: %s%s", c->who, text, in_multi ? " in MULTI" : "");
        size_t len;
        if (in_multi) {
            len = raw_call(c, "MULTI", what);
            ck_assert_msg(len == 5 && memcmp(c->buf, "+OK\r\n", 5) == 0, "%s: MULTI", what);
            len = raw_call(c, text, what);
            ck_assert_msg(len == 9 && memcmp(c->buf, "+QUEUED\r\n", 9) == 0,
                          "%s: '%s'", what, h_esc(c->buf, len));
            len = raw_call(c, "EXEC", what);
        } else {
            len = raw_call(c, text, what);
        }
        struct h_rv v;
        ck_assert_msg(h_resp_parse(c->buf, len, &v) > 0, "%s", what);
        scan_reply_take(&v, in_multi, cursor, sizeof cursor, names, &n, what);
        h_rv_free(&v);
    } while (strcmp(cursor, "0") != 0);
    return n;
}

/* SCAN through the proxy walks the same names the reference holds, in
 * proto, each call alone and each inside MULTI/EXEC. */
static void expect_scans_equal(int proto, const char *rest)
{
    struct raw viaproxy = raw_open(&proxy.addr, proto, "the proxy");
    struct raw direct = raw_open(&ref.addr, proto, "redis-server");
    for (int in_multi = 0; in_multi < 2; in_multi++) {
        char **got, **want, what[200];
        size_t ngot = scan_walk(&viaproxy, rest, in_multi, &got);
        size_t nwant = scan_walk(&direct, rest, in_multi, &want);
        snprintf(what, sizeof what, "RESP%d SCAN MATCH %s%s%s", proto, prefix, rest,
                 in_multi ? " in MULTI" : "");
        expect_same_names(got, ngot, want, nwant, what);
        free_names(got, ngot);
        free_names(want, nwant);
    }
    raw_close(&viaproxy);
    raw_close(&direct);
}

/* The session in proto (2: hiredis, 3: raw connections after HELLO 3),
 * then the checks of what it left. */
static void bot_session(int proto)
{
    redisContext *viaproxy = h_connect_node(&proxy.addr);
    redisContext *direct = h_connect_node(&ref.addr);
    if (proto == 3) {
        struct raw rp = raw_open(&proxy.addr, 3, "the proxy");
        struct raw rd = raw_open(&ref.addr, 3, "redis-server");
        run_session_raw(&rp, &rd);
        raw_close(&rp);
        raw_close(&rd);
    } else {
        run_session(viaproxy, direct);
    }
    static const char *const scans[] = { ":*", ":checkpoint:*", ":co:turn:*", ":chat:*",
                                         ":user:u1:*" };
    for (size_t i = 0; i < sizeof scans / sizeof *scans; i++)
        expect_scans_equal(proto, scans[i]);
    expect_cluster_names(direct);
    /* the marker was written at start, and is not listed */
    char marker[128];
    H_FMT(marker, sizeof marker, "%s:{meta}:layout", prefix);
    redisReply *r = h_cmd(viaproxy, "GET %s", marker);
    H_EXPECT_BULK(r, "cluster:v1");
    freeReplyObject(r);
    redisFree(viaproxy);
    redisFree(direct);
}

/* ---- blocking commands that wait, then are fed by another client ---- */

/* Each: a command that blocks on empty keys (prep first, when given), the
 * write another client sends while it waits; what the write leaves is
 * compared by the listings afterwards. */
static const struct woken {
    const char *prep, *block, *feed;
} woken[] = {
    { NULL, "BLPOP|$P:co:turn:w1:last|$P:co:turn:w1:owner|5", "RPUSH|$P:co:turn:w1:owner|a" },
    { NULL, "BRPOP|$P:chat:w2|5", "RPUSH|$P:chat:w2|a|b" },
    { NULL, "BLMPOP|5|2|$P:co:turn:w1:last|$P:co:turn:w1:seq|LEFT|COUNT|3",
      "RPUSH|$P:co:turn:w1:seq|x|y" },
    { NULL, "BZPOPMIN|$P:msgs:w3|$P:msg:w3:x|5", "ZADD|$P:msg:w3:x|1.5|m" },
    { NULL, "BZPOPMAX|$P:msgs:w3|5", "ZADD|$P:msgs:w3|1|a|2|b" },
    { NULL, "BZMPOP|5|2|$P:msgs:w4|$P:msg:w4:z|MAX|COUNT|3", "ZADD|$P:msgs:w4|1|a|2.25|b" },
    { NULL, "BZMPOP|5|1|$P:user:u9:z:w5|MIN", "ZADD|$P:user:u9:z:w5|3|c|4|d" },
    { NULL, "XREAD|BLOCK|5000|STREAMS|$P:msgs:w6|$P:msg:w6:side|$|$",
      "XADD|$P:msg:w6:side|5-1|f|v" },
    { "XGROUP|CREATE|$P:msgs:w7|g|$|MKSTREAM",
      "XREADGROUP|GROUP|g|c1|BLOCK|5000|STREAMS|$P:msgs:w7|>", "XADD|$P:msgs:w7|5-1|f|v" },
};

/* text sent on the proxy and on the reference: the same reply bytes. */
static void expect_same_call(struct raw *viaproxy, struct raw *direct, const char *text,
                             const char *what)
{
    size_t lb = raw_call(viaproxy, text, what);
    size_t la = raw_call(direct, text, what);
    expect_same_bytes(viaproxy, lb, direct, la, what);
}

/* Polls (5 s at most) until the masters block want clients: the command
 * sent through the proxy blocks at its node, not on its way. */
static void wait_masters_blocked(const struct h_topo *t, long long want, const char *what)
{
    long long deadline = h_now_ms() + 5000, have;
    while ((have = h_masters_info_sum(t, "blocked_clients")) < want) {
        ck_assert_msg(h_now_ms() < deadline, "%s: the masters block %lld clients after 5 s, "
                      "not %lld", what, have, want);
        h_sleep_ms(20);
    }
}

/* Each woken row in proto: the blocked client's reply, once fed, byte for
 * byte the reference's. */
static void woken_pops(int proto)
{
    struct raw pa = raw_open(&proxy.addr, proto, "the proxy");
    struct raw pb = raw_open(&proxy.addr, proto, "the proxy");
    struct raw ra = raw_open(&ref.addr, proto, "redis-server");
    struct raw rb = raw_open(&ref.addr, proto, "redis-server");
    struct h_topo t;
    h_topo_load(&t);
    for (size_t i = 0; i < sizeof woken / sizeof *woken; i++) {
        const struct woken *w = &woken[i];
        char what[300];
        snprintf(what, sizeof what, "RESP%d: %s woken by %s", proto, w->block, w->feed);
        if (w->prep)
            expect_same_call(&pb, &rb, w->prep, what);
        struct line l;
        line_parse(w->block, &l);
        long long blocked0 = h_masters_info_sum(&t, "blocked_clients");
        raw_send_line(&pa, &l);
        raw_send_line(&ra, &l);
        wait_masters_blocked(&t, blocked0 + 1, what);
        h_wait_client_listed(&ref.addr, ra.fd, " flags=b ", 5000, what);
        expect_same_call(&pb, &rb, w->feed, what);
        size_t lb = h_raw_reply(pa.fd, &pa.buf, &pa.cap, pa.who, what);
        size_t la = h_raw_reply(ra.fd, &ra.buf, &ra.cap, ra.who, what);
        expect_same_bytes(&pa, lb, &ra, la, what);
    }
    raw_close(&pa);
    raw_close(&pb);
    raw_close(&ra);
    raw_close(&rb);
    expect_scans_equal(proto, ":*");
    redisContext *direct = h_connect_node(&ref.addr);
    expect_cluster_names(direct);
    redisFree(direct);
}

START_TEST(test_woken_pops)
{
    woken_pops(2);
}
END_TEST

START_TEST(test_woken_pops_resp3)
{
    woken_pops(3);
}
END_TEST

START_TEST(test_bot_session)
{
    bot_session(2);
}
END_TEST

START_TEST(test_bot_session_resp3)
{
    bot_session(3);
}
END_TEST

static Suite *session_suite(void)
{
    Suite *s = suite_create("layout session");
    TCase *t = tcase_create("session");
    tcase_set_timeout(t, 120);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_bot_session);
    tcase_add_test(t, test_bot_session_resp3);
    tcase_add_test(t, test_woken_pops);
    tcase_add_test(t, test_woken_pops_resp3);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return h_run(session_suite());
}
