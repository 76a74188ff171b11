/* A file's DWARF (its own or its debug file's): opened on first use, CUs indexed by address, frame chains with inlines and file:line. */
#pragma once

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dwarf-lines.h"
#include "hashmap.h"
#include "symfile.h"

/* A run of address ranges that belong to one CU, as libdwfl (and so
 * eu-addr2line) groups .debug_aranges: the gaps inside a run, and up to the
 * next run, count as part of it. */
struct cu_run {
        uint64_t start;
        Dwarf_Off cu_offset;
        Dwarf_Die die; /* valid once has_die */
        bool has_die;
};

/* Owned by its sym_file. The fd is taken at load and stays open while the
 * file is cached, so a debug file or binary deleted or replaced after
 * loading still resolves; the rest is built by dwarf_index_open and freed
 * by dwarf_index_close, except the CU runs, which are small (24 bytes a
 * CU) and spare a reopen reading .debug_aranges and every CU header. */
struct dwarf_index {
        int fd; /* -1: no DWARF found */
        char *path; /* the file DWARF is read from, NULL with fd -1 */
        Elf *elf;
        Dwarf *dwarf; /* NULL until opened, or when it could not be */
        bool failed; /* opening it failed (or there is none): symbol tables only */
        void *map; /* the mapped decompressed copy (dwarf-copy.h) elf reads, or NULL: elf reads fd */
        size_t map_size;
        /* The copy, kept across closes so that a reopen maps it again
         * rather than inflating the sections anew (-1: none made yet, or
         * given back by dwarf_index_release_copy); copy_refused: the file
         * is not one dwarf_copy_make handles, never tried again. */
        int copy_fd;
        uint64_t copy_size;
        bool copy_refused;
        bool runs_read; /* cu_runs is built (it outlives a close) */
        struct cu_run *cu_runs; /* sorted by start */
        size_t n_cu_runs, cu_runs_allocated;
        uint64_t cu_runs_end; /* end of the last arange */
        hashmap *cu_scopes; /* CU DIE offset -> struct cu_scopes * */
        /* CU DIE offset -> struct line_table *, or a marker for a CU whose
         * line program is left to libdw (dwarf-lines.h) */
        hashmap *cu_lines;
        struct line_sections sections; /* set when opened */
        hashmap *paths; /* libdw's file name pointer -> name with the CU's comp_dir (or itself) */

        uint64_t unreleased; /* .debug_info of the CU trees read since the copy's pages were last dropped */
        uint64_t bytes; /* heap: section data read (not mapped), line tables, CU runs, scope trees */
        uint64_t cache_bytes; /* joined paths */
};

/* An empty index: no DWARF (fd -1). */
void dwarf_index_init(struct dwarf_index *d);
/* Closes and frees everything and leaves d as dwarf_index_init does. */
void dwarf_index_done(struct dwarf_index *d);

/* Opens the DWARF behind d->fd on first use (later calls return at once).
 * With a scratch_dir (NULL: none), the DWARF sections are first copied,
 * decompressed, into an unlinked file there and read through a read-only
 * mapping of it (dwarf-copy.h), so that the sections are page cache the
 * kernel can drop rather than heap; the copy is kept when the DWARF is
 * closed, for the next open. Files the copy does not handle, or when there
 * is no room for it, are read into the heap as without one. DWARF that cannot be read (including
 * string sections without a final NUL, here or in a dwz file) leaves
 * d->dwarf NULL and d->failed set: the file resolves through its symbol
 * table alone. Returns 0 or -ENOMEM. */
int dwarf_index_open(struct dwarf_index *d, const char *scratch_dir);
/* Whether the DWARF is open now. */
bool dwarf_index_is_open(const struct dwarf_index *d);
/* Frees everything the open DWARF holds (libdw's tables, the mapping, the
 * scope trees, joined paths) but the fd and the CU runs: a later
 * dwarf_index_open reopens it as it was. Every pointer into it (names, file
 * paths) becomes invalid. A closed or never opened d is left as it is. */
void dwarf_index_close(struct dwarf_index *d);
/* Closes a closed d's copy, giving its disk space back (the next open
 * makes it again if there is room). Returns the bytes given back. */
uint64_t dwarf_index_release_copy(struct dwarf_index *d);
/* Lets the kernel take back the resident pages of the mapped copy (they
 * are read again from the page cache or disk when next touched). */
void dwarf_index_drop_pages(struct dwarf_index *d);

/* The frames of one address while they are collected; function is left
 * NULL for the caller to fill (demangled names are cached per file). */
struct frame_list {
        struct sym_frame *frames;
        size_t n_frames;
        size_t allocated;
};

/* Collects the frame chain of vaddr in d's open DWARF the way eu-addr2line
 * -f -i finds it: the innermost function from the DIE scopes containing
 * vaddr, file:line from the CU's line table, then the inline chain. symbol
 * is the symbol table's name for vaddr (or NULL): it names a function DIE
 * without a name, and the frame when DWARF puts vaddr in no function.
 * Returns 0 (no frames added: unresolved) or -ENOMEM (l may hold some;
 * the caller frees l->frames either way). */
int dwarf_index_collect(struct dwarf_index *d, uint64_t vaddr, const char *symbol, struct frame_list *l);
