/*
 * Block pool (lib/base/blockpool.h): zeroed power-of-two blocks, a block
 * given back the next one of its size out, and what it keeps bounded and
 * counted.
 */
#include <check.h>
#include <string.h>

#include "lib/base/blockpool.h"

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

START_TEST(test_blocks_are_zeroed)
{
    struct blockpool p;
    blockpool_init(&p);
    unsigned char *a = blockpool_get(&p, 64), *b = blockpool_get(&p, 256);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert(all_zero(a, 64) && all_zero(b, 256));
    ck_assert_uint_eq(blockpool_held(&p), 0);               /* out: not the pool's */
    blockpool_put(&p, a, 64);
    blockpool_put(&p, b, 256);
    ck_assert_uint_eq(blockpool_held(&p), 320);
    blockpool_clear(&p);
    ck_assert_uint_eq(blockpool_held(&p), 0);
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
    ck_assert_uint_eq(blockpool_held(&p), 0);
    blockpool_put(&p, a, 128);
    blockpool_put(&p, b, 128);
    blockpool_put(&p, c, 512);
    blockpool_put(&p, NULL, 64);                /* nothing */
    ck_assert_uint_eq(blockpool_held(&p), 768);
    blockpool_clear(&p);
}
END_TEST

/* A size's list keeps at most BLOCKPOOL_KEEP bytes, and sizes past the
 * largest none: the rest go back to malloc. */
START_TEST(test_what_is_kept_is_bounded)
{
    struct blockpool p;
    blockpool_init(&p);
    enum { N = BLOCKPOOL_KEEP / 4096 + 8 };
    void *blocks[N];
    for (int i = 0; i < N; i++) {
        blocks[i] = blockpool_get(&p, 4096);
        ck_assert_ptr_nonnull(blocks[i]);
        memset(blocks[i], i + 1, 4096);
    }
    for (int i = 0; i < N; i++)
        blockpool_put(&p, blocks[i], 4096);
    ck_assert_uint_eq(blockpool_held(&p), BLOCKPOOL_KEEP);
    void *big = blockpool_get(&p, 8192);
    ck_assert_ptr_nonnull(big);
    ck_assert(all_zero(big, 8192));
    blockpool_put(&p, big, 8192);
    ck_assert_uint_eq(blockpool_held(&p), BLOCKPOOL_KEEP);
    blockpool_clear(&p);
    ck_assert_uint_eq(blockpool_held(&p), 0);
    ck_assert(all_zero(blocks[0] = blockpool_get(&p, 4096), 4096));     /* usable again */
    blockpool_put(&p, blocks[0], 4096);
    blockpool_clear(&p);
}
END_TEST

static Suite *blockpool_suite(void)
{
    Suite *s = suite_create("blockpool");
    TCase *tc = tcase_create("blockpool");
    tcase_add_test(tc, test_blocks_are_zeroed);
    tcase_add_test(tc, test_a_block_put_back_is_taken_first);
    tcase_add_test(tc, test_what_is_kept_is_bounded);
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
