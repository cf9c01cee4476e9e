/*
 * cmdinfo: a command as a server describes it in its COMMAND INFO reply,
 * made a struct command (command.h) the router can use: arity, flags, ACL
 * categories, tips, the legacy key range, key specs and subcommands (in
 * name order, as command_lookup_sub wants them), and the entry's RESP as
 * that server writes it in RESP2 and in RESP3, for the proxy's own COMMAND
 * INFO answers. It is how the proxy learns the commands of a cluster newer
 * than its built-in table.
 *
 * The entry is read from a hiredis reply (RESP2, as the control thread's
 * connections read it). RESP3 is written by the rules of Redis's COMMAND
 * INFO writer (addReplyCommandInfo): flags, categories, tips and key specs
 * as sets, each key spec and its begin_search, find_keys and spec as maps,
 * subcommands as an array (a set when there are none). Flags, categories
 * and tips the proxy does not know are kept in the RESP and counted in
 * unknown (a tip it does not know makes routing refuse the command).
 * COMMAND DOCS is not in an INFO entry: docs_resp is NULL.
 */
#ifndef TAGPROXY_CMDINFO_H
#define TAGPROXY_CMDINFO_H

#include <stddef.h>

#include "lib/proto/command.h"

struct redisReply;

/* What of an entry the proxy could not map to its own names. */
struct cmdinfo_unknown {
    int flags, categories, tips, keyspec_flags;
};

/*
 * One COMMAND INFO entry (the array of 10 a server writes for a command)
 * as a new struct command, its subcommands' entries with it; unknown (may
 * be NULL) counts what was not mapped. NULL with the reason in why when
 * the entry is not one (too few fields, a field of the wrong type).
 */
struct command *cmdinfo_parse(const struct redisReply *entry, struct cmdinfo_unknown *unknown,
                              char *why, size_t whylen);

/* Free what cmdinfo_parse made (NULL is fine). */
void cmdinfo_free(struct command *c);

#endif
