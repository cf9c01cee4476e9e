/*
 * libFuzzer harness for the key layout (keylayout/layout.h), with each of
 * the shipped rules (conf/layouts/botmesh-v1.rules, prefixes "bot" and
 * "b2"; conf/layouts/courier-v1.rules, prefixes "courier" and "presence";
 * make fuzz runs it from the top of the tree).
 *
 * Input: any bytes, taken as a key name a client sends. Checked, as the
 * layout's contract says:
 *   - a legacy name that maps to a cluster name maps back to itself, through
 *     the same rule and bucket, and both names stay within layout_max_len;
 *   - a name read back from the cluster that maps to a legacy name maps
 *     forward to itself again (so listings never show a name that writes
 *     elsewhere);
 *   - the cluster name's hash tag is whole: no '{' or '}' after it;
 *   - an indexed record's index key hashes to the record's slot.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/slot.h"
#include "keylayout/layout.h"
#include "keylayout/layoutload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NLAYOUTS 2

static struct layout *layouts[NLAYOUTS];

/* The shipped layout i, loaded once. */
static const struct layout *the_layout(int i)
{
    static const char *const files[NLAYOUTS] = { "conf/layouts/botmesh-v1.rules",
                                                 "conf/layouts/courier-v1.rules" };
    static const char *const prefixes[NLAYOUTS][2] = { { "bot", "b2" },
                                                       { "courier", "presence" } };
    if (!layouts[i]) {
        char err[256];
        layouts[i] = layout_load_file(files[i], prefixes[i], 2, err, sizeof err);
        if (!layouts[i]) {
            fprintf(stderr, "fuzz_layout: %s (run from the top of the tree)\n", err);
            abort();
        }
    }
    return layouts[i];
}

static void check_tag_whole(const char *name, size_t len)
{
    const char *open = memchr(name, '{', len);
    if (!open)
        return;
    const char *close = memchr(open + 1, '}', len - (size_t)(open + 1 - name));
    if (!close)
        abort();
    size_t after = len - (size_t)(close + 1 - name);
    if (memchr(close + 1, '{', after) || memchr(close + 1, '}', after))
        abort();
}

/* Legacy -> cluster -> legacy is the identity. */
static void forward(const struct layout *l, const char *key, size_t len)
{
    char out[4096], back[4096], idx[4096];
    size_t n, bn;
    struct layout_match m, m2;
    if (layout_to_cluster(l, key, len, out, sizeof out, &n, &m) != LAYOUT_MAPPED)
        return;
    if (n > layout_max_len(l, len))
        abort();
    check_tag_whole(out, n);
    if (layout_to_legacy(l, out, n, back, sizeof back, &bn, &m2) != LAYOUT_MAPPED ||
        m2.rule != m.rule || m2.bucket != m.bucket || bn != len || memcmp(back, key, len) != 0)
        abort();
    if (m.rule->indexed) {
        size_t in = layout_index_key(l, &m, idx, sizeof idx);
        if (in > sizeof idx || slot_of(idx, in) != slot_of(out, n))
            abort();
    }
}

/* Cluster -> legacy -> cluster is the identity, whenever it maps. */
static void backward(const struct layout *l, const char *key, size_t len)
{
    char out[4096], again[4096];
    size_t n, an;
    if (layout_to_legacy(l, key, len, out, sizeof out, &n, NULL) == LAYOUT_MAPPED) {
        if (n > layout_max_len(l, len) ||
            layout_to_cluster(l, out, n, again, sizeof again, &an, NULL) != LAYOUT_MAPPED ||
            an != len || memcmp(again, key, len) != 0)
            abort();
    }
    if (layout_record_to_legacy(l, key, len, out, sizeof out, &n, NULL) == LAYOUT_MAPPED &&
        (layout_to_cluster(l, out, n, again, sizeof again, &an, NULL) != LAYOUT_MAPPED ||
         an != len || memcmp(again, key, len) != 0))
        abort();
    (void)layout_is_index(l, key, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int i = 0; i < NLAYOUTS; i++) {
        const struct layout *l = the_layout(i);
        if (size > 1024 || layout_max_len(l, size) > 4096)
            continue;
        forward(l, (const char *)data, size);
        backward(l, (const char *)data, size);
    }
    return 0;
}
