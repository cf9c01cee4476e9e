/*
 * The round pause of the socket layer (proxy/io.h), on real sockets and a
 * real event loop: a round is one pass of the loop over sockets whose bytes
 * were all written before it began, so which sockets it serves is known.
 * A round that served a few sockets pauses once, whatever its reads
 * brought; one that served a single socket does not. Each case runs with
 * plain reads and, where io_uring can be used, with batched ones
 * (io_loop_batch), since both count the sockets they serve. Nothing here is
 * timed: the pause is 1 us and only counted.
 */
#include <check.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/io.h"

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
    loop.pause_us = 1;
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

static Suite *io_suite(void)
{
    Suite *s = suite_create("io");
    TCase *t = tcase_create("round pause");

    /* _i: 0 plain reads, 1 batched reads */
    tcase_add_loop_test(t, test_round_of_small_reads_pauses, 0, 2);
    tcase_add_loop_test(t, test_round_of_one_socket_does_not_pause, 0, 2);
    tcase_add_loop_test(t, test_round_of_pipelined_reads_pauses, 0, 2);
    tcase_add_loop_test(t, test_pause_off_never_pauses, 0, 2);
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
