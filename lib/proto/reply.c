/*
 * reply: O(1)-memory framing of RESP2 and RESP3 replies (see reply.h).
 *
 * No stack: "pending" counts the elements still owed. A reply starts owing
 * one; each element read pays one, an aggregate header of n owes n more (a
 * map 2n), an attribute header of n owes 2n and pays nothing, since the
 * value it annotates is still owed. Blob payloads are skipped by
 * arithmetic, simple lines with memchr.
 *
 * The reply proper is found without a stack too: a top-level attribute
 * leaves the value it annotates owed, so its contents are done when pending
 * is back to 1, and the next type byte is the reply's.
 */
#include "lib/proto/reply.h"

#include <event2/buffer.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum {
    RS_TYPE = 0,    /* the type byte of an element */
    RS_LINE,        /* + - : , ( line, up to its CR */
    RS_LINE_LF,
    RS_NUM,         /* a blob length or an aggregate count, up to its CR */
    RS_NUM_LF,
    RS_BULK,        /* bulk_left payload bytes */
    RS_BULK_CR,     /* the CRLF after a payload, a null or a boolean */
    RS_BULK_LF,
    RS_BOOL,        /* the t or f of a boolean */
    RS_DONE,
    RS_ERROR
};

#define NUM_DIGITS_MAX 18
#define VERBATIM_MIN   4    /* "txt:" */

void reply_scanner_init(struct reply_scanner *s)
{
    s->type = 0;
    s->len = 0;
    s->body = 0;
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
    s->top = 1;
    s->top_attr = 0;
    s->capture = 0;
}

/* The next type byte; the reply proper's when a top-level attribute's
 * contents have just ended. */
static void next_element(struct reply_scanner *s)
{
    s->state = RS_TYPE;
    if (s->top_attr && s->pending == 1) {
        s->top_attr = 0;
        s->top = 1;
    }
}

static void element_done(struct reply_scanner *s)
{
    if (--s->pending == 0)
        s->state = RS_DONE;
    else
        next_element(s);
}

/* Add bytes of the error being read to errline, as long as it has room; a
 * CR or LF (a blob error's, or a stray LF in a line) becomes a space, so
 * errline is always one line. */
static void err_add(struct reply_scanner *s, const char *b, size_t n)
{
    size_t room = REPLY_ERRLINE_MAX - 1 - (size_t)s->err_len;
    size_t k = n < room ? n : room;
    for (size_t j = 0; j < k; j++)
        s->errline[s->err_len + j] = b[j] == '\r' || b[j] == '\n' ? ' ' : b[j];
    s->err_len += (int)k;
    s->errline[s->err_len] = '\0';
}

/* An aggregate header of n: owes n elements (2n for a map), or 2n and pays
 * nothing for an attribute. */
static void aggregate_done(struct reply_scanner *s, long long n)
{
    int attr = s->hdr == '|';
    if (s->hdr == '%' || attr)
        n *= 2;                     /* 18 digits: no overflow */
    if (n > LLONG_MAX - s->pending) {
        s->state = RS_ERROR;
        return;
    }
    if (attr) {
        s->pending += n;
        next_element(s);
    } else if (n == 0) {
        element_done(s);
    } else {
        s->pending += n - 1;
        s->state = RS_TYPE;
    }
}

/* A length or count line is complete. Only '$' and '*' may be -1 (null). */
static void header_done(struct reply_scanner *s)
{
    long long n = s->num;
    if (s->num_len == 0 ||
        (s->num_neg && (s->num_len != 1 || n != 1 || (s->hdr != '$' && s->hdr != '*')))) {
        s->state = RS_ERROR;
        return;
    }
    if (s->num_neg) {       /* $-1 or *-1: a null */
        element_done(s);
        return;
    }
    if (s->hdr == '$' || s->hdr == '=' || s->hdr == '!') {
        if (s->hdr == '=' && n < VERBATIM_MIN) {
            s->state = RS_ERROR;
            return;
        }
        s->bulk_left = n;
        if (n > s->bulk_max)
            s->bulk_max = n;
        s->state = n ? RS_BULK : RS_BULK_CR;
        return;
    }
    aggregate_done(s, n);
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

    if (s->capture)
        err_add(s, b, seg);
    if (!cr)
        return n;
    s->state = RS_LINE_LF;
    return seg + 1;
}

/* A blob or aggregate header at buf[i..len) whose whole line is there:
 * taken in one step, no state per byte. Returns the bytes taken, 0 when the
 * line is not whole or not plain digits (the byte-wise path decides). */
static size_t header_fast(struct reply_scanner *s, const char *buf, size_t i, size_t len)
{
    size_t j = i, end = len - i > NUM_DIGITS_MAX ? i + NUM_DIGITS_MAX : len;
    long long v = 0;
    while (j < end && buf[j] >= '0' && buf[j] <= '9')
        v = v * 10 + (buf[j++] - '0');
    if (j == i || j + 1 >= len || buf[j] != '\r' || buf[j + 1] != '\n')
        return 0;
    s->num = v;
    s->num_len = (int)(j - i);
    s->num_neg = 0;
    header_done(s);
    return j + 2 - i;
}

/* The type byte c, at offset at of the reply: sets the state it leads to.
 * At top level it is the reply proper's, unless it opens an attribute. */
static void type_byte(struct reply_scanner *s, char c, size_t at)
{
    if (s->top) {
        s->top = 0;
        if (c == '|') {
            s->top_attr = 1;
            s->type = '|';
        } else {
            s->type = c == '!' ? '-' : c;
            s->body = at;
            s->capture = c == '-' || c == '!';
        }
    }
    switch (c) {
    case '$': case '=': case '!':
    case '*': case '~': case '>': case '%': case '|':
        s->hdr = c;
        s->num = 0;
        s->num_len = 0;
        s->num_neg = 0;
        s->state = RS_NUM;
        break;
    case '+': case '-': case ':': case ',': case '(':
        s->state = RS_LINE;
        break;
    case '_':
        s->state = RS_BULK_CR;
        break;
    case '#':
        s->state = RS_BOOL;
        break;
    default:
        s->state = RS_ERROR;
    }
}

/* Payload bytes of a blob; returns the bytes taken. */
static size_t bulk_feed(struct reply_scanner *s, const char *b, size_t avail)
{
    /* the payload and its CRLF whole in the buffer: one step */
    if ((unsigned long long)avail >= (unsigned long long)s->bulk_left + 2) {
        size_t end = (size_t)s->bulk_left;
        if (b[end] == '\r' && b[end + 1] == '\n') {
            if (s->capture)
                err_add(s, b, end);
            s->bulk_left = 0;
            element_done(s);
            return end + 2;
        }
    }
    size_t take = (unsigned long long)avail < (unsigned long long)s->bulk_left
                ? avail : (size_t)s->bulk_left;
    if (s->capture)
        err_add(s, b, take);
    s->bulk_left -= (long long)take;
    if (s->bulk_left == 0)
        s->state = RS_BULK_CR;
    return take;
}

/* Whether the byte the state wants is there; if not, the node broke the
 * protocol (the byte is not taken). */
static int byte_ok(struct reply_scanner *s, int ok)
{
    if (!ok)
        s->state = RS_ERROR;
    return ok;
}

size_t reply_scan(struct reply_scanner *s, const char *buf, size_t len,
                  enum reply_scan_status *status)
{
    size_t i = 0;

    while (i < len && s->state != RS_DONE && s->state != RS_ERROR) {
        switch (s->state) {
        case RS_TYPE: {
            char c = buf[i];
            type_byte(s, c, s->len + i);
            if (s->state == RS_ERROR)
                break;
            i++;
            if (s->state == RS_NUM)
                i += header_fast(s, buf, i, len);
            break;
        }
        case RS_LINE:
            i += line_feed(s, buf + i, len - i);
            break;
        case RS_NUM:
            i += num_feed(s, buf + i, len - i);
            break;
        case RS_NUM_LF:
            if (byte_ok(s, buf[i] == '\n')) {
                i++;
                header_done(s);
            }
            break;
        case RS_BULK:
            i += bulk_feed(s, buf + i, len - i);
            break;
        case RS_BOOL:           /* exactly t or f */
            if (byte_ok(s, buf[i] == 't' || buf[i] == 'f')) {
                i++;
                s->state = RS_BULK_CR;
            }
            break;
        case RS_BULK_CR:
            if (byte_ok(s, buf[i] == '\r')) {
                i++;
                s->state = RS_BULK_LF;
            }
            break;
        case RS_LINE_LF:
        case RS_BULK_LF:
            if (byte_ok(s, buf[i] == '\n')) {
                i++;
                element_done(s);
            }
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

int reply_header(const char *buf, size_t len, struct reply_head *h)
{
    const char *eol = len >= 4 ? memchr(buf, '\n', len) : NULL;
    if (!eol || eol < buf + 3 || eol[-1] != '\r')
        return -1;
    char *end;
    h->type = buf[0];
    h->n = strtoll(buf + 1, &end, 10);
    h->len = (size_t)(eol - buf) + 1;
    return end == buf + 1 || end != eol - 1 ? -1 : 0;
}

size_t reply_length(const char *buf, size_t len)
{
    struct reply_scanner s;
    enum reply_scan_status st;
    reply_scanner_init(&s);
    size_t n = reply_scan(&s, buf, len, &st);
    return st == REPLY_SCAN_DONE ? n : 0;
}

int reply_is_null(const char *reply, size_t len)
{
    return (len >= 3 && (reply[0] == '$' || reply[0] == '*') && reply[1] == '-') ||
           (len == 3 && reply[0] == '_');
}

enum reply_redirect reply_classify(const char *line, size_t len, int *slot,
                                   char *addr, size_t addr_size)
{
    *slot = -1;
    if (addr && addr_size > 0)
        addr[0] = '\0';
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

int reply_elements(const char *buf, size_t len, long n, const char **elems, size_t *lens)
{
    size_t off = 0;
    for (long i = 0; i < n; i++) {
        size_t el = reply_length(buf + off, len - off);
        if (el == 0)
            return -1;
        if (elems) {
            elems[i] = buf + off;
            lens[i] = el;
        }
        off += el;
    }
    return 0;
}

int reply_iter_array(struct reply_iter *it, const char *buf, size_t len)
{
    return reply_iter_of(it, buf, len, '*');
}

int reply_iter_of(struct reply_iter *it, const char *buf, size_t len, char type)
{
    struct reply_head h;
    if (reply_header(buf, len, &h) < 0 || h.type != type || h.n < 0 || h.n > LONG_MAX)
        return -1;
    *it = (struct reply_iter){ .at = buf + h.len, .left_bytes = len - h.len, .n = (long)h.n,
                               .left = (long)h.n };
    return 0;
}

int reply_iter_next(struct reply_iter *it, const char **elem, size_t *elen)
{
    if (it->left == 0)
        return 0;
    size_t el = reply_length(it->at, it->left_bytes);
    if (el == 0)
        return -1;
    *elem = it->at;
    *elen = el;
    it->at += el;
    it->left_bytes -= el;
    it->left--;
    return 1;
}

long reply_array_elements(const char *buf, size_t len, const char **elems,
                          size_t *lens, long max)
{
    struct reply_iter it;
    const char *e;
    size_t el;
    int rc;
    if (reply_iter_array(&it, buf, len) < 0 || (max >= 0 && it.n > max))
        return -1;
    for (long i = 0; (rc = reply_iter_next(&it, &e, &el)) > 0; i++)
        if (elems) {
            elems[i] = e;
            lens[i] = el;
        }
    return rc < 0 ? -1 : it.n;
}

const char *reply_view_head(const struct reply_view *v, size_t need)
{
    if (need > v->len)
        need = v->len;
    return v->in ? (const char *)evbuffer_pullup(v->in, (ssize_t)need) : v->bytes;
}

void reply_view_copy(const struct reply_view *v, char *buf, size_t n)
{
    if (v->in)
        evbuffer_copyout(v->in, buf, n);
    else
        memcpy(buf, v->bytes, n);
}

void reply_view_take(const struct reply_view *v, struct evbuffer *dst)
{
    if (v->in)
        evbuffer_remove_buffer(v->in, dst, v->len);
    else
        evbuffer_add(dst, v->bytes, v->len);
}

void reply_view_drop(const struct reply_view *v)
{
    if (v->in)
        evbuffer_drain(v->in, v->len);
}

void reply_view_text(const struct reply_view *v, char *buf, size_t size, int whole)
{
    size_t n = v->len < size - 1 ? v->len : size - 1;
    reply_view_copy(v, buf, n);
    reply_view_drop(v);
    buf[n] = '\0';
    if (!whole)
        buf[strcspn(buf, "\r\n")] = '\0';
}
