/*
 * local: the connection commands the proxy answers itself, as one Redis
 * server would: PING, ECHO, QUIT, SELECT, HELLO, AUTH, RESET, TIME,
 * READONLY and READWRITE. (CLIENT: clientcmd.h; COMMAND: commandcmd.h;
 * CLUSTER: clustercmd.h; INFO, DBSIZE, RANDOMKEY: info.h; KEYS, SCAN:
 * listing.h.)
 */
#ifndef TAGPROXY_LOCAL_H
#define TAGPROXY_LOCAL_H

/* Register the commands above with their handlers (route.h). */
void local_register(void);

#endif
