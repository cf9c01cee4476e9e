/*
 * copy: the legacy layout of a prefix copied into the cluster layout
 * (LAYOUT.md "Migration"; the reference's migrateToClusterLayout), from
 * every node of the source into the target (the source itself: in place).
 *
 * Each SCAN batch of the source is read in chunks (DUMP, PTTL and what a
 * family needs, pipelined), then written to the target in one script per
 * record (copy.c's copy_lua, by EVALSHA in the record's slot). What
 * a family gets is its rule's copy mode (keylayout/rules.h), never its
 * name (botmesh-v1's families in brackets):
 *
 *   plain, indexed (chats, ...)   RESTORE with the remaining TTL (ABSTTL),
 *                                 then the index entry as the proxy writes
 *                                 it: score the absolute expiry in ms, +inf
 *                                 without one
 *   log ITEM (message logs)       the log, then each item it references
 *                                 (never found by parsing item names); an
 *                                 item no log references is an orphan
 *   greater (fences, terms)       raised, never lowered (set if greater)
 *   token (schedules)             the higher fencing token (the hash's
 *                                 `token` field) wins, even without
 *                                 overwrite; an overwrite keeps it
 *   never (turn counters)         not copied (short-lived)
 *   keeps (conversations, ...)    only into another server
 *   plain, not indexed            RESTORE with the remaining TTL
 *
 * An existing target key wins unless overwrite. Values are never
 * re-encoded. The marker is written last, only by a complete run (one
 * limited by include leaves it unset, and says so). A run refuses while a
 * sign of a running bot (the rules' live clauses: a heartbeat, a pending
 * ticket) shows on the source or a separate target, unless allow_live.
 * Memory: one chunk of values at a time.
 *
 * The rollback (rollback) copies the cluster layout back into the legacy
 * one, into one server, from one server or every master of a cluster:
 * each cluster-layout record to its legacy name (index sets and `never`
 * families are not copied; logs and items as records), `greater` values
 * only raised, the higher `token` kept. With mirror the target is made to
 * match the source: records overwrite, and legacy records the source no
 * longer holds are deleted (pruned), but for a `token` record (a
 * schedule), which becomes a deleted marker keeping its token (fields
 * `token` and `deleted`), and `greater` ones (fences, terms), which stay. A whole rollback removes
 * the marker from the target.
 */
#ifndef TAGPROXY_COPY_H
#define TAGPROXY_COPY_H

#include <stdio.h>

struct keyspace;
struct layout;

#define COPY_FAMILIES_MAX 128

struct copy_opts {
    const char *prefix;
    int dry_run, overwrite, allow_live;
    const char *include;            /* "family,family": only those (no marker); NULL all */
    int delete_source;              /* each legacy key the target holds is deleted */
    int rollback;                   /* cluster -> legacy (into one server) */
    int mirror;                     /* rollback: the target made to match the source */
};

struct copy_family {
    const char *name;
    long copied, skipped;
};

struct copy_report {
    struct copy_family fam[COPY_FAMILIES_MAX];
    int nfam;
    long copied, skipped, orphans, deleted;
    long pruned;                    /* rollback with mirror: legacy records deleted */
    long items_elsewhere;           /* log members whose item would be another chat's */
    char marker[160];               /* what happened to the marker */
};

/* 0, or -1 with the reason in err (a refusal included). */
int copy_run(struct keyspace *src, struct keyspace *dst, const struct layout *l,
             const struct copy_opts *o, struct copy_report *rep, char *err, size_t errlen);

void copy_print(const struct copy_report *rep, const struct copy_opts *o, FILE *out);

/* The report as JSON, with the reference's names (copied, skipped,
 * orphans, pruned, layoutMarker) and per family. */
void copy_json(const struct copy_report *rep, const struct copy_opts *o, FILE *out);

#endif
