/*
 * Random commands on legacy names, through a layout proxy and on one
 * redis-server: the same replies, and listings that stay exact.
 *
 * test_layout_session runs one scripted bot session; this runs thousands
 * of random commands on a few keys of every family of the shipped layout
 * (conf/layouts/botmesh-v1.rules): indexed records (chats, contacts,
 * checkpoints, schedules, user data), the message log and its items, locks
 * and fences, turn counters, leaderships, and families kept as they are,
 * with plain ids and with ids drawn for the run from the bytes a layout
 * must encode (': { } * % space', UTF-8; printed with the seed).
 * Writes of every kind (SET, HSET, INCR, DEL, UNLINK, GETDEL, EXPIRE 0,
 * RENAME and COPY within a record's slot, MSET, scripts, MULTI/EXEC, list
 * and stream commands) are sent to a proxy with the layout and to a
 * standalone redis-server holding the legacy names as they are, one command
 * at a time, and each reply must be the same bytes. Commands of several
 * keys take them from one group that the layout keeps in one slot (a chat's
 * log and items, a lock and its fence, one user's data, one chat's
 * counters, one leadership), as a bot on a cluster must.
 *
 * Every LIST_EVERY commands, and at the end, KEYS and a whole SCAN with
 * MATCH for each family must list the same names on both (as sets: the
 * order is the server's): the proxy answers them from its indexes, so a
 * record written, renamed, copied or deleted without its index following
 * shows up here. TTLs stay far off (EX 100) or delete at once (EXPIRE 0).
 *
 * TAGPROXY_LAYOUT_SEED=<n> replays a run; TAGPROXY_LAYOUT_LIST_EVERY=1 with
 * it compares the listings after every command, to find the one that
 * broke them.
 */
#include <stdint.h>

#include "harness.h"

#define LR_COMMANDS     10000
#define LR_LIST_EVERY   150
#define LR_WAIT_MS      5000

/* Key groups: the names in one group share a slot under the layout. In a
 * name, '@' stands for an id drawn for the run that may hold ':' (the
 * greedy captures: chat, record, lock, leadership ids; a user's key) and
 * '#' for one that holds no ':' (one-segment captures: a user id), both
 * made of the bytes that need encoding: ': { } * % space', UTF-8. */
static const char *const groups[][4] = {
    { "msgs:c1", "msg:c1:m1", "msg:c1:m2", NULL },
    { "msgs:@", "msg:@:m1", "msg:@:m2", NULL },
    { "lock:l1", "lock:l1:fence", NULL },
    { "lock:@", "lock:@:fence", NULL },
    { "user:u1:ns:k1", "user:u1:ns:k2", "user:u1:prefs:lang", NULL },
    { "user:#:ns:@", "user:#:ns:k2", "user:#:#:lang", NULL },
    { "user:tg:42:ns:k1", "user:tg:42:ns:k2", NULL },  /* user "tg", namespace "42" */
    { "co:turn:c1:seq", "co:turn:c1:owner", "co:turn:c1:tix", NULL },
    { "co:turn:@:seq", "co:turn:@:serving", NULL },
    { "co:leader:n1", "co:leader:n1:term", NULL },
    { "co:leader:@", "co:leader:@:term", NULL },
    { "chat:1", NULL }, { "chat:tg:42", NULL }, { "chat:a:b", NULL }, { "chat:@", NULL },
    { "contact:7", NULL }, { "contact:u:2", NULL }, { "contact:@", NULL },
    { "checkpoint:x", NULL }, { "checkpoint:run-1", NULL }, { "checkpoint:@", NULL },
    { "schedule:s1", NULL }, { "schedule:#", NULL }, { "user:u2:ns:k1", NULL },
    { "conv:9", NULL }, { "conv:@", NULL }, { "lease:3", NULL },
};
#define NGROUPS ((int)(sizeof groups / sizeof groups[0]))

/* K: any key; M: a key of the command's group (several M: one group);
 * V: a value; N: a small integer; I: a stream ID. */
static const char *const templates[] = {
    "SET|K|V", "SET|K|V|EX|100", "SET|K|V|NX", "SET|K|V|XX|GET", "GET|K", "GETDEL|K",
    "GETEX|K|PERSIST", "SETNX|K|V", "APPEND|K|V", "STRLEN|K", "INCR|K", "INCRBY|K|N",
    "DEL|K", "DEL|M|M", "UNLINK|M|M", "EXISTS|K", "EXISTS|M|M|M", "TYPE|K",
    "EXPIRE|K|100", "EXPIRE|K|0", "PEXPIRE|K|0", "PERSIST|K", "TOUCH|K",
    "HSET|K|f|V", "HSET|K|f|V|g|V", "HGET|K|f", "HGETALL|K", "HDEL|K|f", "HINCRBY|K|g|N",
    "HLEN|K", "LPUSH|K|V", "RPUSH|K|V|V", "LPOP|K", "RPOP|K|N", "LRANGE|K|0|-1", "LLEN|K",
    "ZADD|K|N|m", "ZADD|K|N|n", "ZRANGE|K|0|-1|WITHSCORES", "ZREM|K|m", "ZPOPMIN|K",
    "SADD|K|V", "SCARD|K", "SREM|K|V",
    "RENAME|M|M", "RENAMENX|M|M", "COPY|M|M", "COPY|M|M|REPLACE", "MGET|M|M|M",
    "MSET|M|V|M|V", "MSETNX|M|V|M|V", "RPOPLPUSH|M|M", "LMOVE|M|M|LEFT|RIGHT",
    "SMOVE|M|M|V", "ZUNIONSTORE|M|2|M|M", "SUNIONSTORE|M|M|M", "LMPOP|2|M|M|LEFT",
    "BLPOP|M|M|0.02", "BZPOPMIN|K|0.02",
    "XADD|K|I|f|V", "XLEN|K", "XRANGE|K|-|+", "XREAD|STREAMS|M|M|0|0", "XDEL|K|I",
    "EVAL|return redis.call('set', KEYS[1], ARGV[1])|1|K|V",
    "EVAL|return redis.call('get', KEYS[1])|1|K",
    "EVAL|return redis.call('del', KEYS[1], KEYS[2])|2|M|M",
    "EVAL|return redis.call('exists', KEYS[1])|1|K",
    "MULTI", "EXEC", "DISCARD", "WATCH|M|M", "UNWATCH",
};

static const char *const values[] = { "1", "2", "x", "-3", "" };
static const char *const ints[] = { "0", "1", "2", "-1" };

static uint64_t g_seed;
static char g_prefix[64];
static char g_id[40], g_segment[40];    /* '@' and '#' in groups */

/* An id of 1 to 4 pieces; with_colon: ':' among them. No piece makes a
 * name end in a literal of a later rule (":fence", ":term", ":seq"...). */
static void draw_id(uint64_t *s, int with_colon, char *out, size_t size)
{
    static const char *const pieces[] = { "a", "7", "{x}", "*", " ", "%", "%41", "\xc3\xbc",
                                          "\xe7\x8c\xab", "}{", ":", "tg:" };
    size_t n = 1 + h_rnd(s, 4), at = 0;
    const size_t npieces = sizeof pieces / sizeof pieces[0] - (with_colon ? 0 : 2);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(out + at, size - at, "%s", pieces[h_rnd(s, (unsigned)npieces)]);
    if (with_colon && strchr(out, ':') == NULL)
        snprintf(out + at, size - at, ":b");
}

/* prefix:name with '@' and '#' replaced, into out. */
static void expand_name(const char *name, char *out, size_t size)
{
    size_t at = (size_t)snprintf(out, size, "%s:", g_prefix);
    for (const char *c = name; *c && at < size; c++) {
        const char *with = *c == '@' ? g_id : *c == '#' ? g_segment : NULL;
        if (with)
            at += (size_t)snprintf(out + at, size - at, "%s", with);
        else
            out[at++] = *c;
    }
    out[at < size ? at : size - 1] = '\0';
}
static char g_recent[8][400];           /* the last commands, for a failure */

/* The commands before step (up to 7), one a line, into out. */
static void recent_commands(int step, char *out, size_t size)
{
    size_t n = 0;
    out[0] = '\0';
    for (int k = step - 6; k <= step; k++)
        if (k > 0 && n < size)
            n += (size_t)snprintf(out + n, size - n, "  %s\n", g_recent[k % 8]);
}
static struct h_proxy px, ref;


static int group_size(int g)
{
    int n = 0;
    while (n < 4 && groups[g][n])
        n++;
    return n;
}

/* ---------- one command, one reply ---------- */

struct conn {
    int fd;
    char *buf;
    size_t len, cap;
    const char *who;
};

static void send_argv(struct conn *c, int argc, char argv[][128])
{
    char out[4096];
    size_t n = (size_t)snprintf(out, sizeof out, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++)
        n += (size_t)snprintf(out + n, sizeof out - n, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
    ck_assert(n < sizeof out);
    h_raw_send(c->fd, out, n);
}

/* The next reply's bytes, at c->buf[0..return). */
static size_t read_reply(struct conn *c, const char *what)
{
    long long deadline = h_now_ms() + LR_WAIT_MS;
    long one;
    while ((one = h_resp_parse(c->buf, c->len, NULL)) == 0) {
        if (c->len == c->cap)
            c->buf = realloc(c->buf, c->cap *= 2);
        struct pollfd pfd = { c->fd, POLLIN, 0 };
        long long left = deadline - h_now_ms();
        ck_assert_msg(left > 0 && poll(&pfd, 1, (int)left) == 1,
                      "%s: no reply within %d ms to %s (seed %llu)", c->who, LR_WAIT_MS, what,
                      (unsigned long long)g_seed);
        ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
        ck_assert_msg(n > 0, "%s closed the connection at %s (seed %llu)", c->who, what,
                      (unsigned long long)g_seed);
        c->len += (size_t)n;
    }
    ck_assert_msg(one > 0, "%s: a malformed reply to %s: %s", c->who, what,
                  h_esc(c->buf, c->len));
    return (size_t)one;
}

static void consume(struct conn *c, size_t n)
{
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
}

/* v, shortly, appended at out[*at]: arrays as [a, b, ...]. */
static void show_value(const struct h_rv *v, char *out, size_t size, size_t *at)
{
    if (*at + 40 >= size)
        return;
    switch (v->type) {
    case ':':
        *at += (size_t)snprintf(out + *at, size - *at, "%lld", v->num);
        break;
    case '*':
        if (v->num < 0) {
            *at += (size_t)snprintf(out + *at, size - *at, "(null array)");
            break;
        }
        *at += (size_t)snprintf(out + *at, size - *at, "[");
        for (long long i = 0; i < v->num; i++) {
            if (i)
                *at += (size_t)snprintf(out + *at, size - *at, ", ");
            show_value(&v->elem[i], out, size, at);
        }
        *at += (size_t)snprintf(out + *at, size - *at, "]");
        break;
    case '$':
        if (v->num < 0) {
            *at += (size_t)snprintf(out + *at, size - *at, "(null bulk)");
            break;
        }
        /* fall through */
    default:
        *at += (size_t)snprintf(out + *at, size - *at, "%c'%.*s'", v->type == '$' ? ' ' : v->type,
                                (int)(v->len > 60 ? 60 : v->len), v->str);
    }
}

/* Where two replies first differ: the element (of an array reply) and
 * both values, into out. */
static void reply_difference(const char *a, size_t la, const char *b, size_t lb, char *out,
                             size_t size)
{
    struct h_rv va, vb;
    size_t at = 0;
    h_resp_parse(a, la, &va);
    h_resp_parse(b, lb, &vb);
    const struct h_rv *x = &va, *y = &vb;
    if (va.type == '*' && vb.type == '*' && va.num == vb.num) {
        for (long long i = 0; i < va.num; i++) {
            char sa[600], sb[600];
            size_t na = 0, nb = 0;
            show_value(&va.elem[i], sa, sizeof sa, &na);
            show_value(&vb.elem[i], sb, sizeof sb, &nb);
            if (strcmp(sa, sb) != 0 || va.elem[i].type != vb.elem[i].type) {
                at += (size_t)snprintf(out, size, "element %lld of %lld: ", i + 1, va.num);
                x = &va.elem[i];
                y = &vb.elem[i];
                break;
            }
        }
    }
    at += (size_t)snprintf(out + at, size - at, "redis-server ");
    show_value(x, out, size, &at);
    at += (size_t)snprintf(out + at, size - at, ", the proxy ");
    show_value(y, out, size, &at);
    h_rv_free(&va);
    h_rv_free(&vb);
}

/* ---------- listings, compared as sets ---------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in a listing reply (an array of bulks) added to names. */
static void add_names(const struct h_rv *arr, char ***names, int *n)
{
    ck_assert_msg(arr->type == '*', "a listing that is not an array");
    for (long long i = 0; i < arr->num; i++) {
        *names = realloc(*names, sizeof **names * (size_t)(*n + 1));
        (*names)[(*n)++] = strndup(arr->elem[i].str, arr->elem[i].len);
    }
}

/* Every name KEYS (scan = 0) or a whole SCAN MATCH lists for pattern, sorted
 * and joined by spaces into out. */
static void listing(struct conn *c, const char *pattern, int scan, int count, char *out,
                    size_t size)
{
    char argv[6][128], cursor[32] = "0", what[200];
    char **names = NULL;
    int n = 0;
    snprintf(what, sizeof what, "%s %s", scan ? "SCAN MATCH" : "KEYS", pattern);
    do {
        struct h_rv v;
        int argc = 0;
        if (scan) {
            snprintf(argv[argc++], 128, "SCAN");
            snprintf(argv[argc++], 128, "%s", cursor);
            snprintf(argv[argc++], 128, "MATCH");
            snprintf(argv[argc++], 128, "%s", pattern);
            snprintf(argv[argc++], 128, "COUNT");
            snprintf(argv[argc++], 128, "%d", count);
        } else {
            snprintf(argv[argc++], 128, "KEYS");
            snprintf(argv[argc++], 128, "%s", pattern);
        }
        send_argv(c, argc, argv);
        size_t len = read_reply(c, what);
        h_resp_parse(c->buf, len, &v);
        if (scan) {
            ck_assert_msg(v.type == '*' && v.num == 2, "%s: %s to %s", c->who,
                          h_esc(c->buf, len), what);
            snprintf(cursor, sizeof cursor, "%.*s", (int)v.elem[0].len, v.elem[0].str);
            add_names(&v.elem[1], &names, &n);
        } else {
            add_names(&v, &names, &n);
        }
        h_rv_free(&v);
        consume(c, len);
    } while (scan && strcmp(cursor, "0") != 0);
    if (n > 1)                          /* (names is NULL when there are none) */
        qsort(names, (size_t)n, sizeof *names, cmp_str);
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++)         /* SCAN may list a name twice; a set has it once */
        if (i == 0 || strcmp(names[i], names[i - 1]) != 0)
            at += (size_t)snprintf(out + at, size - at, "%s ", names[i]);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* quick: KEYS alone, no SCAN. */
static void check_listings(struct conn *a, struct conn *b, int step, int quick)
{
    /* the indexed families' listings come from their indexes: walked with a
     * small COUNT, many steps; the others scan every master's keyspace */
    static const char *const families[] = { "chat:", "contact:", "checkpoint:", "schedule:",
                                            "user:u1:", "user:", "", "msg", "co:", "lock:",
                                            "conv:" };
    const size_t indexed = 6;
    static char la[16384], lb[16384];
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
        char pattern[128];
        snprintf(pattern, sizeof pattern, "%s:%s*", g_prefix, families[f]);
        for (int scan = 0; scan < 2 - quick; scan++) {
            listing(a, pattern, scan, f < indexed ? 7 : 1000, la, sizeof la);
            listing(b, pattern, scan, f < indexed ? 7 : 1000, lb, sizeof lb);
            char before[3300];
            recent_commands(step, before, sizeof before);
            ck_assert_msg(strcmp(la, lb) == 0,
                          "after command %d, %s %s lists on redis-server: [%s]\non the proxy: "
                          "[%s]\nthe last commands:\n%s(seed %llu: TAGPROXY_LAYOUT_SEED=%llu)",
                          step, scan ? "SCAN MATCH" : "KEYS", pattern, la, lb, before,
                          (unsigned long long)g_seed, (unsigned long long)g_seed);
        }
    }
}

/* ---------- the run ---------- */

/* K: any group's key, or group's alone when pinned (inside MULTI or after
 * WATCH, where the cluster runs the keys of one slot only). */
static void fill(uint64_t *s, const char *t, int group, int pinned, char *out, size_t size)
{
    if (strcmp(t, "K") == 0) {
        int g = pinned ? group : (int)h_rnd(s, NGROUPS);
        expand_name(groups[g][h_rnd(s, (unsigned)group_size(g))], out, size);
    } else if (strcmp(t, "M") == 0) {
        int i = (int)h_rnd(s, (unsigned)group_size(group));
        expand_name(groups[group][i], out, size);
    } else if (strcmp(t, "V") == 0) {
        snprintf(out, size, "%s", H_PICK(s, values));
    } else if (strcmp(t, "N") == 0) {
        snprintf(out, size, "%s", H_PICK(s, ints));
    } else if (strcmp(t, "I") == 0) {
        snprintf(out, size, "%u-1", 1 + h_rnd(s, 5));
    } else {
        snprintf(out, size, "%s", t);
    }
}

START_TEST(test_random_layout_commands_as_redis)
{
    struct conn a = { .who = "redis-server" }, b = { .who = "the proxy" };
    int multi = 0, watching = 0, pinned_group = 0, list_every = LR_LIST_EVERY;
    if (getenv("TAGPROXY_LAYOUT_LIST_EVERY"))       /* 1: find the command that breaks one */
        list_every = atoi(getenv("TAGPROXY_LAYOUT_LIST_EVERY"));
    if (list_every < 1)
        list_every = LR_LIST_EVERY;

    g_seed = h_run_seed("TAGPROXY_LAYOUT_SEED", "layout random");
    uint64_t rng = g_seed;
    draw_id(&rng, 1, g_id, sizeof g_id);
    draw_id(&rng, 0, g_segment, sizeof g_segment);
    fprintf(stderr, "layout random: ids '%s' and '%s'\n", g_id, g_segment);
    h_ref_start(&ref, "redis-ref-layout", NULL);
    h_layout_proxy_start(&px, "lr", g_prefix, sizeof g_prefix);
    a.fd = h_raw_connect(&ref.addr);
    b.fd = h_raw_connect(&px.addr);
    a.cap = b.cap = 1 << 16;
    a.buf = malloc(a.cap);
    b.buf = malloc(b.cap);

    for (int step = 1; step <= LR_COMMANDS; step++) {
        char tmpl[256], argv[10][128], *save = NULL, line[400];
        int argc = 0, group = (int)h_rnd(&rng, NGROUPS), pinned = multi || watching;
        if (pinned)
            group = pinned_group;
        snprintf(tmpl, sizeof tmpl, "%s", H_PICK(&rng, templates));
        /* no WATCH inside MULTI, no nested MULTI: those errors are the
         * differential test's; here MULTI holds data commands */
        if (multi && (!strncmp(tmpl, "WATCH", 5) || !strcmp(tmpl, "MULTI")))
            snprintf(tmpl, sizeof tmpl, "EXEC");
        for (char *t = strtok_r(tmpl, "|", &save); t && argc < 10; t = strtok_r(NULL, "|", &save))
            fill(&rng, t, group, pinned, argv[argc++], sizeof argv[0]);
        if (!strcmp(argv[0], "MULTI")) {
            multi = 1;
            pinned_group = group;
        } else if (!strcmp(argv[0], "WATCH")) {
            watching = 1;
            pinned_group = group;
        } else if ((!strcmp(argv[0], "EXEC") || !strcmp(argv[0], "DISCARD")) && multi) {
            multi = watching = 0;       /* (without MULTI they leave the watch be) */
        } else if (!strcmp(argv[0], "UNWATCH") && !multi) {
            watching = 0;
        }
        size_t at = 0;
        for (int i = 0; i < argc && at + 130 < sizeof line; i++)
            at += (size_t)snprintf(line + at, sizeof line - at, "%s%s", i ? " " : "", argv[i]);
        snprintf(g_recent[step % 8], sizeof g_recent[0], "%s", line);

        send_argv(&a, argc, argv);
        send_argv(&b, argc, argv);
        size_t la = read_reply(&a, line), lb = read_reply(&b, line);
        if (la != lb || memcmp(a.buf, b.buf, la) != 0) {
            char before[3300], where[2000];
            recent_commands(step - 1, before, sizeof before);
            reply_difference(a.buf, la, b.buf, lb, where, sizeof where);
            ck_abort_msg("command %d, %s: %s; before it:\n%s(seed %llu: TAGPROXY_LAYOUT_SEED=%llu)",
                         step, line, where, before, (unsigned long long)g_seed,
                         (unsigned long long)g_seed);
        }
        consume(&a, la);
        consume(&b, lb);
        if (step % list_every == 0 && !multi)
            check_listings(&a, &b, step, list_every < LR_LIST_EVERY);
    }
    if (multi) {
        char argv[1][128] = { "DISCARD" };
        send_argv(&a, 1, argv);
        send_argv(&b, 1, argv);
        consume(&a, read_reply(&a, "DISCARD"));
        consume(&b, read_reply(&b, "DISCARD"));
    }
    check_listings(&a, &b, LR_COMMANDS, 0);
    close(a.fd);
    close(b.fd);
    free(a.buf);
    free(b.buf);
}
END_TEST

static void stop_all(void)
{
    h_proxy_stop(&px);
    h_proxy_stop(&ref);
}

int main(void)
{
    Suite *s = suite_create("layout random");
    TCase *tc = tcase_create("commands");
    tcase_add_checked_fixture(tc, NULL, stop_all);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_random_layout_commands_as_redis);
    suite_add_tcase(s, tc);
    return h_run(s);
}
