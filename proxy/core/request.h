/*
 * request: one command of one client, from parse to reply.
 *
 *   client queue (arrival order)      node FIFOs (per master)
 *   ┌────┐  ┌────┐  ┌────┐
 *   │ r1 │─►│ r2 │─►│ r3 │           r1 ─► node A   r3 ─► node B
 *   └────┘  └────┘  └────┘           r2 answered locally
 *     head: written to the client as soon as it is done;
 *     a later one that finishes first keeps its reply until it is the head.
 *
 * A command split by slot (MGET, DEL, ...) or sent to every master (DBSIZE,
 * KEYS, ...) is a parent in the client queue whose parts go to the nodes;
 * the parent is done when every part is, and merges their replies.
 *
 * Requests come from a per-worker free list: steady-state traffic allocates
 * nothing. A command of up to REQUEST_INLINE_BYTES bytes and
 * REQUEST_INLINE_ARGS arguments lives inside the request itself, and so
 * does a small reply that must wait for its turn (the command's bytes are
 * no longer needed once its reply is in).
 */
#ifndef TAGPROXY_REQUEST_H
#define TAGPROXY_REQUEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "cluster/node.h"
#include "lib/proto/command.h"
#include "proxy/core/route.h"
#include "lib/proto/resp.h"

struct client;
struct command;
struct merge;
struct worker;
struct evbuffer;
struct reply_scanner;
struct ack_group;

#define REQUEST_INLINE_BYTES 224
#define REQUEST_INLINE_ARGS  8
#define REQUEST_CACHED_KEYS  8

/*
 * How a command family handles the node's answers to a request it planned
 * (r->hooks; NULL: the router's handling alone). Any member may be NULL.
 */
struct request_hooks {
    /* r's reply, before the router's handling (redirects, NOSCRIPT, key
     * names): 1 when the family took it (taken or dropped from the view). */
    int (*reply)(struct request *r, struct node_conn *from, const struct reply_view *v,
                 const struct reply_scanner *s);
    /* a reply the node sends ahead of r's own (r->block_parts of them) */
    void (*extra)(struct request *r, const struct reply_scanner *s);
    /* r's connection failed: 1 when the family answered r */
    int (*fail)(struct request *r, int may_have_run);
};

struct request {
    struct node_req nreq;           /* what a node connection sees */
    TAILQ_ENTRY(request) link;      /* in the client's queue */
    struct worker *worker;
    struct client *client;          /* the client it answers (parts: NULL) */
    const struct command *cmd;

    char *data;                     /* the command's bytes as sent to a node */
    size_t len;
    struct resp_arg *args;          /* argument offsets within data */
    int argc;

    struct evbuffer *reply;         /* reply kept until it is the head's turn */
    size_t inline_reply_len;        /* or, when small, kept in inline_data */
    unsigned done : 1;
    unsigned detached : 1;          /* not in its client's queue: its reply stays in
                                       r->reply for whoever made it (tx.h) */
    unsigned asking : 1;            /* next send follows an ASK redirect */
    unsigned releasing : 1;         /* being sent from its client's held list */
    unsigned evalsha : 1;           /* EVALSHA/EVALSHA_RO sha ...: its body is loaded
                                       first on a connection that has not seen it */
    unsigned conn_kind : 2;         /* 0: the worker's shared connection to the
                                       node; else the connection family registered
                                       with the router (router.h) chooses it, as
                                       this value says (tx.h) */
    unsigned rewritten : 1;         /* its keys have their cluster names */
    unsigned acl_passed : 1;        /* its user's rules allowed it (router.c) */
    unsigned error_reply : 1;       /* its reply, already in the client's output, is an
                                       error (counted in errorstats then) */
    unsigned silent : 1;            /* CLIENT REPLY OFF or SKIP: its reply is dropped */
    unsigned watched : 1;           /* the router's watcher saw it (router.h) */
    unsigned reply_mode_taken : 1;  /* silent is set (client_reply_mode_take) */
    unsigned resp3 : 1;             /* its client spoke RESP3 as it started to run
                                       (client_reply_mode_take; request_resp) */
    uint64_t start_us;              /* read from its client (io_loop_now_us), for latency */
    uint64_t seq;                   /* its (or its parent's) place in the client's order */
    TAILQ_ENTRY(request) hold_link; /* in its client's held list */
    size_t footprint;               /* bytes counted in its client's backlog (client.h) */
    int slot;                       /* -1: any master */
    int fixed_node;                 /* fan-out part: this master, else -1 */
    int ask_node;
    int redirects;
    int retries;
    int noscript_retries;           /* EVALSHA bodies loaded after NOSCRIPT */
    int block_parts;                /* replies the node sends before its own
                                       (a MULTI block's, before EXEC's) */
    unsigned block_writes : 1;      /* and a command of that block may write */
    const struct request_hooks *hooks;  /* its family's reply handling, or NULL */
    struct userconn *as_user;       /* a restricted user's script: it goes on this
                                       node user's connections (userconn.h), not
                                       the shared ones */
    void (*on_done)(struct request *r); /* set: another request waits for r, and
                                       this is called as r is done, instead of
                                       its reply going to its client */
    struct request *waiter;         /* that request (on_done's) */
    struct ack_group *ack;          /* a write's replicas to wait for (acks.h) */
    TAILQ_ENTRY(request) ack_link;  /* in that group's held list */
    unsigned route_kind : 2;        /* its client's count it is in (acks.h) */
    unsigned readfrom_kind : 2;     /* and for read-from (readfrom.h) */
    unsigned no_replica : 1;        /* a replica sent it back: the master's */
    unsigned script_out : 1;        /* a script of its is at a node (request_script_sent) */
    uint64_t script_sent_ms;        /* since when (node_now_ms) */
    TAILQ_ENTRY(request) script_link;   /* on its worker's scripts_out */
    unsigned char marks;            /* families' bits on it (request_mark_register) */
    const struct request_family *family;    /* whose family_state it holds */
    void *family_state;             /* a command family's state (request_family_set) */

    /* split and fan-out */
    struct request *parent;
    struct request **parts;
    int nparts, parts_left;
    const struct merge *merge;      /* how its parts' replies combine (merge.h) */
    int *positions;                 /* part: indexes of its keys in the parent's */
    int npositions;

    /* Its key positions (request_keys), kept because the rewrite, the
     * router and the index all need them and command_keys costs as much as
     * the rest of a GET's routing: keys_cmd is the command they were found
     * for, NULL until found and whenever the command's bytes change. */
    const struct command *keys_cmd;
    int nkeys;

    struct request *next_free;
    char inline_data[REQUEST_INLINE_BYTES];
    struct resp_arg inline_args[REQUEST_INLINE_ARGS];
    int cached_keys[REQUEST_CACHED_KEYS];   /* not cleared by request_new */
};

TAILQ_HEAD(request_queue, request);

/* The request r is part of (its parent), or r itself. */
static inline const struct request *request_top(const struct request *r)
{
    return r->parent ? r->parent : r;
}

/* The client r answers: its own, or its parent's for a part. */
static inline struct client *request_owner(const struct request *r)
{
    return r->parent ? r->parent->client : r->client;
}

/* Whether r may write: a write command, a script or function that is not
 * _RO, or a transaction block that holds one of them (parts have their
 * parent's command). */
static inline int request_may_write(const struct request *r)
{
    const struct command *cmd = request_top(r)->cmd;
    if (r->block_parts > 0)
        return r->block_writes;
    return cmd && command_may_write(cmd);
}

/* From the worker's free list; NULL when out of memory. */
struct request *request_new(struct worker *w);

/* The bytes r holds for its command: the request itself and the command's
 * bytes and argument offsets where they did not fit inline. */
size_t request_footprint(const struct request *r);

/* Copy a command's bytes and argument offsets into r (inline when small),
 * in place of the command r held, whose storage r frees: bytes must not
 * point into it (request_rebuild's case). 0, or -1 out of memory with r
 * unchanged; the same for request_build. */
int request_set_command(struct request *r, const char *bytes, size_t len,
                        const struct resp_arg *args, int argc);

/* Build a multibulk command from argv into r (for parts and fan-outs). */
int request_build(struct request *r, int argc, const char *const *argv, const size_t *lens);

/* Replace r's command by one built from argv, which may point into r's own
 * bytes. 0, or -1 when out of memory (r unchanged). */
int request_rebuild(struct request *r, int argc, const char *const *argv, const size_t *lens);

/* command_keys(cmd, r's command, keys, max), found once per command and
 * then copied: the same result, for callers that each need the keys. By
 * the cluster's key specs where they differ from cmd's (learned.h). */
int request_keys(struct request *r, const struct command *cmd, int *keys, int max);

/* Put r into q (linked by hold_link) in the order its client sent them
 * (by seq): the held and parked lists, which must send in that order. */
void request_queue_insert(struct request_queue *q, struct request *r);

/* The index of the timeout after XREAD's or XREADGROUP's BLOCK (before
 * STREAMS), or -1 when r has none: it does not block. */
int request_block_arg(const struct request *r);

/* All of r's keys (of r->cmd): in some when they fit, else in *keys, to be
 * freed by the caller when it is not some (the first 16 only when out of
 * memory). Returns how many; none for a malformed command. */
int request_keys_all(struct request *r, int some[16], int **keys);

/* The same by cmd (a part's: its parent's command); *partial says that
 * memory ran out and only the first 16 are given. */
int request_keys_of(struct request *r, const struct command *cmd, int some[16], int **keys,
                    int *partial);

/* A parent has sent all its parts (it counts one extra until then, so a part
 * that fails at once cannot finish it early). */
void request_parts_sent(struct request *parent);

/* r, which runs a script, went to a node at now_ms (node_now_ms), or came
 * back: its worker lists the scripts at nodes, oldest first, so that PING
 * can tell whether one runs long enough to keep its master busy (local.c).
 * A request sent again (a redirect, a retry) has come back first: its time
 * starts anew. */
void request_script_sent(struct request *r, uint64_t now_ms);
void request_script_back(struct request *r);

/* When the oldest script any worker of w's proxy has at a node was sent
 * (node_now_ms), 0 if none: for any thread. */
uint64_t request_oldest_script_ms(const struct worker *w);

/*
 * State a command family hangs on a request (an EXEC's transaction, a
 * listing's walk, an internal request's owner): one family per request,
 * which names how the state is freed with the request.
 */
struct request_family {
    void (*freed)(struct request *r, void *state);
};

/* A bit of request.marks for a family to set on requests (one it watches
 * as they go out: router_register_sending). Before any worker starts. */
unsigned char request_mark_register(void);

/* r's state of family f, or NULL when f has hung none on r. */
static inline void *request_family_state(const struct request *r, const struct request_family *f)
{
    return r->family == f ? r->family_state : NULL;
}

/* Hang state on r for f (r holds no other family's state), or take it off
 * (NULL) without freeing it. */
void request_family_set(struct request *r, const struct request_family *f, void *state);

/* Back to the free list (parts and timers included). */
void request_free(struct request *r);

/* The request whose node_req nr is. */
static inline struct request *request_of(struct node_req *nr)
{
    return (struct request *)((char *)nr - offsetof(struct request, nreq));
}

/* Argument i as pointer/length. */
static inline const char *request_arg(const struct request *r, int i, size_t *len)
{
    *len = r->args[i].len;
    return r->data + r->args[i].off;
}

/* r's arguments as pointer and length arrays, for a command rebuilt with a
 * variable number of them: one heap block of argc entries each (argc is
 * already held in r->args, so this is bounded by what the client was allowed
 * to send), never the stack. Returns the argv array, which the caller frees
 * (lens lies in the same block); NULL when out of memory. */
const char **request_argv_new(const struct request *r, size_t **lens);

/* The protocol r is answered in: its client's as r started to run, once
 * the commands before it had (a part: its parent's), whatever HELLO the
 * client sends later. */
static inline enum resp_proto request_resp(const struct request *r)
{
    return (r->parent ? r->parent->resp3 : r->resp3) ? RESP3 : RESP2;
}

/* The buffer a locally built reply goes into (created on first use). */
struct evbuffer *request_reply_buffer(struct request *r);

static inline struct evbuffer *request_out(struct request *r)
{
    return request_reply_buffer(r);
}

/* Whether argument i is word, ignoring case. */
int request_arg_is(const struct request *r, int i, const char *word);

/* Argument i as a whole decimal number: 0, or -1. */
int request_arg_ll(const struct request *r, int i, long long *v);

/* Is argument i of r one Redis shows as "(redacted)" in MONITOR and
 * SLOWLOG: AUTH's, HELLO's AUTH user and password, MIGRATE's AUTH password
 * and AUTH2 user and password? */
int request_arg_redacted(const struct request *r, int i);

/* Argument i, as a bulk string, into r's reply. */
void request_reply_arg(struct request *r, int i);

/* r's reply is complete in request_reply_buffer(): hand it on. */
void request_finish(struct request *r);

/* A node's reply is r's (taken from the view, reply.h). */
void request_deliver(struct request *r, const struct reply_view *v);

/* The same for a reply the proxy wrote: len bytes at bytes (copied). */
void request_deliver_bytes(struct request *r, const char *bytes, size_t len);

/* Whether r has heard from a node: it is done, a node answered it, or one
 * of its parts is done or answered. */
int request_heard(const struct request *r);

/* Whether r (or a part of it) went to a node, or is done: a node may have
 * run it (or refused it: a login the node refused counts too). */
int request_sent(const struct request *r);

/*
 * Where a finished request's reply goes: to its client, in the order the
 * client sent its commands (client.c registers it, client_init). deliver_now:
 * r is what its client waits for next: its reply goes straight to the
 * client's output (1), or 0 when it cannot (the client is gone); finished:
 * r's reply is complete in r (client_flush writes what is due). Before any
 * worker starts.
 */
struct request_sink {
    int (*deliver_now)(struct request *r, const struct reply_view *v);
    void (*finished)(struct request *r);
    /* r's reply is complete, its command still at hand (the slow log) */
    void (*answered)(struct request *r);
};
void request_sink_register(const struct request_sink *s);

/* How a parent's parts' replies are combined once all have answered
 * (merge.h: merge_replies). Before any worker starts. */
void request_merge_register(void (*combine)(struct request *parent));

/* A finished request with an ack group (acks.h) is handed to hold first:
 * 1 when it keeps r (not done) until it calls request_release(r), 0 when r
 * goes on. Before any worker starts. */
void request_hold_register(int (*hold)(struct request *r));

/* r, held, goes on as finished. */
void request_release(struct request *r);

/* The bytes of r's kept reply. */
size_t request_reply_bytes(const struct request *r);

/* Whether r's kept reply (held: not yet delivered) is an error. */
int request_reply_is_error(const struct request *r);

/* r's kept reply becomes len bytes at bytes (a whole RESP reply). */
void request_reply_replace(struct request *r, const char *bytes, size_t len);

/* Reply with an error line (without '-' and CRLF; CR and LF in it become
 * blanks, as Redis does) and finish. */
void request_fail(struct request *r, const char *msg);

#endif
