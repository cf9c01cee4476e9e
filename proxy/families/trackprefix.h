/*
 * trackprefix: the prefixes of a client in CLIENT TRACKING's BCAST mode, a
 * sorted set of byte strings (as Redis's rax lists them in TRACKINGINFO)
 * of which none is a prefix of another (Redis refuses overlapping ones).
 * The empty prefix (BCAST without PREFIX) matches every key.
 */
#ifndef TAGPROXY_TRACKPREFIX_H
#define TAGPROXY_TRACKPREFIX_H

#include <stddef.h>

struct track_prefix {
    char *s;
    size_t len;
};

struct track_prefixes {
    int n, cap;
    struct track_prefix *v;         /* sorted, bytewise */
    size_t bytes;                   /* held: the strings and the array */
};

/* Add s[0..len), in order: 0, or -1 out of memory. */
int track_prefixes_add(struct track_prefixes *ps, const char *s, size_t len);

/* Forget them all (ps stays usable). */
void track_prefixes_clear(struct track_prefixes *ps);

/* The prefix of ps that s[0..len) overlaps (one is a prefix of the
 * other, as Redis's stringCheckPrefix), or NULL. */
const struct track_prefix *track_prefixes_overlap(const struct track_prefixes *ps,
                                                  const char *s, size_t len);

/* Whether a and b overlap. */
int track_prefix_overlaps(const char *a, size_t alen, const char *b, size_t blen);

/* Whether key[0..len) starts with p. */
static inline int track_prefix_matches(const struct track_prefix *p, const char *key,
                                       size_t len)
{
    return p->len <= len && (p->len == 0 || __builtin_memcmp(p->s, key, p->len) == 0);
}

#endif
