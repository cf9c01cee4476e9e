/*
 * layout: legacy key names <-> cluster layout names, by the rules of one or
 * more rules files (keylayout/rules.h), each for its prefixes. Pure code over byte
 * strings; no allocation per call; safe to share between threads once built.
 *
 *   legacy  bot:chat:tg:42  --layout_to_cluster-->  bot:{ch:16}:r:tg%3A42
 *                           <--layout_to_legacy---
 *   index   bot:{ch:16}:idx  member "tg:42"  (layout_index_key, layout_index_member;
 *                                             back with layout_index_to_legacy)
 *
 * Every captured value is percent-encoded in cluster names (escape.h);
 * index members hold raw values. `<b>` is layout_bucket of the raw id. The
 * slot of a result is slot_of() (cluster/slot.h) of it: a record and its
 * index always share one.
 *
 * Outputs follow snprintf: the functions return (or store in *outlen) the
 * full length of the result and write at most cap bytes of it to out (no NUL
 * is added); the result is complete only when that length is <= cap.
 * layout_max_len() bounds every output, so a buffer of that size always
 * suffices.
 */
#ifndef TAGPROXY_LAYOUT_H
#define TAGPROXY_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keylayout/rules.h"

struct layout;

enum layout_result {
    LAYOUT_PASS,    /* no rule matched: the name is used as it is */
    LAYOUT_KEEP,    /* a keep matched: the same name in both layouts */
    LAYOUT_MAPPED,  /* a rule matched: the other layout's name is in out */
    LAYOUT_SHORT,   /* a rule matched but out is too small: retry with *outlen bytes
                     * (mapping back, the retry may still find PASS) */
};

/* A captured value, pointing into the name it was matched in. */
struct layout_value {
    const char *ptr;
    size_t len;
    bool encoded;   /* percent-encoded (read from a cluster name) or raw */
};

/* What a name matched. The values point into the matched input(s), which
 * must outlive the match. */
struct layout_match {
    const struct rules_rule *rule;   /* NULL for LAYOUT_PASS */
    size_t prefix;                   /* which configured prefix (layout_prefix) */
    int bucket;                      /* 0..31 when the rule uses <b>, else -1 */
    struct layout_value cap[RULES_MAX_CAPTURES];
};

/* An output bound for inputs of len bytes in all (both, for index_to_legacy). */
size_t layout_max_len(const struct layout *l, size_t len);

/* Rewrite a legacy name. PASS and KEEP leave out untouched (use the name as
 * it is); MAPPED/SHORT store the cluster name's length in *outlen. m tells
 * the rule (m->rule->name is the family, m->rule->indexed whether
 * layout_index_key/member apply). m may be NULL. */
enum layout_result layout_to_cluster(const struct layout *l, const char *key, size_t len,
                                     char *out, size_t cap, size_t *outlen,
                                     struct layout_match *m);

/* Map a cluster name back to its legacy name. PASS (use the name as it is)
 * when no rule's cluster pattern matches, when a value's encoding is not
 * exactly what escape_encode makes (malformed, lower-case hex, a byte encoded
 * that needs not be, or left raw that must be), when a bucket is not the
 * id's, or when the legacy name would rewrite to another name (it is checked
 * by rewriting it): so whenever MAPPED, layout_to_cluster of the result gives
 * key back. */
enum layout_result layout_to_legacy(const struct layout *l, const char *key, size_t len,
                                    char *out, size_t cap, size_t *outlen,
                                    struct layout_match *m);

/* The legacy name of an index entry: index key + member (raw). Same
 * outcomes as layout_to_legacy (never KEEP). */
enum layout_result layout_index_to_legacy(const struct layout *l, const char *index,
                                          size_t ilen, const char *member, size_t mlen,
                                          char *out, size_t cap, size_t *outlen,
                                          struct layout_match *m);

/* Whether key is the index sorted set of an indexed rule (for any bucket,
 * any values: the name has that rule's index template's shape). */
bool layout_is_index(const struct layout *l, const char *key, size_t len);

/* The rule whose index key is, as layout_is_index; NULL for none. */
const struct rules_rule *layout_index_rule(const struct layout *l, const char *key, size_t len);

/* Build names from a match of a rule (not a keep). The index functions need
 * m->rule->indexed. A match filled by hand with rule, prefix and bucket only
 * builds the index key of that bucket (for rules whose index is per bucket). */
size_t layout_cluster_key(const struct layout *l, const struct layout_match *m,
                          char *out, size_t cap);
size_t layout_legacy_key(const struct layout *l, const struct layout_match *m,
                         char *out, size_t cap);
size_t layout_index_key(const struct layout *l, const struct layout_match *m,
                        char *out, size_t cap);
size_t layout_index_member(const struct layout *l, const struct layout_match *m,
                           char *out, size_t cap);

/* The legacy name of index member member[0..mlen) for a match filled by
 * hand with rule (indexed), prefix, the captures the index key holds (raw)
 * and the bucket of that index (-1: any). The member's captures are read
 * into m. MAPPED / SHORT as layout_to_cluster; PASS when the member is not
 * of the rule's member shape or belongs to another bucket. For listings
 * (keylayout/listplan.h), which know the rule and index they read. */
enum layout_result layout_member_to_legacy(const struct layout *l, struct layout_match *m,
                                           const char *member, size_t mlen,
                                           char *out, size_t cap, size_t *outlen);

/* layout_to_legacy for a name that matters only if it is a record of an
 * indexed rule (m->rule->indexed): PASS, with nothing checked, as soon as
 * the first rule or keep the name matches is another one. Same MAPPED
 * results as layout_to_legacy for records; most keys a write names are not
 * records, and this costs them little. */
enum layout_result layout_record_to_legacy(const struct layout *l, const char *key, size_t len,
                                           char *out, size_t cap, size_t *outlen,
                                           struct layout_match *m);

/* The 32-bit FNV-1a of id (lib/base/hash.h) % 32. */
int layout_bucket(const char *id, size_t len);

#endif
