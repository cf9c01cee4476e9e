#include "config/snapshot.h"

#include "config/acl.h"

#include <stdio.h>
#include <stdlib.h>

static void snapshot_free(struct config_snapshot *s)
{
    if (s->acl)
        acl_free(s->acl);
    if (s->owns_cfg) {
        struct config *c = (struct config *)s->cfg;
        config_free(c);
        free(c);
    }
    free(s);
}

struct config_snapshot *snapshot_new(struct config *cfg, int owns_cfg, uint64_t generation,
                                     char *err, size_t errlen)
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
    s->acl = acl_build(cfg, err, errlen);
    if (!s->acl) {
        snapshot_free(s);
        return NULL;
    }
    return s;
}

struct config_snapshot *snapshot_ref(struct config_snapshot *s)
{
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
    return s;
}

void snapshot_unref(struct config_snapshot *s)
{
    /* acq_rel: whatever a thread did with s happens before its free */
    if (s && __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0)
        snapshot_free(s);
}
