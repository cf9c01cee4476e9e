/*
 * dedicated: a bounded per-worker pool of node connections that serve one
 * client at a time, for what must not share the multiplexed connections
 * (node.h): a WATCH (its watched keys belong to the connection), and a
 * blocking command (BLPOP, XREAD BLOCK, ...: the node answers nothing else
 * on that connection until it unblocks).
 *
 *   client ──acquire──► in use ──release──► idle (reused, at most
 *                          │                 DEDICATED_IDLE_MAX per worker)
 *                          └── close: the client left, the node failed
 *
 * At most dedicated-connections-max are open per worker (idle ones
 * included); when all are in use, acquiring fails with a clear error rather
 * than waiting (a client queued behind blocked ones could wait forever).
 * An idle connection is handed out again only once it has answered
 * everything sent on it, so one client's replies never reach another.
 *
 * A blocked command can wait on a node that no longer answers (a frozen
 * process, a lost host) or no longer is a master: while one waits, its
 * node is asked every node-timeout-ms / 4, on the worker's probe
 * connection, whether it still answers (worker_ask_node). A node that has
 * answered nothing for node-timeout-ms, or that leaves the topology, has
 * its dedicated connections closed: what waited on them gets the "may have
 * run" error, the WATCHes are lost.
 */
#ifndef TAGPROXY_DEDICATED_H
#define TAGPROXY_DEDICATED_H

#include <stdint.h>
#include <sys/queue.h>

#include "lib/proto/resp.h"

struct client;
struct worker;
struct node_conn;

struct dedicated {
    struct node_conn *conn;
    struct worker *worker;
    struct dedicated **owner;       /* the user's pointer to it, cleared on
                                     * failure; NULL while idle */
    struct client *user;            /* whose commands it runs, while in use */
    enum resp_proto proto;          /* what the node answers on it (dedicated_speak) */
    uint64_t unblock_hold_ms;       /* atomic: a CLIENT UNBLOCK for its user may be on
                                     * its way to the node: not handed to another
                                     * client before this (node_now_ms) */
    TAILQ_ENTRY(dedicated) link;    /* in the idle or the busy list */
    TAILQ_ENTRY(dedicated) user_link; /* in its user's list (under the worker's
                                     * clients_lock: CLIENT UNBLOCK reads it) */
};

struct dedicated_pool {
    int open;                       /* idle + in use */
    int nidle;
    TAILQ_HEAD(dedicated_list, dedicated) idle;
    struct dedicated_list busy;     /* in use */
};

#define DEDICATED_IDLE_MAX 16

/* A connection to master `node` of w's topology for *owner (set to it),
 * running user's commands; NULL with *why set when the pool is exhausted or
 * it cannot connect. */
struct dedicated *dedicated_acquire(struct worker *w, int node, struct client *user,
                                    struct dedicated **owner, const char **why);

/* The node answers on d in proto from now on: HELLO goes out first when it
 * spoke the other one (a connection serves clients of either protocol). */
void dedicated_speak(struct dedicated *d, enum resp_proto proto);

/* Is d connected to master `node` of its worker's topology? */
int dedicated_serves(const struct dedicated *d, int node);

/* Done with d: kept idle for reuse, or closed when the pool has enough. */
void dedicated_release(struct dedicated *d);

/* Close d now (what is in flight on it fails). */
void dedicated_close(struct dedicated *d, const char *why);

/*
 * Where c may be blocked, for CLIENT UNBLOCK: the node ("host:port" as
 * announced) and the node's client ID of each dedicated connection c uses,
 * up to max, skipping those whose ID is not known yet. Each is then kept
 * from other clients until hold_until_ms: the unblock reaches the node on
 * another connection, and must not find another client's command blocked
 * there. Call with c's worker's clients_lock held (c may be another
 * worker's client).
 */
struct dedicated_target {
    char addr[128];
    long long node_id;
};
int dedicated_targets(const struct client *c, struct dedicated_target *out, int max,
                      uint64_t hold_until_ms);

/* As each client leaves its worker's list (client.h), its dedicated
 * connections stop naming it. */
void dedicated_register(void);

#endif
