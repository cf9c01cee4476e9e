/*
 * resp: request parser and reply writers (see resp.h).
 *
 * The parser is a byte-exact state machine. Each state takes the longest run
 * of bytes it can at once (memchr for line ends, arithmetic for bulk
 * payloads); a multibulk header or bulk header that lies whole in the buffer
 * and is written the canonical way ("$3\r\n") is taken by a fast path, and
 * anything else goes through the slow path, which keeps the line's first 22
 * bytes and decides exactly as Redis's processMultibulkBuffer() does.
 */
#include "lib/proto/resp.h"

#include <event2/buffer.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    ST_START = 0,   /* first byte of a command */
    ST_COUNT,       /* the "*<count>" line */
    ST_BULK_HDR,    /* a "$<len>" line */
    ST_BULK_DATA,   /* bulk_left bytes of payload */
    ST_BULK_CR,     /* the CR after a payload */
    ST_BULK_LF,     /* the LF after a payload */
    ST_INLINE,      /* an inline line, up to its LF */
    ST_DONE,        /* a command is complete: resp_parser_next() */
    ST_ERROR
};

#define HDR_NUM_MAX ((int)sizeof(((struct resp_parser *)0)->hdr_num))
#define ARGS_KEEP   1024            /* entries kept across commands */
#define BUF_KEEP    (16 * 1024)     /* bytes of line/inline_mb kept */

/* ---- helpers ---- */

/* Redis's string2ll(): an optional '-', no leading zero, no '+', no space,
 * fits in a long long, at most 20 characters. */
static int str2ll(const char *s, size_t len, long long *out)
{
    size_t i = 0;
    int neg = 0;
    unsigned long long v = 0;

    if (len == 0 || len > 20)
        return 0;
    if (len == 1 && s[0] == '0') {
        *out = 0;
        return 1;
    }
    if (s[0] == '-') {
        neg = 1;
        if (++i == len)
            return 0;
    }
    if (s[i] < '1' || s[i] > '9')
        return 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (ULLONG_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (unsigned long long)LLONG_MAX + 1)
            return 0;
        *out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v;
    } else {
        if (v > (unsigned long long)LLONG_MAX)
            return 0;
        *out = (long long)v;
    }
    return 1;
}

static size_t parser_limit(const struct resp_parser *p)
{
    size_t lim = p->max_command_len;
    if (lim == 0 || lim > (size_t)UINT32_MAX - 1)
        lim = (size_t)UINT32_MAX - 1;
    return lim;
}

static void fail(struct resp_parser *p, const char *msg)
{
    p->err = msg;
    p->state = ST_ERROR;
}

static int args_reserve(struct resp_arg **args, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need)
        ncap *= 2;
    struct resp_arg *n = realloc(*args, ncap * sizeof *n);
    if (!n)
        return -1;
    *args = n;
    *cap = ncap;
    return 0;
}

static int buf_reserve(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 256;
    while (ncap < need)
        ncap *= 2;
    char *n = realloc(*buf, ncap);
    if (!n)
        return -1;
    *buf = n;
    *cap = ncap;
    return 0;
}

/* Decimal digits of v into buf (at least 20 bytes), returns the length. */
static size_t ull_to_str(char *buf, unsigned long long v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    return n;
}

static size_t ll_to_str(char *buf, long long v)
{
    if (v >= 0)
        return ull_to_str(buf, (unsigned long long)v);
    buf[0] = '-';
    return 1 + ull_to_str(buf + 1, 0ULL - (unsigned long long)v);
}

/* ---- parser lifecycle ---- */

static void hdr_reset(struct resp_parser *p)
{
    p->hdr_len = 0;
    p->hdr_cr = 0;
    p->hdr_num_len = 0;
}

void resp_parser_init(struct resp_parser *p, long long max_bulk_len,
                      size_t max_command_len)
{
    memset(p, 0, sizeof *p);
    p->max_bulk_len = max_bulk_len;
    p->max_command_len = max_command_len;
}

void resp_parser_free(struct resp_parser *p)
{
    free(p->args);
    free(p->line);
    free(p->inline_mb);
    p->args = NULL;
    p->line = p->inline_mb = NULL;
    p->args_cap = p->line_cap = p->inline_mb_cap = 0;
}

void resp_parser_next(struct resp_parser *p)
{
    if (p->state == ST_ERROR)
        return;
    if (p->args_cap > ARGS_KEEP) {
        free(p->args);
        p->args = NULL;
        p->args_cap = 0;
    }
    if (p->line_cap > BUF_KEEP) {
        free(p->line);
        p->line = NULL;
        p->line_cap = 0;
    }
    if (p->inline_mb_cap > BUF_KEEP) {
        free(p->inline_mb);
        p->inline_mb = NULL;
        p->inline_mb_cap = 0;
    }
    p->argc = 0;
    p->cmd_len = 0;
    p->is_inline = 0;
    p->inline_mb_len = 0;
    p->empty_inline = 0;
    p->state = ST_START;
    p->multibulk_left = 0;
    p->bulk_left = 0;
    p->pos = 0;
    p->line_len = 0;
    hdr_reset(p);
}

static void finish(struct resp_parser *p)
{
    p->cmd_len = p->pos;
    p->state = ST_DONE;
}

/* ---- multibulk ---- */

/* A '$' header was accepted: record the argument that follows it. */
static int bulk_begin(struct resp_parser *p, long long len)
{
    if (args_reserve(&p->args, &p->args_cap, (size_t)p->argc + 1) < 0) {
        fail(p, "Protocol error: out of memory");
        return -1;
    }
    p->args[p->argc].off = (uint32_t)p->pos;
    p->args[p->argc].len = (uint32_t)len;
    p->argc++;
    p->bulk_left = len;
    p->state = len ? ST_BULK_DATA : ST_BULK_CR;
    return 0;
}

/* The checks Redis makes on a "*<count>" line, then ours on its LF. */
static void count_line_done(struct resp_parser *p, long long n, int ok, char after_cr)
{
    if (!ok || n > RESP_MULTIBULK_MAX)
        fail(p, "Protocol error: invalid multibulk length");
    else if (n > RESP_UNAUTH_MULTIBULK_MAX && p->unauthenticated)
        fail(p, "Protocol error: unauthenticated multibulk length");
    else if (after_cr != '\n')
        fail(p, RESP_ERR_CRLF);
    else if (n <= 0)
        finish(p);
    else {
        p->multibulk_left = n;
        p->state = ST_BULK_HDR;
    }
}

/* The checks Redis makes on a "$<len>" line, then ours. p->pos is just past
 * the line's LF. */
static void bulk_line_done(struct resp_parser *p, char first, long long n, int ok,
                           char after_cr)
{
    if (first != '$') {
        char c = (first == '\r' || first == '\n' || first == '\0') ? ' ' : first;
        snprintf(p->errbuf, sizeof p->errbuf, "Protocol error: expected '$', got '%c'", c);
        fail(p, p->errbuf);
    } else if (!ok || n < 0 || n > p->max_bulk_len) {
        fail(p, "Protocol error: invalid bulk length");
    } else if (n > RESP_UNAUTH_BULK_MAX && p->unauthenticated) {
        fail(p, "Protocol error: unauthenticated bulk length");
    } else if (after_cr != '\n') {
        fail(p, RESP_ERR_CRLF);
    } else if ((unsigned long long)p->pos + (unsigned long long)n + 2 > parser_limit(p)) {
        fail(p, RESP_ERR_LIMIT);
    } else {
        bulk_begin(p, n);
    }
}

/*
 * Slow path for a '*' or '$' line: keep its first byte and the next 21,
 * wait for the CR and one more byte. Redis gives up on a line with no CR in
 * 64 KiB. Returns the bytes consumed.
 */
static size_t hdr_feed(struct resp_parser *p, const char *b, size_t n)
{
    size_t i = 0;

    if (!p->hdr_cr) {
        const char *cr = memchr(b, '\r', n);
        size_t seg = cr ? (size_t)(cr - b) : n;
        if (p->hdr_len + seg > RESP_INLINE_MAX) {
            size_t upto = RESP_INLINE_MAX - p->hdr_len + 1;
            p->pos += upto;
            fail(p, p->state == ST_COUNT ? "Protocol error: too big mbulk count string"
                                         : "Protocol error: too big bulk count string");
            return upto;
        }
        for (size_t k = 0; k < seg; k++) {
            if (p->hdr_len + k == 0)
                p->hdr_first = b[k];
            else if (p->hdr_num_len < HDR_NUM_MAX)
                p->hdr_num[p->hdr_num_len++] = b[k];
            else
                break;
        }
        p->hdr_len += seg;
        i = seg;
        if (!cr) {
            p->pos += n;
            return n;
        }
        p->hdr_cr = 1;
        if (++i == n) {
            p->pos += n;
            return n;
        }
    }
    /* b[i] is the byte after the CR: the line is complete. */
    p->pos += i + 1;
    long long v = 0;
    int ok = p->hdr_num_len < HDR_NUM_MAX && str2ll(p->hdr_num, (size_t)p->hdr_num_len, &v);
    char first = p->hdr_len ? p->hdr_first : '\r';
    if (p->state == ST_COUNT) {
        if (p->hdr_len == 0)    /* cannot happen: the line starts with '*' */
            ok = 0;
        hdr_reset(p);
        count_line_done(p, v, ok, b[i]);
    } else {
        hdr_reset(p);
        bulk_line_done(p, first, v, ok, b[i]);
    }
    return i + 1;
}

/*
 * Fast path: a canonical header ("*2\r\n", "$3\r\n": no sign, no leading
 * zero, at most 18 digits) lying whole in b. Returns the bytes it took, or
 * 0 to let hdr_feed() decide.
 */
static inline size_t hdr_fast(const char *b, size_t n, char type, long long *v)
{
    if (n < 4 || b[0] != type)
        return 0;
    size_t i = 1;
    long long x = 0;
    if (b[1] == '0') {
        i = 2;
    } else {
        size_t end = n < 19 ? n : 19;
        while (i < end && b[i] >= '0' && b[i] <= '9') {
            x = x * 10 + (b[i] - '0');
            i++;
        }
        if (i == 1)
            return 0;
    }
    if (i + 1 >= n || b[i] != '\r' || b[i + 1] != '\n')
        return 0;
    *v = x;
    return i + 2;
}

/*
 * Fast path for the common case: a whole multibulk command of canonical
 * headers lying in b, within every limit. Returns its length, or 0 (having
 * changed nothing the state machine reads) to let the state machine decide.
 */
static size_t mb_fast(struct resp_parser *p, const char *b, size_t n)
{
    long long count, len;
    size_t i = hdr_fast(b, n, '*', &count);

    if (!i || count <= 0 || count > ARGS_KEEP ||
        (count > RESP_UNAUTH_MULTIBULK_MAX && p->unauthenticated))
        return 0;
    if (args_reserve(&p->args, &p->args_cap, (size_t)count) < 0)
        return 0;
    for (long long a = 0; a < count; a++) {
        size_t h = hdr_fast(b + i, n - i, '$', &len);
        if (!h || len > p->max_bulk_len || (len > RESP_UNAUTH_BULK_MAX && p->unauthenticated))
            return 0;
        i += h;
        if ((size_t)len + 2 > n - i || b[i + len] != '\r' || b[i + len + 1] != '\n')
            return 0;
        p->args[a].off = (uint32_t)i;
        p->args[a].len = (uint32_t)len;
        i += (size_t)len + 2;
    }
    if (i > parser_limit(p))
        return 0;
    p->argc = (int)count;
    p->pos = i;
    finish(p);
    return i;
}

/* One command's worth of multibulk from the state in p->state. */
static size_t mb_feed(struct resp_parser *p, const char *b, size_t n)
{
    size_t i = 0;

    while (i < n && p->state != ST_DONE && p->state != ST_ERROR) {
        switch (p->state) {
        case ST_COUNT:
        case ST_BULK_HDR: {
            long long v;
            size_t took = p->hdr_len || p->hdr_cr ? 0
                        : hdr_fast(b + i, n - i, p->state == ST_COUNT ? '*' : '$', &v);
            if (!took) {
                i += hdr_feed(p, b + i, n - i);
                break;
            }
            i += took;
            p->pos += took;
            if (p->state == ST_COUNT)
                count_line_done(p, v, 1, '\n');
            else
                bulk_line_done(p, '$', v, 1, '\n');
            /* a bulk whole in the buffer with its CRLF: take it at once */
            if (p->state == ST_BULK_DATA || p->state == ST_BULK_CR) {
                size_t need = (size_t)p->bulk_left + 2;
                if (n - i >= need && b[i + need - 2] == '\r' && b[i + need - 1] == '\n') {
                    i += need;
                    p->pos += need;
                    p->bulk_left = 0;
                    if (--p->multibulk_left == 0)
                        finish(p);
                    else
                        p->state = ST_BULK_HDR;
                }
            }
            break;
        }
        case ST_BULK_DATA: {
            size_t take = n - i;
            if ((unsigned long long)take > (unsigned long long)p->bulk_left)
                take = (size_t)p->bulk_left;
            i += take;
            p->pos += take;
            p->bulk_left -= (long long)take;
            if (p->bulk_left == 0)
                p->state = ST_BULK_CR;
            break;
        }
        case ST_BULK_CR:
            if (b[i] != '\r') {
                fail(p, RESP_ERR_BULK_CRLF);
                break;
            }
            i++;
            p->pos++;
            p->state = ST_BULK_LF;
            break;
        case ST_BULK_LF:
            if (b[i] != '\n') {
                fail(p, RESP_ERR_BULK_CRLF);
                break;
            }
            i++;
            p->pos++;
            if (--p->multibulk_left == 0)
                finish(p);
            else
                p->state = ST_BULK_HDR;
            break;
        }
    }
    return i;
}

/* ---- inline ---- */

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int hex_val(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/*
 * Redis's sdssplitargs() over s[0..len): tokens decoded into dst, which may
 * be s itself (a token never gets longer than its source, so the write
 * position never passes the read position). A NUL ends the line, as in C.
 * Returns 0, -1 on unbalanced quotes, -2 out of memory.
 */
static int split_args(const char *s, size_t len, char *dst, struct resp_arg **args,
                      size_t *cap, int *argc)
{
    const char *nul = memchr(s, '\0', len);
    size_t r = 0, w = 0;
    int n = 0;

    if (nul)
        len = (size_t)(nul - s);
    for (;;) {
        while (r < len && is_blank(s[r]))
            r++;
        if (r == len)
            break;
        size_t start = w;
        int inq = 0, insq = 0, done = 0;
        while (!done) {
            char c = r < len ? s[r] : '\0';
            char c1 = r + 1 < len ? s[r + 1] : '\0';
            if (inq) {
                if (c == '\\' && c1 == 'x' && r + 3 < len && hex_val(s[r + 2]) >= 0 &&
                    hex_val(s[r + 3]) >= 0) {
                    dst[w++] = (char)(hex_val(s[r + 2]) * 16 + hex_val(s[r + 3]));
                    r += 3;
                } else if (c == '\\' && c1) {
                    r++;
                    switch (c1) {
                    case 'n': dst[w++] = '\n'; break;
                    case 'r': dst[w++] = '\r'; break;
                    case 't': dst[w++] = '\t'; break;
                    case 'b': dst[w++] = '\b'; break;
                    case 'a': dst[w++] = '\a'; break;
                    default: dst[w++] = c1; break;
                    }
                } else if (c == '"') {
                    /* a closing quote must be followed by a space or the end */
                    if (c1 && !is_blank(c1))
                        return -1;
                    done = 1;
                } else if (!c) {
                    return -1;
                } else {
                    dst[w++] = c;
                }
            } else if (insq) {
                if (c == '\\' && c1 == '\'') {
                    r++;
                    dst[w++] = '\'';
                } else if (c == '\'') {
                    if (c1 && !is_blank(c1))
                        return -1;
                    done = 1;
                } else if (!c) {
                    return -1;
                } else {
                    dst[w++] = c;
                }
            } else {
                switch (c) {
                case ' ': case '\n': case '\r': case '\t': case '\0':
                    done = 1;
                    break;
                case '"': inq = 1; break;
                case '\'': insq = 1; break;
                default: dst[w++] = c; break;
                }
            }
            if (r < len)
                r++;
        }
        if (args_reserve(args, cap, (size_t)n + 1) < 0)
            return -2;
        (*args)[n].off = (uint32_t)start;
        (*args)[n].len = (uint32_t)(w - start);
        n++;
    }
    *argc = n;
    return 0;
}

static size_t digits_ull(unsigned long long v)
{
    size_t d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

/* Write argc tokens of src (placed by split_args) as a multibulk command into
 * *out, moving args[] to point into it. */
static int encode_multibulk(const char *src, struct resp_arg *args, int argc,
                            char **out, size_t *cap, size_t *out_len)
{
    size_t need = 1 + digits_ull((unsigned long long)argc) + 2;
    for (int i = 0; i < argc; i++)
        need += 1 + digits_ull(args[i].len) + 2 + args[i].len + 2;
    if (buf_reserve(out, cap, need) < 0)
        return -2;
    char *o = *out;
    size_t w = 0;
    o[w++] = '*';
    w += ull_to_str(o + w, (unsigned long long)argc);
    o[w++] = '\r';
    o[w++] = '\n';
    for (int i = 0; i < argc; i++) {
        o[w++] = '$';
        w += ull_to_str(o + w, args[i].len);
        o[w++] = '\r';
        o[w++] = '\n';
        memcpy(o + w, src + args[i].off, args[i].len);
        args[i].off = (uint32_t)w;
        w += args[i].len;
        o[w++] = '\r';
        o[w++] = '\n';
    }
    *out_len = w;
    return 0;
}

/* The inline line p->line is complete (without its LF). */
static void inline_done(struct resp_parser *p)
{
    size_t len = p->line_len;
    if (len && p->line[len - 1] == '\r')
        len--;
    int argc = 0;
    int rc = split_args(p->line, len, p->line, &p->args, &p->args_cap, &argc);
    if (rc == 0)
        rc = encode_multibulk(p->line, p->args, argc, &p->inline_mb, &p->inline_mb_cap,
                              &p->inline_mb_len);
    if (rc == -1) {
        fail(p, "Protocol error: unbalanced quotes in request");
        return;
    }
    if (rc < 0) {
        fail(p, "Protocol error: out of memory");
        return;
    }
    p->argc = argc;
    p->is_inline = 1;
    p->empty_inline = argc == 0;
    finish(p);
}

static size_t inline_feed(struct resp_parser *p, const char *b, size_t n)
{
    const char *lf = memchr(b, '\n', n);
    size_t seg = lf ? (size_t)(lf - b) : n;

    if (p->line_len + seg > RESP_INLINE_MAX) {
        size_t upto = RESP_INLINE_MAX - p->line_len + 1;
        p->pos += upto;
        fail(p, "Protocol error: too big inline request");
        return upto;
    }
    if (buf_reserve(&p->line, &p->line_cap, p->line_len + seg + 1) < 0) {
        fail(p, "Protocol error: out of memory");
        return 0;
    }
    memcpy(p->line + p->line_len, b, seg);
    p->line_len += seg;
    if (!lf) {
        p->pos += n;
        return n;
    }
    p->pos += seg + 1;
    inline_done(p);
    return seg + 1;
}

/* ---- feed ---- */

size_t resp_parser_feed(struct resp_parser *p, const char *buf, size_t len,
                        enum resp_parse_status *status)
{
    if (p->state == ST_ERROR || p->state == ST_DONE) {
        *status = p->state == ST_ERROR ? RESP_PARSE_ERROR : RESP_PARSE_DONE;
        return 0;
    }
    /* Look at no more than one byte past the command limit: either the
     * command ends before it or that byte is the violation. */
    size_t limit = parser_limit(p);
    size_t n = len;
    if (n > limit - p->pos + 1)
        n = limit - p->pos + 1;

    size_t used = 0;
    if (n > 0 && p->state == ST_START) {
        if (buf[0] == '*') {
            used = mb_fast(p, buf, n);
            if (used) {
                *status = RESP_PARSE_DONE;
                return used;
            }
            p->state = ST_COUNT;
        } else {
            p->state = ST_INLINE;
        }
    }
    if (p->state == ST_INLINE) {
        if (n > 0)
            used = inline_feed(p, buf, n);
    } else if (p->state != ST_START) {
        used = mb_feed(p, buf, n);
    }

    if (p->state != ST_ERROR && p->pos > limit)
        fail(p, RESP_ERR_LIMIT);
    *status = p->state == ST_ERROR ? RESP_PARSE_ERROR
            : p->state == ST_DONE  ? RESP_PARSE_DONE
                                   : RESP_PARSE_MORE;
    return used;
}

int resp_inline_to_multibulk(const char *line, size_t len, char **out,
                             size_t *out_len, struct resp_arg **args, int *argc)
{
    char *tmp = malloc(len ? len : 1);
    struct resp_arg *a = NULL;
    size_t acap = 0, ocap = 0;
    char *o = NULL;
    int n = 0;

    if (!tmp)
        return -2;
    int rc = split_args(line, len, tmp, &a, &acap, &n);
    if (rc == 0)
        rc = encode_multibulk(tmp, a, n, &o, &ocap, out_len);
    free(tmp);
    if (rc < 0) {
        free(a);
        free(o);
        return rc;
    }
    *out = o;
    *args = a;
    *argc = n;
    return 0;
}

/* ---- reply writers ---- */

/* prefix, s[0..len), CRLF in one add when it is small */
static void add_line(struct evbuffer *b, char prefix, const char *s, size_t len, int sanitize)
{
    char small[256];
    char *o = len + 3 <= sizeof small ? small : malloc(len + 3);
    if (!o) {
        return;
    }
    o[0] = prefix;
    memcpy(o + 1, s, len);
    if (sanitize) {
        for (size_t i = 1; i <= len; i++)
            if (o[i] == '\r' || o[i] == '\n')
                o[i] = ' ';
    }
    o[len + 1] = '\r';
    o[len + 2] = '\n';
    evbuffer_add(b, o, len + 3);
    if (o != small)
        free(o);
}

void resp_add_simple(struct evbuffer *b, const char *s)
{
    add_line(b, '+', s, strlen(s), 1);
}

void resp_add_error(struct evbuffer *b, const char *msg)
{
    add_line(b, '-', msg, strlen(msg), 1);
}

void resp_add_errorf(struct evbuffer *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        add_line(b, '-', small, (size_t)n, 1);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big)
        return;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    add_line(b, '-', big, (size_t)n, 1);
    free(big);
}

/* prefix, a number, CRLF */
static void add_num(struct evbuffer *b, char prefix, long long v)
{
    char o[24];
    o[0] = prefix;
    size_t n = 1 + ll_to_str(o + 1, v);
    o[n++] = '\r';
    o[n++] = '\n';
    evbuffer_add(b, o, n);
}

void resp_add_integer(struct evbuffer *b, long long v)
{
    add_num(b, ':', v);
}

void resp_add_bulk(struct evbuffer *b, const char *p, size_t len)
{
    char o[256];
    o[0] = '$';
    size_t n = 1 + ull_to_str(o + 1, len);
    o[n++] = '\r';
    o[n++] = '\n';
    if (n + len + 2 <= sizeof o) {
        if (len)                /* p may be NULL for an empty bulk */
            memcpy(o + n, p, len);
        n += len;
        o[n++] = '\r';
        o[n++] = '\n';
        evbuffer_add(b, o, n);
        return;
    }
    evbuffer_expand(b, n + len + 2);
    evbuffer_add(b, o, n);
    evbuffer_add(b, p, len);
    evbuffer_add(b, "\r\n", 2);
}

void resp_add_bulk_str(struct evbuffer *b, const char *s)
{
    resp_add_bulk(b, s, strlen(s));
}

void resp_add_array(struct evbuffer *b, long long n)
{
    add_num(b, '*', n);
}

void resp_add_null(struct evbuffer *b, enum resp_proto p)
{
    if (p == RESP3)
        evbuffer_add(b, "_\r\n", 3);
    else
        evbuffer_add(b, "$-1\r\n", 5);
}

void resp_add_null_array(struct evbuffer *b, enum resp_proto p)
{
    if (p == RESP3)
        evbuffer_add(b, "_\r\n", 3);
    else
        evbuffer_add(b, "*-1\r\n", 5);
}

void resp_add_map(struct evbuffer *b, enum resp_proto p, long long n)
{
    if (p == RESP3)
        add_num(b, '%', n);
    else
        add_num(b, '*', 2 * n);
}

void resp_add_set(struct evbuffer *b, enum resp_proto p, long long n)
{
    add_num(b, p == RESP3 ? '~' : '*', n);
}

void resp_add_push(struct evbuffer *b, enum resp_proto p, long long n)
{
    add_num(b, p == RESP3 ? '>' : '*', n);
}

void resp_add_bool(struct evbuffer *b, enum resp_proto p, int v)
{
    if (p == RESP3)
        evbuffer_add(b, v ? "#t\r\n" : "#f\r\n", 4);
    else
        evbuffer_add(b, v ? ":1\r\n" : ":0\r\n", 4);
}

void resp_add_double(struct evbuffer *b, enum resp_proto p, double d)
{
    char o[64];
    int n = isinf(d) ? snprintf(o, sizeof o, "%s", d > 0 ? "inf" : "-inf")
                     : snprintf(o, sizeof o, "%.17g", d);
    if (n < 0)
        return;
    if (p == RESP3)
        add_line(b, ',', o, (size_t)n, 0);
    else
        resp_add_bulk(b, o, (size_t)n);
}

void resp_add_verbatim(struct evbuffer *b, enum resp_proto p, const char *s, size_t len)
{
    if (p != RESP3) {
        resp_add_bulk(b, s, len);
        return;
    }
    char o[32];
    o[0] = '=';
    size_t n = 1 + ull_to_str(o + 1, len + 4);
    memcpy(o + n, "\r\ntxt:", 6);
    evbuffer_add(b, o, n + 6);
    evbuffer_add(b, s, len);
    evbuffer_add(b, "\r\n", 2);
}

void resp_add_command(struct evbuffer *b, int argc, const char **argv,
                      const size_t *lens)
{
    size_t total = 1 + 20 + 2;
    for (int i = 0; i < argc; i++)
        total += 1 + 20 + 2 + lens[i] + 2;
    evbuffer_expand(b, total);
    add_num(b, '*', argc);
    for (int i = 0; i < argc; i++)
        resp_add_bulk(b, argv[i], lens[i]);
}

/* Digits of n in decimal. */
static size_t decimal_len(size_t n)
{
    size_t d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

size_t resp_put_decimal(char *out, size_t n)
{
    size_t d = decimal_len(n);
    for (size_t i = d; i > 0; i--) {
        out[i - 1] = (char)('0' + n % 10);
        n /= 10;
    }
    return d;
}

/* Write the header "<tag><n>\r\n" at p; returns what follows it. */
static char *put_header(char *p, char tag, size_t n)
{
    *p++ = tag;
    p += resp_put_decimal(p, n);
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

size_t resp_command_len(int argc, const size_t *lens)
{
    size_t len = decimal_len((size_t)argc) + 3;
    for (int i = 0; i < argc; i++)
        len += decimal_len(lens[i]) + 3 + lens[i] + 2;
    return len;
}

void resp_command_write(char *out, struct resp_arg *args, int argc, const char *const *argv,
                        const size_t *lens)
{
    char *p = put_header(out, '*', (size_t)argc);
    for (int i = 0; i < argc; i++) {
        p = put_header(p, '$', lens[i]);
        args[i].off = (uint32_t)(p - out);
        args[i].len = (uint32_t)lens[i];
        memcpy(p, argv[i], lens[i]);
        p += lens[i];
        *p++ = '\r';
        *p++ = '\n';
    }
}
