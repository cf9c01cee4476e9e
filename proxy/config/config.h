/*
 * config: tagproxy's configuration, read from its three sources; the
 * directives themselves are directives.h's table, the syntax of a line
 * confline.h's.
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

#include "proxy/config/directives.h"

struct layout;

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

/* The prefixes layout-rules file i serves: its own, or else layout-prefix's. */
const char *const *config_layout_prefixes(const struct config *c, int i, int *n);

/* The key layout of c's layout-rules files, each for its prefixes
 * (layout_load); NULL with the reason in err. */
struct layout *config_layout_load(const struct config *c, char *err, size_t errlen);

/* The layout part of config_validate(): a layout-prefix for every
 * layout-rules file that names no prefix, and layout-prefix only with such
 * a file. */
int config_validate_layout(const struct config *c, char *err, size_t errlen);

#endif
