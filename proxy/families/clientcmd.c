/*
 * clientcmd: CLIENT and its subcommands, about this proxy's clients. See
 * clientcmd.h.
 */
#include "proxy/families/clientcmd.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster/learned.h"
#include "proxy/config/acl.h"
#include "proxy/config/snapshot.h"
#include "proxy/core/client.h"
#include "proxy/core/proxy.h"
#include "proxy/core/merge.h"
#include "proxy/core/request.h"
#include "proxy/core/route.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "proxy/families/dedicated.h"
#include "proxy/families/txclass.h"
#include "lib/proto/errors.h"
#include "lib/proto/resp.h"

/* CLIENT LIST's flags: the ones this proxy has, in Redis's order; N: none. */
static void flags_of(const struct client *c, const struct client_counts *n, char *buf)
{
    char *p = buf;
    if (n->monitor)
        *p++ = 'O';
    else if (n->sub + n->psub + n->ssub > 0)
        *p++ = 'P';
    if (n->multi >= 0)
        *p++ = 'x';
    if (n->blocked)
        *p++ = 'b';
    if (n->tracking)
        *p++ = 't';
    if (n->tracking_broken)
        *p++ = 'R';
    if (n->tracking_bcast)
        *p++ = 'B';
    if (c->unix_socket)
        *p++ = 'U';
    if (p == buf)
        *p++ = 'N';
    *p = '\0';
}

/*
 * A client's line, with the fields the cluster's server writes: Redis
 * 7.0's, then lib-name and lib-ver where it knows CLIENT SETINFO (7.2),
 * watch (Redis 7.4, Valkey 8.0), io-thread (Redis 8.0), and Valkey 8.0's
 * tot-net-in, tot-net-out and tot-cmds.
 */
/* Append to buf (len bytes, used of them taken) as snprintf writes, cut
 * at its end: the bytes taken now. */
__attribute__((format(printf, 4, 5)))
static size_t line_add(char *buf, size_t len, size_t used, const char *fmt, ...)
{
    va_list ap;
    if (used >= len)
        return used;
    va_start(ap, fmt);
    int n = vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
    return n < 0 ? used : used + (size_t)n < len ? used + (size_t)n : len - 1;
}

void clientcmd_describe(const struct client *c, char *buf, size_t len)
{
    time_t now = time(NULL);
    const struct topology_server *server = worker_server(c->worker);
    int valkey8 = topology_server_since(server, "valkey", "8.0.0");
    struct client_counts n;
    char flags[8];
    client_counts(c, &n);
    flags_of(c, &n, flags);
    size_t used = line_add(buf, len, 0,
             "id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld flags=%s db=0 "
             "sub=%d psub=%d ssub=%d multi=%d",
             (unsigned long long)c->id, c->addr, c->laddr,
             c->io.fd, c->name ? c->name : "",
             (long long)(now - c->created), (long long)(now - c->last_active),
             flags, n.sub, n.psub, n.ssub, n.multi);
    if (valkey8 || topology_server_since(server, "redis", "7.4.0"))
        used = line_add(buf, len, used, " watch=%d", n.watched_keys);
    used = line_add(buf, len, used,
             " qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 "
             "rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=%zu events=r cmd=%s user=%s "
             "redir=%lld resp=%d",
             client_mem_of(c), c->lastcmd ? c->lastcmd : "NULL",
             c->user ? c->user->name : "default", n.tracking_redirect, (int)c->resp);
    if (learned_find(c->worker->topo->learned, "client|setinfo", 14))
        used = line_add(buf, len, used, " lib-name=%s lib-ver=%s",
                        c->lib_name ? c->lib_name : "", c->lib_ver ? c->lib_ver : "");
    if (topology_server_since(server, "redis", "8.0.0"))
        used = line_add(buf, len, used, " io-thread=0");
    if (valkey8)
        line_add(buf, len, used, " tot-net-in=%llu tot-net-out=%llu tot-cmds=%llu",
                 (unsigned long long)__atomic_load_n(&c->io.total_in, __ATOMIC_RELAXED),
                 (unsigned long long)__atomic_load_n(&c->io.total_out, __ATOMIC_RELAXED),
                 (unsigned long long)__atomic_load_n(&c->commands, __ATOMIC_RELAXED));
}

static int name_valid(const char *name, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (name[i] < '!' || name[i] > '~')
            return 0;
    return 1;
}

int clientcmd_set_name(struct request *r, int i)
{
    size_t len;
    const char *name = request_arg(r, i, &len);
    struct client *c = r->client;
    if (!name_valid(name, len)) {
        request_fail(r, "ERR Client names cannot contain spaces, newlines or special characters.");
        return -1;
    }
    char *copy = len ? strndup(name, len) : NULL;
    pthread_mutex_lock(&r->worker->clients_lock);
    free(c->name);
    c->name = copy;
    pthread_mutex_unlock(&r->worker->clients_lock);
    return 0;
}

/* CLIENT LIST's TYPE: whether c is of that kind (Redis's getClientTypeByName
 * names; the proxy's clients are never masters or replicas). */
enum client_kind { KIND_ANY, KIND_NORMAL, KIND_PUBSUB, KIND_NONE };

static int kind_is(const struct client *c, enum client_kind kind)
{
    struct client_counts n;
    if (kind == KIND_ANY)
        return 1;
    client_counts(c, &n);
    int pubsub = n.sub + n.psub + n.ssub > 0;
    return kind == KIND_PUBSUB ? pubsub : kind == KIND_NORMAL ? !pubsub : 0;
}

/* Every live client of kind (id 0) or the one whose id is id, one line each. */
static void lines_of(struct request *r, struct evbuffer *text, enum client_kind kind,
                         uint64_t id)
{
    struct proxy *p = r->worker->proxy;
    char line[1024];
    for (int i = 0; i < p->nworkers; i++) {
        struct worker *w = &p->workers[i];
        struct client *c;
        pthread_mutex_lock(&w->clients_lock);
        TAILQ_FOREACH(c, &w->clients, link)
            if (c->state != CLIENT_GONE && (id ? c->id == id : kind_is(c, kind))) {
                clientcmd_describe(c, line, sizeof line);
                evbuffer_add_printf(text, "%s\n", line);
            }
        pthread_mutex_unlock(&w->clients_lock);
    }
}

/* CLIENT LIST and INFO: text, verbatim in RESP3 as Redis writes it. */
static void reply_text(struct request *r, struct evbuffer *text)
{
    size_t len = evbuffer_get_length(text);
    resp_add_verbatim(request_out(r), request_resp(r), (const char *)evbuffer_pullup(text, -1), len);
    evbuffer_free(text);
    request_finish(r);
}

/* CLIENT LIST's or KILL's TYPE argument i; -1 after Redis's error for a
 * name it does not know. */
static int kind_arg(struct request *r, int i)
{
    if (request_arg_is(r, i, "normal"))
        return KIND_NORMAL;
    if (request_arg_is(r, i, "pubsub"))
        return KIND_PUBSUB;
    if (request_arg_is(r, i, "master") || request_arg_is(r, i, "replica") || request_arg_is(r, i, "slave"))
        return KIND_NONE;
    size_t len;
    const char *t = request_arg(r, i, &len);
    char msg[200];
    snprintf(msg, sizeof msg, "ERR Unknown client type '%.*s'", (int)(len < 128 ? len : 128), t);
    request_fail(r, msg);
    return -1;
}

/* CLIENT LIST [TYPE type | ID id ...], with Redis's rules and errors. */
static void cmd_list(struct request *r)
{
    int by_type = r->argc == 4 && request_arg_is(r, 2, "type");
    int by_id = r->argc > 3 && request_arg_is(r, 2, "id");
    int kind = KIND_ANY;
    long long id;
    if (r->argc != 2 && !by_type && !by_id) {
        request_fail(r, "ERR syntax error");
        return;
    }
    if (by_type && (kind = kind_arg(r, 3)) < 0)
        return;
    for (int i = 3; by_id && i < r->argc; i++)      /* all checked first, as Redis does */
        if (request_arg_ll(r, i, &id) < 0) {
            request_fail(r, "ERR Invalid client ID");
            return;
        }
    struct evbuffer *text = evbuffer_new();
    if (!by_id)
        lines_of(r, text, (enum client_kind)kind, 0);
    for (int i = 3; by_id && i < r->argc; i++)      /* in the order asked, repeats too */
        if (request_arg_ll(r, i, &id) == 0 && id > 0)
            lines_of(r, text, KIND_ANY, (uint64_t)id);
    reply_text(r, text);
}

/* CLIENT KILL's filters (Redis 7.0's): the old form names one address. */
struct kill_filter {
    uint64_t id;                    /* 0: any */
    int kind;                       /* enum client_kind */
    const char *addr, *laddr, *user;
    size_t addr_len, laddr_len, user_len;
    int skipme;
};

static int field_is(const char *field, const char *s, size_t len)
{
    return !s || (strlen(field) == len && memcmp(field, s, len) == 0);
}

static int kill_matches(const struct kill_filter *f, const struct client *c,
                        const struct client *me)
{
    return c->state != CLIENT_GONE && !c->kill_pending && !(f->skipme && c == me) &&
           (!f->id || c->id == f->id) && kind_is(c, (enum client_kind)f->kind) &&
           field_is(c->addr, f->addr, f->addr_len) && field_is(c->laddr, f->laddr, f->laddr_len) &&
           field_is(c->user ? c->user->name : "default", f->user, f->user_len);
}

/* 0 and f, or -1 after the error Redis answers. */
static int kill_filter_parse(struct request *r, struct kill_filter *f)
{
    char msg[200];
    size_t len;
    memset(f, 0, sizeof *f);
    if (r->argc == 3) {                 /* CLIENT KILL addr:port, itself too */
        f->addr = request_arg(r, 2, &f->addr_len);
        return 0;
    }
    f->skipme = 1;
    for (int i = 2; i < r->argc; i += 2) {
        const char *v = i + 1 < r->argc ? request_arg(r, i + 1, &len) : NULL;
        long long id;
        if (!v) {
            request_fail(r, "ERR syntax error");
            return -1;
        } else if (request_arg_is(r, i, "id")) {
            if (request_arg_ll(r, i + 1, &id) < 0 || id <= 0) {
                request_fail(r, "ERR client-id should be greater than 0");
                return -1;
            }
            f->id = (uint64_t)id;
        } else if (request_arg_is(r, i, "type")) {
            if ((f->kind = kind_arg(r, i + 1)) < 0)
                return -1;
        } else if (request_arg_is(r, i, "addr")) {
            f->addr = v, f->addr_len = len;
        } else if (request_arg_is(r, i, "laddr")) {
            f->laddr = v, f->laddr_len = len;
        } else if (request_arg_is(r, i, "user")) {
            if (!acl_user_named(r->worker->snap->acl, v, len)) {
                snprintf(msg, sizeof msg, "ERR No such user '%.*s'", (int)(len < 128 ? len : 128), v);
                request_fail(r, msg);
                return -1;
            }
            f->user = v, f->user_len = len;
        } else if (request_arg_is(r, i, "skipme") && (request_arg_is(r, i + 1, "yes") || request_arg_is(r, i + 1, "no"))) {
            f->skipme = request_arg_is(r, i + 1, "yes");
        } else {
            request_fail(r, "ERR syntax error");
            return -1;
        }
    }
    return 0;
}

/*
 * CLIENT KILL: the proxy's clients that match, on every worker. A client of
 * another worker is marked and closed on its own thread (worker_post_kill);
 * the caller itself, after this reply.
 */
static void cmd_kill(struct request *r)
{
    struct proxy *p = r->worker->proxy;
    struct kill_filter f;
    int killed = 0, self = 0;
    if (kill_filter_parse(r, &f) < 0)
        return;
    for (int i = 0; i < p->nworkers; i++) {
        struct worker *w = &p->workers[i];
        struct client *c;
        int marked = 0;
        pthread_mutex_lock(&w->clients_lock);
        TAILQ_FOREACH(c, &w->clients, link)
            if (kill_matches(&f, c, r->client)) {
                killed++;
                if (c == r->client)
                    self = 1;
                else
                    c->kill_pending = CLIENT_KILL_COMMAND, marked = 1;
            }
        pthread_mutex_unlock(&w->clients_lock);
        if (marked && w == r->worker)
            client_close_killed(w);
        else if (marked)
            worker_post_kill(w);
    }
    if (r->argc != 3)
        resp_add_integer(request_out(r), killed);
    else if (killed)
        resp_add_simple(request_out(r), "OK");
    else {
        request_fail(r, "ERR No such client");
        return;
    }
    request_finish(r);
    if (self)
        client_close_after_replies(r->client);
}

/*
 * CLIENT REPLY ON|OFF|SKIP. A request's `silent` is set as it starts to run,
 * from the mode its predecessors left (client_reply_mode_take), so only this
 * command's own reply is decided here: ON answers OK, OFF and SKIP nothing.
 */
static void cmd_reply_mode(struct request *r)
{
    struct client *c = r->client;
    if (request_arg_is(r, 2, "on")) {
        c->reply_off = 0;
        c->reply_skip_next = 0;
        r->silent = 0;
        resp_add_simple(request_out(r), "OK");
    } else if (request_arg_is(r, 2, "off")) {
        c->reply_off = 1;
        r->silent = 1;
    } else if (request_arg_is(r, 2, "skip")) {
        c->reply_skip_next = !c->reply_off;
        r->silent = 1;
    } else {
        request_fail(r, "ERR syntax error");
        return;
    }
    request_finish(r);
}

/*
 * CLIENT UNBLOCK id [TIMEOUT|ERROR]. A blocked command waits on a dedicated
 * node connection (dedicated.h), so it is the node that unblocks it, by
 * that connection's client ID there; the node's answer to the blocked
 * command then reaches its client like any reply.
 *
 * The proxy shows a client blocked from the moment it runs the client's
 * blocking command (client_counts: blocked), which may be before the node
 * has read it: the node then answers 0. So while the client stays blocked,
 * the unblock is tried again (1 ms, doubling to 16 ms, for node-timeout-ms
 * at most) until the node unblocks it (1) or the command ends by itself
 * (0: it did not block, as on one server when it came first). A client
 * that blocks on nothing gets 0 at once, as from Redis.
 */
#define UNBLOCK_TARGETS_MAX 16
#define UNBLOCK_DELAY_MAX_MS 16

struct unblock {
    struct request *r;              /* the client's CLIENT UNBLOCK */
    long long id;
    const char *reason;
    uint64_t deadline_ms;
    int delay_ms;
    int answer;                     /* -1 while undecided */
    struct request *spent;          /* the last attempt, freed on the next step */
    struct event *step;
};

/* What unblock_targets finds of the client (client_with_id). */
struct unblock_found {
    struct dedicated_target *targets;
    uint64_t hold_until;
    int blocked, n;
};

static void unblock_found(struct client *c, void *arg)
{
    struct unblock_found *f = arg;
    struct client_counts counts;
    client_counts(c, &counts);
    f->blocked = counts.blocked;
    f->n = dedicated_targets(c, f->targets, UNBLOCK_TARGETS_MAX, f->hold_until);
}

/* Where the proxy's client `id`, of any worker, may be blocked (those
 * connections held until hold_until: dedicated_targets), and whether it
 * is blocked now. */
static int unblock_targets(struct proxy *p, long long id, struct dedicated_target *targets,
                           uint64_t hold_until, int *blocked)
{
    struct unblock_found f = { targets, hold_until, 0, 0 };
    if (id > 0)
        client_with_id(p, (uint64_t)id, unblock_found, &f);
    *blocked = f.blocked;
    return f.n;
}

/* The next step of u: now (decided), or after its delay (another try). */
static void unblock_next(struct unblock *u, int answer)
{
    u->answer = answer;
    if (answer >= 0) {
        event_active(u->step, EV_TIMEOUT, 1);
        return;
    }
    struct timeval tv = { 0, u->delay_ms * 1000 };
    u->delay_ms = u->delay_ms * 2 > UNBLOCK_DELAY_MAX_MS ? UNBLOCK_DELAY_MAX_MS : u->delay_ms * 2;
    evtimer_add(u->step, &tv);
}

/* CLIENT UNBLOCK on the nodes a client may be blocked on: one of them
 * unblocked it, or none could (an error is worth telling only then). */
static void merge_any_one_run(struct request *p, struct evbuffer *out)
{
    struct request *err = merge_first_error(p);
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (len >= 4 && memcmp(b, ":1\r\n", 4) == 0) {
            resp_add_integer(out, 1);
            return;
        }
    }
    if (err)
        merge_add_part_reply(out, err);
    else
        resp_add_integer(out, 0);
}

static const struct merge merge_any_one = { merge_any_one_run, 1 };


static void unblock_freed(struct request *r, void *state)
{
    struct unblock *u = state;
    (void)r;
    if (u->spent)
        request_free(u->spent);
    event_free(u->step);
    free(u);
}

/* A CLIENT UNBLOCK's state, freed with it. */
static const struct request_family unblock_family = { unblock_freed };

/* An attempt's nodes answered (&merge_any_one: :1 when one unblocked it). */
static void attempt_answered(struct request *q)
{
    struct unblock *u = request_family_state(q->waiter, &unblock_family);
    char head[3] = "";
    q->on_done = NULL;
    u->spent = q;               /* freed by the next step: its parts' callers still run */
    if (q->reply)
        evbuffer_copyout(q->reply, head, 2);
    unblock_next(u, memcmp(head, ":1", 2) == 0 ? 1 : -1);
}

/* Ask the nodes where u's client blocks to unblock it. */
static void unblock_attempt(struct unblock *u)
{
    struct worker *w = u->r->worker;
    struct dedicated_target targets[UNBLOCK_TARGETS_MAX];
    int blocked;
    uint64_t now = node_now_ms();
    int n = unblock_targets(w->proxy, u->id, targets, now + (uint64_t)w->cfg->node_timeout_ms,
                            &blocked);
    if (!blocked || now >= u->deadline_ms) {
        unblock_next(u, 0);
        return;
    }
    struct request *q = n > 0 ? request_new(w) : NULL;
    if (!q || router_parts_open(q, &merge_any_one, n) < 0) {
        if (q)
            request_free(q);
        unblock_next(u, -1);    /* its node connection's ID not known yet, or no memory */
        return;
    }
    q->detached = 1;
    q->waiter = u->r;
    q->on_done = attempt_answered;
    for (int k = 0; k < n; k++) {
        int node = topology_find(w->topo, targets[k].addr);
        char idbuf[24];
        snprintf(idbuf, sizeof idbuf, "%lld", targets[k].node_id);
        const char *argv[] = { "CLIENT", "UNBLOCK", idbuf, u->reason };
        size_t lens[] = { 6, 7, strlen(idbuf), strlen(u->reason) };
        if (node >= 0)          /* else a node this worker no longer knows: left out */
            router_part_send(q, node, 4, argv, lens);
    }
    request_parts_sent(q);
}

static void unblock_step_cb(evutil_socket_t fd, short what, void *arg)
{
    struct unblock *u = arg;
    (void)fd;
    (void)what;
    if (u->spent) {
        request_free(u->spent);
        u->spent = NULL;
    }
    if (u->answer < 0) {
        unblock_attempt(u);
        return;
    }
    resp_add_integer(request_out(u->r), u->answer);
    request_finish(u->r);       /* which may free u (unblock_freed) */
}

static void cmd_unblock(struct request *r)
{
    const char *reason = "TIMEOUT";
    long long id;
    if (r->argc > 4) {
        request_fail(r, "ERR unknown subcommand or wrong number of arguments for 'unblock'. "
                        "Try CLIENT HELP.");
        return;
    }
    if (r->argc == 4 && request_arg_is(r, 3, "error"))
        reason = "ERROR";
    else if (r->argc == 4 && !request_arg_is(r, 3, "timeout")) {
        request_fail(r, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
        return;
    }
    if (request_arg_ll(r, 2, &id) < 0) {
        request_fail(r, "ERR value is not an integer or out of range");
        return;
    }
    struct unblock *u = calloc(1, sizeof *u);
    if (u)
        u->step = evtimer_new(r->worker->base, unblock_step_cb, u);
    if (!u || !u->step) {
        free(u);
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    *u = (struct unblock){ .r = r, .id = id, .reason = reason, .delay_ms = 1, .answer = -1,
                           .step = u->step,
                           .deadline_ms = node_now_ms() + (uint64_t)r->worker->cfg->node_timeout_ms };
    request_family_set(r, &unblock_family, u);
    unblock_attempt(u);
}

static void cmd_help(struct request *r)
{
    static const char *const help[] = {
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CACHING (YES|NO)",
        "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
        "GETREDIR", "    Return the client ID we are redirecting to when tracking is enabled.",
        "GETNAME", "    Return the name of the current connection.",
        "ID", "    Return the ID of the current connection.",
        "INFO", "    Return information about the current client connection.",
        "KILL <ip:port>", "    Kill connection made from <ip:port>.",
        "KILL <option> <value> [<option> <value> [...]]",
        "    Kill connections. Options are:",
        "    * ADDR (<ip:port>|<unixsocket>:0)", "      Kill connections made from the specified address",
        "    * LADDR (<ip:port>|<unixsocket>:0)", "      Kill connections made to specified local address",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)", "      Kill connections by type.",
        "    * USER <username>", "      Kill connections authenticated by <username>.",
        "    * SKIPME (YES|NO)", "      Skip killing current connection (default: yes).",
        "    * ID <client-id>", "      Kill connections by client id.",
        "LIST [options ...]", "    Return information about the proxy's client connections. Options:",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)", "      Return clients of specified type.",
        "    * ID <id> [<id> ...]", "      Return clients of the given ids.",
        "REPLY (ON|OFF|SKIP)", "    Control the replies sent to the current connection.",
        "SETNAME <name>", "    Assign the name <name> to the current connection.",
        "TRACKING OFF [options]", "    Client side caching is off through the proxy.",
        "TRACKINGINFO", "    Report tracking status for the current connection.",
        "UNBLOCK <clientid> [TIMEOUT|ERROR]",
        "    Unblock the specified blocked client.",
        "NO-EVICT (ON|OFF)", "    Protect current client connection from eviction.",
        "HELP", "    Print this help.",
    };
    resp_add_array(request_out(r), (long long)(sizeof help / sizeof help[0]));
    for (size_t i = 0; i < sizeof help / sizeof help[0]; i++)
        resp_add_simple(request_out(r), help[i]);
    request_finish(r);
}

static void cmd_setname(struct request *r)
{
    if (clientcmd_set_name(r, 2) == 0) {
        resp_add_simple(request_out(r), "OK");
        request_finish(r);
    }
}

/* CLIENT SETINFO LIB-NAME|LIB-VER value, as Redis 7.2: kept for CLIENT
 * LIST and INFO; an empty value clears it. */
static void cmd_setinfo(struct request *r)
{
    size_t alen, vlen;
    const char *attr = request_arg(r, 2, &alen), *val = request_arg(r, 3, &vlen);
    char msg[200];
    char **dest = request_arg_is(r, 2, "lib-name") ? &r->client->lib_name
                : request_arg_is(r, 2, "lib-ver") ? &r->client->lib_ver : NULL;
    if (!dest) {
        snprintf(msg, sizeof msg, "ERR Unrecognized option '%.*s'", (int)(alen < 64 ? alen : 64),
                 attr);
        request_fail(r, msg);
        return;
    }
    if (!name_valid(val, vlen)) {
        snprintf(msg, sizeof msg, "ERR %.*s cannot contain spaces, newlines or special "
                 "characters.", (int)(alen < 64 ? alen : 64), attr);
        request_fail(r, msg);
        return;
    }
    char *copy = vlen ? strndup(val, vlen) : NULL;
    if (vlen && !copy) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    free(*dest);
    *dest = copy;
    resp_add_simple(request_out(r), "OK");
    request_finish(r);
}

/* CLIENT NO-TOUCH ON|OFF (Redis 7.2): the client's reads go out on
 * connections other clients share, which touch the keys whatever it asks. */
static void cmd_no_touch(struct request *r)
{
    request_fail(r, "ERR CLIENT NO-TOUCH is not supported through the proxy: the client's "
                    "commands share the proxy's connections to the nodes, whose reads touch "
                    "the keys");
}

/* CLIENT MAINT_NOTIFICATIONS (Redis 8.2, sent by redis-py 8 on a RESP3
 * connect): the proxy relays no node's maintenance notices (it hides a
 * node's move itself), so it answers as a server without them, whose
 * error the client takes as "not supported". */
static void cmd_maint_notifications(struct request *r)
{
    router_reply_unknown_subcommand(r);
}

/* CLIENT CAPA capability ... (Valkey 8): the proxy never answers a
 * REDIRECT, whatever the client can read, so every capability is taken. */
static void cmd_capa(struct request *r)
{
    resp_add_simple(request_out(r), "OK");
    request_finish(r);
}

static void cmd_no_evict(struct request *r)    /* maxmemory-clients passes it over */
{
    if (request_arg_is(r, 2, "on") || request_arg_is(r, 2, "off")) {
        r->client->no_evict = request_arg_is(r, 2, "on");
        resp_add_simple(request_out(r), "OK");
        request_finish(r);
    } else {
        request_fail(r, "ERR syntax error");
    }
}

static void cmd_getname(struct request *r)
{
    if (r->client->name)
        resp_add_bulk_str(request_out(r), r->client->name);
    else
        resp_add_null(request_out(r), request_resp(r));
    request_finish(r);
}

static void cmd_id(struct request *r)
{
    resp_add_integer(request_out(r), (long long)r->client->id);
    request_finish(r);
}

static void cmd_info(struct request *r)
{
    struct evbuffer *text = evbuffer_new();
    char line[1024];
    clientcmd_describe(r->client, line, sizeof line);
    evbuffer_add_printf(text, "%s\n", line);
    reply_text(r, text);
}


/* ---- routes ---- */

static const struct route_entry clientcmd_routes[] = {
    ROUTE_LOCAL("client|setname", cmd_setname, TXC_PROXY),
    ROUTE_LOCAL("client|getname", cmd_getname, TXC_PROXY),
    ROUTE_LOCAL("client|id", cmd_id, TXC_PROXY), ROUTE_LOCAL("client|info", cmd_info, TXC_PROXY),
    ROUTE_LOCAL("client|list", cmd_list, TXC_PROXY), ROUTE_LOCAL("client|help", cmd_help, TXC_PROXY),
    { "client|reply", { .plan = ROUTE_FAMILY, .run = cmd_reply_mode, .in_multi = TXC_OTHER,
                        .keyless = 1, .multi_why = "it would take replies out of EXEC's array: "
                                                   "send it before MULTI" } },
    ROUTE_LOCAL("client|no-evict", cmd_no_evict, TXC_PROXY),
    ROUTE_LOCAL("client|kill", cmd_kill, TXC_PROXY),
    ROUTE_ASKING("client|unblock", cmd_unblock),
    /* newer servers', served once the cluster knows them (route.h) */
    ROUTE_LOCAL("client|setinfo", cmd_setinfo, TXC_PROXY),
    ROUTE_LOCAL("client|capa", cmd_capa, TXC_PROXY),
    ROUTE_LOCAL("client|no-touch", cmd_no_touch, TXC_PROXY),
    ROUTE_LOCAL("client|maint_notifications", cmd_maint_notifications, TXC_PROXY),
};

void clientcmd_register(void)
{
    route_register(clientcmd_routes, (int)(sizeof clientcmd_routes / sizeof clientcmd_routes[0]));
}
