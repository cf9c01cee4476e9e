/*
 * errors: the error replies the proxy writes in several places, in Redis's
 * own words, so that each is written once.
 */
#ifndef TAGPROXY_ERRORS_H
#define TAGPROXY_ERRORS_H

#include <stddef.h>

#define REPLY_ERR_OOM       "ERR out of memory"
#define REPLY_ERR_CROSSSLOT "CROSSSLOT Keys in request don't hash to the same slot"

/* A fan-out's parts could not be combined into one reply. */
#define REPLY_ERR_CANNOT_MERGE "ERR a cluster node sent a reply the proxy could not merge"
#define REPLY_ERR_NO_REPLY     "ERR a cluster node sent no reply"
#define REPLY_ERR_NO_MASTER    "CLUSTERDOWN the proxy knows no master to ask"

/* Redis's arity error for the command named fullname ("get",
 * "client|setname") into out: out. */
const char *reply_arity(char *out, size_t cap, const char *fullname);

#endif
