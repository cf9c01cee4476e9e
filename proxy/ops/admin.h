/*
 * admin: the operator's HTTP endpoint (admin-listen, default 127.0.0.1:8380)
 * on its own thread and event loop, never on a worker's request path.
 *
 *   GET /healthz  200 "ok" while the process serves (draining included)
 *   GET /readyz   200 "ready" only when all of these hold, else 503 and a
 *                 one-line reason (the first that fails):
 *                   1. no drain has started (proxy_draining(): SIGTERM,
 *                      SIGINT, lifecycle.h);
 *                   2. the control thread's slot map covers all 16384 slots;
 *                   3. every master of that map is connected, as the admin
 *                      thread's health probes see it (cluster/health.h):
 *                      its probe connection answered PING with PONG, and
 *                      no PING has gone unanswered for node-timeout-ms since.
 *                 Probes run every second on their own connections (one
 *                 per master), so readiness does not wait for traffic and a
 *                 stopped master (SIGSTOP: connections still accepted) is
 *                 seen within about a second plus node-timeout-ms.
 *   GET /metrics  Prometheus text (metrics.h)
 *   anything else 404; methods other than GET and HEAD 501 (libevent).
 *
 * The control thread hands every new topology to admin_post_topology() and
 * every reloaded config to admin_post_config(); the probes' findings go to
 * the masters' state (proxy/core/masters.h: address, slots, up or down and why),
 * which /readyz, INFO and /metrics read.
 *
 * admin-listen off: no thread, no probes, no endpoint; the masters' state
 * still has the masters and slots (their state unknown) for INFO.
 *
 * During a drain /readyz answers 503 "draining" from its first moment, and
 * /healthz 200 until the process exits.
 */
#ifndef TAGPROXY_ADMIN_H
#define TAGPROXY_ADMIN_H

#include <stddef.h>

struct config_snapshot;
struct proxy;
struct topology;
struct metrics;

/* Bind admin-listen and start the admin thread (nothing when off), then
 * take p->topo. 0, or -1 with the reason in err (cannot bind: a start-up
 * error). Call once the workers exist, before they start. */
int admin_start(struct proxy *p, char *err, size_t errlen);

/* Stop the thread and close the endpoint (after the workers have stopped). */
void admin_stop(void);

/* From the control thread: s is the config from now on (a reload): the
 * probes take its node timeouts and login (a reference is taken). */
void admin_post_config(struct config_snapshot *s);

/* From the control thread: t is the slot map from now on. */
void admin_post_topology(struct topology *t);


#endif
