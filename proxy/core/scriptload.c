/*
 * scriptload: script bodies put on node connections. See scriptload.h.
 */
#include "proxy/core/scriptload.h"

#include <event2/buffer.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/log.h"
#include "cluster/node.h"
#include "proxy/core/scripts.h"
#include "lib/proto/reply.h"
#include "lib/proto/resp.h"

/* ---- SHAs a connection has seen ---- */

#define SEEN_SLOTS 128

struct conn_seen {
    uint64_t epoch;             /* scripts_epoch() when last emptied */
    int n;
    unsigned char used[SEEN_SLOTS];
    char sha[SEEN_SLOTS][SCRIPTS_SHA_HEX - 1];
};

/* 1 if c's set has sha; else adds it and returns 0. */
static int conn_seen_add(struct node_conn *c, const char *sha)
{
    struct conn_seen *k = c->ext;
    uint64_t epoch = scripts_epoch();
    if (!k) {
        k = calloc(1, sizeof *k);
        if (!k)
            return 1;           /* no memory: NOSCRIPT recovery still works */
        c->ext = k;
        c->ext_free = free;
        k->epoch = epoch;
    }
    if (k->epoch != epoch || k->n >= SEEN_SLOTS * 3 / 4) {
        memset(k->used, 0, sizeof k->used);
        k->n = 0;
        k->epoch = epoch;
    }
    size_t i = 0;
    for (int j = 0; j < 8; j++)     /* SHAs are uniform: a few digits hash well */
        i = i * 31 + (unsigned char)sha[j];
    i %= SEEN_SLOTS;
    while (k->used[i]) {
        if (memcmp(k->sha[i], sha, SCRIPTS_SHA_HEX - 1) == 0)
            return 1;
        i = (i + 1) % SEEN_SLOTS;
    }
    k->used[i] = 1;
    memcpy(k->sha[i], sha, SCRIPTS_SHA_HEX - 1);
    k->n++;
    return 0;
}

void scriptload_unseen(struct node_conn *c, const char *arg, size_t len)
{
    char sha[SCRIPTS_SHA_HEX];
    if (scripts_sha_parse(arg, len, sha) < 0 || conn_seen_add(c, sha))
        return;
    char *body = scripts_body_copy(sha, &len);
    if (body) {
        scriptload_on(c, body, len);
        free(body);
    }
}

/* ---- loading a body for NOSCRIPT recovery ---- */

static void load_reply(struct node_req *nr, const struct reply_view *v,
                       const struct reply_scanner *s)
{
    if (s->type == '-') {
        char code[32];
        reply_error_code(s->errline, code, sizeof code);
        log_warning("scripts", "node %s refused SCRIPT LOAD of a known body (%s)",
                    nr->conn ? nr->conn->addr : "?", code);
    }
    reply_view_drop(v);
    free(nr);
}

static void load_fail(struct node_req *nr, int may_have_run, const char *why)
{
    (void)may_have_run;
    (void)why;
    free(nr);
}

void scriptload_on(struct node_conn *c, const char *body, size_t len)
{
    const char *argv[3] = { "SCRIPT", "LOAD", body };
    size_t lens[3] = { 6, 4, len };
    struct node_req *nr = calloc(1, sizeof *nr);
    struct evbuffer *tmp = evbuffer_new();
    if (!nr || !tmp) {
        free(nr);
        if (tmp)
            evbuffer_free(tmp);
        return;
    }
    resp_add_command(tmp, 3, argv, lens);
    nr->on_reply = load_reply;
    nr->on_fail = load_fail;
    size_t n = evbuffer_get_length(tmp);
    node_send(c, nr, evbuffer_pullup(tmp, -1), n);
    evbuffer_free(tmp);
}
