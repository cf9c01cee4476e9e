#include "lib/base/log.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

volatile enum log_level log_min_level = LOG_NOTICE;
static FILE *log_stream;
static char *log_path;          /* NULL: stderr */

int log_open(const char *path, enum log_level level)
{
    FILE *f = stderr;
    char *copy = NULL;
    if (path) {
        copy = strdup(path);
        f = copy ? fopen(path, "a") : NULL;
        if (!f) {
            free(copy);
            return -1;
        }
        setvbuf(f, NULL, _IOLBF, 0);
    }
    if (log_stream && log_stream != stderr)
        fclose(log_stream);
    free(log_path);
    log_path = copy;
    log_stream = f;
    log_min_level = level;
    return 0;
}

int log_reopen(void)
{
    if (!log_path || !log_stream)
        return 0;
    int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return -1;
    int rc = dup2(fd, fileno(log_stream)) < 0 ? -1 : 0;
    close(fd);
    return rc;
}

void log_write(enum log_level level, const char *component, const char *fmt, ...)
{
    static const char mark[] = { '.', '-', '*', '#' };   /* as redis-server */
    char line[1024], stamp[32];
    struct timeval tv;
    struct tm tm;
    va_list ap;

    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%d %b %Y %H:%M:%S", &tm);
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* one event, one line: whatever a message quotes (a node's error text,
     * an address) cannot break the line or inject another */
    for (char *p = line; *p; p++)
        if ((unsigned char)*p < ' ' || *p == 0x7f)
            *p = ' ';
    /* one fprintf call: lines from different threads do not interleave */
    fprintf(log_stream ? log_stream : stderr, "%d:%s.%03d %c %s: %s\n", (int)getpid(),
            stamp, (int)(tv.tv_usec / 1000), mark[level], component, line);
}
