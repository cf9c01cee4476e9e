/*
 * tracking: client-side caching through the proxy. See tracking.h.
 */
#include "proxy/families/tracking.h"

#include <event2/buffer.h>
#include <stddef.h>
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
#include "proxy/families/trackprefix.h"
#include "proxy/families/trackredir.h"
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

/* A client's tracking, from its first CLIENT TRACKING ON; once its client
 * is gone (client NULL) it waits in its worker's list for the next sweep. */
struct tracking {
    struct client *client;          /* NULL once the client is gone */
    struct track_reader reads;      /* its keys in the worker's table */
    unsigned on : 1;                /* as Redis, the keys it read stay listed while
                                       it is off, and count again once it is on */
    unsigned optin : 1, optout : 1, noloop : 1;
    unsigned caching : 1;           /* CLIENT CACHING YES (OPTIN) or NO (OPTOUT) for
                                       the next command or transaction */
    unsigned broken : 1;            /* its redirect's client is gone */
    unsigned bcast : 1;             /* BCAST: told of every key of its prefixes */
    unsigned flush_due : 1;         /* to be told of the flush under way */
    struct track_prefixes prefixes; /* in BCAST mode ("" when it gave none) */
    struct evbuffer *multi_reads;   /* the keys its reads queued in MULTI read, each
                                       a uint32_t length and its bytes (NULL: none) */
    unsigned multi_lost : 1;        /* some were left out (out of memory) */
    uint64_t redirect;              /* the client its invalidations go to; 0: itself */
    int redirect_worker;            /* that client's worker */
    TAILQ_ENTRY(tracking) link;     /* in its worker's list */
};

/* A node connection of a worker's that tracks reads: a shared RESP3 one
 * (id -1 once the node refused), or a shared RESP2 one whose invalidations
 * go to the RESP3 one of its master (the CLIENT ID it redirects to, 0 not
 * yet; -1: the node refused). */
struct track_conn {
    struct node_conn *conn;
    long long id;
    unsigned bcast : 1;             /* RESP3: asked to track in BCAST mode (every key) */
    unsigned bcast_on : 1;          /* and the node answered it does */
};

/* A tracked read sent this round, for the table at the round's end (its
 * key's bytes in the worker's pending_keys). */
struct pending_read {
    struct tracking *t;
    const struct node_conn *conn;
    uint64_t pos;
    size_t at, len;
    uint32_t hash;                  /* the key's (hash_fnv32) */
    enum track_how how;             /* how the node tracks its key */
};

/* A worker's tracking clients and the keys they read. */
struct tracking_worker {
    struct worker *w;
    struct track_table *table;
    /* the reads sent this round: they enter the table once the round's
     * writes are out (round_end), or before anything else uses it */
    struct pending_read *pending;
    size_t npending, cappending;
    char *pending_keys;
    size_t keys_used, keys_cap;
    TAILQ_HEAD(, tracking) clients;
    int ngone;                      /* of them, whose clients are gone: to sweep */
    /* for INFO on any thread (relaxed atomics): clients with tracking on,
     * the table's keys and readers */
    long long on, keys, items, prefixes, bytes;
    int nbcast;                     /* its clients in BCAST mode */
    int in_table;                   /* inside a table call that tells clients: a flush
                                       that telling brings about waits for its end */
    int flush_deferred;             /* 1 + the cause of that flush, or 0 */
    struct track_conn *conns;
    int nconns, capconns;
    uint32_t owner[16384];          /* each slot's master (its address's hash), to
                                       see a topology that moves a slot */
};

static int client_id_of = -1, worker_id_of = -1;
static unsigned char track_mark;    /* a read whose keys the node tracks for its client */
static unsigned char caching_mark;  /* a read (or part) that went right after CLIENT
                                       CACHING YES: its reply says whether the node
                                       tracks its keys (track_table_node_tracks) */
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
    __atomic_store_n(&tw->bytes, (long long)track_table_bytes(tw->table), __ATOMIC_RELAXED);
}

static void on_count(struct client *c, int delta)
{
    __atomic_add_fetch(&tracking_worker_of(c->worker)->on, delta, __ATOMIC_RELAXED);
}

void tracking_totals(const struct proxy *p, struct tracking_totals *out)
{
    *out = (struct tracking_totals){ 0 };
    for (int i = 0; i < p->nworkers; i++) {
        const struct tracking_worker *tw = tracking_worker_of(&p->workers[i]);
        if (!tw)
            continue;
        out->clients += __atomic_load_n(&tw->on, __ATOMIC_RELAXED);
        out->keys += __atomic_load_n(&tw->keys, __ATOMIC_RELAXED);
        out->items += __atomic_load_n(&tw->items, __ATOMIC_RELAXED);
        out->prefixes += __atomic_load_n(&tw->prefixes, __ATOMIC_RELAXED);
        out->bytes += __atomic_load_n(&tw->bytes, __ATOMIC_RELAXED);
    }
}

static struct tracking *tracking_of_reader(struct track_reader *reader)
{
    return (struct tracking *)((char *)reader - offsetof(struct tracking, reads));
}

/* The entries of gone clients a sweep forgets at most, so that a client
 * that read many keys goes over several rounds. */
#define SWEEP_ENTRIES 8192

/* A pending read's stages of track_table_prefetch run this many reads
 * apart, the last that many before its add: about as many misses in
 * flight as a core has line-fill buffers. */
#define PREFETCH_STAGES 3
#define PREFETCH_AHEAD 8

/* The pending reads (a round's) and key bytes whose room a worker keeps
 * past the round. */
#define PENDING_KEEP 4096
#define PENDING_KEYS_KEEP (1u << 20)

static void pending_run(struct tracking_worker *tw);

/* The trackings of clients that are gone leave the table (up to
 * SWEEP_ENTRIES entries), then the list, and are freed. Only at a round's
 * end: telling a client may close another (its output over the limit), so
 * a list being walked to tell its clients loses none of them meanwhile. */
static void sweep(struct tracking_worker *tw)
{
    struct tracking *t, *next;
    size_t budget = SWEEP_ENTRIES;
    if (tw->ngone == 0)
        return;
    pending_run(tw);
    for (t = TAILQ_FIRST(&tw->clients); t && budget > 0; t = next) {
        next = TAILQ_NEXT(t, link);
        if (t->client)
            continue;
        budget -= track_table_forget_reader(tw->table, &t->reads, budget);
        if (t->reads.nkeys > 0)
            break;
        TAILQ_REMOVE(&tw->clients, t, link);
        track_prefixes_clear(&t->prefixes);
        if (t->multi_reads)
            evbuffer_free(t->multi_reads);
        free(t);
        tw->ngone--;
    }
    counts_publish(tw);
}

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

/* t's client is told to forget keys[0..len) (nkeys names in a RESP array,
 * or a null: every key): in a push to itself in RESP3 (RESP2 has no
 * pushes: Redis sends such a client nothing), or in a message to the
 * client it redirects to; ordered: ahead of the replies no node has begun
 * (track_notify_fn), else after the reply of everything of its a node
 * was sent (client_push_after_sent), ready or not. tell: of
 * key[0..len), its own name for it (NULL: every key). */
static void tell_keys(struct worker *w, struct tracking *t, const char *keys, size_t len,
                      int nkeys, int ordered)
{
    struct client *c = t->on ? t->client : NULL;
    if (!c)
        return;
    if (t->redirect) {
        trackredir_send(w, c->id, t->redirect, t->redirect_worker, keys, len);
    } else if (c->resp == RESP3) {
        struct evbuffer *b = evbuffer_new();
        if (!b)
            return;
        resp_add_push(b, RESP3, 2);
        resp_add_bulk(b, "invalidate", 10);
        evbuffer_add(b, keys, len);
        struct reply_view v = { b, NULL, evbuffer_get_length(b) };
        if (ordered)
            client_push_ahead(c, &v);
        else
            client_push_after_sent(c, &v, track_mark);
        evbuffer_free(b);
    } else {
        return;
    }
    stat_add(&w->stats.tracking_invalidations, (uint64_t)nkeys);
}

static void tell(struct worker *w, struct tracking *t, const char *key, size_t len,
                 int ordered)
{
    char buf[600];
    if (!key) {         /* the null of the tracking client's protocol, as Redis writes it */
        int resp3 = t->client && t->client->resp == RESP3;
        tell_keys(w, t, resp3 ? "_\r\n" : "$-1\r\n", resp3 ? 3 : 5, 0, 0);
        return;
    }
    int head = snprintf(buf, sizeof buf, "*1\r\n$%zu\r\n", len);
    if (len + (size_t)head + 2 <= sizeof buf) {
        memcpy(buf + head, key, len);
        memcpy(buf + head + len, "\r\n", 2);
        tell_keys(w, t, buf, (size_t)head + len + 2, 1, ordered);
        return;
    }
    struct evbuffer *b = evbuffer_new();
    if (!b)
        return;
    resp_add_array(b, 1);
    resp_add_bulk(b, key, len);
    size_t n = evbuffer_get_length(b);
    const char *p = (const char *)evbuffer_pullup(b, -1);
    if (p)
        tell_keys(w, t, p, n, 1, ordered);
    evbuffer_free(b);
}

/* The table let go of reader t for key (the cluster's name): its client
 * is told, with its own name for it. */
static void notify(struct track_reader *reader, const char *key, size_t len, int ordered,
                   void *arg)
{
    struct worker *w = arg;
    char buf[512], *heap;
    size_t n;
    const char *name = client_name(w, key, len, buf, sizeof buf, &heap, &n);
    tell(w, tracking_of_reader(reader), name ? name : key, name ? n : len, ordered);
    free(heap);
}

static void flush_all(struct worker *w, enum stats_tracking_flush cause);

/* A table call that tells clients (in_table) ends: the flush that telling
 * brought about (a client closed past its output limit that was the last
 * in BCAST mode, out of memory), if any, runs now, on a table no longer in
 * use. */
static void table_left(struct tracking_worker *tw)
{
    if (--tw->in_table == 0 && tw->flush_deferred) {
        enum stats_tracking_flush cause = (enum stats_tracking_flush)(tw->flush_deferred - 1);
        tw->flush_deferred = 0;
        flush_all(tw->w, cause);
    }
}

/* A flush for cause waits for the table call under way; a mode switch's
 * (which spares clients with nothing listed) gives way to any other. */
static void flush_defer(struct tracking_worker *tw, enum stats_tracking_flush cause)
{
    if (!tw->flush_deferred || tw->flush_deferred - 1 == TRACKING_FLUSH_MODE)
        tw->flush_deferred = 1 + (int)cause;
}

/* The reads sent since the last time enter the table; a read it has no room
 * for (out of memory) has its client told to forget everything, after the
 * replies it is owed. */
static void pending_run(struct tracking_worker *tw)
{
    struct worker *w = tw->w;
    if (tw->npending == 0)
        return;
    tw->in_table++;
    for (size_t at = 0; at < tw->npending + PREFETCH_STAGES * PREFETCH_AHEAD; at++) {
        for (int stage = 0; stage < PREFETCH_STAGES; stage++) {
            size_t j = at - (size_t)stage * PREFETCH_AHEAD;
            if (at >= (size_t)stage * PREFETCH_AHEAD && j < tw->npending)
                track_table_prefetch(tw->table, tw->pending[j].hash, &tw->pending[j].t->reads,
                                     stage);
        }
        if (at < PREFETCH_STAGES * PREFETCH_AHEAD)
            continue;
        size_t i = at - PREFETCH_STAGES * PREFETCH_AHEAD;
        const struct pending_read *p = &tw->pending[i];
        const char *key = tw->pending_keys + p->at;
        int rc = track_table_add(tw->table, key, p->len, p->hash, &p->t->reads, p->conn, p->pos,
                                 p->how, w->cfg->tracking_table_max_keys, notify, w);
        if (rc < 0)
            tell(w, p->t, NULL, 0, 0);
        else if (rc > 0)        /* sent untracked after all: not cached past its reply */
            notify(&p->t->reads, key, p->len, 0, w);
    }
    tw->npending = 0;
    tw->keys_used = 0;
    table_left(tw);
    if (tw->cappending > PENDING_KEEP || tw->keys_cap > PENDING_KEYS_KEEP) {
        /* after a burst, the usual size again */
        free(tw->pending);
        free(tw->pending_keys);
        tw->pending = NULL;
        tw->pending_keys = NULL;
        tw->cappending = tw->keys_cap = 0;
    }
    counts_publish(tw);
}

/* s[0..len) after the *used bytes at *buf (room for *cap, grown as
 * needed): 0, or -1 out of memory. */
static int bytes_append(char **buf, size_t *used, size_t *cap, const char *s, size_t len)
{
    if (len > *cap - *used) {
        size_t more_cap = (*used + len) * 2;
        char *more = realloc(*buf, more_cap);
        if (!more)
            return -1;
        *buf = more;
        *cap = more_cap;
    }
    memcpy(*buf + *used, s, len);
    *used += len;
    return 0;
}

/* A read of key[0..len) by t, sent on conn as its pos-th request, for the
 * table at the round's end: 0, or -1 out of memory. */
static int pending_add(struct tracking_worker *tw, struct tracking *t,
                       const struct node_conn *conn, uint64_t pos, const char *key, size_t len)
{
    if (tw->npending == tw->cappending) {
        size_t cap = tw->cappending ? tw->cappending * 2 : 256;
        struct pending_read *more = realloc(tw->pending, sizeof *more * cap);
        if (!more)
            return -1;
        tw->pending = more;
        tw->cappending = cap;
    }
    size_t at = tw->keys_used;
    if (bytes_append(&tw->pending_keys, &tw->keys_used, &tw->keys_cap, key, len) < 0)
        return -1;
    tw->pending[tw->npending++] = (struct pending_read){ t, conn, pos, at, len,
                                                        hash_fnv32(key, len), TRACK_CACHING };
    return 0;
}

/* The client `redirect` that tracking client `from` of w redirects to is
 * gone (trackredir.h): as Redis, the redirect is broken, and the client is
 * told so in RESP3 (in place of each invalidation). */
static void redirect_broken(struct worker *w, uint64_t from, uint64_t redirect)
{
    static const char broken[] = ">2\r\n$21\r\ntracking-redir-broken\r\n";
    struct tracking_worker *tw = tracking_worker_of(w);
    struct tracking *t;
    TAILQ_FOREACH(t, &tw->clients, link) {
        struct client *c = t->client;
        if (!c || c->id != from || !t->on || t->redirect != redirect)
            continue;
        t->broken = 1;
        if (c->resp != RESP3)
            return;
        struct evbuffer *b = evbuffer_new();
        if (!b)
            return;
        evbuffer_add(b, broken, sizeof broken - 1);
        resp_add_integer(b, (long long)redirect);
        struct reply_view v = { b, NULL, evbuffer_get_length(b) };
        client_push(c, &v, 0);
        evbuffer_free(b);
        return;
    }
}

/* Why a flush-all, for the log (by enum stats_tracking_flush). */
static const char *const flush_why[TRACKING_FLUSH_CAUSES] = {
    "a connection that tracked reads closed", "slots moved to other masters",
    "the key layout changed", "the proxy is draining", "a master flushed its keys",
    "a node refused to track", "a connection left BCAST mode",
};

/* Every tracking client of w forgets its whole cache (a null key), and the
 * table forgets every read: the proxy can no longer promise an
 * invalidation for them (cause: why, counted and logged). Leaving BCAST
 * mode concerns only the reads in the table: the clients without any are
 * not told. */
static void flush_all(struct worker *w, enum stats_tracking_flush cause)
{
    struct tracking_worker *tw = tracking_worker_of(w);
    struct tracking *t;
    if (!tw)
        return;
    if (tw->in_table) {     /* a client told from inside the table brought it about */
        flush_defer(tw, cause);
        return;
    }
    /* their reads were sent before the flush's cause; a flush their
     * telling brings about is this one */
    tw->in_table++;
    pending_run(tw);
    tw->in_table--;
    if (tw->flush_deferred) {
        if (cause == TRACKING_FLUSH_MODE)
            cause = (enum stats_tracking_flush)(tw->flush_deferred - 1);
        tw->flush_deferred = 0;
    }
    TAILQ_FOREACH(t, &tw->clients, link)
        t->flush_due = cause != TRACKING_FLUSH_MODE || t->reads.listed > 0;
    track_table_clear(tw->table);
    counts_publish(tw);
    if (TAILQ_EMPTY(&tw->clients))
        return;
    stat_inc(&w->stats.tracking_flushes[cause]);
    log_verbose("tracking", "worker %d: every tracking client's cache invalidated: %s",
                w->id, flush_why[cause]);
    TAILQ_FOREACH(t, &tw->clients, link)
        if (t->flush_due)
            tell(w, t, NULL, 0, 0);
}

/* ---- the node connections that track ---- */

static void tracking_push(struct node_conn *c, const struct reply_view *v,
                          const struct reply_scanner *s, void *arg);

/* c's entry among w's tracking connections; made when make (NULL when out
 * of memory or, without make, when it has none). */
static struct track_conn *conn_entry(struct tracking_worker *tw, const struct node_conn *c,
                                     int make)
{
    for (int i = 0; i < tw->nconns; i++)
        if (tw->conns[i].conn == c)
            return &tw->conns[i];
    if (!make)
        return NULL;
    if (tw->nconns == tw->capconns) {
        int cap = tw->capconns ? tw->capconns * 2 : 8;
        struct track_conn *more = realloc(tw->conns, sizeof *more * (size_t)cap);
        if (!more)
            return NULL;
        tw->conns = more;
        tw->capconns = cap;
    }
    tw->conns[tw->nconns] = (struct track_conn){ .conn = (struct node_conn *)c };
    return &tw->conns[tw->nconns++];
}

/* A shared connection whose CLIENT TRACKING ON the node refused: its pushes
 * are dropped. */
static void tracking_refused(struct node_conn *c, const struct reply_view *v,
                             const struct reply_scanner *s, void *arg)
{
    (void)c;
    (void)s;
    (void)arg;
    reply_view_drop(v);
}

/* What the proxy sends a tracking connection for itself: CLIENT TRACKING
 * ON, CLIENT ID, a marker. */
struct tracking_req {
    struct node_req nreq;
    struct worker *w;
    int what;
};

enum { REQ_ON, REQ_MODE, REQ_FLUSH_CONNECTION, REQ_FLUSH_REFUSED, REQ_FLUSH_MODE };

static void flush_after(struct worker *w, struct node_conn *c, int what);

static void tracking_req_reply(struct node_req *nr, const struct reply_view *v,
                               const struct reply_scanner *s)
{
    struct tracking_req *req = (struct tracking_req *)nr;
    struct node_conn *c = nr->conn;
    struct tracking_worker *tw = tracking_worker_of(req->w);
    struct track_conn *e = conn_entry(tw, c, 0);
    static const char switched[] = "*2\r\n+OK\r\n+OK\r\n";
    const char *b = reply_view_head(v, v->len);
    int ok = req->what == REQ_ON ? s->type == '+'
           : req->what == REQ_MODE ? b && v->len == sizeof switched - 1 &&
                                     memcmp(b, switched, v->len) == 0
           : 1;
    if (!ok) {
        /* the reads sent behind it were not tracked: their clients forget
         * everything once those are answered */
        log_warning("tracking", "node %s refused CLIENT TRACKING ON (%s): client-side "
                    "caching reads on it are invalidated as they are answered", c->addr,
                    s->type == '-' ? s->errline : "not as asked");
        if (c->on_push == tracking_push)
            c->on_push = tracking_refused;
        if (e)
            e->id = -1;
        flush_after(req->w, c, REQ_FLUSH_REFUSED);
    } else if ((req->what == REQ_ON || req->what == REQ_MODE) && e) {
        e->bcast_on = e->bcast;
    } else if (req->what == REQ_FLUSH_MODE) {
        flush_all(req->w, TRACKING_FLUSH_MODE);
    } else if (req->what == REQ_FLUSH_CONNECTION) {
        flush_all(req->w, TRACKING_FLUSH_CONNECTION);
    } else if (req->what == REQ_FLUSH_REFUSED) {
        flush_all(req->w, TRACKING_FLUSH_REFUSED);
    }
    reply_view_drop(v);
    free(req);
}

static void tracking_req_fail(struct node_req *nr, int may_have_run, const char *why)
{
    (void)may_have_run;
    (void)why;
    free(nr);           /* the connection is gone: conn_down flushes */
}

/* A request of the proxy's own (what: REQ_*), or NULL out of memory. */
static struct tracking_req *tracking_req_new(struct worker *w, int what)
{
    struct tracking_req *req = calloc(1, sizeof *req);
    if (!req)
        return NULL;
    req->w = w;
    req->what = what;
    req->nreq.on_reply = tracking_req_reply;
    req->nreq.on_fail = tracking_req_fail;
    return req;
}

/* The command at bytes on c, for the proxy (what: REQ_*): 0, or -1 out of
 * memory. */
static int tracking_req(struct worker *w, struct node_conn *c, int what, const char *bytes,
                        size_t len)
{
    struct tracking_req *req = tracking_req_new(w, what);
    if (!req)
        return -1;
    node_send(c, &req->nreq, bytes, len);
    return 0;
}

/* Every tracking client of w forgets everything once c has answered what
 * was sent on it so far (a read whose reply is on its way there was not
 * tracked): a PING behind them. */
static void flush_after(struct worker *w, struct node_conn *c, int what)
{
    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    if (tracking_req(w, c, what, ping, sizeof ping - 1) < 0)
        flush_all(w, what == REQ_FLUSH_REFUSED ? TRACKING_FLUSH_REFUSED
                     : what == REQ_FLUSH_MODE ? TRACKING_FLUSH_MODE : TRACKING_FLUSH_CONNECTION);
}

#define TRACKING_ON_OPTIN "*4\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\nON\r\n$5\r\nOPTIN\r\n"
#define TRACKING_ON_BCAST "*4\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\nON\r\n$5\r\nBCAST\r\n"

/* Whether w's RESP3 tracking connections track every key (BCAST): while a
 * client of w is in BCAST mode, or as the config says
 * (tracking-node-bcast); else the reads behind CLIENT CACHING YES. */
static int node_bcast(const struct worker *w)
{
    return tracking_worker_of(w)->nbcast > 0 || w->cfg->tracking_node_bcast;
}

/* c, a shared RESP3 connection of w's, tracks the keys of the reads that
 * follow CLIENT CACHING YES on it (OPTIN), or every key (BCAST:
 * node_bcast), and pushes their invalidations (and
 * those of the RESP2 connections that redirect to it, for which its
 * CLIENT ID is asked): 0, or -1 when it cannot (refused, out of memory). */
static int tracking_enable(struct worker *w, struct node_conn *c)
{
    static const char optin[] = TRACKING_ON_OPTIN, bcast[] = TRACKING_ON_BCAST;
    struct tracking_worker *tw = tracking_worker_of(w);
    if (c->on_push == tracking_push)
        return 0;
    if (c->on_push)
        return -1;
    struct track_conn *e = conn_entry(tw, c, 1);
    if (!e)
        return -1;
    e->bcast = node_bcast(w);
    if (tracking_req(w, c, REQ_ON, e->bcast ? bcast : optin,
                     e->bcast ? sizeof bcast - 1 : sizeof optin - 1) < 0)
        return -1;
    c->on_push = tracking_push;
    c->push_arg = w;
    c->push_max = 0;
    node_conn_ask_id(c);
    return 0;
}

/* c (a RESP3 tracking connection, e its entry) tracks in BCAST mode when
 * node_bcast says, else in OPTIN mode: switched in a
 * transaction, so that no write runs between OFF and ON. Leaving BCAST,
 * the node forgets the reads it did not need CLIENT CACHING YES for:
 * every cache is flushed once those are answered. */
static void mode_follow(struct worker *w, struct node_conn *c, struct track_conn *e)
{
    static const char multi[] = "*1\r\n$5\r\nMULTI\r\n", exec[] = "*1\r\n$4\r\nEXEC\r\n";
    static const char off[] = "*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$3\r\nOFF\r\n";
    static const char optin[] = TRACKING_ON_OPTIN, bcast[] = TRACKING_ON_BCAST;
    int want = node_bcast(w);
    if (!e || e->bcast == want || c->on_push != tracking_push)
        return;
    /* EXEC's request first: out of memory, nothing goes (a MULTI left
     * without its EXEC would queue what follows); the next read tries again */
    struct tracking_req *req = tracking_req_new(w, REQ_MODE);
    if (!req)
        return;
    node_send_prefix(c, multi, sizeof multi - 1);
    node_send_prefix(c, off, sizeof off - 1);
    node_send_prefix(c, want ? bcast : optin, want ? sizeof bcast - 1 : sizeof optin - 1);
    node_send(c, &req->nreq, exec, sizeof exec - 1);
    e->bcast = want;
    e->bcast_on = 0;
    if (!want)
        flush_after(w, c, REQ_FLUSH_MODE);
}

/* Every RESP3 tracking connection of w follows its clients' mode (its
 * last client in BCAST mode left, or a first came); with a client in BCAST
 * mode, every master's tracks for w, so that each write reaches it (made
 * now, where w has no connection to a master yet). */
static void modes_follow(struct worker *w)
{
    struct tracking_worker *tw = tracking_worker_of(w);
    for (int node = 0; tw->nbcast > 0 && node < w->topo->nnodes; node++) {
        struct node_conn *c = worker_conn(w, node, RESP3);
        if (c)
            tracking_enable(w, c);
    }
    for (int i = 0; i < tw->nconns; i++)
        mode_follow(w, tw->conns[i].conn, &tw->conns[i]);
}

/* c2, a shared RESP2 connection of w's to master `node`, tracks the reads
 * that follow CLIENT CACHING YES on it, their invalidations sent to the
 * worker's RESP3 connection to that master (for bcast: which the node
 * answered it tracks every key): 0, or -1 when it cannot yet (that
 * connection's id not known) or at all. */
static int redirect_enable(struct worker *w, struct node_conn *c2, int node, int bcast)
{
    struct tracking_worker *tw = tracking_worker_of(w);
    struct node_conn *c3 = worker_conn(w, node, RESP3);
    if (!c3 || tracking_enable(w, c3) < 0)
        return -1;
    struct track_conn *e3 = conn_entry(tw, c3, 0);
    mode_follow(w, c3, e3);
    long long to = __atomic_load_n(&c3->node_id, __ATOMIC_RELAXED);
    if (!e3 || e3->id < 0 || to <= 0 || (bcast && !e3->bcast_on))
        return -1;
    struct track_conn *e2 = conn_entry(tw, c2, 1);
    if (!e2 || e2->id < 0)
        return -1;
    if (e2->id == to)
        return 0;
    char cmd[128];
    char n[24];
    int nlen = snprintf(n, sizeof n, "%lld", to);
    int len = snprintf(cmd, sizeof cmd, "*6\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\nON\r\n"
                       "$8\r\nREDIRECT\r\n$%d\r\n%s\r\n$5\r\nOPTIN\r\n", nlen, n);
    if (tracking_req(w, c2, REQ_ON, cmd, (size_t)len) < 0)
        return -1;
    e2->id = to;
    return 0;
}

/* The names a push's keys have for the clients (a key layout's legacy
 * names), one after the other in a buffer. */
struct push_names {
    char *bytes;
    size_t used, cap;
    size_t *at, *len;
    int n;
};

static int names_add(struct push_names *pn, const char *s, size_t len)
{
    size_t at = pn->used;
    if (bytes_append(&pn->bytes, &pn->used, &pn->cap, s, len) < 0)
        return -1;
    pn->at[pn->n] = at;
    pn->len[pn->n++] = len;
    return 0;
}

/* Each client in BCAST mode, for each of its prefixes that some of the
 * names match, is told of those (as Redis sends each prefix's keys). */
static void bcast_tell(struct worker *w, const struct push_names *pn)
{
    struct tracking_worker *tw = tracking_worker_of(w);
    struct evbuffer *b = evbuffer_new();
    struct tracking *t;
    if (!b)
        return;
    TAILQ_FOREACH(t, &tw->clients, link) {
        for (int p = 0; t->on && t->bcast && p < t->prefixes.n; p++) {
            int count = 0;
            for (int i = 0; i < pn->n; i++)
                count += track_prefix_matches(&t->prefixes.v[p], pn->bytes + pn->at[i], pn->len[i]);
            if (count == 0)
                continue;
            evbuffer_drain(b, evbuffer_get_length(b));
            resp_add_array(b, count);
            for (int i = 0; i < pn->n; i++)
                if (track_prefix_matches(&t->prefixes.v[p], pn->bytes + pn->at[i], pn->len[i]))
                    resp_add_bulk(b, pn->bytes + pn->at[i], pn->len[i]);
            size_t len = evbuffer_get_length(b);
            const char *keys = (const char *)evbuffer_pullup(b, -1);
            if (keys)
                tell_keys(w, t, keys, len, count, 1);
        }
    }
    evbuffer_free(b);
}

/* The keys of a push (its array, kit) to the clients in BCAST mode; out of
 * memory, every key. */
static void bcast_push(struct worker *w, struct reply_iter *kit, size_t bytes)
{
    struct push_names pn = { 0 };
    const char *e;
    size_t el;
    int ok = kit->n >= 0 && (size_t)kit->n <= bytes;    /* each key takes bytes */
    if (ok) {
        pn.at = malloc(sizeof *pn.at * (size_t)(kit->n + 1));
        pn.len = malloc(sizeof *pn.len * (size_t)(kit->n + 1));
        ok = pn.at && pn.len;
    }
    while (ok && reply_iter_next(kit, &e, &el) > 0) {
        struct reply_head h;
        char buf[512], *heap;
        size_t n;
        if (reply_header(e, el, &h) != 0 || h.type != '$' || h.n < 0 || pn.n >= kit->n)
            continue;
        const char *name = client_name(w, e + h.len, (size_t)h.n, buf, sizeof buf, &heap, &n);
        ok = name && names_add(&pn, name, n) == 0;
        free(heap);
    }
    if (ok) {
        bcast_tell(w, &pn);
    } else {
        struct tracking *t;
        TAILQ_FOREACH(t, &tracking_worker_of(w)->clients, link)
            if (t->bcast)
                tell(w, t, NULL, 0, 0);
    }
    free(pn.bytes);
    free(pn.at);
    free(pn.len);
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
    pending_run(tw);
    if (b && reply_iter_of(&it, b, len, '>') == 0 && it.n == 2 &&
        reply_iter_next(&it, &e, &el) > 0 && el == 17 && memcmp(e, "$10\r\ninvalidate\r\n", 17) == 0 &&
        reply_iter_next(&it, &keys, &el) > 0) {
        if (el == 3 && keys[0] == '_')
            flush_all(w, TRACKING_FLUSH_NODE);
        else if (reply_iter_of(&kit, keys, el, '*') == 0) {
            size_t all = el;
            if (tw->nbcast > 0) {
                struct reply_iter again = kit;
                bcast_push(w, &again, all);
            }
            tw->in_table++;
            while (reply_iter_next(&kit, &e, &el) > 0) {
                struct reply_head h;
                if (reply_header(e, el, &h) == 0 && h.type == '$' && h.n >= 0 &&
                    h.len + (size_t)h.n + 2 == el)
                    track_table_invalidate(tw->table, e + h.len, (size_t)h.n, c, c->nanswered,
                                           notify, w);
            }
            table_left(tw);
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
    return caching && (request_resp(r) == RESP3 || t->redirect) &&
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
    int some[16], *keys, partial;
    int n = request_keys_of(r, cmd, some, &keys, &partial);
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *k = request_arg(r, keys[i], &len);
        fn(r, k, len, arg);
    }
    if (keys != some)
        free(keys);
    return partial ? -1 : 0;
}

/* ---- reads inside MULTI: their keys, tracked as EXEC goes out ---- */

static void multi_forget(struct tracking *t)
{
    if (t->multi_reads)
        evbuffer_drain(t->multi_reads, evbuffer_get_length(t->multi_reads));
    t->multi_lost = 0;
}

static void multi_key(struct request *r, const char *key, size_t len, void *arg)
{
    struct tracking *t = arg;
    uint32_t n = (uint32_t)len;
    (void)r;
    if (len > UINT32_MAX)
        return;
    if (!t->multi_reads)
        t->multi_reads = evbuffer_new();
    if (!t->multi_reads || evbuffer_add(t->multi_reads, &n, sizeof n) < 0 ||
        evbuffer_add(t->multi_reads, key, len) < 0) {
        if (t->multi_reads)             /* a half entry: EXEC invalidates everything */
            evbuffer_free(t->multi_reads);
        t->multi_reads = NULL;
        t->multi_lost = 1;
    }
}

/* Each key read inside the transaction that EXEC runs, to fn: 0, or -1 when
 * they are not all known (out of memory). */
static int multi_each(struct tracking *t, struct request *r,
                      void (*fn)(struct request *r, const char *key, size_t len, void *arg),
                      void *arg)
{
    struct evbuffer *b = t->multi_reads;
    size_t n = b ? evbuffer_get_length(b) : 0, at = 0;
    const char *p = n ? (const char *)evbuffer_pullup(b, -1) : NULL;
    if (t->multi_lost || (n && !p))
        return -1;
    while (at + sizeof(uint32_t) <= n) {
        uint32_t len;
        memcpy(&len, p + at, sizeof len);
        at += sizeof len;
        fn(r, p + at, len, arg);
        at += len;
    }
    return 0;
}

/* r of t's: the keys of a read queued in MULTI are noted; MULTI and
 * DISCARD begin and end a transaction. */
static void multi_note(struct tracking *t, struct request *r)
{
    const struct tx_state *tx = txstate_of(r->client);
    if (r->cmd == multi_cmd || r->cmd == discard_cmd)
        multi_forget(t);
    else if (tx && tx->in_multi && r->cmd != exec_cmd && tracks(t, r) &&
             keys_each(r, multi_key, t) < 0)
        t->multi_lost = 1;
}

/* A client family's take: never takes r, but notes what Redis's tracking
 * would: a read to track (marked, for sending; inside MULTI, its keys for
 * EXEC), the CACHING flag spent. A NOLOOP client's write is not noted: a
 * master's push does not say who wrote, and the write may change nothing
 * (SET NX of a key that exists), after which one server still tracks the
 * key for the client; so the client stays listed, and is told of its own
 * writes too. */
static int note_request(struct request *r, const struct route *rt)
{
    struct tracking *t = tracking_of(r->client);
    (void)rt;
    if (!t)
        return 0;
    multi_note(t, r);
    if (tracks(t, r))
        r->marks |= track_mark;
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

static void tell_key(struct request *r, const char *key, size_t len, void *arg)
{
    struct tracking *t = arg;
    notify(&t->reads, key, len, 0, r->worker);
}

/* The keys r, a read of t's, reads, to fn: a transaction block's (EXEC's),
 * those its queued reads named in MULTI; else its own. 0, or -1 when they
 * are not all known (out of memory). */
static int read_keys_each(struct tracking *t, struct request *r,
                          void (*fn)(struct request *r, const char *key, size_t len, void *arg),
                          void *arg)
{
    return r->block_parts > 0 ? multi_each(t, r, fn, arg) : keys_each(r, fn, arg);
}

/* A read the node does not track for its client t (on another connection,
 * after ASKING, in a transaction, or out of memory): its keys' invalidation
 * right after its reply, so the client caches none of it; a null key when
 * its keys are not known here (EXEC's block). Redirected, at once: the
 * client it goes to has no order with the reply (as with Redis's REDIRECT,
 * where a write right after the read can be told before its reply). */
static void invalidate_after(struct request *top, struct request *r, struct tracking *t)
{
    if (t->redirect) {
        if (read_keys_each(t, r, tell_key, t) < 0)
            tell(r->worker, t, NULL, 0, 0);
        return;
    }
    struct fallback f = { evbuffer_new(), 0 };
    int all = 0;                        /* keys not known: a null key */
    if (!f.out)
        return;
    if (read_keys_each(t, r, fallback_key, &f) < 0) {
        evbuffer_drain(f.out, evbuffer_get_length(f.out));
        all = 1;
    }
    if (all)
        evbuffer_add(f.out, invalidate_null, sizeof invalidate_null - 1);
    if (!all && f.nkeys == 0) {
        evbuffer_free(f.out);
        return;
    }
    struct reply_view v = { f.out, NULL, evbuffer_get_length(f.out) };
    client_push_after(top->client, top, &v);
    stat_add(&r->worker->stats.tracking_invalidations, (uint64_t)f.nkeys);
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
    if (pending_add(tracking_worker_of(r->worker), tr->t, tr->conn, tr->pos, key, len) < 0)
        tr->failed = 1;
}

/* Whether c is one of w's shared connections, and of which protocol
 * (RESP2, RESP3; 0 when not), to master *node. */
static int shared_kind(const struct worker *w, const struct node_conn *c, int *node)
{
    for (int i = 0; i < w->topo->nnodes; i++) {
        *node = i;
        if (w->conns[WORKER_CONN_RESP3][i] == c)
            return RESP3;
        if (w->conns[WORKER_CONN_RESP2][i] == c)
            return RESP2;
    }
    return 0;
}

/* conn's entry, when the node can track r's keys for t there (turned on
 * for conn when it is not yet); else NULL. */
static struct track_conn *trackable(struct tracking *t, struct request *r,
                                    struct node_conn *conn)
{
    struct worker *w = r->worker;
    struct tracking_worker *tw = tracking_worker_of(w);
    struct track_conn *e;
    int node;
    static const char multi[] = "*1\r\n$5\r\nMULTI\r\n";
    /* a transaction block must start with MULTI: CLIENT CACHING YES holds
     * for the next command, or for the transaction it begins */
    if (r->asking || (r->block_parts && (r->len < sizeof multi - 1 ||
                                         memcmp(r->data, multi, sizeof multi - 1) != 0)))
        return NULL;
    switch (shared_kind(w, conn, &node)) {
    case RESP3:
        if (tracking_enable(w, conn) < 0)
            return NULL;
        e = conn_entry(tw, conn, 0);
        mode_follow(w, conn, e);
        return e;
    case RESP2:         /* a RESP2 client's reads, redirected */
        if (!t->redirect || redirect_enable(w, conn, node, t->bcast) < 0)
            return NULL;
        return conn_entry(tw, conn, 0);
    default:
        return NULL;
    }
}

/* Whether r reads no more keys than it names (no script, no transaction),
 * on conn, whose own pushes tell of its keys in order with its replies: a
 * read whose reply says the node tracks its keys, and that needs no CLIENT
 * CACHING YES when it already does. */
static int plain_read(const struct request *r, const struct node_conn *conn)
{
    const struct command *cmd = r->cmd ? r->cmd : r->parent ? r->parent->cmd : NULL;
    return !r->block_parts && cmd && !command_runs_script(cmd) && conn->on_push == tracking_push;
}

/* Whether r, a plain read, needs no CLIENT CACHING YES: the node seems to
 * track already, on conn, every key of it (its reads from the first-th
 * pending one). A push about one of them before r's reply tells its
 * readers again after that reply: r may have run after the write,
 * untracked (track_table_invalidate). */
static int node_seems_to_track(struct tracking_worker *tw, struct request *r,
                               const struct node_conn *conn, size_t first)
{
    if (first == tw->npending || !plain_read(r, conn))
        return 0;
    for (size_t i = first; i < tw->npending; i++)
        if (!track_table_seems_tracked(tw->table, tw->pending[i].hash, conn))
            return 0;
    return 1;
}

/* A marked request (or part) goes out on conn: CLIENT CACHING YES right
 * before it, where the node can track its keys for us (unless it tracks
 * every key, BCAST, or seems to track them already), and its keys for the
 * table, which takes them once the round's writes are out (a client in
 * BCAST mode is told of every key of its prefixes: none); else their
 * invalidation after its reply. */
static void sending(struct request *r, struct node_conn *conn)
{
    static const char caching_yes[] = "*3\r\n$6\r\nCLIENT\r\n$7\r\nCACHING\r\n$3\r\nYES\r\n";
    struct request *top = r->parent ? r->parent : r;
    r->marks &= (unsigned char)~caching_mark;       /* (an earlier send's) */
    struct tracking *t = top->client ? tracking_of(top->client) : NULL;
    if (!t || !(top->marks & track_mark) || top->detached)
        return;     /* (a detached copy runs inside EXEC, which is invalidated whole) */
    struct track_conn *e = trackable(t, r, conn);
    if (!e) {
        invalidate_after(top, r, t);
    } else if (!t->bcast) {
        struct tracking_worker *tw = tracking_worker_of(r->worker);
        size_t first = tw->npending;
        struct tracked_read tr = { t, conn, conn->nsent + 1, 0 };
        if (read_keys_each(t, r, track_key, &tr) < 0 || tr.failed)
            invalidate_after(top, r, t);
        enum track_how how = e->bcast ? TRACK_EVERY_KEY
                           : node_seems_to_track(tw, r, conn, first) ? TRACK_IF_TRACKED
                           : TRACK_CACHING;
        if (how == TRACK_CACHING)
            node_send_prefix(conn, caching_yes, sizeof caching_yes - 1);
        for (size_t i = first; i < tw->npending; i++)
            tw->pending[i].how = how;
        if (how == TRACK_CACHING && plain_read(r, conn))
            r->marks |= caching_mark;
    }
    if (r->block_parts)
        multi_forget(t);
}

static void node_tracks_key(struct request *r, const char *key, size_t len, void *arg)
{
    track_table_node_tracks(tracking_worker_of(r->worker)->table, key, len, hash_fnv32(key, len),
                            arg);
}

/* A read that went right after CLIENT CACHING YES is answered on conn:
 * unless refused (an error), the node tracks its keys there. */
static void read_answered(struct request *r, struct node_conn *conn,
                          const struct reply_scanner *s)
{
    if (!(r->marks & caching_mark))
        return;
    r->marks &= (unsigned char)~caching_mark;
    if (s->type == '-' || s->type == '!')
        return;
    pending_run(tracking_worker_of(r->worker));     /* (its keys first) */
    keys_each(r, node_tracks_key, conn);
}

/* ---- on and off ---- */

/* Where ON's invalidations go: the client redirect (0: itself), on
 * worker. */
struct redirect_to {
    long long id;
    int worker;
};

/* t's prefixes in BCAST mode, n more of them (r's arguments at[]), or ""
 * when none is given, as Redis's enableTracking adds them: 0, or -1 out of
 * memory. */
static int prefixes_add(struct tracking *t, struct request *r, const int *at, int n)
{
    struct tracking_worker *tw = tracking_worker_of(r->worker);
    int before = t->prefixes.n, rc = 0;
    if (n == 0 && !track_prefixes_overlap(&t->prefixes, "", 0))
        rc = track_prefixes_add(&t->prefixes, "", 0);
    for (int i = 0; i < n && rc == 0; i++) {
        size_t len;
        const char *p = request_arg(r, at[i], &len);
        rc = track_prefixes_add(&t->prefixes, p, len);
    }
    __atomic_add_fetch(&tw->prefixes, t->prefixes.n - before, __ATOMIC_RELAXED);
    return rc;
}

static int tracking_on(struct request *r, unsigned options, const struct redirect_to *to,
                       const int *prefix_at, int nprefix)
{
    struct client *c = r->client;
    struct tracking *t = state_of(c);
    if (!t) {
        struct tracking_worker *tw = tracking_worker_of(c->worker);
        if (!tw || !(t = calloc(1, sizeof *t)))
            return -1;
        t->client = c;
        track_reader_init(&t->reads);
        TAILQ_INSERT_TAIL(&tw->clients, t, link);
        client_family_set(c, client_id_of, t);
    }
    if (!t->on)
        on_count(c, 1);
    t->on = 1;
    t->optin = (options & TRACK_OPTIN) != 0;
    t->optout = (options & TRACK_OPTOUT) != 0;
    t->noloop = (options & TRACK_NOLOOP) != 0;
    t->broken = 0;
    t->redirect = (uint64_t)to->id;
    t->redirect_worker = to->worker;
    if (!(options & TRACK_BCAST))
        return 0;
    if (!t->bcast && tracking_worker_of(c->worker)->nbcast++ == 0)
        modes_follow(c->worker);
    t->bcast = 1;
    return prefixes_add(t, r, prefix_at, nprefix);
}

/* Off, as Redis's disableTracking: the modes and CACHING go. */
static void tracking_off(struct client *c)
{
    struct tracking *t = state_of(c);
    if (t && t->on)
        on_count(c, -1);
    if (!t)
        return;
    if (t->bcast) {
        struct tracking_worker *tw = tracking_worker_of(c->worker);
        __atomic_sub_fetch(&tw->prefixes, t->prefixes.n, __ATOMIC_RELAXED);
        track_prefixes_clear(&t->prefixes);
        if (--tw->nbcast == 0)
            modes_follow(c->worker);
    }
    t->on = t->optin = t->optout = t->noloop = t->caching = t->broken = t->bcast = 0;
    t->redirect = 0;
    multi_forget(t);
}

/* The client goes: its state and its keys go at the next sweep. */
static void tracking_gone(struct client *c)
{
    struct tracking *t = state_of(c);
    trackredir_client_gone(c);
    if (!t)
        return;
    tracking_off(c);
    tracking_worker_of(c->worker)->ngone++;
    client_family_set(c, client_id_of, NULL);
    t->client = NULL;
}

void tracking_reset(struct client *c)
{
    tracking_off(c);
}

/* The worker of the proxy's client whose CLIENT ID is id, or -1. */
static int client_worker(struct proxy *p, long long id)
{
    return id > 0 ? client_with_id(p, (uint64_t)id, NULL, NULL) : -1;
}

/* The PREFIX arguments of r (their indexes in at, n of them) overlap one
 * another or one of t's (NULL: none), in Redis's order: 0, or -1 with
 * Redis's error. */
static int prefixes_check(struct request *r, const struct tracking *t, const int *at, int n)
{
    char msg[600];
    for (int i = 0; i < n; i++) {
        size_t alen, blen;
        const char *a = request_arg(r, at[i], &alen), *b;
        const struct track_prefix *had = t ? track_prefixes_overlap(&t->prefixes, a, alen) : NULL;
        if (had) {
            snprintf(msg, sizeof msg, "ERR Prefix '%.*s' overlaps with an existing prefix "
                     "'%.*s'. Prefixes for a single client must not overlap.",
                     (int)(alen < 256 ? alen : 256), a,
                     (int)(had->len < 256 ? had->len : 256), had->s);
            request_fail(r, msg);
            return -1;
        }
        for (int j = i + 1; j < n; j++) {
            b = request_arg(r, at[j], &blen);
            if (!track_prefix_overlaps(a, alen, b, blen))
                continue;
            snprintf(msg, sizeof msg, "ERR Prefix '%.*s' overlaps with another provided prefix "
                     "'%.*s'. Prefixes for a single client must not overlap.",
                     (int)(alen < 256 ? alen : 256), a, (int)(blen < 256 ? blen : 256), b);
            request_fail(r, msg);
            return -1;
        }
    }
    if (t && t->prefixes.n + n > TRACKING_PREFIXES_MAX) {
        request_fail(r, "ERR too many prefixes: the proxy takes at most 1024 per client");
        return -1;
    }
    return 0;
}

/* REDIRECT's argument i: 0, or -1 with r answered as Redis answers it. */
static int redirect_check(struct request *r, int i, struct redirect_to *to)
{
    if (to->id != 0) {
        request_fail(r, "ERR A client can only redirect to a single other client");
        return -1;
    }
    if (request_arg_ll(r, i, &to->id) < 0) {
        request_fail(r, "ERR value is not an integer or out of range");
        return -1;
    }
    if ((to->worker = client_worker(r->worker->proxy, to->id)) < 0) {
        request_fail(r, "ERR The client ID you want redirect to does not exist");
        return -1;
    }
    return 0;
}

/* CLIENT TRACKING's options, from argument 3 on, read as Redis reads them:
 * 0, or -1 with r answered. */
static int options_parse(struct request *r, unsigned *options, struct redirect_to *to,
                         int *prefix_at, int *nprefix)
{
    for (int j = 3; j < r->argc; j++) {
        int more = r->argc - 1 - j > 0;
        if (more && request_arg_is(r, j, "redirect")) {
            if (redirect_check(r, ++j, to) < 0)
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
    else if (t && ((options & TRACK_BCAST) != 0) != t->bcast)
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
    return (options & TRACK_BCAST) ? prefixes_check(r, t, prefix_at, nprefix) : 0;
}

/* ON once its options passed Redis's checks. */
static void turn_on(struct request *r, unsigned options, const struct redirect_to *to,
                    const int *prefix_at, int nprefix)
{
    if (tracking_on(r, options, to, prefix_at, nprefix) < 0) {
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
    struct redirect_to to = { 0, -1 };
    int nprefix = 0, cap = r->argc < TRACKING_PREFIXES_MAX ? r->argc : TRACKING_PREFIXES_MAX;
    int *at = malloc(sizeof *at * (size_t)cap);
    if (!at) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    if (options_parse(r, &options, &to, at, &nprefix) < 0) {
        free(at);
        return;
    }
    if (request_arg_is(r, 2, "on")) {
        if (on_check(r, options, at, nprefix) == 0)
            turn_on(r, options, &to, at, nprefix);
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

/* The client the invalidations go to while on (0: itself), else -1. */
static long long redirect_of(const struct tracking *t)
{
    return t ? (long long)t->redirect : -1;
}

static void cmd_getredir(struct request *r)
{
    resp_add_integer(request_out(r), redirect_of(tracking_of(r->client)));
    request_finish(r);
}

/* TRACKINGINFO: flags, redirect, prefixes, as Redis writes them. */
static void cmd_trackinginfo(struct request *r)
{
    const struct tracking *t = tracking_of(r->client);
    struct evbuffer *out = request_out(r);
    const char *flags[8];
    int n = 0;
    flags[n++] = t ? "on" : "off";
    if (t && t->bcast)
        flags[n++] = "bcast";
    if (t && t->optin)
        flags[n++] = "optin";
    if (t && t->optin && t->caching)
        flags[n++] = "caching-yes";
    if (t && t->optout)
        flags[n++] = "optout";
    if (t && t->optout && t->caching)
        flags[n++] = "caching-no";
    if (t && t->noloop)
        flags[n++] = "noloop";
    if (t && t->broken)
        flags[n++] = "broken_redirect";
    resp_add_map(out, request_resp(r), 3);
    resp_add_bulk_str(out, "flags");
    resp_add_set(out, request_resp(r), n);
    for (int i = 0; i < n; i++)
        resp_add_bulk_str(out, flags[i]);
    resp_add_bulk_str(out, "redirect");
    resp_add_integer(out, redirect_of(t));
    resp_add_bulk_str(out, "prefixes");
    int np = t && t->bcast ? t->prefixes.n : 0;
    resp_add_array(out, np);
    for (int i = 0; i < np; i++)
        resp_add_bulk(out, t->prefixes.v[i].s, t->prefixes.v[i].len);
    request_finish(r);
}

/* ---- registration ---- */

/* CLIENT LIST's t flag (under the clients_lock, from any thread). */
static void count(const struct client *c, struct client_counts *n)
{
    const struct tracking *t = state_of(c);
    n->tracking = t && t->on;
    n->tracking_broken = t && t->on && t->broken;
    n->tracking_bcast = t && t->on && t->bcast;
    n->tracking_redirect = redirect_of(t && t->on ? t : NULL);
}

/* Bytes c's tracking holds (maxmemory-clients): its prefixes, and what the
 * worker's table charges it. */
static size_t held(const struct client *c)
{
    const struct tracking *t = state_of(c);
    return t ? t->prefixes.bytes + t->reads.bytes +
                   (t->multi_reads ? evbuffer_get_length(t->multi_reads) : 0) : 0;
}

static const struct client_family tracking_family = {
    .take = note_request,
    .held = held,
    .count = count,
    .closing = tracking_gone,
    .freed = tracking_gone,
};

static int worker_init(struct worker *w, void **state)
{
    struct tracking_worker *tw = calloc(1, sizeof *tw);
    if (tw)
        tw->table = track_table_new();
    if (!tw || !tw->table) {
        free(tw);
        return -1;
    }
    tw->w = w;
    TAILQ_INIT(&tw->clients);
    *state = tw;
    return 0;
}

static const struct worker_family tracking_worker_family = { .init = worker_init };

/* A tracking connection closed: the node forgot what it tracked there. A
 * RESP3 one's RESP2 connections redirect to a client that is gone: they
 * are set up again, and what is tracked there told once they answered
 * the reads on their way. */
static void conn_down(struct worker *w, struct node_conn *c)
{
    struct tracking_worker *tw = tracking_worker_of(w);
    struct track_conn *e = conn_entry(tw, c, 0);
    if (!e)
        return;
    long long id = __atomic_load_n(&c->node_id, __ATOMIC_RELAXED);
    int resp3 = c->on_push == tracking_push || c->on_push == tracking_refused;
    *e = tw->conns[--tw->nconns];
    for (int i = 0; resp3 && id > 0 && i < tw->nconns; i++) {
        struct track_conn *e2 = &tw->conns[i];
        if (e2->id == id && e2->conn->on_push == NULL && strcmp(e2->conn->addr, c->addr) == 0) {
            e2->id = 0;
            flush_after(w, e2->conn, REQ_FLUSH_CONNECTION);
        }
    }
    flush_all(w, TRACKING_FLUSH_CONNECTION);
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
        flush_all(w, TRACKING_FLUSH_TOPOLOGY);
    if (tw && tw->nbcast > 0)       /* a new master tracks for it too */
        modes_follow(w);
}

static void layout_taken(struct worker *w)
{
    flush_all(w, TRACKING_FLUSH_LAYOUT);
}

static void drain_started(struct worker *w)
{
    flush_all(w, TRACKING_FLUSH_DRAIN);
}

/* The round's writes are out: its tracked reads enter the table while the
 * masters run them, and gone clients' entries leave it. */
static void round_end(struct worker *w)
{
    struct tracking_worker *tw = tracking_worker_of(w);
    if (tw) {
        pending_run(tw);
        sweep(tw);
    }
}

static const struct worker_watch tracking_watch = {
    .topology = topology_taken,
    .conn_down = conn_down,
    .layout = layout_taken,
    .drain = drain_started,
    .round_end = round_end,
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
    router_register_answered(read_answered);
    trackredir_register(redirect_broken);
    track_mark = request_mark_register();
    caching_mark = request_mark_register();
    client_cmd = command_lookup("client", 6);
    multi_cmd = command_lookup("multi", 5);
    exec_cmd = command_lookup("exec", 4);
    discard_cmd = command_lookup("discard", 7);
}
