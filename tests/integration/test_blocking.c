/*
 * Blocking commands through the proxy against the real cluster: each runs
 * on a dedicated node connection, so a hundred blocked BLPOPs do not slow a
 * 100,000-GET pipeline; timeouts behave as on one server (also past
 * node-timeout-ms, and 0 blocks for good); a client that leaves while
 * blocked frees its node connection at once; the pool is bounded.
 */
#include "harness.h"

#define CROSSSLOT "CROSSSLOT Keys in request don't hash to the same slot"

/* INFO field summed over the masters, read on the nodes directly. */
/* Wait (up to ms) until the masters' blocked_clients is want. */
static long long wait_blocked(const struct h_topo *t, long long want, long ms)
{
    long long deadline = h_now_ms() + ms, have;
    while ((have = h_masters_info_sum(t, "blocked_clients")) != want && h_now_ms() < deadline)
        h_sleep_ms(20);
    return have;
}

static void send_only(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ck_assert_int_eq(redisvAppendCommand(c, fmt, ap), REDIS_OK);
    va_end(ap);
    h_flush(c);
}

/* A blocking command sent on c, and waited for (up to 5 s) until a master
 * counts one more blocked client: blocked at its node, not on its way
 * (Redis's tests' wait_for_blocked_client), where a fixed sleep guessed. */
static void send_blocked(const struct h_topo *t, redisContext *c, const char *fmt, ...)
{
    long long before = h_masters_info_sum(t, "blocked_clients");
    va_list ap;
    va_start(ap, fmt);
    ck_assert_int_eq(redisvAppendCommand(c, fmt, ap), REDIS_OK);
    va_end(ap);
    h_flush(c);
    ck_assert_int_eq(wait_blocked(t, before + 1, 5000), before + 1);
}

/* No reply has arrived on c (nothing readable right now). */
static void expect_no_reply_yet(redisContext *c)
{
    struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
    ck_assert_msg(poll(&pfd, 1, 0) == 0, "a reply arrived while the command should block");
}

START_TEST(test_100_blpop_while_100k_pipelined_gets)
{
    enum { CLIENTS = 100, GETS = 100000, GETTERS = 4 };
    struct h_topo t;
    static redisContext *blockers[CLIENTS];
    char key[128], list[CLIENTS][128], val[64];
    redisReply *r;

    h_topo_load(&t);
    long long blocked0 = h_masters_info_sum(&t, "blocked_clients");
    for (int i = 0; i < CLIENTS; i++) {
        H_FMT(list[i], sizeof list[i], "%s:queue:%d", h_prefix(), i);
        blockers[i] = h_connect_proxy();
        send_only(blockers[i], "BLPOP %s 0", list[i]);
    }
    ck_assert_int_eq(wait_blocked(&t, blocked0 + CLIENTS, 10000), blocked0 + CLIENTS);

    /* other clients' pipelines go through while all of them block */
    H_FMT(key, sizeof key, "%s:getme", h_prefix());
    redisContext *setter = h_connect_proxy();
    H_OK(setter, "SET %s fine", key);
    redisContext *getters[GETTERS];
    for (int g = 0; g < GETTERS; g++) {
        getters[g] = h_connect_proxy();
        for (int i = 0; i < GETS / GETTERS; i++)
            ck_assert_int_eq(redisAppendCommand(getters[g], "GET %s", key), REDIS_OK);
    }
    for (int g = 0; g < GETTERS; g++) {
        for (int i = 0; i < GETS / GETTERS; i++) {
            r = h_get_reply(getters[g]);
            H_EXPECT_BULK(r, "fine");
            freeReplyObject(r);
        }
        redisFree(getters[g]);
    }
    /* ... and they were all still blocked when it completed */
    ck_assert_int_eq(h_masters_info_sum(&t, "blocked_clients"), blocked0 + CLIENTS);
    for (int i = 0; i < CLIENTS; i++)
        expect_no_reply_yet(blockers[i]);

    for (int i = 0; i < CLIENTS; i++) {
        r = h_cmd(setter, "RPUSH %s item-%d", list[i], i);
        H_EXPECT_INT(r, 1);
        freeReplyObject(r);
    }
    for (int i = 0; i < CLIENTS; i++) {
        r = h_get_reply(blockers[i]);
        H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
        ck_assert_uint_eq(r->elements, 2);
        H_EXPECT_BULK(r->element[0], list[i]);
        snprintf(val, sizeof val, "item-%d", i);
        H_EXPECT_BULK(r->element[1], val);
        freeReplyObject(r);
        redisFree(blockers[i]);
    }
    ck_assert_int_eq(wait_blocked(&t, blocked0, 5000), blocked0);
    redisFree(setter);
}
END_TEST

START_TEST(test_stream_consumer_group_xreadgroup_block_xack)
{
    char stream[128];
    struct h_topo t;
    redisContext *consumer = h_connect_proxy(), *producer = h_connect_proxy();
    redisReply *r;

    h_topo_load(&t);
    H_FMT(stream, sizeof stream, "%s:{jobs}:stream", h_prefix());
    H_OK(producer, "XGROUP CREATE %s workers $ MKSTREAM", stream);
    send_blocked(&t, consumer, "XREADGROUP GROUP workers w1 COUNT 10 BLOCK 5000 STREAMS %s >",
                 stream);
    expect_no_reply_yet(consumer);
    /* the producer is not held up by the blocked consumer */
    r = h_cmd(producer, "XADD %s * job build", stream);
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    char id[64];
    snprintf(id, sizeof id, "%s", r->str);
    freeReplyObject(r);

    r = h_get_reply(consumer);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 1);
    H_EXPECT_BULK(r->element[0]->element[0], stream);
    redisReply *entries = r->element[0]->element[1];
    ck_assert_uint_eq(entries->elements, 1);
    H_EXPECT_BULK(entries->element[0]->element[0], id);
    H_EXPECT_BULK(entries->element[0]->element[1]->element[1], "build");
    freeReplyObject(r);

    r = h_cmd(consumer, "XPENDING %s workers", stream);
    H_EXPECT_INT(r->element[0], 1);
    freeReplyObject(r);
    r = h_cmd(consumer, "XACK %s workers %s", stream, id);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    r = h_cmd(consumer, "XPENDING %s workers", stream);
    H_EXPECT_INT(r->element[0], 0);
    freeReplyObject(r);

    /* BLOCK with nothing new: null after the timeout, as on one server */
    long long t0 = h_now_ms();
    r = h_cmd(consumer, "XREADGROUP GROUP workers w1 BLOCK 300 STREAMS %s >", stream);
    H_EXPECT_NIL(r);
    freeReplyObject(r);
    ck_assert_int_ge(h_now_ms() - t0, 250);
    /* XREAD without BLOCK stays a plain command */
    r = h_cmd(consumer, "XREAD COUNT 1 STREAMS %s 0", stream);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    redisFree(consumer);
    redisFree(producer);
}
END_TEST

/* The node-side ids (CLIENT LIST "id=") of the master of key's clients
 * whose line holds needle, into ids; how many. */
static int owner_client_ids(const struct h_topo *t, const char *key, const char *needle,
                            long long *ids, int max)
{
    redisContext *c = h_connect_owner(t, key);
    redisReply *r = h_cmd(c, "CLIENT LIST");
    int n = 0;
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    for (const char *line = r->str; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (memmem(line, len, needle, strlen(needle)) && n < max)
            ids[n++] = atoll(line + 3);     /* lines start "id=" */
        line = end ? end + 1 : NULL;
    }
    freeReplyObject(r);
    redisFree(c);
    return n;
}

/* A client closed while blocked: its node connection closes at once (the
 * node's client of that id is gone, and nothing is left blocked). */
START_TEST(test_client_closed_while_blocked_frees_connection)
{
    struct h_topo t;
    char list[128];
    long long before[256], during[256], after[256];
    redisReply *r;

    h_topo_load(&t);
    H_FMT(list, sizeof list, "%s:leaver", h_prefix());
    redisContext *warm = h_connect_proxy();
    for (int round = 0; round < 3; round++) {
        int n0 = owner_client_ids(&t, list, "flags=b", before, 256);
        redisContext *c = h_connect_proxy();
        send_only(c, "BLPOP %s 0", list);
        long long deadline = h_now_ms() + 5000;
        int n1;
        while ((n1 = owner_client_ids(&t, list, "flags=b", during, 256)) != n0 + 1 &&
               h_now_ms() < deadline)
            h_sleep_ms(20);
        ck_assert_int_eq(n1, n0 + 1);
        long long mine = -1;        /* the blocked one that was not there before */
        for (int i = 0; i < n1; i++) {
            int old = 0;
            for (int j = 0; j < n0; j++)
                old |= before[j] == during[i];
            if (!old)
                mine = during[i];
        }
        ck_assert_int_ge(mine, 0);
        redisFree(c);
        deadline = h_now_ms() + 2000;
        int still;
        do {
            int n = owner_client_ids(&t, list, "id=", after, 256);
            still = 0;
            for (int i = 0; i < n; i++)
                still |= after[i] == mine;
            if (still)
                h_sleep_ms(20);
        } while (still && h_now_ms() < deadline);
        ck_assert_msg(!still, "node client id=%lld still open after its client left", mine);
        ck_assert_int_eq(owner_client_ids(&t, list, "flags=b", after, 256), n0);
    }
    /* nothing was popped by a connection left behind */
    r = h_cmd(warm, "RPUSH %s x", list);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    h_sleep_ms(100);        /* a window for a pop that must not come: no state to wait for */
    r = h_cmd(warm, "LLEN %s", list);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    redisFree(warm);
}
END_TEST

/* Keys of one blocking command must share a slot. */
START_TEST(test_blocking_crossslot)
{
    struct h_topo t;
    char prefix[128], k0[128], k1[128];
    redisContext *p = h_connect_proxy();
    redisReply *r;

    h_topo_load(&t);
    H_FMT(prefix, sizeof prefix, "%s:bx", h_prefix());
    h_key_on_master(&t, 0, prefix, 0, k0, sizeof k0);
    h_key_on_master(&t, 1, prefix, 0, k1, sizeof k1);
    r = h_cmd(p, "BLPOP %s %s 1", k0, k1);
    H_EXPECT_ERR(r, CROSSSLOT);
    freeReplyObject(r);
    r = h_cmd(p, "BLMOVE %s %s LEFT RIGHT 1", k0, k1);
    H_EXPECT_ERR(r, CROSSSLOT);
    freeReplyObject(r);
    r = h_cmd(p, "XREAD BLOCK 100 STREAMS %s %s $ $", k0, k1);
    H_EXPECT_ERR(r, CROSSSLOT);
    freeReplyObject(r);
    r = h_cmd(p, "PING");
    H_EXPECT_STATUS(r, "PONG");
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

/* Each blocking command, served at once and after blocking. */
START_TEST(test_each_blocking_command)
{
    char a[128], b[128], z[128];
    redisContext *p = h_connect_proxy(), *q = h_connect_proxy();
    redisReply *r;
    struct h_topo t;

    H_FMT(a, sizeof a, "%s:{each}:a", h_prefix());
    H_FMT(b, sizeof b, "%s:{each}:b", h_prefix());
    H_FMT(z, sizeof z, "%s:{each}:z", h_prefix());
    r = h_cmd(q, "RPUSH %s 1 2 3 4 5", a);
    freeReplyObject(r);
    r = h_cmd(p, "BRPOP %s %s 1", b, a);
    H_EXPECT_BULK(r->element[1], "5");
    freeReplyObject(r);
    r = h_cmd(p, "BLMOVE %s %s LEFT RIGHT 1", a, b);
    H_EXPECT_BULK(r, "1");
    freeReplyObject(r);
    r = h_cmd(p, "BRPOPLPUSH %s %s 1", a, b);
    H_EXPECT_BULK(r, "4");
    freeReplyObject(r);
    r = h_cmd(p, "BLMPOP 1 2 %s %s LEFT COUNT 2", z, a);
    H_EXPECT_BULK(r->element[0], a);
    ck_assert_uint_eq(r->element[1]->elements, 2);
    freeReplyObject(r);
    r = h_cmd(q, "ZADD %s 1 one 2 two 3 three", z);
    freeReplyObject(r);
    r = h_cmd(p, "BZPOPMIN %s 1", z);
    H_EXPECT_BULK(r->element[1], "one");
    freeReplyObject(r);
    r = h_cmd(p, "BZPOPMAX %s 1", z);
    H_EXPECT_BULK(r->element[1], "three");
    freeReplyObject(r);
    r = h_cmd(p, "BZMPOP 1 1 %s MIN", z);
    H_EXPECT_BULK(r->element[0], z);
    freeReplyObject(r);
    /* empty now: each times out with its null */
    r = h_cmd(p, "BZPOPMIN %s 0.2", z);
    H_EXPECT_NIL(r);
    freeReplyObject(r);
    r = h_cmd(p, "BLMOVE %s %s LEFT RIGHT 0.2", z, b);
    H_EXPECT_NIL(r);
    freeReplyObject(r);

    /* blocked, then fed; a command sent after it waits its turn (as on one
     * server, the client's next command runs once it is unblocked) */
    h_topo_load(&t);
    long long blocked0 = h_masters_info_sum(&t, "blocked_clients"), blocked;
    send_only(p, "BZPOPMAX %s 0", z);
    send_only(p, "SET %s:{each}:after done", h_prefix());
    blocked = wait_blocked(&t, blocked0 + 1, 5000);     /* blocked at its node */
    ck_assert_msg(blocked == blocked0 + 1, "BZPOPMAX not blocked on its master after 5 s: "
                  "blocked_clients %lld, want %lld", blocked, blocked0 + 1);
    expect_no_reply_yet(p);
    r = h_cmd(q, "GET %s:{each}:after", h_prefix());
    H_EXPECT_NIL(r);
    freeReplyObject(r);
    r = h_cmd(q, "ZADD %s 7 seven", z);
    freeReplyObject(r);
    r = h_get_reply(p);
    H_EXPECT_BULK(r->element[1], "seven");
    freeReplyObject(r);
    r = h_get_reply(p);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    redisFree(p);
    redisFree(q);
}
END_TEST

/* ---------- CLIENT UNBLOCK ---------- */

/* CLIENT UNBLOCK id [reason] by `by`, sent until it answers 1 (the blocked
 * command may not have reached its node yet: 0 then, as from Redis); 5 s. */
static void unblock(redisContext *by, long long id, const char *reason)
{
    long long deadline = h_now_ms() + 5000;
    for (;;) {
        redisReply *r = reason ? h_cmd(by, "CLIENT UNBLOCK %lld %s", id, reason)
                               : h_cmd(by, "CLIENT UNBLOCK %lld", id);
        H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
        long long v = r->integer;
        freeReplyObject(r);
        if (v == 1)
            return;
        ck_assert_int_eq(v, 0);
        ck_assert_msg(h_now_ms() < deadline, "CLIENT UNBLOCK %lld %s never answered 1", id, reason ? reason : "");
        h_sleep_ms(20);
    }
}

static void expect_unblock_int(redisContext *by, long long want, const char *fmt, long long id)
{
    redisReply *r = h_cmd(by, fmt, id);
    H_EXPECT_INT(r, want);
    freeReplyObject(r);
}

/*
 * CLIENT UNBLOCK by the proxy's client IDs, on a proxy of two workers (the
 * blocked client and the caller on either): the node that holds the
 * blocked command unblocks it, TIMEOUT giving the command's null and ERROR
 * Redis's -UNBLOCKED error; a client blocked on nothing gets 0; Redis's
 * errors for a bad ID, a bad reason, too many arguments; in MULTI it runs
 * after the block, as Redis runs it in EXEC.
 */
START_TEST(test_client_unblock)
{
    static const char *args[] = { "--threads", "2", NULL };
    struct h_proxy px;
    struct h_topo t;
    char list[128], stream[128], other[128];
    redisReply *r;

    h_topo_load(&t);
    h_proxy_start(&px, args);
    H_FMT(list, sizeof list, "%s:{unblock}:list", h_prefix());
    H_FMT(stream, sizeof stream, "%s:unblock:stream", h_prefix());
    H_FMT(other, sizeof other, "%s:{unblock}:other", h_prefix());
    for (int pair = 0; pair < 2; pair++) {  /* the second pair lands on the workers swapped */
        redisContext *a = h_connect_extra(&px), *b = h_connect_extra(&px);
        long long ida = h_client_id(a);

        expect_unblock_int(b, 0, "CLIENT UNBLOCK %lld", ida);   /* not blocked */
        send_only(a, "BLPOP %s 0", list);
        unblock(b, ida, NULL);
        r = h_get_reply(a);
        H_EXPECT_TYPE(r, REDIS_REPLY_NIL);
        freeReplyObject(r);
        expect_unblock_int(b, 0, "CLIENT UNBLOCK %lld", ida);   /* not any more */

        send_only(a, "XREAD BLOCK 0 STREAMS %s $", stream);
        unblock(b, ida, "ERROR");
        r = h_get_reply(a);
        H_EXPECT_ERR(r, "UNBLOCKED client unblocked via CLIENT UNBLOCK");
        freeReplyObject(r);

        send_only(a, "BLMOVE %s %s LEFT RIGHT 0", list, other);
        unblock(b, ida, "timeout");
        r = h_get_reply(a);
        H_EXPECT_TYPE(r, REDIS_REPLY_NIL);
        freeReplyObject(r);

        /* in MULTI: run once the block has, its 1 in EXEC's array */
        send_only(a, "BLPOP %s 0", list);
        long long deadline = h_now_ms() + 5000;
        for (;;) {
            H_OK(b, "MULTI");
            H_STATUS(b, "QUEUED", "CLIENT UNBLOCK %lld", ida);
            r = h_cmd(b, "EXEC");
            H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
            ck_assert_uint_eq(r->elements, 1);
            H_EXPECT_TYPE(r->element[0], REDIS_REPLY_INTEGER);
            long long v = r->element[0]->integer;
            freeReplyObject(r);
            if (v == 1)
                break;
            ck_assert_msg(h_now_ms() < deadline, "CLIENT UNBLOCK in MULTI never answered 1");
            h_sleep_ms(20);
        }
        r = h_get_reply(a);
        H_EXPECT_TYPE(r, REDIS_REPLY_NIL);
        freeReplyObject(r);

        /* the client goes on as before: blocks and is served */
        send_blocked(&t, a, "BLPOP %s 0", list);
        r = h_cmd(b, "RPUSH %s v%d", list, pair);
        freeReplyObject(r);
        r = h_get_reply(a);
        H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
        H_EXPECT_BULK(r->element[1], pair ? "v1" : "v0");
        freeReplyObject(r);
        redisFree(a);
        redisFree(b);
    }

    redisContext *c = h_connect_extra(&px);
    expect_unblock_int(c, 0, "CLIENT UNBLOCK %lld", 999999);
    expect_unblock_int(c, 0, "CLIENT UNBLOCK %lld ERROR", h_client_id(c));
    H_ERR(c, "ERR value is not an integer or out of range", "CLIENT UNBLOCK x");
    H_ERR(c, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR", "CLIENT UNBLOCK 1 foo");
    H_ERR(c, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR", "CLIENT UNBLOCK x foo");
    H_ERR(c, "ERR unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT "
             "HELP.", "CLIENT UNBLOCK 1 TIMEOUT x");
    H_ERR(c, "ERR wrong number of arguments for 'client|unblock' command", "CLIENT UNBLOCK");
    redisFree(c);
    h_proxy_stop(&px);
}
END_TEST

/* The node-side id of the one client of key's master that blocks now and
 * is not in before[0..n0) (5 s at most). */
static long long newly_blocked(const struct h_topo *t, const char *key, const long long *before,
                               int n0)
{
    long long during[256], deadline = h_now_ms() + 5000;
    for (;;) {
        int n = owner_client_ids(t, key, "flags=b", during, 256);
        for (int i = 0; i < n; i++) {
            int old = 0;
            for (int j = 0; j < n0; j++)
                old |= before[j] == during[i];
            if (!old)
                return during[i];
        }
        ck_assert_msg(h_now_ms() < deadline, "no new blocked client on the master of %s", key);
        h_sleep_ms(20);
    }
}

/* Whether CLIENT LIST shows client id with the b (blocked) flag. */
static int listed_blocked(redisContext *by, long long id)
{
    redisReply *r = h_cmd(by, "CLIENT LIST ID %lld", id);
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    const char *flags = strstr(r->str, " flags=");
    int blocked = flags && strcspn(flags + 7, " ") > strcspn(flags + 7, "b");
    freeReplyObject(r);
    return blocked;
}

/* CLIENT UNBLOCK sent as soon as CLIENT LIST shows the client blocked is
 * never lost, though the node may not have the command yet: 1, and the
 * command's nil, every one of hundreds of times (against one server: the
 * same). */
START_TEST(test_client_unblock_race)
{
    static const char *args[] = { "--threads", "2", NULL };
    struct h_proxy px;
    char list[128];
    h_proxy_start(&px, args);
    H_FMT(list, sizeof list, "%s:{unblockrace}:list", h_prefix());
    redisContext *a = h_connect_extra(&px), *b = h_connect_extra(&px);
    long long ida = h_client_id(a);
    for (int i = 0; i < 300; i++) {
        send_only(a, "BLPOP %s 0", list);
        long long deadline = h_now_ms() + 5000;
        while (!listed_blocked(b, ida))
            ck_assert_msg(h_now_ms() < deadline, "round %d: never listed blocked", i);
        redisReply *r = h_cmd(b, "CLIENT UNBLOCK %lld", ida);
        ck_assert_msg(r->type == REDIS_REPLY_INTEGER && r->integer == 1,
                      "round %d: CLIENT UNBLOCK answered %s", i, h_show(r));
        freeReplyObject(r);
        r = h_get_reply(a);
        H_EXPECT_TYPE(r, REDIS_REPLY_NIL);
        freeReplyObject(r);
    }
    redisFree(a);
    redisFree(b);
    h_proxy_stop(&px);
}
END_TEST

/*
 * After a CLIENT UNBLOCK, the dedicated connection of the unblocked client
 * is not handed to another client until node-timeout-ms has passed: the
 * unblock goes to the node on another connection, and must not find
 * another client's command blocked on that one. Then it is reused.
 */
START_TEST(test_unblocked_connection_held_back)
{
    static const char *args[] = { "--threads", "1", "--node-timeout-ms", "400", NULL };
    struct h_proxy px;
    struct h_topo t;
    char key[128];
    long long before[256];
    redisReply *r;

    h_topo_load(&t);
    h_proxy_start(&px, args);
    H_FMT(key, sizeof key, "%s:{held}:list", h_prefix());
    redisContext *a = h_connect_extra(&px), *b = h_connect_extra(&px), *c = h_connect_extra(&px);
    long long ida = h_client_id(a), idc = h_client_id(c);

    int n0 = owner_client_ids(&t, key, "flags=b", before, 256);
    send_only(a, "BLPOP %s 0", key);
    long long x = newly_blocked(&t, key, before, n0);
    unblock(b, ida, NULL);
    r = h_get_reply(a);
    H_EXPECT_NIL(r);
    freeReplyObject(r);

    n0 = owner_client_ids(&t, key, "flags=b", before, 256);
    send_only(c, "BLPOP %s 0", key);
    long long y = newly_blocked(&t, key, before, n0);
    ck_assert_msg(y != x, "c blocks on a's connection (node id %lld) right after its unblock", x);

    h_sleep_ms(600);            /* past the hold */
    n0 = owner_client_ids(&t, key, "flags=b", before, 256);
    send_only(a, "BLPOP %s 0", key);
    ck_assert_int_eq(newly_blocked(&t, key, before, n0), x);
    unblock(b, ida, NULL);
    unblock(b, idc, NULL);
    freeReplyObject(h_get_reply(a));
    freeReplyObject(h_get_reply(c));
    redisFree(a);
    redisFree(b);
    redisFree(c);
    h_proxy_stop(&px);
}
END_TEST

/* node-timeout-ms counts silence, but a blocked node is silent on purpose:
 * timeouts longer than it work, and 0 blocks until data comes. */
START_TEST(test_block_longer_than_node_timeout)
{
    struct h_proxy extra;
    static const char *const args[] = { "--node-timeout-ms", "200", NULL };
    char list[128];
    redisReply *r;

    H_FMT(list, sizeof list, "%s:slowq", h_prefix());
    h_proxy_start(&extra, args);
    redisContext *p = h_connect_extra(&extra), *q = h_connect_extra(&extra);
    long long t0 = h_now_ms();
    r = h_cmd(p, "BLPOP %s 0.8", list);
    H_EXPECT_NIL(r);
    freeReplyObject(r);
    ck_assert_int_ge(h_now_ms() - t0, 700);

    send_only(p, "BLPOP %s 0", list);
    h_sleep_ms(1000);       /* a time: five node-timeout-ms of silence, not a state */
    expect_no_reply_yet(p);
    r = h_cmd(q, "RPUSH %s late", list);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    r = h_get_reply(p);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    H_EXPECT_BULK(r->element[1], "late");
    freeReplyObject(r);
    /* and a command after it still gets the silence check */
    r = h_cmd(p, "PING");
    H_EXPECT_STATUS(r, "PONG");
    freeReplyObject(r);
    redisFree(p);
    redisFree(q);
    h_proxy_stop(&extra);
}
END_TEST

/* A reply ahead of a blocking command in a pipeline goes out at once: the
 * proxy holds finished replies only while the next one is due from a shared
 * node connection (proxy/core/client.c), never behind a command that blocks. */
START_TEST(test_reply_before_blocking_command_not_held)
{
    struct h_node proxy = h_proxy_addr();
    char key[128], list[128], cmd[512], buf[256];
    int fd = h_raw_connect(&proxy);

    H_FMT(key, sizeof key, "%s:before-block", h_prefix());
    H_FMT(list, sizeof list, "%s:never-pushed", h_prefix());
    H_FMT(cmd, sizeof cmd, "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$1\r\nv\r\n"
          "*3\r\n$5\r\nBLPOP\r\n$%zu\r\n%s\r\n$1\r\n4\r\n",
          strlen(key), key, strlen(list), list);
    h_raw_sends(fd, cmd);
    h_raw_recv(fd, buf, sizeof buf, "+OK\r\n", 3000, NULL);
    ck_assert_msg(strcmp(buf, "+OK\r\n") == 0,
                  "SET's reply was '%s', not +OK alone while BLPOP still blocks", buf);
    h_raw_recv(fd, buf, sizeof buf, "*-1\r\n", 10000, NULL);
    ck_assert_msg(strcmp(buf, "*-1\r\n") == 0, "BLPOP's reply was '%s', not a timeout", buf);
    close(fd);
}
END_TEST

/* QUIT behind a blocking command: what the client sent after it never runs
 * and gets no reply, as on one redis-server (which reads nothing after
 * QUIT), though the proxy had read it while BLPOP blocked. */
START_TEST(test_quit_after_blocking_command_ends_there)
{
    struct h_node proxy = h_proxy_addr();
    char key[128], list[128], cmd[512], buf[256];
    int closed = 0, fd = h_raw_connect(&proxy);

    H_FMT(key, sizeof key, "%s:after-quit", h_prefix());
    H_FMT(list, sizeof list, "%s:never-pushed-quit", h_prefix());
    H_FMT(cmd, sizeof cmd, "*3\r\n$5\r\nBLPOP\r\n$%zu\r\n%s\r\n$3\r\n0.3\r\n"
          "*1\r\n$4\r\nQUIT\r\n*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$1\r\nv\r\n"
          "*1\r\n$4\r\nPING\r\n", strlen(list), list, strlen(key), key);
    h_raw_sends(fd, cmd);
    h_raw_recv(fd, buf, sizeof buf, NULL, 5000, &closed);
    ck_assert_msg(strcmp(buf, "*-1\r\n+OK\r\n") == 0 && closed,
                  "after BLPOP, QUIT, SET, PING the proxy sent '%s'%s", h_esc_str(buf),
                  closed ? " and closed" : " and did not close");
    close(fd);
    redisContext *c = h_connect_proxy();
    redisReply *r = h_cmd(c, "EXISTS %s", key);
    ck_assert_msg(r->type == REDIS_REPLY_INTEGER && r->integer == 0,
                  "the SET sent after QUIT ran: EXISTS says %s", h_show(r));
    freeReplyObject(r);
    redisFree(c);
}
END_TEST

/* dedicated-connections-max: the next blocking command gets a clear error,
 * and a freed connection serves again. */
START_TEST(test_pool_exhausted_clear_error)
{
    struct h_proxy extra;
    static const char *const args[] = { "--dedicated-connections-max", "2", NULL };
    char list[2][128];
    redisContext *b[2];
    redisReply *r;

    struct h_topo t;
    h_topo_load(&t);
    h_proxy_start(&extra, args);
    for (int i = 0; i < 2; i++) {
        H_FMT(list[i], sizeof list[i], "%s:pool:%d", h_prefix(), i);
        b[i] = h_connect_extra(&extra);
        send_blocked(&t, b[i], "BLPOP %s 0", list[i]);
    }
    redisContext *p = h_connect_extra(&extra);
    r = h_cmd(p, "BLPOP %s:pool:x 0", h_prefix());
    H_EXPECT_ERR(r, "ERR all dedicated node connections");
    ck_assert_msg(strstr(r->str, "dedicated-connections-max") != NULL, "%s", r->str);
    freeReplyObject(r);
    r = h_cmd(p, "WATCH %s:pool:x", h_prefix());
    H_EXPECT_ERR(r, "ERR all dedicated node connections");
    freeReplyObject(r);
    ck_assert_int_eq(h_info_field(p, "dedicated_pool_full"), 2);
    /* others are served meanwhile */
    r = h_cmd(p, "RPUSH %s one", list[0]);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    r = h_get_reply(b[0]);
    H_EXPECT_BULK(r->element[1], "one");
    freeReplyObject(r);
    r = h_cmd(p, "BLPOP %s:pool:x 0.1", h_prefix());
    H_EXPECT_NIL(r);
    freeReplyObject(r);
    redisFree(b[0]);
    redisFree(b[1]);
    redisFree(p);
    h_proxy_stop(&extra);
}
END_TEST

/* With a key layout, the key of a blocking pop's reply and XREAD's stream
 * names come back as the legacy names the client used. */
START_TEST(test_layout_maps_reply_keys_back)
{
    struct h_proxy extra;
    struct h_topo t;
    char prefix[64], list[128], zset[128], stream[128];
    redisReply *r;

    h_topo_load(&t);
    h_layout_proxy_start(&extra, "bl", prefix, sizeof prefix);
    H_FMT(list, sizeof list, "%s:chat:tg:7", prefix);      /* -> PREFIX:{ch:N}:r:tg%3A7 */
    H_FMT(zset, sizeof zset, "%s:chat:tg:8", prefix);
    H_FMT(stream, sizeof stream, "%s:chat:tg:9", prefix);
    redisContext *p = h_connect_extra(&extra), *q = h_connect_extra(&extra);

    send_blocked(&t, p, "BLPOP %s 5", list);
    r = h_cmd(q, "RPUSH %s hello", list);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    r = h_get_reply(p);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    H_EXPECT_BULK(r->element[0], list);
    H_EXPECT_BULK(r->element[1], "hello");
    freeReplyObject(r);

    r = h_cmd(q, "ZADD %s 1 a 2 b", zset);
    freeReplyObject(r);
    r = h_cmd(p, "BZPOPMIN %s 1", zset);
    H_EXPECT_BULK(r->element[0], zset);
    freeReplyObject(r);
    r = h_cmd(p, "BZMPOP 1 1 %s MAX", zset);
    H_EXPECT_BULK(r->element[0], zset);
    freeReplyObject(r);
    r = h_cmd(q, "RPUSH %s x", list);
    freeReplyObject(r);
    r = h_cmd(p, "BLMPOP 1 1 %s LEFT", list);
    H_EXPECT_BULK(r->element[0], list);
    freeReplyObject(r);

    r = h_cmd(q, "XADD %s * f v", stream);
    freeReplyObject(r);
    r = h_cmd(p, "XREAD BLOCK 1000 STREAMS %s 0", stream);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    H_EXPECT_BULK(r->element[0]->element[0], stream);
    freeReplyObject(r);
    r = h_cmd(p, "XREAD STREAMS %s 0", stream);
    H_EXPECT_BULK(r->element[0]->element[0], stream);
    freeReplyObject(r);
    /* a timeout's null passes */
    r = h_cmd(p, "BLPOP %s 0.1", list);
    H_EXPECT_NIL(r);
    freeReplyObject(r);
    r = h_cmd(p, "DEL %s %s %s", list, zset, stream);
    freeReplyObject(r);
    redisFree(p);
    redisFree(q);
    h_proxy_stop(&extra);
}
END_TEST

/* Members of a user's data index (PREFIX:{ud:USER}:idx), read on its
 * master directly, joined with blanks in order. */
static void ud_index(const struct h_topo *t, const char *prefix, const char *user, char *out,
                     size_t cap)
{
    char idx[128];
    H_FMT(idx, sizeof idx, "%s:{ud:%s}:idx", prefix, user);
    redisContext *c = h_connect_owner(t, idx);
    redisReply *r = h_cmd(c, "ZRANGE %s 0 -1", idx);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    out[0] = '\0';
    for (size_t i = 0; i < r->elements; i++) {
        strncat(out, r->element[i]->str, cap - strlen(out) - 2);
        strcat(out, " ");
    }
    freeReplyObject(r);
    redisFree(c);
}

/* Wait (up to 2 s) until the index holds exactly want. */
static void expect_index_soon(const struct h_topo *t, const char *prefix, const char *want)
{
    char have[1024];
    long long deadline = h_now_ms() + 2000;
    do {
        ud_index(t, prefix, "u1", have, sizeof have);
        if (strcmp(have, want) == 0)
            return;
        h_sleep_ms(20);
    } while (h_now_ms() < deadline);
    ck_abort_msg("user data index: want '%s', have '%s'", want, have);
}

/* Indexed records (user data) popped or moved by blocking commands: their
 * index entries follow (a list emptied by BLPOP leaves the index, BLMOVE's
 * new list enters it), although Lua cannot run a blocking command. */
START_TEST(test_blocking_pops_keep_indexes)
{
    struct h_topo t;
    struct h_proxy extra;
    char prefix[64], q[128], dst[128];
    redisReply *r;

    h_topo_load(&t);
    h_layout_proxy_start(&extra, "bi", prefix, sizeof prefix);
    H_FMT(q, sizeof q, "%s:user:u1:jobs:q", prefix);
    H_FMT(dst, sizeof dst, "%s:user:u1:jobs:done", prefix);
    redisContext *p = h_connect_extra(&extra), *o = h_connect_extra(&extra);

    r = h_cmd(o, "RPUSH %s a b", q);
    H_EXPECT_INT(r, 2);
    freeReplyObject(r);
    expect_index_soon(&t, prefix, "jobs:q ");

    r = h_cmd(p, "BLMOVE %s %s LEFT RIGHT 1", q, dst);
    H_EXPECT_BULK(r, "a");
    freeReplyObject(r);
    expect_index_soon(&t, prefix, "jobs:done jobs:q ");

    r = h_cmd(p, "BLPOP %s 1", q);
    H_EXPECT_BULK(r->element[0], q);
    H_EXPECT_BULK(r->element[1], "b");
    freeReplyObject(r);
    expect_index_soon(&t, prefix, "jobs:done ");

    /* blocked first, then fed and emptied */
    send_blocked(&t, p, "BRPOP %s 0", q);
    r = h_cmd(o, "RPUSH %s c", q);
    freeReplyObject(r);
    r = h_get_reply(p);
    H_EXPECT_BULK(r->element[1], "c");
    freeReplyObject(r);
    r = h_cmd(p, "BRPOP %s 1", dst);
    H_EXPECT_BULK(r->element[1], "a");
    freeReplyObject(r);
    expect_index_soon(&t, prefix, "");
    redisFree(p);
    redisFree(o);
    h_proxy_stop(&extra);
}
END_TEST

static Suite *blocking_suite(void)
{
    Suite *s = suite_create("blocking");
    TCase *tc = tcase_create("blocking");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_100_blpop_while_100k_pipelined_gets);
    tcase_add_test(tc, test_stream_consumer_group_xreadgroup_block_xack);
    tcase_add_test(tc, test_client_closed_while_blocked_frees_connection);
    tcase_add_test(tc, test_blocking_crossslot);
    tcase_add_test(tc, test_each_blocking_command);
    tcase_add_test(tc, test_client_unblock);
    tcase_add_test(tc, test_client_unblock_race);
    tcase_add_test(tc, test_unblocked_connection_held_back);
    tcase_add_test(tc, test_block_longer_than_node_timeout);
    tcase_add_test(tc, test_reply_before_blocking_command_not_held);
    tcase_add_test(tc, test_quit_after_blocking_command_ends_there);
    tcase_add_test(tc, test_pool_exhausted_clear_error);
    tcase_add_test(tc, test_layout_maps_reply_keys_back);
    tcase_add_test(tc, test_blocking_pops_keep_indexes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(blocking_suite());
}
