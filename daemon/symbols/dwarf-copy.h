/* A file's DWARF sections, decompressed, in a private unlinked file of profd's own, so that libdw reads them through a read-only mapping instead of the heap. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Writes the .debug_* sections of the ELF file open as src_fd, decompressed
 * (SHF_COMPRESSED with zlib), into a new unlinked file in dir (O_TMPFILE),
 * as a minimal ELF file: the same ELF header without program headers, those
 * sections and a section name table. libdw finds in it exactly the DWARF it
 * would find in the original, and libelf can map it (ELF_C_READ_MMAP).
 *
 * Why a copy rather than mapping the original: debug sections of
 * distributions are compressed (libdw would inflate them into the heap
 * anyway), and a mapping of a file someone truncates in place (cp over a
 * library, a build rewriting its output, a debuginfod cache cleaned) turns
 * the next read into SIGBUS. Nobody else can reach an unlinked O_TMPFILE,
 * so its mapping cannot be cut short; a disk full while writing it is a
 * write error here, not a fault later.
 *
 * The copy is made only when it leaves dir's filesystem 64 MiB and a
 * twentieth of its size free: it goes next to the store, whose drains
 * matter more than heap saved.
 *
 * Returns 1 and *ret_fd (the copy, read/write, close-on-exec) and
 * *ret_size; 0 when the file is not one this handles (not 64-bit in the
 * host's byte order, relocatable, a dwz .gnu_debugaltlink to follow, GNU
 * .zdebug or non-zlib compression, no O_TMPFILE in dir, a write failing,
 * compressed data that does not inflate); -ENOSPC when there is no room
 * for it (short of the margin, or a write found the disk full: nothing of
 * it is left); in all these cases the caller reads the original as before;
 * or -ENOMEM. */
int dwarf_copy_make(int src_fd, const char *dir, int *ret_fd, uint64_t *ret_size);

/* Whether dir's filesystem has room for size more bytes and still keeps
 * 64 MiB and a twentieth of it free: the rule for every private file profd
 * puts next to its store instead of in its heap (the copies, and the
 * kernel's symbol table, kallsyms.h). */
bool dwarf_copy_fits(const char *dir, uint64_t size);

/* Copies n buffers, one after the other, into a new unlinked file in dir
 * (when dwarf_copy_fits) and maps it read-only and private: *ret_map and
 * *ret_size (the sum of sizes). Written 64 KiB at a time: the page cache
 * keeps a write's bytes in folios up to the write's size, and a fault on
 * the mapping maps a whole folio, so written at once a table became
 * resident within a few lookups. Returns 0, -ENOSPC (no room), or a
 * negative errno from the file or the mapping. */
int scratch_map(const char *dir, const void *const *bufs, const size_t *sizes, size_t n, void **ret_map,
                size_t *ret_size);
