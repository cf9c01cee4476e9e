/*
 * Counters (proxy/core/stats.h) and command indexes (lib/proto/command.h): every
 * command and subcommand has its own index and back; latencies land in the
 * bucket whose bound is the first at or above them; stats_sum adds workers;
 * workers_stalled (proxy/core/worker.h) names the first worker whose heartbeat is
 * older than the limit, and none while each is recent.
 */
#include <check.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "proxy/core/stats.h"
#include "proxy/core/worker.h"
#include "lib/proto/command.h"

START_TEST(test_command_indexes_are_a_bijection)
{
    int n, subs = 0;
    char *seen;

    command_index_init();
    n = command_index_count();
    for (int i = 0; i < command_table_size; i++)
        subs += command_table[i].nsubcommands;
    ck_assert_int_eq(n, command_table_size + subs + COMMAND_LEARNED_MAX);
    int builtin = command_table_size + subs;
    seen = calloc((size_t)n, 1);
    ck_assert_ptr_nonnull(seen);
    for (int i = 0; i < command_table_size; i++) {
        const struct command *c = &command_table[i];
        int idx = command_index(c);
        ck_assert_int_ge(idx, 0);
        ck_assert_int_lt(idx, n);
        ck_assert_int_eq(seen[idx], 0);
        seen[idx] = 1;
        ck_assert_ptr_eq(command_by_index(idx), c);
        for (int s = 0; s < c->nsubcommands; s++) {
            idx = command_index(&c->subcommands[s]);
            ck_assert_int_ge(idx, 0);
            ck_assert_int_lt(idx, n);
            ck_assert_msg(seen[idx] == 0, "%s shares index %d", c->subcommands[s].fullname, idx);
            seen[idx] = 1;
            ck_assert_ptr_eq(command_by_index(idx), &c->subcommands[s]);
        }
    }
    for (int i = 0; i < builtin; i++)
        ck_assert_msg(seen[i], "index %d names no command", i);
    /* the learned ones: an index per name, the same name the same index */
    ck_assert_ptr_null(command_by_index(builtin));
    int a = command_learned_index("hexpire"), b = command_learned_index("client|setinfo");
    ck_assert_int_eq(a, builtin);
    ck_assert_int_eq(b, builtin + 1);
    ck_assert_int_eq(command_learned_index("hexpire"), a);
    ck_assert_str_eq(command_by_index(b)->fullname, "client|setinfo");
    ck_assert_str_eq(command_by_index(b)->name, "setinfo");
    ck_assert_int_eq(command_index(command_by_index(a)), a);
    for (int i = 2; i < COMMAND_LEARNED_MAX; i++) {
        char name[32];
        snprintf(name, sizeof name, "learned%d", i);
        ck_assert_int_eq(command_learned_index(name), builtin + i);
    }
    ck_assert_int_eq(command_learned_index("one-too-many"), -1);
    ck_assert_ptr_null(command_by_index(-1));
    ck_assert_ptr_null(command_by_index(n));
    free(seen);
}
END_TEST

static const struct { unsigned long long usec; int bucket; } latencies[] = {
    { 0, 0 }, { 50, 0 }, { 51, 1 }, { 100, 1 }, { 101, 2 }, { 999, 4 }, { 1000, 4 },
    { 1001, 5 }, { 9999999, 16 }, { 10000000, 16 }, { 10000001, 17 }, { ~0ULL, 17 },
};

START_TEST(test_latency_buckets)
{
    ck_assert_int_eq(stats_latency_bucket(latencies[_i].usec), latencies[_i].bucket);
}
END_TEST

START_TEST(test_bounds_increase)
{
    for (int i = 1; i < STATS_LATENCY_NBOUNDS; i++)
        ck_assert(stats_latency_bounds_us[i] > stats_latency_bounds_us[i - 1]);
}
END_TEST

START_TEST(test_command_done_and_sum)
{
    struct worker_stats a, b, sum;
    const struct worker_stats *each[2] = { &a, &b };
    const struct command *get = command_lookup("get", 3);
    const struct command *setname = command_lookup_sub(command_lookup("client", 6), "setname", 7);
    int gi, si;

    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&sum, 0, sizeof sum);
    ck_assert_int_eq(stats_init(&a), 0);
    ck_assert_int_eq(stats_init(&b), 0);
    ck_assert_int_eq(stats_init(&sum), 0);
    stats_command_done(&a, get, 30, 0);
    stats_command_done(&a, get, 700, 1);
    stats_command_done(&b, get, 20000000, 0);
    stats_command_done(&b, setname, 5, 0);
    stat_inc(&a.moved);
    stat_add(&b.moved, 2);
    stat_add(&a.clients.in, 10);
    gauge_add(&a.nodes.ready, 3);
    gauge_add(&b.nodes.ready, -1);
    stats_sum(&sum, each, 2);

    gi = command_index(get);
    si = command_index(setname);
    ck_assert_int_eq(sum.cmds[gi].calls, 3);
    ck_assert_int_eq(sum.cmds[gi].errors, 1);
    ck_assert_int_eq(sum.cmds[gi].usec, 20000730);
    ck_assert_int_eq(sum.cmds[gi].buckets[0], 1);
    ck_assert_int_eq(sum.cmds[gi].buckets[4], 1);
    ck_assert_int_eq(sum.cmds[gi].buckets[STATS_LATENCY_BUCKETS - 1], 1);
    ck_assert_int_eq(sum.cmds[si].calls, 1);
    ck_assert_int_eq(sum.moved, 3);
    ck_assert_int_eq(sum.clients.in, 10);
    ck_assert_int_eq(sum.nodes.ready, 2);
    stats_free(&a);
    stats_free(&b);
    stats_free(&sum);
}
END_TEST

START_TEST(test_workers_stalled)
{
    struct worker *w = calloc(3, sizeof *w);
    char why[160] = "";
    ck_assert_ptr_nonnull(w);
    uint64_t now = 100000000;                   /* 100 s, in microseconds */
    w[0].alive_us = now - 900000;
    w[1].alive_us = now - 1000000;              /* exactly at the limit: still live */
    w[2].alive_us = now + 5;                    /* a heartbeat after the caller's clock */
    ck_assert_int_eq(workers_stalled(w, 3, now, 1000000, why, sizeof why), -1);
    ck_assert_str_eq(why, "");
    w[1].alive_us = now - 12345000;
    ck_assert_int_eq(workers_stalled(w, 3, now, 1000000, why, sizeof why), 1);
    ck_assert_str_eq(why, "worker 1 has not turned its event loop for 12345 ms");
    ck_assert_int_eq(workers_stalled(w, 1, now, 1000000, why, sizeof why), -1);
    free(w);
}
END_TEST

static Suite *stats_suite(void)
{
    Suite *s = suite_create("stats");
    TCase *t = tcase_create("stats");

    tcase_add_test(t, test_command_indexes_are_a_bijection);
    tcase_add_loop_test(t, test_latency_buckets, 0, sizeof latencies / sizeof latencies[0]);
    tcase_add_test(t, test_bounds_increase);
    tcase_add_test(t, test_command_done_and_sum);
    tcase_add_test(t, test_workers_stalled);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(stats_suite());
    int failed;

    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
