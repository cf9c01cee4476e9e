/*
 * scriptload: the script bodies the proxy knows (scripts.h) put on the
 * nodes' connections, so that an EVALSHA finds its script there.
 *
 * Each node connection keeps a small set of the SHAs it has seen; an
 * EVALSHA of a known body goes after SCRIPT LOAD of it on a connection that
 * has not seen it (a new master after a failover, one added by resharding),
 * which then never answers NOSCRIPT, so a pipeline's later commands cannot
 * overtake a resent EVALSHA; the router loads it again after a NOSCRIPT
 * all the same (router.h). The set is bounded and emptied when the proxy's
 * bodies change (scripts_epoch): no lock but on a connection's first sight
 * of a SHA.
 */
#ifndef TAGPROXY_SCRIPTLOAD_H
#define TAGPROXY_SCRIPTLOAD_H

#include <stddef.h>

struct node_conn;

/* An EVALSHA whose SHA argument is arg[0..len) goes on c next: SCRIPT LOAD
 * of its body first, when the proxy knows it and c has not seen it. */
void scriptload_unseen(struct node_conn *c, const char *arg, size_t len);

/* Queue SCRIPT LOAD body on c; its reply is consumed (a refusal is
 * logged, by its error code only). */
void scriptload_on(struct node_conn *c, const char *body, size_t len);

#endif
