/*
 * scriptreply: the replies of EVAL, EVALSHA, FCALL and their _RO forms
 * (r->hooks of a script the router sends by its keys, scriptcmd.h).
 *
 * A script chooses its own replies, errors included: "MOVED 1 host:port"
 * (or ASK, TRYAGAIN, CLUSTERDOWN) may come after it wrote, so such a reply
 * is followed only when the answering node's own state confirms the
 * cluster sent it (CLUSTER NODES: the slot is elsewhere, or migrating;
 * CLUSTER INFO: the cluster is down); else it goes to the client as it is,
 * counted in script_redirects_unconfirmed. A script that may write (not a
 * _RO form) may have written keys the proxy does not see: with a key
 * layout the indexes of its keys are brought up to date once it has run
 * (index.h).
 */
#ifndef TAGPROXY_SCRIPTREPLY_H
#define TAGPROXY_SCRIPTREPLY_H

#include "proxy/core/request.h"

extern const struct request_hooks scriptreply_hooks;

#endif
