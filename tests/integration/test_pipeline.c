/*
 * Pipelines: deep pipelines of mixed commands over keys on every master are
 * answered in the order sent, each reply as a single Redis would give it
 * (checked against a model of the data), also with many clients at once and
 * with large values.
 */
#include <pthread.h>

#include "harness.h"

enum { NSTR = 64, NCTR = 32, NLIST = 32, NHASH = 32, NSET = 32, NFIELD = 8, NMEMBER = 16 };

/* What the keys hold, as far as the commands below can tell. */
struct model {
    char str[NSTR][48];       /* "" = no such key */
    int  str_set[NSTR];
    long long ctr[NCTR];
    long long list_len[NLIST];
    char list_head[NLIST][32];
    char hash[NHASH][NFIELD][32];   /* "" = no such field */
    int  set_has[NSET][NMEMBER];
};

/* One expected reply. */
struct expect {
    int type;
    long long integer;
    char str[64];
};

struct rng {
    unsigned long long s;
};

static unsigned rng_next(struct rng *r, unsigned n)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (unsigned)(r->s % n);
}

static void expect_status(struct expect *e, const char *s)
{
    e->type = REDIS_REPLY_STATUS;
    snprintf(e->str, sizeof(e->str), "%s", s);
}

static void expect_bulk(struct expect *e, const char *s)
{
    e->type = REDIS_REPLY_STRING;
    snprintf(e->str, sizeof(e->str), "%s", s);
}

static void expect_int(struct expect *e, long long n)
{
    e->type = REDIS_REPLY_INTEGER;
    e->integer = n;
}

static void expect_nil(struct expect *e)
{
    e->type = REDIS_REPLY_NIL;
}

static int hash_len(const struct model *m, int h)
{
    int n = 0;
    for (int f = 0; f < NFIELD; f++)
        n += m->hash[h][f][0] != '\0';
    return n;
}

static int set_card(const struct model *m, int s)
{
    int n = 0;
    for (int j = 0; j < NMEMBER; j++)
        n += m->set_has[s][j];
    return n;
}

/*
 * Appends command number i (chosen by rng) to c for client tag `who`,
 * applies it to the model and writes the reply it must get into e.
 */
static void append_one(redisContext *c, const char *who, struct model *m, struct rng *rng,
                       int i, struct expect *e)
{
    const char *pre = h_prefix();
    int k;
    char v[32];

    snprintf(v, sizeof(v), "v%d", i);
    switch (rng_next(rng, 20)) {
    case 0: case 1: case 2:
        k = (int)rng_next(rng, NSTR);
        redisAppendCommand(c, "SET %s:%s:s%d %s", pre, who, k, v);
        snprintf(m->str[k], sizeof(m->str[k]), "%s", v);
        m->str_set[k] = 1;
        expect_status(e, "OK");
        break;
    case 3: case 4: case 5:
        k = (int)rng_next(rng, NSTR);
        redisAppendCommand(c, "GET %s:%s:s%d", pre, who, k);
        if (m->str_set[k])
            expect_bulk(e, m->str[k]);
        else
            expect_nil(e);
        break;
    case 6:
        k = (int)rng_next(rng, NSTR);
        if (m->str_set[k] && strlen(m->str[k]) + 2 > sizeof(m->str[k])) {
            /* keep the model bounded: start the string over */
            redisAppendCommand(c, "SET %s:%s:s%d %s", pre, who, k, v);
            snprintf(m->str[k], sizeof(m->str[k]), "%s", v);
            expect_status(e, "OK");
            break;
        }
        redisAppendCommand(c, "APPEND %s:%s:s%d x", pre, who, k);
        if (!m->str_set[k])
            m->str[k][0] = '\0';
        m->str_set[k] = 1;
        strcat(m->str[k], "x");
        expect_int(e, (long long)strlen(m->str[k]));
        break;
    case 7:
        k = (int)rng_next(rng, NSTR);
        redisAppendCommand(c, "DEL %s:%s:s%d", pre, who, k);
        expect_int(e, m->str_set[k]);
        m->str_set[k] = 0;
        m->str[k][0] = '\0';
        break;
    case 8:
        k = (int)rng_next(rng, NSTR);
        redisAppendCommand(c, "EXISTS %s:%s:s%d", pre, who, k);
        expect_int(e, m->str_set[k]);
        break;
    case 9: case 10:
        k = (int)rng_next(rng, NCTR);
        redisAppendCommand(c, "INCR %s:%s:c%d", pre, who, k);
        expect_int(e, ++m->ctr[k]);
        break;
    case 11:
        k = (int)rng_next(rng, NCTR);
        redisAppendCommand(c, "INCRBY %s:%s:c%d %d", pre, who, k, i % 100 - 50);
        expect_int(e, m->ctr[k] += i % 100 - 50);
        break;
    case 12:
        k = (int)rng_next(rng, NLIST);
        redisAppendCommand(c, "LPUSH %s:%s:l%d %s", pre, who, k, v);
        snprintf(m->list_head[k], sizeof(m->list_head[k]), "%s", v);
        expect_int(e, ++m->list_len[k]);
        break;
    case 13:
        k = (int)rng_next(rng, NLIST);
        redisAppendCommand(c, "LINDEX %s:%s:l%d 0", pre, who, k);
        if (m->list_len[k] > 0)
            expect_bulk(e, m->list_head[k]);
        else
            expect_nil(e);
        break;
    case 14: {
        int f = (int)rng_next(rng, NFIELD);
        k = (int)rng_next(rng, NHASH);
        redisAppendCommand(c, "HSET %s:%s:h%d f%d %s", pre, who, k, f, v);
        expect_int(e, m->hash[k][f][0] == '\0');
        snprintf(m->hash[k][f], sizeof(m->hash[k][f]), "%s", v);
        break;
    }
    case 15: {
        int f = (int)rng_next(rng, NFIELD);
        k = (int)rng_next(rng, NHASH);
        redisAppendCommand(c, "HGET %s:%s:h%d f%d", pre, who, k, f);
        if (m->hash[k][f][0] != '\0')
            expect_bulk(e, m->hash[k][f]);
        else
            expect_nil(e);
        break;
    }
    case 16:
        k = (int)rng_next(rng, NHASH);
        redisAppendCommand(c, "HLEN %s:%s:h%d", pre, who, k);
        expect_int(e, hash_len(m, k));
        break;
    case 17: {
        int j = (int)rng_next(rng, NMEMBER);
        k = (int)rng_next(rng, NSET);
        redisAppendCommand(c, "SADD %s:%s:t%d m%d", pre, who, k, j);
        expect_int(e, !m->set_has[k][j]);
        m->set_has[k][j] = 1;
        break;
    }
    case 18:
        k = (int)rng_next(rng, NSET);
        redisAppendCommand(c, "SCARD %s:%s:t%d", pre, who, k);
        expect_int(e, set_card(m, k));
        break;
    default:
        /* answered by the proxy itself, between routed commands */
        if (i % 2) {
            redisAppendCommand(c, "PING");
            expect_status(e, "PONG");
        } else {
            redisAppendCommand(c, "ECHO %s", v);
            expect_bulk(e, v);
        }
        break;
    }
}

/* 0 if reply r is what e says; else writes why into why. */
static int check_reply(const redisReply *r, const struct expect *e, char *why, size_t size)
{
    if (r->type != e->type) {
        snprintf(why, size, "type %s, want %s (%s)", h_type_name(r->type),
                 h_type_name(e->type), h_show(r));
        return -1;
    }
    switch (e->type) {
    case REDIS_REPLY_INTEGER:
        if (r->integer != e->integer) {
            snprintf(why, size, "integer %lld, want %lld", r->integer, e->integer);
            return -1;
        }
        break;
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_STRING:
        if (r->len != strlen(e->str) || memcmp(r->str, e->str, r->len) != 0) {
            snprintf(why, size, "%s, want '%s'", h_show(r), e->str);
            return -1;
        }
        break;
    default:
        break;
    }
    return 0;
}

/*
 * Sends n mixed commands as one pipeline on c, then reads and checks every
 * reply in order. Returns the number of wrong replies; the first is
 * described in why.
 */
static int run_pipeline(redisContext *c, const char *who, unsigned long long seed, int n,
                        char *why, size_t size)
{
    struct model *m = calloc(1, sizeof(*m));
    struct expect *e = calloc((size_t)n, sizeof(*e));
    struct rng rng = { seed };
    int bad = 0;

    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(e);
    for (int i = 0; i < n; i++)
        append_one(c, who, m, &rng, i, &e[i]);
    for (int i = 0; i < n; i++) {
        void *r = NULL;
        char w[200];
        if (redisGetReply(c, &r) != REDIS_OK || r == NULL) {
            snprintf(why, size, "reply %d of %d: connection error: %s", i, n, c->errstr);
            bad += n - i;
            break;
        }
        if (check_reply(r, &e[i], w, sizeof(w)) != 0 && bad++ == 0)
            snprintf(why, size, "reply %d of %d: %s", i, n, w);
        freeReplyObject(r);
    }
    free(e);
    free(m);
    return bad;
}

START_TEST(test_pipeline_10000_mixed)
{
    redisContext *c = h_connect_proxy();
    char why[300] = "";
    int bad = run_pipeline(c, "p", 0x9e3779b97f4a7c15ULL, 10000, why, sizeof(why));

    ck_assert_msg(bad == 0, "%d wrong replies; first: %s", bad, why);
    redisFree(c);
}
END_TEST

/* The keys of the pipeline above must spread over every master. */
START_TEST(test_pipeline_keys_cover_masters)
{
    struct h_topo t;
    int seen[H_MAX_NODES] = { 0 };
    char key[128];

    h_topo_load(&t);
    for (int k = 0; k < NSTR; k++) {
        snprintf(key, sizeof(key), "%s:p:s%d", h_prefix(), k);
        seen[h_topo_owner(&t, h_slot(key))]++;
    }
    for (int m = 0; m < t.nmasters; m++)
        ck_assert_msg(seen[m] > 0, "no string key of the pipeline on master %d", m);
}
END_TEST

struct client_run {
    pthread_t thread;
    char who[16];
    unsigned long long seed;
    int n;
    int bad;
    char why[300];
};

static void *client_main(void *arg)
{
    struct client_run *cr = arg;
    struct h_node a = h_proxy_addr();
    redisContext *c = h_connect_try(a.host, a.port);

    if (c == NULL) {
        cr->bad = cr->n;
        snprintf(cr->why, sizeof(cr->why), "cannot connect");
        return NULL;
    }
    /* several smaller pipelines, so the clients' traffic interleaves */
    for (int round = 0; round < 5 && cr->bad == 0; round++) {
        char who[32];
        snprintf(who, sizeof(who), "%s.%d", cr->who, round);
        cr->bad += run_pipeline(c, who, cr->seed + (unsigned long long)round, cr->n / 5,
                                cr->why, sizeof(cr->why));
    }
    redisFree(c);
    return NULL;
}

/* Eight clients pipelining at once over shared node connections: each gets
 * its own replies, in its own order. */
START_TEST(test_pipeline_concurrent_clients)
{
    enum { NCLIENT = 8 };
    struct client_run cr[NCLIENT];

    memset(cr, 0, sizeof(cr));
    for (int i = 0; i < NCLIENT; i++) {
        snprintf(cr[i].who, sizeof(cr[i].who), "c%d", i);
        cr[i].seed = 0x1234567ULL * (unsigned long long)(i + 1);
        cr[i].n = 2500;
        ck_assert_int_eq(pthread_create(&cr[i].thread, NULL, client_main, &cr[i]), 0);
    }
    for (int i = 0; i < NCLIENT; i++)
        pthread_join(cr[i].thread, NULL);
    for (int i = 0; i < NCLIENT; i++)
        ck_assert_msg(cr[i].bad == 0, "client %d: %d wrong replies; first: %s", i, cr[i].bad,
                      cr[i].why);
}
END_TEST

/* 200 values of 64 KiB written and read back in two pipelines. */
START_TEST(test_pipeline_large_values)
{
    enum { N = 200, SIZE = 64 * 1024 };
    redisContext *c = h_connect_proxy();
    char *val = malloc(SIZE);
    char key[128];

    ck_assert_ptr_nonnull(val);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "%s:big:%d", h_prefix(), i);
        memset(val, 'a' + i % 26, SIZE);
        memcpy(val, key, strlen(key));
        redisAppendCommand(c, "SET %s %b", key, val, (size_t)SIZE);
    }
    for (int i = 0; i < N; i++) {
        redisReply *r = h_get_reply(c);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);
    }
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "%s:big:%d", h_prefix(), i);
        redisAppendCommand(c, "GET %s", key);
    }
    for (int i = 0; i < N; i++) {
        redisReply *r = h_get_reply(c);
        snprintf(key, sizeof(key), "%s:big:%d", h_prefix(), i);
        memset(val, 'a' + i % 26, SIZE);
        memcpy(val, key, strlen(key));
        H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
        ck_assert_msg(r->len == SIZE && memcmp(r->str, val, SIZE) == 0,
                      "value %d differs (len %zu)", i, r->len);
        freeReplyObject(r);
    }
    free(val);
    redisFree(c);
}
END_TEST

/* 3,000 commands in one write, inline and multibulk mixed: replies exact. */
START_TEST(test_pipeline_one_write_raw)
{
    enum { N = 1000 };
    struct h_node a = h_proxy_addr();
    char key[128];
    size_t cap = 128 * N + 1024, len = 0, explen = 0;
    char *req = malloc(cap), *want = malloc(cap), *got = malloc(cap);
    int fd, closed;
    size_t n;

    ck_assert_ptr_nonnull(req);
    ck_assert_ptr_nonnull(want);
    ck_assert_ptr_nonnull(got);
    snprintf(key, sizeof(key), "%s:raw:ctr", h_prefix());
    for (int i = 1; i <= N; i++) {
        len += (size_t)snprintf(req + len, cap - len, "PING\r\n*2\r\n$4\r\nINCR\r\n$%zu\r\n%s\r\n"
                                "*2\r\n$4\r\nECHO\r\n$1\r\n%c\r\n",
                                strlen(key), key, 'a' + i % 26);
        explen += (size_t)snprintf(want + explen, cap - explen, "+PONG\r\n:%d\r\n$1\r\n%c\r\n",
                                   i, 'a' + i % 26);
        ck_assert(len < cap && explen < cap);
    }
    fd = h_raw_connect(&a);
    h_raw_send(fd, req, len);
    n = h_raw_recv(fd, got, explen + 1, NULL, 5000, &closed);
    ck_assert_msg(!closed, "proxy closed the connection after %zu bytes", n);
    ck_assert_msg(n == explen, "got %zu bytes of replies, want %zu", n, explen);
    ck_assert_msg(memcmp(got, want, explen) == 0, "replies differ from the expected sequence");
    close(fd);
    free(req);
    free(want);
    free(got);
}
END_TEST

static Suite *pipeline_suite(void)
{
    Suite *s = suite_create("pipeline");
    TCase *tc = tcase_create("pipeline");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_pipeline_keys_cover_masters);
    tcase_add_test(tc, test_pipeline_10000_mixed);
    tcase_add_test(tc, test_pipeline_concurrent_clients);
    tcase_add_test(tc, test_pipeline_large_values);
    tcase_add_test(tc, test_pipeline_one_write_raw);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run(pipeline_suite());
}
