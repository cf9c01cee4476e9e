/*
 * Key layout through the proxy: a proxy started with layout-rules
 * conf/layouts/botmesh-v1.rules and a run-unique layout-prefix rewrites the
 * legacy names of every key argument to cluster names before routing
 * (single keys, split commands, movable keys), and the keys land on the
 * cluster under their cluster names only (read directly from the owning
 * master). Keys no rule rewrites keep their names. Listings (KEYS, SCAN,
 * RANDOMKEY) return legacy names, filtered by the client's pattern, without
 * the layout's own keys (indexes, the marker). Several rules files, each
 * for its own prefix, in one proxy; and a start refused when two files
 * serving one prefix overlap.
 */
#include <stdbool.h>

#include "harness.h"

static struct h_proxy proxy;
static char prefix[64];        /* one segment: no ':' */
static struct h_topo topo;

static void setup(void)
{
    h_layout_proxy_start(&proxy, "lay", prefix, sizeof prefix);
    h_topo_load(&topo);
}

static void teardown(void)
{
    h_proxy_stop(&proxy);
}

/* pfx + rest, in a ring of static buffers. */
static const char *Q(const char *pfx, const char *rest)
{
    static char ring[16][256];
    static int next;
    char *b = ring[next++ % 16];
    H_FMT(b, sizeof ring[0], "%s%s", pfx, rest);
    return b;
}

/* "PREFIX" + rest. */
static const char *P(const char *rest)
{
    return Q(prefix, rest);
}

/* GET name directly on the master that owns it. */
static redisReply *direct_get(const char *name)
{
    redisContext *c = h_connect_owner(&topo, name);
    redisReply *r = h_cmd(c, "GET %s", name);
    redisFree(c);
    return r;
}

static void expect_direct(const char *name, const char *value)
{
    redisReply *r = direct_get(name);
    if (value) {
        H_EXPECT_BULK(r, value);
    } else {
        H_EXPECT_NIL(r);
    }
    freeReplyObject(r);
}

START_TEST(test_single_keys)
{
    redisContext *c = h_connect_extra(&proxy);
    H_OK(c, "SET %s v1", P(":chat:tg:42"));
    H_OK(c, "SET %s v2", P(":lock:a:b:fence"));
    H_OK(c, "SET %s v3", P(":co:turn:c1:seq"));
    H_OK(c, "SET %s v4", P(":conv:1"));          /* a keep: same name */
    redisReply *r = h_cmd(c, "GET %s", P(":chat:tg:42"));
    H_EXPECT_BULK(r, "v1");
    freeReplyObject(r);
    expect_direct(P(":{ch:16}:r:tg%3A42"), "v1");
    expect_direct(P(":chat:tg:42"), NULL);
    expect_direct(P(":{lk:a%3Ab}:f"), "v2");
    expect_direct(P(":co:{t:c1}:seq"), "v3");
    expect_direct(P(":conv:1"), "v4");
    /* a cluster name sent by a client is no legacy name: used as it is */
    r = h_cmd(c, "GET %s", P(":{ch:16}:r:tg%3A42"));
    H_EXPECT_BULK(r, "v1");
    freeReplyObject(r);
    redisFree(c);
}
END_TEST

/* Split commands are split by the slots of the rewritten names. */
START_TEST(test_split_keys)
{
    redisContext *c = h_connect_extra(&proxy);
    H_OK(c, "MSET %s a %s b %s c", P(":msgs:m1"), P(":chat:x"), P(":cursor:z"));
    redisReply *r = h_cmd(c, "MGET %s %s %s %s", P(":chat:x"), P(":msgs:m1"), P(":cursor:z"),
                          P(":chat:none"));
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 4);
    H_EXPECT_BULK(r->element[0], "b");
    H_EXPECT_BULK(r->element[1], "a");
    H_EXPECT_BULK(r->element[2], "c");
    H_EXPECT_NIL(r->element[3]);
    freeReplyObject(r);
    expect_direct(P(":{m:m1}:z"), "a");
    expect_direct(P(":{ch:7}:r:x"), "b");
    r = h_cmd(c, "EXISTS %s %s %s", P(":chat:x"), P(":msgs:m1"), P(":chat:none"));
    H_EXPECT_INT(r, 2);
    freeReplyObject(r);
    r = h_cmd(c, "DEL %s %s %s", P(":chat:x"), P(":msgs:m1"), P(":cursor:z"));
    H_EXPECT_INT(r, 3);
    freeReplyObject(r);
    expect_direct(P(":{ch:7}:r:x"), NULL);
    redisFree(c);
}
END_TEST

/* Keys found by a command's own rule (XREAD ... STREAMS, numkeys) and two
 * keys of one family that share a slot only in the cluster layout. */
START_TEST(test_movable_keys)
{
    redisContext *c = h_connect_extra(&proxy);
    redisReply *r = h_cmd(c, "XADD %s 1-1 f v", P(":msgs:s1"));
    H_EXPECT_BULK(r, "1-1");
    freeReplyObject(r);
    r = h_cmd(c, "XREAD COUNT 5 STREAMS %s 0", P(":msgs:s1"));
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 1);
    freeReplyObject(r);
    /* the log and an item of one chat share {m:chat}: one slot */
    H_OK(c, "SET %s body", P(":msg:s1:item1"));
    r = h_cmd(c, "ZADD %s 1 item1", P(":msgs:s2"));
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    H_OK(c, "SET %s body", P(":msg:s2:item1"));
    r = h_cmd(c, "ZUNIONSTORE %s 1 %s", P(":msgs:s2"), P(":msgs:s2"));
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    /* turn counters of one chat share a slot: a multi-key command works */
    H_OK(c, "SET %s 1", P(":co:turn:c9:seq"));
    r = h_cmd(c, "RENAME %s %s", P(":co:turn:c9:seq"), P(":co:turn:c9:last"));
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    expect_direct(P(":co:{t:c9}:last"), "1");
    redisFree(c);
}
END_TEST

/* ---- listings ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* names (n, sorted here) are exactly want (NULL-terminated, any order). */
static void expect_names(char **names, size_t n, const char *const *want, const char *what)
{
    size_t nwant = 0;
    while (want[nwant])
        nwant++;
    const char **w = calloc(nwant + 1, sizeof *w);
    memcpy(w, want, nwant * sizeof *w);
    qsort(names, n, sizeof *names, cmp_str);
    qsort(w, nwant, sizeof *w, cmp_str);
    for (size_t i = 0; i < n || i < nwant; i++)
        ck_assert_msg(i < n && i < nwant && strcmp(names[i], w[i]) == 0,
                      "%s: entry %zu: got '%s', want '%s' (%zu names, %zu wanted)", what, i,
                      i < n ? names[i] : "(none)", i < nwant ? w[i] : "(none)", n, nwant);
    free(w);
}

static void expect_keys(redisContext *c, const char *pattern, const char *const *want)
{
    redisReply *r = h_cmd(c, "KEYS %s", pattern);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    char **names = calloc(r->elements + 1, sizeof *names);
    for (size_t i = 0; i < r->elements; i++)
        names[i] = r->element[i]->str;
    expect_names(names, r->elements, want, pattern);
    free(names);
    freeReplyObject(r);
}

/* A whole SCAN MATCH pattern COUNT count: every name once. */
static void expect_scan(redisContext *c, const char *pattern, const char *const *want)
{
    char cursor[64] = "0";
    char **names = NULL;
    size_t n = 0;
    int calls = 0;
    do {
        redisReply *r = h_cmd(c, "SCAN %s MATCH %s COUNT 3", cursor, pattern);
        H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
        ck_assert_int_eq(r->elements, 2);
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        names = realloc(names, (n + r->element[1]->elements + 1) * sizeof *names);
        for (size_t i = 0; i < r->element[1]->elements; i++)
            names[n++] = strdup(r->element[1]->element[i]->str);
        freeReplyObject(r);
        ck_assert_msg(++calls < 100000, "SCAN does not end");
    } while (strcmp(cursor, "0") != 0);
    expect_names(names, n, want, pattern);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* A chat id holding ':' (a provider-qualified id, "tg:77"): its log and its
 * items still share the chat's slot, so a transaction over both runs, as on
 * one server; on the cluster they are {m:tg%3A77}'s. */
START_TEST(test_chat_id_with_colon)
{
    redisContext *c = h_connect_extra(&proxy);
    H_OK(c, "MULTI");
    redisReply *r = h_cmd(c, "ZADD %s 1 m0", P(":msgs:tg:77"));
    H_EXPECT_STATUS(r, "QUEUED");
    freeReplyObject(r);
    r = h_cmd(c, "SET %s body", P(":msg:tg:77:m0"));
    H_EXPECT_STATUS(r, "QUEUED");
    freeReplyObject(r);
    r = h_cmd(c, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 2);
    H_EXPECT_INT(r->element[0], 1);
    H_EXPECT_STATUS(r->element[1], "OK");
    freeReplyObject(r);
    expect_direct(P(":{m:tg%3A77}:i:m0"), "body");
    redisContext *o = h_connect_owner(&topo, P(":{m:tg%3A77}:z"));
    r = h_cmd(o, "ZSCORE %s m0", P(":{m:tg%3A77}:z"));
    H_EXPECT_BULK(r, "1");
    freeReplyObject(r);
    redisFree(o);
    r = h_cmd(c, "DEL %s %s", P(":msgs:tg:77"), P(":msg:tg:77:m0"));
    H_EXPECT_INT(r, 2);
    freeReplyObject(r);
    redisFree(c);
}
END_TEST

START_TEST(test_listings)
{
    redisContext *c = h_connect_extra(&proxy);
    const char *chats[] = { P(":chat:a"), P(":chat:tg:42"), P(":chat:{x}*"), NULL };
    const char *others[] = { P(":msgs:m"), P(":lock:l:fence"), P(":co:leader:n"),
                             P(":user:u:ns:k"), P(":conv:1"), NULL };
    for (int i = 0; chats[i]; i++)
        H_OK(c, "SET %s 1", chats[i]);
    for (int i = 0; others[i]; i++)
        H_OK(c, "SET %s 1", others[i]);
    /* the layout's own keys: an index, written directly, and the marker */
    redisContext *m = h_connect_owner(&topo, P(":{ch:3}:idx"));
    redisReply *r = h_cmd(m, "ZADD %s 1 x", P(":{ch:3}:idx"));
    freeReplyObject(r);
    redisFree(m);
    const char *all[] = { chats[0], chats[1], chats[2], others[0], others[1], others[2],
                          others[3], others[4], NULL };
    char pattern[128];
    H_FMT(pattern, sizeof pattern, "%s:*", prefix);
    expect_keys(c, pattern, all);
    expect_scan(c, pattern, all);
    H_FMT(pattern, sizeof pattern, "%s:chat:*", prefix);
    expect_keys(c, pattern, chats);
    expect_scan(c, pattern, chats);
    H_FMT(pattern, sizeof pattern, "%s:chat:\\{x}\\*", prefix);     /* escapes */
    const char *one[] = { chats[2], NULL };
    expect_keys(c, pattern, one);
    H_FMT(pattern, sizeof pattern, "%s:[lm]*", prefix);
    const char *lm[] = { others[0], others[1], NULL };
    expect_keys(c, pattern, lm);
    expect_scan(c, pattern, lm);
    H_FMT(pattern, sizeof pattern, "%s:{*", prefix);        /* only cluster names match */
    const char *none[] = { NULL };
    expect_keys(c, pattern, none);
    /* RANDOMKEY: a name of this prefix it returns is a legacy one; a nil
     * only when every master drew one of the layout's own keys, which on
     * this shared cluster is rare: most draws give a name */
    int names = 0;
    for (int i = 0; i < 200; i++) {
        r = h_cmd(c, "RANDOMKEY");
        if (r->type == REDIS_REPLY_NIL) {
            freeReplyObject(r);
            continue;
        }
        H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
        names++;
        if (strncmp(r->str, prefix, strlen(prefix)) == 0 && r->str[strlen(prefix)] == ':') {
            bool known = false;
            for (int k = 0; all[k]; k++)
                known |= strcmp(all[k], r->str) == 0;
            ck_assert_msg(known, "RANDOMKEY gave %s", r->str);
        }
        freeReplyObject(r);
    }
    ck_assert_msg(names >= 150, "RANDOMKEY gave a name %d times of 200", names);
    redisFree(c);
}
END_TEST

/* ---- several rules files ---- */

/* A proxy serving both shipped layouts, botmesh-v1 and courier-v1, each for
 * a run-unique prefix of its own, and a small rules file of its own (a
 * presence-like family) for a third. */
static struct h_proxy files_proxy;
static char bm[64], pr[64], cr[64];
static char presence_rules[512];

static const char PRESENCE_RULES[] =
    "# a presence family, as another app's own rules file\n"
    "rule presence     p:presence:<user>        ->  p:{pr:<user>}:s\n"
    "rule presence-dev p:presence:<user>:<dev>  ->  p:{pr:<user>}:d:<dev>\n";

static void write_rules(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void setup_files(void)
{
    long long t = h_now_ms() % 1000000;
    H_FMT(bm, sizeof bm, "bm%ld%lld", (long)getpid(), t);
    H_FMT(pr, sizeof pr, "pr%ld%lld", (long)getpid(), t);
    H_FMT(cr, sizeof cr, "cr%ld%lld", (long)getpid(), t);
    H_FMT(presence_rules, sizeof presence_rules, "%s/presence-%ld.rules",
          h_env("TAGPROXY_TEST_DIR"), (long)getpid());
    write_rules(presence_rules, PRESENCE_RULES);
    const char *const args[] = { "--layout-rules", "conf/layouts/botmesh-v1.rules", bm,
                                 "--layout-rules", presence_rules, pr,
                                 "--layout-rules", "conf/layouts/courier-v1.rules", cr, NULL };
    h_proxy_start(&files_proxy, args);
    h_topo_load(&topo);
}

static void teardown_files(void)
{
    h_proxy_stop(&files_proxy);
    unlink(presence_rules);
}

/* Keys of both files rewrite, each by the rules of its prefix's file only. */
START_TEST(test_files_rewrite)
{
    redisContext *c = h_connect_extra(&files_proxy);
    H_OK(c, "SET %s v1", Q(bm, ":chat:tg:42"));
    H_OK(c, "SET %s v2", Q(pr, ":presence:u1"));
    H_OK(c, "SET %s v3", Q(pr, ":presence:u1:phone"));
    H_OK(c, "SET %s v4", Q(pr, ":chat:tg:42"));       /* not a family of pr's file */
    H_OK(c, "SET %s v5", Q(bm, ":presence:u1"));      /* nor of bm's */
    expect_direct(Q(bm, ":{ch:16}:r:tg%3A42"), "v1");
    expect_direct(Q(pr, ":{pr:u1}:s"), "v2");
    expect_direct(Q(pr, ":{pr:u1}:d:phone"), "v3");
    expect_direct(Q(pr, ":chat:tg:42"), "v4");
    expect_direct(Q(bm, ":presence:u1"), "v5");
    expect_direct(Q(pr, ":presence:u1"), NULL);
    redisReply *r = h_cmd(c, "MGET %s %s %s", Q(pr, ":presence:u1"), Q(bm, ":chat:tg:42"),
                          Q(pr, ":presence:u1:phone"));
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 3);
    H_EXPECT_BULK(r->element[0], "v2");
    H_EXPECT_BULK(r->element[1], "v1");
    H_EXPECT_BULK(r->element[2], "v3");
    freeReplyObject(r);
    redisFree(c);
}
END_TEST

/* One transaction over each file's family: the keys of one family share a
 * slot only in the cluster layout. */
START_TEST(test_files_transactions)
{
    redisContext *c = h_connect_extra(&files_proxy);
    const char *tx[][2] = { { Q(pr, ":presence:u7"), Q(pr, ":presence:u7:tab") },
                            { Q(bm, ":msgs:tg:77"), Q(bm, ":msg:tg:77:m0") },
                            { Q(cr, ":presence:score:room:1"), Q(cr, ":presence:meta:room:1") } };
    for (int i = 0; i < 3; i++) {
        H_OK(c, "MULTI");
        redisReply *r = h_cmd(c, "SET %s a", tx[i][0]);
        H_EXPECT_STATUS(r, "QUEUED");
        freeReplyObject(r);
        r = h_cmd(c, "SET %s b", tx[i][1]);
        H_EXPECT_STATUS(r, "QUEUED");
        freeReplyObject(r);
        r = h_cmd(c, "EXEC");
        H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
        ck_assert_int_eq(r->elements, 2);
        H_EXPECT_STATUS(r->element[0], "OK");
        H_EXPECT_STATUS(r->element[1], "OK");
        freeReplyObject(r);
    }
    expect_direct(Q(pr, ":{pr:u7}:d:tab"), "b");
    expect_direct(Q(bm, ":{m:tg%3A77}:i:m0"), "b");
    expect_direct(Q(cr, ":presence:{pr:room%3A1}:meta"), "b");
    redisFree(c);
}
END_TEST

/* KEYS and SCAN list the legacy names of every file's prefixes. */
START_TEST(test_files_listings)
{
    redisContext *c = h_connect_extra(&files_proxy);
    const char *bms[] = { Q(bm, ":chat:a"), Q(bm, ":lock:l:fence"), Q(bm, ":conv:1"), NULL };
    const char *prs[] = { Q(pr, ":presence:u1"), Q(pr, ":presence:u1:d"), Q(pr, ":other"), NULL };
    const char *crs[] = { Q(cr, ":presence:score:room:1"), Q(cr, ":score:t"), Q(cr, ":stream:t"),
                          NULL };
    const struct { const char *pfx; const char **names; } each[] = { { bm, bms }, { pr, prs },
                                                                     { cr, crs } };
    char pattern[128];
    for (int k = 0; k < 3; k++) {
        for (int i = 0; each[k].names[i]; i++)
            H_OK(c, "SET %s 1", each[k].names[i]);
    }
    for (int k = 0; k < 3; k++) {
        H_FMT(pattern, sizeof pattern, "%s:*", each[k].pfx);
        expect_keys(c, pattern, each[k].names);
        expect_scan(c, pattern, each[k].names);
    }
    H_FMT(pattern, sizeof pattern, "%s:presence:*", pr);
    const char *pres[] = { prs[0], prs[1], NULL };
    expect_keys(c, pattern, pres);
    redisFree(c);
}
END_TEST

/* Two files serving one prefix whose rules can match one same name: the
 * start is refused, naming both lines. */
START_TEST(test_files_overlap_refused)
{
    char path[512], seed[128], log[8192], want[600];
    H_FMT(path, sizeof path, "%s/locks-%ld.rules", h_env("TAGPROXY_TEST_DIR"), (long)getpid());
    write_rules(path, "# another app's locks\nrule mylock p:lock:<k> -> p:{x:<k>}:l\n");
    const char *const args[] = { "--layout-rules", "conf/layouts/botmesh-v1.rules",
                                 "--layout-rules", path, "--layout-prefix", "ovl", NULL };
    h_seed(seed, sizeof seed);
    h_proxy_start_fails("overlap", seed, args, log, sizeof log);
    unlink(path);
    ck_assert_msg(strstr(log, "conf/layouts/botmesh-v1.rules:") != NULL, "%s", log);
    H_FMT(want, sizeof want, ": rule lock and %s:2: rule mylock both match \"ovl:lock:x\"", path);
    ck_assert_msg(strstr(log, want) != NULL, "%s", log);
}
END_TEST

/* ---- ids holding the bytes the layout encodes ---- */

/* prefix + a + b + c, in the ring P() uses. */
static const char *N(const char *a, const char *b, const char *c)
{
    char rest[200];
    H_FMT(rest, sizeof rest, "%s%s%s", a, b, c);
    return P(rest);
}

/* The contract's bucket (LAYOUT.md): FNV-1a 32-bit of the raw id, mod 32. */
static int bucket_of(const char *id)
{
    uint32_t h = 0x811c9dc5u;
    for (const unsigned char *c = (const unsigned char *)id; *c; c++)
        h = (h ^ *c) * 0x01000193u;
    return (int)(h % 32);
}

static void expect_exec(redisContext *c, const char *const *cmds, const char *want)
{
    H_OK(c, "MULTI");
    for (int i = 0; cmds[i]; i += 3) {
        redisReply *r = h_cmd(c, cmds[i], cmds[i + 1], cmds[i + 2]);
        H_EXPECT_STATUS(r, "QUEUED");
        freeReplyObject(r);
    }
    redisReply *r = h_cmd(c, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    char got[64] = "";
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        size_t at = strlen(got);
        if (e->type == REDIS_REPLY_INTEGER)
            snprintf(got + at, sizeof got - at, "%s%lld", i ? " " : "", e->integer);
        else
            snprintf(got + at, sizeof got - at, "%s%s", i ? " " : "",
                     e->type == REDIS_REPLY_ERROR ? "(error)" : e->str);
    }
    ck_assert_msg(strcmp(got, want) == 0, "EXEC of %s...: [%s], want [%s] (%s)", cmds[1], got,
                  want, h_show(r));
    freeReplyObject(r);
}

static void expect_direct_score(const char *zset, const char *member, const char *score)
{
    redisContext *o = h_connect_owner(&topo, zset);
    redisReply *r = h_cmd(o, "ZSCORE %s %s", zset, member);
    H_EXPECT_BULK(r, score);
    freeReplyObject(r);
    redisFree(o);
}

/* Every family with an id of ':' '{' '}' '*' space '%' and UTF-8 (a user
 * id, one segment, without ':'): the keys a transaction groups share a slot,
 * each lands under its contract name with the id percent-encoded (indexes
 * hold it raw), and listings give the legacy names back. */
START_TEST(test_odd_ids_every_family)
{
    const char *id = "tg:7 {x}*%\xc3\xbc", *enc = "tg%3A7%20%7Bx%7D%2A%25\xc3\xbc";
    const char *user = "u {x}*%\xc3\xbc", *uenc = "u%20%7Bx%7D%2A%25\xc3\xbc";
    char ud[128], tag[16], udenc[128];
    redisContext *c = h_connect_extra(&proxy);

    const char *msgs[] = { "ZADD %s 1 %s", N(":msgs:", id, ""), "m1",
                           "SET %s %s", N(":msg:", id, ":m1"), "body", NULL };
    expect_exec(c, msgs, "1 OK");
    expect_direct_score(N(":{m:", enc, "}:z"), "m1", "1");
    expect_direct(N(":{m:", enc, "}:i:m1"), "body");

    const char *lock[] = { "SET %s %s", N(":lock:", id, ""), "owner",
                           "INCRBY %s %s", N(":lock:", id, ":fence"), "1", NULL };
    expect_exec(c, lock, "OK 1");
    expect_direct(N(":{lk:", enc, "}:l"), "owner");
    expect_direct(N(":{lk:", enc, "}:f"), "1");

    const char *turn[] = { "INCRBY %s %s", N(":co:turn:", id, ":seq"), "1",
                           "SET %s %s", N(":co:turn:", id, ":owner"), "me", NULL };
    expect_exec(c, turn, "1 OK");
    expect_direct(N(":co:{t:", enc, "}:seq"), "1");
    expect_direct(N(":co:{t:", enc, "}:owner"), "me");

    const char *leader[] = { "SET %s %s", N(":co:leader:", id, ""), "me",
                             "INCRBY %s %s", N(":co:leader:", id, ":term"), "1", NULL };
    expect_exec(c, leader, "OK 1");
    expect_direct(N(":co:{ld:", enc, "}"), "me");
    expect_direct(N(":co:{ld:", enc, "}:term"), "1");

    H_FMT(ud, sizeof ud, ":user:%s:ns:%s", user, id);
    H_FMT(udenc, sizeof udenc, ":{ud:%s}:e:ns:%s", uenc, enc);
    const char *userdata[] = { "SET %s %s", P(ud), "a",
                               "SET %s %s", N(":user:", user, ":prefs:lang"), "b", NULL };
    expect_exec(c, userdata, "OK OK");
    expect_direct(P(udenc), "a");
    H_FMT(ud, sizeof ud, "ns:%s", id);
    expect_direct_score(N(":{ud:", uenc, "}:idx"), ud, "inf");

    static const char *const kinds[][2] = { { "chat", "ch" }, { "contact", "ct" },
                                            { "checkpoint", "cp" }, { "schedule", "sc" } };
    for (int k = 0; k < 4; k++) {
        char legacy[64], cluster[64], index[64];
        H_FMT(legacy, sizeof legacy, ":%s:", kinds[k][0]);
        H_FMT(tag, sizeof tag, "%d", bucket_of(id));
        H_FMT(cluster, sizeof cluster, ":{%s:%s}:r:", kinds[k][1], tag);
        H_FMT(index, sizeof index, ":{%s:%s}:idx", kinds[k][1], tag);
        H_OK(c, "SET %s %s", N(legacy, id, ""), kinds[k][0]);
        expect_direct(N(cluster, enc, ""), kinds[k][0]);
        expect_direct_score(P(index), id, "inf");
    }
    H_OK(c, "SET %s kept", N(":conv:", id, ""));
    expect_direct(N(":conv:", id, ""), "kept");

    H_FMT(ud, sizeof ud, ":user:%s:ns:%s", user, id);
    const char *all[] = { N(":msgs:", id, ""), N(":msg:", id, ":m1"), N(":lock:", id, ""),
                          N(":lock:", id, ":fence"), N(":co:turn:", id, ":seq"),
                          N(":co:turn:", id, ":owner"), N(":co:leader:", id, ""),
                          N(":co:leader:", id, ":term"), NULL };
    const char *more[] = { P(ud), N(":user:", user, ":prefs:lang"), N(":chat:", id, ""),
                           N(":contact:", id, ""), N(":checkpoint:", id, ""),
                           N(":schedule:", id, ""), N(":conv:", id, ""), NULL };
    const char *every[16];
    int n = 0;
    for (int i = 0; all[i]; i++)
        every[n++] = all[i];
    for (int i = 0; more[i]; i++)
        every[n++] = more[i];
    every[n] = NULL;
    char pattern[128];
    H_FMT(pattern, sizeof pattern, "%s:*", prefix);
    expect_keys(c, pattern, every);
    expect_scan(c, pattern, every);
    H_FMT(pattern, sizeof pattern, "%s:chat:tg:7 \\{x\\}\\*%%\xc3\xbc", prefix);
    const char *chat[] = { every[10], NULL };
    expect_keys(c, pattern, chat);
    expect_scan(c, pattern, chat);
    H_FMT(pattern, sizeof pattern, "%s:user:u *", prefix);
    const char *users[] = { every[8], every[9], NULL };
    expect_keys(c, pattern, users);
    expect_scan(c, pattern, users);

    for (int i = 0; every[i]; i++) {
        redisReply *r = h_cmd(c, "DEL %s", every[i]);
        H_EXPECT_INT(r, 1);
        freeReplyObject(r);
    }
    redisFree(c);
}
END_TEST

static Suite *layout_suite(void)
{
    Suite *s = suite_create("layout");
    TCase *t = tcase_create("rewrite");
    tcase_set_timeout(t, 60);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_single_keys);
    tcase_add_test(t, test_split_keys);
    tcase_add_test(t, test_movable_keys);
    tcase_add_test(t, test_chat_id_with_colon);
    tcase_add_test(t, test_listings);
    tcase_add_test(t, test_odd_ids_every_family);
    suite_add_tcase(s, t);
    TCase *f = tcase_create("files");
    tcase_set_timeout(f, 60);
    tcase_add_checked_fixture(f, setup_files, teardown_files);
    tcase_add_test(f, test_files_rewrite);
    tcase_add_test(f, test_files_transactions);
    tcase_add_test(f, test_files_listings);
    suite_add_tcase(s, f);
    TCase *o = tcase_create("overlap");
    tcase_set_timeout(o, 60);
    tcase_add_test(o, test_files_overlap_refused);
    suite_add_tcase(s, o);
    return s;
}

int main(void)
{
    return h_run(layout_suite());
}
