#include "proxy/core/client.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/un.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/assert.h"
#include "lib/base/log.h"
#include "proxy/config/acl.h"
#include "proxy/config/snapshot.h"
#include "proxy/core/proxy.h"
#include "proxy/core/slowlog.h"
#include "proxy/core/worker.h"

/* Commands handled per read event before yielding to other connections. */
#define CLIENT_COMMANDS_PER_EVENT 1024

static void sockaddr_format(const struct sockaddr *sa, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
        port = ntohs(in->sin_port);
        snprintf(buf, len, "%s:%d", ip, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
        port = ntohs(in6->sin6_port);
        snprintf(buf, len, "[%s]:%d", ip, port);
    } else if (sa->sa_family == AF_UNIX) {
        snprintf(buf, len, "%s:0", ((const struct sockaddr_un *)sa)->sun_path);
    } else {
        snprintf(buf, len, "?:0");
    }
}

/* ---- memory (maxmemory-clients) ---- */

/* What c holds now (client.h: memory). */
static size_t mem_count(const struct client *c)
{
    return (c->io.rbuf ? c->io.rcap : 0) + c->backlog + client_family_bytes(c) + c->held +
           io_conn_pending(&c->io);
}

size_t client_mem_of(const struct client *c)
{
    return __atomic_load_n(&c->mem, __ATOMIC_RELAXED);
}

size_t client_mem_total(const struct proxy *p)
{
    size_t total = 0;
    for (int i = 0; i < p->nworkers; i++)
        total += __atomic_load_n(&p->workers[i].client_mem, __ATOMIC_RELAXED);
    return total;
}

/* A client eviction may take; c's worker's clients_lock is held. */
static int mem_evictable(const struct client *c)
{
    return c->state != CLIENT_GONE && !c->kill_pending && !c->no_evict;
}

/* The evictable client using the most memory, of any worker (their
 * clients_lock held), or NULL. */
static struct client *mem_largest(struct proxy *p)
{
    struct client *best = NULL, *c;
    size_t most = 0;
    for (int i = 0; i < p->nworkers; i++)
        TAILQ_FOREACH(c, &p->workers[i].clients, link)
            if (mem_evictable(c) && client_mem_of(c) > most) {
                most = client_mem_of(c);
                best = c;
            }
    return best;
}

/*
 * The total passed maxmemory-clients: with every worker's client list
 * locked (in worker order, so two workers evicting at once cannot
 * deadlock), mark the largest clients for closing until what the others
 * hold is under the limit; each worker closes its marked ones on its own
 * thread (client_close_killed), the caller's too, so no client is closed
 * under a caller that still uses it.
 */
static void mem_evict(struct proxy *p, size_t limit)
{
    uint64_t workers = 0;
    size_t total = 0;
    struct client *c;
    for (int i = 0; i < p->nworkers; i++) {
        pthread_mutex_lock(&p->workers[i].clients_lock);
        TAILQ_FOREACH(c, &p->workers[i].clients, link)
            if (!c->kill_pending)
                total += client_mem_of(c);
    }
    while (total > limit && (c = mem_largest(p)) != NULL) {
        c->kill_pending = CLIENT_KILL_EVICT;
        total -= client_mem_of(c);
        workers |= (uint64_t)1 << c->worker->id;
        log_notice("client", "Evicting client: id=%llu addr=%s tot-mem=%zu "
                   "(maxmemory-clients %zu passed)",
                   (unsigned long long)c->id, c->addr, client_mem_of(c), limit);
    }
    for (int i = p->nworkers - 1; i >= 0; i--)
        pthread_mutex_unlock(&p->workers[i].clients_lock);
    for (int i = 0; i < p->nworkers; i++)
        if (workers & ((uint64_t)1 << i))
            worker_post_kill(&p->workers[i]);
}

void client_mem_update(struct client *c)
{
    struct worker *w = c->worker;
    size_t now = mem_count(c), was = c->mem;
    if (now == was)
        return;
    __atomic_store_n(&c->mem, now, __ATOMIC_RELAXED);
    __atomic_store_n(&w->client_mem, w->client_mem - was + now, __ATOMIC_RELAXED);
    long long limit = w->cfg->maxmemory_clients;
    if (limit > 0 && now > was && c->state != CLIENT_GONE &&
        client_mem_total(w->proxy) > (size_t)limit)
        mem_evict(w->proxy, (size_t)limit);
}

void client_mem_forget(struct client *c)
{
    struct worker *w = c->worker;
    __atomic_store_n(&w->client_mem, w->client_mem - c->mem, __ATOMIC_RELAXED);
    __atomic_store_n(&c->mem, 0, __ATOMIC_RELAXED);
}

void client_close_killed(struct worker *w)
{
    for (;;) {          /* one at a time: closing takes clients_lock itself */
        struct client *c, *found = NULL;
        enum client_kill why = CLIENT_KILL_NONE;
        pthread_mutex_lock(&w->clients_lock);
        TAILQ_FOREACH(c, &w->clients, link)
            if (c->kill_pending) {
                why = (enum client_kill)c->kill_pending;
                c->kill_pending = CLIENT_KILL_NONE;
                found = c;
                break;
            }
        pthread_mutex_unlock(&w->clients_lock);
        if (!found)
            return;
        if (why == CLIENT_KILL_EVICT) {
            stat_inc(&w->stats.evicted_clients);
            found->evicted = 1;
        }
        client_close(found, why == CLIENT_KILL_EVICT ? "evicted: maxmemory-clients"
                          : why == CLIENT_KILL_USER ? "its user was removed or turned off"
                          : "killed by CLIENT KILL");
    }
}

/* ---- replies (request.h: request_sink) ---- */

/* An error reply (head: its first n bytes, '-' first) went out: counted
 * by its code, the word after the '-'. */
static void count_error(struct worker *w, const char *head, size_t n)
{
    size_t len = 0;
    while (1 + len < n && head[1 + len] != ' ' && head[1 + len] != '\r')
        len++;
    stats_error_reply(&w->stats, head + 1, len);
}

/* r is the head of c's queue: its reply straight to c's output. */
static int client_deliver_now(struct request *r, const struct reply_view *v)
{
    struct client *c = r->client;
    if (TAILQ_FIRST(&c->queue) != r)
        return 0;
    struct evbuffer *out = client_output(c);
    if (!out)
        return 0;
    char head[STATS_ERROR_CODE_MAX + 1];
    size_t n = v->len < sizeof head ? v->len : sizeof head;
    reply_view_copy(v, head, 1);
    if (head[0] == '-')
        reply_view_copy(v, head, n);
    if (v->in)
        evbuffer_remove_buffer(v->in, out, v->len);
    else
        io_out_add(&c->io, v->bytes, v->len);   /* no copy until it is written */
    r->error_reply = head[0] == '-';
    if (r->error_reply)
        count_error(c->worker, head, n);
    r->done = 1;
    client_flush(c);
    return 1;
}

/* r's reply is complete, kept in r until it is its turn. */
static void client_finished(struct request *r)
{
    r->client->held += r->inline_reply_len;
    if (r->reply)
        r->client->held += evbuffer_get_length(r->reply);
    client_flush(r->client);
}

/* r is answered: the slow log sees how long it took. */
static void client_answered(struct request *r)
{
    uint64_t now_us = io_loop_now_us(&r->worker->loop);
    slowlog_note(r, now_us > r->start_us ? now_us - r->start_us : 0, r->client->addr,
                 r->client->name);
}

static const struct request_sink client_sink = {
    .deliver_now = client_deliver_now,
    .finished = client_finished,
    .answered = client_answered,
};

static void (*dispatch)(struct request *r);

void client_init(void (*run)(struct request *r))
{
    dispatch = run;
    request_sink_register(&client_sink);
}

/* ---- families ---- */

static const struct client_family *families[CLIENT_FAMILIES_MAX];
static int nfamilies;
static unsigned subscribing;        /* bit id: family id has a subscribed hook */

/* The families with each hook the router calls for every request, apart,
 * so that a request asks only those that have it. */
static int (*holders[CLIENT_FAMILIES_MAX])(struct request *r);
static int (*interceptors[CLIENT_FAMILIES_MAX])(struct request *r);
static int (*takers[CLIENT_FAMILIES_MAX])(struct request *r, const struct route *rt);
static int nholders, ninterceptors, ntakers;

int client_family_register(const struct client_family *f)
{
    if (nfamilies == CLIENT_FAMILIES_MAX)
        registration_full("client", CLIENT_FAMILIES_MAX);
    int id = nfamilies;
    families[nfamilies++] = f;
    if (f->subscribed)
        subscribing |= 1u << id;
    if (f->hold)
        holders[nholders++] = f->hold;
    if (f->intercept)
        interceptors[ninterceptors++] = f->intercept;
    if (f->take)
        takers[ntakers++] = f->take;
    return id;
}

void client_family_set(struct client *c, int id, void *state)
{
    pthread_mutex_lock(&c->worker->clients_lock);
    c->family[id] = state;
    if (state)
        c->family_held |= 1u << id;
    else
        c->family_held &= ~(1u << id);
    pthread_mutex_unlock(&c->worker->clients_lock);
}

int client_hold(struct request *r)
{
    for (int i = 0; i < nholders; i++)
        if (holders[i](r))
            return 1;
    return 0;
}

int client_intercept(struct request *r)
{
    for (int i = 0; i < ninterceptors; i++)
        if (interceptors[i](r))
            return 1;
    return 0;
}

int client_take(struct request *r, const struct route *rt)
{
    for (int i = 0; i < ntakers; i++)
        if (takers[i](r, rt))
            return 1;
    return 0;
}

#define EACH_FAMILY(member, ...)                        \
    do {                                                \
        for (int i_ = 0; i_ < nfamilies; i_++)          \
            if (families[i_]->member)                   \
                families[i_]->member(__VA_ARGS__);      \
    } while (0)

void client_counts(const struct client *c, struct client_counts *n)
{
    *n = (struct client_counts){ .multi = -1, .tracking_redirect = -1 };
    EACH_FAMILY(count, c, n);
}

void client_refused(struct client *c)
{
    EACH_FAMILY(refused, c);
}

size_t client_family_bytes(const struct client *c)
{
    size_t n = 0;
    for (int i = 0; i < nfamilies; i++)
        if (families[i]->held)
            n += families[i]->held(c);
    return n;
}

static struct request *first_parked(const struct client *c)
{
    for (int i = 0; i < nfamilies; i++) {
        struct request *r = families[i]->first_parked ? families[i]->first_parked(c) : NULL;
        if (r)
            return r;
    }
    return NULL;
}

/* Whether c has the pubsub class's output limits, as a subscriber in Redis. */
static int client_subscribed(const struct client *c)
{
    /* the usual case, a client no subscribing family holds state for: no
     * call (a client with a transaction's state pays no count either) */
    unsigned held = c->family_held & subscribing;
    for (int i = 0; held; i++, held >>= 1)
        if ((held & 1) && families[i]->subscribed(c))
            return 1;
    return 0;
}

static void client_free_cb(evutil_socket_t fd, short what, void *arg)
{
    struct client *c = arg;
    (void)fd;
    (void)what;
    if (c->retry_timer)
        event_free(c->retry_timer);
    EACH_FAMILY(freed, c);
    resp_parser_free(&c->parser);
    snapshot_unref(c->user_snap);
    free(c->name);
    free(c->lib_name);
    free(c->lib_ver);
    int evicted = c->evicted;
    free(c);
    /* what it held goes back to the system, not only to this thread's
     * malloc arena: another worker's clients may need it next */
    if (evicted)
        malloc_trim(0);
}

void client_set_user(struct client *c, const struct acl_user *u)
{
    struct worker *w = c->worker;
    struct config_snapshot *old = c->user_snap;
    /* CLIENT LIST on another worker reads c->user under this lock */
    pthread_mutex_lock(&w->clients_lock);
    c->user = u;
    c->user_snap = old == w->snap ? old : snapshot_ref(w->snap);
    pthread_mutex_unlock(&w->clients_lock);
    if (old != c->user_snap)
        snapshot_unref(old);
}

int client_user_refresh(struct client *c)
{
    const struct acl *acl = c->worker->snap->acl;
    for (int i = 0; i < acl->nusers; i++) {
        if (strcmp(acl->users[i].name, c->user->name) != 0)
            continue;
        if (!acl->users[i].enabled && c->authenticated && !c->worker->snap->keep_off)
            return -1;              /* turned off by a reload: its connections close */
        client_set_user(c, &acl->users[i]);
        if (c->user->nopass && c->user->enabled && !c->authenticated) {   /* requirepass was removed */
            c->authenticated = 1;
            c->parser.unauthenticated = 0;
        }
        return 0;
    }
    return -1;
}

void client_users_reloaded(struct worker *w)
{
    const struct acl *acl = w->snap->acl;
    int marked = 0;
    struct client *c;
    pthread_mutex_lock(&w->clients_lock);
    TAILQ_FOREACH(c, &w->clients, link) {
        if (!c->authenticated || c->kill_pending || c->state != CLIENT_ACTIVE)
            continue;
        const struct acl_user *u = acl_user_named(acl, c->user->name, strlen(c->user->name));
        int is_default = strcmp(c->user->name, "default") == 0;
        int gone = !is_default && (!u || (!u->enabled && !w->snap->keep_off) ||
                                    w->snap->logout_all);
        struct client_counts n;
        if (!gone && u && acl_channels_narrowed(c->user, u)) {
            client_counts(c, &n);
            gone = n.sub + n.psub + n.ssub > 0;     /* a subscriber of fewer channels */
        }
        if (gone) {
            c->kill_pending = CLIENT_KILL_USER;
            marked = 1;
        }
    }
    pthread_mutex_unlock(&w->clients_lock);
    if (marked)
        client_close_killed(w);
}

/* Unlisted now, freed on the next round: never under its own callback. */
static void client_free(struct client *c)
{
    struct worker *w = c->worker;
    pthread_mutex_lock(&w->clients_lock);
    EACH_FAMILY(unlisted, c);
    TAILQ_REMOVE(&w->clients, c, link);
    w->nclients--;
    pthread_mutex_unlock(&w->clients_lock);
    client_mem_forget(c);
    __atomic_sub_fetch(&w->proxy->nclients, 1, __ATOMIC_RELAXED);
    event_base_once(w->base, -1, EV_TIMEOUT, client_free_cb, c, NULL);
}

struct evbuffer *client_output(struct client *c)
{
    return c->state == CLIENT_GONE ? NULL : c->io.out;
}

/* c is read while it is active, no master it feeds is congested and its
 * backlog is under client-backlog-limit. */
static int client_readable(const struct client *c)
{
    return c->state == CLIENT_ACTIVE && !c->paused_on && !c->backlog_full;
}

/* Read c again, what it had sent already first, if nothing holds it back. */
static void client_read_on(struct client *c)
{
    if (!client_readable(c))
        return;
    io_conn_read(&c->io, 1);
    io_conn_read_again(&c->io);
}

void client_pause_for(struct client *c, struct node_conn *node)
{
    if (c->paused_on || c->state != CLIENT_ACTIVE)
        return;
    c->paused_on = node;
    TAILQ_INSERT_TAIL(&c->worker->paused, c, paused_link);
    io_conn_read(&c->io, 0);
}

static void client_unpause(struct client *c)
{
    if (!c->paused_on)
        return;
    TAILQ_REMOVE(&c->worker->paused, c, paused_link);
    c->paused_on = NULL;
}

void client_resume_paused(struct worker *w, struct node_conn *node)
{
    struct client *c, *next;
    for (c = TAILQ_FIRST(&w->paused); c; c = next) {
        next = TAILQ_NEXT(c, paused_link);
        if (c->paused_on != node)
            continue;
        client_unpause(c);
        client_read_on(c);
    }
}

/* The one place a client changes state, on the only moves there are:
 * active, then closing or gone; closing, then gone. */
static void client_state_set(struct client *c, enum client_state to)
{
    ASSERT(to > c->state);
    c->state = to;
}

void client_close(struct client *c, const char *why)
{
    if (c->state == CLIENT_GONE)
        return;
    client_unpause(c);
    if (why)
        log_verbose("client", "closing client id=%llu addr=%s: %s",
                    (unsigned long long)c->id, c->addr, why);
    client_state_set(c, CLIENT_GONE);
    io_conn_close(&c->io);
    EACH_FAMILY(closing, c);    /* MONITOR stops; subscriber connections close */
    /* Requests still at a node keep the client until they end. */
    client_flush(c);
    /* then its parked requests fail and its dedicated connection closes (each
     * flushes again: the flush that empties the queue frees the client) */
    EACH_FAMILY(closed, c);
}

void client_close_idle(struct worker *w, time_t now)
{
    int limit = w->cfg->timeout;
    struct client *c, *next;
    if (limit <= 0)
        return;
    for (c = TAILQ_FIRST(&w->clients); c; c = next) {
        next = TAILQ_NEXT(c, link);
        /* as Redis: a client owed a reply (blocked ones too), subscribed
         * or a replica (monitoring) is not idle */
        if (c->state == CLIENT_ACTIVE && TAILQ_EMPTY(&c->queue) && !client_subscribed(c) &&
            !c->replica && now - c->last_active > limit)
            client_close(c, "idle past timeout");
    }
}

static void push_at(struct client *c, const struct reply_view *v, int before_parked,
                    struct request *before, struct request *after_r)
{
    struct evbuffer *out = c->state == CLIENT_ACTIVE ? client_output(c) : NULL;
    if (!out) {                 /* nothing after QUIT's +OK */
        reply_view_drop(v);
        return;
    }
    if (TAILQ_EMPTY(&c->queue)) {
        if (v->in)
            evbuffer_remove_buffer(v->in, out, v->len);
        else
            io_out_add(&c->io, v->bytes, v->len);
        client_flush(c);        /* writes it, and checks the output limits */
        return;
    }
    struct request *r = request_new(c->worker), *after;
    if (!r) {
        reply_view_drop(v);
        return;
    }
    r->client = c;
    struct request *parked = first_parked(c);
    if (after_r) {
        TAILQ_INSERT_AFTER(&c->queue, after_r, r, link);
    } else if (before && before->client == c && !before->done) {
        TAILQ_INSERT_BEFORE(before, r, link);
    } else if (before_parked && parked) {
        TAILQ_INSERT_BEFORE(parked, r, link);
    } else {
        for (after = TAILQ_LAST(&c->queue, request_queue); after && !after->done;
             after = TAILQ_PREV(after, request_queue, link))
            ;
        if (after)
            TAILQ_INSERT_AFTER(&c->queue, after, r, link);
        else
            TAILQ_INSERT_TAIL(&c->queue, r, link);
    }
    c->nqueued++;
    request_deliver(r, v);
}

void client_push(struct client *c, const struct reply_view *v, int before_parked)
{
    push_at(c, v, before_parked, NULL, NULL);
}

void client_push_before(struct client *c, struct request *before, const struct reply_view *v)
{
    push_at(c, v, 0, before, NULL);
}

/* The push right after last, a request in c's queue, or first when last
 * is NULL. */
static void push_after_last(struct client *c, const struct reply_view *v, struct request *last)
{
    if (last)
        push_at(c, v, 0, NULL, last);
    else
        push_at(c, v, 0, TAILQ_FIRST(&c->queue), NULL);
}

void client_push_ahead(struct client *c, const struct reply_view *v)
{
    struct request *heard;
    TAILQ_FOREACH_REVERSE(heard, &c->queue, request_queue, link)
        if (request_heard(heard))
            break;
    push_after_last(c, v, heard);
}

void client_push_after(struct client *c, struct request *after, const struct reply_view *v)
{
    ASSERT(after->client == c && !after->detached);
    push_at(c, v, 0, NULL, after);
}

void client_push_after_sent(struct client *c, const struct reply_view *v, unsigned char marks)
{
    struct request *sent;
    TAILQ_FOREACH_REVERSE(sent, &c->queue, request_queue, link)
        if (sent->done || ((sent->marks & marks) && request_sent(sent)))
            break;
    push_after_last(c, v, sent);
}

void client_close_after_replies(struct client *c)
{
    if (c->state != CLIENT_ACTIVE)
        return;
    client_state_set(c, CLIENT_CLOSING);
    client_unpause(c);
    io_conn_read(&c->io, 0);
    client_flush(c);
}

size_t client_output_hard_limit(const struct client *c)
{
    const struct config *cfg = c->worker->cfg;
    long long hard = client_subscribed(c) ? cfg->client_output_pubsub_hard_limit
                                          : cfg->client_output_hard_limit;
    return hard > 0 ? (size_t)hard : 0;
}

/* Bytes this client holds in the proxy: replies not yet read by it. */
static int client_over_limits(struct client *c, size_t held)
{
    const struct config *cfg = c->worker->cfg;
    /* a subscriber has the pubsub class's limits, as in Redis */
    int sub = client_subscribed(c);
    long long hard = sub ? cfg->client_output_pubsub_hard_limit : cfg->client_output_hard_limit;
    long long soft = sub ? cfg->client_output_pubsub_soft_limit : cfg->client_output_soft_limit;
    int secs = sub ? cfg->client_output_pubsub_soft_seconds : cfg->client_output_soft_seconds;
    if (hard && held > (size_t)hard)
        return 1;
    if (soft && held > (size_t)soft) {
        time_t now = time(NULL);
        if (!c->soft_limit_since)
            c->soft_limit_since = now;
        return now - c->soft_limit_since >= secs;
    }
    c->soft_limit_since = 0;
    return 0;
}

/* r's reply is going out (or to nobody, the client gone): count it. The
 * first byte of its reply says whether it is an error. */
static void client_count_reply(struct client *c, struct request *r, uint64_t now_us)
{
    struct worker *w = c->worker;
    char head[STATS_ERROR_CODE_MAX + 1] = "";
    size_t n = 0;
    if (r->inline_reply_len) {
        n = r->inline_reply_len < sizeof head ? r->inline_reply_len : sizeof head;
        memcpy(head, r->inline_data, n);
    } else if (r->reply && evbuffer_get_length(r->reply) > 0) {
        ssize_t got = evbuffer_copyout(r->reply, head, sizeof head);
        n = got > 0 ? (size_t)got : 0;
    }
    int error = r->error_reply;     /* counted in errorstats as it went out */
    if (!error && n > 0 && head[0] == '-') {
        count_error(w, head, n);
        error = 1;
    }
    if (r->cmd)
        stats_command_done(&w->stats, r->cmd, now_us > r->start_us ? now_us - r->start_us : 0,
                           error);
}

/*
 * Finished replies may wait for the next one while it is due from a shared
 * node connection, up to a flat buffer's worth and within the event-loop
 * round they began waiting in (io_loop.rounds): a
 * pipeline spread over several masters then costs the client one write
 * (and one wakeup), not one per master's answer. A reply behind anything
 * slower (a blocking command, a retry's backoff, a split command, a write
 * that waits for replicas) goes out in the round it was finished.
 */
static int client_output_can_wait(const struct client *c, size_t unread, uint64_t round)
{
    const struct request *head = TAILQ_FIRST(&c->queue);
    /* Within the round it began only: a client pipelining without pause
     * always has a next reply due, and must still get its replies. */
    return c->state == CLIENT_ACTIVE && head && unread < IO_READ_SIZE &&
           node_req_due(&head->nreq) && !head->ack &&
           (c->output_waits_since == 0 || c->output_waits_since == round);
}

/* c's backlog grew by r's command: past the limit, c is not read. */
static void client_backlog_add(struct client *c, struct request *r)
{
    long long limit = c->worker->cfg->client_backlog_limit;
    r->footprint = request_footprint(r);
    c->backlog += r->footprint;
    if (limit > 0 && c->backlog > (size_t)limit && !c->backlog_full) {
        c->backlog_full = 1;
        io_conn_read(&c->io, 0);
    }
}

/* r is answered and gone: once the backlog is down to half the limit, c
 * is read again (so a client at the limit is not woken per reply). */
static void client_backlog_sub(struct client *c, struct request *r)
{
    long long limit = c->worker->cfg->client_backlog_limit;
    c->backlog -= r->footprint;
    if (c->backlog_full && (limit <= 0 || c->backlog <= (size_t)limit / 2)) {
        c->backlog_full = 0;
        client_read_on(c);
    }
}

void client_unqueue(struct client *c, struct request *r)
{
    TAILQ_REMOVE(&c->queue, r, link);
    c->nqueued--;
    if (r->footprint)
        client_backlog_sub(c, r);
    request_free(r);
}

void client_flush(struct client *c)
{
    struct evbuffer *out = client_output(c);
    struct request *r;
    uint64_t now_us = 0;
    while ((r = TAILQ_FIRST(&c->queue)) != NULL && r->done) {
        if (!now_us)
            now_us = io_loop_now_us(&c->worker->loop);
        client_count_reply(c, r, now_us);
        if (r->inline_reply_len) {
            c->held -= r->inline_reply_len;
            if (out && !r->silent)
                io_out_add(&c->io, r->inline_data, r->inline_reply_len);
        }
        if (r->reply) {
            c->held -= evbuffer_get_length(r->reply);
            if (out && !r->silent)
                evbuffer_add_buffer(out, r->reply);
        }
        client_unqueue(c, r);
    }
    if (c->state == CLIENT_GONE) {
        if (TAILQ_EMPTY(&c->queue))
            client_free(c);
        else
            client_mem_update(c);
        return;
    }
    client_mem_update(c);
    size_t unread = io_conn_pending(&c->io);
    uint64_t round = c->worker->loop.rounds + 1;
    if (unread == 0) {
        c->output_waits_since = 0;
    } else if (client_output_can_wait(c, unread, round)) {
        c->output_waits_since = round;
    } else {
        c->output_waits_since = 0;
        io_conn_want_write(&c->io);
    }
    /* replies waiting behind a slow one count as much as unread ones */
    if (client_over_limits(c, unread + c->held)) {
        log_notice("client", "client id=%llu addr=%s closed for overcoming of output buffer limits",
                   (unsigned long long)c->id, c->addr);
        stat_inc(&c->worker->stats.output_limit_closes[client_subscribed(c) ? 1 : 0]);
        client_close(c, NULL);
        return;
    }
    if (c->state == CLIENT_CLOSING && TAILQ_EMPTY(&c->queue) && unread == 0) {
        client_close(c, NULL);
        return;
    }
    EACH_FAMILY(flushed, c);
}

void client_reply_mode_take(struct client *c, struct request *r)
{
    if (r->reply_mode_taken)
        return;
    r->reply_mode_taken = 1;
    /* the protocol too: a HELLO or RESET parked behind a blocking command
     * runs after the commands read behind it were read */
    r->resp3 = c->resp == RESP3;
    r->silent = c->reply_off | c->reply_skip_next;
    c->reply_skip_next = 0;
}

/* A parse error: owed replies first, then the error, then the close. */
static void client_protocol_error(struct client *c, const char *err)
{
    struct request *r = request_new(c->worker);
    log_verbose("client", "protocol error from client id=%llu addr=%s: %s",
                (unsigned long long)c->id, c->addr, err);
    stat_inc(&c->worker->stats.protocol_errors);
    if (strcmp(err, RESP_ERR_LIMIT) == 0)
        stat_inc(&c->worker->stats.query_limit_closes);
    if (r) {
        r->client = c;
        client_reply_mode_take(c, r);
        TAILQ_INSERT_TAIL(&c->queue, r, link);
        c->nqueued++;
        resp_add_errorf(request_reply_buffer(r), "ERR %s", err);
        request_finish(r);
    }
    client_close_after_replies(c);
}

/* The command the parser just completed starts the input: make it a request. */
static int client_take_command(struct client *c, const char *bytes)
{
    struct resp_parser *p = &c->parser;
    struct request *r;
    if (p->argc == 0 || p->empty_inline) {           /* "*0\r\n", blank line */
        io_consume(&c->io, p->cmd_len);
        return 0;
    }
    r = request_new(c->worker);
    if (!r)
        return -1;
    r->client = c;
    r->resp3 = c->resp == RESP3;    /* until it runs (client_reply_mode_take) */
    r->seq = c->next_seq++;
    r->start_us = io_loop_now_us(&c->worker->loop);
    int rc = p->is_inline
        ? request_set_command(r, p->inline_mb, p->inline_mb_len, p->args, p->argc)
        : request_set_command(r, bytes, p->cmd_len, p->args, p->argc);
    io_consume(&c->io, p->cmd_len);
    if (rc < 0) {
        request_free(r);
        return -1;
    }
    TAILQ_INSERT_TAIL(&c->queue, r, link);
    c->nqueued++;
    client_backlog_add(c, r);
    stat_inc(&c->worker->stats.commands);
    dispatch(r);
    __atomic_add_fetch(&c->commands, 1, __ATOMIC_RELAXED);     /* as Redis: once run */
    return 0;
}

static void client_read_cb(struct io_conn *io, void *arg)
{
    struct client *c = arg;
    struct resp_parser *p = &c->parser;
    int handled = 0;
    size_t have;
    c->last_active = time(NULL);
    while (client_readable(c) && handled < CLIENT_COMMANDS_PER_EVENT) {
        const char *data = io_input(io, &have);
        enum resp_parse_status st;
        if (have <= p->pos)
            break;
        resp_parser_feed(p, data + p->pos, have - p->pos, &st);
        if (st == RESP_PARSE_ERROR) {
            client_protocol_error(c, p->err);
            return;
        }
        if (st == RESP_PARSE_DONE) {
            if (client_take_command(c, data) < 0) {
                client_protocol_error(c, "out of memory");
                return;
            }
            resp_parser_next(p);
            handled++;
        }
    }
    if (handled > 1)
        io_loop_note_pipeline(io->loop);
    if (client_readable(c) && handled == CLIENT_COMMANDS_PER_EVENT &&
        (io_input(io, &have), have > 0))
        io_conn_read_again(io);     /* the rest after the others' turn */
    else if (handled == 0)
        client_drain_check(c);      /* bytes that made no command ("*0", blanks) */
    if (c->state != CLIENT_GONE)
        client_mem_update(c);
}

/* Bytes the client sent that the kernel holds and the proxy has not read. */
static int client_unread_in_kernel(const struct client *c)
{
    int n = 0;
    return ioctl(c->io.fd, FIONREAD, &n) < 0 || n > 0;
}

void client_drain_check(struct client *c)
{
    size_t have;
    if (!c->worker->draining || !client_readable(c) ||
        !TAILQ_EMPTY(&c->queue) || !TAILQ_EMPTY(&c->held_back) ||
        io_conn_pending(&c->io) > 0 || (io_input(&c->io, &have), have > 0) ||
        client_unread_in_kernel(c))
        return;
    client_close(c, "shutting down");
}

static void client_drained_cb(struct io_conn *io, void *arg)
{
    struct client *c = arg;
    (void)io;
    if (c->state == CLIENT_CLOSING) {
        client_flush(c);
        return;
    }
    client_mem_update(c);
    client_drain_check(c);
}

static void client_error_cb(struct io_conn *io, int err, void *arg)
{
    struct client *c = arg;
    (void)io;
    client_close(c, err == EPROTO && c->io.ssl ? io_tls_error() : err ? strerror(err) : NULL);
}

static const struct io_handlers client_handlers = {
    .on_read = client_read_cb,
    .on_drained = client_drained_cb,
    .on_error = client_error_cb,
};

int client_with_id(struct proxy *p, uint64_t id, void (*fn)(struct client *c, void *arg),
                   void *arg)
{
    int found = -1;
    for (int i = 0; i < p->nworkers && found < 0; i++) {
        struct worker *w = &p->workers[i];
        struct client *c;
        pthread_mutex_lock(&w->clients_lock);
        TAILQ_FOREACH(c, &w->clients, link)
            if (c->id == id && c->state != CLIENT_GONE) {
                if (fn)
                    fn(c, arg);
                found = i;
                break;
            }
        pthread_mutex_unlock(&w->clients_lock);
    }
    return found;
}

struct client *client_accept(struct worker *w, int fd, const struct sockaddr *sa, int salen)
{
    struct proxy *p = w->proxy;
    (void)salen;
    if (__atomic_add_fetch(&p->nclients, 1, __ATOMIC_RELAXED) > w->cfg->max_clients) {
        static const char msg[] = "-ERR max number of clients reached\r\n";
        __atomic_sub_fetch(&p->nclients, 1, __ATOMIC_RELAXED);
        stat_inc(&w->stats.rejected_clients);
        if (write(fd, msg, sizeof msg - 1) < 0) { /* nothing more to do */ }
        evutil_closesocket(fd);
        return NULL;
    }
    struct client *c = calloc(1, sizeof *c);
    if (!c || io_conn_open(&c->io, &w->loop, fd, &client_handlers, c) < 0) {
        if (!c)
            evutil_closesocket(fd);
        free(c);
        __atomic_sub_fetch(&p->nclients, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    c->worker = w;
    c->io.bytes = &w->stats.clients;
    /* one command must fit whole in the input: up to the query buffer limit */
    c->io.rmax = (size_t)w->cfg->client_query_buffer_limit + RESP_INLINE_MAX;
    c->id = __atomic_add_fetch(&p->next_client_id, 1, __ATOMIC_RELAXED);
    c->created = c->last_active = time(NULL);
    c->user = acl_default_user(w->snap->acl);
    c->user_snap = snapshot_ref(w->snap);
    c->authenticated = c->user->nopass && c->user->enabled;
    c->resp = RESP2;
    TAILQ_INIT(&c->queue);
    TAILQ_INIT(&c->held_back);
    sockaddr_format(sa, c->addr, sizeof c->addr);
    struct sockaddr_storage local;
    socklen_t llen = sizeof local;
    if (getsockname(fd, (struct sockaddr *)&local, &llen) == 0)
        sockaddr_format((struct sockaddr *)&local, c->laddr, sizeof c->laddr);
    if (sa->sa_family == AF_UNIX) {     /* the peer has no name: Redis shows the socket's */
        c->unix_socket = 1;
        memcpy(c->addr, c->laddr, sizeof c->addr);
    } else {                            /* as Redis's anetKeepAlive; 0: off */
        int idle = w->cfg->tcp_keepalive;
        io_tcp_keepalive(fd, idle, idle / 3 > 0 ? idle / 3 : 1, 3);
    }
    resp_parser_init(&c->parser, w->cfg->proto_max_bulk_len,
                     (size_t)w->cfg->client_query_buffer_limit);
    c->parser.unauthenticated = !c->authenticated;
    pthread_mutex_lock(&w->clients_lock);
    TAILQ_INSERT_TAIL(&w->clients, c, link);
    w->nclients++;
    pthread_mutex_unlock(&w->clients_lock);
    stat_inc(&w->stats.connections);
    return c;
}

void client_start_tls(struct client *c, struct ssl_ctx_st *ctx)
{
    SSL *ssl = SSL_new(ctx);
    if (!ssl || io_conn_start_tls(&c->io, ssl, 1) < 0)
        client_close(c, "cannot set up TLS (out of memory)");
}

