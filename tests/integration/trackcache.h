/*
 * trackcache.h: a reader's client-side cache, kept in a test as a client
 * library keeps it, over a RESP3 connection (resp3conn.h): the values it
 * read of a set of keys, forgotten as the pushes tell; what the tracking
 * tests check against the masters.
 */
#ifndef TAGPROXY_TEST_TRACKCACHE_H
#define TAGPROXY_TEST_TRACKCACHE_H

#include "resp3conn.h"

#define TRACK_CACHE_KEYS 64
#define TRACK_CACHE_KEY 96

struct track_cache {
    int nkeys;
    char (*keys)[TRACK_CACHE_KEY];
    int have[TRACK_CACHE_KEYS];
    char value[TRACK_CACHE_KEYS][32];
    long hits, invalidations, flushes;
};

H_UNUSED static void cache_init(struct track_cache *tc, char (*keys)[TRACK_CACHE_KEY], int n)
{
    ck_assert_int_le(n, TRACK_CACHE_KEYS);
    memset(tc, 0, sizeof *tc);
    tc->keys = keys;
    tc->nkeys = n;
}

/* One frame: a push (applied to the cache: 1) or a reply (into out: 0). */
H_UNUSED static int cache_frame(struct conn3 *c, struct track_cache *tc, char *out, size_t size)
{
    struct h_rv v;
    frame(c, out, size);
    ck_assert_int_gt(h_resp_parse(out, strlen(out), &v), 0);
    int push = v.type == '>';
    if (push) {
        ck_assert_msg(v.num == 2 && v.elem[0].len == 10 &&
                      memcmp(v.elem[0].str, "invalidate", 10) == 0, "%s", h_esc_str(out));
        const struct h_rv *keys = &v.elem[1];
        for (int k = 0; k < tc->nkeys; k++)
            for (long long i = 0; keys->type == '*' && i < keys->num; i++)
                if (keys->elem[i].len == strlen(tc->keys[k]) &&
                    memcmp(keys->elem[i].str, tc->keys[k], keys->elem[i].len) == 0)
                    tc->have[k] = 0;
        if (keys->type == '_') {
            memset(tc->have, 0, sizeof tc->have);
            tc->flushes++;
        }
        tc->invalidations++;
    }
    h_rv_free(&v);
    return push;
}

/* The reply to the command just sent, every push before it applied. */
H_UNUSED static void cache_reply(struct conn3 *c, struct track_cache *tc, char *out, size_t size)
{
    while (cache_frame(c, tc, out, size))
        ;
}

/* The reader's GET of key k: from its cache, or read and cached (not an
 * error reply: a master being replaced). */
H_UNUSED static void cache_get(struct conn3 *c, struct track_cache *tc, int k)
{
    char cmd[160], out[4096];
    if (tc->have[k]) {
        tc->hits++;
        return;
    }
    H_FMT(cmd, sizeof cmd, "GET %s", tc->keys[k]);
    send_words(c, cmd);
    cache_reply(c, tc, out, sizeof out);
    if (out[0] == '-')
        return;
    ck_assert_msg(out[0] == '$' || out[0] == '_', "GET: %s", h_esc_str(out));
    const char *nl = strstr(out, "\r\n");
    if (out[0] == '_')                          /* not written yet: nil, cached too */
        H_FMT(tc->value[k], sizeof tc->value[k], "(nil)");
    else
        H_FMT(tc->value[k], sizeof tc->value[k], "%.*s", (int)(strlen(nl + 2) - 2), nl + 2);
    tc->have[k] = 1;
}

/* Each value in the cache is its master's now (t: the masters). */
H_UNUSED static void cache_check(const struct track_cache *tc, const struct h_topo *t,
                                 int round, const char *after)
{
    for (int k = 0; k < tc->nkeys; k++) {
        if (!tc->have[k])
            continue;
        redisContext *d = h_connect_owner(t, tc->keys[k]);
        redisReply *r = h_cmd(d, "GET %s", tc->keys[k]);
        struct h_node moved = { 0 };
        /* t, read from one node, may be a step behind a reshard */
        if (r->type == REDIS_REPLY_ERROR &&
            sscanf(r->str, "MOVED %*d %63[^:]:%d", moved.host, &moved.port) == 2) {
            freeReplyObject(r);
            redisFree(d);
            d = h_connect_node(&moved);
            r = h_cmd(d, "GET %s", tc->keys[k]);
        }
        const char *now = r->type == REDIS_REPLY_STRING ? r->str
                          : r->type == REDIS_REPLY_NIL ? "(nil)" : "?";
        ck_assert_msg(strcmp(now, tc->value[k]) == 0,
                      "round %d (after %s): the cache holds %s=%s, its master %s", round, after,
                      tc->keys[k], tc->value[k], h_show(r));
        freeReplyObject(r);
        redisFree(d);
    }
}

#endif
