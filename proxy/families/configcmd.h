/*
 * configcmd: CONFIG SET through the proxy (an admin command:
 * enable-dangerous-commands yes). The settings that the proxy itself
 * enforces for its clients are the proxy's: on the nodes they would lock
 * the proxy out of its cluster (requirepass) or limit the proxy's own
 * connections, not the clients'. requirepass sets the proxy's default
 * user's password, as Redis does (until a reload reads the config's); the
 * others of them (maxclients, timeout, the client buffer limits, ...) are
 * refused, saying where to set them; every other setting reaches every
 * master.
 */
#ifndef TAGPROXY_CONFIGCMD_H
#define TAGPROXY_CONFIGCMD_H

/* Register CONFIG SET (route.h). */
void configcmd_register(void);

#endif
