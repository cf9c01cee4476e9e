#include "proxy/core/rewrite.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/core/request.h"
#include "keylayout/layout.h"
#include "keylayout/layoutload.h"
#include "lib/proto/command.h"
#include "lib/proto/reply.h"
#include "lib/proto/resp.h"

/* ---- the shared layout ---- */

/* ---- requests: legacy -> cluster ---- */

/* Room kept on the stack; larger requests take the heap, once each. */
#define REWRITE_KEYS_FIXED 16
#define REWRITE_SCRATCH 1024
#define REWRITE_ARGS_FIXED 32

/* What the keys of one request rewrite to: for each key argument keys[i],
 * its cluster name at scratch + off[i] (len[i]), or off[i] == SIZE_MAX when
 * it stays as it is. */
struct rewrite_plan {
    int fixed_keys[REWRITE_KEYS_FIXED], *keys;
    size_t fixed_off[REWRITE_KEYS_FIXED], *off;
    size_t fixed_len[REWRITE_KEYS_FIXED], *len;
    int nkeys;
    char fixed_scratch[REWRITE_SCRATCH], *scratch;
    size_t used;
};

static void plan_release(struct rewrite_plan *p)
{
    if (p->keys != p->fixed_keys)
        free(p->keys);
    if (p->off != p->fixed_off)
        free(p->off);
    if (p->len != p->fixed_len)
        free(p->len);
    if (p->scratch != p->fixed_scratch)
        free(p->scratch);
}

/* The key arguments of r into p. 0 (p->nkeys may be 0), -1 out of memory. */
static int plan_keys(struct rewrite_plan *p, struct request *r)
{
    p->keys = p->fixed_keys;
    p->off = p->fixed_off;
    p->len = p->fixed_len;
    p->scratch = p->fixed_scratch;
    p->used = 0;
    int n = request_keys(r, r->cmd, p->keys, REWRITE_KEYS_FIXED);
    p->nkeys = n < 0 ? 0 : n;   /* malformed: the node will say what is wrong */
    if (n <= REWRITE_KEYS_FIXED)
        return 0;
    p->keys = malloc(sizeof *p->keys * (size_t)n);
    p->off = malloc(sizeof *p->off * (size_t)n);
    p->len = malloc(sizeof *p->len * (size_t)n);
    if (!p->keys || !p->off || !p->len)
        return -1;
    request_keys(r, r->cmd, p->keys, n);
    return 0;
}

/* Room for one more name of at most need bytes in the scratch. */
static int plan_reserve(struct rewrite_plan *p, size_t need, size_t *cap)
{
    size_t have = p->scratch == p->fixed_scratch ? sizeof p->fixed_scratch : *cap;
    if (p->used + need <= have) {
        *cap = have;
        return 0;
    }
    size_t grown = (p->used + need) * 2;
    char *s = p->scratch == p->fixed_scratch ? malloc(grown) : realloc(p->scratch, grown);
    if (!s)
        return -1;
    if (p->scratch == p->fixed_scratch)
        memcpy(s, p->fixed_scratch, p->used);
    p->scratch = s;
    *cap = grown;
    return 0;
}

/* Rewrite each key into the scratch. Returns how many were rewritten, -1
 * out of memory. */
static int plan_rewrite(struct rewrite_plan *p, const struct request *r, const struct layout *l)
{
    int rewritten = 0;
    size_t cap = sizeof p->fixed_scratch;
    for (int i = 0; i < p->nkeys; i++) {
        size_t klen, outlen;
        const char *key = request_arg(r, p->keys[i], &klen);
        size_t need = layout_max_len(l, klen);
        p->off[i] = SIZE_MAX;
        if (plan_reserve(p, need, &cap) < 0)
            return -1;
        enum layout_result res = layout_to_cluster(l, key, klen, p->scratch + p->used,
                                                   cap - p->used, &outlen, NULL);
        if (res != LAYOUT_MAPPED)   /* PASS, KEEP; SHORT cannot be: need bounds it */
            continue;
        p->off[i] = p->used;
        p->len[i] = outlen;
        p->used += outlen;
        rewritten++;
    }
    return rewritten;
}

/* Rebuild r from its arguments with the planned names in place of its keys
 * (request_rebuild: inline storage for small commands). */
static int rebuild(struct request *r, const struct rewrite_plan *p)
{
    const char *fixed_argv[REWRITE_ARGS_FIXED], **argv = fixed_argv;
    size_t fixed_lens[REWRITE_ARGS_FIXED], *lens = fixed_lens;
    int rc = -1;
    if (r->argc > REWRITE_ARGS_FIXED) {
        argv = malloc(sizeof *argv * (size_t)r->argc);
        lens = malloc(sizeof *lens * (size_t)r->argc);
        if (!argv || !lens)
            goto out;
    }
    for (int i = 0; i < r->argc; i++)
        argv[i] = request_arg(r, i, &lens[i]);
    for (int i = 0; i < p->nkeys; i++)
        if (p->off[i] != SIZE_MAX) {
            argv[p->keys[i]] = p->scratch + p->off[i];
            lens[p->keys[i]] = p->len[i];
        }
    rc = request_rebuild(r, r->argc, argv, lens);
out:
    if (argv != fixed_argv)
        free(argv);
    if (lens != fixed_lens)
        free(lens);
    return rc;
}

int rewrite_request(struct request *r, const struct layout *l)
{
    struct rewrite_plan p;
    int rc = -1;
    if (plan_keys(&p, r) < 0)
        goto out;
    int n = plan_rewrite(&p, r, l);
    if (n < 0)
        goto out;
    rc = n == 0 ? 0 : rebuild(r, &p) < 0 ? -1 : 1;
out:
    plan_release(&p);
    return rc;
}

/* ---- key names back: cluster -> legacy ---- */

size_t rewrite_legacy_max(const struct layout *l, size_t len)
{
    return layout_max_len(l, len);
}

const char *rewrite_key_to_legacy(const struct layout *l, const char *key, size_t len,
                                  char *buf, size_t cap, size_t *outlen)
{
    enum layout_result res = layout_to_legacy(l, key, len, buf, cap, outlen, NULL);
    if (res == LAYOUT_MAPPED)
        return buf;
    if (res == LAYOUT_SHORT)
        return NULL;
    *outlen = len;
    return key;
}

int rewrite_key_add(struct evbuffer *out, const struct layout *l, const char *key, size_t len)
{
    char fixed[512], *buf = fixed;
    size_t cap = sizeof fixed, outlen;
    const char *name = rewrite_key_to_legacy(l, key, len, buf, cap, &outlen);
    if (!name) {
        cap = outlen;
        buf = malloc(cap);
        if (!buf)
            return -1;
        name = rewrite_key_to_legacy(l, key, len, buf, cap, &outlen);
    }
    int rc = name ? 0 : -1;
    if (name) {
        resp_add_bulk(out, name, outlen);
    }
    if (buf != fixed)
        free(buf);
    return rc;
}

bool rewrite_is_internal(const struct layout *l, const char *key, size_t len)
{
    static const char marker[] = ":{meta}:layout";
    const size_t mlen = sizeof marker - 1;
    if (len > mlen && memcmp(key + len - mlen, marker, mlen) == 0) {
        for (size_t i = 0; i < layout_prefix_count(l); i++) {
            size_t plen;
            const char *p = layout_prefix(l, i, &plen);
            if (plen + mlen == len && memcmp(key, p, plen) == 0)
                return true;
        }
    }
    return layout_is_index(l, key, len);
}

bool rewrite_is_shadowed(const struct layout *l, const char *key, size_t len)
{
    char buf[512];
    size_t outlen;
    enum layout_result res = layout_to_cluster(l, key, len, buf, sizeof buf, &outlen, NULL);
    return res == LAYOUT_MAPPED || res == LAYOUT_SHORT;
}

/* ---- replies ---- */

/* An aggregate header at buf (RESP2's array; RESP3's set, push and map as
 * well): its count of elements (a map's 2n; -1 for a null array), its
 * length in *hdr and, in *map, whether it is a map. -2 when buf does not
 * start with one. */
static long long array_header(const char *buf, size_t len, size_t *hdr, int *map)
{
    struct reply_head h;
    if (reply_header(buf, len, &h) < 0 || !memchr("*~>%", h.type, 4))
        return -2;
    *hdr = h.len;
    *map = h.type == '%';
    return *map && h.n > 0 ? 2 * h.n : h.n;
}

/* A bulk string reply at buf (len bytes, one whole reply): its payload. */
static int bulk_payload(const char *buf, size_t len, const char **p, size_t *plen)
{
    if (len < 4 || buf[0] != '$' || buf[1] == '-')
        return -1;
    const char *eol = memchr(buf, '\n', len);
    if (!eol)
        return -1;
    *p = eol + 1;
    *plen = (size_t)(buf + len - *p) - 2;
    return 0;
}

/* One element that is a key: mapped back; a null passes. */
static int add_key_element(struct evbuffer *out, const struct layout *l, const char *e,
                           size_t elen)
{
    const char *k;
    size_t klen;
    if (reply_is_null(e, elen)) {
        evbuffer_add(out, e, elen);
        return 0;
    }
    if (bulk_payload(e, elen, &k, &klen) < 0)
        return -1;
    return rewrite_key_add(out, l, k, klen) < 0 ? -2 : 0;
}

/* An array reply, each element as shape says (depth: arrays above it). */
static int add_array(struct evbuffer *out, const struct layout *l, const char *buf, size_t len,
                     enum rewrite_reply_shape shape, int depth);

static int add_element(struct evbuffer *out, const struct layout *l, const char *e, size_t elen,
                       enum rewrite_reply_shape shape, long long i, int depth, int map)
{
    if (shape == REWRITE_REPLY_EACH || (shape == REWRITE_REPLY_FIRST && i == 0))
        return add_key_element(out, l, e, elen);
    if (shape == REWRITE_REPLY_EACH_FIRST && depth == 0) {
        if (map)                    /* RESP3's XREAD: key => entries */
            return i % 2 == 0 ? add_key_element(out, l, e, elen)
                              : (evbuffer_add(out, e, elen), 0);
        return add_array(out, l, e, elen, REWRITE_REPLY_FIRST, depth + 1);
    }
    evbuffer_add(out, e, elen);
    return 0;
}

static int add_array(struct evbuffer *out, const struct layout *l, const char *buf, size_t len,
                     enum rewrite_reply_shape shape, int depth)
{
    size_t off;
    int map;
    if (reply_is_null(buf, len)) {        /* nothing to map */
        evbuffer_add(out, buf, len);
        return 0;
    }
    long long n = array_header(buf, len, &off, &map);
    if (n < 0)
        return -1;
    evbuffer_add(out, buf, off);    /* the same header: keys map one to one */
    for (long long i = 0; i < n; i++) {
        size_t elen = reply_length(buf + off, len - off);
        if (elen == 0)
            return -1;
        int rc = add_element(out, l, buf + off, elen, shape, i, depth, map);
        if (rc < 0)
            return rc;
        off += elen;
    }
    return off == len ? 0 : -1;
}

int rewrite_reply_keys(const struct layout *l, const char *reply, size_t len,
                       enum rewrite_reply_shape shape, struct evbuffer *out)
{
    if (reply_length(reply, len) != len)
        return -1;
    struct evbuffer *tmp = evbuffer_new();
    if (!tmp)
        return -2;
    int rc = shape == REWRITE_REPLY_KEY ? add_key_element(tmp, l, reply, len)
                                        : add_array(tmp, l, reply, len, shape, 0);
    if (rc == 0 && evbuffer_add_buffer(out, tmp) < 0)
        rc = -2;
    evbuffer_free(tmp);
    return rc;
}

/* ---- replies of requests ---- */

unsigned rewrite_reply_map_of(const struct command *cmd)
{
    if (cmd->proxy_facts & CMDP_REPLY_KEY_EACH_FIRST)
        return 1 + REWRITE_REPLY_EACH_FIRST;
    if (cmd->proxy_facts & CMDP_REPLY_KEY_FIRST)
        return 1 + REWRITE_REPLY_FIRST;
    return 0;
}
