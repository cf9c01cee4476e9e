/*
 * slowlog: the proxy's own slow log. See slowlog.h.
 */
#include "proxy/core/slowlog.h"

#include <event2/buffer.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include "proxy/config/config.h"
#include "proxy/core/request.h"
#include "proxy/core/worker.h"
#include "lib/proto/command.h"
#include "lib/proto/resp.h"

/* As Redis 7.0 (slowlog.h): arguments kept, and bytes kept of each. */
#define SLOWLOG_ENTRY_MAX_ARGC 32
#define SLOWLOG_ENTRY_MAX_STRING 128

struct slowlog_entry {
    TAILQ_ENTRY(slowlog_entry) link;
    int64_t time;
    size_t len;
    char bytes[];                   /* its RESP */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static TAILQ_HEAD(slowlog_entries, slowlog_entry) entries =    /* newest first */
    TAILQ_HEAD_INITIALIZER(entries);
static long nentries;
static long long next_id;

/* Argument i of r as Redis keeps it in an entry. */
static void add_arg(struct evbuffer *b, const struct request *r, int i)
{
    static const char hidden[] = "(redacted)";
    size_t len;
    const char *a = request_arg(r, i, &len);
    if (request_arg_redacted(r, i)) {
        resp_add_bulk(b, hidden, sizeof hidden - 1);
    } else if (len > SLOWLOG_ENTRY_MAX_STRING) {
        char more[48];
        int n = snprintf(more, sizeof more, "... (%zu more bytes)", len - SLOWLOG_ENTRY_MAX_STRING);
        evbuffer_add_printf(b, "$%zu\r\n", SLOWLOG_ENTRY_MAX_STRING + (size_t)n);
        evbuffer_add(b, a, SLOWLOG_ENTRY_MAX_STRING);
        evbuffer_add(b, more, (size_t)n);
        evbuffer_add(b, "\r\n", 2);
    } else {
        resp_add_bulk(b, a, len);
    }
}

/* r's entry, as Redis 7.0 writes one: id, time, duration, arguments,
 * client address, client name. */
static struct slowlog_entry *entry_new(const struct request *r, int64_t now, long long id,
                                       uint64_t duration_us, const char *addr, const char *name)
{
    struct evbuffer *b = evbuffer_new();
    struct slowlog_entry *e = NULL;
    if (!b)
        return NULL;
    int argc = r->argc > SLOWLOG_ENTRY_MAX_ARGC ? SLOWLOG_ENTRY_MAX_ARGC : r->argc;
    resp_add_array(b, 6);
    resp_add_integer(b, id);
    resp_add_integer(b, now);
    resp_add_integer(b, (long long)duration_us);
    resp_add_array(b, argc);
    for (int i = 0; i < argc; i++) {
        if (argc != r->argc && i == argc - 1) {
            char more[48];
            snprintf(more, sizeof more, "... (%d more arguments)", r->argc - argc + 1);
            resp_add_bulk_str(b, more);
        } else {
            add_arg(b, r, i);
        }
    }
    resp_add_bulk_str(b, addr);
    resp_add_bulk_str(b, name ? name : "");
    size_t len = evbuffer_get_length(b);
    e = malloc(sizeof *e + len);
    if (e) {
        e->time = now;
        e->len = len;
        evbuffer_remove(b, e->bytes, len);
    }
    evbuffer_free(b);
    return e;
}

/* Redis leaves out what is not a command's own work: EXEC (its commands
 * are), and a blocking command's wait. */
static int loggable(const struct request *r)
{
    return r->cmd && r->argc > 0 &&
           !(r->cmd->flags & (CMD_SKIP_SLOWLOG | CMD_BLOCKING)) &&
           !(r->cmd->proxy_facts & CMDP_WAITS);
}

void slowlog_note(const struct request *r, uint64_t duration_us, const char *addr,
                  const char *name)
{
    const struct config *cfg = r->worker->cfg;
    if (cfg->slowlog_log_slower_than < 0 || duration_us < (uint64_t)cfg->slowlog_log_slower_than ||
        !loggable(r))
        return;
    long long max_len = cfg->slowlog_max_len;
    pthread_mutex_lock(&lock);
    struct slowlog_entry *e = entry_new(r, (int64_t)time(NULL), next_id++, duration_us, addr, name);
    if (e) {
        TAILQ_INSERT_HEAD(&entries, e, link);
        nentries++;
    }
    while (nentries > max_len) {
        struct slowlog_entry *old = TAILQ_LAST(&entries, slowlog_entries);
        TAILQ_REMOVE(&entries, old, link);
        nentries--;
        free(old);
    }
    pthread_mutex_unlock(&lock);
}

int slowlog_copy_take(long count, struct slowlog_copy *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&lock);
    long n = count < 0 || count > nentries ? nentries : count;
    size_t bytes = 0, i = 0;
    struct slowlog_entry *e;
    TAILQ_FOREACH(e, &entries, link) {
        if ((long)i++ == n)
            break;
        bytes += e->len;
    }
    size_t slots = n > 0 ? (size_t)n : 1;
    char *block = malloc(slots * (sizeof *out->time + 2 * sizeof *out->off) + bytes + 1);
    if (!block) {
        pthread_mutex_unlock(&lock);
        return -1;
    }
    out->time = (int64_t *)(void *)block;
    out->off = (size_t *)(void *)(out->time + slots);
    out->len = out->off + slots;
    out->bytes = (char *)(out->len + slots);
    size_t at = 0;
    i = 0;
    TAILQ_FOREACH(e, &entries, link) {
        if ((long)i == n)
            break;
        out->time[i] = e->time;
        out->off[i] = at;
        out->len[i] = e->len;
        memcpy(out->bytes + at, e->bytes, e->len);
        at += e->len;
        i++;
    }
    out->n = n;
    pthread_mutex_unlock(&lock);
    return 0;
}

void slowlog_copy_free(struct slowlog_copy *c)
{
    free(c->time);          /* the block's start */
    memset(c, 0, sizeof *c);
}

long slowlog_len(void)
{
    pthread_mutex_lock(&lock);
    long n = nentries;
    pthread_mutex_unlock(&lock);
    return n;
}

void slowlog_reset(void)
{
    pthread_mutex_lock(&lock);
    struct slowlog_entry *e;
    while ((e = TAILQ_FIRST(&entries)) != NULL) {
        TAILQ_REMOVE(&entries, e, link);
        free(e);
    }
    nentries = 0;
    pthread_mutex_unlock(&lock);
}
