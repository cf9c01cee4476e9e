/*
 * aclrule: one ACL rule read against the command table. See aclrule.h.
 */
#include "proxy/config/aclrule.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int category_find(const char *name)
{
    for (int i = 0; i < command_acl_category_count; i++)
        if (strcasecmp(name, command_acl_category_names[i]) == 0)
            return i;
    return -1;
}

static int has_blank(const char *s)
{
    for (; *s; s++)
        if (isspace((unsigned char)*s))
            return 1;
    return 0;
}

/* The words that take no argument, as Redis spells them (any case). */
static const struct {
    const char *word;
    enum acl_rule_kind kind;
    int on;
} words[] = {
    { "on", RULE_ON, 1 }, { "off", RULE_OFF, 0 }, { "nopass", RULE_NOPASS, 0 },
    { "resetpass", RULE_RESETPASS, 0 }, { "reset", RULE_RESET, 0 },
    { "clearselectors", RULE_CLEAR_SELECTORS, 0 },
    { "sanitize-payload", RULE_SANITIZE, 1 }, { "skip-sanitize-payload", RULE_SANITIZE, 0 },
    { "allkeys", RULE_ALL_KEYS, 0 }, { "~*", RULE_ALL_KEYS, 0 },
    { "resetkeys", RULE_RESET_KEYS, 0 },
    { "allchannels", RULE_ALL_CHANNELS, 0 }, { "&*", RULE_ALL_CHANNELS, 0 },
    { "resetchannels", RULE_RESET_CHANNELS, 0 },
    { "allcommands", RULE_ALL, 1 }, { "+@all", RULE_ALL, 1 },
    { "nocommands", RULE_ALL, 0 }, { "-@all", RULE_ALL, 0 },
};

/* ~pattern, %R~pattern, %W~pattern, %RW~pattern */
static int parse_keys(const char *s, struct acl_rule *r, char *why, size_t whylen)
{
    size_t at = 1;
    r->kind = RULE_KEYS;
    if (s[0] == '~') {
        r->perm = ACL_PERM_READ | ACL_PERM_WRITE;
    } else {
        for (;; at++) {
            char ch = (char)toupper((unsigned char)s[at]);
            if (ch == 'R' && !(r->perm & ACL_PERM_READ)) {
                r->perm |= ACL_PERM_READ;
            } else if (ch == 'W' && !(r->perm & ACL_PERM_WRITE)) {
                r->perm |= ACL_PERM_WRITE;
            } else if (ch == '~' && r->perm) {
                at++;
                break;
            } else {
                snprintf(why, whylen, "syntax error in ACL key rule '%.64s' (expected ~pattern, "
                         "%%R~pattern, %%W~pattern or %%RW~pattern)", s);
                return -1;
            }
        }
    }
    r->arg = s + at;
    r->arglen = strlen(r->arg);
    if (has_blank(r->arg)) {
        snprintf(why, whylen, "syntax error in ACL rule '%.64s': a pattern has no blanks", s);
        return -1;
    }
    return 0;                       /* (only "~*" itself is allkeys) */
}

/* +cmd, -cmd, +cmd|sub, -cmd|sub, +@cat, -@cat */
static int parse_command(const char *s, struct acl_rule *r, char *why, size_t whylen)
{
    r->on = s[0] == '+';
    s++;
    if (s[0] == '@') {
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
    if (r->cmd && bar && !r->cmd->nsubcommands) {
        /* Redis 7.0's first-argument rule (deprecated): only to allow */
        r->kind = RULE_FIRSTARG;
        r->arg = bar + 1;
        r->arglen = strlen(bar + 1);
        if (r->on && r->arglen > 0 && !strchr(r->arg, '|'))
            return 0;
        snprintf(why, whylen, "%s command's first argument in ACL rule '%c%.64s'",
                 r->on ? "an empty or nested" : "only '+' allows a", r->on ? '+' : '-', s);
        return -1;
    }
    if (r->cmd && bar)
        r->cmd = command_lookup_sub(r->cmd, bar + 1, strlen(bar + 1));
    if (!r->cmd) {
        snprintf(why, whylen, "unknown command '%.64s' in ACL rule", s);
        return -1;
    }
    return 0;
}

static int is_hex_hash(const char *s)
{
    size_t n = strlen(s);
    if (n != 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

int acl_rule_parse(const char *s, struct acl_rule *r, char *why, size_t whylen)
{
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasecmp(s, words[i].word) == 0) {
            r->kind = words[i].kind;
            r->on = words[i].on;
            return 0;
        }
    size_t len = strlen(s);
    r->arg = s + 1;
    r->arglen = len ? len - 1 : 0;
    switch (s[0]) {
    case '>': r->kind = RULE_ADD_PASS; return 0;
    case '<': r->kind = RULE_DEL_PASS; return 0;
    case '#':
    case '!':
        r->kind = s[0] == '#' ? RULE_ADD_HASH : RULE_DEL_HASH;
        if (is_hex_hash(s + 1))
            return 0;
        snprintf(why, whylen, "The password hash must be exactly 64 characters and contain "
                 "only lowercase hexadecimal characters");
        return -1;
    case '(':
        if (len < 2 || s[len - 1] != ')')
            break;
        r->kind = RULE_SELECTOR;
        r->arglen = len - 2;
        return 0;
    case '~':
    case '%':
        return parse_keys(s, r, why, whylen);
    case '&':
        r->kind = RULE_CHANNELS;
        if (!has_blank(r->arg))
            return 0;
        snprintf(why, whylen, "syntax error in ACL rule '%.64s': a pattern has no blanks", s);
        return -1;
    case '+':
    case '-':
        if (len > 1)
            return parse_command(s, r, why, whylen);
        break;
    }
    snprintf(why, whylen, "unknown ACL rule '%.64s' (see ACL SETUSER: on, off, >password, "
             "#hash, nopass, ~pattern, %%R~pattern, &channel, +@category, +command, "
             "(selector), ...)", s);
    return -1;
}

void acl_rules_free(char **rules, int n)
{
    for (int i = 0; rules && i < n; i++)
        free(rules[i]);
    free(rules);
}

static int ends_selector(const char *w)
{
    size_t l = strlen(w);
    return l > 0 && w[l - 1] == ')';
}

int acl_rules_merge(char *const *argv, int argc, char ***out, char *why, size_t whylen)
{
    char **rules = calloc((size_t)argc + 1, sizeof *rules);
    int n = 0;
    if (!rules)
        goto oom;
    for (int i = 0; i < argc; i++) {
        int last = i;
        size_t len = strlen(argv[i]);
        if (argv[i][0] == '(' && !(len > 1 && ends_selector(argv[i]))) {
            while (++last < argc && !ends_selector(argv[last]))
                len += 1 + strlen(argv[last]);
            if (last == argc) {
                snprintf(why, whylen, "unmatched '(' in ACL rules: a selector ends with ')'");
                acl_rules_free(rules, n);
                return -1;
            }
            len += 1 + strlen(argv[last]);
        }
        char *joined = malloc(len + 1), *at = joined;
        if (!joined)
            goto oom;
        for (int k = i; k <= last; k++) {
            size_t l = strlen(argv[k]);
            if (k > i)
                *at++ = ' ';
            memcpy(at, argv[k], l);
            at += l;
        }
        *at = '\0';
        rules[n++] = joined;
        i = last;
    }
    *out = rules;
    return n;
oom:
    acl_rules_free(rules, n);
    snprintf(why, whylen, "out of memory");
    return -1;
}
