/*
 * readfrom: reads sent to replicas (read-from replica|prefer-replica), each
 * client still reading its own writes.
 *
 * A read is a command the table marks readonly (and not write, blocking or
 * a script), for one slot, on the worker's shared connections: not in a
 * transaction block, not a restricted user's, not after ASK, not a
 * family's (a listing's step, a tracked read: CLIENT TRACKING's keys are
 * tracked on the masters). It goes to a replica of its master
 * (replicas.h) that is fresh within replica-max-lag-ms and holds every
 * write its client made to those slots (its bucket of them:
 * CLIENT_WROTE_BUCKETS, client.h):
 *
 *   - while a request of the client is on its way to a master (any
 *     command: it may write), its reads go to masters, after it in order;
 *   - a client's write answered at time T (its slot's bucket, or every
 *     bucket for a write with no slot) sends its
 *     reads of that bucket to masters until a replica is fresh as of a
 *     later time: the replica then holds the write;
 *   - a write of a client with reads on their way to replicas waits in its
 *     held list (router.c) until they are answered, so that it cannot
 *     overtake them and show in them.
 *
 * A slot the worker saw move (MOVED, a new topology) is read only from
 * replicas fresh past the move; one it saw migrating (ASK, TRYAGAIN) only
 * from masters for a while: a Redis 7 replica does not know of a migration
 * and answers nil for a key already moved.
 *
 * A replica that answers MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING or
 * MASTERDOWN, or whose connection fails, has the read sent to the master
 * (a read may run twice). With read-from replica, a read that no replica
 * can take for lag or connection is refused, not sent to a master (while
 * a replica has not answered the proxy's first question, as the proxy
 * starts, its master takes the read).
 */
#ifndef TAGPROXY_READFROM_H
#define TAGPROXY_READFROM_H

struct node_conn;
struct request;
struct worker;

/* Where r (to master `node`) goes: a replica connection, or NULL, the
 * master's. *park: r is a write to wait in its client's held list until its
 * reads on replicas are answered. *refused: read-from replica has no
 * replica for r (r gets that error). */
struct node_conn *readfrom_route(struct request *r, int node, int *park, const char **refused);

/* r goes out on a master connection (router_send_on): counted as its
 * client's request on its way there. */
void readfrom_master_sent(struct request *r);

/* The node answered r, or r failed (may_have_written: perhaps after it
 * ran): its client's counts follow, and a write's time is kept. Returns 1
 * when the writes its client parked may go now; *was_replica: r was on a
 * replica. */
int readfrom_answered(struct request *r, int may_have_written, int failed, int *was_replica);

/* A node redirected a command of slot's (MOVED; migrating: ASK or
 * TRYAGAIN), or a new topology gives it another master: its reads stay
 * off replicas that may not hold its keys (readfrom.c). */
void readfrom_slot_moved(struct worker *w, int slot, int migrating);

/* A replica answered a read with errline: 1 when the read goes to the
 * master instead (r marked so). */
int readfrom_refused_by_replica(struct request *r, const char *errline);

#endif
