/*
 * config: tagproxy's directives.
 *
 * Redis-style, one directive per line ("listen 127.0.0.1:6380"), '#' starts a
 * comment, arguments may be quoted as in redis.conf. Every directive can also
 * be given as TAGPROXY_<NAME> in the environment (dashes become underscores,
 * upper case) and as --name value on the command line. Sources are applied in
 * that order, so a later one wins: file, then environment, then command line.
 * Repeatable directives (cluster, address-map, script-map, layout-rules)
 * append within one source, and a later source that gives them replaces
 * the earlier list as a whole. One
 * line may carry several seeds ("cluster a:1 b:2") or several address-map
 * FROM TO pairs, so that one environment variable can hold a whole list.
 *
 * A bad directive is reported as "FILE:LINE: what is wrong" (for the
 * environment "env TAGPROXY_X: ...", for the command line "argv --x: ...")
 * and nothing is applied: config_load() either fills the whole struct or fails.
 *
 * Quoting follows redis.conf: "double quotes" with \n \r \t \b \a \xHH and
 * \<char> escapes, 'single quotes' with \' only; a closing quote must be
 * followed by a blank or the end of the line. A line whose first non-blank
 * character is '#' is a comment ('#' elsewhere is part of a value).
 *
 * The environment value is split like the arguments of a config line
 * (TAGPROXY_CLUSTER="a:1 b:2" gives two seeds; an empty value is one empty
 * argument). TAGPROXY_* variables that name no directive are ignored
 * (Kubernetes injects TAGPROXY_PORT and the like for a service of that name).
 * On the command line each word after --name is one argument taken literally;
 * the first word after --name is always an argument (so a value may start
 * with "--", as in redis-server 7), later ones up to the next "--" word.
 *
 * Empty requirepass, cluster-user, cluster-password, log-file and pidfile
 * mean unset. layout-prefix is repeatable like cluster (several on one line
 * too); each is checked by layout_check_prefix(). layout-rules FILE
 * [PREFIX ...] is repeatable like cluster, a file a line; a lone empty FILE
 * empties the list. In the environment, ';' separates its lines
 * (TAGPROXY_LAYOUT_RULES="a.rules bot;b.rules courier").
 * `user` lines are repeatable like cluster (append within a source); a name
 * given twice is an error.
 *
 * Once running, the proxy reads the same sources again on SIGHUP
 * (lifecycle.h): what a worker uses per command or per new connection
 * applies from then on; listen, threads, cluster, daemonize, pidfile and
 * log-file need a restart.
 * admin-listen "off" turns the admin endpoint off (admin_listen NULL).
 */
#ifndef TAGPROXY_CONFIG_H
#define TAGPROXY_CONFIG_H

#include <stddef.h>

#include "lib/base/log.h"
#include "lib/net/tls.h"

struct layout;

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
    int    topology_refresh_ms;         /* default 10000; 0 disables the timer */
    int    cluster_wait_at_start;       /* default 1: no slot map at start is waited for */
    int    max_redirects;               /* default 5 */
    int    retry_attempts;              /* default 10 */
    int    retry_base_ms;               /* default 10 */
    int    retry_max_ms;                /* default 500 */
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

/*
 * Fill c with the defaults (no file). c->listen and c->admin_listen then
 * point to static storage, which config_free() knows and does not free;
 * nothing else is allocated.
 */
void config_defaults(struct config *c);

/*
 * Build a config from the defaults, then the file (path may be NULL), then
 * environ-style envp (NULL-terminated, may be NULL), then argv-style
 * options ("--name", "value", ...; argc entries). On success returns 0 and
 * *c owns its strings (release with config_free). On error returns -1,
 * writes a one-line "WHERE: what is wrong" message into err and leaves *c
 * untouched. WHERE is "FILE:LINE" ("FILE" when the file cannot be read),
 * "env TAGPROXY_NAME" or "argv --name". A log-file must be openable for
 * append (it is created if missing, then closed again).
 * A config without cluster seeds loads; config_validate() rejects it.
 */
int config_load(struct config *c, const char *path, char **envp,
                int argc, char **argv, char *err, size_t errlen);

/*
 * config_load() for main's own (argc, argv): argv[0] is the program name;
 * argv[1] is the config file unless it starts with "--"; the rest are
 * --name value options.
 */
int config_load_main(struct config *c, int argc, char **argv, char **envp,
                     char *err, size_t errlen);

/*
 * What a loaded config still needs before the proxy may start: at least one
 * cluster seed; a layout-prefix for every layout-rules file that names no
 * prefix of its own, and layout-prefix only with such a file;
 * with tls-listen, tls-cert-file and tls-key-file (and tls-ca-cert-file
 * unless tls-auth-clients is no); cluster-tls-cert-file and
 * cluster-tls-key-file given together. Returns 0, or -1 with the reason in
 * err.
 */
int config_validate(const struct config *c, char *err, size_t errlen);

/*
 * Set one value directive ("max-clients", "client-output-buffer-limit",
 * ...: an integer, a size or a limit, no string) in c, as a line of the
 * config would: 0, or -1 with the reason in err. For CONFIG SET of the
 * proxy's settings on a copy of the running config.
 */
int config_set_value(struct config *c, const char *name, int argc, char **argv, char *err,
                     size_t errlen);

/* The name of directive i config_load() accepts; NULL past the last. */
const char *config_directive_name(size_t i);

/* The prefixes layout-rules file i serves: its own, or else layout-prefix's. */
const char *const *config_layout_prefixes(const struct config *c, int i, int *n);

/* The key layout of c's layout-rules files, each for its prefixes
 * (layout_load); NULL with the reason in err. */
struct layout *config_layout_load(const struct config *c, char *err, size_t errlen);

/* The layout part of config_validate(): a layout-prefix for every
 * layout-rules file that names no prefix, and layout-prefix only with such
 * a file. */
int config_validate_layout(const struct config *c, char *err, size_t errlen);

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

#endif
