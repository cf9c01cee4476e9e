/*
 * aclcmd: ACL about the proxy's own users. See aclcmd.h.
 */
#include "families/aclcmd.h"

#include <event2/buffer.h>
#include <pthread.h>
#include <stdarg.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/acl.h"
#include "config/snapshot.h"
#include "core/client.h"
#include "core/request.h"
#include "core/route.h"
#include "core/router.h"
#include "core/worker.h"
#include "families/clientcmd.h"
#include "proto/resp.h"

#define DESCRIBE_MAX 16384          /* a user's ACL LIST line, at most */
#define LOG_GROUP_SCAN 10           /* newest entries a refusal may join */
#define LOG_GROUP_MS 60000          /* ... when as recent as this */

static void fail_printf(struct request *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void fail_printf(struct request *r, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    request_fail(r, msg);
}

/* ---- ACL LOG ---- */

enum log_reason { REASON_COMMAND, REASON_KEY, REASON_AUTH, REASON_CHANNEL };

struct log_entry {
    long long count;
    enum log_reason reason;
    int multi;                      /* context: multi, else toplevel */
    char *object;
    char *username;
    uint64_t ctime_ms;              /* wall clock */
    char *client_info;
};

/* Newest first; shared by the workers, touched only on a refusal. */
static struct {
    pthread_mutex_t lock;
    struct log_entry entries[ACLCMD_LOG_MAX];
    int n;
} acl_log = { .lock = PTHREAD_MUTEX_INITIALIZER };

static const char *const reason_names[] = { "command", "key", "auth", "channel" };

static void entry_free(struct log_entry *e)
{
    free(e->object);
    free(e->username);
    free(e->client_info);
}

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static char *dup_len(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

/* As Redis's addACLLogEntry: an entry like one of the newest few within a
 * minute is counted there and moves to the head, else a new head. */
static void log_add(struct client *c, enum log_reason reason, const char *object, size_t olen,
                    const char *user, size_t ulen)
{
    char info[1024];
    struct client_counts n;
    client_counts(c, &n);
    clientcmd_describe(c, info, sizeof info);
    struct log_entry e = { 1, reason, n.multi >= 0, dup_len(object, olen), dup_len(user, ulen),
                           wall_ms(), strdup(info) };
    if (!e.object || !e.username || !e.client_info) {
        entry_free(&e);
        return;
    }
    pthread_mutex_lock(&acl_log.lock);
    int found = -1;
    for (int i = 0; i < acl_log.n && i < LOG_GROUP_SCAN && found < 0; i++) {
        struct log_entry *o = &acl_log.entries[i];
        uint64_t age = e.ctime_ms > o->ctime_ms ? e.ctime_ms - o->ctime_ms
                                                : o->ctime_ms - e.ctime_ms;
        if (o->reason == e.reason && o->multi == e.multi && strcmp(o->object, e.object) == 0 &&
            strcmp(o->username, e.username) == 0 && age <= LOG_GROUP_MS)
            found = i;
    }
    if (found >= 0) {
        struct log_entry *o = &acl_log.entries[found];
        e.count = o->count + 1;
        entry_free(o);
        memmove(&acl_log.entries[1], &acl_log.entries[0], sizeof e * (size_t)found);
    } else {
        if (acl_log.n == ACLCMD_LOG_MAX)
            entry_free(&acl_log.entries[--acl_log.n]);
        memmove(&acl_log.entries[1], &acl_log.entries[0], sizeof e * (size_t)acl_log.n);
        acl_log.n++;
    }
    acl_log.entries[0] = e;
    pthread_mutex_unlock(&acl_log.lock);
}

/* The router refused r (acl.h verdict), for the argument at errpos. */
static void denied(struct request *r, int verdict, int errpos)
{
    struct client *c = r->client;
    size_t len;
    const char *object;
    if (verdict == ACL_DENIED_CMD) {
        object = r->cmd->fullname;
        len = strlen(object);
    } else {
        object = request_arg(r, errpos, &len);
    }
    log_add(c, verdict == ACL_DENIED_CMD ? REASON_COMMAND
               : verdict == ACL_DENIED_KEY ? REASON_KEY : REASON_CHANNEL,
            object, len, c->user->name, strlen(c->user->name));
}

void aclcmd_log_auth(struct request *r, const char *user, size_t len)
{
    size_t nlen;
    const char *name = request_arg(r, 0, &nlen);    /* as the client typed it */
    log_add(r->client, REASON_AUTH, name, nlen, user, len);
}

static void log_reply(struct request *r, long long count)
{
    struct evbuffer *out = request_out(r);
    enum resp_proto p = request_resp(r);
    uint64_t now = wall_ms();
    pthread_mutex_lock(&acl_log.lock);
    if (count > acl_log.n)
        count = acl_log.n;
    resp_add_array(out, count);
    for (long long i = 0; i < count; i++) {
        const struct log_entry *e = &acl_log.entries[i];
        resp_add_map(out, p, 7);
        resp_add_bulk_str(out, "count");
        resp_add_integer(out, e->count);
        resp_add_bulk_str(out, "reason");
        resp_add_bulk_str(out, reason_names[e->reason]);
        resp_add_bulk_str(out, "context");
        resp_add_bulk_str(out, e->multi ? "multi" : "toplevel");
        resp_add_bulk_str(out, "object");
        resp_add_bulk_str(out, e->object);
        resp_add_bulk_str(out, "username");
        resp_add_bulk_str(out, e->username);
        resp_add_bulk_str(out, "age-seconds");
        resp_add_double(out, p, (double)(now > e->ctime_ms ? now - e->ctime_ms : 0) / 1000);
        resp_add_bulk_str(out, "client-info");
        resp_add_bulk_str(out, e->client_info);
    }
    pthread_mutex_unlock(&acl_log.lock);
    request_finish(r);
}

/* ACL LOG [count | RESET] */
static void acl_log_cmd(struct request *r)
{
    long long count = 10;
    size_t len;
    if (r->argc > 3) {
        request_fail(r, "ERR unknown subcommand or wrong number of arguments for 'log'. "
                        "Try ACL HELP.");
        return;
    }
    if (r->argc == 3) {
        const char *a = request_arg(r, 2, &len);
        if (len == 5 && strncasecmp(a, "reset", 5) == 0) {
            pthread_mutex_lock(&acl_log.lock);
            for (int i = 0; i < acl_log.n; i++)
                entry_free(&acl_log.entries[i]);
            acl_log.n = 0;
            pthread_mutex_unlock(&acl_log.lock);
            resp_add_simple(request_out(r), "OK");
            request_finish(r);
            return;
        }
        if (request_arg_ll(r, 2, &count) < 0) {
            request_fail(r, "ERR value is not an integer or out of range");
            return;
        }
        if (count < 0)
            count = 0;
    }
    log_reply(r, count);
}

/* ---- about the users ---- */

static const struct acl *users_of(const struct request *r)
{
    return r->worker->snap->acl;
}

static void acl_whoami(struct request *r)
{
    resp_add_bulk_str(request_out(r), r->client->user->name);
    request_finish(r);
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const struct acl_user *const *)a)->name,
                  (*(const struct acl_user *const *)b)->name);
}

/* The users in Redis's order (by name, bytewise); NULL out of memory. */
static const struct acl_user **users_sorted(const struct acl *a)
{
    const struct acl_user **v = malloc(sizeof *v * (size_t)a->nusers);
    for (int i = 0; v && i < a->nusers; i++)
        v[i] = &a->users[i];
    if (v)
        qsort(v, (size_t)a->nusers, sizeof *v, by_name);
    return v;
}

static void acl_users(struct request *r)
{
    const struct acl *a = users_of(r);
    const struct acl_user **v = users_sorted(a);
    if (!v) {
        request_fail(r, "ERR out of memory");
        return;
    }
    resp_add_array(request_out(r), a->nusers);
    for (int i = 0; i < a->nusers; i++)
        resp_add_bulk_str(request_out(r), v[i]->name);
    free(v);
    request_finish(r);
}

static void acl_list(struct request *r)
{
    const struct acl *a = users_of(r);
    const struct acl_user **v = users_sorted(a);
    char *line = malloc(DESCRIBE_MAX);
    if (!v || !line) {
        free(v);
        free(line);
        request_fail(r, "ERR out of memory");
        return;
    }
    resp_add_array(request_out(r), a->nusers);
    for (int i = 0; i < a->nusers; i++) {
        int head = snprintf(line, DESCRIBE_MAX, "user %s ", v[i]->name);
        if (head > 0 && head < DESCRIBE_MAX)
            acl_describe_user(v[i], line + head, DESCRIBE_MAX - (size_t)head);
        resp_add_bulk_str(request_out(r), line);
    }
    free(v);
    free(line);
    request_finish(r);
}

/* commands, keys, channels of s, as GETUSER gives them */
static void selector_fields(struct evbuffer *out, const struct acl_selector *s, char *buf)
{
    resp_add_bulk_str(out, "commands");
    acl_describe_commands(s, buf, DESCRIBE_MAX);
    resp_add_bulk_str(out, buf);
    resp_add_bulk_str(out, "keys");
    acl_describe_keys(s, buf, DESCRIBE_MAX);
    resp_add_bulk_str(out, buf);
    resp_add_bulk_str(out, "channels");
    acl_describe_channels(s, 0, buf, DESCRIBE_MAX);
    resp_add_bulk_str(out, buf);
}

static void acl_getuser(struct request *r)
{
    size_t len;
    const char *name = request_arg(r, 2, &len);
    const struct acl_user *u = acl_user_named(users_of(r), name, len);
    struct evbuffer *out = request_out(r);
    enum resp_proto p = request_resp(r);
    char *buf = malloc(DESCRIBE_MAX), hex[2 * ACL_DIGEST_LEN + 1];
    if (!buf) {
        request_fail(r, "ERR out of memory");
        return;
    }
    if (!u) {
        resp_add_null(out, p);
        free(buf);
        request_finish(r);
        return;
    }
    resp_add_map(out, p, 6);
    resp_add_bulk_str(out, "flags");
    int nflags = 1 + u->nopass + (u->sanitize != ACL_SANITIZE_UNSET);
    resp_add_set(out, p, nflags);
    resp_add_bulk_str(out, u->enabled ? "on" : "off");
    if (u->nopass)
        resp_add_bulk_str(out, "nopass");
    if (u->sanitize != ACL_SANITIZE_UNSET)
        resp_add_bulk_str(out, u->sanitize == ACL_SKIP_SANITIZE ? "skip-sanitize-payload"
                                                                 : "sanitize-payload");
    resp_add_bulk_str(out, "passwords");
    resp_add_array(out, u->npasswords);
    for (int i = 0; i < u->npasswords; i++) {
        for (int k = 0; k < ACL_DIGEST_LEN; k++)
            snprintf(hex + 2 * k, 3, "%02x", u->passwords[i][k]);
        resp_add_bulk_str(out, hex);
    }
    selector_fields(out, &u->selectors[0], buf);
    resp_add_bulk_str(out, "selectors");
    resp_add_array(out, u->nselectors - 1);
    for (int i = 1; i < u->nselectors; i++) {
        resp_add_map(out, p, 3);
        selector_fields(out, &u->selectors[i], buf);
    }
    free(buf);
    request_finish(r);
}

static void acl_cat(struct request *r)
{
    struct evbuffer *out = request_out(r);
    if (r->argc == 2) {
        resp_add_array(out, command_acl_category_count);
        for (int i = 0; i < command_acl_category_count; i++)
            resp_add_bulk_str(out, command_acl_category_names[i]);
        request_finish(r);
        return;
    }
    size_t len;
    const char *name = request_arg(r, 2, &len);
    int cat = -1;
    for (int i = 0; i < command_acl_category_count && cat < 0; i++)
        if (strlen(command_acl_category_names[i]) == len &&
            strncasecmp(command_acl_category_names[i], name, len) == 0)
            cat = i;
    if (cat < 0) {
        fail_printf(r, "ERR Unknown category '%.*s'", (int)(len > 128 ? 128 : len), name);
        return;
    }
    uint64_t mask = 1ULL << cat;
    long long n = 0;
    for (int pass = 0; pass < 2; pass++) {      /* count, then write */
        if (pass == 1)
            resp_add_array(out, n);
        for (int i = 0; i < command_table_size; i++) {
            const struct command *c = &command_table[i];
            for (int k = -1; k < c->nsubcommands; k++) {
                const struct command *sc = k < 0 ? c : &c->subcommands[k];
                if (!(sc->acl_categories & mask))
                    continue;
                if (pass == 0)
                    n++;
                else
                    resp_add_bulk_str(out, sc->fullname);
            }
        }
    }
    request_finish(r);
}

/* ACL DRYRUN user command [arg ...], as Redis 7.0 answers it. */
static void acl_dryrun(struct request *r)
{
    size_t len, clen;
    const char *name = request_arg(r, 2, &len);
    const struct acl_user *u = acl_user_named(users_of(r), name, len);
    if (!u) {
        fail_printf(r, "ERR User '%.*s' not found", (int)(len > 128 ? 128 : len), name);
        return;
    }
    const char *cname = request_arg(r, 3, &clen);
    const struct command *cmd = command_lookup(cname, clen);
    if (cmd && cmd->nsubcommands && r->argc > 4) {
        size_t slen;
        const char *sub = request_arg(r, 4, &slen);
        cmd = command_lookup_sub(cmd, sub, slen);
    }
    if (!cmd) {
        fail_printf(r, "ERR Command '%.*s' not found", (int)(clen > 128 ? 128 : clen),
                            cname);
        return;
    }
    if (!command_arity_ok(cmd, r->argc - 3)) {
        fail_printf(r, "ERR wrong number of arguments for '%s' command", cmd->fullname);
        return;
    }
    int pos;
    enum acl_verdict v = acl_check(u, cmd, r->data, r->args + 3, r->argc - 3, &pos);
    struct evbuffer *out = request_out(r);
    if (v == ACL_OK) {
        resp_add_simple(out, "OK");
    } else if (v == ACL_DENIED_CMD) {
        evbuffer_add_printf(out, "$%zu\r\n", strlen("This user has no permissions to run the "
                                                    "'' command") + strlen(cmd->fullname));
        evbuffer_add_printf(out, "This user has no permissions to run the '%s' command\r\n",
                            cmd->fullname);
    } else {
        size_t alen;
        const char *arg = request_arg(r, 3 + pos, &alen);
        const char *what = v == ACL_DENIED_KEY ? "key" : "channel";
        evbuffer_add_printf(out, "$%zu\r\n", strlen("This user has no permissions to access "
                                                    "the '' ") + alen + strlen(what));
        evbuffer_add_printf(out, "This user has no permissions to access the '");
        evbuffer_add(out, arg, alen);
        evbuffer_add_printf(out, "' %s\r\n", what);
    }
    request_finish(r);
}

static void acl_refuse_change(struct request *r)
{
    fail_printf(r, "ERR '%s' is not supported through the proxy: its users come from "
                        "its config (user lines and aclfile); edit them and reload the proxy "
                        "(SIGHUP)", r->cmd->fullname);
}

static const struct route_entry aclcmd_routes[] = {
    ROUTE_LOCAL("acl|whoami", acl_whoami, TXC_PROXY),
    ROUTE_LOCAL("acl|users", acl_users, TXC_PROXY),
    ROUTE_LOCAL("acl|list", acl_list, TXC_PROXY),
    ROUTE_LOCAL("acl|getuser", acl_getuser, TXC_PROXY),
    ROUTE_LOCAL("acl|cat", acl_cat, TXC_PROXY),
    ROUTE_LOCAL("acl|dryrun", acl_dryrun, TXC_PROXY),
    ROUTE_LOCAL("acl|log", acl_log_cmd, TXC_PROXY),
    ROUTE_LOCAL("acl|setuser", acl_refuse_change, TXC_PROXY),
    ROUTE_LOCAL("acl|deluser", acl_refuse_change, TXC_PROXY),
    ROUTE_LOCAL("acl|load", acl_refuse_change, TXC_PROXY),
    ROUTE_LOCAL("acl|save", acl_refuse_change, TXC_PROXY),
};

void aclcmd_register(void)
{
    route_register(aclcmd_routes, (int)(sizeof aclcmd_routes / sizeof aclcmd_routes[0]));
    router_register_denied(denied);
}
