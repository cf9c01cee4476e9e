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
const char *merge_part_bytes(struct request *part, size_t *len)
{
    struct evbuffer *b = request_reply_buffer(part);
    *len = evbuffer_get_length(b);
    return *len ? (const char *)evbuffer_pullup(b, -1) : "";
}

struct request *merge_first_error(struct request *p)
{
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (len == 0 || b[0] == '-')
            return p->parts[i];
    }
    return NULL;
}

static void merge_mget_run(struct request *p, struct evbuffer *out)
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
        long n = pe && pl ? reply_array_elements(b, len, pe, pl, part->npositions) : -1;
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
    resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
    return;
oom:
    free(elems);
    free(lens);
    resp_add_error(out, REPLY_ERR_OOM);
}

static void merge_sum_run(struct request *p, struct evbuffer *out)
{
    long long sum = 0;
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (len < 3 || b[0] != ':') {
            resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
            return;
        }
        sum += strtoll(b + 1, NULL, 10);
    }
    resp_add_integer(out, sum);
}

static void merge_concat_run(struct request *p, struct evbuffer *out)
{
    long total = 0;
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        long n = reply_array_elements(b, len, NULL, NULL, -1);
        if (n < 0) {
            resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
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
static void merge_random_run(struct request *p, struct evbuffer *out)
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


void merge_add_part_reply(struct evbuffer *out, struct request *part)
{
    struct evbuffer *b = request_reply_buffer(part);
    if (evbuffer_get_length(b) == 0)
        resp_add_error(out, REPLY_ERR_NO_REPLY);
    else
        evbuffer_add_buffer(out, b);
}

/* The first part that found it (a bulk), else the first part's answer. */
static void merge_found_run(struct request *p, struct evbuffer *out)
{
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (len > 0 && b[0] == '$' && !reply_is_null(b, len)) {
            evbuffer_add_buffer(out, request_reply_buffer(p->parts[i]));
            return;
        }
    }
    merge_add_part_reply(out, p->parts[0]);
}

/* Every part must succeed: the first part's reply. */
static void merge_first(struct request *p, struct evbuffer *out)
{
    evbuffer_add_buffer(out, request_reply_buffer(p->parts[0]));
}

static void merge_oom(struct request *p, struct evbuffer *out)
{
    (void)p;
    resp_add_error(out, REPLY_ERR_OOM);
}

const struct merge merge_mget = { merge_mget_run, 0 };
const struct merge merge_sum = { merge_sum_run, 0 };
const struct merge merge_all_ok = { merge_first, 0 };
const struct merge merge_concat = { merge_concat_run, 0 };
const struct merge merge_random = { merge_random_run, 0 };
const struct merge merge_found = { merge_found_run, 0 };
const struct merge merge_failed = { merge_oom, 0 };

void merge_replies(struct request *p)
{
    struct evbuffer *out = request_reply_buffer(p);
    const struct merge *m = p->merge ? p->merge : &merge_all_ok;
    struct request *err = m->sees_errors ? NULL : merge_first_error(p);
    if (err) {
        merge_add_part_reply(out, err);
        return;
    }
    m->run(p, out);
}
