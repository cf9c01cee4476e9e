/*
 * process: the proxy's start and run, on the control thread: the config's
 * TLS contexts and key layout, the first slot map (refresh.h), the workers
 * listening, the signals (lifecycle.h) and the admin endpoint (admin.h);
 * then the workers run until a drain or a stop ends the control loop.
 */
#ifndef TAGPROXY_PROCESS_H
#define TAGPROXY_PROCESS_H

#include <stddef.h>

struct proxy;

/* Set p up from p->cfg (the process's one proxy: proxy_instance). 0, or
 * -1 with err. */
int process_start(struct proxy *p, char *err, size_t errlen);

/* Run the workers and the control loop until the proxy stops; the exit
 * status. */
int process_run(struct proxy *p);

#endif
