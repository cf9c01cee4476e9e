/*
 * confwatch: inotify on the config's folders, a settle timer, a hash of
 * the files (confwatch.h).
 */
#include "proxy/ops/confwatch.h"

#include <errno.h>
#include <event2/event.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "lib/base/hash.h"
#include "lib/base/log.h"
#include "proxy/config/config.h"
#include "proxy/config/snapshot.h"
#include "proxy/core/proxy.h"
#include "proxy/ops/lifecycle.h"

#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | \
                    IN_ATTRIB)

static struct {
    struct proxy *p;
    int fd;
    struct event *readable, *settle;
    uint64_t loaded;                /* the hash of the files last loaded */
} watch = { .fd = -1 };

/* FNV-1a 64 over one file's bytes (a missing file hashes as its name). */
static uint64_t hash_file(uint64_t h, const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char buf[4096];
    size_t n;
    if (!f) {
        return hash_fnv64_more(h, path, strlen(path));
    }
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        h = hash_fnv64_more(h, buf, n);
    fclose(f);
    return h;
}

/* The config file and the running config's rules files and aclfile. */
static uint64_t hash_files(const struct proxy *p)
{
    const struct config *c = p->snap->cfg;
    uint64_t h = hash_file(HASH_FNV64_INIT, p->cfg.path);
    for (int i = 0; i < c->nlayout_rules; i++)
        h = hash_file(h, c->layout_rules[i].path);
    if (c->aclfile)
        h = hash_file(h, c->aclfile);
    return h;
}

static void settled_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    uint64_t now = hash_files(watch.p);
    if (now == watch.loaded)
        return;
    log_notice("config", "config file %s (or a rules file) changed: reloading",
               watch.p->cfg.path);
    watch.loaded = now;     /* a refused file is not tried again until it changes */
    lifecycle_reload(watch.p);
}

static void readable_cb(evutil_socket_t fd, short what, void *arg)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    (void)what;
    (void)arg;
    while (read(fd, buf, sizeof buf) > 0)
        ;                   /* the events say only that something moved */
    static const struct timeval settle = { 0, CONFWATCH_SETTLE_MS * 1000 };
    if (!evtimer_pending(watch.settle, NULL))
        evtimer_add(watch.settle, &settle);
}

/* path's folder into the watch; 0, or -1 with the reason. */
static int watch_folder_of(const char *path, char *err, size_t errlen)
{
    char *copy = strdup(path);
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const char *dir = dirname(copy);
    int rc = inotify_add_watch(watch.fd, dir, WATCH_MASK);
    if (rc < 0)
        snprintf(err, errlen, "cannot watch %s for config changes: %s (config-watch no "
                 "turns the watch off)", dir, strerror(errno));
    free(copy);
    return rc < 0 ? -1 : 0;
}

int confwatch_start(struct proxy *p, char *err, size_t errlen)
{
    const struct config *c = &p->cfg;
    if (!c->path || !c->config_watch)
        return 0;
    watch.p = p;
    watch.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (watch.fd < 0) {
        snprintf(err, errlen, "cannot watch the config file: %s (config-watch no turns the "
                 "watch off)", strerror(errno));
        return -1;
    }
    if (watch_folder_of(c->path, err, errlen) < 0)
        return -1;
    for (int i = 0; i < c->nlayout_rules; i++)
        if (watch_folder_of(c->layout_rules[i].path, err, errlen) < 0)
            return -1;      /* a folder watched twice is one watch: inotify says so */
    if (c->aclfile && watch_folder_of(c->aclfile, err, errlen) < 0)
        return -1;
    watch.readable = event_new(p->base, watch.fd, EV_READ | EV_PERSIST, readable_cb, NULL);
    watch.settle = evtimer_new(p->base, settled_cb, NULL);
    if (!watch.readable || !watch.settle || event_add(watch.readable, NULL) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    watch.loaded = hash_files(p);
    log_notice("config", "watching %s for changes (config-watch)", c->path);
    return 0;
}

void confwatch_stop(void)
{
    if (watch.readable)
        event_free(watch.readable);
    if (watch.settle)
        event_free(watch.settle);
    if (watch.fd >= 0)
        close(watch.fd);
    watch.readable = watch.settle = NULL;
    watch.fd = -1;
}
