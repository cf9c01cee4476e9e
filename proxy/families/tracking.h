/*
 * tracking: CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO, Redis's
 * server-assisted client-side caching (issue 40).
 *
 * CLIENT TRACKING reads its options as Redis 7.0 does and answers a bad
 * combination with Redis's own words (REDIRECT to a client that does not
 * exist, PREFIX without BCAST, BCAST with OPTIN or OPTOUT, OPTIN with
 * OPTOUT, prefixes that overlap, a syntax error). OFF answers OK. ON is
 * refused, saying why, until the proxy can send the invalidations: a
 * client that turned it on and got none would serve stale values from its
 * cache. TRACKINGINFO, GETREDIR and CACHING answer as Redis does for a
 * client with tracking off.
 */
#ifndef TAGPROXY_TRACKING_H
#define TAGPROXY_TRACKING_H

/* Register the subcommands above with their handlers (route.h). Before
 * any worker starts. */
void tracking_register(void);

#endif
