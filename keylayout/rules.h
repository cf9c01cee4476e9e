/*
 * rules: the parser of key layout rules files and the compiled rule set that
 * keylayout/layout.c applies. Pure code over byte strings.
 *
 * The rules file, one directive a line:
 *
 *   # a comment (a token that starts with '#' ends the line)
 *   rule NAME  LEGACY  ->  CLUSTER  [index INDEX member MEMBER]  [copy MODE]  [live SIGN]
 *   keep PATTERN  [live SIGN]
 *
 * Tokens are separated by spaces or tabs, so no pattern holds a blank.
 * Rules and keeps are tried in file order, in both directions; the first
 * match wins (so `p:lock:<key...>:fence` must stand before `p:lock:<key...>`).
 *
 * NAME      the family: letters, digits, '-', '_', '.', at most 31 bytes,
 *           unique in the file.
 * LEGACY    a pattern of ':'-separated segments. The first segment is always
 *           `p`: it stands for any prefix the file serves (one literal
 *           segment, given by config `layout-rules FILE P ...` or
 *           `layout-prefix`). Every other segment is one of
 *             lit           a literal (no '<', '>', '*')
 *             <name>        a capture of exactly one segment (no ':')
 *             <name...>     a greedy capture: one or more segments, may hold
 *                           ':'; at most one per pattern; the segments after
 *                           it are matched from the end of the key
 *             <name=a|b|c>  a capture of one segment that is one of the
 *                           listed literals
 *           A segment may be empty (`p:chat:` has the id ""). Capture names
 *           are letters, digits, '-', '_' (at most 31 bytes); `b` and `p`
 *           are reserved.
 * CLUSTER   a template: literal bytes and placeholders. `p:` starts it (the
 *           prefix the legacy key matched), `<name>` / `<name...>` is the
 *           percent-encoded value of that capture (the `...` must agree with
 *           the capture), `<b>` is the bucket (0..31, decimal) of the raw
 *           value of the capture named `id`. Every capture appears exactly
 *           once, and a placeholder is followed by the end or by a literal
 *           that starts with one of  : { } * ? [ ] \  or a byte below 0x21 or
 *           0x7F, bytes an encoded value never holds, so a cluster key parses
 *           back without guessing. The cluster patterns of different rules
 *           must not match the same names (give each its own literals).
 * INDEX     for an indexed family: the template of its index sorted set,
 *           with the same hash tag as CLUSTER (same slot as the record).
 * MEMBER    the record's member in that index: ':'-separated references to
 *           captures (`<name>`, `<name...>`) and literals, holding the RAW
 *           (decoded) values. Every capture appears in INDEX or in MEMBER, so
 *           an index entry names exactly one record.
 * PATTERN   (keep) a LEGACY-style pattern, whose last segment may be `*`:
 *           any rest, empty or not, ':' included. A matching name is the
 *           same in both layouts (a pass-through family).
 * MODE      how `tagproxy migrate` copies the family's keys (migrate/copy.h):
 *             plain      (the default) an existing target key wins unless
 *                        --overwrite
 *             greater    an integer (a fence, a term): only ever raised
 *             token      a hash whose `token` field (a fencing token) only
 *                        ever rises, and which a mirrored rollback turns
 *                        into a deleted marker keeping it
 *             never      not copied (short-lived state)
 *             log ITEM   a sorted set whose members name records of rule
 *                        ITEM: the items it references are copied after it
 *             item       copied only through the log that names this rule
 *           ITEM has every capture of its log, by name, and exactly one
 *           more, which a member of the log fills; one log per item rule.
 * SIGN      a sign of a bot still running, on which the copy refuses to run:
 *             heartbeat  any key of the family
 *             ticket A>B the key whose constrained capture <x=...|A|B> is A
 *                        holds a greater integer than its sibling whose
 *                        capture is B (a turn ticket not yet served)
 *
 * Errors read `FILE:LINE: what is wrong` (see tests/unit/test_rules.c for
 * every message).
 */
#ifndef TAGPROXY_RULES_H
#define TAGPROXY_RULES_H

#include <stdbool.h>
#include <stddef.h>

#define RULES_NAME_MAX 31
#define RULES_MAX_SEGS 16      /* segments of a pattern, after the prefix */
#define RULES_MAX_PIECES 16    /* pieces of a template */
#define RULES_MAX_CAPTURES 8   /* captures of one rule */
#define RULES_MAX_ALTS 16      /* literals of a constrained capture */
#define RULES_BUCKETS 32

/* A segment of a pattern (LEGACY, MEMBER, keep PATTERN), after the prefix. */
enum rules_seg_kind {
    RULES_SEG_LITERAL,  /* text/len */
    RULES_SEG_CAPTURE,  /* one segment into capture cap (maybe constrained) */
    RULES_SEG_GREEDY,   /* one or more segments into capture cap */
    RULES_SEG_REST,     /* `*` of a keep pattern: anything, empty included */
};

struct rules_seg {
    enum rules_seg_kind kind;
    const char *text;
    size_t len;
    int cap;
};

struct rules_pattern {
    struct rules_seg seg[RULES_MAX_SEGS];
    size_t nseg;
    int greedy;         /* index of the GREEDY or REST segment, or -1 */
};

/* A piece of a template (CLUSTER, INDEX). */
enum rules_piece_kind {
    RULES_PIECE_PREFIX,   /* the prefix the name was matched with */
    RULES_PIECE_LITERAL,  /* text/len */
    RULES_PIECE_CAPTURE,  /* the encoded value of capture cap */
    RULES_PIECE_BUCKET,   /* the bucket, decimal */
};

struct rules_piece {
    enum rules_piece_kind kind;
    const char *text;
    size_t len;
    int cap;
};

struct rules_template {
    struct rules_piece piece[RULES_MAX_PIECES];
    size_t npiece;
    size_t literal_len;   /* sum of the literal pieces' lengths */
};

struct rules_capture {
    char name[RULES_NAME_MAX + 1];
    bool greedy;
    size_t nalt;                       /* 0: any value */
    const char *alt[RULES_MAX_ALTS];   /* raw literals */
    size_t alt_len[RULES_MAX_ALTS];
    char *alt_enc[RULES_MAX_ALTS];     /* the same, percent-encoded */
    size_t alt_enc_len[RULES_MAX_ALTS];
};

/* A family's copy mode (MODE above). */
enum rules_copy {
    RULES_COPY_PLAIN,
    RULES_COPY_GREATER,
    RULES_COPY_TOKEN,
    RULES_COPY_NEVER,
    RULES_COPY_LOG,
    RULES_COPY_ITEM,
};

/* A family's sign of a running bot (SIGN above). */
enum rules_live {
    RULES_LIVE_NONE,
    RULES_LIVE_HEARTBEAT,
    RULES_LIVE_TICKET,
};

enum rules_kind {
    RULES_REWRITE,   /* rule: LEGACY -> CLUSTER */
    RULES_KEEP,      /* keep: same name in both layouts */
};

struct rules_rule {
    enum rules_kind kind;
    char name[RULES_NAME_MAX + 1];   /* a keep's name is its pattern, cut */
    const char *file;                /* the rules file's name (struct rules owns it) */
    int line;
    struct rules_pattern legacy;     /* keep: the PATTERN */
    struct rules_template cluster;   /* rule only */
    bool indexed;
    struct rules_template index;
    struct rules_pattern member;
    struct rules_capture cap[RULES_MAX_CAPTURES];
    size_t ncap;
    int id_cap;                      /* capture named `id`, or -1 */
    bool bucket;                     /* CLUSTER or INDEX uses <b> */
    const char *pattern;             /* LEGACY (keep: PATTERN) as written */
    enum rules_copy copy;
    const char *copy_item;           /* copy log: the item rule's name */
    const struct rules_rule *pair;   /* copy log: its item rule; copy item: its log */
    int item_cap;                    /* copy item: the capture a log's member fills */
    enum rules_live live;
    int ticket_cap;                  /* live ticket: the constrained capture, */
    size_t ticket_more, ticket_less; /* and its alternatives A and B */
    char *text;                      /* owns the strings the above point to */
};

struct rules {
    char *file;           /* the name errors and rules_rule.file give */
    struct rules_rule *rule;
    size_t nrule;
    size_t literal_max;   /* the most literal bytes of any template or pattern */
};

/* Parse the rules file at path. Returns the rule set (free with rules_free),
 * or NULL with `PATH:LINE: what is wrong` (or `PATH: strerror`) in err. */
struct rules *rules_load_file(const char *path, char *err, size_t errlen);

/* The same over text[0..len), errors naming the file `name`. */
struct rules *rules_load_string(const char *name, const char *text, size_t len,
                                char *err, size_t errlen);

void rules_free(struct rules *rules);

/* The index of r's capture named name[0..len), or -1. */
int rules_capture_find(const struct rules_rule *r, const char *name, size_t len);

/* MODE's word: "plain", "greater", ... */
const char *rules_copy_name(enum rules_copy copy);

/* Whether byte c is percent-encoded in a cluster name:
 * % : { } * ? [ ] \, bytes below 0x21 and 0x7F. A table, as it is asked for
 * every byte of every rewritten name. */
extern const bool rules_encode_set[256];

static inline bool rules_must_encode(unsigned char c)
{
    return rules_encode_set[c];
}

#endif
