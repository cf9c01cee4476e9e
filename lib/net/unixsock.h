/*
 * unixsock: the `unixsocket PATH` listener, for a client on the same host
 * (a sidecar's bot sharing a volume with it) that wants to skip the TCP
 * stack, where most of the proxy's own CPU goes.
 *
 * One listening socket for the whole process, made at start; every worker
 * accepts on it (a Unix socket has no SO_REUSEPORT spreading, so the
 * workers' loops race for each connection and one wins). Like Redis, a
 * stale socket file at PATH is replaced; unlike Redis, not one a live
 * process still accepts on (two sidecars given the same path), and
 * anything else there stops the start. The file goes when draining starts
 * (new clients are refused at once), the socket itself once the workers
 * are done with it.
 */
#ifndef TAGPROXY_UNIXSOCK_H
#define TAGPROXY_UNIXSOCK_H

#include <stddef.h>
#include <sys/types.h>

struct unixsock {
    int fd;                 /* listening, non-blocking; -1: none */
    char *path;
    ino_t ino;              /* the file we made: removed only if still ours */
};

/* Listen on path with mode bits perm (0: as the umask leaves them).
 * 0, or -1 with the reason in err. */
int unixsock_listen(struct unixsock *u, const char *path, int perm, char *err, size_t errlen);

/* Remove the socket file if it is still the one we made. */
void unixsock_unlink(struct unixsock *u);

/* unixsock_unlink, then close the socket. No-op on an unused one. */
void unixsock_close(struct unixsock *u);

#endif
