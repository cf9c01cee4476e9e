#include "proxy/core/metrics.h"

#include <event2/buffer.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/base/procstat.h"
#include "lib/base/version.h"
#include "cluster/learned.h"
#include "proxy/core/client.h"
#include "proxy/core/proxy.h"
#include "proxy/core/worker.h"
#include "lib/proto/command.h"

int metrics_sum_workers(struct worker_stats *sum, struct proxy *p)
{
    const struct worker_stats *each[CONFIG_MAX_THREADS];
    if (p->nworkers > CONFIG_MAX_THREADS || stats_init(sum) < 0)
        return -1;
    for (int i = 0; i < p->nworkers; i++)
        each[i] = &p->workers[i].stats;
    stats_sum(sum, each, p->nworkers);
    return 0;
}

int metrics_collect(struct metrics *m, struct proxy *p)
{
    memset(m, 0, sizeof *m);
    /* clients first: a worker counts a client's bytes before it counts the
     * client gone, so a snapshot without a client has all of its bytes */
    m->clients = __atomic_load_n(&p->nclients, __ATOMIC_ACQUIRE);
    if (metrics_sum_workers(&m->sum, p) < 0)
        return -1;
    m->max_clients = p->cfg.max_clients;
    m->threads = p->nworkers;
    m->uptime_s = (uint64_t)(time(NULL) - p->started);
    m->started = (long long)p->started;
    m->reloads[0] = stat_get(&p->reloads[0]);
    m->reloads[1] = stat_get(&p->reloads[1]);
    m->client_memory = client_mem_total(p);
    m->maxmemory_clients = p->cfg.maxmemory_clients;
    m->refreshes = stat_get(&p->refreshes);
    m->refresh_failures = stat_get(&p->refresh_failures);
    m->draining = proxy_draining();
    if (masters_view(&m->nodes) < 0) {
        metrics_free(m);
        return -1;
    }
    return 0;
}

void metrics_free(struct metrics *m)
{
    stats_free(&m->sum);
    free(m->nodes.masters);
    m->nodes.masters = NULL;
}

/* ---- Prometheus ---- */

static void prom_head(struct evbuffer *b, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void prom_one(struct evbuffer *b, const char *name, const char *type, const char *help,
                     unsigned long long v)
{
    prom_head(b, name, type, help);
    evbuffer_add_printf(b, "%s %llu\n", name, v);
}

static void prom_gauge(struct evbuffer *b, const char *name, const char *help, long long v)
{
    prom_head(b, name, "gauge", help);
    evbuffer_add_printf(b, "%s %lld\n", name, v);
}

/* A label value as the text format wants it: \ " and newline escaped. */
static void prom_label(struct evbuffer *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            evbuffer_add_printf(b, "\\%c", *v);
        else if (*v == '\n')
            evbuffer_add(b, "\\n", 2);
        else
            evbuffer_add(b, v, 1);
    }
}

/* A gauge with one sample per master of v, labelled by its address: the
 * int at offset `field` of its master_state. */
static void prom_per_master(struct evbuffer *b, const struct masters_view *v, const char *name,
                            const char *help, size_t field)
{
    prom_head(b, name, "gauge", help);
    for (int i = 0; i < v->nmasters; i++) {
        evbuffer_add_printf(b, "%s{master=\"", name);
        prom_label(b, v->masters[i].addr);
        evbuffer_add_printf(b, "\"} %d\n", *(const int *)((const char *)&v->masters[i] + field));
    }
}

static void prom_counters(const struct metrics *m, struct evbuffer *b)
{
    const struct worker_stats *s = &m->sum;
    prom_one(b, "tagproxy_clients_accepted_total", "counter",
             "Client connections accepted.", s->connections);
    prom_one(b, "tagproxy_clients_refused_total", "counter",
             "Client connections refused (max-clients).", s->rejected_clients);
    prom_one(b, "tagproxy_clients_evicted_total", "counter",
             "Clients closed because all clients together held more than maxmemory-clients.",
             s->evicted_clients);
    prom_one(b, "tagproxy_client_protocol_errors_total", "counter",
             "Clients closed for a protocol error.", s->protocol_errors);
    prom_one(b, "tagproxy_commands_total", "counter", "Commands read from clients.",
             s->commands);
    prom_one(b, "tagproxy_commands_unknown_total", "counter",
             "Commands answered 'unknown command'.", s->unknown_commands);
    int learned, overrides;
    learned_counts(&learned, &overrides);
    prom_gauge(b, "tagproxy_commands_learned", "Commands the cluster knows and the proxy's "
               "built-in table lacks, learned from the masters' COMMAND.", learned);
    prom_gauge(b, "tagproxy_commands_learned_overrides", "Built-in commands the cluster "
               "describes otherwise (its arity wins).", overrides);
    prom_one(b, "tagproxy_commands_learned_refused_total", "counter",
             "Commands the cluster knows that the proxy refused (only some masters know "
             "them, or they cannot be routed).", s->learned_refused);
    prom_head(b, "tagproxy_redirects_total", "counter",
              "Redirects from the cluster, by type (moved: slot remapped; ask: one-time).");
    evbuffer_add_printf(b, "tagproxy_redirects_total{type=\"moved\"} %llu\n"
                        "tagproxy_redirects_total{type=\"ask\"} %llu\n",
                        (unsigned long long)s->moved, (unsigned long long)s->ask);
    prom_one(b, "tagproxy_script_redirects_unconfirmed_total", "counter",
             "Script replies shaped as MOVED/ASK/TRYAGAIN/CLUSTERDOWN that the cluster's "
             "state did not confirm: given to the client as they are, not resent.",
             s->script_redirects_unconfirmed);
    prom_one(b, "tagproxy_retries_total", "counter",
             "Commands resent after a backoff (TRYAGAIN, CLUSTERDOWN, redirect limit, "
             "unreachable node).", s->retries);
    prom_one(b, "tagproxy_retries_exhausted_total", "counter",
             "Commands that got their error after retry-attempts retries.", s->retries_exhausted);
    prom_one(b, "tagproxy_lost_replies_total", "counter",
             "Commands whose node connection was lost after they were written "
             "(the client is told the command may have run).", s->lost_replies);
    prom_one(b, "tagproxy_replica_acks_waits_total", "counter",
             "WAITs sent after writes for replica-acks.", s->replica_acks_waits);
    prom_one(b, "tagproxy_replica_acks_short_total", "counter",
             "Writes answered that they ran but too few replicas acknowledged them "
             "(replica-acks).", s->replica_acks_short);
    prom_one(b, "tagproxy_reads_master_total", "counter",
             "Reads (readonly commands) sent to masters.", s->reads_master);
    prom_one(b, "tagproxy_reads_replica_total", "counter",
             "Reads sent to replicas (read-from).", s->reads_replica);
    prom_one(b, "tagproxy_reads_replica_back_total", "counter",
             "Reads a replica sent back to its master (a redirect, a failure).",
             s->reads_replica_back);
    prom_one(b, "tagproxy_client_bytes_received_total", "counter", "Bytes read from clients.",
             s->clients.in);
    prom_one(b, "tagproxy_client_bytes_sent_total", "counter", "Bytes written to clients.",
             s->clients.out);
    prom_one(b, "tagproxy_node_bytes_sent_total", "counter",
             "Bytes written to cluster nodes by the workers.", s->nodes.bytes.out);
    prom_one(b, "tagproxy_node_bytes_received_total", "counter",
             "Bytes read from cluster nodes by the workers.", s->nodes.bytes.in);
    prom_one(b, "tagproxy_index_sync_scripts_total", "counter",
             "Index-sync scripts run for writes to indexed key families.", s->index_syncs);
    prom_one(b, "tagproxy_listing_fanouts_total", "counter",
             "Listings (KEYS, SCAN) answered from the bucket indexes.", s->listing_fanouts);
    prom_one(b, "tagproxy_round_pauses_total", "counter",
             "Event-loop rounds followed by a pause (round-pause-us; none when the work after the writes used it up).", s->round_pauses);
    prom_one(b, "tagproxy_io_uring_workers", "gauge",
             "Workers reading and writing their sockets in batches (io-uring).", s->io_uring);
    prom_one(b, "tagproxy_io_batches_total", "counter",
             "System calls that carried a batch of socket reads or sends.", s->io_batches);
    prom_one(b, "tagproxy_io_batched_operations_total", "counter",
             "Socket reads and sends carried by those batches.", s->io_batched_ops);
    prom_gauge(b, "tagproxy_requests_held", "Requests allocated, in use or pooled.",
               s->requests_held);
    prom_gauge(b, "tagproxy_requests_pooled", "Requests kept for reuse.", s->requests_pooled);
    prom_gauge(b, "tagproxy_io_buffer_bytes", "Bytes of the workers' flat socket buffers, "
               "pooled ones included.", s->io_buffer_bytes);
}

static void prom_nodes(const struct metrics *m, struct evbuffer *b)
{
    const struct stats_nodes *n = &m->sum.nodes;
    prom_head(b, "tagproxy_node_connections", "gauge",
              "The workers' connections to masters, by state.");
    evbuffer_add_printf(b, "tagproxy_node_connections{state=\"connecting\"} %lld\n"
                        "tagproxy_node_connections{state=\"ready\"} %lld\n",
                        (long long)n->connecting, (long long)n->ready);
    prom_one(b, "tagproxy_node_connects_total", "counter",
             "Connections to masters started by the workers.", n->connects);
    prom_one(b, "tagproxy_node_connect_failures_total", "counter",
             "Worker connections to masters that failed before they were up.",
             n->connect_failures);
    prom_one(b, "tagproxy_node_disconnects_total", "counter",
             "Worker connections to masters closed after they were up.", n->closed);
    prom_one(b, "tagproxy_node_timeouts_total", "counter",
             "Worker connections closed because a node did not answer in time.", n->timeouts);
    prom_one(b, "tagproxy_node_batches_total", "counter",
             "Batches of commands written on the workers' shared master connections "
             "(commands / batches: how many a master reads per wakeup).", n->batches);
    prom_gauge(b, "tagproxy_masters", "Masters in the slot map.", m->nodes.nmasters);
    prom_gauge(b, "tagproxy_slots_covered", "Slots the slot map assigns to a master.",
               m->nodes.slots_covered);
    prom_per_master(b, &m->nodes, "tagproxy_master_up",
                    "1 when the master answers the admin thread's PING probe, 0 when not, "
                    "-1 when not probed (admin-listen off).", offsetof(struct master_state, up));
    prom_per_master(b, &m->nodes, "tagproxy_master_slots", "Slots each master owns.",
                    offsetof(struct master_state, slots));
    prom_per_master(b, &m->nodes, "tagproxy_master_replicas",
                    "Replicas each master has, as the cluster's CLUSTER SLOTS lists them "
                    "(replica-acks waits for them).", offsetof(struct master_state, replicas));
    prom_one(b, "tagproxy_topology_refreshes_total", "counter",
             "Slot map reads (CLUSTER SLOTS), successful or not.", m->refreshes);
    prom_one(b, "tagproxy_topology_refresh_failures_total", "counter",
             "Slot map reads that got no usable map.", m->refresh_failures);
    prom_gauge(b, "tagproxy_topology_version", "Version of the slot map in use.",
               (long long)m->nodes.topology_version);
}

/* Seconds, from microseconds, as the text format wants floats. */
static void prom_seconds(struct evbuffer *b, uint64_t usec)
{
    evbuffer_add_printf(b, "%llu.%06llu", (unsigned long long)(usec / 1000000),
                        (unsigned long long)(usec % 1000000));
}

static void prom_command(struct evbuffer *b, const char *name, const struct stats_command *c)
{
    uint64_t cumulative = 0;
    for (int i = 0; i < STATS_LATENCY_BUCKETS; i++) {
        cumulative += c->buckets[i];
        evbuffer_add_printf(b, "tagproxy_command_duration_seconds_bucket{cmd=\"%s\",le=\"",
                            name);
        if (i < STATS_LATENCY_NBOUNDS)
            prom_seconds(b, stats_latency_bounds_us[i]);
        else
            evbuffer_add(b, "+Inf", 4);
        evbuffer_add_printf(b, "\"} %llu\n", (unsigned long long)cumulative);
    }
    evbuffer_add_printf(b, "tagproxy_command_duration_seconds_sum{cmd=\"%s\"} ", name);
    prom_seconds(b, c->usec);
    evbuffer_add_printf(b, "\ntagproxy_command_duration_seconds_count{cmd=\"%s\"} %llu\n",
                        name, (unsigned long long)cumulative);
}

/* Per command: calls, errors, latency; commands never called are left out. */
static void prom_commands(const struct metrics *m, struct evbuffer *b)
{
    int n = command_index_count();
    prom_head(b, "tagproxy_command_calls_total", "counter",
              "Replies written to clients, by command (container|subcommand).");
    for (int i = 0; i < n; i++)
        if (m->sum.cmds[i].calls)
            evbuffer_add_printf(b, "tagproxy_command_calls_total{cmd=\"%s\"} %llu\n",
                                command_by_index(i)->fullname,
                                (unsigned long long)m->sum.cmds[i].calls);
    prom_head(b, "tagproxy_command_errors_total", "counter",
              "Error replies written to clients, by command.");
    for (int i = 0; i < n; i++)
        if (m->sum.cmds[i].calls)
            evbuffer_add_printf(b, "tagproxy_command_errors_total{cmd=\"%s\"} %llu\n",
                                command_by_index(i)->fullname,
                                (unsigned long long)m->sum.cmds[i].errors);
    prom_head(b, "tagproxy_command_duration_seconds", "histogram",
              "Time from reading a command to writing its reply into the client's output.");
    for (int i = 0; i < n; i++)
        if (m->sum.cmds[i].calls)
            prom_command(b, command_by_index(i)->fullname, &m->sum.cmds[i]);
}

/* The process_* family, as Prometheus client libraries write it, read
 * from /proc here: only a scrape needs it, never INFO on a worker. */
static void prom_process(const struct metrics *m, struct evbuffer *b)
{
    struct procstat ps;
    procstat_read(&ps);         /* zeroed where /proc cannot be read */
    prom_head(b, "process_cpu_seconds_total", "counter", "User and system CPU time spent.");
    evbuffer_add(b, "process_cpu_seconds_total ", 26);
    prom_seconds(b, ps.cpu_usec);
    evbuffer_add(b, "\n", 1);
    prom_gauge(b, "process_resident_memory_bytes", "Resident memory size.",
               (long long)ps.resident_bytes);
    prom_gauge(b, "process_virtual_memory_bytes", "Virtual memory size.",
               (long long)ps.virtual_bytes);
    prom_gauge(b, "process_open_fds", "Open file descriptors.", ps.open_fds);
    prom_gauge(b, "process_max_fds", "Most open file descriptors allowed (-1: no limit).",
               ps.max_fds);
    prom_gauge(b, "process_start_time_seconds", "Start time of the process since the epoch.",
               m->started);
}

/* Outcomes of the events an operator watches that are not commands. */
static void prom_events(const struct metrics *m, struct evbuffer *b)
{
    const struct worker_stats *s = &m->sum;
    prom_head(b, "tagproxy_config_reloads_total", "counter",
              "Config reloads (SIGHUP or the config file changed), by result.");
    evbuffer_add_printf(b, "tagproxy_config_reloads_total{result=\"applied\"} %llu\n"
                        "tagproxy_config_reloads_total{result=\"refused\"} %llu\n",
                        (unsigned long long)m->reloads[0], (unsigned long long)m->reloads[1]);
    prom_head(b, "tagproxy_clients_output_limit_closed_total", "counter",
              "Clients closed over client-output-buffer-limit, by class.");
    evbuffer_add_printf(b, "tagproxy_clients_output_limit_closed_total{class=\"normal\"} %llu\n"
                        "tagproxy_clients_output_limit_closed_total{class=\"pubsub\"} %llu\n",
                        (unsigned long long)s->output_limit_closes[0],
                        (unsigned long long)s->output_limit_closes[1]);
    prom_one(b, "tagproxy_tracking_invalidations_total", "counter",
             "Keys' invalidations sent to client-side caching clients (CLIENT TRACKING).",
             s->tracking_invalidations);
    prom_head(b, "tagproxy_tracking_flushes_total", "counter",
              "Times every client-side caching client was told to flush its whole cache, "
              "by cause.");
    for (int i = 0; i < TRACKING_FLUSH_CAUSES; i++)
        evbuffer_add_printf(b, "tagproxy_tracking_flushes_total{cause=\"%s\"} %llu\n",
                            stats_tracking_flush_causes[i],
                            (unsigned long long)s->tracking_flushes[i]);
    prom_one(b, "tagproxy_auth_failures_total", "counter",
             "AUTH and HELLO AUTH refused with WRONGPASS.", s->auth_failures);
    prom_one(b, "tagproxy_dedicated_pool_full_total", "counter",
             "Commands refused because a worker's dedicated-connections-max connections "
             "were all busy.", s->dedicated_pool_full);
}

void metrics_prometheus(const struct metrics *m, struct evbuffer *b)
{
    prom_head(b, "tagproxy_build_info", "gauge",
              "The proxy's version, git revision and the Redis version it answers as; "
              "always 1.");
    evbuffer_add_printf(b, "tagproxy_build_info{version=\"%s\",revision=\"",
                        TAGPROXY_VERSION);
    prom_label(b, tagproxy_revision);
    evbuffer_add_printf(b, "\",redis_version=\"%s\"} 1\n", REDIS_SPOKEN_VERSION);
    prom_process(m, b);
    prom_gauge(b, "tagproxy_threads", "Worker threads.", m->threads);
    prom_gauge(b, "tagproxy_ready", "1 when /readyz answers 200.", m->nodes.ready);
    prom_gauge(b, "tagproxy_draining", "1 once a drain (shutdown) has started.", m->draining);
    prom_gauge(b, "tagproxy_clients_connected", "Client connections open now.", m->clients);
    prom_gauge(b, "tagproxy_clients_max", "max-clients.", m->max_clients);
    prom_gauge(b, "tagproxy_clients_memory_bytes",
               "Bytes held for the clients: input, unanswered commands, MULTI blocks, "
               "replies not yet written.", (long long)m->client_memory);
    prom_gauge(b, "tagproxy_clients_memory_max_bytes", "maxmemory-clients (0: no limit).",
               m->maxmemory_clients);
    prom_counters(m, b);
    prom_events(m, b);
    prom_nodes(m, b);
    prom_commands(m, b);
}

/* ---- INFO ---- */

static void info_line(struct evbuffer *b, const char *name, unsigned long long v)
{
    evbuffer_add_printf(b, "%s:%llu\r\n", name, v);
}

void metrics_info_proxy(const struct metrics *m, struct evbuffer *b)
{
    const struct worker_stats *s = &m->sum;
    uint64_t errors = 0;
    for (int i = 0; i < command_index_count(); i++)
        errors += s->cmds[i].errors;
    evbuffer_add_printf(b, "tagproxy_version:%s\r\n", TAGPROXY_VERSION);
    info_line(b, "uptime_in_seconds", m->uptime_s);
    info_line(b, "threads", (unsigned long long)m->threads);
    info_line(b, "ready", (unsigned long long)m->nodes.ready);
    evbuffer_add_printf(b, "not_ready_reason:%s\r\n", m->nodes.ready ? "" : m->nodes.not_ready);
    info_line(b, "draining", (unsigned long long)m->draining);
    info_line(b, "clients_connected", (unsigned long long)m->clients);
    info_line(b, "clients_accepted", s->connections);
    info_line(b, "clients_refused", s->rejected_clients);
    info_line(b, "clients_evicted", s->evicted_clients);
    info_line(b, "clients_memory", m->client_memory);
    info_line(b, "client_protocol_errors", s->protocol_errors);
    info_line(b, "clients_output_limit_closed", s->output_limit_closes[0]);
    info_line(b, "clients_output_limit_closed_pubsub", s->output_limit_closes[1]);
    info_line(b, "auth_failures", s->auth_failures);
    info_line(b, "dedicated_pool_full", s->dedicated_pool_full);
    info_line(b, "config_reloads", m->reloads[0]);
    info_line(b, "config_reloads_refused", m->reloads[1]);
    info_line(b, "commands", s->commands);
    info_line(b, "commands_unknown", s->unknown_commands);
    int learned, overrides;
    learned_counts(&learned, &overrides);
    info_line(b, "commands_learned", (unsigned long long)learned);
    info_line(b, "commands_learned_overrides", (unsigned long long)overrides);
    info_line(b, "commands_learned_refused", s->learned_refused);
    info_line(b, "command_errors", errors);
    info_line(b, "redirects_moved", s->moved);
    info_line(b, "redirects_ask", s->ask);
    info_line(b, "script_redirects_unconfirmed", s->script_redirects_unconfirmed);
    info_line(b, "retries", s->retries);
    info_line(b, "retries_exhausted", s->retries_exhausted);
    info_line(b, "lost_replies", s->lost_replies);
    info_line(b, "replica_acks_waits", s->replica_acks_waits);
    info_line(b, "replica_acks_short", s->replica_acks_short);
    info_line(b, "reads_master", s->reads_master);
    info_line(b, "reads_replica", s->reads_replica);
    info_line(b, "reads_replica_back", s->reads_replica_back);
    info_line(b, "client_bytes_received", s->clients.in);
    info_line(b, "client_bytes_sent", s->clients.out);
    info_line(b, "node_bytes_sent", s->nodes.bytes.out);
    info_line(b, "node_bytes_received", s->nodes.bytes.in);
    info_line(b, "index_sync_scripts", s->index_syncs);
    info_line(b, "listing_fanouts", s->listing_fanouts);
    info_line(b, "tracking_invalidations", s->tracking_invalidations);
    for (int i = 0; i < TRACKING_FLUSH_CAUSES; i++) {
        char name[64];
        snprintf(name, sizeof name, "tracking_flushes_%s", stats_tracking_flush_causes[i]);
        info_line(b, name, s->tracking_flushes[i]);
    }
    info_line(b, "round_pauses", s->round_pauses);
    info_line(b, "io_uring_workers", s->io_uring);
    info_line(b, "io_batches", s->io_batches);
    info_line(b, "io_batched_ops", s->io_batched_ops);
    info_line(b, "requests_held", (unsigned long long)s->requests_held);
    info_line(b, "requests_pooled", (unsigned long long)s->requests_pooled);
    info_line(b, "io_buffer_bytes", (unsigned long long)s->io_buffer_bytes);
}

static const char *master_state_of(const struct master_state *mm)
{
    return mm->up > 0 ? "up" : mm->up == 0 ? "down" : "unknown";
}

void metrics_info_nodes(const struct metrics *m, struct evbuffer *b)
{
    const struct stats_nodes *n = &m->sum.nodes;
    info_line(b, "masters", (unsigned long long)m->nodes.nmasters);
    info_line(b, "slots_covered", (unsigned long long)m->nodes.slots_covered);
    info_line(b, "topology_version", m->nodes.topology_version);
    info_line(b, "topology_refreshes", m->refreshes);
    info_line(b, "topology_refresh_failures", m->refresh_failures);
    info_line(b, "node_connections_connecting", (unsigned long long)n->connecting);
    info_line(b, "node_connections_ready", (unsigned long long)n->ready);
    info_line(b, "node_connects", n->connects);
    info_line(b, "node_connect_failures", n->connect_failures);
    info_line(b, "node_disconnects", n->closed);
    info_line(b, "node_timeouts", n->timeouts);
    info_line(b, "node_batches", n->batches);
    for (int i = 0; i < m->nodes.nmasters; i++)
        evbuffer_add_printf(b, "master%d:addr=%s,slots=%d,state=%s,replicas=%d\r\n", i,
                            m->nodes.masters[i].addr, m->nodes.masters[i].slots,
                            master_state_of(&m->nodes.masters[i]),
                            m->nodes.masters[i].replicas);
}

/* As Redis 7.0: cmdstat_NAME:calls=,usec=,usec_per_call=,rejected_calls=,failed_calls= */
void metrics_info_commandstats(const struct metrics *m, struct evbuffer *b)
{
    for (int i = 0; i < command_index_count(); i++) {
        const struct stats_command *c = &m->sum.cmds[i];
        if (!c->calls)
            continue;
        evbuffer_add_printf(b, "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,"
                            "rejected_calls=0,failed_calls=%llu\r\n",
                            command_by_index(i)->fullname, (unsigned long long)c->calls,
                            (unsigned long long)c->usec, (double)c->usec / (double)c->calls,
                            (unsigned long long)c->errors);
    }
}
