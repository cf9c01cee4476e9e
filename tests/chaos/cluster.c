/*
 * cluster: the run's folder, its Redis Cluster and its proxy. See chaos.h.
 */
#include "tests/chaos/chaos.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct chaos *running;   /* what chaos_cleanup stops */
static pid_t owner_pid;         /* only the main process cleans up */

long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "chaos: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void print_tail(const char *path, long bytes)
{
    char buf[4096];
    size_t n;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fseek(f, 0, SEEK_END) == 0 && ftell(f) > bytes)
        fseek(f, -bytes, SEEK_END);
    else
        fseek(f, 0, SEEK_SET);
    fprintf(stderr, "--- %s\n", path);
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, stderr);
    fclose(f);
}

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "chaos: FAILED: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (running && running->proxy.log[0])
        print_tail(running->proxy.log, 3000);
    exit(1);
}

/* ---------- the folder and the processes ---------- */

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int port_free(int port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(AF_INET, SOCK_STREAM, 0), ok;
    ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

static int free_port(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    if (fd >= 0)
        close(fd);
    if (port == 0)
        die("no free port");
    return port;
}

/* A base whose 6 ports and bus ports are free, below the ephemeral range. */
static int cluster_base(void)
{
    srand((unsigned)getpid() ^ (unsigned)now_ms());
    for (int i = 0; i < 500; i++) {
        int b = 20000 + rand() % 8000, ok = 1;
        for (int p = b; p < b + CHAOS_NODES && ok; p++)
            ok = port_free(p) && port_free(p + 10000);
        if (ok)
            return b;
    }
    die("no free ports for a cluster");
}

static void on_signal(int sig)
{
    (void)sig;
    exit(130);          /* atexit's chaos_cleanup runs */
}

void chaos_cleanup(void)
{
    struct chaos *ch = running;
    if (!ch || getpid() != owner_pid)
        return;
    running = NULL;
    for (int i = 0; i < CHAOS_PROXIES; i++)
        if (ch->extra[i])
            proxy_kill(ch, ch->extra[i]);
    proxy_kill(ch, &ch->proxy);
    if (ch->cluster_dir[0]) {
        /* a node left stopped by a fault would not take the TERM */
        for (int p = ch->base; p < ch->base + CHAOS_NODES; p++) {
            pid_t pid = cl_pid(ch, p);
            if (pid > 0)
                kill(pid, SIGCONT);
        }
        run("scripts/cluster.sh stop --dir '%s' >/dev/null 2>&1", ch->cluster_dir);
    }
    const char *keep = getenv("CHAOS_KEEP");
    if (ch->dir[0] && keep && *keep)
        run("mkdir -p '%s' && cp -r '%s'/*.log '%s'/ 2>/dev/null", keep, ch->dir, keep);
    if (ch->dir[0])
        run("rm -rf '%s'", ch->dir);
}

void chaos_setup(struct chaos *ch)
{
    char tmpl[] = "/tmp/tagproxy-chaos.XXXXXX";
    if (!mkdtemp(tmpl))
        die("mkdtemp: %s", strerror(errno));
    snprintf(ch->dir, sizeof ch->dir, "%s", tmpl);
    owner_pid = getpid();
    running = ch;
    atexit(chaos_cleanup);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    for (int attempt = 0; attempt < 3; attempt++) {
        ch->base = cluster_base();
        snprintf(ch->cluster_dir, sizeof ch->cluster_dir, "%s/cluster", ch->dir);
        if (run("scripts/cluster.sh start --base-port %d --masters 3 --replicas 1 "
                "--node-timeout %d --dir '%s' >'%s/cluster.log' 2>&1", ch->base,
                CHAOS_NODE_TIMEOUT, ch->cluster_dir, ch->dir) == 0)
            return;
        run("cat '%s/cluster.log' >&2", ch->dir);
    }
    ch->cluster_dir[0] = '\0';
    die("cannot start the cluster");
}

/* ---------- talking to nodes ---------- */

redisContext *cl_connect(int port, int timeout_ms)
{
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c || c->err) {
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

redisReply *cl_cmd(int port, const char *fmt, ...)
{
    redisContext *c = cl_connect(port, 3000);
    if (!c)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

long long cl_info_field(int port, const char *section, const char *name)
{
    redisReply *r = cl_cmd(port, "INFO %s", section);
    long long v = -1;
    if (r && r->type == REDIS_REPLY_STRING) {
        char pat[80];
        snprintf(pat, sizeof pat, "\r\n%s:", name);
        const char *at = strstr(r->str, pat);
        if (!at && strncmp(r->str, pat + 2, strlen(pat + 2)) == 0)
            at = r->str - 2;
        if (at)
            v = strtoll(at + strlen(pat), NULL, 10);
    }
    freeReplyObject(r);
    return v;
}

int cl_role_is_master(int port)
{
    redisReply *r = cl_cmd(port, "ROLE");
    int m = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
            r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "master") == 0;
    freeReplyObject(r);
    return m;
}

/* One CLUSTER NODES line into v. */
static void view_line(struct cl_view *v, char *line, char (*replica_of)[48], int *replica_port,
                      int *nreplicas)
{
    char *f[64];
    int n = 0;
    for (char *tok = strtok(line, " "); tok && n < 64; tok = strtok(NULL, " "))
        f[n++] = tok;
    if (n < 8)
        return;
    int port = atoi(strchr(f[1], ':') ? strchr(f[1], ':') + 1 : "0");
    if (strstr(f[2], "master") && v->nmasters < CHAOS_NODES) {
        struct cl_master *m = &v->m[v->nmasters++];
        memset(m, 0, sizeof *m);
        m->port = port;
        snprintf(m->id, sizeof m->id, "%s", f[0]);
        for (int i = 8; i < n; i++) {
            if (f[i][0] == '[')
                continue;           /* a slot being moved */
            int lo = atoi(f[i]), hi = strchr(f[i], '-') ? atoi(strchr(f[i], '-') + 1) : lo;
            for (int s = lo; s <= hi && s < 16384; s++)
                v->slot_port[s] = port;
            m->nslots += hi - lo + 1;
        }
    } else if (strstr(f[2], "slave") && *nreplicas < CHAOS_NODES) {
        snprintf(replica_of[*nreplicas], 48, "%s", f[3]);
        replica_port[(*nreplicas)++] = port;
    }
}

int cl_view(struct chaos *ch, struct cl_view *v)
{
    for (int p = ch->base; p < ch->base + CHAOS_NODES; p++) {
        redisReply *r = cl_cmd(p, "CLUSTER NODES");
        if (!r || r->type != REDIS_REPLY_STRING) {
            freeReplyObject(r);
            continue;
        }
        char replica_of[CHAOS_NODES][48];
        int replica_port[CHAOS_NODES], nreplicas = 0;
        memset(v, 0, sizeof *v);
        for (char *save = NULL, *line = strtok_r(r->str, "\n", &save); line;
             line = strtok_r(NULL, "\n", &save))
            view_line(v, line, replica_of, replica_port, &nreplicas);
        for (int i = 0; i < nreplicas; i++)
            for (int m = 0; m < v->nmasters; m++)
                if (strcmp(v->m[m].id, replica_of[i]) == 0)
                    v->m[m].replica = replica_port[i];
        freeReplyObject(r);
        return 0;
    }
    return -1;
}

/* node `port`'s CLUSTER NODES reduced to what must agree everywhere */
static int node_summary(int port, char *out, size_t size)
{
    redisReply *r = cl_cmd(port, "CLUSTER NODES");
    int ok = r && r->type == REDIS_REPLY_STRING && !strstr(r->str, "fail") &&
             !strstr(r->str, "handshake") && !strstr(r->str, "noaddr") && !strstr(r->str, "->-");
    if (ok) {
        /* id role master slots, in the order of the ids */
        char lines[CHAOS_NODES * 2][1024];
        int n = 0;
        for (char *save = NULL, *l = strtok_r(r->str, "\n", &save); l && n < CHAOS_NODES * 2;
             l = strtok_r(NULL, "\n", &save)) {
            char id[48], addr[80], flags[80], master[48];
            int off = 0;
            if (sscanf(l, "%47s %79s %79s %47s %*s %*s %*s %*s %n", id, addr, flags, master,
                       &off) < 4)
                continue;
            snprintf(lines[n++], sizeof lines[0], "%s %s %s %s", id,
                     strstr(flags, "master") ? "master" : "replica", master, off ? l + off : "");
        }
        qsort(lines, (size_t)n, sizeof lines[0], (int (*)(const void *, const void *))strcmp);
        size_t used = 0;
        out[0] = '\0';
        for (int i = 0; i < n && used < size; i++)
            used += (size_t)snprintf(out + used, size - used, "%s\n", lines[i]);
        ok = n == CHAOS_NODES;
    }
    freeReplyObject(r);
    return ok;
}

static char unhealthy_why[1024];    /* what cl_healthy last found wrong */

/* The first line where two node summaries differ, both ways. */
static const char *first_difference(const char *a, const char *b)
{
    static char out[700];
    size_t i = 0, start = 0;
    while (a[i] && a[i] == b[i])
        if (a[i++] == '\n')
            start = i;
    snprintf(out, sizeof out, "'%.300s' against '%.300s'", a + start, b + start);
    for (char *p = out; *p; p++)
        if (*p == '\n')
            *p = '|';
    return out;
}

static int unhealthy(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int unhealthy(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(unhealthy_why, sizeof unhealthy_why, fmt, ap);
    va_end(ap);
    return 0;
}

int cl_healthy(struct chaos *ch)
{
    static char first[8192], other[8192];
    for (int p = ch->base; p < ch->base + CHAOS_NODES; p++) {
        redisReply *r = cl_cmd(p, "CLUSTER INFO");
        int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok");
        freeReplyObject(r);
        if (!ok)
            return unhealthy("node %d does not say cluster_state:ok", p);
        if (!node_summary(p, p == ch->base ? first : other, sizeof first))
            return unhealthy("node %d: a master without a replica, or a failure flag", p);
        if (p != ch->base && strcmp(first, other) != 0)
            return unhealthy("nodes %d and %d see the cluster differently: %s", ch->base, p,
                             first_difference(first, other));
    }
    struct cl_view v;
    if (cl_view(ch, &v) < 0 || v.nmasters != CHAOS_MASTERS)
        return unhealthy("not %d masters", CHAOS_MASTERS);
    for (int m = 0; m < v.nmasters; m++) {
        if (!v.m[m].replica || v.m[m].nslots == 0)
            return unhealthy("master %d has no replica or no slot", v.m[m].port);
        redisReply *r = cl_cmd(v.m[m].replica, "INFO replication");
        int up = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "master_link_status:up");
        freeReplyObject(r);
        if (!up)
            return unhealthy("replica %d: its link to master %d is not up", v.m[m].replica,
                             v.m[m].port);
    }
    return 1;
}

void cl_wait_healthy(struct chaos *ch, long timeout_ms, const char *after)
{
    long long deadline = now_ms() + timeout_ms;
    while (!cl_healthy(ch)) {
        if (now_ms() > deadline)
            die("the cluster is not whole %ld s after %s: %s", timeout_ms / 1000, after,
                unhealthy_why);
        sleep_ms(100);
    }
}

int cl_clear_imports(struct chaos *ch)
{
    int cleared = 0;
    for (int p = ch->base; p < ch->base + CHAOS_NODES; p++) {
        redisReply *r = cl_cmd(p, "CLUSTER NODES");
        const char *self = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "myself") : NULL;
        const char *end = self ? strchr(self, '\n') : NULL;
        for (const char *m = self; m && (m = strstr(m, "-<-")) && (!end || m < end); m += 3) {
            const char *open = m;
            while (open > self && *open != '[')
                open--;
            freeReplyObject(cl_cmd(p, "CLUSTER SETSLOT %d STABLE", atoi(open + 1)));
            cleared++;
        }
        freeReplyObject(r);
    }
    return cleared;
}

pid_t cl_pid(struct chaos *ch, int port)
{
    char path[400];
    long pid = 0;
    snprintf(path, sizeof path, "%s/%d/redis.pid", ch->cluster_dir, port);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return (pid_t)pid;
}

void cl_restart(struct chaos *ch, int port)
{
    if (run("scripts/cluster.sh restart-node --dir '%s' --port %d >&2", ch->cluster_dir,
            port) != 0)
        die("cannot restart node %d", port);
}

int cl_cli(struct chaos *ch, const char *fmt, ...)
{
    char args[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char log[400];
    snprintf(log, sizeof log, "%s/cli.log", ch->dir);
    int rc = run("redis-cli --cluster %s >'%s' 2>&1", args, log);
    if (rc != 0)
        print_tail(log, 2000);
    return rc;
}

/* CRC16 (XMODEM) of the key's hash tag or of the whole key, mod 16384: its
 * own, not cluster/slot.c's, so that the verifier does not share a bug with
 * the proxy it checks. */
unsigned key_slot(const char *key, size_t len)
{
    size_t s = 0, e = len;
    for (size_t i = 0; i < len; i++)
        if (key[i] == '{') {
            for (size_t j = i + 1; j < len; j++)
                if (key[j] == '}') {
                    if (j > i + 1) {
                        s = i + 1;
                        e = j;
                    }
                    break;
                }
            break;
        }
    unsigned crc = 0;
    for (size_t i = s; i < e; i++) {
        crc ^= (unsigned)(unsigned char)key[i] << 8;
        for (int b = 0; b < 8; b++)
            crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    return crc & 16383;
}

/* ---------- the proxy ---------- */

int proxy_answers(const struct chaos_proxy *p)
{
    redisContext *c = cl_connect(p->port, 1000);
    redisReply *r = c ? redisCommand(c, "PING") : NULL;
    int ok = r && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    redisFree(c);
    return ok;
}

static void remember(struct chaos *ch, struct chaos_proxy *p, int on)
{
    for (int i = 0; i < CHAOS_PROXIES; i++)
        if (on ? !ch->extra[i] : ch->extra[i] == p) {
            ch->extra[i] = on ? p : NULL;
            return;
        }
}

void proxy_spawn(struct chaos *ch, struct chaos_proxy *p, const char *const *extra, int wait)
{
    char listen[64], admin[64], seed[64], timeout[16];
    const char *argv[40];
    int argc = 0;
    p->port = free_port();
    p->admin_port = free_port();
    snprintf(listen, sizeof listen, "127.0.0.1:%d", p->port);
    snprintf(admin, sizeof admin, "127.0.0.1:%d", p->admin_port);
    snprintf(seed, sizeof seed, "127.0.0.1:%d", ch->base);
    snprintf(timeout, sizeof timeout, "%d", CHAOS_PROXY_TIMEOUT);
    snprintf(p->log, sizeof p->log, "%s/proxy-%d.log", ch->dir, p->port);
    argv[argc++] = "build/tagproxy";
    if (p->conf)
        argv[argc++] = p->conf;
    argv[argc++] = "--listen";
    argv[argc++] = listen;
    argv[argc++] = "--admin-listen";
    argv[argc++] = admin;
    argv[argc++] = "--cluster";
    argv[argc++] = seed;
    argv[argc++] = "--node-timeout-ms";
    argv[argc++] = timeout;
    for (int i = 0; extra && extra[i] && argc < 38; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(p->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    p->pid = pid;
    if (p != &ch->proxy)
        remember(ch, p, 1);
    for (long long deadline = now_ms() + 20000; wait && !proxy_answers(p); sleep_ms(50)) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            p->pid = 0;
            print_tail(p->log, 3000);
            die("the proxy exited at start");
        }
        if (now_ms() > deadline)
            die("the proxy does not answer PING after 20 s");
    }
}

void proxy_kill(struct chaos *ch, struct chaos_proxy *p)
{
    int st;
    if (p->pid <= 0)
        return;
    kill(p->pid, SIGTERM);
    for (long long deadline = now_ms() + 5000; waitpid(p->pid, &st, WNOHANG) == 0;
         sleep_ms(20))
        if (now_ms() > deadline) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &st, 0);
            break;
        }
    p->pid = 0;
    remember(ch, p, 0);
}

int proxy_http(const struct chaos_proxy *p, const char *path, char *body, size_t size)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)p->admin_port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct timeval tv = { 2, 0 };
    char req[256], buf[8192];
    size_t got = 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0), status = 0;
    body[0] = '\0';
    if (fd < 0)
        return 0;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        write(fd, req, strlen(req)) == (ssize_t)strlen(req)) {
        ssize_t n;
        while (got < sizeof buf - 1 && (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
            got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    if (sscanf(buf, "HTTP/%*s %d", &status) != 1)
        status = 0;
    const char *b = strstr(buf, "\r\n\r\n");
    snprintf(body, size, "%s", b ? b + 4 : "");
    return status;
}
