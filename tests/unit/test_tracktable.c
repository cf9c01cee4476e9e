/*
 * The tracking table (proxy/families/tracktable.h): which readers a push
 * tells and which it keeps, and which keys the node tracks, against its
 * header's rules, case by case and against a model of those rules under
 * random reads, pushes and closes.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/node.h"
#include "lib/base/hash.h"
#include "proxy/families/tracktable.h"

#define MAX_TOLD 4096

/* What notify and evicted were handed, in order. */
struct told {
    struct track_reader *who;
    char key[32];
    int ordered;
};

static struct told told[MAX_TOLD];
static int ntold;

static void record(struct track_reader *reader, const char *key, size_t len, int ordered,
                   void *arg)
{
    (void)arg;
    if (ntold >= MAX_TOLD || len >= sizeof told[0].key)
        ck_abort_msg("told too much");
    told[ntold].who = reader;
    memcpy(told[ntold].key, key, len);
    told[ntold].key[len] = '\0';
    told[ntold].ordered = ordered;
    ntold++;
}

/* Whether reader was told of key (ordered or not: -1 for either). */
static int was_told(struct track_reader *reader, const char *key, int ordered)
{
    for (int i = 0; i < ntold; i++)
        if (told[i].who == reader && strcmp(told[i].key, key) == 0 &&
            (ordered < 0 || told[i].ordered == ordered))
            return 1;
    return 0;
}

/* r read key on c, its read the pos-th there, tracked as how says; past
 * max keys (0: no bound) the oldest go. */
static int add_how(struct track_table *tt, const char *key, struct track_reader *r,
                   const struct node_conn *c, uint64_t pos, enum track_how how, int max)
{
    size_t len = strlen(key);
    return track_table_add(tt, key, len, hash_fnv32(key, len), r, c, pos, how, max, record,
                           NULL);
}

static int add_max(struct track_table *tt, const char *key, struct track_reader *r,
                   const struct node_conn *c, uint64_t pos, int max)
{
    return add_how(tt, key, r, c, pos, TRACK_CACHING, max);
}

static int seems_tracked(struct track_table *tt, const char *key, const struct node_conn *c)
{
    return track_table_seems_tracked(tt, hash_fnv32(key, strlen(key)), c);
}

/* A read of key on c behind CLIENT CACHING YES was answered. */
static void node_tracks(struct track_table *tt, const char *key, const struct node_conn *c)
{
    track_table_node_tracks(tt, key, strlen(key), hash_fnv32(key, strlen(key)), c);
}

static int add(struct track_table *tt, const char *key, struct track_reader *r,
               const struct node_conn *c, uint64_t pos)
{
    return add_max(tt, key, r, c, pos, 0);
}

static void push(struct track_table *tt, const char *key, const struct node_conn *c,
                 uint64_t answered)
{
    track_table_invalidate(tt, key, strlen(key), c, answered, record, NULL);
}

/* r's keys forgotten, as its client goes. */
static void reader_release(struct track_table *tt, struct track_reader *r)
{
    track_table_forget_reader(tt, r, (size_t)-1);
    ck_assert_uint_eq(r->nkeys, 0);
    ck_assert_uint_eq(r->listed, 0);
    ck_assert_uint_eq(r->bytes, 0);
}

/* The readers' keys forgotten, then the table freed. */
static void table_free(struct track_table *tt, struct track_reader *r, int n)
{
    for (int i = 0; i < n; i++)
        reader_release(tt, &r[i]);
    track_table_free(tt);
}

static struct track_table *table_new(void)
{
    struct track_table *tt = track_table_new();
    ck_assert_ptr_nonnull(tt);
    ntold = 0;
    return tt;
}

START_TEST(test_push_tells_answered_read)
{
    struct track_table *tt = table_new();
    struct track_reader a;
    struct node_conn c = { 0 };
    track_reader_init(&a);
    ck_assert_int_eq(add(tt, "k", &a, &c, 1), 0);
    ck_assert_uint_eq(track_table_keys(tt), 1);
    ck_assert_uint_eq(track_table_readers(tt), 1);
    ck_assert_uint_gt(a.bytes, 0);
    push(tt, "other", &c, 1);
    ck_assert_int_eq(ntold, 0);
    push(tt, "k", &c, 1);
    ck_assert_int_eq(ntold, 1);
    ck_assert(was_told(&a, "k", 1));
    ck_assert_uint_eq(track_table_keys(tt), 0);
    ck_assert_uint_eq(track_table_readers(tt), 0);
    ck_assert_uint_eq(a.bytes, 0);
    push(tt, "k", &c, 2);                       /* told once: it read it once */
    ck_assert_int_eq(ntold, 1);
    table_free(tt, &a, 1);
}
END_TEST

/* A read the node has not answered when it pushes ran after the write:
 * its reader is told all the same, ahead of that read's reply, and the key
 * stays listed for it. */
START_TEST(test_read_in_flight_is_told_and_kept)
{
    struct track_table *tt = table_new();
    struct track_reader a;
    struct node_conn c = { 0 };
    track_reader_init(&a);
    add(tt, "k", &a, &c, 5);
    push(tt, "k", &c, 4);
    ck_assert_int_eq(ntold, 1);
    ck_assert(was_told(&a, "k", 1));
    ck_assert_uint_eq(track_table_readers(tt), 1);
    push(tt, "k", &c, 5);
    ck_assert_int_eq(ntold, 2);
    ck_assert_uint_eq(track_table_readers(tt), 0);
    push(tt, "k", &c, 6);
    ck_assert_int_eq(ntold, 2);
    table_free(tt, &a, 1);
}
END_TEST

/* A key's readers stay listed while any read of the key is in flight,
 * and are told of each push meanwhile. */
START_TEST(test_kept_while_a_read_is_in_flight)
{
    struct track_table *tt = table_new();
    struct track_reader a, b;
    struct node_conn c = { 0 };
    track_reader_init(&a);
    track_reader_init(&b);
    add(tt, "k", &a, &c, 1);
    add(tt, "k", &b, &c, 3);
    add(tt, "k", &a, &c, 2);
    ck_assert_uint_eq(track_table_readers(tt), 2);
    push(tt, "k", &c, 2);                       /* b's read 3 ran after the write */
    ck_assert_int_eq(ntold, 2);
    ck_assert(was_told(&a, "k", 1) && was_told(&b, "k", 1));
    ck_assert_uint_eq(track_table_readers(tt), 2);
    push(tt, "k", &c, 3);
    ck_assert_int_eq(ntold, 4);
    ck_assert_uint_eq(track_table_readers(tt), 0);
    ck_assert_uint_eq(a.bytes + b.bytes, 0);
    reader_release(tt, &b);
    table_free(tt, &a, 1);
}
END_TEST

/* A read on another connection has no order with the push: told at once
 * (not ordered), kept while that connection has not answered it. A read
 * of a key on another connection than its readers': they are told (not
 * ordered) and dropped. */
START_TEST(test_read_on_another_connection)
{
    struct track_table *tt = table_new();
    struct track_reader a;
    struct node_conn c1 = { 0 }, c2 = { 0 };
    track_reader_init(&a);
    add(tt, "k", &a, &c2, 1);
    push(tt, "k", &c1, 100);
    ck_assert_int_eq(ntold, 1);
    ck_assert(was_told(&a, "k", 0));
    ck_assert_uint_eq(track_table_readers(tt), 1);
    c2.nanswered = 1;
    push(tt, "k", &c1, 100);
    ck_assert_int_eq(ntold, 2);
    ck_assert_uint_eq(track_table_readers(tt), 0);
    /* a read that moves to another connection */
    add(tt, "j", &a, &c1, 50);
    add(tt, "j", &a, &c2, 7);
    ck_assert_int_eq(ntold, 3);
    ck_assert(was_told(&a, "j", 0));
    ck_assert_uint_eq(track_table_readers(tt), 1);
    push(tt, "j", &c2, 0);
    ck_assert_int_eq(ntold, 4);
    ck_assert_uint_eq(track_table_readers(tt), 1);   /* read 7 in flight */
    push(tt, "j", &c1, 100);                         /* c2 answered none of it */
    ck_assert_int_eq(ntold, 5);
    ck_assert_uint_eq(track_table_readers(tt), 1);
    table_free(tt, &a, 1);
}
END_TEST

/* A read in flight that went without CLIENT CACHING YES ran after the
 * write untracked: the readers are told in order, then again after the
 * replies they are owed, and the key goes. One with it in flight: the
 * node tracks the key again, which stays. */
START_TEST(test_guessed_read_in_flight)
{
    struct track_table *tt = table_new();
    struct track_reader a, b;
    struct node_conn c = { 0 };
    track_reader_init(&a);
    track_reader_init(&b);
    ck_assert_int_eq(add_how(tt, "k", &a, &c, 1, TRACK_CACHING, 0), 0);
    ck_assert(!seems_tracked(tt, "k", &c));     /* not before its reply */
    node_tracks(tt, "k", &c);
    ck_assert(seems_tracked(tt, "k", &c));
    ck_assert_int_eq(add_how(tt, "k", &a, &c, 2, TRACK_CACHING, 0), 0);
    push(tt, "k", &c, 1);
    ck_assert_int_eq(ntold, 1);
    ck_assert(was_told(&a, "k", 1));
    ck_assert(!seems_tracked(tt, "k", &c));     /* until read 2 is answered */
    ck_assert_int_eq(add_how(tt, "k", &b, &c, 3, TRACK_IF_TRACKED, 0), 1);
    node_tracks(tt, "k", &c);
    ck_assert_int_eq(add_how(tt, "k", &b, &c, 3, TRACK_IF_TRACKED, 0), 0);
    push(tt, "k", &c, 2);
    ck_assert_int_eq(ntold, 5);
    ck_assert(was_told(&a, "k", 1) && was_told(&b, "k", 1));
    ck_assert(was_told(&a, "k", 0) && was_told(&b, "k", 0));
    ck_assert_uint_eq(track_table_keys(tt), 0);
    ck_assert(!seems_tracked(tt, "k", &c));
    reader_release(tt, &b);
    table_free(tt, &a, 1);
}
END_TEST

/* The node tracks a key on a connection from a read there with CLIENT
 * CACHING YES until its invalidation: a read there without one is listed
 * then, and not listed (the caller tells its reader) otherwise. */
START_TEST(test_node_tracks_after_caching)
{
    struct track_table *tt = table_new();
    struct track_reader a, b;
    struct node_conn c1 = { 0 }, c2 = { 0 };
    track_reader_init(&a);
    track_reader_init(&b);
    ck_assert(!seems_tracked(tt, "k", &c1));
    ck_assert_int_eq(add_how(tt, "k", &a, &c1, 1, TRACK_IF_TRACKED, 0), 1);
    ck_assert_uint_eq(track_table_keys(tt), 0);
    ck_assert_int_eq(add_how(tt, "k", &a, &c1, 2, TRACK_EVERY_KEY, 0), 0);
    ck_assert(!seems_tracked(tt, "k", &c1));    /* tracked while BCAST only */
    ck_assert_int_eq(add_how(tt, "k", &b, &c1, 3, TRACK_IF_TRACKED, 0), 1);
    ck_assert_uint_eq(track_table_readers(tt), 1);
    ck_assert_int_eq(add_how(tt, "k", &a, &c1, 4, TRACK_CACHING, 0), 0);
    ck_assert(!seems_tracked(tt, "k", &c1));
    node_tracks(tt, "k", &c2);                  /* not where it is listed */
    ck_assert(!seems_tracked(tt, "k", &c1) && !seems_tracked(tt, "k", &c2));
    node_tracks(tt, "k", &c1);
    ck_assert(seems_tracked(tt, "k", &c1));
    ck_assert(!seems_tracked(tt, "k", &c2));
    ck_assert_int_eq(add_how(tt, "k", &b, &c1, 5, TRACK_IF_TRACKED, 0), 0);
    ck_assert_uint_eq(track_table_readers(tt), 2);
    ck_assert_int_eq(add_how(tt, "k", &b, &c2, 6, TRACK_IF_TRACKED, 0), 1);
    ck_assert_int_eq(ntold, 0);
    c1.nanswered = 5;
    push(tt, "k", &c1, 5);
    ck_assert_int_eq(ntold, 2);
    ck_assert(!seems_tracked(tt, "k", &c1));
    ck_assert_int_eq(add_how(tt, "k", &b, &c1, 7, TRACK_IF_TRACKED, 0), 1);
    /* a read on another connection: not tracked on the first one now */
    ck_assert_int_eq(add_how(tt, "k", &a, &c1, 8, TRACK_CACHING, 0), 0);
    node_tracks(tt, "k", &c1);
    ck_assert_int_eq(add_how(tt, "k", &b, &c2, 9, TRACK_EVERY_KEY, 0), 0);
    ck_assert(!seems_tracked(tt, "k", &c1) && !seems_tracked(tt, "k", &c2));
    ck_assert_int_eq(add_how(tt, "k", &a, &c1, 10, TRACK_IF_TRACKED, 0), 1);
    /* a key whose last reader goes: it stays while the node tracks it, for
     * the next reader's read; else it leaves */
    struct track_reader j1, j2;
    size_t keys = track_table_keys(tt);
    track_reader_init(&j1);
    track_reader_init(&j2);
    ck_assert_int_eq(add_how(tt, "j", &j1, &c1, 11, TRACK_CACHING, 0), 0);
    node_tracks(tt, "j", &c1);
    ck_assert(seems_tracked(tt, "j", &c1));
    reader_release(tt, &j1);
    ck_assert_uint_eq(track_table_keys(tt), keys + 1);
    ck_assert(seems_tracked(tt, "j", &c1));
    ck_assert_int_eq(add_how(tt, "j", &j2, &c1, 12, TRACK_IF_TRACKED, 0), 0);
    reader_release(tt, &j2);
    c1.nanswered = 12;
    push(tt, "j", &c1, 12);
    ck_assert_uint_eq(track_table_keys(tt), keys);
    ck_assert(!seems_tracked(tt, "j", &c1));
    track_reader_init(&j1);
    ck_assert_int_eq(add_how(tt, "i", &j1, &c1, 13, TRACK_CACHING, 0), 0);
    reader_release(tt, &j1);
    ck_assert_uint_eq(track_table_keys(tt), keys);
    reader_release(tt, &b);
    table_free(tt, &a, 1);
}
END_TEST

/* What the node tracks survives the hash's growth, and goes with a clear. */
START_TEST(test_guesses_as_the_table_grows)
{
    enum { N = 5000 };
    struct track_table *tt = table_new();
    struct track_reader a;
    struct node_conn c = { 0 };
    char key[16];
    int seen = 0, wrong = 0;
    track_reader_init(&a);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "k%d", i);
        ck_assert_int_eq(add_how(tt, key, &a, &c, 1, i % 2 ? TRACK_CACHING : TRACK_EVERY_KEY,
                                 0), 0);
        if (i % 2)
            node_tracks(tt, key, &c);
    }
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "k%d", i);
        if (i % 2 == 0)
            wrong += seems_tracked(tt, key, &c);    /* bits other keys set */
        seen += i % 2 && seems_tracked(tt, key, &c);
    }
    ck_assert_int_eq(seen, N / 2);
    ck_assert_int_lt(wrong, N / 2 / 10);
    track_table_clear(tt);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "k%d", i);
        ck_assert(!seems_tracked(tt, key, &c));
    }
    table_free(tt, &a, 1);
}
END_TEST

/* A read guessed tracked from bits other keys set is not listed; its bits
 * are cleared, so the key's next read goes with CLIENT CACHING YES (and
 * some other key's too: it only costs a CLIENT CACHING YES). */
START_TEST(test_wrong_guess_clears_its_bits)
{
    enum { TRACKED = 300 };
    struct track_table *tt = table_new();
    struct track_reader a;
    struct node_conn c = { 0 };
    char key[16];
    int i, still = 0;
    track_reader_init(&a);
    for (i = 0; i < TRACKED; i++) {
        snprintf(key, sizeof key, "k%d", i);
        ck_assert_int_eq(add_how(tt, key, &a, &c, 1, TRACK_CACHING, 0), 0);
        node_tracks(tt, key, &c);
    }
    for (i = 0; i < 100000; i++) {
        snprintf(key, sizeof key, "j%d", i);
        if (seems_tracked(tt, key, &c))
            break;
    }
    ck_assert_int_lt(i, 100000);
    ck_assert_int_eq(add_how(tt, key, &a, &c, 2, TRACK_IF_TRACKED, 0), 1);
    ck_assert_uint_eq(track_table_readers(tt), TRACKED);
    ck_assert(!seems_tracked(tt, key, &c));
    for (i = 0; i < TRACKED; i++) {
        snprintf(key, sizeof key, "k%d", i);
        still += seems_tracked(tt, key, &c);
        /* the node tracks it: listed, guessed or not */
        ck_assert_int_eq(add_how(tt, key, &a, &c, 3, TRACK_IF_TRACKED, 0), 0);
    }
    ck_assert_int_lt(still, TRACKED);
    table_free(tt, &a, 1);
}
END_TEST

/* A key is found again whatever its length: in the key's line, past it,
 * and across the words the table compares it by. */
START_TEST(test_keys_of_every_length)
{
    enum { LONGEST = 80 };
    struct track_table *tt = table_new();
    struct track_reader a, b;
    struct node_conn c = { 0 };
    char key[LONGEST + 1];
    track_reader_init(&a);
    track_reader_init(&b);
    for (int len = 1; len <= LONGEST; len++) {
        memset(key, 'x', (size_t)len);
        key[len] = '\0';
        ck_assert_int_eq(add(tt, key, &a, &c, 1), 0);
    }
    for (int len = 1; len <= LONGEST; len++) {
        memset(key, 'x', (size_t)len);
        key[len] = '\0';
        ck_assert_int_eq(add(tt, key, &b, &c, 2), 0);
    }
    ck_assert_uint_eq(track_table_keys(tt), LONGEST);
    ck_assert_uint_eq(track_table_readers(tt), 2 * LONGEST);
    reader_release(tt, &b);
    table_free(tt, &a, 1);
}
END_TEST

/* Two keys with the same hash_fnv32 and length are two keys: the bytes
 * tell them apart (in the first word and past it). */
START_TEST(test_same_hash_same_length)
{
    static const char *pairs[][2] = {
        { "col:120xxx", "col:854596" },
        { "collision-long-key:8982yyyyyyy", "collision-long-key:223206yyyyy" },
    };
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        struct track_table *tt = table_new();
        struct track_reader r[2];
        struct node_conn c = { 0 };
        const char *one = pairs[p][0], *other = pairs[p][1];
        ck_assert_uint_eq(strlen(one), strlen(other));
        ck_assert_uint_eq(hash_fnv32(one, strlen(one)), hash_fnv32(other, strlen(other)));
        track_reader_init(&r[0]);
        track_reader_init(&r[1]);
        ck_assert_int_eq(add(tt, one, &r[0], &c, 1), 0);
        ck_assert_int_eq(add(tt, other, &r[1], &c, 2), 0);
        ck_assert_uint_eq(track_table_keys(tt), 2);
        c.nanswered = 2;
        push(tt, other, &c, 2);
        ck_assert_int_eq(ntold, 1);
        ck_assert(was_told(&r[1], other, -1) && !was_told(&r[0], one, -1));
        ck_assert_uint_eq(track_table_keys(tt), 1);
        ntold = 0;
        table_free(tt, r, 2);
    }
}
END_TEST

START_TEST(test_many_readers_of_one_key)
{
    enum { N = 1000 };
    struct track_table *tt = table_new();
    static struct track_reader r[N];
    struct node_conn c = { 0 };
    for (int i = 0; i < N; i++) {
        track_reader_init(&r[i]);
        ck_assert_int_eq(add(tt, "hot", &r[i], &c, (uint64_t)i + 1), 0);
        ck_assert_int_eq(add(tt, "hot", &r[i], &c, (uint64_t)i + 1), 0);
    }
    ck_assert_uint_eq(track_table_keys(tt), 1);
    ck_assert_uint_eq(track_table_readers(tt), N);
    track_table_forget_reader(tt, &r[7], (size_t)-1);
    ck_assert_uint_eq(track_table_readers(tt), N - 1);
    ck_assert_uint_eq(r[7].bytes, 0);
    push(tt, "hot", &c, N / 2);                 /* reads 1..500 answered */
    ck_assert_int_eq(ntold, N - 1);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(was_told(&r[i], "hot", 1), i != 7);
    ck_assert_uint_eq(track_table_readers(tt), N - 1);
    push(tt, "hot", &c, N);
    ck_assert_int_eq(ntold, 2 * (N - 1));
    ck_assert_uint_eq(track_table_keys(tt), 0);
    ck_assert_uint_eq(track_table_readers(tt), 0);
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(r[i].bytes, 0);
    table_free(tt, r, N);
}
END_TEST

START_TEST(test_forget_reader_in_steps)
{
    struct track_table *tt = table_new();
    struct track_reader a, b;
    struct node_conn c = { 0 };
    char key[16];
    track_reader_init(&a);
    track_reader_init(&b);
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "k%d", i);
        add(tt, key, &a, &c, 1);
        if (i % 2 == 0)
            add(tt, key, &b, &c, 1);
    }
    ck_assert_uint_eq(track_table_keys(tt), 100);
    ck_assert_uint_eq(track_table_readers(tt), 150);
    ck_assert_uint_eq(track_table_forget_reader(tt, &a, 30), 30);
    ck_assert_uint_eq(track_table_readers(tt), 120);
    ck_assert_uint_eq(track_table_forget_reader(tt, &a, 1000), 70);
    ck_assert_uint_eq(track_table_forget_reader(tt, &a, 1000), 0);
    ck_assert_uint_eq(a.bytes, 0);
    ck_assert_uint_eq(track_table_keys(tt), 50);    /* b's */
    ck_assert_uint_eq(track_table_readers(tt), 50);
    push(tt, "k2", &c, 1);
    ck_assert_int_eq(ntold, 1);
    ck_assert(was_told(&b, "k2", 1));
    track_table_clear(tt);
    ck_assert_uint_eq(track_table_keys(tt), 0);
    ck_assert_uint_eq(b.bytes, 0);
    ck_assert_int_eq(ntold, 1);                 /* clear tells nobody */
    reader_release(tt, &b);
    table_free(tt, &a, 1);
}
END_TEST

/* Past max keys the key first read longest ago goes, its readers evicted
 * (not ordered). */
START_TEST(test_eviction_takes_the_oldest_key)
{
    struct track_table *tt = table_new();
    struct track_reader a, b;
    struct node_conn c = { 0 };
    track_reader_init(&a);
    track_reader_init(&b);
    ck_assert_int_eq(add_max(tt, "k1", &a, &c, 1, 3), 0);
    ck_assert_int_eq(add_max(tt, "k1", &b, &c, 1, 3), 0);
    ck_assert_int_eq(add_max(tt, "k2", &a, &c, 1, 3), 0);
    ck_assert_int_eq(add_max(tt, "k3", &a, &c, 1, 3), 0);
    ck_assert_int_eq(add_max(tt, "k1", &a, &c, 2, 3), 0);
    ck_assert_int_eq(ntold, 0);
    ck_assert_int_eq(add_max(tt, "k4", &a, &c, 1, 3), 0);
    ck_assert_int_eq(ntold, 2);
    ck_assert(was_told(&a, "k1", 0));
    ck_assert(was_told(&b, "k1", 0));
    ck_assert_uint_eq(track_table_keys(tt), 3);
    ck_assert_uint_eq(b.bytes, 0);
    ck_assert_int_eq(add_max(tt, "k5", &b, &c, 1, 3), 0);
    ck_assert_int_eq(ntold, 3);
    ck_assert(was_told(&a, "k2", 0));
    reader_release(tt, &b);
    table_free(tt, &a, 1);
}
END_TEST

/* A reader told and reading again, over and over, names the key again
 * each time: its array stays bounded, and the table's bytes come back to
 * what an empty table holds. */
START_TEST(test_reader_names_stay_bounded)
{
    struct track_table *tt = table_new();
    struct track_reader a, b;
    struct node_conn c = { 0 };
    size_t empty = track_table_bytes(tt);
    track_reader_init(&a);
    track_reader_init(&b);
    add(tt, "k", &b, &c, 1);                /* b reads it again after each push too */
    for (uint64_t i = 2; i < 10000; i++) {
        add(tt, "k", &a, &c, i);
        add(tt, i % 2 ? "odd" : "even", &a, &c, i);
        c.nanswered = i;
        push(tt, "k", &c, i);
        ck_assert_int_eq(ntold, 2);
        ntold = 0;
        ck_assert_uint_le(a.listed, 2);       /* odd and even */
        ck_assert_uint_le(a.capkeys, 64);
        add(tt, "k", &b, &c, i + 1);
    }
    ck_assert_uint_eq(track_table_keys(tt), 3);
    reader_release(tt, &b);
    reader_release(tt, &a);
    ck_assert_uint_eq(track_table_keys(tt), 0);
    ck_assert_uint_eq(track_table_bytes(tt), empty);
    track_table_free(tt);
}
END_TEST

/* ---- the model: the header's rules written out plainly ---- */

#define MKEYS 24
#define MREADERS 12
#define MCONNS 3

struct model_entry {
    int on;
};

static struct model_entry model[MKEYS][MREADERS];
static int model_age[MKEYS];            /* when the key entered the table; -1: not in it */
static int model_conn[MKEYS];           /* the connection of its reads; -1: none */
static uint64_t model_last[MKEYS];      /* the last of them */
static int model_tracks[MKEYS];         /* the node tracks it on model_conn */
static uint64_t model_guessed[MKEYS];   /* its last TRACK_IF_TRACKED read there */
static int model_clock;
static struct track_reader readers[MREADERS];
static struct node_conn conns[MCONNS];
static int expect_told[MKEYS][MREADERS];    /* 1: told not ordered, 2: ordered; or both */

static int model_key_listed(int k)
{
    for (int r = 0; r < MREADERS; r++)
        if (model[k][r].on)
            return 1;
    return 0;
}

static void model_key_leaves(int k)
{
    model_age[k] = -1;
    model_conn[k] = -1;
    model_tracks[k] = 0;
}

/* Its readers went or forgot it: a key with none left leaves, unless the
 * node tracks it. */
static void model_key_check(int k)
{
    if (!model_key_listed(k) && !model_tracks[k])
        model_key_leaves(k);
}

static size_t model_keys(void)
{
    size_t n = 0;
    for (int k = 0; k < MKEYS; k++)
        n += model_age[k] >= 0;
    return n;
}

static size_t model_items(void)
{
    size_t n = 0;
    for (int k = 0; k < MKEYS; k++)
        for (int r = 0; r < MREADERS; r++)
            n += model[k][r].on;
    return n;
}

/* 1 when the read is not listed (TRACK_IF_TRACKED, and not tracked) */
static int model_add(int k, int r, int c, uint64_t pos, enum track_how how, int max)
{
    if (how == TRACK_IF_TRACKED && (model_age[k] < 0 || model_conn[k] != c || !model_tracks[k]))
        return 1;
    if (model_age[k] < 0) {
        while (max > 0 && model_keys() >= (size_t)max) {
            int oldest = -1;
            for (int i = 0; i < MKEYS; i++)
                if (model_age[i] >= 0 && (oldest < 0 || model_age[i] < model_age[oldest]))
                    oldest = i;
            for (int i = 0; i < MREADERS; i++)
                if (model[oldest][i].on) {
                    expect_told[oldest][i] |= 1;
                    model[oldest][i].on = 0;
                }
            model_age[oldest] = -1;
            model_conn[oldest] = -1;
            model_tracks[oldest] = 0;
        }
        model_age[k] = model_clock++;
    }
    if (model_conn[k] != c) {
        for (int i = 0; i < MREADERS; i++)  /* read on another connection: told, dropped */
            if (model[k][i].on) {
                expect_told[k][i] |= 1;
                model[k][i].on = 0;
            }
        model_conn[k] = c;
        model_last[k] = pos;
        model_tracks[k] = 0;
        model_guessed[k] = 0;
    } else if (pos > model_last[k]) {
        model_last[k] = pos;
    }
    if (how == TRACK_IF_TRACKED && pos > model_guessed[k])
        model_guessed[k] = pos;
    model[k][r].on = 1;
    return 0;
}

static void model_push(int k, int c, uint64_t answered)
{
    if (model_age[k] < 0)
        return;
    int ordered = model_conn[k] == c;
    uint64_t done = ordered ? answered : conns[model_conn[k]].nanswered;
    int again = ordered && model_guessed[k] > done;   /* a read in flight, untracked */
    if (ordered)
        model_tracks[k] = 0;
    for (int r = 0; r < MREADERS; r++) {
        if (!model[k][r].on)
            continue;
        expect_told[k][r] |= ordered ? 2 : 1;
        if (model_last[k] > done && again)
            expect_told[k][r] |= 1;
        if (model_last[k] <= done || again)
            model[k][r].on = 0;
    }
    if (!model_key_listed(k))
        model_key_leaves(k);
}

static int reader_index(const struct track_reader *who)
{
    for (int r = 0; r < MREADERS; r++)
        if (&readers[r] == who)
            return r;
    ck_abort_msg("told a reader that is not one");
    return -1;
}

/* What the table told since the last check is what the model expects. */
static void told_check(void)
{
    static int got[MKEYS][MREADERS];
    memset(got, 0, sizeof got);
    for (int i = 0; i < ntold; i++) {
        int k = atoi(told[i].key + 1), r = reader_index(told[i].who);
        int bit = told[i].ordered ? 2 : 1;
        if (got[k][r] & bit)
            ck_abort_msg("key %d reader %d: told twice", k, r);
        got[k][r] |= bit;
    }
    for (int k = 0; k < MKEYS; k++)
        for (int r = 0; r < MREADERS; r++)
            if (got[k][r] != expect_told[k][r])
                ck_abort_msg("key %d reader %d: told %d, expected %d", k, r, got[k][r],
                             expect_told[k][r]);
    memset(expect_told, 0, sizeof expect_told);
    ntold = 0;
}

/* The table's guesses of what the node tracks: none when the model has the
 * node track nothing (every way a key stops being tracked clears its
 * bit); of the keys it tracks, how many seem tracked, added to *guessed
 * and *tracked. */
static void guesses_check(struct track_table *tt, int step, size_t *guessed, size_t *tracked)
{
    int any = 0;
    for (int i = 0; i < MKEYS; i++)
        any |= model_tracks[i];
    for (int i = 0; i < MKEYS; i++) {
        char name[8];
        snprintf(name, sizeof name, "k%d", i);
        for (int j = 0; j < MCONNS; j++) {
            int seems = seems_tracked(tt, name, &conns[j]);
            if (seems && !any)
                ck_abort_msg("step %d: key %d seems tracked on %d", step, i, j);
            if (model_tracks[i] && model_conn[i] == j) {
                *guessed += (size_t)seems;
                (*tracked)++;
            }
        }
    }
}

/* Run 0 with no bound, 1 with one, 2 with readers past the first 60
 * numbers (kept by readers of another key): a key lists those otherwise. */
START_TEST(test_against_the_model)
{
    enum { PADS = 60 };
    static struct track_reader pads[PADS];
    struct track_table *tt = table_new();
    struct node_conn pad_conn = { 0 };
    uint64_t sent[MCONNS] = { 0 };
    size_t guessed = 0, tracked = 0;
    int max = _i == 1 ? 9 : 0, npads = _i == 2 ? PADS : 0;
    srand(1234 + (unsigned)_i);
    for (int p = 0; p < npads; p++) {
        track_reader_init(&pads[p]);
        ck_assert_int_eq(add(tt, "pad", &pads[p], &pad_conn, 1), 0);
    }
    memset(model, 0, sizeof model);
    memset(conns, 0, sizeof conns);
    memset(expect_told, 0, sizeof expect_told);
    for (int k = 0; k < MKEYS; k++) {
        model_age[k] = -1;
        model_conn[k] = -1;
        model_tracks[k] = 0;
        model_guessed[k] = 0;
    }
    for (int r = 0; r < MREADERS; r++)
        track_reader_init(&readers[r]);
    for (int step = 0; step < 200000; step++) {
        int k = rand() % MKEYS, r = rand() % MREADERS, c = rand() % MCONNS, op = rand() % 100;
        char key[8];
        snprintf(key, sizeof key, "k%d", k);
        if (op < 55) {
            uint64_t pos = ++sent[c];
            enum track_how how = (enum track_how)(rand() % 3);
            int rc = add_how(tt, key, &readers[r], &conns[c], pos, how, max);
            if (rc < 0)
                ck_abort_msg("out of memory");
            if (rc != model_add(k, r, c, pos, how, max))
                ck_abort_msg("step %d: key %d read on %d (%d): %d", step, k, c, how, rc);
        } else if (op < 62) {
            /* a read behind CLIENT CACHING YES answered */
            track_table_node_tracks(tt, key, strlen(key), hash_fnv32(key, strlen(key)),
                                    &conns[c]);
            if (model_age[k] >= 0 && model_conn[k] == c)
                model_tracks[k] = 1;
        } else if (op < 75) {
            /* the node answers some of what was sent */
            uint64_t left = sent[c] - conns[c].nanswered;
            conns[c].nanswered += left ? (uint64_t)rand() % (left + 1) : 0;
        } else if (op < 95) {
            push(tt, key, &conns[c], conns[c].nanswered);
            model_push(k, c, conns[c].nanswered);
        } else {
            track_table_forget_reader(tt, &readers[r], (size_t)-1);
            if (readers[r].bytes != 0)
                ck_abort_msg("reader %d still charged %zu bytes", r, readers[r].bytes);
            for (int i = 0; i < MKEYS; i++) {
                model[i][r].on = 0;
                model_key_check(i);
            }
        }
        told_check();
        guesses_check(tt, step, &guessed, &tracked);
        if (track_table_keys(tt) != model_keys() + (npads > 0) ||
            track_table_readers(tt) != model_items() + (size_t)npads)
            ck_abort_msg("step %d: %zu keys, %zu entries; the model has %zu, %zu", step,
                         track_table_keys(tt), track_table_readers(tt), model_keys(),
                         model_items());
    }
    /* a key's bit is cleared only for another key that shares it */
    if (guessed * 10 < tracked * 9)
        ck_abort_msg("%zu of %zu tracked keys seemed tracked", guessed, tracked);
    track_table_clear(tt);
    for (int r = 0; r < MREADERS; r++)
        ck_assert_uint_eq(readers[r].bytes, 0);
    for (int p = 0; p < npads; p++)
        reader_release(tt, &pads[p]);
    table_free(tt, readers, MREADERS);
}
END_TEST

static Suite *tracktable_suite(void)
{
    Suite *s = suite_create("tracktable");
    TCase *tc = tcase_create("tracktable");
    tcase_add_test(tc, test_push_tells_answered_read);
    tcase_add_test(tc, test_read_in_flight_is_told_and_kept);
    tcase_add_test(tc, test_kept_while_a_read_is_in_flight);
    tcase_add_test(tc, test_read_on_another_connection);
    tcase_add_test(tc, test_guessed_read_in_flight);
    tcase_add_test(tc, test_node_tracks_after_caching);
    tcase_add_test(tc, test_guesses_as_the_table_grows);
    tcase_add_test(tc, test_wrong_guess_clears_its_bits);
    tcase_add_test(tc, test_keys_of_every_length);
    tcase_add_test(tc, test_same_hash_same_length);
    tcase_add_test(tc, test_many_readers_of_one_key);
    tcase_add_test(tc, test_forget_reader_in_steps);
    tcase_add_test(tc, test_eviction_takes_the_oldest_key);
    tcase_add_test(tc, test_reader_names_stay_bounded);
    tcase_add_loop_test(tc, test_against_the_model, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tracktable_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
