/*
 * errors: the error replies the proxy writes in several places, in Redis's
 * own words, so that each is written once.
 */
#ifndef TAGPROXY_ERRORS_H
#define TAGPROXY_ERRORS_H

#include <stddef.h>

#define REPLY_ERR_OOM       "ERR out of memory"
#define REPLY_ERR_CROSSSLOT "CROSSSLOT Keys in request don't hash to the same slot"

/* Redis's arity error for the command named fullname ("get",
 * "client|setname") into out: out. */
const char *reply_arity(char *out, size_t cap, const char *fullname);

#endif
