/*
 * txclass: how a command is queued inside MULTI (tx.h runs the
 * transaction). A family gives each command it registers its class (struct
 * route's in_multi, route.h); the commands the router plans itself take
 * their plan's (txclass_of).
 */
#ifndef TAGPROXY_TXCLASS_H
#define TAGPROXY_TXCLASS_H

#include "lib/proto/command.h"
#include "proxy/core/route.h"

enum tx_class {
    TXC_OTHER = 0,      /* answered by the proxy or on every master: not in MULTI */
    TXC_TX,             /* MULTI EXEC DISCARD WATCH UNWATCH */
    TXC_BLOCKING,       /* a blocking command (XREAD only with BLOCK) */
    TXC_WAIT,           /* WAIT (wait.h) */
    TXC_WAITAOF,        /* WAITAOF (wait.h), once the cluster teaches it */
    TXC_FORWARD,        /* keys of one slot, to one master: queueable */
    TXC_SPLIT,          /* MGET-style: queueable (one slot at EXEC) */
    TXC_NODE_LOCAL,     /* PING ECHO TIME: queueable, the node answers in EXEC */
    TXC_SCRIPT,         /* EVAL* FCALL*: queueable (EVALSHA as EVAL when the body is known) */
    TXC_PROXY,          /* answered by the proxy from its own state (SELECT, AUTH,
                           HELLO, CLIENT, CLUSTER SLOTS, COMMAND ...): queueable, run
                           at EXEC */
    TXC_IMMEDIATE,      /* QUIT: runs even inside MULTI */
    TXC_RESET           /* RESET: also ends MULTI and WATCH */
};

/* A command the proxy answers from what the masters say (INFO, DBSIZE,
 * KEYS, ...): queued inside MULTI, asked at EXEC. */
#define ROUTE_ASKING(name, fn) \
    { name, { .plan = ROUTE_FAMILY, .run = fn, .in_multi = TXC_PROXY, .keyless = 1, \
              .asks_masters = 1 } }

/* The class of cmd, whose route is rt: its family's, or its plan's (a
 * command the cluster taught with the all-shards tip is fanned out by the
 * router: not in MULTI). */
static inline enum tx_class txclass_of(const struct route *rt, const struct command *cmd)
{
    switch (rt->plan) {
    case ROUTE_FAMILY:
        return (enum tx_class)rt->in_multi;
    case ROUTE_FORWARD:
        return cmd->learned_index && (cmd->tips & CMD_TIP_REQUEST_ALL_SHARDS) ? TXC_OTHER
                                                                              : TXC_FORWARD;
    case ROUTE_SPLIT:
        return TXC_SPLIT;
    default:
        return TXC_OTHER;
    }
}

#endif
