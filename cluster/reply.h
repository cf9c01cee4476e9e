/*
 * reply: framing of the replies a cluster node sends.
 *
 * A node's input stream is a sequence of RESP2 replies of any shape: arrays
 * of millions of elements, nesting of any depth (a Lua table can nest deeper
 * than hiredis 0.14's limit of 7), bulks up to proto-max-bulk-len. The proxy
 * forwards replies as bytes, so all it needs to know is where one ends. The
 * scanner keeps no stack: it counts the elements still owed ("pending"),
 * starting at 1; every element read takes one, an array header of n adds n.
 * The reply is complete when nothing is owed. State survives between calls,
 * so any fragmentation works, and memory is O(1) whatever the reply.
 *
 * It also reports the reply's first byte and, for an error, its first line,
 * so the router can recognise MOVED, ASK, TRYAGAIN and CLUSTERDOWN.
 */
#ifndef TAGPROXY_REPLY_H
#define TAGPROXY_REPLY_H

#include <stddef.h>

enum reply_scan_status {
    REPLY_SCAN_MORE = 0,    /* consumed everything, reply not complete */
    REPLY_SCAN_DONE,        /* a reply ends at the consumed boundary */
    REPLY_SCAN_ERROR        /* the node broke the protocol */
};

#define REPLY_ERRLINE_MAX 256

struct reply_scanner {
    char   type;            /* first byte of the current reply: + - : $ * */
    size_t len;             /* bytes of the current reply so far (total when DONE) */
    char   errline[REPLY_ERRLINE_MAX]; /* for type '-': the line, NUL-terminated, cut to fit */
    long long bulk_max;     /* the longest bulk header of the current reply so far */

    /* private */
    int       state;
    long long pending;      /* elements still owed */
    long long bulk_left;    /* bytes of bulk payload still to skip */
    long long num;          /* partial header line: its value so far */
    int       num_len;      /* digits of it seen */
    int       num_neg;      /* a '-' was seen */
    char      hdr;          /* '$' or '*': whose header it is */
    int       err_len;
};

/*
 * What the scanner accepts, and what is REPLY_SCAN_ERROR: a type byte other
 * than + - : $ *; a '$' or '*' length that is empty, not digits, more than
 * 18 digits, or negative other than -1; a CR not followed by LF; a bulk
 * payload not followed by CRLF; elements owed beyond LLONG_MAX. The content
 * of + - : lines is not checked. RESP3 types are errors (the proxy speaks
 * RESP2 to nodes).
 */
void reply_scanner_init(struct reply_scanner *s);

/* Feed bytes; returns how many were consumed and stops right after a
 * complete reply. After DONE, call reply_scanner_init() for the next one. */
size_t reply_scan(struct reply_scanner *s, const char *buf, size_t len,
                  enum reply_scan_status *status);

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
 * addr_size-1 bytes); slot and addr are left alone otherwise. A redirect is
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

#endif
