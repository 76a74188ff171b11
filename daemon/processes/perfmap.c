/* Strict parser for lines of JIT perf map files (/tmp/perf-PID.map). */
#include "perfmap.h"
#include "helpers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Parses a hexadecimal number, "0x" prefix optional, that must end at a
 * space; advances *p to that space. strtoull would also take signs, leading
 * whitespace and a bare "0x", none of which a JIT writes. */
static int parse_hex_field(const char **p, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;
        size_t n = 0;

        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
                s += 2;
        for (; *s != ' '; s++, n++) {
                int d = unhex_char(*s);

                if (d < 0)
                        return -EINVAL; /* also the end of the string: no name follows */
                if (v >> 60)
                        return -EINVAL; /* a 17th significant digit */
                v = v << 4 | d;
        }
        if (n == 0)
                return -EINVAL;
        *p = s;
        *ret = v;
        return 0;
}

int perfmap_parse_line(const char *line, struct perfmap_entry *ret) {
        uint64_t start, size, end;
        const char *p = line;
        size_t len;
        char *name;

        if (parse_hex_field(&p, &start) < 0)
                return -EINVAL;
        p++;
        if (parse_hex_field(&p, &size) < 0)
                return -EINVAL;
        p++;
        /* An empty range could never contain a sampled address, and one that
         * wraps past the top of the address space is not code. */
        if (size == 0 || __builtin_add_overflow(start, size, &end))
                return -EINVAL;

        len = strcspn(p, "\n");
        if (p[len] == '\n' && p[len + 1] != '\0')
                return -EINVAL; /* one line only */
        /* A leading blank means another separator than one space: the fields
         * would not be where we think they are. */
        if (len == 0 || p[0] == ' ' || p[0] == '\t')
                return -EINVAL;

        name = strndup(p, len);
        if (!name)
                return -ENOMEM;
        *ret = (struct perfmap_entry) {
                .start = start,
                .size = size,
                .name = name,
        };
        return 0;
}

void perfmap_entry_done(struct perfmap_entry *e) {
        free(e->name);
        e->name = NULL;
}
