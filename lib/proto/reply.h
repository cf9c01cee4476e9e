/*
 * reply: framing of the replies a cluster node sends.
 *
 * A node's input stream is a sequence of RESP2 or RESP3 replies of any
 * shape: arrays of millions of elements, nesting of any depth (a Lua table
 * can nest deeper than hiredis 0.14's limit of 7), bulks up to
 * proto-max-bulk-len. The proxy forwards replies as bytes, so all it needs
 * to know is where one ends. The scanner keeps no stack: it counts the
 * elements still owed ("pending"), starting at 1; every element read takes
 * one, an aggregate header of n adds n (a map 2n). An attribute (|n) is not
 * a value: it annotates the value after it, so it adds its 2n elements and
 * takes none. The reply is complete when nothing is owed. State survives
 * between calls, so any fragmentation works, and memory is O(1) whatever
 * the reply.
 *
 * Types framed, as redis-server 7.0 writes them:
 *   lines      + - : , (         up to CRLF, content not checked
 *   fixed      _  #t #f          exactly these bytes, then CRLF
 *   blobs      $ = !  <len>      len bytes, then CRLF ($-1 is a null)
 *   aggregates * ~ >  <n>        n elements (*-1 is a null)
 *              %      <n>        n key-value pairs: 2n elements
 *   attribute  |      <n>        2n elements, then the value it annotates
 *
 * It also reports what the router needs of the reply proper (the value
 * after any top-level attributes): its type, so an error or a push is seen
 * whatever precedes it, and for an error its first line, so the router can
 * recognise MOVED, ASK, TRYAGAIN and CLUSTERDOWN.
 */
#ifndef TAGPROXY_REPLY_H
#define TAGPROXY_REPLY_H

#include <stddef.h>

struct evbuffer;

enum reply_scan_status {
    REPLY_SCAN_MORE = 0,    /* consumed everything, reply not complete */
    REPLY_SCAN_DONE,        /* a reply ends at the consumed boundary */
    REPLY_SCAN_ERROR        /* the node broke the protocol */
};

#define REPLY_ERRLINE_MAX 256

struct reply_scanner {
    /*
     * The type byte of the reply proper, the value after any top-level
     * attributes: + - : $ * _ # , ( = ~ > %. '-' for every error, a simple
     * one (-) or a blob one (!): bytes[body] tells them apart. '>' for a
     * push, which is never the reply to a request. While a top-level
     * attribute is being read (MORE), '|'; 0 before the first byte.
     */
    char   type;
    size_t len;             /* bytes of the current reply so far (total when DONE) */
    size_t body;            /* offset of the reply proper in it: past top-level attributes */
    /* for type '-': the error's text (a blob error's payload),
     * NUL-terminated, cut to fit, each CR or LF in it a space: one line */
    char   errline[REPLY_ERRLINE_MAX];
    long long bulk_max;     /* the longest blob ($ = !) header of the current reply so far */

    /* private */
    int       state;
    long long pending;      /* elements still owed */
    long long bulk_left;    /* bytes of blob payload still to skip */
    long long num;          /* partial header line: its value so far */
    int       num_len;      /* digits of it seen */
    int       num_neg;      /* a '-' was seen */
    char      hdr;          /* whose header it is: $ = ! * ~ > % | */
    int       err_len;
    int       top;          /* the next type byte is at top level */
    int       top_attr;     /* in a top-level attribute's elements */
    int       capture;      /* the element being read is the reply's error */
};

/*
 * What the scanner accepts, and what is REPLY_SCAN_ERROR: a type byte other
 * than those above, including RESP3's streamed forms ($? *? ; .), which
 * redis-server never sends; a length or count that is empty, not digits,
 * more than 18 digits, or negative other than $-1 and *-1 (RESP2's nulls:
 * redis-server writes no negative count for = ! ~ > % |); a verbatim
 * string (=) shorter than its 4-byte format prefix ("txt:"), whose content
 * is not checked; a boolean other than #t or #f; a null with content; a CR
 * not followed by LF; a blob payload not followed by CRLF; elements owed
 * beyond LLONG_MAX. The content of + - : , ( lines is not checked.
 */
void reply_scanner_init(struct reply_scanner *s);

/* Feed bytes; returns how many were consumed and stops right after a
 * complete reply. After DONE, call reply_scanner_init() for the next one. */
size_t reply_scan(struct reply_scanner *s, const char *buf, size_t len,
                  enum reply_scan_status *status);

/* A header line "<type><n>\r\n" (an aggregate's, a blob's, an integer's):
 * its type byte, its number and the line's length, CRLF included. */
struct reply_head {
    char type;
    long long n;
    size_t len;
};

/* The header line at buf[0..len): 0, or -1 when buf does not start with
 * a whole line of a type and a number. The reply parsers outside this
 * module read headers only through it. */
int reply_header(const char *buf, size_t len, struct reply_head *h);

/* The length of the one whole reply at the start of buf, 0 when buf
 * holds none (not all of it yet, or not RESP). */
size_t reply_length(const char *buf, size_t len);

/* Is reply (len bytes, one whole reply as the scanner framed it) a nil:
 * RESP2's null bulk or null array, or RESP3's null? */
int reply_is_null(const char *reply, size_t len);

/* What a cluster error reply asks of the proxy. */
enum reply_redirect {
    REPLY_PLAIN = 0,        /* not a cluster redirect or retry */
    REPLY_MOVED,            /* -MOVED slot host:port */
    REPLY_ASK,              /* -ASK slot host:port */
    REPLY_TRYAGAIN,         /* -TRYAGAIN ... (did not run) */
    REPLY_CLUSTERDOWN       /* -CLUSTERDOWN ... (did not run) */
};

/* Classify an error line (without the leading '-' and the CRLF). For
 * MOVED/ASK fills *slot and addr ("host:port", NUL-terminated, at most
 * addr_size-1 bytes); otherwise *slot is -1 and addr "" (when it has room
 * for one byte). A redirect is
 * well formed when it is exactly "MOVED <slot> <host>:<port>": slot 0-16383,
 * port 1-65535 (the last ':' splits, so "::1:6381" is IPv6), host without
 * spaces, possibly empty (Redis 7's unknown-endpoint: "same host as this
 * node"). addr is written as reply_addr_canon() gives it: "::1:6381" and
 * "[::1]:6381" both as "[::1]:6381", the topology's form. Anything else, or
 * an addr that does not fit, is REPLY_PLAIN.
 * TRYAGAIN and CLUSTERDOWN are the first word of the line. */
enum reply_redirect reply_classify(const char *line, size_t len, int *slot,
                                   char *addr, size_t addr_size);

/* Write the address a[0..len) ("host:port", "[v6]:port" or Redis's
 * unbracketed "v6:port", split at the last ':') into out in the form the
 * topology announces it: an IPv6 host in brackets ("::1:7000" and
 * "[::1]:7000" both give "[::1]:7000"). -1 when there is no ':', brackets
 * that do not enclose the whole host, or out is too small. */
int reply_addr_canon(const char *a, size_t len, char *out, size_t out_size);

/* The error code of an error line: its first word ("WRONGPASS", "ERR"),
 * copied into code (at most size-1 bytes). Only the code of a reply to AUTH
 * may be shown: the rest can quote the password ("unknown command 'AUTH',
 * with args beginning with: ..."). */
void reply_error_code(const char *line, char *code, size_t size);

/* n whole replies one after another at the start of buf[0..len): 0, or -1
 * when there are fewer; with elems, elems[i] and lens[i] say where each is. */
int reply_elements(const char *buf, size_t len, long n, const char **elems, size_t *lens);

/*
 * The elements of an array reply, one at a time, with nothing sized by its
 * count:
 *
 *   struct reply_iter it;
 *   if (reply_iter_array(&it, buf, len) < 0) ...     not an array reply
 *   while ((rc = reply_iter_next(&it, &elem, &elen)) > 0) ...
 *   rc < 0: an element is not whole
 */
struct reply_iter {
    const char *at;     /* the next element */
    size_t left_bytes;  /* from there to the end of the buffer */
    long n;             /* the array's count */
    long left;          /* elements not read yet */
};

/* Start at the array reply buf[0..len) ('*', not null): 0, or -1. */
int reply_iter_array(struct reply_iter *it, const char *buf, size_t len);

/* The same for an aggregate of type ('*', '>' a RESP3 push, '~' a set). */
int reply_iter_of(struct reply_iter *it, const char *buf, size_t len, char type);

/* The next element in *elem, *elen: 1; 0 after the last; -1 when it is not
 * a whole reply. */
int reply_iter_next(struct reply_iter *it, const char **elem, size_t *elen);

/* The elements of the array reply buf[0..len) ('*' only, at most max of
 * them; max -1: any number): their count, or -1 when buf is no such whole
 * reply. With elems, elems[i] and lens[i] say where each is in buf. */
long reply_array_elements(const char *buf, size_t len, const char **elems, size_t *lens,
                          long max);

/*
 * A whole reply as a node connection hands it over: the first len bytes of
 * in when in is not NULL (a buffer of the connection's, from which taking
 * or dropping the reply removes them), else len bytes at bytes (valid
 * during the call only).
 */
struct reply_view {
    struct evbuffer *in;
    const char *bytes;
    size_t len;
};

/* Its first need bytes (at most len), contiguous. */
const char *reply_view_head(const struct reply_view *v, size_t need);

/* Its first n bytes (n <= len) copied into buf. */
void reply_view_copy(const struct reply_view *v, char *buf, size_t n);

/* The reply appended to dst (taken out of in). */
void reply_view_take(const struct reply_view *v, struct evbuffer *dst);

/* The reply dropped (drained from in). */
void reply_view_drop(const struct reply_view *v);

/* The reply as a string into buf (size > 0; truncated), dropped from the
 * view: its first line only unless whole. */
void reply_view_text(const struct reply_view *v, char *buf, size_t size, int whole);

#endif
