/* Logging to stderr with sd-daemon priority prefixes, so journald assigns the
 * right priority to each line; used by profd. %m works in every format. */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <syslog.h>

#include "macro.h"

/* Lines above this priority (numerically greater) are not written. */
void log_set_max_level(int level);
int log_get_max_level(void);

/* Writes one line; returns -abs(error) when error != 0 so callers can
 * `return log_error_errno(r, ...)`. errno is set to abs(error) for %m. */
int log_internal(int level, int error, const char *fmt, ...) _printf_(3, 4);
int log_internalv(int level, int error, const char *fmt, va_list ap) _printf_(3, 0);

#define log_full_errno(level, error, ...) log_internal((level), (error), __VA_ARGS__)
#define log_debug(...)   log_internal(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...)    log_internal(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...)  log_internal(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...)   log_internal(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...)   log_internal(LOG_DEBUG, (e), __VA_ARGS__)
#define log_info_errno(e, ...)    log_internal(LOG_INFO, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_internal(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...)   log_internal(LOG_ERR, (e), __VA_ARGS__)
#define log_oom() log_internal(LOG_ERR, ENOMEM, "Out of memory.")
