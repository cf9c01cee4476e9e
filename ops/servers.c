/*
 * servers: what each master runs. See servers.h.
 */
#include "ops/servers.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cluster/node.h"
#include "cluster/syncconn.h"

#define SERVERS_MAX 1024        /* masters remembered; past it, the oldest ask goes */

struct asked {
    char addr[TOPO_ADDR_MAX];   /* the target connected to */
    char id[48];
    struct topology_server server;
    uint64_t at_ms;             /* 0: a free entry */
};

static struct asked asked[SERVERS_MAX];     /* the control thread's only */

/* The value of field in text ("field:value\r\n"), into out; 0 when absent. */
static int field_of(const char *text, const char *field, char *out, size_t cap)
{
    size_t n = strlen(field);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, field, n) == 0 && l[n] == ':') {
            size_t len = strcspn(l + n + 1, "\r\n");
            snprintf(out, cap, "%.*s", (int)len, l + n + 1);
            return 1;
        }
    }
    return 0;
}

int servers_parse_info(const char *text, struct topology_server *out)
{
    memset(out, 0, sizeof *out);
    if (!field_of(text, "redis_version", out->redis_version, sizeof out->redis_version))
        return -1;
    if (!field_of(text, "server_name", out->name, sizeof out->name))
        snprintf(out->name, sizeof out->name, "redis");
    char own[40];
    snprintf(out->version, sizeof out->version, "%s",
             field_of(text, "valkey_version", own, sizeof own) ? own : out->redis_version);
    return 0;
}

/* "7.2.4" against "7.10.0", number by number (what follows a number
 * other than a dot, "-rc1", ends the comparison there). */
static int version_cmp(const char *a, const char *b)
{
    for (;;) {
        char *ea, *eb;
        long x = strtol(a, &ea, 10), y = strtol(b, &eb, 10);
        if (x != y)
            return x < y ? -1 : 1;
        if (ea == a && eb == b)
            return 0;
        a = *ea == '.' ? ea + 1 : ea;
        b = *eb == '.' ? eb + 1 : eb;
    }
}

int servers_compare(const struct topology_server *a, const struct topology_server *b)
{
    int c = version_cmp(a->redis_version, b->redis_version);
    return c ? c : version_cmp(a->version, b->version);
}

static struct asked *find(const struct topology_node *n)
{
    for (int i = 0; i < SERVERS_MAX; i++)
        if (asked[i].at_ms && strcmp(asked[i].addr, n->target) == 0 &&
            strcmp(asked[i].id, n->id) == 0)
            return &asked[i];
    return NULL;
}

/* A free entry, or the one asked longest ago. */
static struct asked *room(void)
{
    struct asked *oldest = &asked[0];
    for (int i = 0; i < SERVERS_MAX; i++) {
        if (!asked[i].at_ms)
            return &asked[i];
        if (asked[i].at_ms < oldest->at_ms)
            oldest = &asked[i];
    }
    return oldest;
}

/* n's INFO server into *out: 0, or -1 (logged) when it does not say. */
static int ask(const struct topology_source *src, const struct topology_node *n,
               struct topology_server *out)
{
    char why[300];
    const char *argv[] = { "INFO", "server" };
    struct syncconn *c = topology_dial(src, n->target, why, sizeof why);
    redisReply *r = c ? syncconn_command(c, 2, argv, why, sizeof why) : NULL;
    int rc = -1;
    if (r && r->type == REDIS_REPLY_STRING)
        rc = servers_parse_info(r->str, out);
    else if (r)
        snprintf(why, sizeof why, "INFO server answered %.100s",
                 r->type == REDIS_REPLY_ERROR ? r->str : "no text");
    if (rc < 0 && r && r->type == REDIS_REPLY_STRING)
        snprintf(why, sizeof why, "INFO server has no redis_version");
    if (rc < 0)
        log_warning("topology", "master %s: what it runs is not known: %s", n->announced, why);
    if (r)
        freeReplyObject(r);
    if (c)
        syncconn_close(c);
    return rc;
}

/* What n runs now, or what it said last when it does not answer (NULL:
 * it never said). */
static const struct topology_server *learn_one(const struct topology_source *src,
                                               const struct topology_node *n, uint64_t now)
{
    struct asked *a = find(n);
    struct topology_server s;
    if (ask(src, n, &s) < 0)
        return a ? &a->server : NULL;
    if (!a) {
        a = room();
        snprintf(a->addr, sizeof a->addr, "%s", n->target);
        snprintf(a->id, sizeof a->id, "%s", n->id);
    } else if (servers_compare(&a->server, &s) != 0 || strcmp(a->server.name, s.name) != 0) {
        log_notice("topology", "master %s now runs %s %s", n->announced, s.name, s.version);
    }
    a->server = s;
    a->at_ms = now;
    return &a->server;
}

void servers_learn(const struct topology_source *src, struct topology *t)
{
    uint64_t now = node_now_ms();
    struct topology_server lowest = { "", "", "" };
    for (int i = 0; i < t->nnodes; i++) {
        const struct topology_server *s = learn_one(src, &t->nodes[i], now);
        if (s && (!lowest.name[0] || servers_compare(s, &lowest) < 0))
            lowest = *s;
    }
    if (lowest.name[0])
        t->server = lowest;
}
