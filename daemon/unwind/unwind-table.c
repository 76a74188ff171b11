/* Unwind tables from ELF call-frame information (unwind-table.h): each
 * FDE's program run once (cfi-rows.c) into rows of the few kinds the BPF
 * walker evaluates (enum profd_unwind_kind), merged with their neighbour
 * when the rules repeat and handed on in pieces; the tables' lookup and
 * the bias of a mapping. The FDEs come from unwind-cfi.c, the sections
 * from unwind-reader.c. */
#include "unwind-table.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bsearch.h"
#include "cfi-rows.h"
#include "helpers.h"
#include "macro.h"
#include "unwind-build.h"

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

static int row_sink(void *userdata, uint64_t pc, const struct profd_unwind_row *rule) {
        return row_append(userdata, pc, rule);
}

int fde_rows(struct builder *b, const struct fde_range *f, uint64_t lo) {
        const uint8_t *data = b->data->d_buf;
        const struct cie_info *ci = cie_find(b, f->cie);
        struct cfi_cie cie;

        if (!ci)
                return -EINVAL; /* fdes_collect read it */
        cie = (struct cfi_cie) {
                .initial = ci->initial,
                .initial_end = ci->initial_end,
                .code_align = ci->code_align,
                .data_align = ci->data_align,
                .ra_reg = ci->ra_reg,
                .signal = ci->signal,
        };
        return cfi_rows(&cie, f->lo, data + f->prog, data + f->prog_end, lo, f->hi, row_sink, b);
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

