/* The table builder's reader (unwind-table.h, unwind_reader_*): finds the
 * CFI section (.eh_frame, else .debug_frame), maps its own view of the
 * file, plans the table from the FDEs (unwind-cfi.c) and reads their rows
 * in address order, each FDE's program run once (unwind-table.c,
 * cfi-rows.c). */
#include "unwind-table.h"

#include <elfutils/libdw.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "helpers.h"
#include "macro.h"
#include "unwind-build.h"

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

struct unwind_reader {
        struct builder b;
        Dwarf *dwarf;    /* .debug_frame: decompressed in place by dwarf_begin_elf */
        Elf *view;       /* the file through map (reader_map), or NULL */
        void *map;
        size_t map_size;
        uint64_t last;   /* the end of the last FDE: the last row's pc */
};

/* The reader's own view of the file, so that it can give back the pages of
 * .eh_frame it has read (4.8 MiB of libLLVM's, in its RSS until the build
 * ends, through libelf's mapping). Returns 0 with r->view set, or negative
 * (no view: elf is read as it is). */
static int reader_map(unwind_reader *r, int fd, Elf *elf) {
        size_t size;
        void *map;

        if (!elf_rawfile(elf, &size) || size == 0)
                return -EINVAL;
        /* writable as libelf's own private mappings are; nothing here
         * writes to it */
        map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
                return -errno;
        r->view = elf_memory(map, size);
        if (!r->view) {
                munmap(map, size);
                return -EINVAL;
        }
        r->map = map;
        r->map_size = size;
        return 0;
}

/* The whole pages of the view that the section data d lies on: given
 * back as the rows are read (MADV_DONTNEED: read again from the page
 * cache if an FDE's program is read again). */
static void reader_drop_range(unwind_reader *r, const Elf_Data *d) {
        const uint64_t page = 4096;
        uint64_t start, end, base = (uint64_t) (uintptr_t) r->map;

        if (!r->view || !d || !d->d_buf)
                return;
        start = ((uint64_t) (uintptr_t) d->d_buf + page - 1) / page * page;
        end = ((uint64_t) (uintptr_t) d->d_buf + d->d_size) / page * page;
        if (start < base || end > base + r->map_size || start >= end)
                return; /* libelf's copy, not the mapping */
        r->b.drop_addr = (void *) (uintptr_t) start;
        r->b.drop_len = (size_t) (end - start);
}

/* Reads one CFI section's FDEs into r->b. Returns 0, -ENODATA (no FDE), or
 * as fdes_collect. */
static int reader_plan(unwind_reader *r, Elf_Scn *scn) {
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
                if (!e_ident || !scn)
                        return -EINVAL;
                k = reader_plan(r, scn);
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
        if (!r->dwarf)
                return -ENODATA;
        scn = section_by_name(elf, ".debug_frame");
        if (!scn || section_size(scn) == 0)
                return -ENODATA;
        k = reader_plan(r, scn);
        if (k >= 0)
                *ret = TAKE_PTR(r);
        return k;
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
                        continue; /* inside an earlier FDE: the earlier one's rules stand */
                /* The rule of the function before must not reach into code
                 * no FDE covers. */
                if (b->n_rows > 0 && lo > covered) {
                        k = row_append(b, covered, &(struct profd_unwind_row) { .kind = PROFD_UNWIND_GAP });
                        if (k < 0)
                                return k;
                }
                k = fde_rows(b, f, lo);
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
