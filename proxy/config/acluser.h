/*
 * acluser: one user built from Redis 7.0's ACL rules (aclrule.h), and the
 * check of a command against it. The rules, the checks and the node user of
 * a restricted user are described in acl.h.
 */
#ifndef TAGPROXY_ACLUSER_H
#define TAGPROXY_ACLUSER_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/config/aclrule.h"
#include "lib/proto/command.h"

struct layout;

#define ACL_DIGEST_LEN 32
#define ACL_NODE_USER_LEN 40     /* "tagproxy:" + 24 hex digits + NUL */

/* Why a command is refused, as Redis ranks them: of several selectors'
 * refusals the highest is the user's. */
enum acl_verdict {
    ACL_OK = 0,
    ACL_DENIED_CMD,
    ACL_DENIED_KEY,
    ACL_DENIED_AUTH,
    ACL_DENIED_CHANNEL,
};

struct acl_pattern {
    char *text;
    size_t len;
    unsigned perm;              /* ACL_PERM_* (keys) */
};

struct acl_selector {
    uint64_t *allowed;          /* bit per acl_command_id */
    unsigned all_commands : 1;  /* +@all is its base (also commands the table lacks) */
    unsigned all_keys : 1;
    unsigned all_channels : 1;
    struct acl_pattern *keys;
    int nkeys;
    struct acl_pattern *channels;
    int nchannels;
    struct acl_firstarg *firstargs;     /* +cmd|arg rules: a command (its bit clear)
                                           allowed with one of these first arguments */
    int nfirstargs;
    signed char *grants;        /* its +@all/-@all and +@cat/-@cat rules in order, for
                                   a command learned from the cluster (no bit here):
                                   +-(category + 1), +-ACL_GRANT_ALL */
    int ngrants;
};

#define ACL_GRANT_ALL 127

struct acl_firstarg {
    const struct command *cmd;
    char *arg;
};

enum acl_sanitize { ACL_SANITIZE_UNSET = 0, ACL_SANITIZE, ACL_SKIP_SANITIZE };

struct acl_user {
    char *name;
    unsigned char name_digest[ACL_DIGEST_LEN];
    int enabled;                /* on */
    int nopass;                 /* any password logs in */
    enum acl_sanitize sanitize; /* shown only: RESTORE's check is the nodes' */
    unsigned char (*passwords)[ACL_DIGEST_LEN];
    int npasswords;
    struct acl_selector *selectors;     /* [0]: the user's own rules */
    int nselectors;
    int simple;                 /* one selector with every key and channel: the
                                   command's bit alone decides */
    int restricted;             /* its rules allow less than everything */
    /* restricted: the node user its scripts run as (above) */
    char node_user[ACL_NODE_USER_LEN];
    char node_password[2 * ACL_DIGEST_LEN + 1];
    char **node_setup;          /* ACL SETUSER node_user ... */
    int node_setup_argc;
    char node_keys_unmapped[160];   /* a key pattern rule whose names under the key
                                       layout's rules its node user lacks ("": none) */
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

/* cmd's bit in a bitmap indexed by acl_command_id. */
static inline int acl_bit(const uint64_t *bits, const struct command *cmd)
{
    int id = acl_command_id(cmd);
    return (int)((bits[id >> 6] >> (id & 63)) & 1);
}

static inline int acl_selector_allows(const struct acl_selector *s, const struct command *cmd)
{
    return acl_bit(s->allowed, cmd);
}

/* May u run cmd with the arguments argv (args into base, argc of them,
 * the command's name first)? Its keys are found and checked by specs' key
 * specs (the cluster's entry for cmd where they differ: learned.h; NULL:
 * cmd's own). ACL_OK, or why not with *errpos the index of the argument
 * refused (the key or channel; 0 for the command). */
enum acl_verdict acl_check(const struct acl_user *u, const struct command *cmd,
                           const struct command *specs, const char *base,
                           const struct resp_arg *args, int argc, int *errpos);

/* acl_check, its common case inline: a simple user's command bit. */
static inline enum acl_verdict acl_check_fast(const struct acl_user *u, const struct command *cmd,
                                              const struct command *specs, const char *base,
                                              const struct resp_arg *args, int argc,
                                              int *errpos)
{
    if (u->simple && !cmd->learned_index) {
        *errpos = 0;
        return acl_selector_allows(&u->selectors[0], cmd) ? ACL_OK : ACL_DENIED_CMD;
    }
    return acl_check(u, cmd, specs, base, args, argc, errpos);
}

/* As Redis's ACLUserCheckCmdWithUnrestrictedKeyAccess (SORT's BY and GET
 * patterns need it): a selector that allows the command may read any key. */
int acl_full_key_access(const struct acl_user *u, const struct command *cmd, const char *base,
                        const struct resp_arg *args, int argc);

/* Check rules (a `user` line's or an aclfile line's, selectors merged) as
 * acl_build will apply them: 0, or -1 with the reason in why. */
int acl_rules_check(char *const *rules, int n, char *why, size_t whylen);

/* What ACL LIST and ACL GETUSER say of s: its command rules as Redis 7.0
 * describes them (the categories that say most, then single commands in
 * the table's order), its keys ("~*", or "~p %R~p %W~p") and its channels
 * ("&*", or "&p ..."; list: "resetchannels &p ..."), into out (cap bytes,
 * cut if longer). The length written. */
size_t acl_describe_commands(const struct acl_selector *s, char *out, size_t cap);
size_t acl_describe_keys(const struct acl_selector *s, char *out, size_t cap);
size_t acl_describe_channels(const struct acl_selector *s, int list, char *out, size_t cap);

/* ACL LIST's line of u, without "user NAME ": flags, #passwords, the
 * selectors. */
size_t acl_describe_user(const struct acl_user *u, char *out, size_t cap);

/* Do now's rules allow fewer channels than old's (a subscriber of the
 * user may hold a channel it may no longer have: Redis closes it)? */
int acl_channels_narrowed(const struct acl_user *old, const struct acl_user *now);

/* SHA-256 of s (all zeros should the digest fail: it then matches no
 * password), and n bytes as 2n lowercase hex digits and a NUL. */
void acl_digest(const char *s, size_t len, unsigned char out[ACL_DIGEST_LEN]);
void acl_hex(const unsigned char *d, size_t n, char *out);

/* A new user of that name with nothing allowed (off, no password): 0, or
 * -1 out of memory. */
int acl_user_init(struct acl_user *u, const char *name);
void acl_user_free(struct acl_user *u);

/* Apply rules (selectors merged) to u in order: 0, or -1 with the reason. */
int acl_user_apply(struct acl_user *u, char *const *rules, int n, char *why, size_t whylen);

/* One rule (a selector merged) as ACL SETUSER applies it: 0, or -1 with
 * Redis's reason ("Unknown command or category name in ACL", "Syntax
 * error", ...). */
int acl_user_apply_setuser(struct acl_user *u, const char *rule, char *why, size_t whylen);

/* Add a password to u (its SHA-256): 0, or -1 out of memory. */
int acl_user_add_password(struct acl_user *u, const char *pass, size_t len);
void acl_user_clear_passwords(struct acl_user *u);

/* The rules are all applied: u's simple and restricted are set, and for a
 * restricted user the node user its scripts run as (acl.h), its password
 * keyed by cluster_password (NULL: none); with a key layout, its key
 * patterns match the cluster names of the names the user's match too
 * (keylayout/globmap.h). 0, or -1 out of memory. */
int acl_user_settle(struct acl_user *u, char *const *rules, int n,
                    const char *cluster_password, const struct layout *layout);

#endif
