/* Unwind tables from ELF call-frame information: the pure core of profd's
 * user-stack unwinder. A table turns a file's .eh_frame (else .debug_frame)
 * into sorted rows the BPF walker can evaluate (struct profd_unwind_row in
 * bpf/profd.h): per address range, where the CFA is and where the return
 * address and the caller's rbp were saved. Rules BPF cannot evaluate get an
 * explicit kind, never a wrong answer. No BPF, no /proc: unit-tested on
 * fixture files. */
#pragma once

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../bpf/profd.h"
#include "macro.h"

struct unwind_table {
        struct profd_unwind_row *rows; /* sorted by pc, equal neighbours merged */
        size_t n;
        /* what the CFI held, for status and benchmarks */
        size_t fdes;                      /* FDEs read */
        size_t by_kind[PROFD_UNWIND_UNSUPPORTED + 1]; /* rows by kind, after merging */
};

/* Builds the table of an ELF file. Returns 0; -ENODATA when the file has no
 * CFI (it is then walked by frame pointers); -E2BIG when its code lies above
 * 4 GiB; -EINVAL for CFI that cannot be read, or is refused (an unknown
 * opcode, a register number beyond x86-64's, remember_state nested too
 * deep: crafted or damaged files); -ENOMEM. On error *ret is empty. Each
 * FDE's program is run once (cfi-rows.h), so the work is linear in the
 * section's size. */
int unwind_table_build(Elf *elf, struct unwind_table *ret);
void unwind_table_done(struct unwind_table *t);

/* The same table in two steps, for a caller that keeps its rows elsewhere
 * (the daemon writes them into the kernel's as they come, never holding a
 * large table in its heap). unwind_reader_new reads the file's FDEs, as
 * unwind_table_build and with its errors, and tells how many rows the table
 * can have at most (one FDE's rows are bounded by its program's advances)
 * and the pcs its first and last rows will have. unwind_reader_rows then
 * reads the rows, once, and hands them to sink in order, in pieces of at
 * most UNWIND_PIECE_ROWS: the rows unwind_table_build makes. A sink's
 * negative return ends the reading and is returned. *ret_counts gets the
 * figures of the table, without rows. fd: the file elf reads, or -1. With
 * it the reader maps the file itself and gives back the pages of
 * .eh_frame as it reads them (reader_map); the rows are the same. Where
 * FDEs overlap, the one starting first keeps its addresses. */
#define UNWIND_PIECE_ROWS 8192
typedef struct unwind_reader unwind_reader;
typedef int (*unwind_sink_t)(void *userdata, const struct profd_unwind_row *rows, size_t n);
int unwind_reader_new(Elf *elf, int fd, unwind_reader **ret);
size_t unwind_reader_bound(const unwind_reader *r);
void unwind_reader_span(const unwind_reader *r, uint32_t *ret_first, uint32_t *ret_last);
int unwind_reader_rows(unwind_reader *r, unwind_sink_t sink, void *userdata, struct unwind_table *ret_counts);
unwind_reader *unwind_reader_free(unwind_reader *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(unwind_reader *, unwind_reader_free)
/* A sink that appends to userdata, a struct unwind_table whose rows have
 * room for unwind_reader_bound rows. */
int unwind_table_add(void *userdata, const struct profd_unwind_row *rows, size_t n);

/* The row covering pc (an address in the file's ELF address space), as the
 * BPF walker finds it: the last row whose pc <= pc; NULL below the first. */
const struct profd_unwind_row *unwind_table_lookup(const struct unwind_table *t, uint64_t pc);

/* The bias of a mapping of this file: ip - bias is the ELF address of ip.
 * map_offset is the file offset mapped at map_start (/proc/PID/maps). Uses
 * the PT_LOAD segment holding map_offset. Returns 0 or -ENOENT (no such
 * segment). */
int unwind_mapping_bias(Elf *elf, uint64_t map_start, uint64_t map_offset, uint64_t *ret_bias);
