/*
 * migrate: the `tagproxy migrate` command line. See migrate.h.
 */
#include "migrate/migrate.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "keylayout/layout.h"
#include "migrate/inspect.h"
#include "migrate/keyspace.h"

#define MIGRATE_DEFAULT_RULES "conf/layouts/botmesh-v1.rules"

struct migrate_opts {
    const char *source, *prefix, *rules;
    struct keyspace_tls tls;
};

static int usage(const char *why)
{
    fprintf(stderr, "tagproxy migrate: %s\n"
            "usage: tagproxy migrate inspect --source URL --prefix P [--layout-rules FILE]\n"
            "       [--tls-ca-cert-file F] [--tls-cert-file F] [--tls-key-file F]\n"
            "       [--tls-server-name NAME] [--tls-insecure]\n", why);
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
        { "--prefix", offsetof(struct migrate_opts, prefix) },
        { "--layout-rules", offsetof(struct migrate_opts, rules) },
        { "--tls-ca-cert-file", offsetof(struct migrate_opts, tls.ca_cert_file) },
        { "--tls-cert-file", offsetof(struct migrate_opts, tls.cert_file) },
        { "--tls-key-file", offsetof(struct migrate_opts, tls.key_file) },
        { "--tls-server-name", offsetof(struct migrate_opts, tls.server_name) },
    };
    for (int i = 0; i < argc; i++) {
        size_t k = 0;
        if (strcmp(argv[i], "--tls-insecure") == 0) {
            o->tls.insecure = 1;
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

static int inspect(const struct migrate_opts *o, FILE *out)
{
    char err[1024];
    const char *prefixes[1] = { o->prefix };
    struct layout *l = layout_load_file(o->rules ? o->rules : MIGRATE_DEFAULT_RULES, prefixes,
                                        1, err, sizeof err);
    if (!l) {
        fprintf(stderr, "tagproxy migrate: %s\n", err);
        return 1;
    }
    struct keyspace ks;
    struct inspect_report *rep = calloc(1, sizeof *rep);
    int rc = 1;
    if (!rep)
        snprintf(err, sizeof err, "out of memory");
    else if (keyspace_open(&ks, o->source, &o->tls, err, sizeof err) == 0 &&
             inspect_run(&ks, l, o->prefix, rep, err, sizeof err) == 0) {
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
    layout_free(l);
    return rc;
}

int migrate_main(int argc, char **argv, FILE *out)
{
    struct migrate_opts o = { 0 };
    int inspecting = argc > 0 && strcmp(argv[0], "inspect") == 0;
    if (parse(argc - inspecting, argv + inspecting, &o) < 0)
        return usage("bad options");
    if (!inspecting)
        return usage("copying a keyspace is not built yet (issue 25): only `tagproxy migrate "
                     "inspect` is");
    if (!o.source || !o.prefix)
        return usage("--source and --prefix are required");
    char err[300];
    if (layout_check_prefix(o.prefix, err, sizeof err) < 0)
        return usage(err);
    return inspect(&o, out);
}
