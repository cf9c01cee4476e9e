/*
 * hash: FNV-1a, the daemon's one string hash (hash tables of names,
 * telling files apart), 32 and 64 bits, a byte at a time so that a caller
 * may fold case or hash several pieces as one.
 */
#ifndef TAGPROXY_HASH_H
#define TAGPROXY_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV32_INIT 2166136261u
#define HASH_FNV64_INIT 14695981039346656037ULL

static inline uint32_t hash_fnv32_byte(uint32_t h, unsigned char c)
{
    return (h ^ c) * 16777619u;
}

static inline uint64_t hash_fnv64_byte(uint64_t h, unsigned char c)
{
    return (h ^ c) * 1099511628211ULL;
}

/* h carried on over p[0..len). */
static inline uint64_t hash_fnv64_more(uint64_t h, const void *p, size_t len)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++)
        h = hash_fnv64_byte(h, b[i]);
    return h;
}

static inline uint32_t hash_fnv32(const void *p, size_t len)
{
    const unsigned char *b = p;
    uint32_t h = HASH_FNV32_INIT;
    for (size_t i = 0; i < len; i++)
        h = hash_fnv32_byte(h, b[i]);
    return h;
}

static inline uint64_t hash_fnv64(const void *p, size_t len)
{
    return hash_fnv64_more(HASH_FNV64_INIT, p, len);
}

#endif
