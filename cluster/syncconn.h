/*
 * syncconn: a blocking connection to one node, plain or TLS, for the control
 * thread's topology reads (topology.c) and the tools (migrate/).
 *
 * hiredis 0.14 cannot speak TLS, so the socket and the SSL object are ours
 * and only hiredis's reader is used, fed with the bytes read here:
 *
 *   syncconn_command ──resp_add_command──► socket / SSL_write
 *   socket / SSL_read ──► syncconn_reader ──redisReaderFeed──► redisReaderGetReply
 *
 * hiredis 0.14's reader allocates an array's element pointers when it reads
 * the header ("*300000000" is a 2.4 GB calloc before any element arrives)
 * and buffers a bulk of any announced length. So the bytes go first to a
 * syncconn_reader: it buffers at most SYNCCONN_REPLY_MAX bytes, frames them
 * with the proxy's own scanner (lib/proto/reply.h: it counts, it allocates
 * nothing), and hands hiredis only one complete reply at a time. A complete
 * reply whose headers announce n elements holds at least 3n more bytes, so
 * what hiredis allocates is bounded by the bytes read.
 *
 * Every wait is bounded: the connect by connect_timeout_ms, each read and
 * write (and so the TLS handshake) by timeout_ms. Never used on a worker's
 * event loop.
 */
#ifndef TAGPROXY_SYNCCONN_H
#define TAGPROXY_SYNCCONN_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "lib/proto/reply.h"

struct syncconn;
struct ssl_ctx_st;

/* The largest reply the control thread reads. A CLUSTER SLOTS reply with
 * each of the 16384 slots in a range of its own and a master and three
 * replicas per range is about 4.6 MB. */
#define SYNCCONN_REPLY_MAX (8u << 20)

/* Bytes read from a node, framed into replies before hiredis parses them. */
struct syncconn_reader {
    char *buf;
    size_t len, cap;            /* buffered bytes, allocated bytes */
    size_t scanned;             /* of buf, fed to scan already */
    size_t max;                 /* at most this many buffered */
    struct reply_scanner scan;
    redisReader *hiredis;
};

/* 0, or -1 out of memory. */
int syncconn_reader_init(struct syncconn_reader *r, size_t max);
void syncconn_reader_free(struct syncconn_reader *r);

/* Buffer n more bytes: 0, or -1 with why when that would hold more than
 * max bytes (the reply is too large) or memory runs out. */
int syncconn_reader_feed(struct syncconn_reader *r, const char *p, size_t n,
                         char *why, size_t whylen);

/* The next reply: 1 with *reply (free with freeReplyObject), 0 when it is
 * not complete yet, -1 with why when the bytes are not RESP2 (or not a
 * reply hiredis takes). After -1 the reader is unusable. */
int syncconn_reader_next(struct syncconn_reader *r, redisReply **reply,
                         char *why, size_t whylen);

struct syncconn_opts {
    int connect_timeout_ms;
    int timeout_ms;
    struct ssl_ctx_st *tls;         /* NULL: plain TCP */
    const char *tls_server_name;    /* NULL: verify host */
    int tls_insecure;
    size_t reply_max;               /* the largest reply read; 0: SYNCCONN_REPLY_MAX */
};

/* Connect to host:port (resolved here) and, with TLS, finish the handshake.
 * NULL with a one-line reason in why. */
struct syncconn *syncconn_open(const char *host, int port, const struct syncconn_opts *o,
                               char *why, size_t whylen);

/* Send one command (argv as C strings) and read its reply: the reply (free
 * with freeReplyObject), or NULL with the reason in why; after NULL the
 * connection is unusable. A reply over SYNCCONN_REPLY_MAX or malformed is
 * also logged, with the node's address. */
redisReply *syncconn_command(struct syncconn *c, int argc, const char **argv,
                             char *why, size_t whylen);

/* Pipelining: commands appended (binary-safe arguments) go out together
 * with syncconn_flush (0, or -1 with why); each reply then comes, in
 * order, from syncconn_read (as syncconn_command's). */
void syncconn_append(struct syncconn *c, int argc, const char *const *argv, const size_t *lens);
int syncconn_flush(struct syncconn *c, char *why, size_t whylen);
redisReply *syncconn_read(struct syncconn *c, char *why, size_t whylen);

void syncconn_close(struct syncconn *c);

#endif
