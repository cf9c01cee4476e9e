/*
 * scripts: registered bodies (an array, read-only once the workers run),
 * script-map entries (an array pointing into it), and remembered bodies (a
 * chained hash table with an LRU list, under one mutex, bounded in bytes).
 * Each thread's set of the SHAs it has remembered is thread-local and is
 * emptied when the table's epoch moves (an eviction or a forget), so that a
 * body evicted from the table is remembered again the next time it is seen.
 */
#include "proxy/core/scripts.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#define SHA_LEN 40

struct registered {
    char sha[SCRIPTS_SHA_HEX];
    char *body;
    size_t len;
};

struct mapped {
    char legacy[SCRIPTS_SHA_HEX];
    int target;                 /* index in registry */
};

struct remembered {
    char sha[SCRIPTS_SHA_HEX];
    char *body;
    size_t len;
    struct remembered *next;    /* in its bucket */
    TAILQ_ENTRY(remembered) lru;
};

#define BUCKETS 4096

static struct {
    struct registered *reg;
    int nreg;
    struct mapped *map;
    int nmap;

    pthread_mutex_t lock;       /* everything below */
    size_t max_bytes;
    size_t bytes;
    size_t count;
    struct remembered *buckets[BUCKETS];
    TAILQ_HEAD(, remembered) lru;   /* least recently remembered first */
} cache = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .lru = TAILQ_HEAD_INITIALIZER(cache.lru),
};

/* Moves when bodies leave the table: threads then empty their sets. */
static _Atomic uint64_t cache_epoch;

/* A thread's SHAs remembered since epoch (open addressing, never full:
 * emptied at three quarters). */
#define SEEN_SLOTS 512
static _Thread_local struct {
    uint64_t epoch;
    int n;
    unsigned char used[SEEN_SLOTS];
    char sha[SEEN_SLOTS][SHA_LEN];
} seen;

/* ---- SHA1 ---- */

/* SHA1 fetched once and one digest context per thread, reused: no implicit
 * fetch (a lock in libcrypto's method store) and no allocation per EVAL. */
static pthread_once_t sha1_once = PTHREAD_ONCE_INIT;
static EVP_MD *sha1_md;
static pthread_key_t sha1_ctx_key;

static void sha1_ctx_free(void *ctx)
{
    EVP_MD_CTX_free(ctx);
}

static void sha1_setup(void)
{
    sha1_md = EVP_MD_fetch(NULL, "SHA1", NULL);
    pthread_key_create(&sha1_ctx_key, sha1_ctx_free);
}

static int sha1_raw(const char *body, size_t len, unsigned char md[EVP_MAX_MD_SIZE])
{
    unsigned int mdlen = 0;
    pthread_once(&sha1_once, sha1_setup);
    EVP_MD_CTX *ctx = sha1_md ? pthread_getspecific(sha1_ctx_key) : NULL;
    if (sha1_md && !ctx && (ctx = EVP_MD_CTX_new()) != NULL)
        pthread_setspecific(sha1_ctx_key, ctx);
    if (!ctx)       /* no context: the one-shot form */
        return EVP_Digest(body, len, md, &mdlen, EVP_sha1(), NULL) == 1 && mdlen == 20;
    return EVP_DigestInit_ex2(ctx, sha1_md, NULL) == 1 &&
           EVP_DigestUpdate(ctx, body, len) == 1 &&
           EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen == 20;
}

void scripts_sha1_hex(const char *body, size_t len, char sha[SCRIPTS_SHA_HEX])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];

    if (!sha1_raw(body, len, md)) {
        memset(sha, '0', SHA_LEN);      /* cannot happen with a working libcrypto */
        sha[SHA_LEN] = '\0';
        return;
    }
    for (int i = 0; i < 20; i++) {
        sha[2 * i] = hex[md[i] >> 4];
        sha[2 * i + 1] = hex[md[i] & 15];
    }
    sha[SHA_LEN] = '\0';
}

int scripts_sha_parse(const char *s, size_t len, char sha[SCRIPTS_SHA_HEX])
{
    if (len != SHA_LEN)
        return -1;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'F')
            c = (char)(c - 'A' + 'a');
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return -1;
        sha[i] = c;
    }
    sha[SHA_LEN] = '\0';
    return 0;
}

/* SHAs are uniform: their first hex digits make a good hash. */
static size_t sha_hash(const char *sha)
{
    size_t h = 0;
    for (int i = 0; i < 8; i++) {
        char c = sha[i];
        h = h * 16 + (size_t)(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    return h;
}

/* ---- registered and mapped ---- */

void scripts_init(size_t max_bytes)
{
    pthread_mutex_lock(&cache.lock);
    cache.max_bytes = max_bytes;
    pthread_mutex_unlock(&cache.lock);
}

static int registry_find(const char *sha)
{
    for (int i = 0; i < cache.nreg; i++)
        if (memcmp(cache.reg[i].sha, sha, SHA_LEN) == 0)
            return i;
    return -1;
}

/* Index of body in the registry, added if new; -1 when out of memory. */
static int registry_add(const char *body, size_t len)
{
    char sha[SCRIPTS_SHA_HEX];
    scripts_sha1_hex(body, len, sha);
    int i = registry_find(sha);
    if (i >= 0)
        return i;
    struct registered *grown = realloc(cache.reg, sizeof *grown * (size_t)(cache.nreg + 1));
    if (!grown)
        return -1;
    cache.reg = grown;
    struct registered *r = &grown[cache.nreg];
    r->body = malloc(len ? len : 1);
    if (!r->body)
        return -1;
    memcpy(r->body, body, len);
    r->len = len;
    memcpy(r->sha, sha, sizeof sha);
    return cache.nreg++;
}

int scripts_register(const char *body, size_t len, char sha[SCRIPTS_SHA_HEX])
{
    int i = registry_add(body, len);
    if (i < 0)
        return -1;
    memcpy(sha, cache.reg[i].sha, SCRIPTS_SHA_HEX);
    return 0;
}

int scripts_map_add(const char *legacy_sha, const char *body, size_t len)
{
    char legacy[SCRIPTS_SHA_HEX];
    if (scripts_sha_parse(legacy_sha, strlen(legacy_sha), legacy) < 0)
        return -1;
    int target = registry_add(body, len);
    if (target < 0)
        return -1;
    for (int i = 0; i < cache.nmap; i++)
        if (strcmp(cache.map[i].legacy, legacy) == 0) {
            cache.map[i].target = target;       /* the last line wins */
            return 0;
        }
    struct mapped *grown = realloc(cache.map, sizeof *grown * (size_t)(cache.nmap + 1));
    if (!grown)
        return -1;
    cache.map = grown;
    memcpy(grown[cache.nmap].legacy, legacy, sizeof legacy);
    grown[cache.nmap].target = target;
    cache.nmap++;
    return 0;
}

const char *scripts_map_find(const char *legacy_sha, size_t *len, const char **sha)
{
    for (int i = 0; i < cache.nmap; i++)
        if (memcmp(cache.map[i].legacy, legacy_sha, SHA_LEN) == 0) {
            const struct registered *r = &cache.reg[cache.map[i].target];
            *len = r->len;
            *sha = r->sha;
            return r->body;
        }
    return NULL;
}

/* ---- remembered (under cache.lock) ---- */

static struct remembered **bucket_of(const char *sha)
{
    return &cache.buckets[sha_hash(sha) % BUCKETS];
}

static struct remembered *table_find(const char *sha)
{
    for (struct remembered *e = *bucket_of(sha); e; e = e->next)
        if (memcmp(e->sha, sha, SHA_LEN) == 0)
            return e;
    return NULL;
}

static size_t entry_bytes(const struct remembered *e)
{
    return sizeof *e + e->len;
}

static void table_remove(struct remembered *e)
{
    struct remembered **pp = bucket_of(e->sha);
    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    TAILQ_REMOVE(&cache.lru, e, lru);
    cache.bytes -= entry_bytes(e);
    cache.count--;
    free(e->body);
    free(e);
}

static void table_insert(const char *body, size_t len, const char *sha)
{
    struct remembered *e = table_find(sha);
    if (e) {                    /* seen again: the most recent now */
        TAILQ_REMOVE(&cache.lru, e, lru);
        TAILQ_INSERT_TAIL(&cache.lru, e, lru);
        return;
    }
    if (sizeof *e + len > cache.max_bytes)
        return;
    e = calloc(1, sizeof *e);
    if (!e || !(e->body = malloc(len ? len : 1))) {
        free(e);
        return;
    }
    memcpy(e->body, body, len);
    e->len = len;
    memcpy(e->sha, sha, SHA_LEN);
    struct remembered **b = bucket_of(sha);
    e->next = *b;
    *b = e;
    TAILQ_INSERT_TAIL(&cache.lru, e, lru);
    cache.bytes += entry_bytes(e);
    cache.count++;
    int evicted = 0;
    while (cache.bytes > cache.max_bytes) {
        table_remove(TAILQ_FIRST(&cache.lru));
        evicted = 1;
    }
    if (evicted)
        atomic_fetch_add_explicit(&cache_epoch, 1, memory_order_relaxed);
}

static void table_clear(void)
{
    struct remembered *e;
    while ((e = TAILQ_FIRST(&cache.lru)) != NULL)
        table_remove(e);
    atomic_fetch_add_explicit(&cache_epoch, 1, memory_order_relaxed);
}

/* ---- the thread's set ---- */

/* 1 if this thread remembered sha since the last epoch; else records it
 * and returns 0. */
static int seen_check_add(const char *sha)
{
    uint64_t epoch = atomic_load_explicit(&cache_epoch, memory_order_relaxed);
    if (seen.epoch != epoch || seen.n >= SEEN_SLOTS * 3 / 4) {
        memset(seen.used, 0, sizeof seen.used);
        seen.n = 0;
        seen.epoch = epoch;
    }
    size_t i = sha_hash(sha) % SEEN_SLOTS;
    while (seen.used[i]) {
        if (memcmp(seen.sha[i], sha, SHA_LEN) == 0)
            return 1;
        i = (i + 1) % SEEN_SLOTS;
    }
    seen.used[i] = 1;
    memcpy(seen.sha[i], sha, SHA_LEN);
    seen.n++;
    return 0;
}

void scripts_remember(const char *body, size_t len, const char *sha)
{
    if (seen_check_add(sha))
        return;
    pthread_mutex_lock(&cache.lock);
    if (cache.max_bytes > 0)
        table_insert(body, len, sha);
    pthread_mutex_unlock(&cache.lock);
}

char *scripts_body_copy(const char *sha, size_t *len)
{
    const char *src = NULL;
    char *copy = NULL;
    int i = registry_find(sha);

    if (i >= 0) {
        src = cache.reg[i].body;
        *len = cache.reg[i].len;
        copy = malloc(*len ? *len : 1);
        if (copy)
            memcpy(copy, src, *len);
        return copy;
    }
    pthread_mutex_lock(&cache.lock);
    struct remembered *e = table_find(sha);
    if (e) {
        *len = e->len;
        copy = malloc(e->len ? e->len : 1);
        if (copy)
            memcpy(copy, e->body, e->len);
    }
    pthread_mutex_unlock(&cache.lock);
    return copy;
}

void scripts_forget(void)
{
    pthread_mutex_lock(&cache.lock);
    table_clear();
    pthread_mutex_unlock(&cache.lock);
}

uint64_t scripts_epoch(void)
{
    return atomic_load_explicit(&cache_epoch, memory_order_relaxed);
}

void scripts_stats(size_t *count, size_t *bytes)
{
    pthread_mutex_lock(&cache.lock);
    *count = cache.count;
    *bytes = cache.bytes;
    pthread_mutex_unlock(&cache.lock);
}

void scripts_reset(void)
{
    pthread_mutex_lock(&cache.lock);
    table_clear();
    cache.max_bytes = 0;
    pthread_mutex_unlock(&cache.lock);
    for (int i = 0; i < cache.nreg; i++)
        free(cache.reg[i].body);
    free(cache.reg);
    free(cache.map);
    cache.reg = NULL;
    cache.map = NULL;
    cache.nreg = cache.nmap = 0;
}
