/*
 * requirepass: before AUTH nothing runs and every reply is the one a real
 * redis-server 7.0 started with the same --requirepass gives; AUTH, AUTH
 * default, HELLO 2 AUTH, wrong passwords, the unauthenticated protocol
 * limits (10 arguments, 16384-byte bulks), RESET, and AUTH on a proxy
 * without a password.
 *
 * Each test starts an extra proxy with --requirepass and a reference
 * redis-server (standalone, the same password) on free ports, sends both the
 * same bytes and compares the replies byte for byte; each table row also
 * states Redis 7.0's words, so the reference itself is checked. Both
 * processes die with the test (PR_SET_PDEATHSIG; Check kills the test's
 * process group) and are stopped by PID in the teardown.
 */
#include "harness.h"

#define PASS "tp-auth-secret"

#define NOAUTH "-NOAUTH Authentication required.\r\n"
#define WRONGPASS "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
/* Redis 7.0's words; 7.2 writes "HELLO <proto> AUTH <user> <pass>". */
#define NOAUTH_HELLO "-NOAUTH HELLO must be called with the client already authenticated, " \
    "otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client " \
    "and select the RESP protocol version at the same time\r\n"
#define NOPASS "-ERR AUTH <password> called without any password configured for the " \
    "default user. Are you sure your configuration is correct?\r\n"
#define UNAUTH_MULTIBULK "-ERR Protocol error: unauthenticated multibulk length\r\n"
#define UNAUTH_BULK "-ERR Protocol error: unauthenticated bulk length\r\n"

static struct h_proxy proxy;    /* the proxy under test, --requirepass PASS or none */
static struct h_proxy ref;      /* the reference redis-server, same password */

/* ---------- processes ---------- */

/* The reference redis-server (h_ref_start waits with h_answers, as
 * proxy_start does: h_proxy_start waits for PONG, which a proxy with a
 * password never says). */
static void ref_start(const char *pass)
{
    h_ref_start(&ref, "redis-ref", pass);
}

static void proxy_start(const char *pass)
{
    char seed[128];
    const char *const args[] = { pass ? "--requirepass" : NULL, pass, NULL };

    h_place_named(&proxy, "proxy-auth");
    h_seed(seed, sizeof(seed));
    h_proxy_launch(&proxy, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    h_spawn_wait(&proxy, h_answers, 20000, h_env("TAGPROXY_TEST_BIN"));
}

static void setup_with_password(void)
{
    ref_start(PASS);
    proxy_start(PASS);
}

/* The proxy under test is then the suite's own proxy, without a password. */
static void setup_without_password(void)
{
    ref_start(NULL);
    memset(&proxy, 0, sizeof(proxy));
    proxy.addr = h_proxy_addr();
}

static void teardown(void)
{
    h_proxy_stop(&proxy);
    h_proxy_stop(&ref);
}

/* ---------- raw RESP ---------- */

/* A multibulk request from words split at blanks (no word holds one). */
static size_t words_req(const char *words, char *out, size_t size)
{
    char body[4096];
    size_t used = 0;
    int n = 0;

    for (const char *w = words; *w != '\0';) {
        size_t len = strcspn(w, " ");
        int k = snprintf(body + used, sizeof(body) - used, "$%zu\r\n%.*s\r\n", len, (int)len, w);
        ck_assert_msg(k > 0 && (size_t)k < sizeof(body) - used, "request too long");
        used += (size_t)k;
        n++;
        w += len;
        w += strspn(w, " ");
    }
    H_FMT(out, size, "*%d\r\n%s", n, body);
    return strlen(out);
}

/* Sends req on fd and reads nreplies replies into buf (NUL-terminated),
 * or what came until the peer closed or 3 s passed without a byte. */
static size_t ask_raw(int fd, const char *req, size_t len, int nreplies, char *buf, size_t size)
{
    size_t got = 0;

    h_raw_send(fd, req, len);
    buf[0] = '\0';
    for (;;) {
        struct pollfd pfd = { fd, POLLIN, 0 };
        size_t at = 0, one;
        ssize_t n;
        int complete = 0;

        while (complete < nreplies && (one = h_resp_complete(buf + at, got - at)) > 0) {
            at += one;
            complete++;
        }
        if (complete == nreplies || got + 1 >= size || poll(&pfd, 1, 3000) <= 0)
            break;
        n = recv(fd, buf + got, size - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
        buf[got] = '\0';
    }
    return got;
}

/* Whether the peer closes fd within 2 s (reading and dropping anything). */
static int closes(int fd)
{
    char buf[256];
    int closed;

    h_raw_recv(fd, buf, sizeof(buf), NULL, 2000, &closed);
    return closed;
}

/* One connection to the reference server and one to the proxy. */
struct pair {
    int ref, px;
};

static struct pair pair_open(void)
{
    struct pair p = { h_raw_connect(&ref.addr), h_raw_connect(&proxy.addr) };
    return p;
}

static void pair_close(struct pair *p)
{
    close(p->ref);
    close(p->px);
}

/*
 * Sends req (nreplies commands) to both; the reference must answer want
 * (Redis 7.0's words) and the proxy proxy_want, which is want unless the
 * proxy differs on purpose (NULL).
 */
static void same_replies(struct pair *p, const char *req, size_t len, int nreplies,
                         const char *want, const char *proxy_want)
{
    static char a[65536], b[65536];

    ask_raw(p->ref, req, len, nreplies, a, sizeof(a));
    ask_raw(p->px, req, len, nreplies, b, sizeof(b));
    if (proxy_want == NULL)
        proxy_want = want;
    ck_assert_msg(strcmp(a, want) == 0, "for '%s' redis-server said '%s', the test expects '%s'",
                  h_esc_str(req), h_esc_str(a), h_esc_str(want));
    ck_assert_msg(strcmp(b, proxy_want) == 0, "for '%s' the proxy said '%s', redis-server '%s'",
                  h_esc_str(req), h_esc_str(b), h_esc_str(a));
}

static void same_words(struct pair *p, const char *words, const char *want)
{
    char req[4096];
    size_t len = words_req(words, req, sizeof(req));
    same_replies(p, req, len, 1, want, NULL);
}

/* Both peers close the connection after what was sent last. */
static void both_close(struct pair *p, const char *after)
{
    ck_assert_msg(closes(p->ref), "redis-server kept the connection open after '%s'", h_esc_str(after));
    ck_assert_msg(closes(p->px), "the proxy kept the connection open after '%s'", h_esc_str(after));
}

/* ---------- before AUTH ---------- */

/* What every request gets before AUTH, on Redis 7.0 and on the proxy. */
static const struct {
    const char *req;            /* words, or raw bytes when raw */
    int raw;
    const char *want;           /* Redis 7.0 */
    const char *proxy_want;     /* NULL: same as Redis */
    int closes;
} before_auth[] = {
    /* forwarded, split, answered locally, refused, not routed yet: all NOAUTH */
    { "GET k", 0, NOAUTH, NULL, 0 },
    { "SET k v", 0, NOAUTH, NULL, 0 },
    { "MGET a b c d e f", 0, NOAUTH, NULL, 0 },
    { "DEL a b c", 0, NOAUTH, NULL, 0 },
    { "PING", 0, NOAUTH, NULL, 0 },
    { "PING hello", 0, NOAUTH, NULL, 0 },
    { "ECHO hello", 0, NOAUTH, NULL, 0 },
    { "SELECT 0", 0, NOAUTH, NULL, 0 },
    { "INFO", 0, NOAUTH, NULL, 0 },
    { "DBSIZE", 0, NOAUTH, NULL, 0 },
    { "RANDOMKEY", 0, NOAUTH, NULL, 0 },
    { "KEYS *", 0, NOAUTH, NULL, 0 },
    { "TIME", 0, NOAUTH, NULL, 0 },
    { "COMMAND COUNT", 0, NOAUTH, NULL, 0 },
    { "COMMAND INFO get", 0, NOAUTH, NULL, 0 },
    { "CLIENT SETNAME bot", 0, NOAUTH, NULL, 0 },
    { "CLIENT ID", 0, NOAUTH, NULL, 0 },
    { "CLIENT LIST", 0, NOAUTH, NULL, 0 },
    { "CLUSTER INFO", 0, NOAUTH, NULL, 0 },
    { "CLUSTER SLOTS", 0, NOAUTH, NULL, 0 },
    { "READONLY", 0, NOAUTH, NULL, 0 },
    { "FLUSHALL", 0, NOAUTH, NULL, 0 },
    { "EVAL return 0", 0, NOAUTH, NULL, 0 },
    { "SUBSCRIBE ch", 0, NOAUTH, NULL, 0 },
    { "MOVE k 1", 0, NOAUTH, NULL, 0 },
    { "PING\r\n", 1, NOAUTH, NULL, 0 },                               /* inline */
    /* Redis checks existence and arity before authentication */
    { "NOSUCHCMD a", 0, "-ERR unknown command 'NOSUCHCMD', with args beginning with: 'a' \r\n",
      NULL, 0 },
    { "GET", 0, "-ERR wrong number of arguments for 'get' command\r\n", NULL, 0 },
    /* HELLO without AUTH */
    { "HELLO 2", 0, NOAUTH_HELLO, NULL, 0 },
    { "HELLO", 0, NOAUTH_HELLO, NULL, 0 },
    { "HELLO 2 SETNAME bot", 0, NOAUTH_HELLO, NULL, 0 },
    { "HELLO 3", 0, NOAUTH_HELLO, NULL, 0 },
    { "HELLO 3 SETNAME bot", 0, NOAUTH_HELLO, NULL, 0 },
    { "HELLO 4", 0, "-NOPROTO unsupported protocol version\r\n", NULL, 0 },
    /* wrong credentials */
    { "AUTH wrong", 0, WRONGPASS, NULL, 0 },
    { "AUTH default wrong", 0, WRONGPASS, NULL, 0 },
    { "AUTH bob " PASS, 0, WRONGPASS, NULL, 0 },
    { "AUTH " PASS "x", 0, WRONGPASS, NULL, 0 },
    { "HELLO 2 AUTH default wrong", 0, WRONGPASS, NULL, 0 },
    { "HELLO 2 AUTH bob " PASS, 0, WRONGPASS, NULL, 0 },
    { "AUTH a b c", 0, "-ERR syntax error\r\n", NULL, 0 },
    { "AUTH", 0, "-ERR wrong number of arguments for 'auth' command\r\n", NULL, 0 },
    /* no-auth commands */
    { "RESET", 0, "+RESET\r\n", NULL, 0 },
    { "QUIT", 0, "+OK\r\n", NULL, 1 },
    /* unauthenticated protocol limits: more than 10 arguments, bulks over 16384 */
    { "*11\r\n", 1, UNAUTH_MULTIBULK, NULL, 1 },
    { "*1000\r\n", 1, UNAUTH_MULTIBULK, NULL, 1 },
    { "*1\r\n$16385\r\n", 1, UNAUTH_BULK, NULL, 1 },
    { "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000\r\n", 1, UNAUTH_BULK, NULL, 1 },
    { "*10\r\n$4\r\nMGET\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\nf\r\n"
      "$1\r\ng\r\n$1\r\nh\r\n$1\r\ni\r\n", 1, NOAUTH, NULL, 0 },     /* 10: allowed */
};

START_TEST(test_before_auth)
{
    struct pair p = pair_open();
    const char *req = before_auth[_i].req;
    char buf[4096];
    size_t len = before_auth[_i].raw ? strlen(req) : words_req(req, buf, sizeof(buf));

    same_replies(&p, before_auth[_i].raw ? req : buf, len, 1, before_auth[_i].want,
                 before_auth[_i].proxy_want);
    if (before_auth[_i].closes)
        both_close(&p, req);
    else            /* still there, and still not authenticated, on both */
        same_words(&p, "GET k", NOAUTH);
    pair_close(&p);
}
END_TEST

/* A bulk of exactly 16384 bytes is still parsed (and refused with NOAUTH). */
START_TEST(test_bulk_at_the_limit)
{
    struct pair p = pair_open();
    static char req[20000];
    int n = snprintf(req, sizeof(req), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$16384\r\n");

    memset(req + n, 'x', 16384);
    memcpy(req + n + 16384, "\r\n", 2);
    same_replies(&p, req, (size_t)n + 16386, 1, NOAUTH, NULL);
    same_words(&p, "GET k", NOAUTH);
    pair_close(&p);
}
END_TEST

/* Before AUTH, writes (single, split across masters, deletes) reach no node. */
START_TEST(test_noauth_runs_nothing)
{
    struct h_topo t;
    redisContext *c = h_connect_extra(&proxy);
    char keys[3][128], survivor[128];
    redisReply *r;

    h_topo_load(&t);
    for (int m = 0; m < 3 && m < t.nmasters; m++)
        h_key_on_master(&t, m, h_prefix(), 0, keys[m], sizeof(keys[m]));
    h_key_on_master(&t, 0, h_prefix(), 1, survivor, sizeof(survivor));
    {
        redisContext *owner = h_connect_owner(&t, survivor);
        H_OK(owner, "SET %s here", survivor);
        redisFree(owner);
    }

    r = h_cmd(c, "SET %s v", keys[0]);
    H_EXPECT_ERR(r, "NOAUTH Authentication required.");
    freeReplyObject(r);
    r = h_cmd(c, "MSET %s 1 %s 2 %s 3", keys[0], keys[1], keys[2]);
    H_EXPECT_ERR(r, "NOAUTH Authentication required.");
    freeReplyObject(r);
    r = h_cmd(c, "INCR %s", keys[1]);
    H_EXPECT_ERR(r, "NOAUTH Authentication required.");
    freeReplyObject(r);
    r = h_cmd(c, "DEL %s %s", survivor, keys[2]);
    H_EXPECT_ERR(r, "NOAUTH Authentication required.");
    freeReplyObject(r);

    for (int m = 0; m < 3; m++) {
        redisContext *owner = h_connect_owner(&t, keys[m]);
        r = h_cmd(owner, "EXISTS %s", keys[m]);
        ck_assert_msg(r->type == REDIS_REPLY_INTEGER && r->integer == 0,
                      "'%s' exists on its master after a write without AUTH", keys[m]);
        freeReplyObject(r);
        redisFree(owner);
    }
    {
        redisContext *owner = h_connect_owner(&t, survivor);
        r = h_cmd(owner, "GET %s", survivor);
        H_EXPECT_BULK(r, "here");
        freeReplyObject(r);
        H_OK(owner, "SET %s gone EX 1", survivor);
        redisFree(owner);
    }
    redisFree(c);
}
END_TEST

/* ---------- AUTH ---------- */

START_TEST(test_auth_password_and_default_user)
{
    static const char *forms[] = { "AUTH " PASS, "AUTH default " PASS };
    struct h_topo t;
    char key[128], words[256];

    h_topo_load(&t);
    h_key_on_master(&t, 1, h_prefix(), 0, key, sizeof(key));
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        struct pair p = pair_open();
        redisContext *owner;
        redisReply *r;

        same_words(&p, forms[i], "+OK\r\n");
        H_FMT(words, sizeof(words), "SET %s v%zu", key, i);
        same_words(&p, words, "+OK\r\n");
        same_words(&p, "PING", "+PONG\r\n");
        /* a wrong password afterwards fails, and keeps the authentication */
        same_words(&p, "AUTH wrong", WRONGPASS);
        same_words(&p, "ECHO still", "$5\r\nstill\r\n");
        pair_close(&p);

        owner = h_connect_owner(&t, key);
        r = h_cmd(owner, "GET %s", key);
        ck_assert_msg(r->type == REDIS_REPLY_STRING && r->len == 2 && r->str[1] == '0' + (int)i,
                      "after '%s' the master holds %s", forms[i], h_show(r));
        freeReplyObject(r);
        r = h_cmd(owner, "DEL %s", key);
        freeReplyObject(r);
        redisFree(owner);
    }
}
END_TEST

/* The HELLO 2 map: field names in Redis's order; the values that do not
 * depend on the server (proto, mode, role, modules) as Redis gives them. */
static void check_hello_map(const redisReply *px, const redisReply *rf)
{
    static const char *fields[] = { "server", "version", "proto", "id", "mode", "role", "modules" };

    H_EXPECT_TYPE(rf, REDIS_REPLY_ARRAY);
    H_EXPECT_TYPE(px, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(rf->elements, 14);
    ck_assert_uint_eq(px->elements, 14);
    for (size_t i = 0; i < 7; i++) {
        const redisReply *k = px->element[2 * i], *v = px->element[2 * i + 1];
        const redisReply *rv = rf->element[2 * i + 1];
        H_EXPECT_BULK(k, fields[i]);
        H_EXPECT_BULK(rf->element[2 * i], fields[i]);
        ck_assert_msg(v->type == rv->type, "HELLO %s: proxy %s, redis %s", fields[i],
                      h_type_name(v->type), h_type_name(rv->type));
        if (strcmp(fields[i], "id") == 0 || strcmp(fields[i], "version") == 0)
            continue;
        if (v->type == REDIS_REPLY_INTEGER)
            ck_assert_msg(v->integer == rv->integer, "HELLO %s: proxy %lld, redis %lld",
                          fields[i], v->integer, rv->integer);
        else if (v->type == REDIS_REPLY_ARRAY)
            ck_assert_uint_eq(v->elements, rv->elements);
        else
            ck_assert_msg(v->len == rv->len && memcmp(v->str, rv->str, v->len) == 0,
                          "HELLO %s: proxy '%s', redis '%s'", fields[i], v->str, rv->str);
    }
}

START_TEST(test_hello_auth)
{
    redisContext *px = h_connect_extra(&proxy), *rf = h_connect_node(&ref.addr);
    redisReply *a, *b;

    a = h_cmd(px, "HELLO 2 AUTH default %s SETNAME hello-bot", PASS);
    b = h_cmd(rf, "HELLO 2 AUTH default %s SETNAME hello-bot", PASS);
    check_hello_map(a, b);
    freeReplyObject(a);
    freeReplyObject(b);
    a = h_cmd(px, "CLIENT GETNAME");
    H_EXPECT_BULK(a, "hello-bot");
    freeReplyObject(a);
    a = h_cmd(px, "GET %s:hello:missing", h_prefix());
    H_EXPECT_NIL(a);
    freeReplyObject(a);
    /* once authenticated, HELLO alone h_answers the map too */
    a = h_cmd(px, "HELLO 2");
    b = h_cmd(rf, "HELLO 2");
    check_hello_map(a, b);
    freeReplyObject(a);
    freeReplyObject(b);
    /* and the client id in it is CLIENT ID's */
    a = h_cmd(px, "HELLO");
    b = h_cmd(px, "CLIENT ID");
    H_EXPECT_TYPE(b, REDIS_REPLY_INTEGER);
    H_EXPECT_INT(a->element[7], b->integer);
    freeReplyObject(a);
    freeReplyObject(b);
    redisFree(px);
    redisFree(rf);
}
END_TEST

/* After AUTH in the same write, the limits for unauthenticated clients no
 * longer apply to the commands that follow it. */
START_TEST(test_limits_lifted_after_auth)
{
    struct pair p = pair_open();
    static char req[40000];
    char words[256], want[256];
    int n;

    n = snprintf(req, sizeof(req), "*2\r\n$4\r\nAUTH\r\n$%zu\r\n%s\r\n"
                 "*12\r\n$4\r\nMGET\r\n", strlen(PASS), PASS);
    for (int i = 0; i < 11; i++)
        n += snprintf(req + n, sizeof(req) - (size_t)n, "$14\r\n{tp-auth}:nk%02d\r\n", i);
    n = snprintf(want, sizeof(want), "+OK\r\n*11\r\n");
    for (int i = 0; i < 11; i++)
        n += snprintf(want + n, sizeof(want) - (size_t)n, "$-1\r\n");
    same_replies(&p, req, strlen(req), 2, want, NULL);

    n = snprintf(req, sizeof(req), "*3\r\n$3\r\nSET\r\n$%zu\r\n%s:big\r\n$30000\r\n",
                 strlen(h_prefix()) + 4, h_prefix());
    memset(req + n, 'y', 30000);
    memcpy(req + n + 30000, "\r\n", 2);
    same_replies(&p, req, (size_t)n + 30002, 1, "+OK\r\n", NULL);
    H_FMT(words, sizeof(words), "STRLEN %s:big", h_prefix());
    same_words(&p, words, ":30000\r\n");
    H_FMT(words, sizeof(words), "DEL %s:big", h_prefix());
    same_words(&p, words, ":1\r\n");
    pair_close(&p);
}
END_TEST

/* RESET: the connection is unauthenticated again, limits included. */
START_TEST(test_reset_drops_auth)
{
    struct pair p = pair_open();

    same_words(&p, "AUTH " PASS, "+OK\r\n");
    same_words(&p, "CLIENT SETNAME before-reset", "+OK\r\n");
    same_words(&p, "GET {tp-auth}:missing", "$-1\r\n");
    same_words(&p, "RESET", "+RESET\r\n");
    same_words(&p, "GET {tp-auth}:missing", NOAUTH);
    same_words(&p, "CLIENT GETNAME", NOAUTH);
    same_words(&p, "AUTH " PASS, "+OK\r\n");
    same_words(&p, "CLIENT GETNAME", "$-1\r\n");
    same_words(&p, "RESET", "+RESET\r\n");
    same_replies(&p, "*11\r\n", 5, 1, UNAUTH_MULTIBULK, NULL);
    both_close(&p, "*11 after RESET");
    pair_close(&p);
}
END_TEST

/* s with HELLO's id value (which differs between servers) taken out. */
static void drop_hello_id(char *s)
{
    char *id = strstr(s, "$2\r\nid\r\n:");
    ck_assert_ptr_nonnull(id);
    char *d = id + 9, *end = strchr(d, '\r');
    ck_assert_ptr_nonnull(end);
    memmove(d, end, strlen(end) + 1);
}

/* HELLO 3 AUTH logs in and switches to RESP3 at once: its map, then RESP3
 * replies (over node connections that speak it), as redis-server 7.0. */
START_TEST(test_hello3_auth)
{
    struct pair p = pair_open();
    static char a[4096], b[4096];
    char req[512];
    size_t len = words_req("HELLO 3 AUTH default " PASS " SETNAME r3-bot", req, sizeof(req));
    ask_raw(p.ref, req, len, 1, a, sizeof(a));
    ask_raw(p.px, req, len, 1, b, sizeof(b));
    drop_hello_id(a);
    drop_hello_id(b);
    ck_assert_msg(strcmp(a, b) == 0 && strncmp(b, "%7\r\n", 4) == 0,
                  "HELLO 3 AUTH: proxy '%s', redis-server '%s'", h_esc_str(b), h_esc_str(a));
    same_words(&p, "CLIENT GETNAME", "$6\r\nr3-bot\r\n");
    same_words(&p, "GET {tp-auth}:missing", "_\r\n");
    same_words(&p, "HSET {tp-auth}:h3 f v", ":1\r\n");
    same_words(&p, "HGETALL {tp-auth}:h3", "%1\r\n$1\r\nf\r\n$1\r\nv\r\n");
    same_words(&p, "DEL {tp-auth}:h3", ":1\r\n");
    same_words(&p, "RESET", "+RESET\r\n");
    same_words(&p, "GET {tp-auth}:missing", NOAUTH);
    pair_close(&p);
}
END_TEST

/* ---------- without a password ---------- */

static const struct {
    const char *req;
    const char *want;
} without_password[] = {
    { "AUTH anything", NOPASS },
    { "AUTH default anything", "+OK\r\n" },         /* the default user has nopass */
    { "AUTH bob anything", WRONGPASS },
    { "HELLO 2 AUTH bob anything", WRONGPASS },
    { "AUTH a b c", "-ERR syntax error\r\n" },
    { "PING", "+PONG\r\n" },
};

START_TEST(test_without_password)
{
    struct pair p = pair_open();

    for (size_t i = 0; i < sizeof(without_password) / sizeof(without_password[0]); i++)
        same_words(&p, without_password[i].req, without_password[i].want);
    /* nothing above closed or broke the connection; no multibulk limit */
    same_words(&p, "MGET {a}1 {a}2 {a}3 {a}4 {a}5 {a}6 {a}7 {a}8 {a}9 {a}10 {a}11",
               "*11\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n"
               "$-1\r\n$-1\r\n$-1\r\n");
    same_words(&p, "ECHO open", "$4\r\nopen\r\n");
    pair_close(&p);
}
END_TEST

START_TEST(test_hello_auth_without_password)
{
    redisContext *px = h_connect_extra(&proxy), *rf = h_connect_node(&ref.addr);
    redisReply *a = h_cmd(px, "HELLO 2 AUTH default anything");
    redisReply *b = h_cmd(rf, "HELLO 2 AUTH default anything");

    check_hello_map(a, b);
    freeReplyObject(a);
    freeReplyObject(b);
    redisFree(px);
    redisFree(rf);
}
END_TEST

static Suite *auth_suite(void)
{
    Suite *s = suite_create("auth");
    TCase *with = tcase_create("requirepass");
    TCase *without = tcase_create("no password");

    tcase_set_timeout(with, 60);
    tcase_add_checked_fixture(with, setup_with_password, teardown);
    tcase_add_loop_test(with, test_before_auth, 0,
                        (int)(sizeof(before_auth) / sizeof(before_auth[0])));
    tcase_add_test(with, test_bulk_at_the_limit);
    tcase_add_test(with, test_noauth_runs_nothing);
    tcase_add_test(with, test_auth_password_and_default_user);
    tcase_add_test(with, test_hello_auth);
    tcase_add_test(with, test_hello3_auth);
    tcase_add_test(with, test_limits_lifted_after_auth);
    tcase_add_test(with, test_reset_drops_auth);
    suite_add_tcase(s, with);

    tcase_set_timeout(without, 60);
    tcase_add_checked_fixture(without, setup_without_password, teardown);
    tcase_add_test(without, test_without_password);
    tcase_add_test(without, test_hello_auth_without_password);
    suite_add_tcase(s, without);
    return s;
}

int main(void)
{
    return h_run(auth_suite());
}
