/*
 * readfrom: reads sent to replicas, read-your-writes kept. See readfrom.h.
 */
#include "proxy/core/readfrom.h"

#include <stdlib.h>
#include <string.h>

#include "cluster/node.h"
#include "cluster/slot.h"
#include "lib/proto/command.h"
#include "lib/proto/reply.h"
#include "proxy/config/directives.h"
#include "proxy/core/client.h"
#include "proxy/core/replicas.h"
#include "proxy/core/request.h"
#include "proxy/core/stats.h"
#include "proxy/core/worker.h"

/* Which of its client's counts a request on its way is in. */
enum { READFROM_UNCOUNTED, READFROM_MASTER, READFROM_REPLICA };

static const char no_replica[] =
    "CLUSTERDOWN No replica of the master of this slot can serve reads now (read-from "
    "replica: none connected within replica-max-lag-ms)";

/* A plain read of one slot the router may send to a replica. */
static int readable(const struct request *r)
{
    const struct request *top = request_top(r);
    const struct command *cmd = top->cmd;
    const unsigned not_reads = CMD_WRITE | CMD_MAY_REPLICATE | CMD_BLOCKING;
    if (!cmd || r->slot < 0 || r->conn_kind || r->as_user || r->asking || r->no_replica ||
        r->fixed_node >= 0 || r->block_parts || r->hooks || top->marks || r->evalsha)
        return 0;
    return (cmd->flags & CMD_READONLY) && !(cmd->flags & not_reads) &&
           !(cmd->proxy_facts & (CMDP_SCRIPT | CMDP_SCRIPT_RO | CMDP_WAITS));
}

/* A slot whose master the worker saw redirect a command (ASK, TRYAGAIN: a
 * migration under way, which a replica may not know of and answer nil for
 * a key already moved) is read from masters for SLOT_SETTLE_MS; one that
 * moved (MOVED, a new topology) from replicas fresh past the move (a
 * replica of its new master may not have the keys it took). */
#define SLOT_SETTLE_MS 5000

struct slot_move {
    uint64_t ms;                    /* 0: never seen to move */
    int migrating;                  /* by ASK or TRYAGAIN */
};

static int slot_settled(struct worker *w, int slot, uint64_t now, uint64_t *after)
{
    if (!w->slot_moves && !(w->slot_moves = calloc(SLOT_COUNT, sizeof *w->slot_moves)))
        return 0;
    const struct slot_move *m = &w->slot_moves[slot];
    if (m->ms && now < m->ms + SLOT_SETTLE_MS && m->migrating)
        return 0;
    if (m->ms > *after)
        *after = m->ms;
    return 1;
}

void readfrom_slot_moved(struct worker *w, int slot, int migrating)
{
    if (!w->slot_moves || slot < 0 || slot >= SLOT_COUNT)
        return;
    w->slot_moves[slot] = (struct slot_move){ node_now_ms(), migrating };
}

static int bucket_of(int slot)
{
    return slot % CLIENT_WROTE_BUCKETS;
}

struct node_conn *readfrom_route(struct request *r, int node, int *park, const char **refused)
{
    struct worker *w = r->worker;
    const struct config *cfg = w->cfg;
    struct client *c = request_owner(r);
    *park = 0;
    *refused = NULL;
    if (!c || (cfg->read_from == READ_FROM_MASTER && c->on_replicas == 0))
        return NULL;
    if (!readable(r)) {
        /* a write does not overtake its client's reads on replicas */
        if (c->on_replicas > 0 && request_may_write(r)) {
            c->acks_parked = 1;
            *park = 1;
        }
        return NULL;
    }
    if (cfg->read_from == READ_FROM_MASTER || c->on_masters > 0)
        return NULL;
    uint64_t now = node_now_ms(), max_lag = (uint64_t)cfg->replica_max_lag_ms;
    uint64_t after = c->wrote_ms[bucket_of(r->slot)];
    if (!slot_settled(w, r->slot, now, &after))
        return NULL;
    struct node_conn *conn = replicas_conn(w, node, request_resp(r), after, now, max_lag);
    if (conn) {
        r->readfrom_kind = READFROM_REPLICA;
        c->on_replicas++;
        stat_inc(&w->stats.reads_replica);
        return conn;
    }
    /* the client's own write sends it to the master, and so does a replica
     * not asked yet (as the proxy starts); lag or no replica, read-from
     * replica refuses it */
    if (cfg->read_from == READ_FROM_REPLICA && replicas_known(w, node) &&
        !replicas_conn(w, node, request_resp(r), 0, now, max_lag))
        *refused = no_replica;
    return NULL;
}

void readfrom_master_sent(struct request *r)
{
    struct worker *w = r->worker;
    struct client *c;
    if (r->readfrom_kind != READFROM_UNCOUNTED)
        return;
    const struct command *cmd = request_top(r)->cmd;
    if (cmd && (cmd->flags & (CMD_READONLY | CMD_WRITE)) == CMD_READONLY && !r->block_parts)
        stat_inc(&w->stats.reads_master);
    /* counted with read-from master too: a reload that turns it on finds
     * the requests already on their way */
    if (!(c = request_owner(r)))
        return;
    r->readfrom_kind = READFROM_MASTER;
    c->on_masters++;
}

int readfrom_answered(struct request *r, int may_have_written, int failed, int *was_replica)
{
    struct client *c = request_owner(r);
    int kind = r->readfrom_kind;
    *was_replica = kind == READFROM_REPLICA;
    r->readfrom_kind = READFROM_UNCOUNTED;
    if (!c || kind == READFROM_UNCOUNTED)
        return 0;
    if (kind == READFROM_MASTER) {
        c->on_masters--;
        if (may_have_written && request_may_write(r)) {
            /* a write lost on its way may still run, as late as a node that
             * froze resumes: its slots are the masters' until then */
            uint64_t now = node_now_ms() +
                           (failed ? (uint64_t)r->worker->cfg->node_timeout_ms : 0);
            if (r->slot >= 0)
                c->wrote_ms[bucket_of(r->slot)] = now;
            else
                for (int i = 0; i < CLIENT_WROTE_BUCKETS; i++)
                    c->wrote_ms[i] = now;
        }
        return 0;
    }
    if (--c->on_replicas > 0 || !c->acks_parked)
        return 0;
    c->acks_parked = 0;
    return 1;
}

int readfrom_refused_by_replica(struct request *r, const char *errline)
{
    int slot;
    char addr[128];
    enum reply_redirect kind = reply_classify(errline, strlen(errline), &slot, addr,
                                              sizeof addr);
    if (kind == REPLY_PLAIN && strncmp(errline, "LOADING", 7) != 0 &&
        strncmp(errline, "MASTERDOWN", 10) != 0)
        return 0;
    if (kind == REPLY_MOVED || kind == REPLY_ASK || kind == REPLY_TRYAGAIN)
        readfrom_slot_moved(r->worker, r->slot, kind != REPLY_MOVED);
    r->no_replica = 1;
    stat_inc(&r->worker->stats.reads_replica_back);
    return 1;
}
