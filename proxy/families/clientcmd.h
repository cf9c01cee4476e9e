/*
 * clientcmd: CLIENT and its subcommands, about this proxy's clients on every
 * worker: SETNAME, GETNAME, ID, INFO, LIST, KILL, UNBLOCK, REPLY, NO-EVICT,
 * HELP (client-side caching's are tracking.h's).
 */
#ifndef TAGPROXY_CLIENTCMD_H
#define TAGPROXY_CLIENTCMD_H

#include <stddef.h>

struct client;
struct request;

/* CLIENT SETNAME's and HELLO SETNAME's name, argument i of r: 0, or -1
 * after Redis's error for a name with spaces or special characters. */
int clientcmd_set_name(struct request *r, int i);

/* c's CLIENT LIST line (without the newline) into buf. */
void clientcmd_describe(const struct client *c, char *buf, size_t len);

/* Register the subcommands above with their handlers (route.h). */
void clientcmd_register(void);

#endif
