#include "keylayout/layout.h"

#include "lib/base/hash.h"
#include "keylayout/overlap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rules a prefix is served by: the rules of each file that serves it,
 * file by file in the order given, each file's in its own order. */
struct served {
    const struct rules_rule **rule;
    size_t nrule;
};

struct layout {
    struct rules **file;
    size_t nfile;
    char **prefix;           /* every file's prefixes, each once, first seen first */
    size_t *prefix_len;
    struct served *served;   /* per prefix */
    size_t nprefix;
    size_t prefix_max;
    size_t literal_max;      /* of every file */
};

/* snprintf-style output: counts everything, writes what fits. With cmp
 * set it writes nothing and notes whether the output differs from cmp. */
struct out {
    char *buf;
    size_t cap;
    size_t len;
    const char *cmp;
    size_t cmplen;
    bool differ;
};

static const char HEX[] = "0123456789ABCDEF";

static inline void out_put(struct out *o, const char *s, size_t n)
{
    if (!o->cmp && o->len + n <= o->cap) {   /* the common case: it fits */
        memcpy(o->buf + o->len, s, n);
        o->len += n;
        return;
    }
    if (o->cmp) {
        if (o->len + n > o->cmplen || memcmp(o->cmp + o->len, s, n) != 0)
            o->differ = true;
    } else if (o->len < o->cap)
        memcpy(o->buf + o->len, s, n < o->cap - o->len ? n : o->cap - o->len);
    o->len += n;
}

static void out_byte(struct out *o, char c)
{
    out_put(o, &c, 1);
}

/* ---- encoding, buckets ---- */

/* Runs of bytes kept as they are go out in one piece: this is on the path of
 * every key. */
static void out_encode(struct out *o, const char *s, size_t len)
{
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!rules_must_encode(c))
            continue;
        out_put(o, s + run, i - run);
        char esc[3] = { '%', HEX[c >> 4], HEX[c & 15] };
        out_put(o, esc, 3);
        run = i + 1;
    }
    out_put(o, s + run, len - run);
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;   /* lower case is not what layout_encode makes */
}

/* The byte of the escape at s[i] ('%'), or -1 if it is not canonical. */
static int escape_at(const char *s, size_t len, size_t i)
{
    if (len - i < 3)
        return -1;
    int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0 || !rules_must_encode((unsigned char)(hi << 4 | lo)))
        return -1;
    return hi << 4 | lo;
}

/* Decode s (checked) into o, or only check when o is NULL. */
static int decode_into(struct out *o, const char *s, size_t len)
{
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!rules_must_encode(c))
            continue;
        int b = c == '%' ? escape_at(s, len, i) : -1;
        if (b < 0)
            return -1;
        if (o) {
            out_put(o, s + run, i - run);
            out_byte(o, (char)b);
        }
        i += 2;
        run = i + 1;
    }
    if (o)
        out_put(o, s + run, len - run);
    return 0;
}

size_t layout_encode(const char *in, size_t len, char *out, size_t cap)
{
    struct out o = { out, cap, 0, NULL, 0, false };
    out_encode(&o, in, len);
    return o.len;
}

int layout_decode(const char *in, size_t len, char *out, size_t cap, size_t *outlen)
{
    struct out o = { out, cap, 0, NULL, 0, false };
    if (decode_into(&o, in, len) < 0)
        return -1;
    *outlen = o.len;
    return 0;
}

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
            c = (unsigned char)escape_at(v->ptr, v->len, i);
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
        out_encode(o, v->ptr, v->len);
}

static void out_value_raw(struct out *o, const struct layout_value *v)
{
    if (v->encoded)
        decode_into(o, v->ptr, v->len);
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
    if (decode_into(NULL, s, len) < 0 || !one_of(&r->cap[p->cap], s, len, true))
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

/* ---- building a layout ---- */

int layout_check_prefix(const char *prefix, char *err, size_t errlen)
{
    const char *why = NULL;
    if (prefix[0] == '\0')
        why = "a prefix may not be empty";
    else if (strchr(prefix, ':'))
        why = "a prefix is one segment: it may not contain :";
    else if (strchr(prefix, '{') || strchr(prefix, '}'))
        why = "a prefix may not contain { or } (it would break the hash tags)";
    if (!why)
        return 0;
    snprintf(err, errlen, "layout-prefix \"%s\": %s", prefix, why);
    return -1;
}

static int prefix_index(const struct layout *l, const char *p)
{
    for (size_t i = 0; i < l->nprefix; i++)
        if (strcmp(l->prefix[i], p) == 0)
            return (int)i;
    return -1;
}

/* Check src's prefixes and add the ones not seen yet to l's list. */
static int prefixes_add(struct layout *l, const struct layout_source *src, char *err,
                        size_t errlen)
{
    for (size_t i = 0; i < src->nprefix; i++) {
        const char *p = src->prefix[i];
        if (layout_check_prefix(p, err, errlen) < 0)
            return -1;
        for (size_t j = 0; j < i; j++)
            if (strcmp(p, src->prefix[j]) == 0) {
                snprintf(err, errlen, "layout-prefix \"%s\": given twice", p);
                return -1;
            }
        if (prefix_index(l, p) >= 0)
            continue;
        if (l->nprefix == LAYOUT_PREFIXES_MAX) {
            snprintf(err, errlen, "layout-prefix \"%s\": more than %d prefixes", p,
                     LAYOUT_PREFIXES_MAX);
            return -1;
        }
        if (!(l->prefix[l->nprefix] = strdup(p))) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        l->prefix_len[l->nprefix] = strlen(p);
        if (l->prefix_len[l->nprefix] > l->prefix_max)
            l->prefix_max = l->prefix_len[l->nprefix];
        l->nprefix++;
    }
    return 0;
}

static bool source_serves(const struct layout_source *src, const char *p)
{
    for (size_t i = 0; i < src->nprefix; i++)
        if (strcmp(src->prefix[i], p) == 0)
            return true;
    return false;
}

/* The rules prefix p is served by, file by file. */
static int served_build(struct layout *l, const struct layout_source *src, size_t p)
{
    struct served *sv = &l->served[p];
    size_t n = 0;
    for (size_t f = 0; f < l->nfile; f++)
        if (source_serves(&src[f], l->prefix[p]))
            n += l->file[f]->nrule;
    sv->rule = calloc(n ? n : 1, sizeof *sv->rule);
    if (!sv->rule)
        return -1;
    for (size_t f = 0; f < l->nfile; f++)
        for (size_t i = 0; source_serves(&src[f], l->prefix[p]) && i < l->file[f]->nrule; i++)
            sv->rule[sv->nrule++] = &l->file[f]->rule[i];
    return 0;
}

/* A prefix both sources serve, or NULL. */
static const char *common_prefix(const struct layout_source *a, const struct layout_source *b)
{
    for (size_t i = 0; i < a->nprefix; i++)
        if (source_serves(b, a->prefix[i]))
            return a->prefix[i];
    return NULL;
}

static const char *kind_name(const struct rules_rule *r)
{
    return r->kind == RULES_KEEP ? "keep" : "rule";
}

/* Files f and g serve prefix p: no name of p may be matched by both. */
static int files_disjoint(const struct layout *l, size_t f, size_t g, const char *p,
                          char *err, size_t errlen)
{
    char ex[256];
    size_t n;
    for (size_t i = 0; i < l->file[f]->nrule; i++)
        for (size_t j = 0; j < l->file[g]->nrule; j++) {
            const struct rules_rule *a = &l->file[f]->rule[i], *b = &l->file[g]->rule[j];
            if (!overlap_find(a, b, ex, sizeof ex, &n))
                continue;
            snprintf(err, errlen, "%s:%d: %s %s and %s:%d: %s %s both match \"%s:%.*s%s\"; "
                     "both files serve prefix \"%s\", and a name may be matched by one file "
                     "only", a->file, a->line, kind_name(a), a->name, b->file, b->line,
                     kind_name(b), b->name, p, (int)(n < sizeof ex ? n : sizeof ex), ex,
                     n > sizeof ex ? "..." : "", p);
            return -1;
        }
    return 0;
}

static int conflicts_check(const struct layout *l, const struct layout_source *src,
                           char *err, size_t errlen)
{
    for (size_t f = 0; f < l->nfile; f++)
        for (size_t g = f + 1; g < l->nfile; g++) {
            const char *p = common_prefix(&src[f], &src[g]);
            if (p && files_disjoint(l, f, g, p, err, errlen) < 0)
                return -1;
        }
    return 0;
}

static int file_add(struct layout *l, const struct layout_source *src, char *err,
                    size_t errlen)
{
    struct rules *r = src->text ? rules_load_string(src->name, src->text, src->len, err, errlen)
                                : rules_load_file(src->name, err, errlen);
    if (!r)
        return -1;
    l->file[l->nfile++] = r;
    if (r->literal_max > l->literal_max)
        l->literal_max = r->literal_max;
    return 0;
}

static int layout_fill(struct layout *l, const struct layout_source *src, size_t n,
                       char *err, size_t errlen)
{
    size_t total = 0;
    for (size_t f = 0; f < n; f++)
        total += src[f].nprefix < LAYOUT_PREFIXES_MAX ? src[f].nprefix : LAYOUT_PREFIXES_MAX;
    if (total > LAYOUT_PREFIXES_MAX)
        total = LAYOUT_PREFIXES_MAX;
    l->file = calloc(n ? n : 1, sizeof *l->file);
    l->prefix = calloc(total ? total : 1, sizeof *l->prefix);
    l->prefix_len = calloc(total ? total : 1, sizeof *l->prefix_len);
    if (!l->file || !l->prefix || !l->prefix_len) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t f = 0; f < n; f++)
        if (file_add(l, &src[f], err, errlen) < 0 || prefixes_add(l, &src[f], err, errlen) < 0)
            return -1;
    if (!(l->served = calloc(l->nprefix ? l->nprefix : 1, sizeof *l->served))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t p = 0; p < l->nprefix; p++)
        if (served_build(l, src, p) < 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    return conflicts_check(l, src, err, errlen);
}

struct layout *layout_load(const struct layout_source *src, size_t n, char *err, size_t errlen)
{
    if (n > LAYOUT_FILES_MAX) {
        snprintf(err, errlen, "more than %d rules files", LAYOUT_FILES_MAX);
        return NULL;
    }
    struct layout *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (layout_fill(l, src, n, err, errlen) < 0) {
        layout_free(l);
        return NULL;
    }
    return l;
}

struct layout *layout_load_file(const char *path, const char *const *prefixes,
                                size_t nprefixes, char *err, size_t errlen)
{
    struct layout_source src = { path, NULL, 0, prefixes, nprefixes };
    return layout_load(&src, 1, err, errlen);
}

struct layout *layout_load_string(const char *name, const char *text, size_t len,
                                  const char *const *prefixes, size_t nprefixes,
                                  char *err, size_t errlen)
{
    struct layout_source src = { name, text, len, prefixes, nprefixes };
    return layout_load(&src, 1, err, errlen);
}

void layout_free(struct layout *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->nprefix; i++) {
        free(l->prefix[i]);
        if (l->served)
            free(l->served[i].rule);
    }
    free(l->prefix);
    free(l->prefix_len);
    free(l->served);
    for (size_t i = 0; i < l->nfile; i++)
        rules_free(l->file[i]);
    free(l->file);
    free(l);
}

size_t layout_file_count(const struct layout *l)
{
    return l->nfile;
}

const struct rules *layout_file_rules(const struct layout *l, size_t i)
{
    return l->file[i];
}

const struct rules_rule *const *layout_prefix_rules(const struct layout *l, size_t i,
                                                     size_t *n)
{
    *n = l->served[i].nrule;
    return l->served[i].rule;
}

size_t layout_prefix_count(const struct layout *l)
{
    return l->nprefix;
}

const char *layout_prefix(const struct layout *l, size_t i, size_t *len)
{
    if (len)
        *len = l->prefix_len[i];
    return l->prefix[i];
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

/* ---- shared references ---- */

struct layout_ref *layout_ref_new(struct layout *l)
{
    struct layout_ref *ref = malloc(sizeof *ref);
    if (!ref) {
        layout_free(l);
        return NULL;
    }
    ref->layout = l;
    ref->refs = 1;
    return ref;
}

struct layout_ref *layout_ref_get(struct layout_ref *ref)
{
    if (ref)
        __atomic_add_fetch(&ref->refs, 1, __ATOMIC_RELAXED);
    return ref;
}

void layout_ref_put(struct layout_ref *ref)
{
    if (ref && __atomic_sub_fetch(&ref->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        layout_free(ref->layout);
        free(ref);
    }
}
