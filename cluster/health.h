/*
 * health: does each master of the slot map answer? The proxy's readiness
 * (/readyz) and INFO's node states are judged from here.
 *
 * One probe per master, with its own connection (node.h) on the owner's
 * loop, separate from the workers' request connections: every interval a
 * PING is sent when none is outstanding, and a connection that failed is
 * opened again. A master is up from a +PONG until a probe fails:
 *
 *   the connection cannot be made or is closed          -> down
 *   a PING gets no answer within the node timeout       -> down (node.h
 *     closes the connection; a stopped process still accepts connections,
 *     so only an unanswered PING shows it)
 *   a PING is answered with an error (LOADING, NOAUTH)  -> down
 *
 * The wait for a PONG follows health_set_opts (a reload's node-timeout-ms):
 * each tick also gives up on a PING older than the current timeout.
 *
 * A master starts down ("no answer yet") until its first PONG. Masters that
 * stay in a new topology (same announced and connected address) keep their
 * probe and state. on_change is called whenever a master's state changes.
 * Single-threaded: everything runs on the owner's loop.
 */
#ifndef TAGPROXY_HEALTH_H
#define TAGPROXY_HEALTH_H

#include "cluster/node.h"
#include "cluster/topology.h"

struct event;
struct health;

struct health_probe {
    struct health *h;
    char addr[TOPO_ADDR_MAX];       /* announced */
    char target[TOPO_ADDR_MAX];     /* connected to */
    int node;                       /* index in h->topo */
    struct node_conn *conn;
    struct node_req req;            /* the outstanding PING */
    int pinging;
    uint64_t ping_sent_ms;          /* node_now_ms() when it went out */
    int up;
    char why[200];                  /* when down: why */
};

struct health {
    struct io_loop *loop;
    struct node_opts opts;
    struct topology *topo;          /* a reference; NULL until the first */
    struct health_probe **probes;   /* one per topo node */
    int nprobes;
    struct event *timer;
    void (*on_change)(struct health *h, void *arg);
    void *arg;
};

/* Ready to take a topology; probes every interval_ms. 0 or -1. */
int health_init(struct health *h, struct io_loop *loop, const struct node_opts *opts,
                int interval_ms, void (*on_change)(struct health *h, void *arg), void *arg);

/* Probe t's masters from now on (a reference is taken); the first PINGs go
 * out at once. */
void health_set_topology(struct health *h, struct topology *t);

/* Timeouts and login for new connections and PINGs from now on; the
 * strings must stay valid until the next call or health_free. */
void health_set_opts(struct health *h, const struct node_opts *opts);

/* Close every probe and free what h holds. */
void health_free(struct health *h);

#endif
