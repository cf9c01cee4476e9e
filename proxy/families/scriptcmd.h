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
 * A script's replies are handled as scriptreply.h says; an EVALSHA finds
 * its body loaded on a connection that has not seen it (scriptload.h), and
 * one answered NOSCRIPT is recovered in the router (router.h).
 */
#ifndef TAGPROXY_SCRIPTCMD_H
#define TAGPROXY_SCRIPTCMD_H

/* Register EVAL*, FCALL*, SCRIPT and FUNCTION, each with its plan (route.h). */
void scriptcmd_register(void);

#endif
