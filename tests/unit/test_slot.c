/*
 * Hash slots (cluster/slot.h), against the cluster spec and LAYOUT.md.
 * Expected slots were read from a real redis-server 7.0 (CLUSTER KEYSLOT).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "cluster/slot.h"

START_TEST(test_crc16_vectors)
{
    ck_assert_uint_eq(slot_crc16("123456789", 9), 0x31C3);
    ck_assert_uint_eq(slot_crc16("", 0), 0);
    ck_assert_uint_eq(slot_crc16("A", 1), 0x58E5);
}
END_TEST

/* The spec's bit-at-a-time CRC16, the reference for the table-driven one. */
static uint16_t crc16_bitwise(const unsigned char *p, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

/* Every length from 0 to 64 (the four-byte steps and every tail), at every
 * alignment, over bytes that cover all 256 values. */
START_TEST(test_crc16_matches_bitwise)
{
    unsigned char buf[80];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 37 + 11);
    for (size_t off = 0; off < 4; off++)
        for (size_t len = 0; len <= 64; len++)
            ck_assert_uint_eq(slot_crc16((const char *)buf + off, len), crc16_bitwise(buf + off, len));
    unsigned char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)(255 - i);
    ck_assert_uint_eq(slot_crc16((const char *)all, sizeof all), crc16_bitwise(all, sizeof all));
}
END_TEST

#define K(key, slot) { key, sizeof(key) - 1, slot }

/* key -> the slot redis-server 7.0 answers for CLUSTER KEYSLOT key */
static const struct { const char *key; size_t len; int slot; } keys[] = {
    K("foo", 12182),
    K("bar", 5061),
    K("hello", 866),
    K("123456789", 12739),                  /* 0x31C3 & 16383 */
    K("", 0),
    K("\0\xff", 7920),                      /* binary keys hash by bytes */
    /* hash tags: the bytes between the first '{' and the first '}' after it */
    K("user1000", 3443),
    K("{user1000}.following", 3443),
    K("{user1000}.followers", 3443),
    K("foo{bar}{zap}", 5061),               /* only the first tag: "bar" */
    K("a{b}c", 3300),
    K("{a}{b}", 15495),
    K("}{a}", 15495),                       /* a '}' before the '{' does not close it */
    K("foo{{bar}}zap", 4015),               /* tag "{bar" */
    K("{bar", 4015),
    K("{{}}", 4092),                        /* tag "{" */
    K("{", 4092),
    K("}", 12090),
    K("zap", 6469),
    /* an empty tag or none at all: the whole key */
    K("{}", 15257),
    K("foo{}{bar}", 8363),
    K("{}a", 10875),
};

START_TEST(test_key_slots)
{
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(slot_of(keys[i].key, keys[i].len) == keys[i].slot,
                      "slot of \"%s\" = %d, want %d", keys[i].key,
                      slot_of(keys[i].key, keys[i].len), keys[i].slot);
}
END_TEST

START_TEST(test_tag_is_the_slot)
{
    /* a tag routes like the bare tag, wherever it sits */
    ck_assert_int_eq(slot_of("x{user1000}y", 12), slot_of("user1000", 8));
    ck_assert_int_eq(slot_of("foo{{bar}}zap", 13), slot_of("{bar", 4));
    ck_assert_int_eq(slot_of("foo{bar}{zap}", 13), slot_of("bar", 3));
    /* no tag: the slot is CRC16 mod 16384 */
    ck_assert_int_eq(slot_of("123456789", 9), 0x31C3 & 16383);
    for (int i = 0; i < 1000; i++) {
        char k[16];
        int n = snprintf(k, sizeof k, "key:%d", i);
        int s = slot_of(k, (size_t)n);
        ck_assert_int_ge(s, 0);
        ck_assert_int_lt(s, SLOT_COUNT);
    }
}
END_TEST

static Suite *slot_suite(void)
{
    Suite *s = suite_create("slot");
    TCase *tc = tcase_create("slot");
    tcase_add_test(tc, test_crc16_vectors);
    tcase_add_test(tc, test_crc16_matches_bitwise);
    tcase_add_test(tc, test_key_slots);
    tcase_add_test(tc, test_tag_is_the_slot);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(slot_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
