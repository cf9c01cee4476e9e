/*
 * refresh: the control thread's reads of the cluster's slot map.
 *
 * A refresh asks the known masters first, then the seeds (cluster/
 * topology.h), and publishes the new map to every worker and to the admin
 * thread. It runs every topology-refresh-ms, and whenever a thread asks for
 * one (proxy_want_refresh: a MOVED, a lost connection), those closer
 * together than 100 ms merged into one.
 */
#ifndef TAGPROXY_REFRESH_H
#define TAGPROXY_REFRESH_H

struct proxy;
struct topology;

/* The refresh's events on p's control loop, the periodic one started. 0,
 * or -1 out of memory. */
int refresh_start(struct proxy *p);

/* (Re)build p->source from p->snap (seeds from p->cfg). */
void refresh_source_update(struct proxy *p);

/* The periodic refresh at p->snap's topology-refresh-ms. */
void refresh_timer_update(struct proxy *p);

/* Log t when its map differs from old's (NULL: the first). */
void refresh_log(const struct topology *old, const struct topology *t);

#endif
