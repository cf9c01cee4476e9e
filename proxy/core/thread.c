/*
 * thread: a worker's thread. See thread.h.
 */
#include "proxy/core/thread.h"

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <errno.h>
#include <netdb.h>
#include <semaphore.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "lib/base/log.h"
#include "proxy/config/snapshot.h"
#include "proxy/core/acks.h"
#include "proxy/core/client.h"
#include "proxy/core/proxy.h"
#include "proxy/core/readfrom.h"
#include "proxy/core/userconn.h"
#include "proxy/core/worker.h"

/* Operations in one batched read or write (io.h): more sockets than this in a
 * round take one more system call per this many. */
#define WORKER_IO_BATCH 256
#define WORKER_TIMER_SLACK_NS 1000  /* the precision of the round pause */

/* Take a new topology: connections to masters it still has are kept. */
static void worker_take_topology(struct worker *w, struct topology *t)
{
    struct node_conn **conns[WORKER_CONN_KINDS];
    struct worker_node *nodes = calloc((size_t)t->nnodes + 1, sizeof *nodes);
    int have = nodes != NULL;
    for (int p = 0; p < WORKER_CONN_KINDS; p++)
        have &= (conns[p] = calloc((size_t)t->nnodes + 1, sizeof *conns[p])) != NULL;
    if (!have) {
        for (int p = 0; p < WORKER_CONN_KINDS; p++)
            free(conns[p]);
        free(nodes);
        topology_unref(t);
        return;
    }
    /* a master that stays keeps its hold-offs */
    for (int i = 0; w->topo && i < w->topo->nnodes; i++) {
        int j = topology_find(t, w->topo->nodes[i].announced);
        if (j >= 0 && strcmp(t->nodes[j].target, w->topo->nodes[i].target) == 0)
            nodes[j] = w->nodes[i];
    }
    free(w->nodes);
    w->nodes = nodes;
    for (int p = 0; p < WORKER_CONN_KINDS; p++) {
        for (int i = 0; w->topo && i < w->topo->nnodes; i++) {
            struct node_conn *c = w->conns[p][i];
            if (!c)
                continue;
            int j = topology_find(t, w->topo->nodes[i].announced);
            if (j >= 0 && strcmp(t->nodes[j].target, w->topo->nodes[i].target) == 0)
                conns[p][j] = c;
            else
                node_conn_retire(c);    /* its replies still arrive; nothing new is sent */
        }
        free(w->conns[p]);
        w->conns[p] = conns[p];
    }
    /* a slot whose master changes: its reads wait for replicas fresh past it */
    for (int slot = 0; w->slot_moves && slot < SLOT_COUNT; slot++)
        if (w->topo && w->slot_node[slot] >= 0 && t->slot_node[slot] >= 0 &&
            strcmp(w->topo->nodes[w->slot_node[slot]].announced,
                   t->nodes[t->slot_node[slot]].announced) != 0)
            readfrom_slot_moved(w, slot, 0);
    topology_unref(w->topo);
    w->topo = t;
    memcpy(w->slot_node, t->slot_node, sizeof w->slot_node);
    userconn_topology(w);
    worker_topology_taken(w);
}

/* Take a new config snapshot (a reference passed to w). Connections keep
 * what they were opened with; new ones, new clients and new commands see
 * the new values. */
static void worker_take_config(struct worker *w, struct config_snapshot *s)
{
    struct config_snapshot *old = w->snap;
    w->snap = s;
    w->cfg = s->cfg;
    w->loop.pause_us = s->cfg->round_pause_us;
    w->node_opts.connect_timeout_ms = s->cfg->node_connect_timeout_ms;
    w->node_opts.timeout_ms = s->cfg->node_timeout_ms;
    w->node_opts.slow_timeout_ms = s->cfg->slow_command_timeout_ms;
    w->node_opts.max_bulk_len = s->cfg->proto_max_bulk_len;
    w->node_opts.user = s->cfg->cluster_user;
    w->node_opts.password = s->cfg->cluster_password;
    /* TLS as started: cluster-tls needs a restart */
    w->node_opts.tls = w->proxy->tls_cluster;
    w->node_opts.tls_server_name = w->proxy->cfg.cluster_tls_server_name;
    w->node_opts.tls_insecure = w->proxy->cfg.cluster_tls_insecure;
    w->node_opts3 = w->node_opts;
    w->node_opts3.resp3 = 1;
    userconn_config(w);
    client_users_reloaded(w);
    snapshot_unref(old);
    /* the last worker to take a reload says so: from then on every new
     * command runs with it (scripts and operators wait for this line) */
    if (s->workers_left > 0 && __atomic_sub_fetch(&s->workers_left, 1, __ATOMIC_ACQ_REL) == 0)
        log_notice("config", "config generation %llu in use by every worker",
                   (unsigned long long)s->generation);
}

void thread_share_config(struct worker *w, struct config_snapshot *s)
{
    struct proxy *p = w->proxy;
    s->workers_left = p->nworkers;
    for (int i = 0; i < p->nworkers; i++)
        if (&p->workers[i] != w)
            worker_post_config(&p->workers[i], s);
    worker_take_config(w, snapshot_ref(s));
}

static void listener_stop(struct evconnlistener **l)
{
    if (*l)
        evconnlistener_free(*l);
    *l = NULL;
}

/* Stop accepting; close each client once it is idle. */
static void worker_start_drain(struct worker *w)
{
    struct client *c, *next;
    if (w->draining)
        return;
    w->draining = 1;
    worker_drain_started(w);
    listener_stop(&w->listener);
    listener_stop(&w->tls_listener);
    listener_stop(&w->unix_listener);      /* the socket stays open: unixsock.h */
    for (c = TAILQ_FIRST(&w->clients); c; c = next) {
        next = TAILQ_NEXT(c, link);
        client_drain_check(c);
    }
}


static void mailbox_cb(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    char bytes[64];
    (void)what;
    while (read(fd, bytes, sizeof bytes) > 0)
        ;
    pthread_mutex_lock(&w->mailbox_lock);
    struct topology *t = w->mailbox_topo;
    struct config_snapshot *s = w->mailbox_snap;
    int drain = w->mailbox_drain;
    int stop = w->mailbox_stop;
    int kill = w->mailbox_kill;
    w->mailbox_kill = 0;
    unsigned families = w->mailbox_families;
    w->mailbox_families = 0;
    w->mailbox_topo = NULL;
    struct layout_ref *layout = w->mailbox_layout;
    int layout_set = w->mailbox_layout_set;
    w->mailbox_layout = NULL;
    w->mailbox_layout_set = 0;
    w->mailbox_snap = NULL;
    pthread_mutex_unlock(&w->mailbox_lock);
    if (s)
        worker_take_config(w, s);
    if (t)
        worker_take_topology(w, t);
    if (layout_set) {
        layout_ref_put(w->layout);
        w->layout = layout;
        worker_layout_taken(w);
    }
    if (kill)
        client_close_killed(w);
    for (int i = 0; i < worker_family_count(); i++)
        if (families & (1u << i))
            worker_family_at(i)->mail(w, w->family[i]);
    if (drain)
        worker_start_drain(w);
    if (stop)
        event_base_loopexit(w->base, NULL);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    (void)l;
    client_accept(arg, fd, sa, salen);
}

static void accept_tls_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                          int salen, void *arg)
{
    struct worker *w = arg;
    (void)l;
    struct client *c = client_accept(w, fd, sa, salen);
    if (c)
        client_start_tls(c, w->proxy->tls_server);
}

static void accept_error_cb(struct evconnlistener *l, void *arg)
{
    (void)l;
    (void)arg;
    log_warning("listen", "accept failed: %s",
                evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

/* io-uring yes: batch the loop's socket calls (io.h), where the kernel lets us. */
static void worker_batch_io(struct worker *w, const struct config *cfg)
{
    char why[160];
    if (!cfg->io_uring)
        return;
    if (io_loop_batch(&w->loop, WORKER_IO_BATCH, why, sizeof why) < 0)
        log_notice("io", "worker %d: io_uring unavailable (%s); one system call per socket",
                   w->id, why);
}

/* The loop turns at least once a second, idle or not: /healthz reads
 * alive_us to tell a wedged worker (proxy/ops/admin.c). */
static void heartbeat_cb(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    (void)fd;
    (void)what;
    __atomic_store_n(&w->alive_us, stats_now_us(), __ATOMIC_RELAXED);
    client_close_idle(w, time(NULL));
}

int thread_init(struct worker *w, struct proxy *p, int id, struct topology *t)
{
    memset(w, 0, sizeof *w);
    w->id = id;
    w->proxy = p;
    struct event_config *ec = event_config_new();
    if (!ec)
        return -1;
    event_config_set_flag(ec, EVENT_BASE_FLAG_NOLOCK);
    w->base = event_base_new_with_config(ec);
    event_config_free(ec);
    if (!w->base || io_loop_init(&w->loop, w->base) < 0)
        return -1;
    w->loop.before_flush = acks_round_flush;
    w->loop.before_flush_arg = w;
    w->loop.after_flush = worker_round_ended;
    w->loop.after_flush_arg = w;
    TAILQ_INIT(&w->acks_open);
    TAILQ_INIT(&w->scripts_out);
    if (pipe2(w->mailbox_pipe, O_NONBLOCK | O_CLOEXEC) < 0)
        return -1;
    w->mailbox_event = event_new(w->base, w->mailbox_pipe[0], EV_PERSIST | EV_READ,
                                 mailbox_cb, w);
    if (!w->mailbox_event || event_add(w->mailbox_event, NULL) < 0)
        return -1;
    static const struct timeval second = { 1, 0 };
    w->alive_us = stats_now_us();
    w->heartbeat_event = event_new(w->base, -1, EV_PERSIST, heartbeat_cb, w);
    if (!w->heartbeat_event || event_add(w->heartbeat_event, &second) < 0)
        return -1;
    pthread_mutex_init(&w->mailbox_lock, NULL);
    pthread_mutex_init(&w->clients_lock, NULL);
    TAILQ_INIT(&w->clients);
    TAILQ_INIT(&w->paused);
    w->node_caught_up = client_resume_paused;
    for (int i = 0; i < worker_family_count(); i++)
        if (worker_family_at(i)->init(w, &w->family[i]) < 0)
            return -1;
    w->node_opts.stats = &w->stats.nodes;
    w->loop.pauses = &w->stats.round_pauses;
    w->loop.batching = &w->stats.io_uring;
    w->loop.batches = &w->stats.io_batches;
    w->loop.batched_ops = &w->stats.io_batched_ops;
    w->loop.buffer_bytes = &w->stats.io_buffer_bytes;
    if (stats_init(&w->stats) < 0)
        return -1;
    worker_batch_io(w, p->snap->cfg);
    worker_take_config(w, snapshot_ref(p->snap));
    worker_take_topology(w, topology_ref(t));
    w->layout = layout_ref_get(p->layout);
    return w->mailbox_event ? 0 : -1;
}

static struct evconnlistener *listen_on(struct worker *w, const char *host, int port,
                                        evconnlistener_cb cb, char *err, size_t errlen)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *res = NULL;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve listen address %s: %s", host, gai_strerror(rc));
        return NULL;
    }
    struct evconnlistener *listener = evconnlistener_new_bind(w->base, cb, w,
                                          LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                          LEV_OPT_REUSEABLE_PORT | LEV_OPT_CLOSE_ON_EXEC,
                                          511, res->ai_addr, (int)res->ai_addrlen);
    freeaddrinfo(res);
    if (!listener) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", host, port,
                 evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
        return NULL;
    }
    evconnlistener_set_error_cb(listener, accept_error_cb);
    return listener;
}

int thread_listen(struct worker *w, const char *host, int port, char *err, size_t errlen)
{
    w->listener = listen_on(w, host, port, accept_cb, err, errlen);
    return w->listener ? 0 : -1;
}

int thread_listen_tls(struct worker *w, const char *host, int port, char *err, size_t errlen)
{
    w->tls_listener = listen_on(w, host, port, accept_tls_cb, err, errlen);
    return w->tls_listener ? 0 : -1;
}

int thread_listen_unix(struct worker *w, int fd, char *err, size_t errlen)
{
    /* backlog 0: the socket already listens; not LEV_OPT_CLOSE_ON_FREE:
     * every worker accepts on it, and the proxy closes it (unixsock.h) */
    w->unix_listener = evconnlistener_new(w->base, accept_cb, w, 0, 0, fd);
    if (!w->unix_listener) {
        snprintf(err, errlen, "cannot accept on the unixsocket: out of memory");
        return -1;
    }
    evconnlistener_set_error_cb(w->unix_listener, accept_error_cb);
    return 0;
}

/* Lower this worker thread's priority by worker-nice (on Linux niceness
 * belongs to the thread, so the main thread keeps its own). Sharing CPUs with
 * its clients and nodes, a proxy serves them best by running after them: its
 * rounds then find more sockets ready, and they find more work in each of
 * the proxy's writes. Only ever lowered, so it needs no privilege. */
static void worker_renice(struct worker *w)
{
    if (w->cfg->worker_nice == 0)
        return;
    id_t tid = (id_t)gettid();
    errno = 0;
    int now = getpriority(PRIO_PROCESS, tid);
    if (now == -1 && errno != 0)
        now = 0;
    int want = now + w->cfg->worker_nice;
    if (want > 19)
        want = 19;                  /* the lowest priority there is */
    if (setpriority(PRIO_PROCESS, tid, want) < 0)
        log_warning("main", "worker %d: cannot set niceness %d (worker-nice): %s", w->id,
                    want, strerror(errno));
}

struct worker_boot {
    struct worker *w;
    sem_t named;        /* posted once the thread is named and reniced */
};

static void *worker_main(void *arg)
{
    struct worker_boot *boot = arg;
    struct worker *w = boot->w;
    /* The round pause (round-pause-us) is a few tens of microseconds: the
     * kernel's default timer slack, 50 us, would more than double it. */
    prctl(PR_SET_TIMERSLACK, WORKER_TIMER_SLACK_NS);
    char name[16];      /* what top -H and /proc/PID/task/TID/comm show */
    snprintf(name, sizeof name, "worker-%d", w->id);
    prctl(PR_SET_NAME, name);
    worker_renice(w);
    sem_post(&boot->named);         /* boot is the starter's: not touched after */
    event_base_dispatch(w->base);
    return NULL;
}

/* Returns once the thread runs as configured (named, reniced), so that
 * when the proxy says it is ready, every worker is what it says. */
int thread_start(struct worker *w)
{
    struct worker_boot boot = { .w = w };
    if (sem_init(&boot.named, 0, 0) < 0)
        return -1;
    int rc = pthread_create(&w->thread, NULL, worker_main, &boot) == 0 ? 0 : -1;
    while (rc == 0 && sem_wait(&boot.named) < 0 && errno == EINTR)
        ;
    sem_destroy(&boot.named);
    return rc;
}

void thread_join(struct worker *w)
{
    pthread_join(w->thread, NULL);
}
