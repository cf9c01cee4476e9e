/*
 * aclrule: one ACL rule read against the command table. See aclrule.h.
 */
#include "config/aclrule.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static int category_find(const char *name)
{
    for (int i = 0; i < command_acl_category_count; i++)
        if (strcasecmp(name, command_acl_category_names[i]) == 0)
            return i;
    return -1;
}

int acl_rule_parse(const char *s, struct acl_rule *r, char *why, size_t whylen)
{
    memset(r, 0, sizeof *r);
    if (strcasecmp(s, "allcommands") == 0 || strcasecmp(s, "nocommands") == 0) {
        r->on = strcasecmp(s, "allcommands") == 0;
        r->kind = RULE_ALL;
        return 0;
    }
    if (s[0] != '+' && s[0] != '-') {
        snprintf(why, whylen, "unknown ACL rule '%.64s' (expected +cmd, -cmd, +cmd|sub, "
                 "+@category, -@category, allcommands or nocommands)", s);
        return -1;
    }
    r->on = s[0] == '+';
    s++;
    if (s[0] == '@') {
        if (strcasecmp(s + 1, "all") == 0) {
            r->kind = RULE_ALL;
            return 0;
        }
        r->kind = RULE_CATEGORY;
        r->category = category_find(s + 1);
        if (r->category < 0) {
            snprintf(why, whylen, "unknown ACL category '%.64s' (see ACL CAT)", s + 1);
            return -1;
        }
        return 0;
    }
    const char *bar = strchr(s, '|');
    r->kind = bar ? RULE_SUBCOMMAND : RULE_COMMAND;
    r->cmd = command_lookup(s, bar ? (size_t)(bar - s) : strlen(s));
    if (r->cmd && bar)
        r->cmd = r->cmd->nsubcommands ? command_lookup_sub(r->cmd, bar + 1, strlen(bar + 1)) : NULL;
    if (!r->cmd) {
        snprintf(why, whylen, "unknown command '%.64s' in ACL rule", s);
        return -1;
    }
    return 0;
}

int acl_rule_check(const char *rule, char *why, size_t whylen)
{
    struct acl_rule r;
    return acl_rule_parse(rule, &r, why, whylen);
}
