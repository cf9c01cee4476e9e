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
 * that name keys (XREAD, XREADGROUP, LMPOP, ZMPOP), KEYS and SCAN.
 *
 * Afterwards the cluster (read with SCAN on every master directly) holds
 * exactly the cluster names of the keys the reference holds, plus the
 * layout's own keys (indexes, the marker), and no legacy name.
 *
 * The session runs twice, each time with a fresh proxy, prefix and
 * reference: in RESP2 (through hiredis, replies compared by value), and in
 * RESP3 (HELLO 3 on raw connections, every reply compared byte for byte but
 * the listings, compared as sets of their elements): maps from HGETALL and
 * XREAD with the key names mapped back, doubles, `_` nulls.
 */
#include <stdbool.h>

#include "harness.h"
#include "keylayout/layout.h"
#include "proxy/rewrite.h"

#define RULES "conf/layouts/botmesh-v1.rules"

static struct h_proxy proxy, ref;
static char prefix[64];

/* Far enough ahead for the whole run; fixed so both servers agree. */
#define EXAT "4102444800"        /* 2100-01-01 */
#define PXAT "4102444800123"

/*
 * The session, one command a line, arguments separated by '|', $P the
 * prefix. A line starting with "~" has a reply whose array order is the
 * server's (compared sorted); "SLEEP|ms" waits.
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

/* The same reply (arrays sorted first when unordered). */
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
        if (unordered) {
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
            h_sleep_ms(atoi(l.argv[1]));
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

/* SCAN through the proxy walks the same names the reference holds. */
static void expect_scans_equal(redisContext *viaproxy, redisContext *direct, const char *rest)
{
    char pattern[128], **got, **want;
    H_FMT(pattern, sizeof pattern, "%s%s", prefix, rest);
    size_t ngot = scan_all(viaproxy, pattern, &got);
    size_t nwant = scan_all(direct, pattern, &want);
    expect_same_names(got, ngot, want, nwant, pattern);
    free_names(got, ngot);
    free_names(want, nwant);
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

/* One whole reply from fd into *buf (grown as needed); its length. */
static size_t read_reply(int fd, char **buf, size_t *cap, const char *who, const char *what)
{
    size_t got = 0;
    long long deadline = h_now_ms() + 5000;
    for (;;) {
        long one = h_resp_parse(*buf, got, NULL);
        ck_assert_msg(one >= 0, "%s: %s sent a malformed reply: %s", what, who, h_esc(*buf, got));
        if (one > 0) {
            ck_assert_msg((size_t)one == got, "%s: %s sent more than one reply: %s", what, who,
                          h_esc(*buf, got));
            return got;
        }
        long n = h_recv_more(fd, buf, cap, got, deadline);
        ck_assert_msg(n > 0, "%s: no whole reply from %s within 5 s (%s)", what, who,
                      h_esc(*buf, got));
        got += (size_t)n;
    }
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

/* A listing (an aggregate of strings) compared as a set of its elements. */
static void expect_same_listing(const char *got, size_t lgot, const char *want, size_t lwant,
                                const char *what)
{
    struct h_rv g, w;
    h_resp_parse(got, lgot, &g);
    h_resp_parse(want, lwant, &w);
    ck_assert_msg(g.type == w.type && g.num == w.num && strchr(H_RESP_AGGR_TYPES, w.type),
                  "%s: proxy '%s', redis-server '%s'", what, h_esc(got, lgot),
                  h_esc(want, lwant));
    for (long long i = 0; i < w.num; i++)
        ck_assert_msg(!strchr(H_RESP_AGGR_TYPES, w.elem[i].type), "%s: not a flat listing", what);
    if (w.num > 0) {
        qsort(g.elem, (size_t)g.num, sizeof *g.elem, cmp_rv);
        qsort(w.elem, (size_t)w.num, sizeof *w.elem, cmp_rv);
    }
    for (long long i = 0; i < w.num; i++)
        ck_assert_msg(cmp_rv(&g.elem[i], &w.elem[i]) == 0, "%s: proxy '%s', redis-server '%s'",
                      what, h_esc(got, lgot), h_esc(want, lwant));
    h_rv_free(&g);
    h_rv_free(&w);
}

static void run_session_resp3(int viaproxy, int direct)
{
    size_t cap = 1 << 16, capa = 1 << 16, capb = 1 << 16;
    char *cmd = malloc(cap), *a = malloc(capa), *b = malloc(capb);
    static const char hello3[] = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
    h_raw_send(viaproxy, hello3, sizeof hello3 - 1);
    h_raw_send(direct, hello3, sizeof hello3 - 1);
    size_t lb = read_reply(viaproxy, &b, &capb, "the proxy", "HELLO 3");
    size_t la = read_reply(direct, &a, &capa, "redis-server", "HELLO 3");
    ck_assert_msg(b[0] == '%' && a[0] == '%', "HELLO 3: proxy '%s', redis-server '%s'",
                  h_esc(b, lb), h_esc(a, la));
    for (int i = 0; session[i]; i++) {
        struct line l;
        line_parse(session[i], &l);
        if (strcmp(l.argv[0], "SLEEP") == 0) {
            h_sleep_ms(atoi(l.argv[1]));
            continue;
        }
        size_t n = (size_t)snprintf(cmd, cap, "*%d\r\n", l.argc);
        for (int k = 0; k < l.argc; k++) {
            ck_assert_uint_lt(n + l.lens[k] + 32, cap);
            n += (size_t)snprintf(cmd + n, cap - n, "$%zu\r\n", l.lens[k]);
            memcpy(cmd + n, l.argv[k], l.lens[k]);
            n += l.lens[k];
            memcpy(cmd + n, "\r\n", 2);
            n += 2;
        }
        char what[300];
        snprintf(what, sizeof what, "RESP3 line %d (%.200s)", i, session[i]);
        h_raw_send(viaproxy, cmd, n);
        h_raw_send(direct, cmd, n);
        lb = read_reply(viaproxy, &b, &capb, "the proxy", what);
        la = read_reply(direct, &a, &capa, "redis-server", what);
        if (l.unordered)
            expect_same_listing(b, lb, a, la, what);
        else
            ck_assert_msg(la == lb && memcmp(a, b, la) == 0, "%s: proxy '%s', redis-server '%s'",
                          what, h_esc(b, lb), h_esc(a, la));
    }
    free(cmd);
    free(a);
    free(b);
}

/* The session in proto (2: hiredis, 3: raw connections after HELLO 3),
 * then the checks of what it left. */
static void bot_session(int proto)
{
    redisContext *viaproxy = h_connect_node(&proxy.addr);
    redisContext *direct = h_connect_node(&ref.addr);
    if (proto == 3) {
        int fp = h_raw_connect(&proxy.addr), fd = h_raw_connect(&ref.addr);
        run_session_resp3(fp, fd);
        close(fp);
        close(fd);
    } else {
        run_session(viaproxy, direct);
    }
    expect_scans_equal(viaproxy, direct, ":*");
    expect_scans_equal(viaproxy, direct, ":checkpoint:*");
    expect_scans_equal(viaproxy, direct, ":co:turn:*");
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
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return h_run(session_suite());
}
