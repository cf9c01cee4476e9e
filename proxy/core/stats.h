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

#include "lib/base/counter.h"
#include "cluster/node.h"

struct command;

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

/* Error replies by their code (the first word: "ERR", "WRONGTYPE"), as
 * Redis's errorstats: at most STATS_ERRORS_MAX codes, as Redis keeps (the
 * others are counted in total alone). The owner fills an entry's code,
 * then publishes it by storing n (release); readers load n (acquire). */
#define STATS_ERRORS_MAX 128
#define STATS_ERROR_CODE_MAX 32

struct stats_errors {
    int n;
    uint64_t total;                 /* every error reply */
    struct stats_error {
        char code[STATS_ERROR_CODE_MAX];
        uint64_t count;
    } e[STATS_ERRORS_MAX];
};

/* Why the proxy told every tracking client to flush its cache (tracking.h),
 * as the metrics name them (stats_tracking_flush_causes). */
enum stats_tracking_flush {
    TRACKING_FLUSH_CONNECTION,      /* a node connection that tracked reads closed */
    TRACKING_FLUSH_TOPOLOGY,        /* slots moved to other masters */
    TRACKING_FLUSH_LAYOUT,          /* the key layout changed */
    TRACKING_FLUSH_DRAIN,           /* the proxy is draining */
    TRACKING_FLUSH_NODE,            /* a master flushed (FLUSHALL, FLUSHDB) */
    TRACKING_FLUSH_REFUSED,         /* a master refused to track */
    TRACKING_FLUSH_MODE,            /* a connection left BCAST mode (tracking.h) */
    TRACKING_FLUSH_CAUSES
};

extern const char *const stats_tracking_flush_causes[TRACKING_FLUSH_CAUSES];

struct worker_stats {
    uint64_t connections;           /* clients accepted */
    uint64_t rejected_clients;      /* refused: max-clients */
    uint64_t evicted_clients;       /* closed: maxmemory-clients (client.h) */
    uint64_t commands;              /* parsed */
    uint64_t unknown_commands;      /* answered "unknown command" */
    uint64_t learned_refused;       /* commands the cluster knows, refused (learned.h) */
    uint64_t protocol_errors;       /* clients closed for bad input */
    uint64_t output_limit_closes[2];  /* clients closed over client-output-buffer-limit:
                                       [0] normal, [1] pubsub class */
    uint64_t query_limit_closes;    /* clients closed over client-query-buffer-limit */
    uint64_t auth_failures;         /* AUTH and HELLO AUTH answered WRONGPASS */
    uint64_t acl_denied_cmd, acl_denied_key, acl_denied_channel;   /* commands a user's
                                       rules refused, by what they refused */
    uint64_t dedicated_pool_full;   /* commands refused: dedicated-connections-max */
    uint64_t moved, ask;            /* redirects followed or seen */
    uint64_t script_redirects_unconfirmed; /* a script's redirect-like error the
                                       cluster's state did not confirm */
    uint64_t retries, retries_exhausted;
    uint64_t lost_replies;          /* "the command may have run" */
    uint64_t replica_acks_waits;    /* WAITs sent for replica-acks (acks.h) */
    uint64_t replica_acks_short;    /* writes answered "may be lost": too few replicas */
    uint64_t reads_master;          /* reads (readonly commands, not in MULTI) sent
                                       to masters, */
    uint64_t reads_replica;         /* to replicas (read-from: readfrom.h), */
    uint64_t reads_replica_back;    /* and sent back to a master by a replica's
                                       redirect or failure */
    uint64_t index_syncs;           /* index-sync scripts run (keylayout) */
    uint64_t listing_fanouts;       /* listings answered from the indexes */
    uint64_t tracking_invalidations; /* keys' invalidations sent to tracking clients */
    uint64_t tracking_flushes[TRACKING_FLUSH_CAUSES];  /* flush-alls, by cause */
    uint64_t round_pauses;          /* event-loop rounds followed by a pause (io.h;
                                       none when after_flush used it up) */
    uint64_t io_uring;              /* 1 while the worker batches socket calls (io.h) */
    uint64_t io_batches;            /* system calls that carried a batch */
    uint64_t io_batched_ops;        /* reads and sends they carried */
    int64_t requests_held;          /* requests allocated (in use or pooled), */
    int64_t requests_pooled;        /* of them, pooled for reuse (request.c) */
    int64_t io_buffer_bytes;        /* flat socket buffers allocated, pooled ones
                                       included (io.h) */
    struct stats_bytes clients;     /* bytes from and to clients */
    struct stats_nodes nodes;
    struct stats_command *cmds;     /* command_index_count() entries */
    struct stats_errors *errors;
};

/* Allocate s->cmds and s->errors (zeroed). 0, or -1 out of memory. */
int stats_init(struct worker_stats *s);
void stats_free(struct worker_stats *s);

/* Index of the latency bucket of usec. */
int stats_latency_bucket(uint64_t usec);

/* A command's reply went out: by the worker that owns s. */
void stats_command_done(struct worker_stats *s, const struct command *cmd, uint64_t usec,
                        int error);

/* An error reply went out whose code (its first word) is code[0..len):
 * by the worker that owns s. */
void stats_error_reply(struct worker_stats *s, const char *code, size_t len);

/* Add every counter of each of n stats into sum (whose cmds, if not NULL,
 * has command_index_count() entries); read with stat_get. */
void stats_sum(struct worker_stats *sum, const struct worker_stats *const *each, int n);

/* Add b's node counters into a. */
void stats_nodes_add(struct stats_nodes *a, const struct stats_nodes *b);

#endif
