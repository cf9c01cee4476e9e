/*
 * hostport: "host:port" parsing. See hostport.h.
 */
#include "lib/base/hostport.h"

#include <ctype.h>
#include <string.h>
#include <stdlib.h>

/* The digits after the colon: 1..65535, nothing after them. */
static int parse_port(const char *s, int *port)
{
    long v = 0;
    if (!isdigit((unsigned char)*s))
        return -1;
    for (; isdigit((unsigned char)*s); s++) {
        v = v * 10 + (*s - '0');
        if (v > 65535)
            return -1;
    }
    if (*s || v < 1)
        return -1;
    *port = (int)v;
    return 0;
}

int hostport_parse(const char *s, char **host, int *port)
{
    const char *colon, *hs = s, *he;
    int p;

    if (*s == '[') {
        hs = s + 1;
        he = strchr(hs, ']');
        if (!he || he[1] != ':')
            return -1;
        colon = he + 1;
    } else {
        colon = strchr(s, ':');
        if (!colon || strchr(colon + 1, ':'))
            return -1;
        he = colon;
    }
    if (he == hs || parse_port(colon + 1, &p) < 0)
        return -1;
    for (const char *h = hs; h < he; h++)
        if ((unsigned char)*h <= ' ' || *h == 0x7f || *h == '[' || *h == ']')
            return -1;
    if (host) {
        *host = strndup(hs, (size_t)(he - hs));
        if (!*host)
            return -1;
    }
    *port = p;
    return 0;
}
