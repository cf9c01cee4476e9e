#include "lib/net/io.h"

#include <errno.h>
#include <limits.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/log.h"
#include "lib/net/iobatch.h"
#include "lib/net/tls.h"

#define IO_SPARE_MAX 256

#define IO_READ_WAITING 1           /* c->read_queued: for the next batch */
#define IO_READ_RUN 2               /*   in the batch being run */
#define IO_READ_SKIPPED INT_MIN     /* c->batch_res: not read (reading is off) */

/* n more bytes read (in) or written on c: its own totals (CLIENT LIST's
 * tot-net-in, tot-net-out) and its owner's (INFO's). */
static void io_count(struct io_conn *c, int in, uint64_t n)
{
    __atomic_add_fetch(in ? &c->total_in : &c->total_out, n, __ATOMIC_RELAXED);
    if (c->bytes)
        stat_add(in ? &c->bytes->in : &c->bytes->out, n);
}

static void io_flush_one(struct io_conn *c);
static void io_read_cb(evutil_socket_t fd, short what, void *arg);
static void io_read_batch_cb(evutil_socket_t fd, short what, void *arg);

/* ---- TLS: SSL_read/SSL_write as read()/write() with errno ---- */

static __thread char io_tls_why[256];

const char *io_tls_error(void)
{
    return io_tls_why;
}

/* errno for an SSL call that returned n <= 0: EAGAIN to wait (and which
 * way, in the flags), 0 for the peer's close, EPROTO for a TLS failure. */
static int io_ssl_errno(struct io_conn *c, int n, int reading)
{
    switch (SSL_get_error(c->ssl, n)) {
    case SSL_ERROR_WANT_READ:
        if (!reading)
            c->ssl_write_wants_read = 1;
        return EAGAIN;
    case SSL_ERROR_WANT_WRITE:
        if (reading && !c->ssl_read_wants_write) {
            c->ssl_read_wants_write = 1;
            event_add(c->write_event, NULL);
        }
        return EAGAIN;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL:
        if (errno && errno != EAGAIN)
            return errno;
        if (ERR_peek_error() == 0)
            return 0;               /* closed without close_notify */
        /* fall through */
    default:
        tls_error_text(c->ssl, io_tls_why, sizeof io_tls_why);
        return EPROTO;
    }
}

/* Like read(): bytes, 0 at the peer's close, -1 with errno. */
static ssize_t io_ssl_read(struct io_conn *c, char *buf, size_t len)
{
    size_t got = 0;
    ERR_clear_error();
    do {
        int n = SSL_read(c->ssl, buf + got, (int)(len - got));
        if (n <= 0) {
            if (got > 0)
                break;
            int err = io_ssl_errno(c, n, 1);
            if (err == 0)
                return 0;
            errno = err;
            return -1;
        }
        got += (size_t)n;
    } while (got < len && SSL_pending(c->ssl) > 0);
    return (ssize_t)got;
}

/* Like write(): bytes written, -1 with errno (EAGAIN: wait). */
static ssize_t io_ssl_write(struct io_conn *c, const void *buf, size_t len)
{
    ERR_clear_error();
    int n = SSL_write(c->ssl, buf, (int)(len > INT_MAX ? INT_MAX : len));
    if (n > 0)
        return n;
    int err = io_ssl_errno(c, n, 0);
    errno = err ? err : EPIPE;
    return -1;
}

int io_conn_start_tls(struct io_conn *c, SSL *ssl, int server)
{
    if (SSL_set_fd(ssl, c->fd) != 1) {
        SSL_free(ssl);
        return -1;
    }
    if (server)
        SSL_set_accept_state(ssl);
    else
        SSL_set_connect_state(ssl);
    c->ssl = ssl;
    return 0;
}

static void io_mark_dirty(struct io_conn *c)
{
    if (c->dirty || c->state != IO_OPEN)
        return;
    c->dirty = 1;
    if (TAILQ_EMPTY(&c->loop->dirty))
        event_active(c->loop->flush_event, EV_TIMEOUT, 0);
    TAILQ_INSERT_TAIL(&c->loop->dirty, c, dirty_link);
}

static void io_unmark_dirty(struct io_conn *c)
{
    if (!c->dirty)
        return;
    c->dirty = 0;
    TAILQ_REMOVE(&c->loop->dirty, c, dirty_link);
}

/* Whether the round that ends wants a pause (io.h): when it served a few
 * sockets. */
static int io_round_wants_pause(struct io_loop *l)
{
    int served = l->round_reads;
    l->round_reads = 0;
    return l->pause_us > 0 && served >= IO_PAUSE_MIN_READS && served <= IO_PAUSE_MAX_READS;
}

/* The pause after a round, counted from the end of its writes (since):
 * what after_flush did meanwhile, while the processes the round fed
 * worked, is part of it. The CPU goes to those processes for the rest; none
 * is left when after_flush took it all. */
static void io_round_pause(struct io_loop *l, const struct timespec *since)
{
    struct timespec until = *since, now;
    until.tv_nsec += (long)l->pause_us * 1000;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > until.tv_sec || (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec))
        return;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
        ;       /* a signal: the same deadline */
    if (l->pauses)
        stat_inc(l->pauses);
}

/* ---- batches (iobatch.h) ---- */

/* Run the loop's batch. When io_uring fails as a whole, the loop goes back
 * to one call per socket for good (done() has said what did not run). */
static void io_batch_run(struct io_loop *l, void (*done)(void *tag, int res, void *arg))
{
    if (iobatch_queued(l->batch) == 0)          /* nothing to read or send: no call */
        return;
    if (l->batches) {
        stat_inc(l->batches);
        stat_add(l->batched_ops, iobatch_queued(l->batch));
    }
    if (iobatch_run(l->batch, done, l) == 0)
        return;
    log_warning("io", "io_uring failed (%s); reading and writing one system call per socket from now on",
                strerror(errno));
    iobatch_close(l->batch);
    l->batch = NULL;
    if (l->batching)
        stat_set(l->batching, 0);
}

/* Room in the batch for one more operation: a full one is run first (its
 * results go to done). 0, or -1 when there is no batch any more. */
static int io_batch_room(struct io_loop *l, void (*done)(void *tag, int res, void *arg))
{
    if (l->batch && iobatch_full(l->batch))
        io_batch_run(l, done);
    return l->batch ? 0 : -1;
}

static void io_send_done(void *tag, int res, void *arg)
{
    struct io_conn *c = tag;
    (void)arg;
    if (res > 0) {
        c->wstart += (size_t)res;
        io_count(c, 0, (uint64_t)res);
    } else if (res == -EIO) {
        io_conn_send_lost(c);
    }
    /* any other failure: the plain write that follows meets it again */
}

/* The flat output of every plain dirty connection, in one call. What it
 * leaves is written by io_flush_one as usual. */
static void io_flush_batch(struct io_loop *l)
{
    struct io_conn *c;
    TAILQ_FOREACH(c, &l->dirty, dirty_link) {
        if (c->state != IO_OPEN || c->ssl || c->write_blocked || c->wend == c->wstart)
            continue;
        if (io_batch_room(l, io_send_done) < 0 ||
            iobatch_send(l->batch, c->fd, c->wbuf + c->wstart, c->wend - c->wstart, c) < 0)
            return;
    }
    if (l->batch)
        io_batch_run(l, io_send_done);
}

/* The opened connections to the front of the dirty list, in the order
 * they became dirty: a pipelined round writes them first (io.h). */
static void io_dirty_outgoing_first(struct io_loop *l)
{
    struct io_conn *c, *next, *last = NULL;     /* the last one moved */
    for (c = TAILQ_FIRST(&l->dirty); c; c = next) {
        next = TAILQ_NEXT(c, dirty_link);
        if (!c->outgoing)
            continue;
        TAILQ_REMOVE(&l->dirty, c, dirty_link);
        if (last)
            TAILQ_INSERT_AFTER(&l->dirty, last, c, dirty_link);
        else
            TAILQ_INSERT_HEAD(&l->dirty, c, dirty_link);
        last = c;
    }
}

/* End of a round: write every dirty connection once, then maybe pause. */
static void io_flush_cb(evutil_socket_t fd, short what, void *arg)
{
    struct io_loop *l = arg;
    struct io_conn *c;
    (void)fd;
    (void)what;
    if (l->before_flush)
        l->before_flush(l->before_flush_arg);
    if (l->round_pipelined)
        io_dirty_outgoing_first(l);
    l->round_pipelined = 0;
    if (l->batch)
        io_flush_batch(l);
    while ((c = TAILQ_FIRST(&l->dirty)) != NULL) {
        io_unmark_dirty(c);
        io_flush_one(c);        /* may close c */
    }
    l->rounds++;
    struct timespec writes_done = { 0, 0 };
    int wants_pause = io_round_wants_pause(l);
    if (wants_pause)
        clock_gettime(CLOCK_MONOTONIC, &writes_done);
    if (l->after_flush)
        l->after_flush(l->after_flush_arg);
    if (wants_pause)
        io_round_pause(l, &writes_done);
}

void io_loop_flush_due(struct io_loop *l)
{
    event_active(l->flush_event, EV_TIMEOUT, 0);    /* (once, when already active) */
}

int io_loop_init(struct io_loop *l, struct event_base *base)
{
    l->base = base;
    l->before_flush = NULL;
    l->after_flush = NULL;
    TAILQ_INIT(&l->dirty);
    /* lowest priority is not needed: activated events run after the ready
     * sockets already queued for this round */
    l->flush_event = event_new(base, -1, 0, io_flush_cb, l);
    TAILQ_INIT(&l->readable);
    l->read_batch_event = event_new(base, -1, 0, io_read_batch_cb, l);
    return l->flush_event && l->read_batch_event ? 0 : -1;
}

int io_loop_batch(struct io_loop *l, unsigned entries, char *why, size_t whylen)
{
    if (!l->batch)
        l->batch = iobatch_open(entries, why, whylen);
    if (l->batching)
        stat_set(l->batching, l->batch != NULL);
    return l->batch ? 0 : -1;
}

/* The loop's flat buffers grew (or shrank) by n bytes. */
static void io_held(struct io_loop *l, int64_t n)
{
    if (l->buffer_bytes)
        gauge_add(l->buffer_bytes, n);
}

void io_loop_free(struct io_loop *l)
{
    iobatch_close(l->batch);
    l->batch = NULL;
    if (l->read_batch_event)
        event_free(l->read_batch_event);
    l->read_batch_event = NULL;
    while (l->nspare > 0) {
        free(l->spare[--l->nspare]);
        io_held(l, -(int64_t)IO_READ_SIZE);
    }
    free(l->spare);
    l->spare = NULL;
    if (l->flush_event)
        event_free(l->flush_event);
    l->flush_event = NULL;
}

static void io_fail(struct io_conn *c, int err)
{
    c->h->on_error(c, err, c->arg);
}

static char *io_buffer_take(struct io_loop *l)
{
    if (l->nspare > 0)
        return l->spare[--l->nspare];
    char *buf = malloc(IO_READ_SIZE);
    if (buf)
        io_held(l, IO_READ_SIZE);
    return buf;
}

static void io_buffer_give(struct io_loop *l, char *buf)
{
    if (l->nspare < IO_SPARE_MAX && !l->spare)
        l->spare = malloc(sizeof *l->spare * IO_SPARE_MAX);
    if (l->spare && l->nspare < IO_SPARE_MAX) {
        l->spare[l->nspare++] = buf;
    } else {
        free(buf);
        io_held(l, -(int64_t)IO_READ_SIZE);
    }
}

/* Room to read into: a pooled buffer, the unconsumed bytes moved to its
 * start, or a bigger one for an input that must stay whole (a long command). */
static int io_input_room(struct io_conn *c)
{
    struct io_loop *l = c->loop;
    if (!c->rbuf) {
        c->rbuf = io_buffer_take(l);
        c->rcap = IO_READ_SIZE;
        return c->rbuf ? 0 : -1;
    }
    if (c->rend < c->rcap)
        return 0;
    if (c->rstart > 0) {
        memmove(c->rbuf, c->rbuf + c->rstart, c->rend - c->rstart);
        c->rend -= c->rstart;
        c->rstart = 0;
        return 0;
    }
    size_t max = c->rmax > IO_READ_SIZE ? c->rmax : IO_READ_SIZE;
    if (c->rcap >= max)
        return -1;
    size_t cap = c->rcap * 2 < max ? c->rcap * 2 : max;
    char *grown = realloc(c->rbuf, cap);
    if (!grown)
        return -1;
    io_held(l, (int64_t)(cap - c->rcap));
    c->rbuf = grown;
    c->rcap = cap;
    return 0;
}

/* An empty input buffer goes back to the pool (a grown one is freed). */
static void io_input_release(struct io_conn *c)
{
    struct io_loop *l = c->loop;
    if (!c->rbuf || c->rend != c->rstart)
        return;
    if (c->rcap == IO_READ_SIZE) {
        io_buffer_give(l, c->rbuf);
    } else {
        free(c->rbuf);
        io_held(l, -(int64_t)c->rcap);
    }
    c->rbuf = NULL;
}

/* A write that waited for the socket to be readable may go on now. */
static void io_ssl_write_resume(struct io_conn *c)
{
    if (c->ssl_write_wants_read && c->state == IO_OPEN) {
        c->ssl_write_wants_read = 0;
        io_mark_dirty(c);
    }
}

uint64_t io_loop_now_us(struct io_loop *l)
{
    if (l->now_us)
        return l->now_us;
    uint64_t now = stats_now_us();
    if (l->in_read)
        l->now_us = now;
    return now;
}

/* The owner's on_read, with the loop's clock reading shared within it. */
static void io_call_read(struct io_conn *c)
{
    struct io_loop *l = c->loop;
    l->in_read = 1;
    l->now_us = 0;
    c->h->on_read(c, c->arg);
    l->in_read = 0;
    l->now_us = 0;
}

/* Hand the input to its owner: called whenever unconsumed bytes exist. */
static void io_read_deliver(struct io_conn *c)
{
    c->loop->round_reads++;
    io_call_read(c);
    if (c->state != IO_CLOSED)
        io_input_release(c);
    if (c->ssl && c->state != IO_CLOSED) {
        if (SSL_pending(c->ssl) > 0)    /* decrypted, not yet taken: no event will say */
            io_conn_read_again(c);
        io_ssl_write_resume(c);
    }
}

/* A read of c's socket returned got (with errno when -1); had: input was
 * waiting before it. */
static void io_read_took(struct io_conn *c, int had, ssize_t got)
{
    if (got > 0) {
        c->rend += (size_t)got;
        io_count(c, 1, (uint64_t)got);
    } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        int err = got == 0 ? 0 : errno;
        if (had)                        /* what came before the close still counts */
            io_call_read(c);
        if (c->state != IO_CLOSED)
            io_fail(c, err);
        return;
    } else if (!had) {
        io_input_release(c);
        io_ssl_write_resume(c);
        return;
    }
    io_read_deliver(c);
}

/* One read() (or SSL_read) of c's socket, then its owner. */
static void io_read_now(struct io_conn *c)
{
    int had = c->rend > c->rstart;
    if (io_input_room(c) < 0) {
        if (!had)
            io_fail(c, ENOBUFS);
        else
            io_read_deliver(c);
        return;
    }
    ssize_t got = c->ssl ? io_ssl_read(c, c->rbuf + c->rend, c->rcap - c->rend)
                         : read(c->fd, c->rbuf + c->rend, c->rcap - c->rend);
    io_read_took(c, had, got);
}

/* Readable, or asked to look again (io_conn_read_again) at input that is
 * already here. With a batch, a plain socket waits for io_read_batch_cb. */
static void io_read_cb(evutil_socket_t fd, short what, void *arg)
{
    struct io_conn *c = arg;
    struct io_loop *l = c->loop;
    (void)fd;
    (void)what;
    if (!l->batch || c->ssl) {
        io_read_now(c);
        return;
    }
    if (c->read_queued)
        return;
    c->read_queued = IO_READ_WAITING;
    TAILQ_INSERT_TAIL(&l->readable, c, read_link);
    if (!l->read_batch_armed) {
        l->read_batch_armed = 1;
        event_active(l->read_batch_event, EV_TIMEOUT, 0);
    }
}

static void io_read_unqueue(struct io_conn *c)
{
    if (!c->read_queued)
        return;
    c->read_queued = 0;
    TAILQ_REMOVE(&c->loop->readable, c, read_link);
}

static void io_recv_done(void *tag, int res, void *arg)
{
    struct io_conn *c = tag;
    (void)arg;
    c->batch_res = res;
}

/* Queue c's read into the batch: 0, or -1 when it is to be read the plain
 * way (no room for input, or no batch any more). */
static int io_read_batch_add(struct io_loop *l, struct io_conn *c)
{
    if (io_input_room(c) < 0 || io_batch_room(l, io_recv_done) < 0)
        return -1;
    return iobatch_recv(l->batch, c->fd, c->rbuf + c->rend, c->rcap - c->rend, c);
}

/* After the round's read events: every socket they queued is read with one
 * call, then each owner is called in turn, as io_read_now would. Sockets
 * queued meanwhile (io_conn_read_again) wait for the next batch, which runs
 * later in the same round. */
static void io_read_batch_cb(evutil_socket_t fd, short what, void *arg)
{
    struct io_loop *l = arg;
    struct io_conn *c;
    (void)fd;
    (void)what;
    l->read_batch_armed = 0;
    TAILQ_FOREACH(c, &l->readable, read_link) {
        c->read_queued = IO_READ_RUN;
        c->batch_res = -ECANCELED;
        if (!c->reading || c->state != IO_OPEN)
            c->batch_res = IO_READ_SKIPPED;
        else
            io_read_batch_add(l, c);
    }
    if (l->batch)
        io_batch_run(l, io_recv_done);
    while ((c = TAILQ_FIRST(&l->readable)) != NULL && c->read_queued == IO_READ_RUN) {
        io_read_unqueue(c);
        int res = c->batch_res;
        if (res == IO_READ_SKIPPED)
            continue;
        if (res == -ECANCELED) {
            io_read_now(c);
            continue;
        }
        if (res < 0)
            errno = -res;
        io_read_took(c, c->rend > c->rstart, res < 0 ? -1 : res);
    }
}

void io_out_add(struct io_conn *c, const void *bytes, size_t len)
{
    if (evbuffer_get_length(c->out) == 0 && len <= IO_READ_SIZE) {
        if (!c->wbuf)
            c->wbuf = io_buffer_take(c->loop);
        if (c->wbuf && IO_READ_SIZE - c->wend < len && c->wstart > 0) {
            memmove(c->wbuf, c->wbuf + c->wstart, c->wend - c->wstart);
            c->wend -= c->wstart;
            c->wstart = 0;
        }
        if (c->wbuf && IO_READ_SIZE - c->wend >= len) {
            memcpy(c->wbuf + c->wend, bytes, len);
            c->wend += len;
            return;
        }
    }
    evbuffer_add(c->out, bytes, len);
}

/* One TLS record's worth of c->out (made contiguous), as evbuffer_write. */
static int io_ssl_write_out(struct io_conn *c)
{
    size_t len = evbuffer_get_length(c->out);
    if (len > IO_READ_SIZE)
        len = IO_READ_SIZE;
    ssize_t n = io_ssl_write(c, evbuffer_pullup(c->out, (ssize_t)len), len);
    if (n > 0)
        evbuffer_drain(c->out, (size_t)n);
    return (int)n;
}

/* Write the flat part, then the evbuffer. 0: all written, 1: the socket is
 * full, 2: TLS waits for the socket to be readable, -1: the connection
 * failed (already reported). */
static int io_write_out(struct io_conn *c)
{
    while (c->wend > c->wstart) {
        ssize_t n = c->ssl ? io_ssl_write(c, c->wbuf + c->wstart, c->wend - c->wstart)
                           : write(c->fd, c->wbuf + c->wstart, c->wend - c->wstart);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return c->ssl_write_wants_read ? 2 : 1;
        if (n <= 0) {
            io_fail(c, n < 0 ? errno : EPIPE);
            return -1;
        }
        c->wstart += (size_t)n;
        io_count(c, 0, (uint64_t)n);
    }
    if (c->wbuf) {                  /* empty: back to the pool */
        io_buffer_give(c->loop, c->wbuf);
        c->wbuf = NULL;
        c->wstart = c->wend = 0;
    }
    while (evbuffer_get_length(c->out) > 0) {
        int n = c->ssl ? io_ssl_write_out(c) : evbuffer_write(c->out, c->fd);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return c->ssl_write_wants_read ? 2 : 1;
        if (n <= 0) {
            io_fail(c, n < 0 ? errno : EPIPE);
            return -1;
        }
        io_count(c, 0, (uint64_t)n);
    }
    return 0;
}

static void io_flush_one(struct io_conn *c)
{
    if (c->state != IO_OPEN)
        return;
    if (c->write_lost) {            /* writing again could send bytes twice */
        io_fail(c, EIO);
        return;
    }
    int rc = io_write_out(c);
    if (rc < 0)
        return;
    if (rc == 2) {                  /* the next read event resumes it */
        if (c->write_blocked) {
            c->write_blocked = 0;
            event_del(c->write_event);
        }
        return;
    }
    if (rc > 0) {
        if (!c->write_blocked) {
            c->write_blocked = 1;
            event_add(c->write_event, NULL);
        }
        return;
    }
    if (c->write_blocked) {
        c->write_blocked = 0;
        event_del(c->write_event);
    }
    if (c->h->on_drained)
        c->h->on_drained(c, c->arg);
}

static void io_write_cb(evutil_socket_t fd, short what, void *arg)
{
    struct io_conn *c = arg;
    (void)what;
    if (c->ssl_read_wants_write && c->state == IO_OPEN) {
        c->ssl_read_wants_write = 0;
        if (!c->write_blocked)
            event_del(c->write_event);
        io_read_cb(fd, EV_READ, c);
        if (c->state != IO_OPEN || !c->write_blocked)
            return;
    }
    if (c->state == IO_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
            io_fail(c, err);
            return;
        }
        c->state = IO_OPEN;
        c->write_blocked = 0;
        event_del(c->write_event);
        if (c->h->on_connected)
            c->h->on_connected(c, c->arg);
        if (c->state == IO_OPEN && io_conn_pending(c) > 0)
            io_mark_dirty(c);
        return;
    }
    io_flush_one(c);
}

void io_tcp_keepalive(int fd, int idle_s, int interval_s, int count)
{
    int on = idle_s > 0;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    if (!on)
        return;
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

static int io_setup(struct io_conn *c, struct io_loop *l, int fd,
                    const struct io_handlers *h, void *arg)
{
    int one = 1;
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->loop = l;
    c->h = h;
    c->arg = arg;
    evutil_make_socket_nonblocking(fd);
    evutil_make_socket_closeonexec(fd);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->out = evbuffer_new();
    c->read_event = event_new(l->base, fd, EV_READ | EV_PERSIST, io_read_cb, c);
    c->write_event = event_new(l->base, fd, EV_WRITE | EV_PERSIST, io_write_cb, c);
    if (!c->out || !c->read_event || !c->write_event) {
        c->state = IO_OPEN;
        io_conn_close(c);
        return -1;
    }
    return 0;
}

int io_conn_open(struct io_conn *c, struct io_loop *l, int fd,
                 const struct io_handlers *h, void *arg)
{
    if (io_setup(c, l, fd, h, arg) < 0)
        return -1;
    c->state = IO_OPEN;
    io_conn_read(c, 1);
    return 0;
}

int io_conn_connect(struct io_conn *c, struct io_loop *l, const struct sockaddr *sa,
                    socklen_t salen, const struct io_handlers *h, void *arg)
{
    int fd = socket(sa->sa_family, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    if (io_setup(c, l, fd, h, arg) < 0)
        return -1;
    c->outgoing = 1;
    if (connect(fd, sa, salen) < 0 && errno != EINPROGRESS) {
        c->state = IO_OPEN;
        io_conn_close(c);
        return -1;
    }
    c->state = IO_CONNECTING;       /* even when it finished at once: one path */
    c->write_blocked = 1;
    event_add(c->write_event, NULL);
    io_conn_read(c, 1);
    return 0;
}

void io_conn_want_write(struct io_conn *c)
{
    if (!c->write_blocked)
        io_mark_dirty(c);
}

void io_conn_read(struct io_conn *c, int on)
{
    if (c->state == IO_CLOSED || c->reading == (on != 0))
        return;
    c->reading = on != 0;
    if (on)
        event_add(c->read_event, NULL);
    else
        event_del(c->read_event);
    /* bytes OpenSSL already decrypted make no socket event */
    if (on && c->ssl && SSL_pending(c->ssl) > 0)
        event_active(c->read_event, EV_READ, 0);
}

void io_conn_read_again(struct io_conn *c)
{
    if (c->state != IO_CLOSED && c->reading)
        event_active(c->read_event, EV_READ, 0);
}

void io_conn_close(struct io_conn *c)
{
    if (c->state == IO_CLOSED)
        return;
    io_unmark_dirty(c);
    io_read_unqueue(c);
    c->state = IO_CLOSED;
    if (c->read_event)
        event_free(c->read_event);
    if (c->write_event)
        event_free(c->write_event);
    if (c->out)
        evbuffer_free(c->out);
    c->read_event = c->write_event = NULL;
    c->out = NULL;
    c->rstart = c->rend = 0;
    io_input_release(c);
    if (c->wbuf)
        io_buffer_give(c->loop, c->wbuf);
    c->wbuf = NULL;
    c->wstart = c->wend = 0;
    if (c->ssl)
        SSL_free(c->ssl);
    c->ssl = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

void io_conn_send_lost(struct io_conn *c)
{
    c->wstart = c->wend;            /* the send carried the whole flat part */
    c->write_lost = 1;
}

size_t io_conn_pending(const struct io_conn *c)
{
    return (c->wend - c->wstart) + (c->out ? evbuffer_get_length(c->out) : 0);
}
