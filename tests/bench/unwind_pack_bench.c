/* Benchmark of the compact unwind tables (run by hand, not a test; issue
 * 43): for each file, today's kernel bytes (8-byte rows and their index)
 * against the packed table's (table-pack.h), the time to build and to pack
 * the table, and the figures the encoding was chosen by: distinct rules per
 * file and over all files (a shared dictionary), 64 KiB pages against 4
 * KiB (index slots, the most rows a page's search meets), tables identical
 * to another file's; and the daemon's path, the rows read in pieces and
 * packed as they come (CPU time). Totals against the kernel's row budget.
 *
 * usage: unwind-pack-bench [--rounds R] [--budget BYTES] FILE...
 * (FILE: @LIST reads one path a line from LIST, # comments; the mix of
 * docs/performance.md is tests/bench/unwind_pack_mix.txt) */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "table-pack.h"
#include "unwind-table.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(Elf *, elf_end);

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static double cpu_seconds(void) {
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        return (double) ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double) ru.ru_stime.tv_sec +
               ru.ru_stime.tv_usec / 1e6;
}

/* The daemon's path: the rows read in pieces (unwind_reader, the file
 * mapped by the reader) and packed as they come, the packed slots
 * discarded where the daemon writes them into the kernel's array. */
static int discard(void *userdata, size_t at, const uint32_t *slots, size_t n) {
        (void) userdata, (void) at, (void) slots, (void) n;
        return 0;
}

static int build_packed_in_pieces(const char *path, size_t *ret_slots) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_(elf_endp) Elf *e = NULL;
        _cleanup_(unwind_reader_freep) unwind_reader *r = NULL;
        _cleanup_free_ struct table_pack *p = malloc(sizeof(*p));
        struct unwind_table counts;
        uint32_t first, last;
        int k;

        if (fd < 0)
                return -errno;
        e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!e || !p)
                return -EINVAL;
        k = unwind_reader_new(e, fd, &r);
        if (k < 0)
                return k;
        unwind_reader_span(r, &first, &last);
        k = table_pack_begin(p, first, last, table_pack_plan(unwind_reader_bound(r), first, last, PROFD_PACK_RULES_MAX), discard, NULL);
        if (k >= 0)
                k = unwind_reader_rows(r, table_pack_add, p, &counts);
        if (k >= 0)
                k = table_pack_end(p, ret_slots);
        table_pack_done(p);
        return k;
}

static int build(const char *path, struct unwind_table *t) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_(elf_endp) Elf *e = NULL;

        if (fd < 0)
                return -errno;
        e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!e)
                return -EINVAL;
        return unwind_table_build(e, t);
}

/* distinct rules over all files: a sorted set of the rules' 4 bytes */
static uint32_t *all_rules;
static size_t n_all_rules, sum_rules;

static void rules_merge(const uint32_t *slots) {
        const struct profd_pack_head *h = (const void *) slots;
        const uint32_t *rules = slots + 4 + h->pages + 1 + h->rows;

        sum_rules += h->rules;
        for (uint32_t i = 0; i < h->rules; i++) {
                bool found = false;

                for (size_t j = 0; j < n_all_rules && !found; j++)
                        found = all_rules[j] == rules[i];
                if (!found) {
                        all_rules = reallocarray(all_rules, n_all_rules + 1, sizeof(*all_rules));
                        if (!all_rules)
                                abort();
                        all_rules[n_all_rules++] = rules[i];
                }
        }
}

/* FNV-1a of the packed slots: tables identical across files */
static uint64_t slots_hash(const uint32_t *slots, size_t n) {
        const unsigned char *b = (const unsigned char *) slots;
        uint64_t h = 1469598103934665603ULL;

        for (size_t i = 0; i < n * 4; i++)
                h = (h ^ b[i]) * 1099511628211ULL;
        return h;
}

/* The slots the index of the 8-byte rows of before issue 43 took after
 * them (a head, then a count per bucket of 2^shift bytes, two to a slot,
 * a bucket for about 8 rows; none below 16 rows): the kernel bytes the
 * compact tables are compared with. */
static size_t old_index_slots(const struct unwind_table *t) {
        uint32_t first, last, shift = 1;

        if (t->n < 16)
                return 0;
        first = (uint32_t) t->rows[0].pc;
        last = (uint32_t) t->rows[t->n - 1].pc;
        while (shift < 31 && (((uint64_t) last - first) >> shift) + 1 > t->n / 8)
                shift++;
        return 1 + ((size_t) ((((uint64_t) last - first) >> shift) + 1) + 2) / 2;
}

/* The pages of 2^shift bytes a table spans and the most rows one holds. */
static void pages_at(const struct unwind_table *t, unsigned shift, size_t *ret_pages, size_t *ret_max) {
        size_t max = 0, run = 0;

        for (size_t i = 0; i < t->n; i++) {
                if (i > 0 && t->rows[i].pc >> shift == t->rows[i - 1].pc >> shift)
                        run++;
                else
                        run = 1;
                max = MAX(max, run);
        }
        *ret_pages = t->n ? (t->rows[t->n - 1].pc >> shift) - (t->rows[0].pc >> shift) + 1 : 0;
        *ret_max = max;
}

struct totals {
        size_t files, rows, old_bytes, new_bytes, index4k_bytes, dup_files, dup_bytes;
        size_t gap_rows, short_gaps; /* GAP rows; those under 16 bytes (padding between FDEs?) */
};

static uint64_t *hashes;
static size_t n_hashes;

static void bench_file(const char *path, int rounds, struct totals *tot) {
        _cleanup_free_ uint32_t *slots = NULL;
        struct unwind_table t = {};
        double build_wall = 1e9, build_cpu = 1e9, pack_wall = 1e9, pieces_cpu = 1e9;
        size_t n = 0, pages16, max16, pages12, max12;
        size_t old;
        uint64_t h;
        int r;

        for (int i = 0; i < rounds; i++) {
                double t0 = now(), c0 = cpu_seconds(), t1;

                unwind_table_done(&t);
                r = build(path, &t);
                if (r < 0) {
                        printf("%-60s no table: %s\n", path, strerror(-r));
                        return;
                }
                t1 = now();
                build_wall = MIN(build_wall, t1 - t0);
                build_cpu = MIN(build_cpu, cpu_seconds() - c0);
                free(slots);
                slots = NULL;
                r = table_pack_table(&t, &slots, &n);
                if (r < 0) {
                        printf("%-60s not packed: %s\n", path, strerror(-r));
                        unwind_table_done(&t);
                        return;
                }
                pack_wall = MIN(pack_wall, now() - t1);
                t1 = cpu_seconds();
                r = build_packed_in_pieces(path, &(size_t) { 0 });
                if (r < 0) {
                        printf("%-60s not packed in pieces: %s\n", path, strerror(-r));
                        unwind_table_done(&t);
                        return;
                }
                pieces_cpu = MIN(pieces_cpu, cpu_seconds() - t1);
        }
        old = (t.n + old_index_slots(&t)) * sizeof(struct profd_unwind_row);
        pages_at(&t, 16, &pages16, &max16);
        pages_at(&t, 12, &pages12, &max12);
        printf("%-60s %9zu rows %11zu -> %10zu bytes (%.2fx)  %5u rules  64K pages %5zu (max %5zu rows)  "
               "4K pages %6zu (max %4zu rows)  build %7.1f ms (CPU %7.1f)  pack %6.1f ms  "
               "in pieces, packed: CPU %7.1f ms\n",
               path, t.n, old, n * 4, (double) old / (double) (n * 4), ((const struct profd_pack_head *) slots)->rules,
               pages16, max16, pages12, max12, build_wall * 1e3, build_cpu * 1e3, pack_wall * 1e3,
               pieces_cpu * 1e3);
        tot->files++;
        tot->rows += t.n;
        for (size_t i = 0; i + 1 < t.n; i++)
                if (t.rows[i].kind == PROFD_UNWIND_GAP) {
                        tot->gap_rows++;
                        tot->short_gaps += t.rows[i + 1].pc - t.rows[i].pc < 16;
                }
        tot->old_bytes += old;
        tot->new_bytes += n * 4;
        /* 4 KiB pages: 15 index slots more per 64 KiB, same rows */
        tot->index4k_bytes += (pages12 + 1) * 4;
        rules_merge(slots);
        h = slots_hash(slots, n);
        for (size_t i = 0; i < n_hashes; i++)
                if (hashes[i] == h) {
                        tot->dup_files++;
                        tot->dup_bytes += n * 4;
                        printf("  identical to an earlier file's table\n");
                        break;
                }
        hashes = reallocarray(hashes, n_hashes + 1, sizeof(*hashes));
        if (!hashes)
                abort();
        hashes[n_hashes++] = h;
        unwind_table_done(&t);
}

static void bench_list(const char *list, int rounds, struct totals *tot) {
        _cleanup_fclose_ FILE *f = fopen(list, "re");
        char line[4096];

        if (!f) {
                fprintf(stderr, "%s: %m\n", list);
                exit(1);
        }
        while (fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\n")] = 0;
                if (line[0] && line[0] != '#')
                        bench_file(line, rounds, tot);
        }
}

int main(int argc, char **argv) {
        struct totals tot = {};
        size_t budget = 24 << 20; /* today's unwind_rows: 3,145,728 rows of 8 bytes */
        int rounds = 1, c;

        while ((c = getopt(argc, argv, "r:b:")) >= 0)
                switch (c) {
                case 'r':
                        rounds = atoi(optarg);
                        break;
                case 'b':
                        budget = strtoull(optarg, NULL, 10);
                        break;
                default:
                        fprintf(stderr, "usage: %s [-r ROUNDS] [-b BUDGET_BYTES] FILE|@LIST...\n", argv[0]);
                        return 2;
                }
        if (rounds < 1 || optind >= argc || elf_version(EV_CURRENT) == EV_NONE) {
                fprintf(stderr, "usage: %s [-r ROUNDS] [-b BUDGET_BYTES] FILE|@LIST...\n", argv[0]);
                return 2;
        }
        for (int i = optind; i < argc; i++) {
                if (argv[i][0] == '@')
                        bench_list(argv[i] + 1, rounds, &tot);
                else
                        bench_file(argv[i], rounds, &tot);
        }
        printf("\n%zu files, %zu rows\n", tot.files, tot.rows);
        printf("today (8-byte rows + index):   %11zu bytes = %6.2f MiB, %5.1f%% of a %zu-byte budget\n",
               tot.old_bytes, tot.old_bytes / 1048576.0, 100.0 * tot.old_bytes / budget, budget);
        printf("packed (4-byte slots):         %11zu bytes = %6.2f MiB, %5.1f%% of it (%.2fx smaller)\n",
               tot.new_bytes, tot.new_bytes / 1048576.0, 100.0 * tot.new_bytes / budget,
               (double) tot.old_bytes / (double) MAX(tot.new_bytes, (size_t) 1));
        printf("rules: %zu per file summed, %zu distinct over all files (a shared dictionary saves %zu bytes)\n",
               sum_rules, n_all_rules, (sum_rules - n_all_rules) * 4);
        printf("4 KiB pages instead of 64 KiB: index %zu bytes over all files\n", tot.index4k_bytes);
        printf("GAP rows: %zu (%.1f%% of rows), %zu of them under 16 bytes (%.1f%% of rows)\n", tot.gap_rows,
               100.0 * tot.gap_rows / MAX(tot.rows, (size_t) 1), tot.short_gaps,
               100.0 * tot.short_gaps / MAX(tot.rows, (size_t) 1));
        printf("identical tables: %zu files, %zu bytes\n", tot.dup_files, tot.dup_bytes);
        free(all_rules);
        free(hashes);
        return 0;
}
