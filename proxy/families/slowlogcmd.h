/*
 * slowlogcmd: SLOWLOG through the proxy (an admin command:
 * enable-dangerous-commands yes), as one server's slow log.
 *
 * SLOWLOG GET [count] asks every master for its newest `count` entries and
 * merges them with the proxy's own (proxy/core/slowlog.h), newest first by their
 * unix time, and answers the newest `count` (10 unless given, -1 all). A
 * master's entry keeps its id, time, duration, arguments and client
 * address (the proxy's connection), and its client-name field names the
 * node, "node=<host:port>"; the proxy's entries name the client. An id is
 * unique within its source only. SLOWLOG LEN adds the masters' lengths to
 * the proxy's; SLOWLOG RESET empties every master's log and the proxy's.
 */
#ifndef TAGPROXY_SLOWLOGCMD_H
#define TAGPROXY_SLOWLOGCMD_H

/* Register SLOWLOG GET, LEN and RESET (route.h) and their merge. */
void slowlogcmd_register(void);

#endif
