/*
 * faults: each fault done to the cluster under the verifying workload, and
 * what must hold after it. See chaos.h.
 */
#include "tests/chaos/chaos.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct fault {
    const char *name;
    void (*run)(struct chaos *ch, struct fault_row *row, long arg);
    long arg;                   /* which form of the fault (each runner says) */
};

static int reps(const struct chaos *ch, int full)
{
    return ch->short_form ? 1 : full;
}

static struct wl_opts load(const struct chaos *ch, const char *ns)
{
    struct wl_opts o = {
        .clients = ch->short_form ? 4 : 12, .readers = 2,
        .lists = ch->short_form ? 200 : 1000, .counters = ch->short_form ? 200 : 1000,
        .depth = 1, .ns = ns,
    };
    return o;
}

/* Runs the workload o for run_ms before and after the fault's own steps. */
static void warm(long ms)
{
    sleep_ms(ms);
}

static int check(struct fault_row *row, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int check(struct fault_row *row, int ok, const char *fmt, ...)
{
    if (!ok) {
        va_list ap;
        size_t used = strlen(row->note);
        va_start(ap, fmt);
        if (used + 2 < sizeof row->note) {
            if (used)
                row->note[used++] = ';', row->note[used++] = ' ', row->note[used] = '\0';
            vsnprintf(row->note + used, sizeof row->note - used, fmt, ap);
        }
        va_end(ap);
        row->passed = 0;
    }
    return ok;
}

/* What every fault must keep: nothing duplicated, no "did not run" that ran,
 * each client's order, no hang. */
static void check_common(struct fault_row *row)
{
    const struct wl_result *r = &row->r;
    check(row, r->duplicated == 0, "%ld duplicated", r->duplicated);
    check(row, r->false_failed == 0, "%ld failed ops ran", r->false_failed);
    check(row, r->out_of_order == 0, "%ld out of order", r->out_of_order);
    check(row, r->hung == 0, "%ld replies slower than the client timeout", r->hung);
    check(row, r->dropped == 0, "%ld commands never answered (the connection to the proxy "
          "broke)", r->dropped);
    check(row, r->ok > 0, "nothing succeeded");
}

static void check_clean(struct fault_row *row)
{
    const struct wl_result *r = &row->r;
    check(row, r->lost == 0, "%ld lost", r->lost);
    check(row, r->backwards == 0, "%ld reads went backwards", r->backwards);
}

static int master_at(struct chaos *ch, int i, struct cl_master *out)
{
    struct cl_view v;
    if (cl_view(ch, &v) < 0 || v.nmasters != CHAOS_MASTERS)
        die("cannot read the masters");
    *out = v.m[i % v.nmasters];
    return out->port;
}

static void wait_master(int port, long timeout_ms, const char *what)
{
    long long deadline = now_ms() + timeout_ms;
    while (!cl_role_is_master(port)) {
        if (now_ms() > deadline)
            die("%s: node %d not promoted after %ld s", what, port, timeout_ms / 1000);
        sleep_ms(50);
    }
}

/* ---------- CLUSTER FAILOVER on a replica ---------- */

static void fault_failover(struct chaos *ch, struct fault_row *row, long arg)
{
    struct workload wl;
    struct wl_opts o = load(ch, "failover");
    (void)arg;
    row->reps = reps(ch, 10);
    wl_start(&wl, ch, &o);
    warm(1000);
    for (int i = 0; i < row->reps; i++) {
        struct cl_master m;
        master_at(ch, i, &m);
        int k = wl_mark_fault(&wl);
        redisReply *r = cl_cmd(m.replica, "CLUSTER FAILOVER");
        if (!r || r->type == REDIS_REPLY_ERROR)
            die("CLUSTER FAILOVER on %d: %s", m.replica, r ? r->str : "no reply");
        freeReplyObject(r);
        wait_master(m.replica, 20000, "failover");
        cl_wait_healthy(ch, 30000, "a failover");
        wl_mark_healed(&wl, k);
        warm(1000);
    }
    wl_stop(&wl);
    wl_verify(&wl, &row->r);
    wl_free(&wl);
    check_common(row);
    check_clean(row);
    check(row, row->r.failed + row->r.unknown == 0, "%ld client errors (%s)",
          row->r.failed + row->r.unknown, row->r.err_sample);
}

/* ---------- kill -9 of a master ---------- */

static void kill_master(struct chaos *ch, struct workload *wl, int i, char *offsets, size_t size)
{
    struct cl_master m;
    master_at(ch, i, &m);
    /* the replica first: the lag read is at least the one at the kill */
    long long ro = cl_info_field(m.replica, "replication", "slave_repl_offset");
    long long mo = cl_info_field(m.port, "replication", "master_repl_offset");
    pid_t pid = cl_pid(ch, m.port);
    if (pid <= 0)
        die("no pid for node %d", m.port);
    int k = wl_mark_fault(wl);
    kill(pid, SIGKILL);
    wait_master(m.replica, 30000, "kill -9");
    wl_mark_healed(wl, k);
    size_t used = strlen(offsets);
    snprintf(offsets + used, size - used, "%s%lld", used ? "," : "", mo - ro);
    while (kill(pid, 0) == 0)
        sleep_ms(20);
    cl_restart(ch, m.port);
    cl_wait_healthy(ch, 60000, "a master's restart");
}

enum { KILL_PLAIN, KILL_WAIT, KILL_ACKS };

/* arg: KILL_WAIT, each write followed by WAIT 1 0; KILL_ACKS, through a
 * proxy of its own with replica-acks 1 1000 */
static void kill_run(struct chaos *ch, struct fault_row *row, long arg)
{
    struct workload wl;
    struct chaos_proxy px = { 0 };
    struct wl_opts o = load(ch, arg == KILL_WAIT ? "killwait" : arg == KILL_ACKS ? "killacks"
                                                                                : "kill");
    char offsets[200] = "";
    o.wait_replica = arg == KILL_WAIT;
    if (arg == KILL_ACKS) {
        const char *const extra[] = { "--replica-acks", "1", "1000", NULL };
        proxy_spawn(ch, &px, extra, 1);
        o.port = px.port;
    }
    row->reps = reps(ch, 5);
    wl_start(&wl, ch, &o);
    warm(1000);
    for (int i = 0; i < row->reps; i++) {
        kill_master(ch, &wl, i, offsets, sizeof offsets);
        warm(1000);
    }
    wl_stop(&wl);
    if (arg == KILL_ACKS)
        proxy_kill(ch, &px);
    wl_verify(&wl, &row->r);
    wl_free(&wl);
    check_common(row);
    /* (with replica-acks, writes also fail while the promoted master has no
     * replica yet: until the old one is back and in sync) */
    check(row, arg == KILL_ACKS || row->r.errors_outside == 0,
          "%ld errors outside the kill..promotion + 2 s windows", row->r.errors_outside);
    if (arg != KILL_PLAIN)
        check(row, row->r.lost == 0, "%ld lost though a replica had them", row->r.lost);
    snprintf(row->note + strlen(row->note), sizeof row->note - strlen(row->note),
             "%sreplication lag at the kills (bytes): %s", row->note[0] ? "; " : "", offsets);
}

/* ---------- CLIENT KILL TYPE normal on every master ---------- */

static void fault_client_kill(struct chaos *ch, struct fault_row *row, long arg)
{
    struct workload wl;
    struct wl_opts o = load(ch, "clientkill");
    (void)arg;
    o.depth = 64;
    row->reps = ch->short_form ? 3 : 10;
    wl_start(&wl, ch, &o);
    warm(1000);
    for (int i = 0; i < row->reps; i++) {
        struct cl_view v;
        if (cl_view(ch, &v) < 0)
            die("cannot read the masters");
        int k = wl_mark_fault(&wl);
        for (int m = 0; m < v.nmasters; m++)
            freeReplyObject(cl_cmd(v.m[m].port, "CLIENT KILL TYPE normal"));
        wl_mark_healed(&wl, k);
        warm(2000);
    }
    wl_stop(&wl);
    wl_verify(&wl, &row->r);
    wl_free(&wl);
    check_common(row);
    check_clean(row);
    check(row, row->r.errors_outside == 0, "%ld errors away from the kills",
          row->r.errors_outside);
    /* what a killed connection had not written yet is resent: no command
     * is given up on as not run */
    check(row, row->r.failed == 0, "%ld commands failed as not run (%s)", row->r.failed,
          row->r.err_sample);
}

/* ---------- SIGSTOP of a master ---------- */

/* Waits until pid shows as stopped ('T' in /proc/PID/stat). */
static int proc_stopped(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    for (int i = 0; i < 200; i++, sleep_ms(10)) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = '\0';
        const char *p = strrchr(buf, ')');
        if (p && p[1] == ' ' && p[2] == 'T')
            return 1;
    }
    return 0;
}

/* arg: how long the master stays stopped, in ms */
static void stop_run(struct chaos *ch, struct fault_row *row, long stop_ms)
{
    struct workload wl;
    struct wl_opts o = load(ch, stop_ms > CHAOS_NODE_TIMEOUT ? "stop10" : "stop1");
    row->reps = 1;
    wl_start(&wl, ch, &o);
    warm(2000);
    struct cl_master m;
    master_at(ch, 0, &m);
    int shard = -1;
    for (int s = 0; s < CHAOS_MASTERS; s++)
        if (wl.shard_port[s] == m.port)
            shard = s;
    pid_t pid = cl_pid(ch, m.port);
    int32_t before = wl_clock(&wl);
    int k = wl_mark_fault(&wl);
    kill(pid, SIGSTOP);
    if (!proc_stopped(pid))
        die("node %d (pid %d) did not stop", m.port, (int)pid);
    sleep_ms(stop_ms);
    kill(pid, SIGCONT);
    int32_t after = wl_clock(&wl);
    cl_wait_healthy(ch, 60000, "a stopped master's return");
    if (stop_ms > 2 * CHAOS_NODE_TIMEOUT)
        check(row, cl_role_is_master(m.replica), "the stopped master's replica was not promoted");
    wl_mark_healed(&wl, k);
    warm(1000);
    wl_stop(&wl);
    long long others_before = wl_max_latency(&wl, shard, before - 2000, before);
    long long others_during = wl_max_latency(&wl, shard, before, after);
    wl_verify(&wl, &row->r);
    wl_free(&wl);
    check_common(row);
    if (stop_ms < CHAOS_NODE_TIMEOUT) {
        check_clean(row);
        check(row, row->r.failed + row->r.unknown == 0, "%ld client errors (%s)",
              row->r.failed + row->r.unknown, row->r.err_sample);
    }
    /* latency bounds are figures of make chaos, not of make test's short
     * form: shared machines are noisy */
    if (!ch->short_form) {
        check(row, row->r.max_latency_ms <= CHAOS_PROXY_TIMEOUT + 1000,
              "a reply took %lld ms", row->r.max_latency_ms);
        /* Past cluster-node-timeout the cluster itself answers CLUSTERDOWN
         * everywhere until the promotion (cluster-require-full-coverage):
         * only a shorter stop leaves the other masters untouched. */
        if (stop_ms < CHAOS_NODE_TIMEOUT)
            check(row, others_during <= others_before + 500,
                  "the other masters' replies took up to %lld ms (%lld before)", others_during,
                  others_before);
    }
    snprintf(row->note + strlen(row->note), sizeof row->note - strlen(row->note),
             "%sother masters' slowest reply %lld ms during, %lld ms before",
             row->note[0] ? "; " : "", others_during, others_before);
}

/* ---------- resharding ---------- */

/* Moves n slots from master a to master b with redis-cli. */
static void reshard(struct chaos *ch, const struct cl_master *a, const struct cl_master *b, int n)
{
    if (cl_cli(ch, "reshard 127.0.0.1:%d --cluster-from %s --cluster-to %s --cluster-slots %d "
               "--cluster-yes --cluster-pipeline 100", ch->base, a->id, b->id, n) != 0)
        die("redis-cli --cluster reshard failed (its output: cli.log)");
    /* the next redis-cli wants every node to agree first */
    cl_wait_healthy(ch, 30000, "a reshard");
}

/* MSET on two keys of one slot, through the proxy, until stopped: what a
 * multi-key command meets on a slot that moves. */
struct multikey {
    struct chaos *ch;
    pthread_t thread;
    char tag[32];
    volatile int stop;
    long ok, tryagain, other;
    char other_sample[160];
};

static void *multikey_main(void *arg)
{
    struct multikey *mk = arg;
    redisContext *c = NULL;
    for (long n = 0; !mk->stop; n++) {
        if (!c && !(c = cl_connect(mk->ch->proxy.port, CHAOS_PROXY_TIMEOUT + 5000))) {
            sleep_ms(20);
            continue;
        }
        redisReply *r = redisCommand(c, "MSET {%s}a %ld {%s}b %ld", mk->tag, n, mk->tag, n);
        if (!r) {
            redisFree(c);
            c = NULL;
            mk->other++;
            continue;
        }
        if (r->type == REDIS_REPLY_STATUS)
            mk->ok++;
        else if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "TRYAGAIN", 8) == 0)
            mk->tryagain++;
        else {
            mk->other++;
            snprintf(mk->other_sample, sizeof mk->other_sample, "%s",
                     r->type == REDIS_REPLY_ERROR ? r->str : "not OK");
        }
        freeReplyObject(r);
        sleep_ms(2);
    }
    redisFree(c);
    return NULL;
}

/* CLUSTER SETSLOT on every node. */
static void setslot_all(struct chaos *ch, int slot, const char *id)
{
    for (int p = ch->base; p < ch->base + CHAOS_NODES; p++)
        freeReplyObject(cl_cmd(p, "CLUSTER SETSLOT %d NODE %s", slot, id));
}

/* MIGRATE every key of slot from a to b, count at most (0: all). */
static void migrate_keys(const struct cl_master *a, const struct cl_master *b, int slot, int count)
{
    redisReply *keys = cl_cmd(a->port, "CLUSTER GETKEYSINSLOT %d %d", slot, count ? count : 100000);
    for (size_t i = 0; keys && keys->type == REDIS_REPLY_ARRAY && i < keys->elements; i++)
        freeReplyObject(cl_cmd(a->port, "MIGRATE 127.0.0.1 %d %s 0 5000", b->port,
                               keys->element[i]->str));
    freeReplyObject(keys);
}

/* One slot left MIGRATING (half its keys moved) for hold_ms, then moved. */
static void migrating_hold(struct chaos *ch, const struct cl_master *a, const struct cl_master *b,
                           int slot, long hold_ms)
{
    freeReplyObject(cl_cmd(b->port, "CLUSTER SETSLOT %d IMPORTING %s", slot, a->id));
    freeReplyObject(cl_cmd(a->port, "CLUSTER SETSLOT %d MIGRATING %s", slot, b->id));
    redisReply *n = cl_cmd(a->port, "CLUSTER COUNTKEYSINSLOT %d", slot);
    int half = n && n->type == REDIS_REPLY_INTEGER ? (int)(n->integer / 2) : 1;
    freeReplyObject(n);
    migrate_keys(a, b, slot, half > 0 ? half : 1);
    sleep_ms(hold_ms);
    migrate_keys(a, b, slot, 0);
    freeReplyObject(cl_cmd(b->port, "CLUSTER SETSLOT %d NODE %s", slot, b->id));
    freeReplyObject(cl_cmd(a->port, "CLUSTER SETSLOT %d NODE %s", slot, b->id));
    setslot_all(ch, slot, b->id);
}

static void fault_reshard(struct chaos *ch, struct fault_row *row, long arg)
{
    struct workload wl;
    struct wl_opts o = load(ch, "reshard");
    struct multikey mk = { .ch = ch };
    struct cl_master a, b;
    int moves = ch->short_form ? 1 : 3, nslots = ch->short_form ? 200 : 1000;
    (void)arg;
    row->reps = 2 * moves + 2;
    wl_start(&wl, ch, &o);
    warm(1000);
    for (int i = 0; i < moves; i++) {
        master_at(ch, 0, &a);
        master_at(ch, 1, &b);
        int k = wl_mark_fault(&wl);
        reshard(ch, &a, &b, nslots);
        reshard(ch, &b, &a, nslots);
        wl_mark_healed(&wl, k);
    }
    /* rebalance: weight one master up, then all even again */
    master_at(ch, 2, &a);
    int k = wl_mark_fault(&wl);
    if (cl_cli(ch, "rebalance 127.0.0.1:%d --cluster-weight %s=2 --cluster-pipeline 100",
               ch->base, a.id) != 0)
        die("redis-cli --cluster rebalance failed (its output: cli.log)");
    cl_wait_healthy(ch, 30000, "a rebalance");
    if (cl_cli(ch, "rebalance 127.0.0.1:%d --cluster-pipeline 100", ch->base) != 0)
        die("redis-cli --cluster rebalance failed (its output: cli.log)");
    cl_wait_healthy(ch, 30000, "a rebalance");
    wl_mark_healed(&wl, k);
    /* one slot MIGRATING a while, under the load and a multi-key writer */
    struct cl_view v;
    master_at(ch, 0, &a);
    master_at(ch, 1, &b);
    if (cl_view(ch, &v) < 0)
        die("cannot read the slot map");
    /* the slot of one of the workload's lists on a: its keys are moved
     * half now, half after the hold, while they are written */
    int slot = -1;
    for (int i = 0; i < o.lists && slot < 0; i++) {
        char key[96];
        wl_list_key(&wl, i, key, sizeof key);
        if (v.slot_port[key_slot(key, strlen(key))] == a.port)
            slot = (int)key_slot(key, strlen(key));
    }
    if (slot < 0)
        die("no list of the workload on master %d", a.port);
    for (int n = 0;; n++) {
        snprintf(mk.tag, sizeof mk.tag, "mk%d", n);
        if ((int)key_slot(mk.tag, strlen(mk.tag)) == slot)
            break;
    }
    pthread_create(&mk.thread, NULL, multikey_main, &mk);
    sleep_ms(500);
    k = wl_mark_fault(&wl);
    migrating_hold(ch, &a, &b, slot, ch->short_form ? 5000 : 30000);
    wl_mark_healed(&wl, k);
    warm(1000);
    mk.stop = 1;
    pthread_join(mk.thread, NULL);
    wl_stop(&wl);
    wl_verify(&wl, &row->r);
    wl_free(&wl);
    check_common(row);
    check_clean(row);
    check(row, row->r.failed + row->r.unknown == 0, "%ld single-key errors (%s)",
          row->r.failed + row->r.unknown, row->r.err_sample);
    check(row, mk.other == 0, "%ld multi-key errors other than TRYAGAIN (%s)", mk.other,
          mk.other_sample);
    check(row, mk.ok > 0, "no multi-key command succeeded");
    snprintf(row->note + strlen(row->note), sizeof row->note - strlen(row->note),
             "%smulti-key on the migrating slot: %ld ok, %ld TRYAGAIN", row->note[0] ? "; " : "",
             mk.ok, mk.tryagain);
}

/* ---------- network faults between the proxy and one master ---------- */

struct net_fault {
    enum relay_mode mode;
    long arg, hold_ms;
    int no_errors;              /* the fault must not show to clients */
};

/* A host that is gone (unreachable): a request waits node-timeout-ms and at
 * most one connect timeout, not a connect timeout per retry. */
enum { NET_LATENCY, NET_BANDWIDTH, NET_RESET, NET_BLACKHOLE, NET_HALFCLOSE, NET_UNREACHABLE };
static const struct net_fault net_faults[] = {
    [NET_LATENCY] = { RELAY_LATENCY, 300, 6000, 1 },
    [NET_BANDWIDTH] = { RELAY_BANDWIDTH, 32768, 6000, 0 },
    [NET_RESET] = { RELAY_RESET, 50000, 6000, 0 },
    [NET_BLACKHOLE] = { RELAY_BLACKHOLE, 0, 6000, 0 },
    [NET_HALFCLOSE] = { RELAY_HALFCLOSE, 0, 6000, 0 },
    [NET_UNREACHABLE] = { RELAY_UNREACHABLE, 0, 8000, 0 },
};

/* arg: which of net_faults */
static void net_run(struct chaos *ch, struct fault_row *row, long arg)
{
    const struct net_fault *nf = &net_faults[arg];
    struct cl_master m;
    struct workload wl;
    struct wl_opts o = load(ch, row->name);
    struct chaos_proxy px = { 0 };
    char from[64], to[64];
    master_at(ch, 0, &m);
    struct relay *relay = relay_start(m.port);
    snprintf(from, sizeof from, "127.0.0.1:%d", m.port);
    snprintf(to, sizeof to, "127.0.0.1:%d", relay_port(relay));
    const char *const extra[] = { "--address-map", from, to, NULL };
    proxy_spawn(ch, &px, extra, 1);
    o.port = px.port;
    row->reps = 1;
    wl_start(&wl, ch, &o);
    warm(1500);
    int k = wl_mark_fault(&wl);
    relay_set(relay, nf->mode, nf->arg);
    sleep_ms(ch->short_form ? nf->hold_ms / 2 : nf->hold_ms);
    relay_set(relay, RELAY_PASS, 0);
    wl_mark_healed(&wl, k);
    warm(2000);
    wl_stop(&wl);
    wl_verify(&wl, &row->r);
    wl_free(&wl);
    proxy_kill(ch, &px);
    relay_stop(relay);
    check_common(row);
    check_clean(row);
    check(row, row->r.errors_outside == 0, "%ld errors after the link was whole + 2 s",
          row->r.errors_outside);
    if (nf->no_errors)
        check(row, row->r.failed + row->r.unknown == 0, "%ld client errors (%s)",
              row->r.failed + row->r.unknown, row->r.err_sample);
    /* node-timeout-ms, and for a host that is gone the connect in flight
     * then (the proxy's default node-connect-timeout-ms, 1000) */
    long long bound = CHAOS_PROXY_TIMEOUT + 1000 + (nf->mode == RELAY_LATENCY ? nf->arg : 0) +
                      (nf->mode == RELAY_UNREACHABLE ? 1000 : 0);
    if (!ch->short_form)
        check(row, row->r.max_latency_ms <= bound, "a reply took %lld ms", row->r.max_latency_ms);
    if (nf->mode == RELAY_UNREACHABLE)
        snprintf(row->note + strlen(row->note), sizeof row->note - strlen(row->note),
                 "%sslowest reply %lld ms", row->note[0] ? "; " : "", row->r.max_latency_ms);
}

/* A client that leaves while its command waits for an unreachable master:
 * the command, which never ran, is not run later when the master is back
 * (Redis drops what a closed client left unread). */
static void fault_gone_client(struct chaos *ch, struct fault_row *row, long arg)
{
    struct cl_master m;
    struct cl_view v;
    struct chaos_proxy px = { 0 };
    char from[64], to[64], key[64];
    (void)arg;
    master_at(ch, 0, &m);
    if (cl_view(ch, &v) < 0)
        die("cannot read the slot map");
    for (int n = 0;; n++) {
        snprintf(key, sizeof key, "chaos:gone:%d", n);
        if (v.slot_port[key_slot(key, strlen(key))] == m.port)
            break;
    }
    struct relay *relay = relay_start(m.port);
    snprintf(from, sizeof from, "127.0.0.1:%d", m.port);
    snprintf(to, sizeof to, "127.0.0.1:%d", relay_port(relay));
    const char *const extra[] = { "--address-map", from, to, NULL };
    proxy_spawn(ch, &px, extra, 1);
    row->reps = 1;
    for (int i = 0; i < 3; i++) {
        freeReplyObject(cl_cmd(m.port, "DEL %s", key));
        relay_set(relay, RELAY_UNREACHABLE, 0);
        redisContext *c = cl_connect(px.port, 5000);
        if (!c)
            die("cannot connect to the proxy");
        redisAppendCommand(c, "SET %s gone", key);
        int done = 0;
        while (!done && redisBufferWrite(c, &done) == REDIS_OK)
            ;
        sleep_ms(300);
        redisFree(c);               /* gone, its SET unanswered */
        sleep_ms(900);
        relay_set(relay, RELAY_PASS, 0);
        sleep_ms(4000);             /* past every retry and hold-off */
        redisReply *r = cl_cmd(m.port, "EXISTS %s", key);
        row->r.ops++;
        if (r && r->type == REDIS_REPLY_INTEGER && r->integer == 0)
            row->r.failed++;        /* what must be: it did not run */
        else
            row->r.ok++;
        freeReplyObject(r);
    }
    proxy_kill(ch, &px);
    relay_stop(relay);
    check(row, row->r.ok == 0, "%ld of %ld SETs of a client that had gone ran later",
          row->r.ok, row->r.ops);
    snprintf(row->note + strlen(row->note), sizeof row->note - strlen(row->note),
             "%s%ld of %ld SETs of a gone client never ran (counted as failed)",
             row->note[0] ? "; " : "", row->r.failed, row->r.ops);
}

/* ---------- every node killed and restarted; a proxy started meanwhile ---------- */

/* SET through a proxy every 20 ms, each outcome's time kept. */
struct prober {
    struct chaos_proxy *px;
    pthread_t thread;
    volatile int stop;
    long ops, ok, failed, unknown;
    volatile long long last_ok_ms, last_err_ms;
};

static void *prober_main(void *arg)
{
    struct prober *pr = arg;
    redisContext *c = NULL;
    for (long n = 0; !pr->stop; n++, sleep_ms(20)) {
        if (!c && !(c = cl_connect(pr->px->port, CHAOS_PROXY_TIMEOUT + 5000))) {
            pr->ops++;
            pr->failed++;
            pr->last_err_ms = now_ms();
            continue;
        }
        redisReply *r = redisCommand(c, "SET chaos:restart:%ld %ld", n % 100, n);
        pr->ops++;
        if (r && r->type == REDIS_REPLY_STATUS) {
            pr->ok++;
            pr->last_ok_ms = now_ms();
        } else {
            if (!r || strstr(r->str, "may have run"))
                pr->unknown++;
            else
                pr->failed++;
            pr->last_err_ms = now_ms();
        }
        if (!r) {
            redisFree(c);
            c = NULL;
        }
        freeReplyObject(r);
    }
    redisFree(c);
    return NULL;
}

/* Time from `since` until p serves a SET (-1: not within 30 s). */
static long long serves_after(struct chaos_proxy *p, long long since)
{
    for (long long deadline = now_ms() + 30000; now_ms() < deadline; sleep_ms(20)) {
        redisContext *c = cl_connect(p->port, 1000);
        redisReply *r = c ? redisCommand(c, "SET chaos:restart:probe 1") : NULL;
        int ok = r && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        redisFree(c);
        if (ok)
            return now_ms() - since;
    }
    return -1;
}

/* When every node first says cluster_state:ok (dies after timeout_ms). */
static long long all_state_ok(struct chaos *ch, long timeout_ms)
{
    for (long long deadline = now_ms() + timeout_ms;; sleep_ms(20)) {
        int ok = 1;
        for (int p = ch->base; ok && p < ch->base + CHAOS_NODES; p++) {
            redisReply *r = cl_cmd(p, "CLUSTER INFO");
            ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok");
            freeReplyObject(r);
        }
        if (ok)
            return now_ms();
        if (now_ms() > deadline)
            die("not every node says cluster_state:ok %ld s after every node's restart",
                timeout_ms / 1000);
    }
}

static void fault_restart_all(struct chaos *ch, struct fault_row *row, long arg)
{
    struct prober pr = { .px = &ch->proxy };
    struct chaos_proxy late = { 0 };
    char body[2048];
    pid_t pids[CHAOS_NODES];
    int status;
    (void)arg;
    row->reps = 1;
    pthread_create(&pr.thread, NULL, prober_main, &pr);
    sleep_ms(1000);
    long long fault = now_ms();
    for (int i = 0; i < CHAOS_NODES; i++)
        kill(pids[i] = cl_pid(ch, ch->base + i), SIGKILL);
    for (int i = 0; i < CHAOS_NODES; i++)
        while (kill(pids[i], 0) == 0)
            sleep_ms(20);
    /* a proxy started now: it stays up, not ready, and says why */
    proxy_spawn(ch, &late, NULL, 0);
    sleep_ms(CHAOS_PROXY_TIMEOUT + 1000);
    status = proxy_http(&ch->proxy, "/readyz", body, sizeof body);
    check(row, status == 503 && body[0], "/readyz of the running proxy with every node down: "
          "%d %.80s", status, body);
    status = 0;
    for (long long deadline = now_ms() + 10000; !status && now_ms() < deadline; sleep_ms(50))
        status = proxy_http(&late, "/readyz", body, sizeof body);
    sleep_ms(1000);
    check(row, kill(late.pid, 0) == 0, "a proxy started while no seed answers exited");
    status = proxy_http(&late, "/readyz", body, sizeof body);
    check(row, status == 503 && strstr(body, "waiting for the cluster"),
          "/readyz of a proxy waiting for the cluster: %d %.80s", status, body);
    for (int i = 0; i < CHAOS_NODES; i++)
        cl_restart(ch, ch->base + i);
    long long whole = all_state_ok(ch, 60000);
    long long main_after = serves_after(&ch->proxy, whole);
    long long late_after = serves_after(&late, whole);
    int stale = cl_clear_imports(ch);
    cl_wait_healthy(ch, 60000, "every node's restart");
    sleep_ms(500);
    pr.stop = 1;
    pthread_join(pr.thread, NULL);
    proxy_kill(ch, &late);
    row->r.ops = pr.ops;
    row->r.ok = pr.ok;
    row->r.failed = pr.failed;
    row->r.unknown = pr.unknown;
    row->r.longest_errors_ms = pr.last_err_ms > fault ? pr.last_err_ms - fault : 0;
    row->r.recovery_ms = main_after > late_after ? main_after : late_after;
    check(row, main_after >= 0, "the running proxy does not serve 30 s after the restart");
    check(row, late_after >= 0, "the proxy started meanwhile does not serve 30 s after it");
    if (!ch->short_form)
        check(row, main_after <= 2000 && late_after <= 2000,
              "serving %lld ms (running) and %lld ms (started meanwhile) after cluster_state:ok",
              main_after, late_after);
    snprintf(row->note + strlen(row->note), sizeof row->note - strlen(row->note),
             "%sserving %lld ms (running proxy), %lld ms (started meanwhile) after "
             "cluster_state:ok; nodes without persistence; %d stale import marks cleared",
             row->note[0] ? "; " : "", main_after, late_after, stale);
}

/* ---------- clients blocked on a master that fails over or dies ---------- */

enum blocked_fault { BLOCKED_FAILOVER, BLOCKED_KILL, BLOCKED_STOP };

struct blocker {
    struct chaos *ch;
    pthread_t thread;
    const char *what;           /* "BLPOP", "XREADGROUP", "SSUBSCRIBE" */
    char key[64];
    volatile int stop;
    long long answered_ms;      /* when its command came back (0: not yet) */
    char answer[160];
    long long last_message;     /* SSUBSCRIBE: the last message number read */
    long long last_message_ms;
    long long heard;            /* SSUBSCRIBE: messages read */
    int fd;                     /* its socket: shut down to end the subscriber */
};

/* A key of the form chaos:blocked:{N} whose slot master `port` serves. */
static void key_on(const struct cl_view *v, int port, const char *what, char *out, size_t size)
{
    for (int n = 0;; n++) {
        snprintf(out, size, "chaos:blocked:%s:{%d}", what, n);
        if (v->slot_port[key_slot(out, strlen(out))] == port)
            return;
    }
}

static void blocker_note(struct blocker *b, const redisReply *r, const redisContext *c)
{
    b->answered_ms = now_ms();
    snprintf(b->answer, sizeof b->answer, "%s",
             !r ? (c->errstr[0] ? c->errstr : "connection lost")
             : r->type == REDIS_REPLY_ERROR ? r->str
             : r->type == REDIS_REPLY_NIL ? "nil" : "a value");
}

static void *blocker_main(void *arg)
{
    struct blocker *b = arg;
    redisContext *c = cl_connect(b->ch->proxy.port, 40000);
    redisReply *r = NULL;
    if (!c) {
        snprintf(b->answer, sizeof b->answer, "cannot connect to the proxy");
        b->answered_ms = now_ms();
        return NULL;
    }
    b->fd = c->fd;
    if (strcmp(b->what, "BLPOP") == 0) {
        r = redisCommand(c, "BLPOP %s 0", b->key);
        blocker_note(b, r, c);
    } else if (strcmp(b->what, "XREADGROUP") == 0) {
        r = redisCommand(c, "XREADGROUP GROUP g c BLOCK 0 STREAMS %s >", b->key);
        blocker_note(b, r, c);
    } else {
        r = redisCommand(c, "SSUBSCRIBE %s", b->key);
        while (r && !b->stop) {
            if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
                r->element[2]->type == REDIS_REPLY_STRING) {
                long long n = strtoll(r->element[2]->str, NULL, 10);
                if (n > b->last_message)    /* a number sent again after a lost ack: once */
                    b->heard++;
                b->last_message = n > b->last_message ? n : b->last_message;
                b->last_message_ms = now_ms();
            }
            freeReplyObject(r);
            r = NULL;
            void *next = NULL;
            if (redisGetReply(c, &next) == REDIS_OK)
                r = next;
        }
        if (!b->stop)
            blocker_note(b, r, c);
    }
    freeReplyObject(r);
    redisFree(c);
    return NULL;
}

struct publisher {
    struct chaos *ch;
    pthread_t thread;
    const char *channel;
    volatile int stop;
    long long sent;             /* the last number SPUBLISH acked */
};

static void *publisher_main(void *arg)
{
    struct publisher *p = arg;
    redisContext *c = NULL;
    for (long long n = 1; !p->stop; sleep_ms(20)) {
        if (!c && !(c = cl_connect(p->ch->proxy.port, 5000)))
            continue;
        redisReply *r = redisCommand(c, "SPUBLISH %s %lld", p->channel, n);
        if (!r) {
            redisFree(c);
            c = NULL;
            continue;
        }
        if (r->type == REDIS_REPLY_INTEGER)
            p->sent = n++;
        freeReplyObject(r);
    }
    redisFree(c);
    return NULL;
}

/* Does the fault; returns when the node is whole again (for a stopped one:
 * when it is sent SIGCONT). *seen: when the fault can first be seen by the
 * proxy (the replica promoted by a failover, the kill, the stop). */
static long long blocked_fault(struct chaos *ch, const struct cl_master *m, enum blocked_fault f,
                               long long *seen)
{
    pid_t pid = cl_pid(ch, m->port);
    *seen = now_ms();
    if (f == BLOCKED_FAILOVER) {
        freeReplyObject(cl_cmd(m->replica, "CLUSTER FAILOVER"));
        wait_master(m->replica, 20000, "failover");
        *seen = now_ms();
    } else if (f == BLOCKED_KILL) {
        kill(pid, SIGKILL);
        wait_master(m->replica, 30000, "kill -9");
        while (kill(pid, 0) == 0)
            sleep_ms(20);
        cl_restart(ch, m->port);
    } else {
        kill(pid, SIGSTOP);
        sleep_ms(10000);
        kill(pid, SIGCONT);
    }
    return now_ms();
}

/* arg: the enum blocked_fault */
static void blocked_run(struct chaos *ch, struct fault_row *row, long arg)
{
    enum blocked_fault f = (enum blocked_fault)arg;
    static const char *const whats[] = { "BLPOP", "XREADGROUP", "SSUBSCRIBE" };
    struct blocker b[3];
    struct publisher pub = { .ch = ch };
    struct cl_view v;
    struct cl_master m;
    master_at(ch, 1, &m);
    if (cl_view(ch, &v) < 0)
        die("cannot read the slot map");
    memset(b, 0, sizeof b);
    for (int i = 0; i < 3; i++) {
        b[i].ch = ch;
        b[i].what = whats[i];
        key_on(&v, m.port, whats[i], b[i].key, sizeof b[i].key);
    }
    freeReplyObject(cl_cmd(m.port, "DEL %s", b[1].key));
    freeReplyObject(cl_cmd(m.port, "XGROUP CREATE %s g $ MKSTREAM", b[1].key));
    pub.channel = b[2].key;
    for (int i = 0; i < 3; i++)
        pthread_create(&b[i].thread, NULL, blocker_main, &b[i]);
    pthread_create(&pub.thread, NULL, publisher_main, &pub);
    sleep_ms(1500);
    long long fault = now_ms(), seen;
    long long healed = blocked_fault(ch, &m, f, &seen);
    /* a blocked command comes back within node-timeout-ms (and a second)
     * of the moment the fault can be seen */
    long long bound = CHAOS_PROXY_TIMEOUT + 1000;
    long long give_up = now_ms() + 30000;
    while ((!b[0].answered_ms || !b[1].answered_ms) && now_ms() < give_up)
        sleep_ms(50);
    /* the subscriber hears what is published once the cluster is whole */
    cl_wait_healthy(ch, 60000, "a blocked client's master's fault");
    long long whole = now_ms(), sent_then = pub.sent;
    while (b[2].last_message <= sent_then && !b[2].answered_ms && now_ms() < whole + 10000)
        sleep_ms(50);
    pub.stop = 1;
    pthread_join(pub.thread, NULL);
    /* what the last acknowledged SPUBLISH sent is on its way */
    for (long long end = now_ms() + 2000; b[2].last_message < pub.sent && !b[2].answered_ms &&
         now_ms() < end;)
        sleep_ms(20);
    b[2].stop = 1;
    shutdown(b[2].fd, SHUT_RDWR);
    row->reps = 1;
    for (int i = 0; i < 2; i++) {
        row->r.ops++;
        if (!b[i].answered_ms) {
            row->r.failed++;
            check(row, 0, "%s did not come back in %lld s", whats[i], (now_ms() - fault) / 1000);
            pthread_cancel(b[i].thread);
            pthread_join(b[i].thread, NULL);
            continue;
        }
        pthread_join(b[i].thread, NULL);
        long long took = b[i].answered_ms - seen;
        took = took < 0 ? 0 : took;
        row->r.ok++;
        if (took > row->r.recovery_ms)
            row->r.recovery_ms = took;
        if (!ch->short_form)
            check(row, took <= bound, "%s came back %lld ms after the fault", whats[i], took);
        /* not a timing: a stopped node cannot have answered it */
        if (f == BLOCKED_STOP)
            check(row, b[i].answered_ms < healed, "%s came back only once the node did",
                  whats[i]);
        snprintf(row->note + strlen(row->note), sizeof row->note - strlen(row->note),
                 "%s%s after %lld ms: %.40s", row->note[0] ? "; " : "", whats[i], took,
                 b[i].answer);
    }
    pthread_join(b[2].thread, NULL);
    row->r.ops++;
    if (b[2].last_message > sent_then) {
        row->r.ok++;
    } else if (b[2].answered_ms) {
        row->r.unknown++;       /* told: its connection ended */
    } else {
        row->r.failed++;
        check(row, 0, "the subscriber heard nothing published after the fault");
    }
    /* pub/sub is at most once: what was published while the subscriber's
     * shard moved is lost, and counted here, never hidden */
    check(row, b[2].heard <= pub.sent, "the subscriber heard %lld messages of %lld published",
          b[2].heard, pub.sent);
    char heard[120];
    snprintf(heard, sizeof heard, "SSUBSCRIBE heard %lld of %lld published (%lld lost); ",
             b[2].heard, pub.sent, pub.sent - b[2].heard);
    size_t hl = strlen(heard), nl = strlen(row->note);
    if (hl + nl < sizeof row->note) {       /* first: the notes are cut in the table */
        memmove(row->note + hl, row->note, nl + 1);
        memcpy(row->note, heard, hl);
    }
}

static const struct fault faults[] = {
    { "failover", fault_failover, 0 },
    { "kill", kill_run, KILL_PLAIN },
    { "kill-wait", kill_run, KILL_WAIT },
    { "kill-acks", kill_run, KILL_ACKS },
    { "client-kill", fault_client_kill, 0 },
    { "sigstop-1.5s", stop_run, 1500 },
    { "sigstop-10s", stop_run, 10000 },
    { "reshard", fault_reshard, 0 },
    { "net-latency", net_run, NET_LATENCY },
    { "net-bandwidth", net_run, NET_BANDWIDTH },
    { "net-reset", net_run, NET_RESET },
    { "net-blackhole", net_run, NET_BLACKHOLE },
    { "net-halfclose", net_run, NET_HALFCLOSE },
    { "net-unreachable", net_run, NET_UNREACHABLE },
    { "gone-client", fault_gone_client, 0 },
    { "restart-all", fault_restart_all, 0 },
    { "blocked-failover", blocked_run, BLOCKED_FAILOVER },
    { "blocked-kill", blocked_run, BLOCKED_KILL },
    { "blocked-sigstop", blocked_run, BLOCKED_STOP },
};

static void print_table(const struct fault_row *rows, int n)
{
    printf("%-16s %4s %8s %8s %6s %7s %5s %5s %9s %9s  %s\n", "fault", "reps", "ops", "ok",
           "failed", "unknown", "lost", "dup", "errors_ms", "recovery", "result");
    for (int i = 0; i < n; i++) {
        const struct wl_result *r = &rows[i].r;
        printf("%-16s %4d %8ld %8ld %6ld %7ld %5ld %5ld %9lld %9lld  %s%s%s\n", rows[i].name,
               rows[i].reps, r->ops, r->ok, r->failed, r->unknown, r->lost, r->duplicated,
               r->longest_errors_ms, r->recovery_ms, rows[i].passed ? "ok" : "FAILED",
               rows[i].note[0] ? ": " : "", rows[i].note);
    }
    fflush(stdout);
}

int faults_run(struct chaos *ch, const char *const *names, int nnames)
{
    struct fault_row rows[sizeof faults / sizeof faults[0]];
    int n = 0, failed = 0;
    for (size_t f = 0; f < sizeof faults / sizeof faults[0]; f++) {
        int wanted = nnames == 0;
        for (int i = 0; i < nnames; i++)
            wanted |= strcmp(names[i], faults[f].name) == 0;
        if (!wanted)
            continue;
        struct fault_row *row = &rows[n++];
        memset(row, 0, sizeof *row);
        snprintf(row->name, sizeof row->name, "%s", faults[f].name);
        row->passed = 1;
        cl_wait_healthy(ch, 60000, "the last fault");
        long long t = now_ms();
        say("%s ...", faults[f].name);
        faults[f].run(ch, row, faults[f].arg);
        say("%s: %s in %lld s %s", faults[f].name, row->passed ? "ok" : "FAILED",
            (now_ms() - t) / 1000, row->note);
        failed += !row->passed;
    }
    for (int i = 0; i < nnames; i++) {
        int known = 0;
        for (size_t f = 0; f < sizeof faults / sizeof faults[0]; f++)
            known |= strcmp(names[i], faults[f].name) == 0;
        if (!known)
            die("no fault named '%s'", names[i]);
    }
    print_table(rows, n);
    return failed;
}
