#include "proxy/families/pubsub.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/base/hash.h"
#include "lib/base/log.h"
#include "cluster/backoff.h"
#include "cluster/slot.h"
#include "proxy/core/client.h"
#include "proxy/core/merge.h"
#include "proxy/core/request.h"
#include "proxy/core/route.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"
#include "lib/proto/resp.h"

/* ---- sets of names, in insertion order (PUNSUBSCRIBE without arguments
 * answers in subscription order, as Redis's pattern list does) ---- */

struct sub_conn;

struct sub_entry {
    struct sub_entry *hnext;
    TAILQ_ENTRY(sub_entry) order;
    struct sub_conn *conn;          /* shard channels: its connection; NULL: to place */
    uint32_t hash;
    int removing;                   /* picked by the SUNSUBSCRIBE being built */
    int leaving;                    /* in a leaving set: unconfirmed unsubscribes */
    size_t len;
    char name[];
};

struct sub_set {
    struct sub_entry **buckets;
    size_t nbuckets, n;
    TAILQ_HEAD(, sub_entry) order;
};

static uint32_t name_hash(const char *s, size_t len)
{
    return hash_fnv32(s, len);
}

static struct sub_entry *set_find(const struct sub_set *set, const char *name, size_t len)
{
    if (!set->nbuckets)
        return NULL;
    uint32_t h = name_hash(name, len);
    for (struct sub_entry *e = set->buckets[h % set->nbuckets]; e; e = e->hnext)
        if (e->hash == h && e->len == len && memcmp(e->name, name, len) == 0)
            return e;
    return NULL;
}

static int set_grow(struct sub_set *set)
{
    size_t nb = set->nbuckets ? set->nbuckets * 2 : 8;
    struct sub_entry **b = calloc(nb, sizeof *b), *e;
    if (!b)
        return -1;
    TAILQ_FOREACH(e, &set->order, order) {
        e->hnext = b[e->hash % nb];
        b[e->hash % nb] = e;
    }
    free(set->buckets);
    set->buckets = b;
    set->nbuckets = nb;
    return 0;
}

/* 1 added, 0 already there, -1 out of memory. */
static int set_add(struct sub_set *set, const char *name, size_t len, struct sub_entry **out)
{
    struct sub_entry *e = set_find(set, name, len);
    if (e) {
        *out = e;
        return 0;
    }
    if (set->n >= set->nbuckets && set_grow(set) < 0)
        return -1;
    e = calloc(1, sizeof *e + len + 1);
    if (!e)
        return -1;
    e->hash = name_hash(name, len);
    e->len = len;
    memcpy(e->name, name, len);
    e->hnext = set->buckets[e->hash % set->nbuckets];
    set->buckets[e->hash % set->nbuckets] = e;
    TAILQ_INSERT_TAIL(&set->order, e, order);
    set->n++;
    *out = e;
    return 1;
}

static void set_unlink(struct sub_set *set, struct sub_entry *e)
{
    struct sub_entry **p = &set->buckets[e->hash % set->nbuckets];
    while (*p != e)
        p = &(*p)->hnext;
    *p = e->hnext;
    TAILQ_REMOVE(&set->order, e, order);
    set->n--;
    free(e);
}

static void set_init(struct sub_set *set)
{
    memset(set, 0, sizeof *set);
    TAILQ_INIT(&set->order);
}

static void set_clear(struct sub_set *set)
{
    struct sub_entry *e;
    while ((e = TAILQ_FIRST(&set->order)) != NULL) {
        TAILQ_REMOVE(&set->order, e, order);
        free(e);
    }
    free(set->buckets);
    set_init(set);
}

/* A name leaves: one more unsubscribe of it the node has to confirm.
 * Out of memory: its last messages may be dropped, nothing worse. */
static void leaving_add(struct sub_set *leaving, const char *name, size_t len)
{
    struct sub_entry *e;
    if (set_add(leaving, name, len, &e) >= 0)
        e->leaving++;
}

/* The node confirmed one unsubscribe of name. */
static void leaving_done(struct sub_set *leaving, const char *name, size_t len)
{
    struct sub_entry *e = set_find(leaving, name, len);
    if (e && --e->leaving <= 0)
        set_unlink(leaving, e);
}

/* ---- per-client state ---- */

/* A command sent on a subscriber connection, waiting for its confirmations
 * (one per name); then r, whose reply is built already, is finished. */
struct sub_group {                  /* a request waiting on several connections */
    struct request *r;
    int pending;                    /* waits not yet settled */
};

struct sub_wait {
    TAILQ_ENTRY(sub_wait) link;
    struct request *r;              /* NULL: nothing to answer */
    struct sub_group *group;        /* or this, shared with other waits */
    int left;
    int sunsub;                     /* confirmations are sunsubscribe */
};

struct sub_conn {
    LIST_ENTRY(sub_conn) link;      /* shard connections */
    struct pubsub *ps;
    struct node_conn *node;         /* NULL while down */
    int node_index;                 /* in the worker's topology when placed */
    char addr[TOPO_ADDR_MAX];
    int nsubs;                      /* shard: entries on it */
    int closing;                    /* being closed: no idle check */
    uint64_t ping_ms;               /* last keepalive PING sent */
    struct event *keepalive;
    TAILQ_HEAD(sub_wait_list, sub_wait) waits;
};

struct pubsub {
    struct client *client;
    struct worker *worker;
    struct sub_set channels, patterns, shard;
    /* names the client unsubscribed from whose confirmation the node has not
     * sent yet: the node still delivers their messages, published before it
     * ran the UNSUBSCRIBE, and the client gets them, as from one server */
    struct sub_set leaving_channels, leaving_patterns;
    struct sub_conn *main;          /* channels and patterns */
    LIST_HEAD(, sub_conn) shards;
    struct event *resub_timer;
    int resub_attempts;
    int gone;                       /* torn down: freed on the next round */
};

#define PUBSUB_KEEPALIVE_MIN_MS 50

/* The client holds at least one channel, pattern or shard channel. */
static int subscribed(const struct client *c)
{
    const struct pubsub *ps = c->pubsub;
    return ps && ps->channels.n + ps->patterns.n + ps->shard.n > 0;
}

/* Counts for CLIENT LIST. */
static void pubsub_count(const struct client *c, struct client_counts *n)
{
    const struct pubsub *ps = c->pubsub;
    if (!ps)
        return;
    n->sub = (int)ps->channels.n;
    n->psub = (int)ps->patterns.n;
    n->ssub = (int)ps->shard.n;
}

static long long ps_count(const struct pubsub *ps)
{
    return (long long)(ps->channels.n + ps->patterns.n);
}

static void resub_cb(evutil_socket_t fd, short what, void *arg);

static struct pubsub *ps_get(struct client *c)
{
    if (c->pubsub)
        return c->pubsub;
    struct pubsub *ps = calloc(1, sizeof *ps);
    if (!ps)
        return NULL;
    ps->client = c;
    ps->worker = c->worker;
    set_init(&ps->channels);
    set_init(&ps->patterns);
    set_init(&ps->shard);
    set_init(&ps->leaving_channels);
    set_init(&ps->leaving_patterns);
    LIST_INIT(&ps->shards);
    ps->resub_timer = evtimer_new(c->worker->base, resub_cb, ps);
    if (!ps->resub_timer) {
        free(ps);
        return NULL;
    }
    pthread_mutex_lock(&c->worker->clients_lock);     /* CLIENT LIST reads it */
    c->pubsub = ps;
    pthread_mutex_unlock(&c->worker->clients_lock);
    return ps;
}

/* ---- waits ---- */

static struct sub_wait *wait_push(struct sub_conn *sc, struct request *r, int left, int sunsub)
{
    struct sub_wait *wt = calloc(1, sizeof *wt);
    if (!wt)
        return NULL;
    wt->r = r;
    wt->left = left;
    wt->sunsub = sunsub;
    TAILQ_INSERT_TAIL(&sc->waits, wt, link);
    return wt;
}

static void conn_close_idle(struct sub_conn *sc);
static void main_close(struct pubsub *ps);

/* A settled wait's request, if it was the last thing it waited for. */
static void wait_answer(struct sub_wait *wt)
{
    struct request *r = wt->r;
    if (wt->group && --wt->group->pending == 0) {
        r = wt->group->r;
        free(wt->group);
    }
    free(wt);
    if (r)
        request_finish(r);
}

/* Finish the waits at the head that owe nothing; then a connection left
 * with nothing to hold closes. 0, or -1 when the client went away meanwhile
 * (ps is torn down: the caller must stop there). The teardown never touches
 * waits (the late free does), so this loop is safe whatever a finished
 * request's flush does to the client. */
static int waits_settle(struct sub_conn *sc)
{
    struct pubsub *ps = sc->ps;
    struct sub_wait *wt;
    while ((wt = TAILQ_FIRST(&sc->waits)) != NULL && wt->left <= 0) {
        TAILQ_REMOVE(&sc->waits, wt, link);
        wait_answer(wt);
    }
    if (ps->gone)
        return -1;
    if (TAILQ_EMPTY(&sc->waits) && !sc->closing)
        conn_close_idle(sc);    /* sc may be freed: the caller must not touch it */
    return 0;
}

/* Every wait of sc answered as it is (a connection closed on purpose). */
static void waits_finish_all(struct sub_conn *sc)
{
    struct sub_wait *wt;
    TAILQ_FOREACH(wt, &sc->waits, link)
        wt->left = 0;
    waits_settle(sc);
}

/* ---- connections ---- */

static void conn_push(struct node_conn *nc, struct evbuffer *in, const char *bytes,
                      size_t len, const struct reply_scanner *s, void *arg);
static void conn_down(struct node_conn *nc, void *arg);

static void resub_schedule(struct pubsub *ps)
{
    const struct config *cfg = ps->worker->cfg;
    if (ps->gone || evtimer_pending(ps->resub_timer, NULL))
        return;
    int ms = backoff_delay_ms(ps->resub_attempts < 30 ? ps->resub_attempts : 30,
                              cfg->retry_base_ms, cfg->retry_max_ms);
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    ps->resub_attempts++;
    evtimer_add(ps->resub_timer, &tv);
}

static void keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
    struct sub_conn *sc = arg;
    struct node_conn *nc = sc->node;
    int timeout = sc->ps->worker->cfg->node_timeout_ms;
    (void)fd;
    (void)what;
    if (!nc || nc->state != NODE_READY)
        return;         /* connecting: node.c times the connect out */
    uint64_t now = node_now_ms();
    if (sc->ping_ms > nc->last_read_ms) {       /* a PING is unanswered */
        if (now - sc->ping_ms >= (uint64_t)timeout) {
            char why[200];
            snprintf(why, sizeof why, "subscriber connection to node %s did not answer "
                     "within %d ms", nc->addr, timeout);
            node_conn_close(nc, why);     /* conn_down() takes it from here */
        }
        return;
    }
    if (now - nc->last_read_ms >= (uint64_t)(timeout / 2)) {
        static const char ping[] = "*1\r\n$4\r\nPING\r\n";
        node_send_raw(nc, ping, sizeof ping - 1);
        sc->ping_ms = now;
    }
}

/* A subscriber connection to master `node` of the current topology; NULL
 * when it cannot even be started. */
static struct node_conn *conn_connect(struct sub_conn *sc, int node)
{
    struct worker *w = sc->ps->worker;
    if (node < 0 || node >= w->topo->nnodes)
        return NULL;
    const struct topology_node *n = &w->topo->nodes[node];
    /* in the client's protocol: its messages go to it as the node sends them */
    struct node_conn *nc = node_conn_new(&w->loop, n->announced,
                                         (const struct sockaddr *)&n->sa, n->salen,
                                         worker_node_opts(w, sc->ps->client->resp));
    if (!nc)
        return NULL;
    nc->on_push = conn_push;
    nc->push_arg = sc;
    nc->push_max = (size_t)w->cfg->client_output_pubsub_hard_limit;
    nc->on_down = conn_down;
    nc->down_arg = sc;
    sc->node = nc;
    sc->node_index = node;
    sc->ping_ms = 0;
    snprintf(sc->addr, sizeof sc->addr, "%s", n->announced);
    int ka = w->cfg->node_timeout_ms / 4;
    if (ka < PUBSUB_KEEPALIVE_MIN_MS)
        ka = PUBSUB_KEEPALIVE_MIN_MS;
    struct timeval tv = { ka / 1000, (ka % 1000) * 1000 };
    evtimer_add(sc->keepalive, &tv);
    return nc;
}

static struct sub_conn *conn_new(struct pubsub *ps)
{
    struct sub_conn *sc = calloc(1, sizeof *sc);
    if (!sc)
        return NULL;
    sc->ps = ps;
    sc->node_index = -1;
    TAILQ_INIT(&sc->waits);
    sc->keepalive = event_new(ps->worker->base, -1, EV_PERSIST, keepalive_cb, sc);
    if (!sc->keepalive) {
        free(sc);
        return NULL;
    }
    return sc;
}

/* Close sc's node connection without calling us back. */
static void conn_drop_node(struct sub_conn *sc)
{
    struct node_conn *nc = sc->node;
    event_del(sc->keepalive);
    if (!nc)
        return;
    sc->node = NULL;
    nc->on_down = NULL;
    nc->on_push = NULL;
    /* a push still being handed out must find nothing: node.c checks the
     * state before handing out more, and close sets it */
    node_conn_close(nc, "subscriber connection no longer needed");
}

static void conn_free(struct sub_conn *sc)
{
    conn_drop_node(sc);
    event_free(sc->keepalive);
    struct sub_wait *wt;
    while ((wt = TAILQ_FIRST(&sc->waits)) != NULL) {
        TAILQ_REMOVE(&sc->waits, wt, link);
        free(wt);
    }
    free(sc);
}

/* Send VERB name... on sc; 0, or -1 when sc has no connection. */
static int conn_send(struct sub_conn *sc, const char *verb, const char **names,
                     const size_t *lens, int n)
{
    if (!sc->node || sc->node->state == NODE_CLOSED)
        return -1;
    struct evbuffer *b = evbuffer_new();
    if (!b)
        return -1;
    resp_add_array(b, n + 1);
    resp_add_bulk_str(b, verb);
    for (int i = 0; i < n; i++)
        resp_add_bulk(b, names[i], lens[i]);
    size_t len = evbuffer_get_length(b);
    int rc = node_send_raw(sc->node, evbuffer_pullup(b, -1), len);
    evbuffer_free(b);
    return rc;
}

/* Send VERB with every name of set (entries with conn == only, when only). */
static int conn_send_set(struct sub_conn *sc, const char *verb, struct sub_set *set,
                         struct sub_conn *only)
{
    const char **names = malloc(sizeof *names * (set->n ? set->n : 1));
    size_t *lens = malloc(sizeof *lens * (set->n ? set->n : 1));
    int n = 0, rc = -1;
    struct sub_entry *e;
    if (names && lens) {
        TAILQ_FOREACH(e, &set->order, order)
            if (!only || e->conn == only) {
                names[n] = e->name;
                lens[n++] = e->len;
            }
        rc = n ? conn_send(sc, verb, names, lens, n) : 0;
    }
    free(names);
    free(lens);
    return rc < 0 ? rc : n;
}

/* The connection for channels and patterns: made (and subscribed to
 * everything the client holds) on the master after the one it was on. */
static int main_connect(struct pubsub *ps)
{
    struct sub_conn *sc = ps->main;
    int nnodes = ps->worker->topo->nnodes;
    if (nnodes <= 0)
        return -1;
    /* First on the master PUBLISH goes to (a keyless command's), so that
     * PUBLISH counts this subscriber as one server would; after a failure on
     * the next one, which is up more surely than the one that failed. */
    int node = sc->node_index < 0 ? worker_node_for_slot(ps->worker, -1)
                                  : (sc->node_index + 1) % nnodes;
    if (!conn_connect(sc, node))
        return -1;
    /* the resubscription's confirmations come first; waits behind it
     * finish once they are in */
    struct sub_wait *wt = calloc(1, sizeof *wt);
    if (!wt) {
        conn_drop_node(sc);
        return -1;
    }
    int a = conn_send_set(sc, "SUBSCRIBE", &ps->channels, NULL);
    int b = conn_send_set(sc, "PSUBSCRIBE", &ps->patterns, NULL);
    if (a < 0 || b < 0) {
        free(wt);
        conn_drop_node(sc);
        return -1;
    }
    wt->left = a + b;
    TAILQ_INSERT_HEAD(&sc->waits, wt, link);
    return 0;
}

/* Channels and patterns' connection, made when missing. NULL: out of memory. */
static struct sub_conn *main_get(struct pubsub *ps)
{
    if (!ps->main) {
        ps->main = conn_new(ps);
        if (!ps->main)
            return NULL;
    }
    return ps->main;
}

/* Shard channels' connection to master `node`, made when missing. */
static struct sub_conn *shard_get(struct pubsub *ps, int node)
{
    struct sub_conn *sc;
    const char *addr = ps->worker->topo->nodes[node].announced;
    LIST_FOREACH(sc, &ps->shards, link)
        if (sc->node && strcmp(sc->addr, addr) == 0)
            return sc;
    sc = conn_new(ps);
    if (!sc)
        return NULL;
    if (!conn_connect(sc, node)) {
        conn_free(sc);
        return NULL;
    }
    LIST_INSERT_HEAD(&ps->shards, sc, link);
    return sc;
}

/* Close a shard connection, answering what waits on it. */
static void shard_close(struct sub_conn *sc)
{
    LIST_REMOVE(sc, link);      /* from here on sc is ours alone */
    sc->closing = 1;
    conn_drop_node(sc);
    waits_finish_all(sc);
    conn_free(sc);
}

/* A connection whose last wait settled: closed when it holds nothing. */
static void conn_close_idle(struct sub_conn *sc)
{
    struct pubsub *ps = sc->ps;
    if (sc == ps->main) {
        if (ps_count(ps) == 0)
            main_close(ps);
    } else if (sc->nsubs <= 0) {
        shard_close(sc);
    }
}

/* Put shard entries without a connection on their slot's master. */
static void shard_place_orphans(struct pubsub *ps)
{
    struct worker *w = ps->worker;
    struct sub_entry *e;
    TAILQ_FOREACH(e, &ps->shard.order, order) {
        if (e->conn)
            continue;
        int node = worker_node_for_slot(w, slot_of(e->name, e->len));
        struct sub_conn *sc = node >= 0 ? shard_get(ps, node) : NULL;
        const char *name = e->name;
        if (!sc || conn_send(sc, "SSUBSCRIBE", &name, &e->len, 1) < 0 ||
            !wait_push(sc, NULL, 1, 0)) {
            resub_schedule(ps);     /* (a command sent without its wait: the
                                     * connection is failing anyway) */
            continue;
        }
        e->conn = sc;
        sc->nsubs++;
    }
}

/* A subscriber connection failed: subscribe again elsewhere after a backoff. */
static void conn_down(struct node_conn *nc, void *arg)
{
    struct sub_conn *sc = arg;
    struct pubsub *ps = sc->ps;
    (void)nc;
    sc->node = NULL;
    event_del(sc->keepalive);
    worker_want_refresh(ps->worker);
    /* once per outage: attempts that keep failing log at verbose */
    log_at(ps->resub_attempts ? LOG_VERBOSE : LOG_NOTICE, "pubsub",
           "subscriber connection of client id=%llu to node %s lost; subscribing again",
           (unsigned long long)ps->client->id, sc->addr);
    if (sc == ps->main) {
        struct sub_wait *wt;
        TAILQ_FOREACH(wt, &sc->waits, link)
            wt->left = 0;       /* answered once the resubscription is confirmed */
        set_clear(&ps->leaving_channels);   /* nothing more comes from that node */
        set_clear(&ps->leaving_patterns);
    } else {
        struct sub_entry *e;
        TAILQ_FOREACH(e, &ps->shard.order, order)
            if (e->conn == sc)
                e->conn = NULL;
        sc->nsubs = 0;
        shard_close(sc);
        if (ps->gone)
            return;
    }
    resub_schedule(ps);
}

/* Channels and patterns are all gone: close their connection, answering
 * what waits on it. */
static void main_close(struct pubsub *ps)
{
    struct sub_conn *sc = ps->main;
    if (!sc)
        return;
    ps->main = NULL;            /* from here on sc is ours alone */
    sc->closing = 1;
    set_clear(&ps->leaving_channels);
    set_clear(&ps->leaving_patterns);
    conn_drop_node(sc);
    waits_finish_all(sc);
    conn_free(sc);
}

static void resub_cb(evutil_socket_t fd, short what, void *arg)
{
    struct pubsub *ps = arg;
    (void)fd;
    (void)what;
    if (ps->gone)
        return;
    if (ps->main && !ps->main->node) {
        if (ps_count(ps) == 0) {
            main_close(ps);
            if (ps->gone)
                return;
        } else {
            /* no master to be had for retry-attempts tries: the
             * (P)SUBSCRIBEs waiting are answered (messages until the
             * subscription is made are lost, as after a failure), and the
             * attempts go on */
            if (ps->resub_attempts > ps->worker->cfg->retry_attempts &&
                waits_settle(ps->main) < 0)
                return;
            if (main_connect(ps) < 0)
                resub_schedule(ps);
        }
    }
    shard_place_orphans(ps);
}

/* ---- what a subscriber connection receives ---- */

struct push {
    char kind[16];                  /* "message", "subscribe", ... */
    size_t name_off, name_len;      /* first name: channel or pattern */
    int has_name;
};

/* Contiguous bytes for the first need of the push (at most len). */
static const char *push_view(struct evbuffer *in, const char *bytes, size_t len, size_t need)
{
    if (need > len)
        need = len;
    return in ? (const char *)evbuffer_pullup(in, (ssize_t)need) : bytes;
}

/* A "$n\r\n" or "*n\r\n" header at *pos; -1 when it is not one. */
static int push_header(const char *b, size_t avail, size_t *pos, char type, long long *n)
{
    struct reply_head h;
    size_t p = *pos;
    if (p >= avail || reply_header(b + p, avail - p, &h) < 0 || h.type != type)
        return -1;
    *n = h.n;
    *pos = p + h.len;
    return 0;
}

/* Kind and first name of a push array (their bytes are what is needed). */
static int push_parse(struct evbuffer *in, const char *bytes, size_t len, struct push *p)
{
    size_t pos = 0, avail = len < 64 ? len : 64;
    long long n, klen, nlen;
    const char *b = push_view(in, bytes, len, avail);
    memset(p, 0, sizeof *p);
    char agg = avail > 0 && b[0] == '>' ? '>' : '*';   /* RESP3's push, RESP2's array */
    if (push_header(b, avail, &pos, agg, &n) < 0 || n < 2 ||
        push_header(b, avail, &pos, '$', &klen) < 0 || klen <= 0 ||
        klen >= (long long)sizeof p->kind || pos + (size_t)klen + 2 > avail)
        return -1;
    memcpy(p->kind, b + pos, (size_t)klen);
    pos += (size_t)klen + 2;
    if (pos < avail && b[pos] == ':')       /* "pong" has a bulk; counts do not matter */
        return 0;
    if (push_header(b, avail, &pos, '$', &nlen) < 0)
        return 0;                           /* cut by the view: no name needed then */
    if (nlen < 0)
        return 0;                           /* "unsubscribe" of nothing */
    if (pos + (size_t)nlen > len)
        return -1;
    p->has_name = 1;
    p->name_off = pos;
    p->name_len = (size_t)nlen;
    return 0;
}

/* Bytes of a push from the view (valid until the evbuffer changes). */
static const char *push_name(struct evbuffer *in, const char *bytes, size_t len,
                             const struct push *p)
{
    return push_view(in, bytes, len, p->name_off + p->name_len) + p->name_off;
}

/* A message for the client (client_push: its own subscribe confirmation
 * is ahead of it). */
/* A message from sc: the node sent it before the confirmations sc still
 * waits for, so it goes before the reply of the first command waiting
 * there, as one server writes it before it reads that command. */
static void deliver(struct sub_conn *sc, struct evbuffer *in, const char *bytes, size_t len)
{
    struct sub_wait *wt;
    TAILQ_FOREACH(wt, &sc->waits, link)
        if (wt->r && !wt->group)
            break;
    client_push_before(sc->ps->client, wt ? wt->r : NULL, in, bytes, len);
}

/* One confirmation came for the oldest wait. */
static void conn_ack(struct sub_conn *sc)
{
    struct sub_wait *wt = TAILQ_FIRST(&sc->waits);
    if (!wt)
        return;
    wt->left--;
    sc->ps->resub_attempts = 0;
    waits_settle(sc);
}

/* The node unsubscribed the client from a shard channel itself (its slot
 * moved): place it again on the slot's new master. */
static void shard_lost(struct sub_conn *sc, const char *name, size_t len)
{
    struct pubsub *ps = sc->ps;
    struct sub_entry *e = set_find(&ps->shard, name, len);
    if (e && e->conn == sc) {
        e->conn = NULL;
        sc->nsubs--;
        worker_want_refresh(ps->worker);
        resub_schedule(ps);
    }
}

/* An error on a subscriber connection answers its oldest wait's command
 * (a refused SSUBSCRIBE, say): the command's names are placed again later. */
static void conn_error(struct sub_conn *sc, const char *line)
{
    struct pubsub *ps = sc->ps;
    log_verbose("pubsub", "node %s refused a subscription of client id=%llu: %.60s",
                sc->addr, (unsigned long long)ps->client->id, line);
    if (sc == ps->main) {
        if (sc->node)
            node_conn_close(sc->node, "a subscription was refused");
        return;
    }
    struct sub_entry *e;
    TAILQ_FOREACH(e, &ps->shard.order, order)
        if (e->conn == sc) {
            e->conn = NULL;
            sc->nsubs--;
        }
    worker_want_refresh(ps->worker);
    struct sub_wait *wt = TAILQ_FIRST(&sc->waits);
    if (wt)
        wt->left = 0;
    if (waits_settle(sc) < 0)       /* (and sc, holding nothing now, closes) */
        return;
    resub_schedule(ps);
}

static void conn_push(struct node_conn *nc, struct evbuffer *in, const char *bytes,
                      size_t len, const struct reply_scanner *s, void *arg)
{
    struct sub_conn *sc = arg;
    struct pubsub *ps = sc->ps;
    struct push p;
    (void)nc;
    if (s->type == '-') {
        if (in)
            evbuffer_drain(in, len);
        conn_error(sc, s->errline);
        return;
    }
    if ((s->type != '*' && s->type != '>') || push_parse(in, bytes, len, &p) < 0) {
        if (in)
            evbuffer_drain(in, len);
        return;
    }
    const char *name = p.has_name ? push_name(in, bytes, len, &p) : NULL;
    struct sub_set *set = NULL, *leaving = NULL;
    if (strcmp(p.kind, "message") == 0) {
        set = &ps->channels;
        leaving = &ps->leaving_channels;
    } else if (strcmp(p.kind, "pmessage") == 0) {
        set = &ps->patterns;
        leaving = &ps->leaving_patterns;
    } else if (strcmp(p.kind, "smessage") == 0) {
        set = &ps->shard;
    }
    if (set) {
        if (name && (set_find(set, name, p.name_len) ||
                     (leaving && set_find(leaving, name, p.name_len))))
            deliver(sc, in, bytes, len);
        else if (in)
            evbuffer_drain(in, len);
        return;
    }
    int is_sunsub = strcmp(p.kind, "sunsubscribe") == 0;
    struct sub_wait *head = TAILQ_FIRST(&sc->waits);
    if (is_sunsub && !(head && head->sunsub) && name) {
        char copy[256];
        size_t n = p.name_len;
        const char *nm = name;
        char *big = NULL;
        if (n >= sizeof copy && (big = malloc(n)) == NULL)
            n = 0;
        if (n) {
            memcpy(big ? big : copy, name, n);
            nm = big ? big : copy;
        }
        if (in)
            evbuffer_drain(in, len);
        if (n)
            shard_lost(sc, nm, n);
        free(big);
        return;
    }
    if (name && sc == ps->main && strcmp(p.kind, "unsubscribe") == 0)
        leaving_done(&ps->leaving_channels, name, p.name_len);
    else if (name && sc == ps->main && strcmp(p.kind, "punsubscribe") == 0)
        leaving_done(&ps->leaving_patterns, name, p.name_len);
    if (in)
        evbuffer_drain(in, len);
    if (strcmp(p.kind, "subscribe") == 0 || strcmp(p.kind, "psubscribe") == 0 ||
        strcmp(p.kind, "ssubscribe") == 0 || strcmp(p.kind, "unsubscribe") == 0 ||
        strcmp(p.kind, "punsubscribe") == 0 || is_sunsub)
        conn_ack(sc);
    /* "pong" (keepalive) and anything else: nothing to do */
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
        int added = set_add(set, name, len, &e);
        if (added < 0) {
            evbuffer_drain(b, evbuffer_get_length(b));
            request_fail(r, REPLY_ERR_OOM);
            return;
        }
        if (added)
            fresh_add(f, e, len);
        reply_confirm(b, request_resp(r), kind, name, len, ps_count(ps));
    }
    struct sub_conn *sc = f->n ? main_get(ps) : NULL;
    if (!sc) {
        request_finish(r);      /* nothing new (or no memory: the next
                                 * resubscription takes the names) */
        return;
    }
    if (!sc->node) {
        /* first subscription, or waiting out a backoff: the connection's
         * subscription of everything covers these names */
        if (!wait_push(sc, r, 0, 0)) {
            request_finish(r);
            return;
        }
        if (!evtimer_pending(ps->resub_timer, NULL) && main_connect(ps) < 0)
            resub_schedule(ps);
        return;
    }
    if (conn_send(sc, patterns ? "PSUBSCRIBE" : "SUBSCRIBE", f->names, f->lens, f->n) < 0 ||
        !wait_push(sc, r, f->n, 0))
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
        reply_confirm(b, request_resp(r), kind, NULL, 0, ps_count(ps));
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
                leaving_add(leaving, e->name, e->len);
            set_unlink(set, e);
            resp_add_integer(b, ps_count(ps));
        }
    }
    for (int i = 1; i < r->argc; i++) {
        size_t len;
        const char *name = request_arg(r, i, &len);
        struct sub_entry *e = set_find(set, name, len);
        if (e) {
            set_unlink(set, e);
            if (to_node)
                leaving_add(leaving, name, len);
            if (cmd)
                resp_add_bulk(cmd, name, len);
            ngone++;
        }
        reply_confirm(b, request_resp(r), kind, name, len, ps_count(ps));
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
            wait_push(sc, r, ngone, 0)) {
            evbuffer_free(cmd);
            return;
        }
    }
    if (cmd)
        evbuffer_free(cmd);
    if (ps_count(ps) == 0)
        main_close(ps);
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
        int added = set_add(&ps->shard, name, len, &e);
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
    struct sub_conn *sc = node >= 0 ? shard_get(ps, node) : NULL;
    if (!sc || conn_send(sc, "SSUBSCRIBE", f->names, f->lens, f->n) < 0) {
        resub_schedule(ps);     /* the entries have no connection: placed later */
        request_finish(r);
        return;
    }
    for (int i = 0; i < f->n; i++)
        f->entries[i]->conn = sc;
    sc->nsubs += f->n;
    if (!wait_push(sc, r, f->n, 0))
        request_finish(r);
}

static void shards_close_idle(struct pubsub *ps)
{
    struct sub_conn *sc, *next;
    for (sc = LIST_FIRST(&ps->shards); sc; sc = next) {
        next = LIST_NEXT(sc, link);
        if (sc->nsubs <= 0 && TAILQ_EMPTY(&sc->waits)) {
            shard_close(sc);
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
        struct sub_wait *wt = conn_send(sc, "SUNSUBSCRIBE", names, lens, n) == 0
                            ? wait_push(sc, NULL, n, 1) : NULL;
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
            set_unlink(&ps->shard, e);
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
        e = set_find(&ps->shard, name, len);
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
    long total = 0, n;
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if ((n = merge_array_elements(b, len, NULL, NULL, -1)) < 0) {
            resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
            return;
        }
        total += n;
    }
    struct elem *all = malloc(sizeof *all * (size_t)(total ? total : 1));
    const char **pe = malloc(sizeof *pe * (size_t)(total ? total : 1));
    size_t *pl = malloc(sizeof *pl * (size_t)(total ? total : 1));
    long k = 0, uniq = 0;
    if (!all || !pe || !pl) {
        resp_add_error(out, REPLY_ERR_OOM);
        goto out;
    }
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        n = merge_array_elements(b, len, pe, pl, -1);
        for (long j = 0; j < n; j++, k++) {
            all[k].p = pe[j];
            all[k].len = pl[j];
        }
    }
    qsort(all, (size_t)k, sizeof *all, elem_cmp);
    for (long j = 0; j < k; j++)
        if (j == 0 || elem_cmp(&all[j], &all[j - 1]) != 0)
            all[uniq++] = all[j];
    resp_add_array(out, uniq);
    for (long j = 0; j < uniq; j++)
        evbuffer_add(out, all[j].p, all[j].len);
out:
    free(all);
    free(pe);
    free(pl);
}

/* [name, count, name, count, ...] from every part, in the same order: the
 * first part's names with every part's counts added. */
static void merge_numsub_run(struct request *p, struct evbuffer *out)
{
    size_t len0;
    const char *b0 = merge_part_bytes(p->parts[0], &len0);
    long n = merge_array_elements(b0, len0, NULL, NULL, -1);
    if (n < 0 || n % 2) {
        resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
        return;
    }
    const char **pe = n > 0 ? malloc(sizeof *pe * (size_t)n) : NULL;
    size_t *pl = n > 0 ? malloc(sizeof *pl * (size_t)n) : NULL;
    long long *sums = n > 0 ? calloc((size_t)n, sizeof *sums) : NULL;
    if (n > 0 && (!pe || !pl || !sums)) {
        resp_add_error(out, REPLY_ERR_OOM);
        goto out;
    }
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (merge_array_elements(b, len, pe, pl, n) != n) {
            resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
            goto out;
        }
        for (long j = 1; j < n; j += 2) {
            if (pe[j][0] != ':') {
                resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
                goto out;
            }
            sums[j] += strtoll(pe[j] + 1, NULL, 10);
        }
    }
    merge_array_elements(b0, len0, pe, pl, n);
    resp_add_array(out, n);
    for (long j = 0; j < n; j += 2) {
        evbuffer_add(out, pe[j], pl[j]);
        resp_add_integer(out, sums[j + 1]);
    }
out:
    free(pe);
    free(pl);
    free(sums);
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
    struct pubsub *ps = ps_get(r->client);
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
static int allowed_in_context(const char *name)
{
    static const char *const allowed[] = {
        "ping", "subscribe", "ssubscribe", "unsubscribe", "sunsubscribe",
        "psubscribe", "punsubscribe", "quit", "reset",
    };
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (strcmp(name, allowed[i]) == 0)
            return 1;
    return 0;
}

/* For a subscribed client: refuse what Redis refuses in that context, and
 * answer PING. 1 when r was handled (answered) here. */
static int intercept(struct request *r)
{
    /* RESP3 has no subscribed mode: pushes and replies share the connection */
    if (request_resp(r) == RESP3 || !subscribed(r->client))
        return 0;
    const char *name = r->cmd->fullname;
    if (!allowed_in_context(name)) {
        char msg[256];
        snprintf(msg, sizeof msg, "ERR Can't execute '%s': only (P|S)SUBSCRIBE / "
                 "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", name);
        router_reject(r, msg);
        return 1;
    }
    if (strcmp(name, "ping") != 0)
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

/* ---- teardown ---- */

static void free_late_cb(evutil_socket_t fd, short what, void *arg)
{
    struct pubsub *ps = arg;
    struct sub_conn *sc;
    (void)fd;
    (void)what;
    if (ps->main) {
        waits_finish_all(ps->main);
        conn_free(ps->main);
    }
    while ((sc = LIST_FIRST(&ps->shards)) != NULL) {
        LIST_REMOVE(sc, link);
        waits_finish_all(sc);
        conn_free(sc);
    }
    set_clear(&ps->channels);
    set_clear(&ps->patterns);
    set_clear(&ps->shard);
    set_clear(&ps->leaving_channels);
    set_clear(&ps->leaving_patterns);
    event_free(ps->resub_timer);
    free(ps);
}

/* Detach ps from its client; nodes closed now, the rest on the next round
 * (a callback of one of its connections may be on the stack). */
static void teardown(struct client *c)
{
    struct pubsub *ps = c->pubsub;
    struct sub_conn *sc;
    if (!ps)
        return;
    /* CLIENT LIST, on any thread, reads c->pubsub under this lock: once it
     * is cleared no reader holds ps */
    pthread_mutex_lock(&c->worker->clients_lock);
    c->pubsub = NULL;
    pthread_mutex_unlock(&c->worker->clients_lock);
    ps->gone = 1;
    evtimer_del(ps->resub_timer);
    if (ps->main)
        conn_drop_node(ps->main);
    LIST_FOREACH(sc, &ps->shards, link)
        conn_drop_node(sc);
    event_base_once(ps->worker->base, -1, EV_TIMEOUT, free_late_cb, ps, NULL);
}

static void conn_speak(struct sub_conn *sc, enum resp_proto proto)
{
    /* its reply reaches conn_push, which lets what is not a message go */
    static const char hello2[] = "*2\r\n$5\r\nHELLO\r\n$1\r\n2\r\n";
    static const char hello3[] = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
    if (sc && sc->node)
        node_send_raw(sc->node, proto == RESP3 ? hello3 : hello2, sizeof hello2 - 1);
}

void pubsub_speak(struct client *c)
{
    struct pubsub *ps = c->pubsub;
    struct sub_conn *sc;
    if (!ps)
        return;
    conn_speak(ps->main, c->resp);
    LIST_FOREACH(sc, &ps->shards, link)
        conn_speak(sc, c->resp);
}

void pubsub_reset(struct client *c)
{
    teardown(c);
}

/* The client is gone: close its connections (freed late). */
static void pubsub_gone(struct client *c)
{
    teardown(c);
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
};

void pubsub_register(void)
{
    route_register(pubsub_routes, (int)(sizeof pubsub_routes / sizeof pubsub_routes[0]));
    client_family_register(&pubsub_family);
}
