/*
 * scripts: SHA1 as Redis names scripts, SHA arguments in any case, the
 * bounded table of remembered bodies (least recently remembered evicted,
 * bodies over the bound never kept, forget), registered bodies that are
 * never evicted, script-map lookups, and threads remembering at once.
 */
#include "proxy/core/scripts.h"

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SHA1s as redis-server 7.0 answered SCRIPT LOAD of these bodies. */
static const struct { const char *body, *sha; } sha_vectors[] = {
    { "return 'hi'", "2f31ba2bb6d6a0f42cc159d2e2dad55440778de3" },
    { "", "da39a3ee5e6b4b0d3255bfef95601890afd80709" },
    { "redis.call('INCR','legacy-global-counter'); return redis.call('INCR', KEYS[1])",
      "eb6ef9e61004318a3f8b8919d0fe5443f6b54133" },
};

START_TEST(test_sha1_vectors)
{
    char sha[SCRIPTS_SHA_HEX];
    scripts_sha1_hex(sha_vectors[_i].body, strlen(sha_vectors[_i].body), sha);
    ck_assert_str_eq(sha, sha_vectors[_i].sha);
}
END_TEST

START_TEST(test_sha_parse)
{
    char sha[SCRIPTS_SHA_HEX];
    ck_assert_int_eq(scripts_sha_parse("2F31BA2BB6D6A0F42CC159D2E2DAD55440778DE3", 40, sha), 0);
    ck_assert_str_eq(sha, "2f31ba2bb6d6a0f42cc159d2e2dad55440778de3");
    ck_assert_int_eq(scripts_sha_parse("2f31ba2bb6d6a0f42cc159d2e2dad55440778de", 39, sha), -1);
    ck_assert_int_eq(scripts_sha_parse("2f31ba2bb6d6a0f42cc159d2e2dad55440778deg", 40, sha), -1);
    ck_assert_int_eq(scripts_sha_parse("2f31ba2bb6d6a0f42cc159d2e2dad55440778de33", 41, sha), -1);
}
END_TEST

static void remember_str(const char *body, char *sha)
{
    scripts_sha1_hex(body, strlen(body), sha);
    scripts_remember(body, strlen(body), sha);
}

static int known(const char *sha, const char *want)
{
    size_t len;
    char *b = scripts_body_copy(sha, &len);
    int ok = b && len == strlen(want) && memcmp(b, want, len) == 0;
    free(b);
    return ok;
}

/* A bound that holds three 1000-byte bodies: the oldest goes first; a body
 * seen again after an eviction (which empties the threads' sets) counts as
 * new, so the next eviction passes it over. */
START_TEST(test_bound_evicts_oldest)
{
    char bodies[5][1001], shas[5][SCRIPTS_SHA_HEX];
    size_t count, bytes;

    scripts_reset();
    scripts_init(3 * 1200);
    for (int i = 0; i < 5; i++) {
        memset(bodies[i], 'a' + i, 1000);
        bodies[i][1000] = '\0';
        scripts_sha1_hex(bodies[i], 1000, shas[i]);
    }
    for (int i = 0; i < 4; i++)
        remember_str(bodies[i], shas[i]);       /* the 4th evicts the 1st */
    ck_assert(!known(shas[0], bodies[0]));
    remember_str(bodies[1], shas[1]);           /* seen again: now the newest */
    remember_str(bodies[4], shas[4]);           /* evicts the 3rd, not the 2nd */
    scripts_stats(&count, &bytes);
    ck_assert_uint_le(bytes, 3 * 1200);
    ck_assert_uint_eq(count, 3);
    ck_assert(known(shas[1], bodies[1]));
    ck_assert(!known(shas[2], bodies[2]));
    ck_assert(known(shas[3], bodies[3]));
    ck_assert(known(shas[4], bodies[4]));
    remember_str(bodies[0], shas[0]);           /* an evicted body comes back */
    ck_assert(known(shas[0], bodies[0]));
    scripts_reset();
}
END_TEST

START_TEST(test_too_big_and_zero_bound)
{
    char big[5000], sha[SCRIPTS_SHA_HEX];
    size_t count, bytes;

    scripts_reset();
    scripts_init(1000);
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    remember_str(big, sha);
    ck_assert_ptr_null(scripts_body_copy(sha, &bytes));
    scripts_reset();
    scripts_init(0);
    remember_str("return 1", sha);
    scripts_stats(&count, &bytes);
    ck_assert_uint_eq(count, 0);
    ck_assert(!known(sha, "return 1"));
    scripts_reset();
}
END_TEST

START_TEST(test_forget_keeps_registered)
{
    char a[SCRIPTS_SHA_HEX], own[SCRIPTS_SHA_HEX];

    scripts_reset();
    scripts_init(1 << 20);
    ck_assert_int_eq(scripts_register("return 'own'", 12, own), 0);
    ck_assert_str_eq(own, "216d608b9b1dbec399602e3c0a909227936512dc");
    remember_str("return 'client'", a);
    ck_assert(known(a, "return 'client'"));
    scripts_forget();
    ck_assert(!known(a, "return 'client'"));
    ck_assert(known(own, "return 'own'"));
    remember_str("return 'client'", a);          /* remembered again after a forget */
    ck_assert(known(a, "return 'client'"));
    scripts_reset();
}
END_TEST

START_TEST(test_map)
{
    const char *body, *mapped_sha;
    size_t len;
    char sha[SCRIPTS_SHA_HEX];

    scripts_reset();
    ck_assert_int_eq(scripts_map_add("2F31BA2BB6D6A0F42CC159D2E2DAD55440778DE3", "return 'new'", 12), 0);
    body = scripts_map_find("2f31ba2bb6d6a0f42cc159d2e2dad55440778de3", &len, &mapped_sha);
    ck_assert_ptr_nonnull(body);
    ck_assert_uint_eq(len, 12);
    ck_assert_int_eq(memcmp(body, "return 'new'", 12), 0);
    scripts_sha1_hex("return 'new'", 12, sha);
    ck_assert_str_eq(mapped_sha, sha);
    ck_assert(known(sha, "return 'new'"));          /* the target is registered */
    ck_assert_ptr_null(scripts_map_find("da39a3ee5e6b4b0d3255bfef95601890afd80709", &len, &mapped_sha));
    ck_assert_int_eq(scripts_map_add("not a sha", "x", 1), -1);
    scripts_reset();
}
END_TEST

/* Threads remembering the same and different bodies at once: every body
 * ends up known once, with the right bytes. */
static void *remember_many(void *arg)
{
    int id = (int)(long)arg;
    char body[64], sha[SCRIPTS_SHA_HEX];
    for (int round = 0; round < 200; round++)
        for (int i = 0; i < 50; i++) {
            snprintf(body, sizeof body, "return %d -- %d", i, i % 2 ? id : 0);
            remember_str(body, sha);
        }
    return NULL;
}

START_TEST(test_threads)
{
    pthread_t th[4];
    size_t count, bytes;
    char body[64], sha[SCRIPTS_SHA_HEX];

    scripts_reset();
    scripts_init(1 << 20);
    for (long i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, remember_many, (void *)i), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    scripts_stats(&count, &bytes);
    ck_assert_uint_eq(count, 25 + 25 * 4);
    for (int i = 0; i < 50; i += 7) {
        snprintf(body, sizeof body, "return %d -- %d", i, i % 2 ? 3 : 0);
        scripts_sha1_hex(body, strlen(body), sha);
        ck_assert(known(sha, body));
    }
    scripts_reset();
}
END_TEST

static Suite *scripts_suite(void)
{
    Suite *s = suite_create("scripts");
    TCase *t = tcase_create("scripts");
    tcase_add_loop_test(t, test_sha1_vectors, 0, sizeof sha_vectors / sizeof sha_vectors[0]);
    tcase_add_test(t, test_sha_parse);
    tcase_add_test(t, test_bound_evicts_oldest);
    tcase_add_test(t, test_too_big_and_zero_bound);
    tcase_add_test(t, test_forget_keeps_registered);
    tcase_add_test(t, test_map);
    tcase_add_test(t, test_threads);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(scripts_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
