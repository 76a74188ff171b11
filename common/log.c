/* Logging to stderr with sd-daemon "<N>" priority prefixes. */
#include "log.h"

#include <stdio.h>
#include <stdlib.h>

static int max_level = LOG_INFO;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

int log_internalv(int level, int error, const char *fmt, va_list ap) {
        int e = error < 0 ? -error : error;

        if (level <= max_level) {
                char buf[2048];

                errno = e; /* for %m */
                vsnprintf(buf, sizeof(buf), fmt, ap);
                fprintf(stderr, "<%d>%s\n", level, buf);
        }
        return e ? -e : 0;
}

int log_internal(int level, int error, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = log_internalv(level, error, fmt, ap);
        va_end(ap);
        return r;
}
