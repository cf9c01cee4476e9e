/*
 * acks: writes answered once replicas have them. See acks.h.
 */
#include "proxy/core/acks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/node.h"
#include "lib/proto/command.h"
#include "lib/proto/reply.h"
#include "proxy/core/client.h"
#include "proxy/core/request.h"
#include "proxy/core/stats.h"
#include "proxy/core/worker.h"

enum ack_state {
    ACK_OPEN,           /* its WAIT not sent yet: writes join it */
    ACK_SENT,           /* its WAIT on its way */
    ACK_DONE            /* its WAIT answered or failed */
};

/* The writes sent on one connection since its last WAIT, and that WAIT. */
struct ack_group {
    struct node_req nreq;           /* the WAIT (first: the node hands it back) */
    struct worker *w;
    struct node_conn *conn;
    enum ack_state state;
    int refs;                       /* its WAIT's (until done), and each member's */
    int want, timeout_ms;           /* WAIT's arguments, as the round's config said */
    char error[400];                /* once done: the reply of its writes, when short */
    TAILQ_ENTRY(ack_group) link;    /* in its worker's open groups */
    TAILQ_HEAD(, request) held;     /* members the node answered, waiting for it */
};

/* Which count of its client's a request on its way is in (request.route_kind). */
enum { ROUTE_UNCOUNTED, ROUTE_READS, ROUTE_WRITES };

static void group_unref(struct ack_group *g)
{
    if (--g->refs == 0)
        free(g);
}

/* r leaves its group (it was sent again elsewhere, failed before the node
 * ran it, or is released). */
static void leave(struct request *r)
{
    struct ack_group *g = r->ack;
    r->ack = NULL;
    group_unref(g);
}

/* w's open group on conn, made when it has none; NULL out of memory. The
 * round is due to end: its WAIT goes out then, even when the writes wait
 * for their connection (connecting, or its batch window full). */
static struct ack_group *open_group(struct worker *w, struct node_conn *conn)
{
    struct ack_group *g;
    TAILQ_FOREACH(g, &w->acks_open, link)
        if (g->conn == conn)
            return g;
    if (!(g = calloc(1, sizeof *g)))
        return NULL;
    g->w = w;
    g->conn = conn;
    g->state = ACK_OPEN;
    g->refs = 1;
    g->want = w->cfg->replica_acks;
    g->timeout_ms = w->cfg->replica_acks_timeout_ms;
    TAILQ_INIT(&g->held);
    TAILQ_INSERT_TAIL(&w->acks_open, g, link);
    io_loop_flush_due(&w->loop);
    return g;
}

struct node_conn *acks_route(struct request *r, int node, struct node_conn *conn, int *park)
{
    struct worker *w = r->worker;
    struct client *c = request_owner(r);
    int write = w->cfg->replica_acks > 0 && request_may_write(r);
    int follow = c && c->on_writes_conns > 0;
    *park = 0;
    if (write && c && !follow && c->on_reads_conns > 0) {
        c->acks_parked = 1;             /* behind its reads, not beside them */
        *park = 1;
        return NULL;
    }
    if (write || follow) {
        /* none to be had: r waits for a retry rather than overtake what its
         * client has on its way there */
        if (!(conn = worker_writes_conn(w, node, request_resp(r))))
            return NULL;
    }
    if (!conn)
        return NULL;
    if (c) {
        r->route_kind = write || follow ? ROUTE_WRITES : ROUTE_READS;
        if (r->route_kind == ROUTE_WRITES)
            c->on_writes_conns++;
        else
            c->on_reads_conns++;
    }
    if (r->ack)
        leave(r);
    if (write) {
        struct ack_group *g = open_group(w, conn);
        if (g) {                /* (out of memory: answered without waiting) */
            r->ack = g;
            g->refs++;
        }
    }
    return conn;
}

int acks_answered(struct request *r)
{
    struct client *c = request_owner(r);
    if (c && r->route_kind == ROUTE_WRITES)
        c->on_writes_conns--;
    else if (c && r->route_kind == ROUTE_READS)
        c->on_reads_conns--;
    r->route_kind = ROUTE_UNCOUNTED;
    if (!c || !c->acks_parked || c->on_reads_conns > 0)
        return 0;
    c->acks_parked = 0;
    return 1;
}

/* r, a write of g's that ran, gets g's error in place of its reply (one
 * that is an error already stays). */
static void short_reply(struct ack_group *g, struct request *r)
{
    if (request_reply_is_error(r))
        return;
    request_reply_replace(r, g->error, strlen(g->error));
    stat_inc(&g->w->stats.replica_acks_short);
}

/* request.c's hold: r, answered by its node, waits for its group's WAIT.
 * A member that failed before its node answered leaves at once. */
static int hold(struct request *r)
{
    struct ack_group *g = r->ack;
    struct client *c = request_owner(r);
    if (g->state != ACK_DONE && r->nreq.answered) {
        TAILQ_INSERT_TAIL(&g->held, r, ack_link);
        if (c)                  /* its reply counts against its client's limits */
            c->held += request_reply_bytes(r);
        return 1;
    }
    /* failed before its node answered; or answered, and finished after its
     * WAIT (an EXEC waiting for a command the proxy answers) */
    if (r->nreq.answered && g->error[0])
        short_reply(g, r);
    leave(r);
    return 0;
}

/* g's WAIT is over: its held writes go to their clients, each with error
 * (NULL: their own replies) in place of a reply that is not an error. */
static void release(struct ack_group *g, const char *error)
{
    struct request *r;
    g->state = ACK_DONE;
    if (error)
        snprintf(g->error, sizeof g->error, "%s", error);
    g->refs++;                      /* (the last member's release must not free g) */
    while ((r = TAILQ_FIRST(&g->held)) != NULL) {
        struct client *c = request_owner(r);
        TAILQ_REMOVE(&g->held, r, ack_link);
        if (c)                  /* (counted again as it finishes) */
            c->held -= request_reply_bytes(r);
        if (g->error[0])
            short_reply(g, r);
        leave(r);
        request_release(r);
    }
    g->refs -= 2;                   /* the release's, and the WAIT's */
    if (g->refs == 0)
        free(g);
}

static void wait_reply(struct node_req *nr, const struct reply_view *v,
                       const struct reply_scanner *s)
{
    struct ack_group *g = (struct ack_group *)nr;
    char line[256], error[400];
    (void)s;
    reply_view_text(v, line, sizeof line, 0);
    long long got = line[0] == ':' ? strtoll(line + 1, NULL, 10) : -1;
    if (got >= g->want) {
        release(g, NULL);
        return;
    }
    if (got >= 0)
        snprintf(error, sizeof error,
                 "-NOREPLICAS The write ran on the master, but %lld of the %d replicas "
                 "replica-acks asks for acknowledged it within %d ms: a failover may "
                 "lose it\r\n", got, g->want, g->timeout_ms);
    else
        snprintf(error, sizeof error,
                 "-NOREPLICAS The write ran on the master, but its replicas could not be "
                 "asked whether they have it (%.200s): a failover may lose it\r\n",
                 line[0] == '-' ? line + 1 : "an unexpected reply to WAIT");
    release(g, error);
}

static void wait_fail(struct node_req *nr, int may_have_run, const char *why)
{
    struct ack_group *g = (struct ack_group *)nr;
    char error[400];
    (void)may_have_run;
    snprintf(error, sizeof error,
             "-NOREPLICAS The write ran on the master, but the connection was lost before "
             "its replicas acknowledged it (%.200s): a failover may lose it\r\n", why);
    release(g, error);
}

/* g's WAIT, after the writes queued on its connection. */
static void wait_send(struct ack_group *g)
{
    char cmd[96];
    char n[16], ms[16];
    int nlen = snprintf(n, sizeof n, "%d", g->want);
    int mslen = snprintf(ms, sizeof ms, "%d", g->timeout_ms);
    int len = snprintf(cmd, sizeof cmd, "*3\r\n$4\r\nWAIT\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n",
                       nlen, n, mslen, ms);
    g->state = ACK_SENT;
    g->nreq.on_reply = wait_reply;
    g->nreq.on_fail = wait_fail;
    g->nreq.wait_ms = (uint64_t)g->timeout_ms;     /* silent that long, legitimately */
    stat_inc(&g->w->stats.replica_acks_waits);
    node_send(g->conn, &g->nreq, cmd, (size_t)len);
}

/* A shared connection of w's closed: its open groups' WAITs will not go
 * out (their writes failed with it, or are sent again elsewhere). */
static void conn_down(struct worker *w, struct node_conn *c)
{
    struct ack_group *g, *next;
    for (g = TAILQ_FIRST(&w->acks_open); g; g = next) {
        next = TAILQ_NEXT(g, link);
        if (g->conn != c)
            continue;
        TAILQ_REMOVE(&w->acks_open, g, link);
        g->state = ACK_SENT;            /* (as far as release can tell) */
        wait_fail(&g->nreq, 0, c->down_why ? c->down_why : "the connection closed");
    }
}

static const struct worker_watch acks_watch = { .conn_down = conn_down };

void acks_round_flush(void *arg)
{
    struct worker *w = arg;
    struct ack_group *g;
    while ((g = TAILQ_FIRST(&w->acks_open)) != NULL) {
        TAILQ_REMOVE(&w->acks_open, g, link);
        if (g->refs == 1) {         /* every write left it (sent elsewhere, failed) */
            g->state = ACK_DONE;
            group_unref(g);
            continue;
        }
        wait_send(g);
    }
}

void acks_register(void)
{
    request_hold_register(hold);
    worker_register_watch(&acks_watch);
}
