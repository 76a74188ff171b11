/* Unwind tables from ELF call-frame information: every FDE of .eh_frame
 * (else .debug_frame) is enumerated with dwarf_next_cfi and its program
 * checked (the files come from processes profd does not control), its rows
 * are read through libdw's CFI interpreter, and each row's rules are
 * classified into the few kinds the BPF walker evaluates (enum
 * profd_unwind_kind). */
#include "unwind-table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bsearch.h"
#include "helpers.h"
#include "log.h"
#include "macro.h"

/* x86-64 DWARF register numbers (System V psABI, figure 3.36). */
#define DWARF_REG_RBP 6
#define DWARF_REG_RSP 7
#define DWARF_REG_RA 16

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

/* What an FDE needs from its CIE. */
struct cie_info {
        Dwarf_Off offset;
        uint8_t fde_encoding; /* of initial_location and address_range */
        bool signal;          /* augmentation 'S' */
        bool sized;           /* augmentation 'z': FDEs hold a sized augmentation block */
        bool bad;             /* an augmentation we cannot skip, or a program libdw must not run */
        uint64_t program_len; /* of its initial instructions */
};

struct fde_range {
        uint32_t lo, hi; /* [lo, hi): fdes_collect refuses code above 4 GiB */
        bool signal;     /* its CIE marks a signal frame */
        bool costly;     /* too much work for libdw (CFI_MAX_*_WORK): one UNSUPPORTED row */
};

struct builder {
        const unsigned char *ident;
        Elf_Data *data;
        uint64_t section_addr; /* sh_addr: where pc-relative pointers start from */
        bool eh_frame;

        struct cie_info *cies; /* sorted by offset */
        size_t n_cies, cap_cies;
        struct fde_range *fdes;
        size_t n_fdes, cap_fdes;
        uint64_t work;     /* sum of the FDEs' work (CFI_MAX_FILE_WORK) */
        size_t row_bound;  /* rows the FDEs can make at most */
        uint64_t *offsets; /* section offsets of the FDEs checked, ascending */
        size_t n_offsets, cap_offsets;

        /* the rows read, merged and handed on in pieces */
        struct profd_unwind_row *piece;
        size_t n_piece;
        struct profd_unwind_row last; /* the last row kept, in piece or handed on */
        size_t n_rows;                /* rows kept */
        size_t by_kind[PROFD_UNWIND_UNSUPPORTED + 1];
        unwind_sink_t sink;
        void *userdata;
        void *drop_addr; /* pages of the section given back after each piece (reader_drop_range) */
        size_t drop_len;
};

/* How often the pages of the section read are given back: every this many
 * FDEs. libLLVM's FDEs are scattered over its .eh_frame in address order,
 * and each fault maps the pages around it too: given back every 8,192
 * rows, 5.7 MiB of it was mapped at once; every 256 FDEs, 1.5 MiB, and the
 * build took no longer (0.19-0.21 s). */
#define DROP_FDES 256

static void builder_drop(struct builder *b) {
        if (b->drop_len > 0)
                (void) madvise(b->drop_addr, b->drop_len, MADV_DONTNEED);
}

static void builder_done(struct builder *b) {
        free(b->cies);
        free(b->fdes);
        free(b->offsets);
        free(b->piece);
}

static int read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *ret) {
        uint64_t v = 0;

        for (unsigned shift = 0; *p < end; shift += 7) {
                uint8_t byte = *(*p)++;

                if (shift < 64)
                        v |= (uint64_t) (byte & 0x7f) << shift;
                if (!(byte & 0x80)) {
                        *ret = v;
                        return 0;
                }
        }
        return -EINVAL;
}

static int read_sleb(const uint8_t **p, const uint8_t *end, int64_t *ret) {
        uint64_t v = 0;
        unsigned shift = 0;

        while (*p < end) {
                uint8_t byte = *(*p)++;

                if (shift < 64)
                        v |= (uint64_t) (byte & 0x7f) << shift;
                shift += 7;
                if (!(byte & 0x80)) {
                        if (shift < 64 && (byte & 0x40))
                                v |= ~(uint64_t) 0 << shift;
                        *ret = (int64_t) v;
                        return 0;
                }
        }
        return -EINVAL;
}

/* Reads an n-byte little-endian integer (x86-64 only), sign-extended when
 * is_signed. */
static int read_fixed(const uint8_t **p, const uint8_t *end, size_t n, bool is_signed, uint64_t *ret) {
        uint64_t v = 0;

        if ((size_t) (end - *p) < n)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                v |= (uint64_t) (*p)[i] << (8 * i);
        if (is_signed && n < 8 && (v >> (8 * n - 1)) & 1)
                v |= ~(uint64_t) 0 << (8 * n);
        *p += n;
        *ret = v;
        return 0;
}

/* Decodes the value of one DW_EH_PE-encoded pointer at *p, its format
 * only. Returns -EOPNOTSUPP for formats we do not know, -EINVAL when
 * truncated. */
static int read_encoded_value(uint8_t enc, const uint8_t **p, const uint8_t *end, uint64_t *ret) {
        int64_t s;
        int r;

        if (enc == EH_PE_OMIT || (enc & EH_PE_INDIRECT))
                return -EOPNOTSUPP;
        switch (enc & EH_PE_FORMAT) {
        case EH_PE_ABSPTR:
        case EH_PE_UDATA8:
        case EH_PE_SDATA8:
                return read_fixed(p, end, 8, false, ret);
        case EH_PE_UDATA2:
        case EH_PE_SDATA2:
                return read_fixed(p, end, 2, (enc & EH_PE_FORMAT) == EH_PE_SDATA2, ret);
        case EH_PE_UDATA4:
        case EH_PE_SDATA4:
                return read_fixed(p, end, 4, (enc & EH_PE_FORMAT) == EH_PE_SDATA4, ret);
        case EH_PE_ULEB128:
                return read_uleb(p, end, ret);
        case EH_PE_SLEB128:
                r = read_sleb(p, end, &s);
                *ret = (uint64_t) s;
                return r;
        default:
                return -EOPNOTSUPP;
        }
}

/* Decodes one DW_EH_PE-encoded pointer at *p in the CFI section. apply:
 * whether pc-relative applies (address_range is a plain length in the same
 * format). Returns as read_encoded_value, and -EOPNOTSUPP for applications
 * that need run-time data (data- or text-relative). */
static int read_encoded(struct builder *b, uint8_t enc, bool apply, const uint8_t **p, const uint8_t *end,
                        uint64_t *ret) {
        uint64_t field = b->section_addr + (uint64_t) (*p - (const uint8_t *) b->data->d_buf), v;
        int r;

        r = read_encoded_value(enc, p, end, &v);
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

/* libdw grows a frame state to the largest register number a program
 * names and copies the state at every DW_CFA_remember_state, and it runs
 * an FDE's program from its start for every row asked for. A file from a
 * process we do not control could make it allocate gigabytes or spin, so
 * every program is checked before libdw runs it. x86-64 DWARF registers
 * end at 130 (the mask registers k0-k7 are 118-125). */
#define CFI_MAX_REGISTER 255
/* gcc nests remember_state once per epilogue block; 64 is far beyond it */
#define CFI_MAX_REMEMBER 64
/* libdw runs an FDE's program from its start for every row: the work of
 * an FDE is about rows x program bytes. The largest on this machine are
 * 1.3e8 for one FDE (6677 rows) and 2.2e8 for a whole file (both in
 * libclang-cpp, about 0.1 s); the limits leave 8x and 20x room. An FDE over
 * either limit becomes one UNSUPPORTED row, so a crafted file cannot keep
 * the builder busy for long. */
#define CFI_MAX_FDE_WORK (UINT64_C(1) << 30)
#define CFI_MAX_FILE_WORK (UINT64_C(1) << 32)

static bool cfi_register_ok(const uint8_t **p, const uint8_t *end) {
        uint64_t reg;

        return read_uleb(p, end, &reg) == 0 && reg <= CFI_MAX_REGISTER;
}

static bool cfi_skip_uleb(const uint8_t **p, const uint8_t *end) {
        uint64_t ignored;

        return read_uleb(p, end, &ignored) == 0;
}

static bool cfi_skip_sleb(const uint8_t **p, const uint8_t *end) {
        int64_t ignored;

        return read_sleb(p, end, &ignored) == 0;
}

static bool cfi_skip_block(const uint8_t **p, const uint8_t *end) {
        uint64_t len;

        if (read_uleb(p, end, &len) < 0 || len > (uint64_t) (end - *p))
                return false;
        *p += len;
        return true;
}

static bool cfi_skip_fixed(const uint8_t **p, const uint8_t *end, size_t n) {
        if ((size_t) (end - *p) < n)
                return false;
        *p += n;
        return true;
}

/* Checks a CFI program (a CIE's initial instructions or an FDE's) for what
 * libdw would choke on: unknown opcodes, truncated operands, register
 * numbers above CFI_MAX_REGISTER, remember_state nested deeper than
 * CFI_MAX_REMEMBER. *ret_rows: how many rows the program makes (loc
 * advances). */
static bool cfi_program_ok(struct builder *b, uint8_t fde_encoding, const uint8_t *p, const uint8_t *end,
                           uint64_t *ret_rows) {
        uint64_t rows = 0, depth = 0, ignored;

        while (p < end) {
                uint8_t op = *p++;
                bool ok;

                switch (op & 0xc0) {
                case DW_CFA_advance_loc:
                        rows++;
                        continue;
                case DW_CFA_offset:
                        if (!cfi_skip_uleb(&p, end))
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
                        ok = read_encoded(b, fde_encoding, false, &p, end, &ignored) == 0;
                        rows++;
                        break;
                case DW_CFA_advance_loc1:
                        ok = cfi_skip_fixed(&p, end, 1);
                        rows++;
                        break;
                case DW_CFA_advance_loc2:
                        ok = cfi_skip_fixed(&p, end, 2);
                        rows++;
                        break;
                case DW_CFA_advance_loc4:
                        ok = cfi_skip_fixed(&p, end, 4);
                        rows++;
                        break;
                case DW_CFA_MIPS_advance_loc8:
                        ok = cfi_skip_fixed(&p, end, 8);
                        rows++;
                        break;
                case DW_CFA_offset_extended:
                case DW_CFA_val_offset:
                case DW_CFA_GNU_negative_offset_extended:
                        ok = cfi_register_ok(&p, end) && cfi_skip_uleb(&p, end);
                        break;
                case DW_CFA_offset_extended_sf:
                case DW_CFA_val_offset_sf:
                        ok = cfi_register_ok(&p, end) && cfi_skip_sleb(&p, end);
                        break;
                case DW_CFA_restore_extended:
                case DW_CFA_undefined:
                case DW_CFA_same_value:
                case DW_CFA_def_cfa_register:
                        ok = cfi_register_ok(&p, end);
                        break;
                case DW_CFA_register:
                        ok = cfi_register_ok(&p, end) && cfi_register_ok(&p, end);
                        break;
                case DW_CFA_remember_state:
                        ok = ++depth <= CFI_MAX_REMEMBER;
                        break;
                case DW_CFA_restore_state:
                        ok = depth > 0;
                        depth--;
                        break;
                case DW_CFA_def_cfa:
                        ok = cfi_register_ok(&p, end) && cfi_skip_uleb(&p, end);
                        break;
                case DW_CFA_def_cfa_sf:
                        ok = cfi_register_ok(&p, end) && cfi_skip_sleb(&p, end);
                        break;
                case DW_CFA_def_cfa_offset:
                case DW_CFA_GNU_args_size:
                        ok = cfi_skip_uleb(&p, end);
                        break;
                case DW_CFA_def_cfa_offset_sf:
                        ok = cfi_skip_sleb(&p, end);
                        break;
                case DW_CFA_def_cfa_expression:
                        ok = cfi_skip_block(&p, end);
                        break;
                case DW_CFA_expression:
                case DW_CFA_val_expression:
                        ok = cfi_register_ok(&p, end) && cfi_skip_block(&p, end);
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
        ret->program_len = (uint64_t) (cie->initial_instructions_end - cie->initial_instructions);
        if (!ret->bad && !cfi_program_ok(b, ret->fde_encoding, cie->initial_instructions,
                                         cie->initial_instructions_end, NULL))
                ret->bad = true;
}

static void cie_parse_augmentation(struct builder *b, const Dwarf_CIE *cie, struct cie_info *ret) {
        const uint8_t *p = cie->augmentation_data, *end = p + cie->augmentation_data_size;
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
                        if (p >= end)
                                goto bad;
                        ret->fde_encoding = *p++;
                        break;
                case 'L':
                        if (p >= end)
                                goto bad;
                        p++;
                        break;
                case 'P': {
                        uint8_t enc;

                        if (p >= end)
                                goto bad;
                        enc = *p++;
                        if (read_encoded(b, enc & ~EH_PE_INDIRECT, false, &p, end, &ignored) < 0)
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

static int offsets_add(struct builder *b, uint64_t offset) {
        int r = array_grow((void **) &b->offsets, &b->cap_offsets, b->n_offsets + 1, sizeof(*b->offsets));

        if (r < 0)
                return r;
        b->offsets[b->n_offsets++] = offset;
        return 0;
}

static bool offsets_contain(const struct builder *b, uint64_t offset) {
        size_t i = LOWER_BOUND(b->offsets, b->n_offsets, offset);

        return i < b->n_offsets && b->offsets[i] == offset;
}

/* .eh_frame_hdr's search table sends libdw straight to an FDE by offset:
 * every offset in it must be one of the FDEs checked, or libdw could run
 * bytes nobody checked as a CFI program. libdw uses the table only in the
 * one encoding every linker writes (DW_EH_PE_datarel | DW_EH_PE_sdata4);
 * any other non-empty table is refused too, to be safe. Returns 1 (a
 * table libdw may search), 0 (none) or -EINVAL. */
#define EH_PE_DATAREL_SDATA4 0x3b
static int eh_frame_hdr_check(struct builder *b, Elf_Scn *hdr_scn) {
        const uint8_t *p, *end;
        uint8_t version, ptr_enc, count_enc, table_enc;
        uint64_t ignored, count;
        GElf_Shdr shdr;
        Elf_Data *data;

        if (!gelf_getshdr(hdr_scn, &shdr) || !(data = elf_rawdata(hdr_scn, NULL)) || !data->d_buf)
                return -EINVAL;
        p = data->d_buf;
        end = p + data->d_size;
        if (end - p < 4)
                return -EINVAL;
        version = p[0];
        ptr_enc = p[1];
        count_enc = p[2];
        table_enc = p[3];
        p += 4;
        if (version != 1 || count_enc == EH_PE_OMIT || table_enc == EH_PE_OMIT)
                return version == 1 ? 0 : -EINVAL; /* no table: libdw walks the entries we walked */
        if (table_enc != EH_PE_DATAREL_SDATA4 || read_encoded_value(ptr_enc, &p, end, &ignored) < 0 ||
            read_encoded_value(count_enc, &p, end, &count) < 0 || count > (uint64_t) (end - p) / 8)
                return -EINVAL;
        for (uint64_t i = 0; i < count; i++) {
                uint64_t loc, fde;

                if (read_fixed(&p, end, 4, true, &loc) < 0 || read_fixed(&p, end, 4, true, &fde) < 0)
                        return -EINVAL;
                /* datarel: from the start of .eh_frame_hdr */
                fde += shdr.sh_addr;
                if (fde < b->section_addr || !offsets_contain(b, fde - b->section_addr)) {
                        log_debug(".eh_frame_hdr entry %" PRIu64 " names no FDE (0x%" PRIx64 ")", i, fde);
                        return -EINVAL;
                }
        }
        return count > 0;
}

/* Collects [lo, hi) of every FDE in the section. FDEs whose CIE we cannot
 * read are skipped: their addresses become gaps, walked by frame pointer.
 * Returns 0, -E2BIG (code above 4 GiB), -EINVAL (section unreadable from
 * the first entry), -ENOMEM. */
static int fdes_collect(struct builder *b) {
        Dwarf_Off offset = 0, next;
        size_t entries = 0;
        int r;

        for (;;) {
                Dwarf_CFI_Entry entry;
                const struct cie_info *cie;
                const uint8_t *p, *end;
                uint64_t lo, len, rows, work;
                Dwarf_Off offset_this = offset;
                bool costly;

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
                /* libdw would run this CIE's program for any address an
                 * index (.eh_frame_hdr) sends it to: no table at all. */
                if (cie->bad)
                        return -EINVAL;
                p = entry.fde.start;
                end = entry.fde.end;
                if (read_encoded(b, cie->fde_encoding, true, &p, end, &lo) < 0 ||
                    read_encoded(b, cie->fde_encoding & EH_PE_FORMAT, false, &p, end, &len) < 0 ||
                    (cie->sized && !cfi_skip_block(&p, end)) ||
                    !cfi_program_ok(b, cie->fde_encoding, p, end, &rows))
                        return -EINVAL;
                r = offsets_add(b, offset_this);
                if (r < 0)
                        return r;
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
                work = (rows + 1) * ((uint64_t) (end - p) + cie->program_len);
                costly = work > CFI_MAX_FDE_WORK || work > CFI_MAX_FILE_WORK - b->work;
                if (!costly)
                        b->work += work;
                b->row_bound += (size_t) rows + 2;
                b->fdes[b->n_fdes++] = (struct fde_range) {
                        .lo = (uint32_t) lo,
                        .hi = (uint32_t) (lo + len),
                        .signal = cie->signal,
                        .costly = costly,
                };
        }
        return 0;
}

static int fde_range_compare(const void *a, const void *b) {
        const struct fde_range *x = a, *y = b;

        if (x->lo != y->lo)
                return x->lo < y->lo ? -1 : 1;
        return x->hi < y->hi ? -1 : x->hi > y->hi;
}

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

static int piece_flush(struct builder *b) {
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
static int row_append(struct builder *b, uint64_t pc, const struct profd_unwind_row *rule) {
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
static int fde_rows(struct builder *b, Dwarf_CFI *cfi, uint64_t lo, uint64_t hi, bool signal) {
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

static Elf_Scn *section_by_name(Elf *elf, const char *name) {
        size_t shstrndx;
        Elf_Scn *scn = NULL;

        if (elf_getshdrstrndx(elf, &shstrndx) < 0)
                return NULL;
        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr shdr;

                if (gelf_getshdr(scn, &shdr) && shdr.sh_type != SHT_NOBITS &&
                    streq(elf_strptr(elf, shstrndx, shdr.sh_name), name))
                        return scn;
        }
        return NULL;
}

static uint64_t section_size(Elf_Scn *scn) {
        GElf_Shdr shdr;

        return gelf_getshdr(scn, &shdr) ? shdr.sh_size : 0;
}

/* libdw keeps every FDE it has read, in a search tree, until dwarf_cfi_end:
 * 6 MiB for libLLVM's 95,000 FDEs. The builder asks for each FDE once, in
 * address order, so it starts a new Dwarf_CFI every this many FDEs. Only
 * where .eh_frame_hdr's search table sends libdw to each FDE (see
 * reader_map): without it, libdw finds an FDE by reading the section from its
 * start, keeping every FDE on the way. */
#define CFI_RENEW_FDES 2048

struct unwind_reader {
        struct builder b;
        Dwarf_CFI *cfi;
        Dwarf *dwarf;    /* .debug_frame: owns cfi */
        Elf *renew_elf;  /* where cfi is renewed from (CFI_RENEW_FDES); NULL: never */
        Elf *view;       /* the file through map (reader_map), or NULL */
        void *map;
        size_t map_size;
        size_t written;  /* offset of the first page of map the reader wrote (map_size: none) */
        uint64_t last;   /* the end of the last FDE: the last row's pc */
};

/* The reader's own view of the file, so that it can give back the pages of
 * .eh_frame it has read (4.8 MiB of libLLVM's, in its RSS until the build
 * ends, through libelf's mapping), and so that libdw finds FDEs through
 * .eh_frame_hdr's search table in every file that has one. libdw takes
 * the table only from a section before .eh_frame (it looks for both in
 * section order and stops at .eh_frame); libLLVM's and libclang-cpp's come
 * after it, and libdw then reads .eh_frame from its start for every FDE it
 * has not seen, keeping each (CFI_RENEW_FDES): 6 MiB of heap while their
 * tables were built. The view is the file mapped privately from fd, with
 * those two sections' headers swapped in the mapping (copy-on-write: the
 * page they are on becomes the reader's); the table is checked
 * (eh_frame_hdr_check) before libdw may use it. Returns 0 with r->view
 * set, or negative (no view: elf is read as it is). */
static int reader_map(unwind_reader *r, int fd, Elf *elf) {
        size_t size, shnum, a = 0, b = 0;
        Elf_Scn *scn = section_by_name(elf, ".eh_frame"), *hdr_scn = section_by_name(elf, ".eh_frame_hdr");
        Elf64_Ehdr ehdr;
        Elf64_Shdr tmp, *shdrs;
        void *map;

        if (!elf_rawfile(elf, &size) || size < sizeof(ehdr) || elf_getshdrnum(elf, &shnum) < 0 || !scn)
                return -EINVAL;
        map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
                return -errno;
        r->written = size;
        if (hdr_scn && elf_ndxscn(hdr_scn) > elf_ndxscn(scn)) {
                a = elf_ndxscn(scn);
                b = elf_ndxscn(hdr_scn);
                memcpy(&ehdr, map, sizeof(ehdr));
                if (ehdr.e_shentsize != sizeof(Elf64_Shdr) || ehdr.e_shoff > size || ehdr.e_shoff % 8 ||
                    (size - ehdr.e_shoff) / sizeof(Elf64_Shdr) < shnum || b >= shnum) {
                        munmap(map, size);
                        return -EINVAL;
                }
                shdrs = (Elf64_Shdr *) ((char *) map + ehdr.e_shoff);
                tmp = shdrs[a];
                shdrs[a] = shdrs[b];
                shdrs[b] = tmp;
                r->written = ehdr.e_shoff & ~(size_t) 4095;
        }
        r->view = elf_memory(map, size);
        if (!r->view) {
                munmap(map, size);
                return -EINVAL;
        }
        r->map = map;
        r->map_size = size;
        return 0;
}

/* The whole pages of the view that the section data d lies on, if the
 * reader wrote none of them (the section headers come after the
 * sections): given back as the rows are read (MADV_DONTNEED: read again
 * from the page cache if libdw returns to them). */
static void reader_drop_range(unwind_reader *r, const Elf_Data *d) {
        const uint64_t page = 4096;
        uint64_t start, end, base = (uint64_t) (uintptr_t) r->map;

        if (!r->view || !d || !d->d_buf)
                return;
        start = ((uint64_t) (uintptr_t) d->d_buf + page - 1) / page * page;
        end = ((uint64_t) (uintptr_t) d->d_buf + d->d_size) / page * page;
        if (start < base || end > base + r->map_size || start >= end)
                return; /* libelf's copy, not the mapping */
        if (end - base > r->written)
                return;
        r->b.drop_addr = (void *) (uintptr_t) start;
        r->b.drop_len = (size_t) (end - start);
}

/* Reads one CFI section's FDEs into r->b. Returns 0, -ENODATA (no FDE), or
 * as fdes_collect. */
static int reader_plan(unwind_reader *r, Elf_Scn *scn, Elf_Scn *hdr_scn) {
        struct builder *b = &r->b;
        GElf_Shdr shdr;
        int k;

        if (!gelf_getshdr(scn, &shdr) || !(b->data = elf_getdata(scn, NULL)) || !b->data->d_buf)
                return -EINVAL;
        b->section_addr = shdr.sh_addr;
        reader_drop_range(r, b->data);
        k = fdes_collect(b);
        builder_drop(b);
        if (k < 0)
                return k;
        if (hdr_scn) {
                k = eh_frame_hdr_check(b, hdr_scn);
                if (k < 0)
                        return k;
                /* libdw takes the table only from a section before
                 * .eh_frame (see reader_map) */
                if (!(k > 0 && elf_ndxscn(hdr_scn) < elf_ndxscn(scn)))
                        r->renew_elf = NULL;
        } else
                r->renew_elf = NULL;
        /* checked: not needed while the rows are read */
        free(b->cies);
        free(b->offsets);
        b->cies = NULL;
        b->offsets = NULL;
        b->n_cies = b->cap_cies = b->n_offsets = b->cap_offsets = 0;
        if (b->n_fdes == 0)
                return -ENODATA;
        qsort(b->fdes, b->n_fdes, sizeof(*b->fdes), fde_range_compare);
        /* the final GAP */
        b->row_bound++;
        r->last = 0;
        for (size_t i = 0; i < b->n_fdes; i++)
                r->last = MAX(r->last, (uint64_t) b->fdes[i].hi);
        return 0;
}

unwind_reader *unwind_reader_free(unwind_reader *r) {
        if (!r)
                return NULL;
        builder_done(&r->b);
        if (r->dwarf)
                dwarf_end(r->dwarf);
        else if (r->cfi)
                dwarf_cfi_end(r->cfi);
        if (r->view)
                elf_end(r->view);
        if (r->map)
                munmap(r->map, r->map_size);
        free(r);
        return NULL;
}

int unwind_reader_new(Elf *elf, int fd, unwind_reader **ret) {
        _cleanup_(unwind_reader_freep) unwind_reader *r = NULL;
        const unsigned char *ident;
        Elf_Scn *scn;
        GElf_Ehdr ehdr;
        int k;

        *ret = NULL;
        if (!gelf_getehdr(elf, &ehdr) || !(ident = (const unsigned char *) elf_getident(elf, NULL)))
                return -EINVAL;
        /* Rows hold x86-64 rules and 32-bit addresses. */
        if (ehdr.e_machine != EM_X86_64 || ident[EI_CLASS] != ELFCLASS64)
                return -ENODATA;

        /* FreePascal leaves an empty .eh_frame: no CFI. */
        scn = section_by_name(elf, ".eh_frame");
        if (scn && section_size(scn) > 0) {
                /* the view's own: gone with r, while elf's stays for
                 * .debug_frame below */
                const unsigned char *e_ident = ident;
                Elf *e = elf;

                r = calloc(1, sizeof(*r));
                if (!r)
                        return -ENOMEM;
                if (fd >= 0 && reader_map(r, fd, elf) >= 0) {
                        e = r->view;
                        e_ident = (const unsigned char *) elf_getident(e, NULL);
                        scn = section_by_name(e, ".eh_frame");
                }
                r->b = (struct builder) { .ident = e_ident, .eh_frame = true };
                r->renew_elf = e;
                if (!e_ident || !scn || !(r->cfi = dwarf_getcfi_elf(e)))
                        return -EINVAL;
                k = reader_plan(r, scn, section_by_name(e, ".eh_frame_hdr"));
                if (k != -ENODATA) {
                        if (k >= 0)
                                *ret = TAKE_PTR(r);
                        return k;
                }
                r = unwind_reader_free(r);
        }

        /* Only .debug_frame: objects built without unwind tables but with -g.
         * dwarf_begin_elf decompresses the section in place, so it comes
         * before the section's data is read. */
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->b = (struct builder) { .ident = ident, .eh_frame = false };
        r->dwarf = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
        if (!r->dwarf || !(r->cfi = dwarf_getcfi(r->dwarf)))
                return -ENODATA;
        scn = section_by_name(elf, ".debug_frame");
        if (!scn || section_size(scn) == 0)
                return -ENODATA;
        /* the CFI is the Dwarf's: not renewed */
        k = reader_plan(r, scn, NULL);
        if (k >= 0)
                *ret = TAKE_PTR(r);
        return k;
}

bool unwind_reader_searches(const unwind_reader *r) {
        return r->renew_elf != NULL;
}

size_t unwind_reader_bound(const unwind_reader *r) {
        return r->b.row_bound;
}

void unwind_reader_span(const unwind_reader *r, uint32_t *ret_first, uint32_t *ret_last) {
        *ret_first = r->b.fdes[0].lo;
        *ret_last = (uint32_t) r->last;
}

int unwind_reader_rows(unwind_reader *r, unwind_sink_t sink, void *userdata, struct unwind_table *ret_counts) {
        struct builder *b = &r->b;
        size_t since_renew = 0;
        uint64_t covered = 0;
        int k;

        *ret_counts = (struct unwind_table) {};
        if (b->piece || b->n_rows > 0)
                return -EINVAL; /* once */
        b->piece = reallocarray(NULL, MIN(b->row_bound, (size_t) UNWIND_PIECE_ROWS), sizeof(*b->piece));
        if (!b->piece)
                return -ENOMEM;
        b->sink = sink;
        b->userdata = userdata;

        for (size_t i = 0; i < b->n_fdes; i++) {
                const struct fde_range *f = &b->fdes[i];
                uint64_t lo = MAX(f->lo, covered);

                if (lo >= f->hi)
                        continue; /* inside an earlier FDE: libdw picks one rule for both */
                /* The rule of the function before must not reach into code
                 * no FDE covers. */
                if (b->n_rows > 0 && lo > covered) {
                        k = row_append(b, covered, &(struct profd_unwind_row) { .kind = PROFD_UNWIND_GAP });
                        if (k < 0)
                                return k;
                }
                if (r->renew_elf && ++since_renew > CFI_RENEW_FDES) {
                        dwarf_cfi_end(r->cfi);
                        r->cfi = dwarf_getcfi_elf(r->renew_elf);
                        if (!r->cfi)
                                return -ENOMEM;
                        since_renew = 1;
                }
                if (f->costly)
                        k = row_append(b, lo, &(struct profd_unwind_row) { .kind = PROFD_UNWIND_UNSUPPORTED });
                else
                        k = fde_rows(b, r->cfi, lo, f->hi, f->signal);
                if (k < 0)
                        return k;
                covered = f->hi;
                if (i % DROP_FDES == 0)
                        builder_drop(b);
        }
        k = row_append(b, covered, &(struct profd_unwind_row) { .kind = PROFD_UNWIND_GAP });
        if (k >= 0)
                k = piece_flush(b);
        if (k < 0)
                return k;
        ret_counts->n = b->n_rows;
        ret_counts->fdes = b->n_fdes;
        memcpy(ret_counts->by_kind, b->by_kind, sizeof(b->by_kind));
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

static uint32_t index_buckets(uint32_t first, uint32_t last, uint32_t shift) {
        return (uint32_t) (((uint64_t) last - first) >> shift) + 1;
}

size_t unwind_index_plan(size_t n, uint32_t first, uint32_t last, uint32_t *ret_shift) {
        uint32_t shift = 1;

        *ret_shift = 0;
        /* a few rows are a cache line or two anyway */
        if (n < 2 * UNWIND_INDEX_ROWS || last < first)
                return 0;
        while (shift < 31 && index_buckets(first, last, shift) > n / UNWIND_INDEX_ROWS)
                shift++;
        *ret_shift = shift;
        /* the head, then buckets + 1 counts two per slot */
        return 1 + ((size_t) index_buckets(first, last, shift) + 2) / 2;
}

size_t unwind_index_size(const struct unwind_table *t, uint32_t *ret_shift) {
        if (t->n == 0) {
                *ret_shift = 0;
                return 0;
        }
        return unwind_index_plan(t->n, t->rows[0].pc, t->rows[t->n - 1].pc, ret_shift);
}

void unwind_index_begin(struct unwind_index_writer *w, uint32_t shift, uint32_t first, uint32_t last,
                        struct profd_unwind_row *out) {
        struct profd_unwind_index *head = (struct profd_unwind_index *) out;

        *w = (struct unwind_index_writer) {
                .count = (uint32_t *) (out + 1),
                .base = first,
                .shift = shift,
                .buckets = index_buckets(first, last, shift),
        };
        *head = (struct profd_unwind_index) { .base = first, .buckets = w->buckets };
}

/* count[b]: the rows below bucket b's start, so the first row at or above
 * it */
void unwind_index_add(struct unwind_index_writer *w, const struct profd_unwind_row *rows, size_t n) {
        for (size_t i = 0; i < n; i++, w->rows++)
                while (w->next <= w->buckets && (uint64_t) w->base + ((uint64_t) w->next << w->shift) <= rows[i].pc)
                        w->count[w->next++] = (uint32_t) w->rows;
}

void unwind_index_end(struct unwind_index_writer *w) {
        while (w->next <= w->buckets)
                w->count[w->next++] = (uint32_t) w->rows;
        /* the odd half of the last slot: defined bytes */
        if ((w->buckets + 1) % 2)
                w->count[w->buckets + 1] = 0;
}

void unwind_index_write(const struct unwind_table *t, uint32_t shift, struct profd_unwind_row *out) {
        struct unwind_index_writer w;

        unwind_index_begin(&w, shift, t->rows[0].pc, t->rows[t->n - 1].pc, out);
        unwind_index_add(&w, t->rows, t->n);
        unwind_index_end(&w);
}

const struct profd_unwind_row *unwind_index_lookup(const struct profd_unwind_row *slots, size_t n, uint32_t shift,
                                                   uint64_t pc) {
        const struct profd_unwind_index *head = (const struct profd_unwind_index *) (slots + n);
        const uint32_t *count = (const uint32_t *) (slots + n + 1);
        size_t lo, hi, b;

        if (shift == 0) {
                struct unwind_table t = { .rows = (struct profd_unwind_row *) slots, .n = n };

                return unwind_table_lookup(&t, pc);
        }
        if (pc < head->base)
                return NULL;
        b = (pc - head->base) >> shift;
        if (b >= head->buckets)
                return &slots[n - 1];
        lo = count[b];
        hi = count[b + 1];
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (slots[mid].pc <= pc)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo == 0 ? NULL : &slots[lo - 1];
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
