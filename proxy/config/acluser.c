/*
 * acluser: command ids, a user built from its rules, its node user, and
 * permission checks. See acl.h for the rules.
 */
#include "proxy/config/acluser.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "keylayout/glob.h"
#include "keylayout/globmap.h"

/* More than the command table holds (240 in Redis 7.0). */
#define ACL_MAX_TOP 1024
/* Keys of one command checked from the stack; more are malloc'd. */
#define ACL_KEYS_ON_STACK 64

int acl_sub_base[ACL_MAX_TOP];
int acl_command_count;

void acl_init_ids(void)
{
    int next = command_table_size;
    for (int i = 0; i < command_table_size && i < ACL_MAX_TOP; i++) {
        acl_sub_base[i] = next;
        next += command_table[i].nsubcommands;
    }
    acl_command_count = next;
}

static size_t bitmap_words(void)
{
    return (size_t)(acl_command_count + 63) / 64;
}

static void bit_set(uint64_t *bits, const struct command *cmd, int on)
{
    int id = acl_command_id(cmd);
    if (on)
        bits[id >> 6] |= 1ULL << (id & 63);
    else
        bits[id >> 6] &= ~(1ULL << (id & 63));
}

void acl_digest(const char *s, size_t len, unsigned char out[ACL_DIGEST_LEN])
{
    unsigned int n = ACL_DIGEST_LEN;
    if (EVP_Digest(s, len, out, &n, EVP_sha256(), NULL) != 1)
        memset(out, 0, ACL_DIGEST_LEN);     /* never matches a real digest */
}

void acl_hex(const unsigned char *d, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[2 * n] = '\0';
}

static void unhex(const char *s, unsigned char *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = s[2 * i] <= '9' ? s[2 * i] - '0' : s[2 * i] - 'a' + 10;
        int lo = s[2 * i + 1] <= '9' ? s[2 * i + 1] - '0' : s[2 * i + 1] - 'a' + 10;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
}

/* ---- selectors ---- */

static int selector_init(struct acl_selector *s)
{
    memset(s, 0, sizeof *s);
    s->allowed = calloc(bitmap_words(), sizeof *s->allowed);
    return s->allowed ? 0 : -1;
}

static void patterns_free(struct acl_pattern *p, int n)
{
    for (int i = 0; i < n; i++)
        free(p[i].text);
    free(p);
}

static void firstargs_drop(struct acl_selector *s, const struct command *cmd, uint64_t category)
{
    int kept = 0;
    for (int i = 0; i < s->nfirstargs; i++) {
        const struct command *c = s->firstargs[i].cmd;
        int drop = !cmd && !category ? 1 : cmd ? c == cmd : (c->acl_categories & category) != 0;
        if (drop)
            free(s->firstargs[i].arg);
        else
            s->firstargs[kept++] = s->firstargs[i];
    }
    s->nfirstargs = kept;
}

/* +cmd|arg: once, whatever the case of arg. */
static int firstarg_add(struct acl_selector *s, const struct command *cmd, const char *arg)
{
    for (int i = 0; i < s->nfirstargs; i++)
        if (s->firstargs[i].cmd == cmd && strcasecmp(s->firstargs[i].arg, arg) == 0)
            return 0;
    struct acl_firstarg *grown = realloc(s->firstargs, sizeof *grown * (size_t)(s->nfirstargs + 1));
    if (!grown)
        return -1;
    s->firstargs = grown;
    if (!(grown[s->nfirstargs].arg = strdup(arg)))
        return -1;
    grown[s->nfirstargs++].cmd = cmd;
    return 0;
}

/* A category rule (ACL_GRANT_ALL: every command), for the commands learned
 * later: +@all or -@all makes every earlier one moot. */
static int grant_add(struct acl_selector *s, int category_or_all, int on)
{
    if (category_or_all == ACL_GRANT_ALL)
        s->ngrants = 0;
    signed char *grown = realloc(s->grants, (size_t)s->ngrants + 1);
    if (!grown)
        return -1;
    s->grants = grown;
    s->grants[s->ngrants++] = (signed char)(on ? category_or_all : -category_or_all);
    return 0;
}

/* Whether s's rules allow learned cmd: its category rules replayed, as
 * Redis applies a category to the commands of its table in order. */
static int learned_allowed(const struct acl_selector *s, const struct command *cmd)
{
    int allowed = 0;
    for (int i = 0; i < s->ngrants; i++) {
        int g = s->grants[i], which = g < 0 ? -g : g;
        if (which == ACL_GRANT_ALL || (cmd->acl_categories & (1ULL << (which - 1))))
            allowed = g > 0;
    }
    return allowed;
}

static void selector_free(struct acl_selector *s)
{
    free(s->grants);
    firstargs_drop(s, NULL, 0);
    free(s->firstargs);
    free(s->allowed);
    patterns_free(s->keys, s->nkeys);
    patterns_free(s->channels, s->nchannels);
    memset(s, 0, sizeof *s);
}

/* A pattern added once: again, only its permissions grow. */
static int pattern_add(struct acl_pattern **list, int *n, const char *text, size_t len,
                       unsigned perm)
{
    for (int i = 0; i < *n; i++)
        if ((*list)[i].len == len && memcmp((*list)[i].text, text, len) == 0) {
            (*list)[i].perm |= perm;
            return 0;
        }
    struct acl_pattern *grown = realloc(*list, sizeof *grown * (size_t)(*n + 1));
    if (!grown)
        return -1;
    *list = grown;
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, text, len);
    copy[len] = '\0';
    grown[(*n)++] = (struct acl_pattern){ copy, len, perm };
    return 0;
}

static void apply_command(uint64_t *bits, const struct command *cmd, int on)
{
    bit_set(bits, cmd, on);
    for (int s = 0; s < cmd->nsubcommands; s++)
        bit_set(bits, &cmd->subcommands[s], on);
}

/* As Redis's ACLSetSelectorCommandBitsForCategoryLogic: a container in the
 * category takes all its subcommands with it, then each subcommand in it. */
static void apply_category(uint64_t *bits, int category, int on)
{
    uint64_t mask = 1ULL << category;
    for (int i = 0; i < command_table_size; i++) {
        const struct command *cmd = &command_table[i];
        if (cmd->acl_categories & mask)
            apply_command(bits, cmd, on);
        for (int s = 0; s < cmd->nsubcommands; s++)
            if (cmd->subcommands[s].acl_categories & mask)
                bit_set(bits, &cmd->subcommands[s], on);
    }
}

static const char too_late_keys[] =
    "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not "
    "have any effect. Try 'resetkeys' to start with an empty list of patterns";
static const char too_late_channels[] =
    "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does "
    "not have any effect. Try 'resetchannels' to start with an empty list of channels";

static void patterns_reset(struct acl_pattern **list, int *n)
{
    patterns_free(*list, *n);
    *list = NULL;
    *n = 0;
}

/* ~pattern or &pattern: refused after allkeys (allchannels), as Redis. */
static int pattern_rule(struct acl_pattern **list, int *n, int all, const char *too_late,
                        const struct acl_rule *r, char *why, size_t whylen)
{
    if (all) {
        snprintf(why, whylen, "%s", too_late);
        return -1;
    }
    return pattern_add(list, n, r->arg, r->arglen, r->kind == RULE_KEYS ? r->perm : 0);
}

static int selector_apply(struct acl_selector *s, const struct acl_rule *r, char *why,
                          size_t whylen)
{
    switch (r->kind) {
    case RULE_ALL_KEYS:
    case RULE_RESET_KEYS:
        patterns_reset(&s->keys, &s->nkeys);
        s->all_keys = r->kind == RULE_ALL_KEYS;
        return 0;
    case RULE_KEYS:
        return pattern_rule(&s->keys, &s->nkeys, s->all_keys, too_late_keys, r, why, whylen);
    case RULE_ALL_CHANNELS:
    case RULE_RESET_CHANNELS:
        patterns_reset(&s->channels, &s->nchannels);
        s->all_channels = r->kind == RULE_ALL_CHANNELS;
        return 0;
    case RULE_CHANNELS:
        return pattern_rule(&s->channels, &s->nchannels, s->all_channels, too_late_channels, r,
                            why, whylen);
    case RULE_ALL:
        memset(s->allowed, r->on ? 0xff : 0, bitmap_words() * sizeof *s->allowed);
        s->all_commands = (unsigned)r->on;
        firstargs_drop(s, NULL, 0);
        return grant_add(s, ACL_GRANT_ALL, r->on);
    case RULE_CATEGORY:
        apply_category(s->allowed, r->category, r->on);
        firstargs_drop(s, NULL, 1ULL << r->category);
        return grant_add(s, r->category + 1, r->on);
    case RULE_COMMAND:
        apply_command(s->allowed, r->cmd, r->on);
        firstargs_drop(s, r->cmd, 0);
        return 0;
    case RULE_FIRSTARG:
        return firstarg_add(s, r->cmd, r->arg);
    case RULE_SUBCOMMAND:
        bit_set(s->allowed, r->cmd, r->on);
        return 0;
    default:
        snprintf(why, whylen, "Syntax error");
        return -1;
    }
}

/* "(RULES)": a new selector from the rules inside. */
/* A rule as an error may show it: never a password's text. */
static const char *shown_rule(const char *rule)
{
    if (rule[0] == '>')
        return ">(a password)";
    if (rule[0] == '<')
        return "<(a password)";
    return rule;
}

static int selector_parse(struct acl_selector *s, const char *text, size_t len, char *why,
                          size_t whylen)
{
    /* a node reads a selector's words as Redis's sdssplitargs does, quotes
     * and escapes included: one it would read otherwise is refused */
    for (size_t i = 0; i < len; i++)
        if (text[i] == '"' || text[i] == '\'' || text[i] == '\\') {
            snprintf(why, whylen, "a selector's rules may not hold quotes or backslashes");
            return -1;
        }
    char *copy = malloc(len + 1), *save = NULL;
    if (!copy || selector_init(s) < 0) {
        free(copy);
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    int rc = 0;
    for (char *w = strtok_r(copy, " ", &save); w && rc == 0; w = strtok_r(NULL, " ", &save)) {
        struct acl_rule r;
        rc = acl_rule_parse(w, &r, why, whylen);
        if (rc == 0 && !acl_rule_of_selector(r.kind)) {
            snprintf(why, whylen, "Syntax error: '%.64s' is not a selector's rule",
                     shown_rule(w));
            rc = -1;
        }
        if (rc == 0)
            rc = selector_apply(s, &r, why, whylen);
    }
    free(copy);
    if (rc < 0)
        selector_free(s);
    return rc;
}

/* ---- users ---- */

static int password_find(const struct acl_user *u, const unsigned char d[ACL_DIGEST_LEN])
{
    for (int i = 0; i < u->npasswords; i++)
        if (memcmp(u->passwords[i], d, ACL_DIGEST_LEN) == 0)
            return i;
    return -1;
}

static int password_add(struct acl_user *u, const unsigned char d[ACL_DIGEST_LEN])
{
    u->nopass = 0;
    if (password_find(u, d) >= 0)
        return 0;
    void *grown = realloc(u->passwords, sizeof *u->passwords * (size_t)(u->npasswords + 1));
    if (!grown)
        return -1;
    u->passwords = grown;
    memcpy(u->passwords[u->npasswords++], d, ACL_DIGEST_LEN);
    return 0;
}

static int password_del(struct acl_user *u, const unsigned char d[ACL_DIGEST_LEN], char *why,
                        size_t whylen)
{
    int i = password_find(u, d);
    if (i < 0) {
        snprintf(why, whylen, "The password you are trying to remove from the user does not "
                 "exist");
        return -1;
    }
    memmove(u->passwords[i], u->passwords[i + 1],
            sizeof *u->passwords * (size_t)(u->npasswords - i - 1));
    u->npasswords--;
    return 0;
}

static void passwords_clear(struct acl_user *u)
{
    free(u->passwords);
    u->passwords = NULL;
    u->npasswords = 0;
}

static void selectors_clear(struct acl_user *u)
{
    for (int i = 1; i < u->nselectors; i++)
        selector_free(&u->selectors[i]);
    u->nselectors = u->nselectors ? 1 : 0;
}

static int user_apply(struct acl_user *u, const struct acl_rule *r, char *why, size_t whylen)
{
    unsigned char d[ACL_DIGEST_LEN];
    struct acl_selector *root = &u->selectors[0];
    switch (r->kind) {
    case RULE_ON:
    case RULE_OFF:
        u->enabled = r->kind == RULE_ON;
        return 0;
    case RULE_SANITIZE:     /* RESTORE's payload check: the nodes' business, shown */
        u->sanitize = r->on ? ACL_SANITIZE : ACL_SKIP_SANITIZE;
        return 0;
    case RULE_NOPASS:
        passwords_clear(u);
        u->nopass = 1;
        return 0;
    case RULE_RESETPASS:
        passwords_clear(u);
        u->nopass = 0;
        return 0;
    case RULE_ADD_PASS:
    case RULE_DEL_PASS:
        acl_digest(r->arg, r->arglen, d);
        return r->kind == RULE_ADD_PASS ? password_add(u, d) : password_del(u, d, why, whylen);
    case RULE_ADD_HASH:
    case RULE_DEL_HASH:
        unhex(r->arg, d, ACL_DIGEST_LEN);
        return r->kind == RULE_ADD_HASH ? password_add(u, d) : password_del(u, d, why, whylen);
    case RULE_RESET: {
        static const struct acl_rule reset[] = {
            { .kind = RULE_RESETPASS }, { .kind = RULE_RESET_KEYS },
            { .kind = RULE_RESET_CHANNELS }, { .kind = RULE_OFF },
            { .kind = RULE_SANITIZE, .on = 1 }, { .kind = RULE_CLEAR_SELECTORS },
            { .kind = RULE_ALL, .on = 0 },
        };
        for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++)
            if (user_apply(u, &reset[i], why, whylen) < 0)
                return -1;
        return 0;
    }
    case RULE_CLEAR_SELECTORS:
        selectors_clear(u);
        return 0;
    case RULE_SELECTOR: {
        struct acl_selector *grown = realloc(u->selectors,
                                             sizeof *grown * (size_t)(u->nselectors + 1));
        if (!grown)
            return -1;
        u->selectors = grown;
        if (selector_parse(&grown[u->nselectors], r->arg, r->arglen, why, whylen) < 0)
            return -1;
        u->nselectors++;
        return 0;
    }
    default:
        return selector_apply(root, r, why, whylen);
    }
}

void acl_user_free(struct acl_user *u)
{
    free(u->name);
    passwords_clear(u);
    for (int i = 0; i < u->nselectors; i++)
        selector_free(&u->selectors[i]);
    free(u->selectors);
    acl_rules_free(u->node_setup, u->node_setup_argc);
    memset(u, 0, sizeof *u);
}

int acl_user_init(struct acl_user *u, const char *name)
{
    memset(u, 0, sizeof *u);
    u->name = strdup(name);
    u->selectors = calloc(1, sizeof *u->selectors);
    if (!u->name || !u->selectors || selector_init(&u->selectors[0]) < 0)
        return -1;
    u->nselectors = 1;
    acl_digest(name, strlen(name), u->name_digest);
    return 0;
}

int acl_user_apply(struct acl_user *u, char *const *rules, int n, char *why, size_t whylen)
{
    for (int i = 0; i < n; i++) {
        struct acl_rule r;
        char inner[200] = "";
        if (acl_rule_parse(rules[i], &r, why, whylen) < 0)
            return -1;
        if (user_apply(u, &r, inner, sizeof inner) < 0) {
            snprintf(why, whylen, "Error in ACL rule '%.64s': %s", shown_rule(rules[i]),
                     inner[0] ? inner : "out of memory");
            return -1;
        }
    }
    return 0;
}

static int bitmap_full(const uint64_t *bits)
{
    for (int id = 0; id < acl_command_count; id++)
        if (!((bits[id >> 6] >> (id & 63)) & 1))
            return 0;
    return 1;
}

static void settle_flags(struct acl_user *u)
{
    const struct acl_selector *root = &u->selectors[0];
    u->simple = u->nselectors == 1 && root->all_keys && root->all_channels &&
                root->nfirstargs == 0;
    u->restricted = !(u->simple && root->all_commands && bitmap_full(root->allowed));
}

int acl_rules_check(char *const *rules, int n, char *why, size_t whylen)
{
    struct acl_user u;
    if (acl_command_count == 0)
        acl_init_ids();
    int rc = acl_user_init(&u, "check") == 0 ? acl_user_apply(&u, rules, n, why, whylen) : -1;
    if (rc < 0 && !why[0])
        snprintf(why, whylen, "out of memory");
    acl_user_free(&u);
    return rc;
}

/* ---- the node user of a restricted user ---- */

/* The words of ACL SETUSER for a node user, but its name and password:
 * everything a node user may have had is reset, then the user's rules. */
static const char *const node_setup_head[] = {
    "ACL", "SETUSER", NULL, "on", "resetpass", NULL, "resetkeys", "resetchannels",
    "clearselectors", "-@all",
};
#define NODE_SETUP_NAME 2
#define NODE_SETUP_PASS 5
#define NODE_SETUP_HEAD ((int)(sizeof node_setup_head / sizeof node_setup_head[0]))

/* Of the user's rules, the node user takes those that say what it may do:
 * not its passwords, on and off; reset without them. */
static const char *node_rule(const char *rule)
{
    struct acl_rule r;
    char why[200];
    if (acl_rule_parse(rule, &r, why, sizeof why) < 0)
        return NULL;
    switch (r.kind) {
    case RULE_ON: case RULE_OFF: case RULE_NOPASS: case RULE_RESETPASS:
    case RULE_ADD_PASS: case RULE_DEL_PASS: case RULE_ADD_HASH: case RULE_DEL_HASH:
    case RULE_SANITIZE:
        return NULL;
    case RULE_RESET:
        return "resetkeys resetchannels clearselectors -@all";
    default:
        return rule;
    }
}

/* The words of a node user's ACL SETUSER, growing. */
struct words {
    char **w;
    int n, cap;
};

static int words_add(struct words *ws, const char *s, size_t len)
{
    if (ws->n == ws->cap) {
        int cap = ws->cap ? 2 * ws->cap : 32;
        char **grown = realloc(ws->w, sizeof *grown * (size_t)cap);
        if (!grown)
            return -1;
        ws->w = grown;
        ws->cap = cap;
    }
    return (ws->w[ws->n++] = strndup(s, len)) ? 0 : -1;
}

/* A key pattern rule mapped to the cluster names (keylayout/globmap.h): the
 * rule, then its permission and each glob, into text (NUL-separated
 * words). */
struct mapped {
    const char *perm;               /* "~", "%R~", ... as the rule says it */
    size_t permlen;
    struct words *into;
    int failed;
};

static void mapped_add(void *arg, const char *glob, size_t len)
{
    struct mapped *m = arg;
    char *w = malloc(m->permlen + len + 1);
    if (!w) {
        m->failed = 1;
        return;
    }
    memcpy(w, m->perm, m->permlen);
    memcpy(w + m->permlen, glob, len);
    if (words_add(m->into, w, m->permlen + len) < 0)
        m->failed = 1;
    free(w);
}

/* Add rule (one word, no selector) for the node user: a key pattern also
 * as the cluster names the layout gives the names it matches. */
static int node_word(struct acl_user *u, struct words *ws, const char *rule,
                     const struct layout *layout)
{
    struct acl_rule r;
    char why[200];
    if (words_add(ws, rule, strlen(rule)) < 0)
        return -1;
    if (!layout || acl_rule_parse(rule, &r, why, sizeof why) < 0 || r.kind != RULE_KEYS)
        return 0;
    struct mapped m = { rule, (size_t)(r.arg - rule), ws, 0 };
    if (globmap_cluster(layout, r.arg, r.arglen, mapped_add, &m) < 0 && !u->node_keys_unmapped[0])
        snprintf(u->node_keys_unmapped, sizeof u->node_keys_unmapped, "%s", rule);
    return m.failed ? -1 : 0;
}

/* A selector "(rules)" for the node user, its key patterns mapped. */
static int node_selector(struct acl_user *u, struct words *ws, const char *sel,
                         const struct layout *layout)
{
    struct words inner = { 0 };
    size_t len = strlen(sel), total = 0;
    char *copy = strndup(sel + 1, len - 2), *save = NULL;     /* without ( ) */
    int rc = copy ? 0 : -1;
    for (char *t = copy ? strtok_r(copy, " ", &save) : NULL; t && rc == 0;
         t = strtok_r(NULL, " ", &save))
        rc = node_word(u, &inner, t, layout);
    for (int i = 0; i < inner.n; i++)
        total += strlen(inner.w[i]) + 1;
    char *joined = rc == 0 ? malloc(total + 2) : NULL, *at = joined;
    if (joined) {
        *at++ = '(';
        for (int i = 0; i < inner.n; i++)
            at += sprintf(at, i ? " %s" : "%s", inner.w[i]);
        *at++ = ')';
        rc = words_add(ws, joined, (size_t)(at - joined));
    } else {
        rc = -1;
    }
    free(joined);
    free(copy);
    for (int i = 0; i < inner.n; i++)
        free(inner.w[i]);
    free(inner.w);
    return rc;
}

static int node_user_fill(struct acl_user *u, char *const *rules, int nrules,
                          const char *cluster_password, const struct layout *layout)
{
    struct words ws = { 0 };
    int rc = 0;
    for (int i = 0; i < NODE_SETUP_HEAD && rc == 0; i++)
        rc = words_add(&ws, node_setup_head[i] ? node_setup_head[i] : "", 
                       node_setup_head[i] ? strlen(node_setup_head[i]) : 0);
    for (int i = 0; i < nrules && rc == 0; i++) {
        const char *w = node_rule(rules[i]);
        if (w && w != rules[i]) {           /* reset: its four words */
            char copy[64], *save = NULL;
            snprintf(copy, sizeof copy, "%s", w);
            for (char *t = strtok_r(copy, " ", &save); t && rc == 0; t = strtok_r(NULL, " ", &save))
                rc = words_add(&ws, t, strlen(t));
        } else if (w && w[0] == '(') {
            rc = node_selector(u, &ws, w, layout);
        } else if (w) {
            rc = node_word(u, &ws, w, layout);
        }
    }
    u->node_setup = ws.w;                   /* all freed with u, should one fail */
    u->node_setup_argc = ws.n;
    if (rc < 0)
        return -1;
    int n = ws.n;

    /* the name: an HMAC of the rules keyed by cluster-password, so proxies
     * that log in to the cluster alike share it, and others (another
     * password) never reset its password under them; the password: an
     * HMAC of the name */
    unsigned char d[ACL_DIGEST_LEN];
    unsigned int dn = ACL_DIGEST_LEN;
    const char *key = cluster_password ? cluster_password : "";
    size_t total = 0;
    for (int i = NODE_SETUP_PASS + 1; i < n; i++)
        total += strlen(u->node_setup[i]) + 1;
    unsigned char *rules_text = malloc(total + 1), *at = rules_text;
    if (!rules_text)
        return -1;
    for (int i = NODE_SETUP_PASS + 1; i < n; i++) {
        size_t l = strlen(u->node_setup[i]) + 1;     /* with its NUL: words stay apart */
        memcpy(at, u->node_setup[i], l);
        at += l;
    }
    int ok = HMAC(EVP_sha256(), key, (int)strlen(key), rules_text, total, d, &dn) != NULL;
    free(rules_text);
    if (!ok)
        return -1;
    char hex[2 * ACL_DIGEST_LEN + 1];
    acl_hex(d, 12, hex);
    snprintf(u->node_user, sizeof u->node_user, "tagproxy:%s", hex);
    if (!HMAC(EVP_sha256(), key, (int)strlen(key), (const unsigned char *)u->node_user,
              strlen(u->node_user), d, &dn))
        return -1;
    acl_hex(d, ACL_DIGEST_LEN, u->node_password);
    acl_digest(u->node_password, strlen(u->node_password), d);
    char pass_rule[2 * ACL_DIGEST_LEN + 2] = "#";
    acl_hex(d, ACL_DIGEST_LEN, pass_rule + 1);
    free(u->node_setup[NODE_SETUP_NAME]);
    free(u->node_setup[NODE_SETUP_PASS]);
    u->node_setup[NODE_SETUP_NAME] = strdup(u->node_user);
    u->node_setup[NODE_SETUP_PASS] = strdup(pass_rule);
    return u->node_setup[NODE_SETUP_NAME] && u->node_setup[NODE_SETUP_PASS] ? 0 : -1;
}

/* ---- checks ---- */

static unsigned key_perm_needed(uint32_t spec_flags)
{
    unsigned p = 0;
    if (spec_flags & KSPEC_ACCESS)
        p |= ACL_PERM_READ;
    if (spec_flags & (KSPEC_INSERT | KSPEC_DELETE | KSPEC_UPDATE))
        p |= ACL_PERM_WRITE;
    return p;
}

static int key_allowed(const struct acl_selector *s, const char *key, size_t len, unsigned perm)
{
    for (int i = 0; i < s->nkeys; i++)
        if ((s->keys[i].perm & perm) == perm &&
            glob_match(s->keys[i].text, s->keys[i].len, key, len))
            return 1;
    return 0;
}

static int channel_allowed(const struct acl_selector *s, const char *ch, size_t len,
                           int literal)
{
    for (int i = 0; i < s->nchannels; i++) {
        const struct acl_pattern *p = &s->channels[i];
        if (literal ? p->len == len && memcmp(p->text, ch, len) == 0
                    : glob_match(p->text, p->len, ch, len))
            return 1;
    }
    return 0;
}

/* The commands whose channels the ACL checks: from which argument, and
 * whether they are patterns matched literally (PSUBSCRIBE). */
static int channel_args(const struct command *cmd, int *first, int *last, int argc, int *literal)
{
    const char *n = cmd->fullname;
    *literal = 0;
    *first = 1;
    if (strcmp(n, "publish") == 0 || strcmp(n, "spublish") == 0) {
        *last = argc > 1 ? 1 : 0;
        return 1;
    }
    *last = argc - 1;
    if (strcmp(n, "subscribe") == 0 || strcmp(n, "ssubscribe") == 0)
        return 1;
    if (strcmp(n, "psubscribe") == 0) {
        *literal = 1;
        return 1;
    }
    return 0;
}

static enum acl_verdict keys_check(const struct acl_selector *s, const struct command *cmd,
                                   const char *base, const struct resp_arg *args, int argc,
                                   int *errpos)
{
    int keys_stack[ACL_KEYS_ON_STACK];
    uint32_t flags_stack[ACL_KEYS_ON_STACK];
    int *keys = keys_stack;
    uint32_t *flags = flags_stack;
    int n = command_keys_flags(cmd, base, args, argc, keys, flags, ACL_KEYS_ON_STACK, 0);
    enum acl_verdict v = ACL_OK;
    if (n > ACL_KEYS_ON_STACK) {
        keys = malloc(sizeof *keys * (size_t)n);
        flags = malloc(sizeof *flags * (size_t)n);
        if (!keys || !flags) {
            v = ACL_DENIED_KEY;         /* refused, never allowed, by a lack of memory */
            n = 0;
        } else {
            n = command_keys_flags(cmd, base, args, argc, keys, flags, n, 0);
        }
    }
    for (int i = 0; i < n; i++) {
        const struct resp_arg *a = &args[keys[i]];
        if (!key_allowed(s, base + a->off, a->len, key_perm_needed(flags[i]))) {
            *errpos = keys[i];
            v = ACL_DENIED_KEY;
            break;
        }
    }
    if (keys != keys_stack) {
        free(keys);
        free(flags);
    }
    return v;
}

/* A command its bit refuses, allowed by a +cmd|arg rule for its first
 * argument (any case), as Redis 7.0. */
static int firstarg_allows(const struct acl_selector *s, const struct command *cmd,
                           const char *base, const struct resp_arg *args, int argc)
{
    int at = cmd->parent ? 2 : 1;
    if (s->nfirstargs == 0 || argc <= at)
        return 0;
    for (int i = 0; i < s->nfirstargs; i++)
        if (s->firstargs[i].cmd == cmd && strlen(s->firstargs[i].arg) == args[at].len &&
            strncasecmp(s->firstargs[i].arg, base + args[at].off, args[at].len) == 0)
            return 1;
    return 0;
}

static enum acl_verdict selector_check(const struct acl_selector *s, const struct command *cmd,
                                       const struct command *specs, const char *base,
                                       const struct resp_arg *args, int argc, int *errpos)
{
    int first, last, literal;
    *errpos = 0;
    if (cmd->learned_index ? !learned_allowed(s, cmd)
                           : !acl_selector_allows(s, cmd) &&
                             !firstarg_allows(s, cmd, base, args, argc))
        return ACL_DENIED_CMD;
    if (!s->all_keys && command_has_keys(specs)) {
        enum acl_verdict v = keys_check(s, specs, base, args, argc, errpos);
        if (v != ACL_OK)
            return v;
    }
    if (!s->all_channels && (cmd->flags & CMD_PUBSUB) &&
        channel_args(cmd, &first, &last, argc, &literal))
        for (int i = first; i <= last; i++)
            if (!channel_allowed(s, base + args[i].off, args[i].len, literal)) {
                *errpos = i;
                return ACL_DENIED_CHANNEL;
            }
    return ACL_OK;
}

enum acl_verdict acl_check(const struct acl_user *u, const struct command *cmd,
                           const struct command *specs, const char *base,
                           const struct resp_arg *args, int argc, int *errpos)
{
    enum acl_verdict worst = ACL_OK;
    *errpos = 0;
    for (int i = 0; i < u->nselectors; i++) {
        int pos;
        enum acl_verdict v = selector_check(&u->selectors[i], cmd, specs ? specs : cmd, base,
                                            args, argc, &pos);
        if (v == ACL_OK)
            return ACL_OK;
        if (v > worst || (v == worst && pos > *errpos)) {     /* as Redis */
            worst = v;
            *errpos = pos;
        }
    }
    return worst;
}


int acl_user_add_password(struct acl_user *u, const char *pass, size_t len)
{
    unsigned char d[ACL_DIGEST_LEN];
    acl_digest(pass, len, d);
    return password_add(u, d);
}

void acl_user_clear_passwords(struct acl_user *u)
{
    passwords_clear(u);
}

int acl_user_settle(struct acl_user *u, char *const *rules, int n,
                    const char *cluster_password, const struct layout *layout)
{
    settle_flags(u);
    return u->restricted ? node_user_fill(u, rules, n, cluster_password, layout) : 0;
}

/* ---- ACL LIST and ACL GETUSER ---- */

struct text {
    char *out;
    size_t cap, len;
};

static void text_add(struct text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->len < t->cap) {
        size_t room = t->cap - t->len - 1;
        memcpy(t->out + t->len, s, n < room ? n : room);
        t->out[t->len + (n < room ? n : room)] = '\0';
    }
    t->len += n;
}

/* Bits of commands (and subcommands) in the category set and clear in bits. */
static void category_count(const uint64_t *bits, int category, unsigned long *on,
                           unsigned long *off)
{
    uint64_t mask = 1ULL << category;
    *on = *off = 0;
    for (int i = 0; i < command_table_size; i++) {
        const struct command *cmd = &command_table[i];
        for (int k = -1; k < cmd->nsubcommands; k++) {
            const struct command *c = k < 0 ? cmd : &cmd->subcommands[k];
            if (!(c->acl_categories & mask))
                continue;
            if (acl_bit(bits, c))
                (*on)++;
            else
                (*off)++;
        }
    }
}

/* The single commands where fake (what the categories give) differs. */
static void describe_singles(const struct acl_selector *s, uint64_t *fake,
                             const struct command *cmds, int n, struct text *t)
{
    for (int i = 0; i < n; i++) {
        const struct command *cmd = &cmds[i];
        int userbit = acl_bit(s->allowed, cmd);
        if (userbit != acl_bit(fake, cmd)) {
            text_add(t, userbit ? "+" : "-");
            text_add(t, cmd->fullname);
            text_add(t, " ");
            apply_command(fake, cmd, userbit);
        }
        if (cmd->nsubcommands)
            describe_singles(s, fake, cmd->subcommands, cmd->nsubcommands, t);
        for (int k = 0; !userbit && k < s->nfirstargs; k++)
            if (s->firstargs[k].cmd == cmd) {
                text_add(t, "+");
                text_add(t, cmd->fullname);
                text_add(t, "|");
                text_add(t, s->firstargs[k].arg);
                text_add(t, " ");
            }
    }
}

/* Drop the last byte added, a blank. */
static void text_drop_last(struct text *t)
{
    if (t->len == 0)
        return;
    t->len--;
    if (t->len < t->cap)
        t->out[t->len] = '\0';
}

static void commands_text(const struct acl_selector *s, struct text *t)
{
    size_t words = bitmap_words();
    uint64_t *fake = calloc(words, sizeof *fake), *temp = malloc(words * sizeof *temp);
    char applied[64] = { 0 };
    int additive = !s->all_commands;
    if (!fake || !temp) {
        free(fake);
        free(temp);
        return;
    }
    text_add(t, additive ? "-@all " : "+@all ");
    memset(fake, additive ? 0 : 0xff, words * sizeof *fake);
    memcpy(temp, s->allowed, words * sizeof *temp);
    for (;;) {
        int best = -1;
        unsigned long mindiff = (unsigned long)-1, maxsame = 0;
        for (int j = 0; j < command_acl_category_count && j < 64; j++) {
            unsigned long on, off;
            if (applied[j])
                continue;
            category_count(temp, j, &on, &off);
            unsigned long diff = additive ? off : on, same = additive ? on : off;
            if (same > diff && (diff < mindiff || (diff == mindiff && same > maxsame))) {
                best = j;
                mindiff = diff;
                maxsame = same;
            }
        }
        if (best < 0)
            break;
        text_add(t, additive ? "+@" : "-@");
        text_add(t, command_acl_category_names[best]);
        text_add(t, " ");
        apply_category(fake, best, additive);
        apply_category(temp, best, !additive);
        applied[best] = 1;
    }
    describe_singles(s, fake, command_table, command_table_size, t);
    text_drop_last(t);                  /* every part ends with a blank */
    free(fake);
    free(temp);
}

static void keys_text(const struct acl_selector *s, struct text *t)
{
    if (s->all_keys) {
        text_add(t, "~*");
        return;
    }
    for (int i = 0; i < s->nkeys; i++) {
        unsigned p = s->keys[i].perm;
        if (i)
            text_add(t, " ");
        text_add(t, p == ACL_PERM_READ ? "%R~" : p == ACL_PERM_WRITE ? "%W~" : "~");
        text_add(t, s->keys[i].text);
    }
}

static void channels_text(const struct acl_selector *s, int list, struct text *t)
{
    if (s->all_channels) {
        text_add(t, "&*");
        return;
    }
    if (list)
        text_add(t, s->nchannels ? "resetchannels " : "resetchannels");
    for (int i = 0; i < s->nchannels; i++) {
        if (i)
            text_add(t, " ");
        text_add(t, "&");
        text_add(t, s->channels[i].text);
    }
}

/* A text into out[0..cap), empty so far. */
static struct text text_into(char *out, size_t cap)
{
    if (cap)
        out[0] = '\0';
    return (struct text){ out, cap, 0 };
}

size_t acl_describe_commands(const struct acl_selector *s, char *out, size_t cap)
{
    struct text t = text_into(out, cap);
    commands_text(s, &t);
    return t.len;
}

size_t acl_describe_keys(const struct acl_selector *s, char *out, size_t cap)
{
    struct text t = text_into(out, cap);
    keys_text(s, &t);
    return t.len;
}

size_t acl_describe_channels(const struct acl_selector *s, int list, char *out, size_t cap)
{
    struct text t = text_into(out, cap);
    channels_text(s, list, &t);
    return t.len;
}

/* As Redis's ACLDescribeSelector: keys, channels, commands, a blank after
 * each part that is there. */
static void describe_selector(const struct acl_selector *s, struct text *t)
{
    size_t before = t->len;
    keys_text(s, t);
    if (t->len > before)
        text_add(t, " ");
    channels_text(s, 1, t);
    text_add(t, " ");
    commands_text(s, t);
}

size_t acl_describe_user(const struct acl_user *u, char *out, size_t cap)
{
    struct text t = text_into(out, cap);
    char hex[2 * ACL_DIGEST_LEN + 1];
    text_add(&t, u->enabled ? "on " : "off ");
    if (u->nopass)
        text_add(&t, "nopass ");
    if (u->sanitize == ACL_SKIP_SANITIZE)
        text_add(&t, "skip-sanitize-payload ");
    else if (u->sanitize == ACL_SANITIZE)
        text_add(&t, "sanitize-payload ");
    for (int i = 0; i < u->npasswords; i++) {
        acl_hex(u->passwords[i], ACL_DIGEST_LEN, hex);
        text_add(&t, "#");
        text_add(&t, hex);
        text_add(&t, " ");
    }
    describe_selector(&u->selectors[0], &t);
    for (int i = 1; i < u->nselectors; i++) {
        text_add(&t, " (");
        describe_selector(&u->selectors[i], &t);
        text_add(&t, ")");
    }
    return t.len;
}

/* As Redis's ACLKillPubsubClientsIfNeeded: do the new rules allow fewer
 * channels than the old ones (not every old pattern is among the new)? */
int acl_channels_narrowed(const struct acl_user *old, const struct acl_user *now)
{
    for (int i = 0; i < now->nselectors; i++)
        if (now->selectors[i].all_channels)
            return 0;
    for (int i = 0; i < old->nselectors; i++) {
        const struct acl_selector *o = &old->selectors[i];
        if (o->all_channels)
            return 1;
        for (int k = 0; k < o->nchannels; k++) {
            int kept = 0;
            for (int j = 0; j < now->nselectors && !kept; j++)
                for (int m = 0; m < now->selectors[j].nchannels && !kept; m++)
                    kept = now->selectors[j].channels[m].len == o->channels[k].len &&
                           memcmp(now->selectors[j].channels[m].text, o->channels[k].text,
                                  o->channels[k].len) == 0;
            if (!kept)
                return 1;
        }
    }
    return 0;
}

int acl_full_key_access(const struct acl_user *u, const struct command *cmd, const char *base,
                        const struct resp_arg *args, int argc)
{
    for (int i = 0; i < u->nselectors; i++) {
        const struct acl_selector *s = &u->selectors[i];
        int pos;
        if (selector_check(s, cmd, cmd, base, args, argc, &pos) != ACL_OK)
            continue;
        if (s->all_keys)
            return 1;
        for (int k = 0; k < s->nkeys; k++)
            if ((s->keys[k].perm & ACL_PERM_READ) && s->keys[k].len == 1 &&
                s->keys[k].text[0] == '*')
                return 1;
    }
    return 0;
}

int acl_user_apply_setuser(struct acl_user *u, const char *rule, char *why, size_t whylen)
{
    struct acl_rule r;
    char parsed[200];
    if (acl_rule_parse(rule, &r, parsed, sizeof parsed) < 0) {
        /* Redis's reasons: its ACLSetUserStringError */
        if (rule[0] == '#' || rule[0] == '!')
            snprintf(why, whylen, "%s", parsed);
        else if ((rule[0] == '+' || rule[0] == '-') && rule[1])
            snprintf(why, whylen, "Unknown command or category name in ACL");
        else
            snprintf(why, whylen, "Syntax error");
        return -1;
    }
    why[0] = '\0';
    if (user_apply(u, &r, why, whylen) < 0) {
        if (!why[0])
            snprintf(why, whylen, "out of memory");
        return -1;
    }
    return 0;
}
