/*
 * replicas: a worker's replica connections and their freshness. See
 * replicas.h.
 */
#include "proxy/core/replicas.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/node.h"
#include "cluster/topology.h"
#include "lib/proto/reply.h"
#include "proxy/config/directives.h"
#include "proxy/core/worker.h"

#define SAMPLES 640                 /* a master's last offsets: 64 s of them, past
                                       replica-max-lag-ms's bound */
#define INFO_TEXT_MAX 16384         /* INFO replication, as much as is read of it */
#define POLL_OVERDUE_MS (3 * REPLICAS_POLL_MS)  /* a replica silent this long takes
                                       no new read */

struct replica_link {
    struct node_conn *conn[2];      /* by enum resp_proto, READONLY */
    uint64_t connect_after_ms;      /* its last connect failed: not before this */
    uint64_t fresh_ms;              /* it holds what its master had then; 0: unknown */
    uint64_t poll_sent_ms;          /* its poll on its way was sent then */
    int polling;
    int answered;                   /* a poll of it was ever answered (kept as it
                                       goes down: known to be down) */
};

struct master_samples {
    uint64_t ms[SAMPLES], offset[SAMPLES];
    unsigned next, n;
    int polling;
};

struct worker_replicas {
    struct worker *w;
    struct topology *topo;          /* the one the arrays are for (a reference) */
    uint64_t gen;                   /* bumped as they are dropped: older polls are void */
    struct replica_link *links;     /* topo->nnodes * TOPO_REPLICAS_MAX */
    struct master_samples *masters; /* topo->nnodes */
    struct event *timer;
    unsigned turn;                  /* the round robin's */
};

/* One INFO replication on its way (its own allocation: the arrays it
 * reports to may be gone by its answer). */
struct poll_req {
    struct node_req nreq;
    struct worker_replicas *owner;
    uint64_t gen;
    int node, replica;              /* replica -1: the master's */
    uint64_t sent_ms;
};

static const char info_cmd[] = "*2\r\n$4\r\nINFO\r\n$11\r\nreplication\r\n";

static struct replica_link *link_at(struct worker_replicas *wr, int node, int k)
{
    return &wr->links[(size_t)node * TOPO_REPLICAS_MAX + (size_t)k];
}

/* ---- connections ---- */

static struct replica_link *link_of(struct worker_replicas *wr, const struct node_conn *c,
                                    int *proto)
{
    size_t n = wr->links ? (size_t)wr->topo->nnodes * TOPO_REPLICAS_MAX : 0;
    for (size_t i = 0; i < n; i++)
        for (int p = 0; p < 2; p++)
            if (wr->links[i].conn[p] == c) {
                *proto = p;
                return &wr->links[i];
            }
    return NULL;
}

static void conn_drained(struct node_conn *c, void *arg)
{
    struct worker_replicas *wr = arg;
    wr->w->node_caught_up(wr->w, c);
}

static void conn_down(struct node_conn *c, void *arg)
{
    struct worker_replicas *wr = arg;
    int p;
    struct replica_link *l = link_of(wr, c, &p);
    wr->w->node_caught_up(wr->w, c);
    if (!l)
        return;
    l->conn[p] = NULL;
    l->fresh_ms = 0;            /* a replica that comes back is asked again first */
    /* (also when it connected: a replica that refuses the login or is full
     * closes each connection at once) */
    l->connect_after_ms = node_now_ms() + (uint64_t)c->opts->connect_timeout_ms;
}

/* l's connection (replica k of master node) that speaks proto, made on
 * demand: READONLY goes first. */
static struct node_conn *link_conn(struct worker_replicas *wr, struct replica_link *l,
                                   int node, int k, enum resp_proto proto)
{
    static const char *readonly[] = { "READONLY" };
    struct node_conn **slot = &l->conn[proto == RESP3];
    if (node_conn_usable(*slot))
        return *slot;
    const struct topology_replica *rep = &wr->topo->nodes[node].replicas[k];
    if (rep->salen == 0 || node_now_ms() < l->connect_after_ms)
        return NULL;
    if (*slot)
        l->fresh_ms = 0;        /* it closed, perhaps not reported yet: asked again first */
    struct node_conn *c = node_conn_new(&wr->w->loop, rep->announced,
                                        (const struct sockaddr *)&rep->sa, rep->salen,
                                        worker_node_opts(wr->w, proto));
    if (c && c->state == NODE_CLOSED)
        c = NULL;               /* failed as it was made: freed on the next round */
    if (c) {
        c->on_down = conn_down;
        c->on_drained = conn_drained;
        c->down_arg = wr;
        node_conn_batch(c, 1);
        node_send_quiet(c, 1, readonly);
    }
    *slot = c;
    return c;
}

/* What the arrays hold is let go of: the connections close once their
 * replies are in, the polls on their way report to nothing. */
static void links_drop(struct worker_replicas *wr)
{
    size_t n = wr->links ? (size_t)wr->topo->nnodes * TOPO_REPLICAS_MAX : 0;
    /* (their on_down stays: a client paused on one is resumed as it goes) */
    for (size_t i = 0; i < n; i++)
        for (int p = 0; p < 2; p++)
            if (wr->links[i].conn[p])
                node_conn_retire(wr->links[i].conn[p]);
    free(wr->links);
    free(wr->masters);
    wr->links = NULL;
    wr->masters = NULL;
    topology_unref(wr->topo);
    wr->topo = NULL;
    wr->gen++;
}

/* In the arrays of the old topology: master old_node's replica that t
 * lists as replica k of master node, or NULL. */
static struct replica_link *link_same(struct worker_replicas *wr, const struct topology *t,
                                      int node, int k, int *old_node)
{
    const struct topology_replica *rep = &t->nodes[node].replicas[k];
    int i = topology_find(wr->topo, t->nodes[node].announced);
    if (i < 0 || strcmp(wr->topo->nodes[i].target, t->nodes[node].target) != 0)
        return NULL;
    for (int j = 0; j < wr->topo->nodes[i].nreplicas; j++) {
        const struct topology_replica *was = &wr->topo->nodes[i].replicas[j];
        if (strcmp(was->announced, rep->announced) == 0 && strcmp(was->target, rep->target) == 0) {
            *old_node = i;
            return link_at(wr, i, j);
        }
    }
    return NULL;
}

/* What stays from the old arrays into the new ones: a replica of the same
 * master keeps its connections, its freshness and its master's samples
 * (its polls on their way are void: it is asked again). */
static void links_carry(struct worker_replicas *wr, const struct topology *t,
                        struct replica_link *links, struct master_samples *masters)
{
    for (int node = 0; wr->links && node < t->nnodes; node++)
        for (int k = 0; k < t->nodes[node].nreplicas; k++) {
            int was;
            struct replica_link *old = link_same(wr, t, node, k, &was);
            if (!old)
                continue;
            links[(size_t)node * TOPO_REPLICAS_MAX + (size_t)k] = *old;
            links[(size_t)node * TOPO_REPLICAS_MAX + (size_t)k].polling = 0;
            memset(old, 0, sizeof *old);
            masters[node] = wr->masters[was];
            masters[node].polling = 0;
        }
}

/* The arrays for w's topology: 0, or -1 out of memory. */
static int links_fit(struct worker_replicas *wr)
{
    struct topology *t = wr->w->topo;
    if (wr->topo == t && wr->links)
        return 0;
    struct replica_link *links = calloc((size_t)t->nnodes * TOPO_REPLICAS_MAX + 1, sizeof *links);
    struct master_samples *masters = calloc((size_t)t->nnodes + 1, sizeof *masters);
    if (!links || !masters) {
        free(links);
        free(masters);
        return -1;
    }
    links_carry(wr, t, links, masters);
    links_drop(wr);
    wr->links = links;
    wr->masters = masters;
    wr->topo = topology_ref(t);
    return 0;
}

/* ---- freshness ---- */

/* The number after "field:" in INFO's text, or -1. */
static long long info_number(const char *text, const char *field)
{
    const char *at = strstr(text, field);
    if (!at || (at != text && at[-1] != '\n'))
        return -1;
    char *end;
    long long v = strtoll(at + strlen(field), &end, 10);
    return end == at + strlen(field) || v < 0 ? -1 : v;
}

static void master_sampled(struct worker_replicas *wr, int node, uint64_t sent_ms,
                           const char *text)
{
    struct master_samples *m = &wr->masters[node];
    long long offset = info_number(text, "master_repl_offset:");
    if (offset < 0)
        return;
    m->ms[m->next] = sent_ms;
    m->offset[m->next] = (uint64_t)offset;
    m->next = (m->next + 1) % SAMPLES;
    if (m->n < SAMPLES)
        m->n++;
}

/* Replica k of master node has processed offset: fresh as of the newest
 * sample it has reached. */
static void replica_sampled(struct worker_replicas *wr, int node, int k, const char *text)
{
    struct master_samples *m = &wr->masters[node];
    struct replica_link *l = link_at(wr, node, k);
    long long offset = info_number(text, "slave_repl_offset:");
    if (offset < 0)
        offset = info_number(text, "replica_repl_offset:");
    l->answered = 1;
    if (offset < 0 || !strstr(text, "master_link_status:up"))
        return;
    for (unsigned i = 0; i < m->n; i++) {
        unsigned at = (m->next + SAMPLES - 1 - i) % SAMPLES;
        if (m->offset[at] <= (uint64_t)offset) {
            if (m->ms[at] > l->fresh_ms)
                l->fresh_ms = m->ms[at];
            return;
        }
    }
}

/* pr failed or was refused: its node may be asked again; a replica is
 * known from now on (down, or not letting the proxy ask). */
static void poll_over(struct worker_replicas *wr, const struct poll_req *pr)
{
    if (pr->replica < 0) {
        wr->masters[pr->node].polling = 0;
    } else {
        struct replica_link *l = link_at(wr, pr->node, pr->replica);
        l->polling = 0;
        l->answered = 1;
    }
}

static void poll_reply(struct node_req *nr, const struct reply_view *v,
                       const struct reply_scanner *s)
{
    struct poll_req *pr = (struct poll_req *)nr;
    struct worker_replicas *wr = pr->owner;
    char text[INFO_TEXT_MAX];
    reply_view_text(v, text, sizeof text, 1);
    if (pr->gen == wr->gen && s->type != '-') {
        if (pr->replica < 0) {
            wr->masters[pr->node].polling = 0;
            master_sampled(wr, pr->node, pr->sent_ms, text);
        } else {
            link_at(wr, pr->node, pr->replica)->polling = 0;
            replica_sampled(wr, pr->node, pr->replica, text);
        }
    } else if (pr->gen == wr->gen) {
        poll_over(wr, pr);
    }
    free(pr);
}

static void poll_fail(struct node_req *nr, int may_have_run, const char *why)
{
    struct poll_req *pr = (struct poll_req *)nr;
    struct worker_replicas *wr = pr->owner;
    (void)may_have_run;
    (void)why;
    if (pr->gen == wr->gen)
        poll_over(wr, pr);
    free(pr);
}

/* INFO replication on c for master node (replica -1) or its replica. */
static void poll_send(struct worker_replicas *wr, struct node_conn *c, int node, int replica)
{
    struct poll_req *pr = calloc(1, sizeof *pr);
    if (!pr)
        return;
    pr->owner = wr;
    pr->gen = wr->gen;
    pr->node = node;
    pr->replica = replica;
    pr->sent_ms = node_now_ms();
    pr->nreq.on_reply = poll_reply;
    pr->nreq.on_fail = poll_fail;
    if (replica < 0) {
        wr->masters[node].polling = 1;
    } else {
        link_at(wr, node, replica)->polling = 1;
        link_at(wr, node, replica)->poll_sent_ms = pr->sent_ms;
    }
    node_send(c, &pr->nreq, info_cmd, sizeof info_cmd - 1);
}

/* Every master with replicas, then each of its replicas, is asked (the
 * masters first: a replica's answer is matched with the samples in). */
static void poll_tick(evutil_socket_t fd, short what, void *arg)
{
    struct worker_replicas *wr = arg;
    struct worker *w = wr->w;
    (void)fd;
    (void)what;
    if (w->cfg->read_from == READ_FROM_MASTER || links_fit(wr) < 0) {
        evtimer_del(wr->timer);     /* the next read that may go to a replica restarts it */
        return;
    }
    for (int node = 0; node < wr->topo->nnodes; node++) {
        struct node_conn *c;
        if (wr->topo->nodes[node].nreplicas == 0 || wr->masters[node].polling)
            continue;
        if ((c = worker_conn(w, node, RESP2)) != NULL && node_conn_usable(c))
            poll_send(wr, c, node, -1);
    }
    for (int node = 0; node < wr->topo->nnodes; node++)
        for (int k = 0; k < wr->topo->nodes[node].nreplicas; k++) {
            struct replica_link *l = link_at(wr, node, k);
            struct node_conn *c = link_conn(wr, l, node, k, RESP2);
            if (c && !l->polling)
                poll_send(wr, c, node, k);
        }
}

/* w's state, made with its first use; NULL out of memory. */
static struct worker_replicas *replicas_of(struct worker *w)
{
    struct worker_replicas *wr = w->replicas;
    if (wr)
        return wr;
    if (!(wr = calloc(1, sizeof *wr)))
        return NULL;
    wr->w = w;
    wr->timer = event_new(w->base, -1, EV_PERSIST, poll_tick, wr);
    if (!wr->timer) {
        free(wr);
        return NULL;
    }
    w->replicas = wr;
    return wr;
}

/* ---- reads ---- */

struct node_conn *replicas_conn(struct worker *w, int node, enum resp_proto proto,
                                uint64_t after_ms, uint64_t now_ms, uint64_t max_lag_ms)
{
    struct worker_replicas *wr = replicas_of(w);
    if (!wr || links_fit(wr) < 0)
        return NULL;
    if (!evtimer_pending(wr->timer, NULL)) {
        struct timeval tv = { 0, REPLICAS_POLL_MS * 1000 };
        evtimer_add(wr->timer, &tv);
        poll_tick(-1, 0, wr);
    }
    int n = wr->topo->nodes[node].nreplicas;
    for (int i = 0; i < n; i++) {
        int k = (int)((wr->turn + (unsigned)i) % (unsigned)n);
        struct replica_link *l = link_at(wr, node, k);
        if (l->fresh_ms <= after_ms || l->fresh_ms + max_lag_ms < now_ms ||
            (l->polling && now_ms > l->poll_sent_ms + POLL_OVERDUE_MS))
            continue;
        struct node_conn *c = link_conn(wr, l, node, k, proto);
        if (c && node_conn_usable(c)) {
            wr->turn = (unsigned)k + 1;
            return c;
        }
    }
    return NULL;
}

int replicas_known(struct worker *w, int node)
{
    struct worker_replicas *wr = w->replicas;
    if (!wr || links_fit(wr) < 0)
        return 0;
    for (int k = 0; k < wr->topo->nodes[node].nreplicas; k++)
        if (wr->topo->nodes[node].replicas[k].salen > 0 && !link_at(wr, node, k)->answered)
            return 0;
    return 1;
}
