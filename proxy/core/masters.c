/*
 * masters: the masters' state, for any thread. See masters.h.
 */
#include "proxy/core/masters.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/counter.h"
#include "lib/base/log.h"
#include "cluster/health.h"
#include "cluster/slot.h"
#include "proxy/core/proxy.h"

static struct {
    pthread_mutex_t lock;
    int have_topo;
    char waiting[300];              /* no slot map yet: why */
    int covered;
    uint64_t version;
    struct master_state *masters;
    int nmasters;
    uint64_t grace_us;              /* readiness-grace-ms */
    int was_ready;                  /* ready once: the grace applies from then on */
} known = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct master_state *find(struct master_state *ms, int n, const char *addr)
{
    for (int i = 0; i < n; i++)
        if (strcmp(ms[i].addr, addr) == 0)
            return &ms[i];
    return NULL;
}

/* t's masters, as masters_set_topology says. Under the lock. */
static struct master_state *build(const struct topology *t, int probed)
{
    struct master_state *ms = calloc((size_t)t->nnodes + 1, sizeof *ms);
    if (!ms)
        return NULL;
    for (int i = 0; i < t->nnodes; i++) {
        struct master_state *old = find(known.masters, known.nmasters, t->nodes[i].announced);
        snprintf(ms[i].addr, sizeof ms[i].addr, "%s", t->nodes[i].announced);
        ms[i].replicas = t->nodes[i].nreplicas;
        if (old) {
            ms[i].up = old->up;
            ms[i].down_since_us = old->down_since_us;
            snprintf(ms[i].why, sizeof ms[i].why, "%s", old->why);
        } else if (probed) {
            ms[i].down_since_us = stats_now_us();
            snprintf(ms[i].why, sizeof ms[i].why, "master %s has not answered PING yet",
                     ms[i].addr);
        } else {
            ms[i].up = -1;
        }
    }
    for (int s = 0; s < SLOT_COUNT; s++)
        if (t->slot_node[s] >= 0 && t->slot_node[s] < t->nnodes)
            ms[t->slot_node[s]].slots++;
    return ms;
}

void masters_set_topology(const struct topology *t, int probed)
{
    pthread_mutex_lock(&known.lock);
    struct master_state *ms = build(t, probed);
    if (ms) {
        free(known.masters);
        known.masters = ms;
        known.nmasters = t->nnodes;
    }
    known.have_topo = 1;
    known.covered = t->covered;
    known.version = t->version;
    pthread_mutex_unlock(&known.lock);
}

void masters_set_waiting(const char *why)
{
    pthread_mutex_lock(&known.lock);
    snprintf(known.waiting, sizeof known.waiting, "%s", why ? why : "");
    pthread_mutex_unlock(&known.lock);
}

static const char *not_ready_locked(char *why, size_t len);

void masters_set_probes(const struct health *h)
{
    pthread_mutex_lock(&known.lock);
    for (int i = 0; i < h->nprobes; i++) {
        const struct health_probe *pr = h->probes[i];
        struct master_state *m = pr ? find(known.masters, known.nmasters, pr->addr) : NULL;
        if (!m)
            continue;
        if (m->up != pr->up) {
            if (pr->up)
                log_notice("health", "master %s answers PING", pr->addr);
            else
                log_notice("health", "master %s is not connected: %s", pr->addr, pr->why);
        }
        if (!pr->up && m->up != 0)
            m->down_since_us = stats_now_us();
        m->up = pr->up;
        snprintf(m->why, sizeof m->why, "%s", pr->why);
    }
    char why[320];
    not_ready_locked(why, sizeof why);      /* notes the first ready, for the grace */
    pthread_mutex_unlock(&known.lock);
}

/* The first reason not to be ready, or NULL. Under the lock. */
static const char *not_ready_locked(char *why, size_t len)
{
    if (proxy_draining())
        return "draining: the proxy is shutting down";
    if (known.waiting[0]) {
        snprintf(why, len, "waiting for the cluster: no seed gave a slot map yet (%s)",
                 known.waiting);
        return why;
    }
    if (!known.have_topo)
        return "no slot map yet";
    if (known.covered < SLOT_COUNT) {
        snprintf(why, len, "the slot map covers %d of %d slots", known.covered, SLOT_COUNT);
        return why;
    }
    uint64_t now = stats_now_us();
    int up = 0;
    for (int i = 0; i < known.nmasters; i++)
        up += known.masters[i].up != 0;
    for (int i = 0; i < known.nmasters; i++) {
        const struct master_state *m = &known.masters[i];
        if (m->up != 0)
            continue;
        uint64_t down = now > m->down_since_us ? now - m->down_since_us : 0;
        if (!known.was_ready || known.grace_us == 0 || up == 0) {
            snprintf(why, len, "master %s is not connected: %s", m->addr, m->why);
            return why;
        }
        if (down >= known.grace_us) {
            snprintf(why, len, "master %s is not connected for %llu ms, past "
                     "readiness-grace-ms %llu: %s", m->addr,
                     (unsigned long long)(down / 1000),
                     (unsigned long long)(known.grace_us / 1000), m->why);
            return why;
        }
    }
    known.was_ready = 1;
    return NULL;
}

void masters_set_grace(int ms)
{
    pthread_mutex_lock(&known.lock);
    known.grace_us = ms > 0 ? (uint64_t)ms * 1000 : 0;
    pthread_mutex_unlock(&known.lock);
}

const char *masters_not_ready(char *why, size_t len)
{
    pthread_mutex_lock(&known.lock);
    const char *not_ready = not_ready_locked(why, len);
    pthread_mutex_unlock(&known.lock);
    return not_ready;
}

int masters_view(struct masters_view *v)
{
    char why[sizeof v->not_ready];
    pthread_mutex_lock(&known.lock);
    v->masters = calloc((size_t)known.nmasters + 1, sizeof *v->masters);
    if (v->masters) {
        memcpy(v->masters, known.masters, sizeof *v->masters * (size_t)known.nmasters);
        v->nmasters = known.nmasters;
    }
    v->slots_covered = known.covered;
    v->topology_version = known.version;
    const char *not_ready = not_ready_locked(why, sizeof why);
    v->ready = not_ready == NULL;
    snprintf(v->not_ready, sizeof v->not_ready, "%s", not_ready ? not_ready : "");
    pthread_mutex_unlock(&known.lock);
    return v->masters ? 0 : -1;
}
