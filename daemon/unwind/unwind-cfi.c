/* The table builder's CFI side (unwind-build.h): CIEs and FDEs enumerated
 * with dwarf_next_cfi, their DW_EH_PE pointers decoded through a bounded
 * byte cursor (common/bytecursor.h: one overflow rule), and every program
 * checked before any row is read (the files come from processes profd
 * does not control). */
#include "unwind-build.h"

#include <dwarf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bsearch.h"
#include "bytecursor.h"
#include "cfi-rows.h"
#include "helpers.h"
#include "log.h"
#include "macro.h"

/* DW_EH_PE_* pointer encodings (LSB, .eh_frame): format in the low nibble,
 * how it applies in bits 4-6, indirection in bit 7. */
#define EH_PE_OMIT 0xff
#define EH_PE_FORMAT 0x0f
#define EH_PE_APPLY 0x70
#define EH_PE_INDIRECT 0x80
#define EH_PE_ABSPTR 0x00
#define EH_PE_ULEB128 0x01
#define EH_PE_UDATA2 0x02
#define EH_PE_UDATA4 0x03
#define EH_PE_UDATA8 0x04
#define EH_PE_SLEB128 0x09
#define EH_PE_SDATA2 0x0a
#define EH_PE_SDATA4 0x0b
#define EH_PE_SDATA8 0x0c
#define EH_PE_PCREL 0x10

void builder_drop(struct builder *b) {
        if (b->drop_len > 0)
                (void) madvise(b->drop_addr, b->drop_len, MADV_DONTNEED);
}

void builder_done(struct builder *b) {
        free(b->cies);
        free(b->fdes);
        free(b->piece);
}

/* Reads an n-byte little-endian integer (x86-64 only), sign-extended when
 * is_signed. A short read marks c bad. */
static uint64_t read_fixed(struct bytecursor *c, size_t n, bool is_signed) {
        uint64_t v = bytecursor_fixed_le(c, n);

        if (is_signed && n < 8 && (v >> (8 * n - 1)) & 1)
                v |= ~(uint64_t) 0 << (8 * n);
        return v;
}

/* Decodes the value of one DW_EH_PE-encoded pointer at c, its format
 * only. Returns -EOPNOTSUPP for formats we do not know, -EINVAL when
 * truncated or a LEB128 does not fit 64 bits (bytecursor.h). */
static int read_encoded_value(uint8_t enc, struct bytecursor *c, uint64_t *ret) {
        uint64_t v;

        if (enc == EH_PE_OMIT || (enc & EH_PE_INDIRECT))
                return -EOPNOTSUPP;
        switch (enc & EH_PE_FORMAT) {
        case EH_PE_ABSPTR:
        case EH_PE_UDATA8:
        case EH_PE_SDATA8:
                v = read_fixed(c, 8, false);
                break;
        case EH_PE_UDATA2:
        case EH_PE_SDATA2:
                v = read_fixed(c, 2, (enc & EH_PE_FORMAT) == EH_PE_SDATA2);
                break;
        case EH_PE_UDATA4:
        case EH_PE_SDATA4:
                v = read_fixed(c, 4, (enc & EH_PE_FORMAT) == EH_PE_SDATA4);
                break;
        case EH_PE_ULEB128:
                v = bytecursor_uleb(c);
                break;
        case EH_PE_SLEB128:
                v = (uint64_t) bytecursor_sleb(c);
                break;
        default:
                return -EOPNOTSUPP;
        }
        if (c->bad)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* Decodes one DW_EH_PE-encoded pointer at c in the CFI section. apply:
 * whether pc-relative applies (address_range is a plain length in the same
 * format). Returns as read_encoded_value, and -EOPNOTSUPP for applications
 * that need run-time data (data- or text-relative). */
static int read_encoded(struct builder *b, uint8_t enc, bool apply, struct bytecursor *c, uint64_t *ret) {
        uint64_t field = b->section_addr + (uint64_t) (c->p - (const uint8_t *) b->data->d_buf), v;
        int r;

        r = read_encoded_value(enc, c, &v);
        if (r < 0)
                return r;
        if (apply) {
                switch (enc & EH_PE_APPLY) {
                case 0:
                        break;
                case EH_PE_PCREL:
                        v += field;
                        break;
                default:
                        return -EOPNOTSUPP;
                }
        }
        *ret = v;
        return 0;
}

/* Every program is checked whole before its rows are read, and a file
 * with one program refused gets no table: a file that names registers
 * beyond x86-64's or nests remember_state deeper than any compiler does
 * was crafted or damaged, and its other rules are not to be trusted
 * either. x86-64 DWARF registers end at 130 (the mask registers k0-k7 are
 * 118-125); gcc nests remember_state once per epilogue block, and 64 is
 * far beyond it (cfi-rows.c keeps that many states). */
#define CFI_MAX_REGISTER 255
#define CFI_MAX_REMEMBER CFI_ROWS_MAX_REMEMBER

static bool cfi_register_ok(struct bytecursor *c) {
        uint64_t reg = bytecursor_uleb(c);

        return !c->bad && reg <= CFI_MAX_REGISTER;
}

static bool cfi_skip_uleb(struct bytecursor *c) {
        (void) bytecursor_uleb(c);
        return !c->bad;
}

static bool cfi_skip_sleb(struct bytecursor *c) {
        (void) bytecursor_sleb(c);
        return !c->bad;
}

static bool cfi_skip_block(struct bytecursor *c) {
        uint64_t len = bytecursor_uleb(c);

        return !c->bad && bytecursor_skip(c, (size_t) len);
}

/* Checks a CFI program (a CIE's initial instructions or an FDE's): no
 * unknown opcode, no truncated operand, no register number above
 * CFI_MAX_REGISTER, no remember_state nested deeper than CFI_MAX_REMEMBER.
 * *ret_rows: how many rows the program makes at most (loc advances). */
static bool cfi_program_ok(struct builder *b, uint8_t fde_encoding, const uint8_t *p, const uint8_t *end,
                           uint64_t *ret_rows) {
        struct bytecursor c = bytecursor_make(p, (size_t) (end - p));
        uint64_t rows = 0, depth = 0, ignored;

        while (bytecursor_left(&c) > 0) {
                uint8_t op = (uint8_t) bytecursor_fixed_le(&c, 1);
                bool ok;

                switch (op & 0xc0) {
                case DW_CFA_advance_loc:
                        rows++;
                        continue;
                case DW_CFA_offset:
                        if (!cfi_skip_uleb(&c))
                                return false;
                        continue;
                case DW_CFA_restore:
                        continue;
                }
                switch (op) {
                case DW_CFA_nop:
                case DW_CFA_GNU_window_save:
                        ok = true;
                        break;
                case DW_CFA_set_loc:
                        ok = read_encoded(b, fde_encoding, false, &c, &ignored) == 0;
                        rows++;
                        break;
                case DW_CFA_advance_loc1:
                        ok = bytecursor_skip(&c, 1);
                        rows++;
                        break;
                case DW_CFA_advance_loc2:
                        ok = bytecursor_skip(&c, 2);
                        rows++;
                        break;
                case DW_CFA_advance_loc4:
                        ok = bytecursor_skip(&c, 4);
                        rows++;
                        break;
                case DW_CFA_MIPS_advance_loc8:
                        ok = bytecursor_skip(&c, 8);
                        rows++;
                        break;
                case DW_CFA_offset_extended:
                case DW_CFA_val_offset:
                case DW_CFA_GNU_negative_offset_extended:
                        ok = cfi_register_ok(&c) && cfi_skip_uleb(&c);
                        break;
                case DW_CFA_offset_extended_sf:
                case DW_CFA_val_offset_sf:
                        ok = cfi_register_ok(&c) && cfi_skip_sleb(&c);
                        break;
                case DW_CFA_restore_extended:
                case DW_CFA_undefined:
                case DW_CFA_same_value:
                case DW_CFA_def_cfa_register:
                        ok = cfi_register_ok(&c);
                        break;
                case DW_CFA_register:
                        ok = cfi_register_ok(&c) && cfi_register_ok(&c);
                        break;
                case DW_CFA_remember_state:
                        ok = ++depth <= CFI_MAX_REMEMBER;
                        break;
                case DW_CFA_restore_state:
                        ok = depth > 0;
                        depth--;
                        break;
                case DW_CFA_def_cfa:
                        ok = cfi_register_ok(&c) && cfi_skip_uleb(&c);
                        break;
                case DW_CFA_def_cfa_sf:
                        ok = cfi_register_ok(&c) && cfi_skip_sleb(&c);
                        break;
                case DW_CFA_def_cfa_offset:
                case DW_CFA_GNU_args_size:
                        ok = cfi_skip_uleb(&c);
                        break;
                case DW_CFA_def_cfa_offset_sf:
                        ok = cfi_skip_sleb(&c);
                        break;
                case DW_CFA_def_cfa_expression:
                        ok = cfi_skip_block(&c);
                        break;
                case DW_CFA_expression:
                case DW_CFA_val_expression:
                        ok = cfi_register_ok(&c) && cfi_skip_block(&c);
                        break;
                default:
                        ok = false;
                }
                if (!ok)
                        return false;
        }
        if (ret_rows)
                *ret_rows = rows;
        return true;
}

/* Fills *ret from a CIE: the FDE pointer encoding ('R') and the signal-frame
 * mark ('S'). .debug_frame CIEs carry no augmentation: absolute pointers. */
static void cie_parse_augmentation(struct builder *b, const Dwarf_CIE *cie, struct cie_info *ret);

static void cie_parse(struct builder *b, Dwarf_Off offset, const Dwarf_CIE *cie, struct cie_info *ret) {
        *ret = (struct cie_info) { .offset = offset, .fde_encoding = EH_PE_ABSPTR };
        cie_parse_augmentation(b, cie, ret);
        ret->initial = cie->initial_instructions;
        ret->initial_end = cie->initial_instructions_end;
        ret->code_align = cie->code_alignment_factor;
        ret->data_align = cie->data_alignment_factor;
        ret->ra_reg = cie->return_address_register;
        if (!ret->bad && !cfi_program_ok(b, ret->fde_encoding, cie->initial_instructions,
                                         cie->initial_instructions_end, NULL))
                ret->bad = true;
}

static void cie_parse_augmentation(struct builder *b, const Dwarf_CIE *cie, struct cie_info *ret) {
        struct bytecursor c = bytecursor_make(cie->augmentation_data, cie->augmentation_data_size);
        const char *a = cie->augmentation;

        if (!a || !*a)
                return;
        if (*a != 'z') {
                /* .debug_frame CIEs have no 'z' but may be "S" (GNU as
                 * writes it for .cfi_signal_frame): letters without data.
                 * Any other letter has data of unknown size (old "eh"
                 * CIEs): libdw cannot read these FDEs either. */
                if (strspn(a, "SBG") != strlen(a)) {
                        ret->bad = true;
                        return;
                }
                ret->signal = strchr(a, 'S') != NULL;
                return;
        }
        ret->sized = true;
        for (a++; *a; a++) {
                uint64_t ignored;

                switch (*a) {
                case 'R':
                        ret->fde_encoding = (uint8_t) bytecursor_fixed_le(&c, 1);
                        if (c.bad)
                                goto bad;
                        break;
                case 'L':
                        if (!bytecursor_skip(&c, 1))
                                goto bad;
                        break;
                case 'P': {
                        uint8_t enc = (uint8_t) bytecursor_fixed_le(&c, 1);

                        if (c.bad || read_encoded(b, enc & ~EH_PE_INDIRECT, false, &c, &ignored) < 0)
                                goto bad;
                        break;
                }
                case 'S':
                        ret->signal = true;
                        break;
                case 'B': /* AArch64 BTI; no data */
                case 'G': /* MTE tagged frames; no data */
                        break;
                default:
                        /* 'z' sized the data: the rest can be skipped safely
                         * only if 'R' came first, which it did if it was read */
                        return;
                }
        }
        return;
bad:
        ret->bad = true;
}

/* The CIE at offset, read once and cached. Returns NULL on ENOMEM (*r set)
 * or when no CIE is there (*r = -EINVAL). */
static const struct cie_info *cie_get(struct builder *b, Dwarf_Off offset, int *r) {
        size_t lo = LOWER_BOUND_BY(b->cies, b->n_cies, offset, offset);
        Dwarf_CFI_Entry entry;
        Dwarf_Off next;

        if (lo < b->n_cies && b->cies[lo].offset == offset)
                return &b->cies[lo];
        if (dwarf_next_cfi(b->ident, b->data, b->eh_frame, offset, &next, &entry) != 0 ||
            !dwarf_cfi_cie_p(&entry)) {
                *r = -EINVAL;
                return NULL;
        }
        *r = array_grow((void **) &b->cies, &b->cap_cies, b->n_cies + 1, sizeof(*b->cies));
        if (*r < 0)
                return NULL;
        memmove(b->cies + lo + 1, b->cies + lo, (b->n_cies - lo) * sizeof(*b->cies));
        b->n_cies++;
        cie_parse(b, offset, &entry.cie, &b->cies[lo]);
        return &b->cies[lo];
}

const struct cie_info *cie_find(const struct builder *b, uint64_t offset) {
        size_t lo = LOWER_BOUND_BY(b->cies, b->n_cies, offset, offset);

        return lo < b->n_cies && b->cies[lo].offset == offset ? &b->cies[lo] : NULL;
}

/* Collects [lo, hi) of every FDE in the section. FDEs whose CIE we cannot
 * read are skipped: their addresses become gaps, walked by frame pointer.
 * Returns 0, -E2BIG (code above 4 GiB), -EINVAL (section unreadable from
 * the first entry), -ENOMEM. */
int fdes_collect(struct builder *b) {
        Dwarf_Off offset = 0, next;
        size_t entries = 0;
        int r;

        /* struct fde_range keeps offsets in the section in 32 bits */
        if (b->data->d_size > UINT32_MAX)
                return -E2BIG;
        for (;;) {
                Dwarf_CFI_Entry entry;
                const struct cie_info *cie;
                struct bytecursor c;
                uint64_t lo, len, rows;

                r = dwarf_next_cfi(b->ident, b->data, b->eh_frame, offset, &next, &entry);
                if (r > 0)
                        break; /* end of section */
                if (r < 0) {
                        /* A damaged entry ends the walk; what came before stands. */
                        if (b->n_fdes == 0 && b->n_cies == 0)
                                return -EINVAL;
                        log_debug("Unreadable CFI entry at offset %" PRIu64 ": %s, ignoring the rest",
                                  (uint64_t) offset, dwarf_errmsg(-1));
                        break;
                }
                offset = next;
                if (++entries % (16 * DROP_FDES) == 0)
                        builder_drop(b); /* read in order: behind the reading */
                if (dwarf_cfi_cie_p(&entry))
                        continue;

                cie = cie_get(b, entry.fde.CIE_pointer, &r);
                if (!cie) {
                        if (r == -ENOMEM)
                                return r;
                        continue;
                }
                /* a program refused (or an augmentation we cannot skip) in
                 * a CIE its FDEs share: no table at all */
                if (cie->bad)
                        return -EINVAL;
                c = bytecursor_make(entry.fde.start, (size_t) (entry.fde.end - entry.fde.start));
                if (read_encoded(b, cie->fde_encoding, true, &c, &lo) < 0 ||
                    read_encoded(b, cie->fde_encoding & EH_PE_FORMAT, false, &c, &len) < 0 ||
                    (cie->sized && !cfi_skip_block(&c)) ||
                    !cfi_program_ok(b, cie->fde_encoding, c.p, c.end, &rows))
                        return -EINVAL;
                if (len == 0)
                        continue; /* covers nothing (discarded sections leave these) */
                if (lo == 0 && !b->eh_frame)
                        continue; /* .debug_frame FDE of a function the linker dropped */
                /* the GAP row after the last FDE needs a pc too */
                if (lo > UINT32_MAX || len > UINT32_MAX - lo)
                        return -E2BIG;
                r = array_grow((void **) &b->fdes, &b->cap_fdes, b->n_fdes + 1, sizeof(*b->fdes));
                if (r < 0)
                        return r;
                b->row_bound += (size_t) rows + 2;
                b->fdes[b->n_fdes++] = (struct fde_range) {
                        .lo = (uint32_t) lo,
                        .hi = (uint32_t) (lo + len),
                        .cie = (uint32_t) cie->offset,
                        .prog = (uint32_t) (c.p - (const uint8_t *) b->data->d_buf),
                        .prog_end = (uint32_t) (c.end - (const uint8_t *) b->data->d_buf),
                };
        }
        return 0;
}

int fde_range_compare(const void *a, const void *b) {
        const struct fde_range *x = a, *y = b;

        if (x->lo != y->lo)
                return x->lo < y->lo ? -1 : 1;
        return x->hi < y->hi ? -1 : x->hi > y->hi;
}
