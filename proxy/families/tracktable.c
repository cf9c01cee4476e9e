/*
 * tracktable: the keys tracking clients read. See tracktable.h.
 *
 * A chained hash table of keys, doubled as it fills, whose keys are also
 * on a list in the order they were first read: the oldest goes first when
 * the table is full. A key's readers are a small array.
 */
#include "proxy/families/tracktable.h"

#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "cluster/node.h"
#include "lib/base/hash.h"

/* A reader's reads of a key since it was last told: the first may have
 * been answered (its value cached), the last may still be on its way. */
struct reader {
    void *who;
    const struct node_conn *conn;
    uint64_t first, last;
};

struct tracked {
    struct tracked *next;           /* in its bucket */
    TAILQ_ENTRY(tracked) age;       /* oldest first */
    uint32_t hash;
    int nreaders, cap;
    struct reader *readers;
    size_t len;
    char key[];
};

struct track_table {
    const struct track_reader_ops *ops;
    struct tracked **buckets;
    size_t nbuckets;                /* a power of two */
    size_t nkeys, nreaders;
    TAILQ_HEAD(, tracked) by_age;
};

#define BUCKETS_FIRST 64

struct track_table *track_table_new(const struct track_reader_ops *ops)
{
    struct track_table *tt = calloc(1, sizeof *tt);
    if (tt)
        tt->buckets = calloc(BUCKETS_FIRST, sizeof *tt->buckets);
    if (!tt || !tt->buckets) {
        free(tt);
        return NULL;
    }
    tt->ops = ops;
    tt->nbuckets = BUCKETS_FIRST;
    TAILQ_INIT(&tt->by_age);
    return tt;
}

static struct tracked **slot_of(struct track_table *tt, const char *key, size_t len,
                                uint32_t hash)
{
    struct tracked **at = &tt->buckets[hash & (tt->nbuckets - 1)];
    while (*at && ((*at)->hash != hash || (*at)->len != len || memcmp((*at)->key, key, len)))
        at = &(*at)->next;
    return at;
}

/* Take k out of the table, dropping its readers (after notify, if any). */
static void remove_key(struct track_table *tt, struct tracked **at, track_notify_fn *notify,
                       void *arg)
{
    struct tracked *k = *at;
    *at = k->next;
    TAILQ_REMOVE(&tt->by_age, k, age);
    for (int i = 0; i < k->nreaders; i++) {
        if (notify)
            notify(k->readers[i].who, k->key, k->len, arg);
        tt->ops->drop(k->readers[i].who);
    }
    tt->nkeys--;
    tt->nreaders -= (size_t)k->nreaders;
    free(k->readers);
    free(k);
}

/* Twice the buckets, when the keys outnumber them (none when out of memory:
 * the chains grow instead). */
static void grow(struct track_table *tt)
{
    size_t n = tt->nbuckets * 2;
    struct tracked **b = calloc(n, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < tt->nbuckets; i++)
        for (struct tracked *k = tt->buckets[i], *next; k; k = next) {
            next = k->next;
            k->next = b[k->hash & (n - 1)];
            b[k->hash & (n - 1)] = k;
        }
    free(tt->buckets);
    tt->buckets = b;
    tt->nbuckets = n;
}

static struct tracked *key_new(struct track_table *tt, const char *key, size_t len,
                               uint32_t hash)
{
    struct tracked *k = malloc(sizeof *k + len);
    if (!k)
        return NULL;
    memset(k, 0, sizeof *k);
    k->hash = hash;
    k->len = len;
    memcpy(k->key, key, len);
    TAILQ_INSERT_TAIL(&tt->by_age, k, age);
    tt->nkeys++;
    if (tt->nkeys > tt->nbuckets)
        grow(tt);
    struct tracked **at = &tt->buckets[hash & (tt->nbuckets - 1)];
    k->next = *at;
    *at = k;
    return k;
}

/* The oldest keys go until there are fewer than max. */
static void make_room(struct track_table *tt, int max, track_notify_fn *evicted, void *arg)
{
    while (max > 0 && tt->nkeys >= (size_t)max) {
        struct tracked *old = TAILQ_FIRST(&tt->by_age);
        remove_key(tt, slot_of(tt, old->key, old->len, old->hash), evicted, arg);
    }
}

int track_table_add(struct track_table *tt, const char *key, size_t len, void *reader,
                    const struct node_conn *conn, uint64_t pos, int max_keys,
                    track_notify_fn *evicted, void *arg)
{
    uint32_t hash = hash_fnv32(key, len);
    struct tracked *k = *slot_of(tt, key, len, hash);
    if (!k) {
        make_room(tt, max_keys, evicted, arg);
        if (!(k = key_new(tt, key, len, hash)))
            return -1;
    }
    for (int i = 0; i < k->nreaders; i++) {
        struct reader *r = &k->readers[i];
        if (r->who != reader)
            continue;
        if (r->conn != conn) {          /* (the old connection's reads: any push tells) */
            r->first = 0;
            r->last = pos;
        } else if (pos > r->last) {
            r->last = pos;
        }
        r->conn = conn;
        return 0;
    }
    if (k->nreaders == k->cap) {
        int cap = k->cap ? k->cap * 2 : 2;
        struct reader *r = realloc(k->readers, sizeof *r * (size_t)cap);
        if (!r)
            return -1;
        k->readers = r;
        k->cap = cap;
    }
    k->readers[k->nreaders++] = (struct reader){ reader, conn, pos, pos };
    tt->nreaders++;
    tt->ops->hold(reader);
    return 0;
}

void track_table_invalidate(struct track_table *tt, const char *key, size_t len,
                            const struct node_conn *conn, uint64_t answered,
                            track_notify_fn *notify, void *arg)
{
    uint32_t hash = hash_fnv32(key, len);
    struct tracked **at = slot_of(tt, key, len, hash), *k = *at;
    if (!k)
        return;
    int kept = 0;
    for (int i = 0; i < k->nreaders; i++) {
        struct reader *r = &k->readers[i];
        if (r->conn == conn && r->first > answered) {
            k->readers[kept++] = *r;    /* every read in flight: run after the write */
            continue;
        }
        notify(r->who, k->key, k->len, arg);
        /* a read on a connection that redirects here: the two orders are
         * not related, so its reader is told, and kept while a read of its
         * is still in flight there */
        uint64_t done = r->conn == conn ? answered : r->conn->nanswered;
        if (r->last > done) {
            /* a read in flight ran after the write: it is listed again, from
             * the first place a read not yet answered can have */
            r->first = done + 1;
            k->readers[kept++] = *r;
            continue;
        }
        tt->ops->drop(r->who);
        tt->nreaders--;
    }
    k->nreaders = kept;
    if (kept == 0)
        remove_key(tt, at, NULL, NULL);
}

void track_table_forget(struct track_table *tt, const char *key, size_t len, const void *reader)
{
    struct tracked **at = slot_of(tt, key, len, hash_fnv32(key, len)), *k = *at;
    if (!k)
        return;
    for (int i = 0; i < k->nreaders; i++)
        if (k->readers[i].who == reader) {
            tt->ops->drop(k->readers[i].who);
            k->readers[i] = k->readers[--k->nreaders];
            tt->nreaders--;
            break;
        }
    if (k->nreaders == 0)
        remove_key(tt, at, NULL, NULL);
}

void track_table_clear(struct track_table *tt)
{
    while (!TAILQ_EMPTY(&tt->by_age)) {
        struct tracked *k = TAILQ_FIRST(&tt->by_age);
        remove_key(tt, slot_of(tt, k->key, k->len, k->hash), NULL, NULL);
    }
}

void track_table_free(struct track_table *tt)
{
    if (!tt)
        return;
    track_table_clear(tt);
    free(tt->buckets);
    free(tt);
}

size_t track_table_keys(const struct track_table *tt)
{
    return tt->nkeys;
}

size_t track_table_readers(const struct track_table *tt)
{
    return tt->nreaders;
}
