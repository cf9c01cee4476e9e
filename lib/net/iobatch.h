/*
 * iobatch: many socket reads, or many sends, in one system call.
 *
 * A system call can cost the proxy more than the work it carries: on a
 * paravirtualised machine an empty one takes about as long as the proxy's
 * own user-space work for a request.
 * The event loop knows, when a round starts, every socket that is ready to
 * read, and when it ends, every connection with output to write. io.c queues
 * each set here and runs it with one io_uring_enter, instead of one read()
 * or write() per socket.
 *
 *   io.c ── iobatch_recv / iobatch_send (queue) ──► iobatch_run ──► done(tag, res)
 *
 * Every operation is non-blocking (MSG_DONTWAIT): a socket with nothing to
 * read, or no room to write, completes at once with -EAGAIN. So iobatch_run
 * returns with every result in hand and nothing left in flight: no buffer
 * is the kernel's once it returns, and the caller goes on exactly as after
 * the equivalent read() and write() calls.
 *
 * io_uring may be missing (a kernel before 5.6), refused (Docker's default
 * seccomp profile, the kernel.io_uring_disabled sysctl) or unable to keep
 * the non-blocking promise above (checked once by iobatch_open on a
 * socketpair). Then iobatch_open fails with the reason and the caller reads
 * and writes one call per socket, as it would anyway.
 *
 * A batch belongs to one thread; nothing here takes a lock.
 */
#ifndef TAGPROXY_IOBATCH_H
#define TAGPROXY_IOBATCH_H

#include <stddef.h>

struct iobatch;

/* A batch of up to `entries` operations (a power of two, at most 4096).
 * NULL when io_uring cannot be used here; `why` then says why. */
struct iobatch *iobatch_open(unsigned entries, char *why, size_t whylen);
void iobatch_close(struct iobatch *b);

/* Queue a recv into buf or a send of buf on the socket fd; `tag` comes back
 * with its result. 0, or -1 when the batch is full: run it, then queue
 * again. buf must stay valid until iobatch_run returns. */
int iobatch_recv(struct iobatch *b, int fd, void *buf, size_t len, void *tag);
int iobatch_send(struct iobatch *b, int fd, const void *buf, size_t len, void *tag);

/* How many operations are queued and not yet run; whether no more fit. */
unsigned iobatch_queued(const struct iobatch *b);
int iobatch_full(const struct iobatch *b);

/* Run everything queued and wait for all of it: done(tag, res, arg) once
 * per operation, res as recv()/send() would return it (bytes, 0 at the
 * peer's close) or -errno. 0, or -1 with errno when io_uring failed as a
 * whole: then an operation it never started gets -ECANCELED (do it the
 * plain way), one whose result was lost gets -EIO (it may have run), and
 * the batch must be closed. */
int iobatch_run(struct iobatch *b, void (*done)(void *tag, int res, void *arg), void *arg);

#endif
