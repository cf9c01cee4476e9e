/*
 * local: the connection commands the proxy answers itself, as one Redis
 * server would. See local.h.
 */
#include "proxy/families/local.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#include "lib/base/version.h"
#include "proxy/config/acl.h"
#include "proxy/config/snapshot.h"
#include "proxy/core/client.h"
#include "proxy/core/merge.h"
#include "proxy/core/request.h"
#include "proxy/core/route.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "proxy/families/aclcmd.h"
#include "proxy/families/clientcmd.h"
#include "proxy/families/monitor.h"
#include "proxy/families/pubsub.h"
#include "proxy/families/tracking.h"
#include "proxy/families/txclass.h"
#include "lib/proto/errors.h"
#include "lib/proto/resp.h"

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
        stat_inc(&r->worker->stats.auth_failures);
        aclcmd_log_auth(r, user, ulen);
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
        resp_add_simple(request_out(r), "OK");
        request_finish(r);
    }
}

/* HELLO [protover [AUTH user pass] [SETNAME name]], as redis-server 7.0:
 * without a version the protocol stays; the reply (a map) is already in the
 * new one. */
static void cmd_hello(struct request *r)
{
    long long ver = 0;
    int user = -1, pass = -1, name = -1;
    if (r->argc >= 2) {
        if (request_arg_ll(r, 1, &ver) < 0) {
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
        if (request_arg_is(r, j, "auth") && more >= 2) {
            user = j + 1;
            pass = j + 2;
            j += 2;
        } else if (request_arg_is(r, j, "setname") && more >= 1) {
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
    if (name >= 0 && clientcmd_set_name(r, name) < 0)
        return;
    struct client *c = r->client;
    if (ver && ver != c->resp) {
        c->resp = ver == 3 ? RESP3 : RESP2;
        pubsub_speak(c);            /* its messages follow */
    }
    struct evbuffer *b = request_out(r);
    resp_add_map(b, c->resp, 7);
    const struct topology_server *server = worker_server(r->worker);
    resp_add_bulk_str(b, "server");
    resp_add_bulk_str(b, server->name);
    resp_add_bulk_str(b, "version");
    resp_add_bulk_str(b, server->version);
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

/* A script at a node this long may be one that keeps its master busy
 * (BUSY to others past the master's busy-reply-threshold, which may be set
 * as low as a few milliseconds): PING then asks the masters, at most once
 * per this long on a worker while they answer that none is. */
#define PING_ASKS_AFTER_MS 100

/* When this worker's PING last found no master busy (node_now_ms). */
static __thread uint64_t ping_none_busy_ms;

/* PING's own answer: its argument, or PONG. */
static void ping_answer(const struct request *r, struct evbuffer *out)
{
    size_t len;
    const char *arg = r->argc > 1 ? request_arg(r, 1, &len) : NULL;
    if (arg)
        resp_add_bulk(out, arg, len);
    else
        resp_add_simple(out, "PONG");
}

/* The first master's BUSY, as one busy server answers; else PING's own
 * answer (a master that did not answer is not a busy one). */
static void merge_ping_run(struct request *p, struct evbuffer *out)
{
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (len >= 5 && memcmp(b, "-BUSY", 5) == 0) {
            evbuffer_add_buffer(out, request_reply_buffer(p->parts[i]));
            return;
        }
    }
    ping_none_busy_ms = node_now_ms();
    ping_answer(p, out);
}

static const struct merge merge_ping = { merge_ping_run, 1 };

/* PING is answered here, unless a script has been at a node long enough
 * to keep its master busy: then each master is asked on a connection of
 * its own, so that PING answers BUSY as that master would (a client that
 * sees BUSY may send SCRIPT KILL or FUNCTION KILL). */
static void cmd_ping(struct request *r)
{
    if (r->argc > 2) {      /* arity -1 in the table; PING itself takes one at most */
        char msg[80];
        request_fail(r, reply_arity(msg, sizeof msg, "ping"));
        return;
    }
    uint64_t oldest = request_oldest_script_ms(r->worker), now = node_now_ms();
    if (oldest && now >= oldest + PING_ASKS_AFTER_MS &&
        now >= ping_none_busy_ms + PING_ASKS_AFTER_MS && !r->parent) {
        static const char *const argv[] = { "PING" };
        static const size_t lens[] = { 4 };
        router_ask_each_alone(r, &merge_ping, 1, argv, lens);
        return;
    }
    ping_answer(r, request_out(r));
    request_finish(r);
}

static void cmd_select(struct request *r)
{
    long long db;
    if (request_arg_ll(r, 1, &db) < 0)
        request_fail(r, "ERR value is not an integer or out of range");
    else if (db != 0)
        request_fail(r, "ERR SELECT is not allowed in cluster mode: the proxy serves database 0 only");
    else {
        resp_add_simple(request_out(r), "OK");
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
    c->authenticated = c->user->nopass && c->user->enabled;
    c->parser.unauthenticated = !c->authenticated;
    pubsub_reset(c);
    monitor_stop(c);
    tracking_reset(c);
    c->resp = RESP2;
    if (c->reply_off)           /* RESET turns replies back on, its own too (not after SKIP) */
        r->silent = 0;
    c->reply_off = 0;
    c->reply_skip_next = 0;
    resp_add_simple(request_out(r), "RESET");
    request_finish(r);
}

static void cmd_time(struct request *r)
{
    struct timeval tv;
    char sec[32], usec[16];
    gettimeofday(&tv, NULL);
    snprintf(sec, sizeof sec, "%lld", (long long)tv.tv_sec);
    snprintf(usec, sizeof usec, "%ld", (long)tv.tv_usec);
    resp_add_array(request_out(r), 2);
    resp_add_bulk_str(request_out(r), sec);
    resp_add_bulk_str(request_out(r), usec);
    request_finish(r);
}

static void cmd_echo(struct request *r)
{
    request_reply_arg(r, 1);
    request_finish(r);
}

static void cmd_quit(struct request *r)
{
    resp_add_simple(request_out(r), "OK");
    request_finish(r);
    client_close_after_replies(r->client);
}

static void cmd_ok(struct request *r)          /* READONLY, READWRITE */
{
    resp_add_simple(request_out(r), "OK");
    request_finish(r);
}

/* ---- routes ---- */

static const struct route_entry local_routes[] = {
    ROUTE_LOCAL("ping", cmd_ping, TXC_NODE_LOCAL), ROUTE_LOCAL("echo", cmd_echo, TXC_NODE_LOCAL),
    ROUTE_LOCAL("time", cmd_time, TXC_NODE_LOCAL), ROUTE_LOCAL("quit", cmd_quit, TXC_IMMEDIATE),
    ROUTE_LOCAL("reset", cmd_reset, TXC_RESET), ROUTE_LOCAL("select", cmd_select, TXC_PROXY),
    ROUTE_LOCAL("hello", cmd_hello, TXC_PROXY), ROUTE_LOCAL("auth", cmd_auth, TXC_PROXY),
    ROUTE_LOCAL("readonly", cmd_ok, TXC_PROXY), ROUTE_LOCAL("readwrite", cmd_ok, TXC_PROXY),
};

void local_register(void)
{
    route_register(local_routes, (int)(sizeof local_routes / sizeof local_routes[0]));
}
