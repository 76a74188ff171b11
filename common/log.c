/* Logging to stderr with sd-daemon "<N>" priority prefixes. */
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
                char buf[4096];
                const char *line = buf;

                errno = e; /* for %m */
                vsnprintf(buf, sizeof(buf), fmt, ap);
                /* journald reads the priority of each line from its own
                 * prefix: a message of several lines (libbpf's verifier log)
                 * keeps its priority on every line. One fprintf per line:
                 * stdio's lock keeps lines of the writer thread whole. */
                for (;;) {
                        const char *nl = strchr(line, '\n');
                        int len = nl ? (int) (nl - line) : (int) strlen(line);

                        fprintf(stderr, "<%d>%.*s\n", level, len, line);
                        if (!nl || nl[1] == '\0')
                                break;
                        line = nl + 1;
                }
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
