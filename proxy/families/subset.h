/*
 * subset: a client's subscribed names (channels, patterns or shard
 * channels), a hash set that keeps insertion order: PUNSUBSCRIBE without
 * arguments answers in subscription order, as Redis's pattern list does.
 * An entry also carries pub/sub's bookkeeping of the name (its shard
 * connection, an unsubscribe under way).
 */
#ifndef TAGPROXY_SUBSET_H
#define TAGPROXY_SUBSET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

struct sub_conn;

struct sub_entry {
    struct sub_entry *hnext;
    TAILQ_ENTRY(sub_entry) order;
    struct sub_conn *conn;          /* shard channels: its connection; NULL: to place */
    uint32_t hash;
    int removing;                   /* picked by the SUNSUBSCRIBE being built */
    int leaving;                    /* in a leaving set: unconfirmed unsubscribes */
    size_t len;
    char name[];
};

struct sub_set {
    struct sub_entry **buckets;
    size_t nbuckets, n;
    TAILQ_HEAD(, sub_entry) order;
};

void subset_init(struct sub_set *set);
void subset_clear(struct sub_set *set);

struct sub_entry *subset_find(const struct sub_set *set, const char *name, size_t len);

/* 1 added, 0 already there (*out either way), -1 out of memory. */
int subset_add(struct sub_set *set, const char *name, size_t len, struct sub_entry **out);

/* e out of set, and freed. */
void subset_unlink(struct sub_set *set, struct sub_entry *e);

/* In a set of names leaving: one more unsubscribe of name the node has to
 * confirm. Out of memory: its last messages may be dropped, nothing worse. */
void subset_leaving_add(struct sub_set *leaving, const char *name, size_t len);

/* The node confirmed one unsubscribe of name. */
void subset_leaving_done(struct sub_set *leaving, const char *name, size_t len);

#endif
