/*
 * worker: a worker's state, and the mail other threads post it. See worker.h.
 */
#include "proxy/core/worker.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keylayout/layoutload.h"
#include "lib/base/log.h"
#include "proxy/config/snapshot.h"
#include "proxy/core/proxy.h"
#include "proxy/core/route.h"
#include "proxy/core/route.h"
#include "lib/base/version.h"

static const struct worker_family *families_known[WORKER_FAMILIES_MAX];
static int nfamilies;

int worker_family_register(const struct worker_family *f)
{
    if (nfamilies == WORKER_FAMILIES_MAX)
        registration_full("worker", WORKER_FAMILIES_MAX);
    families_known[nfamilies] = f;
    return nfamilies++;
}

int workers_stalled(const struct worker *w, int n, uint64_t now_us, uint64_t limit_us,
                    char *why, size_t len)
{
    for (int i = 0; i < n; i++) {
        uint64_t alive = __atomic_load_n(&w[i].alive_us, __ATOMIC_RELAXED);
        if (now_us > alive && now_us - alive > limit_us) {
            snprintf(why, len, "worker %d has not turned its event loop for %llu ms", i,
                     (unsigned long long)((now_us - alive) / 1000));
            return i;
        }
    }
    return -1;
}

int worker_family_count(void)
{
    return nfamilies;
}

const struct worker_family *worker_family_at(int i)
{
    return families_known[i];
}

#define WORKER_WATCHES_MAX 4

static const struct worker_watch *watches[WORKER_WATCHES_MAX];
static int nwatches;

void worker_register_watch(const struct worker_watch *watch)
{
    if (nwatches == WORKER_WATCHES_MAX)
        registration_full("worker watch", WORKER_WATCHES_MAX);
    watches[nwatches++] = watch;
}

void worker_topology_taken(struct worker *w)
{
    for (int i = 0; i < nwatches; i++)
        if (watches[i]->topology)
            watches[i]->topology(w);
}

void worker_layout_taken(struct worker *w)
{
    for (int i = 0; i < nwatches; i++)
        if (watches[i]->layout)
            watches[i]->layout(w);
}

void worker_round_ended(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < nwatches; i++)
        if (watches[i]->round_end)
            watches[i]->round_end(w);
}

void worker_drain_started(struct worker *w)
{
    for (int i = 0; i < nwatches; i++)
        if (watches[i]->drain)
            watches[i]->drain(w);
}

static void worker_conn_down(struct node_conn *c, void *arg)
{
    struct worker *w = arg;
    w->node_caught_up(w, c);
    for (int i = 0; i < nwatches; i++) {
        if (c->timed_out && watches[i]->silent)
            watches[i]->silent(w, c->addr);
        if (watches[i]->conn_down)
            watches[i]->conn_down(w, c);
    }
    for (int p = 0; p < WORKER_CONN_KINDS; p++)
        for (int i = 0; i < w->topo->nnodes; i++)
            if (w->conns[p][i] == c) {
                w->conns[p][i] = NULL;
                if (!c->was_up)
                    w->nodes[i].connect_after_ms = node_now_ms() + (uint64_t)c->opts->connect_timeout_ms;
                if (c->timed_out && p != WORKER_CONN_PROBE)
                    w->nodes[i].silent_ms = node_now_ms();
                log_notice("node", "worker %d: connection to master %s closed (%s); topology "
                           "refresh requested", w->id, c->addr, c->down_why ? c->down_why : "?");
                worker_want_refresh(w);
            }
}

static void worker_conn_drained(struct node_conn *c, void *arg)
{
    struct worker *w = arg;
    w->node_caught_up(w, c);
}

static uint64_t worker_conn_silent(struct node_conn *c, void *arg)
{
    return worker_ask_node(arg, c->addr);
}

static uint64_t ask_node(struct worker *w, int node);

/* Has master `node` not answered since a shared connection to it timed
 * out? It is asked again (worker_node.silent_ms). */
static int still_silent(struct worker *w, int node, int kind)
{
    struct worker_node *n = &w->nodes[node];
    if (!n->silent_ms || kind == WORKER_CONN_PROBE)
        return 0;
    if (ask_node(w, node) < n->silent_ms)
        return 1;
    n->silent_ms = 0;
    return 0;
}

struct node_conn *worker_connect(struct worker *w, int node, const struct node_opts *opts)
{
    const struct topology_node *n = &w->topo->nodes[node];
    struct node_conn *c = node_conn_new(&w->loop, n->announced, (const struct sockaddr *)&n->sa,
                                        n->salen, opts);
    if (c && c->state == NODE_CLOSED)
        return NULL;            /* failed as it was made: freed on the next round */
    return c;
}

/* w's connection of this kind to master `node`, made on demand. */
static struct node_conn *conn_of(struct worker *w, int node, int kind)
{
    if (node < 0 || node >= w->topo->nnodes)
        return NULL;
    struct node_conn **slot = &w->conns[kind][node];
    if (node_conn_usable(*slot))
        return *slot;
    if (node_now_ms() < w->nodes[node].connect_after_ms || still_silent(w, node, kind))
        return NULL;
    int resp3 = kind == WORKER_CONN_RESP3 || kind == WORKER_CONN_WRITES3;
    const struct node_opts *opts = worker_node_opts(w, resp3 ? RESP3 : RESP2);
    struct node_conn *c = worker_connect(w, node, opts);
    if (c) {
        c->on_down = worker_conn_down;
        c->on_drained = worker_conn_drained;
        c->down_arg = w;
        if (kind != WORKER_CONN_PROBE) {
            c->on_silent = worker_conn_silent;
            node_conn_batch(c, 1);
        }
    }
    *slot = c;
    return c;
}

struct node_conn *worker_conn(struct worker *w, int node, enum resp_proto proto)
{
    return conn_of(w, node, proto == RESP3 ? WORKER_CONN_RESP3 : WORKER_CONN_RESP2);
}

struct node_conn *worker_writes_conn(struct worker *w, int node, enum resp_proto proto)
{
    return conn_of(w, node, proto == RESP3 ? WORKER_CONN_WRITES3 : WORKER_CONN_WRITES2);
}

uint64_t worker_ask_node(struct worker *w, const char *addr)
{
    return ask_node(w, topology_find(w->topo, addr));
}

static uint64_t ask_node(struct worker *w, int node)
{
    struct node_conn *probe = conn_of(w, node, WORKER_CONN_PROBE);
    if (!probe)
        return 0;
    if (probe->ninflight == 0) {
        const char *argv[1] = { "PING" };
        node_send_quiet(probe, 1, argv);
    }
    return probe->last_read_ms;
}

int worker_node_for_slot(const struct worker *w, int slot)
{
    if (slot < 0)       /* keyless: one master, always the same while the map holds */
        slot = 0;
    int node = w->slot_node[slot];
    if (node < 0 && w->topo->nnodes > 0 && slot == 0)
        node = 0;
    return node;
}

void worker_want_refresh(struct worker *w)
{
    proxy_want_refresh(w->proxy);
}

/* Wake the worker's loop from another thread: its base has no locks, so
 * event_active() from here would not be safe; a byte on a pipe is. */
static void mailbox_ring(struct worker *w)
{
    char one = 1;
    if (write(w->mailbox_pipe[1], &one, 1) < 0) {
        /* full pipe: the worker is woken already */
    }
}

void worker_post_topology(struct worker *w, struct topology *t)
{
    pthread_mutex_lock(&w->mailbox_lock);
    if (w->mailbox_topo)
        topology_unref(w->mailbox_topo);
    w->mailbox_topo = topology_ref(t);
    pthread_mutex_unlock(&w->mailbox_lock);
    mailbox_ring(w);
}

void worker_post_layout(struct worker *w, struct layout_ref *ref)
{
    pthread_mutex_lock(&w->mailbox_lock);
    layout_ref_put(w->mailbox_layout);
    w->mailbox_layout = layout_ref_get(ref);
    w->mailbox_layout_set = 1;
    pthread_mutex_unlock(&w->mailbox_lock);
    mailbox_ring(w);
}

void worker_post_config(struct worker *w, struct config_snapshot *s)
{
    pthread_mutex_lock(&w->mailbox_lock);
    snapshot_unref(w->mailbox_snap);    /* never taken: superseded */
    w->mailbox_snap = snapshot_ref(s);
    pthread_mutex_unlock(&w->mailbox_lock);
    mailbox_ring(w);
}

void worker_post_drain(struct worker *w)
{
    pthread_mutex_lock(&w->mailbox_lock);
    w->mailbox_drain = 1;
    pthread_mutex_unlock(&w->mailbox_lock);
    mailbox_ring(w);
}

void worker_post_kill(struct worker *w)
{
    pthread_mutex_lock(&w->mailbox_lock);
    w->mailbox_kill = 1;
    pthread_mutex_unlock(&w->mailbox_lock);
    mailbox_ring(w);
}

void worker_post_family(struct worker *w, int id)
{
    pthread_mutex_lock(&w->mailbox_lock);
    w->mailbox_families |= 1u << id;
    pthread_mutex_unlock(&w->mailbox_lock);
    mailbox_ring(w);
}

void worker_post_stop(struct worker *w)
{
    pthread_mutex_lock(&w->mailbox_lock);
    w->mailbox_stop = 1;
    pthread_mutex_unlock(&w->mailbox_lock);
    mailbox_ring(w);
}

const struct topology_server *worker_server(const struct worker *w)
{
    static const struct topology_server spoken = { "redis", REDIS_SPOKEN_VERSION,
                                                   REDIS_SPOKEN_VERSION, "" };
    return w->topo && w->topo->server.name[0] ? &w->topo->server : &spoken;
}
