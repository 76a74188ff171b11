/* The folded-stack format read by flamegraph.pl and speedscope: one line per
 * stack, frames root first joined by ';', a space, then the weight. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct folded_frame {
        const char *name;
        bool kernel; /* written with the "_[k]" suffix flamegraph.pl colours */
};

/* Writes one line for frames[0] (root) .. frames[n-1] (leaf) with weight
 * value. Characters that would break the format are replaced: ';' by ':',
 * newlines and other control characters by '?' (folded_append_frame() in
 * protocol.h says it all). An empty stack is written as "[unknown]".
 * Returns 0, -ENOMEM, or -EIO if the stream failed. */
int folded_write_line(FILE *f, const struct folded_frame *frames, size_t n, uint64_t value);
