/* Shared by the libFuzzer targets: an invariant check that stays on whatever
 * NDEBUG says, and the copy that turns fuzz bytes into a C string. */
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Entry point libFuzzer calls; declared here for -Wmissing-prototypes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* abort() rather than assert(): libFuzzer saves the input as a crash either
 * way, but this one can't be compiled out. */
#define FUZZ_CHECK(cond)                                                         \
        do {                                                                     \
                if (!(cond)) {                                                   \
                        fprintf(stderr, "%s:%d: invariant broken: %s\n",         \
                                __FILE__, __LINE__, #cond);                      \
                        abort();                                                 \
                }                                                                \
        } while (0)

/* The /proc and perf map parsers take C strings. The copy is exactly as long
 * as the input plus its NUL, so ASan catches a read past the end; an embedded
 * NUL just ends the string early, as it would in the daemon. */
static inline char *fuzz_strndup(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);

        if (!s)
                abort();
        memcpy(s, data, size);
        s[size] = '\0';
        return s;
}
