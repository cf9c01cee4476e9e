/*
 * Commands with a huge number of arguments: the proxy answers each (or
 * refuses it with an error) and keeps serving. A SUBSCRIBE of 700,000
 * distinct channels is the regression case: its argument arrays lay on
 * the worker's stack and the process died of SIGSEGV.
 */
#include "harness.h"

#define HOSTILE_CHANNELS 700000

/* The proxy still answers another client: PING, SET and GET. */
static void expect_serving(void)
{
    redisContext *c = h_connect_proxy();
    redisReply *r = h_cmd(c, "PING");
    H_EXPECT_STATUS(r, "PONG");
    freeReplyObject(r);
    r = h_cmd(c, "SET %s:hostile:after v", h_prefix());
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    r = h_cmd(c, "GET %s:hostile:after", h_prefix());
    H_EXPECT_BULK(r, "v");
    freeReplyObject(r);
    redisFree(c);
}

/* argv of verb and n distinct names "<prefix>:hostile:<i>". */
static const char **names_argv(const char *verb, int n, char **store)
{
    const char **argv = malloc(sizeof *argv * (size_t)(n + 1));
    char *s = malloc((size_t)n * 48);
    ck_assert(argv && s);
    argv[0] = verb;
    for (int i = 0; i < n; i++) {
        argv[i + 1] = s + (size_t)i * 48;
        snprintf(s + (size_t)i * 48, 48, "%s:hostile:%d", h_prefix(), i);
    }
    *store = s;
    return argv;
}

START_TEST(test_subscribe_700k_channels)
{
    char *store;
    const char **argv = names_argv("SUBSCRIBE", HOSTILE_CHANNELS, &store);
    redisContext *c = h_connect_proxy();
    struct timeval tv = { 120, 0 };
    redisSetTimeout(c, tv);
    ck_assert_int_eq(redisAppendCommandArgv(c, HOSTILE_CHANNELS + 1, argv, NULL), REDIS_OK);
    /* one confirmation per channel, as redis-server sends, counted at the
     * first and the last; or the connection closed for passing the pubsub
     * output limit (32mb), as redis-server closes a subscriber that falls
     * that far behind. Either way the proxy lives on. */
    redisReply *r = NULL;
    int got = 0;
    while (got < HOSTILE_CHANNELS && redisGetReply(c, (void **)&r) == REDIS_OK && r) {
        ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
        ck_assert_int_eq(r->elements, 3);
        if (got == 0 || got == HOSTILE_CHANNELS - 1)
            ck_assert_int_eq(r->element[2]->integer, got + 1);
        freeReplyObject(r);
        got++;
    }
    ck_assert_msg(got == HOSTILE_CHANNELS || c->err == REDIS_ERR_EOF,
                  "after %d confirmations: %s", got, c->errstr);
    expect_serving();
    redisFree(c);
    free(argv);
    free(store);
    expect_serving();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_args");
    TCase *tc = tcase_create("many_args");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_subscribe_700k_channels);
    suite_add_tcase(s, tc);
    return h_run(s);
}
