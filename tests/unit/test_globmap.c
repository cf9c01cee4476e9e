/*
 * Legacy globs as cluster globs (keylayout/globmap.h) with the shipped
 * botmesh-v1 rules: the globs of a few patterns word for word, then every
 * prefix of a set of names as a pattern against every name, both ways: a
 * glob never matches the cluster name of a legacy name the pattern does
 * not match (a user's script gets no key its user could not name), and
 * matches that of every one it does match. Run from the repository root
 * (as make test does).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keylayout/glob.h"
#include "keylayout/globmap.h"
#include "keylayout/layout.h"
#include "keylayout/layoutload.h"

#define DEFAULT_RULES "conf/layouts/botmesh-v1.rules"

static struct layout *layout_default(void)
{
    static const char *const pf[] = { "bot", "b2" };
    char err[256] = "";
    struct layout *l = layout_load_file(DEFAULT_RULES, pf, 2, err, sizeof err);
    ck_assert_msg(l != NULL, "%s", err);
    return l;
}

#define GLOBS_MAX 32

struct globs {
    char g[GLOBS_MAX][GLOBMAP_MAX + 1];
    int n;
};

static void collect(void *arg, const char *glob, size_t len)
{
    struct globs *gs = arg;
    ck_assert_int_lt(gs->n, GLOBS_MAX);
    memcpy(gs->g[gs->n], glob, len);
    gs->g[gs->n++][len] = '\0';
}

static int map(const struct layout *l, const char *pattern, struct globs *gs)
{
    gs->n = 0;
    return globmap_cluster(l, pattern, strlen(pattern), collect, gs);
}

static const struct {
    const char *pattern;
    int rc;
    const char *globs[3];
} vectors[] = {
    { "bot:user:u1:*", 1, { "bot:{ud:u1}:e:*:*" } },
    { "bot:user:u1:ns:k*", 1, { "bot:{ud:u1}:e:ns:k*" } },
    { "bot:chat:*", 1, { "bot:{ch:*}:r:*" } },
    { "bot:chat:tg:42", 1, { "bot:{ch:16}:r:tg%3A42" } },
    { "bot:lock:a*", 2, { "bot:{lk:a*}:f", "bot:{lk:a*}:l" } },
    { "bot:lock:a:fe*", 3, { "bot:{lk:a}:f", "bot:{lk:a%3Afe*}:f", "bot:{lk:a%3Afe*}:l" } },
    { "bot:co:turn:c1:*", 2, { "bot:co:{t:c1}:*", "bot:co:{t:c1%3A*}:*" } },
    { "b2:msgs:*", 1, { "b2:{m:*}:z" } },
    { "bot:chat:a\\*b", 1, { "bot:{ch:16}:r:a%2Ab" } },
    { "bot:*", 0, { NULL } },           /* every name under bot: matches already */
    { "b*", 0, { NULL } },
    { "*", 0, { NULL } },
    { "cache:*", 0, { NULL } },         /* under no prefix */
    { "bot:conv:1", 0, { NULL } },      /* kept: the same name */
    { "cache:?", 0, { NULL } },
    { "bot:ch?t:*", -1, { NULL } },
    { "*:chat:*", -1, { NULL } },
    { "bot:[ab]*", -1, { NULL } },
};

START_TEST(test_vectors)
{
    struct layout *l = layout_default();
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        struct globs gs;
        int rc = map(l, vectors[i].pattern, &gs);
        ck_assert_msg(rc == vectors[i].rc, "%s: %d globs, not %d", vectors[i].pattern, rc,
                      vectors[i].rc);
        ck_assert_int_eq(gs.n, rc < 0 ? 0 : rc);
        for (int g = 0; g < gs.n; g++) {
            ck_assert_msg(strcmp(gs.g[g], vectors[i].globs[g]) == 0, "%s: glob %d is %s, not %s",
                          vectors[i].pattern, g, gs.g[g], vectors[i].globs[g]);
        }
    }
    layout_free(l);
}
END_TEST

static const char *const names[] = {
    "bot:chat:tg:42", "bot:chat:", "bot:chat:a*b", "bot:msgs:c1", "bot:msg:c1:m1",
    "bot:msg:a:b:c", "bot:contact:x", "bot:user:u1:ns:k", "bot:user:u1:ns:k:deep",
    "bot:user:u10:n2:z", "bot:user:u1", "bot:lock:a:fence", "bot:lock:a:b", "bot:lock:ab",
    "bot:co:turn:c1:seq", "bot:co:turn:c1:x:owner", "bot:co:leader:n1:term", "bot:co:leader:n1",
    "b2:chat:7", "bot:conv:1", "bot:schedule:s 1", "bot:checkpoint:[x]", "other:chat:1",
};
#define NNAMES (sizeof names / sizeof names[0])

static int any_match(const struct globs *gs, const char *s, size_t len)
{
    for (int g = 0; g < gs->n; g++)
        if (glob_match(gs->g[g], strlen(gs->g[g]), s, len))
            return 1;
    return 0;
}

/* The pattern of name[0..cut), escaped, then '*' unless literal. */
static void pattern_of(const char *name, size_t cut, int literal, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < cut; i++) {
        if (strchr("*?[]\\", name[i]))
            out[n++] = '\\';
        out[n++] = name[i];
    }
    if (!literal)
        out[n++] = '*';
    out[n] = '\0';
}

START_TEST(test_every_prefix)
{
    struct layout *l = layout_default();
    for (size_t a = 0; a < NNAMES; a++) {
        size_t alen = strlen(names[a]);
        for (size_t cut = 0; cut <= alen + 1; cut++) {
            int literal = cut == alen + 1;
            char pattern[256];
            pattern_of(names[a], literal ? alen : cut, literal, pattern);
            struct globs gs;
            ck_assert_int_ge(map(l, pattern, &gs), 0);
            for (size_t b = 0; b < NNAMES; b++) {
                char cluster[512];
                size_t clen;
                if (layout_to_cluster(l, names[b], strlen(names[b]), cluster, sizeof cluster,
                                      &clen, NULL) != LAYOUT_MAPPED)
                    continue;
                int legacy = glob_match(pattern, strlen(pattern), names[b], strlen(names[b])) ||
                             (strcmp(pattern, "*") == 0);
                int direct = glob_match(pattern, strlen(pattern), cluster, clen);
                int mapped = any_match(&gs, cluster, clen);
                ck_assert_msg(!mapped || legacy, "%s: a glob matches %.*s, the name of %s",
                              pattern, (int)clen, cluster, names[b]);
                ck_assert_msg(!legacy || direct || mapped,
                              "%s: no glob matches %.*s, the name of %s", pattern, (int)clen,
                              cluster, names[b]);
            }
        }
    }
    layout_free(l);
}
END_TEST

static Suite *globmap_suite(void)
{
    Suite *s = suite_create("globmap");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_vectors);
    tcase_add_test(tc, test_every_prefix);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(globmap_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
