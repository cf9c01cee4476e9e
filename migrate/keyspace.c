/*
 * keyspace: the servers behind a URL. See keyspace.h.
 */
#include "migrate/keyspace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/slot.h"
#include "cluster/syncconn.h"
#include "lib/net/tls.h"

#define KEYSPACE_CONNECT_MS 5000
#define KEYSPACE_TIMEOUT_MS 30000

/* A connection to host:port logged in as ks->url says; NULL with err. */
static struct syncconn *node_open(struct keyspace *ks, const char *host, int port, char *err,
                                  size_t errlen)
{
    const struct keyspace_tls *t = ks->tls_opts;
    struct syncconn_opts o = {
        .connect_timeout_ms = KEYSPACE_CONNECT_MS, .timeout_ms = KEYSPACE_TIMEOUT_MS,
        .tls = ks->tls, .tls_server_name = t ? t->server_name : NULL,
        .tls_insecure = t ? t->insecure : 0,
    };
    char why[300];
    struct syncconn *c = syncconn_open(host, port, &o, why, sizeof why);
    if (!c) {
        snprintf(err, errlen, "%s:%d: %s", host, port, why);
        return NULL;
    }
    if (!ks->url.has_password && !ks->url.user[0])
        return c;
    const char *argv[3] = { "AUTH" };
    int argc = 1;
    if (ks->url.user[0])
        argv[argc++] = ks->url.user;
    argv[argc++] = ks->url.password;
    redisReply *r = syncconn_command(c, argc, argv, why, sizeof why);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        /* the node's words for a refused login never quote the password */
        snprintf(err, errlen, "%s:%d: login refused: %.200s", host, port,
                 r ? r->str : why);
        freeReplyObject(r);
        syncconn_close(c);
        return NULL;
    }
    freeReplyObject(r);
    return c;
}

static redisReply *node_cmd(struct syncconn *c, const char *addr, int argc, const char **argv,
                            char *err, size_t errlen)
{
    char why[300];
    redisReply *r = syncconn_command(c, argc, argv, why, sizeof why);
    if (!r)
        snprintf(err, errlen, "%s: %s", addr, why);
    else if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "%s: %s: %.200s", addr, argv[0], r->str);
        freeReplyObject(r);
        r = NULL;
    }
    return r;
}

/* The index of the node at host:port, or -1. */
static int node_index(const struct keyspace *ks, const char *host, int port)
{
    char addr[KEYSPACE_ADDR_MAX];
    snprintf(addr, sizeof addr, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    for (int i = 0; i < ks->nnodes; i++)
        if (strcmp(ks->addr[i], addr) == 0)
            return i;
    return -1;
}

static int add_node(struct keyspace *ks, const char *host, int port, char *err, size_t errlen)
{
    char addr[KEYSPACE_ADDR_MAX];
    snprintf(addr, sizeof addr, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    if (node_index(ks, host, port) >= 0)
        return 0;
    if (ks->nnodes == KEYSPACE_NODES_MAX) {
        snprintf(err, errlen, "more than %d masters", KEYSPACE_NODES_MAX);
        return -1;
    }
    struct syncconn *c = node_open(ks, host, port, err, errlen);
    if (!c)
        return -1;
    snprintf(ks->addr[ks->nnodes], KEYSPACE_ADDR_MAX, "%s", addr);
    ks->node[ks->nnodes++] = c;
    return 0;
}

/* Every master in the first node's CLUSTER SLOTS (an empty host: the
 * first node's). */
static int add_masters(struct keyspace *ks, char *err, size_t errlen)
{
    const char *argv[2] = { "CLUSTER", "SLOTS" };
    redisReply *r = node_cmd(ks->node[0], ks->addr[0], 2, argv, err, errlen);
    if (!r)
        return -1;
    struct syncconn *first = ks->node[0];
    ks->nnodes = 0;
    for (int s = 0; s < SLOT_COUNT; s++)
        ks->slot_node[s] = -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *range = r->element[i], *m;
        if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
            (m = range->element[2])->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
            m->element[0]->type != REDIS_REPLY_STRING || m->element[1]->type != REDIS_REPLY_INTEGER) {
            snprintf(err, errlen, "malformed CLUSTER SLOTS reply");
            rc = -1;
            break;
        }
        const char *host = m->element[0]->len ? m->element[0]->str : ks->url.host;
        rc = add_node(ks, host, (int)m->element[1]->integer, err, errlen);
        long long lo = range->element[0]->integer, hi = range->element[1]->integer;
        for (long long s = lo < 0 ? 0 : lo; rc == 0 && s <= hi && s < SLOT_COUNT; s++)
            ks->slot_node[s] = (short)node_index(ks, host, (int)m->element[1]->integer);
    }
    freeReplyObject(r);
    syncconn_close(first);
    if (rc == 0 && ks->nnodes == 0) {
        snprintf(err, errlen, "the cluster has no slot assigned");
        rc = -1;
    }
    return rc;
}

static int tls_setup(struct keyspace *ks, const struct keyspace_tls *t, char *err, size_t errlen)
{
    struct tls_cluster_opts o = {
        .cert_file = t ? t->cert_file : NULL, .key_file = t ? t->key_file : NULL,
        .ca_cert_file = t ? t->ca_cert_file : NULL, .insecure = t ? t->insecure : 0,
    };
    ks->tls = tls_cluster_ctx(&o, err, errlen);
    return ks->tls ? 0 : -1;
}

int keyspace_open(struct keyspace *ks, const char *url, const struct keyspace_tls *tls,
                  char *err, size_t errlen)
{
    memset(ks, 0, sizeof *ks);
    ks->tls_opts = tls;
    if (url_parse(url, &ks->url, err, errlen) < 0)
        return -1;
    if (ks->url.tls && tls_setup(ks, tls, err, errlen) < 0)
        return -1;
    if (add_node(ks, ks->url.host, ks->url.port, err, errlen) < 0)
        return -1;
    const char *info[2] = { "INFO", "cluster" };
    redisReply *r = node_cmd(ks->node[0], ks->addr[0], 2, info, err, errlen);
    if (!r)
        return -1;
    ks->cluster = r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_enabled:1");
    freeReplyObject(r);
    if (ks->cluster)
        return add_masters(ks, err, errlen);
    if (ks->url.db) {
        char db[16];
        snprintf(db, sizeof db, "%d", ks->url.db);
        const char *select[2] = { "SELECT", db };
        if (!(r = node_cmd(ks->node[0], ks->addr[0], 2, select, err, errlen)))
            return -1;
        freeReplyObject(r);
    }
    return 0;
}

void keyspace_close(struct keyspace *ks)
{
    for (int i = 0; i < ks->nnodes; i++)
        syncconn_close(ks->node[i]);
    ks->nnodes = 0;
    if (ks->tls)
        SSL_CTX_free(ks->tls);
    ks->tls = NULL;
}

static void batch_clear(struct keyspace_batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->name[i]);
    b->n = 0;
}

void keyspace_batch_free(struct keyspace_batch *b)
{
    batch_clear(b);
    free(b->name);
    free(b->len);
    memset(b, 0, sizeof *b);
}

static int batch_add(struct keyspace_batch *b, const char *name, size_t len)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 1024;
        char **names = realloc(b->name, cap * sizeof *names);
        if (names)
            b->name = names;
        size_t *lens = names ? realloc(b->len, cap * sizeof *lens) : NULL;
        if (!lens)
            return -1;
        b->len = lens;
        b->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, name, len);
    copy[len] = '\0';
    b->name[b->n] = copy;
    b->len[b->n++] = len;
    return 0;
}

long long keyspace_scan(struct keyspace *ks, int i, long long cursor, const char *match,
                        struct keyspace_batch *b, char *err, size_t errlen)
{
    char cur[32];
    snprintf(cur, sizeof cur, "%lld", cursor);
    const char *argv[6] = { "SCAN", cur, "MATCH", match, "COUNT", "1000" };
    batch_clear(b);
    redisReply *r = node_cmd(ks->node[i], ks->addr[i], 6, argv, err, errlen);
    if (!r)
        return -1;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
        snprintf(err, errlen, "%s: malformed SCAN reply", ks->addr[i]);
        freeReplyObject(r);
        return -1;
    }
    long long next = strtoll(r->element[0]->str, NULL, 10);
    const redisReply *keys = r->element[1];
    for (size_t k = 0; next >= 0 && k < keys->elements; k++)
        if (keys->element[k]->type == REDIS_REPLY_STRING &&
            batch_add(b, keys->element[k]->str, keys->element[k]->len) < 0) {
            snprintf(err, errlen, "out of memory");
            next = -1;
        }
    freeReplyObject(r);
    return next;
}

int keyspace_node_of(const struct keyspace *ks, const char *name, size_t len)
{
    return ks->cluster ? ks->slot_node[slot_of(name, len)] : 0;
}

void keyspace_prefix_match(const char *prefix, char *out, size_t size)
{
    size_t n = 0;
    for (const char *p = prefix; *p && n + 4 < size; p++) {
        if (strchr("*?[]\\", *p))
            out[n++] = '\\';
        out[n++] = *p;
    }
    snprintf(out + n, size - n, ":*");
}
