/* The unwinder's private state, shared by its three parts: the API and
 * thread (unwinder.c), the file-table cache (unwind-files.c) and the
 * per-process entries (unwind-procs.c). Only the thread touches what it
 * calls the worker's own; the lock guards what the event loop reads. */
#pragma once

#include <gelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "dlist.h"
#include "hashmap.h"
#include "loopthread.h"
#include "helpers.h"
#include "rangealloc.h"
#include "runtime.h"
#include "unwinder.h"

/* No BPF program runs this long: a slice freed this long ago is read by
 * none, and can take new contents. */
#define GRACE_NS (2ULL * NSEC_PER_SEC)
/* Exited processes are looked for this often: their tables become
 * evictable, their mapping slices free. Reading one stat file per process
 * every few seconds costs well under a millisecond on a host of hundreds
 * of processes. */
#define SWEEP_NS (3ULL * NSEC_PER_SEC)
/* A process that reported an ip in no mapping is re-read at once the first
 * time, then after an interval that doubles from MISS_FIRST_INTERVAL_NS to
 * MISS_INTERVAL_NS while misses keep coming: a stack through garbage would
 * otherwise re-read it per sample. The first intervals are short because a
 * process's libraries come in steps (the dynamic linker maps one after the
 * other, then dlopen): a re-read taken between two of them must not leave
 * the rest without tables for a quarter of a second, a tenth of the life of
 * a short process. A re-read of a process whose files are cached reads its
 * maps and stats its files, well under a millisecond; the doubling bounds a
 * process to about 4 a second. */
#define MISS_FIRST_INTERVAL_NS (8ULL * NSEC_PER_MSEC)
#define MISS_INTERVAL_NS (250ULL * NSEC_PER_MSEC)
/* An exec's load nearly always comes before the dynamic loader has mapped
 * the libraries (89% of a build host's execs then needed a reload for a
 * miss, each after a walk that ended in a library): a process whose load
 * found only its binary and one other file (the loader) is read again
 * FOLLOWUP_FIRST_NS later, then at doubling intervals, FOLLOWUP_TRIES
 * times at most (63 ms in all, for a process that waits for a CPU before
 * its loader runs), until it maps more. A static binary maps one file and
 * is not followed up; a process found gone is not read again. */
#define FOLLOWUP_FIRST_NS (1ULL * NSEC_PER_MSEC)
#define FOLLOWUP_TRIES 6
/* The BPF walker's binary searches: 2^16 mappings per process, 2^24 rows
 * per table (bpf/unwind.bpf.h). */
#define MAX_PROC_MAPPINGS 65535u
/* Files larger than this are built after the process is published (its
 * mappings of them PENDING meanwhile), so that one large binary (libLLVM:
 * 950 k rows, seconds on a busy host) delays no other process's tables.
 * libc (2 MiB, 25 k rows) takes under 10 ms and is built at once. */
#define BUILD_INLINE_MAX_BYTES (4ULL << 20)
#define MAX_TABLE_ROWS (1u << 24)
/* Files no live process maps stay known (their tables, or how many rows a
 * table that found no room wants) until their rows are needed; past this
 * many the oldest are forgotten at the sweep. A build host makes new
 * binaries all day; each known file costs about 250 bytes (with its
 * hash entry and offsets). */
#define UNUSED_FILES_MAX 1024
/* A sampled table refused for want of room, every table that could give
 * it room being hot, is tried again at most this often: a drain names it
 * every interval while the hot process runs, and each try lists every
 * table and process. */
#define KEPT_HOT_RETRY_NS (30ULL * NSEC_PER_SEC)
/* Files named by notes not yet taken by the worker, at most: a few drains
 * of a busy host (a few hundred files each); beyond it the worker is far
 * behind and a note is worth little. */
#define NOTED_MAX 16384

struct unwinder {
        struct collector_unwind_maps maps;
        char *proc_root;
        uint64_t tick_ns;          /* /proc's clock tick */
        uint64_t page;             /* bytes */
        loopthread *thread;        /* the worker */
        int wake_fd;               /* eventfd: requests were queued */

        pthread_mutex_t lock;      /* guards the fields below up to `stats` */
        struct request *queue;
        size_t n_queue, cap_queue;
        struct unwinder_stats stats;
        /* unwind_runtimes' slots: what discovery found in the file that
         * holds each (NULL: free); unwinder_runtime copies one */
        struct unwind_runtime_found *rt_slots[PROFD_RUNTIME_SLOTS];
        struct unwinder_loaded *loaded; /* instances whose mappings were new or changed, for the event loop */
        size_t n_loaded, cap_loaded;
        int loaded_fd;             /* eventfd: loaded has entries */
        bool loaded_unsaid;        /* worker only: entries added since loaded_fd was last written */
        struct file_ident *noted;  /* files samples went through (unwinder_note_sampled), not yet taken */
        size_t n_noted, cap_noted;
        uint64_t noted_hot_ns;     /* the hot window the last note gave */

        /* the worker's own */
        sd_event_source *wake_src; /* wake_fd on the worker's loop */
        sd_event_source *due_src;  /* the timer of the next due work */
        bool scanned;              /* the processes running at start were listed */
        rangealloc *rows_alloc, *maps_alloc;
        uint64_t versions;         /* of unwind_procs entries written (struct profd_unwind_proc.version) */
        uint64_t mapped_max;       /* the most of the arrays mapped at once, bytes */
        bool no_batch;             /* the kernel refused a batch update: mmap only */
        hashmap *files;            /* struct file_key * -> struct ufile */
        hashmap *procs;            /* tgid -> struct uproc */
        struct dlist unused;       /* struct ufile, unused files, oldest first */
        size_t n_unused;
        uint32_t *scan;            /* processes found at start, not loaded yet */
        size_t n_scan, scan_next;
        struct ufile **builds;     /* pending files, each referenced, oldest first */
        size_t n_builds, cap_builds;
        struct followup *followups; /* processes to read again soon after their exec */
        size_t n_followups, cap_followups;
        struct ufile *vdso;        /* the daemon's own vDSO image's table */
        Elf *vdso_elf;
        struct ufile **room_waits; /* files waiting for the grace of rows evicted for them, each referenced */
        size_t n_room_waits, cap_room_waits;
        uint64_t next_sweep_ns;
        bool trim_due;             /* tables were built since the last heap_trim */
};

static inline uint64_t mono_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static inline void count_failure(unwinder *u, enum unwinder_failure f) {
        pthread_mutex_lock(&u->lock);
        u->stats.failures[f]++;
        pthread_mutex_unlock(&u->lock);
}

/* A slot of unwind_runtimes for `found` (a file's runtime, or a JVM
 * process's walker slot): found->bpf written to the kernel's array, a copy
 * of found kept for unwinder_runtime, the slot (1-based) into *ret_slot.
 * Returns 0, -ENOSPC when every slot is taken (counted), -ENOMEM, or the
 * map update's -errno (counted). unwinder_runtime_remove frees it. */
int unwinder_runtime_add(unwinder *u, const struct unwind_runtime_found *found, uint32_t *ret_slot);
void unwinder_runtime_remove(unwinder *u, uint32_t slot);

/* Copies n elements of elem_size into one of the kernel's mmapable arrays
 * (fd: unwind_rows or unwind_maps) at element off. Returns 0 or a
 * negative errno (the mapping failed). */
int unwinder_array_write(unwinder *u, int fd, size_t elem_size, uint32_t off, const void *src, size_t n);
/* The same through bpf_map_update_batch for small writes of whole
 * elements (a process's mappings), falling back to the above. */
int unwinder_array_update(unwinder *u, int fd, size_t elem_size, uint32_t off, const void *src, size_t n);
