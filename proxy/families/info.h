/*
 * info: INFO (the proxy's sections; the keyspace summed from every
 * master's), DBSIZE (summed) and RANDOMKEY (one master's, at random).
 */
#ifndef TAGPROXY_INFO_H
#define TAGPROXY_INFO_H

/* Register INFO, DBSIZE and RANDOMKEY (route.h: they ask the masters)
 * and INFO's merge of the masters' keyspaces (merge.h). */
void info_register(void);

#endif
