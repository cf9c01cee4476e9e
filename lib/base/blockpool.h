/*
 * blockpool: a cache of freed blocks of a few power-of-two sizes, for a
 * structure that keeps many small arrays and grows them (the tracking
 * table's entries).
 *
 * A block given back goes on its size's list, first out next: the block a
 * growth just left is the one the next growth of that size takes, still
 * in the cache. malloc would look for room among chunks it last saw long
 * ago, and a table of a million arrays pays that miss on each growth. A
 * list keeps at most BLOCKPOOL_KEEP bytes; past that, and past the largest
 * size, blocks go back to malloc.
 *
 * One thread; no locking.
 */
#ifndef TAGPROXY_BLOCKPOOL_H
#define TAGPROXY_BLOCKPOOL_H

#include <stddef.h>

#define BLOCKPOOL_MIN 64                /* the smallest block, in bytes */
#define BLOCKPOOL_CLASSES 7             /* 64 .. 4096 bytes */
#define BLOCKPOOL_KEEP (1024 * 1024)    /* the bytes a size's list keeps at most */

struct blockpool {
    void *free[BLOCKPOOL_CLASSES];      /* each a list through the blocks' first word */
    size_t kept[BLOCKPOOL_CLASSES];     /* the bytes on each */
};

/* An empty pool. */
void blockpool_init(struct blockpool *p);

/* A zeroed block of size bytes (a power of two, at least BLOCKPOOL_MIN),
 * or NULL when out of memory. */
void *blockpool_get(struct blockpool *p, size_t size);

/* block (NULL: nothing), of size bytes as it was asked for, is given back. */
void blockpool_put(struct blockpool *p, void *block, size_t size);

/* The bytes the pool keeps. */
size_t blockpool_held(const struct blockpool *p);

/* Every kept block back to malloc. */
void blockpool_clear(struct blockpool *p);

#endif
