/* Specifies sym_file_resolve by agreement with eu-addr2line -f -i -C: for
 * addresses sampled across .text of the fixture binaries the suite builds
 * (C with inlining, C++ templates, debug info behind a debuglink and behind
 * the build-id path) and of libc with Debian's libc6-dbg, profd's function,
 * inline chain and file:line must equal eu-addr2line's exactly for at least
 * 99% of all addresses.
 *
 * One difference is by design and checked as such: eu-addr2line takes the
 * inline chain (the callers, from the second frame on) at the start address
 * of the line-table row instead of at the address itself, because
 * src/addr2line.c hands its address variable to dwfl_lineinfo, which
 * overwrites it. Where the row began outside the inlined call, it prints an
 * inlined function without the function it was inlined into, or another
 * call site. profd takes the chain at the address. A disagreement counts as
 * "eu-addr2line's row quirk" only when eu-addr2line's first frame equals
 * profd's and its callers equal profd's at the row start (found here with
 * libdw directly); every other disagreement is a failure, and per file
 * those must stay under 1%.
 *
 * usage: test-symbolize-oracle INLINE TEMPLATES SPLIT BUILDID BUILDID.debug */
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <inttypes.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "symbolizer.h"
#include "tests.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(symbolizer *, symbolizer_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(Elf *, elf_end);

/* Enough addresses per file that 99% means something (one miss is 0.03%),
 * few enough that eu-addr2line answers libc's in a few seconds. */
#define SAMPLES_PER_FILE 3000
/* Exact agreement required over all files, and agreement or the explained
 * quirk required per file, in percent. */
#define REQUIRED_AGREEMENT 99.0
/* Chains deeper than this do not occur in the fixtures or libc. */
#define MAX_FRAMES 64
/* Mismatches printed per file, for diagnosis. */
#define MISMATCHES_SHOWN 5

static char tmpdir[] = "/tmp/test-symbolize-oracle-XXXXXX";

struct expected_frame {
        char *function;
        char *file; /* NULL for ?? */
        unsigned line;
};

struct expected {
        struct expected_frame frames[MAX_FRAMES];
        size_t n_frames; /* 0: eu-addr2line knew nothing ("?? at ??:0") */
};

static void expected_done(struct expected *e) {
        for (size_t i = 0; i < e->n_frames; i++) {
                free(e->frames[i].function);
                free(e->frames[i].file);
        }
        e->n_frames = 0;
}

/* The .text range and the PT_LOAD headers of a binary, read with libelf
 * independently of the symbolizer. */
struct binary {
        uint64_t text_start, text_size;
        GElf_Phdr loads[16];
        size_t n_loads;
};

static bool binary_read(const char *path, struct binary *ret) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_(elf_endp) Elf *e = NULL;
        Elf_Scn *scn = NULL;
        size_t shstrndx, n_phdrs;

        *ret = (struct binary) {};
        if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE)
                return false;
        e = elf_begin(fd, ELF_C_READ, NULL);
        if (!e || elf_getshdrstrndx(e, &shstrndx) < 0 || elf_getphdrnum(e, &n_phdrs) < 0)
                return false;
        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr shdr;

                if (gelf_getshdr(scn, &shdr) && streq(elf_strptr(e, shstrndx, shdr.sh_name), ".text")) {
                        ret->text_start = shdr.sh_addr;
                        ret->text_size = shdr.sh_size;
                }
        }
        for (size_t i = 0; i < n_phdrs && ret->n_loads < ELEMENTSOF(ret->loads); i++) {
                GElf_Phdr phdr;

                if (gelf_getphdr(e, (int) i, &phdr) && phdr.p_type == PT_LOAD)
                        ret->loads[ret->n_loads++] = phdr;
        }
        return ret->text_size > 0;
}

/* The file offset vaddr is loaded from, as /proc/PID/maps arithmetic gives it. */
static bool binary_offset(const struct binary *b, uint64_t vaddr, uint64_t *ret) {
        for (size_t i = 0; i < b->n_loads; i++)
                if (vaddr >= b->loads[i].p_vaddr && vaddr - b->loads[i].p_vaddr < b->loads[i].p_filesz) {
                        *ret = vaddr - b->loads[i].p_vaddr + b->loads[i].p_offset;
                        return true;
                }
        return false;
}

/* Splits "NAME at FILE:LINE[:COLUMN]" (or "?? at ??:0"). */
static bool parse_frame(char *text, struct expected_frame *ret) {
        char *at = NULL, *p, *colon, *end;
        unsigned long line, column;

        for (p = strstr(text, " at "); p; p = strstr(p + 1, " at "))
                at = p;
        if (!at)
                return false;
        *at = '\0';
        p = at + 4;
        p[strcspn(p, "\n")] = '\0';
        *ret = (struct expected_frame) { .function = strdup(text) };
        if (streq(p, "??:0"))
                return true;
        /* From the right: the last number, then maybe one more. */
        colon = strrchr(p, ':');
        if (!colon)
                return false;
        errno = 0;
        line = strtoul(colon + 1, &end, 10);
        if (errno || *end)
                return false;
        *colon = '\0';
        colon = strrchr(p, ':');
        if (colon) {
                column = strtoul(colon + 1, &end, 10);
                if (!*end && end != colon + 1) {
                        (void) column;
                        *colon = '\0';
                        line = strtoul(colon + 1, NULL, 10);
                }
        }
        ret->file = strdup(p);
        ret->line = (unsigned) line;
        return true;
}

static char *shell_quote(const char *s) {
        size_t n = 2;
        char *q, *o;

        for (const char *p = s; *p; p++)
                n += *p == '\'' ? 4 : 1;
        q = o = malloc(n + 1);
        if (!q)
                abort();
        *o++ = '\'';
        for (const char *p = s; *p; p++) {
                if (*p == '\'') {
                        memcpy(o, "'\\''", 4);
                        o += 4;
                } else
                        *o++ = *p;
        }
        *o++ = '\'';
        *o = '\0';
        return q;
}

/* Runs eu-addr2line once on every address (one per line on stdin) and
 * parses its answer into expected[i]. Returns false when it could not run. */
static bool run_eu_addr2line(const char *path, const char *debuginfo_path, const uint64_t *vaddrs, size_t n,
                             struct expected *expected) {
        _cleanup_free_ char *input = NULL, *cmd = NULL, *qpath = shell_quote(path), *qinput = NULL,
                            *qdebug = NULL, *line = NULL;
        _cleanup_fclose_ FILE *in = NULL;
        size_t line_size = 0, i = 0;
        bool started = false;
        FILE *out;
        int status;

        if (asprintf(&input, "%s/addresses", tmpdir) < 0)
                abort();
        in = fopen(input, "we");
        if (!in)
                return false;
        for (size_t k = 0; k < n; k++)
                fprintf(in, "0x%" PRIx64 "\n", vaddrs[k]);
        if (fclose(TAKE_PTR(in)) != 0)
                return false;
        qinput = shell_quote(input);
        qdebug = shell_quote(debuginfo_path);
        if (asprintf(&cmd, "eu-addr2line -a -f -i -C --pretty-print --debuginfo-path=%s -e %s < %s", qdebug, qpath,
                     qinput) < 0)
                abort();
        out = popen(cmd, "re");
        if (!out)
                return false;
        /* "0xADDR: NAME at FILE:LINE" then " (inlined by) NAME at FILE:LINE"
         * for each inline level, innermost first, as profd orders frames. */
        while (getline(&line, &line_size, out) > 0) {
                struct expected_frame frame;
                char *text;

                if (strncmp(line, "0x", 2) == 0) {
                        if (started)
                                i++;
                        started = true;
                        text = strstr(line, ": ");
                        if (!text || i >= n)
                                break;
                        text += 2;
                } else if (strncmp(line, " (inlined by) ", 14) == 0 && started && i < n)
                        text = line + 14;
                else
                        continue;
                if (!parse_frame(text, &frame) || expected[i].n_frames >= MAX_FRAMES) {
                        fprintf(stderr, "cannot parse eu-addr2line output: %s", line);
                        free(frame.function);
                        continue;
                }
                expected[i].frames[expected[i].n_frames++] = frame;
        }
        status = pclose(out);
        if (started)
                i++;
        if (status != 0 || i != n) {
                fprintf(stderr, "eu-addr2line on %s: exit status %d, %zu of %zu addresses answered\n", path,
                        status, i, n);
                return false;
        }
        /* A lone "??" is eu-addr2line's "unresolved"; it may still give
         * the line the last row before the address ran on with (padding
         * after a function), which is no frame without a function. */
        for (size_t k = 0; k < n; k++)
                if (expected[k].n_frames == 1 && streq(expected[k].frames[0].function, "??"))
                        expected_done(&expected[k]);
        return true;
}

static bool frame_matches(const struct sym_frame *got, const struct expected_frame *want) {
        if (!streq(got->function, want->function))
                return false;
        if (!got->file || !want->file)
                return !got->file && !want->file;
        return streq(got->file, want->file) && got->line == want->line;
}

static void print_chain(const char *label, const struct sym_frame *got, int n) {
        fprintf(stderr, "    %s:", label);
        for (int k = 0; k < n; k++)
                fprintf(stderr, " [%s at %s:%u%s]", got[k].function, got[k].file ?: "??", got[k].line,
                        got[k].inlined ? " inl" : "");
        fprintf(stderr, "\n");
}

static void print_expected(const struct expected *e) {
        fprintf(stderr, "    eu-addr2line:");
        for (size_t k = 0; k < e->n_frames; k++)
                fprintf(stderr, " [%s at %s:%u]", e->frames[k].function, e->frames[k].file ?: "??",
                        e->frames[k].line);
        fprintf(stderr, "\n");
}

/* The DWARF of one file, opened with libdw apart from the symbolizer, to
 * find line-table row starts. */
struct rows {
        int fd;
        Dwarf *dwarf;
};

static void rows_done(struct rows *r) {
        if (r->dwarf)
                dwarf_end(r->dwarf);
        safe_close(r->fd);
}

/* The start of the line-table row containing vaddr (what eu-addr2line's
 * inline chain is taken at), or vaddr when there is none. */
static uint64_t rows_start(struct rows *r, uint64_t vaddr) {
        Dwarf_Die mem, *cu;
        Dwarf_Line *line;
        Dwarf_Addr a;

        if (!r->dwarf || !(cu = dwarf_addrdie(r->dwarf, vaddr, &mem)) || !(line = dwarf_getsrc_die(cu, vaddr)) ||
            dwarf_lineaddr(line, &a) != 0)
                return vaddr;
        return a;
}

/* Whether eu-addr2line's answer is profd's first frame at vaddr (or, in
 * padding, no function) followed by profd's callers at the row start. */
static bool explained_by_row_quirk(symbolizer *s, const sym_file *f, const struct binary *b, struct rows *rows,
                                   uint64_t vaddr, const struct sym_frame *got, int n_got,
                                   const struct expected *want) {
        struct sym_frame at_row[MAX_FRAMES];
        uint64_t row = rows_start(rows, vaddr), off;
        int n_row;

        if (row == vaddr || want->n_frames == 0 || !binary_offset(b, row, &off))
                return false;
        if (n_got > 0 ? !frame_matches(&got[0], &want->frames[0]) : !streq(want->frames[0].function, "??"))
                return false;
        n_row = sym_file_resolve(s, f, off, at_row, MAX_FRAMES);
        if (n_row < 1 || (size_t) n_row != want->n_frames)
                return false;
        for (int k = 1; k < n_row; k++)
                if (!frame_matches(&at_row[k], &want->frames[k]))
                        return false;
        return true;
}

struct totals {
        size_t n, exact, quirk;
};

/* Compares one file and adds to the totals; returns whether the file's
 * unexplained disagreements stay under 1%. */
static bool check_file(symbolizer *s, const char *label, const char *path, const char *debuginfo_path,
                       struct totals *totals) {
        _cleanup_free_ struct expected *expected = NULL;
        _cleanup_free_ uint64_t *vaddrs = NULL;
        _cleanup_(rows_done) struct rows rows = { .fd = -1 };
        struct binary b;
        const sym_file *f = NULL;
        size_t n = 0, exact = 0, quirk = 0, inline_addrs = 0, with_line = 0, shown = 0;
        uint64_t step;
        double pct;

        CHECK(binary_read(path, &b));
        CHECK_INT_EQ(symbolizer_load_file(s, path, &f), 0);
        if (!f || b.text_size == 0)
                return false;
        CHECK(sym_file_debug_path(f) != NULL);
        if (sym_file_debug_path(f)) {
                rows.fd = open(sym_file_debug_path(f), O_RDONLY | O_CLOEXEC);
                rows.dwarf = rows.fd >= 0 ? dwarf_begin(rows.fd, DWARF_C_READ) : NULL;
        }

        /* Every step bytes across .text, not only instruction starts: a
         * return address minus one lands mid-instruction too. */
        step = MAX(b.text_size / SAMPLES_PER_FILE, (uint64_t) 1);
        vaddrs = calloc(SAMPLES_PER_FILE + 1, sizeof(*vaddrs));
        expected = calloc(SAMPLES_PER_FILE + 1, sizeof(*expected));
        if (!vaddrs || !expected)
                abort();
        for (uint64_t a = b.text_start; a < b.text_start + b.text_size && n <= SAMPLES_PER_FILE; a += step)
                vaddrs[n++] = a;

        if (!run_eu_addr2line(path, debuginfo_path, vaddrs, n, expected)) {
                CHECK(!"eu-addr2line failed");
                return false;
        }

        for (size_t i = 0; i < n; i++) {
                struct sym_frame got[MAX_FRAMES];
                uint64_t off = 0;
                bool same;
                int r;

                CHECK(binary_offset(&b, vaddrs[i], &off));
                r = sym_file_resolve(s, f, off, got, MAX_FRAMES);
                CHECK(r >= 0);
                r = MAX(r, 0);
                same = (size_t) r == expected[i].n_frames;
                for (int k = 0; same && k < r; k++)
                        same = frame_matches(&got[k], &expected[i].frames[k]);
                if (same) {
                        exact++;
                        inline_addrs += r > 1;
                        with_line += r > 0 && got[0].file;
                } else if (explained_by_row_quirk(s, f, &b, &rows, vaddrs[i], got, r, &expected[i]))
                        quirk++;
                else if (shown++ < MISMATCHES_SHOWN) {
                        fprintf(stderr, "  %s: 0x%" PRIx64 " differs\n", label, vaddrs[i]);
                        print_chain("profd", got, r);
                        print_expected(&expected[i]);
                }
                expected_done(&expected[i]);
        }
        pct = 100.0 * (double) exact / (double) n;
        printf("%-10s %5zu addresses: %5zu agree exactly (%6.2f%%), %3zu eu-addr2line row quirk, %3zu differ "
               "(%.2f%%); %zu with inline frames, %zu with file:line; debug info: %s\n",
               label, n, exact, pct, quirk, n - exact - quirk, 100.0 * (double) (n - exact - quirk) / (double) n,
               inline_addrs, with_line, sym_file_debug_path(f));
        totals->n += n;
        totals->exact += exact;
        totals->quirk += quirk;
        return 100.0 * (double) (exact + quirk) / (double) n >= REQUIRED_AGREEMENT;
}

/* libc as this test itself maps it. */
static int find_libc(struct dl_phdr_info *info, size_t size, void *userdata) {
        char **ret = userdata;

        if (info->dlpi_name && strstr(info->dlpi_name, "/libc.so")) {
                *ret = realpath(info->dlpi_name, NULL);
                return 1;
        }
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        remove(path);
        return 0;
}

int main(int argc, char *argv[]) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        _cleanup_free_ char *libc = NULL, *link_dir = NULL, *link_path = NULL, *debuginfo_path = NULL;
        char *paths[5] = {};
        static const char *const labels[] = { "inline", "templates", "debuglink", "build-id" };
        const sym_file *stripped = NULL;
        const char *dirs[3];
        struct totals totals = {};
        const char *id;

        if (argc != 6) {
                fprintf(stderr, "usage: %s INLINE TEMPLATES SPLIT BUILDID BUILDID.debug\n", argv[0]);
                return 2;
        }
        for (int i = 0; i < 5; i++)
                if (!(paths[i] = realpath(argv[i + 1], NULL))) {
                        perror(argv[i + 1]);
                        return 1;
                }
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }

        /* The build-id fixture is stripped of everything; its debug file is
         * reachable only as TMP/.build-id/xx/rest.debug. */
        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, paths[3], &stripped), 0);
        id = sym_file_build_id(stripped);
        CHECK(id && strlen(id) > 2);
        if (!id)
                return 1;
        if (asprintf(&link_dir, "%s/.build-id/%.2s", tmpdir, id) < 0 ||
            asprintf(&link_path, "%s/%s.debug", link_dir, id + 2) < 0 ||
            asprintf(&debuginfo_path, "-:.debug:/usr/lib/debug:%s", tmpdir) < 0)
                abort();
        CHECK(!sym_file_debug_path(stripped));
        s = symbolizer_free(s);
        {
                _cleanup_free_ char *b = NULL;

                if (asprintf(&b, "%s/.build-id", tmpdir) < 0)
                        abort();
                CHECK_INT_EQ(mkdir(b, 0755), 0);
                CHECK_INT_EQ(mkdir(link_dir, 0755), 0);
        }
        CHECK_INT_EQ(symlink(paths[4], link_path), 0);

        dirs[0] = "/usr/lib/debug";
        dirs[1] = tmpdir;
        dirs[2] = NULL;
        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_set_debug_dirs(s, dirs), 0);
        /* As profd reads DWARF: through mapped decompressed copies. */
        CHECK_INT_EQ(symbolizer_set_scratch_dir(s, tmpdir), 0);

        for (int i = 0; i < 4; i++)
                CHECK(check_file(s, labels[i], paths[i], debuginfo_path, &totals));

        dl_iterate_phdr(find_libc, &libc);
        if (libc) {
                const sym_file *f = NULL;

                CHECK_INT_EQ(symbolizer_load_file(s, libc, &f), 0);
                if (f && sym_file_debug_path(f) && strstr(sym_file_debug_path(f), "/.build-id/"))
                        CHECK(check_file(s, "libc", libc, debuginfo_path, &totals));
                else
                        printf("libc       skipped: no debug file under /usr/lib/debug/.build-id "
                               "(install libc6-dbg)\n");
        }
        printf("total      %5zu addresses: %5zu agree exactly (%6.2f%%), %3zu eu-addr2line row quirk, "
               "%3zu differ\n",
               totals.n, totals.exact, totals.n ? 100.0 * (double) totals.exact / (double) totals.n : 0.0,
               totals.quirk, totals.n - totals.exact - totals.quirk);
        CHECK(totals.n > 0 && 100.0 * (double) totals.exact / (double) totals.n >= REQUIRED_AGREEMENT);

        nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        for (int i = 0; i < 5; i++)
                free(paths[i]);
        TESTS_DONE();
}
