/*
 * counter: the clock counters are stamped with. See counter.h.
 */
#include "lib/base/counter.h"

#include <time.h>

uint64_t stats_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}
