/*
 * route: how each command of the command table is run, by its table entry.
 *
 * The router plans the commands it owns itself: forwarded by their keys,
 * split by slot, sent to every master, or refused. Each command family
 * (local commands, transactions and blocking commands, pub/sub, scripts,
 * MONITOR) registers the commands it serves with its handler once at start,
 * before any worker runs (families.c). Dispatch is then one array load by
 * command_index(), and no module matches command names to find its work.
 *
 *   families_init ── route_register(entries) ──► routes[command_index]
 *   router_dispatch ── route_of(cmd) ──► plan it, or route->run(r)
 *
 * Every command no entry names is forwarded by its keys, or, with the admin
 * flag, sent to one master when dangerous commands are on.
 */
#ifndef TAGPROXY_ROUTE_H
#define TAGPROXY_ROUTE_H

struct command;
struct merge;
struct request;

enum route_plan {
    ROUTE_FORWARD = 0,      /* by its keys */
    ROUTE_SPLIT,            /* MGET-style: split by slot, merged by route.merge */
    ROUTE_EVERYWHERE,       /* every master, when dangerous commands are on */
    ROUTE_DANGEROUS,        /* one master, when dangerous commands are on */
    ROUTE_REFUSED,          /* cannot mean the same thing through a proxy: route.why */
    ROUTE_FAMILY            /* run by its family's handler, route.run */
};

struct route {
    enum route_plan plan;
    void (*run)(struct request *r);     /* ROUTE_FAMILY */
    void (*refuse)(struct request *r, const char *why);    /* NULL, or how the family
                                           answers when the router refuses r (EXEC) */
    unsigned char in_multi;             /* ROUTE_FAMILY: how it is queued inside MULTI,
                                           a class the transaction family defines
                                           (families/txclass.h); 0: it is not */
    const struct merge *merge;          /* ROUTE_SPLIT: how the parts' replies combine
                                           (merge.h) */
    int step;                           /* ROUTE_SPLIT: arguments per key (MSET: 2) */
    const char *why;                    /* ROUTE_REFUSED: the reason */
    const char *multi_why;              /* not queued: why it is refused inside MULTI,
                                           when not for the usual reason */
    unsigned keyless : 1;               /* the router leaves its arguments to the key
                                           layout's rewriting alone (the family reads
                                           any key names itself) */
    unsigned asks_masters : 1;          /* one the proxy answers whose answer needs
                                           the masters (INFO, DBSIZE, KEYS, ...) */
};

/* A command the proxy answers itself (the key layout leaves its arguments
 * alone), queued inside MULTI as cls. */
#define ROUTE_LOCAL(name, fn, cls) \
    { name, { .plan = ROUTE_FAMILY, .run = fn, .in_multi = cls, .keyless = 1 } }

/* A registration: name is "get", "client|setname", or "cluster|*" for every
 * subcommand of cluster that no entry names on its own (whatever the order
 * of the registrations). A name the command table does not hold takes
 * effect when the cluster teaches the command (route_of_learned). */
struct route_entry {
    const char *name;
    struct route route;
};

/* Build the table (every command forwarded or dangerous by its flags) once,
 * before any registration. 0, or -1 out of memory. */
int route_init(void);

/* Set the routes of n entries. Before any worker runs. */
void route_register(const struct route_entry *entries, int n);

/* The route of a command or subcommand of the table, or of one learned
 * from the cluster (cluster/learned.h): a family's registration of its
 * name (the table lacks it: "client|setinfo" of Redis 7.2), else
 * forwarded by its keys (an admin command: dangerous). */
const struct route *route_of(const struct command *cmd);

/* A family's route for learned cmd, registered by name, or NULL. */
const struct route *route_of_learned(const struct command *cmd);

/* One of the core's registration tables (routes aside: client, request and
 * worker families) has no room left: a programming error, so the start
 * stops here, before any worker runs (raise the table's _MAX). */
void registration_full(const char *table, int max) __attribute__((noreturn));

/* The route a blocking read (XREAD/XREADGROUP with BLOCK) takes instead of
 * its forwarding one: set by the family that runs blocking commands. */
void route_register_blocking_read(const struct route *rt);
const struct route *route_blocking_read(void);

#endif
