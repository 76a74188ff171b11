/* Tests of the unwind-table core against binutils: every CFI row readelf
 * --debug-dump=frames-interp prints for the fixtures (tests/data/unwind,
 * built by meson with fixed flags), for the libc and dynamic loader this
 * test runs with, and for Debian's libstdc++ and python3.11 must give the
 * same rule through unwind_table_lookup, at the row's first byte and at its
 * last; the gaps between FDEs are GAP rows;
 * named fixture functions get the kind their CFI form calls for; mapping
 * biases agree with the dynamic linker's load bases.
 *
 * usage: test-unwind-table READELF NOFP FP REALIGN DEBUGFRAME DEBUGFRAME_Z FORMS_DEBUGFRAME NOCFI EMPTY HIGH HUGE_REGISTER */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"
#include "tests.h"
#include "unwind-table.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(Elf *, elf_end);

static const char *readelf;

/* --- the oracle: readelf's frames-interp output ----------------------- */

/* One row as readelf prints it: the values of the columns that matter. */
struct oracle_state {
        char cfa[32], rbp[32], rsp[32], ra[32];
};

struct oracle_row {
        uint64_t loc;
        struct oracle_state s;
};

struct oracle_fde {
        uint64_t lo, hi;
        uint64_t cie; /* offset of its CIE */
        int plt_k;    /* as struct oracle_expr */
        size_t first_row, n_rows;
};

struct oracle_cie {
        uint64_t offset;
        bool signal;         /* augmentation holds 'S' */
        struct oracle_state initial;
};

/* An FDE's CFA expression, from the raw dump (--debug-dump=frames): the
 * PLT threshold K when it is the PLT form, -1 when it is another
 * expression, -2 when the FDE holds several different ones. */
struct oracle_expr {
        uint64_t offset;
        int plt_k;
};

struct oracle {
        struct oracle_fde *fdes;
        size_t n_fdes;
        struct oracle_row *rows;
        size_t n_rows;
        struct oracle_cie *cies;
        size_t n_cies;
        struct oracle_expr *exprs;
        size_t n_exprs;
};

static void oracle_done(struct oracle *o) {
        free(o->fdes);
        free(o->rows);
        free(o->cies);
        free(o->exprs);
}

/* Appends a zeroed element. The capacity is the power of two at or above
 * *n, doubled when full: growing by one each time copied the arrays of
 * libc's 25 k rows quadratically, which took minutes under ASan. */
static void *append(void *array, size_t *n, size_t size) {
        char *p = array;

        if (*n == 0 || (*n & (*n - 1)) == 0) {
                p = reallocarray(array, *n ? 2 * *n : 1, size);
                if (!p)
                        abort();
        }
        memset(p + *n * size, 0, size);
        (*n)++;
        return p;
}

/* Splits a readelf row into tokens, keeping "r9 (r9)" (a register rule)
 * as one token. Returns the count. */
static size_t tokenize(char *line, char **tok, size_t max) {
        size_t n = 0;

        for (char *s = strtok(line, " \t\n"); s; s = strtok(NULL, " \t\n")) {
                if (s[0] == '(' && n > 0)
                        continue; /* the name of the register before */
                if (n == max)
                        break;
                tok[n++] = s;
        }
        return n;
}

static void state_set(struct oracle_state *s, const char *column, const char *value) {
        char *dst = NULL;

        if (streq(column, "CFA"))
                dst = s->cfa;
        else if (streq(column, "rbp"))
                dst = s->rbp;
        else if (streq(column, "rsp"))
                dst = s->rsp;
        else if (streq(column, "ra"))
                dst = s->ra;
        if (dst)
                snprintf(dst, sizeof(s->cfa), "%s", value);
}

static FILE *readelf_open(const char *dump, const char *path) {
        _cleanup_free_ char *cmd = NULL;
        FILE *f;

        if (asprintf(&cmd, "'%s' --wide --debug-dump=%s '%s' 2>/dev/null", readelf, dump, path) < 0)
                abort();
        f = popen(cmd, "r");
        if (!f)
                abort();
        return f;
}

/* Reads the CFA expressions of each FDE of the section the table is built
 * from (.eh_frame if there is one, else .debug_frame). */
static void oracle_read_exprs(struct oracle *o, const char *path, const char *section) {
        FILE *f = readelf_open("frames", path);
        char line[4096];
        bool in_section = false;
        struct oracle_expr *cur = NULL;

        while (fgets(line, sizeof(line), f)) {
                unsigned long long off;
                char kind[8];
                const char *e;
                int k;

                if (strncmp(line, "Contents of the ", 16) == 0) {
                        in_section = strncmp(line + 16, section, strlen(section)) == 0 &&
                                     line[16 + strlen(section)] == ' ';
                        cur = NULL;
                        continue;
                }
                if (!in_section)
                        continue;
                if (sscanf(line, "%llx %*s %*s %7s", &off, kind) == 2 && streq(kind, "FDE")) {
                        o->exprs = append(o->exprs, &o->n_exprs, sizeof(*o->exprs));
                        cur = &o->exprs[o->n_exprs - 1];
                        cur->offset = off;
                        cur->plt_k = -3; /* none yet */
                        continue;
                }
                e = strstr(line, "DW_CFA_def_cfa_expression (");
                if (!cur || !e)
                        continue;
                if (sscanf(e,
                           "DW_CFA_def_cfa_expression (DW_OP_breg7 (rsp): 8; DW_OP_breg16 (rip): 0; DW_OP_lit15; "
                           "DW_OP_and; DW_OP_lit%d; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus%c",
                           &k, kind) == 2 &&
                    kind[0] == ')')
                        ;
                else
                        k = -1;
                cur->plt_k = cur->plt_k == -3 || cur->plt_k == k ? k : -2;
        }
        pclose(f);
}

static int oracle_plt_k(const struct oracle *o, uint64_t fde_offset) {
        for (size_t i = 0; i < o->n_exprs; i++)
                if (o->exprs[i].offset == fde_offset)
                        return o->exprs[i].plt_k;
        return -3;
}

/* Parses readelf's frames-interp output of the section the table is built
 * from. Returns the number of FDEs read. */
static size_t oracle_read(struct oracle *o, const char *path) {
        FILE *f;
        char line[4096], section[32] = "", *columns[64];
        size_t n_columns = 0;
        struct oracle_state *initial = NULL; /* the CIE being read */
        struct oracle_fde *fde = NULL;
        bool in_section = false, has_eh_frame = false;

        /* .eh_frame wins when both exist, as in unwind_table_build */
        f = readelf_open("frames-interp", path);
        while (fgets(line, sizeof(line), f))
                if (strstr(line, "Contents of the .eh_frame section"))
                        has_eh_frame = true;
        pclose(f);
        snprintf(section, sizeof(section), "%s", has_eh_frame ? ".eh_frame" : ".debug_frame");
        oracle_read_exprs(o, path, section);

        f = readelf_open("frames-interp", path);
        while (fgets(line, sizeof(line), f)) {
                unsigned long long off, cie, lo, hi;
                char copy[4096], *tok[64];
                size_t n;

                if (strncmp(line, "Contents of the ", 16) == 0) {
                        in_section = strncmp(line + 16, section, strlen(section)) == 0 &&
                                     line[16 + strlen(section)] == ' ';
                        initial = NULL;
                        fde = NULL;
                        continue;
                }
                if (!in_section)
                        continue;
                if (sscanf(line, "%llx %*s %*s FDE cie=%llx pc=%llx..%llx", &off, &cie, &lo, &hi) == 4) {
                        o->fdes = append(o->fdes, &o->n_fdes, sizeof(*o->fdes));
                        fde = &o->fdes[o->n_fdes - 1];
                        *fde = (struct oracle_fde) { .lo = lo, .hi = hi, .cie = cie, .first_row = o->n_rows,
                                                     .plt_k = oracle_plt_k(o, off) };
                        initial = NULL;
                        continue;
                }
                if (strstr(line, " CIE ") && sscanf(line, "%llx", &off) == 1) {
                        const char *aug = strchr(line, '"');
                        const char *aug_end = aug ? strchr(aug + 1, '"') : NULL;

                        o->cies = append(o->cies, &o->n_cies, sizeof(*o->cies));
                        o->cies[o->n_cies - 1].offset = off;
                        o->cies[o->n_cies - 1].signal = aug && aug_end && memchr(aug + 1, 'S', aug_end - aug - 1);
                        initial = &o->cies[o->n_cies - 1].initial;
                        strcpy(initial->rbp, "u");
                        strcpy(initial->rsp, "u");
                        strcpy(initial->ra, "u");
                        fde = NULL;
                        continue;
                }
                snprintf(copy, sizeof(copy), "%s", line);
                n = tokenize(copy, tok, ELEMENTSOF(tok));
                if (n > 1 && streq(tok[0], "LOC")) {
                        static char names[64][16];

                        n_columns = MIN(n - 1, ELEMENTSOF(columns));
                        for (size_t i = 0; i < n_columns; i++) {
                                snprintf(names[i], sizeof(names[i]), "%s", tok[i + 1]);
                                columns[i] = names[i];
                        }
                        continue;
                }
                if (n < 2 || strlen(tok[0]) < 8 || sscanf(tok[0], "%llx", &lo) != 1 || n - 1 != n_columns)
                        continue;
                if (initial) {
                        for (size_t i = 0; i < n_columns; i++)
                                state_set(initial, columns[i], tok[i + 1]);
                } else if (fde) {
                        struct oracle_row *row;

                        o->rows = append(o->rows, &o->n_rows, sizeof(*o->rows));
                        row = &o->rows[o->n_rows - 1];
                        row->loc = lo;
                        strcpy(row->s.rbp, "u");
                        strcpy(row->s.rsp, "u");
                        strcpy(row->s.ra, "u");
                        for (size_t i = 0; i < n_columns; i++)
                                state_set(&row->s, columns[i], tok[i + 1]);
                        fde->n_rows++;
                }
        }
        pclose(f);
        return o->n_fdes;
}

static const struct oracle_cie *oracle_cie(const struct oracle *o, uint64_t offset) {
        for (size_t i = 0; i < o->n_cies; i++)
                if (o->cies[i].offset == offset)
                        return &o->cies[i];
        return NULL;
}

/* "c-16" -> -16; false for anything else. */
static bool cfa_relative(const char *v, long *ret) {
        char *end;

        if (v[0] != 'c' || (v[1] != '-' && v[1] != '+'))
                return false;
        *ret = strtol(v + 1, &end, 10);
        return *end == '\0';
}

/* "rsp+16" with reg "rsp" -> 16. */
static bool reg_plus(const char *v, const char *reg, long *ret) {
        size_t n = strlen(reg);
        char *end;

        if (strncmp(v, reg, n) != 0 || v[n] != '+')
                return false;
        *ret = strtol(v + n + 1, &end, 10);
        return *end == '\0';
}

/* The row the classification rules call for, derived from readelf's text
 * independently of libdw. Returns false when the oracle cannot tell (a CFA
 * expression in an FDE with several different ones). */
static bool expected_row(const struct oracle_state *s, bool signal, int plt_k, struct profd_unwind_row *ret) {
        struct profd_unwind_row unsupported = { .kind = PROFD_UNWIND_UNSUPPORTED };
        long v;

        *ret = unsupported;
        if (signal) {
                ret->kind = PROFD_UNWIND_SIGNAL;
                return true;
        }
        if (streq(s->ra, "u")) {
                ret->kind = PROFD_UNWIND_END;
                return true;
        }
        if (!streq(s->ra, "c-8"))
                return true;
        if (reg_plus(s->cfa, "rsp", &v) && v <= 65535) {
                ret->kind = PROFD_UNWIND_CFA_SP;
                ret->cfa_off = (uint16_t) v;
        } else if (reg_plus(s->cfa, "rbp", &v) && v <= 65535) {
                ret->kind = PROFD_UNWIND_CFA_FP;
                ret->cfa_off = (uint16_t) v;
        } else if (streq(s->cfa, "exp") && plt_k >= 0) {
                ret->kind = PROFD_UNWIND_PLT;
                ret->cfa_off = (uint16_t) plt_k;
        } else if (streq(s->cfa, "exp") && plt_k == -2)
                return false;
        else
                return true;
        if (!streq(s->rsp, "u") && !streq(s->rsp, "s")) {
                *ret = unsupported;
                return true;
        }
        if (streq(s->rbp, "u") || streq(s->rbp, "s"))
                return true;
        if (cfa_relative(s->rbp, &v) && v != 0 && v % 8 == 0 && v / 8 >= INT8_MIN && v / 8 <= INT8_MAX) {
                ret->rbp_off = (int8_t) (v / 8);
                return true;
        }
        *ret = unsupported;
        return true;
}

static const char *kind_name(unsigned kind) {
        static const char *const names[] = { "GAP", "CFA_SP", "CFA_FP", "PLT", "END", "SIGNAL", "UNSUPPORTED" };

        return kind < ELEMENTSOF(names) ? names[kind] : "?";
}

static bool row_eq(const struct profd_unwind_row *a, const struct profd_unwind_row *b) {
        return a && a->kind == b->kind && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off;
}

/* What a comparison against the oracle covered. */
struct oracle_stats {
        size_t rows;                                  /* readelf rows compared */
        size_t by_kind[PROFD_UNWIND_UNSUPPORTED + 1]; /* of those, by expected kind */
        size_t gaps;                                  /* FDE ends checked to be GAP */
        size_t skipped;                               /* rows in overlapping FDEs, not compared */
        int plt_k;                                    /* the PLT threshold seen, -1 if none */
};

static int mismatches_shown;

static void check_at(const char *path, const struct unwind_table *t, uint64_t pc,
                     const struct profd_unwind_row *want, const struct oracle_state *s) {
        const struct profd_unwind_row *got = unwind_table_lookup(t, pc);

        if (row_eq(got, want))
                return;
        tests_failed++;
        if (mismatches_shown++ < 20)
                fprintf(stderr,
                        "%s: 0x%" PRIx64 ": got %s cfa_off %d rbp_off %d, readelf says CFA %s rbp %s rsp %s ra %s: "
                        "%s cfa_off %d rbp_off %d\n",
                        path, pc, got ? kind_name(got->kind) : "(none)", got ? got->cfa_off : 0,
                        got ? got->rbp_off : 0, s->cfa, s->rbp, s->rsp, s->ra, kind_name(want->kind), want->cfa_off,
                        want->rbp_off);
}

static int fde_lo_compare(const void *a, const void *b) {
        const struct oracle_fde *x = a, *y = b;

        return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Compares the table with readelf at every row's first and last byte, and
 * checks that each FDE end no FDE continues is a GAP row. */
static void check_against_readelf(const char *path, const struct unwind_table *t, struct oracle_stats *stats) {
        struct oracle o = {};
        size_t nonempty = 0;

        *stats = (struct oracle_stats) { .plt_k = -1 };
        oracle_read(&o, path);
        CHECK(o.n_fdes > 0);
        qsort(o.fdes, o.n_fdes, sizeof(*o.fdes), fde_lo_compare);

        for (size_t i = 0; i < o.n_fdes; i++) {
                const struct oracle_fde *fde = &o.fdes[i];
                const struct oracle_cie *cie = oracle_cie(&o, fde->cie);
                bool overlaps = (i > 0 && o.fdes[i - 1].hi > fde->lo) ||
                                (i + 1 < o.n_fdes && o.fdes[i + 1].lo < fde->hi);
                struct oracle_row only;

                if (fde->lo >= fde->hi)
                        continue;
                nonempty++;
                if (!cie) {
                        fprintf(stderr, "%s: FDE at 0x%" PRIx64 " names CIE 0x%" PRIx64 " readelf did not print\n",
                                path, fde->lo, fde->cie);
                        tests_failed++;
                        continue;
                }
                if (overlaps) {
                        stats->skipped += MAX(fde->n_rows, (size_t) 1);
                        continue;
                }
                /* An FDE without instructions of its own keeps its CIE's rule. */
                only = (struct oracle_row) { .loc = fde->lo, .s = cie->initial };
                for (size_t j = 0; j < MAX(fde->n_rows, (size_t) 1); j++) {
                        const struct oracle_row *row = fde->n_rows ? &o.rows[fde->first_row + j] : &only;
                        uint64_t end = j + 1 < fde->n_rows ? o.rows[fde->first_row + j + 1].loc : fde->hi;
                        struct profd_unwind_row want;

                        if (row->loc >= end || row->loc < fde->lo)
                                continue; /* a row readelf overrides at the same address */
                        if (!expected_row(&row->s, cie->signal, fde->plt_k, &want)) {
                                stats->skipped++;
                                continue;
                        }
                        check_at(path, t, row->loc, &want, &row->s);
                        check_at(path, t, end - 1, &want, &row->s);
                        stats->rows++;
                        stats->by_kind[want.kind]++;
                        if (want.kind == PROFD_UNWIND_PLT)
                                stats->plt_k = want.cfa_off;
                }
                if (i + 1 == o.n_fdes || o.fdes[i + 1].lo > fde->hi) {
                        const struct profd_unwind_row *gap = unwind_table_lookup(t, fde->hi);

                        if (!gap || gap->kind != PROFD_UNWIND_GAP) {
                                fprintf(stderr, "%s: 0x%" PRIx64 " (end of FDE 0x%" PRIx64 ") is %s, not GAP\n", path,
                                        fde->hi, fde->lo, gap ? kind_name(gap->kind) : "(none)");
                                tests_failed++;
                        }
                        stats->gaps++;
                }
        }
        /* below the first FDE: nothing */
        if (o.n_fdes > 0 && o.fdes[0].lo > 0)
                CHECK(unwind_table_lookup(t, o.fdes[0].lo - 1) == NULL);
        CHECK_INT_EQ(t->fdes, nonempty);
        oracle_done(&o);
}

/* --- fixtures ------------------------------------------------------------ */

/* Read whole, not mapped: a mapping of libc.so.6 here would look like the
 * dynamic linker's in /proc/self/maps. */
static Elf *elf_open_fd(int fd) {
        Elf *e = elf_begin(fd, ELF_C_READ, NULL);

        if (!e || elf_cntl(e, ELF_C_FDREAD) < 0) {
                fprintf(stderr, "fd %d: %s\n", fd, elf_errmsg(-1));
                exit(1);
        }
        return e;
}

static Elf *elf_open(const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0) {
                fprintf(stderr, "cannot open %s: %m\n", path);
                exit(1);
        }
        return elf_open_fd(fd);
}

/* A symbol's address from .symtab (fixtures are not stripped); 0 if none. */
static uint64_t symbol(Elf *e, const char *name, uint64_t *ret_size) {
        Elf_Scn *scn = NULL;

        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr shdr;
                Elf_Data *data;

                if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_SYMTAB || !(data = elf_getdata(scn, NULL)))
                        continue;
                for (size_t i = 0; i < shdr.sh_size / MAX(shdr.sh_entsize, (uint64_t) 1); i++) {
                        GElf_Sym sym;

                        if (gelf_getsym(data, (int) i, &sym) && streq(elf_strptr(e, shdr.sh_link, sym.st_name), name)) {
                                if (ret_size)
                                        *ret_size = sym.st_size;
                                return sym.st_value;
                        }
                }
        }
        fprintf(stderr, "no symbol %s\n", name);
        tests_failed++;
        return 0;
}

static Elf_Scn *section_find(Elf *e, const char *name) {
        size_t shstrndx;
        Elf_Scn *scn = NULL;

        if (elf_getshdrstrndx(e, &shstrndx) < 0)
                return NULL;
        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr shdr;

                if (gelf_getshdr(scn, &shdr) && streq(elf_strptr(e, shstrndx, shdr.sh_name), name))
                        return scn;
        }
        return NULL;
}

static uint64_t section_addr(Elf *e, const char *name, uint64_t *ret_size) {
        Elf_Scn *scn = section_find(e, name);
        GElf_Shdr shdr;

        if (!scn || !gelf_getshdr(scn, &shdr))
                return 0;
        *ret_size = shdr.sh_size;
        return shdr.sh_addr;
}

static const struct profd_unwind_row *row_at(const struct unwind_table *t, Elf *e, const char *name, uint64_t off) {
        return unwind_table_lookup(t, symbol(e, name, NULL) + off);
}

/* The kinds of the rows covering every address of the function, as a bit
 * mask (1 << kind); no row counts as bit 31. */
static unsigned kinds_in(const struct unwind_table *t, Elf *e, const char *function) {
        uint64_t size, f = symbol(e, function, &size);
        unsigned kinds = 0;

        for (uint64_t pc = f; pc < f + size; pc++) {
                const struct profd_unwind_row *r = unwind_table_lookup(t, pc);

                kinds |= r ? 1u << r->kind : 1u << 31;
        }
        return kinds;
}

/* Whether some address of the function gets the frame-pointer rule: CFA =
 * rbp + 16, the caller's rbp at CFA - 16. */
static bool has_frame_pointer_rule(const struct unwind_table *t, Elf *e, const char *function) {
        uint64_t size, f = symbol(e, function, &size);

        for (uint64_t pc = f; pc < f + size; pc++) {
                const struct profd_unwind_row *r = unwind_table_lookup(t, pc);

                if (r && r->kind == PROFD_UNWIND_CFA_FP && r->cfa_off == 16 && r->rbp_off == -2)
                        return true;
        }
        return false;
}

#define CHECK_ROW(row, k, cfa, rbp)                                                         \
        do {                                                                                \
                const struct profd_unwind_row *_r = (row);                                  \
                CHECK(_r != NULL);                                                          \
                if (_r) {                                                                   \
                        CHECK_STR_EQ(kind_name(_r->kind), kind_name(k));                    \
                        CHECK_INT_EQ(_r->cfa_off, cfa);                                     \
                        CHECK_INT_EQ(_r->rbp_off, rbp);                                     \
                }                                                                           \
        } while (0)

/* Rows are sorted, strictly increasing, with no two equal neighbours, and
 * by_kind adds up. */
static void check_table_shape(const char *path, const struct unwind_table *t) {
        size_t sum = 0;

        for (size_t i = 1; i < t->n; i++) {
                const struct profd_unwind_row *a = &t->rows[i - 1], *b = &t->rows[i];

                if (a->pc >= b->pc || (a->kind == b->kind && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off)) {
                        fprintf(stderr, "%s: rows %zu and %zu (0x%x, 0x%x) out of order or equal\n", path, i - 1, i,
                                a->pc, b->pc);
                        tests_failed++;
                        break;
                }
        }
        for (size_t k = 0; k < ELEMENTSOF(t->by_kind); k++)
                sum += t->by_kind[k];
        CHECK_INT_EQ(sum, t->n);
        CHECK(t->n == 0 || t->rows[t->n - 1].kind == PROFD_UNWIND_GAP);
}

/* A sink of the pieces, as the daemon's packer takes them: rows after
 * rows. */
struct pieces {
        struct profd_unwind_row *slots;
        size_t n, bound, calls, largest;
        int fail_at; /* the call that fails with -ENOSPC; 0: none */
};

static int pieces_add(void *userdata, const struct profd_unwind_row *rows, size_t n) {
        struct pieces *p = userdata;

        if (++p->calls == (size_t) p->fail_at)
                return -ENOSPC;
        p->largest = MAX(p->largest, n);
        CHECK(n > 0 && n <= p->bound - p->n);
        if (n > p->bound - p->n)
                return -EINVAL;
        memcpy(p->slots + p->n, rows, n * sizeof(*rows));
        p->n += n;
        return 0;
}

/* Read in pieces, as the daemon does: the same rows and figures as t, in
 * pieces of at most UNWIND_PIECE_ROWS, within the bound told before any
 * row was read, the span told is the first and last rows' (what the
 * packer plans its table's room from). A reader reads once; a sink's
 * error ends the reading. */
static void check_pieces(const char *path, Elf *e, int fd, const struct unwind_table *t) {
        _cleanup_(unwind_reader_freep) unwind_reader *r = NULL;
        _cleanup_free_ struct profd_unwind_row *slots = NULL;
        struct unwind_table counts;
        struct pieces p = {};
        uint32_t first, last;

        CHECK_INT_EQ(unwind_reader_new(e, fd, &r), 0);
        if (!r)
                return;
        p.bound = unwind_reader_bound(r);
        unwind_reader_span(r, &first, &last);
        CHECK(p.bound >= t->n);
        CHECK_INT_EQ(first, t->rows[0].pc);
        CHECK_INT_EQ(last, t->rows[t->n - 1].pc);
        slots = calloc(p.bound + 1, sizeof(*slots));
        CHECK(slots != NULL);
        if (!slots)
                return;
        p.slots = slots;
        CHECK_INT_EQ(unwind_reader_rows(r, pieces_add, &p, &counts), 0);
        CHECK_INT_EQ(p.n, t->n);
        CHECK_INT_EQ(counts.n, t->n);
        CHECK_INT_EQ(counts.fdes, t->fdes);
        CHECK(counts.rows == NULL);
        CHECK(memcmp(counts.by_kind, t->by_kind, sizeof(t->by_kind)) == 0);
        CHECK(p.n == t->n && memcmp(slots, t->rows, t->n * sizeof(*slots)) == 0);
        CHECK(p.largest <= UNWIND_PIECE_ROWS);
        CHECK_INT_EQ(p.calls, (t->n + UNWIND_PIECE_ROWS - 1) / UNWIND_PIECE_ROWS);
        CHECK_INT_EQ(unwind_reader_rows(r, pieces_add, &p, &counts), -EINVAL);
        r = unwind_reader_free(r);

        CHECK_INT_EQ(unwind_reader_new(e, fd, &r), 0);
        p = (struct pieces) { .slots = slots, .bound = SIZE_MAX, .fail_at = 1 };
        if (r)
                CHECK_INT_EQ(unwind_reader_rows(r, pieces_add, &p, &counts), -ENOSPC);
        fprintf(stderr, "%s (%s): %zu rows in %zu pieces, bound %zu (+%.1f%%)\n", path,
                fd >= 0 ? "its own mapping" : "libelf's", t->n, (t->n + UNWIND_PIECE_ROWS - 1) / UNWIND_PIECE_ROWS,
                unwind_reader_bound(r), 100.0 * ((double) unwind_reader_bound(r) - (double) t->n) / (double) t->n);
}

/* Builds a fixture's table, checks its shape and compares it with readelf. */
static void build_checked(const char *path, Elf **ret_elf, struct unwind_table *t, struct oracle_stats *stats) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        Elf *e = elf_open(path);

        CHECK_INT_EQ(unwind_table_build(e, t), 0);
        CHECK(t->n > 0);
        check_table_shape(path, t);
        check_against_readelf(path, t, stats);
        /* through libelf's copy, and through a mapping of the reader's own
         * (the daemon's way), whose pages it gives back as it reads */
        check_pieces(path, e, -1, t);
        CHECK(fd >= 0);
        check_pieces(path, e, fd, t);
        *ret_elf = e;
}

/* The executable's PLT: its stubs get the PLT row readelf's expression
 * calls for, and its first bytes (the lazy-binding stub PLT0) rsp rows. */
static void test_plt(const char *path, Elf *e, const struct unwind_table *t, const struct oracle_stats *stats) {
        uint64_t size, plt = section_addr(e, ".plt", &size);

        CHECK(plt != 0);
        CHECK_INT_EQ(stats->plt_k, 11); /* GNU ld's classic lazy stubs (no IBT on Debian 12) */
        CHECK_ROW(unwind_table_lookup(t, plt), PROFD_UNWIND_CFA_SP, 16, 0);
        CHECK_ROW(unwind_table_lookup(t, plt + 16), PROFD_UNWIND_PLT, 11, 0);
        CHECK_ROW(unwind_table_lookup(t, plt + size - 1), PROFD_UNWIND_PLT, 11, 0);
        (void) path;
}

static size_t section_index(Elf *e, const char *name) {
        Elf_Scn *scn = section_find(e, name);

        return scn ? elf_ndxscn(scn) : 0;
}

static void rows_read(Elf *e, int fd, struct unwind_table *t) {
        _cleanup_(unwind_reader_freep) unwind_reader *r = NULL;
        struct unwind_table counts;

        *t = (struct unwind_table) {};
        CHECK_INT_EQ(unwind_reader_new(e, fd, &r), 0);
        if (!r)
                return;
        t->rows = calloc(unwind_reader_bound(r), sizeof(*t->rows));
        CHECK(t->rows != NULL);
        if (t->rows)
                CHECK_INT_EQ(unwind_reader_rows(r, unwind_table_add, t, &counts), 0);
}

/* A file whose .eh_frame_hdr comes after .eh_frame, as lld links
 * libLLVM (202 files of this machine's LLVM toolchain): made from the
 * fixture by swapping the two sections' headers. The rows are the
 * fixture's, read through libelf or through the reader's own mapping. */
static void test_hdr_after(const char *path) {
        char copy[] = "/tmp/test-unwind-hdr-after-XXXXXX";
        _cleanup_(elf_endp) Elf *e = elf_open(path), *c = NULL;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC), cfd = -1;
        _cleanup_free_ uint8_t *bytes = NULL;
        struct unwind_table t, via_libelf = {}, via_map = {}, orig_map = {};
        size_t a = section_index(e, ".eh_frame"), b = section_index(e, ".eh_frame_hdr");
        Elf64_Ehdr ehdr;
        Elf64_Shdr *shdrs, tmp;
        struct stat st;

        CHECK(fd >= 0 && fstat(fd, &st) == 0);
        CHECK(a > 0 && b > 0 && b < a); /* GNU ld: the table first */
        bytes = malloc(st.st_size);
        CHECK(bytes && pread(fd, bytes, st.st_size, 0) == st.st_size);
        if (!bytes || fd < 0 || a == 0 || b == 0)
                return;
        memcpy(&ehdr, bytes, sizeof(ehdr));
        shdrs = (Elf64_Shdr *) (bytes + ehdr.e_shoff);
        tmp = shdrs[a];
        shdrs[a] = shdrs[b];
        shdrs[b] = tmp;
        cfd = mkstemp(copy);
        CHECK(cfd >= 0);
        if (cfd < 0)
                return;
        CHECK(write(cfd, bytes, st.st_size) == st.st_size);
        unlink(copy);
        c = elf_open_fd(cfd);
        CHECK(section_index(c, ".eh_frame_hdr") > section_index(c, ".eh_frame"));

        CHECK_INT_EQ(unwind_table_build(e, &t), 0);
        rows_read(c, -1, &via_libelf);
        rows_read(c, cfd, &via_map);
        rows_read(e, fd, &orig_map);
        CHECK(via_libelf.n == t.n && memcmp(via_libelf.rows, t.rows, t.n * sizeof(*t.rows)) == 0);
        CHECK(via_map.n == t.n && memcmp(via_map.rows, t.rows, t.n * sizeof(*t.rows)) == 0);
        CHECK(orig_map.n == t.n && memcmp(orig_map.rows, t.rows, t.n * sizeof(*t.rows)) == 0);
        fprintf(stderr, "%s with .eh_frame_hdr after .eh_frame: %zu rows\n", path, via_map.n);
        unwind_table_done(&t);
        unwind_table_done(&via_libelf);
        unwind_table_done(&via_map);
        unwind_table_done(&orig_map);
}

static void test_nofp(const char *path) {
        _cleanup_(elf_endp) Elf *e = NULL;
        struct unwind_table t;
        struct oracle_stats stats;

        build_checked(path, &e, &t, &stats);
        /* no frame pointer anywhere in phase(): every row CFA = rsp + N */
        CHECK_INT_EQ(kinds_in(&t, e, "phase"), 1u << PROFD_UNWIND_CFA_SP);
        CHECK_ROW(row_at(&t, e, "phase", 0), PROFD_UNWIND_CFA_SP, 8, 0);
        /* the VLA needs rbp as frame pointer even here */
        CHECK(t.by_kind[PROFD_UNWIND_CFA_FP] > 0);
        /* _start (crt1.o): return address undefined */
        CHECK_ROW(row_at(&t, e, "_start", 0), PROFD_UNWIND_END, 0, 0);
        CHECK_INT_EQ(t.by_kind[PROFD_UNWIND_END], 1);
        test_plt(path, e, &t, &stats);
        CHECK(stats.gaps > 0);
        CHECK_INT_EQ(stats.skipped, 0);
        unwind_table_done(&t);
        CHECK(t.rows == NULL && t.n == 0);
}

static void test_fp(const char *path) {
        _cleanup_(elf_endp) Elf *e = NULL;
        struct unwind_table t;
        struct oracle_stats stats;

        build_checked(path, &e, &t, &stats);
        /* push rbp; mov rbp, rsp: then CFA = rbp + 16, rbp saved at CFA - 16 */
        CHECK_ROW(row_at(&t, e, "phase", 0), PROFD_UNWIND_CFA_SP, 8, 0);
        CHECK_ROW(row_at(&t, e, "phase", 1), PROFD_UNWIND_CFA_SP, 16, -2);
        CHECK(has_frame_pointer_rule(&t, e, "phase"));
        CHECK_ROW(row_at(&t, e, "_start", 0), PROFD_UNWIND_END, 0, 0);
        test_plt(path, e, &t, &stats);
        unwind_table_done(&t);
}

/* The hand-written forms of forms.S, by function name. */
static void check_forms(const struct unwind_table *t, Elf *e) {
        uint64_t size, f;

        /* the row at +0 is the CIE's: CFA = rsp + 8 */
        CHECK_ROW(row_at(t, e, "form_cfa_r10", 0), PROFD_UNWIND_CFA_SP, 8, 0);
        CHECK_ROW(row_at(t, e, "form_cfa_r10", 1), PROFD_UNWIND_UNSUPPORTED, 0, 0);
        CHECK_ROW(row_at(t, e, "form_cfa_deref", 1), PROFD_UNWIND_UNSUPPORTED, 0, 0);
        CHECK_ROW(row_at(t, e, "form_ra_offset", 1), PROFD_UNWIND_UNSUPPORTED, 0, 0);
        CHECK_ROW(row_at(t, e, "form_cfa_max", 1), PROFD_UNWIND_CFA_SP, 65535, 0);
        CHECK_ROW(row_at(t, e, "form_cfa_too_big", 1), PROFD_UNWIND_UNSUPPORTED, 0, 0);
        CHECK_ROW(row_at(t, e, "form_rbp_expression", 1), PROFD_UNWIND_UNSUPPORTED, 0, 0);
        CHECK_ROW(row_at(t, e, "form_rbp_far", 1), PROFD_UNWIND_CFA_SP, 1040, -128);
        CHECK_ROW(row_at(t, e, "form_rbp_too_far", 1), PROFD_UNWIND_UNSUPPORTED, 0, 0);
        CHECK_ROW(row_at(t, e, "form_rbp_register", 1), PROFD_UNWIND_UNSUPPORTED, 0, 0);
        CHECK_ROW(row_at(t, e, "form_rbp_val_offset", 1), PROFD_UNWIND_UNSUPPORTED, 0, 0);
        CHECK_ROW(row_at(t, e, "form_rbp_same", 1), PROFD_UNWIND_CFA_SP, 8, 0);
        CHECK_ROW(row_at(t, e, "form_rsp_saved", 1), PROFD_UNWIND_UNSUPPORTED, 0, 0);
        CHECK_ROW(row_at(t, e, "form_end", 1), PROFD_UNWIND_END, 0, 0);
        CHECK_ROW(row_at(t, e, "form_signal", 0), PROFD_UNWIND_SIGNAL, 0, 0);
        CHECK_ROW(row_at(t, e, "form_signal", 2), PROFD_UNWIND_SIGNAL, 0, 0);
        CHECK_ROW(row_at(t, e, "form_plt10", 1), PROFD_UNWIND_PLT, 10, 0);
        CHECK_ROW(row_at(t, e, "form_plt_minus", 1), PROFD_UNWIND_UNSUPPORTED, 0, 0);
        /* no CFI: the previous FDE's rule must not reach it */
        CHECK_ROW(row_at(t, e, "form_no_cfi", 0), PROFD_UNWIND_GAP, 0, 0);
        CHECK_ROW(row_at(t, e, "form_no_cfi", 2), PROFD_UNWIND_GAP, 0, 0);
        /* remember/restore: the restored rule after the early return */
        f = symbol(e, "form_remember", &size);
        CHECK_ROW(unwind_table_lookup(t, f + size - 3), PROFD_UNWIND_CFA_SP, 16, 0);
        CHECK_ROW(unwind_table_lookup(t, f + size - 1), PROFD_UNWIND_CFA_SP, 8, 0);
}

/* gcc realigns after setting up rbp, so the CFA stays rbp + 16; the
 * hand-written forms cover what gcc does not emit here. */
static void test_realign_and_forms(const char *path) {
        _cleanup_(elf_endp) Elf *e = NULL;
        struct unwind_table t;
        struct oracle_stats stats;

        build_checked(path, &e, &t, &stats);
        CHECK_INT_EQ(kinds_in(&t, e, "realigned"), 1u << PROFD_UNWIND_CFA_SP | 1u << PROFD_UNWIND_CFA_FP);
        CHECK(has_frame_pointer_rule(&t, e, "realigned"));

        check_forms(&t, e);
        CHECK(stats.by_kind[PROFD_UNWIND_PLT] >= 2); /* the executable's stubs and form_plt10 */
        unwind_table_done(&t);
}

/* forms.S with its CFI in .debug_frame: the same kinds, "S" (no 'z') for
 * the signal frame's CIE. */
static void test_forms_debug_frame(const char *path) {
        _cleanup_(elf_endp) Elf *e = NULL;
        struct unwind_table t;
        struct oracle_stats stats;
        uint64_t size;

        build_checked(path, &e, &t, &stats);
        CHECK(section_addr(e, ".eh_frame", &size) == 0 || size == 0);
        check_forms(&t, e);
        CHECK_INT_EQ(stats.skipped, 0);
        unwind_table_done(&t);
}

/* Only .debug_frame (built without unwind tables, .eh_frame removed):
 * the same rules, from the other section; compressed or not. */
static void test_debug_frame(const char *path, const char *compressed) {
        _cleanup_(elf_endp) Elf *e = NULL, *z = NULL;
        struct unwind_table t, tz;
        struct oracle_stats stats;
        uint64_t size;

        build_checked(path, &e, &t, &stats);
        CHECK(section_addr(e, ".eh_frame", &size) == 0);
        CHECK_ROW(row_at(&t, e, "phase", 0), PROFD_UNWIND_CFA_SP, 8, 0);
        CHECK(stats.rows >= 5);
        /* crt1.o's _start has only .eh_frame, removed here: not covered */
        {
                const struct profd_unwind_row *r = row_at(&t, e, "_start", 0);

                CHECK(!r || r->kind == PROFD_UNWIND_GAP);
        }

        z = elf_open(compressed);
        CHECK_INT_EQ(unwind_table_build(z, &tz), 0);
        CHECK_INT_EQ(tz.n, t.n);
        CHECK(tz.n == t.n && memcmp(tz.rows, t.rows, t.n * sizeof(*t.rows)) == 0);
        unwind_table_done(&tz);
        unwind_table_done(&t);
}

static void test_no_cfi(const char *path) {
        _cleanup_(elf_endp) Elf *e = elf_open(path);
        struct unwind_table t = { .n = 42 };

        CHECK_INT_EQ(unwind_table_build(e, &t), -ENODATA);
        CHECK(t.rows == NULL && t.n == 0);
}

static void test_high(const char *path) {
        _cleanup_(elf_endp) Elf *e = elf_open(path);
        struct unwind_table t;

        CHECK_INT_EQ(unwind_table_build(e, &t), -E2BIG);
        CHECK(t.rows == NULL && t.n == 0);
}

/* A CFI program naming register 2^30 - 1: refused before libdw runs it
 * (it would allocate a 16 GiB frame state). */
static void test_huge_register(const char *path) {
        _cleanup_(elf_endp) Elf *e = elf_open(path);
        struct unwind_table t;

        CHECK_INT_EQ(unwind_table_build(e, &t), -EINVAL);
        CHECK(t.rows == NULL && t.n == 0);
}

/* --- the system's libraries, as this process maps them --------------------- */

struct mapping {
        uint64_t start, offset;
        char perms[5];
        char path[512];
};

/* The mappings of the file whose name ends in suffix. Returns the count. */
static size_t self_mappings(const char *suffix, struct mapping *m, size_t max) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/maps", "re");
        char line[1024];
        size_t n = 0;

        if (!f)
                abort();
        while (n < max && fgets(line, sizeof(line), f)) {
                unsigned long long start, end, offset;
                char perms[5], path[512] = "";
                size_t len;

                if (sscanf(line, "%llx-%llx %4s %llx %*s %*s %511s", &start, &end, perms, &offset, path) < 4)
                        continue;
                len = strlen(path);
                if (len < strlen(suffix) || !streq(path + len - strlen(suffix), suffix))
                        continue;
                m[n].start = start;
                m[n].offset = offset;
                memcpy(m[n].perms, perms, sizeof(perms));
                snprintf(m[n].path, sizeof(m[n].path), "%s", path);
                n++;
        }
        return n;
}

/* Every mapping of the library gets the load base the dynamic linker
 * reports, and a function's address minus the bias is its symbol value. */
static void test_bias(const char *suffix, const char *function) {
        struct mapping m[16];
        size_t n = self_mappings(suffix, m, ELEMENTSOF(m));
        _cleanup_(elf_endp) Elf *e = NULL;
        /* the library's own symbol, not whatever comes first in the global
         * scope (under ASan its interceptor of the same name) */
        void *lib = dlopen(suffix + 1, RTLD_LAZY | RTLD_NOLOAD);
        void *addr = lib ? dlsym(lib, function) : NULL;
        const ElfW(Sym) *sym = NULL;
        Dl_info info;
        bool exec_seen = false;

        if (lib)
                dlclose(lib); /* the process keeps it loaded: addr stays valid */
        if (!addr) /* the dynamic linker is not dlopen()ed by its name */
                addr = dlsym(RTLD_DEFAULT, function);

        CHECK(n >= 2);
        if (n == 0)
                return;
        CHECK(addr != NULL);
        CHECK(dladdr1(addr, &info, (void **) &sym, RTLD_DL_SYMENT) != 0 && sym);
        if (!sym)
                return;
        CHECK(strstr(info.dli_fname, suffix) != NULL);
        e = elf_open(m[0].path);
        for (size_t i = 0; i < n; i++) {
                uint64_t bias = 0;

                CHECK_INT_EQ(unwind_mapping_bias(e, m[i].start, m[i].offset, &bias), 0);
                CHECK_INT_EQ(bias, (uint64_t) info.dli_fbase);
                if (m[i].perms[2] == 'x') {
                        exec_seen = true;
                        CHECK_INT_EQ((uint64_t) addr - bias, sym->st_value);
                }
        }
        CHECK(exec_seen);
        /* an offset past every segment */
        {
                uint64_t bias;

                CHECK_INT_EQ(unwind_mapping_bias(e, 0x7f0000000000, 0x40000000, &bias), -ENOENT);
        }
}

/* The kernel returns from a signal handler to the sa_restorer glibc's
 * sigaction installs (__restore_rt, a local symbol): its FDE starts one
 * byte early, so the walker's lookup of return address - 1 finds it too. */
struct kernel_sigaction {
        void *handler;
        unsigned long flags;
        void *restorer;
        uint64_t mask;
};

static void on_signal(int sig) {
        (void) sig;
}

static void test_signal_trampoline(const char *path, Elf *e, const struct unwind_table *t) {
        struct sigaction sa = { .sa_handler = on_signal };
        struct kernel_sigaction k = {};
        struct mapping m[16];
        size_t n = self_mappings("/libc.so.6", m, ELEMENTSOF(m));
        uint64_t bias = 0, restorer;

        CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
        CHECK(syscall(SYS_rt_sigaction, SIGUSR1, NULL, &k, sizeof(k.mask)) == 0);
        CHECK(k.restorer != NULL);
        CHECK(n > 0 && unwind_mapping_bias(e, m[0].start, m[0].offset, &bias) == 0);
        restorer = (uint64_t) k.restorer - bias;
        CHECK_ROW(unwind_table_lookup(t, restorer), PROFD_UNWIND_SIGNAL, 0, 0);
        CHECK_ROW(unwind_table_lookup(t, restorer - 1), PROFD_UNWIND_SIGNAL, 0, 0);
        CHECK_INT_EQ(t->by_kind[PROFD_UNWIND_SIGNAL], 1);
        fprintf(stderr, "%s: __restore_rt at 0x%" PRIx64 ": SIGNAL\n", path, restorer);
}

/* The libraries this test runs with, against readelf: every row. */
static void test_system(const char *suffix, bool expect_plt, bool expect_signal) {
        struct mapping m[1];
        _cleanup_(elf_endp) Elf *e = NULL;
        struct unwind_table t;
        struct oracle_stats stats;

        if (self_mappings(suffix, m, 1) != 1) {
                fprintf(stderr, "%s is not mapped\n", suffix);
                tests_failed++;
                return;
        }
        build_checked(m[0].path, &e, &t, &stats);
        fprintf(stderr, "%s: %zu FDEs, %zu rows (GAP %zu, CFA_SP %zu, CFA_FP %zu, PLT %zu, END %zu, SIGNAL %zu, "
                        "UNSUPPORTED %zu); %zu readelf rows compared, %zu FDE ends checked, %zu skipped\n",
                m[0].path, t.fdes, t.n, t.by_kind[0], t.by_kind[1], t.by_kind[2], t.by_kind[3], t.by_kind[4],
                t.by_kind[5], t.by_kind[6], stats.rows, stats.gaps, stats.skipped);
        CHECK(stats.rows > 1000);
        CHECK(stats.by_kind[PROFD_UNWIND_CFA_FP] > 0);
        CHECK(stats.by_kind[PROFD_UNWIND_UNSUPPORTED] > 0);
        if (expect_plt) {
                CHECK(stats.by_kind[PROFD_UNWIND_PLT] > 0);
                CHECK(stats.plt_k == 10 || stats.plt_k == 11);
        }
        if (expect_signal)
                test_signal_trampoline(m[0].path, e, &t);
        unwind_table_done(&t);
}

/* The vDSO, as the daemon reads it: its own copy, from memory
 * (getauxval(AT_SYSINFO_EHDR)). Compared with readelf on a copy in a file;
 * its bias is where the kernel mapped it. */
/* Larger Debian files this test does not map: C++ (personality and LSDA
 * augmentations, remember_state in every epilogue) and CPython, every
 * row against readelf's. */
static void test_debian_file(const char *path) {
        _cleanup_(elf_endp) Elf *e = NULL;
        struct unwind_table t;
        struct oracle_stats stats;

        if (access(path, R_OK) < 0) {
                fprintf(stderr, "%s: %m\n", path);
                tests_failed++;
                return;
        }
        build_checked(path, &e, &t, &stats);
        fprintf(stderr, "%s: %zu FDEs, %zu rows; %zu readelf rows compared, %zu FDE ends checked, %zu skipped\n",
                path, t.fdes, t.n, stats.rows, stats.gaps, stats.skipped);
        CHECK(stats.rows > 10000);
        unwind_table_done(&t);
}

static void test_vdso(void) {
        const ElfW(Ehdr) *image = (const ElfW(Ehdr) *) getauxval(AT_SYSINFO_EHDR);
        char path[] = "/tmp/test-unwind-vdso-XXXXXX";
        _cleanup_(elf_endp) Elf *e = NULL;
        struct unwind_table t;
        struct oracle_stats stats;
        struct mapping m[1];
        size_t size;
        uint64_t bias = 0;
        int fd;

        CHECK(image != NULL);
        if (!image)
                return;
        /* the section headers come last in the vDSO image */
        size = image->e_shoff + (size_t) image->e_shnum * image->e_shentsize;
        e = elf_memory((char *) image, size);
        CHECK(e != NULL);
        if (!e)
                return;
        CHECK_INT_EQ(unwind_table_build(e, &t), 0);
        check_table_shape("[vdso]", &t);
        fd = mkstemp(path);
        CHECK(fd >= 0);
        if (fd >= 0) {
                CHECK(write(fd, image, size) == (ssize_t) size);
                close(fd);
                check_against_readelf(path, &t, &stats);
                unlink(path);
                CHECK(stats.rows >= 7);
                fprintf(stderr, "[vdso]: %zu FDEs, %zu rows; %zu readelf rows compared\n", t.fdes, t.n, stats.rows);
        }
        CHECK_INT_EQ(self_mappings("[vdso]", m, 1), 1);
        CHECK_INT_EQ(unwind_mapping_bias(e, m[0].start, m[0].offset, &bias), 0);
        CHECK_INT_EQ(bias, (uint64_t) image);
        unwind_table_done(&t);
}

int main(int argc, char **argv) {
        if (argc != 12) {
                fprintf(stderr, "usage: %s READELF NOFP FP REALIGN DEBUGFRAME DEBUGFRAME_Z FORMS_DEBUGFRAME NOCFI EMPTY HIGH HUGE_REGISTER\n", argv[0]);
                return 2;
        }
        if (elf_version(EV_CURRENT) == EV_NONE)
                return 2;
        readelf = argv[1];

        test_nofp(argv[2]);
        test_hdr_after(argv[2]);
        test_fp(argv[3]);
        test_realign_and_forms(argv[4]);
        test_debug_frame(argv[5], argv[6]);
        test_forms_debug_frame(argv[7]);
        test_no_cfi(argv[8]);
        test_no_cfi(argv[9]);
        test_high(argv[10]);
        test_huge_register(argv[11]);

        test_system("/libc.so.6", true, true);
        test_system("/ld-linux-x86-64.so.2", false, false);
        test_bias("/libc.so.6", "getpid");
        test_bias("/ld-linux-x86-64.so.2", "_dl_mcount"); /* not __tls_get_addr: ASan intercepts it */
        test_vdso();
        test_debian_file("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
        test_debian_file("/usr/bin/python3.11");
        TESTS_DONE();
}
