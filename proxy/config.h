/*
 * config: tagproxy's directives.
 *
 * Redis-style, one directive per line ("listen 127.0.0.1:6380"), '#' starts a
 * comment, arguments may be quoted as in redis.conf. Every directive can also
 * be given as TAGPROXY_<NAME> in the environment (dashes become underscores,
 * upper case) and as --name value on the command line. Sources are applied in
 * that order, so a later one wins: file, then environment, then command line.
 * Repeatable directives (cluster, address-map) given by a later source replace
 * the earlier list as a whole.
 *
 * A bad directive is reported as "FILE:LINE: what is wrong" (for the
 * environment "env TAGPROXY_X: ...", for the command line "argv --x: ...")
 * and nothing is applied: config_load() either fills the whole struct or fails.
 */
#ifndef TAGPROXY_CONFIG_H
#define TAGPROXY_CONFIG_H

#include <stddef.h>

enum log_level { LOG_DEBUG = 0, LOG_VERBOSE, LOG_NOTICE, LOG_WARNING };

struct config_address_map {
    char *from;     /* "host:port" as the cluster announces it */
    char *to;       /* "host:port" the proxy connects to instead */
};

struct config {
    char  *listen;                      /* host:port, default 127.0.0.1:6380 */
    char **cluster;                     /* seed host:port, in the order given */
    int    ncluster;
    int    threads;                     /* workers, default 1 */
    char  *requirepass;                 /* NULL: no password */
    char  *cluster_user;                /* NULL: AUTH password only */
    char  *cluster_password;            /* NULL: no AUTH to nodes */
    int    max_clients;                 /* default 10000 */
    long long client_query_buffer_limit;   /* bytes, default 1gb */
    long long proto_max_bulk_len;          /* bytes, default 512mb */
    long long client_output_hard_limit;    /* bytes, 0 = none; default 256mb */
    long long client_output_soft_limit;    /* bytes, 0 = none; default 64mb */
    int       client_output_soft_seconds;  /* default 60 */
    int    node_connect_timeout_ms;     /* default 1000 */
    int    node_timeout_ms;             /* default 5000 */
    int    topology_refresh_ms;         /* default 10000; 0 disables the timer */
    int    max_redirects;               /* default 5 */
    int    retry_attempts;              /* default 10 */
    int    retry_base_ms;               /* default 10 */
    int    retry_max_ms;                /* default 500 */
    struct config_address_map *address_map;
    int    naddress_map;
    int    enable_dangerous_commands;   /* default 0 */
    enum log_level log_level;           /* default notice */
    char  *log_file;                    /* NULL: stderr */
    char  *path;                        /* the config file, NULL if none */
};

/* Fill c with the defaults (no file). */
void config_defaults(struct config *c);

/*
 * Build a config from the defaults, then the file (path may be NULL), then
 * environ-style envp (NULL-terminated, may be NULL), then argv-style
 * options ("--name", "value", ...; argc entries). On error returns -1 and
 * writes a one-line "WHERE: what is wrong" message into err.
 */
int config_load(struct config *c, const char *path, char **envp,
                int argc, char **argv, char *err, size_t errlen);

void config_free(struct config *c);

/* Parse sizes as redis.conf does: 100, 1k, 1kb, 5mb, 1gb (k=1000, kb=1024). */
int config_parse_memory(const char *s, long long *out);

/* "host:port" -> host (malloc'd) and port; [::1]:6379 accepted. 0 or -1. */
int config_parse_hostport(const char *s, char **host, int *port);

const char *config_log_level_name(enum log_level l);

#endif
