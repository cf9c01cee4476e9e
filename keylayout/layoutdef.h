/*
 * layoutdef: the members of a loaded layout, for the two modules that make
 * and read them: layoutload.c builds a layout, layout.c maps names by it.
 * Every other module holds a struct layout by pointer only (layout.h).
 */
#ifndef TAGPROXY_LAYOUTDEF_H
#define TAGPROXY_LAYOUTDEF_H

#include <stddef.h>

#include "keylayout/rules.h"

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

#endif
