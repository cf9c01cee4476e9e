/*
 * tx: the family's dispatch (MULTI's queueing, WATCH's pinned connection,
 * blocking commands, WAIT's entry, the order across lanes) and its part in
 * a client's life. See tx.h.
 */
#include "proxy/families/tx.h"

#include <stdio.h>

#include "cluster/learned.h"
#include "cluster/node.h"
#include "proxy/core/client.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "proxy/families/blocking.h"
#include "proxy/families/dedicated.h"
#include "proxy/families/index.h"
#include "proxy/families/lane.h"
#include "proxy/families/multi.h"
#include "proxy/families/txclass.h"
#include "proxy/families/txexec.h"
#include "proxy/families/txstate.h"
#include "proxy/families/wait.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"

/* ---- the order of a client's requests (lane.h) ---- */

/* The first of c's requests that wait their turn to run, or NULL. */
static struct request *first_parked(const struct client *c)
{
    const struct tx_state *tx = txstate_of(c);
    return tx ? lane_first_parked(&tx->lanes) : NULL;
}

/* At the start of router_dispatch: 1 when r was parked behind the client's
 * earlier parked requests. */
static int hold_if_parked(struct request *r)
{
    struct tx_state *tx = txstate_of(r->client);
    return tx && lane_hold_if_parked(&tx->lanes, r);
}

/* The router refused a command of c's (unknown, arity, NOAUTH): inside
 * MULTI the transaction aborts at EXEC. */
static void note_refused(struct client *c)
{
    struct tx_state *tx = txstate_of(c);
    if (tx && tx->in_multi)
        tx->dirty = 1;
}

/* ---- WAIT ---- */

/* WAIT numreplicas timeout, WAITAOF numlocal numreplicas timeout (Redis
 * 7.2's, once the cluster knows it): the timeout last. */
static void cmd_wait(struct tx_state *tx, struct request *r, int aof)
{
    size_t len;
    char msg[120];
    if (tx->in_multi) {
        /* the block runs on a master's connection whose replication offset
         * is not the client's: nothing honest to count */
        tx->dirty = 1;
        snprintf(msg, sizeof msg, "ERR %s inside MULTI is not supported through the proxy",
                 aof ? "WAITAOF" : "WAIT");
        request_fail(r, msg);
        return;
    }
    if (!lane_ready(&tx->lanes, r, LANE_NEW))
        return;
    /* on no lane: what the client sends next waits for WAIT's answer */
    tx->lanes.lane = LANE_NEW;
    const char *t = request_arg(r, r->argc - 1, &len);
    wait_dispatch(r, aof, blocking_millis(t, len), &tx->wait);
}

/* ---- dispatch ---- */

/* A plain command while WATCHing: on the pinned connection when it is about
 * the watched slot (what it reads is what EXEC will be judged on). */
static int send_pinned(struct tx_state *tx, struct request *r)
{
    int slot = router_key_slot(r);
    int node = worker_node_for_slot(r->worker, slot);
    if (slot < 0 || slot != tx->watch_slot || !tx->dconn || !dedicated_serves(tx->dconn, node))
        return 0;
    struct node_conn *conn = tx->dconn->conn;
    if (!lane_ready(&tx->lanes, r, conn))
        return 1;
    int wrapped = index_wrap_write(r, r->cmd, worker_layout(r->worker));
    if (wrapped < 0) {
        request_fail(r, index_wrap_error(wrapped));
        return 1;
    }
    r->slot = slot;
    r->conn_kind = TX_CONN_PREFER_PINNED;
    tx->lanes.lane = conn;
    router_send(r);
    return 1;
}

/* Take r if it is the family's business (1), or let the router plan it
 * (0; r may then go out on the multiplexed connections). */
static int tx_dispatch(struct request *r, enum tx_class cls)
{
    struct client *c = r->client;
    struct tx_state *tx = txstate_get(c);
    if (!tx) {
        request_fail(r, REPLY_ERR_OOM);
        return 1;
    }
    if (tx->in_multi && (learned_entry(r->worker->topo->learned, r->cmd)->flags & CMD_NO_MULTI)) {
        /* as the cluster's server: Valkey 8's WATCH and MULTI, SAVE */
        multi_refuse(tx, r, "ERR Command not allowed inside a transaction");
        return 1;
    }
    if (cls == TXC_TX) {
        route_of(r->cmd)->run(r);      /* run_exec, ... */
        return 1;
    }
    if (cls == TXC_WAIT || cls == TXC_WAITAOF) {
        cmd_wait(tx, r, cls == TXC_WAITAOF);
        return 1;
    }
    if (tx->in_multi && cls != TXC_IMMEDIATE && cls != TXC_RESET) {
        multi_queue(tx, r, cls);
        return 1;
    }
    if (cls == TXC_BLOCKING) {
        blocking_dispatch(tx, r);
        return 1;
    }
    if (tx->watching && cls == TXC_FORWARD && send_pinned(tx, r))
        return 1;
    /* a restricted user's script goes on its node user's connections */
    if (!lane_ready(&tx->lanes, r, r->as_user))
        return 1;
    tx->lanes.lane = r->as_user;
    if (cls == TXC_RESET) {         /* RESET ends MULTI and WATCH, then the router's part */
        multi_reset(tx);
        txstate_drop_dconn(tx);
    }
    return 0;
}

/* ---- the client's life ---- */

/* Replies were written. */
static void tx_flushed(struct client *c)
{
    struct tx_state *tx = txstate_of(c);
    if (!tx || c->state == CLIENT_GONE)
        return;
    /* a blocking command answered: its connection goes back */
    if (!tx->dconn || tx->dconn->conn->ninflight == 0)
        tx->blocking = 0;
    if (tx->dconn && !tx->watching && tx->dconn->conn->ninflight == 0)
        dedicated_release(tx->dconn);
    lane_release_soon(&tx->lanes);
}

/* Its socket closed. */
static void tx_gone(struct client *c)
{
    struct tx_state *tx = txstate_of(c);
    if (!tx)
        return;
    lane_fail_parked(&tx->lanes, "ERR the client has gone");
    multi_reset(tx);
    txstate_watch_end(tx);
    /* what is blocked or watched on it ends now, not when the node answers;
     * a WAIT under way keeps c alive until it ends (its request is queued) */
    int waiting = tx->wait != NULL;
    if (tx->dconn)
        dedicated_close(tx->dconn, "the client has gone");
    if (waiting)
        wait_client_gone(&tx->wait);    /* last: it may free c */
}

/* Its struct is about to be freed. */
static void tx_freed(struct client *c)
{
    txstate_free(c);
}

/* For CLIENT LIST: queued commands inside MULTI. */
static void tx_count(const struct client *c, struct client_counts *n)
{
    const struct tx_state *tx = txstate_of(c);
    if (!tx)
        return;
    if (tx->in_multi)
        n->multi = tx->nqueued + tx->nlocal;
    n->watching = tx->watching;
    n->watched_keys = tx->watching ? tx->watched.n : 0;
    n->blocked = tx->blocking || tx->wait != NULL;     /* WAIT blocks too */
}

/* Bytes c's transaction state holds: its MULTI block (queued commands)
 * and the hashes that count its WATCHed keys. */
static size_t tx_held(const struct client *c)
{
    const struct tx_state *tx = txstate_of(c);
    return tx ? multi_held(tx) : 0;
}

/* ---- routes ---- */

static void tx_route(struct request *r)
{
    tx_dispatch(r, txclass_of(route_of(r->cmd), r->cmd));
}

static void blocking_read_route(struct request *r)
{
    tx_dispatch(r, TXC_BLOCKING);
}

/* A client with the family's state: its request r, whose route is rt, is
 * the family's when it is queued in MULTI, pinned by WATCH, ... (client.h).
 * A client's first restricted script or first command in RESP3 gives it
 * that state: the shared connections and its node user's (userconn.h), and
 * those of RESP2 and RESP3, are lanes that must not overtake each other. */
static int take(struct request *r, const struct route *rt)
{
    return (txstate_of(r->client) || r->as_user || request_resp(r) == RESP3) &&
           tx_dispatch(r, txclass_of(rt, r->cmd));
}

#define TX(name, cls) { name, { .plan = ROUTE_FAMILY, .run = tx_route, .in_multi = cls } }

static const struct route_entry tx_routes[] = {
    TX("blpop", TXC_BLOCKING), TX("brpop", TXC_BLOCKING), TX("blmove", TXC_BLOCKING),
    TX("brpoplpush", TXC_BLOCKING), TX("blmpop", TXC_BLOCKING), TX("bzpopmin", TXC_BLOCKING),
    TX("bzpopmax", TXC_BLOCKING), TX("bzmpop", TXC_BLOCKING),
    TX("wait", TXC_WAIT), TX("waitaof", TXC_WAITAOF),  /* WAITAOF: when learned */
};

static const struct client_family tx_family = {
    .hold = hold_if_parked,
    .take = take,
    .refused = note_refused,
    .closed = tx_gone,
    .flushed = tx_flushed,
    .freed = tx_freed,
    .held = tx_held,
    .count = tx_count,
    .first_parked = first_parked,
};

void tx_register(void)
{
    route_register(tx_routes, (int)(sizeof tx_routes / sizeof tx_routes[0]));
    multi_register();
    txstate_family(client_family_register(&tx_family));
    router_register_conns(txstate_conn_for, blocking_wait_ms);
    static const struct route blocking_read = { .plan = ROUTE_FAMILY, .run = blocking_read_route,
                                                .in_multi = TXC_BLOCKING };
    route_register_blocking_read(&blocking_read);
}
