/*
 * Users and permissions against one redis-server 7.0, reply by reply.
 *
 * One Redis ACL file (written here) is given to a standalone redis-server
 * (--aclfile) and to a proxy (--aclfile) in front of the suite's cluster.
 * Each user's corpus (single-key, multi-key and split commands, MULTI/EXEC,
 * pub/sub and shard channels, scripts and functions whose calls are allowed
 * or refused, ACL WHOAMI, USERS, CAT, DRYRUN, GETUSER, LIST) is sent to
 * both after the user's login, in RESP2 and again in RESP3 (HELLO 3 AUTH),
 * and every reply must be the same bytes: allow or deny, and the error's
 * text. Where Redis's order is its hash table's (ACL CAT of a category,
 * the single commands of a user's rules in ACL LIST and GETUSER), the
 * words are compared as sets after the ordered part. Keys carry the run's
 * tag in braces, so the patterns match them and the cluster can serve
 * each command on one slot. ACL LOG is compared field by field (its
 * client-info names each side's own connection).
 */
#include "harness.h"

static struct h_proxy proxy, ref;
static char tag[80];

static const char *const acl_file =
    "user default on nopass ~* &* +@all\n"
    "user alice on >alice-pw ~app:* %R~shared:* %W~inbox:* &news:* +@all -@dangerous\n"
    "user bob on >bob-pw >bob-pw2 ~bob:* resetchannels -@all +get +set +mget +mset +del "
    "+publish +spublish +subscribe +psubscribe +unsubscribe +punsubscribe +ping +eval "
    "+evalsha +fcall +fcall_ro +multi +exec +acl|whoami +acl|dryrun +hello +incr\n"
    "user carl on >carl-pw allkeys allchannels +@read +@connection -@dangerous "
    "(~w:* +@write) (&alerts:* +publish)\n"
    "user dave off >dave-pw ~* +@all\n"
    "user erin on nopass ~e:* &e:* +@all -@dangerous -acl (~x:* +get)\n"
    "user frank on >frank-pw ~f:* +sort +sort_ro +rpush +del\n"
    "user gina on >gina-pw +select|0 +ping|hello +echo +acl|whoami\n";

struct login {
    const char *user, *pass;
};

static const struct login logins[] = {
    { "alice", "alice-pw" }, { "bob", "bob-pw2" }, { "carl", "carl-pw" }, { "erin", "x" },
    { "frank", "frank-pw" }, { "gina", "gina-pw" },
};

/*
 * The corpus, one command a line, arguments split at '|'; T is the run's
 * tag. Every user runs all of it.
 */
static const char *const corpus[] = {
    "ACL|WHOAMI",
    "SET|app:{T}1|v", "GET|app:{T}1", "SET|shared:{T}1|v", "GET|shared:{T}1",
    "SET|inbox:{T}1|v", "GET|inbox:{T}1", "EXISTS|inbox:{T}1", "SET|other:{T}1|v",
    "GET|other:{T}1", "SET|bob:{T}1|v", "GET|bob:{T}1", "SET|w:{T}1|v", "GET|w:{T}1",
    "SET|e:{T}1|v", "GET|x:{T}1", "SET|x:{T}1|v", "SET|app:{T}2|v|GET",
    "MGET|app:{T}1|app:{T}2", "MGET|app:{T}1|shared:{T}1", "MGET|app:{T}1|other:{T}1",
    "MSET|app:{T}3|v|inbox:{T}3|v", "MSET|app:{T}3|v|shared:{T}3|v",
    "MGET|bob:{T}a|bob:{T}b", "MSET|bob:{T}a|1|bob:{T}b|2", "DEL|bob:{T}a|bob:{T}b",
    "DEL|app:{T}1|app:{T}2|app:{T}3|inbox:{T}3", "INCR|e:{T}n", "INCR|w:{T}n",
    "BITFIELD|app:{T}b|GET|u8|0", "BITFIELD|shared:{T}b|GET|u8|0",
    "BITFIELD|shared:{T}b|SET|u8|0|1", "KEYS|nothing-{T}", "CONFIG|GET|maxmemory",
    "PING", "ECHO|hi", "PING|hello", "PING|HELLO", "PING|other", "SELECT|0",
    "DEL|f:{T}l", "RPUSH|f:{T}l|2|1", "SORT|f:{T}l", "SORT|f:{T}l|BY|nosort",
    "SORT|f:{T}l|BY|f:{T}w*", "SORT|f:{T}l|LIMIT|0|1|GET|#", "SORT_RO|f:{T}l|GET|f:{T}*",
    "SORT|f:{T}l|STORE|get", "DEL|f:{T}l|get",
    "PUBLISH|news:{T}p|m", "PUBLISH|sports:{T}|m", "PUBLISH|alerts:{T}|m", "PUBLISH|e:{T}|m",
    "SPUBLISH|news:{T}s|m", "SPUBLISH|other:{T}s|m",
    "SUBSCRIBE|news:{T}c", "UNSUBSCRIBE|news:{T}c", "SUBSCRIBE|sports:{T}c",
    "UNSUBSCRIBE|sports:{T}c", "PSUBSCRIBE|news:*", "PUNSUBSCRIBE|news:*",
    "PSUBSCRIBE|news:{T}*", "PUNSUBSCRIBE|news:{T}*",
    "MULTI", "SET|app:{T}m|1", "GET|other:{T}m", "EXEC",
    "MULTI", "INCR|bob:{T}m", "INCR|app:{T}m", "EXEC",
    "EVAL|return redis.call('GET',KEYS[1])|1|app:{T}1",
    "EVAL|return redis.call('GET',KEYS[1])|1|other:{T}1",
    "EVAL|return redis.call('SET',KEYS[1],'s')|1|shared:{T}s",
    "EVAL|return redis.call('SET',KEYS[1],'s')|1|bob:{T}s",
    "EVAL|return redis.call('GET','other:{T}x')|0",
    "EVAL|return redis.call('FLUSHALL')|0",
    "EVAL|return redis.call('KEYS','nothing-{T}')|0",
    "EVAL|return redis.call('PUBLISH','sports:{T}','m')|0",
    "EVAL|return redis.call('PUBLISH','news:{T}l','m')|0",
    "EVAL|return redis.pcall('DEL',KEYS[1])|1|bob:{T}s",
    "EVAL_RO|return redis.call('GET',KEYS[1])|1|x:{T}1",
    "FCALL|tpacld_get|1|app:{T}1", "FCALL|tpacld_get|1|bob:{T}1",
    "FCALL|tpacld_get|1|other:{T}1", "FCALL_RO|tpacld_get|1|w:{T}1",
    "ACL|DRYRUN|alice|SET|shared:{T}1|v", "ACL|DRYRUN|alice|GET|shared:{T}1",
    "ACL|DRYRUN|alice|PUBLISH|sports|m", "ACL|DRYRUN|alice|FLUSHALL",
    "ACL|DRYRUN|bob|GET|other", "ACL|DRYRUN|bob|CLIENT|LIST", "ACL|DRYRUN|carl|SET|w:1|v",
    "ACL|DRYRUN|carl|SET|r:1|v", "ACL|DRYRUN|carl|PUBLISH|alerts:1|m",
    "ACL|DRYRUN|nobody|GET|x", "ACL|DRYRUN|alice|NOSUCHCMD", "ACL|DRYRUN|alice|GET",
    "ACL|DRYRUN|alice|CLIENT|NOSUCH",
    "ACL|USERS", "ACL|CAT", "ACL|CAT|nosuchcategory",
    "ACL|GETUSER|nobody",
    "ACL|SETUSER|x", "ACL|DELUSER|x",
};

/* Where words are compared as sets (Redis gives them in hash order). */
static int unordered(const char *cmd)
{
    return strncmp(cmd, "ACL|CAT|", 8) == 0;
}

static void fill(char *out, size_t cap, const char *word)
{
    size_t at = 0;
    for (const char *p = word; *p && at + 1 < cap; p++) {
        if (*p == 'T' && p > word && p[-1] == '{' && p[1] == '}') {
            at += (size_t)snprintf(out + at, cap - at, "%s", tag);
            continue;
        }
        out[at++] = *p;
    }
    out[at] = '\0';
}

/* The corpus line as RESP. */
static size_t encode(const char *line, char *out, size_t cap)
{
    char copy[1024], word[1024], *save = NULL;
    const char *argv[32];
    char store[32][1024];
    int argc = 0;
    snprintf(copy, sizeof copy, "%s", line);
    for (char *w = strtok_r(copy, "|", &save); w && argc < 32; w = strtok_r(NULL, "|", &save)) {
        fill(word, sizeof word, w);
        snprintf(store[argc], sizeof store[argc], "%s", word);
        argv[argc] = store[argc];
        argc++;
    }
    size_t at = (size_t)snprintf(out, cap, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++)
        at += (size_t)snprintf(out + at, cap - at, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
    return at;
}

struct pair {
    int p, r;
    char *pb, *rb;
    size_t pcap, rcap;
};

/* Send bytes to both; the replies, as they came. */
static void both(struct pair *x, const char *bytes, size_t len, const char *what, size_t *plen,
                 size_t *rlen)
{
    h_raw_send(x->p, bytes, len);
    h_raw_send(x->r, bytes, len);
    *plen = h_raw_reply(x->p, &x->pb, &x->pcap, "the proxy", what);
    *rlen = h_raw_reply(x->r, &x->rb, &x->rcap, "redis-server", what);
}

static int cmp_words(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A reply's bytes with the elements of its (one level) array sorted. */
static void sorted_elements(char *buf, size_t len, char *out, size_t cap)
{
    char *lines[2048];
    int n = 0;
    buf[len] = '\0';
    for (char *save = NULL, *l = strtok_r(buf, "\r\n", &save); l && n < 2048;
         l = strtok_r(NULL, "\r\n", &save))
        if (l[0] != '*' && l[0] != '$' && l[0] != '~')
            lines[n++] = l;
    qsort(lines, (size_t)n, sizeof lines[0], cmp_words);
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < n && at < cap; i++)
        at += (size_t)snprintf(out + at, cap - at, "%s,", lines[i]);
}

static void same(struct pair *x, const char *line, const char *who, int resp)
{
    char bytes[4096], what[1200];
    size_t plen, rlen;
    size_t len = encode(line, bytes, sizeof bytes);
    snprintf(what, sizeof what, "%s (RESP%d): %s", who, resp, line);
    both(x, bytes, len, what, &plen, &rlen);
    if (unordered(line)) {
        static char a[1 << 16], b[1 << 16];
        sorted_elements(x->pb, plen, a, sizeof a);
        sorted_elements(x->rb, rlen, b, sizeof b);
        ck_assert_msg(strcmp(a, b) == 0, "%s: proxy %s, redis %s", what, a, b);
        return;
    }
    ck_assert_msg(plen == rlen && memcmp(x->pb, x->rb, plen) == 0, "%s:\n proxy %s\n redis %s",
                  what, h_esc(x->pb, plen), h_esc(x->rb, rlen));
}

static void pair_open(struct pair *x)
{
    x->p = h_raw_connect(&proxy.addr);
    x->r = h_raw_connect(&ref.addr);
    x->pcap = x->rcap = 4096;
    x->pb = malloc(x->pcap);
    x->rb = malloc(x->rcap);
}

static void pair_close(struct pair *x)
{
    close(x->p);
    close(x->r);
    free(x->pb);
    free(x->rb);
}

/* Log in on both: AUTH (RESP2), or HELLO 3 AUTH, whose map differs in the
 * connection's id only (not compared). */
static void login(struct pair *x, const struct login *l, int resp)
{
    char line[256];
    size_t plen, rlen, len;
    char bytes[512];
    if (resp == 2) {
        snprintf(line, sizeof line, "AUTH|%s|%s", l->user, l->pass);
        same(x, line, l->user, 2);
        return;
    }
    snprintf(line, sizeof line, "HELLO|3|AUTH|%s|%s", l->user, l->pass);
    len = encode(line, bytes, sizeof bytes);
    both(x, bytes, len, line, &plen, &rlen);
    ck_assert_msg(x->pb[0] == '%' && x->rb[0] == '%', "HELLO 3: proxy %s, redis %s",
                  h_esc(x->pb, plen), h_esc(x->rb, rlen));
}

/* The ACL file at TAGPROXY_TEST_DIR/users-PID-WHO.acl, one for each side
 * (ACL SAVE writes its own). */
static void setup_file(char *path, size_t cap, const char *who)
{
    snprintf(path, cap, "%s/users-%d-%s.acl", h_env("TAGPROXY_TEST_DIR"), (int)getpid(), who);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(acl_file, f);
    /* one user whose ACL LIST line is longer than any buffer of a first try */
    fputs("user hank on >hank-pw +get (+set", f);
    for (int i = 0; i < 1500; i++)
        fprintf(f, " %%W~hank:%05d:a-long-pattern-to-make-the-line-long:*", i);
    fputs(")", f);
    for (int i = 0; i < 1500; i++)
        fprintf(f, " ~hank:%05d:*", i);
    fputs("\n", f);
    fclose(f);
}

static void setup(void)
{
    char path[512], ppath[512], seed[128], port[16];
    snprintf(tag, sizeof tag, "%s", h_prefix());
    setup_file(path, sizeof path, "redis");
    setup_file(ppath, sizeof ppath, "proxy");
    h_place_named(&ref, "redis-acl-diff");
    snprintf(port, sizeof port, "%d", ref.addr.port);
    const char *argv[] = { "redis-server", "--bind", "127.0.0.1", "--port", port, "--save", "",
                           "--appendonly", "no", "--dir", h_env("TAGPROXY_TEST_DIR"),
                           "--aclfile", path, NULL };
    h_spawn(&ref, argv, SIGTERM, 1);
    h_spawn_wait(&ref, h_answers, 20000, "redis-server");
    const char *args[] = { "--aclfile", ppath, "--acl-mutable", "yes", NULL };
    h_place_named(&proxy, "proxy-acl-diff");
    h_seed(seed, sizeof seed);
    h_proxy_launch(&proxy, h_env("TAGPROXY_TEST_BIN"), seed, NULL, args, SIGTERM);
    h_spawn_wait(&proxy, h_answers, 20000, "proxy");
    /* the function the corpus calls, loaded by the default user on both */
    struct pair x;
    pair_open(&x);
    same(&x, "FUNCTION|LOAD|REPLACE|#!lua name=tpacld\nredis.register_function{function_name="
             "'tpacld_get', callback=function(keys) return redis.call('GET', keys[1]) end, "
             "flags={'no-writes'}}", "default", 2);
    pair_close(&x);
}

static void teardown(void)
{
    struct pair x;
    pair_open(&x);
    same(&x, "FUNCTION|DELETE|tpacld", "default", 2);
    pair_close(&x);
    h_proxy_stop(&proxy);
    h_proxy_stop(&ref);
}

/* The corpus as each user, in the protocol of the test's loop index. */
START_TEST(test_corpus)
{
    int resp = _i == 0 ? 2 : 3;
    for (size_t u = 0; u < sizeof logins / sizeof logins[0]; u++) {
        struct pair x;
        pair_open(&x);
        login(&x, &logins[u], resp);
        for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++) {
            same(&x, corpus[i], logins[u].user, resp);
        }
        pair_close(&x);
    }
}
END_TEST

/* Logins: a user that is off, wrong passwords, either of two passwords. */
START_TEST(test_logins)
{
    struct pair x;
    pair_open(&x);
    same(&x, "AUTH|dave|dave-pw", "dave", 2);
    same(&x, "AUTH|bob|bob-pw", "bob", 2);
    same(&x, "AUTH|bob|bob-pw2", "bob", 2);
    same(&x, "AUTH|bob|bob-pw3", "bob", 2);
    same(&x, "AUTH|erin|anything", "erin", 2);
    same(&x, "ACL|WHOAMI", "erin", 2);
    same(&x, "AUTH|gina|gina-pw", "gina", 2);   /* +select|0: SELECT 1 is refused */
    same(&x, "SELECT|1", "gina", 2);
    same(&x, "SELECT|0", "gina", 2);
    pair_close(&x);
}
END_TEST

/* ACL LIST and GETUSER: the same words, the single commands as a set. */
static void describe_same(const char *p, const char *r, const char *what)
{
    char *a = strdup(p), *b = strdup(r), *save = NULL;
    char **pa = calloc(strlen(p) / 2 + 2, sizeof *pa), **pb = calloc(strlen(r) / 2 + 2, sizeof *pb);
    int na = 0, nb = 0;
    ck_assert(a && b && pa && pb);
    for (char *w = strtok_r(a, " ", &save); w; w = strtok_r(NULL, " ", &save))
        pa[na++] = w;
    for (char *w = strtok_r(b, " ", &save); w; w = strtok_r(NULL, " ", &save))
        pb[nb++] = w;
    ck_assert_msg(na == nb, "%s: proxy %d words '%.300s', redis %d words '%.300s'", what, na, p,
                  nb, r);
    int ordered = 0;        /* flags, passwords, keys, channels, categories */
    while (ordered < na && !((pa[ordered][0] == '+' || pa[ordered][0] == '-') &&
                             pa[ordered][1] != '@'))
        ordered++;
    for (int i = 0; i < ordered; i++)
        ck_assert_msg(strcmp(pa[i], pb[i]) == 0, "%s: proxy '%s', redis '%s' (word %d)", what,
                      pa[i], pb[i], i);
    qsort(pa + ordered, (size_t)(na - ordered), sizeof pa[0], cmp_words);
    qsort(pb + ordered, (size_t)(nb - ordered), sizeof pb[0], cmp_words);
    for (int i = ordered; i < na; i++)
        ck_assert_msg(strcmp(pa[i], pb[i]) == 0, "%s: proxy '%s', redis '%s' (word %d)", what,
                      pa[i], pb[i], i);
    free(a);
    free(b);
    free(pa);
    free(pb);
}

START_TEST(test_list_and_getuser)
{
    redisContext *p = h_connect_node(&proxy.addr), *r = h_connect_node(&ref.addr);
    redisReply *a = h_cmd(p, "ACL LIST"), *b = h_cmd(r, "ACL LIST");
    H_EXPECT_TYPE(a, REDIS_REPLY_ARRAY);
    H_EXPECT_TYPE(b, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(a->elements, b->elements);
    for (size_t i = 0; i < a->elements; i++)
        describe_same(a->element[i]->str, b->element[i]->str, "ACL LIST");
    freeReplyObject(a);
    freeReplyObject(b);
    const char *names[] = { "default", "alice", "bob", "carl", "dave", "erin", "frank",
                            "gina", "hank" };
    for (size_t u = 0; u < sizeof names / sizeof names[0]; u++) {
        a = h_cmd(p, "ACL GETUSER %s", names[u]);
        b = h_cmd(r, "ACL GETUSER %s", names[u]);
        H_EXPECT_TYPE(a, REDIS_REPLY_ARRAY);
        ck_assert_int_eq(a->elements, b->elements);
        for (size_t i = 0; i < a->elements; i++) {
            redisReply *ea = a->element[i], *eb = b->element[i];
            ck_assert_int_eq(ea->type, eb->type);
            if (ea->type == REDIS_REPLY_STRING)
                describe_same(ea->str, eb->str, names[u]);
            else if (ea->type == REDIS_REPLY_ARRAY)
                ck_assert_int_eq(ea->elements, eb->elements);
        }
        freeReplyObject(a);
        freeReplyObject(b);
    }
    redisFree(p);
    redisFree(r);
}
END_TEST

/* ACL LOG: the same entries, field by field but client-info and age. */
START_TEST(test_log)
{
    struct pair x;
    pair_open(&x);
    same(&x, "ACL|LOG|RESET", "default", 2);
    same(&x, "AUTH|alice|alice-pw", "alice", 2);
    same(&x, "GET|other:{T}L", "alice", 2);
    same(&x, "GET|other:{T}L", "alice", 2);
    same(&x, "FLUSHALL", "alice", 2);
    same(&x, "PUBLISH|sports:{T}L|m", "alice", 2);
    same(&x, "AUTH|alice|wrong", "alice", 2);
    same(&x, "AUTH|default|x", "default", 2);
    pair_close(&x);
    redisContext *p = h_connect_node(&proxy.addr), *r = h_connect_node(&ref.addr);
    redisReply *a = h_cmd(p, "ACL LOG"), *b = h_cmd(r, "ACL LOG");
    H_EXPECT_TYPE(a, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(a->elements, 4);
    ck_assert_int_eq(a->elements, b->elements);
    for (size_t i = 0; i < a->elements; i++) {
        redisReply *ea = a->element[i], *eb = b->element[i];
        ck_assert_int_eq(ea->elements, 14);
        ck_assert_int_eq(eb->elements, 14);
        for (size_t k = 0; k < 10; k += 2) {       /* count reason context object username */
            ck_assert_str_eq(ea->element[k]->str, eb->element[k]->str);
            if (ea->element[k + 1]->type == REDIS_REPLY_INTEGER)
                ck_assert_int_eq(ea->element[k + 1]->integer, eb->element[k + 1]->integer);
            else
                ck_assert_str_eq(ea->element[k + 1]->str, eb->element[k + 1]->str);
        }
        ck_assert_str_eq(ea->element[10]->str, "age-seconds");
        ck_assert_str_eq(ea->element[12]->str, "client-info");
        ck_assert_msg(strstr(ea->element[13]->str, " user=") != NULL, "%s", ea->element[13]->str);
    }
    freeReplyObject(a);
    freeReplyObject(b);
    redisFree(p);
    redisFree(r);
}
END_TEST

/* Whether the other side closed fd (EOF within 5 s). */
static int closed(int fd)
{
    char b;
    struct pollfd pfd = { fd, POLLIN, 0 };
    return poll(&pfd, 1, 5000) == 1 && recv(fd, &b, 1, 0) == 0;
}

/* ACL SETUSER, DELUSER, SAVE and LOAD change the users as on one server:
 * the same replies and errors, logins as the new rules say, connections of
 * a deleted user closed, ACL LOAD closing every non-default login. */
START_TEST(test_setuser_deluser_save_load)
{
    struct pair adm, gus, al;
    pair_open(&adm);
    pair_open(&al);
    same(&al, "AUTH|alice|alice-pw", "alice", 2);
    same(&adm, "ACL|SETUSER|gus|on|>gus-pw|~g:*|+get|+set|+ping", "default", 2);
    same(&adm, "ACL|SETUSER|gus|+nosuchcommand", "default", 2);
    same(&adm, "ACL|SETUSER|gus|+@nosuchcategory", "default", 2);
    same(&adm, "ACL|SETUSER|gus|bogus", "default", 2);
    same(&adm, "ACL|SETUSER|gus|~x|allkeys|~y", "default", 2);
    same(&adm, "ACL|SETUSER|gus|<not-a-password", "default", 2);
    same(&adm, "ACL|SETUSER|gus|#abc", "default", 2);
    same(&adm, "ACL|SETUSER|gus|(~a|+get", "default", 2);
    same(&adm, "ACL|SETUSER|bad user", "default", 2);
    same(&adm, "ACL|GETUSER|nobody", "default", 2);
    pair_open(&gus);
    same(&gus, "AUTH|gus|gus-pw", "gus", 2);
    same(&gus, "SET|g:{T}1|v", "gus", 2);
    same(&gus, "GET|other:{T}1", "gus", 2);
    same(&adm, "ACL|SETUSER|gus|-set|(~h:*|+set)", "default", 2);
    same(&gus, "SET|g:{T}1|v", "gus", 2);       /* the same connection, the new rules */
    same(&gus, "SET|h:{T}1|v", "gus", 2);
    same(&gus, "DEL|h:{T}1", "gus", 2);
    same(&adm, "ACL|DRYRUN|gus|SET|h:1|v", "default", 2);
    same(&adm, "ACL|SETUSER|gus|off", "default", 2);
    same(&gus, "GET|g:{T}1", "gus", 2);         /* its login goes on, as in Redis */
    same(&adm, "AUTH|gus|gus-pw", "default", 2);    /* no new one */
    same(&adm, "ACL|SETUSER|gus|on", "default", 2);
    same(&adm, "ACL|DELUSER|default", "default", 2);
    same(&adm, "ACL|DELUSER|gus|nobody", "default", 2);
    ck_assert_msg(closed(gus.p) && closed(gus.r), "a deleted user's connection stays open");
    same(&adm, "AUTH|gus|gus-pw", "default", 2);
    same(&adm, "ACL|SETUSER|hal|on|nopass|~*|+@all", "default", 2);
    same(&adm, "ACL|SAVE", "default", 2);
    same(&adm, "ACL|DELUSER|hal", "default", 2);
    same(&adm, "ACL|LOAD", "default", 2);        /* hal is back, from the file */
    ck_assert_msg(closed(al.p) && closed(al.r), "ACL LOAD left alice's connection open");
    same(&adm, "AUTH|hal|x", "hal", 2);
    same(&adm, "ACL|WHOAMI", "hal", 2);
    pair_close(&gus);
    pair_close(&al);
    pair_close(&adm);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("acl_diff");
    TCase *t = tcase_create("aclfile");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_loop_test(t, test_corpus, 0, 2);
    tcase_add_test(t, test_logins);
    tcase_add_test(t, test_list_and_getuser);
    tcase_add_test(t, test_log);
    tcase_add_test(t, test_setuser_deluser_save_load);
    suite_add_tcase(s, t);
    return h_run(s);
}
