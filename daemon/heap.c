/* See heap.h. */
#include "heap.h"

#include <malloc.h>
#include <time.h>

#include "macro.h"

static uint64_t trims, trim_ns;

static uint64_t mono_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

void heap_trim(void) {
        uint64_t t0 = mono_ns();

        (void) malloc_trim(0);
        __atomic_add_fetch(&trim_ns, mono_ns() - t0, __ATOMIC_RELAXED);
        __atomic_add_fetch(&trims, 1, __ATOMIC_RELAXED);
}

void heap_trim_stats(uint64_t *ret_trims, uint64_t *ret_ns) {
        *ret_trims = __atomic_load_n(&trims, __ATOMIC_RELAXED);
        *ret_ns = __atomic_load_n(&trim_ns, __ATOMIC_RELAXED);
}
