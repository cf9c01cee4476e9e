/*
 * commandcmd: COMMAND and its subcommands, from the cluster's commands or
 * the built-in table. See commandcmd.h.
 */
#include "proxy/families/commandcmd.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster/learned.h"
#include "proxy/core/merge.h"
#include "proxy/core/request.h"
#include "proxy/core/route.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "proxy/families/txclass.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"
#include "lib/proto/resp.h"

/*
 * The commands COMMAND answers with: once the cluster's are known, its
 * oldest master's (cluster/learned.h: every command it serves, newer ones
 * included, and the entries as that server writes them), else the
 * built-in table's (Redis 7.0's); both in name order.
 */
struct listing {
    const struct command *const *cluster;   /* NULL: the built-in table */
    int n;
};

static struct listing listing_of(const struct request *r)
{
    const struct learned_set *s = r->worker->topo ? r->worker->topo->learned : NULL;
    if (s && s->nall)
        return (struct listing){ s->all, s->nall };
    return (struct listing){ NULL, command_table_size };
}

static const struct command *listing_at(const struct listing *l, int i)
{
    return l->cluster ? l->cluster[i] : &command_table[i];
}

/* The command named name[0..len) ("get", "client|setinfo"), or NULL. */
static const struct command *listing_find(const struct request *r, const char *name, size_t len)
{
    const struct learned_set *s = r->worker->topo ? r->worker->topo->learned : NULL;
    const char *bar = memchr(name, '|', len);
    size_t top = bar ? (size_t)(bar - name) : len;
    const struct command *c = s && s->nall ? learned_any(s, name, top)
                                           : command_lookup(name, top);
    if (c && bar)
        c = command_lookup_sub(c, bar + 1, len - top - 1);
    return c;
}

/* c's COMMAND DOCS name and docs: its own, or the built-in entry's of the
 * same name (a cluster's entry has none: cmdinfo.h); 0 when there are none. */
static int add_docs(struct evbuffer *b, struct request *r, const struct command *c)
{
    size_t len;
    const char *p = command_docs_resp(c, request_resp(r), &len);
    if (!p) {
        const struct command *parent = c->parent ? command_lookup(c->parent->name,
                                                                  strlen(c->parent->name))
                                                 : NULL;
        const struct command *same = c->parent ? command_lookup_sub(parent, c->name,
                                                                  strlen(c->name))
                                             : command_lookup(c->name, strlen(c->name));
        p = same ? command_docs_resp(same, request_resp(r), &len) : NULL;
    }
    if (p)
        evbuffer_add(b, p, len);
    return p != NULL;
}

/* c's COMMAND INFO entry, in the client's protocol, as its server writes it. */
static void add_info(struct evbuffer *b, struct request *r, const struct command *c)
{
    size_t len;
    const char *p = command_info_resp(c, request_resp(r), &len);
    evbuffer_add(b, p, len);
}

/* COMMAND INFO is an array (a null for an unknown name), COMMAND DOCS a map
 * of name to docs (unknown names left out), as redis-server 7.0 writes them. */
static void command_docs_or_info(struct request *r, int docs)
{
    struct evbuffer *b = request_out(r), *items = evbuffer_new();
    long long n = 0;
    if (!items) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    if (r->argc == 2) {                 /* all commands */
        struct listing l = listing_of(r);
        for (int i = 0; i < l.n; i++) {
            if (docs)
                n += add_docs(items, r, listing_at(&l, i));
            else
                add_info(items, r, listing_at(&l, i));
        }
        n = docs ? n : l.n;
    }
    for (int i = 2; i < r->argc; i++) {
        size_t len;
        const char *name = request_arg(r, i, &len);
        const struct command *c = listing_find(r, name, len);
        if (c && docs)
            n += add_docs(items, r, c);
        else if (c)
            add_info(items, r, c);
        else if (!docs)
            resp_add_null(items, request_resp(r));
        n += !docs;
    }
    if (docs)
        resp_add_map(b, request_resp(r), n);
    else
        resp_add_array(b, n);
    evbuffer_add_buffer(b, items);
    evbuffer_free(items);
    request_finish(r);
}

static void command_getkeys(struct request *r)
{
    size_t len;
    const char *name = request_arg(r, 2, &len);
    const struct command *c = listing_find(r, name, len);
    int argc = r->argc - 2;
    if (c && c->nsubcommands && argc >= 2) {
        const char *sub = request_arg(r, 3, &len);
        c = command_lookup_sub(c, sub, len);
    }
    if (!c) {
        request_fail(r, "ERR Invalid command specified");
        return;
    }
    if (!command_has_keys(c)) {
        request_fail(r, "ERR The command has no key arguments");
        return;
    }
    if (!command_arity_ok(c, argc)) {
        request_fail(r, "ERR Invalid number of arguments specified for command");
        return;
    }
    int *keys = malloc(sizeof *keys * (size_t)argc);
    int n = keys ? command_keys(c, r->data, r->args + 2, argc, keys, argc) : -1;
    if (n <= 0 && !(n == 0 && (c->flags & CMD_NO_MANDATORY_KEYS))) {
        request_fail(r, "ERR Invalid arguments specified for command");
    } else {
        resp_add_array(request_out(r), n);
        for (int i = 0; i < n; i++)
            request_reply_arg(r, 2 + keys[i]);
        request_finish(r);
    }
    free(keys);
}

static void command_all(struct request *r)
{
    struct listing l = listing_of(r);
    resp_add_array(request_out(r), l.n);
    for (int i = 0; i < l.n; i++)
        add_info(request_out(r), r, listing_at(&l, i));
    request_finish(r);
}

static void command_count(struct request *r)
{
    resp_add_integer(request_out(r), listing_of(r).n);
    request_finish(r);
}

static void command_info(struct request *r)
{
    command_docs_or_info(r, 0);
}

/*
 * r as the client sent it to the master COMMAND's listing is from (the
 * cluster's oldest: learned.h), its reply for the client's: what that
 * server answers is the cluster's own answer, docs and help text as its
 * build writes them. 0 when the cluster's commands are not known yet (r
 * is the caller's to answer).
 */
static int ask_oldest(struct request *r)
{
    const struct topology *t = r->worker->topo;
    int node = t->learned && t->learned->nall && t->server.addr[0]
             ? topology_find(t, t->server.addr) : -1;
    if (node < 0)
        return 0;
    size_t *lens;
    const char **argv = request_argv_new(r, &lens);
    if (!argv) {
        request_fail(r, REPLY_ERR_OOM);
        return 1;
    }
    if (router_parts_open(r, &merge_all_ok, 1) == 0) {
        router_part_send(r, node, r->argc, argv, lens);
        request_parts_sent(r);
    }
    free(argv);
    return 1;
}

static void command_docs(struct request *r)
{
    if (!ask_oldest(r))
        command_docs_or_info(r, 1);
}

static void command_list(struct request *r)
{
    struct evbuffer *b = request_out(r);
    if (r->argc > 2 && ask_oldest(r))       /* FILTERBY */
        return;
    if (r->argc > 2) {
        request_fail(r, "ERR COMMAND LIST FILTERBY is not supported by the proxy until it "
                        "knows the cluster's commands");
        return;
    }
    struct listing l = listing_of(r);
    long long n = l.n;
    for (int i = 0; i < l.n; i++)
        n += listing_at(&l, i)->nsubcommands;
    resp_add_array(b, n);           /* subcommands too, as "parent|sub" */
    for (int i = 0; i < l.n; i++) {
        const struct command *c = listing_at(&l, i);
        resp_add_bulk_str(b, c->fullname);
        for (int s = 0; s < c->nsubcommands; s++)
            resp_add_bulk_str(b, c->subcommands[s].fullname);
    }
    request_finish(r);
}

static void command_getkeysandflags(struct request *r)
{
    if (!ask_oldest(r))
        request_fail(r, "ERR COMMAND GETKEYSANDFLAGS is not supported by the proxy until it "
                        "knows the cluster's commands; use COMMAND GETKEYS");
}

static void command_help(struct request *r)
{
    if (ask_oldest(r))
        return;
    resp_add_array(request_out(r), 1);
    resp_add_simple(request_out(r), "COMMAND [COUNT|INFO|DOCS|GETKEYS|LIST]: as Redis, answered by the proxy.");
    request_finish(r);
}


/* ---- routes ---- */

static const struct route_entry commandcmd_routes[] = {
    ROUTE_LOCAL("command", command_all, TXC_PROXY),
    ROUTE_LOCAL("command|count", command_count, TXC_PROXY),
    ROUTE_LOCAL("command|info", command_info, TXC_PROXY),
    ROUTE_ASKING("command|docs", command_docs),
    ROUTE_LOCAL("command|getkeys", command_getkeys, TXC_PROXY),
    ROUTE_ASKING("command|getkeysandflags", command_getkeysandflags),
    ROUTE_ASKING("command|list", command_list),
    ROUTE_ASKING("command|help", command_help),
};

void commandcmd_register(void)
{
    route_register(commandcmd_routes, (int)(sizeof commandcmd_routes / sizeof commandcmd_routes[0]));
}
