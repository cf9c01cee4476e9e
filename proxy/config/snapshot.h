/*
 * snapshot: one immutable config, shared by the workers through a
 * reference count.
 *
 *   control thread                         worker (its own loop)
 *   SIGHUP: config_load() ─► snapshot_new ─► mailbox ─► w->cfg = s->cfg
 *                                                        snapshot_unref(old)
 *
 * A worker reads its config through w->cfg, a plain pointer into the
 * snapshot it took last: no lock and no atomic on the request path. A new
 * snapshot reaches a worker through its mailbox (worker_post_config) and is
 * taken between two events, so one event's work sees one config. The last
 * reference dropped frees the snapshot (and its config when it owns it), on
 * whichever thread drops it.
 *
 * Derived state that a reload must rebuild with the config (the users and
 * their ACL) belongs in the snapshot: build it in snapshot_new(), which may
 * refuse the config, and free it in snapshot_free(). A pointer into a
 * snapshot is valid while the worker holds that snapshot, which is until
 * the worker's loop takes the next one; whatever keeps such a pointer
 * longer takes its own reference: a client keeps the snapshot of the user
 * it runs as (client_set_user). After a reload a client stays logged in
 * and runs, from its next command, with its user's new rules
 * (client_user_refresh); a user the new config removed is logged out.
 */
#ifndef TAGPROXY_SNAPSHOT_H
#define TAGPROXY_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/config/config.h"

struct acl;

struct config_snapshot {
    const struct config *cfg;
    struct acl *acl;                /* its users (acl.h) */
    const struct config_user *users;    /* cfg's, or those ACL SETUSER made */
    int nusers;
    struct config_user *own_users;  /* users when they are not cfg's (freed with it) */
    struct config_snapshot *cfg_owner;  /* holds cfg when users are not cfg's */
    struct config_snapshot *settings_of;    /* CONFIG SET: the snapshot whose users and
                                       ACL this one shares (and holds), its cfg a
                                       copy of that one's with settings changed */
    const char *requirepass;        /* the default user's: cfg's, or NULL once CONFIG SET
                                       requirepass wrote it into the default's line */
    int logout_all;                 /* ACL LOAD: every non-default login ends, as Redis */
    int keep_off;                   /* ACL SETUSER, DELUSER: the logins of a user turned
                                       off go on, as Redis keeps them (a reload ends them) */
    uint64_t generation;            /* 0 for the config the process started with */
    int refs;                       /* atomic */
    int workers_left;               /* atomic: workers yet to take it (reloads) */
    int owns_cfg;                   /* cfg is freed with the snapshot */
};

/*
 * A snapshot of cfg with one reference, or NULL with the reason in err.
 * owns_cfg: cfg was malloc'd and filled by config_load(); the snapshot
 * frees both (also when this call fails). Otherwise cfg must outlive every
 * reference (the start-up config in struct proxy). layout: the key layout
 * that goes with cfg (NULL: none), for the users' node users (acl.h).
 */
struct config_snapshot *snapshot_new(struct config *cfg, int owns_cfg, uint64_t generation,
                                     const struct layout *layout, char *err, size_t errlen);

/* A snapshot of base's config with other users (taken over: freed with
 * it, also when this fails), or NULL with the reason in err; base's
 * requirepass, unless own_default_password (the default user's line says
 * its password: CONFIG SET requirepass). */
struct config_snapshot *snapshot_with_users(struct config_snapshot *base,
                                            struct config_user *users, int nusers,
                                            uint64_t generation, const struct layout *layout,
                                            int own_default_password, char *err, size_t errlen);

/* A snapshot of base with cfg (malloc'd, a copy of base's config with
 * value settings changed: config_set_value) in place of base's config;
 * base's users and ACL. cfg is taken over (freed with it, also when this
 * fails); NULL out of memory. */
struct config_snapshot *snapshot_with_config(struct config_snapshot *base, struct config *cfg,
                                             uint64_t generation);

struct config_snapshot *snapshot_ref(struct config_snapshot *s);

/* Drop a reference (NULL is fine); the last one frees. Any thread. */
void snapshot_unref(struct config_snapshot *s);

#endif
