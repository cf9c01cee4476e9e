/*
 * tls: contexts, per-node client SSL objects, error texts. See tls.h.
 */
#include "lib/net/tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

/* "what: OpenSSL's reason" for a context that could not be set up. */
static SSL_CTX *ctx_fail(SSL_CTX *ctx, char *err, size_t errlen, const char *what,
                         const char *path)
{
    char reason[256] = "unknown error";
    unsigned long e = ERR_peek_last_error();
    if (e)
        ERR_error_string_n(e, reason, sizeof reason);
    ERR_clear_error();
    snprintf(err, errlen, "%s '%s': %s", what, path ? path : "", reason);
    SSL_CTX_free(ctx);
    return NULL;
}

static SSL_CTX *ctx_new(const SSL_METHOD *method)
{
    SSL_CTX *ctx = SSL_CTX_new(method);
    if (!ctx)
        return NULL;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* io.c writes what it can and retries from a buffer that may move */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    return ctx;
}

static SSL_CTX *ctx_cert(SSL_CTX *ctx, const char *cert, const char *key, char *err,
                         size_t errlen)
{
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
        return ctx_fail(ctx, err, errlen, "cannot load certificate", cert);
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1)
        return ctx_fail(ctx, err, errlen, "cannot load private key", key);
    if (SSL_CTX_check_private_key(ctx) != 1)
        return ctx_fail(ctx, err, errlen, "private key does not match certificate", key);
    return ctx;
}

SSL_CTX *tls_server_ctx(const struct tls_server_opts *o, char *err, size_t errlen)
{
    SSL_CTX *ctx = ctx_new(TLS_server_method());
    if (!ctx)
        return ctx_fail(NULL, err, errlen, "cannot create a TLS context", "tls-listen");
    if (!ctx_cert(ctx, o->cert_file, o->key_file, err, errlen))
        return NULL;
    if (o->verify_clients != TLS_VERIFY_NONE) {
        if (SSL_CTX_load_verify_locations(ctx, o->ca_cert_file, NULL) != 1)
            return ctx_fail(ctx, err, errlen, "cannot load CA certificates", o->ca_cert_file);
        /* the CAs clients may pick a certificate by */
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(o->ca_cert_file);
        if (names)
            SSL_CTX_set_client_CA_list(ctx, names);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER |
                           (o->verify_clients == TLS_VERIFY_REQUIRED ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                           NULL);
    }
    return ctx;
}

SSL_CTX *tls_cluster_ctx(const struct tls_cluster_opts *o, char *err, size_t errlen)
{
    SSL_CTX *ctx = ctx_new(TLS_client_method());
    if (!ctx)
        return ctx_fail(NULL, err, errlen, "cannot create a TLS context", "cluster-tls");
    if (o->cert_file && !ctx_cert(ctx, o->cert_file, o->key_file, err, errlen))
        return NULL;
    if (o->ca_cert_file) {
        if (SSL_CTX_load_verify_locations(ctx, o->ca_cert_file, NULL) != 1)
            return ctx_fail(ctx, err, errlen, "cannot load CA certificates", o->ca_cert_file);
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        return ctx_fail(ctx, err, errlen, "cannot load the system's CA certificates", "");
    }
    SSL_CTX_set_verify(ctx, o->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    return ctx;
}

static int is_ip(const char *host)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

SSL *tls_cluster_ssl(SSL_CTX *ctx, const char *server_name, const char *host, int insecure)
{
    SSL *ssl = SSL_new(ctx);
    const char *name = server_name ? server_name : host;
    if (!ssl)
        return NULL;
    if (!is_ip(name))
        SSL_set_tlsext_host_name(ssl, name);    /* SNI carries names only */
    if (insecure)
        return ssl;
    X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
    int ok = is_ip(name) ? X509_VERIFY_PARAM_set1_ip_asc(param, name)
                         : X509_VERIFY_PARAM_set1_host(param, name, 0);
    if (!ok) {
        SSL_free(ssl);
        return NULL;
    }
    return ssl;
}

void tls_error_text(const SSL *ssl, char *buf, size_t len)
{
    long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    unsigned long e = ERR_get_error();
    char reason[256] = "";
    if (e)
        ERR_error_string_n(e, reason, sizeof reason);
    ERR_clear_error();
    if (v != X509_V_OK)
        snprintf(buf, len, "certificate verify failed: %s", X509_verify_cert_error_string(v));
    else if (e)
        snprintf(buf, len, "%s", reason);
    else
        snprintf(buf, len, "TLS handshake or record error");
}
