/*
 * subscriber: a client's subscriptions and its subscriber connections.
 * See subscriber.h.
 */
#include "proxy/families/subscriber.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/log.h"
#include "cluster/backoff.h"
#include "cluster/slot.h"
#include "proxy/core/client.h"
#include "proxy/core/request.h"
#include "proxy/core/worker.h"
#include "lib/proto/errors.h"
#include "lib/proto/push.h"
#include "lib/proto/resp.h"

#define PUBSUB_KEEPALIVE_MIN_MS 50

static void resub_cb(evutil_socket_t fd, short what, void *arg);

static int family_id = -1;      /* pub/sub's, among the client families */

void subscriber_family(int id)
{
    family_id = id;
}

struct pubsub *subscriber_of(const struct client *c)
{
    return client_family_state(c, family_id);
}

struct pubsub *subscriber_get(struct client *c)
{
    struct pubsub *have = subscriber_of(c);
    if (have)
        return have;
    struct pubsub *ps = calloc(1, sizeof *ps);
    if (!ps)
        return NULL;
    ps->client = c;
    ps->worker = c->worker;
    subset_init(&ps->channels);
    subset_init(&ps->patterns);
    subset_init(&ps->shard);
    subset_init(&ps->leaving_channels);
    subset_init(&ps->leaving_patterns);
    LIST_INIT(&ps->shards);
    ps->resub_timer = evtimer_new(c->worker->base, resub_cb, ps);
    if (!ps->resub_timer) {
        free(ps);
        return NULL;
    }
    client_family_set(c, family_id, ps);
    return ps;
}

/* ---- waits ---- */

struct sub_wait *subscriber_wait_push(struct sub_conn *sc, struct request *r, int left, int sunsub)
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

static node_push_fn conn_push;
static void conn_down(struct node_conn *nc, void *arg);

void subscriber_resub_schedule(struct pubsub *ps)
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
int subscriber_send(struct sub_conn *sc, const char *verb, const char **names,
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
        rc = n ? subscriber_send(sc, verb, names, lens, n) : 0;
    }
    free(names);
    free(lens);
    return rc < 0 ? rc : n;
}

/* The connection for channels and patterns: made (and subscribed to
 * everything the client holds) on the master after the one it was on. */
int subscriber_main_connect(struct pubsub *ps)
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
struct sub_conn *subscriber_main_get(struct pubsub *ps)
{
    if (!ps->main) {
        ps->main = conn_new(ps);
        if (!ps->main)
            return NULL;
    }
    return ps->main;
}

/* Shard channels' connection to master `node`, made when missing. */
struct sub_conn *subscriber_shard_get(struct pubsub *ps, int node)
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
void subscriber_shard_close(struct sub_conn *sc)
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
        if (subscriber_count(ps) == 0)
            subscriber_main_close(ps);
    } else if (sc->nsubs <= 0) {
        subscriber_shard_close(sc);
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
        struct sub_conn *sc = node >= 0 ? subscriber_shard_get(ps, node) : NULL;
        const char *name = e->name;
        if (!sc || subscriber_send(sc, "SSUBSCRIBE", &name, &e->len, 1) < 0 ||
            !subscriber_wait_push(sc, NULL, 1, 0)) {
            subscriber_resub_schedule(ps);     /* (a command sent without its wait: the
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
        subset_clear(&ps->leaving_channels);   /* nothing more comes from that node */
        subset_clear(&ps->leaving_patterns);
    } else {
        struct sub_entry *e;
        TAILQ_FOREACH(e, &ps->shard.order, order)
            if (e->conn == sc)
                e->conn = NULL;
        sc->nsubs = 0;
        subscriber_shard_close(sc);
        if (ps->gone)
            return;
    }
    subscriber_resub_schedule(ps);
}

/* Channels and patterns are all gone: close their connection, answering
 * what waits on it. */
void subscriber_main_close(struct pubsub *ps)
{
    struct sub_conn *sc = ps->main;
    if (!sc)
        return;
    ps->main = NULL;            /* from here on sc is ours alone */
    sc->closing = 1;
    subset_clear(&ps->leaving_channels);
    subset_clear(&ps->leaving_patterns);
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
        if (subscriber_count(ps) == 0) {
            subscriber_main_close(ps);
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
            if (subscriber_main_connect(ps) < 0)
                subscriber_resub_schedule(ps);
        }
    }
    shard_place_orphans(ps);
}

/* ---- what a subscriber connection receives ---- */

/* A message from sc: the node sent it before the confirmations sc still
 * waits for, so it goes before the reply of the first command waiting
 * there, as one server writes it before it reads that command. */
static void deliver(struct sub_conn *sc, const struct reply_view *v)
{
    struct sub_wait *wt;
    TAILQ_FOREACH(wt, &sc->waits, link)
        if (wt->r && !wt->group)
            break;
    client_push_before(sc->ps->client, wt ? wt->r : NULL, v);
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
    struct sub_entry *e = subset_find(&ps->shard, name, len);
    if (e && e->conn == sc) {
        e->conn = NULL;
        sc->nsubs--;
        worker_want_refresh(ps->worker);
        subscriber_resub_schedule(ps);
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
    subscriber_resub_schedule(ps);
}

static void conn_push(struct node_conn *nc, const struct reply_view *v,
                      const struct reply_scanner *s, void *arg)
{
    struct sub_conn *sc = arg;
    struct pubsub *ps = sc->ps;
    struct push p;
    (void)nc;
    if (s->type == '-') {
        reply_view_drop(v);
        conn_error(sc, s->errline);
        return;
    }
    if ((s->type != '*' && s->type != '>') || push_parse(v, &p) < 0) {
        reply_view_drop(v);
        return;
    }
    const char *name = p.has_name ? push_name(v, &p) : NULL;
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
        if (name && (subset_find(set, name, p.name_len) ||
                     (leaving && subset_find(leaving, name, p.name_len))))
            deliver(sc, v);
        else
            reply_view_drop(v);
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
        reply_view_drop(v);
        if (n)
            shard_lost(sc, nm, n);
        free(big);
        return;
    }
    if (name && sc == ps->main && strcmp(p.kind, "unsubscribe") == 0)
        subset_leaving_done(&ps->leaving_channels, name, p.name_len);
    else if (name && sc == ps->main && strcmp(p.kind, "punsubscribe") == 0)
        subset_leaving_done(&ps->leaving_patterns, name, p.name_len);
    reply_view_drop(v);
    if (strcmp(p.kind, "subscribe") == 0 || strcmp(p.kind, "psubscribe") == 0 ||
        strcmp(p.kind, "ssubscribe") == 0 || strcmp(p.kind, "unsubscribe") == 0 ||
        strcmp(p.kind, "punsubscribe") == 0 || is_sunsub)
        conn_ack(sc);
    /* "pong" (keepalive) and anything else: nothing to do */
}

/* ---- the end ---- */

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
    subset_clear(&ps->channels);
    subset_clear(&ps->patterns);
    subset_clear(&ps->shard);
    subset_clear(&ps->leaving_channels);
    subset_clear(&ps->leaving_patterns);
    event_free(ps->resub_timer);
    free(ps);
}

/* Detach ps from its client; nodes closed now, the rest on the next round
 * (a callback of one of its connections may be on the stack). */
void subscriber_teardown(struct client *c)
{
    struct pubsub *ps = subscriber_of(c);
    struct sub_conn *sc;
    if (!ps)
        return;
    /* CLIENT LIST, on any thread, reads it under the clients_lock
     * client_family_set takes: once it is cleared no reader holds ps */
    client_family_set(c, family_id, NULL);
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

void subscriber_speak(struct client *c)
{
    struct pubsub *ps = subscriber_of(c);
    struct sub_conn *sc;
    if (!ps)
        return;
    conn_speak(ps->main, c->resp);
    LIST_FOREACH(sc, &ps->shards, link)
        conn_speak(sc, c->resp);
}
