/*
 * aclcmd: ACL, answered by the proxy about its own users (acl.h), as
 * Redis 7.0 answers it: WHOAMI, USERS, CAT, GETUSER, LIST, DRYRUN, and LOG,
 * the proxy's refusals of its clients' commands and logins (shared by every
 * worker, at most ACLCMD_LOG_MAX entries). SETUSER, DELUSER, LOAD and SAVE
 * are refused: the users come from the config (user lines, aclfile), which
 * a reload reads again. GENPASS and HELP go to a master.
 */
#ifndef TAGPROXY_ACLCMD_H
#define TAGPROXY_ACLCMD_H

#include <stddef.h>

struct request;

#define ACLCMD_LOG_MAX 128          /* Redis's acllog-max-len default */

/* A failed login of r's client as user (ACL LOG reason "auth"). */
void aclcmd_log_auth(struct request *r, const char *user, size_t len);

/* Register the routes and the router's refusal hook. */
void aclcmd_register(void);

#endif
