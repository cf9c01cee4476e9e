/*
 * scriptreply: the replies of scripts. See scriptreply.h.
 */
#include "proxy/families/scriptreply.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/node.h"
#include "lib/base/log.h"
#include "proxy/core/client.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "proxy/families/index.h"
#include "lib/proto/command.h"
#include "lib/proto/reply.h"

/*
 * Confirming a redirect: a script can answer "MOVED 1 host:port" (or ASK, TRYAGAIN, CLUSTERDOWN)
 * after it wrote, so such a reply to a script proves nothing by itself. The
 * cluster redirects a script only about its keys' slot (it checks them
 * before the script runs), so a keyless script or another slot is the
 * script's own error. Otherwise the answering node's CLUSTER NODES
 * (CLUSTER INFO for CLUSTERDOWN, except "Hash slot not served") is read on
 * the same connection, with the request's own node_req, so the request
 * stays in flight (and in its client's order) until the node's state says
 * whether the cluster sent the reply; meanwhile the client's other
 * commands wait in its held_back (c->confirming), so that a resent script
 * goes ahead of them. A script
 * that ran as its user's node user (r->as_user), which may not run
 * CLUSTER, has it read on the worker's own connection to that node.
 */
static node_reply_fn script_confirm_on_reply;
static void script_confirm_on_fail(struct node_req *nr, int may_have_run, const char *why);

static void redirect_freed(struct request *r, void *line)
{
    (void)r;
    free(line);
}

/* The script's redirect-like error line while the node's state is read. */
static const struct request_family confirm_family = { redirect_freed };

/* The script's error line goes to its client as it is: unconfirmed (its
 * node's state did not show the cluster sent it), or confirmed with no
 * retry left. */
static void script_redirect_deliver(struct request *r, const char *line, int confirmed)
{
    static __thread uint64_t logged_ms;
    if (!confirmed) {
        stat_inc(&r->worker->stats.script_redirects_unconfirmed);
        /* at most one line a second per worker, and the first word only:
         * the rest of a script's error is the script's */
        uint64_t now = node_now_ms();
        if (now >= logged_ms + 1000) {
            logged_ms = now;
            log_notice("scripts", "a script's %.*s reply was not confirmed by the node's "
                       "state: given to its client as it is", (int)strcspn(line, " "), line);
        }
    }
    size_t n = strlen(line);
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        request_fail(r, line);
        return;
    }
    evbuffer_add(b, "-", 1);
    evbuffer_add(b, line, n);
    evbuffer_add(b, "\r\n", 2);
    size_t len = evbuffer_get_length(b);
    request_deliver_bytes(r, (const char *)evbuffer_pullup(b, -1), len);
    evbuffer_free(b);
}

/* The connection to read the state of the node that answered on from. */
static struct node_conn *confirm_conn(struct request *r, struct node_conn *from)
{
    const struct topology *t = r->worker->topo;
    if (!r->as_user || !from)
        return from;
    for (int i = 0; i < t->nnodes; i++)
        if (strcmp(t->nodes[i].announced, from->addr) == 0)
            return worker_conn(r->worker, i, request_resp(r));
    return NULL;
}

/* "CLUSTERDOWN Hash slot not served": the node's map had no owner for the
 * slot, which its cluster state may not show yet (Redis updates it before
 * its next event loop turn), so the node's CLUSTER NODES is read instead:
 * the reply is confirmed when that map still names no owner for the slot
 * (a script on the slot runs only on its owner). */
#define UNSERVED_LINE "CLUSTERDOWN Hash slot not served"

static int is_unserved(const char *line)
{
    return strncmp(line, UNSERVED_LINE, sizeof UNSERVED_LINE - 1) == 0;
}

/* 1: the confirmation is under way (the reply was taken); 0: give it as it is. */
static int script_confirm_start(struct request *r, struct node_conn *conn,
                                enum reply_redirect kind, int slot, const char *line)
{
    static const char nodes[] = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nNODES\r\n";
    static const char info[] = "*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n";
    char *kept = NULL;
    if (r->parent || r->block_parts || r->slot < 0 || ((kind == REPLY_MOVED || kind == REPLY_ASK) && slot != r->slot) ||
        !conn || !node_conn_usable(conn) || !(kept = strdup(line))) {
        stat_inc(&r->worker->stats.script_redirects_unconfirmed);
        return 0;
    }
    request_family_set(r, &confirm_family, kept);
    request_owner(r)->confirming++;     /* its client's next commands wait for r */
    r->nreq.on_reply = script_confirm_on_reply;
    r->nreq.on_fail = script_confirm_on_fail;
    r->nreq.on_part = NULL;
    r->nreq.extra_replies = 0;
    r->nreq.wait_ms = 0;
    r->nreq.busy_grace_ms = 0;
    if (kind == REPLY_CLUSTERDOWN && !is_unserved(line))
        node_send(conn, &r->nreq, info, sizeof info - 1);
    else
        node_send(conn, &r->nreq, nodes, sizeof nodes - 1);
    return 1;
}

/* Whether the slot list of one CLUSTER NODES line (from its 9th field on)
 * has slot in a range; *moving: it has "[slot->-" or "[slot-<-". */
static int nodes_line_slot(const char *line, const char *end, int slot, int *moving)
{
    int field = 0, owns = 0;
    const char *p = line;
    *moving = 0;
    while (p < end) {
        while (p < end && *p == ' ')
            p++;
        const char *tok = p;
        while (p < end && *p != ' ')
            p++;
        if (p == tok)
            break;
        if (++field < 9)
            continue;
        if (*tok == '[') {
            char *q;
            long a = strtol(tok + 1, &q, 10);
            if (a == slot && q < p && *q == '-')
                *moving = 1;
            continue;
        }
        char *q;
        long a = strtol(tok, &q, 10), b = a;
        if (q < p && *q == '-')
            b = strtol(q + 1, NULL, 10);
        if (slot >= a && slot <= b)
            owns = 1;
    }
    return owns;
}

/* What a node's CLUSTER NODES (text of n bytes) says of slot. */
struct slot_view {
    int self_owns, self_moving;     /* the node that answered */
    int target_owns;                /* the node at addr */
    int any_owns;                   /* any node */
};

static struct slot_view nodes_view(const char *text, size_t n, int slot, const char *addr)
{
    const char *end = text + n, *line = text;
    struct slot_view sv = { 0, 0, 0, 0 };
    size_t alen = strlen(addr);
    while (line < end) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            eol = end;
        const char *sp = memchr(line, ' ', (size_t)(eol - line));
        int moving, owns = nodes_line_slot(line, eol, slot, &moving);
        const char *flags = sp ? memchr(sp + 1, ' ', (size_t)(eol - sp - 1)) : NULL;
        const char *fend = flags ? memchr(flags + 1, ' ', (size_t)(eol - flags - 1)) : NULL;
        int self = fend && memmem(flags, (size_t)(fend - flags), "myself", 6) != NULL;
        sv.any_owns |= owns;
        if (self) {
            sv.self_owns = owns;
            sv.self_moving = moving;
        }
        /* "ip:port@cport": the address the redirect names */
        if (alen && sp && (size_t)(eol - sp) > alen + 1 && memcmp(sp + 1, addr, alen) == 0 &&
            (sp[1 + alen] == '@' || sp[1 + alen] == ' ' || sp[1 + alen] == ','))
            sv.target_owns = owns;
        line = eol + 1;
    }
    return sv;
}

/* Whether a node's CLUSTER NODES confirms the reply. */
static int nodes_confirm(const char *text, size_t n, enum reply_redirect kind, int slot,
                         const char *addr)
{
    struct slot_view sv = nodes_view(text, n, slot, addr);
    /* an ASK whose migration ended before the question: the slot is the
     * target's now, as after a MOVED */
    int moved = !sv.self_owns && sv.target_owns;
    return kind == REPLY_MOVED ? moved : sv.self_moving || moved;
}

static void script_confirm_decide(struct request *r, const char *text, size_t n)
{
    char *line = request_family_state(r, &confirm_family), addr[128];
    struct client *owner = request_owner(r);
    int slot, ok = 0;
    request_family_set(r, &confirm_family, NULL);
    owner->confirming--;
    enum reply_redirect kind = reply_classify(line, strlen(line), &slot, addr, sizeof addr);
    if (slot < 0)                       /* TRYAGAIN, CLUSTERDOWN: the script's slot */
        slot = r->slot;
    if (text && kind == REPLY_CLUSTERDOWN && is_unserved(line))
        ok = !nodes_view(text, n, slot, "").any_owns;
    else if (text && kind == REPLY_CLUSTERDOWN)
        ok = memmem(text, n, "cluster_state:fail", 18) != NULL;
    else if (text && addr[0] != ':')
        ok = nodes_confirm(text, n, kind, slot, addr);
    else if (text)
        ok = nodes_confirm(text, n, kind, slot, "") && kind != REPLY_MOVED;
    /* what the client sent meanwhile goes out behind r (owner stays valid
     * to the end of this callback: client_free defers the free) */
    int release = owner->confirming == 0 && !TAILQ_EMPTY(&owner->held_back);
    if (!ok || !router_redirect(r, kind, slot, addr))
        script_redirect_deliver(r, line, ok);
    free(line);
    if (release)
        router_release_held(owner);
}

static void script_confirm_on_reply(struct node_req *nr, const struct reply_view *v,
                                    const struct reply_scanner *s)
{
    struct request *r = request_of(nr);
    size_t len = v->len;
    const char *bytes = reply_view_head(v, len);
    const char *text = NULL;
    size_t n = 0;
    if (s->type == '$' || s->type == '=' || s->type == '+') {
        const char *crlf = bytes ? memchr(bytes, '\n', len) : NULL;
        if (crlf && s->type != '+') {
            text = crlf + 1;
            n = len - (size_t)(text - bytes);
            if (s->type == '=' && n >= 4) {     /* RESP3's verbatim: past "txt:" */
                text += 4;
                n -= 4;
            }
        } else if (bytes) {
            text = bytes;
            n = len;
        }
    }
    script_confirm_decide(r, text, n);
    reply_view_drop(v);
}

static void script_confirm_on_fail(struct node_req *nr, int may_have_run, const char *why)
{
    (void)may_have_run;
    (void)why;
    script_confirm_decide(request_of(nr), NULL, 0);
}

/* The client's own EVAL, EVALSHA or FCALL (not a _RO one): whatever it
 * answers, it may have written its keys, and only the index script keeps
 * indexes exact; so, as after a blocking command, the indexes of its keys
 * that are indexed records are brought up to date once it has run. */
static void upkeep_if_written(struct request *r)
{
    if (!r->parent && r->cmd && command_script_may_write(r->cmd) && worker_layout(r->worker))
        index_upkeep(r);
}

/* A script's error that goes no further than the node yet: a redirect-like
 * one whose confirmation started, or NOSCRIPT with the EVALSHA resent. */
static int error_taken(struct request *r, struct node_conn *from, const char *errline)
{
    int slot;
    char addr[128];
    enum reply_redirect kind = reply_classify(errline, strlen(errline), &slot, addr,
                                              sizeof addr);
    if (kind != REPLY_PLAIN)
        return script_confirm_start(r, confirm_conn(r, from), kind, slot, errline);
    return strncmp(errline, "NOSCRIPT", 8) == 0 && router_noscript(r, from);
}

/* Every error of a script is answered here: the router's own handling of
 * redirects and NOSCRIPT is what error_taken does for a script, and a
 * script's reply names no keys to map back. */
static int script_reply(struct request *r, struct node_conn *from, const struct reply_view *v,
                        const struct reply_scanner *s)
{
    if (s->type == '-' && error_taken(r, from, s->errline)) {
        reply_view_drop(v);
        return 1;
    }
    upkeep_if_written(r);
    if (s->type != '-')
        return 0;
    request_deliver(r, v);      /* the script's own error, as it is */
    return 1;
}

const struct request_hooks scriptreply_hooks = { .reply = script_reply };
