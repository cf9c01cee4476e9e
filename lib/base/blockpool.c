/*
 * blockpool: freed blocks kept for the next of their size. See
 * blockpool.h.
 */
#include "lib/base/blockpool.h"

#include <stdlib.h>
#include <string.h>

void blockpool_init(struct blockpool *p)
{
    memset(p, 0, sizeof *p);
}

/* size's list (0: BLOCKPOOL_MIN bytes), or -1 past the lists. */
static int class_of(size_t size)
{
    int c = 0;
    for (size_t s = BLOCKPOOL_MIN; s < size; s <<= 1)
        if (++c == BLOCKPOOL_CLASSES)
            return -1;
    return c;
}

void *blockpool_get(struct blockpool *p, size_t size)
{
    int c = class_of(size);
    void *block = c < 0 ? NULL : p->free[c];
    if (!block)
        return calloc(1, size);
    p->free[c] = *(void **)block;
    p->kept[c] -= size;
    memset(block, 0, size);
    return block;
}

void blockpool_put(struct blockpool *p, void *block, size_t size)
{
    int c = class_of(size);
    if (!block)
        return;
    if (c < 0 || p->kept[c] + size > BLOCKPOOL_KEEP) {
        free(block);
        return;
    }
    *(void **)block = p->free[c];
    p->free[c] = block;
    p->kept[c] += size;
}

size_t blockpool_held(const struct blockpool *p)
{
    size_t n = 0;
    for (int c = 0; c < BLOCKPOOL_CLASSES; c++)
        n += p->kept[c];
    return n;
}

void blockpool_clear(struct blockpool *p)
{
    for (int c = 0; c < BLOCKPOOL_CLASSES; c++) {
        while (p->free[c]) {
            void *block = p->free[c];
            p->free[c] = *(void **)block;
            free(block);
        }
    }
    memset(p, 0, sizeof *p);
}
