#include "proxy/families/wait.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/node.h"
#include "cluster/slot.h"
#include "proxy/core/client.h"
#include "proxy/core/request.h"
#include "proxy/core/worker.h"
#include "proxy/families/dedicated.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"
#include "lib/proto/resp.h"

/* Propagates (so the connection gets a replication offset) and leaves nothing. */
static const char wait_script[] = "redis.call('set',KEYS[1],'1') redis.call('del',KEYS[1])";

struct wait_op;

struct wait_part {
    struct node_req nreq;
    struct wait_op *op;
    struct dedicated *d;            /* cleared by the pool when it fails */
    int node;                       /* the master it asks */
    int done;
};

struct wait_op {
    struct request *r;              /* the client's WAIT or WAITAOF */
    struct wait_op **slot;          /* where its client keeps it (tx.h); NULL once
                                       the client left */
    int nparts, left;
    int aof;                        /* WAITAOF: two counts, local and replicas */
    long long min[2];
    char error[256];                /* the first error, "" for none */
    struct wait_part parts[];
};

static void op_free_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    free(arg);
}

/* All parts answered: the client's reply. The op is freed on the next loop
 * turn: a failing connection still clears its owner pointer (part->d) after
 * failing what was in flight on it. */
static void op_finish(struct wait_op *op)
{
    struct request *r = op->r;
    struct worker *w = r->worker;
    if (op->slot)
        *op->slot = NULL;
    if (op->error[0]) {
        request_fail(r, op->error);
    } else if (op->aof) {
        resp_add_array(request_reply_buffer(r), 2);
        resp_add_integer(request_reply_buffer(r), op->min[0]);
        resp_add_integer(request_reply_buffer(r), op->min[1]);
        request_finish(r);
    } else {
        resp_add_integer(request_reply_buffer(r), op->min[0]);
        request_finish(r);
    }
    if (event_base_once(w->base, -1, EV_TIMEOUT, op_free_cb, op, NULL) < 0)
        free(op);       /* leaks nothing it still points to: parts are done */
}

static void part_done(struct wait_part *p, const char *error)
{
    struct wait_op *op = p->op;
    p->done = 1;
    if (error && !op->error[0])
        snprintf(op->error, sizeof op->error, "%s", error);
    if (--op->left == 0)
        op_finish(op);
}

/* count into op's smallest i-th count. */
static void take_min(struct wait_op *op, int i, long long count)
{
    if (op->min[i] < 0 || count < op->min[i])
        op->min[i] = count;
}

/* WAITAOF's "*2\r\n:local\r\n:replicas\r\n" into op: 0, or -1 when not one. */
static int take_aof_counts(struct wait_op *op, const char *buf)
{
    long long local, replicas;
    if (sscanf(buf, "*2\r\n:%lld\r\n:%lld\r\n", &local, &replicas) != 2)
        return -1;
    take_min(op, 0, local);
    take_min(op, 1, replicas);
    return 0;
}

/* The script's reply: only an error matters. */
static void part_eval_reply(struct node_req *nr, const struct reply_view *v,
                            const struct reply_scanner *s)
{
    struct wait_part *p = (struct wait_part *)nr;
    char buf[256];
    (void)s;
    reply_view_text(v, buf, sizeof buf, 0);
    if (buf[0] == '-' && !p->op->error[0])
        snprintf(p->op->error, sizeof p->op->error, "%s", buf + 1);
}

static void part_wait_reply(struct node_req *nr, const struct reply_view *v,
                            const struct reply_scanner *s)
{
    struct wait_part *p = (struct wait_part *)nr;
    struct wait_op *op = p->op;
    char buf[256];
    (void)s;
    reply_view_text(v, buf, sizeof buf, op->aof);
    if (p->d)
        dedicated_release(p->d);
    if (buf[0] == '-') {
        buf[strcspn(buf, "\r\n")] = '\0';
        part_done(p, buf + 1);
    } else if (!op->aof && buf[0] == ':') {
        take_min(op, 0, strtoll(buf + 1, NULL, 10));
        part_done(p, NULL);
    } else if (op->aof && take_aof_counts(op, buf) == 0) {
        part_done(p, NULL);
    } else {
        part_done(p, "ERR unexpected reply to WAIT from a node");
    }
}

static void part_fail(struct node_req *nr, int may_have_run, const char *why)
{
    struct wait_part *p = (struct wait_part *)nr;
    char msg[256];
    (void)may_have_run;
    snprintf(msg, sizeof msg, "ERR %s", why);
    part_done(p, msg);
}

/* A key of the proxy's own whose slot master `node` serves; 0 when none. */
static int wait_key(struct worker *w, int node, char *key, size_t size, size_t *len)
{
    for (unsigned i = 0; i < 1u << 20; i++) {
        int n = snprintf(key, size, "tagproxy:wait:{%u}", i);
        if (worker_node_for_slot(w, slot_of(key, (size_t)n)) == node) {
            *len = (size_t)n;
            return 1;
        }
    }
    return 0;
}

/* EVAL <script> 1 <key>, then the client's WAIT (or WAITAOF), on p's
 * connection. */
static int part_send(struct wait_part *p, struct request *r, uint64_t wait_ms)
{
    struct worker *w = r->worker;
    char key[64];
    size_t keylen;
    if (!wait_key(w, p->node, key, sizeof key, &keylen))
        return -1;
    struct evbuffer *b = evbuffer_new();
    if (!b)
        return -1;
    const char *eval[4] = { "EVAL", wait_script, "1", key };
    const size_t lens[4] = { 4, sizeof wait_script - 1, 1, keylen };
    resp_add_command(b, 4, eval, lens);
    evbuffer_add(b, r->data, r->len);       /* the client's WAIT, as it came */
    size_t len = evbuffer_get_length(b);
    const void *bytes = evbuffer_pullup(b, -1);
    p->nreq.on_reply = part_wait_reply;
    p->nreq.on_part = part_eval_reply;
    p->nreq.on_fail = part_fail;
    p->nreq.extra_replies = 1;
    p->nreq.wait_ms = wait_ms;
    node_send(p->d->conn, &p->nreq, bytes, len);
    evbuffer_free(b);
    return 0;
}

void wait_dispatch(struct request *r, int aof, uint64_t wait_ms, struct wait_op **slot)
{
    struct client *c = r->client;
    struct worker *w = r->worker;
    int nnodes = w->topo->nnodes, count = 0, first = -1;
    uint64_t mask = c->written_masters;
    c->written_masters = 0;
    for (int i = 0; i < nnodes; i++)
        count += (mask & client_master_bit(i)) != 0;
    if (count == 0) {           /* no write: one master answers at once */
        first = worker_node_for_slot(w, 0);
        if (first < 0) {
            request_fail(r, "CLUSTERDOWN Hash slot not served");
            return;
        }
        count = 1;
    }
    struct wait_op *op = calloc(1, sizeof *op + sizeof op->parts[0] * (size_t)count);
    if (!op) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    op->r = r;
    op->slot = slot;
    op->aof = aof;
    op->min[0] = op->min[1] = -1;
    op->nparts = 0;
    for (int i = 0; i < nnodes && first < 0; i++)
        if (mask & client_master_bit(i))
            op->parts[op->nparts++].node = i;
    if (first >= 0)
        op->parts[op->nparts++].node = first;
    for (int i = 0; i < op->nparts; i++) {
        const char *why = NULL;
        op->parts[i].op = op;
        if (!dedicated_acquire(w, op->parts[i].node, c, &op->parts[i].d, &why)) {
            for (int j = 0; j < i; j++)
                dedicated_release(op->parts[j].d);
            free(op);
            request_fail(r, why ? why : "ERR cannot connect to the node");
            return;
        }
    }
    *slot = op;
    op->left = op->nparts;
    for (int i = 0; i < op->nparts; i++) {
        if (part_send(&op->parts[i], r, wait_ms) < 0) {
            if (op->parts[i].d)
                dedicated_release(op->parts[i].d);
            part_done(&op->parts[i], REPLY_ERR_OOM);
        }
    }
}

void wait_client_gone(struct wait_op **slot)
{
    struct wait_op *op = *slot;
    if (!op)
        return;
    *slot = NULL;
    op->slot = NULL;
    /* what blocks on them ends now, not when the nodes answer: each part
     * fails, the last one finishes the request (the op is freed later) */
    for (int i = 0; i < op->nparts; i++)
        if (!op->parts[i].done && op->parts[i].d)
            dedicated_close(op->parts[i].d, "the client has gone");
}
