/*
 * SCAN across the cluster: one master per call, the proxy's cursor folding
 * in which master and where. A full scan returns every key of every master
 * (each at least once, as Redis promises), MATCH/COUNT/TYPE reach the
 * masters, and a cursor the proxy did not hand out is refused as Redis
 * refuses a malformed one.
 */
#include "harness.h"

#define NKEYS 300

/* Every key a full SCAN with these options returns; counts how often each
 * of want[] was seen into seen[]. Returns the number of calls made. */
static int full_scan(redisContext *c, const char *match, const char *type, char want[][96],
                     int nwant, int *seen, int *others)
{
    char cursor[32] = "0";
    int calls = 0;
    *others = 0;
    do {
        const char *argv[8] = { "SCAN", cursor, "MATCH", match, "COUNT", "37" };
        int argc = 6;
        if (type) {
            argv[argc++] = "TYPE";
            argv[argc++] = type;
        }
        redisReply *r = h_cmd_argv(c, argc, argv);
        ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 2,
                      "SCAN %s: %s", cursor, h_show(r));
        ck_assert_int_eq(r->element[0]->type, REDIS_REPLY_STRING);
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements; i++) {
            const char *k = r->element[1]->element[i]->str;
            int j;
            for (j = 0; j < nwant && strcmp(want[j], k) != 0; j++)
                ;
            if (j < nwant)
                seen[j]++;
            else
                (*others)++;
        }
        freeReplyObject(r);
        ck_assert_msg(++calls < 100000, "SCAN does not end");
    } while (strcmp(cursor, "0") != 0);
    return calls;
}

START_TEST(test_full_scan_covers_every_master)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    static char keys[NKEYS][96];
    int seen[NKEYS] = { 0 }, others, masters_hit[8] = { 0 };
    char prefix[96], match[128];

    h_topo_load(&t);
    H_FMT(prefix, sizeof(prefix), "%s:scan", h_prefix());
    H_FMT(match, sizeof(match), "%s:*", prefix);
    for (int i = 0; i < NKEYS; i++) {
        H_FMT(keys[i], sizeof(keys[i]), "%s:%d", prefix, i);
        redisReply *r = h_cmd(p, "SET %s v", keys[i]);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);
        masters_hit[h_topo_owner(&t, h_slot(keys[i]))]++;
    }
    for (int m = 0; m < t.nmasters; m++)
        ck_assert_msg(masters_hit[m] > 0, "no key on master %d: the test proves nothing", m);
    int calls = full_scan(p, match, NULL, keys, NKEYS, seen, &others);
    for (int i = 0; i < NKEYS; i++)
        ck_assert_msg(seen[i] >= 1, "SCAN never returned %s", keys[i]);
    ck_assert_int_eq(others, 0);
    ck_assert_msg(calls >= t.nmasters, "%d calls for %d masters", calls, t.nmasters);
    redisFree(p);
}
END_TEST

START_TEST(test_scan_type_reaches_masters)
{
    redisContext *p = h_connect_proxy();
    static char hashes[20][96];
    int seen[20] = { 0 }, others;
    char prefix[96], match[128];

    H_FMT(prefix, sizeof(prefix), "%s:scantype", h_prefix());
    H_FMT(match, sizeof(match), "%s:*", prefix);
    for (int i = 0; i < 40; i++) {
        redisReply *r;
        if (i % 2 == 0) {
            H_FMT(hashes[i / 2], sizeof(hashes[i / 2]), "%s:%d", prefix, i);
            r = h_cmd(p, "HSET %s f v", hashes[i / 2]);
        } else {
            r = h_cmd(p, "SET %s:%d v", prefix, i);
        }
        ck_assert_msg(r->type != REDIS_REPLY_ERROR, "%s", h_show(r));
        freeReplyObject(r);
    }
    full_scan(p, match, "hash", hashes, 20, seen, &others);
    for (int i = 0; i < 20; i++)
        ck_assert_msg(seen[i] >= 1, "SCAN TYPE hash never returned %s", hashes[i]);
    ck_assert_msg(others == 0, "SCAN TYPE hash returned %d keys of another type", others);
    redisFree(p);
}
END_TEST

/* Redis answers a cursor that is not a number with "ERR invalid cursor";
 * the proxy also refuses numbers it never handed out (a master beyond the
 * cluster's), where Redis would scan from some place. */
/* A pattern that fixes the hash tag lists that slot's master alone: KEYS
 * and SCAN MATCH answer in one call (cursor 0 for a small slot), and inside
 * MULTI KEYS runs in its place, with writes after it, as bull 4's
 * Queue#empty() sends: MULTI, LRANGE, KEYS {bull}:q:*, DEL, EXEC. */
START_TEST(test_tagged_pattern_one_slot)
{
    redisContext *c = h_connect_proxy();
    char tag[96], pattern[128], list[128], other[128];
    snprintf(tag, sizeof tag, "{%s:bull}", h_prefix());
    snprintf(pattern, sizeof pattern, "%s:q:*", tag);
    snprintf(list, sizeof list, "%s:q:wait", tag);
    snprintf(other, sizeof other, "%s:q:meta", tag);
    freeReplyObject(h_cmd(c, "RPUSH %s a b", list));
    freeReplyObject(h_cmd(c, "SET %s m", other));

    redisReply *r = h_cmd(c, "KEYS %s", pattern);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 2);
    freeReplyObject(r);
    /* one master's SCAN (its cursor walks that node's whole keyspace) */
    size_t found = 0;
    char cursor[32] = "0";
    do {
        r = h_cmd(c, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        found += r->element[1]->elements;
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    ck_assert_int_eq(found, 2);

    H_OK(c, "MULTI");
    H_STATUS(c, "QUEUED", "LRANGE %s 0 -1", list);
    H_STATUS(c, "QUEUED", "KEYS %s", pattern);
    H_STATUS(c, "QUEUED", "DEL %s %s", list, other);
    r = h_cmd(c, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 3);
    ck_assert_int_eq(r->element[0]->elements, 2);
    ck_assert_int_eq(r->element[1]->elements, 2);
    H_EXPECT_INT(r->element[2], 2);
    freeReplyObject(r);
    r = h_cmd(c, "KEYS %s", pattern);
    ck_assert_int_eq(r->elements, 0);
    freeReplyObject(r);

    /* a tag that is a glob is no fixed slot: still refused after a write */
    H_OK(c, "MULTI");
    H_STATUS(c, "QUEUED", "KEYS {%s*}:q:*", h_prefix());
    r = h_cmd(c, "DEL %s", list);
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    r = h_cmd(c, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    redisFree(c);
}
END_TEST

/* SCAN fills its page: a master that is done with fewer names than COUNT
 * hands the same call on to the next master, so a small keyspace (here:
 * what MATCH leaves of it) is listed in one call ending in cursor 0, as on
 * one server; with COUNT 1 each master keeps its own calls. */
START_TEST(test_scan_fills_its_page)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    char keys[9][96], match[128];
    h_topo_load(&t);
    H_FMT(match, sizeof match, "%s:fill:*", h_prefix());
    for (int m = 0; m < 3 && m < t.nmasters; m++)
        for (int i = 0; i < 3; i++) {
            char prefix[96];
            H_FMT(prefix, sizeof prefix, "%s:fill:m%d", h_prefix(), m);
            h_key_on_master(&t, m, prefix, i, keys[3 * m + i], sizeof keys[0]);
            freeReplyObject(h_cmd(p, "SET %s v", keys[3 * m + i]));
        }
    redisReply *r = h_cmd(p, "SCAN 0 MATCH %s COUNT 1000000", match);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    H_EXPECT_BULK(r->element[0], "0");
    ck_assert_int_eq(r->element[1]->elements, 9);
    freeReplyObject(r);
    int seen[9] = { 0 }, others;
    int calls = full_scan(p, match, NULL, keys, 9, seen, &others);
    ck_assert_int_ge(calls, 1);
    r = h_cmd(p, "SCAN 0 MATCH %s COUNT 1", match);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_msg(strcmp(r->element[0]->str, "0") != 0, "COUNT 1 listed all in one call");
    freeReplyObject(r);
    for (int i = 0; i < 9; i++)
        freeReplyObject(h_cmd(p, "DEL %s", keys[i]));
    redisFree(p);
}
END_TEST

START_TEST(test_scan_bad_cursor)
{
    static const char *const bad[] = { "abc", " 5", "5x", "18446744073709551616", "255" };
    redisContext *p = h_connect_proxy();
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *argv[2] = { "SCAN", bad[i] };
        redisReply *r = h_cmd_argv(p, 2, argv);
        H_EXPECT_ERR(r, "ERR invalid cursor");
        ck_assert_str_eq(r->str, "ERR invalid cursor");
        freeReplyObject(r);
    }
    /* "" reads as 0 in Redis: the start of a scan */
    const char *empty[2] = { "SCAN", "" };
    redisReply *r = h_cmd_argv(p, 2, empty);
    ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 2, "SCAN '': %s", h_show(r));
    freeReplyObject(r);
    r = h_cmd(p, "SCAN");
    H_EXPECT_ERR(r, "ERR wrong number of arguments for 'scan' command");
    ck_assert_str_eq(r->str, "ERR wrong number of arguments for 'scan' command");
    freeReplyObject(r);
    redisFree(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("scan");
    TCase *tc = tcase_create("scan");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_full_scan_covers_every_master);
    tcase_add_test(tc, test_scan_type_reaches_masters);
    tcase_add_test(tc, test_scan_bad_cursor);
    tcase_add_test(tc, test_tagged_pattern_one_slot);
    tcase_add_test(tc, test_scan_fills_its_page);
    suite_add_tcase(s, tc);
    return h_run(s);
}
