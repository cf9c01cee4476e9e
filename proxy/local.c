#include "proxy/local.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include "cluster/slot.h"
#include "proto/command.h"
#include "proto/resp.h"
#include "proxy/acl.h"
#include "proxy/client.h"
#include "proxy/dedicated.h"
#include "proxy/index.h"
#include "proxy/listing.h"
#include "proxy/merge.h"
#include "proxy/metrics.h"
#include "proxy/monitor.h"
#include "proxy/proxy.h"
#include "proxy/pubsub.h"
#include "proxy/request.h"
#include "proxy/route.h"
#include "proxy/router.h"
#include "proxy/snapshot.h"
#include "proxy/worker.h"

/* ---- helpers ---- */

static int arg_is(const struct request *r, int i, const char *word)
{
    size_t len;
    const char *a = request_arg(r, i, &len);
    return len == strlen(word) && strncasecmp(a, word, len) == 0;
}

static int arg_ll(const struct request *r, int i, long long *v)
{
    size_t len;
    const char *a = request_arg(r, i, &len);
    char buf[32], *end;
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, a, len);
    buf[len] = '\0';
    *v = strtoll(buf, &end, 10);
    return *end == '\0' ? 0 : -1;
}

static struct evbuffer *out(struct request *r)
{
    return request_reply_buffer(r);
}

static void reply_arg_bulk(struct request *r, int i)
{
    size_t len;
    const char *a = request_arg(r, i, &len);
    resp_add_bulk(out(r), a, len);
}

/* AUTH / HELLO AUTH: 0 ok (the client now runs as that user), -1 error
 * already replied. The check costs the same for any name (acl.h). */
static int check_auth(struct request *r, int user_arg, int pass_arg)
{
    const struct acl *acl = r->worker->snap->acl;     /* the current config's users */
    struct client *c = r->client;
    size_t ulen = 7, plen;
    const char *user = "default";
    const char *pass = request_arg(r, pass_arg, &plen);
    if (user_arg >= 0)
        user = request_arg(r, user_arg, &ulen);
    else if (acl_default_user(acl)->nopass) {
        request_fail(r, "ERR AUTH <password> called without any password configured for "
                        "the default user. Are you sure your configuration is correct?");
        return -1;
    }
    const struct acl_user *u = acl_authenticate(acl, user, ulen, pass, plen);
    if (!u) {
        request_fail(r, "WRONGPASS invalid username-password pair or user is disabled.");
        return -1;
    }
    client_set_user(c, u);
    c->authenticated = 1;
    c->parser.unauthenticated = 0;
    return 0;
}

/* ---- connection commands ---- */

static void cmd_auth(struct request *r)
{
    if (r->argc > 3) {
        request_fail(r, "ERR syntax error");
        return;
    }
    if (check_auth(r, r->argc == 3 ? 1 : -1, r->argc - 1) == 0) {
        resp_add_simple(out(r), "OK");
        request_finish(r);
    }
}

static int client_name_valid(const char *name, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (name[i] < '!' || name[i] > '~')
            return 0;
    return 1;
}

static int set_client_name(struct request *r, int i)
{
    size_t len;
    const char *name = request_arg(r, i, &len);
    struct client *c = r->client;
    if (!client_name_valid(name, len)) {
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

/* HELLO [protover [AUTH user pass] [SETNAME name]], as redis-server 7.0:
 * without a version the protocol stays; the reply (a map) is already in the
 * new one. */
static void cmd_hello(struct request *r)
{
    long long ver = 0;
    int user = -1, pass = -1, name = -1;
    if (r->argc >= 2) {
        if (arg_ll(r, 1, &ver) < 0) {
            request_fail(r, "ERR Protocol version is not an integer or out of range");
            return;
        }
        if (ver < 2 || ver > 3) {
            request_fail(r, "NOPROTO unsupported protocol version");
            return;
        }
    }
    for (int j = 2; j < r->argc; j++) {
        int more = r->argc - 1 - j;
        if (arg_is(r, j, "auth") && more >= 2) {
            user = j + 1;
            pass = j + 2;
            j += 2;
        } else if (arg_is(r, j, "setname") && more >= 1) {
            name = ++j;
        } else {
            size_t len;
            const char *opt = request_arg(r, j, &len);
            char msg[200];
            snprintf(msg, sizeof msg, "ERR Syntax error in HELLO option '%.*s'",
                     (int)(len < 128 ? len : 128), opt);
            request_fail(r, msg);
            return;
        }
    }
    if (user >= 0 && check_auth(r, user, pass) < 0)
        return;
    if (!r->client->authenticated) {
        request_fail(r, "NOAUTH HELLO must be called with the client already authenticated, "
                        "otherwise the HELLO AUTH <user> <pass> option can be used to "
                        "authenticate the client and select the RESP protocol version at the "
                        "same time");
        return;
    }
    if (name >= 0 && set_client_name(r, name) < 0)
        return;
    struct client *c = r->client;
    if (ver && ver != c->resp) {
        c->resp = ver == 3 ? RESP3 : RESP2;
        pubsub_speak(c);            /* its messages follow */
    }
    struct evbuffer *b = out(r);
    resp_add_map(b, c->resp, 7);
    resp_add_bulk_str(b, "server");
    resp_add_bulk_str(b, "redis");
    resp_add_bulk_str(b, "version");
    resp_add_bulk_str(b, LOCAL_REDIS_VERSION);
    resp_add_bulk_str(b, "proto");
    resp_add_integer(b, c->resp);
    resp_add_bulk_str(b, "id");
    resp_add_integer(b, (long long)c->id);
    resp_add_bulk_str(b, "mode");
    resp_add_bulk_str(b, "standalone");
    resp_add_bulk_str(b, "role");
    resp_add_bulk_str(b, "master");
    resp_add_bulk_str(b, "modules");
    resp_add_array(b, 0);
    request_finish(r);
}

static void cmd_ping(struct request *r)
{
    if (r->argc > 2) {      /* arity -1 in the table; PING itself takes one at most */
        request_fail(r, "ERR wrong number of arguments for 'ping' command");
        return;
    }
    if (r->argc > 1)
        reply_arg_bulk(r, 1);
    else
        resp_add_simple(out(r), "PONG");
    request_finish(r);
}

static void cmd_select(struct request *r)
{
    long long db;
    if (arg_ll(r, 1, &db) < 0)
        request_fail(r, "ERR value is not an integer or out of range");
    else if (db != 0)
        request_fail(r, "ERR SELECT is not allowed in cluster mode: the proxy serves database 0 only");
    else {
        resp_add_simple(out(r), "OK");
        request_finish(r);
    }
}

static void cmd_reset(struct request *r)
{
    struct client *c = r->client;
    pthread_mutex_lock(&r->worker->clients_lock);
    free(c->name);
    c->name = NULL;
    pthread_mutex_unlock(&r->worker->clients_lock);
    client_set_user(c, acl_default_user(r->worker->snap->acl));
    c->authenticated = c->user->nopass;
    c->parser.unauthenticated = !c->authenticated;
    pubsub_reset(c);
    monitor_stop(c);
    c->resp = RESP2;
    if (c->reply_off)           /* RESET turns replies back on, its own too (not after SKIP) */
        r->silent = 0;
    c->reply_off = 0;
    c->reply_skip_next = 0;
    resp_add_simple(out(r), "RESET");
    request_finish(r);
}

static void cmd_time(struct request *r)
{
    struct timeval tv;
    char sec[32], usec[16];
    gettimeofday(&tv, NULL);
    snprintf(sec, sizeof sec, "%lld", (long long)tv.tv_sec);
    snprintf(usec, sizeof usec, "%ld", (long)tv.tv_usec);
    resp_add_array(out(r), 2);
    resp_add_bulk_str(out(r), sec);
    resp_add_bulk_str(out(r), usec);
    request_finish(r);
}

/* ---- CLIENT ---- */

/* CLIENT LIST's TYPE: whether c is of that kind (Redis's getClientTypeByName
 * names; the proxy's clients are never masters or replicas). */
enum client_kind { KIND_ANY, KIND_NORMAL, KIND_PUBSUB, KIND_NONE };

static int client_is(const struct client *c, enum client_kind kind)
{
    struct client_counts n;
    if (kind == KIND_ANY)
        return 1;
    client_counts(c, &n);
    int pubsub = n.sub + n.psub + n.ssub > 0;
    return kind == KIND_PUBSUB ? pubsub : kind == KIND_NORMAL ? !pubsub : 0;
}

/* Every live client of kind (id 0) or the one whose id is id, one line each. */
static void client_lines(struct request *r, struct evbuffer *text, enum client_kind kind,
                         uint64_t id)
{
    struct proxy *p = r->worker->proxy;
    char line[1024];
    for (int i = 0; i < p->nworkers; i++) {
        struct worker *w = &p->workers[i];
        struct client *c;
        pthread_mutex_lock(&w->clients_lock);
        TAILQ_FOREACH(c, &w->clients, link)
            if (c->state != CLIENT_GONE && (id ? c->id == id : client_is(c, kind))) {
                client_describe(c, line, sizeof line);
                evbuffer_add_printf(text, "%s\n", line);
            }
        pthread_mutex_unlock(&w->clients_lock);
    }
}

/* CLIENT LIST and INFO: text, verbatim in RESP3 as Redis writes it. */
static void reply_text(struct request *r, struct evbuffer *text)
{
    size_t len = evbuffer_get_length(text);
    resp_add_verbatim(out(r), request_resp(r), (const char *)evbuffer_pullup(text, -1), len);
    evbuffer_free(text);
    request_finish(r);
}

/* CLIENT LIST's or KILL's TYPE argument i; -1 after Redis's error for a
 * name it does not know. */
static int client_kind_arg(struct request *r, int i)
{
    if (arg_is(r, i, "normal"))
        return KIND_NORMAL;
    if (arg_is(r, i, "pubsub"))
        return KIND_PUBSUB;
    if (arg_is(r, i, "master") || arg_is(r, i, "replica") || arg_is(r, i, "slave"))
        return KIND_NONE;
    size_t len;
    const char *t = request_arg(r, i, &len);
    char msg[200];
    snprintf(msg, sizeof msg, "ERR Unknown client type '%.*s'", (int)(len < 128 ? len : 128), t);
    request_fail(r, msg);
    return -1;
}

/* CLIENT LIST [TYPE type | ID id ...], with Redis's rules and errors. */
static void client_list(struct request *r)
{
    int by_type = r->argc == 4 && arg_is(r, 2, "type");
    int by_id = r->argc > 3 && arg_is(r, 2, "id");
    int kind = KIND_ANY;
    long long id;
    if (r->argc != 2 && !by_type && !by_id) {
        request_fail(r, "ERR syntax error");
        return;
    }
    if (by_type && (kind = client_kind_arg(r, 3)) < 0)
        return;
    for (int i = 3; by_id && i < r->argc; i++)      /* all checked first, as Redis does */
        if (arg_ll(r, i, &id) < 0) {
            request_fail(r, "ERR Invalid client ID");
            return;
        }
    struct evbuffer *text = evbuffer_new();
    if (!by_id)
        client_lines(r, text, (enum client_kind)kind, 0);
    for (int i = 3; by_id && i < r->argc; i++)      /* in the order asked, repeats too */
        if (arg_ll(r, i, &id) == 0 && id > 0)
            client_lines(r, text, KIND_ANY, (uint64_t)id);
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
           (!f->id || c->id == f->id) && client_is(c, (enum client_kind)f->kind) &&
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
        } else if (arg_is(r, i, "id")) {
            if (arg_ll(r, i + 1, &id) < 0 || id <= 0) {
                request_fail(r, "ERR client-id should be greater than 0");
                return -1;
            }
            f->id = (uint64_t)id;
        } else if (arg_is(r, i, "type")) {
            if ((f->kind = client_kind_arg(r, i + 1)) < 0)
                return -1;
        } else if (arg_is(r, i, "addr")) {
            f->addr = v, f->addr_len = len;
        } else if (arg_is(r, i, "laddr")) {
            f->laddr = v, f->laddr_len = len;
        } else if (arg_is(r, i, "user")) {
            if (!acl_user_named(r->worker->snap->acl, v, len)) {
                snprintf(msg, sizeof msg, "ERR No such user '%.*s'", (int)(len < 128 ? len : 128), v);
                request_fail(r, msg);
                return -1;
            }
            f->user = v, f->user_len = len;
        } else if (arg_is(r, i, "skipme") && (arg_is(r, i + 1, "yes") || arg_is(r, i + 1, "no"))) {
            f->skipme = arg_is(r, i + 1, "yes");
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
static void client_kill(struct request *r)
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
            worker_close_killed(w);
        else if (marked)
            worker_post_kill(w);
    }
    if (r->argc != 3)
        resp_add_integer(out(r), killed);
    else if (killed)
        resp_add_simple(out(r), "OK");
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
static void client_reply_mode(struct request *r)
{
    struct client *c = r->client;
    if (arg_is(r, 2, "on")) {
        c->reply_off = 0;
        c->reply_skip_next = 0;
        r->silent = 0;
        resp_add_simple(out(r), "OK");
    } else if (arg_is(r, 2, "off")) {
        c->reply_off = 1;
        r->silent = 1;
    } else if (arg_is(r, 2, "skip")) {
        c->reply_skip_next = !c->reply_off;
        r->silent = 1;
    } else {
        request_fail(r, "ERR syntax error");
        return;
    }
    request_finish(r);
}

/* CLIENT TRACKING OFF [options]: OK, tracking being never on; ON: refused. */
static void client_tracking(struct request *r)
{
    if (arg_is(r, 2, "on")) {
        request_fail(r, "ERR client-side caching (CLIENT TRACKING ON) is not supported through "
                        "the proxy: the invalidation messages would come from every master");
        return;
    }
    int ok = arg_is(r, 2, "off");
    for (int j = 3; ok && j < r->argc; j++) {
        if (arg_is(r, j, "redirect") || arg_is(r, j, "prefix"))
            ok = ++j < r->argc;
        else
            ok = arg_is(r, j, "bcast") || arg_is(r, j, "optin") || arg_is(r, j, "optout") ||
                 arg_is(r, j, "noloop");
    }
    if (!ok) {
        request_fail(r, "ERR syntax error");
        return;
    }
    resp_add_simple(out(r), "OK");
    request_finish(r);
}

/*
 * CLIENT UNBLOCK id [TIMEOUT|ERROR]. A blocked command waits on a dedicated
 * node connection (dedicated.h), so it is the node that unblocks it, by
 * that connection's client ID there; the node's answer to the blocked
 * command then reaches its client like any reply. A client that blocks on
 * nothing (or whose command has not reached its node yet) gets :0, as from
 * Redis.
 */
#define UNBLOCK_TARGETS_MAX 16

/* Where the proxy's client `id`, of any worker, may be blocked (those
 * connections held until hold_until: dedicated_targets). */
static int unblock_targets(struct proxy *p, long long id, struct dedicated_target *targets,
                           uint64_t hold_until)
{
    for (int i = 0; i < p->nworkers; i++) {
        struct worker *w = &p->workers[i];
        struct client *c;
        int n = -1;
        pthread_mutex_lock(&w->clients_lock);
        TAILQ_FOREACH(c, &w->clients, link)
            if ((long long)c->id == id) {
                n = dedicated_targets(c, targets, UNBLOCK_TARGETS_MAX, hold_until);
                break;
            }
        pthread_mutex_unlock(&w->clients_lock);
        if (n >= 0)
            return n;
    }
    return 0;
}

static void client_unblock(struct request *r)
{
    struct dedicated_target targets[UNBLOCK_TARGETS_MAX];
    const char *reason = "TIMEOUT";
    long long id;
    if (r->argc > 4) {
        request_fail(r, "ERR unknown subcommand or wrong number of arguments for 'unblock'. "
                        "Try CLIENT HELP.");
        return;
    }
    if (r->argc == 4 && arg_is(r, 3, "error"))
        reason = "ERROR";
    else if (r->argc == 4 && !arg_is(r, 3, "timeout")) {
        request_fail(r, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
        return;
    }
    if (arg_ll(r, 2, &id) < 0) {
        request_fail(r, "ERR value is not an integer or out of range");
        return;
    }
    /* the unblock reaches its node within node-timeout-ms, or its connection
     * is closed */
    uint64_t hold_until = node_now_ms() + (uint64_t)r->worker->cfg->node_timeout_ms;
    int n = unblock_targets(r->worker->proxy, id, targets, hold_until);
    if (n == 0) {
        resp_add_integer(out(r), 0);
        request_finish(r);
        return;
    }
    if (router_parts_open(r, MERGE_ANY_ONE, n) < 0)
        return;
    for (int k = 0; k < n; k++) {
        int node = topology_find(r->worker->topo, targets[k].addr);
        char idbuf[24];
        snprintf(idbuf, sizeof idbuf, "%lld", targets[k].node_id);
        const char *argv[] = { "CLIENT", "UNBLOCK", idbuf, reason };
        size_t lens[] = { 6, 7, strlen(idbuf), strlen(reason) };
        if (node >= 0)          /* else a node this worker no longer knows: left out */
            router_part_send(r, node, 4, argv, lens);
    }
    request_parts_sent(r);
}

static void client_help(struct request *r)
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
    resp_add_array(out(r), (long long)(sizeof help / sizeof help[0]));
    for (size_t i = 0; i < sizeof help / sizeof help[0]; i++)
        resp_add_simple(out(r), help[i]);
    request_finish(r);
}

static void client_setname(struct request *r)
{
    if (set_client_name(r, 2) == 0) {
        resp_add_simple(out(r), "OK");
        request_finish(r);
    }
}

static void client_caching(struct request *r)     /* as Redis says it with tracking off */
{
    request_fail(r, "ERR CLIENT CACHING can be called only when the client is in tracking "
                    "mode with OPTIN or OPTOUT mode enabled");
}

static void client_no_evict(struct request *r)    /* maxmemory-clients passes it over */
{
    if (arg_is(r, 2, "on") || arg_is(r, 2, "off")) {
        r->client->no_evict = arg_is(r, 2, "on");
        resp_add_simple(out(r), "OK");
        request_finish(r);
    } else {
        request_fail(r, "ERR syntax error");
    }
}

static void client_getredir(struct request *r)
{
    resp_add_integer(out(r), -1);
    request_finish(r);
}

static void client_trackinginfo(struct request *r)
{
    resp_add_map(out(r), request_resp(r), 3);
    resp_add_bulk_str(out(r), "flags");
    resp_add_set(out(r), request_resp(r), 1);
    resp_add_bulk_str(out(r), "off");
    resp_add_bulk_str(out(r), "redirect");
    resp_add_integer(out(r), -1);
    resp_add_bulk_str(out(r), "prefixes");
    resp_add_array(out(r), 0);
    request_finish(r);
}

static void client_getname(struct request *r)
{
    if (r->client->name)
        resp_add_bulk_str(out(r), r->client->name);
    else
        resp_add_null(out(r), request_resp(r));
    request_finish(r);
}

static void client_id(struct request *r)
{
    resp_add_integer(out(r), (long long)r->client->id);
    request_finish(r);
}

static void client_info(struct request *r)
{
    struct evbuffer *text = evbuffer_new();
    char line[1024];
    client_describe(r->client, line, sizeof line);
    evbuffer_add_printf(text, "%s\n", line);
    reply_text(r, text);
}

/* ---- COMMAND ---- */

/* c's COMMAND INFO entry, or its COMMAND DOCS name and docs, to b in the
 * client's protocol, from the bytes redis-server writes in it. */
static void command_add_entry(struct evbuffer *b, struct request *r, const struct command *c,
                              int docs)
{
    size_t len;
    const char *p = docs ? command_docs_resp(c, request_resp(r), &len)
                         : command_info_resp(c, request_resp(r), &len);
    evbuffer_add(b, p, len);
}

/* COMMAND INFO is an array (a null for an unknown name), COMMAND DOCS a map
 * of name to docs (unknown names left out), as redis-server 7.0 writes them. */
static void command_docs_or_info(struct request *r, int docs)
{
    struct evbuffer *b = out(r);
    if (r->argc == 2) {                 /* all commands */
        if (docs)
            resp_add_map(b, request_resp(r), command_table_size);
        else
            resp_add_array(b, command_table_size);
        for (int i = 0; i < command_table_size; i++)
            command_add_entry(b, r, &command_table[i], docs);
        request_finish(r);
        return;
    }
    struct evbuffer *items = evbuffer_new();
    long long n = 0;
    for (int i = 2; i < r->argc; i++) {
        size_t len;
        const char *name = request_arg(r, i, &len);
        const char *bar = memchr(name, '|', len);
        const struct command *c = command_lookup(name, bar ? (size_t)(bar - name) : len);
        if (c && bar)
            c = command_lookup_sub(c, bar + 1, len - (size_t)(bar - name) - 1);
        if (c)
            command_add_entry(items, r, c, docs);
        else if (!docs)
            resp_add_null(items, request_resp(r));
        if (c || !docs)
            n++;
    }
    if (docs)
        resp_add_map(b, request_resp(r), n);
    else
        resp_add_array(b, n);
    evbuffer_add_buffer(b, items);
    evbuffer_free(items);
    request_finish(r);
}

static void command_getkeys(struct request *r)
{
    size_t len;
    const char *name = request_arg(r, 2, &len);
    const struct command *c = command_lookup(name, len);
    int argc = r->argc - 2;
    if (c && c->nsubcommands && argc >= 2) {
        const char *sub = request_arg(r, 3, &len);
        c = command_lookup_sub(c, sub, len);
    }
    if (!c) {
        request_fail(r, "ERR Invalid command specified");
        return;
    }
    if (!command_has_keys(c)) {
        request_fail(r, "ERR The command has no key arguments");
        return;
    }
    if (!command_arity_ok(c, argc)) {
        request_fail(r, "ERR Invalid number of arguments specified for command");
        return;
    }
    int *keys = malloc(sizeof *keys * (size_t)argc);
    int n = keys ? command_keys(c, r->data, r->args + 2, argc, keys, argc) : -1;
    if (n <= 0 && !(n == 0 && (c->flags & CMD_NO_MANDATORY_KEYS))) {
        request_fail(r, "ERR Invalid arguments specified for command");
    } else {
        resp_add_array(out(r), n);
        for (int i = 0; i < n; i++)
            reply_arg_bulk(r, 2 + keys[i]);
        request_finish(r);
    }
    free(keys);
}

static void command_all(struct request *r)
{
    resp_add_array(out(r), command_table_size);
    for (int i = 0; i < command_table_size; i++)
        command_add_entry(out(r), r, &command_table[i], 0);
    request_finish(r);
}

static void command_count(struct request *r)
{
    resp_add_integer(out(r), command_table_size);
    request_finish(r);
}

static void command_info(struct request *r)
{
    command_docs_or_info(r, 0);
}

static void command_docs(struct request *r)
{
    command_docs_or_info(r, 1);
}

static void command_list(struct request *r)
{
    struct evbuffer *b = out(r);
    if (r->argc > 2) {
        request_fail(r, "ERR COMMAND LIST FILTERBY is not supported by the proxy");
        return;
    }
    long long n = command_table_size;
    for (int i = 0; i < command_table_size; i++)
        n += command_table[i].nsubcommands;
    resp_add_array(b, n);           /* subcommands too, as "parent|sub" */
    for (int i = 0; i < command_table_size; i++) {
        const struct command *c = &command_table[i];
        resp_add_bulk_str(b, c->fullname);
        for (int s = 0; s < c->nsubcommands; s++)
            resp_add_bulk_str(b, c->subcommands[s].fullname);
    }
    request_finish(r);
}

static void command_getkeysandflags(struct request *r)
{
    request_fail(r, "ERR COMMAND GETKEYSANDFLAGS is not supported by the proxy; use COMMAND GETKEYS");
}

static void command_help(struct request *r)
{
    resp_add_array(out(r), 1);
    resp_add_simple(out(r), "COMMAND [COUNT|INFO|DOCS|GETKEYS|LIST]: as Redis, answered by the proxy.");
    request_finish(r);
}

/* ---- CLUSTER, as a one-node cluster that owns every slot ---- */

static void local_endpoint(struct request *r, char *ip, size_t iplen, int *port)
{
    const char *la = r->client->laddr;
    const char *colon = strrchr(la, ':');
    size_t n = colon ? (size_t)(colon - la) : 0;
    if (n >= 2 && la[0] == '[') {
        la++;
        n -= 2;
    }
    snprintf(ip, iplen, "%.*s", (int)n, la);
    *port = colon ? atoi(colon + 1) : 0;
}

static void cluster_slots(struct request *r)
{
    struct evbuffer *b = out(r);
    char ip[64];
    int port;
    local_endpoint(r, ip, sizeof ip, &port);
    resp_add_array(b, 1);
    resp_add_array(b, 3);
    resp_add_integer(b, 0);
    resp_add_integer(b, SLOT_COUNT - 1);
    resp_add_array(b, 4);
    resp_add_bulk_str(b, ip);
    resp_add_integer(b, port);
    resp_add_bulk_str(b, r->worker->proxy->id);
    resp_add_array(b, 0);
    request_finish(r);
}

static void cluster_shards(struct request *r)
{
    struct evbuffer *b = out(r);
    char ip[64];
    int port;
    local_endpoint(r, ip, sizeof ip, &port);
    resp_add_array(b, 1);
    resp_add_map(b, request_resp(r), 2);
    resp_add_bulk_str(b, "slots");
    resp_add_array(b, 2);
    resp_add_integer(b, 0);
    resp_add_integer(b, SLOT_COUNT - 1);
    resp_add_bulk_str(b, "nodes");
    resp_add_array(b, 1);
    resp_add_map(b, request_resp(r), 7);
    resp_add_bulk_str(b, "id");
    resp_add_bulk_str(b, r->worker->proxy->id);
    resp_add_bulk_str(b, "port");
    resp_add_integer(b, port);
    resp_add_bulk_str(b, "ip");
    resp_add_bulk_str(b, ip);
    resp_add_bulk_str(b, "endpoint");
    resp_add_bulk_str(b, ip);
    resp_add_bulk_str(b, "role");
    resp_add_bulk_str(b, "master");
    resp_add_bulk_str(b, "replication-offset");
    resp_add_integer(b, 0);
    resp_add_bulk_str(b, "health");
    resp_add_bulk_str(b, "online");
    request_finish(r);
}

static void cluster_keyslot(struct request *r)
{
    size_t len;
    const char *key = request_arg(r, 2, &len);
    resp_add_integer(out(r), slot_of(key, len));
    request_finish(r);
}

static void cluster_myid(struct request *r)
{
    resp_add_bulk_str(out(r), r->worker->proxy->id);
    request_finish(r);
}

static void cluster_nodes(struct request *r)
{
    char text[1024], ip[64];
    int port;
    local_endpoint(r, ip, sizeof ip, &port);
    snprintf(text, sizeof text, "%s %s:%d@0 myself,master - 0 0 1 connected 0-%d\n",
             r->worker->proxy->id, ip, port, SLOT_COUNT - 1);
    resp_add_verbatim(out(r), request_resp(r), text, strlen(text));
    request_finish(r);
}

static void cluster_info(struct request *r)
{
    char text[1024];
    int ok = r->worker->topo->covered == SLOT_COUNT;
    snprintf(text, sizeof text,
             "cluster_state:%s\r\ncluster_slots_assigned:%d\r\ncluster_slots_ok:%d\r\n"
             "cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:1\r\n"
             "cluster_size:1\r\ncluster_current_epoch:1\r\ncluster_my_epoch:1\r\n"
             "cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n"
             "total_cluster_links_buffer_limit_exceeded:0\r\n",
             ok ? "ok" : "fail", SLOT_COUNT, SLOT_COUNT);
    resp_add_verbatim(out(r), request_resp(r), text, strlen(text));
    request_finish(r);
}

static void cluster_help(struct request *r)
{
    resp_add_array(out(r), 1);
    resp_add_simple(out(r), "CLUSTER INFO|SLOTS|SHARDS|NODES|MYID|KEYSLOT: answered by the "
                            "proxy as a one-node cluster that owns every slot.");
    request_finish(r);
}

/* ---- INFO ---- */

/*
 * Does INFO's argument list ask for section `name`? As Redis 7.0: no
 * argument or "default" gives the default sections, "all" and "everything"
 * every section, and a section can be named (case-insensitive).
 */
static int info_wants(const struct request *r, const char *name, int in_default)
{
    if (r->argc < 2)
        return in_default;
    for (int i = 1; i < r->argc; i++)
        if (arg_is(r, i, name) || arg_is(r, i, "all") || arg_is(r, i, "everything") ||
            (in_default && arg_is(r, i, "default")))
            return 1;
    return 0;
}

static void info_sum_keyspace(const char *const *texts, int n, long long *keys,
                              long long *expires, long long *ttl_weighted)
{
    *keys = *expires = *ttl_weighted = 0;
    for (int i = 0; i < n; i++) {
        const char *db0 = texts[i] ? strstr(texts[i], "db0:") : NULL;
        long long k = 0, e = 0, t = 0;
        if (db0 && sscanf(db0, "db0:keys=%lld,expires=%lld,avg_ttl=%lld", &k, &e, &t) >= 2) {
            *keys += k;
            *expires += e;
            *ttl_weighted += t * e;
        }
    }
}

static void info_server(struct request *r, const struct metrics *m, struct evbuffer *t)
{
    struct proxy *p = r->worker->proxy;
    evbuffer_add_printf(t, "# Server\r\nredis_version:%s\r\ntagproxy_version:%s\r\n"
                        "redis_mode:standalone\r\nos:Linux\r\nprocess_id:%d\r\n"
                        "tcp_port:%s\r\nuptime_in_seconds:%llu\r\nthreads:%d\r\n\r\n",
                        LOCAL_REDIS_VERSION, TAGPROXY_VERSION, (int)getpid(),
                        strrchr(p->cfg.listen, ':') + 1, (unsigned long long)m->uptime_s,
                        m->threads);
}

static void info_stats(const struct metrics *m, struct evbuffer *t)
{
    const struct worker_stats *s = &m->sum;
    evbuffer_add_printf(t, "# Stats\r\ntotal_connections_received:%llu\r\n"
                        "total_commands_processed:%llu\r\ntotal_net_input_bytes:%llu\r\n"
                        "total_net_output_bytes:%llu\r\nrejected_connections:%llu\r\n"
                        "evicted_clients:%llu\r\n"
                        "cluster_moved:%llu\r\ncluster_ask:%llu\r\ncluster_retries:%llu\r\n"
                        "cluster_retries_exhausted:%llu\r\nlost_replies:%llu\r\n"
                        "topology_refreshes:%llu\r\n\r\n",
                        (unsigned long long)s->connections, (unsigned long long)s->commands,
                        (unsigned long long)s->clients.in, (unsigned long long)s->clients.out,
                        (unsigned long long)s->rejected_clients,
                        (unsigned long long)s->evicted_clients,
                        (unsigned long long)s->moved, (unsigned long long)s->ask,
                        (unsigned long long)s->retries,
                        (unsigned long long)s->retries_exhausted,
                        (unsigned long long)s->lost_replies, (unsigned long long)m->refreshes);
}

/* INFO: write the proxy's sections, with the keyspace summed from the
 * masters' "INFO keyspace" texts (NUL-terminated), into r's reply. */
static void info_render(struct request *r, const char *const *texts, int n)
{
    struct metrics m;
    if (metrics_collect(&m, r->worker->proxy) < 0) {
        resp_add_error(out(r), "ERR out of memory");
        return;
    }
    m.max_clients = r->worker->cfg->max_clients;    /* as reloaded */
    struct evbuffer *t = evbuffer_new();
    if (info_wants(r, "server", 1))
        info_server(r, &m, t);
    if (info_wants(r, "clients", 1))
        evbuffer_add_printf(t, "# Clients\r\nconnected_clients:%lld\r\nmaxclients:%d\r\n\r\n",
                            (long long)m.clients, m.max_clients);
    if (info_wants(r, "stats", 1))
        info_stats(&m, t);
    if (info_wants(r, "proxy", 1))
        metrics_info_proxy(&m, t);
    if (info_wants(r, "nodes", 1))
        metrics_info_nodes(&m, t);
    if (info_wants(r, "commandstats", 0))
        metrics_info_commandstats(&m, t);
    if (info_wants(r, "keyspace", 1)) {
        long long keys, expires, ttlw;
        info_sum_keyspace(texts, n, &keys, &expires, &ttlw);
        evbuffer_add_printf(t, "# Keyspace\r\n");
        if (keys > 0)
            evbuffer_add_printf(t, "db0:keys=%lld,expires=%lld,avg_ttl=%lld\r\n", keys, expires,
                                expires ? ttlw / expires : 0);
    }
    metrics_free(&m);
    size_t len = evbuffer_get_length(t);
    resp_add_verbatim(out(r), request_resp(r), (const char *)evbuffer_pullup(t, -1), len);
    evbuffer_free(t);
}

/* INFO's keyspace from every master's text (MERGE_KEYSPACE); the array of
 * texts is on the heap (one INFO, not a hot path) so no stack is sized by
 * the part count. */
static void merge_info(struct request *p, struct evbuffer *out)
{
    const char **texts = calloc(p->nparts > 0 ? (size_t)p->nparts : 1, sizeof *texts);
    if (!texts) {
        resp_add_error(out, "ERR out of memory");
        return;
    }
    for (int i = 0; i < p->nparts; i++) {
        struct evbuffer *b = request_reply_buffer(p->parts[i]);
        evbuffer_add(b, "", 1);          /* NUL-terminate for parsing */
        texts[i] = (const char *)evbuffer_pullup(b, -1);
    }
    info_render(p, texts, p->nparts);
    free(texts);
}

/* INFO: the keyspace needs every master's; the proxy's own sections do not. */
static void cmd_info(struct request *r)
{
    if (info_wants(r, "keyspace", 1)) {
        const char *argv[2] = { "INFO", "keyspace" };
        size_t lens[2] = { 4, 8 };
        router_fanout(r, MERGE_KEYSPACE, 2, argv, lens);
        return;
    }
    info_render(r, NULL, 0);
    request_finish(r);
}

static void fanout_simple(struct request *r, enum merge_kind merge, const char *cmd,
                          const char *arg)
{
    const char *argv[2] = { cmd, arg };
    size_t lens[2] = { strlen(cmd), arg ? strlen(arg) : 0 };
    router_fanout(r, merge, arg ? 2 : 1, argv, lens);
}

static void cmd_echo(struct request *r)
{
    reply_arg_bulk(r, 1);
    request_finish(r);
}

static void cmd_quit(struct request *r)
{
    resp_add_simple(out(r), "OK");
    request_finish(r);
    client_close_after_replies(r->client);
}

static void cmd_ok(struct request *r)          /* READONLY, READWRITE */
{
    resp_add_simple(out(r), "OK");
    request_finish(r);
}

static void cmd_dbsize(struct request *r)
{
    fanout_simple(r, MERGE_SUM, "DBSIZE", NULL);
}

static void cmd_randomkey(struct request *r)
{
    fanout_simple(r, MERGE_RANDOM, "RANDOMKEY", NULL);
}

/* ---- routes ---- */

#define LOCAL(name, fn, cls) \
    { name, { .plan = ROUTE_FAMILY, .run = fn, .in_multi = cls, .keyless = 1 } }
#define ASKING(name, fn) \
    { name, { .plan = ROUTE_FAMILY, .run = fn, .in_multi = TXC_PROXY, .keyless = 1, \
              .asks_masters = 1 } }

static const struct route_entry local_routes[] = {
    LOCAL("ping", cmd_ping, TXC_NODE_LOCAL), LOCAL("echo", cmd_echo, TXC_NODE_LOCAL),
    LOCAL("time", cmd_time, TXC_NODE_LOCAL), LOCAL("quit", cmd_quit, TXC_IMMEDIATE),
    LOCAL("reset", cmd_reset, TXC_RESET), LOCAL("select", cmd_select, TXC_PROXY),
    LOCAL("hello", cmd_hello, TXC_PROXY), LOCAL("auth", cmd_auth, TXC_PROXY),
    LOCAL("readonly", cmd_ok, TXC_PROXY), LOCAL("readwrite", cmd_ok, TXC_PROXY),
    ASKING("info", cmd_info), ASKING("dbsize", cmd_dbsize),
    ASKING("randomkey", cmd_randomkey), ASKING("scan", listing_scan),
    ASKING("keys", listing_keys),
    LOCAL("command", command_all, TXC_PROXY), LOCAL("command|count", command_count, TXC_PROXY),
    LOCAL("command|info", command_info, TXC_PROXY), LOCAL("command|docs", command_docs, TXC_PROXY),
    LOCAL("command|getkeys", command_getkeys, TXC_PROXY),
    LOCAL("command|getkeysandflags", command_getkeysandflags, TXC_PROXY),
    LOCAL("command|list", command_list, TXC_PROXY), LOCAL("command|help", command_help, TXC_PROXY),
    LOCAL("client|setname", client_setname, TXC_PROXY),
    LOCAL("client|getname", client_getname, TXC_PROXY), LOCAL("client|id", client_id, TXC_PROXY),
    LOCAL("client|info", client_info, TXC_PROXY), LOCAL("client|list", client_list, TXC_PROXY),
    LOCAL("client|help", client_help, TXC_PROXY),
    { "client|reply", { .plan = ROUTE_FAMILY, .run = client_reply_mode, .in_multi = TXC_OTHER,
                        .keyless = 1, .multi_why = "it would take replies out of EXEC's array: "
                                                   "send it before MULTI" } },
    LOCAL("client|tracking", client_tracking, TXC_PROXY),
    LOCAL("client|caching", client_caching, TXC_PROXY),
    LOCAL("client|no-evict", client_no_evict, TXC_PROXY),
    LOCAL("client|getredir", client_getredir, TXC_PROXY),
    LOCAL("client|trackinginfo", client_trackinginfo, TXC_PROXY),
    LOCAL("client|kill", client_kill, TXC_PROXY), ASKING("client|unblock", client_unblock),
    LOCAL("cluster|info", cluster_info, TXC_PROXY), LOCAL("cluster|slots", cluster_slots, TXC_PROXY),
    LOCAL("cluster|shards", cluster_shards, TXC_PROXY),
    LOCAL("cluster|nodes", cluster_nodes, TXC_PROXY), LOCAL("cluster|myid", cluster_myid, TXC_PROXY),
    LOCAL("cluster|keyslot", cluster_keyslot, TXC_PROXY),
    LOCAL("cluster|help", cluster_help, TXC_PROXY),
};

void local_register(void)
{
    route_register(local_routes, (int)(sizeof local_routes / sizeof local_routes[0]));
    merge_register(MERGE_KEYSPACE, merge_info);
}
