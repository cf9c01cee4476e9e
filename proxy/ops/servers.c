/*
 * servers: what each master runs. See servers.h.
 */
#include "proxy/ops/servers.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/log.h"
#include "cluster/node.h"
#include "cluster/learned.h"
#include "cluster/syncconn.h"
#include "lib/proto/cmdinfo.h"

#define SERVERS_MAX 1024        /* masters remembered; past it, the oldest ask goes */

struct asked {
    char addr[TOPO_ADDR_MAX];   /* the target connected to */
    char id[48];
    struct topology_server server;
    uint64_t at_ms;             /* 0: a free entry */
    struct learned_master commands;     /* its COMMAND, as of commands_of */
    struct topology_server commands_of; /* the server that said them ("": never) */
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

int servers_compare(const struct topology_server *a, const struct topology_server *b)
{
    int c = topology_version_cmp(a->redis_version, b->redis_version);
    return c ? c : topology_version_cmp(a->version, b->version);
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

/* n's reply to one command, on a connection of its own: the reply (free
 * it), or NULL with why. */
static redisReply *ask_node(const struct topology_source *src, const struct topology_node *n,
                            int argc, const char **argv, char *why, size_t whylen)
{
    struct syncconn *c = topology_dial(src, n->target, why, whylen);
    redisReply *r = c ? syncconn_command(c, argc, argv, why, whylen) : NULL;
    if (c)
        syncconn_close(c);
    if (r && r->type == REDIS_REPLY_ERROR) {
        snprintf(why, whylen, "%s answered %.100s", argv[0], r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* n's INFO server into *out: 0, or -1 (logged) when it does not say. */
static int ask(const struct topology_source *src, const struct topology_node *n,
               struct topology_server *out)
{
    char why[300];
    const char *argv[] = { "INFO", "server" };
    redisReply *r = ask_node(src, n, 2, argv, why, sizeof why);
    int rc = -1;
    if (r && r->type == REDIS_REPLY_STRING && (rc = servers_parse_info(r->str, out)) < 0)
        snprintf(why, sizeof why, "INFO server has no redis_version");
    else if (r && r->type != REDIS_REPLY_STRING)
        snprintf(why, sizeof why, "INFO server answered no text");
    if (rc < 0)
        log_warning("topology", "master %s: what it runs is not known: %s", n->announced, why);
    if (r)
        freeReplyObject(r);
    return rc;
}

/* The entries of a COMMAND reply into *out (parsed with cmdinfo; one that
 * is not an entry is logged and left out): 0, or -1 out of memory. */
static int take_commands(const struct topology_node *n, const redisReply *r,
                         struct learned_master *out)
{
    out->commands = calloc(r->elements ? r->elements : 1, sizeof *out->commands);
    out->n = 0;
    for (size_t i = 0; out->commands && i < r->elements; i++) {
        char bad[200];
        struct command *cmd = cmdinfo_parse(r->element[i], NULL, bad, sizeof bad);
        if (cmd)
            out->commands[out->n++] = cmd;
        else
            log_warning("topology", "master %s: a COMMAND entry is left out: %s", n->announced,
                        bad);
    }
    return out->commands ? 0 : -1;
}

/* n's COMMAND into *out: 0, or -1 (logged). */
static int ask_commands(const struct topology_source *src, const struct topology_node *n,
                        struct learned_master *out)
{
    char why[300] = "out of memory";
    const char *argv[] = { "COMMAND" };
    redisReply *r = ask_node(src, n, 1, argv, why, sizeof why);
    int rc = -1;
    if (r && r->type == REDIS_REPLY_ARRAY)
        rc = take_commands(n, r, out);
    else if (r)
        snprintf(why, sizeof why, "COMMAND answered no array");
    if (rc < 0)
        log_warning("topology", "master %s: its commands are not known: %s", n->announced,
                    why);
    if (r)
        freeReplyObject(r);
    return rc;
}

/* The same server, name and versions? */
static int same_server(const struct topology_server *a, const struct topology_server *b)
{
    return servers_compare(a, b) == 0 && strcmp(a->name, b->name) == 0;
}

/* a's commands, asked again when the server that said them changed (the
 * old ones stay allocated: learned.h). */
static void refresh_commands(const struct topology_source *src, const struct topology_node *n,
                             struct asked *a)
{
    if (a->commands_of.name[0] && same_server(&a->commands_of, &a->server))
        return;
    struct learned_master m = { NULL, 0 };
    if (ask_commands(src, n, &m) == 0) {
        a->commands = m;
        a->commands_of = a->server;
    }
}

/* What n runs now, or what it said last when it does not answer (NULL:
 * it never said). */
static struct asked *learn_one(const struct topology_source *src,
                               const struct topology_node *n, uint64_t now)
{
    struct asked *a = find(n);
    struct topology_server s;
    if (ask(src, n, &s) < 0)
        return a;
    if (!a) {
        a = room();
        snprintf(a->addr, sizeof a->addr, "%s", n->target);
        snprintf(a->id, sizeof a->id, "%s", n->id);
    } else if (!same_server(&a->server, &s)) {
        log_notice("topology", "master %s now runs %s %s", n->announced, s.name, s.version);
    }
    a->server = s;
    a->at_ms = now;
    refresh_commands(src, n, a);
    return a;
}

static void say_verbose(const char *line)
{
    log_verbose("topology", "%s", line);
}

/* The cluster's learned set for masters[0..n) (each what servers_learn
 * found, NULL where a master never answered), lowest the oldest: the last
 * set again when every master's commands are the ones it was built from. */
static const struct learned_set *learned_of(struct asked *const *masters, int n, int lowest)
{
    static const struct learned_set *last;
    static struct learned_master *last_from;    /* the commands last was built from */
    static int last_n;
    struct learned_master *from = calloc(n > 0 ? (size_t)n : 1, sizeof *from);
    if (!from)
        return last;
    for (int i = 0; i < n; i++)
        if (masters[i])
            from[i] = masters[i]->commands;
    if (last && last_n == n && memcmp(from, last_from, sizeof *from * (size_t)n) == 0) {
        free(from);
        return last;
    }
    const struct learned_set *s = learned_build(from, n, lowest);
    if (!s) {
        free(from);
        return last;
    }
    log_notice("topology", "the cluster knows %d command(s) the proxy's table lacks; %d of the "
               "table's it describes otherwise", s->ncommands, s->noverrides);
    learned_log(s, say_verbose);
    free(last_from);
    last_from = from;
    last_n = n;
    last = s;
    return s;
}

void servers_learn(const struct topology_source *src, struct topology *t)
{
    uint64_t now = node_now_ms();
    struct topology_server lowest = { "", "", "", "" };
    int lowest_at = -1;
    struct asked **masters = calloc(t->nnodes > 0 ? (size_t)t->nnodes : 1, sizeof *masters);
    if (!masters)
        return;
    for (int i = 0; i < t->nnodes; i++) {
        struct asked *a = masters[i] = learn_one(src, &t->nodes[i], now);
        if (a && (!lowest.name[0] || servers_compare(&a->server, &lowest) < 0)) {
            lowest = a->server;
            snprintf(lowest.addr, sizeof lowest.addr, "%s", t->nodes[i].announced);
            lowest_at = i;
        }
    }
    if (lowest.name[0])
        t->server = lowest;
    t->learned = learned_of(masters, t->nnodes, lowest_at);
    free(masters);
}
