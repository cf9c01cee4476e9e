#include "proxy/ops/marker.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/log.h"
#include "cluster/slot.h"
#include "cluster/syncconn.h"
#include "cluster/topology.h"
#include "keylayout/layout.h"
#include "keylayout/layoutload.h"

#define MARKER_NAME_MAX 160
#define SCAN_COUNT "1000"

/* One command on a new connection to master `node`; the reply, or NULL
 * with why filled. */
static redisReply *ask_master(const struct topology *t, const struct topology_source *src,
                              int node, int argc, const char **argv, char *why, size_t whylen)
{
    const char *addr = t->nodes[node].target;
    char dial[256];
    struct syncconn *c = topology_dial(src, addr, dial, sizeof dial);
    if (!c) {
        snprintf(why, whylen, "cannot reach master %s: %s", addr, dial);
        return NULL;
    }
    redisReply *r = syncconn_command(c, argc, argv, dial, sizeof dial);
    if (!r)
        snprintf(why, whylen, "master %s: %s", addr, dial);
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(why, whylen, "master %s answered %.200s", addr, r->str);
    syncconn_close(c);
    if (r && r->type == REDIS_REPLY_ERROR) {
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* Whether any key starts with "P:" on one master (SCAN MATCH, to the end
 * or the first key found): 1 with one such name in example, 0, -1. */
static int master_has_prefix(const struct topology *t, const struct topology_source *src,
                             int node, const char *match, char *example, size_t exlen,
                             char *why, size_t whylen)
{
    char cursor[32] = "0";
    do {
        const char *argv[] = { "SCAN", cursor, "MATCH", match, "COUNT", SCAN_COUNT };
        redisReply *r = ask_master(t, src, node, 6, argv, why, whylen);
        if (!r)
            return -1;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            snprintf(why, whylen, "master %s sent a malformed SCAN reply", t->nodes[node].target);
            freeReplyObject(r);
            return -1;
        }
        int found = r->element[1]->elements > 0;
        if (found)
            snprintf(example, exlen, "%.100s", r->element[1]->element[0]->str);
        snprintf(cursor, sizeof cursor, "%.30s", r->element[0]->str);
        freeReplyObject(r);
        if (found)
            return 1;
    } while (strcmp(cursor, "0") != 0);
    return 0;
}

/* "P:*" with P's glob bytes escaped. */
static void prefix_match(const char *p, size_t plen, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < plen && n + 4 < cap; i++) {
        if (strchr("*?[]\\", p[i]))
            out[n++] = '\\';
        out[n++] = p[i];
    }
    snprintf(out + n, cap - n, ":*");
}

/* 1 when some master holds a key of prefix p (one in example), 0, -1. */
static int prefix_in_use(const struct topology *t, const struct topology_source *src,
                         const char *p, size_t plen, char *example, size_t exlen,
                         char *why, size_t whylen)
{
    char match[2 * MARKER_NAME_MAX];
    prefix_match(p, plen, match, sizeof match);
    for (int node = 0; node < t->nnodes; node++) {
        int rc = master_has_prefix(t, src, node, match, example, exlen, why, whylen);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* GET (or SET NX) the marker on its master: the reply or NULL. */
static redisReply *marker_command(const struct topology *t, const struct topology_source *src,
                                  const char *name, bool set, char *why, size_t whylen)
{
    int node = t->slot_node[slot_of(name, strlen(name))];
    if (node < 0) {
        snprintf(why, whylen, "the slot of %s has no master", name);
        return NULL;
    }
    const char *get[] = { "GET", name };
    const char *setnx[] = { "SET", name, MARKER_VALUE, "NX" };
    return set ? ask_master(t, src, node, 4, setnx, why, whylen)
               : ask_master(t, src, node, 2, get, why, whylen);
}

/* An absent marker: written on an empty prefix, else refused or allowed. */
static int marker_absent(const struct topology *t, const struct topology_source *src,
                         const char *p, size_t plen, const char *name, bool allow,
                         char *err, size_t errlen)
{
    char why[512], example[128];
    int used = prefix_in_use(t, src, p, plen, example, sizeof example, why, sizeof why);
    if (used < 0) {
        snprintf(err, errlen, "layout-prefix \"%s\": cannot check for keys of the prefix: %s",
                 p, why);
        return -1;
    }
    if (used && allow) {
        log_warning("layout", "prefix %s holds keys (e.g. %s) but no layout marker %s: serving "
                    "it anyway (layout-allow-legacy-data yes); keys in legacy names are not "
                    "found through the proxy until they are migrated", p, example, name);
        return 0;
    }
    if (used) {
        snprintf(err, errlen, "layout-prefix \"%s\": keys of the prefix exist (e.g. %s) but "
                 "the layout marker %s is absent: the data is not in the cluster:v1 layout. "
                 "Migrate it first (the migration writes the marker: tagproxy migrate "
                 "--source redis://HOST:PORT --prefix %s), or set "
                 "layout-allow-legacy-data yes to serve it anyway", p, example, name, p);
        return -1;
    }
    redisReply *r = marker_command(t, src, name, true, why, sizeof why);
    if (!r) {
        snprintf(err, errlen, "layout-prefix \"%s\": cannot write the layout marker %s: %s", p,
                 name, why);
        return -1;
    }
    int written = r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    if (written)
        log_notice("layout", "prefix %s is empty: layout marker %s written", p, name);
    return written ? 0 : 1;     /* 1: someone else wrote it first: read it again */
}

static int marker_check_prefix(const struct layout *l, size_t i, const struct topology *t,
                               const struct topology_source *src, bool allow,
                               char *err, size_t errlen)
{
    size_t plen;
    const char *p = layout_prefix(l, i, &plen);
    char name[MARKER_NAME_MAX], why[512];
    if ((size_t)snprintf(name, sizeof name, "%s:{meta}:layout", p) >= sizeof name) {
        snprintf(err, errlen, "layout-prefix \"%.64s...\": longer than the proxy supports", p);
        return -1;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        redisReply *r = marker_command(t, src, name, false, why, sizeof why);
        if (!r) {
            snprintf(err, errlen, "layout-prefix \"%s\": cannot read the layout marker %s: %s",
                     p, name, why);
            return -1;
        }
        if (r->type == REDIS_REPLY_NIL) {
            freeReplyObject(r);
            int rc = marker_absent(t, src, p, plen, name, allow, err, errlen);
            if (rc <= 0)
                return rc;
            continue;
        }
        int ok = r->type == REDIS_REPLY_STRING && strcmp(r->str, MARKER_VALUE) == 0;
        if (!ok)
            snprintf(err, errlen, "layout-prefix \"%s\": the layout marker %s holds %s%.64s%s, "
                     "not \"%s\": the data is in a layout these rules do not serve; refusing "
                     "to start", p, name, r->type == REDIS_REPLY_STRING ? "\"" : "a ",
                     r->type == REDIS_REPLY_STRING ? r->str : "non-string value",
                     r->type == REDIS_REPLY_STRING ? "\"" : "", MARKER_VALUE);
        freeReplyObject(r);
        return ok ? 0 : -1;
    }
    snprintf(err, errlen, "layout-prefix \"%s\": the layout marker %s keeps changing", p, name);
    return -1;
}

int marker_check(const struct layout *l, const struct topology *t,
                 const struct topology_source *src, bool allow_legacy_data,
                 char *err, size_t errlen)
{
    for (size_t i = 0; i < layout_prefix_count(l); i++)
        if (marker_check_prefix(l, i, t, src, allow_legacy_data, err, errlen) < 0)
            return -1;
    return 0;
}
