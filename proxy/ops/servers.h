/*
 * servers: what each master of the cluster runs, from its INFO server (the
 * server's name, its version, the redis_version it writes), so that HELLO
 * and INFO through the proxy say what the cluster is and a client that
 * gates a feature on the server's version sees the truth.
 *
 * The control thread asks every master of each topology it reads (at
 * start, each topology-refresh-ms, after a MOVED): a master restarted on a
 * new build keeps its address and id, and a rolling upgrade shows within
 * a refresh. The cluster's server is the master with the lowest
 * redis_version (then the lowest own version): a feature is only as
 * available as on the oldest master. A master that does not answer keeps
 * what it said last, or is left out until it answers.
 */
#ifndef TAGPROXY_SERVERS_H
#define TAGPROXY_SERVERS_H

#include "cluster/topology.h"

/* Fill t->server from its masters (blocking: the control thread only). */
void servers_learn(const struct topology_source *src, struct topology *t);

/* A master's INFO server text into out: 0, or -1 when it has no
 * redis_version. */
int servers_parse_info(const char *text, struct topology_server *out);

/* <0, 0, >0 as a's versions are lower, equal, higher than b's. */
int servers_compare(const struct topology_server *a, const struct topology_server *b);

#endif
