/* What profd reads from an ELF file itself: load segments, function symbol tables, build-id, .gnu_debuglink. */
#pragma once

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(Elf *, elf_end);

/* A function symbol, 16 bytes: a build host's processes map files with
 * 170 k of them (libLLVM, libclang-cpp, the compilers' libraries), and
 * their tables are most of what the symbol cache cannot let go of while
 * those processes live. Offsets, not pointers. */
struct func_sym {
        uint32_t start; /* above func_table.base */
        uint32_t size;  /* 0 for symbols without a size (hand-written assembly) */
        uint32_t name;  /* offset in func_table.names */
        /* The alias libdwfl (eu-addr2line) names this address with, which
         * sym_file_resolve follows: the best bound, then the smallest, then
         * the first in the table. Also an offset in names, often == name. */
        uint32_t dwfl_name;
};

/* Which symbol table a function table came from, best last. */
enum symtab_kind {
        SYMTAB_NONE,
        SYMTAB_DYNSYM,
        SYMTAB_FULL,
};

/* Empty ({}) means no symbols (SYMTAB_NONE). */
struct func_table {
        struct func_sym *syms; /* sorted by start, starts unique */
        size_t n_syms;
        uint64_t base; /* the lowest start */
        char *names; /* one allocation for every name, so the Elf can be closed */
        size_t names_len;
        bool mapped; /* syms and names are one read-only mapping (func_table_map), not heap */
        enum symtab_kind kind;
};

/* A PT_LOAD program header: how file offsets map to virtual addresses. */
struct load_segment {
        uint64_t offset;
        uint64_t vaddr;
        uint64_t filesz;
};

/* Returns 0 when the program and section header tables the ELF header
 * promises can be read, else -ENOEXEC: such a file is truncated (maybe still
 * being written) and should not be cached as a file without symbols. */
int elf_check_headers(Elf *e, const GElf_Ehdr *ehdr);

/* The GNU build-id as lowercase hex: looks in SHT_NOTE sections first and
 * falls back to PT_NOTE segments, which survive even when the section
 * headers were stripped. Sets *ret to NULL when there is none (malformed
 * notes count as none). Returns 0 or -ENOMEM. */
int elf_read_build_id(Elf *e, char **ret);

/* The PT_LOAD segments with file contents (.bss-only ones are left out: no
 * file offset can point into them), in program header order. *ret is NULL
 * when there are none or the table is unreadable. Returns 0 or -ENOMEM. */
int elf_read_segments(Elf *e, struct load_segment **ret, size_t *ret_n);

/* The virtual address file_offset is loaded at; false when it lies in no
 * segment. *ret_seg is that segment. */
bool load_segments_vaddr(const struct load_segment *segments, size_t n, uint64_t file_offset,
                         uint64_t *ret_vaddr, const struct load_segment **ret_seg);

/* Reads .symtab, or .dynsym when .symtab is absent or has no functions (a
 * stripped file), or with symtab_only only .symtab (a debug file, whose
 * .dynsym is a copy at best); sorts and deduplicates, and copies the names
 * out of the Elf into t (which must be empty). An unreadable table adds
 * nothing. Returns 0 or -ENOMEM (t then stays empty). */
int elf_read_functions(Elf *e, bool symtab_only, struct func_table *t);

/* A function symbol for func_table_pack. */
struct func_entry {
        uint64_t start;
        uint64_t size;
        const char *name;
        const char *dwfl_name; /* == name, or another string */
};

/* Packs n entries, sorted by start and with unique starts, into t (which
 * must be empty), copying their names. Starts more than 4 GiB above the
 * first are left out (a file's code stays within 2 GiB in x86-64's code
 * models), and sizes of 4 GiB or more are kept as UINT32_MAX. Returns 0 or
 * -ENOMEM (t then stays empty); names over 4 GiB in all are -E2BIG. */
int func_table_pack(struct func_table *t, const struct func_entry *e, size_t n);

static inline uint64_t func_sym_start(const struct func_table *t, const struct func_sym *s) {
        return t->base + s->start;
}

static inline const char *func_sym_name(const struct func_table *t, const struct func_sym *s) {
        return t->names + s->name;
}

static inline const char *func_sym_dwfl_name(const struct func_table *t, const struct func_sym *s) {
        return t->names + s->dwfl_name;
}

/* Frees the table's arrays and empties it; an empty table is fine. */
void func_table_done(struct func_table *t);

/* Tables (symbols and names) of at least this many bytes are worth a
 * mapping of their own: C++ libraries and compilers (libLLVM's 2.8 MB of
 * names, cc1plus's 1.4 MB; libjvm's 58 k symbols, 0.9 MB of them), which a
 * host running builds and tests maps by the dozen. */
#define FUNC_NAMES_MAP_MIN (64 * 1024)

/* The bytes a table holds: its symbols and their names. */
static inline size_t func_table_bytes(const struct func_table *t) {
        return t->n_syms * sizeof(*t->syms) + t->names_len;
}

/* When the table takes at least min_bytes, moves its symbols and names out
 * of the heap into a private unlinked file in dir, mapped read-only
 * (scratch_map), so that they are page cache a lookup faults in and
 * func_table_drop_pages gives back. Names stay at the same offsets.
 * Returns 0 (also when too small or already mapped), -ENOSPC (no room: the
 * table stays in the heap), or a negative errno. */
int func_table_map(struct func_table *t, const char *dir, size_t min_bytes);
/* Brings a mapped table back into the heap (the disk is wanted). Returns
 * the bytes given back to the disk, 0 when not mapped, or -ENOMEM. */
int64_t func_table_unmap(struct func_table *t);
/* Lets the kernel take back the resident pages of a mapped table. */
void func_table_drop_pages(const struct func_table *t);

/* The function symbol covering vaddr in seg (the segment vaddr lies in), or
 * NULL. A symbol without a size runs up to the next one, but not across
 * segments. */
const struct func_sym *func_table_find(const struct func_table *t, uint64_t vaddr,
                                       const struct load_segment *seg);

/* Whether the file carries DWARF itself: stripped files and the binaries
 * next to a debug file have no .debug_info (or only a NOBITS stub). */
bool elf_has_dwarf(Elf *e);

/* Reads .gnu_debuglink: a file name, NUL, padding to 4, and the CRC32 of the
 * debug file in the file's byte order. Returns 1 with *ret_name (a copy) and
 * *ret_crc, 0 when there is none or it is malformed (a name with a '/'
 * too), -ENOMEM. */
int elf_read_debuglink(Elf *e, char **ret_name, uint32_t *ret_crc);
