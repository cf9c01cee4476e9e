/*
 * pubsub: SUBSCRIBE and friends through the proxy.
 *
 * A client's subscriptions (subscriber.h: struct pubsub, made on its first
 * subscribe): the channels, patterns and shard channels it holds, which is
 * what every confirmation's count and the subscribed-mode check (only
 * (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET) are answered from,
 * as one redis-server answers them.
 *
 * Messages come over dedicated subscriber connections (node.h's on_push):
 *
 *   channels + patterns ──► one connection to one master (spread by client
 *                           id); PUBLISH reaches it from any node, as the
 *                           cluster propagates it
 *   shard channels      ──► one connection per shard that owns their slots
 *
 *   node ── message/pmessage/smessage ──► client output (or, behind replies
 *                                         still owed, a done request in the
 *                                         client's queue), if the client
 *                                         still holds the channel/pattern
 *   node ── (un)subscribe confirmations ──► complete the client's waiting
 *                                           SUBSCRIBE, whose reply the proxy
 *                                           built with its own counts
 *
 * A SUBSCRIBE's reply goes out only once the node has confirmed it, so a
 * message published after the client saw the confirmation is delivered.
 * UNSUBSCRIBE is answered at once: messages of what the client no longer
 * holds are dropped. A connection that fails, or that does not answer its
 * keepalive PING within node-timeout-ms, is replaced: all channels and
 * patterns are subscribed again on the next master (shard channels on their
 * slot's master), after a backoff; messages published meanwhile are lost.
 * When the client's count returns to 0, or it leaves, its connections close.
 */
#ifndef TAGPROXY_PUBSUB_H
#define TAGPROXY_PUBSUB_H

struct client;
struct request;

/* Register SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, UNSUBSCRIBE, PUNSUBSCRIBE,
 * SUNSUBSCRIBE, SPUBLISH and the PUBSUB subcommands, each with its handler
 * (route.h), and the module's part in a client's life
 * (client.h: its subscriber connections close when it goes; its counts; a
 * subscribed client's commands refused or answered as Redis does in that
 * context). */
void pubsub_register(void);

/* The client's protocol changed (HELLO): its subscriber connections are
 * told, so their messages reach it in the new one. */
void pubsub_speak(struct client *c);

/* RESET: drop every subscription and connection. */
void pubsub_reset(struct client *c);

#endif
