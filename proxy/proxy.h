/*
 * proxy: the process: config, workers, and the control thread that reads the
 * topology, publishes it to the workers and handles signals.
 */
#ifndef TAGPROXY_PROXY_H
#define TAGPROXY_PROXY_H

#include <stdint.h>
#include <time.h>

#include "cluster/topology.h"
#include "proxy/config.h"

struct worker;
struct layout_ref;
struct acl;
struct event_base;
struct event;

struct proxy {
    struct config cfg;
    struct acl *acl;                    /* client users (acl.h) */
    struct topology_source source;
    struct event_base *base;            /* the control thread's loop */
    struct event *refresh_event;        /* woken by workers */
    struct event *refresh_timer;
    struct event *sigs[3];
    struct worker *workers;
    int nworkers;
    struct topology *topo;              /* control thread's reference */
    struct layout_ref *layout;          /* key layout (rewrite.h), NULL: none */
    uint64_t last_refresh_ms;
    time_t started;
    char id[41];                        /* CLUSTER MYID */
    int nclients;                       /* atomic: for max-clients */
    uint64_t next_client_id;            /* atomic */
    uint64_t refreshes;
};

/* The running proxy (one per process). */
extern struct proxy *proxy_instance;

int proxy_start(struct proxy *p, char *err, size_t errlen);
int proxy_run(struct proxy *p);

/* From any thread: ask for a topology refresh. */
void proxy_want_refresh(struct proxy *p);

#endif
