/*
 * Pub/Sub through the proxy (proxy/families/pubsub.c), against the real cluster:
 *
 *  - reply shapes: the same bytes sent to the proxy and to a standalone
 *    redis-server 7.0 (started here on a free port) get the same bytes back,
 *    (un)subscribe confirmations and their counts, PING in subscribed mode,
 *    the subscribed-mode error, RESET, QUIT, pipelined, and the messages;
 *  - the courier adapters' use: one connection publishing 10,000 messages,
 *    one subscribed with a pattern: every message, in order;
 *  - a subscriber whose subscriber connection is on another master than the
 *    one PUBLISH goes to still gets every message (the cluster propagates);
 *  - resubscription: the proxy's subscriber connection killed on its node
 *    (CLIENT KILL: a real failure of that connection), or its node paused
 *    (CLIENT PAUSE, seen by an extra proxy with a short node-timeout-ms):
 *    every channel and pattern is subscribed again on another master and the
 *    stream goes on, without an error;
 *  - sharded pub/sub: one connection per shard, CROSSSLOT as a node says
 *    it, SPUBLISH (inside MULTI too), SUNSUBSCRIBE closing the shard's
 *    connection, and a shard channel following its slot to another master
 *    and back;
 *  - no leak: clients that subscribe and leave (closed socket, QUIT,
 *    UNSUBSCRIBE, RESET) leave the nodes' connection count at its baseline;
 *  - a subscriber that does not read is disconnected past the pubsub class's
 *    output buffer limit, as Redis does;
 *  - with no master reachable, a SUBSCRIBE is still answered.
 *
 * What the proxy holds on a node is read from the node itself (CLIENT LIST:
 * flags=P and its sub/psub/ssub counts), never through the proxy.
 */
#include "harness.h"

#define LINE_MAX_LEN 1024

static char run[64];    /* unique channel prefix of this run */

static void run_init(void)
{
    if (run[0] == '\0')
        snprintf(run, sizeof(run), "ps%ld.%lld", (long)getpid(), h_now_ms() % 100000);
}

/* ---------- what the nodes say ---------- */

/* CLIENT LIST of node n (the caller frees it). */
static redisReply *client_list(const struct h_node *n)
{
    redisContext *c = h_connect_node(n);
    redisReply *r = h_cmd(c, "CLIENT LIST");
    redisFree(c);
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    return r;
}

/*
 * The pub/sub connections on node n whose line holds `needle` (e.g.
 * "sub=1 psub=0 ssub=0"); the id of the last one in *id when not NULL.
 */
static int pubsub_conns(const struct h_node *n, const char *needle, long long *id)
{
    redisReply *r = client_list(n);
    int count = 0;
    for (char *line = r->str; line && *line; ) {
        char *end = strchr(line, '\n');
        char one[LINE_MAX_LEN];
        size_t len = end ? (size_t)(end - line) : strlen(line);
        snprintf(one, sizeof(one), "%.*s", (int)len, line);
        if (strstr(one, " flags=P ") && (needle == NULL || strstr(one, needle))) {
            count++;
            if (id)
                *id = atoll(one + 3);       /* "id=..." comes first */
        }
        line = end ? end + 1 : NULL;
    }
    freeReplyObject(r);
    return count;
}

/* Every client connection of every node (each node's CLIENT LIST minus the
 * connection that asks). */
static int cluster_conns(void)
{
    struct h_node nodes[H_MAX_NODES];
    int n = h_nodes(nodes, H_MAX_NODES), total = 0;
    for (int i = 0; i < n; i++) {
        redisReply *r = client_list(&nodes[i]);
        for (const char *p = r->str; (p = strchr(p, '\n')) != NULL; p++)
            total++;
        total--;
        freeReplyObject(r);
    }
    return total;
}

/* The master (index in t) holding a pub/sub connection whose line holds
 * needle, polled for up to ms; -1 when none. skip: a master not to count. */
static int wait_sub_master(const struct h_topo *t, const char *needle, int skip, long ms,
                           long long *id)
{
    long long deadline = h_now_ms() + ms;
    do {
        for (int m = 0; m < t->nmasters; m++)
            if (m != skip && pubsub_conns(&t->masters[m], needle, id) > 0)
                return m;
        h_sleep_ms(20);
    } while (h_now_ms() < deadline);
    return -1;
}

/* Polls until no master holds a pub/sub connection (leftovers of a test
 * that just ended close asynchronously). */
static void wait_no_sub_conns(const struct h_topo *t)
{
    long long deadline = h_now_ms() + 5000;
    int left;
    do {
        left = 0;
        for (int m = 0; m < t->nmasters; m++)
            left += pubsub_conns(&t->masters[m], NULL, NULL);
        if (left == 0)
            return;
        h_sleep_ms(20);
    } while (h_now_ms() < deadline);
    ck_abort_msg("%d pub/sub connections still on the masters", left);
}

/* Polls (up to 5 s) until node n holds `want` pub/sub connections with needle. */
static void wait_conns(const struct h_node *n, const char *needle, int want)
{
    long long deadline = h_now_ms() + 5000;
    int have;
    while ((have = pubsub_conns(n, needle, NULL)) != want && h_now_ms() < deadline)
        h_sleep_ms(20);
    ck_assert_msg(have == want, "%s:%d holds %d pub/sub connections (%s), expected %d",
                  n->host, n->port, have, needle ? needle : "any", want);
}

static void kill_client(const struct h_node *n, long long id)
{
    redisContext *c = h_connect_node(n);
    redisReply *r = h_cmd(c, "CLIENT KILL ID %lld", id);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    redisFree(c);
}

/* ---------- messages ---------- */

/* The next reply is [kind, a, b] or [kind, a, b, c] with these strings
 * (c NULL: three elements). */
static void expect_push(redisContext *c, const char *kind, const char *a, const char *b,
                        const char *d)
{
    redisReply *r = h_get_reply(c);
    size_t n = d ? 4 : 3;
    const char *want[4] = { kind, a, b, d };
    ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == n,
                  "expected a %s push, got %s", kind, h_show(r));
    for (size_t i = 0; i < n; i++) {
        redisReply *e = r->element[i];
        if (i == 2 && d == NULL && e->type == REDIS_REPLY_INTEGER) {
            ck_assert_msg(e->integer == atoll(b), "%s count %lld, expected %s", kind,
                          e->integer, b);
            continue;
        }
        ck_assert_msg(e->type == REDIS_REPLY_STRING && e->len == strlen(want[i]) &&
                      memcmp(e->str, want[i], e->len) == 0,
                      "%s push element %zu: %s, expected '%s'", kind, i, h_show(e), want[i]);
    }
    freeReplyObject(r);
}

/* Publishes (on c) until sub gets the message; returns how many it took.
 * Messages published while a subscriber connection is being replaced may
 * be lost, as with Redis itself. */
static int publish_until_seen(redisContext *pub, redisContext *sub, const char *channel)
{
    struct timeval quick = { 0, 200000 }, normal = { H_IO_TIMEOUT_S, 0 };
    char payload[64];
    int tries;
    redisSetTimeout(sub, quick);
    for (tries = 1; tries <= 50; tries++) {
        snprintf(payload, sizeof(payload), "probe-%d", tries);
        freeReplyObject(h_cmd(pub, "PUBLISH %s %s", channel, payload));
        void *r = NULL;
        if (redisGetReply(sub, &r) == REDIS_OK && r != NULL) {
            redisReply *m = r;
            ck_assert_msg(m->type == REDIS_REPLY_ARRAY && m->elements == 3 &&
                          strcmp(m->element[0]->str, "message") == 0,
                          "expected a message, got %s", h_show(m));
            freeReplyObject(m);
            break;
        }
        ck_assert_msg(sub->err == REDIS_ERR_IO, "subscriber: %s", sub->errstr);
        sub->err = 0;           /* a timeout: try again */
        sub->errstr[0] = '\0';
    }
    redisSetTimeout(sub, normal);
    ck_assert_msg(tries <= 50, "no message reached the subscriber in 50 tries");
    return tries;
}

/* ---------- byte for byte against redis-server ---------- */

static struct h_proxy ref;

static void ref_start(void)
{
    h_ref_start(&ref, "redis-ref-pubsub", NULL);
}

static void ref_stop(void)
{
    h_proxy_stop(&ref);     /* SIGTERM by PID, then SIGKILL */
}

/* Inline bytes: words, "$" standing for the run prefix. */
static size_t expand(const char *tmpl, char *out, size_t size)
{
    size_t n = 0;
    for (const char *p = tmpl; *p; p++) {
        if (*p == '$') {
            n += (size_t)snprintf(out + n, size - n, "%s", run);
        } else {
            ck_assert(n + 1 < size);
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    return n;
}

/* Sends bytes then "PING <marker>"; reads until the marker's reply (either
 * shape) ends the input. */
static size_t exchange(int fd, const char *bytes, int step, char *buf, size_t size)
{
    char ping[64], tail[64];
    snprintf(ping, sizeof(ping), "PING mark%d\r\n", step);
    snprintf(tail, sizeof(tail), "mark%d\r\n", step);
    h_raw_sends(fd, bytes);
    h_raw_sends(fd, ping);
    size_t got = 0;
    long long deadline = h_now_ms() + 5000;
    buf[0] = '\0';
    while (h_now_ms() < deadline) {
        size_t tl = strlen(tail);
        if (got >= tl && memcmp(buf + got - tl, tail, tl) == 0)
            break;
        got += h_raw_recv(fd, buf + got, size - got, tail, 200, NULL);
    }
    return got;
}

START_TEST(shapes_as_redis)
{
    static const char *const steps[] = {
        "UNSUBSCRIBE\r\n", "PUNSUBSCRIBE\r\n", "SUNSUBSCRIBE\r\n",
        "SUBSCRIBE $a $b $a\r\n", "PSUBSCRIBE $p* $q*\r\n", "SSUBSCRIBE {$s}1 {$s}2\r\n",
        "GET $k\r\n", "CLIENT LIST\r\n", "PING\r\n", "PING hi\r\n", "PING a b\r\n",
        "SUBSCRIBE\r\n", "FOO bar\r\n", "UNSUBSCRIBE $x\r\n", "UNSUBSCRIBE $b\r\n",
        "@publish $a hello", "@publish $pz hi", "@publish $a bye",
        "UNSUBSCRIBE\r\n", "PUNSUBSCRIBE\r\n", "SUNSUBSCRIBE {$s}1 {$s}9\r\n", "GET $k\r\n",
        "SUNSUBSCRIBE\r\n", "GET $k\r\n", "SUBSCRIBE $a\r\n", "RESET\r\n", "GET $k\r\n",
        "SUBSCRIBE $c\r\nPING\r\nSUBSCRIBE $d\r\nUNSUBSCRIBE $c $d\r\nGET $k\r\n",
        "PSUBSCRIBE $p*\r\nSUBSCRIBE $e\r\n", "@publish $e one", "@publish $pe two",
        "QUIT\r\n",
    };
    struct h_node proxy = h_proxy_addr();
    run_init();
    ref_start();
    int fa = h_raw_connect(&ref.addr), fb = h_raw_connect(&proxy);
    redisContext *pa = h_connect_node(&ref.addr), *pb = h_connect_proxy();
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        static char a[65536], b[65536];
        char bytes[512];
        size_t la, lb;
        if (steps[i][0] == '@') {           /* another client publishes */
            char ch[128], msg[128];
            expand(steps[i] + 9, bytes, sizeof(bytes));
            ck_assert(sscanf(bytes, "%127s %127s", ch, msg) == 2);
            redisReply *ra = h_cmd(pa, "PUBLISH %s %s", ch, msg);
            redisReply *rb = h_cmd(pb, "PUBLISH %s %s", ch, msg);
            ck_assert_msg(ra->type == rb->type && ra->integer == rb->integer,
                          "PUBLISH %s: redis %s, proxy %s", ch, h_show(ra), h_show(rb));
            freeReplyObject(ra);
            freeReplyObject(rb);
            bytes[0] = '\0';
        } else {
            expand(steps[i], bytes, sizeof(bytes));
        }
        if (steps[i][0] == '@') {           /* the subscriber's message */
            char until[160];
            snprintf(until, sizeof(until), "%s\r\n", strrchr(steps[i], ' ') + 1);
            la = h_raw_recv(fa, a, sizeof(a), until, 3000, NULL);
            lb = h_raw_recv(fb, b, sizeof(b), until, 3000, NULL);
        } else if (strncmp(bytes, "QUIT", 4) == 0) {
            int ca, cb;
            h_raw_sends(fa, bytes);
            h_raw_sends(fb, bytes);
            la = h_raw_recv(fa, a, sizeof(a), NULL, 3000, &ca);
            lb = h_raw_recv(fb, b, sizeof(b), NULL, 3000, &cb);
            ck_assert_msg(ca && cb, "QUIT did not close (redis %d, proxy %d)", ca, cb);
        } else {
            la = exchange(fa, bytes, (int)i, a, sizeof(a));
            lb = exchange(fb, bytes, (int)i, b, sizeof(b));
        }
        ck_assert_msg(la == lb && memcmp(a, b, la) == 0,
                      "step %zu '%s':\n redis: %s\n proxy: %s", i, h_esc_str(bytes),
                      h_esc(a, la), h_esc(b, lb));
    }
    close(fa);
    close(fb);
    redisFree(pa);
    redisFree(pb);
    ref_stop();
}
END_TEST

/* ---------- the courier adapters' pattern ---------- */

#define COURIER_MESSAGES 10000

START_TEST(courier_pattern_in_order)
{
    redisContext *sub = h_connect_proxy(), *pub = h_connect_proxy();
    char pattern[128];
    run_init();
    snprintf(pattern, sizeof(pattern), "courier:%s:*", run);
    redisReply *r = h_cmd(sub, "PSUBSCRIBE %s", pattern);
    freeReplyObject(r);
    for (int i = 0; i < COURIER_MESSAGES; i++)
        redisAppendCommand(pub, "PUBLISH courier:%s:room%d %d", run, i % 7, i);
    for (int i = 0; i < COURIER_MESSAGES; i++) {
        r = h_get_reply(pub);
        /* the subscriber's connection is on the master PUBLISH goes to */
        H_EXPECT_INT(r, 1);
        freeReplyObject(r);
    }
    for (int i = 0; i < COURIER_MESSAGES; i++) {
        char channel[128], payload[16];
        snprintf(channel, sizeof(channel), "courier:%s:room%d", run, i % 7);
        snprintf(payload, sizeof(payload), "%d", i);
        expect_push(sub, "pmessage", pattern, channel, payload);
    }
    redisFree(sub);
    redisFree(pub);
}
END_TEST

/* A message published before the subscriber's UNSUBSCRIBE reached its
 * node is delivered, and before the confirmation, as one server writes it
 * before it reads the UNSUBSCRIBE: PUBLISH counted the subscriber. The
 * race is in the proxy's reading order of two node connections, so it is
 * run many times. */
START_TEST(message_before_unsubscribe_confirmation)
{
    redisContext *sub = h_connect_proxy(), *pub = h_connect_proxy();
    char channel[128], pattern[128], payload[16];
    run_init();
    snprintf(channel, sizeof(channel), "%s:leaving", run);
    snprintf(pattern, sizeof(pattern), "%s:pleaving:*", run);
    redisReply *r = h_cmd(sub, "SUBSCRIBE %s", channel);
    freeReplyObject(r);
    r = h_cmd(sub, "PSUBSCRIBE %s", pattern);
    freeReplyObject(r);
    for (int i = 0; i < 300; i++) {
        snprintf(payload, sizeof(payload), "%d", i);
        int patterns = i % 2;
        char target[160];
        snprintf(target, sizeof(target), patterns ? "%s:pleaving:x" : "%s:leaving", run);
        r = h_cmd(pub, "PUBLISH %s %s", target, payload);
        H_EXPECT_INT(r, 1);
        freeReplyObject(r);
        redisAppendCommand(sub, patterns ? "PUNSUBSCRIBE %s" : "UNSUBSCRIBE %s",
                           patterns ? pattern : channel);
        redisAppendCommand(sub, patterns ? "PSUBSCRIBE %s" : "SUBSCRIBE %s",
                           patterns ? pattern : channel);
        if (patterns) {
            expect_push(sub, "pmessage", pattern, target, payload);
            expect_push(sub, "punsubscribe", pattern, "1", NULL);
            expect_push(sub, "psubscribe", pattern, "2", NULL);
        } else {
            expect_push(sub, "message", channel, payload, NULL);
            expect_push(sub, "unsubscribe", channel, "1", NULL);
            expect_push(sub, "subscribe", channel, "2", NULL);
        }
    }
    redisFree(sub);
    redisFree(pub);
}
END_TEST

/* ---------- failures of the subscriber connection ---------- */

/* Kills sub's subscriber connection (it holds `needle`) on its master; the
 * proxy subscribes again on another master: its index. */
static int kill_and_follow(const struct h_topo *t, const char *needle)
{
    long long id = 0;
    int m = wait_sub_master(t, needle, -1, 3000, &id);
    ck_assert_msg(m >= 0, "no master holds the subscriber connection (%s)", needle);
    kill_client(&t->masters[m], id);
    int moved = wait_sub_master(t, needle, m, 5000, NULL);
    ck_assert_msg(moved >= 0, "the subscription (%s) was not made again on another master",
                  needle);
    return moved;
}

START_TEST(resubscribed_after_kill_on_other_master)
{
    struct h_topo t;
    char c1[128], c2[128], pat[128], p1[128];
    h_topo_load(&t);
    run_init();
    wait_no_sub_conns(&t);
    snprintf(c1, sizeof(c1), "kill:%s:c1", run);
    snprintf(c2, sizeof(c2), "kill:%s:c2", run);
    snprintf(pat, sizeof(pat), "kpat:%s:*", run);
    snprintf(p1, sizeof(p1), "kpat:%s:x", run);
    redisContext *sub = h_connect_proxy(), *pub = h_connect_proxy();
    freeReplyObject(h_cmd(sub, "SUBSCRIBE %s %s", c1, c2));
    freeReplyObject(h_get_reply(sub));
    freeReplyObject(h_cmd(sub, "PSUBSCRIBE %s", pat));
    int publish_master = h_topo_owner(&t, 0);       /* where keyless commands go */
    ck_assert_msg(wait_sub_master(&t, "sub=2 psub=1", -1, 3000, NULL) == publish_master,
                  "the subscriber connection is not on the master PUBLISH goes to");

    int moved = kill_and_follow(&t, "sub=2 psub=1");
    ck_assert_int_ne(moved, publish_master);
    /* PUBLISH through the proxy (to another master) reaches it */
    publish_until_seen(pub, sub, c1);
    for (int i = 0; i < 100; i++) {
        char payload[16];
        snprintf(payload, sizeof(payload), "after%d", i);
        const char *ch = i % 3 == 0 ? c1 : i % 3 == 1 ? c2 : p1;
        freeReplyObject(h_cmd(pub, "PUBLISH %s %s", ch, payload));
    }
    for (int i = 0; i < 100; i++) {
        char payload[16];
        snprintf(payload, sizeof(payload), "after%d", i);
        if (i % 3 == 2)
            expect_push(sub, "pmessage", pat, p1, payload);
        else
            expect_push(sub, "message", i % 3 == 0 ? c1 : c2, payload, NULL);
    }
    /* and a PUBLISH run on each master itself */
    for (int m = 0; m < t.nmasters; m++) {
        redisContext *direct = h_connect_node(&t.masters[m]);
        char payload[32];
        snprintf(payload, sizeof(payload), "direct%d", m);
        freeReplyObject(h_cmd(direct, "PUBLISH %s %s", c2, payload));
        expect_push(sub, "message", c2, payload, NULL);
        redisFree(direct);
    }
    /* still the client's counts */
    freeReplyObject(h_cmd(sub, "UNSUBSCRIBE %s", c1));
    redisFree(sub);
    redisFree(pub);
    wait_no_sub_conns(&t);
}
END_TEST

/* CLIENT PAUSE ends by itself: the node can never stay paused. */
#define PAUSE_MS 5000

START_TEST(resubscribed_when_node_paused)
{
    struct h_topo t;
    struct h_proxy p;
    char ch[128];
    const char *const args[] = { "--node-timeout-ms", "600", NULL };
    h_topo_load(&t);
    run_init();
    wait_no_sub_conns(&t);
    h_proxy_start(&p, args);
    snprintf(ch, sizeof(ch), "pause:%s", run);
    redisContext *sub = h_connect_extra(&p);
    freeReplyObject(h_cmd(sub, "SUBSCRIBE %s", ch));
    long long id;
    int m = wait_sub_master(&t, "sub=1 psub=0", -1, 3000, &id);
    ck_assert_int_ge(m, 0);

    redisContext *admin = h_connect_node(&t.masters[m]);
    long long paused_at = h_now_ms();
    H_OK(admin, "CLIENT PAUSE %d ALL", PAUSE_MS);
    int moved = wait_sub_master(&t, "sub=1 psub=0", m, PAUSE_MS - 1500, NULL);
    ck_assert_msg(moved >= 0, "no resubscription within %d ms of the pause", PAUSE_MS - 1500);
    ck_assert_msg(h_now_ms() - paused_at < PAUSE_MS, "the pause ended first");
    redisContext *pub = h_connect_node(&t.masters[moved]);
    publish_until_seen(pub, sub, ch);
    /* the subscriber is served meanwhile */
    redisReply *r = h_cmd(sub, "PING");
    ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 2, "PING: %s", h_show(r));
    freeReplyObject(r);
    redisFree(pub);
    redisFree(sub);
    redisFree(admin);
    /* later tests find the node serving: a PING waits the pause out */
    while (!h_pings(t.masters[m].host, t.masters[m].port)) {
        ck_assert_msg(h_now_ms() - paused_at < PAUSE_MS + 10000, "%s:%d does not answer PING "
                      "10 s after its pause ended", t.masters[m].host, t.masters[m].port);
        h_sleep_ms(20);
    }
    h_proxy_stop(&p);
    wait_no_sub_conns(&t);
}
END_TEST

/* ---------- sharded pub/sub ---------- */

START_TEST(sharded)
{
    struct h_topo t;
    char ta[64], tb[64], a[128], b[128], other[128];
    h_topo_load(&t);
    run_init();
    wait_no_sub_conns(&t);
    ck_assert_int_ge(t.nmasters, 2);
    /* two tags on two masters */
    int ma = h_topo_owner(&t, 100), mb = -1, slot_b = -1;
    for (int s = 0; s < H_SLOTS && mb < 0; s += 97)
        if (h_topo_owner(&t, s) != ma) {
            mb = h_topo_owner(&t, s);
            slot_b = s;
        }
    h_tag_for_slot(100, ta, sizeof(ta));
    h_tag_for_slot(slot_b, tb, sizeof(tb));
    snprintf(a, sizeof(a), "{%s}%s:a", ta, run);
    snprintf(b, sizeof(b), "{%s}%s:b", tb, run);
    snprintf(other, sizeof(other), "{%s}%s:z", tb, run);

    /* CROSSSLOT, as a cluster node answers it */
    redisContext *node = h_connect_node(&t.masters[ma]);
    redisContext *sub = h_connect_proxy(), *pub = h_connect_proxy();
    redisReply *rn = h_cmd(node, "SSUBSCRIBE %s %s", a, b);
    redisReply *rp = h_cmd(sub, "SSUBSCRIBE %s %s", a, b);
    H_EXPECT_ERR(rn, "CROSSSLOT");
    ck_assert_msg(rp->type == REDIS_REPLY_ERROR && strcmp(rn->str, rp->str) == 0,
                  "node: %s, proxy: %s", rn->str, h_show(rp));
    freeReplyObject(rn);
    freeReplyObject(rp);
    redisFree(node);

    freeReplyObject(h_cmd(sub, "SSUBSCRIBE %s", a));
    redisReply *r = h_cmd(sub, "SSUBSCRIBE %s %s", b, other);
    freeReplyObject(r);
    expect_push(sub, "ssubscribe", other, "3", NULL);
    ck_assert_int_eq(pubsub_conns(&t.masters[ma], "ssub=1", NULL), 1);
    ck_assert_int_eq(pubsub_conns(&t.masters[mb], "ssub=2", NULL), 1);

    r = h_cmd(pub, "SPUBLISH %s one", a);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    r = h_cmd(pub, "SPUBLISH %s two", b);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    /* two shards, two connections: nothing orders one's messages against
     * the other's (nor in Redis Cluster) */
    int seen_a = 0, seen_b = 0;
    for (int i = 0; i < 2; i++) {
        r = h_get_reply(sub);
        ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
                      strcmp(r->element[0]->str, "smessage") == 0, "got %s", h_show(r));
        seen_a += strcmp(r->element[1]->str, a) == 0 && strcmp(r->element[2]->str, "one") == 0;
        seen_b += strcmp(r->element[1]->str, b) == 0 && strcmp(r->element[2]->str, "two") == 0;
        freeReplyObject(r);
    }
    ck_assert_msg(seen_a == 1 && seen_b == 1, "smessages: %d of a, %d of b", seen_a, seen_b);

    /* the shard's connection closes with its last channel */
    r = h_cmd(sub, "SUNSUBSCRIBE %s", a);
    freeReplyObject(r);
    r = h_cmd(pub, "SPUBLISH %s gone", a);
    H_EXPECT_INT(r, 0);
    freeReplyObject(r);
    wait_conns(&t.masters[ma], NULL, 0);

    /* killed: subscribed again on the slot's master */
    long long id;
    ck_assert_int_eq(pubsub_conns(&t.masters[mb], "ssub=2", &id), 1);
    kill_client(&t.masters[mb], id);
    wait_conns(&t.masters[mb], "ssub=2", 1);
    r = h_cmd(pub, "SPUBLISH %s three", other);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    expect_push(sub, "smessage", other, "three", NULL);
    /* inside MULTI, with keys of its channel's slot, as a node queues it */
    char kb[160];
    snprintf(kb, sizeof(kb), "{%s}%s:k", tb, run);
    H_OK(pub, "MULTI");
    H_STATUS(pub, "QUEUED", "SET %s v", kb);
    H_STATUS(pub, "QUEUED", "SPUBLISH %s four", other);
    r = h_cmd(pub, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 2);
    H_EXPECT_INT(r->element[1], 1);
    freeReplyObject(r);
    expect_push(sub, "smessage", other, "four", NULL);
    /* a channel of another slot: CROSSSLOT at EXEC, nothing ran */
    H_OK(pub, "MULTI");
    H_STATUS(pub, "QUEUED", "DEL %s", kb);
    H_STATUS(pub, "QUEUED", "SPUBLISH %s never", a);
    H_ERR(pub, "CROSSSLOT", "EXEC");
    r = h_cmd(pub, "EXISTS %s", kb);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    /* SUNSUBSCRIBE across slots is refused like SSUBSCRIBE */
    r = h_cmd(sub, "SUNSUBSCRIBE %s %s", a, b);
    H_EXPECT_ERR(r, "CROSSSLOT");
    freeReplyObject(r);
    r = h_cmd(sub, "SUNSUBSCRIBE");
    freeReplyObject(r);
    freeReplyObject(h_get_reply(sub));
    r = h_cmd(sub, "GET %s", a);        /* out of subscribed mode */
    H_EXPECT_NIL(r);
    freeReplyObject(r);
    wait_conns(&t.masters[mb], NULL, 0);
    redisFree(sub);
    redisFree(pub);
}
END_TEST

/* ---------- connections ---------- */

START_TEST(no_connection_leak)
{
    struct h_topo t;
    h_topo_load(&t);
    run_init();
    wait_no_sub_conns(&t);
    /* the proxy's shared connections to every master exist already */
    redisContext *warm = h_connect_proxy();
    for (int m = 0; m < t.nmasters; m++) {
        char key[128];
        h_key_on_master(&t, m, run, 0, key, sizeof(key));
        freeReplyObject(h_cmd(warm, "GET %s", key));
    }
    freeReplyObject(h_cmd(warm, "PUBLISH %s:warm x", run));
    int baseline = cluster_conns();

    enum { CLIENTS = 24 };
    redisContext *c[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        c[i] = h_connect_proxy();
        freeReplyObject(h_cmd(c[i], "SUBSCRIBE leak:%s:%d", run, i));
        freeReplyObject(h_cmd(c[i], "PSUBSCRIBE leakp:%s:*", run));
        freeReplyObject(h_cmd(c[i], "SSUBSCRIBE {%d}leak:%s", i, run));
    }
    int during = cluster_conns();
    ck_assert_msg(during >= baseline + CLIENTS, "%d connections while subscribed, baseline %d",
                  during, baseline);
    for (int i = 0; i < CLIENTS; i++) {
        switch (i % 4) {
        case 0:                             /* just goes */
            break;
        case 1:
            freeReplyObject(h_cmd(c[i], "QUIT"));
            break;
        case 2: {                           /* unsubscribes from everything, stays */
            freeReplyObject(h_cmd(c[i], "UNSUBSCRIBE"));
            freeReplyObject(h_cmd(c[i], "PUNSUBSCRIBE"));
            freeReplyObject(h_cmd(c[i], "SUNSUBSCRIBE"));
            redisReply *r = h_cmd(c[i], "PING");
            H_EXPECT_STATUS(r, "PONG");
            freeReplyObject(r);
            continue;
        }
        case 3: {                           /* RESET, stays */
            redisReply *r = h_cmd(c[i], "RESET");
            H_EXPECT_STATUS(r, "RESET");
            freeReplyObject(r);
            continue;
        }
        }
        redisFree(c[i]);
        c[i] = NULL;
    }
    long long deadline = h_now_ms() + 5000;
    int now;
    while ((now = cluster_conns()) != baseline && h_now_ms() < deadline)
        h_sleep_ms(50);
    ck_assert_msg(now == baseline, "%d connections on the nodes, baseline %d", now, baseline);
    for (int i = 0; i < CLIENTS; i++)
        if (c[i])
            redisFree(c[i]);
    redisFree(warm);
}
END_TEST

START_TEST(slow_subscriber_disconnected)
{
    struct h_topo t;
    struct h_proxy p;
    const char *const args[] = { "--client-output-buffer-limit-pubsub", "256kb", "0", "0",
                                 NULL };
    char ch[128], buf[4096];
    h_topo_load(&t);
    run_init();
    wait_no_sub_conns(&t);
    h_proxy_start(&p, args);
    snprintf(ch, sizeof(ch), "slow:%s", run);

    /* a subscriber with a small receive buffer that stops reading */
    int fd = socket(AF_INET, SOCK_STREAM, 0), small = 4096;
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((unsigned short)p.addr.port) };
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    char req[256];
    snprintf(req, sizeof(req), "SUBSCRIBE %s\r\n", ch);
    h_raw_sends(fd, req);
    h_raw_recv(fd, buf, sizeof(buf), ":1\r\n", 3000, NULL);
    ck_assert_msg(strstr(buf, ":1\r\n") != NULL, "no confirmation: %s", h_esc_str(buf));

    redisContext *pub = h_connect_node(&t.masters[0]);
    redisContext *other = h_connect_extra(&p);
    static char payload[65536];
    memset(payload, 'x', sizeof(payload));
    for (int i = 0; i < 128; i++)           /* 8 MB the subscriber never reads */
        freeReplyObject(h_cmd(pub, "PUBLISH %s %b", ch, payload, sizeof(payload)));
    /* gone from the proxy's client list, and its subscriber connection too */
    long long deadline = h_now_ms() + 5000;
    int subscribed = 1;
    while (subscribed && h_now_ms() < deadline) {
        redisReply *r = h_cmd(other, "CLIENT LIST");
        subscribed = strstr(r->str, "flags=P") != NULL;
        freeReplyObject(r);
        if (subscribed)
            h_sleep_ms(50);
    }
    ck_assert_msg(!subscribed, "the subscriber that does not read is still connected");
    wait_no_sub_conns(&t);
    redisReply *r = h_cmd(other, "PING");       /* others unaffected */
    H_EXPECT_STATUS(r, "PONG");
    freeReplyObject(r);
    close(fd);
    redisFree(other);
    redisFree(pub);
    h_proxy_stop(&p);
}
END_TEST

/* Regression: with no master reachable, a SUBSCRIBE waited for its
 * confirmation for as long as the outage lasted. After retry-attempts
 * failed resubscriptions it is answered (the proxy keeps trying). The
 * masters are made unreachable with address-map to ports nothing listens
 * on; the seeds still answer CLUSTER SLOTS. */
START_TEST(subscribe_answered_when_no_master)
{
    struct h_topo t;
    struct h_proxy p;
    char map[H_MAX_NODES][2][64];
    const char *args[8 + 2 * H_MAX_NODES];
    int n = 0;
    h_topo_load(&t);
    run_init();
    args[n++] = "--retry-attempts";
    args[n++] = "2";
    args[n++] = "--address-map";
    for (int m = 0; m < t.nmasters; m++) {
        snprintf(map[m][0], sizeof(map[m][0]), "%s:%d", t.masters[m].host, t.masters[m].port);
        snprintf(map[m][1], sizeof(map[m][1]), "127.0.0.1:%d", h_free_port());
        args[n++] = map[m][0];
        args[n++] = map[m][1];
    }
    args[n] = NULL;
    h_proxy_start(&p, args);
    redisContext *c = h_connect_extra(&p);
    /* answered while the attempts go on: a SUBSCRIBE that waited for them
     * would wait for ever, which h_cmd reports as a hang (H_IO_TIMEOUT_S) */
    redisReply *r = h_cmd(c, "SUBSCRIBE down:%s", run);
    ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
                  r->element[2]->integer == 1, "SUBSCRIBE: %s", h_show(r));
    freeReplyObject(r);
    r = h_cmd(c, "PING");
    ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 2, "PING: %s", h_show(r));
    freeReplyObject(r);
    r = h_cmd(c, "UNSUBSCRIBE");
    ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
                  r->element[2]->integer == 0, "UNSUBSCRIBE: %s", h_show(r));
    freeReplyObject(r);
    redisFree(c);
    ck_assert_msg(h_pings(p.addr.host, p.addr.port), "the proxy stopped answering");
    h_proxy_stop(&p);
}
END_TEST

/* ---------- a shard channel's slot moves ---------- */

static char mig_tag[64];
static int mig_slot = -1;

/* SPUBLISHes (through the proxy) until sub gets the smessage. */
static void spublish_until_seen(redisContext *pub, redisContext *sub, const char *channel)
{
    struct timeval quick = { 0, 200000 }, normal = { H_IO_TIMEOUT_S, 0 };
    int seen = 0;
    redisSetTimeout(sub, quick);
    for (int tries = 1; tries <= 50 && !seen; tries++) {
        freeReplyObject(h_cmd(pub, "SPUBLISH %s probe%d", channel, tries));
        void *r = NULL;
        if (redisGetReply(sub, &r) == REDIS_OK && r != NULL) {
            redisReply *m = r;
            ck_assert_msg(m->type == REDIS_REPLY_ARRAY && m->elements == 3 &&
                          strcmp(m->element[0]->str, "smessage") == 0,
                          "expected an smessage, got %s", h_show(m));
            freeReplyObject(m);
            seen = 1;
            break;
        }
        ck_assert_msg(sub->err == REDIS_ERR_IO, "subscriber: %s", sub->errstr);
        sub->err = 0;
        sub->errstr[0] = '\0';
    }
    redisSetTimeout(sub, normal);
    ck_assert_msg(seen, "no smessage reached the subscriber in 50 tries");
}

/* The node that loses a slot unsubscribes its shard channels' subscribers
 * (a "sunsubscribe" push); the proxy subscribes them again on the slot's
 * new master, and the client sees nothing of it. Moved there and back. */
START_TEST(shard_channel_follows_its_slot)
{
    struct h_topo t;
    char ch[128];
    h_topo_load(&t);
    ck_assert_int_ge(mig_slot, 0);
    snprintf(ch, sizeof(ch), "{%s}ch", mig_tag);
    int home = h_topo_owner(&t, mig_slot), away = (home + 1) % t.nmasters;
    redisContext *sub = h_connect_proxy(), *pub = h_connect_proxy();
    freeReplyObject(h_cmd(sub, "SSUBSCRIBE %s", ch));
    spublish_until_seen(pub, sub, ch);

    h_move_empty_slot(&t, mig_slot, home, away);
    wait_conns(&t.masters[away], "ssub=1", 1);
    spublish_until_seen(pub, sub, ch);
    h_move_empty_slot(&t, mig_slot, away, home);
    wait_conns(&t.masters[home], "ssub=1", 1);
    spublish_until_seen(pub, sub, ch);
    redisReply *r = h_cmd(sub, "PING");         /* still subscribed, error-free */
    ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 2, "PING: %s", h_show(r));
    freeReplyObject(r);
    redisFree(sub);
    redisFree(pub);
}
END_TEST

/* In Check's parent: a slot no other test uses, and, whatever happened, the
 * slot back on its master and stable for the tests after us. */
static int mig_home = -1;
static struct h_topo mig_topo;

static void mig_setup(void)
{
    h_topo_load(&mig_topo);
    mig_slot = -1;
    /* a slot without keys (other tests leave some): nothing to MIGRATE */
    for (int i = 0; i < 1000 && mig_slot < 0; i++) {
        snprintf(mig_tag, sizeof(mig_tag), "psmig:%ld:%d", (long)getpid(), i);
        int slot = h_slot(mig_tag);
        mig_home = h_topo_owner(&mig_topo, slot);
        redisContext *c = mig_home >= 0 ? h_connect_try(mig_topo.masters[mig_home].host,
                                                        mig_topo.masters[mig_home].port) : NULL;
        redisReply *r = c ? redisCommand(c, "CLUSTER COUNTKEYSINSLOT %d", slot) : NULL;
        if (r && r->type == REDIS_REPLY_INTEGER && r->integer == 0)
            mig_slot = slot;
        if (r)
            freeReplyObject(r);
        if (c)
            redisFree(c);
    }
}

static void mig_teardown(void)
{
    struct h_node nodes[H_MAX_NODES];
    int n = h_nodes(nodes, H_MAX_NODES);
    if (mig_slot < 0 || mig_home < 0)
        return;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            redisContext *c = h_connect_try(nodes[i].host, nodes[i].port);
            if (c == NULL)
                continue;
            redisReply *r = pass == 0
                ? redisCommand(c, "CLUSTER SETSLOT %d STABLE", mig_slot)
                : redisCommand(c, "CLUSTER SETSLOT %d NODE %s", mig_slot,
                               mig_topo.master_id[mig_home]);
            if (r != NULL)
                freeReplyObject(r);
            redisFree(c);
        }
}

static Suite *pubsub_suite(void)
{
    Suite *s = suite_create("pubsub");
    TCase *tc = tcase_create("pubsub");
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, shapes_as_redis);
    tcase_add_test(tc, courier_pattern_in_order);
    tcase_add_test(tc, message_before_unsubscribe_confirmation);
    tcase_add_test(tc, resubscribed_after_kill_on_other_master);
    tcase_add_test(tc, resubscribed_when_node_paused);
    tcase_add_test(tc, sharded);
    tcase_add_test(tc, no_connection_leak);
    tcase_add_test(tc, slow_subscriber_disconnected);
    tcase_add_test(tc, subscribe_answered_when_no_master);
    suite_add_tcase(s, tc);
    TCase *mig = tcase_create("slot moves");
    tcase_set_timeout(mig, 90);
    tcase_add_unchecked_fixture(mig, mig_setup, mig_teardown);
    tcase_add_test(mig, shard_channel_follows_its_slot);
    suite_add_tcase(s, mig);
    return s;
}

int main(void)
{
    return h_run(pubsub_suite());
}
