/*
 * What the proxy answers itself, checked against the real cluster:
 *
 *  - COMMAND INFO / DOCS / COUNT / GETKEYS / LIST, CLUSTER KEYSLOT, PING,
 *    ECHO, CLIENT SETNAME errors: the same bytes a cluster node sends; the
 *    COMMAND forms in RESP3 too (after HELLO 3 on both connections);
 *  - INFO and DBSIZE: the keyspace summed over the masters, asked directly;
 *  - RANDOMKEY: a key that exists; TIME: the nodes' clock;
 *  - CLIENT SETNAME/GETNAME/ID/INFO/LIST over the proxy's own clients;
 *  - CLUSTER SLOTS/NODES/SHARDS/MYID: one node, the proxy itself, owning
 *    every slot;
 *  - FLUSHALL through a proxy with enable-dangerous-commands yes empties every
 *    master. It wipes the shared test cluster, so it runs last, in its own
 *    TCase, and nothing depends on keys surviving it.
 *
 * test_protocol.c already covers PING/ECHO/SELECT/HELLO basics, CLUSTER INFO,
 * slot coverage of CLUSTER SLOTS, COMMAND COUNT > 200, TIME against the local
 * clock and DBSIZE on the idle cluster; this file does not repeat those.
 */
#include "harness.h"

/* ---------- raw RESP ---------- */

/* A multibulk request from a NULL-terminated argv (malloc'd, *len set). */
static char *argv_req(const char *const *argv, size_t *len)
{
    size_t size = 32;
    int argc = 0;
    char *req, *p;

    for (; argv[argc] != NULL; argc++)
        size += strlen(argv[argc]) + 32;
    req = malloc(size);
    ck_assert_ptr_nonnull(req);
    p = req + sprintf(req, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++)
        p += sprintf(p, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
    *len = (size_t)(p - req);
    return req;
}

/* The bytes of one reply to req from node n, on a new connection
 * (malloc'd, NUL-terminated, *len set). */
static char *raw_reply(const struct h_node *n, const char *req, size_t reqlen, size_t *len)
{
    size_t size = 1 << 16, got = 0;
    char *buf = malloc(size);
    int fd = h_raw_connect(n);

    ck_assert_ptr_nonnull(buf);
    h_raw_send(fd, req, reqlen);
    while (got == 0 || h_resp_complete(buf, got) == 0) {
        struct pollfd pfd = { fd, POLLIN, 0 };
        ssize_t k;

        if (got + 1 >= size) {
            size *= 2;
            buf = realloc(buf, size);
            ck_assert_ptr_nonnull(buf);
        }
        ck_assert_msg(poll(&pfd, 1, H_IO_TIMEOUT_S * 1000) == 1, "%s:%d sent no (whole) reply to '%s'",
                      n->host, n->port, h_esc(req, reqlen));
        k = recv(fd, buf + got, size - 1 - got, 0);
        ck_assert_msg(k > 0, "%s:%d closed the connection after '%s'", n->host, n->port,
                      h_esc(req, reqlen));
        got += (size_t)k;
    }
    buf[got] = '\0';
    close(fd);
    *len = got;
    return buf;
}

static struct h_node first_master(void)
{
    struct h_topo t;
    h_topo_load(&t);
    return t.masters[0];
}

/* The same request to a cluster node and to the proxy: the same bytes back. */
static void same_as_node(const char *const *argv)
{
    struct h_node node = first_master(), px = h_proxy_addr();
    size_t reqlen, alen, blen;
    char *req = argv_req(argv, &reqlen);
    char *a = raw_reply(&node, req, reqlen, &alen);
    char *b = raw_reply(&px, req, reqlen, &blen);

    ck_assert_msg(alen == blen && memcmp(a, b, alen) == 0,
                  "for '%s' the proxy said '%s' (%zu bytes), the node '%s' (%zu bytes)",
                  h_esc(req, reqlen), h_esc(b, blen), blen, h_esc(a, alen), alen);
    free(req);
    free(a);
    free(b);
}

/* ---------- byte for byte as a cluster node ---------- */

#define MAX_ARGS 12

static const struct {
    const char *argv[MAX_ARGS];
} as_node[] = {
    { { "COMMAND", "INFO", "get", "set", "mget", "client|setname", NULL } },
    { { "COMMAND", "INFO", "GET", "Set", NULL } },
    { { "COMMAND", "INFO", "nosuch", "get", NULL } },   /* a nil for the unknown */
    { { "COMMAND", "DOCS", "get", NULL } },
    { { "COMMAND", "DOCS", "set", "client|setname", "nosuch", NULL } },
    { { "COMMAND", "COUNT", NULL } },
    /* GETKEYS: fixed positions, every other argument, numkeys, keywords */
    { { "COMMAND", "GETKEYS", "SET", "a", "b", NULL } },
    { { "COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2", "c", "3", NULL } },
    { { "COMMAND", "GETKEYS", "EVAL", "return 1", "2", "k1", "k2", "arg", NULL } },
    { { "COMMAND", "GETKEYS", "ZUNIONSTORE", "dst", "2", "a", "b", "WEIGHTS", "1", "2", NULL } },
    { { "COMMAND", "GETKEYS", "SORT", "k", "BY", "w*", "STORE", "dst", NULL } },
    { { "COMMAND", "GETKEYS", "XREAD", "COUNT", "2", "STREAMS", "s1", "s2", "0", "0", NULL } },
    { { "COMMAND", "GETKEYS", "LMOVE", "src", "dst", "LEFT", "RIGHT", NULL } },
    { { "COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "5", "KEYS", "a", "b", NULL } },
    { { "COMMAND", "GETKEYS", "OBJECT", "ENCODING", "k", NULL } },
    /* GETKEYS errors */
    { { "COMMAND", "GETKEYS", "PING", NULL } },
    { { "COMMAND", "GETKEYS", "NOSUCH", "a", NULL } },
    { { "COMMAND", "GETKEYS", "GET", NULL } },
    { { "COMMAND", "GETKEYS", NULL } },
    /* KEYSLOT: plain, tagged, empty and unclosed tags */
    { { "CLUSTER", "KEYSLOT", "somekey", NULL } },
    { { "CLUSTER", "KEYSLOT", "{user1000}.following", NULL } },
    { { "CLUSTER", "KEYSLOT", "foo{}{bar}", NULL } },
    { { "CLUSTER", "KEYSLOT", "foo{{bar}}zap", NULL } },
    { { "CLUSTER", "KEYSLOT", "foo{bar", NULL } },
    { { "CLUSTER", "KEYSLOT", "", NULL } },
    { { "CLUSTER", "KEYSLOT", "a", "b", NULL } },
    /* PING and ECHO at the edges of their arity */
    { { "PING", "", NULL } },
    { { "PING", "a", "b", NULL } },
    { { "ECHO", "", NULL } },
    { { "ECHO", NULL } },
    { { "ECHO", "a", "b", NULL } },
    /* CLIENT and friends: argument errors */
    { { "CLIENT", "SETNAME", "has space", NULL } },
    { { "CLIENT", "SETNAME", "new\nline", NULL } },
    { { "CLIENT", "GETNAME", "x", NULL } },
    { { "CLIENT", "ID", "x", NULL } },
    { { "CLIENT", "REPLY", "maybe", NULL } },
    { { "CLIENT", "REPLY", NULL } },
    { { "CLIENT", "REPLY", "ON", NULL } },
    { { "CLIENT", "LIST", "foo", NULL } },
    { { "CLIENT", "LIST", "ID", "x", NULL } },
    { { "CLIENT", "LIST", "ID", "999999999", "-1", NULL } },
    { { "CLIENT", "LIST", "TYPE", "foo", NULL } },
    { { "CLIENT", "LIST", "TYPE", "master", NULL } },
    { { "CLIENT", "LIST", "TYPE", "normal", "x", NULL } },
    /* tracking, which is off through the proxy, as a node reports it off */
    { { "CLIENT", "TRACKINGINFO", NULL } },
    { { "CLIENT", "GETREDIR", NULL } },
    { { "CLIENT", "CACHING", "yes", NULL } },
    { { "CLIENT", "TRACKING", "off", NULL } },
    { { "CLIENT", "TRACKING", "off", "BCAST", "PREFIX", "a", "NOLOOP", NULL } },
    { { "CLIENT", "TRACKING", "off", "PREFIX", NULL } },
    { { "CLIENT", "TRACKING", "maybe", NULL } },
    { { "CLIENT", "NO-EVICT", "on", NULL } },
    { { "CLIENT", "NO-EVICT", "Off", NULL } },
    { { "CLIENT", "NO-EVICT", "x", NULL } },
    /* CLIENT KILL: its argument errors, and nobody to kill */
    { { "CLIENT", "KILL", "1.2.3.4:5", NULL } },
    { { "CLIENT", "KILL", "ID", "0", NULL } },
    { { "CLIENT", "KILL", "ID", "x", NULL } },
    { { "CLIENT", "KILL", "TYPE", "foo", NULL } },
    { { "CLIENT", "KILL", "SKIPME", "maybe", NULL } },
    { { "CLIENT", "KILL", "FOO", "bar", NULL } },
    { { "CLIENT", "KILL", "ID", "5", "TYPE", NULL } },
    { { "CLIENT", "KILL", "USER", "no-such-user-here", NULL } },
    { { "CLIENT", "KILL", "ID", "999999999", NULL } },
    { { "CLIENT", "KILL", "ADDR", "1.2.3.4:5", "SKIPME", "no", NULL } },
    { { "TIME", "x", NULL } },
    { { "DBSIZE", "x", NULL } },
    { { "RANDOMKEY", "x", NULL } },
    { { "CLUSTER", "MYID", "x", NULL } },
};

START_TEST(test_same_bytes_as_a_node)
{
    same_as_node(as_node[_i].argv);
}
END_TEST

/* A 100 KB ECHO comes back whole. */
START_TEST(test_echo_large)
{
    char *big = malloc(100001);
    const char *argv[] = { "ECHO", big, NULL };

    ck_assert_ptr_nonnull(big);
    for (int i = 0; i < 100000; i++)
        big[i] = (char)('a' + i % 26);
    big[100000] = '\0';
    same_as_node(argv);
    free(big);
}
END_TEST

/* ---------- COMMAND and COMMAND INFO with no names ---------- */

/* Top-level elements of the array reply buf (pointers into it). */
static int split_array(const char *buf, size_t len, const char **el, size_t *ellen, int max)
{
    const char *crlf = memmem(buf, len, "\r\n", 2);
    size_t at;
    int n;

    ck_assert_msg(buf[0] == '*' && crlf != NULL, "not an array: '%s'", h_esc(buf, len));
    n = atoi(buf + 1);
    ck_assert_msg(n >= 0 && n <= max, "array of %d elements", n);
    at = (size_t)(crlf - buf) + 2;
    for (int i = 0; i < n; i++) {
        el[i] = buf + at;
        ellen[i] = h_resp_complete(buf + at, len - at);
        ck_assert_msg(ellen[i] > 0, "element %d of the array is cut", i);
        at += ellen[i];
    }
    return n;
}

struct piece {
    const char *p;
    size_t len;
};

static int piece_cmp(const void *a, const void *b)
{
    const struct piece *x = a, *y = b;
    int c = memcmp(x->p, y->p, x->len < y->len ? x->len : y->len);
    return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

/* A COMMAND INFO entry with its subcommands (element 10) sorted: Redis lists
 * them in its hash table's order, which means nothing. malloc'd. */
static char *entry_canonical(const char *e, size_t len, size_t *outlen)
{
    const char *el[16], *sub[64];
    size_t ellen[16], sublen[64], used = 0;
    int n = split_array(e, len, el, ellen, 16), nsub;
    struct piece pieces[64];
    char *out = malloc(len + 1);

    ck_assert_ptr_nonnull(out);
    ck_assert_msg(n == 10, "a COMMAND entry of %d elements: '%s'", n, h_esc(e, len));
    nsub = split_array(el[9], ellen[9], sub, sublen, 64);
    for (int i = 0; i < nsub; i++)
        pieces[i] = (struct piece){ sub[i], sublen[i] };
    qsort(pieces, (size_t)nsub, sizeof(pieces[0]), piece_cmp);
    used = (size_t)(el[9] - e);
    memcpy(out, e, used);
    used += (size_t)sprintf(out + used, "*%d\r\n", nsub);
    for (int i = 0; i < nsub; i++) {
        memcpy(out + used, pieces[i].p, pieces[i].len);
        used += pieces[i].len;
    }
    ck_assert_uint_eq(used, len);
    *outlen = used;
    return out;
}

/* Every command's entry, canonical and sorted (entries malloc'd). */
static int command_entries(const struct h_node *n, const char *const *argv, struct piece *out, int max)
{
    static const char *el[1024];
    static size_t ellen[1024];
    size_t reqlen, len;
    char *req = argv_req(argv, &reqlen), *buf = raw_reply(n, req, reqlen, &len);
    int count = split_array(buf, len, el, ellen, max);

    for (int i = 0; i < count; i++) {
        out[i].p = entry_canonical(el[i], ellen[i], &out[i].len);
    }
    qsort(out, (size_t)count, sizeof(out[0]), piece_cmp);
    free(req);
    free(buf);
    return count;
}

static void same_command_table(const char *const *argv)
{
    static struct piece a[1024], b[1024];
    struct h_node node = first_master(), px = h_proxy_addr();
    int na = command_entries(&node, argv, a, 1024), nb = command_entries(&px, argv, b, 1024);

    ck_assert_msg(na == nb, "%s: the node lists %d commands, the proxy %d", argv[0], na, nb);
    for (int i = 0; i < na; i++) {
        ck_assert_msg(piece_cmp(&a[i], &b[i]) == 0, "%s: the node has '%s', the proxy '%s'",
                      argv[1] ? argv[1] : argv[0], h_esc(a[i].p, a[i].len), h_esc(b[i].p, b[i].len));
        free((char *)a[i].p);
        free((char *)b[i].p);
    }
}

START_TEST(test_command_all)
{
    static const char *argv[] = { "COMMAND", NULL };
    same_command_table(argv);
}
END_TEST

START_TEST(test_command_info_all)
{
    static const char *argv[] = { "COMMAND", "INFO", NULL };
    same_command_table(argv);
}
END_TEST

/* COMMAND LIST: the same names (subcommands as "parent|sub" included), in
 * any order. */
START_TEST(test_command_list)
{
    static const char *argv[] = { "COMMAND", "LIST", NULL };
    static const char *ea[1024], *eb[1024];
    static size_t la[1024], lb[1024];
    static struct piece pa[1024], pb[1024];
    struct h_node node = first_master(), px = h_proxy_addr();
    size_t reqlen, alen, blen;
    char *req = argv_req(argv, &reqlen);
    char *a = raw_reply(&node, req, reqlen, &alen), *b = raw_reply(&px, req, reqlen, &blen);
    int na = split_array(a, alen, ea, la, 1024), nb = split_array(b, blen, eb, lb, 1024);

    for (int i = 0; i < na; i++)
        pa[i] = (struct piece){ ea[i], la[i] };
    for (int i = 0; i < nb; i++)
        pb[i] = (struct piece){ eb[i], lb[i] };
    qsort(pa, (size_t)na, sizeof(pa[0]), piece_cmp);
    qsort(pb, (size_t)nb, sizeof(pb[0]), piece_cmp);
    for (int i = 0, j = 0; i < na || j < nb;) {
        int c = i == na ? 1 : j == nb ? -1 : piece_cmp(&pa[i], &pb[j]);
        ck_assert_msg(c == 0, "COMMAND LIST: %s lists '%s' and the other does not (node %d names, "
                      "proxy %d)", c < 0 ? "the node" : "the proxy",
                      c < 0 ? h_esc(pa[i].p, pa[i].len) : h_esc(pb[j].p, pb[j].len), na, nb);
        i++;
        j++;
    }
    free(req);
    free(a);
    free(b);
}
END_TEST

/* ---------- COMMAND in RESP3, byte for byte as a cluster node ---------- */

/* The bytes of the reply to req from node n, on a new connection that sends
 * HELLO 3 first; HELLO's own reply (its id and mode differ between a node and
 * the proxy) is dropped. malloc'd, NUL-terminated, *len set. */
static char *raw_reply_resp3(const struct h_node *n, const char *req, size_t reqlen, size_t *len)
{
    static const char hello[] = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
    size_t size = 1 << 16, got = 0;
    long first = 0, second = 0;
    long long deadline = h_now_ms() + H_IO_TIMEOUT_S * 1000;
    char *buf = malloc(size);
    int fd = h_raw_connect(n);

    ck_assert_ptr_nonnull(buf);
    h_raw_send(fd, hello, sizeof hello - 1);
    h_raw_send(fd, req, reqlen);
    for (;;) {
        long k;

        first = h_resp_parse(buf, got, NULL);
        second = first > 0 ? h_resp_parse(buf + first, got - (size_t)first, NULL) : 0;
        ck_assert_msg(first >= 0 && second >= 0, "%s:%d sent a malformed reply to HELLO 3 + '%s': '%s'",
                      n->host, n->port, h_esc(req, reqlen), h_esc(buf, got));
        if (second > 0)
            break;
        k = h_recv_more(fd, &buf, &size, got, deadline);
        ck_assert_msg(k > 0, "%s:%d sent no (whole) reply to HELLO 3 + '%s' (%ld): '%s'", n->host,
                      n->port, h_esc(req, reqlen), k, h_esc(buf, got));
        got += (size_t)k;
    }
    close(fd);
    ck_assert_msg(buf[0] == '%', "%s:%d answered HELLO 3 with '%s'", n->host, n->port,
                  h_esc(buf, (size_t)first));
    ck_assert_msg(got == (size_t)(first + second), "%s:%d sent more than two replies: '%s'", n->host,
                  n->port, h_esc(buf, got));
    memmove(buf, buf + first, (size_t)second);
    buf[second] = '\0';
    *len = (size_t)second;
    return buf;
}

static void same_as_node_resp3(const char *const *argv)
{
    struct h_node node = first_master(), px = h_proxy_addr();
    size_t reqlen, alen, blen;
    char *req = argv_req(argv, &reqlen);
    char *a = raw_reply_resp3(&node, req, reqlen, &alen);
    char *b = raw_reply_resp3(&px, req, reqlen, &blen);

    ck_assert_msg(alen == blen && memcmp(a, b, alen) == 0,
                  "in RESP3, for '%s' the proxy said '%s' (%zu bytes), the node '%s' (%zu bytes)",
                  h_esc(req, reqlen), h_esc(b, blen), blen, h_esc(a, alen), alen);
    free(req);
    free(a);
    free(b);
}

/* Every COMMAND case of as_node, in RESP3. */
START_TEST(test_command_same_bytes_resp3)
{
    if (strcmp(as_node[_i].argv[0], "COMMAND") == 0)
        same_as_node_resp3(as_node[_i].argv);
}
END_TEST

/* More COMMAND cases, in RESP2 and RESP3: an unknown name alone (INFO's
 * null, an empty DOCS map), a subcommand of a command without any. */
static const struct {
    const char *argv[MAX_ARGS];
} command_more[] = {
    { { "COMMAND", "INFO", "nosuch", NULL } },
    { { "COMMAND", "DOCS", "nosuch", NULL } },
    { { "COMMAND", "INFO", "get|x", "client|nosuch", "client|id", NULL } },
    { { "COMMAND", "DOCS", "get|x", "client|nosuch", "client|id", "get", NULL } },
    { { "COMMAND", "GETKEYS", "GETEX", "k", "PX", "1", NULL } },
};

START_TEST(test_command_more_both_protocols)
{
    same_as_node(command_more[_i].argv);
    same_as_node_resp3(command_more[_i].argv);
}
END_TEST

/* The elements of the aggregate at buf[0..len) (a map's keys and values
 * alternating, so 2n of them): their number, *head the header's length. */
static int elements(const char *buf, size_t len, const char **el, size_t *ellen, int max, size_t *head)
{
    const char *crlf = memmem(buf, len, "\r\n", 2);
    long long n;
    size_t at;

    ck_assert_msg(crlf != NULL && strchr("*~%", buf[0]), "not an aggregate: '%s'", h_esc(buf, len));
    n = atoll(buf + 1) * (buf[0] == '%' ? 2 : 1);
    ck_assert_msg(n >= 0 && n <= max, "an aggregate of %lld elements: '%s'", n, h_esc(buf, len));
    at = *head = (size_t)(crlf - buf) + 2;
    for (long long i = 0; i < n; i++) {
        long one = h_resp_parse(buf + at, len - at, NULL);

        ck_assert_msg(one > 0, "element %lld of '%s' is cut", i, h_esc(buf, len));
        el[i] = buf + at;
        ellen[i] = (size_t)one;
        at += (size_t)one;
    }
    ck_assert_uint_eq(at, len);
    return (int)n;
}

/* Append pieces to out in sorted order. */
static size_t put_sorted(char *out, struct piece *pieces, int n)
{
    size_t used = 0;

    qsort(pieces, (size_t)n, sizeof(pieces[0]), piece_cmp);
    for (int i = 0; i < n; i++) {
        memcpy(out + used, pieces[i].p, pieces[i].len);
        used += pieces[i].len;
    }
    return used;
}

/* An INFO entry with its subcommands (element 10, an array or a set) in
 * byte order, to out; its length. */
static size_t canon_info(const char *e, size_t len, char *out)
{
    const char *el[16], *sub[64];
    size_t ellen[16], sublen[64], head, subhead;
    struct piece pieces[64];
    int n = elements(e, len, el, ellen, 16, &head), nsub;
    size_t used;

    ck_assert_msg(n == 10, "a COMMAND entry of %d elements: '%s'", n, h_esc(e, len));
    nsub = elements(el[9], ellen[9], sub, sublen, 64, &subhead);
    used = (size_t)(el[9] - e) + subhead;
    memcpy(out, e, used);
    for (int i = 0; i < nsub; i++)
        pieces[i] = (struct piece){ sub[i], sublen[i] };
    return used + put_sorted(out + used, pieces, nsub);
}

/* A DOCS name and docs map with its "subcommands" map's pairs in byte order,
 * to out; its length. */
static size_t canon_docs(const char *name, size_t namelen, const char *docs, size_t len, char *out)
{
    static const char subcommands[] = "$11\r\nsubcommands\r\n";
    const char *el[32], *sub[128];
    size_t ellen[32], sublen[128], head, subhead, used = namelen + 0;
    struct piece pieces[64];
    int n = elements(docs, len, el, ellen, 32, &head);

    memcpy(out, name, namelen);
    memcpy(out + used, docs, head);
    used += head;
    for (int i = 0; i < n; i += 2) {
        memcpy(out + used, el[i], ellen[i]);
        used += ellen[i];
        if (ellen[i] != sizeof subcommands - 1 || memcmp(el[i], subcommands, ellen[i]) != 0) {
            memcpy(out + used, el[i + 1], ellen[i + 1]);
            used += ellen[i + 1];
            continue;
        }
        int nsub = elements(el[i + 1], ellen[i + 1], sub, sublen, 128, &subhead);
        memcpy(out + used, el[i + 1], subhead);
        used += subhead;
        for (int j = 0; j < nsub; j += 2)
            pieces[j / 2] = (struct piece){ sub[j], sublen[j] + sublen[j + 1] };
        used += put_sorted(out + used, pieces, nsub / 2);
    }
    return used;
}

enum canon { CANON_NAMES, CANON_INFO, CANON_DOCS };

/* A whole COMMAND / COMMAND INFO / COMMAND DOCS / COMMAND LIST reply, in
 * an order that does not depend on Redis's hash tables: its header, then
 * its entries (or DOCS pairs), each canonical, sorted. malloc'd. */
static char *canon_reply(const char *buf, size_t len, enum canon how)
{
    static const char *el[2048];
    static size_t ellen[2048];
    static struct piece pieces[1024];
    size_t head, used;
    int n = elements(buf, len, el, ellen, 2048, &head), np = 0;
    char *out = malloc(len + 1), *scratch = malloc(len + 1), *at = scratch;

    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_nonnull(scratch);
    for (int i = 0; i < n; i += how == CANON_DOCS ? 2 : 1) {
        size_t one;

        if (how == CANON_INFO)
            one = canon_info(el[i], ellen[i], at);
        else if (how == CANON_DOCS)
            one = canon_docs(el[i], ellen[i], el[i + 1], ellen[i + 1], at);
        else
            memcpy(at, el[i], one = ellen[i]);
        pieces[np++] = (struct piece){ at, one };
        at += one;
    }
    memcpy(out, buf, head);
    used = head + put_sorted(out + head, pieces, np);
    ck_assert_uint_eq(used, len);
    out[used] = '\0';
    free(scratch);
    return out;
}

static const struct {
    int resp3;
    enum canon how;
    const char *argv[4];
} command_tables[] = {
    { 1, CANON_INFO, { "COMMAND", NULL } },
    { 1, CANON_INFO, { "COMMAND", "INFO", NULL } },
    { 1, CANON_DOCS, { "COMMAND", "DOCS", NULL } },
    { 1, CANON_NAMES, { "COMMAND", "LIST", NULL } },
    { 0, CANON_DOCS, { "COMMAND", "DOCS", NULL } },
};

/* Every command's entry, as the node writes it in that protocol (and for
 * the entries in name order, the proxy's order). */
START_TEST(test_command_tables_both_protocols)
{
    struct h_node node = first_master(), px = h_proxy_addr();
    const char *const *argv = command_tables[_i].argv;
    size_t reqlen, alen, blen;
    char *req = argv_req(argv, &reqlen), *a, *b, *ca, *cb;

    if (command_tables[_i].resp3) {
        a = raw_reply_resp3(&node, req, reqlen, &alen);
        b = raw_reply_resp3(&px, req, reqlen, &blen);
    } else {
        a = raw_reply(&node, req, reqlen, &alen);
        b = raw_reply(&px, req, reqlen, &blen);
    }
    ca = canon_reply(a, alen, command_tables[_i].how);
    cb = canon_reply(b, blen, command_tables[_i].how);
    if (alen != blen || memcmp(ca, cb, alen) != 0) {
        size_t at = 0;

        while (at < alen && at < blen && ca[at] == cb[at])
            at++;
        at = at > 100 ? at - 100 : 0;
        ck_abort_msg("%s in RESP%d: %zu bytes from the proxy, %zu from the node; they differ "
                     "near byte %zu: the proxy '%s', the node '%s'", h_esc(req, reqlen),
                     command_tables[_i].resp3 ? 3 : 2, blen, alen, at,
                     h_esc(cb + at, blen - at), h_esc(ca + at, alen - at));
    }
    free(req);
    free(a);
    free(b);
    free(ca);
    free(cb);
}
END_TEST

/* ---------- INFO, DBSIZE, RANDOMKEY, TIME ---------- */

static long long masters_dbsize(const struct h_topo *t)
{
    long long sum = 0;

    for (int m = 0; m < t->nmasters; m++) {
        redisContext *n = h_connect_node(&t->masters[m]);
        redisReply *d = h_cmd(n, "DBSIZE");
        H_EXPECT_TYPE(d, REDIS_REPLY_INTEGER);
        sum += d->integer;
        freeReplyObject(d);
        redisFree(n);
    }
    return sum;
}

/* n keys "PREFIX:name:i" through c, pipelined. */
static void write_keys(redisContext *c, const char *name, int n)
{
    redisReply *r;

    for (int i = 0; i < n; i++)
        redisAppendCommand(c, "SET %s:%s:%d v%d", h_prefix(), name, i, i);
    for (int i = 0; i < n; i++) {
        r = h_get_reply(c);
        H_EXPECT_STATUS(r, "OK");
        freeReplyObject(r);
    }
}

static void delete_keys(redisContext *c, const char *name, int n)
{
    redisReply *r;

    for (int i = 0; i < n; i++)
        redisAppendCommand(c, "DEL %s:%s:%d", h_prefix(), name, i);
    for (int i = 0; i < n; i++) {
        r = h_get_reply(c);
        H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
        freeReplyObject(r);
    }
}

/* db0:keys=N of an INFO text, or -1 without a db0 line. */
static long long info_db0_keys(const char *text)
{
    const char *db0 = strstr(text, "\r\ndb0:keys=");
    return db0 ? atoll(db0 + strlen("\r\ndb0:keys=")) : -1;
}

START_TEST(test_info_and_dbsize_sum_the_masters)
{
    static const char *sections[] = { "# Server\r\n", "# Clients\r\n", "# Stats\r\n", "# Keyspace\r\n" };
    struct h_topo t;
    redisContext *c = h_connect_proxy();
    long long before = -1, after = -2, info = -3, dbsize = -4;
    redisReply *r;

    h_topo_load(&t);
    write_keys(c, "info", 300);
    /* nothing else writes meanwhile, but a key of an earlier test may expire
     * in between: a few attempts, each bracketed by the masters' sum */
    for (int attempt = 0; attempt < 5; attempt++) {
        before = masters_dbsize(&t);
        r = h_cmd(c, "INFO");
        H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
        for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
            ck_assert_msg(strstr(r->str, sections[i]) != NULL, "INFO without %.*s: '%s'",
                          (int)strlen(sections[i]) - 2, sections[i], h_esc(r->str, r->len));
        info = info_db0_keys(r->str);
        freeReplyObject(r);
        r = h_cmd(c, "DBSIZE");
        H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
        dbsize = r->integer;
        freeReplyObject(r);
        after = masters_dbsize(&t);
        if (before == after && info == before && dbsize == before)
            break;
    }
    ck_assert_msg(before >= 300, "the masters hold %lld keys after 300 were written", before);
    ck_assert_msg(info == before && before == after,
                  "INFO says db0:keys=%lld, the masters hold %lld (then %lld)", info, before, after);
    ck_assert_msg(dbsize == before, "DBSIZE %lld, the masters hold %lld", dbsize, before);

    /* one section asked for: that section only */
    r = h_cmd(c, "INFO keyspace");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    ck_assert_msg(strncmp(r->str, "# Keyspace\r\n", 12) == 0 && strstr(r->str, "# Server") == NULL,
                  "INFO keyspace: '%s'", h_esc(r->str, r->len));
    ck_assert_msg(info_db0_keys(r->str) >= 300, "INFO keyspace: '%s'", h_esc(r->str, r->len));
    freeReplyObject(r);
    delete_keys(c, "info", 300);
    redisFree(c);
}
END_TEST

START_TEST(test_randomkey_exists)
{
    struct h_topo t;
    redisContext *c = h_connect_proxy();

    h_topo_load(&t);
    write_keys(c, "rnd", 30);
    for (int i = 0; i < 20; i++) {
        redisReply *r = h_cmd(c, "RANDOMKEY"), *e;
        redisContext *owner;

        H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
        owner = h_connect_owner(&t, r->str);
        e = h_cmd(owner, "EXISTS %b", r->str, r->len);
        ck_assert_msg(e->type == REDIS_REPLY_INTEGER && e->integer == 1,
                      "RANDOMKEY gave '%s', which its master does not hold", r->str);
        freeReplyObject(e);
        redisFree(owner);
        freeReplyObject(r);
    }
    delete_keys(c, "rnd", 30);
    redisFree(c);
}
END_TEST

static long long time_us(redisContext *c)
{
    redisReply *r = h_cmd(c, "TIME");
    long long us;

    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 2);
    H_EXPECT_TYPE(r->element[0], REDIS_REPLY_STRING);
    H_EXPECT_TYPE(r->element[1], REDIS_REPLY_STRING);
    us = atoll(r->element[0]->str) * 1000000 + atoll(r->element[1]->str);
    freeReplyObject(r);
    return us;
}

/* The proxy's TIME lies between two TIMEs of a node on the same host. */
START_TEST(test_time_between_node_times)
{
    struct h_node m = first_master();
    redisContext *node = h_connect_node(&m), *c = h_connect_proxy();

    for (int i = 0; i < 5; i++) {
        long long a = time_us(node), p = time_us(c), b = time_us(node);
        ck_assert_msg(a - 1000 <= p && p <= b + 1000,
                      "proxy TIME %lld us, the node's %lld then %lld", p, a, b);
    }
    redisFree(c);
    redisFree(node);
}
END_TEST

/* ---------- CLIENT ---------- */

/* The CLIENT LIST line (in text) whose id is id, copied to line; 0 or -1. */
static int client_line(const char *text, long long id, char *line, size_t size)
{
    char want[40];
    const char *p = text;

    snprintf(want, sizeof(want), "id=%lld ", id);
    while (*p != '\0') {
        size_t len = strcspn(p, "\n");
        if (strncmp(p, want, strlen(want)) == 0) {
            snprintf(line, size, "%.*s", (int)len, p);
            return 0;
        }
        p += len;
        if (*p == '\n')
            p++;
    }
    return -1;
}

static int line_has(const char *line, const char *field)
{
    char pad[300];
    snprintf(pad, sizeof(pad), " %s ", field);
    return strstr(line, pad) != NULL;
}

/* CLIENT LIST TYPE type, asked on c, lists the client whose id is in and not
 * the one whose id is out. */
static void expect_type_lists(redisContext *c, const char *type, long long in, long long out)
{
    char line[1024];
    redisReply *r = h_cmd(c, "CLIENT LIST TYPE %s", type);

    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    ck_assert_msg(client_line(r->str, in, line, sizeof(line)) == 0 &&
                  client_line(r->str, out, line, sizeof(line)) < 0,
                  "TYPE %s: '%s', not %lld alone of %lld and %lld", type, h_esc(r->str, r->len),
                  in, in, out);
    freeReplyObject(r);
}

START_TEST(test_client_commands)
{
    redisContext *a = h_connect_proxy(), *b = h_connect_proxy();
    char name_a[64], name_b[64], field[100], line[1024];
    long long ida, idb;
    redisReply *r;
    int gone = 0;

    snprintf(name_a, sizeof(name_a), "tp-local-a-%d", (int)getpid());
    snprintf(name_b, sizeof(name_b), "tp-local-b-%d", (int)getpid());
    H_OK(a, "CLIENT SETNAME %s", name_a);
    H_OK(b, "CLIENT SETNAME %s", name_b);
    ida = h_client_id(a);
    idb = h_client_id(b);
    ck_assert_msg(ida > 0 && idb > 0 && ida != idb, "ids %lld and %lld", ida, idb);
    ck_assert_int_eq(h_client_id(a), ida);
    r = h_cmd(b, "CLIENT GETNAME");
    H_EXPECT_BULK(r, name_b);
    freeReplyObject(r);

    /* LIST: both, each with its id and name */
    r = h_cmd(a, "CLIENT LIST");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    ck_assert_msg(client_line(r->str, ida, line, sizeof(line)) == 0, "id %lld not in '%s'", ida,
                  h_esc(r->str, r->len));
    snprintf(field, sizeof(field), "name=%s", name_a);
    ck_assert_msg(line_has(line, field), "'%s' lacks %s", line, field);
    ck_assert_msg(line_has(line, "cmd=client|list"), "'%s': not its last command", line);
    ck_assert_msg(client_line(r->str, idb, line, sizeof(line)) == 0, "id %lld not in '%s'", idb,
                  h_esc(r->str, r->len));
    snprintf(field, sizeof(field), "name=%s", name_b);
    ck_assert_msg(line_has(line, field), "'%s' lacks %s", line, field);
    ck_assert_msg(r->str[r->len - 1] == '\n', "CLIENT LIST does not end in a newline");
    freeReplyObject(r);

    /* LIST ID: those clients, in the order asked */
    char first[40], second[40];
    r = h_cmd(a, "CLIENT LIST ID %lld 999999999 %lld", idb, ida);
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    snprintf(first, sizeof(first), "id=%lld ", idb);
    snprintf(second, sizeof(second), "id=%lld ", ida);
    ck_assert_msg(strncmp(r->str, first, strlen(first)) == 0 && strstr(r->str, second) != NULL &&
                  strchr(r->str, '\n') + 1 == strstr(r->str, second),
                  "CLIENT LIST ID %lld %lld: '%s'", idb, ida, h_esc(r->str, r->len));
    freeReplyObject(r);

    /* LIST TYPE: a subscriber is pubsub, not normal */
    {
        redisContext *s = h_connect_proxy();
        long long ids = h_client_id(s);
        freeReplyObject(h_cmd(s, "SUBSCRIBE tp-local-ch"));
        expect_type_lists(a, "pubsub", ids, ida);
        expect_type_lists(a, "normal", ida, ids);
        redisFree(s);
    }

    /* INFO: the caller only, one line */
    r = h_cmd(b, "CLIENT INFO");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    ck_assert_msg(r->len > 0 && strchr(r->str, '\n') == r->str + r->len - 1,
                  "CLIENT INFO is not one line: '%s'", h_esc(r->str, r->len));
    ck_assert_msg(client_line(r->str, idb, line, sizeof(line)) == 0, "CLIENT INFO of %lld: '%s'",
                  idb, h_esc(r->str, r->len));
    ck_assert_msg(line_has(line, field), "'%s' lacks %s", line, field);
    freeReplyObject(r);

    /* an empty name clears it, as on Redis */
    H_OK(b, "CLIENT SETNAME %s", "");
    r = h_cmd(b, "CLIENT GETNAME");
    H_EXPECT_NIL(r);
    freeReplyObject(r);

    /* a closed client leaves the list */
    redisFree(b);
    for (int i = 0; i < 40 && !gone; i++) {
        r = h_cmd(a, "CLIENT LIST");
        H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
        gone = client_line(r->str, idb, line, sizeof(line)) < 0;
        freeReplyObject(r);
        if (!gone)
            h_sleep_ms(50);
    }
    ck_assert_msg(gone, "client %lld still listed 2 s after it closed", idb);
    redisFree(a);
}
END_TEST

/* ---------- CLIENT KILL ---------- */

/* c's connection is closed by the proxy within 2 s (a kill on another
 * worker lands on that worker's next loop). */
static void expect_closed(redisContext *c, const char *what)
{
    for (int i = 0; i < 100; i++) {
        redisReply *r = redisCommand(c, "PING");
        if (r == NULL)
            return;
        freeReplyObject(r);
        h_sleep_ms(20);
    }
    ck_abort_msg("%s: still open 2 s after CLIENT KILL", what);
}

static void expect_open(redisContext *c, const char *what)
{
    redisReply *r = redisCommand(c, "PING");
    ck_assert_msg(r != NULL && r->type == REDIS_REPLY_STATUS, "%s: closed (%s)", what,
                  r ? h_show(r) : c->errstr);
    freeReplyObject(r);
}

/* "ip:port" of c's end of its connection: the proxy's addr= for it. */
static void local_addr(redisContext *c, char *buf, size_t size)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    char ip[INET_ADDRSTRLEN];

    ck_assert_int_eq(getsockname(c->fd, (struct sockaddr *)&sa, &len), 0);
    inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
    snprintf(buf, size, "%s:%d", ip, ntohs(sa.sin_port));
}

/* On a proxy of two workers, so that some kills cross threads. */
START_TEST(test_client_kill)
{
    static const char *args[] = { "--threads", "2", NULL };
    struct h_proxy px;
    redisContext *a, *c[8], *s, *n;
    char addr[64], what[64];
    redisReply *r;

    h_proxy_start(&px, args);
    a = h_connect_extra(&px);
    for (int i = 0; i < 8; i++)
        c[i] = h_connect_extra(&px);
    for (int i = 0; i < 8; i++) {
        long long id = h_client_id(c[i]);
        r = h_cmd(a, "CLIENT KILL ID %lld", id);
        H_EXPECT_INT(r, 1);
        freeReplyObject(r);
        snprintf(what, sizeof what, "client %lld", id);
        expect_closed(c[i], what);
        redisFree(c[i]);
    }

    /* the old form: one address, +OK or an error */
    n = h_connect_extra(&px);
    expect_open(n, "a new client");
    local_addr(n, addr, sizeof addr);
    H_OK(a, "CLIENT KILL %s", addr);
    expect_closed(n, addr);
    redisFree(n);
    H_ERR(a, "ERR No such client", "CLIENT KILL %s", addr);

    /* TYPE pubsub: the subscriber, not the others */
    s = h_connect_extra(&px);
    n = h_connect_extra(&px);
    freeReplyObject(h_cmd(s, "SUBSCRIBE tp-kill-ch"));
    expect_open(n, "a normal client");
    r = h_cmd(a, "CLIENT KILL TYPE pubsub");
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    expect_closed(s, "the subscriber");
    expect_open(n, "the normal client after TYPE pubsub");
    redisFree(s);

    /* USER default: everyone but the caller (SKIPME yes by default) */
    r = h_cmd(a, "CLIENT KILL USER default");
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    expect_closed(n, "the normal client after USER default");
    redisFree(n);
    expect_open(a, "the caller");

    /* SKIPME no: the caller too, after its reply */
    local_addr(a, addr, sizeof addr);
    r = h_cmd(a, "CLIENT KILL ADDR %s SKIPME no", addr);
    H_EXPECT_INT(r, 1);
    freeReplyObject(r);
    expect_closed(a, "the caller after SKIPME no");
    redisFree(a);
    h_proxy_stop(&px);
}
END_TEST

/* ---------- MONITOR ---------- */

/* The next line m is shown (a status reply), its "+" left out. */
static void monitor_line(redisContext *m, char *buf, size_t size)
{
    redisReply *r = h_get_reply(m);
    H_EXPECT_TYPE(r, REDIS_REPLY_STATUS);
    ck_assert_msg(strlen(r->str) < size, "monitor line too long: %s", r->str);
    strcpy(buf, r->str);
    freeReplyObject(r);
}

/* A line as Redis writes it: "<s>.<6 digits> [0 <addr>] <args>"; its
 * client's address into addr and where its arguments start. */
static const char *monitor_args(const char *line, char *addr, size_t size)
{
    const char *p = line;
    while (*p >= '0' && *p <= '9')
        p++;
    ck_assert_msg(p > line && *p == '.', "no time in monitor line: %s", line);
    for (int i = 1; i <= 6; i++)
        ck_assert_msg(p[i] >= '0' && p[i] <= '9', "no microseconds in monitor line: %s", line);
    ck_assert_msg(strncmp(p + 7, " [0 ", 4) == 0, "no [0 addr] in monitor line: %s", line);
    const char *end = strstr(p + 11, "] ");
    ck_assert_msg(end != NULL && (size_t)(end - (p + 11)) < size, "bad monitor line: %s", line);
    memcpy(addr, p + 11, (size_t)(end - (p + 11)));
    addr[end - (p + 11)] = '\0';
    return end + 2;
}

/*
 * MONITOR on a proxy of two workers: the monitor sees the commands of every
 * client (sixteen more, spread over both workers) as Redis writes them: as
 * sent (not lowercased), quoted as sdscatrepr does, AUTH's and HELLO AUTH's secrets redacted, an
 * MGET once, nothing for administrative commands or commands refused before
 * they run. The monitor itself: keyspace commands refused as by Redis,
 * PING answered (and shown), a second MONITOR unanswered, flags=O in
 * CLIENT LIST, RESET ends it; inside MULTI it is EXEC's error.
 */
START_TEST(test_monitor)
{
    enum { OTHERS = 16 };
    static const char *args[] = { "--threads", "2", NULL };
    static const char val[] = "v a\"b\\c\n\x01\xe9";
    struct h_proxy px;
    redisContext *m, *a, *others[OTHERS];
    char addr_a[64], addr[64], line[4096], key[128], want[6][512];
    int seen_others = 0, got_a = 0;
    redisReply *r;

    h_proxy_start(&px, args);
    m = h_connect_extra(&px);
    a = h_connect_extra(&px);
    H_OK(m, "MONITOR");
    local_addr(a, addr_a, sizeof addr_a);
    H_FMT(key, sizeof key, "%s:monitor", h_prefix());
    H_FMT(want[0], sizeof want[0], "\"SET\" \"%s\" \"v a\\\"b\\\\c\\n\\x01\\xe9\"", key);
    H_FMT(want[1], sizeof want[1], "\"GET\" \"%s\"", key);
    H_FMT(want[2], sizeof want[2], "\"AUTH\" \"(redacted)\"");
    H_FMT(want[3], sizeof want[3], "\"HELLO\" \"2\" \"AUTH\" \"(redacted)\" \"(redacted)\"");
    H_FMT(want[4], sizeof want[4], "\"MGET\" \"%s\" \"{x}a\" \"{y}b\"", key);
    H_FMT(want[5], sizeof want[5], "\"ECHO\" \"done-a\"");

    r = h_cmd(a, "SET %s %b", key, val, sizeof val - 1);
    freeReplyObject(r);
    freeReplyObject(h_cmd(a, "GET %s", key));
    freeReplyObject(h_cmd(a, "AUTH no-such-password"));
    freeReplyObject(h_cmd(a, "HELLO 2 AUTH default no-such-password"));
    freeReplyObject(h_cmd(a, "CONFIG GET maxmemory"));  /* administrative */
    freeReplyObject(h_cmd(a, "NO-SUCH-COMMAND x"));     /* refused before it runs */
    freeReplyObject(h_cmd(a, "GET"));
    freeReplyObject(h_cmd(a, "MOVE %s 1", key));        /* refused by the proxy */
    freeReplyObject(h_cmd(a, "MGET %s {x}a {y}b", key));
    freeReplyObject(h_cmd(a, "ECHO done-a"));
    for (int i = 0; i < OTHERS; i++) {
        others[i] = h_connect_extra(&px);
        freeReplyObject(h_cmd(others[i], "ECHO from-%d", i));
    }
    while (got_a < 6 || seen_others < OTHERS) {
        monitor_line(m, line, sizeof line);
        const char *cmd = monitor_args(line, addr, sizeof addr);
        if (strcmp(addr, addr_a) == 0) {
            ck_assert_msg(got_a < 6, "a line too many for a: %s", line);
            ck_assert_msg(strcmp(cmd, want[got_a]) == 0, "line %d for a: '%s', not '%s'", got_a,
                          cmd, want[got_a]);
            got_a++;
        } else {
            ck_assert_msg(strncmp(cmd, "\"ECHO\" \"from-", 13) == 0, "unexpected line: %s", line);
            seen_others++;
        }
    }

    /* the monitor itself */
    H_ERR(m, "ERR Replica can't interact with the keyspace", "GET %s", key);
    H_STATUS(m, "PONG", "PING");
    monitor_line(m, line, sizeof line);
    ck_assert_str_eq(monitor_args(line, addr, sizeof addr), "\"PING\"");
    ck_assert_int_eq(redisAppendCommand(m, "MONITOR"), REDIS_OK);      /* no reply */
    H_STATUS(m, "PONG", "PING");
    monitor_line(m, line, sizeof line);
    r = h_cmd(a, "CLIENT LIST");                /* administrative: not shown */
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    ck_assert_msg(strstr(r->str, " flags=O ") != NULL, "no monitor in CLIENT LIST: %s", r->str);
    freeReplyObject(r);
    /* RESET ends it. Sent behind WAIT it waits its turn, as in Redis: a line
     * of meanwhile comes after WAIT's reply and before RESET's, and none
     * after it */
    ck_assert_int_eq(redisAppendCommand(m, "WAIT 5 1000"), REDIS_OK);
    ck_assert_int_eq(redisAppendCommand(m, "RESET"), REDIS_OK);
    ck_assert_int_eq(redisAppendCommand(m, "ECHO token"), REDIS_OK);
    h_flush(m);
    h_wait_client_listed(&px.addr, m->fd, " flags=Ob ", 5000, "the monitor's WAIT");
    freeReplyObject(h_cmd(a, "ECHO during-wait"));
    r = h_get_reply(m);
    H_EXPECT_TYPE(r, REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    monitor_line(m, line, sizeof line);
    ck_assert_str_eq(monitor_args(line, addr, sizeof addr), "\"WAIT\" \"5\" \"1000\"");
    monitor_line(m, line, sizeof line);
    ck_assert_str_eq(monitor_args(line, addr, sizeof addr), "\"ECHO\" \"during-wait\"");
    r = h_get_reply(m);
    H_EXPECT_STATUS(r, "RESET");
    freeReplyObject(r);
    freeReplyObject(h_cmd(a, "ECHO after-reset"));
    r = h_get_reply(m);
    H_EXPECT_BULK(r, "token");
    freeReplyObject(r);
    r = h_cmd(m, "ECHO last");
    H_EXPECT_BULK(r, "last");                   /* nothing shown after RESET */
    freeReplyObject(r);

    /* inside MULTI: EXEC's error, as from Redis */
    H_OK(a, "MULTI");
    H_STATUS(a, "QUEUED", "MONITOR");
    r = h_cmd(a, "EXEC");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 1);
    H_EXPECT_ERR(r->element[0], "ERR MONITOR isn't allowed for DENY BLOCKING client");
    freeReplyObject(r);

    for (int i = 0; i < OTHERS; i++)
        redisFree(others[i]);
    redisFree(a);
    redisFree(m);
    h_proxy_stop(&px);
}
END_TEST

/*
 * A monitor that does not read is closed past client-output-buffer-limit,
 * as Redis closes it, while the client it watches goes on unharmed and the
 * proxy's memory stays bounded.
 */
START_TEST(test_monitor_not_reading_is_closed)
{
    static const char *args[] = { "--threads", "2", "--client-output-buffer-limit", "1mb", "0",
                                  "0", NULL };
    struct h_proxy px;
    char key[128];
    static char value[100000];

    h_proxy_start(&px, args);
    memset(value, 'v', sizeof value);
    redisContext *m = h_connect_extra(&px), *a = h_connect_extra(&px);
    H_OK(m, "MONITOR");
    H_FMT(key, sizeof key, "%s:monitor-big", h_prefix());
    for (int i = 0; i < 300; i++)       /* 30 MB of lines, more than sockets hold */
        H_OK(a, "SET %s %b", key, value, sizeof value);
    long long deadline = h_now_ms() + 10000;
    int closed = 0;
    while (!closed && h_now_ms() < deadline) {
        redisReply *r = NULL;
        if (redisGetReply(m, (void **)&r) != REDIS_OK)
            closed = 1;
        freeReplyObject(r);
    }
    ck_assert_msg(closed, "the monitor was not closed past its output limit");
    H_STATUS(a, "PONG", "PING");
    redisFree(m);
    redisFree(a);
    h_proxy_stop(&px);
}
END_TEST

/* ---------- CLIENT REPLY ---------- */

/* What n sends back, up to its close or `until`, for the inline commands in
 * script, each "%s" there replaced by key (up to 4). */
static size_t stream_of(const struct h_node *n, const char *script, const char *key,
                        const char *until, char *buf, size_t size)
{
    char req[2048];
    int fd = h_raw_connect(n);
    size_t got;

    snprintf(req, sizeof req, script, key, key, key, key);
    h_raw_sends(fd, req);
    got = h_raw_recv(fd, buf, size, until, 2000, NULL);
    close(fd);
    return got;
}

/* The same commands to a master and to the proxy, on one connection each,
 * sent in one write: the same bytes back. */
static void same_stream_as_node(const char *script, const char *key, const char *until)
{
    struct h_node node = first_master(), px = h_proxy_addr();
    static char a[8192], b[8192];
    size_t alen = stream_of(&node, script, key, until, a, sizeof a);
    size_t blen = stream_of(&px, script, key, until, b, sizeof b);

    ck_assert_msg(alen == blen && memcmp(a, b, alen) == 0,
                  "for '%s' the proxy said '%s', the node '%s'", h_esc_str(script),
                  h_esc(b, blen), h_esc(a, alen));
    ck_assert_msg(until == NULL || strstr(a, until) != NULL, "the node never said %s: '%s'", until,
                  h_esc(a, alen));
}

START_TEST(test_client_reply_as_a_node)
{
    static const char *const scripts[] = {
        "CLIENT REPLY SKIP\r\nCLIENT REPLY SKIP\r\nPING\r\nPING\r\nCLIENT REPLY OFF\r\n"
        "CLIENT REPLY SKIP\r\nPING\r\nCLIENT REPLY ON\r\nECHO end\r\n",
        /* OFF drops values and errors alike; RESET turns replies back on */
        "CLIENT REPLY OFF\r\nSET %s v\r\nGET %s\r\nNOSUCH\r\nGET\r\nRESET\r\nGET %s\r\n"
        "ECHO end\r\n",
        /* ...but not after SKIP, whose command RESET is */
        "CLIENT REPLY SKIP\r\nRESET\r\nPING\r\nECHO end\r\n",
        "CLIENT REPLY SKIP\r\nMULTI\r\nSET %s 1\r\nEXEC\r\nECHO end\r\n",
        "CLIENT REPLY OFF\r\nSET %s 5\r\nMULTI\r\nINCR %s\r\nEXEC\r\nCLIENT REPLY ON\r\n"
        "GET %s\r\nECHO end\r\n",
        /* behind a blocking command (the proxy holds what follows it) */
        "CLIENT REPLY SKIP\r\nDEL %s\r\nBLPOP %s 0.01\r\nCLIENT REPLY SKIP\r\nBLPOP %s 0.01\r\n"
        "BLPOP %s 0.01\r\nCLIENT REPLY SKIP\r\nPING\r\nECHO end\r\n",
        /* pub/sub confirmations are pushes: sent under OFF too, PING's reply not */
        "CLIENT REPLY OFF\r\nSUBSCRIBE ch\r\nPING\r\nPSUBSCRIBE p*\r\nUNSUBSCRIBE\r\n"
        "PUNSUBSCRIBE\r\nRESET\r\nECHO end\r\n",
        "CLIENT REPLY OFF\r\n*1\r\n$x\r\n",        /* a protocol error: no word, a close */
    };
    struct h_topo t;
    char key[128];

    h_topo_load(&t);
    h_key_on_master(&t, 0, h_prefix(), 0, key, sizeof key);
    for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++)
        same_stream_as_node(scripts[i], key, strstr(scripts[i], "ECHO end") ? "end\r\n" : NULL);
}
END_TEST

/* Through the proxy only: a command split over masters is dropped under SKIP
 * as a whole, and the next one answered; QUIT under SKIP closes. */
START_TEST(test_client_reply_skip_split_commands)
{
    struct h_topo t;
    struct h_node px = h_proxy_addr();
    char a[128], b[128], req[1024], buf[1024];
    int fd = h_raw_connect(&px), closed;
    size_t got;

    h_topo_load(&t);
    h_key_on_master(&t, 0, h_prefix(), 0, a, sizeof a);
    h_key_on_master(&t, 1, h_prefix(), 0, b, sizeof b);
    snprintf(req, sizeof req,
             "MSET %s 1 %s 2\r\nCLIENT REPLY SKIP\r\nMGET %s %s\r\nCLIENT REPLY SKIP\r\n"
             "DEL %s %s\r\nEXISTS %s %s\r\nECHO end\r\n", a, b, a, b, a, b, a, b);
    h_raw_sends(fd, req);
    got = h_raw_recv(fd, buf, sizeof buf, "end\r\n", 2000, NULL);
    const char *want = "+OK\r\n:0\r\n$3\r\nend\r\n";
    ck_assert_msg(got == strlen(want) && memcmp(buf, want, got) == 0, "got '%s'", h_esc(buf, got));

    /* QUIT without its +OK still closes (redis-server 7.0 would keep the
     * connection open, reading nothing more, for a reply it never writes) */
    h_raw_sends(fd, "CLIENT REPLY SKIP\r\nQUIT\r\nPING\r\n");
    got = h_raw_recv(fd, buf, sizeof buf, NULL, H_IO_TIMEOUT_S * 1000, &closed);
    ck_assert_msg(got == 0 && closed, "after QUIT: '%s', %s", h_esc(buf, got),
                  closed ? "closed" : "still open");
    close(fd);
}
END_TEST

/* ---------- CLUSTER: a one-node cluster, the proxy itself ---------- */

static void expect_id(const char *id, size_t len)
{
    ck_assert_msg(len == 40 && strspn(id, "0123456789abcdef") == 40, "not a node id: '%.*s'",
                  (int)len, id);
}

static char *myid(redisContext *c)
{
    redisReply *r = h_cmd(c, "CLUSTER MYID");
    char *id;

    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    expect_id(r->str, r->len);
    id = strdup(r->str);
    freeReplyObject(r);
    return id;
}

START_TEST(test_cluster_myid_slots_nodes)
{
    struct h_node px = h_proxy_addr();
    redisContext *c = h_connect_proxy(), *d = h_connect_proxy();
    char *id = myid(c), *id2 = myid(c), *id3 = myid(d), want[128];
    redisReply *r, *range, *node;

    ck_assert_str_eq(id, id2);
    ck_assert_str_eq(id, id3);

    r = h_cmd(c, "CLUSTER SLOTS");
    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 1);
    range = r->element[0];
    H_EXPECT_TYPE(range, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(range->elements, 3);      /* no replicas */
    H_EXPECT_INT(range->element[0], 0);
    H_EXPECT_INT(range->element[1], H_SLOTS - 1);
    node = range->element[2];
    H_EXPECT_TYPE(node, REDIS_REPLY_ARRAY);
    ck_assert_uint_ge(node->elements, 3);
    H_EXPECT_BULK(node->element[0], px.host);
    H_EXPECT_INT(node->element[1], px.port);
    H_EXPECT_BULK(node->element[2], id);
    freeReplyObject(r);

    /* "<id> <ip:port@cport> myself,master - 0 0 <epoch> connected 0-16383\n" */
    r = h_cmd(c, "CLUSTER NODES");
    H_EXPECT_TYPE(r, REDIS_REPLY_STRING);
    ck_assert_msg(r->len > 0 && strchr(r->str, '\n') == r->str + r->len - 1,
                  "CLUSTER NODES is not one line: '%s'", r->str);
    {
        char *f[16], *save = NULL, *text = strndup(r->str, r->len - 1);
        int n = 0;
        for (char *tok = strtok_r(text, " ", &save); tok != NULL && n < 16;
             tok = strtok_r(NULL, " ", &save))
            f[n++] = tok;
        ck_assert_msg(n == 9, "CLUSTER NODES has %d fields: '%s'", n, r->str);
        ck_assert_str_eq(f[0], id);
        H_FMT(want, sizeof(want), "%s:%d@", px.host, px.port);
        ck_assert_msg(strncmp(f[1], want, strlen(want)) == 0, "address '%s', want '%s...'", f[1], want);
        ck_assert_str_eq(f[2], "myself,master");
        ck_assert_str_eq(f[3], "-");
        ck_assert_str_eq(f[7], "connected");
        ck_assert_str_eq(f[8], "0-16383");
        free(text);
    }
    freeReplyObject(r);
    free(id);
    free(id2);
    free(id3);
    redisFree(c);
    redisFree(d);
}
END_TEST

/* The field names of the first node of the first shard of a CLUSTER SHARDS
 * reply, checked for its shape ["slots", [..], "nodes", [[k, v, ...], ...]]. */
static const redisReply *shard_node(const redisReply *r)
{
    const redisReply *shard, *nodes;

    H_EXPECT_TYPE(r, REDIS_REPLY_ARRAY);
    ck_assert_uint_ge(r->elements, 1);
    shard = r->element[0];
    H_EXPECT_TYPE(shard, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(shard->elements, 4);
    H_EXPECT_BULK(shard->element[0], "slots");
    H_EXPECT_TYPE(shard->element[1], REDIS_REPLY_ARRAY);
    H_EXPECT_BULK(shard->element[2], "nodes");
    nodes = shard->element[3];
    H_EXPECT_TYPE(nodes, REDIS_REPLY_ARRAY);
    ck_assert_uint_ge(nodes->elements, 1);
    H_EXPECT_TYPE(nodes->element[0], REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(nodes->element[0]->elements % 2, 0);
    return nodes->element[0];
}

static const redisReply *field(const redisReply *node, const char *name)
{
    for (size_t i = 0; i + 1 < node->elements; i += 2)
        if (node->element[i]->type == REDIS_REPLY_STRING && strcmp(node->element[i]->str, name) == 0)
            return node->element[i + 1];
    ck_abort_msg("no field '%s' in the shard's node", name);
    return NULL;
}

START_TEST(test_cluster_shards)
{
    struct h_node px = h_proxy_addr(), m = first_master();
    redisContext *c = h_connect_proxy(), *n = h_connect_node(&m);
    redisReply *r = h_cmd(c, "CLUSTER SHARDS"), *nr = h_cmd(n, "CLUSTER SHARDS");
    const redisReply *pn = shard_node(r), *nn = shard_node(nr), *slots;
    char *id = myid(c);

    ck_assert_uint_eq(r->elements, 1);
    slots = r->element[0]->element[1];
    ck_assert_uint_eq(slots->elements, 2);
    H_EXPECT_INT(slots->element[0], 0);
    H_EXPECT_INT(slots->element[1], H_SLOTS - 1);
    ck_assert_uint_eq(r->element[0]->element[3]->elements, 1);

    /* the node entry has the fields a real node's has, in the same order */
    ck_assert_msg(pn->elements == nn->elements, "the proxy's shard node has %zu elements, a "
                  "node's %zu", pn->elements, nn->elements);
    for (size_t i = 0; i < nn->elements; i += 2) {
        H_EXPECT_BULK(pn->element[i], nn->element[i]->str);
        ck_assert_msg(pn->element[i + 1]->type == nn->element[i + 1]->type,
                      "field %s: %s, a node has %s", nn->element[i]->str,
                      h_type_name(pn->element[i + 1]->type), h_type_name(nn->element[i + 1]->type));
    }
    H_EXPECT_BULK(field(pn, "id"), id);
    H_EXPECT_INT(field(pn, "port"), px.port);
    H_EXPECT_BULK(field(pn, "ip"), px.host);
    H_EXPECT_BULK(field(pn, "role"), "master");
    H_EXPECT_BULK(field(pn, "health"), "online");
    freeReplyObject(r);
    freeReplyObject(nr);
    free(id);
    redisFree(c);
    redisFree(n);
}
END_TEST

/* KEYSLOT of many keys, node and proxy, in one pipeline each. */
/* The field names of a CLIENT LIST line, space-separated, into out. */
static void field_names(const char *line, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (const char *p = line; *p && *p != '\n'; ) {
        const char *eq = strchr(p, '=');
        if (!eq)
            break;
        n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s%.*s", n ? " " : "",
                              (int)(eq - p), p);
        const char *sp = strpbrk(eq, " \n");
        if (!sp || *sp == '\n')
            break;
        p = sp + 1;
    }
}

/* CLIENT INFO and CLIENT LIST through the proxy have the fields, in their
 * order, that the cluster's server writes (Redis 7.0's; Valkey 8's watch,
 * lib-name, lib-ver and tot-net-in/out, tot-cmds), counted for the client:
 * its WATCHed keys, each once, its bytes and commands. */
START_TEST(test_client_info_fields_as_the_server)
{
    struct h_node node = first_master();
    redisContext *n = h_connect_node(&node), *p = h_connect_proxy();
    char want[1024], got[1024];
    redisReply *a = h_cmd(n, "CLIENT INFO"), *b = h_cmd(p, "CLIENT INFO");
    ck_assert_int_eq(a->type, REDIS_REPLY_STRING);
    ck_assert_int_eq(b->type, REDIS_REPLY_STRING);
    field_names(a->str, want, sizeof want);
    field_names(b->str, got, sizeof got);
    ck_assert_msg(strcmp(want, got) == 0, "the server's fields: %s\nthe proxy's: %s", want, got);
    freeReplyObject(a);
    freeReplyObject(b);
    if (strstr(want, " watch=") || strstr(want, " watch ")) {
        H_OK(p, "WATCH {ci}a {ci}b {ci}a");
        b = h_cmd(p, "CLIENT INFO");
        ck_assert_msg(strstr(b->str, " watch=2 "), "%s", b->str);
        freeReplyObject(b);
        H_OK(p, "UNWATCH");
        b = h_cmd(p, "CLIENT INFO");
        ck_assert_msg(strstr(b->str, " watch=0 "), "%s", b->str);
        freeReplyObject(b);
    }
    if (strstr(want, "tot-cmds")) {
        b = h_cmd(p, "CLIENT INFO");        /* after 5 commands (WATCH ... CLIENT INFO) */
        ck_assert_msg(strstr(b->str, " tot-cmds=5") && !strstr(b->str, "tot-net-in=0 "),
                      "%s", b->str);
        freeReplyObject(b);
    }
    redisFree(n);
    redisFree(p);
}
END_TEST

START_TEST(test_cluster_keyslot_many)
{
    struct h_node m = first_master();
    redisContext *c = h_connect_proxy(), *n = h_connect_node(&m);
    char key[64];

    for (int i = 0; i < 500; i++) {
        snprintf(key, sizeof(key), i % 3 ? "key:%d" : "{t%d}x", i * 7919);
        redisAppendCommand(c, "CLUSTER KEYSLOT %s", key);
        redisAppendCommand(n, "CLUSTER KEYSLOT %s", key);
    }
    for (int i = 0; i < 500; i++) {
        redisReply *a = h_get_reply(c), *b = h_get_reply(n);
        H_EXPECT_TYPE(b, REDIS_REPLY_INTEGER);
        H_EXPECT_INT(a, b->integer);
        freeReplyObject(a);
        freeReplyObject(b);
    }
    redisFree(c);
    redisFree(n);
}
END_TEST

/* ---------- FLUSHALL (last: it empties the shared cluster) ---------- */

START_TEST(test_flushall_empties_every_master)
{
    static const char *args[] = { "--enable-dangerous-commands", "yes", NULL };
    struct h_topo t;
    struct h_proxy px;
    redisContext *c;
    char key[128];
    redisReply *r;

    h_topo_load(&t);
    ck_assert_int_ge(t.nmasters, 3);
    h_proxy_start(&px, args);
    c = h_connect_extra(&px);
    for (int m = 0; m < t.nmasters; m++)
        for (int i = 0; i < 5; i++) {
            h_key_on_master(&t, m, h_prefix(), i, key, sizeof(key));
            H_OK(c, "SET %s flush-me", key);
        }
    for (int m = 0; m < t.nmasters; m++) {
        redisContext *n = h_connect_node(&t.masters[m]);
        r = h_cmd(n, "DBSIZE");
        ck_assert_msg(r->type == REDIS_REPLY_INTEGER && r->integer >= 5,
                      "master %d holds %s before FLUSHALL", m, h_show(r));
        freeReplyObject(r);
        redisFree(n);
    }

    H_OK(c, "FLUSHALL");

    for (int m = 0; m < t.nmasters; m++) {
        redisContext *n = h_connect_node(&t.masters[m]);
        r = h_cmd(n, "DBSIZE");
        ck_assert_msg(r->type == REDIS_REPLY_INTEGER && r->integer == 0,
                      "master %s:%d holds %s after FLUSHALL", t.masters[m].host,
                      t.masters[m].port, h_show(r));
        freeReplyObject(r);
        redisFree(n);
    }
    r = h_cmd(c, "DBSIZE");
    H_EXPECT_INT(r, 0);
    freeReplyObject(r);
    redisFree(c);
    h_proxy_stop(&px);
}
END_TEST

static Suite *local_suite(void)
{
    Suite *s = suite_create("local");
    TCase *tc = tcase_create("local");
    TCase *flush = tcase_create("flushall");

    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_same_bytes_as_a_node, 0, (int)(sizeof(as_node) / sizeof(as_node[0])));
    tcase_add_test(tc, test_echo_large);
    tcase_add_test(tc, test_command_all);
    tcase_add_test(tc, test_command_info_all);
    tcase_add_test(tc, test_command_list);
    tcase_add_loop_test(tc, test_command_same_bytes_resp3, 0, (int)(sizeof(as_node) / sizeof(as_node[0])));
    tcase_add_loop_test(tc, test_command_more_both_protocols, 0,
                        (int)(sizeof(command_more) / sizeof(command_more[0])));
    tcase_add_loop_test(tc, test_command_tables_both_protocols, 0,
                        (int)(sizeof(command_tables) / sizeof(command_tables[0])));
    tcase_add_test(tc, test_info_and_dbsize_sum_the_masters);
    tcase_add_test(tc, test_randomkey_exists);
    tcase_add_test(tc, test_time_between_node_times);
    tcase_add_test(tc, test_client_commands);
    tcase_add_test(tc, test_client_kill);
    tcase_add_test(tc, test_monitor);
    tcase_add_test(tc, test_monitor_not_reading_is_closed);
    tcase_add_test(tc, test_client_reply_as_a_node);
    tcase_add_test(tc, test_client_reply_skip_split_commands);
    tcase_add_test(tc, test_cluster_myid_slots_nodes);
    tcase_add_test(tc, test_cluster_shards);
    tcase_add_test(tc, test_cluster_keyslot_many);
    tcase_add_test(tc, test_client_info_fields_as_the_server);
    suite_add_tcase(s, tc);

    /* Check runs TCases in the order added: this one last */
    tcase_set_timeout(flush, 30);
    tcase_add_test(flush, test_flushall_empties_every_master);
    suite_add_tcase(s, flush);
    return s;
}

int main(void)
{
    return h_run(local_suite());
}
