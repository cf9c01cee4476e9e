#include "proxy/proxy.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/hostport.h"
#include "base/log.h"
#include "cluster/node.h"
#include "keylayout/layout.h"
#include "net/tls.h"
#include "proxy/admin.h"
#include "proxy/lifecycle.h"
#include "proxy/marker.h"
#include "proxy/rewrite.h"
#include "proxy/snapshot.h"
#include "proxy/worker.h"

/* Refreshes closer together than this are merged into one. */
#define REFRESH_MIN_INTERVAL_MS 100

struct proxy *proxy_instance;

static void proxy_make_id(struct proxy *p)
{
    unsigned char raw[20];
    if (RAND_bytes(raw, sizeof raw) != 1)
        for (size_t i = 0; i < sizeof raw; i++)
            raw[i] = (unsigned char)rand();
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(p->id + 2 * i, 3, "%02x", raw[i]);
}

static void topology_log(const struct topology *old, const struct topology *t)
{
    if (old && old->nnodes == t->nnodes &&
        memcmp(old->slot_node, t->slot_node, sizeof t->slot_node) == 0)
        return;
    log_notice("topology", "%d masters, %d of %d slots covered (version %llu)", t->nnodes,
               t->covered, SLOT_COUNT, (unsigned long long)t->version);
    for (int i = 0; i < t->nnodes; i++)
        log_verbose("topology", "master %s -> %s", t->nodes[i].announced, t->nodes[i].target);
}

/* Read the topology again, from the known masters first, then the seeds. */
static void proxy_refresh(struct proxy *p)
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
        log_warning("topology", "refresh failed: %s", err);
        return;
    }
    topology_log(p->topo, t);
    for (int i = 0; i < p->nworkers; i++)
        worker_post_topology(&p->workers[i], t);
    admin_post_topology(t);
    topology_unref(p->topo);
    p->topo = t;
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
    proxy_refresh(p);
}

static void refresh_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    proxy_refresh(arg);
}

void proxy_want_refresh(struct proxy *p)
{
    event_active(p->refresh_event, EV_TIMEOUT, 0);
}

void proxy_source_update(struct proxy *p)
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

int proxy_layout_build(const struct config *c, struct layout_ref **out, char *err,
                       size_t errlen)
{
    *out = NULL;
    if (!c->layout_rules)
        return 0;
    struct layout *l = config_layout_load(c, err, errlen);
    if (!l)
        return -1;
    *out = layout_ref_new(l);
    if (!*out) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < c->nlayout_rules; i++) {
        int n;
        config_layout_prefixes(c, i, &n);
        log_notice("layout", "key layout %s for %d prefix(es)", c->layout_rules[i].path, n);
    }
    return 0;
}

void proxy_refresh_timer_update(struct proxy *p)
{
    int ms = p->snap->cfg->topology_refresh_ms;
    event_del(p->refresh_timer);
    if (ms > 0) {
        struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
        event_add(p->refresh_timer, &tv);
    }
}

int proxy_draining(void)
{
    return proxy_instance && __atomic_load_n(&proxy_instance->draining, __ATOMIC_RELAXED);
}

/* The TLS contexts the config asks for (at start only); the topology reads
 * use the cluster's too (proxy_source_update). */
static int proxy_tls_setup(struct proxy *p, char *err, size_t errlen)
{
    const struct config *c = &p->cfg;
    const struct tls_server_opts server = {
        c->tls_cert_file, c->tls_key_file, c->tls_ca_cert_file, c->tls_auth_clients,
    };
    const struct tls_cluster_opts cluster = {
        c->cluster_tls_cert_file, c->cluster_tls_key_file, c->cluster_tls_ca_cert_file,
        c->cluster_tls_insecure,
    };
    char why[600];
    if (c->tls_listen && !(p->tls_server = tls_server_ctx(&server, why, sizeof why))) {
        snprintf(err, errlen, "tls-listen: %s", why);
        return -1;
    }
    if (c->cluster_tls && !(p->tls_cluster = tls_cluster_ctx(&cluster, why, sizeof why))) {
        snprintf(err, errlen, "cluster-tls: %s", why);
        return -1;
    }
    return 0;
}

/* Every worker listens on listen, and on tls-listen and unixsocket when set. */
static int proxy_listen(struct proxy *p, char *err, size_t errlen)
{
    char *host = NULL, *tls_host = NULL;
    int port, tls_port = 0, rc = 0;
    if (hostport_parse(p->cfg.listen, &host, &port) < 0) {
        snprintf(err, errlen, "bad listen address '%s'", p->cfg.listen);
        return -1;
    }
    if (p->cfg.tls_listen && hostport_parse(p->cfg.tls_listen, &tls_host, &tls_port) < 0) {
        snprintf(err, errlen, "bad tls-listen address '%s'", p->cfg.tls_listen);
        free(host);
        return -1;
    }
    if (p->cfg.unixsocket &&
        unixsock_listen(&p->unixsock, p->cfg.unixsocket, p->cfg.unixsocketperm, err, errlen) < 0)
        rc = -1;
    for (int i = 0; rc == 0 && i < p->nworkers; i++)
        if (worker_init(&p->workers[i], p, i, p->topo) < 0 ||
            worker_listen(&p->workers[i], host, port, err, errlen) < 0 ||
            (tls_host && worker_listen_tls(&p->workers[i], tls_host, tls_port, err, errlen) < 0) ||
            (p->unixsock.fd >= 0 &&
             worker_listen_unix(&p->workers[i], p->unixsock.fd, err, errlen) < 0))
            rc = -1;
    free(host);
    free(tls_host);
    if (rc < 0)
        unixsock_close(&p->unixsock);   /* not started: leave no socket file */
    return rc;
}

int proxy_start(struct proxy *p, char *err, size_t errlen)
{
    proxy_instance = p;
    p->unixsock.fd = -1;
    p->started = time(NULL);
    proxy_make_id(p);
    evthread_use_pthreads();
    p->base = event_base_new();
    if (!p->base) {
        snprintf(err, errlen, "cannot create the event loop");
        return -1;
    }
    p->snap = snapshot_new(&p->cfg, 0, 0, err, errlen);
    if (!p->snap)
        return -1;
    if (proxy_tls_setup(p, err, errlen) < 0)
        return -1;
    if (proxy_layout_build(&p->cfg, &p->layout, err, errlen) < 0)
        return -1;
    proxy_source_update(p);
    char why[900];
    p->topo = topology_fetch(&p->source, NULL, 0, why, sizeof why);
    if (!p->topo) {
        snprintf(err, errlen, "no cluster seed gave a slot map: %s", why);
        return -1;
    }
    topology_log(NULL, p->topo);
    if (p->layout && marker_check(p->layout->layout, p->topo, &p->source,
                                  p->cfg.layout_allow_legacy_data, err, errlen) < 0)
        return -1;
    p->nworkers = p->cfg.threads;
    p->workers = calloc((size_t)p->nworkers, sizeof *p->workers);
    if (!p->workers) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (proxy_listen(p, err, errlen) < 0)
        return -1;
    p->refresh_event = event_new(p->base, -1, 0, refresh_cb, p);
    p->refresh_timer = event_new(p->base, -1, EV_PERSIST, refresh_timer_cb, p);
    proxy_refresh_timer_update(p);
    if (lifecycle_install(p, err, errlen) < 0)
        return -1;
    return admin_start(p, err, errlen);
}

int proxy_run(struct proxy *p)
{
    for (int i = 0; i < p->nworkers; i++)
        if (worker_start(&p->workers[i]) < 0) {
            log_warning("main", "cannot start worker thread %d", i);
            return 1;
        }
    log_notice("main", "tagproxy ready on %s%s%s%s%s with %d thread(s)", p->cfg.listen,
               p->cfg.tls_listen ? " and TLS on " : "", p->cfg.tls_listen ? p->cfg.tls_listen : "",
               p->cfg.unixsocket ? " and unix socket " : "",
               p->cfg.unixsocket ? p->cfg.unixsocket : "", p->nworkers);
    event_base_dispatch(p->base);
    for (int i = 0; i < p->nworkers; i++)
        worker_post_stop(&p->workers[i]);
    for (int i = 0; i < p->nworkers; i++)
        worker_join(&p->workers[i]);
    unixsock_close(&p->unixsock);
    admin_stop();
    log_notice("main", "stopped");
    return 0;
}
