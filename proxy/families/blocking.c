/*
 * blocking: blocking commands on dedicated connections. See blocking.h.
 */
#include "proxy/families/blocking.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cluster/node.h"
#include "cluster/slot.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "proxy/families/dedicated.h"
#include "proxy/families/index.h"
#include "proxy/families/txexec.h"
#include "proxy/families/txstate.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"
#include "lib/proto/reply.h"

/* A blocking command answered (not with an error). It ran outside the
 * index script (Lua does not block): the indexes of its keys that are
 * indexed records are brought up to date now (index.h). */
static int blocking_reply(struct request *r, struct node_conn *from, const struct reply_view *v,
                          const struct reply_scanner *s)
{
    (void)from, (void)v;
    if (s->type != '-')
        index_upkeep(r);
    return 0;
}

static const struct request_hooks blocking_hooks = { .reply = blocking_reply };

void blocking_dispatch(struct tx_state *tx, struct request *r)
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
    if (!lane_ready(&tx->lanes, r, serves ? txstate_dconn_lane(tx) : LANE_NEW))
        return;
    r->slot = slot;
    r->conn_kind = TX_CONN_DEDICATED;
    r->hooks = &blocking_hooks;
    router_send(r);
    tx->lanes.lane = tx->dconn ? (const void *)tx->dconn->conn : NULL;
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
uint64_t blocking_millis(const char *s, size_t len)
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
uint64_t blocking_wait_ms(const struct request *r)
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
        return blocking_millis(a, len);
    }
    if (facts & CMDP_TIMEOUT_FIRST)
        a = request_arg(r, 1, &len);
    else            /* CMDP_TIMEOUT_LAST, and a blocking command learned */
        a = request_arg(r, r->argc - 1, &len);
    return seconds_ms(a, len);
}
