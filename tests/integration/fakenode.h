/*
 * fakenode.h: a scripted fake cluster node, run in threads of the test
 * process, for tests that need a node to misbehave on demand.
 *
 * A fake node listens on a free loopback port. Each accepted connection gets
 * a thread that reads RESP multibulk requests (its own small reader, not
 * hiredis) and answers them in order:
 *
 *   CLUSTER SLOTS    the reply set by fn_set_slots()
 *   AUTH, ASKING     +OK
 *   PING             +PONG
 *   GET <key>        whatever the node's script writes (fn_script)
 *   anything else    -ERR
 *
 * Like a redis-server, which runs one command at a time, a node whose
 * script sleeps or waits (fn_sleep, fn_wait_peer_close) answers nothing
 * on any connection meanwhile: a request on another connection, a PING
 * included, waits until it is done. So a slow command looks to the proxy
 * like a node that does not answer, not like one that holds one command
 * back (cluster/node.h).
 *
 * A node may have a filter (fn_filter), which sees every request first and
 * may answer it instead (a node that requires AUTH, say).
 *
 * Every request is logged (connection id + the command's words), so a test
 * can ask how often a command arrived and what came before it on the same
 * connection.
 *
 * Arguments are at most FN_MAX_ARG bytes, else the connection is closed;
 * a node with long_args set takes any length up to what fn_read_header
 * reads (about 10 MB): argv then holds the first FN_MAX_ARG bytes, lens the
 * whole length, and sums every argument's fn_sum, so that a test can check
 * a long value it never sees whole. A "trap" node only counts the connections it accepts and
 * closes them.
 *
 * The tests built on fake nodes start their own proxy in front of them
 * (fn_proxy_start) and run through fn_main, which keeps the proxies' logs and
 * prints their tails when a test fails.
 *
 * Everything is static and marked unused; include after harness.h.
 */
#ifndef TAGPROXY_TEST_FAKENODE_H
#define TAGPROXY_TEST_FAKENODE_H

#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <sys/stat.h>

#include "harness.h"

#define FN_MAX_ARGS  16
#define FN_MAX_ARG   1024
#define FN_MAX_CONNS 256
#define FN_LOG_CMD   128

struct fake_node;

/* One accepted connection; owned by its thread. */
struct fn_conn {
    struct fake_node *f;
    int fd;
    int id;                     /* 1, 2, ... in accept order */
    int prev_asking;            /* the previous request was ASKING */
    int filter_state;           /* the filter's own, 0 at accept */
    size_t start, end;          /* unread bytes in buf */
    char buf[65536];
    int argc;
    size_t lens[FN_MAX_ARGS];
    char argv[FN_MAX_ARGS][FN_MAX_ARG + 1];
    unsigned long long sums[FN_MAX_ARGS];   /* fn_sum of each whole argument */
};

/* Answers GET key on c: writes the reply with fn_write(). Returns 0 to keep
 * the connection, -1 to close it without another word. */
typedef int fn_script(struct fn_conn *c, const char *key, size_t len);

/* Sees each request (c->argc, c->argv) before the answers above: returns 1
 * when it answered (*rc: 0 to keep the connection, -1 to close it), 0 to
 * leave the request to them. */
typedef int fn_filter(struct fn_conn *c, int *rc);

struct fn_entry {
    int conn;
    char cmd[FN_LOG_CMD];       /* the words, blank-separated, cut to fit */
};

struct fn_counter {
    char key[FN_MAX_ARG + 1];
    int n;
};

struct fake_node {
    char name;                  /* 'A', 'B', 'T': for scripts and messages */
    int port;
    int listen_fd;
    int trap;
    int long_args;              /* see above; set before the proxy connects */
    fn_script *script;
    fn_filter *filter;          /* NULL: none; set before the proxy connects */
    pthread_t thread;
    int running;                /* accept thread started */

    pthread_mutex_t mu;         /* guards everything below */
    pthread_cond_t cv;
    int stop;
    int accepted;
    int live;                   /* connection threads still running */
    int busy;                   /* scripts sleeping or waiting: no answers */
    int peer_closed;            /* connections the peer closed */
    int fds[FN_MAX_CONNS];      /* live connections' sockets, -1 free */
    char slots[2048];           /* the CLUSTER SLOTS reply */
    size_t slots_len;
    struct fn_entry *log;
    int nlog, caplog;
    struct fn_counter counters[32];
    int ncounters;
};

/* ---------- writing ---------- */

/* All of len bytes, or -1 (peer gone, or the node is stopping). */
H_UNUSED static int fn_write(struct fn_conn *c, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

H_UNUSED static int fn_writes(struct fn_conn *c, const char *s)
{
    return fn_write(c, s, strlen(s));
}

/* data in writes of pseudo-random sizes from 1 byte to 64 KB, so that the
 * reader meets every kind of boundary. */
H_UNUSED static int fn_write_chunked(struct fn_conn *c, const char *data, size_t len)
{
    unsigned x = 2463534242u;
    while (len > 0) {
        size_t n;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        n = (x % 8 == 0) ? 1 + x % 7 : 1 + x % 65536;
        if (n > len)
            n = len;
        if (fn_write(c, data, n) < 0)
            return -1;
        data += n;
        len -= n;
    }
    return 0;
}

H_UNUSED static int fn_write_bulk(struct fn_conn *c, const char *s)
{
    char head[32];
    snprintf(head, sizeof(head), "$%zu\r\n", strlen(s));
    if (fn_writes(c, head) < 0 || fn_writes(c, s) < 0)
        return -1;
    return fn_writes(c, "\r\n");
}

/* ---------- state, for tests and scripts ---------- */

/* *field of f, read under f->mu. */
H_UNUSED static int fn_locked_read(struct fake_node *f, const int *field)
{
    int n;
    pthread_mutex_lock(&f->mu);
    n = *field;
    pthread_mutex_unlock(&f->mu);
    return n;
}

H_UNUSED static int fn_accepted(struct fake_node *f)
{
    return fn_locked_read(f, &f->accepted);
}

H_UNUSED static int fn_peer_closed(struct fake_node *f)
{
    return fn_locked_read(f, &f->peer_closed);
}

H_UNUSED static int fn_stopping(struct fake_node *f)
{
    return fn_locked_read(f, &f->stop);
}

/* A script starts (+1) or stops (-1) keeping the node busy (above). */
H_UNUSED static void fn_busy(struct fake_node *f, int delta)
{
    pthread_mutex_lock(&f->mu);
    f->busy += delta;
    pthread_mutex_unlock(&f->mu);
}

/* Waits until no script keeps the node busy, or the node stops. */
H_UNUSED static void fn_wait_not_busy(struct fake_node *f)
{
    while (fn_locked_read(f, &f->busy) > 0 && !fn_stopping(f))
        h_sleep_ms(2);
}

/* Waits up to ms for the peer to close c (or the node to stop): 1 if it
 * did (counted as a peer close), else 0. Bytes the peer sends meanwhile are
 * left unread. The node is busy meanwhile. */
H_UNUSED static int fn_wait_peer_close(struct fn_conn *c, long ms)
{
    long long end = h_now_ms() + ms;
    int closed = 0;

    fn_busy(c->f, 1);
    while (!closed && !fn_stopping(c->f) && h_now_ms() < end) {
        struct pollfd pfd = { c->fd, POLLRDHUP, 0 };
        if (poll(&pfd, 1, 10) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
            pthread_mutex_lock(&c->f->mu);
            c->f->peer_closed++;
            pthread_mutex_unlock(&c->f->mu);
            closed = 1;
        }
    }
    fn_busy(c->f, -1);
    return closed || fn_stopping(c->f);
}

/* Sleeps ms, cut short when the node stops; the node is busy meanwhile. */
H_UNUSED static void fn_sleep(struct fake_node *f, long ms)
{
    long long end = h_now_ms() + ms;
    fn_busy(f, 1);
    while (!fn_stopping(f) && h_now_ms() < end)
        h_sleep_ms(10);
    fn_busy(f, -1);
}

/* How many times key has been seen by fn_bump (1 the first time). */
H_UNUSED static int fn_bump(struct fake_node *f, const char *key)
{
    int n = -1;
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < f->ncounters; i++)
        if (strcmp(f->counters[i].key, key) == 0) {
            n = ++f->counters[i].n;
            break;
        }
    if (n < 0 && f->ncounters < (int)(sizeof(f->counters) / sizeof(f->counters[0]))) {
        snprintf(f->counters[f->ncounters].key, sizeof(f->counters[0].key), "%s", key);
        n = f->counters[f->ncounters++].n = 1;
    }
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* How many logged requests are exactly cmd ("GET die"). */
H_UNUSED static int fn_count(struct fake_node *f, const char *cmd)
{
    int n = 0;
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < f->nlog; i++)
        if (strcmp(f->log[i].cmd, cmd) == 0)
            n++;
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* The request logged just before the last cmd on the same connection, into
 * buf ("" if cmd is the connection's first, "(never)" if cmd never came). */
H_UNUSED static void fn_before_last(struct fake_node *f, const char *cmd, char *buf, size_t size)
{
    int last = -1;

    snprintf(buf, size, "(never)");
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < f->nlog; i++)
        if (strcmp(f->log[i].cmd, cmd) == 0)
            last = i;
    if (last >= 0) {
        snprintf(buf, size, "%s", "");
        for (int i = last - 1; i >= 0; i--)
            if (f->log[i].conn == f->log[last].conn) {
                snprintf(buf, size, "%s", f->log[i].cmd);
                break;
            }
    }
    pthread_mutex_unlock(&f->mu);
}

/* The whole log on stderr, for a failing test's message. */
H_UNUSED static void fn_dump_log(struct fake_node *f)
{
    pthread_mutex_lock(&f->mu);
    fprintf(stderr, "--- fake node %c (port %d): %d requests\n", f->name, f->port, f->nlog);
    for (int i = 0; i < f->nlog; i++)
        fprintf(stderr, "  conn %d: %s\n", f->log[i].conn, f->log[i].cmd);
    pthread_mutex_unlock(&f->mu);
}

/*
 * The CLUSTER SLOTS reply, as Redis 7.0 shapes it: one entry per range,
 * [start, end, [ip, port, id, []]], masters only. ranges holds n triples
 * (start, end, port); every node is 127.0.0.1 and its id derives from its port.
 */
H_UNUSED static void fn_set_slots(struct fake_node *f, int n, const int (*ranges)[3])
{
    char buf[sizeof(f->slots)];
    size_t len;

    len = (size_t)snprintf(buf, sizeof(buf), "*%d\r\n", n);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(len < sizeof(buf), "CLUSTER SLOTS reply too long");
        len += (size_t)snprintf(buf + len, sizeof(buf) - len,
                                "*3\r\n:%d\r\n:%d\r\n*4\r\n$9\r\n127.0.0.1\r\n:%d\r\n"
                                "$40\r\n%040d\r\n*0\r\n",
                                ranges[i][0], ranges[i][1], ranges[i][2], ranges[i][2]);
    }
    ck_assert_msg(len < sizeof(buf), "CLUSTER SLOTS reply too long");
    pthread_mutex_lock(&f->mu);
    memcpy(f->slots, buf, len);
    f->slots_len = len;
    pthread_mutex_unlock(&f->mu);
}

/* f alone owns every slot. */
H_UNUSED static void fn_own_all_slots(struct fake_node *f)
{
    const int all[1][3] = { { 0, H_SLOTS - 1, f->port } };
    fn_set_slots(f, 1, all);
}

/* ---------- the request reader ---------- */

/* More bytes into c->buf; -1 on EOF or error. */
H_UNUSED static int fn_fill(struct fn_conn *c)
{
    ssize_t n;

    if (c->start > 0) {
        memmove(c->buf, c->buf + c->start, c->end - c->start);
        c->end -= c->start;
        c->start = 0;
    }
    if (c->end == sizeof(c->buf))
        return -1;
    do
        n = recv(c->fd, c->buf + c->end, sizeof(c->buf) - c->end, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return -1;
    c->end += (size_t)n;
    return 0;
}

/* A line "<type><digits>\r\n"; its number, or -1 (also on a bad line). */
H_UNUSED static long fn_read_header(struct fn_conn *c, char type)
{
    char *crlf;
    long v = 0;

    while ((crlf = memmem(c->buf + c->start, c->end - c->start, "\r\n", 2)) == NULL)
        if (fn_fill(c) < 0)
            return -1;
    if (c->buf[c->start] != type)
        return -1;
    for (char *d = c->buf + c->start + 1; d < crlf; d++) {
        if (*d < '0' || *d > '9' || v > 1000000)
            return -1;
        v = v * 10 + (*d - '0');
    }
    c->start = (size_t)(crlf + 2 - c->buf);
    return v;
}

/* Each byte times its position (1-based, counted from offset), summed: it
 * changes when a byte is lost, altered or moved, and the sums of an
 * argument's consecutive pieces add up to the whole's. */
H_UNUSED static unsigned long long fn_sum(const void *data, size_t len, size_t offset)
{
    const unsigned char *p = data;
    unsigned long long sum = 0;

    for (size_t i = 0; i < len; i++)
        sum += (unsigned long long)(offset + i + 1) * p[i];
    return sum;
}

/* Argument i, len bytes then CRLF: the first FN_MAX_ARG into argv[i], the
 * whole into sums[i], read in pieces so that it may be longer than buf. */
H_UNUSED static int fn_read_arg(struct fn_conn *c, int i, size_t len)
{
    size_t done = 0;

    c->sums[i] = 0;
    while (done < len) {
        size_t n;
        if (c->end == c->start && fn_fill(c) < 0)
            return -1;
        n = c->end - c->start;
        if (n > len - done)
            n = len - done;
        if (done < FN_MAX_ARG)
            memcpy(c->argv[i] + done, c->buf + c->start, n < FN_MAX_ARG - done ? n : FN_MAX_ARG - done);
        c->sums[i] += fn_sum(c->buf + c->start, n, done);
        c->start += n;
        done += n;
    }
    c->argv[i][len < FN_MAX_ARG ? len : FN_MAX_ARG] = '\0';
    c->lens[i] = len;
    while (c->end - c->start < 2)
        if (fn_fill(c) < 0)
            return -1;
    if (memcmp(c->buf + c->start, "\r\n", 2) != 0)
        return -1;
    c->start += 2;
    return 0;
}

/* One multibulk request into c->argc/argv; -1 on EOF or a request this
 * reader does not take (inline, too many or too long arguments, a bulk not
 * followed by CRLF). */
H_UNUSED static int fn_read_request(struct fn_conn *c)
{
    long argc = fn_read_header(c, '*');

    if (argc < 1 || argc > FN_MAX_ARGS)
        return -1;
    for (int i = 0; i < argc; i++) {
        long len = fn_read_header(c, '$');
        if (len < 0 || (len > FN_MAX_ARG && !c->f->long_args))
            return -1;
        if (fn_read_arg(c, i, (size_t)len) < 0)
            return -1;
    }
    c->argc = (int)argc;
    return 0;
}

H_UNUSED static void fn_log_request(struct fn_conn *c)
{
    struct fake_node *f = c->f;
    struct fn_entry e;
    size_t len = 0;

    e.conn = c->id;
    e.cmd[0] = '\0';
    for (int i = 0; i < c->argc && len + 1 < sizeof(e.cmd); i++)
        len += (size_t)snprintf(e.cmd + len, sizeof(e.cmd) - len, "%s%s", i ? " " : "", c->argv[i]);
    pthread_mutex_lock(&f->mu);
    if (f->nlog == f->caplog) {
        int cap = f->caplog ? f->caplog * 2 : 256;
        struct fn_entry *l = realloc(f->log, sizeof(*l) * (size_t)cap);
        if (l != NULL) {
            f->log = l;
            f->caplog = cap;
        }
    }
    if (f->nlog < f->caplog)
        f->log[f->nlog++] = e;
    pthread_mutex_unlock(&f->mu);
}

/* Answers one request; -1 closes the connection. */
H_UNUSED static int fn_answer(struct fn_conn *c)
{
    const char *cmd = c->argv[0];
    int asking = strcasecmp(cmd, "ASKING") == 0;
    int rc;

    fn_wait_not_busy(c->f);
    if (c->f->filter != NULL && c->f->filter(c, &rc)) {
        c->prev_asking = asking;
        return rc;
    }
    if (strcasecmp(cmd, "CLUSTER") == 0 && c->argc == 2 && strcasecmp(c->argv[1], "SLOTS") == 0) {
        char slots[sizeof(c->f->slots)];
        size_t len;
        pthread_mutex_lock(&c->f->mu);
        len = c->f->slots_len;
        memcpy(slots, c->f->slots, len);
        pthread_mutex_unlock(&c->f->mu);
        rc = fn_write(c, slots, len);
    } else if (asking || strcasecmp(cmd, "AUTH") == 0) {
        rc = fn_writes(c, "+OK\r\n");
    } else if (strcasecmp(cmd, "PING") == 0) {
        rc = fn_writes(c, "+PONG\r\n");
    } else if (strcasecmp(cmd, "GET") == 0 && c->argc == 2 && c->f->script != NULL) {
        rc = c->f->script(c, c->argv[1], c->lens[1]);
    } else {
        rc = fn_writes(c, "-ERR fake node: unsupported command\r\n");
    }
    c->prev_asking = asking;
    return rc;
}

H_UNUSED static void *fn_conn_main(void *arg)
{
    struct fn_conn *c = arg;
    struct fake_node *f = c->f;
    int peer_closed = 0;

    while (!fn_stopping(f)) {
        if (fn_read_request(c) < 0) {
            peer_closed = 1;
            break;
        }
        fn_log_request(c);
        if (fn_answer(c) < 0)
            break;
    }
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < FN_MAX_CONNS; i++)
        if (f->fds[i] == c->fd)
            f->fds[i] = -1;
    close(c->fd);
    if (peer_closed && !f->stop)
        f->peer_closed++;
    f->live--;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    free(c);
    return NULL;
}

/* Registers fd and starts its thread; on failure closes fd. */
H_UNUSED static void fn_spawn(struct fake_node *f, int fd)
{
    struct fn_conn *c = calloc(1, sizeof(*c));
    pthread_t t;
    int slot = -1;

    pthread_mutex_lock(&f->mu);
    f->accepted++;
    for (int i = 0; i < FN_MAX_CONNS && slot < 0; i++)
        if (f->fds[i] < 0)
            slot = i;
    if (c == NULL || slot < 0 || f->trap) {
        pthread_mutex_unlock(&f->mu);
        free(c);
        close(fd);
        return;
    }
    c->f = f;
    c->fd = fd;
    c->id = f->accepted;
    f->fds[slot] = fd;
    f->live++;
    if (pthread_create(&t, NULL, fn_conn_main, c) != 0) {
        f->fds[slot] = -1;
        f->live--;
        pthread_mutex_unlock(&f->mu);
        free(c);
        close(fd);
        return;
    }
    pthread_detach(t);
    pthread_mutex_unlock(&f->mu);
}

H_UNUSED static void *fn_accept_main(void *arg)
{
    struct fake_node *f = arg;

    while (!fn_stopping(f)) {
        struct pollfd pfd = { f->listen_fd, POLLIN, 0 };
        int fd, one = 1;

        if (poll(&pfd, 1, 20) <= 0)
            continue;
        fd = accept(f->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        fn_spawn(f, fd);
    }
    return NULL;
}

/* ---------- starting and stopping ---------- */

/* Listen on 127.0.0.1:<free port> and serve. script may be NULL (GET: -ERR). */
H_UNUSED static void fn_start(struct fake_node *f, char name, fn_script *script, int trap)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int one = 1;

    memset(f, 0, sizeof(*f));
    f->name = name;
    f->script = script;
    f->trap = trap;
    for (int i = 0; i < FN_MAX_CONNS; i++)
        f->fds[i] = -1;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);

    f->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_msg(f->listen_fd >= 0, "socket: %s", strerror(errno));
    setsockopt(f->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_msg(bind(f->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind: %s", strerror(errno));
    ck_assert_msg(listen(f->listen_fd, 64) == 0, "listen: %s", strerror(errno));
    ck_assert_msg(getsockname(f->listen_fd, (struct sockaddr *)&sa, &len) == 0, "getsockname");
    f->port = ntohs(sa.sin_port);
    ck_assert_msg(pthread_create(&f->thread, NULL, fn_accept_main, f) == 0, "pthread_create");
    f->running = 1;
}

/* Stops accepting, cuts every connection, waits (up to 5 s) for their
 * threads, frees the log. Safe on a node never started. */
H_UNUSED static void fn_stop(struct fake_node *f)
{
    struct timespec ts;

    if (!f->running)
        return;
    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    for (int i = 0; i < FN_MAX_CONNS; i++)
        if (f->fds[i] >= 0)
            shutdown(f->fds[i], SHUT_RDWR);
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->thread, NULL);
    close(f->listen_fd);

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 5;
    pthread_mutex_lock(&f->mu);
    while (f->live > 0)
        if (pthread_cond_timedwait(&f->cv, &f->mu, &ts) != 0)
            break;
    pthread_mutex_unlock(&f->mu);
    f->running = 0;
    if (f->live == 0) {     /* else a thread may still log: leak rather than race */
        free(f->log);
        f->log = NULL;
    }
}

/* ---------- a proxy in front of fake nodes, and main ---------- */

/* Where this program's proxy logs go, each named <fn_log_prefix><name>.log:
 * TAGPROXY_TEST_DIR if set, else a temporary folder that fn_main removes. */
H_UNUSED static char fn_dir[512];
H_UNUSED static int fn_dir_is_temp;
H_UNUSED static const char *fn_log_prefix = "";

/* TAGPROXY_TEST_BIN, else ./build/tagproxy. */
H_UNUSED static const char *fn_proxy_bin(void)
{
    const char *bin = getenv("TAGPROXY_TEST_BIN");
    return bin != NULL && *bin != '\0' ? bin : "./build/tagproxy";
}

/* The proxy as p, with one worker thread, on a free port, seeded with
 * 127.0.0.1:seed_port (seed_port 0: no --cluster, the seeds are among args),
 * logging to fn_dir/<fn_log_prefix><name>.log. args: NULL-ended. Does not
 * wait. */
H_UNUSED static void fn_proxy_spawn(struct h_proxy *p, const char *name, int seed_port,
                                    const char *const *args)
{
    static const char *const one_thread[] = { "--threads", "1", NULL };
    char seed[64];

    h_proxy_place(p);
    H_FMT(p->log, sizeof(p->log), "%s/%s%s.log", fn_dir, fn_log_prefix, name);
    snprintf(seed, sizeof(seed), "127.0.0.1:%d", seed_port);
    h_proxy_launch(p, fn_proxy_bin(), seed_port != 0 ? seed : NULL, one_thread, args, SIGKILL);
}

/* fn_proxy_spawn(), then waits (10 s at most) until it answers PING. */
H_UNUSED static void fn_proxy_start(struct h_proxy *p, const char *name, int seed_port,
                                    const char *const *args)
{
    char what[160];

    fn_proxy_spawn(p, name, seed_port, args);
    snprintf(what, sizeof(what), "proxy (%s)", name);
    h_spawn_wait(p, h_pings, 10000, what);
}

H_UNUSED static int fn_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* The tail of every proxy log of this run. */
H_UNUSED static void fn_print_logs(void)
{
    DIR *d = opendir(fn_dir);
    struct dirent *e;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        char path[1024];
        if (strncmp(e->d_name, fn_log_prefix, strlen(fn_log_prefix)) != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", fn_dir, e->d_name);
        h_print_tail(path, 1500);
    }
    closedir(d);
}

/*
 * main() of a test built on fake nodes: checks that the proxy binary is
 * executable (before making any folder), takes TAGPROXY_TEST_DIR or makes
 * /tmp/tagproxy-<tmp_tag>.XXXXXX, runs suite(), prints the tails of the
 * <log_prefix>* logs if a test failed, removes the folder it made. The exit
 * status.
 */
H_UNUSED static int fn_main(Suite *(*suite)(void), const char *log_prefix, const char *tmp_tag)
{
    const char *dir = getenv("TAGPROXY_TEST_DIR");
    int failed;

    fn_log_prefix = log_prefix;
    if (access(fn_proxy_bin(), X_OK) != 0) {
        fprintf(stderr, "%s: not executable (set TAGPROXY_TEST_BIN or run make)\n", fn_proxy_bin());
        return EXIT_FAILURE;
    }
    if (dir != NULL && *dir != '\0') {
        snprintf(fn_dir, sizeof(fn_dir), "%s", dir);
    } else {
        snprintf(fn_dir, sizeof(fn_dir), "/tmp/tagproxy-%s.XXXXXX", tmp_tag);
        if (mkdtemp(fn_dir) == NULL) {
            perror("mkdtemp");
            return EXIT_FAILURE;
        }
        fn_dir_is_temp = 1;
    }
    failed = h_run_failed(suite());
    if (failed > 0)
        fn_print_logs();
    if (fn_dir_is_temp)
        nftw(fn_dir, fn_rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
