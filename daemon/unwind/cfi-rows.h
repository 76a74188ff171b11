/* One FDE's CFI program run once, from its first byte to its last, into
 * the rows the BPF walker evaluates (struct profd_unwind_row): the table
 * builder's interpreter (unwind-table.c). Pure: bytes in, rows out; no
 * libdw, no ELF; unit-tested by test-cfi-rows.c, and against binutils'
 * reading of real files by test-unwind-table.c.
 *
 * Why not libdw's: dwarf_cfi_addrframe answers one address. It finds the
 * FDE in a search tree and runs its program from the start up to that
 * address, so asking for each of an FDE's n rows runs its program n
 * times; libLLVM's table took 150-180 ms that way, most of it in libdw's
 * trees and frame copies.
 *
 * The rules follow libdw's (elfutils 0.188) on x86-64 wherever a real
 * file can tell: the ABI's initial rules (rbp and the return address
 * "same value", rsp the CFA), DW_CFA_restore to the CIE's rule,
 * remember_state saving the CFA rule too, def_cfa_register and
 * def_cfa_offset leaving a CFA that was an expression invalid. Where this
 * interpreter is stricter, the rows are UNSUPPORTED (the walk stops,
 * counted), never a guess: DW_CFA_set_loc, a location moving backwards,
 * and register rules given as expressions outside signal frames (libdw
 * would read a few of them as offsets). None occurs in the files of this
 * machine. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../bpf/profd.h"

/* What an FDE's program needs from its CIE. */
struct cfi_cie {
        const uint8_t *initial, *initial_end; /* the CIE's initial instructions */
        uint64_t code_align;                  /* code_alignment_factor */
        int64_t data_align;                   /* data_alignment_factor */
        uint64_t ra_reg;                      /* return_address_register */
        bool signal;                          /* augmentation 'S': a signal frame */
};

/* Called for each row in address order: its first address (pc) and its
 * rules. A negative return ends the run and is returned. */
typedef int (*cfi_row_sink_t)(void *userdata, uint64_t pc, const struct profd_unwind_row *rule);

/* Runs the program [prog, prog_end) of the FDE that starts at fde_start,
 * after its CIE's initial instructions, and hands sink the rows that
 * cover [lo, hi) (lo >= fde_start; a row starting below lo is handed on at
 * lo). A program that cannot be run to its end (an unknown or truncated
 * instruction, restore_state with nothing remembered, an advance in the
 * CIE, remember_state nested deeper than CFI_ROWS_MAX_REMEMBER) gives one
 * UNSUPPORTED row where the row it was making begins, and no more. Returns
 * 0 or the sink's error. */
#define CFI_ROWS_MAX_REMEMBER 64
int cfi_rows(const struct cfi_cie *cie, uint64_t fde_start, const uint8_t *prog, const uint8_t *prog_end,
             uint64_t lo, uint64_t hi, cfi_row_sink_t sink, void *userdata);
