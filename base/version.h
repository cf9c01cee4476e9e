/*
 * version: the proxy's own version, and the Redis version it answers as
 * (HELLO, INFO, /metrics).
 */
#ifndef TAGPROXY_VERSION_H
#define TAGPROXY_VERSION_H

#define TAGPROXY_VERSION     "0.1.0"
#define REDIS_SPOKEN_VERSION "7.0.15"

#endif
