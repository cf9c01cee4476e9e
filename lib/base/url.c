/*
 * url: redis:// URLs. See url.h.
 */
#include "lib/base/url.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* in[0..len) with %XX decoded into out (NUL-terminated): 0, or -1 when it
 * does not fit or an escape is malformed. */
static int decode(const char *in, size_t len, char *out, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        if (c == '%') {
            int hi = i + 2 < len ? hex_value(in[i + 1]) : -1;
            int lo = i + 2 < len ? hex_value(in[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return -1;
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        if (n + 1 >= size || c == '\0')
            return -1;
        out[n++] = c;
    }
    out[n] = '\0';
    return 0;
}

static int fail(char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "not a redis:// or rediss:// URL: %s", why);
    return -1;
}

/* "user:password" (either part may be empty or missing). */
static int parse_credentials(const char *s, size_t len, struct redis_url *u, char *err,
                             size_t errlen)
{
    const char *colon = memchr(s, ':', len);
    size_t ulen = colon ? (size_t)(colon - s) : len;
    if (decode(s, ulen, u->user, sizeof u->user) < 0)
        return fail(err, errlen, "the user name is too long or has a bad %XX escape");
    if (!colon)
        return 0;
    u->has_password = 1;
    if (decode(colon + 1, len - ulen - 1, u->password, sizeof u->password) < 0)
        return fail(err, errlen, "the password is too long or has a bad %XX escape");
    return 0;
}

/* "host[:port]" or "[v6][:port]". */
static int parse_hostport(const char *s, size_t len, struct redis_url *u, char *err,
                          size_t errlen)
{
    const char *host = s, *rest;
    size_t hlen;
    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close)
            return fail(err, errlen, "an IPv6 host without its ']'");
        host = s + 1;
        hlen = (size_t)(close - host);
        rest = close + 1;
    } else {
        const char *colon = memchr(s, ':', len);
        hlen = colon ? (size_t)(colon - s) : len;
        rest = s + hlen;
    }
    if (hlen == 0 || hlen >= sizeof u->host)
        return fail(err, errlen, hlen ? "the host is too long" : "no host");
    memcpy(u->host, host, hlen);
    u->host[hlen] = '\0';
    if (strpbrk(u->host, " \t\r\n@/[]"))
        return fail(err, errlen, "the host has a character a host cannot have");
    size_t left = len - (size_t)(rest - s);
    if (left == 0)
        return 0;
    if (rest[0] != ':' || left < 2 || left > 6)
        return fail(err, errlen, "a bad port");
    char port[8];
    memcpy(port, rest + 1, left - 1);
    port[left - 1] = '\0';
    char *end;
    long p = strtol(port, &end, 10);
    if (*end || port[0] < '0' || port[0] > '9' || p < 1 || p > 65535)
        return fail(err, errlen, "a bad port");
    u->port = (int)p;
    return 0;
}

int url_parse(const char *s, struct redis_url *u, char *err, size_t errlen)
{
    memset(u, 0, sizeof *u);
    u->port = 6379;
    if (strncmp(s, "redis://", 8) == 0)
        s += 8;
    else if (strncmp(s, "rediss://", 9) == 0) {
        s += 9;
        u->tls = 1;
    } else
        return fail(err, errlen, "it does not start with redis:// or rediss://");
    size_t auth_len = strcspn(s, "/");
    const char *at = NULL;
    for (size_t i = 0; i < auth_len; i++)      /* the last '@': a password may hold one */
        if (s[i] == '@')
            at = s + i;
    if (at && parse_credentials(s, (size_t)(at - s), u, err, errlen) < 0)
        return -1;
    const char *hp = at ? at + 1 : s;
    if (parse_hostport(hp, auth_len - (size_t)(hp - s), u, err, errlen) < 0)
        return -1;
    const char *path = s + auth_len;
    if (*path == '/' && path[1]) {
        char *end;
        long db = strtol(path + 1, &end, 10);
        if (*end || path[1] < '0' || path[1] > '9' || db < 0 || db > 1000000)
            return fail(err, errlen, "the database is not a number");
        u->db = (int)db;
    }
    return 0;
}

void url_hostport(const struct redis_url *u, char *out, size_t size)
{
    snprintf(out, size, strchr(u->host, ':') ? "[%s]:%d" : "%s:%d", u->host, u->port);
}
