/*
 * config: the directive table, the redis.conf-style line splitter, and the
 * three sources (file, environment, command line) applied in that order to a
 * private struct loader. Only when every source has been applied without an
 * error is the built config handed to the caller, so a bad line never leaves
 * a half-filled config behind.
 */
#include "proxy/config/config.h"

#include "lib/base/hostport.h"
#include "proxy/config/acluser.h"
#include "keylayout/layout.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#define WHY_MAX   256
#define WHERE_MAX 1024

static const char default_listen[] = "127.0.0.1:6380";
static const char default_admin_listen[] = "127.0.0.1:8380";

enum source { SOURCE_FILE, SOURCE_ENV, SOURCE_ARGV };

struct loader {
    struct config c;            /* being built; handed out only on success */
    int source;                 /* the source being applied (enum source) */
    int cluster_source;         /* who filled c.cluster; -1: nobody yet */
    int address_map_source;
    int layout_prefix_source;
    int layout_rules_source;
    int users_source;
    int script_map_source;
    char log_file_where[WHERE_MAX];   /* where log-file was last set */
    char why[WHY_MAX];          /* a setter's complaint, without the WHERE */
};

struct directive;
typedef int directive_setter(struct loader *l, const struct directive *d,
                             int argc, char **argv);

struct directive {
    const char *name;
    int min_args, max_args;     /* max_args -1: no limit, -2: pairs */
    directive_setter *set;
    size_t offset;              /* the field, for the generic setters */
    long long min, max;         /* accepted range of integers and sizes */
};

/* ---- values ---- */

static int parse_int(const char *s, long long min, long long max, long long *out)
{
    const char *p = s;
    char *end;
    long long v;

    if (*p == '-')
        p++;
    if (!isdigit((unsigned char)*p))
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int config_parse_memory(const char *s, long long *out)
{
    static const struct { const char *unit; long long mul; } units[] = {
        { "", 1 }, { "b", 1 },
        { "k", 1000 }, { "kb", 1024 },
        { "m", 1000LL * 1000 }, { "mb", 1024LL * 1024 },
        { "g", 1000LL * 1000 * 1000 }, { "gb", 1024LL * 1024 * 1024 },
    };
    const char *p = s;
    long long v = 0;

    if (!isdigit((unsigned char)*p))
        return -1;
    for (; isdigit((unsigned char)*p); p++) {
        if (v > (LLONG_MAX - (*p - '0')) / 10)
            return -1;
        v = v * 10 + (*p - '0');
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(p, units[i].unit) != 0)
            continue;
        if (v > LLONG_MAX / units[i].mul)
            return -1;
        *out = v * units[i].mul;
        return 0;
    }
    return -1;
}

const char *config_log_level_name(enum log_level l)
{
    static const char *const names[] = { "debug", "verbose", "notice", "warning" };
    return (unsigned)l < sizeof names / sizeof names[0] ? names[l] : "?";
}

/* "1mb" for 1048576: the most readable exact unit, for messages. */
static void format_size(long long v, char *buf, size_t len)
{
    if (v > 0 && v % (1024LL * 1024 * 1024) == 0)
        snprintf(buf, len, "%lldgb", v / (1024LL * 1024 * 1024));
    else if (v > 0 && v % (1024LL * 1024) == 0)
        snprintf(buf, len, "%lldmb", v / (1024LL * 1024));
    else
        snprintf(buf, len, "%lld", v);
}

/* ---- setters: 0, or -1 with l->why filled ---- */

static void *field(struct loader *l, const struct directive *d)
{
    return (char *)&l->c + d->offset;
}

static void free_string(char *s)
{
    if (s != default_listen && s != default_admin_listen)
        free(s);
}

/* Replace *slot by a copy of v; "" stores NULL when empty_is_null. */
static int replace_string(struct loader *l, char **slot, const char *v, int empty_is_null)
{
    char *copy = NULL;

    if (*v || !empty_is_null) {
        copy = strdup(v);
        if (!copy) {
            snprintf(l->why, sizeof l->why, "out of memory");
            return -1;
        }
    }
    free_string(*slot);
    *slot = copy;
    return 0;
}

static int set_string(struct loader *l, const struct directive *d, int argc, char **argv)
{
    (void)argc;
    return replace_string(l, field(l, d), argv[0], 1);
}

static int set_int(struct loader *l, const struct directive *d, int argc, char **argv)
{
    long long v;

    (void)argc;
    if (parse_int(argv[0], d->min, d->max, &v) < 0) {
        snprintf(l->why, sizeof l->why, "'%s' must be an integer between %lld and %lld",
                 d->name, d->min, d->max);
        return -1;
    }
    *(int *)field(l, d) = (int)v;
    return 0;
}

static int set_memory(struct loader *l, const struct directive *d, int argc, char **argv)
{
    long long v;
    char min[32];

    (void)argc;
    if (config_parse_memory(argv[0], &v) < 0 || v < d->min) {
        format_size(d->min, min, sizeof min);
        snprintf(l->why, sizeof l->why,
                 "'%s' must be a memory size (like 512mb) of at least %s", d->name, min);
        return -1;
    }
    *(long long *)field(l, d) = v;
    return 0;
}

/* As Redis's, but a percentage (of maxmemory, which the proxy has not) is refused. */
static int set_maxmemory_clients(struct loader *l, const struct directive *d, int argc,
                                 char **argv)
{
    size_t n = strlen(argv[0]);
    if (n > 0 && argv[0][n - 1] == '%') {
        snprintf(l->why, sizeof l->why, "'%s' must be a memory size (like 128mb), not a "
                 "percentage: the proxy has no maxmemory", d->name);
        return -1;
    }
    return set_memory(l, d, argc, argv);
}

static int set_yesno(struct loader *l, const struct directive *d, int argc, char **argv)
{
    (void)argc;
    if (strcasecmp(argv[0], "yes") != 0 && strcasecmp(argv[0], "no") != 0) {
        snprintf(l->why, sizeof l->why, "'%s' must be yes or no", d->name);
        return -1;
    }
    *(int *)field(l, d) = strcasecmp(argv[0], "yes") == 0;
    return 0;
}

static int check_hostport(struct loader *l, const struct directive *d, const char *s)
{
    int port;

    if (hostport_parse(s, NULL, &port) < 0) {
        snprintf(l->why, sizeof l->why,
                 "'%s' wants host:port with a port from 1 to 65535, not '%.64s'",
                 d->name, s);
        return -1;
    }
    return 0;
}

static int set_listen(struct loader *l, const struct directive *d, int argc, char **argv)
{
    (void)argc;
    if (check_hostport(l, d, argv[0]) < 0)
        return -1;
    return replace_string(l, &l->c.listen, argv[0], 0);
}

/* host:port, or "off" (NULL) */
static int set_admin_listen(struct loader *l, const struct directive *d, int argc, char **argv)
{
    (void)argc;
    if (strcasecmp(argv[0], "off") == 0) {
        free_string(l->c.admin_listen);
        l->c.admin_listen = NULL;
        return 0;
    }
    if (hostport_parse(argv[0], NULL, &(int){ 0 }) < 0) {
        snprintf(l->why, sizeof l->why,
                 "'%s' wants host:port with a port from 1 to 65535, or off, not '%.64s'",
                 d->name, argv[0]);
        return -1;
    }
    return replace_string(l, &l->c.admin_listen, argv[0], 0);
}

static void free_cluster(struct config *c)
{
    for (int i = 0; i < c->ncluster; i++)
        free(c->cluster[i]);
    free(c->cluster);
    c->cluster = NULL;
    c->ncluster = 0;
}

static void free_address_map(struct config *c)
{
    for (int i = 0; i < c->naddress_map; i++) {
        free(c->address_map[i].from);
        free(c->address_map[i].to);
    }
    free(c->address_map);
    c->address_map = NULL;
    c->naddress_map = 0;
}

/* Repeated lines append within one source; a later source starts afresh. */
static int set_cluster(struct loader *l, const struct directive *d, int argc, char **argv)
{
    char **grown;

    for (int i = 0; i < argc; i++)
        if (check_hostport(l, d, argv[i]) < 0)
            return -1;
    if (l->cluster_source != l->source)
        free_cluster(&l->c);
    l->cluster_source = l->source;
    grown = realloc(l->c.cluster, sizeof *grown * (size_t)(l->c.ncluster + argc));
    if (!grown)
        goto oom;
    l->c.cluster = grown;
    for (int i = 0; i < argc; i++) {
        grown[l->c.ncluster] = strdup(argv[i]);
        if (!grown[l->c.ncluster])
            goto oom;
        l->c.ncluster++;
    }
    return 0;
oom:
    snprintf(l->why, sizeof l->why, "out of memory");
    return -1;
}

/* FROM TO [FROM TO ...]: several pairs on a line, so that one environment
 * variable can map a whole cluster. */
static int set_address_map(struct loader *l, const struct directive *d, int argc, char **argv)
{
    struct config_address_map *grown, *m;

    for (int i = 0; i < argc; i++)
        if (check_hostport(l, d, argv[i]) < 0)
            return -1;
    if (l->address_map_source != l->source)
        free_address_map(&l->c);
    l->address_map_source = l->source;
    grown = realloc(l->c.address_map,
                    sizeof *grown * (size_t)(l->c.naddress_map + argc / 2));
    if (!grown)
        goto oom;
    l->c.address_map = grown;
    for (int i = 0; i < argc; i += 2) {
        m = &grown[l->c.naddress_map];
        m->from = strdup(argv[i]);
        m->to = strdup(argv[i + 1]);
        l->c.naddress_map++;    /* counted even half-made, so config_free frees it */
        if (!m->from || !m->to)
            goto oom;
    }
    return 0;
oom:
    snprintf(l->why, sizeof l->why, "out of memory");
    return -1;
}

static void free_layout_rules(struct config *c)
{
    for (int i = 0; i < c->nlayout_rules; i++) {
        struct config_layout_rules *r = &c->layout_rules[i];
        free(r->path);
        for (int j = 0; j < r->nprefix; j++)
            free(r->prefix[j]);
        free(r->prefix);
    }
    free(c->layout_rules);
    c->layout_rules = NULL;
    c->nlayout_rules = 0;
}

static int layout_rules_fill(struct config_layout_rules *r, int argc, char **argv)
{
    if (!(r->path = strdup(argv[0])))
        return -1;
    if (argc > 1 && !(r->prefix = calloc((size_t)argc - 1, sizeof *r->prefix)))
        return -1;
    for (int i = 1; i < argc; i++) {
        if (!(r->prefix[i - 1] = strdup(argv[i])))
            return -1;
        r->nprefix++;
    }
    return 0;
}

/* layout-rules FILE [PREFIX ...]: repeatable as cluster (a file a line); a
 * lone "" empties the list. Each prefix checked as keylayout will use it. */
static int set_layout_rules(struct loader *l, const struct directive *d, int argc, char **argv)
{
    struct config_layout_rules *grown;

    (void)d;
    if (argv[0][0] == '\0' && argc > 1) {
        snprintf(l->why, sizeof l->why, "'layout-rules' needs a file before its prefixes");
        return -1;
    }
    for (int i = 1; i < argc; i++)
        if (layout_check_prefix(argv[i], l->why, sizeof l->why) < 0)
            return -1;
    if (l->layout_rules_source != l->source)
        free_layout_rules(&l->c);
    l->layout_rules_source = l->source;
    if (argv[0][0] == '\0')
        return 0;
    if (l->c.nlayout_rules == LAYOUT_FILES_MAX) {
        snprintf(l->why, sizeof l->why, "more than %d 'layout-rules' files", LAYOUT_FILES_MAX);
        return -1;
    }
    grown = realloc(l->c.layout_rules, sizeof *grown * (size_t)(l->c.nlayout_rules + 1));
    if (!grown)
        goto oom;
    l->c.layout_rules = grown;
    memset(&grown[l->c.nlayout_rules], 0, sizeof *grown);
    l->c.nlayout_rules++;       /* counted even half-made, so config_free frees it */
    if (layout_rules_fill(&grown[l->c.nlayout_rules - 1], argc, argv) < 0)
        goto oom;
    return 0;
oom:
    snprintf(l->why, sizeof l->why, "out of memory");
    return -1;
}

static void free_layout_prefix(struct config *c)
{
    for (int i = 0; i < c->nlayout_prefix; i++)
        free(c->layout_prefix[i]);
    free(c->layout_prefix);
    c->layout_prefix = NULL;
    c->nlayout_prefix = 0;
}

/* Repeatable as cluster; each prefix checked as keylayout will use it. */
static int set_layout_prefix(struct loader *l, const struct directive *d, int argc, char **argv)
{
    char **grown;

    (void)d;
    for (int i = 0; i < argc; i++)
        if (layout_check_prefix(argv[i], l->why, sizeof l->why) < 0)
            return -1;
    if (l->layout_prefix_source != l->source)
        free_layout_prefix(&l->c);
    l->layout_prefix_source = l->source;
    grown = realloc(l->c.layout_prefix, sizeof *grown * (size_t)(l->c.nlayout_prefix + argc));
    if (!grown)
        goto oom;
    l->c.layout_prefix = grown;
    for (int i = 0; i < argc; i++) {
        grown[l->c.nlayout_prefix] = strdup(argv[i]);
        if (!grown[l->c.nlayout_prefix])
            goto oom;
        l->c.nlayout_prefix++;
    }
    return 0;
oom:
    snprintf(l->why, sizeof l->why, "out of memory");
    return -1;
}

void config_users_free(struct config_user *users, int n)
{
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < users[i].argc; j++)
            free(users[i].argv[j]);
        free(users[i].argv);
    }
    free(users);
}

static void free_users(struct config *c)
{
    config_users_free(c->users, c->nusers);
    c->users = NULL;
    c->nusers = 0;
}

static int user_name_ok(const char *name)
{
    if (!*name)
        return 0;
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return 0;
    return 1;
}

/* A user: argv[0] the name, then (aclfile_form: none) the password, then
 * the rules, checked here (acl.h) so a typo is a FILE:LINE error; the users
 * are built at start and on reload (acl_build). */
static int user_add(struct loader *l, int argc, char **argv, int aclfile_form)
{
    struct config_user *grown, *u;
    char **rules;
    int first = aclfile_form ? 1 : 2;

    if (!user_name_ok(argv[0])) {
        snprintf(l->why, sizeof l->why, "'user' name must be non-empty, without blanks");
        return -1;
    }
    struct acl_rule as_rule;
    char ignored[WHY_MAX];
    if (!aclfile_form && strcmp(argv[1], "nopass") != 0 &&
        acl_rule_parse(argv[1], &as_rule, ignored, sizeof ignored) == 0) {
        /* Redis's `user NAME on >pass ...` would make "on" a password */
        snprintf(l->why, sizeof l->why, "user '%.64s': the word after the name is its password "
                 "(or nopass), and this one reads as an ACL rule: write user NAME PASSWORD "
                 "RULE..., or put Redis's form (user NAME RULE...) in an aclfile", argv[0]);
        return -1;
    }
    int n = acl_rules_merge(argv + first, argc - first, &rules, l->why, sizeof l->why);
    if (n < 0)
        return -1;
    int rc = acl_rules_check(rules, n, l->why, sizeof l->why);
    acl_rules_free(rules, n);
    if (rc < 0)
        return -1;
    if (l->users_source != l->source)
        free_users(&l->c);
    l->users_source = l->source;
    for (int i = 0; i < l->c.nusers; i++)
        if (strcmp(l->c.users[i].argv[0], argv[0]) == 0) {
            snprintf(l->why, sizeof l->why, "user '%.64s' is defined twice", argv[0]);
            return -1;
        }
    grown = realloc(l->c.users, sizeof *grown * (size_t)(l->c.nusers + 1));
    if (!grown)
        goto oom;
    l->c.users = grown;
    u = &grown[l->c.nusers++];
    u->argc = 0;
    u->aclfile_form = aclfile_form;
    u->argv = calloc((size_t)argc, sizeof *u->argv);
    if (!u->argv)
        goto oom;
    for (int i = 0; i < argc; i++) {
        if (!(u->argv[i] = strdup(argv[i])))
            goto oom;
        u->argc++;
    }
    return 0;
oom:
    snprintf(l->why, sizeof l->why, "out of memory");
    return -1;
}

/* user NAME PASSWORD [RULE ...] */
static int set_user(struct loader *l, const struct directive *d, int argc, char **argv)
{
    (void)d;
    return user_add(l, argc, argv, 0);
}

struct args {
    char **v;
    int n, cap;
};
static const char *split_line(const char *s, struct args *a);
static void args_free(struct args *a);
static char *trim(char *s);

/* aclfile PATH: Redis's ACL file, a `user NAME [RULE ...]` per line (and
 * blank lines and # comments), read now; its users join the user lines. */
static int set_aclfile(struct loader *l, const struct directive *d, int argc, char **argv)
{
    char *line = NULL, why[WHY_MAX];
    size_t cap = 0;
    int lineno = 0, rc = 0;
    FILE *f = fopen(argv[0], "r");

    (void)d;
    (void)argc;
    if (!f) {
        snprintf(l->why, sizeof l->why, "cannot open aclfile %.200s: %s", argv[0],
                 strerror(errno));
        return -1;
    }
    while (rc == 0 && getline(&line, &cap, f) >= 0) {
        struct args a = { NULL, 0, 0 };
        const char *bad;
        char *t = trim(line);
        lineno++;
        if (*t == '\0' || *t == '#')
            continue;
        if ((bad = split_line(t, &a)) != NULL) {
            snprintf(why, sizeof why, "%s", bad);
            rc = -1;
        } else if (strcmp(a.v[0], "user") != 0 || a.n < 2) {
            snprintf(why, sizeof why, "line should start with user keyword and a name");
            rc = -1;
        } else if ((rc = user_add(l, a.n - 1, a.v + 1, 1)) < 0) {
            snprintf(why, sizeof why, "%s", l->why);
        }
        args_free(&a);
        if (rc < 0)
            snprintf(l->why, sizeof l->why, "%.200s:%d: %s", argv[0], lineno, why);
    }
    free(line);
    fclose(f);
    return rc < 0 ? -1 : replace_string(l, &l->c.aclfile, argv[0], 1);
}

static void free_script_map(struct config *c)
{
    for (int i = 0; i < c->nscript_map; i++) {
        free(c->script_map[i].sha);
        free(c->script_map[i].path);
        free(c->script_map[i].body);
    }
    free(c->script_map);
    c->script_map = NULL;
    c->nscript_map = 0;
}

/* A script-map file: its whole content, at most SCRIPT_MAP_MAX_BYTES. */
#define SCRIPT_MAP_MAX_BYTES (16 * 1024 * 1024)

static int read_script_file(struct loader *l, const char *path, char **body, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0;
    if (!f) {
        snprintf(l->why, sizeof l->why, "'script-map' cannot read '%.200s': %s", path, strerror(errno));
        return -1;
    }
    buf = malloc(SCRIPT_MAP_MAX_BYTES + 1);
    if (buf)
        n = fread(buf, 1, SCRIPT_MAP_MAX_BYTES + 1, f);
    int bad = !buf || ferror(f);
    fclose(f);
    if (bad || n == 0 || n > SCRIPT_MAP_MAX_BYTES) {
        snprintf(l->why, sizeof l->why, "'script-map' cannot read '%.200s': %s", path,
                 !buf ? "out of memory" : n > SCRIPT_MAP_MAX_BYTES ? "larger than 16mb"
                 : n == 0 && !bad ? "the file is empty" : "read error");
        free(buf);
        return -1;
    }
    char *fit = malloc(n);          /* what the file holds, not the bound */
    if (fit) {
        memcpy(fit, buf, n);
        free(buf);
    }
    *body = fit ? fit : buf;
    *len = n;
    return 0;
}

/* SHA1 PATH: the legacy script whose SHA1 it is gets PATH's script instead. */
static int set_script_map(struct loader *l, const struct directive *d, int argc, char **argv)
{
    struct config_script_map *grown, *m;
    char sha[41], *body;
    size_t len;

    (void)d;
    (void)argc;
    size_t n = strlen(argv[0]);
    for (size_t i = 0; i < 40; i++)     /* (a shorter argument fails below) */
        sha[i] = i < n ? (char)tolower((unsigned char)argv[0][i]) : '\0';
    sha[40] = '\0';
    if (n != 40 || strspn(sha, "0123456789abcdef") != 40) {
        snprintf(l->why, sizeof l->why,
                 "'script-map' wants the SHA1 of a script (40 hex digits), not '%.64s'", argv[0]);
        return -1;
    }
    if (read_script_file(l, argv[1], &body, &len) < 0)
        return -1;
    if (l->script_map_source != l->source)
        free_script_map(&l->c);
    l->script_map_source = l->source;
    grown = realloc(l->c.script_map, sizeof *grown * (size_t)(l->c.nscript_map + 1));
    if (!grown) {
        free(body);
        snprintf(l->why, sizeof l->why, "out of memory");
        return -1;
    }
    l->c.script_map = grown;
    m = &grown[l->c.nscript_map++];
    m->body = body;
    m->len = len;
    m->sha = strdup(sha);
    m->path = strdup(argv[1]);
    if (!m->sha || !m->path) {
        snprintf(l->why, sizeof l->why, "out of memory");
        return -1;
    }
    return 0;
}

static int set_output_limit(struct loader *l, const struct directive *d, int argc, char **argv)
{
    long long hard, soft, secs;

    (void)argc;
    if (config_parse_memory(argv[0], &hard) < 0 || config_parse_memory(argv[1], &soft) < 0) {
        snprintf(l->why, sizeof l->why,
                 "'%s' limits must be memory sizes (like 256mb, 0 for none)", d->name);
        return -1;
    }
    if (parse_int(argv[2], d->min, d->max, &secs) < 0) {
        snprintf(l->why, sizeof l->why,
                 "'%s' soft seconds must be an integer between %lld and %lld",
                 d->name, d->min, d->max);
        return -1;
    }
    if (strcmp(d->name, "client-output-buffer-limit-pubsub") == 0) {
        l->c.client_output_pubsub_hard_limit = hard;
        l->c.client_output_pubsub_soft_limit = soft;
        l->c.client_output_pubsub_soft_seconds = (int)secs;
    } else {
        l->c.client_output_hard_limit = hard;
        l->c.client_output_soft_limit = soft;
        l->c.client_output_soft_seconds = (int)secs;
    }
    return 0;
}

static int set_tls_listen(struct loader *l, const struct directive *d, int argc, char **argv)
{
    (void)argc;
    if (*argv[0] && check_hostport(l, d, argv[0]) < 0)
        return -1;
    return replace_string(l, &l->c.tls_listen, argv[0], 1);
}

/* A path that fits a sockaddr_un (sun_path holds 107 bytes and a NUL). */
static int set_unixsocket(struct loader *l, const struct directive *d, int argc, char **argv)
{
    (void)argc;
    if (strlen(argv[0]) >= sizeof ((struct sockaddr_un *)0)->sun_path) {
        snprintf(l->why, sizeof l->why, "'%s' path is longer than %zu bytes", d->name,
                 sizeof ((struct sockaddr_un *)0)->sun_path - 1);
        return -1;
    }
    return replace_string(l, &l->c.unixsocket, argv[0], 1);
}

/* Mode bits in octal, as chmod and Redis's unixsocketperm take them. */
static int set_octal_mode(struct loader *l, const struct directive *d, int argc, char **argv)
{
    char *end;
    (void)argc;
    errno = 0;
    long v = strtol(argv[0], &end, 8);
    if (!isdigit((unsigned char)*argv[0]) || *end || errno || v < d->min || v > d->max) {
        snprintf(l->why, sizeof l->why, "'%s' must be octal mode bits from 0 to 0777, like 770",
                 d->name);
        return -1;
    }
    *(int *)field(l, d) = (int)v;
    return 0;
}

static int set_tls_auth(struct loader *l, const struct directive *d, int argc, char **argv)
{
    (void)argc;
    if (strcasecmp(argv[0], "yes") == 0)
        l->c.tls_auth_clients = TLS_VERIFY_REQUIRED;
    else if (strcasecmp(argv[0], "no") == 0)
        l->c.tls_auth_clients = TLS_VERIFY_NONE;
    else if (strcasecmp(argv[0], "optional") == 0)
        l->c.tls_auth_clients = TLS_VERIFY_OPTIONAL;
    else {
        snprintf(l->why, sizeof l->why, "'%s' must be yes, no or optional", d->name);
        return -1;
    }
    return 0;
}

static int set_log_level(struct loader *l, const struct directive *d, int argc, char **argv)
{
    (void)argc;
    for (int i = LOG_DEBUG; i <= LOG_WARNING; i++) {
        if (strcasecmp(argv[0], config_log_level_name((enum log_level)i)) == 0) {
            l->c.log_level = (enum log_level)i;
            return 0;
        }
    }
    snprintf(l->why, sizeof l->why,
             "'%s' must be one of debug, verbose, notice, warning", d->name);
    return -1;
}

/* The file is tried once all sources are in, so only the winner must open. */
static int set_log_file(struct loader *l, const struct directive *d, int argc, char **argv)
{
    (void)d;
    (void)argc;
    return replace_string(l, &l->c.log_file, argv[0], 1);
}

#define AT(f) offsetof(struct config, f)
#define MB (1024LL * 1024)

static const struct directive directives[] = {
    { "listen",                    1,  1, set_listen,       0, 0, 0 },
    { "admin-listen",              1,  1, set_admin_listen, 0, 0, 0 },
    { "cluster",                   1, -1, set_cluster,      0, 0, 0 },
    { "threads",                   1,  1, set_int,          AT(threads), 1, CONFIG_MAX_THREADS },
    { "requirepass",               1,  1, set_string,       AT(requirepass), 0, 0 },
    { "user",                      2, -1, set_user,         0, 0, 0 },
    { "aclfile",                   1,  1, set_aclfile,      0, 0, 0 },
    { "cluster-user",              1,  1, set_string,       AT(cluster_user), 0, 0 },
    { "cluster-password",          1,  1, set_string,       AT(cluster_password), 0, 0 },
    { "unixsocket",                1,  1, set_unixsocket,   0, 0, 0 },
    { "unixsocketperm",            1,  1, set_octal_mode,   AT(unixsocketperm), 0, 0777 },
    { "tls-listen",                1,  1, set_tls_listen,   0, 0, 0 },
    { "tls-cert-file",             1,  1, set_string,       AT(tls_cert_file), 0, 0 },
    { "tls-key-file",              1,  1, set_string,       AT(tls_key_file), 0, 0 },
    { "tls-ca-cert-file",          1,  1, set_string,       AT(tls_ca_cert_file), 0, 0 },
    { "tls-auth-clients",          1,  1, set_tls_auth,     0, 0, 0 },
    { "cluster-tls",               1,  1, set_yesno,        AT(cluster_tls), 0, 0 },
    { "cluster-tls-ca-cert-file",  1,  1, set_string,       AT(cluster_tls_ca_cert_file), 0, 0 },
    { "cluster-tls-cert-file",     1,  1, set_string,       AT(cluster_tls_cert_file), 0, 0 },
    { "cluster-tls-key-file",      1,  1, set_string,       AT(cluster_tls_key_file), 0, 0 },
    { "cluster-tls-server-name",   1,  1, set_string,       AT(cluster_tls_server_name), 0, 0 },
    { "cluster-tls-insecure",      1,  1, set_yesno,        AT(cluster_tls_insecure), 0, 0 },
    { "max-clients",               1,  1, set_int,          AT(max_clients), 1, 1000000 },
    { "timeout",                   1,  1, set_int,          AT(timeout), 0, INT_MAX },
    { "tcp-keepalive",             1,  1, set_int,          AT(tcp_keepalive), 0, INT_MAX },
    { "slowlog-log-slower-than",   1,  1, set_int,          AT(slowlog_log_slower_than), -1, INT_MAX },
    { "slowlog-max-len",           1,  1, set_int,          AT(slowlog_max_len), 0, INT_MAX },
    { "client-query-buffer-limit", 1,  1, set_memory,       AT(client_query_buffer_limit), MB, LLONG_MAX },
    { "client-backlog-limit",      1,  1, set_memory,       AT(client_backlog_limit), 0, LLONG_MAX },
    { "maxmemory-clients",         1,  1, set_maxmemory_clients, AT(maxmemory_clients), 0, LLONG_MAX },
    { "proto-max-bulk-len",        1,  1, set_memory,       AT(proto_max_bulk_len), MB, LLONG_MAX },
    { "client-output-buffer-limit", 3, 3, set_output_limit, 0, 0, 86400 },
    { "client-output-buffer-limit-pubsub", 3, 3, set_output_limit, 0, 0, 86400 },
    { "node-connect-timeout-ms",   1,  1, set_int,          AT(node_connect_timeout_ms), 1, 3600000 },
    { "node-timeout-ms",           1,  1, set_int,          AT(node_timeout_ms), 1, 3600000 },
    { "topology-refresh-ms",       1,  1, set_int,          AT(topology_refresh_ms), 0, 86400000 },
    { "cluster-wait-at-start",     1,  1, set_yesno,        AT(cluster_wait_at_start), 0, 0 },
    { "max-redirects",             1,  1, set_int,          AT(max_redirects), 0, 100 },
    { "retry-attempts",            1,  1, set_int,          AT(retry_attempts), 0, 1000 },
    { "retry-base-ms",             1,  1, set_int,          AT(retry_base_ms), 1, 60000 },
    { "retry-max-ms",              1,  1, set_int,          AT(retry_max_ms), 1, 600000 },
    { "dedicated-connections-max", 1,  1, set_int,          AT(dedicated_connections_max), 1, 100000 },
    { "round-pause-us",            1,  1, set_int,          AT(round_pause_us), 0, 1000 },
    { "io-uring",                  1,  1, set_yesno,        AT(io_uring), 0, 0 },
    { "worker-nice",               1,  1, set_int,          AT(worker_nice), 0, 19 },
    { "address-map",               2, -2, set_address_map,  0, 0, 0 },
    { "enable-dangerous-commands", 1,  1, set_yesno,        AT(enable_dangerous_commands), 0, 0 },
    { "acl-mutable",               1,  1, set_yesno,        AT(acl_mutable), 0, 0 },
    { "layout-rules",              1, -1, set_layout_rules, 0, 0, 0 },
    { "layout-prefix",             1, -1, set_layout_prefix, 0, 0, 0 },
    { "layout-allow-legacy-data",  1,  1, set_yesno,        AT(layout_allow_legacy_data), 0, 0 },
    { "script-cache-max-bytes",    1,  1, set_memory,       AT(script_cache_max_bytes), 0, LLONG_MAX },
    { "script-map",                2,  2, set_script_map,   0, 0, 0 },
    { "log-level",                 1,  1, set_log_level,    0, 0, 0 },
    { "log-file",                  1,  1, set_log_file,     0, 0, 0 },
    { "config-watch",              1,  1, set_yesno,        AT(config_watch), 0, 0 },
    { "readiness-grace-ms",        1,  1, set_int,          AT(readiness_grace_ms), 0, 3600000 },
    { "liveness-stall-ms",         1,  1, set_int,          AT(liveness_stall_ms), 1000, 3600000 },
    { "shutdown-timeout-ms",       1,  1, set_int,          AT(shutdown_timeout_ms), 0, 3600000 },
    { "daemonize",                 1,  1, set_yesno,        AT(daemonize), 0, 0 },
    { "pidfile",                   1,  1, set_string,       AT(pidfile), 0, 0 },
};

#define NDIRECTIVES (sizeof directives / sizeof directives[0])

const char *config_directive_name(size_t i)
{
    return i < NDIRECTIVES ? directives[i].name : NULL;
}

static const struct directive *directive_find(const char *name)
{
    for (size_t i = 0; i < NDIRECTIVES; i++)
        if (strcasecmp(name, directives[i].name) == 0)
            return &directives[i];
    return NULL;
}

/* ---- applying one directive ---- */

static int apply(struct loader *l, const struct directive *d, const char *where,
                 int argc, char **argv, char *err, size_t errlen)
{
    char expected[32];

    if (argc < d->min_args || (d->max_args >= 0 && argc > d->max_args) ||
        (d->max_args == -2 && argc % 2)) {
        if (d->max_args == -2)
            snprintf(expected, sizeof expected, "FROM TO pairs");
        else if (d->max_args < 0)
            snprintf(expected, sizeof expected, "at least %d", d->min_args);
        else
            snprintf(expected, sizeof expected, "%d", d->min_args);
        snprintf(err, errlen, "%s: wrong number of arguments for '%s' (expected %s, got %d)",
                 where, d->name, expected, argc);
        return -1;
    }
    if (d->set(l, d, argc, argv) < 0) {
        snprintf(err, errlen, "%s: %s", where, l->why);
        return -1;
    }
    if (d->set == set_log_file)
        snprintf(l->log_file_where, sizeof l->log_file_where, "%s", where);
    return 0;
}

static int apply_named(struct loader *l, const char *name, const char *where,
                       int argc, char **argv, char *err, size_t errlen)
{
    const struct directive *d = directive_find(name);

    if (!d) {
        snprintf(err, errlen, "%s: unknown directive '%.64s'", where, name);
        return -1;
    }
    return apply(l, d, where, argc, argv, err, errlen);
}

int config_set_value(struct config *c, const char *name, int argc, char **argv, char *err,
                     size_t errlen)
{
    const struct directive *d = directive_find(name);
    if (!d || (d->set != set_int && d->set != set_memory && d->set != set_maxmemory_clients &&
               d->set != set_output_limit)) {
        snprintf(err, errlen, "'%s' is not a value the running proxy can change", name);
        return -1;
    }
    struct loader l;
    memset(&l, 0, sizeof l);
    l.c = *c;
    if (apply(&l, d, "CONFIG SET", argc, argv, err, errlen) < 0) {
        if (l.why[0])                   /* the value's fault, without the where */
            snprintf(err, errlen, "%s", l.why);
        return -1;
    }
    *c = l.c;
    return 0;
}

/* ---- splitting a line into arguments, as redis.conf does ---- */

struct word {
    char *p;
    size_t len, cap;
};

static void args_free(struct args *a)
{
    for (int i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}

static int word_add(struct word *w, char ch)
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

static int args_push(struct args *a, struct word *w)
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

static int is_blank(char ch)
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
static const char *split_word(const char **pp, struct word *w)
{
    const char *p = *pp;
    enum quote q = QUOTE_NONE;
    int nul = 0;

    for (;; p++) {
        char ch = *p;
        if (q != QUOTE_NONE && ch == '\0')
            return "unbalanced quotes";
        if (q == QUOTE_NONE && (ch == '\0' || is_blank(ch)))
            break;
        if (q == QUOTE_NONE && (ch == '"' || ch == '\'')) {
            q = ch == '"' ? QUOTE_DOUBLE : QUOTE_SINGLE;
            continue;
        }
        if ((q == QUOTE_DOUBLE && ch == '"') || (q == QUOTE_SINGLE && ch == '\'')) {
            if (p[1] && !is_blank(p[1]))
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
static const char *split_line(const char *s, struct args *a)
{
    const char *why = NULL;
    struct word w = { NULL, 0, 0 };

    for (;;) {
        while (is_blank(*s))
            s++;
        if (!*s)
            break;
        why = split_word(&s, &w);
        if (!why && args_push(a, &w) < 0)
            why = "out of memory";
        if (why)
            break;
    }
    free(w.p);
    if (why)
        args_free(a);
    return why;
}

/* ---- the three sources ---- */

static char *trim(char *s)
{
    char *e = s + strlen(s);

    while (is_blank(*s))
        s++;
    while (e > s && is_blank(e[-1]))
        *--e = '\0';
    return s;
}

static int load_line(struct loader *l, char *line, const char *where,
                     char *err, size_t errlen)
{
    struct args a = { NULL, 0, 0 };
    const char *why;
    int rc;

    line = trim(line);
    if (*line == '\0' || *line == '#')
        return 0;
    why = split_line(line, &a);
    if (why) {
        snprintf(err, errlen, "%s: %s", where, why);
        return -1;
    }
    rc = apply_named(l, a.v[0], where, a.n - 1, a.v + 1, err, errlen);
    args_free(&a);
    return rc;
}

static int load_file(struct loader *l, const char *path, char *err, size_t errlen)
{
    char where[WHERE_MAX], *line = NULL;
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

int config_read_aclfile(const char *path, struct config_user **users, int *n, char *err,
                        size_t errlen)
{
    struct loader l;
    char *argv[] = { (char *)path };
    memset(&l, 0, sizeof l);
    config_defaults(&l.c);
    l.users_source = -1;
    int rc = set_aclfile(&l, NULL, 1, argv);
    if (rc < 0)
        snprintf(err, errlen, "%s", l.why);
    *users = rc < 0 ? NULL : l.c.users;
    *n = rc < 0 ? 0 : l.c.nusers;
    if (rc < 0)
        free_users(&l.c);
    free(l.c.aclfile);
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

static int load_env_line(struct loader *l, const struct directive *d, const char *name,
                         const char *value, char *err, size_t errlen)
{
    char where[WHERE_MAX];
    struct args a = { NULL, 0, 0 };
    struct word empty = { NULL, 0, 0 };
    const char *why;
    int rc;

    snprintf(where, sizeof where, "env %s", name);
    why = split_line(value, &a);
    if (!why && a.n == 0 && args_push(&a, &empty) < 0)   /* NAME= is one "" */
        why = "out of memory";
    if (why) {
        snprintf(err, errlen, "%s: %s", where, why);
        return -1;
    }
    rc = apply(l, d, where, a.n, a.v, err, errlen);
    args_free(&a);
    return rc;
}

static int all_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!is_blank(s[i]))
            return 0;
    return 1;
}

/* The byte that cuts a directive's environment value into lines, or 0: a
 * file a line for layout-rules, whose lines have several words each. */
static char env_separator(const struct directive *d)
{
    return d->set == set_layout_rules ? ';' : '\0';
}

/* Each piece of the value between separators is one line of d (blank
 * pieces, as after a last separator, are none). */
static int load_env_one(struct loader *l, const struct directive *d, const char *name,
                        const char *value, char *err, size_t errlen)
{
    char sep = env_separator(d);
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

static int load_env(struct loader *l, char **envp, char *err, size_t errlen)
{
    char name[64];
    const char *value;

    l->source = SOURCE_ENV;
    for (size_t i = 0; i < NDIRECTIVES; i++) {
        env_name(directives[i].name, name, sizeof name);
        value = env_lookup(envp, name);
        if (value && load_env_one(l, &directives[i], name, value, err, errlen) < 0)
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
static int load_argv(struct loader *l, int argc, char **argv, char *err, size_t errlen)
{
    char where[WHERE_MAX];
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

static int check_log_file(struct loader *l, char *err, size_t errlen)
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

void config_defaults(struct config *c)
{
    memset(c, 0, sizeof *c);
    c->listen = (char *)default_listen;
    c->admin_listen = (char *)default_admin_listen;
    c->threads = 1;
    c->max_clients = 10000;
    c->tcp_keepalive = 300;
    c->slowlog_log_slower_than = 10000;
    c->slowlog_max_len = 128;
    c->client_query_buffer_limit = 1024 * MB;
    c->client_backlog_limit = 16 * MB;
    c->proto_max_bulk_len = 512 * MB;
    c->client_output_hard_limit = 256 * MB;
    c->client_output_soft_limit = 64 * MB;
    c->client_output_soft_seconds = 60;
    c->client_output_pubsub_hard_limit = 32 * MB;
    c->client_output_pubsub_soft_limit = 8 * MB;
    c->client_output_pubsub_soft_seconds = 60;
    c->node_connect_timeout_ms = 1000;
    c->node_timeout_ms = 5000;
    c->topology_refresh_ms = 10000;
    c->cluster_wait_at_start = 1;
    c->max_redirects = 5;
    c->retry_attempts = 10;
    c->retry_base_ms = 10;
    c->retry_max_ms = 500;
    c->dedicated_connections_max = 256;
    c->readiness_grace_ms = 30000;
    c->config_watch = 1;
    c->liveness_stall_ms = 10000;
    c->round_pause_us = 30;
    c->io_uring = 1;
    c->worker_nice = 5;
    c->enable_dangerous_commands = 0;
    c->acl_mutable = 0;
    c->script_cache_max_bytes = 16 * MB;
    c->log_level = LOG_NOTICE;
    c->shutdown_timeout_ms = 5000;
    c->daemonize = 0;
    c->tls_auth_clients = TLS_VERIFY_REQUIRED;
}

void config_free(struct config *c)
{
    free_string(c->listen);
    free_string(c->admin_listen);
    free_cluster(c);
    free(c->requirepass);
    free_users(c);
    free(c->aclfile);
    free(c->unixsocket);
    free(c->tls_listen);
    free(c->tls_cert_file);
    free(c->tls_key_file);
    free(c->tls_ca_cert_file);
    free(c->cluster_tls_ca_cert_file);
    free(c->cluster_tls_cert_file);
    free(c->cluster_tls_key_file);
    free(c->cluster_tls_server_name);
    free(c->cluster_user);
    free(c->cluster_password);
    free_address_map(c);
    free_layout_rules(c);
    free_layout_prefix(c);
    free_script_map(c);
    free(c->log_file);
    free(c->pidfile);
    free(c->path);
    config_defaults(c);
}

int config_load(struct config *c, const char *path, char **envp,
                int argc, char **argv, char *err, size_t errlen)
{
    struct loader l;
    int rc = 0;

    memset(&l, 0, sizeof l);
    config_defaults(&l.c);
    l.cluster_source = l.address_map_source = l.layout_prefix_source = l.users_source = -1;
    l.layout_rules_source = -1;
    l.script_map_source = -1;
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
