/*
 * acl: the proxy's client users and what each may run.
 *
 * Users come from the config: the `default` user (password = requirepass,
 * or no password at all: every connection starts logged in as it, as in
 * Redis), and one per `user NAME PASSWORD [RULE ...]` line. A rule list is a
 * subset of Redis's ACL SETUSER command rules, applied left to right to a
 * user that starts with no command allowed:
 *
 *   allcommands, +@all      every command
 *   nocommands, -@all       none
 *   +@CATEGORY, -@CATEGORY  every command and subcommand in the ACL category
 *                           (COMMAND INFO's categories: read, write, string,
 *                           admin, dangerous, connection, ...)
 *   +CMD, -CMD              a command, with all its subcommands
 *   +CMD|SUB, -CMD|SUB      one subcommand of a container (client|setname)
 *
 * PASSWORD is the password itself, or `nopass` (any password is accepted).
 * A `user default ...` line sets the default user's password and rules;
 * requirepass, when set, replaces that password (as CONFIG SET requirepass
 * does in Redis). Without a `user default` line the default user may run
 * every command.
 *
 * Checking a login costs the same whatever the user name and password: both
 * are hashed (SHA-256), every user's name digest is compared with
 * CRYPTO_memcmp, and a password digest is compared even when no user
 * matched. So neither a user name nor a password prefix can be found by
 * timing.
 *
 * On the hot path a permission check is one bit test: every command and
 * subcommand of the command table has an id (acl_command_id), and each user
 * holds a bitmap indexed by it.
 *
 * A script's calls (EVAL, EVALSHA, FCALL and their _RO forms) run on a
 * node, out of the proxy's sight. A user whose rules allow less than
 * everything (`restricted`) has them run on connections logged in as a
 * node user that carries the same rules: "tagproxy:" and the first 24 hex
 * digits of the rules' SHA-256, so every proxy with the same rules shares
 * one node user and a change of rules makes a new one. Its password is an
 * HMAC-SHA256 of that name keyed by cluster-password, and the node holds
 * only the password's SHA-256 (`#...`). Each such connection sets the user
 * up first (node_setup: ACL SETUSER, as cluster-user, which the cluster's
 * ACL must allow), so a node that never saw it, a new master after a
 * failover, has it before the login.
 */
#ifndef TAGPROXY_ACL_H
#define TAGPROXY_ACL_H

#include <stddef.h>
#include <stdint.h>

#include "proto/command.h"

struct config;

#define ACL_DIGEST_LEN 32
#define ACL_NODE_USER_LEN 40     /* "tagproxy:" + 24 hex digits + NUL */

struct acl_user {
    char *name;
    unsigned char name_digest[ACL_DIGEST_LEN];
    unsigned char pass_digest[ACL_DIGEST_LEN];
    int nopass;                 /* any password logs in */
    uint64_t *allowed;          /* bit per acl_command_id */
    int restricted;             /* its rules allow less than everything */
    /* restricted: the node user its scripts run as (above) */
    char node_user[ACL_NODE_USER_LEN];
    char node_password[2 * ACL_DIGEST_LEN + 1];
    char **node_setup;          /* ACL SETUSER node_user ... */
    int node_setup_argc;
};

struct acl {
    struct acl_user *users;     /* users[0] is the default user */
    int nusers;
};

/* Ids: top-level commands are their index in command_table; a container's
 * subcommands follow from acl_sub_base[container index]. */
extern int acl_sub_base[];
extern int acl_command_count;

/* Number the commands. Once, before anything else here. */
void acl_init_ids(void);

static inline int acl_command_id(const struct command *cmd)
{
    if (cmd->parent)
        return acl_sub_base[cmd->parent - command_table] + (int)(cmd - cmd->parent->subcommands);
    return (int)(cmd - command_table);
}

static inline int acl_allows(const struct acl_user *u, const struct command *cmd)
{
    int id = acl_command_id(cmd);
    return (int)((u->allowed[id >> 6] >> (id & 63)) & 1);
}

/* The users of c (config_user lines and requirepass). NULL with the reason
 * in err (out of memory; the rules were checked when the config loaded). */
struct acl *acl_build(const struct config *c, char *err, size_t errlen);
void acl_free(struct acl *a);

static inline const struct acl_user *acl_default_user(const struct acl *a)
{
    return &a->users[0];
}

/* The user that name/password log in as, or NULL (wrong pair or no such
 * user: indistinguishable, also by time). */
/* The user of that name, or NULL (a lookup, not a login: CLIENT KILL USER). */
const struct acl_user *acl_user_named(const struct acl *a, const char *name, size_t namelen);

const struct acl_user *acl_authenticate(const struct acl *a, const char *name, size_t namelen,
                                        const char *pass, size_t passlen);

#endif
