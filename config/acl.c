/*
 * acl: command ids, user tables and constant-time logins (the rules are read
 * by aclrule.h). See acl.h for the rule grammar.
 */
#include "config/acl.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/aclrule.h"
#include "config/config.h"

/* More than the command table holds (240 in Redis 7.0). */
#define ACL_MAX_TOP 1024

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

/* ---- rules ---- */

/* A command and all its subcommands. */
static void apply_command(uint64_t *bits, const struct command *cmd, int on)
{
    bit_set(bits, cmd, on);
    for (int s = 0; s < cmd->nsubcommands; s++)
        bit_set(bits, &cmd->subcommands[s], on);
}

static void apply_category(uint64_t *bits, int category, int on)
{
    uint64_t mask = 1ULL << category;
    for (int i = 0; i < command_table_size; i++) {
        const struct command *cmd = &command_table[i];
        if (cmd->acl_categories & mask)
            bit_set(bits, cmd, on);
        for (int s = 0; s < cmd->nsubcommands; s++)
            if (cmd->subcommands[s].acl_categories & mask)
                bit_set(bits, &cmd->subcommands[s], on);
    }
}

static void rule_apply(uint64_t *bits, const struct acl_rule *r)
{
    switch (r->kind) {
    case RULE_ALL:
        memset(bits, r->on ? 0xff : 0, bitmap_words() * sizeof *bits);
        break;
    case RULE_CATEGORY:
        apply_category(bits, r->category, r->on);
        break;
    case RULE_COMMAND:
        apply_command(bits, r->cmd, r->on);
        break;
    case RULE_SUBCOMMAND:
        bit_set(bits, r->cmd, r->on);
        break;
    }
}

/* ---- users ---- */

static void digest(const char *s, size_t len, unsigned char out[ACL_DIGEST_LEN])
{
    unsigned int n = ACL_DIGEST_LEN;
    if (EVP_Digest(s, len, out, &n, EVP_sha256(), NULL) != 1)
        memset(out, 0, ACL_DIGEST_LEN);     /* never matches a real digest */
}

static int bitmap_full(const uint64_t *bits)
{
    for (int id = 0; id < acl_command_count; id++)
        if (!((bits[id >> 6] >> (id & 63)) & 1))
            return 0;
    return 1;
}

static void hex_of(const unsigned char *d, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[2 * n] = '\0';
}

/* The words of ACL SETUSER for u's node user, but its name and password:
 * everything a node user may have had is reset, then u's rules. */
static const char *const node_setup_head[] = {
    "ACL", "SETUSER", NULL, "on", "resetpass", NULL, "resetkeys", "resetchannels",
    "clearselectors", "-@all", "~*", "&*",
};
#define NODE_SETUP_NAME 2
#define NODE_SETUP_PASS 5
#define NODE_SETUP_HEAD ((int)(sizeof node_setup_head / sizeof node_setup_head[0]))

/* The node user that runs u's scripts (acl.h), from its rules. */
static int node_user_fill(struct acl_user *u, char *const *rules, int nrules,
                          const char *cluster_password)
{
    unsigned char d[ACL_DIGEST_LEN];
    unsigned int n = ACL_DIGEST_LEN;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
    for (int i = NODE_SETUP_PASS + 1; ok && i < NODE_SETUP_HEAD; i++)
        ok = EVP_DigestUpdate(ctx, node_setup_head[i], strlen(node_setup_head[i]) + 1) == 1;
    for (int i = 0; ok && i < nrules; i++)
        ok = EVP_DigestUpdate(ctx, rules[i], strlen(rules[i]) + 1) == 1;
    ok = ok && EVP_DigestFinal_ex(ctx, d, &n) == 1;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return -1;
    char hex[2 * ACL_DIGEST_LEN + 1];
    hex_of(d, 12, hex);
    snprintf(u->node_user, sizeof u->node_user, "tagproxy:%s", hex);

    const char *key = cluster_password ? cluster_password : "";
    if (!HMAC(EVP_sha256(), key, (int)strlen(key), (const unsigned char *)u->node_user,
              strlen(u->node_user), d, &n))
        return -1;
    hex_of(d, ACL_DIGEST_LEN, u->node_password);
    digest(u->node_password, strlen(u->node_password), d);
    char pass_rule[2 * ACL_DIGEST_LEN + 2] = "#";
    hex_of(d, ACL_DIGEST_LEN, pass_rule + 1);

    u->node_setup_argc = NODE_SETUP_HEAD + nrules;
    u->node_setup = calloc((size_t)u->node_setup_argc, sizeof *u->node_setup);
    if (!u->node_setup)
        return -1;
    for (int i = 0; i < u->node_setup_argc; i++) {
        const char *w = i == NODE_SETUP_NAME ? u->node_user
                      : i == NODE_SETUP_PASS ? pass_rule
                      : i < NODE_SETUP_HEAD ? node_setup_head[i] : rules[i - NODE_SETUP_HEAD];
        if (!(u->node_setup[i] = strdup(w)))
            return -1;
    }
    return 0;
}

static int user_fill(struct acl_user *u, const char *name, const char *pass,
                     char *const *rules, int nrules, const char *cluster_password)
{
    u->name = strdup(name);
    u->allowed = calloc(bitmap_words(), sizeof *u->allowed);
    if (!u->name || !u->allowed)
        return -1;
    digest(name, strlen(name), u->name_digest);
    u->nopass = pass == NULL;
    digest(pass ? pass : "", pass ? strlen(pass) : 0, u->pass_digest);
    for (int i = 0; i < nrules; i++) {
        struct acl_rule r;
        char why[160];
        if (acl_rule_parse(rules[i], &r, why, sizeof why) < 0)
            return -1;              /* checked at load: cannot happen */
        rule_apply(u->allowed, &r);
    }
    u->restricted = !bitmap_full(u->allowed);
    return u->restricted ? node_user_fill(u, rules, nrules, cluster_password) : 0;
}

static const char *user_password(const struct config_user *cu)
{
    return strcmp(cu->argv[1], "nopass") == 0 ? NULL : cu->argv[1];
}

static int default_fill(struct acl_user *u, const struct config *c)
{
    static char *const all[] = { "allcommands" };
    for (int i = 0; i < c->nusers; i++) {
        const struct config_user *cu = &c->users[i];
        if (strcmp(cu->argv[0], "default") == 0)
            return user_fill(u, "default", c->requirepass ? c->requirepass : user_password(cu),
                             cu->argv + 2, cu->argc - 2, c->cluster_password);
    }
    return user_fill(u, "default", c->requirepass, all, 1, c->cluster_password);
}

struct acl *acl_build(const struct config *c, char *err, size_t errlen)
{
    struct acl *a = calloc(1, sizeof *a);
    if (acl_command_count == 0)
        acl_init_ids();
    if (!a || !(a->users = calloc((size_t)c->nusers + 1, sizeof *a->users)))
        goto oom;
    a->nusers = 1;
    if (default_fill(&a->users[0], c) < 0)
        goto oom;
    for (int i = 0; i < c->nusers; i++) {
        const struct config_user *cu = &c->users[i];
        if (strcmp(cu->argv[0], "default") == 0)
            continue;
        if (user_fill(&a->users[a->nusers++], cu->argv[0], user_password(cu),
                      cu->argv + 2, cu->argc - 2, c->cluster_password) < 0)
            goto oom;
    }
    return a;
oom:
    snprintf(err, errlen, "out of memory building the users");
    acl_free(a);
    return NULL;
}

void acl_free(struct acl *a)
{
    if (!a)
        return;
    for (int i = 0; a->users && i < a->nusers; i++) {
        free(a->users[i].name);
        free(a->users[i].allowed);
        for (int k = 0; a->users[i].node_setup && k < a->users[i].node_setup_argc; k++)
            free(a->users[i].node_setup[k]);
        free(a->users[i].node_setup);
    }
    free(a->users);
    free(a);
}

const struct acl_user *acl_user_named(const struct acl *a, const char *name, size_t namelen)
{
    for (int i = 0; i < a->nusers; i++)
        if (strlen(a->users[i].name) == namelen && memcmp(a->users[i].name, name, namelen) == 0)
            return &a->users[i];
    return NULL;
}

const struct acl_user *acl_authenticate(const struct acl *a, const char *name, size_t namelen,
                                        const char *pass, size_t passlen)
{
    static const unsigned char no_user[ACL_DIGEST_LEN];
    unsigned char nd[ACL_DIGEST_LEN], pd[ACL_DIGEST_LEN];
    const struct acl_user *found = NULL;
    digest(name, namelen, nd);
    digest(pass, passlen, pd);
    /* every user is looked at, whoever matches */
    for (int i = 0; i < a->nusers; i++) {
        int same = CRYPTO_memcmp(nd, a->users[i].name_digest, ACL_DIGEST_LEN) == 0;
        found = same ? &a->users[i] : found;
    }
    /* a password is compared even without a user, so both cost the same */
    int pass_ok = CRYPTO_memcmp(pd, found ? found->pass_digest : no_user, ACL_DIGEST_LEN) == 0;
    if (!found)
        return NULL;
    return found->nopass || pass_ok ? found : NULL;
}
