/*
 * client: one connection from a bot.
 *
 * It reads bytes, cuts them into commands with the RESP parser, hands each to
 * the router in arrival order, and writes replies strictly in that order
 * (request.h). Its memory is bounded: one command at most
 * client-query-buffer-limit bytes, and the bytes held for it (queued commands
 * and replies not yet read) at most client-output-buffer-limit, past which
 * the client is disconnected as Redis does.
 */
#ifndef TAGPROXY_CLIENT_H
#define TAGPROXY_CLIENT_H

#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>

#include "proxy/core/request.h"
#include "lib/proto/resp.h"

#include "lib/net/io.h"

struct worker;
struct proxy;
struct acl_user;
struct config_snapshot;
struct event;
struct tx_state;
struct route;

/* Why another thread marked a client for closing (kill_pending). */
enum client_kill {
    CLIENT_KILL_NONE,
    CLIENT_KILL_COMMAND,    /* CLIENT KILL */
    CLIENT_KILL_EVICT,      /* maxmemory-clients (client_mem_update) */
    CLIENT_KILL_USER        /* its user was removed or turned off (client_users_reloaded) */
};

#define CLIENT_FAMILIES_MAX 8

enum client_state {
    CLIENT_ACTIVE,      /* reading and answering */
    CLIENT_CLOSING,     /* no more reading: close once owed replies are written */
    CLIENT_GONE         /* socket closed; freed when its last request ends */
};

#define CLIENT_WROTE_BUCKETS 16

struct client {
    TAILQ_ENTRY(client) link;       /* in the worker's client list */
    TAILQ_ENTRY(client) paused_link;/* in the worker's paused list */
    struct node_conn *paused_on;    /* not read until this node catches up */
    struct worker *worker;
    struct io_conn io;
    enum client_state state;
    uint64_t id;
    char addr[112];                 /* peer "ip:port"; "path:0" on the unixsocket,
                                     * as Redis says it (sun_path is 108 bytes) */
    char laddr[112];                /* local "ip:port" it connected to */
    unsigned char unix_socket;      /* came in on the unixsocket: flag U */
    char *name;                     /* CLIENT SETNAME */
    char *lib_name, *lib_ver;       /* CLIENT SETINFO (Redis 7.2) */
    const char *lastcmd;            /* fullname of the last command, static */
    uint64_t commands;              /* read from it (relaxed atomic: CLIENT LIST) */
    time_t created, last_active;
    int authenticated;
    enum resp_proto resp;           /* HELLO's protocol: RESP2 until HELLO 3 */
    unsigned char kill_pending;     /* enum client_kill: close it on its worker
                                     * (under its worker's clients_lock) */
    unsigned char no_evict;         /* CLIENT NO-EVICT ON: maxmemory-clients spares it */
    unsigned char evicted;          /* closed for maxmemory-clients */
    unsigned char backlog_full;     /* not read until its backlog drains (below) */
    size_t backlog;                 /* bytes its commands read and not yet answered
                                     * hold (request_footprint): past
                                     * client-backlog-limit it is not read until they
                                     * drain to half of it (TCP backpressure) */
    size_t mem;                     /* what it holds, as last counted (client_mem_update;
                                     * read by other workers: atomic) */
    unsigned char reply_off;        /* CLIENT REPLY OFF: no reply until ON */
    unsigned char reply_skip_next;  /* CLIENT REPLY SKIP: none for the next command */
    const struct acl_user *user;    /* who it runs as (acl.h), in user_snap's ACL */
    struct config_snapshot *user_snap;  /* a reference: keeps user alive */
    struct resp_parser parser;
    struct request_queue queue;
    int nqueued;
    size_t held;                    /* bytes of finished replies waiting for their turn */
    uint64_t output_waits_since;    /* 1 + the io round its unwritten output began
                                       waiting in (client_flush); 0: none waits */
    struct request_queue held_back; /* retries, writes parked behind reads, what
                                       waits for a script's confirmation, and
                                       what follows them, in order */
    struct event *retry_timer;      /* sends held_back when the backoff ends */
    int confirming;                 /* how many of its scripts have a redirect-like
                                       error being confirmed: meanwhile its
                                       requests are held back (router_release_held) */
    uint64_t next_seq;
    time_t soft_limit_since;        /* 0: output under the soft limit */
    void *family[CLIENT_FAMILIES_MAX];  /* each family's state, by the id its
                                     * registration gave (client_family_state),
                                     * NULL until it has one */
    unsigned family_held;           /* bit id: family id holds state */
    uint64_t written_masters;       /* masters it may have written to since its last
                                     * WAIT (wait.h): client_master_bit's */
    int on_reads_conns;             /* its requests on their way on shared connections, */
    int on_writes_conns;            /* and on replica-acks' writes connections (acks.h) */
    unsigned char acks_parked;      /* a write of its waits for its reads (acks.h,
                                       readfrom.h) */
    int on_masters;                 /* its requests on their way to masters, and */
    int on_replicas;                /* its reads on replicas (readfrom.h) */
    uint64_t wrote_ms[CLIENT_WROTE_BUCKETS];    /* when its last write to each bucket
                                       of slots (slot % buckets) was answered (readfrom.h) */
    unsigned char replica;          /* it acts as a replica (MONITOR), as in Redis:
                                     * never idle, no keyspace commands */
};

/* Bit of master `node` in client->written_masters; the last bit stands for
 * every master from its index on (the set stays one word). */
#define CLIENT_MASTER_BITS 64
static inline uint64_t client_master_bit(int node)
{
    return (uint64_t)1 << (node < CLIENT_MASTER_BITS - 1 ? node : CLIENT_MASTER_BITS - 1);
}

/* Before any worker starts: the client hands each command it reads to run
 * (router_dispatch), and takes its requests' replies (request.h). */
void client_init(void (*run)(struct request *r));

/* Take over an accepted socket: the new client, or NULL when it was refused
 * (max-clients) or could not be set up (the socket is closed then). */
struct client *client_accept(struct worker *w, int fd, const struct sockaddr *sa, int salen);

/* From any thread: p's live client whose CLIENT ID is id, on any worker,
 * handed to fn (NULL: none) under its worker's clients_lock; the index of
 * its worker, or -1 when there is no such client. */
int client_with_id(struct proxy *p, uint64_t id, void (*fn)(struct client *c, void *arg),
                   void *arg);

/* Close w's clients idle longer than its config's timeout (none when 0),
 * as Redis does: each second, on w's thread. */
void client_close_idle(struct worker *w, time_t now);

/* The client accepted on tls-listen speaks TLS with ctx (an SSL_CTX). A
 * client that cannot is closed. */
void client_start_tls(struct client *c, struct ssl_ctx_st *ctx);

/* Write every finished reply at the head of the queue. */
void client_flush(struct client *c);
/* Take r, which never ran and never will, out of c's queue and free it. */
void client_unqueue(struct client *c, struct request *r);

/*
 * r, about to run, answers as CLIENT REPLY left c: nothing while OFF,
 * nothing for the one command after SKIP (in Redis a protocol error counts
 * as that command too); and in the protocol HELLO or RESET left c in.
 * Called once r's predecessors have run (the router
 * calls it past a transaction's parked commands); later calls do nothing.
 */
void client_reply_mode_take(struct client *c, struct request *r);

/* Output no command of c's asked for (a pub/sub message, a MONITOR line):
 * written at once when c owes nothing, else after the last reply it has
 * ready (none ready: after all it owes, so a subscriber's confirmation comes
 * first); before_parked: in any case before the commands that wait their
 * turn to run (tx.h), as a server would write it before it reads them.
 * The output is taken from the view (reply.h). */
void client_push(struct client *c, const struct reply_view *v, int before_parked);

/* client_push, but before the reply of before, a request of c's not done
 * yet (a subscriber command whose confirmation its node has not sent);
 * NULL, or a request already done: as client_push. */
void client_push_before(struct client *c, struct request *before, const struct reply_view *v);

/* Output a node pushed on a connection ahead of replies still to come
 * there (a tracking invalidation): written before every request of c's no
 * node has answered any of yet, as one server writes it before the replies
 * of the commands it runs after, and after the rest. */
void client_push_ahead(struct client *c, const struct reply_view *v);

/* client_push, right after the reply of after, a request in c's queue (a
 * push that must follow what after's reply says, whether or not other
 * replies are ready before it). */
void client_push_after(struct client *c, struct request *after, const struct reply_view *v);

/* client_push, after every reply c has ready and the reply of every
 * request of c's with one of marks (request.marks) that went to a node
 * (request_sent), and before the others: a push that must follow whatever
 * the nodes answer to those requests (a tracking invalidation of reads
 * that may have run untracked), whether or not those replies are ready,
 * and need not wait for other ones (a blocked command's). */
void client_push_after_sent(struct client *c, const struct reply_view *v, unsigned char marks);

/* After the replies already owed, close (QUIT, protocol errors). */
void client_close_after_replies(struct client *c);

/* c runs as u from now on; u is a user of the worker's current snapshot,
 * which c keeps (a reference) as long as it runs as u. */
void client_set_user(struct client *c, const struct acl_user *u);

/*
 * After a reload (c->user_snap is not its worker's snapshot): c runs as the
 * user of the same name in the current config, with its new rules; a login
 * stays a login, as in Redis, whatever the new password. -1 when the
 * current config has no such user (c->user unchanged).
 */
int client_user_refresh(struct client *c);

/* w took a config: its clients logged in as a user that is gone from it,
 * or off, are closed, as Redis closes them (the default user's stay). */
void client_users_reloaded(struct worker *w);

/* Close now. The struct lives until its last request ends. */
void client_close(struct client *c, const char *why);

/* The evbuffer the client's replies go to, or NULL when it is gone. */
struct evbuffer *client_output(struct client *c);

/* The output hard limit of c's class (a subscriber's: pubsub's); 0: none. */
size_t client_output_hard_limit(const struct client *c);

/* Stop reading c until node has written its backlog (backpressure). */
void client_pause_for(struct client *c, struct node_conn *node);

/* node caught up (or closed): read its paused clients again. */
void client_resume_paused(struct worker *w, struct node_conn *node);

/*
 * While its worker drains (SIGTERM): close c if it is idle, that is nothing
 * is owed to it, nothing waits to be written to it, and it has sent nothing
 * the proxy has not answered (in the proxy's input or still in the kernel's
 * socket buffer). Else nothing happens; it is checked again whenever its
 * output drains.
 */
void client_drain_check(struct client *c);

/*
 * Memory: what the proxy holds for its clients, and maxmemory-clients, as
 * Redis 7.0 defines it.
 *
 * A client's memory is everything held for it: its input buffer, its
 * commands read and not yet answered (the backlog: parked behind a blocking
 * command, a WAIT or a retry's backoff included), its MULTI block, finished
 * replies waiting for their turn, and output not yet written. The client's
 * own worker counts it (client_mem_update) whenever one of these changes and
 * keeps the sum of its clients; both are published for the other workers
 * with relaxed atomics, so counting takes no lock.
 *
 * When the sum over every worker passes maxmemory-clients, the clients
 * using the most are closed, the fewest that bring it back under the limit
 * (CLIENT NO-EVICT ON ones never), each on its own worker's thread as
 * CLIENT KILL closes them (client_close_killed); INFO's evicted_clients
 * counts them. Only this path, taken when the limit is passed, locks the
 * workers' client lists.
 */

/* Count c's memory again, and evict clients if the total passes the limit. */
void client_mem_update(struct client *c);

/* c is being freed: its memory leaves its worker's sum. */
void client_mem_forget(struct client *c);

/* The memory of c (as last counted), and of every client of the proxy. */
size_t client_mem_of(const struct client *c);
size_t client_mem_total(const struct proxy *p);

/* On w's thread: close w's clients other threads marked (kill_pending). */
void client_close_killed(struct worker *w);

/* What the families hold for a client, as CLIENT LIST shows it. */
struct client_counts {
    int sub, psub, ssub;            /* subscriptions (pubsub.h) */
    int multi;                      /* commands queued in MULTI, or -1 outside it (tx.h) */
    int watching;                   /* WATCHing keys (tx.h) */
    int watched_keys;               /* how many, each once */
    int blocked;                    /* a blocking command or a WAIT of its runs (tx.h) */
    int monitor;                    /* it monitors (monitor.h) */
    int tracking;                   /* client-side caching on (tracking.h) */
    int tracking_broken;            /* its REDIRECT's client is gone */
    int tracking_bcast;             /* in BCAST mode */
    long long tracking_redirect;    /* the client its invalidations go to, 0 itself,
                                       -1 while off */
};

/*
 * A command family's part in its clients' lives. Each family registers one
 * at start (families.c); the client calls every registered family at each
 * of these moments, in the order they registered, and a family whose state
 * a client does not hold returns at once. Any member may be NULL.
 */
struct client_family {
    int (*hold)(struct request *r);     /* r must wait for the client's earlier
                                           requests (a transaction's parked ones):
                                           1 when the family took it, before anything
                                           else looks at it */
    int (*intercept)(struct request *r);    /* a mode the family put the client in
                                           (subscribed) takes r first: 1 when it
                                           answered r, before the router plans it */
    int (*take)(struct request *r, const struct route *rt);    /* r, with its keys
                                           rewritten and rt its route, is the family's
                                           in the client's present state (queued in
                                           MULTI, pinned by WATCH): 1 when it took r */
    void (*refused)(struct client *c);  /* the router refused a command of c's */
    void (*closing)(struct client *c);  /* client_close: its socket is closed, its
                                           owed replies not yet flushed */
    void (*closed)(struct client *c);   /* client_close, after that flush */
    void (*flushed)(struct client *c);  /* a flush left it open */
    void (*unlisted)(struct client *c); /* it leaves its worker's list (under the
                                           worker's clients_lock) */
    void (*freed)(struct client *c);    /* its memory goes next */
    size_t (*held)(const struct client *c);     /* bytes it holds (maxmemory-clients) */
    int (*subscribed)(const struct client *c);  /* 1 in subscribed mode: the pubsub
                                           class's output limits, as in Redis; asked
                                           on every flush, only of a family with
                                           state on c */
    void (*count)(const struct client *c, struct client_counts *n);
    struct request *(*first_parked)(const struct client *c);    /* the first request
                                           that waits its turn to run, or NULL */
};

/* Before any worker starts: the family's id (client_family_state). */
int client_family_register(const struct client_family *f);

/* c's state of family id, or NULL. */
static inline void *client_family_state(const struct client *c, int id)
{
    return c->family[id];
}

/* c's state of family id is now state (NULL: none), under c's worker's
 * clients_lock, as CLIENT LIST reads it from any thread. */
void client_family_set(struct client *c, int id, void *state);

/* 1 when a family took r (client_family.hold, .intercept, .take); the
 * router asks at each of those points of its plan. */
int client_hold(struct request *r);
int client_intercept(struct request *r);
int client_take(struct request *r, const struct route *rt);

/* The router refused a command of c's (client_family.refused). */
void client_refused(struct client *c);

/* What the families hold for c. */
void client_counts(const struct client *c, struct client_counts *n);
size_t client_family_bytes(const struct client *c);

#endif
