/* Benchmark of the unwind-table builder (run by hand, not a test): how long
 * unwind_table_build takes and how many rows it makes for the libc this
 * program runs with, for the largest ELF file with CFI under /usr, for the
 * file with the most rows, and over every ELF file directly in the scanned
 * directories (rows per file: median, p90, p99, max; total build time).
 * Wall times and the CPU time per build, which a busy host stretches less,
 * and the RSS a build adds at its peak, read in pieces as profd does and
 * whole.
 *
 * usage: unwind-table-bench [--rounds R] [--no-scan] [DIR...]
 * (DIRs default to /usr/bin /usr/sbin /usr/lib/x86_64-linux-gnu) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "unwind-table.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(Elf *, elf_end);

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static bool is_elf(const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        char magic[4];

        return fd >= 0 && read(fd, magic, 4) == 4 && memcmp(magic, ELFMAG, SELFMAG) == 0;
}

/* One build of path's table: seconds (opening the file included), or
 * negative with *ret_r set when it failed. */
static double build_once(const char *path, struct unwind_table *t, int *ret_r) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_(elf_endp) Elf *e = NULL;
        double t0 = now();

        *t = (struct unwind_table) {};
        if (fd < 0) {
                *ret_r = -errno;
                return -1;
        }
        e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!e) {
                *ret_r = -EINVAL;
                return -1;
        }
        *ret_r = unwind_table_build(e, t);
        return *ret_r < 0 ? -1 : now() - t0;
}

/* CPU time this process used so far (user + system), seconds: what a build
 * costs even when a busy host stretches its wall time. */
static double cpu_seconds(void) {
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        return (double) ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double) ru.ru_stime.tv_sec +
               ru.ru_stime.tv_usec / 1e6;
}

static int double_compare(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

static long status_kib(const char *key) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        size_t len = strlen(key);
        long v = -1;

        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, key, len) == 0 && line[len] == ':')
                        v = strtol(line + len + 1, NULL, 10);
        return v;
}

/* The rows dropped where profd packs them (table-pack.h) into the
 * kernel's: the reader's cost alone. */
static int discard_rows(void *userdata, const struct profd_unwind_row *rows, size_t n) {
        (void) userdata;
        (void) rows;
        (void) n;
        return 0;
}

static int build_in_pieces(Elf *e, int fd) {
        _cleanup_(unwind_reader_freep) unwind_reader *r = NULL;
        struct unwind_table counts;
        int k;

        k = unwind_reader_new(e, fd, &r);
        if (k < 0)
                return k;
        return unwind_reader_rows(r, discard_rows, NULL, &counts);
}

/* How much a build adds to this process's RSS at its peak: VmHWM, reset
 * to the RSS before the build (/proc/self/clear_refs, 5), after giving
 * back what earlier builds freed. The whole table in the heap
 * (unwind_table_build, the file through libelf's mapping), or read in
 * pieces as profd does (through the reader's own mapping, its pages given
 * back as they are read). KiB, or -1. */
static long peak_rss_kib(const char *path, bool pieces) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_(elf_endp) Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
        _cleanup_close_ int clear = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
        struct unwind_table t = {};
        long before, peak = -1;
        int k;

        if (!e || clear < 0)
                return -1;
        malloc_trim(0);
        before = status_kib("VmRSS");
        if (write(clear, "5", 1) != 1)
                return -1;
        k = pieces ? build_in_pieces(e, fd) : unwind_table_build(e, &t);
        if (k >= 0)
                peak = status_kib("VmHWM") - before;
        unwind_table_done(&t);
        return peak;
}

/* Builds path's table `rounds` times and prints the median and min time,
 * rows, FDEs, rows by kind and bytes. */
static void bench_file(const char *label, const char *path, int rounds) {
        _cleanup_free_ double *times = calloc(rounds, sizeof(double));
        struct unwind_table t = {};
        struct stat st;
        double cpu0 = cpu_seconds(), cpu;
        int r = 0;

        if (!times)
                abort();
        for (int i = 0; i < rounds; i++) {
                unwind_table_done(&t);
                times[i] = build_once(path, &t, &r);
                if (times[i] < 0) {
                        printf("%s %s: %s\n", label, path, strerror(-r));
                        return;
                }
        }
        cpu = (cpu_seconds() - cpu0) / rounds;
        qsort(times, rounds, sizeof(double), double_compare);
        if (stat(path, &st) < 0)
                st.st_size = 0;
        printf("%s: %s (%.1f MiB)\n", label, path, st.st_size / 1048576.0);
        printf("  build: median %.2f ms, min %.2f ms, CPU %.2f ms per build (%d rounds)\n", times[rounds / 2] * 1e3,
               times[0] * 1e3, cpu * 1e3, rounds);
        printf("  %zu FDEs -> %zu rows (%.1f KiB): GAP %zu, CFA_SP %zu, CFA_FP %zu, PLT %zu, END %zu, SIGNAL %zu, "
               "UNSUPPORTED %zu\n",
               t.fdes, t.n, t.n * sizeof(*t.rows) / 1024.0, t.by_kind[PROFD_UNWIND_GAP],
               t.by_kind[PROFD_UNWIND_CFA_SP], t.by_kind[PROFD_UNWIND_CFA_FP], t.by_kind[PROFD_UNWIND_PLT],
               t.by_kind[PROFD_UNWIND_END], t.by_kind[PROFD_UNWIND_SIGNAL], t.by_kind[PROFD_UNWIND_UNSUPPORTED]);
        printf("  %.0f ns per row\n", times[rounds / 2] * 1e9 / (double) MAX(t.n, (size_t) 1));
        printf("  RSS added at the peak: %.1f MiB in pieces (as profd builds it), %.1f MiB whole\n",
               peak_rss_kib(path, true) / 1024.0, peak_rss_kib(path, false) / 1024.0);
        unwind_table_done(&t);
}

/* The libc this program runs with, from /proc/self/maps. */
static int self_libc(char *path, size_t size) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/maps", "re");
        char line[1024], p[512];

        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "%*s %*s %*s %*s %*s %511s", p) == 1 && strstr(p, "/libc.so.6")) {
                        snprintf(path, size, "%s", p);
                        return 0;
                }
        return -ENOENT;
}

/* The largest regular files under /usr, to find the largest ELF with CFI. */
#define LARGEST_KEPT 16
static struct {
        off_t size;
        char path[512];
} largest[LARGEST_KEPT];

static int largest_visit(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        size_t i;

        (void) ftw;
        if (type != FTW_F || !S_ISREG(st->st_mode) || st->st_size <= largest[LARGEST_KEPT - 1].size)
                return 0;
        for (i = LARGEST_KEPT - 1; i > 0 && largest[i - 1].size < st->st_size; i--)
                largest[i] = largest[i - 1];
        largest[i].size = st->st_size;
        snprintf(largest[i].path, sizeof(largest[i].path), "%s", path);
        return 0;
}

static bool has_cfi(const char *path) {
        struct unwind_table t;
        int r;

        if (!is_elf(path) || build_once(path, &t, &r) < 0)
                return false;
        unwind_table_done(&t);
        return true;
}

struct file_result {
        size_t rows;
        double seconds;
        char path[512];
};

static int rows_compare(const void *a, const void *b) {
        const struct file_result *x = a, *y = b;

        return x->rows < y->rows ? -1 : x->rows > y->rows;
}

/* Every ELF file directly in dirs (symlinks and hard links counted once). */
static void scan(char **dirs, size_t n_dirs, char *ret_most, size_t size) {
        struct file_result *res = NULL;
        size_t n = 0, cap = 0, elf_files = 0, no_cfi = 0, too_high = 0, failed = 0, total_rows = 0;
        size_t by_kind[PROFD_UNWIND_UNSUPPORTED + 1] = {};
        struct { dev_t dev; ino_t ino; } *seen = NULL;
        size_t n_seen = 0;
        double total = 0, t0 = now(), cpu0 = cpu_seconds();

        for (size_t d = 0; d < n_dirs; d++) {
                DIR *dir = opendir(dirs[d]);
                struct dirent *de;

                if (!dir) {
                        fprintf(stderr, "%s: %m\n", dirs[d]);
                        continue;
                }
                while ((de = readdir(dir))) {
                        char path[512];
                        struct unwind_table t;
                        struct stat st;
                        bool dup = false;
                        double s;
                        int r;

                        snprintf(path, sizeof(path), "%s/%s", dirs[d], de->d_name);
                        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || !is_elf(path))
                                continue;
                        for (size_t i = 0; i < n_seen && !dup; i++)
                                dup = seen[i].dev == st.st_dev && seen[i].ino == st.st_ino;
                        if (dup)
                                continue;
                        seen = reallocarray(seen, n_seen + 1, sizeof(*seen));
                        if (!seen)
                                abort();
                        seen[n_seen].dev = st.st_dev;
                        seen[n_seen++].ino = st.st_ino;
                        elf_files++;

                        s = build_once(path, &t, &r);
                        if (s < 0) {
                                no_cfi += r == -ENODATA;
                                too_high += r == -E2BIG;
                                if (r != -ENODATA && r != -E2BIG) {
                                        failed++;
                                        printf("  %s: %s\n", path, strerror(-r));
                                }
                                continue;
                        }
                        if (n == cap) {
                                cap = MAX(cap * 2, (size_t) 256);
                                res = reallocarray(res, cap, sizeof(*res));
                                if (!res)
                                        abort();
                        }
                        res[n].rows = t.n;
                        res[n].seconds = s;
                        snprintf(res[n].path, sizeof(res[n].path), "%s", path);
                        n++;
                        total += s;
                        total_rows += t.n;
                        for (size_t k = 0; k < ELEMENTSOF(by_kind); k++)
                                by_kind[k] += t.by_kind[k];
                        unwind_table_done(&t);
                }
                closedir(dir);
        }
        if (n == 0) {
                printf("scan: no ELF file with CFI\n");
                free(res);
                free(seen);
                return;
        }
        qsort(res, n, sizeof(*res), rows_compare);
        printf("scan of");
        for (size_t d = 0; d < n_dirs; d++)
                printf(" %s", dirs[d]);
        printf(" (%.1f s wall):\n", now() - t0);
        printf("  %zu distinct ELF files: %zu with CFI, %zu without, %zu with code above 4 GiB, %zu failed\n",
               elf_files, n, no_cfi, too_high, failed);
        printf("  rows: %zu in all (%.1f MiB); per file median %zu, p90 %zu, p99 %zu, max %zu (%s)\n", total_rows,
               total_rows * sizeof(struct profd_unwind_row) / 1048576.0, res[n / 2].rows, res[n * 9 / 10].rows,
               res[n * 99 / 100].rows, res[n - 1].rows, res[n - 1].path);
        printf("  rows by kind: GAP %.2f%%, CFA_SP %.2f%%, CFA_FP %.2f%%, PLT %.3f%%, END %.4f%%, SIGNAL %zu rows, "
               "UNSUPPORTED %.3f%%\n",
               100.0 * by_kind[0] / total_rows, 100.0 * by_kind[1] / total_rows, 100.0 * by_kind[2] / total_rows,
               100.0 * by_kind[3] / total_rows, 100.0 * by_kind[4] / total_rows, by_kind[5],
               100.0 * by_kind[6] / total_rows);
        printf("  build time: %.2f s in all, %.0f ns per row; CPU %.2f s for the whole scan\n", total,
               total * 1e9 / (double) total_rows, cpu_seconds() - cpu0);
        snprintf(ret_most, size, "%s", res[n - 1].path);
        free(res);
        free(seen);
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "rounds", required_argument, NULL, 'r' },
                { "no-scan", no_argument, NULL, 's' },
                {}
        };
        static char *default_dirs[] = { "/usr/bin", "/usr/sbin", "/usr/lib/x86_64-linux-gnu" };
        char libc[512], most[512] = "";
        int rounds = 11, c;
        bool do_scan = true;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'r':
                        rounds = atoi(optarg);
                        if (rounds < 1) {
                                fprintf(stderr, "--rounds must be at least 1\n");
                                return 2;
                        }
                        break;
                case 's':
                        do_scan = false;
                        break;
                default:
                        return 2;
                }
        if (elf_version(EV_CURRENT) == EV_NONE)
                return 1;

        if (self_libc(libc, sizeof(libc)) < 0) {
                fprintf(stderr, "libc not found in /proc/self/maps\n");
                return 1;
        }
        bench_file("libc", libc, rounds);

        /* The largest ELF files under /usr: the first with CFI. */
        if (nftw("/usr", largest_visit, 64, FTW_PHYS | FTW_MOUNT) < 0)
                fprintf(stderr, "walking /usr: %m\n");
        for (size_t i = 0; i < LARGEST_KEPT && largest[i].size > 0; i++)
                if (has_cfi(largest[i].path)) {
                        bench_file("largest ELF file with CFI under /usr", largest[i].path, MAX(rounds / 4, 1));
                        break;
                }

        if (do_scan) {
                if (optind < argc)
                        scan(argv + optind, argc - optind, most, sizeof(most));
                else
                        scan(default_dirs, ELEMENTSOF(default_dirs), most, sizeof(most));
                if (most[0])
                        bench_file("most rows", most, MAX(rounds / 4, 1));
        }
        return 0;
}
