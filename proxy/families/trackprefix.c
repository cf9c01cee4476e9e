/*
 * trackprefix: BCAST prefixes. See trackprefix.h.
 */
#include "proxy/families/trackprefix.h"

#include <stdlib.h>
#include <string.h>

int track_prefix_overlaps(const char *a, size_t alen, const char *b, size_t blen)
{
    return memcmp(a, b, alen < blen ? alen : blen) == 0;
}

const struct track_prefix *track_prefixes_overlap(const struct track_prefixes *ps,
                                                  const char *s, size_t len)
{
    for (int i = 0; i < ps->n; i++)
        if (track_prefix_overlaps(ps->v[i].s, ps->v[i].len, s, len))
            return &ps->v[i];
    return NULL;
}

/* a before b, bytewise (a shorter one first when it is b's start). */
static int before(const struct track_prefix *a, const char *s, size_t len)
{
    int c = memcmp(a->s, s, a->len < len ? a->len : len);
    return c < 0 || (c == 0 && a->len < len);
}

int track_prefixes_add(struct track_prefixes *ps, const char *s, size_t len)
{
    if (ps->n == ps->cap) {
        int cap = ps->cap ? ps->cap * 2 : 4;
        struct track_prefix *v = realloc(ps->v, sizeof *v * (size_t)cap);
        if (!v)
            return -1;
        ps->bytes += sizeof *v * (size_t)(cap - ps->cap);
        ps->v = v;
        ps->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, s, len);
    copy[len] = '\0';
    int at = 0;
    while (at < ps->n && before(&ps->v[at], s, len))
        at++;
    memmove(&ps->v[at + 1], &ps->v[at], sizeof *ps->v * (size_t)(ps->n - at));
    ps->v[at] = (struct track_prefix){ copy, len };
    ps->n++;
    ps->bytes += len + 1;
    return 0;
}

void track_prefixes_clear(struct track_prefixes *ps)
{
    for (int i = 0; i < ps->n; i++)
        free(ps->v[i].s);
    free(ps->v);
    *ps = (struct track_prefixes){ 0 };
}
