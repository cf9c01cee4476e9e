/*
 * tracktable: the keys tracking clients read. See tracktable.h.
 *
 * Keys are in a chained hash table, doubled as it fills, and on a list in
 * the order they were first read: the oldest goes first when the table is
 * full. Each (key, reader) entry is on its key's list (for a push), on its
 * reader's (for the reader's close) and in a second hash by key and reader
 * (for a read). Entries freed are kept for reuse, up to SPARE_MAX.
 */
#include "proxy/families/tracktable.h"

#include <stdlib.h>
#include <string.h>

#include "cluster/node.h"
#include "lib/base/hash.h"

#define BUCKETS_FIRST 64
#define SPARE_MAX 4096

/* A reader's reads of a key since it was last told: the first may have
 * been answered (its value cached), the last may still be on its way. */
struct track_entry {
    struct tracked *key;
    struct track_reader *who;
    const struct node_conn *conn;
    uint64_t first, last;
    TAILQ_ENTRY(track_entry) by_key, by_reader;
    struct track_entry *hash_next;
};

struct tracked {
    struct tracked *next;           /* in its bucket */
    TAILQ_ENTRY(tracked) age;       /* oldest first */
    TAILQ_HEAD(, track_entry) readers;
    uint32_t hash;
    size_t len;
    char key[];
};

struct track_table {
    struct tracked **buckets;
    size_t nbuckets;                /* a power of two */
    struct track_entry **pairs;     /* entries by key and reader */
    size_t npairs;                  /* buckets: a power of two */
    size_t nkeys, nentries;
    size_t bytes;                   /* held: both hashes, keys, entries (spare ones too) */
    TAILQ_HEAD(, tracked) by_age;
    struct track_entry *spare;
    size_t nspare;
};

void track_reader_init(struct track_reader *r)
{
    TAILQ_INIT(&r->entries);
    r->bytes = 0;
}

/* What a reader of k is charged: its entry and, as if it were its own, the
 * key. */
static size_t charge(const struct tracked *k)
{
    return sizeof(struct track_entry) + sizeof *k + k->len;
}

struct track_table *track_table_new(void)
{
    struct track_table *tt = calloc(1, sizeof *tt);
    if (tt) {
        tt->buckets = calloc(BUCKETS_FIRST, sizeof *tt->buckets);
        tt->pairs = calloc(BUCKETS_FIRST, sizeof *tt->pairs);
    }
    if (!tt || !tt->buckets || !tt->pairs) {
        if (tt) {
            free(tt->buckets);
            free(tt->pairs);
        }
        free(tt);
        return NULL;
    }
    tt->nbuckets = tt->npairs = BUCKETS_FIRST;
    tt->bytes = 2 * BUCKETS_FIRST * sizeof(void *);
    TAILQ_INIT(&tt->by_age);
    return tt;
}

/* ---- the hash of keys ---- */

static struct tracked **slot_of(struct track_table *tt, const char *key, size_t len,
                                uint32_t hash)
{
    struct tracked **at = &tt->buckets[hash & (tt->nbuckets - 1)];
    while (*at && ((*at)->hash != hash || (*at)->len != len || memcmp((*at)->key, key, len)))
        at = &(*at)->next;
    return at;
}

/* Twice the buckets, when the keys outnumber them (none when out of memory:
 * the chains grow instead). */
static void keys_grow(struct track_table *tt)
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
    tt->bytes += (n - tt->nbuckets) * sizeof *b;
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
    TAILQ_INIT(&k->readers);
    TAILQ_INSERT_TAIL(&tt->by_age, k, age);
    tt->nkeys++;
    tt->bytes += sizeof *k + len;
    if (tt->nkeys > tt->nbuckets)
        keys_grow(tt);
    struct tracked **at = &tt->buckets[hash & (tt->nbuckets - 1)];
    k->next = *at;
    *at = k;
    return k;
}

/* ---- the hash of entries ---- */

static size_t pair_slot(const struct track_table *tt, const struct tracked *k,
                        const struct track_reader *who)
{
    uint64_t h = ((uint64_t)(uintptr_t)k * 0x9E3779B97F4A7C15ull) ^ (uint64_t)(uintptr_t)who;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return (size_t)h & (tt->npairs - 1);
}

static void pairs_grow(struct track_table *tt)
{
    size_t was = tt->npairs;
    struct track_entry **old = tt->pairs, **b = calloc(was * 2, sizeof *b);
    if (!b)
        return;
    tt->pairs = b;
    tt->npairs = was * 2;
    for (size_t i = 0; i < was; i++)
        for (struct track_entry *e = old[i], *next; e; e = next) {
            next = e->hash_next;
            size_t s = pair_slot(tt, e->key, e->who);
            e->hash_next = b[s];
            b[s] = e;
        }
    free(old);
    tt->bytes += was * sizeof *b;
}

static struct track_entry *entry_find(struct track_table *tt, const struct tracked *k,
                                      const struct track_reader *who)
{
    struct track_entry *e = tt->pairs[pair_slot(tt, k, who)];
    while (e && (e->key != k || e->who != who))
        e = e->hash_next;
    return e;
}

static struct track_entry *entry_new(struct track_table *tt, struct tracked *k,
                                     struct track_reader *who)
{
    struct track_entry *e = tt->spare;
    if (e) {
        tt->spare = e->hash_next;
        tt->nspare--;
    } else if ((e = malloc(sizeof *e)) != NULL) {
        tt->bytes += sizeof *e;
    } else {
        return NULL;
    }
    e->key = k;
    e->who = who;
    TAILQ_INSERT_TAIL(&k->readers, e, by_key);
    TAILQ_INSERT_TAIL(&who->entries, e, by_reader);
    size_t s = pair_slot(tt, k, who);
    e->hash_next = tt->pairs[s];
    tt->pairs[s] = e;
    who->bytes += charge(k);
    if (++tt->nentries > tt->npairs)
        pairs_grow(tt);
    return e;
}

static void entry_free(struct track_table *tt, struct track_entry *e)
{
    struct track_entry **at = &tt->pairs[pair_slot(tt, e->key, e->who)];
    while (*at != e)
        at = &(*at)->hash_next;
    *at = e->hash_next;
    TAILQ_REMOVE(&e->key->readers, e, by_key);
    TAILQ_REMOVE(&e->who->entries, e, by_reader);
    e->who->bytes -= charge(e->key);
    tt->nentries--;
    if (tt->nspare < SPARE_MAX) {
        e->hash_next = tt->spare;
        tt->spare = e;
        tt->nspare++;
    } else {
        tt->bytes -= sizeof *e;
        free(e);
    }
}

/* ---- keys ---- */

/* Take k out of the table, its readers handed to notify first (if any). */
static void remove_key(struct track_table *tt, struct tracked **at, track_notify_fn *notify,
                       void *arg)
{
    struct tracked *k = *at;
    struct track_entry *e;
    *at = k->next;
    TAILQ_REMOVE(&tt->by_age, k, age);
    while ((e = TAILQ_FIRST(&k->readers)) != NULL) {
        if (notify)
            notify(e->who, k->key, k->len, 0, arg);
        entry_free(tt, e);
    }
    tt->nkeys--;
    tt->bytes -= sizeof *k + k->len;
    free(k);
}

/* The oldest keys go until there are fewer than max. */
static void make_room(struct track_table *tt, int max, track_notify_fn *evicted, void *arg)
{
    while (max > 0 && tt->nkeys >= (size_t)max) {
        struct tracked *old = TAILQ_FIRST(&tt->by_age);
        remove_key(tt, slot_of(tt, old->key, old->len, old->hash), evicted, arg);
    }
}

int track_table_add(struct track_table *tt, const char *key, size_t len,
                    struct track_reader *reader, const struct node_conn *conn, uint64_t pos,
                    int max_keys, track_notify_fn *evicted, void *arg)
{
    uint32_t hash = hash_fnv32(key, len);
    struct tracked *k = *slot_of(tt, key, len, hash);
    if (!k) {
        make_room(tt, max_keys, evicted, arg);
        if (!(k = key_new(tt, key, len, hash)))
            return -1;
    }
    struct track_entry *e = entry_find(tt, k, reader);
    if (e) {
        if (e->conn != conn) {          /* (the old connection's reads: any push tells) */
            e->first = 0;
            e->last = pos;
        } else if (pos > e->last) {
            e->last = pos;
        }
        e->conn = conn;
        return 0;
    }
    if (!(e = entry_new(tt, k, reader))) {
        if (TAILQ_EMPTY(&k->readers))
            remove_key(tt, slot_of(tt, key, len, hash), NULL, NULL);
        return -1;
    }
    e->conn = conn;
    e->first = e->last = pos;
    return 0;
}

void track_table_prefetch(const struct track_table *tt, uint32_t hash,
                          const struct track_reader *reader, int stage)
{
    struct tracked *const *at = &tt->buckets[hash & (tt->nbuckets - 1)];
    const struct tracked *k = *at;
    if (stage == 0) {
        __builtin_prefetch(at);
    } else if (stage == 1) {
        if (k)                          /* the chain's first: most often the key */
            __builtin_prefetch(k);
    } else {
        while (k && k->hash != hash)
            k = k->next;
        if (k)
            __builtin_prefetch(&tt->pairs[pair_slot(tt, k, reader)]);
    }
}

void track_table_invalidate(struct track_table *tt, const char *key, size_t len,
                            const struct node_conn *conn, uint64_t answered,
                            track_notify_fn *notify, void *arg)
{
    uint32_t hash = hash_fnv32(key, len);
    struct tracked **at = slot_of(tt, key, len, hash), *k = *at;
    struct track_entry *e, *next;
    if (!k)
        return;
    for (e = TAILQ_FIRST(&k->readers); e; e = next) {
        next = TAILQ_NEXT(e, by_key);
        if (e->conn == conn && e->first > answered)
            continue;                   /* every read in flight: run after the write */
        notify(e->who, k->key, k->len, e->conn == conn, arg);
        /* a read on a connection that redirects here: the two orders are
         * not related, so its reader is told, and kept while a read of its
         * is still in flight there */
        uint64_t done = e->conn == conn ? answered : e->conn->nanswered;
        if (e->last > done) {
            /* a read in flight ran after the write: it is listed again, from
             * the first place a read not yet answered can have */
            e->first = done + 1;
            continue;
        }
        entry_free(tt, e);
    }
    if (TAILQ_EMPTY(&k->readers))
        remove_key(tt, at, NULL, NULL);
}

void track_table_forget(struct track_table *tt, const char *key, size_t len,
                        struct track_reader *reader)
{
    struct tracked **at = slot_of(tt, key, len, hash_fnv32(key, len)), *k = *at;
    struct track_entry *e = k ? entry_find(tt, k, reader) : NULL;
    if (!e)
        return;
    entry_free(tt, e);
    if (TAILQ_EMPTY(&k->readers))
        remove_key(tt, at, NULL, NULL);
}

size_t track_table_forget_reader(struct track_table *tt, struct track_reader *reader,
                                 size_t max)
{
    struct track_entry *e;
    size_t n = 0;
    for (; n < max && (e = TAILQ_FIRST(&reader->entries)) != NULL; n++) {
        struct tracked *k = e->key;
        entry_free(tt, e);
        if (TAILQ_EMPTY(&k->readers))
            remove_key(tt, slot_of(tt, k->key, k->len, k->hash), NULL, NULL);
    }
    return n;
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
    while (tt->spare) {
        struct track_entry *e = tt->spare;
        tt->spare = e->hash_next;
        free(e);
    }
    free(tt->buckets);
    free(tt->pairs);
    free(tt);
}

size_t track_table_keys(const struct track_table *tt)
{
    return tt->nkeys;
}

size_t track_table_readers(const struct track_table *tt)
{
    return tt->nentries;
}

size_t track_table_bytes(const struct track_table *tt)
{
    return tt->bytes;
}
