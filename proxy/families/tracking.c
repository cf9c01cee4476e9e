/*
 * tracking: client-side caching through the proxy. See tracking.h.
 */
#include "proxy/families/tracking.h"

#include <event2/buffer.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "cluster/node.h"
#include "keylayout/layout.h"
#include "lib/base/hash.h"
#include "lib/base/log.h"
#include "lib/proto/command.h"
#include "lib/proto/errors.h"
#include "lib/proto/reply.h"
#include "lib/proto/resp.h"
#include "proxy/core/client.h"
#include "proxy/core/proxy.h"
#include "proxy/core/request.h"
#include "proxy/core/route.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "proxy/families/tracktable.h"
#include "proxy/families/txclass.h"
#include "proxy/families/txstate.h"

/* The prefixes one CLIENT TRACKING may give: each is checked against every
 * other (as Redis does), so their number bounds the work. */
#define TRACKING_PREFIXES_MAX 1024

#define TRACK_BCAST  1u
#define TRACK_OPTIN  2u
#define TRACK_OPTOUT 4u
#define TRACK_NOLOOP 8u
#define TRACK_REDIRECT 16u

/* A client's tracking, while it is on; the worker's table may hold it
 * longer, so it is counted (refs) and outlives its client (client NULL). */
struct tracking {
    struct client *client;          /* NULL once the client is gone */
    int refs;                       /* the client's, and one per key it is listed for */
    unsigned on : 1;                /* as Redis, the keys it read stay listed while
                                       it is off, and count again once it is on */
    unsigned optin : 1, optout : 1, noloop : 1;
    unsigned caching : 1;           /* CLIENT CACHING YES (OPTIN) or NO (OPTOUT) for
                                       the next command or transaction */
    TAILQ_ENTRY(tracking) link;     /* in its worker's list, while its client is */
};

/* A worker's tracking clients and the keys they read. */
struct tracking_worker {
    struct track_table *table;
    TAILQ_HEAD(, tracking) clients;
    /* for INFO on any thread (relaxed atomics): clients with tracking on,
     * the table's keys and readers */
    long long on, keys, items;
    uint32_t owner[16384];          /* each slot's master (its address's hash), to
                                       see a topology that moves a slot */
};

static int client_id_of = -1, worker_id_of = -1;
static unsigned char track_mark;    /* a read whose keys the node tracks for its client */
static const struct command *client_cmd, *multi_cmd, *exec_cmd, *discard_cmd;

static const char invalidate_null[] = ">2\r\n$10\r\ninvalidate\r\n_\r\n";

/* c's tracking, on or off, or NULL when it never had it on. */
static struct tracking *state_of(const struct client *c)
{
    return client_family_state(c, client_id_of);
}

/* c's tracking while it is on, else NULL. */
static struct tracking *tracking_of(const struct client *c)
{
    struct tracking *t = state_of(c);
    return t && t->on ? t : NULL;
}

static struct tracking_worker *tracking_worker_of(const struct worker *w)
{
    return worker_family_state(w, worker_id_of);
}

/* The table's size, for INFO (tracking_totals). */
static void counts_publish(struct tracking_worker *tw)
{
    __atomic_store_n(&tw->keys, (long long)track_table_keys(tw->table), __ATOMIC_RELAXED);
    __atomic_store_n(&tw->items, (long long)track_table_readers(tw->table), __ATOMIC_RELAXED);
}

static void on_count(struct client *c, int delta)
{
    __atomic_add_fetch(&tracking_worker_of(c->worker)->on, delta, __ATOMIC_RELAXED);
}

void tracking_totals(const struct proxy *p, long long *clients, long long *keys,
                     long long *items)
{
    *clients = *keys = *items = 0;
    for (int i = 0; i < p->nworkers; i++) {
        const struct tracking_worker *tw = tracking_worker_of(&p->workers[i]);
        if (!tw)
            continue;
        *clients += __atomic_load_n(&tw->on, __ATOMIC_RELAXED);
        *keys += __atomic_load_n(&tw->keys, __ATOMIC_RELAXED);
        *items += __atomic_load_n(&tw->items, __ATOMIC_RELAXED);
    }
}

static void reader_hold(void *reader)
{
    ((struct tracking *)reader)->refs++;
}

static void reader_drop(void *reader)
{
    struct tracking *t = reader;
    if (--t->refs == 0)
        free(t);
}

static const struct track_reader_ops reader_ops = { reader_hold, reader_drop };

/* ---- invalidation messages ---- */

/* The client's name for the cluster key[0..len): the legacy name when the
 * key layout rewrote it, into buf (or the heap, *heap to free); NULL when
 * out of memory. */
static const char *client_name(const struct worker *w, const char *key, size_t len,
                               char *buf, size_t cap, char **heap, size_t *outlen)
{
    const struct layout *l = worker_layout(w);
    *heap = NULL;
    *outlen = len;
    if (!l)
        return key;
    size_t need = layout_max_len(l, len);
    char *out = need <= cap ? buf : (*heap = malloc(need));
    if (!out)
        return NULL;
    enum layout_result res = layout_to_legacy(l, key, len, out, need, outlen, NULL);
    if (res == LAYOUT_MAPPED)
        return out;
    *outlen = len;
    return key;
}

/* RESP3's invalidation of key[0..len) (the cluster's name) into b. */
static void invalidation_add(struct evbuffer *b, const struct worker *w, const char *key,
                             size_t len)
{
    char buf[512], *heap;
    size_t n;
    const char *name = client_name(w, key, len, buf, sizeof buf, &heap, &n);
    resp_add_push(b, RESP3, 2);
    resp_add_bulk(b, "invalidate", 10);
    resp_add_array(b, 1);
    resp_add_bulk(b, name ? name : key, name ? n : len);
    free(heap);
}

/* t's client, if it is there and speaks RESP3 (RESP2 has no pushes: Redis
 * sends such a client nothing). */
static struct client *push_target(const struct tracking *t)
{
    return t->on && t->client && t->client->resp == RESP3 ? t->client : NULL;
}

/* The table let go of reader t for key: its client gets the invalidation. */
static void notify(void *reader, const char *key, size_t len, void *arg)
{
    struct client *c = push_target(reader);
    struct evbuffer *b = c ? evbuffer_new() : NULL;
    if (!b)
        return;
    invalidation_add(b, arg, key, len);
    struct reply_view v = { b, NULL, evbuffer_get_length(b) };
    client_push(c, &v, 0);
    evbuffer_free(b);
}

/* Every tracking client of w forgets its whole cache (a null key), and the
 * table forgets every read: the proxy can no longer promise an
 * invalidation for them (why, logged). */
static void flush_all(struct worker *w, const char *why)
{
    struct tracking_worker *tw = tracking_worker_of(w);
    struct tracking *t;
    if (!tw)
        return;
    track_table_clear(tw->table);
    counts_publish(tw);
    if (TAILQ_EMPTY(&tw->clients))
        return;
    log_verbose("tracking", "worker %d: every tracking client's cache invalidated: %s",
                w->id, why);
    TAILQ_FOREACH(t, &tw->clients, link) {
        struct client *c = push_target(t);
        if (c) {
            struct reply_view v = { NULL, invalidate_null, sizeof invalidate_null - 1 };
            client_push(c, &v, 0);
        }
    }
}

/* ---- the node connections that track ---- */

static void tracking_push(struct node_conn *c, const struct reply_view *v,
                          const struct reply_scanner *s, void *arg);

/* A shared connection whose CLIENT TRACKING ON the node refused: its pushes
 * are dropped, and the reads on it are invalidated as they are answered. */
static void tracking_refused(struct node_conn *c, const struct reply_view *v,
                             const struct reply_scanner *s, void *arg)
{
    (void)c;
    (void)s;
    (void)arg;
    reply_view_drop(v);
}

struct tracking_on {
    struct node_req nreq;
    struct worker *w;
};

static void tracking_on_reply(struct node_req *nr, const struct reply_view *v,
                              const struct reply_scanner *s)
{
    struct tracking_on *on = (struct tracking_on *)nr;
    struct node_conn *c = nr->conn;
    if (s->type != '+') {
        log_warning("tracking", "node %s refused CLIENT TRACKING ON OPTIN (%s): client-side "
                    "caching reads on it are invalidated as they are answered", c->addr,
                    s->type == '-' ? s->errline : "not OK");
        c->on_push = tracking_refused;
        flush_all(on->w, "a node refused to track");
    }
    reply_view_drop(v);
    free(on);
}

static void tracking_on_fail(struct node_req *nr, int may_have_run, const char *why)
{
    (void)may_have_run;
    (void)why;
    free(nr);           /* the connection is gone: conn_down flushes */
}

/* c, a shared RESP3 connection of w's, tracks the keys of the reads that
 * follow CLIENT CACHING YES on it, and pushes their invalidations: 0, or
 * -1 when it cannot (refused, out of memory). */
static int tracking_enable(struct worker *w, struct node_conn *c)
{
    static const char on[] = "*4\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\nON\r\n"
                             "$5\r\nOPTIN\r\n";
    if (c->on_push == tracking_push)
        return 0;
    if (c->on_push)
        return -1;
    struct tracking_on *req = calloc(1, sizeof *req);
    if (!req)
        return -1;
    req->w = w;
    req->nreq.on_reply = tracking_on_reply;
    req->nreq.on_fail = tracking_on_fail;
    c->on_push = tracking_push;
    c->push_arg = w;
    c->push_max = 0;
    node_send(c, &req->nreq, on, sizeof on - 1);
    return 0;
}

/* An invalidation the node pushed on c: ">2 invalidate [keys]", or a null
 * (FLUSHALL, FLUSHDB: every key). */
static void tracking_push(struct node_conn *c, const struct reply_view *v,
                          const struct reply_scanner *s, void *arg)
{
    struct worker *w = arg;
    struct tracking_worker *tw = tracking_worker_of(w);
    size_t len = v->len, el;
    const char *b = reply_view_head(v, len), *e, *keys;
    struct reply_iter it, kit;
    (void)s;
    if (b && reply_iter_of(&it, b, len, '>') == 0 && it.n == 2 &&
        reply_iter_next(&it, &e, &el) > 0 && el == 17 && memcmp(e, "$10\r\ninvalidate\r\n", 17) == 0 &&
        reply_iter_next(&it, &keys, &el) > 0) {
        if (el == 3 && keys[0] == '_')
            flush_all(w, "a master flushed its keys");
        else if (reply_iter_of(&kit, keys, el, '*') == 0)
            while (reply_iter_next(&kit, &e, &el) > 0) {
                struct reply_head h;
                if (reply_header(e, el, &h) == 0 && h.type == '$' && h.n >= 0 &&
                    h.len + (size_t)h.n + 2 == el)
                    track_table_invalidate(tw->table, e + h.len, (size_t)h.n, c, c->nanswered,
                                           notify, w);
            }
        counts_publish(tw);
    }
    reply_view_drop(v);
}

/* ---- the requests of tracking clients ---- */

/* Whether r, of a client whose tracking is t, is a read whose keys Redis
 * would remember for it (or EXEC, whose block may hold some). */
static int tracks(const struct tracking *t, const struct request *r)
{
    const struct command *cmd = r->cmd;
    int caching = t->optin ? t->caching : t->optout ? !t->caching : 1;
    int keyed = cmd->first_key > 0 || cmd->nkeyspecs > 0;
    return caching && request_resp(r) == RESP3 &&
           (((cmd->flags & CMD_READONLY) && keyed) || command_runs_script(cmd) ||
            cmd == exec_cmd);
}

/* Redis forgets CLIENT CACHING after the next command, or after the
 * transaction it began. */
static void caching_spent(struct tracking *t, const struct request *r)
{
    const struct command *cmd = r->cmd;
    const struct tx_state *tx = txstate_of(r->client);
    int in_multi = tx && tx->in_multi && cmd != exec_cmd && cmd != discard_cmd;
    if (!in_multi && cmd != multi_cmd && cmd != client_cmd && cmd->parent != client_cmd)
        t->caching = 0;
}

/* r's keys, as the node sees them, to fn (a part's by its parent's
 * command: a split command's parts are that command over fewer keys): 0,
 * or -1 when out of memory left some out. */
static int keys_each(struct request *r, void (*fn)(struct request *r, const char *key,
                                                    size_t len, void *arg), void *arg)
{
    const struct command *cmd = r->cmd ? r->cmd : r->parent ? r->parent->cmd : NULL;
    int some[16], *keys = some, rc = 0;
    int n = cmd ? request_keys(r, cmd, some, 16) : 0;
    if (n > 16) {
        int *all = malloc(sizeof *all * (size_t)n);
        if (all) {
            keys = all;
            n = request_keys(r, cmd, all, n);
        } else {
            n = 16;
            rc = -1;
        }
    }
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *k = request_arg(r, keys[i], &len);
        fn(r, k, len, arg);
    }
    if (keys != some)
        free(keys);
    return rc;
}

static void forget_key(struct request *r, const char *key, size_t len, void *arg)
{
    track_table_forget(tracking_worker_of(r->worker)->table, key, len, arg);
}

/* A client family's take: never takes r, but notes what Redis's tracking
 * would: a read to track (marked, for sending), a NOLOOP client's write
 * (it is not told of its own), the CACHING flag spent. */
static int note_request(struct request *r, const struct route *rt)
{
    struct tracking *t = tracking_of(r->client);
    (void)rt;
    if (!t)
        return 0;
    if (tracks(t, r))
        r->marks |= track_mark;
    if (t->noloop && (r->cmd->flags & CMD_WRITE)) {
        keys_each(r, forget_key, t);
        counts_publish(tracking_worker_of(r->worker));
    }
    caching_spent(t, r);
    return 0;
}

struct fallback {
    struct evbuffer *out;
    int nkeys;
};

static void fallback_key(struct request *r, const char *key, size_t len, void *arg)
{
    struct fallback *f = arg;
    invalidation_add(f->out, r->worker, key, len);
    f->nkeys++;
}

/* A read the node does not track for its client (on another connection,
 * after ASKING, in a transaction, or out of memory): its keys' invalidation
 * right after its reply, so the client caches none of it; a null key when
 * its keys are not known here (EXEC's block). */
static void invalidate_after(struct request *top, struct request *r)
{
    struct fallback f = { evbuffer_new(), 0 };
    int block = r->block_parts || r->cmd == exec_cmd;
    if (!f.out)
        return;
    if (!block && keys_each(r, fallback_key, &f) < 0)
        evbuffer_drain(f.out, evbuffer_get_length(f.out)), block = 1;
    if (block)
        evbuffer_add(f.out, invalidate_null, sizeof invalidate_null - 1);
    if (!block && f.nkeys == 0) {
        evbuffer_free(f.out);
        return;
    }
    struct reply_view v = { f.out, NULL, evbuffer_get_length(f.out) };
    client_push_after(top->client, top, &v);
    evbuffer_free(f.out);
}

struct tracked_read {
    struct tracking *t;
    struct node_conn *conn;
    uint64_t pos;
    int failed;
};

static void track_key(struct request *r, const char *key, size_t len, void *arg)
{
    struct tracked_read *tr = arg;
    struct worker *w = r->worker;
    if (track_table_add(tracking_worker_of(w)->table, key, len, tr->t, tr->conn, tr->pos,
                        w->cfg->tracking_table_max_keys, notify, w) < 0)
        tr->failed = 1;
}

/* Whether c is one of w's shared RESP3 connections, which track. */
static int shared_resp3(const struct worker *w, const struct node_conn *c)
{
    for (int i = 0; i < w->topo->nnodes; i++)
        if (w->conns[WORKER_CONN_RESP3][i] == c)
            return 1;
    return 0;
}

/* A marked request (or part) goes out on conn: CLIENT CACHING YES right
 * before it, where the node can track its keys for us, and its keys in the
 * table; else their invalidation after its reply. */
static void sending(struct request *r, struct node_conn *conn)
{
    static const char *yes[] = { "CLIENT", "CACHING", "YES" };
    struct request *top = r->parent ? r->parent : r;
    struct tracking *t = top->client ? tracking_of(top->client) : NULL;
    if (!t || !(top->marks & track_mark) || top->detached)
        return;     /* (a detached copy runs inside EXEC, which is invalidated whole) */
    if (r->asking || r->block_parts || r->cmd == exec_cmd || !shared_resp3(r->worker, conn) ||
        tracking_enable(r->worker, conn) < 0) {
        invalidate_after(top, r);
        return;
    }
    node_send_quiet(conn, 3, yes);
    struct tracked_read tr = { t, conn, conn->nsent + 1, 0 };
    if (keys_each(r, track_key, &tr) < 0 || tr.failed)
        invalidate_after(top, r);
    counts_publish(tracking_worker_of(r->worker));
}

/* ---- on and off ---- */

static int tracking_on(struct client *c, unsigned options)
{
    struct tracking *t = state_of(c);
    if (!t) {
        struct tracking_worker *tw = tracking_worker_of(c->worker);
        if (!tw || !(t = calloc(1, sizeof *t)))
            return -1;
        t->client = c;
        t->refs = 1;
        TAILQ_INSERT_TAIL(&tw->clients, t, link);
        client_family_set(c, client_id_of, t);
    }
    if (!t->on)
        on_count(c, 1);
    t->on = 1;
    t->optin = (options & TRACK_OPTIN) != 0;
    t->optout = (options & TRACK_OPTOUT) != 0;
    t->noloop = (options & TRACK_NOLOOP) != 0;
    return 0;
}

/* Off, as Redis's disableTracking: the modes and CACHING go. */
static void tracking_off(struct client *c)
{
    struct tracking *t = state_of(c);
    if (t && t->on)
        on_count(c, -1);
    if (t)
        t->on = t->optin = t->optout = t->noloop = t->caching = 0;
}

/* The client goes: its state stays as long as the table lists it. */
static void tracking_gone(struct client *c)
{
    struct tracking *t = state_of(c);
    if (!t)
        return;
    tracking_off(c);
    TAILQ_REMOVE(&tracking_worker_of(c->worker)->clients, t, link);
    client_family_set(c, client_id_of, NULL);
    t->client = NULL;
    reader_drop(t);
}

void tracking_reset(struct client *c)
{
    tracking_off(c);
}

/* Whether the proxy has a client whose CLIENT ID is id, on any worker. */
static int client_exists(struct proxy *p, long long id)
{
    int found = 0;
    for (int i = 0; i < p->nworkers && !found; i++) {
        struct worker *w = &p->workers[i];
        struct client *c;
        pthread_mutex_lock(&w->clients_lock);
        TAILQ_FOREACH(c, &w->clients, link)
            if ((long long)c->id == id && c->state != CLIENT_GONE) {
                found = 1;
                break;
            }
        pthread_mutex_unlock(&w->clients_lock);
    }
    return found;
}

/* One prefix is a prefix of the other (Redis's stringCheckPrefix). */
static int prefixes_overlap(const char *a, size_t alen, const char *b, size_t blen)
{
    return memcmp(a, b, alen < blen ? alen : blen) == 0;
}

/* The PREFIX arguments of r (their indexes in at, n of them) overlap: 0,
 * or -1 with Redis's error. */
static int prefixes_check(struct request *r, const int *at, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t alen, blen;
            const char *a = request_arg(r, at[i], &alen), *b = request_arg(r, at[j], &blen);
            if (!prefixes_overlap(a, alen, b, blen))
                continue;
            char msg[600];
            snprintf(msg, sizeof msg, "ERR Prefix '%.*s' overlaps with another provided prefix "
                     "'%.*s'. Prefixes for a single client must not overlap.",
                     (int)(alen < 256 ? alen : 256), a, (int)(blen < 256 ? blen : 256), b);
            request_fail(r, msg);
            return -1;
        }
    return 0;
}

/* REDIRECT's argument i: 0, or -1 with r answered as Redis answers it. */
static int redirect_check(struct request *r, int i, long long *redir)
{
    if (*redir != 0) {
        request_fail(r, "ERR A client can only redirect to a single other client");
        return -1;
    }
    if (request_arg_ll(r, i, redir) < 0) {
        request_fail(r, "ERR value is not an integer or out of range");
        return -1;
    }
    if (!client_exists(r->worker->proxy, *redir)) {
        request_fail(r, "ERR The client ID you want redirect to does not exist");
        return -1;
    }
    return 0;
}

/* CLIENT TRACKING's options, from argument 3 on, read as Redis reads them:
 * 0, or -1 with r answered. */
static int options_parse(struct request *r, unsigned *options, int *prefix_at, int *nprefix)
{
    long long redir = 0;
    for (int j = 3; j < r->argc; j++) {
        int more = r->argc - 1 - j > 0;
        if (more && request_arg_is(r, j, "redirect")) {
            if (redirect_check(r, ++j, &redir) < 0)
                return -1;
            *options |= TRACK_REDIRECT;
        } else if (request_arg_is(r, j, "bcast")) {
            *options |= TRACK_BCAST;
        } else if (request_arg_is(r, j, "optin")) {
            *options |= TRACK_OPTIN;
        } else if (request_arg_is(r, j, "optout")) {
            *options |= TRACK_OPTOUT;
        } else if (request_arg_is(r, j, "noloop")) {
            *options |= TRACK_NOLOOP;
        } else if (more && request_arg_is(r, j, "prefix")) {
            if (*nprefix == TRACKING_PREFIXES_MAX) {    /* (at holds as many) */
                request_fail(r, "ERR too many prefixes: the proxy takes at most 1024");
                return -1;
            }
            prefix_at[(*nprefix)++] = ++j;
        } else {
            request_fail(r, "ERR syntax error");
            return -1;
        }
    }
    return 0;
}

/* The checks of CLIENT TRACKING ON, in Redis's order: 0, or -1 with r
 * answered. */
static int on_check(struct request *r, unsigned options, const int *prefix_at, int nprefix)
{
    const struct tracking *t = tracking_of(r->client);
    const char *why = NULL;
    if (!(options & TRACK_BCAST) && nprefix)
        why = "ERR PREFIX option requires BCAST mode to be enabled";
    else if (t && (options & TRACK_BCAST))     /* it is on, never in BCAST mode here */
        why = "ERR You can't switch BCAST mode on/off before disabling tracking for this "
              "client, and then re-enabling it with a different mode.";
    else if ((options & TRACK_BCAST) && (options & (TRACK_OPTIN | TRACK_OPTOUT)))
        why = "ERR OPTIN and OPTOUT are not compatible with BCAST";
    else if ((options & TRACK_OPTIN) && (options & TRACK_OPTOUT))
        why = "ERR You can't specify both OPTIN mode and OPTOUT mode";
    else if (t && (((options & TRACK_OPTIN) && t->optout) || ((options & TRACK_OPTOUT) && t->optin)))
        why = "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this "
              "client, and then re-enabling it with a different mode.";
    if (why) {
        request_fail(r, why);
        return -1;
    }
    return (options & TRACK_BCAST) ? prefixes_check(r, prefix_at, nprefix) : 0;
}

/* ON once its options passed Redis's checks: BCAST and REDIRECT are not
 * served yet, and say so. */
static void turn_on(struct request *r, unsigned options)
{
    if (options & (TRACK_BCAST | TRACK_REDIRECT)) {
        request_fail(r, (options & TRACK_BCAST)
                            ? "ERR CLIENT TRACKING BCAST is not supported through the proxy "
                              "yet: it cannot send the broadcast invalidations"
                            : "ERR CLIENT TRACKING REDIRECT is not supported through the proxy "
                              "yet: it cannot send the invalidations to another client");
        return;
    }
    if (tracking_on(r->client, options) < 0) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    resp_add_simple(request_out(r), "OK");
    request_finish(r);
}

/*
 * CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN]
 * [OPTOUT] [NOLOOP]. The prefixes' indexes live on the heap: their number
 * is the client's to choose, up to TRACKING_PREFIXES_MAX.
 */
static void cmd_tracking(struct request *r)
{
    unsigned options = 0;
    int nprefix = 0, cap = r->argc < TRACKING_PREFIXES_MAX ? r->argc : TRACKING_PREFIXES_MAX;
    int *at = malloc(sizeof *at * (size_t)cap);
    if (!at) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    if (options_parse(r, &options, at, &nprefix) < 0) {
        free(at);
        return;
    }
    if (request_arg_is(r, 2, "on")) {
        if (on_check(r, options, at, nprefix) == 0)
            turn_on(r, options);
    } else if (request_arg_is(r, 2, "off")) {
        tracking_off(r->client);
        resp_add_simple(request_out(r), "OK");
        request_finish(r);
    } else {
        request_fail(r, "ERR syntax error");
    }
    free(at);
}

/* CLIENT CACHING YES|NO: the next command's (or transaction's) reads are
 * tracked in OPTIN mode, or not in OPTOUT mode. */
static void cmd_caching(struct request *r)
{
    struct tracking *t = tracking_of(r->client);
    int yes = request_arg_is(r, 2, "yes");
    if (!t) {
        request_fail(r, "ERR CLIENT CACHING can be called only when the client is in tracking "
                        "mode with OPTIN or OPTOUT mode enabled");
    } else if (!yes && !request_arg_is(r, 2, "no")) {
        request_fail(r, "ERR syntax error");
    } else if (yes ? !t->optin : !t->optout) {
        request_fail(r, yes ? "ERR CLIENT CACHING YES is only valid when tracking is enabled in "
                              "OPTIN mode."
                            : "ERR CLIENT CACHING NO is only valid when tracking is enabled in "
                              "OPTOUT mode.");
    } else {
        t->caching = 1;
        resp_add_simple(request_out(r), "OK");
        request_finish(r);
    }
}

/* No REDIRECT is served yet: 0 while on. */
static void cmd_getredir(struct request *r)
{
    resp_add_integer(request_out(r), tracking_of(r->client) ? 0 : -1);
    request_finish(r);
}

/* TRACKINGINFO: flags, redirect, prefixes, as Redis writes them. */
static void cmd_trackinginfo(struct request *r)
{
    const struct tracking *t = tracking_of(r->client);
    struct evbuffer *out = request_out(r);
    const char *flags[4];
    int n = 0;
    flags[n++] = t ? "on" : "off";
    if (t && t->optin)
        flags[n++] = "optin";
    if (t && t->optin && t->caching)
        flags[n++] = "caching-yes";
    if (t && t->optout)
        flags[n++] = "optout";
    if (t && t->optout && t->caching)
        flags[n++] = "caching-no";
    if (t && t->noloop && n < 4)
        flags[n++] = "noloop";
    resp_add_map(out, request_resp(r), 3);
    resp_add_bulk_str(out, "flags");
    resp_add_set(out, request_resp(r), n);
    for (int i = 0; i < n; i++)
        resp_add_bulk_str(out, flags[i]);
    resp_add_bulk_str(out, "redirect");
    resp_add_integer(out, t ? 0 : -1);
    resp_add_bulk_str(out, "prefixes");
    resp_add_array(out, 0);
    request_finish(r);
}

/* ---- registration ---- */

/* CLIENT LIST's t flag (under the clients_lock, from any thread). */
static void count(const struct client *c, struct client_counts *n)
{
    const struct tracking *t = state_of(c);
    n->tracking = t && t->on;
}

static const struct client_family tracking_family = {
    .take = note_request,
    .count = count,
    .closing = tracking_gone,
    .freed = tracking_gone,
};

static int worker_init(struct worker *w, void **state)
{
    struct tracking_worker *tw = calloc(1, sizeof *tw);
    if (tw)
        tw->table = track_table_new(&reader_ops);
    if (!tw || !tw->table) {
        free(tw);
        return -1;
    }
    (void)w;
    TAILQ_INIT(&tw->clients);
    *state = tw;
    return 0;
}

static const struct worker_family tracking_worker_family = { .init = worker_init };

static void conn_down(struct worker *w, struct node_conn *c)
{
    if (c->on_push == tracking_push)
        flush_all(w, "a connection that tracked reads closed");
}

/* A new topology: a slot now on another master was read where its new
 * master never saw the reads. */
static void topology_taken(struct worker *w)
{
    struct tracking_worker *tw = tracking_worker_of(w);
    int moved = 0;
    for (int slot = 0; tw && slot < 16384; slot++) {
        int node = w->slot_node[slot];
        const char *addr = node >= 0 && node < w->topo->nnodes ? w->topo->nodes[node].announced : "";
        uint32_t h = hash_fnv32(addr, strlen(addr));
        moved |= tw->owner[slot] != h;
        tw->owner[slot] = h;
    }
    if (moved)
        flush_all(w, "slots moved to other masters");
}

static void layout_taken(struct worker *w)
{
    flush_all(w, "the key layout changed");
}

static void drain_started(struct worker *w)
{
    flush_all(w, "the proxy is draining");
}

static const struct worker_watch tracking_watch = {
    .topology = topology_taken,
    .conn_down = conn_down,
    .layout = layout_taken,
    .drain = drain_started,
};

static const struct route_entry tracking_routes[] = {
    ROUTE_LOCAL("client|tracking", cmd_tracking, TXC_PROXY),
    ROUTE_LOCAL("client|caching", cmd_caching, TXC_PROXY),
    ROUTE_LOCAL("client|getredir", cmd_getredir, TXC_PROXY),
    ROUTE_LOCAL("client|trackinginfo", cmd_trackinginfo, TXC_PROXY),
};

void tracking_register(void)
{
    route_register(tracking_routes, (int)(sizeof tracking_routes / sizeof tracking_routes[0]));
    client_id_of = client_family_register(&tracking_family);
    worker_id_of = worker_family_register(&tracking_worker_family);
    worker_register_watch(&tracking_watch);
    router_register_sending(sending);
    track_mark = request_mark_register();
    client_cmd = command_lookup("client", 6);
    multi_cmd = command_lookup("multi", 5);
    exec_cmd = command_lookup("exec", 4);
    discard_cmd = command_lookup("discard", 7);
}
