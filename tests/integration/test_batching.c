/*
 * Write batching on the shared node connections (cluster/node.h) and reply
 * coalescing on the client side (proxy/core/client.c), against a fake node
 * (fakenode.h) whose GET gate answers only when the test opens the gate:
 *
 *   1. while a request is unanswered, the requests other clients send meanwhile
 *      wait in the proxy (none reaches the node's socket), then go out
 *      together and are all answered, in order
 *   2. a finished reply waits for the rest of its pipeline while that is
 *      due from a shared connection: the client gets nothing until the gate
 *      opens, then both replies in order
 *
 * Each test starts its own fake node and its own proxy (one worker thread).
 * The fake node answers GET gate with bulk "gated" once the gate is open,
 * and any other GET key with the key as a bulk.
 */
#include <stdatomic.h>
#include <sys/ioctl.h>

#include "harness.h"
#include "fakenode.h"

#define GATE_LIMIT_MS 10000         /* the gate opens by itself after this */

static struct {
    struct fake_node a;
    struct h_proxy proxy;
} W;

static atomic_int g_gate_open;
/* Bytes that had reached the node's side of the connection, unread, when
 * the gate opened (-1: not yet). */
static atomic_long g_waiting_at_gate;

static int script_a(struct fn_conn *c, const char *key, size_t len)
{
    (void)len;
    if (strcmp(key, "gate") == 0) {
        long long end = h_now_ms() + GATE_LIMIT_MS;
        int unread = 0;
        while (!atomic_load(&g_gate_open) && !fn_stopping(c->f) && h_now_ms() < end)
            h_sleep_ms(5);
        if (ioctl(c->fd, FIONREAD, &unread) != 0)
            unread = 0;
        atomic_store(&g_waiting_at_gate, (long)unread + (long)(c->end - c->start));
        return fn_write_bulk(c, "gated");
    }
    return fn_write_bulk(c, key);
}

static void world_single(const char *name)
{
    atomic_store(&g_gate_open, 0);
    atomic_store(&g_waiting_at_gate, -1);
    fn_start(&W.a, 'A', script_a, 0);
    fn_own_all_slots(&W.a);
    fn_proxy_start(&W.proxy, name, W.a.port, NULL);
}

static void teardown(void)
{
    atomic_store(&g_gate_open, 1);
    h_proxy_stop(&W.proxy);
    fn_stop(&W.a);
}

/* Waits until node A has received cmd once. */
static void wait_received(const char *cmd)
{
    long long deadline = h_now_ms() + 5000;
    while (fn_count(&W.a, cmd) == 0) {
        ck_assert_msg(h_now_ms() < deadline, "node A never received %s", cmd);
        h_sleep_ms(5);
    }
}

/* ---------- 1. requests wait for the unanswered batch ---------- */

START_TEST(test_requests_wait_for_unanswered_batch)
{
    enum { N = 20 };
    redisContext *gated, *other;
    redisReply *r;
    char key[32];

    world_single("batch-wait");
    gated = h_connect_node(&W.proxy.addr);
    other = h_connect_node(&W.proxy.addr);
    redisAppendCommand(gated, "GET gate");
    h_flush(gated);
    wait_received("GET gate");

    for (int i = 0; i < N; i++)
        redisAppendCommand(other, "GET k%d", i);
    h_flush(other);
    /* read by the proxy, which would have forwarded them then */
    h_wait_client_listed(&W.proxy.addr, other->fd, " cmd=get ", 5000, "the other client's GETs");
    ck_assert_int_eq(fn_count(&W.a, "GET k0"), 0);
    atomic_store(&g_gate_open, 1);

    r = h_get_reply(gated);
    H_EXPECT_BULK(r, "gated");
    freeReplyObject(r);
    for (int i = 0; i < N; i++) {
        H_FMT(key, sizeof key, "k%d", i);
        r = h_get_reply(other);
        H_EXPECT_BULK(r, key);
        freeReplyObject(r);
    }
    ck_assert_msg(atomic_load(&g_waiting_at_gate) == 0,
                  "%ld bytes had been written to the node behind the unanswered GET",
                  atomic_load(&g_waiting_at_gate));
    ck_assert_int_eq(fn_count(&W.a, "GET k0"), 1);
    ck_assert_int_eq(fn_count(&W.a, "GET k19"), 1);
    redisFree(gated);
    redisFree(other);
}
END_TEST

/* ---------- 2. a reply waits for the rest of its pipeline ---------- */

START_TEST(test_reply_waits_for_rest_of_pipeline)
{
    static const char pipeline[] = "*2\r\n$3\r\nGET\r\n$5\r\nearly\r\n"
                                   "*2\r\n$3\r\nGET\r\n$4\r\ngate\r\n";
    static const char both[] = "$5\r\nearly\r\n$5\r\ngated\r\n";
    char buf[256];
    size_t got;
    int fd;

    world_single("coalesce");
    fd = h_raw_connect(&W.proxy.addr);
    h_raw_sends(fd, pipeline);
    wait_received("GET gate");
    got = h_raw_recv(fd, buf, sizeof buf, NULL, 300, NULL);
    ck_assert_msg(got == 0, "'%s' came while the rest of the pipeline was due", buf);

    atomic_store(&g_gate_open, 1);
    got = h_raw_recv(fd, buf, sizeof buf, both, 5000, NULL);
    ck_assert_msg(strcmp(buf, both) == 0, "got '%s' (%zu bytes)", buf, got);
    close(fd);
}
END_TEST

static Suite *batching_suite(void)
{
    Suite *s = suite_create("batching");
    TCase *tc = tcase_create("batching");

    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_requests_wait_for_unanswered_batch);
    tcase_add_test(tc, test_reply_waits_for_rest_of_pipeline);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return fn_main(batching_suite, "batching-", "batching");
}
