/*
 * tls: OpenSSL contexts for both sides of the proxy, built once at start.
 *
 *   bots ──TLS (tls-listen)──► proxy ──TLS (cluster-tls)──► nodes
 *         tls_server_ctx()             tls_cluster_ctx(), tls_cluster_ssl()
 *
 * Both accept TLS 1.2 and newer only. The server side presents
 * tls-cert-file/tls-key-file and, by tls-auth-clients, asks clients for a
 * certificate signed by tls-ca-cert-file (yes: required, optional: checked
 * when given, no: not asked), as redis-server does.
 * The cluster side verifies every node's certificate against
 * cluster-tls-ca-cert-file (else the system's CAs) and checks the name in it:
 * cluster-tls-server-name when set (also sent as SNI), else the node's host
 * as the cluster announces it (a seed's, and a topology refresh's, the host
 * dialled; an IP address is checked against the certificate's IP entries). cluster-tls-insecure yes turns both checks off,
 * only when asked for explicitly. cluster-tls-cert-file/-key-file give the
 * proxy a client certificate for nodes that require one.
 *
 * The SSL objects themselves live in io.h (non-blocking, worker threads)
 * and in cluster/syncconn.h (blocking, the control thread's topology reads).
 * An SSL_CTX is shared by every thread; each SSL object by one only.
 */
#ifndef TAGPROXY_TLS_H
#define TAGPROXY_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

enum tls_verify { TLS_VERIFY_NONE, TLS_VERIFY_OPTIONAL, TLS_VERIFY_REQUIRED };

/* The files of the proxy's own side and whether clients show certificates. */
struct tls_server_opts {
    const char *cert_file, *key_file, *ca_cert_file;
    enum tls_verify verify_clients;
};

/* The files for connections to nodes (cert and CA may be NULL). */
struct tls_cluster_opts {
    const char *cert_file, *key_file, *ca_cert_file;
    int insecure;
};

/* The context for tls-listen, or NULL with the reason in err. */
SSL_CTX *tls_server_ctx(const struct tls_server_opts *o, char *err, size_t errlen);

/* The context for connections to the nodes, or NULL with the reason. */
SSL_CTX *tls_cluster_ctx(const struct tls_cluster_opts *o, char *err, size_t errlen);

/* A client SSL for a node at host (no port): SNI and the name or IP address
 * to verify, by server_name when not NULL, else host; insecure: none.
 * NULL when out of memory. */
SSL *tls_cluster_ssl(SSL_CTX *ctx, const char *server_name, const char *host, int insecure);

/* The reason a TLS operation just failed, from OpenSSL's error queue and the
 * peer certificate's verification result (clears the queue). */
void tls_error_text(const SSL *ssl, char *buf, size_t len);

#endif
