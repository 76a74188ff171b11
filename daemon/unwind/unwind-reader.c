/* The table builder's libdw reader (unwind-table.h, unwind_reader_*): finds
 * the CFI section (.eh_frame, else .debug_frame), maps its own view of the
 * file, plans the table from the FDEs (unwind-cfi.c) and reads their rows
 * through libdw in address order (unwind-table.c). */
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
