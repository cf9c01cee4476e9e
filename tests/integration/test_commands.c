/*
 * Every command Redis 7.0 has, with random arguments, through one proxy.
 *
 * The storm (test_storm.c) sends bytes a parser must survive; this sends
 * well-formed commands a router must survive: each command and subcommand
 * the cluster's own COMMAND lists, with arguments drawn from keys (plain,
 * hash-tagged, and legacy names the shipped layout rewrites and indexes),
 * option words, numbers (negative, fractional, out of range, not numbers),
 * script bodies and odd bytes, with the arity right, one short or one long.
 * That reaches the paths a parser never does: key finding with numkeys and
 * STREAMS, the layout rewrite and its indexes, scripts, MULTI/EXEC with
 * anything inside, WATCH, pub/sub modes, blocking commands on dedicated
 * connections, commands split over masters, refused and dangerous ones.
 *
 * The proxy serves a cluster of this test's own (3 masters, started and
 * stopped here), with the layout and enable-dangerous-commands yes, so that
 * whatever the commands do stays in it. Left out, because they would pull
 * the ground from under the checks rather than test the proxy: FLUSHALL and
 * FLUSHDB (the watcher's keys), ACL SETUSER/DELUSER/LOAD (the proxy's own
 * login to the nodes), CONFIG SET (the nodes' behaviour). Numbers stay small
 * (or out of range): SRANDMEMBER k -4294967296 would have a node build four
 * billion replies, which tests Redis, not the proxy.
 *
 * CS_THREADS connections each send episodes of up to CS_EPISODE_MAX random
 * commands as one pipeline, then RESET (which leaves MULTI and subscribed
 * mode) and ECHO <token>, and read until the token. Half the episodes
 * (drawn from the seeded RNG) are RESP3: they start with HELLO 3 (RESET
 * returns to RESP2), so every command also runs with replies in RESP3's
 * types and, subscribed, with pushes between them: each worker's RESP3
 * episodes start with the next command of the list (the workers at
 * different places), and the run goes on (up to CS_RUN_MS more) until
 * every command and subcommand has been sent in RESP3. Checked:
 *   - every byte that comes back is well-formed RESP2 or RESP3;
 *   - the token comes within CS_WAIT_MS, unless the episode has a command
 *     that may block outside MULTI (then the connection is dropped after
 *     CS_BLOCKED_MS, which the proxy must clean up after) or QUIT (then the
 *     proxy closes after its +OK);
 *   - without QUIT or a (un)subscribe command (which answer once per
 *     channel), exactly one reply per command (HELLO 3 included) comes
 *     before the token;
 *   - the proxy never closes a connection that did not QUIT.
 * Meanwhile a watcher runs SET/GET/MGET on keys of its own on every master
 * and checks every reply. At the end the proxy is still running and
 * answers PING.
 *
 * The RNG is seeded from the clock, printed, and TAGPROXY_COMMANDS_SEED=<n>
 * replays the same commands (thread interleaving may differ). A failure
 * prints the episode that failed.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdint.h>

#include "harness.h"

#define CS_THREADS      4
#define CS_RUN_MS       10000
#define CS_EPISODE_MAX  10
#define CS_MAX_ARGS     12
#define CS_WAIT_MS      10000        /* nothing blocks: a slower answer is a hang */
#define CS_BLOCKED_MS   1500         /* something may block: dropped after this */
#define CS_REPLY_MAX    (64u << 20)
#define CS_MAX_COMMANDS 512
#define CS_WATCH_EVERY_MS 20

/* ---------- the commands, as the cluster's COMMAND lists them ---------- */

struct cs_command {
    char name[64];              /* "get", or a container's "config" */
    char sub[64];               /* its subcommand, or "" */
    int arity;                  /* as Redis counts it: the name(s) included */
    int first, last, step;      /* key positions (last < 0: from the end) */
    int blocking;               /* may wait for data (outside MULTI) */
};

static struct cs_command g_cmds[CS_MAX_COMMANDS];
static int g_ncmds;
static unsigned char g_sent3[CS_MAX_COMMANDS];    /* sent in a RESP3 episode */
static int g_nsent3;                              /* how many of them */

static int rv_is(const struct h_rv *v, const char *s)
{
    return (v->type == '+' || v->type == '$') && v->len == strlen(s) &&
           strncasecmp(v->str, s, v->len) == 0;
}

static int left_out(const char *full)
{
    static const char *const out[] = { "flushall", "flushdb", "acl|setuser", "acl|deluser",
                                       "acl|load", "config|set" };
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
        if (strcmp(full, out[i]) == 0)
            return 1;
    return 0;
}

/* One COMMAND entry: [name, arity, flags, first, last, step, acl, tips,
 * key specs, subcommands]. */
static void add_command(const struct h_rv *e)
{
    char full[128];
    ck_assert_msg(e->type == '*' && e->num >= 6, "a COMMAND entry of %lld elements", e->num);
    snprintf(full, sizeof full, "%.*s", (int)e->elem[0].len, e->elem[0].str);
    for (char *p = full; *p; p++)
        *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    if (e->num >= 10 && e->elem[9].type == '*' && e->elem[9].num > 0) {
        for (long long i = 0; i < e->elem[9].num; i++)
            add_command(&e->elem[9].elem[i]);
        return;
    }
    if (left_out(full))
        return;
    ck_assert_msg(g_ncmds < CS_MAX_COMMANDS, "more than %d commands", CS_MAX_COMMANDS);
    struct cs_command *c = &g_cmds[g_ncmds++];
    char *bar = strchr(full, '|');
    if (bar) {
        *bar = '\0';
        snprintf(c->sub, sizeof c->sub, "%s", bar + 1);
    }
    snprintf(c->name, sizeof c->name, "%s", full);
    c->arity = (int)e->elem[1].num;
    c->first = (int)e->elem[3].num;
    c->last = (int)e->elem[4].num;
    c->step = (int)e->elem[5].num;
    for (long long i = 0; i < e->elem[2].num; i++)
        if (rv_is(&e->elem[2].elem[i], "blocking"))
            c->blocking = 1;
    if (strcmp(c->name, "wait") == 0)
        c->blocking = 1;
}

/* Every command and subcommand, from a node of the cluster. */
static void load_commands(int port)
{
    struct h_node node = { "127.0.0.1", port };
    int fd = h_raw_connect(&node);
    size_t cap = 4 << 20, got = 0;
    char *buf = malloc(cap);
    struct h_rv all;
    long used = 0;

    ck_assert(buf != NULL);
    h_raw_sends(fd, "*1\r\n$7\r\nCOMMAND\r\n");
    while ((used = h_resp_parse(buf, got, NULL)) == 0) {
        struct pollfd pfd = { fd, POLLIN, 0 };
        ck_assert_msg(poll(&pfd, 1, H_IO_TIMEOUT_S * 1000) == 1, "no COMMAND reply from the node");
        if (got == cap)
            buf = realloc(buf, cap *= 2);
        ssize_t n = recv(fd, buf + got, cap - got, 0);
        ck_assert_msg(n > 0, "the node closed during COMMAND");
        got += (size_t)n;
    }
    ck_assert_msg(used > 0, "COMMAND's reply is malformed");
    h_resp_parse(buf, got, &all);
    ck_assert_msg(all.type == '*' && all.num > 200, "COMMAND listed %lld", all.num);
    for (long long i = 0; i < all.num; i++)
        add_command(&all.elem[i]);
    h_rv_free(&all);
    free(buf);
    close(fd);
}

/* ---------- arguments ---------- */

static uint64_t g_seed;
static char g_prefix[64];               /* the layout's prefix (one segment) */
static struct h_node g_proxy;
static volatile int g_failed;
static char g_failure[8192];
static pthread_mutex_t g_failure_lock = PTHREAD_MUTEX_INITIALIZER;


/* Key names: %s is the layout's prefix. Legacy names the layout rewrites
 * (indexed or not), cluster-layout names given directly, keys it passes
 * through, and plain keys in and out of one hash tag. */
static const char *const key_forms[] = {
    "%s:chat:1", "%s:chat:2", "%s:chat:a:b", "%s:contact:7", "%s:checkpoint:x",
    "%s:schedule:s1", "%s:user:u1:ns:k1", "%s:user:u1:ns:k2", "%s:user:u2:ns:k1",
    "%s:lock:l1", "%s:lock:l1:fence", "%s:msgs:c1", "%s:msg:c1:m1", "%s:msg:c1:m2",
    "%s:co:turn:c1:seq", "%s:co:turn:c1:owner", "%s:co:leader:n1", "%s:co:leader:n1:term",
    "%s:conv:9", "%s:lease:3", "%s:{ch:0}:idx", "%s:{m:c1}:z", "%s:{meta}:layout",
    "cs-{%s}:a", "cs-{%s}:b", "cs-{%s}:c", "cs-%s:1", "cs-%s:2", "cs-%s:3", "cs-%s:4",
};

static const char *const words[] = {
    "EX", "PX", "EXAT", "PXAT", "NX", "XX", "GT", "LT", "CH", "INCR", "GET", "KEEPTTL",
    "PERSIST", "WITHSCORES", "WITHSCORE", "LIMIT", "BYSCORE", "BYLEX", "REV", "COUNT",
    "MATCH", "TYPE", "STREAMS", "BLOCK", "NOACK", "MAXLEN", "MINID", "~", "=", "*", "$",
    ">", "-", "+", "(1", "[a", "LEFT", "RIGHT", "BEFORE", "AFTER", "ASC", "DESC", "ALPHA",
    "STORE", "BY", "nosort", "#", "WEIGHTS", "AGGREGATE", "SUM", "MIN", "MAX", "IDLE",
    "TIME", "RETRYCOUNT", "FORCE", "JUSTID", "LASTID", "MKSTREAM", "FULL", "WITHVALUES",
    "REPLACE", "ABSTTL", "FREQ", "DB", "KEYS", "LEN", "IDX", "MINMATCHLEN", "WITHMATCHLEN",
    "BIT", "BYTE", "AND", "OR", "XOR", "NOT", "OVERFLOW", "WRAP", "SAT", "FAIL", "SET",
    "INCRBY", "u8", "i16", "#1", "SAMPLES", "ASYNC", "SYNC", "HELP", "ON", "OFF", "YES",
    "NO", "RANK", "ENCODING", "REFCOUNT", "STATS", "USAGE", "DOCTOR", "ID", "GROUP",
    "CONSUMER", "ENTRIESREAD", "ch1", "ch*", "AUTH", "SETNAME", "default", "name", "0-1",
    "1-0", "0-0", "*", "every", "server", "keyspace", "lua", "FILTERBY", "MODULE",
};

static const char *const numbers[] = {
    "0", "1", "1", "2", "2", "3", "5", "10", "-1", "-2", "-10", "100", "1000", "-1000",
    "0.5", "-0.5", "1e3", "1.5", "inf", "-inf", "+inf", "nan", "007", " 1", "1 ", "0x10",
    "99999999999999999999", "-99999999999999999999", "18446744073709551616", "--1", "",
};

static const char *const scripts[] = {
    "return 1",
    "return redis.call('get', KEYS[1])",
    "return redis.call('set', KEYS[1], ARGV[1])",
    "redis.call('incr', KEYS[1]) return redis.call('get', KEYS[1])",
    "return {1, 'a', {2, {3, false}}, redis.status_reply('fine')}",
    "return redis.error_reply('no good')",
    "return redis.pcall('lpush', KEYS[1], ARGV[1])",
    "return redis.call('nosuchcommand')",
    "error('raised')",
    "#!lua flags=no-writes\nreturn redis.call('exists', KEYS[1])",
    "#!lua name=cslib\nredis.register_function('csf', function(keys, args) return #keys end)",
    "#!lua name=cslib2\nredis.register_function{function_name='csg', callback=function(k, a) "
        "return redis.call('get', k[1]) end, flags={'no-writes'}}",
    "return redis.call('get', 'a-key-not-declared')",
};

static const char *const odd[] = {
    "", " ", "a b", "\"q\"", "'", "\\", "{", "}", "{}", "}{", "\r\n", "\n", "\x01\x02",
    "\xff\xfe", "%s", "*1\r\n$4\r\nPING\r\n", "csf", "csg", "cslib",
};

/* One argument of command c at position pos of argc (0: the name). */
static void make_arg(uint64_t *s, const struct cs_command *c, int pos, int argc,
                     char *out, size_t size)
{
    int last = c->last < 0 ? argc + c->last : c->last;
    int key = c->first > 0 && pos >= c->first && pos <= last && c->step > 0 &&
              (pos - c->first) % c->step == 0;
    unsigned r = h_rnd(s, 100);

    if (key ? r < 90 : r < 22) {
        snprintf(out, size, H_PICK(s, key_forms), g_prefix);
        return;
    }
    r = h_rnd(s, 100);
    if (r < 35)
        snprintf(out, size, "%s", H_PICK(s, words));
    else if (r < 70)
        snprintf(out, size, "%s", H_PICK(s, numbers));
    else if (r < 80)
        snprintf(out, size, "%s", H_PICK(s, scripts));
    else if (r < 90)
        snprintf(out, size, "%s", H_PICK(s, odd));
    else
        snprintf(out, size, "v%u", h_rnd(s, 100000));
}

/* ---------- episodes ---------- */

struct episode {
    int ncmds;
    int resp3;                  /* opens with HELLO 3 (not in ncmds) */
    int may_block;              /* a blocking command outside MULTI */
    int quits;
    int per_channel;            /* (un)subscribe: a reply per channel */
    int uncounted;              /* CLIENT REPLY OFF or SKIP may drop replies, MONITOR
                                   add lines: not one reply per command */
    char text[4096];            /* what was sent, for a failure */
};

/* The bytes of one command (RESP2 multibulk), appended to *buf. */
static void append_command(char **buf, size_t *len, size_t *cap, int argc, char argv[][1024],
                           const size_t *arglen)
{
    size_t need = 32;
    for (int i = 0; i < argc; i++)
        need += arglen[i] + 32;
    if (*len + need > *cap) {
        *cap = (*len + need) * 2;
        *buf = realloc(*buf, *cap);
    }
    *len += (size_t)sprintf(*buf + *len, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        *len += (size_t)sprintf(*buf + *len, "$%zu\r\n", arglen[i]);
        memcpy(*buf + *len, argv[i], arglen[i]);
        *len += arglen[i];
        memcpy(*buf + *len, "\r\n", 2);
        *len += 2;
    }
}

/* Up to 60 bytes of s, printable, appended at dst[*at] (h_esc is not
 * for threads). */
static void esc_into(char *dst, size_t size, size_t *at, const char *s, size_t len)
{
    for (size_t i = 0; i < len && i < 60 && *at + 5 < size; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= ' ' && ch <= '~')
            dst[(*at)++] = (char)ch;
        else
            *at += (size_t)snprintf(dst + *at, size - *at, "\\x%02x", ch);
    }
    dst[*at] = '\0';
}

/* The command, as text, on a line of e->text. */
static void episode_note(struct episode *e, int argc, char argv[][1024], const size_t *arglen)
{
    size_t at = strlen(e->text);
    for (int i = 0; i < argc && at + 80 < sizeof e->text; i++) {
        if (i)
            e->text[at++] = ' ';
        esc_into(e->text, sizeof e->text, &at, argv[i], arglen[i]);
    }
    if (at + 2 < sizeof e->text)
        e->text[at++] = '\n', e->text[at] = '\0';
}

/* A random pipeline, then RESET and ECHO token, into *buf; in RESP3 its
 * first command is g_cmds[*next3] (then the next one), so that the workers,
 * starting at different places, send every command in RESP3. */
static void make_episode(uint64_t *s, struct episode *e, const char *token, char **buf,
                         size_t *len, size_t *cap, int *next3)
{
    char argv[CS_MAX_ARGS + 2][1024];
    size_t arglen[CS_MAX_ARGS + 2];
    int in_multi = 0;

    memset(e, 0, sizeof *e);
    *len = 0;
    e->resp3 = h_rnd(s, 2) == 0;
    if (e->resp3) {
        snprintf(argv[0], sizeof argv[0], "HELLO");
        snprintf(argv[1], sizeof argv[1], "3");
        arglen[0] = 5;
        arglen[1] = 1;
        append_command(buf, len, cap, 2, argv, arglen);
        episode_note(e, 2, argv, arglen);
    }
    e->ncmds = 1 + (int)h_rnd(s, CS_EPISODE_MAX);
    for (int k = 0; k < e->ncmds; k++) {
        unsigned pick = h_rnd(s, (unsigned)g_ncmds);
        if (e->resp3 && k == 0)
            pick = (unsigned)(*next3)++ % (unsigned)g_ncmds;
        const struct cs_command *c = &g_cmds[pick];
        if (e->resp3 && !__atomic_exchange_n(&g_sent3[pick], 1, __ATOMIC_RELAXED))
            __atomic_add_fetch(&g_nsent3, 1, __ATOMIC_RELAXED);
        int names = c->sub[0] ? 2 : 1;
        int argc = c->arity >= 0 ? c->arity : -c->arity + (int)h_rnd(s, 4);
        unsigned r = h_rnd(s, 100);
        if (r < 4 && argc > names)
            argc--;                 /* one short */
        else if (r < 8)
            argc++;                 /* one long */
        if (argc > CS_MAX_ARGS)
            argc = CS_MAX_ARGS;
        if (argc < names)
            argc = names;
        snprintf(argv[0], sizeof argv[0], "%s", c->name);
        if (names == 2)
            snprintf(argv[1], sizeof argv[1], "%s", c->sub);
        if (h_rnd(s, 4) == 0)         /* commands are case-insensitive */
            argv[0][0] = (char)toupper((unsigned char)argv[0][0]);
        for (int i = names; i < argc; i++)
            make_arg(s, c, i, argc, argv[i], sizeof argv[i]);
        for (int i = 0; i < argc; i++)
            arglen[i] = strlen(argv[i]);
        append_command(buf, len, cap, argc, argv, arglen);
        episode_note(e, argc, argv, arglen);

        /* Whether a blocking command is surely inside MULTI (and so cannot
         * block): only after a MULTI as it should be, with no EXEC, DISCARD
         * or RESET since, and no (un)subscribe anywhere (a subscribed
         * client's MULTI fails). Anything else may block. */
        if (strstr(c->name, "subscribe"))
            e->per_channel = 1;
        if (strcmp(c->name, "multi") == 0 && argc == 1)
            in_multi = 1;
        else if (!strcmp(c->name, "multi") || !strcmp(c->name, "exec") ||
                 !strcmp(c->name, "discard") || !strcmp(c->name, "reset"))
            in_multi = 0;
        if (c->blocking && !(in_multi && !e->per_channel))
            e->may_block = 1;
        if (strcmp(c->name, "quit") == 0)
            e->quits = 1;
        if ((strcmp(c->name, "client") == 0 && strcmp(c->sub, "reply") == 0) ||
            strcmp(c->name, "monitor") == 0)
            e->uncounted = 1;
    }
    snprintf(argv[0], sizeof argv[0], "RESET");
    arglen[0] = 5;
    append_command(buf, len, cap, 1, argv, arglen);
    snprintf(argv[0], sizeof argv[0], "ECHO");
    snprintf(argv[1], sizeof argv[1], "%s", token);
    arglen[0] = 4;
    arglen[1] = strlen(token);
    append_command(buf, len, cap, 2, argv, arglen);
}

__attribute__((format(printf, 1, 2)))
static void cs_fail(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&g_failure_lock);
    if (g_failed < 5)
        fprintf(stderr, "commands: %s\n", msg);
    if (!g_failed++) {
        snprintf(g_failure, sizeof g_failure, "%s (seed %llu: TAGPROXY_COMMANDS_SEED=%llu)",
                 msg, (unsigned long long)g_seed, (unsigned long long)g_seed);
    }
    pthread_mutex_unlock(&g_failure_lock);
}

enum outcome { EP_DONE, EP_DROPPED, EP_FAILED };

/* Reads the episode's replies up to the token; what became of it. */
static enum outcome read_episode(int fd, const struct episode *e, const char *token,
                                 char **buf, size_t *cap)
{
    size_t got = 0, at = 0, seen_at = 0;
    char seen[2048] = "";       /* the start of each reply, for a failure */
    int replies = 0, wait_ms = e->may_block ? CS_BLOCKED_MS : CS_WAIT_MS;
    long long deadline = h_now_ms() + wait_ms;

    for (;;) {
        long one;
        struct h_rv v;
        while ((one = h_resp_parse(*buf + at, got - at, &v)) > 0) {
            int is_token = h_rv_is_token(&v, token);
            h_rv_free(&v);
            if (seen_at + 80 < sizeof seen) {
                esc_into(seen, sizeof seen, &seen_at, *buf + at, (size_t)one);
                seen[seen_at++] = '\n';
                seen[seen_at] = '\0';
            }
            at += (size_t)one;
            if (!is_token) {
                replies++;
                continue;
            }
            if (!e->quits && !e->per_channel && !e->uncounted &&
                replies != e->resp3 + e->ncmds + 1) {
                cs_fail("%d replies before the token to %d commands and RESET:\n%sthe replies:\n%s",
                        replies, e->resp3 + e->ncmds, e->text, seen);
                return EP_FAILED;
            }
            if (at != got) {
                cs_fail("%zu bytes after the token:\n%s", got - at, e->text);
                return EP_FAILED;
            }
            return EP_DONE;
        }
        if (one < 0) {
            char shown[400];
            size_t n = 0;
            esc_into(shown, sizeof shown, &n, *buf + at, got - at);
            cs_fail("a malformed reply (%s) after %d replies to:\n%s", shown, replies, e->text);
            return EP_FAILED;
        }
        if (got - at > CS_REPLY_MAX) {
            cs_fail("a reply of over %u bytes to:\n%s", CS_REPLY_MAX, e->text);
            return EP_FAILED;
        }
        long n = h_recv_more(fd, buf, cap, got, deadline);
        if (n == -2) {
            if (e->may_block)
                return EP_DROPPED;
            cs_fail("no token within %d ms to:\n%s%d replies came:\n%s", wait_ms, e->text,
                    replies, replies ? seen : "");
            return EP_FAILED;
        }
        if (n <= 0) {
            if (e->quits)
                return EP_DROPPED;
            cs_fail("the proxy closed the connection (%s) after %d replies to:\n%s",
                 n < 0 ? strerror(errno) : "EOF", replies, e->text);
            return EP_FAILED;
        }
        got += (size_t)n;
    }
}

struct worker {
    int id;
    uint64_t rng;
    long long deadline;
    long episodes, dropped, resp3;
    int next3;                  /* the next command its RESP3 episodes start with */
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    size_t cap = 1 << 16, rcap = 1 << 16, len = 0;
    char *out = malloc(cap), *in = malloc(rcap), token[64];
    int fd = -1;

    /* past the deadline (up to CS_RUN_MS more) until every command ran in RESP3 */
    while (!g_failed && (h_now_ms() < w->deadline ||
                         (__atomic_load_n(&g_nsent3, __ATOMIC_RELAXED) < g_ncmds &&
                          h_now_ms() < w->deadline + CS_RUN_MS))) {
        struct episode e;
        if (fd < 0)
            fd = h_raw_connect(&g_proxy);
        snprintf(token, sizeof token, "cs-token-%d-%ld-%u", w->id, w->episodes,
                 (unsigned)h_rng_next(&w->rng));
        make_episode(&w->rng, &e, token, &out, &len, &cap, &w->next3);
        h_raw_send(fd, out, len);
        enum outcome o = read_episode(fd, &e, token, &in, &rcap);
        w->episodes++;
        w->resp3 += e.resp3;
        if (o != EP_DONE) {
            w->dropped += o == EP_DROPPED;
            close(fd);
            fd = -1;
        }
    }
    if (fd >= 0)
        close(fd);
    free(out);
    free(in);
    return NULL;
}

/* ---------- the watcher ---------- */

static volatile int g_watch_stop;
static long g_watch_rounds;

static void *watch_main(void *arg)
{
    (void)arg;
    redisContext *c = h_connect_node(&g_proxy);
    char key[3][96];
    for (int i = 0; i < 3; i++)
        snprintf(key[i], sizeof key[i], "watch-%s-{%d}", g_prefix, i * 5461 + 17);
    while (!g_watch_stop && !g_failed) {
        char val[64];
        snprintf(val, sizeof val, "w%ld", g_watch_rounds);
        for (int i = 0; i < 3; i++) {
            redisReply *r = redisCommand(c, "SET %s %s", key[i], val);
            if (!r || r->type != REDIS_REPLY_STATUS)
                cs_fail("the watcher's SET %s: %s", key[i], r ? h_show(r) : c->errstr);
            if (r)
                freeReplyObject(r);
        }
        redisReply *r = redisCommand(c, "MGET %s %s %s", key[0], key[1], key[2]);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3)
            cs_fail("the watcher's MGET: %s", r ? h_show(r) : c->errstr);
        else
            for (int i = 0; i < 3; i++)
                if (r->element[i]->type != REDIS_REPLY_STRING || strcmp(r->element[i]->str, val))
                    cs_fail("the watcher's MGET gave %s for %s, not %s", h_show(r->element[i]),
                         key[i], val);
        if (r)
            freeReplyObject(r);
        g_watch_rounds++;
        h_sleep_ms(CS_WATCH_EVERY_MS);      /* a pace between rounds, not a wait for a state */
    }
    redisFree(c);
    return NULL;
}

/* ---------- the test ---------- */

static char g_cluster_dir[512];
static int g_cluster_base;

static void start_cluster(void)
{
    g_cluster_base = h_cluster_start(g_cluster_dir, sizeof g_cluster_dir, "commands-cluster", "");
}

static void stop_cluster(void)
{
    h_cluster_stop(g_cluster_dir);
}

START_TEST(test_every_command_with_random_arguments)
{
    struct h_proxy px;
    char seed[64];
    static struct worker w[CS_THREADS];
    pthread_t tid[CS_THREADS], watch_tid;
    long episodes = 0, dropped = 0, resp3 = 0;

    g_seed = h_run_seed("TAGPROXY_COMMANDS_SEED", "commands");
    load_commands(g_cluster_base);
    snprintf(g_prefix, sizeof g_prefix, "cs%ld", (long)getpid());
    H_FMT(seed, sizeof seed, "127.0.0.1:%d", g_cluster_base);
    h_place_named(&px, "proxy-commands");
    const char *const args[] = { "--layout-rules", "conf/layouts/botmesh-v1.rules",
                                 "--layout-prefix", g_prefix, "--enable-dangerous-commands", "yes",
                                 "--threads", "2", NULL };
    h_proxy_launch(&px, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    h_spawn_wait(&px, h_pings, 20000, "the proxy under test");
    g_proxy = px.addr;

    ck_assert(pthread_create(&watch_tid, NULL, watch_main, NULL) == 0);
    long long deadline = h_now_ms() + CS_RUN_MS;
    for (int i = 0; i < CS_THREADS; i++) {
        w[i] = (struct worker){ .id = i, .rng = g_seed * (uint64_t)(2 * i + 3) | 1,
                                .deadline = deadline, .next3 = i * g_ncmds / CS_THREADS };
        ck_assert(pthread_create(&tid[i], NULL, worker_main, &w[i]) == 0);
    }
    for (int i = 0; i < CS_THREADS; i++) {
        pthread_join(tid[i], NULL);
        episodes += w[i].episodes;
        dropped += w[i].dropped;
        resp3 += w[i].resp3;
    }
    g_watch_stop = 1;
    pthread_join(watch_tid, NULL);

    int status;
    if (waitpid(px.pid, &status, WNOHANG) == px.pid) {
        px.pid = 0;
        cs_fail("the proxy exited (%s %d)", WIFSIGNALED(status) ? "signal" : "status",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    } else if (!h_pings(px.addr.host, px.addr.port)) {
        cs_fail("the proxy does not answer PING after the commands");
    }
    int kinds3 = g_nsent3;
    fprintf(stderr, "commands: %d kinds (%d of them in RESP3), %ld episodes (%ld in RESP3; %ld "
            "dropped: blocked or quit), watcher %ld rounds\n", g_ncmds, kinds3, episodes, resp3,
            dropped, g_watch_rounds);
    if (g_failed)
        h_print_tail(px.log, 4000);
    h_proxy_stop(&px);
    ck_assert_msg(!g_failed, "%s", g_failure);
    ck_assert_msg(episodes > 100, "only %ld episodes ran", episodes);
    ck_assert_msg(resp3 > 50 && episodes - resp3 > 50, "%ld of %ld episodes in RESP3", resp3,
                  episodes);
    for (int i = 0; i < g_ncmds; i++)
        ck_assert_msg(g_sent3[i], "%s%s%s never ran in RESP3 (%d of %d did)", g_cmds[i].name,
                      g_cmds[i].sub[0] ? " " : "", g_cmds[i].sub, kinds3, g_ncmds);
    ck_assert_msg(g_watch_rounds > 20, "the watcher made only %ld rounds", g_watch_rounds);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("commands");
    TCase *tc = tcase_create("random");
    tcase_add_unchecked_fixture(tc, start_cluster, stop_cluster);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_every_command_with_random_arguments);
    suite_add_tcase(s, tc);
    return h_run(s);
}
