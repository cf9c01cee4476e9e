/*
 * acl: the users of a config, and constant-time logins. See acl.h.
 */
#include "proxy/config/acl.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/config/config.h"

/* ---- the users of a config ---- */

int acl_user_from_line(struct acl_user *u, const struct config_user *cu, const char *requirepass,
                       const struct config *c, const struct layout *layout, char *why,
                       size_t whylen)
{
    char **rules = NULL;
    int first = cu->aclfile_form ? 1 : 2;
    const char *password = cu->aclfile_form || strcmp(cu->argv[1], "nopass") == 0
                         ? NULL : cu->argv[1];
    int n = acl_rules_merge(cu->argv + first, cu->argc - first, &rules, why, whylen);
    if (n < 0 || acl_user_init(u, cu->argv[0]) < 0)
        goto fail;
    if (!cu->aclfile_form) {
        u->enabled = 1;
        if (password && acl_user_add_password(u, password, strlen(password)) < 0)
            goto fail;
        u->nopass = !password;
    }
    if (acl_user_apply(u, rules, n, why, whylen) < 0)
        goto fail;
    if (requirepass) {
        acl_user_clear_passwords(u);
        u->nopass = 0;
        if (acl_user_add_password(u, requirepass, strlen(requirepass)) < 0)
            goto fail;
    }
    if (acl_user_settle(u, rules, n, c->cluster_password, layout) < 0)
        goto fail;
    acl_rules_free(rules, n);
    return 0;
fail:
    if (!why[0])
        snprintf(why, whylen, "out of memory");
    acl_rules_free(rules, n < 0 ? 0 : n);
    return -1;
}

static int default_fill(struct acl_user *u, const struct config_user *users, int nusers,
                        const struct config *c, const char *requirepass,
                        const struct layout *layout, char *why, size_t whylen)
{
    for (int i = 0; i < nusers; i++) {
        const struct config_user *cu = &users[i];
        if (strcmp(cu->argv[0], "default") == 0)
            return acl_user_from_line(u, cu, requirepass, c, layout, why, whylen);
    }
    /* none: on, every key, channel and command, requirepass or none */
    static char *all_argv[] = { "default", "nopass", "allkeys", "allchannels", "allcommands" };
    struct config_user all = { all_argv, 5, 0 };
    return acl_user_from_line(u, &all, requirepass, c, layout, why, whylen);
}

struct acl *acl_build_users(const struct config_user *users, int nusers, const struct config *c,
                            const char *requirepass, const struct layout *layout, char *err,
                            size_t errlen)
{
    struct acl *a = calloc(1, sizeof *a);
    char why[300] = "";
    if (acl_command_count == 0)
        acl_init_ids();
    if (!a || !(a->users = calloc((size_t)nusers + 1, sizeof *a->users)))
        goto fail;
    a->nusers = 1;
    if (default_fill(&a->users[0], users, nusers, c, requirepass, layout, why, sizeof why) < 0)
        goto fail;
    for (int i = 0; i < nusers; i++) {
        const struct config_user *cu = &users[i];
        if (strcmp(cu->argv[0], "default") == 0)
            continue;
        if (acl_user_from_line(&a->users[a->nusers++], cu, NULL, c, layout, why, sizeof why) < 0)
            goto fail;
    }
    return a;
fail:
    snprintf(err, errlen, "building the users: %s", why[0] ? why : "out of memory");
    acl_free(a);
    return NULL;
}

struct acl *acl_build(const struct config *c, const struct layout *layout, char *err,
                      size_t errlen)
{
    return acl_build_users(c->users, c->nusers, c, c->requirepass, layout, err, errlen);
}

void acl_free(struct acl *a)
{
    if (!a)
        return;
    for (int i = 0; a->users && i < a->nusers; i++)
        acl_user_free(&a->users[i]);
    free(a->users);
    free(a);
}

/* ---- logins ---- */

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
    unsigned char nd[ACL_DIGEST_LEN], pd[ACL_DIGEST_LEN];
    const struct acl_user *found = NULL;
    acl_digest(name, namelen, nd);
    acl_digest(pass, passlen, pd);
    /* every user is looked at, whoever matches */
    for (int i = 0; i < a->nusers; i++) {
        int same = CRYPTO_memcmp(nd, a->users[i].name_digest, ACL_DIGEST_LEN) == 0;
        found = same ? &a->users[i] : found;
    }
    /* a password is compared even without a user or password, so both
     * cost the same */
    static const unsigned char none[1][ACL_DIGEST_LEN];
    const unsigned char (*list)[ACL_DIGEST_LEN] = found && found->npasswords ? found->passwords
                                                                             : none;
    int n = found && found->npasswords ? found->npasswords : 1, pass_ok = 0;
    for (int i = 0; i < n; i++)
        pass_ok |= CRYPTO_memcmp(pd, list[i], ACL_DIGEST_LEN) == 0;
    pass_ok &= list != none;
    if (!found || !found->enabled)
        return NULL;
    return found->nopass || pass_ok ? found : NULL;
}
