#include "lib/net/unixsock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define UNIXSOCK_BACKLOG 511        /* as the TCP listeners (and Redis) */

/* Someone accepts connections on the socket at sa. */
static int unixsock_in_use(const struct sockaddr_un *sa)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int used = fd >= 0 && connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0;
    if (fd >= 0)
        close(fd);
    return used;
}

/* A socket file left by an earlier run goes; one that a live process
 * listens on, or anything else at path, stays and stops the start. */
static int unixsock_clear(const struct sockaddr_un *sa, char *err, size_t errlen)
{
    const char *path = sa->sun_path;
    struct stat st;
    if (lstat(path, &st) < 0)
        return 0;
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "unixsocket %s: exists and is not a socket", path);
        return -1;
    }
    if (unixsock_in_use(sa)) {
        snprintf(err, errlen, "unixsocket %s: another process listens there", path);
        return -1;
    }
    if (unlink(path) < 0) {
        snprintf(err, errlen, "unixsocket %s: cannot remove the old socket: %s", path,
                 strerror(errno));
        return -1;
    }
    return 0;
}

static int unixsock_fail(struct unixsock *u, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "unixsocket %s: %s: %s", u->path, what, strerror(errno));
    unixsock_close(u);
    return -1;
}

int unixsock_listen(struct unixsock *u, const char *path, int perm, char *err, size_t errlen)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct stat st;
    u->fd = -1;
    u->ino = 0;
    u->path = strdup(path);
    if (!u->path) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);   /* length checked by config */
    if (unixsock_clear(&sa, err, errlen) < 0) {
        unixsock_close(u);
        return -1;
    }
    u->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (u->fd < 0)
        return unixsock_fail(u, "socket", err, errlen);
    if (bind(u->fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        return unixsock_fail(u, "bind", err, errlen);
    if (stat(path, &st) == 0)
        u->ino = st.st_ino;
    if (perm && chmod(path, (mode_t)perm) < 0)
        return unixsock_fail(u, "chmod", err, errlen);
    if (listen(u->fd, UNIXSOCK_BACKLOG) < 0)
        return unixsock_fail(u, "listen", err, errlen);
    return 0;
}

void unixsock_unlink(struct unixsock *u)
{
    struct stat st;
    if (u->path && u->ino && lstat(u->path, &st) == 0 && st.st_ino == u->ino)
        unlink(u->path);
    u->ino = 0;
}

void unixsock_close(struct unixsock *u)
{
    unixsock_unlink(u);
    if (u->fd >= 0)
        close(u->fd);
    u->fd = -1;
    free(u->path);
    u->path = NULL;
}
