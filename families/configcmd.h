/*
 * configcmd: CONFIG SET through the proxy. The settings that the proxy
 * itself enforces for its clients (requirepass, maxclients, timeout, the
 * client buffer limits, ...) are the proxy's, set in its own config: on
 * the nodes they would lock the proxy out of its cluster (requirepass) or
 * limit the proxy's own connections, not the clients'. CONFIG SET of one
 * of them is refused, saying where to set it; the others reach every
 * master (an admin command: enable-dangerous-commands yes).
 */
#ifndef TAGPROXY_CONFIGCMD_H
#define TAGPROXY_CONFIGCMD_H

/* Register CONFIG SET (route.h). */
void configcmd_register(void);

#endif
