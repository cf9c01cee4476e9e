/*
 * What a node connection (cluster/node.h) tells a request's owner when it
 * fails: whether the request may have run. A real listening socket stands
 * for the node; it accepts and never answers. Bytes that never left the
 * proxy did not run; bytes the kernel may have taken may have, whether the
 * connection dropped or io_uring lost the result of the send that carried
 * them (io_conn_send_lost): retrying those could run a write twice.
 */
#include <check.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster/node.h"

#define REQS 3

static struct event_base *base;
static struct io_loop loop;
static int listener, peer = -1;
static struct sockaddr_in node_addr;
static struct node_opts opts = { .connect_timeout_ms = 2000, .timeout_ms = 5000 };

static struct node_req reqs[REQS];
static int failed[REQS], may_have_run[REQS], replied[REQS];

static void on_reply(struct node_req *r, const struct reply_view *v,
                     const struct reply_scanner *scan)
{
    (void)scan;
    reply_view_drop(v);
    replied[r - reqs]++;
}

static void on_fail(struct node_req *r, int ran, const char *why)
{
    (void)why;
    failed[r - reqs]++;
    may_have_run[r - reqs] = ran;
}

static void setup(void)
{
    base = event_base_new();
    ck_assert_ptr_nonnull(base);
    memset(&loop, 0, sizeof loop);
    ck_assert_int_eq(io_loop_init(&loop, base), 0);
    listener = socket(AF_INET, SOCK_STREAM, 0);
    memset(&node_addr, 0, sizeof node_addr);
    node_addr.sin_family = AF_INET;
    node_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(listener, (struct sockaddr *)&node_addr, sizeof node_addr), 0);
    socklen_t len = sizeof node_addr;
    ck_assert_int_eq(getsockname(listener, (struct sockaddr *)&node_addr, &len), 0);
    ck_assert_int_eq(listen(listener, 4), 0);
    memset(reqs, 0, sizeof reqs);
    memset(failed, 0, sizeof failed);
    memset(may_have_run, 0, sizeof may_have_run);
    memset(replied, 0, sizeof replied);
}

static void teardown(void)
{
    if (peer >= 0)
        close(peer);
    peer = -1;
    close(listener);
    event_base_loop(base, EVLOOP_NONBLOCK);     /* the closed connection's deferred free */
    io_loop_free(&loop);
    event_base_free(base);
}

/* A connection to the listener, connected and accepted. */
static struct node_conn *connected(void)
{
    struct node_conn *c = node_conn_new(&loop, "127.0.0.1:0", (struct sockaddr *)&node_addr,
                                        sizeof node_addr, &opts);
    ck_assert_ptr_nonnull(c);
    for (int i = 0; i < 100 && c->state != NODE_READY; i++)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), usleep(1000);
    ck_assert_int_eq(c->state, NODE_READY);
    peer = accept(listener, NULL, NULL);
    ck_assert_int_ge(peer, 0);
    return c;
}

static void send_reqs(struct node_conn *c)
{
    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    for (int i = 0; i < REQS; i++) {
        reqs[i].on_reply = on_reply;
        reqs[i].on_fail = on_fail;
        node_send(c, &reqs[i], ping, sizeof ping - 1);
    }
}

/* Requests still in the proxy's output when the connection closes did not run. */
START_TEST(test_close_before_writing_fails_unsent)
{
    setup();
    struct node_conn *c = connected();
    send_reqs(c);
    node_conn_close(c, "closed by the test");
    for (int i = 0; i < REQS; i++) {
        ck_assert_int_eq(failed[i], 1);
        ck_assert_int_eq(may_have_run[i], 0);
    }
    teardown();
}
END_TEST

/* Written and unanswered: each may have run. */
START_TEST(test_close_after_writing_fails_may_have_run)
{
    setup();
    struct node_conn *c = connected();
    send_reqs(c);
    event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);  /* the round's flush */
    ck_assert_uint_eq(io_conn_pending(&c->io), 0);
    node_conn_close(c, "closed by the test");
    for (int i = 0; i < REQS; i++) {
        ck_assert_int_eq(failed[i], 1);
        ck_assert_int_eq(may_have_run[i], 1);
    }
    teardown();
}
END_TEST

/* The send that carried them was handed to the kernel and its result lost:
 * the kernel may have sent any of the bytes, so every request may have run,
 * and the connection fails rather than write them again. */
START_TEST(test_lost_send_fails_may_have_run)
{
    setup();
    struct node_conn *c = connected();
    send_reqs(c);
    io_conn_send_lost(&c->io);
    ck_assert_uint_eq(io_conn_pending(&c->io), 0);
    event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);  /* the flush meets the loss */
    for (int i = 0; i < REQS; i++) {
        ck_assert_int_eq(failed[i], 1);
        ck_assert_int_eq(may_have_run[i], 1);
        ck_assert_int_eq(replied[i], 0);
    }
    char buf[64];
    ck_assert_int_eq(recv(peer, buf, sizeof buf, MSG_DONTWAIT), 0);   /* closed, nothing resent */
    teardown();
}
END_TEST

static Suite *nodeconn_suite(void)
{
    Suite *s = suite_create("nodeconn");
    TCase *t = tcase_create("may have run");
    tcase_add_test(t, test_close_before_writing_fails_unsent);
    tcase_add_test(t, test_close_after_writing_fails_may_have_run);
    tcase_add_test(t, test_lost_send_fails_may_have_run);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(nodeconn_suite());
    srunner_run_all(r, CK_NORMAL);
    int failures = srunner_ntests_failed(r);
    srunner_free(r);
    return failures == 0 ? 0 : 1;
}
