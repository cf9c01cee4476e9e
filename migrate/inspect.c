/*
 * inspect: counts of a prefix's keys. See inspect.h.
 */
#include "migrate/inspect.h"

#include <stdlib.h>
#include <string.h>

#include "cluster/syncconn.h"
#include "keylayout/layout.h"
#include "migrate/keyspace.h"

#define NAME_MAX_LEN 4096       /* longer names are counted, not classified */

/* Per name of a batch: a turn's `tix` counter (batch_run). */
struct tix_flags {
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

/* The family of one name, counted in its layout's column; NULL when no
 * rule matches it. */
static const struct rules_rule *classify(struct inspect_report *rep, const struct layout *l,
                                         const char *name, size_t len)
{
    static char out[3 * NAME_MAX_LEN + 1024];
    struct layout_match m;
    size_t outlen;
    struct inspect_row *row;
    if (len > NAME_MAX_LEN) {
        rep->unmatched++;
        return NULL;
    }
    enum layout_result r = layout_to_cluster(l, name, len, out, sizeof out, &outlen, &m);
    if ((r == LAYOUT_MAPPED || r == LAYOUT_KEEP) && (row = row_of(rep, m.rule))) {
        row->legacy++;
        return m.rule;
    }
    r = layout_to_legacy(l, name, len, out, sizeof out, &outlen, &m);
    if (r == LAYOUT_MAPPED && (row = row_of(rep, m.rule))) {
        row->cluster++;
        return m.rule;
    }
    const struct rules_rule *idx = layout_index_rule(l, name, len);
    if (idx && (row = row_of(rep, idx))) {
        row->index++;
        return NULL;
    }
    rep->unmatched++;
    return NULL;
}

static int ends_with(const char *s, size_t len, const char *tail)
{
    size_t t = strlen(tail);
    return len >= t && memcmp(s + len - t, tail, t) == 0;
}

static void append2(struct syncconn *c, const char *cmd, const char *name, size_t len)
{
    const char *argv[2] = { cmd, name };
    size_t lens[2] = { strlen(cmd), len };
    syncconn_append(c, 2, argv, lens);
}

/* The batch's names classified; per name a PTTL (with_ttls), and for a
 * turn's `tix` counter a GET of it and of its `serving` counter, pipelined
 * on node i. */
static int batch_run(struct keyspace *ks, int i, const struct layout *l,
                     const struct keyspace_batch *b, int with_ttls, struct tix_flags *tix_of,
                     const char *prefix, struct inspect_report *rep, char *err, size_t errlen)
{
    struct syncconn *c = ks->node[i];
    char heartbeat[512], serving[NAME_MAX_LEN + 16];
    snprintf(heartbeat, sizeof heartbeat, "%s:co:rep:", prefix);
    size_t hlen = strlen(heartbeat), turns = 0;
    if (b->n > tix_of->cap) {
        unsigned char *is = realloc(tix_of->is, b->n);
        if (!is) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        tix_of->is = is;
        tix_of->cap = b->n;
    }
    for (size_t k = 0; k < b->n; k++) {
        const struct rules_rule *rule = classify(rep, l, b->name[k], b->len[k]);
        if (with_ttls)
            append2(c, "PTTL", b->name[k], b->len[k]);
        if (b->len[k] >= hlen && memcmp(b->name[k], heartbeat, hlen) == 0)
            rep->heartbeats++;
        tix_of->is[k] = rule && strcmp(rule->name, "turn") == 0 &&
                    ends_with(b->name[k], b->len[k], ":tix");
    }
    for (size_t k = 0; k < b->n; k++) {
        if (tix_of->is[k]) {
            size_t base = b->len[k] - 3;
            memcpy(serving, b->name[k], base);
            memcpy(serving + base, "serving", 7);
            append2(c, "GET", b->name[k], b->len[k]);
            append2(c, "GET", serving, base + 7);   /* same slot in the cluster layout */
            turns++;
        }
    }
    if (syncconn_flush(c, err, errlen) < 0)
        return -1;
    long long tix = 0;
    size_t ttls = with_ttls ? b->n : 0;
    for (size_t k = 0; k < ttls + 2 * turns; k++) {
        redisReply *r = syncconn_read(c, err, errlen);
        if (!r)
            return -1;
        if (k < ttls && r->type == REDIS_REPLY_INTEGER && r->integer >= 0)
            rep->with_ttl++;
        long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
        if (k >= ttls && (k - ttls) % 2 == 0)
            tix = v;
        else if (k >= ttls)
            rep->pending_tickets += tix > v;
        freeReplyObject(r);
    }
    return 0;
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
    struct tix_flags tix = { 0 };
    char match[1100];
    int rc = 0;
    memset(rep, 0, sizeof *rep);
    rows_init(rep, l);
    keyspace_prefix_match(prefix, match, sizeof match);
    for (int i = 0; rc == 0 && i < ks->nnodes; i++) {
        long long cursor = 0;
        do {
            cursor = keyspace_scan(ks, i, cursor, match, &b, err, errlen);
            rep->keys += (long)b.n;
            if (cursor < 0 || batch_run(ks, i, l, &b, with_ttls, &tix, prefix, rep, err, errlen) < 0)
                rc = -1;
        } while (rc == 0 && cursor > 0);
    }
    keyspace_batch_free(&b);
    free(tix.is);
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
    fprintf(out, "live bots: %ld coordinator heartbeats (%s:co:rep:*), %ld pending turn tickets\n",
            rep->heartbeats, prefix, rep->pending_tickets);
    fprintf(out, "layout marker %s:{meta}:layout: %s\n", prefix, rep->marker);
}
