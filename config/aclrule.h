/*
 * aclrule: one ACL rule of a `user` line (acl.h has the grammar) read
 * against the command table: the config checks rules as it loads them, the
 * ACL applies them when it builds the users.
 */
#ifndef TAGPROXY_ACLRULE_H
#define TAGPROXY_ACLRULE_H

#include <stddef.h>

#include "proto/command.h"

enum acl_rule_kind { RULE_ALL, RULE_CATEGORY, RULE_COMMAND, RULE_SUBCOMMAND };

struct acl_rule {
    int on;
    enum acl_rule_kind kind;
    int category;                       /* RULE_CATEGORY */
    const struct command *cmd;          /* RULE_COMMAND, RULE_SUBCOMMAND */
};

/* Read s into r: 0, or -1 with the reason in why. */
int acl_rule_parse(const char *s, struct acl_rule *r, char *why, size_t whylen);

/* Is rule one of the forms of acl.h, naming a known command or category?
 * 0, or -1 with the reason in why. Needs no acl_init_ids(). */
int acl_rule_check(const char *rule, char *why, size_t whylen);

#endif
