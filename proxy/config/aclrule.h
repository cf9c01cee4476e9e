/*
 * aclrule: one rule of Redis 7.0's ACL SETUSER grammar (acl.h has what
 * each does), read against the command table. The config checks rules as
 * it loads them, the ACL applies them when it builds the users.
 *
 * A selector, "(~key:* +get)", is one rule whose text is what the
 * parentheses hold; on a config line its words arrive split at blanks, and
 * acl_rules_merge() joins them back as Redis's ACL file loader does.
 */
#ifndef TAGPROXY_ACLRULE_H
#define TAGPROXY_ACLRULE_H

#include <stddef.h>

#include "lib/proto/command.h"

#define ACL_PERM_READ  1u
#define ACL_PERM_WRITE 2u

enum acl_rule_kind {
    /* the user's own */
    RULE_ON, RULE_OFF, RULE_NOPASS, RULE_RESETPASS,
    RULE_ADD_PASS, RULE_DEL_PASS, RULE_ADD_HASH, RULE_DEL_HASH,
    RULE_RESET, RULE_CLEAR_SELECTORS, RULE_SELECTOR, RULE_SANITIZE,
    /* a selector's (the user's root selector, or one in parentheses) */
    RULE_ALL_KEYS, RULE_RESET_KEYS, RULE_KEYS,
    RULE_ALL_CHANNELS, RULE_RESET_CHANNELS, RULE_CHANNELS,
    RULE_ALL, RULE_CATEGORY, RULE_COMMAND, RULE_SUBCOMMAND,
    RULE_FIRSTARG                       /* +cmd|arg: cmd with that first argument */
};

struct acl_rule {
    enum acl_rule_kind kind;
    int on;                             /* +: allow (RULE_ALL .. RULE_SUBCOMMAND) */
    int category;                       /* RULE_CATEGORY */
    const struct command *cmd;          /* RULE_COMMAND, RULE_SUBCOMMAND, RULE_FIRSTARG */
    unsigned perm;                      /* RULE_KEYS: ACL_PERM_* */
    const char *arg;                    /* pattern, password, hash, selector's text */
    size_t arglen;
};

/* Read s into r (r->arg points into s): 0, or -1 with the reason in why. */
int acl_rule_parse(const char *s, struct acl_rule *r, char *why, size_t whylen);

/* Is kind one a selector takes (RULE_ALL_KEYS and after)? */
static inline int acl_rule_of_selector(enum acl_rule_kind kind)
{
    return kind >= RULE_ALL_KEYS;
}

/* argv[0..argc) with the words of each "(" ... ")" selector joined by one
 * blank into one, as malloc'd strings in *out (acl_rules_free). The count,
 * or -1 with the reason in why (an unclosed selector, out of memory). */
int acl_rules_merge(char *const *argv, int argc, char ***out, char *why, size_t whylen);
void acl_rules_free(char **rules, int n);

#endif
