/*
 * acl: the proxy's client users and what each may do, as Redis 7.0's ACL.
 *
 * Users come from the config: the `default` user (password = requirepass,
 * or no password at all: every connection starts logged in as it, as in
 * Redis), one per `user NAME PASSWORD [RULE ...]` line (the user is `on`
 * with that password, `nopass` for any, then the rules), and the lines of
 * an `aclfile` (`user NAME RULE ...`, as Redis's: a user starts `off`).
 * Rules are Redis's ACL SETUSER rules, applied left to right to a user that
 * starts with nothing: no command, no key, no channel, no password:
 *
 *   on, off                 may log in, or not
 *   >PASS, <PASS            add or remove a password (held as its SHA-256)
 *   #HASH, !HASH            the same by the password's SHA-256 (64 hex digits)
 *   nopass, resetpass       any password logs in; no password at all
 *   allcommands, +@all      every command      nocommands, -@all    none
 *   +@CATEGORY, -@CATEGORY  every command and subcommand in the category
 *   +CMD, -CMD              a command, with all its subcommands
 *   +CMD|SUB, -CMD|SUB      one subcommand of a container (client|setname)
 *   +CMD|ARG                a command without subcommands, with that first
 *                           argument (Redis 7.0's, deprecated there)
 *   ~PATTERN, allkeys       keys the commands may read and write (~* all)
 *   %R~PATTERN, %W~PATTERN  ... only read, only write (%RW~ both)
 *   resetkeys               no key
 *   &PATTERN, allchannels   channels (&* all)      resetchannels  none
 *   (RULES)                 a selector: commands, keys and channels that
 *                           hold together, besides the user's own
 *   clearselectors          no selector
 *   reset                   resetpass resetkeys resetchannels off
 *                           clearselectors -@all
 *
 * A command is allowed when one selector (the user's own rules are the
 * first) allows the command and every key and channel it names: a key by a
 * pattern with the permission its key spec asks (read for ACCESS, write for
 * INSERT, DELETE or UPDATE), a channel of PUBLISH, SPUBLISH, SUBSCRIBE and
 * SSUBSCRIBE by a glob, a PSUBSCRIBE pattern by being one of the patterns
 * literally. Keys are checked as the client names them (legacy names,
 * before the key layout rewrites them).
 *
 * Checking a login costs the same whatever the user name and password: both
 * are hashed (SHA-256), every user's name digest is compared with
 * CRYPTO_memcmp, and the password digest is compared with every password of
 * the user found (with one when there is none), so neither a user name nor
 * a password prefix can be found by timing (only, as in Redis, whether the
 * user found has several passwords).
 *
 * On the hot path a command check is one bit test: every command and
 * subcommand of the command table has an id (acl_command_id), and each
 * selector holds a bitmap indexed by it. Only a user with key or channel
 * patterns or selectors (not `simple`) has its keys and channels checked.
 *
 * A script's calls (EVAL, EVALSHA, FCALL and their _RO forms) run on a
 * node, out of the proxy's sight. A user whose rules allow less than
 * everything (`restricted`) has them run on connections logged in as a
 * node user that carries the same rules: "tagproxy:" and the first 24 hex
 * digits of an HMAC-SHA256 of the rules keyed by cluster-password, so every
 * proxy with the same rules and cluster login shares one node user, and a
 * change of rules makes a new one. Its password is an HMAC-SHA256 of that
 * name keyed by cluster-password, and the node holds only the password's
 * SHA-256 (`#...`). Each such connection sets the user up first
 * (node_setup: ACL SETUSER, as cluster-user, which the cluster's ACL must
 * allow), so a node that never saw it, a new master after a failover, has
 * it before the login.
 */
#ifndef TAGPROXY_ACL_H
#define TAGPROXY_ACL_H

#include <stddef.h>

#include "proxy/config/acluser.h"

struct config;
struct config_user;
struct layout;

struct acl {
    struct acl_user *users;     /* users[0] is the default user */
    int nusers;
};

/* The users of c (config_user lines, the aclfile and requirepass), their
 * node users' key patterns mapped by layout (NULL: none; acluser.h). NULL
 * with the reason in err. */
struct acl *acl_build(const struct config *c, const struct layout *layout, char *err,
                      size_t errlen);

/* u from a config_user: a `user NAME PASSWORD RULE...` line (on, that
 * password, the rules) or an aclfile line (NAME RULE...); requirepass, for
 * the default user, replaces its passwords last, as Redis applies it.
 * 0, or -1 with the reason. */
int acl_user_from_line(struct acl_user *u, const struct config_user *cu, const char *requirepass,
                       const struct config *c, const struct layout *layout, char *why,
                       size_t whylen);

/* The same with other users than c's (ACL SETUSER's), and requirepass for
 * the default user (NULL: none; after CONFIG SET requirepass its line says
 * its password); c gives cluster-password. */
struct acl *acl_build_users(const struct config_user *users, int nusers, const struct config *c,
                            const char *requirepass, const struct layout *layout, char *err,
                            size_t errlen);
void acl_free(struct acl *a);

static inline const struct acl_user *acl_default_user(const struct acl *a)
{
    return &a->users[0];
}

/* The user of that name, or NULL (a lookup, not a login: CLIENT KILL USER). */
const struct acl_user *acl_user_named(const struct acl *a, const char *name, size_t namelen);

/* The user that name/password log in as, or NULL (wrong pair, no such user
 * or a user that is off: indistinguishable, also by time). */
const struct acl_user *acl_authenticate(const struct acl *a, const char *name, size_t namelen,
                                        const char *pass, size_t passlen);

#endif
