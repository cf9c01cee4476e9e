/*
 * daemon: running outside a container: `daemonize yes` and `pidfile PATH`.
 *
 *   main ─ daemon_detach() ─ fork ─┬─ parent: waits on a pipe; exits 0 once
 *                                  │  the child says it serves, else 1
 *                                  └─ child: setsid, starts the proxy,
 *                                     pidfile_write, daemon_ready()
 *
 * So `tagproxy conf` with daemonize yes returns only once the proxy
 * listens (or has failed, with its exit status saying so), as an init
 * script wants. Must be called before any thread exists. In a container
 * the proxy is PID 1 and stays in the foreground whatever daemonize says.
 *
 * The pidfile holds the serving process's PID and a newline; it is written
 * once the proxy listens and removed when it exits (only if it still holds
 * this PID).
 */
#ifndef TAGPROXY_DAEMON_H
#define TAGPROXY_DAEMON_H

#include <stddef.h>

/* Fork; returns in the child only (the parent exits). 0, or -1 with the
 * reason in err (nothing forked). */
int daemon_detach(char *err, size_t errlen);

/* In a detached child: the proxy serves; the waiting parent exits 0.
 * Stdin goes to /dev/null, and so do stdout and stderr when quiet (the log
 * has its own file); else they stay where the caller sent them
 * (`tagproxy conf 2>>log`). No-op when not detached. */
void daemon_ready(int quiet);

/* Write getpid() to path (created or replaced; mode 0644). 0 or -1 with the
 * reason in err. */
int pidfile_write(const char *path, char *err, size_t errlen);

/* Remove path if it holds getpid(). */
void pidfile_remove(const char *path);

#endif
