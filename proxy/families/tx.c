#include "proxy/families/tx.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/base/hash.h"
#include "cluster/learned.h"
#include "cluster/node.h"
#include "cluster/slot.h"
#include "proxy/config/acl.h"
#include "proxy/core/client.h"
#include "proxy/core/rewrite.h"
#include "proxy/core/router.h"
#include "proxy/core/scripts.h"
#include "proxy/core/userconn.h"
#include "proxy/core/worker.h"
#include "proxy/families/dedicated.h"
#include "proxy/families/index.h"
#include "proxy/families/txexec.h"
#include "proxy/families/wait.h"
#include "keylayout/index_lua.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"
#include "lib/proto/reply.h"
#include "lib/proto/resp.h"

/* A request that needs a dedicated connection not yet taken: no lane is it. */
#define LANE_NEW ((const void *)1)



/* The writes of a restricted user's transaction that the index script
 * wraps, as they were: should a script of the user's be queued too, the
 * block runs as the user's node user, which may not run the index script,
 * so they go as they came and their records' indexes are kept once EXEC
 * has run, as a script's are (exec_unwrap). */
struct tx_unwrap {
    size_t off, len;                /* the wrapped command in tx->queued */
    size_t orig_len;                /* the command as it was, next in bytes */
    int index;                      /* its place in the block */
};

struct tx_unwrapped {
    struct tx_unwrap *at;
    int n, cap;
    struct evbuffer *bytes;         /* the commands as they were, in order */
    struct evbuffer *keys;          /* their records' keys (as tx->upkeep) */
};

/* The keys a client WATCHes, each once (CLIENT LIST's watch=: Redis
 * counts a key watched twice once): their names' hashes, sorted. */
struct tx_watched {
    uint64_t *hash;
    int n, cap;
};

struct tx_state {
    /* MULTI */
    unsigned in_multi : 1;
    unsigned dirty : 1;             /* a command was refused: EXEC aborts */
    unsigned watching : 1;
    unsigned blocking : 1;          /* a blocking command runs on dconn */
    unsigned index_script : 1;      /* a queued write runs the index_write script */
    struct tx_watched watched;      /* while watching */
    struct userconn *script_as;     /* a queued script runs as this node user
                                       (userconn.h): so does the block */
    char rules_at_multi[ACL_NODE_USER_LEN];  /* the user's rules when MULTI came:
                                       its node user, "" for every right */
    int nqueued;
    int slot;                       /* of the queued keys; -1 none yet */
    struct evbuffer *queued;        /* the queued commands' bytes */
    unsigned char *fix;             /* per queued command: TX_FIX_* (layout only) */
    int fixcap;
    unsigned fix_any : 1;
    struct evbuffer *upkeep;        /* keys of queued scripts that may write (key_list) */
    struct tx_unwrapped unwrapped;  /* a restricted user's writes in the index script */
    struct tx_local *locals;        /* queued TXC_PROXY commands (tx.h) */
    int nlocal, localcap;
    size_t local_bytes;
    char crossslot_why[200];        /* empty: the keys share a slot */
    /* WATCH and blocking commands */
    int watch_slot;
    struct dedicated *dconn;        /* pinned by WATCH, or running a blocking command */
    /* order across lanes */
    const void *lane;               /* NULL: the multiplexed connections */
    struct request_queue parked;    /* through hold_link, in the client's order */
    struct request *releasing;      /* being dispatched out of parked */
    struct event *release_event;
};

static struct tx_state *tx_get(struct client *c)
{
    if (c->tx)
        return c->tx;
    struct tx_state *tx = calloc(1, sizeof *tx);
    if (!tx)
        return NULL;
    tx->queued = evbuffer_new();
    if (!tx->queued) {
        free(tx);
        return NULL;
    }
    tx->slot = -1;
    tx->watch_slot = -1;
    TAILQ_INIT(&tx->parked);
    c->tx = tx;
    return tx;
}

/* ---- lanes and parking ---- */

static void park(struct tx_state *tx, struct request *r)
{
    request_queue_insert(&tx->parked, r);
}

/* May r go out on lane now? Every earlier request answered (r heads its
 * client's queue) means nothing can overtake; else it waits. */
static int lane_ready(struct tx_state *tx, struct request *r, const void *lane)
{
    if (lane != LANE_NEW && lane == tx->lane)
        return 1;
    if (TAILQ_FIRST(&r->client->queue) == r)
        return 1;
    park(tx, r);
    return 0;
}

static void release_cb(evutil_socket_t fd, short what, void *arg)
{
    struct client *c = arg;
    struct tx_state *tx = c->tx;
    struct request *r;
    (void)fd;
    (void)what;
    while (c->state == CLIENT_ACTIVE && (r = TAILQ_FIRST(&tx->parked)) != NULL) {
        TAILQ_REMOVE(&tx->parked, r, hold_link);
        tx->releasing = r;
        router_dispatch(r);
        tx->releasing = NULL;
        if (TAILQ_FIRST(&tx->parked) == r)
            break;              /* it waits again: the rest stay behind it */
    }
    if (c->state != CLIENT_CLOSING)
        return;
    /* A released QUIT (or a protocol error) closes the client once answered:
     * as Redis reads nothing after it, what it parked behind never runs. */
    while ((r = TAILQ_FIRST(&tx->parked)) != NULL) {
        TAILQ_REMOVE(&tx->parked, r, hold_link);
        client_unqueue(c, r);
    }
    client_flush(c);            /* closes it once what is owed is written */
}

/* The first of c's requests that wait their turn to run, or NULL. */
static struct request *first_parked(const struct client *c)
{
    return c->tx ? TAILQ_FIRST(&c->tx->parked) : NULL;
}

/* At the start of router_dispatch: 1 when r was parked behind the client's
 * earlier parked requests. */
static int hold_if_parked(struct request *r)
{
    struct tx_state *tx = r->client->tx;
    if (!tx || TAILQ_EMPTY(&tx->parked) || tx->releasing == r)
        return 0;
    park(tx, r);
    return 1;
}

/* The router refused a command of c's (unknown, arity, NOAUTH): inside
 * MULTI the transaction aborts at EXEC. */
static void note_refused(struct client *c)
{
    if (c->tx && c->tx->in_multi)
        c->tx->dirty = 1;
}

/* ---- dedicated connections ---- */

static void watch_end(struct tx_state *tx)
{
    tx->watching = 0;
    tx->watched.n = 0;
}

static int hash_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* r's keys are WATCHed now: counted, each once (out of memory: not all). */
static void watch_note(struct tx_state *tx, struct request *r)
{
    struct tx_watched *w = &tx->watched;
    int some[16], *keys, n = request_keys_all(r, some, &keys);
    if (w->n + n > w->cap) {
        int cap = (w->n + n) * 2;
        uint64_t *more = realloc(w->hash, sizeof *more * (size_t)cap);
        if (more) {
            w->hash = more;
            w->cap = cap;
        }
    }
    for (int i = 0; i < n && w->n < w->cap; i++) {
        size_t len;
        const char *k = request_arg(r, keys[i], &len);
        w->hash[w->n++] = hash_fnv64(k, len);
    }
    if (keys != some)
        free(keys);
    qsort(w->hash, (size_t)w->n, sizeof *w->hash, hash_cmp);
    int kept = 0;
    for (int i = 0; i < w->n; i++)
        if (kept == 0 || w->hash[kept - 1] != w->hash[i])
            w->hash[kept++] = w->hash[i];
    w->n = kept;
}

/* Give the dedicated connection back (clearing a watch first). */
static void drop_dconn(struct tx_state *tx)
{
    if (!tx->dconn)
        return;
    if (tx->watching) {
        const char *argv[] = { "UNWATCH" };
        node_send_quiet(tx->dconn->conn, 1, argv);
    }
    watch_end(tx);
    dedicated_release(tx->dconn);
}

/* The connection r goes on when it is not the shared one (router.h). */
static struct node_conn *conn_for(struct request *r, int node, const char **why)
{
    struct client *c = r->client;
    struct tx_state *tx = c ? c->tx : NULL;
    *why = NULL;
    if (!tx || c->state == CLIENT_GONE) {
        *why = "ERR the client has gone";
        return NULL;
    }
    if (tx->dconn && dedicated_serves(tx->dconn, node)) {
        dedicated_speak(tx->dconn, request_resp(r));
        return tx->dconn->conn;
    }
    if (r->conn_kind == TX_CONN_PREFER_PINNED)
        return worker_conn(r->worker, node, request_resp(r));
    if (r->conn_kind == TX_CONN_PINNED_EXEC) {
        *why = "ERR the WATCHed connection was lost";
        return NULL;
    }
    /* a watch on another node is lost by moving (the slot moved) */
    drop_dconn(tx);
    struct dedicated *d = dedicated_acquire(r->worker, node, c, &tx->dconn, why);
    if (d)
        dedicated_speak(d, request_resp(r));
    return d ? d->conn : NULL;
}

static const void *dconn_lane(const struct tx_state *tx)
{
    return tx->dconn ? (const void *)tx->dconn->conn : LANE_NEW;
}

/* ---- MULTI ---- */

static void reset_multi(struct tx_state *tx)
{
    tx->in_multi = 0;
    tx->dirty = 0;
    tx->nqueued = 0;
    tx->index_script = 0;
    tx->script_as = NULL;
    tx->slot = -1;
    tx->crossslot_why[0] = '\0';
    tx->fix_any = 0;
    evbuffer_drain(tx->queued, evbuffer_get_length(tx->queued));
    if (tx->upkeep)
        evbuffer_drain(tx->upkeep, evbuffer_get_length(tx->upkeep));
    tx->unwrapped.n = 0;
    if (tx->unwrapped.bytes) {
        evbuffer_drain(tx->unwrapped.bytes, evbuffer_get_length(tx->unwrapped.bytes));
        evbuffer_drain(tx->unwrapped.keys, evbuffer_get_length(tx->unwrapped.keys));
    }
    txexec_locals_free(tx->locals, tx->nlocal);
    tx->locals = NULL;
    tx->nlocal = tx->localcap = 0;
    tx->local_bytes = 0;
}

/* What the reply of r, as the client sent it, will need inside EXEC's array
 * (TX_FIX_*; TX_FIX_NULL_ARRAY only if it is then wrapped in the index
 * script). */
static unsigned char exec_fix_of(const struct request *r)
{
    unsigned char f = (unsigned char)rewrite_reply_map_of(r->cmd);
    if (index_answers_null_array(r->cmd, r->argc))
        f |= TX_FIX_NULL_ARRAY;
    return f;
}

/* Note f for the command queued at tx->nqueued. 0, or -1 out of memory. */
static int exec_fix_note(struct tx_state *tx, unsigned char f)
{
    if (!f && !tx->fix_any)
        return 0;
    if (tx->nqueued >= tx->fixcap) {
        int cap = tx->fixcap ? tx->fixcap * 2 : 16;
        while (cap <= tx->nqueued)
            cap *= 2;
        unsigned char *p = realloc(tx->fix, (size_t)cap);
        if (!p)
            return -1;
        tx->fix = p;
        tx->fixcap = cap;
    }
    if (f && !tx->fix_any) {            /* the first one: those before need nothing */
        memset(tx->fix, 0, (size_t)tx->nqueued);
        tx->fix_any = 1;
    }
    tx->fix[tx->nqueued] = f;
    return 0;
}

static void reply_simple(struct request *r, const char *s)
{
    resp_add_simple(request_reply_buffer(r), s);
    request_finish(r);
}

static void refuse_queued(struct tx_state *tx, struct request *r, const char *msg)
{
    tx->dirty = 1;
    request_fail(r, msg);
}

/* A script queued in MULTI: an EVALSHA whose body the proxy knows goes as
 * EVAL (a NOSCRIPT inside EXEC could not be recovered: the rest would have
 * run); an EVAL's body is remembered, as outside MULTI. -1: out of memory. */
static int queue_script(struct request *r)
{
    size_t len, body_len;
    const char *arg;
    char sha[SCRIPTS_SHA_HEX];
    if (r->argc < 3)
        return 0;
    arg = request_arg(r, 1, &len);
    if (!(r->cmd->proxy_facts & CMDP_SCRIPT_SHA) && command_runs_script(r->cmd)) {
        scripts_sha1_hex(arg, len, sha);
        scripts_remember(arg, len, sha);
        return 0;
    }
    if (!(r->cmd->proxy_facts & CMDP_SCRIPT_SHA) || scripts_sha_parse(arg, len, sha) < 0)
        return 0;
    char *body = scripts_body_copy(sha, &body_len);
    if (!body)
        return 0;           /* not known here: the node may have it */
    const char **argv = malloc(sizeof *argv * (size_t)r->argc);
    size_t *lens = malloc(sizeof *lens * (size_t)r->argc);
    int rc = -1;
    if (argv && lens) {
        for (int i = 0; i < r->argc; i++)
            argv[i] = request_arg(r, i, &lens[i]);
        int ro = (r->cmd->proxy_facts & CMDP_SCRIPT_RO) != 0;
        argv[0] = ro ? "EVAL_RO" : "EVAL";
        lens[0] = ro ? 7 : 4;
        argv[1] = body;
        lens[1] = body_len;
        rc = request_rebuild(r, r->argc, argv, lens);
    }
    free(argv);
    free(lens);
    free(body);
    return rc;
}

/* A command the proxy answers, queued: a detached copy to run when EXEC's
 * array comes back (Redis runs it at EXEC, in its place). */
static void queue_local(struct tx_state *tx, struct request *r)
{
    if (tx->nlocal == tx->localcap) {
        int cap = tx->localcap ? tx->localcap * 2 : 4;
        struct tx_local *grown = realloc(tx->locals, sizeof *grown * (size_t)cap);
        if (!grown) {
            refuse_queued(tx, r, REPLY_ERR_OOM);
            return;
        }
        tx->locals = grown;
        tx->localcap = cap;
    }
    struct request *copy = request_new(r->worker);
    if (!copy || request_set_command(copy, r->data, r->len, r->args, r->argc) < 0) {
        if (copy)
            request_free(copy);
        refuse_queued(tx, r, REPLY_ERR_OOM);
        return;
    }
    copy->cmd = r->cmd;
    copy->detached = 1;
    tx->locals[tx->nlocal].pos = tx->nqueued + tx->nlocal;
    tx->locals[tx->nlocal].req = copy;
    tx->nlocal++;
    tx->local_bytes += r->len;
    reply_simple(r, "QUEUED");
}

/* A queued command that may write its keys outside the index script: a
 * script (the proxy cannot see inside it), or a blocking write such as
 * BLPOP (Lua cannot run it). */
static int writes_unseen(const struct request *r, enum tx_class cls)
{
    unsigned f = r->cmd->flags;
    if (cls == TXC_SCRIPT)
        return command_script_may_write(r->cmd);
    return (f & CMD_WRITE) && (f & (CMD_BLOCKING | CMD_NOSCRIPT));
}

/* A command queued in MULTI that writes_unseen: its keys, for the index upkeep
 * once EXEC has run (txexec.c), each as its length (uint32_t) and
 * bytes. 0, or -1 out of memory. */
/* Add argument i of r, a key, to a list of keys for the upkeep. 0, or -1. */
static int upkeep_add(struct evbuffer *list, const struct request *r, int i)
{
    size_t len;
    const char *key = request_arg(r, i, &len);
    uint32_t len32 = (uint32_t)len;
    return evbuffer_add(list, &len32, sizeof len32) < 0 || evbuffer_add(list, key, len) < 0
           ? -1 : 0;
}

static int upkeep_note(struct tx_state *tx, struct request *r)
{
    int some[16], *keys;
    int n = request_keys_all(r, some, &keys), rc = 0;
    if (!tx->upkeep && !(tx->upkeep = evbuffer_new()))
        rc = -1;
    for (int i = 0; i < n && rc == 0; i++)
        rc = upkeep_add(tx->upkeep, r, keys[i]);
    if (keys != some)
        free(keys);
    return rc;
}

/* Bytes held for the transaction besides its queued commands. */
static size_t held_besides(const struct tx_state *tx)
{
    const struct tx_unwrapped *u = &tx->unwrapped;
    return tx->local_bytes + sizeof *tx->watched.hash * (size_t)tx->watched.cap +
           (u->bytes ? evbuffer_get_length(u->bytes) + evbuffer_get_length(u->keys) : 0);
}

/* r, a write of a restricted user's that index_wrap_write wrapped, is
 * queued next: note it as it was (struct tx_unwrap). 0, or -1 out of
 * memory. */
static int unwrap_note(struct tx_state *tx, struct request *r)
{
    struct tx_unwrapped *u = &tx->unwrapped;
    int nrec, original;
    if (index_wrapped_parts(r, &nrec, &original) < 0)
        return -1;
    if (u->n == u->cap) {
        int cap = u->cap ? u->cap * 2 : 8;
        struct tx_unwrap *grown = realloc(u->at, sizeof *grown * (size_t)cap);
        if (!grown)
            return -1;
        u->at = grown;
        u->cap = cap;
    }
    if (!u->bytes && (!(u->bytes = evbuffer_new()) || !(u->keys = evbuffer_new())))
        return -1;
    size_t *lens, before = evbuffer_get_length(u->bytes);
    const char **argv = request_argv_new(r, &lens);
    int rc = argv ? 0 : -1;
    if (argv)
        resp_add_command(u->bytes, r->argc - original, argv + original, lens + original);
    for (int i = 0; rc == 0 && i < nrec; i++)
        rc = upkeep_add(u->keys, r, 3 + i);     /* the records' keys */
    free(argv);
    if (rc < 0)
        return -1;
    u->at[u->n++] = (struct tx_unwrap){ .off = evbuffer_get_length(tx->queued), .len = r->len,
                                        .orig_len = evbuffer_get_length(u->bytes) - before,
                                        .index = tx->nqueued };
    return 0;
}

/* The block is to run as the user's node user (struct tx_unwrap): its
 * wrapped writes go as they came, and their records' indexes are kept once
 * EXEC has run. 0, or -1 out of memory (the block may then be half made:
 * it must not run). */
static int exec_unwrap(struct tx_state *tx)
{
    struct tx_unwrapped *u = &tx->unwrapped;
    struct evbuffer *b = evbuffer_new();
    if (!b || (!tx->upkeep && !(tx->upkeep = evbuffer_new()))) {
        if (b)
            evbuffer_free(b);
        return -1;
    }
    size_t at = 0;
    int rc = 0;
    for (int i = 0; rc == 0 && i < u->n; i++) {
        const struct tx_unwrap *w = &u->at[i];
        if (evbuffer_remove_buffer(tx->queued, b, w->off - at) != (int)(w->off - at) ||
            evbuffer_drain(tx->queued, w->len) < 0 ||
            evbuffer_remove_buffer(u->bytes, b, w->orig_len) != (int)w->orig_len)
            rc = -1;
        at = w->off + w->len;
        if (tx->fix_any)
            tx->fix[w->index] &= (unsigned char)~TX_FIX_NULL_ARRAY;   /* not wrapped now */
    }
    if (rc == 0 && (evbuffer_add_buffer(b, tx->queued) < 0 || evbuffer_add_buffer(tx->queued, b) < 0 ||
                    evbuffer_add_buffer(tx->upkeep, u->keys) < 0))
        rc = -1;
    evbuffer_free(b);
    tx->index_script = 0;
    return rc;
}

static void queue_command(struct tx_state *tx, struct request *r, enum tx_class cls)
{
    char msg[300];
    if (cls == TXC_PROXY && router_key_slot(r) >= 0)
        cls = TXC_FORWARD;          /* KEYS {tag}*: that slot's master runs it, in its place */
    if (cls == TXC_OTHER) {
        const char *why = route_of(r->cmd)->multi_why;
        snprintf(msg, sizeof msg,
                 "ERR Command not allowed inside a transaction through the proxy: a "
                 "transaction runs as one block on one master, and '%s' does not (%s)",
                 r->cmd->fullname, why ? why : "it asks every master, or needs a connection of its own");
        refuse_queued(tx, r, msg);
        return;
    }
    size_t limit = (size_t)r->worker->cfg->client_query_buffer_limit;
    if (evbuffer_get_length(tx->queued) + held_besides(tx) + r->len > limit) {
        refuse_queued(tx, r, "ERR transaction too large: its queued commands exceed "
                             "client-query-buffer-limit");
        return;
    }
    if (cls == TXC_PROXY) {
        queue_local(tx, r);
        return;
    }
    /* one that asks the masters runs after the block: no write may follow it */
    const struct request *asking = txexec_first_asking(tx->locals, tx->nlocal);
    if (asking && ((r->cmd->flags & CMD_WRITE) || (cls == TXC_SCRIPT && command_script_may_write(r->cmd)))) {
        snprintf(msg, sizeof msg,
                 "ERR Command not allowed inside a transaction through the proxy: '%s' asks "
                 "the masters, so it runs once the transaction's other commands have run, "
                 "and '%s' after it would write too early: queue the writes first",
                 asking->cmd->fullname, r->cmd->fullname);
        refuse_queued(tx, r, msg);
        return;
    }
    int slot = cls == TXC_NODE_LOCAL ? SLOT_NONE : router_key_slot(r);
    if (!tx->crossslot_why[0]) {
        if (slot == SLOT_CROSS)
            snprintf(tx->crossslot_why, sizeof tx->crossslot_why,
                     "'%s' names keys of several slots", r->cmd->fullname);
        else if (slot >= 0 && tx->slot >= 0 && slot != tx->slot)
            snprintf(tx->crossslot_why, sizeof tx->crossslot_why,
                     "'%s' names a key of slot %d, earlier commands keys of slot %d",
                     r->cmd->fullname, slot, tx->slot);
        else if (slot >= 0)
            tx->slot = slot;
    }
    /* a write to indexed records keeps their indexes exact, in MULTI too */
    const struct layout *layout = worker_layout(r->worker);
    unsigned char fix = layout && cls != TXC_SCRIPT ? exec_fix_of(r) : 0;
    int wrapped = cls == TXC_NODE_LOCAL ? 0
                : cls == TXC_SCRIPT ? queue_script(r)
                : index_wrap_write(r, r->cmd, layout);
    if (wrapped < 0) {
        refuse_queued(tx, r, cls == TXC_SCRIPT ? REPLY_ERR_OOM : index_wrap_error(wrapped));
        return;
    }
    tx->index_script |= cls != TXC_SCRIPT && wrapped > 0;
    if (r->as_user)
        tx->script_as = r->as_user;
    if (wrapped <= 0)
        fix &= (unsigned char)~TX_FIX_NULL_ARRAY;
    if ((wrapped > 0 && r->client->user->restricted && unwrap_note(tx, r) < 0) ||
        (layout && exec_fix_note(tx, fix) < 0) ||
        (layout && wrapped == 0 && writes_unseen(r, cls) && upkeep_note(tx, r) < 0) ||
        evbuffer_add(tx->queued, r->data, r->len) < 0) {
        refuse_queued(tx, r, REPLY_ERR_OOM);
        return;
    }
    tx->nqueued++;
    reply_simple(r, "QUEUED");
}

/* EXEC for a transaction that will not run: end MULTI and WATCH. */
static void exec_refuse(struct tx_state *tx, struct request *r, const char *msg)
{
    reset_multi(tx);
    drop_dconn(tx);
    request_fail(r, msg);
}

/* Make r's bytes MULTI, the queued commands, EXEC; preceded by SCRIPT LOAD
 * of the index script when a queued write calls it by SHA (a NOSCRIPT
 * inside EXEC could not be recovered: the rest would have run). */
static int exec_build_block(struct tx_state *tx, struct request *r)
{
    static const char multi[] = "*1\r\n$5\r\nMULTI\r\n", exec[] = "*1\r\n$4\r\nEXEC\r\n";
    struct evbuffer *b = evbuffer_new();
    if (b && tx->index_script) {
        const char *argv[] = { "SCRIPT", "LOAD", embed_index_write };
        const size_t lens[] = { 6, 4, embed_index_write_len };
        resp_add_command(b, 3, argv, lens);
    }
    int loads = tx->index_script;
    size_t at = b ? evbuffer_get_length(b) : 0;
    if (!b || evbuffer_add(b, multi, sizeof multi - 1) < 0 ||
        evbuffer_add_buffer(b, tx->queued) < 0 || evbuffer_add(b, exec, sizeof exec - 1) < 0) {
        if (b)
            evbuffer_free(b);
        return -1;
    }
    size_t len = evbuffer_get_length(b);
    struct resp_arg arg = { .off = (uint32_t)(at + 8), .len = 5 };     /* MULTI */
    int rc = request_set_command(r, (const char *)evbuffer_pullup(b, -1), len, &arg, 1);
    evbuffer_free(b);
    r->block_parts = loads + tx->nqueued + 1;
    struct tx_exec *e = rc == 0 ? txexec_of(r) : NULL;
    if (!e)
        return -1;
    if (tx->fix_any) {
        free(e->fix);
        e->fix = malloc((size_t)tx->nqueued);
        if (!e->fix)
            return -1;
        memcpy(e->fix, tx->fix, (size_t)tx->nqueued);
    }
    e->nfix = tx->nqueued;
    if (tx->nlocal) {
        txexec_locals_free(e->locals, e->nlocals);
        e->locals = tx->locals;             /* (reset_multi then starts a new array) */
        e->nlocals = tx->nlocal;
        tx->locals = NULL;
        tx->nlocal = tx->localcap = 0;
    }
    if (tx->upkeep && evbuffer_get_length(tx->upkeep)) {
        if (e->upkeep)
            evbuffer_free(e->upkeep);
        e->upkeep = tx->upkeep;             /* (a new one when a script is queued again) */
        tx->upkeep = NULL;
    }
    r->hooks = &txexec_hooks;
    return rc;
}

/* What c's user may do, in a word: its node user (acl.h: named by its
 * rules), or "" for a user that may do everything. */
static void rules_note(const struct client *c, char out[ACL_NODE_USER_LEN])
{
    snprintf(out, ACL_NODE_USER_LEN, "%s", c->user->restricted ? c->user->node_user : "");
}

static void cmd_exec(struct tx_state *tx, struct request *r)
{
    char msg[400];
    if (!tx->in_multi) {
        request_fail(r, "ERR EXEC without MULTI");
        return;
    }
    const void *lane = tx->watching ? dconn_lane(tx) : tx->script_as;
    if (!lane_ready(tx, r, lane))
        return;
    if (tx->dirty) {
        exec_refuse(tx, r, "EXECABORT Transaction discarded because of previous errors.");
        return;
    }
    char rules_now[ACL_NODE_USER_LEN];
    rules_note(r->client, rules_now);
    if (strcmp(rules_now, tx->rules_at_multi) != 0) {
        /* its commands were checked against rules that are gone */
        exec_refuse(tx, r, "EXECABORT Transaction discarded because of: the user's ACL rules "
                           "changed between MULTI and EXEC (a config reload); nothing ran");
        return;
    }
    if (tx->watching && !tx->dconn) {       /* the watched connection was lost */
        reset_multi(tx);
        watch_end(tx);
        resp_add_null_array(request_reply_buffer(r), request_resp(r));
        request_finish(r);
        return;
    }
    if (tx->crossslot_why[0]) {
        snprintf(msg, sizeof msg, "%s (a transaction runs on one master, so all its keys "
                 "must hash to one slot: %s); nothing ran", REPLY_ERR_CROSSSLOT, tx->crossslot_why);
        exec_refuse(tx, r, msg);
        return;
    }
    if (tx->watching && tx->slot >= 0 && tx->slot != tx->watch_slot) {
        snprintf(msg, sizeof msg, "%s (a transaction after WATCH runs on the master of the "
                 "WATCHed keys: its keys, of slot %d, must hash to their slot %d); nothing ran",
                 REPLY_ERR_CROSSSLOT, tx->slot, tx->watch_slot);
        exec_refuse(tx, r, msg);
        return;
    }
    if ((tx->script_as && tx->index_script && exec_unwrap(tx) < 0) ||
        exec_build_block(tx, r) < 0) {
        exec_refuse(tx, r, REPLY_ERR_OOM);
        return;
    }
    int slot = tx->slot;
    r->as_user = tx->script_as;
    reset_multi(tx);
    if (tx->watching) {
        struct node_conn *conn = tx->dconn->conn;
        if (r->as_user)     /* its scripts run as the user; the WATCH stays */
            node_conn_login_as(conn, userconn_opts(r->as_user, tx->dconn->proto));
        r->conn_kind = TX_CONN_PINNED_EXEC;
        r->slot = tx->watch_slot;
        router_send_on(r, conn);
        tx->lane = conn;
        watch_end(tx);           /* EXEC ends the watch on the node too */
        dedicated_release(tx->dconn);
    } else {
        r->slot = slot;
        tx->lane = r->as_user;
        router_send(r);
    }
    /* the proxy's own commands in it run when EXEC answers: what the client
     * sends next waits for that, as it would for EXEC on one server */
    if (r->exec && r->exec->locals)
        tx->lane = LANE_NEW;
}

/* EXEC refused before it ran (why: the refusal): as Redis, the transaction
 * ends (MULTI and WATCH), and EXEC answers "EXECABORT Transaction discarded
 * because of: why" (an ERR code left out), inside MULTI or not. */
static void exec_rejected(struct request *r, const char *why)
{
    struct tx_state *tx = r->client->tx;
    char msg[512];
    if (strncmp(why, "ERR ", 4) == 0)
        why += 4;
    snprintf(msg, sizeof msg, "EXECABORT Transaction discarded because of: %s", why);
    if (tx && (tx->in_multi || tx->watching)) {
        if (!lane_ready(tx, r, NULL))
            return;             /* refused again, in its turn, once released */
        tx->lane = NULL;
        reset_multi(tx);
        drop_dconn(tx);
    }
    request_fail(r, msg);
}

static void cmd_discard(struct tx_state *tx, struct request *r)
{
    if (!tx->in_multi) {
        request_fail(r, "ERR DISCARD without MULTI");
        return;
    }
    if (tx->watching && tx->dconn) {
        /* DISCARD also unwatches: UNWATCH on the pinned connection, whose
         * +OK is DISCARD's */
        struct node_conn *conn = tx->dconn->conn;
        if (!lane_ready(tx, r, conn))
            return;
        static const char *const argv[] = { "UNWATCH" };
        static const size_t lens[] = { 7 };
        reset_multi(tx);
        if (request_build(r, 1, argv, lens) < 0) {
            request_fail(r, REPLY_ERR_OOM);
            return;
        }
        router_send_on(r, conn);
        tx->lane = conn;
        watch_end(tx);
        dedicated_release(tx->dconn);
        return;
    }
    reset_multi(tx);
    watch_end(tx);
    reply_simple(r, "OK");
}

static void cmd_multi(struct tx_state *tx, struct request *r)
{
    if (tx->in_multi) {
        request_fail(r, "ERR MULTI calls can not be nested");
        return;
    }
    reset_multi(tx);
    tx->in_multi = 1;
    rules_note(r->client, tx->rules_at_multi);
    reply_simple(r, "OK");
}

static void cmd_watch(struct tx_state *tx, struct request *r)
{
    char msg[300];
    if (tx->in_multi) {
        request_fail(r, "ERR WATCH inside MULTI is not allowed");
        return;
    }
    int slot = router_key_slot(r);
    if (slot == SLOT_CROSS) {
        snprintf(msg, sizeof msg, "%s (WATCHed keys must hash to one slot: the proxy "
                 "watches them on that slot's master)", REPLY_ERR_CROSSSLOT);
        request_fail(r, msg);
        return;
    }
    if (tx->watching && slot != tx->watch_slot) {
        snprintf(msg, sizeof msg, "%s (already WATCHing keys of slot %d: WATCHed keys must "
                 "hash to one slot)", REPLY_ERR_CROSSSLOT, tx->watch_slot);
        request_fail(r, msg);
        return;
    }
    int node = worker_node_for_slot(r->worker, slot);
    const void *lane = tx->dconn && dedicated_serves(tx->dconn, node) ? dconn_lane(tx) : LANE_NEW;
    if (!lane_ready(tx, r, lane))
        return;
    r->slot = slot;
    r->conn_kind = TX_CONN_DEDICATED;
    router_send(r);
    if (tx->dconn) {
        tx->watching = 1;
        tx->watch_slot = slot;
        tx->lane = tx->dconn->conn;
        watch_note(tx, r);
    }
}

static void cmd_unwatch(struct tx_state *tx, struct request *r)
{
    if (tx->in_multi) {
        queue_command(tx, r, TXC_FORWARD);
        return;
    }
    if (!tx->watching || !tx->dconn) {
        watch_end(tx);
        reply_simple(r, "OK");
        return;
    }
    struct node_conn *conn = tx->dconn->conn;
    if (!lane_ready(tx, r, conn))
        return;
    router_send_on(r, conn);
    tx->lane = conn;
    watch_end(tx);
    dedicated_release(tx->dconn);
}

/* The routes of MULTI EXEC DISCARD WATCH UNWATCH: each runs with the
 * client's state, made on first use. */
#define TX_COMMAND(cmd)                                         \
    static void run_##cmd(struct request *r)                    \
    {                                                           \
        struct tx_state *tx = tx_get(r->client);                \
        if (tx)                                                 \
            cmd_##cmd(tx, r);                                   \
        else                                                    \
            request_fail(r, REPLY_ERR_OOM);               \
    }
TX_COMMAND(multi)
TX_COMMAND(exec)
TX_COMMAND(discard)
TX_COMMAND(watch)
TX_COMMAND(unwatch)

/* ---- blocking commands ---- */

/* A blocking command answered (not with an error). It ran outside the
 * index script (Lua does not block): the indexes of its keys that are
 * indexed records are brought up to date now (index.h). */
static int blocking_reply(struct request *r, struct node_conn *from, struct evbuffer *in,
                          const char *bytes, size_t len, const struct reply_scanner *s)
{
    (void)from, (void)in, (void)bytes, (void)len;
    if (s->type != '-')
        index_upkeep(r);
    return 0;
}

static const struct request_hooks blocking_hooks = { .reply = blocking_reply };

static void blocking_dispatch(struct tx_state *tx, struct request *r)
{
    char msg[300];
    int slot = router_key_slot(r);
    if (slot == SLOT_CROSS) {
        snprintf(msg, sizeof msg, "%s (the keys of a blocking command must hash to one "
                 "slot: it blocks on that slot's master)", REPLY_ERR_CROSSSLOT);
        request_fail(r, msg);
        return;
    }
    if (slot == SLOT_NONE && tx->watching)
        slot = tx->watch_slot;      /* no keys found (a malformed STREAMS list): the
                                     * watched node answers it as Redis would */
    int node = worker_node_for_slot(r->worker, slot);
    int serves = tx->dconn && dedicated_serves(tx->dconn, node);
    if (tx->watching && !serves) {
        request_fail(r, "ERR a blocking command on keys of another master than the WATCHed "
                        "keys is not supported through the proxy (UNWATCH first)");
        return;
    }
    if (!lane_ready(tx, r, serves ? dconn_lane(tx) : LANE_NEW))
        return;
    r->slot = slot;
    r->conn_kind = TX_CONN_DEDICATED;
    r->hooks = &blocking_hooks;
    router_send(r);
    tx->lane = tx->dconn ? (const void *)tx->dconn->conn : NULL;
    tx->blocking = tx->dconn && tx->dconn->conn->ninflight > 0;    /* not if it failed at once */
}

/* Seconds as Redis reads a blocking timeout, to milliseconds. */
static uint64_t seconds_ms(const char *s, size_t len)
{
    char buf[64], *end;
    if (len == 0 || len >= sizeof buf)
        return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    double v = strtod(buf, &end);
    if (*end || !(v >= 0) || v > 1e12)
        return 0;       /* the node refuses it at once */
    return v == 0 ? NODE_WAIT_FOREVER : (uint64_t)ceil(v * 1000);
}

static uint64_t millis(const char *s, size_t len)
{
    char buf[32], *end;
    if (len == 0 || len >= sizeof buf)
        return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    long long v = strtoll(buf, &end, 10);
    if (*end || v < 0)
        return 0;
    return v == 0 ? NODE_WAIT_FOREVER : (uint64_t)v;
}

/* How long a blocking command on a dedicated connection may legitimately
 * keep the node silent (its own timeout; NODE_WAIT_FOREVER for 0); 0 for
 * any other request. */
static uint64_t wait_ms_of(const struct request *r)
{
    if (r->conn_kind != TX_CONN_DEDICATED)
        return 0;
    size_t len;
    const char *a;
    uint32_t facts = r->cmd->proxy_facts;
    if (!(r->cmd->flags & CMD_BLOCKING) || r->argc < 2)
        return 0;
    if (facts & CMDP_TIMEOUT_BLOCK) {
        int at = request_block_arg(r);
        if (at < 0)
            return 0;
        a = request_arg(r, at, &len);
        return millis(a, len);
    }
    if (facts & CMDP_TIMEOUT_FIRST)
        a = request_arg(r, 1, &len);
    else            /* CMDP_TIMEOUT_LAST, and a blocking command learned */
        a = request_arg(r, r->argc - 1, &len);
    return seconds_ms(a, len);
}

/* ---- WAIT ---- */

/* WAIT numreplicas timeout, WAITAOF numlocal numreplicas timeout (Redis
 * 7.2's, once the cluster knows it): the timeout last. */
static void cmd_wait(struct tx_state *tx, struct request *r)
{
    size_t len;
    char msg[120];
    if (tx->in_multi) {
        /* the block runs on a master's connection whose replication offset
         * is not the client's: nothing honest to count */
        tx->dirty = 1;
        snprintf(msg, sizeof msg, "ERR %s inside MULTI is not supported through the proxy",
                 r->cmd->learned_index ? "WAITAOF" : "WAIT");
        request_fail(r, msg);
        return;
    }
    if (!lane_ready(tx, r, LANE_NEW))
        return;
    /* on no lane: what the client sends next waits for WAIT's answer */
    tx->lane = LANE_NEW;
    const char *t = request_arg(r, r->argc - 1, &len);
    wait_dispatch(r, millis(t, len));
}

/* ---- dispatch ---- */

/* A plain command while WATCHing: on the pinned connection when it is about
 * the watched slot (what it reads is what EXEC will be judged on). */
static int send_pinned(struct tx_state *tx, struct request *r)
{
    int slot = router_key_slot(r);
    int node = worker_node_for_slot(r->worker, slot);
    if (slot < 0 || slot != tx->watch_slot || !tx->dconn || !dedicated_serves(tx->dconn, node))
        return 0;
    struct node_conn *conn = tx->dconn->conn;
    if (!lane_ready(tx, r, conn))
        return 1;
    int wrapped = index_wrap_write(r, r->cmd, worker_layout(r->worker));
    if (wrapped < 0) {
        request_fail(r, index_wrap_error(wrapped));
        return 1;
    }
    r->slot = slot;
    r->conn_kind = TX_CONN_PREFER_PINNED;
    tx->lane = conn;
    router_send(r);
    return 1;
}

/* Take r if it is the family's business (1), or let the router plan it
 * (0; r may then go out on the multiplexed connections). */
static int tx_dispatch(struct request *r, enum tx_class cls)
{
    struct client *c = r->client;
    struct tx_state *tx = tx_get(c);
    if (!tx) {
        request_fail(r, REPLY_ERR_OOM);
        return 1;
    }
    if (tx->in_multi && (learned_entry(r->worker->topo->learned, r->cmd)->flags & CMD_NO_MULTI)) {
        /* as the cluster's server: Valkey 8's WATCH and MULTI, SAVE */
        refuse_queued(tx, r, "ERR Command not allowed inside a transaction");
        return 1;
    }
    if (cls == TXC_TX) {
        route_of(r->cmd)->run(r);      /* run_exec, ... */
        return 1;
    }
    if (cls == TXC_WAIT) {
        cmd_wait(tx, r);
        return 1;
    }
    if (tx->in_multi && cls != TXC_IMMEDIATE && cls != TXC_RESET) {
        queue_command(tx, r, cls);
        return 1;
    }
    if (cls == TXC_BLOCKING) {
        blocking_dispatch(tx, r);
        return 1;
    }
    if (tx->watching && cls == TXC_FORWARD && send_pinned(tx, r))
        return 1;
    /* a restricted user's script goes on its node user's connections */
    if (!lane_ready(tx, r, r->as_user))
        return 1;
    tx->lane = r->as_user;
    if (cls == TXC_RESET) {         /* RESET ends MULTI and WATCH, then the router's part */
        reset_multi(tx);
        drop_dconn(tx);
    }
    return 0;
}

/* ---- the client's life ---- */

/* Replies were written. */
static void tx_flushed(struct client *c)
{
    struct tx_state *tx = c->tx;
    if (!tx || c->state == CLIENT_GONE)
        return;
    /* a blocking command answered: its connection goes back */
    if (!tx->dconn || tx->dconn->conn->ninflight == 0)
        tx->blocking = 0;
    if (tx->dconn && !tx->watching && tx->dconn->conn->ninflight == 0)
        dedicated_release(tx->dconn);
    struct request *first = TAILQ_FIRST(&tx->parked);
    if (first && TAILQ_FIRST(&c->queue) == first && !tx->releasing) {
        if (!tx->release_event)
            tx->release_event = event_new(c->worker->base, -1, 0, release_cb, c);
        if (tx->release_event)
            event_active(tx->release_event, EV_TIMEOUT, 1);
    }
}

/* Its socket closed. */
static void tx_gone(struct client *c)
{
    struct tx_state *tx = c->tx;
    struct request *r;
    if (!tx)
        return;
    while ((r = TAILQ_FIRST(&tx->parked)) != NULL) {
        TAILQ_REMOVE(&tx->parked, r, hold_link);
        request_fail(r, "ERR the client has gone");
    }
    reset_multi(tx);
    watch_end(tx);
    /* what is blocked or watched on it ends now, not when the node answers;
     * a WAIT under way keeps c alive until it ends (its request is queued) */
    int waiting = c->wait != NULL;
    if (tx->dconn)
        dedicated_close(tx->dconn, "the client has gone");
    if (waiting)
        wait_client_gone(c);    /* last: it may free c */
}

/* Its struct is about to be freed. */
static void tx_freed(struct client *c)
{
    struct tx_state *tx = c->tx;
    if (!tx)
        return;
    if (tx->release_event)
        event_free(tx->release_event);
    evbuffer_free(tx->queued);
    if (tx->upkeep)
        evbuffer_free(tx->upkeep);
    if (tx->unwrapped.bytes)
        evbuffer_free(tx->unwrapped.bytes);
    if (tx->unwrapped.keys)
        evbuffer_free(tx->unwrapped.keys);
    free(tx->unwrapped.at);
    txexec_locals_free(tx->locals, tx->nlocal);
    free(tx->fix);
    free(tx->watched.hash);
    free(tx);
    c->tx = NULL;
}

/* For CLIENT LIST: queued commands inside MULTI. */
static void tx_count(const struct client *c, struct client_counts *n)
{
    if (c->tx && c->tx->in_multi)
        n->multi = c->tx->nqueued + c->tx->nlocal;
    n->watching = c->tx && c->tx->watching;
    n->watched_keys = c->tx && c->tx->watching ? c->tx->watched.n : 0;
    n->blocked = (c->tx && c->tx->blocking) || c->wait != NULL;     /* WAIT blocks too */
}

/* Bytes c's transaction state holds: its MULTI block (queued commands)
 * and the hashes that count its WATCHed keys. */
static size_t tx_held(const struct client *c)
{
    if (!c->tx)
        return 0;
    return (c->tx->queued ? evbuffer_get_length(c->tx->queued) : 0) + held_besides(c->tx);
}

/* ---- routes ---- */

static void tx_route(struct request *r)
{
    tx_dispatch(r, route_of(r->cmd)->in_multi);
}

static void blocking_read_route(struct request *r)
{
    tx_dispatch(r, TXC_BLOCKING);
}

/* A client with the family's state: its request r, whose route is rt, is
 * the family's when it is queued in MULTI, pinned by WATCH, ... (client.h).
 * A client's first restricted script gives it that state: the shared
 * connections and its node user's (userconn.h) are lanes that must not
 * overtake each other. */
static int take(struct request *r, const struct route *rt)
{
    return (r->client->tx || r->as_user) && tx_dispatch(r, rt->in_multi);
}

#define TX(name, cls) { name, { .plan = ROUTE_FAMILY, .run = tx_route, .in_multi = cls } }
#define TX_CMD(name, fn) { name, { .plan = ROUTE_FAMILY, .run = fn, .in_multi = TXC_TX } }

static const struct route_entry tx_routes[] = {
    TX_CMD("multi", run_multi), TX_CMD("discard", run_discard), TX_CMD("watch", run_watch),
    TX_CMD("unwatch", run_unwatch),
    { "exec", { .plan = ROUTE_FAMILY, .run = run_exec, .refuse = exec_rejected,
                .in_multi = TXC_TX } },
    TX("blpop", TXC_BLOCKING), TX("brpop", TXC_BLOCKING), TX("blmove", TXC_BLOCKING),
    TX("brpoplpush", TXC_BLOCKING), TX("blmpop", TXC_BLOCKING), TX("bzpopmin", TXC_BLOCKING),
    TX("bzpopmax", TXC_BLOCKING), TX("bzmpop", TXC_BLOCKING),
    TX("wait", TXC_WAIT), TX("waitaof", TXC_WAIT),     /* WAITAOF: when learned */
};

/* A request is freed: an EXEC's state. */
static void request_freed(struct request *r)
{
    txexec_free(r);
}

static const struct client_family tx_family = {
    .hold = hold_if_parked,
    .take = take,
    .refused = note_refused,
    .closed = tx_gone,
    .flushed = tx_flushed,
    .freed = tx_freed,
    .held = tx_held,
    .count = tx_count,
    .first_parked = first_parked,
};

void tx_register(void)
{
    route_register(tx_routes, (int)(sizeof tx_routes / sizeof tx_routes[0]));
    client_family_register(&tx_family);
    request_family_register(request_freed);
    router_register_conns(conn_for, wait_ms_of);
    route_register_blocking_read(blocking_read_route);
}
