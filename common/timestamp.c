/* RFC 3339 <-> epoch nanoseconds without the C library's time zone machinery:
 * the offset is in the string, so no TZ, no mktime, no locale. */
#include "timestamp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "duration.h"
#include "macro.h"

/* int64 nanoseconds end in April 2262; profd's times are int64 in SQLite. */
#define TIMESTAMP_MAX_YEAR 2262

static bool is_leap(unsigned y) {
        return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned days_in_month(unsigned y, unsigned m) {
        static const unsigned days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
        return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian), y >= 1970. */
static uint64_t days_since_epoch(unsigned y, unsigned m, unsigned d) {
        uint64_t days = 0;

        for (unsigned yy = 1970; yy < y; yy++)
                days += is_leap(yy) ? 366 : 365;
        for (unsigned mm = 1; mm < m; mm++)
                days += days_in_month(y, mm);
        return days + d - 1;
}

/* Reads exactly n digits at *p. */
static bool digits(const char **p, unsigned n, unsigned *ret) {
        unsigned v = 0;

        for (unsigned i = 0; i < n; i++) {
                char c = (*p)[i];
                if (c < '0' || c > '9')
                        return false;
                v = v * 10 + (unsigned) (c - '0');
        }
        *p += n;
        *ret = v;
        return true;
}

static bool expect(const char **p, char c) {
        if (**p != c)
                return false;
        (*p)++;
        return true;
}

int parse_timestamp_ns(const char *s, uint64_t *ret_ns) {
        unsigned year, month, day, hour, min, sec, off_h = 0, off_m = 0;
        uint64_t frac_ns = 0, secs, off_s = 0;
        const char *p = s;
        int sign = 0;

        if (!s)
                return -EINVAL;
        if (!digits(&p, 4, &year) || !expect(&p, '-') || !digits(&p, 2, &month) || !expect(&p, '-') ||
            !digits(&p, 2, &day))
                return -EINVAL;
        if (*p != 'T' && *p != 't' && *p != ' ')
                return -EINVAL;
        p++;
        if (!digits(&p, 2, &hour) || !expect(&p, ':') || !digits(&p, 2, &min) || !expect(&p, ':') ||
            !digits(&p, 2, &sec))
                return -EINVAL;
        if (*p == '.') {
                unsigned n = 0;
                uint64_t scale = NSEC_PER_SEC;

                for (p++; *p >= '0' && *p <= '9'; p++, n++)
                        if (n < 9) {
                                scale /= 10;
                                frac_ns += (uint64_t) (*p - '0') * scale;
                        }
                /* nanoseconds are all a time here can hold */
                if (n == 0 || n > 9)
                        return -EINVAL;
        }
        if (*p == 'Z' || *p == 'z')
                p++;
        else if (*p == '+' || *p == '-') {
                sign = *p == '+' ? 1 : -1;
                p++;
                if (!digits(&p, 2, &off_h) || !expect(&p, ':') || !digits(&p, 2, &off_m))
                        return -EINVAL;
                if (off_h > 23 || off_m > 59)
                        return -EINVAL;
                off_s = (uint64_t) off_h * 3600 + off_m * 60;
        } else
                return -EINVAL;
        if (*p != '\0')
                return -EINVAL;
        if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23 || min > 59 ||
            sec > 59)
                return -EINVAL;
        if (year < 1970 || year > TIMESTAMP_MAX_YEAR)
                return -ERANGE;

        secs = days_since_epoch(year, month, day) * 86400 + hour * 3600 + min * 60 + sec;
        /* local time = UTC + offset */
        if (sign > 0) {
                if (secs < off_s)
                        return -ERANGE;
                secs -= off_s;
        } else if (sign < 0)
                secs += off_s;
        if (secs > (uint64_t) INT64_MAX / NSEC_PER_SEC - 1)
                return -ERANGE;
        *ret_ns = secs * NSEC_PER_SEC + frac_ns;
        return 0;
}

int parse_time_point(const char *s, bool *ret_absolute, uint64_t *ret_ns) {
        int r;

        /* a timestamp starts with a 4-digit year and a '-'; no duration does */
        if (s && strlen(s) >= 5 && s[4] == '-') {
                r = parse_timestamp_ns(s, ret_ns);
                if (r < 0)
                        return r;
                *ret_absolute = true;
                return 0;
        }
        r = parse_duration_ns(s, ret_ns);
        if (r < 0)
                return r;
        *ret_absolute = false;
        return 0;
}

const char *format_timestamp(char *buf, size_t size, uint64_t ns) {
        uint64_t secs = ns / NSEC_PER_SEC, frac = ns % NSEC_PER_SEC, days = secs / 86400, rest = secs % 86400;
        unsigned year = 1970, month = 1;

        while (days >= (is_leap(year) ? 366u : 365u)) {
                days -= is_leap(year) ? 366 : 365;
                year++;
        }
        while (days >= days_in_month(year, month)) {
                days -= days_in_month(year, month);
                month++;
        }
        if (frac == 0)
                snprintf(buf, size, "%04u-%02u-%02uT%02u:%02u:%02uZ", year, month, (unsigned) days + 1,
                         (unsigned) (rest / 3600), (unsigned) (rest / 60 % 60), (unsigned) (rest % 60));
        else {
                char f[16];
                int n;

                /* in milli-, micro- or nanoseconds, whichever is exact:
                 * .250, .250100, not .250000000 */
                n = snprintf(f, sizeof(f), "%09u", (unsigned) frac);
                while (n > 3 && streq(f + n - 3, "000"))
                        f[n -= 3] = '\0';
                snprintf(buf, size, "%04u-%02u-%02uT%02u:%02u:%02u.%sZ", year, month, (unsigned) days + 1,
                         (unsigned) (rest / 3600), (unsigned) (rest / 60 % 60), (unsigned) (rest % 60), f);
        }
        return buf;
}
