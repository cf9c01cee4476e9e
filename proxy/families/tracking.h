/*
 * tracking: Redis's server-assisted client-side caching through the proxy
 * (CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO): the default mode,
 * OPTIN, OPTOUT, NOLOOP, BCAST with PREFIX, and REDIRECT to a client of
 * this proxy (trackredir.h). The options are read as Redis 7.0 reads them,
 * and a bad combination gets Redis's own error.
 *
 * Each worker's shared RESP3 connection to a master runs CLIENT TRACKING
 * ON OPTIN; a tracking client's read goes out behind CLIENT CACHING YES on
 * it (router_register_sending), so the master remembers its keys for that
 * connection and pushes their invalidations there, in order with the
 * replies. While a client of the worker is in BCAST mode, or with
 * tracking-node-bcast, the connection tracks every key (BCAST) instead and
 * no read needs CACHING YES. The worker's table (tracktable.h) knows which
 * client read which key (a round's reads enter it once the round's writes
 * are out), and each gets its push with the name it used (a key layout's
 * legacy name). What the masters cannot track for the proxy is invalidated
 * right after its reply (a read on another connection, after ASKING, a
 * transaction); what the proxy can no longer promise (a lost connection, a
 * slot on another master, a new key layout, draining, a master's flush)
 * invalidates every tracking client's whole cache (a null key).
 */
#ifndef TAGPROXY_TRACKING_H
#define TAGPROXY_TRACKING_H

struct client;

/* Register the subcommands above, the family's part in its clients' lives
 * and on the workers. Before any worker starts. */
void tracking_register(void);

/* RESET: c's tracking goes off. */
void tracking_reset(struct client *c);

struct proxy;

/* For INFO, over every worker. */
struct tracking_totals {
    long long clients;              /* with tracking on */
    long long keys, items;          /* the keys and (key, client) pairs tracked */
    long long prefixes;             /* BCAST prefixes (each client's counted) */
    long long bytes;                /* the tables' memory */
};

/* From any thread. */
void tracking_totals(const struct proxy *p, struct tracking_totals *out);

#endif
