/*
 * hostport: "host:port" addresses, as config directives, the cluster's
 * replies and redirects write them. Nothing is resolved here.
 */
#ifndef TAGPROXY_HOSTPORT_H
#define TAGPROXY_HOSTPORT_H

/*
 * "host:port" -> host (malloc'd, caller frees) and port 1..65535;
 * "[::1]:6379" gives host "::1". A bare host with ':' in it, an empty host, a
 * host with blanks, control characters or brackets, or a bad port gives -1
 * and allocates nothing. host may be NULL to only check.
 */
int hostport_parse(const char *s, char **host, int *port);

#endif
