/*
 * syncconn: blocking socket (+ SSL) and hiredis's reader. See syncconn.h.
 */
#include "cluster/syncconn.h"

#include <errno.h>
#include <event2/buffer.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "lib/base/log.h"
#include "lib/net/tls.h"
#include "lib/proto/resp.h"

struct syncconn {
    int fd;
    SSL *ssl;
    struct syncconn_reader reader;
    struct evbuffer *out;       /* commands appended, not flushed yet */
    char addr[280];             /* host:port, for the log */
};

int syncconn_reader_init(struct syncconn_reader *r, size_t max)
{
    memset(r, 0, sizeof *r);
    r->max = max;
    reply_scanner_init(&r->scan);
    r->hiredis = redisReaderCreate();
    return r->hiredis ? 0 : -1;
}

void syncconn_reader_free(struct syncconn_reader *r)
{
    free(r->buf);
    if (r->hiredis)
        redisReaderFree(r->hiredis);
    memset(r, 0, sizeof *r);
}

int syncconn_reader_feed(struct syncconn_reader *r, const char *p, size_t n,
                         char *why, size_t whylen)
{
    if (n == 0)
        return 0;               /* nothing to keep (r->buf may not exist yet) */
    if (n > r->max - r->len) {
        snprintf(why, whylen, "reply larger than %zu bytes", r->max);
        return -1;
    }
    if (r->len + n > r->cap) {
        size_t cap = r->cap ? r->cap : 16384;
        while (cap < r->len + n)
            cap *= 2;
        cap = cap < r->max ? cap : r->max;
        char *b = realloc(r->buf, cap);
        if (!b) {
            snprintf(why, whylen, "out of memory");
            return -1;
        }
        r->buf = b;
        r->cap = cap;
    }
    memcpy(r->buf + r->len, p, n);
    r->len += n;
    return 0;
}

/* buf[0..len), one complete reply as the scanner framed it, through
 * hiredis. */
static int reader_parse(struct syncconn_reader *r, size_t len, redisReply **reply,
                        char *why, size_t whylen)
{
    void *out = NULL;
    if (redisReaderFeed(r->hiredis, r->buf, len) != REDIS_OK ||
        redisReaderGetReply(r->hiredis, &out) != REDIS_OK || !out) {
        snprintf(why, whylen, "malformed reply: %s",
                 r->hiredis->err ? r->hiredis->errstr : "not one whole reply");
        if (out)
            freeReplyObject(out);
        return -1;
    }
    *reply = out;
    return 1;
}

int syncconn_reader_next(struct syncconn_reader *r, redisReply **reply,
                         char *why, size_t whylen)
{
    enum reply_scan_status st = REPLY_SCAN_MORE;
    if (r->scanned == r->len)
        return 0;               /* nothing new to scan (r->buf may not exist yet) */
    r->scanned += reply_scan(&r->scan, r->buf + r->scanned, r->len - r->scanned, &st);
    if (st == REPLY_SCAN_ERROR) {
        snprintf(why, whylen, "malformed reply: not RESP2");
        return -1;
    }
    if (st == REPLY_SCAN_MORE)
        return 0;
    size_t len = r->scanned;
    if (reader_parse(r, len, reply, why, whylen) < 0)
        return -1;
    memmove(r->buf, r->buf + len, r->len - len);
    r->len -= len;
    r->scanned = 0;
    reply_scanner_init(&r->scan);
    return 1;
}

/* Non-blocking connect bounded by ms, then back to blocking. 0 or -1. */
static int connect_within(int fd, const struct sockaddr *sa, socklen_t len, int ms)
{
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    int rc = connect(fd, sa, len);
    if (rc < 0 && errno == EINPROGRESS) {
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        int err = 0;
        socklen_t elen = sizeof err;
        rc = poll(&p, 1, ms);
        if (rc == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        if (rc > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == 0 && err) {
            errno = err;
            rc = -1;
        }
        rc = rc > 0 ? 0 : -1;
    }
    fcntl(fd, F_SETFL, flags);
    return rc;
}

static void set_timeouts(int fd, int ms)
{
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static int dial(const char *host, int port, int ms, char *why, size_t whylen)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *res;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        snprintf(why, whylen, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect_within(fd, a->ai_addr, a->ai_addrlen, ms) < 0) {
            err = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        snprintf(why, whylen, "%s", err == ETIMEDOUT ? "Connection timed out" : strerror(err));
    return fd;
}

static int tls_handshake(struct syncconn *c, const char *host, const struct syncconn_opts *o,
                         char *why, size_t whylen)
{
    c->ssl = tls_cluster_ssl(o->tls, o->tls_server_name, host, o->tls_insecure);
    if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1) {
        snprintf(why, whylen, "cannot set up TLS");
        return -1;
    }
    ERR_clear_error();
    if (SSL_connect(c->ssl) != 1) {
        char reason[256];
        tls_error_text(c->ssl, reason, sizeof reason);
        snprintf(why, whylen, "TLS handshake failed: %s", reason);
        return -1;
    }
    return 0;
}

struct syncconn *syncconn_open(const char *host, int port, const struct syncconn_opts *o,
                               char *why, size_t whylen)
{
    struct syncconn *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    c->fd = dial(host, port, o->connect_timeout_ms, why, whylen);
    if (c->fd < 0)
        goto fail;
    set_timeouts(c->fd, o->timeout_ms);
    snprintf(c->addr, sizeof c->addr, "%s:%d", host, port);
    if (syncconn_reader_init(&c->reader, o->reply_max ? o->reply_max : SYNCCONN_REPLY_MAX) < 0 ||
        !(c->out = evbuffer_new())) {
        snprintf(why, whylen, "out of memory");
        goto fail;
    }
    if (o->tls && tls_handshake(c, host, o, why, whylen) < 0)
        goto fail;
    return c;
fail:
    syncconn_close(c);
    return NULL;
}

static int write_all(struct syncconn *c, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n;
        if (c->ssl) {
            ERR_clear_error();
            int k = SSL_write(c->ssl, p, (int)len);
            n = k > 0 ? k : -1;
        } else {
            n = write(c->fd, p, len);
        }
        if (n < 0 && errno == EINTR && !c->ssl)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Some bytes, 0 at the peer's close, -1 on an error or timeout. */
static ssize_t read_some(struct syncconn *c, char *buf, size_t len)
{
    if (!c->ssl) {
        ssize_t n;
        do
            n = read(c->fd, buf, len);
        while (n < 0 && errno == EINTR);
        return n;
    }
    ERR_clear_error();
    int k = SSL_read(c->ssl, buf, (int)len);
    if (k > 0)
        return k;
    return SSL_get_error(c->ssl, k) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
}

/* The next reply from the node, read into c's bounded reader. */
static redisReply *read_reply(struct syncconn *c, char *why, size_t whylen)
{
    redisReply *reply = NULL;
    char buf[16384];
    int rc;
    while ((rc = syncconn_reader_next(&c->reader, &reply, why, whylen)) == 0) {
        ssize_t n = read_some(c, buf, sizeof buf);
        if (n <= 0) {
            snprintf(why, whylen, "%s", n == 0 ? "the node closed the connection"
                     : errno == EAGAIN ? "Resource temporarily unavailable (timed out)"
                     : strerror(errno));
            return NULL;
        }
        if (syncconn_reader_feed(&c->reader, buf, (size_t)n, why, whylen) < 0) {
            rc = -1;
            break;
        }
    }
    if (rc < 0) {
        log_warning("topology", "node %s: %s; the read fails", c->addr, why);
        return NULL;
    }
    return reply;
}

void syncconn_append(struct syncconn *c, int argc, const char *const *argv, const size_t *lens)
{
    resp_add_command(c->out, argc, (const char **)argv, lens);
}

int syncconn_flush(struct syncconn *c, char *why, size_t whylen)
{
    size_t len = evbuffer_get_length(c->out);
    int rc = len ? write_all(c, (const char *)evbuffer_pullup(c->out, -1), len) : 0;
    evbuffer_drain(c->out, len);
    if (rc < 0)
        snprintf(why, whylen, "cannot send: %s", errno == EAGAIN ? "timed out" : strerror(errno));
    return rc;
}

redisReply *syncconn_read(struct syncconn *c, char *why, size_t whylen)
{
    return read_reply(c, why, whylen);
}

redisReply *syncconn_command(struct syncconn *c, int argc, const char **argv,
                             char *why, size_t whylen)
{
    size_t lens[8];
    if (argc > 8) {
        snprintf(why, whylen, "too many arguments");
        return NULL;
    }
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    syncconn_append(c, argc, argv, lens);
    if (syncconn_flush(c, why, whylen) < 0)
        return NULL;
    return read_reply(c, why, whylen);
}

void syncconn_close(struct syncconn *c)
{
    if (!c)
        return;
    if (c->ssl)
        SSL_free(c->ssl);
    if (c->fd >= 0)
        close(c->fd);
    syncconn_reader_free(&c->reader);
    if (c->out)
        evbuffer_free(c->out);
    free(c);
}
