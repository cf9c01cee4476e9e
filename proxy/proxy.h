/*
 * proxy: the process: config, workers, and the control thread that reads the
 * topology, publishes it to the workers and handles signals (lifecycle.h:
 * SIGHUP reload, SIGTERM/SIGINT drain).
 *
 * cfg is the config the process started with; restart-only directives
 * (listen, threads, cluster, ...) are read there. What a reload changes is
 * read through the current snapshot: snap on the control thread, w->cfg on
 * a worker (snapshot.h).
 */
#ifndef TAGPROXY_PROXY_H
#define TAGPROXY_PROXY_H

#include <stdint.h>
#include <time.h>

#include "cluster/topology.h"
#include "net/unixsock.h"
#include "proxy/config.h"

struct worker;
struct layout_ref;
struct event_base;
struct event;
struct config_snapshot;

struct proxy {
    struct config cfg;                  /* as started (snapshot generation 0) */
    struct config_snapshot *snap;       /* the current one (control thread) */
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
};

/* The running proxy (one per process). */
extern struct proxy *proxy_instance;

int proxy_start(struct proxy *p, char *err, size_t errlen);
int proxy_run(struct proxy *p);

/* From any thread: ask for a topology refresh. */
void proxy_want_refresh(struct proxy *p);

/* Control thread: (re)build p->source from p->snap (seeds from p->cfg). */
void proxy_source_update(struct proxy *p);

/* The key layout of c's layout-rules files, each for its prefixes, into
 * *out (NULL when c has none). 0, or -1 with FILE:LINE: what is wrong. */
int proxy_layout_build(const struct config *c, struct layout_ref **out, char *err,
                       size_t errlen);

/* Control thread: the periodic refresh at p->snap's topology-refresh-ms. */
void proxy_refresh_timer_update(struct proxy *p);

/*
 * From any thread: true from the first moment of a SIGTERM/SIGINT drain
 * (the proxy stops accepting and closes clients once they are answered;
 * /readyz answers 503).
 */
int proxy_draining(void);

#endif
