/*
 * confline: the syntax of a conf line, as redis.conf reads it, both ways.
 * Reading cuts a line into words (blanks between them; "double quotes"
 * with \n \r \t \b \a \\ \" \xHH escapes, 'single quotes' with \'),
 * for the config file, the environment and Redis's ACL file; writing quotes
 * a word so that reading gives it back (--dump-config).
 */
#ifndef TAGPROXY_CONFLINE_H
#define TAGPROXY_CONFLINE_H

#include <stdio.h>

/* The words of a line (v[0..n)), each a NUL-terminated copy. */
struct confline_args {
    char **v;
    int n, cap;
};

/* A word being read (confline_args_push takes it). */
struct confline_word {
    char *p;
    size_t len, cap;
};

/* s's words appended to a: NULL, or why s is not a line (a's words freed). */
const char *confline_split(const char *s, struct confline_args *a);

/* w appended to a (a copy; w is reset): 0, or -1 out of memory. */
int confline_args_push(struct confline_args *a, struct confline_word *w);

void confline_args_free(struct confline_args *a);

/* s without its leading and trailing blanks (in place). */
char *confline_trim(char *s);

/* A space or a tab. */
int confline_is_blank(char ch);

/* " WORD", quoted when it must be. */
void confline_put_arg(FILE *out, const char *s);

/* " SIZE" in the largest binary unit that holds it whole (1gb, 64mb, 0). */
void confline_put_memory(FILE *out, long long v);

/* "# NAME (unset)" on a line of its own. */
void confline_put_unset(FILE *out, const char *name);

/* "NAME ARG..." on a line of its own. */
void confline_put_line(FILE *out, const char *name, const char *const *args, int n);

#endif
