#include "proxy/core/stats.h"

#include <stdlib.h>
#include <string.h>

#include "lib/proto/command.h"

const uint64_t stats_latency_bounds_us[STATS_LATENCY_NBOUNDS] = STATS_LATENCY_BOUNDS_US;

const char *const stats_tracking_flush_causes[TRACKING_FLUSH_CAUSES] = {
    "connection", "topology", "layout", "drain", "node", "refused", "mode",
};

int stats_init(struct worker_stats *s)
{
    command_index_init();
    s->cmds = calloc((size_t)command_index_count(), sizeof *s->cmds);
    s->errors = calloc(1, sizeof *s->errors);
    if (s->cmds && s->errors)
        return 0;
    stats_free(s);
    return -1;
}

void stats_free(struct worker_stats *s)
{
    free(s->cmds);
    free(s->errors);
    s->cmds = NULL;
    s->errors = NULL;
}

/* code's entry in es, made when there is room; NULL when there is none. */
static struct stats_error *error_entry(struct stats_errors *es, int n, const char *code,
                                       size_t len, int make)
{
    for (int i = 0; i < n; i++)
        if (strlen(es->e[i].code) == len && memcmp(es->e[i].code, code, len) == 0)
            return &es->e[i];
    if (!make || n == STATS_ERRORS_MAX)
        return NULL;
    memcpy(es->e[n].code, code, len);
    es->e[n].code[len] = '\0';
    __atomic_store_n(&es->n, n + 1, __ATOMIC_RELEASE);
    return &es->e[n];
}

void stats_error_reply(struct worker_stats *s, const char *code, size_t len)
{
    if (!s->errors)
        return;
    if (len >= STATS_ERROR_CODE_MAX)
        len = STATS_ERROR_CODE_MAX - 1;
    stat_inc(&s->errors->total);
    struct stats_error *e = error_entry(s->errors, s->errors->n, code, len, 1);
    if (e)
        stat_inc(&e->count);
}

/* Add the error counts of b into sum (owned by the caller). */
static void sum_errors(struct stats_errors *sum, const struct stats_errors *b)
{
    int n = __atomic_load_n(&b->n, __ATOMIC_ACQUIRE);
    sum->total += stat_get(&b->total);
    for (int i = 0; i < n; i++) {
        const struct stats_error *e = &b->e[i];
        struct stats_error *to = error_entry(sum, sum->n, e->code, strlen(e->code), 1);
        if (to)
            to->count += stat_get(&e->count);
    }
}

/* Most commands take well under a millisecond: a linear scan from the
 * smallest bound stops within a few compares. */
int stats_latency_bucket(uint64_t usec)
{
    int i = 0;
    while (i < STATS_LATENCY_NBOUNDS && usec > stats_latency_bounds_us[i])
        i++;
    return i;
}

void stats_command_done(struct worker_stats *s, const struct command *cmd, uint64_t usec,
                        int error)
{
    struct stats_command *c = &s->cmds[command_index(cmd)];
    stat_inc(&c->calls);
    if (error)
        stat_inc(&c->errors);
    stat_add(&c->usec, usec);
    stat_inc(&c->buckets[stats_latency_bucket(usec)]);
}

static void sum_bytes(struct stats_bytes *a, const struct stats_bytes *b)
{
    a->in += stat_get(&b->in);
    a->out += stat_get(&b->out);
}

void stats_nodes_add(struct stats_nodes *a, const struct stats_nodes *b)
{
    a->connects += stat_get(&b->connects);
    a->connect_failures += stat_get(&b->connect_failures);
    a->closed += stat_get(&b->closed);
    a->timeouts += stat_get(&b->timeouts);
    a->batches += stat_get(&b->batches);
    a->connecting += gauge_get(&b->connecting);
    a->ready += gauge_get(&b->ready);
    sum_bytes(&a->bytes, &b->bytes);
}

static void sum_command(struct stats_command *a, const struct stats_command *b)
{
    a->calls += stat_get(&b->calls);
    a->errors += stat_get(&b->errors);
    a->usec += stat_get(&b->usec);
    for (int i = 0; i < STATS_LATENCY_BUCKETS; i++)
        a->buckets[i] += stat_get(&b->buckets[i]);
}

void stats_sum(struct worker_stats *sum, const struct worker_stats *const *each, int n)
{
    int ncmds = command_index_count();
    for (int w = 0; w < n; w++) {
        const struct worker_stats *s = each[w];
        sum->connections += stat_get(&s->connections);
        sum->rejected_clients += stat_get(&s->rejected_clients);
        sum->evicted_clients += stat_get(&s->evicted_clients);
        sum->commands += stat_get(&s->commands);
        sum->unknown_commands += stat_get(&s->unknown_commands);
        sum->learned_refused += stat_get(&s->learned_refused);
        sum->protocol_errors += stat_get(&s->protocol_errors);
        sum->output_limit_closes[0] += stat_get(&s->output_limit_closes[0]);
        sum->output_limit_closes[1] += stat_get(&s->output_limit_closes[1]);
        sum->query_limit_closes += stat_get(&s->query_limit_closes);
        sum->auth_failures += stat_get(&s->auth_failures);
        sum->acl_denied_cmd += stat_get(&s->acl_denied_cmd);
        sum->acl_denied_key += stat_get(&s->acl_denied_key);
        sum->acl_denied_channel += stat_get(&s->acl_denied_channel);
        sum->dedicated_pool_full += stat_get(&s->dedicated_pool_full);
        sum->moved += stat_get(&s->moved);
        sum->ask += stat_get(&s->ask);
        sum->script_redirects_unconfirmed += stat_get(&s->script_redirects_unconfirmed);
        sum->retries += stat_get(&s->retries);
        sum->retries_exhausted += stat_get(&s->retries_exhausted);
        sum->lost_replies += stat_get(&s->lost_replies);
        sum->replica_acks_waits += stat_get(&s->replica_acks_waits);
        sum->replica_acks_short += stat_get(&s->replica_acks_short);
        sum->reads_master += stat_get(&s->reads_master);
        sum->reads_replica += stat_get(&s->reads_replica);
        sum->reads_replica_back += stat_get(&s->reads_replica_back);
        sum->index_syncs += stat_get(&s->index_syncs);
        sum->listing_fanouts += stat_get(&s->listing_fanouts);
        sum->tracking_invalidations += stat_get(&s->tracking_invalidations);
        for (int i = 0; i < TRACKING_FLUSH_CAUSES; i++)
            sum->tracking_flushes[i] += stat_get(&s->tracking_flushes[i]);
        sum->round_pauses += stat_get(&s->round_pauses);
        sum->io_uring += stat_get(&s->io_uring);
        sum->io_batches += stat_get(&s->io_batches);
        sum->io_batched_ops += stat_get(&s->io_batched_ops);
        sum->requests_held += gauge_get(&s->requests_held);
        sum->requests_pooled += gauge_get(&s->requests_pooled);
        sum->io_buffer_bytes += gauge_get(&s->io_buffer_bytes);
        sum_bytes(&sum->clients, &s->clients);
        stats_nodes_add(&sum->nodes, &s->nodes);
        if (sum->errors && s->errors)
            sum_errors(sum->errors, s->errors);
        for (int i = 0; sum->cmds && s->cmds && i < ncmds; i++)
            sum_command(&sum->cmds[i], &s->cmds[i]);
    }
}
