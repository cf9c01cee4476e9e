/*
 * url: the redis:// and rediss:// URLs tools are given, as clients write
 * them (`REDIS_URL`):
 *
 *   redis://[[user][:password]@]host[:port][/db]      plain TCP
 *   rediss://...                                      TLS
 *
 * An IPv6 host is in brackets (`redis://[::1]:6379`); user and password
 * may hold %XX escapes. Nothing is resolved here, and no error message
 * repeats the URL (it may hold a password).
 */
#ifndef TAGPROXY_URL_H
#define TAGPROXY_URL_H

#include <stddef.h>

#define URL_HOST_MAX 256
#define URL_CRED_MAX 512

struct redis_url {
    int tls;                        /* rediss:// */
    char host[URL_HOST_MAX];        /* without brackets */
    int port;                       /* 6379 when not given */
    char user[URL_CRED_MAX];        /* "" when not given */
    char password[URL_CRED_MAX];
    int has_password;               /* a password was given (it may be empty) */
    int db;                         /* 0 when not given */
};

/* 0, or -1 with what is wrong in err. */
int url_parse(const char *s, struct redis_url *u, char *err, size_t errlen);

/* "host:port" ("[host]:port" for an IPv6 host) into out. */
void url_hostport(const struct redis_url *u, char *out, size_t size);

#endif
