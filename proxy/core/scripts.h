/*
 * scripts: the Lua script bodies the proxy knows, by SHA1.
 *
 * An EVALSHA that meets NOSCRIPT on a master (a new master after a
 * failover, one added by resharding, one whose scripts were flushed) is
 * recovered by the router: it loads the body found here on that master and
 * resends the EVALSHA (the NOSCRIPT reply proves it did not run). Bodies
 * come from three places:
 *
 *   registered   scripts_register(): the proxy's own Lua (index sync) and
 *                the targets of script-map; before the workers start; never
 *                evicted, not counted in the bound
 *   remembered   scripts_remember(): bodies clients sent (EVAL, SCRIPT
 *                LOAD); at most script-cache-max-bytes in all, the oldest
 *                evicted first (a body seen again after an eviction counts
 *                as new: the threads' sets are emptied by it)
 *   mapped       scripts_map_add(): script-map SHA1 PATH, a legacy script
 *                replaced by a cluster-aware one (itself registered)
 *
 * Threads. Registered and mapped bodies are only read once the workers run:
 * no lock. Remembered bodies are in one table under a mutex, but a worker
 * takes it only the first time it remembers a SHA (each thread keeps a small
 * set of the SHAs it has remembered, emptied whenever the table evicts or
 * forgets), and on NOSCRIPT. So an EVAL of a body already seen costs one
 * SHA1 and a lookup in the thread's own set, and no lock.
 *
 *   EVAL body ──► SHA1 ──► thread's set? ──yes──► done
 *                                 │ no
 *                                 ▼
 *                    lock, insert / refresh, unlock
 *
 *   NOSCRIPT ──► registered? ──► remembered (lock, copy, unlock) ──► body
 *
 * SHAs are 40 lowercase hex digits plus a NUL (Redis compares them without
 * case).
 */
#ifndef TAGPROXY_SCRIPTS_H
#define TAGPROXY_SCRIPTS_H

#include <stddef.h>
#include <stdint.h>

#define SCRIPTS_SHA_HEX 41      /* 40 hex digits and a NUL */

/* Lowercase hex SHA1 of body into sha, as Redis names a script. */
void scripts_sha1_hex(const char *body, size_t len, char sha[SCRIPTS_SHA_HEX]);

/* A client's SHA argument: 40 hex digits in any case into lowercase sha;
 * 0, or -1 when it is not one (Redis answers NOSCRIPT for those). */
int scripts_sha_parse(const char *s, size_t len, char sha[SCRIPTS_SHA_HEX]);

/* The bound of remembered bodies, in bytes (0: remember nothing). Before
 * the workers start. */
void scripts_init(size_t max_bytes);

/* Free everything (registered and mapped too) and go back to the state
 * before scripts_init(). Only when no worker runs. */
void scripts_reset(void);

/*
 * Register a body the proxy itself sends as EVALSHA, so that NOSCRIPT on
 * any master is recovered (the body is copied). Writes its SHA into sha.
 * Before the workers start (not thread-safe against lookups). 0, or -1 when
 * out of memory.
 */
int scripts_register(const char *body, size_t len, char sha[SCRIPTS_SHA_HEX]);

/*
 * script-map: the script whose SHA is legacy_sha is replaced by body
 * (registered). Before the workers start. 0, or -1 when out of memory.
 */
int scripts_map_add(const char *legacy_sha, const char *body, size_t len);

/* The replacement of a mapped legacy SHA: its body (len in *len) and its
 * own SHA in *sha, or NULL when sha is not mapped. Lock-free. */
const char *scripts_map_find(const char *legacy_sha, size_t *len, const char **sha);

/* Remember a body a client sent (sha is its scripts_sha1_hex). Safe from
 * any thread; takes the lock only for a SHA this thread has not remembered
 * since the last eviction. Bodies larger than the bound are not kept. */
void scripts_remember(const char *body, size_t len, const char *sha);

/* The body of sha, registered or remembered, as a malloc'd copy (the
 * caller frees it; *len set), or NULL when unknown. Safe from any thread. */
char *scripts_body_copy(const char *sha, size_t *len);

/* Forget every remembered body (SCRIPT FLUSH through the proxy: a later
 * EVALSHA gets NOSCRIPT as from one server). Registered bodies stay. */
void scripts_forget(void);

/* Moves whenever remembered bodies leave (evicted, forgotten): state
 * derived from them (which SHAs a connection has loaded) is then stale. */
uint64_t scripts_epoch(void);

/* How many remembered bodies, and their bytes. */
void scripts_stats(size_t *count, size_t *bytes);

#endif
