/*
 * reply: O(1)-memory framing of RESP2 replies (see reply.h).
 *
 * No stack: "pending" counts the elements still owed. A reply starts owing
 * one; each element read pays one, an array header of n owes n more. Bulk
 * payloads are skipped by arithmetic, simple lines with memchr.
 */
#include "cluster/reply.h"

#include <limits.h>
#include <string.h>

enum {
    RS_TYPE = 0,    /* the type byte of an element */
    RS_LINE,        /* + - : line, up to its CR */
    RS_LINE_LF,
    RS_NUM,         /* $ or * length, up to its CR */
    RS_NUM_LF,
    RS_BULK,        /* bulk_left payload bytes */
    RS_BULK_CR,
    RS_BULK_LF,
    RS_DONE,
    RS_ERROR
};

#define NUM_DIGITS_MAX 18

void reply_scanner_init(struct reply_scanner *s)
{
    s->type = 0;
    s->len = 0;
    s->errline[0] = '\0';
    s->bulk_max = 0;
    s->state = RS_TYPE;
    s->pending = 1;
    s->bulk_left = 0;
    s->num = 0;
    s->num_len = 0;
    s->num_neg = 0;
    s->hdr = 0;
    s->err_len = 0;
}

static void element_done(struct reply_scanner *s)
{
    s->state = --s->pending == 0 ? RS_DONE : RS_TYPE;
}

/* A "$n" or "*n" line is complete. */
static void header_done(struct reply_scanner *s)
{
    long long n = s->num;
    if (s->num_len == 0 || (s->num_neg && (s->num_len != 1 || n != 1))) {
        s->state = RS_ERROR;
        return;
    }
    if (s->num_neg) {       /* $-1 or *-1: a null */
        element_done(s);
        return;
    }
    if (s->hdr == '$') {
        s->bulk_left = n;
        if (n > s->bulk_max)
            s->bulk_max = n;
        s->state = n ? RS_BULK : RS_BULK_CR;
        return;
    }
    if (n == 0) {
        element_done(s);
        return;
    }
    if (n > LLONG_MAX - s->pending) {
        s->state = RS_ERROR;
        return;
    }
    s->pending += n - 1;
    s->state = RS_TYPE;
}

/* Digits of a length line; returns the bytes taken. */
static size_t num_feed(struct reply_scanner *s, const char *b, size_t n)
{
    size_t i = 0;
    while (i < n) {
        char c = b[i++];
        if (c >= '0' && c <= '9') {
            if (s->num_len == NUM_DIGITS_MAX) {
                s->state = RS_ERROR;
                return i;
            }
            s->num = s->num * 10 + (c - '0');
            s->num_len++;
        } else if (c == '\r') {
            s->state = RS_NUM_LF;
            return i;
        } else if (c == '-' && s->num_len == 0 && !s->num_neg) {
            s->num_neg = 1;
        } else {
            s->state = RS_ERROR;
            return i;
        }
    }
    return i;
}

static size_t line_feed(struct reply_scanner *s, const char *b, size_t n)
{
    const char *cr = memchr(b, '\r', n);
    size_t seg = cr ? (size_t)(cr - b) : n;

    if (s->type == '-') {
        size_t room = REPLY_ERRLINE_MAX - 1 - (size_t)s->err_len;
        size_t k = seg < room ? seg : room;
        memcpy(s->errline + s->err_len, b, k);
        s->err_len += (int)k;
        s->errline[s->err_len] = '\0';
    }
    if (!cr)
        return n;
    s->state = RS_LINE_LF;
    return seg + 1;
}

size_t reply_scan(struct reply_scanner *s, const char *buf, size_t len,
                  enum reply_scan_status *status)
{
    size_t i = 0;

    while (i < len && s->state != RS_DONE && s->state != RS_ERROR) {
        switch (s->state) {
        case RS_TYPE: {
            char c = buf[i++];
            if (s->type == 0)
                s->type = c;
            if (c == '$' || c == '*') {
                s->hdr = c;
                /* the whole length line in the buffer: no state per byte */
                size_t j = i, end = len - i > NUM_DIGITS_MAX ? i + NUM_DIGITS_MAX : len;
                long long v = 0;
                while (j < end && buf[j] >= '0' && buf[j] <= '9')
                    v = v * 10 + (buf[j++] - '0');
                if (j > i && j + 1 < len && buf[j] == '\r' && buf[j + 1] == '\n') {
                    s->num = v;
                    s->num_len = (int)(j - i);
                    s->num_neg = 0;
                    i = j + 2;
                    header_done(s);
                    break;
                }
                s->num = 0;
                s->num_len = 0;
                s->num_neg = 0;
                s->state = RS_NUM;
            } else if (c == '+' || c == '-' || c == ':') {
                s->state = RS_LINE;
            } else {
                i--;
                s->state = RS_ERROR;
            }
            break;
        }
        case RS_LINE:
            i += line_feed(s, buf + i, len - i);
            break;
        case RS_LINE_LF:
            if (buf[i] != '\n') {
                s->state = RS_ERROR;
                break;
            }
            i++;
            element_done(s);
            break;
        case RS_NUM:
            i += num_feed(s, buf + i, len - i);
            break;
        case RS_NUM_LF:
            if (buf[i] != '\n') {
                s->state = RS_ERROR;
                break;
            }
            i++;
            header_done(s);
            break;
        case RS_BULK: {
            size_t avail = len - i;
            /* the payload and its CRLF whole in the buffer: one step */
            if ((unsigned long long)avail >= (unsigned long long)s->bulk_left + 2) {
                size_t end = i + (size_t)s->bulk_left;
                if (buf[end] == '\r' && buf[end + 1] == '\n') {
                    i = end + 2;
                    s->bulk_left = 0;
                    element_done(s);
                    break;
                }
            }
            size_t take = (unsigned long long)avail < (unsigned long long)s->bulk_left
                        ? avail : (size_t)s->bulk_left;
            i += take;
            s->bulk_left -= (long long)take;
            if (s->bulk_left == 0)
                s->state = RS_BULK_CR;
            break;
        }
        case RS_BULK_CR:
            if (buf[i] != '\r') {
                s->state = RS_ERROR;
                break;
            }
            i++;
            s->state = RS_BULK_LF;
            break;
        case RS_BULK_LF:
            if (buf[i] != '\n') {
                s->state = RS_ERROR;
                break;
            }
            i++;
            element_done(s);
            break;
        }
    }
    s->len += i;
    *status = s->state == RS_DONE  ? REPLY_SCAN_DONE
            : s->state == RS_ERROR ? REPLY_SCAN_ERROR
                                   : REPLY_SCAN_MORE;
    return i;
}

/* ---- classify ---- */

static int word_is(const char *line, size_t len, const char *w)
{
    size_t n = strlen(w);
    return len >= n && memcmp(line, w, n) == 0 && (len == n || line[n] == ' ');
}

/* Unsigned decimal of 1..5 digits, whole of s[0..len). -1 if not. */
static long small_uint(const char *s, size_t len)
{
    if (len == 0 || len > 5)
        return -1;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

int reply_addr_canon(const char *a, size_t len, char *out, size_t out_size)
{
    const char *colon = NULL;
    for (size_t i = 0; i < len; i++)
        if (a[i] == ':')
            colon = a + i;
    if (!colon)
        return -1;
    size_t hostlen = (size_t)(colon - a);
    const char *open = memchr(a, '[', len), *close = memchr(a, ']', len);
    int bracketed = hostlen >= 3 && a[0] == '[' && a[hostlen - 1] == ']';
    if ((open || close) && !(bracketed && open == a && close == colon - 1))
        return -1;
    /* Redis writes an IPv6 host without brackets ("::1:7000"); the
     * topology announces it bracketed, as a host:port must be written */
    int wrap = !bracketed && memchr(a, ':', hostlen) != NULL;
    size_t need = len + (wrap ? 2 : 0);
    if (need >= out_size)
        return -1;
    if (wrap) {
        out[0] = '[';
        memcpy(out + 1, a, hostlen);
        out[1 + hostlen] = ']';
        memcpy(out + 2 + hostlen, colon, len - hostlen);
    } else {
        memcpy(out, a, len);
    }
    out[need] = '\0';
    return 0;
}

/* "<slot> <host>:<port>" */
static int parse_redirect(const char *p, size_t len, int *slot, char *addr, size_t addr_size)
{
    const char *sp = memchr(p, ' ', len);
    if (!sp)
        return -1;
    long sl = small_uint(p, (size_t)(sp - p));
    if (sl < 0 || sl > 16383)
        return -1;
    const char *a = sp + 1;
    size_t alen = len - (size_t)(a - p);
    const char *colon = NULL;
    for (size_t i = 0; i < alen; i++) {
        unsigned char c = (unsigned char)a[i];
        if (c <= ' ' || c == 0x7f)
            return -1;
        if (c == ':')
            colon = a + i;
    }
    if (!colon)
        return -1;
    long port = small_uint(colon + 1, alen - (size_t)(colon + 1 - a));
    if (port < 1 || port > 65535)
        return -1;
    if (reply_addr_canon(a, alen, addr, addr_size) < 0)
        return -1;
    if (slot)
        *slot = (int)sl;
    return 0;
}

enum reply_redirect reply_classify(const char *line, size_t len, int *slot,
                                   char *addr, size_t addr_size)
{
    if (word_is(line, len, "MOVED"))
        return len > 6 && addr && parse_redirect(line + 6, len - 6, slot, addr, addr_size) == 0
             ? REPLY_MOVED : REPLY_PLAIN;
    if (word_is(line, len, "ASK"))
        return len > 4 && addr && parse_redirect(line + 4, len - 4, slot, addr, addr_size) == 0
             ? REPLY_ASK : REPLY_PLAIN;
    if (word_is(line, len, "TRYAGAIN"))
        return REPLY_TRYAGAIN;
    if (word_is(line, len, "CLUSTERDOWN"))
        return REPLY_CLUSTERDOWN;
    return REPLY_PLAIN;
}

void reply_error_code(const char *line, char *code, size_t size)
{
    size_t n = 0;
    while (line[n] && line[n] != ' ' && n + 1 < size)
        n++;
    memcpy(code, line, n);
    code[n] = '\0';
}
