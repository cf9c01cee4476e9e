/*
 * escape: how a captured value is written in a cluster name. A byte that
 * rules_must_encode (keylayout/rules.h) is written %XX, in upper-case hex;
 * every other byte as it is. Decoding takes exactly what encoding makes,
 * nothing else (lower-case hex, an escape of a byte that needs none, or a
 * byte left raw that must be escaped are refused), so a name and its
 * encoding map one to one.
 */
#ifndef TAGPROXY_ESCAPE_H
#define TAGPROXY_ESCAPE_H

#include <stddef.h>

#include "keylayout/out.h"

/* s[0..len) encoded into o. */
void escape_put(struct out *o, const char *s, size_t len);

/* Encoded s[0..len) decoded into o (only checked when o is NULL): 0, or -1
 * when s is not something escape_put makes. */
int escape_take(struct out *o, const char *s, size_t len);

/* The byte of the escape at s[i] (a '%'), or -1 when it is not one
 * escape_put makes. */
int escape_byte_at(const char *s, size_t len, size_t i);

/* Percent-encode in[0..len) into out (snprintf-style: returns the encoded
 * length, at most 3 * len, and writes what fits in cap). */
size_t escape_encode(const char *in, size_t len, char *out, size_t cap);

/* The exact inverse of escape_encode: 0 with the length in *outlen (at most
 * len), or -1 when in is not something escape_encode makes. */
int escape_decode(const char *in, size_t len, char *out, size_t cap, size_t *outlen);

#endif
