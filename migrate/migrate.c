/*
 * migrate: the `tagproxy migrate` command line. See migrate.h.
 */
#include "migrate/migrate.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "keylayout/layout.h"
#include "keylayout/layoutload.h"
#include "migrate/copy.h"
#include "migrate/inspect.h"
#include "migrate/keyspace.h"

#define MIGRATE_DEFAULT_RULES "conf/layouts/botmesh-v1.rules"

struct migrate_opts {
    const char *source, *target, *target_cluster, *prefix, *rules;
    const char *report;             /* FILE.json */
    const char *direction, *mirror;
    struct copy_opts copy;
    struct keyspace_tls tls;
};

static int usage(const char *why)
{
    fprintf(stderr, "tagproxy migrate: %s\n"
            "usage: tagproxy migrate inspect --source URL --prefix P [--layout-rules FILE]\n"
            "       tagproxy migrate --source URL [--target URL | --target-cluster HOST:PORT]\n"
            "            --prefix P [--layout-rules FILE] [--dry-run] [--overwrite] [--allow-live]\n"
            "            [--include FAMILY,...] [--delete-source] [--report FILE.json]\n"
            "            [--direction legacy-to-cluster|cluster-to-legacy] [--mirror yes|no]\n"
            "       TLS (rediss://): [--tls-ca-cert-file F] [--tls-cert-file F]\n"
            "            [--tls-key-file F] [--tls-server-name NAME] [--tls-insecure]\n", why);
    return 2;
}

/* The value of option argv[*i] ("--name value"), or NULL at the end. */
static const char *value_of(int argc, char **argv, int *i)
{
    return *i + 1 < argc ? argv[++*i] : NULL;
}

static int parse(int argc, char **argv, struct migrate_opts *o)
{
    static const struct { const char *name; size_t off; } opts[] = {
        { "--source", offsetof(struct migrate_opts, source) },
        { "--target", offsetof(struct migrate_opts, target) },
        { "--target-cluster", offsetof(struct migrate_opts, target_cluster) },
        { "--include", offsetof(struct migrate_opts, copy.include) },
        { "--report", offsetof(struct migrate_opts, report) },
        { "--direction", offsetof(struct migrate_opts, direction) },
        { "--mirror", offsetof(struct migrate_opts, mirror) },
        { "--prefix", offsetof(struct migrate_opts, prefix) },
        { "--layout-rules", offsetof(struct migrate_opts, rules) },
        { "--tls-ca-cert-file", offsetof(struct migrate_opts, tls.ca_cert_file) },
        { "--tls-cert-file", offsetof(struct migrate_opts, tls.cert_file) },
        { "--tls-key-file", offsetof(struct migrate_opts, tls.key_file) },
        { "--tls-server-name", offsetof(struct migrate_opts, tls.server_name) },
    };
    for (int i = 0; i < argc; i++) {
        size_t k = 0;
        int *flag = strcmp(argv[i], "--tls-insecure") == 0 ? &o->tls.insecure
                  : strcmp(argv[i], "--dry-run") == 0 ? &o->copy.dry_run
                  : strcmp(argv[i], "--overwrite") == 0 ? &o->copy.overwrite
                  : strcmp(argv[i], "--allow-live") == 0 ? &o->copy.allow_live
                  : strcmp(argv[i], "--delete-source") == 0 ? &o->copy.delete_source : NULL;
        if (flag) {
            *flag = 1;
            continue;
        }
        while (k < sizeof opts / sizeof opts[0] && strcmp(argv[i], opts[k].name) != 0)
            k++;
        const char *v = k < sizeof opts / sizeof opts[0] ? value_of(argc, argv, &i) : NULL;
        if (!v) {
            fprintf(stderr, "tagproxy migrate: %s: %s\n", argv[i],
                    k < sizeof opts / sizeof opts[0] ? "needs a value" : "unknown option");
            return -1;
        }
        *(const char **)((char *)o + opts[k].off) = v;
    }
    return 0;
}

static int inspect(const struct migrate_opts *o, const struct layout *l, FILE *out)
{
    char err[1024];
    struct keyspace ks;
    struct inspect_report *rep = calloc(1, sizeof *rep);
    int rc = 1;
    if (!rep)
        snprintf(err, sizeof err, "out of memory");
    else if (keyspace_open(&ks, o->source, &o->tls, err, sizeof err) == 0 &&
             inspect_run(&ks, l, o->prefix, 1, rep, err, sizeof err) == 0) {
        fprintf(out, "source %s:%d (%s)\n", ks.url.host, ks.url.port,
                ks.cluster ? "a cluster: every master" : "one server");
        inspect_print(rep, o->prefix, out);
        rc = 0;
    }
    if (rep)
        keyspace_close(&ks);
    if (rc)
        fprintf(stderr, "tagproxy migrate: %s\n", err);
    free(rep);
    return rc;
}

static int write_report(const struct migrate_opts *o, const struct copy_report *rep, char *err,
                        size_t errlen)
{
    if (!o->report)
        return 0;
    FILE *f = fopen(o->report, "w");
    if (f)
        copy_json(rep, &o->copy, f);
    if (!f || fclose(f) != 0) {
        snprintf(err, errlen, "%s: cannot write the report", o->report);
        return 1;
    }
    return 0;
}

/* The copy: source (and target) open, the report printed. */
static int copy(struct migrate_opts *o, const struct layout *l, FILE *out)
{
    char err[1024], url[600];
    struct keyspace *src = calloc(1, sizeof *src), *dst = NULL;
    struct copy_report *rep = calloc(1, sizeof *rep);
    int rc = 1;
    const char *target = o->target;
    if (o->target_cluster) {
        snprintf(url, sizeof url, "redis://%s", o->target_cluster);
        target = url;
    }
    o->copy.prefix = o->prefix;
    if (!src || !rep)
        snprintf(err, sizeof err, "out of memory");
    else if (keyspace_open(src, o->source, &o->tls, err, sizeof err) == 0 &&
             (!target || ((dst = calloc(1, sizeof *dst)) &&
                          keyspace_open(dst, target, &o->tls, err, sizeof err) == 0)) &&
             copy_run(src, dst ? dst : src, l, &o->copy, rep, err, sizeof err) == 0) {
        copy_print(rep, &o->copy, out);
        rc = write_report(o, rep, err, sizeof err);
    } else if (target && !dst) {
        snprintf(err, sizeof err, "out of memory");
    }
    if (rc)
        fprintf(stderr, "tagproxy migrate: %s\n", err);
    if (rc && rep && rep->copied + rep->skipped > 0)
        copy_print(rep, &o->copy, stderr);      /* what was done before the stop */
    if (src)
        keyspace_close(src);
    if (dst)
        keyspace_close(dst);
    free(src);
    free(dst);
    free(rep);
    return rc;
}

static struct layout *load_rules(const struct migrate_opts *o)
{
    char err[1024];
    const char *prefixes[1] = { o->prefix };
    struct layout *l = layout_load_file(o->rules ? o->rules : MIGRATE_DEFAULT_RULES, prefixes,
                                        1, err, sizeof err);
    if (!l)
        fprintf(stderr, "tagproxy migrate: %s\n", err);
    return l;
}

int migrate_main(int argc, char **argv, FILE *out)
{
    struct migrate_opts o = { 0 };
    int inspecting = argc > 0 && strcmp(argv[0], "inspect") == 0;
    if (parse(argc - inspecting, argv + inspecting, &o) < 0)
        return usage("bad options");
    if (!o.source || !o.prefix)
        return usage("--source and --prefix are required");
    if (o.target && o.target_cluster)
        return usage("--target and --target-cluster name the same thing: give one");
    if (o.direction && strcmp(o.direction, "cluster-to-legacy") != 0 &&
        strcmp(o.direction, "legacy-to-cluster") != 0)
        return usage("--direction is legacy-to-cluster or cluster-to-legacy");
    if (o.mirror && strcmp(o.mirror, "yes") != 0 && strcmp(o.mirror, "no") != 0)
        return usage("--mirror is yes or no");
    o.copy.rollback = o.direction && strcmp(o.direction, "cluster-to-legacy") == 0;
    o.copy.mirror = !o.mirror || strcmp(o.mirror, "yes") == 0;
    if (o.mirror && !o.copy.rollback)
        return usage("--mirror goes with --direction cluster-to-legacy");
    char err[300];
    if (layout_check_prefix(o.prefix, err, sizeof err) < 0)
        return usage(err);
    struct layout *l = load_rules(&o);
    if (!l)
        return 1;
    int rc = inspecting ? inspect(&o, l, out) : copy(&o, l, out);
    layout_free(l);
    return rc;
}
