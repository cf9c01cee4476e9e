/*
 * txexec: an EXEC under way, and its replies. See txexec.h.
 */
#include "proxy/families/txexec.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/core/client.h"
#include "proxy/core/rewrite.h"
#include "proxy/core/route.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "proxy/families/index.h"
#include "lib/proto/reply.h"
#include "lib/proto/resp.h"

static void exec_freed(struct request *r, void *state);

/* An EXEC's state, freed with its request. */
static const struct request_family exec_family = { exec_freed };

struct tx_exec *txexec_get(const struct request *r)
{
    return request_family_state(r, &exec_family);
}

struct tx_exec *txexec_of(struct request *r)
{
    struct tx_exec *e = txexec_get(r);
    if (!e && (e = calloc(1, sizeof *e)))
        request_family_set(r, &exec_family, e);
    return e;
}

void txexec_locals_free(struct tx_local *locals, int n)
{
    for (int i = 0; i < n; i++)
        request_free(locals[i].req);
    free(locals);
}

static void exec_freed(struct request *r, void *state)
{
    struct tx_exec *e = state;
    request_family_set(r, &exec_family, NULL);
    txexec_locals_free(e->locals, e->nlocals);
    free(e->fix);
    if (e->upkeep)
        evbuffer_free(e->upkeep);
    if (e->held)
        evbuffer_free(e->held);
    free(e->block_redirect);
    free(e);
}

/* ---- the index upkeep of scripts and blocking writes ---- */

/* EXEC answered, or its connection was lost after it was written: the
 * commands queued in its transaction that may have written outside the
 * index script (EVAL, EVALSHA, FCALL; BLPOP and the other blocking writes,
 * which Lua cannot run) leave the indexes of their keys behind, so these
 * are brought up to date as after a blocking command (index.h). */
static void exec_upkeep(struct request *r)
{
    struct tx_exec *e = txexec_get(r);
    struct evbuffer *b = e->upkeep;
    uint32_t len;
    e->upkeep = NULL;
    while (worker_layout(r->worker) && evbuffer_remove(b, &len, sizeof len) == sizeof len &&
           evbuffer_get_length(b) >= len) {
        const char *key = (const char *)evbuffer_pullup(b, len);
        if (len && !key)
            break;
        index_upkeep_key(r->worker, key, len);
        evbuffer_drain(b, len);
    }
    evbuffer_free(b);
}

/* ---- the commands the proxy answers inside the transaction ---- */

static void exec_ready(struct request *r);

/* request_finish()'s part for a local that asked the masters. */
static void local_answered(struct request *q)
{
    struct request *exec = q->waiter;
    q->waiter = NULL;
    q->on_done = NULL;
    if (--txexec_get(exec)->waiting == 0)
        exec_ready(exec);
}

const struct request *txexec_first_asking(const struct tx_local *locals, int n)
{
    for (int i = 0; i < n; i++)
        if (route_of(locals[i].req->cmd)->asks_masters)
            return locals[i].req;
    return NULL;
}

/* EXEC's array came back and is held: start the locals that ask the
 * masters; exec_ready(exec) once all have answered (perhaps before this
 * returns). */
static void start_asking_locals(struct request *exec)
{
    struct tx_exec *e = txexec_get(exec);
    e->waiting = 1;                     /* none may end it before all have started */
    for (int i = 0; i < e->nlocals && exec->client; i++) {
        struct request *q = e->locals[i].req;
        if (!route_of(q->cmd)->asks_masters)
            continue;
        e->waiting++;
        q->waiter = exec;
        q->on_done = local_answered;
        q->client = exec->client;
        q->resp3 = exec->resp3;         /* answered in EXEC's protocol */
        route_of(q->cmd)->run(q);
    }
    if (--e->waiting == 0)
        exec_ready(exec);
}

/* Add l's reply to out, running l first unless it asked the masters and
 * has answered. */
static void run_local(struct request *exec, struct tx_local *l, struct evbuffer *out)
{
    struct request *q = l->req;
    if (!exec->client) {                /* (its reply goes nowhere) */
        resp_add_error(out, "ERR the client has gone");
        return;
    }
    if (!q->done) {
        if (route_of(q->cmd)->asks_masters) {   /* never started: cannot be */
            resp_add_error(out, "ERR the proxy could not run this command after EXEC");
            return;
        }
        q->client = exec->client;
        q->resp3 = exec->resp3;         /* answered in EXEC's protocol */
        route_of(q->cmd)->run(q);
    }
    if (q->inline_reply_len)            /* a small reply a node sent whole (request.c) */
        evbuffer_add(out, q->inline_data, q->inline_reply_len);
    if (q->reply)
        evbuffer_add_buffer(out, q->reply);
}

/* ---- EXEC's array ---- */

/* EXEC's array as the client queued it, from reply, the node's array (len
 * bytes): each element from the node as its fix says, and the locals'
 * replies put in their places. */
static void build_array(struct request *r, const char *reply, size_t len, struct evbuffer *out)
{
    const struct tx_exec *e = txexec_get(r);
    const struct layout *layout = worker_layout(r->worker);
    size_t at = (size_t)((const char *)memchr(reply, '\r', len) - reply) + 2;
    int total = e->nfix + e->nlocals, k = 0;
    resp_add_array(out, total);
    for (int pos = 0, i = 0; pos < total; pos++) {
        if (k < e->nlocals && e->locals[k].pos == pos) {
            run_local(r, &e->locals[k++], out);
            continue;
        }
        struct reply_scanner sc;
        enum reply_scan_status st;
        const char *el = reply + at;
        reply_scanner_init(&sc);
        size_t one = at < len ? reply_scan(&sc, el, len - at, &st) : 0;
        if (at >= len || st != REPLY_SCAN_DONE)
            one = len - at;             /* cannot be: the whole reply was scanned */
        unsigned f = e->fix ? e->fix[i++] : 0;
        if ((f & TX_FIX_NULL_ARRAY) && one == 5 && memcmp(el, "$-1\r\n", 5) == 0)
            evbuffer_add(out, "*-1\r\n", 5);
        else if (!(f & TX_FIX_SHAPE) || !layout ||
                 rewrite_reply_keys(layout, el, one,
                                    (enum rewrite_reply_shape)((f & TX_FIX_SHAPE) - 1), out) != 0)
            evbuffer_add(out, el, one);
        at += one;
    }
}

/* The locals that asked the masters have all answered: answer EXEC. */
static void exec_ready(struct request *r)
{
    struct tx_exec *e = txexec_get(r);
    struct evbuffer *held = e->held;
    size_t len = evbuffer_get_length(held);
    const char *reply = (const char *)evbuffer_pullup(held, -1);
    build_array(r, reply, len, request_reply_buffer(r));
    evbuffer_free(held);
    e->held = NULL;
    request_finish(r);
}

/* EXEC's array, rebuilt as build_array says. 1: answered here (or held
 * while the locals that ask the masters run); 0: forward the reply as it
 * is (not an array of one element per command of the block: an abort). */
static int deliver_array(struct request *r, const struct reply_view *v)
{
    struct tx_exec *e = txexec_get(r);
    size_t len = v->len;
    const char *reply = reply_view_head(v, len);
    struct evbuffer *out = request_reply_buffer(r);
    const char *crlf = reply ? memchr(reply, '\r', len) : NULL;
    if (!crlf || !out || reply[0] != '*' || strtoll(reply + 1, NULL, 10) != e->nfix)
        return 0;
    if (txexec_first_asking(e->locals, e->nlocals) && (e->held = evbuffer_new()) != NULL) {
        reply_view_take(v, e->held);
        start_asking_locals(r);         /* r may be answered and gone when it returns */
        return 1;
    }
    build_array(r, reply, len, out);
    reply_view_drop(v);
    request_finish(r);
    return 1;
}

/* ---- the hooks ---- */

/* A reply inside the block (+OK, +QUEUED, or an error that makes EXEC
 * abort): the first redirect is kept. */
static void exec_extra(struct request *r, const struct reply_scanner *s)
{
    int slot;
    char addr[128];
    struct tx_exec *e = txexec_get(r);
    if (s->type == '-' && !e->block_redirect &&
        reply_classify(s->errline, strlen(s->errline), &slot, addr, sizeof addr) != REPLY_PLAIN)
        e->block_redirect = strdup(s->errline);
}

/* An error to EXEC means nothing ran: after a redirect the whole block
 * goes to the right node; after WATCH it cannot (the watch lives on this
 * connection), so EXEC answers null, as when a watched key changed, and the
 * client retries. 1: handled here. */
static int block_redirected(struct request *r, const struct reply_view *v,
                            const struct reply_scanner *s)
{
    struct tx_exec *e = txexec_get(r);
    char *line = e->block_redirect;
    int slot, handled = 0;
    char addr[128];
    e->block_redirect = NULL;
    if (s->type != '-') {
        free(line);
        return 0;
    }
    const char *err = line ? line : s->errline;
    enum reply_redirect kind = reply_classify(err, strlen(err), &slot, addr, sizeof addr);
    if (kind != REPLY_PLAIN) {
        if (r->conn_kind == TX_CONN_PINNED_EXEC) {
            resp_add_null_array(request_reply_buffer(r), request_resp(r));
            handled = 1;
        } else if (router_redirect(r, kind, slot, addr)) {
            handled = 2;
        } else {
            resp_add_error(request_reply_buffer(r), err);
            handled = 1;
        }
        reply_view_drop(v);
        if (handled == 1)
            request_finish(r);
    }
    free(line);
    return handled;
}

static int exec_reply(struct request *r, struct node_conn *from, const struct reply_view *v,
                      const struct reply_scanner *s)
{
    (void)from;
    if (block_redirected(r, v, s))
        return 1;
    const struct tx_exec *e = txexec_get(r);
    if (e->upkeep)
        exec_upkeep(r);
    return (e->fix || e->locals) && s->type == '*' && deliver_array(r, v);
}

static int exec_fail(struct request *r, int may_have_run)
{
    if (may_have_run && txexec_get(r)->upkeep)
        exec_upkeep(r);
    if (!may_have_run && r->conn_kind == TX_CONN_PINNED_EXEC) {
        /* the watch went with the connection: nothing ran, retry the WATCH */
        resp_add_null_array(request_reply_buffer(r), request_resp(r));
        request_finish(r);
        return 1;
    }
    return 0;
}

const struct request_hooks txexec_hooks = {
    .reply = exec_reply,
    .extra = exec_extra,
    .fail = exec_fail,
};
