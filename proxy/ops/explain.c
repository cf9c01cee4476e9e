#include "proxy/ops/explain.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/slot.h"
#include "proxy/config/config.h"
#include "keylayout/layout.h"
#include "keylayout/layoutload.h"

#define EXIT_USAGE 2

struct explain_args {
    const char *config;
    char **opt;          /* --layout-rules / --layout-prefix words, for config_load */
    int nopt;
    char **key;
    int nkey;
};

static int usage(const char *why)
{
    fprintf(stderr, "tagproxy layout explain: %s\nusage: tagproxy layout explain "
            "[--layout-rules FILE [P ...]]... [--layout-prefix P ...] [-c CONFIG] [--] KEY...\n",
            why);
    return -1;
}

/* A word an option takes after its first: a valid prefix (a key holds ':'). */
static bool prefix_word(const char *w)
{
    char err[128];
    return w[0] != '-' && layout_check_prefix(w, err, sizeof err) == 0;
}

/* One --layout-rules FILE [P ...] or --layout-prefix P [P ...] at argv[*i]. */
static int option_take(int argc, char **argv, int *i, struct explain_args *a)
{
    bool rules = strcmp(argv[*i], "--layout-rules") == 0;
    a->opt[a->nopt++] = argv[(*i)++];
    if (rules && *i < argc)
        a->opt[a->nopt++] = argv[(*i)++];
    else if (rules || *i == argc || !prefix_word(argv[*i]))
        return usage(rules ? "--layout-rules needs a FILE" : "--layout-prefix needs a prefix");
    while (*i < argc && prefix_word(argv[*i]))
        a->opt[a->nopt++] = argv[(*i)++];
    return 0;
}

/* a->opt must have room for argc words. */
static int args_parse(int argc, char **argv, struct explain_args *a)
{
    int i = 0;
    while (i < argc) {
        const char *w = argv[i];
        if (strcmp(w, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(w, "-c") == 0) {
            if (i + 1 == argc)
                return usage("-c needs a CONFIG file");
            a->config = argv[i + 1];
            i += 2;
        } else if (strcmp(w, "--layout-rules") == 0 || strcmp(w, "--layout-prefix") == 0) {
            if (option_take(argc, argv, &i, a) < 0)
                return -1;
        } else if (w[0] == '-') {
            return usage("unknown option (a KEY that starts with '-' goes after --)");
        } else {
            break;
        }
    }
    a->key = argv + i;
    a->nkey = argc - i;
    return a->nkey > 0 ? 0 : usage("no KEY given");
}

/* A name as it is, but control bytes and '\' as \xHH. */
static void name_put(FILE *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7F || c == '\\')
            fprintf(out, "\\x%02X", c);
        else
            fputc(c, out);
    }
}

static void line_name(FILE *out, const char *label, const char *s, size_t len)
{
    fprintf(out, "  %-8s ", label);
    name_put(out, s, len);
    fputc('\n', out);
}

static void line_rule(FILE *out, const char *label, const struct rules_rule *r)
{
    fprintf(out, "  %-8s %s (%s:%d)\n", label, r->name, r->file, r->line);
}

static void line_slot(FILE *out, const char *name, size_t len)
{
    fprintf(out, "  %-8s %d\n", "slot", slot_of(name, len));
}

/* What `tagproxy migrate` reads of the family, when it is not the
 * default: its copy mode and its sign of a running bot. */
static void migration_put(FILE *out, const struct rules_rule *r)
{
    if (r->copy == RULES_COPY_LOG)
        fprintf(out, "  %-8s log %s\n", "copy", r->pair->name);
    else if (r->copy == RULES_COPY_ITEM)
        fprintf(out, "  %-8s item (of the log %s)\n", "copy", r->pair->name);
    else if (r->copy != RULES_COPY_PLAIN)
        fprintf(out, "  %-8s %s\n", "copy", rules_copy_name(r->copy));
    if (r->live == RULES_LIVE_HEARTBEAT)
        fprintf(out, "  %-8s heartbeat\n", "live");
    else if (r->live == RULES_LIVE_TICKET) {
        const struct rules_capture *c = &r->cap[r->ticket_cap];
        fprintf(out, "  %-8s ticket %.*s>%.*s\n", "live", (int)c->alt_len[r->ticket_more],
                c->alt[r->ticket_more], (int)c->alt_len[r->ticket_less], c->alt[r->ticket_less]);
    }
}

/* A rule's match m: legacy and cluster names, slot, index, migration. */
static void mapped_put(FILE *out, const struct layout *l, const struct layout_match *m,
                       const char *legacy, size_t llen, const char *cluster, size_t clen,
                       char *buf, size_t cap)
{
    line_rule(out, "rule", m->rule);
    line_name(out, "legacy", legacy, llen);
    line_name(out, "cluster", cluster, clen);
    line_slot(out, cluster, clen);
    if (m->rule->indexed) {
        line_name(out, "index", buf, layout_index_key(l, m, buf, cap));
        line_name(out, "member", buf, layout_index_member(l, m, buf, cap));
    }
    migration_put(out, m->rule);
}

/* A name that no rule's legacy pattern matches: a cluster name, an index,
 * or a name that passes through. */
static void unmatched_put(FILE *out, const struct layout *l, const char *key, size_t len,
                          char *buf, char *buf2, size_t cap)
{
    struct layout_match m;
    size_t n;
    const struct rules_rule *ir;
    if (layout_to_legacy(l, key, len, buf, cap, &n, &m) == LAYOUT_MAPPED) {
        mapped_put(out, l, &m, buf, n, key, len, buf2, cap);
    } else if ((ir = layout_index_rule(l, key, len))) {
        line_rule(out, "index of", ir);
        line_slot(out, key, len);
    } else {
        fprintf(out, "  no rule: passes through\n");
        line_slot(out, key, len);
    }
}

static int key_explain(FILE *out, const struct layout *l, const char *key)
{
    size_t len = strlen(key), cap = layout_max_len(l, len), n;
    char *buf = malloc(cap), *buf2 = malloc(cap);
    struct layout_match m;
    if (!buf || !buf2) {
        free(buf);
        free(buf2);
        fprintf(stderr, "out of memory\n");
        return -1;
    }
    name_put(out, key, len);
    fputc('\n', out);
    switch (layout_to_cluster(l, key, len, buf, cap, &n, &m)) {
    case LAYOUT_MAPPED:
    case LAYOUT_SHORT:      /* not with cap from layout_max_len */
        mapped_put(out, l, &m, key, len, buf, n < cap ? n : cap, buf2, cap);
        break;
    case LAYOUT_KEEP:
        line_rule(out, "keep", m.rule);
        line_name(out, "legacy", key, len);
        line_name(out, "cluster", key, len);
        line_slot(out, key, len);
        migration_put(out, m.rule);
        break;
    case LAYOUT_PASS:
        unmatched_put(out, l, key, len, buf, buf2, cap);
        break;
    }
    free(buf);
    free(buf2);
    return 0;
}

/* The layout of CONFIG, the environment and the options; NULL with the
 * reason on stderr. */
static struct layout *layout_of(const struct explain_args *a, char **envp)
{
    struct config c;
    char err[1024];
    struct layout *l = NULL;
    if (config_load(&c, a->config, envp, a->nopt, a->opt, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return NULL;
    }
    if (!c.layout_rules)
        snprintf(err, sizeof err, "no layout-rules file given (--layout-rules FILE [P ...], "
                 "or -c CONFIG holding layout-rules)");
    else if (config_validate_layout(&c, err, sizeof err) == 0)
        l = config_layout_load(&c, err, sizeof err);
    if (!l)
        fprintf(stderr, "%s\n", err);
    config_free(&c);
    return l;
}

int explain_main(int argc, char **argv, char **envp, FILE *out)
{
    struct explain_args a = { NULL, calloc((size_t)argc + 1, sizeof(char *)), 0, NULL, 0 };
    if (!a.opt) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    if (args_parse(argc, argv, &a) < 0) {
        free(a.opt);
        return EXIT_USAGE;
    }
    struct layout *l = layout_of(&a, envp);
    int rc = l ? 0 : 1;
    for (int i = 0; l && i < a.nkey && rc == 0; i++) {
        if (i > 0)
            fputc('\n', out);
        rc = key_explain(out, l, a.key[i]) < 0 ? 1 : 0;
    }
    layout_free(l);
    free(a.opt);
    return rc;
}
