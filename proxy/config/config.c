/*
 * config: the three sources (file, environment, command line) applied in
 * that order to a struct config_loader (directives.h). Only when every
 * source has been applied without an error is the built config handed to
 * the caller, so a bad line never leaves a half-filled config behind.
 */
#include "proxy/config/config.h"

#include "proxy/config/confline.h"
#include "keylayout/layout.h"
#include "keylayout/layoutload.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- applying one directive ---- */

static int apply_named(struct config_loader *l, const char *name, const char *where,
                       int argc, char **argv, char *err, size_t errlen)
{
    const struct directive *d = directive_find(name);

    if (!d) {
        snprintf(err, errlen, "%s: unknown directive '%.64s'", where, name);
        return -1;
    }
    return directive_apply(l, d, where, argc, argv, err, errlen);
}

int config_set_value(struct config *c, const char *name, int argc, char **argv, char *err,
                     size_t errlen)
{
    const struct directive *d = directive_find(name);
    if (!d || !directive_is_live(d)) {
        snprintf(err, errlen, "'%s' is not a value the running proxy can change", name);
        return -1;
    }
    struct config_loader l;
    memset(&l, 0, sizeof l);
    l.c = *c;
    if (directive_apply(&l, d, "CONFIG SET", argc, argv, err, errlen) < 0) {
        if (l.why[0])                   /* the value's fault, without the where */
            snprintf(err, errlen, "%s", l.why);
        return -1;
    }
    *c = l.c;
    return 0;
}

/* ---- the three sources ---- */

static int load_line(struct config_loader *l, char *line, const char *where,
                     char *err, size_t errlen)
{
    struct confline_args a = { NULL, 0, 0 };
    const char *why;
    int rc;

    line = confline_trim(line);
    if (*line == '\0' || *line == '#')
        return 0;
    why = confline_split(line, &a);
    if (why) {
        snprintf(err, errlen, "%s: %s", where, why);
        return -1;
    }
    rc = apply_named(l, a.v[0], where, a.n - 1, a.v + 1, err, errlen);
    confline_args_free(&a);
    return rc;
}

static int load_file(struct config_loader *l, const char *path, char *err, size_t errlen)
{
    char where[CONFIG_WHERE_MAX], *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, rc = 0;
    FILE *f = fopen(path, "r");

    if (!f) {
        snprintf(err, errlen, "%s: cannot open config file: %s", path, strerror(errno));
        return -1;
    }
    l->source = SOURCE_FILE;
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        snprintf(where, sizeof where, "%s:%d", path, ++lineno);
        if (strlen(line) != (size_t)len) {
            snprintf(err, errlen, "%s: the line contains a NUL byte", where);
            rc = -1;
        } else {
            rc = load_line(l, line, where, err, errlen);
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "%s: cannot read config file: %s", path, strerror(errno));
        rc = -1;
    }
    free(line);
    fclose(f);
    return rc;
}

/* "client-query-buffer-limit" -> "TAGPROXY_CLIENT_QUERY_BUFFER_LIMIT" */
static void env_name(const char *directive, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "TAGPROXY_%s", directive);

    for (size_t i = 0; i < n && i < len; i++)
        buf[i] = buf[i] == '-' ? '_' : (char)toupper((unsigned char)buf[i]);
}

static const char *env_lookup(char **envp, const char *name)
{
    size_t n = strlen(name);

    for (; envp && *envp; envp++)
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return *envp + n + 1;
    return NULL;
}

static int load_env_line(struct config_loader *l, const struct directive *d, const char *name,
                         const char *value, char *err, size_t errlen)
{
    char where[CONFIG_WHERE_MAX];
    struct confline_args a = { NULL, 0, 0 };
    struct confline_word empty = { NULL, 0, 0 };
    const char *why;
    int rc;

    snprintf(where, sizeof where, "env %s", name);
    why = confline_split(value, &a);
    if (!why && a.n == 0 && confline_args_push(&a, &empty) < 0)   /* NAME= is one "" */
        why = "out of memory";
    if (why) {
        snprintf(err, errlen, "%s: %s", where, why);
        return -1;
    }
    rc = directive_apply(l, d, where, a.n, a.v, err, errlen);
    confline_args_free(&a);
    return rc;
}

static int all_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!confline_is_blank(s[i]))
            return 0;
    return 1;
}

/* Each piece of the value between separators is one line of d (blank
 * pieces, as after a last separator, are none). */
static int load_env_one(struct config_loader *l, const struct directive *d, const char *name,
                        const char *value, char *err, size_t errlen)
{
    char sep = directive_env_separator(d);
    if (!sep || !strchr(value, sep))
        return load_env_line(l, d, name, value, err, errlen);
    for (const char *p = value;;) {
        const char *cut = strchr(p, sep);
        size_t len = cut ? (size_t)(cut - p) : strlen(p);
        if (!all_blank(p, len)) {
            char *piece = strndup(p, len);
            int rc = piece ? load_env_line(l, d, name, piece, err, errlen) : -1;
            if (!piece)
                snprintf(err, errlen, "env %s: out of memory", name);
            free(piece);
            if (rc < 0)
                return -1;
        }
        if (!cut)
            return 0;
        p = cut + 1;
    }
}

static int load_env(struct config_loader *l, char **envp, char *err, size_t errlen)
{
    char name[64];
    const char *value;

    l->source = SOURCE_ENV;
    const struct directive *d;
    for (size_t i = 0; (d = directive_at(i)) != NULL; i++) {
        env_name(d->name, name, sizeof name);
        value = env_lookup(envp, name);
        if (value && load_env_one(l, d, name, value, err, errlen) < 0)
            return -1;
    }
    return 0;
}

static int is_option(const char *s)
{
    return s[0] == '-' && s[1] == '-';
}

/* As redis-server 7: the first word after --name is its argument whatever it
 * looks like; more words follow up to the next --word. */
static int load_argv(struct config_loader *l, int argc, char **argv, char *err, size_t errlen)
{
    char where[CONFIG_WHERE_MAX];
    int i = 0, j;

    l->source = SOURCE_ARGV;
    while (i < argc) {
        if (!is_option(argv[i])) {
            snprintf(err, errlen, "argv '%.64s': expected --name value", argv[i]);
            return -1;
        }
        j = i + 1 < argc ? i + 2 : i + 1;
        while (j < argc && !is_option(argv[j]))
            j++;
        snprintf(where, sizeof where, "argv %.64s", argv[i]);
        if (apply_named(l, argv[i] + 2, where, j - i - 1, argv + i + 1, err, errlen) < 0)
            return -1;
        i = j;
    }
    return 0;
}

static int check_log_file(struct config_loader *l, char *err, size_t errlen)
{
    FILE *f;

    if (!l->c.log_file)
        return 0;
    f = fopen(l->c.log_file, "a");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open log file '%s': %s",
                 l->log_file_where, l->c.log_file, strerror(errno));
        return -1;
    }
    fclose(f);
    return 0;
}

/* ---- the interface ---- */

int config_load(struct config *c, const char *path, char **envp,
                int argc, char **argv, char *err, size_t errlen)
{
    struct config_loader l;
    int rc = 0;

    config_loader_init(&l);
    if (path)
        rc = load_file(&l, path, err, errlen);
    if (rc == 0)
        rc = load_env(&l, envp, err, errlen);
    if (rc == 0)
        rc = load_argv(&l, argc, argv, err, errlen);
    if (rc == 0)
        rc = check_log_file(&l, err, errlen);
    if (rc == 0 && path && !(l.c.path = strdup(path))) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = -1;
    }
    if (rc < 0) {
        config_free(&l.c);
        return -1;
    }
    *c = l.c;
    return 0;
}

int config_load_main(struct config *c, int argc, char **argv, char **envp,
                     char *err, size_t errlen)
{
    int first = 1;
    const char *path = NULL;

    if (argc > 1 && !is_option(argv[1])) {
        path = argv[1];
        first = 2;
    }
    if (argc < first)
        first = argc;
    return config_load(c, path, envp, argc - first, argv + first, err, errlen);
}

int config_validate_layout(const struct config *c, char *err, size_t errlen)
{
    int uses_default = 0;
    for (int i = 0; i < c->nlayout_rules; i++) {
        if (c->layout_rules[i].nprefix > 0)
            continue;
        uses_default = 1;
        if (c->nlayout_prefix == 0) {
            snprintf(err, errlen, "layout-rules %.200s is set but no layout-prefix is given "
                     "(directive: layout-prefix P, one per prefix the rules serve; or "
                     "layout-rules FILE P ...)", c->layout_rules[i].path);
            return -1;
        }
    }
    if (c->nlayout_prefix > 0 && !c->layout_rules) {
        snprintf(err, errlen, "layout-prefix is set but no layout-rules file is given "
                 "(directive: layout-rules PATH)");
        return -1;
    }
    if (c->nlayout_prefix > 0 && !uses_default) {
        snprintf(err, errlen, "layout-prefix is set but every layout-rules file names its own "
                 "prefixes, so none serves it");
        return -1;
    }
    return 0;
}

int config_validate(const struct config *c, char *err, size_t errlen)
{
    if (c->ncluster == 0) {
        snprintf(err, errlen, "no cluster seed given (directive: cluster HOST:PORT)");
        return -1;
    }
    if (config_validate_layout(c, err, errlen) < 0)
        return -1;
    if (c->tls_listen && (!c->tls_cert_file || !c->tls_key_file)) {
        snprintf(err, errlen, "tls-listen needs tls-cert-file and tls-key-file");
        return -1;
    }
    if (c->tls_listen && c->tls_auth_clients != TLS_VERIFY_NONE && !c->tls_ca_cert_file) {
        snprintf(err, errlen, "tls-auth-clients %s needs tls-ca-cert-file (the CA that signs "
                 "client certificates); or set tls-auth-clients no",
                 c->tls_auth_clients == TLS_VERIFY_REQUIRED ? "yes" : "optional");
        return -1;
    }
    if (!c->cluster_tls_cert_file != !c->cluster_tls_key_file) {
        snprintf(err, errlen, "cluster-tls-cert-file and cluster-tls-key-file go together");
        return -1;
    }
    return 0;
}

const char *const *config_layout_prefixes(const struct config *c, int i, int *n)
{
    const struct config_layout_rules *r = &c->layout_rules[i];
    if (r->nprefix > 0) {
        *n = r->nprefix;
        return (const char *const *)r->prefix;
    }
    *n = c->nlayout_prefix;
    return (const char *const *)c->layout_prefix;
}

struct layout *config_layout_load(const struct config *c, char *err, size_t errlen)
{
    struct layout_source src[LAYOUT_FILES_MAX];
    int n = c->nlayout_rules < LAYOUT_FILES_MAX ? c->nlayout_rules : LAYOUT_FILES_MAX;
    for (int i = 0; i < n; i++) {
        int np;
        const char *const *p = config_layout_prefixes(c, i, &np);
        src[i] = (struct layout_source){ c->layout_rules[i].path, NULL, 0, p, (size_t)np };
    }
    return layout_load(src, (size_t)n, err, errlen);
}
