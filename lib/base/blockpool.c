/*
 * blockpool: power-of-two blocks from 64 KB chunks. See blockpool.h.
 */
#include "lib/base/blockpool.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES (64 * 1024)
#define CHUNK_HEAD 64                   /* a chunk's first line: its link to the next */

void blockpool_init(struct blockpool *p)
{
    memset(p, 0, sizeof *p);
}

/* size's class (0: BLOCKPOOL_MIN bytes), or -1 past the classes. */
static int class_of(size_t size)
{
    int c = 0;
    for (size_t s = BLOCKPOOL_MIN; s < size; s <<= 1)
        if (++c == BLOCKPOOL_CLASSES)
            return -1;
    return c;
}

/* size bytes from the newest chunk, a new one when it has no room. */
static void *carve(struct blockpool *p, size_t size)
{
    if ((size_t)(p->end - p->next) < size) {
        char *chunk = malloc(CHUNK_BYTES);
        if (!chunk)
            return NULL;
        *(void **)chunk = p->chunks;
        p->chunks = chunk;
        p->next = chunk + CHUNK_HEAD;
        p->end = chunk + CHUNK_BYTES;
        p->held += CHUNK_BYTES;
    }
    void *block = p->next;
    p->next += size;
    return block;
}

void *blockpool_get(struct blockpool *p, size_t size)
{
    int c = class_of(size);
    void *block;
    if (c < 0) {
        if ((block = calloc(1, size)))
            p->held += size;
        return block;
    }
    block = p->free[c];
    if (block) {
        p->free[c] = *(void **)block;
        if (p->free[c])
            __builtin_prefetch(p->free[c]);     /* the next get's */
    } else if (!(block = carve(p, size))) {
        return NULL;
    }
    memset(block, 0, size);
    return block;
}

void blockpool_put(struct blockpool *p, void *block, size_t size)
{
    int c = class_of(size);
    if (!block)
        return;
    if (c < 0) {
        p->held -= size;
        free(block);
        return;
    }
    *(void **)block = p->free[c];
    p->free[c] = block;
}

void blockpool_clear(struct blockpool *p)
{
    while (p->chunks) {
        void *chunk = p->chunks;
        p->chunks = *(void **)chunk;
        free(chunk);
        p->held -= CHUNK_BYTES;
    }
    memset(p->free, 0, sizeof p->free);
    p->next = p->end = NULL;
}
