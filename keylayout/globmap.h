/*
 * globmap: what a glob over legacy names means over cluster names. A
 * user's key pattern (~bot:user:u1:*) is written for the names its client
 * sends; a script's calls run on a node with the cluster names the key
 * layout gave its keys (bot:{ud:u1}:e:...), so the node user that runs
 * them (proxy/config/acl.h) needs patterns for those names too:
 *
 *   legacy glob   bot:user:u1:*
 *   rule          p:user:<user>:<ns>:<key...>  ->  p:{ud:<user>}:e:<ns>:<key...>
 *   cluster glob  bot:{ud:u1}:e:*:*
 *
 * The pattern itself still matches every name the layout leaves as it is
 * (kept, or matched by no rule). The cluster globs match the cluster name
 * of every legacy name the pattern matches, and no cluster name of a
 * legacy name it does not match; they may match names no legacy name maps
 * to (an unknown capture is '*', whose bytes need not be an encoded
 * value). A greedy capture followed by more segments gives a glob for each
 * ':' of the text where it may end (at most RULES_MAX_SEGS), and one for
 * all of it. Pure code; no allocation.
 */
#ifndef TAGPROXY_GLOBMAP_H
#define TAGPROXY_GLOBMAP_H

#include <stddef.h>

struct layout;

/* Called with each cluster glob (not NUL-terminated). */
typedef void globmap_emit_fn(void *arg, const char *glob, size_t len);

/*
 * Emit the cluster globs of pattern[0..len) under l. A name (no '*', '?',
 * '[') gives its cluster name when a rule rewrites it; literal text then
 * one '*' gives globs for each rule whose names may start with that text. The
 * count emitted, or -1 when the pattern could match names a rule rewrites
 * but has another shape (a '?', a set, a '*' before its end): none are
 * emitted, and on the nodes it matches only names left as they are.
 * A glob longer than GLOBMAP_MAX is left out (counted in neither).
 */
#define GLOBMAP_MAX 1024
int globmap_cluster(const struct layout *l, const char *pattern, size_t len,
                    globmap_emit_fn *emit, void *arg);

#endif
