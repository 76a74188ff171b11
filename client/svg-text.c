/* Text in profctl's SVG pictures (see svg-text.h). */
#include "svg-text.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "helpers.h"
#include "macro.h"

size_t svg_utf8_sequence(const unsigned char *s, bool *ret_allowed) {
        unsigned char c = s[0];

        *ret_allowed = false;
        if (c < 0x80) {
                *ret_allowed = c >= 0x20 || c == '\t' || c == '\n' || c == '\r';
                return 1;
        }
        if (c >= 0xc2 && c <= 0xdf) {
                if ((s[1] & 0xc0) != 0x80)
                        return 1;
                *ret_allowed = true;
                return 2;
        }
        if (c >= 0xe0 && c <= 0xef) {
                if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
                    (c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0))
                        return 1;
                *ret_allowed = !(c == 0xef && s[1] == 0xbf && (s[2] == 0xbe || s[2] == 0xbf));
                return 3;
        }
        if (c >= 0xf0 && c <= 0xf4) {
                if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80 ||
                    (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))
                        return 1;
                *ret_allowed = true;
                return 4;
        }
        return 1;
}

/* Number of characters xml_write writes for s. */
size_t svg_char_count(const char *s) {
        size_t n = 0;

        for (const unsigned char *p = (const unsigned char *) s; *p; n++) {
                bool allowed;

                p += svg_utf8_sequence(p, &allowed);
        }
        return n;
}

void svg_xml_write(FILE *f, const char *s, size_t max_chars) {
        const unsigned char *p = (const unsigned char *) s;

        for (size_t n = 0; *p && n < max_chars; n++) {
                bool allowed;
                size_t l = svg_utf8_sequence(p, &allowed);

                if (!allowed) {
                        /* one '?' per character (or stray byte) */
                        fputc('?', f);
                        p += l;
                        continue;
                }
                switch (*p) {
                case '&': fputs("&amp;", f); break;
                case '<': fputs("&lt;", f); break;
                case '>': fputs("&gt;", f); break;
                case '"': fputs("&quot;", f); break;
                case '\'': fputs("&apos;", f); break;
                case '\t': fputs("&#9;", f); break;
                case '\r': fputs("&#13;", f); break;
                case '\n': fputs("&#10;", f); break;
                default: fwrite(p, 1, l, f);
                }
                p += l;
        }
}

const char *svg_fixed2(char *buf, size_t size, double v) {
        long long c = llround(v * 100);

        snprintf(buf, size, "%s%lld.%02lld", c < 0 ? "-" : "", llabs(c) / 100, llabs(c) % 100);
        return buf;
}

const char *svg_format_value(char *buf, size_t size, uint64_t v, const char *unit, bool ns) {
        char num[32];

        if (!ns)
                snprintf(buf, size, "%" PRIu64 " %s", v, unit);
        else if (v >= NSEC_PER_SEC)
                snprintf(buf, size, "%s s", svg_fixed2(num, sizeof(num), (double) v / 1e9));
        else if (v >= NSEC_PER_MSEC)
                snprintf(buf, size, "%s ms", svg_fixed2(num, sizeof(num), (double) v / 1e6));
        else if (v >= NSEC_PER_USEC)
                snprintf(buf, size, "%s us", svg_fixed2(num, sizeof(num), (double) v / 1e3));
        else
                snprintf(buf, size, "%" PRIu64 " ns", v);
        return buf;
}

/* Both formats are literals, so that the compiler checks them. */
static const char *format_utc(char *buf, size_t size, uint64_t ns, bool date) {
        time_t t = (time_t) (ns / NSEC_PER_SEC);
        struct tm tm;
        size_t n = 0;

        if (gmtime_r(&t, &tm))
                n = date ? strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm) : strftime(buf, size, "%H:%M:%S", &tm);
        if (n == 0)
                snprintf(buf, size, "@%" PRIu64, (uint64_t) (ns / NSEC_PER_SEC));
        return buf;
}

const char *svg_format_utc(char *buf, size_t size, uint64_t ns) {
        return format_utc(buf, size, ns, true);
}

const char *svg_format_hms(char *buf, size_t size, uint64_t ns) {
        return format_utc(buf, size, ns, false);
}
