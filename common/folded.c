/* Writer for folded stacks ("root;caller;leaf 42"), the input of
 * flamegraph.pl, inferno and speedscope. */
#include "folded.h"

#include <errno.h>
#include <inttypes.h>

/* Frame names come from symbol tables and /proc, so they may hold anything.
 * ';' separates frames and '\n' ends the line, so those can't pass; other
 * control characters would garble a terminal or an SVG. Spaces stay: C++ and
 * Rust names have them, and readers split the weight off at the last space. */
static void write_name(FILE *f, const char *name) {
        if (!name || !*name) {
                /* an empty name would read as a missing frame (";;") */
                fputs_unlocked("[unknown]", f);
                return;
        }
        for (const unsigned char *p = (const unsigned char *) name; *p; p++) {
                unsigned char c = *p;
                if (c == ';')
                        c = ':';
                else if (c < 0x20 || c == 0x7f)
                        c = '?';
                putc_unlocked(c, f);
        }
}

int folded_write_line(FILE *f, const struct folded_frame *frames, size_t n, uint64_t value) {
        int r = 0;

        flockfile(f);
        if (n == 0)
                fputs_unlocked("[unknown]", f);
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        putc_unlocked(';', f);
                write_name(f, frames[i].name);
                if (frames[i].kernel)
                        fputs_unlocked("_[k]", f);
        }
        /* The unlocked calls above don't report errors one by one; the stream's
         * error flag catches any of them. */
        if (fprintf(f, " %" PRIu64 "\n", value) < 0 || ferror_unlocked(f))
                r = -EIO;
        funlockfile(f);
        return r;
}
