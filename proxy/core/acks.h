/*
 * acks: writes answered once replicas have them (replica-acks N TIMEOUT).
 *
 * A write the router sends on a worker's shared connection joins that
 * connection's group: the writes sent there since its last WAIT. As the
 * round's output is written, each group's connection gets one WAIT N
 * TIMEOUT after its writes (WAIT waits for everything its connection wrote
 * before it). A write the node answers is held, its reply kept, until its
 * group's WAIT answers: then it goes to its client, or, when fewer than N
 * replicas have it, an error that says the write ran on the master and may
 * be lost in a failover (a reply that is already an error stays as it is).
 *
 * WAIT holds its connection while it waits, so writes go on connections of
 * their own (WORKER_CONN_WRITES2/3): reads keep their latency when a
 * replica is slow. A client's order holds across the two: while a request
 * of its is on its way on a writes connection, its next requests follow it
 * there (whether replica-acks is on or not: a reload may turn it off); a
 * write of a client with reads on their way on reads connections waits in
 * its held list (router.c) until they are answered, and so do the requests
 * it sent after it. Only the shared connections do this: a restricted
 * user's script connection, WATCH's and blocking commands' dedicated ones
 * send no WAIT.
 */
#ifndef TAGPROXY_ACKS_H
#define TAGPROXY_ACKS_H

struct node_conn;
struct request;
struct worker;

/* Before any worker starts. */
void acks_register(void);

/* The shared connection r (a client's request, or part of one) goes out on
 * to master `node`, on w's default choice conn (NULL: none to be had): a
 * writes connection, or conn; r joins its group when it is a write and
 * replica-acks is on. NULL when there is none to be had (r waits for a
 * retry), or, with *park set, when r is to wait in its client's held list
 * until acks_answered says its reads are in. */
struct node_conn *acks_route(struct request *r, int node, struct node_conn *conn, int *park);

/* The node answered r, or it failed, on the connection acks_route chose:
 * its client's count of requests on their way there goes down. 1 when the
 * writes the client parked (acks_route) may go now. */
int acks_answered(struct request *r);

/* The round's output is about to be written (io_loop before_flush, for
 * worker arg): each group's WAIT goes after its writes. */
void acks_round_flush(void *arg);

#endif
