/*
 * process: the proxy's start and run. See process.h.
 */
#include "proxy/ops/process.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/base/hostport.h"
#include "lib/base/log.h"
#include "cluster/node.h"
#include "proxy/config/snapshot.h"
#include "proxy/core/masters.h"
#include "proxy/core/proxy.h"
#include "proxy/core/thread.h"
#include "proxy/core/worker.h"
#include "keylayout/layout.h"
#include "lib/net/tls.h"
#include "proxy/ops/admin.h"
#include "proxy/ops/confwatch.h"
#include "proxy/ops/lifecycle.h"
#include "proxy/ops/marker.h"
#include "proxy/ops/nodeusers.h"
#include "proxy/ops/refresh.h"
#include "proxy/ops/servers.h"

static void process_make_id(struct proxy *p)
{
    unsigned char raw[20];
    if (RAND_bytes(raw, sizeof raw) != 1)
        for (size_t i = 0; i < sizeof raw; i++)
            raw[i] = (unsigned char)rand();
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(p->id + 2 * i, 3, "%02x", raw[i]);
}










/* The TLS contexts the config asks for (at start only); the topology reads
 * use the cluster's too (refresh_source_update). */
static int process_tls_setup(struct proxy *p, char *err, size_t errlen)
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
static int process_listen(struct proxy *p, char *err, size_t errlen)
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
        if (thread_init(&p->workers[i], p, i, p->topo) < 0 ||
            thread_listen(&p->workers[i], host, port, err, errlen) < 0 ||
            (tls_host && thread_listen_tls(&p->workers[i], tls_host, tls_port, err, errlen) < 0) ||
            (p->unixsock.fd >= 0 &&
             thread_listen_unix(&p->workers[i], p->unixsock.fd, err, errlen) < 0))
            rc = -1;
    free(host);
    free(tls_host);
    if (rc < 0)
        unixsock_close(&p->unixsock);   /* not started: leave no socket file */
    return rc;
}

/* The slot map to start with: the seeds', or (cluster-wait-at-start yes)
 * an empty one while they do not answer; refresh.c then asks again. */
static int process_first_map(struct proxy *p, char *err, size_t errlen)
{
    char why[900];
    p->topo = topology_fetch(&p->source, NULL, 0, why, sizeof why);
    if (p->topo)
        servers_learn(&p->source, p->topo);
    if (!p->topo && !p->cfg.cluster_wait_at_start) {
        snprintf(err, errlen, "no cluster seed gave a slot map: %s", why);
        return -1;
    }
    if (!p->topo) {
        log_warning("topology", "no cluster seed gave a slot map: %s; waiting for the cluster "
                    "(cluster-wait-at-start yes)", why);
        masters_set_waiting(why);
        p->marker_pending = p->layout != NULL;
        p->topo = topology_empty();
        if (!p->topo) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        return 0;
    }
    refresh_log(NULL, p->topo);
    if (p->layout && marker_check(p->layout->layout, p->topo, &p->source,
                                  p->cfg.layout_allow_legacy_data, err, errlen) < 0)
        return -1;
    nodeusers_setup(p->snap->acl, p->topo, &p->source);
    return 0;
}

int process_start(struct proxy *p, char *err, size_t errlen)
{
    proxy_instance = p;
    p->unixsock.fd = -1;
    p->started = time(NULL);
    process_make_id(p);
    evthread_use_pthreads();
    p->base = event_base_new();
    if (!p->base) {
        snprintf(err, errlen, "cannot create the event loop");
        return -1;
    }
    if (lifecycle_layout_build(&p->cfg, &p->layout, err, errlen) < 0)
        return -1;
    p->snap = snapshot_new(&p->cfg, 0, 0, p->layout ? p->layout->layout : NULL, err, errlen);
    if (!p->snap)
        return -1;
    pthread_mutex_init(&p->users_lock, NULL);
    p->users_snap = snapshot_ref(p->snap);
    if (process_tls_setup(p, err, errlen) < 0)
        return -1;
    refresh_source_update(p);
    if (process_first_map(p, err, errlen) < 0)
        return -1;
    p->nworkers = p->cfg.threads;
    p->workers = calloc((size_t)p->nworkers, sizeof *p->workers);
    if (!p->workers) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (process_listen(p, err, errlen) < 0)
        return -1;
    if (refresh_start(p) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (lifecycle_install(p, err, errlen) < 0 || confwatch_start(p, err, errlen) < 0)
        return -1;
    masters_set_grace(p->cfg.readiness_grace_ms);
    return admin_start(p, err, errlen);
}

int process_run(struct proxy *p)
{
    for (int i = 0; i < p->nworkers; i++)
        if (thread_start(&p->workers[i]) < 0) {
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
        thread_join(&p->workers[i]);
    unixsock_close(&p->unixsock);
    admin_stop();
    confwatch_stop();
    log_notice("main", "stopped");
    return p->exit_status;
}
