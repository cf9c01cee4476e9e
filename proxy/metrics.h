/*
 * metrics: every figure the proxy reports, gathered in one snapshot and
 * written two ways: Prometheus text for /metrics (admin.h) and Redis INFO
 * sections (# Proxy, # Nodes, # Commandstats) for INFO (local.h).
 *
 *   workers' stats (stats.h) ──┐
 *   control thread counters  ──┼─ metrics_collect() ─► metrics_prometheus()
 *   admin: masters, readiness ─┘                    └► metrics_info_*()
 *
 * Collecting reads other threads' counters with relaxed loads and takes the
 * admin's snapshot lock once: it is for scrapes and INFO, never for the
 * request path. The metric names are listed in the README.
 */
#ifndef TAGPROXY_METRICS_H
#define TAGPROXY_METRICS_H

#include <stdint.h>

#include "cluster/topology.h"
#include "proxy/stats.h"

struct proxy;
struct evbuffer;

/* One master as the admin thread's health probes see it. */
struct metrics_master {
    char addr[TOPO_ADDR_MAX];       /* announced host:port */
    int slots;                      /* owned in the slot map */
    int up;                         /* 1 up, 0 down, -1 not probed (admin off) */
    char why[200];                  /* when down: why */
};

struct metrics {
    struct worker_stats sum;        /* every worker's, added */
    int64_t clients;                /* connected now */
    uint64_t client_memory;         /* bytes held for them (clientmem.h) */
    long long maxmemory_clients;
    int max_clients, threads;
    uint64_t uptime_s;
    uint64_t refreshes, refresh_failures;
    uint64_t topology_version;
    int slots_covered;
    int nmasters;
    struct metrics_master *masters;
    int ready, draining;
    char not_ready[320];            /* when not ready: the one-line reason */
};

/* Fill m from p (the workers, the control thread, the admin's snapshot).
 * 0, or -1 out of memory. Release with metrics_free. */
int metrics_collect(struct metrics *m, struct proxy *p);
void metrics_free(struct metrics *m);

/* /metrics: the Prometheus text exposition format (version 0.0.4). */
void metrics_prometheus(const struct metrics *m, struct evbuffer *out);

/* INFO sections, "name:value" lines ending in CRLF, a blank line after. */
void metrics_info_proxy(const struct metrics *m, struct evbuffer *out);
void metrics_info_nodes(const struct metrics *m, struct evbuffer *out);
void metrics_info_commandstats(const struct metrics *m, struct evbuffer *out);

#endif
