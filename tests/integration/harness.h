/*
 * harness.h: shared helpers of the integration tests (tests/integration/).
 *
 * Each test_*.c is one Check program against a running cluster and proxy,
 * both started by scripts/test.sh, which passes them in the environment:
 *
 *   TAGPROXY_TEST_PROXY  host:port of the proxy under test
 *   TAGPROXY_TEST_NODES  "host:port host:port ..." every node of the cluster
 *   TAGPROXY_TEST_BIN    the proxy binary, to start extra instances
 *   TAGPROXY_TEST_DIR    the run's folder: "pids" ("PORT PID" per node), logs
 *   TAGPROXY_TEST_SERVER the server binary the cluster runs (the Valkey
 *                        pass: valkey-server; unset: redis-server)
 *
 * What the tests know about the cluster they learn from the nodes directly
 * (CLUSTER SLOTS), never through the proxy, so that a proxy bug cannot hide
 * itself. Key slots are computed here with an independent CRC16, checked
 * against a node's CLUSTER KEYSLOT by test_routing.
 *
 * The helpers are compiled once (harness.c) and linked into every program.
 * Assertions are macros so that a failure names
 * the test's line. Check runs each test in a forked child and kills the
 * child's process group when it ends: extra proxies started by a test die
 * with it, whatever happened.
 */
#ifndef TAGPROXY_TEST_HARNESS_H
#define TAGPROXY_TEST_HARNESS_H

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define H_UNUSED __attribute__((unused))

#define H_SLOTS      16384
#define H_MAX_NODES  16
#define H_MAX_RANGES 256
#define H_IO_TIMEOUT_S 10   /* any reply slower than this counts as a hang */

struct h_node {
    char host[64];
    int  port;
};

struct h_range {
    int start, end;   /* inclusive */
    int master;       /* index into h_topo.masters */
};

struct h_topo {
    int nranges;
    struct h_range r[H_MAX_RANGES];
    int nmasters;
    struct h_node masters[H_MAX_NODES];
    char master_id[H_MAX_NODES][48];
};

/* snprintf that fails the test rather than truncate. */
#define H_FMT(buf, size, ...) \
    ck_assert_msg(snprintf((buf), (size), __VA_ARGS__) < (int)(size), "'%s' truncated", #buf)

/* ---------- time, environment, addresses ---------- */

long long h_now_ms(void);

void h_sleep_ms(long ms);

const char *h_env(const char *name);

/* "host:port" (up to a blank or the end) into n; 0 or -1. */
int h_parse_addr(const char *s, struct h_node *n);

struct h_node h_proxy_addr(void);

/* Every node of TAGPROXY_TEST_NODES, in order; returns how many. */
int h_nodes(struct h_node *out, int max);

/* "host:port" of the first node: the seed extra proxies are given. */
void h_seed(char *buf, size_t size);

/* A run-unique key prefix, so runs never see each other's keys. */
const char *h_prefix(void);

/* ---------- hiredis connections and replies ---------- */

redisContext *h_connect_try(const char *host, int port);

redisContext *h_connect(const char *host, int port);

redisContext *h_connect_node(const struct h_node *n);

redisContext *h_connect_proxy(void);

/* A command; the reply, never NULL (an I/O error or timeout fails the test). */
redisReply *h_cmd(redisContext *c, const char *fmt, ...);

redisReply *h_cmd_argv(redisContext *c, int argc, const char **argv);

/* Writes the commands appended to c (redisAppendCommand), reading nothing. */
void h_flush(redisContext *c);

redisReply *h_get_reply(redisContext *c);

const char *h_type_name(int type);

/* A reply in a few words, for failure messages (static buffer). */
const char *h_show(const redisReply *r);

#define H_EXPECT_TYPE(r, t) \
    ck_assert_msg((r)->type == (t), "expected %s, got %s", h_type_name(t), h_show(r))

#define H_EXPECT_STATUS(r, s) do { \
    H_EXPECT_TYPE(r, REDIS_REPLY_STATUS); \
    ck_assert_msg(strcmp((r)->str, (s)) == 0, "expected status '%s', got %s", (s), h_show(r)); \
} while (0)

#define H_EXPECT_BULK(r, s) do { \
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING); \
    ck_assert_msg((r)->len == strlen(s) && memcmp((r)->str, (s), (r)->len) == 0, \
                  "expected bulk '%s', got %s", (s), h_show(r)); \
} while (0)

#define H_EXPECT_INT(r, n) do { \
    H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER); \
    ck_assert_msg((r)->integer == (long long)(n), "expected integer %lld, got %s", \
                  (long long)(n), h_show(r)); \
} while (0)

#define H_EXPECT_NIL(r) H_EXPECT_TYPE(r, REDIS_REPLY_NIL)

#define H_EXPECT_ERR(r, prefix) do { \
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR); \
    ck_assert_msg(strncmp((r)->str, (prefix), strlen(prefix)) == 0, \
                  "expected error '%s...', got %s", (prefix), h_show(r)); \
} while (0)

/* Send a command and expect the status reply `status` ("OK", "QUEUED"). */
#define H_STATUS(c, status, ...) do { \
    redisReply *h_r_ = h_cmd((c), __VA_ARGS__); \
    H_EXPECT_STATUS(h_r_, (status)); \
    freeReplyObject(h_r_); \
} while (0)

#define H_OK(c, ...) H_STATUS((c), "OK", __VA_ARGS__)

/* Send a command and expect an error reply starting with prefix. */
#define H_ERR(c, prefix, ...) do { \
    redisReply *h_r_ = h_cmd((c), __VA_ARGS__); \
    H_EXPECT_ERR(h_r_, (prefix)); \
    freeReplyObject(h_r_); \
} while (0)

/* The number in INFO's line "name:N" on c (the proxy's or a node's). */
long long h_info_field(redisContext *c, const char *name);

/* The replica of master m (the first its INFO replication lists). */
struct h_node h_replica_of(const struct h_node *m);

/* The connection's CLIENT ID (the proxy's or a node's). */
long long h_client_id(redisContext *c);

/* Moves slot, which holds no key, from master from to master to, as
 * redis-cli does it (IMPORTING, MIGRATING, then NODE on every master). */
void h_move_empty_slot(const struct h_topo *t, int slot, int from, int to);

/* A field of INFO clients ("blocked_clients") summed over t's masters,
 * each asked on a connection of its own. */
long long h_masters_info_sum(const struct h_topo *t, const char *field);

/*
 * Polls CLIENT LIST on at (the proxy or a server, on a connection of its
 * own) until the line of the client connected on fd (" addr=" fd's local
 * address, or PATH:0 on a Unix socket, as Redis writes it) is there and
 * holds also (NULL: the line alone): a state to wait for, where a fixed
 * sleep would guess. Fails the test after ms, with what and the list.
 */
void h_wait_client_listed(const struct h_node *at, int fd, const char *also, long ms,
                          const char *what);

/* ---------- slots and topology ---------- */

/* CRC16-CCITT (XMODEM: poly 0x1021, init 0), as Redis Cluster specifies it.
 * Bitwise on purpose: independent of the proxy's table-driven code. */
unsigned h_crc16(const char *s, size_t len);

/* The slot of a key: its hash tag's ("{...}", first '{' then the first '}'
 * after it, non-empty) or else the whole key's CRC16, mod 16384. */
int h_slot_len(const char *key, size_t len);

int h_slot(const char *key);

int h_topo_add_master(struct h_topo *t, const char *host, int port, const char *id);

/* The slot map from CLUSTER SLOTS on the first node that answers it. */
void h_topo_load(struct h_topo *t);

/* Index (into t->masters) of the master owning slot, or -1. */
int h_topo_owner(const struct h_topo *t, int slot);

/* Writes into buf a key "PREFIX:N" that lands on master m, the nth such. */
void h_key_on_master(const struct h_topo *t, int m, const char *prefix,
                     int nth, char *buf, size_t size);

/* Writes into buf a hash tag (no braces) whose slot is slot. */
void h_tag_for_slot(int slot, char *buf, size_t size);

/* The master node owning key's slot, connected (caller frees). */
redisContext *h_connect_owner(const struct h_topo *t, const char *key);

/* PID of the node on port, from $TAGPROXY_TEST_DIR/pids ("PORT PID" lines). */
pid_t h_node_pid(int port);

/* ---------- extra proxy instances ---------- */

struct h_proxy {
    pid_t pid;
    struct h_node addr;
    char log[512];
};

/* A free TCP port on 127.0.0.1 (free now; the kernel picks it). */
int h_free_port(void);

/* Runs a shell command; its output (stdout and stderr) in out; exit status. */
int h_shell(char *out, size_t size, const char *fmt, ...);

/* Runs `tagproxy ARGS` (the binary under test; ARGS shell words); its
 * stdout and stderr in out; the exit status. */
int h_tagproxy(char *out, size_t size, const char *fmt, ...);

int h_port_free(int port);

/* A base port whose n ports and their cluster bus ports (+10000) are free. */
int h_cluster_base(int n);

/*
 * The server binary the suite's cluster runs, and the tests' own clusters
 * and standalone servers to compare with: TAGPROXY_TEST_SERVER
 * (valkey-server for scripts/test.sh's Valkey pass), redis-server unless set.
 */
const char *h_server(void);

/* Whether the suite runs on Valkey (whose replies differ from Redis 7.0's
 * in places a test must know). */
int h_server_is_valkey(void);

/*
 * A cluster of the test's own: 3 masters, no replicas, started with
 * scripts/cluster.sh on free ports, in TAGPROXY_TEST_DIR/NAME-<base>
 * (written to dir), with extra cluster.sh options (may be ""). Its first
 * port, or the test fails with cluster.sh's words. h_cluster_stop(dir)
 * stops it: call it from an unchecked fixture's teardown, which runs
 * whatever the tests did.
 */
int h_cluster_start(char *dir, size_t size, const char *name, const char *extra);

void h_cluster_stop(const char *dir);

/* PING on a new connection to host:port: the reply (caller frees), or NULL
 * when there is none (no connection, an I/O error or a timeout). */
redisReply *h_ping_once(const char *host, int port);

/* True once host:port answers PING with PONG. */
int h_pings(const char *host, int port);

/* The last lines of a file on stderr (a failed proxy's log). */
void h_print_tail(const char *path, long bytes);

/* p on 127.0.0.1 and a free port, nothing running yet; the caller names p->log. */
void h_proxy_place(struct h_proxy *p);

/*
 * Runs argv (NULL-terminated) as p, stdout and stderr into p->log; does not
 * wait. argv[0] is looked up in PATH if search_path, else taken as a path.
 * The child gets deathsig should the test process die (PR_SET_PDEATHSIG).
 */
void h_spawn(struct h_proxy *p, const char *const *argv, int deathsig,
             int search_path);

/*
 * Waits until ready(host, port) says p serves. Fails the test, with the tail
 * of p->log, if p exits first (reaped) or timeout_ms passes (p is killed and
 * reaped); either way p->pid is 0 then. what names p in the message.
 */
void h_spawn_wait(struct h_proxy *p, int (*ready)(const char *, int),
                  long timeout_ms, const char *what);

/*
 * Runs bin --listen <p->addr> [--cluster seed] [pre...] [args...] as p
 * (h_spawn, bin a path); seed may be NULL, pre and args are NULL-terminated
 * and may be NULL. Does not wait.
 */
void h_proxy_launch(struct h_proxy *p, const char *bin, const char *seed,
                    const char *const *pre, const char *const *args, int deathsig);

/*
 * Start TAGPROXY_TEST_BIN --listen 127.0.0.1:<free port> --cluster <seed>
 * [args...] (args NULL-terminated, may be NULL), its output in
 * $TAGPROXY_TEST_DIR/proxy-<port>.log, and wait until it answers PING.
 * It dies with the test (Check kills the test's process group; and
 * PR_SET_PDEATHSIG should the test die otherwise).
 */
/* True once host:port answers PING with anything (NOAUTH is an answer):
 * for h_spawn_wait on servers that want a password. */
int h_answers(const char *host, int port);

/* h_proxy_place, with the log named TAGPROXY_TEST_DIR/WHAT-PORT.log. */
void h_place_named(struct h_proxy *p, const char *what);

void h_proxy_start(struct h_proxy *p, const char *const *args);

#define H_LAYOUT_PREFIXES_MAX 4
#define H_LAYOUT_PREFIX_LEN 64

/* An extra proxy serving the rules file `rules` for n run-unique layout
 * prefixes TAG<pid><ms> (one segment, no ':'), one for each of tags[0..n),
 * written to prefixes[0..n). */
void h_layout_proxy_start_rules(struct h_proxy *p, const char *rules,
                                const char *const *tags, size_t n,
                                char (*prefixes)[H_LAYOUT_PREFIX_LEN]);

/* An extra proxy serving conf/layouts/botmesh-v1.rules for a run-unique
 * layout prefix TAG<pid><ms> (one segment, no ':'), written to prefix. */
void h_layout_proxy_start(struct h_proxy *p, const char *tag, char *prefix,
                          size_t size);

/*
 * A standalone server of the suite's build (h_server) to compare the proxy
 * with, as p: on a free port, no persistence, its log
 * TAGPROXY_TEST_DIR/NAME-PORT.log, requirepass pass unless NULL; waited for
 * until it answers (NOAUTH is an answer).
 */
void h_ref_start(struct h_proxy *p, const char *name, const char *pass);

/*
 * Runs the proxy (--cluster seed, args NULL-terminated) and expects it to
 * exit 1 before serving, within 20 s; its log (named WHAT-PORT.log) into
 * log.
 */
void h_proxy_start_fails(const char *what, const char *seed,
                         const char *const *args, char *log, size_t size);

redisContext *h_connect_extra(const struct h_proxy *p);

/* SIGTERM, then SIGKILL after 5 s; reaps it. */
void h_proxy_stop(struct h_proxy *p);

/* ---------- stopping a node (SIGSTOP) safely ---------- */

/* 'T' while stopped, from /proc/PID/stat. */
char h_proc_state(pid_t pid);

struct h_guard {
    pid_t guard_pid;
    pid_t node_pid;
    int fd;          /* closing it makes the guard send SIGCONT */
};

/*
 * SIGSTOP node_pid (a redis-server of the test cluster) and wait until it is
 * stopped. A guard process, in its own session so that Check's kill of the
 * test's process group spares it, sends SIGCONT when g->fd closes (h_thaw,
 * or the test process ends for any reason) or after deadline_ms: keep that
 * well under the cluster's cluster-node-timeout, so no failover happens.
 */
void h_freeze(struct h_guard *g, pid_t node_pid, int deadline_ms);

/* SIGCONT now (and end the guard). */
void h_thaw(struct h_guard *g);

/* SIGCONT to every node of $TAGPROXY_TEST_DIR/pids still stopped: for
 * tcase_add_unchecked_fixture (Check's parent process, after the tests,
 * whatever their outcome). */
void h_thaw_all_nodes(void);

/* ---------- raw sockets, for bytes no client library would send ---------- */

int h_raw_connect(const struct h_node *n);

void h_raw_send(int fd, const void *data, size_t len);

void h_raw_sends(int fd, const char *s);

/*
 * Read into buf (NUL-terminated, at most size-1 bytes) until the peer
 * closes, until buf holds `until` (if not NULL), or until timeout_ms passes
 * with nothing new. Returns the byte count; *closed (if not NULL) says
 * whether the peer closed (EOF or reset).
 */
size_t h_raw_recv(int fd, char *buf, size_t size, const char *until,
                  int timeout_ms, int *closed);

/* Length of the one complete RESP2 reply at the start of buf, 0 if not yet. */
size_t h_resp_complete(const char *buf, size_t len);

/* ---------- seeded random inputs, replayable ---------- */

/* xorshift64: the same seed, the same inputs. s must not be 0. */
uint64_t h_rng_next(uint64_t *s);

unsigned h_rnd(uint64_t *s, unsigned n);

#define H_PICK(s, arr) ((arr)[h_rnd((s), sizeof(arr) / sizeof((arr)[0]))])

/* A run's seed: the environment variable env when it is set (a replay),
 * else from the clock and the pid; never 0. Printed to stderr with how to
 * replay it, as what names the run. */
uint64_t h_run_seed(const char *env, const char *what);

/* ---------- RESP2 replies, parsed strictly ---------- */

struct h_rv {
    char type;                  /* + - : $ *, and RESP3's _ # , ( = ! ~ % > */
    long long num;              /* ':' the value; '$' '*' the length, -1 for null;
                                 * '~' '>' the length, '%' twice its pair count */
    const char *str;            /* '+' '-' '$', the line types and '=' '!': the bytes,
                                 * not NUL-terminated */
    size_t len;
    struct h_rv *elem;          /* '*' '~' '>' '%': num elements */
};

/* RESP types framed as "<type><line>\r\n", as "<type><len>\r\n<bytes>\r\n",
 * and as a count of elements. */
#define H_RESP_LINE_TYPES  "+-_#,("
#define H_RESP_BLOB_TYPES  "$=!"
#define H_RESP_AGGR_TYPES  "*~>%"

/* Parses the decimal integer in s[0..len) strictly: an optional '-' and
 * 1 to 19 digits. 0, or -1. */
int h_resp_number(const char *s, size_t len, long long *out);

void h_rv_free(struct h_rv *v);

/*
 * One RESP2 or RESP3 value at buf[0..len): the bytes it takes, 0 if it is
 * not all there yet, -1 if it is malformed (attributes and streamed types,
 * which redis-server 7.0 never sends, included). With out, its tree too
 * (rv_free).
 */
long h_resp_parse(const char *buf, size_t len, struct h_rv *out);

/* v is the bulk string token (a marker the tests send with ECHO). */
int h_rv_is_token(const struct h_rv *v, const char *token);

/* Receive what fd has after the first got bytes of *buf (*cap bytes, doubled
 * when full), waiting until deadline_ms (h_now_ms). Returns the bytes read,
 * 0 at EOF, -1 on an error (errno) and -2 when the deadline passed. */
long h_recv_more(int fd, char **buf, size_t *cap, size_t got,
                 long long deadline_ms);

/* len bytes made printable for a message (CR, LF as \r, \n), at most 300
 * characters; a ring of four static buffers, for one message. */
const char *h_esc(const char *s, size_t len);

/* h_esc of a NUL-terminated string. */
const char *h_esc_str(const char *s);

/* One whole reply from fd into *buf (*cap bytes, grown as needed), within
 * 5 s, and nothing after it: its length. who sent it and what it answers
 * name the failure. */
size_t h_raw_reply(int fd, char **buf, size_t *cap, const char *who,
                   const char *what);

/* ---------- running a suite ---------- */

/* Runs s (test output as CK_VERBOSITY says, normal by default); how many
 * tests failed. */
int h_run_failed(Suite *s);

/* h_run_failed() as an exit status. */
int h_run(Suite *s);

#endif
