/*
 * errors: the error replies written in several places. See errors.h.
 */
#include "lib/proto/errors.h"

#include <stdio.h>

const char *reply_arity(char *out, size_t cap, const char *fullname)
{
    snprintf(out, cap, "ERR wrong number of arguments for '%s' command", fullname);
    return out;
}
