/*
 * relay: the cheapest proxy there is, for make bench to measure what the
 * extra hop alone costs on the machine (scripts/bench.sh, target "relay").
 *
 *   build/bench/relay LISTEN_PORT UPSTREAM_PORT      (both on 127.0.0.1)
 *
 * Each client connection gets its own connection to the upstream server, and
 * bytes are copied both ways as they come: no parsing, no routing, no
 * multiplexing, one read() and one write() per ready socket. A ratio to the
 * direct server that tagproxy beats says that what stands between a proxy
 * and the direct figure is the hop (two more sockets per request, and a
 * third process on the CPUs), not the proxy's own work.
 *
 * Not part of tagproxy. Writes block: the peers are redis-server and
 * redis-benchmark, which always read.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define RELAY_MAX_FD 65536

static int peer_of[RELAY_MAX_FD];      /* the other end of each relayed socket */
static char buf[65536];

static int loopback_socket(int port, int listening)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0)
        return -1;
    if (listening) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 511) == 0)
            return fd;
    } else if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return fd;
    }
    close(fd);
    return -1;
}

static void watch(int ep, int fd)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* A new client: pair it with a new upstream connection, or drop it. */
static void relay_accept(int ep, int listener, int upstream_port)
{
    int client = accept4(listener, NULL, NULL, SOCK_CLOEXEC), one = 1;
    if (client < 0)
        return;
    int upstream = loopback_socket(upstream_port, 0);
    if (upstream < 0 || client >= RELAY_MAX_FD || upstream >= RELAY_MAX_FD) {
        fprintf(stderr, "relay: cannot relay a client: %s\n",
                upstream < 0 ? strerror(errno) : "too many connections");
        close(client);
        if (upstream >= 0)
            close(upstream);
        return;
    }
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    peer_of[client] = upstream;
    peer_of[upstream] = client;
    watch(ep, client);
    watch(ep, upstream);
}

/* Copy what fd has to its peer; close both when either end is done. The
 * read does not wait: an event of this round may be for a socket an earlier
 * one closed (its number possibly taken again since). */
static void relay_copy(int fd)
{
    if (peer_of[fd] < 0)
        return;
    ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    for (ssize_t off = 0; n > 0 && off < n;) {
        ssize_t w = write(peer_of[fd], buf + off, (size_t)(n - off));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            n = 0;
            break;
        }
        off += w;
    }
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        int peer = peer_of[fd];
        peer_of[fd] = peer_of[peer] = -1;
        close(peer);            /* closing also takes both out of the epoll set */
        close(fd);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: relay LISTEN_PORT UPSTREAM_PORT\n");
        return 2;
    }
    int upstream_port = atoi(argv[2]);
    int listener = loopback_socket(atoi(argv[1]), 1);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (listener < 0 || ep < 0) {
        fprintf(stderr, "relay: cannot listen on 127.0.0.1:%s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    for (int fd = 0; fd < RELAY_MAX_FD; fd++)
        peer_of[fd] = -1;
    watch(ep, listener);
    for (;;) {
        struct epoll_event ready[256];
        int n = epoll_wait(ep, ready, 256, -1);
        for (int i = 0; i < n; i++) {
            if (ready[i].data.fd == listener)
                relay_accept(ep, listener, upstream_port);
            else
                relay_copy(ready[i].data.fd);
        }
    }
}
