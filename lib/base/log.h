/*
 * log: one line per event, to stderr or a file:
 *
 *   PID:DD Mon YYYY HH:MM:SS.mmm L component: message
 *
 * as redis-server writes its log (local time, milliseconds), where L is the
 * level: '.' debug, '-' verbose, '*' notice, '#' warning. Control characters
 * in a message become blanks, so an event is always exactly one line.
 * Components: main, topology, node, health, client, listen, admin.
 * Connection errors and topology changes are logged at notice.
 *
 * The macros check the level before formatting anything. Never pass a
 * password, an AUTH argument, a command's arguments or a value to them.
 */
#ifndef TAGPROXY_LOG_H
#define TAGPROXY_LOG_H

enum log_level { LOG_DEBUG = 0, LOG_VERBOSE, LOG_NOTICE, LOG_WARNING };

extern volatile enum log_level log_min_level;

/* Open the log (path NULL: stderr). Returns 0 or -1. Safe to call again. */
int log_open(const char *path, enum log_level level);

/* Open the log file again at its path, for log rotation (SIGHUP): a file
 * renamed away stops getting lines, a new one at the path gets the next.
 * The new file takes the old one's descriptor (dup2), so a line another
 * thread writes meanwhile goes whole to one of the two. 0 (also on
 * stderr: nothing to do), or -1 with errno (the old file stays). */
int log_reopen(void);
void log_write(enum log_level level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_at(level, comp, ...) \
    do { if ((level) >= log_min_level) log_write((level), (comp), __VA_ARGS__); } while (0)
#define log_debug(comp, ...)   log_at(LOG_DEBUG, comp, __VA_ARGS__)
#define log_verbose(comp, ...) log_at(LOG_VERBOSE, comp, __VA_ARGS__)
#define log_notice(comp, ...)  log_at(LOG_NOTICE, comp, __VA_ARGS__)
#define log_warning(comp, ...) log_at(LOG_WARNING, comp, __VA_ARGS__)

#endif
