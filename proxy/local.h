/*
 * local: the commands the proxy answers itself, as one Redis server would
 * (PING, ECHO, QUIT, SELECT, HELLO, AUTH, RESET, CLIENT, COMMAND, TIME,
 * CLUSTER as a one-node cluster that owns every slot), and the ones it
 * answers by asking every master (INFO, DBSIZE, RANDOMKEY, KEYS).
 */
#ifndef TAGPROXY_LOCAL_H
#define TAGPROXY_LOCAL_H

#include <stddef.h>

struct request;

/* The Redis version the proxy speaks for (HELLO, INFO). */
#define LOCAL_REDIS_VERSION "7.0.15"
#define TAGPROXY_VERSION    "0.1.0"

/* Register the commands above with their handlers (route.h): those that
 * answer only after asking the masters (INFO, DBSIZE, RANDOMKEY, SCAN,
 * KEYS, CLIENT UNBLOCK) marked so; and INFO's merge of the masters'
 * keyspaces (merge.h). */
void local_register(void);

#endif
