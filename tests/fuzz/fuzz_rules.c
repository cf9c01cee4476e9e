/*
 * libFuzzer harness for the layout rules parser (keylayout/rules.h) and for
 * the layout built from whatever it accepts (keylayout/layout.h).
 *
 * Input: a rules file, then optionally a NUL byte and a key name. A file
 * the parser refuses must come with a `NAME:LINE: ...` message; one it
 * accepts is built into a layout (prefix "bot"), and the key name is run
 * through every mapping: nothing may read or write out of bounds (the
 * sanitizers check), a name within layout_max_len, and a legacy name read
 * back must map forward to the name it came from (layout_to_legacy's
 * promise, whatever the rules). Then the file beside the shipped
 * botmesh-v1 rules, both for "bot": accepted only when no name is matched
 * by both (keylayout/overlap.h), so the key may not be matched by both;
 * refused with a message naming the fuzzed file.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "keylayout/layout.h"
#include "keylayout/layoutload.h"
#include "keylayout/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void map_key(const struct layout *l, const char *key, size_t len)
{
    char out[4096], again[4096];
    size_t n, an;
    if (layout_max_len(l, len) > sizeof out)
        return;
    enum layout_result r = layout_to_cluster(l, key, len, out, sizeof out, &n, NULL);
    if (r == LAYOUT_MAPPED && n > layout_max_len(l, len))
        abort();
    if (layout_to_legacy(l, key, len, out, sizeof out, &n, NULL) == LAYOUT_MAPPED &&
        (n > layout_max_len(l, len) ||
         layout_to_cluster(l, out, n, again, sizeof again, &an, NULL) != LAYOUT_MAPPED ||
         an != len || memcmp(again, key, len) != 0))
        abort();
    (void)layout_record_to_legacy(l, key, len, out, sizeof out, &n, NULL);
    (void)layout_is_index(l, key, len);
}

#define SHIPPED "conf/layouts/botmesh-v1.rules"

static bool takes(const struct layout *l, const char *key, size_t len)
{
    char out[4096];
    size_t n;
    return layout_max_len(l, len) <= sizeof out &&
           layout_to_cluster(l, key, len, out, sizeof out, &n, NULL) != LAYOUT_PASS;
}

static void beside_shipped(const char *text, size_t tlen, const struct layout *alone,
                           const char *key, size_t klen)
{
    static const char *const prefixes[] = { "bot" };
    static struct layout *shipped;
    char err[1024];
    if (!shipped && !(shipped = layout_load_file(SHIPPED, prefixes, 1, err, sizeof err)))
        abort();
    const struct layout_source src[] = { { SHIPPED, NULL, 0, prefixes, 1 },
                                         { "fuzz.rules", text, tlen, prefixes, 1 } };
    struct layout *both = layout_load(src, 2, err, sizeof err);
    if (!both) {
        if (!strstr(err, "fuzz.rules:"))
            abort();
        return;
    }
    if (key && takes(alone, key, klen) && takes(shipped, key, klen))
        abort();        /* two files match one name: the check missed it */
    if (key)
        map_key(both, key, klen);
    layout_free(both);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nul = memchr(text, '\0', size);
    size_t tlen = nul ? (size_t)(nul - text) : size;
    char err[512];
    err[0] = '\0';
    struct rules *rules = rules_load_string("fuzz.rules", text, tlen, err, sizeof err);
    if (!rules) {
        if (strncmp(err, "fuzz.rules", 10) != 0)   /* a refusal says where */
            abort();
    } else {
        rules_free(rules);
    }
    static const char *const prefixes[] = { "bot" };
    struct layout *l = layout_load_string("fuzz.rules", text, tlen, prefixes, 1, err, sizeof err);
    if (!l)
        return 0;
    if (nul)
        map_key(l, nul + 1, size - tlen - 1);
    beside_shipped(text, tlen, l, nul ? nul + 1 : NULL, nul ? size - tlen - 1 : 0);
    layout_free(l);
    return 0;
}
