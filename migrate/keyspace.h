/*
 * keyspace: the keys behind a redis:// URL, for the migration tool: one
 * server, or every master of a cluster (the URL names any of its nodes),
 * each on a blocking connection (cluster/syncconn.h, plain or TLS) logged
 * in as the URL says.
 *
 *   keyspace_open(URL) ──INFO cluster──► one node
 *                                   └──► CLUSTER SLOTS: a connection per master
 *   keyspace_scan(node, MATCH P:*) ──► batches of names, until the cursor is 0
 */
#ifndef TAGPROXY_KEYSPACE_H
#define TAGPROXY_KEYSPACE_H

#include <stddef.h>

#include "lib/base/url.h"

struct syncconn;
struct ssl_ctx_st;

#define KEYSPACE_NODES_MAX 64
#define KEYSPACE_ADDR_MAX 280

/* TLS files for rediss:// URLs (each may be NULL: the system's CAs, no
 * client certificate). */
struct keyspace_tls {
    const char *ca_cert_file, *cert_file, *key_file;
    const char *server_name;        /* NULL: each node's host */
    int insecure;
};

struct keyspace {
    struct redis_url url;
    int cluster;                    /* a cluster: nodes are its masters */
    int nnodes;
    struct syncconn *node[KEYSPACE_NODES_MAX];
    char addr[KEYSPACE_NODES_MAX][KEYSPACE_ADDR_MAX];
    short slot_node[16384];         /* a cluster's: the node serving each slot, -1 none */
    struct ssl_ctx_st *tls;         /* owned, for rediss:// */
    const struct keyspace_tls *tls_opts;
};

/* Connect to what url names. 0, or -1 with the reason in err (never the
 * password); keyspace_close either way. */
int keyspace_open(struct keyspace *ks, const char *url, const struct keyspace_tls *tls,
                  char *err, size_t errlen);
void keyspace_close(struct keyspace *ks);

/* The names one SCAN step gave, copied (NUL-terminated). */
struct keyspace_batch {
    char **name;
    size_t *len;
    size_t n, cap;
};

/* One SCAN step on node i: b holds the names matching match (its earlier
 * names freed); returns the next cursor (0: the node is done), or -1 with
 * err. */
long long keyspace_scan(struct keyspace *ks, int i, long long cursor, const char *match,
                        struct keyspace_batch *b, char *err, size_t errlen);
void keyspace_batch_free(struct keyspace_batch *b);

/* The node that serves name (one server: 0; a slot no master serves: -1). */
int keyspace_node_of(const struct keyspace *ks, const char *name, size_t len);

/* A SCAN MATCH pattern for the names under prefix P ("P:*", with P's glob
 * characters escaped). */
void keyspace_prefix_match(const char *prefix, char *out, size_t size);

#endif
