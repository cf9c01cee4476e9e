/*
 * tracktable: the keys tracking clients read. See tracktable.h.
 *
 * Keys are in an open-addressed hash (linear probing, at most half full),
 * and on a list in the order they were first read: the oldest goes first
 * when the table is full. A key holds its readers' entries in a small
 * open-addressed hash of its own, by reader (at most three quarters full),
 * so that a read touches three places: the key's in the hash, the key, and
 * the reader's among its entries; no allocation unless a hash grows.
 *
 * A reader names each key it was listed under in its own array, for its
 * close. A key that leaves the table stays allocated while a reader's array
 * names it (refs); an array is compacted, and the keys no longer listed let
 * go of, once it names twice as many keys as its reader has entries.
 */
#include "proxy/families/tracktable.h"

#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "cluster/node.h"
#include "lib/base/blockpool.h"
#include "lib/base/hash.h"

#define SLOTS_FIRST 64
#define ENTRIES_FIRST 2
#define ENTRIES_GROWTH 2
#define READER_SLACK 32             /* the names a reader keeps past twice its entries */

/* A reader's reads of a key since it was last told: the first may have
 * been answered (its value cached), the last may still be on its way. */
struct track_entry {
    struct track_reader *who;       /* NULL: a free place */
    const struct node_conn *conn;   /* NULL while a push drops it */
    uint64_t first, last;
};

struct tracked {
    struct track_entry *entries;    /* by reader: cap places (a power of two), n used */
    uint32_t n, cap;
    uint32_t refs;                  /* readers' arrays that name it */
    uint32_t hash;
    uint32_t len;
    uint32_t listed;                /* in the table (else kept for refs only) */
    uint64_t mark;                  /* the last compaction that kept it */
    TAILQ_ENTRY(tracked) age;       /* oldest first, while listed */
    char key[];
};

struct key_slot {
    struct tracked *k;              /* NULL: a free place */
    uint32_t hash;
};

struct track_table {
    struct key_slot *slots;
    size_t nslots;                  /* a power of two */
    size_t nkeys, nentries;
    size_t bytes;                   /* held: the hash, keys (listed or not), readers' arrays */
    struct blockpool entries;       /* entries' arrays a growth or a removal let go of */
    uint64_t compactions;
    TAILQ_HEAD(, tracked) by_age;
};

void track_reader_init(struct track_reader *r)
{
    memset(r, 0, sizeof *r);
}

/* What a reader of k is charged: its entry, its name of k and, as if it
 * were its own, the key. */
static size_t charge(const struct tracked *k)
{
    return sizeof(struct track_entry) + sizeof k + sizeof *k + k->len;
}

struct track_table *track_table_new(void)
{
    struct track_table *tt = calloc(1, sizeof *tt);
    if (tt && !(tt->slots = calloc(SLOTS_FIRST, sizeof *tt->slots))) {
        free(tt);
        return NULL;
    }
    if (tt) {
        tt->nslots = SLOTS_FIRST;
        tt->bytes = SLOTS_FIRST * sizeof *tt->slots;
        blockpool_init(&tt->entries);
        TAILQ_INIT(&tt->by_age);
    }
    return tt;
}

/* ---- the hash of keys ---- */

/* key's place in the hash, or the free place it would take. */
static size_t slot_find(const struct track_table *tt, const char *key, size_t len, uint32_t hash)
{
    size_t mask = tt->nslots - 1, i = hash & mask;
    for (;; i = (i + 1) & mask) {
        const struct key_slot *s = &tt->slots[i];
        if (!s->k || (s->hash == hash && s->k->len == len && !memcmp(s->k->key, key, len)))
            return i;
    }
}

/* Twice the places (none when out of memory: the hash fills further, and
 * key_new refuses a key past the last free place). */
static void slots_grow(struct track_table *tt)
{
    size_t n = tt->nslots * 2;
    struct key_slot *old = tt->slots, *b = calloc(n, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < tt->nslots; i++) {
        if (!old[i].k)
            continue;
        size_t j = old[i].hash & (n - 1);
        while (b[j].k)
            j = (j + 1) & (n - 1);
        b[j] = old[i];
    }
    free(old);
    tt->bytes += (n - tt->nslots) * sizeof *b;
    tt->slots = b;
    tt->nslots = n;
}

/* Place i freed: the keys after it that belong before it move back (the
 * deletion of linear probing, with no tombstones). */
static void slot_free(struct track_table *tt, size_t i)
{
    size_t mask = tt->nslots - 1, j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!tt->slots[j].k)
            break;
        size_t home = tt->slots[j].hash & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            tt->slots[i] = tt->slots[j];
            i = j;
        }
    }
    tt->slots[i].k = NULL;
}

/* ---- a key's entries ---- */

static uint32_t who_hash(const struct track_reader *who)
{
    return (uint32_t)(((uint64_t)(uintptr_t)who * 0x9E3779B97F4A7C15ull) >> 32);
}

/* who's place among k's entries (k->cap > 0): its entry, or the free place
 * it would take. */
static struct track_entry *entry_at(const struct tracked *k, const struct track_reader *who)
{
    uint32_t mask = k->cap - 1, i = who_hash(who) & mask;
    while (k->entries[i].who && k->entries[i].who != who)
        i = (i + 1) & mask;
    return &k->entries[i];
}

static struct track_entry *entry_find(const struct tracked *k, const struct track_reader *who)
{
    if (k->cap == 0)
        return NULL;
    struct track_entry *e = entry_at(k, who);
    return e->who ? e : NULL;
}

/* Room for one more of k's entries: 0, or -1 out of memory. */
static int entries_room(struct track_table *tt, struct tracked *k)
{
    if ((k->n + 1) * 4 <= k->cap * 3)
        return 0;
    uint64_t cap = k->cap ? (uint64_t)k->cap * ENTRIES_GROWTH : ENTRIES_FIRST;
    uint32_t was = k->cap;
    struct track_entry *old = k->entries, *b;
    if (cap > UINT32_MAX || !(b = blockpool_get(&tt->entries, cap * sizeof *b)))
        return -1;
    k->entries = b;
    k->cap = (uint32_t)cap;
    for (uint32_t i = 0; i < was; i++)
        if (old[i].who)
            *entry_at(k, old[i].who) = old[i];
    blockpool_put(&tt->entries, old, was * sizeof *old);
    tt->bytes += (size_t)(cap - was) * sizeof *b;
    return 0;
}

/* e, one of k's entries, goes; the entries after it that belong before it
 * move back. */
static void entry_free(struct track_table *tt, struct tracked *k, struct track_entry *e)
{
    uint32_t mask = k->cap - 1, i = (uint32_t)(e - k->entries), j = i;
    e->who->listed--;
    e->who->bytes -= charge(k);
    tt->nentries--;
    k->n--;
    for (;;) {
        j = (j + 1) & mask;
        struct track_entry *x = &k->entries[j];
        if (!x->who)
            break;
        uint32_t home = who_hash(x->who) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            k->entries[i] = *x;
            i = j;
        }
    }
    k->entries[i].who = NULL;
}

/* ---- keys ---- */

static void key_release(struct track_table *tt, struct tracked *k)
{
    if (--k->refs > 0 || k->listed)
        return;
    tt->bytes -= sizeof *k + k->len;
    free(k);
}

static struct tracked *key_new(struct track_table *tt, size_t at, const char *key, size_t len,
                               uint32_t hash)
{
    struct tracked *k = malloc(sizeof *k + len);
    if (!k)
        return NULL;
    memset(k, 0, sizeof *k);
    k->hash = hash;
    k->len = (uint32_t)len;
    k->listed = 1;
    memcpy(k->key, key, len);
    TAILQ_INSERT_TAIL(&tt->by_age, k, age);
    tt->slots[at] = (struct key_slot){ k, hash };
    tt->nkeys++;
    tt->bytes += sizeof *k + len;
    return k;
}

/* k, at place i of the hash, leaves the table: its readers handed to
 * notify first (if any), its entries freed; k itself too, unless a
 * reader's array still names it. */
static void key_remove(struct track_table *tt, size_t i, track_notify_fn *notify, void *arg)
{
    struct tracked *k = tt->slots[i].k;
    slot_free(tt, i);
    TAILQ_REMOVE(&tt->by_age, k, age);
    tt->nkeys--;
    for (uint32_t j = 0; j < k->cap; j++) {
        struct track_entry *e = &k->entries[j];
        if (!e->who)
            continue;
        if (notify)
            notify(e->who, k->key, k->len, 0, arg);
        e->who->listed--;
        e->who->bytes -= charge(k);
        tt->nentries--;
    }
    blockpool_put(&tt->entries, k->entries, k->cap * sizeof *k->entries);
    tt->bytes -= (size_t)k->cap * sizeof *k->entries;
    k->entries = NULL;
    k->n = k->cap = 0;
    k->listed = 0;
    if (k->refs == 0) {
        tt->bytes -= sizeof *k + k->len;
        free(k);
    }
    if (tt->nkeys == 0)
        blockpool_clear(&tt->entries);  /* an empty table keeps none */
}

/* Listed k's place in the hash. */
static size_t slot_of(const struct track_table *tt, const struct tracked *k)
{
    size_t mask = tt->nslots - 1, i = k->hash & mask;
    while (tt->slots[i].k != k)
        i = (i + 1) & mask;
    return i;
}

/* The oldest keys go until there are fewer than max. */
static void make_room(struct track_table *tt, int max, track_notify_fn *evicted, void *arg)
{
    while (max > 0 && tt->nkeys >= (size_t)max)
        key_remove(tt, slot_of(tt, TAILQ_FIRST(&tt->by_age)), evicted, arg);
}

/* ---- readers' arrays ---- */

/* who's array keeps one name of each key it is listed under, and lets go
 * of the rest. */
static void reader_compact(struct track_table *tt, struct track_reader *who)
{
    uint64_t pass = ++tt->compactions;
    size_t kept = 0;
    for (size_t i = 0; i < who->nkeys; i++) {
        struct tracked *k = who->keys[i];
        if (k->listed && k->mark != pass && entry_find(k, who)) {
            k->mark = pass;
            who->keys[kept++] = k;
        } else {
            key_release(tt, k);
        }
    }
    who->nkeys = kept;
}

/* who names k, where it is now listed: 0, or -1 out of memory. */
static int reader_name(struct track_table *tt, struct track_reader *who, struct tracked *k)
{
    if (who->nkeys == who->capkeys && who->nkeys >= 2 * who->listed + READER_SLACK)
        reader_compact(tt, who);
    if (who->nkeys == who->capkeys) {
        size_t cap = who->capkeys ? who->capkeys * 2 : 16;
        struct tracked **more = realloc(who->keys, cap * sizeof *more);
        if (!more)
            return -1;
        tt->bytes += (cap - who->capkeys) * sizeof *more;
        who->keys = more;
        who->capkeys = cap;
    }
    who->keys[who->nkeys++] = k;
    k->refs++;
    return 0;
}

/* ---- reads, pushes, closes ---- */

int track_table_add(struct track_table *tt, const char *key, size_t len, uint32_t hash,
                    struct track_reader *reader, const struct node_conn *conn, uint64_t pos,
                    int max_keys, track_notify_fn *evicted, void *arg)
{
    size_t at = slot_find(tt, key, len, hash);
    struct tracked *k = tt->slots[at].k;
    if (!k && len > UINT32_MAX)
        return -1;
    if (!k) {
        make_room(tt, max_keys, evicted, arg);
        if ((tt->nkeys + 1) * 2 > tt->nslots)
            slots_grow(tt);
        at = slot_find(tt, key, len, hash);
        if (tt->nkeys + 1 >= tt->nslots || !(k = key_new(tt, at, key, len, hash)))
            return -1;
    }
    struct track_entry *e = entry_find(k, reader);
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
    if (entries_room(tt, k) < 0 || reader_name(tt, reader, k) < 0) {
        if (k->n == 0)
            key_remove(tt, slot_find(tt, key, len, hash), NULL, NULL);
        return -1;
    }
    e = entry_at(k, reader);
    *e = (struct track_entry){ reader, conn, pos, pos };
    k->n++;
    tt->nentries++;
    reader->listed++;
    reader->bytes += charge(k);
    return 0;
}

void track_table_prefetch(const struct track_table *tt, uint32_t hash,
                          const struct track_reader *reader, int stage)
{
    size_t mask = tt->nslots - 1, i = hash & mask;
    if (stage == 0) {
        __builtin_prefetch(&tt->slots[i]);
        return;
    }
    while (tt->slots[i].k && tt->slots[i].hash != hash)
        i = (i + 1) & mask;
    const struct tracked *k = tt->slots[i].k;
    if (!k)
        return;
    if (stage == 1) {
        __builtin_prefetch(k);
        __builtin_prefetch(k->key);     /* (often on the next line) */
    } else if (k->cap > 0) {
        __builtin_prefetch(&k->entries[who_hash(reader) & (k->cap - 1)]);
    }
}

void track_table_invalidate(struct track_table *tt, const char *key, size_t len,
                            const struct node_conn *conn, uint64_t answered,
                            track_notify_fn *notify, void *arg)
{
    size_t at = slot_find(tt, key, len, hash_fnv32(key, len));
    struct tracked *k = tt->slots[at].k;
    uint32_t kept = 0;
    if (!k)
        return;
    for (uint32_t i = 0; i < k->cap; i++) {
        struct track_entry *e = &k->entries[i];
        if (!e->who)
            continue;
        if (e->conn == conn && e->first > answered) {
            kept++;                     /* every read in flight: run after the write */
            continue;
        }
        notify(e->who, k->key, k->len, e->conn == conn, arg);
        /* a read on a connection that redirects here: the two orders are
         * not related, so its reader is told, and kept while a read of its
         * is still in flight there */
        uint64_t done = e->conn == conn ? answered : e->conn->nanswered;
        if (e->last > done) {
            /* a read in flight ran after the write: it is listed again, from
             * the first place a read not yet answered can have */
            e->first = done + 1;
            kept++;
        } else {
            e->conn = NULL;             /* to drop, once the walk is over */
        }
    }
    if (kept == 0) {
        key_remove(tt, at, NULL, NULL);
        return;
    }
    /* a drop moves later entries back, perhaps into place i: i is looked
     * at again (one moved before i, past the array's end, is a kept one) */
    for (uint32_t i = 0; i < k->cap; i++)
        while (k->entries[i].who && !k->entries[i].conn)
            entry_free(tt, k, &k->entries[i]);
}

void track_table_forget(struct track_table *tt, const char *key, size_t len,
                        struct track_reader *reader)
{
    size_t at = slot_find(tt, key, len, hash_fnv32(key, len));
    struct tracked *k = tt->slots[at].k;
    struct track_entry *e = k ? entry_find(k, reader) : NULL;
    if (!e)
        return;
    entry_free(tt, k, e);
    if (k->n == 0)
        key_remove(tt, at, NULL, NULL);
}

size_t track_table_forget_reader(struct track_table *tt, struct track_reader *reader,
                                 size_t max)
{
    size_t n = 0;
    for (; n < max && reader->nkeys > 0; n++) {
        struct tracked *k = reader->keys[--reader->nkeys];
        struct track_entry *e = k->listed ? entry_find(k, reader) : NULL;
        if (e) {
            entry_free(tt, k, e);
            if (k->n == 0)
                key_remove(tt, slot_of(tt, k), NULL, NULL);
        }
        key_release(tt, k);
    }
    if (reader->nkeys == 0 && reader->keys) {
        tt->bytes -= reader->capkeys * sizeof *reader->keys;
        free(reader->keys);
        reader->keys = NULL;
        reader->capkeys = 0;
    }
    return n;
}

void track_table_clear(struct track_table *tt)
{
    while (!TAILQ_EMPTY(&tt->by_age))
        key_remove(tt, slot_of(tt, TAILQ_FIRST(&tt->by_age)), NULL, NULL);
}

void track_table_free(struct track_table *tt)
{
    if (!tt)
        return;
    track_table_clear(tt);
    free(tt->slots);
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
    return tt->bytes + tt->entries.held;
}
