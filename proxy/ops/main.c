/*
 * tagproxy: a Redis-protocol proxy that lets clients written for one Redis
 * server use a Redis Cluster unchanged.
 *
 *   build/tagproxy [conf-file] [--directive value ...]
 *   build/tagproxy -t [conf-file] [--directive value ...]   check the config, exit
 *   build/tagproxy --help | --version | ... --dump-config   answered by cli.h
 *   build/tagproxy layout explain [options] KEY...           what the layout does (explain.h)
 *   build/tagproxy migrate inspect --source URL --prefix P   a keyspace's layouts (migrate.h)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/log.h"
#include "proxy/config/config.h"
#include "proxy/config/snapshot.h"
#include "proxy/core/proxy.h"
#include "proxy/core/scripts.h"
#include "proxy/families/families.h"
#include "keylayout/layout.h"
#include "keylayout/layoutload.h"
#include "migrate/migrate.h"
#include "proxy/ops/cli.h"
#include "proxy/ops/daemon.h"
#include "proxy/ops/explain.h"
#include "proxy/ops/lifecycle.h"
#include "proxy/ops/process.h"
#include "lib/proto/command.h"

extern char **environ;

/* -t / --test-config: load and validate as a start would (users and the
 * layout-rules file included), connect nowhere. */
static int test_config(int argc, char **argv)
{
    struct config *c = calloc(1, sizeof *c);
    struct config_snapshot *s = NULL;
    struct layout_ref *layout = NULL;
    char err[1024];
    if (!c || config_load_main(c, argc, argv, environ, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", c ? err : "out of memory");
        free(c);
        return 1;
    }
    log_min_level = LOG_WARNING;    /* no "key layout ..." notice */
    if (families_init() < 0) {
        fprintf(stderr, "out of memory\n");
        config_free(c);
        free(c);
        return 1;
    }
    if (config_validate(c, err, sizeof err) < 0 ||
        lifecycle_layout_build(c, &layout, err, sizeof err) < 0) {
        config_free(c);
        free(c);
    } else {
        s = snapshot_new(c, 1, 0, layout ? layout->layout : NULL, err,
                         sizeof err);           /* the users; owns c now */
    }
    layout_ref_put(layout);
    if (!s) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    printf("tagproxy: the configuration %s is valid\n", s->cfg->path ? s->cfg->path : "(no file)");
    snapshot_unref(s);
    return 0;
}

/* daemonize yes: detach now, before any thread. Not as PID 1 (a container). */
static int maybe_detach(const struct config *c, char *err, size_t errlen)
{
    if (!c->daemonize)
        return 0;
    if (getpid() == 1) {
        log_notice("main", "running as PID 1 (a container): staying in the foreground");
        return 0;
    }
    return daemon_detach(err, errlen);
}

int main(int argc, char **argv)
{
    static struct proxy p;
    char err[1024];
    int rc;

    if (argc > 1 && strcmp(argv[1], "migrate") == 0)
        return migrate_main(argc - 2, argv + 2, stdout);
    if (argc > 2 && strcmp(argv[1], "layout") == 0 && strcmp(argv[2], "explain") == 0)
        return explain_main(argc - 3, argv + 3, environ, stdout);
    if (argc > 1 && strcmp(argv[1], "layout") == 0) {
        fprintf(stderr, "usage: tagproxy layout explain [options] KEY... (the only layout "
                "command)\n");
        return 2;
    }
    if (cli_answer(argc, argv, environ, &rc))
        return rc;
    if (argc > 1 && (strcmp(argv[1], "-t") == 0 || strcmp(argv[1], "--test-config") == 0)) {
        argv[1] = argv[0];
        return test_config(argc - 1, argv + 1);
    }
    signal(SIGPIPE, SIG_IGN);   /* a vanished peer is an error to handle, not a death */
    if (config_load_main(&p.cfg, argc, argv, environ, err, sizeof err) < 0 ||
        config_validate(&p.cfg, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    p.argc = argc;      /* SIGHUP reads the same sources again */
    p.argv = argv;
    p.envp = environ;
    if (log_open(p.cfg.log_file, p.cfg.log_level) < 0) {
        fprintf(stderr, "cannot open log file %s\n", p.cfg.log_file);
        return 1;
    }
    if (maybe_detach(&p.cfg, err, sizeof err) < 0) {
        log_warning("main", "%s", err);
        return 1;
    }
    if (families_init() < 0) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    scripts_init((size_t)p.cfg.script_cache_max_bytes);
    for (int i = 0; i < p.cfg.nscript_map; i++)
        if (scripts_map_add(p.cfg.script_map[i].sha, p.cfg.script_map[i].body,
                            p.cfg.script_map[i].len) < 0) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
    if (process_start(&p, err, sizeof err) < 0 ||
        (p.cfg.pidfile && pidfile_write(p.cfg.pidfile, err, sizeof err) < 0)) {
        log_warning("main", "cannot start: %s", err);
        return 1;
    }
    daemon_ready(p.cfg.log_file != NULL);
    rc = process_run(&p);
    if (p.cfg.pidfile)
        pidfile_remove(p.cfg.pidfile);
    return rc;
}
