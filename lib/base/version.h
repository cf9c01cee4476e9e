/*
 * version: the proxy's own version, and the Redis version it answers as
 * (HELLO, INFO, /metrics, tagproxy --version).
 */
#ifndef TAGPROXY_VERSION_H
#define TAGPROXY_VERSION_H

#define TAGPROXY_VERSION     "0.1.0"      /* the release: set here only */
#define REDIS_SPOKEN_VERSION "7.0.15"

/* Set by the build (scripts/revision.sh): the git revision ("unknown"
 * outside a checkout, "-dirty" with changes) and liburing's version. */
extern const char tagproxy_revision[];
extern const char tagproxy_liburing_version[];

#endif
