/*
 * scriptcmd: EVAL, EVALSHA, FCALL (and their _RO forms), SCRIPT and
 * FUNCTION through the proxy.
 *
 *   EVAL* FCALL*      keys (numkeys) in one slot, else CROSSSLOT before
 *                     anything runs; sent to that slot's master like any
 *                     command (MOVED, ASK, TRYAGAIN, CLUSTERDOWN followed);
 *                     without keys to the master of slot 0, the one master
 *                     FUNCTION LIST/DUMP/STATS also ask. EVAL bodies are
 *                     remembered (scripts.h); a script-map'd legacy script
 *                     is replaced by its cluster-aware body/SHA.
 *   SCRIPT LOAD       every master; the SHA1 when all agree (any error wins)
 *   SCRIPT EXISTS     every master; 1 only where every master has it
 *   SCRIPT FLUSH      every master; the proxy forgets remembered bodies
 *   SCRIPT KILL       every master, each on a connection of its own (a
 *   FUNCTION KILL     master running a script does not read its
 *                     multiplexed one); OK if any killed, else NOTBUSY
 *   FUNCTION LOAD, DELETE, FLUSH, RESTORE   every master
 *   FUNCTION LIST, DUMP, STATS, HELP; SCRIPT HELP   the master of slot 0
 *   SCRIPT DEBUG      refused (the debugger needs its own node connection)
 *
 * An EVALSHA answered NOSCRIPT is recovered in the router (router.h), with
 * scriptcmd_load_on().
 */
#ifndef TAGPROXY_SCRIPTCMD_H
#define TAGPROXY_SCRIPTCMD_H

#include <stddef.h>

struct command;
struct request;
struct node_conn;

/* Plan and start r, whose command is one of the above. */
void scriptcmd_dispatch(struct request *r);

/* Register EVAL*, FCALL*, SCRIPT and FUNCTION with scriptcmd_dispatch (route.h). */
void scriptcmd_register(void);

/*
 * r (flagged evalsha: EVALSHA or EVALSHA_RO sha ...) is about to go out on
 * c: if c has not seen sha yet and the proxy knows its body, SCRIPT LOAD it
 * first on c. A connection to a master that lacks the script (a new master
 * after a failover, one added by resharding) then never answers NOSCRIPT,
 * so a pipeline's later commands cannot overtake a resent EVALSHA. Each
 * connection keeps the SHAs it has seen (bounded, emptied when the
 * proxy's bodies change): no lock but on a connection's first sight of a SHA.
 */
void scriptcmd_before_send(struct request *r, struct node_conn *c);

/* Queue SCRIPT LOAD body on c; its reply is consumed (a refusal is
 * logged, by its error code only). */
void scriptcmd_load_on(struct node_conn *c, const char *body, size_t len);

/* EVAL, EVALSHA or FCALL, not a _RO form: a script that may write the keys
 * it declares (what the proxy cannot see inside). */
int scriptcmd_may_write(const struct command *cmd);

/* EVAL, EVALSHA, FCALL or a _RO form: code that runs on the node and may
 * answer any error it likes, a redirect's words included. */
int scriptcmd_runs_code(const struct command *cmd);

#endif
