/*
 * build/tests/soak/soak: a long run of mixed load through the proxy, with
 * its resources sampled, and a verdict on whether any of them grows.
 *
 * It starts its own 3-master + 3-replica cluster and a proxy (tests/chaos's
 * cluster.c), then runs the patterns of the bots' Redis code
 * (../shared/reference) through the proxy for SOAK_MINUTES (default 60):
 * cache-aside reads and writes in pipelines, MULTI blocks, a sliding-window
 * rate limiter and a lock release as scripts, SCAN, a queue drained by
 * BRPOP, subscribers that come and go (some vanish without a word), and
 * clients that connect and vanish mid-command. The config is reloaded
 * (SIGHUP, a directive changed) every minute and a master failed over every
 * five minutes.
 *
 * Each minute it samples the proxy's RSS and open descriptors (/proc), the
 * bytes its allocator holds (INFO memory), the bytes it holds for clients,
 * its requests (live and pooled) and socket buffers (INFO proxy), and its
 * node connections. After the first ten minutes, a least-squares line is
 * fitted to each: the run fails when the line rises, over the sampled
 * window, by more than the larger of 10% of the mean and a floor per
 * resource (FLOORS below), when a pool passes its cap, when a minute passes
 * with no command answered, or when the proxy exits. Runs shorter than
 * twenty minutes (make test's two) sample every ten seconds, reload every
 * twenty, fail over once, and judge their second half.
 *
 * It prints the samples as a table, and writes that table and the verdict
 * to SOAK_OUT/soak.log and a plot of the samples to SOAK_OUT/soak.svg
 * (SOAK_OUT: build/soak). Run from the repository's root.
 */
#include "tests/chaos/chaos.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define POOL_CAP_PER_WORKER 4096    /* REQUEST_POOL_MAX (proxy/core/request.c) */
#define THREADS 2                   /* the proxy's workers */
#define MAX_SAMPLES 512

/* ---------- what is sampled ---------- */

enum metric {
    M_RSS, M_USED, M_FDS, M_CLIENT_MEM, M_REQ_LIVE, M_REQ_POOLED, M_IO_BUF, M_NODE_CONNS,
    M_COUNT
};

static const struct {
    const char *name, *unit;
    double floor;                   /* the least rise that fails, whatever the mean */
    double scale;                   /* shown as value / scale */
} metrics[M_COUNT] = {
    [M_RSS] = { "rss", "MiB", 4 << 20, 1 << 20 },
    [M_USED] = { "allocated", "MiB", 4 << 20, 1 << 20 },
    [M_FDS] = { "fds", "", 16, 1 },
    [M_CLIENT_MEM] = { "client_mem", "KiB", 1 << 20, 1 << 10 },
    [M_REQ_LIVE] = { "requests", "", 256, 1 },
    [M_REQ_POOLED] = { "pooled", "", 0, 1 },  /* capped, not fitted */
    [M_IO_BUF] = { "io_buffers", "KiB", 1 << 20, 1 << 10 },
    [M_NODE_CONNS] = { "node_conns", "", 16, 1 },
};

struct sample {
    double t_min;                   /* minutes since the load started */
    double v[M_COUNT];
    unsigned long long ops, errors; /* during the interval before it */
};

/* ---------- the load ---------- */

enum load_kind { L_CACHE, L_MULTI, L_SCRIPT, L_SCAN, L_QUEUE, L_PUBSUB, L_VANISH, L_KINDS };

static const char *const kind_names[L_KINDS] = {
    "cache", "multi", "scripts", "scan", "queue", "pubsub", "vanish",
};

struct soak {
    struct chaos ch;
    char conf[400];
    volatile int stop;
    unsigned long long ops[L_KINDS], errors[L_KINDS];   /* atomics */
    char err_sample[200];
    pthread_mutex_t lock;
    long reloads_applied, reloads_refused;  /* as the proxy counts them */
};

static struct soak S;

static void count(enum load_kind k, int ok)
{
    __atomic_add_fetch(ok ? &S.ops[k] : &S.errors[k], 1, __ATOMIC_RELAXED);
}

static void note_error(enum load_kind k, const char *what)
{
    count(k, 0);
    pthread_mutex_lock(&S.lock);
    if (!S.err_sample[0])
        snprintf(S.err_sample, sizeof S.err_sample, "%s: %s", kind_names[k], what);
    pthread_mutex_unlock(&S.lock);
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A connection to the proxy, made again after an I/O error. */
static redisContext *proxy_conn(redisContext *c)
{
    if (c && !c->err)
        return c;
    if (c)
        redisFree(c);
    c = cl_connect(S.ch.proxy.port, 5000);
    if (!c)
        sleep_ms(100);
    return c;
}

/* One reply of c's into its counts: 1 when it came (error or not). */
static int take_reply(redisContext **c, enum load_kind k)
{
    redisReply *r = NULL;
    if (redisGetReply(*c, (void **)&r) != REDIS_OK || !r) {
        note_error(k, (*c)->errstr);
        redisFree(*c);
        *c = NULL;
        return 0;
    }
    if (r->type == REDIS_REPLY_ERROR)
        note_error(k, r->str);
    else
        count(k, 1);
    freeReplyObject(r);
    return 1;
}

/* Cache-aside and write-through in pipelines of 32: GET, SET EX of a value
 * of 10 bytes to 4 KiB, DEL now and then. */
static void *load_cache(void *arg)
{
    uint64_t rng = (uint64_t)(uintptr_t)arg * 7919 + 1;
    static char value[4096];
    memset(value, 'v', sizeof value);
    redisContext *c = NULL;
    while (!S.stop) {
        if (!(c = proxy_conn(c)))
            continue;
        int n = 32;
        for (int i = 0; i < n; i++) {
            unsigned key = (unsigned)(next_rand(&rng) % 20000), pick = (unsigned)(next_rand(&rng) % 10);
            if (pick < 6)
                redisAppendCommand(c, "GET soak:cache:%u", key);
            else if (pick < 9)
                redisAppendCommand(c, "SET soak:cache:%u %b EX 600", key, value,
                                   (size_t)(10 + next_rand(&rng) % 4086));
            else
                redisAppendCommand(c, "DEL soak:cache:%u", key);
        }
        for (int i = 0; i < n && c; i++)
            take_reply(&c, L_CACHE);
    }
    if (c)
        redisFree(c);
    return NULL;
}

/* A counter and its list updated together, and a lock taken with SET NX PX
 * and released by a script only by its holder. */
static void *load_multi(void *arg)
{
    uint64_t rng = (uint64_t)(uintptr_t)arg * 104729 + 3;
    redisContext *c = NULL;
    while (!S.stop) {
        if (!(c = proxy_conn(c)))
            continue;
        unsigned u = (unsigned)(next_rand(&rng) % 500);
        redisAppendCommand(c, "MULTI");
        redisAppendCommand(c, "INCR soak:{user%u}:visits", u);
        redisAppendCommand(c, "LPUSH soak:{user%u}:recent x", u);
        redisAppendCommand(c, "LTRIM soak:{user%u}:recent 0 49", u);
        redisAppendCommand(c, "EXPIRE soak:{user%u}:visits 600", u);
        redisAppendCommand(c, "EXEC");
        for (int i = 0; i < 6 && c; i++)
            take_reply(&c, L_MULTI);
        if (!c)
            continue;
        redisAppendCommand(c, "SET soak:lock:%u me NX PX 1000", u);
        redisAppendCommand(c, "EVAL %s 1 soak:lock:%u me",
                           "if redis.call('GET', KEYS[1]) == ARGV[1] then "
                           "return redis.call('DEL', KEYS[1]) else return 0 end", u);
        for (int i = 0; i < 2 && c; i++)
            take_reply(&c, L_MULTI);
    }
    if (c)
        redisFree(c);
    return NULL;
}

/* The sliding-window rate limiter: a script on one sorted set, by EVALSHA
 * once loaded (EVAL when the node has not seen it). */
static void *load_script(void *arg)
{
    static const char *limiter =
        "local now = tonumber(ARGV[1]) "
        "redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now - 1000) "
        "local n = redis.call('ZCARD', KEYS[1]) "
        "if n < 50 then redis.call('ZADD', KEYS[1], now, ARGV[2]) "
        "redis.call('PEXPIRE', KEYS[1], 2000) return 1 end return 0";
    uint64_t rng = (uint64_t)(uintptr_t)arg * 15485863 + 5;
    char sha[48] = "";
    redisContext *c = NULL;
    unsigned long long seq = 0;
    while (!S.stop) {
        if (!(c = proxy_conn(c)))
            continue;
        if (!sha[0]) {
            redisReply *r = redisCommand(c, "SCRIPT LOAD %s", limiter);
            if (r && r->type == REDIS_REPLY_STRING)
                snprintf(sha, sizeof sha, "%s", r->str);
            freeReplyObject(r);
            continue;
        }
        for (int i = 0; i < 16; i++) {
            unsigned who = (unsigned)(next_rand(&rng) % 1000);
            redisAppendCommand(c, "EVALSHA %s 1 soak:rate:%u %lld %llu", sha, who, now_ms(), seq++);
        }
        for (int i = 0; i < 16 && c; i++)
            take_reply(&c, L_SCRIPT);
    }
    if (c)
        redisFree(c);
    return NULL;
}

/* A whole SCAN of the load's keys, a page of 200 at a time. */
static void *load_scan(void *arg)
{
    (void)arg;
    redisContext *c = NULL;
    while (!S.stop) {
        if (!(c = proxy_conn(c)))
            continue;
        char cursor[64] = "0";
        do {
            redisReply *r = redisCommand(c, "SCAN %s MATCH soak:cache:* COUNT 200", cursor);
            if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
                note_error(L_SCAN, r && r->type == REDIS_REPLY_ERROR ? r->str
                                   : c->err ? c->errstr : "not a SCAN reply");
                freeReplyObject(r);
                break;
            }
            count(L_SCAN, 1);
            snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
            freeReplyObject(r);
        } while (strcmp(cursor, "0") != 0 && !S.stop && !c->err);
        sleep_ms(200);
    }
    if (c)
        redisFree(c);
    return NULL;
}

/* A queue: a producer's RPUSHes drained by BRPOP (timeout 1 s) on another
 * connection; now and then a consumer vanishes while it blocks. */
static void *load_queue(void *arg)
{
    uint64_t rng = (uint64_t)(uintptr_t)arg * 32452843 + 7;
    redisContext *prod = NULL, *cons = NULL;
    while (!S.stop) {
        if (!(prod = proxy_conn(prod)) || !(cons = proxy_conn(cons)))
            continue;
        unsigned q = (unsigned)(next_rand(&rng) % 4);
        for (int i = 0; i < 8; i++)
            redisAppendCommand(prod, "RPUSH soak:{queue%u}:jobs job%d", q, i);
        for (int i = 0; i < 8 && prod; i++)
            take_reply(&prod, L_QUEUE);
        for (int i = 0; i < 9 && cons && !S.stop; i++) {
            redisReply *r = redisCommand(cons, "BRPOP soak:{queue%u}:jobs 1", q);
            if (!r) {
                note_error(L_QUEUE, cons->errstr);
                redisFree(cons);
                cons = NULL;
            } else {
                if (r->type == REDIS_REPLY_ERROR)
                    note_error(L_QUEUE, r->str);
                else
                    count(L_QUEUE, 1);
                freeReplyObject(r);
            }
        }
        if (cons && next_rand(&rng) % 20 == 0) {
            redisAppendCommand(cons, "BRPOP soak:{queue%u}:idle 5", q);
            int done = 0;
            redisBufferWrite(cons, &done);
            redisFree(cons);            /* gone while it blocks */
            cons = NULL;
        }
    }
    if (prod)
        redisFree(prod);
    if (cons)
        redisFree(cons);
    return NULL;
}

/* Messages published on ten channels; subscribers (to a channel and a
 * pattern) that read for a while, then unsubscribe or just go. */
static void *load_publish(void *arg)
{
    (void)arg;
    redisContext *c = NULL;
    unsigned long long seq = 0;
    while (!S.stop) {
        if (!(c = proxy_conn(c)))
            continue;
        for (int i = 0; i < 10; i++)
            redisAppendCommand(c, "PUBLISH soak:chan:%d m%llu", i, seq++);
        for (int i = 0; i < 10 && c; i++)
            take_reply(&c, L_PUBSUB);
        sleep_ms(5);
    }
    if (c)
        redisFree(c);
    return NULL;
}

static void *load_subscribe(void *arg)
{
    uint64_t rng = (uint64_t)(uintptr_t)arg * 49979687 + 11;
    while (!S.stop) {
        redisContext *c = cl_connect(S.ch.proxy.port, 1000);
        if (!c) {
            sleep_ms(100);
            continue;
        }
        int ch = (int)(next_rand(&rng) % 10), want = 2 + (int)(next_rand(&rng) % 200);
        redisAppendCommand(c, "SUBSCRIBE soak:chan:%d", ch);
        redisAppendCommand(c, "PSUBSCRIBE soak:chan:%d*", (ch + 1) % 10);
        for (int got = 0; got < want && !S.stop; got++) {
            redisReply *r = NULL;
            if (redisGetReply(c, (void **)&r) != REDIS_OK || !r) {
                if (!(c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)))
                    note_error(L_PUBSUB, c->errstr);
                break;
            }
            if (r->type == REDIS_REPLY_ERROR)
                note_error(L_PUBSUB, r->str);
            else
                count(L_PUBSUB, 1);
            freeReplyObject(r);
        }
        if (next_rand(&rng) % 2 && !c->err) {
            redisReply *r = redisCommand(c, "UNSUBSCRIBE");
            freeReplyObject(r);
        }
        redisFree(c);
    }
    return NULL;
}

/* Clients that vanish: after a pipeline they do not read, in the middle of
 * a command, while subscribed, or at once. */
static void *load_vanish(void *arg)
{
    uint64_t rng = (uint64_t)(uintptr_t)arg * 86028121 + 13;
    static char value[16384];
    memset(value, 'x', sizeof value);
    while (!S.stop) {
        redisContext *c = cl_connect(S.ch.proxy.port, 1000);
        if (!c) {
            sleep_ms(100);
            continue;
        }
        int done = 0;
        switch (next_rand(&rng) % 4) {
        case 0:
            for (int i = 0; i < 20; i++)
                redisAppendCommand(c, "SET soak:vanish:%d %b", i, value, sizeof value);
            redisAppendCommand(c, "GET soak:vanish:0");
            break;
        case 1:
            redisAppendFormattedCommand(c, "*3\r\n$3\r\nSET\r\n$11\r\nsoak:vanish\r\n$100\r\nab",
                                        strlen("*3\r\n$3\r\nSET\r\n$11\r\nsoak:vanish\r\n$100\r\nab"));
            break;
        case 2:
            redisAppendCommand(c, "SUBSCRIBE soak:chan:1 soak:chan:2");
            break;
        default:
            break;
        }
        while (!done && !c->err)
            if (redisBufferWrite(c, &done) != REDIS_OK)
                break;
        count(L_VANISH, 1);
        redisFree(c);
        sleep_ms(5);
    }
    return NULL;
}

/* ---------- the proxy, the cluster and the samples ---------- */

static double proc_rss(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    double kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %lf kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb * 1024;
}

static double proc_fds(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    double n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* name's value in an INFO text, or -1. */
static double info_value(const char *text, const char *name)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\n%s:", name);
    const char *at = strstr(text, pat);
    return at ? strtod(at + strlen(pat), NULL) : -1;
}

static int take_sample(redisContext **info, struct sample *s)
{
    pid_t pid = S.ch.proxy.pid;
    s->v[M_RSS] = proc_rss(pid);
    s->v[M_FDS] = proc_fds(pid);
    if (!(*info = proxy_conn(*info)))
        return -1;
    redisReply *r = redisCommand(*info, "INFO memory proxy nodes");
    if (!r || r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return -1;
    }
    s->v[M_USED] = info_value(r->str, "used_memory");
    s->v[M_CLIENT_MEM] = info_value(r->str, "clients_memory");
    double held = info_value(r->str, "requests_held");
    s->v[M_REQ_POOLED] = info_value(r->str, "requests_pooled");
    s->v[M_REQ_LIVE] = held - s->v[M_REQ_POOLED];
    s->v[M_IO_BUF] = info_value(r->str, "io_buffer_bytes");
    s->v[M_NODE_CONNS] = info_value(r->str, "node_connections_ready");
    S.reloads_applied = (long)info_value(r->str, "config_reloads");
    S.reloads_refused = (long)info_value(r->str, "config_reloads_refused");
    freeReplyObject(r);
    return 0;
}

static void write_conf(int turn)
{
    char tmp[420];
    snprintf(tmp, sizeof tmp, "%s.new", S.conf);
    FILE *f = fopen(tmp, "w");
    if (!f)
        die("cannot write %s: %s", tmp, strerror(errno));
    fprintf(f, "threads %d\nslowlog-log-slower-than %d\nslowlog-max-len %d\n", THREADS,
            turn % 2 ? 20000 : 10000, turn % 2 ? 64 : 128);
    fclose(f);
    if (rename(tmp, S.conf) < 0)
        die("rename %s: %s", tmp, strerror(errno));
}

static void failover(int turn)
{
    struct cl_view v;
    if (cl_view(&S.ch, &v) < 0 || v.nmasters == 0)
        die("cannot read the masters");
    const struct cl_master *m = &v.m[turn % v.nmasters];
    redisReply *r = cl_cmd(m->replica, "CLUSTER FAILOVER");
    if (!r || r->type == REDIS_REPLY_ERROR)
        die("CLUSTER FAILOVER on %d: %s", m->replica, r ? r->str : "no reply");
    freeReplyObject(r);
    for (long long deadline = now_ms() + 20000; !cl_role_is_master(m->replica); sleep_ms(50))
        if (now_ms() > deadline)
            die("failover: node %d not promoted after 20 s", m->replica);
    cl_wait_healthy(&S.ch, 30000, "a failover");
}

static void proxy_alive(void)
{
    int st;
    if (waitpid(S.ch.proxy.pid, &st, WNOHANG) == S.ch.proxy.pid) {
        S.ch.proxy.pid = 0;
        die("the proxy exited (status %d): see %s", st, S.ch.proxy.log);
    }
}

/* ---------- the verdict ---------- */

struct fit {
    double slope_per_min, rise, mean, bound;
    int grows;
};

/* The least-squares line through samples [from, n) of metric m. */
static struct fit fit_metric(const struct sample *s, int from, int n, enum metric m)
{
    struct fit f = { 0 };
    double sx = 0, sy = 0, sxx = 0, sxy = 0, k = n - from;
    for (int i = from; i < n; i++) {
        sx += s[i].t_min;
        sy += s[i].v[m];
        sxx += s[i].t_min * s[i].t_min;
        sxy += s[i].t_min * s[i].v[m];
    }
    double den = k * sxx - sx * sx;
    f.mean = sy / k;
    f.slope_per_min = den > 0 ? (k * sxy - sx * sy) / den : 0;
    f.rise = f.slope_per_min * (s[n - 1].t_min - s[from].t_min);
    f.bound = fmax(metrics[m].floor, 0.10 * f.mean);
    f.grows = f.rise > f.bound;
    return f;
}

static void print_table(FILE *out, const struct sample *s, int n)
{
    fprintf(out, "| min |");
    for (int m = 0; m < M_COUNT; m++)
        fprintf(out, " %s%s%s%s |", metrics[m].name, metrics[m].unit[0] ? " (" : "",
                metrics[m].unit, metrics[m].unit[0] ? ")" : "");
    fprintf(out, " commands | errors |\n| -: |");
    for (int m = 0; m < M_COUNT; m++)
        fprintf(out, " -: |");
    fprintf(out, " -: | -: |\n");
    for (int i = 0; i < n; i++) {
        fprintf(out, "| %.1f |", s[i].t_min);
        for (int m = 0; m < M_COUNT; m++)
            fprintf(out, metrics[m].scale > 1 ? " %.1f |" : " %.0f |", s[i].v[m] / metrics[m].scale);
        fprintf(out, " %llu | %llu |\n", s[i].ops, s[i].errors);
    }
}

/* One line per metric, each scaled to its own largest sample. */
static void write_svg(const char *path, const struct sample *s, int n, double judged_from)
{
    static const char *colors[M_COUNT] = { "#d62728", "#1f77b4", "#2ca02c", "#9467bd",
                                           "#ff7f0e", "#8c564b", "#e377c2", "#17becf" };
    const double W = 720, H = 360, L = 50, R = 190, T = 20, B = 40;
    FILE *f = fopen(path, "w");
    if (!f || n < 1)
        return;
    double tmax = s[n - 1].t_min > 0 ? s[n - 1].t_min : 1;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n", W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    double jx = L + (W - L - R) * judged_from / tmax;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" fill=\"#f3f3f3\"/>\n",
            jx, T, W - R - jx, H - T - B);
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n",
            L, H - B, W - R, H - B);
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n",
            L, T, L, H - B);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">minutes (shaded: judged)</text>\n",
            (L + W - R) / 2, H - 8);
    for (int i = 0; i <= 4; i++) {
        double x = L + (W - L - R) * i / 4;
        fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.0f</text>\n", x,
                H - B + 14, tmax * i / 4);
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">max</text>\n", L - 4, T + 4);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">0</text>\n", L - 4, H - B);
    for (int m = 0; m < M_COUNT; m++) {
        double top = 0;
        for (int i = 0; i < n; i++)
            top = fmax(top, s[i].v[m]);
        if (top <= 0)
            top = 1;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", colors[m]);
        for (int i = 0; i < n; i++)
            fprintf(f, "%.1f,%.1f ", L + (W - L - R) * s[i].t_min / tmax,
                    H - B - (H - T - B) * s[i].v[m] / top);
        fprintf(f, "\"/>\n");
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s (max %.*f%s%s)</text>\n",
                W - R + 10, T + 14.0 * (m + 1), colors[m], metrics[m].name,
                metrics[m].scale > 1 ? 1 : 0, top / metrics[m].scale,
                metrics[m].unit[0] ? " " : "", metrics[m].unit);
    }
    fprintf(f, "</svg>\n");
    fclose(f);
}

static int judge(FILE *out, const struct sample *s, int n, int from)
{
    int failed = 0;
    if (n - from < 3) {
        fprintf(out, "FAIL: %d samples to judge, fewer than 3\n", n - from);
        return 1;
    }
    fprintf(out, "\nJudged from minute %.1f to %.1f (%d samples): a resource fails when its "
            "least-squares line rises, over that window, by more than the larger of 10%% of its "
            "mean and its floor.\n\n| resource | mean | slope per hour | rise in the window | bound | |\n"
            "| - | -: | -: | -: | -: | - |\n", s[from].t_min, s[n - 1].t_min, n - from);
    for (int m = 0; m < M_COUNT; m++) {
        double sc = metrics[m].scale;
        if (m == M_REQ_POOLED) {
            double top = 0;
            for (int i = 0; i < n; i++)
                top = fmax(top, s[i].v[m]);
            int over = top > POOL_CAP_PER_WORKER * THREADS;
            fprintf(out, "| %s | | | | cap %d | %s: at most %.0f |\n", metrics[m].name,
                    POOL_CAP_PER_WORKER * THREADS, over ? "FAIL" : "ok", top);
            failed |= over;
            continue;
        }
        struct fit f = fit_metric(s, from, n, (enum metric)m);
        fprintf(out, "| %s%s%s | %.1f | %+.2f | %+.2f | %.2f | %s |\n", metrics[m].name,
                metrics[m].unit[0] ? ", " : "", metrics[m].unit, f.mean / sc,
                f.slope_per_min * 60 / sc, f.rise / sc, f.bound / sc, f.grows ? "FAIL" : "ok");
        failed |= f.grows;
    }
    if (S.reloads_refused != 0 || S.reloads_applied < 1) {
        fprintf(out, "FAIL: the proxy applied %ld config reloads and refused %ld\n",
                S.reloads_applied, S.reloads_refused);
        failed = 1;
    }
    for (int k = 0; k < L_KINDS; k++)
        if (S.ops[k] == 0) {
            fprintf(out, "FAIL: the %s load had no answer\n", kind_names[k]);
            failed = 1;
        }
    for (int i = 1; i < n; i++)
        if (s[i].ops == 0) {
            fprintf(out, "FAIL: no command answered between minutes %.1f and %.1f\n",
                    s[i - 1].t_min, s[i].t_min);
            failed = 1;
        }
    return failed;
}

static long env_long(const char *name, long dflt, long lo, long hi)
{
    const char *v = getenv(name);
    char *end;
    long x = v && *v ? strtol(v, &end, 10) : dflt;
    if (v && *v && (*end || x < lo || x > hi))
        die("%s must be a number from %ld to %ld", name, lo, hi);
    return x;
}

static unsigned long long total(const unsigned long long *a)
{
    unsigned long long t = 0;
    for (int k = 0; k < L_KINDS; k++)
        t += __atomic_load_n(&a[k], __ATOMIC_RELAXED);
    return t;
}

int main(void)
{
    long minutes = env_long("SOAK_MINUTES", 60, 1, 7 * 24 * 60);
    const char *out_dir = getenv("SOAK_OUT") && *getenv("SOAK_OUT") ? getenv("SOAK_OUT")
                                                                   : "build/soak";
    int short_form = minutes < 20;
    long long run_ms = minutes * 60000, sample_ms = short_form ? 10000 : 60000;
    long long reload_ms = short_form ? 20000 : 60000;
    long long failover_ms = short_form ? run_ms / 3 : 300000;
    double judged_from = short_form ? minutes / 2.0 : 10;

    pthread_mutex_init(&S.lock, NULL);
    chaos_setup(&S.ch);
    snprintf(S.conf, sizeof S.conf, "%s/soak.conf", S.ch.dir);
    write_conf(0);
    S.ch.proxy.conf = S.conf;
    proxy_spawn(&S.ch, &S.ch.proxy, NULL, 1);
    say("soak: %ld minutes through the proxy (pid %d), sampled every %lld s", minutes,
        (int)S.ch.proxy.pid, sample_ms / 1000);

    void *(*loads[])(void *) = { load_cache, load_cache, load_multi, load_script, load_scan,
                                 load_queue, load_publish, load_subscribe, load_subscribe,
                                 load_vanish };
    enum { NLOADS = sizeof loads / sizeof loads[0] };
    pthread_t threads[NLOADS];
    for (int i = 0; i < NLOADS; i++)
        if (pthread_create(&threads[i], NULL, loads[i], (void *)(uintptr_t)(i + 1)) != 0)
            die("pthread_create failed");

    static struct sample samples[MAX_SAMPLES];
    int n = 0, reloads = 1, failovers = 0;
    redisContext *info = NULL;
    long long t0 = now_ms(), next_sample = t0, next_reload = t0 + reload_ms;
    long long next_failover = t0 + failover_ms;
    unsigned long long ops_before = 0, errors_before = 0;
    while (n < MAX_SAMPLES) {
        long long now = now_ms();
        proxy_alive();
        if (now >= next_sample) {
            struct sample *s = &samples[n];
            s->t_min = (double)(now - t0) / 60000;
            if (take_sample(&info, s) < 0)
                die("the proxy did not answer INFO at minute %.1f", s->t_min);
            unsigned long long ops = total(S.ops), errors = total(S.errors);
            s->ops = ops - ops_before;
            s->errors = errors - errors_before;
            ops_before = ops;
            errors_before = errors;
            say("soak: %5.1f min  rss %.1f MiB  allocated %.1f MiB  fds %.0f  requests %.0f "
                "(+%.0f pooled)  commands %llu  errors %llu", s->t_min, s->v[M_RSS] / 1048576,
                s->v[M_USED] / 1048576, s->v[M_FDS], s->v[M_REQ_LIVE], s->v[M_REQ_POOLED],
                s->ops, s->errors);
            n++;
            if (now - t0 >= run_ms)
                break;
            next_sample += sample_ms;
        }
        if (now >= next_reload) {
            write_conf(reloads++);
            kill(S.ch.proxy.pid, SIGHUP);
            next_reload += reload_ms;
        }
        if (now >= next_failover && now - t0 < run_ms - sample_ms) {
            failover(failovers++);
            next_failover += failover_ms;
        }
        sleep_ms(100);
    }
    S.stop = 1;
    for (int i = 0; i < NLOADS; i++)
        pthread_join(threads[i], NULL);
    if (info)
        redisFree(info);

    char path[512];
    mkdir(out_dir, 0755);
    snprintf(path, sizeof path, "%s/soak.log", out_dir);
    FILE *log = fopen(path, "w");
    int from = 0;
    while (from < n && samples[from].t_min < judged_from - 0.01)
        from++;
    for (int pass = 0; pass < 2; pass++) {
        FILE *o = pass ? log : stdout;
        if (!o)
            continue;
        fprintf(o, "\nSoak: %ld minutes, %ld config reloads applied, %d failovers, %llu "
                "commands, %llu errors (first: %s)\n\n", minutes, S.reloads_applied, failovers,
                total(S.ops), total(S.errors), S.err_sample[0] ? S.err_sample : "none");
        fprintf(o, "By kind (answers, errors):");
        for (int k = 0; k < L_KINDS; k++)
            fprintf(o, "%s %s %llu, %llu", k ? ";" : "", kind_names[k], S.ops[k], S.errors[k]);
        fprintf(o, "\n\n");
        print_table(o, samples, n);
    }
    int failed = judge(stdout, samples, n, from);
    if (log) {
        judge(log, samples, n, from);
        fprintf(log, "\n%s\n", failed ? "FAILED" : "passed");
        fclose(log);
    }
    snprintf(path, sizeof path, "%s/soak.svg", out_dir);
    write_svg(path, samples, n, samples[from < n ? from : 0].t_min);
    say("soak: %s; the table in %s/soak.log, the plot in %s/soak.svg",
        failed ? "FAILED" : "passed", out_dir, out_dir);
    return failed ? 1 : 0;
}
