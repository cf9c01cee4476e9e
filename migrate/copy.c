/*
 * copy: legacy -> cluster layout. See copy.h.
 */
#include "migrate/copy.h"

#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "cluster/syncconn.h"
#include "keylayout/layout.h"
#include "migrate/inspect.h"
#include "migrate/keyspace.h"

#define CHUNK 256                   /* records read, then written, at once */
#define NAME_MAX_LEN 4096

enum action { A_NONE, A_COPY, A_LOG, A_ITEM };

/*
 * One record's write, in its slot. KEYS[1] the record, KEYS[2] its index
 * (indexed families). ARGV: payload, absolute expiry in ms (0: none), mode
 * (plain, greater, token), overwrite (1/0), the source's integer (greater:
 * the value; token: the `token` field), the index member. Returns 1 when
 * it wrote the record, 0 when the target's won.
 */
static const char copy_lua[] =
    "local key, mode, over = KEYS[1], ARGV[3], ARGV[4] == '1'\n"
    "local n = tonumber(ARGV[5]) or 0\n"
    "local wrote = 0\n"
    "local function put() redis.call('RESTORE', key, ARGV[2], ARGV[1], 'ABSTTL', 'REPLACE'); wrote = 1 end\n"
    "if redis.call('EXISTS', key) == 0 then put()\n"
    "elseif mode == 'greater' then\n"
    "  if n > (tonumber(redis.call('GET', key)) or -math.huge) then put() end\n"
    "elseif mode == 'token' then\n"
    "  local held = redis.call('HGET', key, 'token')\n"
    "  if n > (tonumber(held) or -math.huge) then put()\n"
    "  elseif over then put(); redis.call('HSET', key, 'token', held) end\n"
    "elseif over then put() end\n"
    "if KEYS[2] then\n"
    "  local at = redis.call('PEXPIRETIME', key)\n"
    "  if at == -2 then redis.call('ZREM', KEYS[2], ARGV[6])\n"
    "  else redis.call('ZADD', KEYS[2], at == -1 and '+inf' or at, ARGV[6]) end\n"
    "end\n"
    "return wrote\n";

struct job {
    enum action act;
    const char *mode;               /* copy_lua's: plain, greater, token */
    int fam;                        /* index in the report */
    int held;                       /* the target holds it: a source key to delete */
    char *src, *dst, *index, *member;
    size_t src_len, dst_len, index_len, member_len;
    redisReply *dump, *pttl, *value;
};

struct copier {
    struct keyspace *src, *dst;
    const struct layout *l;
    const struct copy_opts *o;
    struct copy_report *rep;
    int in_place;
    char sha[KEYSPACE_NODES_MAX][41];   /* copy_lua's on each target node */
    long total, done;                   /* source keys (0: not counted), read so far */
    long long started_ms, shown_ms;     /* progress (progress()) */
    int tty;
    struct job job[CHUNK];
    int njobs;
    char *err;
    size_t errlen;
};

static long long wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int family_of(struct copy_report *rep, const char *name)
{
    for (int i = 0; i < rep->nfam; i++)
        if (strcmp(rep->fam[i].name, name) == 0)
            return i;
    if (rep->nfam == COPY_FAMILIES_MAX)
        return 0;
    rep->fam[rep->nfam].name = name;
    return rep->nfam++;
}

/* The rule's copy mode (keylayout/rules.h) as the copy acts on it; *mode
 * is copy_lua's. */
static enum action action_of(const struct rules_rule *r, const char **mode)
{
    *mode = r->copy == RULES_COPY_GREATER ? "greater"
          : r->copy == RULES_COPY_TOKEN ? "token" : "plain";
    switch (r->copy) {
    case RULES_COPY_NEVER:
        return A_NONE;
    case RULES_COPY_LOG:
        return A_LOG;
    case RULES_COPY_ITEM:
        return A_ITEM;
    default:
        return A_COPY;
    }
}

/* The legacy name of rule `to` (a log's item rule, or an item's log), its
 * captures taken by name from match m (raw), the one m lacks from extra,
 * into out; its length, or 0. */
static size_t name_like(const struct layout *l, const struct layout_match *m,
                        const struct rules_rule *to, const struct layout_value *extra,
                        char *out, size_t cap)
{
    struct layout_match built = { .rule = to, .prefix = m->prefix, .bucket = -1 };
    for (size_t k = 0; k < to->ncap; k++) {
        int from = rules_capture_find(m->rule, to->cap[k].name, strlen(to->cap[k].name));
        if (from < 0 && !extra)
            return 0;
        built.cap[k] = from >= 0 ? m->cap[from] : *extra;
    }
    size_t n = layout_legacy_key(l, &built, out, cap);
    return n < cap ? n : 0;
}

static void job_free(struct job *j)
{
    free(j->src);
    free(j->dst);
    free(j->index);
    free(j->member);
    freeReplyObject(j->dump);
    freeReplyObject(j->pttl);
    freeReplyObject(j->value);
    memset(j, 0, sizeof *j);
}

/* Whether rule r's family is in the comma-separated list (NULL: every
 * family). An item follows its log. */
static int included(const char *list, const struct rules_rule *r)
{
    if (!list)
        return 1;
    const char *family = r->copy == RULES_COPY_ITEM ? r->pair->name : r->name;
    size_t n = strlen(family);
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && memcmp(p, family, n) == 0)
            return 1;
        p += k + (p[k] == ',');
    }
    return 0;
}

/* The job for legacy name (a keep: the same name, into another server
 * only); 0 when there is nothing to copy, -1 out of memory. */
static int job_make(struct copier *cp, const char *name, size_t len, int via_log, struct job *j)
{
    static char out[3 * NAME_MAX_LEN + 1024];
    struct layout_match m;
    size_t n;
    memset(j, 0, sizeof *j);
    if (len > NAME_MAX_LEN)
        return 0;
    enum layout_result r = cp->o->rollback
                           ? layout_to_legacy(cp->l, name, len, out, sizeof out, &n, &m)
                           : layout_to_cluster(cp->l, name, len, out, sizeof out, &n, &m);
    if (r == LAYOUT_KEEP && !cp->in_place) {
        j->act = A_COPY;
        j->mode = "plain";
        memcpy(out, name, len);
        n = len;
    } else if (r == LAYOUT_MAPPED) {
        j->act = action_of(m.rule, &j->mode);
        if ((j->act == A_ITEM && via_log) || (j->act != A_NONE && cp->o->rollback))
            j->act = A_COPY;            /* back: logs and items are records */
    }
    if (j->act == A_NONE || !included(cp->o->include, m.rule))
        return 0;
    j->fam = family_of(cp->rep, m.rule->name);
    j->src = dup_n(name, len);
    j->src_len = len;
    if (j->act == A_ITEM) {         /* its log, to ask whether it is referenced */
        char log[3 * NAME_MAX_LEN];
        int k = m.rule->item_cap;
        size_t ln = name_like(cp->l, &m, m.rule->pair, NULL, log, sizeof log);
        j->dst = ln ? dup_n(log, ln) : NULL;
        j->dst_len = ln;
        j->member = dup_n(m.cap[k].ptr, m.cap[k].len);
        j->member_len = m.cap[k].len;
        if (!j->dst || !j->member)
            j->act = A_NONE;
        return j->src ? 1 : -1;
    }
    j->dst = dup_n(out, n);
    j->dst_len = n;
    if (r == LAYOUT_MAPPED && m.rule->indexed && !cp->o->rollback) {
        char idx[3 * NAME_MAX_LEN + 1024];
        size_t il = layout_index_key(cp->l, &m, idx, sizeof idx);
        j->index = dup_n(idx, il);
        j->index_len = il;
        il = layout_index_member(cp->l, &m, idx, sizeof idx);
        j->member = dup_n(idx, il);
        j->member_len = il;
    }
    return j->src && j->dst && (!j->index == !j->member) ? 1 : -1;
}

/* Each job's source side, pipelined on source node i: a referenced item's
 * ZSCORE in its log; a record's DUMP, PTTL and the integer its mode
 * compares. */
static int chunk_read(struct copier *cp, int i)
{
    struct syncconn *c = cp->src->node[i];
    for (int k = 0; k < cp->njobs; k++) {
        struct job *j = &cp->job[k];
        if (j->act == A_ITEM) {
            const char *argv[3] = { "ZSCORE", j->dst, j->member };
            size_t lens[3] = { 6, j->dst_len, j->member_len };
            syncconn_append(c, 3, argv, lens);
            continue;
        }
        const char *dump[2] = { "DUMP", j->src }, *pttl[2] = { "PTTL", j->src };
        size_t dl[2] = { 4, j->src_len }, pl[2] = { 4, j->src_len };
        syncconn_append(c, 2, dump, dl);
        syncconn_append(c, 2, pttl, pl);
        const char *get[3] = { "GET", j->src, "token" };
        size_t gl[3] = { 3, j->src_len, 5 };
        if (strcmp(j->mode, "plain") != 0) {
            get[0] = strcmp(j->mode, "token") == 0 ? "HGET" : "GET";
            gl[0] = strlen(get[0]);
            syncconn_append(c, get[0][0] == 'H' ? 3 : 2, get, gl);
        }
    }
    if (syncconn_flush(c, cp->err, cp->errlen) < 0)
        return -1;
    for (int k = 0; k < cp->njobs; k++) {
        struct job *j = &cp->job[k];
        int want = j->act == A_ITEM ? 1 : strcmp(j->mode, "plain") ? 3 : 2;
        redisReply *r[3] = { 0 };
        for (int w = 0; w < want; w++)
            if (!(r[w] = syncconn_read(c, cp->err, cp->errlen)))
                return -1;
        if (j->act == A_ITEM) {
            cp->rep->orphans += r[0]->type == REDIS_REPLY_NIL;
            freeReplyObject(r[0]);
            continue;
        }
        j->dump = r[0];
        j->pttl = r[1];
        j->value = r[2];
    }
    return 0;
}

/* The target side of job j on its node: copy_lua, or 0 when there is
 * nothing to write (the record went meanwhile); the node, or -1. */
static int job_write(struct copier *cp, struct job *j)
{
    if (j->act == A_ITEM || !j->dump || j->dump->type != REDIS_REPLY_STRING ||
        !j->pttl || j->pttl->type != REDIS_REPLY_INTEGER || j->pttl->integer == -2)
        return -1;
    int node = keyspace_node_of(cp->dst, j->dst, j->dst_len);
    if (node < 0)
        return -1;
    char at[32], n[32];
    snprintf(at, sizeof at, "%lld", j->pttl->integer > 0 ? wall_ms() + j->pttl->integer : 0);
    snprintf(n, sizeof n, "%lld", j->value && j->value->type == REDIS_REPLY_STRING
                                  ? strtoll(j->value->str, NULL, 10) : 0);
    const char *argv[11] = { "EVALSHA", cp->sha[node], j->index ? "2" : "1", j->dst };
    size_t lens[11] = { 7, 40, 1, j->dst_len };
    int argc = 4;
    if (j->index) {
        argv[argc] = j->index;
        lens[argc++] = j->index_len;
    }
    int over = cp->o->overwrite || (cp->o->rollback && cp->o->mirror);
    const char *args[6] = { j->dump->str, at, j->mode, over ? "1" : "0", n,
                            j->member ? j->member : "" };
    size_t alens[6] = { j->dump->len, strlen(at), strlen(j->mode), 1, strlen(n), j->member_len };
    for (int k = 0; k < 6; k++) {
        argv[argc] = args[k];
        lens[argc++] = alens[k];
    }
    syncconn_append(cp->dst->node[node], argc, argv, lens);
    return node;
}

static void count(struct copier *cp, struct job *j, int copied)
{
    if (copied) {
        cp->rep->copied++;
        cp->rep->fam[j->fam].copied++;
    } else {
        cp->rep->skipped++;
        cp->rep->fam[j->fam].skipped++;
    }
}

/* Every job written, node by node; each script's answer counted. */
static int chunk_write(struct copier *cp)
{
    int node[CHUNK], used[KEYSPACE_NODES_MAX] = { 0 };
    for (int k = 0; k < cp->njobs; k++) {
        struct job *j = &cp->job[k];
        node[k] = -1;
        if (cp->o->dry_run) {
            if (j->act != A_ITEM && j->dump && j->dump->type == REDIS_REPLY_STRING)
                count(cp, j, 1);
            continue;
        }
        if ((node[k] = job_write(cp, j)) >= 0)
            used[node[k]] = 1;
    }
    for (int n = 0; n < cp->dst->nnodes; n++) {
        if (!used[n])
            continue;
        if (syncconn_flush(cp->dst->node[n], cp->err, cp->errlen) < 0)
            return -1;
        for (int k = 0; k < cp->njobs; k++) {
            if (node[k] != n)
                continue;
            redisReply *r = syncconn_read(cp->dst->node[n], cp->err, cp->errlen);
            if (!r)
                return -1;
            if (r->type != REDIS_REPLY_INTEGER) {
                snprintf(cp->err, cp->errlen, "%s: writing %.200s: %.200s", cp->dst->addr[n],
                         cp->job[k].dst, r->type == REDIS_REPLY_ERROR ? r->str : "not a number");
                freeReplyObject(r);
                return -1;
            }
            count(cp, &cp->job[k], r->integer == 1);
            cp->job[k].held = 1;
            freeReplyObject(r);
        }
    }
    return 0;
}

/* DEL of name on source node i, its answer counted. */
static int source_delete(struct copier *cp, int i, const char *const *names, const size_t *lens,
                         int n)
{
    for (int k = 0; k < n; k++) {
        const char *argv[2] = { "DEL", names[k] };
        size_t l[2] = { 3, lens[k] };
        syncconn_append(cp->src->node[i], 2, argv, l);
    }
    if (n && syncconn_flush(cp->src->node[i], cp->err, cp->errlen) < 0)
        return -1;
    for (int k = 0; k < n; k++) {
        redisReply *r = syncconn_read(cp->src->node[i], cp->err, cp->errlen);
        if (!r)
            return -1;
        cp->rep->deleted += r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
        freeReplyObject(r);
    }
    return 0;
}

/* --delete-source: the chunk's source keys the target now holds; a
 * message log only once its items are copied (scan_node). */
static int chunk_delete(struct copier *cp, int i)
{
    const char *names[CHUNK];
    size_t lens[CHUNK];
    int n = 0;
    for (int k = 0; k < cp->njobs; k++)
        if (cp->job[k].held && cp->job[k].act == A_COPY) {
            names[n] = cp->job[k].src;
            lens[n++] = cp->job[k].src_len;
        }
    return source_delete(cp, i, names, lens, n);
}

static int chunk_run(struct copier *cp, int i)
{
    int rc = cp->njobs ? chunk_read(cp, i) : 0;
    if (rc == 0 && cp->njobs)
        rc = chunk_write(cp);
    if (rc == 0 && cp->o->delete_source && !cp->o->dry_run)
        rc = chunk_delete(cp, i);
    for (int k = 0; k < cp->njobs; k++)
        job_free(&cp->job[k]);
    cp->njobs = 0;
    return rc;
}

/* One more job for legacy name; the chunk runs when full. *is_log: the
 * name is a message log, whose items are copied after the batch. */
static int job_push(struct copier *cp, int i, const char *name, size_t len, int via_log,
                    int *is_log)
{
    int made = job_make(cp, name, len, via_log, &cp->job[cp->njobs]);
    if (is_log)
        *is_log = made > 0 && cp->job[cp->njobs].act == A_LOG;
    if (made < 0) {
        job_free(&cp->job[cp->njobs]);
        snprintf(cp->err, cp->errlen, "out of memory");
        return -1;
    }
    if (made == 0 || cp->job[cp->njobs].act == A_NONE) {
        job_free(&cp->job[cp->njobs]);
        return 0;
    }
    return ++cp->njobs == CHUNK ? chunk_run(cp, i) : 0;
}

/* Whether item name (legacy) parses as an item of log match lm, each
 * capture of the log the same: a member holding ':' could make it another
 * log's item (another chat's message). */
static int item_of_log(struct copier *cp, const char *item, size_t len,
                       const struct layout_match *lm)
{
    static char out[3 * NAME_MAX_LEN + 1024];
    struct layout_match m;
    size_t n;
    if (layout_to_cluster(cp->l, item, len, out, sizeof out, &n, &m) != LAYOUT_MAPPED ||
        m.rule != lm->rule->pair)
        return 0;
    for (size_t b = 0; b < lm->rule->ncap; b++) {
        int a = rules_capture_find(m.rule, lm->rule->cap[b].name,
                                   strlen(lm->rule->cap[b].name));
        if (a < 0 || m.cap[a].len != lm->cap[b].len ||
            memcmp(m.cap[a].ptr, lm->cap[b].ptr, m.cap[a].len) != 0)
            return 0;
    }
    return 1;
}

/* The items the log at legacy name `log` references, copied: each
 * member's item name built by the layout; a member whose name would parse
 * as another log's item is not copied. */
static int log_items(struct copier *cp, int i, const char *log, size_t len)
{
    static char out[3 * NAME_MAX_LEN + 1024];
    struct layout_match m;
    size_t n;
    if (layout_to_cluster(cp->l, log, len, out, sizeof out, &n, &m) != LAYOUT_MAPPED)
        return 0;
    char cur[32] = "0", item[3 * NAME_MAX_LEN];
    do {
        const char *argv[6] = { "ZSCAN", log, cur, "COUNT", "1000" };
        size_t lens[5] = { 5, len, strlen(cur), 5, 4 };
        syncconn_append(cp->src->node[i], 5, argv, lens);
        redisReply *r = syncconn_flush(cp->src->node[i], cp->err, cp->errlen) == 0
                        ? syncconn_read(cp->src->node[i], cp->err, cp->errlen) : NULL;
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            if (r)
                snprintf(cp->err, cp->errlen, "%s: ZSCAN of a message log failed", cp->src->addr[i]);
            freeReplyObject(r);
            return -1;
        }
        snprintf(cur, sizeof cur, "%s", r->element[0]->str ? r->element[0]->str : "0");
        const redisReply *pairs = r->element[1];
        for (size_t k = 0; k + 1 < pairs->elements; k += 2) {
            const redisReply *mem = pairs->element[k];
            struct layout_value member = { mem->str, mem->len, false };
            size_t il = mem->type == REDIS_REPLY_STRING && mem->len < NAME_MAX_LEN
                        ? name_like(cp->l, &m, m.rule->pair, &member, item, sizeof item) : 0;
            if (il == 0 || !item_of_log(cp, item, il, &m)) {
                cp->rep->items_elsewhere++;
                continue;
            }
            if (job_push(cp, i, item, il, 1, NULL) < 0) {
                freeReplyObject(r);
                return -1;
            }
        }
        freeReplyObject(r);
    } while (strcmp(cur, "0") != 0);
    return chunk_run(cp, i);
}

/* Progress on stderr: a bar redrawn on a terminal, else a line every 10 s;
 * done (the last call) ends the bar's line. */
static void progress(struct copier *cp, int done)
{
    long long now = wall_ms(), ms = now - cp->started_ms;
    if (!done && now - cp->shown_ms < (cp->tty ? 200 : 10000))
        return;
    cp->shown_ms = now;
    double rate = ms > 0 ? cp->done * 1000.0 / (double)ms : 0;
    long total = cp->total > cp->done ? cp->total : cp->done;
    long long eta = rate > 0 && cp->total ? (long long)((double)(total - cp->done) / rate) : -1;
    if (cp->tty) {
        char bar[31];
        int fill = total ? (int)(30.0 * (double)cp->done / (double)total) : 0;
        memset(bar, '#', (size_t)fill);
        memset(bar + fill, '.', (size_t)(30 - fill));
        bar[30] = '\0';
        fprintf(stderr, "\r[%s] %ld/%ld keys  %.0f keys/s  ETA %lld s ", bar, cp->done, total,
                rate, eta < 0 ? 0 : eta);
        if (done)
            fputc('\n', stderr);
    } else {
        fprintf(stderr, "migrate: %ld of %ld keys read, %.0f keys/s%s\n", cp->done, total, rate,
                done ? ", done" : "");
    }
    fflush(stderr);
}

/* --delete-source of a log whose items are copied: deleted only when the
 * target holds its copy. */
static int log_delete(struct copier *cp, int i, const char *log, size_t len)
{
    static char name[3 * NAME_MAX_LEN + 1024];
    struct layout_match m;
    size_t n;
    if (layout_to_cluster(cp->l, log, len, name, sizeof name, &n, &m) != LAYOUT_MAPPED)
        return 0;
    int node = keyspace_node_of(cp->dst, name, n);
    if (node < 0)
        return 0;
    const char *argv[2] = { "EXISTS", name };
    size_t lens[2] = { 6, n };
    syncconn_append(cp->dst->node[node], 2, argv, lens);
    redisReply *r = syncconn_flush(cp->dst->node[node], cp->err, cp->errlen) == 0
                    ? syncconn_read(cp->dst->node[node], cp->err, cp->errlen) : NULL;
    if (!r)
        return -1;
    int held = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return held ? source_delete(cp, i, &log, &len, 1) : 0;
}

/* The logs a batch named, whose items follow the batch. */
static int scan_node(struct copier *cp, int i, const char *match)
{
    struct keyspace_batch b = { 0 };
    unsigned char *is_log = NULL;   /* per name of the batch */
    size_t logs_cap = 0;
    long long cursor = 0;
    int rc = 0;
    do {
        cursor = keyspace_scan(cp->src, i, cursor, match, &b, cp->err, cp->errlen);
        if (cursor < 0)
            rc = -1;
        if (b.n > logs_cap) {
            unsigned char *grown = realloc(is_log, b.n);
            if (!grown) {
                snprintf(cp->err, cp->errlen, "out of memory");
                rc = -1;
                break;
            }
            is_log = grown;
            logs_cap = b.n;
        }
        for (size_t k = 0; rc == 0 && k < b.n; k++) {
            int a_log;
            rc = job_push(cp, i, b.name[k], b.len[k], 0, &a_log);
            is_log[k] = (unsigned char)a_log;
        }
        if (rc == 0)
            rc = chunk_run(cp, i);
        cp->done += (long)b.n;
        progress(cp, 0);
        for (size_t k = 0; rc == 0 && k < b.n; k++) {
            if (!is_log[k])
                continue;
            rc = log_items(cp, i, b.name[k], b.len[k]);
            if (rc == 0 && cp->o->delete_source && !cp->o->dry_run)
                rc = log_delete(cp, i, b.name[k], b.len[k]);
        }
    } while (rc == 0 && cursor > 0);
    free(is_log);
    keyspace_batch_free(&b);
    return rc;
}

/* copy_lua loaded on every target node (EVALSHA then sends 40 bytes, not
 * the body, per record). */
static int script_load(struct copier *cp)
{
    for (int n = 0; n < cp->dst->nnodes; n++) {
        const char *argv[3] = { "SCRIPT", "LOAD", copy_lua };
        size_t lens[3] = { 6, 4, sizeof copy_lua - 1 };
        syncconn_append(cp->dst->node[n], 3, argv, lens);
        redisReply *r = syncconn_flush(cp->dst->node[n], cp->err, cp->errlen) == 0
                        ? syncconn_read(cp->dst->node[n], cp->err, cp->errlen) : NULL;
        int ok = r && r->type == REDIS_REPLY_STRING && r->len == 40;
        if (ok)
            memcpy(cp->sha[n], r->str, 41);
        else if (r)
            snprintf(cp->err, cp->errlen, "%s: SCRIPT LOAD: %.200s", cp->dst->addr[n],
                     r->type == REDIS_REPLY_ERROR ? r->str : "not a SHA1");
        freeReplyObject(r);
        if (!ok)
            return -1;
    }
    return 0;
}

/* A record of a `copy token` family only in the legacy layout (a
 * schedule), made a deleted marker keeping its fencing token. */
static const char marker_lua[] =
    "local t = redis.call('HGET', KEYS[1], 'token') or '0'\n"
    "redis.call('DEL', KEYS[1])\n"
    "redis.call('HSET', KEYS[1], 'token', t, 'deleted', '1')\n"
    "return 1\n";

/* Mirror: of one SCAN batch of the target, the legacy records whose
 * cluster name the source no longer holds are pruned (`copy token`
 * records become deleted markers; `copy greater` ones, fences and terms,
 * stay). */
static int prune_batch(struct copier *cp, const struct keyspace_batch *b)
{
    static char out[3 * NAME_MAX_LEN + 1024];
    int node[1024];
    unsigned char marker[1024];
    size_t n = b->n < 1024 ? b->n : 1024;
    for (size_t k = 0; k < n; k++) {
        struct layout_match m;
        size_t cl;
        node[k] = -1;
        if (b->len[k] > NAME_MAX_LEN ||
            layout_to_cluster(cp->l, b->name[k], b->len[k], out, sizeof out, &cl, &m) !=
                LAYOUT_MAPPED || m.rule->copy == RULES_COPY_NEVER ||
            m.rule->copy == RULES_COPY_GREATER || !included(cp->o->include, m.rule))
            continue;
        marker[k] = m.rule->copy == RULES_COPY_TOKEN;
        if ((node[k] = keyspace_node_of(cp->src, out, cl)) < 0)
            continue;
        const char *argv[2] = { "EXISTS", out };
        size_t lens[2] = { 6, cl };
        syncconn_append(cp->src->node[node[k]], 2, argv, lens);
    }
    for (int s = 0; s < cp->src->nnodes; s++)
        if (syncconn_flush(cp->src->node[s], cp->err, cp->errlen) < 0)
            return -1;
    int prunes = 0;
    for (size_t k = 0; k < n; k++) {
        if (node[k] < 0)
            continue;
        redisReply *r = syncconn_read(cp->src->node[node[k]], cp->err, cp->errlen);
        if (!r)
            return -1;
        int gone = r->type == REDIS_REPLY_INTEGER && r->integer == 0;
        freeReplyObject(r);
        if (!gone)
            continue;
        const char *del[2] = { "DEL", b->name[k] };
        const char *mark[4] = { "EVAL", marker_lua, "1", b->name[k] };
        size_t dl[2] = { 3, b->len[k] }, ml[4] = { 4, sizeof marker_lua - 1, 1, b->len[k] };
        if (marker[k])
            syncconn_append(cp->dst->node[0], 4, mark, ml);
        else
            syncconn_append(cp->dst->node[0], 2, del, dl);
        prunes++;
    }
    if (prunes && syncconn_flush(cp->dst->node[0], cp->err, cp->errlen) < 0)
        return -1;
    for (int k = 0; k < prunes; k++) {
        redisReply *r = syncconn_read(cp->dst->node[0], cp->err, cp->errlen);
        if (!r)
            return -1;
        cp->rep->pruned += r->type == REDIS_REPLY_INTEGER ? (r->integer > 0) : 0;
        freeReplyObject(r);
    }
    return 0;
}

static int prune(struct copier *cp, const char *match)
{
    struct keyspace_batch b = { 0 };
    long long cursor = 0;
    int rc = 0;
    do {
        cursor = keyspace_scan(cp->dst, 0, cursor, match, &b, cp->err, cp->errlen);
        rc = cursor < 0 ? -1 : prune_batch(cp, &b);
    } while (rc == 0 && cursor > 0);
    keyspace_batch_free(&b);
    return rc;
}

/* Bots still running on ks: refused unless allow_live. It is one SCAN of
 * the prefix without a PTTL per key (inspect_run's with_ttls 0), which
 * also gives the progress its total. */
static int live_check(struct keyspace *ks, const struct layout *l, const char *prefix,
                      const char *which, long *keys, char *err, size_t errlen)
{
    struct inspect_report *rep = calloc(1, sizeof *rep);
    if (!rep || inspect_run(ks, l, prefix, 0, rep, err, errlen) < 0) {
        if (!rep)
            snprintf(err, errlen, "out of memory");
        free(rep);
        return -1;
    }
    int live = rep->heartbeats > 0 || rep->pending_tickets > 0;
    *keys = rep->keys;
    if (live)
        snprintf(err, errlen, "the %s shows bots of %s still running: %ld coordinator "
                 "heartbeats (%s), %ld pending turn tickets; stop every bot of the "
                 "prefix first (or --allow-live)", which, prefix, rep->heartbeats,
                 rep->heartbeats_where, rep->pending_tickets);
    free(rep);
    return live ? -1 : 0;
}

/* A whole rollback: the marker is removed from the target, so that a
 * cluster-layout proxy or store started there by mistake refuses the
 * legacy data. */
static int marker_remove(struct copier *cp)
{
    char key[512];
    int n = snprintf(key, sizeof key, "%s:{meta}:layout", cp->o->prefix);
    const char *argv[2] = { "DEL", key };
    size_t lens[2] = { 3, (size_t)n };
    syncconn_append(cp->dst->node[0], 2, argv, lens);
    redisReply *r = syncconn_flush(cp->dst->node[0], cp->err, cp->errlen) == 0
                    ? syncconn_read(cp->dst->node[0], cp->err, cp->errlen) : NULL;
    if (!r)
        return -1;
    snprintf(cp->rep->marker, sizeof cp->rep->marker, "%s",
             r->type == REDIS_REPLY_INTEGER && r->integer ? "removed" : "absent");
    freeReplyObject(r);
    return 0;
}

/* The marker, last: set on the target unless it says something else. */
static int marker_write(struct copier *cp)
{
    if (cp->o->rollback)
        return marker_remove(cp);
    char key[512];
    int n = snprintf(key, sizeof key, "%s:{meta}:layout", cp->o->prefix);
    int node = keyspace_node_of(cp->dst, key, (size_t)n);
    if (node < 0) {
        snprintf(cp->err, cp->errlen, "no master serves the marker's slot");
        return -1;
    }
    const char *argv[4] = { "SET", key, "cluster:v1", "NX" };
    size_t lens[4] = { 3, (size_t)n, 10, 2 };
    const char *get[2] = { "GET", key };
    size_t gl[2] = { 3, (size_t)n };
    syncconn_append(cp->dst->node[node], 4, argv, lens);
    syncconn_append(cp->dst->node[node], 2, get, gl);
    redisReply *set = NULL, *now = NULL;
    if (syncconn_flush(cp->dst->node[node], cp->err, cp->errlen) < 0 ||
        !(set = syncconn_read(cp->dst->node[node], cp->err, cp->errlen)) ||
        !(now = syncconn_read(cp->dst->node[node], cp->err, cp->errlen))) {
        freeReplyObject(set);
        return -1;
    }
    int ok = now->type == REDIS_REPLY_STRING && strcmp(now->str, "cluster:v1") == 0;
    snprintf(cp->rep->marker, sizeof cp->rep->marker, "%s", !ok ? "holds another value"
             : set->type == REDIS_REPLY_STATUS ? "written" : "already cluster:v1");
    if (!ok)
        snprintf(cp->err, cp->errlen, "%s holds another value than cluster:v1", key);
    freeReplyObject(set);
    freeReplyObject(now);
    return ok ? 0 : -1;
}

int copy_run(struct keyspace *src, struct keyspace *dst, const struct layout *l,
             const struct copy_opts *o, struct copy_report *rep, char *err, size_t errlen)
{
    struct copier *cp = calloc(1, sizeof *cp);
    if (!cp) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *cp = (struct copier){ .src = src, .dst = dst, .l = l, .o = o, .rep = rep,
                           .in_place = src == dst, .err = err, .errlen = errlen };
    memset(rep, 0, sizeof *rep);
    snprintf(rep->marker, sizeof rep->marker, "not written: the run did not end");
    if (o->rollback && dst->cluster) {
        snprintf(err, errlen, "the rollback's target is one server (the legacy layout lives "
                 "on one), not a cluster");
        free(cp);
        return -1;
    }
    long target_keys;
    int rc = o->allow_live ? 0 : live_check(src, l, o->prefix, "source", &cp->total, err, errlen);
    if (rc == 0 && src != dst && !o->allow_live)
        rc = live_check(dst, l, o->prefix, "target", &target_keys, err, errlen);
    cp->tty = isatty(2);
    cp->started_ms = cp->shown_ms = wall_ms();
    if (rc == 0 && !o->dry_run)
        rc = script_load(cp);
    char match[1100];
    keyspace_prefix_match(o->prefix, match, sizeof match);
    for (int i = 0; rc == 0 && i < src->nnodes; i++)
        rc = scan_node(cp, i, match);
    if (rc == 0)
        progress(cp, 1);
    if (rc == 0 && o->rollback && o->mirror && !o->dry_run)
        rc = prune(cp, match);
    if (rc == 0 && o->dry_run)
        snprintf(rep->marker, sizeof rep->marker, "not written: a dry run");
    else if (rc == 0 && o->include)
        snprintf(rep->marker, sizeof rep->marker, "not written: --include copied part of "
                 "the prefix");
    else if (rc == 0)
        rc = marker_write(cp);
    for (int k = 0; k < cp->njobs; k++)
        job_free(&cp->job[k]);
    free(cp);
    return rc;
}

void copy_print(const struct copy_report *rep, const struct copy_opts *o, FILE *out)
{
    fprintf(out, "%s%-28s %10s %10s\n", o->dry_run ? "dry run (nothing written)\n" : "",
            "family", o->dry_run ? "to copy" : "copied", "skipped");
    for (int i = 0; i < rep->nfam; i++)
        fprintf(out, "%-28s %10ld %10ld\n", rep->fam[i].name, rep->fam[i].copied,
                rep->fam[i].skipped);
    fprintf(out, "copied %ld, skipped %ld (the target's key won), orphans %ld (items no log "
            "references), %ld log members naming another chat's item\n", rep->copied,
            rep->skipped, rep->orphans, rep->items_elsewhere);
    if (o->delete_source)
        fprintf(out, "source keys deleted: %ld\n", rep->deleted);
    if (o->rollback && o->mirror)
        fprintf(out, "legacy records pruned (the source no longer holds them): %ld\n",
                rep->pruned);
    fprintf(out, "layout marker %s:{meta}:layout: %s\n", o->prefix, rep->marker);
}

/* s as a JSON string (names are bytes: control characters and non-ASCII
 * bytes escaped as \u00XX). */
static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

void copy_json(const struct copy_report *rep, const struct copy_opts *o, FILE *out)
{
    fprintf(out, "{\"prefix\": ");
    json_string(out, o->prefix);
    fprintf(out, ", \"direction\": \"%s\", \"dryRun\": %s, \"copied\": %ld, "
            "\"skipped\": %ld, \"orphans\": %ld, \"itemsOfAnotherChat\": %ld, \"pruned\": %ld, "
            "\"deleted\": %ld, \"layoutMarker\": ",
            o->rollback ? "cluster-to-legacy" : "legacy-to-cluster", o->dry_run ? "true" : "false",
            rep->copied, rep->skipped, rep->orphans, rep->items_elsewhere, rep->pruned,
            rep->deleted);
    json_string(out, rep->marker);
    fprintf(out, ", \"families\": {");
    for (int i = 0; i < rep->nfam; i++) {
        fprintf(out, "%s", i ? ", " : "");
        json_string(out, rep->fam[i].name);
        fprintf(out, ": {\"copied\": %ld, \"skipped\": %ld}", rep->fam[i].copied,
                rep->fam[i].skipped);
    }
    fprintf(out, "}}\n");
}
