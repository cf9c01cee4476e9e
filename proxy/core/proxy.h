/*
 * proxy: the state the process's threads share: the config as started, the
 * TLS contexts, the workers, the control thread's loop and the topology it
 * publishes, the counters of clients. The control thread that fills it runs
 * in process.h (start, run), refresh.h (the topology) and lifecycle.h
 * (SIGHUP reload, SIGTERM/SIGINT drain).
 *
 * cfg is the config the process started with; restart-only directives
 * (listen, threads, cluster, ...) are read there. What a reload changes is
 * read through the current snapshot: snap on the control thread, w->cfg on
 * a worker (snapshot.h).
 */
#ifndef TAGPROXY_PROXY_H
#define TAGPROXY_PROXY_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "cluster/topology.h"
#include "proxy/config/config.h"
#include "lib/net/unixsock.h"

struct worker;
struct layout_ref;
struct event_base;
struct event;
struct config_snapshot;

struct proxy {
    struct config cfg;                  /* as started (snapshot generation 0) */
    struct config_snapshot *snap;       /* the current one (control thread) */
    pthread_mutex_t users_lock;
    struct config_snapshot *users_snap; /* under users_lock: the newest, whose users
                                         * ACL SETUSER changes (aclcmd.h) */
    int argc;                           /* main's, to read the sources again */
    char **argv;
    char **envp;
    struct ssl_ctx_st *tls_server;      /* tls-listen's context, or NULL */
    struct ssl_ctx_st *tls_cluster;     /* cluster-tls's context, or NULL */
    struct unixsock unixsock;           /* unixsocket's listener (fd -1: none) */
    struct topology_source source;
    const char **map_from, **map_to;    /* source's address-map arrays */
    struct event_base *base;            /* the control thread's loop */
    struct event *refresh_event;        /* woken by workers */
    struct event *refresh_timer;
    struct event *sigs[3];              /* SIGHUP, SIGTERM, SIGINT */
    struct event *drain_timer;          /* while draining: done yet? */
    struct event *trim_timer;           /* freed memory back to the system (lifecycle.c) */
    uint64_t drain_deadline_ms;
    int draining;                       /* atomic: see proxy_draining() */
    struct worker *workers;
    int nworkers;
    struct topology *topo;              /* control thread's reference */
    struct layout_ref *layout;          /* key layout (rewrite.h), NULL: none */
    uint64_t last_refresh_ms;
    time_t started;
    char id[41];                        /* CLUSTER MYID */
    int nclients;                       /* atomic: for max-clients */
    uint64_t next_client_id;            /* atomic */
    uint64_t refreshes;                 /* stat_inc by the control thread */
    uint64_t refresh_failures;          /* the same */
    uint64_t reloads[2];                /* the same: [0] applied, [1] refused */
    int marker_pending;                 /* started without a slot map: the layout
                                         * markers are checked with the first */
    int exit_status;                    /* process_run's, once the loop ends */
};

/* The running proxy (one per process). */
extern struct proxy *proxy_instance;

/* From any thread: ask for a topology refresh (refresh.h). */
void proxy_want_refresh(struct proxy *p);

/*
 * From any thread: true from the first moment of a SIGTERM/SIGINT drain
 * (the proxy stops accepting and closes clients once they are answered;
 * /readyz answers 503).
 */
int proxy_draining(void);

#endif
