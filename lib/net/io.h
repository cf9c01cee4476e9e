/*
 * io: the socket layer under client and node connections.
 *
 * Written for the hot path: a connection's read event is registered once and
 * stays; each read is one read() into a flat input buffer (no FIONREAD probe)
 * that the owner parses in place and consumes. An empty input buffer goes
 * back to the loop's pool of read buffers, so idle connections hold none and
 * busy ones do not malloc per read.
 * Output is not written when it is produced: the connection is put on its
 * loop's dirty list, and once per event-loop iteration, after every ready
 * socket has been served, the loop writes each dirty connection with one
 * writev() (as Redis does in beforeSleep). A write event is registered only
 * for a socket whose kernel buffer is full, and removed once it drains. So a
 * busy pipelined connection costs one read and one write system call per
 * round, however many commands the round carries.
 *
 *   socket ──readv──► in ──on_read()──► ...       ... ──► out ──(flush)──writev──► socket
 *
 * Batched (io_loop_batch, io-uring yes): where io_uring can be used, the
 * sockets a round finds readable are not read one by one. Their read events
 * queue them, and one event after them reads them all with one system call
 * (iobatch.h), then calls each owner in turn. Likewise the flush sends the
 * flat output of every dirty connection with one system call, and only
 * what that leaves (a full socket, an error, the evbuffer part) goes
 * through writev() as above. TLS connections are read and written one by
 * one, as in the plain flow.
 *
 *   ready sockets ──queue──► read batch (1 call) ──► on_read, on_read, ...
 *   dirty conns ──► send batch (1 call) ──► writev() for what is left
 *
 * Connections are written in the order they became dirty, but for a round
 * whose reads brought pipelines (io_loop_note_pipeline: several requests in
 * one read): then the connections this side opened (io_conn_connect: to
 * the nodes) go first. Their commands are the long pole of a pipelined
 * round; sent first, the nodes work on them while the proxy is still
 * writing replies. One request per client is the opposite case: the client
 * waiting for its reply is the long pole, and the plain order serves it
 * better (docs/performance.md).
 *
 * A round that served a few sockets (IO_PAUSE_MIN_READS to
 * IO_PAUSE_MAX_READS) ends, after its writes, with a pause of pause_us
 * (round-pause-us): the sockets that become ready meanwhile are served
 * together by the next round. Under load that means fewer, larger rounds:
 * fewer system calls and fewer wakeups for the proxy and for the nodes and
 * clients it talks to, for a few microseconds of latency. With pipelining
 * clients too: the pause hands the CPU to the nodes and clients the round
 * has just fed, which on a machine with few CPUs would otherwise wait for
 * the proxy's time slice to end. The pause counts from the end of the
 * round's writes: what after_flush does (the tracking table's share of the
 * round) runs while those processes work, and the pause is what is left of
 * pause_us after it, none when it took longer. A round that served one
 * socket (an idle or lightly used proxy) or very many (one that batches
 * well already) is never followed by a pause.
 *
 * An io_loop belongs to one thread; nothing here takes a lock.
 *
 * TLS (io_conn_start_tls): the same flow with SSL_read/SSL_write in place
 * of read/writev, one branch on c->ssl per read and per write; the plain
 * path is unchanged. A read drains what OpenSSL already decrypted
 * (SSL_pending) as far as the input has room, and looks again next round
 * for the rest. The handshake happens inside the first reads and writes.
 * OpenSSL may need the other direction to progress: a read that wants the
 * socket writable waits on the write event, a write that wants it readable
 * waits for the next read event (the write event is then not armed, so it
 * cannot spin). A TLS failure is reported to on_error as EPROTO, its reason
 * in io_tls_error().
 */
#ifndef TAGPROXY_IO_H
#define TAGPROXY_IO_H

#include <stddef.h>
#include <sys/queue.h>
#include <sys/socket.h>

typedef struct ssl_st SSL;
#include "lib/base/counter.h"

struct event_base;
struct event;
struct evbuffer;
struct io_conn;
struct iobatch;

#define IO_READ_SIZE 16384
#define IO_PAUSE_MIN_READS 2
#define IO_PAUSE_MAX_READS 63

struct io_loop {
    struct event_base *base;
    struct event *flush_event;      /* activated when a connection gets dirty */
    TAILQ_HEAD(, io_conn) dirty;
    char **spare;                   /* pool of IO_READ_SIZE read buffers */
    int nspare;
    int in_read;                    /* inside a connection's on_read */
    uint64_t now_us;                /* the clock as read in this on_read; 0: not yet */
    int pause_us;                   /* after a busy round (above); 0: never */
    int round_reads;                /* sockets served since the last flush */
    uint64_t rounds;                /* rounds ended (flushes) so far */
    uint64_t *pauses;               /* counts the pauses slept; may be NULL */
    struct iobatch *batch;          /* NULL: one read and one write call per socket */
    uint64_t *batching;             /* 1 while batch is set; may be NULL (so may the next) */
    uint64_t *batches, *batched_ops; /* counts the batch calls and what they carried */
    int64_t *buffer_bytes;          /* the flat buffers allocated, pooled ones included;
                                       may be NULL */
    TAILQ_HEAD(, io_conn) readable; /* plain sockets to read in the next batch */
    struct event *read_batch_event; /* reads them; activated by the first */
    int read_batch_armed;
    int round_pipelined;            /* io_loop_note_pipeline since the last flush */
    /* called at the end of each round before its output is written: the
     * last commands of the round; may be NULL */
    void (*before_flush)(void *arg);
    void *before_flush_arg;
    /* called at the end of each round, once its output is written (inside
     * the pause): work that need not delay the round's writes; may be NULL */
    void (*after_flush)(void *arg);
    void *after_flush_arg;
};

/* What happened to a connection, for its owner. */
struct io_handlers {
    void (*on_read)(struct io_conn *c, void *arg);            /* new input bytes */
    void (*on_drained)(struct io_conn *c, void *arg);         /* out fully written; may be NULL */
    void (*on_connected)(struct io_conn *c, void *arg);       /* connect finished; may be NULL */
    void (*on_error)(struct io_conn *c, int err, void *arg);  /* err 0: peer closed */
};

enum io_state {
    IO_CONNECTING,      /* non-blocking connect under way; output waits */
    IO_OPEN,
    IO_CLOSED           /* fd closed, events and buffers freed */
};

struct io_conn {
    int fd;
    enum io_state state;
    struct io_loop *loop;
    struct event *read_event;       /* persistent while reading */
    struct event *write_event;      /* added only while the kernel buffer is full */
    char *rbuf;                     /* input: bytes rstart..rend not yet consumed */
    size_t rstart, rend, rcap;
    size_t rmax;                    /* the input may grow to this (0: IO_READ_SIZE) */
    char *wbuf;                     /* output, first part: small writes, flat */
    size_t wstart, wend;
    struct evbuffer *out;           /* output, second part: what did not fit */
    const struct io_handlers *h;
    void *arg;
    SSL *ssl;                       /* NULL: plain TCP */
    struct stats_bytes *bytes;      /* counts bytes read and written; may be NULL */
    uint64_t total_in, total_out;   /* bytes read and written on it (relaxed atomics:
                                       CLIENT LIST reads them from other threads) */
    TAILQ_ENTRY(io_conn) dirty_link;
    TAILQ_ENTRY(io_conn) read_link; /* on loop->readable */
    int batch_res;                  /* the batched read's result */
    unsigned read_queued : 2;       /* IO_READ_WAITING, IO_READ_RUN (io.c) */
    unsigned write_lost : 1;        /* a batched send may have run, result lost */
    unsigned dirty : 1;
    unsigned outgoing : 1;          /* opened by io_conn_connect (to a node) */
    unsigned reading : 1;
    unsigned write_blocked : 1;
    unsigned ssl_read_wants_write : 1;  /* SSL_read said WANT_WRITE */
    unsigned ssl_write_wants_read : 1;  /* SSL_write said WANT_READ */
};

int io_loop_init(struct io_loop *l, struct event_base *base);

/* The round ends (before_flush, the writes, after_flush) even when no
 * connection has output yet. */
void io_loop_flush_due(struct io_loop *l);
void io_loop_free(struct io_loop *l);

/* Read and write the loop's plain sockets in batches of up to `entries`
 * (above). 0; -1 when io_uring cannot be used here, with the reason in why
 * (the loop then goes on one call per socket). */
int io_loop_batch(struct io_loop *l, unsigned entries, char *why, size_t whylen);

/* TCP keepalive on fd: probes after idle_s seconds of silence, interval_s
 * apart, count of them unanswered closing it; idle_s 0 turns it off (an
 * accepted socket may have it from its listener: libevent's listeners set
 * it). */
void io_tcp_keepalive(int fd, int idle_s, int interval_s, int count);

/* Adopt an accepted socket (made non-blocking here) and start reading. */
int io_conn_open(struct io_conn *c, struct io_loop *l, int fd,
                 const struct io_handlers *h, void *arg);

/* Start a non-blocking connect to sa; output queued meanwhile is written once
 * it is up. -1 when the connect could not even be started. */
int io_conn_connect(struct io_conn *c, struct io_loop *l, const struct sockaddr *sa,
                    socklen_t salen, const struct io_handlers *h, void *arg);

/* Speak TLS on c from now on (before any byte was exchanged): c owns ssl.
 * server: accept a handshake, else start one. 0, or -1 (ssl freed). */
int io_conn_start_tls(struct io_conn *c, SSL *ssl, int server);

/* Why the last EPROTO of this thread happened (a TLS failure). */
const char *io_tls_error(void);

/* Queue output: copied into the flat buffer while it fits and nothing waits
 * in c->out, else added to c->out (so order is kept). Output may also be
 * added to c->out directly (moves of whole evbuffers). Either way, call
 * io_conn_want_write() to have it written at the end of this round. */
void io_out_add(struct io_conn *c, const void *bytes, size_t len);

/* Output was queued: have it written at the end of this round. */
void io_conn_want_write(struct io_conn *c);

/* A read of this round brought several requests (a pipelining client):
 * the round's flush writes the connections this side opened first (above). */
static inline void io_loop_note_pipeline(struct io_loop *l)
{
    l->round_pipelined = 1;
}

/* Stop or resume reading. */
void io_conn_read(struct io_conn *c, int on);

/* Call on_read again later in this round, though the socket has no new bytes
 * (for input left unprocessed to be fair to other connections). */
void io_conn_read_again(struct io_conn *c);

/* Close the socket and free what c holds (not c itself). Idempotent. Safe
 * from inside c's own handlers. */
void io_conn_close(struct io_conn *c);

/* The input not yet consumed: pointer and length (NULL, 0 when none). */
static inline const char *io_input(const struct io_conn *c, size_t *len)
{
    *len = c->rend - c->rstart;
    return c->rbuf ? c->rbuf + c->rstart : NULL;
}

/* The owner is done with the first n bytes of the input. */
static inline void io_consume(struct io_conn *c, size_t n)
{
    c->rstart += n;
    if (c->rstart == c->rend)
        c->rstart = c->rend = 0;
}

/* Monotonic microseconds (stats_now_us), read at most once per read event:
 * everything done within one on_read shares that reading (the commands a
 * read brought, the replies it delivered). Outside on_read, read each time. */
uint64_t io_loop_now_us(struct io_loop *l);

/* Bytes in out not yet written. */
size_t io_conn_pending(const struct io_conn *c);

/* A batched send of c's flat output was handed to the kernel and its result
 * lost (iobatch_run): the kernel may have sent any of those bytes. They
 * count as written (io_conn_pending leaves them out, so a command in them
 * may have run) and are never written again: c fails at its next flush. */
void io_conn_send_lost(struct io_conn *c);

#endif
