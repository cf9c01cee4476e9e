#include "proxy/router.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "cluster/backoff.h"
#include "cluster/slot.h"
#include "proto/command.h"
#include "proto/reply.h"
#include "proxy/acl.h"
#include "proxy/client.h"
#include "proxy/index.h"
#include "proxy/proxy.h"
#include "proxy/rewrite.h"
#include "proxy/route.h"
#include "proxy/scriptcmd.h"
#include "proxy/scripts.h"
#include "proxy/tx.h"
#include "proxy/wait.h"
#include "proxy/worker.h"

static const char not_proxy[] = "cannot mean the same thing through a cluster proxy";
static const char one_node[] = "this CLUSTER subcommand asks about one node of the cluster, "
                               "and the proxy answers as a single node that owns every slot: "
                               "run it on the nodes";

#define SPLIT(name, how, args) \
    { name, { .plan = ROUTE_SPLIT, .in_multi = TXC_SPLIT, .merge = how, .step = args } }
#define EVERYWHERE(name) { name, { .plan = ROUTE_EVERYWHERE, .in_multi = TXC_OTHER } }
#define FORWARD(name) { name, { .plan = ROUTE_FORWARD, .in_multi = TXC_FORWARD } }
#define REFUSED(name, reason) { name, { .plan = ROUTE_REFUSED, .in_multi = TXC_OTHER, .why = reason } }

/* The commands the router plans itself, other than by their keys. */
static const struct route_entry router_routes[] = {
    SPLIT("mget", MERGE_MGET, 1), SPLIT("mset", MERGE_ALL_OK, 2),
    SPLIT("del", MERGE_SUM, 1), SPLIT("unlink", MERGE_SUM, 1),
    SPLIT("exists", MERGE_SUM, 1), SPLIT("touch", MERGE_SUM, 1),
    EVERYWHERE("flushall"), EVERYWHERE("flushdb"), EVERYWHERE("config|set"),
    EVERYWHERE("config|resetstat"), EVERYWHERE("config|rewrite"), EVERYWHERE("save"),
    EVERYWHERE("bgsave"), EVERYWHERE("bgrewriteaof"), EVERYWHERE("acl|setuser"),
    EVERYWHERE("acl|deluser"), EVERYWHERE("acl|load"), EVERYWHERE("acl|save"),
    EVERYWHERE("slowlog|reset"), EVERYWHERE("latency|reset"), EVERYWHERE("memory|purge"),
    FORWARD("config|get"), FORWARD("publish"),
    REFUSED("move", not_proxy), REFUSED("swapdb", not_proxy), REFUSED("migrate", not_proxy),
    REFUSED("sync", not_proxy), REFUSED("psync", not_proxy), REFUSED("replconf", not_proxy),
    REFUSED("replicaof", not_proxy), REFUSED("slaveof", not_proxy),
    REFUSED("failover", not_proxy), REFUSED("shutdown", not_proxy),
    REFUSED("debug", not_proxy), REFUSED("module", not_proxy),
    REFUSED("cluster|countkeysinslot", one_node), REFUSED("cluster|getkeysinslot", one_node),
    REFUSED("cluster|links", one_node), REFUSED("cluster|count-failure-reports", one_node),
    REFUSED("cluster|replicas", one_node), REFUSED("cluster|slaves", one_node),
    REFUSED("cluster|*", "this CLUSTER subcommand changes the cluster's topology: "
                         "run it on the nodes, not through the proxy"),
    REFUSED("client|*", "this CLIENT subcommand is not supported through the proxy"),
};

static int watchers;                 /* atomic: clients watching, on every worker */
static void (*watcher)(struct request *r);

void router_register_watcher(void (*watch)(struct request *r))
{
    watcher = watch;
}

void router_watching(int delta)
{
    __atomic_add_fetch(&watchers, delta, __ATOMIC_RELAXED);
}

void router_init(void)
{
    route_register(router_routes, (int)(sizeof router_routes / sizeof router_routes[0]));
}

/* ---- errors as Redis words them ---- */

static void reply_unknown_command(struct request *r)
{
    stat_inc(&r->worker->stats.unknown_commands);
    char msg[512], args[200] = "";
    size_t used = 0, len;
    for (int i = 1; i < r->argc && used < 128; i++) {
        const char *a = request_arg(r, i, &len);
        int n = snprintf(args + used, sizeof args - used, "'%.*s' ",
                         (int)(len < 128 - used ? len : 128 - used), a);
        used += n > 0 ? (size_t)n : 0;
        if (used >= sizeof args)
            used = sizeof args - 1;
    }
    const char *name = request_arg(r, 0, &len);
    snprintf(msg, sizeof msg, "ERR unknown command '%.*s', with args beginning with: %s",
             (int)(len < 128 ? len : 128), name, args);
    request_fail(r, msg);
}

static void reply_unknown_subcommand(struct request *r)
{
    char msg[320], upper[64];
    size_t nlen, slen;
    const char *name = request_arg(r, 0, &nlen);
    const char *sub = request_arg(r, 1, &slen);
    size_t i;
    for (i = 0; i < nlen && i < sizeof upper - 1; i++)
        upper[i] = (char)((name[i] >= 'a' && name[i] <= 'z') ? name[i] - 32 : name[i]);
    upper[i] = '\0';
    snprintf(msg, sizeof msg, "ERR unknown subcommand '%.*s'. Try %s HELP.",
             (int)(slen < 128 ? slen : 128), sub, upper);
    request_fail(r, msg);
}

/* ---- sending, redirects, retries ---- */

static void router_on_reply(struct node_req *nr, struct evbuffer *in, const char *bytes,
                            size_t len, const struct reply_scanner *s);
static void router_on_fail(struct node_req *nr, int may_have_run, const char *why);
static void router_on_part(struct node_req *nr, struct evbuffer *in, const char *bytes,
                           size_t len, const struct reply_scanner *s);

static struct request *request_of(struct node_req *nr)
{
    return (struct request *)((char *)nr - offsetof(struct request, nreq));
}

/*
 * Order of execution. A command waiting out a backoff has not run, and a
 * later command of the same client must not overtake it (SET k then GET k
 * must not run as GET k then SET k). So a client's retries wait together in
 * its held_back list, in the order the client sent them, and while that
 * list is not empty the client's next commands (and redirected ones) join
 * it instead of going out; when the backoff ends, all go out in order.
 * (A command already at a node when an earlier one was refused can still
 * run first: the cluster refused the earlier one, not the proxy.)
 */
static struct client *request_owner(const struct request *r)
{
    return r->parent ? r->parent->client : r->client;
}

static void hold_insert(struct client *c, struct request *r)
{
    struct request *after = TAILQ_LAST(&c->held_back, request_queue);
    while (after && after->seq > r->seq)
        after = TAILQ_PREV(after, request_queue, hold_link);
    if (after)
        TAILQ_INSERT_AFTER(&c->held_back, after, r, hold_link);
    else
        TAILQ_INSERT_HEAD(&c->held_back, r, hold_link);
}

/* The backoff is over: send the held requests in order, and stop if one of
 * them has to wait again (the rest stay behind it). */
static void held_release_cb(evutil_socket_t fd, short what, void *arg)
{
    struct client *c = arg;
    struct request_queue batch = TAILQ_HEAD_INITIALIZER(batch);
    struct request *r;
    (void)fd;
    (void)what;
    TAILQ_CONCAT(&batch, &c->held_back, hold_link);
    while ((r = TAILQ_FIRST(&batch)) != NULL) {
        TAILQ_REMOVE(&batch, r, hold_link);
        r->releasing = 1;
        router_send(r);
        r->releasing = 0;
        if (!TAILQ_EMPTY(&c->held_back)) {
            TAILQ_CONCAT(&c->held_back, &batch, hold_link);
            break;
        }
    }
}

/* Resend r after a backoff, in its client's order (every routed request
 * has a client: its own, or its parent's). 0 when its retries are used up. */
static int router_retry_later(struct request *r)
{
    struct worker *w = r->worker;
    const struct config *cfg = w->cfg;
    if (r->retries >= cfg->retry_attempts) {
        stat_inc(&w->stats.retries_exhausted);
        return 0;
    }
    int delay = backoff_delay_ms(r->retries, cfg->retry_base_ms, cfg->retry_max_ms);
    struct timeval tv = { delay / 1000, (delay % 1000) * 1000 };
    r->retries++;
    r->redirects = 0;
    r->asking = 0;
    stat_inc(&w->stats.retries);
    struct client *owner = request_owner(r);
    if (!owner->retry_timer)
        owner->retry_timer = evtimer_new(w->base, held_release_cb, owner);
    if (!owner->retry_timer)
        return 0;
    hold_insert(owner, r);
    if (!evtimer_pending(owner->retry_timer, NULL))
        evtimer_add(owner->retry_timer, &tv);
    return 1;
}

void router_send(struct request *r)
{
    struct worker *w = r->worker;
    struct client *owner = request_owner(r);
    if (owner && !r->releasing && !TAILQ_EMPTY(&owner->held_back)) {
        hold_insert(owner, r);     /* behind the client's earlier commands */
        return;
    }
    int node = r->asking ? r->ask_node
             : r->fixed_node >= 0 ? r->fixed_node
             : worker_node_for_slot(w, r->slot);
    const char *why = NULL;
    struct node_conn *conn = node < 0 ? NULL
                           : r->conn_kind ? tx_dedicated_conn(r, node, &why)
                           : worker_conn(w, node, request_resp(r));
    if (!conn && why) {         /* no dedicated connection to be had */
        request_fail(r, why);
        return;
    }
    if (!conn) {
        if (node < 0)
            worker_want_refresh(w);
        if (!router_retry_later(r))
            request_fail(r, node < 0 ? "CLUSTERDOWN Hash slot not served"
                                     : "ERR cannot connect to the node that serves this key");
        return;
    }
    /* what WAIT will have to wait for (wait.h); parts have their parent's command */
    struct request *top = r->parent ? r->parent : r;
    if (owner && top->cmd && (r->block_parts || wait_may_write(top->cmd)))
        owner->written_masters |= wait_node_bit(node);
    router_send_on(r, conn);
    /* a node that does not keep up stops the clients that feed it */
    if (top->client && node_conn_usable(conn) && node_conn_congested(conn))
        client_pause_for(top->client, conn);
}

void router_send_on(struct request *r, struct node_conn *conn)
{
    if (r->evalsha)
        scriptcmd_before_send(r, conn);     /* before ASKING: it must precede the command */
    if (r->asking) {        /* before a MULTI block too: it holds until EXEC */
        node_send_asking(conn);
        r->asking = 0;
    }
    r->nreq.on_reply = router_on_reply;
    r->nreq.on_fail = router_on_fail;
    r->nreq.on_part = router_on_part;
    r->nreq.extra_replies = r->block_parts;
    r->nreq.wait_ms = r->conn_kind == REQ_CONN_DEDICATED ? tx_wait_ms(r) : 0;
    struct request *top = r->parent ? r->parent : r;
    r->nreq.reply_max = top->client ? client_output_hard_limit(top->client)
                                    : (size_t)r->worker->cfg->client_output_hard_limit;
    node_send(conn, &r->nreq, r->data, r->len);
}

/* The connection r goes out on next (router_send's choice), or NULL. */
static struct node_conn *router_next_conn(struct request *r)
{
    struct worker *w = r->worker;
    int node = r->asking ? r->ask_node
             : r->fixed_node >= 0 ? r->fixed_node
             : worker_node_for_slot(w, r->slot);
    return node >= 0 ? worker_conn(w, node, request_resp(r)) : NULL;
}

/*
 * An EVALSHA (a client's, or the proxy's own) answered NOSCRIPT: load the
 * body the proxy knows (scripts.h) on the node that answered and on the one
 * the resend goes to, then resend. NOSCRIPT proves the script did not run,
 * and the load is ahead of the resend on the connection. Twice at most per
 * command. 0: the client gets the NOSCRIPT.
 */
static int router_noscript(struct request *r, struct node_conn *answered)
{
    char sha[SCRIPTS_SHA_HEX];
    size_t len, body_len;
    if (r->noscript_retries >= 2 || r->argc < 2)
        return 0;
    const char *name = request_arg(r, 0, &len);
    if (!((len == 7 && strncasecmp(name, "evalsha", 7) == 0) ||
          (len == 10 && strncasecmp(name, "evalsha_ro", 10) == 0)))
        return 0;
    const char *arg = request_arg(r, 1, &len);
    char *body = scripts_sha_parse(arg, len, sha) == 0 ? scripts_body_copy(sha, &body_len) : NULL;
    if (!body)
        return 0;
    r->noscript_retries++;
    if (answered && node_conn_usable(answered))
        scriptcmd_load_on(answered, body, body_len);
    struct node_conn *next = router_next_conn(r);
    if (next && next != answered && node_conn_usable(next))
        scriptcmd_load_on(next, body, body_len);
    free(body);
    log_verbose("scripts", "NOSCRIPT for %s from %s: body loaded, EVALSHA resent", sha,
                answered ? answered->addr : "?");
    router_send(r);
    return 1;
}

/* Follow a redirect or schedule a retry. 0: give the error to the client. */
static int router_redirect(struct request *r, enum reply_redirect kind, int slot,
                           const char *addr)
{
    struct worker *w = r->worker;
    char full[160];
    int node;
    /* "MOVED 3999 :6381": an unknown endpoint means the host that answered */
    if (addr[0] == ':' && r->nreq.conn) {
        const char *colon = strrchr(r->nreq.conn->addr, ':');
        int hostlen = colon ? (int)(colon - r->nreq.conn->addr) : 0;
        snprintf(full, sizeof full, "%.*s%s", hostlen, r->nreq.conn->addr, addr);
        addr = full;
    }
    switch (kind) {
    case REPLY_MOVED:
    case REPLY_ASK:
        if (kind == REPLY_MOVED) {
            stat_inc(&w->stats.moved);
            worker_want_refresh(w);
        } else {
            stat_inc(&w->stats.ask);
        }
        node = topology_find(w->topo, addr);
        if (node < 0)       /* not announced: follow only once a refresh says so */
            worker_want_refresh(w);
        if (node >= 0 && r->redirects < w->cfg->max_redirects) {
            r->redirects++;
            if (kind == REPLY_MOVED) {
                w->slot_node[slot] = (int16_t)node;
            } else {
                r->asking = 1;
                r->ask_node = node;
            }
            router_send(r);
            return 1;
        }
        return router_retry_later(r);
    case REPLY_TRYAGAIN:
    case REPLY_CLUSTERDOWN:
        return router_retry_later(r);
    default:
        return 0;
    }
}

/*
 * A script can answer "MOVED 1 host:port" (or ASK, TRYAGAIN, CLUSTERDOWN)
 * after it wrote, so such a reply to a script proves nothing by itself. The
 * cluster redirects a script only about its keys' slot (it checks them
 * before the script runs), so a keyless script or another slot is the
 * script's own error. Otherwise the answering node's CLUSTER NODES (CLUSTER
 * INFO for CLUSTERDOWN) is read on the same connection, with the request's
 * own node_req, so the request stays in flight (and in its client's order)
 * until the node's state says whether the cluster sent the reply.
 */
static void script_confirm_on_reply(struct node_req *nr, struct evbuffer *in,
                                    const char *bytes, size_t len,
                                    const struct reply_scanner *s);
static void script_confirm_on_fail(struct node_req *nr, int may_have_run, const char *why);

static void script_redirect_deliver(struct request *r, const char *line)
{
    stat_inc(&r->worker->stats.script_redirects_unconfirmed);
    size_t n = strlen(line);
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        request_fail(r, line);
        return;
    }
    evbuffer_add(b, "-", 1);
    evbuffer_add(b, line, n);
    evbuffer_add(b, "\r\n", 2);
    size_t len = evbuffer_get_length(b);
    const char *bytes = (const char *)evbuffer_pullup(b, -1);
    request_deliver(r, NULL, bytes, len);
    evbuffer_free(b);
}

/* 1: the confirmation is under way (the reply was taken); 0: give it as it is. */
static int script_confirm_start(struct request *r, struct node_conn *conn,
                                enum reply_redirect kind, int slot, const char *line)
{
    static const char nodes[] = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nNODES\r\n";
    static const char info[] = "*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n";
    if (r->parent || r->block_parts || r->slot < 0 || ((kind == REPLY_MOVED || kind == REPLY_ASK) && slot != r->slot) ||
        !conn || !node_conn_usable(conn) || !(r->script_redirect = strdup(line))) {
        stat_inc(&r->worker->stats.script_redirects_unconfirmed);
        return 0;
    }
    r->nreq.on_reply = script_confirm_on_reply;
    r->nreq.on_fail = script_confirm_on_fail;
    r->nreq.on_part = NULL;
    r->nreq.extra_replies = 0;
    r->nreq.wait_ms = 0;
    if (kind == REPLY_CLUSTERDOWN)
        node_send(conn, &r->nreq, info, sizeof info - 1);
    else
        node_send(conn, &r->nreq, nodes, sizeof nodes - 1);
    return 1;
}

/* Whether the slot list of one CLUSTER NODES line (from its 9th field on)
 * has slot in a range; *moving: it has "[slot->-" or "[slot-<-". */
static int nodes_line_slot(const char *line, const char *end, int slot, int *moving)
{
    int field = 0, owns = 0;
    const char *p = line;
    *moving = 0;
    while (p < end) {
        while (p < end && *p == ' ')
            p++;
        const char *tok = p;
        while (p < end && *p != ' ')
            p++;
        if (p == tok)
            break;
        if (++field < 9)
            continue;
        if (*tok == '[') {
            char *q;
            long a = strtol(tok + 1, &q, 10);
            if (a == slot && q < p && *q == '-')
                *moving = 1;
            continue;
        }
        char *q;
        long a = strtol(tok, &q, 10), b = a;
        if (q < p && *q == '-')
            b = strtol(q + 1, NULL, 10);
        if (slot >= a && slot <= b)
            owns = 1;
    }
    return owns;
}

/* Whether a node's CLUSTER NODES (text of n bytes) confirms the reply. */
static int nodes_confirm(const char *text, size_t n, enum reply_redirect kind, int slot,
                         const char *addr)
{
    const char *end = text + n, *line = text;
    int self_owns = 0, self_moving = 0, target_owns = 0;
    size_t alen = strlen(addr);
    while (line < end) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            eol = end;
        const char *sp = memchr(line, ' ', (size_t)(eol - line));
        int moving, owns = nodes_line_slot(line, eol, slot, &moving);
        const char *flags = sp ? memchr(sp + 1, ' ', (size_t)(eol - sp - 1)) : NULL;
        const char *fend = flags ? memchr(flags + 1, ' ', (size_t)(eol - flags - 1)) : NULL;
        int self = fend && memmem(flags, (size_t)(fend - flags), "myself", 6) != NULL;
        if (self) {
            self_owns = owns;
            self_moving = moving;
        }
        /* "ip:port@cport": the address the redirect names */
        if (sp && (size_t)(eol - sp) > alen + 1 && memcmp(sp + 1, addr, alen) == 0 &&
            (sp[1 + alen] == '@' || sp[1 + alen] == ' ' || sp[1 + alen] == ','))
            target_owns = owns;
        line = eol + 1;
    }
    if (kind == REPLY_MOVED)
        return !self_owns && target_owns;
    return self_moving;
}

static void script_confirm_decide(struct request *r, const char *text, size_t n)
{
    char *line = r->script_redirect, addr[128];
    int slot, ok = 0;
    r->script_redirect = NULL;
    enum reply_redirect kind = reply_classify(line, strlen(line), &slot, addr, sizeof addr);
    if (text && kind == REPLY_CLUSTERDOWN)
        ok = memmem(text, n, "cluster_state:fail", 18) != NULL;
    else if (text && addr[0] != ':')
        ok = nodes_confirm(text, n, kind, slot, addr);
    else if (text)
        ok = nodes_confirm(text, n, kind, slot, "") && kind != REPLY_MOVED;
    if (!(ok && router_redirect(r, kind, slot, addr)))
        script_redirect_deliver(r, line);
    free(line);
}

static void script_confirm_on_reply(struct node_req *nr, struct evbuffer *in,
                                    const char *bytes, size_t len,
                                    const struct reply_scanner *s)
{
    struct request *r = request_of(nr);
    if (in)
        bytes = (const char *)evbuffer_pullup(in, (ssize_t)len);
    const char *text = NULL;
    size_t n = 0;
    if (s->type == '$' || s->type == '=' || s->type == '+') {
        const char *crlf = bytes ? memchr(bytes, '\n', len) : NULL;
        if (crlf && s->type != '+') {
            text = crlf + 1;
            n = len - (size_t)(text - bytes);
            if (s->type == '=' && n >= 4) {     /* RESP3's verbatim: past "txt:" */
                text += 4;
                n -= 4;
            }
        } else if (bytes) {
            text = bytes;
            n = len;
        }
    }
    script_confirm_decide(r, text, n);
    if (in)
        evbuffer_drain(in, len);
}

static void script_confirm_on_fail(struct node_req *nr, int may_have_run, const char *why)
{
    (void)may_have_run;
    (void)why;
    script_confirm_decide(request_of(nr), NULL, 0);
}

/* A reply inside a MULTI..EXEC block (+OK, +QUEUED, or an error that makes
 * EXEC abort): the client sees only EXEC's; the first redirect is kept. */
static void router_on_part(struct node_req *nr, struct evbuffer *in, const char *bytes,
                           size_t len, const struct reply_scanner *s)
{
    struct request *r = request_of(nr);
    int slot;
    char addr[128];
    (void)bytes;
    if (s->type == '-' && !r->block_redirect &&
        reply_classify(s->errline, strlen(s->errline), &slot, addr, sizeof addr) != REPLY_PLAIN)
        r->block_redirect = strdup(s->errline);
    if (in)
        evbuffer_drain(in, len);
}

/* EXEC's reply to a block. An error to EXEC means nothing ran: after a
 * redirect the whole block goes to the right node; after WATCH it cannot
 * (the watch lives on this connection), so EXEC answers null, as when a
 * watched key changed, and the client retries. 1: handled here. */
static int block_redirected(struct request *r, struct evbuffer *in, size_t len,
                            const struct reply_scanner *s)
{
    char *line = r->block_redirect;
    int slot, handled = 0;
    char addr[128];
    r->block_redirect = NULL;
    if (s->type != '-') {
        free(line);
        return 0;
    }
    const char *err = line ? line : s->errline;
    enum reply_redirect kind = reply_classify(err, strlen(err), &slot, addr, sizeof addr);
    if (kind != REPLY_PLAIN) {
        if (r->conn_kind == REQ_CONN_PINNED_EXEC) {
            resp_add_null_array(request_reply_buffer(r), request_resp(r));
            handled = 1;
        } else if (router_redirect(r, kind, slot, addr)) {
            handled = 2;
        } else {
            resp_add_error(request_reply_buffer(r), err);
            handled = 1;
        }
        if (in)
            evbuffer_drain(in, len);
        if (handled == 1)
            request_finish(r);
    }
    free(line);
    return handled;
}

/* Which replies carry key names the layout maps back (rewrite.h): a pop's
 * [key, ...] (LMPOP, ZMPOP, the blocking pops), XREAD/XREADGROUP's
 * [[stream, entries], ...]. */
static int reply_key_shape(const struct command *cmd, enum rewrite_reply_shape *shape)
{
    unsigned map = rewrite_reply_map_of(cmd);
    if (!map)
        return 0;
    *shape = (enum rewrite_reply_shape)(map - 1);
    return 1;
}

/* With a key layout, give r its reply with the key names mapped back to
 * legacy names. 1: answered here; 0: forward the reply as it is (no
 * layout, no key names in it, or not of the expected shape). */
static int deliver_legacy_keys(struct request *r, struct evbuffer *in, const char *bytes,
                               size_t len, const struct reply_scanner *s)
{
    enum rewrite_reply_shape shape;
    const struct layout *layout = worker_layout(r->worker);
    if (!layout || (s->type != '*' && s->type != '%') || r->block_parts || r->parent ||
        !reply_key_shape(r->cmd, &shape))
        return 0;
    const char *reply = in ? (const char *)evbuffer_pullup(in, (ssize_t)len) : bytes;
    struct evbuffer *out = request_reply_buffer(r);
    if (!reply || !out)
        return 0;
    int rc = rewrite_reply_keys(layout, reply, len, shape, out);
    if (rc == -2) {
        evbuffer_drain(out, evbuffer_get_length(out));
        resp_add_error(out, "ERR out of memory");
    } else if (rc < 0) {
        return 0;
    }
    if (in)
        evbuffer_drain(in, len);
    request_finish(r);
    return 1;
}

/* EXEC's array as the client queued it, from reply, the node's array (len
 * bytes): each element from the node as tx.h's exec_fix says (key names
 * mapped back to legacy names, a null array restored), and the replies of
 * the commands the proxy answers (exec_locals) put in their places. */
static void build_exec_array(struct request *r, const char *reply, size_t len,
                             struct evbuffer *out)
{
    const struct layout *layout = worker_layout(r->worker);
    size_t at = (size_t)((const char *)memchr(reply, '\r', len) - reply) + 2;
    int total = r->nexec_fix + r->nexec_locals, k = 0;
    resp_add_array(out, total);
    for (int pos = 0, i = 0; pos < total; pos++) {
        if (k < r->nexec_locals && r->exec_locals[k].pos == pos) {
            tx_run_local(r, &r->exec_locals[k++], out);
            continue;
        }
        struct reply_scanner sc;
        enum reply_scan_status st;
        const char *e = reply + at;
        reply_scanner_init(&sc);
        size_t one = at < len ? reply_scan(&sc, e, len - at, &st) : 0;
        if (at >= len || st != REPLY_SCAN_DONE)
            one = len - at;             /* cannot be: the whole reply was scanned */
        unsigned f = r->exec_fix ? r->exec_fix[i++] : 0;
        if ((f & TX_FIX_NULL_ARRAY) && one == 5 && memcmp(e, "$-1\r\n", 5) == 0)
            evbuffer_add(out, "*-1\r\n", 5);
        else if (!(f & TX_FIX_SHAPE) || !layout ||
                 rewrite_reply_keys(layout, e, one,
                                    (enum rewrite_reply_shape)((f & TX_FIX_SHAPE) - 1), out) != 0)
            evbuffer_add(out, e, one);
        at += one;
    }
}

/* EXEC's array, rebuilt as build_exec_array says. 1: answered here (or held
 * while queued commands that ask the masters run: router_exec_ready ends
 * it); 0: forward the reply as it is (not an array of one element per
 * command the block held: an abort, an error). */
static int deliver_exec_array(struct request *r, struct evbuffer *in, const char *bytes,
                              size_t len)
{
    const char *reply = in ? (const char *)evbuffer_pullup(in, (ssize_t)len) : bytes;
    struct evbuffer *out = request_reply_buffer(r);
    const char *crlf = reply ? memchr(reply, '\r', len) : NULL;
    if (!crlf || !out || reply[0] != '*' || strtoll(reply + 1, NULL, 10) != r->nexec_fix)
        return 0;
    if (tx_asking_locals(r) && (r->exec_held = evbuffer_new()) != NULL) {
        if (in)
            evbuffer_remove_buffer(in, r->exec_held, len);
        else
            evbuffer_add(r->exec_held, bytes, len);
        tx_start_asking_locals(r);  /* r may be answered and gone when it returns */
        return 1;
    }
    build_exec_array(r, reply, len, out);
    if (in)
        evbuffer_drain(in, len);
    request_finish(r);
    return 1;
}

void router_exec_ready(struct request *r)
{
    size_t len = evbuffer_get_length(r->exec_held);
    const char *reply = (const char *)evbuffer_pullup(r->exec_held, -1);
    build_exec_array(r, reply, len, request_reply_buffer(r));
    evbuffer_free(r->exec_held);
    r->exec_held = NULL;
    request_finish(r);
}

/* The client's own EVAL, EVALSHA or FCALL (not a _RO one): whatever it
 * answers, it may have written its keys, and only the index script keeps
 * indexes exact; so, as after a blocking command, the indexes of its keys
 * that are indexed records are brought up to date once it has run. */
static int script_may_write(const struct request *r)
{
    if (r->parent || !r->cmd)       /* a part (r->cmd may be unset), or built here */
        return 0;
    return scriptcmd_may_write(r->cmd) && worker_layout(r->worker);
}

static void router_on_reply(struct node_req *nr, struct evbuffer *in, const char *bytes,
                            size_t len, const struct reply_scanner *s)
{
    struct request *r = request_of(nr);
    if (r->block_parts) {
        if (block_redirected(r, in, len, s))
            return;
        if (r->exec_upkeep)
            tx_exec_upkeep(r);
        if ((r->exec_fix || r->exec_locals) && s->type == '*' &&
            deliver_exec_array(r, in, bytes, len))
            return;
    } else if (s->type == '-') {
        char c = s->errline[0];
        if (c == 'M' || c == 'A' || c == 'T' || c == 'C') {
            int slot;
            char addr[128];
            enum reply_redirect kind = reply_classify(s->errline, strlen(s->errline),
                                                      &slot, addr, sizeof addr);
            if (kind != REPLY_PLAIN && r->cmd && scriptcmd_runs_code(r->cmd)) {
                if (script_confirm_start(r, nr->conn, kind, slot, s->errline)) {
                    if (in)
                        evbuffer_drain(in, len);
                    return;
                }
            } else if (kind != REPLY_PLAIN && router_redirect(r, kind, slot, addr)) {
                if (in)
                    evbuffer_drain(in, len);
                return;
            }
        } else if (c == 'N' && strncmp(s->errline, "NOSCRIPT", 8) == 0 &&
                   router_noscript(r, nr->conn)) {
            if (in)
                evbuffer_drain(in, len);
            return;
        }
    }
    if (len == 5 && index_null_array(r, in, bytes, len)) {
        if (in)
            evbuffer_drain(in, len);
        request_deliver(r, NULL, "*-1\r\n", 5);
        return;
    }
    if ((r->conn_kind == REQ_CONN_DEDICATED && (r->cmd->flags & CMD_BLOCKING) && s->type != '-') ||
        script_may_write(r))
        tx_index_upkeep(r);
    if (deliver_legacy_keys(r, in, bytes, len, s))
        return;
    request_deliver(r, in, bytes, len);
}

static void router_on_fail(struct node_req *nr, int may_have_run, const char *why)
{
    struct request *r = request_of(nr);
    struct worker *w = r->worker;
    char msg[400];
    worker_want_refresh(w);
    if (may_have_run && r->exec_upkeep)
        tx_exec_upkeep(r);
    if (!may_have_run && r->conn_kind == REQ_CONN_PINNED_EXEC) {
        /* the watch went with the connection: nothing ran, retry the WATCH */
        resp_add_null_array(request_reply_buffer(r), request_resp(r));
        request_finish(r);
        return;
    }
    if (!may_have_run && router_retry_later(r))
        return;
    if (may_have_run) {
        stat_inc(&w->stats.lost_replies);
        snprintf(msg, sizeof msg,
                 "ERR %s: connection to the node was lost; the command may have run", why);
    } else {
        snprintf(msg, sizeof msg, "ERR %s", why);
    }
    request_fail(r, msg);
}

/* ---- plans ---- */

int router_key_slot(struct request *r)
{
    int some[16], *keys;
    int n = request_keys_all(r, some, &keys);   /* malformed: none, the node will say */
    if (n == 0 && (r->cmd->flags & CMD_PUBSUB)) {   /* SPUBLISH: its channel hashes as a key */
        n = command_keys_ex(r->cmd, r->data, r->args, r->argc, some, 16, COMMAND_KEYS_NOT_KEYS);
        n = n < 0 ? 0 : n > 16 ? 16 : n;
    }
    int slot = -1;
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *k = request_arg(r, keys[i], &len);
        int s = slot_of(k, len);
        if (slot >= 0 && s != slot) {
            slot = -2;
            break;
        }
        slot = s;
    }
    if (keys != some)
        free(keys);
    return slot;
}

static void plan_forward(struct request *r)
{
    int slot = router_key_slot(r);
    if (slot == -2) {
        request_fail(r, "CROSSSLOT Keys in request don't hash to the same slot");
        return;
    }
    r->slot = slot;
    int wrapped = index_wrap_write(r, r->cmd, worker_layout(r->worker));
    if (wrapped < 0) {
        request_fail(r, index_wrap_error(wrapped));
        return;
    }
    router_send(r);
}

/* One part of a split: the command name, then the keys (and values) of one slot. */
static struct request *split_part(struct request *r, const int *idx, int nkeys, int step)
{
    struct request *part = request_new(r->worker);
    int argc = 1 + nkeys * step;
    const char **argv = malloc(sizeof *argv * (size_t)argc);
    size_t *lens = malloc(sizeof *lens * (size_t)argc);
    int *pos = malloc(sizeof *pos * (size_t)nkeys);
    if (!part || !argv || !lens || !pos)
        goto fail;
    argv[0] = request_arg(r, 0, &lens[0]);
    for (int k = 0; k < nkeys; k++) {
        pos[k] = idx[k];
        for (int j = 0; j < step; j++)
            argv[1 + k * step + j] = request_arg(r, 1 + idx[k] * step + j, &lens[1 + k * step + j]);
    }
    if (request_build(part, argc, argv, lens) < 0)
        goto fail;
    free(argv);
    free(lens);
    part->parent = r;
    part->seq = r->seq;
    part->positions = pos;
    part->npositions = nkeys;
    return part;
fail:
    free(argv);
    free(lens);
    free(pos);
    if (part)
        request_free(part);
    return NULL;
}

/*
 * Groups the keys by slot in one pass (a counting sort: a split of a
 * million keys over every slot must not cost keys times slots): idx lists
 * the key indexes slot by slot, each slot's in the command's order, from
 * idx[start[s]] to idx[start[s + 1]]; start has SLOT_COUNT + 1 zeroes.
 */
static void split_group(const int *slots, int nkeys, int *idx, int *start)
{
    for (int k = 0; k < nkeys; k++)
        start[slots[k] + 1]++;
    for (int s = 0; s < SLOT_COUNT; s++)
        start[s + 1] += start[s];
    for (int k = 0; k < nkeys; k++)
        idx[start[slots[k]]++] = k;
    for (int s = SLOT_COUNT; s > 0; s--)    /* back to each slot's first */
        start[s] = start[s - 1];
    start[0] = 0;
}

static void plan_split(struct request *r, enum merge_kind merge, int step)
{
    int nkeys = (r->argc - 1) / step;
    if ((r->argc - 1) % step != 0 || nkeys == 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "ERR wrong number of arguments for '%s' command", r->cmd->fullname);
        request_fail(r, msg);
        return;
    }
    int *slots = malloc(sizeof *slots * (size_t)nkeys);
    int *idx = malloc(sizeof *idx * (size_t)nkeys);
    int *start = NULL;
    char *sent = NULL;
    if (!slots || !idx)
        goto oom;
    int first = -1, single = 1;
    for (int k = 0; k < nkeys; k++) {
        size_t len;
        const char *key = request_arg(r, 1 + k * step, &len);
        slots[k] = slot_of(key, len);
        if (first < 0)
            first = slots[k];
        else if (slots[k] != first)
            single = 0;
    }
    if (single) {               /* the common case: nothing to split */
        r->slot = first;
        int wrapped = index_wrap_write(r, r->cmd, worker_layout(r->worker));
        if (wrapped < 0) {
            request_fail(r, index_wrap_error(wrapped));
            goto out;
        }
        router_send(r);
        goto out;
    }
    start = calloc(SLOT_COUNT + 1, sizeof *start);
    sent = calloc(SLOT_COUNT, 1);
    if (!start || !sent || !(r->parts = calloc((size_t)nkeys, sizeof *r->parts)))
        goto oom;
    r->merge = merge;
    r->parts_left = 1;          /* released by request_parts_sent() */
    split_group(slots, nkeys, idx, start);
    for (int k = 0; k < nkeys; k++) {   /* parts in the order of their first key */
        int s = slots[k];
        if (sent[s])
            continue;
        sent[s] = 1;
        struct request *part = split_part(r, idx + start[s], start[s + 1] - start[s], step);
        if (!part) {
            r->merge = MERGE_FAILED;     /* the parts sent still answer */
            break;
        }
        part->slot = slots[k];
        if (index_wrap_write(part, r->cmd, worker_layout(r->worker)) < 0) {
            request_free(part);
            r->merge = MERGE_FAILED;
            break;
        }
        r->parts[r->nparts++] = part;
        r->parts_left++;
        router_send(part);
    }
    request_parts_sent(r);
    goto out;
oom:
    request_fail(r, "ERR out of memory");
out:
    free(slots);
    free(idx);
    free(start);
    free(sent);
}

void router_fanout(struct request *parent, enum merge_kind merge, int argc,
                   const char *const *argv, const size_t *lens)
{
    int n = parent->worker->topo->nnodes;
    if (router_parts_open(parent, merge, n) < 0)
        return;
    for (int i = 0; i < n; i++)
        router_part_send(parent, i, argc, argv, lens);
    request_parts_sent(parent);
}

int router_parts_open(struct request *parent, enum merge_kind merge, int n)
{
    parent->parts = calloc((size_t)(n > 0 ? n : 1), sizeof *parent->parts);
    if (!parent->parts) {
        request_fail(parent, "ERR out of memory");
        return -1;
    }
    parent->merge = merge;
    parent->parts_left = 1;         /* until request_parts_sent */
    return 0;
}

struct request *router_part_add(struct request *parent, int node, int argc,
                                const char *const *argv, const size_t *lens)
{
    if (parent->merge == MERGE_FAILED)
        return NULL;
    struct request *part = request_new(parent->worker);
    if (!part || request_build(part, argc, argv, lens) < 0) {
        if (part)
            request_free(part);
        parent->merge = MERGE_FAILED;
        return NULL;
    }
    part->parent = parent;
    part->seq = parent->seq;
    part->fixed_node = node;
    parent->parts[parent->nparts++] = part;
    parent->parts_left++;
    return part;
}

void router_part_send(struct request *parent, int node, int argc, const char *const *argv,
                      const size_t *lens)
{
    struct request *part = router_part_add(parent, node, argc, argv, lens);
    if (part)
        router_send(part);
}

/*
 * SCAN across the cluster: the proxy's cursor is (master's cursor) * 256 +
 * (master index), so 0 starts at the first master, and a master's scan
 * that ends moves on to the next one; the last one's end is 0. Each call
 * asks one master, with the client's own options (MATCH, COUNT, TYPE).
 */
#define SCAN_NODES_MAX 256

void router_scan(struct request *r, int match_arg, const char *match, size_t match_len)
{
    struct worker *w = r->worker;
    size_t len;
    const char *arg = request_arg(r, 1, &len);
    char buf[32], *end;
    /* read as Redis reads it: strtoull, no leading blank, "" is 0 */
    if (len >= sizeof buf || (len > 0 && (arg[0] == ' ' || arg[0] == '\t'))) {
        request_fail(r, "ERR invalid cursor");
        return;
    }
    memcpy(buf, arg, len);
    buf[len] = '\0';
    errno = 0;
    unsigned long long cursor = strtoull(buf, &end, 10);
    int node = (int)(cursor % SCAN_NODES_MAX);
    if (*end || errno || node >= w->topo->nnodes || w->topo->nnodes > SCAN_NODES_MAX) {
        request_fail(r, w->topo->nnodes > SCAN_NODES_MAX
                            ? "ERR SCAN through the proxy supports at most 256 masters"
                            : "ERR invalid cursor");
        return;
    }
    char node_cursor[24];
    snprintf(node_cursor, sizeof node_cursor, "%llu", cursor / SCAN_NODES_MAX);
    size_t *lens;
    const char **argv = request_argv_new(r, &lens);
    if (!argv) {
        request_fail(r, "ERR out of memory");
        return;
    }
    argv[1] = node_cursor;
    lens[1] = strlen(node_cursor);
    if (match_arg > 1 && match_arg < r->argc) {
        argv[match_arg] = match;
        lens[match_arg] = match_len;
    }
    struct request *part = request_new(w);
    r->parts = calloc(1, sizeof *r->parts);
    int built = part && r->parts ? request_build(part, r->argc, argv, lens) : -1;
    free(argv);
    if (built < 0) {
        if (part)
            request_free(part);
        request_fail(r, "ERR out of memory");
        return;
    }
    r->merge = MERGE_SCAN;
    r->scan_node = node;
    r->parts[r->nparts++] = part;
    r->parts_left = 2;
    part->parent = r;
    part->seq = r->seq;
    part->fixed_node = node;
    router_send(part);
    request_parts_sent(r);
}

/* Run r's own bytes on every master. */
static void plan_everywhere(struct request *r, enum merge_kind merge)
{
    size_t *lens;
    const char **argv = request_argv_new(r, &lens);
    if (!argv) {
        request_fail(r, "ERR out of memory");
        return;
    }
    router_fanout(r, merge, r->argc, argv, lens);
    free(argv);
}

static void plan_dangerous(struct request *r, int everywhere)
{
    char msg[256];
    if (!r->worker->cfg->enable_dangerous_commands) {
        snprintf(msg, sizeof msg,
                 "ERR '%s' is a dangerous command and is disabled on this proxy "
                 "(set enable-dangerous-commands yes to allow it)", r->cmd->fullname);
        request_fail(r, msg);
        return;
    }
    if (everywhere)
        plan_everywhere(r, MERGE_ALL_OK);
    else
        plan_forward(r);
}

static void plan_refused(struct request *r, const struct route *rt)
{
    char msg[300];
    snprintf(msg, sizeof msg, "ERR '%s' is refused: %s", r->cmd->fullname, rt->why);
    request_fail(r, msg);
}

static int request_is_blocking_read(const struct request *r)
{
    /* XREAD/XREADGROUP block only with BLOCK */
    if (!(r->cmd->flags & CMD_BLOCKING))
        return 0;
    for (int i = 1; i < r->argc; i++) {
        size_t len;
        const char *a = request_arg(r, i, &len);
        if (len == 5 && strncasecmp(a, "block", 5) == 0)
            return 1;
        if (len == 7 && strncasecmp(a, "streams", 7) == 0)
            break;
    }
    return 0;
}

void router_reject(struct request *r, const char *msg)
{
    if (r->cmd && strcmp(r->cmd->fullname, "exec") == 0) {
        tx_exec_rejected(r, msg);
        return;
    }
    tx_note_error(r->client);
    request_fail(r, msg);
}

/* The command r names, its subcommand resolved and its arity checked, or
 * NULL when r is answered (unknown command, wrong number of arguments). */
static const struct command *resolve_command(struct request *r)
{
    size_t len;
    const char *name = request_arg(r, 0, &len);
    const struct command *cmd = command_lookup(name, len);
    struct client *c = r->client;
    char msg[200];

    if (!cmd) {
        tx_note_error(c);
        reply_unknown_command(r);
        return NULL;
    }
    if (cmd->nsubcommands && r->argc >= 2) {
        const char *sub = request_arg(r, 1, &len);
        const struct command *sc = command_lookup_sub(cmd, sub, len);
        if (!sc) {
            tx_note_error(c);
            reply_unknown_subcommand(r);
            return NULL;
        }
        cmd = sc;
    }
    r->cmd = cmd;
    c->lastcmd = cmd->fullname;
    if (!command_arity_ok(cmd, r->argc)) {
        snprintf(msg, sizeof msg, "ERR wrong number of arguments for '%s' command", cmd->fullname);
        router_reject(r, msg);
        return NULL;
    }
    return cmd;
}

/* Whether r's client may run cmd now (its user, AUTH, ACL, MONITOR), else
 * r is answered with the error Redis gives. */
static int client_may_run(struct request *r, const struct command *cmd)
{
    struct client *c = r->client;
    char msg[200];

    if (c->user_snap != r->worker->snap && client_user_refresh(c) < 0) {
        /* as Redis closes the connections of a deleted user */
        snprintf(msg, sizeof msg, "NOAUTH user '%s' was removed by a config reload",
                 c->user->name);
        request_fail(r, msg);
        client_close_after_replies(c);
        return 0;
    }
    if (!c->authenticated && !(cmd->flags & CMD_NO_AUTH)) {
        router_reject(r, "NOAUTH Authentication required.");
        return 0;
    }
    /* as Redis: AUTH and HELLO (no-auth commands) are never denied */
    if (!acl_allows(c->user, cmd) && !(cmd->flags & CMD_NO_AUTH)) {
        snprintf(msg, sizeof msg, "NOPERM this user has no permissions to run the '%s' command",
                 cmd->fullname);
        router_reject(r, msg);
        return 0;
    }
    if (c->monitoring && (cmd->flags & (CMD_WRITE | CMD_READONLY | CMD_MAY_REPLICATE))) {
        router_reject(r, "ERR Replica can't interact with the keyspace");   /* as Redis */
        return 0;
    }
    return 1;
}

/* Legacy key names become cluster names before anything is planned by
 * them (slots, splits). Once: a request parked by tx.h comes through the
 * router again. 0, or -1 with r answered. */
static int rewrite_keys(struct request *r, const struct route *rt)
{
    const struct layout *layout = worker_layout(r->worker);
    if (!layout || rt->keyless || r->rewritten)
        return 0;
    if (rewrite_request(r, layout) < 0) {
        request_fail(r, "ERR out of memory");
        return -1;
    }
    r->rewritten = 1;
    return 0;
}

void router_dispatch(struct request *r)
{
    struct client *c = r->client;

    if (c->tx && tx_park_if_waiting(r))
        return;
    client_reply_mode_take(c, r);       /* its predecessors have run */
    const struct command *cmd = resolve_command(r);
    if (!cmd || !client_may_run(r, cmd))
        return;
    if (client_intercept(r))        /* a family's mode: subscribed */
        return;
    const struct route *rt = route_of(cmd);
    if (rt->plan != ROUTE_REFUSED && __atomic_load_n(&watchers, __ATOMIC_RELAXED))
        watcher(r);             /* as sent: before the key layout rewrites it */
    if (rewrite_keys(r, rt) < 0)
        return;
    if (rt->plan == ROUTE_FORWARD && request_is_blocking_read(r))
        rt = route_blocking_read();
    if (c->tx && tx_dispatch(r, rt->in_multi))
        return;
    switch (rt->plan) {
    case ROUTE_FORWARD:
        plan_forward(r);
        return;
    case ROUTE_FAMILY:
        rt->run(r);
        return;
    case ROUTE_SPLIT:
        plan_split(r, rt->merge, rt->step);
        return;
    case ROUTE_EVERYWHERE:
        plan_dangerous(r, 1);
        return;
    case ROUTE_DANGEROUS:
        plan_dangerous(r, 0);
        return;
    case ROUTE_REFUSED:
        plan_refused(r, rt);
        return;
    }
}
