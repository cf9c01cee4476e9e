/*
 * `tagproxy migrate inspect` (migrate/inspect.h), run as users run it,
 * against a redis-server of the test's own and against the test cluster:
 *
 *  - a generated legacy keyspace with every family of the shipped
 *    botmesh-v1 rules, some names already in the cluster layout (their
 *    names built by the layout code the proxy serves), index sets, keeps,
 *    names no rule matches, TTLs, a coordinator heartbeat and a pending
 *    turn ticket: every count as generated;
 *  - the same tool on the cluster: every master scanned;
 *  - a source with a password: the URL's password logs in, a wrong one
 *    fails with exit 1 and is never printed; usage errors exit 2.
 */
#include "harness.h"

#include "keylayout/layout.h"
#include "keylayout/layoutload.h"

#define RULES "conf/layouts/botmesh-v1.rules"
#define PASS  "m1gr4te-pw"

static struct h_proxy ref;
static struct layout *layout;

static void setup(void)
{
    char err[256];
    const char *prefixes[2] = { "bot", NULL };
    h_ref_start(&ref, "redis-migrate", NULL);
    layout = layout_load_file(RULES, prefixes, 1, err, sizeof err);
    ck_assert_msg(layout != NULL, "%s", err);
}

static void setup_password(void)
{
    h_ref_start(&ref, "redis-migrate-pw", PASS);
}

static void teardown(void)
{
    h_proxy_stop(&ref);
    if (layout)
        layout_free(layout);
    layout = NULL;
}

#define migrate(out, size, ...) h_tagproxy(out, size, "migrate " __VA_ARGS__)

/* The three counts on the report's line for family (-1 for "(same)"). */
static void counts_of(const char *out, const char *family, long c[3])
{
    char head[128];
    H_FMT(head, sizeof head, "\n%s ", family);
    const char *line = strstr(out, head);
    ck_assert_msg(line != NULL, "no line for %s in:\n%s", family, out);
    line += strlen(head);
    c[0] = c[1] = c[2] = -1;
    char a[32] = "", b[32] = "", d[32] = "";
    sscanf(line, "%31s %31s %31s", a, b, d);
    c[0] = atol(a);
    c[1] = b[0] == '(' ? -1 : atol(b);
    c[2] = d[0] == '-' ? -1 : atol(d);
}

static void expect_counts(const char *out, const char *family, long legacy, long cluster,
                          long index)
{
    long c[3];
    counts_of(out, family, c);
    ck_assert_msg(c[0] == legacy && c[1] == cluster && c[2] == index,
                  "%s: %ld %ld %ld, want %ld %ld %ld\n%s", family, c[0], c[1], c[2], legacy,
                  cluster, index, out);
}

static void set_key(redisContext *c, const char *key, long long ttl_ms)
{
    redisReply *r = ttl_ms ? h_cmd(c, "SET %s v PX %lld", key, ttl_ms) : h_cmd(c, "SET %s v", key);
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
}

/* The cluster name of legacy name key, and its index set when it has one
 * (written with the member, as the proxy writes it). */
static void set_cluster_record(redisContext *c, const char *key, int *indexes, char seen[][256])
{
    char name[512], index[512], member[512];
    size_t n;
    struct layout_match m;
    ck_assert_int_eq(layout_to_cluster(layout, key, strlen(key), name, sizeof name - 1, &n, &m),
                     LAYOUT_MAPPED);
    name[n] = '\0';
    set_key(c, name, 0);
    if (!m.rule->indexed)
        return;
    index[layout_index_key(layout, &m, index, sizeof index - 1)] = '\0';
    member[layout_index_member(layout, &m, member, sizeof member - 1)] = '\0';
    freeReplyObject(h_cmd(c, "ZADD %s +inf %s", index, member));
    for (int i = 0; i < *indexes; i++)
        if (strcmp(seen[i], index) == 0)
            return;
    H_FMT(seen[(*indexes)++], 256, "%s", index);
}

START_TEST(test_every_family_counted)
{
    static const char *const legacy[] = {
        "bot:msgs:c1", "bot:msgs:tg:42", "bot:msg:c1:m1", "bot:msg:c1:m2", "bot:msg:tg:42:m9",
        "bot:chat:c1", "bot:chat:tg:42", "bot:contact:u1", "bot:checkpoint:k1",
        "bot:schedule:s1", "bot:user:u1:ns:k", "bot:user:u1:ns:a:b", "bot:lock:x:fence",
        "bot:lock:x", "bot:co:turn:c1:seq", "bot:co:leader:main:term", "bot:co:leader:main",
        "bot:conv:1", "bot:conv:2", "bot:cursor:1", "bot:lease:1", "bot:{durable:t}:x",
        "bot:other", "bot:x:y",
    };
    static const char *const to_cluster[] = { "bot:chat:c2", "bot:chat:c3", "bot:contact:u2",
                                              "bot:msgs:c9", "bot:lock:y:fence" };
    char out[8192], seen[8][256];
    int chat_indexes = 0, indexes;
    redisContext *c = h_connect_node(&ref.addr);
    for (size_t i = 0; i < sizeof legacy / sizeof legacy[0]; i++)
        set_key(c, legacy[i], i % 4 == 1 ? 600000 : 0);     /* 6 with a TTL */
    for (size_t i = 0; i < 2; i++)                          /* the chats: 1 or 2 buckets */
        set_cluster_record(c, to_cluster[i], &chat_indexes, seen);
    indexes = chat_indexes;
    for (size_t i = 2; i < sizeof to_cluster / sizeof to_cluster[0]; i++)
        set_cluster_record(c, to_cluster[i], &indexes, seen);
    set_key(c, "bot:co:rep:replica-1", 5000);               /* a heartbeat, a 7th TTL */
    freeReplyObject(h_cmd(c, "MSET bot:co:turn:c1:tix 5 bot:co:turn:c1:serving 3"));
    freeReplyObject(h_cmd(c, "MSET bot:co:turn:c2:tix 2 bot:co:turn:c2:serving 2"));
    set_key(c, "botx:chat:c1", 0);                           /* another prefix */
    redisFree(c);

    ck_assert_int_eq(migrate(out, sizeof out, "inspect --source redis://127.0.0.1:%d --prefix bot "
                             "--layout-rules " RULES, ref.addr.port), 0);
    ck_assert_msg(strstr(out, "(one server)") != NULL, "%s", out);
    long total = (long)(sizeof legacy / sizeof legacy[0] + sizeof to_cluster / sizeof to_cluster[0])
                 + indexes + 1 + 4;
    char want[64];
    H_FMT(want, sizeof want, "prefix bot: %ld keys\n", total);
    ck_assert_msg(strstr(out, want) != NULL, "want '%s' in:\n%s", want, out);
    expect_counts(out, "msg-log", 2, 1, 0);
    expect_counts(out, "msg-item", 3, 0, 0);
    expect_counts(out, "chat", 2, 2, chat_indexes);
    expect_counts(out, "contact", 1, 1, 1);
    expect_counts(out, "checkpoint", 1, 0, 0);
    expect_counts(out, "schedule", 1, 0, 0);
    expect_counts(out, "lock-fence", 1, 1, 0);
    expect_counts(out, "lock", 1, 0, 0);
    expect_counts(out, "turn", 5, 0, 0);
    expect_counts(out, "leader-term", 1, 0, 0);
    expect_counts(out, "leader", 1, 0, 0);
    expect_counts(out, "user-data", 2, 0, 0);
    expect_counts(out, "p:conv:*", 2, -1, -1);
    expect_counts(out, "p:co:rep:*", 1, -1, -1);
    expect_counts(out, "unmatched", 2, 0, 0);
    ck_assert_msg(strstr(out, "keys with a TTL: 7\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "live bots: 1 coordinator heartbeats (bot:co:rep:*), 1 pending "
                              "turn tickets\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "layout marker bot:{meta}:layout: absent\n") != NULL, "%s", out);
}
END_TEST

/* The test cluster: every master's keys, cluster names where the layout
 * puts them. */
START_TEST(test_cluster_every_master)
{
    struct h_topo t;
    char prefix[64], key[256], out[8192], seen[32][256], seed[128];
    const char *prefixes[1] = { prefix };
    char err[256];
    int indexes = 0;
    H_FMT(prefix, sizeof prefix, "mi%ld%lld", (long)getpid(), h_now_ms() % 1000000);
    layout_free(layout);
    layout = layout_load_file(RULES, prefixes, 1, err, sizeof err);
    ck_assert_msg(layout != NULL, "%s", err);
    h_topo_load(&t);
    for (int i = 0; i < 12; i++) {          /* chats all over the cluster */
        H_FMT(key, sizeof key, "%s:chat:c%d", prefix, i);
        char name[512];
        size_t n;
        struct layout_match m;
        ck_assert_int_eq(layout_to_cluster(layout, key, strlen(key), name, sizeof name - 1, &n, &m),
                         LAYOUT_MAPPED);
        name[n] = '\0';
        redisContext *o = h_connect_owner(&t, name);
        set_cluster_record(o, key, &indexes, seen);
        redisFree(o);
    }
    H_FMT(key, sizeof key, "%s:chat:legacy", prefix);
    redisContext *o = h_connect_owner(&t, key);
    set_key(o, key, 0);
    redisFree(o);
    h_seed(seed, sizeof seed);
    ck_assert_int_eq(migrate(out, sizeof out, "inspect --source redis://%s --prefix %s "
                             "--layout-rules " RULES, seed, prefix), 0);
    ck_assert_msg(strstr(out, "(a cluster: every master)") != NULL, "%s", out);
    expect_counts(out, "chat", 1, 12, indexes);
    ck_assert_msg(indexes > 3, "only %d buckets for 12 chats", indexes);
}
END_TEST

/* The URL's password logs in; a wrong one is refused and never shown. */
START_TEST(test_password_and_errors)
{
    char out[8192];
    redisContext *c = h_connect_node(&ref.addr);
    freeReplyObject(h_cmd(c, "AUTH %s", PASS));
    set_key(c, "bot:chat:c1", 0);
    redisFree(c);
    ck_assert_int_eq(migrate(out, sizeof out, "inspect --source redis://:%s@127.0.0.1:%d "
                             "--prefix bot --layout-rules " RULES, PASS, ref.addr.port), 0);
    expect_counts(out, "chat", 1, 0, 0);
    ck_assert_int_eq(migrate(out, sizeof out, "inspect --source redis://:wrong-%s@127.0.0.1:%d "
                             "--prefix bot --layout-rules " RULES, PASS, ref.addr.port), 1);
    ck_assert_msg(strstr(out, "login refused") != NULL && strstr(out, PASS) == NULL, "%s", out);
    ck_assert_int_eq(migrate(out, sizeof out, "inspect --source redis://127.0.0.1:%d "
                             "--prefix bot --layout-rules " RULES, ref.addr.port), 1);
    ck_assert_msg(strstr(out, "NOAUTH") != NULL, "%s", out);
    ck_assert_int_eq(migrate(out, sizeof out, "inspect --source http://x --prefix bot"), 1);
    ck_assert_int_eq(migrate(out, sizeof out, "inspect --prefix bot"), 2);
    ck_assert_int_eq(migrate(out, sizeof out, "inspect --source redis://h --prefix a:b"), 2);
    ck_assert_int_eq(migrate(out, sizeof out, "--source redis://127.0.0.1:%d --prefix bot "
                             "--direction sideways", ref.addr.port), 2);
}
END_TEST

static Suite *migrate_inspect_suite(void)
{
    Suite *s = suite_create("migrate_inspect");
    TCase *t = tcase_create("inspect");
    tcase_set_timeout(t, 60);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_every_family_counted);
    tcase_add_test(t, test_cluster_every_master);
    suite_add_tcase(s, t);
    TCase *pw = tcase_create("password");
    tcase_set_timeout(pw, 60);
    tcase_add_checked_fixture(pw, setup_password, teardown);
    tcase_add_test(pw, test_password_and_errors);
    suite_add_tcase(s, pw);
    return s;
}

int main(void)
{
    return h_run(migrate_inspect_suite());
}
