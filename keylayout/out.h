/*
 * out: the output of the names a layout builds, snprintf-style: it counts
 * everything and writes what fits; with cmp set it writes nothing and notes
 * whether the output differs from cmp (a name checked without building it).
 */
#ifndef TAGPROXY_OUT_H
#define TAGPROXY_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* snprintf-style output: counts everything, writes what fits. With cmp
 * set it writes nothing and notes whether the output differs from cmp. */
struct out {
    char *buf;
    size_t cap;
    size_t len;
    const char *cmp;
    size_t cmplen;
    bool differ;
};

static inline void out_put(struct out *o, const char *s, size_t n)
{
    if (!o->cmp && o->len + n <= o->cap) {   /* the common case: it fits */
        memcpy(o->buf + o->len, s, n);
        o->len += n;
        return;
    }
    if (o->cmp) {
        if (o->len + n > o->cmplen || memcmp(o->cmp + o->len, s, n) != 0)
            o->differ = true;
    } else if (o->len < o->cap)
        memcpy(o->buf + o->len, s, n < o->cap - o->len ? n : o->cap - o->len);
    o->len += n;
}

static inline void out_byte(struct out *o, char c)
{
    out_put(o, &c, 1);
}

#endif
