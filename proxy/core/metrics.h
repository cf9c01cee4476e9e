/*
 * metrics: every figure the proxy reports, gathered in one snapshot and
 * written two ways: Prometheus text for /metrics (admin.h) and Redis INFO
 * sections (# Proxy, # Nodes, # Commandstats) for INFO (local.h).
 *
 *   workers' stats (stats.h) ──┐
 *   control thread counters  ──┼─ metrics_collect() ─► metrics_prometheus()
 *   masters, readiness       ─┘                    └► metrics_info_*()
 *
 * Collecting reads other threads' counters with relaxed loads and takes the
 * masters' lock once (masters.h): it is for scrapes and INFO, never for the
 * request path. The process_* figures are read from /proc by
 * metrics_prometheus() alone (the admin thread), not by INFO. The metric names are listed in docs/operations.md.
 */
#ifndef TAGPROXY_METRICS_H
#define TAGPROXY_METRICS_H

#include <stdint.h>

#include "cluster/topology.h"
#include "proxy/core/masters.h"
#include "proxy/core/stats.h"

struct proxy;
struct evbuffer;

struct metrics {
    struct worker_stats sum;        /* every worker's, added */
    int64_t clients;                /* connected now */
    uint64_t client_memory;         /* bytes held for them (client.h) */
    long long maxmemory_clients;
    int max_clients, threads;
    uint64_t uptime_s;
    long long started;              /* unix seconds */
    uint64_t refreshes, refresh_failures;
    uint64_t reloads[2];            /* applied, refused */
    struct masters_view nodes;      /* the masters, coverage, readiness (masters.h) */
    int draining;
};

/* Every worker's counters of p, added into sum (stats_init'd here: release
 * with stats_free). 0, or -1 out of memory. */
int metrics_sum_workers(struct worker_stats *sum, struct proxy *p);

/* Fill m from p (the workers, the control thread) and the masters' state.
 * 0, or -1 out of memory. Release with metrics_free. */
int metrics_collect(struct metrics *m, struct proxy *p);
void metrics_free(struct metrics *m);

/* /metrics: the Prometheus text exposition format (version 0.0.4). */
void metrics_prometheus(const struct metrics *m, struct evbuffer *out);

/* The lines of INFO's proxy, nodes and commandstats sections ("name:value"
 * ending in CRLF; the "# Title" line is the caller's). */
void metrics_info_proxy(const struct metrics *m, struct evbuffer *out);
void metrics_info_nodes(const struct metrics *m, struct evbuffer *out);
void metrics_info_commandstats(const struct metrics *m, struct evbuffer *out);

#endif
