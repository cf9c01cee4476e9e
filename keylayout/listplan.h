/*
 * listplan: which KEYS / SCAN MATCH patterns the index sorted sets can
 * answer, and the names they answer with. Pure code over byte strings.
 *
 *   KEYS bot:chat:*       every name it can match is a record of `chat`
 *     listplan_make  ->    rule chat, prefix bot, 32 indexes (one per bucket)
 *     listplan_index_key(i) bot:{ch:<i>}:idx        (one read per index)
 *     member "tg:42" -> listplan_legacy -> bot:chat:tg:42   (then the glob)
 *
 *   KEYS bot:user:u1:ns:*   a user-data index per user: 1 index, {ud:u1}
 *
 * A pattern qualifies when the bytes it starts with (glob_literal_prefix)
 * fix a prefix and every segment of an indexed rule before its greedy last
 * capture, so that every name starting so is matched by that rule, and no
 * earlier rule or keep (the first match wins) can match any such name. The
 * index key may use the captures the pattern fixes and the bucket; with a
 * bucket there are RULES_BUCKETS indexes, else one. Anything else (`*`,
 * `bot:*`, `bot:cha[t]:*`) is not a plan: it is listed on every master.
 *
 * (proxy/families/listing.h is the proxy's KEYS/SCAN, which asks proxy/families/index.h, the
 * user of this module, first.)
 */
#ifndef TAGPROXY_LISTPLAN_H
#define TAGPROXY_LISTPLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "keylayout/layout.h"

#define LISTING_LITERAL_MAX 512   /* the literal start looked at (a shorter one is sound) */

struct listplan {
    struct layout_match fixed;    /* rule, prefix, the captures the pattern fixes */
    int nindex;                   /* RULES_BUCKETS or 1 */
    char literal[LISTING_LITERAL_MAX];   /* the values in fixed point here */
    size_t literal_len;
};

/* Whether every name that pattern[0..plen) can match is a record of one
 * indexed rule; if so fills ls (which must not move while used: fixed points
 * into it). */
bool listplan_make(const struct layout *l, const char *pattern, size_t plen, struct listplan *ls);

/* The key of index i (0..ls->nindex-1); snprintf-style, as layout.h. */
size_t listplan_index_key(const struct layout *l, const struct listplan *ls, int i,
                         char *out, size_t cap);

/*
 * The legacy name of member of index i. MAPPED (the name in out, its length
 * in *outlen), SHORT (retry with *outlen bytes), or PASS when the member
 * cannot belong there (not of the member's shape, or of another bucket):
 * such an entry is no record of the family and is left out.
 */
enum layout_result listplan_legacy(const struct layout *l, const struct listplan *ls, int i,
                                  const char *member, size_t mlen,
                                  char *out, size_t cap, size_t *outlen);

/*
 * The cluster name of the record of member m in index i, for the script
 * that reads it (keylayout/lua/index_read.lua): before + the member's
 * captures, each percent-encoded, joined by ':' + after, where the member's
 * captures are its first *splits ':'-separated parts and the rest. Writes
 * before and after (snprintf-style lengths in *blen, *alen). false when the
 * rule's names are not built that way (a member with literals, or whose
 * captures the cluster name holds in another order or apart).
 *   chat       bot:{ch:7}:r: + enc(id) + ""                   splits 0
 *   user data  bot:{ud:u1}:e: + enc(ns) ":" enc(key...) + ""   splits 1
 */
bool listplan_record_affixes(const struct layout *l, const struct listplan *ls, int i,
                            char *before, size_t bcap, size_t *blen,
                            char *after, size_t acap, size_t *alen, int *splits);

#endif
