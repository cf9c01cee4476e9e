#include "proxy/ops/lifecycle.h"

#include <errno.h>
#include <event2/event.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/log.h"
#include "cluster/node.h"
#include "proxy/config/snapshot.h"
#include "proxy/core/masters.h"
#include "proxy/core/proxy.h"
#include "proxy/core/worker.h"
#include "keylayout/layout.h"
#include "keylayout/layoutload.h"
#include "proxy/ops/admin.h"
#include "proxy/ops/nodeusers.h"
#include "proxy/ops/refresh.h"

/* How often a drain looks whether every client is gone. */
#define DRAIN_POLL_MS 10

/* ---- reload ---- */

static int same_string(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static int same_list(char **a, int na, char **b, int nb)
{
    if (na != nb)
        return 0;
    for (int i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0)
            return 0;
    return 1;
}

/* The same rules files serving the same prefixes (the paths may differ). */
static int same_layout_shape(const struct config *a, const struct config *b)
{
    if (a->nlayout_rules != b->nlayout_rules)
        return 0;
    for (int i = 0; i < a->nlayout_rules; i++) {
        int na, nb;
        const char *const *pa = config_layout_prefixes(a, i, &na);
        const char *const *pb = config_layout_prefixes(b, i, &nb);
        if (!same_list((char **)pa, na, (char **)pb, nb))
            return 0;
    }
    return 1;
}

static int same_script_map(const struct config *a, const struct config *b)
{
    if (a->nscript_map != b->nscript_map)
        return 0;
    for (int i = 0; i < a->nscript_map; i++)
        if (strcmp(a->script_map[i].sha, b->script_map[i].sha) != 0 ||
            a->script_map[i].len != b->script_map[i].len ||
            memcmp(a->script_map[i].body, b->script_map[i].body, a->script_map[i].len) != 0)
            return 0;
    return 1;
}

/* Log each directive that changed but is only read at start. */
static void report_restart_only(const struct config *running, const struct config *c)
{
    const struct { const char *name; int same; } checks[] = {
        { "listen", same_string(running->listen, c->listen) },
        { "threads", running->threads == c->threads },
        /* a worker's io_uring is set up with the worker (io.h) */
        { "io-uring", running->io_uring == c->io_uring },
        /* taking back niceness once given needs privilege (worker.c) */
        { "worker-nice", running->worker_nice == c->worker_nice },
        { "cluster", same_list(running->cluster, running->ncluster, c->cluster, c->ncluster) },
        { "cluster-wait-at-start", running->cluster_wait_at_start == c->cluster_wait_at_start },
        /* the prefixes' markers are checked at start; a rules file can
         * change live, but not whether there is one */
        { "layout-prefix", same_list(running->layout_prefix, running->nlayout_prefix,
                                     c->layout_prefix, c->nlayout_prefix) },
        { "layout-allow-legacy-data",
          running->layout_allow_legacy_data == c->layout_allow_legacy_data },
        { "layout-rules (a file added or removed, or its prefixes)",
          same_layout_shape(running, c) },
        /* the script body cache and its map are built once (scripts.h) */
        { "script-cache-max-bytes", running->script_cache_max_bytes == c->script_cache_max_bytes },
        { "script-map", same_script_map(running, c) },
        { "daemonize", running->daemonize == c->daemonize },
        { "pidfile", same_string(running->pidfile, c->pidfile) },
        { "log-file", same_string(running->log_file, c->log_file) },
        /* its socket is made once, at start (unixsock.h) */
        { "unixsocket", same_string(running->unixsocket, c->unixsocket) },
        { "unixsocketperm", running->unixsocketperm == c->unixsocketperm },
        /* TLS contexts are built once, at start (tls.h) */
        { "tls-listen", same_string(running->tls_listen, c->tls_listen) },
        { "tls-cert-file", same_string(running->tls_cert_file, c->tls_cert_file) },
        { "tls-key-file", same_string(running->tls_key_file, c->tls_key_file) },
        { "tls-ca-cert-file", same_string(running->tls_ca_cert_file, c->tls_ca_cert_file) },
        { "tls-auth-clients", running->tls_auth_clients == c->tls_auth_clients },
        { "cluster-tls", running->cluster_tls == c->cluster_tls },
        { "cluster-tls-ca-cert-file", same_string(running->cluster_tls_ca_cert_file,
                                                  c->cluster_tls_ca_cert_file) },
        { "cluster-tls-cert-file", same_string(running->cluster_tls_cert_file,
                                               c->cluster_tls_cert_file) },
        { "cluster-tls-key-file", same_string(running->cluster_tls_key_file,
                                              c->cluster_tls_key_file) },
        { "cluster-tls-server-name", same_string(running->cluster_tls_server_name,
                                                 c->cluster_tls_server_name) },
        { "cluster-tls-insecure", running->cluster_tls_insecure == c->cluster_tls_insecure },
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (!checks[i].same)
            log_warning("config", "'%s' changed: it needs a restart; not applied",
                        checks[i].name);
}

/* Make s and layout (may be NULL) current: workers, log level, topology
 * source. Both references pass to p. */
static void publish(struct proxy *p, struct config_snapshot *s, struct layout_ref *layout)
{
    struct config_snapshot *old = p->snap;
    s->workers_left = p->nworkers;
    for (int i = 0; i < p->nworkers; i++) {
        worker_post_config(&p->workers[i], s);
        worker_post_layout(&p->workers[i], layout);
    }
    admin_post_config(s);
    masters_set_grace(s->cfg->readiness_grace_ms);
    layout_ref_put(p->layout);
    p->layout = layout;
    log_min_level = s->cfg->log_level;
    p->snap = s;
    pthread_mutex_lock(&p->users_lock);     /* what ACL SETUSER changed is gone */
    snapshot_unref(p->users_snap);
    p->users_snap = snapshot_ref(s);
    pthread_mutex_unlock(&p->users_lock);
    refresh_source_update(p);     /* before old goes: the source points into it */
    snapshot_unref(old);
    refresh_timer_update(p);
    proxy_want_refresh(p);      /* a new address-map applies to the next map */
}

/* The layout for the reloaded config c: its rules files read again when
 * they serve the running prefixes, else the running config's files read
 * again; the running layout when there is no file. */
static int reload_layout(struct proxy *p, const struct config *c, struct layout_ref **out,
                         char *err, size_t errlen)
{
    if (!p->cfg.layout_rules || !c->layout_rules) {
        *out = layout_ref_get(p->layout);
        return 0;
    }
    return lifecycle_layout_build(same_layout_shape(&p->cfg, c) ? c : &p->cfg, out, err, errlen);
}

static int refuse(struct proxy *p, struct config *c, const char *why)
{
    log_warning("config", "reload refused, the running config is kept: %s", why);
    stat_inc(&p->reloads[1]);
    if (c) {
        config_free(c);     /* untouched by a failed load, or whole: either is safe */
        free(c);
    }
    return -1;
}

int lifecycle_reload(struct proxy *p)
{
    char err[1024];
    struct layout_ref *layout;
    struct config *c = calloc(1, sizeof *c);
    if (!c)
        return refuse(p, NULL, "out of memory");
    if (config_load_main(c, p->argc, p->argv, p->envp, err, sizeof err) < 0 ||
        config_validate(c, err, sizeof err) < 0 ||
        reload_layout(p, c, &layout, err, sizeof err) < 0)
        return refuse(p, c, err);
    report_restart_only(&p->cfg, c);
    uint64_t generation = p->snap->generation + 1;
    struct config_snapshot *s = snapshot_new(c, 1, generation, layout ? layout->layout : NULL,
                                             err, sizeof err);
    if (!s) {
        layout_ref_put(layout);
        return refuse(p, NULL, err);
    }
    nodeusers_warn_unmapped(s->acl);
    log_notice("config", "reloaded %s (config generation %llu)",
               s->cfg->path ? s->cfg->path : "(no file: environment and arguments)",
               (unsigned long long)generation);
    stat_inc(&p->reloads[0]);
    publish(p, s, layout);
    return 0;
}

/* ---- drain ---- */

static void drain_poll_cb(evutil_socket_t fd, short what, void *arg)
{
    struct proxy *p = arg;
    (void)fd;
    (void)what;
    int left = __atomic_load_n(&p->nclients, __ATOMIC_RELAXED);
    if (left == 0) {
        log_notice("main", "drained: every client answered and closed");
    } else if (node_now_ms() >= p->drain_deadline_ms) {
        log_warning("main", "shutdown-timeout-ms (%d ms) passed: closing %d client(s) "
                    "still waiting for replies or sending", p->snap->cfg->shutdown_timeout_ms,
                    left);
    } else {
        return;
    }
    event_del(p->drain_timer);
    event_base_loopexit(p->base, NULL);
}

void lifecycle_drain(struct proxy *p, const char *why)
{
    int ms = p->snap->cfg->shutdown_timeout_ms;
    struct timeval tv = { 0, DRAIN_POLL_MS * 1000 };
    __atomic_store_n(&p->draining, 1, __ATOMIC_RELAXED);
    log_notice("main", "%s: draining: no new connections; %d client(s) closed once answered, "
               "within %d ms", why, __atomic_load_n(&p->nclients, __ATOMIC_RELAXED), ms);
    p->drain_deadline_ms = node_now_ms() + (uint64_t)ms;
    for (int i = 0; i < p->nworkers; i++)
        worker_post_drain(&p->workers[i]);
    unixsock_unlink(&p->unixsock);      /* a new client finds no socket at once */
    p->drain_timer = event_new(p->base, -1, EV_PERSIST, drain_poll_cb, p);
    if (!p->drain_timer || event_add(p->drain_timer, &tv) < 0) {
        log_warning("main", "cannot wait for the drain: stopping now");
        event_base_loopexit(p->base, NULL);
    }
}

/* ---- signals ---- */

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
    struct proxy *p = arg;
    const char *name = sig == SIGHUP ? "SIGHUP" : sig == SIGTERM ? "SIGTERM" : "SIGINT";
    (void)what;
    if (sig == SIGHUP) {
        /* log rotation first: the reload's lines go to the new file */
        if (log_reopen() < 0)
            log_warning("main", "cannot reopen the log file %s: %s", p->cfg.log_file,
                        strerror(errno));
        log_notice("config", "received SIGHUP: reloading the config");
        lifecycle_reload(p);
    } else if (!proxy_draining()) {
        lifecycle_drain(p, name);
    } else if (sig == SIGINT) {
        log_notice("main", "received SIGINT while draining: stopping now");
        event_base_loopexit(p->base, NULL);
    } else {
        log_notice("main", "received %s while draining: already stopping", name);
    }
}

/* Memory a burst used and freed stays with the allocator (glibc keeps free
 * pages inside its heaps): given back every TRIM_EVERY_S, so that RSS
 * follows what the proxy holds instead of its highest burst, as HAProxy
 * trims its pools. */
#define TRIM_EVERY_S 10

static void trim_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    malloc_trim(0);
}

int lifecycle_install(struct proxy *p, char *err, size_t errlen)
{
    static const int sigs[] = { SIGHUP, SIGTERM, SIGINT };
    static const struct timeval trim_every = { TRIM_EVERY_S, 0 };
    p->trim_timer = event_new(p->base, -1, EV_PERSIST, trim_cb, p);
    if (!p->trim_timer || event_add(p->trim_timer, &trim_every) < 0) {
        snprintf(err, errlen, "cannot start the memory trim timer");
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        p->sigs[i] = evsignal_new(p->base, sigs[i], signal_cb, p);
        if (!p->sigs[i] || event_add(p->sigs[i], NULL) < 0) {
            snprintf(err, errlen, "cannot handle signal %d", sigs[i]);
            return -1;
        }
    }
    return 0;
}

int lifecycle_layout_build(const struct config *c, struct layout_ref **out, char *err,
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
