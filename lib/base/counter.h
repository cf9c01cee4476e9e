/*
 * counter: counters and gauges with one writer and any number of readers,
 * without a lock.
 *
 * Every counter has one writer: the thread that owns it. The writer adds
 * with stat_add(), a relaxed load and store (a plain add on x86-64, no lock
 * prefix, no fence); any other thread reads with stat_get(). A reader may
 * see one owner's counters a few increments apart from each other, never a
 * torn value.
 */
#ifndef TAGPROXY_COUNTER_H
#define TAGPROXY_COUNTER_H

#include <stdint.h>

/* One writer adds; any thread reads. */
static inline void stat_add(uint64_t *c, uint64_t n)
{
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

static inline void stat_set(uint64_t *c, uint64_t v)
{
    __atomic_store_n(c, v, __ATOMIC_RELAXED);
}

static inline void stat_inc(uint64_t *c)
{
    stat_add(c, 1);
}

static inline uint64_t stat_get(const uint64_t *c)
{
    return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* Gauges (connections open now): one writer moves them up and down. */
static inline void gauge_add(int64_t *g, int64_t n)
{
    __atomic_store_n(g, __atomic_load_n(g, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

static inline int64_t gauge_get(const int64_t *g)
{
    return __atomic_load_n(g, __ATOMIC_RELAXED);
}

/* Bytes through a set of sockets. */
struct stats_bytes {
    uint64_t in, out;
};

/* Monotonic microseconds (CLOCK_MONOTONIC: a vDSO call, no system call). */
uint64_t stats_now_us(void);

#endif
