/*
 * info: INFO (the proxy's sections, the keyspace summed over the masters),
 * DBSIZE and RANDOMKEY, answered by asking every master. See info.h.
 */
#include "families/info.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/version.h"
#include "core/merge.h"
#include "core/metrics.h"
#include "core/proxy.h"
#include "core/request.h"
#include "core/route.h"
#include "core/router.h"
#include "core/worker.h"
#include "proto/resp.h"

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
        if (request_arg_is(r, i, name) || request_arg_is(r, i, "all") || request_arg_is(r, i, "everything") ||
            (in_default && request_arg_is(r, i, "default")))
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
                        REDIS_SPOKEN_VERSION, TAGPROXY_VERSION, (int)getpid(),
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
        resp_add_error(request_out(r), "ERR out of memory");
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
    resp_add_verbatim(request_out(r), request_resp(r), (const char *)evbuffer_pullup(t, -1), len);
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

static void cmd_dbsize(struct request *r)
{
    fanout_simple(r, MERGE_SUM, "DBSIZE", NULL);
}

static void cmd_randomkey(struct request *r)
{
    fanout_simple(r, MERGE_RANDOM, "RANDOMKEY", NULL);
}

/* ---- routes ---- */

static const struct route_entry info_routes[] = {
    ROUTE_ASKING("info", cmd_info), ROUTE_ASKING("dbsize", cmd_dbsize),
    ROUTE_ASKING("randomkey", cmd_randomkey),
};

void info_register(void)
{
    route_register(info_routes, (int)(sizeof info_routes / sizeof info_routes[0]));
    merge_register(MERGE_KEYSPACE, merge_info);
}
