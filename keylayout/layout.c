/*
 * layout: names mapped by a loaded layout. See layout.h.
 */
#include "keylayout/layout.h"

#include <string.h>

#include "keylayout/escape.h"
#include "keylayout/layoutdef.h"
#include "keylayout/out.h"
#include "lib/base/hash.h"

/* ---- buckets ---- */

int layout_bucket(const char *id, size_t len)
{
    return (int)(hash_fnv32(id, len) % RULES_BUCKETS);
}

/* The bucket of a value, raw or (already checked) encoded. */
static int value_bucket(const struct layout_value *v)
{
    if (!v->encoded)
        return layout_bucket(v->ptr, v->len);
    uint32_t h = HASH_FNV32_INIT;
    for (size_t i = 0; i < v->len; i++) {
        unsigned char c = (unsigned char)v->ptr[i];
        if (c == '%') {
            c = (unsigned char)escape_byte_at(v->ptr, v->len, i);
            i += 2;
        }
        h = hash_fnv32_byte(h, c);
    }
    return (int)(h % RULES_BUCKETS);
}

/* ---- building names ---- */

static void out_value_encoded(struct out *o, const struct layout_value *v)
{
    if (v->encoded)
        out_put(o, v->ptr, v->len);
    else
        escape_put(o, v->ptr, v->len);
}

static void out_value_raw(struct out *o, const struct layout_value *v)
{
    if (v->encoded)
        escape_take(o, v->ptr, v->len);
    else
        out_put(o, v->ptr, v->len);
}

static void out_prefix(struct out *o, const struct layout *l, const struct layout_match *m)
{
    out_put(o, l->prefix[m->prefix], l->prefix_len[m->prefix]);
}

static void template_build(const struct layout *l, const struct layout_match *m,
                           const struct rules_template *t, struct out *o)
{
    for (size_t i = 0; i < t->npiece; i++) {
        const struct rules_piece *p = &t->piece[i];
        char digits[2];
        switch (p->kind) {
        case RULES_PIECE_PREFIX:
            out_prefix(o, l, m);
            break;
        case RULES_PIECE_LITERAL:
            out_put(o, p->text, p->len);
            break;
        case RULES_PIECE_CAPTURE:
            out_value_encoded(o, &m->cap[p->cap]);
            break;
        case RULES_PIECE_BUCKET:
            /* 0..31, no leading zero */
            digits[0] = (char)('0' + m->bucket / 10);
            digits[1] = (char)('0' + m->bucket % 10);
            if (m->bucket >= 10)
                out_put(o, digits, 2);
            else
                out_put(o, digits + 1, 1);
            break;
        }
    }
}

/* Segments joined by ':', raw values; with the prefix first for a legacy name. */
static void pattern_build(const struct layout *l, const struct layout_match *m,
                          const struct rules_pattern *pat, bool prefixed, struct out *o)
{
    if (prefixed)
        out_prefix(o, l, m);
    for (size_t i = 0; i < pat->nseg; i++) {
        const struct rules_seg *s = &pat->seg[i];
        if (prefixed || i > 0)
            out_byte(o, ':');
        if (s->kind == RULES_SEG_LITERAL)
            out_put(o, s->text, s->len);
        else
            out_value_raw(o, &m->cap[s->cap]);
    }
}

size_t layout_cluster_key(const struct layout *l, const struct layout_match *m,
                          char *out, size_t cap)
{
    struct out o = { out, cap, 0, NULL, 0, false };
    template_build(l, m, &m->rule->cluster, &o);
    return o.len;
}

size_t layout_legacy_key(const struct layout *l, const struct layout_match *m,
                         char *out, size_t cap)
{
    struct out o = { out, cap, 0, NULL, 0, false };
    pattern_build(l, m, &m->rule->legacy, true, &o);
    return o.len;
}

size_t layout_index_key(const struct layout *l, const struct layout_match *m,
                        char *out, size_t cap)
{
    struct out o = { out, cap, 0, NULL, 0, false };
    template_build(l, m, &m->rule->index, &o);
    return o.len;
}

size_t layout_index_member(const struct layout *l, const struct layout_match *m,
                           char *out, size_t cap)
{
    struct out o = { out, cap, 0, NULL, 0, false };
    pattern_build(l, m, &m->rule->member, false, &o);
    return o.len;
}

/* Whether template t of match m builds exactly s[0..len). */
static bool template_builds(const struct layout *l, const struct layout_match *m,
                            const struct rules_template *t, const char *s, size_t len)
{
    struct out o = { NULL, 0, 0, s, len, false };
    template_build(l, m, t, &o);
    return !o.differ && o.len == len;
}

static bool member_builds(const struct layout *l, const struct layout_match *m,
                          const char *s, size_t len)
{
    struct out o = { NULL, 0, 0, s, len, false };
    pattern_build(l, m, &m->rule->member, false, &o);
    return !o.differ && o.len == len;
}

/* ---- matching raw names against patterns ---- */

static bool one_of(const struct rules_capture *c, const char *s, size_t len, bool encoded)
{
    if (c->nalt == 0)
        return true;
    for (size_t i = 0; i < c->nalt; i++) {
        const char *alt = encoded ? c->alt_enc[i] : c->alt[i];
        size_t alen = encoded ? c->alt_enc_len[i] : c->alt_len[i];
        if (alen == len && memcmp(alt, s, len) == 0)
            return true;
    }
    return false;
}

static bool seg_match(const struct rules_rule *r, const struct rules_seg *seg, const char *s,
                      size_t len, struct layout_value *cap)
{
    switch (seg->kind) {
    case RULES_SEG_LITERAL:
        return seg->len == len && memcmp(seg->text, s, len) == 0;
    case RULES_SEG_CAPTURE:
    case RULES_SEG_GREEDY:
        if (!one_of(&r->cap[seg->cap], s, len, false))
            return false;
        cap[seg->cap] = (struct layout_value){ s, len, false };
        return true;
    case RULES_SEG_REST:
        return true;
    }
    return false;
}

/* Match s[0..len) against pat's segments: the ones before the greedy one
 * from the start, the ones after it from the end, the greedy one takes what
 * is between (one segment at least, maybe empty). */
static bool pattern_match(const struct rules_rule *r, const struct rules_pattern *pat,
                          const char *s, size_t len, struct layout_value *cap)
{
    size_t head = pat->greedy < 0 ? pat->nseg : (size_t)pat->greedy;
    size_t pos = 0;
    for (size_t i = 0; i < head; i++) {
        const char *colon = memchr(s + pos, ':', len - pos);
        bool last = pat->greedy < 0 && i + 1 == pat->nseg;
        if (last ? colon != NULL : colon == NULL)
            return false;
        size_t end = last ? len : (size_t)(colon - s);
        if (!seg_match(r, &pat->seg[i], s + pos, end - pos, cap))
            return false;
        pos = end + 1;
    }
    if (pat->greedy < 0)
        return true;
    size_t end = len;
    for (size_t i = pat->nseg - 1; i > head; i--) {
        const char *colon = memrchr(s + pos, ':', end - pos);
        if (!colon)
            return false;
        size_t c = (size_t)(colon - s);
        if (!seg_match(r, &pat->seg[i], s + c + 1, end - c - 1, cap))
            return false;
        end = c;
    }
    return seg_match(r, &pat->seg[head], s + pos, end - pos, cap);
}

/* The prefix that key starts with, followed by ':'; the rest in *rest. */
static int prefix_find(const struct layout *l, const char *key, size_t len, size_t *rest)
{
    const char *colon = memchr(key, ':', len);
    if (!colon)
        return -1;
    size_t plen = (size_t)(colon - key);
    for (size_t i = 0; i < l->nprefix; i++)
        if (l->prefix_len[i] == plen && memcmp(l->prefix[i], key, plen) == 0) {
            *rest = plen + 1;
            return (int)i;
        }
    return -1;
}

/* Whether r's legacy pattern cannot match s, whose first segment is first
 * bytes long: a quick look at its first literal, as most rules have one.
 * The first byte is compared before memcmp is called: every key is checked
 * against every rule before its own, and most differ there (this takes a
 * third or more off mapping a name with the shipped rules). */
static bool first_segment_differs(const struct rules_rule *r, const char *s, size_t first)
{
    const struct rules_seg *f = &r->legacy.seg[0];
    return f->kind == RULES_SEG_LITERAL &&
           (f->len != first || (first > 0 && f->text[0] != s[0]) || memcmp(f->text, s, first) != 0);
}

static size_t first_segment_len(const char *s, size_t len)
{
    const char *colon = memchr(s, ':', len);
    return colon ? (size_t)(colon - s) : len;
}

/* The first rule or keep whose legacy pattern matches key; NULL for none. */
static const struct rules_rule *legacy_match(const struct layout *l, const char *key, size_t len,
                                             struct layout_match *m)
{
    size_t rest;
    int p = prefix_find(l, key, len, &rest);
    if (p < 0)
        return NULL;
    m->prefix = (size_t)p;
    const char *s = key + rest;
    size_t slen = len - rest, first = first_segment_len(s, slen);
    const struct served *sv = &l->served[p];
    for (size_t i = 0; i < sv->nrule; i++) {
        const struct rules_rule *r = sv->rule[i];
        if (first_segment_differs(r, s, first) || !pattern_match(r, &r->legacy, s, slen, m->cap))
            continue;
        m->rule = r;
        m->bucket = r->bucket ? value_bucket(&m->cap[r->id_cap]) : -1;
        return r;
    }
    return NULL;
}

static enum layout_result result_of(const struct rules_rule *r, size_t need, size_t cap)
{
    if (!r)
        return LAYOUT_PASS;
    if (r->kind == RULES_KEEP)
        return LAYOUT_KEEP;
    return need <= cap ? LAYOUT_MAPPED : LAYOUT_SHORT;
}

enum layout_result layout_to_cluster(const struct layout *l, const char *key, size_t len,
                                     char *out, size_t cap, size_t *outlen,
                                     struct layout_match *m)
{
    struct layout_match local;
    if (!m)
        m = &local;
    m->rule = NULL;
    m->bucket = -1;
    const struct rules_rule *r = legacy_match(l, key, len, m);
    size_t need = 0;
    if (r && r->kind == RULES_REWRITE) {
        need = layout_cluster_key(l, m, out, cap);
        *outlen = need;
    }
    return result_of(r, need, cap);
}

/* ---- matching cluster names against templates ---- */

/* The end of an encoded value starting at pos: the first byte it cannot hold. */
static size_t value_end(const char *s, size_t len, size_t pos)
{
    while (pos < len && (!rules_must_encode((unsigned char)s[pos]) || s[pos] == '%'))
        pos++;
    return pos;
}

static bool bucket_parse(const char *s, size_t len, int *bucket)
{
    if (len == 0 || len > 2 || (len == 2 && s[0] == '0'))
        return false;
    int b = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        b = b * 10 + (s[i] - '0');
    }
    *bucket = b;
    return b < RULES_BUCKETS;
}

static bool placeholder_match(const struct rules_rule *r, const struct rules_piece *p,
                              const char *s, size_t len, struct layout_match *m)
{
    if (p->kind == RULES_PIECE_BUCKET)
        return bucket_parse(s, len, &m->bucket);
    if (escape_take(NULL, s, len) < 0 || !one_of(&r->cap[p->cap], s, len, true))
        return false;
    m->cap[p->cap] = (struct layout_value){ s, len, true };
    return true;
}

/* Match key[rest..len) (after the prefix and its ':') against template t. */
static bool template_match(const struct rules_rule *r, const struct rules_template *t,
                           const char *key, size_t len, size_t rest, struct layout_match *m)
{
    size_t pos = rest - 1;   /* the ':' after the prefix starts the first literal */
    for (size_t i = 1; i < t->npiece; i++) {
        const struct rules_piece *p = &t->piece[i];
        if (p->kind == RULES_PIECE_LITERAL) {
            if (len - pos < p->len || memcmp(key + pos, p->text, p->len) != 0)
                return false;
            pos += p->len;
            continue;
        }
        size_t end = value_end(key, len, pos);
        if (!placeholder_match(r, p, key + pos, end - pos, m))
            return false;
        pos = end;
    }
    return pos == len;
}

/* m is a match of rule r read from a cluster name (t over key[0..len)), or
 * from an index entry (also member[0..mlen)): build its legacy name into out,
 * and check that rewriting that name gives back exactly what was read, so
 * back and forth is the identity (this rejects wrong buckets, and names a
 * legacy name cannot tell apart). */
static enum layout_result legacy_checked(const struct layout *l, const struct rules_rule *r,
                                         struct layout_match *m, char *out, size_t cap,
                                         size_t *outlen, const struct rules_template *t,
                                         const char *key, size_t len, const char *member,
                                         size_t mlen)
{
    size_t need = layout_legacy_key(l, m, out, cap);
    *outlen = need;
    if (need > cap)
        return LAYOUT_SHORT;
    struct layout_match again;
    if (legacy_match(l, out, need, &again) != r || !template_builds(l, &again, t, key, len) ||
        (member && !member_builds(l, &again, member, mlen)))
        return LAYOUT_PASS;
    m->bucket = again.bucket;
    return LAYOUT_MAPPED;
}

/* layout_to_legacy; with records_only, a name whose first match is not an
 * indexed rule is answered PASS at once (before the costly check). */
static enum layout_result cluster_to_legacy(const struct layout *l, const char *key, size_t len,
                                            char *out, size_t cap, size_t *outlen,
                                            struct layout_match *m, bool records_only)
{
    struct layout_match local;
    if (!m)
        m = &local;
    m->rule = NULL;
    m->bucket = -1;
    size_t rest;
    int p = prefix_find(l, key, len, &rest);
    if (p < 0)
        return LAYOUT_PASS;
    m->prefix = (size_t)p;
    size_t first = first_segment_len(key + rest, len - rest);
    const struct served *sv = &l->served[p];
    for (size_t i = 0; i < sv->nrule; i++) {
        const struct rules_rule *r = sv->rule[i];
        m->bucket = -1;
        bool hit = r->kind == RULES_KEEP
                       ? !first_segment_differs(r, key + rest, first) &&
                             pattern_match(r, &r->legacy, key + rest, len - rest, m->cap)
                       : template_match(r, &r->cluster, key, len, rest, m);
        if (!hit)
            continue;
        if (records_only && !r->indexed)
            return LAYOUT_PASS;
        m->rule = r;
        if (r->kind == RULES_KEEP)
            return LAYOUT_KEEP;
        enum layout_result res = legacy_checked(l, r, m, out, cap, outlen, &r->cluster, key, len,
                                                NULL, 0);
        if (res == LAYOUT_PASS)
            m->rule = NULL;
        return res;
    }
    return LAYOUT_PASS;
}

enum layout_result layout_to_legacy(const struct layout *l, const char *key, size_t len,
                                    char *out, size_t cap, size_t *outlen,
                                    struct layout_match *m)
{
    return cluster_to_legacy(l, key, len, out, cap, outlen, m, false);
}

enum layout_result layout_record_to_legacy(const struct layout *l, const char *key, size_t len,
                                           char *out, size_t cap, size_t *outlen,
                                           struct layout_match *m)
{
    return cluster_to_legacy(l, key, len, out, cap, outlen, m, true);
}

enum layout_result layout_index_to_legacy(const struct layout *l, const char *index,
                                          size_t ilen, const char *member, size_t mlen,
                                          char *out, size_t cap, size_t *outlen,
                                          struct layout_match *m)
{
    struct layout_match local;
    if (!m)
        m = &local;
    m->rule = NULL;
    m->bucket = -1;
    size_t rest;
    int p = prefix_find(l, index, ilen, &rest);
    if (p < 0)
        return LAYOUT_PASS;
    m->prefix = (size_t)p;
    const struct served *sv = &l->served[p];
    for (size_t i = 0; i < sv->nrule; i++) {
        const struct rules_rule *r = sv->rule[i];
        m->bucket = -1;
        if (!r->indexed || !template_match(r, &r->index, index, ilen, rest, m) ||
            !pattern_match(r, &r->member, member, mlen, m->cap))
            continue;
        m->rule = r;
        enum layout_result res = legacy_checked(l, r, m, out, cap, outlen, &r->index, index, ilen,
                                                member, mlen);
        if (res == LAYOUT_PASS)
            m->rule = NULL;
        return res;
    }
    return LAYOUT_PASS;
}

const struct rules_rule *layout_index_rule(const struct layout *l, const char *key, size_t len)
{
    size_t rest;
    int p = prefix_find(l, key, len, &rest);
    if (p < 0)
        return NULL;
    const struct served *sv = &l->served[p];
    for (size_t i = 0; i < sv->nrule; i++) {
        const struct rules_rule *r = sv->rule[i];
        struct layout_match m;
        m.bucket = -1;
        if (r->indexed && template_match(r, &r->index, key, len, rest, &m))
            return r;
    }
    return NULL;
}

bool layout_is_index(const struct layout *l, const char *key, size_t len)
{
    return layout_index_rule(l, key, len) != NULL;
}

size_t layout_max_len(const struct layout *l, size_t len)
{
    /* values at most triple when encoded; plus literals, a prefix, 2 digits */
    return 3 * len + l->literal_max + l->prefix_max + 2;
}

/* ---- listings ---- */

enum layout_result layout_member_to_legacy(const struct layout *l, struct layout_match *m,
                                           const char *member, size_t mlen,
                                           char *out, size_t cap, size_t *outlen)
{
    const struct rules_rule *r = m->rule;
    if (!r || !r->indexed || !pattern_match(r, &r->member, member, mlen, m->cap))
        return LAYOUT_PASS;
    if (r->bucket) {
        int b = value_bucket(&m->cap[r->id_cap]);
        if (m->bucket >= 0 && b != m->bucket)
            return LAYOUT_PASS;
        m->bucket = b;
    }
    size_t need = layout_legacy_key(l, m, out, cap);
    *outlen = need;
    return need <= cap ? LAYOUT_MAPPED : LAYOUT_SHORT;
}
