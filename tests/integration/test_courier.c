/*
 * The courier Redis adapters (reference/courier-redis-adapters.md) through a
 * proxy with layout-rules conf/layouts/courier-v1.rules and two run-unique
 * layout prefixes, C standing for the reference's `courier` and Q for the
 * presence adapter's default `presence`, and directly against a standalone
 * redis-server the test starts: every reply byte for byte, in RESP2 and in
 * RESP3 (HELLO 3), on raw connections.
 *
 * The session is what the adapters send: pub/sub on a publisher and a
 * subscriber connection (SUBSCRIBE C:<topic>, PSUBSCRIBE C:<base>#* and
 * C:*, messages tagged with their origin); the stream adapter's `XADD ...
 * MAXLEN ~ 1000` and exclusive `XRANGE key (<id> + COUNT 100`; the rate-limit
 * store's script on Redis's clock (TIME), by EVAL then EVALSHA, which
 * deletes a caller's key once its budget is whole again; and presence for
 * both spellings (C:presence:score:<topic>, Q:score:<topic>): track (a
 * MULTI over the topic's scores and metadata), heartbeat (ZADD XX), list
 * (ZRANGE + HMGET, HGETALL), the sweep script over both keys, untrack (a
 * MULTI again). Without the rules the MULTIs and the sweep answer CROSSSLOT.
 *
 * What depends on the clock is compared where it is deterministic: stream
 * ids are explicit but for one `*`, whose replies are compared with every
 * stream id masked; the rate-limit script answers counts only.
 *
 * Afterwards the cluster itself (the owning master, asked directly) holds a
 * topic's presence keys under {pr:<topic, percent-encoded>}, the stream under
 * its own name, and a channel named like a presence key is published as it
 * is.
 */
#include <openssl/sha.h>
#include <stdbool.h>

#include "harness.h"

#define RULES "conf/layouts/courier-v1.rules"
#define WAIT_MS 5000

static struct h_proxy proxy, ref;
static char prefixes[2][H_LAYOUT_PREFIX_LEN];   /* C, Q */

/* The rate-limit store: KEYS[1] the caller, ARGV budget, window (ms), cost
 * (0 only reads). A window starts at a caller's first call on Redis's clock;
 * once it is over the budget is whole again and the key goes. Answers
 * {allowed, what is left}. */
static const char ratelimit_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
    "local budget, window = tonumber(ARGV[1]), tonumber(ARGV[2])\n"
    "local cost = tonumber(ARGV[3])\n"
    "local start = tonumber(redis.call('HGET', KEYS[1], 'start'))\n"
    "if start and now - start >= window then\n"
    "  redis.call('DEL', KEYS[1])\n"
    "  start = nil\n"
    "end\n"
    "local used = tonumber(redis.call('HGET', KEYS[1], 'used')) or 0\n"
    "if used + cost > budget then return {0, budget - used} end\n"
    "if cost > 0 then\n"
    "  used = redis.call('HINCRBY', KEYS[1], 'used', cost)\n"
    "  if not start then\n"
    "    redis.call('HSET', KEYS[1], 'start', string.format('%d', now))\n"
    "    redis.call('PEXPIRE', KEYS[1], window)\n"
    "  end\n"
    "end\n"
    "return {1, budget - used}\n";

/* The presence sweep: KEYS[1] the topic's scores, KEYS[2] its metadata,
 * ARGV[1] the cutoff (ms). Removes the entries last seen at or before it
 * from both and answers them as {connection, last seen, metadata}. */
static const char sweep_lua[] =
    "local hits = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES')\n"
    "local ids, out = {}, {}\n"
    "for i = 1, #hits, 2 do ids[#ids + 1] = hits[i] end\n"
    "if #ids == 0 then return out end\n"
    "local meta = redis.call('HMGET', KEYS[2], unpack(ids))\n"
    "redis.call('ZREM', KEYS[1], unpack(ids))\n"
    "redis.call('HDEL', KEYS[2], unpack(ids))\n"
    "for i, id in ipairs(ids) do out[#out + 1] = {id, hits[2 * i], meta[i] or ''} end\n"
    "return out\n";

static char ratelimit_sha[2 * SHA_DIGEST_LENGTH + 1], sweep_sha[2 * SHA_DIGEST_LENGTH + 1];

/*
 * The session, one command a line, arguments separated by '|'. $C and $Q
 * are the two prefixes, $T the presence key prefix of the spelling the
 * presence block runs for, $RL / $SW the scripts' bodies, $RLSHA / $SWSHA
 * their SHA1s. A line starting with '@' runs on the subscriber connection;
 * "@<" reads the next message pushed to it, "@<<" the next two, in either
 * order (a message matching two patterns comes once for each, in an order
 * each server hashes its own way); '%' compares the reply with stream ids
 * masked; "SLEEP|ms" waits.
 */
static const char *const pubsub_stream_ratelimit[] = {
    /* pub/sub: one subscriber, one publisher */
    "@SUBSCRIBE|$C:room:general",
    "@PSUBSCRIBE|$C:activity#*",
    "@PSUBSCRIBE|$C:*",
    "PUBLISH|$C:room:general|{\"origin\":\"replica-a\",\"data\":{\"online\":[\"ann\"]}}",
    "@<",
    "@<",
    "PUBLISH|$C:activity#team:7|{\"origin\":\"replica-b\",\"data\":\"x\"}",
    "@<<",
    /* a channel named like a presence key is a channel: not rewritten */
    "@SUBSCRIBE|$Q:score:room:general",
    "PUBLISH|$Q:score:room:general|{\"origin\":\"replica-a\"}",
    "@<",
    "PUBLISH|$C:room:empty|{\"origin\":\"replica-b\"}",
    "@<",
    "PUBLISH|$Q:nobody|x",
    "@UNSUBSCRIBE|$C:room:general",
    "@UNSUBSCRIBE|$Q:score:room:general",
    "@PUNSUBSCRIBE|$C:activity#*",
    "@PUNSUBSCRIBE|$C:*",
    "PUBSUB|NUMSUB|$C:room:general",
    /* the stream adapter: append, then resume after an id (exclusive) */
    "XADD|$C:stream:activity:team|MAXLEN|~|1000|1700000000000-0|data|{\"user\":\"ann\"}|"
    "timestamp|1700000000000",
    "XADD|$C:stream:activity:team|MAXLEN|~|1000|1700000000001-0|data|{\"user\":\"bob\"}|"
    "timestamp|1700000000001",
    "XADD|$C:stream:activity:team|MAXLEN|~|1000|1700000000001-1|data|{\"user\":\"cy\"}|"
    "timestamp|1700000000001",
    "XRANGE|$C:stream:activity:team|(1700000000000-0|+|COUNT|100",
    "XRANGE|$C:stream:activity:team|(1700000000001-0|+|COUNT|1",
    "XRANGE|$C:stream:activity:team|(1700000000001-1|+|COUNT|100",
    "%XADD|$C:stream:activity:team|MAXLEN|~|1000|*|data|{\"user\":\"dee\"}",
    "%XRANGE|$C:stream:activity:team|(1700000000001-1|+|COUNT|100",
    "XLEN|$C:stream:activity:team",
    "XRANGE|$C:stream:room:none|(1700000000000-0|+|COUNT|100",
    /* the rate-limit store: a budget of 3 a minute, then one of 2 in 100 ms */
    "EVAL|$RL|1|$C:ratelimit:caller-1|3|60000|1",
    "EVALSHA|$RLSHA|1|$C:ratelimit:caller-1|3|60000|1",
    "EVALSHA|$RLSHA|1|$C:ratelimit:caller-1|3|60000|1",
    "EVALSHA|$RLSHA|1|$C:ratelimit:caller-1|3|60000|1",
    "EXISTS|$C:ratelimit:caller-1",
    "HGET|$C:ratelimit:caller-1|used",
    "EVALSHA|$RLSHA|1|$C:ratelimit:caller-2|2|100|1",
    "SLEEP|150",
    "EVALSHA|$RLSHA|1|$C:ratelimit:caller-2|2|100|0",
    "EXISTS|$C:ratelimit:caller-2",
    NULL,
};

/* Presence, for the spelling $T: two connections in room:general, one in
 * activity:team (kept, for the checks on the cluster). */
static const char *const presence[] = {
    "MULTI",
    "ZADD|$Tscore:room:general|1000|conn-a",
    "HSET|$Tmeta:room:general|conn-a|{\"userId\":\"ann\",\"metadata\":{},\"joinedAt\":1000}",
    "EXEC",
    "MULTI",
    "ZADD|$Tscore:room:general|2000|conn-b",
    "HSET|$Tmeta:room:general|conn-b|{\"userId\":\"bob\",\"metadata\":{},\"joinedAt\":2000}",
    "EXEC",
    "MULTI",
    "ZADD|$Tscore:activity:team|2500|conn-c",
    "HSET|$Tmeta:activity:team|conn-c|{\"userId\":\"cy\",\"metadata\":{},\"joinedAt\":2500}",
    "EXEC",
    /* heartbeats: a known connection's score, an unknown one is not added */
    "ZADD|$Tscore:room:general|XX|5000|conn-b",
    "ZADD|$Tscore:room:general|XX|5000|conn-gone",
    /* list */
    "ZRANGE|$Tscore:room:general|0|-1",
    "ZRANGE|$Tscore:room:general|0|-1|WITHSCORES",
    "HMGET|$Tmeta:room:general|conn-a|conn-b",
    "HGETALL|$Tmeta:room:general",
    /* sweep: conn-a stopped its heartbeats */
    "EVAL|$SW|2|$Tscore:room:general|$Tmeta:room:general|4000",
    "EVALSHA|$SWSHA|2|$Tscore:room:general|$Tmeta:room:general|4000",
    "ZCARD|$Tscore:room:general",
    "HLEN|$Tmeta:room:general",
    /* untrack */
    "MULTI",
    "ZREM|$Tscore:room:general|conn-b",
    "HDEL|$Tmeta:room:general|conn-b",
    "EXEC",
    "EXISTS|$Tscore:room:general|$Tmeta:room:general",
    "EXISTS|$Tscore:activity:team|$Tmeta:activity:team",
    NULL,
};

static void sha1_hex(const char *text, char *hex)
{
    unsigned char md[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)text, strlen(text), md);
    for (int i = 0; i < SHA_DIGEST_LENGTH; i++)
        sprintf(hex + 2 * i, "%02x", md[i]);
}

static void setup(void)
{
    static const char *const tags[] = { "cou", "pre" };
    sha1_hex(ratelimit_lua, ratelimit_sha);
    sha1_hex(sweep_lua, sweep_sha);
    h_ref_start(&ref, "redis-ref-courier", NULL);
    h_layout_proxy_start_rules(&proxy, RULES, tags, 2, prefixes);
}

static void teardown(void)
{
    h_proxy_stop(&proxy);
    h_proxy_stop(&ref);
}

/* ---- a line: its tokens replaced, split into arguments ---- */

struct line {
    int argc;
    const char *argv[32];
    size_t lens[32];
    char mode;            /* '@' subscriber, '%' ids masked, 0 plain */
    char buf[4096];
};

/* The text $NAME stands for at s (s[0] == '$'), its length in *n; NULL if
 * none. t is the presence key prefix. */
static const char *token_value(const char *s, const char *t, size_t *n)
{
    const struct { const char *name; const char *value; } tokens[] = {
        { "$RLSHA", ratelimit_sha }, { "$SWSHA", sweep_sha }, { "$RL", ratelimit_lua },
        { "$SW", sweep_lua },        { "$C", prefixes[0] },   { "$Q", prefixes[1] },
        { "$T", t },
    };
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++) {
        size_t len = strlen(tokens[i].name);
        if (strncmp(s, tokens[i].name, len) == 0) {
            *n = len;
            return tokens[i].value;
        }
    }
    return NULL;
}

static void line_parse(const char *text, const char *t, struct line *l)
{
    memset(l, 0, sizeof *l);
    if (text[0] == '@' || text[0] == '%')
        l->mode = *text++;
    size_t n = 0;
    for (const char *s = text; *s; s++) {
        size_t skip;
        const char *v = *s == '$' ? token_value(s, t, &skip) : NULL;
        size_t vlen = v ? strlen(v) : 1;
        ck_assert(n + vlen < sizeof l->buf);
        if (v) {
            memcpy(l->buf + n, v, vlen);
            s += skip - 1;
        } else {
            l->buf[n] = *s == '|' ? '\0' : *s;
        }
        n += vlen;
    }
    for (size_t i = 0; i <= n; i += l->lens[l->argc - 1] + 1) {
        ck_assert(l->argc < 32);
        l->argv[l->argc] = l->buf + i;
        l->lens[l->argc++] = strlen(l->buf + i);
    }
}

/* ---- one side: the proxy's or the reference's connections ---- */

struct conn {
    int fd;
    char *buf;
    size_t len, cap;
};

struct side {
    const char *who;
    struct conn main, sub;
};

static void conn_open(struct conn *c, const struct h_node *addr)
{
    c->fd = h_raw_connect(addr);
    c->cap = 1 << 14;
    c->len = 0;
    c->buf = malloc(c->cap);
}

static void conn_close(struct conn *c)
{
    close(c->fd);
    free(c->buf);
}

/* The next whole reply on c, at c->buf[0..return); conn_drop takes it off. */
static size_t conn_next(struct conn *c, const char *who, const char *what)
{
    long long deadline = h_now_ms() + WAIT_MS;
    long one;
    while ((one = h_resp_parse(c->buf, c->len, NULL)) == 0) {
        long n = h_recv_more(c->fd, &c->buf, &c->cap, c->len, deadline);
        ck_assert_msg(n > 0, "%s: no whole reply from %s within %d ms (%s)", what, who, WAIT_MS,
                      h_esc(c->buf, c->len));
        c->len += (size_t)n;
    }
    ck_assert_msg(one > 0, "%s: %s sent a malformed reply: %s", what, who, h_esc(c->buf, c->len));
    return (size_t)one;
}

static void conn_drop(struct conn *c, size_t n)
{
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
}

static void conn_send(struct conn *c, struct line *l)
{
    char *cmd;
    long long n = redisFormatCommandArgv(&cmd, l->argc, l->argv, l->lens);
    ck_assert(n > 0);
    h_raw_send(c->fd, cmd, (size_t)n);
    redisFreeCommand(cmd);
}

static void side_open(struct side *s, const char *who, const struct h_node *addr, int proto)
{
    static const char hello3[] = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
    s->who = who;
    conn_open(&s->main, addr);
    conn_open(&s->sub, addr);
    if (proto != 3)
        return;
    struct conn *both[] = { &s->main, &s->sub };
    for (int i = 0; i < 2; i++) {
        h_raw_send(both[i]->fd, hello3, sizeof hello3 - 1);
        size_t n = conn_next(both[i], who, "HELLO 3");
        ck_assert_msg(both[i]->buf[0] == '%', "HELLO 3: %s: %s", who, h_esc(both[i]->buf, n));
        conn_drop(both[i], n);
    }
}

static void side_close(struct side *s)
{
    conn_close(&s->main);
    conn_close(&s->sub);
}

/* ---- comparing ---- */

/* A stream id: digits '-' digits. */
static bool is_stream_id(const struct h_rv *v)
{
    const char *dash = v->type == '$' ? memchr(v->str, '-', v->len) : NULL;
    if (!dash || dash == v->str || dash == v->str + v->len - 1)
        return false;
    for (size_t i = 0; i < v->len; i++)
        if (v->str + i != dash && (v->str[i] < '0' || v->str[i] > '9'))
            return false;
    return true;
}

/* The same value, but that any two stream ids are alike. */
static bool same_masked(const struct h_rv *a, const struct h_rv *b)
{
    if (is_stream_id(a) && is_stream_id(b))
        return true;
    if (a->type != b->type || a->num != b->num || a->len != b->len ||
        (a->len && memcmp(a->str, b->str, a->len) != 0))
        return false;
    if (strchr(H_RESP_AGGR_TYPES, a->type))
        for (long long i = 0; i < a->num; i++)
            if (!same_masked(&a->elem[i], &b->elem[i]))
                return false;
    return true;
}

static void expect_same(const char *got, size_t lgot, const char *want, size_t lwant, bool masked,
                        const char *what)
{
    bool same = lgot == lwant && memcmp(got, want, lgot) == 0;
    if (!same && masked) {
        struct h_rv g, w;
        h_resp_parse(got, lgot, &g);
        h_resp_parse(want, lwant, &w);
        same = same_masked(&g, &w);
        h_rv_free(&g);
        h_rv_free(&w);
    }
    ck_assert_msg(same, "%s: proxy '%s', redis-server '%s'", what, h_esc(got, lgot),
                  h_esc(want, lwant));
}

/* The next reply on c, copied out (the caller frees it), its length in *n. */
static char *conn_take(struct conn *c, size_t *n, const char *who, const char *what)
{
    *n = conn_next(c, who, what);
    char *copy = malloc(*n);
    memcpy(copy, c->buf, *n);
    conn_drop(c, *n);
    return copy;
}

/* The next two messages on a are b's next two, in either order. */
static void expect_same_two(struct conn *a, struct conn *b, const char *what)
{
    size_t n[4];
    char *m[4] = { conn_take(a, &n[0], "the proxy", what), conn_take(a, &n[1], "the proxy", what),
                   conn_take(b, &n[2], "redis-server", what),
                   conn_take(b, &n[3], "redis-server", what) };
    bool crossed = n[0] != n[2] || memcmp(m[0], m[2], n[0]) != 0;
    expect_same(m[0], n[0], m[crossed ? 3 : 2], n[crossed ? 3 : 2], false, what);
    expect_same(m[1], n[1], m[crossed ? 2 : 3], n[crossed ? 2 : 3], false, what);
    for (int i = 0; i < 4; i++)
        free(m[i]);
}

/* One line on both sides, its replies compared. */
static void run_line(struct side *px, struct side *rf, const char *text, const char *t)
{
    struct line l;
    line_parse(text, t, &l);
    if (strcmp(l.argv[0], "SLEEP") == 0) {
        h_sleep_ms(atoi(l.argv[1]));    /* a time: past the rate limit's 100 ms window */
        return;
    }
    struct conn *a = l.mode == '@' ? &px->sub : &px->main;
    struct conn *b = l.mode == '@' ? &rf->sub : &rf->main;
    char what[300];
    snprintf(what, sizeof what, "%.60s%s", text, t[0] ? " (presence)" : "");
    for (char *w = what; *w; w++)
        *w = *w == '\n' ? ' ' : *w;
    if (strcmp(l.argv[0], "<<") == 0) {
        expect_same_two(a, b, what);
        return;
    }
    if (strcmp(l.argv[0], "<") != 0) {
        conn_send(a, &l);
        conn_send(b, &l);
    }
    size_t la = conn_next(a, px->who, what), lb = conn_next(b, rf->who, what);
    expect_same(a->buf, la, b->buf, lb, l.mode == '%', what);
    conn_drop(a, la);
    conn_drop(b, lb);
}

static void run_block(struct side *px, struct side *rf, const char *const *lines, const char *t)
{
    for (int i = 0; lines[i]; i++)
        run_line(px, rf, lines[i], t);
}

/* ---- the cluster itself ---- */

/* TYPE of name on the master owning its slot, asked directly. */
static void expect_type_on_owner(const struct h_topo *topo, const char *name, const char *type)
{
    redisContext *c = h_connect_owner(topo, name);
    redisReply *r = h_cmd(c, "TYPE %s", name);
    ck_assert_msg(r->type == REDIS_REPLY_STATUS && strcmp(r->str, type) == 0,
                  "TYPE %s on its master: %s, want %s", name, h_show(r), type);
    freeReplyObject(r);
    redisFree(c);
}

/* The topic activity:team's presence keys are one slot's, under
 * {pr:activity%3Ateam}; the legacy names hold nothing; the stream and
 * rate-limit keys keep their names. */
static void expect_cluster_names(void)
{
    struct h_topo topo;
    char score[160], meta[160], legacy[160];
    const char *const spelling[] = { ":presence:", ":" };
    h_topo_load(&topo);
    for (int i = 0; i < 2; i++) {
        H_FMT(score, sizeof score, "%s%s{pr:activity%%3Ateam}:score", prefixes[i], spelling[i]);
        H_FMT(meta, sizeof meta, "%s%s{pr:activity%%3Ateam}:meta", prefixes[i], spelling[i]);
        ck_assert_int_eq(h_slot(score), h_slot(meta));
        expect_type_on_owner(&topo, score, "zset");
        expect_type_on_owner(&topo, meta, "hash");
        H_FMT(legacy, sizeof legacy, "%s%sscore:activity:team", prefixes[i], spelling[i]);
        expect_type_on_owner(&topo, legacy, "none");
        H_FMT(legacy, sizeof legacy, "%s%smeta:activity:team", prefixes[i], spelling[i]);
        expect_type_on_owner(&topo, legacy, "none");
    }
    H_FMT(legacy, sizeof legacy, "%s:stream:activity:team", prefixes[0]);
    expect_type_on_owner(&topo, legacy, "stream");
    H_FMT(legacy, sizeof legacy, "%s:ratelimit:caller-1", prefixes[0]);
    expect_type_on_owner(&topo, legacy, "hash");
}

/* A subscriber on a master, directly, to a channel named like a presence
 * key: what the proxy publishes reaches it under that very name. */
static void expect_channel_as_is(void)
{
    struct h_topo topo;
    char channel[160];
    h_topo_load(&topo);
    H_FMT(channel, sizeof channel, "%s:score:room:general", prefixes[1]);
    redisContext *sub = h_connect_node(&topo.masters[0]);
    redisReply *r = h_cmd(sub, "SUBSCRIBE %s", channel);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    redisContext *c = h_connect_node(&proxy.addr);
    r = h_cmd(c, "PUBLISH %s %s", channel, "{\"origin\":\"replica-c\"}");
    H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    r = h_get_reply(sub);
    ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
                  strcmp(r->element[1]->str, channel) == 0,
                  "the master's subscriber got %s", h_show(r));
    freeReplyObject(r);
    redisFree(c);
    redisFree(sub);
}

static void courier_session(int proto)
{
    struct side px, rf;
    side_open(&px, "the proxy", &proxy.addr, proto);
    side_open(&rf, "redis-server", &ref.addr, proto);
    run_block(&px, &rf, pubsub_stream_ratelimit, "");
    char spelling[2][H_LAYOUT_PREFIX_LEN + 16];
    H_FMT(spelling[0], sizeof spelling[0], "%s:presence:", prefixes[0]);
    H_FMT(spelling[1], sizeof spelling[1], "%s:", prefixes[1]);
    for (int i = 0; i < 2; i++)
        run_block(&px, &rf, presence, spelling[i]);
    side_close(&px);
    side_close(&rf);
    expect_cluster_names();
    expect_channel_as_is();
}

/* _i is the protocol: 2, then 3. */
START_TEST(test_courier_adapters)
{
    courier_session(_i);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("courier");
    TCase *t = tcase_create("adapters");
    tcase_set_timeout(t, 60);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_loop_test(t, test_courier_adapters, 2, 4);
    suite_add_tcase(s, t);
    return h_run(s);
}
