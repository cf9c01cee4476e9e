/*
 * nodeusers: node users set up at start. See nodeusers.h.
 */
#include "proxy/ops/nodeusers.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/log.h"
#include "cluster/syncconn.h"
#include "cluster/topology.h"
#include "proxy/config/acl.h"
#include "lib/proto/reply.h"

/* u's ACL SETUSER on c (its words are more than syncconn_command takes). */
static redisReply *setup_command(struct syncconn *c, const struct acl_user *u, char *why,
                                 size_t whylen)
{
    size_t *lens = malloc(sizeof *lens * (size_t)u->node_setup_argc);
    if (!lens) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    for (int i = 0; i < u->node_setup_argc; i++)
        lens[i] = strlen(u->node_setup[i]);
    syncconn_append(c, u->node_setup_argc, (const char *const *)u->node_setup, lens);
    free(lens);
    if (syncconn_flush(c, why, whylen) < 0)
        return NULL;
    return syncconn_read(c, why, whylen);
}

/* Each distinct node user's ACL SETUSER on one master: 0, or -1 with the
 * reason (an error's code only: the command holds a password hash). */
static int setup_on(const struct acl *acl, struct syncconn *c, const char *addr, char *why,
                    size_t whylen)
{
    for (int i = 0; i < acl->nusers; i++) {
        const struct acl_user *u = &acl->users[i];
        int seen = 0;
        for (int k = 0; k < i && !seen; k++)
            seen = acl->users[k].restricted && strcmp(acl->users[k].node_user, u->node_user) == 0;
        if (!u->restricted || seen)
            continue;
        char dial[256];
        redisReply *r = setup_command(c, u, dial, sizeof dial);
        if (!r) {
            snprintf(why, whylen, "master %s: %s", addr, dial);
            return -1;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            char code[32];
            reply_error_code(r->str, code, sizeof code);
            snprintf(why, whylen, "master %s refused ACL SETUSER %s (%s): the scripts of user "
                     "'%s' will be refused there; allow cluster-user +acl|setuser "
                     "(docs/operations.md#users-and-permissions)", addr, u->node_user, code,
                     u->name);
            freeReplyObject(r);
            return -1;
        }
        freeReplyObject(r);
    }
    return 0;
}

void nodeusers_warn_unmapped(const struct acl *acl)
{
    for (int i = 0; i < acl->nusers; i++) {
        const struct acl_user *u = &acl->users[i];
        if (u->restricted && u->node_keys_unmapped[0])
            log_warning("acl", "user '%s': key pattern '%s' has a shape the key layout's "
                        "cluster names cannot be given for ('?', a set, a '*' before its end): "
                        "its scripts may touch only the keys it matches that the layout does "
                        "not rewrite (docs/operations.md#users-and-permissions)",
                        u->name, u->node_keys_unmapped);
    }
}

int nodeusers_setup(const struct acl *acl, const struct topology *t,
                    const struct topology_source *src)
{
    nodeusers_warn_unmapped(acl);
    int restricted = 0, refused = 0;
    for (int i = 0; i < acl->nusers; i++)
        restricted |= acl->users[i].restricted;
    for (int n = 0; restricted && n < t->nnodes; n++) {
        char why[600];
        const char *addr = t->nodes[n].target;
        struct syncconn *c = topology_dial(src, addr, why, sizeof why);
        if (c && setup_on(acl, c, addr, why, sizeof why) == 0) {
            syncconn_close(c);
            continue;
        }
        if (c)
            syncconn_close(c);
        log_warning("acl", "%s", why);
        refused++;
    }
    return refused;
}
