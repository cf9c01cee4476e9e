/*
 * multi: MULTI, EXEC, DISCARD, WATCH and UNWATCH. See multi.h.
 */
#include "proxy/families/multi.h"

#include <event2/buffer.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
#include "proxy/families/txclass.h"
#include "proxy/families/txexec.h"
#include "proxy/families/txstate.h"
#include "keylayout/index_lua.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"
#include "lib/proto/resp.h"

void multi_reset(struct tx_state *tx)
{
    tx->in_multi = 0;
    tx->dirty = 0;
    tx->nqueued = 0;
    tx->index_script = 0;
    tx->writes = 0;
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
void multi_refuse(struct tx_state *tx, struct request *r, const char *msg)
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
            multi_refuse(tx, r, REPLY_ERR_OOM);
            return;
        }
        tx->locals = grown;
        tx->localcap = cap;
    }
    struct request *copy = request_new(r->worker);
    if (!copy || request_set_command(copy, r->data, r->len, r->args, r->argc) < 0) {
        if (copy)
            request_free(copy);
        multi_refuse(tx, r, REPLY_ERR_OOM);
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
/* Add argument i of r, a key, to a list of keys for the upkeep. 0, or -1. */
static int upkeep_add(struct evbuffer *list, const struct request *r, int i)
{
    size_t len;
    const char *key = request_arg(r, i, &len);
    uint32_t len32 = (uint32_t)len;
    return evbuffer_add(list, &len32, sizeof len32) < 0 || evbuffer_add(list, key, len) < 0
           ? -1 : 0;
}
/* A command queued in MULTI that writes_unseen: its keys, for the index
 * upkeep once EXEC has run (txexec.c), each as its length (uint32_t) and
 * bytes. 0, or -1 out of memory. */
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
void multi_queue(struct tx_state *tx, struct request *r, enum tx_class cls)
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
        multi_refuse(tx, r, msg);
        return;
    }
    size_t limit = (size_t)r->worker->cfg->client_query_buffer_limit;
    if (evbuffer_get_length(tx->queued) + held_besides(tx) + r->len > limit) {
        multi_refuse(tx, r, "ERR transaction too large: its queued commands exceed "
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
        multi_refuse(tx, r, msg);
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
        multi_refuse(tx, r, cls == TXC_SCRIPT ? REPLY_ERR_OOM : index_wrap_error(wrapped));
        return;
    }
    tx->index_script |= cls != TXC_SCRIPT && wrapped > 0;
    tx->writes |= command_may_write(r->cmd) || wrapped > 0;
    if (r->as_user)
        tx->script_as = r->as_user;
    if (wrapped <= 0)
        fix &= (unsigned char)~TX_FIX_NULL_ARRAY;
    if ((wrapped > 0 && r->client->user->restricted && unwrap_note(tx, r) < 0) ||
        (layout && exec_fix_note(tx, fix) < 0) ||
        (layout && wrapped == 0 && writes_unseen(r, cls) && upkeep_note(tx, r) < 0) ||
        evbuffer_add(tx->queued, r->data, r->len) < 0) {
        multi_refuse(tx, r, REPLY_ERR_OOM);
        return;
    }
    tx->nqueued++;
    reply_simple(r, "QUEUED");
}
/* EXEC for a transaction that will not run: end MULTI and WATCH. */
static void exec_refuse(struct tx_state *tx, struct request *r, const char *msg)
{
    multi_reset(tx);
    txstate_drop_dconn(tx);
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
    r->block_writes = tx->writes;
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
    const void *lane = tx->watching ? txstate_dconn_lane(tx) : tx->script_as;
    if (!lane_ready(&tx->lanes, r, lane))
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
        multi_reset(tx);
        txstate_watch_end(tx);
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
    multi_reset(tx);
    if (tx->watching) {
        struct node_conn *conn = tx->dconn->conn;
        if (r->as_user)     /* its scripts run as the user; the WATCH stays */
            node_conn_login_as(conn, userconn_opts(r->as_user, tx->dconn->proto));
        r->conn_kind = TX_CONN_PINNED_EXEC;
        r->slot = tx->watch_slot;
        router_send_on(r, conn);
        tx->lanes.lane = conn;
        txstate_watch_end(tx);           /* EXEC ends the watch on the node too */
        dedicated_release(tx->dconn);
    } else {
        r->slot = slot;
        tx->lanes.lane = r->as_user;
        router_send(r);
    }
    /* the proxy's own commands in it run when EXEC answers: what the client
     * sends next waits for that, as it would for EXEC on one server */
    const struct tx_exec *e = txexec_get(r);
    if (e && e->locals)
        tx->lanes.lane = LANE_NEW;
}
/* EXEC refused before it ran (why: the refusal): as Redis, the transaction
 * ends (MULTI and WATCH), and EXEC answers "EXECABORT Transaction discarded
 * because of: why" (an ERR code left out), inside MULTI or not. */
static void exec_rejected(struct request *r, const char *why)
{
    struct tx_state *tx = txstate_of(r->client);
    char msg[512];
    if (strncmp(why, "ERR ", 4) == 0)
        why += 4;
    snprintf(msg, sizeof msg, "EXECABORT Transaction discarded because of: %s", why);
    if (tx && (tx->in_multi || tx->watching)) {
        if (!lane_ready(&tx->lanes, r, NULL))
            return;             /* refused again, in its turn, once released */
        tx->lanes.lane = NULL;
        multi_reset(tx);
        txstate_drop_dconn(tx);
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
        if (!lane_ready(&tx->lanes, r, conn))
            return;
        static const char *const argv[] = { "UNWATCH" };
        static const size_t lens[] = { 7 };
        multi_reset(tx);
        if (request_build(r, 1, argv, lens) < 0) {
            request_fail(r, REPLY_ERR_OOM);
            return;
        }
        router_send_on(r, conn);
        tx->lanes.lane = conn;
        txstate_watch_end(tx);
        dedicated_release(tx->dconn);
        return;
    }
    multi_reset(tx);
    txstate_watch_end(tx);
    reply_simple(r, "OK");
}
static void cmd_multi(struct tx_state *tx, struct request *r)
{
    if (tx->in_multi) {
        request_fail(r, "ERR MULTI calls can not be nested");
        return;
    }
    multi_reset(tx);
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
    const void *lane = tx->dconn && dedicated_serves(tx->dconn, node) ? txstate_dconn_lane(tx) : LANE_NEW;
    if (!lane_ready(&tx->lanes, r, lane))
        return;
    r->slot = slot;
    r->conn_kind = TX_CONN_DEDICATED;
    router_send(r);
    if (tx->dconn) {
        tx->watching = 1;
        tx->watch_slot = slot;
        tx->lanes.lane = tx->dconn->conn;
        txstate_watch_note(tx, r);
    }
}
static void cmd_unwatch(struct tx_state *tx, struct request *r)
{
    if (tx->in_multi) {
        multi_queue(tx, r, TXC_FORWARD);
        return;
    }
    if (!tx->watching || !tx->dconn) {
        txstate_watch_end(tx);
        reply_simple(r, "OK");
        return;
    }
    struct node_conn *conn = tx->dconn->conn;
    if (!lane_ready(&tx->lanes, r, conn))
        return;
    router_send_on(r, conn);
    tx->lanes.lane = conn;
    txstate_watch_end(tx);
    dedicated_release(tx->dconn);
}

/* The routes of MULTI EXEC DISCARD WATCH UNWATCH: each runs with the
 * client's state, made on first use. */
#define MULTI_COMMAND(cmd)                                      \
    static void run_##cmd(struct request *r)                    \
    {                                                           \
        struct tx_state *tx = txstate_get(r->client);           \
        if (tx)                                                 \
            cmd_##cmd(tx, r);                                   \
        else                                                    \
            request_fail(r, REPLY_ERR_OOM);                     \
    }
MULTI_COMMAND(multi)
MULTI_COMMAND(exec)
MULTI_COMMAND(discard)
MULTI_COMMAND(watch)
MULTI_COMMAND(unwatch)

size_t multi_held(const struct tx_state *tx)
{
    return (tx->queued ? evbuffer_get_length(tx->queued) : 0) + held_besides(tx);
}

#define MULTI_CMD(name, fn) { name, { .plan = ROUTE_FAMILY, .run = fn, .in_multi = TXC_TX } }

static const struct route_entry multi_routes[] = {
    MULTI_CMD("multi", run_multi), MULTI_CMD("discard", run_discard),
    MULTI_CMD("watch", run_watch), MULTI_CMD("unwatch", run_unwatch),
    { "exec", { .plan = ROUTE_FAMILY, .run = run_exec, .refuse = exec_rejected,
                .in_multi = TXC_TX } },
};

void multi_register(void)
{
    route_register(multi_routes, (int)(sizeof multi_routes / sizeof multi_routes[0]));
}
