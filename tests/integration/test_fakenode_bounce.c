/*
 * Redirects that repeat, as atomic slot migration makes them (Redis 8.4's
 * CLUSTER MIGRATION, Valkey 9's CLUSTER MIGRATESLOTS): while a slot changes
 * hands back and forth, the nodes bounce a command with a MOVED, then
 * another, several in a row within a few milliseconds.
 *
 * Two fake nodes, A and B, share the slot of the test's key. Each time the
 * command reaches the slot's owner while bounces are left, the slot moves
 * to the other node (both nodes' CLUSTER SLOTS and CLUSTER NODES say so at
 * once) and the owner answers -MOVED to it; a node that does not own the
 * slot answers -MOVED to the one that does. A command that gets through
 * runs once, counted. A plain write, a script and a transaction bounced
 * seven times succeed with no error to the client, and each ran exactly
 * once; one bounced past the proxy's whole retry budget fails with the
 * MOVED it last got, and never ran.
 *
 * A script also meets the moment a node's map has no owner for the slot
 * while its cluster state still says ok (Redis updates the state before
 * its next event loop turn): it answers "-CLUSTERDOWN Hash slot not
 * served", and its CLUSTER NODES shows the slot unowned. The proxy
 * confirms it there, retries, and the script runs once.
 *
 * A client's order holds through a script's confirmation: a script and a
 * write (or a transaction) pipelined behind it both meet the MOVED, and
 * the write (whose MOVED needs no confirming) waits for the script's
 * resend, so the new owner runs them in the client's order.
 */
#include "harness.h"
#include "fakenode.h"

#define KEY "{bounce}k"

static struct {
    struct fake_node a, b;
    struct h_proxy proxy;
} W;

/* The slot's state, shared by both nodes' threads. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_slot;
static struct fake_node *g_owner;
static int g_bounces_left;
static int g_runs;              /* writes that ran */
static int g_unserved_left;     /* scripts the owner answers "slot not served" */
static int g_unserved_shown;    /* CLUSTER NODES shows the slot unowned until read */
static char g_ran[16];          /* the writes that ran, in order: 'E' a script, 'S' a SET,
                                   'X' a transaction's EXEC */

static struct fake_node *other(struct fake_node *f)
{
    return f == &W.a ? &W.b : &W.a;
}

/* Both nodes' CLUSTER SLOTS: A owns every slot but g_slot, g_owner that
 * one (under g_mu). */
static void publish_slots(void)
{
    const int ranges[3][3] = { { 0, g_slot - 1, W.a.port }, { g_slot, g_slot, g_owner->port },
                               { g_slot + 1, H_SLOTS - 1, W.a.port } };
    fn_set_slots(&W.a, 3, ranges);
    fn_set_slots(&W.b, 3, ranges);
}

/* Whether f may run a command on g_slot now; else *to is where the
 * MOVED points (the slot moves first when f owns it and bounces are left). */
static int may_run(struct fake_node *f, int *to)
{
    int ok = 0;
    pthread_mutex_lock(&g_mu);
    if (g_owner == f && g_bounces_left > 0) {
        g_bounces_left--;
        g_owner = other(f);
        publish_slots();
    }
    ok = g_owner == f;
    *to = g_owner->port;
    pthread_mutex_unlock(&g_mu);
    return ok;
}

static int write_moved(struct fn_conn *c, int to)
{
    char line[96];
    snprintf(line, sizeof line, "-MOVED %d 127.0.0.1:%d\r\n", g_slot, to);
    return fn_writes(c, line);
}

/* CLUSTER NODES of c's node: both nodes, c's marked myself. */
static int write_nodes(struct fn_conn *c)
{
    char text[512], bulk[600], slot[16];
    pthread_mutex_lock(&g_mu);
    int b_owns = g_owner == &W.b, unowned = g_unserved_shown;
    g_unserved_shown = 0;
    pthread_mutex_unlock(&g_mu);
    snprintf(slot, sizeof slot, " %d", g_slot);
    if (unowned)
        slot[0] = '\0';
    snprintf(text, sizeof text,
             "%040d 127.0.0.1:%d@%d %smaster - 0 0 1 connected 0-%d %d-%d%s\n"
             "%040d 127.0.0.1:%d@%d %smaster - 0 0 2 connected%s\n",
             W.a.port, W.a.port, W.a.port + 10000, c->f == &W.a ? "myself," : "", g_slot - 1,
             g_slot + 1, H_SLOTS - 1, b_owns ? "" : slot,
             W.b.port, W.b.port, W.b.port + 10000, c->f == &W.b ? "myself," : "",
             b_owns ? slot : "");
    int n = snprintf(bulk, sizeof bulk, "$%zu\r\n%s\r\n", strlen(text), text);
    return fn_write(c, bulk, (size_t)n);
}

/* A command on KEY: runs (a write counted) or bounces. In MULTI, queued
 * or failed (filter_state: 1 in MULTI, 2 in a MULTI that failed). */
static int keyed(struct fn_conn *c, int write, int script, const char *cmd)
{
    int to, unserved = 0;
    pthread_mutex_lock(&g_mu);
    if (script && g_unserved_left > 0 && g_owner == c->f) {
        g_unserved_left--;
        g_unserved_shown = unserved = 1;
    }
    pthread_mutex_unlock(&g_mu);
    if (unserved)
        return fn_writes(c, "-CLUSTERDOWN Hash slot not served\r\n");
    if (!may_run(c->f, &to)) {
        if (c->filter_state)
            c->filter_state = 2;
        return write_moved(c, to);
    }
    if (c->filter_state)
        return fn_writes(c, "+QUEUED\r\n");
    if (write) {
        pthread_mutex_lock(&g_mu);
        g_runs++;
        size_t n = strlen(g_ran);
        if (n + 1 < sizeof g_ran)
            g_ran[n] = cmd[0];
        pthread_mutex_unlock(&g_mu);
        return fn_writes(c, "+OK\r\n");
    }
    return fn_write_bulk(c, "v");
}

static int bounce_filter(struct fn_conn *c, int *rc)
{
    const char *cmd = c->argv[0];
    int script = strcasecmp(cmd, "EVAL") == 0 || strcasecmp(cmd, "EVALSHA") == 0;
    int at = script ? 3 : 1;        /* where the key is */
    int on_key = c->argc > at && strcmp(c->argv[at], KEY) == 0;
    if (strcasecmp(cmd, "CLUSTER") == 0 && c->argc == 2 && strcasecmp(c->argv[1], "NODES") == 0) {
        *rc = write_nodes(c);
    } else if (strcasecmp(cmd, "CLUSTER") == 0 && c->argc == 2 &&
               strcasecmp(c->argv[1], "INFO") == 0) {
        *rc = fn_write_bulk(c, "cluster_state:ok");    /* not updated yet */
    } else if (strcasecmp(cmd, "MULTI") == 0) {
        c->filter_state = 1;
        *rc = fn_writes(c, "+OK\r\n");
    } else if (strcasecmp(cmd, "EXEC") == 0) {
        int failed = c->filter_state == 2;
        c->filter_state = 0;
        if (failed) {
            *rc = fn_writes(c, "-EXECABORT Transaction discarded because of previous errors.\r\n");
        } else {
            pthread_mutex_lock(&g_mu);
            g_runs++;
            size_t n = strlen(g_ran);
            if (n + 1 < sizeof g_ran)
                g_ran[n] = 'X';
            pthread_mutex_unlock(&g_mu);
            *rc = fn_writes(c, "*1\r\n+OK\r\n");
        }
    } else if (strcasecmp(cmd, "DISCARD") == 0) {
        c->filter_state = 0;
        *rc = fn_writes(c, "+OK\r\n");
    } else if ((strcasecmp(cmd, "SET") == 0 || strcasecmp(cmd, "GET") == 0 || script) &&
               on_key) {
        *rc = keyed(c, strcasecmp(cmd, "GET") != 0, script, cmd);
    } else {
        return 0;
    }
    return 1;
}

/* The nodes, the slot's owner (owner: 'A' or 'B') and a proxy; bounces
 * from the test's first command on. */
static void world_owned_by(const char *name, int bounces, char owner)
{
    g_slot = h_slot(KEY);
    ck_assert(g_slot > 0 && g_slot < H_SLOTS - 1);
    fn_start(&W.a, 'A', NULL, 0);
    fn_start(&W.b, 'B', NULL, 0);
    W.a.filter = W.b.filter = bounce_filter;
    pthread_mutex_lock(&g_mu);
    g_owner = owner == 'B' ? &W.b : &W.a;
    g_bounces_left = 0;
    g_runs = 0;
    memset(g_ran, 0, sizeof g_ran);
    g_unserved_left = 0;
    g_unserved_shown = 0;
    publish_slots();
    pthread_mutex_unlock(&g_mu);
    fn_proxy_start(&W.proxy, name, W.a.port, NULL);
    pthread_mutex_lock(&g_mu);
    g_bounces_left = bounces;       /* from the test's command on */
    pthread_mutex_unlock(&g_mu);
}

static void world(const char *name, int bounces)
{
    world_owned_by(name, bounces, 'A');
}

static void teardown(void)
{
    h_proxy_stop(&W.proxy);
    fn_stop(&W.a);
    fn_stop(&W.b);
}

static int runs(void)
{
    pthread_mutex_lock(&g_mu);
    int n = g_runs;
    pthread_mutex_unlock(&g_mu);
    return n;
}

static int bounces_left(void)
{
    pthread_mutex_lock(&g_mu);
    int n = g_bounces_left;
    pthread_mutex_unlock(&g_mu);
    return n;
}

START_TEST(test_write_bounced_seven_times)
{
    world("bounce-write", 7);
    redisContext *c = h_connect_node(&W.proxy.addr);
    H_OK(c, "SET " KEY " v");
    ck_assert_int_eq(bounces_left(), 0);
    ck_assert_int_eq(runs(), 1);
    redisFree(c);
}
END_TEST

START_TEST(test_script_bounced_seven_times)
{
    world("bounce-script", 7);
    redisContext *c = h_connect_node(&W.proxy.addr);
    H_OK(c, "EVAL %s 1 " KEY " v", "return redis.call('set', KEYS[1], ARGV[1])");
    ck_assert_int_eq(bounces_left(), 0);
    ck_assert_int_eq(runs(), 1);
    redisFree(c);
}
END_TEST

START_TEST(test_transaction_bounced_seven_times)
{
    world("bounce-tx", 7);
    redisContext *c = h_connect_node(&W.proxy.addr);
    H_OK(c, "MULTI");
    H_STATUS(c, "QUEUED", "SET " KEY " v");
    redisReply *r = h_cmd(c, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 1);
    H_EXPECT_STATUS(r->element[0], "OK");
    freeReplyObject(r);
    ck_assert_int_eq(bounces_left(), 0);
    ck_assert_int_eq(runs(), 1);
    redisFree(c);
}
END_TEST

/* Two "slot not served" answers the node's map confirms: retried, the
 * script runs once, the client sees no error. */
START_TEST(test_script_unserved_slot_retried)
{
    world("unserved-script", 0);
    pthread_mutex_lock(&g_mu);
    g_unserved_left = 2;
    pthread_mutex_unlock(&g_mu);
    redisContext *c = h_connect_node(&W.proxy.addr);
    H_OK(c, "EVAL %s 1 " KEY " v", "return redis.call('set', KEYS[1], ARGV[1])");
    pthread_mutex_lock(&g_mu);
    int left = g_unserved_left;
    pthread_mutex_unlock(&g_mu);
    ck_assert_int_eq(left, 0);
    ck_assert_int_eq(runs(), 1);
    redisFree(c);
}
END_TEST

/* B owns the slot, A every other one (both known to the proxy). The script
 * reaches B first: the slot moves to A and B answers -MOVED, then -MOVED
 * to the SET behind it. The script's MOVED is confirmed (CLUSTER NODES on
 * B, a round trip after the SET's MOVED) before it is resent; the SET's is
 * followed at once unless it waits: A must run the script first. */
static void expect_ran(const char *order)
{
    pthread_mutex_lock(&g_mu);
    char ran[sizeof g_ran];
    memcpy(ran, g_ran, sizeof ran);
    pthread_mutex_unlock(&g_mu);
    ck_assert_str_eq(ran, order);
}

START_TEST(test_write_waits_for_confirmed_script)
{
    world_owned_by("confirm-order", 1, 'B');
    redisContext *c = h_connect_node(&W.proxy.addr);
    redisAppendCommand(c, "EVAL %s 1 %s v", "return redis.call('set', KEYS[1], ARGV[1])", KEY);
    redisAppendCommand(c, "SET %s w", KEY);
    for (int i = 0; i < 2; i++) {
        redisReply *r = NULL;
        ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);
    }
    expect_ran("ES");
    ck_assert_int_eq(bounces_left(), 0);
    redisFree(c);
}
END_TEST

/* The same with a transaction behind the script: its block, bounced by
 * the same MOVED, goes to A after the script. */
START_TEST(test_transaction_waits_for_confirmed_script)
{
    world_owned_by("confirm-order-tx", 1, 'B');
    redisContext *c = h_connect_node(&W.proxy.addr);
    redisAppendCommand(c, "EVAL %s 1 %s v", "return redis.call('set', KEYS[1], ARGV[1])", KEY);
    redisAppendCommand(c, "MULTI");
    redisAppendCommand(c, "SET %s w", KEY);
    redisAppendCommand(c, "EXEC");
    const char *const status[] = { "OK", "OK", "QUEUED" };
    for (int i = 0; i < 4; i++) {
        redisReply *r = NULL;
        ck_assert_int_eq(redisGetReply(c, (void **)&r), REDIS_OK);
        if (i < 3) {
            H_EXPECT_STATUS(r, status[i]);
        } else {
            H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
            ck_assert_int_eq(r->elements, 1);
            H_EXPECT_STATUS(r->element[0], "OK");
        }
        freeReplyObject(r);
    }
    expect_ran("EX");
    ck_assert_int_eq(bounces_left(), 0);
    redisFree(c);
}
END_TEST

/* Past every redirect and retry the proxy allows: the client gets the
 * last MOVED, as from a node, and nothing ran. */
START_TEST(test_bounced_past_the_budget)
{
    world("bounce-forever", 1000000);
    redisContext *c = h_connect_node(&W.proxy.addr);
    H_ERR(c, "MOVED", "SET " KEY " v");
    ck_assert_int_eq(runs(), 0);
    redisFree(c);
}
END_TEST

static Suite *bounce_suite(void)
{
    Suite *s = suite_create("fakenode_bounce");
    TCase *tc = tcase_create("bounce");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_write_bounced_seven_times);
    tcase_add_test(tc, test_script_bounced_seven_times);
    tcase_add_test(tc, test_transaction_bounced_seven_times);
    tcase_add_test(tc, test_bounced_past_the_budget);
    tcase_add_test(tc, test_script_unserved_slot_retried);
    tcase_add_test(tc, test_write_waits_for_confirmed_script);
    tcase_add_test(tc, test_transaction_waits_for_confirmed_script);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return fn_main(bounce_suite, "fakenode-bounce-", "fakenode-bounce");
}
