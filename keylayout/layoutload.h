/*
 * layoutload: a layout built from its rules files (keylayout/rules.h), each
 * serving its prefixes, and checked as a whole; its parts, for the tools
 * that show them (layout explain); and shared references, by which threads
 * hold a layout that a reload replaces. layout.h maps names by it.
 */
#ifndef TAGPROXY_LAYOUTLOAD_H
#define TAGPROXY_LAYOUTLOAD_H

#include <stddef.h>

#include "keylayout/rules.h"

struct layout;

/* One rules file of a layout and the prefixes it serves. */
struct layout_source {
    const char *name;              /* the file's path; with text, the name errors give */
    const char *text;              /* NULL: read the file; else text[0..len) */
    size_t len;
    const char *const *prefix;
    size_t nprefix;
};

#define LAYOUT_FILES_MAX 64
#define LAYOUT_PREFIXES_MAX 1024   /* distinct prefixes, over every file */

/* Build a layout from n rules files, each serving its prefixes. A prefix
 * served by several files is served by the rules of each, file by file;
 * those files must not match one same name (keylayout/overlap.h), as which
 * file a name belongs to would then hang on the order of the files. NULL
 * on error, with the message in err: `FILE:LINE: what is wrong` for the
 * rules, `FILE:LINE: ... and FILE:LINE: ... both match "NAME"; ...` for two
 * files that overlap, `layout-prefix "P": ...` for a prefix. Free with
 * layout_free. */
struct layout *layout_load(const struct layout_source *src, size_t n, char *err, size_t errlen);

/* layout_load of one file (path, or text[0..len) named `name`). */
struct layout *layout_load_file(const char *path, const char *const *prefixes,
                                size_t nprefixes, char *err, size_t errlen);
struct layout *layout_load_string(const char *name, const char *text, size_t len,
                                  const char *const *prefixes, size_t nprefixes,
                                  char *err, size_t errlen);
void layout_free(struct layout *l);

/* A loaded layout shared by threads: read-only, freed by its last
 * reference (the count is atomic). */
struct layout_ref {
    struct layout *layout;
    int refs;
};

/* Takes l; one reference. NULL when out of memory (l is freed). */
struct layout_ref *layout_ref_new(struct layout *l);
struct layout_ref *layout_ref_get(struct layout_ref *ref);   /* NULL-safe */
void layout_ref_put(struct layout_ref *ref);                 /* NULL-safe */

/* 0 if prefix is a valid layout-prefix (one non-empty segment, no ':', no
 * '{' or '}'), else -1 with `layout-prefix "P": why` in err. */
int layout_check_prefix(const char *prefix, char *err, size_t errlen);

/* The files, in the order given (a rule's file is also rules_rule.file). */
size_t layout_file_count(const struct layout *l);
const struct rules *layout_file_rules(const struct layout *l, size_t i);

/* Every file's prefixes, each once, in the order first given. */
size_t layout_prefix_count(const struct layout *l);
const char *layout_prefix(const struct layout *l, size_t i, size_t *len);

/* The rules and keeps prefix i is served by, in the order they are tried. */
const struct rules_rule *const *layout_prefix_rules(const struct layout *l, size_t i,
                                                     size_t *n);

#endif
