/* libFuzzer target: DWARF line programs as the symbolizer meets them in
 * debug files it does not control (.debug_line headers of DWARF 2 to 5,
 * entry formats, opcodes, and offsets into .debug_line_str). Input: two
 * bytes giving the length of a .debug_line_str, that section, then
 * .debug_line. The table must answer consistently, or not be made. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf-lines.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(line_table_freep) struct line_table *t = NULL;
        _cleanup_free_ char *line_str = NULL;
        struct line_sections s = {};
        size_t n_str;
        int r;

        if (size < 2)
                return 0;
        n_str = (size_t) data[0] | (size_t) data[1] << 8;
        if (n_str > size - 2)
                return 0;
        /* The symbolizer reads DWARF only when its string sections end
         * with a NUL (dwarf-frames.c): give this one its NUL. */
        line_str = malloc(n_str + 1);
        if (!line_str)
                return 0;
        memcpy(line_str, data + 2, n_str);
        line_str[n_str] = '\0';
        s.line_str = s.str = line_str;
        s.line_str_size = s.str_size = n_str + 1;
        s.line = data + 2 + n_str;
        s.line_size = size - 2 - n_str;

        r = line_table_read(&s, 0, "/comp", 8, &t);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r < 0)
                return 0;
        FUZZ_CHECK(line_table_bytes(t) > 0);
        for (uint64_t a = 0; a < 64; a++) {
                const char *file = NULL;
                int line = 0;

                if (line_table_find(t, a * 0x40, &file, &line) > 0 && file)
                        FUZZ_CHECK(strlen(file) < s.line_size + s.line_str_size + 4096 + 8);
        }
        for (uint64_t i = 0; i < 8; i++) {
                const char *file = line_table_file(t, i);

                if (file)
                        (void) strlen(file);
        }
        return 0;
}
