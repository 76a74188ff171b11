/* Specifies how the symbolizer finds and trusts debug info (the file itself,
 * the build-id path, .gnu_debuglink with its CRC, inside a process's root),
 * what sym_file_resolve returns (inline chains, file:line, demangled and raw
 * names), that a deleted file still resolves, and that the cache stays
 * within its budget, that compressed debug sections read through the
 * decompressed copy give the same frames, before and after the DWARF is
 * closed and opened again, against fixtures the suite builds.
 *
 * usage: test-symbolize-debug INLINE TEMPLATES SPLIT SPLIT.debug BUILDID BUILDID.debug INLINE-NOARANGES
 *        INLINE-ZDEBUG */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
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
DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

#define MAX_FRAMES 32

static char tmpdir[] = "/tmp/test-symbolize-debug-XXXXXX";

static const char *inline_path, *templates_path, *split_path, *split_debug_path, *buildid_path,
        *buildid_debug_path, *noaranges_path, *zdebug_path;

static char *tmp_path(const char *name) {
        char *p;

        if (asprintf(&p, "%s/%s", tmpdir, name) < 0)
                abort();
        return p;
}

static void make_dirs(const char *path) {
        _cleanup_free_ char *copy = strdup(path);

        if (!copy)
                abort();
        for (char *p = copy + 1; *p; p++)
                if (*p == '/') {
                        *p = '\0';
                        (void) mkdir(copy, 0755);
                        *p = '/';
                }
        (void) mkdir(copy, 0755);
}

/* Copies a file; with flip_at < size, inverts the byte there. */
static void copy_file(const char *from, const char *to, size_t flip_at) {
        _cleanup_fclose_ FILE *in = fopen(from, "re"), *out = NULL;
        _cleanup_free_ unsigned char *buf = NULL;
        long size;

        CHECK(in);
        if (!in || fseek(in, 0, SEEK_END) < 0 || (size = ftell(in)) < 0 || fseek(in, 0, SEEK_SET) < 0)
                return;
        buf = malloc((size_t) size + 1);
        if (!buf || fread(buf, 1, (size_t) size, in) != (size_t) size)
                abort();
        if (flip_at < (size_t) size)
                buf[flip_at] ^= 0xff;
        out = fopen(to, "we");
        CHECK(out);
        if (out)
                CHECK_INT_EQ(fwrite(buf, 1, (size_t) size, out), size);
        (void) chmod(to, 0755);
}

/* The file offset a symbol of symtab_path's .symtab (read with libelf) is
 * loaded from by path's program headers, and its size. False when there is
 * no such symbol. */
static bool find_symbol_in(const char *path, const char *symtab_path, const char *name, uint64_t *ret_offset,
                           uint64_t *ret_size) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC), sfd = open(symtab_path, O_RDONLY | O_CLOEXEC);
        _cleanup_(elf_endp) Elf *e = NULL, *se = NULL;
        Elf_Scn *scn = NULL;
        size_t n_phdrs;

        if (fd < 0 || sfd < 0 || elf_version(EV_CURRENT) == EV_NONE || !(e = elf_begin(fd, ELF_C_READ, NULL)) ||
            !(se = elf_begin(sfd, ELF_C_READ, NULL)) || elf_getphdrnum(e, &n_phdrs) < 0)
                return false;
        while ((scn = elf_nextscn(se, scn))) {
                GElf_Shdr shdr;
                Elf_Data *data;

                if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_SYMTAB || !(data = elf_getdata(scn, NULL)))
                        continue;
                for (size_t i = 0; i < shdr.sh_size / shdr.sh_entsize; i++) {
                        GElf_Sym sym;

                        if (!gelf_getsym(data, (int) i, &sym) ||
                            !streq(elf_strptr(se, shdr.sh_link, sym.st_name), name))
                                continue;
                        for (size_t k = 0; k < n_phdrs; k++) {
                                GElf_Phdr ph;

                                if (gelf_getphdr(e, (int) k, &ph) && ph.p_type == PT_LOAD &&
                                    sym.st_value >= ph.p_vaddr && sym.st_value - ph.p_vaddr < ph.p_filesz) {
                                        *ret_offset = sym.st_value - ph.p_vaddr + ph.p_offset;
                                        *ret_size = sym.st_size;
                                        return true;
                                }
                        }
                }
        }
        return false;
}

static bool find_symbol(const char *path, const char *name, uint64_t *ret_offset, uint64_t *ret_size) {
        return find_symbol_in(path, path, name, ret_offset, ret_size);
}

static bool ends_with(const char *s, const char *suffix) {
        size_t n = s ? strlen(s) : 0, m = strlen(suffix);

        return n >= m && streq(s + n - m, suffix);
}

/* The offset of quick_sort in the debuglink fixture (stripped of debug
 * info only, so its .symtab is still there). */
static uint64_t split_quick_sort_offset(void) {
        uint64_t off = 0, size = 0;

        CHECK(find_symbol(split_path, "quick_sort", &off, &size));
        return off;
}

/* A file whose DWARF lives in the file resolves to a chain: innermost
 * inlined helper from the header first, the real function last, every
 * frame with file:line, the callers at their call sites in inline.c. */
static void test_inline_chain_with_file_and_line(void) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        const sym_file *f = NULL;
        uint64_t off = 0, size = 0;
        bool seen_helper = false;

        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, inline_path, &f), 0);
        CHECK_STR_EQ(sym_file_debug_path(f), inline_path);
        CHECK(find_symbol(inline_path, "count_words", &off, &size));
        CHECK(size > 0);

        for (uint64_t a = off; a < off + size && !seen_helper; a++) {
                struct sym_frame frames[MAX_FRAMES], outer;
                int n = sym_file_resolve(s, f, a, frames, MAX_FRAMES);

                CHECK(n >= 1);
                if (n < 1)
                        break;
                CHECK_STR_EQ(frames[n - 1].function, "count_words");
                CHECK(!frames[n - 1].inlined);
                for (int k = 0; k < n - 1; k++)
                        CHECK(frames[k].inlined);
                if (!streq(frames[0].function, "helper_mix") || n < 4)
                        continue;
                seen_helper = true;
                /* helper_mix, inlined into helper_hash_bytes, into key_hash,
                 * into bucket_add, into count_words. */
                CHECK_INT_EQ(n, 5);
                CHECK(ends_with(frames[0].file, "/inline-helpers.h"));
                CHECK(frames[0].line >= 13 && frames[0].line <= 17);
                CHECK_STR_EQ(frames[1].function, "helper_hash_bytes");
                CHECK(ends_with(frames[1].file, "/inline-helpers.h"));
                CHECK_INT_EQ(frames[1].line, 24);
                CHECK_STR_EQ(frames[2].function, "key_hash");
                CHECK(ends_with(frames[2].file, "/inline.c"));
                CHECK_INT_EQ(frames[2].line, 23);
                CHECK_STR_EQ(frames[3].function, "bucket_add");
                CHECK_INT_EQ(frames[3].line, 34);
                CHECK_INT_EQ(frames[4].line, 62);
                CHECK(frames[0].file && frames[0].file[0] == '/'); /* with the CU's comp_dir, as eu-addr2line */

                /* A short buffer keeps the outermost frames. */
                CHECK_INT_EQ(sym_file_resolve(s, f, a, &outer, 1), 1);
                CHECK_STR_EQ(outer.function, "count_words");
                CHECK_INT_EQ(outer.line, 62);
                CHECK_INT_EQ(sym_file_resolve(s, f, a, frames, 0), -EINVAL);
        }
        CHECK(seen_helper);
}

/* C++ names come demangled, with the symbol table's (or DWARF linkage)
 * name next to them; C names are the same in both. */
static void test_demangled_and_raw_names(void) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        struct sym_frame frames[MAX_FRAMES];
        const sym_file *f = NULL;
        uint64_t off = 0, size = 0;
        int n;

        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, templates_path, &f), 0);
        CHECK(find_symbol(templates_path, "_Z10sum_sortedIlET_St6vectorIS0_SaIS0_EE", &off, &size));
        n = sym_file_resolve(s, f, off, frames, MAX_FRAMES);
        CHECK_INT_EQ(n, 1);
        CHECK_STR_EQ(frames[0].function, "long sum_sorted<long>(std::vector<long, std::allocator<long> >)");
        CHECK_STR_EQ(frames[0].raw_function, "_Z10sum_sortedIlET_St6vectorIS0_SaIS0_EE");
        CHECK(ends_with(frames[0].file, "/templates.cpp"));
        /* The old lookup keeps giving the raw symbol. */
        CHECK_STR_EQ(sym_file_lookup(f, off), "_Z10sum_sortedIlET_St6vectorIS0_SaIS0_EE");

        CHECK(find_symbol(templates_path, "main", &off, &size));
        n = sym_file_resolve(s, f, off, frames, MAX_FRAMES);
        CHECK(n >= 1);
        CHECK_STR_EQ(frames[n - 1].function, "main");
        CHECK_STR_EQ(frames[n - 1].raw_function, "main");
}

/* The debuglink fixture has no build-id: its CRC decides. A debug file with
 * one byte changed is refused (the file then resolves from its own .symtab,
 * without file:line); the right one is found next to the file, in .debug/
 * and under DEBUG_DIR/<dir of the file>. */
static void test_debuglink_crc(void) {
        _cleanup_free_ char *bad_dir = tmp_path("crc-bad"), *bad = tmp_path("crc-bad/sym-split"),
                            *bad_debug = tmp_path("crc-bad/sym-split.debug"), *sub_dir = tmp_path("crc-sub/.debug"),
                            *sub = tmp_path("crc-sub/sym-split"),
                            *sub_debug = tmp_path("crc-sub/.debug/sym-split.debug"), *global_dir = NULL,
                            *global = tmp_path("crc-global/sym-split"), *global_debug = NULL,
                            *debug_root = tmp_path("debug-root"), *global_parent = tmp_path("crc-global");
        struct sym_frame frames[MAX_FRAMES];
        uint64_t off = split_quick_sort_offset();
        const char *dirs[] = { debug_root, NULL };
        struct stat st;

        CHECK_INT_EQ(stat(split_debug_path, &st), 0);
        make_dirs(bad_dir);
        copy_file(split_path, bad, SIZE_MAX);
        copy_file(split_debug_path, bad_debug, (size_t) st.st_size / 2);
        {
                _cleanup_(symbolizer_freep) symbolizer *s = NULL;
                const sym_file *f = NULL;

                CHECK_INT_EQ(symbolizer_new(&s), 0);
                CHECK_INT_EQ(symbolizer_load_file(s, bad, &f), 0);
                CHECK(!sym_file_debug_path(f));
                CHECK_INT_EQ(sym_file_resolve(s, f, off, frames, MAX_FRAMES), 1);
                CHECK_STR_EQ(frames[0].function, "quick_sort");
                CHECK(!frames[0].file);
                CHECK_INT_EQ(frames[0].line, 0);
        }

        make_dirs(sub_dir);
        copy_file(split_path, sub, SIZE_MAX);
        copy_file(split_debug_path, sub_debug, SIZE_MAX);
        {
                _cleanup_(symbolizer_freep) symbolizer *s = NULL;
                const sym_file *f = NULL;

                CHECK_INT_EQ(symbolizer_new(&s), 0);
                CHECK_INT_EQ(symbolizer_load_file(s, sub, &f), 0);
                CHECK_STR_EQ(sym_file_debug_path(f), sub_debug);
                CHECK(sym_file_resolve(s, f, off, frames, MAX_FRAMES) >= 1);
                CHECK(ends_with(frames[0].file, "/split.c"));
                CHECK(frames[0].line > 0);
        }

        if (asprintf(&global_dir, "%s%s", debug_root, global_parent) < 0 ||
            asprintf(&global_debug, "%s/sym-split.debug", global_dir) < 0)
                abort();
        make_dirs(global_dir);
        make_dirs(global_parent);
        copy_file(split_path, global, SIZE_MAX);
        copy_file(split_debug_path, global_debug, SIZE_MAX);
        {
                _cleanup_(symbolizer_freep) symbolizer *s = NULL;
                const sym_file *f = NULL;

                CHECK_INT_EQ(symbolizer_new(&s), 0);
                CHECK_INT_EQ(symbolizer_set_debug_dirs(s, dirs), 0);
                CHECK_INT_EQ(symbolizer_load_file(s, global, &f), 0);
                CHECK_STR_EQ(sym_file_debug_path(f), global_debug);
        }
}

/* A stripped file whose only .symtab and DWARF are in DIR/.build-id/xx/
 * rest.debug: found there (also when DIR is inside the process's root), a
 * file of another build-id at that path is refused, and without it the file
 * has no symbols at all. */
static void test_build_id_path(void) {
        _cleanup_free_ char *link_dir = NULL, *link = NULL, *root = tmp_path("root"), *root_link_dir = NULL,
                            *root_link = NULL, *debug_root = tmp_path("buildid-debug");
        const char *dirs[] = { debug_root, NULL };
        struct sym_frame frames[MAX_FRAMES];
        uint64_t off = 0, size = 0;
        char id[128] = "";

        CHECK(find_symbol_in(buildid_path, buildid_debug_path, "checksum", &off, &size));
        {
                _cleanup_(symbolizer_freep) symbolizer *s = NULL;
                const sym_file *f = NULL;

                CHECK_INT_EQ(symbolizer_new(&s), 0);
                CHECK_INT_EQ(symbolizer_set_debug_dirs(s, dirs), 0);
                CHECK_INT_EQ(symbolizer_load_file(s, buildid_path, &f), 0);
                CHECK(sym_file_build_id(f));
                snprintf(id, sizeof(id), "%s", sym_file_build_id(f) ?: "");
                CHECK(!sym_file_has_symbols(f));
                CHECK(!sym_file_debug_path(f));
                CHECK_INT_EQ(sym_file_resolve(s, f, off, frames, MAX_FRAMES), 0);
                CHECK_INT_EQ(sym_file_why_unresolved(f, off), SYM_NO_SYMBOLS);
                CHECK_STR_EQ(sym_unresolved_to_string(sym_file_why_unresolved(f, off)), "no-symbols");
        }
        if (strlen(id) < 3)
                return;
        if (asprintf(&link_dir, "%s/.build-id/%.2s", debug_root, id) < 0 ||
            asprintf(&link, "%s/%s.debug", link_dir, id + 2) < 0)
                abort();
        make_dirs(link_dir);

        /* Another file's debug info at this build-id's path. */
        copy_file(split_debug_path, link, SIZE_MAX);
        {
                _cleanup_(symbolizer_freep) symbolizer *s = NULL;
                const sym_file *f = NULL;

                CHECK_INT_EQ(symbolizer_new(&s), 0);
                CHECK_INT_EQ(symbolizer_set_debug_dirs(s, dirs), 0);
                CHECK_INT_EQ(symbolizer_load_file(s, buildid_path, &f), 0);
                CHECK(!sym_file_debug_path(f));
        }

        unlink(link);
        copy_file(buildid_debug_path, link, SIZE_MAX);
        {
                _cleanup_(symbolizer_freep) symbolizer *s = NULL;
                const sym_file *f = NULL;

                CHECK_INT_EQ(symbolizer_new(&s), 0);
                CHECK_INT_EQ(symbolizer_set_debug_dirs(s, dirs), 0);
                CHECK_INT_EQ(symbolizer_load_file(s, buildid_path, &f), 0);
                CHECK_STR_EQ(sym_file_debug_path(f), link);
                CHECK(sym_file_has_symbols(f));
                /* The .symtab comes from the debug file too. */
                CHECK_STR_EQ(sym_file_lookup(f, off), "checksum");
                CHECK_INT_EQ(sym_file_resolve(s, f, off, frames, MAX_FRAMES), 1);
                CHECK_STR_EQ(frames[0].function, "checksum");
                CHECK(ends_with(frames[0].file, "/split.c"));
        }

        /* The same layout inside a process's root: found with root_prefix,
         * with the default debug dir as the process sees it. */
        if (asprintf(&root_link_dir, "%s/usr/lib/debug/.build-id/%.2s", root, id) < 0 ||
            asprintf(&root_link, "%s/%s.debug", root_link_dir, id + 2) < 0)
                abort();
        make_dirs(root_link_dir);
        copy_file(buildid_debug_path, root_link, SIZE_MAX);
        {
                _cleanup_(symbolizer_freep) symbolizer *s = NULL;
                const sym_file *f = NULL;

                CHECK_INT_EQ(symbolizer_new(&s), 0);
                CHECK_INT_EQ(symbolizer_load_file_at(s, buildid_path, root, "/opt/app/sym-buildid", &f), 0);
                CHECK_STR_EQ(sym_file_debug_path(f), root_link);
        }
}

/* The debuglink next to the file as the process sees it (/opt/app), which
 * exists only inside the process's root. */
static void test_debuglink_inside_process_root(void) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        _cleanup_free_ char *app_dir = tmp_path("proc-root/opt/app"), *root = tmp_path("proc-root"),
                            *bin = tmp_path("proc-root/opt/app/sym-split"),
                            *debug = tmp_path("proc-root/opt/app/sym-split.debug"),
                            *elsewhere = tmp_path("map-file");
        const sym_file *f = NULL;

        make_dirs(app_dir);
        copy_file(split_path, bin, SIZE_MAX);
        copy_file(split_debug_path, debug, SIZE_MAX);
        /* Opened through a path that says nothing about its directory, as
         * /proc/PID/map_files/START-END does. */
        CHECK_INT_EQ(link(bin, elsewhere), 0);

        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_load_file_at(s, elsewhere, root, "/opt/app/sym-split", &f), 0);
        CHECK_STR_EQ(sym_file_debug_path(f), debug);
}

/* A file whose DWARF is in the file itself, deleted after loading and before
 * the first resolve (which opens the DWARF), resolves fully; so does one
 * whose separate debug file is deleted. */
static void test_deleted_file_still_resolves(void) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        _cleanup_free_ char *copy = tmp_path("deleted-inline"), *dir = tmp_path("deleted-split"),
                            *bin = tmp_path("deleted-split/sym-split"),
                            *debug = tmp_path("deleted-split/sym-split.debug");
        struct sym_frame frames[MAX_FRAMES];
        const sym_file *f = NULL, *g = NULL;
        uint64_t off = 0, size = 0;
        int n;

        copy_file(inline_path, copy, SIZE_MAX);
        make_dirs(dir);
        copy_file(split_path, bin, SIZE_MAX);
        copy_file(split_debug_path, debug, SIZE_MAX);
        CHECK(find_symbol(inline_path, "report", &off, &size));

        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, copy, &f), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, bin, &g), 0);
        CHECK_INT_EQ(unlink(copy), 0);
        CHECK_INT_EQ(unlink(bin), 0);
        CHECK_INT_EQ(unlink(debug), 0);

        n = sym_file_resolve(s, f, off + 4, frames, MAX_FRAMES);
        CHECK(n >= 1);
        if (n >= 1) {
                CHECK_STR_EQ(frames[n - 1].function, "report");
                CHECK(ends_with(frames[n - 1].file, "/inline.c"));
        }
        n = sym_file_resolve(s, g, split_quick_sort_offset(), frames, MAX_FRAMES);
        CHECK(n >= 1);
        if (n >= 1) {
                CHECK_STR_EQ(frames[n - 1].function, "quick_sort");
                CHECK(frames[n - 1].line > 0);
        }
}

/* Without .debug_aranges (clang, rustc) the CUs' own ranges find the CU:
 * every address of a function resolves as with them. */
static void test_missing_aranges(void) {
        /* Two symbolizers: the copy has the same build-id, one would share. */
        _cleanup_(symbolizer_freep) symbolizer *s = NULL, *t = NULL;
        const sym_file *with = NULL, *without = NULL;
        uint64_t off = 0, size = 0;
        size_t n_same = 0;

        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_new(&t), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, inline_path, &with), 0);
        CHECK_INT_EQ(symbolizer_load_file(t, noaranges_path, &without), 0);
        CHECK(find_symbol(inline_path, "count_words", &off, &size));
        for (uint64_t a = off; a < off + size; a++) {
                struct sym_frame x[MAX_FRAMES], y[MAX_FRAMES];
                int n = sym_file_resolve(s, with, a, x, MAX_FRAMES);
                bool same = n > 0 && sym_file_resolve(t, without, a, y, MAX_FRAMES) == n;

                for (int k = 0; same && k < n; k++)
                        same = streq(x[k].function, y[k].function) && streq(x[k].file, y[k].file) &&
                                x[k].line == y[k].line && x[k].inlined == y[k].inlined;
                n_same += same;
        }
        CHECK(size > 0);
        CHECK_INT_EQ(n_same, size);
}

/* Why addresses stay unresolved. */
static void test_unresolved_reasons(void) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        struct sym_frame frames[MAX_FRAMES];
        const sym_file *f = NULL;

        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, inline_path, &f), 0);
        CHECK_INT_EQ(sym_file_resolve(s, f, UINT64_MAX - 1, frames, MAX_FRAMES), 0);
        CHECK_INT_EQ(sym_file_why_unresolved(f, UINT64_MAX - 1), SYM_NOT_MAPPED);
        /* The ELF header is mapped but no function. */
        CHECK_INT_EQ(sym_file_resolve(s, f, 0, frames, MAX_FRAMES), 0);
        CHECK_INT_EQ(sym_file_why_unresolved(f, 0), SYM_NO_FUNCTION);
        CHECK(sym_file_has_symbols(f));
        CHECK_STR_EQ(sym_unresolved_to_string(SYM_EXPORTS_ONLY), "exports-only");
        CHECK_STR_EQ(sym_unresolved_to_string(SYM_NOT_MAPPED), "not-mapped");
        CHECK_STR_EQ(sym_unresolved_to_string(SYM_NO_FUNCTION), "no-function");
}

/* Asking twice gives the same frames (from the per-address cache), strings
 * included. */
static void test_repeated_addresses_are_cached(void) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        struct sym_frame a[MAX_FRAMES], b[MAX_FRAMES];
        const sym_file *f = NULL;
        uint64_t off = 0, size = 0, before;
        int n;

        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, templates_path, &f), 0);
        CHECK(find_symbol(templates_path, "main", &off, &size));
        n = sym_file_resolve(s, f, off + 16, a, MAX_FRAMES);
        before = symbolizer_cache_bytes(s);
        CHECK_INT_EQ(sym_file_resolve(s, f, off + 16, b, MAX_FRAMES), n);
        CHECK_INT_EQ(symbolizer_cache_bytes(s), before);
        CHECK(n > 0);
        /* The very same strings, not copies. */
        for (int k = 0; k < n; k++)
                CHECK(a[k].function == b[k].function && a[k].raw_function == b[k].raw_function &&
                      a[k].file == b[k].file && a[k].line == b[k].line && a[k].inlined == b[k].inlined);
}

/* n copies of the split-DWARF program in dir (new), paths[i] each, with its
 * debug file beside them: copies without build-id are distinct inodes, so
 * n cache entries that each open DWARF. */
static void make_split_copies(const char *dir, char **paths, size_t n) {
        _cleanup_free_ char *debug = NULL;

        make_dirs(dir);
        if (asprintf(&debug, "%s/sym-split.debug", dir) < 0)
                abort();
        copy_file(split_debug_path, debug, SIZE_MAX);
        for (size_t i = 0; i < n; i++) {
                if (asprintf(&paths[i], "%s/copy-%zu", dir, i) < 0)
                        abort();
                copy_file(split_path, paths[i], SIZE_MAX);
        }
}

/* Many files under a budget of a few: trim evicts the least recently used
 * until the estimate fits, keeps the most recently used, bumps the
 * generation; evicted files load and resolve again. */
static void test_cache_budget_evicts_lru(void) {
        enum { N_FILES = 24 };
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        _cleanup_free_ char *dir = tmp_path("many");
        char *paths[N_FILES] = {};
        const sym_file *files[N_FILES] = {}, *again = NULL;
        struct sym_frame frames[MAX_FRAMES];
        uint64_t off = split_quick_sort_offset(), one = 0, gen, full, closed;
        _cleanup_(symbolizer_freep) symbolizer *t = NULL;
        const sym_file *alone = NULL;
        size_t evicted;

        make_split_copies(dir, paths, N_FILES);
        CHECK_INT_EQ(symbolizer_new(&s), 0);
        for (int i = 0; i < N_FILES; i++) {
                CHECK_INT_EQ(symbolizer_load_file(s, paths[i], &files[i]), 0);
                CHECK_INT_EQ(sym_file_resolve(s, files[i], off, frames, MAX_FRAMES) >= 1, 1);
                if (i == 0)
                        one = symbolizer_cache_bytes(s);
        }
        CHECK(files[0] != files[1]);
        CHECK(one > 0);
        CHECK(symbolizer_cache_bytes(s) >= one * (N_FILES - 1));

        /* Just over budget: the DWARF of the least recently used file
         * (file 1; file 0 was used last) is closed, no file is evicted. */
        CHECK_INT_EQ(sym_file_resolve(s, files[0], off, frames, MAX_FRAMES) >= 1, 1);
        full = symbolizer_cache_bytes(s);
        symbolizer_set_cache_budget(s, full - 1);
        gen = symbolizer_generation(s);
        CHECK_INT_EQ(symbolizer_trim(s), 0);
        CHECK(symbolizer_cache_bytes(s) < full);
        CHECK_INT_EQ(symbolizer_generation(s), gen);
        CHECK(!sym_file_dwarf_is_open(files[1]));
        CHECK(sym_file_dwarf_is_open(files[2]));
        CHECK(sym_file_dwarf_is_open(files[0]));

        /* What one file with its DWARF closed costs, in a cache of its own. */
        CHECK_INT_EQ(symbolizer_new(&t), 0);
        CHECK_INT_EQ(symbolizer_load_file(t, paths[5], &alone), 0);
        CHECK_INT_EQ(sym_file_resolve(t, alone, off, frames, MAX_FRAMES) >= 1, 1);
        symbolizer_set_cache_budget(t, symbolizer_cache_bytes(t) - 1);
        CHECK_INT_EQ(symbolizer_trim(t), 0);
        CHECK(!sym_file_dwarf_is_open(alone));
        closed = symbolizer_cache_bytes(t);
        CHECK(closed > 0 && closed < one);

        /* Room for about four closed files: every DWARF is closed, then
         * the least recently used files go. */
        symbolizer_set_cache_budget(s, closed * 4 + closed / 2);
        gen = symbolizer_generation(s);
        evicted = symbolizer_trim(s);
        CHECK_INT_EQ(evicted, N_FILES - 4);
        CHECK(symbolizer_cache_bytes(s) <= closed * 4 + closed / 2);
        CHECK(symbolizer_generation(s) != gen);
        CHECK_INT_EQ(symbolizer_load_file(s, paths[0], &again), 0);
        CHECK(again == files[0]);
        CHECK(!sym_file_dwarf_is_open(again));
        CHECK_INT_EQ(symbolizer_load_file(s, paths[N_FILES - 1], &again), 0);
        CHECK(again == files[N_FILES - 1]);

        /* Under budget: nothing happens. */
        gen = symbolizer_generation(s);
        CHECK_INT_EQ(symbolizer_trim(s), 0);
        CHECK_INT_EQ(symbolizer_generation(s), gen);

        /* An evicted file comes back and resolves as before. */
        CHECK_INT_EQ(symbolizer_load_file(s, paths[1], &again), 0);
        CHECK_INT_EQ(sym_file_resolve(s, again, off, frames, MAX_FRAMES) >= 1, 1);
        CHECK_STR_EQ(frames[0].function, "quick_sort");

        /* A budget of nothing empties the cache. */
        symbolizer_set_cache_budget(s, 0);
        CHECK_INT_EQ(symbolizer_trim(s), 5);
        CHECK_INT_EQ(symbolizer_cache_bytes(s), 0);
        for (int i = 0; i < N_FILES; i++)
                free(paths[i]);
}

/* Within a drain (symbolizer_bound): over budget, the DWARF of every file
 * but the one used last is closed, least recently used first; no file is
 * evicted, so every pointer stays valid and the generation stays; a file
 * whose DWARF was closed resolves as before. */
static void test_cache_bound_within_drain(void) {
        enum { N_FILES = 5 };
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        _cleanup_free_ char *dir = tmp_path("bound");
        char *paths[N_FILES] = {};
        const sym_file *files[N_FILES] = {};
        struct sym_frame frames[MAX_FRAMES];
        uint64_t off = split_quick_sort_offset(), gen, full, peak;

        make_split_copies(dir, paths, N_FILES);
        CHECK_INT_EQ(symbolizer_new(&s), 0);
        for (int i = 0; i < N_FILES; i++) {
                CHECK_INT_EQ(symbolizer_load_file(s, paths[i], &files[i]), 0);
                CHECK_INT_EQ(sym_file_resolve(s, files[i], off, frames, MAX_FRAMES) >= 1, 1);
        }
        /* file 2 used last */
        CHECK_INT_EQ(sym_file_resolve(s, files[2], off, frames, MAX_FRAMES) >= 1, 1);
        full = symbolizer_cache_bytes(s);

        /* Under budget: nothing closes. */
        symbolizer_set_cache_budget(s, full);
        CHECK_INT_EQ(symbolizer_bound(s), 0);
        for (int i = 0; i < N_FILES; i++)
                CHECK(sym_file_dwarf_is_open(files[i]));

        /* Just over: the least recently used file's DWARF alone. */
        symbolizer_set_cache_budget(s, full - 1);
        CHECK_INT_EQ(symbolizer_bound(s), 1);
        CHECK(!sym_file_dwarf_is_open(files[0]));
        for (int i = 1; i < N_FILES; i++)
                CHECK(sym_file_dwarf_is_open(files[i]));

        /* Nothing allowed: all but the file used last; none evicted. */
        symbolizer_set_cache_budget(s, 0);
        gen = symbolizer_generation(s);
        CHECK_INT_EQ(symbolizer_bound(s), N_FILES - 2);
        CHECK_INT_EQ(symbolizer_generation(s), gen);
        for (int i = 0; i < N_FILES; i++)
                CHECK_INT_EQ(sym_file_dwarf_is_open(files[i]), i == 2);
        CHECK(symbolizer_cache_bytes(s) < full);
        peak = symbolizer_peak_bytes(s);
        CHECK(peak >= full);
        /* and it was all it could do */
        CHECK_INT_EQ(symbolizer_bound(s), 0);
        /* File 0 used again (its DWARF read again): now the one used
         * last, it stays, and 2's goes, the only other one open. */
        CHECK_INT_EQ(sym_file_resolve(s, files[0], off, frames, MAX_FRAMES) >= 1, 1);
        CHECK_INT_EQ(symbolizer_bound(s), 1);
        for (int i = 0; i < N_FILES; i++)
                CHECK_INT_EQ(sym_file_dwarf_is_open(files[i]), i == 0);

        /* A closed file resolves again, through the same pointer. */
        for (int i = 0; i < N_FILES; i++) {
                const sym_file *again = NULL;

                CHECK_INT_EQ(symbolizer_load_file(s, paths[i], &again), 0);
                CHECK(again == files[i]);
                CHECK_INT_EQ(sym_file_resolve(s, files[i], off, frames, MAX_FRAMES) >= 1, 1);
                CHECK_STR_EQ(frames[0].function, "quick_sort");
                CHECK(frames[0].line > 0);
        }
        for (int i = 0; i < N_FILES; i++)
                free(paths[i]);
}

/* Within a drain, DWARF a key used since the last bound stays open while
 * the cache is within a quarter over the budget: closing it made the
 * drain's next key of the same program read it again (a build host's
 * churn). Files no key used since are closed first, least recently used
 * first; over the headroom, the rest too, all but the one used last. */
static void test_cache_bound_keeps_dwarf_in_use(void) {
        enum { N_FILES = 5 };
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        _cleanup_free_ char *dir = tmp_path("inuse");
        char *paths[N_FILES] = {};
        const sym_file *files[N_FILES] = {};
        struct sym_frame frames[MAX_FRAMES];
        uint64_t off = split_quick_sort_offset(), full;

        make_split_copies(dir, paths, N_FILES);
        CHECK_INT_EQ(symbolizer_new(&s), 0);
        for (int i = 0; i < N_FILES; i++) {
                CHECK_INT_EQ(symbolizer_load_file(s, paths[i], &files[i]), 0);
                CHECK_INT_EQ(sym_file_resolve(s, files[i], off, frames, MAX_FRAMES) >= 1, 1);
        }
        full = symbolizer_cache_bytes(s);

        /* Over the budget, within the headroom, every file used since the
         * last bound (none yet): nothing closes. */
        symbolizer_set_cache_budget(s, full - 1);
        CHECK_INT_EQ(symbolizer_bound(s), 0);
        for (int i = 0; i < N_FILES; i++)
                CHECK(sym_file_dwarf_is_open(files[i]));

        /* Files 3 and 1 used since: of the others, the least recently used
         * (0) goes, which brings the cache under the budget. */
        CHECK_INT_EQ(sym_file_resolve(s, files[3], off, frames, MAX_FRAMES) >= 1, 1);
        CHECK_INT_EQ(sym_file_resolve(s, files[1], off, frames, MAX_FRAMES) >= 1, 1);
        CHECK_INT_EQ(symbolizer_bound(s), 1);
        for (int i = 0; i < N_FILES; i++)
                CHECK_INT_EQ(sym_file_dwarf_is_open(files[i]), i != 0);
        CHECK(symbolizer_cache_bytes(s) <= full - 1);

        /* Every open file used since, and a budget the headroom cannot
         * hold: those used since go too, least recently used first (4, 3,
         * then 2), until the cache is within the headroom; 1, used last,
         * stays whatever the budget. */
        for (int i = N_FILES - 1; i > 0; i--)
                CHECK_INT_EQ(sym_file_resolve(s, files[i], off, frames, MAX_FRAMES) >= 1, 1);
        symbolizer_set_cache_budget(s, 0);
        CHECK_INT_EQ(symbolizer_bound(s), 3);
        for (int i = 0; i < N_FILES; i++)
                CHECK_INT_EQ(sym_file_dwarf_is_open(files[i]), i == 1);
        /* A closed file resolves again. */
        CHECK_INT_EQ(sym_file_resolve(s, files[4], off, frames, MAX_FRAMES) >= 1, 1);
        CHECK_STR_EQ(frames[0].function, "quick_sort");
        for (int i = 0; i < N_FILES; i++)
                free(paths[i]);
}

/* With marking (the daemon's trims), the budget evicts only the files no
 * tracked process maps: the others would be read again at once for their
 * processes. Their DWARF is closed; the generation stays. */
static void test_cache_budget_keeps_mapped(void) {
        enum { N_FILES = 6, N_MAPPED = 3 };
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        _cleanup_free_ char *dir = tmp_path("marked");
        char *paths[N_FILES] = {};
        const sym_file *files[N_FILES] = {}, *again = NULL;
        struct sym_frame frames[MAX_FRAMES];
        uint64_t off = split_quick_sort_offset(), gen;

        make_dirs(dir);
        CHECK_INT_EQ(symbolizer_new(&s), 0);
        for (int i = 0; i < N_FILES; i++) {
                if (asprintf(&paths[i], "%s/copy-%d", dir, i) < 0)
                        abort();
                copy_file(split_path, paths[i], SIZE_MAX);
                CHECK_INT_EQ(symbolizer_load_file(s, paths[i], &files[i]), 0);
                CHECK_INT_EQ(sym_file_resolve(s, files[i], off, frames, MAX_FRAMES) >= 1, 1);
        }
        symbolizer_set_cache_budget(s, 0);
        gen = symbolizer_generation(s);
        for (int round = 0; round < 2; round++) {
                symbolizer_mark_begin(s);
                for (int i = 0; i < N_MAPPED; i++)
                        symbolizer_mark_mapped(s, files[i]);
                CHECK_INT_EQ(symbolizer_trim(s), round == 0 ? N_FILES - N_MAPPED : 0);
                CHECK_INT_EQ(symbolizer_generation(s), gen);
                CHECK(symbolizer_cache_bytes(s) > 0);
                for (int i = 0; i < N_MAPPED; i++)
                        CHECK(!sym_file_dwarf_is_open(files[i]));
        }
        for (int i = 0; i < N_MAPPED; i++) {
                CHECK_INT_EQ(symbolizer_load_file(s, paths[i], &again), 0);
                CHECK(again == files[i]);
        }
        CHECK_INT_EQ(sym_file_resolve(s, files[0], off, frames, MAX_FRAMES) >= 1, 1);
        CHECK_STR_EQ(frames[0].function, "quick_sort");
        /* unmarked, the budget takes them too, and the generation moves */
        CHECK_INT_EQ(symbolizer_trim(s), N_MAPPED);
        CHECK(symbolizer_generation(s) != gen);
        CHECK_INT_EQ(symbolizer_cache_bytes(s), 0);
        for (int i = 0; i < N_FILES; i++)
                free(paths[i]);
}

/* How many of this process's fds are unlinked files in tmpdir (DWARF
 * copies: O_TMPFILE files show as "DIR/#INODE (deleted)"). */
static size_t scratch_fds(void) {
        _cleanup_(closedirp) DIR *d = opendir("/proc/self/fd");
        char prefix[sizeof(tmpdir) + 2];
        size_t n = 0;
        struct dirent *de;

        CHECK(d);
        if (!d)
                return 0;
        snprintf(prefix, sizeof(prefix), "%s/#", tmpdir);
        while ((de = readdir(d))) {
                char link[PATH_MAX], target[PATH_MAX];
                ssize_t k;

                snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
                k = readlink(link, target, sizeof(target) - 1);
                if (k <= 0)
                        continue;
                target[k] = '\0';
                n += strncmp(target, prefix, strlen(prefix)) == 0 && ends_with(target, " (deleted)");
        }
        return n;
}

/* Whether path has a .debug_info section compressed with SHF_COMPRESSED. */
static bool has_compressed_debug_info(const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_(elf_endp) Elf *e = NULL;
        Elf_Scn *scn = NULL;
        size_t shstrndx;

        if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE || !(e = elf_begin(fd, ELF_C_READ, NULL)) ||
            elf_getshdrstrndx(e, &shstrndx) < 0)
                return false;
        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr shdr;
                const char *name;

                if (gelf_getshdr(scn, &shdr) && (name = elf_strptr(e, shstrndx, shdr.sh_name)) &&
                    streq(name, ".debug_info"))
                        return shdr.sh_flags & SHF_COMPRESSED;
        }
        return false;
}

/* Whether every address of the functions resolves in f (symbolizer t) to
 * the frames the reference file ref (symbolizer s) gives. Counts the
 * addresses compared in *n_compared. */
static bool same_frames(symbolizer *s, const sym_file *ref, symbolizer *t, const sym_file *f, size_t *n_compared) {
        static const char *const functions[] = { "count_words", "main" };

        for (size_t i = 0; i < ELEMENTSOF(functions); i++) {
                uint64_t off = 0, size = 0;

                CHECK(find_symbol(inline_path, functions[i], &off, &size));
                for (uint64_t a = off; a < off + size; a++) {
                        struct sym_frame x[MAX_FRAMES], y[MAX_FRAMES];
                        int n = sym_file_resolve(s, ref, a, x, MAX_FRAMES);

                        if (n <= 0 || sym_file_resolve(t, f, a, y, MAX_FRAMES) != n)
                                return false;
                        for (int k = 0; k < n; k++)
                                if (!streq(x[k].function, y[k].function) || !streq(x[k].file, y[k].file) ||
                                    x[k].line != y[k].line || x[k].inlined != y[k].inlined)
                                        return false;
                        (*n_compared)++;
                }
        }
        return true;
}

/* Compressed debug sections (as distributions ship them) are inflated into
 * an unlinked copy in the scratch directory and read through a mapping of
 * it: the frames are those of the uncompressed file, line for line, and
 * stay so after the DWARF is closed (as trim does when it idles) and
 * opened again from the copy it kept; giving the copies back removes it. */
static void test_compressed_sections_through_copy(void) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL, *t = NULL;
        const sym_file *ref = NULL, *z = NULL;
        size_t n = 0, before;
        uint64_t mapped;

        CHECK(has_compressed_debug_info(zdebug_path));
        CHECK(!has_compressed_debug_info(inline_path));
        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_new(&t), 0);
        CHECK_INT_EQ(symbolizer_set_scratch_dir(t, tmpdir), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, inline_path, &ref), 0);
        CHECK_INT_EQ(symbolizer_load_file(t, zdebug_path, &z), 0);
        before = scratch_fds();

        CHECK(same_frames(s, ref, t, z, &n));
        CHECK(n > 0);
        /* read through the copy, not inflated into the heap */
        CHECK(sym_file_dwarf_is_open(z));
        mapped = symbolizer_mapped_bytes(t);
        CHECK(mapped > 0);
        CHECK_INT_EQ(scratch_fds(), before + 1);
        CHECK(symbolizer_peak_bytes(t) == 0); /* sampled at trims only */

        /* closed: nothing mapped, the copy kept for the reopen */
        CHECK_INT_EQ(sym_file_close_dwarf((sym_file *) z), 1);
        CHECK(!sym_file_dwarf_is_open(z));
        CHECK_INT_EQ(symbolizer_mapped_bytes(t), 0);
        CHECK_INT_EQ(scratch_fds(), before + 1);
        n = 0;
        CHECK(same_frames(s, ref, t, z, &n));
        CHECK(n > 0);
        CHECK(sym_file_dwarf_is_open(z));
        CHECK_INT_EQ(symbolizer_mapped_bytes(t), mapped);
        CHECK_INT_EQ(scratch_fds(), before + 1); /* the same copy, none made anew */

        /* a trim samples the peak, heap and mapped */
        (void) symbolizer_trim(t);
        CHECK(symbolizer_peak_bytes(t) >= mapped);

        /* the disk wanted back: closed, and the copy gone */
        CHECK_INT_EQ(symbolizer_release_copies(t), (int64_t) mapped);
        CHECK(!sym_file_dwarf_is_open(z));
        CHECK_INT_EQ(scratch_fds(), before);
        /* and it resolves again (making the copy anew) */
        n = 0;
        CHECK(same_frames(s, ref, t, z, &n));
        CHECK(n > 0);
        CHECK_INT_EQ(scratch_fds(), before + 1);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        remove(path);
        return 0;
}

int main(int argc, char *argv[]) {
        char *paths[8] = {};

        if (argc != 9) {
                fprintf(stderr, "usage: %s INLINE TEMPLATES SPLIT SPLIT.debug BUILDID BUILDID.debug "
                        "INLINE-NOARANGES INLINE-ZDEBUG\n", argv[0]);
                return 2;
        }
        for (int i = 0; i < 8; i++)
                if (!(paths[i] = realpath(argv[i + 1], NULL))) {
                        perror(argv[i + 1]);
                        return 1;
                }
        inline_path = paths[0];
        templates_path = paths[1];
        split_path = paths[2];
        split_debug_path = paths[3];
        buildid_path = paths[4];
        buildid_debug_path = paths[5];
        noaranges_path = paths[6];
        zdebug_path = paths[7];
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }

        test_inline_chain_with_file_and_line();
        test_demangled_and_raw_names();
        test_debuglink_crc();
        test_build_id_path();
        test_debuglink_inside_process_root();
        test_deleted_file_still_resolves();
        test_missing_aranges();
        test_unresolved_reasons();
        test_repeated_addresses_are_cached();
        test_cache_budget_evicts_lru();
        test_cache_budget_keeps_mapped();
        test_cache_bound_within_drain();
        test_cache_bound_keeps_dwarf_in_use();
        test_compressed_sections_through_copy();

        nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        for (int i = 0; i < 8; i++)
                free(paths[i]);
        TESTS_DONE();
}
