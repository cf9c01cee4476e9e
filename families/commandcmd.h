/*
 * commandcmd: COMMAND [COUNT|INFO|DOCS|GETKEYS|LIST|HELP], answered from the
 * command table byte for byte as redis-server 7.0 (proto/command.h).
 */
#ifndef TAGPROXY_COMMANDCMD_H
#define TAGPROXY_COMMANDCMD_H

/* Register COMMAND and its subcommands with their handlers (route.h). */
void commandcmd_register(void);

#endif
