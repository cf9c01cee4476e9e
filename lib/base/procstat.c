/*
 * procstat: /proc/self/stat, /proc/self/fd and RLIMIT_NOFILE (procstat.h).
 */
#include "lib/base/procstat.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* utime, stime, vsize and rss out of /proc/self/stat: fields 14, 15, 23
 * and 24, counted after the command name, which may hold spaces and ')'. */
static int read_stat(struct procstat *ps)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long long utime, stime, vsize;
    long long rss;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d "
                     "%*d %*d %*d %*d %*u %llu %lld", &utime, &stime, &vsize, &rss) != 4)
        return -1;
    long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    if (tick <= 0 || page <= 0)
        return -1;
    ps->cpu_usec = (utime + stime) * 1000000ULL / (unsigned long long)tick;
    ps->virtual_bytes = vsize;
    ps->resident_bytes = rss > 0 ? (uint64_t)rss * (uint64_t)page : 0;
    return 0;
}

/* The entries of /proc/self/fd, less the one opendir holds. */
static long count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1;
}

int procstat_read(struct procstat *ps)
{
    struct rlimit rl;
    memset(ps, 0, sizeof *ps);
    if (read_stat(ps) < 0 || (ps->open_fds = count_fds()) < 0) {
        memset(ps, 0, sizeof *ps);
        return -1;
    }
    ps->max_fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                  ? (long)rl.rlim_cur : -1;
    return 0;
}
