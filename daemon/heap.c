/* See heap.h. */
#include "heap.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macro.h"

/* glibc gives each thread that meets a locked arena an arena of its own,
 * up to 8 per CPU: profd's writer, unwinder and query workers each held
 * one, every one with its own free memory and fragments. With a trim after
 * every drain, two daemons side by side for 60 s at defaults: one arena
 * per thread 2-4 MiB more RSS than a single arena; two arenas within
 * 0.5 MiB of one. Two, not one, so that two threads still allocate at
 * once on hosts with more CPUs (here the unwinder's builds took as long
 * with one arena as with one per thread: 2.65 s for 200 tables each). */
#define HEAP_ARENAS 2

static uint64_t trims, trim_ns;

static uint64_t mono_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

void heap_setup(void) {
        const char *tunables = getenv("GLIBC_TUNABLES");

        if (getenv("MALLOC_ARENA_MAX") || (tunables && strstr(tunables, "arena_max")))
                return;
        (void) mallopt(M_ARENA_MAX, HEAP_ARENAS);
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
