/*
 * blocking: the blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP,
 * BZPOPMIN, BZPOPMAX, BZMPOP, XREAD/XREADGROUP with BLOCK; tx.h) run on a
 * dedicated connection (dedicated.h) to their slot's master, so the node
 * blocking does not stall the multiplexed ones; the node's silence limit
 * grows by the command's own timeout (none for 0). Where the timeout is
 * comes from the command table (lib/proto/command.h: CMDP_TIMEOUT_*).
 */
#ifndef TAGPROXY_BLOCKING_H
#define TAGPROXY_BLOCKING_H

#include <stddef.h>
#include <stdint.h>

struct request;
struct tx_state;

/* Send r, a blocking command, on the client's dedicated connection to its
 * slot's master, in its turn (lane.h); or refuse it (keys of several
 * slots, or of another master than the WATCHed keys'). */
void blocking_dispatch(struct tx_state *tx, struct request *r);

/* How long a request on a dedicated connection may legitimately keep the
 * node silent: a blocking command's own timeout (NODE_WAIT_FOREVER for 0),
 * 0 for any other (router.h: router_register_conns). */
uint64_t blocking_wait_ms(const struct request *r);

/* A timeout in milliseconds as Redis reads it (XREAD's BLOCK, WAIT's): 0
 * when it is no count, NODE_WAIT_FOREVER for 0. */
uint64_t blocking_millis(const char *s, size_t len);

#endif
