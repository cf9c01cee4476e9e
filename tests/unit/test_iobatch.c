/*
 * Batched socket calls (lib/net/iobatch.h) on real sockets: every operation
 * of a run comes back with what recv()/send() would have returned (bytes,
 * 0 at the peer's close, -EAGAIN, -EPIPE), at once and in one run, never
 * parked in the kernel; a full batch refuses more until it is run.
 *
 * Where io_uring is refused (a seccomp profile, an old kernel), iobatch_open
 * says why; these tests then say so and check only that refusal.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/net/iobatch.h"

#define PAIRS 5

struct result {
    int ran;
    int res;
};

static void record(void *tag, int res, void *arg)
{
    struct result *r = tag;
    (void)arg;
    r->ran++;
    r->res = res;
}

/* A check that cannot run here: said on stderr, and counted by make test
 * (scripts/test.sh: a line in $TAGPROXY_SKIP_FILE). */
static void skipped(const char *why)
{
    const char *path = getenv("TAGPROXY_SKIP_FILE");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    fprintf(stderr, "test_iobatch: io_uring unavailable here (%s); skipped\n", why);
    if (f) {
        fprintf(f, "test_iobatch: io_uring unavailable here (%s)\n", why);
        fclose(f);
    }
}

static struct iobatch *open_batch(unsigned entries)
{
    char why[160] = "";
    struct iobatch *b = iobatch_open(entries, why, sizeof why);
    if (!b) {
        ck_assert_str_ne(why, "");
        skipped(why);
    }
    return b;
}

static void pair(int sv[2])
{
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
}

START_TEST(test_sends_then_recvs_in_one_run_each)
{
    struct iobatch *b = open_batch(8);
    if (!b)
        return;
    int sv[PAIRS][2];
    char msg[PAIRS][16], got[PAIRS][16];
    struct result r[PAIRS];
    memset(r, 0, sizeof r);
    for (int i = 0; i < PAIRS; i++) {
        pair(sv[i]);
        snprintf(msg[i], sizeof msg[i], "message %d", i);
        ck_assert_int_eq(iobatch_send(b, sv[i][0], msg[i], strlen(msg[i]), &r[i]), 0);
    }
    ck_assert_uint_eq(iobatch_queued(b), PAIRS);
    ck_assert_int_eq(iobatch_run(b, record, NULL), 0);
    ck_assert_uint_eq(iobatch_queued(b), 0);
    for (int i = 0; i < PAIRS; i++) {
        ck_assert_int_eq(r[i].ran, 1);
        ck_assert_int_eq(r[i].res, (int)strlen(msg[i]));
    }
    memset(r, 0, sizeof r);
    memset(got, 0, sizeof got);
    for (int i = 0; i < PAIRS; i++)
        ck_assert_int_eq(iobatch_recv(b, sv[i][1], got[i], sizeof got[i] - 1, &r[i]), 0);
    ck_assert_int_eq(iobatch_run(b, record, NULL), 0);
    for (int i = 0; i < PAIRS; i++) {
        ck_assert_int_eq(r[i].ran, 1);
        ck_assert_int_eq(r[i].res, (int)strlen(msg[i]));
        ck_assert_str_eq(got[i], msg[i]);
        close(sv[i][0]);
        close(sv[i][1]);
    }
    iobatch_close(b);
}
END_TEST

/* The promise io.c rests on: a socket with nothing to read answers -EAGAIN
 * in the same run (a parked recv would hang the worker here). */
START_TEST(test_recv_on_empty_socket_is_eagain_at_once)
{
    struct iobatch *b = open_batch(4);
    if (!b)
        return;
    int sv[2];
    char buf[8];
    struct result r = { 0, 0 };
    pair(sv);
    ck_assert_int_eq(iobatch_recv(b, sv[0], buf, sizeof buf, &r), 0);
    ck_assert_int_eq(iobatch_run(b, record, NULL), 0);
    ck_assert_int_eq(r.ran, 1);
    ck_assert_int_eq(r.res, -EAGAIN);
    close(sv[0]);
    close(sv[1]);
    iobatch_close(b);
}
END_TEST

START_TEST(test_peer_close_reads_zero_and_send_fails_epipe)
{
    struct iobatch *b = open_batch(4);
    if (!b)
        return;
    int sv[2], sw[2];
    char buf[8];
    struct result closed = { 0, 0 }, broken = { 0, 0 };
    pair(sv);
    pair(sw);
    close(sv[1]);
    close(sw[1]);
    ck_assert_int_eq(iobatch_recv(b, sv[0], buf, sizeof buf, &closed), 0);
    ck_assert_int_eq(iobatch_send(b, sw[0], "x", 1, &broken), 0);
    ck_assert_int_eq(iobatch_run(b, record, NULL), 0);     /* and no SIGPIPE */
    ck_assert_int_eq(closed.res, 0);
    ck_assert_int_eq(broken.res, -EPIPE);
    close(sv[0]);
    close(sw[0]);
    iobatch_close(b);
}
END_TEST

START_TEST(test_send_to_full_socket_is_partial_then_eagain)
{
    struct iobatch *b = open_batch(4);
    if (!b)
        return;
    int sv[2], small = 4096;
    size_t len = 1 << 20;
    char *big = calloc(1, len);
    struct result first = { 0, 0 }, second = { 0, 0 };
    ck_assert_ptr_nonnull(big);
    pair(sv);
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    ck_assert_int_eq(iobatch_send(b, sv[0], big, len, &first), 0);
    ck_assert_int_eq(iobatch_run(b, record, NULL), 0);
    ck_assert_int_gt(first.res, 0);
    ck_assert_int_lt(first.res, (int)len);
    ck_assert_int_eq(iobatch_send(b, sv[0], big, len, &second), 0);
    ck_assert_int_eq(iobatch_run(b, record, NULL), 0);
    ck_assert_int_eq(second.res, -EAGAIN);
    close(sv[0]);
    close(sv[1]);
    free(big);
    iobatch_close(b);
}
END_TEST

START_TEST(test_full_batch_refuses_until_run)
{
    struct iobatch *b = open_batch(4);
    if (!b)
        return;
    int sv[2];
    struct result r[5];
    memset(r, 0, sizeof r);
    pair(sv);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(iobatch_send(b, sv[0], "ab", 2, &r[i]), 0);
    ck_assert(iobatch_full(b));
    ck_assert_int_eq(iobatch_send(b, sv[0], "ab", 2, &r[4]), -1);
    ck_assert_int_eq(iobatch_run(b, record, NULL), 0);
    ck_assert(!iobatch_full(b));
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(r[i].res, 2);
    ck_assert_int_eq(r[4].ran, 0);
    ck_assert_int_eq(iobatch_send(b, sv[0], "ab", 2, &r[4]), 0);
    ck_assert_int_eq(iobatch_run(b, record, NULL), 0);
    ck_assert_int_eq(r[4].res, 2);
    char got[16];
    ck_assert_int_eq(read(sv[1], got, sizeof got), 10);    /* in the order queued */
    ck_assert_int_eq(memcmp(got, "ababababab", 10), 0);
    ck_assert_int_eq(iobatch_run(b, record, NULL), 0);     /* nothing queued */
    close(sv[0]);
    close(sv[1]);
    iobatch_close(b);
}
END_TEST

START_TEST(test_bad_sizes_are_refused)
{
    char why[160] = "";
    ck_assert_ptr_null(iobatch_open(3, why, sizeof why));
    ck_assert_str_eq(why, "bad batch size 3");
    ck_assert_ptr_null(iobatch_open(8192, why, sizeof why));
    ck_assert_ptr_null(iobatch_open(0, why, sizeof why));
    iobatch_close(NULL);
}
END_TEST

static Suite *iobatch_suite(void)
{
    Suite *s = suite_create("iobatch");
    TCase *t = tcase_create("iobatch");

    tcase_add_test(t, test_sends_then_recvs_in_one_run_each);
    tcase_add_test(t, test_recv_on_empty_socket_is_eagain_at_once);
    tcase_add_test(t, test_peer_close_reads_zero_and_send_fails_epipe);
    tcase_add_test(t, test_send_to_full_socket_is_partial_then_eagain);
    tcase_add_test(t, test_full_batch_refuses_until_run);
    tcase_add_test(t, test_bad_sizes_are_refused);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(iobatch_suite());
    int failed;

    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
