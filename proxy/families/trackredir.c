/*
 * trackredir: redirected invalidations. See trackredir.h.
 */
#include "proxy/families/trackredir.h"

#include <event2/buffer.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/log.h"
#include "lib/proto/reply.h"
#include "proxy/core/client.h"
#include "proxy/core/proxy.h"
#include "proxy/core/worker.h"

enum { MSG_INVALIDATE, MSG_BROKEN };

/* A message in an inbox, followed by its keys (a RESP array or null). */
struct message {
    uint64_t from, to;          /* the tracking client; the client it is for */
    int from_worker;
    int kind;
    size_t len;                 /* of the keys */
};

/* A worker's inbox, and the client last looked up by id there. */
struct inbox {
    pthread_mutex_t lock;
    struct evbuffer *mail;      /* under lock */
    int overflow;               /* under lock: messages were dropped */
    struct client *last;        /* this thread's only */
    uint64_t last_id;
};

static int family_id = -1;
static void (*on_broken)(struct worker *w, uint64_t from, uint64_t redirect);

static struct inbox *inbox_of(const struct worker *w)
{
    return worker_family_state(w, family_id);
}

/* The client of w whose CLIENT ID is id, or NULL (on w's thread). */
static struct client *client_here(struct worker *w, uint64_t id)
{
    struct inbox *in = inbox_of(w);
    if (in->last && in->last_id == id)
        return in->last;
    struct client *c;
    TAILQ_FOREACH(c, &w->clients, link)
        if (c->id == id && c->state == CLIENT_ACTIVE) {
            in->last = c;
            in->last_id = id;
            return c;
        }
    return NULL;
}

void trackredir_client_gone(struct client *c)
{
    struct inbox *in = inbox_of(c->worker);
    if (in && in->last == c)
        in->last = NULL;
}

static int subscribed(const struct client *c)
{
    struct client_counts n;
    client_counts(c, &n);
    return n.sub + n.psub + n.ssub > 0;
}

/* The message to c, as Redis writes it for its protocol and mode; 0 when
 * Redis writes it nothing. */
static int deliver(struct client *c, const char *keys, size_t len)
{
    static const char message[] = "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n";
    if (c->resp != RESP3 && !subscribed(c))
        return 0;
    struct evbuffer *b = evbuffer_new();
    if (!b)
        return 0;
    if (c->resp == RESP3) {
        resp_add_push(b, RESP3, 2);
        resp_add_bulk(b, "invalidate", 10);
    } else {
        evbuffer_add(b, message, sizeof message - 1);
    }
    evbuffer_add(b, keys, len);
    struct reply_view v = { b, NULL, evbuffer_get_length(b) };
    client_push(c, &v, 0);
    evbuffer_free(b);
    return 1;
}

static void post(struct worker *to_w, const struct message *m, const char *keys)
{
    struct inbox *in = inbox_of(to_w);
    int ring;
    pthread_mutex_lock(&in->lock);
    size_t held = evbuffer_get_length(in->mail), len = sizeof *m + m->len;
    if (held + len > TRACKREDIR_INBOX_MAX) {
        ring = !in->overflow;
        in->overflow = 1;
    } else {
        ring = held == 0 && !in->overflow;
        if (evbuffer_add(in->mail, m, sizeof *m) < 0 ||
            (m->len && evbuffer_add(in->mail, keys, m->len) < 0)) {
            evbuffer_drain(in->mail, evbuffer_get_length(in->mail) - held);
            ring = !in->overflow;
            in->overflow = 1;
        }
    }
    pthread_mutex_unlock(&in->lock);
    if (ring)
        worker_post_family(to_w, family_id);
}

void trackredir_send(struct worker *w, uint64_t from, uint64_t to, int to_worker,
                     const char *keys, size_t len)
{
    if (to_worker == w->id) {
        struct client *c = client_here(w, to);
        if (c)
            deliver(c, keys, len);
        else
            on_broken(w, from, to);
        return;
    }
    struct message m = { from, to, w->id, MSG_INVALIDATE, len };
    post(&w->proxy->workers[to_worker], &m, keys);
}

/* Messages were dropped: every client here that may be a target forgets
 * everything. */
static void overflowed(struct worker *w)
{
    struct client *c;
    log_warning("tracking", "worker %d: redirected invalidations came faster than it "
                "delivered them (%u bytes waiting): every client that may receive them is "
                "told to flush its cache", w->id, TRACKREDIR_INBOX_MAX);
    TAILQ_FOREACH(c, &w->clients, link)
        if (c->state == CLIENT_ACTIVE)
            deliver(c, c->resp == RESP3 ? "_\r\n" : "$-1\r\n", c->resp == RESP3 ? 3 : 5);
}

static void take_one(struct worker *w, const struct message *m, const char *keys)
{
    if (m->kind == MSG_BROKEN) {
        on_broken(w, m->to, m->from);
        return;
    }
    struct client *c = client_here(w, m->to);
    if (c) {
        deliver(c, keys, m->len);
        return;
    }
    /* gone: its tracking client hears it on its own worker */
    struct message back = { m->to, m->from, w->id, MSG_BROKEN, 0 };
    post(&w->proxy->workers[m->from_worker], &back, NULL);
}

static void take_inbox(struct worker *w, void *state)
{
    struct inbox *in = state;
    struct evbuffer *mail = evbuffer_new();
    if (!mail)
        return;
    pthread_mutex_lock(&in->lock);
    evbuffer_add_buffer(mail, in->mail);
    int overflow = in->overflow;
    in->overflow = 0;
    pthread_mutex_unlock(&in->lock);
    struct message m;
    while (evbuffer_remove(mail, &m, sizeof m) == (int)sizeof m) {
        const char *keys = (const char *)evbuffer_pullup(mail, (ev_ssize_t)m.len);
        if (m.len && !keys)
            break;
        take_one(w, &m, keys);
        evbuffer_drain(mail, m.len);
    }
    if (overflow)
        overflowed(w);
    evbuffer_free(mail);
}

static int inbox_init(struct worker *w, void **state)
{
    struct inbox *in = calloc(1, sizeof *in);
    (void)w;
    if (!in || !(in->mail = evbuffer_new())) {
        free(in);
        return -1;
    }
    pthread_mutex_init(&in->lock, NULL);
    *state = in;
    return 0;
}

static const struct worker_family inbox_family = { .init = inbox_init, .mail = take_inbox };

void trackredir_register(void (*broken)(struct worker *w, uint64_t from, uint64_t redirect))
{
    on_broken = broken;
    family_id = worker_family_register(&inbox_family);
}
