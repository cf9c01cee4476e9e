/*
 * command: lookup in the generated command table, arity checks, and key
 * extraction.
 *
 * Key extraction follows Redis 7.0 (db.c): the key specs are interpreted as
 * getKeysUsingKeySpecs does; when a spec cannot say (an "unknown" or
 * INCOMPLETE spec, or arguments that do not fit it) the command's own rule
 * takes over, as Redis falls back to the command's getkeys_proc:
 *
 *   command_keys ──► keys_by_specs ──ok──► keys
 *                         │ fails
 *                         ▼
 *                    fallback rule (SORT, MIGRATE, GEORADIUS*, XREAD*,
 *                    numkeys commands) ──► keys, 0, or -1
 *
 * Nothing here allocates, locks or does I/O (command_index_init aside, once):
 * the table is const and sorted; top-level lookups use a hash table built
 * once (command_lookup), subcommand lookups binary searches.
 */
#include "lib/proto/command.h"

#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

#include "lib/base/hash.h"

/* Longer than any Redis command or subcommand name. */
#define COMMAND_NAME_MAX 64

/* ASCII-only case folding, as Redis compares command names. */
static inline unsigned char fold(unsigned char c)
{
    return (unsigned char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
}

/* Does name[0..len) equal the lower-case, NUL-terminated cand, ignoring case? */
static int name_equal(const char *cand, const char *name, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (cand[i] == '\0' || (unsigned char)cand[i] != fold((unsigned char)name[i]))
            return 0;
    return cand[len] == '\0';
}

/* Binary search of a sorted (lower-case) command array for name[0..len). */
static const struct command *find_sorted(const struct command *cmds, int n,
                                         const char *name, size_t len)
{
    char low[COMMAND_NAME_MAX];
    int lo = 0, hi = n - 1;

    if (len == 0 || len >= sizeof(low))
        return NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '\0')
            return NULL;
        low[i] = (char)fold(c);
    }
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const char *cand = cmds[mid].name;
        int cmp = strncmp(cand, low, len);
        if (cmp == 0 && cand[len] != '\0')
            cmp = 1;            /* cand is longer: it sorts after */
        if (cmp == 0)
            return &cmds[mid];
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

/*
 * Top-level commands are looked up for every request, so a binary search
 * (a lower-casing copy and several strncmp) would be a visible part of a
 * GET's cost. A hash table over the names, built once, answers in one hash
 * of the name as sent (case folded while hashing, no copy) and usually one
 * comparison. Open addressing with linear probing; the table is
 * at most a quarter full.
 */
#define LOOKUP_SLOTS 1024       /* power of two, >= 4 * command_table_size */

static const struct command *lookup_slots[LOOKUP_SLOTS];

/* FNV-1a of the case-folded name: 'A' and 'a' hash alike. */
static uint32_t name_hash(const char *name, size_t len)
{
    uint32_t h = HASH_FNV32_INIT;
    for (size_t i = 0; i < len; i++)
        h = hash_fnv32_byte(h, fold((unsigned char)name[i]));
    return h;
}

static void lookup_build(void)
{
    for (int i = 0; i < command_table_size; i++) {
        const char *name = command_table[i].name;
        uint32_t at = name_hash(name, strlen(name)) & (LOOKUP_SLOTS - 1);
        while (lookup_slots[at])
            at = (at + 1) & (LOOKUP_SLOTS - 1);
        lookup_slots[at] = &command_table[i];
    }
}

const struct command *command_lookup(const char *name, size_t len)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, lookup_build);
    if (len == 0 || len >= COMMAND_NAME_MAX)
        return NULL;
    for (uint32_t at = name_hash(name, len) & (LOOKUP_SLOTS - 1); lookup_slots[at];
         at = (at + 1) & (LOOKUP_SLOTS - 1))
        if (name_equal(lookup_slots[at]->name, name, len))
            return lookup_slots[at];
    return NULL;
}

const struct command *command_lookup_sub(const struct command *parent,
                                         const char *name, size_t len)
{
    if (parent == NULL || parent->nsubcommands == 0)
        return NULL;
    return find_sorted(parent->subcommands, parent->nsubcommands, name, len);
}

/* ---- indexes ---- */

#define COMMAND_TOP_MAX 1024

/* sub_base[i]: index of the first subcommand of command_table[i] */
static int sub_base[COMMAND_TOP_MAX];
static int index_count;

/* The learned indexes: builtin_count + i is learned[i]'s, named by it. */
static int builtin_count;
static pthread_mutex_t learned_lock = PTHREAD_MUTEX_INITIALIZER;
static struct command learned[COMMAND_LEARNED_MAX];     /* fullname and name only */
static int nlearned;                                     /* under learned_lock */

static void index_build(void)
{
    int next = command_table_size;
    for (int i = 0; i < command_table_size && i < COMMAND_TOP_MAX; i++) {
        sub_base[i] = next;
        next += command_table[i].nsubcommands;
    }
    builtin_count = next;
    index_count = next + COMMAND_LEARNED_MAX;
}

int command_learned_index(const char *fullname)
{
    int found = -1;
    command_index_init();
    pthread_mutex_lock(&learned_lock);
    for (int i = 0; i < nlearned && found < 0; i++)
        if (strcmp(learned[i].fullname, fullname) == 0)
            found = builtin_count + i;
    if (found < 0 && nlearned < COMMAND_LEARNED_MAX) {
        char *name = strdup(fullname);          /* kept for the process's life */
        if (name) {
            const char *bar = strchr(name, '|');
            learned[nlearned].fullname = name;
            learned[nlearned].name = bar ? bar + 1 : name;
            learned[nlearned].learned_index = builtin_count + nlearned;
            found = builtin_count + nlearned++;
        }
    }
    pthread_mutex_unlock(&learned_lock);
    return found;
}

void command_index_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, index_build);
}

int command_index_count(void)
{
    return index_count;
}

int command_index(const struct command *cmd)
{
    if (cmd->learned_index)
        return cmd->learned_index;
    if (!cmd->parent)
        return (int)(cmd - command_table);
    return sub_base[cmd->parent - command_table] + (int)(cmd - cmd->parent->subcommands);
}

const struct command *command_by_index(int i)
{
    if (i < 0 || i >= index_count)
        return NULL;
    if (i < command_table_size)
        return &command_table[i];
    if (i >= builtin_count) {
        pthread_mutex_lock(&learned_lock);
        const struct command *c = i - builtin_count < nlearned ? &learned[i - builtin_count]
                                                               : NULL;
        pthread_mutex_unlock(&learned_lock);
        return c;
    }
    for (int t = command_table_size - 1; t >= 0; t--)   /* not on a request path */
        if (command_table[t].nsubcommands && sub_base[t] <= i)
            return &command_table[t].subcommands[i - sub_base[t]];
    return NULL;
}

int command_arity_ok(const struct command *cmd, int argc)
{
    if (cmd->arity >= 0)
        return argc == cmd->arity;
    return argc >= -cmd->arity;
}

/* ---------------------------------------------------------------------- */

/* Where found keys go: up to max are stored, all are counted; with flags,
 * each key's spec flags beside it (spec_flags: those of the spec at hand). */
struct keyset {
    int *keys;
    uint32_t *flags;
    uint32_t spec_flags;
    int max;
    int n;
};

static void keyset_add(struct keyset *ks, int pos)
{
    if (ks->n < ks->max) {
        ks->keys[ks->n] = pos;
        if (ks->flags)
            ks->flags[ks->n] = ks->spec_flags;
    }
    ks->n++;
}

/* The command's arguments, as the helpers below see them. */
struct argv {
    const char *base;
    const struct resp_arg *args;
    int argc;
};

static int arg_is(const struct argv *av, int i, const char *word)
{
    size_t n = strlen(word);
    return av->args[i].len == n &&
           strncasecmp(av->base + av->args[i].off, word, n) == 0;
}

/*
 * Parse argument i as Redis's string2ll does: optional '-', digits, no
 * leading zeros (but "0"), no '+', no spaces, within long long.
 * Returns 0 and sets *v, or -1.
 */
static int arg_ll(const struct argv *av, int i, long long *v)
{
    const char *p = av->base + av->args[i].off;
    size_t len = av->args[i].len, j = 0;
    unsigned long long acc = 0, limit = (unsigned long long)LLONG_MAX;
    int neg = 0;

    if (len == 0 || len > 20)
        return -1;
    if (p[0] == '-') {
        neg = 1;
        j = 1;
        limit += 1;             /* |LLONG_MIN| */
        if (len == 1)
            return -1;
    }
    if (p[j] == '0' && len > j + 1)
        return -1;
    for (; j < len; j++) {
        if (p[j] < '0' || p[j] > '9')
            return -1;
        unsigned d = (unsigned)(p[j] - '0');
        if (acc > (limit - d) / 10)
            return -1;
        acc = acc * 10 + d;
    }
    if (neg && acc == 0)
        return -1;              /* "-0" */
    *v = neg ? (long long)(0 - acc) : (long long)acc;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Key specs, as getKeysUsingKeySpecs. */

enum spec_result {
    SPEC_OK = 0,
    SPEC_FAIL,      /* Redis would fall back to the command's getkeys_proc */
};

/* First argument a spec's begin_search points at, 0 if its keyword is absent,
 * -1 if the spec's begin_search is unknown. */
static int spec_begin(const struct keyspec *ks, const struct argv *av)
{
    if (ks->bs == KSPEC_BS_INDEX)
        return ks->bs_u.index.pos;
    if (ks->bs != KSPEC_BS_KEYWORD)
        return -1;

    int from = ks->bs_u.keyword.startfrom;
    int start = from > 0 ? from : av->argc + from;
    int end = from > 0 ? av->argc - 1 : 1;
    int step = start <= end ? 1 : -1;
    /* Redis stops at end without examining it; keep that */
    for (int i = start; i != end; i += step) {
        if (i >= av->argc || i < 1)
            break;
        if (arg_is(av, i, ks->bs_u.keyword.keyword))
            return i + 1;
    }
    return 0;
}

/* Range [*first, *last] of one spec's keys; SPEC_FAIL where Redis jumps to
 * invalid_spec. first is the begin_search result (> 0). */
static enum spec_result spec_range(const struct keyspec *ks, const struct argv *av,
                                   long long *first, long long *last, int *step)
{
    if (ks->fk == KSPEC_FK_RANGE) {
        *step = ks->fk_u.range.keystep;
        if (ks->fk_u.range.lastkey >= 0)
            *last = *first + ks->fk_u.range.lastkey;
        else if (ks->fk_u.range.limit == 0)
            *last = av->argc + ks->fk_u.range.lastkey;
        else    /* lastkey is -1 here: the remaining args, 1/limit of them */
            *last = *first + (av->argc - *first) / ks->fk_u.range.limit
                    + ks->fk_u.range.lastkey;
        return SPEC_OK;
    }
    if (ks->fk == KSPEC_FK_KEYNUM) {
        long long numkeys, idx = *first + ks->fk_u.keynum.keynumidx;
        *step = ks->fk_u.keynum.keystep;
        if (idx < 1 || idx >= av->argc || arg_ll(av, (int)idx, &numkeys) < 0 || numkeys < 0)
            return SPEC_FAIL;
        *first += ks->fk_u.keynum.firstkey;
        *last = *first + numkeys - 1;
        return SPEC_OK;
    }
    return SPEC_FAIL;
}

static enum spec_result keys_by_specs(const struct command *cmd, const struct argv *av,
                                      struct keyset *out, int with_not_keys)
{
    for (int j = 0; j < cmd->nkeyspecs; j++) {
        const struct keyspec *ks = &cmd->keyspecs[j];
        long long first, last;
        int step;

        if ((ks->flags & KSPEC_NOT_KEY) && !with_not_keys)
            continue;
        first = spec_begin(ks, av);
        if (first < 0)
            return SPEC_FAIL;
        if (first == 0)
            continue;           /* keyword absent: this spec has no keys */
        if (spec_range(ks, av, &first, &last, &step) != SPEC_OK)
            return SPEC_FAIL;
        if (last >= av->argc || last < first || first >= av->argc || step < 1)
            return SPEC_FAIL;
        out->spec_flags = ks->flags;
        for (long long i = first; i <= last; i += step)
            keyset_add(out, (int)i);
        if (ks->flags & KSPEC_INCOMPLETE)
            return SPEC_FAIL;
    }
    return SPEC_OK;
}

/* ---------------------------------------------------------------------- */
/* Fallback rules: the commands whose specs cannot always find the keys.
 * Each returns the number of keys, 0 or -1 as command_keys() does. */

/* SORT key [BY p] [LIMIT o c] [GET p ...] [ASC|DESC] [ALPHA] [STORE dst]:
 * the key, and the last STORE's key (Redis scans options like sortGetKeys,
 * skipping the arguments of BY, LIMIT and GET). */
static int rule_sort(const struct argv *av, struct keyset *out)
{
    int store = 0;

    for (int i = 2; i < av->argc; i++) {
        if (arg_is(av, i, "limit"))
            i += 2;
        else if (arg_is(av, i, "store") && i + 1 < av->argc)
            store = i + 1;      /* not skipped: Redis looks at it again */
        else if (arg_is(av, i, "get") || arg_is(av, i, "by"))
            i += 1;
    }
    keyset_add(out, 1);
    if (store)
        keyset_add(out, store);
    return out->n;
}

/* MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw]
 * [AUTH2 user pw] [KEYS key ...]: the key, or with KEYS (and key "") the
 * keys after it. KEYS with a non-empty key is a syntax error. */
static int rule_migrate(const struct argv *av, struct keyset *out)
{
    for (int i = 6; i < av->argc; i++) {
        if (arg_is(av, i, "keys")) {
            if (av->args[3].len != 0)
                return -1;
            for (int k = i + 1; k < av->argc; k++)
                keyset_add(out, k);
            return out->n;
        }
        if (arg_is(av, i, "auth"))
            i += 1;
        else if (arg_is(av, i, "auth2"))
            i += 2;
    }
    if (av->argc < 4)
        return -1;
    keyset_add(out, 3);
    return out->n;
}

/* GEORADIUS[BYMEMBER] key ... [STORE k] [STOREDIST k]: the key and the last
 * STORE/STOREDIST key that has an argument after it. */
static int rule_georadius(const struct argv *av, struct keyset *out)
{
    int stored = 0;

    for (int i = 5; i < av->argc; i++) {
        if ((arg_is(av, i, "store") || arg_is(av, i, "storedist")) && i + 1 < av->argc) {
            stored = i + 1;
            i++;
        }
    }
    keyset_add(out, 1);
    if (stored)
        keyset_add(out, stored);
    return out->n;
}

/* XREAD[GROUP] [BLOCK ms] [COUNT n] [GROUP g c] [NOACK] STREAMS k... id...:
 * the first half of what follows the STREAMS that ends the options. */
static int rule_xread(const struct argv *av, struct keyset *out)
{
    int streams = -1, num;

    for (int i = 1; i < av->argc; i++) {
        if (arg_is(av, i, "block") || arg_is(av, i, "count")) {
            i++;
        } else if (arg_is(av, i, "group")) {
            i += 2;
        } else if (arg_is(av, i, "noack")) {
            continue;
        } else {
            if (arg_is(av, i, "streams"))
                streams = i;
            break;
        }
    }
    if (streams < 0)
        return -1;
    num = av->argc - streams - 1;
    if (num == 0 || num % 2 != 0)
        return -1;
    for (int i = streams + 1; i < streams + 1 + num / 2; i++)
        keyset_add(out, i);
    return out->n;
}

/*
 * The numkeys commands (EVAL, FCALL, ZUNIONSTORE, LMPOP, ...) reach here
 * only when their numkeys spec failed: numkeys is not an integer, is
 * negative, is 0, or counts past the end. Only a 0 is valid, and only for
 * commands whose keys are optional (EVAL, FCALL: NO_MANDATORY_KEYS); the
 * others reject it ("at least 1 input key is needed").
 */
static int rule_numkeys(const struct command *cmd, const struct argv *av)
{
    const struct keyspec *ks = NULL;
    long long numkeys;

    for (int j = 0; j < cmd->nkeyspecs; j++)
        if (cmd->keyspecs[j].fk == KSPEC_FK_KEYNUM && cmd->keyspecs[j].bs == KSPEC_BS_INDEX)
            ks = &cmd->keyspecs[j];
    if (ks == NULL)
        return -1;

    int idx = ks->bs_u.index.pos + ks->fk_u.keynum.keynumidx;
    if (idx < av->argc && arg_ll(av, idx, &numkeys) == 0 && numkeys == 0 &&
        (cmd->flags & CMD_NO_MANDATORY_KEYS))
        return 0;
    return -1;
}

static int has_keynum_spec(const struct command *cmd)
{
    for (int j = 0; j < cmd->nkeyspecs; j++)
        if (cmd->keyspecs[j].fk == KSPEC_FK_KEYNUM)
            return 1;
    return 0;
}

/* A key a rule found takes the flags of the spec of its place: the k-th
 * key the k-th spec's (SORT's and GEORADIUS's STORE key the second spec's,
 * MIGRATE's KEYS ... its second spec's), the last spec's for those after. */
static void rule_flags(const struct command *cmd, struct keyset *out)
{
    if (!out->flags || cmd->nkeyspecs == 0)
        return;
    for (int k = 0; k < out->n && k < out->max; k++)
        out->flags[k] = cmd->keyspecs[k < cmd->nkeyspecs ? k : cmd->nkeyspecs - 1].flags;
}

static int keys_by_rule_found(const struct command *cmd, const struct argv *av,
                              struct keyset *out);

/* Called only after the specs failed, so the string compares stay off the
 * path of commands whose specs suffice (nearly all requests). */
static int keys_by_rule(const struct command *cmd, const struct argv *av,
                        struct keyset *out)
{
    int n = keys_by_rule_found(cmd, av, out);
    if (n > 0)
        rule_flags(cmd, out);
    return n;
}

static int keys_by_rule_found(const struct command *cmd, const struct argv *av,
                              struct keyset *out)
{
    const char *n = cmd->fullname;

    out->n = 0;
    if (av->argc < 2)
        return -1;
    if (strcmp(n, "sort") == 0)
        return rule_sort(av, out);
    if (strcmp(n, "sort_ro") == 0) {      /* BY/GET patterns are not keys */
        keyset_add(out, 1);
        return out->n;
    }
    if (strcmp(n, "migrate") == 0)
        return rule_migrate(av, out);
    if (strcmp(n, "georadius") == 0 || strcmp(n, "georadiusbymember") == 0)
        return rule_georadius(av, out);
    if (strcmp(n, "xread") == 0 || strcmp(n, "xreadgroup") == 0)
        return rule_xread(av, out);
    if (has_keynum_spec(cmd))
        return rule_numkeys(cmd, av);
    return -1;      /* arguments do not fit the specs (e.g. too few) */
}

int command_has_keys(const struct command *cmd)
{
    for (int j = 0; j < cmd->nkeyspecs; j++)
        if (!(cmd->keyspecs[j].flags & KSPEC_NOT_KEY))
            return 1;
    return 0;
}

int command_keys_ex(const struct command *cmd, const char *base,
                    const struct resp_arg *args, int argc, int *keys, int max,
                    unsigned opts)
{
    return command_keys_flags(cmd, base, args, argc, keys, NULL, max, opts);
}

static int keys_found(const struct command *cmd, const struct argv *av, struct keyset *out,
                      unsigned opts);

/* SET's and BITFIELD's key flags depend on their arguments (their specs
 * say VARIABLE_FLAGS): as Redis's setGetKeys and bitfieldGetKeys. */
static uint32_t variable_flags(const struct command *cmd, const struct argv *av)
{
    if (strcmp(cmd->fullname, "set") == 0) {
        for (int i = 3; i < av->argc; i++)
            if (arg_is(av, i, "get"))
                return KSPEC_RW | KSPEC_ACCESS | KSPEC_UPDATE;
        return KSPEC_OW | KSPEC_UPDATE;
    }
    for (int i = 2; i < av->argc; i++) {        /* bitfield */
        int rest = av->argc - i - 1;
        if (arg_is(av, i, "get") && rest >= 2)
            i += 2;
        else if (arg_is(av, i, "overflow") && rest >= 1)
            i += 1;
        else
            return KSPEC_RW | KSPEC_ACCESS | KSPEC_UPDATE;  /* SET, INCRBY, or a syntax error */
    }
    return KSPEC_RO | KSPEC_ACCESS;
}

int command_keys_flags(const struct command *cmd, const char *base,
                       const struct resp_arg *args, int argc, int *keys, uint32_t *flags,
                       int max, unsigned opts)
{
    struct argv av = { base, args, argc };
    struct keyset out = { keys, flags, 0, max < 0 ? 0 : max, 0 };
    int n = keys_found(cmd, &av, &out, opts);
    for (int i = 0; flags && i < n && i < out.max; i++)
        if (flags[i] & KSPEC_VARIABLE_FLAGS)
            flags[i] = variable_flags(cmd, &av);
    return n;
}

static int keys_found(const struct command *cmd, const struct argv *av, struct keyset *out,
                      unsigned opts)
{

    if (cmd->nkeyspecs == 0 || av->argc < 1)
        return 0;
    if (keys_by_specs(cmd, av, out, (opts & COMMAND_KEYS_NOT_KEYS) != 0) != SPEC_OK)
        return keys_by_rule(cmd, av, out);
    /* Only a keyword spec can find nothing (XREAD without STREAMS): Redis's
     * GETKEYS then answers "Invalid arguments" unless keys are optional. */
    if (out->n == 0 && command_has_keys(cmd) && !(cmd->flags & CMD_NO_MANDATORY_KEYS))
        return -1;
    return out->n;
}

int command_keys(const struct command *cmd, const char *base,
                 const struct resp_arg *args, int argc, int *keys, int max)
{
    return command_keys_ex(cmd, base, args, argc, keys, max, 0);
}

int command_script_may_write(const struct command *cmd)
{
    return (cmd->proxy_facts & CMDP_SCRIPT) != 0;
}

uint32_t command_facts_of(const char *fullname)
{
    for (int i = 0; i < command_facts_named_count; i++)
        if (strcmp(command_facts_named[i].fullname, fullname) == 0)
            return command_facts_named[i].facts;
    return 0;
}

int command_runs_script(const struct command *cmd)
{
    return (cmd->proxy_facts & (CMDP_SCRIPT | CMDP_SCRIPT_RO)) != 0;
}
