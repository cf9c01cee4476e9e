/*
 * rewrite: the key layout (keylayout/layout.h) applied to the proxy's
 * traffic. Requests in, key names out:
 *
 *   client  GET bot:chat:tg:42
 *     router_dispatch -> rewrite_request: every key argument (command_keys:
 *     key specs, movable keys included) legacy -> cluster
 *   node    GET bot:{ch:16}:r:tg%3A42
 *
 *   node    KEYS / SCAN / RANDOMKEY / BLPOP ... replies with cluster names
 *     rewrite_key_add / rewrite_reply_keys: cluster -> legacy
 *   client  bot:chat:tg:42
 *
 * A request none of whose keys a rule rewrites keeps its bytes: nothing is
 * copied (the hot path). A rewritten one is rebuilt in its own storage
 * (inline for small commands: no allocation).
 *
 * The layout is a struct layout_ref (keylayout/layout.h), shared by every
 * worker, so a reload can publish a new one (worker_post_layout) while
 * requests still use the old.
 */
#ifndef TAGPROXY_REWRITE_H
#define TAGPROXY_REWRITE_H

#include <stdbool.h>
#include <stddef.h>

struct command;
struct evbuffer;
struct layout;
struct request;

/*
 * Rewrite every key argument of r (r->cmd set, arity checked) from its
 * legacy name to its cluster name. Keys no rule rewrites (no match, or a
 * keep) stay as they are. Returns 0 when nothing was rewritten (r untouched:
 * its bytes are forwarded as they came), 1 when r was rebuilt with the
 * cluster names (same arguments otherwise), -1 when out of memory (r
 * untouched).
 */
int rewrite_request(struct request *r, const struct layout *l);

/*
 * The legacy name of a cluster name: its legacy name in buf when a rule maps
 * it back, else the name itself. Returns a pointer to the name to use (key
 * or buf) and its length in *outlen; NULL when buf (cap bytes) is too small,
 * with the length needed in *outlen (rewrite_legacy_max(l, len) always
 * suffices).
 */
const char *rewrite_key_to_legacy(const struct layout *l, const char *key, size_t len,
                                  char *buf, size_t cap, size_t *outlen);
size_t rewrite_legacy_max(const struct layout *l, size_t len);

/* Append key's legacy name (rewrite_key_to_legacy) to out as a RESP bulk
 * string. 0, or -1 when out of memory. */
int rewrite_key_add(struct evbuffer *out, const struct layout *l, const char *key, size_t len);

/*
 * Whether a cluster name is the layout's own bookkeeping rather than a
 * bot's key: an index of an indexed family (P:{ch:3}:idx) or a prefix's
 * marker (P:{meta}:layout). Listings (KEYS, SCAN) leave them out, as a
 * single redis-server holding the legacy names has no such keys.
 */
bool rewrite_is_internal(const struct layout *l, const char *key, size_t len);

/*
 * Whether a name the cluster holds is one the layout rewrites to another
 * name: a legacy-layout key left in the cluster (an in-place migration
 * keeps the source keys until --delete-source). No client of the proxy
 * can name it (every use reaches the cluster name), so listings leave it
 * out, as they do the layout's own keys.
 */
bool rewrite_is_shadowed(const struct layout *l, const char *key, size_t len);

/*
 * Where the key names are in a reply, for rewrite_reply_keys:
 *   REWRITE_REPLY_KEY        the reply is a key (bulk), or null (RANDOMKEY)
 *   REWRITE_REPLY_EACH       an array of keys (KEYS)
 *   REWRITE_REPLY_FIRST      an array whose first element is a key:
 *                            BLPOP/BRPOP [key, value], BZPOPMIN/BZPOPMAX
 *                            [key, member, score], BLMPOP/BZMPOP
 *                            [key, [elements]]; a null reply passes
 *   REWRITE_REPLY_EACH_FIRST an array of arrays whose first elements are
 *                            keys: XREAD/XREADGROUP [[stream, entries], ...];
 *                            a null passes
 * RESP2 only (what nodes send the proxy). Everything else in the reply is
 * copied byte for byte.
 */
enum rewrite_reply_shape {
    REWRITE_REPLY_KEY,
    REWRITE_REPLY_EACH,
    REWRITE_REPLY_FIRST,
    REWRITE_REPLY_EACH_FIRST,
};

/*
 * The shape of cmd's reply when it carries key names that must map back,
 * as 1 + enum rewrite_reply_shape, or 0: LMPOP, ZMPOP, BLPOP, BRPOP,
 * BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP (the first element), XREAD, XREADGROUP
 * (each stream's name). The router's deliver_legacy_keys() maps such
 * replies with rewrite_reply_keys() when a layout is on.
 */
unsigned rewrite_reply_map_of(const struct command *cmd);

/*
 * Append to out the whole RESP reply reply[0..len) with its key names (at
 * the places shape says) mapped back to legacy names. Returns 0; -1 when
 * the reply is not one whole RESP reply of that shape, an error reply
 * included (nothing is appended: the caller forwards the reply as it is),
 * -2 when out of memory (nothing appended).
 */
int rewrite_reply_keys(const struct layout *l, const char *reply, size_t len,
                       enum rewrite_reply_shape shape, struct evbuffer *out);

#endif
