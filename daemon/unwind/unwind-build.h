/* The table builder's private half, shared by its parts: the CFI side
 * (unwind-cfi.c: CIE and FDE parsing with libdw's dwarf_next_cfi, pointer
 * encodings, the checks of every program), the rows (unwind-table.c: each
 * FDE's program run once by cfi-rows.c, the rows merged) and the reader
 * (unwind-reader.c: the sections, the view of the file, the FDEs' rows in
 * pieces). */
#pragma once

#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind-table.h"

/* What an FDE needs from its CIE. */
struct cie_info {
        Dwarf_Off offset;
        uint8_t fde_encoding; /* of initial_location and address_range */
        bool signal;          /* augmentation 'S' */
        bool sized;           /* augmentation 'z': FDEs hold a sized augmentation block */
        bool bad;             /* an augmentation we cannot skip, or a program refused */
        /* what its FDEs' programs are run with (struct cfi_cie) */
        const uint8_t *initial, *initial_end;
        uint64_t code_align;
        int64_t data_align;
        uint64_t ra_reg;
};

struct fde_range {
        uint32_t lo, hi;        /* [lo, hi): fdes_collect refuses code above 4 GiB */
        uint32_t cie;           /* its CIE's offset in the section */
        uint32_t prog, prog_end; /* its program's bytes: offsets in the section */
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
        size_t row_bound;  /* rows the FDEs can make at most */

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

/* Gives back the pages of the section read so far (reader_drop_range). */
void builder_drop(struct builder *b);
void builder_done(struct builder *b);

/* Collects [lo, hi) of every FDE in b's section, each program checked.
 * FDEs whose CIE we cannot read are skipped: their addresses become gaps,
 * walked by frame pointer. Returns 0, -E2BIG (code above 4 GiB, or a
 * section of 4 GiB), -EINVAL (section unreadable from the first entry, or
 * a program refused), -ENOMEM. */
int fdes_collect(struct builder *b);
/* The CIE collected at offset, or NULL. */
const struct cie_info *cie_find(const struct builder *b, uint64_t offset);
/* qsort order of struct fde_range: by lo, then hi. */
int fde_range_compare(const void *a, const void *b);

/* Keeps a row at pc unless it repeats the last one's rules. Returns 0,
 * -EINVAL (more rows than the FDEs allow) or the sink's error. */
int row_append(struct builder *b, uint64_t pc, const struct profd_unwind_row *rule);
/* Hands the rows kept so far to the sink. */
int piece_flush(struct builder *b);
/* Appends the rows of [lo, f->hi) of FDE f, its program run once. */
int fde_rows(struct builder *b, const struct fde_range *f, uint64_t lo);
