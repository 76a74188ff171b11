/* The file object: one binary's load segments, symbols, debug file and DWARF index, its resolved addresses and demangled names. */
#include "symfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "debug-file.h"
#include "dwarf-defer.h"
#include "dwarf-frames.h"
#include "elf-symbols.h"
#include "hashmap.h"
#include "helpers.h"
#include "macro.h"

/* Last: libiberty.h (which demangle.h includes) redefines basename and
 * declares helpers of its own, so nothing after it may rely on libc's. */
#include <libiberty/demangle.h>

DEFINE_TRIVIAL_CLEANUP_FUNC(hashmap *, hashmap_free);

/* What a cached file costs beyond the arrays counted exactly: the struct,
 * its hashmaps' first tables, libelf's and the kernel's per-open-file state. */
#define FILE_OVERHEAD_BYTES 4096

/* A resolved address: its frame chain, innermost first (n_frames 0:
 * unresolved, remembered so that asking again is cheap too). */
struct resolved {
        size_t n_frames;
        struct sym_frame frames[];
};

/* The cached answer for addresses nothing covers. */
static struct resolved unresolved;
/* An address the caller has stored with its function already, under the
 * mapping whose tag it gave (sym_file_mark_stored): the value is the tag
 * shifted left, with the low bit set, which no real pointer has. It needs
 * no resolving, and this is all that is kept of it, so the DWARF behind it
 * can be closed. */
static bool resolved_is_stored(const void *v) {
        return (uintptr_t) v & 1;
}

static void *stored_marker(uint64_t tag) {
        return (void *) (uintptr_t) ((tag << 1) | 1);
}

/* Whether a resolved-map value is a frame chain of our own to free (and
 * holds pointers into the DWARF), rather than one of the markers. */
static bool resolved_is_chain(const struct resolved *r) {
        return r != &unresolved && !resolved_is_stored(r);
}

struct sym_file {
        symbolizer *owner;
        uint64_t *clock; /* the owner's LRU clock */
        uint64_t last_used; /* *clock when last loaded, looked up or resolved */
        const char *const *scratch_dir; /* the owner's: where DWARF copies go (NULL: none) */
        uint64_t dwarf_used_ns; /* CLOCK_MONOTONIC when its DWARF (or what it gave) last answered */
        bool mapped; /* a tracked process maps it (symbolizer_mark_mapped), since the last trim */
        /* Looked up or resolved since its last sym_file_drop_pages: only
         * then can pages of its mappings be resident in profd (a load
         * that finds it cached, once for each new process that maps it,
         * reads none). A build host's cache holds
         * hundreds of files and a drain's 64 keys touch a few of them;
         * dropping the rest cost a madvise each, the kernel zapping the
         * range, freeing its page tables and flushing the TLB of every
         * CPU the daemon ran on (madvise from all its callers was 10% of
         * the daemon's CPU there: docs/performance.md). */
        bool pages_touched;
        unsigned unmapped_trims; /* trims in a row at which no tracked process mapped it */

        char *build_id;
        struct load_segment *segments;
        size_t n_segments;
        struct func_table funcs;

        /* The stat keys that lead here (owned, also the keys in the owner's by_stat). */
        struct file_key **keys;
        size_t n_keys;
        size_t n_keys_allocated;

        /* DWARF: found at load, opened at the first resolve. */
        struct dwarf_index dwarf;
        /* when that first resolve comes (dwarf_min_samples) */
        struct dwarf_defer defer;

        hashmap *resolved; /* vaddr -> struct resolved * (or &unresolved, or a stored marker) */
        hashmap *demangled; /* raw name pointer -> demangled copy (or the raw name itself) */

        uint64_t base_bytes; /* struct, tables, names, keys, paths */
        uint64_t resolved_bytes; /* the resolved map */
        uint64_t demangled_bytes; /* the demangled map */
};

sym_file *sym_file_free(sym_file *f) {
        const void *key;
        void *value;
        size_t state = 0;

        if (!f)
                return NULL;
        if (f->resolved)
                while (hashmap_iterate(f->resolved, &state, NULL, &value))
                        if (resolved_is_chain(value))
                                free(value);
        hashmap_free(f->resolved);
        state = 0;
        if (f->demangled)
                while (hashmap_iterate(f->demangled, &state, &key, &value))
                        if (value != key)
                                free(value);
        hashmap_free(f->demangled);
        /* After our copies of pointers into libdw's strings, above. */
        dwarf_index_done(&f->dwarf);
        dwarf_defer_done(&f->defer);
        for (size_t i = 0; i < f->n_keys; i++)
                free(f->keys[i]);
        free(f->keys);
        free(f->build_id);
        free(f->segments);
        func_table_done(&f->funcs);
        free(f);
        return NULL;
}

const char *sym_file_build_id(const sym_file *f) {
        return f ? f->build_id : NULL;
}

void sym_file_touch(const sym_file *f) {
        sym_file *m = (sym_file *) f;

        m->last_used = ++*m->clock;
}

/* A lookup or a resolve: used, and its mapped names or DWARF copy read. */
static void sym_file_read(const sym_file *f) {
        sym_file_touch(f);
        ((sym_file *) f)->pages_touched = true;
}

uint64_t sym_file_last_used(const sym_file *f) {
        return f->last_used;
}

void sym_file_set_mapped(const sym_file *f) {
        ((sym_file *) f)->mapped = true;
}

unsigned sym_file_count_unmapped(sym_file *f) {
        f->unmapped_trims = f->mapped ? 0 : f->unmapped_trims + 1;
        f->mapped = false;
        return f->unmapped_trims;
}

unsigned sym_file_unmapped_trims(const sym_file *f) {
        return f->unmapped_trims;
}

uint64_t sym_file_bytes(const sym_file *f) {
        return f->base_bytes + f->dwarf.bytes + f->dwarf.cache_bytes + f->resolved_bytes + f->demangled_bytes +
               dwarf_defer_bytes(&f->defer);
}

int sym_file_index_key(sym_file *f, hashmap *by_stat, const struct file_key *key) {
        _cleanup_free_ struct file_key *copy = NULL;
        int r;

        r = array_grow((void **) &f->keys, &f->n_keys_allocated, f->n_keys + 1, sizeof(*f->keys));
        if (r < 0)
                return r;
        copy = malloc(sizeof(*copy));
        if (!copy)
                return -ENOMEM;
        *copy = *key;
        r = hashmap_put(by_stat, copy, f);
        if (r < 0)
                return r;
        f->keys[f->n_keys++] = TAKE_PTR(copy);
        f->base_bytes += sizeof(*copy) + sizeof(*f->keys) + HASH_ENTRY_BYTES;
        return 0;
}

void sym_file_unindex(sym_file *f, hashmap *by_stat, hashmap *by_build_id) {
        void *v;

        for (size_t i = 0; i < f->n_keys; i++)
                (void) hashmap_remove(by_stat, f->keys[i]);
        if (f->build_id && hashmap_get(by_build_id, f->build_id, &v) >= 0 && v == f)
                (void) hashmap_remove(by_build_id, f->build_id);
}

/* Finds where f's DWARF and best symbol table are: the file itself (whose
 * fd it then takes), else a separate debug file. Returns 0 or -ENOMEM. */
static int sym_file_find_debug_info(sym_file *f, const struct sym_file_origin *o, Elf *e, int *fd,
                                    const struct stat *st) {
        _cleanup_(debug_file_done) struct debug_file d = { .fd = -1 };
        _cleanup_free_ char *link_name = NULL;
        struct debug_query q = {
                .build_id = f->build_id,
                .st = *st,
                .want_symtab = f->funcs.kind != SYMTAB_FULL,
        };
        int r;

        if (elf_has_dwarf(e)) {
                f->dwarf.path = strdup(o->display_path);
                if (!f->dwarf.path)
                        return -ENOMEM;
                f->dwarf.fd = TAKE_FD(*fd);
                return 0;
        }

        r = elf_read_debuglink(e, &link_name, &q.link_crc);
        if (r < 0)
                return r;
        q.link_name = link_name;
        r = debug_file_find(o->debug, &q, o->root_prefix, o->display_path, &d);
        if (r <= 0)
                return r;

        if (d.funcs.kind == SYMTAB_FULL && f->funcs.kind != SYMTAB_FULL) {
                func_table_done(&f->funcs);
                f->funcs = d.funcs;
                d.funcs = (struct func_table) {};
        }
        if (d.has_dwarf) {
                f->dwarf.path = TAKE_PTR(d.path);
                f->dwarf.fd = TAKE_FD(d.fd);
        }
        return 0;
}

int sym_file_new(const struct sym_file_origin *o, Elf *e, int *fd, const struct stat *st, char **build_id,
                 sym_file **ret) {
        _cleanup_(sym_file_freep) sym_file *f = NULL;
        int r;

        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->owner = o->owner;
        f->clock = o->clock;
        f->scratch_dir = o->scratch_dir;
        dwarf_index_init(&f->dwarf);
        /* off until sym_file_note_samples (the writer's setting; a caller
         * that never notes resolves as before: sym_file_resolve) */
        dwarf_defer_init(&f->defer, 1);
        f->pages_touched = true; /* its names are read (and maybe mapped) below */
        f->build_id = TAKE_PTR(*build_id);
        r = elf_read_segments(e, &f->segments, &f->n_segments);
        if (r < 0)
                return r;
        r = elf_read_functions(e, false, &f->funcs);
        if (r < 0)
                return r;
        r = sym_file_find_debug_info(f, o, e, fd, st);
        if (r < 0)
                return r;
        /* Large name tables go next to the store, as the DWARF copies do;
         * without room they stay in the heap. */
        if (f->scratch_dir && *f->scratch_dir) {
                r = func_table_map(&f->funcs, *f->scratch_dir, FUNC_NAMES_MAP_MIN);
                if (r == -ENOMEM)
                        return r;
        }
        f->base_bytes += sizeof(*f) + FILE_OVERHEAD_BYTES +
                f->n_segments * sizeof(*f->segments) +
                (f->funcs.mapped ? 0 : func_table_bytes(&f->funcs)) +
                (f->build_id ? strlen(f->build_id) + 1 + HASH_ENTRY_BYTES : 0) +
                (f->dwarf.path ? strlen(f->dwarf.path) + 1 : 0);
        *ret = TAKE_PTR(f);
        return 0;
}

/* The virtual address file_offset is loaded at; false when it lies in no
 * PT_LOAD segment. *ret_seg is that segment. */
static bool sym_file_vaddr(const sym_file *f, uint64_t file_offset, uint64_t *ret_vaddr,
                           const struct load_segment **ret_seg) {
        return load_segments_vaddr(f->segments, f->n_segments, file_offset, ret_vaddr, ret_seg);
}

const char *sym_file_lookup(const sym_file *f, uint64_t file_offset) {
        const struct load_segment *seg;
        const struct func_sym *sym;
        uint64_t vaddr;

        if (!f || !sym_file_vaddr(f, file_offset, &vaddr, &seg))
                return NULL;
        sym_file_read(f);
        sym = func_table_find(&f->funcs, vaddr, seg);
        return sym ? func_sym_name(&f->funcs, sym) : NULL;
}

bool sym_file_has_symbols(const sym_file *f) {
        return f && (f->funcs.kind != SYMTAB_NONE || f->dwarf.path);
}

const char *sym_file_debug_path(const sym_file *f) {
        return f ? f->dwarf.path : NULL;
}

enum sym_unresolved sym_file_why_unresolved(const sym_file *f, uint64_t file_offset) {
        const struct load_segment *seg;
        uint64_t vaddr;

        if (!f || !sym_file_vaddr(f, file_offset, &vaddr, &seg))
                return SYM_NOT_MAPPED;
        if (!sym_file_has_symbols(f))
                return SYM_NO_SYMBOLS;
        if (f->funcs.kind == SYMTAB_DYNSYM && !f->dwarf.path)
                return SYM_EXPORTS_ONLY;
        return SYM_NO_FUNCTION;
}

const char *sym_unresolved_to_string(enum sym_unresolved reason) {
        switch (reason) {
        case SYM_NOT_MAPPED:
                return "not-mapped";
        case SYM_NO_SYMBOLS:
                return "no-symbols";
        case SYM_EXPORTS_ONLY:
                return "exports-only";
        case SYM_NO_FUNCTION:
                return "no-function";
        }
        return NULL;
}

static uint64_t monotonic_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

/* The display form of raw: demangled when it is a C++ (_Z) or Rust (_R, and
 * legacy _ZN..17h<hash>E) name, else raw itself. Results are kept per raw
 * pointer, which stays put while the file is cached. Returns NULL on OOM. */
static const char *sym_file_demangle(sym_file *f, const char *raw) {
        char *d = NULL;
        void *cached;

        if (!(raw[0] == '_' && (raw[1] == 'Z' || raw[1] == 'R')))
                return raw;
        if (!f->demangled) {
                f->demangled = hashmap_new_u64();
                if (!f->demangled)
                        return NULL;
        }
        if (hashmap_get(f->demangled, raw, &cached) >= 0)
                return cached;
        /* DMGL_PARAMS | DMGL_ANSI is what __cxa_demangle (eu-addr2line -C)
         * prints; the default style tries Rust before GNU v3. */
        d = cplus_demangle(raw, DMGL_PARAMS | DMGL_ANSI);
        if (hashmap_put(f->demangled, raw, d ?: (char *) raw) < 0) {
                free(d);
                return NULL;
        }
        f->demangled_bytes += HASH_ENTRY_BYTES + (d ? strlen(d) + 1 : 0);
        return d ?: raw;
}

/* Collects, demangles and caches the frame chain of vaddr (in seg) from the
 * open DWARF. Returns 0 and *ret (&unresolved when nothing covers it), or
 * -ENOMEM. */
static int sym_file_resolve_dwarf(sym_file *f, uint64_t vaddr, const struct load_segment *seg,
                                  struct resolved **ret) {
        const struct func_sym *sym = func_table_find(&f->funcs, vaddr, seg);
        _cleanup_free_ struct sym_frame *collected = NULL;
        struct frame_list l = {};
        struct resolved *res;
        int r;

        r = dwarf_index_collect(&f->dwarf, vaddr, sym ? func_sym_dwfl_name(&f->funcs, sym) : NULL, &l);
        collected = l.frames;
        if (r < 0)
                return r;
        for (size_t i = 0; i < l.n_frames; i++) {
                l.frames[i].function = sym_file_demangle(f, l.frames[i].raw_function);
                if (!l.frames[i].function)
                        return -ENOMEM;
        }
        if (l.n_frames == 0)
                res = &unresolved;
        else {
                res = malloc(sizeof(*res) + l.n_frames * sizeof(res->frames[0]));
                if (!res)
                        return -ENOMEM;
                res->n_frames = l.n_frames;
                memcpy(res->frames, l.frames, l.n_frames * sizeof(res->frames[0]));
        }
        /* A stored marker gives way to the real answer. */
        if (hashmap_remove(f->resolved, UINT64_TO_KEY(vaddr)))
                f->resolved_bytes -= HASH_ENTRY_BYTES;
        r = hashmap_put(f->resolved, UINT64_TO_KEY(vaddr), res);
        if (r < 0) {
                if (res != &unresolved)
                        free(res);
                return r;
        }
        f->resolved_bytes += HASH_ENTRY_BYTES;
        if (res != &unresolved)
                f->resolved_bytes += sizeof(*res) + res->n_frames * sizeof(res->frames[0]);
        *ret = res;
        return 0;
}

/* Symbol tables only: a binary search, cheaper than caching its answer per
 * address. */
static int symbol_frame(sym_file *f, uint64_t vaddr, const struct load_segment *seg, struct sym_frame *frames) {
        const struct func_sym *sym = func_table_find(&f->funcs, vaddr, seg);
        const char *function, *raw;

        if (!sym)
                return 0;
        raw = func_sym_dwfl_name(&f->funcs, sym);
        function = sym_file_demangle(f, raw);
        if (!function)
                return -ENOMEM;
        frames[0] = (struct sym_frame) { .function = function, .raw_function = raw };
        return 1;
}

bool sym_file_defers_dwarf(const sym_file *f) {
        return f->dwarf.path && f->funcs.kind == SYMTAB_FULL && !f->defer.on;
}

bool sym_file_note_samples(const sym_file *cf, uint64_t samples, uint64_t min) {
        sym_file *f = (sym_file *) cf;

        return dwarf_defer_note(&f->defer, samples, min) && dwarf_defer_pending(&f->defer) > 0;
}

/* The checks of a resolve: 1 and the address and segment of file_offset
 * (f touched), 0 when no segment holds it, -EINVAL. */
static int resolve_begin(symbolizer *s, sym_file *f, uint64_t file_offset, size_t max, uint64_t *ret_vaddr,
                         const struct load_segment **ret_seg) {
        if (!f || max == 0 || (s && s != f->owner))
                return -EINVAL;
        if (!sym_file_vaddr(f, file_offset, ret_vaddr, ret_seg))
                return 0;
        sym_file_touch(f);
        return 1;
}

int sym_file_resolve_symbol(symbolizer *s, const sym_file *cf, uint64_t file_offset, struct sym_frame *frames,
                            size_t max) {
        sym_file *f = (sym_file *) cf;
        const struct load_segment *seg;
        uint64_t vaddr;
        int r = resolve_begin(s, f, file_offset, max, &vaddr, &seg);

        if (r <= 0)
                return r;
        sym_file_read(f);
        return symbol_frame(f, vaddr, seg, frames);
}

int sym_file_pend(const sym_file *f, uint64_t file_offset, const char *module) {
        return dwarf_defer_pend(&((sym_file *) f)->defer, file_offset, module);
}

int sym_file_take_pending(const sym_file *f, uint64_t **ret, char **ret_module) {
        return dwarf_defer_take(&((sym_file *) f)->defer, ret, ret_module);
}

int sym_file_resolve(symbolizer *s, const sym_file *cf, uint64_t file_offset,
                     struct sym_frame *frames, size_t max) {
        sym_file *f = (sym_file *) cf;
        const struct load_segment *seg;
        struct resolved *res;
        uint64_t vaddr;
        void *cached;
        size_t first;
        int r = resolve_begin(s, f, file_offset, max, &vaddr, &seg);

        if (r <= 0)
                return r;

        /* Answered before: no need for the DWARF to be open. Nor is its
         * copy read: the store reads a frame's names only for a location
         * it does not know yet, and this one it was given when resolved.
         * So no page drop is owed for it (a file whose keys were all
         * answered so was madvised every 64 keys). */
        if (f->resolved && hashmap_get(f->resolved, UINT64_TO_KEY(vaddr), &cached) >= 0 &&
            !resolved_is_stored(cached)) {
                res = cached;
                f->dwarf_used_ns = monotonic_ns();
                goto answer;
        }
        sym_file_read(f);

        r = dwarf_index_open(&f->dwarf, f->scratch_dir ? *f->scratch_dir : NULL);
        if (r < 0)
                return r;
        if (!f->dwarf.dwarf)
                return symbol_frame(f, vaddr, seg, frames);

        if (!f->resolved) {
                f->resolved = hashmap_new_u64();
                if (!f->resolved)
                        return -ENOMEM;
        }
        r = sym_file_resolve_dwarf(f, vaddr, seg, &res);
        if (r < 0)
                return r;
        f->dwarf_used_ns = monotonic_ns();

answer:
        /* Keep the outermost frames: the function the code belongs to
         * matters more than the deepest inlined helper. */
        first = res->n_frames > max ? res->n_frames - max : 0;
        memcpy(frames, res->frames + first, (res->n_frames - first) * sizeof(frames[0]));
        return (int) (res->n_frames - first);
}

enum sym_cached sym_file_cached(const sym_file *f, uint64_t file_offset, uint64_t tag) {
        const struct load_segment *seg;
        uint64_t vaddr;
        void *cached;

        if (!f || !sym_file_vaddr(f, file_offset, &vaddr, &seg))
                return SYM_CACHED_CHEAP;
        if (f->resolved && hashmap_get(f->resolved, UINT64_TO_KEY(vaddr), &cached) >= 0)
                return !resolved_is_stored(cached) ? SYM_CACHED_CHEAP :
                        cached == stored_marker(tag) ? SYM_CACHED_STORED : SYM_CACHED_NOT;
        /* Without DWARF, resolving is a binary search of the symbol table. */
        if (f->dwarf.fd < 0 || f->dwarf.failed)
                return SYM_CACHED_CHEAP;
        return SYM_CACHED_NOT;
}

int sym_file_mark_stored(symbolizer *s, const sym_file *cf, uint64_t file_offset, uint64_t tag) {
        sym_file *f = (sym_file *) cf;
        const struct load_segment *seg;
        uint64_t vaddr;
        void *cached;
        int r;

        if (!f || (s && s != f->owner))
                return -EINVAL;
        if (!sym_file_vaddr(f, file_offset, &vaddr, &seg))
                return 0;
        if (!f->resolved) {
                f->resolved = hashmap_new_u64();
                if (!f->resolved)
                        return -ENOMEM;
        }
        if (hashmap_get(f->resolved, UINT64_TO_KEY(vaddr), &cached) >= 0) {
                /* A frame chain answers as cheaply; a marker of another
                 * mapping (the file under another path) gives way. */
                if (!resolved_is_stored(cached))
                        return 0;
                (void) hashmap_remove(f->resolved, UINT64_TO_KEY(vaddr));
                f->resolved_bytes -= HASH_ENTRY_BYTES;
        }
        r = hashmap_put(f->resolved, UINT64_TO_KEY(vaddr), stored_marker(tag));
        if (r < 0)
                return r;
        f->resolved_bytes += HASH_ENTRY_BYTES;
        return 0;
}

/* Keeps in f's resolved map only what keep accepts, freeing the rest.
 * Returns 0 or -ENOMEM (the map is then as it was). */
static int sym_file_filter_resolved(sym_file *f, bool (*keep)(const struct resolved *r)) {
        _cleanup_(hashmap_freep) hashmap *kept = NULL;
        const void *key;
        void *value;
        size_t state = 0;
        uint64_t bytes = 0;

        if (!f->resolved)
                return 0;
        kept = hashmap_new_u64();
        if (!kept)
                return -ENOMEM;
        while (hashmap_iterate(f->resolved, &state, &key, &value)) {
                if (!keep(value))
                        continue;
                if (hashmap_put(kept, key, value) < 0)
                        return -ENOMEM;
                bytes += HASH_ENTRY_BYTES;
                if (resolved_is_chain(value))
                        bytes += sizeof(struct resolved) + ((struct resolved *) value)->n_frames * sizeof(struct sym_frame);
        }
        state = 0;
        while (hashmap_iterate(f->resolved, &state, NULL, &value))
                if (!keep(value) && resolved_is_chain(value))
                        free(value);
        hashmap_free(f->resolved);
        f->resolved = TAKE_PTR(kept);
        f->resolved_bytes = bytes;
        return 0;
}

static bool resolved_is_marker(const struct resolved *r) {
        return !resolved_is_chain(r);
}

static bool resolved_is_not_stored(const struct resolved *r) {
        return !resolved_is_stored(r);
}

int sym_file_forget_stored(sym_file *f) {
        return sym_file_filter_resolved(f, resolved_is_not_stored);
}

bool sym_file_dwarf_is_open(const sym_file *f) {
        return dwarf_index_is_open(&f->dwarf);
}

uint64_t sym_file_dwarf_used_ns(const sym_file *f) {
        return f->dwarf_used_ns;
}

/* Forgets the resolved frame chains and demangled names, which point into
 * the DWARF's strings and the symbol names; the markers do not, and the
 * addresses they stand for need neither. Returns 0 or -ENOMEM. */
static int sym_file_forget_names(sym_file *f) {
        const void *key;
        void *value;
        size_t state = 0;
        int r;

        r = sym_file_filter_resolved(f, resolved_is_marker);
        if (r < 0)
                return r;
        /* Keyed by name pointers. */
        if (f->demangled)
                while (hashmap_iterate(f->demangled, &state, &key, &value))
                        if (value != key)
                                free(value);
        f->demangled = hashmap_free(f->demangled);
        f->demangled_bytes = 0;
        return 0;
}

int sym_file_close_dwarf(sym_file *f) {
        int r;

        if (!dwarf_index_is_open(&f->dwarf))
                return 0;
        r = sym_file_forget_names(f);
        if (r < 0)
                return r;
        dwarf_index_close(&f->dwarf);
        return 1;
}

void sym_file_drop_pages(sym_file *f) {
        if (!f->pages_touched)
                return;
        dwarf_index_drop_pages(&f->dwarf);
        func_table_drop_pages(&f->funcs);
        f->pages_touched = false;
}

uint64_t sym_file_mapped_bytes(const sym_file *f) {
        return f->dwarf.map_size + (f->funcs.mapped ? func_table_bytes(&f->funcs) : 0);
}

int64_t sym_file_release_copy(sym_file *f) {
        int64_t names;
        int r = sym_file_close_dwarf(f);

        if (r < 0)
                return r;
        /* The names move: nothing may point into them. */
        if (f->funcs.mapped) {
                r = sym_file_forget_names(f);
                if (r < 0)
                        return r;
        }
        names = func_table_unmap(&f->funcs);
        if (names < 0)
                return names;
        f->base_bytes += (uint64_t) names;
        return names + (int64_t) dwarf_index_release_copy(&f->dwarf);
}
