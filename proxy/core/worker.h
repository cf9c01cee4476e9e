/*
 * worker: one thread with its own event loop, listener (SO_REUSEPORT), clients,
 * node connections and request pool. Nothing on the request path is shared
 * with another thread, so nothing on it takes a lock. This is its state and
 * what other modules ask of it; its thread (loop, mailbox, listeners) is
 * thread.h.
 *
 * The control thread (process.h) hands a worker a new topology, config
 * snapshot or key layout through its mailbox, the one place a lock is
 * taken; the worker takes it on its own loop and drops its reference to the
 * old one. A worker's slot map starts as the topology's and is patched by
 * MOVED until the next topology arrives. Its config is w->cfg, the
 * snapshot's (snapshot.h). The key layout (keylayout/layout.h): each request reads
 * worker_layout() once, so a new one takes effect from the next request.
 *
 * Drain (SIGTERM): the mailbox says so; the worker closes its listener and
 * then each client as soon as it is idle: nothing owed, nothing written,
 * nothing unread in the proxy or in the kernel (client_drain_check).
 */
#ifndef TAGPROXY_WORKER_H
#define TAGPROXY_WORKER_H

#include <pthread.h>
#include <stdint.h>
#include <sys/queue.h>

#include "cluster/node.h"
#include "cluster/slot.h"
#include "cluster/topology.h"
#include "proxy/config/config.h"
#include "proxy/core/stats.h"
#include "keylayout/layout.h"
#include "keylayout/layoutload.h"
#include "lib/net/io.h"
#include "lib/proto/resp.h"

struct client;
struct request;
struct proxy;
struct worker;
struct config_snapshot;
struct ack_group;
struct worker_replicas;
struct slot_move;

/*
 * A command family's state on each worker (families.c registers it before
 * any worker is made): made as the worker is, and told on the worker's
 * thread when another thread posted it mail (worker_post_family).
 */
struct worker_family {
    int (*init)(struct worker *w, void **state);    /* 0, or -1 out of memory */
    void (*mail)(struct worker *w, void *state);
};

#define WORKER_FAMILIES_MAX 8

/* Its id, for worker_post_family and worker_family_state. */
int worker_family_register(const struct worker_family *f);

/* Liveness, for any thread: the first of the n workers whose loop has not
 * turned (heartbeat, alive_us) for limit_us at now_us, with why written;
 * -1 when every one has. */
int workers_stalled(const struct worker *w, int n, uint64_t now_us, uint64_t limit_us,
                    char *why, size_t len);

/* The registered families, for the worker's thread (thread.h). */
int worker_family_count(void);
const struct worker_family *worker_family_at(int i);

/* What a worker holds against one master of its topology. */
struct worker_node {
    /* No new connection to it before this (node_now_ms), as its last
     * connect failed: a retry toward a master that is gone waits out its
     * backoff instead of a connect timeout each time. */
    uint64_t connect_after_ms;
    /* When a shared connection to it timed out (node_now_ms), 0 if none
     * has since it last answered: no new shared connection is made until
     * it answers a PING on the probe connection, so a command that never
     * ran is not written to a node that answers nothing, to wait out
     * another node-timeout-ms there. */
    uint64_t silent_ms;
};

enum {
    WORKER_CONN_RESP2, WORKER_CONN_RESP3,   /* shared, by protocol */
    WORKER_CONN_PROBE,                      /* PINGs of a node gone quiet */
    WORKER_CONN_WRITES2, WORKER_CONN_WRITES3,   /* shared, for writes that wait for
                                                   replicas (acks.h) */
    WORKER_CONN_KINDS
};

struct worker {
    int id;
    struct proxy *proxy;
    const struct config *cfg;           /* snap's: read freely on this thread */
    struct config_snapshot *snap;
    pthread_t thread;
    struct event_base *base;            /* without locks: only this thread uses it */
    struct io_loop loop;
    struct evconnlistener *listener;
    struct evconnlistener *tls_listener;   /* tls-listen, NULL without */
    struct evconnlistener *unix_listener;  /* unixsocket, NULL without */

    struct event *heartbeat_event;      /* every second: alive_us */
    uint64_t alive_us;                  /* atomic: when the loop last turned for the
                                         * heartbeat (monotonic), for /healthz */
    struct event *mailbox_event;        /* reads mailbox_pipe[0] */
    int mailbox_pipe[2];
    pthread_mutex_t mailbox_lock;
    struct topology *mailbox_topo;      /* under mailbox_lock */
    struct config_snapshot *mailbox_snap;  /* under mailbox_lock */
    int mailbox_drain;                  /* under mailbox_lock */
    int mailbox_stop;                   /* under mailbox_lock */
    int mailbox_kill;                   /* under mailbox_lock: clients marked kill_pending */
    struct layout_ref *mailbox_layout;  /* under mailbox_lock */
    int mailbox_layout_set;             /* under mailbox_lock: mailbox_layout is news */
    unsigned mailbox_families;          /* under mailbox_lock: bit i, family i has mail */
    int draining;                       /* this thread's copy of the drain */

    struct topology *topo;
    struct layout_ref *layout;          /* NULL: no key rewriting */
    int16_t slot_node[SLOT_COUNT];
    /* Per kind and topo node, NULL until used. RESP2 and RESP3: the shared
     * connections (a RESP3 client's commands go on connections opened
     * with HELLO 3, so the node's replies reach it as they are:
     * worker_conn); PROBE: PINGs asking whether a node that keeps a
     * request silent answers at all (worker_ask_node). */
    struct node_conn **conns[WORKER_CONN_KINDS];
    struct worker_node *nodes;          /* per topo node */
    struct node_opts node_opts;         /* RESP2 connections */
    struct node_opts node_opts3;        /* RESP3 ones: the same but resp3 */

    pthread_mutex_t clients_lock;       /* accept/close and CLIENT LIST only */
    TAILQ_HEAD(, client) clients;
    int nclients;
    TAILQ_HEAD(, client) paused;        /* clients waiting for a congested node */
    void (*node_caught_up)(struct worker *w, struct node_conn *c);  /* c wrote its
                                           backlog or closed: the clients paused on it
                                           read again (thread.c sets it) */
    size_t client_mem;                  /* its clients' memory (client.h: client_mem_update): written by
                                           this thread, read by any (atomic) */

    struct userconns *userconns;        /* restricted users' scripts (userconn.h), NULL
                                           until the first */
    void *family[WORKER_FAMILIES_MAX];  /* each family's state on this worker */

    struct request *free_requests;
    int nfree_requests;
    TAILQ_HEAD(, request) scripts_out;  /* requests whose script is at a node, oldest
                                           first (request_script_sent) */
    uint64_t oldest_script_ms;          /* the first's time, 0 if none: written by this
                                           thread, read by any (atomic) */
    TAILQ_HEAD(, ack_group) acks_open;  /* groups whose WAIT the round sends (acks.h) */
    struct worker_replicas *replicas;   /* its replica connections (replicas.h), NULL
                                           until read-from first needs one */
    struct slot_move *slot_moves;       /* per slot: when it was last seen to move
                                           (readfrom.h), NULL until read-from needs it */
    struct worker_stats stats;          /* written by this thread only (stats.h) */
};

/* From the control thread: publish t or s (a reference is taken for w),
 * start draining, or stop. */
void worker_post_topology(struct worker *w, struct topology *t);
void worker_post_config(struct worker *w, struct config_snapshot *s);
void worker_post_drain(struct worker *w);

/* From any worker: close w's clients marked kill_pending (CLIENT KILL). On
 * w's own thread client_close_killed does it at once. */
void worker_post_kill(struct worker *w);

/* From any thread: family id has mail for w (its mail hook runs on w). */
void worker_post_family(struct worker *w, int id);
void worker_post_stop(struct worker *w);

/* From the control thread: publish ref (NULL: no rewriting from now on; a
 * reference is taken for w). */
void worker_post_layout(struct worker *w, struct layout_ref *ref);

/* Family id's state on w. */
static inline void *worker_family_state(const struct worker *w, int id)
{
    return w->family[id];
}

/* The server the cluster is, as HELLO and INFO name it: its masters'
 * lowest (proxy/ops/servers.h), or the Redis the proxy speaks until one has
 * answered. */
const struct topology_server *worker_server(const struct worker *w);

/* The key layout requests use now, or NULL. */
static inline const struct layout *worker_layout(const struct worker *w)
{
    return w->layout ? w->layout->layout : NULL;
}

/* The connection to master `node` of the current topology that speaks
 * proto, made on demand. */
struct node_conn *worker_conn(struct worker *w, int node, enum resp_proto proto);

/* The same for writes that wait for replicas (acks.h). */
struct node_conn *worker_writes_conn(struct worker *w, int node, enum resp_proto proto);

/* A new connection with opts to master `node` (an index into w's topology),
 * or NULL: one that failed as it was made (TLS, memory) is never handed
 * out, it is freed on the next round. */
struct node_conn *worker_connect(struct worker *w, int node, const struct node_opts *opts);

/* What a connection that speaks proto is opened with. */
static inline const struct node_opts *worker_node_opts(const struct worker *w,
                                                       enum resp_proto proto)
{
    return proto == RESP3 ? &w->node_opts3 : &w->node_opts;
}

/* The master that serves slot (or any master for slot -1): index or -1. */
int worker_node_for_slot(const struct worker *w, int slot);

/* Ask the control thread to read the topology again (rate-limited there). */
void worker_want_refresh(struct worker *w);

/*
 * A family that keeps state tied to the nodes or to the worker's shared
 * connections (dedicated.h, tracking.h) hears what the worker learns, on
 * its thread; any member may be NULL:
 *   silent     a node let a request on a shared or probe connection go
 *              unanswered for node-timeout-ms (the connection is closed:
 *              a frozen node, a lost host);
 *   topology   w has taken a new topology (its masters may have changed);
 *   conn_down  a shared connection of w's closed (before it is forgotten);
 *   layout     w has taken a new key layout;
 *   drain      w starts draining;
 *   round_end  w's event-loop round has written its output: work the
 *              round's writes need not wait for.
 */
struct worker_watch {
    void (*silent)(struct worker *w, const char *addr);
    void (*topology)(struct worker *w);
    void (*conn_down)(struct worker *w, struct node_conn *c);
    void (*layout)(struct worker *w);
    void (*drain)(struct worker *w);
    void (*round_end)(struct worker *w);
};
void worker_register_watch(const struct worker_watch *watch);

/* The loop's after_flush (io.h) for worker arg: the watches' round_end. */
void worker_round_ended(void *arg);

/* w has taken a new topology, key layout, or starts draining (thread.c):
 * the watches hear it. */
void worker_topology_taken(struct worker *w);
void worker_layout_taken(struct worker *w);
void worker_drain_started(struct worker *w);

/* on_silent (cluster/node.h) for connections to the master announced as
 * addr: a PING goes out on w's probe connection to it unless one is
 * unanswered there; returns when the master last answered on it
 * (node_now_ms), 0 never. A PING unanswered for node-timeout-ms closes the
 * probe, and the watch hears `silent`. */
uint64_t worker_ask_node(struct worker *w, const char *addr);

#endif
