/*
 * Block pool (lib/base/blockpool.h): zeroed power-of-two blocks, a block
 * given back the next one of its size out, sizes past the classes from
 * malloc, and every byte it holds counted until it is cleared.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "lib/base/blockpool.h"

#define CHUNK (64 * 1024)

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

START_TEST(test_blocks_are_zeroed_and_apart)
{
    struct blockpool p;
    blockpool_init(&p);
    ck_assert_uint_eq(p.held, 0);
    unsigned char *a = blockpool_get(&p, 64), *b = blockpool_get(&p, 256);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert(all_zero(a, 64) && all_zero(b, 256));
    ck_assert(b >= a + 64 || a >= b + 256);     /* no overlap */
    ck_assert_uint_eq((uintptr_t)a % 16, 0);
    ck_assert_uint_eq((uintptr_t)b % 16, 0);
    ck_assert_uint_eq(p.held, CHUNK);
    blockpool_clear(&p);
    ck_assert_uint_eq(p.held, 0);
}
END_TEST

/* The block a put gives back is the next get of its size, zeroed again;
 * a get of another size does not take it. */
START_TEST(test_a_block_put_back_is_taken_first)
{
    struct blockpool p;
    blockpool_init(&p);
    unsigned char *a = blockpool_get(&p, 128), *b = blockpool_get(&p, 128);
    memset(a, 0xab, 128);
    memset(b, 0xcd, 128);
    blockpool_put(&p, a, 128);
    blockpool_put(&p, b, 128);
    unsigned char *c = blockpool_get(&p, 512);
    ck_assert(c != a && c != b);
    ck_assert_ptr_eq(blockpool_get(&p, 128), b);
    ck_assert(all_zero(b, 128));
    ck_assert_ptr_eq(blockpool_get(&p, 128), a);
    ck_assert(all_zero(a, 128));
    ck_assert_uint_eq(p.held, CHUNK);
    blockpool_clear(&p);
}
END_TEST

/* Past the largest class, malloc: counted while out. */
START_TEST(test_large_blocks_are_counted_while_out)
{
    struct blockpool p;
    blockpool_init(&p);
    unsigned char *big = blockpool_get(&p, 8192);
    ck_assert_ptr_nonnull(big);
    ck_assert(all_zero(big, 8192));
    ck_assert_uint_eq(p.held, 8192);
    blockpool_put(&p, big, 8192);
    ck_assert_uint_eq(p.held, 0);
    blockpool_put(&p, NULL, 64);                /* nothing */
    ck_assert_uint_eq(p.held, 0);
    blockpool_clear(&p);
}
END_TEST

/* A chunk's room runs out: the next block comes from a new chunk, and a
 * clear gives every chunk back. */
START_TEST(test_new_chunks_when_full)
{
    struct blockpool p;
    blockpool_init(&p);
    for (int i = 0; i < 40; i++) {
        unsigned char *b = blockpool_get(&p, 4096);
        ck_assert_ptr_nonnull(b);
        memset(b, i + 1, 4096);
    }
    ck_assert_uint_ge(p.held, 3 * CHUNK);
    ck_assert_uint_le(p.held, 4 * CHUNK);
    blockpool_clear(&p);
    ck_assert_uint_eq(p.held, 0);
    ck_assert(all_zero(blockpool_get(&p, 4096), 4096));   /* usable again */
    blockpool_clear(&p);
}
END_TEST

static Suite *blockpool_suite(void)
{
    Suite *s = suite_create("blockpool");
    TCase *tc = tcase_create("blockpool");
    tcase_add_test(tc, test_blocks_are_zeroed_and_apart);
    tcase_add_test(tc, test_a_block_put_back_is_taken_first);
    tcase_add_test(tc, test_large_blocks_are_counted_while_out);
    tcase_add_test(tc, test_new_chunks_when_full);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(blockpool_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
