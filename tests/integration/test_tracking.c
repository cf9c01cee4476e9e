/*
 * Client-side caching through the proxy, against one redis-server 7.0 (or
 * valkey-server 8) started here, byte for byte where one server and the
 * cluster can agree:
 *   - CLIENT TRACKING's options are read as Redis reads them, and every bad
 *     combination gets Redis's own error (REDIRECT to a client that does
 *     not exist or twice, PREFIX without BCAST, BCAST with OPTIN, OPTIN
 *     with OPTOUT, overlapping prefixes, a syntax error, OFF with the same
 *     options); CACHING, GETREDIR and TRACKINGINFO answer as Redis's;
 *   - RESP3 pushes as Redis sends them: a read remembered, another client's
 *     write invalidating it once, the client's own write (reply, then
 *     push), NOLOOP, OPTIN with CACHING YES, OPTOUT with CACHING NO, off
 *     again;
 *   - a transaction's reads, in the default mode and OPTIN;
 *   - a push the master sent before a read's reply comes before it;
 *   - with tracking-node-bcast yes (the masters push every key written),
 *     the same pushes in every mode, and the race below;
 *   - through the cluster only: writes straight to a master and through a
 *     second proxy reach the reader, an MGET over two masters tracks both
 *     keys; the table's bound, a
 *     lost tracking connection, a drain and a moved slot invalidate; INFO
 *     and CLIENT INFO show it; and a race: writers everywhere, a reader
 *     with a cache, 600 rounds, never a value the masters no longer hold
 *     once their pushes are in;
 *   - REDIRECT, as Redis sends it: to a RESP2 client subscribed to
 *     __redis__:invalidate (a pub/sub message), from a RESP2 or a RESP3
 *     tracking client, to a RESP3 client (a push), on either worker, and
 *     "tracking-redir-broken" once the client it redirects to is gone;
 *   - BCAST, as Redis sends it: each prefix's keys, none of another
 *     prefix, none after OFF; TRACKINGINFO lists the prefixes; prefixes
 *     that overlap the client's get Redis's error; with no prefix, every
 *     key; through a key layout, the legacy names and prefixes.
 */
#include "harness.h"
#include "resp3conn.h"
#include "trackcache.h"

static struct h_proxy ref;

static void setup(void)
{
    h_ref_start(&ref, "redis-tracking", NULL);
}

static void teardown(void)
{
    h_proxy_stop(&ref);
}

/* Whether two replies are the same (type, value, elements). */
static int same_reply(const redisReply *a, const redisReply *b)
{
    if (a->type != b->type || a->integer != b->integer || a->len != b->len ||
        a->elements != b->elements || (a->len && memcmp(a->str, b->str, a->len) != 0))
        return 0;
    for (size_t i = 0; i < a->elements; i++)
        if (!same_reply(a->element[i], b->element[i]))
            return 0;
    return 1;
}

/* The push that invalidates key, into out. */
static void push_of(char *out, size_t size, const char *key)
{
    H_FMT(out, size, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$%zu\r\n%s\r\n", strlen(key), key);
}

/* n keys named after what, each on another master (owner: theirs). */
static void keys_on_masters(const struct h_topo *t, const char *what, int n, char (*keys)[96],
                            int *owner)
{
    int found = 0;
    ck_assert_int_ge(t->nmasters, n);
    for (int i = 0; found < n && i < 100000; i++) {
        char key[96];
        H_FMT(key, sizeof key, "trk:%s:%s%d", h_prefix(), what, i);
        int o = h_topo_owner(t, h_slot(key)), j;
        for (j = 0; j < found && owner[j] != o; j++)
            ;
        if (j < found)
            continue;
        memcpy(keys[found], key, sizeof key);
        owner[found++] = o;
    }
    ck_assert_int_eq(found, n);
}

/* words (split at blanks; "ID" is the connection's own CLIENT ID) run on
 * c, whose id is id. */
static redisReply *run_words(redisContext *c, long long id, const char *words)
{
    char buf[1024], ids[24];
    const char *argv[32];
    int argc = 0;
    snprintf(ids, sizeof ids, "%lld", id);
    snprintf(buf, sizeof buf, "%s", words);
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && argc < 32;
         t = strtok_r(NULL, " ", &save))
        argv[argc++] = strcmp(t, "ID") == 0 ? ids : t;
    return h_cmd_argv(c, argc, argv);
}

/* Both answer words the same. */
static void same(redisContext *px, long long pid, redisContext *rs, long long rid,
                 const char *words)
{
    redisReply *a = run_words(rs, rid, words), *b = run_words(px, pid, words);
    char sa[1024];
    snprintf(sa, sizeof sa, "%s", h_show(a));
    ck_assert_msg(same_reply(a, b), "%s\nredis-server: %s\nproxy:        %s", words, sa, h_show(b));
    freeReplyObject(a);
    freeReplyObject(b);
}

START_TEST(test_options_as_redis)
{
    redisContext *px = h_connect_proxy(), *rs = h_connect_node(&ref.addr);
    long long pid = h_client_id(px), rid = h_client_id(rs);
    static const char *const cases[] = {
        "CLIENT TRACKING ON PREFIX a",
        "CLIENT TRACKING ON prefix a optin",
        "CLIENT TRACKING ON BCAST OPTIN",
        "CLIENT TRACKING ON OPTOUT BCAST PREFIX a",
        "CLIENT TRACKING ON OPTIN OPTOUT",
        "CLIENT TRACKING ON BCAST PREFIX a PREFIX ab",
        "CLIENT TRACKING ON BCAST PREFIX abc PREFIX x PREFIX ab",
        "CLIENT TRACKING ON BCAST PREFIX a PREFIX a",
        "CLIENT TRACKING ON REDIRECT 987654321",
        "CLIENT TRACKING ON REDIRECT x",
        "CLIENT TRACKING ON REDIRECT ID REDIRECT ID",
        "CLIENT TRACKING ON REDIRECT 987654321 PREFIX a",
        "CLIENT TRACKING ON NOPE",
        "CLIENT TRACKING ON REDIRECT",
        "CLIENT TRACKING ON BCAST PREFIX",
        "CLIENT TRACKING MAYBE",
        "CLIENT TRACKING MAYBE BCAST",
        "CLIENT TRACKING",
        "CLIENT TRACKING OFF BCAST PREFIX a PREFIX ab OPTIN OPTOUT",
        "CLIENT TRACKING OFF REDIRECT 987654321",
        "CLIENT TRACKING OFF",
        "CLIENT CACHING YES",
        "CLIENT CACHING NO",
        "CLIENT CACHING maybe",
        "CLIENT CACHING",
        "CLIENT GETREDIR",
        "CLIENT GETREDIR x",
        "CLIENT TRACKINGINFO",
        "CLIENT TRACKINGINFO x",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        same(px, pid, rs, rid, cases[i]);
    redisFree(px);
    redisFree(rs);
}
END_TEST

/* TRACKINGINFO in RESP3: a map whose flags are a set. */
START_TEST(test_trackinginfo_resp3)
{
    struct h_node proxy = h_proxy_addr();
    int fa = h_raw_connect(&ref.addr), fb = h_raw_connect(&proxy);
    static const char hello[] = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
    static const char info[] = "*2\r\n$6\r\nCLIENT\r\n$12\r\nTRACKINGINFO\r\n";
    char a[4096], b[4096];
    h_raw_sends(fa, hello);
    h_raw_sends(fb, hello);
    /* HELLO's map, up to its last field's value */
    h_raw_recv(fa, a, sizeof a, "modules\r\n*0\r\n", 5000, NULL);
    h_raw_recv(fb, b, sizeof b, "modules\r\n*0\r\n", 5000, NULL);
    h_raw_sends(fa, info);
    h_raw_sends(fb, info);
    h_raw_recv(fa, a, sizeof a, "prefixes\r\n*0\r\n", 5000, NULL);
    h_raw_recv(fb, b, sizeof b, "prefixes\r\n*0\r\n", 5000, NULL);
    ck_assert_str_eq(b, a);
    ck_assert_str_eq(a, "%3\r\n$5\r\nflags\r\n~1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n"
                        "$8\r\nprefixes\r\n*0\r\n");
    close(fa);
    close(fb);
}
END_TEST


/* ---------- invalidations, against one redis-server ---------- */

/* words' frames on the reference and through the proxy, the same bytes,
 * n of them; the proxy's are returned in out (the last one). */
static void both(struct conn3 *rs, struct conn3 *px, const char *words, int n)
{
    char a[8192], b[8192];
    if (words) {
        send_words(rs, words);
        send_words(px, words);
    }
    for (int i = 0; i < n; i++) {
        frame(rs, a, sizeof a);
        frame(px, b, sizeof b);
        ck_assert_msg(strcmp(a, b) == 0, "%s, frame %d\nredis-server: %s\nproxy:        %s",
                      words ? words : "(pushed)", i + 1, h_esc_str(a), h_esc_str(b));
    }
}

/* A writer on each side: plain RESP2 clients. */
static void write_both(redisContext *wr, redisContext *wp, const char *fmt, const char *key)
{
    freeReplyObject(h_cmd(wr, fmt, key));
    freeReplyObject(h_cmd(wp, fmt, key));
}

static char key_a[96], key_b[96], key_c[96], key_d[96], key_e[96];

static void keys_name(void)
{
    H_FMT(key_a, sizeof key_a, "trk:{%s}:a", h_prefix());
    H_FMT(key_b, sizeof key_b, "trk:{%s}:b", h_prefix());
    H_FMT(key_c, sizeof key_c, "trk:{%s}:c", h_prefix());
    H_FMT(key_d, sizeof key_d, "trk:{%s}:d", h_prefix());
    H_FMT(key_e, sizeof key_e, "trk:{%s}:e", h_prefix());
}

/* A reader's GET is remembered; another client's SET pushes its
 * invalidation, once: the second SET, with no read between, pushes none
 * (the GET after it answers first), and a read again is tracked again;
 * through proxy. */
static void default_mode(const struct h_node *proxy)
{
    struct conn3 rs, px;
    redisContext *wr = h_connect_node(&ref.addr), *wp = h_connect_proxy();
    char cmd[256];
    keys_name();
    conn3_open(&rs, &ref.addr);
    conn3_open(&px, proxy);
    write_both(wr, wp, "SET %s one", key_a);
    both(&rs, &px, "CLIENT TRACKING ON", 1);
    H_FMT(cmd, sizeof cmd, "GET %s", key_a);
    both(&rs, &px, cmd, 1);
    write_both(wr, wp, "SET %s two", key_a);
    both(&rs, &px, NULL, 1);                    /* >2 invalidate [key] */
    write_both(wr, wp, "SET %s three", key_a);
    both(&rs, &px, cmd, 1);                     /* no push: GET answers first */
    write_both(wr, wp, "SET %s four", key_a);
    both(&rs, &px, NULL, 1);                    /* tracked again by that GET */
    /* its own write: the reply, then the push */
    both(&rs, &px, cmd, 1);
    H_FMT(cmd, sizeof cmd, "SET %s mine", key_a);
    both(&rs, &px, cmd, 2);
    both(&rs, &px, "CLIENT TRACKINGINFO", 1);
    both(&rs, &px, "CLIENT TRACKING OFF", 1);
    H_FMT(cmd, sizeof cmd, "GET %s", key_a);
    both(&rs, &px, cmd, 1);
    write_both(wr, wp, "SET %s five", key_a);
    both(&rs, &px, cmd, 1);                     /* off: no push before it */
    close(rs.fd);
    close(px.fd);
    redisFree(wr);
    redisFree(wp);
}

START_TEST(test_default_mode_as_redis)
{
    struct h_node proxy = h_proxy_addr();
    default_mode(&proxy);
}
END_TEST

/* The client's own write, set, of key, and then a read of another key:
 * one server pushes nothing for it (NOLOOP); the proxy tells the client of
 * it once (a master's push does not say who wrote, and a write may change
 * nothing, after which the key is still tracked), ahead of the read's
 * reply, or after it where the master pushes once a round
 * (tracking-node-bcast). */
static void own_write_told(struct conn3 *rs, struct conn3 *px, const char *set,
                           const char *key)
{
    char get[256], a[4096], b[4096], push[256];
    int pushes = 0;
    H_FMT(get, sizeof get, "GET %s", key_e);
    push_of(push, sizeof push, key);
    send_words(rs, set);
    send_words(rs, get);
    frame(rs, a, sizeof a);
    ck_assert_str_eq(a, "+OK\r\n");
    frame(rs, a, sizeof a);                     /* the read's reply */
    send_words(px, set);
    send_words(px, get);
    for (int replies = 0; replies < 2 || pushes == 0;) {
        frame(px, b, sizeof b);
        if (b[0] == '>') {
            ck_assert_msg(strcmp(b, push) == 0, "%s, not the push", h_esc_str(b));
            pushes++;
        } else if (replies++ == 0) {
            ck_assert_str_eq(b, "+OK\r\n");
        } else {
            ck_assert_str_eq(b, a);
        }
    }
    ck_assert_int_eq(pushes, 1);
}

/* NOLOOP: no push for the client's own write (the proxy sends one: see
 * own_write_told), and the key is forgotten (another client's write after
 * it pushes none either); an own write that changes nothing (SET NX of a
 * key that exists) leaves the key tracked, and another client's write
 * after it pushes. OPTIN: only the read after CLIENT CACHING YES is
 * tracked; OPTOUT: all but the one after CLIENT CACHING NO. Through
 * proxy. */
static void noloop_optin_optout(const struct h_node *proxy)
{
    struct conn3 rs, px;
    redisContext *wr = h_connect_node(&ref.addr), *wp = h_connect_proxy();
    char get[256], set[256];
    keys_name();
    H_FMT(get, sizeof get, "GET %s", key_b);
    H_FMT(set, sizeof set, "SET %s mine", key_b);
    conn3_open(&rs, &ref.addr);
    conn3_open(&px, proxy);
    write_both(wr, wp, "SET %s one", key_e);
    both(&rs, &px, "CLIENT TRACKING ON NOLOOP", 1);
    both(&rs, &px, get, 1);
    own_write_told(&rs, &px, set, key_b);      /* and key_e read, tracked */
    write_both(wr, wp, "SET %s theirs", key_b);
    both(&rs, &px, get, 1);                     /* no push before it */
    H_FMT(set, sizeof set, "SET %s two NX", key_e);
    both(&rs, &px, set, 1);                     /* changes nothing */
    write_both(wr, wp, "SET %s three", key_e);
    both(&rs, &px, NULL, 1);                    /* key_e's push */
    both(&rs, &px, "CLIENT TRACKING OFF", 1);

    /* each mode on a key of its own: Redis lists the reads of an earlier ON
     * until their key changes, which the proxy need not (a client drops its
     * cache when it turns tracking off) */
    H_FMT(get, sizeof get, "GET %s", key_c);
    both(&rs, &px, "CLIENT TRACKING ON OPTIN", 1);
    both(&rs, &px, get, 1);                     /* not tracked */
    write_both(wr, wp, "SET %s x", key_c);
    both(&rs, &px, get, 1);                     /* no push before it */
    both(&rs, &px, "CLIENT CACHING YES", 1);
    both(&rs, &px, "CLIENT TRACKINGINFO", 1);
    both(&rs, &px, get, 1);                     /* tracked */
    write_both(wr, wp, "SET %s y", key_c);
    both(&rs, &px, NULL, 1);
    both(&rs, &px, "CLIENT CACHING NO", 1);     /* OPTIN's error */
    both(&rs, &px, "CLIENT TRACKING ON OPTOUT", 1);     /* can't switch */
    both(&rs, &px, "CLIENT TRACKING OFF", 1);

    H_FMT(get, sizeof get, "GET %s", key_d);
    both(&rs, &px, "CLIENT TRACKING ON OPTOUT", 1);
    both(&rs, &px, "CLIENT CACHING NO", 1);
    both(&rs, &px, get, 1);                     /* not tracked */
    write_both(wr, wp, "SET %s z", key_d);
    both(&rs, &px, get, 1);                     /* tracked: no push before it */
    write_both(wr, wp, "SET %s w", key_d);
    both(&rs, &px, NULL, 1);
    both(&rs, &px, "CLIENT TRACKING OFF", 1);
    close(rs.fd);
    close(px.fd);
    redisFree(wr);
    redisFree(wp);
}

START_TEST(test_noloop_optin_optout_as_redis)
{
    struct h_node proxy = h_proxy_addr();
    noloop_optin_optout(&proxy);
}
END_TEST

/* ---------- BCAST ---------- */

/* BCAST with two prefixes: a write of a key of one is pushed (a PING after
 * a write of a key of neither answers first), an MSET of a key of each is
 * pushed once per prefix, in the prefixes' order; TRACKINGINFO lists them;
 * a prefix overlapping one of them, a switch to OPTIN, get Redis's errors;
 * OFF, then BCAST without a prefix: every key. (The tracker reads a key of
 * the master first: from then on the proxy's connection there tracks every
 * key for it, see docs/commands.md.) */
START_TEST(test_bcast_as_redis)
{
    struct h_node proxy = h_proxy_addr();
    struct conn3 rs, px;
    redisContext *wr = h_connect_node(&ref.addr), *wp = h_connect_proxy();
    char cmd[512], a1[128], a2[128], b2[128], c1[128];
    const char *pre = h_prefix();
    H_FMT(a1, sizeof a1, "trk:{%s}:bc:a1", pre);
    H_FMT(a2, sizeof a2, "trk:{%s}:bc:a2", pre);
    H_FMT(b2, sizeof b2, "trk:{%s}:bc:b2", pre);
    H_FMT(c1, sizeof c1, "trk:{%s}:bc:c1", pre);
    conn3_open(&rs, &ref.addr);
    conn3_open(&px, &proxy);
    H_FMT(cmd, sizeof cmd, "CLIENT TRACKING ON BCAST PREFIX trk:{%s}:bc:b PREFIX trk:{%s}:bc:a",
          pre, pre);
    both(&rs, &px, cmd, 1);
    both(&rs, &px, "CLIENT TRACKINGINFO", 1);
    H_FMT(cmd, sizeof cmd, "CLIENT TRACKING ON BCAST PREFIX trk:{%s}:bc:a1", pre);
    both(&rs, &px, cmd, 1);                     /* overlaps an existing prefix */
    both(&rs, &px, "CLIENT TRACKING ON OPTIN", 1);      /* can't switch */
    H_FMT(cmd, sizeof cmd, "GET %s", a1);
    both(&rs, &px, cmd, 1);
    write_both(wr, wp, "SET %s x", a1);
    both(&rs, &px, NULL, 1);                    /* >2 invalidate [a1] */
    write_both(wr, wp, "SET %s x", c1);
    both(&rs, &px, "PING", 1);                  /* no push before it */
    H_FMT(cmd, sizeof cmd, "MSET %s 1 %s 2", b2, a2);
    freeReplyObject(h_cmd(wr, cmd));
    freeReplyObject(h_cmd(wp, cmd));
    both(&rs, &px, NULL, 2);                    /* [a2], then [b2] */
    both(&rs, &px, "CLIENT TRACKING OFF", 1);
    write_both(wr, wp, "SET %s y", a1);
    both(&rs, &px, "PING", 1);
    both(&rs, &px, "CLIENT TRACKING ON BCAST", 1);
    both(&rs, &px, "CLIENT TRACKINGINFO", 1);   /* the prefix "" */
    H_FMT(cmd, sizeof cmd, "GET %s", c1);
    both(&rs, &px, cmd, 1);
    write_both(wr, wp, "SET %s z", c1);
    both(&rs, &px, NULL, 1);
    both(&rs, &px, "CLIENT TRACKING OFF", 1);
    close(rs.fd);
    close(px.fd);
    redisFree(wr);
    redisFree(wp);
}
END_TEST

/* Through a key layout, BCAST's prefixes are the client's (legacy) names:
 * a legacy prefix's keys, written under their cluster names, reach it
 * under their legacy names; a key of another prefix does not. */
START_TEST(test_bcast_legacy_prefix)
{
    struct h_proxy extra;
    struct conn3 c;
    char prefix[64], chat[128], other[128], cmd[256], out[4096], want[512];
    h_layout_proxy_start(&extra, "bc", prefix, sizeof prefix);
    H_FMT(chat, sizeof chat, "%s:chat:tg:7", prefix);      /* -> PREFIX:{ch:N}:r:tg%3A7 */
    H_FMT(other, sizeof other, "%s:conv:tg:7", prefix);
    redisContext *w = h_connect_extra(&extra);
    conn3_open(&c, &extra.addr);
    H_FMT(cmd, sizeof cmd, "CLIENT TRACKING ON BCAST PREFIX %s:chat:", prefix);
    send_words(&c, cmd);
    frame(&c, out, sizeof out);
    ck_assert_str_eq(out, "+OK\r\n");
    H_FMT(cmd, sizeof cmd, "LRANGE %s 0 -1", chat);
    send_words(&c, cmd);
    frame(&c, out, sizeof out);
    freeReplyObject(h_cmd(w, "SET %s x", other));
    freeReplyObject(h_cmd(w, "RPUSH %s hello", chat));
    frame(&c, out, sizeof out);
    push_of(want, sizeof want, chat);
    ck_assert_str_eq(out, want);
    freeReplyObject(h_cmd(w, "DEL %s %s", chat, other));
    redisFree(w);
    close(c.fd);
    h_proxy_stop(&extra);
}
END_TEST

/* ---------- REDIRECT ---------- */

static void reader_of(struct conn3 *c, const struct h_node *p, const char *key);

/* c's CLIENT ID. */
static long long conn_id(struct conn3 *c)
{
    char out[256];
    send_words(c, "CLIENT ID");
    frame(c, out, sizeof out);
    ck_assert_msg(out[0] == ':', "CLIENT ID: %s", h_esc_str(out));
    return atoll(out + 1);
}

/* s with every ":<id>\r\n" written ":ID\r\n" (an id differs between two
 * servers). */
static void id_masked(char *s, long long id)
{
    char num[32], *at;
    int n = snprintf(num, sizeof num, ":%lld\r\n", id);
    while ((at = strstr(s, num)) != NULL) {
        memcpy(at, ":ID", 3);
        memmove(at + 3, at + n - 2, strlen(at + n - 2) + 1);
    }
}

/* words (with " ID" the client's id on each side) on both; n frames, the
 * same but for that id. */
static void both_id(struct conn3 *rs, long long rid, struct conn3 *px, long long pid,
                    const char *words, int n)
{
    char a[8192], b[8192], wa[512], wb[512];
    if (words) {
        const char *at = strstr(words, " ID");
        snprintf(wa, sizeof wa, "%s", words);
        snprintf(wb, sizeof wb, "%s", words);
        if (at) {
            snprintf(wa, sizeof wa, "%.*s %lld%s", (int)(at - words), words, rid, at + 3);
            snprintf(wb, sizeof wb, "%.*s %lld%s", (int)(at - words), words, pid, at + 3);
        }
        send_words(rs, wa);
        send_words(px, wb);
    }
    for (int i = 0; i < n; i++) {
        frame(rs, a, sizeof a);
        frame(px, b, sizeof b);
        id_masked(a, rid);
        id_masked(b, pid);
        ck_assert_msg(strcmp(a, b) == 0, "%s, frame %d\nredis-server: %s\nproxy:        %s",
                      words ? words : "(pushed)", i + 1, h_esc_str(a), h_esc_str(b));
    }
}

/* The client to redirect to, on the reference and through the proxy (in
 * RESP3, or RESP2), with its ids there; a writer on each side; GET of
 * key_e. */
struct redir {
    struct conn3 rs_to, px_to;
    long long rid, pid;
    redisContext *wr, *wp;
    char get[256];
};

static void redir_open(struct redir *d, int resp3)
{
    struct h_node proxy = h_proxy_addr();
    d->wr = h_connect_node(&ref.addr);
    d->wp = h_connect_proxy();
    keys_name();
    H_FMT(d->get, sizeof d->get, "GET %s", key_e);
    (resp3 ? conn3_open : conn2_open)(&d->rs_to, &ref.addr);
    (resp3 ? conn3_open : conn2_open)(&d->px_to, &proxy);
    d->rid = conn_id(&d->rs_to);
    d->pid = conn_id(&d->px_to);
}

static void redir_close(struct redir *d)
{
    close(d->rs_to.fd);
    close(d->px_to.fd);
    redisFree(d->wr);
    redisFree(d->wp);
}

/* A RESP2 tracking client redirects to a RESP2 client subscribed to
 * __redis__:invalidate: its reads' invalidations come there as pub/sub
 * messages, and only those (a PING after each read answers first: the
 * master tracks the read, the proxy does not invalidate it at once);
 * GETREDIR and TRACKINGINFO name the client; then a RESP3 tracking client
 * redirects to the same one. (A RESP3 reader of the key first: the
 * worker's RESP3 connection to its master, where the RESP2 one redirects,
 * is set up.) */
START_TEST(test_redirect_resp2_as_redis)
{
    struct h_node proxy = h_proxy_addr();
    struct conn3 rs_trk, px_trk;
    struct redir d;
    redir_open(&d, 0);
    struct conn3 *rs_sub = &d.rs_to, *px_sub = &d.px_to;
    redisContext *wr = d.wr, *wp = d.wp;
    long long rid = d.rid, pid = d.pid;
    const char *get = d.get;
    both(rs_sub, px_sub, "SUBSCRIBE __redis__:invalidate", 1);
    struct conn3 warm;
    char out[4096];
    reader_of(&warm, &proxy, key_e);
    for (int resp3 = 0; resp3 < 2; resp3++) {
        if (resp3) {
            conn3_open(&rs_trk, &ref.addr);
            conn3_open(&px_trk, &proxy);
        } else {
            conn2_open(&rs_trk, &ref.addr);
            conn2_open(&px_trk, &proxy);
        }
        both(&rs_trk, &px_trk, "CLIENT GETREDIR", 1);
        both_id(&rs_trk, rid, &px_trk, pid, "CLIENT TRACKING ON REDIRECT ID", 1);
        both_id(&rs_trk, rid, &px_trk, pid, "CLIENT GETREDIR", 1);
        both_id(&rs_trk, rid, &px_trk, pid, "CLIENT TRACKINGINFO", 1);
        write_both(wr, wp, "SET %s one", key_e);
        if (!resp3) {   /* the warm read's push, in before the read below: it could
                         * not tell that read from one before it (no order with RESP2's) */
            frame(&warm, out, sizeof out);
            ck_assert_msg(out[0] == '>', "%s", h_esc_str(out));
            close(warm.fd);
        }
        both(&rs_trk, &px_trk, get, 1);
        both(rs_sub, px_sub, "PING", 1);
        write_both(wr, wp, "SET %s two", key_e);
        both(rs_sub, px_sub, NULL, 1);        /* message __redis__:invalidate [key] */
        both(&rs_trk, &px_trk, get, 1);
        both(rs_sub, px_sub, "PING", 1);
        write_both(wr, wp, "DEL %s", key_e);
        both(rs_sub, px_sub, NULL, 1);
        both(&rs_trk, &px_trk, "CLIENT TRACKING OFF", 1);
        both(&rs_trk, &px_trk, "CLIENT GETREDIR", 1);
        close(rs_trk.fd);
        close(px_trk.fd);
    }
    redir_close(&d);
}
END_TEST

/* The client it redirects to is gone: each invalidation becomes a
 * "tracking-redir-broken" push to the tracking client (RESP3), and
 * TRACKINGINFO says broken_redirect, as Redis's. */
START_TEST(test_redirect_broken_as_redis)
{
    struct h_node proxy = h_proxy_addr();
    struct conn3 rs_trk, px_trk;
    struct redir d;
    redir_open(&d, 1);
    redisContext *wr = d.wr, *wp = d.wp;
    long long rid = d.rid, pid = d.pid;
    const char *get = d.get;
    conn3_open(&rs_trk, &ref.addr);
    conn3_open(&px_trk, &proxy);
    both_id(&rs_trk, rid, &px_trk, pid, "CLIENT TRACKING ON REDIRECT ID", 1);
    both(&rs_trk, &px_trk, get, 1);
    write_both(wr, wp, "SET %s one", key_e);
    both(&d.rs_to, &d.px_to, NULL, 1);          /* >2 invalidate [key], to the RESP3 client */
    both(&rs_trk, &px_trk, get, 1);
    close(d.rs_to.fd);
    close(d.px_to.fd);
    d.rs_to.fd = d.px_to.fd = -1;
    char listed[64];
    H_FMT(listed, sizeof listed, "CLIENT LIST ID %lld", pid);
    for (int i = 0; i < 500; i++) {             /* until the proxy has seen it go */
        redisReply *r = h_cmd(wp, listed);
        int gone = r->type == REDIS_REPLY_STRING && !strstr(r->str, "id=");
        freeReplyObject(r);
        if (gone)
            break;
        h_sleep_ms(10);
    }
    write_both(wr, wp, "SET %s two", key_e);
    both_id(&rs_trk, rid, &px_trk, pid, NULL, 1);   /* >2 tracking-redir-broken :ID */
    both_id(&rs_trk, rid, &px_trk, pid, "CLIENT TRACKINGINFO", 1);
    char info[4096], want[64];
    H_FMT(want, sizeof want, " redir=%lld ", pid);
    send_words(&px_trk, "CLIENT INFO");
    frame(&px_trk, info, sizeof info);
    ck_assert_msg(strstr(info, " flags=tR ") && strstr(info, want), "%s", h_esc_str(info));
    both(&rs_trk, &px_trk, "CLIENT TRACKING OFF", 1);
    close(rs_trk.fd);
    close(px_trk.fd);
    redir_close(&d);
}
END_TEST

/* Through a proxy of two workers, the client a reader redirects to is on
 * either worker: its pushes reach it; and a lost tracking connection
 * tells it to flush everything, in the tracking client's protocol's null,
 * as Redis's FLUSHALL does. */
START_TEST(test_redirect_across_workers)
{
    const char *args[] = { "--threads", "2", NULL };
    struct h_proxy p;
    struct h_topo t;
    char out[4096], want[256], cmd[256], key[96];
    h_topo_load(&t);
    h_proxy_start(&p, args);
    H_FMT(key, sizeof key, "trk:{%s}:across", h_prefix());
    redisContext *w = h_connect_extra(&p);
    for (int pair = 0; pair < 2; pair++) {      /* round robin: the two on one worker, then two */
        struct conn3 to, trk;
        conn2_open(&to, &p.addr);
        if (pair)
            conn2_open(&trk, &p.addr);
        long long id = conn_id(&to);
        send_words(&to, "SUBSCRIBE __redis__:invalidate");
        frame(&to, out, sizeof out);
        if (!pair)
            conn2_open(&trk, &p.addr);
        H_FMT(cmd, sizeof cmd, "CLIENT TRACKING ON REDIRECT %lld", id);
        send_words(&trk, cmd);
        frame(&trk, out, sizeof out);
        ck_assert_str_eq(out, "+OK\r\n");
        H_FMT(cmd, sizeof cmd, "GET %s", key);
        for (int i = 0; i < 2; i++) {   /* the first read may be told at once: not yet set up */
            send_words(&trk, cmd);
            frame(&trk, out, sizeof out);
            freeReplyObject(h_cmd(w, "SET %s v%d", key, i));
            frame(&to, out, sizeof out);
        }
        H_FMT(want, sizeof want, "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
              "*1\r\n$%zu\r\n%s\r\n", strlen(key), key);
        ck_assert_str_eq(out, want);
        close(to.fd);
        close(trk.fd);
    }
    freeReplyObject(h_cmd(w, "DEL %s", key));
    redisFree(w);
    h_proxy_stop(&p);
}
END_TEST

/* ---------- through the cluster ---------- */

/* A value written straight to its master, not through the proxy, reaches
 * the reader as an invalidation; so does one written through a second
 * proxy. An MGET over two masters tracks each key. */
START_TEST(test_writes_from_elsewhere)
{
    struct h_node proxy = h_proxy_addr();
    struct h_topo t;
    struct h_proxy other;
    struct conn3 px;
    char keys[2][96], out[4096], cmd[256];
    int owner[2];
    h_topo_load(&t);
    h_proxy_start(&other, NULL);
    keys_on_masters(&t, "elsewhere", 2, keys, owner);
    const char *one = keys[0], *two = keys[1];
    conn3_open(&px, &proxy);
    send_words(&px, "CLIENT TRACKING ON");
    frame(&px, out, sizeof out);
    ck_assert_str_eq(out, "+OK\r\n");
    H_FMT(cmd, sizeof cmd, "MGET %s %s", one, two);
    send_words(&px, cmd);
    frame(&px, out, sizeof out);
    ck_assert_msg(out[0] == '*', "MGET: %s", h_esc_str(out));
    redisContext *direct = h_connect_owner(&t, two);
    freeReplyObject(h_cmd(direct, "SET %s direct", two));
    frame(&px, out, sizeof out);
    push_of(cmd, sizeof cmd, two);
    ck_assert_str_eq(out, cmd);
    redisContext *second = h_connect_extra(&other);
    freeReplyObject(h_cmd(second, "SET %s second", one));
    frame(&px, out, sizeof out);
    push_of(cmd, sizeof cmd, one);
    ck_assert_str_eq(out, cmd);
    redisFree(direct);
    redisFree(second);
    close(px.fd);
    h_proxy_stop(&other);
}
END_TEST

/* A transaction's reads are tracked as Redis tracks them: a key read in
 * MULTI is invalidated once written after EXEC (a PING first shows no push
 * came with EXEC), in the default mode and, after CLIENT CACHING YES
 * before MULTI, in OPTIN mode; a key MULTI only wrote is not. */
START_TEST(test_exec_reads_as_redis)
{
    struct h_node proxy = h_proxy_addr();
    struct conn3 rs, px;
    redisContext *wr = h_connect_node(&ref.addr), *wp = h_connect_proxy();
    char get_a[256], get_b[256], set_c[256];
    keys_name();
    H_FMT(get_a, sizeof get_a, "GET %s", key_a);
    H_FMT(get_b, sizeof get_b, "HGETALL %s", key_b);
    H_FMT(set_c, sizeof set_c, "SET %s v", key_c);
    conn3_open(&rs, &ref.addr);
    conn3_open(&px, &proxy);
    for (int optin = 0; optin < 2; optin++) {
        both(&rs, &px, optin ? "CLIENT TRACKING ON OPTIN" : "CLIENT TRACKING ON", 1);
        if (optin)
            both(&rs, &px, "CLIENT CACHING YES", 1);
        write_both(wr, wp, "DEL %s", key_b);
        both(&rs, &px, "MULTI", 1);
        both(&rs, &px, get_a, 1);
        both(&rs, &px, get_b, 1);
        both(&rs, &px, set_c, 1);
        both(&rs, &px, "EXEC", 1);
        both(&rs, &px, "PING", 1);
        write_both(wr, wp, "SET %s x", key_c);
        write_both(wr, wp, "SET %s x", key_a);
        both(&rs, &px, NULL, 1);                /* [a], not [c] */
        write_both(wr, wp, "HSET %s f v", key_b);
        both(&rs, &px, NULL, 1);                /* [b] */
        both(&rs, &px, "CLIENT TRACKING OFF", 1);
    }
    close(rs.fd);
    close(px.fd);
    redisFree(wr);
    redisFree(wp);
}
END_TEST

/* A raw connection to master that pauses its clients for ms. */
static int pause_master(const struct h_node *master, int ms)
{
    char cmd[128], out[256];
    int fd = h_raw_connect(master);
    H_FMT(cmd, sizeof cmd, "*3\r\n$6\r\nCLIENT\r\n$5\r\nPAUSE\r\n$%d\r\n%d\r\n",
          snprintf(NULL, 0, "%d", ms), ms);
    h_raw_sends(fd, cmd);
    h_raw_recv(fd, out, sizeof out, "\r\n", 5000, NULL);
    ck_assert_str_eq(out, "+OK\r\n");
    return fd;
}

/* A raw connection to master on which SET key later waits its turn (the
 * master's clients paused). */
static int set_later(const struct h_node *master, const char *key)
{
    char cmd[512];
    int fd = h_raw_connect(master);
    H_FMT(cmd, sizeof cmd, "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$5\r\nlater\r\n", strlen(key),
          key);
    h_raw_sends(fd, cmd);
    h_sleep_ms(50);
    return fd;
}

/*
 * A push a master sent before its reply to a read on the same connection
 * reaches the reader before that reply, as one server writes them: while
 * the master's clients are paused (CLIENT PAUSE), a write of a key the
 * reader caches and then the reader's EXISTS wait their turn there; the
 * write runs first, so the push comes first. The same on the server alone.
 */
static void push_before_reply(const struct h_node *reader_at, const struct h_node *master,
                              const char *key)
{
    struct conn3 c;
    char out[4096], cmd[512], want[256];
    reader_of(&c, reader_at, key);
    int pause = pause_master(master, 300), wr = set_later(master, key);
    H_FMT(cmd, sizeof cmd, "EXISTS %s", key);
    send_words(&c, cmd);
    frame(&c, out, sizeof out);
    push_of(want, sizeof want, key);
    ck_assert_msg(strcmp(out, want) == 0, "first %s, not the push", h_esc_str(out));
    frame(&c, out, sizeof out);
    ck_assert_str_eq(out, ":1\r\n");
    h_raw_recv(wr, out, sizeof out, "\r\n", 5000, NULL);
    ck_assert_str_eq(out, "+OK\r\n");
    close(pause);
    close(wr);
    close(c.fd);
}

START_TEST(test_push_before_later_reply)
{
    struct h_node proxy = h_proxy_addr();
    struct h_topo t;
    char key[96];
    h_topo_load(&t);
    H_FMT(key, sizeof key, "trk:%s:order", h_prefix());
    push_before_reply(&ref.addr, &ref.addr, key);
    push_before_reply(&proxy, &t.masters[h_topo_owner(&t, h_slot(key))], key);
}
END_TEST

/* key written (SET key written) through w: its reader c is told, next. */
static void written_told(redisContext *w, const char *key, struct conn3 *c)
{
    char out[4096], push[256];
    freeReplyObject(h_cmd(w, "SET %s written", key));
    push_of(push, sizeof push, key);
    frame(c, out, sizeof out);
    ck_assert_msg(strcmp(out, push) == 0, "%s, not the push", h_esc_str(out));
}

/* The CLIENT CACHING YES master sent the proxy's connections so far. */
static long long caching_calls(const struct h_node *master)
{
    redisContext *m = h_connect_node(master);
    static const char field[] = "cmdstat_client|caching:calls=";
    redisReply *info = redisCommand(m, "INFO commandstats");
    ck_assert_ptr_nonnull(info);
    const char *at = info->type == REDIS_REPLY_STRING ? strstr(info->str, field) : NULL;
    long long n = at ? atoll(at + sizeof field - 1) : 0;
    freeReplyObject(info);
    redisFree(m);
    return n;
}

/* p: a proxy with one worker, whose table and node connections every
 * client of the test shares. */
static void one_worker_proxy(struct h_proxy *p)
{
    static const char *const args[] = { "--threads", "1", NULL };
    h_proxy_start(p, args);
}

/*
 * A read of a key the master already tracks for the proxy's connection
 * goes without CLIENT CACHING YES. When a write of the key runs between
 * its sending and its running (CLIENT PAUSE holds both), the master no
 * longer tracks the key when the read runs: its reader is told of the
 * write ahead of the read's reply, as by one server, and once more after
 * it, so that it keeps no value the master does not track.
 */
START_TEST(test_untracked_read_told_after_its_reply)
{
    /* a proxy of its own: no other test's key sets the bits its reads
     * are guessed from */
    struct h_proxy p;
    one_worker_proxy(&p);
    struct h_node proxy = p.addr;
    struct h_topo t;
    struct conn3 c;
    char key[96], out[4096], cmd[512], push[256];
    h_topo_load(&t);
    H_FMT(key, sizeof key, "trk:%s:untracked", h_prefix());
    const struct h_node *master = &t.masters[h_topo_owner(&t, h_slot(key))];
    long long before = caching_calls(master);
    reader_of(&c, &proxy, key);
    H_FMT(cmd, sizeof cmd, "GET %s", key);
    send_words(&c, cmd);
    frame(&c, out, sizeof out);
    ck_assert_int_eq(caching_calls(master) - before, 1);    /* the first read's only */
    int pause = pause_master(master, 300), wr = set_later(master, key);
    H_FMT(cmd, sizeof cmd, "GET %s", key);
    send_words(&c, cmd);
    push_of(push, sizeof push, key);
    frame(&c, out, sizeof out);
    ck_assert_msg(strcmp(out, push) == 0, "first %s, not the push", h_esc_str(out));
    frame(&c, out, sizeof out);
    ck_assert_str_eq(out, "$5\r\nlater\r\n");
    frame(&c, out, sizeof out);
    ck_assert_msg(strcmp(out, push) == 0, "after the reply %s, not the push", h_esc_str(out));
    ck_assert_int_eq(caching_calls(master) - before, 1);
    /* the next read is tracked again */
    send_words(&c, cmd);
    frame(&c, out, sizeof out);
    ck_assert_str_eq(out, "$5\r\nlater\r\n");
    ck_assert_int_eq(caching_calls(master) - before, 2);
    h_raw_recv(wr, out, sizeof out, "\r\n", 5000, NULL);
    ck_assert_str_eq(out, "+OK\r\n");
    close(pause);
    close(wr);
    close(c.fd);
    h_proxy_stop(&p);
}
END_TEST

/*
 * The second telling of an untracked read comes after that read's reply
 * even where an earlier reply of the client's is ready and a still
 * earlier one is not: GET of a key on a paused master, GET of one on a
 * free master (answered at once, held behind the first), then GET of the
 * reader's key, which goes without CLIENT CACHING YES behind a write
 * queued on its paused master. That master resumes first.
 */
START_TEST(test_untracked_read_told_after_its_reply_in_a_pipeline)
{
    /* a proxy of its own: no other test's key sets the bits its reads
     * are guessed from */
    struct h_proxy p;
    one_worker_proxy(&p);
    struct h_node proxy = p.addr;
    struct h_topo t;
    struct conn3 c;
    char keys[3][96], out[4096], cmd[512], push[256];
    int owner[3];
    h_topo_load(&t);
    keys_on_masters(&t, "pipeline", 3, keys, owner);        /* slow, free, read */
    const struct h_node *slow = &t.masters[owner[0]], *master = &t.masters[owner[2]];
    reader_of(&c, &proxy, keys[2]);
    long long before = caching_calls(master);
    int slow_pause = pause_master(slow, 2000), pause = pause_master(master, 800);
    int wr = set_later(master, keys[2]);
    for (int i = 0; i < 3; i++) {
        H_FMT(cmd, sizeof cmd, "GET %s", keys[i]);
        send_words(&c, cmd);
    }
    push_of(push, sizeof push, keys[2]);
    frame(&c, out, sizeof out);
    ck_assert_str_eq(out, "_\r\n");
    frame(&c, out, sizeof out);
    ck_assert_str_eq(out, "_\r\n");
    frame(&c, out, sizeof out);
    ck_assert_msg(strcmp(out, push) == 0, "third %s, not the push", h_esc_str(out));
    frame(&c, out, sizeof out);
    ck_assert_msg(strcmp(out, "$5\r\nlater\r\n") == 0, "fourth %s, not the reply",
                  h_esc_str(out));
    frame(&c, out, sizeof out);
    ck_assert_msg(strcmp(out, push) == 0, "after the reply %s, not the push", h_esc_str(out));
    ck_assert_int_eq(caching_calls(master) - before, 0);
    h_raw_recv(wr, out, sizeof out, "\r\n", 5000, NULL);
    ck_assert_str_eq(out, "+OK\r\n");
    close(slow_pause);
    close(pause);
    close(wr);
    close(c.fd);
    h_proxy_stop(&p);
}
END_TEST

/*
 * A script that names a key does not make the master track it (a script
 * tracks the keys it reads): after EVAL with CLIENT CACHING YES, another
 * client's read of the key still goes with it, and a write of the key
 * reaches that reader.
 */
START_TEST(test_script_leaves_its_key_untracked)
{
    /* a proxy of its own: no other test's key sets the bits its reads
     * are guessed from */
    struct h_proxy p;
    one_worker_proxy(&p);
    struct h_node proxy = p.addr;
    struct h_topo t;
    struct conn3 a, b;
    char key[96], out[4096], cmd[512];
    h_topo_load(&t);
    H_FMT(key, sizeof key, "trk:%s:script", h_prefix());
    const struct h_node *master = &t.masters[h_topo_owner(&t, h_slot(key))];
    conn3_open(&a, &proxy);
    send_words(&a, "CLIENT TRACKING ON");
    frame(&a, out, sizeof out);
    ck_assert_str_eq(out, "+OK\r\n");
    long long before = caching_calls(master);
    H_FMT(cmd, sizeof cmd, "EVAL return(1) 1 %s", key);
    send_words(&a, cmd);
    frame(&a, out, sizeof out);
    ck_assert_str_eq(out, ":1\r\n");
    ck_assert_int_eq(caching_calls(master) - before, 1);
    reader_of(&b, &proxy, key);
    ck_assert_int_eq(caching_calls(master) - before, 2);
    redisContext *m = h_connect_node(master);
    written_told(m, key, &b);
    redisFree(m);
    close(a.fd);
    close(b.fd);
    h_proxy_stop(&p);
}
END_TEST

/* With tracking-node-bcast yes the masters push every key written and the
 * proxy tells each client of the keys it read only: the same pushes as
 * redis-server's, in every mode. (A master writes BCAST's pushes once per
 * round of its event loop, after that round's replies: a write that runs
 * in the round of a read may be told after the read's reply.) */
START_TEST(test_node_bcast_as_redis)
{
    const char *args[] = { "--tracking-node-bcast", "yes", NULL };
    struct h_proxy p;
    h_proxy_start(&p, args);
    default_mode(&p.addr);
    noloop_optin_optout(&p.addr);
    h_proxy_stop(&p);
}
END_TEST

/* ---------- where the proxy can no longer promise ---------- */

static const char null_push[] = ">2\r\n$10\r\ninvalidate\r\n_\r\n";

/* A tracking client of p that read key. */
static void reader_of(struct conn3 *c, const struct h_node *p, const char *key)
{
    char out[4096], cmd[256];
    conn3_open(c, p);
    send_words(c, "CLIENT TRACKING ON");
    frame(c, out, sizeof out);
    ck_assert_str_eq(out, "+OK\r\n");
    H_FMT(cmd, sizeof cmd, "GET %s", key);
    send_words(c, cmd);
    frame(c, out, sizeof out);
}

/* Past tracking-table-max-keys the oldest key goes, its readers told. */
START_TEST(test_table_bound_invalidates_oldest)
{
    const char *args[] = { "--tracking-table-max-keys", "2", "--threads", "1", NULL };
    struct h_proxy p;
    struct conn3 c;
    char keys[3][96], out[4096], cmd[256], want[256];
    h_proxy_start(&p, args);
    for (int i = 0; i < 3; i++)
        H_FMT(keys[i], sizeof keys[i], "trk:{%s}:bound%d", h_prefix(), i);
    reader_of(&c, &p.addr, keys[0]);
    for (int i = 1; i < 3; i++) {
        H_FMT(cmd, sizeof cmd, "GET %s", keys[i]);
        send_words(&c, cmd);
    }
    push_of(want, sizeof want, keys[0]);
    int pushes = 0;
    for (int i = 0; i < 3; i++) {           /* the two replies and keys[0]'s push */
        frame(&c, out, sizeof out);
        if (out[0] == '>') {
            ck_assert_str_eq(out, want);
            pushes++;
        }
    }
    ck_assert_int_eq(pushes, 1);
    redisContext *o = h_connect_extra(&p);
    ck_assert_int_eq(h_info_field(o, "tracking_invalidations"), 1);
    redisFree(o);
    close(c.fd);
    h_proxy_stop(&p);
}
END_TEST

/* GETs of n keys trk:{P}:mem:<i> on c, in batches of 500, each batch's
 * replies read (pushes too): 1, or 0 once the proxy closed c. *told (if
 * not NULL) counts the invalidations among them and up to a PING's
 * answer after them. */
static int read_many(struct conn3 *c, int n, int *told)
{
    char cmd[256], key[128], out[4096];
    for (int at = 0; at < n; at += 500) {
        for (int i = at; i < at + 500 && i < n; i++) {
            H_FMT(key, sizeof key, "trk:{%s}:mem:%d", h_prefix(), i);
            int len = snprintf(cmd, sizeof cmd, "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n",
                               strlen(key), key);
            if (send(c->fd, cmd, (size_t)len, MSG_NOSIGNAL) != len)
                return 0;               /* closed: evicted */
        }
        for (int i = at; i < at + 500 && i < n; i++)
            do {
                if (!frame_within(c, out, sizeof out))
                    return 0;
                if (told)
                    *told += out[0] == '>';
            } while (out[0] == '>');
    }
    if (told) {
        send_words(c, "PING");
        do {
            if (!frame_within(c, out, sizeof out))
                return 0;
            *told += out[0] == '>';
        } while (out[0] == '>');
    }
    return 1;
}

/* A gone reader's entries leave the table, a few thousand a round: a
 * reader of 20,000 keys closes, and its entries go while another client's
 * PINGs keep the worker's rounds going. The keys stay, the master still
 * tracking them. (A key the table guessed tracked, wrongly, is told after
 * its reply instead of listed.) */
START_TEST(test_gone_reader_entries_leave_table)
{
    struct h_proxy p;
    struct conn3 c;
    char out[4096];
    one_worker_proxy(&p);
    conn3_open(&c, &p.addr);
    send_words(&c, "CLIENT TRACKING ON");
    frame(&c, out, sizeof out);
    ck_assert_str_eq(out, "+OK\r\n");
    int told = 0;
    ck_assert(read_many(&c, 20000, &told));
    redisContext *o = h_connect_extra(&p);
    ck_assert_int_eq(h_info_field(o, "tracking_total_items") + told, 20000);
    ck_assert_int_lt(told, 20000 / 10);
    close(c.fd);
    long long items = -1, deadline = h_now_ms() + 5000;
    while ((items = h_info_field(o, "tracking_total_items")) != 0 && h_now_ms() < deadline)
        h_sleep_ms(20);
    ck_assert_msg(items == 0, "%lld entries of a gone reader still in the table", items);
    ck_assert_int_eq(h_info_field(o, "tracking_total_keys"), 20000 - told);
    redisFree(o);
    h_proxy_stop(&p);
}
END_TEST

/*
 * A key whose last reader went stays in the table while the master tracks
 * it for the worker's connection: the next reader's read needs no CLIENT
 * CACHING YES, and that reader is told of the key's next write. The key
 * then leaves, and a read after it goes with CLIENT CACHING YES again.
 */
START_TEST(test_key_outlives_its_last_reader)
{
    struct h_proxy p;
    struct h_topo t;
    struct conn3 a, b;
    char key[96], cmd[256], out[4096];
    one_worker_proxy(&p);
    h_topo_load(&t);
    H_FMT(key, sizeof key, "trk:%s:outlives", h_prefix());
    const struct h_node *master = &t.masters[h_topo_owner(&t, h_slot(key))];
    redisContext *o = h_connect_extra(&p);
    long long before = caching_calls(master);
    reader_of(&a, &p.addr, key);
    ck_assert_int_eq(caching_calls(master) - before, 1);
    close(a.fd);
    long long deadline = h_now_ms() + 5000;
    while (h_info_field(o, "tracking_total_items") != 0 && h_now_ms() < deadline)
        h_sleep_ms(20);
    ck_assert_int_eq(h_info_field(o, "tracking_total_items"), 0);
    ck_assert_int_eq(h_info_field(o, "tracking_total_keys"), 1);
    reader_of(&b, &p.addr, key);
    ck_assert_int_eq(caching_calls(master) - before, 1);
    written_told(o, key, &b);
    ck_assert_int_eq(h_info_field(o, "tracking_total_keys"), 0);
    H_FMT(cmd, sizeof cmd, "GET %s", key);
    send_words(&b, cmd);
    frame(&b, out, sizeof out);
    ck_assert_str_eq(out, "$7\r\nwritten\r\n");
    ck_assert_int_eq(caching_calls(master) - before, 2);
    redisFree(o);
    close(b.fd);
    h_proxy_stop(&p);
}
END_TEST

/* What the table holds for a client counts in its memory: under
 * maxmemory-clients 1mb, a tracking client that read 20,000 keys (about
 * 100 bytes each in the table) is evicted; a client that read them without
 * tracking is not. */
START_TEST(test_table_counted_in_client_memory)
{
    const char *args[] = { "--maxmemory-clients", "1mb", "--threads", "1", NULL };
    struct h_proxy p;
    struct conn3 plain, c;
    char out[4096];
    h_proxy_start(&p, args);
    conn3_open(&plain, &p.addr);
    ck_assert_msg(read_many(&plain, 20000, NULL), "a client that does not track was closed");
    conn3_open(&c, &p.addr);
    send_words(&c, "CLIENT TRACKING ON");
    frame(&c, out, sizeof out);
    ck_assert_msg(!read_many(&c, 20000, NULL), "the tracking client was not evicted");
    redisContext *o = h_connect_extra(&p);
    ck_assert_int_ge(h_info_field(o, "evicted_clients"), 1);
    redisFree(o);
    close(plain.fd);
    close(c.fd);
    h_proxy_stop(&p);
}
END_TEST

/* key's master closes the connections that track there (those its CLIENT
 * LIST flags t). */
static void kill_tracking_conns(const struct h_topo *t, const char *key)
{
    redisContext *m = h_connect_owner(t, key);
    redisReply *r = h_cmd(m, "CLIENT LIST");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    int killed = 0;
    for (const char *l = r->str; (l = strstr(l, "id=")) != NULL; l++) {
        const char *eol = strchr(l, '\n'), *f = strstr(l, " flags=");
        if (f && (!eol || f < eol) && f[7] == 't') {  /* a connection that tracks */
            redisReply *k = h_cmd(m, "CLIENT KILL ID %lld", atoll(l + 3));
            freeReplyObject(k);
            killed++;
        }
    }
    freeReplyObject(r);
    ck_assert_msg(killed > 0, "no connection with flags=t on the key's master");
    redisFree(m);
}

/* The master closes the worker's tracking connection: every tracking
 * client gets a null key. */
START_TEST(test_lost_connection_invalidates_all)
{
    struct h_proxy p;
    struct h_topo t;
    struct conn3 c;
    char key[96], out[4096];
    h_topo_load(&t);
    one_worker_proxy(&p);
    H_FMT(key, sizeof key, "trk:{%s}:lost", h_prefix());
    reader_of(&c, &p.addr, key);
    kill_tracking_conns(&t, key);
    frame(&c, out, sizeof out);
    ck_assert_str_eq(out, null_push);
    redisContext *o = h_connect_extra(&p);      /* counted, by cause */
    ck_assert_int_ge(h_info_field(o, "tracking_flushes_connection"), 1);
    ck_assert_int_eq(h_info_field(o, "tracking_flushes_layout"), 0);
    redisFree(o);
    close(c.fd);
    h_proxy_stop(&p);
}
END_TEST

/* The null key reaches a client whose BLPOP is still blocked, as from one
 * server: it follows the replies of the client's reads, not those of its
 * other commands. */
START_TEST(test_flush_reaches_a_blocked_client)
{
    struct h_proxy p;
    struct h_topo t;
    struct conn3 c;
    char key[96], list[96], cmd[256], out[4096];
    h_topo_load(&t);
    one_worker_proxy(&p);
    H_FMT(key, sizeof key, "trk:{%s}:blocked", h_prefix());
    H_FMT(list, sizeof list, "trk:{%s}:queue", h_prefix());
    reader_of(&c, &p.addr, key);
    H_FMT(cmd, sizeof cmd, "BLPOP %s 0", list);
    send_words(&c, cmd);
    h_sleep_ms(100);
    kill_tracking_conns(&t, key);
    frame(&c, out, sizeof out);
    ck_assert_str_eq(out, null_push);
    redisContext *m = h_connect_owner(&t, list);
    redisReply *r = h_cmd(m, "LPUSH %s x", list);
    freeReplyObject(r);
    redisFree(m);
    frame(&c, out, sizeof out);
    ck_assert_msg(out[0] == '*', "BLPOP: %s", h_esc_str(out));
    close(c.fd);
    h_proxy_stop(&p);
}
END_TEST

/* "Every key" to a RESP2 client a RESP2 reader redirects to: a lost
 * tracking connection through the proxy, FLUSHALL on one redis-server,
 * the same message (a null in the reader's protocol). */
START_TEST(test_redirect_flush_as_redis)
{
    struct h_proxy p;
    struct h_topo t;
    struct conn3 sub[2], trk[2], warm;
    char key[96], cmd[256], out[2][4096];
    h_topo_load(&t);
    one_worker_proxy(&p);
    H_FMT(key, sizeof key, "trk:{%s}:flush", h_prefix());
    reader_of(&warm, &p.addr, key);             /* the RESP3 connection, set up */
    const struct h_node *at[2] = { &ref.addr, &p.addr };
    for (int i = 0; i < 2; i++) {
        conn2_open(&sub[i], at[i]);
        long long id = conn_id(&sub[i]);
        send_words(&sub[i], "SUBSCRIBE __redis__:invalidate");
        frame(&sub[i], out[i], sizeof out[i]);
        conn2_open(&trk[i], at[i]);
        H_FMT(cmd, sizeof cmd, "CLIENT TRACKING ON REDIRECT %lld", id);
        send_words(&trk[i], cmd);
        frame(&trk[i], out[i], sizeof out[i]);
        ck_assert_str_eq(out[i], "+OK\r\n");
        H_FMT(cmd, sizeof cmd, "GET %s", key);
        send_words(&trk[i], cmd);
        frame(&trk[i], out[i], sizeof out[i]);
    }
    send_words(&trk[0], "FLUSHALL");
    frame(&trk[0], out[0], sizeof out[0]);
    kill_tracking_conns(&t, key);
    for (int i = 0; i < 2; i++)
        frame(&sub[i], out[i], sizeof out[i]);
    ck_assert_msg(strcmp(out[0], out[1]) == 0, "redis-server: %s\nproxy:        %s",
                  h_esc_str(out[0]), h_esc_str(out[1]));
    for (int i = 0; i < 2; i++) {
        close(sub[i].fd);
        close(trk[i].fd);
    }
    close(warm.fd);
    h_proxy_stop(&p);
}
END_TEST

/* A drain (SIGTERM) invalidates everything before it closes the client. */
START_TEST(test_drain_invalidates_all)
{
    struct h_proxy p;
    struct conn3 c;
    char key[96], out[4096];
    one_worker_proxy(&p);
    H_FMT(key, sizeof key, "trk:{%s}:drain", h_prefix());
    reader_of(&c, &p.addr, key);
    ck_assert_int_eq(kill(p.pid, SIGTERM), 0);
    frame(&c, out, sizeof out);
    ck_assert_str_eq(out, null_push);
    close(c.fd);
    h_proxy_stop(&p);
}
END_TEST

/* A slot the reader read moves to another master (which never saw the
 * read): once the proxy has the new topology, every tracking client's
 * cache is invalidated. The slot moves back after. */
START_TEST(test_moved_slot_invalidates_all)
{
    struct h_proxy p;
    struct h_topo t;
    struct conn3 c;
    char key[96], out[4096], cmd[256];
    int slot = -1, home = -1;
    h_topo_load(&t);
    for (int i = 0; i < 1000 && slot < 0; i++) {   /* a slot without keys */
        H_FMT(key, sizeof key, "trk:{%s:mv%d}", h_prefix(), i);
        int s = h_slot(key);
        home = h_topo_owner(&t, s);
        redisContext *m = h_connect_node(&t.masters[home]);
        redisReply *r = h_cmd(m, "CLUSTER COUNTKEYSINSLOT %d", s);
        if (r->type == REDIS_REPLY_INTEGER && r->integer == 0)
            slot = s;
        freeReplyObject(r);
        redisFree(m);
    }
    ck_assert_int_ge(slot, 0);
    int away = (home + 1) % t.nmasters;
    one_worker_proxy(&p);
    reader_of(&c, &p.addr, key);
    h_move_empty_slot(&t, slot, home, away);
    H_FMT(cmd, sizeof cmd, "GET %s", key);
    send_words(&c, cmd);                        /* MOVED: the proxy reads the topology */
    int pushed = 0;
    out[0] = '\0';
    /* the GET's reply, the push and perhaps the key's own invalidation (its
     * read went out again, to the new master: the key's readers share one
     * connection) */
    for (int i = 0; i < 3 && !pushed; i++)
        pushed = frame_within(&c, out, sizeof out) && strcmp(out, null_push) == 0;
    h_move_empty_slot(&t, slot, away, home);    /* back, before anything may fail */
    ck_assert_msg(pushed, "no null invalidation after the slot moved: %s", h_esc_str(out));
    close(c.fd);
    h_proxy_stop(&p);
}
END_TEST

/* CLIENT INFO shows the t flag and redir=0, as Redis's; INFO counts the
 * tracking clients and the keys tracked. */
START_TEST(test_client_info_and_info)
{
    struct h_node proxy = h_proxy_addr();
    struct conn3 c;
    char key[96], out[4096];
    H_FMT(key, sizeof key, "trk:{%s}:info", h_prefix());
    reader_of(&c, &proxy, key);
    send_words(&c, "CLIENT INFO");
    frame(&c, out, sizeof out);
    ck_assert_msg(strstr(out, " flags=t ") && strstr(out, " redir=0 "), "%s", h_esc_str(out));
    redisContext *o = h_connect_proxy();
    ck_assert_int_ge(h_info_field(o, "tracking_clients"), 1);
    ck_assert_int_ge(h_info_field(o, "tracking_total_keys"), 1);
    ck_assert_int_ge(h_info_field(o, "tracking_total_items"), 1);
    redisReply *r = h_cmd(o, "CLIENT INFO");
    ck_assert_msg(strstr(r->str, " redir=-1 ") && !strstr(r->str, "flags=t"), "%s", r->str);
    freeReplyObject(r);
    send_words(&c, "CLIENT TRACKING OFF");
    frame(&c, out, sizeof out);
    send_words(&c, "CLIENT INFO");
    frame(&c, out, sizeof out);
    ck_assert_msg(!strstr(out, "flags=t") && strstr(out, " redir=-1 "), "%s", h_esc_str(out));
    redisFree(o);
    close(c.fd);
}
END_TEST

/* ---------- a race: writers everywhere, a reader with a cache ---------- */

#define RACE_KEYS 24
#define RACE_ROUNDS 600
#define RACE_WRITES 12

static char race_key[RACE_KEYS][TRACK_CACHE_KEY];

/*
 * A reader with a cache (kept here, as a client library keeps it) reads 24
 * keys over the three masters through a proxy of two workers, while
 * writers change them through other connections of that proxy (either
 * worker), through a second proxy and straight on the masters. After each
 * round of writes the reader reads a key of each master on its own
 * connection, which brings every invalidation the masters pushed before
 * it; then each value its cache holds must be the master's value now: an
 * invalidation that was due was never lost. The reader's tracking is
 * turned on by `on` (%s: the run's prefix).
 */
static void race(const char *on, const char *node_bcast)
{
    const char *args[] = { "--threads", "2", "--tracking-node-bcast", node_bcast, NULL };
    struct h_proxy p, other;
    struct h_topo t;
    struct conn3 c;
    struct track_cache rc;
    char out[4096];
    cache_init(&rc, race_key, RACE_KEYS);
    h_topo_load(&t);
    h_proxy_start(&p, args);
    h_proxy_start(&other, NULL);
    for (int k = 0; k < RACE_KEYS; k++)
        H_FMT(race_key[k], sizeof race_key[k], "trk:%s:race%d", h_prefix(), k);
    redisContext *writers[6];
    for (int i = 0; i < 3; i++)
        writers[i] = h_connect_extra(&p);       /* round robin over the workers */
    writers[3] = h_connect_extra(&other);
    conn3_open(&c, &p.addr);
    char cmd[160];
    H_FMT(cmd, sizeof cmd, on, h_prefix());
    send_words(&c, cmd);
    cache_reply(&c, &rc, out, sizeof out);
    ck_assert_str_eq(out, "+OK\r\n");
    unsigned seed = 12345;
    long n = 0;
    for (int round = 0; round < RACE_ROUNDS; round++) {
        for (int i = 0; i < RACE_WRITES; i++) {
            int k = (int)(rand_r(&seed) % RACE_KEYS), how = (int)(rand_r(&seed) % 5);
            redisContext *w = how < 4 ? writers[how] : h_connect_owner(&t, race_key[k]);
            freeReplyObject(h_cmd(w, "SET %s v%ld", race_key[k], ++n));
            if (how == 4)
                redisFree(w);
        }
        for (int m = 0; m < t.nmasters; m++)   /* brings what each master pushed */
            for (int k = 0; k < RACE_KEYS; k++)
                if (h_topo_owner(&t, h_slot(race_key[k])) == m) {
                    H_FMT(cmd, sizeof cmd, "EXISTS %s", race_key[k]);
                    send_words(&c, cmd);
                    cache_reply(&c, &rc, out, sizeof out);
                    break;
                }
        cache_check(&rc, &t, round, "writes");
        for (int k = 0; k < RACE_KEYS; k++)
            cache_get(&c, &rc, (k * 7 + round) % RACE_KEYS);
    }
    ck_assert_msg(rc.hits > 0 && rc.invalidations > 0, "hits %ld, invalidations %ld", rc.hits,
                  rc.invalidations);
    for (int i = 0; i < 4; i++)
        redisFree(writers[i]);
    close(c.fd);
    h_proxy_stop(&other);
    h_proxy_stop(&p);
}

START_TEST(test_race_no_stale_value)
{
    race("CLIENT TRACKING ON", "no");
}
END_TEST

START_TEST(test_race_no_stale_value_node_bcast)
{
    race("CLIENT TRACKING ON", "yes");
}
END_TEST

START_TEST(test_race_no_stale_value_bcast)
{
    race("CLIENT TRACKING ON BCAST PREFIX trk:%s:race", "no");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tracking");
    TCase *tc = tcase_create("as redis-server");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_options_as_redis);
    tcase_add_test(tc, test_trackinginfo_resp3);
    tcase_add_test(tc, test_default_mode_as_redis);
    tcase_add_test(tc, test_noloop_optin_optout_as_redis);
    tcase_add_test(tc, test_bcast_as_redis);
    tcase_add_test(tc, test_bcast_legacy_prefix);
    tcase_add_test(tc, test_redirect_resp2_as_redis);
    tcase_add_test(tc, test_redirect_broken_as_redis);
    tcase_add_test(tc, test_redirect_across_workers);
    tcase_add_test(tc, test_writes_from_elsewhere);
    tcase_add_test(tc, test_exec_reads_as_redis);
    tcase_add_test(tc, test_push_before_later_reply);
    tcase_add_test(tc, test_untracked_read_told_after_its_reply);
    tcase_add_test(tc, test_untracked_read_told_after_its_reply_in_a_pipeline);
    tcase_add_test(tc, test_script_leaves_its_key_untracked);
    tcase_add_test(tc, test_node_bcast_as_redis);
    tcase_add_test(tc, test_client_info_and_info);
    tcase_add_test(tc, test_table_bound_invalidates_oldest);
    tcase_add_test(tc, test_table_counted_in_client_memory);
    tcase_add_test(tc, test_gone_reader_entries_leave_table);
    tcase_add_test(tc, test_key_outlives_its_last_reader);
    tcase_add_test(tc, test_lost_connection_invalidates_all);
    tcase_add_test(tc, test_flush_reaches_a_blocked_client);
    tcase_add_test(tc, test_redirect_flush_as_redis);
    tcase_add_test(tc, test_drain_invalidates_all);
    tcase_add_test(tc, test_moved_slot_invalidates_all);
    tcase_add_test(tc, test_race_no_stale_value);
    tcase_add_test(tc, test_race_no_stale_value_bcast);
    tcase_add_test(tc, test_race_no_stale_value_node_bcast);
    suite_add_tcase(s, tc);
    return h_run(s);
}
