/*
 * slowlog: the proxy's own slow log, Redis's SLOWLOG for the requests the
 * proxy serves.
 *
 * A request whose reply took longer than slowlog-log-slower-than
 * microseconds, from the read that brought it to the moment its reply was
 * complete (node time, retries and redirects included), is kept as Redis
 * keeps a slow command: an id, the unix time, the duration, the command's
 * arguments as its client sent them (at most 32, each cut at 128 bytes, as
 * Redis cuts them; AUTH's and HELLO AUTH's shown as "(redacted)"), the
 * client's address and name. The newest slowlog-max-len entries are kept.
 *
 * One log serves every worker under a mutex: a worker takes it only for a
 * request that was slow (the check before it is one comparison), and
 * SLOWLOG reads it. Each entry is kept as the RESP Redis writes for it (the
 * same bytes in RESP2 and RESP3), so a reply copies it.
 */
#ifndef TAGPROXY_SLOWLOG_H
#define TAGPROXY_SLOWLOG_H

#include <stddef.h>
#include <stdint.h>

struct request;

/* r is answered, duration_us after it was read: kept when the worker's
 * config says it is slow, with its client's address and name (NULL:
 * none). r's command is still there. */
void slowlog_note(const struct request *r, uint64_t duration_us, const char *addr,
                  const char *name);

/* The newest entries, newest first: n of them, entry i's unix time in
 * time[i] and its RESP in bytes + off[i], len[i] bytes long. One block to
 * free with slowlog_copy_free. */
struct slowlog_copy {
    long n;
    int64_t *time;
    size_t *off, *len;
    char *bytes;
};

/* The newest `count` entries (-1: all) into *out: 0, or -1 out of memory. */
int slowlog_copy_take(long count, struct slowlog_copy *out);
void slowlog_copy_free(struct slowlog_copy *c);

long slowlog_len(void);
void slowlog_reset(void);

#endif
