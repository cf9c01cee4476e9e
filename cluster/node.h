/*
 * node: one multiplexed, pipelined connection from a worker to a master.
 *
 *   requests of many clients ──► node_send() ──► output evbuffer ──► socket
 *                                   │
 *                          inflight FIFO (node_req)
 *                                   │
 *   socket ──► input evbuffer ──► reply_scan() ──► head of FIFO: on_reply()
 *
 * Redis answers a connection's commands in order, so the FIFO matches each
 * reply to its request. Replies are not copied here: on_reply() gets them
 * where they lie in the connection's input buffer. A reply that arrives in
 * pieces is moved into `partial` as it is scanned, so each byte is scanned
 * once whatever the reply's size and the input buffer stays small; on_reply()
 * then gets that evbuffer and must remove the reply's bytes from it.
 *
 * The timeout counts silence: a request fails when nothing has come from the
 * node for timeout_ms since it was sent or since the node last sent bytes
 * (which, replies being in order, are the oldest request's).
 *
 * Silence on one connection cannot tell a frozen node from one that holds
 * a command back: a blocking command in its own wait, a write while the
 * node pauses writes (CLIENT PAUSE; a manual failover pauses them until it
 * ends). A connection whose owner sets on_silent lets the owner ask the
 * node elsewhere: once the oldest request has been silent timeout_ms / 4,
 * and every timeout_ms / 4 after, on_silent asks (a PING on another
 * connection) and says when the node last answered there, a sign of life
 * as good as a reply on this connection. Such a connection is
 * given up on only when the node has answered nothing, on it or elsewhere,
 * for timeout_ms, whatever the request's own wait. Without on_silent a
 * request may stay silent timeout_ms beyond its own wait (wait_ms;
 * NODE_WAIT_FOREVER: no limit). TCP keepalive, at about timeout_ms, ends
 * a connection whose host is gone.
 *
 * When the connection fails or a request waits longer than timeout_ms, the
 * connection is closed and every request still in the FIFO is failed through
 * on_fail(), so a late reply can never be matched to the wrong request.
 * on_fail() says whether the request may have run: a request whose bytes
 * never left the output buffer did not run and may be retried; one that was
 * written may have run and must not be.
 *
 * Write batching (node_conn_batch, for the shared connections): at most
 * `window` batches may be written and unanswered at once. Requests sent
 * while the window is full wait in the output buffer, in order, and leave
 * together, as one write, when the oldest batch's last reply arrives. An
 * idle connection writes a request in the round it came; a busy one sends
 * the node few large batches instead of many small ones, so the node (and
 * the proxy) make one read, one write and one wakeup per batch, not per
 * round. Requests held back were never written: a failure lets them be
 * retried.
 *
 * A subscriber connection (pub/sub) has replies no request asked for: its
 * owner sets on_push, writes its commands with node_send_raw() (outside the
 * FIFO), and gets every reply that no request in the FIFO waits for.
 *
 * A RESP3 connection (node_opts.resp3) opens with HELLO 3. Its pushes
 * (type '>') are never matched to a request: they go to on_push, or are
 * dropped on a connection with none (nothing subscribes there).
 */
#ifndef TAGPROXY_NODE_H
#define TAGPROXY_NODE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "lib/base/counter.h"
#include "lib/net/io.h"
#include "lib/proto/reply.h"

struct event_base;
struct evbuffer;
struct node_conn;

struct node_req;
/* The reply (taken or dropped by the callee: reply.h's view). */
typedef void node_reply_fn(struct node_req *r, const struct reply_view *v,
                           const struct reply_scanner *s);
typedef void node_fail_fn(struct node_req *r, int may_have_run, const char *why);
/* A reply with no request in the FIFO (subscriber connections), as above. */
typedef void node_push_fn(struct node_conn *c, const struct reply_view *v,
                          const struct reply_scanner *s, void *arg);

/* Embedded in whatever the caller sends; the caller owns its memory and must
 * keep it alive until on_reply or on_fail has been called. */
struct node_req {
    TAILQ_ENTRY(node_req) link;
    node_reply_fn *on_reply;
    node_fail_fn  *on_fail;
    struct node_conn *conn;     /* set while in a FIFO */
    size_t   len;               /* bytes this request put in the output */
    uint64_t sent_ms;
    /* A transaction block (MULTI, commands, EXEC) is one request with one
     * reply per command: the first extra_replies go to on_part, the last
     * to on_reply. */
    int extra_replies;
    node_reply_fn *on_part;
    /* Replies before its own to drop: the commands node_send_prefix put
     * right before it (their bytes are in len). */
    int prefixed;
    /* How long the node may legitimately stay silent on this request on top
     * of timeout_ms (a blocking command's own timeout); NODE_WAIT_FOREVER:
     * no silence limit while it is the oldest request. */
    uint64_t wait_ms;
    /* On a connection with on_silent: how much longer than timeout_ms the
     * node may answer nothing anywhere before it shows it is alive (a
     * script: the node answers nobody until its busy-reply-threshold,
     * then BUSY to every other connection, its probe's included). */
    uint64_t busy_grace_ms;
    /* Bytes its reply may reach (its client's output hard limit); past
     * them the connection is reset rather than the reply buffered. 0: no
     * bound. */
    size_t reply_max;
    unsigned answered : 1;      /* its reply came: conn is no longer its connection */
    unsigned had_parts : 1;     /* on_part has had a reply */
};

#define NODE_WAIT_FOREVER UINT64_MAX

#define NODE_BATCHES_MAX 8

/* Node connections of one owner (a worker, or the health probes). */
struct stats_nodes {
    uint64_t connects;              /* connections started */
    uint64_t connect_failures;      /* closed before they were up */
    uint64_t closed;                /* closed after they were up */
    uint64_t timeouts;              /* closed because the node did not answer */
    uint64_t batches;               /* batches written on batching connections */
    int64_t  connecting;            /* now */
    int64_t  ready;                 /* now */
    struct stats_bytes bytes;
};

enum node_state {
    NODE_CONNECTING,    /* connect() issued, requests buffered */
    NODE_READY,         /* connected: requests flow */
    NODE_CLOSED         /* failed or closed; kept only until freed */
};

struct node_opts {
    int connect_timeout_ms;
    int timeout_ms;
    int slow_timeout_ms;        /* with on_silent: the longest a request waits on a
                                 * node that answers elsewhere (0: no bound; a
                                 * request's own wait_ms is added) */
    const char *user;           /* may be NULL */
    const char *password;       /* NULL: no AUTH */
    struct ssl_ctx_st *tls;     /* NULL: plain TCP, else TLS (lib/net/tls.h) */
    const char *tls_server_name;/* NULL: verify the node's host */
    int tls_insecure;           /* no certificate or name check */
    int resp3;                  /* open with HELLO 3 (AUTH in it): replies in RESP3 */
    struct stats_nodes *stats;  /* the owner's counters; may be NULL */
    long long max_bulk_len;     /* proto-max-bulk-len: a longer bulk in a reply
                                 * resets the connection; 0: no bound */
    /* A connection that runs as another node user (a client's, acl.h):
     * after the login above, setup_argv (ACL SETUSER of that user) and then
     * AUTH as_user as_password. Nothing else is written before that AUTH
     * answers +OK: a refused one fails every request with "did not run",
     * so nothing ever runs with the rights of the first login. */
    const char *as_user;        /* NULL: an ordinary connection */
    const char *as_password;
    const char **setup_argv;
    int setup_argc;
    const char *as_refused_hint;/* said after a refusal of that AUTH */
};

struct node_conn {
    struct event_base *base;
    struct io_conn io;
    struct event *timer;        /* fires at the oldest request's deadline */
    enum node_state state;
    char addr[128];             /* announced "host:port", for messages */
    TAILQ_HEAD(, node_req) inflight;
    int ninflight;
    /* Requests put in the FIFO, and answered, since it opened: a push read
     * after the nanswered-th reply was written by the node after those
     * requests ran (client-side caching orders its reads by them). */
    uint64_t nsent, nanswered;
    int prefix_pending;             /* node_send_prefix's commands for the next request */
    size_t prefix_bytes;
    struct reply_scanner scan;
    struct evbuffer *partial;   /* scanned bytes of a reply not yet whole */
    uint64_t last_read_ms;      /* the node's last sign of life */
    const struct node_opts *opts;
    long long node_id;          /* the node's CLIENT ID for it once known (node_conn_ask_id),
                                 * else 0; other threads read it with __atomic_load_n */
    int retiring;               /* close once the last reply is in */
    /* The node refused the proxy's AUTH: nothing more is sent; the replies
     * already due are read (a NOAUTH proves its command did not run, any
     * other reply is its command's), then the connection closes. */
    int refused_login;
    char refused_why[REPLY_ERRLINE_MAX];
    /* opts->as_user: the requests' bytes wait here until its AUTH answers */
    struct evbuffer *gated;
    void (*on_down)(struct node_conn *c, void *arg);  /* after a failure */
    const char *down_why;       /* during on_down: why it closed */
    void (*on_drained)(struct node_conn *c, void *arg); /* output all written */
    /* Its oldest request is silent (above): ask the node elsewhere, and
     * say when it last answered there (node_now_ms; 0 never). */
    uint64_t (*on_silent)(struct node_conn *c, void *arg);
    uint64_t alive_ms;              /* the last such answer on_silent said */
    void *down_arg;                 /* for the four */
    int timed_out;                  /* closed because the node did not answer */
    int was_up;                     /* it connected (and failed later, if closed) */
    void *ext;                      /* another module's state for this connection */
    void (*ext_free)(void *ext);    /* frees it with the connection */
    node_push_fn *on_push;          /* NULL: a reply to no request breaks the protocol
                                     * (a RESP3 push is dropped) */
    void *push_arg;
    size_t push_max;                /* as reply_max, for the replies on_push gets */
    /* write batching (above); batch_window 0: every request leaves in the
     * round it was sent */
    int batch_window;
    int nheld;                      /* requests waiting for the window */
    int batch[NODE_BATCHES_MAX];    /* ring: requests of each batch in flight */
    int batch_first, nbatches;
};

/* Start connecting (non-blocking) to sa (addr is "host:port", the host is
 * what TLS verifies without tls_server_name); requests may be sent at once.
 * NULL when not even the connect could be started. */
struct node_conn *node_conn_new(struct io_loop *loop, const char *addr,
                                const struct sockaddr *sa, socklen_t salen,
                                const struct node_opts *opts);

/* Queue len bytes of command for r. The bytes are copied. */
void node_send(struct node_conn *c, struct node_req *r, const void *bytes, size_t len);

/* Queue bytes whose replies go to on_push (not the FIFO). -1 when closed. */
int node_send_raw(struct node_conn *c, const void *bytes, size_t len);

/* From now on c runs as opts->as_user (set up with opts->setup_argv, then
 * AUTH): what is sent next waits for that AUTH, as after a login with
 * as_user, and a refusal closes c with nothing of it written. c keeps
 * opts (which must outlive it) and speaks the protocol it spoke. */
void node_conn_login_as(struct node_conn *c, const struct node_opts *opts);

/* Queue ASKING right before the next command, as part of it
 * (node_send_prefix: its +OK is dropped). */
void node_send_asking(struct node_conn *c);

/* Queue a command of 1 to 4 arguments (an ASSERT holds callers to it)
 * whose reply is consumed here (UNWATCH on a dedicated connection). */
void node_send_quiet(struct node_conn *c, int argc, const char **argv);

/* Queue a command already written (bytes[0..len)) right before the next
 * request node_send queues, as part of it: its reply is dropped, and it
 * costs no allocation (CLIENT CACHING YES before a read). */
void node_send_prefix(struct node_conn *c, const char *bytes, size_t len);

/* Queue CLIENT ID, whose answer is kept in c->node_id (for CLIENT UNBLOCK
 * of what blocks on c). */
void node_conn_ask_id(struct node_conn *c);

/* Batch c's writes: at most window (1..NODE_BATCHES_MAX) batches in flight. */
void node_conn_batch(struct node_conn *c, int window);

/* r was written (or waits for the window) on a batching connection and its
 * reply has not come: it is due within about one round trip to the node. */
static inline int node_req_due(const struct node_req *r)
{
    return r->conn && !r->answered && r->conn->batch_window > 0;
}

/* No more requests will come: close once nothing is in flight. */
void node_conn_retire(struct node_conn *c);

/* Fail everything in flight with why, close the socket. Idempotent. */
void node_conn_close(struct node_conn *c, const char *why);

/* Milliseconds of a monotonic clock (cheap: coarse, vDSO). */
uint64_t node_now_ms(void);

/* Bytes queued for the node past which its senders should stop reading
 * their clients until it catches up (backpressure, not buffering). */
#define NODE_OUTPUT_HIGH (4u * 1024 * 1024)

static inline int node_conn_congested(const struct node_conn *c)
{
    return io_conn_pending(&c->io) > NODE_OUTPUT_HIGH;
}

static inline int node_conn_usable(const struct node_conn *c)
{
    return c && c->state != NODE_CLOSED;
}

#endif
