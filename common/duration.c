/* Strict duration strings <-> nanoseconds, so profctl and profd accept and
 * print exactly the same forms. */
#include "duration.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

struct duration_unit {
        const char *suffix;
        uint64_t ns;
};

/* Largest first: format_duration walks it in this order, and the parser tries
 * two-letter suffixes before "m" and "s" so "ms" is not read as "m" + "s". */
static const struct duration_unit units[] = {
        { "d",  24ULL * 3600ULL * NSEC_PER_SEC },
        { "h",  3600ULL * NSEC_PER_SEC },
        { "m",  60ULL * NSEC_PER_SEC },
        { "s",  NSEC_PER_SEC },
        { "ms", NSEC_PER_MSEC },
        { "us", NSEC_PER_USEC },
        { "ns", 1 },
};

/* Returns the unit whose suffix starts at p (longest match), or NULL. */
static const struct duration_unit *unit_at(const char *p, size_t *ret_len) {
        const struct duration_unit *best = NULL;
        size_t best_len = 0;

        for (size_t i = 0; i < ELEMENTSOF(units); i++) {
                size_t l = strlen(units[i].suffix);
                if (l > best_len && strncmp(p, units[i].suffix, l) == 0) {
                        best = &units[i];
                        best_len = l;
                }
        }
        *ret_len = best_len;
        return best;
}

int parse_duration_ns(const char *s, uint64_t *ret_ns) {
        uint64_t sum = 0;
        bool overflow = false;
        const char *p = s;

        if (!s || !*s)
                return -EINVAL;

        /* A syntax error wins over an overflow: "99999999999999999999x" is
         * malformed, not merely too large, so keep scanning after an overflow
         * and decide at the end. */
        for (;;) {
                const struct duration_unit *u;
                uint64_t n = 0, part;
                const char *digits = p;
                size_t len;

                while (*p >= '0' && *p <= '9') {
                        if (__builtin_mul_overflow(n, 10, &n) ||
                            __builtin_add_overflow(n, (uint64_t) (*p - '0'), &n))
                                overflow = true;
                        p++;
                }
                if (p == digits) /* "", "m", "-5m", "1.5h", "1h " ... */
                        return -EINVAL;

                if (*p == '\0' && digits == s) {
                        /* a lone number is seconds; "1h30" stays an error
                         * because 30 what is anyone's guess */
                        u = &units[3];
                        len = 0;
                } else {
                        u = unit_at(p, &len);
                        if (!u)
                                return -EINVAL;
                }
                p += len;

                if (__builtin_mul_overflow(n, u->ns, &part) ||
                    __builtin_add_overflow(sum, part, &sum))
                        overflow = true;

                if (*p == '\0')
                        break;
                /* one optional space between parts, as in "1h 30m" */
                if (*p == ' ')
                        p++;
                if (!(*p >= '0' && *p <= '9'))
                        return -EINVAL;
        }

        if (overflow)
                return -ERANGE;
        *ret_ns = sum;
        return 0;
}

const char *format_duration(char *buf, size_t size, uint64_t ns) {
        size_t used = 0;

        if (size == 0)
                return buf;
        buf[0] = '\0';

        if (ns == 0) {
                snprintf(buf, size, "0s");
                return buf;
        }

        for (size_t i = 0; i < ELEMENTSOF(units) && ns > 0; i++) {
                uint64_t n = ns / units[i].ns;
                int k;

                if (n == 0)
                        continue;
                ns -= n * units[i].ns;
                k = snprintf(buf + used, size - used, "%llu%s",
                             (unsigned long long) n, units[i].suffix);
                if (k < 0 || (size_t) k >= size - used) {
                        /* drop a part that doesn't fit whole: the "30" cut
                         * from "30m" would read as a different duration */
                        buf[used] = '\0';
                        break;
                }
                used += (size_t) k;
        }
        return buf;
}
