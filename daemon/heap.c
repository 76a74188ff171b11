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

static uint64_t trims, trim_ns, last_trim_ns;

static uint64_t mono_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

/* Blocks from this size up are mapped of their own and unmapped when freed.
 * glibc's threshold is dynamic: it rises to the size of any mapped block
 * freed, up to 32 MiB, and the threshold for giving back the top of a heap
 * rises with it. libbpf frees the kernel's BTF (5.5 MiB) after loading
 * the programs, so from then on blocks up to 5.5 MiB (the first drain's
 * kernel table, the sort of it, SQLite's and libdw's large buffers) came
 * from the arenas and stayed there after they were freed, up to 11 MiB
 * of free memory per arena. A fixed threshold keeps both fixed (the trim
 * threshold stays glibc's 128 KiB). Measured side by side in
 * docs/performance.md ("Daemon memory"). */
#define HEAP_MMAP_THRESHOLD (256 * 1024)

void heap_setup(void) {
        const char *tunables = getenv("GLIBC_TUNABLES");

        if (!getenv("MALLOC_ARENA_MAX") && !(tunables && strstr(tunables, "arena_max")))
                (void) mallopt(M_ARENA_MAX, HEAP_ARENAS);
        if (!getenv("MALLOC_MMAP_THRESHOLD_") && !(tunables && strstr(tunables, "mmap_threshold")))
                (void) mallopt(M_MMAP_THRESHOLD, HEAP_MMAP_THRESHOLD);
        /* glibc sets its malloc up at the first call into it, in whatever
         * thread makes it, and not safely for two threads at once. A
         * malloc that replaces glibc's leaves that to the first
         * malloc_trim or mallinfo2, which AddressSanitizer's does not
         * intercept (mallopt it does): two of profd's threads making
         * theirs at once both took the main arena as their own, and the
         * second to exit aborted ("a->attached_threads > 0", once in CI).
         * Here it happens before any thread; with glibc's own malloc it
         * already has. */
        (void) mallinfo2();
}

void heap_trim(void) {
        uint64_t t0 = mono_ns();

        (void) malloc_trim(0);
        __atomic_store_n(&last_trim_ns, mono_ns(), __ATOMIC_RELAXED);
        __atomic_add_fetch(&trim_ns, __atomic_load_n(&last_trim_ns, __ATOMIC_RELAXED) - t0, __ATOMIC_RELAXED);
        __atomic_add_fetch(&trims, 1, __ATOMIC_RELAXED);
}

bool heap_trim_idle(void) {
        uint64_t last = __atomic_load_n(&last_trim_ns, __ATOMIC_RELAXED);

        if (last && mono_ns() - last < HEAP_IDLE_TRIM_GAP_MS * 1000000ULL)
                return false;
        heap_trim();
        return true;
}

void heap_usage(uint64_t *ret_in_use, uint64_t *ret_free) {
        struct mallinfo2 mi = mallinfo2();

        *ret_in_use = (uint64_t) mi.uordblks + (uint64_t) mi.hblkhd;
        *ret_free = (uint64_t) mi.fordblks;
}

void heap_trim_stats(uint64_t *ret_trims, uint64_t *ret_ns) {
        *ret_trims = __atomic_load_n(&trims, __ATOMIC_RELAXED);
        *ret_ns = __atomic_load_n(&trim_ns, __ATOMIC_RELAXED);
}
