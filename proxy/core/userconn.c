/*
 * userconn: node connections that run as a client user's node user. See
 * userconn.h.
 */
#include "proxy/core/userconn.h"

#include <stdlib.h>
#include <string.h>

#include "cluster/node.h"
#include "proxy/config/acl.h"
#include "proxy/core/worker.h"
#include "lib/proto/errors.h"

struct userconn {
    struct worker *worker;
    char name[ACL_NODE_USER_LEN];
    char password[2 * ACL_DIGEST_LEN + 1];
    char **setup;                   /* ACL SETUSER name ..., a copy of the user's */
    int setup_argc;
    struct node_opts opts[2];       /* RESP2, RESP3 */
    struct node_conn **conns[2];    /* per topo node, NULL until used */
    int nnodes;                     /* the length of conns[p] */
};

struct userconns {
    struct userconn *entries[USERCONN_MAX];
    int n;
};

static const char refused_hint[] =
    ": cluster-user must be allowed ACL SETUSER (docs/operations.md#users-and-permissions)";

/* The login and timeouts of w's shared connections, then the node user. */
static void opts_fill(struct userconn *uc)
{
    for (int p = 0; p < 2; p++) {
        struct node_opts *o = &uc->opts[p];
        *o = *worker_node_opts(uc->worker, p ? RESP3 : RESP2);
        o->as_user = uc->name;
        o->as_password = uc->password;
        o->setup_argv = (const char **)uc->setup;
        o->setup_argc = uc->setup_argc;
        o->as_refused_hint = refused_hint;
    }
}

static void entry_free(struct userconn *uc)
{
    for (int i = 0; uc->setup && i < uc->setup_argc; i++)
        free(uc->setup[i]);
    free(uc->setup);
    free(uc->conns[0]);
    free(uc->conns[1]);
    free(uc);
}

static struct userconn *entry_new(struct worker *w, const struct acl_user *u)
{
    struct userconn *uc = calloc(1, sizeof *uc);
    if (!uc)
        return NULL;
    uc->worker = w;
    memcpy(uc->name, u->node_user, sizeof uc->name);
    memcpy(uc->password, u->node_password, sizeof uc->password);
    uc->setup = calloc((size_t)u->node_setup_argc, sizeof *uc->setup);
    uc->nnodes = w->topo ? w->topo->nnodes : 0;
    uc->conns[0] = calloc((size_t)uc->nnodes + 1, sizeof *uc->conns[0]);
    uc->conns[1] = calloc((size_t)uc->nnodes + 1, sizeof *uc->conns[1]);
    int ok = uc->setup && uc->conns[0] && uc->conns[1];
    for (int i = 0; ok && i < u->node_setup_argc; i++) {
        ok = (uc->setup[i] = strdup(u->node_setup[i])) != NULL;
        uc->setup_argc += ok;
    }
    if (!ok) {
        entry_free(uc);
        return NULL;
    }
    opts_fill(uc);
    return uc;
}

struct userconn *userconn_of(struct worker *w, const struct acl_user *u, const char **why)
{
    struct userconns *all = w->userconns;
    *why = REPLY_ERR_OOM;
    if (!all && !(all = w->userconns = calloc(1, sizeof *all)))
        return NULL;
    for (int i = 0; i < all->n; i++)
        if (strcmp(all->entries[i]->name, u->node_user) == 0)
            return all->entries[i];
    if (all->n == USERCONN_MAX) {
        *why = "ERR too many distinct users' rules have run scripts since the proxy "
               "started (64 per worker): restart the proxy";
        return NULL;
    }
    struct userconn *uc = entry_new(w, u);
    if (uc)
        all->entries[all->n++] = uc;
    return uc;
}

/* c wrote its backlog or closed: clients paused on it read again */
static void conn_caught_up(struct node_conn *c, void *arg)
{
    struct userconn *uc = arg;
    uc->worker->node_caught_up(uc->worker, c);
}

static void conn_down(struct node_conn *c, void *arg)
{
    struct userconn *uc = arg;
    conn_caught_up(c, arg);
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < uc->nnodes; i++)
            if (uc->conns[p][i] == c)
                uc->conns[p][i] = NULL;
}

/* A script of the user's keeps the connection silent: the node is asked
 * elsewhere whether it lives, as for the shared connections (a busy one
 * answers BUSY), so a slow script is waited for, not timed out. */
static uint64_t conn_silent(struct node_conn *c, void *arg)
{
    struct userconn *uc = arg;
    return worker_ask_node(uc->worker, c->addr);
}

struct node_conn *userconn_conn(struct userconn *uc, int node, enum resp_proto proto)
{
    struct worker *w = uc->worker;
    if (node < 0 || node >= uc->nnodes || node >= w->topo->nnodes)
        return NULL;
    int p = proto == RESP3;
    struct node_conn **slot = &uc->conns[p][node];
    if (node_conn_usable(*slot))
        return *slot;
    if (node_now_ms() < w->nodes[node].connect_after_ms)
        return NULL;
    struct node_conn *c = worker_connect(w, node, &uc->opts[p]);
    if (c) {
        c->on_down = conn_down;
        c->on_drained = conn_caught_up;
        c->on_silent = conn_silent;
        c->down_arg = uc;
    }
    *slot = c;
    return c;
}

const struct node_opts *userconn_opts(const struct userconn *uc, enum resp_proto proto)
{
    return &uc->opts[proto == RESP3];
}

/* Retire uc's connections and size its arrays for nnodes masters. */
static void entry_retire(struct userconn *uc, int nnodes)
{
    struct node_conn **fresh[2] = { calloc((size_t)nnodes + 1, sizeof *fresh[0]),
                                    calloc((size_t)nnodes + 1, sizeof *fresh[1]) };
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < uc->nnodes; i++) {
            struct node_conn *c = uc->conns[p][i];
            uc->conns[p][i] = NULL;
            if (c) {
                c->on_down = conn_caught_up;    /* the array it was in is gone */
                node_conn_retire(c);
            }
        }
    if (!fresh[0] || !fresh[1]) {       /* no connection until the next topology */
        free(fresh[0]);
        free(fresh[1]);
        uc->nnodes = 0;
        return;
    }
    free(uc->conns[0]);
    free(uc->conns[1]);
    uc->conns[0] = fresh[0];
    uc->conns[1] = fresh[1];
    uc->nnodes = nnodes;
}

void userconn_topology(struct worker *w)
{
    struct userconns *all = w->userconns;
    for (int i = 0; all && i < all->n; i++)
        entry_retire(all->entries[i], w->topo->nnodes);
}

void userconn_config(struct worker *w)
{
    struct userconns *all = w->userconns;
    for (int i = 0; all && i < all->n; i++)
        opts_fill(all->entries[i]);
}
