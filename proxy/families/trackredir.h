/*
 * trackredir: the invalidations of a tracking client that redirects them
 * (CLIENT TRACKING ON REDIRECT id), delivered to the client `id`, on
 * whichever worker it is, as Redis's sendTrackingMessage writes them: a
 * RESP3 push ">2 invalidate <keys>" to a RESP3 client, a pub/sub message
 * on __redis__:invalidate to a RESP2 client in subscribed mode, nothing to
 * a RESP2 client that is not. The keys come written (an array, or for
 * "every key" a null in the tracking client's protocol, as Redis writes
 * it).
 *
 * Another worker's client gets the message through that worker's inbox
 * (bounded: past TRACKREDIR_INBOX_MAX the messages are dropped, and every
 * client there that could be a target is told to flush everything). A
 * target that is gone is reported back to the tracking client's worker,
 * whose broken callback (tracking.c) flags the redirect broken and tells
 * the tracking client, as Redis does.
 */
#ifndef TAGPROXY_TRACKREDIR_H
#define TAGPROXY_TRACKREDIR_H

#include <stddef.h>
#include <stdint.h>

#include "lib/proto/resp.h"

struct client;
struct worker;

/* Bytes of messages one worker's inbox holds at most. */
#define TRACKREDIR_INBOX_MAX (16u * 1024 * 1024)

/* Register the inbox on every worker; broken is called on the tracking
 * client's worker when its target `redirect` is gone. Before any worker
 * starts. */
void trackredir_register(void (*broken)(struct worker *w, uint64_t from, uint64_t redirect));

/* From tracking client `from` of w: the invalidation of keys[0..len) (a
 * RESP array of the keys' names, or a null) for client `to`, on worker
 * to_worker. */
void trackredir_send(struct worker *w, uint64_t from, uint64_t to, int to_worker,
                     const char *keys, size_t len);

/* c, on its own worker, is going: no message is delivered to it. */
void trackredir_client_gone(struct client *c);

#endif
