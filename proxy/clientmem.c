#include "proxy/clientmem.h"

#include <pthread.h>
#include <stdint.h>

#include "base/log.h"
#include "proxy/client.h"
#include "proxy/proxy.h"
#include "proxy/worker.h"

/* What c holds now (clientmem.h). */
static size_t clientmem_count(const struct client *c)
{
    return (c->io.rbuf ? c->io.rcap : 0) + c->backlog + client_family_bytes(c) + c->held +
           io_conn_pending(&c->io);
}

size_t clientmem_of(const struct client *c)
{
    return __atomic_load_n(&c->mem, __ATOMIC_RELAXED);
}

size_t clientmem_total(const struct proxy *p)
{
    size_t total = 0;
    for (int i = 0; i < p->nworkers; i++)
        total += __atomic_load_n(&p->workers[i].client_mem, __ATOMIC_RELAXED);
    return total;
}

/* A client eviction may take; c's worker's clients_lock is held. */
static int clientmem_evictable(const struct client *c)
{
    return c->state != CLIENT_GONE && !c->kill_pending && !c->no_evict;
}

/* The evictable client using the most memory, of any worker (their
 * clients_lock held), or NULL. */
static struct client *clientmem_largest(struct proxy *p)
{
    struct client *best = NULL, *c;
    size_t most = 0;
    for (int i = 0; i < p->nworkers; i++)
        TAILQ_FOREACH(c, &p->workers[i].clients, link)
            if (clientmem_evictable(c) && clientmem_of(c) > most) {
                most = clientmem_of(c);
                best = c;
            }
    return best;
}

/*
 * The total passed maxmemory-clients: with every worker's client list
 * locked (in worker order, so two workers evicting at once cannot
 * deadlock), mark the largest clients for closing until what the others
 * hold is under the limit; each worker closes its marked ones on its own
 * thread (worker_close_killed), the caller's too, so no client is closed
 * under a caller that still uses it.
 */
static void clientmem_evict(struct proxy *p, size_t limit)
{
    uint64_t workers = 0;
    size_t total = 0;
    struct client *c;
    for (int i = 0; i < p->nworkers; i++) {
        pthread_mutex_lock(&p->workers[i].clients_lock);
        TAILQ_FOREACH(c, &p->workers[i].clients, link)
            if (!c->kill_pending)
                total += clientmem_of(c);
    }
    while (total > limit && (c = clientmem_largest(p)) != NULL) {
        c->kill_pending = CLIENT_KILL_EVICT;
        total -= clientmem_of(c);
        workers |= (uint64_t)1 << c->worker->id;
        log_notice("client", "Evicting client: id=%llu addr=%s tot-mem=%zu "
                   "(maxmemory-clients %zu passed)",
                   (unsigned long long)c->id, c->addr, clientmem_of(c), limit);
    }
    for (int i = p->nworkers - 1; i >= 0; i--)
        pthread_mutex_unlock(&p->workers[i].clients_lock);
    for (int i = 0; i < p->nworkers; i++)
        if (workers & ((uint64_t)1 << i))
            worker_post_kill(&p->workers[i]);
}

void clientmem_update(struct client *c)
{
    struct worker *w = c->worker;
    size_t now = clientmem_count(c), was = c->mem;
    if (now == was)
        return;
    __atomic_store_n(&c->mem, now, __ATOMIC_RELAXED);
    __atomic_store_n(&w->client_mem, w->client_mem - was + now, __ATOMIC_RELAXED);
    long long limit = w->cfg->maxmemory_clients;
    if (limit > 0 && now > was && c->state != CLIENT_GONE &&
        clientmem_total(w->proxy) > (size_t)limit)
        clientmem_evict(w->proxy, (size_t)limit);
}

void clientmem_forget(struct client *c)
{
    struct worker *w = c->worker;
    __atomic_store_n(&w->client_mem, w->client_mem - c->mem, __ATOMIC_RELAXED);
    __atomic_store_n(&c->mem, 0, __ATOMIC_RELAXED);
}
