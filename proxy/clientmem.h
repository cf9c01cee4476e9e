/*
 * clientmem: the memory the proxy holds for its clients, and
 * maxmemory-clients, as Redis 7.0 defines it.
 *
 * A client's memory is everything held for it: its input buffer, its
 * commands read and not yet answered (the backlog: parked behind a blocking
 * command, a WAIT or a retry's backoff included), its MULTI block, finished
 * replies waiting for their turn, and output not yet written. The client's
 * own worker counts it (clientmem_update) whenever one of these changes and
 * keeps the sum of its clients; both are published for the other workers
 * with relaxed atomics, so counting takes no lock.
 *
 * When the sum over every worker passes maxmemory-clients, the clients
 * using the most are closed, the fewest that bring it back under the limit
 * (CLIENT NO-EVICT ON ones never), each on its own worker's thread as
 * CLIENT KILL closes them; INFO's evicted_clients counts them. Only this
 * path, taken when the limit is passed, locks the workers' client lists.
 */
#ifndef TAGPROXY_CLIENTMEM_H
#define TAGPROXY_CLIENTMEM_H

#include <stddef.h>

struct client;
struct proxy;

/* Count c's memory again, and evict clients if the total passes the limit. */
void clientmem_update(struct client *c);

/* c is being freed: its memory leaves its worker's sum. */
void clientmem_forget(struct client *c);

/* The memory of c (as last counted), and of every client of the proxy. */
size_t clientmem_of(const struct client *c);
size_t clientmem_total(const struct proxy *p);

#endif
