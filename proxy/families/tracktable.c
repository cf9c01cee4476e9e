/*
 * tracktable: the keys tracking clients read. See tracktable.h.
 *
 * Keys are in an open-addressed hash (linear probing, at most half full),
 * and on a list in the order they were first read: the oldest goes first
 * when the table is full. A key lists its readers by number (the table's
 * by_id names each number's reader): those numbered below LOW_IDS (a
 * worker's first clients) as bits of a word, the first INLINE_IDS others
 * as numbers, and the rest in a small open-addressed hash of numbers (at
 * most three quarters full) from the table's block pool. A read by a
 * worker's first clients touches the key's place in the hash and one line
 * of the key, where the word and the key's first KEY_IN_LINE bytes are
 * (its compare reads no further: same_bytes); a key read by them, or by a
 * few others, never grows.
 *
 * A reader names each key it is listed under in its own array, for its
 * close. A key that leaves the table stays allocated while a reader's array
 * names it (refs); an array is compacted, and the keys no longer listed let
 * go of, once it names twice as many keys as its reader has entries. A
 * reader keeps its number until its close is done: no other reader is
 * found under a key its array names.
 *
 * A key's place in the hash also says whether the node tracks it on its
 * connection (node_tracks). A bit array HINT_BITS times the hash's size
 * holds the same as a guess, two bits of one word per (hash, connection)
 * (a Bloom filter of one word a key): it fits in the cache where the hash
 * does not, and track_table_seems_tracked reads it only, as a read is
 * sent. A key the
 * node tracks sets its bits, and a key it no longer tracks clears them,
 * for every key that shares one: bits set by other keys guess wrong, which
 * track_table_add finds out from the key itself (and clears them); a bit
 * cleared for another costs a key one CLIENT CACHING YES the node did not
 * need.
 */
#include "proxy/families/tracktable.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "cluster/node.h"
#include "lib/base/blockpool.h"
#include "lib/base/hash.h"

#define SLOTS_FIRST 64
#define LOW_IDS 64                  /* readers numbered below it: bits of a key's low */
#define INLINE_IDS 4                /* the others a key lists in its first line */
#define MORE_FIRST 16               /* the first hash of readers past them: 64 bytes */
#define READER_SLACK 32             /* the names a reader keeps past twice its entries */
#define KEY_ALIGN 64                /* a key starts on a cache line */
#define HINT_BITS 4                 /* bits of the hint array per place of the hash */
#define HINT_MIN 4096               /* and at least these */

struct tracked {
    /* its first line: what only its readers past the first clients, a push
       or a close look at */
    uint32_t hash;
    uint32_t listed;                /* in the table (else kept for refs only) */
    uint32_t n, cap;                /* readers numbered LOW_IDS and up; cap 0: all in
                                       ids[], else in more[] */
    uint32_t *more;                 /* cap numbers (a power of two), 0 a free place */
    uint32_t ids[INLINE_IDS];
    uint64_t mark;                  /* the last compaction that kept it */
    TAILQ_ENTRY(tracked) age;       /* oldest first, while listed */
    /* its second line: what a read looks at, up to the key's first
       KEY_IN_LINE bytes */
    uint32_t len;
    uint32_t refs;                  /* readers' arrays that name it */
    const struct node_conn *conn;   /* the connection its reads went on */
    uint64_t last;                  /* the last of them: its place there */
    uint64_t guessed;               /* the last read on conn without CLIENT CACHING
                                       YES (TRACK_IF_TRACKED): its place there */
    uint64_t low;                   /* bit i: reader i (below LOW_IDS) */
    char key[];
};

#define KEY_IN_LINE (2 * KEY_ALIGN - offsetof(struct tracked, key))
_Static_assert(offsetof(struct tracked, len) == KEY_ALIGN, "a read's fields start a line");

struct key_slot {
    struct tracked *k;              /* NULL: a free place */
    uint32_t hash;
    uint32_t node_tracks;           /* 1: the node tracks k on k->conn, from an
                                       answered read there behind CLIENT CACHING YES
                                       (track_table_node_tracks) */
};

struct track_table {
    struct key_slot *slots;
    size_t nslots;                  /* a power of two */
    uint64_t *hints;                /* nhints bits: two per (hash, connection) the node
                                       may track a key of (node_tracks), for a guess that
                                       stays in the cache; NULL out of memory */
    size_t nhints;                  /* a power of two */
    size_t nkeys, nentries;
    size_t bytes;                   /* held: the hash, keys (listed or not), readers'
                                       arrays, keys' hashes of readers, by_id */
    struct track_reader **by_id;    /* each number's reader (0 unused) */
    uint32_t *free_ids;             /* numbers to hand out again */
    uint32_t nids, nfree, capids;   /* by_id and free_ids have capids places */
    struct blockpool more;          /* hashes of readers a growth let go of */
    uint64_t compactions;
    TAILQ_HEAD(, tracked) by_age;
};

static void hints_size(struct track_table *tt);

void track_reader_init(struct track_reader *r)
{
    memset(r, 0, sizeof *r);
}

static size_t key_size(size_t len)
{
    return (sizeof(struct tracked) + len + KEY_ALIGN - 1) & ~(size_t)(KEY_ALIGN - 1);
}

/* What a reader of k is charged: its number, its name of k and, as if it
 * were its own, the key. */
static size_t charge(const struct tracked *k)
{
    return sizeof(uint32_t) + sizeof k + key_size(k->len);
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
        hints_size(tt);
        tt->nids = 1;                       /* number 0 is no reader */
        blockpool_init(&tt->more);
        TAILQ_INIT(&tt->by_age);
    }
    return tt;
}

/* ---- readers' numbers ---- */

/* reader's number, given it when it has none: 0 out of memory. */
static uint32_t reader_id(struct track_table *tt, struct track_reader *reader)
{
    if (reader->id)
        return reader->id;
    if (tt->nfree > 0) {
        reader->id = tt->free_ids[--tt->nfree];
    } else {
        if (tt->nids >= tt->capids) {
            uint32_t cap = tt->capids ? tt->capids * 2 : 64;
            struct track_reader **ids = realloc(tt->by_id, cap * sizeof *ids);
            if (ids)
                tt->by_id = ids;
            uint32_t *fr = ids ? realloc(tt->free_ids, cap * sizeof *fr) : NULL;
            if (!fr)
                return 0;
            tt->free_ids = fr;
            tt->bytes += (cap - tt->capids) * (sizeof *ids + sizeof *fr);
            tt->capids = cap;
        }
        reader->id = tt->nids++;
    }
    tt->by_id[reader->id] = reader;
    return reader->id;
}

/* reader, in no key's readers and naming no key in its array, gives its
 * number back; the last one back lets go of the numbers' arrays. */
static void reader_id_release(struct track_table *tt, struct track_reader *reader)
{
    if (!reader->id)
        return;
    tt->by_id[reader->id] = NULL;
    tt->free_ids[tt->nfree++] = reader->id;
    reader->id = 0;
    if (tt->nfree + 1 < tt->nids)
        return;
    tt->bytes -= tt->capids * (sizeof *tt->by_id + sizeof *tt->free_ids);
    free(tt->by_id);
    free(tt->free_ids);
    tt->by_id = NULL;
    tt->free_ids = NULL;
    tt->nids = 1;
    tt->nfree = tt->capids = 0;
}

/* ---- the hash of keys ---- */

/* Whether a[0..len) and b[0..len) are the same, read no further: the
 * library's memcmp reads whole vectors, which reach into the line after a
 * key's, out of the cache. */
static int same_bytes(const char *a, const char *b, size_t len)
{
    uint64_t x, y;
    for (; len >= sizeof x; a += sizeof x, b += sizeof x, len -= sizeof x) {
        memcpy(&x, a, sizeof x);
        memcpy(&y, b, sizeof y);
        if (x != y)
            return 0;
    }
    while (len-- > 0)
        if (*a++ != *b++)
            return 0;
    return 1;
}

/* key's place in the hash, or the free place it would take. */
static size_t slot_find(const struct track_table *tt, const char *key, size_t len, uint32_t hash)
{
    size_t mask = tt->nslots - 1, i = hash & mask;
    for (;; i = (i + 1) & mask) {
        const struct key_slot *s = &tt->slots[i];
        if (!s->k || (s->hash == hash && s->k->len == len && same_bytes(s->k->key, key, len)))
            return i;
    }
}

/* The place of the first key whose hash is hash, or the free place after
 * the keys probed (which key it is, only the key says). */
static size_t slot_by_hash(const struct track_table *tt, uint32_t hash)
{
    size_t mask = tt->nslots - 1, i = hash & mask;
    while (tt->slots[i].k && tt->slots[i].hash != hash)
        i = (i + 1) & mask;
    return i;
}

/* ---- the hint array ---- */

/* The word of the hint array that (hash, conn) has two bits in, and those
 * bits (one when they are the same). */
static uint64_t *hint_word(const struct track_table *tt, uint32_t hash,
                           const struct node_conn *conn, uint64_t *bits)
{
    uint32_t g = hash ^ (uint32_t)(((uintptr_t)conn >> 6) * 2654435761u);
    uint64_t spread = g * 0x9e3779b97f4a7c15u;
    *bits = (uint64_t)1 << (spread >> 58) | (uint64_t)1 << (spread >> 52 & 63);
    return &tt->hints[g & (tt->nhints / 64 - 1)];
}

static void hint_set(struct track_table *tt, uint32_t hash, const struct node_conn *conn)
{
    uint64_t bits;
    if (tt->hints)
        *hint_word(tt, hash, conn, &bits) |= bits;
}

static void hint_clear(struct track_table *tt, uint32_t hash, const struct node_conn *conn)
{
    uint64_t bits;
    if (tt->hints)
        *hint_word(tt, hash, conn, &bits) &= ~bits;
}

/* Place i's key is no longer known tracked on its connection. */
static void untracked_at(struct track_table *tt, size_t i)
{
    struct key_slot *s = &tt->slots[i];
    if (s->node_tracks) {
        hint_clear(tt, s->hash, s->k->conn);
        s->node_tracks = 0;
    }
}

/* The hint array sized for the hash's places, from the keys' node_tracks
 * (kept as it is when out of memory: it only guesses worse). */
static void hints_size(struct track_table *tt)
{
    size_t n = tt->nslots * HINT_BITS > HINT_MIN ? tt->nslots * HINT_BITS : HINT_MIN;
    if (n == tt->nhints)
        return;
    uint64_t *b = calloc(n / 64, sizeof *b);
    if (!b)
        return;
    if (tt->hints)
        tt->bytes -= tt->nhints / 8;
    free(tt->hints);
    tt->hints = b;
    tt->nhints = n;
    tt->bytes += n / 8;
    for (size_t i = 0; i < tt->nslots; i++)
        if (tt->slots[i].node_tracks)
            hint_set(tt, tt->slots[i].hash, tt->slots[i].k->conn);
}

/* ---- the hash of keys, grown ---- */

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
    hints_size(tt);
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

/* ---- a key's readers ---- */

static uint32_t id_hash(uint32_t id)
{
    return id * 2654435761u;
}

/* id's place in k's hash of readers (k->cap > 0): its own, or the free
 * place it would take. */
static uint32_t *more_at(const struct tracked *k, uint32_t id)
{
    uint32_t mask = k->cap - 1, i = id_hash(id) & mask;
    while (k->more[i] && k->more[i] != id)
        i = (i + 1) & mask;
    return &k->more[i];
}

/* Where k lists id (LOW_IDS or more), or NULL. */
static uint32_t *high_find(struct tracked *k, uint32_t id)
{
    if (k->cap > 0) {
        uint32_t *at = more_at(k, id);
        return *at ? at : NULL;
    }
    for (uint32_t i = 0; i < k->n; i++)
        if (k->ids[i] == id)
            return &k->ids[i];
    return NULL;
}

/* Whether k lists id. */
static int id_find(struct tracked *k, uint32_t id)
{
    if (id < LOW_IDS)
        return id && (k->low >> id & 1);
    return high_find(k, id) != NULL;
}

/* Whether k lists no reader. */
static int key_unread(const struct tracked *k)
{
    return k->low == 0 && k->n == 0;
}

/* k's readers' numbers, one after the other. */
struct id_iter {
    uint64_t low;
    const uint32_t *high;
    uint32_t i, n;
};

static void id_iter_init(struct id_iter *it, const struct tracked *k)
{
    it->low = k->low;
    it->high = k->cap ? k->more : k->ids;
    it->i = 0;
    it->n = k->cap ? k->cap : k->n;
}

/* The next number, or 0 when none is left. */
static uint32_t id_next(struct id_iter *it)
{
    if (it->low) {
        uint32_t id = (uint32_t)__builtin_ctzll(it->low);
        it->low &= it->low - 1;
        return id;
    }
    while (it->i < it->n) {
        uint32_t id = it->high[it->i++];
        if (id)
            return id;
    }
    return 0;
}

/* k's readers move to a hash of cap places: 0, or -1 out of memory. */
static int more_grow(struct track_table *tt, struct tracked *k, uint32_t cap)
{
    uint32_t *b = blockpool_get(&tt->more, cap * sizeof *b), oldcap = k->cap;
    uint32_t *old = oldcap ? k->more : k->ids, nold = oldcap ? oldcap : k->n;
    if (!b)
        return -1;
    k->more = b;
    k->cap = cap;
    for (uint32_t i = 0; i < nold; i++)
        if (old[i])
            *more_at(k, old[i]) = old[i];
    if (oldcap) {
        blockpool_put(&tt->more, old, oldcap * sizeof *old);
        tt->bytes -= oldcap * sizeof *old;
    }
    tt->bytes += cap * sizeof *b;
    return 0;
}

/* k lists id (not yet among its readers): 0, or -1 out of memory. */
static int id_add(struct track_table *tt, struct tracked *k, uint32_t id)
{
    if (id < LOW_IDS) {
        k->low |= (uint64_t)1 << id;
        return 0;
    }
    if (k->cap == 0 && k->n < INLINE_IDS) {
        k->ids[k->n++] = id;
        return 0;
    }
    if (k->cap == 0 || (k->n + 1) * 4 > k->cap * 3) {
        uint64_t cap = k->cap ? (uint64_t)k->cap * 2 : MORE_FIRST;
        if (cap > UINT32_MAX || more_grow(tt, k, (uint32_t)cap) < 0)
            return -1;
    }
    *more_at(k, id) = id;
    k->n++;
    return 0;
}

/* The reader numbered LOW_IDS or more leaves k's readers, where at lists
 * it. */
static void high_remove(struct tracked *k, uint32_t *at)
{
    k->n--;
    if (k->cap == 0) {
        *at = k->ids[k->n];                 /* the last one takes its place */
        return;
    }
    uint32_t mask = k->cap - 1, i = (uint32_t)(at - k->more), j = i;
    for (;;) {                              /* linear probing's deletion */
        j = (j + 1) & mask;
        if (!k->more[j])
            break;
        uint32_t home = id_hash(k->more[j]) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            k->more[i] = k->more[j];
            i = j;
        }
    }
    k->more[i] = 0;
}

/* The reader numbered id (listed) leaves k's readers. */
static void id_remove(struct tracked *k, uint32_t id)
{
    if (id < LOW_IDS)
        k->low &= ~((uint64_t)1 << id);
    else
        high_remove(k, high_find(k, id));
}

/* The reader numbered id of k, as it leaves k's readers: uncharged. */
static struct track_reader *entry_gone(struct track_table *tt, const struct tracked *k,
                                       uint32_t id)
{
    struct track_reader *who = tt->by_id[id];
    who->listed--;
    who->bytes -= charge(k);
    tt->nentries--;
    return who;
}

/* k's readers all leave it, each handed to notify (if any). */
static void ids_clear(struct track_table *tt, struct tracked *k, int ordered,
                      track_notify_fn *notify, void *arg)
{
    struct id_iter it;
    uint32_t id;
    id_iter_init(&it, k);
    while ((id = id_next(&it)) != 0) {
        struct track_reader *who = entry_gone(tt, k, id);
        if (notify)
            notify(who, k->key, k->len, ordered, arg);
    }
    if (k->cap) {
        blockpool_put(&tt->more, k->more, k->cap * sizeof *k->more);
        tt->bytes -= k->cap * sizeof *k->more;
    }
    k->more = NULL;
    k->low = 0;
    k->n = k->cap = 0;
}

/* ---- keys ---- */

static void key_release(struct track_table *tt, struct tracked *k)
{
    if (--k->refs > 0 || k->listed)
        return;
    tt->bytes -= key_size(k->len);
    free(k);
}

static struct tracked *key_new(struct track_table *tt, size_t at, const char *key, size_t len,
                               uint32_t hash)
{
    struct tracked *k = aligned_alloc(KEY_ALIGN, key_size(len));
    if (!k)
        return NULL;
    memset(k, 0, sizeof *k);
    k->hash = hash;
    k->len = (uint32_t)len;
    k->listed = 1;
    memcpy(k->key, key, len);
    TAILQ_INSERT_TAIL(&tt->by_age, k, age);
    tt->slots[at] = (struct key_slot){ k, hash, 0 };
    tt->nkeys++;
    tt->bytes += key_size(len);
    return k;
}

/* k, at place i of the hash, leaves the table: its readers handed to
 * notify (if any); k itself is freed too, unless a reader's array still
 * names it. */
static void key_remove(struct track_table *tt, size_t i, int ordered, track_notify_fn *notify,
                       void *arg)
{
    struct tracked *k = tt->slots[i].k;
    untracked_at(tt, i);
    slot_free(tt, i);
    TAILQ_REMOVE(&tt->by_age, k, age);
    tt->nkeys--;
    ids_clear(tt, k, ordered, notify, arg);
    k->listed = 0;
    if (k->refs == 0) {
        tt->bytes -= key_size(k->len);
        free(k);
    }
    if (tt->nkeys == 0)
        blockpool_clear(&tt->more);         /* an empty table keeps none */
}

/* The key at place at has no reader left (they went): it leaves the
 * table, unless the node tracks it there, so that a later reader's read of
 * it needs no CLIENT CACHING YES; it then keeps no hash of readers. */
static void key_unread_leaves(struct track_table *tt, size_t at)
{
    if (!tt->slots[at].node_tracks)
        key_remove(tt, at, 0, NULL, NULL);
    else
        ids_clear(tt, tt->slots[at].k, 0, NULL, NULL);
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
        key_remove(tt, slot_of(tt, TAILQ_FIRST(&tt->by_age)), 0, evicted, arg);
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
        if (k->listed && k->mark != pass && id_find(k, who->id)) {
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

/* key, at place *at, found or made there (NULL: out of memory); *at is
 * its place after. */
static struct tracked *key_get(struct track_table *tt, size_t *at, const char *key, size_t len,
                               uint32_t hash, int max_keys, track_notify_fn *evicted, void *arg)
{
    if (tt->slots[*at].k)
        return tt->slots[*at].k;
    if (len > UINT32_MAX)
        return NULL;
    make_room(tt, max_keys, evicted, arg);
    if ((tt->nkeys + 1) * 2 > tt->nslots)
        slots_grow(tt);
    *at = slot_find(tt, key, len, hash);
    if (tt->nkeys + 1 >= tt->nslots)
        return NULL;
    return key_new(tt, *at, key, len, hash);
}

int track_table_add(struct track_table *tt, const char *key, size_t len, uint32_t hash,
                    struct track_reader *reader, const struct node_conn *conn, uint64_t pos,
                    enum track_how how, int max_keys, track_notify_fn *evicted, void *arg)
{
    size_t at = slot_find(tt, key, len, hash);
    if (how == TRACK_IF_TRACKED &&
        (!tt->slots[at].k || tt->slots[at].k->conn != conn || !tt->slots[at].node_tracks)) {
        hint_clear(tt, hash, conn);         /* (another key's): guessed wrong */
        return 1;
    }
    struct tracked *k = key_get(tt, &at, key, len, hash, max_keys, evicted, arg);
    if (!k)
        return -1;
    if (k->conn != conn) {
        /* its readers read it on another connection: told after the replies
         * they are owed (their reads there answered first), and dropped */
        ids_clear(tt, k, 0, evicted, arg);
        untracked_at(tt, at);
        k->conn = conn;
        k->last = pos;
        k->guessed = 0;
    } else if (pos > k->last) {
        k->last = pos;
    }
    if (how == TRACK_IF_TRACKED && pos > k->guessed)
        k->guessed = pos;
    uint32_t id = reader_id(tt, reader);
    if (id && id_find(k, id))
        return 0;
    if (!id || id_add(tt, k, id) < 0 || reader_name(tt, reader, k) < 0) {
        if (id && id_find(k, id))
            id_remove(k, id);
        if (key_unread(k))
            key_unread_leaves(tt, slot_find(tt, key, len, hash));
        return -1;
    }
    tt->nentries++;
    reader->listed++;
    reader->bytes += charge(k);
    return 0;
}

void track_table_prefetch(const struct track_table *tt, uint32_t hash,
                          const struct track_reader *reader, int stage)
{
    if (stage == 0) {
        __builtin_prefetch(&tt->slots[hash & (tt->nslots - 1)]);
        return;
    }
    const struct tracked *k = tt->slots[slot_by_hash(tt, hash)].k;
    if (!k)
        return;
    if (stage == 1) {
        __builtin_prefetch(&k->len);
        return;
    }
    if (k->len > KEY_IN_LINE)
        __builtin_prefetch(k->key + KEY_IN_LINE);
    if (reader->id >= LOW_IDS && k->cap > 0)
        __builtin_prefetch(&k->more[id_hash(reader->id) & (k->cap - 1)]);
}

void track_table_node_tracks(struct track_table *tt, const char *key, size_t len, uint32_t hash,
                             const struct node_conn *conn)
{
    size_t at = slot_find(tt, key, len, hash);
    if (tt->slots[at].k && tt->slots[at].k->conn == conn) {
        tt->slots[at].node_tracks = 1;
        hint_set(tt, hash, conn);
    }
}

int track_table_seems_tracked(const struct track_table *tt, uint32_t hash,
                              const struct node_conn *conn)
{
    uint64_t bits;
    return tt->hints && (*hint_word(tt, hash, conn, &bits) & bits) == bits;
}

void track_table_invalidate(struct track_table *tt, const char *key, size_t len,
                            const struct node_conn *conn, uint64_t answered,
                            track_notify_fn *notify, void *arg)
{
    size_t at = slot_find(tt, key, len, hash_fnv32(key, len));
    struct tracked *k = tt->slots[at].k;
    if (!k)
        return;
    /* a read on a connection that redirects here has no order with this
     * push: its reader is told after what it is owed, and the key kept
     * while that connection has a read of it in flight */
    int ordered = k->conn == conn;
    uint64_t done = ordered ? answered : k->conn->nanswered;
    if (k->last <= done) {
        key_remove(tt, at, ordered, notify, arg);
        return;
    }
    /* the node tracks the key again once a read in flight has run */
    if (ordered)
        untracked_at(tt, at);
    struct id_iter it;
    uint32_t id;
    id_iter_init(&it, k);
    while ((id = id_next(&it)) != 0)
        notify(tt->by_id[id], k->key, k->len, ordered, arg);
    /* a read in flight that went without CLIENT CACHING YES ran after the
     * write, untracked: the readers are told again after the replies they
     * are owed, and the key goes; so does a key left with no reader */
    if ((ordered && k->guessed > done) || key_unread(k))
        key_remove(tt, at, 0, notify, arg);
}

size_t track_table_forget_reader(struct track_table *tt, struct track_reader *reader,
                                 size_t max)
{
    size_t n = 0;
    for (; n < max && reader->nkeys > 0; n++) {
        struct tracked *k = reader->keys[--reader->nkeys];
        if (k->listed && id_find(k, reader->id)) {
            entry_gone(tt, k, reader->id);
            id_remove(k, reader->id);
            if (key_unread(k))
                key_unread_leaves(tt, slot_of(tt, k));
        }
        key_release(tt, k);
    }
    if (reader->nkeys == 0) {
        if (reader->keys) {
            tt->bytes -= reader->capkeys * sizeof *reader->keys;
            free(reader->keys);
            reader->keys = NULL;
            reader->capkeys = 0;
        }
        reader_id_release(tt, reader);
    }
    return n;
}

void track_table_clear(struct track_table *tt)
{
    while (!TAILQ_EMPTY(&tt->by_age))
        key_remove(tt, slot_of(tt, TAILQ_FIRST(&tt->by_age)), 0, NULL, NULL);
}

void track_table_free(struct track_table *tt)
{
    if (!tt)
        return;
    track_table_clear(tt);
    free(tt->slots);
    free(tt->hints);
    free(tt->by_id);
    free(tt->free_ids);
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
    return tt->bytes + blockpool_held(&tt->more);
}
