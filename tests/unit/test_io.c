/*
 * The round pause of the socket layer (lib/net/io.h), on real sockets and a
 * real event loop: a round is one pass of the loop over sockets whose bytes
 * were all written before it began, so which sockets it serves is known.
 * A round that served a few sockets pauses once, whatever its reads
 * brought; one that served a single socket does not. Each case runs with
 * plain reads and, where io_uring can be used, with batched ones
 * (io_loop_batch), since both count the sockets they serve. The pause is
 * counted, not measured: it is 50 ms, far longer than the few instructions
 * between a round's writes and its check, and it counts from the end of
 * those writes: work after them (after_flush) that outlasts it leaves no
 * pause.
 *
 * The order of a round's writes: as the connections became dirty, but
 * after a pipelined read (io_loop_note_pipeline) the connections the loop
 * opened (io_conn_connect) first; seen in the order on_drained reports the
 * writes done.
 */
#include <check.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/net/io.h"

#define CONNS 4

static struct event_base *base;
static struct io_loop loop;
static uint64_t pauses;
static struct io_conn conns[CONNS];
static int peers[CONNS];
static int nconns;
static int batched;             /* this run reads through io_uring */

/* Echo: every byte read goes back at the end of the round. */
static void echo_read(struct io_conn *c, void *arg)
{
    size_t len;
    const char *in = io_input(c, &len);
    (void)arg;
    io_out_add(c, in, len);
    io_consume(c, len);
    io_conn_want_write(c);
}

static void echo_error(struct io_conn *c, int err, void *arg)
{
    (void)c;
    (void)arg;
    ck_abort_msg("connection failed: %s", err ? strerror(err) : "peer closed");
}

static const struct io_handlers echo = { .on_read = echo_read, .on_error = echo_error };

static void setup_loop(int with_batch)
{
    char why[160] = "";
    base = event_base_new();
    ck_assert_ptr_nonnull(base);
    memset(&loop, 0, sizeof loop);
    ck_assert_int_eq(io_loop_init(&loop, base), 0);
    loop.pause_us = 50000;
    pauses = 0;
    loop.pauses = &pauses;
    batched = with_batch && io_loop_batch(&loop, 16, why, sizeof why) == 0;
    if (with_batch && !batched)
        fprintf(stderr, "test_io: io_uring unavailable (%s): plain reads only\n", why);
    nconns = 0;
}

static void open_conns(int n)
{
    for (int i = 0; i < n; i++) {
        int sv[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        memset(&conns[i], 0, sizeof conns[i]);
        ck_assert_int_eq(io_conn_open(&conns[i], &loop, sv[0], &echo, NULL), 0);
        peers[i] = sv[1];
    }
    nconns = n;
}

static void teardown_loop(void)
{
    for (int i = 0; i < nconns; i++) {
        io_conn_close(&conns[i]);
        close(peers[i]);
    }
    io_loop_free(&loop);
    event_base_free(base);
}

/* Write sizes[i] bytes to each peer, run one round, and check every peer
 * got its bytes back. The pauses the round made. */
static uint64_t one_round(const size_t *sizes)
{
    char out[4096], in[4096];
    for (int i = 0; i < nconns; i++) {
        ck_assert_uint_le(sizes[i], sizeof out);
        memset(out, 'a' + i, sizes[i]);
        ck_assert_int_eq(write(peers[i], out, sizes[i]), (ssize_t)sizes[i]);
    }
    uint64_t before = pauses;
    ck_assert_int_eq(event_base_loop(base, EVLOOP_ONCE), 0);
    for (int i = 0; i < nconns; i++) {
        ck_assert_int_eq(read(peers[i], in, sizeof in), (ssize_t)sizes[i]);
        ck_assert_int_eq(in[0], 'a' + i);
    }
    return pauses - before;
}

START_TEST(test_round_of_small_reads_pauses)
{
    setup_loop(_i);
    open_conns(3);
    const size_t sizes[] = { 40, 40, 40 };
    ck_assert_uint_eq(one_round(sizes), 1);
    ck_assert_uint_eq(one_round(sizes), 1);
    teardown_loop();
}
END_TEST

START_TEST(test_round_of_one_socket_does_not_pause)
{
    setup_loop(_i);
    open_conns(1);
    const size_t sizes[] = { 40 };
    ck_assert_uint_eq(one_round(sizes), 0);
    teardown_loop();
}
END_TEST

START_TEST(test_round_of_pipelined_reads_pauses)
{
    setup_loop(_i);
    open_conns(CONNS);
    /* reads of many commands each: the nodes and clients the round fed
     * still get the CPU */
    const size_t large[] = { 4096, 4096, 4096, 4096 };
    ck_assert_uint_eq(one_round(large), 1);
    const size_t mixed[] = { 4096, 10, 10, 10 };
    ck_assert_uint_eq(one_round(mixed), 1);
    teardown_loop();
}
END_TEST

/* Work after the round's writes, longer than the pause. */
static void after_flush_outlasting_pause(void *arg)
{
    struct timespec ts = { 0, 2 * 1000 * (long)loop.pause_us };
    (void)arg;
    while (nanosleep(&ts, &ts) != 0)
        ;
}

START_TEST(test_work_after_writes_is_part_of_pause)
{
    setup_loop(_i);
    open_conns(3);
    const size_t sizes[] = { 40, 40, 40 };
    loop.after_flush = after_flush_outlasting_pause;
    ck_assert_uint_eq(one_round(sizes), 0);
    loop.after_flush = NULL;
    ck_assert_uint_eq(one_round(sizes), 1);
    teardown_loop();
}
END_TEST

START_TEST(test_pause_off_never_pauses)
{
    setup_loop(_i);
    loop.pause_us = 0;
    open_conns(3);
    const size_t sizes[] = { 40, 40, 40 };
    ck_assert_uint_eq(one_round(sizes), 0);
    teardown_loop();
}
END_TEST

/* ---- the order of a round's writes ---- */

static struct io_conn *drained[CONNS];
static int ndrained;

static void note_drained(struct io_conn *c, void *arg)
{
    (void)arg;
    ck_assert_int_lt(ndrained, CONNS);
    drained[ndrained++] = c;
}

static void note_connected(struct io_conn *c, void *arg)
{
    (void)c;
    *(int *)arg = 1;
}

static const struct io_handlers recorder = {
    .on_read = echo_read, .on_error = echo_error,
    .on_drained = note_drained, .on_connected = note_connected,
};

/* conns[0], conns[2]: accepted (io_conn_open); conns[1], conns[3]: opened
 * (io_conn_connect to a loopback listener), connected; peers[] the far ends. */
static void open_mixed_conns(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof sa;
    int lfd = socket(AF_INET, SOCK_STREAM, 0), connected[CONNS] = { 0 };
    ck_assert_int_ge(lfd, 0);
    ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(lfd, CONNS), 0);
    ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
    for (int i = 0; i < CONNS; i++) {
        memset(&conns[i], 0, sizeof conns[i]);
        if (i % 2 == 0) {
            int sv[2];
            ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
            ck_assert_int_eq(io_conn_open(&conns[i], &loop, sv[0], &recorder, &connected[i]), 0);
            peers[i] = sv[1];
            connected[i] = 1;
        } else {
            ck_assert_int_eq(io_conn_connect(&conns[i], &loop, (struct sockaddr *)&sa, len,
                                             &recorder, &connected[i]), 0);
            peers[i] = accept(lfd, NULL, NULL);
            ck_assert_int_ge(peers[i], 0);
        }
        nconns++;
    }
    close(lfd);
    for (int spins = 0; !(connected[1] && connected[3]); spins++) {
        ck_assert_int_lt(spins, 1000);
        ck_assert_int_eq(event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
    }
    for (int i = 0; i < CONNS; i++)         /* they only point at the stack */
        conns[i].arg = NULL;
}

/* Queue a few bytes on each of conns[order[0..3]], in that order, run
 * one round (pipelined or not) and return the order of the writes. */
static void round_order(const int *order, int pipelined, int *written)
{
    char buf[16];
    ndrained = 0;
    for (int i = 0; i < CONNS; i++) {
        io_out_add(&conns[order[i]], "+OK\r\n", 5);
        io_conn_want_write(&conns[order[i]]);
    }
    if (pipelined)
        io_loop_note_pipeline(&loop);
    ck_assert_int_eq(event_base_loop(base, EVLOOP_ONCE), 0);
    ck_assert_int_eq(ndrained, CONNS);
    for (int i = 0; i < CONNS; i++) {
        written[i] = (int)(drained[i] - conns);
        ck_assert_int_eq(read(peers[i], buf, sizeof buf), 5);
    }
}

START_TEST(test_round_writes_in_dirty_order)
{
    static const int order[CONNS] = { 2, 1, 0, 3 };
    int written[CONNS];
    setup_loop(_i);
    open_mixed_conns();
    round_order(order, 0, written);
    for (int i = 0; i < CONNS; i++)
        ck_assert_int_eq(written[i], order[i]);
    teardown_loop();
}
END_TEST

START_TEST(test_pipelined_round_writes_opened_conns_first)
{
    static const int order[CONNS] = { 2, 1, 0, 3 };
    static const int want[CONNS] = { 1, 3, 2, 0 };   /* opened, then accepted: each in order */
    int written[CONNS];
    setup_loop(_i);
    open_mixed_conns();
    round_order(order, 1, written);
    for (int i = 0; i < CONNS; i++)
        ck_assert_int_eq(written[i], want[i]);
    round_order(order, 0, written);                 /* the next round: plain again */
    for (int i = 0; i < CONNS; i++)
        ck_assert_int_eq(written[i], order[i]);
    teardown_loop();
}
END_TEST

static Suite *io_suite(void)
{
    Suite *s = suite_create("io");
    TCase *t = tcase_create("round pause");

    /* _i: 0 plain reads, 1 batched reads */
    tcase_add_loop_test(t, test_round_of_small_reads_pauses, 0, 2);
    tcase_add_loop_test(t, test_round_of_one_socket_does_not_pause, 0, 2);
    tcase_add_loop_test(t, test_round_of_pipelined_reads_pauses, 0, 2);
    tcase_add_loop_test(t, test_work_after_writes_is_part_of_pause, 0, 2);
    tcase_add_loop_test(t, test_pause_off_never_pauses, 0, 2);
    suite_add_tcase(s, t);
    t = tcase_create("write order");
    tcase_add_loop_test(t, test_round_writes_in_dirty_order, 0, 2);
    tcase_add_loop_test(t, test_pipelined_round_writes_opened_conns_first, 0, 2);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(io_suite());
    int failed;

    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
