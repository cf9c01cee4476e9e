/*
 * The in-order reply queue (proxy/core/request.h, proxy/core/client.h): replies leave
 * a client in the order it sent its commands, whatever order they finish in.
 *
 * No sockets: the client is a struct whose output evbuffer is read back
 * directly. Its io is IO_CONNECTING, so asking for a write does nothing, and
 * its output limits are 0 (none), so it is never closed.
 *
 * After every reply the test checks the whole output: it must be the replies
 * of the longest finished prefix of the queue, in queue order, and nothing
 * else; the requests of that prefix must be back in the worker's pool.
 * Orders: every permutation for 3 requests, random ones for 100 (some added
 * while others are in flight, so pooled requests are reused), and a parent
 * whose parts and request_parts_sent() come in every order.
 */
#include <check.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/config/config.h"
#include "proxy/core/client.h"
#include "proxy/core/merge.h"
#include "proxy/core/request.h"
#include "proxy/core/worker.h"

#define NMAX      128
#define REPLY_MAX 64

/* How a request gets its reply. */
enum finish_mode {
    BY_BYTES,       /* request_deliver_bytes(r, bytes, len) */
    BY_BUFFER,      /* request_deliver of a view of in, more bytes behind it in in */
    BY_FAIL,        /* request_fail(r, msg) */
    NMODES
};

/* A client with its worker and config, and what the test expects of it. */
struct world {
    struct config cfg;
    struct worker w;
    struct client c;
    int pool;                   /* what w.nfree_requests must be */
};

/* The queue under test: entry i is the i-th request the client sent. */
struct run {
    struct world x;
    int n;                      /* requests queued so far */
    int flushed;                /* the first `flushed` are written and freed */
    struct request *r[NMAX];    /* valid while not flushed */
    int done[NMAX];
    char want[NMAX][REPLY_MAX];
};

static void world_init(struct world *x)
{
    memset(x, 0, sizeof *x);
    client_init(NULL);              /* replies reach the client (request.h) */
    request_merge_register(merge_replies);
    config_defaults(&x->cfg);
    x->cfg.client_output_hard_limit = 0;
    x->cfg.client_output_soft_limit = 0;
    x->w.cfg = &x->cfg;
    x->c.worker = &x->w;
    x->c.state = CLIENT_ACTIVE;
    x->c.io.state = IO_CONNECTING;
    x->c.io.loop = &x->w.loop;      /* for its buffer pool only */
    x->c.io.out = evbuffer_new();
    ck_assert_ptr_nonnull(x->c.io.out);
    TAILQ_INIT(&x->c.queue);
}

/* Frees what is still queued, the pool and the output. */
static void world_free(struct world *x)
{
    struct request *r;

    while ((r = TAILQ_FIRST(&x->c.queue)) != NULL) {
        TAILQ_REMOVE(&x->c.queue, r, link);
        request_free(r);
    }
    while ((r = x->w.free_requests) != NULL) {
        x->w.free_requests = r->next_free;
        if (r->reply)
            evbuffer_free(r->reply);
        free(r);
    }
    evbuffer_free(x->c.io.out);
    free(x->c.io.wbuf);
    io_loop_free(&x->w.loop);
    config_free(&x->cfg);
}

/* A request of the client, at the end of its queue, as the reader makes it. */
static struct request *world_queue(struct world *x)
{
    struct request *r = request_new(&x->w);

    ck_assert_ptr_nonnull(r);
    if (x->pool > 0)
        x->pool--;
    ck_assert_int_eq(x->w.nfree_requests, x->pool);
    r->client = &x->c;
    TAILQ_INSERT_TAIL(&x->c.queue, r, link);
    x->c.nqueued++;
    return r;
}

/* The client's output, whole (its flat part, then its evbuffer), must be
 * want (len bytes). */
static void expect_output(struct world *x, const char *want, size_t len, const char *when)
{
    struct evbuffer *out = evbuffer_new();
    struct io_conn *io = &x->c.io;
    evbuffer_add(out, io->wbuf ? io->wbuf + io->wstart : "", io->wend - io->wstart);
    evbuffer_add(out, evbuffer_pullup(io->out, -1), evbuffer_get_length(io->out));
    size_t have = evbuffer_get_length(out);
    const char *got = have ? (const char *)evbuffer_pullup(out, -1) : "";

    ck_assert_msg(have == len && memcmp(got, want, len) == 0,
                  "%s: output is '%.*s' (%zu bytes), want '%.*s' (%zu bytes)", when,
                  (int)(have > 300 ? 300 : have), got, have, (int)(len > 300 ? 300 : len), want, len);
    evbuffer_free(out);
}

/* ---------- plain requests ---------- */

/* Distinct replies of several shapes, and the error request_fail() gives. */
static void reply_for(int i, enum finish_mode mode, char *buf, size_t size)
{
    if (mode == BY_FAIL)
        snprintf(buf, size, "-ERR failed %d\r\n", i);
    else if (i % 3 == 0)
        snprintf(buf, size, "$%d\r\nreply-%03d\r\n", 9, i);
    else if (i % 3 == 1)
        snprintf(buf, size, ":%d\r\n", 1000 + i);
    else
        snprintf(buf, size, "*2\r\n+r%d\r\n$-1\r\n", i);
}

static void run_init(struct run *t)
{
    memset(t, 0, sizeof *t);
    world_init(&t->x);
}

/* Queue one more request; its reply is decided when it finishes. */
static void run_add(struct run *t)
{
    ck_assert_int_lt(t->n, NMAX);
    t->r[t->n++] = world_queue(&t->x);
}

/* Everything the queue promises, after each step. */
static void run_check(struct run *t, const char *when)
{
    char want[NMAX * REPLY_MAX];
    size_t len = 0;
    struct world *x = &t->x;

    for (int i = 0; i < t->flushed; i++) {
        size_t n = strlen(t->want[i]);
        memcpy(want + len, t->want[i], n);
        len += n;
    }
    expect_output(x, want, len, when);
    ck_assert_msg(x->w.nfree_requests == x->pool, "%s: %d requests in the pool, want %d", when,
                  x->w.nfree_requests, x->pool);
    ck_assert_int_eq(x->c.nqueued, t->n - t->flushed);
    if (t->flushed < t->n)
        ck_assert_ptr_eq(TAILQ_FIRST(&x->c.queue), t->r[t->flushed]);
    else
        ck_assert(TAILQ_EMPTY(&x->c.queue));
}

/* Request i gets its reply by mode; then the queue is checked. */
static void run_finish(struct run *t, int i, enum finish_mode mode)
{
    char when[64], msg[32];
    struct request *r = t->r[i];
    size_t len;

    ck_assert(!t->done[i]);
    reply_for(i, mode, t->want[i], sizeof t->want[i]);
    len = strlen(t->want[i]);
    if (mode == BY_BYTES) {
        request_deliver_bytes(r, t->want[i], len);
    } else if (mode == BY_BUFFER) {
        struct evbuffer *in = evbuffer_new();
        ck_assert_ptr_nonnull(in);
        evbuffer_add(in, t->want[i], len);
        evbuffer_add(in, "+next\r\n", 7);
        struct reply_view v = { in, NULL, len };
        request_deliver(r, &v);
        ck_assert_msg(evbuffer_get_length(in) == 7 &&
                      memcmp(evbuffer_pullup(in, -1), "+next\r\n", 7) == 0,
                      "request_deliver() did not take exactly the reply off the input");
        evbuffer_free(in);
    } else {
        snprintf(msg, sizeof msg, "ERR failed %d", i);
        request_fail(r, msg);
    }
    t->done[i] = 1;
    while (t->flushed < t->n && t->done[t->flushed]) {
        t->flushed++;
        t->x.pool++;
    }
    snprintf(when, sizeof when, "after request %d of %d finished", i, t->n);
    run_check(t, when);
}

/* The next permutation of a[0..n) in lexicographic order; 0 after the last. */
static int next_permutation(int *a, int n)
{
    int i = n - 2, j = n - 1;

    while (i >= 0 && a[i] >= a[i + 1])
        i--;
    if (i < 0)
        return 0;
    while (a[j] <= a[i])
        j--;
    int tmp = a[i];
    a[i] = a[j];
    a[j] = tmp;
    for (int lo = i + 1, hi = n - 1; lo < hi; lo++, hi--) {
        tmp = a[lo];
        a[lo] = a[hi];
        a[hi] = tmp;
    }
    return 1;
}

/* xorshift32: the same "random" orders on every run. */
static unsigned rnd(unsigned *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Three requests, finished in each of the 6 orders, with each of the 27
 * ways of finishing them. */
START_TEST(test_three_every_order)
{
    int orders = 0;
    int perm[3] = { 0, 1, 2 };

    do {
        for (int modes = 0; modes < NMODES * NMODES * NMODES; modes++) {
            struct run t;
            int m = modes;

            run_init(&t);
            for (int i = 0; i < 3; i++)
                run_add(&t);
            run_check(&t, "before any reply");
            for (int k = 0; k < 3; k++, m /= NMODES)
                run_finish(&t, perm[k], (enum finish_mode)(m % NMODES));
            ck_assert_int_eq(t.x.w.nfree_requests, 3);
            world_free(&t.x);
        }
        orders++;
    } while (next_permutation(perm, 3));
    ck_assert_int_eq(orders, 6);
}
END_TEST

/* A request finished right away (a local reply) goes out at once when it
 * is the head, and waits behind an unfinished head otherwise. */
START_TEST(test_head_first_goes_at_once)
{
    struct run t;

    run_init(&t);
    run_add(&t);
    run_finish(&t, 0, BY_BYTES);
    ck_assert_int_eq(t.flushed, 1);
    run_add(&t);
    run_add(&t);
    run_finish(&t, 2, BY_FAIL);
    ck_assert_int_eq(t.flushed, 1);
    run_finish(&t, 1, BY_BUFFER);
    ck_assert_int_eq(t.flushed, 3);
    world_free(&t.x);
}
END_TEST

/* 100 requests finished in random orders and ways. */
START_TEST(test_hundred_random_orders)
{
    unsigned seed = 2463534242u;

    for (int round = 0; round < 200; round++) {
        int order[100];
        struct run t;

        run_init(&t);
        for (int i = 0; i < 100; i++) {
            run_add(&t);
            order[i] = i;
        }
        for (int i = 99; i > 0; i--) {       /* Fisher-Yates */
            int j = (int)(rnd(&seed) % (unsigned)(i + 1)), tmp = order[i];
            order[i] = order[j];
            order[j] = tmp;
        }
        for (int k = 0; k < 100; k++)
            run_finish(&t, order[k], (enum finish_mode)(rnd(&seed) % NMODES));
        ck_assert_int_eq(t.flushed, 100);
        ck_assert_int_eq(t.x.w.nfree_requests, 100);
        world_free(&t.x);
    }
}
END_TEST

/* A pipelining client: new requests arrive while older ones are in flight,
 * taking requests from the pool that finished ones went back to. */
START_TEST(test_random_with_arrivals)
{
    unsigned seed = 88172645u;

    for (int round = 0; round < 200; round++) {
        struct run t;
        int finished = 0;

        run_init(&t);
        while (finished < 100) {
            int pending = t.n - finished;
            if (t.n < 100 && (pending == 0 || rnd(&seed) % 3 == 0)) {
                run_add(&t);
                run_check(&t, "after a request arrived");
                continue;
            }
            int k = (int)(rnd(&seed) % (unsigned)pending), i;
            for (i = 0; i < t.n; i++)        /* the k-th unfinished one */
                if (!t.done[i] && k-- == 0)
                    break;
            run_finish(&t, i, (enum finish_mode)(rnd(&seed) % NMODES));
            finished++;
        }
        ck_assert_int_eq(t.flushed, 100);
        ck_assert_int_le(t.x.w.nfree_requests, 100);
        world_free(&t.x);
    }
}
END_TEST

/* ---------- a parent with parts ---------- */

/*
 * A split command (MGET, DEL, ...) with 3 parts, as the router builds it:
 * parts_left starts at 1 and counts each part, and request_parts_sent()
 * releases the 1 once every part is sent. Each part's reply (a node's, or
 * the error of request_fail() when fail is set) and the merged reply.
 */
static const struct parent_case {
    const char *name;
    const struct merge *merge;
    int argc;                   /* the parent's command: MGET/DEL k0 .. */
    int positions[3][3];        /* part p's keys' indexes, -1 ended */
    const char *reply[3];
    const char *fail[3];        /* request_fail() message instead of reply */
    const char *want;
} parent_cases[] = {
    { "sum", &merge_sum, 4, { { 0, -1 }, { 1, -1 }, { 2, -1 } },
      { ":3\r\n", ":0\r\n", ":39\r\n" }, { NULL, NULL, NULL }, ":42\r\n" },
    { "mget", &merge_mget, 6, { { 0, 3, -1 }, { 1, -1 }, { 2, 4, -1 } },
      { "*2\r\n$2\r\nv0\r\n$-1\r\n", "*1\r\n$2\r\nv1\r\n", "*2\r\n$2\r\nv2\r\n$3\r\nv\r\n\r\n" },
      { NULL, NULL, NULL },
      "*5\r\n$2\r\nv0\r\n$2\r\nv1\r\n$2\r\nv2\r\n$-1\r\n$3\r\nv\r\n\r\n" },
    { "sum, a part fails", &merge_sum, 4, { { 0, -1 }, { 1, -1 }, { 2, -1 } },
      { ":1\r\n", NULL, ":1\r\n" }, { NULL, "ERR boom", NULL }, "-ERR boom\r\n" },
    /* whichever finishes first, the first part's error is the answer */
    { "mget, two parts fail", &merge_mget, 4, { { 0, -1 }, { 1, -1 }, { 2, -1 } },
      { "*1\r\n$1\r\na\r\n", "-ERR first\r\n", NULL }, { NULL, NULL, "ERR second" },
      "-ERR first\r\n" },
};

#define PARENT_PARTS  3
#define PARENT_EVENTS (PARENT_PARTS + 1)     /* each part's reply, parts_sent */

/* The parent of c, with its parts, queued on x between two plain requests. */
static struct request *parent_queue(struct world *x, const struct parent_case *c)
{
    static const char *const argv[] = { "MGET", "k0", "k1", "k2", "k3", "k4" };
    static const size_t lens[] = { 4, 2, 2, 2, 2, 2 };
    struct request *p = world_queue(x);

    ck_assert_int_eq(request_build(p, c->argc, argv, lens), 0);
    p->merge = c->merge;
    p->parts = calloc(PARENT_PARTS, sizeof *p->parts);
    ck_assert_ptr_nonnull(p->parts);
    p->parts_left = 1;
    for (int i = 0; i < PARENT_PARTS; i++) {
        struct request *part = request_new(&x->w);
        int n = 0;

        ck_assert_ptr_nonnull(part);
        if (x->pool > 0)
            x->pool--;
        while (n < 3 && c->positions[i][n] >= 0)
            n++;
        part->parent = p;
        part->positions = malloc(sizeof *part->positions * (size_t)n);
        ck_assert_ptr_nonnull(part->positions);
        memcpy(part->positions, c->positions[i], sizeof *part->positions * (size_t)n);
        part->npositions = n;
        p->parts[p->nparts++] = part;
        p->parts_left++;
    }
    return p;
}

/* Event e of the parent: part e's reply, or (e == PARENT_PARTS) all sent. */
static void parent_event(struct request *p, const struct parent_case *c, int e)
{
    if (e == PARENT_PARTS)
        request_parts_sent(p);
    else if (c->fail[e] != NULL)
        request_fail(p->parts[e], c->fail[e]);
    else
        request_deliver_bytes(p->parts[e], c->reply[e], strlen(c->reply[e]));
}

/*
 * Queue: r0, the parent, r2. The 6 events (r0's reply, r2's, the parent's
 * 4) come in every one of the 720 orders; after each, the output is what
 * the finished prefix owes: r0's reply, then the merged reply once the last
 * of the parent's events came, then r2's.
 */
static void parent_every_order(const struct parent_case *c)
{
    static const char r0[] = "+first\r\n", r2[] = "+last\r\n";
    int perm[PARENT_EVENTS + 2];
    int orders = 0;

    for (int i = 0; i < PARENT_EVENTS + 2; i++)
        perm[i] = i;
    do {
        struct world x;
        struct request *q0, *p, *q2;
        int done0 = 0, done2 = 0, parent_events = 0, freed;
        char want[512];

        world_init(&x);
        q0 = world_queue(&x);
        p = parent_queue(&x, c);
        q2 = world_queue(&x);
        for (int k = 0; k < PARENT_EVENTS + 2; k++) {
            int e = perm[k];
            size_t len = 0;
            char when[96];

            if (e == PARENT_EVENTS) {
                request_deliver_bytes(q0, r0, strlen(r0));
                done0 = 1;
            } else if (e == PARENT_EVENTS + 1) {
                request_deliver_bytes(q2, r2, strlen(r2));
                done2 = 1;
            } else {
                parent_event(p, c, e);
                parent_events++;
            }
            /* the pool started empty: it holds exactly the requests freed */
            freed = 0;
            if (done0) {
                len += (size_t)snprintf(want + len, sizeof want - len, "%s", r0);
                freed++;
                if (parent_events == PARENT_EVENTS) {
                    len += (size_t)snprintf(want + len, sizeof want - len, "%s", c->want);
                    freed += 1 + PARENT_PARTS;
                    if (done2) {
                        len += (size_t)snprintf(want + len, sizeof want - len, "%s", r2);
                        freed++;
                    }
                }
            }
            snprintf(when, sizeof when, "%s: event %d (step %d of order %d)", c->name, e, k, orders);
            expect_output(&x, want, len, when);
            ck_assert_msg(x.w.nfree_requests == freed, "%s: %d requests in the pool, want %d",
                          when, x.w.nfree_requests, freed);
        }
        ck_assert(TAILQ_EMPTY(&x.c.queue));
        ck_assert_int_eq(x.c.nqueued, 0);
        world_free(&x);
        orders++;
    } while (next_permutation(perm, PARENT_EVENTS + 2));
    ck_assert_int_eq(orders, 720);
}

START_TEST(test_parent_every_order)
{
    parent_every_order(&parent_cases[_i]);
}
END_TEST

static Suite *order_suite(void)
{
    Suite *s = suite_create("order");
    TCase *tc = tcase_create("order");

    /* about 1 s of CPU: Check's 4 s default is too short on a loaded machine */
    tcase_set_timeout(tc, 60);

    tcase_add_test(tc, test_three_every_order);
    tcase_add_test(tc, test_head_first_goes_at_once);
    tcase_add_test(tc, test_hundred_random_orders);
    tcase_add_test(tc, test_random_with_arrivals);
    tcase_add_loop_test(tc, test_parent_every_order, 0,
                        (int)(sizeof parent_cases / sizeof parent_cases[0]));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(order_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
