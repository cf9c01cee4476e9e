/*
 * masters: what the proxy knows of the masters right now, for any thread:
 * each master of the slot map with the state the admin thread's health
 * probes see (cluster/health.h), the slot map's coverage, and so whether
 * the proxy is ready (/readyz, /metrics, INFO).
 *
 *   control thread: a new slot map ──► masters_set_topology()
 *   admin thread: a probe changed  ──► masters_set_probes()
 *   any thread ──► masters_view() / masters_not_ready()
 *
 * Under one lock, taken by scrapes, INFO and those writers: never on the
 * request path.
 *
 * Readiness grace (readiness-grace-ms): once the proxy has been ready, a
 * master that stops answering (or a new one, not yet answering) keeps it
 * ready for that long, so that an ordinary failover does not turn every
 * pod behind a proxy NotReady at once; /readyz says so only past it.
 * Before the first ready, no grace: a start waits for every master; and
 * none while no master answers at all.
 */
#ifndef TAGPROXY_MASTERS_H
#define TAGPROXY_MASTERS_H

#include <stddef.h>
#include <stdint.h>

#include "cluster/topology.h"

struct health;

/* One master as the health probes see it. */
struct master_state {
    char addr[TOPO_ADDR_MAX];       /* announced host:port */
    int slots;                      /* owned in the slot map */
    int replicas;                   /* its replicas CLUSTER SLOTS lists */
    int up;                         /* 1 up, 0 down, -1 not probed (admin off) */
    uint64_t down_since_us;         /* down: since when (monotonic), for the grace */
    char why[200];                  /* when down: why */
};

struct masters_view {
    struct master_state *masters;   /* a copy, to free */
    int nmasters;
    int slots_covered;
    uint64_t topology_version;
    int ready;
    char not_ready[320];            /* when not ready: the one-line reason */
};

/* t's masters; one already known keeps its state, so a refresh of the same
 * map never makes readiness blink. probed: the admin thread probes them (a
 * new one is down until it answers PING), else their state is unknown (-1). */
void masters_set_topology(const struct topology *t, int probed);

/* Control thread: the proxy has no slot map yet, and why (what the seeds
 * said), or (NULL) it has one now. */
void masters_set_waiting(const char *why);

/* The probes' states, after one changed; each change is logged. */
void masters_set_probes(const struct health *h);

/* readiness-grace-ms, from the config in use (at start and each reload). */
void masters_set_grace(int ms);

/* A copy of it all. 0, or -1 out of memory (v->masters NULL). */
int masters_view(struct masters_view *v);

/* The first reason not to be ready (a constant, or written into why), or
 * NULL when ready. */
const char *masters_not_ready(char *why, size_t len);

#endif
