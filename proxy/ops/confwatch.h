/*
 * confwatch: the config reloaded when its files change, as on SIGHUP
 * (lifecycle.h), for a config mounted from a Kubernetes ConfigMap.
 *
 * The folders of the config file and of each layout-rules file are
 * watched with inotify, not the files: the kubelet updates a ConfigMap
 * volume by writing a new folder and renaming the `..data` symlink over
 * the old one, so the file's own name never changes; an editor's rename
 * over the file is the same case. After the first event of a burst, the
 * watch waits CONFWATCH_SETTLE_MS for the burst to end, then hashes the
 * files' bytes and reloads when they differ from the last ones it loaded
 * (a touch, or a change to another file of the folder, reloads nothing).
 * Logged ("config file ... changed: reloading") and counted as reloads.
 *
 * config-watch no, or no config file: no watch. The watched folders are
 * those of the config at start; a reload that names new files needs a
 * restart for them to be watched (SIGHUP still reloads them).
 */
#ifndef TAGPROXY_CONFWATCH_H
#define TAGPROXY_CONFWATCH_H

#include <stddef.h>

#define CONFWATCH_SETTLE_MS 200

struct proxy;

/* On p's control loop. 0 (also when there is nothing to watch), or -1
 * with the reason in err. */
int confwatch_start(struct proxy *p, char *err, size_t errlen);
void confwatch_stop(void);

#endif
