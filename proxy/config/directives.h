/*
 * directives: every directive of the proxy, in one table, and the settings
 * they fill (struct config). For each directive the table says how it is
 * read (its setter and the range of its values), written back by
 * --dump-config (its kind, or a writer of its own), described by --help
 * (its group, arguments and help), and which field of struct config it
 * fills. config.h reads the three sources into it (file, environment,
 * command line), dump.h writes it back.
 */
#ifndef TAGPROXY_DIRECTIVES_H
#define TAGPROXY_DIRECTIVES_H

#include <stddef.h>
#include <stdio.h>

#include "lib/base/log.h"
#include "lib/net/tls.h"

/* What --dump-config writes in place of a secret. */
#define CONFIG_REDACTED "<redacted>"

/* One `layout-rules FILE [PREFIX ...]` line. */
struct config_layout_rules {
    char  *path;
    char **prefix;      /* its own prefixes; none: it serves layout-prefix's */
    int    nprefix;
};

struct config_address_map {
    char *from;     /* "host:port" as the cluster announces it */
    char *to;       /* "host:port" the proxy connects to instead */
};

/* One `user NAME PASSWORD [RULE ...]` line (acl.h): argv[0] the name,
 * argv[1] the password or "nopass", the rest the rules, checked at load;
 * or (aclfile_form) an aclfile's `user NAME [RULE ...]`: no password word. */
struct config_user {
    char **argv;
    int argc;
    int aclfile_form;
};

/* script-map SHA1 PATH: the file is read when the config loads. */
struct config_script_map {
    char  *sha;     /* the legacy script's SHA1, 40 lowercase hex digits */
    char  *path;
    char  *body;    /* PATH's bytes */
    size_t len;
};

/* The most workers `threads` accepts; arrays with one slot per worker are
 * sized by this, not by the configured count. */
#define CONFIG_MAX_THREADS 64
#define REPLICA_ACKS_TIMEOUT_MS 1000   /* replica-acks without a timeout */

struct config {
    char  *listen;                      /* host:port, default 127.0.0.1:6380 */
    char  *admin_listen;                /* host:port of /healthz /readyz /metrics,
                                           default 127.0.0.1:8380; NULL: off */
    char **cluster;                     /* seed host:port, in the order given */
    int    ncluster;
    int    threads;                     /* workers, default 1 */
    char  *requirepass;                 /* NULL: no password */
    struct config_user *users;          /* user lines, then the aclfile's, in order */
    int    nusers;
    char  *aclfile;                     /* Redis's ACL file the users came from, NULL: none */
    char  *unixsocket;                  /* path of a Unix socket to listen on too,
                                           NULL: none (unixsock.h) */
    int    unixsocketperm;              /* its mode bits, 0: as the umask leaves them */
    char  *tls_listen;                  /* host:port for TLS clients, NULL: none */
    char  *tls_cert_file, *tls_key_file, *tls_ca_cert_file;
    enum tls_verify tls_auth_clients;   /* default yes (required), as Redis */
    int    cluster_tls;                 /* default no */
    char  *cluster_tls_ca_cert_file;    /* NULL: the system's CAs */
    char  *cluster_tls_cert_file, *cluster_tls_key_file;  /* client certificate */
    char  *cluster_tls_server_name;     /* NULL: the node's host */
    int    cluster_tls_insecure;        /* default no */
    char  *cluster_user;                /* NULL: AUTH password only */
    char  *cluster_password;            /* NULL: no AUTH to nodes */
    int    max_clients;                 /* default 10000 */
    int    timeout;                     /* seconds a client may idle, 0: no limit (default) */
    int    tcp_keepalive;               /* seconds, TCP keepalive of clients, 0: off; 300 */
    int    slowlog_log_slower_than;     /* microseconds, default 10000; -1: off */
    int    slowlog_max_len;             /* entries kept, default 128 */
    int    tracking_table_max_keys;     /* keys client-side caching tracks per worker,
                                           default 1000000 (Redis's); 0: no bound */
    int    tracking_node_bcast;         /* the masters push every key written to the
                                           tracking connections (BCAST), not the keys
                                           read; default 0 */
    long long client_query_buffer_limit;   /* bytes, default 1gb */
    long long client_backlog_limit;        /* bytes of unanswered commands, 0 = none; 16mb */
    long long maxmemory_clients;           /* bytes all clients hold, 0 = none (default) */
    long long proto_max_bulk_len;          /* bytes, default 512mb */
    long long client_output_hard_limit;    /* bytes, 0 = none; default 256mb */
    long long client_output_soft_limit;    /* bytes, 0 = none; default 64mb */
    int       client_output_soft_seconds;  /* default 60 */
    long long client_output_pubsub_hard_limit;  /* subscribed clients; default 32mb */
    long long client_output_pubsub_soft_limit;  /* default 8mb */
    int       client_output_pubsub_soft_seconds; /* default 60 */
    int    node_connect_timeout_ms;     /* default 1000 */
    int    node_timeout_ms;             /* default 5000 */
    int    slow_command_timeout_ms;     /* a node alive elsewhere may hold a command this
                                           long (cluster/node.h); default 60000 */
    int    topology_refresh_ms;         /* default 10000; 0 disables the timer */
    int    cluster_wait_at_start;       /* default 1: no slot map at start is waited for */
    int    max_redirects;               /* default 5 */
    int    retry_attempts;              /* default 10 */
    int    retry_base_ms;               /* default 10 */
    int    retry_max_ms;                /* default 500 */
    int    replica_acks;                /* replicas a write waits for (0: none) */
    int    replica_acks_timeout_ms;     /* for them, at most (WAIT's timeout) */
    int    read_from;                   /* enum config_read_from: where reads go */
    int    replica_max_lag_ms;          /* a replica further behind takes no reads; default 1000 */
    int    dedicated_connections_max;   /* per worker: WATCH and blocking commands; default 256 */
    int    round_pause_us;              /* pause after a busy event-loop round (io.h); default 30 */
    int    io_uring;                    /* batch socket reads and writes (iobatch.h); default yes */
    int    worker_nice;                 /* added to the workers' niceness (worker.c); default 5 */
    struct config_address_map *address_map;
    int    naddress_map;
    int    enable_dangerous_commands;   /* default 0 */
    int    acl_mutable;                 /* ACL SETUSER/DELUSER/LOAD/SAVE change the
                                           proxy's users; default 0: refused */
    struct config_layout_rules *layout_rules;   /* NULL: no key rewriting */
    int    nlayout_rules;
    char **layout_prefix;               /* the prefixes of files that name none, in order */
    int    nlayout_prefix;
    int    layout_allow_legacy_data;    /* default 0: refuse a prefix holding legacy keys */
    long long script_cache_max_bytes;   /* client script bodies kept, default 16mb */
    struct config_script_map *script_map;
    int    nscript_map;
    enum log_level log_level;           /* default notice */
    char  *log_file;                    /* NULL: stderr */
    int    config_watch;                /* reload when the config's files change; yes */
    int    readiness_grace_ms;          /* a master down this long turns /readyz 503 once
                                           the proxy has been ready; default 30000 */
    int    liveness_stall_ms;           /* a worker's loop stalled this long fails
                                           /healthz; default 10000 */
    int    shutdown_timeout_ms;         /* SIGTERM: longest drain, default 5000 */
    int    daemonize;                   /* default 0: run in the foreground */
    char  *pidfile;                     /* NULL: none */
    char  *path;                        /* the config file, NULL if none */
};

/* The sources, in the order they are applied (config.h). */
enum config_source { SOURCE_FILE, SOURCE_ENV, SOURCE_ARGV };

#define CONFIG_WHY_MAX   256
#define CONFIG_WHERE_MAX 1024

/* A config being read from its sources: handed out only whole. */
struct config_loader {
    struct config c;            /* being built */
    int source;                 /* the source being applied (enum config_source) */
    int cluster_source;         /* who filled c.cluster; -1: nobody yet (a later
                                   source replaces a list, one source appends) */
    int address_map_source;
    int layout_prefix_source;
    int layout_rules_source;
    int users_source;
    int script_map_source;
    char log_file_where[CONFIG_WHERE_MAX];  /* where log-file was last set */
    char why[CONFIG_WHY_MAX];   /* a setter's complaint, without the where */
};

struct directive;

/* Reads argv into l->c: 0, or -1 with l->why filled. */
typedef int directive_setter(struct config_loader *l, const struct directive *d,
                             int argc, char **argv);

/* Writes d's value in c as conf lines. */
typedef void directive_writer(const struct config *c, const struct directive *d, FILE *out);

/* How --dump-config writes a value that is one field. */
enum directive_kind { K_INT, K_MEMORY, K_YESNO, K_OCTAL, K_STRING, K_SECRET, K_SPECIAL };

struct directive {
    const char *name;
    const char *args;           /* --help: its arguments ("HOST:PORT") */
    const char *group;          /* --help and --dump-config: starts a group, or NULL */
    const char *help;           /* --help: what it does */
    int min_args, max_args;     /* max_args -1: no limit, -2: pairs */
    directive_setter *set;
    size_t offset;              /* its field, for the generic setters and kinds */
    long long min, max;         /* accepted range of integers and sizes */
    enum directive_kind kind;
    directive_writer *write;    /* K_SPECIAL */
};

/* Directive i, in --help's order; NULL past the last. */
const struct directive *directive_at(size_t i);

/* The name of directive i; NULL past the last. */
const char *config_directive_name(size_t i);

/* The directive called name (any case), or NULL. */
const struct directive *directive_find(const char *name);

/* argc arguments applied to l as d, where the error message says (a file's
 * line, "env X", "argv --x"): 0, or -1 with "WHERE: what is wrong" in err. */
int directive_apply(struct config_loader *l, const struct directive *d, const char *where,
                    int argc, char **argv, char *err, size_t errlen);

/* Whether CONFIG SET may change d in a running proxy (a number or a size). */
int directive_is_live(const struct directive *d);

/* The byte that cuts d's environment value into lines, or 0 (layout-rules:
 * a file a line, whose lines have several words each). */
char directive_env_separator(const struct directive *d);

/* d's value in c, as conf lines (secrets redacted). */
void directive_show(const struct config *c, const struct directive *d, FILE *out);

/* l made ready: the defaults, no list filled by any source yet. */
void config_loader_init(struct config_loader *l);

/*
 * Fill c with the defaults (no file). c->listen and c->admin_listen then
 * point to static storage, which config_free() knows and does not free;
 * nothing else is allocated.
 */
void config_defaults(struct config *c);

/* Free what config_load() allocated and reset c to the defaults. */
void config_free(struct config *c);

/*
 * Parse sizes as redis.conf does: 100, 100b, 1k, 1kb, 5mb, 1gb (k=1000,
 * kb=1024, m, mb, g, gb; case-insensitive). Digits only, no sign, no
 * fraction, no overflow. Returns 0 or -1 (*out untouched).
 */
int config_parse_memory(const char *s, long long *out);

/* The users of Redis's ACL file at path (aclfile_form), checked as the
 * aclfile directive checks them: 0, or -1 with the reason (FILE:LINE). */
int config_read_aclfile(const char *path, struct config_user **users, int *n, char *err,
                        size_t errlen);

/* Free n users and their array. */
void config_users_free(struct config_user *users, int n);

/* "debug", "verbose", "notice", "warning"; "?" for anything else. */
const char *config_log_level_name(enum log_level l);

/* read-from: where read-only commands go (readfrom.h). */
enum config_read_from {
    READ_FROM_MASTER,           /* every command to the masters */
    READ_FROM_REPLICA,          /* reads to replicas only: none usable is an error */
    READ_FROM_PREFER_REPLICA    /* reads to replicas, to the master when none is usable */
};
const char *config_read_from_name(int read_from);

#endif
