/*
 * merge: one reply from the replies of a parent's parts (request.h).
 * Parts' replies are whole RESP replies in part->reply; the merged reply goes
 * into the parent's reply buffer. An error from any part is the answer.
 */
#ifndef TAGPROXY_MERGE_H
#define TAGPROXY_MERGE_H

#include <stddef.h>

#include "proxy/core/route.h"

struct evbuffer;
struct request;

void merge_replies(struct request *parent);

/* A family's merge, for a kind the core does not merge itself (MERGE_INDEX:
 * index.h; MERGE_KEYSPACE: local.h), and what runs after every merge that
 * did not fail (listing.h maps key names back). Before any worker starts. */
typedef void merge_fn(struct request *parent, struct evbuffer *out);
void merge_register(enum merge_kind kind, merge_fn *fn);
void merge_register_after(merge_fn *fn);

/* A part's reply, whole in one piece ("" when it has none), its length
 * in *len. */
const char *merge_part_bytes(struct request *part, size_t *len);

/* n whole replies one after another at the start of buf[0..len): 0, or -1
 * when there are fewer; with elems, elems[i] and lens[i] say where each is. */
int merge_elements(const char *buf, size_t len, long n, const char **elems, size_t *lens);

/* The elements of the array reply buf[0..len) ('*' only, at most max of
 * them; max -1: any number): their count, or -1 when buf is no such whole
 * reply. With elems, elems[i] and lens[i] say where each is in buf. */
long merge_array_elements(const char *buf, size_t len, const char **elems, size_t *lens,
                          long max);

#endif
