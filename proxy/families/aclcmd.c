/*
 * aclcmd: ACL about the proxy's own users. See aclcmd.h.
 */
#include "proxy/families/aclcmd.h"

#include <event2/buffer.h>
#include <pthread.h>
#include <stdarg.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <errno.h>
#include <unistd.h>

#include "lib/base/log.h"
#include "cluster/learned.h"
#include "proxy/config/acl.h"
#include "proxy/config/snapshot.h"
#include "proxy/core/proxy.h"
#include "proxy/core/thread.h"
#include "proxy/core/client.h"
#include "proxy/core/request.h"
#include "proxy/core/route.h"
#include "proxy/core/router.h"
#include "proxy/core/worker.h"
#include "proxy/families/clientcmd.h"
#include "proxy/families/txclass.h"
#include "lib/proto/errors.h"
#include "lib/proto/resp.h"

#define DESCRIBE_FIRST 4096         /* a description's first buffer: grown as needed */
#define DESCRIBE_MAX (64u << 20)    /* past this, out of memory */
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

/* As Redis's addACLLogEntry: an entry like one of the newest few within a
 * minute is counted there and moves to the head, else a new head. */
static void log_add(struct client *c, enum log_reason reason, const char *object, size_t olen,
                    const char *user, size_t ulen)
{
    char info[1024];
    struct client_counts n;
    client_counts(c, &n);
    clientcmd_describe(c, info, sizeof info);
    struct log_entry e = { 1, reason, n.multi >= 0, strndup(object, olen), strndup(user, ulen),
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
    struct worker_stats *s = &r->worker->stats;
    size_t len;
    const char *object;
    stat_inc(verdict == ACL_DENIED_CMD ? &s->acl_denied_cmd
             : verdict == ACL_DENIED_KEY ? &s->acl_denied_key : &s->acl_denied_channel);
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

/* What one of acluser.h's describers says (what: a selector or a user;
 * arg: describe_channels' list), in a buffer as large as it needs (free
 * it), or NULL out of memory. */
enum describe { DESCRIBE_COMMANDS, DESCRIBE_KEYS, DESCRIBE_CHANNELS, DESCRIBE_USER };

static char *describe(enum describe what, const void *of, int arg)
{
    for (size_t cap = DESCRIBE_FIRST; cap <= DESCRIBE_MAX; cap *= 2) {
        char *buf = malloc(cap);
        size_t n = 0;
        if (!buf)
            return NULL;
        switch (what) {
        case DESCRIBE_COMMANDS: n = acl_describe_commands(of, buf, cap); break;
        case DESCRIBE_KEYS: n = acl_describe_keys(of, buf, cap); break;
        case DESCRIBE_CHANNELS: n = acl_describe_channels(of, arg, buf, cap); break;
        case DESCRIBE_USER: n = acl_describe_user(of, buf, cap); break;
        }
        if (n + 1 < cap)                /* not cut */
            return buf;
        free(buf);
    }
    return NULL;
}

/* Add what describe says as a bulk string: 0, or -1 out of memory. */
static int add_described(struct evbuffer *out, enum describe what, const void *of)
{
    char *text = describe(what, of, 0);
    if (!text)
        return -1;
    resp_add_bulk_str(out, text);
    free(text);
    return 0;
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
        request_fail(r, REPLY_ERR_OOM);
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
    struct evbuffer *lines = evbuffer_new();
    int ok = v && lines;
    if (ok)
        resp_add_array(lines, a->nusers);
    for (int i = 0; ok && i < a->nusers; i++) {
        char *line = describe(DESCRIBE_USER, v[i], 0);
        ok = line && evbuffer_add_printf(lines, "$%zu\r\nuser %s %s\r\n",
                                         5 + strlen(v[i]->name) + 1 + strlen(line),
                                         v[i]->name, line) >= 0;
        free(line);
    }
    if (ok)
        evbuffer_add_buffer(request_out(r), lines);
    free(v);
    if (lines)
        evbuffer_free(lines);
    if (ok)
        request_finish(r);
    else
        request_fail(r, REPLY_ERR_OOM);
}

/* commands, keys, channels of s, as GETUSER gives them */
static int selector_fields(struct evbuffer *out, const struct acl_selector *s)
{
    resp_add_bulk_str(out, "commands");
    if (add_described(out, DESCRIBE_COMMANDS, s) < 0)
        return -1;
    resp_add_bulk_str(out, "keys");
    if (add_described(out, DESCRIBE_KEYS, s) < 0)
        return -1;
    resp_add_bulk_str(out, "channels");
    return add_described(out, DESCRIBE_CHANNELS, s);
}

static void acl_getuser(struct request *r)
{
    size_t len;
    const char *name = request_arg(r, 2, &len);
    const struct acl_user *u = acl_user_named(users_of(r), name, len);
    struct evbuffer *out = evbuffer_new();
    enum resp_proto p = request_resp(r);
    char hex[2 * ACL_DIGEST_LEN + 1];
    if (!out) {
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    if (!u) {
        resp_add_null(request_out(r), p);
        evbuffer_free(out);
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
        acl_hex(u->passwords[i], ACL_DIGEST_LEN, hex);
        resp_add_bulk_str(out, hex);
    }
    int ok = selector_fields(out, &u->selectors[0]) == 0;
    resp_add_bulk_str(out, "selectors");
    resp_add_array(out, u->nselectors - 1);
    for (int i = 1; ok && i < u->nselectors; i++) {
        resp_add_map(out, p, 3);
        ok = selector_fields(out, &u->selectors[i]) == 0;
    }
    if (ok)
        evbuffer_add_buffer(request_out(r), out);
    evbuffer_free(out);
    if (ok)
        request_finish(r);
    else
        request_fail(r, REPLY_ERR_OOM);
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
    const struct learned_set *set = r->worker->topo->learned;
    const struct command *cmd = command_lookup(cname, clen);
    if (!cmd) {                         /* one the cluster taught (learned.h) */
        const struct learned_command *l = learned_find(set, cname, clen);
        cmd = l ? l->cmd : NULL;
    }
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
    const struct command *cluster = learned_entry(set, cmd);
    if (!command_arity_ok(cluster, r->argc - 3)) {
        char msg[200];
        request_fail(r, reply_arity(msg, sizeof msg, cmd->fullname));
        return;
    }
    int pos;
    enum acl_verdict v = acl_check(u, cmd, cluster, r->data, r->args + 3, r->argc - 3, &pos);
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

/* ---- SETUSER, DELUSER, LOAD, SAVE (acl-mutable yes) ---- */

static int mutable_or_refuse(struct request *r)
{
    if (r->worker->cfg->acl_mutable)
        return 1;
    fail_printf(r, "ERR '%s' changes the proxy's users, and acl-mutable is no: edit the "
                "config (user lines, aclfile) and reload the proxy (SIGHUP), or set "
                "acl-mutable yes", r->cmd->fullname);
    return 0;
}

/* A deep copy of n users, with room for one more; NULL out of memory. */
static struct config_user *users_copy(const struct config_user *from, int n)
{
    struct config_user *to = calloc((size_t)n + 1, sizeof *to);
    for (int i = 0; to && i < n; i++) {
        to[i].aclfile_form = from[i].aclfile_form;
        to[i].argv = calloc((size_t)from[i].argc + 1, sizeof *to[i].argv);
        if (!to[i].argv) {
            config_users_free(to, i);
            return NULL;
        }
        for (int k = 0; k < from[i].argc; k++) {
            if (!(to[i].argv[k] = strdup(from[i].argv[k]))) {
                to[i].argc = k;
                config_users_free(to, i + 1);
                return NULL;
            }
        }
        to[i].argc = from[i].argc;
    }
    return to;
}

static int user_index(const struct config_user *users, int n, const char *name, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(users[i].argv[0]) == len && memcmp(users[i].argv[0], name, len) == 0)
            return i;
    return -1;
}

/* Make users (taken over) the proxy's, on every worker: 0, or -1 with r
 * answered. Under users_lock. */
static int users_publish(struct request *r, struct config_user *users, int nusers,
                         int logout_all, int own_default_password)
{
    struct proxy *p = r->worker->proxy;
    char err[400];
    struct config_snapshot *s = snapshot_with_users(p->users_snap, users, nusers,
                                                    p->users_snap->generation,
                                                    worker_layout(r->worker),
                                                    own_default_password, err, sizeof err);
    if (!s) {
        fail_printf(r, "ERR %s", err);
        return -1;
    }
    s->logout_all = logout_all;
    s->keep_off = !logout_all;
    snapshot_unref(p->users_snap);
    p->users_snap = s;
    thread_share_config(r->worker, s);
    return 0;
}

/* The users of the newest snapshot with rules (taken: their slots set to
 * NULL) appended to the line of users[at], or to a new line made from
 * `line` when at is -1, published as users_publish does: 0, or -1 with r
 * answered. Under users_lock. */
static int users_with_rules(struct request *r, int at, const struct config_user *line,
                            char **rules, int nrules, int own_default_password)
{
    const struct config_snapshot *base = r->worker->proxy->users_snap;
    int nusers = base->nusers;
    struct config_user *users = users_copy(base->users, nusers);
    char **grown = NULL;
    if (users && at < 0) {
        struct config_user *one = users_copy(line, 1);
        if (one) {
            users[at = nusers++] = one[0];
            free(one);
        }
    }
    if (users && at >= 0)
        grown = realloc(users[at].argv, sizeof *grown * (size_t)(users[at].argc + nrules));
    if (!grown) {
        config_users_free(users, nusers);
        request_fail(r, REPLY_ERR_OOM);
        return -1;
    }
    users[at].argv = grown;
    for (int i = 0; i < nrules; i++) {
        grown[users[at].argc++] = rules[i];
        rules[i] = NULL;
    }
    return users_publish(r, users, nusers, 0, own_default_password);
}

/* the default user without a line of its own: as acl.h makes it */
static char *default_argv[] = { "default", "nopass", "allkeys", "allchannels", "allcommands" };
static const struct config_user default_line = { default_argv, 5, 0 };

int aclcmd_set_requirepass(struct request *r, const char *pass, size_t len)
{
    struct proxy *p = r->worker->proxy;
    char *rules[2] = { strdup("resetpass"), NULL };
    if (len > 0 && (rules[1] = malloc(len + 2)) != NULL) {
        rules[1][0] = '>';
        memcpy(rules[1] + 1, pass, len);
        rules[1][len + 1] = '\0';
    } else if (len == 0) {
        rules[1] = strdup("nopass");
    }
    if (!rules[0] || !rules[1]) {
        free(rules[0]);
        free(rules[1]);
        request_fail(r, REPLY_ERR_OOM);
        return -1;
    }
    pthread_mutex_lock(&p->users_lock);
    const struct config_snapshot *base = p->users_snap;
    int at = user_index(base->users, base->nusers, "default", 7);
    int rc = users_with_rules(r, at, &default_line, rules, 2, 1);
    pthread_mutex_unlock(&p->users_lock);
    free(rules[0]);
    free(rules[1]);
    return rc;
}

/* The words of "(..." that never close, as Redis names them. */
static int unmatched_selector(struct request *r, int from)
{
    int open = -1;
    for (int i = from; i < r->argc; i++) {
        size_t len;
        const char *a = request_arg(r, i, &len);
        if (open < 0 && len > 0 && a[0] == '(' && a[len - 1] != ')')
            open = i;
        else if (open >= 0 && len > 0 && a[len - 1] == ')')
            open = -1;
    }
    if (open < 0)
        return 0;
    size_t len;
    const char *a = request_arg(r, open, &len);
    fail_printf(r, "ERR Unmatched parenthesis in acl selector starting at '%.*s'.",
                (int)(len > 128 ? 128 : len), a);
    return 1;
}

/* r's arguments from `from` as NUL-ended strings (malloc'd). */
static char **args_dup(struct request *r, int from, int *n)
{
    *n = r->argc - from;
    char **v = calloc((size_t)*n + 1, sizeof *v);
    for (int i = 0; v && i < *n; i++) {
        size_t len;
        const char *a = request_arg(r, from + i, &len);
        if (memchr(a, '\0', len) || !(v[i] = strndup(a, len))) {
            acl_rules_free(v, i);
            return NULL;
        }
    }
    return v;
}

/* Each rule onto the user as it is now, with Redis's reason at the first
 * that fails: 0, or -1 with r answered. */
static int setuser_check(struct request *r, const struct config_user *line, const char *name,
                         char **rules, int n)
{
    struct acl_user u;
    char why[300] = "";
    const struct config *c = r->worker->cfg;
    const char *requirepass = r->worker->proxy->users_snap->requirepass;     /* users_lock */
    int rc = line ? acl_user_from_line(&u, line, strcmp(name, "default") == 0 ? requirepass
                                                                               : NULL,
                                       c, NULL, why, sizeof why)
                  : acl_user_init(&u, name);
    for (int i = 0; rc == 0 && i < n; i++)
        if ((rc = acl_user_apply_setuser(&u, rules[i], why, sizeof why)) < 0)
            fail_printf(r, "ERR Error in ACL SETUSER modifier '%.128s': %s", rules[i], why);
    if (rc < 0 && !r->done)
        fail_printf(r, "ERR %s", why[0] ? why : "out of memory");
    acl_user_free(&u);
    return rc;
}

/* ACL SETUSER name [rule ...]: the rules onto the user (a new one starts
 * off, with nothing), as Redis applies them. */
static void acl_setuser(struct request *r)
{
    struct proxy *p = r->worker->proxy;
    char **words, **rules = NULL, *uname = NULL, why[200];
    int nwords, nrules, at;
    size_t len;
    const char *name = request_arg(r, 2, &len);
    if (!mutable_or_refuse(r) || unmatched_selector(r, 3))
        return;
    if (len == 0 || memchr(name, ' ', len) || memchr(name, '\0', len)) {
        request_fail(r, "ERR Usernames can't contain spaces or null characters");
        return;
    }
    words = args_dup(r, 3, &nwords);
    nrules = words ? acl_rules_merge(words, nwords, &rules, why, sizeof why) : -1;
    acl_rules_free(words, nwords);
    if (nrules < 0 || !(uname = strndup(name, len))) {
        free(uname);
        acl_rules_free(rules, nrules < 0 ? 0 : nrules);
        request_fail(r, REPLY_ERR_OOM);
        return;
    }
    pthread_mutex_lock(&p->users_lock);
    const struct config_snapshot *base = p->users_snap;
    at = user_index(base->users, base->nusers, name, len);
    const struct config_user *line = at >= 0 ? &base->users[at]
                                   : strcmp(uname, "default") == 0 ? &default_line : NULL;
    if (setuser_check(r, line, uname, rules, nrules) < 0)
        goto done;
    /* a new user: as an aclfile line, or the default's own */
    if (users_with_rules(r, at, line ? line : &(struct config_user){ &uname, 1, 1 }, rules,
                         nrules, 0) == 0) {
        resp_add_simple(request_out(r), "OK");
        request_finish(r);
    }
done:
    pthread_mutex_unlock(&p->users_lock);
    free(uname);
    acl_rules_free(rules, nrules);
}

/* ACL DELUSER name [name ...]: how many were deleted; their connections
 * close. */
static void acl_deluser(struct request *r)
{
    struct proxy *p = r->worker->proxy;
    if (!mutable_or_refuse(r))
        return;
    for (int i = 2; i < r->argc; i++) {
        size_t len;
        const char *a = request_arg(r, i, &len);
        if (len == 7 && memcmp(a, "default", 7) == 0) {
            request_fail(r, "ERR The 'default' user cannot be removed");
            return;
        }
    }
    pthread_mutex_lock(&p->users_lock);
    const struct config_snapshot *base = p->users_snap;
    struct config_user *users = users_copy(base->users, base->nusers);
    int nusers = base->nusers, deleted = 0;
    for (int i = 2; users && i < r->argc; i++) {
        size_t len;
        const char *a = request_arg(r, i, &len);
        int at = user_index(users, nusers, a, len);
        if (at < 0)
            continue;
        if (strcmp(users[at].argv[0], r->client->user->name) == 0)
            client_close_after_replies(r->client);     /* as Redis: after this reply */
        for (int k = 0; k < users[at].argc; k++)
            free(users[at].argv[k]);
        free(users[at].argv);
        memmove(&users[at], &users[at + 1], sizeof *users * (size_t)(nusers - at - 1));
        nusers--;
        deleted++;
    }
    if (!users) {
        request_fail(r, REPLY_ERR_OOM);
    } else if (deleted == 0) {
        config_users_free(users, nusers);
        resp_add_integer(request_out(r), 0);
        request_finish(r);
    } else if (users_publish(r, users, nusers, 0, 0) == 0) {
        resp_add_integer(request_out(r), deleted);
        request_finish(r);
    }
    pthread_mutex_unlock(&p->users_lock);
}

static const char no_aclfile[] =
    "ERR This Redis instance is not configured to use an ACL file. You may want to specify "
    "users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a "
    "Redis configuration file set) in order to store users in the Redis configuration.";

/* ACL LOAD: the aclfile read again; as Redis, every connection of a user
 * other than default closes (this one after its reply). */
static void acl_load(struct request *r)
{
    struct proxy *p = r->worker->proxy;
    const char *path = r->worker->cfg->aclfile;
    if (!mutable_or_refuse(r))
        return;
    if (!path) {
        request_fail(r, no_aclfile);
        return;
    }
    struct config_user *file = NULL;
    int nfile = 0;
    char err[400];
    if (config_read_aclfile(path, &file, &nfile, err, sizeof err) < 0) {
        fail_printf(r, "ERR %s", err);
        return;
    }
    pthread_mutex_lock(&p->users_lock);
    const struct config_snapshot *base = p->users_snap;
    struct config_user *users = calloc((size_t)(base->nusers + nfile) + 1, sizeof *users);
    int n = 0, clash = -1;
    for (int i = 0; users && i < base->nusers; i++)     /* the config's own user lines */
        if (!base->users[i].aclfile_form) {
            struct config_user *one = users_copy(&base->users[i], 1);
            if (one)
                users[n++] = one[0];
            free(one);
        }
    for (int i = 0; users && i < nfile; i++) {
        if (clash < 0 && user_index(users, n, file[i].argv[0], strlen(file[i].argv[0])) >= 0)
            clash = i;
        users[n++] = file[i];
    }
    free(file);
    if (!users) {
        request_fail(r, REPLY_ERR_OOM);
    } else if (clash >= 0) {
        fail_printf(r, "ERR %.200s: user '%s' is also defined by a user line", path,
                    users[n - nfile + clash].argv[0]);
        config_users_free(users, n);
    } else {
        if (r->client->authenticated && strcmp(r->client->user->name, "default") != 0)
            client_close_after_replies(r->client);
        if (users_publish(r, users, n, 1, 0) == 0) {
            resp_add_simple(request_out(r), "OK");
            request_finish(r);
        }
    }
    pthread_mutex_unlock(&p->users_lock);
}

/* ACL SAVE: every user, as ACL LIST gives it, into the aclfile (a new file
 * renamed over it). */
static void acl_save(struct request *r)
{
    struct proxy *p = r->worker->proxy;
    const char *path = r->worker->cfg->aclfile;
    char tmp[4096];
    if (!mutable_or_refuse(r))
        return;
    if (!path) {
        request_fail(r, no_aclfile);
        return;
    }
    pthread_mutex_lock(&p->users_lock);
    const struct config_snapshot *base = p->users_snap;
    int lines = 0;
    for (int i = 0; i < base->nusers; i++)
        lines += !base->users[i].aclfile_form;
    if (lines) {
        pthread_mutex_unlock(&p->users_lock);
        request_fail(r, "ERR ACL SAVE would write the users of the config's user lines into "
                        "the aclfile, and a reload would define them twice: keep the users "
                        "in the aclfile alone");
        return;
    }
    const struct acl_user **v = users_sorted(base->acl);
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", path, (int)getpid());
    FILE *f = v ? fopen(tmp, "w") : NULL;
    int ok = f != NULL;
    for (int i = 0; ok && i < base->acl->nusers; i++) {
        char *line = describe(DESCRIBE_USER, v[i], 0);
        ok = line && fprintf(f, "user %s %s\n", v[i]->name, line) > 0;
        free(line);
    }
    if (f && fclose(f) != 0)
        ok = 0;
    if (ok && rename(tmp, path) != 0)
        ok = 0;
    if (!ok) {
        log_warning("acl", "ACL SAVE: cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        request_fail(r, "ERR There was an error trying to save the ACLs. Please check the "
                        "server logs for more information");
    } else {
        resp_add_simple(request_out(r), "OK");
        request_finish(r);
    }
    pthread_mutex_unlock(&p->users_lock);
    free(v);
}

static const struct route_entry aclcmd_routes[] = {
    ROUTE_LOCAL("acl|whoami", acl_whoami, TXC_PROXY),
    ROUTE_LOCAL("acl|users", acl_users, TXC_PROXY),
    ROUTE_LOCAL("acl|list", acl_list, TXC_PROXY),
    ROUTE_LOCAL("acl|getuser", acl_getuser, TXC_PROXY),
    ROUTE_LOCAL("acl|cat", acl_cat, TXC_PROXY),
    ROUTE_LOCAL("acl|dryrun", acl_dryrun, TXC_PROXY),
    ROUTE_LOCAL("acl|log", acl_log_cmd, TXC_PROXY),
    ROUTE_LOCAL("acl|setuser", acl_setuser, TXC_PROXY),
    ROUTE_LOCAL("acl|deluser", acl_deluser, TXC_PROXY),
    ROUTE_LOCAL("acl|load", acl_load, TXC_PROXY),
    ROUTE_LOCAL("acl|save", acl_save, TXC_PROXY),
};

void aclcmd_register(void)
{
    route_register(aclcmd_routes, (int)(sizeof aclcmd_routes / sizeof aclcmd_routes[0]));
    router_register_denied(denied);
}
