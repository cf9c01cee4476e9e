/*
 * aclcmd: ACL, answered by the proxy about its own users (acl.h), as
 * Redis 7.0 answers it: WHOAMI, USERS, CAT, GETUSER, LIST, DRYRUN, and LOG,
 * the proxy's refusals of its clients' commands and logins (shared by every
 * worker, at most ACLCMD_LOG_MAX entries). SETUSER, DELUSER, LOAD and SAVE
 * change the proxy's users when acl-mutable allows it, else are refused:
 * under the proxy's users_lock the newest snapshot's users are changed
 * into a new snapshot (snapshot_with_users), which this worker takes at
 * once and the others through their mailboxes (thread_share_config).
 * GENPASS and HELP go to a master.
 */
#ifndef TAGPROXY_ACLCMD_H
#define TAGPROXY_ACLCMD_H

#include <stddef.h>

struct request;

#define ACLCMD_LOG_MAX 128          /* Redis's acllog-max-len default */

/* A failed login of r's client as user (ACL LOG reason "auth"). */
void aclcmd_log_auth(struct request *r, const char *user, size_t len);

/* CONFIG SET requirepass: the default user's password from now on, as
 * Redis sets it (resetpass, then >pass, or nopass when empty), in a new
 * snapshot of the users that every worker takes; its connections stay. 0,
 * or -1 with r answered. */
int aclcmd_set_requirepass(struct request *r, const char *pass, size_t len);

/* Register the routes and the router's refusal hook. */
void aclcmd_register(void);

#endif
