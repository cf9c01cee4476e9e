/*
 * clustercmd: CLUSTER INFO, SLOTS, SHARDS, NODES, MYID, KEYSLOT and HELP, as a
 * one-node cluster that owns every slot, at the address the client dialled.
 */
#ifndef TAGPROXY_CLUSTERCMD_H
#define TAGPROXY_CLUSTERCMD_H

/* Register those subcommands with their handlers (route.h). */
void clustercmd_register(void);

#endif
