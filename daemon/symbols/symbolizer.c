/* The symbolizer: the budgeted (LRU) cache of file objects by stat key and build-id, debug-file settings, and the kernel's table. */
#include "symbolizer.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "debug-file.h"
#include "elf-symbols.h"
#include "hashmap.h"
#include "helpers.h"
#include "kallsyms.h"
#include "macro.h"

/* The heap, not the debug files' size: DWARF sections are mapped (see
 * dwarf_index_open), and what stays in the heap is the symbol tables of
 * every library of a busy host (a few hundred KiB each) and, for open
 * DWARF, the line tables and scope trees of the CUs asked about (libc's
 * full index is ~25 MiB, a drain's share a few hundred KiB); over budget
 * the DWARF is closed first, and the store answers what it had resolved.
 * The daemon's default is conf.h's CONF_DEFAULT_SYMBOL_CACHE_MIB. */
#define CACHE_BUDGET_DEFAULT (UINT64_C(5) << 20)

struct symbolizer {
        hashmap *by_stat; /* struct file_key * (owned by the file) -> sym_file * */
        hashmap *by_build_id; /* the file's build-id -> sym_file * */
        sym_file **files; /* owns every sym_file exactly once; the maps may alias one file */
        size_t n_files;
        size_t n_files_allocated;
        struct debug_search debug;
        uint64_t budget;
        uint64_t tick; /* LRU clock */
        uint64_t bound_tick; /* tick at the last symbolizer_bound (files used after it are in use) */
        uint64_t generation; /* bumped by every trim that evicted a file a tracked process may map */
        bool marking; /* symbolizer_mark_begin was called since the last trim */
        char *scratch_dir; /* where DWARF copies go; NULL: DWARF is read into the heap */
        uint64_t peak_bytes; /* see symbolizer_peak_bytes */
        struct kernel_table kernel;
};

/* A file's DWARF unused this long is closed at the next trim. Short, since
 * what it answered is in the store (the writer asks there first) and a
 * reopen costs little: libc's is copied and mapped in about 50 ms, and only
 * the CUs then asked for are read again. */
#define DWARF_IDLE_NS (UINT64_C(60) * 1000000000)

/* Trims in a row at which no tracked process mapped a file before it is
 * evicted whatever the budget: a minute at the default drain interval. A
 * build host runs thousands of programs that exit within seconds (each
 * rebuild a new file); without this their symbol tables filled the budget
 * and stayed. A process mapping it again later loads it again (a few ms
 * for a symbol table; what DWARF answered is in the store). */
#define UNMAPPED_TRIMS_MAX 6

int symbolizer_new(symbolizer **ret) {
        symbolizer *s;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->budget = CACHE_BUDGET_DEFAULT;
        s->by_stat = hashmap_new(file_key_hash, file_key_eq);
        s->by_build_id = hashmap_new_string();
        if (!s->by_stat || !s->by_build_id || debug_search_init(&s->debug) < 0) {
                symbolizer_free(s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

symbolizer *symbolizer_free(symbolizer *s) {
        if (!s)
                return NULL;
        hashmap_free(s->by_stat); /* its keys belong to the files */
        hashmap_free(s->by_build_id); /* and so do these */
        for (size_t i = 0; i < s->n_files; i++)
                sym_file_free(s->files[i]);
        free(s->files);
        debug_search_done(&s->debug);
        kernel_table_done(&s->kernel);
        free(s->scratch_dir);
        free(s);
        return NULL;
}

int symbolizer_enable_debuginfod(symbolizer *s) {
        return debug_search_enable_debuginfod(&s->debug);
}

int symbolizer_set_debug_dirs(symbolizer *s, const char *const *dirs) {
        return debug_search_set_dirs(&s->debug, dirs);
}

void symbolizer_set_cache_budget(symbolizer *s, uint64_t bytes) {
        s->budget = bytes;
}

int symbolizer_set_scratch_dir(symbolizer *s, const char *dir) {
        char *copy = NULL;

        if (dir) {
                copy = strdup(dir);
                if (!copy)
                        return -ENOMEM;
        }
        free(s->scratch_dir);
        s->scratch_dir = copy;
        return 0;
}

int symbolizer_forget_stored(symbolizer *s) {
        int r;

        for (size_t i = 0; i < s->n_files; i++) {
                r = sym_file_forget_stored(s->files[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

uint64_t symbolizer_generation(const symbolizer *s) {
        return s->generation;
}

/* Adds the new file f to the cache under its build-id (if any) and key.
 * Returns 0, or -ENOMEM: f is then freed unless it was added, which a
 * failure to index the key does not undo (the next load then reads the
 * build-id again). */
static int symbolizer_add(symbolizer *s, sym_file *f, const struct file_key *key) {
        _cleanup_(sym_file_freep) sym_file *owned = f;
        const char *build_id = sym_file_build_id(f);
        int r;

        r = array_grow((void **) &s->files, &s->n_files_allocated, s->n_files + 1, sizeof(*s->files));
        if (r < 0)
                return r;
        if (build_id) {
                r = hashmap_put(s->by_build_id, build_id, f);
                if (r < 0)
                        return r;
        }
        s->files[s->n_files++] = TAKE_PTR(owned);
        sym_file_touch(f);
        return sym_file_index_key(f, s->by_stat, key);
}

int symbolizer_load_file_at(symbolizer *s, const char *open_path, const char *root_prefix,
                            const char *display_path, const sym_file **ret) {
        /* O_NONBLOCK so that a FIFO at this path cannot hang the daemon. */
        int fd = open(open_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

        if (fd < 0)
                return negative_errno();
        return symbolizer_load_file_fd(s, fd, root_prefix, display_path ?: open_path, ret);
}

int symbolizer_load_file_fd(symbolizer *s, int fd_in, const char *root_prefix, const char *display_path,
                            const sym_file **ret) {
        _cleanup_(elf_endp) Elf *e = NULL;
        _cleanup_close_ int fd = fd_in;
        _cleanup_free_ char *build_id = NULL;
        sym_file *f;
        struct file_key key;
        GElf_Ehdr ehdr;
        struct stat st;
        void *cached;
        int r;

        if (root_prefix && (!root_prefix[0] || streq(root_prefix, "/")))
                root_prefix = NULL;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -ENOEXEC;

        key = file_key_from_stat(&st);
        if (hashmap_get(s->by_stat, &key, &cached) >= 0) {
                sym_file_touch(cached);
                *ret = cached;
                return 0;
        }

        if (elf_version(EV_CURRENT) == EV_NONE)
                return -EOPNOTSUPP;
        /* ELF_C_READ rather than mmap: a file truncated under us then gives
         * short reads, not SIGBUS. */
        e = elf_begin(fd, ELF_C_READ, NULL);
        if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &ehdr))
                return -ENOEXEC;
        r = elf_check_headers(e, &ehdr);
        if (r < 0)
                return r;

        r = elf_read_build_id(e, &build_id);
        if (r < 0)
                return r;
        if (build_id && hashmap_get(s->by_build_id, build_id, &cached) >= 0) {
                /* Same contents under another inode (a copy, a container's
                 * layer): remember this inode too, so next time costs a stat. */
                r = sym_file_index_key(cached, s->by_stat, &key);
                if (r < 0)
                        return r;
                sym_file_touch(cached);
                *ret = cached;
                return 0;
        }

        r = sym_file_new(&(struct sym_file_origin) {
                                 .owner = s,
                                 .clock = &s->tick,
                                 .scratch_dir = (const char *const *) &s->scratch_dir,
                                 .debug = &s->debug,
                                 .root_prefix = root_prefix,
                                 .display_path = display_path,
                         },
                         e, &fd, &st, &build_id, &f);
        if (r < 0)
                return r;
        r = symbolizer_add(s, f, &key);
        if (r < 0)
                return r;
        *ret = f;
        return 0;
}

int symbolizer_lookup_key(symbolizer *s, const struct file_key *key, const sym_file **ret) {
        void *cached;

        if (hashmap_get(s->by_stat, key, &cached) < 0)
                return -ENOENT;
        sym_file_touch(cached);
        *ret = cached;
        return 0;
}

int symbolizer_load_file(symbolizer *s, const char *open_path, const sym_file **ret) {
        return symbolizer_load_file_at(s, open_path, NULL, open_path, ret);
}

/* What the budget bounds: the files. */
static uint64_t symbolizer_files_bytes(const symbolizer *s) {
        uint64_t total = 0;

        for (size_t i = 0; i < s->n_files; i++)
                total += sym_file_bytes(s->files[i]);
        return total;
}

uint64_t symbolizer_cache_bytes(const symbolizer *s) {
        /* The kernel's table is symbols too (~5 MiB) but outside the
         * budget: counted in it, it left the files 11 of the then default
         * 16 MiB, and the files of a quiet host's processes were evicted
         * after every drain and read again at once (143 evictions in 70 s,
         * and no less RSS). */
        return kernel_table_bytes(&s->kernel) + symbolizer_files_bytes(s);
}

/* After DWARF was closed or files evicted: glibc keeps freed memory in the
 * calling thread's arena (the writer's is not the main one, which alone is
 * trimmed on its own), so without this the heap a file's DWARF held stays
 * resident. A walk of the arenas: cheap next to what was freed. */
static void symbolizer_give_back(size_t n_freed) {
        if (n_freed > 0)
                (void) malloc_trim(0);
}

uint64_t symbolizer_mapped_bytes(const symbolizer *s) {
        uint64_t total = 0;

        for (size_t i = 0; i < s->n_files; i++)
                total += sym_file_mapped_bytes(s->files[i]);
        return total + kernel_table_mapped_bytes(&s->kernel);
}

uint64_t symbolizer_peak_bytes(const symbolizer *s) {
        return s->peak_bytes;
}

int64_t symbolizer_release_copies(symbolizer *s) {
        int64_t total, r;

        total = kernel_table_unmap(&s->kernel);
        if (total < 0)
                return total;
        for (size_t i = 0; i < s->n_files; i++) {
                r = sym_file_release_copy(s->files[i]);
                if (r < 0)
                        return r;
                total += r;
        }
        symbolizer_give_back(1);
        return total;
}

static int sym_file_compare_last_used(const void *a, const void *b) {
        uint64_t x = sym_file_last_used(*(const sym_file *const *) a);
        uint64_t y = sym_file_last_used(*(const sym_file *const *) b);

        return x < y ? -1 : x > y;
}

/* Sorts the files oldest first (the array has no order of its own, so
 * that one is as good as any) and closes the DWARF of the first n_oldest,
 * oldest first, that were last used at or before tick, while *total, the
 * files' bytes, is over limit. Returns the number closed. */
static size_t close_oldest_dwarf(symbolizer *s, uint64_t *total, size_t n_oldest, uint64_t tick, uint64_t limit) {
        size_t n_closed = 0;

        qsort(s->files, s->n_files, sizeof(*s->files), sym_file_compare_last_used);
        for (size_t i = 0; i < MIN(n_oldest, s->n_files) && *total > limit; i++) {
                sym_file *f = s->files[i];
                uint64_t before = sym_file_bytes(f);

                if (sym_file_last_used(f) > tick)
                        break; /* sorted: the rest were used later still */
                if (sym_file_close_dwarf(f) > 0) {
                        *total -= before - sym_file_bytes(f);
                        n_closed++;
                }
        }
        return n_closed;
}

/* How far over the budget a drain's DWARF in use may take the cache
 * between two bounds, as a share of the budget (1/BOUND_HEADROOM_SHARE).
 * On a build host the symbol tables of the files mapped by tracked
 * processes are most of the 5 MiB budget, so any DWARF put it over: the
 * bound every 64 keys closed each file's DWARF but the last used, and the
 * next key of a test program read its CU's scope tree and lines again
 * (docs/performance.md, "The daemon on a build host"). DWARF used since
 * the last bound now stays open up to this much over the budget; the
 * drain's end (symbolizer_trim) holds the cache to the budget itself. */
#define BOUND_HEADROOM_SHARE 4

size_t symbolizer_bound(symbolizer *s) {
        uint64_t total = symbolizer_files_bytes(s), since = s->bound_tick;
        size_t n_closed;

        s->bound_tick = s->tick;
        if (total <= s->budget)
                return 0;
        s->peak_bytes = MAX(s->peak_bytes, symbolizer_cache_bytes(s) + symbolizer_mapped_bytes(s));
        /* Never the file used last: the next frame is likely its own.
         * First the files no key used since the last bound, down to the
         * budget; then, only over the headroom, those in use too. The heap
         * freed is reused by the drain's next DWARF; the drain's end trims
         * it (a malloc_trim here, every 64 keys, was 3% of the daemon's
         * CPU on a build host). */
        n_closed = close_oldest_dwarf(s, &total, s->n_files - 1, since, s->budget);
        if (total > s->budget + s->budget / BOUND_HEADROOM_SHARE)
                n_closed += close_oldest_dwarf(s, &total, s->n_files - 1, UINT64_MAX,
                                               s->budget + s->budget / BOUND_HEADROOM_SHARE);
        return n_closed;
}

/* Unlinks f from the symbolizer's maps and frees it. */
static void symbolizer_evict(symbolizer *s, sym_file *f) {
        sym_file_unindex(f, s->by_stat, s->by_build_id);
        sym_file_free(f);
}

void symbolizer_drop_pages(symbolizer *s) {
        kernel_table_drop_pages(&s->kernel);
        for (size_t i = 0; i < s->n_files; i++)
                sym_file_drop_pages(s->files[i]);
}

void symbolizer_mark_begin(symbolizer *s) {
        s->marking = true;
}

void symbolizer_mark_mapped(symbolizer *s, const sym_file *f) {
        if (f)
                sym_file_set_mapped(f);
}

/* With marking: evicts the files no tracked process mapped at the last
 * UNMAPPED_TRIMS_MAX trims, and closes the DWARF of those none mapped at
 * this one (the process table keeps a process until its last samples are
 * written, so none still to come can fall in them; a process mapping the
 * file again soon finds its symbol table, and its DWARF is opened again if
 * it is asked). No pointer to them is held (the marks say so), so the
 * generation stays. Returns the number evicted; *n_closed counts the
 * DWARF closed. */
static size_t symbolizer_evict_unmapped(symbolizer *s, size_t *n_closed) {
        size_t n_kept = 0, n_evicted = 0;

        if (!s->marking)
                return 0;
        s->marking = false;
        for (size_t i = 0; i < s->n_files; i++) {
                sym_file *f = s->files[i];
                unsigned n = sym_file_count_unmapped(f);

                if (n >= UNMAPPED_TRIMS_MAX) {
                        symbolizer_evict(s, f);
                        n_evicted++;
                        continue;
                }
                /* no sample still to be written can fall in it */
                if (n > 0)
                        *n_closed += sym_file_close_dwarf(f) > 0;
                s->files[n_kept++] = f;
        }
        s->n_files = n_kept;
        return n_evicted;
}

size_t symbolizer_trim(symbolizer *s) {
        struct timespec ts;
        uint64_t total, now_ns;
        size_t n_evicted = 0, n_kept = 0, n_closed = 0, n_unmapped;
        bool marked = s->marking;

        /* Idle DWARF goes whatever the budget; the pages of the rest are
         * given back (the next drain faults in what it reads). */
        s->peak_bytes = MAX(s->peak_bytes, symbolizer_cache_bytes(s) + symbolizer_mapped_bytes(s));
        clock_gettime(CLOCK_MONOTONIC, &ts);
        now_ns = (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
        kernel_table_drop_pages(&s->kernel);
        n_unmapped = symbolizer_evict_unmapped(s, &n_closed);
        for (size_t i = 0; i < s->n_files; i++) {
                sym_file *f = s->files[i];

                if (sym_file_dwarf_is_open(f) && now_ns - sym_file_dwarf_used_ns(f) >= DWARF_IDLE_NS)
                        n_closed += sym_file_close_dwarf(f) > 0;
                sym_file_drop_pages(f);
        }

        total = symbolizer_files_bytes(s);
        if (total <= s->budget) {
                symbolizer_give_back(n_closed + n_unmapped);
                return n_unmapped;
        }
        /* First the DWARF, which is most of the memory and which the
         * store's answers make rarely needed again; then whole files. */
        n_closed += close_oldest_dwarf(s, &total, s->n_files, UINT64_MAX, s->budget);
        /* Then whole files; with marking only those no tracked process
         * maps: the others would be read again at once for the processes
         * that map them (their symbol tables are what the budget cannot
         * go below), and their eviction would move the generation. */
        for (size_t i = 0; i < s->n_files; i++) {
                sym_file *f = s->files[i];

                if (total > s->budget && (!marked || sym_file_unmapped_trims(f) > 0)) {
                        total -= sym_file_bytes(f);
                        symbolizer_evict(s, f);
                        n_evicted++;
                } else
                        s->files[n_kept++] = f;
        }
        s->n_files = n_kept;
        if (n_evicted > 0 && !marked)
                s->generation++;
        symbolizer_give_back(n_closed + n_evicted + n_unmapped);
        return n_evicted + n_unmapped;
}

int symbolizer_load_kallsyms(symbolizer *s, const char *path) {
        int r = kernel_table_load(&s->kernel, path);

        /* out of the heap, as the DWARF copies: 5 MiB held for as long
         * as profd runs, of which a drain reads a few pages; without room
         * next to the store it stays in the heap (status shows which:
         * symbol_cache_bytes or symbol_mapped_bytes) */
        if (r >= 0 && s->scratch_dir)
                (void) kernel_table_map(&s->kernel, s->scratch_dir);
        return r;
}

bool symbolizer_kernel_covers(symbolizer *s, const struct kernel_range *own, size_t n_own, uint64_t addr) {
        return kernel_table_covers(&s->kernel, own, n_own, addr);
}

const char *symbolizer_lookup_kernel(symbolizer *s, uint64_t addr, const char **ret_module) {
        return kernel_table_lookup(&s->kernel, addr, ret_module);
}
