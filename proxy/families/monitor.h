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

struct client;

/* Register MONITOR with its handler (route.h), the monitors' inbox on
 * every worker (worker.h), the feed of every command (router.h), and that
 * a client that goes stops monitoring (client.h). */
void monitor_register(void);

/* c stops monitoring (RESET, or it closes). */
void monitor_stop(struct client *c);

#endif
