/*
 * layoutload: a layout built from its rules files. See layoutload.h.
 */
#include "keylayout/layoutload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keylayout/layoutdef.h"
#include "keylayout/overlap.h"

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
