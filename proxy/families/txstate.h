/*
 * txstate: a client's state in the tx family (tx.h): its MULTI block
 * (multi.h), its WATCH, the dedicated connection that WATCH and blocking
 * commands pin (dedicated.h), and the order of its requests across lanes
 * (lane.h). Made on a client's first use of the family, freed with it;
 * shared by tx.c, multi.c and blocking.c.
 */
#ifndef TAGPROXY_TXSTATE_H
#define TAGPROXY_TXSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/config/acl.h"
#include "proxy/families/lane.h"

struct client;
struct dedicated;
struct evbuffer;
struct node_conn;
struct request;
struct tx_local;
struct userconn;
struct wait_op;

/* The writes of a restricted user's transaction that the index script
 * wraps, as they were: should a script of the user's be queued too, the
 * block runs as the user's node user, which may not run the index script,
 * so they go as they came and their records' indexes are kept once EXEC
 * has run, as a script's are (exec_unwrap). */
struct tx_unwrap {
    size_t off, len;                /* the wrapped command in tx->queued */
    size_t orig_len;                /* the command as it was, next in bytes */
    int index;                      /* its place in the block */
};

struct tx_unwrapped {
    struct tx_unwrap *at;
    int n, cap;
    struct evbuffer *bytes;         /* the commands as they were, in order */
    struct evbuffer *keys;          /* their records' keys (as tx->upkeep) */
};

/* The keys a client WATCHes, each once (CLIENT LIST's watch=: Redis
 * counts a key watched twice once): their names' hashes, sorted. */
struct tx_watched {
    uint64_t *hash;
    int n, cap;
};

struct tx_state {
    /* MULTI */
    unsigned in_multi : 1;
    unsigned dirty : 1;             /* a command was refused: EXEC aborts */
    unsigned watching : 1;
    unsigned blocking : 1;          /* a blocking command runs on dconn */
    unsigned index_script : 1;      /* a queued write runs the index_write script */
    unsigned writes : 1;            /* a queued command may write */
    struct tx_watched watched;      /* while watching */
    struct userconn *script_as;     /* a queued script runs as this node user
                                       (userconn.h): so does the block */
    char rules_at_multi[ACL_NODE_USER_LEN];  /* the user's rules when MULTI came:
                                       its node user, "" for every right */
    int nqueued;
    int slot;                       /* of the queued keys; -1 none yet */
    struct evbuffer *queued;        /* the queued commands' bytes */
    unsigned char *fix;             /* per queued command: TX_FIX_* (layout only) */
    int fixcap;
    unsigned fix_any : 1;
    struct evbuffer *upkeep;        /* keys of queued scripts that may write (key_list) */
    struct tx_unwrapped unwrapped;  /* a restricted user's writes in the index script */
    struct tx_local *locals;        /* queued TXC_PROXY commands (txexec.h) */
    int nlocal, localcap;
    size_t local_bytes;
    char crossslot_why[200];        /* empty: the keys share a slot */
    /* WATCH and blocking commands */
    int watch_slot;
    struct dedicated *dconn;        /* pinned by WATCH, or running a blocking command */
    struct lanes lanes;             /* the order of its requests across lanes */
    struct wait_op *wait;           /* its WAIT under way (wait.h), or NULL */
};

/* Before any worker starts: the id the tx family's registration as a
 * client family gave (client.h), under which a client keeps its state. */
void txstate_family(int id);

/* c's state, or NULL. */
struct tx_state *txstate_of(const struct client *c);

/* c's state, made on first use (client_family_set: CLIENT LIST reads it);
 * NULL when out of memory. */
struct tx_state *txstate_get(struct client *c);

/* c's state freed. */
void txstate_free(struct client *c);

/* WATCH is over: the watched keys forgotten. */
void txstate_watch_end(struct tx_state *tx);

/* r's keys are WATCHed now: counted, each once (out of memory: not all). */
void txstate_watch_note(struct tx_state *tx, struct request *r);

/* Give the dedicated connection back (clearing a watch first). */
void txstate_drop_dconn(struct tx_state *tx);

/* The lane of the dedicated connection, or LANE_NEW without one. */
const void *txstate_dconn_lane(const struct tx_state *tx);

/* The connection r goes on when it is not the shared one (router.h:
 * router_register_conns); NULL with *why. */
struct node_conn *txstate_conn_for(struct request *r, int node, const char **why);

#endif
