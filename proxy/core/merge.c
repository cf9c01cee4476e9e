#include "proxy/core/merge.h"

#include <event2/buffer.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/core/request.h"
#include "proxy/core/scripts.h"
#include "proxy/core/worker.h"
#include "lib/proto/errors.h"
#include "lib/proto/reply.h"
#include "lib/proto/resp.h"

/* A part's whole reply as contiguous bytes. */
static merge_fn *family_merge[MERGE_FAILED + 1];
static merge_fn *after_merge;

void merge_register(enum merge_kind kind, merge_fn *fn)
{
    family_merge[kind] = fn;
}

void merge_register_after(merge_fn *fn)
{
    after_merge = fn;
}

const char *merge_part_bytes(struct request *part, size_t *len)
{
    struct evbuffer *b = request_reply_buffer(part);
    *len = evbuffer_get_length(b);
    return *len ? (const char *)evbuffer_pullup(b, -1) : "";
}

/* The first part whose reply is an error (or is missing), or NULL. */
static struct request *first_error(struct request *p)
{
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (len == 0 || b[0] == '-')
            return p->parts[i];
    }
    return NULL;
}

int merge_elements(const char *buf, size_t len, long n, const char **elems, size_t *lens)
{
    size_t off = 0;
    for (long i = 0; i < n; i++) {
        size_t el = reply_length(buf + off, len - off);
        if (el == 0)
            return -1;
        if (elems) {
            elems[i] = buf + off;
            lens[i] = el;
        }
        off += el;
    }
    return 0;
}

long merge_array_elements(const char *buf, size_t len, const char **elems,
                           size_t *lens, long max)
{
    if (len < 4 || buf[0] != '*')
        return -1;
    const char *eol = memchr(buf, '\n', len);
    if (!eol)
        return -1;
    long n = strtol(buf + 1, NULL, 10);
    if (n < 0 || (max >= 0 && n > max))
        return -1;
    size_t head = (size_t)(eol - buf) + 1;
    return merge_elements(buf + head, len - head, n, elems, lens) < 0 ? -1 : n;
}

static void merge_mget(struct request *p, struct evbuffer *out)
{
    int nkeys = p->argc - 1;
    const char **elems = calloc((size_t)nkeys, sizeof *elems);
    size_t *lens = calloc((size_t)nkeys, sizeof *lens);
    if (!elems || !lens)
        goto oom;
    for (int i = 0; i < p->nparts; i++) {
        struct request *part = p->parts[i];
        size_t len;
        const char *b = merge_part_bytes(part, &len);
        const char **pe = malloc(sizeof *pe * (size_t)part->npositions);
        size_t *pl = malloc(sizeof *pl * (size_t)part->npositions);
        long n = pe && pl ? merge_array_elements(b, len, pe, pl, part->npositions) : -1;
        if (n == part->npositions)
            for (int k = 0; k < n; k++) {
                elems[part->positions[k]] = pe[k];
                lens[part->positions[k]] = pl[k];
            }
        free(pe);
        free(pl);
        if (n != part->npositions)
            goto bad;
    }
    resp_add_array(out, nkeys);
    for (int i = 0; i < nkeys; i++)
        evbuffer_add(out, elems[i], lens[i]);
    free(elems);
    free(lens);
    return;
bad:
    free(elems);
    free(lens);
    resp_add_error(out, "ERR a cluster node sent a reply the proxy could not merge");
    return;
oom:
    free(elems);
    free(lens);
    resp_add_error(out, REPLY_ERR_OOM);
}

static void merge_sum(struct request *p, struct evbuffer *out)
{
    long long sum = 0;
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (len < 3 || b[0] != ':') {
            resp_add_error(out, "ERR a cluster node sent a reply the proxy could not merge");
            return;
        }
        sum += strtoll(b + 1, NULL, 10);
    }
    resp_add_integer(out, sum);
}

static void merge_concat(struct request *p, struct evbuffer *out)
{
    long total = 0;
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        long n = merge_array_elements(b, len, NULL, NULL, -1);
        if (n < 0) {
            resp_add_error(out, "ERR a cluster node sent a reply the proxy could not merge");
            return;
        }
        total += n;
    }
    resp_add_array(out, total);
    for (int i = 0; i < p->nparts; i++) {
        struct evbuffer *b = request_reply_buffer(p->parts[i]);
        struct evbuffer_ptr eol = evbuffer_search_eol(b, NULL, NULL, EVBUFFER_EOL_CRLF);
        evbuffer_drain(b, (size_t)eol.pos + 2);
        evbuffer_add_buffer(out, b);
    }
}

/* One key drawn evenly from the masters that had one: reservoir sampling,
 * so no array sized by the number of parts. */
static void merge_random(struct request *p, struct evbuffer *out)
{
    int pick = -1, n = 0;
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (len > 0 && b[0] == '$' && b[1] != '-' && rand() % ++n == 0)
            pick = i;
    }
    if (pick < 0) {
        resp_add_null(out, request_resp(p));
        return;
    }
    evbuffer_add_buffer(out, request_reply_buffer(p->parts[pick]));
}

static const char cannot_merge[] = "ERR a cluster node sent a reply the proxy could not merge";
static const char no_master[] = "CLUSTERDOWN the proxy knows no master to ask";

/* SCRIPT LOAD: every master answered the same SHA (the script's, or under
 * script-map its replacement's); the client gets its own body's SHA1, as
 * one server would answer it. */
static void merge_script_load(struct request *p, struct evbuffer *out)
{
    size_t first_len, len;
    if (p->nparts == 0) {
        resp_add_error(out, no_master);
        return;
    }
    const char *first = merge_part_bytes(p->parts[0], &first_len);
    for (int i = 1; i < p->nparts; i++) {
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (len != first_len || memcmp(b, first, len) != 0) {
            resp_add_error(out, "ERR the cluster's masters answered SCRIPT LOAD with different SHA1s");
            return;
        }
    }
    if (first_len == 0 || first[0] != '$' || p->argc < 3) {
        resp_add_error(out, cannot_merge);
        return;
    }
    char sha[SCRIPTS_SHA_HEX];
    size_t blen;
    const char *body = request_arg(p, 2, &blen);
    scripts_sha1_hex(body, blen, sha);
    resp_add_bulk_str(out, sha);
}

/* SCRIPT EXISTS: 1 at a position only where every master has the script. */
static void merge_and(struct request *p, struct evbuffer *out)
{
    size_t len;
    if (p->nparts == 0) {
        resp_add_error(out, no_master);
        return;
    }
    const char *b = merge_part_bytes(p->parts[0], &len);
    long n = merge_array_elements(b, len, NULL, NULL, -1);
    if (n < 0) {
        resp_add_error(out, cannot_merge);
        return;
    }
    size_t cap = n > 0 ? (size_t)n : 1;
    char *all = malloc(cap);
    const char **elems = malloc(sizeof *elems * cap);
    size_t *lens = malloc(sizeof *lens * cap);
    if (!all || !elems || !lens) {
        free(all);
        free(elems);
        free(lens);
        resp_add_error(out, REPLY_ERR_OOM);
        return;
    }
    memset(all, 1, cap);
    for (int i = 0; i < p->nparts; i++) {
        b = merge_part_bytes(p->parts[i], &len);
        if (merge_array_elements(b, len, elems, lens, n) != n)
            goto bad;
        for (long k = 0; k < n; k++) {
            if (lens[k] < 4 || elems[k][0] != ':')
                goto bad;
            if (elems[k][1] == '0')
                all[k] = 0;
        }
    }
    resp_add_array(out, n);
    for (long k = 0; k < n; k++)
        resp_add_integer(out, all[k]);
    free(all);
    free(elems);
    free(lens);
    return;
bad:
    free(all);
    free(elems);
    free(lens);
    resp_add_error(out, cannot_merge);
}

/* SCRIPT KILL, FUNCTION KILL: a script runs on at most the masters that
 * say OK; when none does, the first error other than NOTBUSY, else NOTBUSY. */
static int part_is_notbusy(struct request *part)
{
    size_t len;
    const char *b = merge_part_bytes(part, &len);
    return len >= 8 && memcmp(b, "-NOTBUSY", 8) == 0;
}

static void merge_any_ok(struct request *p, struct evbuffer *out)
{
    struct request *pick = NULL;
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (len > 0 && b[0] == '+') {
            resp_add_simple(out, "OK");
            return;
        }
        if (!pick || (part_is_notbusy(pick) && !part_is_notbusy(p->parts[i])))
            pick = p->parts[i];
    }
    if (!pick || evbuffer_get_length(request_reply_buffer(pick)) == 0)
        resp_add_error(out, "ERR a cluster node sent no reply");
    else
        evbuffer_add_buffer(out, request_reply_buffer(pick));
}

struct elem {
    const char *p;
    size_t len;
};

static int elem_cmp(const void *a, const void *b)
{
    const struct elem *x = a, *y = b;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return memcmp(x->p, y->p, x->len);
}

/* Every part's array elements, each distinct one once (sorted: the order of
 * a node's answer is its dict's, which no client can rely on). */
static void merge_union(struct request *p, struct evbuffer *out)
{
    long total = 0, n;
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if ((n = merge_array_elements(b, len, NULL, NULL, -1)) < 0) {
            resp_add_error(out, cannot_merge);
            return;
        }
        total += n;
    }
    struct elem *all = malloc(sizeof *all * (size_t)(total ? total : 1));
    const char **pe = malloc(sizeof *pe * (size_t)(total ? total : 1));
    size_t *pl = malloc(sizeof *pl * (size_t)(total ? total : 1));
    long k = 0, uniq = 0;
    if (!all || !pe || !pl) {
        resp_add_error(out, REPLY_ERR_OOM);
        goto out;
    }
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        n = merge_array_elements(b, len, pe, pl, -1);
        for (long j = 0; j < n; j++, k++) {
            all[k].p = pe[j];
            all[k].len = pl[j];
        }
    }
    qsort(all, (size_t)k, sizeof *all, elem_cmp);
    for (long j = 0; j < k; j++)
        if (j == 0 || elem_cmp(&all[j], &all[j - 1]) != 0)
            all[uniq++] = all[j];
    resp_add_array(out, uniq);
    for (long j = 0; j < uniq; j++)
        evbuffer_add(out, all[j].p, all[j].len);
out:
    free(all);
    free(pe);
    free(pl);
}

/* [name, count, name, count, ...] from every part, in the same order: the
 * first part's names with every part's counts added. */
static void merge_numsub(struct request *p, struct evbuffer *out)
{
    size_t len0;
    const char *b0 = merge_part_bytes(p->parts[0], &len0);
    long n = merge_array_elements(b0, len0, NULL, NULL, -1);
    const char **pe = n > 0 ? malloc(sizeof *pe * (size_t)n) : NULL;
    size_t *pl = n > 0 ? malloc(sizeof *pl * (size_t)n) : NULL;
    long long *sums = n > 0 ? calloc((size_t)n, sizeof *sums) : NULL;
    if (n < 0 || n % 2) {
        resp_add_error(out, cannot_merge);
        return;
    }
    if (n > 0 && (!pe || !pl || !sums)) {
        resp_add_error(out, REPLY_ERR_OOM);
        goto out;
    }
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (merge_array_elements(b, len, pe, pl, n) != n) {
            resp_add_error(out, cannot_merge);
            goto out;
        }
        for (long j = 1; j < n; j += 2) {
            if (pe[j][0] != ':') {
                resp_add_error(out, cannot_merge);
                goto out;
            }
            sums[j] += strtoll(pe[j] + 1, NULL, 10);
        }
    }
    merge_array_elements(b0, len0, pe, pl, n);
    resp_add_array(out, n);
    for (long j = 0; j < n; j += 2) {
        evbuffer_add(out, pe[j], pl[j]);
        resp_add_integer(out, sums[j + 1]);
    }
out:
    free(pe);
    free(pl);
    free(sums);
}

/* err's reply (first_error) is the answer. */
static void add_part_error(struct evbuffer *out, struct request *err)
{
    struct evbuffer *b = request_reply_buffer(err);
    if (evbuffer_get_length(b) == 0)
        resp_add_error(out, "ERR a cluster node sent no reply");
    else
        evbuffer_add_buffer(out, b);
}

/* CLIENT UNBLOCK on the nodes a client may be blocked on: one of them
 * unblocked it, or none could (an error is worth telling only then). */
static void merge_any_one(struct request *p, struct evbuffer *out)
{
    struct request *err = first_error(p);
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (len >= 4 && memcmp(b, ":1\r\n", 4) == 0) {
            resp_add_integer(out, 1);
            return;
        }
    }
    if (err)
        add_part_error(out, err);
    else
        resp_add_integer(out, 0);
}

/* The first part that found it (a bulk), else the first part's answer. */
static void merge_found(struct request *p, struct evbuffer *out)
{
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (len > 0 && b[0] == '$' && !reply_is_null(b, len)) {
            evbuffer_add_buffer(out, request_reply_buffer(p->parts[i]));
            return;
        }
    }
    add_part_error(out, p->parts[0]);
}

/* The kinds merge.c merges itself. */
static void merge_own(struct request *p, struct evbuffer *out)
{
    switch (p->merge) {
    case MERGE_FAILED: resp_add_error(out, REPLY_ERR_OOM); break;
    case MERGE_MGET:   merge_mget(p, out); break;
    case MERGE_SUM:    merge_sum(p, out); break;
    case MERGE_CONCAT: merge_concat(p, out); break;
    case MERGE_RANDOM: merge_random(p, out); break;
    case MERGE_FOUND:  merge_found(p, out); break;
    case MERGE_SCRIPT_LOAD: merge_script_load(p, out); break;
    case MERGE_AND:    merge_and(p, out); break;
    case MERGE_UNION:  merge_union(p, out); break;
    case MERGE_NUMSUB: merge_numsub(p, out); break;
    case MERGE_ALL_OK:
    case MERGE_NONE:
    default:
        evbuffer_add_buffer(out, request_reply_buffer(p->parts[0]));
        break;
    }
}

void merge_replies(struct request *p)
{
    struct evbuffer *out = request_reply_buffer(p);
    if (p->merge == MERGE_ANY_OK) {
        merge_any_ok(p, out);
        return;
    }
    if (p->merge == MERGE_ANY_ONE) {
        merge_any_one(p, out);
        return;
    }
    struct request *err = first_error(p);
    if (err) {
        add_part_error(out, err);
        return;
    }
    if (family_merge[p->merge])
        family_merge[p->merge](p, out);
    else
        merge_own(p, out);
    if (after_merge)
        after_merge(p, out);        /* key names back to legacy ones (listing.h) */
}
