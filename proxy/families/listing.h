/*
 * listing: KEYS, SCAN and RANDOMKEY, the commands whose replies are key
 * names, over every master of the cluster.
 *
 *   KEYS pattern         every master, replies concatenated (merge_keys)
 *   SCAN cursor [...]    one master per call (merge_scan)
 *   RANDOMKEY            every master, one non-null reply (merge_randomkey)
 *
 * Without a key layout the masters' replies pass as they are. With one
 * (worker_layout()), the client's pattern is about legacy names, which the
 * cluster does not hold, so:
 *   - the masters are asked with a pattern wide enough for every cluster
 *     name the legacy pattern can stand for (listing_node_pattern: `P:*`
 *     for a pattern that starts with a configured prefix `P:`, the literal
 *     head followed by `*` when that head could still be a prefix's start,
 *     the pattern itself when it cannot match any prefix's names);
 *   - every returned name is mapped back to its legacy name
 *     (rewrite_key_to_legacy), the layout's own keys (indexes, markers:
 *     rewrite_is_internal) and legacy-layout names left in the cluster,
 *     which no client can name (rewrite_is_shadowed), are left out, and
 *     the client's pattern is applied to the legacy name (glob_match), so
 *     a listing holds what a single redis-server holding the legacy names
 *     would list.
 * A SCAN call may then return fewer keys than COUNT, or none, with a
 * cursor that is not 0: SCAN's contract allows it.
 *
 * An index-backed listing (a pattern that can only match one indexed
 * family, answered from that family's bucket indexes) plugs in at one
 * place: listing_from_index() in listing.c, asked first by listing_keys()
 * and listing_scan().
 */
#ifndef TAGPROXY_LISTING_H
#define TAGPROXY_LISTING_H

#include <stddef.h>

struct evbuffer;
struct layout;
struct request;

/* KEYS pattern (r local, arity checked). */
void listing_keys(struct request *r);

/* SCAN cursor [MATCH pattern] [COUNT n] [TYPE t] (r local, arity checked). */
void listing_scan(struct request *r);

/*
 * The pattern to send to the masters for a client's legacy pattern
 * pat[0..len): pat itself, or a wider one written into buf (cap bytes;
 * len + 2 * the longest prefix + 4 suffice; NULL when too small).
 * *outlen gets its length.
 */
const char *listing_node_pattern(const struct layout *l, const char *pat, size_t len,
                                 char *buf, size_t cap, size_t *outlen);

/* Register SCAN, KEYS and RANDOMKEY with their handlers (route.h: they ask
 * the masters). Their merges map the names back with a key layout: the
 * layout's own keys left out and the client's pattern applied. */
void listing_register(void);

#endif
