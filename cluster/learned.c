/*
 * learned: the commands the cluster knows beyond the built-in table. See
 * learned.h.
 */
#include "cluster/learned.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/proto/command.h"

/* The built-in entry named like c (a subcommand of a built-in container
 * looked up under it), or NULL; *container: c's built-in container when c
 * is a subcommand the table lacks. */
static const struct command *builtin_of(const struct command *c, const struct command *parent,
                                        const struct command **container)
{
    *container = NULL;
    if (!parent)
        return command_lookup(c->name, strlen(c->name));
    const struct command *p = command_lookup(parent->name, strlen(parent->name));
    if (!p)
        return NULL;
    const struct command *sub = command_lookup_sub(p, c->name, strlen(c->name));
    if (!sub)
        *container = p;
    return sub;
}

static int by_fullname(const void *a, const void *b)
{
    const struct learned_command *x = a, *y = b;
    return strcmp(x->cmd->fullname, y->cmd->fullname);
}

static int command_by_fullname(const void *a, const void *b)
{
    const struct command *const *x = a, *const *y = b;
    return strcmp((*x)->fullname, (*y)->fullname);
}

/* The oldest master's commands, by name, into s->all. */
static int keep_all(struct learned_set *s, const struct learned_master *oldest)
{
    if (!oldest || oldest->n == 0)
        return 0;
    s->all = malloc(sizeof *s->all * (size_t)oldest->n);
    if (!s->all)
        return -1;
    for (int i = 0; i < oldest->n; i++)
        s->all[i] = oldest->commands[i];
    s->nall = oldest->n;
    qsort(s->all, (size_t)s->nall, sizeof *s->all, command_by_fullname);
    return 0;
}

/* A learned command named like c in s so far, or NULL (s is being built:
 * a linear search, at a topology change only). */
static struct learned_command *find_built(struct learned_set *s, const struct command *c)
{
    for (int i = 0; i < s->ncommands; i++)
        if (strcmp(s->commands[i].cmd->fullname, c->fullname) == 0)
            return &s->commands[i];
    return NULL;
}

/* c and its subcommands get their learned indexes: 0, or -1 when none is
 * left (COMMAND_LEARNED_MAX names learned). */
static int give_index(struct command *c)
{
    if (!c->learned_index && (c->learned_index = command_learned_index(c->fullname)) < 0) {
        c->learned_index = 0;
        return -1;
    }
    for (int k = 0; k < c->nsubcommands; k++)
        if (give_index((struct command *)&c->subcommands[k]) < 0)
            return -1;
    return 0;
}

static int keyspec_same(const struct keyspec *a, const struct keyspec *b)
{
    if (a->flags != b->flags || a->bs != b->bs || a->fk != b->fk)
        return 0;
    if (a->bs == KSPEC_BS_INDEX && a->bs_u.index.pos != b->bs_u.index.pos)
        return 0;
    if (a->bs == KSPEC_BS_KEYWORD &&
        (a->bs_u.keyword.startfrom != b->bs_u.keyword.startfrom ||
         strcasecmp(a->bs_u.keyword.keyword, b->bs_u.keyword.keyword) != 0))
        return 0;
    if (a->fk == KSPEC_FK_RANGE)
        return a->fk_u.range.lastkey == b->fk_u.range.lastkey &&
               a->fk_u.range.keystep == b->fk_u.range.keystep &&
               a->fk_u.range.limit == b->fk_u.range.limit;
    if (a->fk == KSPEC_FK_KEYNUM)
        return a->fk_u.keynum.keynumidx == b->fk_u.keynum.keynumidx &&
               a->fk_u.keynum.firstkey == b->fk_u.keynum.firstkey &&
               a->fk_u.keynum.keystep == b->fk_u.keynum.keystep;
    return 1;
}

/* Whether the cluster's key specs for a command are not the table's: where
 * its keys are, or how each is accessed (SINTERSTORE's destination is RW in
 * Redis 7.0, OW from 7.2 on: an ACL %W~ pattern allows it there). */
static int keyspecs_differ(const struct command *b, const struct command *c)
{
    if (b->nkeyspecs != c->nkeyspecs)
        return 1;
    for (int i = 0; i < b->nkeyspecs; i++)
        if (!keyspec_same(&b->keyspecs[i], &c->keyspecs[i]))
            return 1;
    return 0;
}

/* Whether the cluster's entry for built-in b says otherwise of what the
 * proxy acts on: its arity, its key specs, its flags (the cluster's
 * no-multi refuses WATCH in MULTI as Valkey 8 does). */
static int differs(const struct command *b, const struct command *c)
{
    return b->arity != c->arity || keyspecs_differ(b, c) || b->flags != c->flags;
}

/* c (of a master; the oldest when oldest) into s: learned when the table
 * lacks it, an override when it differs from the table's. */
static int add(struct learned_set *s, const struct command *c, const struct command *parent,
               int oldest, int *cap)
{
    const struct command *container, *b = builtin_of(c, parent, &container);
    if (b) {
        if (oldest && differs(b, c)) {      /* logged by the caller: learned_log */
            int i = command_index(b);
            if (!s->overrides[i])
                s->noverrides++;
            s->overrides[i] = c;
        }
        for (int k = 0; !parent && k < c->nsubcommands; k++)
            if (add(s, &c->subcommands[k], c, oldest, cap) < 0)
                return -1;
        return 0;
    }
    if (parent && !container)
        return 0;               /* a subcommand of a learned command: it comes with it */
    if (give_index((struct command *)c) < 0)
        return 0;               /* no index left: not served (the router: unknown) */
    struct learned_command *l = find_built(s, c);
    if (!l) {
        if (s->ncommands == *cap) {
            int grown = *cap ? *cap * 2 : 16;
            struct learned_command *more = realloc(s->commands, sizeof *more * (size_t)grown);
            if (!more)
                return -1;
            s->commands = more;
            *cap = grown;
        }
        l = &s->commands[s->ncommands++];
        l->cmd = c;
        l->known_by = 0;
    }
    l->known_by++;
    if (oldest)
        l->cmd = c;
    return 0;
}

static int latest_commands, latest_overrides;     /* atomic */

void learned_counts(int *commands, int *overrides)
{
    *commands = __atomic_load_n(&latest_commands, __ATOMIC_RELAXED);
    *overrides = __atomic_load_n(&latest_overrides, __ATOMIC_RELAXED);
}

/* s's arrays and s (one that failed as it was built). */
static void set_free(struct learned_set *s)
{
    free(s->commands);
    free(s->overrides);
    free(s->all);
    free(s);
}

struct learned_set *learned_build(const struct learned_master *masters, int n, int lowest)
{
    struct learned_set *s = calloc(1, sizeof *s);
    int cap = 0;
    command_index_init();
    if (!s || !(s->overrides = calloc((size_t)command_index_count(), sizeof *s->overrides))) {
        free(s);
        return NULL;
    }
    s->nmasters = n;
    for (int m = 0; m < n; m++)
        for (int i = 0; i < masters[m].n; i++)
            if (add(s, masters[m].commands[i], NULL, m == lowest, &cap) < 0) {
                set_free(s);
                return NULL;
            }
    if (s->ncommands)
        qsort(s->commands, (size_t)s->ncommands, sizeof *s->commands, by_fullname);
    if (keep_all(s, lowest >= 0 && lowest < n ? &masters[lowest] : NULL) < 0) {
        set_free(s);
        return NULL;
    }
    __atomic_store_n(&latest_commands, s->ncommands, __ATOMIC_RELAXED);
    __atomic_store_n(&latest_overrides, s->noverrides, __ATOMIC_RELAXED);
    return s;
}

void learned_log(const struct learned_set *s, void (*say)(const char *line))
{
    char line[200];
    for (int i = 0; i < command_index_count() && s->noverrides; i++)
        if (s->overrides[i]) {
            const struct command *b = command_by_index(i), *c = s->overrides[i];
            if (b->arity != c->arity) {
                snprintf(line, sizeof line, "%s: the cluster's arity %d, the table's %d (the "
                         "cluster's is checked)", b->fullname, c->arity, b->arity);
                say(line);
            }
            if (keyspecs_differ(b, c)) {
                snprintf(line, sizeof line, "%s: the cluster's key specs differ from the "
                         "table's (the cluster's find and check its keys)", b->fullname);
                say(line);
            }
            if (b->flags != c->flags) {
                snprintf(line, sizeof line, "%s: the cluster's flags differ from the table's "
                         "(the cluster's are used)", b->fullname);
                say(line);
            }
        }
    for (int i = 0; i < s->ncommands; i++) {
        snprintf(line, sizeof line, "%s: learned, known to %d of %d masters",
                 s->commands[i].cmd->fullname, s->commands[i].known_by, s->nmasters);
        say(line);
    }
}

/* The index of the entry named name[0..len) (any case) among n sorted by
 * their lower-case full names, fullname_at(s, i) giving each; -1 if none. */
static int search(const struct learned_set *s, int n,
                  const char *(*fullname_at)(const struct learned_set *, int), const char *name,
                  size_t len)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const char *cand = fullname_at(s, mid);
        int cmp = strncasecmp(cand, name, len);
        if (cmp == 0 && cand[len] != '\0')
            cmp = 1;            /* cand is longer: it sorts after */
        if (cmp == 0)
            return mid;
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static const char *learned_name_at(const struct learned_set *s, int i)
{
    return s->commands[i].cmd->fullname;
}

static const char *all_name_at(const struct learned_set *s, int i)
{
    return s->all[i]->fullname;
}

const struct learned_command *learned_find(const struct learned_set *s, const char *name,
                                           size_t len)
{
    int i = s ? search(s, s->ncommands, learned_name_at, name, len) : -1;
    return i < 0 ? NULL : &s->commands[i];
}

const struct command *learned_any(const struct learned_set *s, const char *name, size_t len)
{
    int i = s ? search(s, s->nall, all_name_at, name, len) : -1;
    return i < 0 ? NULL : s->all[i];
}

const struct command *learned_override(const struct learned_set *s, const struct command *cmd)
{
    return s && s->noverrides && !cmd->learned_index ? s->overrides[command_index(cmd)] : NULL;
}
