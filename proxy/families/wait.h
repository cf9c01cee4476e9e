/*
 * wait: WAIT numreplicas timeout through the proxy, and Redis 7.2's
 * WAITAOF numlocal numreplicas timeout the same way once the cluster knows
 * it (cluster/learned.h): its reply, [local, replicas], is each count's
 * smallest over the masters asked.
 *
 * On one redis-server, WAIT counts the replicas that acknowledged the
 * replication offset of the connection's last write. Through the proxy a
 * client's writes go out on connections shared with other clients, to the
 * masters that own their keys, so the proxy remembers which masters (node
 * indexes of the topology, client->written_masters) received a command of
 * the client that may write (write-flagged, EVAL/FCALL, a MULTI block)
 * since its last WAIT. For each of them, on a dedicated connection
 * (dedicated.h), pipelined:
 *
 *   EVAL "redis.call('set',KEYS[1],'1') redis.call('del',KEYS[1])" 1
 *        tagproxy:wait:{T}          a proxy-owned key of that master's slots
 *   WAIT numreplicas timeout
 *
 * The script propagates, so the dedicated connection's offset is at or
 * after everything the master executed before it, including the client's
 * writes (answered before WAIT goes out: WAIT waits for the client's
 * earlier commands, tx.h), and it leaves no key behind. The masters are
 * asked in parallel; the answer is the smallest count: at least that many
 * replicas of every master the client wrote to acknowledged its writes.
 * A client that wrote nothing gets the count of one master (the slot 0
 * owner), as Redis answers at once on a connection without writes. A
 * node's error is the answer. WAIT inside MULTI is refused (the block runs
 * on a master's connection whose offset is not the client's).
 */
#ifndef TAGPROXY_WAIT_H
#define TAGPROXY_WAIT_H

#include <stdint.h>

struct request;
struct wait_op;

/* Run WAIT r, or WAITAOF (aof) (its client's earlier commands are all
 * answered); *slot, the client's, holds it while it runs (NULL again once
 * it ends). */
void wait_dispatch(struct request *r, int aof, uint64_t wait_ms, struct wait_op **slot);

/* The client left: the WAIT in *slot closes its connections now. */
void wait_client_gone(struct wait_op **slot);

#endif
