/*
 * workload: the verifying workload. See chaos.h.
 *
 * Append: each client RPUSHes tokens "CLIENT.SEQ" (SEQ: the op's place in
 * the client's record) to lists spread over every slot, a third of them
 * through EVAL and a tenth inside MULTI. Counter: INCR on counters. Every
 * op is recorded as ok, failed (an error that does not say the command may
 * have run: the proxy's word that it did not) or unknown (no reply, or an
 * error that says it may have run, or that it ran: replica-acks'
 * NOREPLICAS). Readers GET counters and LRANGE whole lists through the
 * proxy and count any read that goes backwards: a
 * counter lower than before, a list shorter than before or whose start is
 * no longer what was read before.
 *
 * At the end the masters are read directly (never through the proxy): an
 * ok token must be there exactly once, a failed one not at all, an unknown
 * one at most once, each client's tokens of one list in its order; a
 * counter is at least its acked INCRs and at most acked + unknown.
 */
#include "tests/chaos/chaos.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LUA_RPUSH "return redis.call('RPUSH', KEYS[1], ARGV[1])"

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

int32_t wl_clock(const struct workload *wl)
{
    return (int32_t)(now_ms() - wl->t0);
}

void wl_list_key(const struct workload *wl, int i, char *out, size_t size)
{
    snprintf(out, size, "chaos:%s:l:%d", wl->o.ns, i);
}

static void counter_key(const struct workload *wl, int i, char *out, size_t size)
{
    snprintf(out, size, "chaos:%s:c:%d", wl->o.ns, i);
}

static int client_timeout_ms(const struct workload *wl)
{
    /* WAIT 1 0 waits for a replica, which a killed master's promoted one
     * lacks until the old master is back */
    return wl->o.wait_replica ? 60000 : CHAOS_PROXY_TIMEOUT + 5000;
}

static struct op *op_new(struct wl_client *cl)
{
    if (cl->nops == cl->cap) {
        size_t cap = cl->cap ? cl->cap * 2 : 4096;
        struct op *ops = realloc(cl->ops, cap * sizeof *ops);
        if (!ops)
            die("out of memory");
        cl->ops = ops;
        cl->cap = cap;
    }
    struct op *op = &cl->ops[cl->nops++];
    memset(op, 0, sizeof *op);
    return op;
}

/* Appends one op's commands to the client's connection. */
static void op_append(struct wl_client *cl, struct op *op, size_t seq)
{
    struct workload *wl = cl->wl;
    char key[96], token[48];
    uint64_t r = rng_next(&cl->rng);
    if (r % 2 == 0) {
        op->kind = OP_INCR;
        op->key = (uint16_t)(r / 2 % (uint64_t)wl->o.counters);
        counter_key(wl, op->key, key, sizeof key);
        redisAppendCommand(cl->c, "INCR %s", key);
    } else {
        unsigned pick = (unsigned)(r / 2 % 30);
        op->kind = pick < 3 ? OP_MULTI : pick < 13 ? OP_EVAL : OP_RPUSH;
        op->key = (uint16_t)(r / 60 % (uint64_t)wl->o.lists);
        wl_list_key(wl, op->key, key, sizeof key);
        snprintf(token, sizeof token, "%d.%zu", cl->id, seq);
        if (op->kind == OP_MULTI) {
            redisAppendCommand(cl->c, "MULTI");
            redisAppendCommand(cl->c, "RPUSH %s %s", key, token);
            redisAppendCommand(cl->c, "EXEC");
        } else if (op->kind == OP_EVAL) {
            redisAppendCommand(cl->c, "EVAL %s 1 %s %s", LUA_RPUSH, key, token);
        } else {
            redisAppendCommand(cl->c, "RPUSH %s %s", key, token);
        }
    }
    op->shard = (uint8_t)wl->shard_of_slot[key_slot(key, strlen(key))];
    if (wl->o.wait_replica)
        redisAppendCommand(cl->c, "WAIT 1 0");
}

static void note_error(struct wl_client *cl, const char *s)
{
    if (!cl->err_sample)
        cl->err_sample = strdup(s);
}

/* An error reply to a command of kind what: the proxy says whether the
 * command may have run. The sample names the kind, to tell a script's
 * error from a plain command's. */
static int error_outcome(struct wl_client *cl, const char *what, const redisReply *r)
{
    char sample[300];
    snprintf(sample, sizeof sample, "%s: %s", what, r->str);
    note_error(cl, sample);
    return strstr(r->str, "may have run") || strstr(r->str, "ran on the master") ? OUT_UNKNOWN
                                                                                : OUT_FAILED;
}

static int get(struct wl_client *cl, redisReply **r)
{
    void *out = NULL;
    if (redisGetReply(cl->c, &out) != REDIS_OK || !out) {
        note_error(cl, cl->c->errstr[0] ? cl->c->errstr : "connection lost");
        return -1;
    }
    *r = out;
    return 0;
}

/* MULTI, RPUSH, EXEC. A refused MULTI leaves the RPUSH a plain command. */
static int multi_outcome(struct wl_client *cl)
{
    redisReply *m, *q, *e;
    if (get(cl, &m) < 0)
        return -1;
    if (get(cl, &q) < 0) {
        freeReplyObject(m);
        return -1;
    }
    if (get(cl, &e) < 0) {
        freeReplyObject(m);
        freeReplyObject(q);
        return -1;
    }
    int out;
    if (m->type == REDIS_REPLY_ERROR)
        out = q->type == REDIS_REPLY_INTEGER ? OUT_OK
            : q->type == REDIS_REPLY_ERROR ? error_outcome(cl, "RPUSH after a refused MULTI", q)
                                           : OUT_UNKNOWN;
    else if (e->type == REDIS_REPLY_ARRAY && e->elements == 1 &&
             e->element[0]->type == REDIS_REPLY_INTEGER)
        out = OUT_OK;
    else if (e->type == REDIS_REPLY_NIL)
        out = OUT_FAILED;
    else if (e->type == REDIS_REPLY_ERROR)
        out = error_outcome(cl, "EXEC", e);
    else
        out = OUT_UNKNOWN;
    freeReplyObject(m);
    freeReplyObject(q);
    freeReplyObject(e);
    return out;
}

static int op_outcome(struct wl_client *cl, const struct op *op)
{
    int out;
    if (op->kind == OP_MULTI) {
        out = multi_outcome(cl);
    } else {
        redisReply *r;
        if (get(cl, &r) < 0)
            return -1;
        static const char *const names[] = { "RPUSH", "EVAL", "MULTI", "INCR" };
        out = r->type == REDIS_REPLY_INTEGER ? OUT_OK
            : r->type == REDIS_REPLY_ERROR ? error_outcome(cl, names[op->kind], r) : OUT_UNKNOWN;
        freeReplyObject(r);
    }
    if (out >= 0 && cl->wl->o.wait_replica) {
        redisReply *w;
        if (get(cl, &w) < 0)
            return -1;
        /* acked only once a replica has it */
        if (out == OUT_OK && !(w->type == REDIS_REPLY_INTEGER && w->integer >= 1))
            out = OUT_UNKNOWN;
        freeReplyObject(w);
    }
    return out;
}

static void *client_main(void *arg)
{
    struct wl_client *cl = arg;
    struct workload *wl = cl->wl;
    while (!wl->stop) {
        if (!cl->c) {
            cl->c = cl_connect(wl->o.port, client_timeout_ms(wl));
            if (!cl->c) {
                sleep_ms(20);
                continue;
            }
        }
        size_t first = cl->nops;
        int32_t start = wl_clock(wl);
        for (int i = 0; i < wl->o.depth; i++) {
            struct op *op = op_new(cl);
            op->start_ms = start;
            op_append(cl, op, cl->nops - 1);
        }
        int lost = 0;
        for (size_t i = first; i < cl->nops; i++) {
            struct op *op = &cl->ops[i];
            int out = lost ? -1 : op_outcome(cl, op);
            if (out < 0) {
                lost = 1;
                out = OUT_UNKNOWN;
                cl->dropped++;
            }
            op->outcome = (uint8_t)out;
            op->latency_ms = wl_clock(wl) - op->start_ms;
        }
        if (lost) {
            redisFree(cl->c);
            cl->c = NULL;
        }
    }
    return NULL;
}

/* A counter's GET: 1 when it did not go down, 0 when it did, -1 not a
 * value. */
static int counter_read(struct wl_reader *rd, int i, const redisReply *r)
{
    long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10)
                : r->type == REDIS_REPLY_NIL ? 0 : -1;
    if (v < 0)
        return -1;
    if (v < rd->seen[i])
        return 0;
    rd->seen[i] = v;
    return 1;
}

static uint64_t hash_add(uint64_t h, const char *s, size_t len)
{
    for (size_t k = 0; k < len; k++)
        h = (h ^ (unsigned char)s[k]) * 1099511628211ULL;
    return (h ^ 0xff) * 1099511628211ULL;   /* the end of one element */
}

/* A list's LRANGE 0 -1: 1 when what was read before is still its start, 0
 * when the list got shorter or an element read before changed or went. */
static int list_read(struct wl_reader *rd, int i, const redisReply *r)
{
    size_t before = (size_t)rd->seen[i];
    if (r->elements < before)
        return 0;
    uint64_t h = 14695981039346656037ULL;
    for (size_t k = 0; k < r->elements; k++) {
        if (k == before && before > 0 && h != rd->prefix[i])
            return 0;
        const redisReply *e = r->element[k];
        h = e->type == REDIS_REPLY_STRING ? hash_add(h, e->str, e->len) : hash_add(h, "", 0);
    }
    if (r->elements == before && before > 0 && h != rd->prefix[i])
        return 0;
    rd->seen[i] = (long long)r->elements;
    rd->prefix[i] = h;
    return 1;
}

static void *reader_main(void *arg)
{
    struct wl_reader *rd = arg;
    struct workload *wl = rd->wl;
    uint64_t rng = (uint64_t)(uintptr_t)rd | 1;
    redisContext *c = NULL;
    while (!wl->stop) {
        if (!c && !(c = cl_connect(wl->o.port, client_timeout_ms(wl)))) {
            sleep_ms(20);
            continue;
        }
        char key[96];
        int i = (int)(rng_next(&rng) % (uint64_t)(wl->o.counters + wl->o.lists));
        redisReply *r;
        if (i < wl->o.counters) {
            counter_key(wl, i, key, sizeof key);
            r = redisCommand(c, "GET %s", key);
        } else {
            wl_list_key(wl, i - wl->o.counters, key, sizeof key);
            r = redisCommand(c, "LRANGE %s 0 -1", key);
        }
        if (!r) {
            redisFree(c);
            c = NULL;
            continue;
        }
        int ok = r->type == REDIS_REPLY_ARRAY ? list_read(rd, i, r)
               : counter_read(rd, i, r);
        if (ok >= 0)
            rd->reads++;
        if (ok == 0 && !rd->backwards++)
            rd->first_back_ms = wl_clock(wl);
        freeReplyObject(r);
        sleep_ms(1);        /* a whole list per read: leave the writers the CPU */
    }
    redisFree(c);
    return NULL;
}

/* The masters' slot ranges now: ops are counted per shard by them. */
static void shards_learn(struct workload *wl)
{
    struct cl_view v;
    if (cl_view(wl->ch, &v) < 0 || v.nmasters != CHAOS_MASTERS)
        die("cannot read the cluster's masters");
    for (int m = 0; m < CHAOS_MASTERS; m++)
        wl->shard_port[m] = v.m[m].port;
    for (int s = 0; s < 16384; s++) {
        wl->shard_of_slot[s] = 0;
        for (int m = 0; m < CHAOS_MASTERS; m++)
            if (v.slot_port[s] == v.m[m].port)
                wl->shard_of_slot[s] = m;
    }
}

void wl_start(struct workload *wl, struct chaos *ch, const struct wl_opts *o)
{
    memset(wl, 0, sizeof *wl);
    wl->o = *o;
    wl->ch = ch;
    if (!wl->o.port)
        wl->o.port = ch->proxy.port;
    shards_learn(wl);
    wl->clients = calloc((size_t)o->clients, sizeof *wl->clients);
    wl->readers = calloc((size_t)o->readers + 1, sizeof *wl->readers);
    if (!wl->clients || !wl->readers)
        die("out of memory");
    wl->t0 = now_ms();
    for (int i = 0; i < o->clients; i++) {
        struct wl_client *cl = &wl->clients[i];
        cl->wl = wl;
        cl->id = i;
        cl->rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1) ^ (uint64_t)wl->t0;
        pthread_create(&cl->thread, NULL, client_main, cl);
    }
    for (int i = 0; i < o->readers; i++) {
        struct wl_reader *rd = &wl->readers[i];
        rd->wl = wl;
        rd->seen = calloc((size_t)(o->counters + o->lists), sizeof *rd->seen);
        rd->prefix = calloc((size_t)(o->counters + o->lists), sizeof *rd->prefix);
        if (!rd->seen || !rd->prefix)
            die("out of memory");
        pthread_create(&rd->thread, NULL, reader_main, rd);
    }
}

int wl_mark_fault(struct workload *wl)
{
    if (wl->nmarks == WL_MARKS_MAX)
        die("more than %d repetitions", WL_MARKS_MAX);
    wl->marks[wl->nmarks].fault_ms = wl_clock(wl);
    wl->marks[wl->nmarks].healed_ms = -1;
    return wl->nmarks++;
}

void wl_mark_healed(struct workload *wl, int mark)
{
    wl->marks[mark].healed_ms = wl_clock(wl);
}

void wl_stop(struct workload *wl)
{
    wl->stop = 1;
    for (int i = 0; i < wl->o.clients; i++) {
        pthread_join(wl->clients[i].thread, NULL);
        redisFree(wl->clients[i].c);
        wl->clients[i].c = NULL;
    }
    for (int i = 0; i < wl->o.readers; i++)
        pthread_join(wl->readers[i].thread, NULL);
}

/* ---------- the check ---------- */

struct reading {
    uint8_t **count;            /* per client, per op: times its token is there */
    long long *counter;         /* per counter: its value */
};

static redisContext *master_conn(redisContext **conns, const struct cl_view *v, int port)
{
    for (int m = 0; m < v->nmasters; m++)
        if (v->m[m].port == port) {
            if (!conns[m] && !(conns[m] = cl_connect(port, 10000)))
                die("cannot connect to master %d", port);
            return conns[m];
        }
    die("no master %d", port);
}

/* One list's tokens into the counts; out-of-order ones counted. */
static void read_list(struct workload *wl, struct reading *rd, const redisReply *r, int list,
                      struct wl_result *res)
{
    long long *last = calloc((size_t)wl->o.clients, sizeof *last);
    for (int c = 0; c < wl->o.clients; c++)
        last[c] = -1;
    for (size_t i = 0; i < r->elements; i++) {
        int client;
        long long seq;
        if (sscanf(r->element[i]->str, "%d.%lld", &client, &seq) != 2 || client < 0 ||
            client >= wl->o.clients || seq < 0 ||
            (size_t)seq >= wl->clients[client].nops ||
            wl->clients[client].ops[seq].key != list ||
            wl->clients[client].ops[seq].kind == OP_INCR) {
            res->duplicated++;          /* nobody wrote it there */
            continue;
        }
        if (seq < last[client])
            res->out_of_order++;
        last[client] = seq;
        if (rd->count[client][seq] < 255)
            rd->count[client][seq]++;
    }
    free(last);
}

static void read_all(struct workload *wl, struct reading *rd, struct wl_result *res)
{
    struct cl_view v;
    redisContext *conns[CHAOS_NODES] = { 0 };
    if (cl_view(wl->ch, &v) < 0)
        die("cannot read the cluster's slot map");
    for (int i = 0; i < wl->o.lists; i++) {
        char key[96];
        wl_list_key(wl, i, key, sizeof key);
        redisContext *c = master_conn(conns, &v, v.slot_port[key_slot(key, strlen(key))]);
        redisReply *r = redisCommand(c, "LRANGE %s 0 -1", key);
        if (!r || r->type != REDIS_REPLY_ARRAY)
            die("LRANGE %s on its master: %s", key, r ? r->str : c->errstr);
        read_list(wl, rd, r, i, res);
        freeReplyObject(r);
    }
    for (int i = 0; i < wl->o.counters; i++) {
        char key[96];
        counter_key(wl, i, key, sizeof key);
        redisContext *c = master_conn(conns, &v, v.slot_port[key_slot(key, strlen(key))]);
        redisReply *r = redisCommand(c, "GET %s", key);
        if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL))
            die("GET %s on its master: %s", key, r ? r->str : c->errstr);
        rd->counter[i] = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
        freeReplyObject(r);
    }
    for (int m = 0; m < CHAOS_NODES; m++)
        redisFree(conns[m]);
}

/* The repetition whose window holds time t (its fault to the next's), or -1. */
static int mark_of(const struct workload *wl, int32_t t)
{
    int k = -1;
    for (int i = 0; i < wl->nmarks; i++)
        if (t >= wl->marks[i].fault_ms)
            k = i;
    return k;
}

static void tally_errors(struct workload *wl, struct wl_result *res)
{
    int32_t first[WL_MARKS_MAX], last[WL_MARKS_MAX];
    for (int k = 0; k < WL_MARKS_MAX; k++)
        first[k] = last[k] = -1;
    for (int c = 0; c < wl->o.clients; c++)
        for (size_t i = 0; i < wl->clients[c].nops; i++) {
            const struct op *op = &wl->clients[c].ops[i];
            int32_t seen = op->start_ms + op->latency_ms;
            if (op->latency_ms > res->max_latency_ms)
                res->max_latency_ms = op->latency_ms;
            if (op->latency_ms >= client_timeout_ms(wl))
                res->hung++;
            if (op->outcome == OUT_OK)
                continue;
            int k = mark_of(wl, seen);
            if (k < 0 || seen > (wl->marks[k].healed_ms < 0 ? INT32_MAX
                                                             : wl->marks[k].healed_ms + 2000)) {
                res->errors_outside++;
                continue;
            }
            /* from the moment the first failing op was sent */
            if (first[k] < 0 || op->start_ms < first[k])
                first[k] = op->start_ms < wl->marks[k].fault_ms ? wl->marks[k].fault_ms
                                                                : op->start_ms;
            if (seen > last[k])
                last[k] = seen;
        }
    for (int k = 0; k < wl->nmarks; k++) {
        if (first[k] < 0)
            continue;
        if (last[k] - first[k] > res->longest_errors_ms)
            res->longest_errors_ms = last[k] - first[k];
        if (last[k] - wl->marks[k].fault_ms > res->recovery_ms)
            res->recovery_ms = last[k] - wl->marks[k].fault_ms;
    }
}

void wl_verify(struct workload *wl, struct wl_result *res)
{
    struct reading rd;
    long *acked = calloc((size_t)wl->o.counters, sizeof *acked);
    long *maybe = calloc((size_t)wl->o.counters, sizeof *maybe);
    memset(res, 0, sizeof *res);
    rd.count = calloc((size_t)wl->o.clients, sizeof *rd.count);
    rd.counter = calloc((size_t)wl->o.counters, sizeof *rd.counter);
    if (!acked || !maybe || !rd.count || !rd.counter)
        die("out of memory");
    for (int c = 0; c < wl->o.clients; c++)
        if (!(rd.count[c] = calloc(wl->clients[c].nops + 1, 1)))
            die("out of memory");
    read_all(wl, &rd, res);
    for (int c = 0; c < wl->o.clients; c++) {
        struct wl_client *cl = &wl->clients[c];
        if (cl->err_sample && !res->err_sample[0])
            snprintf(res->err_sample, sizeof res->err_sample, "%s", cl->err_sample);
        res->dropped += cl->dropped;
        for (size_t i = 0; i < cl->nops; i++) {
            const struct op *op = &cl->ops[i];
            int n = rd.count[c][i];
            res->ops++;
            res->ok += op->outcome == OUT_OK;
            res->failed += op->outcome == OUT_FAILED;
            res->unknown += op->outcome == OUT_UNKNOWN;
            if (op->kind == OP_INCR) {
                acked[op->key] += op->outcome == OUT_OK;
                maybe[op->key] += op->outcome == OUT_UNKNOWN;
                continue;
            }
            if (op->outcome == OUT_OK && n == 0)
                res->lost++;
            if (n > 1)
                res->duplicated += n - 1;
            if (op->outcome == OUT_FAILED && n > 0)
                res->false_failed++;
        }
    }
    for (int k = 0; k < wl->o.counters; k++) {
        if (rd.counter[k] < acked[k]) {
            res->counters_low++;
            res->lost += acked[k] - rd.counter[k];
        } else if (rd.counter[k] > acked[k] + maybe[k]) {
            res->counters_high++;
            res->duplicated += rd.counter[k] - acked[k] - maybe[k];
        }
    }
    for (int i = 0; i < wl->o.readers; i++)
        res->backwards += wl->readers[i].backwards;
    tally_errors(wl, res);
    for (int c = 0; c < wl->o.clients; c++)
        free(rd.count[c]);
    free(rd.count);
    free(rd.counter);
    free(acked);
    free(maybe);
}

long long wl_max_latency(const struct workload *wl, int not_shard, int32_t from, int32_t to)
{
    long long max = 0;
    for (int c = 0; c < wl->o.clients; c++)
        for (size_t i = 0; i < wl->clients[c].nops; i++) {
            const struct op *op = &wl->clients[c].ops[i];
            if (op->shard != not_shard && op->start_ms >= from && op->start_ms < to &&
                op->latency_ms > max)
                max = op->latency_ms;
        }
    return max;
}

void wl_free(struct workload *wl)
{
    for (int i = 0; i < wl->o.clients; i++) {
        free(wl->clients[i].ops);
        free(wl->clients[i].err_sample);
    }
    for (int i = 0; i < wl->o.readers; i++) {
        free(wl->readers[i].seen);
        free(wl->readers[i].prefix);
    }
    free(wl->clients);
    free(wl->readers);
    memset(wl, 0, sizeof *wl);
}
