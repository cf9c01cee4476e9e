/*
 * Every command the server knows, through the proxy and to a standalone
 * server of the same build (redis-server 7.0, or valkey-server 8 in
 * make test's Valkey pass), reply for reply, in RESP2 and in RESP3.
 *
 * The commands are the standalone server's own COMMAND list, each
 * subcommand on its own; their arguments are built from the server's
 * COMMAND DOCS: each argument by its type (a key of the command's data
 * type, a string, an integer, a double, a unix time, a pattern, a token),
 * optional ones and repeats drawn from a seeded RNG, numkeys counting the
 * keys that follow it, blocking timeouts short. Every command is sent three
 * times: with its required arguments only, and twice drawn. Before each,
 * both sides hold the same keys, all of one hash tag (so that the cluster
 * can run every multi-key command as one server would): a string, a list,
 * a hash, a set, a sorted set, a stream and a HyperLogLog. Each command
 * goes on a new connection (RESP3 ones open with HELLO 3), followed by
 * PING <token>; everything up to the token's reply must be the same bytes.
 *
 * What a cluster behind a proxy cannot answer as one server does is listed
 * in `differs` below with the reason: those are sent too, and their
 * replies need only be well-formed and followed by the token's. Commands that would stop or
 * reconfigure the standalone server or the cluster under the suite (SHUTDOWN,
 * DEBUG, CONFIG SET, REPLICAOF, ...) are in `unsent`, with the reason.
 * Admin commands (flag admin) may be refused as the suite's proxy refuses
 * them (enable-dangerous-commands no), saying so.
 * Commands whose output a tip calls nondeterministic (TIME, RANDOMKEY,
 * SRANDMEMBER) are compared by their reply's type; those whose order is
 * (SMEMBERS, HKEYS of a hash table) by their bytes sorted.
 *
 * TAGPROXY_EVERY_SEED=<n> replays a run's arguments.
 */
#include <stdint.h>

#include "harness.h"

#define EV_MAX_ARGV   64
#define EV_ARG_MAX    256
#define EV_TOKEN      "every-command-token"

static struct h_proxy ref;
static uint64_t g_seed;

/* ---------- what is not compared, and why ---------- */

struct reason {
    const char *name;           /* a fullname, or a container's "config|" prefix */
    const char *why;
};

/* Never sent: they would stop, block or reconfigure a server under the test. */
static const struct reason unsent[] = {
    { "shutdown", "stops the server" },
    { "debug", "crashes, sleeps or changes the server at will" },
    { "monitor", "streams every command from then on" },
    { "sync", "a replica's handshake" }, { "psync", "a replica's handshake" },
    { "replicaof", "makes the server a replica" }, { "slaveof", "makes the server a replica" },
    { "failover", "a replica's role change" },
    { "config|set", "reconfigures the server" }, { "config|rewrite", "writes its config file" },
    { "acl|setuser", "changes the users the proxy logs in as" },
    { "acl|deluser", "changes the users the proxy logs in as" },
    { "acl|load", "changes the users the proxy logs in as" },
    { "acl|save", "writes the ACL file" },
    { "client|kill", "closes connections of other tests" },
    { "client|pause", "pauses the cluster under every test" },
    { "client|unpause", "goes with CLIENT PAUSE" },
    { "save", "writes an RDB in the test's folder" }, { "bgsave", "forks the server" },
    { "bgrewriteaof", "forks the server" },
    { "flushall", "empties the keys of other tests" }, { "flushdb", "empties the keys of other tests" },
    { "script|flush", "empties the scripts of other tests" },
    { "function|flush", "empties the functions of other tests" },
    { "function|restore", "replaces the functions of other tests" },
    { "function|load", "loads functions other tests see" },
    { "function|delete", "deletes functions other tests use" },
    { "module|load", "loads a module" }, { "module|loadex", "loads a module" },
    { "migrate", "a connection to another server" },
    { "quit", "closes the connection before the token" },
    { "multi", "queues the token's PING (test_tx and test_differential have MULTI)" },
    { "client|reply", "OFF and SKIP leave out the token's reply (test_differential has it)" },
    { "replconf", "a replica's handshake" },
    { "cluster|", "cluster commands on a server without cluster mode" },
};

/* Sent to both; the proxy's reply may be an error where the server's is not. */
static const struct reason differs[] = {
    { "select", "one database: a cluster has only db 0" },
    { "move", "one database: a cluster has only db 0" },
    { "swapdb", "one database: a cluster has only db 0" },
    { "copy", "one database: COPY ... DB n is refused" },
    { "wait", "the cluster's masters have replicas, the standalone server none" },
    { "waitaof", "the cluster's masters have replicas, the standalone server none" },
    { "readonly", "cluster mode: the proxy answers it" },
    { "readwrite", "cluster mode: the proxy answers it" },
    { "asking", "cluster mode: the proxy answers it" },
    { "dbsize", "the cluster holds the keys of other tests" },
    { "keys", "the cluster holds the keys of other tests" },
    { "scan", "the proxy's cursor encodes the master it scans" },
    { "randomkey", "the cluster holds the keys of other tests" },
    { "info", "every master's figures, and the proxy's own" },
    { "lastsave", "each master's own time" },
    { "hello", "the client's id" },
    { "auth", "the proxy's users are its own" },
    { "client|", "the proxy's clients are its own: ids, addresses, counts" },
    { "config|get", "the masters' values, and the proxy's own settings" },
    { "config|resetstat", "every master, and the proxy's own figures" },
    { "acl|", "the proxy's users are its own" },
    { "slowlog|", "the masters' logs merged with the proxy's own" },
    { "latency|", "each master's own figures" },
    { "memory|", "each master's own figures" },
    { "object|freq", "each node's own maxmemory-policy" },
    { "pubsub|", "the proxy's own subscriber connections" },
    { "publish", "counts receivers on every node" }, { "spublish", "counts receivers on its node" },
    { "script|kill", "asks every master" }, { "function|kill", "asks every master" },
    { "function|list", "every master's functions" }, { "function|dump", "every master's functions" },
    { "function|stats", "every master's figures" },
    { "fcall", "the functions other tests loaded" }, { "fcall_ro", "the functions other tests loaded" },
    { "script|exists", "the scripts of other tests" },
    { "lolwut", "the server's version in its art" },
    { "command|", "checked byte for byte by test_local, in either pass" },
    { "command", "checked byte for byte by test_local, in either pass" },
    { "xinfo|", "stream internals: node and entry figures" },
    { "sort", "BY and GET patterns name keys no key spec finds" },
    { "sort_ro", "BY and GET patterns name keys no key spec finds" },
    { "reset", "the client's id" },
    { "script|debug", "the Lua debugger needs a node's connection of its own: refused" },
    { "module|", "refused: the masters' modules are the operator's to manage on each node" },
    { "role", "a cluster master's replicas" },
    { "failover", "cluster mode" },
    { "subscribe", "subscribed through the proxy's own connection" },
    { "psubscribe", "subscribed through the proxy's own connection" },
    { "ssubscribe", "subscribed through the proxy's own connection" },
    { "unsubscribe", "subscribed through the proxy's own connection" },
    { "punsubscribe", "subscribed through the proxy's own connection" },
    { "sunsubscribe", "subscribed through the proxy's own connection" },
};

static const char *reason_of(const struct reason *list, size_t n, const char *fullname)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(list[i].name);
        if (list[i].name[len - 1] == '|' ? strncmp(fullname, list[i].name, len) == 0
                                          : strcmp(fullname, list[i].name) == 0)
            return list[i].why;
    }
    return NULL;
}

#define UNSENT(name) reason_of(unsent, sizeof unsent / sizeof unsent[0], name)
#define DIFFERS(name) reason_of(differs, sizeof differs / sizeof differs[0], name)

/* ---------- the commands, from the server's COMMAND and COMMAND DOCS ---------- */

struct ev_command {
    char fullname[96];
    char words[2][64];          /* "config" "get", or "get" "" */
    char group[32];
    const struct h_rv *args;    /* its docs' arguments (in g_docs), or NULL */
    int nondeterministic;       /* tip nondeterministic_output */
    int unordered;              /* tip nondeterministic_output_order */
    int admin;                  /* flag admin: refused by the suite's proxy (its
                                   enable-dangerous-commands is off) */
};

static struct ev_command g_cmds[1024];
static int g_ncmds;
static struct h_rv g_docs, g_info;      /* deeper than hiredis 0.14 reads */
static char *g_docs_bytes, *g_info_bytes;

static int rv_is(const struct h_rv *v, const char *s)
{
    return v && (v->type == '$' || v->type == '+') && v->len == strlen(s) &&
           memcmp(v->str, s, v->len) == 0;
}

/* The value of key in a RESP2 map (a flat array), or NULL. */
static const struct h_rv *map_get(const struct h_rv *m, const char *key)
{
    if (!m || m->type != '*')
        return NULL;
    for (long long i = 0; i + 1 < m->num; i += 2)
        if (rv_is(&m->elem[i], key))
            return &m->elem[i + 1];
    return NULL;
}

static int has_string(const struct h_rv *set, const char *s)
{
    for (long long i = 0; set && set->type == '*' && i < set->num; i++)
        if (rv_is(&set->elem[i], s))
            return 1;
    return 0;
}

/* v's text, into out. */
static void text_of(const struct h_rv *v, char *out, size_t cap)
{
    snprintf(out, cap, "%.*s", v && v->str ? (int)v->len : 0, v && v->str ? v->str : "");
}

/* The COMMAND INFO entry named fullname, or NULL. */
static const struct h_rv *info_of(const char *fullname)
{
    for (long long i = 0; i < g_info.num; i++) {
        const struct h_rv *e = &g_info.elem[i];
        if (rv_is(&e->elem[0], fullname))
            return e;
        const struct h_rv *subs = &e->elem[9];
        for (long long k = 0; k < subs->num; k++)
            if (rv_is(&subs->elem[k].elem[0], fullname))
                return &subs->elem[k];
    }
    return NULL;
}

static void add_command(const char *top, const char *sub, const struct h_rv *docs)
{
    ck_assert_int_lt(g_ncmds, (int)(sizeof g_cmds / sizeof g_cmds[0]));
    struct ev_command *c = &g_cmds[g_ncmds++];
    snprintf(c->words[0], sizeof c->words[0], "%s", top);
    snprintf(c->words[1], sizeof c->words[1], "%s", sub ? sub : "");
    snprintf(c->fullname, sizeof c->fullname, "%s%s%s", top, sub ? "|" : "", sub ? sub : "");
    text_of(map_get(docs, "group"), c->group, sizeof c->group);
    c->args = map_get(docs, "arguments");
    const struct h_rv *info = info_of(c->fullname);
    ck_assert_msg(info != NULL, "COMMAND has no entry for %s", c->fullname);
    c->nondeterministic = has_string(&info->elem[7], "nondeterministic_output");
    c->unordered = has_string(&info->elem[7], "nondeterministic_output_order");
    c->admin = has_string(&info->elem[2], "admin");
}

/* The server's reply to a command without arguments, parsed. */
static char *ask_ref(const char *req, struct h_rv *out)
{
    size_t cap = 1 << 20;
    char *buf = malloc(cap);
    int fd = h_raw_connect(&ref.addr);
    ck_assert_ptr_nonnull(buf);
    h_raw_sends(fd, req);
    size_t len = h_raw_reply(fd, &buf, &cap, "the server", req);
    close(fd);
    ck_assert_int_eq(h_resp_parse(buf, len, out), (long)len);
    ck_assert_int_eq(out->type, '*');
    return buf;
}

/* Every command and subcommand of the standalone server's COMMAND DOCS. */
static void load_commands(void)
{
    g_docs_bytes = ask_ref("*2\r\n$7\r\nCOMMAND\r\n$4\r\nDOCS\r\n", &g_docs);
    g_info_bytes = ask_ref("*1\r\n$7\r\nCOMMAND\r\n", &g_info);
    for (long long i = 0; i + 1 < g_docs.num; i += 2) {
        char name[64], subname[96];
        text_of(&g_docs.elem[i], name, sizeof name);
        const struct h_rv *docs = &g_docs.elem[i + 1];
        const struct h_rv *subs = map_get(docs, "subcommands");
        if (!subs || subs->num == 0) {
            add_command(name, NULL, docs);
            continue;
        }
        for (long long k = 0; k + 1 < subs->num; k += 2) {
            text_of(&subs->elem[k], subname, sizeof subname);
            const char *bar = strchr(subname, '|');
            add_command(name, bar ? bar + 1 : subname, &subs->elem[k + 1]);
        }
    }
}

/* ---------- arguments, from the docs ---------- */

struct ev_argv {
    char v[EV_MAX_ARGV][EV_ARG_MAX];
    int n;
    int numkeys_at;             /* a numkeys argument waiting for its keys' count */
    uint64_t *rng;
    int full;                   /* draw optional arguments (else leave them out) */
    const struct ev_command *cmd;
};

static void push(struct ev_argv *a, const char *s)
{
    if (a->n < EV_MAX_ARGV)
        snprintf(a->v[a->n++], EV_ARG_MAX, "%s", s);
}

/* A key of the command's data type (its docs' group), held on both sides. */
static const char *key_for(const struct ev_argv *a)
{
    static const struct { const char *group, *key; } by_group[] = {
        { "string", "{ev}s" }, { "bitmap", "{ev}s" }, { "list", "{ev}l" }, { "hash", "{ev}h" },
        { "set", "{ev}S" }, { "sorted-set", "{ev}z" }, { "geo", "{ev}g" }, { "stream", "{ev}x" },
        { "hyperloglog", "{ev}p" },
    };
    static const char *const any[] = { "{ev}s", "{ev}l", "{ev}h", "{ev}z", "{ev}none" };
    for (size_t i = 0; i < sizeof by_group / sizeof by_group[0]; i++)
        if (strcmp(a->cmd->group, by_group[i].group) == 0)
            return h_rnd(a->rng, 4) ? by_group[i].key : "{ev}none";
    return H_PICK(a->rng, any);
}

static const char *string_for(const struct ev_argv *a, const char *name)
{
    if (strstr(name, "field"))
        return h_rnd(a->rng, 2) ? "f1" : "f9";
    if (strstr(name, "member"))
        return h_rnd(a->rng, 2) ? "m1" : "m9";
    if (strcmp(name, "id") == 0 || strstr(name, "-id") || strcmp(name, "start") == 0 ||
        strcmp(name, "end") == 0)
        return h_rnd(a->rng, 2) ? "1-1" : "0";
    if (strstr(name, "group"))
        return "g1";
    if (strstr(name, "consumer"))
        return "c1";
    if (strstr(name, "channel"))
        return "ch1";
    if (strcmp(name, "script") == 0)
        return "return redis.call('exists', KEYS[1] or 'x')";
    if (strstr(name, "sha1"))
        return "0000000000000000000000000000000000000000";
    if (strstr(name, "lib") || strstr(name, "function"))
        return "nosuchlib";
    return h_rnd(a->rng, 3) ? "v1" : "2";
}

static void gen_args(struct ev_argv *a, const struct h_rv *args);

/* One value of argument arg (a map of its docs). */
static void gen_value(struct ev_argv *a, const struct h_rv *arg)
{
    char type[32], name[64];
    text_of(map_get(arg, "type"), type, sizeof type);
    text_of(map_get(arg, "name"), name, sizeof name);
    if (strcmp(type, "key") == 0) {
        push(a, key_for(a));
    } else if (strcmp(type, "integer") == 0) {
        if (strstr(name, "numkeys")) {
            a->numkeys_at = a->n;
            push(a, "1");
        } else if (strstr(name, "timeout") || strstr(name, "milliseconds") ||
                   strcmp(name, "block") == 0) {
            push(a, "10");
        } else {
            push(a, h_rnd(a->rng, 4) ? "1" : "-1");
        }
    } else if (strcmp(type, "double") == 0) {
        push(a, strstr(name, "timeout") ? "0.01" : h_rnd(a->rng, 2) ? "1.5" : "2");
    } else if (strcmp(type, "unix-time") == 0) {
        push(a, "4102444800");
    } else if (strcmp(type, "pattern") == 0) {
        push(a, "{ev}*");
    } else if (strcmp(type, "pure-token") == 0) {
        /* its token was pushed */
    } else if (strcmp(type, "oneof") == 0) {
        const struct h_rv *subs = map_get(arg, "arguments");
        if (subs && subs->num) {
            const struct h_rv *one = &subs->elem[h_rnd(a->rng, (unsigned)subs->num)];
            const struct h_rv *tok = map_get(one, "token");
            if (tok) {
                char t[64];
                text_of(tok, t, sizeof t);
                push(a, t);
            }
            gen_value(a, one);
        }
    } else if (strcmp(type, "block") == 0) {
        gen_args(a, map_get(arg, "arguments"));
    } else {
        push(a, string_for(a, name));
    }
}

/* The arguments of a docs' argument list, in order. */
static void gen_args(struct ev_argv *a, const struct h_rv *args)
{
    for (long long i = 0; args && i < args->num; i++) {
        const struct h_rv *arg = &args->elem[i], *flags = map_get(arg, "flags");
        const struct h_rv *tok = map_get(arg, "token"), *t = map_get(arg, "type");
        int optional = has_string(flags, "optional"), multiple = has_string(flags, "multiple");
        int multiple_token = has_string(flags, "multiple_token");
        char token[64];
        text_of(tok, token, sizeof token);
        if (optional && (!a->full || h_rnd(a->rng, 2)))
            continue;
        int reps = multiple && a->full ? 1 + (int)h_rnd(a->rng, 2) : 1;
        for (int r = 0; r < reps; r++) {
            if (tok && (r == 0 || multiple_token))
                push(a, token);
            gen_value(a, arg);
        }
        if (rv_is(t, "key") && multiple && a->numkeys_at >= 0) {    /* numkeys counts them */
            snprintf(a->v[a->numkeys_at], EV_ARG_MAX, "%d", reps);
            a->numkeys_at = -1;
        }
    }
}

/* ---------- both sides ---------- */

/* The same keys on both sides, all of tag {ev}. */
static void seed_keys(const struct h_node *n)
{
    redisContext *c = h_connect_node(n);
    static const char *const setup[] = {
        "DEL {ev}s {ev}l {ev}h {ev}S {ev}z {ev}g {ev}x {ev}p {ev}none {ev}v1 {ev}2",
        "SET {ev}s hello", "RPUSH {ev}l a b c", "HSET {ev}h f1 v1 f2 2", "SADD {ev}S m1 m2",
        "ZADD {ev}z 1 m1 2 m2", "GEOADD {ev}g 13.36 38.11 m1 15.08 37.50 m2",
        "XADD {ev}x 1-1 f v", "XGROUP CREATE {ev}x g1 0", "PFADD {ev}p a b",
    };
    for (size_t i = 0; i < sizeof setup / sizeof setup[0]; i++) {
        redisReply *r = h_cmd(c, setup[i]);
        ck_assert_msg(r->type != REDIS_REPLY_ERROR, "%s: %s", setup[i], r->str);
        freeReplyObject(r);
    }
    redisFree(c);
}

/* The bytes a new connection to n gets for argv then PING <token> (RESP3:
 * after HELLO 3, whose reply is left out), up to the token's reply. */
static size_t exchange(const struct h_node *n, const struct ev_argv *a, int resp3, char **buf,
                       size_t *cap, const char *who)
{
    int fd = h_raw_connect(n);
    char *req = malloc(EV_MAX_ARGV * (EV_ARG_MAX + 32) + 256);
    size_t len = 0, got = 0, start = 0;
    ck_assert_ptr_nonnull(req);
    if (resp3)
        len += (size_t)sprintf(req + len, "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n");
    len += (size_t)sprintf(req + len, "*%d\r\n", a->n);
    for (int i = 0; i < a->n; i++)
        len += (size_t)sprintf(req + len, "$%zu\r\n%s\r\n", strlen(a->v[i]), a->v[i]);
    len += (size_t)sprintf(req + len, "*2\r\n$4\r\nPING\r\n$%zu\r\n%s\r\n", strlen(EV_TOKEN),
                           EV_TOKEN);
    h_raw_send(fd, req, len);
    free(req);
    long long deadline = h_now_ms() + 5000;
    int skip = resp3;
    for (;;) {
        long one = h_resp_parse(*buf + start, got - start, NULL);
        ck_assert_msg(one >= 0, "%s: %s sent a malformed reply: %s", a->cmd->fullname, who,
                      h_esc(*buf + start, got - start));
        if (one > 0) {
            int token = memmem(*buf + start, (size_t)one, EV_TOKEN, strlen(EV_TOKEN)) != NULL;
            if (skip) {                         /* HELLO 3's map: the id differs */
                memmove(*buf, *buf + one, got - (size_t)one);
                got -= (size_t)one;
                skip = 0;
                continue;
            }
            start += (size_t)one;
            if (token)
                break;
            continue;
        }
        long k = h_recv_more(fd, buf, cap, got, deadline);
        ck_assert_msg(k > 0, "%s: no token from %s within 5 s (%s)", a->cmd->fullname, who,
                      h_esc(*buf, got));
        got += (size_t)k;
    }
    close(fd);
    return start;
}

static int byte_cmp(const void *x, const void *y)
{
    return *(const char *)x - *(const char *)y;
}

/* One invocation on both sides: 1 when the replies are the same (as the
 * command's tips say), else 0 with what differs in why. */
static int compare_once(const struct ev_argv *a, int resp3, char *why, size_t whylen)
{
    struct h_node px = h_proxy_addr();
    size_t capa = 1 << 16, capb = 1 << 16;
    char *ra = malloc(capa), *rb = malloc(capb);
    ck_assert(ra && rb);
    seed_keys(&ref.addr);
    seed_keys(&px);
    size_t la = exchange(&ref.addr, a, resp3, &ra, &capa, "the server");
    size_t lb = exchange(&px, a, resp3, &rb, &capb, "the proxy");
    int same;
    if (a->cmd->nondeterministic)
        same = ra[0] == rb[0];
    else if (a->cmd->unordered) {
        qsort(ra, la, 1, byte_cmp);
        qsort(rb, lb, 1, byte_cmp);
        same = la == lb && memcmp(ra, rb, la) == 0;
    } else
        same = la == lb && memcmp(ra, rb, la) == 0;
    if (DIFFERS(a->cmd->fullname))      /* well-formed, and the token came */
        same = 1;
    if (!same && a->cmd->admin)         /* refused, saying why */
        same = memmem(rb, lb, "is a dangerous command and is disabled on this proxy", 52) != NULL;
    if (!same)
        snprintf(why, whylen, "the server '%s', the proxy '%s'", h_esc(ra, la), h_esc(rb, lb));
    free(ra);
    free(rb);
    return same;
}

static void show(const struct ev_argv *a, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < a->n && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? " " : "", a->v[i]);
}

START_TEST(test_every_command_as_the_server)
{
    uint64_t rng = g_seed;
    int compared = 0, listed = 0, skipped = 0, failures = 0;
    char first[4096] = "";
    load_commands();
    for (int i = 0; i < g_ncmds; i++) {
        const struct ev_command *c = &g_cmds[i];
        if (UNSENT(c->fullname)) {
            skipped++;
            continue;
        }
        listed += DIFFERS(c->fullname) != NULL;
        for (int round = 0; round < 3; round++) {
            struct ev_argv a = { .numkeys_at = -1, .rng = &rng, .full = round > 0, .cmd = c };
            push(&a, c->words[0]);
            if (c->words[1][0])
                push(&a, c->words[1]);
            gen_args(&a, c->args);
            char why[2048];
            int resp3 = round == 2 ? (int)h_rnd(&rng, 2) : round;
            compared++;
            if (compare_once(&a, resp3, why, sizeof why))
                continue;
            if (!failures++) {
                char text[1024];
                show(&a, text, sizeof text);
                snprintf(first, sizeof first, "%s (RESP%d): %s", text, resp3 ? 3 : 2, why);
            }
            fprintf(stderr, "differs: %s in RESP%d: %.300s\n", c->fullname, resp3 ? 3 : 2, why);
        }
    }
    fprintf(stderr, "every command (%s): %d commands, %d sent %d times in all, %d left unsent, "
            "%d listed as differing\n", h_server(), g_ncmds, g_ncmds - skipped, compared, skipped,
            listed);
    ck_assert_msg(failures == 0, "%d replies differ (seed %llu); the first: %s", failures,
                  (unsigned long long)g_seed, first);
    h_rv_free(&g_docs);
    h_rv_free(&g_info);
    free(g_docs_bytes);
    free(g_info_bytes);
}
END_TEST

static void setup(void)
{
    h_ref_start(&ref, "every-command-ref", NULL);
}

static void teardown(void)
{
    h_proxy_stop(&ref);
}

int main(void)
{
    g_seed = h_run_seed("TAGPROXY_EVERY_SEED", "every command");
    Suite *s = suite_create("every command");
    TCase *tc = tcase_create("as the server");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_every_command_as_the_server);
    suite_add_tcase(s, tc);
    return h_run(s);
}
