/*
 * topology: the cluster's slot map, read with CLUSTER SLOTS.
 *
 * A topology is immutable once built and shared by the workers through a
 * reference count: the control thread builds a new one (topology_fetch, a
 * blocking call that never runs on a worker's event loop), hands a reference
 * to each worker, and a worker drops its reference to the old one when it
 * takes the new. Node addresses are the ones the cluster announces, with
 * address-map applied and host names resolved here, so a worker connects to
 * a numeric sockaddr and never resolves anything itself.
 */
#ifndef TAGPROXY_TOPOLOGY_H
#define TAGPROXY_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cluster/slot.h"

#define TOPO_ADDR_MAX 128
#define TOPO_REPLICAS_MAX 8          /* a master's replicas the map keeps */

/* A replica of a master, as CLUSTER SLOTS lists it after the master. */
struct topology_replica {
    char announced[TOPO_ADDR_MAX];
    char target[TOPO_ADDR_MAX];      /* address-map applied */
    struct sockaddr_storage sa;
    socklen_t salen;                 /* 0: its name does not resolve (never used) */
};

struct topology_node {
    char announced[TOPO_ADDR_MAX];   /* "host:port" as CLUSTER SLOTS says it */
    char target[TOPO_ADDR_MAX];      /* "host:port" connected to (address-map) */
    struct sockaddr_storage sa;
    socklen_t salen;
    char id[48];
    int nreplicas;                   /* its replicas CLUSTER SLOTS lists (the first
                                        TOPO_REPLICAS_MAX) */
    struct topology_replica replicas[TOPO_REPLICAS_MAX];
};

/* What the masters run (proxy/ops/servers.h fills it in before the topology is
 * handed out): the master with the lowest version's INFO server. An empty
 * name: not known (no master answered yet). */
struct topology_server {
    char name[16];                   /* "redis", "valkey" (server_name) */
    char version[32];                /* its own: "7.4.1", Valkey's valkey_version */
    char redis_version[32];          /* INFO's redis_version (Valkey 8 writes "7.2.4") */
    char addr[TOPO_ADDR_MAX];        /* that master, announced "host:port" */
};

struct topology {
    int nnodes;                      /* masters that own at least one slot */
    struct topology_node *nodes;
    int16_t slot_node[SLOT_COUNT];   /* index into nodes, -1 when unowned */
    int covered;                     /* slots owned */
    uint64_t version;
    int refs;                        /* atomic */
    int ndropped;                    /* masters left out: their address does not
                                      * resolve (their slots stay unowned) */
    char dropped_why[300];           /* the first one's reason */
    struct topology_server server;
    const struct learned_set *learned;   /* what the cluster knows beyond the built-in
                                            table (learned.h; proxy/ops/servers.h), or NULL */
};

/* "7.2.4" against "7.10.0", number by number (what follows a number
 * other than a dot, "-rc1", ends the comparison there): <0, 0, >0. */
int topology_version_cmp(const char *a, const char *b);

/* Whether s is server name ("redis", "valkey") of version or later. */
int topology_server_since(const struct topology_server *s, const char *name,
                          const char *version);

/* Where to look and how to log in; address_map pairs are announced -> target. */
struct topology_source {
    const char *const *seeds;
    int nseeds;
    const char *const *map_from;
    const char *const *map_to;
    int nmap;
    const char *user;                /* may be NULL */
    const char *password;            /* may be NULL: no AUTH */
    int connect_timeout_ms;
    int timeout_ms;
    struct ssl_ctx_st *tls;          /* NULL: plain TCP (lib/net/tls.h) */
    const char *tls_server_name;     /* NULL: verify the address's host */
    int tls_insecure;
};

/*
 * Ask every address at once (`extra`, then the seeds; each on a thread of
 * its own) for CLUSTER SLOTS: the first complete map (every slot served by
 * a node whose name resolves) wins, so a frozen node costs nothing while
 * another answers; when no answer is complete, the one that covers the
 * most slots, once every ask is done. Returns a new topology with one
 * reference, or NULL with a one-line reason in err (what each address
 * said, in their order) once every ask has failed. Blocking: call from the
 * control thread only.
 */
struct topology *topology_fetch(const struct topology_source *src,
                                const char *const *extra, int nextra,
                                char *err, size_t errlen);

/*
 * A blocking connection (cluster/syncconn.h: plain or TLS as src says) to
 * addr ("host:port"), logged in as src says, with src's timeouts: for the
 * control thread's own questions to a node (topology_fetch, the layout
 * marker check). NULL with a reason in why (never the password). Ask with
 * syncconn_command, free with syncconn_close.
 */
struct syncconn;
struct syncconn *topology_dial(const struct topology_source *src, const char *addr,
                               char *why, size_t whylen);

/* A map of no master and no slot, with one reference (what the proxy
 * serves until the cluster first answers), or NULL out of memory. */
struct topology *topology_empty(void);

struct topology *topology_ref(struct topology *t);
void topology_unref(struct topology *t);

/* Index of the node announced as addr ("host:port", an IPv6 host in brackets
 * as reply_classify writes a redirect's), or -1. */
int topology_find(const struct topology *t, const char *addr);

#endif
