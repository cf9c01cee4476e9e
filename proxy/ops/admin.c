#include "proxy/ops/admin.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/counter.h"
#include "lib/base/hostport.h"
#include "lib/base/log.h"
#include "cluster/health.h"
#include "proxy/config/config.h"
#include "proxy/config/snapshot.h"
#include "proxy/core/masters.h"
#include "proxy/core/metrics.h"
#include "proxy/core/proxy.h"
#include "proxy/core/worker.h"
#include "lib/net/io.h"

/* How often each master is probed. */
#define ADMIN_PROBE_INTERVAL_MS 1000
/* An HTTP client that sends nothing for this long is dropped. */
#define ADMIN_HTTP_TIMEOUT_S 10

static struct admin {
    struct proxy *p;
    int running;                    /* the thread exists */
    pthread_t thread;
    struct event_base *base;        /* with locks: other threads activate its events */
    struct evhttp *http;
    struct io_loop loop;            /* for the probe connections */
    struct health health;
    struct event *mailbox_event;

    struct config_snapshot *snap;   /* the probes' login strings live here (admin thread) */

    pthread_mutex_t lock;           /* guards what follows */
    struct topology *mailbox_topo;  /* posted, not yet taken by the admin thread */
    struct config_snapshot *mailbox_snap;
} admin = { .lock = PTHREAD_MUTEX_INITIALIZER };

void admin_post_topology(struct topology *t)
{
    masters_set_topology(t, admin.running);
    if (!admin.running)
        return;
    pthread_mutex_lock(&admin.lock);
    topology_unref(admin.mailbox_topo);
    admin.mailbox_topo = topology_ref(t);
    pthread_mutex_unlock(&admin.lock);
    event_active(admin.mailbox_event, EV_READ, 0);
}

/* ---- the admin thread: probes ---- */

/* A probe changed: the masters' states follow (masters.h). */
static void health_changed(struct health *h, void *arg)
{
    (void)arg;
    masters_set_probes(h);
}

/* A reloaded config: the probes' timeouts and login follow it. */
static void take_config(struct config_snapshot *s)
{
    struct node_opts opts = admin.health.opts;
    opts.connect_timeout_ms = s->cfg->node_connect_timeout_ms;
    opts.timeout_ms = s->cfg->node_timeout_ms;
    opts.user = s->cfg->cluster_user;
    opts.password = s->cfg->cluster_password;
    health_set_opts(&admin.health, &opts);
    snapshot_unref(admin.snap);     /* after: the old strings are no longer used */
    admin.snap = s;
}

static void mailbox_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    pthread_mutex_lock(&admin.lock);
    struct topology *t = admin.mailbox_topo;
    struct config_snapshot *s = admin.mailbox_snap;
    admin.mailbox_topo = NULL;
    admin.mailbox_snap = NULL;
    pthread_mutex_unlock(&admin.lock);
    if (s)
        take_config(s);
    if (t) {
        health_set_topology(&admin.health, t);
        topology_unref(t);
    }
}

void admin_post_config(struct config_snapshot *s)
{
    if (!admin.running)
        return;
    pthread_mutex_lock(&admin.lock);
    snapshot_unref(admin.mailbox_snap);
    admin.mailbox_snap = snapshot_ref(s);
    pthread_mutex_unlock(&admin.lock);
    event_active(admin.mailbox_event, EV_READ, 0);
}

/* ---- the admin thread: HTTP ---- */

static void http_send(struct evhttp_request *req, int code, const char *reason,
                      const char *type, struct evbuffer *body)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", type);
    evhttp_add_header(h, "Cache-Control", "no-store");
    evhttp_send_reply(req, code, reason, body);
}

static void http_text(struct evhttp_request *req, int code, const char *reason,
                      const char *text)
{
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    evbuffer_add_printf(b, "%s\n", text);
    http_send(req, code, reason, "text/plain; charset=utf-8", b);
    evbuffer_free(b);
}

/* Live unless a worker's loop has not turned for liveness-stall-ms: its
 * heartbeat (proxy/core/thread.c) fires every second, idle or busy. */
static void serve_healthz(struct evhttp_request *req)
{
    char why[160], line[200];
    const struct config *cfg = admin.snap ? admin.snap->cfg : &admin.p->cfg;   /* reloaded */
    if (workers_stalled(admin.p->workers, admin.p->nworkers, stats_now_us(),
                        (uint64_t)cfg->liveness_stall_ms * 1000, why, sizeof why) < 0) {
        http_text(req, 200, "OK", "ok");
        return;
    }
    snprintf(line, sizeof line, "%s (liveness-stall-ms %d)", why, cfg->liveness_stall_ms);
    http_text(req, 503, "Service Unavailable", line);
}

static void serve_readyz(struct evhttp_request *req)
{
    char why[320];
    const char *not_ready = masters_not_ready(why, sizeof why);
    if (not_ready)
        http_text(req, 503, "Service Unavailable", not_ready);
    else
        http_text(req, 200, "OK", "ready");
}

static void serve_metrics(struct evhttp_request *req)
{
    struct metrics m;
    struct evbuffer *b = evbuffer_new();
    if (!b || metrics_collect(&m, admin.p) < 0) {
        if (b)
            evbuffer_free(b);
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    metrics_prometheus(&m, b);
    metrics_free(&m);
    http_send(req, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", b);
    evbuffer_free(b);
}

/* The path of the request URI, without a query. */
static int path_is(const char *uri, const char *path)
{
    size_t n = strlen(path);
    return strncmp(uri, path, n) == 0 && (uri[n] == '\0' || uri[n] == '?');
}

static void http_cb(struct evhttp_request *req, void *arg)
{
    const char *uri = evhttp_request_get_uri(req);
    (void)arg;
    if (!uri)
        evhttp_send_error(req, 400, "Bad Request");
    else if (path_is(uri, "/healthz"))
        serve_healthz(req);
    else if (path_is(uri, "/readyz"))
        serve_readyz(req);
    else if (path_is(uri, "/metrics"))
        serve_metrics(req);
    else
        http_text(req, 404, "Not Found", "not found: try /healthz, /readyz or /metrics");
}

static int http_bind(const char *listen, char *err, size_t errlen)
{
    char *host = NULL;
    int port;
    if (hostport_parse(listen, &host, &port) < 0) {
        snprintf(err, errlen, "bad admin-listen address '%s'", listen);
        return -1;
    }
    admin.http = evhttp_new(admin.base);
    if (!admin.http || evhttp_bind_socket(admin.http, host, (ev_uint16_t)port) < 0) {
        snprintf(err, errlen, "cannot listen on admin-listen %s (in use? set admin-listen to "
                 "another host:port, or off)", listen);
        free(host);
        return -1;
    }
    free(host);
    evhttp_set_allowed_methods(admin.http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_timeout(admin.http, ADMIN_HTTP_TIMEOUT_S);
    evhttp_set_max_headers_size(admin.http, 16384);
    evhttp_set_max_body_size(admin.http, 0);
    evhttp_set_gencb(admin.http, http_cb, NULL);
    return 0;
}

static void *admin_main(void *arg)
{
    (void)arg;
    event_base_dispatch(admin.base);
    return NULL;
}

static void admin_cleanup(void)
{
    health_free(&admin.health);
    /* a closed probe connection is freed by the loop's next turn (node.h) */
    if (admin.base)
        event_base_loop(admin.base, EVLOOP_NONBLOCK);
    if (admin.http)
        evhttp_free(admin.http);
    if (admin.mailbox_event)
        event_free(admin.mailbox_event);
    io_loop_free(&admin.loop);
    if (admin.base)
        event_base_free(admin.base);
    admin.http = NULL;
    admin.mailbox_event = NULL;
    admin.base = NULL;
}

int admin_start(struct proxy *p, char *err, size_t errlen)
{
    const struct config *cfg = &p->cfg;
    admin.p = p;
    if (!cfg->admin_listen) {
        admin_post_topology(p->topo);
        return 0;
    }
    /* the workers' own connection settings (timeouts, login, and whatever
     * else they connect with); the probes' traffic is not the workers' */
    struct node_opts opts = p->workers[0].node_opts;
    opts.stats = NULL;
    admin.base = event_base_new();
    if (!admin.base || io_loop_init(&admin.loop, admin.base) < 0 ||
        health_init(&admin.health, &admin.loop, &opts, ADMIN_PROBE_INTERVAL_MS,
                    health_changed, NULL) < 0 ||
        !(admin.mailbox_event = event_new(admin.base, -1, 0, mailbox_cb, NULL))) {
        snprintf(err, errlen, "cannot set up the admin endpoint: out of memory");
        admin_cleanup();
        return -1;
    }
    if (http_bind(cfg->admin_listen, err, errlen) < 0) {
        admin_cleanup();
        return -1;
    }
    admin.running = 1;
    admin_post_topology(p->topo);
    if (pthread_create(&admin.thread, NULL, admin_main, NULL) != 0) {
        admin.running = 0;
        snprintf(err, errlen, "cannot start the admin thread");
        admin_cleanup();
        return -1;
    }
    log_notice("admin", "admin endpoint on http://%s (/healthz /readyz /metrics)",
               cfg->admin_listen);
    return 0;
}

void admin_stop(void)
{
    if (!admin.running)
        return;
    event_base_loopexit(admin.base, NULL);
    pthread_join(admin.thread, NULL);
    admin.running = 0;
    admin_cleanup();
    pthread_mutex_lock(&admin.lock);
    topology_unref(admin.mailbox_topo);
    admin.mailbox_topo = NULL;
    snapshot_unref(admin.mailbox_snap);
    admin.mailbox_snap = NULL;
    pthread_mutex_unlock(&admin.lock);
    snapshot_unref(admin.snap);
    admin.snap = NULL;
}
