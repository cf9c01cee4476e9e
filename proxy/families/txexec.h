/*
 * txexec: an EXEC under way (tx.h), and its replies.
 *
 * The block MULTI, commands, EXEC goes to one master, which answers +OK,
 * +QUEUED (or an error) per command before EXEC's array: the client sees
 * only EXEC's reply. A redirect among those replies means nothing ran: the
 * whole block follows it (after WATCH it cannot, and EXEC answers null, as
 * after a lost race). EXEC's array is rebuilt when the proxy has something
 * to put in it: key names mapped back to legacy names and null arrays
 * restored (the fixes, with a key layout), and the replies of the commands
 * the proxy answers itself (the locals) put in their places; the locals
 * that ask the masters (INFO, KEYS, ...) run once the array is in, after
 * the transaction, as Redis runs them inside it.
 */
#ifndef TAGPROXY_TXEXEC_H
#define TAGPROXY_TXEXEC_H

#include "proxy/core/request.h"

struct evbuffer;

/* Which node connection a request of the tx family (tx.h) goes on
 * (request.conn_kind; the router asks the family for every one but the
 * shared connection). */
enum tx_conn {
    TX_CONN_SHARED = 0,         /* the worker's multiplexed connection */
    TX_CONN_PREFER_PINNED,      /* the client's WATCH connection if it serves the slot */
    TX_CONN_DEDICATED,          /* a dedicated one (WATCH, blocking commands) */
    TX_CONN_PINNED_EXEC         /* a transaction after WATCH: that connection only */
};

/* What an element of EXEC's array needs, with a key layout: TX_FIX_SHAPE
 * holds 1 + the rewrite_reply_shape (rewrite.h) when the queued command's
 * reply names keys (mapped back to legacy names); TX_FIX_NULL_ARRAY when
 * it ran in the index script and Lua turned its null array (LPOP k n,
 * LMPOP, ZMPOP) into a null bulk. */
#define TX_FIX_SHAPE 0x07
#define TX_FIX_NULL_ARRAY 0x08

/* A TXC_PROXY command queued in MULTI: a detached copy (request.h), run
 * when EXEC's array comes back, its reply put in at pos, its place among
 * the queued commands; the node's block holds the others. */
struct tx_local {
    int pos;
    struct request *req;
};

struct tx_exec {
    unsigned char *fix;         /* per queued command: TX_FIX_* (NULL: none needed) */
    int nfix;                   /* the commands the block holds (the node's elements) */
    struct tx_local *locals;    /* the commands the proxy answers, by position */
    int nlocals;
    struct evbuffer *upkeep;    /* keys of its scripts that may write (tx.c) */
    struct evbuffer *held;      /* the node's array, while locals that ask the
                                   masters run */
    int waiting;                /* how many of those have not answered */
    char *block_redirect;       /* the first redirect among the block's replies */
};

/* r's EXEC state, made on first use and freed with r. NULL when out of
 * memory. */
struct tx_exec *txexec_of(struct request *r);

/* r's EXEC state, or NULL when r has none. */
struct tx_exec *txexec_get(const struct request *r);

/* The handling of EXEC's replies: r->hooks of an EXEC sent with its block. */
extern const struct request_hooks txexec_hooks;

/* The first of n locals that asks the masters (INFO, DBSIZE, KEYS, SCAN,
 * RANDOMKEY: their routes say so), or NULL. */
const struct request *txexec_first_asking(const struct tx_local *locals, int n);

/* Free n locals (their copies included). */
void txexec_locals_free(struct tx_local *locals, int n);

#endif
