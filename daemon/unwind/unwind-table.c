/* Unwind tables from ELF call-frame information (unwind-table.h): each
 * row libdw's CFI interpreter gives is classified into the few kinds the
 * BPF walker evaluates (enum profd_unwind_kind), merged with its neighbour
 * when the rules repeat and handed on in pieces; the tables' index and the
 * bias of a mapping. The FDEs come from unwind-cfi.c, libdw's reading from
 * unwind-reader.c. */
#include "unwind-table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bsearch.h"
#include "helpers.h"
#include "log.h"
#include "macro.h"
#include "unwind-build.h"

/* x86-64 DWARF register numbers (System V psABI, figure 3.36). */
#define DWARF_REG_RBP 6
#define DWARF_REG_RSP 7
#define DWARF_REG_RA 16

/* The offset N of a rule "saved at CFA + N" as dwarf_frame_register gives
 * it: DW_OP_call_frame_cfa, then DW_OP_plus_uconst N unless N is 0 (the
 * unsigned operand wraps for negative N). */
static bool rule_cfa_offset(const Dwarf_Op *ops, size_t nops, int64_t *ret) {
        if (nops == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
                *ret = 0;
                return true;
        }
        if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst) {
                *ret = (int64_t) ops[1].number;
                return true;
        }
        return false;
}

/* The PLT stub rule as GNU ld writes it for x86-64 lazy-binding stubs:
 *   DW_OP_breg7 (rsp) 8; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and;
 *   DW_OP_litK; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * i.e. CFA = rsp + 8 + (((rip & 15) >= K) << 3): before the stub's push
 * (the first K bytes of its 16) one word is on the stack, after it two.
 * K is 11 for classic stubs, 10 for IBT stubs. Returns K, or -1. */
static int plt_threshold(const Dwarf_Op *ops, size_t nops) {
        if (nops != 9)
                return -1;
        if (!(ops[0].atom == DW_OP_breg7 && ops[0].number == 8) ||
            !(ops[1].atom == DW_OP_breg16 && ops[1].number == 0) || ops[2].atom != DW_OP_lit15 ||
            ops[3].atom != DW_OP_and || ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit15 ||
            ops[5].atom != DW_OP_ge || ops[6].atom != DW_OP_lit3 || ops[7].atom != DW_OP_shl ||
            ops[8].atom != DW_OP_plus)
                return -1;
        return ops[4].atom - DW_OP_lit0;
}

/* Classifies the rules of one CFI row into *row (pc left to the caller). */
static void row_classify(Dwarf_Frame *frame, bool signal, struct profd_unwind_row *row) {
        Dwarf_Op ops_mem[3], *ops;
        size_t nops;
        int64_t off;
        bool signalp = false;
        int ra, k;

        row->cfa_off = 0;
        row->rbp_off = 0;
        row->kind = PROFD_UNWIND_UNSUPPORTED;

        ra = dwarf_frame_info(frame, NULL, NULL, &signalp);
        if (signalp || signal) {
                row->kind = PROFD_UNWIND_SIGNAL;
                return;
        }
        if (ra != DWARF_REG_RA)
                return;

        /* Return address: undefined ends the stack; else it must be the
         * word just below the CFA (where call pushed it). */
        if (dwarf_frame_register(frame, ra, ops_mem, &ops, &nops) < 0)
                return;
        if (nops == 0) {
                if (ops) /* undefined (NULL would be "same value": meaningless for RA) */
                        row->kind = PROFD_UNWIND_END;
                return;
        }
        if (!rule_cfa_offset(ops, nops, &off) || off != -8)
                return;

        /* CFA */
        if (dwarf_frame_cfa(frame, &ops, &nops) < 0 || nops == 0)
                return;
        if (nops == 1 && (ops[0].atom == DW_OP_bregx || (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31))) {
                uint64_t reg = ops[0].atom == DW_OP_bregx ? ops[0].number : (uint64_t) (ops[0].atom - DW_OP_breg0);
                int64_t cfa = (int64_t) (ops[0].atom == DW_OP_bregx ? ops[0].number2 : ops[0].number);

                if (cfa < 0 || cfa > UINT16_MAX)
                        return;
                if (reg == DWARF_REG_RSP)
                        row->kind = PROFD_UNWIND_CFA_SP;
                else if (reg == DWARF_REG_RBP)
                        row->kind = PROFD_UNWIND_CFA_FP;
                else
                        return;
                row->cfa_off = (uint16_t) cfa;
        } else if ((k = plt_threshold(ops, nops)) >= 0) {
                row->kind = PROFD_UNWIND_PLT;
                row->cfa_off = (uint16_t) k;
        } else
                return;

        /* The caller's rsp is the CFA, as libdw's x86-64 ABI rule says
         * (val_offset(0)), unless the CFI saved it elsewhere (setcontext,
         * hand-written context switches). */
        if (dwarf_frame_register(frame, DWARF_REG_RSP, ops_mem, &ops, &nops) < 0)
                goto unsupported;
        if (nops != 0 && !(nops == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_stack_value))
                goto unsupported;

        /* The caller's rbp: unchanged (same value, or undefined, which is
         * how eh_frame leaves callee-saved registers it never touches), or
         * saved in a word at CFA + 8 * n. */
        if (dwarf_frame_register(frame, DWARF_REG_RBP, ops_mem, &ops, &nops) < 0)
                goto unsupported;
        if (nops == 0)
                return;
        if (!rule_cfa_offset(ops, nops, &off) || off == 0 || off % 8 != 0 || off / 8 < INT8_MIN ||
            off / 8 > INT8_MAX)
                goto unsupported;
        row->rbp_off = (int8_t) (off / 8);
        return;
unsupported:
        row->kind = PROFD_UNWIND_UNSUPPORTED;
        row->cfa_off = 0;
        row->rbp_off = 0;
}

int piece_flush(struct builder *b) {
        int r;

        if (b->n_piece == 0)
                return 0;
        r = b->sink(b->userdata, b->piece, b->n_piece);
        b->n_piece = 0;
        builder_drop(b);
        return r;
}

/* Keeps a row unless it repeats the last one's rules, which then covers it
 * too. The FDEs bound the rows (row_bound); past it, the CFI was not what
 * was checked. */
int row_append(struct builder *b, uint64_t pc, const struct profd_unwind_row *rule) {
        int r;

        if (b->n_rows > 0 && b->last.kind == rule->kind && b->last.cfa_off == rule->cfa_off &&
            b->last.rbp_off == rule->rbp_off)
                return 0;
        if (b->n_rows >= b->row_bound)
                return -EINVAL;
        if (b->n_piece == UNWIND_PIECE_ROWS) {
                r = piece_flush(b);
                if (r < 0)
                        return r;
        }
        b->last = *rule;
        b->last.pc = (uint32_t) pc;
        b->piece[b->n_piece++] = b->last;
        b->n_rows++;
        b->by_kind[rule->kind]++;
        return 0;
}

/* Appends the rows of [lo, hi), walking libdw's rows by their end address:
 * after DW_CFA_restore_state, dwarf_frame_info may report a start below the
 * address asked for, but the end is right. */
int fde_rows(struct builder *b, Dwarf_CFI *cfi, uint64_t lo, uint64_t hi, bool signal) {
        for (uint64_t addr = lo; addr < hi;) {
                struct profd_unwind_row rule = { .kind = PROFD_UNWIND_UNSUPPORTED };
                Dwarf_Frame *frame = NULL;
                Dwarf_Addr start, end;
                int r;

                if (dwarf_cfi_addrframe(cfi, addr, &frame) < 0) {
                        /* CFI libdw cannot execute (an unknown opcode): a
                         * wrong guess would be worse than stopping. */
                        log_debug("No CFI row at 0x%" PRIx64 " in FDE [0x%" PRIx64 ", 0x%" PRIx64 "): %s",
                                  addr, lo, hi, dwarf_errmsg(-1));
                        return row_append(b, addr, &rule);
                }
                if (dwarf_frame_info(frame, &start, &end, NULL) < 0 || end <= addr || end > hi)
                        end = hi;
                row_classify(frame, signal, &rule);
                free(frame);
                r = row_append(b, addr, &rule);
                if (r < 0)
                        return r;
                addr = end;
        }
        return 0;
}

int unwind_table_add(void *userdata, const struct profd_unwind_row *rows, size_t n) {
        struct unwind_table *t = userdata;

        memcpy(t->rows + t->n, rows, n * sizeof(*rows));
        t->n += n;
        return 0;
}

int unwind_table_build(Elf *elf, struct unwind_table *ret) {
        _cleanup_(unwind_reader_freep) unwind_reader *r = NULL;
        struct unwind_table t = {}, counts;
        int k;

        *ret = (struct unwind_table) {};
        k = unwind_reader_new(elf, -1, &r);
        if (k < 0)
                return k;
        /* one allocation, trimmed at the end */
        t.rows = reallocarray(NULL, unwind_reader_bound(r), sizeof(*t.rows));
        if (!t.rows)
                return -ENOMEM;
        k = unwind_reader_rows(r, unwind_table_add, &t, &counts);
        if (k < 0) {
                free(t.rows);
                return k;
        }
        /* Give back what merging and the bound left unused. */
        counts.rows = reallocarray(t.rows, counts.n, sizeof(*t.rows)) ?: t.rows;
        *ret = counts;
        return 0;
}

void unwind_table_done(struct unwind_table *t) {
        if (!t)
                return;
        free(t->rows);
        *t = (struct unwind_table) {};
}

const struct profd_unwind_row *unwind_table_lookup(const struct unwind_table *t, uint64_t pc) {
        /* the first row whose pc is above; the one before it covers pc */
        size_t lo = UPPER_BOUND_BY(t->rows, t->n, pc, pc);

        return lo == 0 ? NULL : &t->rows[lo - 1];
}

/* The kernel maps segments at page granularity: a segment's first page
 * starts this far below its p_offset. 4 KiB pages on x86-64. */
#define PAGE_MASK_4K ((uint64_t) 4095)

int unwind_mapping_bias(Elf *elf, uint64_t map_start, uint64_t map_offset, uint64_t *ret_bias) {
        size_t n;
        bool found = false;
        GElf_Phdr best;

        if (elf_getphdrnum(elf, &n) < 0)
                return -ENOENT;
        /* An executable mapping's offset can fall in two segments' shared
         * page (-z noseparate-code): the executable one is meant. */
        for (size_t i = 0; i < n; i++) {
                GElf_Phdr ph;

                if (!gelf_getphdr(elf, (int) i, &ph) || ph.p_type != PT_LOAD)
                        continue;
                if (map_offset < ph.p_offset - (ph.p_vaddr & PAGE_MASK_4K) ||
                    map_offset >= ph.p_offset + MAX(ph.p_filesz, (uint64_t) 1))
                        continue;
                if (!found || (!(best.p_flags & PF_X) && (ph.p_flags & PF_X))) {
                        best = ph;
                        found = true;
                }
        }
        if (!found)
                return -ENOENT;
        /* File offset o is mapped at map_start + (o - map_offset); ELF
         * address v of the segment lies at file offset v - p_vaddr + p_offset. */
        *ret_bias = map_start - map_offset + best.p_offset - best.p_vaddr;
        return 0;
}

