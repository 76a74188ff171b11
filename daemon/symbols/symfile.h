/* The file object: one per binary file (by build-id, else by device, inode, size and mtime), owning its symbols, debug file and DWARF index. */
#pragma once

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "hashmap.h"
#include "macro.h"
#include "mapfile.h"

typedef struct symbolizer symbolizer;
typedef struct sym_file sym_file;

/* ---- For everyone (through symbolizer.h): what a loaded file answers. */

/* The GNU build-id as lowercase hex, or NULL when the file has none. */
const char *sym_file_build_id(const sym_file *f);

/* The function whose range contains the address that file_offset (an offset
 * into the file, as /proc/PID/maps gives for a mapping) is loaded at, or
 * NULL. Offsets are turned into ELF virtual addresses through the PT_LOAD
 * program headers. The name is the raw symbol table name (not demangled),
 * from .symtab (the debug file's when the file itself is stripped), else
 * .dynsym. The returned string lives as long as the file. */
const char *sym_file_lookup(const sym_file *f, uint64_t file_offset);

/* One level of a frame chain. */
struct sym_frame {
        const char *function; /* demangled (C++, Rust) unless raw is all there is */
        const char *raw_function; /* as in the symbol table or DWARF linkage name */
        const char *file; /* source file as DWARF names it, NULL if unknown */
        unsigned line; /* 0 if unknown */
        bool inlined; /* this function was inlined into the next frame's */
};

/* Resolves file_offset to its frame chain: frames[0] is the innermost
 * (deepest inlined) call, the last one the function the code belongs to;
 * each frame's file:line is where execution is in that function (for the
 * outer ones, the call site of the inlined function). Names, file paths
 * (relative ones joined to the CU's comp_dir) and lines are those of
 * `eu-addr2line -f -i -C`, with one exception: eu-addr2line takes the
 * callers at the start of the address's line-table row, profd at the
 * address itself (see tests/unit/test-symbolize-oracle.c). Without DWARF it
 * is one frame from the symbol table, without file:line; an address DWARF
 * and symbols put in no function (padding) is unresolved. When the chain is
 * longer than max, its innermost frames are dropped, so the last frame is
 * always the real function.
 *
 * Returns the number of frames written (at most max; 0 when unresolved, see
 * sym_file_why_unresolved), -EINVAL when max is 0, or -ENOMEM. Results are
 * cached per address while the file's DWARF stays open, so asking again is a
 * hash lookup. Strings live until the next symbolizer_trim (which may close
 * the DWARF they point into) or until the file is evicted. */
int sym_file_resolve(symbolizer *s, const sym_file *f, uint64_t file_offset,
                     struct sym_frame *frames, size_t max);

/* DWARF read once the file is sampled enough (dwarf-defer.h, the
 * dwarf_min_samples setting). Whether f's frames are resolved by its
 * symbol table alone for now: it has DWARF and a full symbol table (with
 * only .dynsym, DWARF is what names its static functions, so it is read at
 * once), and sym_file_note_samples has not turned its DWARF on. */
bool sym_file_defers_dwarf(const sym_file *f);
/* Adds the samples of a key with a frame in f. Returns true when this
 * turned f's DWARF on: min reached, and frames pending (sym_file_pend). */
bool sym_file_note_samples(const sym_file *f, uint64_t samples, uint64_t min);
/* The function file_offset is in, by the symbol table alone (no file, line
 * or inlined calls): 1 frame, or 0 when none covers it. Strings as for
 * sym_file_resolve. */
int sym_file_resolve_symbol(symbolizer *s, const sym_file *f, uint64_t file_offset, struct sym_frame *frames,
                            size_t max);
/* Keeps a frame stored by its symbol alone under mapping path module, to
 * be given its lines when the DWARF is turned on. Returns as
 * dwarf_defer_pend. */
int sym_file_pend(const sym_file *f, uint64_t file_offset, const char *module);
/* Takes f's pending frames: dwarf_defer_take. */
int sym_file_take_pending(const sym_file *f, uint64_t **ret, char **ret_module);

/* What sym_file_resolve would cost at file_offset. */
enum sym_cached {
        SYM_CACHED_NOT, /* it reads DWARF (opening it, maybe): ask the store first */
        SYM_CACHED_CHEAP, /* an answer is cached, or there is no DWARF (a binary search) */
        SYM_CACHED_STORED, /* sym_file_mark_stored said the caller has it already, under tag */
};
enum sym_cached sym_file_cached(const sym_file *f, uint64_t file_offset, uint64_t tag);
/* Remembers that the caller has stored file_offset's frames already (the
 * writer: its location is in the store, with its function) under tag (the
 * writer: a hash of the mapping's path, since one file can be mapped under
 * several; 63 bits are kept), so that sym_file_cached with that tag says
 * SYM_CACHED_STORED from now on, at the cost of one hash entry that
 * outlives the DWARF. An address already resolved keeps its answer. One
 * tag per address: the last marked wins. sym_file_resolve still resolves a
 * marked address when asked. Returns 0, -EINVAL (another symbolizer's file)
 * or -ENOMEM. */
int sym_file_mark_stored(symbolizer *s, const sym_file *f, uint64_t file_offset, uint64_t tag);

/* Why sym_file_resolve found nothing at file_offset. */
enum sym_unresolved {
        SYM_NOT_MAPPED, /* the offset lies in no PT_LOAD segment of the file */
        SYM_NO_SYMBOLS, /* no symbol table or DWARF at all: stripped, no debug file found */
        SYM_EXPORTS_ONLY, /* only .dynsym: most likely a static function of a stripped file */
        SYM_NO_FUNCTION, /* full symbols, but none covers it (PLT, padding, hand-written code) */
};
enum sym_unresolved sym_file_why_unresolved(const sym_file *f, uint64_t file_offset);
/* "not-mapped", "no-symbols", "exports-only", "no-function". */
const char *sym_unresolved_to_string(enum sym_unresolved reason);

/* Whether the file has any symbol table or DWARF (false: SYM_NO_SYMBOLS). */
bool sym_file_has_symbols(const sym_file *f);
/* The file DWARF is read from (the file itself or its debug file), or NULL
 * when there is none: then there are no inline frames or file:line. */
const char *sym_file_debug_path(const sym_file *f);

/* ---- For the symbolizer's cache (symbolizer.c) only. */

/* What one cache entry costs per key in a hashmap: a hash slot (24 bytes)
 * at the map's 3/4 load factor, rounded up. */
#define HASH_ENTRY_BYTES 32

/* Files are keyed by their contents' identity (struct file_key), the same
 * the unwinder keys its tables by. */

struct debug_search;

/* Where a new file comes from and who holds it. */
struct sym_file_origin {
        symbolizer *owner; /* sym_file_resolve refuses other symbolizers */
        uint64_t *clock; /* the owner's LRU clock, advanced by every touch */
        const char *const *scratch_dir; /* the owner's setting, read at each DWARF open */
        struct debug_search *debug; /* where to look for a separate debug file */
        const char *root_prefix; /* the process's root as profd reaches it, NULL for the host's */
        const char *display_path; /* the file's path as the process sees it */
};

/* Makes the file object of the ELF file open as e (whose headers
 * elf_check_headers accepted) through *fd, of stat st: its load segments,
 * best symbol table, and where its DWARF is (itself, taking *fd, or a debug
 * file found through o->debug). Takes *build_id (hex or NULL). Returns 0
 * and *ret, or -ENOMEM. */
int sym_file_new(const struct sym_file_origin *o, Elf *e, int *fd, const struct stat *st, char **build_id,
                 sym_file **ret);
/* Frees the file and everything it owns (its keys too, which must be out of
 * every index by then: see sym_file_unindex). Accepts NULL, returns NULL. */
sym_file *sym_file_free(sym_file *f);
DEFINE_TRIVIAL_CLEANUP_FUNC(sym_file *, sym_file_free);

/* Makes f reachable in by_stat (struct file_key * -> sym_file *) through a
 * copy of key that f owns. Returns 0 or -ENOMEM (f is then not indexed by
 * it). */
int sym_file_index_key(sym_file *f, hashmap *by_stat, const struct file_key *key);
/* Removes f's keys from by_stat and its build-id from by_build_id (if it is
 * f that the build-id maps to). */
void sym_file_unindex(sym_file *f, hashmap *by_stat, hashmap *by_build_id);

/* Marks f as just used, for the LRU order. f is const to callers that only
 * read it; the clock is the one thing that changes. */
void sym_file_touch(const sym_file *f);
/* The owner's clock when f was last loaded, looked up or resolved. */
uint64_t sym_file_last_used(const sym_file *f);
/* Notes that a tracked process maps f (the owner's marking round). */
void sym_file_set_mapped(const sym_file *f);
/* At a trim with marking: the number of trims in a row, this one included,
 * at which no tracked process mapped f (0 when one did), and a new round. */
unsigned sym_file_count_unmapped(sym_file *f);
/* What the last sym_file_count_unmapped returned. */
unsigned sym_file_unmapped_trims(const sym_file *f);
/* The estimated heap f holds: symbol tables, names, keys, libdw's tables
 * of opened DWARF (and its sections when they are read rather than mapped,
 * see dwarf_index_open), scope trees, resolved addresses. */
uint64_t sym_file_bytes(const sym_file *f);

/* Forgets every sym_file_mark_stored (the store deleted locations).
 * Returns 0 or -ENOMEM (then nothing is forgotten). */
int sym_file_forget_stored(sym_file *f);
/* Whether f's DWARF is open, and when it (or an answer it gave) was last
 * used, CLOCK_MONOTONIC in ns (0: never). */
bool sym_file_dwarf_is_open(const sym_file *f);
uint64_t sym_file_dwarf_used_ns(const sym_file *f);
/* Closes f's DWARF and drops every answer that points into it, keeping its
 * symbols and the stored markers; the next resolve that needs DWARF opens
 * it again. Invalidates strings from sym_file_resolve. Returns 1 when it
 * was open, 0 when not, -ENOMEM (then it stays open). */
int sym_file_close_dwarf(sym_file *f);
/* Drops the resident pages of f's mapped DWARF copy (see
 * dwarf_index_drop_pages) and of its mapped symbol names
 * (func_table_map). */
void sym_file_drop_pages(sym_file *f);
/* The size of f's DWARF copy and symbol names mapped now (0: none). */
uint64_t sym_file_mapped_bytes(const sym_file *f);
/* Closes f's DWARF and its copy, and brings mapped symbol names back into
 * the heap, giving their disk space back. Returns the bytes given back,
 * or -ENOMEM (then the DWARF stays open, or the names mapped). */
int64_t sym_file_release_copy(sym_file *f);
