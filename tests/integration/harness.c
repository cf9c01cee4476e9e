/*
 * harness: the shared helpers of the integration tests. See harness.h.
 */
#include "harness.h"

#include <sys/un.h>

long long h_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void h_sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

const char *h_env(const char *name)
{
    const char *v = getenv(name);
    ck_assert_msg(v != NULL && *v != '\0', "%s is not set (run through scripts/test.sh)", name);
    return v;
}

int h_parse_addr(const char *s, struct h_node *n)
{
    size_t len = strcspn(s, " \t"), hl;
    const char *colon = NULL;
    long port = 0;

    for (size_t i = 0; i < len; i++)
        if (s[i] == ':')
            colon = s + i;
    if (colon == NULL || colon == s || colon + 1 == s + len)
        return -1;
    hl = (size_t)(colon - s);
    if (hl >= sizeof(n->host))
        return -1;
    for (const char *d = colon + 1; d < s + len; d++) {
        if (*d < '0' || *d > '9' || port > 65535)
            return -1;
        port = port * 10 + (*d - '0');
    }
    if (port <= 0 || port > 65535)
        return -1;
    memcpy(n->host, s, hl);
    n->host[hl] = '\0';
    n->port = (int)port;
    return 0;
}

struct h_node h_proxy_addr(void)
{
    struct h_node n;
    const char *s = h_env("TAGPROXY_TEST_PROXY");
    ck_assert_msg(h_parse_addr(s, &n) == 0, "bad TAGPROXY_TEST_PROXY '%s'", s);
    return n;
}

int h_nodes(struct h_node *out, int max)
{
    const char *s = h_env("TAGPROXY_TEST_NODES");
    int n = 0;

    while (*s != '\0') {
        while (*s == ' ')
            s++;
        if (*s == '\0')
            break;
        ck_assert_msg(n < max, "too many nodes in TAGPROXY_TEST_NODES");
        ck_assert_msg(h_parse_addr(s, &out[n]) == 0, "bad node in TAGPROXY_TEST_NODES: '%s'", s);
        n++;
        while (*s != '\0' && *s != ' ')
            s++;
    }
    ck_assert_msg(n > 0, "TAGPROXY_TEST_NODES is empty");
    return n;
}

void h_seed(char *buf, size_t size)
{
    struct h_node nodes[H_MAX_NODES];
    h_nodes(nodes, H_MAX_NODES);
    snprintf(buf, size, "%s:%d", nodes[0].host, nodes[0].port);
}

const char *h_prefix(void)
{
    static char buf[64];
    if (buf[0] == '\0')
        snprintf(buf, sizeof(buf), "it:%ld:%lld", (long)getpid(), h_now_ms() % 1000000);
    return buf;
}

redisContext *h_connect_try(const char *host, int port)
{
    struct timeval tv = { H_IO_TIMEOUT_S, 0 };
    redisContext *c = redisConnectWithTimeout(host, port, tv);

    if (c == NULL)
        return NULL;
    if (c->err != 0) {
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

redisContext *h_connect(const char *host, int port)
{
    struct timeval tv = { H_IO_TIMEOUT_S, 0 };
    redisContext *c = redisConnectWithTimeout(host, port, tv);

    ck_assert_msg(c != NULL, "out of memory connecting to %s:%d", host, port);
    ck_assert_msg(c->err == 0, "connect to %s:%d: %s", host, port, c->errstr);
    redisSetTimeout(c, tv);
    return c;
}

redisContext *h_connect_node(const struct h_node *n)
{
    return h_connect(n->host, n->port);
}

redisContext *h_connect_proxy(void)
{
    struct h_node n = h_proxy_addr();
    return h_connect(n.host, n.port);
}

redisReply *h_cmd(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    ck_assert_msg(r != NULL, "'%s': connection error: %s", fmt, c->errstr);
    return r;
}

redisReply *h_cmd_argv(redisContext *c, int argc, const char **argv)
{
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    ck_assert_msg(r != NULL, "'%s': connection error: %s", argv[0], c->errstr);
    return r;
}

void h_flush(redisContext *c)
{
    int done = 0;
    while (!done)
        ck_assert_msg(redisBufferWrite(c, &done) == REDIS_OK, "write: %s", c->errstr);
}

redisReply *h_get_reply(redisContext *c)
{
    void *r = NULL;
    ck_assert_msg(redisGetReply(c, &r) == REDIS_OK && r != NULL,
                  "reading a reply: %s", c->errstr);
    return r;
}

const char *h_type_name(int type)
{
    switch (type) {
    case REDIS_REPLY_STRING:  return "bulk";
    case REDIS_REPLY_ARRAY:   return "array";
    case REDIS_REPLY_INTEGER: return "integer";
    case REDIS_REPLY_NIL:     return "nil";
    case REDIS_REPLY_STATUS:  return "status";
    case REDIS_REPLY_ERROR:   return "error";
    default:                  return "?";
    }
}

const char *h_show(const redisReply *r)
{
    static char buf[256];
    if (r == NULL)
        return "(no reply)";
    switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        snprintf(buf, sizeof(buf), "%s '%.*s'", h_type_name(r->type),
                 (int)(r->len > 200 ? 200 : r->len), r->str);
        break;
    case REDIS_REPLY_INTEGER:
        snprintf(buf, sizeof(buf), "integer %lld", r->integer);
        break;
    case REDIS_REPLY_ARRAY:
        snprintf(buf, sizeof(buf), "array of %zu", r->elements);
        break;
    default:
        snprintf(buf, sizeof(buf), "%s", h_type_name(r->type));
    }
    return buf;
}

long long h_info_field(redisContext *c, const char *name)
{
    char want[96];
    redisReply *r = h_cmd(c, "INFO");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    H_FMT(want, sizeof(want), "\n%s:", name);
    const char *at = strstr(r->str, want);
    ck_assert_msg(at != NULL, "INFO has no %s", name);
    long long v = atoll(at + strlen(want));
    freeReplyObject(r);
    return v;
}

struct h_node h_replica_of(const struct h_node *m)
{
    redisContext *c = h_connect_node(m);
    redisReply *r = h_cmd(c, "INFO replication");
    struct h_node n = { 0 };
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    const char *at = strstr(r->str, "slave0:ip=");
    ck_assert_msg(at != NULL, "master %s:%d has no replica", m->host, m->port);
    ck_assert_int_eq(sscanf(at, "slave0:ip=%63[^,],port=%d", n.host, &n.port), 2);
    freeReplyObject(r);
    redisFree(c);
    return n;
}

long long h_client_id(redisContext *c)
{
    redisReply *r = h_cmd(c, "CLIENT ID");
    H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
    long long id = r->integer;
    freeReplyObject(r);
    return id;
}

void h_move_empty_slot(const struct h_topo *t, int slot, int from, int to)
{
    redisContext *src = h_connect_node(&t->masters[from]);
    redisContext *dst = h_connect_node(&t->masters[to]);
    redisReply *r = h_cmd(src, "CLUSTER COUNTKEYSINSLOT %d", slot);
    H_EXPECT_INT(r, 0);
    freeReplyObject(r);
    H_OK(dst, "CLUSTER SETSLOT %d IMPORTING %s", slot, t->master_id[from]);
    H_OK(src, "CLUSTER SETSLOT %d MIGRATING %s", slot, t->master_id[to]);
    H_OK(dst, "CLUSTER SETSLOT %d NODE %s", slot, t->master_id[to]);
    H_OK(src, "CLUSTER SETSLOT %d NODE %s", slot, t->master_id[to]);
    for (int m = 0; m < t->nmasters; m++)
        if (m != from && m != to) {
            redisContext *o = h_connect_node(&t->masters[m]);
            H_OK(o, "CLUSTER SETSLOT %d NODE %s", slot, t->master_id[to]);
            redisFree(o);
        }
    redisFree(src);
    redisFree(dst);
}

long long h_masters_info_sum(const struct h_topo *t, const char *field)
{
    long long sum = 0;
    for (int m = 0; m < t->nmasters; m++) {
        redisContext *c = h_connect_node(&t->masters[m]);
        redisReply *r = h_cmd(c, "INFO clients");
        H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
        const char *at = strstr(r->str, field);
        ck_assert_msg(at != NULL, "INFO clients has no %s", field);
        sum += atoll(at + strlen(field) + 1);
        freeReplyObject(r);
        redisFree(c);
    }
    return sum;
}

/* " addr=HOST:PORT " of the client on fd as CLIENT LIST writes it (IPv6
 * in brackets; a Unix socket's PATH:0), into buf. */
static void client_addr(int fd, char *buf, size_t size)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    char ip[INET6_ADDRSTRLEN];

    ck_assert_msg(getsockname(fd, (struct sockaddr *)&sa, &len) == 0, "getsockname: %s",
                  strerror(errno));
    if (sa.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&sa;
        ck_assert_ptr_nonnull(inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip));
        H_FMT(buf, size, " addr=%s:%d ", ip, ntohs(in->sin_port));
    } else if (sa.ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&sa;
        ck_assert_ptr_nonnull(inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip));
        H_FMT(buf, size, " addr=[%s]:%d ", ip, ntohs(in6->sin6_port));
    } else {
        struct sockaddr_un un;
        len = sizeof un;
        ck_assert_msg(getpeername(fd, (struct sockaddr *)&un, &len) == 0 &&
                      un.sun_family == AF_UNIX, "fd %d: neither TCP nor a Unix socket", fd);
        H_FMT(buf, size, " addr=%s:0 ", un.sun_path);
    }
}

void h_wait_client_listed(const struct h_node *at, int fd, const char *also, long ms,
                          const char *what)
{
    char addr[160], line[2048];
    redisContext *c = h_connect_node(at);
    long long deadline = h_now_ms() + ms;

    client_addr(fd, addr, sizeof addr);
    for (;;) {
        redisReply *r = h_cmd(c, "CLIENT LIST");
        H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
        const char *from = strstr(r->str, addr);
        line[0] = '\0';
        if (from != NULL) {             /* the whole line: back to its start */
            const char *end = strchr(from, '\n');
            while (from > r->str && from[-1] != '\n')
                from--;
            size_t n = end ? (size_t)(end - from) : strlen(from);
            n = n < sizeof line - 1 ? n : sizeof line - 1;
            memcpy(line, from, n);
            line[n] = '\0';
        }
        freeReplyObject(r);
        if (line[0] && (also == NULL || strstr(line, also) != NULL))
            break;
        if (h_now_ms() >= deadline) {
            ck_assert_msg(line[0], "%s: CLIENT LIST of %s:%d has no line with '%s' after %ld ms",
                          what, at->host, at->port, addr, ms);
            ck_abort_msg("%s: CLIENT LIST of %s:%d shows '%s' without '%s' after %ld ms", what,
                         at->host, at->port, h_esc_str(line), also, ms);
        }
        h_sleep_ms(20);
    }
    redisFree(c);
}

unsigned h_crc16(const char *s, size_t len)
{
    unsigned crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (unsigned)(unsigned char)s[i] << 8;
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    return crc;
}

int h_slot_len(const char *key, size_t len)
{
    size_t open, close;

    for (open = 0; open < len && key[open] != '{'; open++)
        ;
    if (open < len) {
        for (close = open + 1; close < len && key[close] != '}'; close++)
            ;
        if (close < len && close > open + 1)
            return (int)(h_crc16(key + open + 1, close - open - 1) % H_SLOTS);
    }
    return (int)(h_crc16(key, len) % H_SLOTS);
}

int h_slot(const char *key)
{
    return h_slot_len(key, strlen(key));
}

int h_topo_add_master(struct h_topo *t, const char *host, int port, const char *id)
{
    for (int i = 0; i < t->nmasters; i++)
        if (t->masters[i].port == port && strcmp(t->masters[i].host, host) == 0)
            return i;
    ck_assert_msg(t->nmasters < H_MAX_NODES, "too many masters");
    snprintf(t->masters[t->nmasters].host, sizeof(t->masters[0].host), "%s", host);
    t->masters[t->nmasters].port = port;
    snprintf(t->master_id[t->nmasters], sizeof(t->master_id[0]), "%s", id);
    return t->nmasters++;
}

void h_topo_load(struct h_topo *t)
{
    struct h_node nodes[H_MAX_NODES];
    int n = h_nodes(nodes, H_MAX_NODES);
    redisReply *r = NULL;

    memset(t, 0, sizeof(*t));
    for (int i = 0; i < n && r == NULL; i++) {
        redisContext *c = h_connect_try(nodes[i].host, nodes[i].port);
        if (c == NULL)
            continue;
        r = redisCommand(c, "CLUSTER SLOTS");
        redisFree(c);
        if (r != NULL && r->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            r = NULL;
        }
    }
    ck_assert_msg(r != NULL, "no node answers CLUSTER SLOTS");
    ck_assert_msg(r->elements <= H_MAX_RANGES, "too many slot ranges");
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *e = r->element[i], *m;
        ck_assert_msg(e->type == REDIS_REPLY_ARRAY && e->elements >= 3, "bad CLUSTER SLOTS entry");
        m = e->element[2];
        ck_assert_msg(m->type == REDIS_REPLY_ARRAY && m->elements >= 3, "bad CLUSTER SLOTS node");
        t->r[i].start = (int)e->element[0]->integer;
        t->r[i].end = (int)e->element[1]->integer;
        t->r[i].master = h_topo_add_master(t, m->element[0]->str, (int)m->element[1]->integer,
                                           m->element[2]->str);
    }
    t->nranges = (int)r->elements;
    freeReplyObject(r);
}

int h_topo_owner(const struct h_topo *t, int slot)
{
    for (int i = 0; i < t->nranges; i++)
        if (slot >= t->r[i].start && slot <= t->r[i].end)
            return t->r[i].master;
    return -1;
}

void h_key_on_master(const struct h_topo *t, int m, const char *prefix,
                     int nth, char *buf, size_t size)
{
    int seen = 0;
    for (long i = 0; i < 10000000; i++) {
        H_FMT(buf, size, "%s:%ld", prefix, i);
        if (h_topo_owner(t, h_slot(buf)) == m && seen++ == nth)
            return;
    }
    ck_abort_msg("no key lands on master %d", m);
}

void h_tag_for_slot(int slot, char *buf, size_t size)
{
    for (long i = 0; i < 100000000; i++) {
        H_FMT(buf, size, "t%ld", i);
        if (h_slot(buf) == slot)
            return;
    }
    ck_abort_msg("no tag for slot %d", slot);
}

redisContext *h_connect_owner(const struct h_topo *t, const char *key)
{
    int m = h_topo_owner(t, h_slot(key));
    ck_assert_msg(m >= 0, "slot %d of '%s' has no owner", h_slot(key), key);
    return h_connect_node(&t->masters[m]);
}

pid_t h_node_pid(int port)
{
    char path[512], line[128];
    const char *dir = h_env("TAGPROXY_TEST_DIR");
    FILE *f;
    pid_t pid = -1;

    snprintf(path, sizeof(path), "%s/pids", dir);
    f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    while (fgets(line, sizeof(line), f) != NULL) {
        int p;
        long v;
        if (sscanf(line, "%d %ld", &p, &v) == 2 && p == port) {
            pid = (pid_t)v;
            break;
        }
    }
    fclose(f);
    ck_assert_msg(pid > 0, "no pid for port %d in %s", port, path);
    return pid;
}

/* A port the kernel has free now, bound and released at once. */
static int kernel_free_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    ck_assert_msg(fd >= 0, "socket: %s", strerror(errno));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_msg(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind: %s", strerror(errno));
    ck_assert_msg(getsockname(fd, (struct sockaddr *)&sa, &len) == 0, "getsockname");
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

/* The kernel may hand the same free port out twice while nothing has bound
 * it yet (an admin port, then the proxy's own): a port this process was
 * given lately is not given again. */
int h_free_port(void)
{
    static int given[64];
    static unsigned ngiven;
    for (int attempt = 0; attempt < 100; attempt++) {
        int port = kernel_free_port(), seen = 0;
        for (unsigned i = 0; i < ngiven && i < 64; i++)
            seen |= given[i] == port;
        if (seen)
            continue;
        given[ngiven++ % 64] = port;
        return port;
    }
    ck_abort_msg("no free port the test has not been given already");
    return -1;
}

int h_shell(char *out, size_t size, const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    FILE *f = popen(cmd, "r");
    ck_assert_msg(f != NULL, "popen %s", cmd);
    size_t n = fread(out, 1, size - 1, f);
    out[n] = '\0';
    int status = pclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int h_tagproxy(char *out, size_t size, const char *fmt, ...)
{
    char args[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return h_shell(out, size, "'%s' %s 2>&1", h_env("TAGPROXY_TEST_BIN"), args);
}

int h_port_free(int port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(AF_INET, SOCK_STREAM, 0), ok;
    ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

int h_cluster_base(int n)
{
    srand((unsigned)getpid() ^ (unsigned)h_now_ms());
    for (int i = 0; i < 500; i++) {
        int b = 20000 + rand() % 9000, ok = 1;
        for (int p = b; p < b + n && ok; p++)
            ok = h_port_free(p) && h_port_free(p + 10000);
        if (ok)
            return b;
    }
    ck_abort_msg("no free ports for a cluster of %d nodes", n);
    return -1;
}

const char *h_server(void)
{
    const char *s = getenv("TAGPROXY_TEST_SERVER");
    return s && s[0] ? s : "redis-server";
}

int h_server_is_valkey(void)
{
    return strstr(h_server(), "valkey") != NULL;
}

int h_cluster_start(char *dir, size_t size, const char *name, const char *extra)
{
    char out[8192];
    /* the suite's server unless extra names another */
    const char *server = strstr(extra, "--server") ? "" : h_server();
    for (int attempt = 0; attempt < 3; attempt++) {
        int base = h_cluster_base(3);
        H_FMT(dir, size, "%s/%s-%d", h_env("TAGPROXY_TEST_DIR"), name, base);
        if (h_shell(out, sizeof out, "scripts/cluster.sh start --base-port %d --masters 3 "
                    "--replicas 0 --node-timeout 30000 --dir '%s' %s%s %s 2>&1", base, dir,
                    server[0] ? "--server " : "", server, extra) == 0)
            return base;
    }
    ck_abort_msg("cannot start the %s cluster: %s", name, out);
    return -1;
}

void h_cluster_stop(const char *dir)
{
    char out[4096];
    if (dir[0])
        h_shell(out, sizeof out, "scripts/cluster.sh stop --dir '%s' 2>&1", dir);
}

redisReply *h_ping_once(const char *host, int port)
{
    redisContext *c = h_connect_try(host, port);
    redisReply *r;

    if (c == NULL)
        return NULL;
    r = redisCommand(c, "PING");
    redisFree(c);
    return r;
}

int h_pings(const char *host, int port)
{
    redisReply *r = h_ping_once(host, port);
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;

    if (r != NULL)
        freeReplyObject(r);
    return ok;
}

void h_print_tail(const char *path, long bytes)
{
    char buf[4096];
    FILE *f = fopen(path, "r");
    size_t n;

    if (f == NULL)
        return;
    if (fseek(f, 0, SEEK_END) == 0 && ftell(f) > bytes)
        fseek(f, -bytes, SEEK_END);
    else
        fseek(f, 0, SEEK_SET);
    fprintf(stderr, "--- %s\n", path);
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        fwrite(buf, 1, n, stderr);
    fclose(f);
}

void h_proxy_place(struct h_proxy *p)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->addr.host, sizeof(p->addr.host), "127.0.0.1");
    p->addr.port = h_free_port();
}

void h_spawn(struct h_proxy *p, const char *const *argv, int deathsig,
             int search_path)
{
    fflush(NULL);
    p->pid = fork();
    ck_assert_msg(p->pid >= 0, "fork: %s", strerror(errno));
    if (p->pid == 0) {
        int fd = open(p->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        prctl(PR_SET_PDEATHSIG, deathsig);
        /* A proxy built with ASan keeps 256 MB of freed memory in quarantine
         * by default, which the tests' RSS bounds would count; a smaller one
         * still catches use after free. A caller's ASAN_OPTIONS wins. */
        setenv("ASAN_OPTIONS", "quarantine_size_mb=16", 0);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        if (search_path)
            execvp(argv[0], (char *const *)argv);
        else
            execv(argv[0], (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
}

void h_spawn_wait(struct h_proxy *p, int (*ready)(const char *, int),
                  long timeout_ms, const char *what)
{
    long long deadline = h_now_ms() + timeout_ms;
    int status;

    while (!ready(p->addr.host, p->addr.port)) {
        if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
            h_print_tail(p->log, 2000);
            p->pid = 0;
            ck_abort_msg("%s on port %d exited before answering PING", what, p->addr.port);
        }
        if (h_now_ms() > deadline) {
            h_print_tail(p->log, 2000);
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &status, 0);
            p->pid = 0;
            ck_abort_msg("%s on port %d does not answer PING after %ld s", what, p->addr.port,
                         timeout_ms / 1000);
        }
        h_sleep_ms(20);
    }
}

void h_proxy_launch(struct h_proxy *p, const char *bin, const char *seed,
                    const char *const *pre, const char *const *args, int deathsig)
{
    const char *const *parts[2] = { pre, args };
    const char *argv[64];
    char listen[64];
    int argc = 0;

    snprintf(listen, sizeof(listen), "%s:%d", p->addr.host, p->addr.port);
    argv[argc++] = bin;
    argv[argc++] = "--listen";
    argv[argc++] = listen;
    if (seed != NULL) {
        argv[argc++] = "--cluster";
        argv[argc++] = seed;
    }
    for (int k = 0; k < 2; k++)
        for (int i = 0; parts[k] != NULL && parts[k][i] != NULL; i++) {
            ck_assert_msg(argc < 63, "too many proxy arguments");
            argv[argc++] = parts[k][i];
        }
    argv[argc] = NULL;
    h_spawn(p, argv, deathsig, 0);
}

int h_answers(const char *host, int port)
{
    redisReply *r = h_ping_once(host, port);
    int ok = r != NULL && (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_ERROR);

    if (r != NULL)
        freeReplyObject(r);
    return ok;
}

void h_place_named(struct h_proxy *p, const char *what)
{
    h_proxy_place(p);
    H_FMT(p->log, sizeof(p->log), "%s/%s-%d.log", h_env("TAGPROXY_TEST_DIR"), what,
          p->addr.port);
}

void h_proxy_start(struct h_proxy *p, const char *const *args)
{
    char seed[128];

    h_proxy_place(p);
    snprintf(p->log, sizeof(p->log), "%s/proxy-%d.log", h_env("TAGPROXY_TEST_DIR"), p->addr.port);
    h_seed(seed, sizeof(seed));
    h_proxy_launch(p, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    h_spawn_wait(p, h_pings, 20000, "extra proxy");
}

void h_layout_proxy_start_rules(struct h_proxy *p, const char *rules,
                                const char *const *tags, size_t n,
                                char (*prefixes)[H_LAYOUT_PREFIX_LEN])
{
    const char *args[3 + H_LAYOUT_PREFIXES_MAX + 1] = { "--layout-rules", rules,
                                                        "--layout-prefix" };
    ck_assert_msg(n >= 1 && n <= H_LAYOUT_PREFIXES_MAX, "%zu layout prefixes", n);
    for (size_t i = 0; i < n; i++) {
        H_FMT(prefixes[i], H_LAYOUT_PREFIX_LEN, "%s%ld%lld", tags[i], (long)getpid(),
              h_now_ms() % 1000000);
        args[3 + i] = prefixes[i];
    }
    args[3 + n] = NULL;
    h_proxy_start(p, args);
}

void h_layout_proxy_start(struct h_proxy *p, const char *tag, char *prefix,
                          size_t size)
{
    char one[1][H_LAYOUT_PREFIX_LEN];
    h_layout_proxy_start_rules(p, "conf/layouts/botmesh-v1.rules", &tag, 1, one);
    H_FMT(prefix, size, "%s", one[0]);
}

void h_ref_start(struct h_proxy *p, const char *name, const char *pass)
{
    char port[16];
    const char *argv[] = {
        h_server(), "--bind", "127.0.0.1", "--port", port, "--save", "",
        "--appendonly", "no", "--dir", h_env("TAGPROXY_TEST_DIR"),
        pass ? "--requirepass" : NULL, pass, NULL,
    };
    h_place_named(p, name);
    snprintf(port, sizeof port, "%d", p->addr.port);
    h_spawn(p, argv, SIGTERM, 1);
    h_spawn_wait(p, h_answers, 20000, h_server());
}

void h_proxy_start_fails(const char *what, const char *seed,
                         const char *const *args, char *log, size_t size)
{
    struct h_proxy p;
    int status = 0;
    h_place_named(&p, what);
    h_proxy_launch(&p, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    long long deadline = h_now_ms() + 20000;
    while (waitpid(p.pid, &status, WNOHANG) == 0) {
        if (h_now_ms() > deadline) {
            kill(p.pid, SIGKILL);
            waitpid(p.pid, &status, 0);
            ck_abort_msg("the proxy did not stop at start (a retry loop?)");
        }
        h_sleep_ms(20);
    }
    FILE *f = fopen(p.log, "r");
    ck_assert_ptr_nonnull(f);
    log[fread(log, 1, size - 1, f)] = '\0';
    fclose(f);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d, log: %s", status,
                  log);
}

/* A connection to p refused: whether p's process is still there, and the
 * end of its log, in the failure. */
static void h_proxy_refused(const struct h_proxy *p)
{
    char tail[2048] = "", state[64] = "still running";
    int status;
    FILE *f = fopen(p->log, "r");
    if (f) {
        long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
        fseek(f, size > (long)sizeof tail - 1 ? size - (long)sizeof tail + 1 : 0, SEEK_SET);
        tail[fread(tail, 1, sizeof tail - 1, f)] = '\0';
        fclose(f);
    }
    if (p->pid > 0 && waitpid(p->pid, &status, WNOHANG) == p->pid)
        snprintf(state, sizeof state, WIFSIGNALED(status) ? "killed by signal %d" :
                 "exited with status %d", WIFSIGNALED(status) ? WTERMSIG(status) :
                 WEXITSTATUS(status));
    ck_abort_msg("connect to the proxy on port %d refused: its process is %s; its log "
                 "ends:\n%s", p->addr.port, state, tail);
}

redisContext *h_connect_extra(const struct h_proxy *p)
{
    redisContext *c = h_connect_try(p->addr.host, p->addr.port);
    if (!c)
        h_proxy_refused(p);
    return c;
}

void h_proxy_stop(struct h_proxy *p)
{
    int status;
    long long deadline = h_now_ms() + 5000;

    if (p->pid <= 0)
        return;
    kill(p->pid, SIGTERM);
    while (waitpid(p->pid, &status, WNOHANG) == 0) {
        if (h_now_ms() > deadline) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &status, 0);
            break;
        }
        h_sleep_ms(20);
    }
    p->pid = 0;
}

char h_proc_state(pid_t pid)
{
    char path[64], buf[512], *p;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return '?';
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p != NULL && p[1] == ' ' ? p[2] : '?';
}

void h_freeze(struct h_guard *g, pid_t node_pid, int deadline_ms)
{
    int fds[2];

    ck_assert_int_eq(pipe(fds), 0);
    g->node_pid = node_pid;
    fflush(NULL);
    g->guard_pid = fork();
    ck_assert_int_ge(g->guard_pid, 0);
    if (g->guard_pid == 0) {
        struct pollfd pfd = { fds[0], POLLIN, 0 };
        char b;
        close(fds[1]);
        setsid();
        /* EOF (the test closed the pipe or died) or the deadline */
        while (poll(&pfd, 1, deadline_ms) < 0 && errno == EINTR)
            ;
        (void)!read(fds[0], &b, 1);
        kill(node_pid, SIGCONT);
        _exit(0);
    }
    close(fds[0]);
    g->fd = fds[1];
    ck_assert_int_eq(kill(node_pid, SIGSTOP), 0);
    for (int i = 0; i < 100 && h_proc_state(node_pid) != 'T'; i++)
        h_sleep_ms(10);
}

void h_thaw(struct h_guard *g)
{
    int status;
    if (g->fd >= 0)
        close(g->fd);
    g->fd = -1;
    if (g->guard_pid > 0)
        waitpid(g->guard_pid, &status, 0);
    g->guard_pid = 0;
    kill(g->node_pid, SIGCONT);
}

void h_thaw_all_nodes(void)
{
    char path[512], line[128];
    const char *dir = getenv("TAGPROXY_TEST_DIR");
    FILE *f;

    if (dir == NULL)
        return;
    snprintf(path, sizeof(path), "%s/pids", dir);
    f = fopen(path, "r");
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f) != NULL) {
        int port;
        long pid;
        char cmd[64], state;
        if (sscanf(line, "%d %ld", &port, &pid) != 2 || pid <= 0)
            continue;
        /* only a process that is still a redis-server */
        snprintf(cmd, sizeof(cmd), "/proc/%ld/cmdline", pid);
        {
            FILE *cf = fopen(cmd, "r");
            char exe[256] = "";
            size_t n;
            if (cf == NULL)
                continue;
            n = fread(exe, 1, sizeof(exe) - 1, cf);
            fclose(cf);
            exe[n] = '\0';
            if (strstr(exe, "redis-server") == NULL)
                continue;
        }
        /* the guard process thaws it as the test ends: give it a moment */
        for (int i = 0; i < 20 && (state = h_proc_state((pid_t)pid)) == 'T'; i++)
            h_sleep_ms(50);
        if (state == 'T')
            fprintf(stderr, "node %d was left stopped; sending SIGCONT\n", port);
        kill((pid_t)pid, SIGCONT);
    }
    fclose(f);
}

int h_raw_connect(const struct h_node *n)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    ck_assert_msg(fd >= 0, "socket: %s", strerror(errno));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)n->port);
    ck_assert_msg(inet_pton(AF_INET, n->host, &sa.sin_addr) == 1, "not an IPv4 address: %s", n->host);
    ck_assert_msg(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0,
                  "connect %s:%d: %s", n->host, n->port, strerror(errno));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

void h_raw_send(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        ck_assert_msg(n > 0, "send: %s", strerror(errno));
        p += n;
        len -= (size_t)n;
    }
}

void h_raw_sends(int fd, const char *s)
{
    h_raw_send(fd, s, strlen(s));
}

size_t h_raw_recv(int fd, char *buf, size_t size, const char *until,
                  int timeout_ms, int *closed)
{
    size_t got = 0;
    int eof = 0;

    buf[0] = '\0';
    while (got + 1 < size) {
        struct pollfd pfd = { fd, POLLIN, 0 };
        ssize_t n;
        int rc;

        if (until != NULL && strstr(buf, until) != NULL)
            break;
        rc = poll(&pfd, 1, timeout_ms);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            break;
        n = recv(fd, buf + got, size - 1 - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            eof = 1;
            break;
        }
        got += (size_t)n;
        buf[got] = '\0';
    }
    if (closed != NULL)
        *closed = eof;
    return got;
}

size_t h_resp_complete(const char *buf, size_t len)
{
    const char *crlf = memmem(buf, len, "\r\n", 2);
    size_t head, at;
    long long n;

    if (len == 0 || crlf == NULL)
        return 0;
    head = (size_t)(crlf - buf) + 2;
    n = atoll(buf + 1);
    switch (buf[0]) {
    case '$':
        if (n < 0)
            return head;
        return len >= head + (size_t)n + 2 ? head + (size_t)n + 2 : 0;
    case '*':
        at = head;
        for (long long i = 0; i < n; i++) {
            size_t one = h_resp_complete(buf + at, len - at);
            if (one == 0)
                return 0;
            at += one;
        }
        return at;
    default:
        return head;
    }
}

uint64_t h_rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

unsigned h_rnd(uint64_t *s, unsigned n)
{
    return (unsigned)(h_rng_next(s) % n);
}

uint64_t h_run_seed(const char *env, const char *what)
{
    const char *s = getenv(env);
    uint64_t seed = s && *s ? strtoull(s, NULL, 10)
                            : (uint64_t)h_now_ms() * 2654435761u ^ (uint64_t)getpid();
    seed |= 1;
    fprintf(stderr, "%s seed %llu (replay: %s=%llu)\n", what, (unsigned long long)seed, env,
            (unsigned long long)seed);
    return seed;
}

int h_resp_number(const char *s, size_t len, long long *out)
{
    size_t i = 0;
    long long v = 0;
    int neg = len > 0 && s[0] == '-';
    i = (size_t)neg;
    if (len == i || len - i > 19)
        return -1;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = neg ? -v : v;
    return 0;
}

void h_rv_free(struct h_rv *v)
{
    if (strchr(H_RESP_AGGR_TYPES, v->type))
        for (long long i = 0; i < v->num; i++)
            h_rv_free(&v->elem[i]);
    free(v->elem);
    v->elem = NULL;
}

long h_resp_parse(const char *buf, size_t len, struct h_rv *out)
{
    const char *crlf;
    size_t head;
    long long n = 0;

    if (len == 0 || buf == NULL)
        return 0;
    if (buf[0] == '\0' || !strchr(H_RESP_LINE_TYPES ":" H_RESP_BLOB_TYPES H_RESP_AGGR_TYPES, buf[0]))
        return -1;
    /* a bare LF in a line is malformed, but in an error from Valkey 8, which
     * writes some errors with the client's argument as it came ("FUNCTION
     * LIST a<LF>b": "-ERR Unknown argument a<LF>b"; Redis 7.0 writes a space) */
    int lf_ok = buf[0] == '-' && h_server_is_valkey();
    crlf = memmem(buf, len, "\r\n", 2);
    if (crlf == NULL)
        return memchr(buf, '\n', len) && !lf_ok ? -1 : 0;
    if ((!lf_ok && memchr(buf, '\n', (size_t)(crlf - buf))) ||
        memchr(buf, '\r', (size_t)(crlf - buf)))
        return -1;
    head = (size_t)(crlf - buf) + 2;
    if (out)
        memset(out, 0, sizeof *out), out->type = buf[0];
    if (strchr(H_RESP_LINE_TYPES, buf[0])) {
        if (buf[0] == '_' && head != 3)
            return -1;
        if (out)
            out->str = buf + 1, out->len = head - 3;
        return (long)head;
    }
    if (h_resp_number(buf + 1, head - 3, &n) < 0)
        return -1;
    if (out)
        out->num = n;
    if (buf[0] == ':')
        return (long)head;
    if (n < -1 || (n == -1 && buf[0] != '$' && buf[0] != '*'))
        return -1;
    if (strchr(H_RESP_BLOB_TYPES, buf[0])) {
        if (n == -1)
            return (long)head;
        if (len < head + (size_t)n + 2)
            return 0;
        if (buf[head + n] != '\r' || buf[head + n + 1] != '\n')
            return -1;
        if (out)
            out->str = buf + head, out->len = (size_t)n;
        return (long)(head + (size_t)n + 2);
    }
    if (buf[0] == '%') {
        n *= 2;
        if (out)
            out->num = n;
    }
    size_t at = head;
    if (out && n > 0)
        out->elem = calloc((size_t)n, sizeof *out->elem);
    for (long long i = 0; i < n; i++) {
        long one = h_resp_parse(buf + at, len - at, out ? &out->elem[i] : NULL);
        if (one <= 0) {
            if (out) {          /* nothing is kept of a reply not all there */
                out->num = i;
                h_rv_free(out);
            }
            return one;
        }
        at += (size_t)one;
    }
    return (long)at;
}

int h_rv_is_token(const struct h_rv *v, const char *token)
{
    return v->type == '$' && v->len == strlen(token) && memcmp(v->str, token, v->len) == 0;
}

long h_recv_more(int fd, char **buf, size_t *cap, size_t got,
                 long long deadline_ms)
{
    if (got == *cap) {
        char *grown = realloc(*buf, *cap * 2);
        ck_assert_msg(grown != NULL, "out of memory");
        *buf = grown;
        *cap *= 2;
    }
    for (;;) {
        long long left = deadline_ms - h_now_ms();
        struct pollfd pfd = { fd, POLLIN, 0 };
        int rc = left > 0 ? poll(&pfd, 1, (int)left) : 0;
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc == 0)
            return -2;
        ssize_t n = rc < 0 ? -1 : recv(fd, *buf + got, *cap - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        return (long)n;
    }
}

const char *h_esc(const char *s, size_t len)
{
    static char ring[4][320];
    static int next;
    char *out = ring[next++ % 4];
    size_t n = 0, i;

    for (i = 0; i < len && n < 300; i++) {
        if (s[i] == '\r' || s[i] == '\n') {
            out[n++] = '\\';
            out[n++] = s[i] == '\r' ? 'r' : 'n';
        } else {
            out[n++] = (s[i] >= ' ' && s[i] <= '~') ? s[i] : '.';
        }
    }
    if (i < len)
        n += (size_t)snprintf(out + n, 8, "...");
    out[n] = '\0';
    return out;
}

const char *h_esc_str(const char *s)
{
    return h_esc(s, strlen(s));
}

size_t h_raw_reply(int fd, char **buf, size_t *cap, const char *who,
                   const char *what)
{
    size_t got = 0;
    long long deadline = h_now_ms() + 5000;
    for (;;) {
        long one = h_resp_parse(*buf, got, NULL);
        ck_assert_msg(one >= 0, "%s: %s sent a malformed reply: %s", what, who, h_esc(*buf, got));
        if (one > 0) {
            ck_assert_msg((size_t)one == got, "%s: %s sent more than one reply: %s", what, who,
                          h_esc(*buf, got));
            return got;
        }
        long n = h_recv_more(fd, buf, cap, got, deadline);
        ck_assert_msg(n > 0, "%s: no whole reply from %s within 5 s (%s)", what, who,
                      h_esc(*buf, got));
        got += (size_t)n;
    }
}

int h_run_failed(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    signal(SIGPIPE, SIG_IGN);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed;
}

int h_run(Suite *s)
{
    return h_run_failed(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
