/*
 * RESP3 through the proxy, byte for byte against one redis-server 7.0.
 *
 * A client that sends HELLO 3 is answered in RESP3 from then on: maps,
 * sets, doubles, nulls, booleans and verbatim strings where redis-server
 * sends them, in replies the nodes send (forwarded as they are over the
 * worker's RESP3 node connections), in replies the proxy merges (a split
 * MGET, DEL, EXISTS), in replies it writes itself (CLIENT TRACKINGINFO,
 * CLUSTER SHARDS/INFO, INFO, CLIENT INFO) and in EXEC's array; pub/sub
 * confirmations and messages are pushes, and a subscribed RESP3 client may
 * run any command. HELLO 2 and RESET go back to RESP2.
 *
 * Each case sends the same bytes to the suite's proxy and to a standalone
 * redis-server started here, and compares everything both send back, but
 * for HELLO's own reply, whose id differs (its other fields are checked).
 */
#include "harness.h"

static struct h_proxy ref;
static char tag[64];

/* Commands separated by '\n', arguments by '|', as multibulk; in an
 * argument "{t}" becomes the run's hash tag and "%t" the run's name (for
 * keys of other tags: "{a%t}k"). */
static size_t build(const char *script, char *out, size_t size)
{
    size_t at = 0;
    char line[2048];
    for (const char *p = script; *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        ck_assert_uint_lt(n, sizeof line);
        memcpy(line, p, n);
        line[n] = '\0';
        p += n + (end != NULL);
        const char *argv[32];
        int argc = 0;
        char *save = NULL;
        for (char *t = strtok_r(line, "|", &save); t && argc < 32; t = strtok_r(NULL, "|", &save))
            argv[argc++] = t;
        at += (size_t)snprintf(out + at, size - at, "*%d\r\n", argc);
        for (int i = 0; i < argc; i++) {
            char arg[512];
            const char *t = strstr(argv[i], "{t}"), *r = strstr(argv[i], "%t");
            if (t)
                snprintf(arg, sizeof arg, "%.*s{%s}%s", (int)(t - argv[i]), argv[i], tag, t + 3);
            else if (r)
                snprintf(arg, sizeof arg, "%.*s%s%s", (int)(r - argv[i]), argv[i], tag, r + 2);
            else
                snprintf(arg, sizeof arg, "%s", argv[i]);
            at += (size_t)snprintf(out + at, size - at, "$%zu\r\n%s\r\n", strlen(arg), arg);
        }
        ck_assert_uint_lt(at, size);
    }
    return at;
}

/* n whole replies from fd into buf (NUL-terminated); their length. */
static size_t replies(int fd, int n, char *buf, size_t size)
{
    size_t got = 0, at = 0;
    long long deadline = h_now_ms() + 5000;
    for (int k = 0; k < n;) {
        long one = h_resp_parse(buf + at, got - at, NULL);
        ck_assert_msg(one >= 0, "malformed reply: %s", h_esc(buf + at, got - at));
        if (one > 0) {
            at += (size_t)one;
            k++;
            continue;
        }
        struct pollfd pfd = { fd, POLLIN, 0 };
        ck_assert_msg(poll(&pfd, 1, (int)(deadline - h_now_ms())) == 1,
                      "%d of %d replies within 5 s: %s", k, n, h_esc(buf, got));
        ssize_t r = recv(fd, buf + got, size - 1 - got, 0);
        ck_assert_msg(r > 0, "closed after %d of %d replies", k, n);
        got += (size_t)r;
    }
    ck_assert_uint_eq(got, at);
    buf[at] = '\0';
    return at;
}

/* Send script to both; both answer nreplies replies, the same bytes. */
static void same(int fa, int fb, const char *script, int nreplies)
{
    static char cmd[1 << 16], a[1 << 16], b[1 << 16];
    size_t n = build(script, cmd, sizeof cmd);
    h_raw_send(fa, cmd, n);
    h_raw_send(fb, cmd, n);
    size_t la = replies(fa, nreplies, a, sizeof a);
    size_t lb = replies(fb, nreplies, b, sizeof b);
    ck_assert_msg(la == lb && memcmp(a, b, la) == 0, "%s\nredis-server: %s\nproxy:        %s",
                  script, h_esc(a, la), h_esc(b, lb));
}

/* HELLO <ver> on fd: its reply, with the id (which differs between
 * servers) replaced by one '#'. */
static void hello(int fd, const char *ver, char *buf, size_t size)
{
    char cmd[64];
    int n = snprintf(cmd, sizeof cmd, "*2\r\n$5\r\nHELLO\r\n$1\r\n%s\r\n", ver);
    h_raw_send(fd, cmd, (size_t)n);
    replies(fd, 1, buf, size);
    char *id = strstr(buf, "$2\r\nid\r\n:");
    ck_assert_ptr_nonnull(id);
    char *d = id + 9, *end = d;
    while (*end >= '0' && *end <= '9')
        end++;
    ck_assert_ptr_ne(d, end);
    *d = '#';
    memmove(d + 1, end, strlen(end) + 1);
}

/* Both connections in RESP3; HELLO 3 answered the same but for the id. */
static void both_hello3(int fa, int fb)
{
    char a[1024], b[1024];
    hello(fa, "3", a, sizeof a);
    hello(fb, "3", b, sizeof b);
    ck_assert_msg(strcmp(a, b) == 0, "HELLO 3\nredis-server: %s\nproxy:        %s",
                  h_esc_str(a), h_esc_str(b));
    ck_assert(strncmp(b, "%7\r\n$6\r\nserver\r\n", 16) == 0);
    ck_assert_ptr_nonnull(strstr(b, "$5\r\nproto\r\n:3\r\n"));
}

static void setup(void)
{
    h_ref_start(&ref, "redis-ref-resp3", NULL);
    H_FMT(tag, sizeof tag, "r3%ld%lld", (long)getpid(), h_now_ms() % 1000000);
}

static void teardown(void)
{
    h_proxy_stop(&ref);
}

static void connect_both(int *fa, int *fb)
{
    struct h_node proxy = h_proxy_addr();
    *fa = h_raw_connect(&ref.addr);
    *fb = h_raw_connect(&proxy);
}

START_TEST(test_hello_and_back)
{
    int fa, fb;
    char a[1024], b[1024];
    connect_both(&fa, &fb);
    hello(fa, "2", a, sizeof a);            /* RESP2 first: an array */
    hello(fb, "2", b, sizeof b);
    ck_assert_msg(strcmp(a, b) == 0, "HELLO 2: %s vs %s", h_esc_str(a), h_esc_str(b));
    ck_assert(b[0] == '*');
    both_hello3(fa, fb);
    char cmd[256];
    size_t n = build("HELLO|3|SETNAME|r3name", cmd, sizeof cmd);
    h_raw_send(fa, cmd, n);
    h_raw_send(fb, cmd, n);
    replies(fa, 1, a, sizeof a);            /* HELLO's map: the id differs */
    replies(fb, 1, b, sizeof b);
    same(fa, fb, "CLIENT|GETNAME", 1);
    same(fa, fb, "HELLO|4", 1);
    same(fa, fb, "HELLO|x", 1);
    same(fa, fb, "HELLO|3|BOGUS", 1);
    /* HELLO without a version keeps the protocol */
    hello(fa, "3", a, sizeof a);
    h_raw_sends(fb, "*1\r\n$5\r\nHELLO\r\n");
    replies(fb, 1, b, sizeof b);
    ck_assert_msg(strncmp(b, "%7\r\n", 4) == 0 && strstr(b, "proto\r\n:3\r\n"), "%s", h_esc_str(b));
    /* CLIENT INFO says resp=3, in a verbatim string */
    h_raw_sends(fb, "*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n");
    replies(fb, 1, b, sizeof b);
    ck_assert_msg(b[0] == '=' && strstr(b, "\r\ntxt:id=") && strstr(b, " resp=3"), "%s",
                  h_esc_str(b));
    same(fa, fb, "RESET\nHSET|h{t}|f|v\nHGETALL|h{t}\nDEL|h{t}", 4);   /* RESP2 again */
    close(fa);
    close(fb);
}
END_TEST

START_TEST(test_replies_forwarded)
{
    int fa, fb;
    connect_both(&fa, &fb);
    both_hello3(fa, fb);
    same(fa, fb,
         "SET|s{t}|v\nGET|s{t}\nGET|missing{t}\nHSET|h{t}|f|v|g|w\nHGETALL|h{t}\n"
         "SADD|set{t}|m\nSMEMBERS|set{t}\nSINTER|set{t}|set{t}\n"
         "ZADD|z{t}|1.5|a|2|b\nZSCORE|z{t}|a\nZSCORE|z{t}|none\nZINCRBY|z{t}|0.1|b\n"
         "ZRANGE|z{t}|0|-1|WITHSCORES\nZPOPMIN|z{t}\nLPOP|nolist{t}\nBLPOP|nolist{t}|0.01\n"
         "XADD|x{t}|1-1|f|v\nXREAD|STREAMS|x{t}|0\nXRANGE|x{t}|-|+\n"
         "CONFIG|GET|maxmemory-policy\nCLIENT|TRACKINGINFO\nSCRIPT|EXISTS|0000\n"
         "PUBSUB|NUMSUB|nochannel{t}\nOBJECT|ENCODING|s{t}\nTYPE|z{t}",
         25);
    /* scripts: RESP3 types from redis.setresp(3), the RESP2 conversion without */
    same(fa, fb,
         "EVAL|redis.setresp(3); return redis.call('hgetall', KEYS[1])|1|h{t}\n"
         "EVAL|redis.setresp(3); return {double=3.5}|0\n"
         "EVAL|redis.setresp(3); return {big_number='123456789012345678901234567890'}|0\n"
         "EVAL|return true|0\nEVAL|return false|0\nEVAL|return nil|0\n"
         "EVAL|redis.setresp(3); return redis.call('get', KEYS[1])|1|missing{t}\n"
         "EVAL|return redis.error_reply('E1 x')|0",
         8);
    same(fa, fb, "DEL|s{t}|h{t}|set{t}|z{t}|x{t}", 1);
    close(fa);
    close(fb);
}
END_TEST

START_TEST(test_replies_merged_and_exec)
{
    int fa, fb;
    connect_both(&fa, &fb);
    both_hello3(fa, fb);
    /* keys of different slots: MGET, DEL, EXISTS split and merged */
    same(fa, fb,
         "SET|{a%t}k|1\nSET|{b%t}k|2\nMGET|{a%t}k|{nope}k|{b%t}k\nEXISTS|{a%t}k|{b%t}k|{c}k\n"
         "DEL|{a%t}k|{b%t}k", 5);
    /* EXEC's array holds each command's RESP3 reply */
    same(fa, fb,
         "HSET|h{t}|f|v\nMULTI\nHGETALL|h{t}\nZADD|z{t}|1|m\nZSCORE|z{t}|m\nGET|missing{t}\n"
         "SMEMBERS|h2{t}\nEXEC\nDEL|h{t}|z{t}", 9);
    /* a WATCHed transaction goes on a dedicated connection that speaks RESP3 too */
    same(fa, fb,
         "HSET|h{t}|f|v\nWATCH|h{t}\nMULTI\nHGETALL|h{t}\nEXEC\nDEL|h{t}", 6);
    close(fa);
    close(fb);
}
END_TEST

START_TEST(test_pubsub_pushes)
{
    int fa, fb, pa, pb;
    connect_both(&fa, &fb);
    connect_both(&pa, &pb);
    both_hello3(fa, fb);
    /* confirmations are pushes; a subscribed RESP3 client runs any command */
    same(fa, fb, "SUBSCRIBE|ch{t}\nPSUBSCRIBE|pat{t}*\nSET|s{t}|v\nGET|s{t}\nPING", 5);
    /* the publisher's count differs (the proxy's subscriber connection is
     * on one master): only the subscriber's bytes are compared */
    char cmd[256], a[1024], b[1024];
    size_t n = build("PUBLISH|ch{t}|hello\nPUBLISH|pat{t}x|there", cmd, sizeof cmd);
    h_raw_send(pa, cmd, n);
    h_raw_send(pb, cmd, n);
    replies(pa, 2, a, sizeof a);
    replies(pb, 2, b, sizeof b);
    replies(fa, 2, a, sizeof a);
    replies(fb, 2, b, sizeof b);
    ck_assert_msg(strcmp(a, b) == 0, "messages\nredis-server: %s\nproxy:        %s",
                  h_esc_str(a), h_esc_str(b));
    ck_assert(b[0] == '>');
    same(fa, fb, "UNSUBSCRIBE|ch{t}\nPUNSUBSCRIBE\nDEL|s{t}\nPING", 4);
    /* shard channels: on their slot's master, pushes too */
    same(fa, fb, "SSUBSCRIBE|sch{t}\nGET|s{t}", 2);
    n = build("SPUBLISH|sch{t}|shard-hello", cmd, sizeof cmd);
    h_raw_send(pa, cmd, n);
    h_raw_send(pb, cmd, n);
    replies(pa, 1, a, sizeof a);
    replies(pb, 1, b, sizeof b);
    ck_assert_msg(strcmp(a, b) == 0, "SPUBLISH: %s vs %s", h_esc_str(a), h_esc_str(b));
    replies(fa, 1, a, sizeof a);
    replies(fb, 1, b, sizeof b);
    ck_assert_msg(strcmp(a, b) == 0 && b[0] == '>', "smessage\nredis-server: %s\nproxy:        %s",
                  h_esc_str(a), h_esc_str(b));
    same(fa, fb, "SUNSUBSCRIBE\nPING", 2);
    close(fa);
    close(fb);
    close(pa);
    close(pb);
}
END_TEST

/* A command runs in the protocol its predecessors left: a RESET behind a
 * blocking command returns to RESP2 for the commands read behind it (they
 * reach the proxy before the RESET runs); a command the proxy answers inside
 * MULTI is answered in EXEC's array in RESP3. */
START_TEST(test_protocol_as_commands_run)
{
    int fa, fb;
    connect_both(&fa, &fb);
    both_hello3(fa, fb);
    same(fa, fb, "BLPOP|nolist{t}|0.05\nRESET\nHSET|h{t}|f|v\nHGETALL|h{t}\nSUBSCRIBE|ch{t}\n"
                 "RESET\nDEL|h{t}", 7);
    both_hello3(fa, fb);
    same(fa, fb, "MULTI\nCLIENT|GETNAME\nGET|missing{t}\nEXEC", 4);
    close(fa);
    close(fb);
}
END_TEST

/* The nth reply in buf[0..len) (from 0), as a string. */
static const char *nth_reply(const char *buf, size_t len, int nth)
{
    size_t at = 0;
    for (int k = 0; k < nth; k++) {
        long one = h_resp_parse(buf + at, len - at, NULL);
        ck_assert_int_gt(one, 0);
        at += (size_t)one;
    }
    return buf + at;
}

/*
 * A worker has a RESP2 and a RESP3 connection to each master: a command
 * sent after HELLO changed the protocol goes out on the other one, and
 * must not overtake the command before it, which may wait on a connection
 * still being opened (a new proxy opens them as they are first needed).
 * Each master in turn: one protocol's connection opened first by a GET,
 * then, in one write, RPUSH a in the other protocol, RPUSH b back in the
 * first, RPUSH c in the other again: the list is a, b, c as on one server.
 */
START_TEST(test_protocol_switch_keeps_order)
{
    const char *args[] = { "--threads", "1", NULL };
    struct h_proxy p;
    struct h_topo t;
    char prefix[80], key[128], script[1024], cmd[4096], buf[8192];
    h_topo_load(&t);
    h_proxy_start(&p, args);
    H_FMT(prefix, sizeof prefix, "order%s", tag);
    for (int m = 0; m < t.nmasters; m++) {
        const char *warm = m % 2 ? "3" : "2", *other = m % 2 ? "2" : "3";
        h_key_on_master(&t, m, prefix, 0, key, sizeof key);
        int fd = h_raw_connect(&p.addr);
        H_FMT(script, sizeof script, "HELLO|%s\nGET|%s", warm, key);
        h_raw_send(fd, cmd, build(script, cmd, sizeof cmd));
        replies(fd, 2, buf, sizeof buf);
        H_FMT(script, sizeof script, "HELLO|%s\nRPUSH|%s|a\nHELLO|%s\nRPUSH|%s|b\n"
              "HELLO|%s\nRPUSH|%s|c\nLRANGE|%s|0|-1\nDEL|%s", other, key, warm, key, other,
              key, key, key);
        h_raw_send(fd, cmd, build(script, cmd, sizeof cmd));
        size_t n = replies(fd, 8, buf, sizeof buf);
        static const char abc[] = "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n";
        ck_assert_msg(strncmp(nth_reply(buf, n, 6), abc, sizeof abc - 1) == 0,
                      "master %d, RESP%s's connection opened first: LRANGE answered %s", m,
                      warm, h_esc_str(nth_reply(buf, n, 6)));
        close(fd);
    }
    h_proxy_stop(&p);
}
END_TEST

/* What the proxy answers itself, where a standalone server has no answer to
 * compare with: the types redis-server's cluster mode writes. */
START_TEST(test_local_replies)
{
    struct h_node proxy = h_proxy_addr();
    int fb = h_raw_connect(&proxy);
    char b[16384];
    hello(fb, "3", b, sizeof b);
    h_raw_sends(fb, "*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n");
    replies(fb, 1, b, sizeof b);
    ck_assert_msg(b[0] == '=' && strstr(b, "\r\ntxt:cluster_state:ok\r\n"), "%s", h_esc_str(b));
    h_raw_sends(fb, "*2\r\n$7\r\nCLUSTER\r\n$6\r\nSHARDS\r\n");
    replies(fb, 1, b, sizeof b);
    ck_assert_msg(strncmp(b, "*1\r\n%2\r\n$5\r\nslots\r\n", 19) == 0 &&
                  strstr(b, "$5\r\nnodes\r\n*1\r\n%7\r\n$2\r\nid\r\n"), "%s", h_esc_str(b));
    h_raw_sends(fb, "*2\r\n$4\r\nINFO\r\n$8\r\nkeyspace\r\n");
    replies(fb, 1, b, sizeof b);
    ck_assert_msg(b[0] == '=' && strstr(b, "\r\ntxt:# Keyspace\r\n"), "%s", h_esc_str(b));
    close(fb);
    /* redis-cli -3 (HELLO 3 at connect) reads what the proxy sends */
    char out[1024];
    h_shell(out, sizeof out, "redis-cli -3 -p %d HSET 'cli{%s}' f 1.5 >/dev/null && "
            "redis-cli -3 -p %d HGETALL 'cli{%s}' && redis-cli -3 -p %d ZADD 'z{%s}' 2.5 m "
            ">/dev/null && redis-cli -3 -p %d ZSCORE 'z{%s}' m && redis-cli -3 -p %d "
            "DEL 'cli{%s}' 'z{%s}'", proxy.port, tag, proxy.port, tag, proxy.port, tag,
            proxy.port, tag, proxy.port, tag, tag);
    ck_assert_str_eq(out, "f 1.5\n2.5\n2\n");     /* a map entry per line, as from a node */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("resp3");
    TCase *tc = tcase_create("as redis-server");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_hello_and_back);
    tcase_add_test(tc, test_replies_forwarded);
    tcase_add_test(tc, test_replies_merged_and_exec);
    tcase_add_test(tc, test_pubsub_pushes);
    tcase_add_test(tc, test_protocol_as_commands_run);
    tcase_add_test(tc, test_protocol_switch_keeps_order);
    tcase_add_test(tc, test_local_replies);
    suite_add_tcase(s, tc);
    return h_run(s);
}
