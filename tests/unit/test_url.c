/*
 * redis:// URLs (lib/base/url.h): the forms clients write, and the errors,
 * none of which repeats a password.
 */
#include <check.h>
#include <string.h>

#include "lib/base/url.h"

static struct redis_url parsed(const char *s)
{
    struct redis_url u;
    char err[256];
    ck_assert_msg(url_parse(s, &u, err, sizeof err) == 0, "%s: %s", s, err);
    return u;
}

START_TEST(test_plain_forms)
{
    struct redis_url u = parsed("redis://localhost");
    ck_assert_str_eq(u.host, "localhost");
    ck_assert_int_eq(u.port, 6379);
    ck_assert_int_eq(u.tls, 0);
    ck_assert_int_eq(u.has_password, 0);
    ck_assert_str_eq(u.user, "");
    u = parsed("redis://10.0.0.5:7000/0");
    ck_assert_str_eq(u.host, "10.0.0.5");
    ck_assert_int_eq(u.port, 7000);
    ck_assert_int_eq(u.db, 0);
    u = parsed("rediss://cache.internal:6380/3");
    ck_assert_int_eq(u.tls, 1);
    ck_assert_int_eq(u.db, 3);
    u = parsed("redis://[::1]:7001");
    ck_assert_str_eq(u.host, "::1");
    ck_assert_int_eq(u.port, 7001);
    char hp[64];
    url_hostport(&u, hp, sizeof hp);
    ck_assert_str_eq(hp, "[::1]:7001");
}
END_TEST

START_TEST(test_credentials)
{
    struct redis_url u = parsed("redis://:s3cret@h:1");
    ck_assert_str_eq(u.user, "");
    ck_assert_int_eq(u.has_password, 1);
    ck_assert_str_eq(u.password, "s3cret");
    u = parsed("redis://bot:p%40ss%3Aw@h");
    ck_assert_str_eq(u.user, "bot");
    ck_assert_str_eq(u.password, "p@ss:w");
    u = parsed("redis://bot:a@b@h:2");       /* the last '@' ends the password */
    ck_assert_str_eq(u.password, "a@b");
    ck_assert_str_eq(u.host, "h");
    u = parsed("redis://bot@h");
    ck_assert_str_eq(u.user, "bot");
    ck_assert_int_eq(u.has_password, 0);
}
END_TEST

START_TEST(test_errors_never_show_the_password)
{
    static const char *const bad[] = {
        "http://h", "redis://", "redis://:pw@", "redis://h:0", "redis://h:65536",
        "redis://h:x", "redis://[::1", "redis://h/x", "redis://:pw%4@h", "redis://h:1:2",
        "redis://:topsecret%zz@h",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct redis_url u;
        char err[256];
        ck_assert_msg(url_parse(bad[i], &u, err, sizeof err) == -1, "%s accepted", bad[i]);
        ck_assert_msg(strstr(err, "pw") == NULL && strstr(err, "topsecret") == NULL,
                      "%s: %s", bad[i], err);
    }
}
END_TEST

static Suite *url_suite(void)
{
    Suite *s = suite_create("url");
    TCase *tc = tcase_create("url");
    tcase_add_test(tc, test_plain_forms);
    tcase_add_test(tc, test_credentials);
    tcase_add_test(tc, test_errors_never_show_the_password);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(url_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
