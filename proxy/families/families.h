/*
 * families: the command families join the core at start. Each registers
 * the commands it serves with its handler on the command table (route.h)
 * and its part in a client's life (client.h), and sets up what it shares
 * between workers (the index scripts).
 */
#ifndef TAGPROXY_FAMILIES_H
#define TAGPROXY_FAMILIES_H

/* Once, before any worker starts. 0, or -1 out of memory. */
int families_init(void);

#endif
