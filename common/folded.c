/* Writer for folded stacks ("root;caller;leaf 42"), the input of
 * flamegraph.pl, inferno and speedscope. Frames are written by the
 * protocol's folded_append_frame(), the one sanitizer profd's folded answers
 * also go through. */
#include "folded.h"

#include <errno.h>
#include <inttypes.h>

#include "protocol.h"

int folded_write_line(FILE *f, const struct folded_frame *frames, size_t n, uint64_t value) {
        struct stackline_buf b = {};
        int r = 0;

        for (size_t i = 0; r >= 0 && i < n; i++) {
                if (i > 0)
                        r = stackline_buf_append(&b, ";", 1);
                if (r >= 0)
                        r = folded_append_frame(&b, frames[i].name, NULL, 0, frames[i].kernel);
        }
        /* an empty stack still needs a name to be a line */
        if (r >= 0 && n == 0)
                r = folded_append_frame(&b, NULL, NULL, 0, false);
        if (r >= 0) {
                /* one line in one piece, whoever else writes to f */
                flockfile(f);
                if ((b.len > 0 && fwrite_unlocked(b.data, 1, b.len, f) != b.len) ||
                    fprintf(f, " %" PRIu64 "\n", value) < 0 || ferror_unlocked(f))
                        r = -EIO;
                funlockfile(f);
        }
        stackline_buf_done(&b);
        return r;
}
