/*
 * marker: the key layout's guard at start (LAYOUT.md "Marker and guards").
 *
 * For each layout-prefix P the control thread reads P:{meta}:layout from
 * the master of its slot, before any worker serves:
 *
 *   "cluster:v1"                       serve
 *   absent, no key of P on any master  write it (SET NX) and serve
 *     (SCAN MATCH P:* on every master: legacy and cluster names alike)
 *   absent, keys of P exist            refuse to start: migrate first, or
 *                                      layout-allow-legacy-data yes (then
 *                                      serve, and write nothing)
 *   anything else                      refuse to start
 *
 * Blocking calls (topology_dial, plain or TLS): the control thread only.
 */
#ifndef TAGPROXY_MARKER_H
#define TAGPROXY_MARKER_H

#include <stdbool.h>
#include <stddef.h>

struct layout;
struct topology;
struct topology_source;

#define MARKER_VALUE "cluster:v1"

/* 0: every prefix may be served; -1: refuse, with what to do in err. */
int marker_check(const struct layout *l, const struct topology *t,
                 const struct topology_source *src, bool allow_legacy_data,
                 char *err, size_t errlen);

#endif
