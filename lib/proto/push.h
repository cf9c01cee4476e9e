/*
 * push: a pub/sub push as a subscriber connection receives it (RESP3's >,
 * RESP2's array): its kind ("message", "subscribe", "pong", ...) and its
 * first name (the channel or pattern), read from the first bytes only.
 * The reply is whole (reply.h's view).
 */
#ifndef TAGPROXY_PUSH_H
#define TAGPROXY_PUSH_H

#include <stddef.h>

struct reply_view;

struct push {
    char kind[16];                  /* "message", "subscribe", ... */
    size_t name_off, name_len;      /* first name: channel or pattern */
    int has_name;
};

/* Its kind and first name into p: 0, or -1 when it is no push. */
int push_parse(const struct reply_view *v, struct push *p);

/* The first name's bytes (p->has_name; valid until in changes). */
const char *push_name(const struct reply_view *v, const struct push *p);

#endif
