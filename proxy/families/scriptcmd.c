#include "proxy/families/scriptcmd.h"

#include <event2/buffer.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/base/log.h"
#include "cluster/node.h"
#include "cluster/slot.h"
#include "proxy/core/merge.h"
#include "proxy/core/request.h"
#include "proxy/core/route.h"
#include "proxy/core/router.h"
#include "proxy/core/scripts.h"
#include "proxy/core/worker.h"
#include "proxy/families/scriptreply.h"
#include "proxy/families/txclass.h"
#include "lib/proto/errors.h"
#include "lib/proto/command.h"
#include "lib/proto/reply.h"
#include "lib/proto/resp.h"

/* ---- helpers ---- */

/* Argument i of r replaced by bytes. 0, or -1 (r failed: out of memory). */
static int replace_arg(struct request *r, int i, const char *bytes, size_t len)
{
    size_t *lens;
    const char **argv = request_argv_new(r, &lens);
    int rc = -1;
    if (argv) {
        argv[i] = bytes;
        lens[i] = len;
        rc = request_rebuild(r, r->argc, argv, lens);
        free(argv);
    }
    if (rc < 0)
        request_fail(r, REPLY_ERR_OOM);
    return rc;
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

/* A script by its keys (all in one slot), with its replies' handling. */
static void send_script(struct request *r)
{
    int slot = router_key_slot(r);
    if (slot == SLOT_CROSS) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 REPLY_ERR_CROSSSLOT " (command '%s')",
                 r->cmd->fullname);
        request_fail(r, msg);
        return;
    }
    r->slot = slot;
    r->hooks = &scriptreply_hooks;
    router_send(r);
}

static void plan_eval(struct request *r)
{
    if (eval_body(r) == 0)
        send_script(r);
}

static void plan_evalsha(struct request *r)
{
    if (evalsha_sha(r) < 0)
        return;
    r->evalsha = 1;
    send_script(r);
}

/* SCRIPT LOAD: every master answered the same SHA (the script's, or under
 * script-map its replacement's); the client gets its own body's SHA1, as
 * one server would answer it. */
static void merge_script_load_run(struct request *p, struct evbuffer *out)
{
    size_t first_len, len;
    if (p->nparts == 0) {
        resp_add_error(out, REPLY_ERR_NO_MASTER);
        return;
    }
    const char *first = merge_part_bytes(p->parts[0], &first_len);
    for (int i = 1; i < p->nparts; i++) {
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (len != first_len || memcmp(b, first, len) != 0) {
            resp_add_error(out, "ERR the cluster's masters answered SCRIPT LOAD with different SHA1s");
            return;
        }
    }
    if (first_len == 0 || first[0] != '$' || p->argc < 3) {
        resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
        return;
    }
    char sha[SCRIPTS_SHA_HEX];
    size_t blen;
    const char *body = request_arg(p, 2, &blen);
    scripts_sha1_hex(body, blen, sha);
    resp_add_bulk_str(out, sha);
}

/* SCRIPT EXISTS: 1 at a position only where every master has the script. */
static void merge_and_run(struct request *p, struct evbuffer *out)
{
    size_t len, el;
    const char *e;
    struct reply_iter it;
    if (p->nparts == 0) {
        resp_add_error(out, REPLY_ERR_NO_MASTER);
        return;
    }
    const char *b = merge_part_bytes(p->parts[0], &len);
    long n = reply_array_elements(b, len, NULL, NULL, -1);
    if (n < 0) {
        resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
        return;
    }
    char *all = malloc(n > 0 ? (size_t)n : 1);
    if (!all) {
        resp_add_error(out, REPLY_ERR_OOM);
        return;
    }
    memset(all, 1, n > 0 ? (size_t)n : 1);
    for (int i = 0; i < p->nparts; i++) {
        b = merge_part_bytes(p->parts[i], &len);
        if (reply_array_elements(b, len, NULL, NULL, n) != n)
            goto bad;
        reply_iter_array(&it, b, len);
        for (long k = 0; reply_iter_next(&it, &e, &el) > 0; k++) {
            if (el < 4 || e[0] != ':')
                goto bad;
            if (e[1] == '0')
                all[k] = 0;
        }
    }
    resp_add_array(out, n);
    for (long k = 0; k < n; k++)
        resp_add_integer(out, all[k]);
    free(all);
    return;
bad:
    free(all);
    resp_add_error(out, REPLY_ERR_CANNOT_MERGE);
}

/* SCRIPT KILL, FUNCTION KILL: a script runs on at most the masters that
 * say OK; when none does, the first error other than NOTBUSY, else NOTBUSY. */
static int part_is_notbusy(struct request *part)
{
    size_t len;
    const char *b = merge_part_bytes(part, &len);
    return len >= 8 && memcmp(b, "-NOTBUSY", 8) == 0;
}

static void merge_any_ok_run(struct request *p, struct evbuffer *out)
{
    struct request *pick = NULL;
    for (int i = 0; i < p->nparts; i++) {
        size_t len;
        const char *b = merge_part_bytes(p->parts[i], &len);
        if (len > 0 && b[0] == '+') {
            resp_add_simple(out, "OK");
            return;
        }
        if (!pick || (part_is_notbusy(pick) && !part_is_notbusy(p->parts[i])))
            pick = p->parts[i];
    }
    if (!pick || evbuffer_get_length(request_reply_buffer(pick)) == 0)
        resp_add_error(out, REPLY_ERR_NO_REPLY);
    else
        evbuffer_add_buffer(out, request_reply_buffer(pick));
}

static const struct merge merge_script_load = { merge_script_load_run, 0 };
static const struct merge merge_and = { merge_and_run, 0 };
static const struct merge merge_any_ok = { merge_any_ok_run, 1 };


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
    router_fanout(r, &merge_script_load, r->argc, argv, lens);
}

/* SHAs of script-map'd legacy scripts are asked as their replacements. */
static void plan_script_exists(struct request *r)
{
    size_t *lens;
    const char **argv = request_argv_new(r, &lens);
    if (!argv) {
        request_fail(r, REPLY_ERR_OOM);
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
    router_fanout(r, &merge_and, r->argc, argv, lens);
    free(argv);
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
    router_fanout_own(r, &merge_all_ok);
}

/* ---- SCRIPT KILL, FUNCTION KILL: one connection of its own per master ---- */

static void plan_kill(struct request *r)
{
    const char *argv[2];
    size_t lens[2];
    for (int i = 0; i < 2; i++)
        argv[i] = request_arg(r, i, &lens[i]);
    router_ask_each_alone(r, &merge_any_ok, 2, argv, lens);
}

/* ---- the table ---- */

static void plan_refuse_debug(struct request *r)
{
    request_fail(r, "ERR 'script|debug' is refused: the Lua debugger needs a connection of "
                    "its own to one node: run it there");
}

static void plan_everywhere_ok(struct request *r)
{
    router_fanout_own(r, &merge_all_ok);
}

/* SCRIPT SHOW sha (Valkey 8): the body the proxy knows, else the one of a
 * master that holds it (an EVAL ran on one master only), else NOSCRIPT. */
static void plan_script_show(struct request *r)
{
    size_t len, body_len;
    const char *arg = request_arg(r, 2, &len);
    char sha[SCRIPTS_SHA_HEX];
    char *body = scripts_sha_parse(arg, len, sha) == 0 ? scripts_body_copy(sha, &body_len) : NULL;
    if (!body) {
        router_fanout_own(r, &merge_found);
        return;
    }
    resp_add_bulk(request_out(r), body, body_len);
    free(body);
    request_finish(r);
}

/* ---- routes ---- */

#define SCRIPT(name, fn, cls) { name, { .plan = ROUTE_FAMILY, .run = fn, .in_multi = cls } }

/* "script|*" and "function|*": HELP, LIST, DUMP, STATS, and a subcommand of
 * a later Redis: one master says what it is. */
static const struct route_entry scriptcmd_routes[] = {
    SCRIPT("eval", plan_eval, TXC_SCRIPT), SCRIPT("eval_ro", plan_eval, TXC_SCRIPT),
    SCRIPT("evalsha", plan_evalsha, TXC_SCRIPT), SCRIPT("evalsha_ro", plan_evalsha, TXC_SCRIPT),
    SCRIPT("fcall", send_script, TXC_SCRIPT), SCRIPT("fcall_ro", send_script, TXC_SCRIPT),
    SCRIPT("script|load", plan_script_load, TXC_OTHER),
    SCRIPT("script|exists", plan_script_exists, TXC_OTHER),
    SCRIPT("script|flush", plan_script_flush, TXC_OTHER),
    SCRIPT("script|kill", plan_kill, TXC_OTHER),
    SCRIPT("script|debug", plan_refuse_debug, TXC_OTHER),
    SCRIPT("script|show", plan_script_show, TXC_OTHER),     /* learned (Valkey 8) */
    SCRIPT("script|*", to_one_master, TXC_OTHER),
    SCRIPT("function|load", plan_everywhere_ok, TXC_OTHER),
    SCRIPT("function|delete", plan_everywhere_ok, TXC_OTHER),
    SCRIPT("function|flush", plan_everywhere_ok, TXC_OTHER),
    SCRIPT("function|restore", plan_everywhere_ok, TXC_OTHER),
    SCRIPT("function|kill", plan_kill, TXC_OTHER),
    SCRIPT("function|*", to_one_master, TXC_OTHER),
};

void scriptcmd_register(void)
{
    route_register(scriptcmd_routes, (int)(sizeof scriptcmd_routes / sizeof scriptcmd_routes[0]));
}
