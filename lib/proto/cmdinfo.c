/*
 * cmdinfo: a COMMAND INFO entry as a struct command. See cmdinfo.h.
 */
#include "lib/proto/cmdinfo.h"

#include <ctype.h>
#include <event2/buffer.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ENTRY_FIELDS 10         /* name arity flags first last step acl tips specs subs */

struct name_bit {
    const char *name;
    uint32_t bit;
};

static const struct name_bit flag_names[] = {
    { "write", CMD_WRITE }, { "readonly", CMD_READONLY }, { "denyoom", CMD_DENYOOM },
    { "admin", CMD_ADMIN }, { "pubsub", CMD_PUBSUB }, { "noscript", CMD_NOSCRIPT },
    { "blocking", CMD_BLOCKING }, { "loading", CMD_LOADING }, { "stale", CMD_STALE },
    { "skip_monitor", CMD_SKIP_MONITOR }, { "skip_slowlog", CMD_SKIP_SLOWLOG },
    { "fast", CMD_FAST }, { "no_auth", CMD_NO_AUTH }, { "may_replicate", CMD_MAY_REPLICATE },
    { "no_mandatory_keys", CMD_NO_MANDATORY_KEYS }, { "no_multi", CMD_NO_MULTI },
    { "movablekeys", CMD_MOVABLE_KEYS }, { "allow_busy", CMD_ALLOW_BUSY },
    { "asking", CMD_ASKING }, { "no_async_loading", CMD_NO_ASYNC_LOADING },
};

static const struct name_bit tip_names[] = {
    { "nondeterministic_output", CMD_TIP_NONDETERMINISTIC_OUTPUT },
    { "nondeterministic_output_order", CMD_TIP_NONDETERMINISTIC_OUTPUT_ORDER },
    { "request_policy:all_nodes", CMD_TIP_REQUEST_ALL_NODES },
    { "request_policy:all_shards", CMD_TIP_REQUEST_ALL_SHARDS },
    { "request_policy:multi_shard", CMD_TIP_REQUEST_MULTI_SHARD },
    { "request_policy:special", CMD_TIP_REQUEST_SPECIAL },
    { "response_policy:one_succeeded", CMD_TIP_RESPONSE_ONE_SUCCEEDED },
    { "response_policy:all_succeeded", CMD_TIP_RESPONSE_ALL_SUCCEEDED },
    { "response_policy:agg_logical_and", CMD_TIP_RESPONSE_AGG_LOGICAL_AND },
    { "response_policy:agg_logical_or", CMD_TIP_RESPONSE_AGG_LOGICAL_OR },
    { "response_policy:agg_min", CMD_TIP_RESPONSE_AGG_MIN },
    { "response_policy:agg_max", CMD_TIP_RESPONSE_AGG_MAX },
    { "response_policy:agg_sum", CMD_TIP_RESPONSE_AGG_SUM },
    { "response_policy:special", CMD_TIP_RESPONSE_SPECIAL },
};

static const struct name_bit keyspec_flag_names[] = {
    { "RO", KSPEC_RO }, { "RW", KSPEC_RW }, { "OW", KSPEC_OW }, { "RM", KSPEC_RM },
    { "access", KSPEC_ACCESS }, { "update", KSPEC_UPDATE }, { "insert", KSPEC_INSERT },
    { "delete", KSPEC_DELETE }, { "not_key", KSPEC_NOT_KEY },
    { "incomplete", KSPEC_INCOMPLETE }, { "variable_flags", KSPEC_VARIABLE_FLAGS },
};

#define NROWS(table) (sizeof(table) / sizeof((table)[0]))

/* The bits of a set of names (each element's text) by table; names not in
 * it are counted in *unknown. */
static uint32_t bits_of(const redisReply *set, int *unknown, const struct name_bit *table,
                        size_t rows)
{
    uint32_t bits = 0;
    for (size_t i = 0; i < set->elements; i++) {
        const char *text = set->element[i]->str;
        size_t k = 0;
        while (text && k < rows && strcmp(table[k].name, text) != 0)
            k++;
        if (text && k < rows)
            bits |= table[k].bit;
        else
            (*unknown)++;
    }
    return bits;
}

static uint64_t categories_of(const redisReply *set, int *unknown)
{
    uint64_t bits = 0;
    for (size_t i = 0; i < set->elements; i++) {
        const char *text = set->element[i]->str;
        int k = 0;
        if (text && text[0] == '@')
            text++;
        while (text && k < command_acl_category_count &&
               strcmp(command_acl_category_names[k], text) != 0)
            k++;
        if (text && k < command_acl_category_count && k < 64)
            bits |= 1ULL << k;
        else
            (*unknown)++;
    }
    return bits;
}

/* ---- key specs ---- */

/* The value of key in a map read as an array of pairs, or NULL. */
static const redisReply *map_get(const redisReply *map, const char *key)
{
    if (!map || map->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t i = 0; i + 1 < map->elements; i += 2)
        if (map->element[i]->str && strcmp(map->element[i]->str, key) == 0)
            return map->element[i + 1];
    return NULL;
}

static int int_of(const redisReply *map, const char *key, int *out)
{
    const redisReply *v = map_get(map, key);
    if (!v || v->type != REDIS_REPLY_INTEGER)
        return -1;
    *out = (int)v->integer;
    return 0;
}

static int type_is(const redisReply *part, const char *type)
{
    const redisReply *t = map_get(part, "type");
    return t && t->str && strcmp(t->str, type) == 0;
}

static int keyspec_parse(const redisReply *m, struct keyspec *k, int *unknown_flags)
{
    const redisReply *flags = map_get(m, "flags"), *bs = map_get(m, "begin_search"),
                     *fk = map_get(m, "find_keys");
    if (!flags || flags->type != REDIS_REPLY_ARRAY || !bs || !fk)
        return -1;
    memset(k, 0, sizeof *k);
    k->flags = bits_of(flags, unknown_flags, keyspec_flag_names, NROWS(keyspec_flag_names));
    const redisReply *bspec = map_get(bs, "spec"), *fspec = map_get(fk, "spec");
    if (type_is(bs, "index")) {
        k->bs = KSPEC_BS_INDEX;
        if (int_of(bspec, "index", &k->bs_u.index.pos) < 0)
            return -1;
    } else if (type_is(bs, "keyword")) {
        const redisReply *word = map_get(bspec, "keyword");
        k->bs = KSPEC_BS_KEYWORD;
        if (!word || !word->str || int_of(bspec, "startfrom", &k->bs_u.keyword.startfrom) < 0 ||
            !(k->bs_u.keyword.keyword = strdup(word->str)))
            return -1;
    } else {
        k->bs = KSPEC_BS_UNKNOWN;
    }
    if (type_is(fk, "range")) {
        k->fk = KSPEC_FK_RANGE;
        if (int_of(fspec, "lastkey", &k->fk_u.range.lastkey) < 0 ||
            int_of(fspec, "keystep", &k->fk_u.range.keystep) < 0 ||
            int_of(fspec, "limit", &k->fk_u.range.limit) < 0)
            return -1;
    } else if (type_is(fk, "keynum")) {
        k->fk = KSPEC_FK_KEYNUM;
        if (int_of(fspec, "keynumidx", &k->fk_u.keynum.keynumidx) < 0 ||
            int_of(fspec, "firstkey", &k->fk_u.keynum.firstkey) < 0 ||
            int_of(fspec, "keystep", &k->fk_u.keynum.keystep) < 0)
            return -1;
    } else {
        k->fk = KSPEC_FK_UNKNOWN;
    }
    return 0;
}

/* ---- the entry's RESP, as the server writes it ---- */

/* Any reply, as RESP2 (hiredis keeps + and $ apart). */
static void put_resp2(struct evbuffer *b, const redisReply *r)
{
    switch (r->type) {
    case REDIS_REPLY_STRING:
        evbuffer_add_printf(b, "$%zu\r\n", r->len);
        evbuffer_add(b, r->str, r->len);
        evbuffer_add(b, "\r\n", 2);
        break;
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        evbuffer_add_printf(b, "%c%.*s\r\n", r->type == REDIS_REPLY_STATUS ? '+' : '-',
                            (int)r->len, r->str);
        break;
    case REDIS_REPLY_INTEGER:
        evbuffer_add_printf(b, ":%lld\r\n", r->integer);
        break;
    case REDIS_REPLY_ARRAY:
        evbuffer_add_printf(b, "*%zu\r\n", r->elements);
        for (size_t i = 0; i < r->elements; i++)
            put_resp2(b, r->element[i]);
        break;
    default:
        evbuffer_add(b, "$-1\r\n", 5);
    }
}

/* An array as a RESP3 set. */
static void put_set3(struct evbuffer *b, const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY) {
        put_resp2(b, r);
        return;
    }
    evbuffer_add_printf(b, "~%zu\r\n", r->elements);
    for (size_t i = 0; i < r->elements; i++)
        put_resp2(b, r->element[i]);
}

typedef void put_value_fn(struct evbuffer *b, const char *key, const redisReply *v);

/* A map read as pairs, as a RESP3 map whose values put_value writes. */
static void put_map3(struct evbuffer *b, const redisReply *m, put_value_fn *put_value)
{
    if (m->type != REDIS_REPLY_ARRAY || m->elements % 2) {
        put_resp2(b, m);
        return;
    }
    evbuffer_add_printf(b, "%%%zu\r\n", m->elements / 2);
    for (size_t i = 0; i < m->elements; i += 2) {
        const redisReply *k = m->element[i];
        put_resp2(b, k);
        put_value(b, k->str ? k->str : "", m->element[i + 1]);
    }
}

static void put_plain(struct evbuffer *b, const char *key, const redisReply *v)
{
    (void)key;
    put_resp2(b, v);
}

/* begin_search's and find_keys's values: their spec a map. */
static void put_search_value(struct evbuffer *b, const char *key, const redisReply *v)
{
    if (strcmp(key, "spec") == 0)
        put_map3(b, v, put_plain);
    else
        put_resp2(b, v);
}

/* A key spec's values: flags a set, begin_search and find_keys maps. */
static void put_keyspec_value(struct evbuffer *b, const char *key, const redisReply *v)
{
    if (strcmp(key, "flags") == 0)
        put_set3(b, v);
    else if (strcmp(key, "begin_search") == 0 || strcmp(key, "find_keys") == 0)
        put_map3(b, v, put_search_value);
    else
        put_resp2(b, v);
}

/* The key specs: a set of maps. */
static void put_keyspecs3(struct evbuffer *b, const redisReply *specs)
{
    evbuffer_add_printf(b, "~%zu\r\n", specs->elements);
    for (size_t i = 0; i < specs->elements; i++)
        put_map3(b, specs->element[i], put_keyspec_value);
}

/* The entry's subcommands in name order. */
static int sub_order(const void *a, const void *b)
{
    const redisReply *x = *(const redisReply *const *)a, *y = *(const redisReply *const *)b;
    const char *nx = x->type == REDIS_REPLY_ARRAY && x->elements ? x->element[0]->str : "";
    const char *ny = y->type == REDIS_REPLY_ARRAY && y->elements ? y->element[0]->str : "";
    return strcasecmp(nx ? nx : "", ny ? ny : "");
}

static void put_entry(struct evbuffer *b, const redisReply *e, int resp3);

static void put_subcommands(struct evbuffer *b, const redisReply *subs, int resp3)
{
    if (resp3 && subs->elements == 0) {
        evbuffer_add(b, "~0\r\n", 4);
        return;
    }
    const redisReply **sorted = malloc((subs->elements ? subs->elements : 1) * sizeof *sorted);
    evbuffer_add_printf(b, "*%zu\r\n", subs->elements);
    if (!sorted)
        return;
    for (size_t i = 0; i < subs->elements; i++)
        sorted[i] = subs->element[i];
    qsort(sorted, subs->elements, sizeof *sorted, sub_order);
    for (size_t i = 0; i < subs->elements; i++)
        put_entry(b, sorted[i], resp3);
    free(sorted);
}

static void put_entry(struct evbuffer *b, const redisReply *e, int resp3)
{
    evbuffer_add_printf(b, "*%zu\r\n", e->elements);
    for (size_t i = 0; i < e->elements; i++) {
        const redisReply *f = e->element[i];
        if (i == 9 && f->type == REDIS_REPLY_ARRAY)
            put_subcommands(b, f, resp3);
        else if (!resp3)
            put_resp2(b, f);
        else if (i == 2 || i == 6 || i == 7)
            put_set3(b, f);
        else if (i == 8 && f->type == REDIS_REPLY_ARRAY)
            put_keyspecs3(b, f);
        else
            put_resp2(b, f);
    }
}

/* e's RESP (resp3 or not) into a new string of *len bytes. */
static char *entry_bytes(const redisReply *e, int resp3, size_t *len)
{
    struct evbuffer *b = evbuffer_new();
    char *out = NULL;
    if (!b)
        return NULL;
    put_entry(b, e, resp3);
    *len = evbuffer_get_length(b);
    out = malloc(*len + 1);
    if (out) {
        evbuffer_remove(b, out, *len);
        out[*len] = '\0';
    }
    evbuffer_free(b);
    return out;
}

/* ---- the entry ---- */

static int is_array(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ARRAY;
}

static int is_int(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_INTEGER;
}

/* name lowered into a new string. */
static char *lower_dup(const char *s)
{
    char *d = strdup(s);
    for (char *p = d; p && *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return d;
}

static int entry_shape_ok(const redisReply *e)
{
    if (!is_array(e) || e->elements < ENTRY_FIELDS)
        return 0;
    const redisReply *const *f = (const redisReply *const *)e->element;
    return f[0]->type == REDIS_REPLY_STRING && is_int(f[1]) && is_array(f[2]) && is_int(f[3]) &&
           is_int(f[4]) && is_int(f[5]) && is_array(f[6]) && is_array(f[7]) &&
           is_array(f[8]) && is_array(f[9]);
}

static int fill(struct command *c, const redisReply *e, const struct command *parent,
                struct cmdinfo_unknown *u, char *why, size_t whylen);

static int fill_subcommands(struct command *c, const redisReply *subs, struct cmdinfo_unknown *u,
                            char *why, size_t whylen)
{
    if (subs->elements == 0)
        return 0;
    struct command *s = calloc(subs->elements, sizeof *s);
    if (!s) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    c->subcommands = s;
    c->nsubcommands = (int)subs->elements;
    const redisReply **sorted = malloc(subs->elements * sizeof *sorted);
    if (!sorted) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < subs->elements; i++)
        sorted[i] = subs->element[i];
    qsort(sorted, subs->elements, sizeof *sorted, sub_order);
    int rc = 0;
    for (size_t i = 0; i < subs->elements && rc == 0; i++)
        rc = fill(&s[i], sorted[i], c, u, why, whylen);
    free(sorted);
    return rc;
}

static int fill(struct command *c, const redisReply *e, const struct command *parent,
                struct cmdinfo_unknown *u, char *why, size_t whylen)
{
    if (!entry_shape_ok(e)) {
        snprintf(why, whylen, "not a COMMAND INFO entry");
        return -1;
    }
    const redisReply *const *f = (const redisReply *const *)e->element;
    char *fullname = lower_dup(f[0]->str);
    c->fullname = fullname;
    if (!fullname) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    const char *bar = strchr(fullname, '|');
    c->name = bar ? bar + 1 : fullname;
    c->parent = parent;
    c->arity = (int)f[1]->integer;
    c->flags = bits_of(f[2], &u->flags, flag_names, NROWS(flag_names));
    c->first_key = (int)f[3]->integer;
    c->last_key = (int)f[4]->integer;
    c->key_step = (int)f[5]->integer;
    c->acl_categories = categories_of(f[6], &u->categories);
    int tips_unknown = u->tips;
    c->tips = bits_of(f[7], &u->tips, tip_names, NROWS(tip_names));
    if (u->tips > tips_unknown)
        c->tips |= CMD_TIP_UNKNOWN;
    c->proxy_facts = command_facts_of(fullname);
    if (f[8]->elements) {
        struct keyspec *k = calloc(f[8]->elements, sizeof *k);
        if (!k) {
            snprintf(why, whylen, "out of memory");
            return -1;
        }
        c->keyspecs = k;
        c->nkeyspecs = (int)f[8]->elements;
        for (size_t i = 0; i < f[8]->elements; i++)
            if (keyspec_parse(f[8]->element[i], &k[i], &u->keyspec_flags) < 0) {
                snprintf(why, whylen, "%s: key spec %zu is not one", fullname, i + 1);
                return -1;
            }
    }
    c->info_resp = entry_bytes(e, 0, &c->info_resp_len);
    c->info_resp3 = entry_bytes(e, 1, &c->info_resp3_len);
    if (!c->info_resp || !c->info_resp3) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    return fill_subcommands(c, f[9], u, why, whylen);
}

/* What fill made of c (c itself is the caller's). */
static void empty(struct command *c)
{
    for (int i = 0; i < c->nsubcommands; i++)
        empty((struct command *)&c->subcommands[i]);
    free((void *)c->subcommands);
    for (int i = 0; i < c->nkeyspecs; i++)
        if (c->keyspecs[i].bs == KSPEC_BS_KEYWORD)
            free((void *)c->keyspecs[i].bs_u.keyword.keyword);
    free((void *)c->keyspecs);
    free((void *)c->fullname);
    free((void *)c->info_resp);
    free((void *)c->info_resp3);
}

struct command *cmdinfo_parse(const struct redisReply *entry, struct cmdinfo_unknown *unknown,
                              char *why, size_t whylen)
{
    struct cmdinfo_unknown ignored;
    struct command *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    memset(unknown ? unknown : &ignored, 0, sizeof ignored);
    if (fill(c, entry, NULL, unknown ? unknown : &ignored, why, whylen) < 0) {
        cmdinfo_free(c);
        return NULL;
    }
    return c;
}

void cmdinfo_free(struct command *c)
{
    if (!c)
        return;
    empty(c);
    free(c);
}
