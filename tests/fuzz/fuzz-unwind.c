/* libFuzzer target: call-frame information as the unwind-table builder
 * meets it in files of processes it does not control (.eh_frame and
 * .debug_frame, CIE augmentations, pointer encodings, CFI programs), and
 * mapping biases from their program headers. The table must come out
 * sorted, merged and consistent with its own lookup, or not at all. */
#include <errno.h>
#include <gelf.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "macro.h"
#include "unwind-table.h"

static void check_table(const struct unwind_table *t) {
        size_t sum = 0;

        FUZZ_CHECK(t->n > 0 && t->rows);
        FUZZ_CHECK(t->fdes > 0);
        for (size_t i = 0; i < t->n; i++) {
                const struct profd_unwind_row *r = &t->rows[i];

                FUZZ_CHECK(r->kind <= PROFD_UNWIND_UNSUPPORTED);
                if (r->kind == PROFD_UNWIND_PLT)
                        FUZZ_CHECK(r->cfa_off <= 15);
                if (r->kind != PROFD_UNWIND_CFA_SP && r->kind != PROFD_UNWIND_CFA_FP && r->kind != PROFD_UNWIND_PLT)
                        FUZZ_CHECK(r->cfa_off == 0 && r->rbp_off == 0);
                if (i > 0) {
                        const struct profd_unwind_row *p = &t->rows[i - 1];

                        FUZZ_CHECK(p->pc < r->pc);
                        FUZZ_CHECK(p->kind != r->kind || p->cfa_off != r->cfa_off || p->rbp_off != r->rbp_off);
                }
                FUZZ_CHECK(unwind_table_lookup(t, r->pc) == r);
                if (r->pc > 0)
                        FUZZ_CHECK(unwind_table_lookup(t, r->pc - 1) == (i > 0 ? r - 1 : NULL));
        }
        /* the last FDE's end: nothing after it is covered */
        FUZZ_CHECK(t->rows[t->n - 1].kind == PROFD_UNWIND_GAP);
        FUZZ_CHECK(unwind_table_lookup(t, UINT64_MAX) == &t->rows[t->n - 1]);
        for (size_t k = 0; k <= PROFD_UNWIND_UNSUPPORTED; k++)
                sum += t->by_kind[k];
        FUZZ_CHECK(sum == t->n);
}

/* The daemon's way: the file through the reader's own mapping (its
 * section headers read by the reader itself, .eh_frame pages given back as
 * read), rows in pieces. The same errors as the whole build, and a table
 * as consistent; not necessarily the same rows, since libdw may then
 * search .eh_frame_hdr, which picks among overlapping FDEs its own way. */
static void check_reader(const uint8_t *data, size_t size, int r_whole) {
        _cleanup_close_ int fd = memfd_create("fuzz-unwind", MFD_CLOEXEC);
        _cleanup_(unwind_reader_freep) unwind_reader *reader = NULL;
        struct unwind_table t = {}, counts;
        Elf *e;
        int r;

        if (fd < 0 || write(fd, data, size) != (ssize_t) size)
                abort();
        e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!e)
                return;
        r = unwind_reader_new(e, fd, &reader);
        FUZZ_CHECK(r == 0 || r == -ENODATA || r == -E2BIG || r == -EINVAL || r == -ENOMEM);
        if (r == 0) {
                t.rows = calloc(unwind_reader_bound(reader), sizeof(*t.rows));
                if (!t.rows)
                        abort();
                r = unwind_reader_rows(reader, unwind_table_add, &t, &counts);
                FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
                if (r == 0) {
                        FUZZ_CHECK(counts.n == t.n);
                        memcpy(t.by_kind, counts.by_kind, sizeof(t.by_kind));
                        t.fdes = counts.fdes;
                        check_table(&t);
                }
        }
        /* what is not the CFI's (the file, its headers) fails alike */
        if (r_whole == -ENODATA || r_whole == -E2BIG)
                FUZZ_CHECK(r == r_whole);
        free(t.rows);
        reader = unwind_reader_free(reader); /* before the Elf its CFI may come from */
        elf_end(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* libelf may write into the image (decompressing .debug_frame) */
        _cleanup_free_ char *image = malloc(size ? size : 1);
        struct unwind_table t = { .n = 1 };
        Elf *e;
        int r;

        if (!image)
                abort();
        memcpy(image, data, size);
        if (elf_version(EV_CURRENT) == EV_NONE)
                abort();
        e = elf_memory(image, size);
        if (!e)
                return 0;

        r = unwind_table_build(e, &t);
        FUZZ_CHECK(r == 0 || r == -ENODATA || r == -E2BIG || r == -EINVAL || r == -ENOMEM);
        if (r == 0)
                check_table(&t);
        else
                FUZZ_CHECK(t.rows == NULL && t.n == 0);
        unwind_table_done(&t);
        FUZZ_CHECK(t.rows == NULL && t.n == 0);
        check_reader(data, size, r);

        for (uint64_t off = 0; off < 0x4000; off += 0x1000) {
                uint64_t bias;

                r = unwind_mapping_bias(e, 0x7f0000000000, off, &bias);
                FUZZ_CHECK(r == 0 || r == -ENOENT);
        }
        elf_end(e);
        return 0;
}
