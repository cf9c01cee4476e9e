/*
 * command: the generated Redis 7.0 table (lookup by any case, subcommands,
 * arity, the RESP it will answer COMMAND with) and command_keys() against
 * what a real redis-server 7.0.15 said.
 *
 * The key vectors were checked against `COMMAND GETKEYS` once, while this
 * test was written (the comment after each is redis-server's answer); the
 * test itself needs no server. A vector is a command line split on single
 * spaces, "" standing for an empty argument; expected is command_keys()'s
 * return (-1 malformed, 0 no keys) and the key positions.
 */
#include "lib/proto/command.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 32

/* A command line as base + args, the way the request parser hands it over. */
struct cmdline {
    char base[512];
    struct resp_arg args[MAX_ARGS];
    int argc;
};

static void cmdline_split(struct cmdline *c, const char *line)
{
    size_t blen = 0;
    const char *p = line;

    c->argc = 0;
    while (*p) {
        const char *end = strchr(p, ' ');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *tok = p;

        if (len == 2 && p[0] == '"' && p[1] == '"')
            len = 0;
        ck_assert_int_lt(c->argc, MAX_ARGS);
        ck_assert_uint_lt(blen + len, sizeof c->base);
        memcpy(c->base + blen, tok, len);
        c->args[c->argc].off = (uint32_t)blen;
        c->args[c->argc].len = (uint32_t)len;
        c->argc++;
        blen += len;
        p += end ? (size_t)(end - p) + 1 : strlen(p);
    }
}

/* The entry a router would use: the subcommand's if args[1] names one. */
static const struct command *cmdline_command(const struct cmdline *c)
{
    const struct command *cmd = command_lookup(c->base + c->args[0].off, c->args[0].len);

    if (cmd && cmd->nsubcommands && c->argc > 1) {
        const struct command *sub = command_lookup_sub(cmd, c->base + c->args[1].off,
                                                       c->args[1].len);
        if (sub)
            cmd = sub;
    }
    return cmd;
}

static const struct command *lookup(const char *name)
{
    return command_lookup(name, strlen(name));
}

static const struct command *lookup_sub(const char *parent, const char *name)
{
    return command_lookup_sub(lookup(parent), name, strlen(name));
}

/* ---------------------------------------------------------------------- */

START_TEST(test_lookup_any_case)
{
    static const struct { const char *in, *fullname; } v[] = {
        { "get", "get" }, { "GET", "get" }, { "gEt", "get" },
        { "ZUNIONSTORE", "zunionstore" }, { "restore-asking", "restore-asking" },
        { "RESTORE-ASKING", "restore-asking" }, { "georadiusbymember_ro", "georadiusbymember_ro" },
        { "acl", "acl" }, { "zunion", "zunion" }, { "zunionstore", "zunionstore" },
        { "xreadgroup", "xreadgroup" }, { "xread", "xread" },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        const struct command *c = lookup(v[i].in);
        ck_assert_msg(c != NULL, "%s not found", v[i].in);
        ck_assert_str_eq(c->fullname, v[i].fullname);
        ck_assert_ptr_null(c->parent);
    }
}
END_TEST

START_TEST(test_lookup_unknown)
{
    static const char *const v[] = {
        "nosuchcommand", "ge", "gett", "getx", "g", "zzzz", "aaa", "client|setname",
        "setname", "get ", " get", "123",
        "a-name-much-longer-than-any-redis-command-name-so-it-is-refused-at-once",
        "GETX", "Gett", "sett", "mget1", "GE", "s", "@et", "get\x80", "\xc7" "et",
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        ck_assert_msg(lookup(v[i]) == NULL, "%s found", v[i]);
    ck_assert_ptr_null(command_lookup("get", 0));
    ck_assert_ptr_null(command_lookup("get\0x", 5));      /* NUL inside the name */
    ck_assert_ptr_nonnull(command_lookup("getx", 3));     /* only len bytes count */
}
END_TEST

START_TEST(test_lookup_sub)
{
    static const struct { const char *parent, *sub, *fullname; } v[] = {
        { "client", "setname", "client|setname" }, { "CLIENT", "SETNAME", "client|setname" },
        { "cluster", "keyslot", "cluster|keyslot" }, { "cluster", "count-failure-reports",
          "cluster|count-failure-reports" },
        { "script", "load", "script|load" }, { "command", "getkeys", "command|getkeys" },
        { "command", "docs", "command|docs" }, { "config", "set", "config|set" },
        { "xinfo", "stream", "xinfo|stream" }, { "object", "encoding", "object|encoding" },
        { "function", "load", "function|load" }, { "memory", "usage", "memory|usage" },
        { "xgroup", "createconsumer", "xgroup|createconsumer" }, { "acl", "whoami", "acl|whoami" },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        const struct command *c = lookup_sub(v[i].parent, v[i].sub);
        ck_assert_msg(c != NULL, "%s %s not found", v[i].parent, v[i].sub);
        ck_assert_str_eq(c->fullname, v[i].fullname);
        ck_assert_ptr_eq(c->parent, lookup(v[i].parent));
    }
    ck_assert_ptr_null(lookup_sub("client", "nosuch"));
    ck_assert_ptr_null(lookup_sub("client", "client|setname"));
    ck_assert_ptr_null(lookup_sub("get", "k"));           /* not a container */
    ck_assert_ptr_null(command_lookup_sub(NULL, "x", 1));
    ck_assert_ptr_null(command_lookup_sub(lookup("client"), "setname", 0));
}
END_TEST

/* Every entry is found by its own name in upper case: the table is sorted
 * the way the binary search needs, at both levels. */
static void check_level(const struct command *cmds, int n, const struct command *parent)
{
    for (int i = 0; i < n; i++) {
        const struct command *c = &cmds[i];
        char up[64], mixed[64], full[128];
        size_t len = strlen(c->name);

        ck_assert_uint_lt(len, sizeof up);
        for (size_t j = 0; j < len; j++) {
            char u = (char)(c->name[j] >= 'a' && c->name[j] <= 'z' ? c->name[j] - 32 : c->name[j]);
            up[j] = u;
            mixed[j] = j % 2 ? u : c->name[j];      /* "GeT", "cLiEnT" */
        }
        if (parent) {
            ck_assert_ptr_eq(command_lookup_sub(parent, up, len), c);
            ck_assert_ptr_eq(command_lookup_sub(parent, mixed, len), c);
            ck_assert_ptr_eq(command_lookup_sub(parent, c->name, len), c);
            snprintf(full, sizeof full, "%s|%s", parent->name, c->name);
        } else {
            ck_assert_ptr_eq(command_lookup(up, len), c);
            ck_assert_ptr_eq(command_lookup(mixed, len), c);
            ck_assert_ptr_eq(command_lookup(c->name, len), c);
            snprintf(full, sizeof full, "%s", c->name);
        }
        ck_assert_str_eq(c->fullname, full);
        ck_assert_ptr_eq(c->parent, parent);
        if (i > 0)
            ck_assert_msg(strcmp(cmds[i - 1].name, c->name) < 0, "%s before %s",
                          cmds[i - 1].name, c->name);
        check_level(c->subcommands, c->nsubcommands, c);
    }
}

START_TEST(test_table_sorted_and_complete)
{
    ck_assert_int_eq(command_table_size, 240);            /* COMMAND COUNT of 7.0.15 */
    check_level(command_table, command_table_size, NULL);
    ck_assert_int_eq(lookup("client")->nsubcommands, 16);
    ck_assert_int_eq(lookup("cluster")->nsubcommands, 27);
}
END_TEST

/* The RESP the proxy answers COMMAND INFO / DOCS with is whole and names
 * the command. */
static void check_resp(const struct command *c)
{
    char want[160];
    int n;

    ck_assert_uint_eq(strlen(c->info_resp), c->info_resp_len);
    ck_assert_uint_eq(strlen(c->docs_resp), c->docs_resp_len);
    n = snprintf(want, sizeof want, "*10\r\n$%zu\r\n%s\r\n:%d\r\n", strlen(c->fullname),
                 c->fullname, c->arity);
    ck_assert_msg(strncmp(c->info_resp, want, (size_t)n) == 0, "INFO of %s", c->fullname);
    n = snprintf(want, sizeof want, "$%zu\r\n%s\r\n*", strlen(c->fullname), c->fullname);
    ck_assert_msg(strncmp(c->docs_resp, want, (size_t)n) == 0, "DOCS of %s", c->fullname);
    ck_assert(c->info_resp_len > 4 && memcmp(c->info_resp + c->info_resp_len - 2, "\r\n", 2) == 0);
    ck_assert(memcmp(c->docs_resp + c->docs_resp_len - 2, "\r\n", 2) == 0);
    /* RESP3: the same entry's header, its docs a map */
    ck_assert_uint_eq(strlen(c->info_resp3), c->info_resp3_len);
    ck_assert_uint_eq(strlen(c->docs_resp3), c->docs_resp3_len);
    n = snprintf(want, sizeof want, "*10\r\n$%zu\r\n%s\r\n:%d\r\n~", strlen(c->fullname),
                 c->fullname, c->arity);
    ck_assert_msg(strncmp(c->info_resp3, want, (size_t)n) == 0, "RESP3 INFO of %s", c->fullname);
    n = snprintf(want, sizeof want, "$%zu\r\n%s\r\n%%", strlen(c->fullname), c->fullname);
    ck_assert_msg(strncmp(c->docs_resp3, want, (size_t)n) == 0, "RESP3 DOCS of %s", c->fullname);
    ck_assert(memcmp(c->info_resp3 + c->info_resp3_len - 2, "\r\n", 2) == 0);
    ck_assert(memcmp(c->docs_resp3 + c->docs_resp3_len - 2, "\r\n", 2) == 0);
    for (int i = 0; i < c->nsubcommands; i++)
        check_resp(&c->subcommands[i]);
}

START_TEST(test_table_resp)
{
    static const char get_info[] =
        "*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"
        "*3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n"
        "*2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n"
        "$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n"
        "*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n"
        "$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n";
    /* as redis-server 7.0 writes it after HELLO 3: sets and maps */
    static const char get_info3[] =
        "*10\r\n$3\r\nget\r\n:2\r\n~2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"
        "~3\r\n+@read\r\n+@string\r\n+@fast\r\n~0\r\n~1\r\n%3\r\n$5\r\nflags\r\n"
        "~2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n%2\r\n$4\r\ntype\r\n"
        "$5\r\nindex\r\n$4\r\nspec\r\n%1\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n"
        "%2\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n%3\r\n$7\r\nlastkey\r\n:0\r\n"
        "$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n~0\r\n";
    const struct command *get = lookup("get");
    size_t len;

    for (int i = 0; i < command_table_size; i++)
        check_resp(&command_table[i]);
    ck_assert_uint_eq(get->info_resp_len, sizeof get_info - 1);
    ck_assert(memcmp(get->info_resp, get_info, sizeof get_info - 1) == 0);
    ck_assert_uint_eq(get->info_resp3_len, sizeof get_info3 - 1);
    ck_assert(memcmp(get->info_resp3, get_info3, sizeof get_info3 - 1) == 0);
    ck_assert_ptr_eq(command_info_resp(get, RESP2, &len), get->info_resp);
    ck_assert_uint_eq(len, get->info_resp_len);
    ck_assert_ptr_eq(command_info_resp(get, RESP3, &len), get->info_resp3);
    ck_assert_uint_eq(len, get->info_resp3_len);
    ck_assert_ptr_eq(command_docs_resp(get, RESP2, &len), get->docs_resp);
    ck_assert_uint_eq(len, get->docs_resp_len);
    ck_assert_ptr_eq(command_docs_resp(get, RESP3, &len), get->docs_resp3);
    ck_assert_uint_eq(len, get->docs_resp3_len);
}
END_TEST

static int has_category(const struct command *c, const char *name)
{
    for (int i = 0; i < command_acl_category_count; i++)
        if (strcmp(command_acl_category_names[i], name) == 0)
            return (c->acl_categories >> i) & 1;
    ck_abort_msg("no ACL category %s", name);
    return 0;
}

START_TEST(test_table_fields)
{
    const struct command *get = lookup("get"), *set = lookup("set");
    const struct command *keys = lookup("keys"), *dbsize = lookup("dbsize");
    const struct command *ks = lookup("zunionstore");

    ck_assert_uint_eq(get->flags, CMD_READONLY | CMD_FAST);
    ck_assert_uint_eq(set->flags, CMD_WRITE | CMD_DENYOOM);
    ck_assert(lookup("eval")->flags & CMD_MOVABLE_KEYS);
    ck_assert(lookup("eval")->flags & CMD_NO_MANDATORY_KEYS);
    ck_assert(lookup("blpop")->flags & CMD_BLOCKING);
    ck_assert(lookup_sub("client", "setname")->flags & CMD_NOSCRIPT);
    ck_assert(has_category(get, "read") && has_category(get, "string") &&
              has_category(get, "fast") && !has_category(get, "write"));
    ck_assert(has_category(lookup("flushall"), "dangerous"));
    ck_assert_uint_eq(keys->tips, CMD_TIP_REQUEST_ALL_SHARDS | CMD_TIP_NONDETERMINISTIC_OUTPUT_ORDER);
    ck_assert_uint_eq(dbsize->tips, CMD_TIP_REQUEST_ALL_SHARDS | CMD_TIP_RESPONSE_AGG_SUM);
    ck_assert_int_eq(get->first_key, 1);
    ck_assert_int_eq(lookup("mset")->key_step, 2);
    ck_assert_int_eq(lookup("mget")->last_key, -1);

    ck_assert_int_eq(ks->nkeyspecs, 2);
    ck_assert_uint_eq(ks->keyspecs[0].flags, KSPEC_OW | KSPEC_UPDATE);
    ck_assert_int_eq(ks->keyspecs[1].bs, KSPEC_BS_INDEX);
    ck_assert_int_eq(ks->keyspecs[1].bs_u.index.pos, 2);
    ck_assert_int_eq(ks->keyspecs[1].fk, KSPEC_FK_KEYNUM);
    ck_assert_int_eq(ks->keyspecs[1].fk_u.keynum.keynumidx, 0);
    ck_assert_int_eq(ks->keyspecs[1].fk_u.keynum.firstkey, 1);
    ck_assert_int_eq(lookup("xread")->keyspecs[0].bs, KSPEC_BS_KEYWORD);
    ck_assert_str_eq(lookup("xread")->keyspecs[0].bs_u.keyword.keyword, "STREAMS");
    ck_assert_int_eq(lookup("xread")->keyspecs[0].fk_u.range.limit, 2);
    ck_assert_int_eq(lookup("migrate")->keyspecs[1].bs_u.keyword.startfrom, -2);
    ck_assert(lookup("migrate")->keyspecs[1].flags & KSPEC_INCOMPLETE);
    ck_assert_int_eq(lookup("sort")->keyspecs[2].bs, KSPEC_BS_UNKNOWN);
    ck_assert(lookup("spublish")->keyspecs[0].flags & KSPEC_NOT_KEY);
}
END_TEST

/* The proxy's own facts (CMDP_*): what the code used to find by comparing
 * names; every blocking command says where its timeout is. */
START_TEST(test_proxy_facts)
{
    static const struct { const char *name; uint32_t facts; } want[] = {
        { "eval", CMDP_SCRIPT }, { "evalsha", CMDP_SCRIPT | CMDP_SCRIPT_SHA },
        { "evalsha_ro", CMDP_SCRIPT_RO | CMDP_SCRIPT_SHA }, { "fcall_ro", CMDP_SCRIPT_RO },
        { "lpop", CMDP_NULL_ARRAY_COUNTED }, { "zmpop", CMDP_NULL_ARRAY | CMDP_REPLY_KEY_FIRST },
        { "blpop", CMDP_TIMEOUT_LAST | CMDP_REPLY_KEY_FIRST },
        { "bzmpop", CMDP_TIMEOUT_FIRST | CMDP_REPLY_KEY_FIRST },
        { "xreadgroup", CMDP_TIMEOUT_BLOCK | CMDP_REPLY_KEY_EACH_FIRST },
        { "get", 0 }, { "script", 0 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct command *c = command_lookup(want[i].name, strlen(want[i].name));
        ck_assert_ptr_nonnull(c);
        ck_assert_msg(c->proxy_facts == want[i].facts, "%s: 0x%x, want 0x%x", want[i].name,
                      c->proxy_facts, want[i].facts);
    }
    const uint32_t timeout = CMDP_TIMEOUT_LAST | CMDP_TIMEOUT_FIRST | CMDP_TIMEOUT_BLOCK;
    int blocking = 0;
    for (int i = 0; i < command_table_size; i++) {
        const struct command *c = &command_table[i];
        if (!(c->flags & CMD_BLOCKING))
            continue;
        blocking++;
        ck_assert_msg(c->proxy_facts & timeout, "%s: blocking, no timeout fact", c->name);
    }
    ck_assert_int_eq(blocking, 10);
}
END_TEST

START_TEST(test_arity)
{
    static const struct { const char *line; int ok; } v[] = {
        { "get k", 1 }, { "get", 0 }, { "get k x", 0 },
        { "set k v", 1 }, { "set k v ex 10 nx get", 1 }, { "set k", 0 },
        { "mget k", 1 }, { "mget", 0 },
        { "ping", 1 }, { "ping msg", 1 },
        { "client setname x", 1 }, { "client setname", 0 }, { "client setname x y", 0 },
        { "config set a b", 1 }, { "config set a b c d", 1 }, { "config set a", 0 },
        { "object encoding k", 1 }, { "object encoding", 0 },
        { "cluster keyslot k", 1 }, { "command", 1 }, { "command getkeys get", 0 }, { "command getkeys get k", 1 },
        { "command getkeys", 0 }, { "client", 0 }, { "eval s 0", 1 }, { "eval s", 0 },
        { "zunionstore d 1", 0 }, { "zunionstore d 1 a", 1 },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        struct cmdline c;
        cmdline_split(&c, v[i].line);
        const struct command *cmd = cmdline_command(&c);
        ck_assert_msg(cmd != NULL, "%s", v[i].line);
        ck_assert_msg(command_arity_ok(cmd, c.argc) == v[i].ok, "%s", v[i].line);
    }
}
END_TEST

/* ---------------------------------------------------------------------- */

static const struct {
    const char *line;
    int n;              /* command_keys() */
    int keys[8];
} key_vectors[] = {
    /* index + range: one key, any case; SET/BITFIELD's variable flags do not move the key */
    { "get k", 1, { 1 } }, /* k */
    { "GET k", 1, { 1 } }, /* k */
    { "GeT k", 1, { 1 } }, /* k */
    { "set k v", 1, { 1 } }, /* k */
    { "set k v get", 1, { 1 } }, /* k */
    { "set k v ex 10 get", 1, { 1 } }, /* k */
    { "getex k persist", 1, { 1 } }, /* k */
    { "bitfield k get u8 0", 1, { 1 } }, /* k */
    { "bitfield k incrby u8 0 1 get u8 0", 1, { 1 } }, /* k */
    { "bitfield_ro k get u8 0", 1, { 1 } }, /* k */

    /* index + range: to the end (lastkey -1), every other (keystep 2), to a fixed last */
    { "mget k1 k2 k3", 3, { 1, 2, 3 } }, /* k1 k2 k3 */
    { "del k1 k2 k3", 3, { 1, 2, 3 } }, /* k1 k2 k3 */
    { "exists k1 k2", 2, { 1, 2 } }, /* k1 k2 */
    { "mset k1 v1 k2 v2 k3 v3", 3, { 1, 3, 5 } }, /* k1 k2 k3 */
    { "msetnx k1 v1 k2 v2", 2, { 1, 3 } }, /* k1 k2 */
    { "rename a b", 2, { 1, 2 } }, /* a b */
    { "copy src dst replace", 2, { 1, 2 } }, /* src dst */
    { "smove src dst m", 2, { 1, 2 } }, /* src dst */
    { "lmove src dst left right", 2, { 1, 2 } }, /* src dst */
    { "blmove src dst left right 0", 2, { 1, 2 } }, /* src dst */
    { "brpoplpush src dst 0", 2, { 1, 2 } }, /* src dst */
    { "bitop and dst s1 s2 s3", 4, { 2, 3, 4, 5 } }, /* dst s1 s2 s3 */

    /* index + range: all but the timeout (lastkey -2); two specs in a row */
    { "blpop k1 k2 k3 0", 3, { 1, 2, 3 } }, /* k1 k2 k3 */
    { "brpop k1 0", 1, { 1 } }, /* k1 */
    { "bzpopmin z1 z2 1.5", 2, { 1, 2 } }, /* z1 z2 */
    { "pfcount h1 h2", 2, { 1, 2 } }, /* h1 h2 */
    { "pfmerge d h1 h2", 3, { 1, 2, 3 } }, /* d h1 h2 */
    { "lcs a b", 2, { 1, 2 } }, /* a b */
    { "sinterstore d s1 s2", 3, { 1, 2, 3 } }, /* d s1 s2 */
    { "sunion s1 s2 s3", 3, { 1, 2, 3 } }, /* s1 s2 s3 */
    { "geosearchstore d s frommember m byradius 1 km", 2, { 1, 2 } }, /* d s */

    /* subcommands of containers: args[0] the container, args[1] the subcommand */
    { "object encoding k", 1, { 2 } }, /* k */
    { "object freq k", 1, { 2 } }, /* k */
    { "xinfo stream s", 1, { 2 } }, /* s */
    { "xinfo groups s", 1, { 2 } }, /* s */
    { "xinfo consumers s g", 1, { 2 } }, /* s */
    { "memory usage k", 1, { 2 } }, /* k */
    { "memory usage k samples 5", 1, { 2 } }, /* k */
    { "xgroup create s g $", 1, { 2 } }, /* s */
    { "xgroup destroy s g", 1, { 2 } }, /* s */

    /* keyword STREAMS + range with limit 2 (half of the rest): XREAD, XREADGROUP */
    { "xadd s * f v", 1, { 1 } }, /* s */
    { "xread streams s1 0", 1, { 2 } }, /* s1 */
    { "xread count 1 block 0 streams s1 s2 0 0", 2, { 6, 7 } }, /* s1 s2 */
    { "XREAD STREAMS s1 s2 s3 1 2 3", 3, { 2, 3, 4 } }, /* s1 s2 s3 */
    { "xread streams a b c", 1, { 2 } }, /* a */
    { "xread count 1 streams", -1, { 0 } }, /* Invalid arguments */
    { "xread streams streams 0", 1, { 2 } }, /* streams */
    { "xreadgroup group g c streams s1 0", 1, { 5 } }, /* s1 */
    { "xreadgroup group streams c streams s1 s2 0 0", 2, { 5, 6 } }, /* s1 s2 */
    { "xreadgroup group g streams count 1 streams s1 0", 1, { 7 } }, /* s1 */
    { "xreadgroup group g c noack streams s1", -1, { 0 } }, /* Invalid arguments */

    /* keyword STORE/STOREDIST specs; the GEORADIUS rule when the keyword ends the command */
    { "georadius k 0 0 1 km", 1, { 1 } }, /* k */
    { "georadius k 0 0 1 km store d", 2, { 1, 7 } }, /* k d */
    { "georadius k 0 0 1 km storedist d", 2, { 1, 7 } }, /* k d */
    { "georadius k 0 0 1 km STOREDIST a STORE b", 3, { 1, 9, 7 } }, /* k b a */
    { "georadius k 0 0 1 km store a store b", 2, { 1, 7 } }, /* k a */
    { "georadius k 0 0 1 km withdist store", 1, { 1 } }, /* k */
    { "georadiusbymember k m 1 km store d", 2, { 1, 6 } }, /* k d */
    { "georadiusbymember k m 1 km storedist d withcoord", 2, { 1, 6 } }, /* k d */
    { "georadius_ro k 0 0 1 km", 1, { 1 } }, /* k */

    /* unknown specs: the SORT rule (last STORE, BY/LIMIT/GET arguments skipped) */
    { "sort k", 1, { 1 } }, /* k */
    { "sort k store d", 2, { 1, 3 } }, /* k d */
    { "sort k by w limit 0 1 get # store d", 2, { 1, 10 } }, /* k d */
    { "sort k store d1 store d2", 2, { 1, 5 } }, /* k d2 */
    { "sort k get store store d", 2, { 1, 5 } }, /* k d */
    { "sort k limit store x store d", 2, { 1, 6 } }, /* k d */
    { "sort k by store store d", 2, { 1, 5 } }, /* k d */
    { "sort k store", 1, { 1 } }, /* k */
    { "SORT k STORE d ALPHA", 2, { 1, 3 } }, /* k d */
    { "sort_ro k by w get #", 1, { 1 } }, /* k */

    /* keyword KEYS from the end (startfrom -2), INCOMPLETE: the MIGRATE rule */
    { "migrate h 1 k 0 5000", 1, { 3 } }, /* k */
    { "migrate h 1 \"\" 0 5000 keys a b c", 3, { 7, 8, 9 } }, /* a b c */
    { "migrate h 1 \"\" 0 5000 copy replace keys a b", 2, { 9, 10 } }, /* a b */
    { "migrate h 1 \"\" 0 5000 auth keys keys a b", 2, { 9, 10 } }, /* a b */
    { "migrate h 1 \"\" 0 5000 auth2 u keys keys a", 1, { 10 } }, /* a */
    { "migrate h 1 k 0 5000 keys a b", -1, { 0 } }, /* Invalid arguments */
    { "migrate h 1 k 0 5000 replace", 1, { 3 } }, /* k */

    /* keynum: EVAL, EVALSHA, *_RO, FCALL (numkeys 0 is valid: no keys) */
    { "eval s 0", 0, { 0 } }, /* (empty array) */
    { "eval s 2 k1 k2 a1", 2, { 3, 4 } }, /* k1 k2 */
    { "eval s 1 k1", 1, { 3 } }, /* k1 */
    { "evalsha sha 2 k1 k2", 2, { 3, 4 } }, /* k1 k2 */
    { "eval_ro s 1 k1 a", 1, { 3 } }, /* k1 */
    { "evalsha_ro sha 1 k1", 1, { 3 } }, /* k1 */
    { "fcall f 2 k1 k2 a", 2, { 3, 4 } }, /* k1 k2 */
    { "fcall_ro f 1 k1", 1, { 3 } }, /* k1 */
    { "fcall f 0 a b", 0, { 0 } }, /* (empty array) */

    /* malformed numkeys: not an integer, negative, past the end; or not strict
     * ("+1", "01", "1abc"), which Redis's GETKEYS reads with atoi() */
    { "eval s x k1", -1, { 0 } }, /* (empty array) */
    { "eval s -1 k1", -1, { 0 } }, /* (empty array) */
    { "eval s 3 k1", -1, { 0 } }, /* (empty array) */
    { "eval s +1 k1", -1, { 0 } }, /* k1; its atoi() fallback, see command.h */
    { "eval s 01 k1", -1, { 0 } }, /* k1; its atoi() fallback, see command.h */
    { "eval s 1abc k1", -1, { 0 } }, /* k1; its atoi() fallback, see command.h */

    /* keynum: numkeys commands with and without a destination key */
    { "zunionstore d 2 a b", 3, { 1, 3, 4 } }, /* d a b */
    { "zunionstore d 2 a b weights 1 2 aggregate max", 3, { 1, 3, 4 } }, /* d a b */
    { "zinterstore d 3 a b c", 4, { 1, 3, 4, 5 } }, /* d a b c */
    { "zdiffstore d 1 a", 2, { 1, 3 } }, /* d a */
    { "zunion 2 a b withscores", 2, { 2, 3 } }, /* a b */
    { "zinter 1 a", 1, { 2 } }, /* a */
    { "zdiff 2 a b", 2, { 2, 3 } }, /* a b */
    { "sintercard 2 a b limit 1", 2, { 2, 3 } }, /* a b */
    { "zintercard 3 a b c", 3, { 2, 3, 4 } }, /* a b c */
    { "lmpop 2 a b left count 1", 2, { 2, 3 } }, /* a b */
    { "blmpop 0 2 a b left", 2, { 3, 4 } }, /* a b */
    { "zmpop 1 a min", 1, { 2 } }, /* a */
    { "bzmpop 1.5 2 a b max count 2", 2, { 3, 4 } }, /* a b */

    /* malformed numkeys where a key is mandatory: 0, not a number, negative, past the end */
    { "zunionstore d 0 a", -1, { 0 } }, /* Invalid arguments */
    { "zunionstore d x a", -1, { 0 } }, /* Invalid arguments */
    { "zunionstore d -1 a", -1, { 0 } }, /* Invalid arguments */
    { "zunionstore d 5 a b", -1, { 0 } }, /* Invalid arguments */
    { "zunionstore d 2abc a b", -1, { 0 } }, /* a b d; its atoi() fallback, see command.h */
    { "zunion 0 a", -1, { 0 } }, /* Invalid arguments */
    { "zunion 4294967297 a", -1, { 0 } }, /* a; Redis truncates numkeys to int, see command.h */
    { "zunionstore d 4294967298 a b", -1, { 0 } }, /* d a b; the same truncation */
    { "lmpop 99999999999999999999 a left", -1, { 0 } }, /* Invalid arguments */
    { "zunion x a", -1, { 0 } }, /* Invalid arguments */
    { "sintercard 3 a b", -1, { 0 } }, /* Invalid arguments */
    { "lmpop 0 a left", -1, { 0 } }, /* Invalid arguments */
    { "lmpop -2 a left", -1, { 0 } }, /* Invalid arguments */
    { "blmpop 0 x a left", -1, { 0 } }, /* Invalid arguments */
    { "bzmpop 0 3 a b min", 3, { 3, 4, 5 } }, /* a b min */

    /* commands without keys; NOT_KEY specs (shard channels) are not keys */
    { "ping", 0, { 0 } }, /* (no arguments to ask about) */
    { "echo hi", 0, { 0 } }, /* no key arguments */
    { "client setname x", 0, { 0 } }, /* no key arguments */
    { "client getname", 0, { 0 } }, /* no key arguments */
    { "cluster keyslot k", 0, { 0 } }, /* no key arguments */
    { "cluster info", 0, { 0 } }, /* no key arguments */
    { "script load s", 0, { 0 } }, /* no key arguments */
    { "command getkeys get k", 0, { 0 } }, /* no key arguments */
    { "command info get", 0, { 0 } }, /* no key arguments */
    { "config set a b", 0, { 0 } }, /* no key arguments */
    { "config get maxmemory", 0, { 0 } }, /* no key arguments */
    { "function load code", 0, { 0 } }, /* no key arguments */
    { "info", 0, { 0 } }, /* (no arguments to ask about) */
    { "publish ch m", 0, { 0 } }, /* no key arguments */
    { "subscribe a b", 0, { 0 } }, /* no key arguments */
    { "spublish ch m", 0, { 0 } }, /* no key arguments */
    { "ssubscribe c1 c2", 0, { 0 } }, /* no key arguments */
    { "sunsubscribe c1", 0, { 0 } }, /* no key arguments */

    /* more commands with and without keys */
    { "keys *", 0, { 0 } }, /* no key arguments */
    { "scan 0", 0, { 0 } }, /* no key arguments */
    { "dbsize", 0, { 0 } }, /* (no arguments to ask about) */
    { "watch k1 k2", 2, { 1, 2 } }, /* k1 k2 */
    { "unwatch", 0, { 0 } }, /* (no arguments to ask about) */
    { "pfdebug getreg k", 1, { 2 } }, /* k */
    { "debug object k", 0, { 0 } }, /* no key arguments */
    { "restore k 0 payload", 1, { 1 } }, /* k */
    { "restore-asking k 0 payload", 1, { 1 } }, /* k */
    { "touch k1 k2", 2, { 1, 2 } }, /* k1 k2 */
    { "wait 1 0", 0, { 0 } }, /* no key arguments */
    { "xread count 1 block 0", -1, { 0 } }, /* Invalid arguments */
    { "migrate h 1 k 0 5000 auth keys", 1, { 3 } }, /* k */
    { "migrate h 1 \"\" 0 5000", 1, { 3 } }, /* "" */
};

START_TEST(test_keys_vectors)
{
    for (size_t i = 0; i < sizeof key_vectors / sizeof key_vectors[0]; i++) {
        struct cmdline c;
        int keys[MAX_ARGS], n;

        cmdline_split(&c, key_vectors[i].line);
        const struct command *cmd = cmdline_command(&c);
        ck_assert_msg(cmd != NULL, "%s: unknown", key_vectors[i].line);
        n = command_keys(cmd, c.base, c.args, c.argc, keys, MAX_ARGS);
        ck_assert_msg(n == key_vectors[i].n, "%s: %d keys, want %d",
                      key_vectors[i].line, n, key_vectors[i].n);
        for (int k = 0; k < n; k++)
            ck_assert_msg(keys[k] == key_vectors[i].keys[k], "%s: key %d at %d, want %d",
                          key_vectors[i].line, k, keys[k], key_vectors[i].keys[k]);
    }
}
END_TEST

/* Not arity-checked first, too few arguments for the specs: -1, and no read
 * past argc. */
START_TEST(test_keys_too_few_args)
{
    static const char *const v[] = {
        "get", "mset", "rename a", "sort", "sort_ro", "georadius", "migrate h 1",
        "xreadgroup group g c count 1", "zunionstore d", "eval", "eval s", "lmpop",
        "object encoding", "memory usage", "xinfo stream", "blmpop 0",
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        struct cmdline c;
        int keys[MAX_ARGS];
        cmdline_split(&c, v[i]);
        const struct command *cmd = cmdline_command(&c);
        ck_assert_msg(cmd != NULL, "%s", v[i]);
        ck_assert_msg(command_keys(cmd, c.base, c.args, c.argc, keys, MAX_ARGS) == -1, "%s", v[i]);
    }
}
END_TEST

START_TEST(test_has_keys)
{
    static const struct { const char *line; int has; } v[] = {
        { "get k", 1 }, { "eval s 0", 1 }, { "xread streams s 0", 1 }, { "sort k", 1 },
        { "object encoding k", 1 }, { "memory usage k", 1 }, { "ping", 0 }, { "publish c m", 0 },
        { "spublish c m", 0 }, { "client setname x", 0 }, { "object help", 0 },
        { "cluster keyslot k", 0 }, { "debug object k", 0 },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        struct cmdline c;
        cmdline_split(&c, v[i].line);
        ck_assert_msg(command_has_keys(cmdline_command(&c)) == v[i].has, "%s", v[i].line);
    }
}
END_TEST

/* More keys than room: all are counted, only max written. */
START_TEST(test_keys_max)
{
    static const char *const v[] = { "mget a b c d e", "sort k store d", "zunionstore d 3 a b c" };
    static const int want[] = { 5, 2, 4 };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        struct cmdline c;
        int keys[4] = { -7, -7, -7, -7 };
        cmdline_split(&c, v[i]);
        ck_assert_int_eq(command_keys(cmdline_command(&c), c.base, c.args, c.argc, keys, 1),
                         want[i]);
        ck_assert_int_eq(keys[0], 1);
        ck_assert_int_eq(keys[1], -7);
        ck_assert_int_eq(command_keys(cmdline_command(&c), c.base, c.args, c.argc, NULL, 0),
                         want[i]);
    }
}
END_TEST

/* The shard channel of SPUBLISH & co hashes like a key, but is not one. */
START_TEST(test_keys_not_keys)
{
    static const struct { const char *line; int n; int first; } v[] = {
        { "spublish ch m", 1, 1 }, { "ssubscribe c1 c2", 2, 1 }, { "sunsubscribe c1", 1, 1 },
        { "get k", 1, 1 }, { "publish ch m", 0, 0 },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        struct cmdline c;
        int keys[MAX_ARGS];
        cmdline_split(&c, v[i].line);
        const struct command *cmd = cmdline_command(&c);
        int n = command_keys_ex(cmd, c.base, c.args, c.argc, keys, MAX_ARGS, COMMAND_KEYS_NOT_KEYS);
        ck_assert_msg(n == v[i].n, "%s: %d", v[i].line, n);
        if (n > 0)
            ck_assert_int_eq(keys[0], v[i].first);
    }
}
END_TEST

/* Keys are found in the arguments where they lie, not at a fixed offset:
 * the same command at the end of a larger buffer (as in a pipeline). */
START_TEST(test_keys_offsets)
{
    static const char buf[] = "xxxxXREADGROUPGROUPgcSTREAMSs1s200";
    struct resp_arg args[] = { { 4, 10 }, { 14, 5 }, { 19, 1 }, { 20, 1 }, { 21, 7 },
                               { 28, 2 }, { 30, 2 }, { 32, 1 }, { 33, 1 } };
    int keys[4];

    ck_assert_int_eq(command_keys(lookup("xreadgroup"), buf, args, 9, keys, 4), 2);
    ck_assert_int_eq(keys[0], 5);
    ck_assert_int_eq(keys[1], 6);
}
END_TEST

static Suite *command_suite(void)
{
    Suite *s = suite_create("command");
    TCase *t = tcase_create("command");

    tcase_add_test(t, test_lookup_any_case);
    tcase_add_test(t, test_lookup_unknown);
    tcase_add_test(t, test_lookup_sub);
    tcase_add_test(t, test_table_sorted_and_complete);
    tcase_add_test(t, test_table_resp);
    tcase_add_test(t, test_table_fields);
    tcase_add_test(t, test_proxy_facts);
    tcase_add_test(t, test_arity);
    tcase_add_test(t, test_keys_vectors);
    tcase_add_test(t, test_keys_too_few_args);
    tcase_add_test(t, test_has_keys);
    tcase_add_test(t, test_keys_max);
    tcase_add_test(t, test_keys_not_keys);
    tcase_add_test(t, test_keys_offsets);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(command_suite());
    int failed;

    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
