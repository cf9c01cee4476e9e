/*
 * nodeusers: at start, the node users that restricted client users' scripts
 * run as (proxy/config/acl.h) are set up on every master, as cluster-user, so
 * that an operator hears at once, not at a bot's first script, when the
 * cluster's ACL does not let cluster-user run ACL SETUSER: each refusal is
 * a warning that names the master and the users whose scripts will be
 * refused. The proxy starts all the same: its other commands are served.
 */
#ifndef TAGPROXY_NODEUSERS_H
#define TAGPROXY_NODEUSERS_H

struct acl;
struct topology;
struct topology_source;

/* The number of masters that refused (0: every one took every node user). */
int nodeusers_setup(const struct acl *acl, const struct topology *t,
                    const struct topology_source *src);

/* A warning for each user with a key pattern its node user cannot carry
 * under the key layout (acluser.h: node_keys_unmapped): its scripts may
 * not touch the rewritten keys that pattern matches. At start and reload. */
void nodeusers_warn_unmapped(const struct acl *acl);

#endif
