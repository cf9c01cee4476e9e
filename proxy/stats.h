/*
 * stats: the proxy's counters, kept per worker without a lock.
 *
 * Every counter has one writer: the thread that owns it (a worker for its
 * worker_stats and the node connections it opens; the control thread for
 * the topology counters; the admin thread for its health probes). The
 * writer adds with stat_add(), a relaxed load and store (a plain add on
 * x86-64, no lock prefix, no fence); any other thread reads with stat_get()
 * and sums the workers' values when asked (/metrics, INFO). A reader may
 * see one worker's counters a few increments apart from each other, never
 * a torn value.
 *
 *   worker 0 stats ─┐
 *   worker 1 stats ─┼─ stats_sum() ─► metrics (Prometheus text, INFO sections)
 *   worker N stats ─┘
 *
 * Commands are counted per command-table index (command_index(), both
 * top-level commands and subcommands): calls, error replies and a latency
 * histogram with fixed bucket bounds (STATS_LATENCY_BOUNDS_US), measured
 * from the read that brought the command to the moment its reply went into
 * the client's output (io_loop_now_us(): one clock read per read event).
 *
 * Counters another helper's code increments (index_syncs, listing_fanouts)
 * are ordinary worker_stats fields: stat_inc(&w->stats.index_syncs).
 */
#ifndef TAGPROXY_STATS_H
#define TAGPROXY_STATS_H

#include <stdint.h>

struct command;

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

/* Upper bounds (inclusive, microseconds) of the latency buckets; the last
 * bucket, past the last bound, is +Inf. */
#define STATS_LATENCY_BOUNDS_US \
    { 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, \
      500000, 1000000, 2500000, 5000000, 10000000 }
#define STATS_LATENCY_NBOUNDS 17
#define STATS_LATENCY_BUCKETS (STATS_LATENCY_NBOUNDS + 1)

extern const uint64_t stats_latency_bounds_us[STATS_LATENCY_NBOUNDS];

struct stats_command {
    uint64_t calls;                 /* replies written (or owed to a gone client) */
    uint64_t errors;                /* of them, error replies */
    uint64_t usec;                  /* sum of latencies */
    uint64_t buckets[STATS_LATENCY_BUCKETS];   /* not cumulative */
};

/* Bytes through a set of sockets. */
struct stats_bytes {
    uint64_t in, out;
};

/* Node connections of one owner (a worker, or the health probes). */
struct stats_nodes {
    uint64_t connects;              /* connections started */
    uint64_t connect_failures;      /* closed before they were up */
    uint64_t closed;                /* closed after they were up */
    uint64_t timeouts;              /* closed because the node did not answer */
    uint64_t batches;               /* batches written on batching connections (node.h) */
    int64_t  connecting;            /* now */
    int64_t  ready;                 /* now */
    struct stats_bytes bytes;
};

struct worker_stats {
    uint64_t connections;           /* clients accepted */
    uint64_t rejected_clients;      /* refused: max-clients */
    uint64_t evicted_clients;       /* closed: maxmemory-clients (clientmem.h) */
    uint64_t commands;              /* parsed */
    uint64_t unknown_commands;      /* answered "unknown command" */
    uint64_t protocol_errors;       /* clients closed for bad input */
    uint64_t moved, ask;            /* redirects followed or seen */
    uint64_t script_redirects_unconfirmed; /* a script's redirect-like error the
                                       cluster's state did not confirm */
    uint64_t retries, retries_exhausted;
    uint64_t lost_replies;          /* "the command may have run" */
    uint64_t index_syncs;           /* index-sync scripts run (keylayout) */
    uint64_t listing_fanouts;       /* listings answered from the indexes */
    uint64_t round_pauses;          /* event-loop rounds followed by a pause (io.h) */
    uint64_t io_uring;              /* 1 while the worker batches socket calls (io.h) */
    uint64_t io_batches;            /* system calls that carried a batch */
    uint64_t io_batched_ops;        /* reads and sends they carried */
    struct stats_bytes clients;     /* bytes from and to clients */
    struct stats_nodes nodes;
    struct stats_command *cmds;     /* command_index_count() entries */
};

/* Allocate s->cmds (zeroed). 0, or -1 out of memory. */
int stats_init(struct worker_stats *s);
void stats_free(struct worker_stats *s);

/* Monotonic microseconds (CLOCK_MONOTONIC: a vDSO call, no system call). */
uint64_t stats_now_us(void);

/* Index of the latency bucket of usec. */
int stats_latency_bucket(uint64_t usec);

/* A command's reply went out: by the worker that owns s. */
void stats_command_done(struct worker_stats *s, const struct command *cmd, uint64_t usec,
                        int error);

/* Add every counter of each of n stats into sum (whose cmds, if not NULL,
 * has command_index_count() entries); read with stat_get. */
void stats_sum(struct worker_stats *sum, const struct worker_stats *const *each, int n);

/* Add b's node counters into a. */
void stats_nodes_add(struct stats_nodes *a, const struct stats_nodes *b);

#endif
