/*
 * lane: the order of one client's requests across the connections they go
 * out on (tx.h, "Order"). A lane is the multiplexed connections (NULL), one
 * dedicated connection, or a restricted user's node connections, in one
 * protocol: a worker has a RESP2 and a RESP3 connection to each master, so
 * a command sent after HELLO 3, HELLO 2 or RESET changed the protocol goes
 * out on another connection than the command before it. A request whose
 * lane is not the one the client's unanswered requests are on waits
 * ("parked", with everything the client sends after it) until they are all
 * answered; then the parked requests are dispatched again, in order.
 */
#ifndef TAGPROXY_LANE_H
#define TAGPROXY_LANE_H

#include "proxy/core/request.h"

struct client;
struct event;

/* A request that needs a dedicated connection not yet taken: no lane is it. */
#define LANE_NEW ((const void *)1)

struct lanes {
    struct client *client;
    const void *lane;               /* its unanswered requests' lane */
    enum resp_proto resp;           /* and their protocol (RESP2 before any state) */
    struct request_queue parked;    /* through hold_link, in the client's order */
    struct request *releasing;      /* being dispatched out of parked */
    struct event *release_event;
};

void lanes_init(struct lanes *l, struct client *c);

/* What l holds, freed (its parked requests are the client's queue's). */
void lanes_free(struct lanes *l);

/* May r go out on lane, in its protocol (request_resp), now? When every
 * earlier request is answered (r heads its client's queue) nothing can
 * overtake it; else it is parked: 0. */
int lane_ready(struct lanes *l, struct request *r, const void *lane);

/* At the start of router_dispatch: 1 when r was parked behind the
 * client's earlier parked requests. */
int lane_hold_if_parked(struct lanes *l, struct request *r);

/* The first parked request, or NULL. */
struct request *lane_first_parked(const struct lanes *l);

/* The client's replies were written: when the first parked request now
 * heads its queue, the parked ones are dispatched again, from the event
 * loop. */
void lane_release_soon(struct lanes *l);

/* The client has gone: each parked request fails with msg. */
void lane_fail_parked(struct lanes *l, const char *msg);

#endif
