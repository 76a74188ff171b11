/* Benchmark of the symbolizer (run by hand, not a test): addresses resolved
 * per second with an empty cache (cold: loading, finding and opening the
 * debug info included) and a warm one, against eu-addr2line -f -i -C given
 * the same addresses in one batch; and the memory each cached file holds,
 * as the symbolizer estimates it and as malloc counts it.
 *
 * usage: symbolize-bench [--samples N] [--rounds R] [--no-libc] [--scratch-dir DIR] FILE...
 * (the libc this program runs with comes last unless --no-libc; with
 * --scratch-dir, DWARF is read through mapped copies there, as profd does
 * with its store's directory, and "memory" is the heap alone) */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <inttypes.h>
#include <link.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "symbolizer.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(Elf *, elf_end);
DEFINE_TRIVIAL_CLEANUP_FUNC(symbolizer *, symbolizer_free);

/* Deep enough for any chain in practice. */
#define MAX_FRAMES 64

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Heap in use, large (mmapped) blocks included: libelf's section buffers. */
static size_t heap_bytes(void) {
        struct mallinfo2 m = mallinfo2();

        return m.uordblks + m.hblkhd;
}

/* n addresses spread evenly over .text, as vaddrs and as file offsets.
 * Returns the number found, 0 on error. */
static size_t sample_text(const char *path, size_t n, uint64_t *vaddrs, uint64_t *offsets) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_(elf_endp) Elf *e = NULL;
        uint64_t start = 0, size = 0, step;
        Elf_Scn *scn = NULL;
        size_t shstrndx, n_phdrs, k = 0;

        if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE || !(e = elf_begin(fd, ELF_C_READ, NULL)) ||
            elf_getshdrstrndx(e, &shstrndx) < 0 || elf_getphdrnum(e, &n_phdrs) < 0)
                return 0;
        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr shdr;

                if (gelf_getshdr(scn, &shdr) && streq(elf_strptr(e, shstrndx, shdr.sh_name), ".text")) {
                        start = shdr.sh_addr;
                        size = shdr.sh_size;
                }
        }
        step = MAX(size / n, (uint64_t) 1);
        for (uint64_t a = start; a < start + size && k < n; a += step)
                for (size_t i = 0; i < n_phdrs; i++) {
                        GElf_Phdr ph;

                        if (gelf_getphdr(e, (int) i, &ph) && ph.p_type == PT_LOAD && a >= ph.p_vaddr &&
                            a - ph.p_vaddr < ph.p_filesz) {
                                vaddrs[k] = a;
                                offsets[k++] = a - ph.p_vaddr + ph.p_offset;
                                break;
                        }
                }
        return k;
}

/* Seconds eu-addr2line takes for the whole batch, process start included;
 * negative when it failed. */
static double time_eu_addr2line(const char *path, const uint64_t *vaddrs, size_t n) {
        char input[] = "/tmp/symbolize-bench-XXXXXX";
        _cleanup_free_ char *cmd = NULL;
        FILE *in;
        double t0, t;
        int fd, status;

        fd = mkstemp(input);
        if (fd < 0 || !(in = fdopen(fd, "w")))
                return -1;
        for (size_t i = 0; i < n; i++)
                fprintf(in, "0x%" PRIx64 "\n", vaddrs[i]);
        fclose(in);
        if (asprintf(&cmd, "eu-addr2line -f -i -C -e '%s' < %s > /dev/null", path, input) < 0)
                abort();
        t0 = now();
        status = system(cmd);
        t = now() - t0;
        unlink(input);
        return status == 0 ? t : -1;
}

static const char *scratch_dir;

static void bench_file(const char *path, size_t n_samples, int rounds) {
        _cleanup_free_ uint64_t *vaddrs = calloc(n_samples, sizeof(uint64_t)),
                                *offsets = calloc(n_samples, sizeof(uint64_t));
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        struct sym_frame frames[MAX_FRAMES];
        const sym_file *f = NULL;
        size_t n, heap0, heap_loaded, heap_cold, n_resolved = 0, n_frames = 0;
        uint64_t est_loaded, est_cold;
        double t0, t_load, t_cold, t_warm, t_eu;

        if (!vaddrs || !offsets)
                abort();
        n = sample_text(path, n_samples, vaddrs, offsets);
        if (n == 0) {
                fprintf(stderr, "%s: no .text to sample\n", path);
                return;
        }

        heap0 = heap_bytes();
        if (symbolizer_new(&s) < 0 || symbolizer_set_scratch_dir(s, scratch_dir) < 0)
                abort();
        t0 = now();
        if (symbolizer_load_file(s, path, &f) < 0) {
                fprintf(stderr, "%s: cannot load\n", path);
                return;
        }
        t_load = now() - t0;
        heap_loaded = heap_bytes();
        est_loaded = symbolizer_cache_bytes(s);

        t0 = now();
        for (size_t i = 0; i < n; i++) {
                int r = sym_file_resolve(s, f, offsets[i], frames, MAX_FRAMES);

                if (r > 0) {
                        n_resolved++;
                        n_frames += (size_t) r;
                }
        }
        t_cold = now() - t0 + t_load;
        heap_cold = heap_bytes();
        est_cold = symbolizer_cache_bytes(s);

        t0 = now();
        for (int round = 0; round < rounds; round++)
                for (size_t i = 0; i < n; i++)
                        (void) sym_file_resolve(s, f, offsets[i], frames, MAX_FRAMES);
        t_warm = (now() - t0) / rounds;

        t_eu = time_eu_addr2line(path, vaddrs, n);

        printf("%s\n", path);
        printf("  debug info: %s\n", sym_file_debug_path(f) ?: "(none)");
        printf("  %zu addresses, %zu resolved, %.2f frames each\n", n, n_resolved,
               n_resolved ? (double) n_frames / (double) n_resolved : 0.0);
        printf("  eu-addr2line (one batch): %10.0f addresses/s\n", t_eu > 0 ? (double) n / t_eu : 0.0);
        printf("  profd cold:               %10.0f addresses/s (%.1fx eu-addr2line; load %.1f ms)\n",
               (double) n / t_cold, t_eu > 0 ? t_eu / t_cold : 0.0, t_load * 1e3);
        printf("  profd warm:               %10.0f addresses/s (%.0fx eu-addr2line)\n", (double) n / t_warm,
               t_eu > 0 ? t_eu / t_warm : 0.0);
        printf("  memory, symbols only:     estimate %7.0f KiB, malloc %7.0f KiB\n", (double) est_loaded / 1024,
               (double) (heap_loaded - heap0) / 1024);
        printf("  memory, all resolved:     estimate %7.0f KiB, malloc %7.0f KiB\n", (double) est_cold / 1024,
               (double) (heap_cold - heap0) / 1024);
}

static int find_libc(struct dl_phdr_info *info, size_t size, void *userdata) {
        char **ret = userdata;

        if (info->dlpi_name && strstr(info->dlpi_name, "/libc.so")) {
                *ret = realpath(info->dlpi_name, NULL);
                return 1;
        }
        return 0;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "samples", required_argument, NULL, 's' },
                { "rounds", required_argument, NULL, 'r' },
                { "no-libc", no_argument, NULL, 'n' },
                { "scratch-dir", required_argument, NULL, 'd' },
                {},
        };
        _cleanup_free_ char *libc = NULL;
        size_t samples = 3000;
        int rounds = 20, c;
        bool with_libc = true;

        while ((c = getopt_long(argc, argv, "s:r:nd:", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        samples = strtoul(optarg, NULL, 10);
                        break;
                case 'r':
                        rounds = atoi(optarg);
                        break;
                case 'n':
                        with_libc = false;
                        break;
                case 'd':
                        scratch_dir = optarg;
                        break;
                default:
                        return 2;
                }
        if (samples == 0 || rounds <= 0) {
                fprintf(stderr, "--samples and --rounds must be positive\n");
                return 2;
        }
        for (int i = optind; i < argc; i++)
                bench_file(argv[i], samples, rounds);
        if (with_libc) {
                dl_iterate_phdr(find_libc, &libc);
                if (!libc)
                        return 1;
                bench_file(libc, samples, rounds);
        }
        return 0;
}
