/*
 * inspect: counts of a prefix's keys. See inspect.h.
 */
#include "migrate/inspect.h"

#include <stdlib.h>
#include <string.h>

#include "cluster/syncconn.h"
#include "keylayout/layout.h"
#include "keylayout/layoutload.h"
#include "migrate/keyspace.h"

#define NAME_MAX_LEN 4096       /* longer names are counted, not classified */

/* Per name of a batch: a pending-ticket check follows its PTTL
 * (batch_run). */
struct ticket_flags {
    unsigned char *is;
    size_t cap;
};

static struct inspect_row *row_of(struct inspect_report *rep, const struct rules_rule *rule)
{
    for (int i = 0; i < rep->nrows; i++)
        if (strcmp(rep->row[i].family, rule->name) == 0)
            return &rep->row[i];
    return NULL;
}

/* The family of one name, counted in its layout's column, its match in m
 * (*cluster: read as a cluster name); NULL when no rule matches it. */
static const struct rules_rule *classify(struct inspect_report *rep, const struct layout *l,
                                         const char *name, size_t len, struct layout_match *m,
                                         int *cluster)
{
    static char out[3 * NAME_MAX_LEN + 1024];
    size_t outlen;
    struct inspect_row *row;
    *cluster = 0;
    if (len > NAME_MAX_LEN) {
        rep->unmatched++;
        return NULL;
    }
    enum layout_result r = layout_to_cluster(l, name, len, out, sizeof out, &outlen, m);
    if ((r == LAYOUT_MAPPED || r == LAYOUT_KEEP) && (row = row_of(rep, m->rule))) {
        row->legacy++;
        return m->rule;
    }
    r = layout_to_legacy(l, name, len, out, sizeof out, &outlen, m);
    if (r == LAYOUT_MAPPED && (row = row_of(rep, m->rule))) {
        row->cluster++;
        *cluster = 1;
        return m->rule;
    }
    const struct rules_rule *idx = layout_index_rule(l, name, len);
    if (idx && (row = row_of(rep, idx))) {
        row->index++;
        return NULL;
    }
    rep->unmatched++;
    return NULL;
}

/* For a name of a `live ticket A>B` family whose capture is A: its
 * sibling's name, the capture B, in the same layout (and slot), into out;
 * its length, or 0 when the name is not such a counter. */
static size_t ticket_sibling(const struct layout *l, const struct layout_match *m, int cluster,
                             char *out, size_t cap)
{
    const struct rules_rule *r = m->rule;
    if (r->live != RULES_LIVE_TICKET)
        return 0;
    const struct rules_capture *c = &r->cap[r->ticket_cap];
    const struct layout_value *v = &m->cap[r->ticket_cap];
    const char *a = v->encoded ? c->alt_enc[r->ticket_more] : c->alt[r->ticket_more];
    size_t alen = v->encoded ? c->alt_enc_len[r->ticket_more] : c->alt_len[r->ticket_more];
    if (v->len != alen || memcmp(v->ptr, a, alen) != 0)
        return 0;
    struct layout_match sib = *m;
    sib.cap[r->ticket_cap] = (struct layout_value){ c->alt[r->ticket_less],
                                                    c->alt_len[r->ticket_less], false };
    size_t n = cluster ? layout_cluster_key(l, &sib, out, cap) : layout_legacy_key(l, &sib, out, cap);
    return n < cap ? n : 0;
}

static long long number_of(const redisReply *r)
{
    return r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
}

static void append2(struct syncconn *c, const char *cmd, const char *name, size_t len)
{
    const char *argv[2] = { cmd, name };
    size_t lens[2] = { strlen(cmd), len };
    syncconn_append(c, 2, argv, lens);
}

/* The batch's names classified, pipelined on node i: per name a PTTL
 * (with_ttls), and for a ticket counter (`live ticket A>B`) a GET of it
 * and of its sibling; a heartbeat (`live heartbeat`) counted. */
static int batch_run(struct keyspace *ks, int i, const struct layout *l,
                     const struct keyspace_batch *b, int with_ttls, struct ticket_flags *ticket_of,
                     struct inspect_report *rep, char *err, size_t errlen)
{
    struct syncconn *c = ks->node[i];
    char sibling[3 * NAME_MAX_LEN + 1024];
    if (b->n > ticket_of->cap) {
        unsigned char *is = realloc(ticket_of->is, b->n);
        if (!is) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        ticket_of->is = is;
        ticket_of->cap = b->n;
    }
    for (size_t k = 0; k < b->n; k++) {
        struct layout_match m;
        int cluster;
        const struct rules_rule *rule = classify(rep, l, b->name[k], b->len[k], &m, &cluster);
        size_t sl = rule && rule->kind == RULES_REWRITE
                    ? ticket_sibling(l, &m, cluster, sibling, sizeof sibling) : 0;
        if (with_ttls)
            append2(c, "PTTL", b->name[k], b->len[k]);
        rep->heartbeats += rule && rule->live == RULES_LIVE_HEARTBEAT;
        ticket_of->is[k] = sl > 0;
        if (sl) {
            append2(c, "GET", b->name[k], b->len[k]);
            append2(c, "GET", sibling, sl);
        }
    }
    if (syncconn_flush(c, err, errlen) < 0)
        return -1;
    for (size_t k = 0; k < b->n; k++) {
        redisReply *r[3] = { 0 };
        int want = (with_ttls ? 1 : 0) + (ticket_of->is[k] ? 2 : 0), ok = 1;
        for (int w = 0; w < want && ok; w++)
            ok = (r[w] = syncconn_read(c, err, errlen)) != NULL;
        redisReply *pttl = with_ttls ? r[0] : NULL, **counters = r + (with_ttls ? 1 : 0);
        if (ok && pttl && pttl->type == REDIS_REPLY_INTEGER && pttl->integer >= 0)
            rep->with_ttl++;
        if (ok && ticket_of->is[k])
            rep->pending_tickets += number_of(counters[0]) > number_of(counters[1]);
        for (int w = 0; w < want; w++)
            freeReplyObject(r[w]);
        if (!ok)
            return -1;
    }
    return 0;
}

/* The prefix's heartbeat families (`live heartbeat`) as patterns, "P:co:rep:*". */
static void heartbeats_where(const struct layout *l, const char *prefix, char *out, size_t cap)
{
    size_t n, used = 0;
    const struct rules_rule *const *rules = layout_prefix_rules(l, 0, &n);
    out[0] = '\0';
    for (size_t i = 0; i < n && used < cap; i++)
        if (rules[i]->live == RULES_LIVE_HEARTBEAT)
            used += (size_t)snprintf(out + used, cap - used, "%s%s%s", used ? ", " : "", prefix,
                                     rules[i]->pattern + 1);
    if (!out[0])
        snprintf(out, cap, "none in the rules");
}

static void rows_init(struct inspect_report *rep, const struct layout *l)
{
    size_t n;
    const struct rules_rule *const *rules = layout_prefix_rules(l, 0, &n);
    for (size_t i = 0; i < n && rep->nrows < INSPECT_ROWS_MAX; i++) {
        struct inspect_row *row = &rep->row[rep->nrows++];
        row->family = rules[i]->name;
        row->keep = rules[i]->kind == RULES_KEEP;
    }
}

static int read_marker(struct keyspace *ks, const char *prefix, struct inspect_report *rep,
                       char *err, size_t errlen)
{
    char key[512];
    snprintf(key, sizeof key, "%s:{meta}:layout", prefix);
    snprintf(rep->marker, sizeof rep->marker, "absent");
    for (int i = 0; i < ks->nnodes; i++) {     /* on a cluster: its slot's master answers */
        append2(ks->node[i], "GET", key, strlen(key));
        if (syncconn_flush(ks->node[i], err, errlen) < 0)
            return -1;
        redisReply *r = syncconn_read(ks->node[i], err, errlen);
        if (!r)
            return -1;
        if (r->type == REDIS_REPLY_STRING)
            snprintf(rep->marker, sizeof rep->marker, "%.60s", r->str);
        freeReplyObject(r);
    }
    return 0;
}

int inspect_run(struct keyspace *ks, const struct layout *l, const char *prefix, int with_ttls,
                struct inspect_report *rep, char *err, size_t errlen)
{
    struct keyspace_batch b = { 0 };
    struct ticket_flags tickets = { 0 };
    char match[1100];
    int rc = 0;
    memset(rep, 0, sizeof *rep);
    rows_init(rep, l);
    heartbeats_where(l, prefix, rep->heartbeats_where, sizeof rep->heartbeats_where);
    keyspace_prefix_match(prefix, match, sizeof match);
    for (int i = 0; rc == 0 && i < ks->nnodes; i++) {
        long long cursor = 0;
        do {
            cursor = keyspace_scan(ks, i, cursor, match, &b, err, errlen);
            rep->keys += (long)b.n;
            if (cursor < 0 || batch_run(ks, i, l, &b, with_ttls, &tickets, rep, err, errlen) < 0)
                rc = -1;
        } while (rc == 0 && cursor > 0);
    }
    keyspace_batch_free(&b);
    free(tickets.is);
    return rc < 0 ? -1 : read_marker(ks, prefix, rep, err, errlen);
}

void inspect_print(const struct inspect_report *rep, const char *prefix, FILE *out)
{
    fprintf(out, "prefix %s: %ld keys\n", prefix, rep->keys);
    fprintf(out, "%-28s %10s %10s %10s\n", "family", "legacy", "cluster", "index");
    for (int i = 0; i < rep->nrows; i++) {
        const struct inspect_row *r = &rep->row[i];
        if (r->keep)
            fprintf(out, "%-28s %10ld %10s %10s\n", r->family, r->legacy, "(same)", "-");
        else
            fprintf(out, "%-28s %10ld %10ld %10ld\n", r->family, r->legacy, r->cluster, r->index);
    }
    fprintf(out, "%-28s %10ld\n", "unmatched", rep->unmatched);
    fprintf(out, "keys with a TTL: %ld\n", rep->with_ttl);
    fprintf(out, "live bots: %ld coordinator heartbeats (%s), %ld pending turn tickets\n",
            rep->heartbeats, rep->heartbeats_where, rep->pending_tickets);
    fprintf(out, "layout marker %s:{meta}:layout: %s\n", prefix, rep->marker);
}
