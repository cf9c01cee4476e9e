#include "proxy/core/router.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "lib/base/log.h"
#include "cluster/backoff.h"
#include "cluster/learned.h"
#include "cluster/slot.h"
#include "proxy/config/acl.h"
#include "proxy/core/acks.h"
#include "proxy/core/readfrom.h"
#include "proxy/core/client.h"
#include "proxy/core/merge.h"
#include "proxy/core/proxy.h"
#include "proxy/core/rewrite.h"
#include "proxy/core/route.h"
#include "proxy/core/scriptload.h"
#include "proxy/core/scripts.h"
#include "proxy/core/userconn.h"
#include "proxy/core/worker.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"
#include "lib/proto/reply.h"

static const char not_proxy[] = "cannot mean the same thing through a cluster proxy";
static const char one_node[] = "this CLUSTER subcommand asks about one node of the cluster, "
                               "and the proxy answers as a single node that owns every slot: "
                               "run it on the nodes";

#define SPLIT(name, how, args) \
    { name, { .plan = ROUTE_SPLIT, .merge = how, .step = args } }
#define EVERYWHERE(name) { name, { .plan = ROUTE_EVERYWHERE } }
#define FORWARD(name) { name, { .plan = ROUTE_FORWARD } }
#define REFUSED(name, reason) { name, { .plan = ROUTE_REFUSED, .why = reason } }

/* The commands the router plans itself, other than by their keys. */
static const struct route_entry router_routes[] = {
    SPLIT("mget", &merge_mget, 1), SPLIT("mset", &merge_all_ok, 2),
    SPLIT("del", &merge_sum, 1), SPLIT("unlink", &merge_sum, 1),
    SPLIT("exists", &merge_sum, 1), SPLIT("touch", &merge_sum, 1),
    EVERYWHERE("flushall"), EVERYWHERE("flushdb"),
    EVERYWHERE("config|rewrite"), EVERYWHERE("save"),
    EVERYWHERE("bgsave"), EVERYWHERE("bgrewriteaof"),
    EVERYWHERE("latency|reset"), EVERYWHERE("memory|purge"),
    FORWARD("publish"),
    REFUSED("move", not_proxy), REFUSED("swapdb", not_proxy), REFUSED("migrate", not_proxy),
    REFUSED("sync", not_proxy), REFUSED("psync", not_proxy), REFUSED("replconf", not_proxy),
    REFUSED("replicaof", not_proxy), REFUSED("slaveof", not_proxy),
    REFUSED("failover", not_proxy), REFUSED("shutdown", not_proxy),
    REFUSED("debug", not_proxy), REFUSED("module", not_proxy), REFUSED("module|*", not_proxy),
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

static void (*on_denied)(struct request *r, int verdict, int errpos);

void router_register_denied(void (*denied)(struct request *r, int verdict, int errpos))
{
    on_denied = denied;
}

void router_watching(int delta)
{
    __atomic_add_fetch(&watchers, delta, __ATOMIC_RELAXED);
}

/* The family that provides connections other than the shared ones. */
static struct node_conn *(*family_conn)(struct request *r, int node, const char **why);
static uint64_t (*family_wait_ms)(const struct request *r);

void router_register_conns(struct node_conn *(*conn)(struct request *r, int node,
                                                     const char **why),
                           uint64_t (*wait_ms)(const struct request *r))
{
    family_conn = conn;
    family_wait_ms = wait_ms;
}

/* The family that wraps writes (the index script). */
static const char *(*write_wrap)(struct request *r, const struct command *cmd);

void router_register_write_wrap(const char *(*wrap)(struct request *r, const struct command *cmd))
{
    write_wrap = wrap;
}

void router_init(void)
{
    client_init(router_dispatch);
    request_merge_register(merge_replies);
    acks_register();
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

void router_reply_unknown_subcommand(struct request *r)
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

static node_reply_fn router_on_reply, router_on_part;
static void router_on_fail(struct node_req *nr, int may_have_run, const char *why);

/*
 * Order of execution. A command waiting out a backoff has not run, and a
 * later command of the same client must not overtake it (SET k then GET k
 * must not run as GET k then SET k). So a client's retries wait together in
 * its held_back list, in the order the client sent them, and while that
 * list is not empty the client's next commands (and redirected ones) join
 * it instead of going out; when the backoff ends, all go out in order.
 * A script whose redirect-like error is being confirmed (scriptreply.c)
 * holds them the same way, released ones included, until its
 * confirmation ends (it is resent, retried later, or its error is given).
 * (A command already at a node when an earlier one was refused can still
 * run first: the cluster refused the earlier one, not the proxy.)
 */
static void hold_insert(struct client *c, struct request *r)
{
    request_queue_insert(&c->held_back, r);
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
    /* read once: failing the last request may free a gone client */
    int gone = c->state == CLIENT_GONE;
    TAILQ_CONCAT(&batch, &c->held_back, hold_link);
    while ((r = TAILQ_FIRST(&batch)) != NULL) {
        TAILQ_REMOVE(&batch, r, hold_link);
        if (gone) {                         /* as router_retry_later */
            request_fail(r, "ERR the client has gone");
            continue;
        }
        r->releasing = 1;
        router_send(r);
        r->releasing = 0;
        if (!TAILQ_EMPTY(&c->held_back)) {
            TAILQ_CONCAT(&c->held_back, &batch, hold_link);
            break;
        }
    }
}

/* What held c's requests back is over (its reads are in, for a write
 * parked behind them: acks.h, readfrom.h; a script's confirmation): they go
 * out in order, unless a backoff holds them, whose end sends them. */
void router_release_held(struct client *c)
{
    if (!c->retry_timer || !evtimer_pending(c->retry_timer, NULL))
        held_release_cb(-1, 0, c);
}

/* Resend r after a backoff, in its client's order (every routed request
 * has a client: its own, or its parent's). 0 when its retries are used up. */
static int router_retry_later(struct request *r)
{
    struct worker *w = r->worker;
    const struct config *cfg = w->cfg;
    struct client *owner = request_owner(r);
    /* a command that has not run is not run for a client that has gone:
     * Redis drops what a closed client left unread */
    if (owner->state == CLIENT_GONE)
        return 0;
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
    if (!owner->retry_timer)
        owner->retry_timer = evtimer_new(w->base, held_release_cb, owner);
    if (!owner->retry_timer)
        return 0;
    hold_insert(owner, r);
    if (!evtimer_pending(owner->retry_timer, NULL))
        evtimer_add(owner->retry_timer, &tv);
    return 1;
}

/* A master that cannot be reached is given node-timeout-ms from when the
 * command came (and at most the connect it waits on then), not a connect
 * timeout per retry: worker_conn holds a failed connect off for a connect
 * timeout, and the retries in between cost only their backoff. */
static int unreachable_too_long(struct request *r)
{
    const struct request *top = r->parent ? r->parent : r;
    uint64_t waited_us = io_loop_now_us(&r->worker->loop) - top->start_us;
    return top->start_us && waited_us >= (uint64_t)r->worker->cfg->node_timeout_ms * 1000;
}

/* r's multiplexed connection to master `node`: the worker's shared one,
 * or its node user's for a restricted user's script (userconn.h). */
static struct node_conn *multiplexed_conn(struct request *r, int node)
{
    return r->as_user ? userconn_conn(r->as_user, node, request_resp(r))
                      : worker_conn(r->worker, node, request_resp(r));
}

void router_send(struct request *r)
{
    struct worker *w = r->worker;
    struct client *owner = request_owner(r);
    if (owner && (owner->confirming > 0 || (!r->releasing && !TAILQ_EMPTY(&owner->held_back)))) {
        hold_insert(owner, r);     /* behind the client's earlier commands */
        return;
    }
    int node = r->asking ? r->ask_node
             : r->fixed_node >= 0 ? r->fixed_node
             : worker_node_for_slot(w, r->slot);
    if (node >= 0 && owner) {
        int park;
        const char *refused;
        struct node_conn *replica = readfrom_route(r, node, &park, &refused);
        if (park) {             /* behind the client's reads on replicas (readfrom.h) */
            hold_insert(owner, r);
            return;
        }
        if (refused) {
            request_fail(r, refused);
            return;
        }
        if (replica) {
            router_send_on(r, replica);
            if (node_conn_congested(replica))
                client_pause_for(owner, replica);
            return;
        }
    }
    const char *why = NULL;
    struct node_conn *conn = node < 0 ? NULL
                           : r->conn_kind ? family_conn(r, node, &why)
                           : multiplexed_conn(r, node);
    if (node >= 0 && !r->conn_kind && !r->as_user) {
        int park;
        conn = acks_route(r, node, conn, &park);
        if (park) {             /* behind the client's reads (acks.h) */
            hold_insert(owner, r);
            return;
        }
    }
    if (!conn && why) {         /* no dedicated connection to be had */
        request_fail(r, why);
        return;
    }
    if (!conn) {
        if (node < 0)
            worker_want_refresh(w);
        if (node >= 0 && unreachable_too_long(r)) {
            request_fail(r, "ERR cannot connect to the node that serves this key "
                            "(for node-timeout-ms)");
            return;
        }
        if (!router_retry_later(r))
            request_fail(r, node < 0 ? "CLUSTERDOWN Hash slot not served"
                                     : "ERR cannot connect to the node that serves this key");
        return;
    }
    /* what WAIT will have to wait for (wait.h); parts have their parent's command */
    struct request *top = r->parent ? r->parent : r;
    if (owner && top->cmd && (r->block_parts || command_may_write(top->cmd)))
        owner->written_masters |= client_master_bit(node);
    router_send_on(r, conn);
    /* a node that does not keep up stops the clients that feed it */
    if (top->client && node_conn_usable(conn) && node_conn_congested(conn))
        client_pause_for(top->client, conn);
}

static void (*sending_hook)(struct request *r, struct node_conn *conn);

/* Whether a family marked r, or the request r is a part of. */
static int marked(const struct request *r)
{
    return r->marks || (r->parent && r->parent->marks);
}

void router_register_sending(void (*sending)(struct request *r, struct node_conn *conn))
{
    sending_hook = sending;
}

static void (*answered_hook)(struct request *r, struct node_conn *conn,
                             const struct reply_scanner *s);

void router_register_answered(void (*answered)(struct request *r, struct node_conn *conn,
                                               const struct reply_scanner *s))
{
    answered_hook = answered;
}

/* Redis's default busy-reply-threshold: a script silences its node this
 * long before the node answers BUSY to others (and the proxy's probe). */
#define REDIS_BUSY_REPLY_THRESHOLD_MS 5000

/* The silence a script (or a MULTI block, which may hold one) may add
 * before its node shows it is alive: with a node-timeout-ms as long as
 * busy-reply-threshold, its first BUSY would come just as the timeout
 * ends, so up to a second after the threshold. A shorter node-timeout-ms
 * asks for quick failure detection over slow scripts: no grace. */
static uint64_t script_grace_ms(const struct request *r)
{
    const struct command *cmd = request_top(r)->cmd;
    int timeout = r->worker->cfg->node_timeout_ms;
    long long grace = REDIS_BUSY_REPLY_THRESHOLD_MS + 1000 - timeout;
    if (timeout < REDIS_BUSY_REPLY_THRESHOLD_MS || grace <= 0 || !cmd ||
        !(command_runs_script(cmd) || r->block_parts))
        return 0;
    return (uint64_t)grace;
}

void router_send_on(struct request *r, struct node_conn *conn)
{
    if (r->evalsha && r->argc >= 2) {   /* before ASKING: it must precede the command */
        size_t len;
        const char *sha = request_arg(r, 1, &len);
        scriptload_unseen(conn, sha, len);
    }
    /* then what the family puts right before the command (CLIENT CACHING) */
    if (marked(r) && sending_hook)
        sending_hook(r, conn);
    if (r->asking) {        /* before a MULTI block too: it holds until EXEC */
        node_send_asking(conn);
        r->asking = 0;
    }
    readfrom_master_sent(r);
    const struct command *cmd = r->cmd ? r->cmd : request_top(r)->cmd;
    if (cmd && command_runs_script(cmd))
        request_script_sent(r, node_now_ms());
    r->nreq.on_reply = router_on_reply;
    r->nreq.on_fail = router_on_fail;
    r->nreq.on_part = router_on_part;
    r->nreq.extra_replies = r->block_parts;
    r->nreq.wait_ms = r->conn_kind ? family_wait_ms(r) : 0;
    r->nreq.busy_grace_ms = script_grace_ms(r);
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
    return node >= 0 ? multiplexed_conn(r, node) : NULL;
}

/*
 * An EVALSHA (a client's, or the proxy's own) answered NOSCRIPT: load the
 * body the proxy knows (scripts.h) on the node that answered and on the one
 * the resend goes to, then resend. NOSCRIPT proves the script did not run,
 * and the load is ahead of the resend on the connection. Twice at most per
 * command. 0: the client gets the NOSCRIPT.
 */
int router_noscript(struct request *r, struct node_conn *answered)
{
    char sha[SCRIPTS_SHA_HEX];
    size_t len, body_len;
    if (r->noscript_retries >= 2 || r->argc < 2)
        return 0;
    /* by its bytes, not r->evalsha: a write the index family wrapped is an
     * EVALSHA of the index script too */
    const char *name = request_arg(r, 0, &len);
    const struct command *sent = command_lookup(name, len);
    if (!sent || !(sent->proxy_facts & CMDP_SCRIPT_SHA))
        return 0;
    const char *arg = request_arg(r, 1, &len);
    char *body = scripts_sha_parse(arg, len, sha) == 0 ? scripts_body_copy(sha, &body_len) : NULL;
    if (!body)
        return 0;
    r->noscript_retries++;
    if (answered && node_conn_usable(answered))
        scriptload_on(answered, body, body_len);
    struct node_conn *next = router_next_conn(r);
    if (next && next != answered && node_conn_usable(next))
        scriptload_on(next, body, body_len);
    free(body);
    log_verbose("scripts", "NOSCRIPT for %s from %s: body loaded, EVALSHA resent", sha,
                answered ? answered->addr : "?");
    router_send(r);
    return 1;
}

/* Follow a redirect or schedule a retry. 0: give the error to the client. */
int router_redirect(struct request *r, enum reply_redirect kind, int slot, const char *addr)
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
        readfrom_slot_moved(w, slot, kind == REPLY_ASK);
        node = topology_find(w->topo, addr);
        if (node < 0)       /* not announced: follow only once a refresh says so */
            worker_want_refresh(w);
        if (node >= 0 && r->redirects < w->cfg->max_redirects) {
            r->redirects++;
            if (kind == REPLY_MOVED) {
                w->slot_node[slot] = (int16_t)node;
                /* a key the proxy's specs did not find (PFMERGE dest with no
                 * source: Redis finds the destination): the node's slot
                 * routes the resend, as a cluster client follows it */
                if (r->slot < 0 && r->fixed_node < 0)
                    r->slot = slot;
            } else {
                r->asking = 1;
                r->ask_node = node;
            }
            router_send(r);
            return 1;
        }
        return router_retry_later(r);
    case REPLY_TRYAGAIN:
        readfrom_slot_moved(w, r->slot, 1);
        return router_retry_later(r);
    case REPLY_CLUSTERDOWN:
        return router_retry_later(r);
    default:
        return 0;
    }
}

/* A reply the node sends before r's own (a MULTI block's): its family's. */
static void router_on_part(struct node_req *nr, const struct reply_view *v,
                           const struct reply_scanner *s)
{
    struct request *r = request_of(nr);
    if (r->hooks && r->hooks->extra)
        r->hooks->extra(r, s);
    reply_view_drop(v);
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
static int deliver_legacy_keys(struct request *r, const struct reply_view *v,
                               const struct reply_scanner *s)
{
    enum rewrite_reply_shape shape;
    const struct layout *layout = worker_layout(r->worker);
    if (!layout || (s->type != '*' && s->type != '%') || r->block_parts || r->parent ||
        !reply_key_shape(r->cmd, &shape))
        return 0;
    const char *reply = reply_view_head(v, v->len);
    struct evbuffer *out = request_reply_buffer(r);
    if (!reply || !out)
        return 0;
    int rc = rewrite_reply_keys(layout, reply, v->len, shape, out);
    if (rc == -2) {
        evbuffer_drain(out, evbuffer_get_length(out));
        resp_add_error(out, REPLY_ERR_OOM);
    } else if (rc < 0) {
        return 0;
    }
    reply_view_drop(v);
    request_finish(r);
    return 1;
}

/* An error the router acts on: a redirect or retry (MOVED, ASK, TRYAGAIN,
 * CLUSTERDOWN), or NOSCRIPT to an EVALSHA. 1: r goes out again. */
static int router_resends(struct request *r, struct node_conn *from, const char *errline)
{
    char c = errline[0];
    if (c == 'M' || c == 'A' || c == 'T' || c == 'C') {
        int slot;
        char addr[128];
        enum reply_redirect kind = reply_classify(errline, strlen(errline), &slot, addr,
                                                  sizeof addr);
        return kind != REPLY_PLAIN && router_redirect(r, kind, slot, addr);
    }
    return c == 'N' && strncmp(errline, "NOSCRIPT", 8) == 0 && router_noscript(r, from);
}

/* r's reply: its family's, a redirect or retry, or its client's. */
static void take_reply(struct request *r, struct node_req *nr, const struct reply_view *v,
                       const struct reply_scanner *s, int was_replica)
{
    if (was_replica && s->type == '-' && readfrom_refused_by_replica(r, s->errline)) {
        reply_view_drop(v);
        router_send(r);         /* to the master */
        return;
    }
    if (r->hooks && r->hooks->reply && r->hooks->reply(r, nr->conn, v, s))
        return;
    if (s->type == '-' && !r->block_parts && router_resends(r, nr->conn, s->errline)) {
        reply_view_drop(v);
        return;
    }
    if (marked(r) && answered_hook)
        answered_hook(r, nr->conn, s);
    if (deliver_legacy_keys(r, v, s))
        return;
    request_deliver(r, v);
}

/* The writes a client parked behind its reads (acks.h, readfrom.h) go once
 * the reply is taken: a read that reply sends again goes out first, ahead
 * of them in the client's held list. (The client lives while a request of
 * its waits there.) */
static void router_on_reply(struct node_req *nr, const struct reply_view *v,
                            const struct reply_scanner *s)
{
    struct request *r = request_of(nr);
    struct client *owner = request_owner(r);
    int was_replica, release = acks_answered(r);
    request_script_back(r);
    release |= readfrom_answered(r, 1, 0, &was_replica);
    take_reply(r, nr, v, s, was_replica);
    if (release)
        router_release_held(owner);
}

/* r failed: a replica's read goes to the master; else a retry, or its error. */
static void take_fail(struct request *r, int may_have_run, const char *why, int was_replica)
{
    struct worker *w = r->worker;
    char msg[400];
    if (was_replica) {          /* a read: the master runs it (perhaps again) */
        r->no_replica = 1;
        stat_inc(&w->stats.reads_replica_back);
        router_send(r);
        return;
    }
    worker_want_refresh(w);
    if (r->hooks && r->hooks->fail && r->hooks->fail(r, may_have_run))
        return;
    if (!may_have_run && !unreachable_too_long(r) && router_retry_later(r))
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

static void router_on_fail(struct node_req *nr, int may_have_run, const char *why)
{
    struct request *r = request_of(nr);
    struct client *owner = request_owner(r);
    int was_replica, release = acks_answered(r);
    request_script_back(r);
    release |= readfrom_answered(r, may_have_run, 1, &was_replica);
    take_fail(r, may_have_run, why, was_replica);
    if (release)
        router_release_held(owner);
}

/* ---- plans ---- */

/* The slot of every name a glob can match, when its hash tag is fixed:
 * literal text, '{', a non-empty literal tag, '}' (all names then hash by
 * that tag); else -1. */
static int glob_slot(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (strchr("*?[\\", p[i]))
            return -1;
        if (p[i] != '{')
            continue;
        size_t end = i + 1;
        while (end < len && p[end] != '}' && !strchr("*?[\\", p[end]))
            end++;
        return end < len && p[end] == '}' && end > i + 1 ? slot_of(p, end + 1) : -1;
    }
    return -1;
}

/* KEYS pattern, SCAN ... MATCH pattern: the slot of the names it lists when
 * the pattern fixes their hash tag (glob_slot), else -1. With a key layout,
 * only a pattern that starts with its tag: no layout name can match it. */
int router_listing_pattern(const struct request *r)
{
    int at = -1;
    if ((r->cmd->proxy_facts & CMDP_PATTERN_FIRST) && r->argc == 2)
        at = 1;
    for (int i = 2; (r->cmd->proxy_facts & CMDP_PATTERN_MATCH) && i + 1 < r->argc; i += 2)
        if (request_arg_is(r, i, "match"))
            at = i + 1;     /* the last MATCH, as Redis */
    return at;
}

static int listing_slot(const struct request *r)
{
    int at = router_listing_pattern(r);
    size_t len;
    const char *p = at > 0 ? request_arg(r, at, &len) : NULL;
    if (!p || (worker_layout(r->worker) && (len == 0 || p[0] != '{')))
        return -1;
    return glob_slot(p, len);
}

int router_key_slot(struct request *r)
{
    int some[16], *keys;
    int n = request_keys_all(r, some, &keys);   /* malformed: none, the node will say */
    if (n == 0 && (r->cmd->flags & CMD_PUBSUB)) {   /* SPUBLISH: its channel hashes as a key */
        n = command_keys_ex(r->cmd, r->data, r->args, r->argc, some, 16, COMMAND_KEYS_NOT_KEYS);
        n = n < 0 ? 0 : n > 16 ? 16 : n;
    }
    if (n == 0)
        return listing_slot(r);
    int slot = SLOT_NONE;
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *k = request_arg(r, keys[i], &len);
        int s = slot_of(k, len);
        if (slot >= 0 && s != slot) {
            slot = SLOT_CROSS;
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
    if (slot == SLOT_CROSS) {
        request_fail(r, REPLY_ERR_CROSSSLOT);
        return;
    }
    r->slot = slot;
    const char *why = write_wrap ? write_wrap(r, r->cmd) : NULL;
    if (why) {
        request_fail(r, why);
        return;
    }
    router_send(r);
}

/*
 * Where a split command's keys are: argv[0..head) come first (the name, and
 * a numkeys at numkeys_at, which each part gets its own count in), then
 * nkeys groups of step arguments, a key first in each, then the arguments
 * after them (MSETEX's NX, EX ...), which every part gets too.
 */
struct split_shape {
    int head, step, nkeys, numkeys_at;      /* numkeys_at -1: none */
};

/* The shape of MSET's kind: every argument after the name, step at a
 * time, a key first. 0, or -1 when the arguments are not whole groups. */
static int mset_shape(const struct request *r, int step, struct split_shape *sh)
{
    *sh = (struct split_shape){ 1, step, (r->argc - 1) / step, -1 };
    return (r->argc - 1) % step == 0 && sh->nkeys > 0 ? 0 : -1;
}

/* One part of a split: the arguments before the keys (its own numkeys),
 * the keys (and values) of one slot, nkeys of them, then the arguments
 * after the keys. */
static struct request *split_part(struct request *r, const int *idx, int nkeys,
                                  const struct split_shape *sh)
{
    struct request *part = request_new(r->worker);
    int after = sh->head + sh->nkeys * sh->step, tail = r->argc - after;
    int argc = sh->head + nkeys * sh->step + tail;
    const char **argv = malloc(sizeof *argv * (size_t)argc);
    size_t *lens = malloc(sizeof *lens * (size_t)argc);
    int *pos = malloc(sizeof *pos * (size_t)nkeys);
    char count[24];
    if (!part || !argv || !lens || !pos)
        goto fail;
    for (int i = 0; i < sh->head; i++)
        argv[i] = request_arg(r, i, &lens[i]);
    if (sh->numkeys_at >= 0) {
        lens[sh->numkeys_at] = (size_t)snprintf(count, sizeof count, "%d", nkeys);
        argv[sh->numkeys_at] = count;
    }
    for (int k = 0; k < nkeys; k++) {
        pos[k] = idx[k];
        for (int j = 0; j < sh->step; j++) {
            int to = sh->head + k * sh->step + j;
            argv[to] = request_arg(r, sh->head + idx[k] * sh->step + j, &lens[to]);
        }
    }
    for (int i = 0; i < tail; i++) {
        int to = sh->head + nkeys * sh->step + i;
        argv[to] = request_arg(r, after + i, &lens[to]);
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

/* r split as sh says: a part per slot of its keys, in the order of each
 * slot's first key, merged by merge; sent whole when they share a slot. */
static void plan_split_shaped(struct request *r, const struct merge *merge,
                              const struct split_shape *sh)
{
    int nkeys = sh->nkeys, step = sh->step;
    int *slots = malloc(sizeof *slots * (size_t)nkeys);
    int *idx = malloc(sizeof *idx * (size_t)nkeys);
    int *start = NULL;
    char *sent = NULL;
    if (!slots || !idx)
        goto oom;
    int first = -1, single = 1;
    for (int k = 0; k < nkeys; k++) {
        size_t len;
        const char *key = request_arg(r, sh->head + k * step, &len);
        slots[k] = slot_of(key, len);
        if (first < 0)
            first = slots[k];
        else if (slots[k] != first)
            single = 0;
    }
    if (single) {               /* the common case: nothing to split */
        r->slot = first;
        const char *why = write_wrap ? write_wrap(r, r->cmd) : NULL;
        if (why) {
            request_fail(r, why);
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
        struct request *part = split_part(r, idx + start[s], start[s + 1] - start[s], sh);
        if (!part) {
            r->merge = &merge_failed;     /* the parts sent still answer */
            break;
        }
        part->slot = slots[k];
        if (write_wrap && write_wrap(part, r->cmd)) {
            request_free(part);
            r->merge = &merge_failed;
            break;
        }
        r->parts[r->nparts++] = part;
        r->parts_left++;
        router_send(part);
    }
    request_parts_sent(r);
    goto out;
oom:
    request_fail(r, REPLY_ERR_OOM);
out:
    free(slots);
    free(idx);
    free(start);
    free(sent);
}

/* MGET-style: every argument after the name, step at a time, a key first. */
static void plan_split(struct request *r, const struct merge *merge, int step)
{
    struct split_shape sh;
    if (mset_shape(r, step, &sh) < 0) {
        char msg[160];
        request_fail(r, reply_arity(msg, sizeof msg, r->cmd->fullname));
        return;
    }
    plan_split_shaped(r, merge, &sh);
}

void router_fanout(struct request *parent, const struct merge *merge, int argc,
                   const char *const *argv, const size_t *lens)
{
    int n = parent->worker->topo->nnodes;
    if (router_parts_open(parent, merge, n) < 0)
        return;
    for (int i = 0; i < n; i++)
        router_part_send(parent, i, argc, argv, lens);
    request_parts_sent(parent);
}

int router_parts_open(struct request *parent, const struct merge *merge, int n)
{
    parent->parts = calloc((size_t)(n > 0 ? n : 1), sizeof *parent->parts);
    if (!parent->parts) {
        request_fail(parent, REPLY_ERR_OOM);
        return -1;
    }
    parent->merge = merge;
    parent->parts_left = 1;         /* until request_parts_sent */
    return 0;
}

struct request *router_part_add(struct request *parent, int node, int argc,
                                const char *const *argv, const size_t *lens)
{
    if (parent->merge == &merge_failed)
        return NULL;
    struct request *part = request_new(parent->worker);
    if (!part || request_build(part, argc, argv, lens) < 0) {
        if (part)
            request_free(part);
        parent->merge = &merge_failed;
        return NULL;
    }
    part->parent = parent;
    part->seq = parent->seq;
    part->fixed_node = node;
    parent->parts[parent->nparts++] = part;
    parent->parts_left++;
    return part;
}

static void alone_reply(struct node_req *nr, const struct reply_view *v,
                        const struct reply_scanner *s)
{
    (void)s;
    request_deliver(request_of(nr), v);
}

static void alone_fail(struct node_req *nr, int may_have_run, const char *why)
{
    char msg[300];
    snprintf(msg, sizeof msg, "ERR %s%s", why,
             may_have_run ? ": connection to the node was lost" : "");
    request_fail(request_of(nr), msg);
}

void router_ask_each_alone(struct request *parent, const struct merge *merge, int argc,
                           const char *const *argv, const size_t *lens)
{
    struct worker *w = parent->worker;
    int n = w->topo->nnodes;
    if (router_parts_open(parent, merge, n) < 0)
        return;
    for (int i = 0; i < n; i++) {
        struct request *part = router_part_add(parent, i, argc, argv, lens);
        if (!part)
            break;
        part->nreq.on_reply = alone_reply;
        part->nreq.on_fail = alone_fail;
        /* a master in its connect backoff, or silent since a shared
         * connection timed out there, would only make the answer wait */
        if (w->nodes[i].connect_after_ms > node_now_ms() || w->nodes[i].silent_ms) {
            alone_fail(&part->nreq, 0, "the node does not answer now");
            continue;
        }
        struct node_conn *c = worker_connect(w, i, &w->node_opts);
        if (!c) {
            alone_fail(&part->nreq, 0, "cannot connect to the node");
            continue;
        }
        node_send(c, &part->nreq, part->data, part->len);
        node_conn_retire(c);
    }
    request_parts_sent(parent);
}

void router_part_send(struct request *parent, int node, int argc, const char *const *argv,
                      const size_t *lens)
{
    struct request *part = router_part_add(parent, node, argc, argv, lens);
    if (part)
        router_send(part);
}

void router_fanout_own(struct request *r, const struct merge *merge)
{
    size_t *lens;
    const char **argv = request_argv_new(r, &lens);
    if (!argv) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    router_fanout(r, merge, r->argc, argv, lens);
    free(argv);
}

void router_plan_dangerous(struct request *r, int everywhere)
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
        router_fanout_own(r, &merge_all_ok);
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
    return (r->cmd->flags & CMD_BLOCKING) && request_block_arg(r) > 0;
}

void router_reject(struct request *r, const char *msg)
{
    const struct route *rt = r->cmd ? route_of(r->cmd) : NULL;
    if (rt && rt->refuse) {
        rt->refuse(r, msg);
        return;
    }
    client_refused(r->client);
    request_fail(r, msg);
}

/* ---- commands learned from the cluster (cluster/learned.h) ---- */

/* How the parts' replies of learned c combine, by its response_policy
 * tip; NULL when the proxy has no merge for it. */
static const struct merge *learned_merge(const struct command *c)
{
    if (c->tips & CMD_TIP_RESPONSE_ALL_SUCCEEDED)
        return &merge_all_ok;
    if (c->tips & CMD_TIP_RESPONSE_AGG_SUM)
        return &merge_sum;
    return NULL;
}

/* Whether a multi_shard command has a shape the proxy splits: one key
 * spec, its keys either from argument 1 to the last, keystep apart (as
 * MSET's), or counted by a numkeys before them, and the arguments after
 * them the same for every key (as Redis 8.4's MSETEX numkeys key value
 * ... [NX|XX] [EX s]). */
static int learned_splits(const struct command *c)
{
    const struct keyspec *k = c->nkeyspecs == 1 ? &c->keyspecs[0] : NULL;
    if (!k || k->bs != KSPEC_BS_INDEX || k->bs_u.index.pos < 1)
        return 0;
    if (k->fk == KSPEC_FK_RANGE)
        return k->bs_u.index.pos == 1 && k->fk_u.range.lastkey == -1 &&
               k->fk_u.range.limit == 0 && k->fk_u.range.keystep > 0;
    return k->fk == KSPEC_FK_KEYNUM && k->fk_u.keynum.keystep > 0 &&
           k->fk_u.keynum.firstkey > k->fk_u.keynum.keynumidx;
}

/* r's split shape (learned_splits said it has one): 0, or -1 when its
 * numkeys is not a count of the arguments there are (then the node that
 * gets it whole says so, as to any client). */
static int learned_shape(const struct request *r, struct split_shape *sh)
{
    const struct keyspec *k = &r->cmd->keyspecs[0];
    long long n;
    int pos = k->bs_u.index.pos;
    if (k->fk == KSPEC_FK_RANGE)
        return mset_shape(r, k->fk_u.range.keystep, sh);
    sh->numkeys_at = pos + k->fk_u.keynum.keynumidx;
    sh->head = pos + k->fk_u.keynum.firstkey;
    sh->step = k->fk_u.keynum.keystep;
    if (sh->numkeys_at >= r->argc || request_arg_ll(r, sh->numkeys_at, &n) < 0 ||
        n < 1 || n > (r->argc - sh->head) / sh->step)
        return -1;
    sh->nkeys = (int)n;
    return 0;
}

/* A learned command whose tips ask for it on several masters: split by
 * slot (multi_shard) or run on every master (all_shards), merged by its
 * response_policy (learned_refusal let only those through). 1 when r is
 * planned so. */
static int learned_fanout(struct request *r)
{
    const struct command *c = r->cmd;
    if (c->tips & CMD_TIP_REQUEST_MULTI_SHARD) {
        struct split_shape sh;
        if (learned_shape(r, &sh) < 0)
            return 0;               /* forwarded whole: its node answers the error */
        plan_split_shaped(r, learned_merge(c), &sh);
        return 1;
    }
    if (c->tips & CMD_TIP_REQUEST_ALL_SHARDS) {
        router_fanout_own(r, learned_merge(c));
        return 1;
    }
    return 0;
}

/* Why the proxy cannot serve learned command l, written into msg; NULL when
 * it can: forwarded by its keys, as a built-in forwarded command is, or by
 * its tips over several masters (learned_fanout). */
static const char *learned_refusal(const struct learned_command *l, int nmasters, char *msg,
                                   size_t cap)
{
    const struct command *c = l->cmd;
    const char *why = NULL;
    if (l->known_by < nmasters) {
        snprintf(msg, cap, "ERR '%s' is known to %d of the cluster's %d masters: the proxy "
                 "serves it once every master knows it (an upgrade under way?)", c->fullname,
                 l->known_by, nmasters);
        return msg;
    }
    if (route_of_learned(c)) {
        return NULL;                /* a family serves it */
    } else if (c->parent && !c->parent->learned_index) {
        why = "the proxy answers this command's other subcommands itself, and not this one yet";
    } else if (c->flags & (CMD_BLOCKING | CMD_PUBSUB)) {
        why = "the proxy does not serve a blocking or pub/sub command it learned";
    } else if ((c->tips & (CMD_TIP_REQUEST_ALL_NODES | CMD_TIP_REQUEST_SPECIAL |
                           CMD_TIP_UNKNOWN)) ||
               ((c->tips & CMD_TIP_REQUEST_MULTI_SHARD) && !learned_splits(c)) ||
               ((c->tips & (CMD_TIP_REQUEST_MULTI_SHARD | CMD_TIP_REQUEST_ALL_SHARDS)) &&
                !learned_merge(c))) {
        why = "its tips ask for a way of running it over the masters that the proxy does not "
              "run for a command it learned";
    } else {
        for (int i = 0; i < c->nkeyspecs && !why; i++) {
            const struct keyspec *k = &c->keyspecs[i];
            if (!(k->flags & KSPEC_NOT_KEY) && ((k->flags & KSPEC_INCOMPLETE) ||
                                                k->bs == KSPEC_BS_UNKNOWN ||
                                                k->fk == KSPEC_FK_UNKNOWN))
                why = "its key specs do not say where all its keys are";
        }
    }
    if (!why)
        return NULL;
    snprintf(msg, cap, "ERR '%s' is known to the cluster but not served through the proxy: %s",
             c->fullname, why);
    return msg;
}

/* The learned command named by r's arguments (its subcommand resolved, the
 * container built in or learned), or NULL; refused (r answered) when the
 * proxy cannot serve it: *answered. */
static const struct command *resolve_learned(struct request *r, const struct command *builtin,
                                             int *answered)
{
    const struct learned_set *set = r->worker->topo ? r->worker->topo->learned : NULL;
    char name[160], msg[400];
    size_t len, slen;
    const char *a = request_arg(r, 0, &len);
    *answered = 0;
    if (!set || len >= 64)
        return NULL;
    int n = snprintf(name, sizeof name, "%.*s", (int)len, a);
    if (builtin) {                  /* a subcommand the built-in container lacks */
        const char *sub = request_arg(r, 1, &slen);
        if (slen >= 64)
            return NULL;
        n += snprintf(name + n, sizeof name - (size_t)n, "|%.*s", (int)slen, sub);
    }
    const struct learned_command *l = learned_find(set, name, (size_t)n);
    const struct command *cmd = l ? l->cmd : NULL;
    if (cmd && !builtin && cmd->nsubcommands && r->argc >= 2) {
        const char *sub = request_arg(r, 1, &slen);
        cmd = command_lookup_sub(cmd, sub, slen);
        if (!cmd) {
            router_reply_unknown_subcommand(r);
            *answered = 1;
            return NULL;
        }
    }
    const char *why = l ? learned_refusal(l, set->nmasters, msg, sizeof msg) : NULL;
    if (why) {
        stat_inc(&r->worker->stats.learned_refused);
        request_fail(r, why);
        *answered = 1;
        return NULL;
    }
    return cmd;
}

/* The command r names, its subcommand resolved and its arity checked (the
 * cluster's arity when it differs: learned.h), or NULL when r is answered
 * (unknown command, wrong number of arguments). */
static const struct command *resolve_command(struct request *r)
{
    size_t len;
    const char *name = request_arg(r, 0, &len);
    const struct command *cmd = command_lookup(name, len);
    struct client *c = r->client;
    char msg[200];
    int answered;

    if (!cmd) {
        cmd = resolve_learned(r, NULL, &answered);
        if (!cmd) {
            client_refused(c);
            if (!answered)
                reply_unknown_command(r);
            return NULL;
        }
    } else if (cmd->nsubcommands && r->argc >= 2) {
        const char *sub = request_arg(r, 1, &len);
        const struct command *sc = command_lookup_sub(cmd, sub, len);
        if (!sc && !(sc = resolve_learned(r, cmd, &answered))) {
            client_refused(c);
            if (!answered)
                router_reply_unknown_subcommand(r);
            return NULL;
        }
        cmd = sc;
    }
    r->cmd = cmd;
    c->lastcmd = cmd->fullname;
    if (!command_arity_ok(learned_entry(r->worker->topo->learned, cmd), r->argc)) {
        router_reject(r, reply_arity(msg, sizeof msg, cmd->fullname));
        return NULL;
    }
    return cmd;
}

/* SORT's BY pattern and GET read keys no key spec names: as Redis, only a
 * user that may read every key gives them. 1 when r was refused. */
static int sort_refused(struct request *r, const struct command *cmd)
{
    if (!(cmd->proxy_facts & CMDP_PATTERN_KEYS))
        return 0;
    if (acl_full_key_access(r->client->user, cmd, r->data, r->args, r->argc))
        return 0;
    for (int i = 2; i + 1 < r->argc; i++) {
        size_t len, plen;
        const char *a = request_arg(r, i, &len);
        const char *pat = request_arg(r, i + 1, &plen);
        int by = len == 2 && strncasecmp(a, "by", 2) == 0;
        int get = len == 3 && strncasecmp(a, "get", 3) == 0;
        if ((by && memchr(pat, '*', plen)) || get) {
            router_reject(r, by ? "ERR BY option of SORT denied due to insufficient ACL "
                                  "permissions."
                                : "ERR GET option of SORT denied due to insufficient ACL "
                                  "permissions.");
            return 1;
        }
        if (len == 5 && strncasecmp(a, "limit", 5) == 0)
            i += 2;
        else if (by || get || (len == 5 && strncasecmp(a, "store", 5) == 0))
            i += 1;
    }
    return 0;
}

/* Whether r's client may run cmd now (its user, AUTH, ACL, MONITOR), else
 * r is answered with the error Redis gives. */
static int client_may_run(struct request *r, const struct command *cmd)
{
    struct client *c = r->client;
    char msg[200];

    if (c->user_snap != r->worker->snap && client_user_refresh(c) < 0) {
        /* as Redis closes the connections of a deleted user */
        snprintf(msg, sizeof msg, "NOAUTH user '%s' was removed or turned off by a config reload",
                 c->user->name);
        request_fail(r, msg);
        client_close_after_replies(c);
        return 0;
    }
    if (!c->authenticated && !(cmd->flags & CMD_NO_AUTH)) {
        router_reject(r, "NOAUTH Authentication required.");
        return 0;
    }
    /* as Redis: AUTH and HELLO (no-auth commands) are never denied; a
     * request parked after its check (and its keys' rewrite) is not
     * checked again */
    int errpos;
    enum acl_verdict v = r->acl_passed ? ACL_OK
                       : acl_check_fast(c->user, cmd,
                                        learned_entry(r->worker->topo->learned, cmd),
                                        r->data, r->args, r->argc, &errpos);
    if (v != ACL_OK && !(cmd->flags & CMD_NO_AUTH)) {
        if (v == ACL_DENIED_CMD)
            snprintf(msg, sizeof msg, "NOPERM this user has no permissions to run the '%s' "
                     "command", cmd->fullname);
        else
            snprintf(msg, sizeof msg, "NOPERM this user has no permissions to access one of "
                     "the %s used as arguments", v == ACL_DENIED_KEY ? "keys" : "channels");
        if (on_denied)
            on_denied(r, (int)v, errpos);
        router_reject(r, msg);
        return 0;
    }
    if (!r->acl_passed && !c->user->simple && sort_refused(r, cmd))
        return 0;
    r->acl_passed = 1;
    if (c->replica && (cmd->flags & (CMD_WRITE | CMD_READONLY | CMD_MAY_REPLICATE))) {
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
        request_fail(r, REPLY_ERR_OOM);
        return -1;
    }
    r->rewritten = 1;
    return 0;
}

/* A restricted user's script runs on its node user's connections
 * (userconn.h), with the user's rights. 0, or -1 with r answered. */
static int run_as_user(struct request *r)
{
    const char *why;
    if (!command_runs_script(r->cmd) || !r->client->user->restricted)
        return 0;
    r->as_user = userconn_of(r->worker, r->client->user, &why);
    if (r->as_user)
        return 0;
    router_reject(r, why);
    return -1;
}

void router_dispatch(struct request *r)
{
    struct client *c = r->client;

    if (client_hold(r))             /* behind the client's parked requests */
        return;
    client_reply_mode_take(c, r);       /* its predecessors have run */
    const struct command *cmd = resolve_command(r);
    if (!cmd || !client_may_run(r, cmd))
        return;
    if (client_intercept(r))        /* a family's mode: subscribed */
        return;
    const struct route *rt = route_of(cmd);
    if (rt->plan != ROUTE_REFUSED && __atomic_load_n(&watchers, __ATOMIC_RELAXED) &&
        !r->watched) {          /* once, though a parked request comes back here */
        r->watched = 1;
        watcher(r);             /* as sent: before the key layout rewrites it */
    }
    if (rewrite_keys(r, rt) < 0 || run_as_user(r) < 0)
        return;
    if (rt->plan == ROUTE_FORWARD && request_is_blocking_read(r))
        rt = route_blocking_read();
    if (client_take(r, rt))         /* a family's state: MULTI, WATCH */
        return;
    if (cmd->learned_index && rt->plan == ROUTE_FORWARD && learned_fanout(r))
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
        router_plan_dangerous(r, 1);
        return;
    case ROUTE_DANGEROUS:
        router_plan_dangerous(r, 0);
        return;
    case ROUTE_REFUSED:
        plan_refused(r, rt);
        return;
    }
}
