/*
 * userconn: a worker's node connections logged in as the node user of a
 * restricted client user (acl.h), where that user's scripts run, so that a
 * script's calls have the user's rights on the node and no more.
 *
 * One entry per node user, made on the first script of a user with those
 * rules, with a connection per master and protocol made on demand (node.h:
 * opened as cluster-user, ACL SETUSER of the node user, then AUTH as it;
 * nothing is written before that AUTH holds). An entry lives as long as
 * its worker, so a request may keep a pointer to it across retries; its
 * connections are retired when the topology changes and made again.
 */
#ifndef TAGPROXY_USERCONN_H
#define TAGPROXY_USERCONN_H

#include "lib/proto/resp.h"

struct acl_user;
struct node_conn;
struct node_opts;
struct worker;
struct userconn;

/* Distinct node users a worker keeps connections for. */
#define USERCONN_MAX 64

/* The entry of u's node user on w, made on first use; NULL when out of
 * memory or USERCONN_MAX are in use (why says which). */
struct userconn *userconn_of(struct worker *w, const struct acl_user *u, const char **why);

/* uc's connection to master `node` that speaks proto, made on demand; NULL
 * when it cannot be had now (as worker_conn). */
struct node_conn *userconn_conn(struct userconn *uc, int node, enum resp_proto proto);

/* How uc's connections that speak proto log in (node.h), for a connection
 * made elsewhere that is to run as uc's node user (node_conn_login_as). */
const struct node_opts *userconn_opts(const struct userconn *uc, enum resp_proto proto);

/* w took a new topology: every connection of every entry is retired. */
void userconn_topology(struct worker *w);

/* w took a new config: new connections log in with its cluster-user. */
void userconn_config(struct worker *w);

#endif
