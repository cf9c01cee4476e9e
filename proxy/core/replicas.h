/*
 * replicas: a worker's connections to the replicas of its masters, and how
 * far behind each replica is, for read-from (readfrom.h).
 *
 * A replica connection logs in as the shared ones do, then sends READONLY,
 * so that the replica serves reads of its master's slots. Made on demand,
 * like the shared ones; a topology that changes closes them (their replies
 * still arrive).
 *
 * How fresh a replica is: while read-from is not master, every
 * REPLICAS_POLL_MS the worker asks each master that has replicas, and each
 * of those replicas, for INFO replication (on its RESP2 connections). A
 * master's answer is a sample: when the question was sent, and its
 * master_repl_offset, which is at least the offset the master had then. A
 * replica's answer (the offset it has processed, its link to its master
 * up) makes it fresh as of the newest sample of its master whose offset it
 * has reached: it holds every write its master had answered by that time.
 * A replica that falls behind stays fresh as of an older time, and so
 * takes fewer reads (readfrom.h); one that leaves a poll unanswered for
 * three poll intervals takes none until it answers. Nothing here is on a
 * request's path but a look at the worker's own arrays.
 */
#ifndef TAGPROXY_REPLICAS_H
#define TAGPROXY_REPLICAS_H

#include <stdint.h>

#include "lib/proto/resp.h"

struct node_conn;
struct worker;

#define REPLICAS_POLL_MS 100

/*
 * A connection that speaks proto to a replica of master `node` of w's
 * topology that holds every write its master had answered at after_ms,
 * and was fresh at most max_lag_ms ago (now_ms): the next such replica
 * after the last one handed out, so that reads spread over them. NULL:
 * none (or none connected yet). The first call starts the polling.
 */
struct node_conn *replicas_conn(struct worker *w, int node, enum resp_proto proto,
                                uint64_t after_ms, uint64_t now_ms, uint64_t max_lag_ms);

/* Whether every replica of master `node` (that resolves) has answered a
 * poll: what replicas_conn says of it is known, not yet to be learned. */
int replicas_known(struct worker *w, int node);

#endif
