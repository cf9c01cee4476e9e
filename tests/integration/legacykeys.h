/*
 * A generated legacy keyspace of every family of
 * conf/layouts/botmesh-v1.rules (legacy_keyspace, LEGACY_KEYS keys), what
 * `tagproxy migrate` leaves out of it (legacy_not_copied), and the
 * comparison of two servers' keyspaces (expect_same_keyspace), for the
 * migration tests.
 */
#ifndef TAGPROXY_TEST_LEGACYKEYS_H
#define TAGPROXY_TEST_LEGACYKEYS_H

#include <math.h>

#include "harness.h"

/* How many of each; legacy_keyspace's comment says what they are. */
enum {
    N_CHATS = 24000, N_CONTACTS = 10000, N_CHECKPOINTS = 10000, N_SCHEDULES = 5000,
    N_SCHEDULES_DELETED = 500, N_USERS = 1000, N_USER_KEYS = 10, N_LOGS = 4000,
    N_LOG_ITEMS = 8, N_LOCKS = 1000, N_LEADERS = 100, N_TURNS = 200, N_KEEPS = 250,
};

#define N_ORPHANS (N_LOGS / 8)              /* one per eighth log */
#define N_ELSEWHERE (N_LOGS / 20)           /* one per twentieth log */
#define LEGACY_NOT_COPIED (N_TURNS * 3 + N_ORPHANS + N_ELSEWHERE)
#define LEGACY_KEYS (N_CHATS + N_CONTACTS + N_CHECKPOINTS + N_SCHEDULES + N_SCHEDULES_DELETED + \
                N_USERS * N_USER_KEYS + N_LOGS * (1 + N_LOG_ITEMS) + N_ORPHANS + N_ELSEWHERE + \
                N_LOCKS * 2 + N_LEADERS * 2 + N_TURNS * 3 + N_KEEPS * 4)

H_UNUSED static long long dbsize(redisContext *c)
{
    redisReply *r = h_cmd(c, "DBSIZE");
    H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

/* Pipelined: one reply read for each command appended, every 1000. */
struct pipe {
    redisContext *c;
    int pending;
};

H_UNUSED static void pipe_drain(struct pipe *pp)
{
    for (; pp->pending > 0; pp->pending--) {
        redisReply *r = h_get_reply(pp->c);
        ck_assert_msg(r->type != REDIS_REPLY_ERROR, "%s", r->str);
        freeReplyObject(r);
    }
}

H_UNUSED static void pipe_cmd(struct pipe *pp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ck_assert_int_eq(redisvAppendCommand(pp->c, fmt, ap), REDIS_OK);
    va_end(ap);
    if (++pp->pending == 1000)
        pipe_drain(pp);
}

/* The chat of log i: provider-qualified ids (with ':') and plain ones. */
H_UNUSED static void log_chat(int i, char *buf, size_t size)
{
    H_FMT(buf, size, i % 2 ? "tg:%d" : "c%d", i);
}

/*
 * The legacy keyspace of prefix p, LEGACY_KEYS keys:
 *  - chats (a third with a TTL, every 50th a hash with a provider id),
 *    contacts, checkpoints (half with a TTL), schedules (hashes with a
 *    fencing token) and deleted schedule markers (token, deleted 1);
 *  - user data, N_USER_KEYS per user in two namespaces, half with a TTL;
 *  - message logs of N_LOG_ITEMS items (every third a hash), every
 *    twentieth log with a member whose item name is another chat's
 *    (`x:m9`: chat `<chat>:x`), and that item; an orphan item per eighth;
 *  - locks (with a TTL) and their fences, leaderships and terms;
 *  - turn counters (no pending ticket: tix = serving);
 *  - the keeps: conversations, cursors, leases (with a TTL), a durability
 *    journal.
 */
H_UNUSED static void legacy_keyspace(redisContext *c, const char *p)
{
    struct pipe pp = { c, 0 };
    char chat[32];
    for (int i = 0; i < N_CHATS; i++) {
        if (i % 50 == 0)
            pipe_cmd(&pp, "HSET %s:chat:tg:%d title chat-%d members %d", p, i, i, i % 7);
        else if (i % 3 == 0)
            pipe_cmd(&pp, "SET %s:chat:c%d chat-%d PX 900000", p, i, i);
        else
            pipe_cmd(&pp, "SET %s:chat:c%d chat-%d", p, i, i);
    }
    for (int i = 0; i < N_CONTACTS; i++)
        pipe_cmd(&pp, i % 5 ? "SET %s:contact:u:%d {\"name\":\"n%d\"}"
                            : "SET %s:contact:u:%d {\"name\":\"n%d\"} PX 800000", p, i, i);
    for (int i = 0; i < N_CHECKPOINTS; i++)
        pipe_cmd(&pp, i % 2 ? "SET %s:checkpoint:run-%d state-%d"
                            : "SET %s:checkpoint:run-%d state-%d PX 700000", p, i, i);
    for (int i = 0; i < N_SCHEDULES; i++)
        pipe_cmd(&pp, "HSET %s:schedule:job-%d at 09:%02d token %d", p, i, i % 60, i % 97 + 1);
    for (int i = 0; i < N_SCHEDULES_DELETED; i++)
        pipe_cmd(&pp, "HSET %s:schedule:gone-%d token %d deleted 1", p, i, i + 3);
    for (int u = 0; u < N_USERS; u++)
        for (int k = 0; k < N_USER_KEYS; k++)
            pipe_cmd(&pp, k % 2 ? "SET %s:user:u%d:ns%d:key%d v%d"
                                : "SET %s:user:u%d:ns%d:key%d v%d PX 600000", p, u, k % 2, k, k);
    for (int i = 0; i < N_LOGS; i++) {
        log_chat(i, chat, sizeof chat);
        for (int j = 1; j <= N_LOG_ITEMS; j++) {
            pipe_cmd(&pp, "ZADD %s:msgs:%s %d m%d", p, chat, j, j);
            if (j % 3 == 0)
                pipe_cmd(&pp, "HSET %s:msg:%s:m%d text t%d from u%d", p, chat, j, j, i);
            else
                pipe_cmd(&pp, "SET %s:msg:%s:m%d text-%d-%d", p, chat, j, i, j);
        }
        if (i % 20 == 0) {
            pipe_cmd(&pp, "ZADD %s:msgs:%s 9 x:m9", p, chat);
            pipe_cmd(&pp, "SET %s:msg:%s:x:m9 elsewhere", p, chat);
        }
        if (i % 8 == 0)
            pipe_cmd(&pp, "SET %s:msg:%s:orphan%d lost", p, chat, i);
    }
    for (int i = 0; i < N_LOCKS; i++) {
        pipe_cmd(&pp, "SET %s:lock:job:%d holder-%d PX 500000", p, i, i);
        pipe_cmd(&pp, "SET %s:lock:job:%d:fence %d", p, i, i + 1);
    }
    for (int i = 0; i < N_LEADERS; i++) {
        pipe_cmd(&pp, "SET %s:co:leader:svc%d r%d", p, i, i % 3);
        pipe_cmd(&pp, "SET %s:co:leader:svc%d:term %d", p, i, i + 2);
    }
    for (int i = 0; i < N_TURNS; i++) {
        pipe_cmd(&pp, "SET %s:co:turn:c%d:seq 5", p, i);
        pipe_cmd(&pp, "SET %s:co:turn:c%d:tix 3", p, i);
        pipe_cmd(&pp, "SET %s:co:turn:c%d:serving 3", p, i);
    }
    for (int i = 0; i < N_KEEPS; i++) {
        pipe_cmd(&pp, "SET %s:conv:%d z%d", p, i, i);
        pipe_cmd(&pp, "SET %s:cursor:%d %d", p, i, i);
        pipe_cmd(&pp, "SET %s:lease:%d r1 PX 400000", p, i);
        pipe_cmd(&pp, "SET %s:{durable:t1}:%d e%d", p, i, i);
    }
    pipe_drain(&pp);
    redisReply *r = h_cmd(c, "DBSIZE");
    ck_assert_int_eq(r->integer, LEGACY_KEYS);
    freeReplyObject(r);
}

/* What the copy leaves out: turn counters, orphans, items of another chat. */
H_UNUSED static int legacy_not_copied(const char *key)
{
    size_t n = strlen(key);
    return strstr(key, ":co:turn:") || strstr(key, ":orphan") ||
           (n > 5 && strcmp(key + n - 5, ":x:m9") == 0);
}

/* An index on both: the same members, scores (absolute expiries, taken
 * when each run copied the record) within a minute. */
H_UNUSED static void expect_same_index(redisContext *ca, redisContext *cb, const char *key)
{
    redisContext *a = h_connect(ca->tcp.host, ca->tcp.port), *b = h_connect(cb->tcp.host,
                                                                             cb->tcp.port);
    redisReply *ra = h_cmd(a, "ZRANGE %s 0 -1 WITHSCORES", key);
    redisReply *rb = h_cmd(b, "ZRANGE %s 0 -1 WITHSCORES", key);
    ck_assert_msg(ra->elements == rb->elements, "%s: %zu against %zu", key, ra->elements,
                  rb->elements);
    for (size_t i = 0; i + 1 < ra->elements; i += 2) {
        redisReply *s = h_cmd(b, "ZSCORE %s %s", key, ra->element[i]->str);
        ck_assert_msg(s->type == REDIS_REPLY_STRING, "%s: member %s missing", key,
                      ra->element[i]->str);
        double x = strtod(ra->element[i + 1]->str, NULL), y = strtod(s->str, NULL);
        ck_assert_msg(x == y || fabs(x - y) < 60000, "%s %s: score %s against %s", key,
                      ra->element[i]->str, ra->element[i + 1]->str, s->str);
        freeReplyObject(s);
    }
    freeReplyObject(ra);
    freeReplyObject(rb);
    redisFree(a);
    redisFree(b);
}

/* Every key of a is in b with the same value and about the same TTL, and
 * b has no other. */
H_UNUSED static void expect_same_keyspace(const struct h_node *a, const struct h_node *b)
{
    redisContext *ca = h_connect_node(a), *cb = h_connect_node(b);
    ck_assert_int_eq(dbsize(ca), dbsize(cb));
    long long cursor = 0, seen = 0;
    do {
        redisReply *r = h_cmd(ca, "SCAN %lld COUNT 500", cursor);
        cursor = strtoll(r->element[0]->str, NULL, 10);
        const redisReply *keys = r->element[1];
        for (size_t k = 0; k < keys->elements; k++) {
            const char *key = keys->element[k]->str;
            redisAppendCommand(ca, "DUMP %s", key);
            redisAppendCommand(cb, "DUMP %s", key);
            redisAppendCommand(ca, "PTTL %s", key);
            redisAppendCommand(cb, "PTTL %s", key);
        }
        for (size_t k = 0; k < keys->elements; k++, seen++) {
            redisReply *da = h_get_reply(ca), *db = h_get_reply(cb);
            redisReply *ta = h_get_reply(ca), *tb = h_get_reply(cb);
            const char *key = keys->element[k]->str;
            ck_assert_msg(db->type == REDIS_REPLY_STRING, "%s missing from the resumed run", key);
            size_t kl = strlen(key);
            if (kl > 4 && strcmp(key + kl - 4, ":idx") == 0)   /* scores: expiries of their run */
                expect_same_index(ca, cb, key);
            else
                ck_assert_msg(da->len == db->len && memcmp(da->str, db->str, da->len) == 0,
                              "%s differs", key);
            ck_assert_msg((ta->integer < 0) == (tb->integer < 0) &&
                          llabs(ta->integer - tb->integer) < 60000,
                          "%s: PTTL %lld against %lld", key, ta->integer, tb->integer);
            freeReplyObject(da);
            freeReplyObject(db);
            freeReplyObject(ta);
            freeReplyObject(tb);
        }
        freeReplyObject(r);
    } while (cursor != 0);
    ck_assert_int_gt(seen, 0);
    redisFree(ca);
    redisFree(cb);
}

#endif
