#include "cluster/node.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/base/assert.h"
#include "lib/base/hostport.h"
#include "lib/net/tls.h"
#include "lib/proto/resp.h"

uint64_t node_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)(ts.tv_nsec / 1000000);
}

/* ---- internal requests (AUTH, ASKING): their replies are consumed here ---- */

static void internal_free(struct node_req *r)
{
    free(r);
}

/* ASKING answers +OK; there is nothing to do with it. */
static void asking_reply(struct node_req *r, const struct reply_view *v,
                         const struct reply_scanner *s)
{
    (void)s;
    reply_view_drop(v);
    internal_free(r);
}

/* The login as opts->as_user holds: what waited goes out. */
static void gate_open(struct node_conn *c)
{
    if (!c->gated)
        return;
    size_t n = evbuffer_get_length(c->gated);
    if (n > 0) {
        io_out_add(&c->io, evbuffer_pullup(c->gated, -1), n);
        io_conn_want_write(&c->io);
    }
    evbuffer_free(c->gated);
    c->gated = NULL;
}

static void auth_reply(struct node_req *r, const struct reply_view *v,
                       const struct reply_scanner *s)
{
    struct node_conn *c = r->conn;
    reply_view_drop(v);
    internal_free(r);
    if (s->type == '-') {
        /* Nothing more goes out on this connection. What was written behind
         * the AUTH may still have run (a default user without a password
         * runs it): its replies are read, and only a NOAUTH proves a command
         * did not run (reply_hand). Only the error's code is shown: its
         * text may quote the password. */
        char code[32];
        reply_error_code(s->errline, code, sizeof code);
        if (c->opts->as_user)
            snprintf(c->refused_why, sizeof c->refused_why, "node %s refused the proxy's login "
                     "as node user %s (%s)%s", c->addr, c->opts->as_user, code,
                     c->opts->as_refused_hint ? c->opts->as_refused_hint : "");
        else
            snprintf(c->refused_why, sizeof c->refused_why, "node %s refused the proxy's "
                     "login (%s): check cluster-user and cluster-password", c->addr, code);
        c->refused_login = 1;
        if (c->ninflight == 0 || c->gated)
            node_conn_close(c, c->refused_why);     /* gated: none was written */
        return;
    }
    gate_open(c);
}

static void internal_fail(struct node_req *r, int may_have_run, const char *why)
{
    (void)may_have_run;
    (void)why;
    internal_free(r);
}

static void send_internal(struct node_conn *c, node_reply_fn *on_reply, int argc,
                          const char **argv)
{
    size_t few[8];
    size_t *lens = argc <= 8 ? few : malloc(sizeof *lens * (size_t)argc);
    struct node_req *r = calloc(1, sizeof *r);
    struct evbuffer *tmp = evbuffer_new();
    if (!r || !tmp || !lens) {
        free(r);
        if (tmp)
            evbuffer_free(tmp);
        if (lens != few)
            free(lens);
        /* a setup or login left out would run what follows as another user */
        node_conn_close(c, "out of memory");
        return;
    }
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    resp_add_command(tmp, argc, argv, lens);
    if (lens != few)
        free(lens);
    r->on_reply = on_reply;
    r->on_fail = internal_fail;
    size_t n = evbuffer_get_length(tmp);
    node_send(c, r, evbuffer_pullup(tmp, -1), n);
    evbuffer_free(tmp);
}

/* Set opts->as_user up and log in as it; what is sent after waits for that
 * AUTH (gate_open). */
static void login_as(struct node_conn *c, const struct node_opts *opts)
{
    if (opts->setup_argc > 0)
        send_internal(c, asking_reply, opts->setup_argc, opts->setup_argv);
    /* on RESP3 the last login says HELLO 3 again, so the protocol is what
     * the one that decides left it */
    const char *as3[] = { "HELLO", "3", "AUTH", opts->as_user, opts->as_password };
    const char *as2[] = { "AUTH", opts->as_user, opts->as_password };
    if (opts->resp3)
        send_internal(c, auth_reply, 5, as3);
    else
        send_internal(c, auth_reply, 3, as2);
    if (c->state == NODE_CLOSED)
        return;
    c->gated = evbuffer_new();
    if (!c->gated)
        node_conn_close(c, "out of memory");
}

/* The first command on a connection: AUTH when there is a password; on a
 * RESP3 connection HELLO 3, with the AUTH in it. Its error is a refused
 * login (auth_reply); HELLO's map is consumed there too. A connection as
 * another node user (opts->as_user) then sets that user up and logs in as
 * it, and only that last AUTH decides. */
static void node_login(struct node_conn *c, const struct node_opts *opts)
{
    const char *argv[5];
    int argc = 0;
    node_reply_fn *first_reply = opts->as_user ? asking_reply : auth_reply;
    if (opts->resp3) {
        argv[argc++] = "HELLO";
        argv[argc++] = "3";
        if (opts->password) {
            argv[argc++] = "AUTH";
            argv[argc++] = opts->user ? opts->user : "default";
            argv[argc++] = opts->password;
        }
    } else if (opts->password) {
        argv[argc++] = "AUTH";
        if (opts->user)
            argv[argc++] = opts->user;
        argv[argc++] = opts->password;
    }
    if (argc > 0)
        send_internal(c, first_reply, argc, argv);
    if (opts->as_user)
        login_as(c, opts);
}

void node_conn_login_as(struct node_conn *c, const struct node_opts *opts)
{
    c->opts = opts;
    login_as(c, opts);
}

void node_send_asking(struct node_conn *c)
{
    static const char asking[] = "*1\r\n$6\r\nASKING\r\n";
    node_send_prefix(c, asking, sizeof asking - 1);
}

void node_send_quiet(struct node_conn *c, int argc, const char **argv)
{
    ASSERT(argc >= 1 && argc <= 4);     /* its callers' commands: no more room */
    send_internal(c, asking_reply, argc > 4 ? 4 : argc, argv);
}

/* CLIENT ID's integer becomes the connection's node_id. */
static void client_id_reply(struct node_req *r, const struct reply_view *v,
                            const struct reply_scanner *s)
{
    struct node_conn *c = r->conn;
    char line[32] = "";
    if (s->type == ':' && v->len < sizeof line) {
        reply_view_copy(v, line, v->len);
        line[v->len] = '\0';
        __atomic_store_n(&c->node_id, strtoll(line + 1, NULL, 10), __ATOMIC_RELAXED);
    }
    asking_reply(r, v, s);
}

void node_conn_ask_id(struct node_conn *c)
{
    const char *argv[] = { "CLIENT", "ID" };
    send_internal(c, client_id_reply, 2, argv);
}

/* ---- counters (the owner's stats_nodes, when it has one) ---- */

#define NODE_COUNT(c, field) \
    do { if ((c)->opts->stats) stat_inc(&(c)->opts->stats->field); } while (0)

/* The connection moves from state `from` to `to` (NODE_CLOSED: gone). */
static void node_count_state(struct node_conn *c, enum node_state from, enum node_state to)
{
    struct stats_nodes *s = c->opts->stats;
    if (!s)
        return;
    if (from == NODE_CONNECTING)
        gauge_add(&s->connecting, -1);
    else if (from == NODE_READY)
        gauge_add(&s->ready, -1);
    if (to == NODE_CONNECTING)
        gauge_add(&s->connecting, 1);
    else if (to == NODE_READY)
        gauge_add(&s->ready, 1);
}

/* The one place a connection changes state, on the only moves there are:
 * connecting, then ready or closed; ready, then closed. */
static void node_state_set(struct node_conn *c, enum node_state to)
{
    ASSERT((c->state == NODE_CONNECTING && to != NODE_CONNECTING) ||
           (c->state == NODE_READY && to == NODE_CLOSED));
    node_count_state(c, c->state, to);
    c->state = to;
}

/* ---- timeouts ---- */

static void timer_arm(struct node_conn *c, uint64_t after_ms)
{
    struct timeval tv = { (time_t)(after_ms / 1000), (suseconds_t)((after_ms % 1000) * 1000) };
    evtimer_add(c->timer, &tv);
}

/* How often a silent request is looked at: a quarter of its timeout when
 * the owner can ask the node elsewhere (node.h), so that a PING has most
 * of the timeout to be answered; else at the timeout. */
static uint64_t check_every_ms(const struct node_conn *c)
{
    uint64_t timeout = (uint64_t)c->opts->timeout_ms;
    return c->on_silent && timeout / 4 ? timeout / 4 : timeout;
}

/* From when the oldest request's silence counts: its sending, the node's
 * last bytes on c, or its last answer elsewhere (none without on_silent). */
static uint64_t silent_since(const struct node_conn *c, const struct node_req *head)
{
    uint64_t since = head->sent_ms > c->last_read_ms ? head->sent_ms : c->last_read_ms;
    return since > c->alive_ms ? since : c->alive_ms;
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct node_conn *c = arg;
    char why[256];
    (void)fd;
    (void)what;
    if (c->state == NODE_CONNECTING) {
        snprintf(why, sizeof why, "cannot connect to node %s: timed out after %d ms",
                 c->addr, c->opts->connect_timeout_ms);
        NODE_COUNT(c, timeouts);
        c->timed_out = 1;
        node_conn_close(c, why);
        return;
    }
    struct node_req *head = TAILQ_FIRST(&c->inflight);
    if (!head)
        return;
    uint64_t timeout = (uint64_t)c->opts->timeout_ms, every = check_every_ms(c);
    uint64_t now = node_now_ms(), deadline, next;
    int ask = c->on_silent && now >= silent_since(c, head) + every;
    if (ask) {
        uint64_t answered = c->on_silent(c, c->down_arg);
        if (c->state == NODE_CLOSED)
            return;
        if (answered > c->alive_ms)
            c->alive_ms = answered;
    }
    uint64_t since = silent_since(c, head);
    if (c->on_silent) {
        /* only a node silent everywhere for timeout_ms (and a script's
         * grace) is given up on, whatever the request's own wait */
        deadline = since + timeout + head->busy_grace_ms;
        next = ask ? every : since + every - now;
        if (c->opts->slow_timeout_ms > 0 && head->wait_ms != NODE_WAIT_FOREVER &&
            head->sent_ms + (uint64_t)c->opts->slow_timeout_ms + head->wait_ms <= now) {
            snprintf(why, sizeof why, "node %s held the command past slow-command-timeout-ms "
                     "(%d ms) while it answered elsewhere (a busy script?)", c->addr,
                     c->opts->slow_timeout_ms);
            NODE_COUNT(c, timeouts);
            node_conn_close(c, why);
            return;
        }
    } else {
        deadline = head->wait_ms == NODE_WAIT_FOREVER ? UINT64_MAX : since + timeout + head->wait_ms;
        next = timeout;
    }
    if (now >= deadline) {
        snprintf(why, sizeof why, "node %s did not answer within %d ms", c->addr,
                 c->opts->timeout_ms);
        NODE_COUNT(c, timeouts);
        c->timed_out = 1;
        node_conn_close(c, why);
        return;
    }
    timer_arm(c, deadline - now < next ? deadline - now : next);
}

/* Keepalive probes after about timeout_ms of silence, a second apart: a
 * connection to a host that is gone ends instead of waiting forever. */
static void keepalive_set(int fd, int timeout_ms)
{
    io_tcp_keepalive(fd, timeout_ms / 1000 > 0 ? timeout_ms / 1000 : 1, 1, 3);
}

/* ---- write batching ---- */

void node_conn_batch(struct node_conn *c, int window)
{
    c->batch_window = window < 0 ? 0 : window > NODE_BATCHES_MAX ? NODE_BATCHES_MAX : window;
}

static int *batch_at(struct node_conn *c, int i)
{
    return &c->batch[(c->batch_first + i) % NODE_BATCHES_MAX];
}

/* A request was queued: it joins the batch this round writes, starts a new
 * one if the window has room, or waits. 1: have the output written. */
static int batch_add(struct node_conn *c)
{
    if (c->batch_window == 0)
        return 1;
    if (c->nheld == 0 && c->nbatches > 0 && c->io.dirty) {
        (*batch_at(c, c->nbatches - 1))++;      /* not written yet: same write */
        return 1;
    }
    if (c->nheld == 0 && c->nbatches < c->batch_window) {
        *batch_at(c, c->nbatches++) = 1;
        NODE_COUNT(c, batches);
        return 1;
    }
    c->nheld++;
    return 0;
}

/* The oldest request in flight got its last reply. When that ends the
 * oldest batch, what waited leaves as the next one. */
static void batch_answered(struct node_conn *c)
{
    if (c->batch_window == 0 || c->nbatches == 0 || --(*batch_at(c, 0)) > 0)
        return;
    c->batch_first = (c->batch_first + 1) % NODE_BATCHES_MAX;
    c->nbatches--;
    if (c->nheld > 0) {
        *batch_at(c, c->nbatches++) = c->nheld;
        c->nheld = 0;
        NODE_COUNT(c, batches);
        io_conn_want_write(&c->io);
    }
}

/* ---- replies ---- */

/* NOAUTH: the node did not run the command (the connection is not logged in). */
static int reply_is_noauth(const struct reply_scanner *s)
{
    return s->type == '-' && strncmp(s->errline, "NOAUTH", 6) == 0 &&
           (s->errline[6] == ' ' || s->errline[6] == '\0');
}

/* Hand the oldest request its reply. */
static void reply_hand(struct node_conn *c, const struct reply_view *v)
{
    struct node_req *r = TAILQ_FIRST(&c->inflight);
    if (!r || c->scan.type == '>') {
        /* a RESP3 push is never a request's reply: out of band, to on_push
         * or, where nobody subscribed on this connection, dropped */
        if (c->on_push)
            c->on_push(c, v, &c->scan, c->push_arg);
        else
            reply_view_drop(v);
        reply_scanner_init(&c->scan);
        return;
    }
    if (r->prefixed > 0) {          /* a command node_send_prefix put before it */
        r->prefixed--;
        reply_view_drop(v);
        reply_scanner_init(&c->scan);
        return;
    }
    if (r->extra_replies > 0) {     /* a reply inside a transaction block */
        r->extra_replies--;
        r->had_parts = 1;
        r->on_part(r, v, &c->scan);
        reply_scanner_init(&c->scan);
        return;
    }
    TAILQ_REMOVE(&c->inflight, r, link);
    c->ninflight--;
    c->nanswered++;
    r->answered = 1;
    batch_answered(c);
    if (c->refused_login && !r->had_parts && reply_is_noauth(&c->scan)) {
        /* its command did not run: the request may go again elsewhere (a
         * block whose parts were handed on is answered as it is) */
        reply_view_drop(v);
        reply_scanner_init(&c->scan);
        r->conn = NULL;
        r->on_fail(r, 0, c->refused_why);
        return;
    }
    r->on_reply(r, v, &c->scan);
    reply_scanner_init(&c->scan);
}

static void protocol_broken(struct node_conn *c, const char *what)
{
    char why[160];
    snprintf(why, sizeof why, "node %s broke the protocol (%s)", c->addr, what);
    node_conn_close(c, why);
}

/* A size for messages: "512mb", "1kb", else bytes. */
static void size_text(char *out, size_t size, unsigned long long n)
{
    if (n >= 1024 * 1024 && n % (1024 * 1024) == 0)
        snprintf(out, size, "%llumb", n / (1024 * 1024));
    else if (n >= 1024 && n % 1024 == 0)
        snprintf(out, size, "%llukb", n / 1024);
    else
        snprintf(out, size, "%llu bytes", n);
}

/* The reply in progress has passed a bound (a bulk longer than
 * proto-max-bulk-len, or more bytes than its client may be sent): it is not
 * buffered whole; the connection is reset, which fails what is in flight.
 * 1 when it did. Checked before the scanned bytes are kept, as soon as the
 * header that passes a bound is read. */
static int reply_over_bound(struct node_conn *c)
{
    struct node_req *head = TAILQ_FIRST(&c->inflight);
    size_t limit = head ? head->reply_max : c->push_max;
    long long max_bulk = c->opts->max_bulk_len;
    char why[REPLY_ERRLINE_MAX], size[32];
    if (max_bulk > 0 && c->scan.bulk_max > max_bulk) {
        size_text(size, sizeof size, (unsigned long long)max_bulk);
        snprintf(why, sizeof why, "the reply from node %s is longer than proto-max-bulk-len "
                 "(%s): the proxy reset its connection to the node", c->addr, size);
    } else if (limit > 0 && c->scan.len > limit) {
        size_text(size, sizeof size, (unsigned long long)limit);
        snprintf(why, sizeof why, "the reply from node %s is larger than the client's output "
                 "buffer hard limit (%s): the proxy reset its connection to the node",
                 c->addr, size);
    } else {
        return 0;
    }
    node_conn_close(c, why);
    return 1;
}

/* Replies are scanned where they lie in the input; one not yet whole is
 * moved to c->partial so the input never has to hold a big reply. */
static void read_cb(struct io_conn *io, void *arg)
{
    struct node_conn *c = arg;
    c->last_read_ms = node_now_ms();
    while (c->state != NODE_CLOSED) {
        size_t have;
        const char *data = io_input(io, &have);
        enum reply_scan_status st;
        if (have == 0)
            break;
        size_t took = reply_scan(&c->scan, data, have, &st);
        if (st == REPLY_SCAN_ERROR) {
            protocol_broken(c, "malformed reply");
            return;
        }
        if (st == REPLY_SCAN_DONE && TAILQ_EMPTY(&c->inflight) && !c->on_push &&
            c->scan.type != '>') {
            protocol_broken(c, "reply to no request");
            return;
        }
        if (reply_over_bound(c))
            return;
        io_consume(io, took);       /* only offsets: data stays valid */
        if (st == REPLY_SCAN_MORE) {
            evbuffer_add(c->partial, data, took);
        } else if (evbuffer_get_length(c->partial) == 0) {
            struct reply_view v = { NULL, data, took };
            reply_hand(c, &v);
        } else {
            evbuffer_add(c->partial, data, took);
            struct reply_view v = { c->partial, NULL, evbuffer_get_length(c->partial) };
            reply_hand(c, &v);
        }
    }
    if (c->retiring && c->ninflight == 0 && c->state != NODE_CLOSED)
        node_conn_close(c, "the node is no longer a master");
    if (c->refused_login && c->ninflight == 0 && c->state != NODE_CLOSED)
        node_conn_close(c, c->refused_why);
}

void node_conn_retire(struct node_conn *c)
{
    c->retiring = 1;
    if (c->ninflight == 0)
        node_conn_close(c, "the node is no longer a master");
}

static void connected_cb(struct io_conn *io, void *arg)
{
    struct node_conn *c = arg;
    (void)io;
    node_state_set(c, NODE_READY);
    c->was_up = 1;
    /* everything queued while connecting is written now, as one batch */
    if (c->batch_window > 0 && c->ninflight > 0) {
        c->batch_first = 0;
        c->batch[0] = c->ninflight;
        c->nbatches = 1;
        c->nheld = 0;
    }
    evtimer_del(c->timer);
    if (!TAILQ_EMPTY(&c->inflight))
        timer_arm(c, check_every_ms(c));
}

static void error_cb(struct io_conn *io, int err, void *arg)
{
    struct node_conn *c = arg;
    char why[256];
    (void)io;
    if (err == 0)
        snprintf(why, sizeof why, "node %s closed the connection", c->addr);
    else if (err == EPROTO && c->io.ssl)
        snprintf(why, sizeof why, "TLS error with node %s: %s", c->addr, io_tls_error());
    else
        snprintf(why, sizeof why, "%s node %s: %s",
                 c->state == NODE_CONNECTING ? "cannot connect to" : "connection error with",
                 c->addr, strerror(err));
    node_conn_close(c, why);
}

static void drained_cb(struct io_conn *io, void *arg)
{
    struct node_conn *c = arg;
    (void)io;
    if (c->on_drained)
        c->on_drained(c, c->down_arg);
}

static const struct io_handlers node_handlers = {
    .on_read = read_cb,
    .on_drained = drained_cb,
    .on_connected = connected_cb,
    .on_error = error_cb,
};

static int node_start_tls(struct node_conn *c)
{
    char *host = NULL;
    int port;
    if (hostport_parse(c->addr, &host, &port) < 0)
        return -1;
    SSL *ssl = tls_cluster_ssl(c->opts->tls, c->opts->tls_server_name, host,
                               c->opts->tls_insecure);
    free(host);
    return ssl ? io_conn_start_tls(&c->io, ssl, 0) : -1;
}

struct node_conn *node_conn_new(struct io_loop *loop, const char *addr,
                                const struct sockaddr *sa, socklen_t salen,
                                const struct node_opts *opts)
{
    struct node_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->base = loop->base;
    c->opts = opts;
    c->state = NODE_CONNECTING;
    snprintf(c->addr, sizeof c->addr, "%s", addr);
    TAILQ_INIT(&c->inflight);
    reply_scanner_init(&c->scan);
    c->timer = evtimer_new(c->base, timer_cb, c);
    c->partial = evbuffer_new();
    if (!c->timer || !c->partial ||
        io_conn_connect(&c->io, loop, sa, salen, &node_handlers, c) < 0) {
        if (c->timer)
            event_free(c->timer);
        if (c->partial)
            evbuffer_free(c->partial);
        free(c);
        return NULL;
    }
    if (opts->stats)
        c->io.bytes = &opts->stats->bytes;
    keepalive_set(c->io.fd, opts->timeout_ms);
    NODE_COUNT(c, connects);
    node_count_state(c, NODE_CLOSED, NODE_CONNECTING);
    if (opts->tls && node_start_tls(c) < 0) {
        node_conn_close(c, "cannot set up TLS (out of memory)");
        return c;
    }
    timer_arm(c, (uint64_t)opts->connect_timeout_ms);
    node_login(c, opts);
    return c;
}

void node_send_prefix(struct node_conn *c, const char *bytes, size_t len)
{
    if (c->state == NODE_CLOSED || c->refused_login)
        return;                 /* the request fails as it is sent */
    if (c->gated) {
        if (evbuffer_add(c->gated, bytes, len) < 0)
            node_conn_close(c, "out of memory");
    } else {
        io_out_add(&c->io, bytes, len);
    }
    c->prefix_pending++;
    c->prefix_bytes += len;
}

void node_send(struct node_conn *c, struct node_req *r, const void *bytes, size_t len)
{
    size_t prefix = c->prefix_bytes;
    r->prefixed = c->prefix_pending;
    c->prefix_pending = 0;
    c->prefix_bytes = 0;
    if (c->state == NODE_CLOSED || c->refused_login) {
        char why[200];
        snprintf(why, sizeof why, "cannot connect to node %s", c->addr);
        r->on_fail(r, 0, c->refused_login ? c->refused_why : why);
        return;
    }
    r->conn = c;
    r->answered = 0;
    r->had_parts = 0;
    r->len = prefix + len;
    r->sent_ms = node_now_ms();
    if (TAILQ_EMPTY(&c->inflight) && c->state == NODE_READY)
        timer_arm(c, check_every_ms(c));
    TAILQ_INSERT_TAIL(&c->inflight, r, link);
    c->ninflight++;
    c->nsent++;
    if (c->gated) {
        if (evbuffer_add(c->gated, bytes, len) < 0)
            node_conn_close(c, "out of memory");
        return;
    }
    io_out_add(&c->io, bytes, len);
    if (batch_add(c))
        io_conn_want_write(&c->io);
}

int node_send_raw(struct node_conn *c, const void *bytes, size_t len)
{
    if (c->state == NODE_CLOSED || c->refused_login || c->gated)
        return -1;
    io_out_add(&c->io, bytes, len);
    io_conn_want_write(&c->io);
    return 0;
}

static void free_later_cb(evutil_socket_t fd, short what, void *arg)
{
    struct node_conn *c = arg;
    (void)fd;
    (void)what;
    if (c->ext_free)
        c->ext_free(c->ext);
    evbuffer_free(c->partial);
    free(c);
}

void node_conn_close(struct node_conn *c, const char *why)
{
    if (c->state == NODE_CLOSED)
        return;
    int never_connected = c->state == NODE_CONNECTING;
    /* bytes still in our output buffer (or held for the login) never
     * reached the node */
    size_t unsent = io_conn_pending(&c->io);
    if (c->gated) {
        unsent += evbuffer_get_length(c->gated);
        evbuffer_free(c->gated);
        c->gated = NULL;
    }
    if (c->state == NODE_CONNECTING)
        NODE_COUNT(c, connect_failures);
    else
        NODE_COUNT(c, closed);
    node_state_set(c, NODE_CLOSED);
    io_conn_close(&c->io);
    event_free(c->timer);
    c->timer = NULL;

    /* Requests are written in FIFO order, so the bytes that left us are the
     * first (queued - unsent) ones. A request wholly within them may have
     * run; one that was cut or never written cannot have. */
    TAILQ_HEAD(, node_req) failed = TAILQ_HEAD_INITIALIZER(failed);
    TAILQ_CONCAT(&failed, &c->inflight, link);
    c->ninflight = 0;
    struct node_req *r;
    size_t queued = 0;
    TAILQ_FOREACH(r, &failed, link)
        queued += r->len;
    size_t written = never_connected ? 0 : queued - (unsent < queued ? unsent : queued);
    while ((r = TAILQ_FIRST(&failed)) != NULL) {
        TAILQ_REMOVE(&failed, r, link);
        r->conn = NULL;
        int may_have_run = written >= r->len;
        written = written > r->len ? written - r->len : 0;
        r->on_fail(r, may_have_run, why);
    }
    c->down_why = why;
    if (c->on_down)
        c->on_down(c, c->down_arg);
    c->down_why = NULL;
    event_base_once(c->base, -1, EV_TIMEOUT, free_later_cb, c, NULL);
}
