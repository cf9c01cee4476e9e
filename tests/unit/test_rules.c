/*
 * The rules file parser (keylayout/rules.h): the shipped botmesh-v1 rules,
 * the syntax's corners, and every error with its exact `FILE:LINE: message`.
 * Run from the repository root (as make test does).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "keylayout/layout.h"
#include "keylayout/layoutload.h"
#include "keylayout/overlap.h"
#include "keylayout/rules.h"

#define DEFAULT_RULES "conf/layouts/botmesh-v1.rules"

static struct rules *load(const char *text, char *err, size_t errlen)
{
    return rules_load_string("t.rules", text, strlen(text), err, errlen);
}

START_TEST(test_default_rules)
{
    static const struct { const char *name; enum rules_kind kind; bool indexed; } want[] = {
        { "p:conv:*", RULES_KEEP, false },       { "p:cursor:*", RULES_KEEP, false },
        { "p:lease:*", RULES_KEEP, false },      { "p:co:rep:*", RULES_KEEP, false },
        { "p:{durable:*", RULES_KEEP, false },   { "p:{meta}:layout", RULES_KEEP, false },
        { "msg-log", RULES_REWRITE, false },     { "msg-item", RULES_REWRITE, false },
        { "chat", RULES_REWRITE, true },         { "contact", RULES_REWRITE, true },
        { "checkpoint", RULES_REWRITE, true },   { "schedule", RULES_REWRITE, true },
        { "user-data", RULES_REWRITE, true },    { "lock-fence", RULES_REWRITE, false },
        { "lock", RULES_REWRITE, false },        { "turn", RULES_REWRITE, false },
        { "leader-term", RULES_REWRITE, false }, { "leader", RULES_REWRITE, false },
    };
    char err[256] = "";
    struct rules *r = rules_load_file(DEFAULT_RULES, err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    ck_assert_uint_eq(r->nrule, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < r->nrule; i++) {
        ck_assert_str_eq(r->rule[i].name, want[i].name);
        ck_assert_int_eq(r->rule[i].kind, want[i].kind);
        ck_assert_int_eq(r->rule[i].indexed, want[i].indexed);
        /* every rule that buckets has its id */
        if (r->rule[i].bucket)
            ck_assert_str_eq(r->rule[i].cap[r->rule[i].id_cap].name, "id");
    }
    /* the turn counter's constrained part */
    const struct rules_rule *turn = &r->rule[15];
    ck_assert_uint_eq(turn->ncap, 2);
    ck_assert_str_eq(turn->cap[1].name, "part");
    ck_assert_uint_eq(turn->cap[1].nalt, 5);
    ck_assert_int_eq(turn->cap[0].greedy, true);
    ck_assert_int_eq(turn->legacy.greedy, 2);
    rules_free(r);
}
END_TEST

/* What `tagproxy migrate` reads of botmesh-v1: copy modes, the log and
 * its items, the signs of a running bot. */
START_TEST(test_copy_clauses)
{
    static const struct { const char *name; enum rules_copy copy; enum rules_live live; } want[] = {
        { "p:conv:*", RULES_COPY_PLAIN, RULES_LIVE_NONE },
        { "p:co:rep:*", RULES_COPY_PLAIN, RULES_LIVE_HEARTBEAT },
        { "msg-log", RULES_COPY_LOG, RULES_LIVE_NONE },
        { "msg-item", RULES_COPY_ITEM, RULES_LIVE_NONE },
        { "chat", RULES_COPY_PLAIN, RULES_LIVE_NONE },
        { "schedule", RULES_COPY_TOKEN, RULES_LIVE_NONE },
        { "lock-fence", RULES_COPY_GREATER, RULES_LIVE_NONE },
        { "lock", RULES_COPY_PLAIN, RULES_LIVE_NONE },
        { "turn", RULES_COPY_NEVER, RULES_LIVE_TICKET },
        { "leader-term", RULES_COPY_GREATER, RULES_LIVE_NONE },
    };
    char err[256] = "";
    struct rules *r = rules_load_file(DEFAULT_RULES, err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    const struct rules_rule *log = NULL, *item = NULL, *turn = NULL;
    for (size_t w = 0; w < sizeof want / sizeof *want; w++) {
        const struct rules_rule *found = NULL;
        for (size_t i = 0; i < r->nrule; i++)
            if (strcmp(r->rule[i].name, want[w].name) == 0)
                found = &r->rule[i];
        ck_assert_msg(found != NULL, "%s", want[w].name);
        ck_assert_int_eq(found->copy, want[w].copy);
        ck_assert_int_eq(found->live, want[w].live);
        log = found->copy == RULES_COPY_LOG ? found : log;
        item = found->copy == RULES_COPY_ITEM ? found : item;
        turn = found->live == RULES_LIVE_TICKET ? found : turn;
    }
    ck_assert_ptr_eq(log->pair, item);
    ck_assert_ptr_eq(item->pair, log);
    ck_assert_str_eq(item->cap[item->item_cap].name, "member");
    ck_assert_str_eq(rules_copy_name(log->copy), "log");
    const struct rules_capture *part = &turn->cap[turn->ticket_cap];
    ck_assert_str_eq(part->name, "part");
    ck_assert_int_eq(part->alt_len[turn->ticket_more], 3);
    ck_assert(memcmp(part->alt[turn->ticket_more], "tix", 3) == 0);
    ck_assert_int_eq(part->alt_len[turn->ticket_less], 7);
    ck_assert(memcmp(part->alt[turn->ticket_less], "serving", 7) == 0);
    rules_free(r);
}
END_TEST

START_TEST(test_syntax_corners)
{
    char err[256] = "";
    /* comments (whole line or after the tokens), blank lines, tabs, CRLF, no final newline */
    const char *text =
        "# a comment\r\n"
        "\r\n"
        "   \t \n"
        "rule\ta  p:x:<id>\t->\tp:{x:<id>}   # trailing comment\r\n"
        "keep p:y:* #\n"
        "rule b.c_d-1 p:z:<k> -> p:{z:<k>}";
    struct rules *r = load(text, err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    ck_assert_uint_eq(r->nrule, 3);
    ck_assert_int_eq(r->rule[0].line, 4);
    ck_assert_int_eq(r->rule[1].line, 5);
    ck_assert_int_eq(r->rule[1].kind, RULES_KEEP);
    ck_assert_int_eq(r->rule[1].legacy.seg[1].kind, RULES_SEG_REST);
    ck_assert_str_eq(r->rule[2].name, "b.c_d-1");
    rules_free(r);

    r = load("rule b p:z:<k=a|b%|c> -> p:{z}:<k>\n", err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    const struct rules_capture *k = &r->rule[0].cap[0];
    ck_assert_uint_eq(k->nalt, 3);
    ck_assert_str_eq(k->alt_enc[1], "b%25");   /* alternatives are compared encoded too */
    rules_free(r);

    /* names of 31 bytes are the longest */
    r = load("rule a123456789012345678901234567890 p:x:<a12345678901234567890123456789z> "
             "-> p:{x:<a12345678901234567890123456789z>}\n", err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    rules_free(r);

    /* an empty file is an empty rule set */
    r = load("", err, sizeof err);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->nrule, 0);
    rules_free(r);
}
END_TEST

/* Every error, with its exact message. */
static const struct { const char *text; const char *msg; } errors[] = {
    { "frob x\n", "t.rules:1: unknown directive \"frob\" (expected rule or keep)" },
    { "Rule a p:x:<id> -> p:{x:<id>}\n", "t.rules:1: unknown directive \"Rule\" (expected rule or keep)" },
#define USAGE "expected rule NAME LEGACY -> CLUSTER [index INDEX member MEMBER] [copy MODE] " \
              "[live SIGN]"
    { "rule a p:x:<id> p:{x:<id>}\n", "t.rules:1: " USAGE },
    { "rule a p:x:<id> ->\n", "t.rules:1: " USAGE },
    { "rule a p:x:<id> => p:{x:<id>}\n", "t.rules:1: " USAGE },
    { "rule a p:x:<id> -> p:{x:<id>} extra\n", "t.rules:1: " USAGE },
    { "rule a p:x:<id> -> p:{x:<id>} index p:{x:<id>}:i\n", "t.rules:1: " USAGE },
    { "rule a p:x:<id> -> p:{x:<id>} idx p:{x}:i member <id>\n", "t.rules:1: " USAGE },
    { "rule a p:x:<id> -> p:{x:<id>} index p:{x}:i mbr <id>\n", "t.rules:1: " USAGE },
    { "rule\n", "t.rules:1: " USAGE },
    { "keep\n", "t.rules:1: expected keep PATTERN [live SIGN]" },
    { "keep p:a:* p:b:*\n", "t.rules:1: expected keep PATTERN [live SIGN]" },
    { "rule a p:x:<id> -> p:{x:<id>} 1 2 3 4 5 6 7 8 9 10 11 12\n",
      "t.rules:1: more than 16 words on the line" },
    /* copy and live */
#define COPY_USAGE "expected copy plain|greater|token|never|log ITEM|item"
    { "rule a p:x:<id> -> p:{x:<id>} copy\n", "t.rules:1: " COPY_USAGE },
    { "rule a p:x:<id> -> p:{x:<id>} copy sideways\n", "t.rules:1: " COPY_USAGE },
    { "rule a p:x:<id> -> p:{x:<id>} copy greater copy never\n", "t.rules:1: copy given twice" },
    { "rule a p:x:<id> -> p:{x:<id>} copy greater index p:{x:<id>}:i member z\n",
      "t.rules:1: " USAGE },
    { "rule a p:x:<id> -> p:{x:<id>} copy log\n", "t.rules:1: copy log needs the name of its item rule" },
    { "keep p:x:* copy plain\n", "t.rules:1: a keep takes no copy mode (its keys are copied as they are)" },
    { "rule a p:x:<id> -> p:{x:<id>} live\n", "t.rules:1: expected live heartbeat or live ticket A>B" },
    { "rule a p:x:<id> -> p:{x:<id>} live ticket\n",
      "t.rules:1: expected live heartbeat or live ticket A>B" },
    { "rule a p:x:<id> -> p:{x:<id>} live heartbeat live heartbeat\n", "t.rules:1: live given twice" },
    { "keep p:x:* live ticket a>b\n", "t.rules:1: a keep has no captures: live ticket needs a rule" },
    { "rule a p:x:<id>:<k=a|b> -> p:{x:<id>}:<k> live ticket a\n",
      "t.rules:1: expected live ticket A>B (two values of a constrained capture)" },
    { "rule a p:x:<id>:<k=a|b> -> p:{x:<id>}:<k> live ticket a>\n",
      "t.rules:1: expected live ticket A>B (two values of a constrained capture)" },
    { "rule a p:x:<id>:<k=a|b> -> p:{x:<id>}:<k> live ticket a>c\n",
      "t.rules:1: live ticket a>c: no constrained capture <name=...> of this rule lists both values" },
    { "rule a p:x:<id>:<k=a|b> -> p:{x:<id>}:<k> live ticket a>a\n",
      "t.rules:1: live ticket a>a: no constrained capture <name=...> of this rule lists both values" },
    { "rule l p:l:<c> -> p:{l:<c>}:z copy log it\n",
      "t.rules:1: copy log it: no rule it with copy item in the file" },
    { "rule l p:l:<c> -> p:{l:<c>}:z copy log it\nrule it p:i:<c>:<m> -> p:{l:<c>}:i:<m>\n",
      "t.rules:1: copy log it: no rule it with copy item in the file" },
    { "keep p:k:*\nrule it p:i:<c>:<m> -> p:{l:<c>}:i:<m> copy item\n",
      "t.rules:2: rule it is copy item, but no rule's copy log names it" },
    { "rule l p:l:<c> -> p:{l:<c>}:z copy log it\nrule it p:i:<d>:<m> -> p:{l:<d>}:i:<m> copy item\n",
      "t.rules:1: copy log it: rule it must have every capture of the log and exactly one more "
      "(the log's member)" },
    { "rule l p:l:<c...> -> p:{l:<c...>}:z copy log it\n"
      "rule it p:i:<c>:<m> -> p:{l:<c>}:i:<m> copy item\n",
      "t.rules:1: copy log it: rule it must have every capture of the log and exactly one more "
      "(the log's member)" },
    { "rule l p:l:<c> -> p:{l:<c>}:z copy log it\nrule it p:i:<c> -> p:{l:<c>}:i copy item\n",
      "t.rules:1: copy log it: rule it must have every capture of the log and exactly one more "
      "(the log's member)" },
    { "rule l p:l:<c> -> p:{l:<c>}:z copy log it\nrule l2 p:l2:<c> -> p:{l2:<c>}:z copy log it\n"
      "rule it p:i:<c>:<m> -> p:{l:<c>}:i:<m> copy item\n",
      "t.rules:2: copy log it: rule it is already the items of the log on line 1" },
    { "rule ch@t p:x:<id> -> p:{x:<id>}\n",
      "t.rules:1: bad rule name \"ch@t\" (letters, digits, - _ ., at most 31 bytes)" },
    { "rule a123456789012345678901234567890b p:x:<id> -> p:{x:<id>}\n",
      "t.rules:1: bad rule name \"a123456789012345678901234567890b\" (letters, digits, - _ ., at most 31 bytes)" },
    { "rule a p:x:<id> -> p:{x:<id>}\n# x\nrule a p:y:<id> -> p:{y:<id>}\n",
      "t.rules:3: duplicate rule name \"a\" (first on line 1)" },
    /* the prefix */
    { "rule a x:<id> -> p:{x:<id>}\n", "t.rules:1: \"x:<id>\" must start with p: (the prefix)" },
    { "rule a p -> p:{x}\n", "t.rules:1: \"p\" must start with p: (the prefix)" },
    { "rule a p:x:<id> -> {x:<id>}\n", "t.rules:1: \"{x:<id>}\" must start with p: (the prefix)" },
    { "rule a p:x:<id> -> P:{x:<id>}\n", "t.rules:1: \"P:{x:<id>}\" must start with p: (the prefix)" },
    { "keep conv:*\n", "t.rules:1: \"conv:*\" must start with p: (the prefix)" },
    { "rule a p:x:<id> -> p:{x:<id>} index {x:<id>}:i member z\n",
      "t.rules:1: \"{x:<id>}:i\" must start with p: (the prefix)" },
    /* segments */
#define NEITHER "is neither a literal nor a capture (<name>, <name...>, <name=a|b>)"
    { "rule a p:x:y<id> -> p:{x:<id>}\n", "t.rules:1: \"p:x:y<id>\": segment \"y<id>\" " NEITHER },
    { "rule a p:x:<id -> p:{x:<id>}\n", "t.rules:1: \"p:x:<id\": segment \"<id\" " NEITHER },
    { "rule a p:x:id> -> p:{x:<id>}\n", "t.rules:1: \"p:x:id>\": segment \"id>\" " NEITHER },
    { "rule a p:x:<<id>> -> p:{x:<id>}\n", "t.rules:1: \"p:x:<<id>>\": segment \"<<id>>\" " NEITHER },
    { "rule a p:x:<k=a|b:c> -> p:{x:<k>}\n", "t.rules:1: \"p:x:<k=a|b:c>\": segment \"<k=a|b\" " NEITHER },
    { "keep p:x*\n", "t.rules:1: \"p:x*\": segment \"x*\" " NEITHER },
#define BADNAME "(letters, digits, - _, at most 31 bytes)"
    { "rule a p:x:<i$d> -> p:{x:<id>}\n", "t.rules:1: \"p:x:<i$d>\": bad capture name in \"<i$d>\" " BADNAME },
    { "rule a p:x:<> -> p:{x}\n", "t.rules:1: \"p:x:<>\": bad capture name in \"<>\" " BADNAME },
    { "rule a p:x:<...> -> p:{x}\n", "t.rules:1: \"p:x:<...>\": bad capture name in \"<...>\" " BADNAME },
    { "rule a p:x:<k...=a> -> p:{x:<k...>}\n", "t.rules:1: \"p:x:<k...=a>\": bad capture name in \"<k...=a>\" " BADNAME },
    { "rule a p:x:<=a> -> p:{x}\n", "t.rules:1: \"p:x:<=a>\": bad capture name in \"<=a>\" " BADNAME },
    { "rule a p:x:<a123456789012345678901234567890b> -> p:{x}\n",
      "t.rules:1: \"p:x:<a123456789012345678901234567890b>\": bad capture name in "
      "\"<a123456789012345678901234567890b>\" " BADNAME },
    { "rule a p:x:<b> -> p:{x:<b>}\n", "t.rules:1: \"p:x:<b>\": capture name \"b\" is reserved" },
    { "rule a p:x:<p...> -> p:{x:<p...>}\n", "t.rules:1: \"p:x:<p...>\": capture name \"p\" is reserved" },
    { "rule a p:x:<id>:<id> -> p:{x:<id>}\n", "t.rules:1: \"p:x:<id>:<id>\": capture <id> appears twice" },
    { "rule a p:x:<id>:<id...> -> p:{x:<id>}\n", "t.rules:1: \"p:x:<id>:<id...>\": capture <id> appears twice" },
    { "rule a p:x:<a...>:<c...> -> p:{x:<a...>}:<c...>\n",
      "t.rules:1: \"p:x:<a...>:<c...>\": more than one greedy capture" },
    { "keep p:<a...>:*\n", "t.rules:1: \"p:<a...>:*\": more than one greedy capture" },
    { "rule a p:x:<k=> -> p:{x:<k>}\n", "t.rules:1: \"p:x:<k=>\": empty literal in <k=...>" },
    { "rule a p:x:<k=a||b> -> p:{x:<k>}\n", "t.rules:1: \"p:x:<k=a||b>\": empty literal in <k=...>" },
    { "rule a p:x:<k=a|> -> p:{x:<k>}\n", "t.rules:1: \"p:x:<k=a|>\": empty literal in <k=...>" },
    { "rule a p:x:<k=0|1|2|3|4|5|6|7|8|9|a|b|c|d|e|f|g> -> p:{x:<k>}\n",
      "t.rules:1: \"p:x:<k=0|1|2|3|4|5|6|7|8|9|a|b|c|d|e|f|g>\": more than 16 literals in <k=...>" },
    { "rule a p:x:* -> p:{x}\n", "t.rules:1: \"p:x:*\": * only as the last segment of a keep pattern" },
    { "keep p:*:x\n", "t.rules:1: \"p:*:x\": * only as the last segment of a keep pattern" },
    { "rule a p:1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17 -> p:{x}\n",
      "t.rules:1: \"p:1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17\": more than 16 segments" },
    { "rule a p:<c1>:<c2>:<c3>:<c4>:<c5>:<c6>:<c7>:<c8>:<c9> -> p:{x}\n",
      "t.rules:1: \"p:<c1>:<c2>:<c3>:<c4>:<c5>:<c6>:<c7>:<c8>:<c9>\": more than 8 captures" },
    /* cluster templates */
    { "rule a p:x:<id> -> p:{x:<idd>}\n", "t.rules:1: \"p:{x:<idd>}\": unknown capture <idd>" },
    { "rule a p:x:<id...> -> p:{x:<id>}\n", "t.rules:1: \"p:{x:<id>}\": <id> is greedy: write <id...>" },
    { "rule a p:x:<id> -> p:{x:<id...>}\n", "t.rules:1: \"p:{x:<id...>}\": <id> is not greedy: write <id>" },
    { "rule a p:x:<id> -> p:{x:<id>}:<id>\n", "t.rules:1: \"p:{x:<id>}:<id>\": capture <id> used twice" },
    { "rule a p:x:<id>:<n> -> p:{x:<id>}\n",
      "t.rules:1: \"p:{x:<id>}\": capture <n> of the legacy pattern is missing" },
    { "rule a p:x:<id>:<n...> -> p:{x:<id>}\n",
      "t.rules:1: \"p:{x:<id>}\": capture <n...> of the legacy pattern is missing" },
#define FOLLOW "must be followed by the end or one of : { } * ? [ ] \\"
    { "rule a p:x:<id> -> p:{x:<id>x}\n", "t.rules:1: \"p:{x:<id>x}\": <id> " FOLLOW },
    { "rule a p:x:<id>:<n> -> p:{x:<id><n>}\n", "t.rules:1: \"p:{x:<id><n>}\": <id> " FOLLOW },
    { "rule a p:x:<id> -> p:{x:<id>%}\n", "t.rules:1: \"p:{x:<id>%}\": <id> " FOLLOW },
    { "rule a p:x:<id...> -> p:{x:<b>-<id...>}\n", "t.rules:1: \"p:{x:<b>-<id...>}\": <b> " FOLLOW },
    { "rule a p:x:<k> -> p:{x:<b>}:<k>\n", "t.rules:1: \"p:{x:<b>}:<k>\": <b> needs a capture named id" },
    { "rule a p:x:<k=a|c> -> p:{x:<k=a>}\n", "t.rules:1: \"p:{x:<k=a>}\": <name=...> only in the legacy pattern" },
    { "rule a p:x:<id> -> p:{x:<id}\n", "t.rules:1: \"p:{x:<id}\": unterminated <" },
    { "rule a p:x:<id> -> p:{x:<<id>}\n", "t.rules:1: \"p:{x:<<id>}\": unterminated <" },
    { "rule a p:x:<id> -> p:{x:id>}:<id>\n", "t.rules:1: \"p:{x:id>}:<id>\": stray >" },
    { "rule a p:x:<id> -> p:{x:<id>}>\n", "t.rules:1: \"p:{x:<id>}>\": stray >" },
    /* indexes */
    { "rule a p:x:<id> -> p:x:<id> index p:{x}:idx member <id>\n",
      "t.rules:1: \"p:x:<id>\": an indexed rule's cluster pattern needs a hash tag {...}" },
    { "rule a p:x:<id> -> p:{}:<id> index p:{}:idx member <id>\n",
      "t.rules:1: \"p:{}:<id>\": an indexed rule's cluster pattern needs a hash tag {...}" },
    { "rule a p:x:<id> -> p:{x:<b>}:<id> index p:{y:<b>}:idx member <id>\n",
      "t.rules:1: index \"p:{y:<b>}:idx\" is not in the record's slot: its hash tag must be {x:<b>}" },
    { "rule a p:x:<id> -> p:{x:<b>}:<id> index p:x:idx member <id>\n",
      "t.rules:1: index \"p:x:idx\" is not in the record's slot: its hash tag must be {x:<b>}" },
    { "rule a p:x:<id> -> p:{x:<b>}:<id> index p:{x:<b>}:<q> member <id>\n",
      "t.rules:1: \"p:{x:<b>}:<q>\": unknown capture <q>" },
    { "rule a p:x:<id> -> p:{x:<b>}:<id> index p:{x:<b>}:<id>:<id> member z\n",
      "t.rules:1: \"p:{x:<b>}:<id>:<id>\": capture <id> used twice" },
    { "rule a p:x:<id> -> p:{x:<b>}:<id> index p:{x:<b>}:idx member <k>\n",
      "t.rules:1: \"<k>\": unknown capture <k>" },
    { "rule a p:x:<id> -> p:{x:<b>}:<id> index p:{x:<b>}:idx member <b>\n",
      "t.rules:1: \"<b>\": unknown capture <b>" },
    { "rule a p:x:<id> -> p:{x:<b>}:<id> index p:{x:<b>}:idx member <id=a>\n",
      "t.rules:1: \"<id=a>\": <name=...> only in the legacy pattern" },
    { "rule a p:x:<id...> -> p:{x:<b>}:<id...> index p:{x:<b>}:idx member <id>\n",
      "t.rules:1: \"<id>\": <id> is greedy: write <id...>" },
    { "rule a p:x:<id> -> p:{x:<b>}:<id> index p:{x:<b>}:idx member <id>:<id>\n",
      "t.rules:1: \"<id>:<id>\": capture <id> used twice" },
    { "rule a p:x:<id> -> p:{x:<b>}:<id> index p:{x:<b>}:idx member z:*\n",
      "t.rules:1: \"z:*\": * only as the last segment of a keep pattern" },
    { "rule a p:x:<u>:<id> -> p:{x:<u>}:<id> index p:{x:<u>}:idx member z\n",
      "t.rules:1: capture <id> is in neither the index nor the member" },
    { "rule a p:x:<u>:<id> -> p:{x:<u>}:<id> index p:{x:<u>}:idx member <u>:<id>\n",
      "t.rules:1: capture <u> is in both the index and the member" },
    /* bytes */
    { "keep p:x\n\nrule a p:\0x -> p:{x}\n", "t.rules:3: a NUL byte in the line" },
};

START_TEST(test_errors)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        char err[512] = "";
        /* text may hold a NUL: the length is the literal's, less its own NUL */
        size_t len = strlen(errors[i].text);
        if (strstr(errors[i].msg, "NUL"))
            len = strlen(errors[i].text) + 1 + strlen(errors[i].text + strlen(errors[i].text) + 1);
        struct rules *r = rules_load_string("t.rules", errors[i].text, len, err, sizeof err);
        ck_assert_msg(r == NULL, "accepted: %s", errors[i].text);
        ck_assert_msg(strcmp(err, errors[i].msg) == 0, "%s\n   got: %s\n  want: %s",
                      errors[i].text, err, errors[i].msg);
    }
}
END_TEST

START_TEST(test_error_in_a_long_file)
{
    /* the shipped rules with one broken line at the end: the line number counts every line */
    char err[512], text[16384], path[64];
    FILE *f = fopen(DEFAULT_RULES, "rb");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(text, 1, sizeof text - 64, f);
    fclose(f);
    int lines = 0, chat_line = 0;
    for (size_t i = 0; i < n; i++) {
        if ((i == 0 || text[i - 1] == '\n') && strncmp(text + i, "rule chat ", 10) == 0)
            chat_line = lines + 1;
        lines += text[i] == '\n';
    }
    ck_assert_int_gt(chat_line, 0);
    n += (size_t)snprintf(text + n, 64, "rule chat p:chat2:<id> -> p:{c2:<id>}\n");
    snprintf(path, sizeof path, "/tmp/test_rules.%d.rules", (int)getpid());
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite(text, 1, n, f);
    fclose(f);
    struct rules *r = rules_load_file(path, err, sizeof err);
    remove(path);
    ck_assert_ptr_null(r);
    char want[512];
    snprintf(want, sizeof want, "%s:%d: duplicate rule name \"chat\" (first on line %d)", path,
             lines + 1, chat_line);
    ck_assert_str_eq(err, want);
}
END_TEST

START_TEST(test_missing_file)
{
    char err[256];
    ck_assert_ptr_null(rules_load_file("/nonexistent/x.rules", err, sizeof err));
    ck_assert_str_eq(err, "/nonexistent/x.rules: No such file or directory");
    /* the layout says the same */
    const char *pf[] = { "bot" };
    ck_assert_ptr_null(layout_load_file("/nonexistent/x.rules", pf, 1, err, sizeof err));
    ck_assert_str_eq(err, "/nonexistent/x.rules: No such file or directory");
    ck_assert_ptr_null(layout_load_string("s.rules", "bad\n", 4, pf, 1, err, sizeof err));
    ck_assert_str_eq(err, "s.rules:1: unknown directive \"bad\" (expected rule or keep)");
}
END_TEST

START_TEST(test_error_buffer_small)
{
    /* a short buffer gets a cut, NUL-terminated message */
    char err[8];
    memset(err, 'x', sizeof err);
    ck_assert_ptr_null(load("frob\n", err, sizeof err));
    ck_assert_str_eq(err, "t.rules");
}
END_TEST

/* Whether a rules file of the one line `line` maps or keeps bot:NAME. */
static bool line_matches(const char *line, const char *name, size_t nlen)
{
    static const char *const pf[] = { "bot" };
    char err[256], key[600], out[1024];
    size_t n;
    struct layout *l = layout_load_string("one.rules", line, strlen(line), pf, 1, err, sizeof err);
    ck_assert_msg(l != NULL, "%s", err);
    int klen = snprintf(key, sizeof key, "bot:%.*s", (int)nlen, name);
    enum layout_result r = layout_to_cluster(l, key, (size_t)klen, out, sizeof out, &n, NULL);
    layout_free(l);
    return r != LAYOUT_PASS;
}

/* The overlap detector (keylayout/overlap.h): pairs of lines that can match
 * one same name (the example it gives is matched by both, each alone) and
 * pairs that cannot, with literals, one-segment, constrained and greedy
 * captures and keeps. */
START_TEST(test_overlap)
{
    static const struct { const char *a, *b; bool overlap; } v[] = {
        { "rule f p:lock:<key...>:fence -> p:{lk:<key...>}:f",
          "rule l p:lock:<key...> -> p:{lk:<key...>}:l", true },
        { "rule f p:lock:<key...>:fence -> p:{lk:<key...>}:f",
          "rule l p:lock:<key> -> p:{lk:<key>}:l", false },
        { "rule a p:msgs:<chat...> -> p:{m:<chat...>}:z",
          "rule b p:msg:<chat...>:<m> -> p:{m:<chat...>}:i:<m>", false },
        { "rule a p:co:turn:<c...>:<part=seq|tix> -> p:{t:<c...>}:<part>",
          "rule b p:co:turn:<c...>:<q=owner|last> -> p:{u:<c...>}:<q>", false },
        { "rule a p:co:turn:<c...>:<part=seq|tix> -> p:{t:<c...>}:<part>",
          "rule b p:co:turn:<c...>:<q=last|tix> -> p:{u:<c...>}:<q>", true },
        { "rule a p:co:<part=seq|tix>:x -> p:{t:<part>}", "rule b p:co:tix:<y> -> p:{u:<y>}", true },
        { "rule a p:co:<part=seq|tix>:x -> p:{t:<part>}", "rule b p:co:owner:<y> -> p:{u:<y>}",
          false },
        { "keep p:conv:*", "rule s p:conv:<id>:state -> p:{cs:<id>}", true },
        { "keep p:conv:*", "rule s p:conv -> p:{cs}", false },
        { "keep p:conv:*", "keep p:cursor:*", false },
        { "keep p:conv:*", "keep p:conv:a:*", true },
        { "rule p p:presence:<user> -> p:{pr:<user>}", "rule d p:presence:<user>:<dev> -> p:{pd:<user>}:<dev>",
          false },
        { "rule a p:a:<x...>:b:<y> -> p:{a:<x...>}:<y>", "rule b p:<z>:c:<w...> -> p:{b:<z>}:<w...>",
          true },
        { "rule a p:<x> -> p:{a:<x>}", "rule b p:x:<y...> -> p:{b:<y...>}", false },
        { "rule a p:<x...> -> p:{a:<x...>}", "rule b p:x:y:z -> p:{b}", true },
        { "rule a p:chat: -> p:{e}", "rule b p:chat:<id> -> p:{c:<id>}", true },
        { "rule a p:chat:a -> p:{e}", "rule b p:chat:b -> p:{c}", false },
        { "rule a p:q:<x...>:z -> p:{a:<x...>}", "rule b p:q:z -> p:{b}", false },
        { "rule a p:q:<x...>:z -> p:{a:<x...>}", "rule b p:q:z:z -> p:{b}", true },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char text[512], err[256], ex[256];
        size_t n = 0;
        snprintf(text, sizeof text, "%s\n%s\n", v[i].a, v[i].b);
        struct rules *r = load(text, err, sizeof err);
        ck_assert_msg(r != NULL, "%s", err);
        bool got = overlap_find(&r->rule[0], &r->rule[1], ex, sizeof ex, &n);
        ck_assert_msg(got == v[i].overlap, "%s / %s: %d", v[i].a, v[i].b, got);
        ck_assert(overlap_find(&r->rule[1], &r->rule[0], ex, sizeof ex, &n) == v[i].overlap);
        if (got) {
            ck_assert_uint_lt(n, sizeof ex);
            ck_assert_msg(line_matches(v[i].a, ex, n) && line_matches(v[i].b, ex, n),
                          "%s / %s: example %.*s", v[i].a, v[i].b, (int)n, ex);
        }
        rules_free(r);
    }
}
END_TEST

/* Every rule and keep overlaps itself; the shipped file's families, taken
 * two by two from two files, overlap only where botmesh-v1 relies on the
 * order (the fences under the lock and leader rules). */
START_TEST(test_overlap_shipped)
{
    char err[256], ex[256];
    size_t n;
    struct rules *r = rules_load_file(DEFAULT_RULES, err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    for (size_t i = 0; i < r->nrule; i++) {
        ck_assert(overlap_find(&r->rule[i], &r->rule[i], ex, sizeof ex, &n));
        for (size_t j = i + 1; j < r->nrule; j++) {
            bool want = (strcmp(r->rule[i].name, "lock-fence") == 0 &&
                         strcmp(r->rule[j].name, "lock") == 0) ||
                        (strcmp(r->rule[i].name, "leader-term") == 0 &&
                         strcmp(r->rule[j].name, "leader") == 0);
            ck_assert_msg(overlap_find(&r->rule[i], &r->rule[j], ex, sizeof ex, &n) == want,
                          "%s / %s", r->rule[i].name, r->rule[j].name);
        }
    }
    rules_free(r);
}
END_TEST

/* ---- the overlap detector against brute force ---- */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A random rule or keep line of 1 to 3 segments over the literals a, b, c. */
static void random_line(uint64_t *rng, char *out, size_t cap)
{
    static const char *const segs[] = { "a", "b", "<v%d>", "<v%d=a|b>", "<v%d=b|c>", "<v%d...>" };
    bool keep = rng_next(rng) % 3 == 0, greedy = false;
    int nseg = 1 + (int)(rng_next(rng) % 3), ncap = 0;
    char pat[128] = "p", tpl[128] = "p:{t}";
    for (int i = 0; i < nseg; i++) {
        size_t k = rng_next(rng) % (sizeof segs / sizeof segs[0]);
        if (k == 5 && (greedy || keep))
            k = 2;
        greedy |= k == 5;
        char seg[32];
        snprintf(seg, sizeof seg, segs[k], ncap);
        strcat(pat, ":");
        strcat(pat, seg);
        if (k >= 2) {
            snprintf(seg, sizeof seg, k == 5 ? ":<v%d...>" : ":<v%d>", ncap++);
            strcat(tpl, seg);
        }
    }
    if (keep && rng_next(rng) % 2)
        strcat(pat, ":*");
    if (keep)
        snprintf(out, cap, "keep %s\n", pat);
    else
        snprintf(out, cap, "rule r %s -> %s\n", pat, tpl);
}

/* Whether l maps or keeps bot:NAME. */
static bool layout_takes(const struct layout *l, const char *name)
{
    char key[64], out[256];
    size_t n;
    int klen = snprintf(key, sizeof key, "bot:%s", name);
    return layout_to_cluster(l, key, (size_t)klen, out, sizeof out, &n, NULL) != LAYOUT_PASS;
}

/* Whether some name of 1 to 6 segments over a, b, c, d is matched by both
 * (patterns of 3 segments have a common name that short, if any). */
static bool brute_overlap(const struct layout *a, const struct layout *b)
{
    static const char alpha[] = "abcd";
    for (int len = 1; len <= 6; len++) {
        int total = 1;
        for (int i = 0; i < len; i++)
            total *= 4;
        for (int code = 0; code < total; code++) {
            char name[16];
            int c = code, n = 0;
            for (int i = 0; i < len; i++, c /= 4) {
                if (i > 0)
                    name[n++] = ':';
                name[n++] = alpha[c % 4];
            }
            name[n] = '\0';
            if (layout_takes(a, name) && layout_takes(b, name))
                return true;
        }
    }
    return false;
}

/* overlap_find says overlap exactly when some name is matched by both, over
 * random pairs of lines (the seed in the message replays a failure). */
START_TEST(test_overlap_brute_force)
{
    static const char *const pf[] = { "bot" };
    uint64_t rng = 0x9E3779B97F4A7C15u;
    for (int round = 0; round < 400; round++) {
        char la[256], lb[256], err[256], ex[256];
        size_t n;
        random_line(&rng, la, sizeof la);
        random_line(&rng, lb, sizeof lb);
        struct layout *a = layout_load_string("a.rules", la, strlen(la), pf, 1, err, sizeof err);
        ck_assert_msg(a != NULL, "%s: %s", la, err);
        struct layout *b = layout_load_string("b.rules", lb, strlen(lb), pf, 1, err, sizeof err);
        ck_assert_msg(b != NULL, "%s: %s", lb, err);
        bool got = overlap_find(&layout_file_rules(a, 0)->rule[0], &layout_file_rules(b, 0)->rule[0],
                                ex, sizeof ex, &n);
        ck_assert_msg(got == brute_overlap(a, b), "round %d: %s%s: overlap_find says %d", round,
                      la, lb, got);
        layout_free(a);
        layout_free(b);
    }
}
END_TEST

static Suite *rules_suite(void)
{
    Suite *s = suite_create("rules");
    TCase *tc = tcase_create("rules");
    tcase_add_test(tc, test_default_rules);
    tcase_add_test(tc, test_copy_clauses);
    tcase_add_test(tc, test_syntax_corners);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_error_in_a_long_file);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_error_buffer_small);
    tcase_add_test(tc, test_overlap);
    tcase_add_test(tc, test_overlap_shipped);
    tcase_add_test(tc, test_overlap_brute_force);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rules_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
