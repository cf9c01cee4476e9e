/*
 * resp: the client side of the Redis protocol: the request parser, and the
 * reply writers in RESP2 and RESP3.
 *
 * The request parser cuts a client's byte stream into commands. It has no I/O
 * in it: the caller feeds it whatever bytes it has, in any fragmentation, and
 * the parser keeps its state between calls (hiredis read.c style), so a
 * command split at every byte boundary parses exactly as the whole.
 *
 *     bytes ──► resp_parser_feed() ──► RESP_PARSE_DONE: p->argc, p->args[]
 *                                       (offsets into the command's bytes)
 *
 * A multibulk command is forwarded as the very bytes the client sent, so the
 * parser only records where each argument starts inside those bytes. An inline
 * command ("GET foo\r\n", with redis-cli's quoting rules) is re-encoded as
 * multibulk into p->inline_mb, and the offsets point into that.
 *
 * Every size a client announces is checked before it is trusted: multibulk
 * count, bulk length (proto_max_bulk_len), inline line length, and the total
 * bytes of one command (query_buffer_limit). A violation is sticky: p->err
 * holds the Redis-style message ("Protocol error: invalid bulk length") and
 * every later feed returns RESP_PARSE_ERROR.
 *
 * Errors are redis-server 7.0's, as it answers the same byte stream fed one
 * byte at a time (so the outcome never depends on fragmentation):
 *   "Protocol error: invalid multibulk length"    count not an integer, > INT_MAX
 *   "Protocol error: unauthenticated multibulk length"   count > 10 before AUTH
 *   "Protocol error: too big mbulk count string"  no CR in 64 KiB of a '*' line
 *   "Protocol error: expected '$', got 'x'"       (CR, LF and NUL shown as ' ')
 *   "Protocol error: invalid bulk length"         not an integer, < 0, > max_bulk_len
 *   "Protocol error: unauthenticated bulk length" length > 16384 before AUTH
 *   "Protocol error: too big bulk count string"   no CR in 64 KiB of a '$' line
 *   "Protocol error: too big inline request"      no LF in 64 KiB of an inline line
 *   "Protocol error: unbalanced quotes in request"
 * and three that Redis does not check (it skips two bytes whatever they are,
 * and closes a client over its query buffer limit without a reply):
 *   RESP_ERR_CRLF   a header line's CR not followed by LF
 *   RESP_ERR_BULK_CRLF  a bulk payload not followed by CRLF
 *   RESP_ERR_LIMIT  the command would exceed max_command_len
 * Where Redis would wait forever (a NUL byte stops its strchr() search for
 * the line end), the NUL is taken as a character: an invalid length in a
 * header, the end of the arguments in an inline line (sdssplitargs stops there).
 *
 * An empty command is not an error: "*0\r\n", "*-1\r\n" (any count <= 0) and
 * a blank inline line are skipped by Redis. They end in RESP_PARSE_DONE with
 * argc == 0 (empty_inline is also set for the inline case); the caller drops
 * their cmd_len bytes and sends nothing.
 *
 * The writers append Redis-style replies to an evbuffer. Where RESP2 and
 * RESP3 encode a type differently (nulls, maps, sets, pushes, doubles,
 * booleans, verbatim strings), the writer takes the client's protocol
 * (RESP2 or RESP3) and writes what redis-server 7.0 writes in it, as its
 * addReplyMapLen() & co do: a caller says which Redis type it answers, never
 * which bytes.
 */
#ifndef TAGPROXY_RESP_H
#define TAGPROXY_RESP_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;

/* Where one argument lies inside the bytes of its command. */
struct resp_arg {
    uint32_t off;
    uint32_t len;
};

enum resp_parse_status {
    RESP_PARSE_MORE = 0,   /* all bytes consumed, command not complete yet */
    RESP_PARSE_DONE,       /* a whole command ends at the consumed boundary */
    RESP_PARSE_ERROR       /* protocol violation; p->err says which */
};

/* Redis's own caps (server.h). */
#define RESP_INLINE_MAX      (64 * 1024)          /* PROTO_INLINE_MAX_SIZE */
#define RESP_MULTIBULK_MAX   2147483647LL         /* INT_MAX: Redis 7.0's cap (6.x had 1M) */
#define RESP_UNAUTH_MULTIBULK_MAX 10              /* before AUTH, as Redis 7 */
#define RESP_UNAUTH_BULK_MAX 16384

#define RESP_ERR_CRLF      "Protocol error: expected LF after CR"
#define RESP_ERR_BULK_CRLF "Protocol error: expected CRLF after bulk data"
#define RESP_ERR_LIMIT     "Protocol error: command exceeds client-query-buffer-limit"

struct resp_parser {
    /* limits, set by resp_parser_init() and changeable between commands */
    long long max_bulk_len;          /* proto-max-bulk-len */
    size_t    max_command_len;       /* client-query-buffer-limit; 0: none.
                                        Offsets are 32-bit, so at most 4 GiB - 2 */
    int       unauthenticated;       /* apply Redis's pre-AUTH caps */

    /* result of the last RESP_PARSE_DONE (valid until resp_parser_next()) */
    int              argc;
    struct resp_arg *args;           /* argc entries, owned by the parser */
    size_t           cmd_len;        /* bytes of input the command took */
    int              is_inline;      /* command came inline: use inline_mb */
    char            *inline_mb;      /* inline command re-encoded as multibulk */
    size_t           inline_mb_len;
    int              empty_inline;   /* a blank inline line: no command, skip */

    const char      *err;            /* sticky error text, NULL if none */

    /* private parse state */
    int       state;
    long long multibulk_left;
    long long bulk_left;
    size_t    pos;                   /* bytes of the current command taken so
                                        far; callers may read it (where the
                                        next feed resumes in their buffer) */
    size_t    args_cap;
    char     *line;                  /* inline line (decoded in place) */
    size_t    line_len, line_cap;
    size_t    inline_mb_cap;
    size_t    hdr_len;               /* bytes of a '*'/'$' line before its CR */
    int       hdr_cr;                /* the CR was seen; next byte ends the line */
    char      hdr_first;             /* its first byte */
    char      hdr_num[22];           /* up to 21 bytes after the first one */
    int       hdr_num_len;           /* 22: longer than any integer */
    char      errbuf[48];            /* for "expected '$', got 'x'" */
};

void resp_parser_init(struct resp_parser *p, long long max_bulk_len,
                      size_t max_command_len);
void resp_parser_free(struct resp_parser *p);

/*
 * Feed len bytes. Returns how many bytes were consumed; *status says what
 * happened. The parser stops right after a complete command (status DONE) so
 * the caller can take it; the caller then calls resp_parser_next() and feeds
 * the rest. For a multibulk command the command's bytes are the cmd_len bytes
 * of input that ended at this call's consumed boundary; offsets in args[] are
 * relative to the first of them.
 */
size_t resp_parser_feed(struct resp_parser *p, const char *buf, size_t len,
                        enum resp_parse_status *status);

/* Forget the completed command and get ready for the next one. Buffers
 * grown by an unusually large command are released here. */
void resp_parser_next(struct resp_parser *p);

/*
 * Split an inline line as redis-cli/sdssplitargs does ("a b", 'c', \x41 ...)
 * and write it as a multibulk command. Returns 0, or -1 on unbalanced quotes.
 * *out is malloc'd; args (malloc'd, *argc entries) index into it. A line
 * with no argument gives argc 0 and "*0\r\n". Returns -2 if out of memory.
 */
int resp_inline_to_multibulk(const char *line, size_t len, char **out,
                             size_t *out_len, struct resp_arg **args, int *argc);

/* Reply writers. */
void resp_add_simple(struct evbuffer *b, const char *s);           /* +s\r\n */
void resp_add_error(struct evbuffer *b, const char *msg);          /* -msg\r\n */
/* The error writers turn CR and LF inside the message into spaces, as
 * Redis does, so a reply can never break the framing. */
void resp_add_errorf(struct evbuffer *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void resp_add_integer(struct evbuffer *b, long long v);
void resp_add_bulk(struct evbuffer *b, const char *p, size_t len);
void resp_add_bulk_str(struct evbuffer *b, const char *s);
void resp_add_array(struct evbuffer *b, long long n);              /* *n header */

/* The client's protocol, as HELLO sets it. */
enum resp_proto { RESP2 = 2, RESP3 = 3 };

/*                                                   RESP2          RESP3 */
void resp_add_null(struct evbuffer *b, enum resp_proto p);        /* $-1     _ */
void resp_add_null_array(struct evbuffer *b, enum resp_proto p);  /* *-1     _ */
void resp_add_map(struct evbuffer *b, enum resp_proto p, long long n);  /* *2n  %n */
void resp_add_set(struct evbuffer *b, enum resp_proto p, long long n);  /* *n   ~n */
void resp_add_push(struct evbuffer *b, enum resp_proto p, long long n); /* *n   >n */
void resp_add_bool(struct evbuffer *b, enum resp_proto p, int v);       /* :1   #t */
/* %.17g (inf, -inf), as a bulk in RESP2 and a ',' double in RESP3. */
void resp_add_double(struct evbuffer *b, enum resp_proto p, double d);
/* Text (INFO, CLIENT INFO): a bulk in RESP2, "=<len>\r\ntxt:..." in RESP3. */
void resp_add_verbatim(struct evbuffer *b, enum resp_proto p, const char *s, size_t len);
void resp_add_command(struct evbuffer *b, int argc, const char **argv,
                      const size_t *lens);                         /* multibulk */

/*
 * A multibulk command written into memory of the caller's: its length,
 * then the bytes, with each argument's offset and length in args (as the
 * parser gives them). No printf: requests are built on the hot path
 * (every rewritten key, every indexed write).
 */
size_t resp_command_len(int argc, const size_t *lens);
void resp_command_write(char *out, struct resp_arg *args, int argc, const char *const *argv,
                        const size_t *lens);

/* Write n in decimal at out (room for 20 bytes, no NUL); returns its
 * length. For counts in built commands. */
size_t resp_put_decimal(char *out, size_t n);

#endif
