/*
 * procstat: the process's own figures, as Prometheus's process_* family
 * reports them, read from /proc/self (Linux): CPU time, resident and
 * virtual memory, open file descriptors and their limit.
 */
#ifndef TAGPROXY_PROCSTAT_H
#define TAGPROXY_PROCSTAT_H

#include <stdint.h>

struct procstat {
    uint64_t cpu_usec;              /* user + system */
    uint64_t resident_bytes, virtual_bytes;
    long open_fds, max_fds;         /* max_fds: RLIMIT_NOFILE's soft limit */
};

/* Fills ps; 0, or -1 when /proc/self cannot be read (ps is zeroed). */
int procstat_read(struct procstat *ps);

#endif
