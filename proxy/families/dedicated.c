#include "proxy/families/dedicated.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/log.h"
#include "cluster/node.h"
#include "proxy/core/client.h"
#include "proxy/core/worker.h"
#include "lib/proto/errors.h"

static const char pool_full[] =
    "ERR all dedicated node connections of this proxy thread are in use by blocking "
    "commands, WATCH and WAIT (dedicated-connections-max): retry later, or raise "
    "dedicated-connections-max";
static const char no_connect[] = "ERR cannot connect to the node that serves this key";

static int pool_id = -1;        /* the pool's, on every worker (worker.h) */
static int user_id = -1;        /* a client's connections in use (client.h) */

/* The connections a client uses (the family's state in the client's slot,
 * read under the worker's clients_lock: CLIENT UNBLOCK reads it). */
struct dedicated_user {
    TAILQ_HEAD(, dedicated) list;
};

static int pool_init(struct worker *w, void **state)
{
    struct dedicated_pool *pool = calloc(1, sizeof *pool);
    (void)w;
    if (!pool)
        return -1;
    TAILQ_INIT(&pool->idle);
    TAILQ_INIT(&pool->busy);
    *state = pool;
    return 0;
}

static struct dedicated_pool *pool_of(struct worker *w)
{
    return worker_family_state(w, pool_id);
}

static struct dedicated_user *user_of(const struct client *c)
{
    return client_family_state(c, user_id);
}

/* c's list of connections, made on first use: 0, or -1 out of memory. */
static int user_make(struct client *c)
{
    if (user_of(c))
        return 0;
    struct dedicated_user *u = calloc(1, sizeof *u);
    if (!u)
        return -1;
    TAILQ_INIT(&u->list);
    client_family_set(c, user_id, u);
    return 0;
}

/* d runs user's commands from now on (NULL: nobody's). */
static void set_user(struct dedicated *d, struct client *user)
{
    if (d->user == user)
        return;
    pthread_mutex_lock(&d->worker->clients_lock);
    if (d->user)
        TAILQ_REMOVE(&user_of(d->user)->list, d, user_link);
    d->user = user;
    if (user)
        TAILQ_INSERT_TAIL(&user_of(user)->list, d, user_link);
    pthread_mutex_unlock(&d->worker->clients_lock);
}

/* The node closed or failed it: what was in flight has failed already. */
static void dedicated_down(struct node_conn *c, void *arg)
{
    struct dedicated *d = arg;
    struct dedicated_pool *pool = pool_of(d->worker);
    client_resume_paused(d->worker, c);
    set_user(d, NULL);
    if (d->owner) {
        *d->owner = NULL;
        TAILQ_REMOVE(&pool->busy, d, link);
    } else {
        TAILQ_REMOVE(&pool->idle, d, link);
        pool->nidle--;
    }
    pool->open--;
    free(d);
}

static void dedicated_drained(struct node_conn *c, void *arg)
{
    struct dedicated *d = arg;
    client_resume_paused(d->worker, c);
}

/* A command is silent on c: does its node answer elsewhere? (node.h) */
static uint64_t dedicated_silent(struct node_conn *c, void *arg)
{
    struct dedicated *d = arg;
    return worker_ask_node(d->worker, c->addr);
}

void dedicated_speak(struct dedicated *d, enum resp_proto proto)
{
    if (d->proto == proto)
        return;
    const char *argv[2] = { "HELLO", proto == RESP3 ? "3" : "2" };
    node_send_quiet(d->conn, 2, argv);
    d->proto = proto;
}

int dedicated_serves(const struct dedicated *d, int node)
{
    const struct topology *t = d->worker->topo;
    return node >= 0 && node < t->nnodes && node_conn_usable(d->conn) &&
           strcmp(d->conn->addr, t->nodes[node].announced) == 0;
}

static struct dedicated *idle_take(struct dedicated_pool *pool, struct dedicated *d)
{
    TAILQ_REMOVE(&pool->idle, d, link);
    pool->nidle--;
    return d;
}

static struct dedicated *dedicated_open(struct worker *w, int node)
{
    struct dedicated_pool *pool = pool_of(w);
    struct dedicated *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->worker = w;
    d->proto = RESP2;
    d->conn = worker_connect(w, node, &w->node_opts);
    if (!d->conn) {
        free(d);
        return NULL;
    }
    d->conn->on_down = dedicated_down;
    d->conn->on_drained = dedicated_drained;
    d->conn->on_silent = dedicated_silent;
    d->conn->down_arg = d;
    node_conn_ask_id(d->conn);
    pool->open++;
    return d;
}

struct dedicated *dedicated_acquire(struct worker *w, int node, struct client *user,
                                    struct dedicated **owner, const char **why)
{
    struct dedicated_pool *pool = pool_of(w);
    struct dedicated *d, *spare = NULL;
    *why = no_connect;
    if (!pool || node < 0 || node >= w->topo->nnodes)
        return NULL;
    if (user && user_make(user) < 0) {
        *why = REPLY_ERR_OOM;
        return NULL;
    }
    uint64_t now = node_now_ms();
    TAILQ_FOREACH(d, &pool->idle, link) {
        /* only once it has answered all it was sent (no stray reply), and
         * no CLIENT UNBLOCK meant for its last user may still reach it */
        if (d->conn->ninflight == 0 && dedicated_serves(d, node) &&
            now >= __atomic_load_n(&d->unblock_hold_ms, __ATOMIC_RELAXED))
            break;
        if (!spare && d->conn->ninflight == 0)
            spare = d;
    }
    if (d) {
        idle_take(pool, d);
    } else {
        if (pool->open >= w->cfg->dedicated_connections_max) {
            if (!spare) {
                stat_inc(&w->stats.dedicated_pool_full);
                *why = pool_full;
                return NULL;
            }
            dedicated_close(spare, "making room in the dedicated connection pool");
        }
        d = dedicated_open(w, node);
        if (!d)
            return NULL;
    }
    d->owner = owner;
    *owner = d;
    TAILQ_INSERT_TAIL(&pool->busy, d, link);
    set_user(d, user);
    return d;
}

void dedicated_release(struct dedicated *d)
{
    struct dedicated_pool *pool = pool_of(d->worker);
    /* one that ran as a client's node user (node_conn_login_as) serves no
     * other client */
    int keep = pool->nidle < DEDICATED_IDLE_MAX && !d->conn->opts->as_user;
    TAILQ_REMOVE(&pool->busy, d, link);
    *d->owner = NULL;
    d->owner = NULL;
    set_user(d, NULL);
    /* in the idle list either way: dedicated_down takes it off there */
    TAILQ_INSERT_TAIL(&pool->idle, d, link);
    pool->nidle++;
    if (!keep)      /* closed once its last reply is in */
        node_conn_retire(d->conn);
}

void dedicated_close(struct dedicated *d, const char *why)
{
    node_conn_close(d->conn, why);      /* dedicated_down frees d */
}

int dedicated_targets(const struct client *c, struct dedicated_target *out, int max,
                      uint64_t hold_until_ms)
{
    struct dedicated *d;
    const struct dedicated_user *u = user_of(c);
    int n = 0;
    if (!u)
        return 0;
    TAILQ_FOREACH(d, &u->list, user_link) {
        long long id = __atomic_load_n(&d->conn->node_id, __ATOMIC_RELAXED);
        if (n == max || id <= 0)
            continue;
        __atomic_store_n(&d->unblock_hold_ms, hold_until_ms, __ATOMIC_RELAXED);
        snprintf(out[n].addr, sizeof out[n].addr, "%s", d->conn->addr);
        out[n++].node_id = id;
    }
    return n;
}

/* c is being freed: its dedicated connections no longer name it. Called
 * with its worker's clients_lock held. */
static void forget_user(struct client *c)
{
    struct dedicated_user *u = user_of(c);
    struct dedicated *d;
    while (u && (d = TAILQ_FIRST(&u->list)) != NULL) {
        TAILQ_REMOVE(&u->list, d, user_link);
        d->user = NULL;
    }
}

/* c's memory goes next: its (empty) list with it. */
static void user_free(struct client *c)
{
    struct dedicated_user *u = user_of(c);
    if (!u)
        return;
    client_family_set(c, user_id, NULL);
    free(u);
}

/* Close, in both lists, the connections to addr, or (addr NULL) to nodes
 * that are not masters of the worker's topology any more. */
static void close_where(struct worker *w, const char *addr, const char *why)
{
    struct dedicated_pool *pool = pool_of(w);
    struct dedicated *d, *next;
    char msg[240];
    if (!pool)
        return;
    struct dedicated_list *lists[2] = { &pool->idle, &pool->busy };
    for (int i = 0; i < 2; i++)
        for (d = TAILQ_FIRST(lists[i]); d; d = next) {
            next = TAILQ_NEXT(d, link);
            const char *at = d->conn->addr;
            if (addr ? strcmp(at, addr) != 0 : topology_find(w->topo, at) >= 0)
                continue;
            snprintf(msg, sizeof msg, "node %s %s", at, why);
            dedicated_close(d, msg);    /* frees d: next was read before */
        }
}

static void node_silent(struct worker *w, const char *addr)
{
    close_where(w, addr, "does not answer");
}

static void topology_taken(struct worker *w)
{
    close_where(w, NULL, "is no longer a master of the cluster");
}

static const struct client_family dedicated_family = {
    .unlisted = forget_user,
    .freed = user_free,
};

static const struct worker_family dedicated_pool_family = {
    .init = pool_init,
};

static const struct worker_watch dedicated_watch = {
    .silent = node_silent,
    .topology = topology_taken,
};

void dedicated_register(void)
{
    user_id = client_family_register(&dedicated_family);
    pool_id = worker_family_register(&dedicated_pool_family);
    worker_register_watch(&dedicated_watch);
}
