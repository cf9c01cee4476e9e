#include "keylayout/overlap.h"

#include <string.h>

#define ITEMS_MAX (2 * RULES_MAX_SEGS)
#define STATES_MAX ((ITEMS_MAX + 1) * (ITEMS_MAX + 1))

/* One class of segments: any one segment, one of n literals, or (star)
 * any number of segments, none included. A greedy capture is any one
 * segment, then a star. */
struct item {
    bool any;
    bool star;
    size_t n;
    const char *const *lit;
    const size_t *len;
    const char *one;       /* a literal segment: its text and length */
    size_t one_len;
};

struct row {
    struct item item[ITEMS_MAX];
    size_t n;
};

static void row_of(const struct rules_rule *r, struct row *row)
{
    row->n = 0;
    for (size_t i = 0; i < r->legacy.nseg; i++) {
        const struct rules_seg *s = &r->legacy.seg[i];
        struct item *it = &row->item[row->n++];
        memset(it, 0, sizeof *it);
        if (s->kind == RULES_SEG_LITERAL) {
            it->one = s->text;
            it->one_len = s->len;
            it->n = 1;
            it->lit = &it->one;
            it->len = &it->one_len;
        } else if (s->kind == RULES_SEG_CAPTURE && r->cap[s->cap].nalt > 0) {
            it->n = r->cap[s->cap].nalt;
            it->lit = r->cap[s->cap].alt;
            it->len = r->cap[s->cap].alt_len;
        } else {
            it->any = true;
        }
        if (s->kind == RULES_SEG_GREEDY || s->kind == RULES_SEG_REST) {
            struct item *star = &row->item[row->n++];
            memset(star, 0, sizeof *star);
            star->any = star->star = true;
        }
    }
}

/* A segment both classes hold, in *seg / *len; false when there is none. */
static bool common_segment(const struct item *a, const struct item *b, const char **seg,
                           size_t *len)
{
    if (a->any && b->any) {
        *seg = "x";
        *len = 1;
        return true;
    }
    if (a->any || b->any) {
        const struct item *set = a->any ? b : a;
        *seg = set->lit[0];
        *len = set->len[0];
        return true;
    }
    for (size_t i = 0; i < a->n; i++)
        for (size_t j = 0; j < b->n; j++)
            if (a->len[i] == b->len[j] && memcmp(a->lit[i], b->lit[j], a->len[i]) == 0) {
                *seg = a->lit[i];
                *len = a->len[i];
                return true;
            }
    return false;
}

/* The search: state i * (nb + 1) + j is "a's first i items and b's first j
 * items have matched the same segments". */
struct search {
    const struct row *a, *b;
    int from[STATES_MAX];        /* the state it was reached from; -1: not reached */
    const char *seg[STATES_MAX]; /* the segment taken to reach it; NULL: none */
    size_t seg_len[STATES_MAX];
    int queue[STATES_MAX];
    size_t head, tail;
};

static void reach(struct search *s, int from, size_t i, size_t j, const char *seg, size_t len)
{
    int to = (int)(i * (s->b->n + 1) + j);
    if (s->from[to] != -1)
        return;
    s->from[to] = from;
    s->seg[to] = seg;
    s->seg_len[to] = len;
    s->queue[s->tail++] = to;
}

static void step(struct search *s, int st)
{
    size_t nb1 = s->b->n + 1, i = (size_t)st / nb1, j = (size_t)st % nb1;
    const struct item *ai = i < s->a->n ? &s->a->item[i] : NULL;
    const struct item *bj = j < s->b->n ? &s->b->item[j] : NULL;
    if (ai && ai->star)
        reach(s, st, i + 1, j, NULL, 0);
    if (bj && bj->star)
        reach(s, st, i, j + 1, NULL, 0);
    const char *seg;
    size_t len;
    if (ai && bj && common_segment(ai, bj, &seg, &len))
        reach(s, st, ai->star ? i : i + 1, bj->star ? j : j + 1, seg, len);
}

/* The segments on the way from the start to state st, joined by ':'. */
static size_t example_write(const struct search *s, int st, char *out, size_t cap)
{
    int path[STATES_MAX];
    size_t n = 0, len = 0;
    for (int at = st; at != 0; at = s->from[at])
        if (s->seg[at])
            path[n++] = at;
    for (size_t k = n; k-- > 0;) {
        const char *seg = s->seg[path[k]];
        size_t sl = s->seg_len[path[k]];
        if (k + 1 < n && len < cap)
            out[len] = ':';
        len += k + 1 < n;
        for (size_t c = 0; c < sl; c++, len++)
            if (len < cap)
                out[len] = seg[c];
    }
    return len;
}

bool overlap_find(const struct rules_rule *a, const struct rules_rule *b,
                  char *out, size_t cap, size_t *outlen)
{
    static _Thread_local struct search s;   /* too large for a small stack */
    struct row ra, rb;
    row_of(a, &ra);
    row_of(b, &rb);
    s.a = &ra;
    s.b = &rb;
    size_t nstates = (ra.n + 1) * (rb.n + 1);
    for (size_t k = 0; k < nstates; k++)
        s.from[k] = -1;
    s.head = s.tail = 0;
    reach(&s, 0, 0, 0, NULL, 0);
    int accept = (int)(nstates - 1);
    while (s.head < s.tail) {
        int st = s.queue[s.head++];
        if (st == accept) {
            *outlen = example_write(&s, st, out, cap);
            return true;
        }
        step(&s, st);
    }
    return false;
}
