/*
 * tx: what a client does beyond independent commands: MULTI/EXEC/DISCARD
 * transactions, WATCH/UNWATCH, and blocking commands (BLPOP, BRPOP, BLMOVE,
 * BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP, XREAD/XREADGROUP BLOCK).
 * A client gets this state (client->tx) the first time it uses one of them.
 *
 * MULTI    The proxy queues the commands itself (+QUEUED; arity and unknown
 *          commands answered as Redis does, which makes EXEC answer
 *          EXECABORT). At EXEC, if every key hashes to one slot, the block
 *          MULTI, commands, EXEC is written at once to that slot's master
 *          (keyless blocks: one master) and only EXEC's reply reaches the
 *          client; otherwise EXEC answers CROSSSLOT and nothing runs. A
 *          redirect inside the block (the node then answers EXECABORT:
 *          nothing ran) sends the whole block to the right node.
 * WATCH    Pins the client to a dedicated connection (dedicated.h) to the
 *          master of the watched keys' slot until EXEC, DISCARD, UNWATCH or
 *          the client leaving. Commands on that slot meanwhile go on it too
 *          (a consistent view); EXEC goes on it, so the node's null reply
 *          says a watched key changed. A watch the proxy cannot keep (the
 *          connection dropped, the slot moved) also makes EXEC null: nothing
 *          ran, the client retries, as after any lost race.
 * blocking A blocking command runs on a dedicated connection, so the node
 *          blocking does not stall the multiplexed ones; the node's silence
 *          limit grows by the command's own timeout (none for 0).
 * WAIT     Once the client's earlier commands are answered, on dedicated
 *          connections to the masters it wrote to (wait.h); what it sends
 *          after waits for WAIT's answer. Refused inside MULTI.
 *
 * Order. A client's requests go out on "lanes": the multiplexed connections
 * or one dedicated connection. A request whose lane is not the one the
 * client's unanswered requests are on waits ("parked", with everything the
 * client sends after it) until they are all answered, so SET k then WATCH k,
 * or BLPOP then GET, run in the order sent, as on one server.
 */
#ifndef TAGPROXY_TX_H
#define TAGPROXY_TX_H

#include <stdint.h>

#include "proxy/request.h"
#include "proxy/route.h"

struct client;
struct node_conn;

/* At the start of router_dispatch for a client with tx state: 1 when r was
 * parked behind the client's earlier parked requests. */
int tx_park_if_waiting(struct request *r);

/* The router refused r's command (unknown, arity, NOAUTH): inside MULTI
 * that makes EXEC answer EXECABORT, as Redis does. */
void tx_note_error(struct client *c);

/* What an element of EXEC's array needs, with a key layout (the request's
 * exec_fix): the low bits 1 + enum rewrite_reply_shape when the queued
 * command's reply names keys (mapped back to legacy names); TX_FIX_NULL_ARRAY
 * when it ran in the index script and Lua turned its null array (LPOP k n,
 * LMPOP, ZMPOP) into a null bulk. The router applies them (router.c). */
#define TX_FIX_SHAPE 0x07
#define TX_FIX_NULL_ARRAY 0x08

/* EXEC refused before it ran (why: the refusal): as Redis, the transaction
 * is discarded and WATCH ends, and the error says so, "EXECABORT
 * Transaction discarded because of: why" (an ERR code left out), inside
 * MULTI or not. */
void tx_exec_rejected(struct request *r, const char *why);

/* Take r if it is the tx module's business (1), or let the router plan it
 * (0; r may then go out on the multiplexed connections). */
int tx_dispatch(struct request *r, enum tx_class cls);

/* Register MULTI EXEC DISCARD WATCH UNWATCH, the blocking commands and
 * WAIT with their handlers (route.h), and the module's part in a client's
 * life (client.h: parked requests fail and dedicated connections close when
 * it goes; CLIENT LIST's multi=; its MULTI block's bytes). */
void tx_register(void);

/* router_send() for a request marked dedicated: the connection it must go
 * on, or NULL with *why set (pool exhausted, client gone) or left NULL
 * (unreachable: the router's usual retry). */
struct node_conn *tx_dedicated_conn(struct request *r, int node, const char **why);

/* How long a blocking command may legitimately keep the node silent (its
 * timeout), NODE_WAIT_FOREVER for 0; 0 for other commands. */
uint64_t tx_wait_ms(const struct request *r);

/* A blocking command answered (not with an error). It ran outside the
 * index script (Lua does not block): bring the indexes of those of its keys
 * that are indexed records up to date now (the index script around a write
 * that changes nothing, on the shared connection; its reply dropped). */
void tx_index_upkeep(struct request *r);

/* A TXC_PROXY command queued in MULTI: a detached copy (request.h), run
 * when EXEC's array comes back, its reply put in at pos, its place among
 * the queued commands; the node's block holds the others. */
struct tx_local {
    int pos;
    struct request *req;
};

/* Whether exec's transaction queued commands that ask the masters (INFO,
 * DBSIZE, KEYS, SCAN, RANDOMKEY: their routes ask the masters). */
int tx_asking_locals(const struct request *exec);

/*
 * EXEC's array came back and is held in exec->exec_held: start those
 * commands, after the transaction as Redis runs them in it;
 * router_exec_ready(exec) is called once all have answered (perhaps before
 * this returns).
 */
void tx_start_asking_locals(struct request *exec);

/* EXEC's array from the node (its elements, without the local ones) is
 * being rebuilt: add l's reply to out, running l (local.h) first unless it
 * asked the masters and has answered. */
void tx_run_local(struct request *exec, struct tx_local *l, struct evbuffer *out);

/* EXEC answered, or its connection was lost after it was written: the
 * commands queued in its transaction that may have written outside the
 * index script (EVAL, EVALSHA, FCALL; BLPOP and the other blocking writes,
 * which Lua cannot run) leave the indexes of their keys behind, so these
 * are brought up to date as after a blocking command. Frees r->exec_upkeep;
 * call only when it is set. */
void tx_exec_upkeep(struct request *r);


#endif
