/*
 * tracktable: a worker's table of the keys its tracking clients read, for
 * client-side caching (tracking.h). Each key (its cluster name) has its
 * readers; each reader the node connection its read went on and the read's
 * place in that connection's order (node_conn.nsent as it was sent), so an
 * invalidation the node pushes there goes only to the readers the node
 * answered before it: a read still in flight was run after the write the
 * push is about, and its value is fresh.
 *
 * A reader read a key perhaps several times since it was last told: the
 * table keeps the first of those reads (whose value it may cache) and the
 * last (which may be on its way). A push tells it when its first read was
 * answered before the push, and keeps it listed when its last was not (that
 * read ran after the write, and the node tracks the key again for it).
 *
 * A read on a connection whose invalidations the node sends to another
 * (CLIENT TRACKING REDIRECT) has no order with the push: its reader is told
 * at once, and kept listed while a read of its is in flight.
 *
 * A reader is the family's (a client's tracking state): the table holds a
 * reference to it through ops while it lists it. Bounded: past max keys the
 * oldest key goes, its readers handed to the evicted callback first.
 * Everything happens on the worker's thread.
 */
#ifndef TAGPROXY_TRACKTABLE_H
#define TAGPROXY_TRACKTABLE_H

#include <stddef.h>
#include <stdint.h>

struct node_conn;
struct track_table;

struct track_reader_ops {
    void (*hold)(void *reader);
    void (*drop)(void *reader);
};

/* A reader of key[0..len) the table lets go of, to be told. */
typedef void track_notify_fn(void *reader, const char *key, size_t len, void *arg);

/* NULL when out of memory. */
struct track_table *track_table_new(const struct track_reader_ops *ops);
void track_table_free(struct track_table *tt);

/* reader read key on conn, its read the pos-th request there. Past
 * max_keys (0: no bound) the oldest keys go first, each reader of theirs
 * handed to evicted. 0, or -1 out of memory (the read is then not
 * tracked: the caller must invalidate it itself). */
int track_table_add(struct track_table *tt, const char *key, size_t len, void *reader,
                    const struct node_conn *conn, uint64_t pos, int max_keys,
                    track_notify_fn *evicted, void *arg);

/* The node pushed an invalidation of key on conn after its answered-th
 * reply: the readers of key with a read it had answered (or that read on
 * another connection) are handed to notify, and forgotten unless a later
 * read of theirs is still on its way. Each reader's connection is open. */
void track_table_invalidate(struct track_table *tt, const char *key, size_t len,
                            const struct node_conn *conn, uint64_t answered,
                            track_notify_fn *notify, void *arg);

/* reader no longer reads key (it wrote it, with NOLOOP). */
void track_table_forget(struct track_table *tt, const char *key, size_t len, const void *reader);

/* Every key forgotten. */
void track_table_clear(struct track_table *tt);

/* Keys and readers listed. */
size_t track_table_keys(const struct track_table *tt);
size_t track_table_readers(const struct track_table *tt);

#endif
