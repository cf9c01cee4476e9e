/*
 * tagproxy: a Redis-protocol proxy that lets clients written for one Redis
 * server use a Redis Cluster unchanged.
 *
 *   build/tagproxy [conf-file] [--directive value ...]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "proxy/command.h"
#include "proxy/config.h"
#include "proxy/log.h"
#include "proxy/proxy.h"
#include "proxy/router.h"
#include "proxy/scripts.h"

extern char **environ;

int main(int argc, char **argv)
{
    static struct proxy p;
    char err[1024];

    signal(SIGPIPE, SIG_IGN);   /* a vanished peer is an error to handle, not a death */
    if (config_load_main(&p.cfg, argc, argv, environ, err, sizeof err) < 0 ||
        config_validate(&p.cfg, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (log_open(p.cfg.log_file, p.cfg.log_level) < 0) {
        fprintf(stderr, "cannot open log file %s\n", p.cfg.log_file);
        return 1;
    }
    router_init();
    scripts_init((size_t)p.cfg.script_cache_max_bytes);
    for (int i = 0; i < p.cfg.nscript_map; i++)
        if (scripts_map_add(p.cfg.script_map[i].sha, p.cfg.script_map[i].body,
                            p.cfg.script_map[i].len) < 0) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
    if (proxy_start(&p, err, sizeof err) < 0) {
        log_warning("main", "cannot start: %s", err);
        return 1;
    }
    return proxy_run(&p);
}
