/*
 * commandcmd: COMMAND and its subcommands, from the command table as
 * redis-server 7.0 writes its entries. See commandcmd.h.
 */
#include "families/commandcmd.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/request.h"
#include "core/route.h"
#include "proto/command.h"
#include "proto/resp.h"

/* c's COMMAND INFO entry, or its COMMAND DOCS name and docs, to b in the
 * client's protocol, from the bytes redis-server writes in it. */
static void command_add_entry(struct evbuffer *b, struct request *r, const struct command *c,
                              int docs)
{
    size_t len;
    const char *p = docs ? command_docs_resp(c, request_resp(r), &len)
                         : command_info_resp(c, request_resp(r), &len);
    evbuffer_add(b, p, len);
}

/* COMMAND INFO is an array (a null for an unknown name), COMMAND DOCS a map
 * of name to docs (unknown names left out), as redis-server 7.0 writes them. */
static void command_docs_or_info(struct request *r, int docs)
{
    struct evbuffer *b = request_out(r);
    if (r->argc == 2) {                 /* all commands */
        if (docs)
            resp_add_map(b, request_resp(r), command_table_size);
        else
            resp_add_array(b, command_table_size);
        for (int i = 0; i < command_table_size; i++)
            command_add_entry(b, r, &command_table[i], docs);
        request_finish(r);
        return;
    }
    struct evbuffer *items = evbuffer_new();
    long long n = 0;
    for (int i = 2; i < r->argc; i++) {
        size_t len;
        const char *name = request_arg(r, i, &len);
        const char *bar = memchr(name, '|', len);
        const struct command *c = command_lookup(name, bar ? (size_t)(bar - name) : len);
        if (c && bar)
            c = command_lookup_sub(c, bar + 1, len - (size_t)(bar - name) - 1);
        if (c)
            command_add_entry(items, r, c, docs);
        else if (!docs)
            resp_add_null(items, request_resp(r));
        if (c || !docs)
            n++;
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
    const struct command *c = command_lookup(name, len);
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
    resp_add_array(request_out(r), command_table_size);
    for (int i = 0; i < command_table_size; i++)
        command_add_entry(request_out(r), r, &command_table[i], 0);
    request_finish(r);
}

static void command_count(struct request *r)
{
    resp_add_integer(request_out(r), command_table_size);
    request_finish(r);
}

static void command_info(struct request *r)
{
    command_docs_or_info(r, 0);
}

static void command_docs(struct request *r)
{
    command_docs_or_info(r, 1);
}

static void command_list(struct request *r)
{
    struct evbuffer *b = request_out(r);
    if (r->argc > 2) {
        request_fail(r, "ERR COMMAND LIST FILTERBY is not supported by the proxy");
        return;
    }
    long long n = command_table_size;
    for (int i = 0; i < command_table_size; i++)
        n += command_table[i].nsubcommands;
    resp_add_array(b, n);           /* subcommands too, as "parent|sub" */
    for (int i = 0; i < command_table_size; i++) {
        const struct command *c = &command_table[i];
        resp_add_bulk_str(b, c->fullname);
        for (int s = 0; s < c->nsubcommands; s++)
            resp_add_bulk_str(b, c->subcommands[s].fullname);
    }
    request_finish(r);
}

static void command_getkeysandflags(struct request *r)
{
    request_fail(r, "ERR COMMAND GETKEYSANDFLAGS is not supported by the proxy; use COMMAND GETKEYS");
}

static void command_help(struct request *r)
{
    resp_add_array(request_out(r), 1);
    resp_add_simple(request_out(r), "COMMAND [COUNT|INFO|DOCS|GETKEYS|LIST]: as Redis, answered by the proxy.");
    request_finish(r);
}


/* ---- routes ---- */

static const struct route_entry commandcmd_routes[] = {
    ROUTE_LOCAL("command", command_all, TXC_PROXY),
    ROUTE_LOCAL("command|count", command_count, TXC_PROXY),
    ROUTE_LOCAL("command|info", command_info, TXC_PROXY),
    ROUTE_LOCAL("command|docs", command_docs, TXC_PROXY),
    ROUTE_LOCAL("command|getkeys", command_getkeys, TXC_PROXY),
    ROUTE_LOCAL("command|getkeysandflags", command_getkeysandflags, TXC_PROXY),
    ROUTE_LOCAL("command|list", command_list, TXC_PROXY),
    ROUTE_LOCAL("command|help", command_help, TXC_PROXY),
};

void commandcmd_register(void)
{
    route_register(commandcmd_routes, (int)(sizeof commandcmd_routes / sizeof commandcmd_routes[0]));
}
