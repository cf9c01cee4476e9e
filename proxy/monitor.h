/*
 * monitor: MONITOR through the proxy. A client that sends MONITOR sees, one
 * line each, every command the proxy's clients run, on every worker thread,
 * as redis-server 7.0 writes them:
 *
 *   +1796096676.319537 [0 127.0.0.1:59304] "get" "k"
 *
 * Shown as Redis shows them: a command once it has passed the checks that
 * refuse it before it runs (unknown, arity, NOAUTH, NOPERM; and the
 * proxy's own refusals), never an administrative one (CMD_ADMIN), with the
 * secrets of AUTH and HELLO ... AUTH as "(redacted)"; as its client sent it
 * (legacy key names, before the key layout rewrites them; MGET once, not
 * its parts). What runs inside a script runs on a node and is not seen.
 *
 * The line is made once, on the thread that runs the command. That
 * worker's monitors get it at once; another worker's through its inbox (a
 * buffer under the inbox's lock) and one ring of its mailbox per batch of
 * lines. With no monitor anywhere a command costs one relaxed atomic read.
 */
#ifndef TAGPROXY_MONITOR_H
#define TAGPROXY_MONITOR_H

#include <pthread.h>
#include <sys/queue.h>

#include "proxy/request.h"

struct client;
struct evbuffer;
struct worker;

/* Lines waiting for a worker's monitors past this are dropped, and that
 * worker's monitors closed, as Redis closes a monitor over its output limit. */
#define MONITOR_INBOX_MAX (64u * 1024 * 1024)

/* A worker's monitors and the lines other workers left for them. */
struct monitor_inbox {
    TAILQ_HEAD(, client) clients;   /* this thread's only */
    int count;                      /* of clients; other threads read it (atomic) */
    pthread_mutex_t lock;
    struct evbuffer *lines;         /* under lock */
    int overflow;                   /* under lock: lines were dropped */
};

int monitor_inbox_init(struct monitor_inbox *m);

/* MONITOR (local.h): +OK, then every command's line. */
void monitor_command(struct request *r);

/* Register MONITOR with its handler (route.h); a client that goes stops
 * monitoring (client.h). */
void monitor_register(void);

/* c stops monitoring (RESET, or it closes). */
void monitor_stop(struct client *c);

/* The lines other workers left in w's inbox go to its monitors (its mailbox). */
void monitor_take_inbox(struct worker *w);

/* r is about to run: its line to every monitor, once per request. The
 * caller checks first that some client monitors (proxy->nmonitors, an
 * atomic read), so that nobody monitoring costs nothing more. */
void monitor_feed(struct request *r);

#endif
