#include "keylayout/rules.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the parser is, for `FILE:LINE: what is wrong`. */
struct parser {
    const char *file;
    int line;
    char *err;
    size_t errlen;
};

#define MAX_TOKENS 16

static const char STOP_BYTES[] = ": { } * ? [ ] \\";

static int fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct parser *ps, const char *fmt, ...)
{
    if (ps->errlen == 0)
        return -1;
    int n = snprintf(ps->err, ps->errlen, "%s:%d: ", ps->file, ps->line);
    if (n >= 0 && (size_t)n < ps->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

#define R8(c) [c] = true, [c + 1] = true, [c + 2] = true, [c + 3] = true, \
              [c + 4] = true, [c + 5] = true, [c + 6] = true, [c + 7] = true
const bool rules_encode_set[256] = {
    R8(0x00), R8(0x08), R8(0x10), R8(0x18), [0x20] = true, [0x7F] = true,
    ['%'] = true, [':'] = true, ['{'] = true, ['}'] = true, ['*'] = true,
    ['?'] = true, ['['] = true, [']'] = true, ['\\'] = true,
};
#undef R8

static bool name_ok(const char *s, size_t len, const char *extra)
{
    if (len == 0 || len > RULES_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') &&
            !strchr(extra, c))
            return false;
    }
    return true;
}

int rules_capture_find(const struct rules_rule *r, const char *name, size_t len)
{
    for (size_t i = 0; i < r->ncap; i++)
        if (strlen(r->cap[i].name) == len && memcmp(r->cap[i].name, name, len) == 0)
            return (int)i;
    return -1;
}

/* Percent-encode an alternative once, so cluster names compare encoded. */
static char *encode_dup(const char *s, size_t len, size_t *outlen)
{
    char *out = malloc(3 * len + 1);
    size_t n = 0;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (rules_must_encode(c))
            n += (size_t)sprintf(out + n, "%%%02X", c);
        else
            out[n++] = (char)c;
    }
    out[n] = '\0';
    *outlen = n;
    return out;
}

/* <name=a|b|c>: the listed literals of capture c, from body[0..len). */
static int alts_parse(struct parser *ps, const char *pat, struct rules_capture *c,
                      const char *body, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && body[i] != '|')
            continue;
        if (i == start)
            return fail(ps, "\"%s\": empty literal in <%s=...>", pat, c->name);
        if (c->nalt == RULES_MAX_ALTS)
            return fail(ps, "\"%s\": more than %d literals in <%s=...>", pat, RULES_MAX_ALTS,
                        c->name);
        c->alt[c->nalt] = body + start;
        c->alt_len[c->nalt] = i - start;
        c->alt_enc[c->nalt] = encode_dup(body + start, i - start, &c->alt_enc_len[c->nalt]);
        if (!c->alt_enc[c->nalt])
            return fail(ps, "out of memory");
        c->nalt++;
        start = i + 1;
    }
    return 0;
}

enum pat_mode {
    PAT_DEFINE,     /* LEGACY: captures are declared here */
    PAT_KEEP,       /* keep PATTERN: captures are wildcards, `*` allowed last */
    PAT_REFERENCE,  /* MEMBER: captures refer to LEGACY's */
};

/* A capture segment `<...>` of a pattern (seg[0] is '<', seg[len-1] is '>'). */
static int capture_seg_parse(struct parser *ps, struct rules_rule *r, enum pat_mode mode,
                             const char *pat, const char *seg, size_t len, struct rules_seg *out)
{
    const char *body = seg + 1;
    size_t blen = len - 2;
    const char *eq = memchr(body, '=', blen);
    size_t nlen = eq ? (size_t)(eq - body) : blen;
    bool greedy = !eq && nlen >= 3 && memcmp(body + nlen - 3, "...", 3) == 0;
    if (greedy)
        nlen -= 3;
    if (!name_ok(body, nlen, "-_"))
        return fail(ps, "\"%s\": bad capture name in \"%.*s\" (letters, digits, - _, at most %d bytes)",
                    pat, (int)len, seg, RULES_NAME_MAX);
    out->kind = greedy ? RULES_SEG_GREEDY : RULES_SEG_CAPTURE;
    if (mode == PAT_REFERENCE) {
        if (eq)
            return fail(ps, "\"%s\": <name=...> only in the legacy pattern", pat);
        int ci = rules_capture_find(r, body, nlen);
        if (ci < 0)
            return fail(ps, "\"%s\": unknown capture <%.*s>", pat, (int)nlen, body);
        if (r->cap[ci].greedy != greedy)
            return fail(ps, "\"%s\": <%s> is %sgreedy: write <%s%s>", pat, r->cap[ci].name,
                        greedy ? "not " : "", r->cap[ci].name, greedy ? "" : "...");
        out->cap = ci;
        return 0;
    }
    if ((nlen == 1 && (body[0] == 'b' || body[0] == 'p')))
        return fail(ps, "\"%s\": capture name \"%c\" is reserved", pat, body[0]);
    if (rules_capture_find(r, body, nlen) >= 0)
        return fail(ps, "\"%s\": capture <%.*s> appears twice", pat, (int)nlen, body);
    if (r->ncap == RULES_MAX_CAPTURES)
        return fail(ps, "\"%s\": more than %d captures", pat, RULES_MAX_CAPTURES);
    struct rules_capture *c = &r->cap[r->ncap];
    memcpy(c->name, body, nlen);
    c->name[nlen] = '\0';
    c->greedy = greedy;
    out->cap = (int)r->ncap++;
    if (eq)
        return alts_parse(ps, pat, c, eq + 1, blen - nlen - 1);
    return 0;
}

static int seg_parse(struct parser *ps, struct rules_rule *r, enum pat_mode mode, const char *pat,
                     const char *seg, size_t len, bool last, struct rules_seg *out)
{
    out->text = seg;
    out->len = len;
    out->cap = -1;
    if (len >= 2 && seg[0] == '<' && seg[len - 1] == '>' && !memchr(seg + 1, '<', len - 2) &&
        !memchr(seg + 1, '>', len - 2))
        return capture_seg_parse(ps, r, mode, pat, seg, len, out);
    if (len == 1 && seg[0] == '*') {
        if (mode != PAT_KEEP || !last)
            return fail(ps, "\"%s\": * only as the last segment of a keep pattern", pat);
        out->kind = RULES_SEG_REST;
        return 0;
    }
    if (memchr(seg, '<', len) || memchr(seg, '>', len) || memchr(seg, '*', len))
        return fail(ps, "\"%s\": segment \"%.*s\" is neither a literal nor a capture "
                    "(<name>, <name...>, <name=a|b>)", pat, (int)len, seg);
    out->kind = RULES_SEG_LITERAL;
    return 0;
}

/* A ':'-separated pattern; LEGACY and keep patterns start with the prefix `p:`. */
static int pattern_parse(struct parser *ps, struct rules_rule *r, enum pat_mode mode,
                         const char *pat, struct rules_pattern *out)
{
    const char *s = pat;
    if (mode != PAT_REFERENCE) {
        if (strncmp(pat, "p:", 2) != 0)
            return fail(ps, "\"%s\" must start with p: (the prefix)", pat);
        s += 2;
    }
    out->greedy = -1;
    out->nseg = 0;
    for (;;) {
        const char *colon = strchr(s, ':');
        size_t len = colon ? (size_t)(colon - s) : strlen(s);
        if (out->nseg == RULES_MAX_SEGS)
            return fail(ps, "\"%s\": more than %d segments", pat, RULES_MAX_SEGS);
        struct rules_seg *seg = &out->seg[out->nseg];
        if (seg_parse(ps, r, mode, pat, s, len, !colon, seg) < 0)
            return -1;
        if (seg->kind == RULES_SEG_GREEDY || seg->kind == RULES_SEG_REST) {
            if (out->greedy >= 0)
                return fail(ps, "\"%s\": more than one greedy capture", pat);
            out->greedy = (int)out->nseg;
        }
        out->nseg++;
        if (!colon)
            return 0;
        s = colon + 1;
    }
}

static int piece_add(struct parser *ps, const char *tpl, struct rules_template *t,
                     enum rules_piece_kind kind, const char *text, size_t len, int cap)
{
    if (t->npiece == RULES_MAX_PIECES)
        return fail(ps, "\"%s\": more than %d pieces", tpl, RULES_MAX_PIECES);
    t->piece[t->npiece++] = (struct rules_piece){ kind, text, len, cap };
    if (kind == RULES_PIECE_LITERAL)
        t->literal_len += len;
    return 0;
}

/* `<...>` of a template: body[0..len) between the brackets. */
static int placeholder_parse(struct parser *ps, struct rules_rule *r, const char *tpl,
                             struct rules_template *t, const char *body, size_t len,
                             unsigned *used)
{
    if (len == 1 && body[0] == 'b') {
        if (r->id_cap < 0)
            return fail(ps, "\"%s\": <b> needs a capture named id", tpl);
        r->bucket = true;
        return piece_add(ps, tpl, t, RULES_PIECE_BUCKET, body, len, -1);
    }
    if (memchr(body, '=', len))
        return fail(ps, "\"%s\": <name=...> only in the legacy pattern", tpl);
    bool greedy = len >= 3 && memcmp(body + len - 3, "...", 3) == 0;
    size_t nlen = greedy ? len - 3 : len;
    int ci = rules_capture_find(r, body, nlen);
    if (ci < 0)
        return fail(ps, "\"%s\": unknown capture <%.*s>", tpl, (int)len, body);
    if (r->cap[ci].greedy != greedy)
        return fail(ps, "\"%s\": <%s> is %sgreedy: write <%s%s>", tpl, r->cap[ci].name,
                    greedy ? "not " : "", r->cap[ci].name, greedy ? "" : "...");
    if (*used & (1u << ci))
        return fail(ps, "\"%s\": capture <%s> used twice", tpl, r->cap[ci].name);
    *used |= 1u << ci;
    return piece_add(ps, tpl, t, RULES_PIECE_CAPTURE, body, len, ci);
}

/* After a placeholder: the end, or a literal that an encoded value cannot hold. */
static int boundaries_check(struct parser *ps, const char *tpl, const struct rules_template *t)
{
    for (size_t i = 1; i < t->npiece; i++) {
        const struct rules_piece *p = &t->piece[i];
        if (p->kind == RULES_PIECE_LITERAL)
            continue;
        const struct rules_piece *next = i + 1 < t->npiece ? &t->piece[i + 1] : NULL;
        if (next && (next->kind != RULES_PIECE_LITERAL ||
                     !rules_must_encode((unsigned char)next->text[0]) || next->text[0] == '%'))
            return fail(ps, "\"%s\": <%.*s> must be followed by the end or one of %s", tpl,
                        (int)p->len, p->text, STOP_BYTES);
    }
    return 0;
}

/* A CLUSTER or INDEX template; *used collects the captures it names. */
static int template_parse(struct parser *ps, struct rules_rule *r, const char *tpl,
                          struct rules_template *t, unsigned *used)
{
    if (strncmp(tpl, "p:", 2) != 0)
        return fail(ps, "\"%s\" must start with p: (the prefix)", tpl);
    t->npiece = 0;
    t->literal_len = 0;
    piece_add(ps, tpl, t, RULES_PIECE_PREFIX, tpl, 1, -1);
    const char *s = tpl + 1;
    while (*s) {
        const char *lt = strchr(s, '<');
        size_t lit = lt ? (size_t)(lt - s) : strlen(s);
        if (memchr(s, '>', lit))
            return fail(ps, "\"%s\": stray >", tpl);
        if (lit > 0 && piece_add(ps, tpl, t, RULES_PIECE_LITERAL, s, lit, -1) < 0)
            return -1;
        if (!lt)
            break;
        const char *gt = strchr(lt, '>');
        const char *lt2 = strchr(lt + 1, '<');
        if (!gt || (lt2 && lt2 < gt))
            return fail(ps, "\"%s\": unterminated <", tpl);
        if (placeholder_parse(ps, r, tpl, t, lt + 1, (size_t)(gt - lt - 1), used) < 0)
            return -1;
        s = gt + 1;
    }
    return boundaries_check(ps, tpl, t);
}

/* The hash tag of a template's text: from the first '{' to the first '}' after it. */
static bool tag_of(const char *tpl, const char **tag, size_t *len)
{
    const char *open = strchr(tpl, '{');
    const char *close = open ? strchr(open + 1, '}') : NULL;
    if (!close || close == open + 1)
        return false;
    *tag = open;
    *len = (size_t)(close - open + 1);
    return true;
}

static int index_parse(struct parser *ps, struct rules_rule *r, const char *cluster,
                       const char *index, const char *member)
{
    const char *tag, *itag;
    size_t taglen, itaglen;
    unsigned in_index = 0, in_member = 0;
    if (!tag_of(cluster, &tag, &taglen))
        return fail(ps, "\"%s\": an indexed rule's cluster pattern needs a hash tag {...}",
                    cluster);
    if (template_parse(ps, r, index, &r->index, &in_index) < 0)
        return -1;
    if (!tag_of(index, &itag, &itaglen) || itaglen != taglen || memcmp(tag, itag, taglen) != 0)
        return fail(ps, "index \"%s\" is not in the record's slot: its hash tag must be %.*s",
                    index, (int)taglen, tag);
    if (pattern_parse(ps, r, PAT_REFERENCE, member, &r->member) < 0)
        return -1;
    for (size_t i = 0; i < r->member.nseg; i++) {
        int ci = r->member.seg[i].cap;
        if (ci < 0)
            continue;
        if (in_member & (1u << ci))
            return fail(ps, "\"%s\": capture <%s> used twice", member, r->cap[ci].name);
        in_member |= 1u << ci;
    }
    for (size_t i = 0; i < r->ncap; i++) {
        if ((in_index & in_member) & (1u << i))
            return fail(ps, "capture <%s> is in both the index and the member", r->cap[i].name);
        if (!((in_index | in_member) & (1u << i)))
            return fail(ps, "capture <%s> is in neither the index nor the member",
                        r->cap[i].name);
    }
    r->indexed = true;
    return 0;
}

static const char *const copy_names[] = {
    [RULES_COPY_PLAIN] = "plain", [RULES_COPY_GREATER] = "greater",
    [RULES_COPY_TOKEN] = "token", [RULES_COPY_NEVER] = "never",
    [RULES_COPY_LOG] = "log", [RULES_COPY_ITEM] = "item",
};

const char *rules_copy_name(enum rules_copy copy)
{
    return copy_names[copy];
}

/* copy MODE at tok[*i]; *i moves past it. */
static int copy_parse(struct parser *ps, struct rules_rule *r, char **tok, size_t ntok, size_t *i)
{
    static const char usage[] = "expected copy plain|greater|token|never|log ITEM|item";
    if (r->kind == RULES_KEEP)
        return fail(ps, "a keep takes no copy mode (its keys are copied as they are)");
    if (++*i == ntok)
        return fail(ps, "%s", usage);
    for (size_t m = 0; m < sizeof copy_names / sizeof *copy_names; m++)
        if (strcmp(tok[*i], copy_names[m]) == 0)
            r->copy = (enum rules_copy)m;
    if (r->copy == RULES_COPY_PLAIN && strcmp(tok[*i], "plain") != 0)
        return fail(ps, "%s", usage);
    if (r->copy == RULES_COPY_LOG) {
        if (++*i == ntok)
            return fail(ps, "copy log needs the name of its item rule");
        r->copy_item = tok[*i];
    }
    ++*i;
    return 0;
}

/* The alternative of capture c named by [s, s + len); -1 when none. */
static int alt_find(const struct rules_capture *c, const char *s, size_t len)
{
    for (size_t a = 0; a < c->nalt; a++)
        if (c->alt_len[a] == len && memcmp(c->alt[a], s, len) == 0)
            return (int)a;
    return -1;
}

/* ticket A>B: the first constrained capture that lists both. */
static int ticket_parse(struct parser *ps, struct rules_rule *r, const char *spec)
{
    const char *gt = strchr(spec, '>');
    if (!gt || gt == spec || !gt[1])
        return fail(ps, "expected live ticket A>B (two values of a constrained capture)");
    for (size_t c = 0; c < r->ncap; c++) {
        int more = alt_find(&r->cap[c], spec, (size_t)(gt - spec));
        int less = alt_find(&r->cap[c], gt + 1, strlen(gt + 1));
        if (more >= 0 && less >= 0 && more != less) {
            r->ticket_cap = (int)c;
            r->ticket_more = (size_t)more;
            r->ticket_less = (size_t)less;
            r->live = RULES_LIVE_TICKET;
            return 0;
        }
    }
    return fail(ps, "live ticket %s: no constrained capture <name=...> of this rule lists "
                "both values", spec);
}

/* live SIGN at tok[*i]; *i moves past it. */
static int live_parse(struct parser *ps, struct rules_rule *r, char **tok, size_t ntok, size_t *i)
{
    static const char usage[] = "expected live heartbeat or live ticket A>B";
    if (*i + 1 < ntok && strcmp(tok[*i + 1], "heartbeat") == 0) {
        r->live = RULES_LIVE_HEARTBEAT;
        *i += 2;
        return 0;
    }
    if (*i + 2 < ntok && strcmp(tok[*i + 1], "ticket") == 0) {
        if (r->kind == RULES_KEEP)
            return fail(ps, "a keep has no captures: live ticket needs a rule");
        *i += 3;
        return ticket_parse(ps, r, tok[*i - 1]);
    }
    return fail(ps, "%s", usage);
}

/* The clauses after a rule or a keep from tok[i]: copy MODE, live SIGN,
 * each once; another word fails with the directive's usage. */
static int clauses_parse(struct parser *ps, struct rules_rule *r, char **tok, size_t ntok,
                         size_t i, const char *usage)
{
    bool copy = false, live = false;
    while (i < ntok) {
        bool is_copy = strcmp(tok[i], "copy") == 0;
        if (!is_copy && strcmp(tok[i], "live") != 0)
            return fail(ps, "%s", usage);
        if (is_copy ? copy : live)
            return fail(ps, "%s given twice", tok[i]);
        if (is_copy)
            copy = true;
        else
            live = true;
        if ((is_copy ? copy_parse(ps, r, tok, ntok, &i) : live_parse(ps, r, tok, ntok, &i)) < 0)
            return -1;
    }
    return 0;
}

/* rule NAME LEGACY -> CLUSTER [index INDEX member MEMBER] [copy MODE] [live SIGN] */
static int rule_parse(struct parser *ps, struct rules_rule *r, char **tok, size_t ntok)
{
    static const char usage[] = "expected rule NAME LEGACY -> CLUSTER [index INDEX member MEMBER] "
                                "[copy MODE] [live SIGN]";
    if (ntok < 5 || strcmp(tok[3], "->") != 0)
        return fail(ps, "%s", usage);
    bool indexed = ntok > 5 && strcmp(tok[5], "index") == 0;
    if (indexed && (ntok < 9 || strcmp(tok[7], "member") != 0))
        return fail(ps, "%s", usage);
    if (!name_ok(tok[1], strlen(tok[1]), "-_."))
        return fail(ps, "bad rule name \"%s\" (letters, digits, - _ ., at most %d bytes)",
                    tok[1], RULES_NAME_MAX);
    strcpy(r->name, tok[1]);
    r->kind = RULES_REWRITE;
    r->pattern = tok[2];
    if (pattern_parse(ps, r, PAT_DEFINE, tok[2], &r->legacy) < 0)
        return -1;
    r->id_cap = rules_capture_find(r, "id", 2);
    unsigned used = 0;
    if (template_parse(ps, r, tok[4], &r->cluster, &used) < 0)
        return -1;
    for (size_t i = 0; i < r->ncap; i++)
        if (!(used & (1u << i)))
            return fail(ps, "\"%s\": capture <%s%s> of the legacy pattern is missing", tok[4],
                        r->cap[i].name, r->cap[i].greedy ? "..." : "");
    if (indexed && index_parse(ps, r, tok[4], tok[6], tok[8]) < 0)
        return -1;
    return clauses_parse(ps, r, tok, ntok, indexed ? 9 : 5, usage);
}

/* keep PATTERN [live SIGN] */
static int keep_parse(struct parser *ps, struct rules_rule *r, char **tok, size_t ntok)
{
    static const char usage[] = "expected keep PATTERN [live SIGN]";
    if (ntok < 2)
        return fail(ps, "%s", usage);
    r->kind = RULES_KEEP;
    snprintf(r->name, sizeof r->name, "%s", tok[1]);
    r->id_cap = -1;
    r->pattern = tok[1];
    if (pattern_parse(ps, r, PAT_KEEP, tok[1], &r->legacy) < 0)
        return -1;
    return clauses_parse(ps, r, tok, ntok, 2, usage);
}

/* Whether item has every capture of log, by name and kind, and one more:
 * the one a member of the log fills (set in item->item_cap). */
static bool item_shape_ok(const struct rules_rule *log, struct rules_rule *item)
{
    if (item->ncap != log->ncap + 1)
        return false;
    unsigned seen = 0;
    for (size_t c = 0; c < log->ncap; c++) {
        int k = rules_capture_find(item, log->cap[c].name, strlen(log->cap[c].name));
        if (k < 0 || item->cap[k].greedy != log->cap[c].greedy)
            return false;
        seen |= 1u << k;
    }
    for (size_t k = 0; k < item->ncap; k++)
        if (!(seen & (1u << k)))
            item->item_cap = (int)k;
    return true;
}

static struct rules_rule *rule_find(struct rules *rules, const char *name)
{
    for (size_t i = 0; i < rules->nrule; i++)
        if (rules->rule[i].kind == RULES_REWRITE && strcmp(rules->rule[i].name, name) == 0)
            return &rules->rule[i];
    return NULL;
}

/* Each copy log tied to its item rule and back, once the file is read. */
static int pairs_resolve(struct parser *ps, struct rules *rules)
{
    for (size_t i = 0; i < rules->nrule; i++) {
        struct rules_rule *log = &rules->rule[i], *item;
        if (log->copy != RULES_COPY_LOG)
            continue;
        ps->line = log->line;
        if (!(item = rule_find(rules, log->copy_item)) || item->copy != RULES_COPY_ITEM)
            return fail(ps, "copy log %s: no rule %s with copy item in the file",
                        log->copy_item, log->copy_item);
        if (item->pair)
            return fail(ps, "copy log %s: rule %s is already the items of the log on line %d",
                        item->name, item->name, item->pair->line);
        if (!item_shape_ok(log, item))
            return fail(ps, "copy log %s: rule %s must have every capture of the log and "
                        "exactly one more (the log's member)", item->name, item->name);
        log->pair = item;
        item->pair = log;
    }
    for (size_t i = 0; i < rules->nrule; i++)
        if (rules->rule[i].copy == RULES_COPY_ITEM && !rules->rule[i].pair) {
            ps->line = rules->rule[i].line;
            return fail(ps, "rule %s is copy item, but no rule's copy log names it",
                        rules->rule[i].name);
        }
    return 0;
}

/* Cut line (NUL-terminated, ours) into tokens in place; a '#' token ends it. */
static size_t tokenize(char *line, char **tok)
{
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, " \t\r\v\f", &save); t; t = strtok_r(NULL, " \t\r\v\f", &save)) {
        if (t[0] == '#')
            break;
        if (n == MAX_TOKENS)
            return MAX_TOKENS + 1;
        tok[n++] = t;
    }
    return n;
}

static void rule_clear(struct rules_rule *r)
{
    for (size_t i = 0; i < r->ncap; i++)
        for (size_t j = 0; j < r->cap[i].nalt; j++)
            free(r->cap[i].alt_enc[j]);
    free(r->text);
}

void rules_free(struct rules *rules)
{
    if (!rules)
        return;
    for (size_t i = 0; i < rules->nrule; i++)
        rule_clear(&rules->rule[i]);
    free(rules->rule);
    free(rules->file);
    free(rules);
}

static size_t pattern_literal_len(const struct rules_pattern *p)
{
    size_t n = p->nseg;   /* the ':' before each segment */
    for (size_t i = 0; i < p->nseg; i++)
        if (p->seg[i].kind == RULES_SEG_LITERAL)
            n += p->seg[i].len;
    return n;
}

static void literal_max_update(struct rules *rules, const struct rules_rule *r)
{
    size_t n[4] = { pattern_literal_len(&r->legacy), r->cluster.literal_len,
                    r->index.literal_len, pattern_literal_len(&r->member) };
    for (size_t i = 0; i < 4; i++)
        if (n[i] > rules->literal_max)
            rules->literal_max = n[i];
    for (size_t i = 0; i < r->ncap; i++)
        for (size_t j = 0; j < r->cap[i].nalt; j++)
            if (r->cap[i].alt_enc_len[j] > rules->literal_max)
                rules->literal_max = r->cap[i].alt_enc_len[j];
}

/* One line, already cut into tokens; line is kept by the rule it makes. */
static int line_parse(struct parser *ps, struct rules *rules, char *line, char **tok, size_t ntok)
{
    struct rules_rule r;
    memset(&r, 0, sizeof r);
    r.file = rules->file;
    r.line = ps->line;
    r.text = line;
    r.item_cap = r.ticket_cap = -1;
    int rc;
    if (strcmp(tok[0], "rule") == 0)
        rc = rule_parse(ps, &r, tok, ntok);
    else if (strcmp(tok[0], "keep") == 0)
        rc = keep_parse(ps, &r, tok, ntok);
    else
        rc = fail(ps, "unknown directive \"%s\" (expected rule or keep)", tok[0]);
    const struct rules_rule *first = rc == 0 && r.kind == RULES_REWRITE
                                     ? rule_find(rules, r.name) : NULL;
    if (first)
        rc = fail(ps, "duplicate rule name \"%s\" (first on line %d)", r.name, first->line);
    if (rc == 0) {
        struct rules_rule *grown = realloc(rules->rule, (rules->nrule + 1) * sizeof *grown);
        rc = grown ? 0 : fail(ps, "out of memory");
        if (grown) {
            rules->rule = grown;
            rules->rule[rules->nrule++] = r;
            literal_max_update(rules, &r);
            return 0;
        }
    }
    rule_clear(&r);
    return -1;
}

struct rules *rules_load_string(const char *name, const char *text, size_t len,
                                char *err, size_t errlen)
{
    struct parser ps = { name, 0, err, errlen };
    struct rules *rules = calloc(1, sizeof *rules);
    if (!rules || !(rules->file = strdup(name))) {
        free(rules);
        snprintf(err, errlen, "%s: out of memory", name);
        return NULL;
    }
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        ps.line++;
        char *line = NULL;
        char *tok[MAX_TOKENS];
        if (memchr(text + pos, '\0', n)) {
            fail(&ps, "a NUL byte in the line");
            goto fail;
        }
        line = strndup(text + pos, n);
        if (!line) {
            fail(&ps, "out of memory");
            goto fail;
        }
        pos += n + (nl ? 1 : 0);
        size_t ntok = tokenize(line, tok);
        if (ntok > MAX_TOKENS) {
            free(line);
            fail(&ps, "more than %d words on the line", MAX_TOKENS);
            goto fail;
        }
        if (ntok == 0) {
            free(line);
            continue;
        }
        if (line_parse(&ps, rules, line, tok, ntok) < 0)
            goto fail;
    }
    if (pairs_resolve(&ps, rules) < 0)
        goto fail;
    return rules;
fail:
    rules_free(rules);
    return NULL;
}

struct rules *rules_load_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            char *grown = cap < (1u << 24) ? realloc(text, cap ? cap * 2 : 4096) : NULL;
            if (!grown) {
                snprintf(err, errlen, "%s: too large or out of memory", path);
                free(text);
                fclose(f);
                return NULL;
            }
            text = grown;
            cap = cap ? cap * 2 : 4096;
        }
        size_t n = fread(text + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    struct rules *rules = NULL;
    if (bad)
        snprintf(err, errlen, "%s: read error", path);
    else
        rules = rules_load_string(path, text, len, err, errlen);
    free(text);
    return rules;
}
