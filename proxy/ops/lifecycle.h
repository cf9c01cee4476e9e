/*
 * lifecycle: what the control thread does on signals.
 *
 * SIGHUP, reload: the config is read again from the same sources as at
 * start (the file, then the environment, then the command line's --name
 * overrides, which still win). A new config that does not load or
 * validate is logged with its FILE:LINE reason and the old one is kept.
 * Otherwise it becomes a new snapshot (snapshot.h) posted to every worker:
 * limits, timeouts, retry policy, requirepass, log-level, address-map and
 * what else the workers read per command or per new connection apply to
 * new work, and no connection is dropped. The layout-rules file is read
 * again (for the running layout-prefix list) and the new key layout goes
 * to the workers with the snapshot; a rules file with an error refuses the
 * reload like a config error. Directives read only at start (listen,
 * threads, cluster, daemonize, pidfile, log-file, layout-prefix,
 * layout-allow-legacy-data, whether layout-rules is set at all,
 * script-cache-max-bytes, script-map, tls-* and cluster-tls-*) keep
 * their running value; a change to one is logged as needing a restart.
 *
 * SIGTERM or SIGINT, drain: proxy_draining() turns true at once, every
 * worker closes its listener and closes each client once it is idle
 * (worker.h): the commands it has sent are answered and the replies
 * written. When no client is left, or shutdown-timeout-ms has passed (the
 * rest are closed then), the loop ends and the process exits 0. A second
 * SIGINT (Ctrl-C twice) stops at once; a second SIGTERM is ignored.
 */
#ifndef TAGPROXY_LIFECYCLE_H
#define TAGPROXY_LIFECYCLE_H

#include <stddef.h>

struct config;
struct layout_ref;
struct proxy;

/* Add the signal events to p->base. 0, or -1 with the reason in err. */
int lifecycle_install(struct proxy *p, char *err, size_t errlen);

/* Read the config again and publish it (what SIGHUP does). 0 when the new
 * config is in use, -1 when it was refused (logged; the old one stays). */
int lifecycle_reload(struct proxy *p);

/* Start draining (what SIGTERM does); the event loop ends when done. */
void lifecycle_drain(struct proxy *p, const char *why);

/* The key layout of c's layout-rules files, each for its prefixes, into
 * *out (NULL when c has none). 0, or -1 with FILE:LINE: what is wrong. */
int lifecycle_layout_build(const struct config *c, struct layout_ref **out, char *err,
                           size_t errlen);

#endif
