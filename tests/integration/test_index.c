/*
 * Index sorted sets through the proxy (proxy/families/index.h): a proxy started with
 * layout-rules conf/layouts/botmesh-v1.rules and a run-unique layout-prefix.
 *
 * - Writes to indexed families run as one script in the record's slot and
 *   answer byte for byte what the command answers on a node directly.
 * - After a session of writes (SET, SET EX, HSET, EXPIRE, PERSIST, DEL,
 *   UNLINK, GETDEL, RENAME on chats, contacts, checkpoints, schedules and
 *   user data), every index, read directly on the masters, holds exactly
 *   the live records, each with its record's PEXPIRETIME (or inf) as score.
 * - KEYS and a full SCAN MATCH of one family answer exactly the live
 *   records, in legacy names; expired checkpoints are pruned from the index
 *   by the read; SCAN TYPE filters.
 * - A listing taken while a bucket's slot is half migrated is still exact.
 * - A master that lost its scripts (SCRIPT FLUSH) is given them again.
 * - keylayout/glob.h matches what a node's KEYS matches.
 *
 * Names on the cluster side (index keys, record keys, buckets) are computed
 * here independently of keylayout/ (FNV-1a and the percent-encoding of
 * LAYOUT.md), and read from the masters directly.
 */
#include <pthread.h>
#include <stdbool.h>

#include "harness.h"
#include "keylayout/glob.h"

static struct h_proxy proxy;
static char prefix[64];        /* one segment: no ':' */
static struct h_topo topo;

static void setup(void)
{
    h_layout_proxy_start(&proxy, "ix", prefix, sizeof prefix);
    h_topo_load(&topo);
}

static void teardown(void)
{
    h_proxy_stop(&proxy);
}

/* ---------- names, computed here ---------- */

static int t_bucket(const char *id, size_t len)
{
    unsigned h = 0x811c9dc5u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)id[i]) * 0x01000193u;
    return (int)(h % 32);
}

static void t_encode(const char *s, size_t len, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        ck_assert(n + 4 < cap);
        if (strchr("%:{}*?[]\\", c) != NULL && c != 0)
            n += (size_t)sprintf(out + n, "%%%02X", c);
        else if (c < 0x21 || c == 0x7f)
            n += (size_t)sprintf(out + n, "%%%02X", c);
        else
            out[n++] = (char)c;
    }
    out[n] = '\0';
}

/* The bucket families: legacy segment, cluster tag letters. */
struct family {
    const char *legacy;
    const char *tag;
};

static const struct family F_CHAT = { "chat", "ch" }, F_CONTACT = { "contact", "ct" },
                           F_CHECKPOINT = { "checkpoint", "cp" }, F_SCHEDULE = { "schedule", "sc" };

static void legacy_name(const struct family *f, const char *id, char *out, size_t cap)
{
    H_FMT(out, cap, "%s:%s:%s", prefix, f->legacy, id);
}

static void record_key(const struct family *f, const char *id, char *out, size_t cap)
{
    char enc[512];
    t_encode(id, strlen(id), enc, sizeof enc);
    H_FMT(out, cap, "%s:{%s:%d}:r:%s", prefix, f->tag, t_bucket(id, strlen(id)), enc);
}

static void index_key(const struct family *f, int bucket, char *out, size_t cap)
{
    H_FMT(out, cap, "%s:{%s:%d}:idx", prefix, f->tag, bucket);
}

/* An id "<stem><n>" in bucket b (the nth such). */
static void id_in_bucket(const char *stem, int b, int nth, char *out, size_t cap)
{
    for (int i = 0, seen = 0; i < 1000000; i++) {
        H_FMT(out, cap, "%s%d", stem, i);
        if (t_bucket(out, strlen(out)) == b && seen++ == nth)
            return;
    }
    ck_abort_msg("no id in bucket %d", b);
}

/* ---------- direct reads ---------- */

static redisReply *direct(const char *key, const char *fmt, ...)
{
    redisContext *c = h_connect_owner(&topo, key);
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    ck_assert_msg(r != NULL, "direct '%s': %s", fmt, c->errstr);
    redisFree(c);
    return r;
}

/* The members of index key (with scores), directly on its master. */
static redisReply *index_read(const char *key)
{
    redisReply *r = direct(key, "ZRANGE %s 0 -1 WITHSCORES", key);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    return r;
}

/* A record the test expects, with what it expects of its expiry. */
struct rec {
    const struct family *f;
    char id[128];
    bool live;
    bool ttl;             /* has an expiry */
};

#define MAX_RECS 256

struct model {
    struct rec r[MAX_RECS];
    int n;
};

static struct rec *model_find(struct model *m, const struct family *f, const char *id)
{
    for (int i = 0; i < m->n; i++)
        if (m->r[i].f == f && strcmp(m->r[i].id, id) == 0)
            return &m->r[i];
    ck_assert(m->n < MAX_RECS);
    struct rec *r = &m->r[m->n++];
    r->f = f;
    snprintf(r->id, sizeof r->id, "%s", id);
    r->live = r->ttl = false;
    return r;
}

static void model_set(struct model *m, const struct family *f, const char *id, bool live, bool ttl)
{
    struct rec *r = model_find(m, f, id);
    r->live = live;
    r->ttl = ttl;
}

/*
 * Every index of family f, read on the masters, holds exactly the live
 * records of the model, each with its record's PEXPIRETIME as score (inf
 * without one), and the expiry is there exactly when the model says.
 */
static void expect_indexes_within(struct model *m, const struct family *f, long long slack_ms);

static void expect_indexes_exact(struct model *m, const struct family *f)
{
    expect_indexes_within(m, f, 0);
}

/* The same, a score may differ from its record's expiry by slack_ms: MIGRATE
 * carries TTLs as relative times, so a moved record's expiry moves by a few
 * ms while its index entry keeps the score it was written with. */
static void expect_indexes_within(struct model *m, const struct family *f, long long slack_ms)
{
    int seen = 0, live = 0;
    for (int i = 0; i < m->n; i++)
        live += m->r[i].f == f && m->r[i].live;
    for (int b = 0; b < 32; b++) {
        char idx[256];
        index_key(f, b, idx, sizeof idx);
        redisReply *z = index_read(idx);
        for (size_t k = 0; k + 1 < z->elements; k += 2) {
            const char *member = z->element[k]->str, *score = z->element[k + 1]->str;
            struct rec *r = NULL;
            for (int i = 0; i < m->n && !r; i++)
                if (m->r[i].f == f && strcmp(m->r[i].id, member) == 0)
                    r = &m->r[i];
            ck_assert_msg(r && r->live, "%s holds '%s', which is no live record", idx, member);
            ck_assert_int_eq(t_bucket(member, strlen(member)), b);
            char rk[512];
            record_key(f, member, rk, sizeof rk);
            redisReply *t = direct(rk, "PEXPIRETIME %s", rk);
            H_EXPECT_TYPE(t, REDIS_REPLY_INTEGER);
            ck_assert_msg(t->integer != -2, "%s lists '%s' but %s does not exist", idx, member, rk);
            if (t->integer == -1) {
                ck_assert_msg(!r->ttl, "'%s' should have an expiry", member);
                ck_assert_msg(strcmp(score, "inf") == 0, "'%s' scored %s, not inf", member, score);
            } else {
                char *end;
                long long got = strtoll(score, &end, 10);
                ck_assert_msg(r->ttl, "'%s' should have no expiry", member);
                ck_assert_msg(*end == '\0' && llabs(got - t->integer) <= slack_ms,
                              "'%s' scored %s, its expiry is %lld", member, score, t->integer);
            }
            freeReplyObject(t);
            seen++;
        }
        freeReplyObject(z);
    }
    ck_assert_msg(seen == live, "the %s indexes hold %d members, %d records are live",
                  f->legacy, seen, live);
}

/* ---------- through the proxy ---------- */

/* Names in an array reply, sorted, joined by '\n' into out. */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void join_sorted(const char **names, size_t n, char *out, size_t cap)
{
    size_t used = 0;
    qsort(names, n, sizeof *names, cmp_str);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(out + used, cap - used, "%s\n", names[i]);
        ck_assert(w > 0 && (size_t)w < cap - used);
        used += (size_t)w;
    }
}

/* The live records of f in the model whose legacy name the glob matches. */
static void model_names(struct model *m, const struct family *f, const char *glob,
                        char *out, size_t cap)
{
    const char *names[MAX_RECS];
    static char buf[MAX_RECS][256];
    size_t n = 0;
    for (int i = 0; i < m->n; i++) {
        if (m->r[i].f != f || !m->r[i].live)
            continue;
        legacy_name(f, m->r[i].id, buf[n], sizeof buf[0]);
        if (glob_match(glob, strlen(glob), buf[n], strlen(buf[n])))
            names[n] = buf[n], n++;
    }
    join_sorted(names, n, out, cap);
}

static void reply_names(const redisReply *r, char *out, size_t cap)
{
    const char *names[4096];
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert(r->elements <= 4096);
    for (size_t i = 0; i < r->elements; i++) {
        H_EXPECT_TYPE(r->element[i], REDIS_REPLY_STRING);
        names[i] = r->element[i]->str;
    }
    join_sorted(names, r->elements, out, cap);
}

static void expect_keys(redisContext *c, const char *glob, const char *want)
{
    char got[65536];
    redisReply *r = h_cmd(c, "KEYS %s", glob);
    reply_names(r, got, sizeof got);
    ck_assert_msg(strcmp(got, want) == 0, "KEYS %s:\n%s\nexpected:\n%s", glob, got, want);
    freeReplyObject(r);
}

static void expect_scan_steps(redisContext *c, const char *glob, const char *type,
                              const char *want, int nsteps);

/* A whole SCAN MATCH glob [TYPE type]: each name once, the cursor walking
 * 1..31 and ending at 0. */
static void expect_scan(redisContext *c, const char *glob, const char *type, const char *want)
{
    expect_scan_steps(c, glob, type, want, 32);
}

/* The same over nsteps indexes (1 for user data). */
static void expect_scan_steps(redisContext *c, const char *glob, const char *type,
                              const char *want, int nsteps)
{
    const char *names[4096];
    static char store[4096][256];
    size_t n = 0;
    char cursor[32] = "0", got[65536];
    int steps = 0;
    do {
        redisReply *r = type ? h_cmd(c, "SCAN %s MATCH %s COUNT 5 TYPE %s", cursor, glob, type)
                             : h_cmd(c, "SCAN %s MATCH %s", cursor, glob);
        H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
        ck_assert_int_eq(r->elements, 2);
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements; i++) {
            ck_assert(n < 4096);
            snprintf(store[n], sizeof store[0], "%s", r->element[1]->element[i]->str);
            for (size_t j = 0; j < n; j++)
                ck_assert_msg(strcmp(store[j], store[n]) != 0, "SCAN gave '%s' twice", store[n]);
            names[n] = store[n];
            n++;
        }
        freeReplyObject(r);
        ck_assert_msg(++steps <= nsteps, "SCAN did not end after %d steps", nsteps);
    } while (strcmp(cursor, "0") != 0);
    ck_assert_int_eq(steps, nsteps);
    join_sorted(names, n, got, sizeof got);
    ck_assert_msg(strcmp(got, want) == 0, "SCAN MATCH %s:\n%s\nexpected:\n%s", glob, got, want);
}

/* ---------- replies: byte for byte what a node answers ---------- */

/* Send one command (argv, with "%K" standing for key k of keys[]) raw to fd,
 * return the raw reply in out. */
static size_t raw_roundtrip(int fd, int argc, const char *const *argv, char *out, size_t cap)
{
    char buf[4096];
    size_t n = (size_t)snprintf(buf, sizeof buf, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
    ck_assert(n < sizeof buf);
    h_raw_send(fd, buf, n);
    size_t got = 0;
    long long deadline = h_now_ms() + 5000;
    long one;
    out[0] = '\0';
    while ((one = h_resp_parse(out, got, NULL)) == 0) {
        ck_assert_msg(h_now_ms() < deadline, "no whole reply to %s", argv[0]);
        got += h_raw_recv(fd, out + got, cap - got, NULL, 100, NULL);
    }
    ck_assert_msg(one > 0, "malformed reply to %s: %s", argv[0], h_esc(out, got));
    return got;
}

/*
 * Each command runs once through the proxy on legacy names (records of
 * bucket families and user data) and once directly on a master on plain
 * names in one slot; the reply bytes must be the same. _i 1: both
 * connections in RESP3 (the replies' RESP3 types survive the index script).
 */
START_TEST(test_write_replies_identical)
{
    static const char *const script[][6] = {
        { "SET", "K1", "v", NULL },
        { "SET", "K1", "w", "GET", NULL },
        { "SET", "K1", "x", "NX", NULL },
        { "SET", "K1", "x", "XX", "EX", NULL },
        { "SET", "K1", "x", "EX", "100", NULL },
        { "GET", "K1", NULL },
        { "GET", "K2", NULL },
        { "HSET", "K1", "f", "v", NULL },
        { "HSET", "K2", "f", "v", NULL },
        { "HSET", "K2", "f", "v", "g", NULL },
        { "EXPIRE", "K2", "100", NULL },
        { "EXPIRE", "K2", "abc", NULL },
        { "PERSIST", "K2", NULL },
        { "PERSIST", "K2", NULL },
        { "INCR", "K3", NULL },
        { "INCRBYFLOAT", "K3", "1.5", NULL },
        { "APPEND", "K3", "x", NULL },
        { "INCR", "K3", NULL },
        { "GETDEL", "K3", NULL },
        { "GETDEL", "K3", NULL },
        { "RPUSH", "K4", "a", "b", NULL },
        { "LPOP", "K4", "5", NULL },
        { "LPOP", "K4", NULL },
        { "SADD", "K5", "a", NULL },
        { "SPOP", "K5", NULL },
        { "ZADD", "K6", "1", "a", NULL },
        { "ZPOPMIN", "K6", NULL },
        { "ZADD", "K6", "x", "a", NULL },
        { "LPOP", "K4", "5", NULL },           /* a null array, not a null bulk */
        { "RPOP", "K4", "2", NULL },
        { "RPOP", "K4", NULL },
        { "LMPOP", "1", "K4", "LEFT", NULL },
        { "ZMPOP", "1", "K6", "MIN", NULL },
        { "RPUSH", "K4", "a", NULL },
        { "LMPOP", "1", "K4", "LEFT", "COUNT", NULL },
        { "DEL", "K1", "K2", NULL },
        { "UNLINK", "K1", NULL },
        { "EXPIRE", "K1", "10", NULL },
        { "SETEX", "K1", "-1", "v", NULL },
        { "ZADD", "K6", "1.5", "a", NULL },
        { "ZADD", "K6", "2", "b", NULL },
        { "ZINCRBY", "K6", "0.1", "a", NULL },
        { "ZADD", "K6", "INCR", "1", "b", NULL },
        { "ZPOPMIN", "K6", NULL },
        { "SADD", "K5", "a", NULL },
        { "SPOP", "K5", "1", NULL },
        { "HSET", "K2", "f", "v", NULL },
        { "HINCRBYFLOAT", "K2", "n", "0.5", NULL },
        { "DEL", "K2", "K4", "K5", "K6", NULL },
    };
    /* K1..K6: records in one chat bucket (so multi-key DEL is one slot) */
    char ids[6][64], legacy[6][256], plain[6][128], tag[32];
    for (int k = 0; k < 6; k++) {
        id_in_bucket("rep", 9, k, ids[k], sizeof ids[k]);
        legacy_name(&F_CHAT, ids[k], legacy[k], sizeof legacy[k]);
    }
    H_FMT(tag, sizeof tag, "%s-ref", prefix);
    for (int k = 0; k < 6; k++)
        H_FMT(plain[k], sizeof plain[k], "{%s}:%d", tag, k);
    int m = h_topo_owner(&topo, h_slot(plain[0]));
    int pfd = h_raw_connect(&proxy.addr), dfd = h_raw_connect(&topo.masters[m]);
    if (_i == 1) {
        static const char *const hello3[] = { "HELLO", "3" };
        char hr[4096];
        raw_roundtrip(pfd, 2, hello3, hr, sizeof hr);
        raw_roundtrip(dfd, 2, hello3, hr, sizeof hr);
    }
    for (size_t i = 0; i < sizeof script / sizeof script[0]; i++) {
        const char *pa[6], *da[6];
        int argc = 0;
        for (; script[i][argc]; argc++) {
            const char *a = script[i][argc];
            int k = a[0] == 'K' && a[1] >= '1' && a[1] <= '6' && a[2] == '\0' ? a[1] - '1' : -1;
            pa[argc] = k >= 0 ? legacy[k] : a;
            da[argc] = k >= 0 ? plain[k] : a;
        }
        char pr[4096], dr[4096];
        size_t pn = raw_roundtrip(pfd, argc, pa, pr, sizeof pr);
        size_t dn = raw_roundtrip(dfd, argc, da, dr, sizeof dr);
        ck_assert_msg(pn == dn && memcmp(pr, dr, pn) == 0, "%s %s: proxy '%s', node '%s'",
                      script[i][0], script[i][1], h_esc(pr, pn), h_esc(dr, dn));
    }
    close(pfd);
    close(dfd);
    /* and the index holds what is left, as the records say */
    struct model md = { .n = 0 };
    redisContext *c = h_connect_extra(&proxy);
    for (int k = 0; k < 6; k++) {
        redisReply *e = h_cmd(c, "PTTL %s", legacy[k]);
        model_set(&md, &F_CHAT, ids[k], e->integer != -2, e->integer >= 0);
        freeReplyObject(e);
    }
    redisFree(c);
    expect_indexes_exact(&md, &F_CHAT);
}
END_TEST

/* ---------- a session of writes, then the indexes and the listings ---------- */

static void run(redisContext *c, const char *expect_status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    ck_assert_msg(r != NULL, "'%s': %s", fmt, c->errstr);
    ck_assert_msg(r->type != REDIS_REPLY_ERROR, "'%s': %s", fmt, h_show(r));
    if (expect_status)
        H_EXPECT_STATUS(r, expect_status);
    freeReplyObject(r);
}

/* Ids with the bytes that matter to names and globs. */
static const char *const odd_ids[] = {
    "tg:42", "a{b}c", "star*id", "sp ace", "pct%41", "caf\xc3\xa9", "q?[x]\\y", "",
};

START_TEST(test_session_indexes_exact)
{
    redisContext *c = h_connect_extra(&proxy);
    struct model m = { .n = 0 };
    char name[256], name2[256], id[64], id2[64];

    /* chats: plain SETs, odd ids, hashes, some deleted */
    for (int i = 0; i < 40; i++) {
        H_FMT(id, sizeof id, "chat-%d", i);
        legacy_name(&F_CHAT, id, name, sizeof name);
        if (i % 3 == 0)
            run(c, NULL, "HSET %s title t%d n %d", name, i, i);
        else
            run(c, "OK", "SET %s {\"n\":%d}", name, i);
        model_set(&m, &F_CHAT, id, true, false);
    }
    for (size_t i = 0; i < sizeof odd_ids / sizeof odd_ids[0]; i++) {
        legacy_name(&F_CHAT, odd_ids[i], name, sizeof name);
        run(c, "OK", "SET %b v", name, strlen(name));
        model_set(&m, &F_CHAT, odd_ids[i], true, false);
    }
    legacy_name(&F_CHAT, "chat-1", name, sizeof name);
    run(c, NULL, "DEL %s", name);
    model_set(&m, &F_CHAT, "chat-1", false, false);
    /* a DEL over several buckets: split by slot, each part a script */
    legacy_name(&F_CHAT, "chat-2", name, sizeof name);
    legacy_name(&F_CHAT, "chat-4", name2, sizeof name2);
    {
        char n3[256];
        legacy_name(&F_CHAT, "chat-5", n3, sizeof n3);
        redisReply *r = h_cmd(c, "UNLINK %s %s %s %s", name, name2, n3, name);
        H_EXPECT_INT(r, 3);
        freeReplyObject(r);
    }
    model_set(&m, &F_CHAT, "chat-2", false, false);
    model_set(&m, &F_CHAT, "chat-4", false, false);
    model_set(&m, &F_CHAT, "chat-5", false, false);
    legacy_name(&F_CHAT, "chat-7", name, sizeof name);
    {
        redisReply *r = h_cmd(c, "GETDEL %s", name);
        H_EXPECT_BULK(r, "{\"n\":7}");
        freeReplyObject(r);
    }
    model_set(&m, &F_CHAT, "chat-7", false, false);
    /* MSET over several buckets */
    legacy_name(&F_CHAT, "m-a", name, sizeof name);
    legacy_name(&F_CHAT, "m-b", name2, sizeof name2);
    run(c, "OK", "MSET %s 1 %s 2", name, name2);
    model_set(&m, &F_CHAT, "m-a", true, false);
    model_set(&m, &F_CHAT, "m-b", true, false);

    /* contacts: RENAME within a bucket; across buckets is CROSSSLOT */
    id_in_bucket("ct-", 3, 0, id, sizeof id);
    id_in_bucket("ct-", 3, 1, id2, sizeof id2);
    legacy_name(&F_CONTACT, id, name, sizeof name);
    legacy_name(&F_CONTACT, id2, name2, sizeof name2);
    run(c, "OK", "SET %s x", name);
    run(c, "OK", "RENAME %s %s", name, name2);
    model_set(&m, &F_CONTACT, id, false, false);
    model_set(&m, &F_CONTACT, id2, true, false);
    id_in_bucket("ct-", 4, 0, id, sizeof id);
    legacy_name(&F_CONTACT, id, name, sizeof name);
    {
        redisReply *r = h_cmd(c, "RENAME %s %s", name2, name);
        H_EXPECT_ERR(r, "CROSSSLOT");
        freeReplyObject(r);
        legacy_name(&F_CHAT, "chat-3", name, sizeof name);
        r = h_cmd(c, "RENAME %s %s", name2, name);      /* another family */
        H_EXPECT_ERR(r, "CROSSSLOT");
        freeReplyObject(r);
    }
    for (int i = 0; i < 10; i++) {
        H_FMT(id, sizeof id, "+4917%d", i);
        legacy_name(&F_CONTACT, id, name, sizeof name);
        run(c, NULL, "HSET %s name n%d", name, i);
        model_set(&m, &F_CONTACT, id, true, false);
    }

    /* checkpoints: with TTLs, EXPIRE, PERSIST, SET KEEPTTL */
    for (int i = 0; i < 12; i++) {
        H_FMT(id, sizeof id, "cp-%d", i);
        legacy_name(&F_CHECKPOINT, id, name, sizeof name);
        run(c, "OK", "SET %s state EX %d", name, 1000 + i);
        model_set(&m, &F_CHECKPOINT, id, true, true);
    }
    legacy_name(&F_CHECKPOINT, "cp-0", name, sizeof name);
    run(c, NULL, "PERSIST %s", name);
    model_set(&m, &F_CHECKPOINT, "cp-0", true, false);
    legacy_name(&F_CHECKPOINT, "cp-1", name, sizeof name);
    run(c, NULL, "PEXPIRE %s 5000000", name);
    legacy_name(&F_CHECKPOINT, "cp-2", name, sizeof name);
    run(c, "OK", "SET %s other KEEPTTL", name);
    legacy_name(&F_CHECKPOINT, "cp-3", name, sizeof name);
    run(c, "OK", "SET %s other", name);                  /* a plain SET drops the TTL */
    model_set(&m, &F_CHECKPOINT, "cp-3", true, false);
    legacy_name(&F_CHECKPOINT, "cp-4", name, sizeof name);
    run(c, NULL, "EXPIRE %s 0", name);                   /* deletes */
    model_set(&m, &F_CHECKPOINT, "cp-4", false, false);

    /* schedules: hashes, one deleted by HDEL of its last field */
    for (int i = 0; i < 8; i++) {
        H_FMT(id, sizeof id, "job:%d", i);
        legacy_name(&F_SCHEDULE, id, name, sizeof name);
        run(c, NULL, "HSET %s at %d token %d", name, 1000 + i, i);
        model_set(&m, &F_SCHEDULE, id, true, false);
    }
    legacy_name(&F_SCHEDULE, "job:3", name, sizeof name);
    run(c, NULL, "HDEL %s at token", name);
    model_set(&m, &F_SCHEDULE, "job:3", false, false);

    expect_indexes_exact(&m, &F_CHAT);
    expect_indexes_exact(&m, &F_CONTACT);
    expect_indexes_exact(&m, &F_CHECKPOINT);
    expect_indexes_exact(&m, &F_SCHEDULE);

    /* user data: one index per user, member <ns>:<key...> */
    char ud[256], udidx[256];
    H_FMT(ud, sizeof ud, "%s:user:u1:prefs:lang", prefix);
    run(c, "OK", "SET %s de EX 500", ud);
    H_FMT(ud, sizeof ud, "%s:user:u1:prefs:tz:x", prefix);
    run(c, "OK", "SET %s cet", ud);
    H_FMT(ud, sizeof ud, "%s:user:u1:cart:1", prefix);
    run(c, NULL, "HSET %s item a", ud);
    run(c, NULL, "DEL %s", ud);
    H_FMT(ud, sizeof ud, "%s:user:u1:cart:2", prefix);
    run(c, NULL, "HSET %s item b", ud);
    run(c, NULL, "PEXPIRE %s 900000", ud);
    H_FMT(ud, sizeof ud, "%s:user:u2:prefs:lang", prefix);    /* another user, another index */
    run(c, "OK", "SET %s en EX 100", ud);
    run(c, NULL, "PERSIST %s", ud);
    H_FMT(udidx, sizeof udidx, "%s:{ud:u1}:idx", prefix);
    redisReply *z = index_read(udidx);
    /* by score: 500 s, 900 s, none */
    static const char *const u1[] = { "prefs:lang", "cart:2", "prefs:tz:x" };
    static const char *const u1_keys[] = { "prefs:lang", "cart:2", "prefs:tz%3Ax" };
    ck_assert_int_eq(z->elements, 6);
    for (int i = 0; i < 3; i++) {
        char rk[256];
        H_FMT(rk, sizeof rk, "%s:{ud:u1}:e:%s", prefix, u1_keys[i]);
        ck_assert_str_eq(z->element[2 * i]->str, u1[i]);
        redisReply *t = direct(rk, "PEXPIRETIME %s", rk);
        H_EXPECT_TYPE(t, REDIS_REPLY_INTEGER);
        if (t->integer == -1) {
            ck_assert_str_eq(z->element[2 * i + 1]->str, "inf");
        } else {
            ck_assert_int_gt(t->integer, 0);
            ck_assert_int_eq(atoll(z->element[2 * i + 1]->str), t->integer);
        }
        ck_assert_int_eq(t->integer == -1, i == 2);      /* only tz:x has no TTL */
        freeReplyObject(t);
    }
    freeReplyObject(z);
    H_FMT(udidx, sizeof udidx, "%s:{ud:u2}:idx", prefix);
    z = index_read(udidx);
    ck_assert_int_eq(z->elements, 2);
    ck_assert_str_eq(z->element[0]->str, "prefs:lang");
    ck_assert_str_eq(z->element[1]->str, "inf");
    freeReplyObject(z);

    /* the listings */
    char want[65536], glob[256];
    H_FMT(glob, sizeof glob, "%s:chat:*", prefix);
    model_names(&m, &F_CHAT, glob, want, sizeof want);
    expect_keys(c, glob, want);
    expect_scan(c, glob, NULL, want);
    H_FMT(glob, sizeof glob, "%s:chat:chat-1?", prefix);
    model_names(&m, &F_CHAT, glob, want, sizeof want);
    ck_assert(strlen(want) > 0);
    expect_keys(c, glob, want);
    H_FMT(glob, sizeof glob, "%s:chat:star\\*id", prefix);    /* a literal '*' */
    model_names(&m, &F_CHAT, glob, want, sizeof want);
    ck_assert(strlen(want) > 0);
    expect_keys(c, glob, want);
    H_FMT(glob, sizeof glob, "%s:contact:*", prefix);
    model_names(&m, &F_CONTACT, glob, want, sizeof want);
    expect_scan(c, glob, NULL, want);
    H_FMT(glob, sizeof glob, "%s:schedule:job:[0-4]", prefix);
    model_names(&m, &F_SCHEDULE, glob, want, sizeof want);
    expect_keys(c, glob, want);
    H_FMT(ud, sizeof ud, "%s:user:u1:prefs:*", prefix);
    redisReply *r = h_cmd(c, "KEYS %s", ud);
    reply_names(r, want, sizeof want);
    freeReplyObject(r);
    char expect_ud[512];
    H_FMT(expect_ud, sizeof expect_ud, "%s:user:u1:prefs:lang\n%s:user:u1:prefs:tz:x\n", prefix, prefix);
    ck_assert_str_eq(want, expect_ud);
    expect_scan_steps(c, ud, NULL, expect_ud, 1);
    expect_scan_steps(c, ud, "string", expect_ud, 1);
    expect_scan_steps(c, ud, "hash", "", 1);
    H_FMT(ud, sizeof ud, "%s:user:u1:cart:*", prefix);
    H_FMT(expect_ud, sizeof expect_ud, "%s:user:u1:cart:2\n", prefix);
    expect_scan_steps(c, ud, "hash", expect_ud, 1);

    /* SCAN TYPE: the chats that are hashes (every third) */
    {
        const char *names[MAX_RECS];
        static char buf[MAX_RECS][256];
        size_t n = 0;
        for (int i = 0; i < 40; i += 3) {
            H_FMT(id, sizeof id, "chat-%d", i);
            struct rec *rc = model_find(&m, &F_CHAT, id);
            if (!rc->live)
                continue;
            legacy_name(&F_CHAT, id, buf[n], sizeof buf[0]);
            names[n] = buf[n], n++;
        }
        join_sorted(names, n, want, sizeof want);
        H_FMT(glob, sizeof glob, "%s:chat:*", prefix);
        expect_scan(c, glob, "HASH", want);
        expect_scan(c, glob, "zset", "");
    }
    redisFree(c);
}
END_TEST

/* Checkpoints that expire leave the listings, and the read prunes them
 * from the index, where they stayed until then. */
START_TEST(test_expired_pruned)
{
    redisContext *c = h_connect_extra(&proxy);
    struct model m = { .n = 0 };
    char name[256], id[64], want[65536], glob[256];
    for (int i = 0; i < 20; i++) {
        H_FMT(id, sizeof id, "exp-%d", i);
        legacy_name(&F_CHECKPOINT, id, name, sizeof name);
        if (i % 2)
            run(c, "OK", "SET %s s PX 200", name);
        else
            run(c, "OK", "SET %s s EX 1000", name);
        model_set(&m, &F_CHECKPOINT, id, true, true);
    }
    h_sleep_ms(400);        /* a time: past PX 200 (reading the keys would delete them) */
    /* the odd ones expired; Redis may have deleted them, their entries stay */
    int stale = 0;
    for (int i = 1; i < 20; i += 2) {
        char idx[256];
        H_FMT(id, sizeof id, "exp-%d", i);
        index_key(&F_CHECKPOINT, t_bucket(id, strlen(id)), idx, sizeof idx);
        redisReply *s = direct(idx, "ZSCORE %s %s", idx, id);
        stale += s->type == REDIS_REPLY_STRING;
        freeReplyObject(s);
        model_set(&m, &F_CHECKPOINT, id, false, true);
    }
    ck_assert_int_eq(stale, 10);
    H_FMT(glob, sizeof glob, "%s:checkpoint:*", prefix);       /* the whole family */
    model_names(&m, &F_CHECKPOINT, glob, want, sizeof want);
    expect_scan(c, glob, NULL, want);
    expect_keys(c, glob, want);
    expect_indexes_exact(&m, &F_CHECKPOINT);     /* the expired entries are gone */
    redisFree(c);
}
END_TEST

/* SCRIPT FLUSH on every master: the next write and listing load the
 * scripts again (NOSCRIPT, then the body) and are right. */
START_TEST(test_noscript_recovered)
{
    redisContext *c = h_connect_extra(&proxy);
    char name[256], glob[256], want[512];
    legacy_name(&F_CHAT, "ns-1", name, sizeof name);
    run(c, "OK", "SET %s a", name);
    for (int i = 0; i < topo.nmasters; i++) {
        redisContext *n = h_connect_node(&topo.masters[i]);
        H_OK(n, "SCRIPT FLUSH");
        redisFree(n);
    }
    run(c, "OK", "SET %s b EX 100", name);
    struct model m = { .n = 0 };
    model_set(&m, &F_CHAT, "ns-1", true, true);
    expect_indexes_exact(&m, &F_CHAT);
    for (int i = 0; i < topo.nmasters; i++) {
        redisContext *n = h_connect_node(&topo.masters[i]);
        H_OK(n, "SCRIPT FLUSH");
        redisFree(n);
    }
    H_FMT(glob, sizeof glob, "%s:chat:ns-*", prefix);
    H_FMT(want, sizeof want, "%s\n", name);
    expect_keys(c, glob, want);
    redisFree(c);
}
END_TEST

/* ---------- a listing while a bucket's slot moves ---------- */

static void expect_ok_reply(redisReply *r, const char *what)
{
    ck_assert_msg(r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0, "%s: %s", what,
                  h_show(r));
    freeReplyObject(r);
}

static void migrate_keys(redisContext *src, const struct h_node *to, const char **keys, int n)
{
    const char *argv[64];
    char port[16];
    int argc = 0;
    ck_assert(n + 7 <= 64);
    snprintf(port, sizeof port, "%d", to->port);
    argv[argc++] = "MIGRATE";
    argv[argc++] = to->host;
    argv[argc++] = port;
    argv[argc++] = "";
    argv[argc++] = "0";
    argv[argc++] = "5000";
    argv[argc++] = "KEYS";
    for (int i = 0; i < n; i++)
        argv[argc++] = keys[i];
    expect_ok_reply(h_cmd_argv(src, argc, argv), "MIGRATE");
}

static void setslot_node(int slot, int owner)
{
    for (int m = 0; m < topo.nmasters; m++) {
        redisContext *o = h_connect_node(&topo.masters[m]);
        expect_ok_reply(h_cmd(o, "CLUSTER SETSLOT %d NODE %s", slot, topo.master_id[owner]),
                        "SETSLOT NODE");
        redisFree(o);
    }
}

/* Moves every key of slot from `from` to `to` and gives it to `to`. */
static void finish_move(int slot, int from, int to)
{
    redisContext *src = h_connect_node(&topo.masters[from]);
    for (;;) {
        redisReply *keys = h_cmd(src, "CLUSTER GETKEYSINSLOT %d 50", slot);
        if (keys->elements == 0) {
            freeReplyObject(keys);
            break;
        }
        const char *k[50];
        for (size_t i = 0; i < keys->elements; i++)
            k[i] = keys->element[i]->str;
        migrate_keys(src, &topo.masters[to], k, (int)keys->elements);
        freeReplyObject(keys);
    }
    redisFree(src);
    setslot_node(slot, to);
}

START_TEST(test_listing_during_migration)
{
    enum { N = 20, BUCKET = 21 };
    redisContext *c = h_connect_extra(&proxy);
    struct model m = { .n = 0 };
    char ids[N][64], rk[N][512], name[256], idx[256], tag[32], glob[256], want[65536];
    for (int i = 0; i < N; i++) {
        id_in_bucket("mv-", BUCKET, i, ids[i], sizeof ids[i]);
        legacy_name(&F_CHAT, ids[i], name, sizeof name);
        run(c, "OK", "SET %s v%d", name, i);
        record_key(&F_CHAT, ids[i], rk[i], sizeof rk[i]);
        model_set(&m, &F_CHAT, ids[i], true, false);
    }
    for (int i = 0; i < 5; i++) {           /* chats in other buckets too */
        char id[64];
        id_in_bucket("mv-", (BUCKET + 1 + i) % 32, 0, id, sizeof id);
        legacy_name(&F_CHAT, id, name, sizeof name);
        run(c, "OK", "SET %s o", name);
        model_set(&m, &F_CHAT, id, true, false);
    }
    H_FMT(tag, sizeof tag, "ch:%d", BUCKET);
    int slot = h_slot(tag), from = h_topo_owner(&topo, slot), to = (from + 1) % topo.nmasters;
    index_key(&F_CHAT, BUCKET, idx, sizeof idx);
    H_FMT(glob, sizeof glob, "%s:chat:mv-*", prefix);
    model_names(&m, &F_CHAT, glob, want, sizeof want);

    redisContext *src = h_connect_node(&topo.masters[from]);
    redisContext *dst = h_connect_node(&topo.masters[to]);
    expect_ok_reply(h_cmd(dst, "CLUSTER SETSLOT %d IMPORTING %s", slot, topo.master_id[from]),
                    "IMPORTING");
    expect_ok_reply(h_cmd(src, "CLUSTER SETSLOT %d MIGRATING %s", slot, topo.master_id[to]),
                    "MIGRATING");
    /* half the records moved, the index not yet */
    const char *half[N / 2];
    for (int i = 0; i < N / 2; i++)
        half[i] = rk[i];
    migrate_keys(src, &topo.masters[to], half, N / 2);
    expect_keys(c, glob, want);
    expect_scan(c, glob, NULL, want);
    /* writes to records still on the source run there, the index follows
     * (the DEL'd record can no longer be named there: the script copes) */
    legacy_name(&F_CHAT, ids[N - 1], name, sizeof name);
    {
        redisReply *r = h_cmd(c, "DEL %s", name);
        H_EXPECT_INT(r, 1);
        freeReplyObject(r);
    }
    model_set(&m, &F_CHAT, ids[N - 1], false, false);
    legacy_name(&F_CHAT, ids[N - 2], name, sizeof name);
    run(c, "OK", "SET %s w EX 1000", name);
    model_set(&m, &F_CHAT, ids[N - 2], true, true);
    model_names(&m, &F_CHAT, glob, want, sizeof want);
    expect_keys(c, glob, want);
    expect_scan(c, glob, NULL, want);
    /* the index moved, the other half of the records not */
    const char *ix[1] = { idx };
    migrate_keys(src, &topo.masters[to], ix, 1);
    expect_keys(c, glob, want);
    expect_scan(c, glob, NULL, want);
    /* the move ends; a write goes to the new owner and keeps the index exact */
    finish_move(slot, from, to);
    legacy_name(&F_CHAT, ids[0], name, sizeof name);
    run(c, NULL, "DEL %s", name);
    model_set(&m, &F_CHAT, ids[0], false, false);
    model_names(&m, &F_CHAT, glob, want, sizeof want);
    expect_keys(c, glob, want);
    h_topo_load(&topo);
    expect_indexes_within(&m, &F_CHAT, 50);
    /* and back, as the cluster was */
    expect_ok_reply(h_cmd(src, "CLUSTER SETSLOT %d IMPORTING %s", slot, topo.master_id[to]),
                    "IMPORTING back");
    expect_ok_reply(h_cmd(dst, "CLUSTER SETSLOT %d MIGRATING %s", slot, topo.master_id[from]),
                    "MIGRATING back");
    finish_move(slot, to, from);
    h_topo_load(&topo);
    expect_keys(c, glob, want);
    redisFree(src);
    redisFree(dst);
    redisFree(c);
}
END_TEST

struct mover {
    int slot, from, to;
};

static void *mover_main(void *arg)
{
    struct mover *mv = arg;
    h_sleep_ms(300);        /* a time: the move ends while the scan runs */
    finish_move(mv->slot, mv->from, mv->to);
    return NULL;
}

/* SCAN ... TYPE reads each record: while some of a bucket's records are on
 * the target and its index on the source, that bucket's read answers
 * TRYAGAIN inside the proxy, which retries it; the move ends 300 ms in, and
 * the scan is exact. */
START_TEST(test_scan_type_during_migration)
{
    enum { N = 16, BUCKET = 22 };
    redisContext *c = h_connect_extra(&proxy);
    char ids[N][64], rk[N][512], name[256], tag[32], glob[256], want[65536];
    const char *names[N];
    static char store[N][256];
    size_t nh = 0;
    for (int i = 0; i < N; i++) {
        id_in_bucket("ty-", BUCKET, i, ids[i], sizeof ids[i]);
        legacy_name(&F_CHAT, ids[i], name, sizeof name);
        if (i % 2) {
            run(c, NULL, "HSET %s f v", name);
            legacy_name(&F_CHAT, ids[i], store[nh], sizeof store[0]);
            names[nh] = store[nh], nh++;
        } else {
            run(c, "OK", "SET %s v", name);
        }
        record_key(&F_CHAT, ids[i], rk[i], sizeof rk[i]);
    }
    join_sorted(names, nh, want, sizeof want);
    H_FMT(tag, sizeof tag, "ch:%d", BUCKET);
    H_FMT(glob, sizeof glob, "%s:chat:ty-*", prefix);
    struct mover mv = { h_slot(tag), 0, 0 };
    mv.from = h_topo_owner(&topo, mv.slot);
    mv.to = (mv.from + 1) % topo.nmasters;
    redisContext *src = h_connect_node(&topo.masters[mv.from]);
    redisContext *dst = h_connect_node(&topo.masters[mv.to]);
    expect_ok_reply(h_cmd(dst, "CLUSTER SETSLOT %d IMPORTING %s", mv.slot,
                          topo.master_id[mv.from]), "IMPORTING");
    expect_ok_reply(h_cmd(src, "CLUSTER SETSLOT %d MIGRATING %s", mv.slot,
                          topo.master_id[mv.to]), "MIGRATING");
    const char *half[N / 2];
    for (int i = 0; i < N / 2; i++)
        half[i] = rk[i];
    migrate_keys(src, &topo.masters[mv.to], half, N / 2);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, mover_main, &mv), 0);
    expect_scan(c, glob, "hash", want);
    pthread_join(th, NULL);
    h_topo_load(&topo);
    expect_scan(c, glob, "hash", want);
    /* and back */
    expect_ok_reply(h_cmd(src, "CLUSTER SETSLOT %d IMPORTING %s", mv.slot, topo.master_id[mv.to]),
                    "IMPORTING back");
    expect_ok_reply(h_cmd(dst, "CLUSTER SETSLOT %d MIGRATING %s", mv.slot,
                          topo.master_id[mv.from]), "MIGRATING back");
    finish_move(mv.slot, mv.to, mv.from);
    redisFree(src);
    redisFree(dst);
    redisFree(c);
}
END_TEST

/* SCAN options Redis refuses are refused the same way with an index
 * pattern (the every-master path lets a node answer). */
START_TEST(test_scan_errors_as_redis)
{
    static const char *const bad[][2] = {
        { "COUNT", "0" }, { "COUNT", "abc" }, { "COUNT", "-1" }, { "FOO", "bar" },
    };
    redisContext *c = h_connect_extra(&proxy);
    redisContext *n = h_connect_node(&topo.masters[0]);
    char glob[256];
    H_FMT(glob, sizeof glob, "%s:chat:*", prefix);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        redisReply *p = h_cmd(c, "SCAN 0 MATCH %s %s %s", glob, bad[i][0], bad[i][1]);
        redisReply *d = h_cmd(n, "SCAN 0 MATCH %s %s %s", glob, bad[i][0], bad[i][1]);
        H_EXPECT_TYPE(d, REDIS_REPLY_ERROR);
        H_EXPECT_TYPE(p, REDIS_REPLY_ERROR);
        ck_assert_msg(strcmp(p->str, d->str) == 0, "%s %s: proxy '%s', node '%s'", bad[i][0],
                      bad[i][1], p->str, d->str);
        freeReplyObject(p);
        freeReplyObject(d);
    }
    redisReply *r = h_cmd(c, "SCAN 32 MATCH %s", glob);
    H_EXPECT_ERR(r, "ERR invalid cursor");
    freeReplyObject(r);
    redisFree(n);
    redisFree(c);
}
END_TEST

/* LMPOP and ZMPOP answer [key, elements]: the key comes back as the legacy
 * name, for an indexed record (through the index script) as for any
 * rewritten name. */
START_TEST(test_mpop_names_legacy)
{
    redisContext *c = h_connect_extra(&proxy);
    char chat[256], lock[256];
    legacy_name(&F_CHAT, "mp", chat, sizeof chat);
    H_FMT(lock, sizeof lock, "%s:lock:mp", prefix);
    const char *const names[] = { chat, lock };
    for (int i = 0; i < 2; i++) {
        freeReplyObject(h_cmd(c, "RPUSH %s a b", names[i]));
        redisReply *r = h_cmd(c, "LMPOP 1 %s LEFT", names[i]);
        H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
        ck_assert_int_eq(r->elements, 2);
        H_EXPECT_BULK(r->element[0], names[i]);
        freeReplyObject(r);
        freeReplyObject(h_cmd(c, "DEL %s", names[i]));
        freeReplyObject(h_cmd(c, "ZADD %s 1 a", names[i]));
        r = h_cmd(c, "ZMPOP 1 %s MIN", names[i]);
        H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
        H_EXPECT_BULK(r->element[0], names[i]);
        freeReplyObject(r);
    }
    struct model m = { .n = 0 };
    model_set(&m, &F_CHAT, "mp", false, false);      /* popped empty: gone */
    expect_indexes_exact(&m, &F_CHAT);
    redisFree(c);
}
END_TEST

/* The client's own scripts may write any key they declare, and the proxy
 * cannot see inside them: the index script follows each script on every
 * key it declares, more than 16 of them too, and inside MULTI once EXEC has
 * run; as it follows a blocking pop queued in MULTI (outside MULTI:
 * test_blocking). Each listing comes through the proxy first: the
 * follow-up writes go on its connections ahead of it. */
START_TEST(test_scripts_keep_indexes)
{
    enum { N = 20 };
    static const char del_all[] = "for _, k in ipairs(KEYS) do redis.call('del', k) end";
    static const char set_one[] = "return redis.call('set', KEYS[1], ARGV[1])";
    redisContext *c = h_connect_extra(&proxy);
    struct model m = { .n = 0 };
    char ids[N][64], names[N][256], glob[256], want[65536];
    const char *argv[3 + N];
    H_FMT(glob, sizeof glob, "%s:chat:sk*", prefix);
    argv[0] = "EVAL", argv[1] = del_all, argv[2] = "20";
    for (int i = 0; i < N; i++) {      /* one bucket: one slot, one script */
        id_in_bucket("sk", 5, i, ids[i], sizeof ids[i]);
        legacy_name(&F_CHAT, ids[i], names[i], sizeof names[i]);
        freeReplyObject(h_cmd(c, "SET %s v", names[i]));
        model_set(&m, &F_CHAT, ids[i], true, false);
        argv[3 + i] = names[i];
    }
    model_names(&m, &F_CHAT, glob, want, sizeof want);
    expect_keys(c, glob, want);

    redisReply *r = redisCommandArgv(c, 3 + N, argv, NULL);
    ck_assert_msg(r && r->type == REDIS_REPLY_NIL, "EVAL deleting %d records", N);
    freeReplyObject(r);
    for (int i = 0; i < N; i++)
        model_set(&m, &F_CHAT, ids[i], false, false);
    expect_keys(c, glob, "");
    expect_indexes_exact(&m, &F_CHAT);

    /* inside MULTI: two records written, then one deleted, by scripts */
    run(c, "OK", "MULTI");
    run(c, "QUEUED", "EVAL %s 1 %s x", set_one, names[0]);
    run(c, "QUEUED", "EVAL %s 1 %s x", set_one, names[1]);
    r = h_cmd(c, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 2);
    freeReplyObject(r);
    model_set(&m, &F_CHAT, ids[0], true, false);
    model_set(&m, &F_CHAT, ids[1], true, false);
    model_names(&m, &F_CHAT, glob, want, sizeof want);
    expect_keys(c, glob, want);
    expect_indexes_exact(&m, &F_CHAT);

    run(c, "OK", "MULTI");
    run(c, "QUEUED", "EVAL %s 1 %s", del_all, names[0]);
    r = h_cmd(c, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    model_set(&m, &F_CHAT, ids[0], false, false);
    model_names(&m, &F_CHAT, glob, want, sizeof want);
    expect_keys(c, glob, want);
    expect_indexes_exact(&m, &F_CHAT);

    /* a blocking pop, which Lua cannot run, empties a list inside MULTI */
    run(c, "OK", "MULTI");
    run(c, "QUEUED", "RPUSH %s a", names[2]);
    run(c, "QUEUED", "BLPOP %s 0", names[2]);
    r = h_cmd(c, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 2);
    H_EXPECT_TYPE(r->element[1], REDIS_REPLY_ARRAY);
    H_EXPECT_BULK(r->element[1]->element[0], names[2]);
    freeReplyObject(r);
    model_names(&m, &F_CHAT, glob, want, sizeof want);
    expect_keys(c, glob, want);
    expect_indexes_exact(&m, &F_CHAT);
    redisFree(c);
}
END_TEST

/* A write the index script cannot take (more arguments than Lua's unpack)
 * is refused, not sent without its index; other keys are not limited. */
START_TEST(test_too_long_refused)
{
    enum { FIELDS = 4000 };
    static const char *argv[2 + 2 * FIELDS];
    static char fields[FIELDS][16];
    char name[256], plain[128];
    redisContext *c = h_connect_extra(&proxy);
    legacy_name(&F_CHAT, "long", name, sizeof name);
    H_FMT(plain, sizeof plain, "%s-plain", prefix);
    argv[0] = "HSET";
    for (int i = 0; i < FIELDS; i++) {
        snprintf(fields[i], sizeof fields[i], "f%d", i);
        argv[2 + 2 * i] = fields[i];
        argv[3 + 2 * i] = "v";
    }
    argv[1] = name;
    redisReply *r = h_cmd_argv(c, 2 + 2 * FIELDS, argv);
    H_EXPECT_ERR(r, "ERR a write to indexed records with more than 7900 arguments");
    freeReplyObject(r);
    r = h_cmd(c, "EXISTS %s", name);
    H_EXPECT_INT(r, 0);
    freeReplyObject(r);
    argv[1] = plain;
    r = h_cmd_argv(c, 2 + 2 * FIELDS, argv);
    H_EXPECT_INT(r, FIELDS);
    freeReplyObject(r);
    freeReplyObject(h_cmd(c, "DEL %s", plain));
    /* just under the limit: wrapped, and indexed */
    argv[1] = name;
    r = h_cmd_argv(c, 2 + 2 * 3949, argv);
    H_EXPECT_INT(r, 3949);
    freeReplyObject(r);
    struct model m = { .n = 0 };
    model_set(&m, &F_CHAT, "long", true, false);
    expect_indexes_exact(&m, &F_CHAT);
    redisFree(c);
}
END_TEST

/* ---------- the glob, against a node's KEYS ---------- */

START_TEST(test_glob_as_node)
{
    static const char alpha[] = "ab-^]\\[*?:";
    char tag[32], keys[200][40];
    H_FMT(tag, sizeof tag, "{g%ld}", (long)getpid());
    int m = h_topo_owner(&topo, h_slot(tag));
    redisContext *n = h_connect_node(&topo.masters[m]);
    srand(1234);
    for (int i = 0; i < 200; i++) {
        int len = rand() % 6;
        H_FMT(keys[i], sizeof keys[i], "%s", tag);
        for (int j = 0; j < len; j++) {
            size_t at = strlen(keys[i]);
            keys[i][at] = alpha[rand() % (sizeof alpha - 1)];
            keys[i][at + 1] = '\0';
        }
        H_OK(n, "SET %s x", keys[i]);
    }
    for (int t = 0; t < 400; t++) {
        char pat[64];
        int len = rand() % 7;
        H_FMT(pat, sizeof pat, "%s", tag);
        for (int j = 0; j < len; j++) {
            size_t at = strlen(pat);
            pat[at] = alpha[rand() % (sizeof alpha - 1)];
            pat[at + 1] = '\0';
        }
        redisReply *r = h_cmd(n, "KEYS %s", pat);
        H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
        size_t want = 0;
        for (int i = 0; i < 200; i++) {
            bool dup = false;
            for (int j = 0; j < i && !dup; j++)
                dup = strcmp(keys[i], keys[j]) == 0;
            if (!dup && glob_match(pat, strlen(pat), keys[i], strlen(keys[i])))
                want++;
        }
        size_t got = 0;
        for (size_t i = 0; i < r->elements; i++)
            got += strncmp(r->element[i]->str, tag, strlen(tag)) == 0;
        ck_assert_msg(got == want, "pattern '%s': node matches %zu, glob_match %zu", pat, got, want);
        for (size_t i = 0; i < r->elements; i++)
            ck_assert_msg(glob_match(pat, strlen(pat), r->element[i]->str, r->element[i]->len),
                          "pattern '%s': node matches '%s', glob_match does not", pat,
                          r->element[i]->str);
        freeReplyObject(r);
    }
    for (int i = 0; i < 200; i++)
        freeReplyObject(h_cmd(n, "DEL %s", keys[i]));
    redisFree(n);
}
END_TEST

static Suite *index_suite(void)
{
    Suite *s = suite_create("index");
    TCase *tc = tcase_create("index");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_write_replies_identical, 0, 2);   /* RESP2, RESP3 */
    tcase_add_test(tc, test_session_indexes_exact);
    tcase_add_test(tc, test_expired_pruned);
    tcase_add_test(tc, test_noscript_recovered);
    tcase_add_test(tc, test_listing_during_migration);
    tcase_add_test(tc, test_scan_type_during_migration);
    tcase_add_test(tc, test_scan_errors_as_redis);
    tcase_add_test(tc, test_too_long_refused);
    tcase_add_test(tc, test_mpop_names_legacy);
    tcase_add_test(tc, test_scripts_keep_indexes);
    tcase_add_test(tc, test_glob_as_node);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(index_suite());
}
