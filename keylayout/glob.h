/*
 * glob: Redis's glob-style pattern matching (KEYS, SCAN MATCH), byte for
 * byte the semantics of redis-server 7.0's stringmatchlen() with nocase 0:
 *
 *   *        any run of bytes, empty included
 *   ?        any one byte
 *   [abc]    one byte of the set; [^abc] one byte not in it; [a-z] a range
 *            (ends in either order); \x in a set is x; an unclosed set ends
 *            at the pattern's end
 *   \x       the byte x (a lone '\' at the end is itself)
 *
 * Bytes compare as Redis compares them, as (signed) char: so a range such
 * as [a-\xff] matches what it matches on redis-server. Pure, no allocation;
 * the recursion is bounded as in Redis (a pattern nested past 1000 '*'s does
 * not match).
 */
#ifndef TAGPROXY_GLOB_H
#define TAGPROXY_GLOB_H

#include <stdbool.h>
#include <stddef.h>

/* Whether s[0..slen) matches pattern[0..plen). As stringmatchlen, "*" does
 * not match the empty name: KEYS and SCAN take the pattern "*" (exactly)
 * to mean every name, without matching, and so must a caller. */
bool glob_match(const char *pattern, size_t plen, const char *s, size_t slen);

/*
 * The literal start of a pattern: the bytes every matching string begins
 * with (escapes resolved), up to the first '*', '?' or '['. Writes at most
 * cap bytes of it to out and returns its full length; *exact is set when
 * the whole pattern is literal (it matches that one string only).
 */
size_t glob_literal_prefix(const char *pattern, size_t plen, char *out, size_t cap,
                           bool *exact);

#endif
