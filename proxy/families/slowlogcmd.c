/*
 * slowlogcmd: SLOWLOG through the proxy. See slowlogcmd.h.
 */
#include "proxy/families/slowlogcmd.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/topology.h"
#include "proxy/core/merge.h"
#include "proxy/core/request.h"
#include "proxy/core/route.h"
#include "proxy/core/router.h"
#include "proxy/core/slowlog.h"
#include "proxy/core/worker.h"
#include "proxy/families/txclass.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"
#include "lib/proto/resp.h"

static merge_fn merge_get_run, merge_len;
static const struct merge merge_slowlog_get = { merge_get_run, 0 };
static const struct merge merge_slowlog_len = { merge_len, 0 };

#define SLOWLOG_GET_DEFAULT 10
#define SLOWLOG_FIELDS_MAX 16     /* an entry's, read for its time */

/* One entry of the merged log: where its bytes are, and what orders it. */
struct item {
    int64_t time;
    int source;                     /* 0: the proxy's; 1 + i: part i's master */
    long pos;                       /* its place in its source, newest first */
    const char *bytes;
    size_t len;
};

/* Newest first; within one second, the proxy's, then each master's in its
 * own order. */
static int item_cmp(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->time != y->time)
        return x->time > y->time ? -1 : 1;
    if (x->source != y->source)
        return x->source < y->source ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* SLOWLOG GET's count argument, as Redis 7.0 reads it: 0, or -1 with r
 * answered. */
static int get_count(struct request *r, long long *count)
{
    *count = SLOWLOG_GET_DEFAULT;
    if (r->argc < 3)
        return 0;
    if (request_arg_ll(r, 2, count) < 0 || *count < -1) {
        request_fail(r, "ERR count should be greater than or equal to -1");
        return -1;
    }
    return 0;
}

/* The address of the master part i asked, "?" when the topology changed
 * under the part. */
static const char *part_node(const struct request *p, int i)
{
    const struct topology *t = p->worker->topo;
    int node = p->parts[i]->fixed_node;
    return t && node >= 0 && node < t->nnodes ? t->nodes[node].announced : "?";
}

/* A master's entry, its client-name field naming the master. */
static void add_master_entry(struct evbuffer *out, const struct item *it, const char *node)
{
    const char *el[6];
    size_t len[6];
    if (reply_array_elements(it->bytes, it->len, el, len, 6) != 6) {
        evbuffer_add(out, it->bytes, it->len);
        return;
    }
    resp_add_array(out, 6);
    for (int k = 0; k < 5; k++)
        evbuffer_add(out, el[k], len[k]);
    char name[TOPO_ADDR_MAX + 8];
    snprintf(name, sizeof name, "node=%s", node);
    resp_add_bulk_str(out, name);
}

/* An entry's unix time, its second field (0 when it has none). */
static int64_t entry_time(const char *b, size_t len)
{
    const char *f[SLOWLOG_FIELDS_MAX];
    size_t fl[SLOWLOG_FIELDS_MAX];
    if (reply_array_elements(b, len, f, fl, SLOWLOG_FIELDS_MAX) < 2 || f[1][0] != ':')
        return 0;
    return strtoll(f[1] + 1, NULL, 10);
}

/* The entries of a master's SLOWLOG GET reply b into items from *n: 0, or
 * -1 when b is not an array of them. */
static int add_master_items(const char *b, size_t blen, int source, struct item *items, long *n)
{
    struct reply_iter it;
    const char *e;
    size_t el;
    if (reply_array_elements(b, blen, NULL, NULL, -1) < 0)
        return -1;
    reply_iter_array(&it, b, blen);
    for (long k = 0; reply_iter_next(&it, &e, &el) > 0; k++)
        items[(*n)++] = (struct item){ .time = entry_time(e, el), .source = source,
                                       .pos = k, .bytes = e, .len = el };
    return 0;
}

/* The masters' entries (parts' replies) and the proxy's, newest first. */
static void merge_get(struct request *p, struct evbuffer *out, long long want)
{
    struct slowlog_copy own;
    long total = 0, n = 0;
    if (slowlog_copy_take(want, &own) < 0) {
        resp_add_error(out, REPLY_ERR_OOM);
        return;
    }
    total = own.n;
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        struct evbuffer *b = request_reply_buffer(p->parts[i]);
        len = evbuffer_get_length(b);
        long count = reply_array_elements((const char *)evbuffer_pullup(b, -1), len, NULL,
                                          NULL, -1);
        if (count < 0) {
            slowlog_copy_free(&own);
            resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
            return;
        }
        total += count;
    }
    struct item *items = malloc((size_t)(total > 0 ? total : 1) * sizeof *items);
    int failed = !items;
    for (long k = 0; !failed && k < own.n; k++)
        items[n++] = (struct item){ .time = own.time[k], .source = 0, .pos = k,
                                    .bytes = own.bytes + own.off[k], .len = own.len[k] };
    for (int i = 0; !failed && i < p->nparts; i++) {
        struct evbuffer *b = request_reply_buffer(p->parts[i]);
        failed = add_master_items((const char *)evbuffer_pullup(b, -1), evbuffer_get_length(b),
                                  1 + i, items, &n) < 0;
    }
    if (failed) {
        free(items);
        slowlog_copy_free(&own);
        resp_add_error(out, REPLY_ERR_OOM);
        return;
    }
    qsort(items, (size_t)n, sizeof *items, item_cmp);
    long shown = want < 0 || want > n ? n : (long)want;
    resp_add_array(out, shown);
    for (long k = 0; k < shown; k++) {
        if (items[k].source == 0)
            evbuffer_add(out, items[k].bytes, items[k].len);
        else
            add_master_entry(out, &items[k], part_node(p, items[k].source - 1));
    }
    free(items);
    slowlog_copy_free(&own);
}

/* SLOWLOG LEN: the masters' lengths and the proxy's. */
static void merge_len(struct request *p, struct evbuffer *out)
{
    long long sum = slowlog_len();
    for (int i = 0; i < p->nparts; i++) {
        struct evbuffer *b = request_reply_buffer(p->parts[i]);
        char head[32] = "";
        evbuffer_copyout(b, head, sizeof head - 1);
        if (head[0] != ':') {
            resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
            return;
        }
        sum += strtoll(head + 1, NULL, 10);
    }
    resp_add_integer(out, sum);
}

static void merge_get_run(struct request *p, struct evbuffer *out)
{
    long long want;
    if (p->argc < 3 || request_arg_ll(p, 2, &want) < 0)
        want = SLOWLOG_GET_DEFAULT;
    merge_get(p, out, want);
}

/* Whether SLOWLOG GET and LEN may read the masters' logs (dangerous
 * commands on): 0, or -1 with r refused, saying why. */
static int read_allowed(struct request *r)
{
    if (r->worker->cfg->enable_dangerous_commands)
        return 0;
    router_plan_dangerous(r, 0);            /* refused, saying why */
    return -1;
}

/* SLOWLOG GET [count], SLOWLOG LEN: every master's, then merged. */
static void cmd_get(struct request *r)
{
    long long count;
    char arg[24];
    if (read_allowed(r) < 0 || get_count(r, &count) < 0)
        return;
    snprintf(arg, sizeof arg, "%lld", count);
    const char *argv[] = { "SLOWLOG", "GET", arg };
    const size_t lens[] = { 7, 3, strlen(arg) };
    router_fanout(r, &merge_slowlog_get, 3, argv, lens);
}

static void cmd_len(struct request *r)
{
    const char *argv[] = { "SLOWLOG", "LEN" };
    const size_t lens[] = { 7, 3 };
    if (read_allowed(r) == 0)
        router_fanout(r, &merge_slowlog_len, 2, argv, lens);
}

/* SLOWLOG RESET: the proxy's log and every master's. */
static void cmd_reset(struct request *r)
{
    if (r->worker->cfg->enable_dangerous_commands)
        slowlog_reset();
    router_plan_dangerous(r, 1);
}

static const struct route_entry slowlogcmd_routes[] = {
    ROUTE_ASKING("slowlog|get", cmd_get), ROUTE_ASKING("slowlog|len", cmd_len),
    { "slowlog|reset", { .plan = ROUTE_FAMILY, .run = cmd_reset, .in_multi = TXC_OTHER,
                         .keyless = 1 } },
};

void slowlogcmd_register(void)
{
    route_register(slowlogcmd_routes,
                   (int)(sizeof slowlogcmd_routes / sizeof slowlogcmd_routes[0]));
}
