/*
 * syncconn: a blocking connection to one node, plain or TLS, for the control
 * thread's topology reads (topology.c).
 *
 * hiredis 0.14 cannot speak TLS, so the socket and the SSL object are ours
 * and only hiredis's reader is used, fed with the bytes read here:
 *
 *   syncconn_command ──resp_add_command──► socket / SSL_write
 *   socket / SSL_read ──redisReaderFeed──► redisReaderGetReply ──► redisReply
 *
 * Every wait is bounded: the connect by connect_timeout_ms, each read and
 * write (and so the TLS handshake) by timeout_ms. Never used on a worker's
 * event loop.
 */
#ifndef TAGPROXY_SYNCCONN_H
#define TAGPROXY_SYNCCONN_H

#include <stddef.h>

#include <hiredis/hiredis.h>

struct syncconn;
struct ssl_ctx_st;

struct syncconn_opts {
    int connect_timeout_ms;
    int timeout_ms;
    struct ssl_ctx_st *tls;         /* NULL: plain TCP */
    const char *tls_server_name;    /* NULL: verify host */
    int tls_insecure;
};

/* Connect to host:port (resolved here) and, with TLS, finish the handshake.
 * NULL with a one-line reason in why. */
struct syncconn *syncconn_open(const char *host, int port, const struct syncconn_opts *o,
                               char *why, size_t whylen);

/* Send one command (argv as C strings) and read its reply: the reply (free
 * with freeReplyObject), or NULL with the reason in why; after NULL the
 * connection is unusable. */
redisReply *syncconn_command(struct syncconn *c, int argc, const char **argv,
                             char *why, size_t whylen);

void syncconn_close(struct syncconn *c);

#endif
