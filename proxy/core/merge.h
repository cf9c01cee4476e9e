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

typedef void merge_fn(struct request *parent, struct evbuffer *out);

/*
 * How a parent combines its parts' replies into the one it answers: run
 * writes it into out. Unless sees_errors, the first part whose reply is an
 * error (or missing) is the answer, and run is not called. The merges
 * below serve commands of every family; a family defines its own beside
 * its commands (SCRIPT EXISTS's in scriptcmd.c, PUBSUB NUMSUB's in
 * pubsub.c, the index listings' in index.c, ...).
 */
struct merge {
    merge_fn *run;
    unsigned sees_errors : 1;
};

extern const struct merge merge_mget;   /* array elements back in the client's key order */
extern const struct merge merge_sum;    /* integers added (DEL, EXISTS, DBSIZE, ...) */
extern const struct merge merge_all_ok; /* every part must succeed; the first reply */
extern const struct merge merge_concat; /* arrays concatenated (KEYS) */
extern const struct merge merge_random; /* one non-null reply at random (RANDOMKEY) */
extern const struct merge merge_found;  /* the first part's bulk, else the first part's
                                           reply (SCRIPT SHOW: the master that holds it) */
extern const struct merge merge_failed; /* a part could not be made: out of memory */

void merge_replies(struct request *parent);

/* The first part of p whose reply is an error (or is missing), or NULL. */
struct request *merge_first_error(struct request *p);

/* part's reply into out, taken out of the part; a part with none answers
 * that a node sent no reply. */
void merge_add_part_reply(struct evbuffer *out, struct request *part);

/* A part's reply, whole in one piece ("" when it has none), its length
 * in *len. */
const char *merge_part_bytes(struct request *part, size_t *len);

#endif
