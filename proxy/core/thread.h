/*
 * thread: a worker's thread (worker.h holds its state): its event loop, the
 * listeners it accepts clients on, and its mailbox, where it takes what
 * other threads posted (a topology, a config snapshot, a key layout, a
 * drain, clients to close, a family's mail, the stop).
 */
#ifndef TAGPROXY_THREAD_H
#define TAGPROXY_THREAD_H

#include <stddef.h>

struct config_snapshot;
struct proxy;
struct topology;
struct worker;

/* Set w up as worker id of p, with topology t. 0, or -1. */
int thread_init(struct worker *w, struct proxy *p, int id, struct topology *t);

/* Listen on host:port (SO_REUSEPORT: every worker on the same port). */
int thread_listen(struct worker *w, const char *host, int port, char *err, size_t errlen);

/* The tls-listen listener: clients accepted there speak TLS
 * (proxy->tls_server). */
int thread_listen_tls(struct worker *w, const char *host, int port, char *err, size_t errlen);

/* Accept on the process's unixsocket too (fd stays open when w is done). */
int thread_listen_unix(struct worker *w, int fd, char *err, size_t errlen);

/* On w's thread: w takes s now, and every other worker of its proxy
 * through its mailbox (ACL SETUSER: the next command of w's client sees
 * it). The caller keeps its reference. */
void thread_share_config(struct worker *w, struct config_snapshot *s);

/* Run w's loop on a thread of its own, until worker_post_stop; then join it. */
int thread_start(struct worker *w);
void thread_join(struct worker *w);

#endif
