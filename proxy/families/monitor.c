#include "proxy/families/monitor.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "proxy/core/client.h"
#include "proxy/core/proxy.h"
#include "proxy/core/route.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "proxy/families/txclass.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"
#include "lib/proto/resp.h"

/* Lines waiting for a worker's monitors past this are dropped, and that
 * worker's monitors closed, as Redis closes a monitor over its output limit. */
#define MONITOR_INBOX_MAX (64u * 1024 * 1024)

/* A worker's monitors and the lines other workers left for them. */
struct monitor_inbox {
    TAILQ_HEAD(, monitor) clients;  /* this thread's only */
    int count;                      /* of clients; other threads read it (atomic) */
    pthread_mutex_t lock;
    struct evbuffer *lines;         /* under lock */
    int overflow;                   /* under lock: lines were dropped */
};

static int family_id = -1;          /* the inbox's, on every worker (worker.h) */
static int client_id_of = -1;       /* a monitoring client's state (client.h) */

/* A client that monitors: its place in its worker's inbox. */
struct monitor {
    TAILQ_ENTRY(monitor) link;
    struct client *c;
};

static struct monitor_inbox *inbox(const struct worker *w)
{
    return worker_family_state(w, family_id);
}

static int inbox_init(struct worker *w, void **state)
{
    struct monitor_inbox *m = calloc(1, sizeof *m);
    (void)w;
    if (!m)
        return -1;
    TAILQ_INIT(&m->clients);
    pthread_mutex_init(&m->lock, NULL);
    m->lines = evbuffer_new();
    if (!m->lines) {
        free(m);
        return -1;
    }
    *state = m;
    return 0;
}

/* ---- monitors ---- */

/* MONITOR: +OK, then every command's line. */
static void monitor_command(struct request *r)
{
    struct client *c = r->client;
    struct worker *w = r->worker;
    if (r->detached) {          /* run by EXEC, where Redis cannot block either */
        request_fail(r, "ERR MONITOR isn't allowed for DENY BLOCKING client");
        return;
    }
    if (client_family_state(c, client_id_of)) {     /* as Redis: no reply at all */
        r->silent = 1;
        request_finish(r);
        return;
    }
    struct monitor *m = calloc(1, sizeof *m);
    if (!m) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    resp_add_simple(request_reply_buffer(r), "OK");
    request_finish(r);          /* ahead of the first line */
    m->c = c;
    client_family_set(c, client_id_of, m);
    c->replica = 1;
    TAILQ_INSERT_TAIL(&inbox(w)->clients, m, link);
    __atomic_add_fetch(&inbox(w)->count, 1, __ATOMIC_RELAXED);
    router_watching(1);
}

void monitor_stop(struct client *c)
{
    struct worker *w = c->worker;
    struct monitor *m = client_family_state(c, client_id_of);
    if (!m)
        return;
    client_family_set(c, client_id_of, NULL);
    c->replica = 0;
    TAILQ_REMOVE(&inbox(w)->clients, m, link);
    free(m);
    __atomic_sub_fetch(&inbox(w)->count, 1, __ATOMIC_RELAXED);
    router_watching(-1);
}

/* To each monitor of w but `skip` (one may close on its output limit
 * meanwhile). */
static void push_to_monitors(struct worker *w, const char *bytes, size_t len,
                             const struct client *skip)
{
    struct monitor *m, *next;
    const struct reply_view line = { NULL, bytes, len };
    for (m = TAILQ_FIRST(&inbox(w)->clients); m; m = next) {
        next = TAILQ_NEXT(m, link);
        if (m->c != skip)
            client_push(m->c, &line, 1);
    }
}

/* The lines other workers left in w's inbox go to its monitors (its mailbox). */
static void take_inbox(struct worker *w, void *state)
{
    (void)state;
    struct monitor_inbox *m = inbox(w);
    struct evbuffer *lines = evbuffer_new();
    if (!lines)
        return;
    pthread_mutex_lock(&m->lock);
    evbuffer_add_buffer(lines, m->lines);
    int overflow = m->overflow;
    m->overflow = 0;
    pthread_mutex_unlock(&m->lock);
    if (overflow) {
        struct monitor *mon;
        while ((mon = TAILQ_FIRST(&m->clients)) != NULL)
            client_close(mon->c, "MONITOR fell behind the commands it was shown");
    } else {
        size_t len = evbuffer_get_length(lines);
        if (len)
            push_to_monitors(w, (const char *)evbuffer_pullup(lines, -1), len, NULL);
    }
    evbuffer_free(lines);
}

/* ---- lines ---- */

/* s quoted as Redis's sdscatrepr quotes it, at out (room: 4 * len + 2). */
static size_t quote(char *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    out[n++] = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        switch (ch) {
        case '\\': out[n++] = '\\'; out[n++] = '\\'; break;
        case '"':  out[n++] = '\\'; out[n++] = '"'; break;
        case '\n': out[n++] = '\\'; out[n++] = 'n'; break;
        case '\r': out[n++] = '\\'; out[n++] = 'r'; break;
        case '\t': out[n++] = '\\'; out[n++] = 't'; break;
        case '\a': out[n++] = '\\'; out[n++] = 'a'; break;
        case '\b': out[n++] = '\\'; out[n++] = 'b'; break;
        default:
            if (ch >= 0x20 && ch <= 0x7e) {
                out[n++] = (char)ch;
            } else {
                out[n++] = '\\';
                out[n++] = 'x';
                out[n++] = hex[ch >> 4];
                out[n++] = hex[ch & 15];
            }
        }
    }
    out[n++] = '"';
    return n;
}

/* r's line, "+<s>.<us> [0 <addr>] "arg" ...\r\n"; its length in *len. */
static char *format_line(const struct request *r, size_t *len)
{
    static const char hidden[] = "(redacted)";
    struct timeval tv;
    size_t cap = 128 + strlen(r->client->addr);
    for (int i = 0; i < r->argc; i++) {
        size_t alen;
        request_arg(r, i, &alen);
        cap += 4 * alen + 3;
    }
    char *line = malloc(cap + sizeof hidden * (size_t)r->argc);
    if (!line)
        return NULL;
    gettimeofday(&tv, NULL);
    size_t n = (size_t)sprintf(line, "+%lld.%06ld [0 %s]", (long long)tv.tv_sec,
                               (long)tv.tv_usec, r->client->addr);
    for (int i = 0; i < r->argc; i++) {
        size_t alen;
        const char *a = request_arg(r, i, &alen);
        line[n++] = ' ';
        n += request_arg_redacted(r, i) ? quote(line + n, hidden, sizeof hidden - 1) : quote(line + n, a, alen);
    }
    line[n++] = '\r';
    line[n++] = '\n';
    *len = n;
    return line;
}

/* A line for another worker's monitors: into its inbox, ringing its
 * mailbox when the inbox was empty (one ring per batch). */
static void post_line(struct worker *w, const char *line, size_t len)
{
    struct monitor_inbox *m = inbox(w);
    int ring = 0;
    pthread_mutex_lock(&m->lock);
    size_t held = evbuffer_get_length(m->lines);
    if (held + len > MONITOR_INBOX_MAX) {
        ring = !m->overflow;
        m->overflow = 1;
    } else {
        ring = held == 0 && !m->overflow;
        evbuffer_add(m->lines, line, len);
    }
    pthread_mutex_unlock(&m->lock);
    if (ring)
        worker_post_family(w, family_id);
}

/* r is about to run: its line to every monitor, once per request. The
 * router calls it only while some client monitors (router_watching), so
 * that nobody monitoring costs nothing more. */
static void monitor_feed(struct request *r)
{
    struct proxy *p = r->worker->proxy;
    if (r->cmd->flags & CMD_ADMIN)
        return;
    size_t len;
    char *line = format_line(r, &len);
    if (!line)
        return;
    /* Redis shows a command once it has run: a monitor's RESET, which ends
     * its monitoring, is not shown to itself */
    const struct client *skip =
        txclass_of(route_of(r->cmd), r->cmd) == TXC_RESET ? r->client : NULL;
    for (int i = 0; i < p->nworkers; i++) {
        struct worker *w = &p->workers[i];
        if (w == r->worker)
            push_to_monitors(w, line, len, skip);
        else if (__atomic_load_n(&inbox(w)->count, __ATOMIC_RELAXED) > 0)
            post_line(w, line, len);
    }
    free(line);
}

static const struct route_entry monitor_routes[] = {
    { "monitor", { .plan = ROUTE_FAMILY, .run = monitor_command, .in_multi = TXC_PROXY,
                   .keyless = 1 } },
};

/* For CLIENT LIST: flag O. */
static void monitor_count(const struct client *c, struct client_counts *n)
{
    n->monitor = client_family_state(c, client_id_of) != NULL;
}

static const struct client_family monitor_family = {
    .closing = monitor_stop,
    .count = monitor_count,
};

static const struct worker_family monitor_worker = {
    .init = inbox_init,
    .mail = take_inbox,
};

void monitor_register(void)
{
    route_register(monitor_routes, 1);
    client_id_of = client_family_register(&monitor_family);
    family_id = worker_family_register(&monitor_worker);
    router_register_watcher(monitor_feed);
}
