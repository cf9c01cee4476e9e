#include "proxy/families/listing.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/core/merge.h"
#include "proxy/core/request.h"
#include "proxy/core/rewrite.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "proxy/families/index.h"
#include "keylayout/glob.h"
#include "keylayout/layout.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"
#include "lib/proto/reply.h"
#include "lib/proto/resp.h"

#define PATTERN_FIXED 512

/* ---- the pattern sent to the masters ---- */

/* The bytes of pattern before its first special one (* ? [ \\), which
 * every matching name starts with as they are. */
static size_t literal_len(const char *pattern, size_t plen)
{
    size_t i = 0;
    while (i < plen && !memchr("*?[\\", pattern[i], 4))
        i++;
    return i;
}

/* Append s with the glob's special bytes escaped. */
static size_t escape_into(char *out, size_t at, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '*' || s[i] == '?' || s[i] == '[' || s[i] == ']' || s[i] == '\\')
            out[at++] = '\\';
        out[at++] = s[i];
    }
    return at;
}

const char *listing_node_pattern(const struct layout *l, const char *pat, size_t len,
                                  char *buf, size_t cap, size_t *outlen)
{
    size_t lit = literal_len(pat, len);
    bool could = false;
    for (size_t i = 0; i < layout_prefix_count(l); i++) {
        size_t plen;
        const char *p = layout_prefix(l, i, &plen);
        if (lit > plen && memcmp(pat, p, plen) == 0 && pat[plen] == ':') {
            /* only names of prefix p (in either layout) can match */
            if (2 * plen + 2 > cap)
                return NULL;
            size_t n = escape_into(buf, 0, p, plen);
            buf[n++] = ':';
            buf[n++] = '*';
            *outlen = n;
            return buf;
        }
        if (lit <= plen && memcmp(pat, p, lit) == 0)
            could = true;     /* the head is the start of "p:" */
    }
    if (!could) {             /* no name of any prefix matches: as it is */
        *outlen = len;
        return pat;
    }
    if (lit + 1 > cap)
        return NULL;
    memcpy(buf, pat, lit);    /* the head has no special byte */
    buf[lit] = '*';
    *outlen = lit + 1;
    return buf;
}

/* Room enough for listing_node_pattern of a pattern of len bytes. */
static size_t node_pattern_cap(const struct layout *l, size_t len)
{
    size_t most = 0;
    for (size_t i = 0; i < layout_prefix_count(l); i++) {
        size_t plen;
        layout_prefix(l, i, &plen);
        if (plen > most)
            most = plen;
    }
    return len + 2 * most + 4;
}

/* The pattern for the masters in buf (fixed, else malloc'd into *heap). */
static const char *node_pattern(const struct layout *l, const char *pat, size_t len,
                                char *fixed, size_t fixed_cap, char **heap, size_t *outlen)
{
    size_t cap = node_pattern_cap(l, len);
    char *buf = fixed;
    *heap = NULL;
    if (cap > fixed_cap && !(buf = *heap = malloc(cap)))
        return NULL;
    return listing_node_pattern(l, pat, len, buf, cap, outlen);
}

/* ---- the one place an index-backed listing plugs in ---- */

/*
 * Answer r (KEYS or SCAN, with a layout) from the bucket indexes of the one
 * indexed family its pattern can match, and return 1; or return 0 to have
 * it listed over every master (index.h).
 */
static int listing_from_index(struct request *r, const struct layout *l)
{
    return strcmp(r->cmd->name, "keys") == 0 ? index_keys(r, l) : index_scan(r, l);
}

/* ---- KEYS and SCAN ---- */

/* A listing whose pattern fixes the names' hash tag (router_key_slot):
 * their slot's master answers it, as any one-slot command. 1 when sent. */
static int listing_of_one_slot(struct request *r)
{
    int slot = router_key_slot(r);
    if (slot < 0)
        return 0;
    r->slot = slot;
    router_send(r);
    return 1;
}

void listing_keys(struct request *r)
{
    const struct layout *l = worker_layout(r->worker);
    if (listing_of_one_slot(r))
        return;
    size_t len, sendlen;
    const char *pattern = request_arg(r, 1, &len);
    char fixed[PATTERN_FIXED], *heap = NULL;
    const char *send = pattern;
    sendlen = len;
    if (l) {
        if (listing_from_index(r, l))
            return;
        send = node_pattern(l, pattern, len, fixed, sizeof fixed, &heap, &sendlen);
        if (!send) {
            request_fail(r, REPLY_ERR_OOM);
            return;
        }
    }
    const char *argv[2] = { "KEYS", send };
    size_t lens[2] = { 4, sendlen };
    router_fanout(r, MERGE_CONCAT, 2, argv, lens);
    free(heap);
}

void listing_scan(struct request *r)
{
    const struct layout *l = worker_layout(r->worker);
    if (listing_of_one_slot(r))
        return;
    int match = l ? router_listing_pattern(r) : -1;
    if (l && listing_from_index(r, l))
        return;
    if (match < 0) {
        router_scan(r, -1, NULL, 0);
        return;
    }
    size_t len, sendlen;
    const char *pattern = request_arg(r, match, &len);
    char fixed[PATTERN_FIXED], *heap = NULL;
    const char *send = node_pattern(l, pattern, len, fixed, sizeof fixed, &heap, &sendlen);
    if (!send) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    router_scan(r, match, send, sendlen);
    free(heap);
}

/* ---- names back ---- */

/* A bulk string at buf[*off..len): its payload; *off moves past it. */
static int next_bulk(const char *buf, size_t len, size_t *off, const char **p, size_t *plen)
{
    size_t at = *off;
    if (at >= len || buf[at] != '$')
        return -1;
    const char *eol = memchr(buf + at, '\n', len - at);
    if (!eol)
        return -1;
    long long n = strtoll(buf + at + 1, NULL, 10);
    size_t start = (size_t)(eol - buf) + 1;
    if (n < 0 || (size_t)n > len - start || len - start - (size_t)n < 2)
        return -1;
    *p = buf + start;
    *plen = (size_t)n;
    *off = start + (size_t)n + 2;
    return 0;
}

/* An array header at buf[*off..len): its count; *off moves past it. */
static long long next_array(const char *buf, size_t len, size_t *off)
{
    size_t at = *off;
    if (at >= len || buf[at] != '*')
        return -1;
    const char *eol = memchr(buf + at, '\n', len - at);
    if (!eol)
        return -1;
    *off = (size_t)(eol - buf) + 1;
    return strtoll(buf + at + 1, NULL, 10);
}

/* A name the cluster holds that no listing shows: the layout's own keys,
 * and legacy-layout names no client can reach (rewrite.h). */
static bool unlisted(const struct layout *l, const char *key, size_t len)
{
    return rewrite_is_internal(l, key, len) || rewrite_is_shadowed(l, key, len);
}

/* The legacy name of key into *name (buf or key itself); 0, -1 no memory. */
struct legacy_name {
    char fixed[512], *buf;
    size_t cap;
};

static const char *legacy_of(const struct layout *l, struct legacy_name *ln, const char *key,
                             size_t len, size_t *outlen)
{
    const char *name = rewrite_key_to_legacy(l, key, len, ln->buf, ln->cap, outlen);
    if (name)
        return name;
    char *grown = ln->buf == ln->fixed ? malloc(*outlen) : realloc(ln->buf, *outlen);
    if (!grown)
        return NULL;
    ln->buf = grown;
    ln->cap = *outlen;
    return rewrite_key_to_legacy(l, key, len, ln->buf, ln->cap, outlen);
}

/* n keys at buf[*off..len) into out, mapped back, the layout's own keys
 * left out, filtered by pattern (NULL: none). Returns how many were added,
 * -1 on a malformed reply or no memory. */
static long long add_listed(const struct layout *l, const char *buf, size_t len, size_t *off,
                            long long n, const char *pattern, size_t plen, struct evbuffer *out)
{
    struct legacy_name ln;
    ln.buf = ln.fixed;
    ln.cap = sizeof ln.fixed;
    long long added = 0;
    for (long long i = 0; i < n && added >= 0; i++) {
        const char *key, *name;
        size_t klen, nlen;
        if (next_bulk(buf, len, off, &key, &klen) < 0 ||
            !(name = legacy_of(l, &ln, key, klen, &nlen))) {
            added = -1;
            break;
        }
        if (name == key && unlisted(l, key, klen))
            continue;
        if (pattern && !glob_match(pattern, plen, name, nlen))
            continue;
        resp_add_bulk(out, name, nlen);
        added++;
    }
    if (ln.buf != ln.fixed)
        free(ln.buf);
    return added;
}

/* The client's pattern of a KEYS or SCAN parent, or NULL for none; "*"
 * is none, as Redis lists everything for it without matching. */
static const char *client_pattern(const struct request *p, size_t *len)
{
    int match = router_listing_pattern(p);
    const char *pattern = match < 0 ? NULL : request_arg(p, match, len);
    return pattern && *len == 1 && pattern[0] == '*' ? NULL : pattern;
}

/* KEYS: *n then n names. SCAN: *2, the cursor, *n then n names. */
static int remap_listing(const struct request *p, const struct layout *l, const char *buf,
                         size_t len, struct evbuffer *out)
{
    size_t off = 0, plen = 0;
    const char *pattern = client_pattern(p, &plen);
    bool scan = p->merge == MERGE_SCAN;
    const char *cursor = NULL;
    size_t clen = 0;
    if (scan && (next_array(buf, len, &off) != 2 || next_bulk(buf, len, &off, &cursor, &clen) < 0))
        return -1;
    long long n = next_array(buf, len, &off);
    if (n < 0)
        return -1;
    struct evbuffer *names = evbuffer_new();
    if (!names)
        return -1;
    long long added = add_listed(l, buf, len, &off, n, pattern, plen, names);
    if (added >= 0) {
        if (scan) {
            resp_add_array(out, 2);
            resp_add_bulk(out, cursor, clen);
        }
        resp_add_array(out, added);
        evbuffer_add_buffer(out, names);
    }
    evbuffer_free(names);
    return added >= 0 ? 0 : -1;
}

/* A part's reply that is a key no listing hides, or NULL. */
static const char *visible_key(const struct layout *l, struct request *part, size_t *klen)
{
    struct evbuffer *b = request_reply_buffer(part);
    size_t len = evbuffer_get_length(b), off = 0;
    const char *buf = len ? (const char *)evbuffer_pullup(b, -1) : NULL, *key;
    if (!buf || next_bulk(buf, len, &off, &key, klen) < 0 || unlisted(l, key, *klen))
        return NULL;
    return key;
}

/* RANDOMKEY: the merged pick, or when it is the layout's own key (or a
 * shadowed legacy name) another master's, mapped back. When every master
 * picked such a key, a nil: never a name no single server would hold (a
 * bot that deletes what RANDOMKEY gives must not reach an index or the
 * marker). */
static int remap_random(struct request *p, const struct layout *l, const char *buf, size_t len,
                        struct evbuffer *out)
{
    size_t off = 0, klen;
    const char *key;
    if (reply_is_null(buf, len)) {
        evbuffer_add(out, buf, len);
        return 0;
    }
    if (next_bulk(buf, len, &off, &key, &klen) < 0)
        return -1;
    if (unlisted(l, key, klen)) {
        key = NULL;
        for (int i = 0; i < p->nparts && !key; i++)
            key = visible_key(l, p->parts[i], &klen);
        if (!key) {
            resp_add_null(out, request_resp(p));
            return 0;
        }
    }
    return rewrite_key_add(out, l, key, klen);
}

void listing_after_merge(struct request *p, struct evbuffer *out)
{
    const struct layout *l = worker_layout(p->worker);
    if (!l || !p->cmd)
        return;
    const char *name = p->cmd->name;
    bool keys = p->merge == MERGE_CONCAT && strcmp(name, "keys") == 0;
    bool scan = p->merge == MERGE_SCAN && strcmp(name, "scan") == 0;
    bool random = p->merge == MERGE_RANDOM && strcmp(name, "randomkey") == 0;
    size_t len = evbuffer_get_length(out);
    if ((!keys && !scan && !random) || len == 0)
        return;
    const char *buf = (const char *)evbuffer_pullup(out, -1);
    if (buf[0] == '-')          /* an error: as it is */
        return;
    struct evbuffer *mapped = evbuffer_new();
    int rc = !mapped ? -1 : random ? remap_random(p, l, buf, len, mapped)
                                   : remap_listing(p, l, buf, len, mapped);
    evbuffer_drain(out, len);
    if (rc < 0)
        resp_add_error(out, "ERR a cluster node sent a reply the proxy could not map back "
                            "to legacy key names");
    else
        evbuffer_add_buffer(out, mapped);
    if (mapped)
        evbuffer_free(mapped);
}

static const struct route_entry listing_routes[] = {
    ROUTE_ASKING("scan", listing_scan), ROUTE_ASKING("keys", listing_keys),
};

void listing_register(void)
{
    route_register(listing_routes, (int)(sizeof listing_routes / sizeof listing_routes[0]));
    merge_register_after(listing_after_merge);
}
