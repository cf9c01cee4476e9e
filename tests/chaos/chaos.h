/*
 * chaos: the fault suite (make chaos; make test runs its short form).
 *
 * One run starts its own 3-master + 3-replica Redis Cluster
 * (scripts/cluster.sh, cluster-node-timeout 2000 ms) and a proxy in front of
 * it, then, for each fault, drives the verifying workload (workload.c)
 * through the proxy while the fault (faults.c) is done to the cluster
 * (cluster.c), and checks what the workload recorded against what the
 * nodes hold. Everything it started is stopped by PID and its folder
 * removed, whatever happens (chaos_cleanup); with CHAOS_KEEP=DIR set, its
 * logs (the proxies', the cluster's start) are copied into DIR first.
 */
#ifndef TAGPROXY_CHAOS_H
#define TAGPROXY_CHAOS_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#define CHAOS_NODES          6
#define CHAOS_MASTERS        3
#define CHAOS_NODE_TIMEOUT   2000   /* the cluster's cluster-node-timeout */
#define CHAOS_PROXY_TIMEOUT  2000   /* the proxy's node-timeout-ms */

/* ---------- cluster.c: the run's folder, cluster and proxy ---------- */

struct chaos_proxy {
    pid_t pid;
    int port, admin_port;
    char log[400];
    const char *conf;           /* its config file (SIGHUP reads it again); NULL: none */
};

#define CHAOS_PROXIES 4

struct chaos {
    char dir[256];              /* the run's folder */
    char cluster_dir[300];
    int base;                   /* the first node's port */
    struct chaos_proxy proxy;   /* the one the faults' workloads go through */
    struct chaos_proxy *extra[CHAOS_PROXIES];  /* others a fault runs, stopped
                                                * by chaos_cleanup if left */
    int short_form;             /* make test's: one repetition, a smaller load */
};

struct cl_master {
    int port;
    char id[48];
    int replica;                /* its replica's port, 0 if none */
    int nslots;
};

struct cl_view {
    int nmasters;
    struct cl_master m[CHAOS_NODES];
    int slot_port[16384];       /* the master serving each slot */
};

long long now_ms(void);
void sleep_ms(long ms);
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void chaos_setup(struct chaos *ch);
void chaos_cleanup(void);

redisContext *cl_connect(int port, int timeout_ms);
/* One command on a new connection to 127.0.0.1:port; NULL when none came. */
redisReply *cl_cmd(int port, const char *fmt, ...);
int cl_view(struct chaos *ch, struct cl_view *v);
/* Every node answers, says cluster_state:ok, sees 3 masters with a replica
 * each and no failure flag, and every replica's link is up. */
int cl_healthy(struct chaos *ch);
void cl_wait_healthy(struct chaos *ch, long timeout_ms, const char *after);
/* A node restarted from its nodes.conf can come back importing slots that
 * moved on long before (seen after redis-cli reshards and rebalances): such a node
 * ignores every later change of those slots' owner, so a failover leaves it
 * with slots no master serves. Clears every import mark, as redis-cli
 * --cluster fix would (CLUSTER SETSLOT slot STABLE): call only while no
 * slot is being moved. Returns how many. */
int cl_clear_imports(struct chaos *ch);
pid_t cl_pid(struct chaos *ch, int port);
void cl_restart(struct chaos *ch, int port);
/* redis-cli --cluster ARGS... against the first node, its output in the
 * run's folder; its exit status. */
int cl_cli(struct chaos *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
long long cl_info_field(int port, const char *section, const char *name);
int cl_role_is_master(int port);

unsigned key_slot(const char *key, size_t len);

/* Runs build/tagproxy as p (extra: more arguments, NULL-terminated, may be
 * NULL); waits until it answers PING if wait, else returns at once. */
void proxy_spawn(struct chaos *ch, struct chaos_proxy *p, const char *const *extra, int wait);
void proxy_kill(struct chaos *ch, struct chaos_proxy *p);
int proxy_answers(const struct chaos_proxy *p);
/* GET path on p's admin endpoint: the HTTP status (0: no answer), the body
 * in body. */
int proxy_http(const struct chaos_proxy *p, const char *path, char *body, size_t size);

/* ---------- relay.c: a fault relay between the proxy and one node ---------- */

enum relay_mode {
    RELAY_PASS,
    RELAY_LATENCY,              /* arg: ms added to each reply */
    RELAY_BANDWIDTH,            /* arg: bytes per second, each direction */
    RELAY_RESET,                /* arg: a connection is reset after this many
                                 * bytes from the node */
    RELAY_BLACKHOLE,            /* whatever is read is dropped */
    RELAY_HALFCLOSE,            /* the proxy reads EOF; the node's side stays */
    RELAY_UNREACHABLE,          /* open connections reset, new ones never
                                 * complete (a host that is gone) */
};

struct relay;
struct relay *relay_start(int target_port);
int relay_port(const struct relay *r);
void relay_set(struct relay *r, enum relay_mode mode, long arg);
void relay_stop(struct relay *r);

/* ---------- workload.c: the verifying workload ---------- */

enum op_kind { OP_RPUSH, OP_EVAL, OP_MULTI, OP_INCR };
enum op_outcome { OUT_PENDING, OUT_OK, OUT_FAILED, OUT_UNKNOWN };

struct op {
    uint16_t key;               /* list or counter number */
    uint8_t kind;
    uint8_t outcome;
    uint8_t shard;              /* the master (by slot range at the start) */
    int32_t start_ms;           /* since the workload started */
    int32_t latency_ms;
};

struct wl_opts {
    int clients, readers;
    int lists, counters;
    int depth;                  /* commands written before reading their replies */
    int wait_replica;           /* WAIT 1 0 after each write */
    int port;                   /* the proxy's; 0: the chaos run's */
    const char *ns;             /* key namespace: one per fault */
};

struct wl_client {
    struct workload *wl;
    int id;
    pthread_t thread;
    redisContext *c;
    uint64_t rng;
    struct op *ops;
    size_t nops, cap;
    char *err_sample;           /* the first error seen, for the report */
    long dropped;               /* ops left without a reply: the connection to the proxy broke */
};

struct wl_reader {
    struct workload *wl;
    pthread_t thread;
    long long *seen;            /* highest value or length per key */
    uint64_t *prefix;           /* per list: a hash of its first seen[i] elements */
    long reads, backwards;
    long long first_back_ms;
};

/* A fault's repetition, as the workload's clock saw it. */
struct wl_mark {
    int32_t fault_ms, healed_ms;  /* the fault done; the cluster whole again */
};

#define WL_MARKS_MAX 32

struct workload {
    struct wl_opts o;
    struct chaos *ch;
    int shard_of_slot[16384];
    int shard_port[CHAOS_MASTERS];
    long long t0;
    volatile int stop;
    struct wl_client *clients;
    struct wl_reader *readers;
    int nmarks;
    struct wl_mark marks[WL_MARKS_MAX];
};

struct wl_result {
    long ops, ok, failed, unknown;
    long lost, duplicated, false_failed, out_of_order, backwards;
    long counters_low, counters_high;   /* counters below acked / above acked+unknown */
    long long longest_errors_ms;        /* first to last error of one repetition */
    long long recovery_ms;              /* a fault to the last error after it */
    long long max_latency_ms;
    long errors_outside;                /* errors outside fault..healed+2 s */
    long dropped;                       /* ops the proxy never answered (unknown) */
    long hung;                          /* replies slower than the client timeout */
    char err_sample[200];
};

void wl_start(struct workload *wl, struct chaos *ch, const struct wl_opts *o);
int32_t wl_clock(const struct workload *wl);
/* A repetition's fault is done now; wl_mark_healed when the cluster is whole. */
int wl_mark_fault(struct workload *wl);
void wl_mark_healed(struct workload *wl, int mark);
void wl_stop(struct workload *wl);
/* The name of the workload's list i (0 .. lists - 1). */
void wl_list_key(const struct workload *wl, int i, char *out, size_t size);
/* Reads every list and counter from the masters and checks the record. */
void wl_verify(struct workload *wl, struct wl_result *res);
/* Largest latency of ops to shards other than `shard` started in [from, to). */
long long wl_max_latency(const struct workload *wl, int not_shard, int32_t from, int32_t to);
void wl_free(struct workload *wl);

/* ---------- faults.c ---------- */

struct fault_row {
    char name[40];
    int reps;
    struct wl_result r;
    char note[200];
    int passed;
};

int faults_run(struct chaos *ch, const char *const *names, int nnames);

#endif
