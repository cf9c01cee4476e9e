#include "lib/net/iobatch.h"

#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define IOBATCH_MAX_ENTRIES 4096

struct iobatch {
    struct io_uring ring;
    unsigned cap;
    unsigned queued;            /* operations in ops[] (in the ring's SQ) */
    void **ops;                 /* the tag of each queued operation */
};

unsigned iobatch_queued(const struct iobatch *b)
{
    return b->queued;
}

int iobatch_full(const struct iobatch *b)
{
    return b->queued >= b->cap;
}

static struct io_uring_sqe *iobatch_slot(struct iobatch *b, void *tag)
{
    if (iobatch_full(b))
        return NULL;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
    if (!sqe)
        return NULL;
    io_uring_sqe_set_data64(sqe, b->queued);
    b->ops[b->queued++] = tag;
    return sqe;
}

int iobatch_recv(struct iobatch *b, int fd, void *buf, size_t len, void *tag)
{
    struct io_uring_sqe *sqe = iobatch_slot(b, tag);
    if (!sqe)
        return -1;
    io_uring_prep_recv(sqe, fd, buf, len, MSG_DONTWAIT);
    return 0;
}

int iobatch_send(struct iobatch *b, int fd, const void *buf, size_t len, void *tag)
{
    struct io_uring_sqe *sqe = iobatch_slot(b, tag);
    if (!sqe)
        return -1;
    io_uring_prep_send(sqe, fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    return 0;
}

/* Submit everything queued; the number the kernel took, or -errno when it
 * took none (then the rest is still queued). */
static int iobatch_submit(struct iobatch *b)
{
    unsigned taken = 0;
    while (taken < b->queued) {
        int n = io_uring_submit_and_wait(&b->ring, b->queued - taken);
        if (n == -EINTR)
            continue;
        if (n <= 0)
            return taken > 0 ? (int)taken : (n < 0 ? n : -EBUSY);
        taken += (unsigned)n;
    }
    return (int)taken;
}

int iobatch_run(struct iobatch *b, void (*done)(void *tag, int res, void *arg), void *arg)
{
    unsigned n = b->queued;
    if (n == 0)
        return 0;
    int taken = iobatch_submit(b);
    unsigned reaped = 0;
    unsigned char ran[IOBATCH_MAX_ENTRIES];
    memset(ran, 0, n);
    while (taken > 0 && reaped < (unsigned)taken) {
        struct io_uring_cqe *cqe;
        int rc = io_uring_wait_cqe(&b->ring, &cqe);
        if (rc == -EINTR)
            continue;
        if (rc < 0)
            break;
        unsigned i = (unsigned)io_uring_cqe_get_data64(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(&b->ring, cqe);
        reaped++;
        if (i < n && !ran[i]) {
            ran[i] = 1;
            done(b->ops[i], res, arg);
        }
    }
    b->queued = 0;
    if (taken == (int)n && reaped == n)
        return 0;
    /* io_uring failed under us. The kernel takes operations in order: those
     * it never took did not run (the caller's again); one it took whose
     * result is lost may have run (its connection cannot go on). */
    for (unsigned i = 0; i < n; i++)
        if (!ran[i])
            done(b->ops[i], (int)i < taken ? -EIO : -ECANCELED, arg);
    errno = taken < 0 ? -taken : EIO;
    return -1;
}

/* Does a recv on an empty socket come back at once with -EAGAIN, and does a
 * send go through? (Kernels that would park the recv instead are refused:
 * iobatch_run would wait for it.) 0, or -1 with the reason in why. */
static int iobatch_probe(struct iobatch *b, char *why, size_t whylen)
{
    int sv[2], rc = -1, res[2] = { 1, 0 };
    char byte = 'x';
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
        snprintf(why, whylen, "socketpair: %s", strerror(errno));
        return -1;
    }
    io_uring_prep_recv(io_uring_get_sqe(&b->ring), sv[0], &byte, 1, MSG_DONTWAIT);
    io_uring_prep_send(io_uring_get_sqe(&b->ring), sv[1], &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    int n = io_uring_submit(&b->ring);
    for (int i = 0; i < n && i < 2; i++) {
        struct io_uring_cqe *cqe;
        struct __kernel_timespec ts = { .tv_sec = 1, .tv_nsec = 0 };
        if (io_uring_wait_cqe_timeout(&b->ring, &cqe, &ts) < 0)
            break;
        res[i] = cqe->res;
        io_uring_cqe_seen(&b->ring, cqe);
    }
    if (n != 2)
        snprintf(why, whylen, "submitting a recv and a send: %s", strerror(n < 0 ? -n : EIO));
    else if (res[0] != -EAGAIN)
        snprintf(why, whylen, "a non-blocking recv did not complete at once (kernel too old)");
    else if (res[1] != 1)
        snprintf(why, whylen, "a send failed: %s", strerror(res[1] < 0 ? -res[1] : EIO));
    else
        rc = 0;
    close(sv[0]);
    close(sv[1]);
    return rc;
}

struct iobatch *iobatch_open(unsigned entries, char *why, size_t whylen)
{
    if (entries < 2 || entries > IOBATCH_MAX_ENTRIES || (entries & (entries - 1))) {
        snprintf(why, whylen, "bad batch size %u", entries);
        return NULL;
    }
    struct iobatch *b = calloc(1, sizeof *b);
    if (!b || !(b->ops = calloc(entries, sizeof *b->ops))) {
        snprintf(why, whylen, "out of memory");
        goto fail;
    }
    int rc = io_uring_queue_init(entries, &b->ring, 0);
    if (rc < 0) {
        snprintf(why, whylen, "io_uring_setup: %s", strerror(-rc));
        goto fail;
    }
    b->cap = entries;
    if (iobatch_probe(b, why, whylen) < 0) {
        io_uring_queue_exit(&b->ring);
        goto fail;
    }
    return b;
fail:
    if (b)
        free(b->ops);
    free(b);
    return NULL;
}

void iobatch_close(struct iobatch *b)
{
    if (!b)
        return;
    io_uring_queue_exit(&b->ring);
    free(b->ops);
    free(b);
}
