/*
 * commandcmd: COMMAND and its subcommands, as the cluster's server answers
 * them. COMMAND, COUNT, INFO, LIST and GETKEYS are answered by the proxy
 * from the cluster's commands (cluster/learned.h: its oldest master's
 * entries, byte for byte); DOCS, HELP, LIST FILTERBY and GETKEYSANDFLAGS
 * are asked of that master, whose build writes their text. Until the
 * cluster's commands are known, everything comes from the built-in table
 * (lib/proto/command.h: redis-server 7.0's), GETKEYSANDFLAGS and FILTERBY
 * refused.
 */
#ifndef TAGPROXY_COMMANDCMD_H
#define TAGPROXY_COMMANDCMD_H

/* Register COMMAND and its subcommands with their handlers (route.h). */
void commandcmd_register(void);

#endif
