/*
 * Legacy <-> cluster names (keylayout/layout.h) with the shipped botmesh-v1
 * rules, against LAYOUT.md: every vector of it, the round trip of every
 * family with ids holding the bytes that matter, malformed cluster names,
 * rule order, the constrained turn part, pass-through families, prefixes;
 * and the shipped courier-v1 rules' families. Run from the repository root
 * (as make test does).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/slot.h"
#include "keylayout/escape.h"
#include "lib/base/hash.h"
#include "keylayout/layout.h"
#include "keylayout/layoutload.h"

#define DEFAULT_RULES "conf/layouts/botmesh-v1.rules"
#define S(s) s, sizeof(s) - 1

static struct layout *layout_default(void)
{
    static const char *const pf[] = { "bot" };
    char err[256] = "";
    struct layout *l = layout_load_file(DEFAULT_RULES, pf, 1, err, sizeof err);
    ck_assert_msg(l != NULL, "%s", err);
    return l;
}

/* ---- FNV-1a, buckets, encoding ---- */

START_TEST(test_fnv_vectors)
{
    static const struct { const char *id; size_t len; uint32_t hash; int bucket; } v[] = {
        { S(""), 0x811c9dc5, 5 },
        { S("a"), 0xe40c292c, 12 },
        { S("foobar"), 0xbf9cf968, 8 },
        { S("chat-1"), 0x6e1ee9f9, 25 },
        { S("tg:42"), 0x1b0de610, 16 },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        ck_assert_uint_eq(hash_fnv32(v[i].id, v[i].len), v[i].hash);
        ck_assert_int_eq(layout_bucket(v[i].id, v[i].len), v[i].bucket);
    }
}
END_TEST

static const struct { const char *raw; size_t rlen; const char *enc; size_t elen; } encodings[] = {
    { S(""), S("") },
    { S("chat-1"), S("chat-1") },
    { S("tg:42"), S("tg%3A42") },
    { S("%:{}*?[]\\"), S("%25%3A%7B%7D%2A%3F%5B%5D%5C") },
    { S("a b\tc\r\n"), S("a%20b%09c%0D%0A") },
    { S("\x00\x01\x1f\x20\x21\x7e\x7f\x80\xff"), S("%00%01%1F%20!~%7F\x80\xff") },
    { S("caf\xc3\xa9 \xe6\x97\xa5"), S("caf\xc3\xa9%20\xe6\x97\xa5") },   /* UTF-8 kept */
    { S("%41"), S("%2541") },
    { S("<a>=|,.-_/\"'^$@#&+;"), S("<a>=|,.-_/\"'^$@#&+;") },
};

START_TEST(test_encode_vectors)
{
    for (size_t i = 0; i < sizeof encodings / sizeof encodings[0]; i++) {
        char buf[128];
        size_t n = escape_encode(encodings[i].raw, encodings[i].rlen, buf, sizeof buf);
        ck_assert_uint_eq(n, encodings[i].elen);
        ck_assert_mem_eq(buf, encodings[i].enc, n);
        ck_assert_int_eq(escape_decode(encodings[i].enc, encodings[i].elen, buf, sizeof buf, &n), 0);
        ck_assert_uint_eq(n, encodings[i].rlen);
        ck_assert_mem_eq(buf, encodings[i].raw, n);
    }
}
END_TEST

START_TEST(test_encode_every_byte)
{
    for (int c = 0; c < 256; c++) {
        char raw = (char)c, enc[4], back[4];
        size_t n = escape_encode(&raw, 1, enc, sizeof enc), m;
        bool special = c < 0x21 || c == 0x7f || strchr("%:{}*?[]\\", c);
        ck_assert_uint_eq(n, special ? 3 : 1);
        if (special) {
            char want[4];
            snprintf(want, sizeof want, "%%%02X", c);
            ck_assert_mem_eq(enc, want, 3);
        }
        ck_assert_int_eq(escape_decode(enc, n, back, sizeof back, &m), 0);
        ck_assert_uint_eq(m, 1);
        ck_assert_int_eq((unsigned char)back[0], c);
        /* the raw byte itself decodes only when it is not special */
        ck_assert_int_eq(escape_decode(&raw, 1, back, sizeof back, &m), special ? -1 : 0);
    }
}
END_TEST

START_TEST(test_decode_malformed)
{
    static const struct { const char *s; size_t len; } bad[] = {
        { S("%") }, { S("%3") }, { S("a%3") }, { S("%zz") }, { S("%3g") },
        { S("%3a") },                  /* lower-case hex */
        { S("%41") }, { S("%7E") },    /* bytes kept raw by the encoder */
        { S("%%") }, { S("%%41") },
        { S(":") }, { S("a{b") }, { S("}") }, { S("*") }, { S("?") }, { S("[") }, { S("]") },
        { S("\\") }, { S(" ") }, { S("\x7f") }, { S("\x00") },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char buf[16];
        size_t n = 99;
        ck_assert_msg(escape_decode(bad[i].s, bad[i].len, buf, sizeof buf, &n) == -1,
                      "decoded \"%s\"", bad[i].s);
        ck_assert_uint_eq(n, 99);
    }
}
END_TEST

/* ---- LAYOUT.md's families ---- */

/* legacy name -> cluster name, family, index key and member (NULL: not indexed) */
static const struct {
    const char *legacy, *cluster, *family, *index, *member;
} families[] = {
    { "bot:msgs:c1", "bot:{m:c1}:z", "msg-log", NULL, NULL },
    { "bot:msg:c1:1700000000-7", "bot:{m:c1}:i:1700000000-7", "msg-item", NULL, NULL },
    { "bot:msg:c1:a:b", "bot:{m:c1%3Aa}:i:b", "msg-item", NULL, NULL },   /* the chat is greedy */
    { "bot:msgs:tg:77", "bot:{m:tg%3A77}:z", "msg-log", NULL, NULL },
    { "bot:msg:tg:77:m0", "bot:{m:tg%3A77}:i:m0", "msg-item", NULL, NULL },
    { "bot:chat:chat-1", "bot:{ch:25}:r:chat-1", "chat", "bot:{ch:25}:idx", "chat-1" },
    { "bot:chat:tg:42", "bot:{ch:16}:r:tg%3A42", "chat", "bot:{ch:16}:idx", "tg:42" },
    { "bot:chat:", "bot:{ch:5}:r:", "chat", "bot:{ch:5}:idx", "" },
    { "bot:contact:a", "bot:{ct:12}:r:a", "contact", "bot:{ct:12}:idx", "a" },
    { "bot:checkpoint:foobar", "bot:{cp:8}:r:foobar", "checkpoint", "bot:{cp:8}:idx", "foobar" },
    { "bot:schedule:chat-1", "bot:{sc:25}:r:chat-1", "schedule", "bot:{sc:25}:idx", "chat-1" },
    { "bot:user:u1:prefs:lang", "bot:{ud:u1}:e:prefs:lang", "user-data", "bot:{ud:u1}:idx",
      "prefs:lang" },
    { "bot:user:u1:prefs:a:b", "bot:{ud:u1}:e:prefs:a%3Ab", "user-data", "bot:{ud:u1}:idx",
      "prefs:a:b" },
    { "bot:lock:job", "bot:{lk:job}:l", "lock", NULL, NULL },
    { "bot:lock:job:fence", "bot:{lk:job}:f", "lock-fence", NULL, NULL },
    { "bot:lock:a:b", "bot:{lk:a%3Ab}:l", "lock", NULL, NULL },
    { "bot:lock:a:b:fence", "bot:{lk:a%3Ab}:f", "lock-fence", NULL, NULL },
    { "bot:lock:fence", "bot:{lk:fence}:l", "lock", NULL, NULL },    /* no key before :fence */
    { "bot:lock::fence", "bot:{lk:}:f", "lock-fence", NULL, NULL },
    { "bot:co:turn:tg:42:seq", "bot:co:{t:tg%3A42}:seq", "turn", NULL, NULL },
    { "bot:co:turn:c:tix", "bot:co:{t:c}:tix", "turn", NULL, NULL },
    { "bot:co:turn:c:serving", "bot:co:{t:c}:serving", "turn", NULL, NULL },
    { "bot:co:turn:c:owner", "bot:co:{t:c}:owner", "turn", NULL, NULL },
    { "bot:co:turn:c:last", "bot:co:{t:c}:last", "turn", NULL, NULL },
    { "bot:co:turn:c:seq:seq", "bot:co:{t:c%3Aseq}:seq", "turn", NULL, NULL },
    { "bot:co:leader:sched", "bot:co:{ld:sched}", "leader", NULL, NULL },
    { "bot:co:leader:sched:term", "bot:co:{ld:sched}:term", "leader-term", NULL, NULL },
    { "bot:co:leader:a:b:term", "bot:co:{ld:a%3Ab}:term", "leader-term", NULL, NULL },
    { "bot:chat:a{b}*?[x]\\% \x7f\xc3\xa9",
      "bot:{ch:5}:r:a%7Bb%7D%2A%3F%5Bx%5D%5C%25%20%7F\xc3\xa9", "chat", "bot:{ch:5}:idx",
      "a{b}*?[x]\\% \x7f\xc3\xa9" },
};

START_TEST(test_family_vectors)
{
    struct layout *l = layout_default();
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        const char *legacy = families[i].legacy;
        char out[256], idx[256], mem[256], back[256];
        size_t n = 0, bn = 0;
        struct layout_match m;
        ck_assert_int_eq(layout_to_cluster(l, legacy, strlen(legacy), out, sizeof out, &n, &m),
                         LAYOUT_MAPPED);
        ck_assert_str_eq(m.rule->name, families[i].family);
        ck_assert_msg(n == strlen(families[i].cluster) && memcmp(out, families[i].cluster, n) == 0,
                      "%s -> %.*s, want %s", legacy, (int)n, out, families[i].cluster);
        ck_assert_int_eq(m.rule->indexed, families[i].index != NULL);
        if (families[i].index) {
            size_t in = layout_index_key(l, &m, idx, sizeof idx);
            size_t mn = layout_index_member(l, &m, mem, sizeof mem);
            ck_assert_uint_eq(in, strlen(families[i].index));
            ck_assert_mem_eq(idx, families[i].index, in);
            ck_assert_uint_eq(mn, strlen(families[i].member));
            ck_assert_mem_eq(mem, families[i].member, mn);
            /* record and index in one slot */
            ck_assert_int_eq(slot_of(idx, in), slot_of(out, n));
            ck_assert_int_eq(m.bucket >= 0 || strcmp(m.rule->name, "user-data") == 0, 1);
        }
        ck_assert_int_eq(layout_to_legacy(l, out, n, back, sizeof back, &bn, NULL), LAYOUT_MAPPED);
        ck_assert_uint_eq(bn, strlen(legacy));
        ck_assert_mem_eq(back, legacy, bn);
    }
    layout_free(l);
}
END_TEST

START_TEST(test_same_slot_per_family)
{
    /* LAYOUT.md: a chat's log and items share a slot; a lock and its fence; a turn's counters */
    struct layout *l = layout_default();
    static const char *const groups[][5] = {
        { "bot:msgs:c9", "bot:msg:c9:1", "bot:msg:c9:2", NULL },
        { "bot:msgs:tg:9", "bot:msg:tg:9:1", "bot:msg:tg:9:m2", NULL },
        { "bot:lock:j:k", "bot:lock:j:k:fence", NULL },
        { "bot:co:turn:c:seq", "bot:co:turn:c:tix", "bot:co:turn:c:serving", "bot:co:turn:c:last", NULL },
        { "bot:co:leader:n", "bot:co:leader:n:term", NULL },
        { "bot:user:u7:a:b", "bot:user:u7:c:d:e", NULL },
    };
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        int slot = -1;
        for (size_t i = 0; groups[g][i]; i++) {
            char out[128];
            size_t n;
            ck_assert_int_eq(layout_to_cluster(l, groups[g][i], strlen(groups[g][i]), out,
                                               sizeof out, &n, NULL), LAYOUT_MAPPED);
            if (slot < 0)
                slot = slot_of(out, n);
            ck_assert_int_eq(slot_of(out, n), slot);
        }
    }
    layout_free(l);
}
END_TEST

/* Names used as they are, in both directions. */
static const struct { const char *key; enum layout_result result; } unchanged[] = {
    { "bot:conv:c1", LAYOUT_KEEP },
    { "bot:conv:", LAYOUT_KEEP },
    { "bot:conv:a:b:{c}", LAYOUT_KEEP },
    { "bot:cursor:x", LAYOUT_KEEP },
    { "bot:lease:sched:1", LAYOUT_KEEP },
    { "bot:co:rep:host-1", LAYOUT_KEEP },
    { "bot:{durable:outbox}:seq", LAYOUT_KEEP },
    { "bot:{durable:outbox}:e:1", LAYOUT_KEEP },
    { "bot:{meta}:layout", LAYOUT_KEEP },
    { "bot:conv", LAYOUT_PASS },                 /* `p:conv:*` needs the ':' */
    { "bot:co:turn:c:other", LAYOUT_PASS },      /* not a turn part */
    { "bot:co:turn:seq", LAYOUT_PASS },          /* a part without a chat */
    { "bot:co:rep", LAYOUT_PASS },
    { "bot:msg:c1", LAYOUT_PASS },               /* an item needs a member */
    { "bot:chat", LAYOUT_PASS },
    { "bot:user:u1:ns", LAYOUT_PASS },
    { "bot:unknown:1", LAYOUT_PASS },
    { "bot", LAYOUT_PASS },
    { "bot:", LAYOUT_PASS },
    { "", LAYOUT_PASS },
    { "other:chat:1", LAYOUT_PASS },             /* not a configured prefix */
    { "bott:chat:1", LAYOUT_PASS },
    { "bo:chat:1", LAYOUT_PASS },
    { "chat:1", LAYOUT_PASS },
    { "foo", LAYOUT_PASS },
    { "bot:{meta}:other", LAYOUT_PASS },
};

START_TEST(test_unchanged)
{
    struct layout *l = layout_default();
    for (size_t i = 0; i < sizeof unchanged / sizeof unchanged[0]; i++) {
        const char *k = unchanged[i].key;
        char out[64] = "untouched";
        size_t n = 12345;
        struct layout_match m;
        ck_assert_msg(layout_to_cluster(l, k, strlen(k), out, sizeof out, &n, &m) ==
                      unchanged[i].result, "to_cluster %s", k);
        ck_assert_int_eq(m.rule == NULL, unchanged[i].result == LAYOUT_PASS);
        ck_assert_str_eq(out, "untouched");
        ck_assert_uint_eq(n, 12345);
        ck_assert_msg(layout_to_legacy(l, k, strlen(k), out, sizeof out, &n, &m) ==
                      unchanged[i].result, "to_legacy %s", k);
        ck_assert_str_eq(out, "untouched");
    }
    layout_free(l);
}
END_TEST

/* Cluster names no legacy name rewrites to: they map back to nothing. */
static const struct { const char *key; size_t len; } malformed[] = {
    { S("bot:{ch:25}:r:chat%2") },       /* cut escape */
    { S("bot:{ch:25}:r:chat%zz") },
    { S("bot:{ch:16}:r:tg%3a42") },      /* lower-case hex */
    { S("bot:{ch:12}:r:%61") },          /* "a" encoded, which it never is */
    { S("bot:{ch:5}:r:a*b") },           /* raw glob byte */
    { S("bot:{ch:5}:r:a b") },
    { S("bot:{ch:5}:r:a:b") },           /* raw ':' in a value */
    { S("bot:{ch:3}:r:chat-1") },        /* wrong bucket (25) */
    { S("bot:{ch:025}:r:chat-1") },
    { S("bot:{ch:+25}:r:chat-1") },
    { S("bot:{ch:32}:r:") },
    { S("bot:{ch:}:r:") },
    { S("bot:{ch:5}:r") },
    { S("bot:{ch:5}:idx") },             /* an index is not a record */
    { S("bot:{m:c1}:z:") },
    { S("bot:{m:c%7}:z") },
    { S("bot:{m:c1:z") },
    { S("bot:{m:c{1}:z") },
    { S("bot:{lk:a%3Afence}:l") },       /* would read back as the fence of "a" */
    { S("bot:{ld:a%3Aterm}") },          /* not a family */
    { S("bot:co:{ld:a%3Aterm}") },       /* would read back as the term of "a" */
    { S("bot:co:{t:c}:nope") },          /* not a turn part */
    { S("bot:co:{t:c}:se%71") },
    { S("bot:co:{t:c}:%73eq") },
    /* a user or ns with ':' reads back as a legacy name of other values: user "u", ns "1" */
    { S("bot:{ud:u%3A1}:e:n:k") },
    { S("bot:{ud:u}:e:n%3Ax:k") },
    { S("bot:{ch:5}:r:\0") },
    { S("other:{ch:25}:r:chat-1") },     /* not a configured prefix */
};

START_TEST(test_malformed_maps_back_to_nothing)
{
    struct layout *l = layout_default();
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        char out[128];
        size_t n = 0;
        struct layout_match m;
        enum layout_result r = layout_to_legacy(l, malformed[i].key, malformed[i].len, out,
                                                sizeof out, &n, &m);
        ck_assert_msg(r == LAYOUT_PASS, "%s mapped to %.*s", malformed[i].key, (int)n, out);
        ck_assert_ptr_null(m.rule);
    }
    layout_free(l);
}
END_TEST

START_TEST(test_turn_parts)
{
    struct layout *l = layout_default();
    static const char *const parts[] = { "seq", "tix", "serving", "owner", "last" };
    for (size_t i = 0; i < 5; i++) {
        char legacy[64], cluster[64], out[64];
        size_t n;
        snprintf(legacy, sizeof legacy, "bot:co:turn:tg:42:%s", parts[i]);
        snprintf(cluster, sizeof cluster, "bot:co:{t:tg%%3A42}:%s", parts[i]);
        ck_assert_int_eq(layout_to_cluster(l, legacy, strlen(legacy), out, sizeof out, &n, NULL),
                         LAYOUT_MAPPED);
        ck_assert_uint_eq(n, strlen(cluster));
        ck_assert_mem_eq(out, cluster, n);
        /* a part also passes as a chat segment before another part */
        snprintf(legacy, sizeof legacy, "bot:co:turn:%s:%s", parts[i], parts[(i + 1) % 5]);
        ck_assert_int_eq(layout_to_cluster(l, legacy, strlen(legacy), out, sizeof out, &n, NULL),
                         LAYOUT_MAPPED);
    }
    static const char *const not_parts[] = { "bot:co:turn:c:Seq", "bot:co:turn:c:seq2",
                                             "bot:co:turn:c:", "bot:co:turn:c:seq:x" };
    for (size_t i = 0; i < 4; i++) {
        char out[64];
        size_t n;
        ck_assert_int_eq(layout_to_cluster(l, not_parts[i], strlen(not_parts[i]), out, sizeof out,
                                           &n, NULL), LAYOUT_PASS);
    }
    layout_free(l);
}
END_TEST

START_TEST(test_rule_order)
{
    /* the shipped order: fence first */
    struct layout *l = layout_default();
    char out[64];
    size_t n;
    struct layout_match m;
    ck_assert_int_eq(layout_to_cluster(l, S("bot:lock:a:fence"), out, sizeof out, &n, &m),
                     LAYOUT_MAPPED);
    ck_assert_str_eq(m.rule->name, "lock-fence");
    layout_free(l);

    /* the other order: the lock rule takes the fence's names */
    static const char reversed[] =
        "rule lock       p:lock:<key...>        -> p:{lk:<key...>}:l\n"
        "rule lock-fence p:lock:<key...>:fence  -> p:{lk:<key...>}:f\n";
    const char *pf[] = { "bot" };
    char err[256];
    l = layout_load_string("r.rules", reversed, strlen(reversed), pf, 1, err, sizeof err);
    ck_assert_msg(l != NULL, "%s", err);
    ck_assert_int_eq(layout_to_cluster(l, S("bot:lock:a:fence"), out, sizeof out, &n, &m),
                     LAYOUT_MAPPED);
    ck_assert_str_eq(m.rule->name, "lock");
    ck_assert_uint_eq(n, strlen("bot:{lk:a%3Afence}:l"));
    ck_assert_mem_eq(out, "bot:{lk:a%3Afence}:l", n);
    /* and a fence name written by someone else does not map back */
    ck_assert_int_eq(layout_to_legacy(l, S("bot:{lk:a}:f"), out, sizeof out, &n, &m), LAYOUT_PASS);
    layout_free(l);
}
END_TEST

START_TEST(test_prefixes)
{
    static const char *const pf[] = { "bot", "b2", "x.y-z" };
    char err[256] = "", out[64], back[64];
    size_t n, bn;
    struct layout_match m;
    struct layout *l = layout_load_file(DEFAULT_RULES, pf, 3, err, sizeof err);
    ck_assert_msg(l != NULL, "%s", err);
    ck_assert_uint_eq(layout_prefix_count(l), 3);
    for (size_t i = 0; i < 3; i++) {
        char legacy[64], want[64];
        snprintf(legacy, sizeof legacy, "%s:chat:chat-1", pf[i]);
        snprintf(want, sizeof want, "%s:{ch:25}:r:chat-1", pf[i]);
        ck_assert_int_eq(layout_to_cluster(l, legacy, strlen(legacy), out, sizeof out, &n, &m),
                         LAYOUT_MAPPED);
        ck_assert_uint_eq(m.prefix, i);
        ck_assert_uint_eq(n, strlen(want));
        ck_assert_mem_eq(out, want, n);
        ck_assert_int_eq(layout_to_legacy(l, out, n, back, sizeof back, &bn, &m), LAYOUT_MAPPED);
        ck_assert_uint_eq(m.prefix, i);
        ck_assert_uint_eq(bn, strlen(legacy));
        ck_assert_mem_eq(back, legacy, bn);
    }
    /* the bucket tags carry no prefix: every prefix's chat-1 is in one slot */
    ck_assert_int_eq(slot_of(S("bot:{ch:25}:r:chat-1")), slot_of(S("b2:{ch:25}:r:x")));
    ck_assert_int_eq(layout_to_cluster(l, S("b3:chat:x"), out, sizeof out, &n, NULL), LAYOUT_PASS);
    size_t plen;
    ck_assert_str_eq(layout_prefix(l, 2, &plen), "x.y-z");
    ck_assert_uint_eq(plen, 5);
    layout_free(l);

    /* no prefix: every name passes */
    l = layout_load_file(DEFAULT_RULES, NULL, 0, err, sizeof err);
    ck_assert_msg(l != NULL, "%s", err);
    ck_assert_int_eq(layout_to_cluster(l, S("bot:chat:x"), out, sizeof out, &n, NULL), LAYOUT_PASS);
    layout_free(l);
}
END_TEST

START_TEST(test_prefix_errors)
{
    static const struct { const char *prefix; const char *msg; } bad[] = {
        { "a{b", "layout-prefix \"a{b\": a prefix may not contain { or } (it would break the hash tags)" },
        { "}", "layout-prefix \"}\": a prefix may not contain { or } (it would break the hash tags)" },
        { "a:b", "layout-prefix \"a:b\": a prefix is one segment: it may not contain :" },
        { "", "layout-prefix \"\": a prefix may not be empty" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        const char *pf[] = { "ok", bad[i].prefix };
        ck_assert_int_eq(layout_check_prefix(bad[i].prefix, err, sizeof err), -1);
        ck_assert_str_eq(err, bad[i].msg);
        err[0] = '\0';
        ck_assert_ptr_null(layout_load_file(DEFAULT_RULES, pf, 2, err, sizeof err));
        ck_assert_str_eq(err, bad[i].msg);
    }
    char err[256] = "";
    const char *twice[] = { "a", "b", "a" };
    ck_assert_ptr_null(layout_load_file(DEFAULT_RULES, twice, 3, err, sizeof err));
    ck_assert_str_eq(err, "layout-prefix \"a\": given twice");
    ck_assert_int_eq(layout_check_prefix("my bot*", err, sizeof err), 0);
}
END_TEST

/* ---- round trips ---- */

/* Ids with the bytes that matter. */
static const struct { const char *id; size_t len; } ids[] = {
    { S("") }, { S("a") }, { S("chat-1") }, { S("tg:42") }, { S(":") }, { S("::") }, { S("a:") },
    { S(":a") }, { S("{") }, { S("}") }, { S("{x}") }, { S("}{") }, { S("*") }, { S("a*b?") },
    { S("[a-z]") }, { S("\\") }, { S("%") }, { S("%41") }, { S("%3A") }, { S("100%") },
    { S(" ") }, { S("a b") }, { S("\t\r\n") }, { S("\x7f") }, { S("\x00") }, { S("a\x00:b") },
    { S("caf\xc3\xa9") }, { S("\xe6\x97\xa5\xe6\x9c\xac") }, { S("\xff\xfe\x80") },
    { S("seq") }, { S("x:seq") }, { S("term") }, { S("user:1:2") }, { S("{ch:5}") },
};

/* A family's legacy names: ID is the id (any bytes), SEG the id made one segment. */
#define ID "\x01"
#define SEG "\x02"
static const struct { const char *family; const char *parts[7]; } shapes[] = {
    { "msg-log", { "bot:msgs:", ID } },
    { "msg-item", { "bot:msg:", ID, ":", SEG } },
    { "msg-item", { "bot:msg:tg:", ID, ":", SEG } },
    { "chat", { "bot:chat:", ID } },
    { "contact", { "bot:contact:", ID } },
    { "checkpoint", { "bot:checkpoint:", ID } },
    { "schedule", { "bot:schedule:", ID } },
    { "user-data", { "bot:user:", SEG, ":", SEG, ":", ID } },
    { "lock-fence", { "bot:lock:", ID, ":fence" } },
    { "lock", { "bot:lock:", ID } },
    { "turn", { "bot:co:turn:", ID, ":seq" } },
    { "turn", { "bot:co:turn:", ID, ":owner" } },
    { "leader-term", { "bot:co:leader:", ID, ":term" } },
    { "leader", { "bot:co:leader:", ID } },
};

static size_t shape_build(size_t s, const char *id, size_t len, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < 7 && shapes[s].parts[i]; i++) {
        const char *p = shapes[s].parts[i];
        if (p[0] == ID[0] || p[0] == SEG[0]) {
            for (size_t j = 0; j < len; j++)
                out[n++] = p[0] == SEG[0] && id[j] == ':' ? '.' : id[j];
        } else {
            memcpy(out + n, p, strlen(p));
            n += strlen(p);
        }
    }
    return n;
}

/* The legacy name is the documented ambiguity: a greedy id ending in a later literal. */
static bool ambiguous(size_t s, const char *id, size_t len)
{
    const char *f = shapes[s].family;
    if (strcmp(f, "lock") == 0)
        return len >= 6 && memcmp(id + len - 6, ":fence", 6) == 0;
    if (strcmp(f, "leader") == 0)
        return len >= 5 && memcmp(id + len - 5, ":term", 5) == 0;
    return false;
}

/* legacy -> cluster -> legacy is the identity; the index names the record. */
static void round_trip(const struct layout *l, size_t s, const char *id, size_t len)
{
    char legacy[512], out[1024], back[512], idx[1024], mem[512];
    size_t n = shape_build(s, id, len, legacy), cn, bn;
    struct layout_match m, m2;
    ck_assert_int_eq(layout_to_cluster(l, legacy, n, out, sizeof out, &cn, &m), LAYOUT_MAPPED);
    ck_assert_msg(strcmp(m.rule->name, shapes[s].family) == 0, "%.*s: %s, want %s", (int)n,
                  legacy, m.rule->name, shapes[s].family);
    ck_assert_uint_le(cn, layout_max_len(l, n));
    /* no captured byte breaks the hash tag: the slot is the tag's */
    const char *open = memchr(out, '{', cn), *close = memchr(out, '}', cn);
    ck_assert_ptr_nonnull(open);
    ck_assert_ptr_nonnull(close);
    ck_assert_ptr_null(memchr(close + 1, '{', cn - (size_t)(close + 1 - out)));
    ck_assert_ptr_null(memchr(close + 1, '}', cn - (size_t)(close + 1 - out)));
    ck_assert_int_eq(layout_to_legacy(l, out, cn, back, sizeof back, &bn, &m2), LAYOUT_MAPPED);
    ck_assert_uint_le(bn, layout_max_len(l, cn));
    ck_assert_ptr_eq(m2.rule, m.rule);
    ck_assert_int_eq(m2.bucket, m.bucket);
    ck_assert_msg(bn == n && memcmp(back, legacy, n) == 0, "%.*s -> %.*s -> %.*s", (int)n, legacy,
                  (int)cn, out, (int)bn, back);
    if (!m.rule->indexed)
        return;
    size_t in = layout_index_key(l, &m, idx, sizeof idx);
    size_t mn = layout_index_member(l, &m, mem, sizeof mem);
    ck_assert_int_eq(slot_of(idx, in), slot_of(out, cn));
    ck_assert_int_eq(layout_index_to_legacy(l, idx, in, mem, mn, back, sizeof back, &bn, &m2),
                     LAYOUT_MAPPED);
    ck_assert_msg(bn == n && memcmp(back, legacy, n) == 0, "index %.*s %.*s -> %.*s", (int)in, idx,
                  (int)mn, mem, (int)bn, back);
    /* the member is raw: for the id families, exactly the id */
    if (m.rule->id_cap >= 0) {
        ck_assert_uint_eq(mn, len);
        ck_assert_mem_eq(mem, id, len);
        ck_assert_int_eq(m.bucket, layout_bucket(id, len));
    }
}

START_TEST(test_round_trip_every_family)
{
    struct layout *l = layout_default();
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
            if (!ambiguous(s, ids[i].id, ids[i].len))
                round_trip(l, s, ids[i].id, ids[i].len);
    layout_free(l);
}
END_TEST

START_TEST(test_round_trip_random_ids)
{
    /* random ids over an alphabet heavy in the bytes that matter */
    static const char alphabet[] = ":{}*?[]\\% \t\x7f\x00\xc3\xa9\xff" "abcXYZ019-_.";
    struct layout *l = layout_default();
    srand(42);
    for (int round = 0; round < 20000; round++) {
        char id[24];
        size_t len = (size_t)(rand() % 24);
        for (size_t j = 0; j < len; j++)
            id[j] = alphabet[rand() % (int)(sizeof alphabet - 1)];
        size_t s = (size_t)rand() % (sizeof shapes / sizeof shapes[0]);
        if (!ambiguous(s, id, len))
            round_trip(l, s, id, len);
    }
    layout_free(l);
}
END_TEST

static size_t pick(char *to, const char *const *set, size_t n)
{
    const char *p = set[(size_t)rand() % n];
    memcpy(to, p, strlen(p));
    return strlen(p);
}

/* up to 3 pieces of a value, mostly well encoded */
static size_t random_value(char *to)
{
    static const char *const vals[] = {
        "5", "25", "16", "7", "chat-1", "a", "u1", "seq", "tix", "fence", "term", "%3A", "%25",
        "%7B", "%20", "\xc3\xa9", "%3a", "%41", "%", "%2", "*", " ", ":", "}", "{", "0",
    };
    size_t n = 0;
    for (int k = rand() % 4; k > 0; k--)
        n += pick(to + n, vals, sizeof vals / sizeof vals[0]);
    return n;
}

START_TEST(test_cluster_names_map_back_exactly)
{
    /* random cluster-looking names: whenever one maps back, the legacy name rewrites to it */
    static const char *const heads[] = {
        "bot:{ch:", "bot:{ct:", "bot:{cp:", "bot:{sc:", "bot:{m:", "bot:{lk:", "bot:{ud:",
        "bot:co:{t:", "bot:co:{ld:", "bot:conv:", "bot:{durable:", "bot:", "b2:{ch:", "",
    };
    static const char *const tails[] = {
        "}:r:", "}:z", "}:i:", "}:e:", "}:l", "}:f", "}", "}:term", "}:seq", "}:owner",
        "}:idx", "}:x", ":", "}:e:n:", "",
    };
    struct layout *l = layout_default();
    srand(7);
    size_t mapped = 0;
    for (int round = 0; round < 300000; round++) {
        char key[256], back[512], again[512];
        size_t n = 0, bn, an;
        n += pick(key + n, heads, sizeof heads / sizeof heads[0]);
        n += random_value(key + n);
        n += pick(key + n, tails, sizeof tails / sizeof tails[0]);
        n += random_value(key + n);
        if (layout_to_legacy(l, key, n, back, sizeof back, &bn, NULL) != LAYOUT_MAPPED)
            continue;
        mapped++;
        ck_assert_int_eq(layout_to_cluster(l, back, bn, again, sizeof again, &an, NULL),
                         LAYOUT_MAPPED);
        ck_assert_msg(an == n && memcmp(again, key, n) == 0, "%.*s -> %.*s -> %.*s", (int)n, key,
                      (int)bn, back, (int)an, again);
    }
    ck_assert_uint_gt(mapped, 1000);   /* the generator does reach the rules */
    layout_free(l);
}
END_TEST

/* layout_record_to_legacy is layout_to_legacy restricted to records: the
 * same name for a record of an indexed family, PASS for anything else. */
static void record_agrees(const struct layout *l, const char *key, size_t n)
{
    char full[512], rec[512];
    size_t fn = 0, rn = 0;
    struct layout_match fm, rm;
    enum layout_result f = layout_to_legacy(l, key, n, full, sizeof full, &fn, &fm);
    enum layout_result r = layout_record_to_legacy(l, key, n, rec, sizeof rec, &rn, &rm);
    if (f == LAYOUT_MAPPED && fm.rule->indexed) {
        ck_assert_msg(r == LAYOUT_MAPPED, "%.*s", (int)n, key);
        ck_assert_ptr_eq(rm.rule, fm.rule);
        ck_assert_int_eq(rm.bucket, fm.bucket);
        ck_assert_uint_eq(rn, fn);
        ck_assert_mem_eq(rec, full, fn);
    } else {
        ck_assert_msg(r == LAYOUT_PASS, "%.*s", (int)n, key);
    }
}

START_TEST(test_record_to_legacy)
{
    static const char *const heads[] = {
        "bot:{ch:", "bot:{ct:", "bot:{cp:", "bot:{sc:", "bot:{m:", "bot:{lk:", "bot:{ud:",
        "bot:co:{ld:", "bot:conv:", "bot:{durable:", "bot:",
    };
    static const char *const tails[] = { "}:r:", "}:z", "}:i:", "}:e:", "}:l", "}:idx", ":", "" };
    struct layout *l = layout_default();
    size_t records = 0;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        const char *c = families[i].cluster;
        record_agrees(l, c, strlen(c));
        records += families[i].index != NULL;
    }
    ck_assert_uint_gt(records, 5);
    srand(11);
    for (int round = 0; round < 100000; round++) {
        char key[256];
        size_t n = 0;
        n += pick(key + n, heads, sizeof heads / sizeof heads[0]);
        n += random_value(key + n);
        n += pick(key + n, tails, sizeof tails / sizeof tails[0]);
        n += random_value(key + n);
        record_agrees(l, key, n);
    }
    layout_free(l);
}
END_TEST

START_TEST(test_other_rules)
{
    /* the matcher beyond the shipped rules: captures after the greedy one, a constrained
     * capture before it, literals in a member, a bucket used only by the index */
    static const char text[] =
        "rule a  p:x:<k=u|v>:<id...>:<n>:end  ->  p:{x:<k>}:<n>:<id...>\n"
        "rule b  p:y:<id>:<n>  ->  p:{y:<n>}:<id>  index p:{y:<n>}:i:<b>  member m:<id>\n";
    static const struct { const char *legacy, *cluster, *index, *member; } v[] = {
        { "q:x:u:a:b:7:end", "q:{x:u}:7:a%3Ab", NULL, NULL },
        { "q:x:v::1:end", "q:{x:v}:1:", NULL, NULL },
        { "q:x:v:::end", "q:{x:v}::", NULL, NULL },
        { "q:y:chat-1:n", "q:{y:n}:chat-1", "q:{y:n}:i:25", "m:chat-1" },
        { "q:y::", "q:{y:}:", "q:{y:}:i:5", "m:" },
    };
    static const char *const pass[] = { "q:x:w:a:7:end", "q:x:u:7:end", "q:x:u:a:7:end:", "q:y:a",
                                        "q:y:a:b:c" };
    const char *pf[] = { "q" };
    char err[256], out[128], back[128], idx[128], mem[128];
    size_t n, bn;
    struct layout_match m;
    struct layout *l = layout_load_string("o.rules", text, strlen(text), pf, 1, err, sizeof err);
    ck_assert_msg(l != NULL, "%s", err);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        ck_assert_int_eq(layout_to_cluster(l, v[i].legacy, strlen(v[i].legacy), out, sizeof out,
                                           &n, &m), LAYOUT_MAPPED);
        ck_assert_msg(n == strlen(v[i].cluster) && memcmp(out, v[i].cluster, n) == 0,
                      "%s -> %.*s", v[i].legacy, (int)n, out);
        ck_assert_int_eq(layout_to_legacy(l, out, n, back, sizeof back, &bn, NULL), LAYOUT_MAPPED);
        ck_assert_uint_eq(bn, strlen(v[i].legacy));
        ck_assert_mem_eq(back, v[i].legacy, bn);
        if (!v[i].index)
            continue;
        size_t in = layout_index_key(l, &m, idx, sizeof idx);
        size_t mn = layout_index_member(l, &m, mem, sizeof mem);
        ck_assert_uint_eq(in, strlen(v[i].index));
        ck_assert_mem_eq(idx, v[i].index, in);
        ck_assert_uint_eq(mn, strlen(v[i].member));
        ck_assert_mem_eq(mem, v[i].member, mn);
        ck_assert_int_eq(layout_index_to_legacy(l, idx, in, mem, mn, back, sizeof back, &bn, NULL),
                         LAYOUT_MAPPED);
        ck_assert_uint_eq(bn, strlen(v[i].legacy));
        ck_assert_mem_eq(back, v[i].legacy, bn);
        /* the bucket is the id's: another bucket or a member without its literal is nothing */
        idx[in - 1] = idx[in - 1] == '5' ? '6' : '5';
        ck_assert_int_eq(layout_index_to_legacy(l, idx, in, mem, mn, back, sizeof back, &bn, NULL),
                         LAYOUT_PASS);
        ck_assert_int_eq(layout_index_to_legacy(l, idx, in, mem + 2, mn - 2, back, sizeof back,
                                                &bn, NULL), LAYOUT_PASS);
    }
    for (size_t i = 0; i < sizeof pass / sizeof pass[0]; i++)
        ck_assert_msg(layout_to_cluster(l, pass[i], strlen(pass[i]), out, sizeof out, &n, NULL) ==
                      LAYOUT_PASS, "%s", pass[i]);
    /* a cluster value that is not one of the constrained literals */
    ck_assert_int_eq(layout_to_legacy(l, S("q:{x:w}:7:a"), back, sizeof back, &bn, NULL),
                     LAYOUT_PASS);
    layout_free(l);
}
END_TEST

/* ---- buffers, indexes ---- */

START_TEST(test_short_buffer)
{
    struct layout *l = layout_default();
    char out[64], back[8];
    size_t n = 0, bn = 0;
    memset(out, '#', sizeof out);
    /* too small: SHORT with the length needed, nothing past cap written */
    ck_assert_int_eq(layout_to_cluster(l, S("bot:chat:tg:42"), out, 5, &n, NULL), LAYOUT_SHORT);
    ck_assert_uint_eq(n, strlen("bot:{ch:16}:r:tg%3A42"));
    ck_assert_mem_eq(out, "bot:{", 5);
    ck_assert_int_eq(out[5], '#');
    ck_assert_int_eq(layout_to_cluster(l, S("bot:chat:tg:42"), out, n, &n, NULL), LAYOUT_MAPPED);
    ck_assert_int_eq(layout_to_legacy(l, out, n, back, sizeof back, &bn, NULL), LAYOUT_SHORT);
    ck_assert_uint_eq(bn, strlen("bot:chat:tg:42"));
    /* cap 0 with no buffer */
    ck_assert_int_eq(layout_to_cluster(l, S("bot:chat:x"), NULL, 0, &n, NULL), LAYOUT_SHORT);
    ck_assert_uint_eq(n, strlen("bot:{ch:7}:r:x"));
    ck_assert_uint_eq(escape_encode(S("a:b"), NULL, 0), 5);
    layout_free(l);
}
END_TEST

START_TEST(test_index_entries)
{
    struct layout *l = layout_default();
    char out[128];
    size_t n;
    struct layout_match m;
    static const struct { const char *index, *member, *legacy; } ok[] = {
        { "bot:{ch:25}:idx", "chat-1", "bot:chat:chat-1" },
        { "bot:{ch:16}:idx", "tg:42", "bot:chat:tg:42" },
        { "bot:{sc:5}:idx", "", "bot:schedule:" },
        { "bot:{ud:u1}:idx", "prefs:lang:en", "bot:user:u1:prefs:lang:en" },
        { "bot:{ud:u%3A1}:idx", "n:k", NULL },      /* user "u:1" has no legacy name */
        { "bot:{ch:24}:idx", "chat-1", NULL },      /* the wrong bucket */
        { "bot:{ch:25}:r:chat-1", "chat-1", NULL }, /* a record, not an index */
        { "bot:{ud:u1}:idx", "prefs", NULL },       /* a member without a key */
        { "bot:{m:c1}:z", "x", NULL },              /* not an indexed family */
        { "bot:{ch:%32%35}:idx", "chat-1", NULL },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        enum layout_result r = layout_index_to_legacy(l, ok[i].index, strlen(ok[i].index),
                                                      ok[i].member, strlen(ok[i].member), out,
                                                      sizeof out, &n, &m);
        if (!ok[i].legacy) {
            ck_assert_msg(r == LAYOUT_PASS, "%s %s -> %.*s", ok[i].index, ok[i].member, (int)n, out);
            continue;
        }
        ck_assert_int_eq(r, LAYOUT_MAPPED);
        ck_assert_uint_eq(n, strlen(ok[i].legacy));
        ck_assert_mem_eq(out, ok[i].legacy, n);
    }
    /* the 32 index keys of a family, from a match filled by hand */
    const struct rules *rules = layout_file_rules(l, 0);
    const struct rules_rule *chat = NULL;
    for (size_t i = 0; i < rules->nrule; i++)
        if (strcmp(rules->rule[i].name, "checkpoint") == 0)
            chat = &rules->rule[i];
    ck_assert_ptr_nonnull(chat);
    for (int b = 0; b < RULES_BUCKETS; b++) {
        struct layout_match hand = { .rule = chat, .prefix = 0, .bucket = b };
        char want[32];
        snprintf(want, sizeof want, "bot:{cp:%d}:idx", b);
        n = layout_index_key(l, &hand, out, sizeof out);
        ck_assert_uint_eq(n, strlen(want));
        ck_assert_mem_eq(out, want, n);
    }
    layout_free(l);
}
END_TEST

/* ---- several rules files ---- */

static const char PRESENCE[] = "rule presence p:presence:<user> -> p:{pr:<user>}:s\n";

/* Each file serves its own prefixes: a key is tried against the rules of
 * the files serving its prefix only, both ways. */
START_TEST(test_files_own_prefixes)
{
    static const char *const bot[] = { "bot" }, *const cour[] = { "cour", "c2" };
    const struct layout_source src[] = {
        { DEFAULT_RULES, NULL, 0, bot, 1 },
        { "presence.rules", PRESENCE, sizeof PRESENCE - 1, cour, 2 },
    };
    char err[512] = "", out[128];
    size_t n;
    struct layout_match m;
    struct layout *l = layout_load(src, 2, err, sizeof err);
    ck_assert_msg(l != NULL, "%s", err);
    ck_assert_uint_eq(layout_file_count(l), 2);
    ck_assert_uint_eq(layout_prefix_count(l), 3);
    ck_assert_str_eq(layout_prefix(l, 1, NULL), "cour");
    static const struct { const char *legacy, *cluster; const char *file; } v[] = {
        { "bot:chat:tg:42", "bot:{ch:16}:r:tg%3A42", DEFAULT_RULES },
        { "cour:presence:u1", "cour:{pr:u1}:s", "presence.rules" },
        { "c2:presence:a:b", NULL, NULL },      /* <user> is one segment */
        { "c2:presence:u%", "c2:{pr:u%25}:s", "presence.rules" },
        { "cour:chat:tg:42", NULL, NULL },      /* botmesh does not serve cour */
        { "bot:presence:u1", NULL, NULL },      /* nor presence bot */
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        enum layout_result r = layout_to_cluster(l, v[i].legacy, strlen(v[i].legacy), out,
                                                 sizeof out, &n, &m);
        if (!v[i].cluster) {
            ck_assert_msg(r == LAYOUT_PASS, "%s", v[i].legacy);
            continue;
        }
        ck_assert_int_eq(r, LAYOUT_MAPPED);
        ck_assert_str_eq(m.rule->file, v[i].file);
        ck_assert_uint_eq(n, strlen(v[i].cluster));
        ck_assert_mem_eq(out, v[i].cluster, n);
        char back[128];
        size_t bn;
        ck_assert_int_eq(layout_to_legacy(l, out, n, back, sizeof back, &bn, &m), LAYOUT_MAPPED);
        ck_assert_uint_eq(bn, strlen(v[i].legacy));
        ck_assert_mem_eq(back, v[i].legacy, bn);
    }
    /* a cluster name of the other file's shape, under a prefix it does not serve */
    ck_assert_int_eq(layout_to_legacy(l, S("bot:{pr:u1}:s"), out, sizeof out, &n, &m), LAYOUT_PASS);
    ck_assert_int_eq(layout_to_legacy(l, S("cour:{ch:16}:r:tg%3A42"), out, sizeof out, &n, &m),
                     LAYOUT_PASS);
    ck_assert(layout_is_index(l, S("bot:{ch:3}:idx")));
    ck_assert(!layout_is_index(l, S("cour:{ch:3}:idx")));
    size_t nb, nc;
    layout_prefix_rules(l, 0, &nb);
    layout_prefix_rules(l, 2, &nc);
    ck_assert_uint_eq(nb, layout_file_rules(l, 0)->nrule);
    ck_assert_uint_eq(nc, 1);
    layout_free(l);
}
END_TEST

/* Two files may serve one prefix when no name is matched by both: that
 * prefix is served by the rules of each. */
START_TEST(test_files_shared_prefix)
{
    static const char *const bot[] = { "bot" }, *const both[] = { "x", "bot" };
    const struct layout_source src[] = {
        { DEFAULT_RULES, NULL, 0, bot, 1 },
        { "presence.rules", PRESENCE, sizeof PRESENCE - 1, both, 2 },
    };
    char err[512] = "", out[128];
    size_t n;
    struct layout *l = layout_load(src, 2, err, sizeof err);
    ck_assert_msg(l != NULL, "%s", err);
    ck_assert_uint_eq(layout_prefix_count(l), 2);
    ck_assert_int_eq(layout_to_cluster(l, S("bot:presence:u1"), out, sizeof out, &n, NULL),
                     LAYOUT_MAPPED);
    ck_assert_mem_eq(out, "bot:{pr:u1}:s", n);
    ck_assert_int_eq(layout_to_cluster(l, S("bot:lock:a:fence"), out, sizeof out, &n, NULL),
                     LAYOUT_MAPPED);
    ck_assert_mem_eq(out, "bot:{lk:a}:f", n);
    ck_assert_int_eq(layout_to_cluster(l, S("bot:conv:1"), out, sizeof out, &n, NULL), LAYOUT_KEEP);
    ck_assert_int_eq(layout_to_cluster(l, S("x:chat:1"), out, sizeof out, &n, NULL), LAYOUT_PASS);
    size_t nr;
    layout_prefix_rules(l, 0, &nr);
    ck_assert_uint_eq(nr, layout_file_rules(l, 0)->nrule + 1);
    layout_free(l);
}
END_TEST

/* Files serving one prefix whose rules can match one same name are
 * refused, naming both lines and such a name; files that overlap but share
 * no prefix are not. */
START_TEST(test_files_overlap_refused)
{
    static const char LOCKS[] = "# locks of another app\n\nrule mylock p:lock:<k> -> p:{x:<k>}:l\n";
    static const char *const bot[] = { "bot" }, *const other[] = { "other" };
    char err[512] = "", want[512];
    struct rules *shipped = rules_load_file(DEFAULT_RULES, err, sizeof err);
    ck_assert_ptr_nonnull(shipped);
    int lock_line = 0;
    for (size_t i = 0; i < shipped->nrule; i++)
        if (strcmp(shipped->rule[i].name, "lock") == 0)
            lock_line = shipped->rule[i].line;
    rules_free(shipped);
    ck_assert_int_gt(lock_line, 0);

    struct layout_source src[] = {
        { DEFAULT_RULES, NULL, 0, bot, 1 },
        { "locks.rules", LOCKS, sizeof LOCKS - 1, bot, 1 },
    };
    ck_assert_ptr_null(layout_load(src, 2, err, sizeof err));
    snprintf(want, sizeof want, "%s:%d: rule lock and locks.rules:3: rule mylock both match "
             "\"bot:lock:x\"; both files serve prefix \"bot\", and a name may be matched by one "
             "file only", DEFAULT_RULES, lock_line);
    ck_assert_str_eq(err, want);

    /* a keep against a rule, the other way round */
    static const char CONV[] = "rule conv-state p:conv:<id>:state -> p:{cs:<id>}\n";
    src[0] = (struct layout_source){ "conv.rules", CONV, sizeof CONV - 1, bot, 1 };
    src[1] = (struct layout_source){ DEFAULT_RULES, NULL, 0, bot, 1 };
    ck_assert_ptr_null(layout_load(src, 2, err, sizeof err));
    snprintf(want, sizeof want, "conv.rules:1: rule conv-state and %s:", DEFAULT_RULES);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
    ck_assert_msg(strstr(err, ": keep p:conv:* both match \"bot:conv:x:state\"") != NULL, "%s", err);

    /* the same file twice for one prefix overlaps itself */
    src[0] = (struct layout_source){ "locks.rules", LOCKS, sizeof LOCKS - 1, bot, 1 };
    src[1] = src[0];
    ck_assert_ptr_null(layout_load(src, 2, err, sizeof err));
    ck_assert_str_eq(err, "locks.rules:3: rule mylock and locks.rules:3: rule mylock both match "
                          "\"bot:lock:x\"; both files serve prefix \"bot\", and a name may be "
                          "matched by one file only");

    /* no common prefix: no conflict */
    src[0] = (struct layout_source){ DEFAULT_RULES, NULL, 0, bot, 1 };
    src[1] = (struct layout_source){ "locks.rules", LOCKS, sizeof LOCKS - 1, other, 1 };
    struct layout *l = layout_load(src, 2, err, sizeof err);
    ck_assert_msg(l != NULL, "%s", err);
    layout_free(l);

    /* a prefix given twice to one file; an error in the second file */
    static const char *const twice[] = { "a", "a" };
    src[1] = (struct layout_source){ "locks.rules", LOCKS, sizeof LOCKS - 1, twice, 2 };
    ck_assert_ptr_null(layout_load(src, 2, err, sizeof err));
    ck_assert_str_eq(err, "layout-prefix \"a\": given twice");
    src[1] = (struct layout_source){ "bad.rules", "keep x\n", 7, other, 1 };
    ck_assert_ptr_null(layout_load(src, 2, err, sizeof err));
    ck_assert_str_eq(err, "bad.rules:1: \"x\" must start with p: (the prefix)");
}
END_TEST

/* ---- the shipped courier-v1 rules ---- */

/* LAYOUT.md "Courier layout", for the prefixes courier and presence. */
static const struct { const char *legacy, *cluster, *family; } courier[] = {
    { "courier:presence:score:room:general", "courier:presence:{pr:room%3Ageneral}:score",
      "courier-presence-score" },
    { "courier:presence:meta:room:general", "courier:presence:{pr:room%3Ageneral}:meta",
      "courier-presence-meta" },
    { "presence:score:activity:team", "presence:{pr:activity%3Ateam}:score", "presence-score" },
    { "presence:meta:activity:team", "presence:{pr:activity%3Ateam}:meta", "presence-meta" },
    { "presence:score:a{b}*", "presence:{pr:a%7Bb%7D%2A}:score", "presence-score" },
    { "courier:presence:meta:x:meta", "courier:presence:{pr:x%3Ameta}:meta",
      "courier-presence-meta" },
    { "presence:presence:score:t", "presence:presence:{pr:t}:score", "courier-presence-score" },
};

/* Names the courier rules leave as they are. */
static const struct { const char *key; enum layout_result result; } courier_unchanged[] = {
    { "courier:stream:activity:team", LAYOUT_KEEP },
    { "courier:ratelimit:caller-1", LAYOUT_KEEP },
    { "courier:{meta}:layout", LAYOUT_KEEP },
    { "courier:room:general", LAYOUT_PASS },
    { "courier:presence:score", LAYOUT_PASS },       /* no topic */
    { "courier:presence:other:t", LAYOUT_PASS },
    { "presence:diff:t", LAYOUT_PASS },
    { "bot:score:t", LAYOUT_PASS },                  /* not a configured prefix */
};

START_TEST(test_courier_rules)
{
    static const char *const pf[] = { "courier", "presence" };
    char err[256] = "", out[256], back[256];
    struct layout *l = layout_load_file("conf/layouts/courier-v1.rules", pf, 2, err, sizeof err);
    ck_assert_msg(l != NULL, "%s", err);
    for (size_t i = 0; i < sizeof courier / sizeof courier[0]; i++) {
        size_t n, bn;
        struct layout_match m;
        const char *k = courier[i].legacy;
        ck_assert_int_eq(layout_to_cluster(l, k, strlen(k), out, sizeof out, &n, &m),
                         LAYOUT_MAPPED);
        ck_assert_str_eq(m.rule->name, courier[i].family);
        ck_assert_msg(n == strlen(courier[i].cluster) && memcmp(out, courier[i].cluster, n) == 0,
                      "%s -> %.*s, want %s", k, (int)n, out, courier[i].cluster);
        ck_assert_int_eq(layout_to_legacy(l, out, n, back, sizeof back, &bn, NULL), LAYOUT_MAPPED);
        ck_assert_msg(bn == strlen(k) && memcmp(back, k, bn) == 0, "%s back: %.*s", k, (int)bn,
                      back);
    }
    /* a topic's scores and metadata share its slot */
    ck_assert_int_eq(slot_of(S("courier:presence:{pr:room%3Ageneral}:score")),
                     slot_of(S("courier:presence:{pr:room%3Ageneral}:meta")));
    for (size_t i = 0; i < sizeof courier_unchanged / sizeof courier_unchanged[0]; i++) {
        const char *k = courier_unchanged[i].key;
        size_t n;
        ck_assert_msg(layout_to_cluster(l, k, strlen(k), out, sizeof out, &n, NULL) ==
                      courier_unchanged[i].result, "to_cluster %s", k);
        ck_assert_msg(layout_to_legacy(l, k, strlen(k), out, sizeof out, &n, NULL) ==
                      courier_unchanged[i].result, "to_legacy %s", k);
    }
    layout_free(l);
}
END_TEST

static Suite *layout_suite(void)
{
    Suite *s = suite_create("layout");
    TCase *tc = tcase_create("layout");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_fnv_vectors);
    tcase_add_test(tc, test_encode_vectors);
    tcase_add_test(tc, test_encode_every_byte);
    tcase_add_test(tc, test_decode_malformed);
    tcase_add_test(tc, test_family_vectors);
    tcase_add_test(tc, test_same_slot_per_family);
    tcase_add_test(tc, test_unchanged);
    tcase_add_test(tc, test_malformed_maps_back_to_nothing);
    tcase_add_test(tc, test_turn_parts);
    tcase_add_test(tc, test_rule_order);
    tcase_add_test(tc, test_prefixes);
    tcase_add_test(tc, test_files_own_prefixes);
    tcase_add_test(tc, test_files_shared_prefix);
    tcase_add_test(tc, test_files_overlap_refused);
    tcase_add_test(tc, test_prefix_errors);
    tcase_add_test(tc, test_round_trip_every_family);
    tcase_add_test(tc, test_round_trip_random_ids);
    tcase_add_test(tc, test_cluster_names_map_back_exactly);
    tcase_add_test(tc, test_record_to_legacy);
    tcase_add_test(tc, test_other_rules);
    tcase_add_test(tc, test_short_buffer);
    tcase_add_test(tc, test_index_entries);
    tcase_add_test(tc, test_courier_rules);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(layout_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
