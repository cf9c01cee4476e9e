/*
 * route: the route of every command, by command index. See route.h.
 */
#include "proxy/core/route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/proto/command.h"

/* Where a command's route came from: a later registration replaces an
 * earlier one of the same origin or a weaker one, never a stronger one. */
enum origin { FROM_DEFAULT, FROM_WILDCARD, FROM_NAME };

static struct route *routes;
static unsigned char *origins;
static struct route blocking_read = { .plan = ROUTE_FORWARD };

int route_init(void)
{
    if (routes)
        return 0;
    command_index_init();
    int n = command_index_count();
    routes = calloc((size_t)n, sizeof *routes);
    origins = calloc((size_t)n, 1);
    if (!routes || !origins) {
        free(routes);
        free(origins);
        routes = NULL;
        origins = NULL;
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const struct command *cmd = command_by_index(i);
        int admin = cmd && (cmd->flags & CMD_ADMIN);
        routes[i].plan = admin ? ROUTE_DANGEROUS : ROUTE_FORWARD;
    }
    return 0;
}

static void put(const struct command *cmd, const struct route *rt, enum origin from)
{
    int i = command_index(cmd);
    if (origins[i] > from)
        return;
    routes[i] = *rt;
    origins[i] = (unsigned char)from;
}

/* Registrations of names the built-in table lacks (a newer server's
 * "client|setinfo"): their route once the cluster teaches the command
 * (cluster/learned.h). */
#define ROUTE_UNBUILT_MAX 32
static const struct route_entry *unbuilt[ROUTE_UNBUILT_MAX];
static int nunbuilt;

static void register_unbuilt(const struct route_entry *e)
{
    if (nunbuilt == ROUTE_UNBUILT_MAX)
        registration_full("routes of names the table lacks", ROUTE_UNBUILT_MAX);
    unbuilt[nunbuilt++] = e;
}

static void register_one(const struct route_entry *e)
{
    const char *bar = strchr(e->name, '|');
    size_t plen = bar ? (size_t)(bar - e->name) : strlen(e->name);
    const struct command *cmd = command_lookup(e->name, plen);
    if (!cmd) {
        register_unbuilt(e);
        return;
    }
    if (!bar) {
        put(cmd, &e->route, FROM_NAME);
    } else if (strcmp(bar + 1, "*") == 0) {
        for (int s = 0; s < cmd->nsubcommands; s++)
            put(&cmd->subcommands[s], &e->route, FROM_WILDCARD);
    } else if ((cmd = command_lookup_sub(cmd, bar + 1, strlen(bar + 1))) != NULL) {
        put(cmd, &e->route, FROM_NAME);
    } else {
        register_unbuilt(e);
    }
}

const struct route *route_of_learned(const struct command *cmd)
{
    for (int i = 0; i < nunbuilt; i++)
        if (strcmp(unbuilt[i]->name, cmd->fullname) == 0)
            return &unbuilt[i]->route;
    return NULL;
}

void route_register(const struct route_entry *entries, int n)
{
    for (int i = 0; i < n; i++)
        register_one(&entries[i]);
}

/* A command learned from the cluster (cluster/learned.h) that the router
 * serves: forwarded by its keys, or an admin command to one master when
 * dangerous commands are on, as a built-in one without a family. */
static const struct route *learned_route(const struct command *cmd)
{
    static const struct route forward = { .plan = ROUTE_FORWARD };
    static const struct route dangerous = { .plan = ROUTE_DANGEROUS };
    return cmd->flags & CMD_ADMIN ? &dangerous : &forward;
}

const struct route *route_of(const struct command *cmd)
{
    if (!cmd->learned_index)
        return &routes[command_index(cmd)];
    const struct route *named = route_of_learned(cmd);
    return named ? named : learned_route(cmd);
}

void route_register_blocking_read(const struct route *rt)
{
    blocking_read = *rt;
}

const struct route *route_blocking_read(void)
{
    return &blocking_read;
}

void registration_full(const char *table, int max)
{
    fprintf(stderr, "tagproxy: more than %d %s families registered\n", max, table);
    abort();
}
