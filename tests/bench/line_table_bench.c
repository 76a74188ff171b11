/* Benchmark of the line-table reader (run by hand, not a test): the time
 * to read the line program of every CU of each file given, as the
 * symbolizer does for a CU the first time a frame needs it (best of
 * --rounds, 20 by default), with the CUs and rows read.
 *
 * usage: line-table-bench [--rounds R] FILE... (files with DWARF) */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "dwarf-lines.h"
#include "macro.h"

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* One pass over every CU of d: seconds, and the CUs and rows read. */
static double read_all(Dwarf *d, const struct line_sections *s, size_t *ret_cus, size_t *ret_rows) {
        Dwarf_Off off = 0, next;
        size_t header;
        uint8_t address_size;
        double t0 = now();

        *ret_cus = *ret_rows = 0;
        while (dwarf_nextcu(d, off, &next, &header, NULL, &address_size, NULL) == 0) {
                Dwarf_Attribute attr;
                Dwarf_Word stmt;
                Dwarf_Die cu;

                if (dwarf_offdie(d, off + header, &cu) &&
                    dwarf_formudata(dwarf_attr(&cu, DW_AT_stmt_list, &attr), &stmt) == 0) {
                        struct line_table *t = NULL;

                        if (line_table_read(s, stmt, dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &attr)),
                                            address_size, &t) == 0 && t) {
                                *ret_rows += line_table_rows(t);
                                (*ret_cus)++;
                                line_table_free(t);
                        }
                }
                off = next;
        }
        return now() - t0;
}

int main(int argc, char **argv) {
        int rounds = 20, c;

        while ((c = getopt(argc, argv, "r:")) >= 0)
                if (c == 'r')
                        rounds = atoi(optarg);
                else
                        return 2;
        if (optind >= argc || rounds < 1) {
                fprintf(stderr, "usage: %s [-r ROUNDS] FILE...\n", argv[0]);
                return 2;
        }
        if (elf_version(EV_CURRENT) == EV_NONE)
                return 1;
        for (int i = optind; i < argc; i++) {
                int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
                Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
                Dwarf *d = e ? dwarf_begin_elf(e, DWARF_C_READ, NULL) : NULL;
                struct line_sections s;
                size_t cus = 0, rows = 0;
                double best = -1;

                if (!d) {
                        fprintf(stderr, "%s: no DWARF\n", argv[i]);
                        if (e)
                                elf_end(e);
                        if (fd >= 0)
                                close(fd);
                        continue;
                }
                s = line_sections_of(e);
                for (int r = 0; r < rounds; r++) {
                        double t = read_all(d, &s, &cus, &rows);

                        if (best < 0 || t < best)
                                best = t;
                }
                printf("%s: %zu CUs, %zu rows, every CU read in %.3f ms (best of %d)\n", argv[i], cus, rows,
                       best * 1e3, rounds);
                dwarf_end(d);
                elf_end(e);
                close(fd);
        }
        return 0;
}
