/*
 * inspect: `tagproxy migrate inspect`, what a prefix holds before (and
 * after) a migration, read with SCAN on every node of the source:
 *
 *   - per family of the rules file (in its order): names in the legacy
 *     layout, in the cluster layout, and index sorted sets; keeps (the
 *     same name in both layouts); names no rule matches;
 *   - names with a TTL (PTTL of each, pipelined per SCAN batch);
 *   - the signs of live bots the migration refuses to run with, as the
 *     rules file marks them (`live`, keylayout/rules.h): heartbeats (any
 *     key of a `live heartbeat` family: botmesh's P:co:rep:*) and pending
 *     tickets (a `live ticket A>B` counter past its sibling, in either
 *     layout: a chat whose turn counter `tix` is past `serving`);
 *   - the layout marker P:{meta}:layout: absent, cluster:v1, or another
 *     value.
 *
 * Memory is bounded by one SCAN batch, whatever the keyspace.
 */
#ifndef TAGPROXY_INSPECT_H
#define TAGPROXY_INSPECT_H

#include <stdio.h>

struct keyspace;
struct layout;

#define INSPECT_ROWS_MAX 128

struct inspect_row {
    const char *family;             /* the rule's name (a keep's: its pattern) */
    int keep;
    long legacy, cluster, index;    /* a keep counts in legacy */
};

struct inspect_report {
    struct inspect_row row[INSPECT_ROWS_MAX];
    int nrows;
    long keys, unmatched, with_ttl;
    long heartbeats, pending_tickets;
    char heartbeats_where[256];     /* the heartbeat families' patterns, "P:co:rep:*" */
    char marker[64];                /* "absent", "cluster:v1", or the value cut */
};

/* Reads prefix's keys from ks; with_ttls 0 leaves with_ttl 0 and saves a
 * PTTL per key (the copy's check for live bots). 0, or -1 with the reason
 * in err. */
int inspect_run(struct keyspace *ks, const struct layout *l, const char *prefix, int with_ttls,
                struct inspect_report *rep, char *err, size_t errlen);

/* The report as lines of text. */
void inspect_print(const struct inspect_report *rep, const char *prefix, FILE *out);

#endif
