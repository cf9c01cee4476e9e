/*
 * tracking: client-side caching's CLIENT subcommands. See tracking.h.
 */
#include "proxy/families/tracking.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/core/client.h"
#include "proxy/core/proxy.h"
#include "proxy/core/request.h"
#include "proxy/core/route.h"
#include "proxy/core/worker.h"
#include "proxy/families/txclass.h"
#include "lib/proto/errors.h"
#include "lib/proto/resp.h"

/* The prefixes one CLIENT TRACKING may give: each is checked against every
 * other (as Redis does), so their number bounds the work. */
#define TRACKING_PREFIXES_MAX 1024

#define TRACK_BCAST  1u
#define TRACK_OPTIN  2u
#define TRACK_OPTOUT 4u
#define TRACK_NOLOOP 8u

/* Whether the proxy has a client whose CLIENT ID is id, on any worker. */
static int client_exists(struct proxy *p, long long id)
{
    int found = 0;
    for (int i = 0; i < p->nworkers && !found; i++) {
        struct worker *w = &p->workers[i];
        struct client *c;
        pthread_mutex_lock(&w->clients_lock);
        TAILQ_FOREACH(c, &w->clients, link)
            if ((long long)c->id == id && c->state != CLIENT_GONE) {
                found = 1;
                break;
            }
        pthread_mutex_unlock(&w->clients_lock);
    }
    return found;
}

/* One prefix is a prefix of the other (Redis's stringCheckPrefix). */
static int prefixes_overlap(const char *a, size_t alen, const char *b, size_t blen)
{
    return memcmp(a, b, alen < blen ? alen : blen) == 0;
}

/* The PREFIX arguments of r (their indexes in at, n of them) overlap: 0,
 * or -1 with Redis's error. */
static int prefixes_check(struct request *r, const int *at, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            size_t alen, blen;
            const char *a = request_arg(r, at[i], &alen), *b = request_arg(r, at[j], &blen);
            if (!prefixes_overlap(a, alen, b, blen))
                continue;
            char msg[600];
            snprintf(msg, sizeof msg, "ERR Prefix '%.*s' overlaps with another provided prefix "
                     "'%.*s'. Prefixes for a single client must not overlap.",
                     (int)(alen < 256 ? alen : 256), a, (int)(blen < 256 ? blen : 256), b);
            request_fail(r, msg);
            return -1;
        }
    return 0;
}

/* REDIRECT's argument i: 0, or -1 with r answered as Redis answers it. */
static int redirect_check(struct request *r, int i, long long *redir)
{
    if (*redir != 0) {
        request_fail(r, "ERR A client can only redirect to a single other client");
        return -1;
    }
    if (request_arg_ll(r, i, redir) < 0) {
        request_fail(r, "ERR value is not an integer or out of range");
        return -1;
    }
    if (!client_exists(r->worker->proxy, *redir)) {
        request_fail(r, "ERR The client ID you want redirect to does not exist");
        return -1;
    }
    return 0;
}

/* CLIENT TRACKING's options, from argument 3 on, read as Redis reads them:
 * 0, or -1 with r answered. */
static int options_parse(struct request *r, unsigned *options, int *prefix_at, int *nprefix)
{
    long long redir = 0;
    for (int j = 3; j < r->argc; j++) {
        int more = r->argc - 1 - j > 0;
        if (more && request_arg_is(r, j, "redirect")) {
            if (redirect_check(r, ++j, &redir) < 0)
                return -1;
        } else if (request_arg_is(r, j, "bcast")) {
            *options |= TRACK_BCAST;
        } else if (request_arg_is(r, j, "optin")) {
            *options |= TRACK_OPTIN;
        } else if (request_arg_is(r, j, "optout")) {
            *options |= TRACK_OPTOUT;
        } else if (request_arg_is(r, j, "noloop")) {
            *options |= TRACK_NOLOOP;
        } else if (more && request_arg_is(r, j, "prefix")) {
            if (*nprefix == TRACKING_PREFIXES_MAX) {    /* (at holds as many) */
                request_fail(r, "ERR too many prefixes: the proxy takes at most 1024");
                return -1;
            }
            prefix_at[(*nprefix)++] = ++j;
        } else {
            request_fail(r, "ERR syntax error");
            return -1;
        }
    }
    return 0;
}

/* The checks of CLIENT TRACKING ON, in Redis's order: 0, or -1 with r
 * answered. */
static int on_check(struct request *r, unsigned options, const int *prefix_at, int nprefix)
{
    const char *why = NULL;
    if (!(options & TRACK_BCAST) && nprefix)
        why = "ERR PREFIX option requires BCAST mode to be enabled";
    else if ((options & TRACK_BCAST) && (options & (TRACK_OPTIN | TRACK_OPTOUT)))
        why = "ERR OPTIN and OPTOUT are not compatible with BCAST";
    else if ((options & TRACK_OPTIN) && (options & TRACK_OPTOUT))
        why = "ERR You can't specify both OPTIN mode and OPTOUT mode";
    if (why) {
        request_fail(r, why);
        return -1;
    }
    return (options & TRACK_BCAST) ? prefixes_check(r, prefix_at, nprefix) : 0;
}

/*
 * CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN]
 * [OPTOUT] [NOLOOP]. The prefixes' indexes live on the heap: their number
 * is the client's to choose, up to TRACKING_PREFIXES_MAX.
 */
static void cmd_tracking(struct request *r)
{
    unsigned options = 0;
    int nprefix = 0, cap = r->argc < TRACKING_PREFIXES_MAX ? r->argc : TRACKING_PREFIXES_MAX;
    int *at = malloc(sizeof *at * (size_t)cap);
    if (!at) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    if (options_parse(r, &options, at, &nprefix) < 0) {
        free(at);
        return;
    }
    if (request_arg_is(r, 2, "on")) {
        if (on_check(r, options, at, nprefix) == 0)
            request_fail(r, "ERR client-side caching (CLIENT TRACKING ON) is not supported "
                            "through the proxy yet: it cannot send the invalidation messages, "
                            "and a cache without them would serve stale values");
    } else if (request_arg_is(r, 2, "off")) {
        resp_add_simple(request_out(r), "OK");
        request_finish(r);
    } else {
        request_fail(r, "ERR syntax error");
    }
    free(at);
}

/* CLIENT CACHING YES|NO: tracking is never on. */
static void cmd_caching(struct request *r)
{
    request_fail(r, "ERR CLIENT CACHING can be called only when the client is in tracking "
                    "mode with OPTIN or OPTOUT mode enabled");
}

static void cmd_getredir(struct request *r)
{
    resp_add_integer(request_out(r), -1);
    request_finish(r);
}

static void cmd_trackinginfo(struct request *r)
{
    struct evbuffer *out = request_out(r);
    resp_add_map(out, request_resp(r), 3);
    resp_add_bulk_str(out, "flags");
    resp_add_set(out, request_resp(r), 1);
    resp_add_bulk_str(out, "off");
    resp_add_bulk_str(out, "redirect");
    resp_add_integer(out, -1);
    resp_add_bulk_str(out, "prefixes");
    resp_add_array(out, 0);
    request_finish(r);
}

static const struct route_entry tracking_routes[] = {
    ROUTE_LOCAL("client|tracking", cmd_tracking, TXC_PROXY),
    ROUTE_LOCAL("client|caching", cmd_caching, TXC_PROXY),
    ROUTE_LOCAL("client|getredir", cmd_getredir, TXC_PROXY),
    ROUTE_LOCAL("client|trackinginfo", cmd_trackinginfo, TXC_PROXY),
};

void tracking_register(void)
{
    route_register(tracking_routes, (int)(sizeof tracking_routes / sizeof tracking_routes[0]));
}
