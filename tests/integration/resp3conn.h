/*
 * resp3conn.h: raw client connections of the tests that read pushes
 * (client-side caching), frame by frame: a RESP3 one (HELLO 3 first) or a
 * RESP2 one, commands written from words.
 */
#ifndef TAGPROXY_TEST_RESP3CONN_H
#define TAGPROXY_TEST_RESP3CONN_H

#include <poll.h>

#include "harness.h"

/* A RESP3 connection: its bytes not yet read as frames. */
struct conn3 {
    int fd;
    char buf[65536];
    size_t have;
};

H_UNUSED static void conn3_open(struct conn3 *c, const struct h_node *at)
{
    static const char hello[] = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
    char out[4096];
    c->fd = h_raw_connect(at);
    c->have = 0;
    h_raw_sends(c->fd, hello);
    h_raw_recv(c->fd, out, sizeof out, "modules\r\n*0\r\n", 5000, NULL);
}

/* The next whole frame (a reply or a push) into out, within 5 s: 1, or 0
 * when none came (or it closed), for the caller to tidy up before failing. */
H_UNUSED static int frame_within(struct conn3 *c, char *out, size_t size)
{
    long long deadline = h_now_ms() + 5000;
    for (;;) {
        long n = h_resp_parse(c->buf, c->have, NULL);
        ck_assert_msg(n >= 0, "malformed: %s", h_esc(c->buf, c->have));
        if (n > 0) {
            ck_assert_uint_lt((size_t)n, size);
            memcpy(out, c->buf, (size_t)n);
            out[n] = '\0';
            memmove(c->buf, c->buf + n, c->have - (size_t)n);
            c->have -= (size_t)n;
            return 1;
        }
        struct pollfd pfd = { c->fd, POLLIN, 0 };
        long long left = deadline - h_now_ms();
        if (left <= 0 || poll(&pfd, 1, (int)left) != 1)
            return 0;
        ssize_t r = recv(c->fd, c->buf + c->have, sizeof c->buf - c->have, 0);
        if (r <= 0)
            return 0;
        c->have += (size_t)r;
    }
}

/* The same, failing the test when no frame came. */
H_UNUSED static void frame(struct conn3 *c, char *out, size_t size)
{
    ck_assert_msg(frame_within(c, out, size), "no frame within 5 s (or closed)");
}

/* words (blanks between) as a multibulk command on c. */
H_UNUSED static void send_words(struct conn3 *c, const char *words)
{
    char buf[1024], cmd[2048];
    const char *argv[16];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", words);
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && argc < 16;
         t = strtok_r(NULL, " ", &save))
        argv[argc++] = t;
    size_t at = (size_t)snprintf(cmd, sizeof cmd, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++)
        at += (size_t)snprintf(cmd + at, sizeof cmd - at, "$%zu\r\n%s\r\n", strlen(argv[i]),
                               argv[i]);
    h_raw_send(c->fd, cmd, at);
}

/* A connection without HELLO (RESP2). */
H_UNUSED static void conn2_open(struct conn3 *c, const struct h_node *at)
{
    c->fd = h_raw_connect(at);
    c->have = 0;
}

#endif
