/* libFuzzer target: ELF files as the symbolizer meets them in processes it
 * does not control: headers, program headers, symbol tables and build-id
 * notes, through the real open-by-path entry point. */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "symbolizer.h"

/* One memfd for the whole run, rewritten per input: no temp files to clean
 * up, and "/proc/self/fd/N" is a path symbolizer_load_file opens anew like
 * the /proc/PID/map_files links it opens in the daemon. */
static int memfd = -1;
static char memfd_path[64];

static void write_input(const uint8_t *data, size_t size) {
        if (memfd < 0) {
                memfd = memfd_create("fuzz-elf", MFD_CLOEXEC);
                if (memfd < 0) {
                        perror("memfd_create");
                        abort();
                }
                snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
        }
        if (ftruncate(memfd, 0) < 0)
                abort();
        for (size_t done = 0; done < size;) {
                ssize_t n = pwrite(memfd, data + done, size - done, (off_t) done);
                if (n <= 0)
                        abort();
                done += (size_t) n;
        }
}

static void check_build_id(const char *id) {
        size_t n;

        if (!id)
                return;
        n = strlen(id);
        FUZZ_CHECK(n > 0 && n % 2 == 0);
        FUZZ_CHECK(strspn(id, "0123456789abcdef") == n);
}

static void check_lookup(const sym_file *f, uint64_t offset) {
        const char *name = sym_file_lookup(f, offset);

        /* only named symbols are kept; touching the name lets ASan check it */
        if (name)
                FUZZ_CHECK(strlen(name) > 0);
}

/* The DWARF path: inline chains and lines, every string touched. */
static void check_resolve(symbolizer *s, const sym_file *f, uint64_t offset) {
        struct sym_frame frames[8];
        int n = sym_file_resolve(s, f, offset, frames, 8);

        FUZZ_CHECK(n >= 0 || n == -ENOMEM);
        for (int i = 0; i < n; i++) {
                FUZZ_CHECK(frames[i].function && strlen(frames[i].function) > 0);
                if (frames[i].file)
                        (void) strlen(frames[i].file);
                if (frames[i].raw_function)
                        (void) strlen(frames[i].raw_function);
        }
        if (n == 0)
                (void) sym_unresolved_to_string(sym_file_why_unresolved(f, offset));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const sym_file *f, *again;
        symbolizer *s = NULL;
        int r;

        write_input(data, size);

        /* A fresh symbolizer per input: a shared one would answer from its
         * cache (same build-id, or a memfd whose stat looks unchanged). */
        if (symbolizer_new(&s) < 0)
                abort();
        r = symbolizer_load_file(s, memfd_path, &f);
        FUZZ_CHECK(r == 0 || r == -ENOEXEC || r == -ENOMEM);
        if (r == 0) {
                check_build_id(sym_file_build_id(f));

                /* every 8th offset of the file (where code and symbols of
                 * small inputs live), and the extremes */
                for (uint64_t off = 0; off <= size && off < 8192; off += 8)
                        check_lookup(f, off);
                for (uint64_t off = 0; off <= size && off < 8192; off += 64)
                        check_resolve(s, f, off);
                check_lookup(f, size - 1);
                check_lookup(f, UINT64_MAX);
                check_lookup(f, UINT64_MAX / 2);

                /* the cache must hand back the very same file */
                FUZZ_CHECK(symbolizer_load_file(s, memfd_path, &again) == 0);
                FUZZ_CHECK(again == f);
        }
        symbolizer_free(s);
        return 0;
}
