/*
 * txstate: a client's state in the tx family. See txstate.h.
 */
#include "proxy/families/txstate.h"

#include <event2/buffer.h>
#include <stdlib.h>

#include "lib/base/hash.h"
#include "cluster/node.h"
#include "proxy/core/client.h"
#include "proxy/core/request.h"
#include "proxy/core/worker.h"
#include "proxy/families/dedicated.h"
#include "proxy/families/txexec.h"

static int family_id = -1;      /* the tx family's, among the client families */

void txstate_family(int id)
{
    family_id = id;
}

struct tx_state *txstate_of(const struct client *c)
{
    return client_family_state(c, family_id);
}

struct tx_state *txstate_get(struct client *c)
{
    struct tx_state *have = txstate_of(c);
    if (have)
        return have;
    struct tx_state *tx = calloc(1, sizeof *tx);
    if (!tx)
        return NULL;
    tx->queued = evbuffer_new();
    if (!tx->queued) {
        free(tx);
        return NULL;
    }
    tx->slot = -1;
    tx->watch_slot = -1;
    lanes_init(&tx->lanes, c);
    client_family_set(c, family_id, tx);
    return tx;
}

void txstate_free(struct client *c)
{
    struct tx_state *tx = txstate_of(c);
    if (!tx)
        return;
    client_family_set(c, family_id, NULL);
    lanes_free(&tx->lanes);
    evbuffer_free(tx->queued);
    if (tx->upkeep)
        evbuffer_free(tx->upkeep);
    if (tx->unwrapped.bytes)
        evbuffer_free(tx->unwrapped.bytes);
    if (tx->unwrapped.keys)
        evbuffer_free(tx->unwrapped.keys);
    free(tx->unwrapped.at);
    txexec_locals_free(tx->locals, tx->nlocal);
    free(tx->fix);
    free(tx->watched.hash);
    free(tx);
}

void txstate_watch_end(struct tx_state *tx)
{
    tx->watching = 0;
    tx->watched.n = 0;
}
void txstate_drop_dconn(struct tx_state *tx)
{
    if (!tx->dconn)
        return;
    if (tx->watching) {
        const char *argv[] = { "UNWATCH" };
        node_send_quiet(tx->dconn->conn, 1, argv);
    }
    txstate_watch_end(tx);
    dedicated_release(tx->dconn);
}
struct node_conn *txstate_conn_for(struct request *r, int node, const char **why)
{
    struct client *c = r->client;
    struct tx_state *tx = c ? txstate_of(c) : NULL;
    *why = NULL;
    if (!tx || c->state == CLIENT_GONE) {
        *why = "ERR the client has gone";
        return NULL;
    }
    if (tx->dconn && dedicated_serves(tx->dconn, node)) {
        dedicated_speak(tx->dconn, request_resp(r));
        return tx->dconn->conn;
    }
    if (r->conn_kind == TX_CONN_PREFER_PINNED)
        return worker_conn(r->worker, node, request_resp(r));
    if (r->conn_kind == TX_CONN_PINNED_EXEC) {
        *why = "ERR the WATCHed connection was lost";
        return NULL;
    }
    /* a watch on another node is lost by moving (the slot moved) */
    txstate_drop_dconn(tx);
    struct dedicated *d = dedicated_acquire(r->worker, node, c, &tx->dconn, why);
    if (d)
        dedicated_speak(d, request_resp(r));
    return d ? d->conn : NULL;
}
const void *txstate_dconn_lane(const struct tx_state *tx)
{
    return tx->dconn ? (const void *)tx->dconn->conn : LANE_NEW;
}
static int hash_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}
void txstate_watch_note(struct tx_state *tx, struct request *r)
{
    struct tx_watched *w = &tx->watched;
    int some[16], *keys, n = request_keys_all(r, some, &keys);
    if (w->n + n > w->cap) {
        int cap = (w->n + n) * 2;
        uint64_t *more = realloc(w->hash, sizeof *more * (size_t)cap);
        if (more) {
            w->hash = more;
            w->cap = cap;
        }
    }
    for (int i = 0; i < n && w->n < w->cap; i++) {
        size_t len;
        const char *k = request_arg(r, keys[i], &len);
        w->hash[w->n++] = hash_fnv64(k, len);
    }
    if (keys != some)
        free(keys);
    qsort(w->hash, (size_t)w->n, sizeof *w->hash, hash_cmp);
    int kept = 0;
    for (int i = 0; i < w->n; i++)
        if (kept == 0 || w->hash[kept - 1] != w->hash[i])
            w->hash[kept++] = w->hash[i];
    w->n = kept;
}
