/* Where a command writes: standard output, or a file given by --output that
 * is replaced only when the answer is complete. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

struct output {
        FILE *f;
        const char *path; /* NULL: standard output */
        char *tmp_path;
};

/* Opens path (NULL: standard output) for writing. Returns 0 or a negative
 * errno after a message. */
int output_open(struct output *o, const char *path);

/* ok: the output is complete. Returns 0, or -EIO after an error message. */
int output_close(struct output *o, bool ok);

/* Ends an output a command wrote with result r (>= 0: written in full):
 * checks that every byte got out, then replaces the file (or removes the
 * temporary one if r < 0 or writing failed). Returns r, or -EIO after a
 * message. */
int output_finish(struct output *o, int r);
