/*
 * router: what to do with one command, and getting it answered.
 *
 * router_dispatch() looks the command up, checks arity and auth, and plans it:
 *
 *   local         answered by the proxy (local.h)
 *   one slot      every key hashes to one slot: sent to that slot's master;
 *                 keyless commands go to one master chosen consistently
 *   split         MGET MSET DEL UNLINK EXISTS TOUCH: one part per slot,
 *                 merged in the client's argument order
 *   SCAN          one master per call, its cursor folded into the proxy's
 *   fan-out       one part per master (DBSIZE, KEYS, RANDOMKEY, INFO; and
 *                 FLUSHALL, FLUSHDB, CONFIG SET, SAVE, ACL SETUSER, ...
 *                 when dangerous commands are enabled; other admin
 *                 commands then go to one master)
 *   scripts       EVAL, EVALSHA, FCALL (by their keys), SCRIPT, FUNCTION
 *                 (every master or one): scriptcmd.h
 *   refused       a clear error that says why
 *   tx            MULTI/EXEC/WATCH and blocking commands: tx.h, which may
 *                 also hold a client's later commands back to keep their order
 *
 * A reply goes first to the hooks of the family that planned its request
 * (request.h: EXEC's block, a script's redirect-like errors, the index
 * script's null arrays); the router then checks it for redirects before it
 * reaches the client:
 *   MOVED      slot map patched, resent, topology refresh asked for
 *   ASK        ASKING + the command on the named node, once
 *   TRYAGAIN, CLUSTERDOWN, redirects past max-redirects, and a node that
 *              could not be reached before the command was written:
 *              resent after an exponential backoff, retry-attempts times,
 *              then the last error goes to the client
 *   NOSCRIPT   to an EVALSHA whose body the proxy knows (scripts.h): the
 *              body loaded on that node, the EVALSHA resent (twice at most)
 *   a redirect to an address the topology does not know is followed only
 *   after a refresh has confirmed it.
 * A command whose connection failed after it was written is never resent.
 */
#ifndef TAGPROXY_ROUTER_H
#define TAGPROXY_ROUTER_H

#include <stdint.h>

#include "proxy/core/request.h"
#include "lib/proto/reply.h"

/* The core's start: clients hand their commands to router_dispatch and
 * take their replies (client_init), parents merge their parts' replies
 * (merge.h), and the routes the router plans itself are registered:
 * splits, every master, refusals (route.h). Once, before the workers
 * start, after route_init. */
void router_init(void);

/* The family that watches every command as its client sent it (MONITOR),
 * once it has passed the checks that refuse it before it runs, once per
 * request (r->watched), however often it comes back to be run: called only
 * while router_watching has counted some client watching (one atomic read
 * per command otherwise). Before any worker starts. */
void router_register_watcher(void (*watch)(struct request *r));

/* The family that marked a request (request.marks, or its parent's) sees
 * it as it goes out on conn, after a script body the node lacks and before
 * ASKING: it may queue a command of its own right before it. Before any
 * worker starts. */
void router_register_sending(void (*sending)(struct request *r, struct node_conn *conn));

/* That family hears of such a request's reply from conn (s: its type, its
 * error line) once the router keeps it (no redirect, no retry, not taken
 * by the request's own hooks), before it is delivered. Before any worker
 * starts. */
void router_register_answered(void (*answered)(struct request *r, struct node_conn *conn,
                                               const struct reply_scanner *s));

/* The family that hears of each command the ACL refused (acl.h's verdict,
 * the argument refused: ACL LOG). */
void router_register_denied(void (*denied)(struct request *r, int verdict, int errpos));
void router_watching(int delta);

/* Plan and start r (already in its client's queue). */
void router_dispatch(struct request *r);

/* r is refused before it runs (wrong arity, NOAUTH, NOPERM, a subscribed
 * client's command), as Redis's rejectCommand: a MULTI under way will
 * abort, and a refused EXEC ends MULTI and WATCH at once (tx.h). */
void router_reject(struct request *r, const char *msg);

/* Send r to the master of r->slot (or r->fixed_node, or the ASK target). */
void router_send(struct request *r);

/* The family whose requests go on connections of its own (request.h:
 * conn_kind not 0): conn gives the one r goes on to master `node` (NULL with
 * *why: r is answered why; NULL without: the usual retry), wait_ms how long
 * the node may stay silent about r (node.h). Before any worker starts. */
void router_register_conns(struct node_conn *(*conn)(struct request *r, int node,
                                                     const char **why),
                           uint64_t (*wait_ms)(const struct request *r));

/* The family that rebuilds writes before they go out by their keys
 * (index.h: the index script around writes to indexed records): wrap
 * gives NULL, or why r cannot be sent (r unchanged). cmd is r's command (a
 * split part has its parent's). Before any worker starts. */
void router_register_write_wrap(const char *(*wrap)(struct request *r, const struct command *cmd));

/* Follow a redirect (MOVED, ASK) or schedule a retry (TRYAGAIN,
 * CLUSTERDOWN, an unknown target): 1 when r goes out again, 0 when the
 * error is for the client. */
int router_redirect(struct request *r, enum reply_redirect kind, int slot, const char *addr);

/* An EVALSHA answered NOSCRIPT on `answered`: the body the proxy knows
 * (scripts.h) loaded there and on the node the resend goes to, then
 * resent (twice at most). 1 when resent; 0: the client gets the NOSCRIPT. */
int router_noscript(struct request *r, struct node_conn *answered);

/* c's held-back requests go out, in order, unless a backoff still holds
 * them (its end sends them): after what held them (a write's reads, a
 * script's confirmation: c->confirming) is over. */
void router_release_held(struct client *c);

/* Send r on conn, with the router's handling of its reply. */
void router_send_on(struct request *r, struct node_conn *conn);

/* The one slot of all of r's keys (command_keys): the slot, SLOT_NONE when
 * it has none (or its arguments are malformed: the node will say so),
 * SLOT_CROSS when they are in different slots (cluster/slot.h). */
int router_key_slot(struct request *r);

/* An admin command (enable-dangerous-commands, else refused saying so): to
 * every master, their replies merged (the first error, or the first +OK),
 * when everywhere; else forwarded as its keys say. */
void router_plan_dangerous(struct request *r, int everywhere);

/* The argument index of a listing's pattern: KEYS's, or SCAN's last MATCH
 * (the one Redis uses); -1 for none, or another command. */
int router_listing_pattern(const struct request *r);

/* Answer r as Redis answers a subcommand it does not know ("ERR unknown
 * subcommand 'x'. Try CLIENT HELP."). */
void router_reply_unknown_subcommand(struct request *r);

/* Send r's own bytes to every master, their replies merged by merge. */
void router_fanout_own(struct request *r, const struct merge *merge);

/* Send a copy of argv to every master as parts of parent, merged by kind. */
void router_fanout(struct request *parent, const struct merge *merge, int argc,
                   const char *const *argv, const size_t *lens);

/* The same, part by part: room for n parts (-1: parent failed), then each
 * part's command to master `node` of the worker's topology, then
 * request_parts_sent(parent) once all are sent. */
int router_parts_open(struct request *parent, const struct merge *merge, int n);
void router_part_send(struct request *parent, int node, int argc, const char *const *argv,
                      const size_t *lens);

/* The part alone, for the caller to send its own way; NULL when it could
 * not be made (parent then answers out of memory). */
struct request *router_part_add(struct request *parent, int node, int argc,
                                const char *const *argv, const size_t *lens);

/* Each master asked argv on a connection of its own, closed after its
 * reply, as parts of parent merged by merge: for what must not wait behind
 * the shared connections' work (SCRIPT KILL, FUNCTION KILL, a PING that
 * asks whether a long script keeps a master busy). */
void router_ask_each_alone(struct request *parent, const struct merge *merge, int argc,
                           const char *const *argv, const size_t *lens);


#endif
