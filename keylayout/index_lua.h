/*
 * index_lua: the index scripts of keylayout/lua/, embedded in the binary at
 * build time (scripts/embed.sh makes build/gen/keylayout_lua.c from them).
 * Each is NUL-terminated; _len does not count the NUL.
 *
 *   index_write.lua   a write on indexed records + their index entries made exact
 *   index_read.lua    one index's live members (expired ones pruned), TYPE filter
 */
#ifndef TAGPROXY_INDEX_LUA_H
#define TAGPROXY_INDEX_LUA_H

#include <stddef.h>

extern const char embed_index_write[];
extern const size_t embed_index_write_len;
extern const char embed_index_read[];
extern const size_t embed_index_read_len;

#endif
