#include "cluster/health.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ping_cmd[] = "*1\r\n$4\r\nPING\r\n";

static void probe_set(struct health_probe *pr, int up, const char *why)
{
    int changed = pr->up != up || (!up && strcmp(pr->why, why) != 0);
    pr->up = up;
    snprintf(pr->why, sizeof pr->why, "%s", up ? "" : why);
    if (changed && pr->h && pr->h->on_change)
        pr->h->on_change(pr->h, pr->h->arg);
}

static struct health_probe *probe_of(struct node_req *r)
{
    return (struct health_probe *)((char *)r - offsetof(struct health_probe, req));
}

static void probe_reply(struct node_req *r, const struct reply_view *v,
                        const struct reply_scanner *s)
{
    struct health_probe *pr = probe_of(r);
    char why[REPLY_ERRLINE_MAX + 64], code[32];
    reply_view_drop(v);
    pr->pinging = 0;
    if (s->type == '+') {
        probe_set(pr, 1, "");
        return;
    }
    /* only the error's code: its text is the node's, not ours to repeat */
    reply_error_code(s->type == '-' ? s->errline : "?", code, sizeof code);
    snprintf(why, sizeof why, "master %s answers PING with %s", pr->addr, code);
    probe_set(pr, 0, why);
}

static void probe_fail(struct node_req *r, int may_have_run, const char *why)
{
    struct health_probe *pr = probe_of(r);
    (void)may_have_run;
    pr->pinging = 0;
    probe_set(pr, 0, why);
}

static void probe_down(struct node_conn *c, void *arg)
{
    struct health_probe *pr = arg;
    if (pr->conn == c)
        pr->conn = NULL;
}

/* A PING out for longer than the current timeout fails its connection (the
 * node's own timer was armed with the timeout of its time, maybe longer). */
static void probe_expire(struct health *h, struct health_probe *pr)
{
    char why[TOPO_ADDR_MAX + 64];
    if (node_now_ms() - pr->ping_sent_ms < (uint64_t)h->opts.timeout_ms)
        return;
    snprintf(why, sizeof why, "node %s did not answer within %d ms", pr->addr,
             h->opts.timeout_ms);
    node_conn_close(pr->conn, why);     /* fails the PING: down */
}

/* Open the probe's connection if it has none, and PING if none is out. */
static void probe_run(struct health *h, struct health_probe *pr)
{
    if (!node_conn_usable(pr->conn)) {
        const struct topology_node *n = &h->topo->nodes[pr->node];
        pr->conn = node_conn_new(h->loop, n->announced, (const struct sockaddr *)&n->sa,
                                 n->salen, &h->opts);
        if (!pr->conn) {
            char why[TOPO_ADDR_MAX + 64];
            snprintf(why, sizeof why, "cannot connect to master %s", pr->addr);
            probe_set(pr, 0, why);
            return;
        }
        pr->conn->on_down = probe_down;
        pr->conn->down_arg = pr;
    }
    if (pr->pinging) {
        probe_expire(h, pr);
        return;
    }
    pr->pinging = 1;
    pr->ping_sent_ms = node_now_ms();
    pr->req.on_reply = probe_reply;
    pr->req.on_fail = probe_fail;
    node_send(pr->conn, &pr->req, ping_cmd, sizeof ping_cmd - 1);
}

static void health_tick(evutil_socket_t fd, short what, void *arg)
{
    struct health *h = arg;
    (void)fd;
    (void)what;
    for (int i = 0; i < h->nprobes; i++)
        if (h->probes[i])
            probe_run(h, h->probes[i]);
}

int health_init(struct health *h, struct io_loop *loop, const struct node_opts *opts,
                int interval_ms, void (*on_change)(struct health *h, void *arg), void *arg)
{
    memset(h, 0, sizeof *h);
    h->loop = loop;
    h->opts = *opts;
    h->on_change = on_change;
    h->arg = arg;
    h->timer = event_new(loop->base, -1, EV_PERSIST, health_tick, h);
    if (!h->timer)
        return -1;
    struct timeval tv = { interval_ms / 1000, (interval_ms % 1000) * 1000 };
    return event_add(h->timer, &tv);
}

void health_set_opts(struct health *h, const struct node_opts *opts)
{
    h->opts = *opts;        /* the probes' connections point at h->opts */
}

/* Closing fails its PING: the probe is unhooked first so nothing reports. */
static void probe_free(struct health_probe *pr)
{
    pr->h = NULL;
    if (pr->conn) {
        struct node_conn *c = pr->conn;
        pr->conn = NULL;
        c->on_down = NULL;
        node_conn_close(c, "the node is no longer a master");
    }
    free(pr);
}

/* The probe of old for t's node i, if it is the same master, taken out of old. */
static struct health_probe *probe_keep(struct health *h, struct topology *t, int i)
{
    for (int j = 0; j < h->nprobes; j++) {
        struct health_probe *pr = h->probes[j];
        if (pr && strcmp(pr->addr, t->nodes[i].announced) == 0 &&
            strcmp(pr->target, t->nodes[i].target) == 0) {
            h->probes[j] = NULL;
            return pr;
        }
    }
    return NULL;
}

void health_set_topology(struct health *h, struct topology *t)
{
    struct health_probe **probes = calloc((size_t)t->nnodes + 1, sizeof *probes);
    if (!probes)
        return;
    for (int i = 0; i < t->nnodes; i++) {
        struct health_probe *pr = probe_keep(h, t, i);
        if (!pr && (pr = calloc(1, sizeof *pr)) != NULL) {
            pr->h = h;
            snprintf(pr->addr, sizeof pr->addr, "%s", t->nodes[i].announced);
            snprintf(pr->target, sizeof pr->target, "%s", t->nodes[i].target);
            snprintf(pr->why, sizeof pr->why, "master %s has not answered PING yet", pr->addr);
        }
        if (pr)
            pr->node = i;
        probes[i] = pr;
    }
    for (int j = 0; j < h->nprobes; j++)
        if (h->probes[j])
            probe_free(h->probes[j]);
    free(h->probes);
    h->probes = probes;
    h->nprobes = t->nnodes;
    topology_unref(h->topo);
    h->topo = topology_ref(t);
    for (int i = 0; i < h->nprobes; i++)
        if (h->probes[i])
            probe_run(h, h->probes[i]);
    if (h->on_change)
        h->on_change(h, h->arg);
}

void health_free(struct health *h)
{
    for (int i = 0; i < h->nprobes; i++)
        if (h->probes[i])
            probe_free(h->probes[i]);
    free(h->probes);
    h->probes = NULL;
    h->nprobes = 0;
    if (h->timer)
        event_free(h->timer);
    h->timer = NULL;
    topology_unref(h->topo);
    h->topo = NULL;
}
