/*
 * index: the index sorted sets of indexed families (LAYOUT.md "Indexes"),
 * kept exact on every write and read by listings. The Lua is
 * keylayout/lua/ (keylayout/index_lua.h); which patterns a listing can
 * answer, and the names it answers with, are keylayout/listplan.h.
 *
 * Writes. A write command (CMD_WRITE) one of whose keys, after the rewrite
 * (rewrite.h), is a record of an indexed family is sent as
 *
 *   EVALSHA <index_write> <nkeys> <records> <their indexes> <other keys>
 *           <n> <members> <the command as it was>
 *
 * in the records' slot (a command whose keys span slots is CROSSSLOT, as on
 * a cluster; DEL, UNLINK and MSET are split by slot first, each part wrapped
 * on its own). The script runs the command, then sets each record's member
 * to its expiry (PEXPIRETIME, +inf for none) or removes it, and returns the
 * command's reply.
 *
 * Listings. KEYS pattern and SCAN cursor MATCH pattern [COUNT n] [TYPE t]
 * whose pattern only one indexed family can match read that family's
 * indexes, one EVALSHA <index_read> per index (32 for a bucket family),
 * sent to each index's master at once (they pipeline on its connection).
 * The script prunes entries whose score is at or below the node's now and
 * returns the rest; the proxy maps each member to its legacy name, keeps
 * those the glob matches (keylayout/glob.h) and answers:
 *   KEYS   every index, concatenated
 *   SCAN   one index per call: cursor i reads index i and answers i+1, or 0
 *          after the last; COUNT is a hint only (a whole index per call);
 *          TYPE is checked by the script on each record (a record it cannot
 *          see because its slot is being migrated answers TRYAGAIN, which is
 *          retried), when the script can build the record's name from its
 *          member (listplan_record_affixes: every family of botmesh-v1);
 *          for other rules a SCAN with TYPE is listed on every master.
 * Other patterns are not the indexes' business: the every-master path.
 *
 * Scripts are called by SHA. They are registered with scripts.h, which
 * loads them on a master ahead of a connection's first EVALSHA, and when a
 * master answers NOSCRIPT (restarted, flushed) loads them there and sends
 * the EVALSHA again: NOSCRIPT proves nothing ran.
 */
#ifndef TAGPROXY_INDEX_H
#define TAGPROXY_INDEX_H

#include <event2/buffer.h>

struct command;
struct layout;
struct request;
struct worker;

/* Register the embedded scripts (scripts.h) and the router's write
 * wrapper (router.h). Once, before the workers start. */
void index_init(void);

/*
 * If r (arguments already rewritten) is a write of cmd to indexed records,
 * rebuild r as the index_write EVALSHA. cmd is r's command (a split part
 * has the parent's). Returns 0 when r is left as it is (no layout, not a
 * write, no indexed key, a blocking or no-script command: Lua cannot run
 * it), 1 when rebuilt (with r->hooks that give its reply back as the
 * command's own); below 0 r is unchanged and must be answered
 * index_wrap_error(rc): -1 out of memory, INDEX_TOO_LONG more arguments
 * than the script can take.
 */
#define INDEX_TOO_LONG (-2)
int index_wrap_write(struct request *r, const struct command *cmd, const struct layout *l);
const char *index_wrap_error(int rc);

/* In r as index_wrap_write rebuilt it: the indexed records' keys are
 * arguments 3 to 3 + *nrec, and the command as it was starts at argument
 * *original. -1 when r is not such a request. */
int index_wrapped_parts(const struct request *r, int *nrec, int *original);

/* KEYS r->args[1] from the indexes: 1 when under way (r is answered), 0
 * when the pattern is not one indexed family's (r is untouched). */
int index_keys(struct request *r, const struct layout *l);

/* SCAN from the indexes, as index_keys. Options Redis would refuse leave r
 * untouched (0), for the every-master path to answer as the node does. */
int index_scan(struct request *r, const struct layout *l);

/* A command that wrote outside the index script (a blocking write, a
 * script) answered: the indexes of those of its keys that are indexed
 * records are brought up to date now (the index script around a write that
 * changes nothing, on the shared connection; its reply dropped). */
void index_upkeep(struct request *r);

/* The same for one key (its cluster name), on worker w. */
void index_upkeep_key(struct worker *w, const char *key, size_t len);

/* Whether cmd with argc arguments (its name counted) answers a null array
 * for nothing (LPOP/RPOP with a count, LMPOP, ZMPOP: the table's
 * CMDP_NULL_ARRAY*), which the index script turns into a null bulk. */
int index_answers_null_array(const struct command *cmd, int argc);

#endif
