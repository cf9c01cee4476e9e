/*
 * subscriber: a client's subscriptions (struct pubsub, made on its first
 * subscribe: the channels, patterns and shard channels it holds, subset.h)
 * and the subscriber connections its messages come over (pubsub.h): one
 * to a master for channels and patterns, one per shard for shard channels,
 * each with the commands waiting for the node's confirmations, a keepalive
 * PING, and resubscription after a backoff when one fails.
 */
#ifndef TAGPROXY_SUBSCRIBER_H
#define TAGPROXY_SUBSCRIBER_H

#include <stdint.h>
#include <sys/queue.h>

#include "cluster/topology.h"
#include "proxy/families/subset.h"

struct client;
struct event;
struct node_conn;
struct request;
struct worker;

/* A command sent on a subscriber connection, waiting for its confirmations
 * (one per name); then r, whose reply is built already, is finished. */
struct sub_group {                  /* a request waiting on several connections */
    struct request *r;
    int pending;                    /* waits not yet settled */
};

struct sub_wait {
    TAILQ_ENTRY(sub_wait) link;
    struct request *r;              /* NULL: nothing to answer */
    struct sub_group *group;        /* or this, shared with other waits */
    int left;
    int sunsub;                     /* confirmations are sunsubscribe */
};

struct sub_conn {
    LIST_ENTRY(sub_conn) link;      /* shard connections */
    struct pubsub *ps;
    struct node_conn *node;         /* NULL while down */
    int node_index;                 /* in the worker's topology when placed */
    char addr[TOPO_ADDR_MAX];
    int nsubs;                      /* shard: entries on it */
    int closing;                    /* being closed: no idle check */
    uint64_t ping_ms;               /* last keepalive PING sent */
    struct event *keepalive;
    TAILQ_HEAD(sub_wait_list, sub_wait) waits;
};

struct pubsub {
    struct client *client;
    struct worker *worker;
    struct sub_set channels, patterns, shard;
    /* names the client unsubscribed from whose confirmation the node has not
     * sent yet: the node still delivers their messages, published before it
     * ran the UNSUBSCRIBE, and the client gets them, as from one server */
    struct sub_set leaving_channels, leaving_patterns;
    struct sub_conn *main;          /* channels and patterns */
    LIST_HEAD(, sub_conn) shards;
    struct event *resub_timer;
    int resub_attempts;
    int gone;                       /* torn down: freed on the next round */
};

/* Before any worker starts: the id pub/sub's registration as a client
 * family gave (client.h), under which a client keeps its subscriptions. */
void subscriber_family(int id);

/* c's subscriptions, or NULL. */
struct pubsub *subscriber_of(const struct client *c);

/* c's subscriptions, made on first use (client_family_set: CLIENT LIST
 * reads them); NULL when out of memory. */
struct pubsub *subscriber_get(struct client *c);

/* Channels and patterns held: a confirmation's count. */
static inline long long subscriber_count(const struct pubsub *ps)
{
    return (long long)(ps->channels.n + ps->patterns.n);
}

/* A wait on sc for left confirmations (sunsub: of SUNSUBSCRIBE), after
 * which r, whose reply is built, is finished; NULL when out of memory. */
struct sub_wait *subscriber_wait_push(struct sub_conn *sc, struct request *r, int left,
                                      int sunsub);

/* Send VERB name... on sc; 0, or -1 when sc has no connection. */
int subscriber_send(struct sub_conn *sc, const char *verb, const char **names,
                    const size_t *lens, int n);

/* The connection for channels and patterns: made (and subscribed to
 * everything the client holds) on the master after the one it was on. */
int subscriber_main_connect(struct pubsub *ps);

/* Channels and patterns' connection, made when missing. NULL: out of memory. */
struct sub_conn *subscriber_main_get(struct pubsub *ps);

/* Channels and patterns are all gone: close their connection, answering
 * what waits on it. */
void subscriber_main_close(struct pubsub *ps);

/* Shard channels' connection to master `node`, made when missing. */
struct sub_conn *subscriber_shard_get(struct pubsub *ps, int node);

/* Close a shard connection, answering what waits on it. */
void subscriber_shard_close(struct sub_conn *sc);

/* Subscribe again what lost its connection, after a backoff. */
void subscriber_resub_schedule(struct pubsub *ps);

/* The client's protocol changed (HELLO): its connections are told. */
void subscriber_speak(struct client *c);

/* Detach c's subscriptions; nodes closed now, the rest freed on the next
 * round (a callback of one of its connections may be on the stack). */
void subscriber_teardown(struct client *c);

#endif
