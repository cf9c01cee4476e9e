/*
 * tx: what a client does beyond independent commands: MULTI/EXEC/DISCARD
 * transactions, WATCH/UNWATCH, and blocking commands (BLPOP, BRPOP, BLMOVE,
 * BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP, XREAD/XREADGROUP BLOCK).
 * A client gets this state (txstate.h, kept as its client family state) the
 * first time it uses one of them. tx.c dispatches; multi.h, blocking.h and
 * lane.h do each part.
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
 * of one protocol or one dedicated connection. A request whose lane is not
 * the one the client's unanswered requests are on waits ("parked", with
 * everything the client sends after it) until they are all answered, so
 * SET k then WATCH k, BLPOP then GET, or RPUSH k, HELLO 2, RPUSH k, run in
 * the order sent, as on one server.
 */
#ifndef TAGPROXY_TX_H
#define TAGPROXY_TX_H

/* Register the family's routes (MULTI EXEC DISCARD WATCH UNWATCH, the
 * blocking commands, WAIT, XREAD BLOCK), its connections, its part in a
 * client's life (client.h: parked requests fail and dedicated connections
 * close when it goes; its commands inside MULTI are queued) and in its
 * requests' (request.h). Before any worker starts. */
void tx_register(void);

#endif
