/*
 * worker: a worker's state, and the mail other threads post it. See worker.h.
 */
#include "core/worker.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "config/snapshot.h"
#include "core/proxy.h"
#include "core/route.h"

static const struct worker_family *families_known[WORKER_FAMILIES_MAX];
static int nfamilies;

int worker_family_register(const struct worker_family *f)
{
    if (nfamilies == WORKER_FAMILIES_MAX)
        registration_full("worker", WORKER_FAMILIES_MAX);
    families_known[nfamilies] = f;
    return nfamilies++;
}

int worker_family_count(void)
{
    return nfamilies;
}

const struct worker_family *worker_family_at(int i)
{
    return families_known[i];
}

static const struct worker_node_watch *node_watch;

void worker_register_node_watch(const struct worker_node_watch *watch)
{
    node_watch = watch;
}

void worker_topology_taken(struct worker *w)
{
    if (node_watch && node_watch->topology)
        node_watch->topology(w);
}

int worker_node_probe(struct worker *w, const char *addr)
{
    int node = topology_find(w->topo, addr);
    if (node < 0)
        return -1;
    struct node_conn *c = worker_conn(w, node, RESP2);
    if (c && c->ninflight == 0) {
        const char *argv[1] = { "PING" };
        node_send_quiet(c, 1, argv);
    }
    return 0;
}

static void worker_conn_down(struct node_conn *c, void *arg)
{
    struct worker *w = arg;
    w->node_caught_up(w, c);
    if (c->timed_out && node_watch && node_watch->silent)
        node_watch->silent(w, c->addr);
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < w->topo->nnodes; i++)
            if (w->conns[p][i] == c) {
                w->conns[p][i] = NULL;
                if (!c->was_up)
                    w->connect_after_ms[i] = node_now_ms() + (uint64_t)c->opts->connect_timeout_ms;
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

struct node_conn *worker_conn(struct worker *w, int node, enum resp_proto proto)
{
    if (node < 0 || node >= w->topo->nnodes)
        return NULL;
    struct node_conn **slot = &w->conns[proto == RESP3][node];
    if (node_conn_usable(*slot))
        return *slot;
    if (node_now_ms() < w->connect_after_ms[node])
        return NULL;
    const struct topology_node *n = &w->topo->nodes[node];
    struct node_conn *c = node_conn_new(&w->loop, n->announced, (const struct sockaddr *)&n->sa,
                                        n->salen, worker_node_opts(w, proto));
    if (c) {
        c->on_down = worker_conn_down;
        c->on_drained = worker_conn_drained;
        c->down_arg = w;
        node_conn_batch(c, 1);
    }
    *slot = c;
    return c;
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
