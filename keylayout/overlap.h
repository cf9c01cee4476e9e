/*
 * overlap: whether two legacy patterns (of rules or keeps, keylayout/rules.h)
 * can match one same name, and such a name. Pure code over the compiled
 * patterns; for layout.c, which refuses two rules files that serve one
 * prefix with rules that overlap (the first match would then depend on the
 * order of the files, which nothing in them says).
 *
 * In segments (a name after its prefix, cut at ':'), a pattern is a row of
 * classes: a literal, a capture (any one segment), a constrained capture
 * (one of its literals), a greedy capture or a keep's `*` (one or more
 * segments, any). The answer is exact: a search over the pairs of
 * positions in both rows (at most (2 * RULES_MAX_SEGS + 1)^2 states), no
 * sampling.
 *
 *   p:lock:<key...>:fence   and  p:lock:<key...>   overlap: "lock:x:fence"
 *   p:msgs:<chat...>        and  p:msg:<chat...>:<m>   do not
 */
#ifndef TAGPROXY_OVERLAP_H
#define TAGPROXY_OVERLAP_H

#include <stdbool.h>
#include <stddef.h>

#include "keylayout/rules.h"

/* Whether some name is matched by both a's and b's legacy patterns. If so,
 * one such name, after the prefix and its ':', is written snprintf-style to
 * out (at most cap bytes, no NUL added) and its full length to *outlen. */
bool overlap_find(const struct rules_rule *a, const struct rules_rule *b,
                  char *out, size_t cap, size_t *outlen);

#endif
