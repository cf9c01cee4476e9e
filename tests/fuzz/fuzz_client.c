/*
 * libFuzzer harness for the request path in front of the router: random
 * bytes from a client, read by proxy/core/client.c (client_read_cb) on a real
 * worker (proxy/core/worker.c, its own event base), routed to a node.
 *
 * Set up once: a config of defaults (no io_uring, no round pause, a long
 * node timeout, so that nothing depends on the clock), a topology whose
 * every slot is owned by one node, and that node: a listening socket on
 * 127.0.0.1 served on the worker's event base, which answers +OK to every
 * command it reads. The worker is not started as a thread: its loop runs
 * here, one non-blocking round at a time.
 *
 * Per input: a socketpair, one end handed to client_accept, the input
 * written to the other in pieces while the loop runs and the proxy's
 * output is read and dropped, until nothing moves for a few rounds; then
 * the client's end is closed and the loop runs until the worker has freed
 * the client. A client that is never freed once its peer has gone aborts
 * (a leak across inputs).
 */
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/base/log.h"
#include "proxy/config/snapshot.h"
#include "proxy/core/client.h"
#include "proxy/core/merge.h"
#include "proxy/core/proxy.h"
#include "proxy/core/route.h"
#include "proxy/core/router.h"
#include "proxy/core/thread.h"
#include "proxy/core/worker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_PIECE      4096    /* bytes written to the client socket at a time */
#define FUZZ_IDLE       4       /* rounds without progress that end an input */
#define FUZZ_ROUNDS     64      /* rounds an input runs at most */
#define FUZZ_CLOSE_MAX  256     /* rounds a closed client has to be freed in */
#define NODE_MAX        64      /* connections the fake node holds */
#define NODE_BUF        (64 * 1024)

/* One connection of the fake node: what it read and has not answered yet. */
struct node_peer {
    int fd;
    struct event *ev;
    char *buf;
    size_t len;
};

static struct proxy fz_proxy;
static struct worker fz_worker;
static struct node_peer fz_peers[NODE_MAX];
static int fz_listen_fd = -1;
static uint64_t fz_moved;      /* bytes moved by anyone: progress */

static void refresh_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;          /* the one topology stays: nothing to read again */
}

static void peer_close(struct node_peer *p)
{
    event_free(p->ev);
    close(p->fd);
    free(p->buf);
    memset(p, 0, sizeof *p);
    p->fd = -1;
}

/*
 * The length of the first whole command in buf (a RESP array of bulk
 * strings, as the proxy writes to a node), 0 while incomplete, -1 when it
 * is not one.
 */
static long command_len(const char *buf, size_t len)
{
    size_t i = 0;
    long n = 0, argc;
    if (len < 1)
        return 0;
    if (buf[0] != '*')
        return -1;
    for (i = 1; i < len && buf[i] != '\r'; i++) {
        if (buf[i] < '0' || buf[i] > '9' || n > 1000000)
            return -1;
        n = n * 10 + (buf[i] - '0');
    }
    if (i + 1 >= len)
        return 0;
    i += 2;
    for (argc = n; argc > 0; argc--) {
        long b = 0;
        if (i >= len)
            return 0;
        if (buf[i] != '$')
            return -1;
        for (i++; i < len && buf[i] != '\r'; i++) {
            if (buf[i] < '0' || buf[i] > '9' || b > NODE_BUF)
                return -1;
            b = b * 10 + (buf[i] - '0');
        }
        if (i + 1 >= len)
            return 0;
        i += 2 + (size_t)b + 2;
        if (i > len)
            return 0;
    }
    return (long)i;
}

static void peer_read_cb(evutil_socket_t fd, short what, void *arg)
{
    struct node_peer *p = arg;
    (void)what;
    if (p->len == NODE_BUF) {           /* a command the node cannot hold */
        peer_close(p);
        return;
    }
    ssize_t n = read(fd, p->buf + p->len, NODE_BUF - p->len);
    if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EINTR))
            peer_close(p);
        return;
    }
    fz_moved += (uint64_t)n;
    p->len += (size_t)n;
    long one;
    size_t used = 0, nreplies = 0;
    while ((one = command_len(p->buf + used, p->len - used)) > 0) {
        used += (size_t)one;
        nreplies++;
    }
    /* one write for all, on a TCP_NODELAY socket: a reply held back by
     * Nagle would wait for the delayed ACK, a timer the loop does not run */
    static char replies[NODE_BUF / 4 * 5];
    for (size_t i = 0; i < nreplies; i++)
        memcpy(replies + 5 * i, "+OK\r\n", 5);
    if (one < 0 || write(fd, replies, 5 * nreplies) != (ssize_t)(5 * nreplies)) {
        peer_close(p);
        return;
    }
    memmove(p->buf, p->buf + used, p->len - used);
    p->len -= used;
}

static void node_accept_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    (void)arg;
    int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0)
        return;
    for (int i = 0; i < NODE_MAX; i++) {
        struct node_peer *p = &fz_peers[i];
        if (p->fd >= 0)
            continue;
        int one = 1;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        p->fd = c;
        p->buf = malloc(NODE_BUF);
        p->ev = event_new(fz_worker.base, c, EV_READ | EV_PERSIST, peer_read_cb, p);
        if (!p->buf || !p->ev || event_add(p->ev, NULL) < 0)
            abort();
        return;
    }
    close(c);           /* more connections than a worker ever opens to one node */
}

/* The fake node's listening socket on 127.0.0.1; its address in sin. */
static void node_listen(struct sockaddr_in *sin)
{
    socklen_t len = sizeof *sin;
    memset(sin, 0, sizeof *sin);
    sin->sin_family = AF_INET;
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fz_listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fz_listen_fd < 0 || bind(fz_listen_fd, (struct sockaddr *)sin, sizeof *sin) < 0 ||
        listen(fz_listen_fd, 64) < 0 ||
        getsockname(fz_listen_fd, (struct sockaddr *)sin, &len) < 0)
        abort();
}

/* The fake node answers on the worker's loop. */
static void node_serve(void)
{
    struct event *ev = event_new(fz_worker.base, fz_listen_fd, EV_READ | EV_PERSIST,
                                 node_accept_cb, NULL);
    if (!ev || event_add(ev, NULL) < 0)
        abort();
}

/* One node at sin owning every slot. */
static struct topology *one_node_topology(const struct sockaddr_in *sin)
{
    struct topology *t = calloc(1, sizeof *t);
    if (!t || !(t->nodes = calloc(1, sizeof *t->nodes)))
        abort();
    t->nnodes = 1;
    t->refs = 1;
    t->covered = SLOT_COUNT;
    t->version = 1;
    snprintf(t->nodes[0].announced, sizeof t->nodes[0].announced, "127.0.0.1:%d",
             ntohs(sin->sin_port));
    memcpy(t->nodes[0].target, t->nodes[0].announced, sizeof t->nodes[0].target);
    memcpy(&t->nodes[0].sa, sin, sizeof *sin);
    t->nodes[0].salen = sizeof *sin;
    snprintf(t->nodes[0].id, sizeof t->nodes[0].id, "%040d", 1);
    for (int s = 0; s < SLOT_COUNT; s++)
        t->slot_node[s] = 0;
    return t;
}

static void fuzz_setup(void)
{
    char err[300];
    struct proxy *p = &fz_proxy;
    log_min_level = LOG_WARNING + 1;    /* no log lines: the fuzzer's output stays readable */
    config_defaults(&p->cfg);
    p->cfg.io_uring = 0;
    p->cfg.round_pause_us = 0;
    p->cfg.node_timeout_ms = 3600 * 1000;
    p->cfg.node_connect_timeout_ms = 3600 * 1000;
    p->snap = snapshot_new(&p->cfg, 0, 0, NULL, err, sizeof err);
    if (!p->snap) {
        fprintf(stderr, "fuzz_client: %s\n", err);
        abort();
    }
    p->unixsock.fd = -1;
    p->workers = &fz_worker;
    p->nworkers = 1;
    for (int i = 0; i < NODE_MAX; i++)
        fz_peers[i].fd = -1;
    struct sockaddr_in sin;
    node_listen(&sin);
    p->topo = one_node_topology(&sin);
    /* every command forwarded by its keys, as a worker routes it before
     * the families register (families.h): the fake node answers +OK to
     * everything, which no subscription would take as its confirmation */
    if (route_init() < 0)
        abort();
    client_init(router_dispatch);
    request_merge_register(merge_replies);
    if (thread_init(&fz_worker, p, 0, p->topo) < 0)
        abort();
    node_serve();
    p->refresh_event = event_new(fz_worker.base, -1, 0, refresh_cb, p);
    if (!p->refresh_event)
        abort();
    if (fz_worker.topo != p->topo)
        abort();
}

/* Read and drop what the proxy wrote to the client. */
static void drain_client(int fd)
{
    char buf[16384];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        fz_moved += (uint64_t)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        fuzz_setup();
        ready = 1;
    }
    struct worker *w = &fz_worker;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
        abort();
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    if (!client_accept(w, sv[0], (struct sockaddr *)&sun, sizeof sun)) {
        close(sv[1]);
        return 0;
    }
    size_t off = 0;
    for (int round = 0, idle = 0; round < FUZZ_ROUNDS && idle < FUZZ_IDLE; round++) {
        uint64_t before = fz_moved;
        if (off < size) {
            size_t piece = size - off < FUZZ_PIECE ? size - off : FUZZ_PIECE;
            ssize_t n = write(sv[1], data + off, piece);
            if (n > 0) {
                off += (size_t)n;
                fz_moved += (uint64_t)n;
            } else if (n < 0 && errno != EAGAIN) {
                off = size;     /* the proxy closed it */
            }
        }
        event_base_loop(w->base, EVLOOP_NONBLOCK);
        drain_client(sv[1]);
        idle = fz_moved == before && off == size ? idle + 1 : 0;
    }
    close(sv[1]);
    int round = 0;
    for (int after = 0; round < FUZZ_CLOSE_MAX && after < 2; round++) {
        event_base_loop(w->base, EVLOOP_NONBLOCK);
        after = w->nclients == 0 ? after + 1 : 0;   /* then one more: the free runs */
    }
    if (w->nclients != 0) {
        fprintf(stderr, "fuzz_client: a client whose peer closed is still there after %d rounds\n",
                round);
        abort();
    }
    return 0;
}
