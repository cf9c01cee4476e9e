/*
 * lane: the order of a client's requests across connections. See lane.h.
 */
#include "proxy/families/lane.h"

#include <event2/event.h>

#include "proxy/core/client.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"

void lanes_init(struct lanes *l, struct client *c)
{
    l->client = c;
    l->lane = NULL;
    l->resp = RESP2;
    TAILQ_INIT(&l->parked);
    l->releasing = NULL;
    l->release_event = NULL;
}

void lanes_free(struct lanes *l)
{
    if (l->release_event)
        event_free(l->release_event);
    l->release_event = NULL;
}

int lane_ready(struct lanes *l, struct request *r, const void *lane)
{
    enum resp_proto resp = request_resp(r);
    if ((lane != LANE_NEW && lane == l->lane && resp == l->resp) ||
        TAILQ_FIRST(&r->client->queue) == r) {
        l->resp = resp;         /* the caller sets l->lane as r goes out */
        return 1;
    }
    request_queue_insert(&l->parked, r);
    return 0;
}

int lane_hold_if_parked(struct lanes *l, struct request *r)
{
    if (TAILQ_EMPTY(&l->parked) || l->releasing == r)
        return 0;
    request_queue_insert(&l->parked, r);
    return 1;
}

struct request *lane_first_parked(const struct lanes *l)
{
    return TAILQ_FIRST(&l->parked);
}

static void release_cb(evutil_socket_t fd, short what, void *arg)
{
    struct lanes *l = arg;
    struct client *c = l->client;
    struct request *r;
    (void)fd;
    (void)what;
    while (c->state == CLIENT_ACTIVE && (r = TAILQ_FIRST(&l->parked)) != NULL) {
        TAILQ_REMOVE(&l->parked, r, hold_link);
        l->releasing = r;
        router_dispatch(r);
        l->releasing = NULL;
        if (TAILQ_FIRST(&l->parked) == r)
            break;              /* it waits again: the rest stay behind it */
    }
    if (c->state != CLIENT_CLOSING)
        return;
    /* A released QUIT (or a protocol error) closes the client once answered:
     * as Redis reads nothing after it, what it parked behind never runs. */
    while ((r = TAILQ_FIRST(&l->parked)) != NULL) {
        TAILQ_REMOVE(&l->parked, r, hold_link);
        client_unqueue(c, r);
    }
    client_flush(c);            /* closes it once what is owed is written */
}

void lane_release_soon(struct lanes *l)
{
    struct client *c = l->client;
    struct request *first = TAILQ_FIRST(&l->parked);
    if (!first || TAILQ_FIRST(&c->queue) != first || l->releasing)
        return;
    if (!l->release_event)
        l->release_event = event_new(c->worker->base, -1, 0, release_cb, l);
    if (l->release_event)
        event_active(l->release_event, EV_TIMEOUT, 1);
}

void lane_fail_parked(struct lanes *l, const char *msg)
{
    struct request *r;
    while ((r = TAILQ_FIRST(&l->parked)) != NULL) {
        TAILQ_REMOVE(&l->parked, r, hold_link);
        request_fail(r, msg);
    }
}
