#include "proxy/families/listing.h"

#include <errno.h>
#include <event2/buffer.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/core/merge.h"
#include "proxy/core/request.h"
#include "proxy/core/rewrite.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "proxy/families/index.h"
#include "proxy/families/txclass.h"
#include "keylayout/glob.h"
#include "keylayout/layout.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"
#include "lib/proto/reply.h"
#include "lib/proto/resp.h"

/* KEYS's, SCAN's and RANDOMKEY's: the core's merge (SCAN's own), then the
 * names mapped back (remap_names). */
static merge_fn merge_keys_run, merge_scan_run, merge_randomkey_run;
static const struct merge merge_keys = { merge_keys_run, 0 };
static const struct merge merge_scan = { merge_scan_run, 0 };
static const struct merge merge_randomkey = { merge_randomkey_run, 0 };

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
        if (index_keys(r, l))   /* answered from the bucket indexes (index.h) */
            return;
        send = node_pattern(l, pattern, len, fixed, sizeof fixed, &heap, &sendlen);
        if (!send) {
            request_fail(r, REPLY_ERR_OOM);
            return;
        }
    }
    const char *argv[2] = { "KEYS", send };
    size_t lens[2] = { 4, sendlen };
    router_fanout(r, &merge_keys, 2, argv, lens);
    free(heap);
}

/*
 * SCAN across the cluster: the proxy's cursor is (master's cursor) * 256 +
 * (master index), so 0 starts at the first master, and a master's scan
 * that ends moves on to the next one; the last one's end is 0. Each call
 * asks one master, with the client's own options (MATCH, COUNT, TYPE).
 */
#define SCAN_NODES_MAX 256

/* One SCAN call's walk over the masters (the parent's state). */
struct scan_walk {
    int node;                       /* the master this step asked */
    long long count;                /* its COUNT (10 unless given) */
    long long nkeys;                /* names of earlier masters in this call, */
    struct evbuffer *keys;          /* ... as their RESP elements */
};

static void scan_walk_freed(struct request *r, void *state)
{
    struct scan_walk *sw = state;
    (void)r;
    if (sw->keys)
        evbuffer_free(sw->keys);
    free(sw);
}

static const struct request_family scan_family = { scan_walk_freed };

/* "*2\r\n$N\r\nCURSOR\r\n*M\r\n" at the start of a SCAN reply b[0..len):
 * whether the cursor is "0", M in *n, the offset of the first name in *at.
 * -1 when b is not such a reply. */
static int scan_reply_head(const char *b, size_t len, int *done, long long *n, size_t *at)
{
    struct reply_head h;
    if (reply_header(b, len, &h) < 0 || h.type != '*' || h.n != 2)
        return -1;
    size_t off = h.len;
    if (reply_header(b + off, len - off, &h) < 0 || h.type != '$' || h.n < 0 ||
        off + h.len + (size_t)h.n + 2 > len)
        return -1;
    off += h.len;
    *done = h.n == 1 && b[off] == '0';
    off += (size_t)h.n + 2;
    if (reply_header(b + off, len - off, &h) < 0 || h.type != '*' || h.n < 0)
        return -1;
    *n = h.n;
    *at = off + h.len;
    return 0;
}

/* One master's SCAN step answered. When that master is done (cursor 0)
 * and the call has fewer names than its COUNT, the names are kept and the
 * same call goes on from the start of the next master (1: taken); else the
 * reply goes to the merge (0). So a small keyspace is listed in one call
 * ending in cursor 0, as one server lists it. */
static int scan_step_reply(struct request *part, struct node_conn *from,
                           const struct reply_view *v, const struct reply_scanner *s)
{
    struct request *p = part->parent;
    struct scan_walk *sw = p ? request_family_state(p, &scan_family) : NULL;
    size_t len = v->len;
    const char *b = reply_view_head(v, len);
    int done;
    long long n;
    size_t at;
    (void)from;
    if (s->type != '*' || !sw || !b || scan_reply_head(b, len, &done, &n, &at) < 0 || !done ||
        sw->node + 1 >= p->worker->topo->nnodes || sw->nkeys + n >= sw->count)
        return 0;
    size_t *lens;
    const char **argv = request_argv_new(part, &lens);
    if (!argv || (!sw->keys && !(sw->keys = evbuffer_new()))) {
        free(argv);
        return 0;
    }
    argv[1] = "0";
    lens[1] = 1;
    int rc = request_rebuild(part, part->argc, argv, lens);
    free(argv);
    if (rc < 0 || evbuffer_add(sw->keys, b + at, len - at) < 0)
        return 0;
    sw->nkeys += n;
    reply_view_drop(v);
    part->fixed_node = ++sw->node;
    router_send(part);
    return 1;
}

static const struct request_hooks scan_step_hooks = { .reply = scan_step_reply };

/* SCAN's COUNT (its last), 10 when not given or not a count. */
static long long scan_count_of(const struct request *r)
{
    long long count = 10, v;
    for (int i = 2; i + 1 < r->argc; i += 2)
        if (request_arg_is(r, i, "count") && request_arg_ll(r, i + 1, &v) == 0 && v > 0)
            count = v;
    return count;
}

/* SCAN cursor [MATCH ..] [COUNT ..] [TYPE ..] across every master, one
 * master per call, with a cursor that encodes which master and where.
 * match_arg >= 0: argument match_arg (a MATCH pattern) is sent as
 * match[0..match_len) instead (a key layout's wider pattern). */
static void scan_masters(struct request *r, int match_arg, const char *match, size_t match_len)
{
    struct worker *w = r->worker;
    size_t len;
    const char *arg = request_arg(r, 1, &len);
    char buf[32], *end;
    /* read as Redis reads it: strtoull, no leading blank, "" is 0 */
    if (len >= sizeof buf || (len > 0 && (arg[0] == ' ' || arg[0] == '\t'))) {
        request_fail(r, "ERR invalid cursor");
        return;
    }
    memcpy(buf, arg, len);
    buf[len] = '\0';
    errno = 0;
    unsigned long long cursor = strtoull(buf, &end, 10);
    int node = (int)(cursor % SCAN_NODES_MAX);
    if (*end || errno || node >= w->topo->nnodes || w->topo->nnodes > SCAN_NODES_MAX) {
        request_fail(r, w->topo->nnodes > SCAN_NODES_MAX
                            ? "ERR SCAN through the proxy supports at most 256 masters"
                            : "ERR invalid cursor");
        return;
    }
    char node_cursor[24];
    snprintf(node_cursor, sizeof node_cursor, "%llu", cursor / SCAN_NODES_MAX);
    size_t *lens;
    const char **argv = request_argv_new(r, &lens);
    struct scan_walk *sw = argv ? calloc(1, sizeof *sw) : NULL;
    if (!sw) {
        free(argv);
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    *sw = (struct scan_walk){ .node = node, .count = scan_count_of(r) };
    request_family_set(r, &scan_family, sw);
    argv[1] = node_cursor;
    lens[1] = strlen(node_cursor);
    if (match_arg > 1 && match_arg < r->argc) {
        argv[match_arg] = match;
        lens[match_arg] = match_len;
    }
    if (router_parts_open(r, &merge_scan, 1) == 0) {
        struct request *part = router_part_add(r, node, r->argc, argv, lens);
        if (part) {             /* else the merge answers out of memory */
            part->hooks = &scan_step_hooks;
            router_send(part);
        }
        request_parts_sent(r);
    }
    free(argv);
}

/* The master's [cursor, keys] with the proxy's cursor in its place. */
static void scan_cursor_merge(struct request *p, struct evbuffer *out)
{
    const char *elems[2];
    size_t lens[2], len;
    const char *b = merge_part_bytes(p->parts[0], &len);
    const struct scan_walk *sw = request_family_state(p, &scan_family);
    if (!sw || reply_array_elements(b, len, elems, lens, 2) != 2 || elems[0][0] != '$') {
        resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
        return;
    }
    const char *digits = memchr(elems[0], '\n', lens[0]);
    unsigned long long node_cursor = digits ? strtoull(digits + 1, NULL, 10) : 0;
    int nnodes = p->worker->topo->nnodes;
    unsigned long long next;
    if (node_cursor > ULLONG_MAX / SCAN_NODES_MAX) {
        resp_add_error(out, "ERR a master's SCAN cursor is too large for the proxy's cursor");
        return;
    }
    if (node_cursor != 0)
        next = node_cursor * SCAN_NODES_MAX + (unsigned long long)sw->node;
    else if (sw->node + 1 < nnodes)
        next = (unsigned long long)sw->node + 1;     /* the next master, from its start */
    else
        next = 0;                                         /* every master done */
    char cursor[24];
    snprintf(cursor, sizeof cursor, "%llu", next);
    struct reply_head h;
    int joined = sw->keys && reply_header(elems[1], lens[1], &h) == 0 && h.type == '*';
    resp_add_array(out, 2);
    resp_add_bulk_str(out, cursor);
    if (!joined) {
        evbuffer_add(out, elems[1], lens[1]);
        return;
    }
    /* the names of the masters this call went through before (scan_masters) */
    resp_add_array(out, sw->nkeys + (h.n > 0 ? h.n : 0));
    evbuffer_add_buffer(out, sw->keys);
    if (h.len < lens[1])
        evbuffer_add(out, elems[1] + h.len, lens[1] - h.len);
}

void listing_scan(struct request *r)
{
    const struct layout *l = worker_layout(r->worker);
    if (listing_of_one_slot(r))
        return;
    int match = l ? router_listing_pattern(r) : -1;
    if (l && index_scan(r, l))  /* answered from the bucket indexes (index.h) */
        return;
    if (match < 0) {
        scan_masters(r, -1, NULL, 0);
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
    scan_masters(r, match, send, sendlen);
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
                         size_t len, bool scan, struct evbuffer *out)
{
    size_t off = 0, plen = 0;
    const char *pattern = client_pattern(p, &plen);
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

enum listed { LISTED_KEYS, LISTED_SCAN, LISTED_RANDOM };

/* With a key layout, out (the merged reply of a KEYS, SCAN or RANDOMKEY
 * parent) replaced by the same reply with names mapped back, the layout's
 * own keys left out and the client's pattern applied. */
static void remap_names(struct request *p, struct evbuffer *out, enum listed what)
{
    const struct layout *l = worker_layout(p->worker);
    size_t len = evbuffer_get_length(out);
    if (!l || len == 0)
        return;
    const char *buf = (const char *)evbuffer_pullup(out, -1);
    if (buf[0] == '-')          /* an error: as it is */
        return;
    struct evbuffer *mapped = evbuffer_new();
    int rc = !mapped ? -1 : what == LISTED_RANDOM ? remap_random(p, l, buf, len, mapped)
             : remap_listing(p, l, buf, len, what == LISTED_SCAN, mapped);
    evbuffer_drain(out, len);
    if (rc < 0)
        resp_add_error(out, "ERR a cluster node sent a reply the proxy could not map back "
                            "to legacy key names");
    else
        evbuffer_add_buffer(out, mapped);
    if (mapped)
        evbuffer_free(mapped);
}

static void merge_keys_run(struct request *p, struct evbuffer *out)
{
    merge_concat.run(p, out);
    remap_names(p, out, LISTED_KEYS);
}

static void merge_scan_run(struct request *p, struct evbuffer *out)
{
    scan_cursor_merge(p, out);
    remap_names(p, out, LISTED_SCAN);
}

static void merge_randomkey_run(struct request *p, struct evbuffer *out)
{
    merge_random.run(p, out);
    remap_names(p, out, LISTED_RANDOM);
}

/* RANDOMKEY: every master's pick, one of them. */
static void listing_randomkey(struct request *r)
{
    const char *argv[1] = { "RANDOMKEY" };
    size_t lens[1] = { 9 };
    router_fanout(r, &merge_randomkey, 1, argv, lens);
}

static const struct route_entry listing_routes[] = {
    ROUTE_ASKING("scan", listing_scan), ROUTE_ASKING("keys", listing_keys),
    ROUTE_ASKING("randomkey", listing_randomkey),
};

void listing_register(void)
{
    route_register(listing_routes, (int)(sizeof listing_routes / sizeof listing_routes[0]));
}
