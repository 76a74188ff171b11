/* profctl's small helpers: messages, strict numbers, human units, response
 * fields. */
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

_printf_(2, 0) static void vprint_error(int error, const char *fmt, va_list ap) {
        char msg[4096];

        errno = error; /* for %m */
        vsnprintf(msg, sizeof(msg), fmt, ap);
        /* stdout first, so "no samples" style text and errors come out in
         * order when both go to the same terminal */
        fflush(stdout);
        fprintf(stderr, "profctl: %s\n", msg);
}

int cli_error(int r, const char *fmt, ...) {
        va_list ap;

        if (r >= 0)
                r = -EIO;
        va_start(ap, fmt);
        vprint_error(-r, fmt, ap);
        va_end(ap);
        return r;
}

int cli_usage_error(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vprint_error(EINVAL, fmt, ap);
        va_end(ap);
        fputs("Try 'profctl --help'.\n", stderr);
        return -EINVAL;
}

const char *format_bytes(char *buf, size_t size, uint64_t bytes) {
        static const char *const suffixes[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
        double v = (double) bytes;
        size_t i;

        if (bytes < 1024) {
                snprintf(buf, size, "%" PRIu64 " B", bytes);
                return buf;
        }
        for (i = 0, v /= 1024; v >= 1024 && i + 1 < ELEMENTSOF(suffixes); i++)
                v /= 1024;
        snprintf(buf, size, "%.1f %s", v, suffixes[i]);
        return buf;
}

const char *format_local_time(char *buf, size_t size, uint64_t epoch_ns) {
        time_t t = (time_t) (epoch_ns / NSEC_PER_SEC);
        struct tm tm;

        if (!localtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                snprintf(buf, size, "@%" PRIu64, (uint64_t) (epoch_ns / NSEC_PER_SEC));
        return buf;
}

static int bad_field(const char *line_type, const char *key, const char *expected) {
        return cli_error(-EBADMSG, "profd sent a '%s' line without a valid \"%s\" (expected %s)",
                         line_type, key, expected);
}

int response_get_u64(const json_t *line, const char *line_type, const char *key, uint64_t *ret) {
        json_t *v = json_object_get(line, key);

        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return bad_field(line_type, key, "a non-negative integer");
        *ret = (uint64_t) json_integer_value(v);
        return 0;
}

int response_get_string(const json_t *line, const char *line_type, const char *key, const char **ret) {
        json_t *v = json_object_get(line, key);

        if (!json_is_string(v))
                return bad_field(line_type, key, "a string");
        *ret = json_string_value(v);
        return 0;
}
