/*
 * cmdinfo (lib/proto/cmdinfo.h): every command of the built-in table, read back
 * from the COMMAND INFO entry redis-server 7.0 wrote for it, is the same
 * command (name, arity, flags, ACL categories, tips, key range, every key
 * spec, every subcommand in name order), and its RESP written again is the
 * server's own bytes, in RESP2 and in RESP3; entries that are not one are
 * refused; names the proxy does not know are counted, not lost.
 */
#include <check.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "lib/proto/cmdinfo.h"
#include "lib/proto/command.h"

/* bytes parsed by hiredis (RESP2). */
static redisReply *read_reply(const char *bytes, size_t len)
{
    redisReader *r = redisReaderCreate();
    void *reply = NULL;
    ck_assert(redisReaderFeed(r, bytes, len) == REDIS_OK);
    ck_assert(redisReaderGetReply(r, &reply) == REDIS_OK && reply != NULL);
    redisReaderFree(r);
    return reply;
}

static void same_keyspec(const char *name, const struct keyspec *a, const struct keyspec *b)
{
    ck_assert_msg(a->flags == b->flags, "%s: key spec flags", name);
    ck_assert_msg(a->bs == b->bs && a->fk == b->fk, "%s: key spec types", name);
    if (a->bs == KSPEC_BS_INDEX)
        ck_assert_int_eq(a->bs_u.index.pos, b->bs_u.index.pos);
    if (a->bs == KSPEC_BS_KEYWORD) {
        ck_assert_str_eq(a->bs_u.keyword.keyword, b->bs_u.keyword.keyword);
        ck_assert_int_eq(a->bs_u.keyword.startfrom, b->bs_u.keyword.startfrom);
    }
    if (a->fk == KSPEC_FK_RANGE)
        ck_assert_msg(memcmp(&a->fk_u.range, &b->fk_u.range, sizeof a->fk_u.range) == 0,
                      "%s: range", name);
    if (a->fk == KSPEC_FK_KEYNUM)
        ck_assert_msg(memcmp(&a->fk_u.keynum, &b->fk_u.keynum, sizeof a->fk_u.keynum) == 0,
                      "%s: keynum", name);
}

/* The learned command l is the built-in b. */
static void same_command(const struct command *l, const struct command *b)
{
    ck_assert_str_eq(l->fullname, b->fullname);
    ck_assert_str_eq(l->name, b->name);
    ck_assert_msg(l->arity == b->arity, "%s: arity", b->fullname);
    ck_assert_msg(l->flags == b->flags, "%s: flags %x, want %x", b->fullname, l->flags, b->flags);
    ck_assert_msg(l->acl_categories == b->acl_categories, "%s: categories", b->fullname);
    ck_assert_msg(l->tips == b->tips, "%s: tips", b->fullname);
    ck_assert_msg(l->first_key == b->first_key && l->last_key == b->last_key &&
                  l->key_step == b->key_step, "%s: key range", b->fullname);
    ck_assert_int_eq(l->nkeyspecs, b->nkeyspecs);
    for (int i = 0; i < b->nkeyspecs; i++)
        same_keyspec(b->fullname, &l->keyspecs[i], &b->keyspecs[i]);
    ck_assert_msg(l->info_resp_len == b->info_resp_len &&
                  memcmp(l->info_resp, b->info_resp, b->info_resp_len) == 0,
                  "%s: RESP2 entry differs", b->fullname);
    ck_assert_msg(l->info_resp3_len == b->info_resp3_len &&
                  memcmp(l->info_resp3, b->info_resp3, b->info_resp3_len) == 0,
                  "%s: RESP3 entry differs:\n%.*s\nwant\n%.*s", b->fullname,
                  (int)l->info_resp3_len, l->info_resp3, (int)b->info_resp3_len, b->info_resp3);
    ck_assert_int_eq(l->nsubcommands, b->nsubcommands);
    for (int i = 0; i < b->nsubcommands; i++) {
        same_command(&l->subcommands[i], &b->subcommands[i]);
        ck_assert(l->subcommands[i].parent == l);
    }
}

START_TEST(test_every_builtin_command_read_back)
{
    for (int i = 0; i < command_table_size; i++) {
        const struct command *b = &command_table[i];
        redisReply *entry = read_reply(b->info_resp, b->info_resp_len);
        struct cmdinfo_unknown u;
        char why[200];
        struct command *l = cmdinfo_parse(entry, &u, why, sizeof why);
        ck_assert_msg(l != NULL, "%s: %s", b->fullname, why);
        ck_assert_msg(u.flags == 0 && u.categories == 0 && u.tips == 0 && u.keyspec_flags == 0,
                      "%s: names not known", b->fullname);
        same_command(l, b);
        ck_assert(command_lookup_sub(l, "nosuch", 6) == NULL);
        cmdinfo_free(l);
        freeReplyObject(entry);
    }
}
END_TEST

/* A Redis 7.4 command the built-in table lacks: HEXPIRE key seconds
 * [NX|XX|GT|LT] FIELDS numfields field ..., with a flag and a tip of a
 * newer server. */
START_TEST(test_newer_command)
{
    static const char hexpire[] =
        "*10\r\n$7\r\nhexpire\r\n:-6\r\n*3\r\n+write\r\n+denyoom\r\n+fast\r\n"
        ":1\r\n:1\r\n:1\r\n*4\r\n+@write\r\n+@hash\r\n+@fast\r\n+@newcategory\r\n"
        "*1\r\n$30\r\nrequest_policy:not_yet_written\r\n*1\r\n*6\r\n$5\r\nflags\r\n*2\r\n"
        "+RW\r\n+update\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n"
        "$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n"
        "$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n"
        "$5\r\nlimit\r\n:0\r\n*0\r\n";
    redisReply *entry = read_reply(hexpire, sizeof hexpire - 1);
    struct cmdinfo_unknown u;
    char why[200];
    struct command *l = cmdinfo_parse(entry, &u, why, sizeof why);
    ck_assert_msg(l != NULL, "%s", why);
    ck_assert_str_eq(l->fullname, "hexpire");
    ck_assert_int_eq(l->arity, -6);
    ck_assert(l->flags == (CMD_WRITE | CMD_DENYOOM | CMD_FAST));
    ck_assert_int_eq(u.categories, 1);
    ck_assert_int_eq(u.tips, 1);
    ck_assert_int_eq(l->nkeyspecs, 1);
    ck_assert_int_eq(l->keyspecs[0].bs, KSPEC_BS_INDEX);
    ck_assert_int_eq(l->keyspecs[0].bs_u.index.pos, 1);
    ck_assert_int_eq(l->keyspecs[0].fk, KSPEC_FK_RANGE);
    ck_assert_int_eq(l->info_resp_len, sizeof hexpire - 1);
    ck_assert(memcmp(l->info_resp, hexpire, sizeof hexpire - 1) == 0);
    ck_assert(strstr(l->info_resp3, "~4\r\n+@write\r\n+@hash\r\n+@fast\r\n+@newcategory") != NULL);
    cmdinfo_free(l);
    freeReplyObject(entry);
}
END_TEST

START_TEST(test_not_an_entry)
{
    static const char *const bad[] = {
        "*2\r\n$3\r\nget\r\n:2\r\n",                                 /* too few fields */
        "*10\r\n:1\r\n:2\r\n*0\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n*0\r\n*0\r\n",    /* no name */
        "$3\r\nget\r\n",                                              /* not an array */
        /* a key spec without begin_search */
        "*10\r\n$1\r\nx\r\n:2\r\n*0\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n*1\r\n*2\r\n$5\r\nflags\r\n"
        "*0\r\n*0\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        redisReply *entry = read_reply(bad[i], strlen(bad[i]));
        char why[200];
        ck_assert_msg(cmdinfo_parse(entry, NULL, why, sizeof why) == NULL, "bad entry %zu", i);
        freeReplyObject(entry);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cmdinfo");
    TCase *t = tcase_create("cmdinfo");
    tcase_add_test(t, test_every_builtin_command_read_back);
    tcase_add_test(t, test_newer_command);
    tcase_add_test(t, test_not_an_entry);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
