/*
 * request (proxy/core/request.h): the commands it builds. request_build and
 * request_rebuild write RESP headers by hand (no printf on the hot path):
 * their bytes and argument offsets are compared with a multibulk written
 * here with snprintf, for lengths of every digit count, argument counts of
 * one and two digits, inline and heap storage, and a rebuild whose argv
 * points into the request's own bytes. request_keys, which keeps a
 * request's key positions, answers as command_keys on the request's current
 * bytes, before and after a rebuild, within and past what it keeps.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/core/request.h"
#include "proxy/core/worker.h"
#include "lib/proto/command.h"

static struct worker worker;

/* argv[i] is lens[i] bytes of 'a' + i */
static void make_argv(int argc, const size_t *lens, char **argv)
{
    for (int i = 0; i < argc; i++) {
        argv[i] = malloc(lens[i] + 1);
        ck_assert_ptr_nonnull(argv[i]);
        memset(argv[i], 'a' + i % 26, lens[i]);
        argv[i][lens[i]] = '\0';
    }
}

/* r holds exactly the multibulk of argv, as snprintf writes it. */
static void assert_command(const struct request *r, int argc, char *const *argv,
                           const size_t *lens)
{
    size_t cap = 64;
    for (int i = 0; i < argc; i++)
        cap += lens[i] + 32;
    char *want = malloc(cap);
    ck_assert_ptr_nonnull(want);
    size_t n = (size_t)snprintf(want, cap, "*%d\r\n", argc);
    ck_assert_int_eq(r->argc, argc);
    for (int i = 0; i < argc; i++) {
        n += (size_t)snprintf(want + n, cap - n, "$%zu\r\n", lens[i]);
        ck_assert_uint_eq(r->args[i].off, n);
        ck_assert_uint_eq(r->args[i].len, lens[i]);
        memcpy(want + n, argv[i], lens[i]);
        n += lens[i];
        memcpy(want + n, "\r\n", 2);
        n += 2;
    }
    ck_assert_uint_eq(r->len, n);
    ck_assert_msg(memcmp(r->data, want, n) == 0, "got %.*s\nwant %.*s", (int)r->len, r->data,
                  (int)n, want);
    free(want);
}

static const size_t lengths[] = { 0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12345 };
#define NLENGTHS (sizeof lengths / sizeof lengths[0])

START_TEST(test_build_lengths)
{
    /* one argument of each length, alone and after a short one */
    size_t lens[2] = { 3, lengths[_i] };
    char *argv[2];
    make_argv(2, lens, argv);
    for (int argc = 1; argc <= 2; argc++) {
        const size_t *l = argc == 1 ? lens + 1 : lens;
        char *const *a = argc == 1 ? argv + 1 : argv;
        struct request *r = request_new(&worker);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(request_build(r, argc, (const char *const *)a, l), 0);
        assert_command(r, argc, a, l);
        request_free(r);
    }
    free(argv[0]);
    free(argv[1]);
}
END_TEST

START_TEST(test_build_many_args)
{
    /* argc of two digits (beyond the inline offsets), and of three */
    static const int counts[] = { 9, 10, 11, 100 };
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int argc = counts[c];
        size_t lens[100];
        char *argv[100];
        for (int i = 0; i < argc; i++)
            lens[i] = lengths[i % NLENGTHS] % 200;
        make_argv(argc, lens, argv);
        struct request *r = request_new(&worker);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(request_build(r, argc, (const char *const *)argv, lens), 0);
        assert_command(r, argc, argv, lens);
        request_free(r);
        for (int i = 0; i < argc; i++)
            free(argv[i]);
    }
}
END_TEST

START_TEST(test_rebuild_from_own_bytes)
{
    /* rebuild r from its own arguments, one of them replaced (as rewrite.c
     * and index.c do): every move between inline and heap storage */
    static const size_t sizes[][2] = { { 3, 20 }, { 3, 500 }, { 500, 20 }, { 500, 600 } };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t lens[3] = { 3, sizes[s][0], 5 };
        char *argv[3];
        make_argv(3, lens, argv);
        struct request *r = request_new(&worker);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(request_build(r, 3, (const char *const *)argv, lens), 0);

        char *replacement = malloc(sizes[s][1] + 1);
        ck_assert_ptr_nonnull(replacement);
        memset(replacement, 'z', sizes[s][1]);
        const char *own[4];
        size_t own_lens[4];
        for (int i = 0; i < 3; i++)
            own[i] = request_arg(r, i, &own_lens[i]);
        own[1] = replacement, own_lens[1] = sizes[s][1];
        own[3] = own[2], own_lens[3] = own_lens[2];     /* one more argument */
        ck_assert_int_eq(request_rebuild(r, 4, own, own_lens), 0);

        char *want[4] = { argv[0], replacement, argv[2], argv[2] };
        size_t want_lens[4] = { lens[0], sizes[s][1], lens[2], lens[2] };
        assert_command(r, 4, want, want_lens);
        ck_assert_int_eq(r->data == r->inline_data, r->len <= REQUEST_INLINE_BYTES);
        request_free(r);
        free(replacement);
        for (int i = 0; i < 3; i++)
            free(argv[i]);
    }
}
END_TEST

/* request_keys(r, cmd, keys, max) is command_keys on r's current command:
 * the first time, from what it kept, and after r's bytes changed. */
static void assert_keys_as_command_keys(struct request *r, const struct command *cmd)
{
    for (int max = 0; max <= 12; max++) {
        int got[12], want[12];
        for (int pass = 0; pass < 2; pass++) {      /* found, then kept */
            int n = request_keys(r, cmd, got, max);
            ck_assert_int_eq(n, command_keys(cmd, r->data, r->args, r->argc, want, max));
            for (int i = 0; i < n && i < max; i++)
                ck_assert_int_eq(got[i], want[i]);
        }
    }
}

START_TEST(test_keys_kept)
{
    static const struct { int argc; const char *argv[24]; } cmds[] = {
        { 4, { "MGET", "a", "b", "c" } },
        { 2, { "MGET", "x" } },                             /* same command, new keys */
        { 2, { "GET", "k" } },
        { 1, { "PING" } },
        { 4, { "EVAL", "return 1", "x", "k" } },            /* numkeys malformed: -1 */
        { 21, { "MSET", "k1", "v", "k2", "v", "k3", "v", "k4", "v", "k5", "v", "k6", "v",
                "k7", "v", "k8", "v", "k9", "v", "k10", "v" } },    /* more than kept */
    };
    struct request *r = request_new(&worker);
    ck_assert_ptr_nonnull(r);
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        size_t lens[24];
        for (int i = 0; i < cmds[c].argc; i++)
            lens[i] = strlen(cmds[c].argv[i]);
        /* the first from scratch, the others rebuilt over the previous one:
         * what was kept for it must not answer for the new bytes */
        int rc = c == 0 ? request_build(r, cmds[c].argc, cmds[c].argv, lens)
                        : request_rebuild(r, cmds[c].argc, cmds[c].argv, lens);
        ck_assert_int_eq(rc, 0);
        const struct command *cmd = command_lookup(cmds[c].argv[0], lens[0]);
        ck_assert_ptr_nonnull(cmd);
        assert_keys_as_command_keys(r, cmd);
    }
    request_free(r);
}
END_TEST

START_TEST(test_put_decimal)
{
    static const size_t values[] = { 0, 7, 10, 99, 4096, 1234567890, (size_t)-1 };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char got[24], want[24];
        size_t n = resp_put_decimal(got, values[i]);
        size_t wn = (size_t)snprintf(want, sizeof want, "%zu", values[i]);
        ck_assert_uint_eq(n, wn);
        ck_assert_mem_eq(got, want, n);
    }
}
END_TEST

static Suite *request_suite(void)
{
    Suite *s = suite_create("request");
    TCase *tc = tcase_create("build");
    tcase_add_loop_test(tc, test_build_lengths, 0, (int)NLENGTHS);
    tcase_add_test(tc, test_build_many_args);
    tcase_add_test(tc, test_rebuild_from_own_bytes);
    tcase_add_test(tc, test_put_decimal);
    tcase_add_test(tc, test_keys_kept);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(request_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
