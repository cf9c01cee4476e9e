/*
 * multi: MULTI, EXEC, DISCARD, WATCH and UNWATCH (tx.h): the commands
 * queued inside MULTI (answered +QUEUED, or refused as Redis refuses them,
 * which makes EXEC answer EXECABORT), the block EXEC sends to one master,
 * and WATCH on its dedicated connection (txstate.h).
 */
#ifndef TAGPROXY_MULTI_H
#define TAGPROXY_MULTI_H

#include <stddef.h>

#include "proxy/families/txclass.h"

struct request;
struct tx_state;

/* Register MULTI EXEC DISCARD WATCH UNWATCH. Before any worker starts. */
void multi_register(void);

/* r, of class cls, inside MULTI: queued (+QUEUED), or refused. */
void multi_queue(struct tx_state *tx, struct request *r, enum tx_class cls);

/* r refused inside MULTI with msg: EXEC will abort. */
void multi_refuse(struct tx_state *tx, struct request *r, const char *msg);

/* MULTI is over (EXEC, DISCARD, RESET, the client gone): the block forgotten. */
void multi_reset(struct tx_state *tx);

/* Bytes the transaction holds: its queued commands, the copies it keeps,
 * the hashes that count its WATCHed keys. */
size_t multi_held(const struct tx_state *tx);

#endif
