/*
 * Random sessions, byte for byte against one redis-server.
 *
 * A connection's state is where a proxy most easily stops behaving like one
 * server: MULTI with anything queued (errors, blocking commands, WATCH),
 * WATCH broken by the client's own writes, QUIT with commands behind it,
 * RESET out of any state, subscribed mode and what it refuses, blocking
 * commands that time out in a pipeline, wrong arities and unknown commands
 * at any point. Each episode here is a random pipeline of such commands
 * (one in five written as inline commands, quoted where needed) on
 * keys of one hash tag (so the cluster can run all of it, as one server
 * would) but for the commands the proxy splits by slot (MGET, MSET, DEL,
 * EXISTS, UNLINK, TOUCH) outside MULTI, ending in RESET and ECHO <token>;
 * it is sent to the suite's proxy and to a standalone redis-server 7.0
 * started here, and everything each
 * sends back, up to the token (or to its close after QUIT), must be the same
 * bytes. The keys live on across episodes, so each starts from the state
 * the earlier ones left, the same on both sides.
 *
 * Half the episodes (drawn from the seeded RNG) are RESP3: they start with
 * HELLO 3, whose reply differs between the two only in the client's id (it
 * is compared with the id's digits taken out); everything after it is
 * compared byte for byte as in RESP2. There replies carry RESP3's types,
 * (un)subscribe confirmations are pushes, PING in subscribed mode answers
 * +PONG, and a subscribed client may run any command (the same templates,
 * unfiltered). The episode's closing RESET returns to RESP2, so the ECHO
 * token is a bulk in both.
 *
 * Left out, because one server and a cluster proxy legitimately differ:
 * PUBLISH (its count of receivers can see the proxy's subscriber
 * connection before the UNSUBSCRIBE on it lands); inside MULTI, SUBSCRIBE
 * and CLIENT REPLY (refused by the proxy, which says why: Redis's EXEC
 * array then lacks the replies REPLY turned off); QUIT after CLIENT REPLY
 * OFF or SKIP (redis-server 7.0 then closes only after a reply it never
 * writes, and reads nothing more: the proxy closes); HELLO and CLIENT
 * ID/LIST (server details); expiry times (EXPIRE sets 1000 s, beyond the
 * test's timeout, so no key expires on one side only and not on the
 * other); the order of set members and of UNSUBSCRIBE's replies (Redis's
 * hash order), so there is one channel and one pattern.
 *
 * TAGPROXY_DIFF_SEED=<n> replays a run.
 */
#include <stdint.h>

#include "harness.h"

#define DIFF_EPISODES   2500
#define DIFF_EPISODE_MAX 12
#define DIFF_WAIT_MS    5000
#define DIFF_TAGS       3

/*
 * Command templates, arguments split by '|'. K: a key of the episode's tag;
 * X: a key of another tag; V: a value; N: a small integer; N-1: a stream ID;
 * T: a blocking timeout; C: a channel; P: a channel pattern.
 */
static const char *const templates[] = {
    /* data */
    "SET|K|V", "SET|K|V|NX", "SET|K|V|XX|GET", "GET|K", "GETDEL|K", "DEL|K", "DEL|K|K",
    "EXISTS|K|K", "INCR|K", "INCRBY|K|N", "APPEND|K|V", "STRLEN|K", "MGET|K|K|K",
    "MSET|K|V|K|V", "LPUSH|K|V|V", "RPUSH|K|V", "LPOP|K", "RPOP|K|N", "LLEN|K",
    "LRANGE|K|0|-1", "LMOVE|K|K|RIGHT|LEFT", "HSET|K|f|V", "HGET|K|f", "HGETALL|K",
    "HINCRBY|K|f|N", "ZADD|K|N|m", "ZADD|K|N|n", "ZRANGE|K|0|-1|WITHSCORES", "ZPOPMIN|K",
    "TYPE|K", "RENAME|K|K", "SADD|K|V", "SCARD|K", "SISMEMBER|K|V", "TYPE|K",
    "GETEX|K", "GETEX|K|PERSIST", "SETNX|K|V", "GETSET|K|V", "SETRANGE|K|N|V", "GETRANGE|K|0|-1",
    "HDEL|K|f", "HLEN|K", "HEXISTS|K|f", "LINSERT|K|BEFORE|V|V", "LINDEX|K|N", "LSET|K|N|V",
    "LPOS|K|V", "LMPOP|2|K|K|RIGHT|COUNT|2", "SORT|K", "SORT|K|DESC|LIMIT|0|2",
    "ZSCORE|K|m", "ZINCRBY|K|N|m", "ZREM|K|m", "ZCARD|K", "ZMPOP|1|K|MIN", "ZRANK|K|n",
    "SETBIT|K|N|1", "GETBIT|K|N", "BITCOUNT|K", "PFADD|K|V|V", "PFCOUNT|K", "OBJECT|ENCODING|K",
    "EXPIRE|K|1000", "PERSIST|K", "COPY|K|K", "COPY|K|K|REPLACE", "UNLINK|K|K", "TOUCH|K",
    "SMOVE|K|K|V", "SINTERCARD|2|K|K", "SUNIONSTORE|K|K|K", "SREM|K|V",
    "XADD|K|N-1|f|V", "XADD|K|MAXLEN|~|N|N-2|f|V", "XLEN|K", "XRANGE|K|-|+", "XRANGE|K|(N-1|+",
    "XREVRANGE|K|+|-|COUNT|1", "XDEL|K|N-1", "XTRIM|K|MAXLEN|N", "XREAD|STREAMS|K|0",
    "XREAD|COUNT|1|BLOCK|50|STREAMS|K|$", "XGROUP|CREATE|K|g|0|MKSTREAM",
    "XREADGROUP|GROUP|g|c|COUNT|1|STREAMS|K|>", "XACK|K|g|N-1", "XPENDING|K|g",
    "EVAL|return redis.call('incr', KEYS[1])|1|K",
    "EVAL|return {1, {2, 'x'}, redis.call('exists', KEYS[1])}|1|K",
    "EVAL|return redis.error_reply('E1')|0",
    "EVALSHA|0000000000000000000000000000000000000000|0",
    /* split by slot (never inside MULTI, where keys must share one) */
    "MGET|K|X", "MGET|X|K|X", "DEL|X|K", "EXISTS|K|X|K", "MSET|K|V|X|V", "UNLINK|X", "TOUCH|K|X",
    /* blocking, timing out or served at once */
    "BLPOP|K|T", "BRPOP|K|K|T", "BLMOVE|K|K|LEFT|RIGHT|T", "BZPOPMIN|K|T", "BZMPOP|T|1|K|MAX",
    "XREAD|BLOCK|50|STREAMS|K|K|$|$", "XREADGROUP|GROUP|g|c|BLOCK|50|STREAMS|K|>",
    "BLMPOP|T|2|K|K|LEFT", "BLPOP|K|notanumber", "BLPOP|K|-1",
    /* transactions */
    "MULTI", "MULTI", "EXEC", "EXEC", "DISCARD", "WATCH|K", "WATCH|K|K", "UNWATCH",
    /* the connection */
    "PING", "PING|hello", "ECHO|V", "SELECT|0", "CLIENT|SETNAME|n1", "CLIENT|GETNAME",
    "RESET", "QUIT", "CLIENT|REPLY|SKIP", "CLIENT|REPLY|SKIP", "CLIENT|REPLY|OFF",
    "CLIENT|REPLY|ON",
    /* subscribed mode */
    "SUBSCRIBE|C", "SUBSCRIBE|C|C", "UNSUBSCRIBE", "UNSUBSCRIBE|C", "PSUBSCRIBE|P",
    "PUNSUBSCRIBE", "PUNSUBSCRIBE|P",
    /* wrong */
    "GET", "SET|K", "LPUSH|K", "MULTI|x", "EXEC|x", "DISCARD|x", "WATCH", "UNWATCH|x",
    "FOO|bar", "SUBSCRIBE", "RESET|x", "QUIT|x", "EVAL",
};

static const char *const values[] = { "1", "2", "x", "-5", "10", "" };
static const char *const ints[] = { "0", "1", "2", "-1", "3" };

static uint64_t g_seed;
static char g_run[64];
static struct h_proxy ref;


struct episode {
    char *bytes;
    size_t len, cap;
    int quits;
    int inline_mode;            /* commands as inline lines, not multibulk */
    int resp3;                  /* opens with HELLO 3 */
    char text[4096];
};

static void put(struct episode *e, const void *p, size_t n)
{
    if (e->len + n > e->cap) {
        e->cap = (e->len + n) * 2;
        e->bytes = realloc(e->bytes, e->cap);
    }
    memcpy(e->bytes + e->len, p, n);
    e->len += n;
}

/* One argument of an inline command: bare when it can be, else in double
 * quotes with escapes, as redis-server's sdssplitargs reads them. */
static void put_inline_arg(struct episode *e, const char *a)
{
    int bare = *a != '\0';
    for (const char *p = a; *p && bare; p++)
        bare = *p > ' ' && *p <= '~' && *p != '"' && *p != '\'' && *p != '\\';
    if (bare) {
        put(e, a, strlen(a));
        return;
    }
    put(e, "\"", 1);
    for (const char *p = a; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\')
            put(e, esc, (size_t)snprintf(esc, sizeof esc, "\\%c", *p));
        else if (*p >= ' ' && *p <= '~')
            put(e, p, 1);
        else
            put(e, esc, (size_t)snprintf(esc, sizeof esc, "\\x%02x", (unsigned char)*p));
    }
    put(e, "\"", 1);
}

static void put_command(struct episode *e, int argc, char argv[][256])
{
    char head[32];
    if (e->inline_mode) {
        for (int i = 0; i < argc; i++) {
            if (i)
                put(e, " ", 1);
            put_inline_arg(e, argv[i]);
        }
        put(e, "\r\n", 2);
        return;
    }
    put(e, head, (size_t)snprintf(head, sizeof head, "*%d\r\n", argc));
    for (int i = 0; i < argc; i++) {
        size_t n = strlen(argv[i]);
        put(e, head, (size_t)snprintf(head, sizeof head, "$%zu\r\n", n));
        put(e, argv[i], n);
        put(e, "\r\n", 2);
    }
}

/* One argument for a template's letter. */
static void fill(uint64_t *s, const char *t, int tag, char *out, size_t size)
{
    if (strcmp(t, "K") == 0)
        snprintf(out, size, "{%s-%d}:%c", g_run, tag, 'a' + h_rnd(s, 3));
    else if (strcmp(t, "X") == 0)       /* a key of another tag, another slot */
        snprintf(out, size, "{%s-%d}:%c", g_run,
                 (tag + 1 + (int)h_rnd(s, DIFF_TAGS - 1)) % DIFF_TAGS, 'a' + h_rnd(s, 3));
    else if (strcmp(t, "V") == 0)
        snprintf(out, size, "%s", H_PICK(s, values));
    else if (strcmp(t, "N") == 0)
        snprintf(out, size, "%s", H_PICK(s, ints));
    else if (strncmp(t, "N-", 2) == 0 || strncmp(t, "(N-", 3) == 0)    /* a stream ID */
        snprintf(out, size, "%s%u%s", t[0] == '(' ? "(" : "", 1 + h_rnd(s, 4), strchr(t, '-'));
    else if (strcmp(t, "T") == 0)
        snprintf(out, size, "0.05");
    else if (strcmp(t, "C") == 0)       /* one: UNSUBSCRIBE from all lists them in
                                          * Redis's hash order, which is no order */
        snprintf(out, size, "%s:ch", g_run);
    else if (strcmp(t, "P") == 0)
        snprintf(out, size, "%s:ch*", g_run);
    else
        snprintf(out, size, "%s", t);
}

static void make_episode(uint64_t *s, struct episode *e, const char *token)
{
    char argv[8][256];
    int tag = (int)h_rnd(s, DIFF_TAGS), n = 1 + (int)h_rnd(s, DIFF_EPISODE_MAX);
    size_t at = 0;

    e->len = 0;
    e->quits = 0;
    e->inline_mode = h_rnd(s, 5) == 0;
    e->resp3 = h_rnd(s, 2) == 0;
    e->text[0] = '\0';
    if (e->resp3) {
        snprintf(argv[0], sizeof argv[0], "HELLO");
        snprintf(argv[1], sizeof argv[1], "3");
        put_command(e, 2, argv);
        at += (size_t)snprintf(e->text, sizeof e->text, "HELLO 3\n");
    }
    int maybe_multi = 0;
    int replies_off = 0;        /* CLIENT REPLY OFF or SKIP seen: no QUIT (below) */
    for (int k = 0; k < n; k++) {
        char tmpl[256], *save = NULL;
        int argc = 0;
        /* inside MULTI the proxy refuses, saying why, what needs a
         * connection of its own or keys of several slots (docs/commands.md) */
        do
            snprintf(tmpl, sizeof tmpl, "%s", H_PICK(s, templates));
        while ((maybe_multi &&
                (strstr(tmpl, "SUBSCRIBE") || strstr(tmpl, "|X") || strstr(tmpl, "|REPLY|"))) ||
               (replies_off && strncmp(tmpl, "QUIT", 4) == 0));
        for (char *t = strtok_r(tmpl, "|", &save); t && argc < 8; t = strtok_r(NULL, "|", &save))
            fill(s, t, tag, argv[argc++], sizeof argv[0]);
        put_command(e, argc, argv);
        if (strcasecmp(argv[0], "QUIT") == 0)
            e->quits = 1;
        if (argc == 3 && strcmp(argv[1], "REPLY") == 0 && strcmp(argv[2], "ON") != 0)
            replies_off = 1;
        if (strcmp(argv[0], "MULTI") == 0)
            maybe_multi = 1;
        else if (!strcmp(argv[0], "EXEC") || (argc == 1 && (!strcmp(argv[0], "DISCARD") ||
                                                            !strcmp(argv[0], "RESET"))))
            maybe_multi = 0;        /* any EXEC ends MULTI: run, aborted or refused */
        if (k == 0 && e->inline_mode)
            at += (size_t)snprintf(e->text + at, sizeof e->text - at, "(inline)\n");
        for (int i = 0; i < argc && at + 80 < sizeof e->text; i++)
            at += (size_t)snprintf(e->text + at, sizeof e->text - at, "%s%s", i ? " " : "",
                                   argv[i]);
        if (at + 2 < sizeof e->text)
            e->text[at++] = '\n', e->text[at] = '\0';
    }
    snprintf(argv[0], sizeof argv[0], "RESET");
    put_command(e, 1, argv);
    snprintf(argv[0], sizeof argv[0], "ECHO");
    snprintf(argv[1], sizeof argv[1], "%s", token);
    put_command(e, 2, argv);
}

/*
 * What the server sends back to an episode: every byte up to and including
 * the token's bulk, or up to its close. *closed says it closed; a malformed
 * reply or DIFF_WAIT_MS of silence fails the test (who names the side).
 */
static size_t collect(int fd, const char *token, char **buf, size_t *cap, int *closed,
                      const char *who, const struct episode *e)
{
    size_t got = 0, at = 0;
    long long deadline = h_now_ms() + DIFF_WAIT_MS;
    *closed = 0;
    for (;;) {
        long one;
        struct h_rv v;
        while ((one = h_resp_parse(*buf + at, got - at, &v)) > 0) {
            int is_token = h_rv_is_token(&v, token);
            h_rv_free(&v);
            at += (size_t)one;
            if (is_token)
                return at;
        }
        ck_assert_msg(one == 0, "%s sent a malformed reply (%s) to:\n%s(seed %llu)", who,
                      h_esc(*buf + at, got - at), e->text, (unsigned long long)g_seed);
        long n = h_recv_more(fd, buf, cap, got, deadline);
        ck_assert_msg(n != -2, "%s: no token within %d ms; it sent '%s' to:\n%s(seed %llu)", who,
                      DIFF_WAIT_MS, h_esc(*buf, got), e->text, (unsigned long long)g_seed);
        if (n <= 0) {
            *closed = 1;
            return got;
        }
        got += (size_t)n;
    }
}

/* The first reply where a and b differ, for the failure message. */
static void first_difference(const char *a, size_t la, const char *b, size_t lb,
                             char *out, size_t size)
{
    size_t ia = 0, ib = 0;
    for (int k = 0;; k++) {
        long na = h_resp_parse(a + ia, la - ia, NULL), nb = h_resp_parse(b + ib, lb - ib, NULL);
        if (na <= 0 || nb <= 0 || na != nb || memcmp(a + ia, b + ib, (size_t)na) != 0) {
            snprintf(out, size, "reply %d: redis-server '%s', proxy '%s'", k + 1,
                     h_esc(a + ia, na > 0 ? (size_t)na : la - ia),
                     h_esc(b + ib, nb > 0 ? (size_t)nb : lb - ib));
            return;
        }
        ia += (size_t)na;
        ib += (size_t)nb;
    }
}

/*
 * The reply at buf[0..len) into out (size bytes, NUL-terminated) with the
 * digits of HELLO's "id" taken out: what may differ between two servers.
 * Returns 0 if the reply has no id.
 */
static int hello_masked(const char *buf, size_t len, char *out, size_t size)
{
    static const char id[] = "$2\r\nid\r\n:";
    const char *p = memmem(buf, len, id, sizeof id - 1);
    if (p == NULL || len >= size)
        return 0;
    size_t at = (size_t)(p - buf) + sizeof id - 1, skip = at;
    memcpy(out, buf, at);
    while (skip < len && buf[skip] >= '0' && buf[skip] <= '9')
        skip++;
    memcpy(out + at, buf + skip, len - skip);
    out[at + len - skip] = '\0';
    return 1;
}

START_TEST(test_random_sessions_as_redis)
{
    struct h_node proxy = h_proxy_addr();
    struct episode e = { 0 };
    size_t capa = 1 << 16, capb = 1 << 16;
    char *a = malloc(capa), *b = malloc(capb), token[64], where[1024];
    int fa = -1, fb = -1, quits = 0, resp3 = 0;

    g_seed = h_run_seed("TAGPROXY_DIFF_SEED", "differential");
    uint64_t rng = g_seed;
    H_FMT(g_run, sizeof g_run, "df%ld%lld", (long)getpid(), h_now_ms() % 1000000);
    h_ref_start(&ref, "redis-ref-diff", NULL);
    for (int i = 0; i < DIFF_EPISODES; i++) {
        int ca, cb;
        if (fa < 0) {
            fa = h_raw_connect(&ref.addr);
            fb = h_raw_connect(&proxy);
        }
        snprintf(token, sizeof token, "diff-token-%d-%u", i, (unsigned)h_rng_next(&rng));
        make_episode(&rng, &e, token);
        h_raw_send(fa, e.bytes, e.len);
        h_raw_send(fb, e.bytes, e.len);
        size_t la = collect(fa, token, &a, &capa, &ca, "redis-server", &e);
        size_t lb = collect(fb, token, &b, &capb, &cb, "the proxy", &e);
        size_t sa = 0, sb = 0;      /* where the byte-for-byte comparison starts */
        if (e.resp3) {              /* HELLO 3's map first: the same but for the id */
            char ma[2048], mb[2048];
            long na = h_resp_parse(a, la, NULL), nb = h_resp_parse(b, lb, NULL);
            ck_assert_msg(na > 0 && nb > 0 && a[0] == '%' &&
                          hello_masked(a, (size_t)na, ma, sizeof ma) &&
                          hello_masked(b, (size_t)nb, mb, sizeof mb) && strcmp(ma, mb) == 0,
                          "episode %d: HELLO 3 answered: redis-server '%s', proxy '%s' "
                          "(seed %llu: TAGPROXY_DIFF_SEED=%llu)", i,
                          h_esc(a, na > 0 ? (size_t)na : la), h_esc(b, nb > 0 ? (size_t)nb : lb),
                          (unsigned long long)g_seed, (unsigned long long)g_seed);
            sa = (size_t)na;
            sb = (size_t)nb;
            resp3++;
        }
        if (la - sa != lb - sb || memcmp(a + sa, b + sb, la - sa) != 0 || ca != cb) {
            first_difference(a + sa, la - sa, b + sb, lb - sb, where, sizeof where);
            ck_abort_msg("episode %d differs (%s, after HELLO 3's reply when RESP3): %s%s; "
                         "the episode:\n%s(seed %llu: TAGPROXY_DIFF_SEED=%llu)", i,
                         e.resp3 ? "RESP3" : "RESP2", where,
                         ca == cb ? "" : ca ? " (only redis-server closed)"
                                            : " (only the proxy closed)",
                         e.text, (unsigned long long)g_seed, (unsigned long long)g_seed);
        }
        ck_assert_msg(!ca || e.quits, "both closed after an episode without QUIT:\n%s", e.text);
        if (ca) {
            close(fa);
            close(fb);
            fa = fb = -1;
            quits++;
        }
    }
    fprintf(stderr, "differential: %d episodes (%d in RESP3), %d ended by QUIT\n", DIFF_EPISODES,
            resp3, quits);
    if (fa >= 0) {
        close(fa);
        close(fb);
    }
    free(a);
    free(b);
    free(e.bytes);
}
END_TEST

static void ref_stop(void)
{
    h_proxy_stop(&ref);
}

int main(void)
{
    Suite *s = suite_create("differential");
    TCase *tc = tcase_create("sessions");
    tcase_add_checked_fixture(tc, NULL, ref_stop);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_random_sessions_as_redis);
    suite_add_tcase(s, tc);
    return h_run(s);
}
