/*
 * pubsub: the pub/sub commands, answered from the client's subscriptions
 * (subscriber.h) as one server answers them. See pubsub.h.
 */
#include "proxy/families/pubsub.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster/slot.h"
#include "proxy/core/client.h"
#include "proxy/core/merge.h"
#include "proxy/core/request.h"
#include "proxy/core/route.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "proxy/families/subscriber.h"
#include "proxy/families/txclass.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"
#include "lib/proto/resp.h"

/* The client holds at least one channel, pattern or shard channel. */
static int subscribed(const struct client *c)
{
    const struct pubsub *ps = subscriber_of(c);
    return ps && ps->channels.n + ps->patterns.n + ps->shard.n > 0;
}

/* Counts for CLIENT LIST. */
static void pubsub_count(const struct client *c, struct client_counts *n)
{
    const struct pubsub *ps = subscriber_of(c);
    if (!ps)
        return;
    n->sub = (int)ps->channels.n;
    n->psub = (int)ps->patterns.n;
    n->ssub = (int)ps->shard.n;
}

/* ---- commands ---- */

/* A (un)subscribe confirmation: a push in RESP3, as messages are. */
static void reply_confirm(struct evbuffer *b, enum resp_proto proto, const char *kind,
                          const char *name, size_t len, long long count)
{
    resp_add_push(b, proto, 3);
    resp_add_bulk_str(b, kind);
    if (name)
        resp_add_bulk(b, name, len);
    else
        resp_add_null(b, proto);
    resp_add_integer(b, count);
}

/* The names a SUBSCRIBE adds, for the one command that sends them on: one
 * heap block of argc entries (argc is already held in the request, so the
 * block is bounded by what the client was allowed to send), never the stack. */
struct fresh_names {
    const char **names;
    size_t *lens;
    struct sub_entry **entries;
    int n;
};

static int fresh_init(struct fresh_names *f, int argc)
{
    size_t n = argc > 0 ? (size_t)argc : 1;
    f->n = 0;
    f->names = malloc(n * (sizeof *f->names + sizeof *f->entries + sizeof *f->lens));
    if (!f->names)
        return -1;
    f->entries = (struct sub_entry **)(void *)(f->names + n);
    f->lens = (size_t *)(void *)(f->entries + n);
    return 0;
}

static void fresh_add(struct fresh_names *f, struct sub_entry *e, size_t len)
{
    f->entries[f->n] = e;
    f->names[f->n] = e->name;
    f->lens[f->n++] = len;
}

/* SUBSCRIBE / PSUBSCRIBE: the reply is built now, with Redis's counts; it
 * goes out once the node has confirmed the new names. */
static void cmd_subscribe_with(struct request *r, struct pubsub *ps, int patterns,
                               struct fresh_names *f);

static void cmd_subscribe(struct request *r, struct pubsub *ps, int patterns)
{
    struct fresh_names f;
    if (fresh_init(&f, r->argc) < 0) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    cmd_subscribe_with(r, ps, patterns, &f);
    free(f.names);
}

static void cmd_subscribe_with(struct request *r, struct pubsub *ps, int patterns,
                               struct fresh_names *f)
{
    struct sub_set *set = patterns ? &ps->patterns : &ps->channels;
    const char *kind = patterns ? "psubscribe" : "subscribe";
    struct evbuffer *b = request_reply_buffer(r);
    for (int i = 1; i < r->argc; i++) {
        size_t len;
        const char *name = request_arg(r, i, &len);
        struct sub_entry *e;
        int added = subset_add(set, name, len, &e);
        if (added < 0) {
            evbuffer_drain(b, evbuffer_get_length(b));
            request_fail(r, REPLY_ERR_OOM);
            return;
        }
        if (added)
            fresh_add(f, e, len);
        reply_confirm(b, request_resp(r), kind, name, len, subscriber_count(ps));
    }
    struct sub_conn *sc = f->n ? subscriber_main_get(ps) : NULL;
    if (!sc) {
        request_finish(r);      /* nothing new (or no memory: the next
                                 * resubscription takes the names) */
        return;
    }
    if (!sc->node) {
        /* first subscription, or waiting out a backoff: the connection's
         * subscription of everything covers these names */
        if (!subscriber_wait_push(sc, r, 0, 0)) {
            request_finish(r);
            return;
        }
        if (!evtimer_pending(ps->resub_timer, NULL) && subscriber_main_connect(ps) < 0)
            subscriber_resub_schedule(ps);
        return;
    }
    if (subscriber_send(sc, patterns ? "PSUBSCRIBE" : "SUBSCRIBE", f->names, f->lens, f->n) < 0 ||
        !subscriber_wait_push(sc, r, f->n, 0))
        request_finish(r);
}

/* UNSUBSCRIBE / PUNSUBSCRIBE: answered at once; messages of names no longer
 * held are dropped as they come. */
static void cmd_unsubscribe(struct request *r, struct pubsub *ps, int patterns)
{
    struct sub_set *set = patterns ? &ps->patterns : &ps->channels;
    struct sub_set *leaving = patterns ? &ps->leaving_patterns : &ps->leaving_channels;
    const char *kind = patterns ? "punsubscribe" : "unsubscribe";
    struct evbuffer *b = request_reply_buffer(r);
    struct evbuffer *cmd = evbuffer_new();
    int ngone = 0, to_node = cmd && ps->main && ps->main->node;
    if (r->argc == 1 && set->n == 0)
        reply_confirm(b, request_resp(r), kind, NULL, 0, subscriber_count(ps));
    if (r->argc == 1) {
        struct sub_entry *e;
        while ((e = TAILQ_FIRST(&set->order)) != NULL) {
            if (cmd)
                resp_add_bulk(cmd, e->name, e->len);
            ngone++;
            resp_add_push(b, request_resp(r), 3);      /* the count after the name is gone */
            resp_add_bulk_str(b, kind);
            resp_add_bulk(b, e->name, e->len);
            if (to_node)
                subset_leaving_add(leaving, e->name, e->len);
            subset_unlink(set, e);
            resp_add_integer(b, subscriber_count(ps));
        }
    }
    for (int i = 1; i < r->argc; i++) {
        size_t len;
        const char *name = request_arg(r, i, &len);
        struct sub_entry *e = subset_find(set, name, len);
        if (e) {
            subset_unlink(set, e);
            if (to_node)
                subset_leaving_add(leaving, name, len);
            if (cmd)
                resp_add_bulk(cmd, name, len);
            ngone++;
        }
        reply_confirm(b, request_resp(r), kind, name, len, subscriber_count(ps));
    }
    /* answered once the node confirms, so that a PUBLISH after the reply
     * no longer counts this client, as on one server; the connection closes
     * then if nothing is left */
    struct sub_conn *sc = ps->main;
    if (ngone && cmd && sc && sc->node) {
        char head[64];
        int n = snprintf(head, sizeof head, "*%d\r\n$%s\r\n%s\r\n", ngone + 1,
                         patterns ? "12" : "11", patterns ? "PUNSUBSCRIBE" : "UNSUBSCRIBE");
        evbuffer_prepend(cmd, head, (size_t)n);
        size_t len = evbuffer_get_length(cmd);
        if (node_send_raw(sc->node, evbuffer_pullup(cmd, -1), len) == 0 &&
            subscriber_wait_push(sc, r, ngone, 0)) {
            evbuffer_free(cmd);
            return;
        }
    }
    if (cmd)
        evbuffer_free(cmd);
    if (subscriber_count(ps) == 0)
        subscriber_main_close(ps);
    request_finish(r);
}

/* The one slot of arguments from..argc-1; SLOT_CROSS when they differ. */
static int args_slot(const struct request *r, int from)
{
    int slot = -1;
    for (int i = from; i < r->argc; i++) {
        size_t len;
        const char *a = request_arg(r, i, &len);
        int s = slot_of(a, len);
        if (slot >= 0 && s != slot)
            return SLOT_CROSS;
        slot = s;
    }
    return slot;
}


static void ssubscribe_names(struct request *r, struct pubsub *ps, int slot,
                             struct fresh_names *f);

/* SSUBSCRIBE: on a connection to the master of the channels' slot. */
static void cmd_ssubscribe(struct request *r, struct pubsub *ps)
{
    int slot = args_slot(r, 1);
    if (slot == SLOT_CROSS) {
        request_fail(r, REPLY_ERR_CROSSSLOT);
        return;
    }
    struct fresh_names f;
    if (fresh_init(&f, r->argc) < 0) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    ssubscribe_names(r, ps, slot, &f);
    free(f.names);
}

static void ssubscribe_names(struct request *r, struct pubsub *ps, int slot,
                             struct fresh_names *f)
{
    struct evbuffer *b = request_reply_buffer(r);
    for (int i = 1; i < r->argc; i++) {
        size_t len;
        const char *name = request_arg(r, i, &len);
        struct sub_entry *e;
        int added = subset_add(&ps->shard, name, len, &e);
        if (added < 0) {
            evbuffer_drain(b, evbuffer_get_length(b));
            request_fail(r, REPLY_ERR_OOM);
            return;
        }
        if (added)
            fresh_add(f, e, len);
        reply_confirm(b, request_resp(r), "ssubscribe", name, len, (long long)ps->shard.n);
    }
    if (f->n == 0) {
        request_finish(r);
        return;
    }
    int node = worker_node_for_slot(r->worker, slot);
    struct sub_conn *sc = node >= 0 ? subscriber_shard_get(ps, node) : NULL;
    if (!sc || subscriber_send(sc, "SSUBSCRIBE", f->names, f->lens, f->n) < 0) {
        subscriber_resub_schedule(ps);     /* the entries have no connection: placed later */
        request_finish(r);
        return;
    }
    for (int i = 0; i < f->n; i++)
        f->entries[i]->conn = sc;
    sc->nsubs += f->n;
    if (!subscriber_wait_push(sc, r, f->n, 0))
        request_finish(r);
}

static void shards_close_idle(struct pubsub *ps)
{
    struct sub_conn *sc, *next;
    for (sc = LIST_FIRST(&ps->shards); sc; sc = next) {
        next = LIST_NEXT(sc, link);
        if (sc->nsubs <= 0 && TAILQ_EMPTY(&sc->waits)) {
            subscriber_shard_close(sc);
            if (ps->gone)
                return;
        }
    }
}

/* SUNSUBSCRIBE the marked entries on their connections and forget them; r
 * is answered once every connection involved has confirmed. */
static void shard_unsubscribe_marked(struct pubsub *ps, struct request *r)
{
    struct sub_group *g = calloc(1, sizeof *g);
    struct sub_conn *sc;
    struct sub_entry *e, *next;
    const char **names = malloc(sizeof *names * (ps->shard.n ? ps->shard.n : 1));
    size_t *lens = malloc(sizeof *lens * (ps->shard.n ? ps->shard.n : 1));
    if (g) {
        g->r = r;
        g->pending = 1;         /* this loop's own, released at the end */
    }
    LIST_FOREACH(sc, &ps->shards, link) {
        int n = 0;
        TAILQ_FOREACH(e, &ps->shard.order, order)
            if (e->removing && e->conn == sc && names && lens) {
                names[n] = e->name;
                lens[n++] = e->len;
            }
        if (n == 0)
            continue;
        sc->nsubs -= n;
        struct sub_wait *wt = subscriber_send(sc, "SUNSUBSCRIBE", names, lens, n) == 0
                            ? subscriber_wait_push(sc, NULL, n, 1) : NULL;
        if (wt && g) {
            wt->group = g;
            g->pending++;
        }
    }
    free(names);
    free(lens);
    for (e = TAILQ_FIRST(&ps->shard.order); e; e = next) {
        next = TAILQ_NEXT(e, order);
        if (e->removing)
            subset_unlink(&ps->shard, e);
    }
    if (!g) {
        request_finish(r);
    } else if (--g->pending == 0) {
        free(g);
        request_finish(r);
    }
    if (!ps->gone)
        shards_close_idle(ps);
}

static void cmd_sunsubscribe(struct request *r, struct pubsub *ps)
{
    struct evbuffer *b = request_reply_buffer(r);
    long long left = (long long)ps->shard.n;
    struct sub_entry *e;
    if (r->argc > 1 && args_slot(r, 1) == SLOT_CROSS) {
        request_fail(r, REPLY_ERR_CROSSSLOT);
        return;
    }
    if (r->argc == 1 && left == 0)
        reply_confirm(b, request_resp(r), "sunsubscribe", NULL, 0, 0);
    if (r->argc == 1)
        TAILQ_FOREACH(e, &ps->shard.order, order) {
            e->removing = 1;
            reply_confirm(b, request_resp(r), "sunsubscribe", e->name, e->len, --left);
        }
    for (int i = 1; i < r->argc; i++) {
        size_t len;
        const char *name = request_arg(r, i, &len);
        e = subset_find(&ps->shard, name, len);
        if (e && !e->removing) {
            e->removing = 1;
            left--;
        }
        reply_confirm(b, request_resp(r), "sunsubscribe", name, len, left);
    }
    shard_unsubscribe_marked(ps, r);
}

struct elem {
    const char *p;
    size_t len;
};

static int elem_cmp(const void *a, const void *b)
{
    const struct elem *x = a, *y = b;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return memcmp(x->p, y->p, x->len);
}

/* Every part's array elements, each distinct one once (sorted: the order of
 * a node's answer is its dict's, which no client can rely on). */
static void merge_union_run(struct request *p, struct evbuffer *out)
{
    long total = 0, k = 0, uniq = 0;
    struct reply_iter it;
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        long n = reply_array_elements(b, len, NULL, NULL, -1);
        if (n < 0) {
            resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
            return;
        }
        total += n;
    }
    struct elem *all = malloc(sizeof *all * (size_t)(total ? total : 1));
    if (!all) {
        resp_add_error(out, REPLY_ERR_OOM);
        return;
    }
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        reply_iter_array(&it, b, len);
        while (reply_iter_next(&it, &all[k].p, &all[k].len) > 0)
            k++;
    }
    qsort(all, (size_t)k, sizeof *all, elem_cmp);
    for (long j = 0; j < k; j++)
        if (j == 0 || elem_cmp(&all[j], &all[j - 1]) != 0)
            all[uniq++] = all[j];
    resp_add_array(out, uniq);
    for (long j = 0; j < uniq; j++)
        evbuffer_add(out, all[j].p, all[j].len);
    free(all);
}

/* [name, count, name, count, ...] from every part, in the same order: the
 * first part's names with every part's counts added. */
static void merge_numsub_run(struct request *p, struct evbuffer *out)
{
    size_t len0;
    const char *b0 = merge_part_bytes(p->parts[0], &len0), *e;
    size_t el;
    struct reply_iter it;
    long n = reply_array_elements(b0, len0, NULL, NULL, -1);
    if (n < 0 || n % 2) {
        resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
        return;
    }
    long long *sums = calloc((size_t)n / 2 + 1, sizeof *sums);
    if (!sums) {
        resp_add_error(out, REPLY_ERR_OOM);
        return;
    }
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (reply_array_elements(b, len, NULL, NULL, n) != n)
            goto bad;
        reply_iter_array(&it, b, len);
        for (long j = 0; reply_iter_next(&it, &e, &el) > 0; j++) {
            if (j % 2 == 0)
                continue;
            if (e[0] != ':')
                goto bad;
            sums[j / 2] += strtoll(e + 1, NULL, 10);
        }
    }
    reply_iter_array(&it, b0, len0);
    resp_add_array(out, n);
    for (long j = 0; reply_iter_next(&it, &e, &el) > 0; j++) {
        if (j % 2 == 0)
            evbuffer_add(out, e, el);
        else
            resp_add_integer(out, sums[j / 2]);
    }
    free(sums);
    return;
bad:
    free(sums);
    resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
}

static const struct merge merge_union = { merge_union_run, 0 };
static const struct merge merge_numsub = { merge_numsub_run, 0 };

/* PUBSUB's counting subcommands: every master knows only its own
 * subscribers, so each asks them all and merges. */
static void run_pubsub_channels(struct request *r)
{
    router_fanout_own(r, &merge_union);
}

static void run_pubsub_numsub(struct request *r)
{
    router_fanout_own(r, &merge_numsub);
}

static void run_pubsub_numpat(struct request *r)
{
    router_fanout_own(r, &merge_sum);
}

/* PUBSUB HELP, and a subcommand the proxy does not know: any master. */
static void run_pubsub_other(struct request *r)
{
    r->slot = SLOT_NONE;
    router_send(r);
}

static void run_spublish(struct request *r)
{
    size_t len;
    const char *ch = request_arg(r, 1, &len);
    r->slot = slot_of(ch, len);
    router_send(r);
}

/* A subscriber command with the client's state, made on first use. */
static struct pubsub *subscriber(struct request *r)
{
    struct pubsub *ps = subscriber_get(r->client);
    if (!ps) {
        request_fail(r, REPLY_ERR_OOM);
        return NULL;
    }
    r->silent = 0;      /* confirmations are pushes: Redis sends them under CLIENT REPLY OFF too */
    return ps;
}

/* Valkey 8 refuses (P|S)UNSUBSCRIBE from a client subscribed to nothing,
 * where Redis confirms it: as the cluster's server. 1 when r was refused. */
static int nosub_refused(struct request *r)
{
    char msg[128];
    if (subscribed(r->client) ||
        !topology_server_since(worker_server(r->worker), "valkey", "8.0.0"))
        return 0;
    snprintf(msg, sizeof msg, "NOSUB '%s' command executed not in subscribed mode",
             r->cmd->fullname);
    request_fail(r, msg);
    return 1;
}

/* A subscriber command with the client's state, unless refused first
 * (then r is answered and no state is made). */
#define SUBSCRIBER_COMMAND(fn, refused, call)           \
    static void fn(struct request *r)                   \
    {                                                   \
        struct pubsub *ps;                              \
        if (!(refused) && (ps = subscriber(r)))         \
            call;                                       \
    }
SUBSCRIBER_COMMAND(run_subscribe, 0, cmd_subscribe(r, ps, 0))
SUBSCRIBER_COMMAND(run_psubscribe, 0, cmd_subscribe(r, ps, 1))
SUBSCRIBER_COMMAND(run_ssubscribe, 0, cmd_ssubscribe(r, ps))
SUBSCRIBER_COMMAND(run_unsubscribe, nosub_refused(r), cmd_unsubscribe(r, ps, 0))
SUBSCRIBER_COMMAND(run_punsubscribe, nosub_refused(r), cmd_unsubscribe(r, ps, 1))
SUBSCRIBER_COMMAND(run_sunsubscribe, nosub_refused(r), cmd_sunsubscribe(r, ps))

/* What Redis 7.0 lets a RESP2 client in subscribed mode run. */
/* PING, which a subscribed client gets answered here (pubsub_register). */
static const struct command *ping_cmd;

/* For a subscribed client: refuse what Redis refuses in that context, and
 * answer PING. 1 when r was handled (answered) here. */
static int intercept(struct request *r)
{
    /* RESP3 has no subscribed mode: pushes and replies share the connection */
    if (request_resp(r) == RESP3 || !subscribed(r->client))
        return 0;
    const char *name = r->cmd->fullname;
    if (!(r->cmd->proxy_facts & CMDP_SUBSCRIBED_OK)) {
        char msg[256];
        snprintf(msg, sizeof msg, "ERR Can't execute '%s': only (P|S)SUBSCRIBE / "
                 "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", name);
        router_reject(r, msg);
        return 1;
    }
    if (r->cmd != ping_cmd)
        return 0;
    if (r->argc > 2) {
        char msg[80];
        request_fail(r, reply_arity(msg, sizeof msg, "ping"));
        return 1;
    }
    struct evbuffer *b = request_reply_buffer(r);
    resp_add_array(b, 2);
    resp_add_bulk_str(b, "pong");
    if (r->argc == 2) {
        size_t len;
        const char *a = request_arg(r, 1, &len);
        resp_add_bulk(b, a, len);
    } else {
        resp_add_bulk(b, "", 0);
    }
    request_finish(r);
    return 1;
}

void pubsub_speak(struct client *c)
{
    subscriber_speak(c);
}

void pubsub_reset(struct client *c)
{
    subscriber_teardown(c);
}

/* The client is gone: close its connections (freed late). */
static void pubsub_gone(struct client *c)
{
    subscriber_teardown(c);
}

/* ---- routes ---- */

#define PUBSUB(name, fn, cls) { name, { .plan = ROUTE_FAMILY, .run = fn, .in_multi = cls } }

static const struct route_entry pubsub_routes[] = {
    PUBSUB("subscribe", run_subscribe, TXC_OTHER),
    PUBSUB("psubscribe", run_psubscribe, TXC_OTHER),
    PUBSUB("unsubscribe", run_unsubscribe, TXC_OTHER),
    PUBSUB("punsubscribe", run_punsubscribe, TXC_OTHER),
    PUBSUB("ssubscribe", run_ssubscribe, TXC_OTHER),
    PUBSUB("sunsubscribe", run_sunsubscribe, TXC_OTHER),
    PUBSUB("pubsub|channels", run_pubsub_channels, TXC_OTHER),
    PUBSUB("pubsub|shardchannels", run_pubsub_channels, TXC_OTHER),
    PUBSUB("pubsub|numsub", run_pubsub_numsub, TXC_OTHER),
    PUBSUB("pubsub|shardnumsub", run_pubsub_numsub, TXC_OTHER),
    PUBSUB("pubsub|numpat", run_pubsub_numpat, TXC_OTHER),
    PUBSUB("pubsub|*", run_pubsub_other, TXC_OTHER),
    /* to its channel's slot, as a node queues it */
    PUBSUB("spublish", run_spublish, TXC_FORWARD),
};

static const struct client_family pubsub_family = {
    .closing = pubsub_gone,
    .count = pubsub_count,
    .intercept = intercept,
    .subscribed = subscribed,
};

void pubsub_register(void)
{
    route_register(pubsub_routes, (int)(sizeof pubsub_routes / sizeof pubsub_routes[0]));
    ping_cmd = command_lookup("ping", 4);
    subscriber_family(client_family_register(&pubsub_family));
}
