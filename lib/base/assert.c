/*
 * assert: a broken invariant, logged. See assert.h.
 */
#include "lib/base/assert.h"

#include <stdlib.h>

#include "lib/base/log.h"

void assert_broken(const char *cond, const char *file, int line)
{
    log_write(LOG_WARNING, "assert", "%s:%d: %s does not hold", file, line, cond);
    abort();
}
