/*
 * blockpool: blocks of a few power-of-two sizes, for a structure that
 * grows many small arrays by doubling (the tracking table's readers).
 *
 * A block is carved from a 64 KB chunk, and a block given back goes on
 * its size's free list, first out next: the block a growth just left is
 * the one the next growth of that size takes, still in the cache. malloc
 * would look for room among chunks it last saw long ago, and a table of a
 * million arrays growing pays that miss on each growth. Sizes past the
 * largest class go to malloc. The pool keeps what it carved until
 * blockpool_clear; its owner clears it when it holds no block.
 *
 * One thread; no locking.
 */
#ifndef TAGPROXY_BLOCKPOOL_H
#define TAGPROXY_BLOCKPOOL_H

#include <stddef.h>

#define BLOCKPOOL_MIN 64                /* the smallest block, in bytes */
#define BLOCKPOOL_CLASSES 7             /* 64 .. 4096 bytes */

struct blockpool {
    void *free[BLOCKPOOL_CLASSES];      /* each a list through the blocks' first word */
    void *chunks;                       /* carved chunks, a list through their first word */
    char *next, *end;                   /* the room left in the newest chunk */
    size_t held;                        /* bytes the pool holds: its chunks, and blocks
                                           past the classes while given out */
};

/* An empty pool (no memory until the first block). */
void blockpool_init(struct blockpool *p);

/* A zeroed block of size bytes (a power of two, at least BLOCKPOOL_MIN),
 * or NULL when out of memory. */
void *blockpool_get(struct blockpool *p, size_t size);

/* block, of size bytes (as it was asked for), goes back to the pool. */
void blockpool_put(struct blockpool *p, void *block, size_t size);

/* Every chunk freed: no block of the pool may be in use. */
void blockpool_clear(struct blockpool *p);

#endif
