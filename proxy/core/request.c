#include "proxy/core/request.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster/learned.h"
#include "lib/base/assert.h"
#include "proxy/core/proxy.h"
#include "proxy/core/worker.h"
#include "lib/proto/command.h"

#define REQUEST_POOL_MAX 4096

/* Where finished requests go, and how parts combine (request_sink_register,
 * request_merge_register). */
static const struct request_sink *sink;
static void (*combine_parts)(struct request *parent);
static int (*hold_fn)(struct request *r);

struct request *request_new(struct worker *w)
{
    struct request *r = w->free_requests;
    struct evbuffer *keep = NULL;
    if (r) {
        w->free_requests = r->next_free;
        w->nfree_requests--;
        gauge_add(&w->stats.requests_pooled, -1);
        keep = r->reply;
    } else {
        r = malloc(sizeof *r);
        if (!r)
            return NULL;
        gauge_add(&w->stats.requests_held, 1);
    }
    /* clear everything before the inline storage, which needs no clearing */
    memset(r, 0, offsetof(struct request, inline_data));
    r->reply = keep;
    r->worker = w;
    r->slot = -1;
    r->ask_node = -1;
    r->fixed_node = -1;
    return r;
}

/* Free the command bytes and offsets r holds outside itself. */
static void storage_free(struct request *r)
{
    if (r->data && r->data != r->inline_data)
        free(r->data);
    if (r->args && r->args != r->inline_args)
        free(r->args);
}

/* Point r at storage for len bytes and argc offsets, freeing what it held
 * before: 0, or -1 out of memory with r as it was. */
static int request_storage(struct request *r, size_t len, int argc)
{
    char *data = len <= sizeof r->inline_data ? r->inline_data : malloc(len);
    struct resp_arg *args = argc <= REQUEST_INLINE_ARGS ? r->inline_args
                                                        : malloc(sizeof *args * (size_t)argc);
    if (!data || !args) {
        if (data && data != r->inline_data)
            free(data);
        if (args && args != r->inline_args)
            free(args);
        return -1;
    }
    storage_free(r);
    r->keys_cmd = NULL;         /* new bytes: their keys are to be found */
    r->data = data;
    r->args = args;
    r->len = len;
    r->argc = argc;
    return 0;
}

int request_set_command(struct request *r, const char *bytes, size_t len,
                        const struct resp_arg *args, int argc)
{
    if (request_storage(r, len, argc) < 0)
        return -1;
    memcpy(r->data, bytes, len);
    memcpy(r->args, args, sizeof *args * (size_t)argc);
    return 0;
}

size_t request_footprint(const struct request *r)
{
    size_t n = sizeof *r;
    if (r->data && r->data != r->inline_data)
        n += r->len;
    if (r->args && r->args != r->inline_args)
        n += sizeof *r->args * (size_t)r->argc;
    return n;
}

int request_build(struct request *r, int argc, const char *const *argv, const size_t *lens)
{
    if (request_storage(r, resp_command_len(argc, lens), argc) < 0)
        return -1;
    resp_command_write(r->data, r->args, argc, argv, lens);
    return 0;
}

int request_rebuild(struct request *r, int argc, const char *const *argv, const size_t *lens)
{
    /* argv may point into r's own bytes: write the new command aside (on
     * the stack when it fits inline), then let r take it over */
    size_t len = resp_command_len(argc, lens);
    char fixed_data[REQUEST_INLINE_BYTES];
    struct resp_arg fixed_args[REQUEST_INLINE_ARGS];
    char *data = len <= sizeof fixed_data ? fixed_data : malloc(len);
    struct resp_arg *args = argc <= REQUEST_INLINE_ARGS ? fixed_args
                                                        : malloc(sizeof *args * (size_t)argc);
    if (!data || !args) {
        if (data != fixed_data)
            free(data);
        if (args != fixed_args)
            free(args);
        return -1;
    }
    resp_command_write(data, args, argc, argv, lens);
    storage_free(r);
    if (data == fixed_data) {
        memcpy(r->inline_data, data, len);
        data = r->inline_data;
    }
    if (args == fixed_args) {
        memcpy(r->inline_args, args, sizeof *args * (size_t)argc);
        args = r->inline_args;
    }
    r->data = data;
    r->args = args;
    r->len = len;
    r->argc = argc;
    r->keys_cmd = NULL;         /* new bytes: their keys are to be found */
    return 0;
}

/* Whose key specs find cmd's keys: the cluster's where they differ. */
static const struct command *keys_specs(const struct request *r, const struct command *cmd)
{
    const struct topology *t = r->worker ? r->worker->topo : NULL;
    return learned_entry(t ? t->learned : NULL, cmd);
}

int request_keys(struct request *r, const struct command *cmd, int *keys, int max)
{
    if (r->keys_cmd != cmd) {
        r->nkeys = command_keys(keys_specs(r, cmd), r->data, r->args, r->argc,
                                r->cached_keys, REQUEST_CACHED_KEYS);
        r->keys_cmd = cmd;
    }
    if (r->nkeys > REQUEST_CACHED_KEYS)     /* more than kept: find them again */
        return command_keys(keys_specs(r, cmd), r->data, r->args, r->argc, keys, max);
    for (int i = 0; i < r->nkeys && i < max; i++)
        keys[i] = r->cached_keys[i];
    return r->nkeys;
}

void request_queue_insert(struct request_queue *q, struct request *r)
{
    struct request *after = TAILQ_LAST(q, request_queue);
    while (after && after->seq > r->seq)
        after = TAILQ_PREV(after, request_queue, hold_link);
    if (after)
        TAILQ_INSERT_AFTER(q, after, r, hold_link);
    else
        TAILQ_INSERT_HEAD(q, r, hold_link);
}

int request_block_arg(const struct request *r)
{
    for (int i = 1; i + 1 < r->argc; i++) {
        size_t len;
        const char *a = request_arg(r, i, &len);
        if (len == 7 && strncasecmp(a, "streams", 7) == 0)
            break;
        if (len == 5 && strncasecmp(a, "block", 5) == 0)
            return i + 1;
    }
    return -1;
}

int request_keys_of(struct request *r, const struct command *cmd, int some[16], int **keys,
                    int *partial)
{
    int n = cmd ? request_keys(r, cmd, some, 16) : 0;
    *keys = some;
    *partial = 0;
    if (n > 16) {
        int *all = malloc(sizeof *all * (size_t)n);
        if (all) {
            *keys = all;
            n = request_keys(r, cmd, all, n);
        } else {
            n = 16;
            *partial = 1;
        }
    }
    return n < 0 ? 0 : n;
}

int request_keys_all(struct request *r, int some[16], int **keys)
{
    int partial;
    return request_keys_of(r, r->cmd, some, keys, &partial);
}

void request_parts_sent(struct request *p)
{
    if (--p->parts_left == 0) {
        combine_parts(p);
        request_finish(p);
    }
}

unsigned char request_mark_register(void)
{
    static int nmarks;
    if (nmarks == 8)
        registration_full("request marks", 8);
    return (unsigned char)(1u << nmarks++);
}

void request_family_set(struct request *r, const struct request_family *f, void *state)
{
    ASSERT(!r->family || r->family == f);
    r->family = state ? f : NULL;
    r->family_state = state;
}

void request_free(struct request *r)
{
    struct worker *w = r->worker;
    request_script_back(r);
    for (int i = 0; i < r->nparts; i++)
        if (r->parts[i])
            request_free(r->parts[i]);
    free(r->parts);
    free(r->positions);
    if (r->family)
        r->family->freed(r, r->family_state);
    storage_free(r);
    if (r->reply)
        evbuffer_drain(r->reply, evbuffer_get_length(r->reply));
    if (w->nfree_requests < REQUEST_POOL_MAX) {
        r->next_free = w->free_requests;
        w->free_requests = r;
        w->nfree_requests++;
        gauge_add(&w->stats.requests_pooled, 1);
    } else {
        if (r->reply)
            evbuffer_free(r->reply);
        free(r);
        gauge_add(&w->stats.requests_held, -1);
    }
}

static void scripts_out_publish(struct worker *w)
{
    const struct request *first = TAILQ_FIRST(&w->scripts_out);
    __atomic_store_n(&w->oldest_script_ms, first ? first->script_sent_ms : 0, __ATOMIC_RELAXED);
}

void request_script_sent(struct request *r, uint64_t now_ms)
{
    if (r->script_out)
        return;
    r->script_out = 1;
    r->script_sent_ms = now_ms ? now_ms : 1;
    TAILQ_INSERT_TAIL(&r->worker->scripts_out, r, script_link);
    if (TAILQ_FIRST(&r->worker->scripts_out) == r)
        scripts_out_publish(r->worker);
}

void request_script_back(struct request *r)
{
    if (!r->script_out)
        return;
    int was_first = TAILQ_FIRST(&r->worker->scripts_out) == r;
    TAILQ_REMOVE(&r->worker->scripts_out, r, script_link);
    r->script_out = 0;
    if (was_first)
        scripts_out_publish(r->worker);
}

uint64_t request_oldest_script_ms(const struct worker *w)
{
    const struct proxy *p = w->proxy;
    uint64_t oldest = 0;
    for (int i = 0; i < p->nworkers; i++) {
        uint64_t t = __atomic_load_n(&p->workers[i].oldest_script_ms, __ATOMIC_RELAXED);
        if (t && (!oldest || t < oldest))
            oldest = t;
    }
    return oldest;
}

struct evbuffer *request_reply_buffer(struct request *r)
{
    if (!r->reply)
        r->reply = evbuffer_new();
    return r->reply;
}

int request_arg_is(const struct request *r, int i, const char *word)
{
    size_t len;
    const char *a = request_arg(r, i, &len);
    return len == strlen(word) && strncasecmp(a, word, len) == 0;
}

int request_arg_redacted(const struct request *r, int i)
{
    const char *name = r->cmd ? r->cmd->fullname : "";
    int hello = strcmp(name, "hello") == 0, migrate = strcmp(name, "migrate") == 0;
    if (strcmp(name, "auth") == 0)
        return i >= 1;
    if (!hello && !migrate)
        return 0;
    for (int j = hello ? 2 : 6; j < r->argc; j++) {
        int shown = 0;      /* AUTH's words hidden after it: HELLO's 2, MIGRATE's 1 */
        if (request_arg_is(r, j, "auth"))
            shown = hello ? 2 : 1;
        else if (migrate && request_arg_is(r, j, "auth2"))
            shown = 2;
        else if (hello && request_arg_is(r, j, "setname"))
            j++;
        else if (migrate && request_arg_is(r, j, "keys"))
            return 0;
        if (shown) {
            if (i > j && i <= j + shown)
                return 1;
            j += shown;
        }
    }
    return 0;
}

int request_arg_ll(const struct request *r, int i, long long *v)
{
    size_t len;
    const char *a = request_arg(r, i, &len);
    char buf[32], *end;
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, a, len);
    buf[len] = '\0';
    *v = strtoll(buf, &end, 10);
    return *end == '\0' ? 0 : -1;
}

void request_reply_arg(struct request *r, int i)
{
    size_t len;
    const char *a = request_arg(r, i, &len);
    resp_add_bulk(request_out(r), a, len);
}

void request_sink_register(const struct request_sink *s)
{
    sink = s;
}

void request_merge_register(void (*combine)(struct request *parent))
{
    combine_parts = combine;
}

void request_hold_register(int (*hold)(struct request *r))
{
    hold_fn = hold;
}

/* A client's own request is answered: the sink sees it once, before an
 * inline reply takes the place of its command. */
static void answered(struct request *r)
{
    if (r->client && !r->parent && !r->detached && !r->on_done && sink->answered)
        sink->answered(r);
}

static void finish(struct request *r)
{
    if (r->ack && hold_fn && hold_fn(r))
        return;
    r->done = 1;
    if (r->parent) {
        request_parts_sent(r->parent);
        return;
    }
    if (r->on_done) {
        r->on_done(r);
        return;
    }
    if (r->client && !r->detached)
        sink->finished(r);
}

void request_finish(struct request *r)
{
    answered(r);
    finish(r);
}

void request_release(struct request *r)
{
    finish(r);
}

size_t request_reply_bytes(const struct request *r)
{
    return r->inline_reply_len + (r->reply ? evbuffer_get_length(r->reply) : 0);
}

int request_reply_is_error(const struct request *r)
{
    unsigned char first = 0;
    if (r->inline_reply_len)
        first = (unsigned char)r->inline_data[0];
    else if (r->reply && evbuffer_get_length(r->reply) > 0)
        evbuffer_copyout(r->reply, &first, 1);
    return first == '-' || first == '!';
}

void request_reply_replace(struct request *r, const char *bytes, size_t len)
{
    r->inline_reply_len = 0;
    if (r->reply)
        evbuffer_drain(r->reply, evbuffer_get_length(r->reply));
    if (!r->parent && !r->nparts && len <= sizeof r->inline_data) {
        if (r->data != r->inline_data)
            free(r->data);
        r->data = NULL;
        memcpy(r->inline_data, bytes, len);
        r->inline_reply_len = len;
        return;
    }
    evbuffer_add(request_reply_buffer(r), bytes, len);
}

void request_deliver(struct request *r, const struct reply_view *v)
{
    answered(r);
    if (r->client && !r->parent && !r->silent && !r->ack && sink->deliver_now(r, v))
        return;
    if (!v->in && !r->parent && !r->nparts && v->len <= sizeof r->inline_data) {
        if (r->data != r->inline_data)
            free(r->data);
        r->data = NULL;             /* the command is done with */
        memcpy(r->inline_data, v->bytes, v->len);
        r->inline_reply_len = v->len;
        finish(r);
        return;
    }
    reply_view_take(v, request_reply_buffer(r));
    finish(r);
}

int request_heard(const struct request *r)
{
    if (r->done || r->nreq.answered)
        return 1;
    for (int i = 0; i < r->nparts; i++)
        if (r->parts[i] && (r->parts[i]->done || r->parts[i]->nreq.answered))
            return 1;
    return 0;
}

int request_sent(const struct request *r)
{
    if (r->done || r->nreq.conn)      /* (which stays set once answered) */
        return 1;
    for (int i = 0; i < r->nparts; i++)
        if (r->parts[i] && request_sent(r->parts[i]))
            return 1;
    return 0;
}

void request_deliver_bytes(struct request *r, const char *bytes, size_t len)
{
    struct reply_view v = { NULL, bytes, len };
    request_deliver(r, &v);
}

void request_fail(struct request *r, const char *msg)
{
    resp_add_error(request_reply_buffer(r), msg);     /* CR and LF become blanks */
    request_finish(r);
}

const char **request_argv_new(const struct request *r, size_t **lens)
{
    size_t n = r->argc > 0 ? (size_t)r->argc : 1;
    /* pointers, then lengths: size_t is no more aligned than a pointer on
     * the targets we build for */
    const char **argv = malloc(n * (sizeof *argv + sizeof **lens));
    if (!argv)
        return NULL;
    *lens = (size_t *)(void *)(argv + n);
    for (int i = 0; i < r->argc; i++)
        argv[i] = request_arg(r, i, &(*lens)[i]);
    return argv;
}
