#include "proxy/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

volatile enum log_level log_min_level = LOG_NOTICE;
static FILE *log_stream;

int log_open(const char *path, enum log_level level)
{
    FILE *f = stderr;
    if (path) {
        f = fopen(path, "a");
        if (!f)
            return -1;
        setvbuf(f, NULL, _IOLBF, 0);
    }
    if (log_stream && log_stream != stderr)
        fclose(log_stream);
    log_stream = f;
    log_min_level = level;
    return 0;
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
