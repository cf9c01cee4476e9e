/*
 * A storm of hostile clients against one extra proxy instance of its own (a
 * crash takes no other test down), while a correct client is served.
 *
 * STORM_THREADS threads each open STORM_CONNS connections, one after the
 * other, and on each play one scenario (enum scenario): random bytes; valid
 * pipelines corrupted (truncated, bytes flipped, a count or length replaced
 * by a huge, negative or non-numeric one); announced counts and lengths far
 * past every limit; inline quoting garbage; valid pipelines cut at a random
 * byte; valid MGET/MSET/DEL across slots followed by garbage (the owed
 * replies are checked byte for byte); half-closed connections (shutdown
 * SHUT_WR, then what comes back is checked and must end); resets (SO_LINGER
 * 0) in the middle of big pipelines; 2 MB pipelines never read.
 *
 * Meanwhile a watcher does SET/GET/MGET round trips on its own keys every
 * WATCH_EVERY_MS and checks every reply; a wrong reply, a lost connection or
 * a round trip over WATCH_STALL_MS fails the test. At the end the proxy is
 * still running, answers PING, and its VmRSS, once the storm's clients are
 * gone, settles under its baseline + RSS_SLACK_KB.
 *
 * Every byte the storm sends comes from a seeded RNG (one stream per thread),
 * printed at the start and in every failure: TAGPROXY_STORM_SEED=<seed>
 * replays the same inputs (the interleaving of threads may differ). The key
 * prefix is of one width whatever the PID and clock: the lengths of the
 * pipelines feed the RNG's draws (where a pipeline is cut or corrupted), so a
 * prefix one digit longer would make other inputs from the same seed.
 */
#include <pthread.h>
#include <stdint.h>

#include "harness.h"

#define STORM_THREADS   8
#define STORM_CONNS     250          /* connections per storm thread */
#define STORM_MAX_MS    12000        /* the storm ends early past this, whatever is left */
#define NKEYS           16           /* keys per storm connection */
#define CORRUPT_TAG     "storm-corrupted-pipeline" /* keys 19 bytes longer (model_init) */
#define MAX_VALUE       48
#define BIG_PIPELINE    (2 * 1024 * 1024)
#define IO_WAIT_MS      5000         /* a checked reply slower than this is a hang */
#define WATCH_EVERY_MS  20
#define WATCH_STALL_MS  2000
#define WATCH_KEYS      8
#define RSS_SLACK_KB    (200L * 1024)
#define RSS_SETTLE_MS   2000

enum scenario {
    SC_RANDOM_BYTES,
    SC_CORRUPTED,
    SC_HUGE_HEADER,
    SC_INLINE_GARBAGE,
    SC_CUT_PIPELINE,
    SC_MULTIKEY_THEN_GARBAGE,
    SC_HALF_CLOSE,
    SC_RESET_BIG_PIPELINE,
    SC_NEVER_READ,
    SC_COUNT
};

static const char *const scenario_name[SC_COUNT] = {
    "random bytes", "corrupted pipeline", "huge header", "inline garbage", "cut pipeline",
    "multikey then garbage", "half close", "reset in big pipeline", "2 MB never read",
};

/* Counts and lengths past every limit, or not numbers at all. */
static const char *const huge_numbers[] = {
    "2147483647", "2147483648", "9999999999", "99999999999999999999999", "-1", "-2",
    "-2147483648", "abc", "", "0x10", "+3", " 3", "3 ", "1e9", "536870912", "1048577",
};

/* Requests whose header announces more than anyone should buffer. */
static const char *const huge_headers[] = {
    "*2147483647\r\n",
    "$9999999999\r\n",
    "*1\r\n$9999999999\r\n",
    "*-2147483648\r\n",
    "*1048576\r\n$3\r\nGET\r\n$1\r\nk\r\n",
    "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\nabc",
    "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870000\r\n",
    "*2\r\n$3\r\nGET\r\n$-1\r\n",
    "*2\r\n$3\r\nGET\r\n$99999999999999999999\r\n",
    "*1\r\n$-2147483649\r\n",
    "*99999999999999999999\r\n",
    "*2\r\n*2\r\n$1\r\na\r\n",
    "*0\r\n*-1\r\n*1\r\n$0\r\n\r\n",
    "$5\r\nhello\r\n",
};

static unsigned long long g_seed;
static struct h_node g_addr;
static const char *g_prefix;
static volatile int g_watch_stop;

/* Everything the threads found wrong, under g_mu; the first message kept. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_errors;
static char g_first_error[1024];
static long g_runs[SC_COUNT];
static long g_watch_rounds;
static long g_watch_worst_ms;

/* ---------- small tools ---------- */

static void storm_error(const char *fmt, ...)
{
    va_list ap;

    pthread_mutex_lock(&g_mu);
    if (g_errors++ == 0) {
        va_start(ap, fmt);
        vsnprintf(g_first_error, sizeof(g_first_error), fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&g_mu);
}

/* splitmix64: one stream per thread, from the seed. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static size_t rng_below(uint64_t *s, size_t n)
{
    return n == 0 ? 0 : (size_t)(rng_next(s) % n);
}

struct sbuf {
    char *p;
    size_t len, cap;
};

static void sbuf_add(struct sbuf *b, const void *data, size_t len)
{
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + len + 1 > cap)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (b->p == NULL)
            abort();
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, len);
    b->len += len;
    b->p[b->len] = '\0';
}

static void sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        abort();
    sbuf_add(b, tmp, (size_t)n);
}

static void sbuf_bulk(struct sbuf *b, const char *s, size_t len)
{
    sbuf_printf(b, "$%zu\r\n", len);
    sbuf_add(b, s, len);
    sbuf_add(b, "\r\n", 2);
}

/* ---------- sockets (no Check assertions: these run on storm threads) ---------- */

static int sock_connect(void)
{
    struct sockaddr_in sa;
    struct timeval tv = { 2, 0 };
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)g_addr.port);
    inet_pton(AF_INET, g_addr.host, &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        storm_error("connect to the proxy: %s", strerror(errno));
        close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* a proxy that stops reading makes send give up after 2 s, not hang */
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    return fd;
}

/* Sends what the proxy takes; how many bytes (a closed peer is no error). */
static size_t sock_send(int fd, const char *p, size_t len)
{
    size_t sent = 0;

    while (sent < len) {
        ssize_t n = send(fd, p + sent, len - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        sent += (size_t)n;
    }
    return sent;
}

/* Reads into b until it holds want bytes, the peer closes, or wait_ms pass
 * with nothing new; whether the peer closed. */
static int sock_read(int fd, struct sbuf *b, size_t want, int wait_ms)
{
    char tmp[65536];

    while (b->len < want) {
        struct pollfd pfd = { fd, POLLIN, 0 };
        ssize_t n;
        int rc = poll(&pfd, 1, wait_ms);

        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return 0;
        n = recv(fd, tmp, sizeof(tmp), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 1;
        sbuf_add(b, tmp, (size_t)n);
    }
    return 0;
}

/* Closes with a reset (SO_LINGER 0) instead of a FIN. */
static void sock_reset(int fd)
{
    struct linger lg = { 1, 0 };
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
}

/* ---------- valid requests and the replies they must get ---------- */

/* One storm connection: its keys, their values as the model knows them. */
struct model {
    uint64_t *rng;
    char key[NKEYS][96];
    char val[NKEYS][MAX_VALUE];
    int vlen[NKEYS];               /* -1: no such key */
    struct sbuf req, want;
    int ncmds;
};

/* tag names the keys' kind: "storm" for a connection whose replies are
 * checked, CORRUPT_TAG for a corrupted pipeline's. A byte flipped in a key
 * turns it into another key of the same length ("storm:2:26:6" into
 * "storm:2:56:6"), and the corrupted pipeline then writes that key; so its
 * keys are of other lengths than any checked connection's, which no flip
 * can reach (a flip keeps the length, and a length header made to lie
 * breaks the framing). */
static void model_init(struct model *m, uint64_t *rng, int thread, int conn, const char *tag)
{
    memset(m, 0, sizeof(*m));
    m->rng = rng;
    for (int i = 0; i < NKEYS; i++) {
        snprintf(m->key[i], sizeof(m->key[i]), "%s:%s:%d:%d:%d", g_prefix, tag, thread, conn, i);
        m->vlen[i] = -1;
    }
}

static void model_free(struct model *m)
{
    free(m->req.p);
    free(m->want.p);
}

static void model_argv_head(struct model *m, int argc, const char *name)
{
    sbuf_printf(&m->req, "*%d\r\n", argc);
    sbuf_bulk(&m->req, name, strlen(name));
    m->ncmds++;
}

static void model_value(struct model *m, int k)
{
    m->vlen[k] = (int)rng_below(m->rng, MAX_VALUE + 1);
    for (int i = 0; i < m->vlen[k]; i++)
        m->val[k][i] = (char)rng_next(m->rng);   /* CR, LF and NUL included */
}

static void model_want_value(struct model *m, int k)
{
    if (m->vlen[k] < 0)
        sbuf_add(&m->want, "$-1\r\n", 5);
    else
        sbuf_bulk(&m->want, m->val[k], (size_t)m->vlen[k]);
}

/* n distinct keys, at random (they hash to different slots). */
static int model_pick(struct model *m, int *keys, int n)
{
    int used[NKEYS] = { 0 }, got = 0;

    while (got < n) {
        int k = (int)rng_below(m->rng, NKEYS);
        if (!used[k]) {
            used[k] = 1;
            keys[got++] = k;
        }
    }
    return n;
}

static void model_mset(struct model *m)
{
    int keys[NKEYS], n = model_pick(m, keys, 1 + (int)rng_below(m->rng, 6));

    model_argv_head(m, 1 + 2 * n, "MSET");
    for (int i = 0; i < n; i++) {
        model_value(m, keys[i]);
        sbuf_bulk(&m->req, m->key[keys[i]], strlen(m->key[keys[i]]));
        sbuf_bulk(&m->req, m->val[keys[i]], (size_t)m->vlen[keys[i]]);
    }
    sbuf_add(&m->want, "+OK\r\n", 5);
}

static void model_mget(struct model *m)
{
    int keys[NKEYS], n = model_pick(m, keys, 1 + (int)rng_below(m->rng, 8));

    model_argv_head(m, 1 + n, "MGET");
    sbuf_printf(&m->want, "*%d\r\n", n);
    for (int i = 0; i < n; i++) {
        sbuf_bulk(&m->req, m->key[keys[i]], strlen(m->key[keys[i]]));
        model_want_value(m, keys[i]);
    }
}

static void model_del(struct model *m)
{
    int keys[NKEYS], n = model_pick(m, keys, 1 + (int)rng_below(m->rng, 4)), gone = 0;

    model_argv_head(m, 1 + n, "DEL");
    for (int i = 0; i < n; i++) {
        sbuf_bulk(&m->req, m->key[keys[i]], strlen(m->key[keys[i]]));
        gone += m->vlen[keys[i]] >= 0;
        m->vlen[keys[i]] = -1;
    }
    sbuf_printf(&m->want, ":%d\r\n", gone);
}

/* One valid command, appended to m->req, its reply to m->want. */
static void model_command(struct model *m, int multikey_only)
{
    int k = (int)rng_below(m->rng, NKEYS);
    char msg[MAX_VALUE];
    size_t len;

    switch (rng_below(m->rng, multikey_only ? 3 : 8)) {
    case 0: model_mset(m); return;
    case 1: model_mget(m); return;
    case 2: model_del(m); return;
    case 3:
        model_value(m, k);
        model_argv_head(m, 3, "SET");
        sbuf_bulk(&m->req, m->key[k], strlen(m->key[k]));
        sbuf_bulk(&m->req, m->val[k], (size_t)m->vlen[k]);
        sbuf_add(&m->want, "+OK\r\n", 5);
        return;
    case 4:
    case 5:
        model_argv_head(m, 2, "GET");
        sbuf_bulk(&m->req, m->key[k], strlen(m->key[k]));
        model_want_value(m, k);
        return;
    case 6:
        model_argv_head(m, 1, "PING");
        sbuf_add(&m->want, "+PONG\r\n", 7);
        return;
    default:
        len = rng_below(m->rng, sizeof(msg));
        for (size_t i = 0; i < len; i++)
            msg[i] = (char)rng_next(m->rng);
        model_argv_head(m, 2, "ECHO");
        sbuf_bulk(&m->req, msg, len);
        sbuf_bulk(&m->want, msg, len);
    }
}

static void model_pipeline(struct model *m, int ncmds, int multikey_only)
{
    for (int i = 0; i < ncmds; i++)
        model_command(m, multikey_only);
}

/* got must be a prefix of want (all of it if whole); else an error naming
 * the first difference. what names the scenario. */
static void model_check(const struct model *m, const struct sbuf *got, int whole,
                        const char *what)
{
    size_t n = got->len < m->want.len ? got->len : m->want.len, at = 0;

    while (at < n && got->p[at] == m->want.p[at])
        at++;
    if (at < n) {
        size_t from = at > 40 ? at - 40 : 0;
        storm_error("%s: wrong reply bytes at offset %zu of %zu expected: got '%s', want '%s'",
                    what, at, m->want.len, h_esc(got->p + from, got->len - from > 120 ? 120 : got->len - from),
                    h_esc(m->want.p + from, m->want.len - from > 120 ? 120 : m->want.len - from));
    } else if (whole && got->len < m->want.len) {
        storm_error("%s: %zu of %zu bytes of owed replies (%d commands) after %d ms, then %s",
                    what, got->len, m->want.len, m->ncmds, IO_WAIT_MS,
                    "nothing more (or a close)");
    }
}

/* ---------- garbage ---------- */

static void garbage_random(uint64_t *rng, struct sbuf *b, size_t max)
{
    size_t len = 1 + rng_below(rng, max);
    for (size_t i = 0; i < len; i++) {
        char c = (char)rng_next(rng);
        sbuf_add(b, &c, 1);
    }
}

/* Inline quoting at its worst: quotes, escapes, half hex escapes, blanks. */
static void garbage_inline(uint64_t *rng, struct sbuf *b)
{
    static const char *const bits[] = {
        "\"", "'", "\\", "\\x", "\\x4", "\\x41", "\\\"", "\\'", " ", "\t", "a", "GET", "\"\"",
        "''", "\"a\"b", "\\n", "\\r\\n", "\r", "\x00", "SET", "{", "}",
    };
    int lines = 1 + (int)rng_below(rng, 6);

    for (int l = 0; l < lines; l++) {
        size_t parts = rng_below(rng, rng_below(rng, 8) == 0 ? 40000 : 200);
        for (size_t i = 0; i < parts; i++) {
            const char *s = bits[rng_below(rng, sizeof(bits) / sizeof(bits[0]))];
            sbuf_add(b, s, s[0] == '\0' ? 1 : strlen(s));
        }
        if (rng_below(rng, 4) == 0)
            sbuf_add(b, "\n", 1);
        else
            sbuf_add(b, "\r\n", 2);
    }
}

/* A valid pipeline made invalid: truncated, bytes flipped, or a count or
 * length replaced by one of huge_numbers. */
static void garbage_corrupt(uint64_t *rng, struct sbuf *b)
{
    size_t n = sizeof(huge_numbers) / sizeof(huge_numbers[0]);
    struct sbuf out = { 0 };
    const char *num;
    size_t at, end;

    switch (rng_below(rng, 3)) {
    case 0:
        b->len = rng_below(rng, b->len);
        break;
    case 1:
        for (size_t i = 1 + rng_below(rng, 8); i > 0 && b->len > 0; i--)
            b->p[rng_below(rng, b->len)] ^= (char)(1 + rng_below(rng, 255));
        break;
    default:
        /* a header line ('*' or '$' after a line break) at or after a random point */
        at = rng_below(rng, b->len);
        while (at < b->len && !((b->p[at] == '*' || b->p[at] == '$') && (at == 0 || b->p[at - 1] == '\n')))
            at++;
        if (at >= b->len)
            break;
        end = at + 1;
        while (end < b->len && b->p[end] != '\r')
            end++;
        num = huge_numbers[rng_below(rng, n)];
        sbuf_add(&out, b->p, at + 1);
        sbuf_add(&out, num, strlen(num));
        sbuf_add(&out, b->p + end, b->len - end);
        free(b->p);
        *b = out;
    }
}

/* ---------- the storm ---------- */

struct storm {
    int thread;
    uint64_t rng;
    int held;                      /* a 2 MB pipeline's connection, never read */
    long long deadline;
};

/* Reads whatever comes within wait_ms (maybe nothing), checked as a prefix
 * of m's replies; then closes, with a reset one time in three. */
static void storm_finish(struct storm *st, int fd, struct model *m, int wait_ms, const char *what)
{
    struct sbuf got = { 0 };

    if (wait_ms > 0) {
        sock_read(fd, &got, m->want.len > 0 ? m->want.len : 1, wait_ms);
        if (m->want.len > 0)
            model_check(m, &got, 0, what);
    }
    free(got.p);
    if (rng_below(&st->rng, 3) == 0)
        sock_reset(fd);
    else
        close(fd);
}

static void storm_send(int fd, const struct sbuf *b)
{
    sock_send(fd, b->p, b->len);
}

/* A valid pipeline, then garbage: every owed reply arrives, byte for byte. */
static void storm_multikey_then_garbage(struct storm *st, int fd, struct model *m)
{
    struct sbuf got = { 0 };

    model_pipeline(m, 1 + (int)rng_below(&st->rng, 40), 1);
    switch (rng_below(&st->rng, 3)) {
    case 0: garbage_random(&st->rng, &m->req, 2000); break;
    case 1: garbage_inline(&st->rng, &m->req); break;
    default: {
        const char *h = huge_headers[rng_below(&st->rng, sizeof(huge_headers) / sizeof(huge_headers[0]))];
        sbuf_add(&m->req, h, strlen(h));
    }
    }
    storm_send(fd, &m->req);
    sock_read(fd, &got, m->want.len, IO_WAIT_MS);
    model_check(m, &got, 1, scenario_name[SC_MULTIKEY_THEN_GARBAGE]);
    free(got.p);
    storm_finish(st, fd, m, 0, NULL);
}

/* A pipeline, then shutdown(SHUT_WR): what comes back is right, and ends. */
static void storm_half_close(struct storm *st, int fd, struct model *m)
{
    struct sbuf got = { 0 };
    int closed;

    model_pipeline(m, 1 + (int)rng_below(&st->rng, 300), 0);
    storm_send(fd, &m->req);
    shutdown(fd, SHUT_WR);
    closed = sock_read(fd, &got, SIZE_MAX, IO_WAIT_MS);
    model_check(m, &got, 0, scenario_name[SC_HALF_CLOSE]);
    if (!closed)
        storm_error("%s: %d commands then SHUT_WR: after %zu reply bytes, nothing for %d ms "
                    "and the connection still open", scenario_name[SC_HALF_CLOSE], m->ncmds,
                    got.len, IO_WAIT_MS);
    free(got.p);
    close(fd);
}

/* A big pipeline, part of it sent, some replies read, then a reset. */
static void storm_reset_big(struct storm *st, int fd, struct model *m)
{
    struct sbuf got = { 0 };
    size_t first;

    model_pipeline(m, 2000 + (int)rng_below(&st->rng, 18000), 0);
    first = 1 + rng_below(&st->rng, m->req.len);
    sock_send(fd, m->req.p, first);
    sock_read(fd, &got, 1 + rng_below(&st->rng, m->want.len), (int)rng_below(&st->rng, 100));
    model_check(m, &got, 0, scenario_name[SC_RESET_BIG_PIPELINE]);
    if (rng_below(&st->rng, 2) == 0)
        sock_send(fd, m->req.p + first, rng_below(&st->rng, m->req.len - first + 1));
    free(got.p);
    sock_reset(fd);
}

/* About 2 MB of pipeline, never read; the connection stays open until the
 * next one of its kind on this thread (or the thread's end). */
static void storm_never_read(struct storm *st, int fd, struct model *m)
{
    while (m->req.len < BIG_PIPELINE)
        model_pipeline(m, 100, 0);
    storm_send(fd, &m->req);
    if (st->held >= 0) {
        if (rng_below(&st->rng, 2) == 0)
            sock_reset(st->held);
        else
            close(st->held);
    }
    st->held = fd;
}

static void storm_connection(struct storm *st, int conn)
{
    enum scenario sc = (enum scenario)rng_below(&st->rng, SC_COUNT);
    int fd, wait_ms = (int)rng_below(&st->rng, 100);
    struct model m;
    const char *h;

    fd = sock_connect();
    if (fd < 0)
        return;
    model_init(&m, &st->rng, st->thread, conn, sc == SC_CORRUPTED ? CORRUPT_TAG : "storm");
    pthread_mutex_lock(&g_mu);
    g_runs[sc]++;
    pthread_mutex_unlock(&g_mu);
    switch (sc) {
    case SC_RANDOM_BYTES:
        garbage_random(&st->rng, &m.req, rng_below(&st->rng, 10) == 0 ? 200000 : 4000);
        storm_send(fd, &m.req);
        storm_finish(st, fd, &m, wait_ms, NULL);
        break;
    case SC_CORRUPTED:
        model_pipeline(&m, 1 + (int)rng_below(&st->rng, 50), 0);
        garbage_corrupt(&st->rng, &m.req);
        storm_send(fd, &m.req);
        m.want.len = 0;   /* no telling what the corrupted bytes mean */
        storm_finish(st, fd, &m, wait_ms, NULL);
        break;
    case SC_HUGE_HEADER:
        /* a valid prefix: its replies are owed before whatever the header earns */
        model_pipeline(&m, (int)rng_below(&st->rng, 5), 0);
        h = huge_headers[rng_below(&st->rng, sizeof(huge_headers) / sizeof(huge_headers[0]))];
        sbuf_add(&m.req, h, strlen(h));
        storm_send(fd, &m.req);
        storm_finish(st, fd, &m, wait_ms, scenario_name[sc]);
        break;
    case SC_INLINE_GARBAGE:
        garbage_inline(&st->rng, &m.req);
        storm_send(fd, &m.req);
        storm_finish(st, fd, &m, wait_ms, NULL);
        break;
    case SC_CUT_PIPELINE:
        model_pipeline(&m, 1 + (int)rng_below(&st->rng, 200), 0);
        sock_send(fd, m.req.p, rng_below(&st->rng, m.req.len));
        storm_finish(st, fd, &m, 0, NULL);
        break;
    case SC_MULTIKEY_THEN_GARBAGE: storm_multikey_then_garbage(st, fd, &m); break;
    case SC_HALF_CLOSE:            storm_half_close(st, fd, &m); break;
    case SC_RESET_BIG_PIPELINE:    storm_reset_big(st, fd, &m); break;
    default:                       storm_never_read(st, fd, &m); break;
    }
    model_free(&m);
}

static void *storm_main(void *arg)
{
    struct storm *st = arg;

    for (int conn = 0; conn < STORM_CONNS && h_now_ms() < st->deadline; conn++)
        storm_connection(st, conn);
    if (st->held >= 0)
        close(st->held);
    st->held = -1;
    return NULL;
}

/* ---------- the watcher: a correct client, every reply checked ---------- */

struct watch {
    redisContext *c;
    char key[WATCH_KEYS][96];
    char val[WATCH_KEYS][64];      /* "" : never set */
};

/* A command; its reply, or NULL after recording why (error or stall). */
static redisReply *watch_cmd(struct watch *w, long round, const char *what, int argc,
                             const char **argv)
{
    long long t0 = h_now_ms(), took;
    redisReply *r = redisCommandArgv(w->c, argc, argv, NULL);

    took = h_now_ms() - t0;
    pthread_mutex_lock(&g_mu);
    if (took > g_watch_worst_ms)
        g_watch_worst_ms = took;
    pthread_mutex_unlock(&g_mu);
    if (r == NULL) {
        storm_error("watcher round %ld, %s: no reply after %lld ms: %s", round, what, took,
                    w->c->errstr);
        return NULL;
    }
    if (took > WATCH_STALL_MS) {
        storm_error("watcher round %ld, %s: reply after %lld ms (over %d)", round, what, took,
                    WATCH_STALL_MS);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

static int watch_expect(long round, const char *what, const redisReply *r, const char *want)
{
    int ok = *want == '\0' ? r->type == REDIS_REPLY_NIL
                           : r->type == REDIS_REPLY_STRING && r->len == strlen(want) &&
                             memcmp(r->str, want, r->len) == 0;
    if (!ok)
        storm_error("watcher round %ld, %s: got %s, want %s", round, what, h_show(r),
                    *want == '\0' ? "nil" : want);
    return ok;
}

/* SET one key, GET it back, MGET all of them; 0 or -1. */
static int watch_round(struct watch *w, long round)
{
    int k = (int)(round % WATCH_KEYS), ok = 1;
    const char *set[3] = { "SET", w->key[k], w->val[k] }, *get[2] = { "GET", w->key[k] };
    const char *mget[1 + WATCH_KEYS] = { "MGET" };
    redisReply *r;

    snprintf(w->val[k], sizeof(w->val[k]), "v%ld:%llu", round, g_seed);
    if ((r = watch_cmd(w, round, "SET", 3, set)) == NULL)
        return -1;
    if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "OK") != 0) {
        storm_error("watcher round %ld, SET: got %s", round, h_show(r));
        ok = 0;
    }
    freeReplyObject(r);
    if ((r = watch_cmd(w, round, "GET", 2, get)) == NULL)
        return -1;
    ok &= watch_expect(round, "GET", r, w->val[k]);
    freeReplyObject(r);
    for (int i = 0; i < WATCH_KEYS; i++)
        mget[1 + i] = w->key[i];
    if ((r = watch_cmd(w, round, "MGET", 1 + WATCH_KEYS, mget)) == NULL)
        return -1;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != WATCH_KEYS) {
        storm_error("watcher round %ld, MGET: got %s", round, h_show(r));
        ok = 0;
    }
    for (size_t i = 0; ok && i < r->elements; i++)
        ok &= watch_expect(round, "MGET", r->element[i], w->val[i]);
    freeReplyObject(r);
    return ok ? 0 : -1;
}

static void *watch_main(void *arg)
{
    struct watch *w = arg;
    struct timeval tv = { WATCH_STALL_MS / 1000 + 3, 0 };
    long round = 0;

    w->c = h_connect_try(g_addr.host, g_addr.port);
    if (w->c == NULL) {
        storm_error("watcher: cannot connect to the proxy");
        return NULL;
    }
    redisSetTimeout(w->c, tv);
    while (!g_watch_stop) {
        if (watch_round(w, round++) != 0)
            break;
        pthread_mutex_lock(&g_mu);
        g_watch_rounds = round;
        pthread_mutex_unlock(&g_mu);
        h_sleep_ms(WATCH_EVERY_MS);     /* a pace between rounds, not a wait for a state */
    }
    redisFree(w->c);
    return NULL;
}

/* ---------- the test ---------- */

static long proxy_rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* 0 while px runs; else records how it ended, px->pid 0 (reaped). */
static int proxy_ended(struct h_proxy *px)
{
    int status;

    if (px->pid <= 0 || waitpid(px->pid, &status, WNOHANG) != px->pid)
        return 0;
    if (WIFSIGNALED(status))
        storm_error("the proxy died of signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        storm_error("the proxy exited with status %d", WEXITSTATUS(status));
    px->pid = 0;
    return 1;
}

static unsigned long long storm_seed(void)
{
    const char *s = getenv("TAGPROXY_STORM_SEED");
    struct timespec ts;

    if (s != NULL && *s != '\0')
        return strtoull(s, NULL, 0);
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((unsigned long long)ts.tv_sec * 1000003ULL) ^ (unsigned long long)ts.tv_nsec ^
           ((unsigned long long)getpid() << 32);
}

/* Unique to this run like h_prefix, and always of the same length. */
static const char *storm_prefix(void)
{
    static char buf[64];
    snprintf(buf, sizeof(buf), "it:%07ld:%06lld", (long)getpid() % 10000000, h_now_ms() % 1000000);
    return buf;
}

static void storm_report(long rss_base, long rss_peak, long rss_end)
{
    fprintf(stderr, "storm seed %llu:", g_seed);
    for (int i = 0; i < SC_COUNT; i++)
        fprintf(stderr, " %s %ld,", scenario_name[i], g_runs[i]);
    fprintf(stderr, " watcher rounds %ld (worst %ld ms); proxy VmRSS %ld KB, peak %ld KB, "
            "after %ld KB\n", g_watch_rounds, g_watch_worst_ms, rss_base, rss_peak, rss_end);
}

/* VmRSS once it is under limit, or after RSS_SETTLE_MS: the last sample. */
static long proxy_rss_settled(pid_t pid, long limit)
{
    long long until = h_now_ms() + RSS_SETTLE_MS;
    long kb = proxy_rss_kb(pid);

    while (kb > limit && h_now_ms() < until) {
        h_sleep_ms(100);
        kb = proxy_rss_kb(pid);
    }
    return kb;
}

START_TEST(test_storm_leaves_proxy_serving)
{
    static const char *args[] = { "--threads", "2", NULL };
    static struct storm st[STORM_THREADS];
    static struct watch w;
    pthread_t storm_tid[STORM_THREADS], watch_tid;
    struct h_proxy px;
    long rss_base, rss_peak, rss_end = -1;
    long long t0;
    int pongs = 0;

    g_seed = storm_seed();
    fprintf(stderr, "storm seed %llu (replay: TAGPROXY_STORM_SEED=%llu)\n", g_seed, g_seed);
    g_prefix = storm_prefix();
    h_proxy_start(&px, args);
    g_addr = px.addr;
    rss_base = rss_peak = proxy_rss_kb(px.pid);
    ck_assert_msg(rss_base > 0, "no VmRSS for the proxy (pid %d)", (int)px.pid);

    for (int i = 0; i < WATCH_KEYS; i++)
        snprintf(w.key[i], sizeof(w.key[i]), "%s:watch:%d", g_prefix, i);
    ck_assert(pthread_create(&watch_tid, NULL, watch_main, &w) == 0);
    /* the watcher's first round is done (or it failed: its error says why) */
    for (long long deadline = h_now_ms() + 10000;; h_sleep_ms(5)) {
        pthread_mutex_lock(&g_mu);
        int going = g_watch_rounds > 0 || g_errors > 0;
        pthread_mutex_unlock(&g_mu);
        if (going)
            break;
        ck_assert_msg(h_now_ms() < deadline, "the watcher made no round in 10 s");
    }
    t0 = h_now_ms();
    for (int i = 0; i < STORM_THREADS; i++) {
        st[i] = (struct storm){ .thread = i, .rng = g_seed + 0x1000193ULL * (uint64_t)(i + 1),
                                .held = -1, .deadline = t0 + STORM_MAX_MS };
        ck_assert(pthread_create(&storm_tid[i], NULL, storm_main, &st[i]) == 0);
    }
    for (int i = 0; i < STORM_THREADS; i++) {
        /* the peak, and an early word should the proxy die, while joining */
        while (pthread_tryjoin_np(storm_tid[i], NULL) != 0) {
            long kb = proxy_rss_kb(px.pid);
            if (kb > rss_peak)
                rss_peak = kb;
            proxy_ended(&px);
            h_sleep_ms(50);
        }
    }
    fprintf(stderr, "storm: %lld ms\n", h_now_ms() - t0);
    h_sleep_ms(200);   /* the watcher goes on a little once the storm is over */
    g_watch_stop = 1;
    pthread_join(watch_tid, NULL);

    if (!proxy_ended(&px)) {
        for (int i = 0; i < 5 && !pongs; i++)
            pongs = h_pings(px.addr.host, px.addr.port);
        if (!pongs)
            storm_error("the proxy runs but does not answer PING after the storm");
        rss_end = proxy_rss_settled(px.pid, rss_base + RSS_SLACK_KB);
        if (rss_end > rss_base + RSS_SLACK_KB)
            storm_error("the proxy's VmRSS is %ld KB %d ms after the storm's clients left, "
                        "over its %ld KB before + %ld KB", rss_end, RSS_SETTLE_MS, rss_base,
                        RSS_SLACK_KB);
    }
    if (g_watch_rounds < 20)
        storm_error("the watcher made only %ld rounds", g_watch_rounds);
    storm_report(rss_base, rss_peak, rss_end);
    if (g_errors > 0)
        h_print_tail(px.log, 4000);
    h_proxy_stop(&px);
    ck_assert_msg(g_errors == 0, "seed %llu (TAGPROXY_STORM_SEED=%llu to replay): %d errors; "
                  "the first: %s", g_seed, g_seed, g_errors, g_first_error);
}
END_TEST

static Suite *storm_suite(void)
{
    Suite *s = suite_create("storm");
    TCase *tc = tcase_create("storm");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_storm_leaves_proxy_serving);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(storm_suite());
}
