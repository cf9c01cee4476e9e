/*
 * Slot migration under load: while two clients write and read through the
 * proxy, a slot moves between masters the way redis-cli does it (SETSLOT
 * IMPORTING on the target, MIGRATING on the source, MIGRATE ... KEYS in
 * batches, SETSLOT NODE on target, source and the other masters). The
 * clients must see no error (ASK and MOVED are the proxy's business), and
 * every write must be on the new owner at the end. The slot then moves back,
 * so the cluster is left as found.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "harness.h"

/* keys preloaded in the slot; keys each writer cycles through; MIGRATE batch */
enum { PRELOAD = 1500, WKEYS = 500, BATCH = 20, BATCH_PAUSE_MS = 5, NWRITER = 2 };

/* Set in Check's parent process, so inherited by the forked test. */
static char mig_tag[64];
static int mig_slot = -1;
static long slot_keys;   /* keys the slot holds, as the test wrote them */

struct writer {
    pthread_t thread;
    int id;
    char tag[64];        /* hash tag of the migrating slot */
    atomic_int *stop;
    long ops;            /* iterations done */
    long errors;
    char first_error[256];
};

static void writer_error(struct writer *w, const char *what, const redisReply *r,
                         const redisContext *c)
{
    if (w->errors++ == 0)
        snprintf(w->first_error, sizeof(w->first_error), "op %ld, %s: %s", w->ops, what,
                 r != NULL ? h_show(r) : c->errstr);
}

/* A reply a writer expects: a status, a bulk or an integer. */
struct want {
    const char *what;
    int type;
    long long n;
    char s[32];
};

/* Appends the commands of iteration i to c, and what they must answer. */
static int append_iteration(struct writer *w, redisContext *c, long i, struct want *wt)
{
    char key[160];
    long pre = (i * 7 + w->id) % PRELOAD;
    int n = 0;

    snprintf(key, sizeof(key), "{%s}:w%d:%ld", w->tag, w->id, i % WKEYS);
    redisAppendCommand(c, "SET %s v%ld", key, i);
    wt[n++] = (struct want){ "SET", REDIS_REPLY_STATUS, 0, "OK" };

    snprintf(key, sizeof(key), "{%s}:ctr%d", w->tag, w->id);
    redisAppendCommand(c, "INCR %s", key);
    wt[n++] = (struct want){ "INCR", REDIS_REPLY_INTEGER, i + 1, "" };

    /* a preloaded key, so that reads chase keys being moved */
    snprintf(key, sizeof(key), "{%s}:pre:%ld", w->tag, pre);
    redisAppendCommand(c, "GET %s", key);
    wt[n] = (struct want){ "GET preloaded", REDIS_REPLY_STRING, 0, "" };
    snprintf(wt[n++].s, sizeof(wt[0].s), "p%ld", pre);

    if (i > 0) {
        snprintf(key, sizeof(key), "{%s}:w%d:%ld", w->tag, w->id, (i - 1) % WKEYS);
        redisAppendCommand(c, "GET %s", key);
        wt[n] = (struct want){ "GET previous", REDIS_REPLY_STRING, 0, "" };
        snprintf(wt[n++].s, sizeof(wt[0].s), "v%ld", i - 1);
    }

    snprintf(key, sizeof(key), "%s:other:%d:%ld", h_prefix(), w->id, i % 100);
    redisAppendCommand(c, "SET %s x", key);
    wt[n++] = (struct want){ "SET other", REDIS_REPLY_STATUS, 0, "OK" };
    return n;
}

static int want_met(const redisReply *r, const struct want *wt)
{
    if (r->type != wt->type)
        return 0;
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer == wt->n;
    return strcmp(r->str, wt->s) == 0;
}

/*
 * Each iteration: SET {tag}:w<id>:<i mod WKEYS> v<i>, INCR {tag}:ctr<id>,
 * GET of a preloaded key, GET of the previous key, and SET of a key
 * elsewhere.
 * Writers with an odd id send 8 iterations at a time as one pipeline, so
 * that redirected commands must keep their place among the others.
 */
static void *writer_main(void *arg)
{
    enum { MAXBATCH = 8, PER_IT = 5 };
    struct writer *w = arg;
    struct h_node a = h_proxy_addr();
    redisContext *c = h_connect_try(a.host, a.port);
    struct want wt[MAXBATCH * PER_IT];
    int batch = w->id % 2 ? MAXBATCH : 1;

    if (c == NULL) {
        w->errors = 1;
        snprintf(w->first_error, sizeof(w->first_error), "cannot connect to the proxy");
        return NULL;
    }
    while (!atomic_load(w->stop) && w->errors < 10) {
        int n = 0;
        for (int b = 0; b < batch; b++)
            n += append_iteration(w, c, w->ops + b, wt + n);
        for (int k = 0; k < n; k++) {
            void *r = NULL;
            if (redisGetReply(c, &r) != REDIS_OK || r == NULL) {
                writer_error(w, wt[k].what, NULL, c);
                redisFree(c);
                return NULL;
            }
            if (!want_met(r, &wt[k]))
                writer_error(w, wt[k].what, r, c);
            freeReplyObject(r);
        }
        w->ops += batch;
    }
    redisFree(c);
    return NULL;
}

static void expect_ok(redisContext *c, const char *what, redisReply *r)
{
    (void)c;
    ck_assert_msg(r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0, "%s: %s",
                  what, h_show(r));
    freeReplyObject(r);
}

/* Moves slot from master `from` to master `to`, keys in batches. */
static void migrate_slot(const struct h_topo *t, int slot, int from, int to)
{
    redisContext *src = h_connect_node(&t->masters[from]);
    redisContext *dst = h_connect_node(&t->masters[to]);
    long moved = 0;

    expect_ok(dst, "SETSLOT IMPORTING",
              h_cmd(dst, "CLUSTER SETSLOT %d IMPORTING %s", slot, t->master_id[from]));
    expect_ok(src, "SETSLOT MIGRATING",
              h_cmd(src, "CLUSTER SETSLOT %d MIGRATING %s", slot, t->master_id[to]));
    for (;;) {
        redisReply *keys = h_cmd(src, "CLUSTER GETKEYSINSLOT %d %d", slot, BATCH);
        const char *argv[8 + BATCH];
        char port[16], timeout[] = "5000";
        int argc = 0;

        H_EXPECT_TYPE(keys, REDIS_REPLY_ARRAY);
        if (keys->elements == 0) {
            freeReplyObject(keys);
            break;
        }
        snprintf(port, sizeof(port), "%d", t->masters[to].port);
        argv[argc++] = "MIGRATE";
        argv[argc++] = t->masters[to].host;
        argv[argc++] = port;
        argv[argc++] = "";
        argv[argc++] = "0";
        argv[argc++] = timeout;
        argv[argc++] = "KEYS";
        for (size_t i = 0; i < keys->elements; i++)
            argv[argc++] = keys->element[i]->str;
        expect_ok(src, "MIGRATE", h_cmd_argv(src, argc, argv));
        moved += (long)keys->elements;
        freeReplyObject(keys);
        h_sleep_ms(BATCH_PAUSE_MS);     /* a pace: the writers run between batches */
    }
    ck_assert_msg(moved >= PRELOAD, "only %ld keys moved", moved);
    /* target first, then source, then everybody else (as redis-cli does) */
    expect_ok(dst, "SETSLOT NODE on target",
              h_cmd(dst, "CLUSTER SETSLOT %d NODE %s", slot, t->master_id[to]));
    expect_ok(src, "SETSLOT NODE on source",
              h_cmd(src, "CLUSTER SETSLOT %d NODE %s", slot, t->master_id[to]));
    for (int m = 0; m < t->nmasters; m++) {
        redisContext *o;
        if (m == from || m == to)
            continue;
        o = h_connect_node(&t->masters[m]);
        expect_ok(o, "SETSLOT NODE on other",
                  h_cmd(o, "CLUSTER SETSLOT %d NODE %s", slot, t->master_id[to]));
        redisFree(o);
    }
    redisFree(src);
    redisFree(dst);
}

/* How many keys with our tag the slot holds on node c (other tests' keys
 * may share the slot). */
static long tagged_keys(redisContext *c, int slot, const char *tag)
{
    redisReply *r = h_cmd(c, "CLUSTER GETKEYSINSLOT %d 1000000", slot);
    char prefix[80];
    size_t plen;
    long n = 0;

    H_FMT(prefix, sizeof(prefix), "{%s}:", tag);
    plen = strlen(prefix);
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < r->elements; i++)
        n += strncmp(r->element[i]->str, prefix, plen) == 0;
    freeReplyObject(r);
    return n;
}

/* One migration from -> to with writers running; then every write checked.
 * Each round's writers use their own keys. */
static void migrate_under_load(const struct h_topo *t, const char *tag, int round, int from,
                               int to)
{
    struct writer w[NWRITER];
    atomic_int stop = 0;
    int slot = h_slot(tag);
    long before[NWRITER];
    redisContext *owner, *p;

    memset(w, 0, sizeof(w));
    for (int i = 0; i < NWRITER; i++) {
        w[i].id = round * NWRITER + i;
        snprintf(w[i].tag, sizeof(w[i].tag), "%s", tag);
        w[i].stop = &stop;
        ck_assert_int_eq(pthread_create(&w[i].thread, NULL, writer_main, &w[i]), 0);
    }
    /* every writer under way (or given up: its errors say why, below) */
    for (long long deadline = h_now_ms() + 10000;; h_sleep_ms(10)) {
        int idle = -1;
        for (int i = 0; i < NWRITER && idle < 0; i++)
            if (__atomic_load_n(&w[i].ops, __ATOMIC_RELAXED) == 0 &&
                __atomic_load_n(&w[i].errors, __ATOMIC_RELAXED) == 0)
                idle = i;
        if (idle < 0)
            break;
        ck_assert_msg(h_now_ms() < deadline, "writer %d made no write in 10 s", idle);
    }
    for (int i = 0; i < NWRITER; i++)
        before[i] = w[i].ops;
    migrate_slot(t, slot, from, to);
    h_sleep_ms(300);        /* a time: the load goes on past the move, no state ends it */
    atomic_store(&stop, 1);
    for (int i = 0; i < NWRITER; i++)
        pthread_join(w[i].thread, NULL);

    for (int i = 0; i < NWRITER; i++) {
        ck_assert_msg(w[i].errors == 0, "writer %d saw %ld errors; first: %s", i, w[i].errors,
                      w[i].first_error);
        ck_assert_msg(w[i].ops > before[i], "writer %d made no progress during the migration", i);
    }

    /* every write is on the new owner, and reads back through the proxy:
     * key j holds the value of the last iteration that wrote it */
    owner = h_connect_node(&t->masters[to]);
    p = h_connect_proxy();
    for (int i = 0; i < NWRITER; i++) {
        long nkeys = w[i].ops < WKEYS ? w[i].ops : WKEYS;
        char key[160], val[32];
        for (long j = 0; j < nkeys; j++) {
            snprintf(key, sizeof(key), "{%s}:w%d:%ld", tag, w[i].id, j);
            redisAppendCommand(owner, "GET %s", key);
            redisAppendCommand(p, "GET %s", key);
        }
        for (long j = 0; j < nkeys; j++) {
            redisReply *r1 = h_get_reply(owner), *r2 = h_get_reply(p);
            snprintf(val, sizeof(val), "v%ld", j + (w[i].ops - 1 - j) / WKEYS * WKEYS);
            ck_assert_msg(r1->type == REDIS_REPLY_STRING && strcmp(r1->str, val) == 0,
                          "writer %d key %ld on the new owner: %s, want %s", i, j, h_show(r1), val);
            ck_assert_msg(r2->type == REDIS_REPLY_STRING && strcmp(r2->str, val) == 0,
                          "writer %d key %ld through the proxy: %s, want %s", i, j, h_show(r2),
                          val);
            freeReplyObject(r1);
            freeReplyObject(r2);
        }
        snprintf(key, sizeof(key), "{%s}:ctr%d", tag, w[i].id);
        {
            redisReply *r = h_cmd(owner, "GET %s", key);
            snprintf(val, sizeof(val), "%ld", w[i].ops);
            ck_assert_msg(r->type == REDIS_REPLY_STRING && strcmp(r->str, val) == 0,
                          "counter %d: %s, want %s", i, h_show(r), val);
            freeReplyObject(r);
        }
        slot_keys += nkeys + 1;   /* its keys and its counter */
    }
    ck_assert_int_eq(tagged_keys(owner, slot, tag), slot_keys);
    redisFree(p);
    redisFree(owner);
}

/* Whatever happened, leave no slot half-migrated for the tests after us.
 * Runs in Check's parent process, also after a failed or timed-out test. */
static void unchecked_teardown(void)
{
    struct h_node nodes[H_MAX_NODES];
    int n;

    if (mig_slot < 0)
        return;
    n = h_nodes(nodes, H_MAX_NODES);
    for (int i = 0; i < n; i++) {
        redisContext *c = h_connect_try(nodes[i].host, nodes[i].port);
        if (c != NULL) {
            redisReply *r = redisCommand(c, "CLUSTER SETSLOT %d STABLE", mig_slot);
            if (r != NULL)
                freeReplyObject(r);
            redisFree(c);
        }
    }
}

static void unchecked_setup(void)
{
    snprintf(mig_tag, sizeof(mig_tag), "mig:%ld:%lld", (long)getpid(), h_now_ms() % 100000);
    mig_slot = h_slot(mig_tag);
}

START_TEST(test_migrate_slot_under_load)
{
    struct h_topo t;
    redisContext *p = h_connect_proxy();
    const char *tag = mig_tag;
    int from, to;

    ck_assert_int_ge(mig_slot, 0);
    h_topo_load(&t);
    from = h_topo_owner(&t, h_slot(tag));
    to = (from + 1) % t.nmasters;

    for (int i = 0; i < PRELOAD; i++)
        redisAppendCommand(p, "SET {%s}:pre:%d p%d", tag, i, i);
    for (int i = 0; i < PRELOAD; i++) {
        redisReply *r = h_get_reply(p);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);
    }
    redisFree(p);
    slot_keys = PRELOAD;

    migrate_under_load(&t, tag, 0, from, to);
    h_topo_load(&t);
    ck_assert_msg(h_topo_owner(&t, h_slot(tag)) == to, "slot did not move");

    /* and back, with fresh writers */
    migrate_under_load(&t, tag, 1, to, from);
    h_topo_load(&t);
    ck_assert_msg(h_topo_owner(&t, h_slot(tag)) == from, "slot did not move back");
}
END_TEST

static Suite *migration_suite(void)
{
    Suite *s = suite_create("migration");
    TCase *tc = tcase_create("migration");

    tcase_set_timeout(tc, 90);
    tcase_add_unchecked_fixture(tc, unchecked_setup, unchecked_teardown);
    tcase_add_test(tc, test_migrate_slot_under_load);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(migration_suite());
}
