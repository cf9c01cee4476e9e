/*
 * configcmd: CONFIG SET. See configcmd.h.
 */
#include "proxy/families/configcmd.h"

#include <event2/buffer.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/config/snapshot.h"
#include "proxy/core/merge.h"
#include "proxy/core/proxy.h"
#include "proxy/core/thread.h"
#include "lib/proto/errors.h"
#include "lib/proto/reply.h"

#include "proxy/core/request.h"
#include "proxy/families/aclcmd.h"
#include "lib/proto/resp.h"
#include "proxy/core/route.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "proxy/families/txclass.h"

/* Redis's settings whose meaning, through the proxy, is the proxy's: what
 * it checks and limits for its own clients, and how they reach it; the
 * directive of the proxy's config that says it. A value one is changed in
 * the running proxy; one that needs a restart is refused. */
enum setting_kind { SETTING_VALUE, SETTING_OUTPUT_LIMIT, SETTING_RESTART };

#define INT_AT(f) offsetof(struct config, f), 0
#define LL_AT(f) offsetof(struct config, f), 1

static const struct {
    const char *setting, *directive;
    enum setting_kind kind;
    size_t field;                   /* SETTING_VALUE: where the config keeps it, */
    int wide;                       /* a long long, else an int */
} proxy_settings[] = {
    { "maxclients", "max-clients", SETTING_VALUE, INT_AT(max_clients) },
    { "timeout", "timeout", SETTING_VALUE, INT_AT(timeout) },
    { "tcp-keepalive", "tcp-keepalive", SETTING_VALUE, INT_AT(tcp_keepalive) },
    { "client-output-buffer-limit", "client-output-buffer-limit", SETTING_OUTPUT_LIMIT, 0, 0 },
    { "client-query-buffer-limit", "client-query-buffer-limit", SETTING_VALUE,
      LL_AT(client_query_buffer_limit) },
    { "proto-max-bulk-len", "proto-max-bulk-len", SETTING_VALUE, LL_AT(proto_max_bulk_len) },
    { "maxmemory-clients", "maxmemory-clients", SETTING_VALUE, LL_AT(maxmemory_clients) },
    { "port", "listen", SETTING_RESTART, 0, 0 },
    { "bind", "listen", SETTING_RESTART, 0, 0 },
    { "unixsocket", "unixsocket", SETTING_RESTART, 0, 0 },
    { "unixsocketperm", "unixsocketperm", SETTING_RESTART, 0, 0 },
};

#define NSETTINGS (sizeof proxy_settings / sizeof proxy_settings[0])
#define LIMIT_WORDS_MAX 12      /* three classes of four words */

/* The proxy setting named by argument i of r, or -1. */
static int setting_at(const struct request *r, int i)
{
    for (size_t k = 0; k < NSETTINGS; k++)
        if (request_arg_is(r, i, proxy_settings[k].setting))
            return (int)k;
    return -1;
}

/* As Redis 7.0 words a refused CONFIG SET. */
static void fail_setting(struct request *r, const char *setting, const char *why)
{
    char msg[600];
    snprintf(msg, sizeof msg, "ERR CONFIG SET failed (possibly related to argument '%s') - %s",
             setting, why);
    request_fail(r, msg);
}

/* client-output-buffer-limit "<class> <hard> <soft> <seconds> ..." into
 * cfg: normal and pubsub are the proxy's clients'. 0, or -1 with why. */
static int set_output_limit(struct config *cfg, const char *value, size_t len, char *why,
                            size_t whylen)
{
    char text[512], *words[LIMIT_WORDS_MAX + 1], *save = NULL;
    int n = 0;
    if (len >= sizeof text) {
        snprintf(why, whylen, "Wrong number of arguments in buffer limit configuration.");
        return -1;
    }
    memcpy(text, value, len);
    text[len] = '\0';
    for (char *w = strtok_r(text, " ", &save); w && n <= LIMIT_WORDS_MAX;
         w = strtok_r(NULL, " ", &save))
        words[n++] = w;
    if (n == 0 || n % 4 != 0 || n > LIMIT_WORDS_MAX) {
        snprintf(why, whylen, "Wrong number of arguments in buffer limit configuration.");
        return -1;
    }
    for (int i = 0; i < n; i += 4) {
        const char *directive = strcasecmp(words[i], "normal") == 0 ? "client-output-buffer-limit"
                              : strcasecmp(words[i], "pubsub") == 0
                              ? "client-output-buffer-limit-pubsub" : NULL;
        if (!directive) {
            snprintf(why, whylen, "%s: the proxy serves clients of the normal and pubsub "
                     "classes only (a replica's limits are the nodes': set them there)",
                     strcasecmp(words[i], "replica") == 0 || strcasecmp(words[i], "slave") == 0
                     ? "Invalid client class for the proxy" : "Invalid client class specified in "
                     "buffer limit configuration.");
            return -1;
        }
        if (config_set_value(cfg, directive, 3, words + i + 1, why, whylen) < 0)
            return -1;
    }
    return 0;
}

/* Setting k of proxy_settings to value, in cfg: 0, or -1 with why. */
static int set_one(struct config *cfg, int k, const char *value, size_t len, char *why,
                   size_t whylen)
{
    if (proxy_settings[k].kind == SETTING_OUTPUT_LIMIT)
        return set_output_limit(cfg, value, len, why, whylen);
    char arg[64];
    char *argv[1] = { arg };
    if (len >= sizeof arg || memchr(value, '\0', len)) {
        snprintf(why, whylen, "argument couldn't be parsed into an integer");
        return -1;
    }
    memcpy(arg, value, len);
    arg[len] = '\0';
    return config_set_value(cfg, proxy_settings[k].directive, 1, argv, why, whylen);
}

/* Each of r's settings (all the proxy's value ones) in cfg: -1, or the
 * setting refused, with why. */
static int set_all(struct request *r, struct config *cfg, char *why, size_t whylen)
{
    for (int i = 2; i < r->argc; i += 2) {
        size_t len;
        const char *value = request_arg(r, i + 1, &len);
        int k = setting_at(r, i);
        for (int j = 2; j < i; j += 2)
            if (request_arg_is(r, j, proxy_settings[k].setting)) {
                snprintf(why, whylen, "duplicate parameter");
                return k;
            }
        if (set_one(cfg, k, value, len, why, whylen) < 0)
            return k;
    }
    return -1;
}

/* CONFIG SET of the proxy's value settings only (each pair's setting k
 * known): a copy of the newest config with them changed becomes every
 * worker's, until the next reload; all or none, as Redis. */
static void set_proxy_values(struct request *r)
{
    struct proxy *p = r->worker->proxy;
    char why[400];
    struct config *cfg = malloc(sizeof *cfg);
    if (!cfg) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    pthread_mutex_lock(&p->users_lock);
    *cfg = *p->users_snap->cfg;
    int bad = set_all(r, cfg, why, sizeof why);
    if (bad >= 0) {
        pthread_mutex_unlock(&p->users_lock);
        free(cfg);
        fail_setting(r, proxy_settings[bad].setting, why);
        return;
    }
    struct config_snapshot *s = snapshot_with_config(p->users_snap, cfg,
                                                     p->users_snap->generation);
    if (s) {
        snapshot_unref(p->users_snap);
        p->users_snap = s;
        thread_share_config(r->worker, s);
    }
    pthread_mutex_unlock(&p->users_lock);
    if (!s) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    resp_add_simple(request_out(r), "OK");
    request_finish(r);
}

/* CONFIG SET requirepass pass: the proxy's default user's password, as
 * Redis sets it; alone (its password never reaches the nodes). */
static void set_requirepass(struct request *r)
{
    size_t len;
    const char *pass = request_arg(r, 3, &len);
    if (r->argc != 4) {
        request_fail(r, "ERR CONFIG SET requirepass through the proxy sets the proxy's own "
                        "password (the nodes' would lock the proxy out of its cluster): set "
                        "it alone, in a CONFIG SET of its own");
        return;
    }
    if (memchr(pass, '\0', len)) {
        request_fail(r, "ERR CONFIG SET failed (possibly related to argument 'requirepass') - "
                        "the password may not hold a NUL byte");
        return;
    }
    if (aclcmd_set_requirepass(r, pass, len) == 0) {
        resp_add_simple(request_out(r), "OK");
        request_finish(r);
    }
}

/* CONFIG SET setting value [setting value ...]: requirepass (alone) and
 * the value settings that are the proxy's change the proxy; one that needs
 * a restart is refused, and so is a mix of the proxy's and the nodes'
 * (Redis sets all or none: the proxy cannot with the nodes); every other
 * setting reaches every master. */
static void config_set(struct request *r)
{
    char msg[600];
    int own = 0, nodes = 0, node_arg = 0, own_arg = 0;
    if (!r->worker->cfg->enable_dangerous_commands) {
        router_plan_dangerous(r, 1);        /* refused, saying why */
        return;
    }
    for (int i = 2; i < r->argc; i += 2)
        if (request_arg_is(r, i, "requirepass")) {
            set_requirepass(r);
            return;
        }
    for (int i = 2; i < r->argc; i += 2) {
        int k = setting_at(r, i);
        if (k >= 0 && proxy_settings[k].kind == SETTING_RESTART) {
            snprintf(msg, sizeof msg, "ERR CONFIG SET %s is refused through the proxy: it is "
                     "the proxy's own (how its clients reach it), and it needs a restart: set "
                     "%s in the proxy's config and restart it; the nodes' own on the nodes",
                     proxy_settings[k].setting, proxy_settings[k].directive);
            request_fail(r, msg);
            return;
        }
        if (k >= 0 && !own++)
            own_arg = i;
        else if (k < 0 && !nodes++)
            node_arg = i;
    }
    if (own && nodes) {
        size_t a, b;
        const char *na = request_arg(r, node_arg, &b);
        request_arg(r, own_arg, &a);
        snprintf(msg, sizeof msg, "ERR CONFIG SET %s is the proxy's own setting and %.*s the "
                 "nodes': set them in two CONFIG SETs (the proxy cannot set both at once, all "
                 "or none, as Redis does)", proxy_settings[setting_at(r, own_arg)].setting,
                 (int)(b < 64 ? b : 64), na);
        request_fail(r, msg);
        return;
    }
    if (own) {
        set_proxy_values(r);
        return;
    }
    router_plan_dangerous(r, 1);
}

/* ---- CONFIG GET ---- */

/* The proxy's value of setting k (not a restart one), as Redis 7.0's
 * CONFIG GET writes it; node_value: the master's, whose replica class the
 * proxy keeps. */
static void format_setting(const struct config *cfg, int k, const char *node_value,
                           size_t node_len, char *out, size_t cap)
{
    const void *at = (const char *)cfg + proxy_settings[k].field;
    if (proxy_settings[k].kind == SETTING_VALUE && proxy_settings[k].wide) {
        snprintf(out, cap, "%lld", *(const long long *)at);
    } else if (proxy_settings[k].kind == SETTING_VALUE) {
        snprintf(out, cap, "%d", *(const int *)at);
    } else {
        const char *replica = node_len ? memmem(node_value, node_len, "slave ", 6) : NULL;
        const char *end = replica ? memmem(replica, node_len - (size_t)(replica - node_value),
                                           " pubsub", 7) : NULL;
        snprintf(out, cap, "normal %lld %lld %d %.*s pubsub %lld %lld %d",
                 cfg->client_output_hard_limit, cfg->client_output_soft_limit,
                 cfg->client_output_soft_seconds,
                 replica && end ? (int)(end - replica) : 29,
                 replica && end ? replica : "slave 268435456 67108864 60",
                 cfg->client_output_pubsub_hard_limit, cfg->client_output_pubsub_soft_limit,
                 cfg->client_output_pubsub_soft_seconds);
    }
}

/* A bulk's payload within el (one element, "$<n>\r\n..."), or NULL. */
static const char *bulk_payload(const char *el, size_t len, size_t *n)
{
    const char *eol = memchr(el, '\n', len);
    if (el[0] != '$' || !eol)
        return NULL;
    long long m = strtoll(el + 1, NULL, 10);
    const char *at = eol + 1;
    if (m < 0 || at + m > el + len)
        return NULL;
    *n = (size_t)m;
    return at;
}

/* A master's CONFIG GET reply (name, value pairs: an array, a map in
 * RESP3) with the proxy's values of its own settings: 1 when r is answered
 * so, 0 for the router to deliver the reply as it is. */
static int config_get_reply(struct request *r, struct node_conn *from,
                            const struct reply_view *v, const struct reply_scanner *s)
{
    (void)from;
    if (s->type != '*' && s->type != '%')
        return 0;
    size_t len = v->len;
    const char *b = reply_view_head(v, len);
    const char *eol = b ? memchr(b, '\n', len) : NULL;
    /* name, value pairs: an array's elements, a map's keys and values */
    long n = eol ? strtol(b + 1, NULL, 10) * (s->type == '%' ? 2 : 1) : 0;
    size_t head = eol ? (size_t)(eol + 1 - b) : 0;
    /* the reply is whole (len bytes): it holds at most len / 4 elements */
    const char **el = n > 0 && n % 2 == 0 && (size_t)n <= len / 4
                    ? malloc((size_t)n * (sizeof *el + sizeof(size_t))) : NULL;
    size_t *lens = el ? (size_t *)(void *)(el + n) : NULL;
    if (!el || reply_elements(b + head, len - head, n, el, lens) < 0) {
        free(el);
        return 0;
    }
    struct evbuffer *out = evbuffer_new();
    if (out) {
        if (s->type == '%')
            evbuffer_add_printf(out, "%%%ld\r\n", n / 2);
        else
            resp_add_array(out, n);
        for (long i = 0; i < n; i += 2) {
            size_t nl = 0, vl = 0;
            const char *name = bulk_payload(el[i], lens[i], &nl);
            const char *val = bulk_payload(el[i + 1], lens[i + 1], &vl);
            int k = -1;
            for (size_t j = 0; name && val && j < NSETTINGS && k < 0; j++)
                if (strlen(proxy_settings[j].setting) == nl &&
                    strncasecmp(name, proxy_settings[j].setting, nl) == 0)
                    k = (int)j;
            evbuffer_add(out, el[i], lens[i]);
            if (k < 0 || proxy_settings[k].kind == SETTING_RESTART) {
                evbuffer_add(out, el[i + 1], lens[i + 1]);
            } else {
                char shown[256];
                format_setting(r->worker->cfg, k, val, vl, shown, sizeof shown);
                resp_add_bulk_str(out, shown);
            }
        }
    }
    free(el);
    if (!out)
        return 0;
    reply_view_drop(v);
    size_t olen = evbuffer_get_length(out);
    request_deliver_bytes(r, (const char *)evbuffer_pullup(out, -1), olen);
    evbuffer_free(out);
    return 1;
}

static const struct request_hooks config_get_hooks = { .reply = config_get_reply };

/* CONFIG GET: a master's settings, the proxy's own in place of its. */
static void config_get(struct request *r)
{
    r->hooks = &config_get_hooks;
    r->slot = -1;
    router_send(r);
}

static const struct route_entry configcmd_routes[] = {
    { "config|set", { .plan = ROUTE_FAMILY, .run = config_set, .in_multi = TXC_OTHER,
                      .keyless = 1 } },
    { "config|get", { .plan = ROUTE_FAMILY, .run = config_get, .in_multi = TXC_FORWARD,
                      .keyless = 1 } },
};

void configcmd_register(void)
{
    route_register(configcmd_routes, (int)(sizeof configcmd_routes / sizeof configcmd_routes[0]));
}
