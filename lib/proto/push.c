/*
 * push: what a subscriber connection receives. See push.h.
 */
#include "lib/proto/push.h"

#include <string.h>

#include "lib/proto/reply.h"

/* A "$n\r\n" or "*n\r\n" header at *pos; -1 when it is not one. */
static int push_header(const char *b, size_t avail, size_t *pos, char type, long long *n)
{
    struct reply_head h;
    size_t p = *pos;
    if (p >= avail || reply_header(b + p, avail - p, &h) < 0 || h.type != type)
        return -1;
    *n = h.n;
    *pos = p + h.len;
    return 0;
}

int push_parse(const struct reply_view *v, struct push *p)
{
    size_t len = v->len, pos = 0, avail = len < 64 ? len : 64;
    long long n, klen, nlen;
    const char *b = reply_view_head(v, avail);
    memset(p, 0, sizeof *p);
    char agg = avail > 0 && b[0] == '>' ? '>' : '*';   /* RESP3's push, RESP2's array */
    if (push_header(b, avail, &pos, agg, &n) < 0 || n < 2 ||
        push_header(b, avail, &pos, '$', &klen) < 0 || klen <= 0 ||
        klen >= (long long)sizeof p->kind || pos + (size_t)klen + 2 > avail)
        return -1;
    memcpy(p->kind, b + pos, (size_t)klen);
    pos += (size_t)klen + 2;
    if (pos < avail && b[pos] == ':')       /* "pong" has a bulk; counts do not matter */
        return 0;
    if (push_header(b, avail, &pos, '$', &nlen) < 0)
        return 0;                           /* cut by the view: no name needed then */
    if (nlen < 0)
        return 0;                           /* "unsubscribe" of nothing */
    if (pos + (size_t)nlen > len)
        return -1;
    p->has_name = 1;
    p->name_off = pos;
    p->name_len = (size_t)nlen;
    return 0;
}

const char *push_name(const struct reply_view *v, const struct push *p)
{
    return reply_view_head(v, p->name_off + p->name_len) + p->name_off;
}
