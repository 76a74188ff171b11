/* The unwinder's file-table cache (unwind-files.h): the unused-file list,
 * room for rows and its reservation, building a table into the kernel's
 * rows, and the queue of large tables built later. */
#include "unwind-files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "hotspot.h"
#include "log.h"
#include "macro.h"
#include "python.h"
#include "unwind-procs.h"
#include "runtime.h"
#include "table-lru.h"
#include "table-pack.h"
#include "unwind-table.h"

/* --- the unused-file list ------------------------------------------------ */

static void lru_unlink(unwinder *u, struct ufile *f) {
        u->n_unused--;
        dlist_unlink(&u->unused, &f->unused);
}

void ufile_ref(unwinder *u, struct ufile *f) {
        if (f->refs++ == 0)
                lru_unlink(u, f);
}

void ufile_unref(unwinder *u, struct ufile *f, uint64_t now) {
        if (--f->refs > 0)
                return;
        f->unref_ns = now;
        u->n_unused++;
        dlist_push_tail(&u->unused, &f->unused);
}

void ufile_free(struct ufile *f) {
        if (!f)
                return;
        for (size_t i = 0; i < ELEMENTSOF(f->paths); i++)
                free(f->paths[i]);
        free(f->biases);
        free(f);
}

void ufile_release_runtime(unwinder *u, struct ufile *f) {
        unwinder_runtime_remove(u, f->rt_slot);
        f->rt_slot = 0;
}

/* Drops unused file f from the cache, its rows freed as of the moment the
 * last process stopped using them (so their grace may be over already). */
void ufile_evict(unwinder *u, struct ufile *f) {
        bool table = f->values > 0;

        lru_unlink(u, f);
        (void) hashmap_remove(u->files, &f->key);
        ufile_release_runtime(u, f);
        if (table)
                rangealloc_release(u->rows_alloc, f->off, f->values, f->unref_ns);
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
        struct ufile *f;
        uint32_t off;
        size_t k = 0;
        int r;

        rangealloc_reclaim(u->rows_alloc, now);
        if (rangealloc_alloc(u->rows_alloc, n, ret_off) >= 0)
                return 0;
        spare = calloc(u->n_unused + 1, sizeof(*spare));
        if (!spare)
                return -ENOMEM;
        DLIST_FOREACH_SAFE(&u->unused, f, struct ufile, unused)
                if (f->values > 0)
                        spare[k++] = (struct rangealloc_spare) { f->off, f->values, f->unref_ns };
        r = rangealloc_find_room(u->rows_alloc, n, spare, k, now, &off);
        if (r < 0)
                return r;
        DLIST_FOREACH_SAFE(&u->unused, f, struct ufile, unused)
                if (f->values > 0 && f->off < off + n && off < f->off + f->values)
                        ufile_evict(u, f);
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

/* Where a compact table's slots go as the packer hands them over: into
 * its slice of unwind_rows, value off on, two slots to a value. */
struct pack_out {
        unwinder *u;
        uint32_t off;
};

static int pack_out_write(void *userdata, size_t at, const uint32_t *slots, size_t n) {
        struct pack_out *o = userdata;

        /* slot numbers fit 32 bits: unwind_memory is at most 4 GiB, 2^30 slots */
        return unwinder_array_write(o->u, o->u->maps.rows_fd, sizeof(*slots), 2 * o->off + (uint32_t) at, slots, n);
}

static void table_pack_freep(struct table_pack **p) {
        if (!*p)
                return;
        table_pack_done(*p);
        free(*p);
}

/* Builds the compact table of elf (table-pack.h) into the kernel's
 * unwind_rows. Its FDEs tell how many rows it can have and its span how
 * many 64 KiB pages: room for the slots that can take with up to
 * TABLE_PACK_PLAN_RULES rules (table_pack_plan) is found first, and the
 * rows are packed as libdw yields them and written a piece at a time:
 * libLLVM's 950 k rows are never all in the heap (they were, with libdw's
 * FDEs, a 15 MiB peak of RSS), and a table that finds no room is not read
 * at all. What the table does not use (the bound's excess over the rows
 * kept, 1-3% in large files, and the rules' room it left) is given back.
 * A table with more rules than that is built again at once with room for
 * PROFD_PACK_RULES_MAX (f->rules_wide, kept for its later builds). fd:
 * the file elf reads (-1 for the vDSO), which the reader maps itself
 * (unwind_reader_new). On failure the file is kept with no table (frame
 * pointers) when the failure is the file's own, and the reason counted. */
static void file_build(unwinder *u, struct ufile *f, Elf *elf, int fd, const char *what) {
        _cleanup_(unwind_reader_freep) unwind_reader *reader = NULL;
        _cleanup_(table_pack_freep) struct table_pack *pack = NULL;
        struct pack_out out = { .u = u };
        struct unwind_table counts;
        uint64_t t0 = mono_ns();
        uint32_t first, last;
        size_t planned, used, slots = 0;
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
        unwind_reader_span(reader, &first, &last);
        planned = (table_pack_plan(unwind_reader_bound(reader), first, last,
                                   f->rules_wide ? PROFD_PACK_RULES_MAX : TABLE_PACK_PLAN_RULES) + 1) / 2;
        if (f->resv_n == planned) {
                out.off = f->resv_off;
                f->resv_n = 0;
                r = 0;
        } else {
                file_unreserve(u, f);
                r = rows_room(u, (uint32_t) planned, &out.off);
        }
        if (r == -ENOSPC) {
                log_debug("No room for the %zu unwind values of %s (unwind_memory), walking it by frame pointers.",
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
        if (r >= 0) {
                /* the packer keeps a 16 KiB piece: not on the worker's stack */
                pack = malloc(sizeof(*pack));
                r = pack ? table_pack_begin(pack, first, last, 2 * planned, pack_out_write, &out) : -ENOMEM;
                if (r < 0) {
                        free(pack);
                        pack = NULL;
                }
        }
        if (r >= 0)
                r = unwind_reader_rows(reader, table_pack_add, pack, &counts);
        if (r >= 0)
                r = table_pack_end(pack, &slots);
        if (r < 0 && room)
                /* slots may have been written: released as of now */
                rangealloc_release(u->rows_alloc, out.off, (uint32_t) planned, mono_ns());
        if (r == -E2BIG && !f->rules_wide) {
                /* more rules than the first plan's room (or than a row
                 * can name, which the wide plan finds again): once more,
                 * with room for every rule, the reader and packer freed */
                log_debug("The unwind table of %s has more than %d rules, building it again with room for %d.", what,
                          TABLE_PACK_PLAN_RULES, PROFD_PACK_RULES_MAX);
                f->rules_wide = true;
                reader = unwind_reader_free(reader);
                table_pack_freep(&pack);
                pack = NULL;
                file_build(u, f, elf, fd, what);
                return;
        }
        if (r < 0) {
                log_debug_errno(r, "Failed to build the unwind table of %s, walking it by frame pointers: %m", what);
                /* -EINVAL: more rows than the FDEs allow, or out of order;
                 * -E2BIG: more distinct rules than a row can name; else
                 * out of memory or mappings, built again when next mapped */
                count_failure(u, r == -EINVAL ? UNWINDER_FAIL_BAD_CFI
                                 : r == -E2BIG ? UNWINDER_FAIL_ABOVE_4G : UNWINDER_FAIL_UNREADABLE);
                f->retry = r != -EINVAL && r != -E2BIG;
                return;
        }
        /* The values the plan left over were never published: free at once. */
        used = (slots + 1) / 2;
        if (used < planned)
                rangealloc_release(u->rows_alloc, out.off + (uint32_t) used, (uint32_t) (planned - used), 0);
        f->off = out.off;
        f->n = (uint32_t) slots;
        f->values = (uint32_t) used;
        f->planned = (uint32_t) planned;
        /* a table just built counts as sampled now: the process that
         * wanted it gets a hot window to sample it before it is cold */
        f->sampled_ns = MAX(f->sampled_ns, mono_ns());
        f->cold = false;
        log_debug("Built the unwind table of %s: %zu rows, %u kept, %u rules, %zu slots (%zu values of %zu planned), "
                  "in %" PRIu64 " ms.", what, counts.n, (unsigned) pack->rows, (unsigned) pack->n_rules, slots, used,
                  planned, (uint64_t) ((mono_ns() - t0) / NSEC_PER_MSEC));
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

/* HotSpot's discovery, for the unwinder (its naming hooks are the
 * writer's, hotspot-code.h): a JVM's walker slot is made per process
 * (unwind-procs.c), from the file's symbols found here. */
static const struct unwind_runtime hotspot_discovery = {
        .name = "hotspot",
        .id = UNWIND_RUNTIME_HOTSPOT,
        .discover = hotspot_discover,
};

/* The runtimes a file may hold (runtime.h), in the order asked. */
static const struct unwind_runtime *const runtimes[] = {
        &python_runtime,
        &hotspot_discovery,
};

/* Publishes what discovery found in f to the BPF walkers: a free slot of
 * unwind_runtimes, and the registry the naming reads (unwinder_runtime).
 * Counted when every slot is taken. */
static void runtime_publish(unwinder *u, struct ufile *f, const struct unwind_runtime_found *found) {
        uint32_t slot;

        if (unwinder_runtime_add(u, found, &slot) >= 0)
                f->rt_slot = slot;
}

/* Runs each runtime's discovery on f's ELF, once per file: a runtime found
 * is published (runtime_publish); one the walker cannot describe (a
 * CPython too old or too new) is counted, and the file walked natively. */
static void runtime_discover(unwinder *u, struct ufile *f, Elf *elf) {
        if (f->rt_checked)
                return;
        f->rt_checked = true;
        for (size_t i = 0; i < ELEMENTSOF(runtimes); i++) {
                struct unwind_runtime_found found;
                int r = runtimes[i]->discover(elf, &f->key, &found);

                if (r > 0) {
                        runtime_publish(u, f, &found);
                        return;
                }
                if (r < 0) {
                        log_debug_errno(r, "Runtime %s found in a file profd cannot walk: %m", runtimes[i]->name);
                        count_failure(u, UNWINDER_FAIL_RUNTIME_UNSUPPORTED);
                        return;
                }
        }
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
        /* runtime walkers' discovery (runtime.h), on the same elf, once
         * per file: its result kept in f with the table */
        if (r >= 0)
                runtime_discover(u, f, elf);
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
int ufile_for_mapping(unwinder *u, uint32_t pid, const struct procmap *m, const struct file_key *key,
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
                ufile_ref(u, f);
        }
        /* a table that found no room is built again when the file is next
         * mapped by a process, if its rows can be set aside now; one
         * evicted for a sampled table (cold) only once it is sampled
         * again (ufile_note_sampled), not at every load of a process
         * that maps it, nor counted then */
        build = is_new || (f->retry && !f->cold && file_reserve(u, f) >= 0);
        defer = build && key->size > BUILD_INLINE_MAX_BYTES;
        if (defer) {
                build = false;
                f->retry = false;
        }
        if (f->retry && !f->cold && !build)
                count_failure(u, UNWINDER_FAIL_BUDGET_FULL);
        if (build || !file_find_bias(f, m->offset, ret_vaddr_at)) {
                if (build)
                        f->retry = false;
                r = file_read(u, f, &paths, m, build);
                if (r < 0 || !file_find_bias(f, m->offset, ret_vaddr_at)) {
                        if (is_new) {
                                ufile_release_runtime(u, f);
                                ufile_free(f);
                        }
                        else {
                                file_unreserve(u, f); /* unread: not built */
                                ufile_unref(u, f, mono_ns());
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
                        ufile_release_runtime(u, f);
                        ufile_free(f);
                        return r;
                }
        }
        if (defer) {
                r = build_later(u, f, &paths, m->path);
                if (r < 0) {
                        file_unreserve(u, f);
                        ufile_unref(u, f, mono_ns());
                        return r;
                }
        }
        *ret = f;
        return 0;
}

/* The daemon's own vDSO: the kernel gives every 64-bit process the same
 * image. NULL if it cannot be read. */
struct ufile *ufile_vdso(unwinder *u) {
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

/* The live processes that map a file whose mark is set, into *ret (the
 * caller frees it). Returns 0 or -ENOMEM. */
static int procs_marked(unwinder *u, uint32_t **ret, size_t *ret_n) {
        uint32_t *tgids = calloc(hashmap_size(u->procs) + 1, sizeof(*tgids));
        size_t n = 0, i = 0;
        const void *k;
        void *v;

        if (!tgids)
                return -ENOMEM;
        while (hashmap_iterate(u->procs, &i, &k, &v)) {
                struct uproc *p = v;

                for (size_t j = 0; j < p->n_files; j++)
                        if (p->files[j] && p->files[j]->mark) {
                                tgids[n++] = p->tgid;
                                break;
                        }
        }
        *ret = tgids;
        *ret_n = n;
        return 0;
}

/* Builds the oldest pending table, then publishes again every process
 * that maps it. */
int ufile_build_next(unwinder *u) {
        struct ufile *f = u->builds[0];
        _cleanup_free_ uint32_t *tgids = NULL;
        size_t n = 0;
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

        f->mark = true;
        r = procs_marked(u, &tgids, &n);
        f->mark = false;
        if (r < 0) {
                ufile_unref(u, f, mono_ns());
                return r;
        }
        for (size_t i = 0; r >= 0 && i < n; i++) {
                struct uproc *p;

                if (hashmap_get(u->procs, UINT64_TO_KEY(tgids[i]), (void **) &p) == 0)
                        r = uproc_load(u, p->tgid, p->start, p->tick_ns, NULL);
        }
        ufile_unref(u, f, mono_ns());
        return r;
}

/* --- room from the tables of live processes (table-lru.h) ----------------- */

/* Builds f's table into the rows set aside for it (f->resv_*) by
 * publishing again a process that maps it: ufile_for_mapping builds it (a
 * large one is queued, and ufile_build_next publishes every process that
 * maps it once built); the others are published again with it. Returns 0
 * or -ENOMEM. */
static int file_rebuild(unwinder *u, struct ufile *f) {
        _cleanup_free_ uint32_t *tgids = NULL;
        size_t n;
        int r;

        f->cold = false;
        f->mark = true;
        r = procs_marked(u, &tgids, &n);
        f->mark = false;
        for (size_t i = 0; r >= 0 && i < n && !f->pending; i++)
                r = uproc_republish(u, tgids[i]);
        if (!f->pending)
                file_unreserve(u, f); /* no process mapped it still, or the build failed */
        return r;
}

/* Makes room for sampled file f (a table that found no room): free rows
 * or unused tables first (file_reserve), else the tables table_lru_choose
 * picks, those of the processes that map f pinned. The chosen unused
 * tables are evicted as usual; the chosen tables of live processes are
 * given up at once (no table: their mappings walked by frame pointers),
 * every process that maps one published again without it
 * (uproc_republish), and their rows released as of then: f's table is
 * built once their grace is over (ufile_room_due). A refusal is counted
 * (tables_kept_hot, and budget_full as at a load) and tried again after
 * KEPT_HOT_RETRY_NS at the soonest. Returns 0 or -ENOMEM. */
static int cold_room(unwinder *u, struct ufile *f, uint64_t hot_ns, uint64_t now) {
        _cleanup_free_ struct table_lru_entry *t = NULL;
        _cleanup_free_ struct ufile **g = NULL;
        _cleanup_free_ bool *evict = NULL;
        _cleanup_free_ uint32_t *tgids = NULL;
        _cleanup_free_ uint32_t *rel = NULL; /* off, slots of each table given up */
        size_t n = 0, i = 0, n_rel = 0, n_tgids = 0, size = hashmap_size(u->files) + 1;
        uint64_t released;
        const void *k;
        void *v;
        uint32_t off;
        int r;

        r = file_reserve(u, f);
        if (r >= 0)
                return file_rebuild(u, f);
        if (r != -ENOSPC)
                return r;
        if (f->kept_hot_ns && now - f->kept_hot_ns < KEPT_HOT_RETRY_NS)
                return 0;
        t = calloc(size, sizeof(*t));
        g = calloc(size, sizeof(*g));
        evict = calloc(size, sizeof(*evict));
        rel = calloc(2 * size, sizeof(*rel));
        if (!t || !g || !evict || !rel)
                return -ENOMEM;

        /* the tables of the processes that want f stay: evicting them for
         * it would leave the same process walked by frame pointers */
        f->mark = true;
        r = procs_marked(u, &tgids, &n_tgids);
        f->mark = false;
        if (r < 0)
                return r;
        for (size_t j = 0; j < n_tgids; j++) {
                struct uproc *p;

                if (hashmap_get(u->procs, UINT64_TO_KEY(tgids[j]), (void **) &p) == 0)
                        for (size_t m = 0; m < p->n_files; m++)
                                if (p->files[m])
                                        p->files[m]->pin = true;
        }
        while (hashmap_iterate(u->files, &i, &k, &v)) {
                struct ufile *h = v;

                if (h->values > 0) {
                        g[n] = h;
                        t[n++] = (struct table_lru_entry) { h->off, h->values, h->sampled_ns, h->pin || h->pending };
                }
                h->pin = false;
        }
        r = table_lru_choose(u->rows_alloc, f->want, t, n, now, hot_ns, evict, &off);
        if (r < 0)
                return r;
        if (r == 0) {
                log_debug("No room for the sampled unwind table of file %" PRIu64 ":%" PRIu64 " (%" PRIu32 " row "
                          "slots): every table that could give it is sampled within %" PRIu64 " s or of the same "
                          "process, walking it by frame pointers.",
                          f->key.dev, f->key.ino, f->want, (uint64_t) (hot_ns / NSEC_PER_SEC));
                f->kept_hot_ns = now;
                count_failure(u, UNWINDER_FAIL_BUDGET_FULL);
                pthread_mutex_lock(&u->lock);
                u->stats.tables_kept_hot++;
                pthread_mutex_unlock(&u->lock);
                return 0;
        }
        f->kept_hot_ns = 0;

        /* Unused tables go as usual. A live one is given up before any
         * process is read again (a load may evict unused tables, so the
         * pointers are not kept past this loop), its rows kept until no
         * entry names them. */
        for (i = 0; i < n; i++) {
                struct ufile *h = g[i];

                if (!evict[i])
                        continue;
                if (h->refs == 0) {
                        ufile_evict(u, h);
                        continue;
                }
                /* by file identity (the test reads it): which table went for which */
                log_debug("Evicting the unwind table of file %" PRIu64 ":%" PRIu64 " (%" PRIu32 " slots, not sampled "
                          "for %" PRIu64 " ms) for the sampled table of file %" PRIu64 ":%" PRIu64 ".",
                          h->key.dev, h->key.ino, h->values, (uint64_t) ((now - MIN(now, h->sampled_ns)) / NSEC_PER_MSEC),
                          f->key.dev, f->key.ino);
                rel[2 * n_rel] = h->off;
                rel[2 * n_rel + 1] = h->values;
                n_rel++;
                h->want = h->planned;
                h->off = h->n = h->values = 0;
                h->retry = true;
                h->cold = true;
                h->mark = true;
        }
        free(tgids);
        tgids = NULL;
        r = procs_marked(u, &tgids, &n_tgids);
        i = 0;
        while (hashmap_iterate(u->files, &i, &k, &v))
                ((struct ufile *) v)->mark = false;
        for (size_t j = 0; r >= 0 && j < n_tgids; j++)
                r = uproc_republish(u, tgids[j]);
        if (r < 0)
                return r; /* out of memory: the rows stay taken, never named wrongly */
        released = mono_ns();
        for (size_t j = 0; j < n_rel; j++)
                rangealloc_release(u->rows_alloc, rel[2 * j], rel[2 * j + 1], released);
        log_debug("Evicted %zu unwind tables of live processes, not sampled for %" PRIu64 " s, for a sampled table of "
                  "%" PRIu32 " row slots; %zu processes published again.", n_rel, (uint64_t) (hot_ns / NSEC_PER_SEC), f->want,
                  n_tgids);
        pthread_mutex_lock(&u->lock);
        u->stats.tables_evicted_cold += n_rel;
        pthread_mutex_unlock(&u->lock);

        if (array_grow((void **) &u->room_waits, &u->cap_room_waits, u->n_room_waits + 1, sizeof(*u->room_waits)) < 0)
                return -ENOMEM;
        ufile_ref(u, f);
        f->room_due_ns = released + GRACE_NS;
        u->room_waits[u->n_room_waits++] = f;
        return 0;
}

/* Whether sampled file f wants room now: a live process maps it, its table
 * found no room (and could fit the whole budget), and room is not being
 * made for it already. */
static bool file_wants_room(const unwinder *u, const struct ufile *f) {
        return f->refs > 0 && f->retry && f->want > 0 && f->want <= rangealloc_capacity(u->rows_alloc) &&
               !f->pending && f->resv_n == 0 && f->room_due_ns == 0;
}

int ufile_note_sampled(unwinder *u, const struct file_ident *ids, size_t n, uint64_t hot_ns, uint64_t now) {
        _cleanup_free_ struct ufile **wanted = NULL;
        hashmap *set = hashmap_new_u64();
        size_t n_wanted = 0, i = 0;
        const void *k;
        void *v;
        int r = 0;

        wanted = calloc(hashmap_size(u->files) + 1, sizeof(*wanted));
        if (!set || !wanted) {
                hashmap_free(set);
                return -ENOMEM;
        }
        /* a file may be named twice (notes of several drains taken at
         * once): the first stays (-EEXIST) */
        for (size_t j = 0; j < n; j++)
                if (hashmap_put(set, UINT64_TO_KEY(file_ident_hash(&ids[j])), (void *) (uintptr_t) (j + 1)) == -ENOMEM) {
                        hashmap_free(set);
                        return -ENOMEM;
                }
        /* one pass over the cached files (a few hundred to a few thousand),
         * once per drain */
        while (hashmap_iterate(u->files, &i, &k, &v)) {
                struct ufile *f = v;
                struct file_ident id = { f->key.dev, f->key.ino };
                void *x;

                if (hashmap_get(set, UINT64_TO_KEY(file_ident_hash(&id)), &x) < 0)
                        continue;
                if (ids[(uintptr_t) x - 1].dev != id.dev || ids[(uintptr_t) x - 1].ino != id.ino)
                        continue; /* another file of the same hash */
                f->sampled_ns = now;
                f->cold = false;
                if (file_wants_room(u, f)) {
                        ufile_ref(u, f); /* kept while room is made for the others */
                        wanted[n_wanted++] = f;
                }
        }
        hashmap_free(set);
        for (size_t j = 0; j < n_wanted; j++) {
                if (r >= 0 && file_wants_room(u, wanted[j]))
                        r = cold_room(u, wanted[j], hot_ns, now);
                ufile_unref(u, wanted[j], mono_ns());
        }
        return r;
}

uint64_t ufile_room_next_ns(const unwinder *u) {
        uint64_t next = UINT64_MAX;

        for (size_t i = 0; i < u->n_room_waits; i++)
                next = MIN(next, u->room_waits[i]->room_due_ns);
        return next;
}

int ufile_room_due(unwinder *u) {
        uint64_t now = mono_ns();
        int r = 0;

        for (size_t i = 0; i < u->n_room_waits;) {
                struct ufile *f = u->room_waits[i];

                if (f->room_due_ns > now) {
                        i++;
                        continue;
                }
                u->room_waits[i] = u->room_waits[--u->n_room_waits];
                f->room_due_ns = 0;
                if (r >= 0 && f->refs > 1) { /* a live process still maps it (not only this wait) */
                        rangealloc_reclaim(u->rows_alloc, now);
                        r = file_reserve(u, f);
                        if (r >= 0)
                                r = file_rebuild(u, f);
                        else if (r == -ENOSPC) {
                                log_debug("The rows evicted for a sampled unwind table were taken meanwhile; tried "
                                          "again when next sampled.");
                                r = 0;
                        }
                }
                ufile_unref(u, f, now);
        }
        return r;
}
