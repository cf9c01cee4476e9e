/*
 * Client-side caching's CLIENT subcommands, against one redis-server 7.0
 * started here: CLIENT TRACKING's options are read as Redis reads them,
 * and every bad combination gets Redis's own error (REDIRECT to a client
 * that does not exist or twice, PREFIX without BCAST, BCAST with OPTIN,
 * OPTIN with OPTOUT, overlapping prefixes, a syntax error, OFF with the
 * same options); TRACKING OFF, CACHING, GETREDIR and TRACKINGINFO answer
 * as Redis does with tracking off, in RESP2 and RESP3. A valid TRACKING ON
 * is refused by the proxy, saying why (issue 40: the invalidations are not
 * sent yet), where Redis answers OK.
 */
#include "harness.h"

static struct h_proxy ref;

static void setup(void)
{
    h_ref_start(&ref, "redis-tracking", NULL);
}

static void teardown(void)
{
    h_proxy_stop(&ref);
}

/* Whether two replies are the same (type, value, elements). */
static int same_reply(const redisReply *a, const redisReply *b)
{
    if (a->type != b->type || a->integer != b->integer || a->len != b->len ||
        a->elements != b->elements || (a->len && memcmp(a->str, b->str, a->len) != 0))
        return 0;
    for (size_t i = 0; i < a->elements; i++)
        if (!same_reply(a->element[i], b->element[i]))
            return 0;
    return 1;
}

/* words (split at blanks; "ID" is the connection's own CLIENT ID) run on
 * c, whose id is id. */
static redisReply *run_words(redisContext *c, long long id, const char *words)
{
    char buf[1024], ids[24];
    const char *argv[32];
    int argc = 0;
    snprintf(ids, sizeof ids, "%lld", id);
    snprintf(buf, sizeof buf, "%s", words);
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && argc < 32;
         t = strtok_r(NULL, " ", &save))
        argv[argc++] = strcmp(t, "ID") == 0 ? ids : t;
    return h_cmd_argv(c, argc, argv);
}

/* Both answer words the same. */
static void same(redisContext *px, long long pid, redisContext *rs, long long rid,
                 const char *words)
{
    redisReply *a = run_words(rs, rid, words), *b = run_words(px, pid, words);
    char sa[1024];
    snprintf(sa, sizeof sa, "%s", h_show(a));
    ck_assert_msg(same_reply(a, b), "%s\nredis-server: %s\nproxy:        %s", words, sa, h_show(b));
    freeReplyObject(a);
    freeReplyObject(b);
}

START_TEST(test_options_as_redis)
{
    redisContext *px = h_connect_proxy(), *rs = h_connect_node(&ref.addr);
    long long pid = h_client_id(px), rid = h_client_id(rs);
    static const char *const cases[] = {
        "CLIENT TRACKING ON PREFIX a",
        "CLIENT TRACKING ON prefix a optin",
        "CLIENT TRACKING ON BCAST OPTIN",
        "CLIENT TRACKING ON OPTOUT BCAST PREFIX a",
        "CLIENT TRACKING ON OPTIN OPTOUT",
        "CLIENT TRACKING ON BCAST PREFIX a PREFIX ab",
        "CLIENT TRACKING ON BCAST PREFIX abc PREFIX x PREFIX ab",
        "CLIENT TRACKING ON BCAST PREFIX a PREFIX a",
        "CLIENT TRACKING ON REDIRECT 987654321",
        "CLIENT TRACKING ON REDIRECT x",
        "CLIENT TRACKING ON REDIRECT ID REDIRECT ID",
        "CLIENT TRACKING ON REDIRECT 987654321 PREFIX a",
        "CLIENT TRACKING ON NOPE",
        "CLIENT TRACKING ON REDIRECT",
        "CLIENT TRACKING ON BCAST PREFIX",
        "CLIENT TRACKING MAYBE",
        "CLIENT TRACKING MAYBE BCAST",
        "CLIENT TRACKING",
        "CLIENT TRACKING OFF BCAST PREFIX a PREFIX ab OPTIN OPTOUT",
        "CLIENT TRACKING OFF REDIRECT 987654321",
        "CLIENT TRACKING OFF",
        "CLIENT CACHING YES",
        "CLIENT CACHING NO",
        "CLIENT CACHING maybe",
        "CLIENT CACHING",
        "CLIENT GETREDIR",
        "CLIENT GETREDIR x",
        "CLIENT TRACKINGINFO",
        "CLIENT TRACKINGINFO x",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        same(px, pid, rs, rid, cases[i]);
    redisFree(px);
    redisFree(rs);
}
END_TEST

/* TRACKINGINFO in RESP3: a map whose flags are a set. */
START_TEST(test_trackinginfo_resp3)
{
    struct h_node proxy = h_proxy_addr();
    int fa = h_raw_connect(&ref.addr), fb = h_raw_connect(&proxy);
    static const char hello[] = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
    static const char info[] = "*2\r\n$6\r\nCLIENT\r\n$12\r\nTRACKINGINFO\r\n";
    char a[4096], b[4096];
    h_raw_sends(fa, hello);
    h_raw_sends(fb, hello);
    /* HELLO's map, up to its last field's value */
    h_raw_recv(fa, a, sizeof a, "modules\r\n*0\r\n", 5000, NULL);
    h_raw_recv(fb, b, sizeof b, "modules\r\n*0\r\n", 5000, NULL);
    h_raw_sends(fa, info);
    h_raw_sends(fb, info);
    h_raw_recv(fa, a, sizeof a, "prefixes\r\n*0\r\n", 5000, NULL);
    h_raw_recv(fb, b, sizeof b, "prefixes\r\n*0\r\n", 5000, NULL);
    ck_assert_str_eq(b, a);
    ck_assert_str_eq(a, "%3\r\n$5\r\nflags\r\n~1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n"
                        "$8\r\nprefixes\r\n*0\r\n");
    close(fa);
    close(fb);
}
END_TEST

/* A valid ON: Redis answers OK; the proxy refuses it, saying why, and
 * stays as it was (TRACKINGINFO off). */
START_TEST(test_on_refused_until_invalidations)
{
    redisContext *px = h_connect_proxy(), *rs = h_connect_node(&ref.addr);
    static const char *const ons[] = {
        "CLIENT TRACKING ON", "CLIENT TRACKING ON OPTIN NOLOOP",
        "CLIENT TRACKING ON BCAST PREFIX a PREFIX b", "CLIENT TRACKING ON REDIRECT ID",
    };
    for (size_t i = 0; i < sizeof ons / sizeof ons[0]; i++) {
        redisReply *r = run_words(rs, h_client_id(rs), ons[i]);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);
        freeReplyObject(run_words(rs, 0, "CLIENT TRACKING OFF"));
        r = run_words(px, h_client_id(px), ons[i]);
        H_EXPECT_ERR(r, "ERR client-side caching (CLIENT TRACKING ON) is not supported");
        freeReplyObject(r);
        r = h_cmd(px, "CLIENT GETREDIR");
        H_EXPECT_INT(r, -1);
        freeReplyObject(r);
    }
    redisFree(px);
    redisFree(rs);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tracking");
    TCase *tc = tcase_create("as redis-server");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_options_as_redis);
    tcase_add_test(tc, test_trackinginfo_resp3);
    tcase_add_test(tc, test_on_refused_until_invalidations);
    suite_add_tcase(s, tc);
    return h_run(s);
}
