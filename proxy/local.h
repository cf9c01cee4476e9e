/*
 * local: the commands the proxy answers itself, as one Redis server would
 * (PING, ECHO, QUIT, SELECT, HELLO, AUTH, RESET, CLIENT, COMMAND, TIME,
 * CLUSTER as a one-node cluster that owns every slot), and the ones it
 * answers by asking every master (INFO, DBSIZE, RANDOMKEY, KEYS).
 */
#ifndef TAGPROXY_LOCAL_H
#define TAGPROXY_LOCAL_H

#include <stddef.h>

struct command;
struct request;

/* The Redis version the proxy speaks for (HELLO, INFO). */
#define LOCAL_REDIS_VERSION "7.0.15"
#define TAGPROXY_VERSION    "0.1.0"

void local_dispatch(struct request *r);

/* NULL when a transaction can run cmd, a command local_dispatch answers, at
 * EXEC (tx.h); else why not (CLIENT REPLY would take replies out of EXEC's
 * array). */
const char *local_tx_refusal(const struct command *cmd);

/* Whether local_dispatch answers cmd only after asking the masters (INFO,
 * DBSIZE, RANDOMKEY, SCAN, KEYS), not at once from the proxy's own state. */
int local_asks_masters(const struct command *cmd);

/* INFO: write the proxy's sections, with the keyspace summed from the
 * masters' "INFO keyspace" texts (NUL-terminated), into r's reply. */
void local_info_render(struct request *r, const char *const *texts, int n);

#endif
