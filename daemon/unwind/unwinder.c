/* The unwinder manager (see unwinder.h): one worker thread owns the file
 * table cache, the processes' mapping slices and the writes into the
 * kernel's unwind maps; the event loop only queues requests. */
#include "unwinder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "hashmap.h"
#include "heap.h"
#include "helpers.h"
#include "log.h"
#include "macro.h"
#include "mapfile.h"
#include "procmaps.h"
#include "rangealloc.h"
#include "unwind-table.h"

const char *const unwinder_failure_names[UNWINDER_FAIL__MAX] = {
        [UNWINDER_FAIL_NO_CFI] = "no_cfi",
        [UNWINDER_FAIL_UNREADABLE] = "unreadable",
        [UNWINDER_FAIL_ABOVE_4G] = "above_4g",
        [UNWINDER_FAIL_BAD_CFI] = "bad_cfi",
        [UNWINDER_FAIL_BUDGET_FULL] = "budget_full",
        [UNWINDER_FAIL_MAPS_FULL] = "maps_full",
        [UNWINDER_FAIL_PROCS_FULL] = "procs_full",
};

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

/* Where one mapping offset of the file lands: ELF address of the mapping's
 * start (bias = map_start - vaddr_at). */
struct offset_bias {
        uint64_t map_offset, vaddr_at;
};

struct ufile {
        struct file_key key;
        uint32_t off, n;           /* rows in unwind_rows; n == 0: no table (frame pointers) */
        uint32_t slots;            /* the slice: the n rows and their index */
        uint32_t index_shift;      /* of the index (struct profd_unwind_index); 0: none */
        unsigned refs;             /* live processes' mappings */
        uint64_t unref_ns;         /* CLOCK_MONOTONIC when refs became 0 */
        struct ufile *lru_prev, *lru_next; /* in the unused list while refs == 0 */
        struct offset_bias *biases;
        size_t n_biases;
        bool retry;                /* no table for want of room (or memory): build again when next mapped */
        bool pending;              /* in the build queue: mappings of it are PROFD_MAPPING_PENDING */
        char *paths[3];            /* pending: where to open it (map_files, root/PATH, PATH) */
        uint32_t want;             /* rows the table needs, when it found no room */
        uint32_t resv_off, resv_n; /* rows set aside for its build again (resv_n 0: none) */
};

struct uproc {
        uint32_t tgid;
        uint64_t start;            /* ns, or ticks if tick_ns */
        uint32_t tick_ns;
        uint32_t maps_off, maps_n; /* slice of unwind_maps; maps_n == 0: none */
        struct ufile **files;      /* one reference each */
        size_t n_files;
        uint64_t loaded_ns;        /* CLOCK_MONOTONIC of the last read of its maps */
        uint64_t maps_sig;         /* of its mappings' bounds at the last load (maps_signature) */
        unsigned n_objects;        /* files it maps code of, the vDSO left out (exe, loader, libraries) */
        uint64_t miss_ns;          /* CLOCK_MONOTONIC of the last reload for a miss */
        uint64_t miss_interval_ns; /* the next miss waits this long after miss_ns; 0: MISS_FIRST_INTERVAL_NS */
        bool miss_deferred;        /* a miss waits for miss_ns + miss_interval_ns */
};

struct followup {
        uint32_t tgid;
        uint64_t start;
        uint64_t due_ns;           /* CLOCK_MONOTONIC */
        unsigned tries;            /* reads done */
};

struct request {
        uint32_t tgid, type;
        uint64_t start_ns;
        uint64_t queued_ns;        /* CLOCK_MONOTONIC */
};

struct unwinder {
        struct collector_unwind_maps maps;
        char *proc_root;
        uint64_t tick_ns;          /* /proc's clock tick */
        uint64_t page;             /* bytes */
        pthread_t thread;
        bool started;

        pthread_mutex_t lock;      /* guards the fields below up to `stats` */
        pthread_cond_t wake;
        bool stop;
        struct request *queue;
        size_t n_queue, cap_queue;
        struct unwinder_stats stats;
        struct unwinder_loaded *loaded; /* instances whose mappings were new or changed, for the event loop */
        size_t n_loaded, cap_loaded;
        int loaded_fd;             /* eventfd: loaded has entries */

        /* the worker's own */
        rangealloc *rows_alloc, *maps_alloc;
        uint64_t versions;         /* of unwind_procs entries written (struct profd_unwind_proc.version) */
        uint64_t mapped_max;       /* the most of the arrays mapped at once, bytes */
        hashmap *files;            /* struct file_key * -> struct ufile */
        hashmap *procs;            /* tgid -> struct uproc */
        struct ufile *lru_head, *lru_tail; /* unused files, oldest first */
        size_t n_unused;
        uint32_t *scan;            /* processes found at start, not loaded yet */
        size_t n_scan, scan_next;
        struct ufile **builds;     /* pending files, each referenced, oldest first */
        size_t n_builds, cap_builds;
        struct followup *followups; /* processes to read again soon after their exec */
        size_t n_followups, cap_followups;
        struct ufile *vdso;        /* the daemon's own vDSO image's table */
        Elf *vdso_elf;
        uint64_t next_sweep_ns;
        bool trim_due;             /* tables were built since the last heap_trim */
};

static uint32_t *mfree_u32(uint32_t *p) {
        free(p);
        return NULL;
}

static uint64_t mono_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static void count_failure(unwinder *u, enum unwinder_failure f) {
        pthread_mutex_lock(&u->lock);
        u->stats.failures[f]++;
        pthread_mutex_unlock(&u->lock);
}

/* --- the unused-file list ------------------------------------------------ */

static void lru_unlink(unwinder *u, struct ufile *f) {
        u->n_unused--;
        if (f->lru_prev)
                f->lru_prev->lru_next = f->lru_next;
        else if (u->lru_head == f)
                u->lru_head = f->lru_next;
        if (f->lru_next)
                f->lru_next->lru_prev = f->lru_prev;
        else if (u->lru_tail == f)
                u->lru_tail = f->lru_prev;
        f->lru_prev = f->lru_next = NULL;
}

static void file_ref(unwinder *u, struct ufile *f) {
        if (f->refs++ == 0)
                lru_unlink(u, f);
}

static void file_unref(unwinder *u, struct ufile *f, uint64_t now) {
        if (--f->refs > 0)
                return;
        f->unref_ns = now;
        u->n_unused++;
        f->lru_prev = u->lru_tail;
        f->lru_next = NULL;
        if (u->lru_tail)
                u->lru_tail->lru_next = f;
        else
                u->lru_head = f;
        u->lru_tail = f;
}

static void ufile_free(struct ufile *f) {
        if (!f)
                return;
        for (size_t i = 0; i < ELEMENTSOF(f->paths); i++)
                free(f->paths[i]);
        free(f->biases);
        free(f);
}

/* Drops unused file f from the cache, its rows freed as of the moment the
 * last process stopped using them (so their grace may be over already). */
static void evict(unwinder *u, struct ufile *f) {
        bool table = f->slots > 0;

        lru_unlink(u, f);
        (void) hashmap_remove(u->files, &f->key);
        if (table)
                rangealloc_release(u->rows_alloc, f->off, f->slots, f->unref_ns);
        ufile_free(f);
        if (table) {
                pthread_mutex_lock(&u->lock);
                u->stats.tables_evicted++;
                pthread_mutex_unlock(&u->lock);
        }
}

/* Room for n rows: free rows, else the rows of unused tables. Only the
 * tables in the one window rangealloc_find_room picks are evicted (those
 * unused longest, then the fewest rows), and none when no window exists:
 * evicting every unused table and still finding no room for a large one
 * made a build host rebuild them all, over and over. Returns 0 with
 * *ret_off, -ENOSPC or -ENOMEM. */
static int rows_room(unwinder *u, uint32_t n, uint32_t *ret_off) {
        _cleanup_free_ struct rangealloc_spare *spare = NULL;
        uint64_t now = mono_ns();
        uint32_t off;
        size_t k = 0;
        int r;

        rangealloc_reclaim(u->rows_alloc, now);
        if (rangealloc_alloc(u->rows_alloc, n, ret_off) >= 0)
                return 0;
        spare = calloc(u->n_unused + 1, sizeof(*spare));
        if (!spare)
                return -ENOMEM;
        for (struct ufile *f = u->lru_head; f; f = f->lru_next)
                if (f->slots > 0)
                        spare[k++] = (struct rangealloc_spare) { f->off, f->slots, f->unref_ns };
        r = rangealloc_find_room(u->rows_alloc, n, spare, k, now, &off);
        if (r < 0)
                return r;
        for (struct ufile *f = u->lru_head, *next; f; f = next) {
                next = f->lru_next;
                if (f->slots > 0 && f->off < off + n && off < f->off + f->slots)
                        evict(u, f);
        }
        rangealloc_reclaim(u->rows_alloc, now);
        return rangealloc_alloc(u->rows_alloc, n, ret_off);
}

/* Sets aside the rows a table that found no room wants, before it is built
 * again: a build is then never thrown away for want of room. Checking for
 * room without taking it was not enough on a build host: between the check
 * and the build (seconds for libLLVM, queued behind others) new compilers
 * took the unused tables the room was to come from, and a million rows were
 * built for nothing, again and again. Returns 0 (also when the size is not
 * known: the build finds its room), -ENOSPC or -ENOMEM. */
static int file_reserve(unwinder *u, struct ufile *f) {
        int r;

        if (f->want == 0 || f->resv_n > 0)
                return 0;
        r = rows_room(u, f->want, &f->resv_off);
        if (r >= 0)
                f->resv_n = f->want;
        return r;
}

static void file_unreserve(unwinder *u, struct ufile *f) {
        if (f->resv_n == 0)
                return;
        rangealloc_release(u->rows_alloc, f->resv_off, f->resv_n, mono_ns());
        f->resv_n = 0;
}

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
static int array_write(unwinder *u, int fd, size_t elem_size, uint32_t off, const void *src, size_t n) {
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

/* --- building file tables -------------------------------------------------- */

static int open_elf(int fd, Elf **ret) {
        Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);

        if (!e)
                return -ENOEXEC;
        if (elf_kind(e) != ELF_K_ELF) {
                elf_end(e);
                return -ENOEXEC;
        }
        *ret = e;
        return 0;
}

/* Where a table's rows go as they are read: into its slice of
 * unwind_rows, planned for at most bound rows, and through its index. */
struct rows_out {
        unwinder *u;
        uint32_t off;
        size_t bound, n;
        struct unwind_index_writer index;
};

static int rows_out_write(void *userdata, const struct profd_unwind_row *rows, size_t n) {
        struct rows_out *o = userdata;
        int r;

        if (n > o->bound - o->n)
                return -EINVAL; /* the reader keeps to its bound: never */
        r = array_write(o->u, o->u->maps.rows_fd, sizeof(*rows), o->off + (uint32_t) o->n, rows, n);
        if (r < 0)
                return r;
        if (o->index.count)
                unwind_index_add(&o->index, rows, n);
        o->n += n;
        return 0;
}

/* Builds the table of elf into the kernel's rows. Its FDEs tell how many
 * rows it can have; room for that many (and the index) is found first, and
 * the rows are written into it as libdw yields them, a piece at a time:
 * libLLVM's 950 k rows are never all in the heap (they were, with libdw's
 * FDEs, a 15 MiB peak of RSS), and a table that finds no room is not read
 * at all. The bound is within 1-3% of the rows made here; what the table
 * does not use is given back. fd: the file elf reads (-1 for the vDSO),
 * which the reader maps itself (unwind_reader_new). On failure the file
 * is kept with no table (frame pointers) when the failure is the file's
 * own, and the reason counted. */
static void file_build(unwinder *u, struct ufile *f, Elf *elf, int fd, const char *what) {
        _cleanup_(unwind_reader_freep) unwind_reader *reader = NULL;
        _cleanup_free_ struct profd_unwind_row *index = NULL;
        struct rows_out out = { .u = u };
        struct unwind_table counts;
        uint64_t t0 = mono_ns();
        uint32_t first, last, shift;
        size_t index_slots, planned, used;
        bool room = false;
        int r;

        r = unwind_reader_new(elf, fd, &reader);
        u->trim_due = true;
        if (r == 0 && unwind_reader_bound(reader) > MAX_TABLE_ROWS)
                r = -E2BIG;
        if (r < 0) {
                log_debug_errno(r, "No unwind table for %s, walking it by frame pointers: %m", what);
                count_failure(u, r == -ENODATA ? UNWINDER_FAIL_NO_CFI
                                 : r == -E2BIG ? UNWINDER_FAIL_ABOVE_4G
                                 : r == -ENOMEM ? UNWINDER_FAIL_UNREADABLE : UNWINDER_FAIL_BAD_CFI);
                f->retry = r == -ENOMEM;
                file_unreserve(u, f);
                return;
        }
        out.bound = unwind_reader_bound(reader);
        unwind_reader_span(reader, &first, &last);
        index_slots = unwind_index_plan(out.bound, first, last, &shift);
        planned = out.bound + index_slots;
        if (f->resv_n == planned) {
                out.off = f->resv_off;
                f->resv_n = 0;
                r = 0;
        } else {
                file_unreserve(u, f);
                r = rows_room(u, (uint32_t) planned, &out.off);
        }
        if (r == -ENOSPC) {
                log_debug("No room for the %zu unwind row slots of %s (unwind_memory), walking it by frame pointers.",
                          planned, what);
                count_failure(u, UNWINDER_FAIL_BUDGET_FULL);
                pthread_mutex_lock(&u->lock);
                u->stats.tables_no_room++;
                pthread_mutex_unlock(&u->lock);
                f->want = (uint32_t) planned;
                f->retry = true;
                return;
        }
        room = r >= 0;
        if (r >= 0 && index_slots > 0) {
                index = calloc(index_slots, sizeof(*index));
                if (!index)
                        r = -ENOMEM;
                else
                        unwind_index_begin(&out.index, shift, first, last, index);
        }
        if (r >= 0)
                r = unwind_reader_rows(reader, rows_out_write, &out, &counts);
        if (r >= 0 && index) {
                unwind_index_end(&out.index);
                r = array_write(u, u->maps.rows_fd, sizeof(*index), out.off + (uint32_t) out.n, index, index_slots);
        }
        if (r < 0) {
                /* rows may have been written: released as of now */
                if (room)
                        rangealloc_release(u->rows_alloc, out.off, (uint32_t) planned, mono_ns());
                log_debug_errno(r, "Failed to build the unwind rows of %s, walking it by frame pointers: %m", what);
                /* -EINVAL: more rows than the FDEs allow; else out of
                 * memory or mappings, built again when next mapped */
                count_failure(u, r == -EINVAL ? UNWINDER_FAIL_BAD_CFI : UNWINDER_FAIL_UNREADABLE);
                f->retry = r != -EINVAL;
                return;
        }
        /* The rows the bound left over were never published: free at once. */
        used = out.n + index_slots;
        if (used < planned)
                rangealloc_release(u->rows_alloc, out.off + (uint32_t) used, (uint32_t) (planned - used), 0);
        f->off = out.off;
        f->n = (uint32_t) out.n;
        f->slots = (uint32_t) used;
        f->index_shift = shift;
        pthread_mutex_lock(&u->lock);
        u->stats.tables_built++;
        u->stats.build_ns += mono_ns() - t0;
        pthread_mutex_unlock(&u->lock);
}

static int file_add_bias(struct ufile *f, uint64_t map_offset, uint64_t vaddr_at) {
        struct offset_bias *b = realloc(f->biases, (f->n_biases + 1) * sizeof(*b));

        if (!b)
                return -ENOMEM;
        f->biases = b;
        b[f->n_biases++] = (struct offset_bias) { map_offset, vaddr_at };
        return 0;
}

static bool file_find_bias(const struct ufile *f, uint64_t map_offset, uint64_t *ret_vaddr_at) {
        for (size_t i = 0; i < f->n_biases; i++)
                if (f->biases[i].map_offset == map_offset) {
                        *ret_vaddr_at = f->biases[i].vaddr_at;
                        return true;
                }
        return false;
}

/* Reads the ELF file at one of the paths: its table if the file is new,
 * and where mapping offset m->offset lands. Returns 0, or -ENOEXEC when the
 * file cannot be read (walk it by frame pointers), or -ENOMEM. */
static int file_read(unwinder *u, struct ufile *f, const struct mapfile_paths *paths, const struct procmap *m,
                     bool build) {
        _cleanup_close_ int fd = mapfile_open(paths);
        uint64_t bias;
        Elf *elf;
        int r;

        if (fd < 0 || open_elf(fd, &elf) < 0)
                return -ENOEXEC;
        r = unwind_mapping_bias(elf, m->start, m->offset, &bias);
        if (r >= 0)
                r = file_add_bias(f, m->offset, m->start - bias);
        else
                r = -ENOEXEC;
        if (r >= 0 && build)
                file_build(u, f, elf, fd, m->path);
        elf_end(elf);
        return r;
}

/* Queues f's table to be built after the current requests. */
static int build_later(unwinder *u, struct ufile *f, const struct mapfile_paths *paths, const char *path) {
        if (u->n_builds == u->cap_builds) {
                size_t nc = u->cap_builds ? u->cap_builds * 2 : 16;
                struct ufile **b = realloc(u->builds, nc * sizeof(*b));

                if (!b)
                        return -ENOMEM;
                u->builds = b;
                u->cap_builds = nc;
        }
        for (size_t i = 0; i < ELEMENTSOF(f->paths); i++)
                free(f->paths[i]);
        f->paths[0] = strdup(paths->by_map);
        f->paths[1] = paths->by_root[0] ? strdup(paths->by_root) : NULL;
        f->paths[2] = strdup(path);
        if (!f->paths[0] || (paths->by_root[0] && !f->paths[1]) || !f->paths[2])
                return -ENOMEM;
        f->pending = true;
        f->refs++; /* the queue's (the caller holds one: never in the unused list here) */
        u->builds[u->n_builds++] = f;
        return 0;
}

/* The file of mapping m, whose identity is key (NULL: the file could not
 * be found), and the ELF address its start maps: from the cache when the
 * file is known, else read now. Returns 0 with *ret (referenced for the
 * caller; NULL: walk the mapping by frame pointers), or -ENOMEM. */
static int mapping_file(unwinder *u, uint32_t pid, const struct procmap *m, const struct file_key *key,
                        struct ufile **ret, uint64_t *ret_vaddr_at) {
        struct mapfile_paths paths;
        struct ufile *f = NULL;
        bool is_new = false, build, defer;
        int r;

        *ret = NULL;
        if (!key) {
                count_failure(u, UNWINDER_FAIL_UNREADABLE);
                return 0;
        }
        mapfile_paths(u->proc_root, pid, m->start, m->end, m->path, &paths);
        if (hashmap_get(u->files, key, (void **) &f) < 0) {
                f = calloc(1, sizeof(*f));
                if (!f)
                        return -ENOMEM;
                f->key = *key;
                f->refs = 1;
                is_new = true;
        } else {
                /* before building: evicting for room never takes it */
                file_ref(u, f);
        }
        /* a table that found no room is built again when the file is next
         * mapped by a process, if its rows can be set aside now */
        build = is_new || (f->retry && file_reserve(u, f) >= 0);
        defer = build && key->size > BUILD_INLINE_MAX_BYTES;
        if (defer) {
                build = false;
                f->retry = false;
        }
        if (f->retry && !build)
                count_failure(u, UNWINDER_FAIL_BUDGET_FULL);
        if (build || !file_find_bias(f, m->offset, ret_vaddr_at)) {
                if (build)
                        f->retry = false;
                r = file_read(u, f, &paths, m, build);
                if (r < 0 || !file_find_bias(f, m->offset, ret_vaddr_at)) {
                        if (is_new)
                                ufile_free(f);
                        else {
                                file_unreserve(u, f); /* unread: not built */
                                file_unref(u, f, mono_ns());
                        }
                        if (r == -ENOMEM)
                                return r;
                        count_failure(u, UNWINDER_FAIL_UNREADABLE);
                        return 0;
                }
        }
        if (is_new) {
                r = hashmap_put(u->files, &f->key, f);
                if (r < 0) {
                        ufile_free(f);
                        return r;
                }
        }
        if (defer) {
                r = build_later(u, f, &paths, m->path);
                if (r < 0) {
                        file_unreserve(u, f);
                        file_unref(u, f, mono_ns());
                        return r;
                }
        }
        *ret = f;
        return 0;
}

/* The daemon's own vDSO: the kernel gives every 64-bit process the same
 * image. NULL if it cannot be read. */
static struct ufile *vdso_file(unwinder *u) {
        const GElf_Ehdr *eh = (const GElf_Ehdr *) getauxval(AT_SYSINFO_EHDR);
        size_t size;

        if (u->vdso || !eh)
                return u->vdso;
        /* the image ends with its section headers */
        size = eh->e_shoff + (size_t) eh->e_shnum * eh->e_shentsize;
        u->vdso_elf = elf_memory((char *) eh, size);
        if (!u->vdso_elf)
                return NULL;
        u->vdso = calloc(1, sizeof(*u->vdso));
        if (!u->vdso)
                return NULL;
        file_build(u, u->vdso, u->vdso_elf, -1, "[vdso]");
        u->vdso->refs = 1; /* never evicted */
        return u->vdso;
}

/* --- processes ------------------------------------------------------------------- */

static void proc_release_refs(unwinder *u, struct ufile **files, size_t n, uint64_t now) {
        for (size_t i = 0; i < n; i++)
                if (files[i])
                        file_unref(u, files[i], now);
        free(files);
}

/* After every change to unwind_procs, before the slice an entry named
 * is released: a walker that found the epoch unchanged reuses what its
 * last lookup found (bpf/maps.bpf.h), and it can only be a slice still
 * in its grace. */
static void procs_changed(unwinder *u) {
        if (u->maps.procs_epoch)
                __atomic_add_fetch(u->maps.procs_epoch, 1, __ATOMIC_SEQ_CST);
}

/* Forgets a process: its entry, its slice (after the grace), its files. */
static void proc_drop(unwinder *u, struct uproc *p, bool delete_entry) {
        uint64_t now = mono_ns();

        if (delete_entry) {
                (void) bpf_map_delete_elem(u->maps.procs_fd, &p->tgid);
                procs_changed(u);
        }
        if (p->maps_n > 0)
                rangealloc_release(u->maps_alloc, p->maps_off, p->maps_n, now);
        proc_release_refs(u, p->files, p->n_files, now);
        (void) hashmap_remove(u->procs, UINT64_TO_KEY(p->tgid));
        free(p);
}

/* The start of process tgid in clock ticks (/proc/PID/stat). Returns 0 or
 * a negative errno (gone). */
static int proc_start_ticks(const unwinder *u, uint32_t tgid, uint64_t *ret_ticks) {
        _cleanup_free_ char *text = NULL;
        char path[PATH_MAX];
        int r;

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/stat", u->proc_root, tgid);
        r = read_full_file(path, &text);
        if (r < 0)
                return r;
        return procstat_parse_starttime(text, ret_ticks);
}

/* Is the process in /proc still the instance (start, tick_ns)? */
static bool proc_alive(const unwinder *u, uint32_t tgid, uint64_t start, uint32_t tick_ns) {
        uint64_t ticks;

        if (proc_start_ticks(u, tgid, &ticks) < 0)
                return false;
        return (tick_ns ? start : start / u->tick_ns) == ticks;
}

/* Reads the process's executable mappings and publishes them. */
/* A process's executable mappings as read from its maps file, each with
 * the file whose table it uses (a reference, or NULL: frame pointers). */
struct proc_mappings {
        unwinder *u;
        struct profd_unwind_mapping *out;
        struct ufile **files;
        size_t n, cap;
};

/* Drops the references the mappings still hold and frees the arrays. */
static void proc_mappings_done(struct proc_mappings *pm) {
        for (size_t i = 0; pm->files && i < pm->n; i++)
                if (pm->files[i])
                        file_unref(pm->u, pm->files[i], mono_ns());
        free(pm->files);
        free(pm->out);
        *pm = (struct proc_mappings) {};
}

/* Room for one more mapping. Returns 0 or -ENOMEM. */
static int proc_mappings_grow(struct proc_mappings *pm) {
        size_t nc;
        void *a, *b;

        if (pm->n < pm->cap)
                return 0;
        nc = pm->cap ? pm->cap * 2 : 32;
        a = realloc(pm->out, nc * sizeof(*pm->out));
        if (!a)
                return -ENOMEM;
        pm->out = a;
        b = realloc(pm->files, nc * sizeof(*pm->files));
        if (!b)
                return -ENOMEM;
        pm->files = b;
        pm->cap = nc;
        return 0;
}

/* The file (a reference) whose table serves mapping m, and the file
 * address the mapping starts at; *ret NULL for anonymous (JIT) and other
 * special mappings, and a vDSO whose bias is unknown: frame pointers.
 * Returns 0 or a negative errno. */
/* One executable mapping of a process, and its file's identity (keyed:
 * the file was found; only for mappings of a file). */
struct exec_mapping {
        struct procmap m;
        struct file_key key;
        bool keyed;
};

/* A process's executable mappings, parsed and their files found once,
 * and references held on the cached files among them until the mappings
 * are read: room made for one of its tables must not evict the table of
 * another of its files, unused until this process maps it a moment later
 * (clang's libstdc++ evicted for its libz3, then built again and found no
 * room). */
struct exec_mappings {
        unwinder *u;
        struct exec_mapping *items;
        size_t n, cap;
        struct ufile **pins;
        size_t n_pins, cap_pins;
};

static void exec_mappings_done(struct exec_mappings *em) {
        for (size_t i = 0; i < em->n; i++)
                procmap_done(&em->items[i].m);
        free(em->items);
        for (size_t i = 0; i < em->n_pins; i++)
                file_unref(em->u, em->pins[i], mono_ns());
        free(em->pins);
}

static bool is_file_mapping(const struct procmap *m) {
        return m->path && m->path[0] == '/' && m->inode != 0;
}

/* Parses the executable mappings of maps text (a process's
 * /proc/PID/maps, cut into lines on the way; at most MAX_PROC_MAPPINGS),
 * finds their files and pins the cached ones. Returns 0 or -ENOMEM. */
static int exec_mappings_read(unwinder *u, uint32_t tgid, char *text, struct exec_mappings *em) {
        for (char *line = text, *next; line && *line && em->n < MAX_PROC_MAPPINGS; line = next) {
                struct exec_mapping *e;
                struct ufile *f;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (array_grow((void **) &em->items, &em->cap, em->n + 1, sizeof(*em->items)) < 0)
                        return -ENOMEM;
                e = &em->items[em->n];
                *e = (struct exec_mapping) {};
                if (procmap_parse_line(line, &e->m) < 0)
                        continue;
                if (!e->m.executable) {
                        procmap_done(&e->m);
                        continue;
                }
                em->n++;
                if (is_file_mapping(&e->m)) {
                        struct mapfile_paths paths;

                        mapfile_paths(u->proc_root, tgid, e->m.start, e->m.end, e->m.path, &paths);
                        e->keyed = mapfile_key(&paths, &e->key) >= 0;
                }
                if (e->keyed && hashmap_get(u->files, &e->key, (void **) &f) == 0) {
                        if (array_grow((void **) &em->pins, &em->cap_pins, em->n_pins + 1, sizeof(*em->pins)) < 0)
                                return -ENOMEM;
                        file_ref(u, f);
                        em->pins[em->n_pins++] = f;
                }
        }
        return 0;
}

static int proc_mapping_file(unwinder *u, uint32_t tgid, const struct exec_mapping *e, struct ufile **ret,
                             uint64_t *ret_vaddr_at) {
        const struct procmap *m = &e->m;
        struct ufile *f = NULL;
        uint64_t bias;

        *ret = NULL;
        *ret_vaddr_at = 0;
        if (m->path && streq(m->path, "[vdso]")) {
                f = vdso_file(u);
                if (!f)
                        return 0;
                file_ref(u, f);
                if (unwind_mapping_bias(u->vdso_elf, m->start, 0, &bias) < 0) {
                        file_unref(u, f, mono_ns());
                        return 0;
                }
                *ret_vaddr_at = m->start - bias;
                *ret = f;
                return 0;
        }
        if (is_file_mapping(m))
                return mapping_file(u, tgid, m, e->keyed ? &e->key : NULL, ret, ret_vaddr_at);
        return 0;
}

/* Reads /proc/PID/maps into pm: every executable mapping with its table.
 * Returns 0 (also for a process already gone: pm->n 0) or a negative
 * errno. */
static int proc_read_mappings(unwinder *u, uint32_t tgid, struct proc_mappings *pm) {
        _cleanup_free_ char *text = NULL;
        _cleanup_(exec_mappings_done) struct exec_mappings em = { .u = u };
        char path[PATH_MAX];
        int r;

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", u->proc_root, tgid);
        if (read_full_file(path, &text) < 0)
                return 0; /* gone already */
        r = exec_mappings_read(u, tgid, text, &em);
        if (r < 0)
                return r;
        for (size_t i = 0; i < em.n; i++) {
                const struct procmap *m = &em.items[i].m;
                struct ufile *f;
                uint64_t vaddr_at;

                r = proc_mappings_grow(pm);
                if (r >= 0)
                        r = proc_mapping_file(u, tgid, &em.items[i], &f, &vaddr_at);
                if (r < 0)
                        return r;
                pm->out[pm->n] = (struct profd_unwind_mapping) {
                        .start = m->start,
                        .end = m->end,
                        .bias = m->start - vaddr_at,
                        .kind = f && f->pending ? PROFD_MAPPING_PENDING
                                : f && f->n > 0 ? PROFD_MAPPING_TABLE : PROFD_MAPPING_FP,
                        .rows_off = f ? f->off : 0,
                        .rows_n = f ? f->n : 0,
                        .index_shift = f ? f->index_shift : 0,
                };
                pm->files[pm->n++] = f; /* the reference taken above */
        }
        return 0;
}

/* Writes pm's mappings into the shared array and publishes the process's
 * entry to the BPF programs. Returns 1 and the mappings' offset, 0 when
 * there was no room (counted), or a negative errno. */
static int proc_publish(unwinder *u, uint32_t tgid, struct profd_unwind_proc *entry,
                        const struct proc_mappings *pm, uint32_t *ret_off) {
        uint32_t off;
        int r;

        rangealloc_reclaim(u->maps_alloc, mono_ns());
        if (rangealloc_alloc(u->maps_alloc, (uint32_t) pm->n, &off) < 0) {
                count_failure(u, UNWINDER_FAIL_MAPS_FULL);
                return 0;
        }
        r = array_write(u, u->maps.maps_fd, sizeof(*pm->out), off, pm->out, pm->n);
        if (r < 0) {
                rangealloc_release(u->maps_alloc, off, (uint32_t) pm->n, mono_ns());
                log_debug_errno(r, "Failed to write the unwind mappings of pid %" PRIu32 ": %m", tgid);
                return r;
        }
        entry->maps_off = off;
        entry->maps_n = (uint32_t) pm->n;
        /* the update is a syscall: the rows and mappings written above are
         * visible before any program finds the entry */
        if (bpf_map_update_elem(u->maps.procs_fd, &tgid, entry, BPF_ANY) < 0) {
                r = negative_errno();
                rangealloc_release(u->maps_alloc, off, (uint32_t) pm->n, mono_ns());
                count_failure(u, UNWINDER_FAIL_PROCS_FULL);
                log_debug_errno(r, "Failed to publish the unwind tables of pid %" PRIu32 ", ignoring: %m", tgid);
                return 0;
        }
        procs_changed(u);
        *ret_off = off;
        return 1;
}

/* Which address ranges a process maps executable: a load whose signature
 * differs from the last one's found mappings added or removed. */
static uint64_t maps_signature(const struct proc_mappings *pm) {
        uint64_t sig = 0;

        for (size_t i = 0; i < pm->n; i++)
                sig = procmap_signature_add(sig, pm->out[i].start, pm->out[i].end);
        return sig;
}

/* Why 4096: the event loop takes the list at its next turn, milliseconds
 * later; even a host starting a thousand processes a second leaves it far
 * from full. Beyond it a process keeps its announcement's mappings, and
 * frames in libraries mapped since then are counted unresolved. */
#define LOADED_MAX 4096

/* Tells the event loop that instance (tgid, start) maps code it may not have
 * seen (unwinder_take_loaded). */
static void notify_loaded(unwinder *u, uint32_t tgid, uint64_t start, uint64_t sig) {
        pthread_mutex_lock(&u->lock);
        if (u->n_loaded == u->cap_loaded && u->cap_loaded < LOADED_MAX) {
                size_t nc = u->cap_loaded ? u->cap_loaded * 2 : 64;
                struct unwinder_loaded *l = realloc(u->loaded, nc * sizeof(*l));

                if (l) {
                        u->loaded = l;
                        u->cap_loaded = nc;
                }
        }
        if (u->n_loaded < u->cap_loaded) {
                u->loaded[u->n_loaded++] = (struct unwinder_loaded) { .tgid = tgid, .start_ns = start, .maps_sig = sig };
                (void) eventfd_write(u->loaded_fd, 1);
        }
        pthread_mutex_unlock(&u->lock);
}

/* How many files a process maps code of, the vDSO left out (its mappings
 * come sorted by address; a file's are next to each other). */
static unsigned count_objects(const unwinder *u, const struct proc_mappings *pm) {
        unsigned n = 0;

        for (size_t i = 0; i < pm->n; i++)
                if (pm->files[i] && pm->files[i] != u->vdso && (i == 0 || pm->files[i] != pm->files[i - 1]))
                        n++;
        return n;
}

static int proc_load(unwinder *u, uint32_t tgid, uint64_t start, uint32_t tick_ns) {
        _cleanup_(proc_mappings_done) struct proc_mappings pm = { .u = u };
        struct profd_unwind_proc entry = { .start_ns = start, .start_tick_ns = tick_ns, .version = ++u->versions };
        struct uproc *p, *old = NULL;
        uint64_t miss_ns = 0, miss_interval_ns = 0, sig;
        bool changed = true;
        uint32_t off;
        int r;

        r = proc_read_mappings(u, tgid, &pm);
        if (r < 0 || pm.n == 0)
                return r; /* a kernel thread, or gone */
        r = proc_publish(u, tgid, &entry, &pm, &off);
        if (r <= 0)
                return r;

        sig = maps_signature(&pm);
        if (hashmap_get(u->procs, UINT64_TO_KEY(tgid), (void **) &old) == 0) {
                miss_ns = old->miss_ns;
                miss_interval_ns = old->miss_interval_ns;
                changed = old->maps_sig != sig;
                proc_drop(u, old, false);
        }
        /* An instance announced by an event (its start exact) got a snapshot
         * of its maps from the event loop then, maybe before the dynamic
         * loader had mapped its libraries: the event loop reads them again. */
        if (changed && tick_ns == 0)
                notify_loaded(u, tgid, start, sig);
        p = calloc(1, sizeof(*p));
        if (p) {
                *p = (struct uproc) {
                        .tgid = tgid, .start = start, .tick_ns = tick_ns,
                        .maps_off = off, .maps_n = (uint32_t) pm.n,
                        .files = pm.files, .n_files = pm.n, .loaded_ns = mono_ns(), .maps_sig = sig,
                        .n_objects = count_objects(u, &pm), .miss_ns = miss_ns, .miss_interval_ns = miss_interval_ns,
                };
                r = hashmap_put(u->procs, UINT64_TO_KEY(tgid), p);
                if (r >= 0) {
                        pm.files = NULL; /* the process holds the references now */
                        pm.n = 0;
                } else
                        free(p);
        } else
                r = -ENOMEM;
        if (r < 0) {
                (void) bpf_map_delete_elem(u->maps.procs_fd, &tgid);
                procs_changed(u);
                rangealloc_release(u->maps_alloc, off, (uint32_t) pm.n, mono_ns());
                return r;
        }
        pthread_mutex_lock(&u->lock);
        u->stats.requests++;
        pthread_mutex_unlock(&u->lock);
        return 0;
}

static uint64_t miss_interval(const struct uproc *p) {
        return p->miss_interval_ns ? p->miss_interval_ns : MISS_FIRST_INTERVAL_NS;
}

/* After a reload for a miss at now: misses coming within the interval
 * double it (up to MISS_INTERVAL_NS); a miss after a quiet spell of
 * MISS_INTERVAL_NS starts again from the first interval. */
static void miss_reloaded(struct uproc *p, uint64_t now) {
        if (p->miss_ns && now - p->miss_ns < MISS_INTERVAL_NS)
                p->miss_interval_ns = MIN(2 * miss_interval(p), MISS_INTERVAL_NS);
        else
                p->miss_interval_ns = MISS_FIRST_INTERVAL_NS;
        p->miss_ns = now;
}

/* Whether a process still shows only what exec maps: its binary and the
 * dynamic loader. */
static bool awaits_libraries(const struct uproc *p) {
        return p->n_objects == 2;
}

static void followup_add(unwinder *u, uint32_t tgid, uint64_t start, unsigned tries) {
        if (array_grow((void **) &u->followups, &u->cap_followups, u->n_followups + 1, sizeof(*u->followups)) < 0)
                return; /* a miss reads it again instead */
        u->followups[u->n_followups++] = (struct followup) {
                .tgid = tgid, .start = start, .tries = tries,
                .due_ns = mono_ns() + (FOLLOWUP_FIRST_NS << tries),
        };
}

/* The earliest follow-up, or UINT64_MAX. */
static uint64_t followup_next_ns(const unwinder *u) {
        uint64_t next = UINT64_MAX;

        for (size_t i = 0; i < u->n_followups; i++)
                next = MIN(next, u->followups[i].due_ns);
        return next;
}

/* Reads again the processes whose follow-up is due, unless they mapped
 * more since (a miss read them) or are gone; one still awaiting its
 * libraries is followed up again, FOLLOWUP_TRIES times at most. */
static int followups_run(unwinder *u) {
        uint64_t now = mono_ns();
        size_t n = u->n_followups;

        for (size_t i = 0; i < n;) {
                struct followup f = u->followups[i];
                struct uproc *p = NULL;
                uint64_t loaded_ns;
                int r;

                if (f.due_ns > now) {
                        i++;
                        continue;
                }
                u->followups[i] = u->followups[--n];
                u->n_followups = n;
                if (hashmap_get(u->procs, UINT64_TO_KEY(f.tgid), (void **) &p) < 0 || p->tick_ns ||
                    p->start != f.start || !awaits_libraries(p))
                        continue;
                loaded_ns = p->loaded_ns;
                r = proc_load(u, f.tgid, f.start, 0);
                if (r < 0)
                        return r;
                if (hashmap_get(u->procs, UINT64_TO_KEY(f.tgid), (void **) &p) < 0 || p->loaded_ns == loaded_ns)
                        continue; /* gone: its maps could not be read */
                log_debug("Unwind tables of pid %" PRIu32 " read again after its exec's: %u files.", f.tgid,
                          p->n_objects);
                if (awaits_libraries(p) && f.tries + 1 < FOLLOWUP_TRIES)
                        followup_add(u, f.tgid, f.start, f.tries + 1);
                n = u->n_followups;
        }
        return 0;
}

/* One request, on the worker. */
static int handle_request(unwinder *u, const struct request *q) {
        struct uproc *p = NULL;
        bool same = false;

        if (hashmap_get(u->procs, UINT64_TO_KEY(q->tgid), (void **) &p) == 0)
                same = p->tick_ns ? p->start == q->start_ns / p->tick_ns : p->start == q->start_ns;
        if (p && !same) {
                /* pid reuse: the old instance is gone */
                proc_drop(u, p, false);
                p = NULL;
        }
        if (q->type == PROFD_EVENT_UNWIND_MISS) {
                pthread_mutex_lock(&u->lock);
                u->stats.misses++;
                pthread_mutex_unlock(&u->lock);
        }
        if (p) {
                if (q->type == PROFD_EVENT_NEW_PROCESS) {
                        struct profd_unwind_proc entry = {
                                .start_ns = q->start_ns, .maps_off = p->maps_off, .maps_n = p->maps_n,
                                .version = ++u->versions,
                        };

                        if (!p->tick_ns)
                                return 0; /* known */
                        /* found in /proc at start: now its exact start is known */
                        if (bpf_map_update_elem(u->maps.procs_fd, &q->tgid, &entry, BPF_ANY) == 0) {
                                procs_changed(u);
                                p->start = q->start_ns;
                                p->tick_ns = 0;
                        }
                        return 0;
                }
                /* a new image: its first miss is a first one again (a miss
                 * taken between the exec and its event, with the old
                 * image's mappings, must not hold back the new image's) */
                if (q->type == PROFD_EVENT_EXEC) {
                        p->miss_ns = p->miss_interval_ns = 0;
                        p->miss_deferred = false;
                }
                /* the first miss is reloaded at once: at exec only the
                 * binary and the dynamic linker were mapped, the libraries
                 * come moments later */
                if (q->type == PROFD_EVENT_UNWIND_MISS && p->miss_ns && mono_ns() - p->miss_ns < miss_interval(p)) {
                        /* the sweep does it, brought forward to when it is due */
                        p->miss_deferred = true;
                        if (u->next_sweep_ns > p->miss_ns + miss_interval(p))
                                u->next_sweep_ns = p->miss_ns + miss_interval(p);
                        return 0;
                }
        }
        {
                uint64_t t0 = mono_ns();
                /* A process found in /proc at start keeps its start in
                 * ticks until its announcement (NEW_PROCESS, above) gives
                 * the exact one: the sampler takes an entry with the exact
                 * start as a sign that the process was announced, and
                 * announces it no more (user_stack_unwind in
                 * bpf/unwind.bpf.h). A miss is no announcement. */
                bool ticks = p && p->tick_ns && q->type == PROFD_EVENT_UNWIND_MISS;
                int r = proc_load(u, q->tgid, ticks ? p->start : q->start_ns, ticks ? p->tick_ns : 0);

                if (r >= 0 && q->type == PROFD_EVENT_UNWIND_MISS &&
                    hashmap_get(u->procs, UINT64_TO_KEY(q->tgid), (void **) &p) == 0)
                        miss_reloaded(p, mono_ns());
                if (r >= 0 && q->type == PROFD_EVENT_EXEC &&
                    hashmap_get(u->procs, UINT64_TO_KEY(q->tgid), (void **) &p) == 0 && awaits_libraries(p))
                        followup_add(u, q->tgid, q->start_ns, 0);

                log_debug("Unwind tables of pid %" PRIu32 " (event %" PRIu32 ") published %" PRIu64 " ms after the "
                          "request, in %" PRIu64 " ms.", q->tgid, q->type, (uint64_t) ((mono_ns() - q->queued_ns) / NSEC_PER_MSEC),
                          (uint64_t) ((mono_ns() - t0) / NSEC_PER_MSEC));
                return r;
        }
}

/* Forgets processes that exited; does deferred misses. */
static int sweep(unwinder *u) {
        _cleanup_free_ uint32_t *gone = NULL, *due = NULL;
        size_t n_gone = 0, n_due = 0, i = 0, n = hashmap_size(u->procs);
        uint64_t now = mono_ns();
        const void *k;
        void *v;
        int r;

        gone = calloc(n + 1, sizeof(*gone));
        due = calloc(n + 1, sizeof(*due));
        if (!gone || !due)
                return -ENOMEM;
        while (hashmap_iterate(u->procs, &i, &k, &v)) {
                struct uproc *p = v;

                if (!proc_alive(u, p->tgid, p->start, p->tick_ns))
                        gone[n_gone++] = p->tgid;
                else if (p->miss_deferred && now - p->miss_ns >= miss_interval(p))
                        due[n_due++] = p->tgid;
        }
        for (i = 0; i < n_gone; i++)
                if (hashmap_get(u->procs, UINT64_TO_KEY(gone[i]), &v) == 0)
                        proc_drop(u, v, true);
        for (i = 0; i < n_due; i++) {
                struct uproc *p;

                if (hashmap_get(u->procs, UINT64_TO_KEY(due[i]), (void **) &p) < 0)
                        continue;
                r = proc_load(u, p->tgid, p->start, p->tick_ns);
                if (r < 0)
                        return r;
                if (hashmap_get(u->procs, UINT64_TO_KEY(due[i]), (void **) &p) == 0)
                        miss_reloaded(p, now);
        }
        while (u->n_unused > UNUSED_FILES_MAX)
                evict(u, u->lru_head);
        rangealloc_reclaim(u->rows_alloc, now);
        rangealloc_reclaim(u->maps_alloc, now);
        return 0;
}

/* Lists every process running when profd starts, to be loaded a few at a
 * time between requests (a new process's request never waits for the whole
 * host). */
static int scan_list(unwinder *u) {
        DIR *d = opendir(u->proc_root);
        struct dirent *de;
        size_t cap = 0;

        if (!d) {
                log_warning_errno(negative_errno(), "Failed to list %s, ignoring: %m", u->proc_root);
                return 0;
        }
        while ((de = readdir(d))) {
                uint64_t pid;

                if (parse_uint_strict(de->d_name, UINT32_MAX, &pid) < 0 || pid == 0)
                        continue;
                if (u->n_scan == cap) {
                        uint32_t *a = realloc(u->scan, (cap = cap ? cap * 2 : 256) * sizeof(*a));

                        if (!a) {
                                closedir(d);
                                return -ENOMEM;
                        }
                        u->scan = a;
                }
                u->scan[u->n_scan++] = (uint32_t) pid;
        }
        closedir(d);
        return 0;
}

/* Loads the next few listed processes, by their start in clock ticks until
 * their first event gives the exact one. */
static int scan_some(unwinder *u, size_t max) {
        void *v;
        int r = 0;

        for (size_t k = 0; r >= 0 && k < max && u->scan_next < u->n_scan; k++) {
                uint32_t pid = u->scan[u->scan_next++];
                uint64_t ticks;

                if (hashmap_get(u->procs, UINT64_TO_KEY(pid), &v) == 0)
                        continue; /* an event was quicker */
                if (proc_start_ticks(u, pid, &ticks) < 0)
                        continue;
                r = proc_load(u, pid, ticks, (uint32_t) u->tick_ns);
        }
        if (u->scan_next >= u->n_scan) {
                u->scan = mfree_u32(u->scan);
                u->n_scan = u->scan_next = 0;
        }
        return r;
}

/* Builds the oldest pending table, then publishes again every process
 * that maps it. */
static int build_next(unwinder *u) {
        struct ufile *f = u->builds[0];
        _cleanup_free_ uint32_t *tgids = NULL;
        size_t n = 0, i = 0;
        const void *k;
        void *v;
        int r = 0;

        memmove(u->builds, u->builds + 1, --u->n_builds * sizeof(*u->builds));
        f->pending = false;
        for (size_t p = 0; p < ELEMENTSOF(f->paths); p++) {
                _cleanup_close_ int fd = f->paths[p] ? open(f->paths[p], O_RDONLY | O_CLOEXEC | O_NOCTTY) : -EBADF;
                struct file_key key;
                struct stat st;
                Elf *elf;

                /* the process that mapped it may be gone: the same file by
                 * another way, if it is the same file */
                if (fd < 0 || fstat(fd, &st) < 0)
                        continue;
                key = file_key_from_stat(&st);
                if (!file_key_eq(&key, &f->key) || open_elf(fd, &elf) < 0)
                        continue;
                file_build(u, f, elf, fd, f->paths[2]);
                elf_end(elf);
                break;
        }
        file_unreserve(u, f); /* not built: the file is gone */
        for (size_t p = 0; p < ELEMENTSOF(f->paths); p++) {
                free(f->paths[p]);
                f->paths[p] = NULL;
        }

        tgids = calloc(hashmap_size(u->procs) + 1, sizeof(*tgids));
        if (!tgids) {
                file_unref(u, f, mono_ns());
                return -ENOMEM;
        }
        while (hashmap_iterate(u->procs, &i, &k, &v)) {
                struct uproc *p = v;

                for (size_t j = 0; j < p->n_files; j++)
                        if (p->files[j] == f) {
                                tgids[n++] = p->tgid;
                                break;
                        }
        }
        for (i = 0; r >= 0 && i < n; i++) {
                struct uproc *p;

                if (hashmap_get(u->procs, UINT64_TO_KEY(tgids[i]), (void **) &p) == 0)
                        r = proc_load(u, p->tgid, p->start, p->tick_ns);
        }
        file_unref(u, f, mono_ns());
        return r;
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
        u->stats.kernel_bytes = rows * sizeof(struct profd_unwind_row) + maps * sizeof(struct profd_unwind_mapping) +
                                u->stats.processes * (sizeof(uint32_t) + sizeof(struct profd_unwind_proc));
        pthread_mutex_unlock(&u->lock);
}

static void *worker(void *userdata) {
        unwinder *u = userdata;
        bool scanned = false;
        int r = 0;

        /* named, so top -H and profd's tests tell the threads apart */
        (void) pthread_setname_np(pthread_self(), "profd-unwind");

        for (;;) {
                struct request *q = NULL;
                size_t n_q = 0;
                uint64_t now = mono_ns();

                pthread_mutex_lock(&u->lock);
                if (scanned && !u->stop && u->n_queue == 0 && u->n_builds == 0 && u->n_scan == 0 &&
                    now < MIN(u->next_sweep_ns, followup_next_ns(u))) {
                        struct timespec until;
                        uint64_t wait_ns = MIN(u->next_sweep_ns, followup_next_ns(u)) - now;

                        clock_gettime(CLOCK_MONOTONIC, &until);
                        until.tv_sec += wait_ns / NSEC_PER_SEC;
                        until.tv_nsec += wait_ns % NSEC_PER_SEC;
                        if (until.tv_nsec >= (long) NSEC_PER_SEC) {
                                until.tv_sec++;
                                until.tv_nsec -= NSEC_PER_SEC;
                        }
                        (void) pthread_cond_timedwait(&u->wake, &u->lock, &until);
                }
                if (u->stop) {
                        pthread_mutex_unlock(&u->lock);
                        break;
                }
                q = TAKE_PTR(u->queue);
                n_q = u->n_queue;
                u->n_queue = u->cap_queue = 0;
                pthread_mutex_unlock(&u->lock);

                for (size_t i = 0; r >= 0 && i < n_q; i++)
                        r = handle_request(u, &q[i]);
                free(q);
                if (r >= 0 && u->n_followups > 0)
                        r = followups_run(u);
                if (r >= 0 && !scanned) {
                        r = scan_list(u);
                        scanned = true;
                }
                /* a few at a time: requests of new processes go first */
                if (r >= 0 && u->n_scan > 0)
                        r = scan_some(u, 2);
                /* one large table at a time, requests in between; status
                 * shows it queued while it is built (seconds) */
                if (r >= 0 && u->n_builds > 0) {
                        publish_stats(u);
                        r = build_next(u);
                }
                if (r >= 0 && mono_ns() >= u->next_sweep_ns) {
                        r = sweep(u);
                        u->next_sweep_ns = mono_ns() + SWEEP_NS;
                }
                publish_stats(u);
                /* Building tables leaves megabytes of small free chunks
                 * (libdw's CFI caches, the rows) in this thread's arena,
                 * which glibc keeps resident; a host's first scan alone
                 * left 19 MiB there. Given back when the builds are over,
                 * not between two of them. */
                if (r >= 0 && u->trim_due && u->n_builds == 0 && u->n_scan == 0) {
                        bool idle;

                        pthread_mutex_lock(&u->lock);
                        idle = u->n_queue == 0;
                        pthread_mutex_unlock(&u->lock);
                        if (idle) {
                                heap_trim();
                                u->trim_due = false;
                        }
                }
                if (r < 0) {
                        log_error_errno(r, "The unwinder ran out of memory; processes from now on are walked by "
                                           "frame pointers: %m");
                        break;
                }
        }
        return NULL;
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
        pthread_mutex_init(&u->lock, NULL);
        {
                /* the worker's deadlines are CLOCK_MONOTONIC (the default,
                 * CLOCK_REALTIME, would read them as 1970: every wait would
                 * time out at once and the worker spin) */
                pthread_condattr_t monotonic;

                pthread_condattr_init(&monotonic);
                pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
                pthread_cond_init(&u->wake, &monotonic);
                pthread_condattr_destroy(&monotonic);
        }
        if (u->loaded_fd < 0) {
                r = negative_errno();
                unwinder_free(u);
                return r;
        }
        if (!u->proc_root || !u->rows_alloc || !u->maps_alloc || !u->files || !u->procs) {
                unwinder_free(u);
                return -ENOMEM;
        }
        r = -pthread_create(&u->thread, NULL, worker, u);
        if (r < 0) {
                unwinder_free(u);
                return r;
        }
        u->started = true;
        *ret = u;
        return 0;
}

unwinder *unwinder_free(unwinder *u) {
        const void *k;
        void *v;
        size_t i = 0;

        if (!u)
                return NULL;
        if (u->started) {
                pthread_mutex_lock(&u->lock);
                u->stop = true;
                pthread_cond_signal(&u->wake);
                pthread_mutex_unlock(&u->lock);
                pthread_join(u->thread, NULL);
        }
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
        /* the queue's references: the files are freed with the cache */
        free(u->builds);
        free(u->scan);
        free(u->followups);
        ufile_free(u->vdso);
        if (u->vdso_elf)
                elf_end(u->vdso_elf);
        rangealloc_free(u->rows_alloc);
        rangealloc_free(u->maps_alloc);
        pthread_cond_destroy(&u->wake);
        pthread_mutex_destroy(&u->lock);
        free(u->queue);
        free(u->loaded);
        safe_close(u->loaded_fd);
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

void unwinder_request(unwinder *u, uint32_t tgid, uint64_t start_ns, uint32_t event_type) {
        if (!u)
                return;
        pthread_mutex_lock(&u->lock);
        if (u->n_queue == u->cap_queue) {
                size_t nc = u->cap_queue ? u->cap_queue * 2 : 64;
                struct request *q = realloc(u->queue, nc * sizeof(*q));

                if (!q) {
                        pthread_mutex_unlock(&u->lock);
                        return;
                }
                u->queue = q;
                u->cap_queue = nc;
        }
        u->queue[u->n_queue++] = (struct request) {
                .tgid = tgid, .type = event_type, .start_ns = start_ns, .queued_ns = mono_ns(),
        };
        pthread_cond_signal(&u->wake);
        pthread_mutex_unlock(&u->lock);
}

void unwinder_get_stats(unwinder *u, struct unwinder_stats *ret) {
        pthread_mutex_lock(&u->lock);
        *ret = u->stats;
        pthread_mutex_unlock(&u->lock);
}
