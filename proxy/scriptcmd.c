#include "proxy/scriptcmd.h"

#include <event2/buffer.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "cluster/node.h"
#include "proto/command.h"
#include "proto/reply.h"
#include "proto/resp.h"
#include "proxy/request.h"
#include "proxy/route.h"
#include "proxy/router.h"
#include "proxy/scripts.h"
#include "proxy/worker.h"

/* ---- helpers ---- */

/* r's arguments as argv/lens (malloc'd: a script call can have very many). */
static int args_of(struct request *r, const char ***argv, size_t **lens)
{
    *argv = malloc(sizeof **argv * (size_t)r->argc);
    *lens = malloc(sizeof **lens * (size_t)r->argc);
    if (!*argv || !*lens) {
        free(*argv);
        free(*lens);
        return -1;
    }
    for (int i = 0; i < r->argc; i++)
        (*argv)[i] = request_arg(r, i, &(*lens)[i]);
    return 0;
}

/* Argument i of r replaced by bytes. 0, or -1 (r failed: out of memory). */
static int replace_arg(struct request *r, int i, const char *bytes, size_t len)
{
    const char **argv;
    size_t *lens;
    int rc = -1;
    if (args_of(r, &argv, &lens) == 0) {
        argv[i] = bytes;
        lens[i] = len;
        rc = request_rebuild(r, r->argc, argv, lens);
        free(argv);
        free(lens);
    }
    if (rc < 0)
        request_fail(r, "ERR out of memory");
    return rc;
}

/* Send argv to every master, merged by kind. */
static void fanout_args(struct request *r, enum merge_kind merge, const char **argv,
                        const size_t *lens)
{
    router_fanout(r, merge, r->argc, argv, lens);
}

/* r's own bytes to every master. */
static void fanout_same(struct request *r, enum merge_kind merge)
{
    const char **argv;
    size_t *lens;
    if (args_of(r, &argv, &lens) < 0) {
        request_fail(r, "ERR out of memory");
        return;
    }
    fanout_args(r, merge, argv, lens);
    free(argv);
    free(lens);
}

/* Without keys: the master of slot 0 (router_send's choice for keyless). */
static void to_one_master(struct request *r)
{
    r->slot = -1;
    router_send(r);
}

/* ---- EVAL, EVALSHA, FCALL ---- */

/* EVAL body: remembered, or replaced when script-map maps its SHA. */
static int eval_body(struct request *r)
{
    char sha[SCRIPTS_SHA_HEX];
    size_t len, mapped_len;
    const char *mapped_sha;
    const char *body = request_arg(r, 1, &len);
    scripts_sha1_hex(body, len, sha);
    const char *mapped = scripts_map_find(sha, &mapped_len, &mapped_sha);
    if (mapped)
        return replace_arg(r, 1, mapped, mapped_len);
    scripts_remember(body, len, sha);
    return 0;
}

/* EVALSHA of a script-map'd legacy SHA: the replacement's SHA instead. */
static int evalsha_sha(struct request *r)
{
    char sha[SCRIPTS_SHA_HEX];
    size_t len, mapped_len;
    const char *mapped_sha;
    const char *arg = request_arg(r, 1, &len);
    if (scripts_sha_parse(arg, len, sha) < 0 || !scripts_map_find(sha, &mapped_len, &mapped_sha))
        return 0;
    return replace_arg(r, 1, mapped_sha, SCRIPTS_SHA_HEX - 1);
}

static void plan_call(struct request *r)
{
    const char *name = r->cmd->name;
    if (strncmp(name, "evalsha", 7) == 0) {
        if (evalsha_sha(r) < 0)
            return;
        r->evalsha = 1;
    } else if (strncmp(name, "eval", 4) == 0) {
        if (eval_body(r) < 0)
            return;
    }
    int slot = router_key_slot(r);
    if (slot == -2) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "CROSSSLOT Keys in request don't hash to the same slot (command '%s')",
                 r->cmd->fullname);
        request_fail(r, msg);
        return;
    }
    r->slot = slot;
    router_send(r);
}

/* ---- SCRIPT ---- */

static void plan_script_load(struct request *r)
{
    char sha[SCRIPTS_SHA_HEX];
    const char *argv[3], *mapped_sha;
    size_t lens[3], mapped_len;
    for (int i = 0; i < 3; i++)
        argv[i] = request_arg(r, i, &lens[i]);
    scripts_sha1_hex(argv[2], lens[2], sha);
    const char *mapped = scripts_map_find(sha, &mapped_len, &mapped_sha);
    if (mapped) {
        argv[2] = mapped;
        lens[2] = mapped_len;
    } else {
        scripts_remember(argv[2], lens[2], sha);
    }
    fanout_args(r, MERGE_SCRIPT_LOAD, argv, lens);
}

/* SHAs of script-map'd legacy scripts are asked as their replacements. */
static void plan_script_exists(struct request *r)
{
    const char **argv;
    size_t *lens;
    if (args_of(r, &argv, &lens) < 0) {
        request_fail(r, "ERR out of memory");
        return;
    }
    for (int i = 2; i < r->argc; i++) {
        char sha[SCRIPTS_SHA_HEX];
        const char *mapped_sha;
        size_t mapped_len;
        if (scripts_sha_parse(argv[i], lens[i], sha) == 0 &&
            scripts_map_find(sha, &mapped_len, &mapped_sha)) {
            argv[i] = mapped_sha;
            lens[i] = SCRIPTS_SHA_HEX - 1;
        }
    }
    fanout_args(r, MERGE_AND, argv, lens);
    free(argv);
    free(lens);
}

/* SCRIPT FLUSH [ASYNC|SYNC]: as on one server, a later EVALSHA of a flushed
 * script gets NOSCRIPT, so the proxy forgets the bodies clients sent it
 * (its own registered ones it keeps: it reloads them when it needs them). */
static void plan_script_flush(struct request *r)
{
    size_t len;
    const char *mode = r->argc == 3 ? request_arg(r, 2, &len) : NULL;
    if (r->argc == 2 || (mode && ((len == 5 && strncasecmp(mode, "async", 5) == 0) ||
                                  (len == 4 && strncasecmp(mode, "sync", 4) == 0))))
        scripts_forget();
    fanout_same(r, MERGE_ALL_OK);
}

/* ---- SCRIPT KILL, FUNCTION KILL: one connection of its own per master ---- */

static struct request *part_of(struct node_req *nr)
{
    return (struct request *)((char *)nr - offsetof(struct request, nreq));
}

static void kill_reply(struct node_req *nr, struct evbuffer *in, const char *bytes, size_t len,
                       const struct reply_scanner *s)
{
    (void)s;
    request_deliver(part_of(nr), in, bytes, len);
}

static void kill_fail(struct node_req *nr, int may_have_run, const char *why)
{
    char msg[300];
    snprintf(msg, sizeof msg, "ERR %s%s", why,
             may_have_run ? ": connection to the node was lost" : "");
    request_fail(part_of(nr), msg);
}

/* Send part to master i on a new connection that closes after its reply. */
static void kill_send(struct worker *w, int i, struct request *part)
{
    const struct topology_node *n = &w->topo->nodes[i];
    struct node_conn *c = node_conn_new(&w->loop, n->announced, (const struct sockaddr *)&n->sa,
                                        n->salen, &w->node_opts);
    part->nreq.on_reply = kill_reply;
    part->nreq.on_fail = kill_fail;
    if (!c) {
        kill_fail(&part->nreq, 0, "cannot connect to the node");
        return;
    }
    node_send(c, &part->nreq, part->data, part->len);
    node_conn_retire(c);
}

static void plan_kill(struct request *r)
{
    struct worker *w = r->worker;
    int n = w->topo->nnodes;
    const char *argv[2];
    size_t lens[2];
    for (int i = 0; i < 2; i++)
        argv[i] = request_arg(r, i, &lens[i]);
    if (router_parts_open(r, MERGE_ANY_OK, n) < 0)
        return;
    for (int i = 0; i < n; i++) {
        struct request *part = router_part_add(r, i, 2, argv, lens);
        if (!part)
            break;
        kill_send(w, i, part);
    }
    request_parts_sent(r);
}

/* ---- the table ---- */

static void plan_refuse_debug(struct request *r)
{
    request_fail(r, "ERR 'script|debug' is refused: the Lua debugger needs a connection of "
                    "its own to one node: run it there");
}

static void plan_everywhere_ok(struct request *r)
{
    fanout_same(r, MERGE_ALL_OK);
}

static const struct {
    const char *fullname;
    void (*plan)(struct request *r);
} plans[] = {
    { "eval", plan_call }, { "eval_ro", plan_call },
    { "evalsha", plan_call }, { "evalsha_ro", plan_call },
    { "fcall", plan_call }, { "fcall_ro", plan_call },
    { "script|load", plan_script_load }, { "script|exists", plan_script_exists },
    { "script|flush", plan_script_flush }, { "script|kill", plan_kill },
    { "script|debug", plan_refuse_debug }, { "script|help", to_one_master },
    { "function|load", plan_everywhere_ok }, { "function|delete", plan_everywhere_ok },
    { "function|flush", plan_everywhere_ok }, { "function|restore", plan_everywhere_ok },
    { "function|kill", plan_kill }, { "function|list", to_one_master },
    { "function|dump", to_one_master }, { "function|stats", to_one_master },
    { "function|help", to_one_master },
};

void scriptcmd_dispatch(struct request *r)
{
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++)
        if (strcmp(r->cmd->fullname, plans[i].fullname) == 0) {
            plans[i].plan(r);
            return;
        }
    to_one_master(r);      /* a subcommand of a later Redis: one master says what it is */
}

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

void scriptcmd_before_send(struct request *r, struct node_conn *c)
{
    char sha[SCRIPTS_SHA_HEX];
    size_t len;
    if (r->argc < 2)
        return;
    const char *arg = request_arg(r, 1, &len);
    if (scripts_sha_parse(arg, len, sha) < 0 || conn_seen_add(c, sha))
        return;
    char *body = scripts_body_copy(sha, &len);
    if (body) {
        scriptcmd_load_on(c, body, len);
        free(body);
    }
}

/* ---- loading a body for NOSCRIPT recovery ---- */

static void load_reply(struct node_req *nr, struct evbuffer *in, const char *bytes, size_t len,
                       const struct reply_scanner *s)
{
    (void)bytes;
    if (s->type == '-') {
        char code[32];
        reply_error_code(s->errline, code, sizeof code);
        log_warning("scripts", "node %s refused SCRIPT LOAD of a known body (%s)",
                    nr->conn ? nr->conn->addr : "?", code);
    }
    if (in)
        evbuffer_drain(in, len);
    free(nr);
}

static void load_fail(struct node_req *nr, int may_have_run, const char *why)
{
    (void)may_have_run;
    (void)why;
    free(nr);
}

void scriptcmd_load_on(struct node_conn *c, const char *body, size_t len)
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

int scriptcmd_may_write(const struct command *cmd)
{
    const char *name = cmd->name;
    if (name[0] != 'e' && name[0] != 'f')
        return 0;           /* (the first letter first: the router asks for every reply) */
    return strcmp(name, "eval") == 0 || strcmp(name, "evalsha") == 0 ||
           strcmp(name, "fcall") == 0;
}

int scriptcmd_runs_code(const struct command *cmd)
{
    const char *name = cmd->name;
    if (name[0] != 'e' && name[0] != 'f')
        return 0;
    return scriptcmd_may_write(cmd) || strcmp(name, "eval_ro") == 0 ||
           strcmp(name, "evalsha_ro") == 0 || strcmp(name, "fcall_ro") == 0;
}

/* ---- routes ---- */

#define SCRIPT(name, cls) { name, { .plan = ROUTE_FAMILY, .run = scriptcmd_dispatch, .in_multi = cls } }

static const struct route_entry scriptcmd_routes[] = {
    SCRIPT("eval", TXC_SCRIPT), SCRIPT("eval_ro", TXC_SCRIPT), SCRIPT("evalsha", TXC_SCRIPT),
    SCRIPT("evalsha_ro", TXC_SCRIPT), SCRIPT("fcall", TXC_SCRIPT), SCRIPT("fcall_ro", TXC_SCRIPT),
    SCRIPT("script|*", TXC_OTHER), SCRIPT("function|*", TXC_OTHER),
};

void scriptcmd_register(void)
{
    route_register(scriptcmd_routes, (int)(sizeof scriptcmd_routes / sizeof scriptcmd_routes[0]));
}
