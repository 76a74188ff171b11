/* The unwinder manager (see unwinder.h): its API and its thread. One
 * worker thread (loopthread.h: an sd-event loop of its own) owns the file
 * table cache (unwind-files.c), the processes' mapping slices
 * (unwind-procs.c) and the writes into the kernel's unwind maps; the event
 * loop only queues requests, which reach the thread through an eventfd.
 * Work that comes due later (follow-ups, the sweep, deferred misses) runs
 * from one timer set to the next due time. */
#include "unwinder.h"
#include <bpf/bpf.h>

#include <errno.h>
#include <gelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "hashmap.h"
#include "heap.h"
#include "helpers.h"
#include "log.h"
#include "loopthread.h"
#include "macro.h"
#include "rangealloc.h"
#include "unwind-files.h"
#include "unwind-procs.h"
#include "unwinder-private.h"

const char *const unwinder_failure_names[UNWINDER_FAIL__MAX] = {
        [UNWINDER_FAIL_NO_CFI] = "no_cfi",
        [UNWINDER_FAIL_UNREADABLE] = "unreadable",
        [UNWINDER_FAIL_ABOVE_4G] = "above_4g",
        [UNWINDER_FAIL_BAD_CFI] = "bad_cfi",
        [UNWINDER_FAIL_BUDGET_FULL] = "budget_full",
        [UNWINDER_FAIL_MAPS_FULL] = "maps_full",
        [UNWINDER_FAIL_PROCS_FULL] = "procs_full",
        [UNWINDER_FAIL_RUNTIME_UNSUPPORTED] = "runtime_unsupported",
        [UNWINDER_FAIL_RUNTIME_SLOTS] = "runtime_slots_full",
        [UNWINDER_FAIL_HOTSPOT_TABLES] = "hotspot_tables",
};

/* --- writing the kernel's arrays ------------------------------------------ */

/* The most of an array mapped at once: what is written at once is a
 * process's mappings, a piece of a table's rows (64 KiB) or its index
 * (libLLVM's: 460 KiB), so this bounds only a crafted process's
 * mappings. */
#define WRITE_WINDOW_BYTES (1u << 20)

/* Copies n elements into one of the mmapable arrays (unwind_rows,
 * unwind_maps) at element off, through mappings of only the pages under
 * them (at most WRITE_WINDOW_BYTES at once), each removed once written.
 * The arrays are kernel memory, counted in the maps' bytes_memlock; mapped
 * whole they counted a second time in profd's RSS, every page of them from
 * the mmap on (the kernel inserts them all): 25 MiB at the defaults.
 * Mapping, writing and unmapping takes about 5 us for a process's mappings
 * and 25 us for libc's 25 k rows (a copy into a whole mapping: 4 us), next
 * to milliseconds to build the table. The pages at the ends may hold other
 * slices that programs read meanwhile: only the n elements are written. */
int unwinder_array_write(unwinder *u, int fd, size_t elem_size, uint32_t off, const void *src, size_t n) {
        uint64_t begin = (uint64_t) off * elem_size, end = begin + (uint64_t) n * elem_size;
        const uint8_t *from = src;

        while (begin < end) {
                uint64_t base = begin / u->page * u->page, stop = MIN(end, base + WRITE_WINDOW_BYTES);
                size_t len = (size_t) ((stop + u->page - 1) / u->page * u->page - base);
                void *p;

                p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t) base);
                if (p == MAP_FAILED)
                        return negative_errno();
                memcpy((uint8_t *) p + (begin - base), from, (size_t) (stop - begin));
                (void) munmap(p, len);
                u->mapped_max = MAX(u->mapped_max, (uint64_t) len);
                from += stop - begin;
                begin = stop;
        }
        return 0;
}

/* A process's mappings, when there are few, go through the bpf(2) batch
 * update instead: no mapping of the array, so no munmap and no flush of
 * the TLB of the other CPUs the daemon ran on (an IPI each). A batch costs
 * about 0.9 us an element and the mapping about 40 us whatever it writes
 * (tests/bench/unwind_publish_bench.c: 10 elements 11 against 47 us, 40
 * elements 23-37 against 37-43 us, 100 elements 87-93 against 40-43 us),
 * so up to UPDATE_BATCH_MAX elements: a short-lived process of a build
 * (a shell, as, ld: 5 to 20 mappings) is published at a third of the
 * cost. More, or a kernel without batch updates of arrays (before 5.6),
 * take the mapping. */
#define UPDATE_BATCH_MAX 32

int unwinder_array_update(unwinder *u, int fd, size_t elem_size, uint32_t off, const void *src, size_t n) {
        _cleanup_free_ uint32_t *keys = NULL;
        __u32 count = (__u32) n;
        int r;

        if (n == 0)
                return 0;
        if (u->no_batch || n > UPDATE_BATCH_MAX)
                return unwinder_array_write(u, fd, elem_size, off, src, n);
        keys = malloc(n * sizeof(*keys));
        if (!keys)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                keys[i] = off + (uint32_t) i;
        r = bpf_map_update_batch(fd, keys, src, &count, NULL);
        if (r == 0 && count == n)
                return 0;
        /* the kernel's ENOTSUPP (524): a map type without batch updates */
        if (r < 0 && r != -EINVAL && r != -EOPNOTSUPP && r != -524)
                return r;
        log_debug_errno(r, "Batch updates of the unwind arrays failed (%u of %zu written), writing them through "
                        "mappings: %m", (unsigned) count, n);
        u->no_batch = true;
        /* all n again: a failed batch may have written some */
        return unwinder_array_write(u, fd, elem_size, off, src, n);
}

/* Copies what only the worker knows into the stats others read. */
static void publish_stats(unwinder *u) {
        uint64_t rows = rangealloc_used(u->rows_alloc), maps = rangealloc_used(u->maps_alloc);

        pthread_mutex_lock(&u->lock);
        u->stats.processes = hashmap_size(u->procs);
        u->stats.files = hashmap_size(u->files);
        u->stats.files_unused = u->n_unused;
        u->stats.tables_queued = u->n_builds;
        u->stats.rows_used = rows;
        u->stats.rows_capacity = rangealloc_capacity(u->rows_alloc);
        u->stats.mappings_used = maps;
        u->stats.mappings_capacity = rangealloc_capacity(u->maps_alloc);
        u->stats.mapped_bytes = u->mapped_max;
        u->stats.kernel_bytes = rows * sizeof(uint64_t) /* values of two slots */ + maps * sizeof(struct profd_unwind_mapping) +
                                u->stats.processes * (sizeof(uint32_t) + sizeof(struct profd_unwind_proc));
        pthread_mutex_unlock(&u->lock);
}

/* Wakes the event loop once for what the pass listed so far (notify_loaded
 * in unwind-procs.c): on a build host the requests of one batch of events
 * list several processes, each of which woke it before. */
static void loaded_say(unwinder *u) {
        if (!u->loaded_unsaid)
                return;
        u->loaded_unsaid = false;
        (void) eventfd_write(u->loaded_fd, 1);
}

/* One pass of the worker, as the loop found it due: the requests queued
 * since the last, the follow-ups due, the start's scan (a few processes
 * at a time: requests of new processes go first), one queued large table,
 * the sweep when due. Returns 0 or -ENOMEM. */
static int work_pass(unwinder *u) {
        _cleanup_free_ struct file_ident *noted = NULL;
        struct request *q;
        size_t n_q, n_noted;
        uint64_t hot_ns;
        int r = 0;

        pthread_mutex_lock(&u->lock);
        q = TAKE_PTR(u->queue);
        n_q = u->n_queue;
        u->n_queue = u->cap_queue = 0;
        noted = TAKE_PTR(u->noted);
        n_noted = u->n_noted;
        u->n_noted = u->cap_noted = 0;
        hot_ns = u->noted_hot_ns;
        pthread_mutex_unlock(&u->lock);

        /* rows evicted for a sampled table, their grace over: before any
         * request can take them */
        if (u->n_room_waits > 0 && ufile_room_next_ns(u) <= mono_ns())
                r = ufile_room_due(u);
        for (size_t i = 0; i < n_q; i++) {
                if (r >= 0)
                        r = uproc_request(u, &q[i]);
                free(q[i].maps);
        }
        free(q);
        /* after the requests: the processes they load are known */
        if (r >= 0 && n_noted > 0)
                r = ufile_note_sampled(u, noted, n_noted, hot_ns, mono_ns());
        if (r >= 0 && u->n_followups > 0)
                r = uproc_followups_run(u);
        /* before the scan and the builds, which may take seconds */
        loaded_say(u);
        if (r >= 0 && !u->scanned) {
                r = uproc_scan_list(u);
                u->scanned = true;
        }
        if (r >= 0 && u->n_scan > 0)
                r = uproc_scan_some(u, 2);
        /* one large table at a time, requests in between; status shows it
         * queued while it is built (seconds) */
        if (r >= 0 && u->n_builds > 0) {
                publish_stats(u);
                r = ufile_build_next(u);
        }
        if (r >= 0 && mono_ns() >= u->next_sweep_ns) {
                r = uproc_sweep(u);
                u->next_sweep_ns = mono_ns() + SWEEP_NS;
        }
        loaded_say(u);
        publish_stats(u);
        return r;
}

/* Building tables leaves megabytes of small free chunks (libdw's CFI
 * caches, the rows) in this thread's arena, which glibc keeps resident; a
 * host's first scan alone left 19 MiB there. Given back when the builds
 * are over, not between two of them. */
static void trim_if_idle(unwinder *u) {
        bool idle;

        if (!u->trim_due || u->n_builds > 0 || u->n_scan > 0)
                return;
        pthread_mutex_lock(&u->lock);
        idle = u->n_queue == 0;
        pthread_mutex_unlock(&u->lock);
        if (idle && heap_trim_idle())
                u->trim_due = false;
}

/* When the next pass is due: at once while work is left (queued requests
 * or notes, the scan, queued builds), else at the next sweep, deferred
 * miss, follow-up or end of a grace that room waits for.
 * CLOCK_MONOTONIC ns. */
static uint64_t next_due_ns(unwinder *u) {
        bool queued;

        pthread_mutex_lock(&u->lock);
        queued = u->n_queue > 0 || u->n_noted > 0;
        pthread_mutex_unlock(&u->lock);
        if (queued || u->n_builds > 0 || u->n_scan > 0 || !u->scanned)
                return 0;
        return MIN(MIN(u->next_sweep_ns, uproc_followup_next_ns(u)), ufile_room_next_ns(u));
}

/* Runs a pass and sets the timer to the next due time. Out of memory ends
 * the loop: the kernel keeps what was written, and processes from then on
 * are walked by frame pointers. */
static int run_and_rearm(unwinder *u) {
        uint64_t due;
        int r;

        r = work_pass(u);
        if (r >= 0)
                trim_if_idle(u);
        if (r < 0) {
                log_error_errno(r, "The unwinder ran out of memory; processes from now on are walked by "
                                   "frame pointers: %m");
                return sd_event_exit(sd_event_source_get_event(u->due_src), 0);
        }
        /* in microseconds, rounded up: a timer that fired early would find
         * nothing due and fire again at once */
        due = next_due_ns(u);
        r = sd_event_source_set_time(u->due_src, (due + NSEC_PER_USEC - 1) / NSEC_PER_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(u->due_src, SD_EVENT_ONESHOT);
        if (r < 0)
                log_error_errno(r, "The unwinder cannot set its timer, stopping: %m");
        return r;
}

/* Requests arrived (unwinder_kick wrote the eventfd). */
static int on_wake(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        eventfd_t ignored;

        (void) eventfd_read(fd, &ignored);
        return run_and_rearm(userdata);
}

/* Work is due: the first pass, a sweep, a deferred miss, a follow-up, or
 * what the last pass left (the scan, queued builds). */
static int on_due(sd_event_source *s, uint64_t usec, void *userdata) {
        return run_and_rearm(userdata);
}

/* On the thread: its sources, the timer due at once for the first pass
 * (the scan of the processes already running). Accuracy 1 us: sd-event's
 * default (250 ms) would hold back a follow-up due 1 ms later. */
static int loop_setup(sd_event *event, void *userdata) {
        unwinder *u = userdata;
        int r;

        r = sd_event_add_io(event, &u->wake_src, u->wake_fd, EPOLLIN, on_wake, u);
        if (r >= 0)
                r = sd_event_add_time(event, &u->due_src, CLOCK_MONOTONIC, 0, 1, on_due, u);
        return r;
}

static void loop_done(void *userdata) {
        unwinder *u = userdata;

        u->wake_src = sd_event_source_unref(u->wake_src);
        u->due_src = sd_event_source_unref(u->due_src);
}

int unwinder_new(const struct collector_unwind_maps *maps, const char *proc_root, unwinder **ret) {
        unwinder *u;
        long tck = sysconf(_SC_CLK_TCK);
        int r;

        if (elf_version(EV_CURRENT) == EV_NONE)
                return -EINVAL;
        u = calloc(1, sizeof(*u));
        if (!u)
                return -ENOMEM;
        u->maps = *maps;
        u->tick_ns = NSEC_PER_SEC / (uint64_t) (tck > 0 ? tck : 100);
        u->page = (uint64_t) sysconf(_SC_PAGESIZE);
        u->proc_root = strdup(proc_root);
        u->rows_alloc = rangealloc_new(maps->rows_cap, GRACE_NS);
        u->maps_alloc = rangealloc_new(maps->maps_cap, GRACE_NS);
        u->files = hashmap_new(file_key_hash, file_key_eq);
        u->procs = hashmap_new_u64();
        u->next_sweep_ns = mono_ns() + SWEEP_NS;
        u->loaded_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        u->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        pthread_mutex_init(&u->lock, NULL);
        if (u->loaded_fd < 0 || u->wake_fd < 0) {
                r = negative_errno();
                unwinder_free(u);
                return r;
        }
        if (!u->proc_root || !u->rows_alloc || !u->maps_alloc || !u->files || !u->procs) {
                unwinder_free(u);
                return -ENOMEM;
        }
        /* named, so top -H and profd's tests tell the threads apart */
        r = loopthread_start("profd-unwind", loop_setup, loop_done, u, &u->thread);
        if (r < 0) {
                unwinder_free(u);
                return r;
        }
        *ret = u;
        return 0;
}

int unwinder_runtime(unwinder *u, uint32_t slot, struct unwind_runtime_found *ret) {
        int r = -ENOENT;

        if (slot == 0 || slot > PROFD_RUNTIME_SLOTS)
                return -ENOENT;
        pthread_mutex_lock(&u->lock);
        if (u->rt_slots[slot - 1]) {
                *ret = *u->rt_slots[slot - 1];
                r = 0;
        }
        pthread_mutex_unlock(&u->lock);
        return r;
}

int unwinder_runtime_add(unwinder *u, const struct unwind_runtime_found *found, uint32_t *ret_slot) {
        struct unwind_runtime_found *copy = malloc(sizeof(*copy));
        uint32_t slot = 0, idx;
        int r;

        if (!copy)
                return -ENOMEM;
        *copy = *found;
        pthread_mutex_lock(&u->lock);
        for (uint32_t i = 0; i < PROFD_RUNTIME_SLOTS && !slot; i++)
                if (!u->rt_slots[i]) {
                        u->rt_slots[i] = copy;
                        slot = i + 1;
                }
        pthread_mutex_unlock(&u->lock);
        if (!slot) {
                free(copy);
                count_failure(u, UNWINDER_FAIL_RUNTIME_SLOTS);
                return -ENOSPC;
        }
        idx = slot - 1;
        if (bpf_map_update_elem(u->maps.runtimes_fd, &idx, &found->bpf, BPF_ANY) < 0) {
                r = negative_errno();
                log_debug_errno(r, "Failed to publish a runtime slot: %m");
                unwinder_runtime_remove(u, slot);
                count_failure(u, UNWINDER_FAIL_RUNTIME_SLOTS);
                return r;
        }
        *ret_slot = slot;
        return 0;
}

void unwinder_runtime_remove(unwinder *u, uint32_t slot) {
        if (slot == 0 || slot > PROFD_RUNTIME_SLOTS)
                return;
        pthread_mutex_lock(&u->lock);
        free(u->rt_slots[slot - 1]);
        u->rt_slots[slot - 1] = NULL;
        pthread_mutex_unlock(&u->lock);
}

unwinder *unwinder_free(unwinder *u) {
        const void *k;
        void *v;
        size_t i = 0;

        if (!u)
                return NULL;
        u->thread = loopthread_stop(u->thread);
        if (u->procs) {
                while (hashmap_iterate(u->procs, &i, &k, &v)) {
                        struct uproc *p = v;
                        free(p->files);
                        free(p);
                }
                hashmap_free(u->procs);
        }
        if (u->files) {
                i = 0;
                while (hashmap_iterate(u->files, &i, &k, &v))
                        ufile_free(v);
                hashmap_free(u->files);
        }
        for (i = 0; i < PROFD_RUNTIME_SLOTS; i++)
                free(u->rt_slots[i]);
        /* the queue's references: the files are freed with the cache */
        free(u->builds);
        free(u->room_waits);
        free(u->noted);
        free(u->scan);
        free(u->followups);
        ufile_free(u->vdso);
        if (u->vdso_elf)
                elf_end(u->vdso_elf);
        rangealloc_free(u->rows_alloc);
        rangealloc_free(u->maps_alloc);
        pthread_mutex_destroy(&u->lock);
        for (size_t qi = 0; qi < u->n_queue; qi++)
                free(u->queue[qi].maps);
        free(u->queue);
        for (size_t l = 0; l < u->n_loaded; l++)
                free(u->loaded[l].maps);
        free(u->loaded);
        safe_close(u->loaded_fd);
        safe_close(u->wake_fd);
        free(u->proc_root);
        free(u);
        return NULL;
}

int unwinder_loaded_fd(unwinder *u) {
        return u->loaded_fd;
}

size_t unwinder_take_loaded(unwinder *u, struct unwinder_loaded **ret) {
        size_t n;
        eventfd_t ignored;

        pthread_mutex_lock(&u->lock);
        (void) eventfd_read(u->loaded_fd, &ignored);
        *ret = TAKE_PTR(u->loaded);
        n = u->n_loaded;
        u->n_loaded = u->cap_loaded = 0;
        pthread_mutex_unlock(&u->lock);
        return n;
}

void unwinder_request(unwinder *u, uint32_t tgid, uint64_t start_ns, uint32_t event_type, char *maps) {
        if (!u) {
                free(maps);
                return;
        }
        pthread_mutex_lock(&u->lock);
        if (u->n_queue == u->cap_queue) {
                size_t nc = u->cap_queue ? u->cap_queue * 2 : 64;
                struct request *q = realloc(u->queue, nc * sizeof(*q));

                if (!q) {
                        pthread_mutex_unlock(&u->lock);
                        free(maps);
                        return;
                }
                u->queue = q;
                u->cap_queue = nc;
        }
        u->queue[u->n_queue++] = (struct request) {
                .tgid = tgid, .type = event_type, .start_ns = start_ns, .queued_ns = mono_ns(), .maps = maps,
        };
        pthread_mutex_unlock(&u->lock);
}

void unwinder_kick(unwinder *u) {
        bool queued;

        if (!u)
                return;
        pthread_mutex_lock(&u->lock);
        queued = u->n_queue > 0;
        pthread_mutex_unlock(&u->lock);
        if (queued)
                (void) eventfd_write(u->wake_fd, 1);
}

void unwinder_note_sampled(unwinder *u, const struct file_ident *files, size_t n, uint64_t hot_ns) {
        if (!u || n == 0)
                return;
        pthread_mutex_lock(&u->lock);
        if (u->n_noted + n <= NOTED_MAX &&
            array_grow((void **) &u->noted, &u->cap_noted, u->n_noted + n, sizeof(*u->noted)) >= 0) {
                memcpy(u->noted + u->n_noted, files, n * sizeof(*files));
                u->n_noted += n;
                u->noted_hot_ns = hot_ns;
                (void) eventfd_write(u->wake_fd, 1);
        }
        pthread_mutex_unlock(&u->lock);
}

void unwinder_get_stats(unwinder *u, struct unwinder_stats *ret) {
        pthread_mutex_lock(&u->lock);
        *ret = u->stats;
        pthread_mutex_unlock(&u->lock);
}

