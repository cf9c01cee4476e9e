#include "proxy/families/index.h"

#include <errno.h>
#include <event2/buffer.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster/slot.h"
#include "proxy/core/merge.h"
#include "proxy/core/request.h"
#include "proxy/core/rewrite.h"
#include "proxy/core/router.h"
#include "proxy/core/scripts.h"
#include "proxy/core/worker.h"
#include "keylayout/glob.h"
#include "keylayout/index_lua.h"
#include "keylayout/layout.h"
#include "keylayout/listplan.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"
#include "lib/proto/resp.h"

static merge_fn index_merge;
static const struct merge merge_index = { index_merge, 0 };

/* ---- the scripts ---- */

static const struct request_hooks write_hooks;
/* RENAME's table entry: the write the upkeep wraps (index_init). */
static const struct command *rename_cmd;
static const char *wrap_routed_write(struct request *r, const struct command *cmd);

struct script {
    const char *body;
    const size_t *len;
    char sha[SCRIPTS_SHA_HEX];
};

static struct script script_write = { embed_index_write, &embed_index_write_len, "" };
static struct script script_read = { embed_index_read, &embed_index_read_len, "" };
/* index_write for a RESP3 client: redis.setresp(3) first, so the command's
 * reply keeps its RESP3 type (a double, a map, a set) through Lua, as the
 * node would answer it directly. */
static const char resp3_prologue[] = "redis.setresp(3)\n";
static size_t write3_len;
static struct script script_write3 = { NULL, &write3_len, "" };

/* Registered with scripts.h, whose NOSCRIPT recovery (SCRIPT LOAD on that
 * master, then the EVALSHA again) then covers them; out of memory at start,
 * only the SHA is known and a NOSCRIPT reaches the client. */
static void script_hash(struct script *s)
{
    if (scripts_register(s->body, *s->len, s->sha) < 0)
        scripts_sha1_hex(s->body, *s->len, s->sha);
}

void index_init(void)
{
    static char *write3;
    script_hash(&script_write);
    script_hash(&script_read);
    write3_len = sizeof resp3_prologue - 1 + embed_index_write_len;
    if (!write3 && (write3 = malloc(write3_len)) != NULL) {
        memcpy(write3, resp3_prologue, sizeof resp3_prologue - 1);
        memcpy(write3 + sizeof resp3_prologue - 1, embed_index_write, embed_index_write_len);
    }
    script_write3.body = write3 ? write3 : embed_index_write;   /* out of memory: RESP2's */
    if (!write3)
        write3_len = embed_index_write_len;
    script_hash(&script_write3);
    router_register_write_wrap(wrap_routed_write);
    rename_cmd = command_lookup("rename", 6);
}

/* ---- writes ---- */

/* Lua's unpack() stops at about 8000 values (LUAI_MAXCSTACK): a longer
 * command cannot be run by index_write. */
#define INDEX_MAX_ARGS 7900
#define INDEX_KEYS_FIXED 16
#define INDEX_SCRATCH 1024

/* What the keys of one write are: records (with their index and member in
 * scratch) first, the other keys after. */
struct write_plan {
    int fixed_keys[INDEX_KEYS_FIXED], *keys;
    int nkeys;
    bool fixed_rec[INDEX_KEYS_FIXED], *rec;
    size_t fixed_at[INDEX_KEYS_FIXED * 4], *at;   /* index off, len, member off, len */
    int nrec;
    char fixed_scratch[INDEX_SCRATCH], *scratch;
    size_t used, cap;
};

static void write_plan_release(struct write_plan *p)
{
    if (p->keys != p->fixed_keys)
        free(p->keys);
    if (p->rec != p->fixed_rec)
        free(p->rec);
    if (p->at != p->fixed_at)
        free(p->at);
    if (p->scratch != p->fixed_scratch)
        free(p->scratch);
}

static int write_plan_keys(struct write_plan *p, struct request *r, const struct command *cmd)
{
    p->keys = p->fixed_keys;
    p->rec = p->fixed_rec;
    p->at = p->fixed_at;
    p->scratch = p->fixed_scratch;
    p->used = 0;
    p->cap = sizeof p->fixed_scratch;
    p->nrec = 0;
    int n = request_keys(r, cmd, p->keys, INDEX_KEYS_FIXED);
    p->nkeys = n < 0 ? 0 : n;
    if (n <= INDEX_KEYS_FIXED)
        return 0;
    p->keys = malloc(sizeof *p->keys * (size_t)n);
    p->rec = malloc(sizeof *p->rec * (size_t)n);
    p->at = malloc(sizeof *p->at * 4 * (size_t)n);
    if (!p->keys || !p->rec || !p->at)
        return -1;
    request_keys(r, cmd, p->keys, n);
    return 0;
}

/* Room for need more bytes of scratch. */
static int write_plan_reserve(struct write_plan *p, size_t need)
{
    if (p->used + need <= p->cap)
        return 0;
    size_t grown = (p->used + need) * 2;
    char *s = p->scratch == p->fixed_scratch ? malloc(grown) : realloc(p->scratch, grown);
    if (!s)
        return -1;
    if (p->scratch == p->fixed_scratch)
        memcpy(s, p->fixed_scratch, p->used);
    p->scratch = s;
    p->cap = grown;
    return 0;
}

/* Whether key (a cluster name) is a record of an indexed family; if so its
 * index and member are appended to the scratch. -1 out of memory. */
static int write_plan_record(struct write_plan *p, const struct layout *l, int i,
                             const char *key, size_t len)
{
    struct layout_match m;
    size_t legacy_len, need = layout_max_len(l, len);
    char legacy[256], *lbuf = legacy;
    p->rec[i] = false;
    enum layout_result res = layout_record_to_legacy(l, key, len, legacy, sizeof legacy,
                                                     &legacy_len, &m);
    if (res == LAYOUT_SHORT) {
        lbuf = malloc(legacy_len);
        if (!lbuf)
            return -1;
        res = layout_record_to_legacy(l, key, len, lbuf, legacy_len, &legacy_len, &m);
    }
    int rc = 0;
    if (res == LAYOUT_MAPPED && m.rule->indexed) {
        if (write_plan_reserve(p, 2 * need) < 0) {
            rc = -1;
        } else {
            size_t *at = &p->at[4 * i];
            at[0] = p->used;
            at[1] = layout_index_key(l, &m, p->scratch + p->used, need);
            p->used += at[1];
            at[2] = p->used;
            at[3] = layout_index_member(l, &m, p->scratch + p->used, need);
            p->used += at[3];
            p->rec[i] = true;
            p->nrec++;
        }
    }
    if (lbuf != legacy)
        free(lbuf);
    return rc;
}

/* r's arguments as argv (pointing into r) */
static void request_argv(const struct request *r, const char **argv, size_t *lens)
{
    for (int i = 0; i < r->argc; i++)
        argv[i] = request_arg(r, i, &lens[i]);
}

/* EVALSHA sha nkeys records.. indexes.. others.. n members.. command.. */
static int write_wrap(struct request *r, const struct write_plan *p)
{
    int nother = p->nkeys - p->nrec, argc = 3 + 2 * p->nrec + nother + 1 + p->nrec + r->argc;
    const char *fixed_argv[32], **argv = fixed_argv;
    size_t fixed_lens[32], *lens = fixed_lens;
    char nkeys[24], nrec[24];
    int rc = -1, a = 0;
    if (argc > 32) {
        argv = malloc(sizeof *argv * (size_t)argc);
        lens = malloc(sizeof *lens * (size_t)argc);
        if (!argv || !lens)
            goto out;
    }
    argv[a] = "EVALSHA", lens[a++] = 7;
    argv[a] = (request_resp(r) == RESP3 ? &script_write3 : &script_write)->sha, lens[a++] = 40;
    argv[a] = nkeys, lens[a++] = resp_put_decimal(nkeys, (size_t)(2 * p->nrec + nother));
    for (int i = 0; i < p->nkeys; i++)
        if (p->rec[i])
            argv[a] = request_arg(r, p->keys[i], &lens[a]), a++;
    for (int i = 0; i < p->nkeys; i++)
        if (p->rec[i])
            argv[a] = p->scratch + p->at[4 * i], lens[a++] = p->at[4 * i + 1];
    for (int i = 0; i < p->nkeys; i++)
        if (!p->rec[i])
            argv[a] = request_arg(r, p->keys[i], &lens[a]), a++;
    argv[a] = nrec, lens[a++] = resp_put_decimal(nrec, (size_t)p->nrec);
    for (int i = 0; i < p->nkeys; i++)
        if (p->rec[i])
            argv[a] = p->scratch + p->at[4 * i + 2], lens[a++] = p->at[4 * i + 3];
    request_argv(r, argv + a, lens + a);
    rc = request_rebuild(r, argc, argv, lens);
out:
    if (argv != fixed_argv)
        free(argv);
    if (lens != fixed_lens)
        free(lens);
    return rc;
}

int index_wrap_write(struct request *r, const struct command *cmd, const struct layout *l)
{
    if (!l || !cmd || !(cmd->flags & CMD_WRITE) || (cmd->flags & (CMD_NOSCRIPT | CMD_BLOCKING)))
        return 0;
    struct write_plan p;
    int rc = -1;
    if (write_plan_keys(&p, r, cmd) < 0)
        goto out;
    for (int i = 0; i < p.nkeys; i++) {
        size_t len;
        const char *key = request_arg(r, p.keys[i], &len);
        if (write_plan_record(&p, l, i, key, len) < 0)
            goto out;
    }
    if (p.nrec > 0 && r->argc > INDEX_MAX_ARGS)
        rc = INDEX_TOO_LONG;
    else
        rc = p.nrec == 0 ? 0 : write_wrap(r, &p) < 0 ? -1 : 1;
    if (rc == 1) {
        stat_inc(&r->worker->stats.index_syncs);
        r->hooks = &write_hooks;
    }
out:
    write_plan_release(&p);
    return rc;
}

const char *index_wrap_error(int rc)
{
    return rc == INDEX_TOO_LONG
        ? "ERR a write to indexed records with more than 7900 arguments cannot keep its "
          "index exact (the index script's limit): split it"
        : REPLY_ERR_OOM;
}

/* ---- replies ---- */

static const struct script *script_of(const struct request *r)
{
    size_t len;
    if (r->argc < 2)
        return NULL;
    const char *name = request_arg(r, 0, &len);
    const struct command *sent = command_lookup(name, len);
    if (!sent || !(sent->proxy_facts & CMDP_SCRIPT_SHA))
        return NULL;
    const char *sha = request_arg(r, 1, &len);
    if (len == 40 && memcmp(sha, script_write.sha, 40) == 0)
        return &script_write;
    if (len == 40 && memcmp(sha, script_write3.sha, 40) == 0)
        return &script_write3;
    if (len == 40 && memcmp(sha, script_read.sha, 40) == 0)
        return &script_read;
    return NULL;
}

/* Argument i of r as a non-negative count (strict digits), or -1. */
static long arg_count(const struct request *r, int i)
{
    size_t len;
    const char *a = request_arg(r, i, &len);
    long v = 0;
    if (len == 0 || len > 9)
        return -1;
    for (size_t k = 0; k < len; k++) {
        if (a[k] < '0' || a[k] > '9')
            return -1;
        v = v * 10 + (a[k] - '0');
    }
    return v;
}

int index_wrapped_parts(const struct request *r, int *nrec, int *original)
{
    long nkeys = arg_count(r, 2), n = nkeys >= 0 && 3 + nkeys < r->argc ? arg_count(r, 3 + (int)nkeys) : -1;
    if (n < 0 || 4 + nkeys + n >= r->argc)
        return -1;
    *nrec = (int)n;
    *original = (int)(4 + nkeys + n);
    return 0;
}

/* Whether the reply is a "$-1" of a wrapped command whose own answer is a
 * null array: Lua turns a null array into false, which the script returns
 * as a null bulk. */
static int null_array_lost(const struct request *r, const struct reply_view *v)
{
    char head[5];
    if (v->len != 5)
        return 0;
    reply_view_copy(v, head, 5);
    if (memcmp(head, "$-1\r\n", 5) != 0 || script_of(r) != &script_write)
        return 0;
    int nrec, at;
    if (index_wrapped_parts(r, &nrec, &at) < 0)
        return 0;
    size_t nlen;
    const char *name = request_arg(r, at, &nlen);
    const struct command *wrapped = command_lookup(name, nlen);
    return wrapped && index_answers_null_array(wrapped, r->argc - at);
}

int index_answers_null_array(const struct command *cmd, int argc)
{
    if (cmd->proxy_facts & CMDP_NULL_ARRAY_COUNTED)
        return argc == 3;
    return (cmd->proxy_facts & CMDP_NULL_ARRAY) != 0;
}

/* The reply of a write sent as the index script: its null array back. */
static int write_reply(struct request *r, struct node_conn *from, const struct reply_view *v,
                       const struct reply_scanner *s)
{
    (void)from, (void)s;
    if (!null_array_lost(r, v))
        return 0;
    reply_view_drop(v);
    request_deliver_bytes(r, "*-1\r\n", 5);
    return 1;
}

static const struct request_hooks write_hooks = { .reply = write_reply };

/* The router's write wrapper (router.h). */
static const char *wrap_routed_write(struct request *r, const struct command *cmd)
{
    int rc = index_wrap_write(r, cmd, worker_layout(r->worker));
    return rc < 0 ? index_wrap_error(rc) : NULL;
}

/* ---- upkeep after writes outside the index script ---- */

static void quiet_reply(struct node_req *nr, const struct reply_view *v,
                        const struct reply_scanner *s)
{
    (void)s;
    reply_view_drop(v);
    free(nr);
}

static void quiet_fail(struct node_req *nr, int may_have_run, const char *why)
{
    (void)may_have_run;
    (void)why;
    free(nr);
}

void index_upkeep_key(struct worker *w, const char *key, size_t len)
{
    const struct layout *l = worker_layout(w);
    if (!l || !rename_cmd)
        return;
    const char *argv[3] = { "RENAME", key, key };
    const size_t lens[3] = { 6, len, len };
    struct request *u = request_new(w);
    if (!u)
        return;
    if (request_build(u, 3, argv, lens) == 0 && index_wrap_write(u, rename_cmd, l) == 1 &&
        u->argc >= 2) {
        const char **uargv = malloc(sizeof *uargv * (size_t)u->argc);
        size_t *ulens = malloc(sizeof *ulens * (size_t)u->argc);
        struct node_conn *conn = worker_conn(w, worker_node_for_slot(w, slot_of(key, len)), RESP2);
        struct node_req *q = calloc(1, sizeof *q);
        if (uargv && ulens && conn && q) {
            for (int i = 0; i < u->argc; i++)
                uargv[i] = request_arg(u, i, &ulens[i]);
            uargv[0] = "EVAL", ulens[0] = 4;
            uargv[1] = embed_index_write, ulens[1] = embed_index_write_len;
            if (request_rebuild(u, u->argc, uargv, ulens) == 0) {
                q->on_reply = quiet_reply;
                q->on_fail = quiet_fail;
                node_send(conn, q, u->data, u->len);
                q = NULL;
            }
        }
        free(q);
        free(uargv);
        free(ulens);
    }
    request_free(u);
}

void index_upkeep(struct request *r)
{
    if (!worker_layout(r->worker))
        return;
    int some[16], *keys;
    int n = request_keys_all(r, some, &keys);
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *key = request_arg(r, keys[i], &len);
        index_upkeep_key(r->worker, key, len);
    }
    if (keys != some)
        free(keys);
}

/* ---- listings ---- */

enum listing_kind { LISTING_KEYS, LISTING_SCAN };

struct index_listing {
    struct listplan ls;
    struct layout_ref *ref;         /* the layout the plan was made with */
    enum listing_kind kind;
    const char *pattern;            /* in the parent's arguments */
    size_t plen;
    int first;                      /* the index of the first part */
};

static void listing_freed(struct request *r, void *state);

/* A listing's plan, freed with its request (or given up: listing_drop). */
static const struct request_family listing_family = { listing_freed };

static void listing_freed(struct request *r, void *state)
{
    struct index_listing *il = state;
    request_family_set(r, &listing_family, NULL);
    layout_ref_put(il->ref);
    free(il);
}

static struct index_listing *listing_of(const struct request *r)
{
    return request_family_state(r, &listing_family);
}

/* Give up r's listing plan, if it has one. */
static void listing_drop(struct request *r)
{
    struct index_listing *il = listing_of(r);
    if (il)
        listing_freed(r, il);
}

/* Hang a plan for pattern on r; NULL when the indexes cannot answer it. */
static struct index_listing *listing_new(struct request *r, const struct layout *l,
                                         const char *pattern, size_t plen, enum listing_kind kind)
{
    struct index_listing *il = malloc(sizeof *il);
    if (!il)
        return NULL;
    if (!listplan_make(l, pattern, plen, &il->ls)) {
        free(il);
        return NULL;
    }
    il->ref = layout_ref_get(r->worker->layout);
    il->kind = kind;
    il->pattern = pattern;
    il->plen = plen;
    il->first = 0;
    request_family_set(r, &listing_family, il);
    return il;
}

/* One read of index i of r's listing, as a part of r. */
static struct request *read_part(struct request *r, int i, const char *type, size_t tlen)
{
    struct index_listing *il = listing_of(r);
    const struct layout *l = il->ref->layout;
    char key[512], before[512], after[512], nsplit[16];
    size_t klen = listplan_index_key(l, &il->ls, i, key, sizeof key), blen = 0, alen = 0;
    const char *argv[8] = { "EVALSHA", script_read.sha, "1", key, "", before, after, nsplit };
    size_t lens[8] = { 7, 40, 1, klen, 0, 0, 0, 0 };
    int argc = 4, splits;
    if (klen > sizeof key)
        return NULL;
    if (type) {
        if (!listplan_record_affixes(l, &il->ls, i, before, sizeof before, &blen, after,
                                    sizeof after, &alen, &splits) ||
            blen > sizeof before || alen > sizeof after)
            return NULL;
        argv[4] = type, lens[4] = tlen;
        lens[5] = blen, lens[6] = alen;
        lens[7] = (size_t)snprintf(nsplit, sizeof nsplit, "%d", splits);
        argc = 8;
    }
    struct request *part = request_new(r->worker);
    if (!part || request_build(part, argc, argv, lens) < 0) {
        if (part)
            request_free(part);
        return NULL;
    }
    part->parent = r;
    part->seq = r->seq;
    part->slot = slot_of(key, klen);
    return part;
}

/* Send reads of indexes [first, first + n) as r's parts. */
static void listing_send(struct request *r, int first, int n, const char *type, size_t tlen)
{
    r->parts = calloc((size_t)n, sizeof *r->parts);
    if (!r->parts) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    r->merge = &merge_index;
    listing_of(r)->first = first;
    r->parts_left = 1;
    for (int i = 0; i < n; i++) {
        struct request *part = read_part(r, first + i, type, tlen);
        if (!part) {
            r->merge = &merge_failed;
            break;
        }
        r->parts[r->nparts++] = part;
        r->parts_left++;
        router_send(part);
    }
    request_parts_sent(r);
}

int index_keys(struct request *r, const struct layout *l)
{
    size_t plen;
    const char *pattern = request_arg(r, 1, &plen);
    if (!l || !listing_new(r, l, pattern, plen, LISTING_KEYS))
        return 0;
    stat_inc(&r->worker->stats.listing_fanouts);
    listing_send(r, 0, listing_of(r)->ls.nindex, NULL, 0);
    return 1;
}

struct scan_args {
    unsigned long long cursor;
    const char *pattern, *type;
    size_t plen, tlen;
};

static bool arg_is(const char *a, size_t len, const char *word)
{
    return len == strlen(word) && strncasecmp(a, word, len) == 0;
}

/* SCAN's cursor and options, as Redis reads them; false for anything it
 * would refuse (then the every-master path lets a node say so). */
static bool scan_parse(const struct request *r, struct scan_args *sa)
{
    size_t len;
    const char *arg = request_arg(r, 1, &len);
    char buf[32], *end;
    if (len >= sizeof buf || (len > 0 && (arg[0] == ' ' || arg[0] == '\t')))
        return false;
    memcpy(buf, arg, len);
    buf[len] = '\0';
    errno = 0;
    sa->cursor = strtoull(buf, &end, 10);
    if (*end || errno)
        return false;
    sa->pattern = sa->type = NULL;
    sa->plen = sa->tlen = 0;
    for (int i = 2; i < r->argc; i += 2) {
        const char *opt = request_arg(r, i, &len);
        if (i + 1 >= r->argc)
            return false;
        if (arg_is(opt, len, "match")) {
            sa->pattern = request_arg(r, i + 1, &sa->plen);
        } else if (arg_is(opt, len, "type")) {
            sa->type = request_arg(r, i + 1, &sa->tlen);
        } else if (arg_is(opt, len, "count")) {
            const char *n = request_arg(r, i + 1, &len);
            long long count;
            if (len == 0 || len >= sizeof buf)
                return false;
            memcpy(buf, n, len);
            buf[len] = '\0';
            errno = 0;
            count = strtoll(buf, &end, 10);
            if (*end || errno || count < 1 || buf[0] == ' ' || buf[0] == '+')
                return false;
        } else {
            return false;
        }
    }
    return sa->pattern != NULL;
}

int index_scan(struct request *r, const struct layout *l)
{
    struct scan_args sa;
    if (!l || !scan_parse(r, &sa))
        return 0;
    struct index_listing *il = listing_new(r, l, sa.pattern, sa.plen, LISTING_SCAN);
    if (!il)
        return 0;
    if (sa.type) {
        char b[8], a[8];
        size_t bl, al;
        int splits;
        if (!listplan_record_affixes(l, &il->ls, 0, b, sizeof b, &bl, a, sizeof a, &al, &splits)) {
            listing_drop(r);           /* the script cannot name the records: every master */
            return 0;
        }
    }
    if (sa.cursor >= (unsigned long long)il->ls.nindex) {
        request_fail(r, "ERR invalid cursor");
        return 1;
    }
    stat_inc(&r->worker->stats.listing_fanouts);
    listing_send(r, (int)sa.cursor, 1, sa.type, sa.tlen);
    return 1;
}

/* ---- merging the reads ---- */

/* Cursor over the bulk strings of an array reply. */
struct bulks {
    const char *p, *end;
    long left;
};

static bool bulks_open(struct bulks *b, const char *buf, size_t len)
{
    const char *eol = memchr(buf, '\n', len);
    if (len < 4 || buf[0] != '*' || !eol)
        return false;
    b->left = strtol(buf + 1, NULL, 10);
    b->p = eol + 1;
    b->end = buf + len;
    return b->left >= 0;
}

/* The next element: 1 with it in *s and *n, 0 at the end, -1 malformed. */
static int bulks_next(struct bulks *b, const char **s, size_t *n)
{
    if (b->left == 0)
        return 0;
    const char *eol = memchr(b->p, '\n', (size_t)(b->end - b->p));
    if (b->p >= b->end || b->p[0] != '$' || !eol)
        return -1;
    long long len = strtoll(b->p + 1, NULL, 10);
    if (len < 0 || (long long)(b->end - eol - 1) < len + 2)
        return -1;
    *s = eol + 1;
    *n = (size_t)len;
    b->p = eol + 1 + len + 2;
    b->left--;
    return 1;
}

/* Append to body the legacy names of index i's members that the glob
 * matches; their count, or -1 when the reply is not an array of bulks. */
static long merge_part(struct request *part, const struct index_listing *il, int i,
                       struct evbuffer *body)
{
    const struct layout *l = il->ref->layout;
    struct evbuffer *rb = request_reply_buffer(part);
    size_t len = evbuffer_get_length(rb);
    const char *buf = len ? (const char *)evbuffer_pullup(rb, -1) : "";
    struct bulks b;
    const char *m;
    size_t mlen;
    long count = 0;
    int more;
    char fixed[512], *name = fixed;
    size_t cap = sizeof fixed;
    if (!bulks_open(&b, buf, len))
        return -1;
    while ((more = bulks_next(&b, &m, &mlen)) > 0) {
        size_t nlen;
        enum layout_result res = listplan_legacy(l, &il->ls, i, m, mlen, name, cap, &nlen);
        if (res == LAYOUT_SHORT) {
            char *grown = name == fixed ? malloc(nlen) : realloc(name, nlen);
            if (!grown)
                break;
            name = grown;
            cap = nlen;
            res = listplan_legacy(l, &il->ls, i, m, mlen, name, cap, &nlen);
        }
        if (res != LAYOUT_MAPPED || !glob_match(il->pattern, il->plen, name, nlen))
            continue;
        resp_add_bulk(body, name, nlen);
        count++;
    }
    if (name != fixed)
        free(name);
    return more < 0 ? -1 : count;
}

/* The reply of a listing parent whose parts are index reads. */
static void index_merge(struct request *p, struct evbuffer *out)
{
    const struct index_listing *il = listing_of(p);
    struct evbuffer *body = evbuffer_new();
    long total = 0;
    if (!body) {
        resp_add_error(out, REPLY_ERR_OOM);
        return;
    }
    for (int k = 0; k < p->nparts; k++) {
        long n = merge_part(p->parts[k], il, il->first + k, body);
        if (n < 0) {
            evbuffer_free(body);
            resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
            return;
        }
        total += n;
    }
    if (il->kind == LISTING_SCAN) {
        char cursor[24];
        int next = il->first + 1 < il->ls.nindex ? il->first + 1 : 0;
        snprintf(cursor, sizeof cursor, "%d", next);
        resp_add_array(out, 2);
        resp_add_bulk_str(out, cursor);
    }
    resp_add_array(out, total);
    evbuffer_add_buffer(out, body);
    evbuffer_free(body);
}
