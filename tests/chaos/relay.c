/*
 * relay: a userspace TCP relay on loopback between the proxy and one node,
 * whose faults the tests set (these machines have no netem). See chaos.h.
 *
 * One thread polls every connection. What comes from the proxy is written
 * to the node and back, through a queue per direction whose chunks carry
 * the time they may leave (latency) and leave only as fast as the cap
 * allows (bandwidth). The other faults act on every connection, open or
 * new: reset after N bytes from the node (an RST), blackhole (everything
 * read is dropped, nothing answers), half-close (the proxy reads EOF, the
 * node's side stays open), unreachable (open connections reset; the
 * listener's accept queue is cut to one and filled, so the kernel drops
 * new SYNs and a connect hangs as toward a host that is gone).
 */
#include "tests/chaos/chaos.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RELAY_PAIRS 256
#define RELAY_CHUNK 16384

struct chunk {
    struct chunk *next;
    long long due_ms;
    size_t len, off;
    char data[];
};

/* One direction of a pair: bytes read from `from`, waiting for `to`. */
struct flow {
    int from, to;
    struct chunk *head, *tail;
    size_t queued;
    long long sent;              /* bytes written to `to` */
    int eof;                     /* `from` closed */
};

struct pair {
    int used;
    struct flow up;              /* proxy -> node */
    struct flow down;            /* node -> proxy */
    int half_closed;
};

struct relay {
    int listen_fd, target_port, port;
    pthread_t thread;
    volatile int stop;
    volatile int mode;
    volatile long arg;
    struct pair pairs[RELAY_PAIRS];
    long long tokens_ms;         /* the bandwidth bucket's last refill */
    long tokens;
    int fillers[2];              /* unreachable: what fills the accept queue */
};

static void flow_clear(struct flow *f)
{
    while (f->head) {
        struct chunk *c = f->head;
        f->head = c->next;
        free(c);
    }
    f->tail = NULL;
    f->queued = 0;
}

/* Closes both sides; with an RST (SO_LINGER 0) when reset. */
static void pair_close(struct pair *p, int reset)
{
    struct linger hard = { 1, 0 };
    if (reset) {
        setsockopt(p->up.from, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
        setsockopt(p->up.to, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    }
    close(p->up.from);
    close(p->up.to);
    flow_clear(&p->up);
    flow_clear(&p->down);
    memset(p, 0, sizeof *p);
}

static void pair_open(struct relay *r, int client)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)r->target_port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int node = socket(AF_INET, SOCK_STREAM, 0);
    struct pair *p = NULL;
    for (int i = 0; i < RELAY_PAIRS && !p; i++)
        if (!r->pairs[i].used)
            p = &r->pairs[i];
    if (!p || node < 0 || connect(node, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(client);
        if (node >= 0)
            close(node);
        return;
    }
    p->used = 1;
    p->up.from = p->down.to = client;
    p->up.to = p->down.from = node;
}

static void flow_read(struct relay *r, struct flow *f, long long now)
{
    struct chunk *c = malloc(sizeof *c + RELAY_CHUNK);
    if (!c)
        return;
    ssize_t n = read(f->from, c->data, RELAY_CHUNK);
    if (n <= 0) {
        free(c);
        if (n == 0 || (errno != EAGAIN && errno != EINTR))
            f->eof = 1;
        return;
    }
    if (r->mode == RELAY_BLACKHOLE) {
        free(c);                /* dropped: nothing answers */
        return;
    }
    c->next = NULL;
    c->len = (size_t)n;
    c->off = 0;
    c->due_ms = now + (r->mode == RELAY_LATENCY ? r->arg : 0);
    if (f->tail)
        f->tail->next = c;
    else
        f->head = c;
    f->tail = c;
    f->queued += (size_t)n;
}

/* Writes what is due, within the bandwidth cap. */
static void flow_write(struct relay *r, struct flow *f, long long now)
{
    while (f->head && f->head->due_ms <= now) {
        struct chunk *c = f->head;
        size_t len = c->len - c->off;
        if (r->mode == RELAY_BANDWIDTH) {
            if (r->tokens <= 0)
                return;
            len = len < (size_t)r->tokens ? len : (size_t)r->tokens;
        }
        ssize_t n = write(f->to, c->data + c->off, len);
        if (n <= 0)
            return;
        if (r->mode == RELAY_BANDWIDTH)
            r->tokens -= n;
        c->off += (size_t)n;
        f->sent += n;
        f->queued -= (size_t)n;
        if (c->off < c->len)
            return;
        f->head = c->next;
        if (!f->head)
            f->tail = NULL;
        free(c);
    }
}

static void refill(struct relay *r, long long now)
{
    if (r->mode != RELAY_BANDWIDTH) {
        r->tokens_ms = now;
        return;
    }
    long gained = (long)((now - r->tokens_ms) * r->arg / 1000);
    if (gained > 0) {
        r->tokens += gained;
        r->tokens_ms = now;
        if (r->tokens > r->arg / 10 + 1)
            r->tokens = r->arg / 10 + 1;    /* bursts of at most 100 ms */
    }
}

/* The faults that act on a whole pair. 1: it was closed. */
static int pair_faults(struct relay *r, struct pair *p)
{
    if (r->mode == RELAY_UNREACHABLE ||
        (r->mode == RELAY_RESET && p->down.sent >= r->arg)) {
        pair_close(p, 1);
        return 1;
    }
    if (r->mode == RELAY_HALFCLOSE && !p->half_closed) {
        shutdown(p->down.to, SHUT_WR);      /* the proxy reads EOF */
        p->half_closed = 1;
    }
    if (p->up.eof || p->down.eof) {
        pair_close(p, 0);
        return 1;
    }
    return 0;
}

static void *relay_main(void *arg)
{
    struct relay *r = arg;
    struct pollfd fds[1 + 2 * RELAY_PAIRS];
    struct pair *of[1 + 2 * RELAY_PAIRS];
    while (!r->stop) {
        int n = 0;
        fds[n++] = (struct pollfd){ .fd = r->listen_fd, .events = POLLIN };
        for (int i = 0; i < RELAY_PAIRS; i++) {
            struct pair *p = &r->pairs[i];
            if (!p->used)
                continue;
            of[n] = p;
            fds[n++] = (struct pollfd){ .fd = p->up.from, .events = POLLIN };
            of[n] = p;
            fds[n++] = (struct pollfd){ .fd = p->down.from, .events = POLLIN };
        }
        poll(fds, (nfds_t)n, 5);
        long long now = now_ms();
        if ((fds[0].revents & POLLIN) && r->mode != RELAY_UNREACHABLE) {
            int c = accept(r->listen_fd, NULL, NULL);
            if (c >= 0)
                pair_open(r, c);
        }
        for (int i = 1; i < n; i++)
            if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                struct pair *p = of[i];
                if (p->used)
                    flow_read(r, fds[i].fd == p->up.from ? &p->up : &p->down, now);
            }
        refill(r, now);
        for (int i = 0; i < RELAY_PAIRS; i++) {
            struct pair *p = &r->pairs[i];
            if (!p->used)
                continue;
            flow_write(r, &p->up, now);
            flow_write(r, &p->down, now);
            pair_faults(r, p);
        }
    }
    for (int i = 0; i < RELAY_PAIRS; i++)
        if (r->pairs[i].used)
            pair_close(&r->pairs[i], 0);
    return NULL;
}

struct relay *relay_start(int target_port)
{
    struct relay *r = calloc(1, sizeof *r);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof sa;
    if (!r)
        die("out of memory");
    r->target_port = target_port;
    r->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (r->listen_fd < 0 || bind(r->listen_fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        listen(r->listen_fd, 128) < 0 ||
        getsockname(r->listen_fd, (struct sockaddr *)&sa, &len) < 0)
        die("relay: %s", strerror(errno));
    r->port = ntohs(sa.sin_port);
    r->mode = RELAY_PASS;
    pthread_create(&r->thread, NULL, relay_main, r);
    return r;
}

int relay_port(const struct relay *r)
{
    return r->port;
}

/* unreachable on: a backlog of 0 holds one connection, and the fillers
 * take it (non-blocking: the second one's SYN is the first dropped) */
static void unreachable(struct relay *r, int on)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)r->port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (!on) {
        for (int i = 0; i < 2; i++)
            if (r->fillers[i] > 0)
                close(r->fillers[i]);
        r->fillers[0] = r->fillers[1] = 0;
        listen(r->listen_fd, 128);
        return;
    }
    listen(r->listen_fd, 0);
    for (int i = 0; i < 2; i++) {
        r->fillers[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (r->fillers[i] >= 0)
            connect(r->fillers[i], (struct sockaddr *)&sa, sizeof sa);
    }
}

void relay_set(struct relay *r, enum relay_mode mode, long arg)
{
    if (r->mode == RELAY_UNREACHABLE && mode != RELAY_UNREACHABLE)
        unreachable(r, 0);
    r->arg = arg;
    r->tokens = 0;
    r->mode = (int)mode;
    if (mode == RELAY_UNREACHABLE)
        unreachable(r, 1);
}

void relay_stop(struct relay *r)
{
    r->stop = 1;
    pthread_join(r->thread, NULL);
    close(r->listen_fd);
    free(r);
}
