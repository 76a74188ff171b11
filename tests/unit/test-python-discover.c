/* Discovery of CPython interpreters in ELF files: a fixture the suite
 * builds (a stand-in eval loop with a cold part, stripped to .dynsym),
 * Debian's python3.11 and pyenv's libpython3.1x.so when installed. The
 * cold part found from .dynsym and .eh_frame alone must be the one the
 * unstripped .symtab names `_PyEval_EvalFrameDefault.cold`. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdlib.h>
#include <unistd.h>

#include "macro.h"
#include "python-discover.h"
#include "python-layout.h"
#include "tests.h"

/* A .symtab symbol's value and size: 0 when found. */
static int symtab_lookup(const char *path, const char *name, uint64_t *ret_value, uint64_t *ret_size) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        Elf *elf;
        Elf_Scn *scn = NULL;
        int r = -ENOENT;

        if (fd < 0)
                return -errno;
        elf = elf_begin(fd, ELF_C_READ, NULL);
        while (elf && r < 0 && (scn = elf_nextscn(elf, scn))) {
                GElf_Shdr shdr;
                Elf_Data *data;

                if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_SYMTAB || !(data = elf_getdata(scn, NULL)))
                        continue;
                for (size_t i = 0; i < shdr.sh_size / shdr.sh_entsize; i++) {
                        GElf_Sym sym;

                        if (gelf_getsym(data, (int) i, &sym) &&
                            streq(elf_strptr(elf, shdr.sh_link, sym.st_name), name)) {
                                *ret_value = sym.st_value;
                                *ret_size = sym.st_size;
                                r = 0;
                                break;
                        }
                }
        }
        if (elf)
                elf_end(elf);
        return r;
}

/* The cold part found is the one .symtab names (when `symbols` has one).
 * `required`: the file's cold part is reached by direct jumps, so it must
 * be found. pyenv's builds (gcc 12, computed gotos) leave a cold part of
 * 4 (3.11.7) or 8 (3.12.1) bytes that only an indirect jump reaches: not
 * found, and too small to matter to a sample. */
static void check_cold(const char *symbols, const struct python_binary *b, bool required) {
        uint64_t value, size;
        bool named = symtab_lookup(symbols, "_PyEval_EvalFrameDefault.cold", &value, &size) == 0;

        printf("%s: cold part [0x%" PRIx64 ", 0x%" PRIx64 ")", symbols, b->cold_start, b->cold_end);
        if (named)
                printf(", .symtab: [0x%" PRIx64 ", 0x%" PRIx64 ")", value, value + size);
        printf("\n");
        if (required) {
                CHECK(b->cold_start != 0);
                CHECK(b->cold_end > b->cold_start);
        }
        if (b->cold_start == 0) {
                CHECK_INT_EQ(b->cold_end, 0);
                return;
        }
        CHECK(b->cold_end <= b->eval_start || b->cold_start >= b->eval_end);
        if (named) {
                CHECK_INT_EQ(b->cold_start, value);
                CHECK(b->cold_end >= value + size);
        }
}

static void test_fixture(const char *full, const char *stripped) {
        struct python_binary b;
        uint64_t value, size;

        CHECK_INT_EQ(python_discover_file(stripped, &b), 0);
        CHECK_INT_EQ(b.version, 0x030b05f0);
        CHECK_INT_EQ(symtab_lookup(full, "_PyRuntime", &value, &size), 0);
        CHECK_INT_EQ(b.runtime, value);
        CHECK_INT_EQ(b.runtime_size, size);
        CHECK_INT_EQ(b.runtime_head_size, size);
        CHECK(memcmp(b.runtime_head, "notdebug", 8) == 0);
        CHECK_INT_EQ(symtab_lookup(full, "_PyEval_EvalFrameDefault", &value, &size), 0);
        CHECK_INT_EQ(b.eval_start, value);
        CHECK_INT_EQ(b.eval_end, value + size);
        CHECK_INT_EQ(symtab_lookup(full, "PyCode_Type", &value, &size), 0);
        CHECK_INT_EQ(b.code_type, value);
        check_cold(full, &b, true);
}

static void test_not_python(const char *self) {
        struct python_binary b;

        CHECK_INT_EQ(python_discover_file(self, &b), -ENOENT);
        CHECK_INT_EQ(python_discover_file("/nonexistent/python3.11", &b), -ENOENT);
}

/* A real interpreter: the version, a layout for it (from 3.13 on, out of
 * the file's own _Py_DebugOffsets), the cold part. */
static void test_interpreter(const char *path, uint32_t minor, bool cold_required) {
        struct python_binary b;
        struct python_layout l;

        if (access(path, R_OK) < 0) {
                fprintf(stderr, "%s absent, skipped\n", path);
                return;
        }
        CHECK_INT_EQ(python_discover_file(path, &b), 0);
        CHECK_INT_EQ(PYTHON_MINOR(b.version), minor);
        CHECK(b.runtime != 0 && b.eval_end > b.eval_start && b.code_type != 0);
        CHECK(b.runtime_head_size >= python_layout_runtime_head_size(b.version));
        CHECK_INT_EQ(python_layout_get(b.version, b.runtime_head, b.runtime_head_size, &l), 0);
        if (minor == PYTHON_VERSION(3, 13)) {
                /* pyenv's 3.13.0 headers, offsetof (test-python-layout). */
                CHECK_INT_EQ(l.current_frame, 72);
                CHECK_INT_EQ(l.frame_instr, 56);
                CHECK_INT_EQ(l.frame_owner, 70);
                CHECK_INT_EQ(l.code_adaptive, 200);
                CHECK_INT_EQ(l.code_qualname, 128);
                CHECK_INT_EQ(l.code_firstlineno, 68);
                CHECK_INT_EQ(l.unicode_ascii_data, 40);
                CHECK_INT_EQ(l.runtime_interpreters_head, 632);
                CHECK_INT_EQ(l.interp_threads_head, 7344);
        }
        printf("%s: version 0x%08x, _PyRuntime 0x%" PRIx64 ", eval [0x%" PRIx64 ", 0x%" PRIx64 ")\n", path,
               b.version, b.runtime, b.eval_start, b.eval_end);
        check_cold(path, &b, cold_required);
}

static void test_pyenv(void) {
        /* minor: the version expected; 0: not an interpreter; 1: one too
         * old to describe. */
        static const struct { const char *pattern; uint32_t minor; } builds[] = {
                { "/.pyenv/versions/3.11.*/lib/libpython3.11.so.1.0", PYTHON_VERSION(3, 11) },
                { "/.pyenv/versions/3.12.*/lib/libpython3.12.so.1.0", PYTHON_VERSION(3, 12) },
                { "/.pyenv/versions/3.13.*/lib/libpython3.13.so.1.0", PYTHON_VERSION(3, 13) },
                { "/.pyenv/versions/3.11.*/bin/python3.11", 0 },       /* the stub: not an interpreter */
                { "/.pyenv/versions/3.10.*/lib/libpython3.10.so.1.0", 1 },     /* before Py_Version */
        };
        const char *home = getenv("HOME");

        for (size_t i = 0; home && i < ELEMENTSOF(builds); i++) {
                char pattern[4096];
                glob_t g;

                snprintf(pattern, sizeof pattern, "%s%s", home, builds[i].pattern);
                if (glob(pattern, 0, NULL, &g) != 0) {
                        fprintf(stderr, "%s: none, skipped\n", pattern);
                        continue;
                }
                for (size_t k = 0; k < g.gl_pathc; k++) {
                        struct python_binary b;

                        if (builds[i].minor > 1)
                                test_interpreter(g.gl_pathv[k], builds[i].minor, false);
                        else if (builds[i].minor == 1)
                                CHECK_INT_EQ(python_discover_file(g.gl_pathv[k], &b), -EPROTONOSUPPORT);
                        else
                                CHECK_INT_EQ(python_discover_file(g.gl_pathv[k], &b), -ENOENT);
                }
                globfree(&g);
        }
}

int main(int argc, char **argv) {
        if (argc != 3) {
                fprintf(stderr, "usage: %s FIXTURE FIXTURE-STRIPPED\n", argv[0]);
                return 2;
        }
        elf_version(EV_CURRENT);
        test_fixture(argv[1], argv[2]);
        test_not_python(argv[0]);
        test_interpreter("/usr/bin/python3.11", PYTHON_VERSION(3, 11), true);
        test_pyenv();
        TESTS_DONE();
}
