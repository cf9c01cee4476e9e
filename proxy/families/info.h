/*
 * info: INFO (the proxy's sections; the keyspace summed from every
 * master's) and DBSIZE (summed). RANDOMKEY is listing.h's.
 */
#ifndef TAGPROXY_INFO_H
#define TAGPROXY_INFO_H

/* Register INFO and DBSIZE (route.h: they ask the masters). */
void info_register(void);

#endif
