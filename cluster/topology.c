#include "cluster/topology.h"

#include <hiredis/hiredis.h>
#include <netdb.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/base/hostport.h"
#include "cluster/syncconn.h"
#include "lib/proto/reply.h"

/* Why a seed gave no map: a refused login is told apart, so that a wrong
 * password is reported as such and not as an unreachable cluster. */
enum ask_failure { ASK_FAILED, ASK_AUTH_REFUSED, ASK_AUTH_MISSING };

/* Connect and log in to one node. NULL with a reason in why; *fail says
 * whether the login was refused. */
static struct syncconn *node_dial(const struct topology_source *src, const char *addr,
                                  enum ask_failure *fail, char *why, size_t whylen)
{
    char *host = NULL;
    int port;
    struct syncconn_opts o = {
        .connect_timeout_ms = src->connect_timeout_ms, .timeout_ms = src->timeout_ms,
        .tls = src->tls, .tls_server_name = src->tls_server_name,
        .tls_insecure = src->tls_insecure,
    };
    if (hostport_parse(addr, &host, &port) < 0) {
        snprintf(why, whylen, "bad address");
        return NULL;
    }
    struct syncconn *c = syncconn_open(host, port, &o, why, whylen);
    free(host);
    if (!c || !src->password)
        return c;
    const char *argv[3] = { "AUTH" };
    int argc = 1;
    if (src->user)
        argv[argc++] = src->user;
    argv[argc++] = src->password;
    redisReply *r = syncconn_command(c, argc, argv, why, whylen);
    if (r && r->type == REDIS_REPLY_ERROR) {
        char code[32];
        /* only the error's code: its text may quote the password */
        reply_error_code(r->str, code, sizeof code);
        snprintf(why, whylen, "authentication failed: the node answered %s to the proxy's AUTH",
                 code);
        *fail = ASK_AUTH_REFUSED;
    }
    if (!r || r->type == REDIS_REPLY_ERROR) {
        freeReplyObject(r);
        syncconn_close(c);
        return NULL;
    }
    freeReplyObject(r);
    return c;
}

struct syncconn *topology_dial(const struct topology_source *src, const char *addr,
                               char *why, size_t whylen)
{
    enum ask_failure fail = ASK_FAILED;
    return node_dial(src, addr, &fail, why, whylen);
}

/* Apply address-map to an announced address. */
static const char *address_target(const struct topology_source *src, const char *announced)
{
    for (int i = 0; i < src->nmap; i++)
        if (strcmp(src->map_from[i], announced) == 0)
            return src->map_to[i];
    return announced;
}

/* target ("host:port") as one numeric address into sa: 0, or -1 with why. */
static int address_resolve(const char *target, struct sockaddr_storage *sa, socklen_t *salen,
                           char *why, size_t whylen)
{
    char *host = NULL, portstr[16];
    int port;
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;

    if (hostport_parse(target, &host, &port) < 0) {
        snprintf(why, whylen, "bad node address '%s'", target);
        return -1;
    }
    snprintf(portstr, sizeof portstr, "%d", port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    free(host);
    if (rc != 0 || !res) {
        snprintf(why, whylen, "cannot resolve node address '%s' that the cluster announces: %s "
                 "(map it to a reachable one with address-map)", target, gai_strerror(rc));
        return -1;
    }
    /* one address is kept: an IPv4 one where the name has both, as hiredis
     * (which read the topology) tries them in the resolver's order */
    struct addrinfo *pick = res;
    for (struct addrinfo *a = res; a; a = a->ai_next)
        if (a->ai_family == AF_INET) {
            pick = a;
            break;
        }
    memcpy(sa, pick->ai_addr, pick->ai_addrlen);
    *salen = pick->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* A node of a CLUSTER SLOTS range ([host, port, id, ...]) as announced
 * into out: 0, or -1 when malformed. */
static int node_announced(redisReply *node, const char *seed_host, char *out, size_t size)
{
    if (node->type != REDIS_REPLY_ARRAY || node->elements < 2 ||
        node->element[0]->type != REDIS_REPLY_STRING ||
        node->element[1]->type != REDIS_REPLY_INTEGER)
        return -1;
    /* an empty host means "the address you reached me at" (cluster spec) */
    const char *host = node->element[0]->len ? node->element[0]->str : seed_host;
    snprintf(out, size, strchr(host, ':') ? "[%s]:%lld" : "%s:%lld", host,
             node->element[1]->integer);
    return 0;
}

/* The replicas a CLUSTER SLOTS range lists after its master (elements 3
 * on), added to n's once each, address-map applied and resolved (one that
 * does not resolve is kept, never connected to): 0, or -1 when one is
 * malformed. */
static int replicas_add(const struct topology_source *src, struct topology_node *n,
                        redisReply *range, const char *seed_host)
{
    for (size_t i = 3; i < range->elements; i++) {
        char announced[TOPO_ADDR_MAX], why[300];
        int known = 0;
        if (node_announced(range->element[i], seed_host, announced, sizeof announced) < 0)
            return -1;
        for (int k = 0; k < n->nreplicas; k++)
            known |= strcmp(n->replicas[k].announced, announced) == 0;
        if (known || n->nreplicas == TOPO_REPLICAS_MAX)
            continue;
        struct topology_replica *rep = &n->replicas[n->nreplicas++];
        snprintf(rep->announced, sizeof rep->announced, "%s", announced);
        snprintf(rep->target, sizeof rep->target, "%s", address_target(src, announced));
        if (address_resolve(rep->target, &rep->sa, &rep->salen, why, sizeof why) < 0)
            rep->salen = 0;
    }
    return 0;
}

/* Find or add the master of one CLUSTER SLOTS range. Returns its index, -2
 * when its address does not resolve (it is left out), or -1. */
static int node_intern(struct topology *t, const struct topology_source *src,
                       const char *seed_host, redisReply *master, char *why, size_t whylen)
{
    char announced[TOPO_ADDR_MAX];
    if (node_announced(master, seed_host, announced, sizeof announced) < 0) {
        snprintf(why, whylen, "malformed CLUSTER SLOTS reply");
        return -1;
    }
    int idx = topology_find(t, announced);
    if (idx >= 0)
        return idx;
    struct topology_node *grown = realloc(t->nodes, sizeof *grown * (size_t)(t->nnodes + 1));
    if (!grown)
        return -1;
    t->nodes = grown;
    struct topology_node *n = &t->nodes[t->nnodes];
    memset(n, 0, sizeof *n);
    snprintf(n->announced, sizeof n->announced, "%s", announced);
    snprintf(n->target, sizeof n->target, "%s", address_target(src, announced));
    if (master->elements >= 3 && master->element[2]->type == REDIS_REPLY_STRING)
        snprintf(n->id, sizeof n->id, "%s", master->element[2]->str);
    if (address_resolve(n->target, &n->sa, &n->salen, why, whylen) < 0) {
        /* one name the resolver does not know (yet) costs its own slots,
         * not the whole map */
        if (t->ndropped++ == 0)
            snprintf(t->dropped_why, sizeof t->dropped_why, "%s", why);
        return -2;
    }
    return t->nnodes++;
}

static struct topology *topology_from_reply(const struct topology_source *src,
                                            const char *seed_host, redisReply *r,
                                            char *why, size_t whylen)
{
    struct topology *t = topology_empty();
    if (!t)
        return NULL;
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *range = r->element[i];
        if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
            range->element[0]->type != REDIS_REPLY_INTEGER ||
            range->element[1]->type != REDIS_REPLY_INTEGER)
            goto malformed;
        long long lo = range->element[0]->integer, hi = range->element[1]->integer;
        if (lo < 0 || hi >= SLOT_COUNT || lo > hi)
            goto malformed;
        int idx = node_intern(t, src, seed_host, range->element[2], why, whylen);
        if (idx == -2)
            continue;
        if (idx < 0)
            goto fail;
        if (replicas_add(src, &t->nodes[idx], range, seed_host) < 0)
            goto malformed;
        for (long long s = lo; s <= hi; s++) {
            if (t->slot_node[s] < 0)
                t->covered++;
            t->slot_node[s] = (int16_t)idx;
        }
    }
    if (t->nnodes == 0) {
        snprintf(why, whylen, "%s", t->ndropped ? t->dropped_why
                                                : "the cluster has no slot assigned");
        goto fail;
    }
    return t;
malformed:
    snprintf(why, whylen, "malformed CLUSTER SLOTS reply");
fail:
    free(t->nodes);
    free(t);
    return NULL;
}

static struct topology *topology_ask(const struct topology_source *src, const char *addr,
                                     enum ask_failure *fail, char *why, size_t whylen)
{
    *fail = ASK_FAILED;
    struct syncconn *c = node_dial(src, addr, fail, why, whylen);
    if (!c)
        return NULL;
    struct topology *t = NULL;
    const char *argv[] = { "CLUSTER", "SLOTS" };
    redisReply *r = syncconn_command(c, 2, argv, why, whylen);
    if (!r)
        ;
    else if (r->type == REDIS_REPLY_ERROR) {
        snprintf(why, whylen, "%s", r->str);
        if (strncmp(r->str, "NOAUTH", 6) == 0)
            *fail = ASK_AUTH_MISSING;
    } else if (r->type != REDIS_REPLY_ARRAY)
        snprintf(why, whylen, "malformed CLUSTER SLOTS reply");
    else {
        char *host = NULL;
        int port;
        hostport_parse(addr, &host, &port);
        t = topology_from_reply(src, host ? host : "127.0.0.1", r, why, whylen);
        free(host);
    }
    freeReplyObject(r);
    syncconn_close(c);
    return t;
}

/* The first words of err when the seeds refused the login. */
static size_t fetch_error_head(enum ask_failure worst, char *err, size_t errlen)
{
    int n = 0;
    if (worst == ASK_AUTH_REFUSED)
        n = snprintf(err, errlen, "the cluster refused the proxy's credentials (check "
                     "cluster-user and cluster-password): ");
    else if (worst == ASK_AUTH_MISSING)
        n = snprintf(err, errlen, "the cluster requires a password and none is configured "
                     "(set cluster-password, and cluster-user for an ACL user): ");
    return n > 0 && (size_t)n < errlen ? (size_t)n : 0;
}

/*
 * The race of topology_fetch: one thread per address asks it (topology_ask)
 * and the first usable map wins; the caller waits for that, or for every
 * ask to fail. An ask that is still out when the caller returns (a frozen
 * node) finishes on its own: it owns a reference to the race, which holds
 * its own copy of the source, and the last reference frees it.
 */
struct fetch_ask {
    char addr[TOPO_ADDR_MAX];
    struct fetch_race *race;
    struct topology *t;
    enum ask_failure fail;
    int done;
    char why[300];
};

struct fetch_race {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int refs;                       /* the caller and each ask still out */
    int pending;                    /* asks not done */
    int winner;                     /* the ask whose complete map won, or -1 */
    struct topology_source src;     /* a copy: its strings below */
    char *user, *password, *server_name;
    char **map;                     /* nmap "from" strings, then nmap "to" */
    int nasks;
    struct fetch_ask asks[];
};

static void race_unref(struct fetch_race *race)
{
    pthread_mutex_lock(&race->lock);
    int last = --race->refs == 0;
    pthread_mutex_unlock(&race->lock);
    if (!last)
        return;
    for (int i = 0; i < race->nasks; i++)
        topology_unref(race->asks[i].t);
    for (int i = 0; i < 2 * race->src.nmap; i++)
        free(race->map[i]);
    free(race->map);
    free(race->user);
    free(race->password);
    free(race->server_name);
    if (race->src.tls)
        SSL_CTX_free(race->src.tls);
    pthread_mutex_destroy(&race->lock);
    pthread_cond_destroy(&race->cond);
    free(race);
}

static char *dup_or_null(const char *s, int *failed)
{
    char *d = s ? strdup(s) : NULL;
    *failed |= s && !d;
    return d;
}

/* race->src: src's settings in strings of the race's own. 0 or -1. */
static int race_copy_source(struct fetch_race *race, const struct topology_source *src)
{
    int failed = 0;
    race->src = *src;
    race->src.seeds = NULL;
    race->src.nseeds = 0;
    race->user = dup_or_null(src->user, &failed);
    race->password = dup_or_null(src->password, &failed);
    race->server_name = dup_or_null(src->tls_server_name, &failed);
    race->src.user = race->user;
    race->src.password = race->password;
    race->src.tls_server_name = race->server_name;
    race->map = calloc((size_t)src->nmap * 2 + 1, sizeof *race->map);
    failed |= !race->map;
    for (int i = 0; race->map && i < src->nmap; i++) {
        race->map[i] = dup_or_null(src->map_from[i], &failed);
        race->map[src->nmap + i] = dup_or_null(src->map_to[i], &failed);
    }
    race->src.map_from = (const char *const *)race->map;
    race->src.map_to = race->map ? (const char *const *)race->map + src->nmap : NULL;
    if (src->tls)
        SSL_CTX_up_ref(src->tls);
    return failed ? -1 : 0;
}

/* Every slot served by a node the proxy can reach. */
static int topology_complete(const struct topology *t)
{
    return t->covered == SLOT_COUNT && t->ndropped == 0;
}

/* With no complete map: the answer that covers the most slots, or -1.
 * Called with the race's lock held. */
static int race_best_partial(const struct fetch_race *race)
{
    int best = -1;
    for (int i = 0; i < race->nasks; i++) {
        const struct topology *t = race->asks[i].t;
        if (t && (best < 0 || t->covered > race->asks[best].t->covered))
            best = i;
    }
    return best;
}

static void *ask_main(void *arg)
{
    struct fetch_ask *a = arg;
    struct fetch_race *race = a->race;
    struct topology *t = topology_ask(&race->src, a->addr, &a->fail, a->why, sizeof a->why);
    pthread_mutex_lock(&race->lock);
    a->t = t;
    a->done = 1;
    race->pending--;
    if (t && race->winner < 0 && topology_complete(t))
        race->winner = (int)(a - race->asks);
    pthread_cond_signal(&race->cond);
    pthread_mutex_unlock(&race->lock);
    race_unref(race);
    return NULL;
}

/* A race over the addresses (duplicates asked once), its asks started. */
static struct fetch_race *race_start(const struct topology_source *src,
                                     const char *const *addrs, int n)
{
    struct fetch_race *race = calloc(1, sizeof *race + (size_t)n * sizeof race->asks[0]);
    if (!race)
        return NULL;
    pthread_mutex_init(&race->lock, NULL);
    pthread_cond_init(&race->cond, NULL);
    race->refs = 1;
    race->winner = -1;
    if (race_copy_source(race, src) < 0) {
        race_unref(race);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < race->nasks; j++)
            seen |= strcmp(race->asks[j].addr, addrs[i]) == 0;
        if (!seen)
            snprintf(race->asks[race->nasks++].addr, TOPO_ADDR_MAX, "%s", addrs[i]);
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < race->nasks; i++) {
        struct fetch_ask *a = &race->asks[i];
        pthread_t th;
        a->race = race;
        race->refs++;
        race->pending++;
        if (pthread_create(&th, &attr, ask_main, a) != 0) {
            race->refs--;
            race->pending--;
            a->done = 1;
            snprintf(a->why, sizeof a->why, "cannot start a thread to ask it");
        }
    }
    pthread_attr_destroy(&attr);
    return race;
}

/* What each address said (in their order), after the words for a refused
 * login. Called with the race's lock held. */
static void race_error(const struct fetch_race *race, char *err, size_t errlen)
{
    char tried[2048];
    size_t used = 0;
    enum ask_failure worst = ASK_FAILED;
    tried[0] = '\0';
    for (int i = 0; i < race->nasks && used < sizeof tried; i++) {
        const struct fetch_ask *a = &race->asks[i];
        if (a->done)
            worst = a->fail > worst ? a->fail : worst;
        int k = snprintf(tried + used, sizeof tried - used, "%s%s: %s", used ? "; " : "",
                         a->addr, a->done ? a->why : "no answer in time");
        used += k > 0 ? (size_t)k : 0;
    }
    size_t head = fetch_error_head(worst, err, errlen);
    snprintf(err + head, errlen - head, "%s", tried);
}

struct topology *topology_fetch(const struct topology_source *src,
                                const char *const *extra, int nextra,
                                char *err, size_t errlen)
{
    static uint64_t next_version;   /* only the control thread fetches */
    int n = nextra + src->nseeds;
    const char **addrs = calloc((size_t)n + 1, sizeof *addrs);
    struct fetch_race *race = NULL;
    if (addrs) {
        for (int i = 0; i < n; i++)
            addrs[i] = i < nextra ? extra[i] : src->seeds[i - nextra];
        race = race_start(src, addrs, n);
    }
    free(addrs);
    if (!race) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    /* each ask ends within its own timeouts; this bounds the wait anyway */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    long long wait_ms = (long long)src->connect_timeout_ms + 3LL * src->timeout_ms + 1000;
    deadline.tv_sec += (time_t)(wait_ms / 1000);
    deadline.tv_nsec += (wait_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    struct topology *t = NULL;
    pthread_mutex_lock(&race->lock);
    while (race->winner < 0 && race->pending > 0 &&
           pthread_cond_timedwait(&race->cond, &race->lock, &deadline) == 0)
        ;
    int won = race->winner >= 0 ? race->winner : race_best_partial(race);
    if (won >= 0) {
        t = race->asks[won].t;
        race->asks[won].t = NULL;
        t->version = ++next_version;
    } else {
        race_error(race, err, errlen);
    }
    pthread_mutex_unlock(&race->lock);
    race_unref(race);
    return t;
}

struct topology *topology_empty(void)
{
    struct topology *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->refs = 1;
    for (int s = 0; s < SLOT_COUNT; s++)
        t->slot_node[s] = -1;
    return t;
}

struct topology *topology_ref(struct topology *t)
{
    __atomic_add_fetch(&t->refs, 1, __ATOMIC_RELAXED);
    return t;
}

void topology_unref(struct topology *t)
{
    if (t && __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        free(t->nodes);
        free(t);
    }
}

int topology_find(const struct topology *t, const char *addr)
{
    for (int i = 0; i < t->nnodes; i++)
        if (strcmp(t->nodes[i].announced, addr) == 0)
            return i;
    return -1;
}

int topology_version_cmp(const char *a, const char *b)
{
    for (;;) {
        char *ea, *eb;
        long x = strtol(a, &ea, 10), y = strtol(b, &eb, 10);
        if (x != y)
            return x < y ? -1 : 1;
        if (ea == a && eb == b)
            return 0;
        a = *ea == '.' ? ea + 1 : ea;
        b = *eb == '.' ? eb + 1 : eb;
    }
}

int topology_server_since(const struct topology_server *s, const char *name,
                          const char *version)
{
    return strcmp(s->name, name) == 0 && topology_version_cmp(s->version, version) >= 0;
}
