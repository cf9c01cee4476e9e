/*
 * Listings from the indexes: the glob matcher (keylayout/glob.h) against
 * vectors of redis-server 7.0's stringmatchlen (and, in
 * tests/integration/test_index.c, against a real node's KEYS), and which
 * patterns the indexes answer (keylayout/listplan.h) with the shipped
 * botmesh-v1 rules. Run from the repository root (as make test does).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keylayout/glob.h"
#include "keylayout/layoutload.h"
#include "keylayout/listplan.h"

#define DEFAULT_RULES "conf/layouts/botmesh-v1.rules"
#define S(s) s, sizeof(s) - 1

static struct layout *layout_default(void)
{
    static const char *const pf[] = { "bot", "b2" };
    char err[256] = "";
    struct layout *l = layout_load_file(DEFAULT_RULES, pf, 2, err, sizeof err);
    ck_assert_msg(l != NULL, "%s", err);
    return l;
}

/* ---- glob ---- */

static const struct { const char *p; size_t plen; const char *s; size_t slen; bool match; } globs[] = {
    { S("*"), S(""), false },      /* stringmatchlen's own answer: KEYS and SCAN treat "*" as all */
    { S("**"), S(""), false },
    { S("*"), S("anything:at:all"), true },
    { S(""), S(""), true },
    { S(""), S("a"), false },
    { S("a"), S(""), false },
    { S("h?llo"), S("hello"), true },
    { S("h?llo"), S("hllo"), false },
    { S("h*llo"), S("hllo"), true },
    { S("h*llo"), S("heeeello"), true },
    { S("h[ae]llo"), S("hello"), true },
    { S("h[ae]llo"), S("hillo"), false },
    { S("h[^e]llo"), S("hallo"), true },
    { S("h[^e]llo"), S("hello"), false },
    { S("h[a-b]llo"), S("hbllo"), true },
    { S("h[b-a]llo"), S("hallo"), true },          /* reversed range */
    { S("h[a-b]llo"), S("hcllo"), false },
    { S("h\\*llo"), S("h*llo"), true },
    { S("h\\*llo"), S("hello"), false },
    { S("[\\]]"), S("]"), true },
    { S("[\\-]"), S("-"), true },
    { S("[a-]"), S("-"), false },                   /* the range a..] (unclosed), as Redis */
    { S("[a-]"), S("^"), true },
    { S("[abc"), S("a"), true },                    /* unclosed set */
    { S("[abc"), S("b"), true },
    { S("[abc"), S("d"), false },
    { S("["), S("a"), false },
    { S("[^"), S("a"), true },
    { S("\\"), S("\\"), true },                     /* a lone '\' at the end */
    { S("a\\"), S("a\\"), true },
    { S("a*"), S("a"), true },
    { S("a**"), S("a"), true },
    { S("a*b*c"), S("axxbyyc"), true },
    { S("a*b*c"), S("axxbyy"), false },
    { S("*a*a*a*a*a*a*a*a*a*a*b"), S("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), false },
    { S("bot:chat:*"), S("bot:chat:"), true },
    { S("bot:chat:*"), S("bot:chats"), false },
    { S("*\x00*"), S("a\x00" "b"), true },          /* binary bytes */
    { S("[\x80-\xff]"), S("\x90"), true },          /* signed char compare, as Redis */
    { S("[a-\xff]"), S("b"), false },               /* 'a'..-1: an empty range in Redis */
    { S("?"), S("\xc3\xa9"), false },               /* a byte, not a character */
    { S("??"), S("\xc3\xa9"), true },
};

START_TEST(test_glob_vectors)
{
    for (size_t i = 0; i < sizeof globs / sizeof globs[0]; i++)
        ck_assert_msg(glob_match(globs[i].p, globs[i].plen, globs[i].s, globs[i].slen) ==
                      globs[i].match, "vector %zu: '%s' vs '%s'", i, globs[i].p, globs[i].s);
}
END_TEST

START_TEST(test_glob_literal_prefix)
{
    static const struct { const char *p; size_t plen; const char *lit; size_t llen; bool exact; } v[] = {
        { S("bot:chat:*"), S("bot:chat:"), false },
        { S("bot:chat:a\\*b"), S("bot:chat:a*b"), true },
        { S("bot:ch?t:*"), S("bot:ch"), false },
        { S("bot:cha[t]:*"), S("bot:cha"), false },
        { S("*"), S(""), false },
        { S("x\\"), S("x\\"), true },
        { S(""), S(""), true },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char out[64];
        bool exact;
        size_t n = glob_literal_prefix(v[i].p, v[i].plen, out, sizeof out, &exact);
        ck_assert_msg(n == v[i].llen && memcmp(out, v[i].lit, n) == 0 && exact == v[i].exact,
                      "vector %zu: '%s'", i, v[i].p);
    }
    char small[3];
    bool exact;
    ck_assert_uint_eq(glob_literal_prefix(S("abcdef*"), small, sizeof small, &exact), 6);
}
END_TEST

/* ---- which patterns the indexes answer ---- */

START_TEST(test_plan_families)
{
    static const struct { const char *p; size_t plen; const char *family; int nindex; const char *index0; } v[] = {
        { S("bot:chat:*"), "chat", 32, "bot:{ch:0}:idx" },
        { S("bot:chat:tg:*"), "chat", 32, "bot:{ch:0}:idx" },
        { S("bot:chat:[ab]*"), "chat", 32, "bot:{ch:0}:idx" },
        { S("bot:chat:"), "chat", 32, "bot:{ch:0}:idx" },
        { S("bot:chat:exact\\*id"), "chat", 32, "bot:{ch:0}:idx" },
        { S("b2:contact:*"), "contact", 32, "b2:{ct:0}:idx" },
        { S("bot:checkpoint:*"), "checkpoint", 32, "bot:{cp:0}:idx" },
        { S("bot:schedule:?"), "schedule", 32, "bot:{sc:0}:idx" },
        { S("bot:user:u1:ns:*"), "user-data", 1, "bot:{ud:u1}:idx" },
        { S("bot:user:u{1}:ns:k*"), "user-data", 1, "bot:{ud:u%7B1%7D}:idx" },
        { S("bot:user:u1:ns:a:b:*"), "user-data", 1, "bot:{ud:u1}:idx" },
    };
    struct layout *l = layout_default();
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        struct listplan ls;
        char key[128];
        ck_assert_msg(listplan_make(l, v[i].p, v[i].plen, &ls), "no plan for '%s'", v[i].p);
        ck_assert_str_eq(ls.fixed.rule->name, v[i].family);
        ck_assert_int_eq(ls.nindex, v[i].nindex);
        size_t n = listplan_index_key(l, &ls, 0, key, sizeof key);
        ck_assert_msg(n == strlen(v[i].index0) && memcmp(key, v[i].index0, n) == 0,
                      "'%s': index 0 is '%.*s'", v[i].p, (int)n, key);
    }
    layout_free(l);
}
END_TEST

START_TEST(test_plan_refused)
{
    static const struct { const char *p; size_t plen; } v[] = {
        { S("*") }, { S("bot:*") }, { S("bot:chat*") }, { S("bot:cha[t]:*") }, { S("bot:c?at:*") },
        { S("other:chat:*") },              /* not a configured prefix */
        { S("bot:msgs:*") },                /* a family without an index */
        { S("bot:user:*") },                /* user not fixed: many indexes */
        { S("bot:user:u1:*") },             /* bot:user:u1:x matches no rule */
        { S("bot:user:u1:ns*") },
        { S("bot:conv:*") },                /* a keep */
        { S("bot:lock:*") },
        { S("bot:co:turn:*") },
    };
    struct layout *l = layout_default();
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        struct listplan ls;
        ck_assert_msg(!listplan_make(l, v[i].p, v[i].plen, &ls), "a plan for '%s'", v[i].p);
    }
    layout_free(l);
}
END_TEST

/* An earlier rule that may match names of the family keeps the indexes out:
 * `p:chat:<x>:pinned` before `chat` would own bot:chat:a:pinned. */
/* Rules whose record names are not before + the member's captures + after:
 * the indexes answer listings, but TYPE cannot be checked by the script. */
START_TEST(test_affixes_refused)
{
    static const char text[] =
        "rule swap  p:sw:<x>:<z>:<y...>  ->  p:{sw:<x>}:r:<y...>:<z>  index p:{sw:<x>}:idx  member <z>:<y...>\n"
        "rule lit   p:li:<x>:<y...>  ->  p:{li:<x>}:r:<y...>  index p:{li:<x>}:idx  member x:<y...>\n"
        "rule gap   p:gp:<x>:<z>:<y...>  ->  p:{gp:<x>}:r:<z>[<y...>  index p:{gp:<x>}:idx  member <z>:<y...>\n";
    static const char *const pf[] = { "bot" };
    char err[256] = "", b[64], a[64];
    size_t bl, al;
    int splits;
    struct layout *l = layout_load_string("a.rules", text, strlen(text), pf, 1, err, sizeof err);
    struct listplan ls;
    ck_assert_msg(l != NULL, "%s", err);
    ck_assert(listplan_make(l, S("bot:sw:1:z:*"), &ls));
    ck_assert(!listplan_record_affixes(l, &ls, 0, b, sizeof b, &bl, a, sizeof a, &al, &splits));
    ck_assert(listplan_make(l, S("bot:li:1:*"), &ls));
    ck_assert(!listplan_record_affixes(l, &ls, 0, b, sizeof b, &bl, a, sizeof a, &al, &splits));
    ck_assert(listplan_make(l, S("bot:gp:1:c:*"), &ls));
    ck_assert(!listplan_record_affixes(l, &ls, 0, b, sizeof b, &bl, a, sizeof a, &al, &splits));
    layout_free(l);
}
END_TEST

START_TEST(test_plan_earlier_rule)
{
    static const char text[] =
        "rule pin   p:chat:<x>:pinned  ->  p:{pin:<x>}\n"
        "rule chat  p:chat:<id...>  ->  p:{ch:<b>}:r:<id...>  index p:{ch:<b>}:idx  member <id...>\n"
        "rule other p:zz:<id...>    ->  p:{zz:<b>}:r:<id...>  index p:{zz:<b>}:idx  member <id...>\n";
    static const char *const pf[] = { "bot" };
    char err[256] = "";
    struct layout *l = layout_load_string("e.rules", text, strlen(text), pf, 1, err, sizeof err);
    struct listplan ls;
    ck_assert_msg(l != NULL, "%s", err);
    ck_assert(!listplan_make(l, S("bot:chat:*"), &ls));
    ck_assert(!listplan_make(l, S("bot:chat:a:*"), &ls));    /* a:pinned is pin's */
    ck_assert(listplan_make(l, S("bot:chat:a:b:*"), &ls));   /* pin has 3 segments */
    ck_assert(listplan_make(l, S("bot:zz:*"), &ls));
    layout_free(l);
}
END_TEST

START_TEST(test_plan_names)
{
    struct layout *l = layout_default();
    struct listplan ls;
    char out[128], key[128];
    size_t n;
    ck_assert(listplan_make(l, S("bot:chat:*"), &ls));
    /* "tg:42" is in bucket 16 */
    ck_assert_int_eq(listplan_legacy(l, &ls, 16, S("tg:42"), out, sizeof out, &n), LAYOUT_MAPPED);
    ck_assert(n == strlen("bot:chat:tg:42") && memcmp(out, "bot:chat:tg:42", n) == 0);
    ck_assert_int_eq(listplan_legacy(l, &ls, 15, S("tg:42"), out, sizeof out, &n), LAYOUT_PASS);
    ck_assert_int_eq(listplan_legacy(l, &ls, 16, S("tg:42"), out, 4, &n), LAYOUT_SHORT);
    ck_assert_uint_eq(n, strlen("bot:chat:tg:42"));
    n = listplan_index_key(l, &ls, 31, key, sizeof key);
    ck_assert(n == strlen("bot:{ch:31}:idx") && memcmp(key, "bot:{ch:31}:idx", n) == 0);

    ck_assert(listplan_make(l, S("bot:user:u1:ns:*"), &ls));
    ck_assert_int_eq(listplan_legacy(l, &ls, 0, S("other:k:1"), out, sizeof out, &n), LAYOUT_MAPPED);
    ck_assert(n == strlen("bot:user:u1:other:k:1") && memcmp(out, "bot:user:u1:other:k:1", n) == 0);
    ck_assert_int_eq(listplan_legacy(l, &ls, 0, S("nocolon"), out, sizeof out, &n), LAYOUT_PASS);
    size_t alen;
    int splits;
    /* user data: bot:{ud:u1}:e: + enc(ns) ":" enc(key...) */
    ck_assert(listplan_record_affixes(l, &ls, 0, out, sizeof out, &n, key, sizeof key, &alen,
                                     &splits));
    ck_assert_msg(n == strlen("bot:{ud:u1}:e:") && memcmp(out, "bot:{ud:u1}:e:", n) == 0, "%.*s",
                  (int)n, out);
    ck_assert_uint_eq(alen, 0);
    ck_assert_int_eq(splits, 1);

    /* the record of member m in bucket 7: bot:{ch:7}:r: + encode(m) */
    ck_assert(listplan_make(l, S("bot:chat:*"), &ls));
    ck_assert(listplan_record_affixes(l, &ls, 7, out, sizeof out, &n, key, sizeof key, &alen,
                                     &splits));
    ck_assert_msg(n == strlen("bot:{ch:7}:r:") && memcmp(out, "bot:{ch:7}:r:", n) == 0, "%.*s", (int)n, out);
    ck_assert_uint_eq(alen, 0);
    ck_assert_int_eq(splits, 0);
    layout_free(l);
}
END_TEST

static Suite *listing_suite(void)
{
    Suite *s = suite_create("listing");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_glob_vectors);
    tcase_add_test(tc, test_glob_literal_prefix);
    tcase_add_test(tc, test_plan_families);
    tcase_add_test(tc, test_plan_refused);
    tcase_add_test(tc, test_plan_earlier_rule);
    tcase_add_test(tc, test_plan_names);
    tcase_add_test(tc, test_affixes_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(listing_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
