/*
 * The client side of the protocol, on raw sockets and through hiredis:
 * malformed requests close only their own connection (after the replies
 * already owed, with "-ERR Protocol error: ..."); inline commands and any
 * fragmentation work; the commands the proxy answers itself look like one
 * Redis server's answers; dangerous and meaningless commands are refused.
 */
#include "harness.h"

#define PROTO_ERR "-ERR Protocol error: "

/* Requests a Redis 7.0 server rejects with a protocol error, and its words. */
static const struct {
    const char *req;
    const char *err;
} malformed[] = {
    { "*1\r\n$x\r\n", "invalid bulk length" },
    { "*x\r\n", "invalid multibulk length" },
    { "*1\r\nfoo\r\n", "expected '$', got 'f'" },
    { "*2\r\n$3\r\nGET\r\n$-5\r\n", "invalid bulk length" },
    { "*3000000000\r\n", "invalid multibulk length" },          /* over INT_MAX */
    { "*1\r\n$99999999999999\r\n", "invalid bulk length" },    /* over proto-max-bulk-len */
    { "SET \"a b\r\n", "unbalanced quotes in request" },       /* inline */
};

START_TEST(test_malformed_closes_only_its_connection)
{
    struct h_node a = h_proxy_addr();
    redisContext *other = h_connect_proxy();
    const char *bad = malformed[_i].req;
    char buf[4096], want[256];
    int fd, closed;
    redisReply *r;

    H_OK(other, "SET %s:proto:k before", h_prefix());
    fd = h_raw_connect(&a);
    /* a command first: its reply is owed and must come before the error */
    h_raw_sends(fd, "*1\r\n$4\r\nPING\r\n");
    h_raw_sends(fd, bad);
    h_raw_recv(fd, buf, sizeof(buf), NULL, 3000, &closed);
    snprintf(want, sizeof(want), "+PONG\r\n" PROTO_ERR "%s\r\n", malformed[_i].err);
    ck_assert_msg(strcmp(buf, want) == 0, "for %s the proxy sent '%s'", bad, buf);
    ck_assert_msg(closed, "connection still open 3 s after a protocol error (%s)", bad);
    close(fd);

    /* the other client did not notice */
    r = h_cmd(other, "PING");
    H_EXPECT_STATUS(r, "PONG");
    freeReplyObject(r);
    r = h_cmd(other, "GET %s:proto:k", h_prefix());
    H_EXPECT_BULK(r, "before");
    freeReplyObject(r);
    redisFree(other);
}
END_TEST

/* Inline commands, empty lines and quoting, as redis-cli over telnet. */
START_TEST(test_inline_commands)
{
    struct h_node a = h_proxy_addr();
    char req[512], want[512], buf[4096];
    int fd, closed;

    snprintf(req, sizeof(req),
             "PING\r\n"
             "\r\n"
             "ECHO hello\r\n"
             "SET %s:inline \"a b\\x41\"\r\n"
             "GET %s:inline\r\n"
             "  ping  \r\n"
             "EXISTS %s:inline %s:inline\n",
             h_prefix(), h_prefix(), h_prefix(), h_prefix());
    snprintf(want, sizeof(want), "+PONG\r\n$5\r\nhello\r\n+OK\r\n$4\r\na bA\r\n+PONG\r\n:2\r\n");
    fd = h_raw_connect(&a);
    h_raw_sends(fd, req);
    h_raw_recv(fd, buf, sizeof(buf), ":2\r\n", 3000, &closed);
    ck_assert_msg(!closed, "connection closed");
    ck_assert_msg(strcmp(buf, want) == 0, "got '%s'", buf);
    close(fd);
}
END_TEST

/* A pipeline sent one byte at a time, then in odd-sized pieces. */
START_TEST(test_fragmented_requests)
{
    struct h_node a = h_proxy_addr();
    char req[1024], want[256], buf[4096], key[128];
    size_t len;
    int fd, closed;

    snprintf(key, sizeof(key), "%s:frag", h_prefix());
    len = (size_t)snprintf(req, sizeof(req),
                           "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$5\r\nv\r\n\001x\r\n"
                           "*2\r\n$6\r\nSTRLEN\r\n$%zu\r\n%s\r\n"
                           "PING\r\n"
                           "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n",
                           strlen(key), key, strlen(key), key);
    snprintf(want, sizeof(want), "+OK\r\n:5\r\n+PONG\r\n$0\r\n\r\n");
    for (int step = 1; step <= 7; step += 6) {
        fd = h_raw_connect(&a);
        for (size_t off = 0; off < len; off += (size_t)step) {
            size_t n = len - off < (size_t)step ? len - off : (size_t)step;
            h_raw_send(fd, req + off, n);
            h_sleep_ms(1);      /* a time apart, so that each piece comes in a read of its own */
        }
        h_raw_recv(fd, buf, sizeof(buf), "$0\r\n\r\n", 3000, &closed);
        ck_assert_msg(strcmp(buf, want) == 0, "pieces of %d: got '%s'", step, buf);
        close(fd);
    }
}
END_TEST

/* QUIT answers OK, then the proxy closes the connection. */
START_TEST(test_quit)
{
    struct h_node a = h_proxy_addr();
    char buf[256];
    int fd = h_raw_connect(&a), closed;

    h_raw_sends(fd, "PING\r\nQUIT\r\nPING\r\n");
    h_raw_recv(fd, buf, sizeof(buf), NULL, 3000, &closed);
    ck_assert_msg(strcmp(buf, "+PONG\r\n+OK\r\n") == 0, "got '%s'", buf);
    ck_assert_msg(closed, "connection open after QUIT");
    close(fd);
}
END_TEST

START_TEST(test_local_ping_echo_select_hello)
{
    redisContext *c = h_connect_proxy();
    redisReply *r;

    r = h_cmd(c, "PING");
    H_EXPECT_STATUS(r, "PONG");
    freeReplyObject(r);
    r = h_cmd(c, "PING %s", "hi there");
    H_EXPECT_BULK(r, "hi there");
    freeReplyObject(r);
    r = h_cmd(c, "ECHO %b", "a\0b", (size_t)3);
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    ck_assert(r->len == 3 && memcmp(r->str, "a\0b", 3) == 0);
    freeReplyObject(r);
    H_OK(c, "SELECT 0");
    r = h_cmd(c, "SELECT 1");
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    r = h_cmd(c, "HELLO 4");      /* HELLO 3: test_resp3 */
    H_EXPECT_ERR(r, "NOPROTO");
    freeReplyObject(r);
    r = h_cmd(c, "HELLO 1");
    H_EXPECT_ERR(r, "NOPROTO");
    freeReplyObject(r);
    r = h_cmd(c, "HELLO 2");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements % 2, 0);
    for (size_t i = 0; i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING && strcmp(r->element[i]->str, "proto") == 0)
            H_EXPECT_INT(r->element[i + 1], 2);
    freeReplyObject(r);
    H_OK(c, "CLIENT SETNAME %s", "itest");
    r = h_cmd(c, "CLIENT GETNAME");
    H_EXPECT_BULK(r, "itest");
    freeReplyObject(r);
    redisFree(c);
}
END_TEST

START_TEST(test_local_cluster_commands)
{
    redisContext *c = h_connect_proxy();
    unsigned char *covered = calloc(H_SLOTS, 1);
    redisReply *r;

    r = h_cmd(c, "CLUSTER KEYSLOT foo");
    H_EXPECT_INT(r, 12182);
    freeReplyObject(r);
    r = h_cmd(c, "CLUSTER KEYSLOT {user1000}.following");
    H_EXPECT_INT(r, 3443);
    freeReplyObject(r);

    r = h_cmd(c, "CLUSTER INFO");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    ck_assert_msg(strstr(r->str, "cluster_state:ok\r\n") != NULL, "%s", r->str);
    ck_assert_msg(strstr(r->str, "cluster_slots_assigned:16384\r\n") != NULL, "%s", r->str);
    freeReplyObject(r);

    /* ranges that cover every slot once, each with a node [host, port, ...] */
    r = h_cmd(c, "CLUSTER SLOTS");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_ge(r->elements, 1);
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *e = r->element[i], *n;
        H_EXPECT_TYPE(e, REDIS_REPLY_ARRAY);
        ck_assert_uint_ge(e->elements, 3);
        H_EXPECT_TYPE(e->element[0], REDIS_REPLY_INTEGER);
        H_EXPECT_TYPE(e->element[1], REDIS_REPLY_INTEGER);
        n = e->element[2];
        H_EXPECT_TYPE(n, REDIS_REPLY_ARRAY);
        ck_assert_uint_ge(n->elements, 2);
        H_EXPECT_TYPE(n->element[0], REDIS_REPLY_STRING);
        H_EXPECT_TYPE(n->element[1], REDIS_REPLY_INTEGER);
        for (long long s = e->element[0]->integer; s <= e->element[1]->integer; s++) {
            ck_assert_msg(s >= 0 && s < H_SLOTS, "slot %lld out of range", s);
            ck_assert_msg(!covered[s], "slot %lld listed twice", s);
            covered[s] = 1;
        }
    }
    for (int s = 0; s < H_SLOTS; s++)
        ck_assert_msg(covered[s], "slot %d not covered", s);
    freeReplyObject(r);
    free(covered);
    redisFree(c);
}
END_TEST

START_TEST(test_local_command_time_dbsize)
{
    struct h_topo t;
    redisContext *c = h_connect_proxy();
    long long sum = 0, got = -1;
    redisReply *r;
    long now = (long)time(NULL);

    r = h_cmd(c, "COMMAND COUNT");
    H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
    ck_assert_msg(r->integer > 200, "COMMAND COUNT %lld", r->integer);
    freeReplyObject(r);

    r = h_cmd(c, "TIME");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 2);
    H_EXPECT_TYPE(r->element[0], REDIS_REPLY_STRING);
    H_EXPECT_TYPE(r->element[1], REDIS_REPLY_STRING);
    ck_assert_msg(labs(atol(r->element[0]->str) - now) <= 5, "TIME %s, now %ld",
                  r->element[0]->str, now);
    ck_assert_msg(atol(r->element[1]->str) >= 0 && atol(r->element[1]->str) < 1000000,
                  "TIME microseconds %s", r->element[1]->str);
    freeReplyObject(r);

    /* DBSIZE: the masters' sum (nothing else writes while this runs; a key
     * expiring in between could change it, hence a few attempts) */
    h_topo_load(&t);
    for (int attempt = 0; attempt < 3; attempt++) {
        sum = 0;
        for (int m = 0; m < t.nmasters; m++) {
            redisContext *n = h_connect_node(&t.masters[m]);
            redisReply *d = h_cmd(n, "DBSIZE");
            H_EXPECT_TYPE(d, REDIS_REPLY_INTEGER);
            sum += d->integer;
            freeReplyObject(d);
            redisFree(n);
        }
        r = h_cmd(c, "DBSIZE");
        H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
        got = r->integer;
        freeReplyObject(r);
        if (got == sum)
            break;
    }
    ck_assert_msg(got == sum, "DBSIZE %lld, the masters hold %lld keys", got, sum);
    redisFree(c);
}
END_TEST

START_TEST(test_unknown_command)
{
    redisContext *c = h_connect_proxy();
    redisReply *r = h_cmd(c, "foo a b");

    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    ck_assert_str_eq(r->str, "ERR unknown command 'foo', with args beginning with: 'a' 'b' ");
    freeReplyObject(r);
    r = h_cmd(c, "foo a");
    ck_assert_str_eq(r->str, "ERR unknown command 'foo', with args beginning with: 'a' ");
    freeReplyObject(r);
    r = h_cmd(c, "PING");
    H_EXPECT_STATUS(r, "PONG");
    freeReplyObject(r);
    redisFree(c);
}
END_TEST

/* Refused with an error (and without effect): administrative commands that
 * are dangerous through a shared proxy, and those a proxy cannot honour. */
START_TEST(test_refused_commands)
{
    static const char *refused[] = {
        "FLUSHALL", "FLUSHALL ASYNC", "FLUSHDB", "CONFIG SET slowlog-max-len 128",
        "DEBUG SLEEP 0", "SWAPDB 0 1", "CLUSTER ADDSLOTS 0",
    };
    struct h_topo t;
    redisContext *c = h_connect_proxy(), *owner;
    char key[128];
    redisReply *r;

    h_topo_load(&t);
    snprintf(key, sizeof(key), "%s:survivor", h_prefix());
    H_OK(c, "SET %s still-here", key);
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        r = h_cmd(c, refused[i]);
        ck_assert_msg(r->type == REDIS_REPLY_ERROR, "'%s' got %s", refused[i], h_show(r));
        freeReplyObject(r);
    }
    r = h_cmd(c, "MOVE %s 1", key);
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    /* each CLUSTER subcommand's refusal gives its own reason */
    r = h_cmd(c, "CLUSTER ADDSLOTS 0");
    ck_assert_msg(r->type == REDIS_REPLY_ERROR && strstr(r->str, "changes the cluster's topology"),
                  "CLUSTER ADDSLOTS got %s", h_show(r));
    freeReplyObject(r);
    r = h_cmd(c, "CLUSTER COUNTKEYSINSLOT 0");
    ck_assert_msg(r->type == REDIS_REPLY_ERROR && strstr(r->str, "asks about one node"),
                  "CLUSTER COUNTKEYSINSLOT got %s", h_show(r));
    freeReplyObject(r);

    owner = h_connect_owner(&t, key);
    r = h_cmd(owner, "GET %s", key);
    H_EXPECT_BULK(r, "still-here");
    freeReplyObject(r);
    redisFree(owner);
    /* the connection is still usable */
    r = h_cmd(c, "GET %s", key);
    H_EXPECT_BULK(r, "still-here");
    freeReplyObject(r);
    redisFree(c);
}
END_TEST

/* What cannot mean the same thing through a proxy stays refused with
 * dangerous commands on: MODULE's subcommands too (a module loaded on one
 * master is not loaded on the cluster). */
START_TEST(test_refused_even_when_dangerous)
{
    static const char *const args[] = { "--enable-dangerous-commands", "yes", NULL };
    static const char *refused[] = { "MODULE LIST", "MODULE LOAD /nonexistent.so",
                                     "MODULE UNLOAD x", "MODULE", "SWAPDB 0 1", "DEBUG SLEEP 0" };
    struct h_proxy px;
    h_proxy_start(&px, args);
    redisContext *c = h_connect_extra(&px);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        redisReply *r = h_cmd(c, refused[i]);
        ck_assert_msg(r->type == REDIS_REPLY_ERROR &&
                      (strstr(r->str, "cannot mean the same thing through a cluster proxy") ||
                       strstr(r->str, "wrong number of arguments")),
                      "'%s' got %s", refused[i], h_show(r));
        freeReplyObject(r);
    }
    redisFree(c);
    h_proxy_stop(&px);
}
END_TEST

/* With proto-max-bulk-len at its minimum, 1mb (an extra proxy instance): a
 * longer bulk is a protocol error, shorter ones pass. */
START_TEST(test_proto_max_bulk_len)
{
    static const char *args[] = { "--proto-max-bulk-len", "1mb", NULL };
    struct h_proxy px;
    redisContext *c;
    redisReply *r;
    char buf[4096];
    int fd, closed;

    memset(buf, 'b', sizeof(buf));
    h_proxy_start(&px, args);
    c = h_connect_extra(&px);
    H_OK(c, "SET %s:bulk %b", h_prefix(), buf, (size_t)1000);
    fd = h_raw_connect(&px.addr);
    h_raw_sends(fd, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n");
    h_raw_recv(fd, buf, sizeof(buf), NULL, 3000, &closed);
    ck_assert_msg(strncmp(buf, PROTO_ERR, strlen(PROTO_ERR)) == 0, "got '%s'", buf);
    ck_assert_msg(closed, "connection still open");
    close(fd);
    r = h_cmd(c, "STRLEN %s:bulk", h_prefix());
    H_EXPECT_INT(r, 1000);
    freeReplyObject(r);
    redisFree(c);
    h_proxy_stop(&px);
}
END_TEST

/* The other client of extra proxy px is still served; then both go. */
static void expect_other_served(redisContext *other, struct h_proxy *px)
{
    redisReply *r = h_cmd(other, "PING");

    H_EXPECT_STATUS(r, "PONG");
    freeReplyObject(r);
    redisFree(other);
    h_proxy_stop(px);
}

/* A request that outgrows client-query-buffer-limit (1mb, an extra proxy)
 * costs its sender the connection, and nobody else anything. */
START_TEST(test_query_buffer_limit)
{
    static const char *args[] = { "--client-query-buffer-limit", "1mb", NULL };
    struct h_proxy px;
    redisContext *other;
    char *chunk = malloc(100000), buf[4096];
    int fd, closed;

    ck_assert_ptr_nonnull(chunk);
    memset(chunk, 'q', 100000);
    h_proxy_start(&px, args);
    other = h_connect_extra(&px);
    fd = h_raw_connect(&px.addr);
    /* 2 MB announced (under proto-max-bulk-len), 1.5 MB sent, never finished */
    h_raw_sends(fd, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n");
    for (int i = 0; i < 15; i++) {
        if (send(fd, chunk, 100000, MSG_NOSIGNAL) < 0)
            break;   /* already closed: fine */
    }
    h_raw_recv(fd, buf, sizeof(buf), NULL, 3000, &closed);
    ck_assert_msg(closed, "connection open with 1.5 MB buffered over a 1mb limit");
    ck_assert_msg(buf[0] == '\0' || strncmp(buf, PROTO_ERR, strlen(PROTO_ERR)) == 0,
                  "got '%s'", buf);
    close(fd);
    expect_other_served(other, &px);
    free(chunk);
}
END_TEST

/* A client that sends but does not read is disconnected once the replies it
 * owes pass client-output-buffer-limit (hard 1mb), instead of the proxy
 * buffering 40 MB for it; other clients keep working. */
START_TEST(test_output_buffer_limit)
{
    static const char *args[] = { "--client-output-buffer-limit", "1mb", "0", "0", NULL };
    enum { NGET = 400, SIZE = 100000 };
    struct h_proxy px;
    redisContext *other;
    redisReply *r;
    char *buf = malloc(1 << 20), key[128], req[256];
    size_t total = 0, reqlen;
    int fd, closed = 0;
    long long t0;

    ck_assert_ptr_nonnull(buf);
    memset(buf, 'o', SIZE);
    h_proxy_start(&px, args);
    other = h_connect_extra(&px);
    snprintf(key, sizeof(key), "%s:obl", h_prefix());
    H_OK(other, "SET %s %b", key, buf, (size_t)SIZE);

    fd = h_raw_connect(&px.addr);
    reqlen = (size_t)snprintf(req, sizeof(req), "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n",
                              strlen(key), key);
    for (int i = 0; i < NGET; i++)
        if (send(fd, req, reqlen, MSG_NOSIGNAL) < 0)
            break;
    /* not reading; meanwhile the other client is served */
    t0 = h_now_ms();
    while (h_now_ms() - t0 < 1500) {
        r = h_cmd(other, "STRLEN %s", key);
        H_EXPECT_INT(r, SIZE);
        freeReplyObject(r);
        h_sleep_ms(50);         /* a window of load: the reads below wait for the close */
    }
    while (!closed) {
        size_t n = h_raw_recv(fd, buf, 1 << 20, NULL, 3000, &closed);
        if (n == 0)
            break;
        total += n;
    }
    ck_assert_msg(closed, "slow reader still connected after %zu bytes", total);
    ck_assert_msg(total < (size_t)NGET * SIZE, "slow reader got all %zu bytes", total);
    ck_assert_int_eq(h_info_field(other, "clients_output_limit_closed"), 1);
    ck_assert_int_eq(h_info_field(other, "clients_output_limit_closed_pubsub"), 0);
    close(fd);
    expect_other_served(other, &px);
    free(buf);
}
END_TEST

static Suite *protocol_suite(void)
{
    Suite *s = suite_create("protocol");
    TCase *tc = tcase_create("protocol");

    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_malformed_closes_only_its_connection, 0,
                        (int)(sizeof(malformed) / sizeof(malformed[0])));
    tcase_add_test(tc, test_inline_commands);
    tcase_add_test(tc, test_fragmented_requests);
    tcase_add_test(tc, test_quit);
    tcase_add_test(tc, test_local_ping_echo_select_hello);
    tcase_add_test(tc, test_local_cluster_commands);
    tcase_add_test(tc, test_local_command_time_dbsize);
    tcase_add_test(tc, test_unknown_command);
    tcase_add_test(tc, test_refused_commands);
    tcase_add_test(tc, test_refused_even_when_dangerous);
    tcase_add_test(tc, test_proto_max_bulk_len);
    tcase_add_test(tc, test_query_buffer_limit);
    tcase_add_test(tc, test_output_buffer_limit);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(protocol_suite());
}
