/*
 * refresh: the control thread's topology reads. See refresh.h.
 */
#include "proxy/ops/refresh.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/log.h"
#include "cluster/node.h"
#include "proxy/config/snapshot.h"
#include "proxy/core/masters.h"
#include "proxy/core/proxy.h"
#include "proxy/core/worker.h"
#include "proxy/ops/admin.h"
#include "proxy/ops/marker.h"
#include "proxy/ops/servers.h"

/* Refreshes closer together than this are merged into one. */
#define REFRESH_MIN_INTERVAL_MS 100
/* How often the seeds are asked while the proxy has no slot map yet. */
#define REFRESH_WAITING_MS 500

static int waiting(const struct proxy *p)
{
    return p->topo->nnodes == 0;
}

/* No map yet, and the seeds still say no: logged when they say something
 * new, not twice a second. */
static void waiting_failed(const char *err)
{
    static char last[1024];
    masters_set_waiting(err);
    if (strcmp(last, err) == 0)
        return;
    snprintf(last, sizeof last, "%s", err);
    log_warning("topology", "still no slot map: %s", err);
}

/* The first map after a start without one: the layout markers are checked
 * now, as they would have been at start. 0, or -1: the proxy stops. */
static int first_map(struct proxy *p, const struct topology *t)
{
    char err[1024];
    masters_set_waiting(NULL);
    log_notice("topology", "the cluster answers: serving from now on");
    if (p->marker_pending && marker_check(p->layout->layout, t, &p->source,
                                          p->snap->cfg->layout_allow_legacy_data, err,
                                          sizeof err) < 0) {
        log_warning("main", "%s", err);
        p->exit_status = 1;
        event_base_loopexit(p->base, NULL);
        return -1;
    }
    p->marker_pending = 0;
    return 0;
}

void refresh_log(const struct topology *old, const struct topology *t)
{
    if (old && old->nnodes == t->nnodes &&
        memcmp(old->slot_node, t->slot_node, sizeof t->slot_node) == 0)
        return;
    log_notice("topology", "%d masters, %d of %d slots covered (version %llu)", t->nnodes,
               t->covered, SLOT_COUNT, (unsigned long long)t->version);
    if (t->ndropped)
        log_warning("topology", "%d master(s) left out, their slots unserved: %s", t->ndropped,
                    t->dropped_why);
    for (int i = 0; i < t->nnodes; i++)
        log_verbose("topology", "master %s -> %s", t->nodes[i].announced, t->nodes[i].target);
}

/* Read the topology again, from the known masters first, then the seeds. */
static void refresh_now(struct proxy *p)
{
    char err[1024];
    int n = p->topo ? p->topo->nnodes : 0;
    const char **known = calloc((size_t)n + 1, sizeof *known);
    for (int i = 0; known && i < n; i++)
        known[i] = p->topo->nodes[i].target;
    struct topology *t = topology_fetch(&p->source, known, known ? n : 0, err, sizeof err);
    free(known);
    p->last_refresh_ms = node_now_ms();
    stat_inc(&p->refreshes);
    if (!t) {
        stat_inc(&p->refresh_failures);
        if (waiting(p))
            waiting_failed(err);
        else
            log_warning("topology", "refresh failed: %s", err);
        return;
    }
    servers_learn(&p->source, t);
    int was_waiting = waiting(p);
    if (was_waiting && first_map(p, t) < 0) {
        topology_unref(t);
        return;
    }
    refresh_log(p->topo, t);
    for (int i = 0; i < p->nworkers; i++)
        worker_post_topology(&p->workers[i], t);
    admin_post_topology(t);
    topology_unref(p->topo);
    p->topo = t;
    if (was_waiting)
        refresh_timer_update(p);
}

static void refresh_cb(evutil_socket_t fd, short what, void *arg)
{
    struct proxy *p = arg;
    (void)fd;
    (void)what;
    uint64_t since = node_now_ms() - p->last_refresh_ms;
    if (since < REFRESH_MIN_INTERVAL_MS) {
        struct timeval tv = { 0, (suseconds_t)(REFRESH_MIN_INTERVAL_MS - since) * 1000 };
        event_add(p->refresh_event, &tv);   /* once, a little later */
        return;
    }
    refresh_now(p);
}

static void refresh_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    refresh_now(arg);
}

void refresh_source_update(struct proxy *p)
{
    const struct config *c = p->snap->cfg;
    const char **from = calloc((size_t)c->naddress_map + 1, sizeof *from);
    const char **to = calloc((size_t)c->naddress_map + 1, sizeof *to);
    for (int i = 0; from && to && i < c->naddress_map; i++) {
        from[i] = c->address_map[i].from;
        to[i] = c->address_map[i].to;
    }
    free(p->map_from);
    free(p->map_to);
    p->map_from = from;
    p->map_to = to;
    /* the seeds are the start-up ones: cluster needs a restart */
    p->source = (struct topology_source){
        .seeds = (const char *const *)p->cfg.cluster, .nseeds = p->cfg.ncluster,
        .map_from = from, .map_to = to, .nmap = from && to ? c->naddress_map : 0,
        .user = c->cluster_user, .password = c->cluster_password,
        .connect_timeout_ms = c->node_connect_timeout_ms, .timeout_ms = c->node_timeout_ms,
        /* TLS as started: cluster-tls needs a restart */
        .tls = p->tls_cluster, .tls_server_name = p->cfg.cluster_tls_server_name,
        .tls_insecure = p->cfg.cluster_tls_insecure,
    };
}

void refresh_timer_update(struct proxy *p)
{
    int ms = waiting(p) ? REFRESH_WAITING_MS : p->snap->cfg->topology_refresh_ms;
    event_del(p->refresh_timer);
    if (ms > 0) {
        struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
        event_add(p->refresh_timer, &tv);
    }
}

int refresh_start(struct proxy *p)
{
    p->refresh_event = event_new(p->base, -1, 0, refresh_cb, p);
    p->refresh_timer = event_new(p->base, -1, EV_PERSIST, refresh_timer_cb, p);
    if (!p->refresh_event || !p->refresh_timer)
        return -1;
    refresh_timer_update(p);
    return 0;
}
