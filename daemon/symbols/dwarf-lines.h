/* One CU's line table read from .debug_line into compact rows: the answers libdw's dwarf_getsrc_die and dwarf_getsrcfiles give, at a fifth of the memory. */
#pragma once

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* The sections a line program reads, as libdw holds them (decompressed).
 * The string sections must end with a NUL (dwarf-frames.c checks that
 * before any DWARF of the file is read). Any of them may be absent (NULL,
 * 0). */
struct line_sections {
        const uint8_t *line; /* .debug_line */
        size_t line_size;
        const char *line_str; /* .debug_line_str */
        size_t line_str_size;
        const char *str; /* .debug_str */
        size_t str_size;
};

struct line_table;

/* The sections of e, as libdw holds them once it opened e (it decompresses
 * compressed sections in place). The reader reads little-endian DWARF:
 * give it none of a big-endian file, which libdw then reads. */
struct line_sections line_sections_of(Elf *e);

/* Reads the line program at offset in s->line as libdw 0.188's
 * dwarf_getsrclines does for a CU with that DW_AT_stmt_list, its
 * DW_AT_comp_dir (or NULL) and address size, and keeps only what a lookup
 * needs: per address, the row libdw's binary search ends on, and the file
 * names. File names are libdw's (directory joined to relative names); a
 * name not joined points into s, so the table is valid while s is.
 *
 * Returns 0 and *ret, -ENOMEM, or -EINVAL when the program is one libdw
 * rejects or uses something this reader leaves to libdw (DW_LNE_define_file,
 * vendor opcodes, string forms other than string, strp and line_strp,
 * values past libdw's field widths): the caller then asks libdw, which
 * gives the same answer it always did. */
int line_table_read(const struct line_sections *s, uint64_t offset, const char *comp_dir, unsigned address_size,
                    struct line_table **ret);
/* Accepts NULL, returns NULL. */
struct line_table *line_table_free(struct line_table *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct line_table *, line_table_free);

/* The row dwarf_getsrc_die finds for addr: 1 with its file (NULL when its
 * file index is past the file list, as dwarf_linesrc says) and line, or 0
 * when addr is in no row (before the first, or on a sequence's end). */
int line_table_find(const struct line_table *t, uint64_t addr, const char **ret_file, int *ret_line);
/* File index as DW_AT_call_file and the rows give it (dwarf_filesrc):
 * NULL past the list. Index 0 is "???" before DWARF 5, as in libdw. */
const char *line_table_file(const struct line_table *t, uint64_t index);
/* Rows kept (after merging rows at one address), for tests. */
size_t line_table_rows(const struct line_table *t);
/* The heap the table holds, for the cache budget. */
uint64_t line_table_bytes(const struct line_table *t);
