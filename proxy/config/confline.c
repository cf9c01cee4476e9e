/*
 * confline: the conf syntax, read and written. See confline.h.
 */
#include "proxy/config/confline.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading: a line into arguments, as redis.conf does ---- */

void confline_args_free(struct confline_args *a)
{
    for (int i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}

static int word_add(struct confline_word *w, char ch)
{
    if (w->len + 1 >= w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 32;
        char *p = realloc(w->p, cap);
        if (!p)
            return -1;
        w->p = p;
        w->cap = cap;
    }
    w->p[w->len++] = ch;
    w->p[w->len] = '\0';
    return 0;
}

int confline_args_push(struct confline_args *a, struct confline_word *w)
{
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 8;
        char **v = realloc(a->v, sizeof *v * (size_t)cap);
        if (!v)
            return -1;
        a->v = v;
        a->cap = cap;
    }
    if (!w->p && !(w->p = strdup("")))     /* "" still needs its own string */
        return -1;
    a->v[a->n++] = w->p;
    w->p = NULL;
    w->len = w->cap = 0;
    return 0;
}

int confline_is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

static int hex_value(char ch)
{
    return isdigit((unsigned char)ch) ? ch - '0' : tolower((unsigned char)ch) - 'a' + 10;
}

/* Inside "double quotes": one escape at *p (a backslash). Returns the byte
 * and advances *p past what it consumed, but for the last byte. */
static char unescape(const char **pp)
{
    const char *p = *pp;

    if (p[1] == 'x' && isxdigit((unsigned char)p[2]) && isxdigit((unsigned char)p[3])) {
        *pp = p + 3;
        return (char)(hex_value(p[2]) * 16 + hex_value(p[3]));
    }
    *pp = p + 1;
    switch (p[1]) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'b': return '\b';
    case 'a': return '\a';
    default:  return p[1];
    }
}

enum quote { QUOTE_NONE, QUOTE_DOUBLE, QUOTE_SINGLE };

/*
 * One word starting at *pp (not blank). Returns NULL and advances *pp past
 * it, or a complaint. Outside quotes a quote character opens quoting even in
 * the middle of a word; a closing quote must end the word.
 */
static const char *split_word(const char **pp, struct confline_word *w)
{
    const char *p = *pp;
    enum quote q = QUOTE_NONE;
    int nul = 0;

    for (;; p++) {
        char ch = *p;
        if (q != QUOTE_NONE && ch == '\0')
            return "unbalanced quotes";
        if (q == QUOTE_NONE && (ch == '\0' || confline_is_blank(ch)))
            break;
        if (q == QUOTE_NONE && (ch == '"' || ch == '\'')) {
            q = ch == '"' ? QUOTE_DOUBLE : QUOTE_SINGLE;
            continue;
        }
        if ((q == QUOTE_DOUBLE && ch == '"') || (q == QUOTE_SINGLE && ch == '\'')) {
            if (p[1] && !confline_is_blank(p[1]))
                return "a closing quote must be followed by a space";
            p++;
            break;
        }
        if (q == QUOTE_DOUBLE && ch == '\\' && p[1])
            ch = unescape(&p);
        else if (q == QUOTE_SINGLE && ch == '\\' && p[1] == '\'')
            ch = *++p;
        nul |= ch == '\0';
        if (word_add(w, ch) < 0)
            return "out of memory";
    }
    *pp = p;
    return nul ? "an argument contains a NUL byte" : NULL;
}

/* Split s into a (empty on entry). Returns NULL, or a complaint. */
const char *confline_split(const char *s, struct confline_args *a)
{
    const char *why = NULL;
    struct confline_word w = { NULL, 0, 0 };

    for (;;) {
        while (confline_is_blank(*s))
            s++;
        if (!*s)
            break;
        why = split_word(&s, &w);
        if (!why && confline_args_push(a, &w) < 0)
            why = "out of memory";
        if (why)
            break;
    }
    free(w.p);
    if (why)
        confline_args_free(a);
    return why;
}

char *confline_trim(char *s)
{
    char *e = s + strlen(s);

    while (confline_is_blank(*s))
        s++;
    while (e > s && confline_is_blank(e[-1]))
        *--e = '\0';
    return s;
}

/* ---- writing: arguments the reading gives back ---- */

void confline_put_arg(FILE *out, const char *s)
{
    int plain = *s != '\0';
    for (const unsigned char *p = (const unsigned char *)s; *p && plain; p++)
        plain = isgraph(*p) && *p != '"' && *p != '\'' && *p != '\\';
    fputc(' ', out);
    if (plain) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (isprint(*p))
            fputc(*p, out);
        else
            fprintf(out, "\\x%02x", *p);
    }
    fputc('"', out);
}

void confline_put_memory(FILE *out, long long v)
{
    static const struct { const char *unit; long long size; } units[] = {
        { "gb", 1LL << 30 }, { "mb", 1LL << 20 }, { "kb", 1LL << 10 },
    };
    for (size_t i = 0; v != 0 && i < sizeof units / sizeof *units; i++)
        if (v % units[i].size == 0) {
            fprintf(out, " %lld%s", v / units[i].size, units[i].unit);
            return;
        }
    fprintf(out, " %lld", v);
}

void confline_put_unset(FILE *out, const char *name)
{
    fprintf(out, "# %s (unset)\n", name);
}

void confline_put_line(FILE *out, const char *name, const char *const *args, int n)
{
    fputs(name, out);
    for (int i = 0; i < n; i++)
        confline_put_arg(out, args[i]);
    fputc('\n', out);
}
