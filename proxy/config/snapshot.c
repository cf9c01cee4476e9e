#include "proxy/config/snapshot.h"

#include "proxy/config/acl.h"

#include <stdio.h>
#include <stdlib.h>

static void snapshot_free(struct config_snapshot *s)
{
    if (s->settings_of) {           /* a shallow copy; the rest is settings_of's */
        free((struct config *)s->cfg);
        snapshot_unref(s->settings_of);
        free(s);
        return;
    }
    if (s->acl)
        acl_free(s->acl);
    config_users_free(s->own_users, s->own_users ? s->nusers : 0);
    snapshot_unref(s->cfg_owner);
    if (s->owns_cfg) {
        struct config *c = (struct config *)s->cfg;
        config_free(c);
        free(c);
    }
    free(s);
}

struct config_snapshot *snapshot_new(struct config *cfg, int owns_cfg, uint64_t generation,
                                     const struct layout *layout, char *err, size_t errlen)
{
    struct config_snapshot *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        if (owns_cfg) {
            config_free(cfg);
            free(cfg);
        }
        return NULL;
    }
    s->cfg = cfg;
    s->owns_cfg = owns_cfg;
    s->generation = generation;
    s->refs = 1;
    s->users = cfg->users;
    s->nusers = cfg->nusers;
    s->requirepass = cfg->requirepass;
    s->acl = acl_build(cfg, layout, err, errlen);
    if (!s->acl) {
        snapshot_free(s);
        return NULL;
    }
    return s;
}

struct config_snapshot *snapshot_with_users(struct config_snapshot *base,
                                            struct config_user *users, int nusers,
                                            uint64_t generation, const struct layout *layout,
                                            int own_default_password, char *err, size_t errlen)
{
    struct config_snapshot *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        config_users_free(users, nusers);
        return NULL;
    }
    /* the config's owner, not base: a chain of SETUSERs holds one config
     * (base itself when its config is a CONFIG SET copy: no cfg_owner) */
    s->cfg_owner = snapshot_ref(base->cfg_owner ? base->cfg_owner : base);
    s->cfg = base->cfg;
    s->generation = generation;
    s->refs = 1;
    s->own_users = users;
    s->users = users;
    s->nusers = nusers;
    s->requirepass = own_default_password ? NULL : base->requirepass;
    s->acl = acl_build_users(users, nusers, s->cfg, s->requirepass, layout, err, errlen);
    if (!s->acl) {
        snapshot_free(s);
        return NULL;
    }
    return s;
}

struct config_snapshot *snapshot_with_config(struct config_snapshot *base, struct config *cfg,
                                             uint64_t generation)
{
    struct config_snapshot *s = calloc(1, sizeof *s);
    if (!s) {
        free(cfg);
        return NULL;
    }
    s->settings_of = snapshot_ref(base);
    s->cfg = cfg;
    s->acl = base->acl;
    s->users = base->users;
    s->nusers = base->nusers;
    s->requirepass = base->requirepass;
    s->keep_off = 1;
    s->generation = generation;
    s->refs = 1;
    return s;
}

struct config_snapshot *snapshot_ref(struct config_snapshot *s)
{
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
    return s;
}

void snapshot_unref(struct config_snapshot *s)
{
    if (!s)
        return;
    /* acq_rel: whatever a thread did with s happens before its free */
    if (s && __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0)
        snapshot_free(s);
}
