#include "proxy/ops/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The write end of the pipe the parent waits on; -1 when not detached. */
static int ready_fd = -1;

/* The parent: exit 0 when the child says it serves, 1 when it does not. */
static void parent_wait(int fd, pid_t child)
{
    char ok = 0;
    ssize_t n;
    while ((n = read(fd, &ok, 1)) < 0 && errno == EINTR)
        ;
    if (n == 1 && ok == '1')
        _exit(0);
    int status;
    if (waitpid(child, &status, WNOHANG) == child || n == 0)
        fprintf(stderr, "tagproxy: the daemon did not start (its reason is in the log)\n");
    _exit(1);
}

int daemon_detach(char *err, size_t errlen)
{
    int fds[2];
    if (pipe(fds) < 0) {
        snprintf(err, errlen, "cannot daemonize: pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "cannot daemonize: fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid > 0) {
        close(fds[1]);
        parent_wait(fds[0], pid);
    }
    close(fds[0]);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    ready_fd = fds[1];
    setsid();       /* no controlling terminal: a closed shell sends no SIGHUP */
    return 0;
}

void daemon_ready(int quiet)
{
    if (ready_fd < 0)
        return;
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        if (quiet) {
            dup2(null, 1);
            dup2(null, 2);
        }
        if (null > 2)
            close(null);
    }
    if (write(ready_fd, "1", 1) < 0) {
        /* the parent is gone: nobody to tell */
    }
    close(ready_fd);
    ready_fd = -1;
}

int pidfile_write(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    int ok = f && fprintf(f, "%d\n", (int)getpid()) > 0;
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok) {
        snprintf(err, errlen, "cannot write pidfile %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

void pidfile_remove(const char *path)
{
    char buf[32];
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    int mine = fgets(buf, sizeof buf, f) && atoi(buf) == (int)getpid();
    fclose(f);
    if (mine)
        unlink(path);
}
