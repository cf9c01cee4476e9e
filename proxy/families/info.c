/*
 * info: INFO as one redis-server 7.0 writes it, DBSIZE answered by
 * asking every master, and CONFIG RESETSTAT. See info.h.
 *
 * The proxy is the server its clients see: the server, clients, memory,
 * replication (a master without replicas), CPU, commandstats, errorstats,
 * latencystats and cluster (cluster_enabled:0) sections are its own, and
 * so are the stats of its clients and commands. Where the data lives, the
 * masters answer: persistence (a state is the largest of theirs, so
 * rdb_bgsave_in_progress is 1 while any saves; a count is their sum;
 * rdb_last_save_time the oldest), the stats of the keyspace (keyspace_hits,
 * expired_keys, ...: summed) and the keyspace (summed). The proxy's own
 * sections (proxy, nodes) come last.
 */
#include "proxy/families/info.h"

#include <event2/buffer.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/procstat.h"
#include "lib/base/hostport.h"
#include "lib/base/version.h"
#include "proxy/core/client.h"
#include "proxy/core/merge.h"
#include "proxy/core/metrics.h"
#include "proxy/core/proxy.h"
#include "proxy/core/request.h"
#include "proxy/core/route.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "proxy/families/tracking.h"
#include "proxy/families/txclass.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"
#include "lib/proto/resp.h"

static merge_fn merge_info;
static const struct merge merge_keyspace = { merge_info, 0 };

/* ---- which sections ---- */

enum section {
    SEC_SERVER, SEC_CLIENTS, SEC_MEMORY, SEC_PERSISTENCE, SEC_STATS, SEC_REPLICATION,
    SEC_CPU, SEC_MODULES, SEC_COMMANDSTATS, SEC_ERRORSTATS, SEC_LATENCYSTATS, SEC_CLUSTER,
    SEC_KEYSPACE, SEC_PROXY, SEC_NODES, SEC_COUNT
};

/* In Redis 7.0's order, in "default" and "all" as there; the proxy's own
 * sections in both. */
static const struct {
    const char *name, *title;
    unsigned in_default : 1;
} sections[SEC_COUNT] = {
    [SEC_SERVER] = { "server", "Server", 1 },
    [SEC_CLIENTS] = { "clients", "Clients", 1 },
    [SEC_MEMORY] = { "memory", "Memory", 1 },
    [SEC_PERSISTENCE] = { "persistence", "Persistence", 1 },
    [SEC_STATS] = { "stats", "Stats", 1 },
    [SEC_REPLICATION] = { "replication", "Replication", 1 },
    [SEC_CPU] = { "cpu", "CPU", 1 },
    [SEC_MODULES] = { "modules", "Modules", 1 },
    [SEC_COMMANDSTATS] = { "commandstats", "Commandstats", 0 },
    [SEC_ERRORSTATS] = { "errorstats", "Errorstats", 1 },
    [SEC_LATENCYSTATS] = { "latencystats", "Latencystats", 0 },
    [SEC_CLUSTER] = { "cluster", "Cluster", 1 },
    [SEC_KEYSPACE] = { "keyspace", "Keyspace", 1 },
    [SEC_PROXY] = { "proxy", "Proxy", 1 },
    [SEC_NODES] = { "nodes", "Nodes", 1 },
};

#define WANTS(want, sec) ((want) & (1u << (sec)))
#define FROM_MASTERS ((1u << SEC_CLIENTS) | (1u << SEC_PERSISTENCE) | (1u << SEC_STATS) | \
                      (1u << SEC_KEYSPACE))

static unsigned sections_default(void)
{
    unsigned want = 0;
    for (int s = 0; s < SEC_COUNT; s++)
        want |= sections[s].in_default ? 1u << s : 0;
    return want;
}

/* The sections INFO's arguments ask for: none gives the default ones,
 * "all" and "everything" every one (no module adds any), names are
 * case-insensitive, an unknown one adds nothing. */
static unsigned sections_wanted(const struct request *r)
{
    unsigned want = r->argc < 2 ? sections_default() : 0;
    for (int i = 1; i < r->argc; i++) {
        if (request_arg_is(r, i, "all") || request_arg_is(r, i, "everything"))
            want |= (1u << SEC_COUNT) - 1;
        else if (request_arg_is(r, i, "default"))
            want |= sections_default();
        for (int s = 0; s < SEC_COUNT; s++)
            if (request_arg_is(r, i, sections[s].name))
                want |= 1u << s;
    }
    return want;
}

/* ---- the figures since CONFIG RESETSTAT ---- */

static pthread_mutex_t base_lock = PTHREAD_MUTEX_INITIALIZER;
static struct worker_stats base;        /* the sums at the last CONFIG RESETSTAT
                                           (cmds NULL: never reset) */
static struct {                         /* the last sample of the rates */
    uint64_t ms, commands, in, out;
    double ops, in_kbps, out_kbps;
} rate;

static uint64_t minus(uint64_t now, uint64_t then)
{
    return now > then ? now - then : 0;
}

/* s less what base holds (under base_lock). */
static void since_reset(struct worker_stats *s)
{
    if (!base.cmds)
        return;
    s->connections = minus(s->connections, base.connections);
    s->commands = minus(s->commands, base.commands);
    s->rejected_clients = minus(s->rejected_clients, base.rejected_clients);
    s->evicted_clients = minus(s->evicted_clients, base.evicted_clients);
    s->moved = minus(s->moved, base.moved);
    s->ask = minus(s->ask, base.ask);
    s->retries = minus(s->retries, base.retries);
    s->retries_exhausted = minus(s->retries_exhausted, base.retries_exhausted);
    s->lost_replies = minus(s->lost_replies, base.lost_replies);
    s->replica_acks_waits = minus(s->replica_acks_waits, base.replica_acks_waits);
    s->replica_acks_short = minus(s->replica_acks_short, base.replica_acks_short);
    s->query_limit_closes = minus(s->query_limit_closes, base.query_limit_closes);
    for (int k = 0; k < 2; k++)
        s->output_limit_closes[k] = minus(s->output_limit_closes[k], base.output_limit_closes[k]);
    s->auth_failures = minus(s->auth_failures, base.auth_failures);
    s->acl_denied_cmd = minus(s->acl_denied_cmd, base.acl_denied_cmd);
    s->acl_denied_key = minus(s->acl_denied_key, base.acl_denied_key);
    s->acl_denied_channel = minus(s->acl_denied_channel, base.acl_denied_channel);
    s->clients.in = minus(s->clients.in, base.clients.in);
    s->clients.out = minus(s->clients.out, base.clients.out);
    for (int i = 0; i < command_index_count(); i++) {
        struct stats_command *c = &s->cmds[i];
        const struct stats_command *b = &base.cmds[i];
        c->calls = minus(c->calls, b->calls);
        c->errors = minus(c->errors, b->errors);
        c->usec = minus(c->usec, b->usec);
        for (int k = 0; k < STATS_LATENCY_BUCKETS; k++)
            c->buckets[k] = minus(c->buckets[k], b->buckets[k]);
    }
    s->errors->total = minus(s->errors->total, base.errors->total);
    for (int i = 0; i < s->errors->n; i++)
        for (int k = 0; k < base.errors->n; k++)
            if (strcmp(s->errors->e[i].code, base.errors->e[k].code) == 0)
                s->errors->e[i].count = minus(s->errors->e[i].count, base.errors->e[k].count);
}

/* CONFIG RESETSTAT: what INFO shows starts again from 0. */
static int reset_stats(struct proxy *p)
{
    struct worker_stats now = { 0 };
    if (metrics_sum_workers(&now, p) < 0)
        return -1;
    pthread_mutex_lock(&base_lock);
    stats_free(&base);
    base = now;
    memset(&rate, 0, sizeof rate);
    pthread_mutex_unlock(&base_lock);
    return 0;
}

/* The rates over the time since the last sample, taken at least 100 ms
 * before (as Redis samples them), else the last ones (under base_lock). */
static void rates_update(const struct worker_stats *s)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    if (rate.ms && ms - rate.ms < 100)
        return;
    if (rate.ms) {
        double secs = (double)(ms - rate.ms) / 1000.0;
        rate.ops = (double)minus(s->commands, rate.commands) / secs;
        rate.in_kbps = (double)minus(s->clients.in, rate.in) / secs / 1024.0;
        rate.out_kbps = (double)minus(s->clients.out, rate.out) / secs / 1024.0;
    }
    rate.ms = ms;
    rate.commands = s->commands;
    rate.in = s->clients.in;
    rate.out = s->clients.out;
}

/* ---- the masters' figures ---- */

/* How the masters' values of a field make the one INFO shows. */
enum agg { AGG_MAX, AGG_SUM, AGG_MIN };

struct field {
    const char *name;
    enum agg how;
    const char *none;       /* when no master says */
};

static const struct field persistence_fields[] = {
    { "loading", AGG_MAX, "0" }, { "async_loading", AGG_MAX, "0" },
    { "current_cow_peak", AGG_MAX, "0" }, { "current_cow_size", AGG_MAX, "0" },
    { "current_cow_size_age", AGG_MAX, "0" }, { "current_fork_perc", AGG_MAX, "0.00" },
    { "current_save_keys_processed", AGG_SUM, "0" }, { "current_save_keys_total", AGG_SUM, "0" },
    { "rdb_changes_since_last_save", AGG_SUM, "0" }, { "rdb_bgsave_in_progress", AGG_MAX, "0" },
    { "rdb_last_save_time", AGG_MIN, "0" }, { "rdb_last_bgsave_status", AGG_MAX, "ok" },
    { "rdb_last_bgsave_time_sec", AGG_MAX, "-1" }, { "rdb_current_bgsave_time_sec", AGG_MAX, "-1" },
    { "rdb_saves", AGG_SUM, "0" }, { "rdb_last_cow_size", AGG_MAX, "0" },
    { "rdb_last_load_keys_expired", AGG_SUM, "0" }, { "rdb_last_load_keys_loaded", AGG_SUM, "0" },
    { "aof_enabled", AGG_MAX, "0" }, { "aof_rewrite_in_progress", AGG_MAX, "0" },
    { "aof_rewrite_scheduled", AGG_MAX, "0" }, { "aof_last_rewrite_time_sec", AGG_MAX, "-1" },
    { "aof_current_rewrite_time_sec", AGG_MAX, "-1" }, { "aof_last_bgrewrite_status", AGG_MAX, "ok" },
    { "aof_rewrites", AGG_SUM, "0" }, { "aof_rewrites_consecutive_failures", AGG_MAX, "0" },
    { "aof_last_write_status", AGG_MAX, "ok" }, { "aof_last_cow_size", AGG_MAX, "0" },
    { "module_fork_in_progress", AGG_MAX, "0" }, { "module_fork_last_cow_size", AGG_MAX, "0" },
};

/* The keys clients block on or watch: the masters' (Redis 7.2 and 7.4,
 * Valkey 8), where the proxy's clients' blocking commands and WATCHes run. */
static const struct field data_clients_fields[] = {
    { "total_blocking_keys", AGG_SUM, "0" }, { "total_blocking_keys_on_nokey", AGG_SUM, "0" },
    { "total_watched_keys", AGG_SUM, "0" },
};

/* The stats of the data (the rest of the section is the proxy's); the last
 * ones are Redis 7.4's and Valkey 8's. */
static const struct field data_stats_fields[] = {
    { "total_net_repl_input_bytes", AGG_SUM, "0" }, { "total_net_repl_output_bytes", AGG_SUM, "0" },
    { "instantaneous_input_repl_kbps", AGG_SUM, "0.00" },
    { "instantaneous_output_repl_kbps", AGG_SUM, "0.00" },
    { "sync_full", AGG_SUM, "0" }, { "sync_partial_ok", AGG_SUM, "0" },
    { "sync_partial_err", AGG_SUM, "0" }, { "expired_keys", AGG_SUM, "0" },
    { "expired_stale_perc", AGG_MAX, "0.00" }, { "expired_time_cap_reached_count", AGG_SUM, "0" },
    { "expire_cycle_cpu_milliseconds", AGG_SUM, "0" }, { "evicted_keys", AGG_SUM, "0" },
    { "total_eviction_exceeded_time", AGG_SUM, "0" },
    { "current_eviction_exceeded_time", AGG_MAX, "0" }, { "keyspace_hits", AGG_SUM, "0" },
    { "keyspace_misses", AGG_SUM, "0" }, { "pubsub_channels", AGG_SUM, "0" },
    { "pubsub_patterns", AGG_SUM, "0" }, { "pubsubshard_channels", AGG_SUM, "0" },
    { "latest_fork_usec", AGG_MAX, "0" }, { "total_forks", AGG_SUM, "0" },
    { "migrate_cached_sockets", AGG_SUM, "0" }, { "slave_expires_tracked_keys", AGG_SUM, "0" },
    { "active_defrag_hits", AGG_SUM, "0" }, { "active_defrag_misses", AGG_SUM, "0" },
    { "active_defrag_key_hits", AGG_SUM, "0" }, { "active_defrag_key_misses", AGG_SUM, "0" },
    { "total_active_defrag_time", AGG_SUM, "0" }, { "current_active_defrag_time", AGG_MAX, "0" },
    { "dump_payload_sanitizations", AGG_SUM, "0" }, { "expired_subkeys", AGG_SUM, "0" },
    { "evicted_scripts", AGG_SUM, "0" },
};

/* The value of field in the section titled title of a master's INFO text
 * (NUL-terminated), copied into out; 0 when it has none. */
static int master_value(const char *text, const char *title, const char *field, char *out,
                        size_t cap)
{
    char head[40];
    snprintf(head, sizeof head, "# %s\r\n", title);
    const char *at = text ? strstr(text, head) : NULL;
    size_t flen = strlen(field);
    while (at && (at = strstr(at, "\r\n")) != NULL) {
        at += 2;
        if (*at == '#' || (at[0] == '\r' && at[1] == '\n'))
            return 0;                   /* the next section */
        if (strncmp(at, field, flen) == 0 && at[flen] == ':') {
            size_t n = strcspn(at + flen + 1, "\r\n");
            snprintf(out, cap, "%.*s", (int)n, at + flen + 1);
            return 1;
        }
    }
    return 0;
}

/* "name:value" of f from the masters' texts, as f->how says; a word
 * (a status) is "ok" unless a master says otherwise. */
static void put_master_field(struct evbuffer *t, const char *title, const struct field *f,
                             const char *const *texts, int n)
{
    char v[64], word[64] = "";
    long long whole = 0;
    double real = 0;
    int have = 0, is_real = 0;
    for (int i = 0; i < n; i++) {
        char *end;
        if (!master_value(texts[i], title, f->name, v, sizeof v))
            continue;
        double d = strtod(v, &end);
        if (*end || end == v) {
            if (!word[0] || strcmp(word, "ok") == 0)
                snprintf(word, sizeof word, "%s", v);
            continue;
        }
        long long w = strtoll(v, NULL, 10);
        is_real |= strchr(v, '.') != NULL;
        if (!have) {
            whole = w;
            real = d;
        } else if (f->how == AGG_SUM) {
            whole += w;
            real += d;
        } else if ((f->how == AGG_MAX) == (d > real)) {
            whole = w;
            real = d;
        }
        have = 1;
    }
    if (word[0])
        evbuffer_add_printf(t, "%s:%s\r\n", f->name, word);
    else if (!have)
        evbuffer_add_printf(t, "%s:%s\r\n", f->name, f->none);
    else if (is_real)
        evbuffer_add_printf(t, "%s:%.2f\r\n", f->name, real);
    else
        evbuffer_add_printf(t, "%s:%lld\r\n", f->name, whole);
}

static void put_master_fields(struct evbuffer *t, const char *title, const struct field *fields,
                              size_t nfields, const char *const *texts, int n)
{
    for (size_t i = 0; i < nfields; i++)
        put_master_field(t, title, &fields[i], texts, n);
}

/* ---- the sections ---- */

struct info {
    struct request *r;
    struct proxy *p;
    struct metrics m;               /* figures since CONFIG RESETSTAT */
    const char *const *texts;       /* the masters' INFO (NUL-terminated; NULL entries) */
    int ntexts;
    struct evbuffer *t;
};

/* A listener line as Redis 7.2 writes it: listener<slot>:name=<type>,
 * bind=<host>[,port=<port>]; the slot is the connection type's (0 tcp,
 * 1 unix, 2 tls). addr: "host:port", "[v6]:port", or a socket path. */
static void put_listener(struct evbuffer *t, int slot, const char *name, const char *addr,
                         int has_port)
{
    char *host;
    int port;
    if (has_port && hostport_parse(addr, &host, &port) == 0) {
        evbuffer_add_printf(t, "listener%d:name=%s,bind=%s,port=%d\r\n", slot, name, host, port);
        free(host);
    } else {
        evbuffer_add_printf(t, "listener%d:name=%s,bind=%s\r\n", slot, name, addr);
    }
}

static void section_server(struct info *in)
{
    struct utsname u;
    struct timeval now;
    char exe[512] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    uname(&u);
    gettimeofday(&now, NULL);
    const char *port = strrchr(in->p->cfg.listen, ':');
    const char *path = in->r->worker->cfg->path;
    const struct topology_server *server = worker_server(in->r->worker);
    int valkey = strcmp(server->name, "redis") != 0;
    /* as the cluster's server writes its name: Valkey 8 its own, and
     * server_mode for redis_mode */
    evbuffer_add_printf(in->t, "redis_version:%s\r\n", server->redis_version);
    if (valkey)
        evbuffer_add_printf(in->t, "server_name:%s\r\n%s_version:%s\r\n", server->name,
                            server->name, server->version);
    evbuffer_add_printf(in->t,
        "redis_git_sha1:00000000\r\nredis_git_dirty:0\r\n"
        "redis_build_id:0\r\n%s_mode:standalone\r\nos:%s %s %s\r\narch_bits:%d\r\n"
        "monotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\n"
        "atomicvar_api:c11-builtin\r\ngcc_version:%d.%d.%d\r\nprocess_id:%d\r\n"
        "process_supervised:no\r\nrun_id:%s\r\ntcp_port:%s\r\nserver_time_usec:%lld\r\n"
        "uptime_in_seconds:%llu\r\nuptime_in_days:%llu\r\nhz:10\r\nconfigured_hz:10\r\n"
        "lru_clock:%lld\r\nexecutable:%s\r\nconfig_file:%s\r\nio_threads_active:0\r\n"
        "tagproxy_version:%s\r\nthreads:%d\r\n",
        valkey ? "server" : "redis", u.sysname, u.release, u.machine, (int)(8 * sizeof(long)),
        __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__, (int)getpid(), in->p->id,
        port ? port + 1 : "", (long long)now.tv_sec * 1000000 + now.tv_usec,
        (unsigned long long)in->m.uptime_s, (unsigned long long)in->m.uptime_s / 86400,
        (long long)(now.tv_sec & ((1 << 24) - 1)), exe, path ? path : "", TAGPROXY_VERSION,
        in->m.threads);
    const struct config *cfg = &in->p->cfg;     /* listeners change with a restart */
    put_listener(in->t, 0, "tcp", cfg->listen, 1);
    if (cfg->unixsocket)
        put_listener(in->t, 1, "unix", cfg->unixsocket, 0);
    if (cfg->tls_listen)
        put_listener(in->t, 2, "tls", cfg->tls_listen, 1);
}

static void section_clients(struct info *in)
{
    long long blocked = 0, watching = 0, pubsub = 0;
    for (int i = 0; i < in->p->nworkers; i++) {
        struct worker *w = &in->p->workers[i];
        struct client *c;
        pthread_mutex_lock(&w->clients_lock);
        TAILQ_FOREACH(c, &w->clients, link) {
            struct client_counts n;
            if (c->state == CLIENT_GONE)
                continue;
            client_counts(c, &n);
            blocked += n.blocked;
            watching += n.watching;
            pubsub += n.sub + n.psub + n.ssub > 0;
        }
        pthread_mutex_unlock(&w->clients_lock);
    }
    struct tracking_totals tr;
    tracking_totals(in->p, &tr);
    evbuffer_add_printf(in->t,
        "connected_clients:%lld\r\ncluster_connections:0\r\nmaxclients:%d\r\n"
        "client_recent_max_input_buffer:0\r\nclient_recent_max_output_buffer:0\r\n"
        "blocked_clients:%lld\r\ntracking_clients:%lld\r\nclients_in_timeout_table:%lld\r\n"
        "pubsub_clients:%lld\r\nwatching_clients:%lld\r\n",
        (long long)in->m.clients, in->m.max_clients, blocked, tr.clients, blocked, pubsub,
        watching);
    put_master_fields(in->t, "Clients", data_clients_fields,
                      sizeof data_clients_fields / sizeof data_clients_fields[0], in->texts,
                      in->ntexts);
}

/* Bytes as Redis's bytesToHuman writes them. */
static void human(char *out, size_t cap, double b)
{
    static const char units[] = "BKMGTPE";
    int u = 0;
    while (b >= 1024 && u < 6) {
        b /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, cap, "%.0fB", b);
    else
        snprintf(out, cap, "%.2f%c", b, units[u]);
}

static void section_memory(struct info *in)
{
    static uint64_t peak;               /* the most used_memory seen by INFO */
    struct mallinfo2 mi = mallinfo2();
    struct procstat ps;
    procstat_read(&ps);
    uint64_t used = (uint64_t)(mi.uordblks + mi.hblkhd);
    uint64_t seen = __atomic_load_n(&peak, __ATOMIC_RELAXED);
    while (used > seen && !__atomic_compare_exchange_n(&peak, &seen, used, 0, __ATOMIC_RELAXED,
                                                       __ATOMIC_RELAXED))
        ;
    uint64_t top = used > seen ? used : seen;
    uint64_t total = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t clients = in->m.client_memory;
    char h_used[32], h_rss[32], h_peak[32], h_total[32];
    human(h_used, sizeof h_used, (double)used);
    human(h_rss, sizeof h_rss, (double)ps.resident_bytes);
    human(h_peak, sizeof h_peak, (double)top);
    human(h_total, sizeof h_total, (double)total);
    double frag = used ? (double)ps.resident_bytes / (double)used : 0;
    evbuffer_add_printf(in->t,
        "used_memory:%llu\r\nused_memory_human:%s\r\nused_memory_rss:%llu\r\n"
        "used_memory_rss_human:%s\r\nused_memory_peak:%llu\r\nused_memory_peak_human:%s\r\n"
        "used_memory_peak_perc:%.2f%%\r\nused_memory_overhead:%llu\r\nused_memory_startup:0\r\n"
        "used_memory_dataset:0\r\nused_memory_dataset_perc:0.00%%\r\n"
        "allocator_allocated:%llu\r\nallocator_active:%llu\r\nallocator_resident:%llu\r\n"
        "allocator_muzzy:0\r\n"
        "total_system_memory:%llu\r\ntotal_system_memory_human:%s\r\n"
        "used_memory_lua:0\r\nused_memory_vm_eval:0\r\nused_memory_lua_human:0B\r\n"
        "used_memory_scripts_eval:0\r\nnumber_of_cached_scripts:0\r\nnumber_of_functions:0\r\n"
        "number_of_libraries:0\r\nused_memory_vm_functions:0\r\nused_memory_vm_total:0\r\n"
        "used_memory_vm_total_human:0B\r\nused_memory_functions:0\r\nused_memory_scripts:0\r\n"
        "used_memory_scripts_human:0B\r\nmaxmemory:0\r\nmaxmemory_human:0B\r\n"
        "maxmemory_policy:noeviction\r\nallocator_frag_ratio:1.00\r\nallocator_frag_bytes:0\r\n"
        "allocator_rss_ratio:1.00\r\nallocator_rss_bytes:0\r\nrss_overhead_ratio:1.00\r\n"
        "rss_overhead_bytes:0\r\nmem_fragmentation_ratio:%.2f\r\nmem_fragmentation_bytes:%lld\r\n"
        "mem_not_counted_for_evict:0\r\nmem_replication_backlog:0\r\n"
        "mem_total_replication_buffers:0\r\nmem_clients_slaves:0\r\nmem_clients_normal:%llu\r\n"
        "mem_cluster_links:0\r\nmem_aof_buffer:0\r\nmem_allocator:libc\r\n"
        "mem_overhead_db_hashtable_rehashing:0\r\n"
        "active_defrag_running:0\r\nlazyfree_pending_objects:0\r\nlazyfreed_objects:0\r\n",
        (unsigned long long)used, h_used, (unsigned long long)ps.resident_bytes, h_rss,
        (unsigned long long)top, h_peak, top ? 100.0 * (double)used / (double)top : 0,
        (unsigned long long)clients, (unsigned long long)used,
        (unsigned long long)(mi.arena + mi.hblkhd), (unsigned long long)ps.resident_bytes,
        (unsigned long long)total, h_total, frag,
        (long long)ps.resident_bytes - (long long)used, (unsigned long long)clients);
}

/* The proxy's own figures, and its client-side caching tables' memory. */
static void section_proxy(struct info *in)
{
    struct tracking_totals tr;
    metrics_info_proxy(&in->m, in->t);
    tracking_totals(in->p, &tr);
    evbuffer_add_printf(in->t, "tracking_table_bytes:%lld\r\n", tr.bytes);
}

static void section_stats(struct info *in)
{
    struct tracking_totals tr;
    tracking_totals(in->p, &tr);
    const struct worker_stats *s = &in->m.sum;
    pthread_mutex_lock(&base_lock);
    rates_update(s);
    double ops = rate.ops, in_kbps = rate.in_kbps, out_kbps = rate.out_kbps;
    pthread_mutex_unlock(&base_lock);
    evbuffer_add_printf(in->t,
        "total_connections_received:%llu\r\ntotal_commands_processed:%llu\r\n"
        "instantaneous_ops_per_sec:%.0f\r\ntotal_net_input_bytes:%llu\r\n"
        "total_net_output_bytes:%llu\r\ninstantaneous_input_kbps:%.2f\r\n"
        "instantaneous_output_kbps:%.2f\r\nrejected_connections:%llu\r\nevicted_clients:%llu\r\n"
        "tracking_total_keys:%lld\r\ntracking_total_items:%lld\r\ntracking_total_prefixes:%lld\r\n"
        "unexpected_error_replies:0\r\ntotal_error_replies:%llu\r\n"
        "total_reads_processed:0\r\ntotal_writes_processed:0\r\n"
        "io_threaded_reads_processed:0\r\nio_threaded_writes_processed:0\r\n"
        "reply_buffer_shrinks:0\r\nreply_buffer_expands:0\r\n"
        "eventloop_cycles:0\r\neventloop_duration_sum:0\r\neventloop_duration_cmd_sum:0\r\n"
        "instantaneous_eventloop_cycles_per_sec:0\r\ninstantaneous_eventloop_duration_usec:0\r\n"
        "acl_access_denied_auth:%llu\r\nacl_access_denied_cmd:%llu\r\n"
        "acl_access_denied_key:%llu\r\nacl_access_denied_channel:%llu\r\n"
        "client_query_buffer_limit_disconnections:%llu\r\n"
        "client_output_buffer_limit_disconnections:%llu\r\n"
        "io_threaded_freed_objects:0\r\nio_threaded_poll_processed:0\r\n"
        "io_threaded_total_prefetch_batches:0\r\nio_threaded_total_prefetch_entries:0\r\n",
        (unsigned long long)s->connections, (unsigned long long)s->commands, ops,
        (unsigned long long)s->clients.in, (unsigned long long)s->clients.out, in_kbps,
        out_kbps, (unsigned long long)s->rejected_clients,
        (unsigned long long)s->evicted_clients, tr.keys, tr.items, tr.prefixes,
        (unsigned long long)s->errors->total,
        (unsigned long long)s->auth_failures, (unsigned long long)s->acl_denied_cmd,
        (unsigned long long)s->acl_denied_key, (unsigned long long)s->acl_denied_channel,
        (unsigned long long)s->query_limit_closes,
        (unsigned long long)(s->output_limit_closes[0] + s->output_limit_closes[1]));
    put_master_fields(in->t, "Stats", data_stats_fields,
                      sizeof data_stats_fields / sizeof data_stats_fields[0], in->texts,
                      in->ntexts);
    evbuffer_add_printf(in->t,
        "cluster_moved:%llu\r\ncluster_ask:%llu\r\ncluster_retries:%llu\r\n"
        "cluster_retries_exhausted:%llu\r\nlost_replies:%llu\r\ntopology_refreshes:%llu\r\n",
        (unsigned long long)s->moved, (unsigned long long)s->ask,
        (unsigned long long)s->retries, (unsigned long long)s->retries_exhausted,
        (unsigned long long)s->lost_replies, (unsigned long long)in->m.refreshes);
}

static void section_replication(struct info *in)
{
    evbuffer_add_printf(in->t,
        "role:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\n"
        "master_replid:%s\r\nmaster_replid2:0000000000000000000000000000000000000000\r\n"
        "master_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\n"
        "repl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:0\r\n"
        "repl_backlog_histlen:0\r\nreplicas_waiting_psync:0\r\n", in->p->id);
}

static double seconds(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void section_cpu(struct info *in)
{
    struct rusage self, children;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &children);
    evbuffer_add_printf(in->t,
        "used_cpu_sys:%.6f\r\nused_cpu_user:%.6f\r\nused_cpu_sys_children:%.6f\r\n"
        "used_cpu_user_children:%.6f\r\nused_cpu_sys_main_thread:%.6f\r\n"
        "used_cpu_user_main_thread:%.6f\r\n",
        seconds(self.ru_stime), seconds(self.ru_utime), seconds(children.ru_stime),
        seconds(children.ru_utime), seconds(self.ru_stime), seconds(self.ru_utime));
}

static void section_errorstats(struct info *in)
{
    const struct stats_errors *e = in->m.sum.errors;
    for (int i = 0; i < e->n; i++)
        if (e->e[i].count)
            evbuffer_add_printf(in->t, "errorstat_%s:count=%llu\r\n", e->e[i].code,
                                (unsigned long long)e->e[i].count);
}

/* The upper bound of the latency bucket that holds the q-th share of c's
 * calls (the histogram's resolution: STATS_LATENCY_BOUNDS_US). */
static double percentile(const struct stats_command *c, double q)
{
    uint64_t want = (uint64_t)(q * (double)c->calls + 0.999999), seen = 0;
    for (int k = 0; k < STATS_LATENCY_BUCKETS; k++) {
        seen += c->buckets[k];
        if (seen >= want && seen > 0)
            return (double)stats_latency_bounds_us[k < STATS_LATENCY_NBOUNDS ? k
                                                    : STATS_LATENCY_NBOUNDS - 1];
    }
    return 0;
}

static void section_latencystats(struct info *in)
{
    for (int i = 0; i < command_index_count(); i++) {
        const struct stats_command *c = &in->m.sum.cmds[i];
        if (c->calls)
            evbuffer_add_printf(in->t, "latency_percentiles_usec_%s:p50=%.3f,p99=%.3f,"
                                "p99.9=%.3f\r\n", command_by_index(i)->fullname,
                                percentile(c, 0.5), percentile(c, 0.99), percentile(c, 0.999));
    }
}

/* db0 summed over the masters; subexpiry (Redis 7.4: hashes with a field
 * TTL) when a master writes it. */
static void section_keyspace(struct info *in)
{
    long long keys = 0, expires = 0, ttl_weighted = 0, subexpiry = 0;
    int has_subexpiry = 0;
    for (int i = 0; i < in->ntexts; i++) {
        const char *db0 = in->texts[i] ? strstr(in->texts[i], "\r\ndb0:") : NULL;
        long long k = 0, e = 0, t = 0, x = 0;
        int n = db0 ? sscanf(db0 + 2, "db0:keys=%lld,expires=%lld,avg_ttl=%lld,subexpiry=%lld",
                             &k, &e, &t, &x) : 0;
        if (n >= 2) {
            keys += k;
            expires += e;
            ttl_weighted += t * e;
            subexpiry += x;
            has_subexpiry |= n == 4;
        }
    }
    if (keys == 0)
        return;
    evbuffer_add_printf(in->t, "db0:keys=%lld,expires=%lld,avg_ttl=%lld", keys, expires,
                        expires ? ttl_weighted / expires : 0);
    if (has_subexpiry)
        evbuffer_add_printf(in->t, ",subexpiry=%lld", subexpiry);
    evbuffer_add(in->t, "\r\n", 2);
}

/* The body of section s (its "# Title" line and the blank line before it
 * are the caller's). */
static void section_body(struct info *in, enum section s, struct evbuffer *t)
{
    in->t = t;
    switch (s) {
    case SEC_SERVER: section_server(in); break;
    case SEC_CLIENTS: section_clients(in); break;
    case SEC_MEMORY: section_memory(in); break;
    case SEC_PERSISTENCE:
        put_master_fields(t, "Persistence", persistence_fields,
                          sizeof persistence_fields / sizeof persistence_fields[0], in->texts,
                          in->ntexts);
        break;
    case SEC_STATS: section_stats(in); break;
    case SEC_REPLICATION: section_replication(in); break;
    case SEC_CPU: section_cpu(in); break;
    case SEC_MODULES: break;
    case SEC_COMMANDSTATS: metrics_info_commandstats(&in->m, t); break;
    case SEC_ERRORSTATS: section_errorstats(in); break;
    case SEC_LATENCYSTATS: section_latencystats(in); break;
    case SEC_CLUSTER: evbuffer_add_printf(t, "cluster_enabled:0\r\n"); break;
    case SEC_KEYSPACE: section_keyspace(in); break;
    case SEC_PROXY: section_proxy(in); break;
    case SEC_NODES: metrics_info_nodes(&in->m, t); break;
    case SEC_COUNT: break;
    }
}

/* INFO's text, the masters' texts given (NULL entries where one failed),
 * into r's reply. As Redis: the sections in their order, a blank line
 * between two. */
static void info_render(struct request *r, const char *const *texts, int n)
{
    struct info in = { .r = r, .p = r->worker->proxy, .texts = texts, .ntexts = n };
    unsigned want = sections_wanted(r);
    if (metrics_collect(&in.m, in.p) < 0) {
        resp_add_error(request_out(r), REPLY_ERR_OOM);
        return;
    }
    in.m.max_clients = r->worker->cfg->max_clients;     /* as reloaded */
    pthread_mutex_lock(&base_lock);
    since_reset(&in.m.sum);
    pthread_mutex_unlock(&base_lock);
    struct evbuffer *t = evbuffer_new();
    int shown = 0;
    for (int s = 0; t && s < SEC_COUNT; s++) {
        if (!WANTS(want, s))
            continue;
        evbuffer_add_printf(t, "%s# %s\r\n", shown++ ? "\r\n" : "", sections[s].title);
        section_body(&in, (enum section)s, t);
    }
    metrics_free(&in.m);
    if (!t) {
        resp_add_error(request_out(r), REPLY_ERR_OOM);
        return;
    }
    size_t len = evbuffer_get_length(t);
    resp_add_verbatim(request_out(r), request_resp(r), (const char *)evbuffer_pullup(t, -1), len);
    evbuffer_free(t);
}

/* The masters' INFO texts (merge_keyspace's), an error's as NULL; the array is
 * on the heap (one INFO, not a hot path) so no stack is sized by the part
 * count. */
static void merge_info(struct request *p, struct evbuffer *out)
{
    const char **texts = calloc(p->nparts > 0 ? (size_t)p->nparts : 1, sizeof *texts);
    if (!texts) {
        resp_add_error(out, REPLY_ERR_OOM);
        return;
    }
    for (int i = 0; i < p->nparts; i++) {
        struct evbuffer *b = request_reply_buffer(p->parts[i]);
        evbuffer_add(b, "", 1);          /* NUL-terminate for parsing */
        const char *text = (const char *)evbuffer_pullup(b, -1);
        texts[i] = text && text[0] != '-' ? text : NULL;
    }
    info_render(p, texts, p->nparts);
    free(texts);
}

/* INFO: the masters are asked only for the sections that are theirs. */
static void cmd_info(struct request *r)
{
    if (sections_wanted(r) & FROM_MASTERS) {
        const char *argv[] = { "INFO", "clients", "persistence", "stats", "keyspace" };
        const size_t lens[] = { 4, 7, 11, 5, 8 };
        router_fanout(r, &merge_keyspace, 5, argv, lens);
        return;
    }
    info_render(r, NULL, 0);
    request_finish(r);
}

/* CONFIG RESETSTAT: the masters' statistics and the proxy's that INFO
 * shows (its Prometheus counters go on rising). */
static void cmd_resetstat(struct request *r)
{
    if (r->worker->cfg->enable_dangerous_commands && reset_stats(r->worker->proxy) < 0) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    router_plan_dangerous(r, 1);
}

static void cmd_dbsize(struct request *r)
{
    const char *argv[1] = { "DBSIZE" };
    size_t lens[1] = { 6 };
    router_fanout(r, &merge_sum, 1, argv, lens);
}

/* ---- routes ---- */

static const struct route_entry info_routes[] = {
    ROUTE_ASKING("info", cmd_info), ROUTE_ASKING("dbsize", cmd_dbsize),
    { "config|resetstat", { .plan = ROUTE_FAMILY, .run = cmd_resetstat, .in_multi = TXC_OTHER,
                            .keyless = 1 } },
};

void info_register(void)
{
    route_register(info_routes, (int)(sizeof info_routes / sizeof info_routes[0]));
}
