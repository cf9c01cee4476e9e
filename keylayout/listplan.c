#include "keylayout/listplan.h"

#include <stdio.h>
#include <string.h>

#include "keylayout/escape.h"
#include "keylayout/glob.h"
#include "keylayout/layoutload.h"

/* The complete segments of the literal start (each followed by ':' in it). */
struct segments {
    const char *s[RULES_MAX_SEGS + 1];
    size_t len[RULES_MAX_SEGS + 1];
    size_t n;
};

static void segments_split(const char *s, size_t len, struct segments *sg)
{
    size_t start = 0;
    sg->n = 0;
    for (size_t i = 0; i < len && sg->n < RULES_MAX_SEGS + 1; i++)
        if (s[i] == ':') {
            sg->s[sg->n] = s + start;
            sg->len[sg->n++] = i - start;
            start = i + 1;
        }
}

static bool in_alts(const struct rules_capture *c, const char *s, size_t len)
{
    if (c->nalt == 0)
        return true;
    for (size_t i = 0; i < c->nalt; i++)
        if (c->alt_len[i] == len && memcmp(c->alt[i], s, len) == 0)
            return true;
    return false;
}

/* Whether segment seg of rule r can be the text s[0..len). */
static bool seg_allows(const struct rules_rule *r, const struct rules_seg *seg,
                       const char *s, size_t len)
{
    switch (seg->kind) {
    case RULES_SEG_LITERAL:
        return seg->len == len && memcmp(seg->text, s, len) == 0;
    case RULES_SEG_CAPTURE:
        return in_alts(&r->cap[seg->cap], s, len);
    default:
        return true;
    }
}

/* Whether r may match some name made of the segments sg followed by at
 * least one more (the part of the name the pattern does not fix). */
static bool may_match(const struct rules_rule *r, const struct segments *sg)
{
    const struct rules_pattern *p = &r->legacy;
    if (p->greedy < 0 && p->nseg <= sg->n)
        return false;           /* the names have more segments than r */
    for (size_t j = 0; j < p->nseg && j < sg->n; j++) {
        const struct rules_seg *seg = &p->seg[j];
        if (seg->kind == RULES_SEG_GREEDY || seg->kind == RULES_SEG_REST)
            return true;        /* what follows is matched from the end */
        if (!seg_allows(r, seg, sg->s[j], sg->len[j]))
            return false;
    }
    return true;
}

/* Whether r matches every such name: an indexed rule whose last segment is
 * its greedy capture, every segment before it fixed by sg. */
static bool covers(const struct rules_rule *r, const struct segments *sg)
{
    const struct rules_pattern *p = &r->legacy;
    if (r->kind != RULES_REWRITE || !r->indexed || p->greedy < 0 ||
        (size_t)p->greedy != p->nseg - 1 || sg->n < p->nseg - 1)
        return false;
    for (size_t j = 0; j + 1 < p->nseg; j++)
        if (!seg_allows(r, &p->seg[j], sg->s[j], sg->len[j]))
            return false;
    return true;
}

/* Fill ls->fixed from r and sg; false when the index key needs a value the
 * pattern does not fix (the greedy capture itself). */
static bool fix_index(const struct rules_rule *r, const struct segments *sg, struct listplan *ls)
{
    const struct rules_pattern *p = &r->legacy;
    int greedy_cap = p->seg[p->greedy].cap;
    bool bucket = false;
    for (size_t j = 0; j + 1 < p->nseg; j++)
        if (p->seg[j].kind == RULES_SEG_CAPTURE)
            ls->fixed.cap[p->seg[j].cap] = (struct layout_value){ sg->s[j], sg->len[j], false };
    for (size_t i = 0; i < r->index.npiece; i++) {
        const struct rules_piece *pc = &r->index.piece[i];
        if (pc->kind == RULES_PIECE_CAPTURE && pc->cap == greedy_cap)
            return false;
        if (pc->kind == RULES_PIECE_BUCKET) {
            if (r->id_cap != greedy_cap)
                return false;
            bucket = true;
        }
    }
    ls->fixed.rule = r;
    ls->fixed.bucket = -1;
    ls->nindex = bucket ? RULES_BUCKETS : 1;
    return true;
}

bool listplan_make(const struct layout *l, const char *pattern, size_t plen, struct listplan *ls)
{
    bool exact;
    size_t n = glob_literal_prefix(pattern, plen, ls->literal, sizeof ls->literal, &exact);
    if (n > sizeof ls->literal)
        n = sizeof ls->literal;     /* a shorter start fixes less: still sound */
    ls->literal_len = n;
    const char *colon = memchr(ls->literal, ':', n);
    if (!colon)
        return false;
    size_t first = (size_t)(colon - ls->literal), pi;
    for (pi = 0; pi < layout_prefix_count(l); pi++) {
        size_t len;
        const char *p = layout_prefix(l, pi, &len);
        if (len == first && memcmp(p, ls->literal, len) == 0)
            break;
    }
    if (pi == layout_prefix_count(l))
        return false;
    struct segments sg;
    segments_split(colon + 1, n - first - 1, &sg);
    memset(&ls->fixed, 0, sizeof ls->fixed);
    ls->fixed.prefix = pi;
    size_t nrule;
    const struct rules_rule *const *rule = layout_prefix_rules(l, pi, &nrule);
    for (size_t i = 0; i < nrule; i++) {
        const struct rules_rule *r = rule[i];
        if (covers(r, &sg))
            return fix_index(r, &sg, ls);
        if (may_match(r, &sg))
            return false;
    }
    return false;
}

size_t listplan_index_key(const struct layout *l, const struct listplan *ls, int i,
                         char *out, size_t cap)
{
    struct layout_match m = ls->fixed;
    m.bucket = ls->nindex > 1 ? i : -1;
    return layout_index_key(l, &m, out, cap);
}

enum layout_result listplan_legacy(const struct layout *l, const struct listplan *ls, int i,
                                  const char *member, size_t mlen,
                                  char *out, size_t cap, size_t *outlen)
{
    struct layout_match m = ls->fixed;
    m.bucket = ls->nindex > 1 ? i : -1;
    return layout_member_to_legacy(l, &m, member, mlen, out, cap, outlen);
}

struct affix {
    char *out;
    size_t cap, len;
};

static void affix_put(struct affix *a, const char *s, size_t n)
{
    if (a->len < a->cap)
        memcpy(a->out + a->len, s, n < a->cap - a->len ? n : a->cap - a->len);
    a->len += n;
}

static void affix_value(struct affix *a, const struct layout_value *v)
{
    char buf[3 * 64];
    for (size_t off = 0; off < v->len; off += 64) {
        size_t n = v->len - off < 64 ? v->len - off : 64;
        affix_put(a, buf, escape_encode(v->ptr + off, n, buf, sizeof buf));
    }
}

/* Whether capture cap is one of the member's; its segment index or -1. */
static int member_seg_of(const struct rules_pattern *mp, int cap)
{
    for (size_t j = 0; j < mp->nseg; j++)
        if (mp->seg[j].kind != RULES_SEG_LITERAL && mp->seg[j].cap == cap)
            return (int)j;
    return -1;
}

/* A member of captures only, a greedy one last if any. */
static bool member_splittable(const struct rules_pattern *mp)
{
    for (size_t j = 0; j < mp->nseg; j++) {
        const struct rules_seg *seg = &mp->seg[j];
        if (seg->kind == RULES_SEG_LITERAL || seg->kind == RULES_SEG_REST ||
            (seg->kind == RULES_SEG_GREEDY && j + 1 != mp->nseg))
            return false;
    }
    return mp->nseg > 0;
}

bool listplan_record_affixes(const struct layout *l, const struct listplan *ls, int i,
                            char *before, size_t bcap, size_t *blen,
                            char *after, size_t acap, size_t *alen, int *splits)
{
    const struct rules_rule *r = ls->fixed.rule;
    const struct rules_pattern *mp = &r->member;
    if (!member_splittable(mp))
        return false;
    struct affix a[2] = { { before, bcap, 0 }, { after, acap, 0 } };
    int side = 0;
    size_t next = 0;     /* the member segment expected next in the template */
    for (size_t k = 0; k < r->cluster.npiece; k++) {
        const struct rules_piece *pc = &r->cluster.piece[k];
        char digits[3];
        size_t len = 0;
        int seg = pc->kind == RULES_PIECE_CAPTURE ? member_seg_of(mp, pc->cap) : -1;
        if (side == 1 && next > 0 && next < mp->nseg) {
            /* between two member captures: exactly ":" then the next one */
            if (pc->kind == RULES_PIECE_LITERAL && pc->len == 1 && pc->text[0] == ':' &&
                k + 1 < r->cluster.npiece)
                continue;
            if (seg != (int)next)
                return false;
            next++;
            continue;
        }
        if (seg >= 0) {
            if (side == 1 || seg != 0)
                return false;       /* out of order, or twice */
            side = 1;
            next = 1;
            continue;
        }
        switch (pc->kind) {
        case RULES_PIECE_PREFIX: {
            const char *p = layout_prefix(l, ls->fixed.prefix, &len);
            affix_put(&a[side], p, len);
            break;
        }
        case RULES_PIECE_LITERAL:
            affix_put(&a[side], pc->text, pc->len);
            break;
        case RULES_PIECE_BUCKET:
            if (ls->nindex == 1)
                return false;
            affix_put(&a[side], digits, (size_t)snprintf(digits, sizeof digits, "%d", i));
            break;
        case RULES_PIECE_CAPTURE:
            affix_value(&a[side], &ls->fixed.cap[pc->cap]);
            break;
        }
    }
    if (side != 1 || next != mp->nseg)
        return false;
    *blen = a[0].len;
    *alen = a[1].len;
    *splits = (int)mp->nseg - 1;
    return true;
}
