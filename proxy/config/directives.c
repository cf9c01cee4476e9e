/*
 * directives: every directive of the proxy in one table. See directives.h.
 */
#include "proxy/config/directives.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "lib/base/hostport.h"
#include "proxy/config/acluser.h"
#include "proxy/config/confline.h"
#include "keylayout/layout.h"
#include "keylayout/layoutload.h"

static const char default_listen[] = "127.0.0.1:6380";
static const char default_admin_listen[] = "127.0.0.1:8380";

#define MB (1024LL * 1024)

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

static void *field(struct config_loader *l, const struct directive *d)
{
    return (char *)&l->c + d->offset;
}

static void free_string(char *s)
{
    if (s != default_listen && s != default_admin_listen)
        free(s);
}

/* Replace *slot by a copy of v; "" stores NULL when empty_is_null. */
static int replace_string(struct config_loader *l, char **slot, const char *v, int empty_is_null)
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

static int set_string(struct config_loader *l, const struct directive *d, int argc, char **argv)
{
    (void)argc;
    return replace_string(l, field(l, d), argv[0], 1);
}

static int set_int(struct config_loader *l, const struct directive *d, int argc, char **argv)
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

static int set_memory(struct config_loader *l, const struct directive *d, int argc, char **argv)
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
static int set_maxmemory_clients(struct config_loader *l, const struct directive *d, int argc,
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

static int set_yesno(struct config_loader *l, const struct directive *d, int argc, char **argv)
{
    (void)argc;
    if (strcasecmp(argv[0], "yes") != 0 && strcasecmp(argv[0], "no") != 0) {
        snprintf(l->why, sizeof l->why, "'%s' must be yes or no", d->name);
        return -1;
    }
    *(int *)field(l, d) = strcasecmp(argv[0], "yes") == 0;
    return 0;
}

static int check_hostport(struct config_loader *l, const struct directive *d, const char *s)
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

static int set_listen(struct config_loader *l, const struct directive *d, int argc, char **argv)
{
    (void)argc;
    if (check_hostport(l, d, argv[0]) < 0)
        return -1;
    return replace_string(l, &l->c.listen, argv[0], 0);
}

/* host:port, or "off" (NULL) */
static int set_admin_listen(struct config_loader *l, const struct directive *d,
                            int argc, char **argv)
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
static int set_cluster(struct config_loader *l, const struct directive *d, int argc, char **argv)
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
static int set_address_map(struct config_loader *l, const struct directive *d,
                           int argc, char **argv)
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
static int set_layout_rules(struct config_loader *l, const struct directive *d,
                            int argc, char **argv)
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
static int set_layout_prefix(struct config_loader *l, const struct directive *d,
                             int argc, char **argv)
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
static int user_add(struct config_loader *l, int argc, char **argv, int aclfile_form)
{
    struct config_user *grown, *u;
    char **rules;
    int first = aclfile_form ? 1 : 2;

    if (!user_name_ok(argv[0])) {
        snprintf(l->why, sizeof l->why, "'user' name must be non-empty, without blanks");
        return -1;
    }
    struct acl_rule as_rule;
    char ignored[CONFIG_WHY_MAX];
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
static int set_user(struct config_loader *l, const struct directive *d, int argc, char **argv)
{
    (void)d;
    return user_add(l, argc, argv, 0);
}

/* aclfile PATH: Redis's ACL file, a `user NAME [RULE ...]` per line (and
 * blank lines and # comments), read now; its users join the user lines. */
static int set_aclfile(struct config_loader *l, const struct directive *d, int argc, char **argv)
{
    char *line = NULL, why[CONFIG_WHY_MAX];
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
        struct confline_args a = { NULL, 0, 0 };
        const char *bad;
        char *t = confline_trim(line);
        lineno++;
        if (*t == '\0' || *t == '#')
            continue;
        if ((bad = confline_split(t, &a)) != NULL) {
            snprintf(why, sizeof why, "%s", bad);
            rc = -1;
        } else if (strcmp(a.v[0], "user") != 0 || a.n < 2) {
            snprintf(why, sizeof why, "line should start with user keyword and a name");
            rc = -1;
        } else if ((rc = user_add(l, a.n - 1, a.v + 1, 1)) < 0) {
            snprintf(why, sizeof why, "%s", l->why);
        }
        confline_args_free(&a);
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

static int read_script_file(struct config_loader *l, const char *path, char **body, size_t *len)
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
static int set_script_map(struct config_loader *l, const struct directive *d,
                          int argc, char **argv)
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

static int set_output_limit(struct config_loader *l, const struct directive *d,
                            int argc, char **argv)
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

static int set_replica_acks(struct config_loader *l, const struct directive *d,
                            int argc, char **argv)
{
    long long n, ms = REPLICA_ACKS_TIMEOUT_MS;
    if (parse_int(argv[0], 0, 64, &n) < 0) {
        snprintf(l->why, sizeof l->why, "'%s' replicas must be an integer between 0 and 64",
                 d->name);
        return -1;
    }
    if (argc > 1 && parse_int(argv[1], 1, d->max, &ms) < 0) {
        snprintf(l->why, sizeof l->why,
                 "'%s' timeout must be milliseconds between 1 and %lld", d->name, d->max);
        return -1;
    }
    l->c.replica_acks = (int)n;
    l->c.replica_acks_timeout_ms = (int)ms;
    return 0;
}

static int set_tls_listen(struct config_loader *l, const struct directive *d,
                          int argc, char **argv)
{
    (void)argc;
    if (*argv[0] && check_hostport(l, d, argv[0]) < 0)
        return -1;
    return replace_string(l, &l->c.tls_listen, argv[0], 1);
}

/* A path that fits a sockaddr_un (sun_path holds 107 bytes and a NUL). */
static int set_unixsocket(struct config_loader *l, const struct directive *d,
                          int argc, char **argv)
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
static int set_octal_mode(struct config_loader *l, const struct directive *d,
                          int argc, char **argv)
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

static int set_tls_auth(struct config_loader *l, const struct directive *d, int argc, char **argv)
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

static int set_log_level(struct config_loader *l, const struct directive *d, int argc, char **argv)
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

static const char *const read_from_names[] = { "master", "replica", "prefer-replica" };

const char *config_read_from_name(int read_from)
{
    return read_from >= 0 && read_from < 3 ? read_from_names[read_from] : "?";
}

static int set_read_from(struct config_loader *l, const struct directive *d, int argc, char **argv)
{
    (void)argc;
    for (int i = 0; i < 3; i++) {
        if (strcasecmp(argv[0], read_from_names[i]) == 0) {
            l->c.read_from = i;
            return 0;
        }
    }
    snprintf(l->why, sizeof l->why, "'%s' must be one of master, replica, prefer-replica",
             d->name);
    return -1;
}

/* The file is tried once all sources are in, so only the winner must open. */
static int set_log_file(struct config_loader *l, const struct directive *d, int argc, char **argv)
{
    (void)d;
    (void)argc;
    return replace_string(l, &l->c.log_file, argv[0], 1);
}

/* ---- writing values back ---- */

#define FIELD(c, d, type) (*(const type *)((const char *)(c) + (d)->offset))

void directive_show(const struct config *c, const struct directive *d, FILE *out)
{
    static const char *const redacted = CONFIG_REDACTED;
    const char *s;
    switch (d->kind) {
    case K_INT:
        fprintf(out, "%s %d\n", d->name, FIELD(c, d, int));
        break;
    case K_OCTAL:
        fprintf(out, "%s %o\n", d->name, (unsigned)FIELD(c, d, int));
        break;
    case K_YESNO:
        fprintf(out, "%s %s\n", d->name, FIELD(c, d, int) ? "yes" : "no");
        break;
    case K_MEMORY:
        fputs(d->name, out);
        confline_put_memory(out, FIELD(c, d, long long));
        fputc('\n', out);
        break;
    case K_STRING:
    case K_SECRET:
        s = FIELD(c, d, char *);
        if (!s)
            confline_put_unset(out, d->name);
        else
            confline_put_line(out, d->name, d->kind == K_SECRET ? &redacted : &s, 1);
        break;
    case K_SPECIAL:
        d->write(c, d, out);
        break;
    }
}

/* ---- the directives whose value is not one field ---- */

static void show_list(FILE *out, const char *name, char *const *v, int n)
{
    if (n == 0)
        confline_put_unset(out, name);
    else
        confline_put_line(out, name, (const char *const *)v, n);
}

static void show_admin_listen(const struct config *c, const struct directive *d, FILE *out)
{
    const char *v = c->admin_listen ? c->admin_listen : "off";
    confline_put_line(out, d->name, &v, 1);
}

static void show_cluster(const struct config *c, const struct directive *d, FILE *out)
{
    show_list(out, d->name, c->cluster, c->ncluster);
}

static void show_users(const struct config *c, const struct directive *d, FILE *out)
{
    int shown = 0;
    for (int i = 0; i < c->nusers; i++) {
        const struct config_user *u = &c->users[i];
        if (u->aclfile_form)
            continue;           /* the aclfile's: its path is shown */
        fputs(d->name, out);
        for (int a = 0; a < u->argc; a++) {
            /* the password, and >password / <password rules */
            const char *w = u->argv[a];
            if (a == 1 && strcmp(w, "nopass") != 0)
                w = CONFIG_REDACTED;
            else if (a > 1 && (w[0] == '>' || w[0] == '<'))
                w = w[0] == '>' ? ">" CONFIG_REDACTED : "<" CONFIG_REDACTED;
            confline_put_arg(out, w);
        }
        fputc('\n', out);
        shown++;
    }
    if (!shown)
        confline_put_unset(out, d->name);
}

static void show_tls_auth(const struct config *c, const struct directive *d, FILE *out)
{
    fprintf(out, "%s %s\n", d->name, c->tls_auth_clients == TLS_VERIFY_NONE ? "no"
                                     : c->tls_auth_clients == TLS_VERIFY_OPTIONAL ? "optional"
                                                                                  : "yes");
}

static void show_output_limit(const struct config *c, const struct directive *d, FILE *out)
{
    int pubsub = strcmp(d->name, "client-output-buffer-limit-pubsub") == 0;
    fputs(d->name, out);
    confline_put_memory(out, pubsub ? c->client_output_pubsub_hard_limit
                                    : c->client_output_hard_limit);
    confline_put_memory(out, pubsub ? c->client_output_pubsub_soft_limit
                                    : c->client_output_soft_limit);
    fprintf(out, " %d\n", pubsub ? c->client_output_pubsub_soft_seconds
                                 : c->client_output_soft_seconds);
}

static void show_replica_acks(const struct config *c, const struct directive *d, FILE *out)
{
    fprintf(out, "%s %d %d\n", d->name, c->replica_acks, c->replica_acks_timeout_ms);
}

static void show_address_map(const struct config *c, const struct directive *d, FILE *out)
{
    if (c->naddress_map == 0)
        confline_put_unset(out, d->name);
    for (int i = 0; i < c->naddress_map; i++) {
        const char *pair[2] = { c->address_map[i].from, c->address_map[i].to };
        confline_put_line(out, d->name, pair, 2);
    }
}

static void show_layout_rules(const struct config *c, const struct directive *d, FILE *out)
{
    if (c->nlayout_rules == 0)
        confline_put_unset(out, d->name);
    for (int i = 0; i < c->nlayout_rules; i++) {
        const struct config_layout_rules *r = &c->layout_rules[i];
        fputs(d->name, out);
        confline_put_arg(out, r->path);
        for (int p = 0; p < r->nprefix; p++)
            confline_put_arg(out, r->prefix[p]);
        fputc('\n', out);
    }
}

static void show_layout_prefix(const struct config *c, const struct directive *d, FILE *out)
{
    show_list(out, d->name, c->layout_prefix, c->nlayout_prefix);
}

static void show_script_map(const struct config *c, const struct directive *d, FILE *out)
{
    if (c->nscript_map == 0)
        confline_put_unset(out, d->name);
    for (int i = 0; i < c->nscript_map; i++) {
        const char *pair[2] = { c->script_map[i].sha, c->script_map[i].path };
        confline_put_line(out, d->name, pair, 2);
    }
}

static void show_log_level(const struct config *c, const struct directive *d, FILE *out)
{
    fprintf(out, "%s %s\n", d->name, config_log_level_name(c->log_level));
}

static void show_read_from(const struct config *c, const struct directive *d, FILE *out)
{
    fprintf(out, "%s %s\n", d->name, config_read_from_name(c->read_from));
}

/* ---- the table ---- */

/* ---- the table: how each directive is read, written back and described ---- */

#define AT(f) offsetof(struct config, f)

static const struct directive directives[] = {
    /* Network */
    { "listen", "HOST:PORT", "Network",
      "where clients connect",
      1, 1, set_listen, AT(listen), 0, 0, K_STRING, NULL },
    { "unixsocket", "PATH", NULL,
      "also accept clients on a Unix socket",
      1, 1, set_unixsocket, AT(unixsocket), 0, 0, K_STRING, NULL },
    { "unixsocketperm", "OCTAL", NULL,
      "the socket file's mode bits (0: the umask's)",
      1, 1, set_octal_mode, AT(unixsocketperm), 0, 0777, K_OCTAL, NULL },
    { "admin-listen", "HOST:PORT|off", NULL,
      "/healthz, /readyz and /metrics",
      1, 1, set_admin_listen, 0, 0, 0, K_SPECIAL, show_admin_listen },
    { "cluster", "HOST:PORT...", NULL,
      "cluster seed nodes (one at least)",
      1, -1, set_cluster, 0, 0, 0, K_SPECIAL, show_cluster },
    { "threads", "N", NULL,
      "worker threads, 1-64",
      1, 1, set_int, AT(threads), 1, CONFIG_MAX_THREADS, K_INT, NULL },
    { "max-clients", "N", NULL,
      "most client connections at once",
      1, 1, set_int, AT(max_clients), 1, 1000000, K_INT, NULL },
    { "timeout", "SECONDS", NULL,
      "close a client idle this long (0: never)",
      1, 1, set_int, AT(timeout), 0, INT_MAX, K_INT, NULL },
    { "tcp-keepalive", "SECONDS", NULL,
      "TCP keepalive of client connections (0: off)",
      1, 1, set_int, AT(tcp_keepalive), 0, INT_MAX, K_INT, NULL },

    /* Security */
    { "requirepass", "PASSWORD", "Security",
      "the password clients give with AUTH",
      1, 1, set_string, AT(requirepass), 0, 0, K_SECRET, NULL },
    { "user", "NAME PASSWORD|nopass RULE...", NULL,
      "a client user and what it may do, Redis's ACL rules (repeatable)",
      2, -1, set_user, 0, 0, 0, K_SPECIAL, show_users },
    { "aclfile", "PATH", NULL,
      "Redis's ACL file: more users, one `user NAME RULE...` a line",
      1, 1, set_aclfile, AT(aclfile), 0, 0, K_STRING, NULL },
    { "acl-mutable", "yes|no", NULL,
      "ACL SETUSER, DELUSER, LOAD and SAVE change the proxy's users",
      1, 1, set_yesno, AT(acl_mutable), 0, 0, K_YESNO, NULL },
    { "cluster-user", "NAME", NULL,
      "the ACL user of the proxy's AUTH to nodes",
      1, 1, set_string, AT(cluster_user), 0, 0, K_STRING, NULL },
    { "cluster-password", "PASSWORD", NULL,
      "the password of the proxy's AUTH to nodes",
      1, 1, set_string, AT(cluster_password), 0, 0, K_SECRET, NULL },
    { "tls-listen", "HOST:PORT", NULL,
      "also accept TLS clients here",
      1, 1, set_tls_listen, AT(tls_listen), 0, 0, K_STRING, NULL },
    { "tls-cert-file", "FILE", NULL,
      "the proxy's certificate chain (PEM)",
      1, 1, set_string, AT(tls_cert_file), 0, 0, K_STRING, NULL },
    { "tls-key-file", "FILE", NULL,
      "its private key (PEM)",
      1, 1, set_string, AT(tls_key_file), 0, 0, K_STRING, NULL },
    { "tls-ca-cert-file", "FILE", NULL,
      "the CA of client certificates",
      1, 1, set_string, AT(tls_ca_cert_file), 0, 0, K_STRING, NULL },
    { "tls-auth-clients", "yes|optional|no", NULL,
      "whether clients show a certificate",
      1, 1, set_tls_auth, 0, 0, 0, K_SPECIAL, show_tls_auth },
    { "cluster-tls", "yes|no", NULL,
      "TLS to every node",
      1, 1, set_yesno, AT(cluster_tls), 0, 0, K_YESNO, NULL },
    { "cluster-tls-ca-cert-file", "FILE", NULL,
      "the CA of the nodes' certificates (unset: the system's)",
      1, 1, set_string, AT(cluster_tls_ca_cert_file), 0, 0, K_STRING, NULL },
    { "cluster-tls-cert-file", "FILE", NULL,
      "the proxy's client certificate for nodes",
      1, 1, set_string, AT(cluster_tls_cert_file), 0, 0, K_STRING, NULL },
    { "cluster-tls-key-file", "FILE", NULL,
      "its private key",
      1, 1, set_string, AT(cluster_tls_key_file), 0, 0, K_STRING, NULL },
    { "cluster-tls-server-name", "NAME", NULL,
      "the name nodes' certificates carry (unset: the node's host)",
      1, 1, set_string, AT(cluster_tls_server_name), 0, 0, K_STRING, NULL },
    { "cluster-tls-insecure", "yes|no", NULL,
      "skip the nodes' certificate checks",
      1, 1, set_yesno, AT(cluster_tls_insecure), 0, 0, K_YESNO, NULL },
    { "enable-dangerous-commands", "yes|no", NULL,
      "allow FLUSHALL, CONFIG SET, ...",
      1, 1, set_yesno, AT(enable_dangerous_commands), 0, 0, K_YESNO, NULL },

    /* Scripts */
    { "script-cache-max-bytes", "SIZE", "Scripts",
      "script bodies kept to answer NOSCRIPT (0: none)",
      1, 1, set_memory, AT(script_cache_max_bytes), 0, LLONG_MAX, K_MEMORY, NULL },
    { "script-map", "SHA1 PATH", NULL,
      "run PATH's script for a legacy SHA1 (repeatable)",
      2, 2, set_script_map, 0, 0, 0, K_SPECIAL, show_script_map },

    /* Limits */
    { "client-query-buffer-limit", "SIZE", "Limits",
      "the largest command",
      1, 1, set_memory, AT(client_query_buffer_limit), MB, LLONG_MAX, K_MEMORY, NULL },
    { "client-backlog-limit", "SIZE", NULL,
      "unanswered commands a client may hold before it is not read (0: none)",
      1, 1, set_memory, AT(client_backlog_limit), 0, LLONG_MAX, K_MEMORY, NULL },
    { "maxmemory-clients", "SIZE", NULL,
      "what all clients may hold; past it the largest are evicted (0: none)",
      1, 1, set_maxmemory_clients, AT(maxmemory_clients), 0, LLONG_MAX, K_MEMORY, NULL },
    { "proto-max-bulk-len", "SIZE", NULL,
      "the longest bulk string",
      1, 1, set_memory, AT(proto_max_bulk_len), MB, LLONG_MAX, K_MEMORY, NULL },
    { "slowlog-log-slower-than", "US", NULL,
      "a request this slow goes in SLOWLOG (-1: none)",
      1, 1, set_int, AT(slowlog_log_slower_than), -1, INT_MAX, K_INT, NULL },
    { "slowlog-max-len", "N", NULL,
      "SLOWLOG entries the proxy keeps",
      1, 1, set_int, AT(slowlog_max_len), 0, INT_MAX, K_INT, NULL },
    { "tracking-table-max-keys", "N", NULL,
      "keys client-side caching tracks per worker (0: no bound)",
      1, 1, set_int, AT(tracking_table_max_keys), 0, INT_MAX, K_INT, NULL },
    { "tracking-node-bcast", "yes|no", NULL,
      "the masters push every key written, not only the keys read (CLIENT TRACKING BCAST)",
      1, 1, set_yesno, AT(tracking_node_bcast), 0, 0, K_YESNO, NULL },
    { "client-output-buffer-limit", "HARD SOFT SECONDS", NULL,
      "unread replies a client may hold",
      3, 3, set_output_limit, 0, 0, 86400, K_SPECIAL, show_output_limit },
    { "client-output-buffer-limit-pubsub", "HARD SOFT SECONDS", NULL,
      "the same for a subscribed client",
      3, 3, set_output_limit, 0, 0, 86400, K_SPECIAL, show_output_limit },

    /* Cluster */
    { "node-connect-timeout-ms", "MS", "Cluster",
      "connect timeout to a node",
      1, 1, set_int, AT(node_connect_timeout_ms), 1, 3600000, K_INT, NULL },
    { "node-timeout-ms", "MS", NULL,
      "longest a node may answer nothing before its commands fail",
      1, 1, set_int, AT(node_timeout_ms), 1, 3600000, K_INT, NULL },
    { "slow-command-timeout-ms", "MS", NULL,
      "longest a node that answers elsewhere (BUSY) may hold a command",
      1, 1, set_int, AT(slow_command_timeout_ms), 1000, 86400000, K_INT, NULL },
    { "topology-refresh-ms", "MS", NULL,
      "periodic slot map refresh (0: off)",
      1, 1, set_int, AT(topology_refresh_ms), 0, 86400000, K_INT, NULL },
    { "cluster-wait-at-start", "yes|no", NULL,
      "wait for the cluster at start (no: exit 1)",
      1, 1, set_yesno, AT(cluster_wait_at_start), 0, 0, K_YESNO, NULL },
    { "max-redirects", "N", NULL,
      "MOVED/ASK followed per command before backoff",
      1, 1, set_int, AT(max_redirects), 0, 100, K_INT, NULL },
    { "retry-attempts", "N", NULL,
      "retries of a command that did not run",
      1, 1, set_int, AT(retry_attempts), 0, 1000, K_INT, NULL },
    { "retry-base-ms", "MS", NULL,
      "the first retry's delay, doubled each retry",
      1, 1, set_int, AT(retry_base_ms), 1, 60000, K_INT, NULL },
    { "retry-max-ms", "MS", NULL,
      "the longest retry delay",
      1, 1, set_int, AT(retry_max_ms), 1, 600000, K_INT, NULL },
    { "replica-acks", "N [TIMEOUT-MS]", NULL,
      "a write is answered once N replicas have it (WAIT N TIMEOUT-MS; 0: at once)",
      1, 2, set_replica_acks, 0, 0, 600000, K_SPECIAL, show_replica_acks },
    { "read-from", "master|replica|prefer-replica", NULL,
      "where read-only commands go: masters, or their replicas (with read-your-writes)",
      1, 1, set_read_from, 0, 0, 0, K_SPECIAL, show_read_from },
    { "replica-max-lag-ms", "MS", NULL,
      "a replica further behind its master than this takes no reads",
      1, 1, set_int, AT(replica_max_lag_ms), 200, 60000, K_INT, NULL },
    { "dedicated-connections-max", "N", NULL,
      "per worker: node connections for WATCH and blocking commands",
      1, 1, set_int, AT(dedicated_connections_max), 1, 100000, K_INT, NULL },
    { "round-pause-us", "US", NULL,
      "pause after a busy event-loop round (0: off)",
      1, 1, set_int, AT(round_pause_us), 0, 1000, K_INT, NULL },
    { "io-uring", "yes|no", NULL,
      "batch socket reads and writes with io_uring",
      1, 1, set_yesno, AT(io_uring), 0, 0, K_YESNO, NULL },
    { "worker-nice", "N", NULL,
      "added to the workers' niceness, 0-19",
      1, 1, set_int, AT(worker_nice), 0, 19, K_INT, NULL },
    { "address-map", "FROM TO...", NULL,
      "connect to TO when the cluster announces FROM",
      2, -2, set_address_map, 0, 0, 0, K_SPECIAL, show_address_map },

    /* Key layout */
    { "layout-rules", "FILE [PREFIX...]", "Key layout",
      "a key layout rules file and the prefixes it serves (repeatable)",
      1, -1, set_layout_rules, 0, 0, 0, K_SPECIAL, show_layout_rules },
    { "layout-prefix", "P...", NULL,
      "the prefixes of rules files that name none",
      1, -1, set_layout_prefix, 0, 0, 0, K_SPECIAL, show_layout_prefix },
    { "layout-allow-legacy-data", "yes|no", NULL,
      "start on a prefix that holds legacy keys",
      1, 1, set_yesno, AT(layout_allow_legacy_data), 0, 0, K_YESNO, NULL },

    /* Logging */
    { "log-level", "debug|verbose|notice|warning", "Logging",
      "the least level logged",
      1, 1, set_log_level, 0, 0, 0, K_SPECIAL, show_log_level },
    { "log-file", "FILE", NULL,
      "append the log here (unset: stderr)",
      1, 1, set_log_file, AT(log_file), 0, 0, K_STRING, NULL },

    /* Lifecycle */
    { "config-watch", "yes|no", "Lifecycle",
      "reload when the config's files change",
      1, 1, set_yesno, AT(config_watch), 0, 0, K_YESNO, NULL },
    { "readiness-grace-ms", "MS", NULL,
      "a master down this long turns /readyz 503 (0: at once)",
      1, 1, set_int, AT(readiness_grace_ms), 0, 3600000, K_INT, NULL },
    { "liveness-stall-ms", "MS", NULL,
      "a worker stalled this long fails /healthz",
      1, 1, set_int, AT(liveness_stall_ms), 1000, 3600000, K_INT, NULL },
    { "shutdown-timeout-ms", "MS", NULL,
      "longest SIGTERM drain",
      1, 1, set_int, AT(shutdown_timeout_ms), 0, 3600000, K_INT, NULL },
    { "daemonize", "yes|no", NULL,
      "run in the background (not as PID 1)",
      1, 1, set_yesno, AT(daemonize), 0, 0, K_YESNO, NULL },
    { "pidfile", "FILE", NULL,
      "holds the PID while the proxy runs",
      1, 1, set_string, AT(pidfile), 0, 0, K_STRING, NULL },
};

/* ---- the table ---- */

#define NDIRECTIVES (sizeof directives / sizeof directives[0])

const struct directive *directive_at(size_t i)
{
    return i < NDIRECTIVES ? &directives[i] : NULL;
}

const char *config_directive_name(size_t i)
{
    return i < NDIRECTIVES ? directives[i].name : NULL;
}

const struct directive *directive_find(const char *name)
{
    for (size_t i = 0; i < NDIRECTIVES; i++)
        if (strcasecmp(name, directives[i].name) == 0)
            return &directives[i];
    return NULL;
}

int directive_is_live(const struct directive *d)
{
    return d->set == set_int || d->set == set_memory || d->set == set_maxmemory_clients ||
           d->set == set_output_limit || d->set == set_replica_acks || d->set == set_read_from;
}

char directive_env_separator(const struct directive *d)
{
    return d->set == set_layout_rules ? ';' : '\0';
}

void config_loader_init(struct config_loader *l)
{
    memset(l, 0, sizeof *l);
    config_defaults(&l->c);
    l->cluster_source = l->address_map_source = l->layout_prefix_source = -1;
    l->users_source = l->layout_rules_source = l->script_map_source = -1;
}

/* ---- applying one ---- */

int directive_apply(struct config_loader *l, const struct directive *d, const char *where,
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

int config_read_aclfile(const char *path, struct config_user **users, int *n, char *err,
                        size_t errlen)
{
    struct config_loader l;
    char *argv[] = { (char *)path };
    config_loader_init(&l);
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

/* ---- every value ---- */

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
    c->tracking_table_max_keys = 1000000;
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
    c->slow_command_timeout_ms = 60000;
    c->topology_refresh_ms = 10000;
    c->cluster_wait_at_start = 1;
    c->max_redirects = 5;
    c->retry_attempts = 10;
    c->retry_base_ms = 10;
    c->retry_max_ms = 500;
    c->replica_acks_timeout_ms = REPLICA_ACKS_TIMEOUT_MS;
    c->replica_max_lag_ms = 1000;
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

