/*
 * subset: sets of subscribed names. See subset.h.
 */
#include "proxy/families/subset.h"

#include <stdlib.h>
#include <string.h>

#include "lib/base/hash.h"

struct sub_entry *subset_find(const struct sub_set *set, const char *name, size_t len)
{
    if (!set->nbuckets)
        return NULL;
    uint32_t h = hash_fnv32(name, len);
    for (struct sub_entry *e = set->buckets[h % set->nbuckets]; e; e = e->hnext)
        if (e->hash == h && e->len == len && memcmp(e->name, name, len) == 0)
            return e;
    return NULL;
}

static int subset_grow(struct sub_set *set)
{
    size_t nb = set->nbuckets ? set->nbuckets * 2 : 8;
    struct sub_entry **b = calloc(nb, sizeof *b), *e;
    if (!b)
        return -1;
    TAILQ_FOREACH(e, &set->order, order) {
        e->hnext = b[e->hash % nb];
        b[e->hash % nb] = e;
    }
    free(set->buckets);
    set->buckets = b;
    set->nbuckets = nb;
    return 0;
}

int subset_add(struct sub_set *set, const char *name, size_t len, struct sub_entry **out)
{
    struct sub_entry *e = subset_find(set, name, len);
    if (e) {
        *out = e;
        return 0;
    }
    if (set->n >= set->nbuckets && subset_grow(set) < 0)
        return -1;
    e = calloc(1, sizeof *e + len + 1);
    if (!e)
        return -1;
    e->hash = hash_fnv32(name, len);
    e->len = len;
    memcpy(e->name, name, len);
    e->hnext = set->buckets[e->hash % set->nbuckets];
    set->buckets[e->hash % set->nbuckets] = e;
    TAILQ_INSERT_TAIL(&set->order, e, order);
    set->n++;
    *out = e;
    return 1;
}

void subset_unlink(struct sub_set *set, struct sub_entry *e)
{
    struct sub_entry **p = &set->buckets[e->hash % set->nbuckets];
    while (*p != e)
        p = &(*p)->hnext;
    *p = e->hnext;
    TAILQ_REMOVE(&set->order, e, order);
    set->n--;
    free(e);
}

void subset_init(struct sub_set *set)
{
    memset(set, 0, sizeof *set);
    TAILQ_INIT(&set->order);
}

void subset_clear(struct sub_set *set)
{
    struct sub_entry *e;
    while ((e = TAILQ_FIRST(&set->order)) != NULL) {
        TAILQ_REMOVE(&set->order, e, order);
        free(e);
    }
    free(set->buckets);
    subset_init(set);
}

void subset_leaving_add(struct sub_set *leaving, const char *name, size_t len)
{
    struct sub_entry *e;
    if (subset_add(leaving, name, len, &e) >= 0)
        e->leaving++;
}

void subset_leaving_done(struct sub_set *leaving, const char *name, size_t len)
{
    struct sub_entry *e = subset_find(leaving, name, len);
    if (e && --e->leaving <= 0)
        subset_unlink(leaving, e);
}

