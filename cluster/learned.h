/*
 * learned: the commands the cluster knows and the proxy's built-in table
 * does not (proxy/ops/servers.h reads every master's COMMAND), and the built-in
 * commands the cluster describes otherwise (ZRANK's WITHSCORE of 7.2: its
 * arity; SINTERSTORE's key spec flags; WATCH's no-multi of Valkey 8), so
 * that the proxy serves whatever its cluster speaks.
 *
 *   master A's COMMAND ─┐
 *   master B's COMMAND ─┼─ learned_build ─► learned set ─► topology ─► workers
 *   master C's COMMAND ─┘   (names the table lacks, who knows each,
 *                            the oldest master's entry for each)
 *
 * A learned command carries how many masters know it: the router serves
 * one every master knows and refuses one only some know (a rolling
 * upgrade), saying so. Its entry is the oldest master's (the lowest
 * version, as the cluster's server is named: servers.h), and so is a
 * built-in command's override: the cluster serves only what its oldest
 * master serves.
 *
 * A set is immutable and never freed: a request may point at its entries
 * after a newer set replaced it. A new set is built only when a master's
 * answer changed (a new master, a new version), so the sets a process
 * makes are as few as its cluster's upgrades.
 */
#ifndef TAGPROXY_LEARNED_H
#define TAGPROXY_LEARNED_H

#include <stddef.h>

struct command;

struct learned_command {
    const struct command *cmd;      /* the oldest knowing master's entry */
    int known_by;                   /* masters that know it */
};

struct learned_set {
    int nmasters;                   /* the masters asked */
    struct learned_command *commands;   /* by fullname: top-level commands and
                                           subcommands of built-in containers
                                           ("client|setinfo") the table lacks */
    int ncommands;
    const struct command **overrides;   /* per built-in command index (< the
                                           built-in count): the cluster's entry when
                                           its arity, key specs or flags differ, else
                                           NULL */
    int noverrides;                 /* how many are set */
    const struct command **all;     /* every top-level command of the oldest master, by
                                       fullname: what COMMAND answers with */
    int nall;
};

/* One master's commands: its COMMAND reply's entries (cmdinfo.h). */
struct learned_master {
    struct command **commands;
    int n;
};

/*
 * The set of masters[0..n): lowest is the index of the oldest master (its
 * entries win). NULL out of memory.
 */
struct learned_set *learned_build(const struct learned_master *masters, int n, int lowest);

/* The newest set's counts (any thread): commands learned, built-in ones
 * the cluster describes otherwise. */
void learned_counts(int *commands, int *overrides);

/* Each override and learned command of s, a line each, to say (the log,
 * once per new set). */
void learned_log(const struct learned_set *s, void (*say)(const char *line));

/* The oldest master's top-level command named name[0..len) (any case), or
 * NULL. */
const struct command *learned_any(const struct learned_set *s, const char *name, size_t len);

/* The learned command named name[0..len) ("hexpire", "client|setinfo",
 * any case), or NULL. */
const struct learned_command *learned_find(const struct learned_set *s, const char *name,
                                           size_t len);

/* The cluster's entry for built-in cmd when it differs, or NULL. */
const struct command *learned_override(const struct learned_set *s, const struct command *cmd);

/* The cluster's entry for cmd when it differs, else cmd itself: what
 * checks its arity, finds and checks its keys, and whether it may be
 * queued in MULTI. */
static inline const struct command *learned_entry(const struct learned_set *s,
                                                  const struct command *cmd)
{
    const struct command *c = learned_override(s, cmd);
    return c ? c : cmd;
}

#endif
