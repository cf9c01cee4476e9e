/*
 * Retry backoff (cluster/backoff.h): exponential from base, doubling,
 * capped at max.
 */
#include <check.h>
#include <limits.h>

#include "cluster/backoff.h"

START_TEST(test_default_schedule)
{
    /* retry-base-ms 10, retry-max-ms 500, retry-attempts 10 */
    static const int want[10] = { 10, 20, 40, 80, 160, 320, 500, 500, 500, 500 };
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(backoff_delay_ms(i, 10, 500), want[i]);
    ck_assert_int_eq(backoff_total_ms(10, 10, 500), 2630);
}
END_TEST

static const struct {
    int attempt, base, max, want;
} delays[] = {
    { 0, 10, 500, 10 },         /* the first retry waits base */
    { 1, 10, 500, 20 },
    { 5, 10, 320, 320 },        /* exactly at the cap */
    { 6, 10, 320, 320 },
    { 3, 7, 1000, 56 },
    { 100, 10, 500, 500 },      /* many attempts: the cap, no overflow */
    { 1000, 1, INT_MAX, INT_MAX },
    { 40, 1, INT_MAX, INT_MAX },
    { 31, 1, INT_MAX, INT_MAX },
    { 30, 1, INT_MAX, 1 << 30 },
    { 0, 500, 100, 100 },       /* base above max: max */
    { 3, 0, 500, 0 },           /* base 0: no wait */
    { 3, -5, 500, 0 },          /* a negative base counts as 0 */
    { 0, 10, 0, 0 },            /* max 0: no wait */
    { -1, 10, 500, 10 },        /* a negative attempt is the first */
};

START_TEST(test_delay_edges)
{
    for (size_t i = 0; i < sizeof delays / sizeof delays[0]; i++)
        ck_assert_msg(backoff_delay_ms(delays[i].attempt, delays[i].base, delays[i].max) ==
                          delays[i].want,
                      "delay(%d, %d, %d) = %d, want %d", delays[i].attempt, delays[i].base,
                      delays[i].max,
                      backoff_delay_ms(delays[i].attempt, delays[i].base, delays[i].max),
                      delays[i].want);
}
END_TEST

START_TEST(test_total_edges)
{
    ck_assert_int_eq(backoff_total_ms(0, 10, 500), 0);
    ck_assert_int_eq(backoff_total_ms(1, 10, 500), 10);
    ck_assert_int_eq(backoff_total_ms(7, 10, 500), 1130);
    ck_assert_int_eq(backoff_total_ms(3, 0, 500), 0);
    /* long sums do not overflow an int */
    ck_assert(backoff_total_ms(100, 1, INT_MAX) > (long)INT_MAX);
}
END_TEST

START_TEST(test_monotonic_and_capped)
{
    for (int base = 1; base <= 100; base += 33)
        for (int max = base; max <= 5000; max += 777) {
            int prev = 0;
            for (int a = 0; a < 64; a++) {
                int d = backoff_delay_ms(a, base, max);
                ck_assert_int_ge(d, prev);
                ck_assert_int_le(d, max);
                prev = d;
            }
            ck_assert_int_eq(prev, max);
        }
}
END_TEST

static Suite *backoff_suite(void)
{
    Suite *s = suite_create("backoff");
    TCase *tc = tcase_create("backoff");
    tcase_add_test(tc, test_default_schedule);
    tcase_add_test(tc, test_delay_edges);
    tcase_add_test(tc, test_total_edges);
    tcase_add_test(tc, test_monotonic_and_capped);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(backoff_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
