/*
 * acl: the rule grammar (accepted and refused rules), the permission
 * bitmaps built from rules in order, the default user's semantics
 * (requirepass, a `user default` line, none), logins, and that a login
 * costs the same whether the user exists or not and wherever a wrong
 * password differs (the timing-oracle guard).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxy/config/acl.h"
#include "proxy/config/aclrule.h"
#include "proxy/config/config.h"
#include "keylayout/layout.h"
#include "keylayout/layoutload.h"

static char err[512];

static const struct command *cmd(const char *fullname)
{
    const char *bar = strchr(fullname, '|');
    const struct command *c = command_lookup(fullname, bar ? (size_t)(bar - fullname)
                                                           : strlen(fullname));
    ck_assert_ptr_nonnull(c);
    if (bar)
        c = command_lookup_sub(c, bar + 1, strlen(bar + 1));
    ck_assert_msg(c != NULL, "no command %s", fullname);
    return c;
}

/* A config with user lines given as argv strings ("bob pw +get"), each
 * split at blanks. */
static struct acl *build_with(const char *requirepass, const char *const *lines, int n,
                              const struct layout *layout)
{
    struct config c;
    config_defaults(&c);
    c.requirepass = (char *)requirepass;
    c.users = calloc((size_t)n + 1, sizeof *c.users);
    for (int i = 0; i < n; i++) {
        char *copy = strdup(lines[i]), *save = NULL;
        c.users[i].argv = calloc(32, sizeof(char *));
        for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
            c.users[i].argv[c.users[i].argc++] = w;
    }
    c.nusers = n;
    struct acl *a = acl_build(&c, layout, err, sizeof err);
    ck_assert_msg(a != NULL, "%s", err);
    for (int i = 0; i < n; i++) {
        free(c.users[i].argv[0]);       /* the strdup'd line */
        free(c.users[i].argv);
    }
    free(c.users);
    return a;
}

static struct acl *build(const char *requirepass, const char *const *lines, int n)
{
    return build_with(requirepass, lines, n, NULL);
}

static const struct acl_user *login(const struct acl *a, const char *user, const char *pass)
{
    return acl_authenticate(a, user, strlen(user), pass, strlen(pass));
}

/* The command bit of u's own rules (these users have no selector). */
static int acl_allows(const struct acl_user *u, const struct command *c)
{
    return acl_selector_allows(&u->selectors[0], c);
}

/* acl_check of a command given as words ("SET k v"); *pos the refused
 * argument. */
static enum acl_verdict check(const struct acl_user *u, const char *words, int *pos)
{
    char base[512], copy[512], *save = NULL;
    struct resp_arg args[16];
    int argc = 0;
    size_t at = 0;
    snprintf(copy, sizeof copy, "%s", words);
    for (char *w = strtok_r(copy, " ", &save); w && argc < 16; w = strtok_r(NULL, " ", &save)) {
        size_t len = strlen(w);
        memcpy(base + at, w, len);
        args[argc].off = (uint32_t)at;
        args[argc++].len = (uint32_t)len;
        at += len;
    }
    const char *bar = strchr(words, ' ');
    const struct command *c = command_lookup(words, bar ? (size_t)(bar - words) : strlen(words));
    ck_assert_ptr_nonnull(c);
    if (c->nsubcommands && argc > 1)
        c = command_lookup_sub(c, base + args[1].off, args[1].len);
    ck_assert_ptr_nonnull(c);
    int p;
    enum acl_verdict v = acl_check_fast(u, c, NULL, base, args, argc, &p);
    if (pos)
        *pos = p;
    return v;
}

static int rule_ok(const char *rule, char *why, size_t whylen)
{
    char *const rules[] = { (char *)rule };
    why[0] = '\0';
    return acl_rules_check(rules, 1, why, whylen);
}

/* ---- grammar ---- */

static const struct { const char *rule; int ok; } rule_vectors[] = {
    { "allcommands", 1 }, { "nocommands", 1 }, { "ALLCOMMANDS", 1 },
    { "+@all", 1 }, { "-@all", 1 }, { "+@read", 1 }, { "-@dangerous", 1 },
    { "+@CONNECTION", 1 }, { "+get", 1 }, { "-GET", 1 }, { "+client", 1 },
    { "+client|setname", 1 }, { "-config|set", 1 },
    { "get", 0 }, { "+nosuchcommand", 0 }, { "+@nosuchcategory", 0 },
    { "+get|foo", 1 }, { "-get|foo", 0 }, { "+get|", 0 }, { "+client|nosuch", 0 }, { "+", 0 }, { "+@", 0 }, { "", 0 },
    { "~*", 1 }, { "&*", 1 }, { "allkeys", 1 }, { "allchannels", 1 }, { "resetkeys", 1 },
    { "resetchannels", 1 }, { "~user:*", 1 }, { "%R~ro:*", 1 }, { "%W~wo:*", 1 },
    { "%RW~rw:*", 1 }, { "%wr~x", 1 }, { "%~x", 0 }, { "%RR~x", 0 }, { "%X~x", 0 },
    { "%R", 0 }, { "&news:*", 1 }, { ">pw", 1 }, { "<pw", 0 }, { "on", 1 }, { "off", 1 },
    { "nopass", 1 }, { "resetpass", 1 }, { "reset", 1 }, { "clearselectors", 1 },
    { "#5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8", 1 },
    { "#5E884898DA28047151D0E56F8DC6292773603D0D6AABBDD62A11EF721D1542D8", 0 },
    { "#abc", 0 }, { "!abc", 0 }, { "(~x:* +get)", 1 }, { "(on)", 0 }, { "(", 0 },
    { "skip-sanitize-payload", 1 }, { "sanitize-payload", 1 },
};

START_TEST(test_rule_grammar)
{
    char why[200] = "";
    int rc = rule_ok(rule_vectors[_i].rule, why, sizeof why);
    ck_assert_msg((rc == 0) == rule_vectors[_i].ok, "'%s': %d (%s)", rule_vectors[_i].rule, rc,
                  why);
    if (!rule_vectors[_i].ok)
        ck_assert_msg(why[0] != '\0', "'%s' refused without a reason", rule_vectors[_i].rule);
}
END_TEST

/* ---- permissions ---- */

START_TEST(test_rules_in_order)
{
    const char *const lines[] = {
        "bob pw +get +@connection -client|kill",
        "carl pw allcommands -@dangerous +flushall",
        "dan pw",
        "eve pw +client -client|list",
        "fay pw +@all -get nocommands +set",
    };
    struct acl *a = build(NULL, lines, 5);
    const struct acl_user *bob = login(a, "bob", "pw"), *carl = login(a, "carl", "pw"),
                          *dan = login(a, "dan", "pw"), *eve = login(a, "eve", "pw"),
                          *fay = login(a, "fay", "pw");
    ck_assert_ptr_nonnull(bob);
    ck_assert(acl_allows(bob, cmd("get")));
    ck_assert(!acl_allows(bob, cmd("set")));
    ck_assert(acl_allows(bob, cmd("ping")));             /* @connection */
    ck_assert(acl_allows(bob, cmd("client|list")));      /* @connection subcommand */
    ck_assert(!acl_allows(bob, cmd("client|kill")));
    ck_assert(acl_allows(carl, cmd("set")));
    ck_assert(!acl_allows(carl, cmd("keys")));           /* @dangerous */
    ck_assert(!acl_allows(carl, cmd("config|set")));
    ck_assert(acl_allows(carl, cmd("flushall")));        /* added back after */
    ck_assert(!acl_allows(dan, cmd("ping")));            /* no rules: nothing */
    ck_assert(acl_allows(eve, cmd("client|setname")));
    ck_assert(acl_allows(eve, cmd("client")));
    ck_assert(!acl_allows(eve, cmd("client|list")));
    ck_assert(!acl_allows(fay, cmd("get")));
    ck_assert(acl_allows(fay, cmd("set")));
    /* the default user without a line or requirepass: everything, no password */
    const struct acl_user *d = acl_default_user(a);
    ck_assert(d->nopass);
    ck_assert(acl_allows(d, cmd("flushall")) && acl_allows(d, cmd("cluster|slots")));
    acl_free(a);
}
END_TEST

/* Keys by pattern and permission, as their key specs ask; selectors; the
 * most telling refusal of several; channels. */
START_TEST(test_keys_channels_selectors)
{
    const char *const lines[] = {
        "kim pw ~app:* %R~ro:* %W~wo:* +@all",
        "lee pw +get ~a:* (+set ~b:*)",
        "max pw &news:* +publish +subscribe +psubscribe allkeys",
        "ned pw +@all allchannels allkeys",
        "oli pw allkeys +@all",
        "uma pw ~b:* +mset (~a:* +mset)",
        "vic pw allkeys allchannels +select|0 +ping|hello",
        "wes pw allkeys allchannels +select|0 -select",
    };
    struct acl *a = build(NULL, lines, 8);
    const struct acl_user *kim = login(a, "kim", "pw"), *lee = login(a, "lee", "pw"),
                          *max = login(a, "max", "pw"), *ned = login(a, "ned", "pw"),
                          *oli = login(a, "oli", "pw"), *uma = login(a, "uma", "pw"),
                          *vic = login(a, "vic", "pw"), *wes = login(a, "wes", "pw");
    int pos;
    ck_assert_int_eq(check(kim, "GET app:1", NULL), ACL_OK);
    ck_assert_int_eq(check(kim, "GET other", &pos), ACL_DENIED_KEY);
    ck_assert_int_eq(pos, 1);
    ck_assert_int_eq(check(kim, "GET ro:1", NULL), ACL_OK);
    ck_assert_int_eq(check(kim, "SET ro:1 v", NULL), ACL_DENIED_KEY);    /* read only */
    ck_assert_int_eq(check(kim, "SET wo:1 v", NULL), ACL_OK);
    ck_assert_int_eq(check(kim, "GET wo:1", NULL), ACL_DENIED_KEY);      /* write only */
    ck_assert_int_eq(check(kim, "MSET app:1 v wo:2 v ro:3 v", &pos), ACL_DENIED_KEY);
    ck_assert_int_eq(pos, 5);
    ck_assert_int_eq(check(kim, "EXISTS wo:1", NULL), ACL_OK);   /* RO: neither read nor write */
    ck_assert_int_eq(check(kim, "EXISTS other", NULL), ACL_DENIED_KEY);
    ck_assert_int_eq(check(kim, "PING", NULL), ACL_OK);
    ck_assert_int_eq(check(kim, "PUBLISH ch m", NULL), ACL_DENIED_CHANNEL);
    ck_assert_int_eq(check(lee, "GET a:1", NULL), ACL_OK);
    ck_assert_int_eq(check(lee, "SET b:1 v", NULL), ACL_OK);             /* the selector */
    ck_assert_int_eq(check(lee, "SET a:1 v", NULL), ACL_DENIED_KEY);     /* cmd < key */
    ck_assert_int_eq(check(lee, "GET b:1", NULL), ACL_DENIED_KEY);
    ck_assert_int_eq(check(lee, "DEL a:1", NULL), ACL_DENIED_CMD);
    /* +cmd|first-argument, as Redis 7.0 (deprecated there) */
    ck_assert_int_eq(check(vic, "SELECT 0", NULL), ACL_OK);
    ck_assert_int_eq(check(vic, "SELECT 1", NULL), ACL_DENIED_CMD);
    ck_assert_int_eq(check(vic, "PING HELLO", NULL), ACL_OK);   /* any case */
    ck_assert_int_eq(check(vic, "PING", NULL), ACL_DENIED_CMD);
    ck_assert_int_eq(check(wes, "SELECT 0", NULL), ACL_DENIED_CMD);  /* -select dropped it */
    ck_assert(!vic->simple);
    /* two selectors refuse a key each: the later argument is named, as Redis */
    ck_assert_int_eq(check(uma, "MSET a:1 v c:1 v", &pos), ACL_DENIED_KEY);
    ck_assert_int_eq(pos, 3);
    ck_assert_int_eq(check(max, "PUBLISH news:1 m", NULL), ACL_OK);
    ck_assert_int_eq(check(max, "PUBLISH sports m", &pos), ACL_DENIED_CHANNEL);
    ck_assert_int_eq(pos, 1);
    ck_assert_int_eq(check(max, "SUBSCRIBE news:1 sports", &pos), ACL_DENIED_CHANNEL);
    ck_assert_int_eq(pos, 2);
    ck_assert_int_eq(check(max, "PSUBSCRIBE news:*", NULL), ACL_OK);     /* literally */
    ck_assert_int_eq(check(max, "PSUBSCRIBE news:1*", NULL), ACL_DENIED_CHANNEL);
    ck_assert(!max->simple && max->restricted);
    ck_assert(ned->simple && !ned->restricted);
    ck_assert(!oli->simple && oli->restricted);             /* no channel */
    ck_assert(!kim->simple && kim->restricted);
    ck_assert_int_eq(check(ned, "FLUSHALL", NULL), ACL_OK);
    acl_free(a);
}
END_TEST

/* on and off, several passwords, hashes, removing one, reset. */
START_TEST(test_passwords_and_flags)
{
    const char *const lines[] = {
        "pia pw1 >pw2 #5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8 <pw1",
        "quin pw off",
        "ray pw reset on >new",
    };
    struct acl *a = build(NULL, lines, 3);
    ck_assert_ptr_null(login(a, "pia", "pw1"));             /* removed */
    ck_assert_ptr_nonnull(login(a, "pia", "pw2"));
    ck_assert_ptr_nonnull(login(a, "pia", "password"));     /* by its SHA-256 */
    ck_assert_ptr_null(login(a, "quin", "pw"));             /* off */
    ck_assert_ptr_null(login(a, "ray", "pw"));              /* reset took it */
    const struct acl_user *ray = login(a, "ray", "new");
    ck_assert_ptr_nonnull(ray);
    ck_assert(!acl_allows(ray, cmd("get")));
    acl_free(a);
    char why[300];
    char *const bad[] = { "~x", "allkeys", "~y" };
    ck_assert_int_eq(acl_rules_check(bad, 3, why, sizeof why), -1);
    ck_assert_msg(strstr(why, "Adding a pattern after the * pattern"), "%s", why);
    char *const gone[] = { "<nosuch" };
    ck_assert_int_eq(acl_rules_check(gone, 1, why, sizeof why), -1);
    ck_assert_msg(strstr(why, "does not exist"), "%s", why);
}
END_TEST

/* Selector words split at blanks are joined back. */
START_TEST(test_selectors_merged)
{
    char *const words[] = { "+get", "(~a:*", "+set", "&c)", "(+del)", "~b" };
    char **rules, why[200];
    int n = acl_rules_merge(words, 6, &rules, why, sizeof why);
    ck_assert_int_eq(n, 4);
    ck_assert_str_eq(rules[1], "(~a:* +set &c)");
    ck_assert_str_eq(rules[2], "(+del)");
    ck_assert_str_eq(rules[3], "~b");
    acl_rules_free(rules, n);
    char *const open[] = { "(~a:*", "+set" };
    ck_assert_int_eq(acl_rules_merge(open, 2, &rules, why, sizeof why), -1);
}
END_TEST

/* Every command and subcommand has its own bit. */
START_TEST(test_ids_distinct)
{
    acl_init_ids();
    char *seen = calloc((size_t)acl_command_count, 1);
    int n = 0;
    for (int i = 0; i < command_table_size; i++) {
        const struct command *c = &command_table[i];
        for (int s = -1; s < c->nsubcommands; s++) {
            int id = acl_command_id(s < 0 ? c : &c->subcommands[s]);
            ck_assert(id >= 0 && id < acl_command_count);
            ck_assert_msg(!seen[id], "id %d twice", id);
            seen[id] = 1;
            n++;
        }
    }
    ck_assert_int_eq(n, acl_command_count);
    free(seen);
}
END_TEST

/* ---- logins ---- */

START_TEST(test_logins)
{
    const char *const lines[] = { "bob bobpw +get", "open nopass +ping" };
    struct acl *a = build("defpw", lines, 2);
    ck_assert_ptr_eq(login(a, "bob", "bobpw"), &a->users[1]);
    ck_assert_ptr_null(login(a, "bob", "bobpw2"));
    ck_assert_ptr_null(login(a, "bob", "bobp"));
    ck_assert_ptr_null(login(a, "bob", ""));
    ck_assert_ptr_null(login(a, "Bob", "bobpw"));           /* names are case-sensitive */
    ck_assert_ptr_null(login(a, "nobody", "bobpw"));
    ck_assert_ptr_eq(login(a, "default", "defpw"), acl_default_user(a));
    ck_assert_ptr_null(login(a, "default", "bobpw"));
    ck_assert_ptr_nonnull(login(a, "open", "anything"));    /* nopass */
    ck_assert(!acl_default_user(a)->nopass);
    /* a password with a NUL in it is the whole of it */
    ck_assert_ptr_null(acl_authenticate(a, "bob", 3, "bobpw\0x", 7));
    acl_free(a);
}
END_TEST

/* requirepass replaces a `user default` line's password, not its rules. */
START_TEST(test_default_user_line)
{
    const char *const lines[] = { "default linepw +get" };
    struct acl *a = build(NULL, lines, 1);
    ck_assert_ptr_eq(login(a, "default", "linepw"), acl_default_user(a));
    ck_assert(acl_allows(acl_default_user(a), cmd("get")));
    ck_assert(!acl_allows(acl_default_user(a), cmd("set")));
    acl_free(a);
    a = build("reqpw", lines, 1);
    ck_assert_ptr_null(login(a, "default", "linepw"));
    ck_assert_ptr_eq(login(a, "default", "reqpw"), acl_default_user(a));
    ck_assert(!acl_allows(acl_default_user(a), cmd("set")));
    acl_free(a);
}
END_TEST

/* ---- timing ---- */

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Fastest of many runs of one login: the minimum is what the code costs,
 * whatever else the machine does meanwhile. */
static long long fastest(const struct acl *a, const char *user, const char *pass, int runs)
{
    long long best = -1;
    for (int i = 0; i < runs; i++) {
        long long t0 = now_ns();
        const struct acl_user *u = login(a, user, pass);
        long long t = now_ns() - t0;
        __asm__ volatile("" : : "r"(u) : "memory");
        if (best < 0 || t < best)
            best = t;
    }
    return best;
}

/*
 * An unknown user, a known user with a wrong password, and a wrong password
 * that shares all but its last byte with the right one all cost the same:
 * with a strcmp-style check or an early "no such user" the unknown user
 * would be answered in a fraction of the time. Compared as the fastest of
 * interleaved rounds, so load on the machine moves all three alike.
 */
START_TEST(test_login_time_independent_of_user_and_password)
{
    char lines_buf[63][64];
    const char *lines[63];
    static char longpw[4097], near[4097];
    memset(longpw, 'p', sizeof longpw - 1);
    memcpy(near, longpw, sizeof near);
    near[sizeof near - 2] = 'q';
    for (int i = 0; i < 63; i++) {
        snprintf(lines_buf[i], sizeof lines_buf[i], "user%02d pw%02d +get", i, i);
        lines[i] = lines_buf[i];
    }
    struct acl *a = build(NULL, lines, 63);
    long long unknown = -1, wrong = -1, nearly = -1;
    for (int round = 0; round < 20; round++) {
        long long u = fastest(a, "nosuchuser", longpw, 200);
        long long w = fastest(a, "user31", longpw, 200);
        long long n = fastest(a, "user31", near, 200);
        unknown = unknown < 0 || u < unknown ? u : unknown;
        wrong = wrong < 0 || w < wrong ? w : wrong;
        nearly = nearly < 0 || n < nearly ? n : nearly;
    }
    /* hashing a 4 KB password dominates: equal work gives equal minimums
     * within noise; a shortcut would be several times faster */
    ck_assert_msg(unknown * 10 > wrong * 8 && wrong * 10 > unknown * 8,
                  "unknown user %lld ns vs wrong password %lld ns", unknown, wrong);
    ck_assert_msg(nearly * 10 > wrong * 8 && wrong * 10 > nearly * 8,
                  "near-miss password %lld ns vs wrong password %lld ns", nearly, wrong);
    acl_free(a);
}
END_TEST

/* The ACL SETUSER words of u's node user, from the first rule on, as one
 * line. */
static void node_rules(const struct acl_user *u, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = '\0';
    for (int i = 9; i < u->node_setup_argc; i++)      /* after "... clearselectors" */
        at += (size_t)snprintf(out + at, cap - at, "%s%s", at ? " " : "", u->node_setup[i]);
}

/* With a key layout, a node user's key patterns (its own and in selectors)
 * are followed by the cluster globs of each; a pattern of another shape is
 * noted; the node user's name follows from the words. */
START_TEST(test_node_user_key_layout)
{
    static const char *const pf[] = { "bot" };
    struct layout *l = layout_load_file("conf/layouts/botmesh-v1.rules", pf, 1, err, sizeof err);
    ck_assert_msg(l != NULL, "%s", err);
    const char *lines[] = { "pat pw +get ~bot:user:u1:* (+set %W~bot:chat:* ~cache:*)",
                            "odd pw +get ~bot:ch?t:1" };
    struct acl *with = build_with(NULL, lines, 2, l), *without = build_with(NULL, lines, 2, NULL);
    char got[1024];
    node_rules(&with->users[1], got, sizeof got);
    ck_assert_str_eq(got, "-@all +get ~bot:user:u1:* ~bot:{ud:u1}:e:*:* "
                          "(+set %W~bot:chat:* %W~bot:{ch:*}:r:* ~cache:*)");
    ck_assert_str_eq(with->users[1].node_keys_unmapped, "");
    node_rules(&without->users[1], got, sizeof got);
    ck_assert_str_eq(got, "-@all +get ~bot:user:u1:* (+set %W~bot:chat:* ~cache:*)");
    ck_assert_str_ne(with->users[1].node_user, without->users[1].node_user);
    ck_assert_str_eq(with->users[2].node_keys_unmapped, "~bot:ch?t:1");
    ck_assert_str_eq(without->users[2].node_keys_unmapped, "");
    acl_free(with);
    acl_free(without);
    layout_free(l);
}
END_TEST

static Suite *acl_suite(void)
{
    Suite *s = suite_create("acl");
    TCase *t = tcase_create("acl");
    tcase_add_loop_test(t, test_rule_grammar, 0, sizeof rule_vectors / sizeof rule_vectors[0]);
    tcase_add_test(t, test_rules_in_order);
    tcase_add_test(t, test_ids_distinct);
    tcase_add_test(t, test_keys_channels_selectors);
    tcase_add_test(t, test_passwords_and_flags);
    tcase_add_test(t, test_selectors_merged);
    tcase_add_test(t, test_logins);
    tcase_add_test(t, test_default_user_line);
    tcase_add_test(t, test_node_user_key_layout);
    tcase_add_test(t, test_login_time_independent_of_user_and_password);
    tcase_set_timeout(t, 60);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(acl_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
