/*
 * tracktable: a worker's table of the keys its tracking clients read, for
 * client-side caching (tracking.h). Each key (its cluster name) has its
 * readers, the node connection its reads went on, and the place in that
 * connection's order (node_conn.nsent as it was sent) of the last of them.
 * An invalidation the node pushes there tells every reader of the key, in
 * order with the replies (a read still in flight ran after the write the
 * push is about: its reply, which comes after the telling, is fresh); the
 * key stays listed when its last read was not answered before the push
 * (that read ran after the write, and the node tracks the key again).
 *
 * The table also knows which keys the node tracks on their connection: a
 * read there that went right after CLIENT CACHING YES was answered (the
 * caller says so: track_table_node_tracks), and no invalidation has come
 * since. A read of such a key needs no CLIENT CACHING YES; a bit array
 * small enough to stay in the cache guesses that without the key. When
 * such a read is still in flight at the key's push, it ran after the
 * write untracked: the readers are told once more, after the replies they
 * are owed, and the key goes, so that its next read goes with CLIENT
 * CACHING YES.
 *
 * So a push tells a reader whose only read is still in flight, and keeps a
 * key's readers listed while any of them has a read in flight: an extra
 * invalidation costs a cache a miss, and one server, where reads and
 * writes never overlap, never shows the difference. What this buys is a
 * read that touches the key's place in the hash and one line of the key,
 * which holds its readers among a worker's first 63 clients: a key grows
 * only for the readers past them, beyond four of them.
 *
 * A read on a connection whose invalidations the node sends to another
 * (CLIENT TRACKING REDIRECT) has no order with the push: its readers are
 * told at once, after the replies they are owed. A read of a key on
 * another connection than its readers' first tells those readers the same
 * way, and drops them: a key's reads are on one connection.
 *
 * A reader is the family's: it embeds a struct track_reader, the keys it
 * was listed under, so that a client that goes takes its entries with it
 * (track_table_forget_reader). A key left with no reader that way stays
 * while the node tracks it, so that the next reader's read needs no CLIENT
 * CACHING YES; its invalidation takes it. Bounded: past max keys the
 * oldest key goes, its readers handed to the evicted callback first.
 * Everything happens on the worker's thread.
 */
#ifndef TAGPROXY_TRACKTABLE_H
#define TAGPROXY_TRACKTABLE_H

#include <stddef.h>
#include <stdint.h>

struct node_conn;
struct track_table;
struct tracked;

/* What a reader embeds (track_reader_init before use). */
struct track_reader {
    struct tracked **keys;          /* the keys it was listed under (some perhaps
                                       since let go of), for its close */
    size_t nkeys, capkeys;
    size_t listed;                  /* its (key, reader) entries in the table */
    size_t bytes;                   /* what the table charges it: its entries, and
                                       each of their keys as if it were its own */
    uint32_t id;                    /* its number among the table's readers (0: none
                                       yet); the keys list readers by it */
};

void track_reader_init(struct track_reader *r);

/* A reader of key[0..len) the table lets go of, to be told. ordered: by a
 * push on the connection its reads went on, so that a read of its that
 * connection has not answered yet ran after the write (and may be answered
 * after the telling); else it is told after the reply of everything of
 * its a node was sent. */
typedef void track_notify_fn(struct track_reader *reader, const char *key, size_t len,
                             int ordered, void *arg);

/* NULL when out of memory. Every reader's keys are forgotten
 * (track_table_forget_reader) before the table is freed. */
struct track_table *track_table_new(void);
void track_table_free(struct track_table *tt);

/* How the node tracks the key of a read on its connection. */
enum track_how {
    TRACK_EVERY_KEY,        /* it tracks every key there (BCAST) */
    TRACK_CACHING,          /* the read went right after CLIENT CACHING YES */
    TRACK_IF_TRACKED,       /* without: tracked when an earlier read there went with
                               it and was answered (track_table_node_tracks), and no
                               invalidation of the key has come since */
};

/* reader read key (whose hash_fnv32 is hash) on conn, its read the pos-th
 * request there, tracked by the node as how says. Past max_keys (0: no
 * bound) the oldest keys go first, each reader of theirs handed to
 * evicted; the key's readers on another connection are handed to evicted
 * too. 0; 1 when the node does not track the read (TRACK_IF_TRACKED, and
 * it was not): the reader is not listed, and is to be told after the
 * read's reply; -1 out of memory (the read is then not tracked: the caller
 * must invalidate it itself). */
int track_table_add(struct track_table *tt, const char *key, size_t len, uint32_t hash,
                    struct track_reader *reader, const struct node_conn *conn, uint64_t pos,
                    enum track_how how, int max_keys, track_notify_fn *evicted, void *arg);

/* A read of key (whose hash_fnv32 is hash) that went on conn right after
 * CLIENT CACHING YES was answered without an error: the node tracks the
 * key there from then on, if the table lists it there, until its next
 * invalidation. (Only a reply says so: a command refused before it runs,
 * or a script, which tracks the keys it reads rather than the ones it
 * names, leaves the key untracked.) */
void track_table_node_tracks(struct track_table *tt, const char *key, size_t len, uint32_t hash,
                             const struct node_conn *conn);

/* Whether the node seems to track the key whose hash_fnv32 is hash on
 * conn (TRACK_IF_TRACKED): read from the hint array, without the key;
 * wrong where other keys set its bits, which track_table_add then finds
 * out. */
int track_table_seems_tracked(const struct track_table *tt, uint32_t hash,
                              const struct node_conn *conn);

/* Ahead of track_table_add of a batch of reads: what reader's add of the
 * key whose hash_fnv32 is hash will read, brought into the cache in
 * stages (0: the key's place in the hash, 1: the key's line a read looks
 * at, 2: the rest of a long key and the reader's place among the key's
 * readers past the first clients), each a few reads after the last, so
 * that the misses of the reads between overlap. */
void track_table_prefetch(const struct track_table *tt, uint32_t hash,
                          const struct track_reader *reader, int stage);

/* The node pushed an invalidation of key on conn after its answered-th
 * reply: the readers of key are handed to notify (ordered when their reads
 * went on conn), and the key is forgotten unless a read of it is still on
 * its way and a reader still lists it; a read on its way without CLIENT CACHING YES hands them to
 * notify again (not ordered) and the key is forgotten. Either way the node
 * no longer tracks the key on conn until a read's reply says so. Each
 * reader's connection is open. */
void track_table_invalidate(struct track_table *tt, const char *key, size_t len,
                            const struct node_conn *conn, uint64_t answered,
                            track_notify_fn *notify, void *arg);

/* reader's entries forgotten (its client goes), up to max keys it names at
 * a time: how many it went through. Done when reader->nkeys is 0. */
size_t track_table_forget_reader(struct track_table *tt, struct track_reader *reader,
                                 size_t max);

/* Every key forgotten. */
void track_table_clear(struct track_table *tt);

/* Keys and (key, reader) entries listed; bytes the table holds. */
size_t track_table_keys(const struct track_table *tt);
size_t track_table_readers(const struct track_table *tt);
size_t track_table_bytes(const struct track_table *tt);

#endif
