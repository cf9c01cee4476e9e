/*
 * globmap: legacy globs as cluster globs. See globmap.h.
 */
#include "keylayout/globmap.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "keylayout/escape.h"
#include "keylayout/glob.h"
#include "keylayout/layout.h"
#include "keylayout/layoutload.h"
#include "keylayout/rules.h"

/* What a pattern's text says of a capture's value. */
enum known_state { UNKNOWN, PARTIAL, FULL };

struct known {
    const char *ptr;
    size_t len;
    enum known_state state;     /* PARTIAL: the value starts with ptr[0..len) */
};

struct glob_out {
    char buf[GLOBMAP_MAX];
    size_t len;
    bool star_last;             /* the last byte is an unescaped '*' */
    bool over;                  /* longer than GLOBMAP_MAX */
};

static void put(struct glob_out *o, const char *s, size_t n)
{
    if (o->over || o->len + n > sizeof o->buf) {
        o->over = true;
        return;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static void put_literal(struct glob_out *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] && strchr("*?[]\\", s[i]))
            put(o, "\\", 1);
        put(o, s + i, 1);
    }
    if (n > 0)
        o->star_last = false;
}

static void put_star(struct glob_out *o)
{
    if (!o->star_last)
        put(o, "*", 1);
    o->star_last = true;
}

/* The literal text of pattern (escapes resolved) into lit; *star: one '*'
 * ends it. -1: another shape, or text longer than cap. */
static int pattern_shape(const char *p, size_t plen, char *lit, size_t cap, size_t *litlen,
                         bool *star)
{
    size_t n = 0;
    *star = false;
    for (size_t i = 0; i < plen; i++) {
        char c = p[i];
        if (c == '\\' && i + 1 < plen)
            c = p[++i];
        else if (c == '*' && i == plen - 1) {
            *star = true;
            break;
        } else if (c == '*' || c == '?' || c == '[')
            return -1;
        if (n == cap)
            return -1;
        lit[n++] = c;
    }
    *litlen = n;
    return 0;
}

/* Whether a starts b or b starts a. */
static bool comparable(const char *a, size_t alen, const char *b, size_t blen)
{
    return memcmp(a, b, alen < blen ? alen : blen) == 0;
}

/* The names of a prefix: "X:" (every legacy and cluster name under X
 * starts so). */
static size_t prefix_head(const struct layout *l, size_t i, char *out, size_t cap)
{
    size_t xlen;
    const char *x = layout_prefix(l, i, &xlen);
    if (xlen + 1 > cap)
        return 0;
    memcpy(out, x, xlen);
    out[xlen] = ':';
    return xlen + 1;
}

/* Whether some value of capture c may be what k says. */
static bool alt_fits(const struct rules_capture *c, const struct known *k)
{
    if (c->nalt == 0)
        return true;
    for (size_t i = 0; i < c->nalt; i++)
        if (k->state == FULL ? c->alt_len[i] == k->len && memcmp(c->alt[i], k->ptr, k->len) == 0
                             : c->alt_len[i] >= k->len && memcmp(c->alt[i], k->ptr, k->len) == 0)
            return true;
    return false;
}

/* r's cluster template with what k knows, '*' for the rest. */
static void build(const struct rules_rule *r, const char *x, size_t xlen, const struct known *k,
                  struct glob_out *o)
{
    char enc[GLOBMAP_MAX];
    for (size_t i = 0; i < r->cluster.npiece; i++) {
        const struct rules_piece *p = &r->cluster.piece[i];
        const struct known *v = p->kind == RULES_PIECE_CAPTURE ? &k[p->cap]
                              : p->kind == RULES_PIECE_BUCKET && r->id_cap >= 0 ? &k[r->id_cap]
                              : NULL;
        if (p->kind == RULES_PIECE_PREFIX) {
            put_literal(o, x, xlen);
        } else if (p->kind == RULES_PIECE_LITERAL) {
            put_literal(o, p->text, p->len);
        } else if (p->kind == RULES_PIECE_CAPTURE && v->state != UNKNOWN) {
            size_t n = escape_encode(v->ptr, v->len, enc, sizeof enc);
            if (n > sizeof enc)
                o->over = true;
            else
                put_literal(o, enc, n);
            if (v->state == PARTIAL)
                put_star(o);
        } else if (p->kind == RULES_PIECE_BUCKET && v && v->state == FULL) {
            char b[8];
            int n = snprintf(b, sizeof b, "%d", layout_bucket(v->ptr, v->len));
            put_literal(o, b, (size_t)n);
        } else {
            put_star(o);
        }
    }
}

/* One search of rest (the text after "X:") through a rule's segments. */
struct walk {
    const struct rules_rule *r;
    const char *x, *rest;
    size_t xlen, rlen;
    globmap_emit_fn *emit;
    void *arg;
    int emitted;
};

/* The names of w->r that start with rest, as k says: one glob. */
static void found(struct walk *w, const struct known *k)
{
    struct glob_out o = { .len = 0 };
    build(w->r, w->x, w->xlen, k, &o);
    if (!o.over) {
        w->emit(w->arg, o.buf, o.len);
        w->emitted++;
    }
}

/* Match rest from pos against the segments from s, with what k knows of
 * the captures before: a glob (found) for each way the names of the rule
 * may start with rest. A greedy capture may end at each ':' of the rest,
 * or hold all of it: a way for each. */
static void walk(struct walk *w, size_t s, size_t pos, const struct known *before)
{
    const struct rules_pattern *p = &w->r->legacy;
    struct known k[RULES_MAX_CAPTURES];
    memcpy(k, before, sizeof k);
    for (; s < p->nseg; s++) {
        const struct rules_seg *g = &p->seg[s];
        if (s > 0 && pos < w->rlen && w->rest[pos++] != ':')
            return;
        if (pos == w->rlen)
            break;                      /* this segment on: any */
        const char *at = w->rest + pos;
        size_t left = w->rlen - pos;
        if (g->kind == RULES_SEG_LITERAL) {
            size_t n = g->len < left ? g->len : left;
            if (memcmp(at, g->text, n) != 0)
                return;
            pos += n;
        } else if (g->kind == RULES_SEG_CAPTURE) {
            const char *colon = memchr(at, ':', left);
            size_t len = colon ? (size_t)(colon - at) : left;
            k[g->cap] = (struct known){ at, len, colon ? FULL : PARTIAL };
            if (!alt_fits(&w->r->cap[g->cap], &k[g->cap]))
                return;
            pos += len;
        } else if (g->kind == RULES_SEG_GREEDY) {
            for (size_t q = 0, splits = 0; s + 1 < p->nseg && q < left; q++)
                if (at[q] == ':' && splits++ < RULES_MAX_SEGS) {
                    k[g->cap] = (struct known){ at, q, FULL };
                    walk(w, s + 1, pos + q, k);
                }
            k[g->cap] = (struct known){ at, left, PARTIAL };
            found(w, k);
            return;
        } else {
            return;
        }
    }
    if (pos == w->rlen)
        found(w, k);
}

/* text* under prefix i: a glob per rule whose names may start with text. */
static int map_star(const struct layout *l, size_t i, const char *text, size_t tlen,
                    globmap_emit_fn *emit, void *arg)
{
    char head[GLOBMAP_MAX];
    size_t hlen = prefix_head(l, i, head, sizeof head), n, xlen;
    const char *x = layout_prefix(l, i, &xlen);
    /* text* matches every name under X, cluster names too: nothing to add */
    if (hlen == 0 || tlen <= hlen || memcmp(text, head, hlen) != 0)
        return 0;
    const struct rules_rule *const *rules = layout_prefix_rules(l, i, &n);
    const struct known none[RULES_MAX_CAPTURES] = { { NULL, 0, UNKNOWN } };
    struct walk w = { .x = x, .xlen = xlen, .rest = text + hlen, .rlen = tlen - hlen,
                      .emit = emit, .arg = arg };
    for (size_t r = 0; r < n; r++) {
        w.r = rules[r];
        if (w.r->kind == RULES_REWRITE)
            walk(&w, 0, 0, none);
    }
    return w.emitted;
}

int globmap_cluster(const struct layout *l, const char *pattern, size_t len,
                    globmap_emit_fn *emit, void *arg)
{
    char text[GLOBMAP_MAX], head[GLOBMAP_MAX];
    size_t tlen;
    bool star;
    if (pattern_shape(pattern, len, text, sizeof text, &tlen, &star) < 0) {
        /* another shape: does it reach under a prefix? */
        bool exact;
        size_t lit = glob_literal_prefix(pattern, len, text, sizeof text, &exact);
        for (size_t i = 0; i < layout_prefix_count(l); i++) {
            size_t hlen = prefix_head(l, i, head, sizeof head);
            if (hlen == 0 || comparable(text, lit < sizeof text ? lit : sizeof text, head, hlen))
                return -1;
        }
        return 0;
    }
    if (!star) {
        struct glob_out o = { .len = 0 };
        size_t outlen;
        char name[GLOBMAP_MAX];
        if (layout_to_cluster(l, text, tlen, name, sizeof name, &outlen, NULL) != LAYOUT_MAPPED)
            return 0;
        put_literal(&o, name, outlen);
        if (o.over)
            return 0;
        emit(arg, o.buf, o.len);
        return 1;
    }
    int emitted = 0;
    for (size_t i = 0; i < layout_prefix_count(l); i++)
        emitted += map_star(l, i, text, tlen, emit, arg);
    return emitted;
}
