/*
 * SIGHUP reloads the config file (lifecycle.h), against an extra proxy
 * started from a file this test rewrites:
 *  - a changed requirepass: a client logged in before stays connected and
 *    keeps working; a new one needs the new password, the old one is refused;
 *  - a broken file: the reload is refused with FILE:LINE in the log and the
 *    running config (the old password) stays; a fixed file then loads;
 *  - a restart-only change (threads) is logged as needing a restart and not
 *    applied, while the rest of the same file is;
 *  - worker-nice: each worker thread runs that much nicer than the process,
 *    the main thread as started; a change is logged as needing a restart;
 *  - a lowered max-clients applies to new connections, not to open ones;
 *  - user lines: a logged-in user stays logged in and gets its new rules
 *    at its next command; a new password applies to new logins; a user
 *    removed from the file is logged out (NOAUTH, connection closed);
 *  - the layout-rules file is read again: new rules rewrite the next
 *    command's keys; a broken rules file is refused with its FILE:LINE;
 *    with several files each is read again, two that now overlap refuse
 *    the reload with both FILE:LINEs, a file added needs a restart;
 *  - log rotation: after the log file is renamed, SIGHUP makes the proxy
 *    log to a new file at the same path;
 *  - config-watch, without a signal: a config mounted as Kubernetes mounts
 *    a ConfigMap (the file a symlink into `..data`, itself a symlink the
 *    kubelet swaps with a rename) reloads on each swap; a file rewritten
 *    with the same bytes reloads nothing; a broken file is refused, and
 *    each is counted in INFO.
 * No password ever reaches the log.
 */
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "lifecycle.h"

static struct h_proxy proxy;
static char conf[600];

static void teardown(void)
{
    h_proxy_stop(&proxy);
}

static redisContext *connect_proxy(void)
{
    return h_connect_node(&proxy.addr);
}

/* AUTH pass on c: the reply (caller frees). */
static redisReply *auth(redisContext *c, const char *pass)
{
    return h_cmd(c, "AUTH %s", pass);
}

static void expect_works(redisContext *c, const char *key, const char *value)
{
    H_OK(c, "SET %s %s", key, value);
    redisReply *r = h_cmd(c, "GET %s", key);
    H_EXPECT_BULK(r, value);
    freeReplyObject(r);
}

/* The log never shows a password this test used. */
static void expect_no_secret_logged(void)
{
    static const char *const secrets[] = { "old-secret-1", "new-secret-2", "third-secret-3" };
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        ck_assert_msg(lc_count(proxy.log, secrets[i]) == 0, "the log shows a password");
}

START_TEST(reload_requirepass)
{
    char key[128];
    redisReply *r;

    lc_start(&proxy, "requirepass old-secret-1\n", conf, sizeof(conf), NULL);
    H_FMT(key, sizeof(key), "%s:reload:a", h_prefix());
    redisContext *old = connect_proxy();
    r = auth(old, "old-secret-1");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    expect_works(old, key, "before");

    lc_write(conf, "requirepass new-secret-2\n");
    lc_signal(&proxy, SIGHUP, "config generation 1 in use by every worker", 1);

    /* the client logged in before: same connection, still served */
    expect_works(old, key, "after");

    redisContext *fresh = connect_proxy();
    r = h_cmd(fresh, "GET %s", key);
    H_EXPECT_ERR(r, "NOAUTH");
    freeReplyObject(r);
    r = auth(fresh, "old-secret-1");
    H_EXPECT_ERR(r, "WRONGPASS");
    freeReplyObject(r);
    r = auth(fresh, "new-secret-2");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    r = h_cmd(fresh, "GET %s", key);
    H_EXPECT_BULK(r, "after");
    freeReplyObject(r);
    /* counted: the reload applied, the one refused login */
    ck_assert_int_eq(h_info_field(fresh, "config_reloads"), 1);
    ck_assert_int_eq(h_info_field(fresh, "config_reloads_refused"), 0);
    ck_assert_int_eq(h_info_field(fresh, "auth_failures"), 1);

    /* and the old connection is still the same one, not a reconnect */
    r = h_cmd(old, "CLIENT ID");
    H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    ck_assert_int_eq(old->err, 0);
    expect_no_secret_logged();
    redisFree(fresh);
    redisFree(old);
}
END_TEST

START_TEST(reload_broken_file_keeps_old)
{
    char where[700];
    redisReply *r;

    lc_start(&proxy, "requirepass old-secret-1\n", conf, sizeof(conf), NULL);
    /* line 3 is wrong: nothing of this file may apply, not even line 1 */
    lc_write(conf, "requirepass new-secret-2\n# a comment\nmax-clients lots\n");
    lc_signal(&proxy, SIGHUP, "running config is kept", 1);
    H_FMT(where, sizeof(where), "%s:3: 'max-clients' must be an integer", conf);
    ck_assert_msg(lc_count(proxy.log, where) == 1, "the log does not name %s", where);

    redisContext *c = connect_proxy();
    r = auth(c, "new-secret-2");
    H_EXPECT_ERR(r, "WRONGPASS");
    freeReplyObject(r);
    r = auth(c, "old-secret-1");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);

    /* an unreadable file is refused the same way */
    ck_assert_int_eq(unlink(conf), 0);
    lc_signal(&proxy, SIGHUP, "running config is kept", 2);
    ck_assert_msg(lc_count(proxy.log, "cannot open config file") == 1,
                  "the log does not say the file is missing");

    /* fixed: the next SIGHUP loads it */
    lc_write(conf, "requirepass third-secret-3\n");
    lc_signal(&proxy, SIGHUP, "config generation 1 in use by every worker", 1);
    redisContext *d = connect_proxy();
    r = auth(d, "third-secret-3");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    ck_assert_int_eq(h_info_field(d, "config_reloads_refused"), 2);
    ck_assert_int_eq(h_info_field(d, "config_reloads"), 1);
    r = h_cmd(c, "PING");           /* logged in under the first password: stays */
    H_EXPECT_STATUS(r, "PONG");
    freeReplyObject(r);
    expect_no_secret_logged();
    redisFree(d);
    redisFree(c);
}
END_TEST

/* The niceness of each thread of pid (getpriority takes a thread id):
 * workers (comm "worker-N") into workers[], the main thread into *main_nice;
 * returns the number of workers. */
static int thread_niceness(pid_t pid, int *main_nice, int *workers, int max)
{
    char path[64], comm[32];
    int n = 0;

    H_FMT(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    ck_assert_msg(d != NULL, "opendir %s: %s", path, strerror(errno));
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        id_t tid = (id_t)atoi(e->d_name);
        H_FMT(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;                   /* the thread has just ended */
        size_t len = fread(comm, 1, sizeof(comm) - 1, f);
        fclose(f);
        comm[len] = '\0';
        errno = 0;
        int nice = getpriority(PRIO_PROCESS, tid);
        ck_assert_msg(errno == 0, "getpriority %d: %s", (int)tid, strerror(errno));
        if (tid == (id_t)pid)
            *main_nice = nice;
        else if (strncmp(comm, "worker-", 7) == 0 && n < max)
            workers[n++] = nice;
    }
    closedir(d);
    return n;
}

START_TEST(worker_nice_per_thread)
{
    int main_nice = 99, workers[8];

    errno = 0;
    int base = getpriority(PRIO_PROCESS, 0);   /* the proxy inherits ours */
    ck_assert_msg(errno == 0, "getpriority: %s", strerror(errno));
    int want = base + 3 > 19 ? 19 : base + 3;
    lc_start(&proxy, "threads 2\nworker-nice 3\n", conf, sizeof(conf), NULL);
    /* the first worker answers PING while the second may still be starting */
    for (long long deadline = h_now_ms() + 10000;
         thread_niceness(proxy.pid, &main_nice, workers, 8) < 2 && h_now_ms() < deadline;)
        h_sleep_ms(20);
    ck_assert_int_eq(thread_niceness(proxy.pid, &main_nice, workers, 8), 2);
    ck_assert_int_eq(main_nice, base);
    ck_assert_int_eq(workers[0], want);
    ck_assert_int_eq(workers[1], want);

    lc_write(conf, "threads 2\nworker-nice 0\n");
    lc_signal(&proxy, SIGHUP, "config generation 1 in use by every worker", 1);
    ck_assert_msg(lc_count(proxy.log, "'worker-nice' changed: it needs a restart") == 1,
                  "the worker-nice change is not logged as needing a restart");
    ck_assert_int_eq(thread_niceness(proxy.pid, &main_nice, workers, 8), 2);
    ck_assert_int_eq(workers[0], want);
    h_proxy_stop(&proxy);

    lc_start(&proxy, "threads 1\nworker-nice 0\n", conf, sizeof(conf), NULL);
    ck_assert_int_eq(thread_niceness(proxy.pid, &main_nice, workers, 8), 1);
    ck_assert_int_eq(workers[0], base);
}
END_TEST

START_TEST(reload_restart_only_logged)
{
    redisReply *r;

    lc_start(&proxy, "threads 1\nmax-clients 100\n", conf, sizeof(conf), NULL);
    redisContext *a = connect_proxy();
    redisContext *b = connect_proxy();
    lc_write(conf, "threads 2\nmax-clients 2\n");
    lc_signal(&proxy, SIGHUP, "config generation 1 in use by every worker", 1);
    ck_assert_msg(lc_count(proxy.log, "'threads' changed: it needs a restart") == 1,
                  "the threads change is not logged as needing a restart");
    /* listen and cluster come from the command line, which still wins */
    ck_assert_int_eq(lc_count(proxy.log, "'listen' changed"), 0);
    ck_assert_int_eq(lc_count(proxy.log, "'cluster' changed"), 0);

    r = h_cmd(a, "INFO server");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    ck_assert_msg(strstr(r->str, "threads:1\r\n") != NULL, "threads changed without a restart");
    freeReplyObject(r);

    /* max-clients 2 applied: a and b stay, a third is turned away */
    redisContext *c = connect_proxy();
    r = redisCommand(c, "PING");
    ck_assert_msg(r != NULL && r->type == REDIS_REPLY_ERROR &&
                  strstr(r->str, "max number of clients") != NULL,
                  "a third client was not refused: %s", h_show(r));
    freeReplyObject(r);
    redisFree(c);
    r = h_cmd(b, "PING");
    H_EXPECT_STATUS(r, "PONG");
    freeReplyObject(r);
    redisFree(b);
    redisFree(a);
}
END_TEST

START_TEST(reload_users)
{
    char key[128];
    redisReply *r;

    H_FMT(key, sizeof(key), "%s:reload:users", h_prefix());
    lc_start(&proxy, "user bob old-secret-1 +get +ping +multi +exec allkeys\n"
                     "user eve third-secret-3 +ping +subscribe allchannels\n"
                     "user sam fourth-secret-4 +subscribe &news:*\n"
                     "user tom fifth-secret-5 +subscribe +ping &news:*\n",
             conf, sizeof(conf), NULL);
    redisContext *sam = connect_proxy(), *tom = connect_proxy();
    H_OK(sam, "AUTH sam fourth-secret-4");
    H_OK(tom, "AUTH tom fifth-secret-5");
    r = h_cmd(sam, "SUBSCRIBE news:%s", key);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    r = h_cmd(tom, "SUBSCRIBE news:%s", key);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    redisContext *bob = connect_proxy();
    r = h_cmd(bob, "AUTH bob old-secret-1");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    redisContext *eve = connect_proxy();
    r = h_cmd(eve, "AUTH eve third-secret-3");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    r = h_cmd(bob, "SET %s x", key);
    H_EXPECT_ERR(r, "NOPERM");
    freeReplyObject(r);
    r = h_cmd(eve, "SUBSCRIBE %s:ch", key);     /* a subscriber sends nothing more */
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    H_STATUS(bob, "OK", "MULTI");
    H_STATUS(bob, "QUEUED", "GET %s", key);    /* checked against rules about to go */

    lc_write(conf, "user bob new-secret-2 +get +set +ping +multi +exec allkeys\n"
                   "user sam fourth-secret-4 +subscribe &other:*\n"
                   "user tom fifth-secret-5 +subscribe +ping &news:* &other:*\n");
    lc_signal(&proxy, SIGHUP, "config generation 1 in use by every worker", 1);
    r = h_cmd(bob, "EXEC");                     /* its rules changed: nothing runs */
    H_EXPECT_ERR(r, "EXECABORT Transaction discarded because of: the user's ACL rules changed");
    freeReplyObject(r);
    H_OK(bob, "SET %s y", key);                 /* still logged in, new rules */
    r = h_cmd(bob, "GET %s", key);
    H_EXPECT_BULK(r, "y");
    freeReplyObject(r);
    /* eve is gone from the file: as Redis, her connection is closed at
     * once, subscribed as it is */
    void *none = NULL;
    ck_assert_msg(redisGetReply(eve, &none) != REDIS_OK, "eve's connection stays open");
    /* sam may no longer hear news:*: closed, as Redis closes a subscriber
     * whose channels were taken; tom keeps them and stays */
    ck_assert_msg(redisGetReply(sam, &none) != REDIS_OK, "sam's connection stays open");
    r = h_cmd(tom, "PING");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);        /* subscribed: ["pong", ""] */
    freeReplyObject(r);
    redisFree(sam);
    redisFree(tom);

    redisContext *fresh = connect_proxy();
    r = h_cmd(fresh, "AUTH bob old-secret-1");
    H_EXPECT_ERR(r, "WRONGPASS");
    freeReplyObject(r);
    r = h_cmd(fresh, "AUTH bob new-secret-2");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    expect_no_secret_logged();
    redisFree(fresh);
    redisFree(eve);
    redisFree(bob);
}
END_TEST

/* GET name on the master that owns it: whether it holds value. */
static void expect_on_node(const char *name, const char *value)
{
    struct h_topo t;
    h_topo_load(&t);
    redisContext *n = h_connect_owner(&t, name);
    redisReply *r = h_cmd(n, "GET %s", name);
    H_EXPECT_BULK(r, value);
    freeReplyObject(r);
    redisFree(n);
}

/* SET PREFIX+legacy value through c: the cluster holds it as PREFIX+cluster. */
static void set_lands(redisContext *c, const char *prefix, const char *legacy,
                      const char *cluster, const char *value)
{
    char key[128];
    H_FMT(key, sizeof(key), "%s%s", prefix, legacy);
    H_OK(c, "SET %s %s", key, value);
    H_FMT(key, sizeof(key), "%s%s", prefix, cluster);
    expect_on_node(key, value);
}

START_TEST(reload_layout_rules)
{
    char rules[600], text[1400], prefix[64], where[700];

    H_FMT(prefix, sizeof(prefix), "lc%ld%lld", (long)getpid(), h_now_ms() % 1000000);
    H_FMT(rules, sizeof(rules), "%s/lifecycle-%s.rules", h_env("TAGPROXY_TEST_DIR"), prefix);
    lc_write(rules, "rule thing p:thing:<id> -> p:{t:<id>}:one\n");
    H_FMT(text, sizeof(text), "layout-rules %s\nlayout-prefix %s\n", rules, prefix);
    lc_start(&proxy, text, conf, sizeof(conf), NULL);
    redisContext *c = connect_proxy();
    set_lands(c, prefix, ":thing:1", ":{t:1}:one", "first");

    lc_write(rules, "rule thing p:thing:<id> -> p:{t:<id>}:two\n");
    lc_signal(&proxy, SIGHUP, "config generation 1 in use by every worker", 1);
    set_lands(c, prefix, ":thing:2", ":{t:2}:two", "second");     /* same connection */

    lc_write(rules, "rule thing p:thing:<id> -> p:{t:<id>}:two\nrule broken\n");
    lc_signal(&proxy, SIGHUP, "running config is kept", 1);
    H_FMT(where, sizeof(where), "running config is kept: %s:2:", rules);
    ck_assert_msg(lc_count(proxy.log, where) == 1, "the log does not name %s:2", rules);
    set_lands(c, prefix, ":thing:3", ":{t:3}:two", "third");
    redisFree(c);
}
END_TEST

/* Several layout-rules files: SIGHUP reads each again; a file that now
 * overlaps another serving the same prefix refuses the reload with both
 * FILE:LINEs; a file added needs a restart (the running files are read
 * again). */
START_TEST(reload_layout_files)
{
    char one[600], two[600], text[2000], prefix[64], key[128], where[1400];

    H_FMT(prefix, sizeof(prefix), "lf%ld%lld", (long)getpid(), h_now_ms() % 1000000);
    H_FMT(one, sizeof(one), "%s/files-%s-1.rules", h_env("TAGPROXY_TEST_DIR"), prefix);
    H_FMT(two, sizeof(two), "%s/files-%s-2.rules", h_env("TAGPROXY_TEST_DIR"), prefix);
    lc_write(one, "rule thing p:thing:<id> -> p:{t:<id>}:one\n");
    lc_write(two, "rule other p:other:<id> -> p:{o:<id>}:one\n");
    H_FMT(text, sizeof(text), "layout-rules %s %s\nlayout-rules %s %s\n", one, prefix, two, prefix);
    lc_start(&proxy, text, conf, sizeof(conf), NULL);
    redisContext *c = connect_proxy();
    set_lands(c, prefix, ":other:1", ":{o:1}:one", "first");

    lc_write(two, "rule other p:other:<id> -> p:{o:<id>}:two\n");
    lc_signal(&proxy, SIGHUP, "config generation 1 in use by every worker", 1);
    set_lands(c, prefix, ":other:2", ":{o:2}:two", "second");

    lc_write(two, "rule other p:other:<id> -> p:{o:<id>}:two\nrule clash p:thing:<x> -> p:{c:<x>}\n");
    lc_signal(&proxy, SIGHUP, "running config is kept", 1);
    H_FMT(where, sizeof(where), "running config is kept: %s:1: rule thing and %s:2: rule clash "
          "both match \"%s:thing:x\"", one, two, prefix);
    ck_assert_msg(lc_count(proxy.log, where) == 1, "the log does not name both lines");
    set_lands(c, prefix, ":thing:3", ":{t:3}:one", "third");

    lc_write(two, "rule other p:other:<id> -> p:{o:<id>}:three\n");
    H_FMT(text, sizeof(text), "layout-rules %s %s\nlayout-rules %s %s\nlayout-rules %s x%s\n", one,
          prefix, two, prefix, two, prefix);
    lc_write(conf, text);
    lc_signal(&proxy, SIGHUP, "config generation 2 in use by every worker", 1);
    ck_assert_int_eq(lc_count(proxy.log, "'layout-rules (a file added or removed, or its "
                                          "prefixes)' changed: it needs a restart"), 1);
    set_lands(c, prefix, ":other:4", ":{o:4}:three", "fourth");
    H_FMT(key, sizeof(key), "x%s:other:5", prefix);     /* the added file's prefix: not served */
    H_OK(c, "SET %s fifth", key);
    expect_on_node(key, "fifth");
    redisFree(c);
    unlink(one);
    unlink(two);
}
END_TEST

/* Rotation: the file renamed away keeps what was logged before the SIGHUP;
 * a new file at the path gets what comes after. */
START_TEST(reload_reopens_log_file)
{
    char path[512], rotated[520];
    const char *args[] = { "--log-file", path, NULL };

    H_FMT(path, sizeof(path), "%s/lifecycle-rotate-%d.log", h_env("TAGPROXY_TEST_DIR"),
          (int)getpid());
    H_FMT(rotated, sizeof(rotated), "%s.1", path);
    unlink(path);
    unlink(rotated);
    lc_start(&proxy, "max-clients 100\n", conf, sizeof(conf), args);
    ck_assert_msg(lc_count(path, "tagproxy ready on") == 1, "the log file has no start line");
    ck_assert_int_eq(rename(path, rotated), 0);
    ck_assert_int_eq(kill(proxy.pid, SIGHUP), 0);
    for (long long deadline = h_now_ms() + 5000;
         lc_count(path, "config generation 1 in use by every worker") == 0;) {
        ck_assert_msg(h_now_ms() < deadline, "no new log file at %s after SIGHUP", path);
        h_sleep_ms(10);
    }
    ck_assert_int_eq(lc_count(path, "tagproxy ready on"), 0);
    ck_assert_int_eq(lc_count(rotated, "tagproxy ready on"), 1);
    ck_assert_int_eq(lc_count(rotated, "config generation 1"), 0);
    unlink(path);
    unlink(rotated);
}
END_TEST

/* ---- config-watch ---- */

/* The ConfigMap volume in dir as the kubelet writes it: the files in a
 * folder ..vN, `..data` a symlink to it, tagproxy.conf a symlink through
 * ..data. update(): a new ..vN, then ..data swapped by a rename. */
static void configmap_update(const char *dir, int version, const char *text)
{
    char sub[700], file[760], tmp[700];
    H_FMT(sub, sizeof sub, "%s/..v%d", dir, version);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    H_FMT(file, sizeof file, "%s/tagproxy.conf", sub);
    lc_write(file, text);
    H_FMT(sub, sizeof sub, "..v%d", version);
    H_FMT(tmp, sizeof tmp, "%s/..data_tmp", dir);
    ck_assert_int_eq(symlink(sub, tmp), 0);
    H_FMT(file, sizeof file, "%s/..data", dir);
    ck_assert_int_eq(rename(tmp, file), 0);
}

START_TEST(reload_when_the_configmap_changes)
{
    char dir[600], path[700], seed[128], listen[64], out[256];
    redisReply *r;
    H_FMT(dir, sizeof dir, "%s/configmap-%ld", h_env("TAGPROXY_TEST_DIR"), (long)getpid());
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    configmap_update(dir, 1, "requirepass old-secret-1\n");
    H_FMT(path, sizeof path, "%s/tagproxy.conf", dir);
    ck_assert_int_eq(symlink("..data/tagproxy.conf", path), 0);

    h_proxy_place(&proxy);
    lc_path(&proxy, "log", proxy.log, sizeof proxy.log);
    h_seed(seed, sizeof seed);
    H_FMT(listen, sizeof listen, "%s:%d", proxy.addr.host, proxy.addr.port);
    const char *argv[] = { h_env("TAGPROXY_TEST_BIN"), path, "--listen", listen, "--cluster",
                           seed, NULL };
    h_spawn(&proxy, argv, SIGKILL, 0);
    h_spawn_wait(&proxy, lc_answers, 20000, "proxy watching its config");
    lc_log_wait(&proxy, "watching ", 1);

    configmap_update(dir, 2, "requirepass new-secret-2\n");
    lc_log_wait(&proxy, "config generation 1 in use by every worker", 1);
    redisContext *c = connect_proxy();
    r = auth(c, "new-secret-2");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);

    /* the same bytes written again: no reload; then a real change */
    H_FMT(path, sizeof path, "%s/..v2/tagproxy.conf", dir);
    lc_write(path, "requirepass new-secret-2\n");
    configmap_update(dir, 3, "requirepass third-secret-3\n");
    lc_log_wait(&proxy, "config generation 2 in use by every worker", 1);
    ck_assert_int_eq(lc_count(proxy.log, "changed: reloading"), 2);

    /* a broken file: refused, the running config kept */
    configmap_update(dir, 4, "max-clients lots\n");
    lc_log_wait(&proxy, "running config is kept", 1);
    redisContext *d = connect_proxy();
    r = auth(d, "third-secret-3");
    H_EXPECT_STATUS(r, "OK");
    freeReplyObject(r);
    ck_assert_int_eq(h_info_field(d, "config_reloads"), 2);
    ck_assert_int_eq(h_info_field(d, "config_reloads_refused"), 1);
    expect_no_secret_logged();
    redisFree(c);
    redisFree(d);
    h_shell(out, sizeof out, "rm -rf '%s'", dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lifecycle_reload");
    TCase *tc = tcase_create("sighup");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, reload_requirepass);
    tcase_add_test(tc, reload_broken_file_keeps_old);
    tcase_add_test(tc, reload_restart_only_logged);
    tcase_add_test(tc, worker_nice_per_thread);
    tcase_add_test(tc, reload_layout_rules);
    tcase_add_test(tc, reload_layout_files);
    tcase_add_test(tc, reload_users);
    tcase_add_test(tc, reload_reopens_log_file);
    tcase_add_test(tc, reload_when_the_configmap_changes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(suite());
}
