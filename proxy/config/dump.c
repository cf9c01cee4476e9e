/*
 * dump: the directives described (config_help) and a config written back
 * as a conf file (config_dump). See dump.h.
 */
#include <ctype.h>
#include <stddef.h>
#include <string.h>

#include "proxy/config/dump.h"

enum kind { K_INT, K_MEMORY, K_YESNO, K_OCTAL, K_STRING, K_SECRET, K_SPECIAL };

struct shown;
typedef void shower(const struct config *c, const struct shown *d, FILE *out);

struct shown {
    const char *group;          /* starts a group when not NULL */
    const char *name, *args, *help;
    enum kind kind;
    size_t offset;              /* the field, for every kind but K_SPECIAL */
    shower *show;               /* K_SPECIAL */
};

/* ---- writing values ---- */

/* One argument, quoted as the conf syntax reads it back when it must be. */
static void put_arg(FILE *out, const char *s)
{
    int plain = *s != '\0';
    for (const unsigned char *p = (const unsigned char *)s; *p && plain; p++)
        plain = isgraph(*p) && *p != '"' && *p != '\'' && *p != '\\';
    fputc(' ', out);
    if (plain) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (isprint(*p))
            fputc(*p, out);
        else
            fprintf(out, "\\x%02x", *p);
    }
    fputc('"', out);
}

/* A size in the largest binary unit that holds it whole (1gb, 64mb, 0). */
static void put_memory(FILE *out, long long v)
{
    static const struct { const char *unit; long long size; } units[] = {
        { "gb", 1LL << 30 }, { "mb", 1LL << 20 }, { "kb", 1LL << 10 },
    };
    for (size_t i = 0; v != 0 && i < sizeof units / sizeof *units; i++)
        if (v % units[i].size == 0) {
            fprintf(out, " %lld%s", v / units[i].size, units[i].unit);
            return;
        }
    fprintf(out, " %lld", v);
}

static void put_unset(FILE *out, const char *name)
{
    fprintf(out, "# %s (unset)\n", name);
}

/* "NAME ARG..." on a line of its own. */
static void put_line(FILE *out, const char *name, const char *const *args, int n)
{
    fputs(name, out);
    for (int i = 0; i < n; i++)
        put_arg(out, args[i]);
    fputc('\n', out);
}

#define FIELD(c, d, type) (*(const type *)((const char *)(c) + (d)->offset))

static void show_field(const struct config *c, const struct shown *d, FILE *out)
{
    static const char *const redacted = CONFIG_REDACTED;
    const char *s;
    switch (d->kind) {
    case K_INT:
        fprintf(out, "%s %d\n", d->name, FIELD(c, d, int));
        break;
    case K_OCTAL:
        fprintf(out, "%s %o\n", d->name, (unsigned)FIELD(c, d, int));
        break;
    case K_YESNO:
        fprintf(out, "%s %s\n", d->name, FIELD(c, d, int) ? "yes" : "no");
        break;
    case K_MEMORY:
        fputs(d->name, out);
        put_memory(out, FIELD(c, d, long long));
        fputc('\n', out);
        break;
    case K_STRING:
    case K_SECRET:
        s = FIELD(c, d, char *);
        if (!s)
            put_unset(out, d->name);
        else
            put_line(out, d->name, d->kind == K_SECRET ? &redacted : &s, 1);
        break;
    case K_SPECIAL:
        d->show(c, d, out);
        break;
    }
}

/* ---- the directives whose value is not one field ---- */

static void show_list(FILE *out, const char *name, char *const *v, int n)
{
    if (n == 0)
        put_unset(out, name);
    else
        put_line(out, name, (const char *const *)v, n);
}

static void show_admin_listen(const struct config *c, const struct shown *d, FILE *out)
{
    const char *v = c->admin_listen ? c->admin_listen : "off";
    put_line(out, d->name, &v, 1);
}

static void show_cluster(const struct config *c, const struct shown *d, FILE *out)
{
    show_list(out, d->name, c->cluster, c->ncluster);
}

static void show_users(const struct config *c, const struct shown *d, FILE *out)
{
    int shown = 0;
    for (int i = 0; i < c->nusers; i++) {
        const struct config_user *u = &c->users[i];
        if (u->aclfile_form)
            continue;           /* the aclfile's: its path is shown */
        fputs(d->name, out);
        for (int a = 0; a < u->argc; a++) {
            /* the password, and >password / <password rules */
            const char *w = u->argv[a];
            if (a == 1 && strcmp(w, "nopass") != 0)
                w = CONFIG_REDACTED;
            else if (a > 1 && (w[0] == '>' || w[0] == '<'))
                w = w[0] == '>' ? ">" CONFIG_REDACTED : "<" CONFIG_REDACTED;
            put_arg(out, w);
        }
        fputc('\n', out);
        shown++;
    }
    if (!shown)
        put_unset(out, d->name);
}

static void show_tls_auth(const struct config *c, const struct shown *d, FILE *out)
{
    fprintf(out, "%s %s\n", d->name, c->tls_auth_clients == TLS_VERIFY_NONE ? "no"
                                     : c->tls_auth_clients == TLS_VERIFY_OPTIONAL ? "optional"
                                                                                  : "yes");
}

static void show_output_limit(const struct config *c, const struct shown *d, FILE *out)
{
    int pubsub = strcmp(d->name, "client-output-buffer-limit-pubsub") == 0;
    fputs(d->name, out);
    put_memory(out, pubsub ? c->client_output_pubsub_hard_limit : c->client_output_hard_limit);
    put_memory(out, pubsub ? c->client_output_pubsub_soft_limit : c->client_output_soft_limit);
    fprintf(out, " %d\n", pubsub ? c->client_output_pubsub_soft_seconds
                                 : c->client_output_soft_seconds);
}

static void show_address_map(const struct config *c, const struct shown *d, FILE *out)
{
    if (c->naddress_map == 0)
        put_unset(out, d->name);
    for (int i = 0; i < c->naddress_map; i++) {
        const char *pair[2] = { c->address_map[i].from, c->address_map[i].to };
        put_line(out, d->name, pair, 2);
    }
}

static void show_layout_rules(const struct config *c, const struct shown *d, FILE *out)
{
    if (c->nlayout_rules == 0)
        put_unset(out, d->name);
    for (int i = 0; i < c->nlayout_rules; i++) {
        const struct config_layout_rules *r = &c->layout_rules[i];
        fputs(d->name, out);
        put_arg(out, r->path);
        for (int p = 0; p < r->nprefix; p++)
            put_arg(out, r->prefix[p]);
        fputc('\n', out);
    }
}

static void show_layout_prefix(const struct config *c, const struct shown *d, FILE *out)
{
    show_list(out, d->name, c->layout_prefix, c->nlayout_prefix);
}

static void show_script_map(const struct config *c, const struct shown *d, FILE *out)
{
    if (c->nscript_map == 0)
        put_unset(out, d->name);
    for (int i = 0; i < c->nscript_map; i++) {
        const char *pair[2] = { c->script_map[i].sha, c->script_map[i].path };
        put_line(out, d->name, pair, 2);
    }
}

static void show_log_level(const struct config *c, const struct shown *d, FILE *out)
{
    fprintf(out, "%s %s\n", d->name, config_log_level_name(c->log_level));
}

/* ---- the table ---- */

#define AT(f) offsetof(struct config, f)
#define FIELD_OF(group, name, args, help, kind, f) { group, name, args, help, kind, AT(f), NULL }
#define SPECIAL(group, name, args, help, fn) { group, name, args, help, K_SPECIAL, 0, fn }

static const struct shown table[] = {
    FIELD_OF("Network", "listen", "HOST:PORT", "where clients connect", K_STRING, listen),
    FIELD_OF(NULL, "unixsocket", "PATH", "also accept clients on a Unix socket", K_STRING,
             unixsocket),
    FIELD_OF(NULL, "unixsocketperm", "OCTAL", "the socket file's mode bits (0: the umask's)",
             K_OCTAL, unixsocketperm),
    SPECIAL(NULL, "admin-listen", "HOST:PORT|off", "/healthz, /readyz and /metrics",
            show_admin_listen),
    SPECIAL(NULL, "cluster", "HOST:PORT...", "cluster seed nodes (one at least)", show_cluster),
    FIELD_OF(NULL, "threads", "N", "worker threads, 1-64", K_INT, threads),
    FIELD_OF(NULL, "max-clients", "N", "most client connections at once", K_INT, max_clients),
    FIELD_OF(NULL, "timeout", "SECONDS", "close a client idle this long (0: never)", K_INT,
             timeout),
    FIELD_OF(NULL, "tcp-keepalive", "SECONDS", "TCP keepalive of client connections (0: off)",
             K_INT, tcp_keepalive),

    FIELD_OF("Security", "requirepass", "PASSWORD", "the password clients give with AUTH",
             K_SECRET, requirepass),
    SPECIAL(NULL, "user", "NAME PASSWORD|nopass RULE...", "a client user and what it may do, "
            "Redis's ACL rules (repeatable)", show_users),
    FIELD_OF(NULL, "aclfile", "PATH", "Redis's ACL file: more users, one `user NAME RULE...` "
             "a line", K_STRING, aclfile),
    FIELD_OF(NULL, "acl-mutable", "yes|no", "ACL SETUSER, DELUSER, LOAD and SAVE change the "
             "proxy's users", K_YESNO, acl_mutable),
    FIELD_OF(NULL, "cluster-user", "NAME", "the ACL user of the proxy's AUTH to nodes", K_STRING,
             cluster_user),
    FIELD_OF(NULL, "cluster-password", "PASSWORD", "the password of the proxy's AUTH to nodes",
             K_SECRET, cluster_password),
    FIELD_OF(NULL, "tls-listen", "HOST:PORT", "also accept TLS clients here", K_STRING,
             tls_listen),
    FIELD_OF(NULL, "tls-cert-file", "FILE", "the proxy's certificate chain (PEM)", K_STRING,
             tls_cert_file),
    FIELD_OF(NULL, "tls-key-file", "FILE", "its private key (PEM)", K_STRING, tls_key_file),
    FIELD_OF(NULL, "tls-ca-cert-file", "FILE", "the CA of client certificates", K_STRING,
             tls_ca_cert_file),
    SPECIAL(NULL, "tls-auth-clients", "yes|optional|no", "whether clients show a certificate",
            show_tls_auth),
    FIELD_OF(NULL, "cluster-tls", "yes|no", "TLS to every node", K_YESNO, cluster_tls),
    FIELD_OF(NULL, "cluster-tls-ca-cert-file", "FILE", "the CA of the nodes' certificates "
             "(unset: the system's)", K_STRING, cluster_tls_ca_cert_file),
    FIELD_OF(NULL, "cluster-tls-cert-file", "FILE", "the proxy's client certificate for nodes",
             K_STRING, cluster_tls_cert_file),
    FIELD_OF(NULL, "cluster-tls-key-file", "FILE", "its private key", K_STRING,
             cluster_tls_key_file),
    FIELD_OF(NULL, "cluster-tls-server-name", "NAME", "the name nodes' certificates carry "
             "(unset: the node's host)", K_STRING, cluster_tls_server_name),
    FIELD_OF(NULL, "cluster-tls-insecure", "yes|no", "skip the nodes' certificate checks",
             K_YESNO, cluster_tls_insecure),
    FIELD_OF(NULL, "enable-dangerous-commands", "yes|no", "allow FLUSHALL, CONFIG SET, ...",
             K_YESNO, enable_dangerous_commands),

    FIELD_OF("Scripts", "script-cache-max-bytes", "SIZE", "script bodies kept to answer "
             "NOSCRIPT (0: none)", K_MEMORY, script_cache_max_bytes),
    SPECIAL(NULL, "script-map", "SHA1 PATH", "run PATH's script for a legacy SHA1 (repeatable)",
            show_script_map),

    FIELD_OF("Limits", "client-query-buffer-limit", "SIZE", "the largest command", K_MEMORY,
             client_query_buffer_limit),
    FIELD_OF(NULL, "client-backlog-limit", "SIZE", "unanswered commands a client may hold "
             "before it is not read (0: none)", K_MEMORY, client_backlog_limit),
    FIELD_OF(NULL, "maxmemory-clients", "SIZE", "what all clients may hold; past it the "
             "largest are evicted (0: none)", K_MEMORY, maxmemory_clients),
    FIELD_OF(NULL, "proto-max-bulk-len", "SIZE", "the longest bulk string", K_MEMORY,
             proto_max_bulk_len),
    FIELD_OF(NULL, "slowlog-log-slower-than", "US", "a request this slow goes in SLOWLOG "
             "(-1: none)", K_INT, slowlog_log_slower_than),
    FIELD_OF(NULL, "slowlog-max-len", "N", "SLOWLOG entries the proxy keeps", K_INT,
             slowlog_max_len),
    SPECIAL(NULL, "client-output-buffer-limit", "HARD SOFT SECONDS", "unread replies a client "
            "may hold", show_output_limit),
    SPECIAL(NULL, "client-output-buffer-limit-pubsub", "HARD SOFT SECONDS", "the same for a "
            "subscribed client", show_output_limit),

    FIELD_OF("Cluster", "node-connect-timeout-ms", "MS", "connect timeout to a node", K_INT,
             node_connect_timeout_ms),
    FIELD_OF(NULL, "node-timeout-ms", "MS", "longest a node may answer nothing before its "
             "commands fail", K_INT, node_timeout_ms),
    FIELD_OF(NULL, "topology-refresh-ms", "MS", "periodic slot map refresh (0: off)", K_INT,
             topology_refresh_ms),
    FIELD_OF(NULL, "cluster-wait-at-start", "yes|no", "wait for the cluster at start (no: "
             "exit 1)", K_YESNO, cluster_wait_at_start),
    FIELD_OF(NULL, "max-redirects", "N", "MOVED/ASK followed per command before backoff",
             K_INT, max_redirects),
    FIELD_OF(NULL, "retry-attempts", "N", "retries of a command that did not run", K_INT,
             retry_attempts),
    FIELD_OF(NULL, "retry-base-ms", "MS", "the first retry's delay, doubled each retry", K_INT,
             retry_base_ms),
    FIELD_OF(NULL, "retry-max-ms", "MS", "the longest retry delay", K_INT, retry_max_ms),
    FIELD_OF(NULL, "dedicated-connections-max", "N", "per worker: node connections for WATCH "
             "and blocking commands", K_INT, dedicated_connections_max),
    FIELD_OF(NULL, "round-pause-us", "US", "pause after a busy event-loop round (0: off)",
             K_INT, round_pause_us),
    FIELD_OF(NULL, "io-uring", "yes|no", "batch socket reads and writes with io_uring", K_YESNO,
             io_uring),
    FIELD_OF(NULL, "worker-nice", "N", "added to the workers' niceness, 0-19", K_INT,
             worker_nice),
    SPECIAL(NULL, "address-map", "FROM TO...", "connect to TO when the cluster announces FROM",
            show_address_map),

    SPECIAL("Key layout", "layout-rules", "FILE [PREFIX...]", "a key layout rules file and the "
            "prefixes it serves (repeatable)", show_layout_rules),
    SPECIAL(NULL, "layout-prefix", "P...", "the prefixes of rules files that name none",
            show_layout_prefix),
    FIELD_OF(NULL, "layout-allow-legacy-data", "yes|no", "start on a prefix that holds legacy "
             "keys", K_YESNO, layout_allow_legacy_data),

    SPECIAL("Logging", "log-level", "debug|verbose|notice|warning", "the least level logged",
            show_log_level),
    FIELD_OF(NULL, "log-file", "FILE", "append the log here (unset: stderr)", K_STRING,
             log_file),

    FIELD_OF("Lifecycle", "config-watch", "yes|no", "reload when the config's files change",
             K_YESNO, config_watch),
    FIELD_OF(NULL, "readiness-grace-ms", "MS", "a master down this long turns /readyz "
             "503 (0: at once)", K_INT, readiness_grace_ms),
    FIELD_OF(NULL, "liveness-stall-ms", "MS", "a worker stalled this long fails /healthz",
             K_INT, liveness_stall_ms),
    FIELD_OF(NULL, "shutdown-timeout-ms", "MS", "longest SIGTERM drain", K_INT,
             shutdown_timeout_ms),
    FIELD_OF(NULL, "daemonize", "yes|no", "run in the background (not as PID 1)", K_YESNO,
             daemonize),
    FIELD_OF(NULL, "pidfile", "FILE", "holds the PID while the proxy runs", K_STRING, pidfile),
};

#define NTABLE (sizeof table / sizeof table[0])

size_t config_dump_count(void)
{
    return NTABLE;
}

const char *config_dump_name(size_t i)
{
    return i < NTABLE ? table[i].name : NULL;
}

void config_help(FILE *out)
{
    for (size_t i = 0; i < NTABLE; i++) {
        char left[64];
        if (table[i].group)
            fprintf(out, "%s%s:\n", i ? "\n" : "", table[i].group);
        snprintf(left, sizeof left, "--%s %s", table[i].name, table[i].args);
        if (strlen(left) > 44)      /* the help on a line of its own */
            fprintf(out, "  %s\n  %-44s %s\n", left, "", table[i].help);
        else
            fprintf(out, "  %-44s %s\n", left, table[i].help);
    }
}

void config_dump(const struct config *c, FILE *out)
{
    for (size_t i = 0; i < NTABLE; i++) {
        if (table[i].group)
            fprintf(out, "%s# %s\n", i ? "\n" : "", table[i].group);
        show_field(c, &table[i], out);
    }
}
