/*
 * rewrite (proxy/core/rewrite.h): key arguments of requests legacy -> cluster by
 * the shipped conf/layouts/botmesh-v1.rules (prefixes "bot" and "other"),
 * key names in replies back, and the wider patterns listings send to the
 * masters (proxy/families/listing.h).
 *
 * A request is built from argv, rewritten, and compared byte for byte with
 * the same command built from the expected argv (offsets included). What no
 * rule rewrites must leave the request untouched (same storage: no copy);
 * small commands stay in the request's inline storage; large ones (more
 * bytes, arguments and keys than the fixed room) are rewritten too.
 * Run from the repository root.
 */
#include <check.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/core/request.h"
#include "proxy/core/rewrite.h"
#include "proxy/core/worker.h"
#include "proxy/families/listing.h"
#include "keylayout/layout.h"
#include "lib/proto/command.h"

static struct layout *layout;
static struct worker worker;

static void setup(void)
{
    const char *prefixes[] = { "bot", "other" };
    char err[512];
    layout = layout_load_file("conf/layouts/botmesh-v1.rules", prefixes, 2, err, sizeof err);
    ck_assert_msg(layout != NULL, "%s (run from the repository root)", err);
    memset(&worker, 0, sizeof worker);
}

static void teardown(void)
{
    layout_free(layout);
}

/* A request holding argv (NULL-terminated), its command looked up. */
static struct request *request_of_argv(const char *const *argv)
{
    int argc = 0;
    size_t lens[256];
    while (argv[argc]) {
        lens[argc] = strlen(argv[argc]);
        argc++;
    }
    struct request *r = request_new(&worker);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(request_build(r, argc, argv, lens), 0);
    const struct command *cmd = command_lookup(argv[0], lens[0]);
    ck_assert_ptr_nonnull(cmd);
    if (cmd->nsubcommands && argc > 1)
        cmd = command_lookup_sub(cmd, argv[1], lens[1]);
    ck_assert_ptr_nonnull(cmd);
    r->cmd = cmd;
    return r;
}

/* r holds exactly the command of argv. */
static void assert_request_is(struct request *r, const char *const *argv)
{
    struct request *want = request_of_argv(argv);
    ck_assert_int_eq(r->argc, want->argc);
    ck_assert_uint_eq(r->len, want->len);
    ck_assert_msg(memcmp(r->data, want->data, r->len) == 0, "got %.*s\nwant %.*s",
                  (int)r->len, r->data, (int)want->len, want->data);
    for (int i = 0; i < r->argc; i++) {
        ck_assert_uint_eq(r->args[i].off, want->args[i].off);
        ck_assert_uint_eq(r->args[i].len, want->args[i].len);
    }
    request_free(want);
}

#define ARGV(...) ((const char *const[]){ __VA_ARGS__, NULL })

static const struct {
    const char *const *in;
    const char *const *out;   /* NULL: nothing rewritten */
} vectors[] = {
    { ARGV("GET", "bot:chat:tg:42"), ARGV("GET", "bot:{ch:16}:r:tg%3A42") },
    { ARGV("get", "other:chat:chat-1"), ARGV("get", "other:{ch:25}:r:chat-1") },
    { ARGV("SET", "bot:lock:a:fence", "7", "EX", "10"), ARGV("SET", "bot:{lk:a}:f", "7", "EX", "10") },
    { ARGV("HSET", "bot:user:u1:ns:k:1", "f", "bot:chat:x"),
      ARGV("HSET", "bot:{ud:u1}:e:ns:k%3A1", "f", "bot:chat:x") },   /* values stay */
    { ARGV("ZADD", "bot:msgs:c1", "1", "bot:msg:c1:m1"), ARGV("ZADD", "bot:{m:c1}:z", "1", "bot:msg:c1:m1") },
    { ARGV("MSET", "bot:lock:l", "v1", "plain", "v2", "bot:co:leader:n", "v3"),
      ARGV("MSET", "bot:{lk:l}:l", "v1", "plain", "v2", "bot:co:{ld:n}", "v3") },
    { ARGV("RENAME", "bot:co:turn:c:seq", "bot:co:turn:c:tix"),
      ARGV("RENAME", "bot:co:{t:c}:seq", "bot:co:{t:c}:tix") },
    /* movable keys: numkeys and STREAMS */
    { ARGV("EVAL", "return 1", "2", "bot:msgs:c1", "x", "bot:chat:y"),
      ARGV("EVAL", "return 1", "2", "bot:{m:c1}:z", "x", "bot:chat:y") },
    { ARGV("XREAD", "COUNT", "1", "STREAMS", "bot:msgs:a", "plain", "0", "0"),
      ARGV("XREAD", "COUNT", "1", "STREAMS", "bot:{m:a}:z", "plain", "0", "0") },
    { ARGV("ZUNIONSTORE", "bot:msgs:d", "2", "bot:msgs:a", "bot:msgs:b"),
      ARGV("ZUNIONSTORE", "bot:{m:d}:z", "2", "bot:{m:a}:z", "bot:{m:b}:z") },
    { ARGV("OBJECT", "ENCODING", "bot:chat:x"), ARGV("OBJECT", "ENCODING", "bot:{ch:7}:r:x") },
    /* nothing to rewrite: no rule, a keep, another prefix, no keys, malformed */
    { ARGV("GET", "plain"), NULL },
    { ARGV("GET", "bot:conv:1"), NULL },
    { ARGV("GET", "bot:{meta}:layout"), NULL },
    { ARGV("GET", "nobot:chat:x"), NULL },
    { ARGV("PING"), NULL },
    { ARGV("EVAL", "return 1", "x", "bot:chat:y"), NULL },
    { ARGV("SET", "bot:{ch:2}:r:x", "v"), NULL },   /* a cluster name is no legacy name */
};

START_TEST(test_request_vectors)
{
    struct request *r = request_of_argv(vectors[_i].in);
    char *data = r->data;
    struct resp_arg *args = r->args;
    int rc = rewrite_request(r, layout);
    if (!vectors[_i].out) {
        ck_assert_int_eq(rc, 0);
        ck_assert_ptr_eq(r->data, data);     /* untouched: no copy */
        ck_assert_ptr_eq(r->args, args);
        assert_request_is(r, vectors[_i].in);
    } else {
        ck_assert_int_eq(rc, 1);
        assert_request_is(r, vectors[_i].out);
        if (r->len <= REQUEST_INLINE_BYTES)
            ck_assert_ptr_eq(r->data, r->inline_data);
    }
    request_free(r);
}
END_TEST

/* A command that grows past the inline storage, and one with more keys,
 * arguments and name bytes than the fixed room on the stack. */
static void check_del(int nkeys, size_t idlen)
{
    const char **in = calloc((size_t)nkeys + 2, sizeof *in);
    const char **out = calloc((size_t)nkeys + 2, sizeof *out);
    char (*names)[2][1024] = calloc((size_t)nkeys, sizeof *names);
    ck_assert(in && out && names);
    in[0] = out[0] = "DEL";
    for (int i = 0; i < nkeys; i++) {
        int n = snprintf(names[i][0], sizeof names[i][0], "bot:chat:%d:", i);
        memset(names[i][0] + n, i % 2 ? '{' : 'x', idlen);
        names[i][0][n + idlen] = '\0';
        size_t outlen;
        ck_assert_int_eq(layout_to_cluster(layout, names[i][0], strlen(names[i][0]),
                                           names[i][1], sizeof names[i][1] - 1, &outlen, NULL),
                         LAYOUT_MAPPED);
        names[i][1][outlen] = '\0';
        in[1 + i] = i % 3 == 2 ? "plain" : names[i][0];
        out[1 + i] = i % 3 == 2 ? "plain" : names[i][1];
    }
    struct request *r = request_of_argv(in);
    ck_assert_int_eq(rewrite_request(r, layout), 1);
    assert_request_is(r, out);
    request_free(r);
    free(in);
    free(out);
    free(names);
}

START_TEST(test_request_large)
{
    check_del(1, 150);      /* inline in, heap out */
    check_del(5, 100);
    check_del(40, 3);       /* more keys and arguments than the stack room */
    check_del(40, 200);     /* and more name bytes */
}
END_TEST

/* ---- replies ---- */

static void assert_reply(const char *in, enum rewrite_reply_shape shape, int rc, const char *want)
{
    struct evbuffer *out = evbuffer_new();
    ck_assert_int_eq(rewrite_reply_keys(layout, in, strlen(in), shape, out), rc);
    size_t len = evbuffer_get_length(out);
    const char *got = len ? (const char *)evbuffer_pullup(out, -1) : "";
    ck_assert_msg(len == strlen(want) && memcmp(got, want, len) == 0, "got %.*s\nwant %s",
                  (int)len, got, want);
    evbuffer_free(out);
}

START_TEST(test_reply_shapes)
{
    /* RANDOMKEY */
    assert_reply("$21\r\nbot:{ch:16}:r:tg%3A42\r\n", REWRITE_REPLY_KEY, 0,
                 "$14\r\nbot:chat:tg:42\r\n");
    assert_reply("$5\r\nplain\r\n", REWRITE_REPLY_KEY, 0, "$5\r\nplain\r\n");
    assert_reply("$-1\r\n", REWRITE_REPLY_KEY, 0, "$-1\r\n");
    assert_reply("-ERR x\r\n", REWRITE_REPLY_KEY, -1, "");
    /* KEYS */
    assert_reply("*3\r\n$12\r\nbot:{m:c1}:z\r\n$5\r\nplain\r\n$12\r\nbot:{lk:a}:f\r\n",
                 REWRITE_REPLY_EACH, 0,
                 "*3\r\n$11\r\nbot:msgs:c1\r\n$5\r\nplain\r\n$16\r\nbot:lock:a:fence\r\n");
    assert_reply("*0\r\n", REWRITE_REPLY_EACH, 0, "*0\r\n");
    /* BLPOP, BZPOPMIN, BLMPOP */
    assert_reply("*2\r\n$12\r\nbot:{m:c1}:z\r\n$12\r\nbot:{m:c1}:z\r\n", REWRITE_REPLY_FIRST, 0,
                 "*2\r\n$11\r\nbot:msgs:c1\r\n$12\r\nbot:{m:c1}:z\r\n");
    assert_reply("*3\r\n$12\r\nbot:{m:c1}:z\r\n$1\r\nm\r\n$1\r\n1\r\n", REWRITE_REPLY_FIRST, 0,
                 "*3\r\n$11\r\nbot:msgs:c1\r\n$1\r\nm\r\n$1\r\n1\r\n");
    assert_reply("*2\r\n$12\r\nbot:{m:c1}:z\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n", REWRITE_REPLY_FIRST, 0,
                 "*2\r\n$11\r\nbot:msgs:c1\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    assert_reply("*-1\r\n", REWRITE_REPLY_FIRST, 0, "*-1\r\n");
    /* XREAD: [[stream, entries], ...] */
    assert_reply("*2\r\n*2\r\n$11\r\nbot:{m:a}:z\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
                 "*2\r\n$5\r\nplain\r\n*0\r\n",
                 REWRITE_REPLY_EACH_FIRST, 0,
                 "*2\r\n*2\r\n$10\r\nbot:msgs:a\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
                 "*2\r\n$5\r\nplain\r\n*0\r\n");
    assert_reply("*-1\r\n", REWRITE_REPLY_EACH_FIRST, 0, "*-1\r\n");
    /* not one whole reply of that shape: nothing appended */
    assert_reply("*2\r\n$1\r\na\r\n", REWRITE_REPLY_EACH, -1, "");
    assert_reply("*1\r\n$1\r\na\r\n$1\r\nb\r\n", REWRITE_REPLY_EACH, -1, "");
    assert_reply("*1\r\n:1\r\n", REWRITE_REPLY_EACH, -1, "");
    assert_reply(":1\r\n", REWRITE_REPLY_FIRST, -1, "");
}
END_TEST

START_TEST(test_key_to_legacy)
{
    char buf[64];
    size_t len;
    const char *k = "bot:{lk:a%3Ab}:l";
    const char *name = rewrite_key_to_legacy(layout, k, strlen(k), buf, sizeof buf, &len);
    ck_assert_ptr_eq(name, buf);
    ck_assert_int_eq((int)len, 12);
    ck_assert(memcmp(name, "bot:lock:a:b", 12) == 0);
    /* too small: NULL and the length needed */
    ck_assert_ptr_null(rewrite_key_to_legacy(layout, k, strlen(k), buf, 3, &len));
    ck_assert_int_eq((int)len, 12);
    ck_assert_uint_ge(rewrite_legacy_max(layout, strlen(k)), 12);
    /* malformed encoding, no rule: the name itself */
    k = "bot:{lk:a%3ab}:l";
    ck_assert_ptr_eq(rewrite_key_to_legacy(layout, k, strlen(k), buf, sizeof buf, &len), k);
    ck_assert_int_eq((int)len, (int)strlen(k));
}
END_TEST

START_TEST(test_internal_names)
{
    static const struct { const char *name; bool internal; } v[] = {
        { "bot:{ch:3}:idx", true }, { "other:{cp:31}:idx", true }, { "bot:{ud:u%3A1}:idx", true },
        { "bot:{meta}:layout", true }, { "other:{meta}:layout", true },
        { "nobot:{meta}:layout", false }, { "bot:{ch:3}:r:x", false }, { "bot:{ch:32}:idx", false },
        { "bot:chat:x", false }, { "bot:{m:c}:z", false }, { "plain", false },
        { "{meta}:layout", false },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        ck_assert_msg(rewrite_is_internal(layout, v[i].name, strlen(v[i].name)) == v[i].internal,
                      "%s", v[i].name);
}
END_TEST

START_TEST(test_layout_ref)
{
    const char *prefixes[] = { "bot" };
    char err[256];
    struct layout *l = layout_load_file("conf/layouts/botmesh-v1.rules", prefixes, 1, err,
                                        sizeof err);
    ck_assert_ptr_nonnull(l);
    struct layout_ref *ref = layout_ref_new(l);
    ck_assert_ptr_eq(layout_ref_get(ref), ref);
    ck_assert_int_eq(ref->refs, 2);
    layout_ref_put(ref);
    ck_assert_int_eq(ref->refs, 1);
    layout_ref_put(ref);          /* freed: ASan/valgrind see a leak otherwise */
    ck_assert_ptr_null(layout_ref_get(NULL));
    layout_ref_put(NULL);
}
END_TEST

/* The pattern KEYS/SCAN send to the masters for a legacy pattern: wide
 * enough for every cluster name it can stand for (prefixes bot, other). */
START_TEST(test_node_pattern)
{
    static const struct { const char *in, *out; bool same; } v[] = {
        { "bot:chat:*", "bot:*", false },
        { "bot:*", "bot:*", false },
        { "bot:", "bot:*", false },
        { "other:lock:a?", "other:*", false },
        { "*", "*", false },
        { "bo*", "bo*", false },
        { "b?t:chat:*", "b*", false },
        { "[bo]ot:*", "*", false },
        { "o*", "o*", false },
        { "plain*", "plain*", true },     /* no prefix's name matches: as it is */
        { "botx:*", "botx:*", true },
        { "x?", "x?", true },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char buf[64];
        size_t len;
        const char *got = listing_node_pattern(layout, v[i].in, strlen(v[i].in), buf, sizeof buf,
                                               &len);
        ck_assert_ptr_nonnull(got);
        ck_assert_msg(len == strlen(v[i].out) && memcmp(got, v[i].out, len) == 0,
                      "%s: got %.*s", v[i].in, (int)len, got);
        ck_assert_msg((got == v[i].in) == v[i].same, "%s", v[i].in);
    }
    char small[3];
    size_t len;
    ck_assert_ptr_null(listing_node_pattern(layout, "bot:x*", 6, small, sizeof small, &len));
}
END_TEST

/* Which commands' replies name keys, and where. */
START_TEST(test_reply_map_of)
{
    static const struct { const char *name; unsigned map; } v[] = {
        { "lmpop", 1 + REWRITE_REPLY_FIRST }, { "zmpop", 1 + REWRITE_REPLY_FIRST },
        { "blpop", 1 + REWRITE_REPLY_FIRST }, { "brpop", 1 + REWRITE_REPLY_FIRST },
        { "blmpop", 1 + REWRITE_REPLY_FIRST }, { "bzpopmin", 1 + REWRITE_REPLY_FIRST },
        { "bzpopmax", 1 + REWRITE_REPLY_FIRST }, { "bzmpop", 1 + REWRITE_REPLY_FIRST },
        { "xread", 1 + REWRITE_REPLY_EACH_FIRST }, { "xreadgroup", 1 + REWRITE_REPLY_EACH_FIRST },
        { "get", 0 }, { "lpop", 0 }, { "zpopmin", 0 }, { "xrange", 0 }, { "blmove", 0 },
        { "keys", 0 }, { "brpoplpush", 0 },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        const struct command *cmd = command_lookup(v[i].name, strlen(v[i].name));
        ck_assert_ptr_nonnull(cmd);
        ck_assert_msg(rewrite_reply_map_of(cmd) == v[i].map, "%s", v[i].name);
    }
    const struct command *xinfo = command_lookup("xinfo", 5);
    ck_assert_uint_eq(rewrite_reply_map_of(command_lookup_sub(xinfo, "stream", 6)), 0);
}
END_TEST

static Suite *rewrite_suite(void)
{
    Suite *s = suite_create("rewrite");
    TCase *t = tcase_create("rewrite");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_loop_test(t, test_request_vectors, 0, (int)(sizeof vectors / sizeof vectors[0]));
    tcase_add_test(t, test_request_large);
    tcase_add_test(t, test_reply_shapes);
    tcase_add_test(t, test_key_to_legacy);
    tcase_add_test(t, test_internal_names);
    tcase_add_test(t, test_layout_ref);
    tcase_add_test(t, test_node_pattern);
    tcase_add_test(t, test_reply_map_of);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rewrite_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
