/*
 * trackload: GET load from RESP3 clients, with client-side caching's
 * tracking on or off, for make bench's tracking rows (scripts/bench.sh):
 * redis-benchmark cannot turn CLIENT TRACKING on for its connections.
 *
 *   build/bench/trackload PORT CLIENTS PIPELINE REQUESTS KEYSPACE track|plain
 *
 * Each of CLIENTS connections (127.0.0.1:PORT) sends HELLO 3, and with
 * "track" CLIENT TRACKING ON; then each sends PIPELINE GETs of random keys
 * key:0 .. key:KEYSPACE-1 at once and waits for their replies (invalidation
 * pushes are read and skipped), again, until REQUESTS GETs have been
 * answered in all. It prints "requests/s p50-ms p99-ms" (latency of a
 * batch, from its write to its last reply), as bench.sh reads
 * redis-benchmark's figures.
 *
 * Not part of tagproxy. One thread, epoll; the server is the proxy.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 1024
#define MAX_PIPELINE 256
#define BUF_SIZE (1 << 16)
#define LAT_BUCKETS 100000      /* latency histogram: 10 us buckets up to 1 s */

struct conn {
    int fd;
    char in[BUF_SIZE];
    size_t have;
    int owed;                   /* replies of the batch in flight */
    uint64_t sent_us;
};

static struct conn conns[MAX_CLIENTS];
static uint64_t hist[LAT_BUCKETS + 1];
static uint64_t rng = 88172645463325252ull;

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            usleep(50);
            continue;
        }
        if (w <= 0)
            die("write");
        p += w;
        n -= (size_t)w;
    }
}

/* Bytes of the whole RESP value at p[0..n), 0 when incomplete. */
static size_t value_len(const char *p, size_t n)
{
    const char *nl = memchr(p, '\n', n);
    if (!nl)
        return 0;
    size_t head = (size_t)(nl - p) + 1;
    long long v = atoll(p + 1);
    switch (p[0]) {
    case '$':
    case '=':
    case '!':
        if (v < 0)
            return head;
        return head + (size_t)v + 2 <= n ? head + (size_t)v + 2 : 0;
    case '*':
    case '>':
    case '~':
    case '%': {
        size_t at = head;
        long long elems = p[0] == '%' ? 2 * v : v;
        for (long long i = 0; i < elems; i++) {
            size_t one = value_len(p + at, n - at);
            if (!one)
                return 0;
            at += one;
        }
        return at;
    }
    default:                    /* + - : _ , # ( */
        return head;
    }
}

/* A reply or push at c->in: its length (pushes are counted in *pushes). */
static size_t take_value(struct conn *c, int *is_push)
{
    if (c->have == 0)
        return 0;
    *is_push = c->in[0] == '>';
    return value_len(c->in, c->have);
}

/* Read until n replies (pushes skipped) are in, blocking. */
static void await(struct conn *c, int n)
{
    while (n > 0) {
        int push;
        size_t len = take_value(c, &push);
        if (len) {
            memmove(c->in, c->in + len, c->have - len);
            c->have -= len;
            n -= !push;
            continue;
        }
        ssize_t r = read(c->fd, c->in + c->have, sizeof c->in - c->have);
        if (r < 0 && errno == EAGAIN) {
            usleep(50);
            continue;
        }
        if (r <= 0)
            die("read");
        c->have += (size_t)r;
    }
}

static void send_batch(struct conn *c, int pipeline, long keyspace)
{
    char out[MAX_PIPELINE * 64];
    size_t at = 0;
    for (int i = 0; i < pipeline; i++) {
        char key[32];
        int klen = snprintf(key, sizeof key, "key:%lu", (unsigned long)(next_rand() % (uint64_t)keyspace));
        at += (size_t)snprintf(out + at, sizeof out - at, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", klen,
                               key);
    }
    c->owed = pipeline;
    c->sent_us = now_us();
    send_all(c->fd, out, at);
}

static void open_conn(struct conn *c, int port, int track)
{
    static const char hello[] = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
    static const char on[] = "*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\nON\r\n";
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int one = 1;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0)
        die("connect");
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    send_all(c->fd, hello, sizeof hello - 1);
    await(c, 1);
    if (track) {
        send_all(c->fd, on, sizeof on - 1);
        await(c, 1);
    }
}

static double percentile(uint64_t total, double q)
{
    uint64_t want = (uint64_t)((double)total * q), seen = 0;
    for (int i = 0; i <= LAT_BUCKETS; i++) {
        seen += hist[i];
        if (seen > want)
            return (double)i * 0.01;
    }
    return (double)LAT_BUCKETS * 0.01;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: trackload PORT CLIENTS PIPELINE REQUESTS KEYSPACE track|plain\n");
        return 2;
    }
    int port = atoi(argv[1]), nclients = atoi(argv[2]), pipeline = atoi(argv[3]);
    long requests = atol(argv[4]), keyspace = atol(argv[5]);
    int track = strcmp(argv[6], "track") == 0;
    if (nclients < 1 || nclients > MAX_CLIENTS || pipeline < 1 || pipeline > MAX_PIPELINE ||
        requests < 1 || keyspace < 1) {
        fprintf(stderr, "trackload: CLIENTS 1..%d, PIPELINE 1..%d, REQUESTS and KEYSPACE > 0\n",
                MAX_CLIENTS, MAX_PIPELINE);
        return 2;
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        die("epoll_create1");
    for (int i = 0; i < nclients; i++) {
        open_conn(&conns[i], port, track);
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &conns[i] };
        if (epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev) < 0)
            die("epoll_ctl");
    }
    long sent = 0, answered = 0;
    uint64_t batches = 0, start = now_us();
    for (int i = 0; i < nclients && sent < requests; i++) {
        send_batch(&conns[i], pipeline, keyspace);
        sent += pipeline;
    }
    while (answered < sent) {
        struct epoll_event evs[64];
        int n = epoll_wait(ep, evs, 64, 10000);
        if (n <= 0)
            die("epoll_wait (no reply within 10 s)");
        for (int e = 0; e < n; e++) {
            struct conn *c = evs[e].data.ptr;
            ssize_t r = read(c->fd, c->in + c->have, sizeof c->in - c->have);
            if (r <= 0)
                die("read");
            c->have += (size_t)r;
            int push;
            size_t len;
            while (c->owed > 0 && (len = take_value(c, &push)) > 0) {
                memmove(c->in, c->in + len, c->have - len);
                c->have -= len;
                if (push)
                    continue;
                answered++;
                if (--c->owed == 0) {
                    uint64_t lat = (now_us() - c->sent_us) / 10;
                    hist[lat < LAT_BUCKETS ? lat : LAT_BUCKETS]++;
                    batches++;
                    if (sent < requests) {
                        send_batch(c, pipeline, keyspace);
                        sent += pipeline;
                    }
                }
            }
        }
    }
    double secs = (double)(now_us() - start) / 1e6;
    printf("%.0f %.3f %.3f\n", (double)answered / secs, percentile(batches, 0.5),
           percentile(batches, 0.99));
    for (int i = 0; i < nclients; i++)
        close(conns[i].fd);
    return 0;
}
