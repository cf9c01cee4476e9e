/*
 * What a master runs (proxy/ops/servers.h): its INFO server read as Redis and
 * Valkey write it, and versions compared number by number, so that the
 * cluster is named after its oldest master.
 */
#include <check.h>
#include <stdio.h>

#include "proxy/ops/servers.h"

START_TEST(test_parse_redis)
{
    struct topology_server s;
    ck_assert_int_eq(servers_parse_info("# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:0\r\n"
                                        "redis_mode:cluster\r\n", &s), 0);
    ck_assert_str_eq(s.name, "redis");
    ck_assert_str_eq(s.version, "7.0.15");
    ck_assert_str_eq(s.redis_version, "7.0.15");
}
END_TEST

START_TEST(test_parse_valkey)
{
    struct topology_server s;
    ck_assert_int_eq(servers_parse_info("# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\n"
                                        "valkey_version:8.0.1\r\n", &s), 0);
    ck_assert_str_eq(s.name, "valkey");
    ck_assert_str_eq(s.version, "8.0.1");
    ck_assert_str_eq(s.redis_version, "7.2.4");
}
END_TEST

START_TEST(test_parse_without_version)
{
    struct topology_server s;
    ck_assert_int_eq(servers_parse_info("# Server\r\nredis_mode:cluster\r\n", &s), -1);
    ck_assert_int_eq(servers_parse_info("", &s), -1);
}
END_TEST

static struct topology_server server(const char *redis_version, const char *version)
{
    struct topology_server s = { "redis", "", "", "" };
    snprintf(s.redis_version, sizeof s.redis_version, "%s", redis_version);
    snprintf(s.version, sizeof s.version, "%s", version);
    return s;
}

START_TEST(test_compare)
{
    struct topology_server a = server("7.2.4", "8.0.1"), b = server("7.10.0", "7.10.0"),
                           c = server("7.2.4", "8.1.0"), d = server("7.2.4", "8.0.1-rc1"),
                           e = server("7.0.15", "7.0.15");
    ck_assert_int_lt(servers_compare(&a, &b), 0);      /* 2 < 10, not "2" > "1" */
    ck_assert_int_gt(servers_compare(&b, &a), 0);
    ck_assert_int_lt(servers_compare(&a, &c), 0);      /* same redis_version: own version */
    ck_assert_int_eq(servers_compare(&a, &a), 0);
    ck_assert_int_eq(servers_compare(&a, &d), 0);      /* what follows a number ends it */
    ck_assert_int_lt(servers_compare(&e, &a), 0);      /* Redis 7.0 below Valkey 8 */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("servers");
    TCase *t = tcase_create("servers");
    tcase_add_test(t, test_parse_redis);
    tcase_add_test(t, test_parse_valkey);
    tcase_add_test(t, test_parse_without_version);
    tcase_add_test(t, test_compare);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
