/* Specifies the symbolizer against this very binary, a fixture library the suite builds from this file (-DSYMBOLIZER_FIXTURE) and strips, and kallsyms files written here. */
#ifdef SYMBOLIZER_FIXTURE

/* The fixture library. Built with -fno-toplevel-reorder so that fixture_static
 * directly follows fixture_exported in .text: once .symtab is stripped, the
 * nearest .dynsym symbol below fixture_static is then a sized function that
 * ends before it, and the lookup must say "unknown" rather than guess. */
int fixture_exported(int x);
void *fixture_static_address(void);
static __attribute__((noinline, noclone)) int fixture_static(int x);

int fixture_exported(int x) {
        volatile int acc = x;

        for (int i = 0; i < x; i++)
                acc += fixture_static(i);
        return acc;
}

static __attribute__((noinline, noclone)) int fixture_static(int x) {
        volatile int acc = 1;

        for (int i = 0; i < x; i++)
                acc = acc * 3 + i;
        return acc;
}

void *fixture_static_address(void) {
        return (void *) fixture_static;
}

#else

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <ftw.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf-symbols.h"
#include "helpers.h"
#include "hashmap.h"
#include "kallsyms.h"
#include "macro.h"
#include "symbolizer.h"
#include "tests.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(symbolizer *, symbolizer_free);

static char tmpdir[] = "/tmp/test-symbolizer-XXXXXX";

/* Two functions of this binary, different enough that identical code folding
 * cannot merge them, and longer than 8 bytes so addr+8 is still inside. */
int test_global_function(int x);
/* Aliases at the same address: the lookup must pick test_global_function
 * (global beats weak, no leading underscore beats one), whatever their order
 * in .symtab. */
extern int __test_global_alias(int x) __attribute__((alias("test_global_function")));
extern int test_weak_alias(int x) __attribute__((weak, alias("test_global_function")));

static __attribute__((noinline, noclone)) int test_static_function(int x) {
        volatile int acc = x;

        for (int i = 0; i < x; i++)
                acc += i * 3;
        return acc;
}

__attribute__((noinline, noclone)) int test_global_function(int x) {
        volatile unsigned acc = 1;

        for (int i = 0; i < x; i++)
                acc *= (unsigned) i + 7;
        return (int) acc;
}

static char *tmp_path(const char *name) {
        char *p;

        if (asprintf(&p, "%s/%s", tmpdir, name) < 0)
                abort();
        return p;
}

static void write_file(const char *path, const void *data, size_t size) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        CHECK(fd >= 0);
        if (fd >= 0)
                CHECK_INT_EQ(write(fd, data, size), (ssize_t) size);
}

/* Reads a whole file into memory; returns NULL (and fails a check) on error. */
static unsigned char *read_file(const char *path, size_t *ret_size) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        unsigned char *buf;
        long size;

        CHECK(f);
        if (!f || fseek(f, 0, SEEK_END) < 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0)
                return NULL;
        buf = malloc((size_t) size + 1);
        if (!buf || fread(buf, 1, (size_t) size, f) != (size_t) size) {
                CHECK(!"reading the fixture failed");
                free(buf);
                return NULL;
        }
        *ret_size = (size_t) size;
        return buf;
}

static void copy_file(const char *from, const char *to) {
        _cleanup_free_ unsigned char *data = NULL;
        size_t size = 0;

        data = read_file(from, &size);
        if (data)
                write_file(to, data, size);
}

/* The offset into the mapped file of addr, as /proc/PID/maps reports it to
 * the daemon: address - mapping start + mapping offset. */
static uint64_t file_offset_of(const void *addr) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/maps", "re");
        char line[4096];

        CHECK(f);
        while (f && fgets(line, sizeof(line), f)) {
                uint64_t start, end, pgoff;

                if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64, &start, &end, &pgoff) != 3)
                        continue;
                if ((uintptr_t) addr >= start && (uintptr_t) addr < end)
                        return (uintptr_t) addr - start + pgoff;
        }
        CHECK(!"address not mapped");
        return UINT64_MAX;
}

struct build_id_search {
        const char *path;
        char hex[256];
};

/* Reads the build-id the dynamic loader sees in the mapped PT_NOTE segments,
 * independently of libelf. */
static int find_build_id_cb(struct dl_phdr_info *info, size_t size, void *userdata) {
        struct build_id_search *search = userdata;

        if (!info->dlpi_name || !streq(info->dlpi_name, search->path))
                return 0;
        for (int i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                size_t align = ph->p_align == 8 ? 8 : 4;
                const unsigned char *p, *end;

                if (ph->p_type != PT_NOTE)
                        continue;
                p = (const unsigned char *) (info->dlpi_addr + ph->p_vaddr);
                end = p + ph->p_memsz;
                while ((size_t) (end - p) >= sizeof(ElfW(Nhdr))) {
                        const ElfW(Nhdr) *n = (const ElfW(Nhdr) *) p;
                        size_t name_len = (n->n_namesz + align - 1) / align * align;
                        size_t desc_len = (n->n_descsz + align - 1) / align * align;
                        const unsigned char *name = p + sizeof(*n), *desc = name + name_len;

                        if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
                            n->n_descsz * 2 < sizeof(search->hex)) {
                                for (size_t j = 0; j < n->n_descsz; j++)
                                        sprintf(search->hex + 2 * j, "%02x", desc[j]);
                                return 1;
                        }
                        p = desc + desc_len;
                }
        }
        return 0;
}

static void test_own_functions_resolve_by_name(void) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        const sym_file *f = NULL, *again = NULL;
        uint64_t off_static = file_offset_of((const void *) test_static_function);
        uint64_t off_global = file_offset_of((const void *) test_global_function);

        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, "/proc/self/exe", &f), 0);
        CHECK_STR_EQ(sym_file_lookup(f, off_static), "test_static_function");
        CHECK_STR_EQ(sym_file_lookup(f, off_static + 8), "test_static_function");
        CHECK_STR_EQ(sym_file_lookup(f, off_global), "test_global_function");
        CHECK_STR_EQ(sym_file_lookup(f, off_global + 8), "test_global_function");
        /* An offset past the end of every segment is no function. */
        CHECK(!sym_file_lookup(f, UINT64_MAX - 1));

        /* The second load of the same inode comes from the cache. */
        CHECK_INT_EQ(symbolizer_load_file(s, "/proc/self/exe", &again), 0);
        CHECK(again == f);
}

struct fixture {
        void *handle;
        uint64_t off_exported; /* file offset of fixture_exported */
        uint64_t off_static; /* file offset of the static fixture_static */
        struct build_id_search build_id;
};

static bool fixture_open(const char *path, struct fixture *ret) {
        void *(*static_address)(void);
        void *exported;

        *ret = (struct fixture) { .build_id.path = path };
        ret->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        CHECK(ret->handle);
        if (!ret->handle) {
                fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
                return false;
        }
        exported = dlsym(ret->handle, "fixture_exported");
        static_address = (void *(*)(void)) dlsym(ret->handle, "fixture_static_address");
        CHECK(exported && static_address);
        if (!exported || !static_address)
                return false;
        ret->off_exported = file_offset_of(exported);
        ret->off_static = file_offset_of(static_address());
        CHECK_INT_EQ(dl_iterate_phdr(find_build_id_cb, &ret->build_id), 1);
        return true;
}

static void test_stripped_library_resolves_exports_only(struct fixture *stripped, struct fixture *full,
                                                        const char *stripped_path, const char *full_path) {
        _cleanup_(symbolizer_freep) symbolizer *s1 = NULL, *s2 = NULL;
        const sym_file *f = NULL;

        /* Separate symbolizers: both files have the same build-id, and one
         * cache would hand back whichever was loaded first. */
        CHECK_INT_EQ(symbolizer_new(&s1), 0);
        CHECK_INT_EQ(symbolizer_load_file(s1, stripped_path, &f), 0);
        CHECK_STR_EQ(sym_file_lookup(f, stripped->off_exported), "fixture_exported");
        CHECK_STR_EQ(sym_file_lookup(f, stripped->off_exported + 8), "fixture_exported");
        /* .dynsym has no entry for it and fixture_exported's size ends before it. */
        CHECK(!sym_file_lookup(f, stripped->off_static));

        CHECK_INT_EQ(symbolizer_new(&s2), 0);
        CHECK_INT_EQ(symbolizer_load_file(s2, full_path, &f), 0);
        CHECK_STR_EQ(sym_file_lookup(f, full->off_exported), "fixture_exported");
        CHECK_STR_EQ(sym_file_lookup(f, full->off_static), "fixture_static");
        CHECK_STR_EQ(sym_file_lookup(f, full->off_static + 8), "fixture_static");
}

static void test_build_id_matches_loader_and_dedups(struct fixture *stripped, const char *stripped_path,
                                                    const char *full_path) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        _cleanup_free_ char *link_path = tmp_path("fixture-symlink.so");
        const sym_file *f = NULL, *via_link = NULL, *full = NULL;
        const char *id;

        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, stripped_path, &f), 0);
        id = sym_file_build_id(f);
        CHECK_INT_EQ(id ? strlen(id) : 0, 40); /* --build-id=sha1 */
        CHECK_STR_EQ(id, stripped->build_id.hex);

        CHECK_INT_EQ(symlink(stripped_path, link_path), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, link_path, &via_link), 0);
        CHECK(via_link == f);

        /* Another inode with the same build-id is the same cached file. */
        CHECK_INT_EQ(symbolizer_load_file(s, full_path, &full), 0);
        CHECK(full == f);
}

static void test_cache_survives_deletion(struct fixture *stripped, const char *stripped_path) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        _cleanup_free_ char *copy = tmp_path("fixture-copy.so");
        const sym_file *f = NULL, *original = NULL;

        copy_file(stripped_path, copy);
        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, copy, &f), 0);
        CHECK_INT_EQ(unlink(copy), 0);

        CHECK_STR_EQ(sym_file_lookup(f, stripped->off_exported), "fixture_exported");
        CHECK_STR_EQ(sym_file_build_id(f), stripped->build_id.hex);
        CHECK_INT_EQ(symbolizer_load_file(s, copy, &original), -ENOENT);
        CHECK_INT_EQ(symbolizer_load_file(s, stripped_path, &original), 0);
        CHECK(original == f);
}

/* Through an fd held (a process's file opened when its maps were read):
 * read after the path is gone, the same object as by path, and the fd
 * taken over whatever the outcome (closed on failure). */
static void test_load_through_fd(struct fixture *stripped, const char *stripped_path) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        _cleanup_free_ char *copy = tmp_path("fixture-held.so"), *text = tmp_path("held-not-elf");
        const sym_file *f = NULL, *again = NULL;
        int fd;

        copy_file(stripped_path, copy);
        write_file(text, "not elf", 7);
        CHECK_INT_EQ(symbolizer_new(&s), 0);
        fd = open(copy, O_RDONLY | O_CLOEXEC);
        CHECK(fd >= 0);
        CHECK_INT_EQ(unlink(copy), 0);
        CHECK_INT_EQ(symbolizer_load_file_fd(s, fd, NULL, copy, &f), 0);
        CHECK(f);
        if (!f)
                return;
        CHECK_STR_EQ(sym_file_lookup(f, stripped->off_exported), "fixture_exported");
        CHECK_INT_EQ(symbolizer_load_file(s, stripped_path, &again), 0);
        CHECK(again == f);

        fd = open(text, O_RDONLY | O_CLOEXEC);
        CHECK_INT_EQ(symbolizer_load_file_fd(s, fd, NULL, text, &f), -ENOEXEC);
        CHECK(fcntl(fd, F_GETFD) < 0 && errno == EBADF);
        fd = open(tmpdir, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
        CHECK_INT_EQ(symbolizer_load_file_fd(s, fd, NULL, tmpdir, &f), -EISDIR);
        CHECK(fcntl(fd, F_GETFD) < 0 && errno == EBADF);
}

/* The packed table (16 bytes a symbol): starts above the lowest, sizes
 * clamped, what lies more than 4 GiB above the first left out, and every
 * lookup as on the entries. */
static void test_func_table_pack(void) {
        static const uint64_t base = UINT64_C(0x7f0000001000);
        const struct func_entry e[] = {
                { .start = base, .size = 0x10, .name = "first", .dwfl_name = "first" },
                { .start = base + 0x100, .size = 0, .name = "unsized", .dwfl_name = "__unsized" },
                { .start = base + 0x200, .size = UINT64_C(1) << 33, .name = "huge", .dwfl_name = "huge" },
                { .start = base + UINT32_MAX, .size = 8, .name = "last", .dwfl_name = "last" },
                { .start = base + UINT32_MAX + 1, .size = 8, .name = "beyond", .dwfl_name = "beyond" },
        };
        const struct load_segment seg = { .offset = 0, .vaddr = base, .filesz = UINT64_C(1) << 34 };
        struct func_table t = {};
        const struct func_sym *sym;

        CHECK_INT_EQ(sizeof(struct func_sym), 16);
        CHECK_INT_EQ(func_table_pack(&t, e, ELEMENTSOF(e)), 0);
        CHECK_INT_EQ(t.n_syms, 4); /* "beyond" left out */
        CHECK(t.base == base);
        CHECK(func_sym_start(&t, &t.syms[3]) == base + UINT32_MAX);
        CHECK(func_table_find(&t, base - 1, &seg) == NULL);
        sym = func_table_find(&t, base + 0xf, &seg);
        CHECK(sym && streq(func_sym_name(&t, sym), "first"));
        CHECK(func_table_find(&t, base + 0x10, &seg) == NULL); /* past its size */
        sym = func_table_find(&t, base + 0x1ff, &seg);
        CHECK(sym && streq(func_sym_name(&t, sym), "unsized") && streq(func_sym_dwfl_name(&t, sym), "__unsized"));
        CHECK(sym && sym->size == 0);
        sym = func_table_find(&t, base + 0x200 + 0x100000, &seg);
        CHECK(sym && streq(func_sym_name(&t, sym), "huge") && sym->size == UINT32_MAX);
        sym = func_table_find(&t, base + UINT32_MAX + 7, &seg);
        CHECK(sym && streq(func_sym_name(&t, sym), "last"));
        CHECK(func_table_find(&t, base + UINT32_MAX + 8, &seg) == NULL);
        CHECK(func_table_find(&t, base + (UINT64_C(1) << 33), &seg) == NULL);
        CHECK_INT_EQ(t.names_len, strlen("first") + strlen("unsized") + strlen("__unsized") + strlen("huge") +
                                         strlen("last") + 5);
        func_table_done(&t);
        CHECK_INT_EQ(func_table_pack(&t, e, 0), 0);
        CHECK_INT_EQ(t.n_syms, 0);
        CHECK(func_table_find(&t, base, &seg) == NULL);
}

/* Every symbol's two names are the strings saved, and lie in t->names. */
static void check_func_names(const struct func_table *t, char *const *names, char *const *dwfl_names) {
        for (size_t i = 0; i < t->n_syms; i++) {
                CHECK_STR_EQ(func_sym_name(t, &t->syms[i]), names[i]);
                CHECK_STR_EQ(func_sym_dwfl_name(t, &t->syms[i]), dwfl_names[i]);
                CHECK(t->syms[i].name < t->names_len && t->syms[i].dwfl_name < t->names_len);
        }
}

/* A symbol table moved out of the heap into a mapped file and back: the
 * same symbols and strings at every step, their pages dropped in between. */
static void test_func_names_mapped(void) {
        _cleanup_close_ int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        struct func_table t = {};
        char **names, **dwfl_names;
        Elf *e;

        CHECK(elf_version(EV_CURRENT) != EV_NONE);
        e = elf_begin(fd, ELF_C_READ, NULL);
        CHECK(e);
        CHECK_INT_EQ(elf_read_functions(e, false, &t), 0);
        elf_end(e);
        CHECK(t.n_syms > 100);
        names = calloc(t.n_syms, sizeof(*names));
        dwfl_names = calloc(t.n_syms, sizeof(*dwfl_names));
        CHECK(names && dwfl_names);
        if (!names || !dwfl_names)
                return;
        for (size_t i = 0; i < t.n_syms; i++) {
                names[i] = strdup(func_sym_name(&t, &t.syms[i]));
                dwfl_names[i] = strdup(func_sym_dwfl_name(&t, &t.syms[i]));
        }

        /* Below the size asked for: stays in the heap. */
        CHECK_INT_EQ(func_table_map(&t, tmpdir, func_table_bytes(&t) + 1), 0);
        CHECK(!t.mapped);
        CHECK_INT_EQ(func_table_map(&t, tmpdir, func_table_bytes(&t)), 0);
        CHECK(t.mapped);
        for (size_t i = t.n_syms / 2; i < t.n_syms; i++)
                if (t.syms[i].size > 0) { /* found without a segment */
                        CHECK(func_table_find(&t, func_sym_start(&t, &t.syms[i]), NULL) == &t.syms[i]);
                        break;
                }
        check_func_names(&t, names, dwfl_names);
        func_table_drop_pages(&t);
        check_func_names(&t, names, dwfl_names);
        CHECK_INT_EQ(func_table_map(&t, tmpdir, 0), 0); /* already: nothing */
        CHECK_INT_EQ(func_table_unmap(&t), (int64_t) func_table_bytes(&t));
        CHECK(!t.mapped);
        check_func_names(&t, names, dwfl_names);
        CHECK_INT_EQ(func_table_unmap(&t), 0);
        /* No room: refused, nothing changes. */
        CHECK(func_table_map(&t, "/nonexistent-profd-dir", 0) < 0);
        CHECK(!t.mapped);
        check_func_names(&t, names, dwfl_names);

        for (size_t i = 0; i < t.n_syms; i++) {
                free(names[i]);
                free(dwfl_names[i]);
        }
        free(names);
        free(dwfl_names);
        func_table_done(&t);
}

/* A library with over 64 KiB of symbol names (libstdc++'s exports, which
 * g++ brings) keeps them mapped next to the scratch directory, outside the
 * budget's heap; a full disk brings them back, and every name resolves
 * the same before and after (the resolved frames pointing into the
 * mapping were forgotten first). */
static void test_names_mapped_in_symbolizer(void) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        const char *function = "_ZNSt9bad_allocD0Ev";
        struct sym_frame frames[4];
        const sym_file *f = NULL;
        uint64_t heap, off;
        Dl_info info;
        void *handle, *addr;

        handle = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
                printf("names mapped: skipped, no libstdc++.so.6 (%s)\n", dlerror());
                return;
        }
        addr = dlsym(handle, function);
        CHECK(addr && dladdr(addr, &info) && info.dli_fname);
        if (!addr || !info.dli_fname)
                goto out;
        off = file_offset_of(addr);
        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_set_scratch_dir(s, tmpdir), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, info.dli_fname, &f), 0);
        CHECK(symbolizer_mapped_bytes(s) >= FUNC_NAMES_MAP_MIN);
        heap = symbolizer_cache_bytes(s);
        CHECK_STR_EQ(sym_file_lookup(f, off), function);
        CHECK_INT_EQ(sym_file_resolve(s, f, off, frames, ELEMENTSOF(frames)), 1);
        CHECK_STR_EQ(frames[0].raw_function, function);
        symbolizer_drop_pages(s);
        CHECK_STR_EQ(sym_file_lookup(f, off), function);

        CHECK(symbolizer_release_copies(s) >= FUNC_NAMES_MAP_MIN);
        CHECK_INT_EQ(symbolizer_mapped_bytes(s), 0);
        CHECK(symbolizer_cache_bytes(s) >= heap + FUNC_NAMES_MAP_MIN);
        CHECK_STR_EQ(sym_file_lookup(f, off), function);
        CHECK_INT_EQ(sym_file_resolve(s, f, off, frames, ELEMENTSOF(frames)), 1);
        CHECK_STR_EQ(frames[0].raw_function, function);
        CHECK_STR_EQ(frames[0].function, "std::bad_alloc::~bad_alloc()");
out:
        dlclose(handle);
}

/* A file no tracked process mapped at six trims in a row is evicted
 * whatever the budget, without moving the generation (nobody holds it);
 * one marked at any of them stays, and without marking nothing goes. */
static void test_unmapped_files_evicted(const char *full_path) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        const sym_file *own = NULL, *fixture = NULL, *again = NULL;
        uint64_t generation, both, own_only;

        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, "/proc/self/exe", &own), 0);
        own_only = symbolizer_cache_bytes(s);
        CHECK_INT_EQ(symbolizer_load_file(s, full_path, &fixture), 0);
        both = symbolizer_cache_bytes(s);
        CHECK(both > own_only);
        generation = symbolizer_generation(s);

        for (int i = 0; i < 10; i++)
                CHECK_INT_EQ(symbolizer_trim(s), 0);
        CHECK_INT_EQ(symbolizer_cache_bytes(s), both);

        /* The fixture marked at the third trim only: its count starts
         * again, and it goes at the sixth trim after. */
        for (int i = 1; i <= 9; i++) {
                symbolizer_mark_begin(s);
                symbolizer_mark_mapped(s, own);
                symbolizer_mark_mapped(s, NULL);
                if (i == 3)
                        symbolizer_mark_mapped(s, fixture);
                CHECK_INT_EQ(symbolizer_trim(s), i == 9 ? 1 : 0);
                CHECK_INT_EQ(symbolizer_cache_bytes(s), i == 9 ? own_only : both);
        }
        CHECK_INT_EQ(symbolizer_generation(s), generation);
        CHECK_INT_EQ(symbolizer_load_file(s, "/proc/self/exe", &again), 0);
        CHECK(again == own);
        CHECK_INT_EQ(symbolizer_load_file(s, full_path, &fixture), 0);
        CHECK_INT_EQ(symbolizer_cache_bytes(s), both);
}

/* The DWARF of a file no tracked process maps is closed at the first such
 * trim (no sample still to be written can fall in it), long before the
 * file itself goes; a file marked keeps it, and a later resolve opens it
 * again. Neither moves the generation. */
static void test_unmapped_files_close_dwarf(const struct fixture *full, const char *full_path) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        const sym_file *f = NULL;
        struct sym_frame frames[8];
        uint64_t generation, loaded, opened;

        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, full_path, &f), 0);
        loaded = symbolizer_cache_bytes(s);
        generation = symbolizer_generation(s);
        CHECK(sym_file_resolve(s, f, full->off_static, frames, ELEMENTSOF(frames)) >= 1);
        CHECK(sym_file_dwarf_is_open(f));
        opened = symbolizer_cache_bytes(s);
        CHECK(opened > loaded);

        for (int i = 0; i < 3; i++) {
                symbolizer_mark_begin(s);
                symbolizer_mark_mapped(s, f);
                CHECK_INT_EQ(symbolizer_trim(s), 0);
                CHECK(sym_file_dwarf_is_open(f));
        }
        symbolizer_mark_begin(s);
        CHECK_INT_EQ(symbolizer_trim(s), 0);
        CHECK(!sym_file_dwarf_is_open(f));
        /* what outlives a close: the CU ranges, the answers' markers */
        CHECK(symbolizer_cache_bytes(s) < opened);
        CHECK_STR_EQ(sym_file_lookup(f, full->off_static), "fixture_static");

        CHECK(sym_file_resolve(s, f, full->off_static, frames, ELEMENTSOF(frames)) >= 1);
        CHECK_STR_EQ(frames[0].raw_function, "fixture_static");
        CHECK(sym_file_dwarf_is_open(f));
        CHECK_INT_EQ(symbolizer_generation(s), generation);
}

static void test_kallsyms(void) {
        static const char table[] =
                "ffffffff81000000 T _stext\n"
                "ffffffff81000000 T startup_64\n"
                "ffffffff81000100 t do_one_initcall\n"
                "ffffffff81000180 D some_data\n"
                "this line is not kallsyms\n"
                "ffffffff81000200 W weak_hook\n"
                "ffffffffc0a01000 t ext4_fill_super\t[ext4]\n"
                "ffffffffc0a01080 T ext4_iget\t[ext4]\n"
                "ffffffffc0b00000 t xfs_bmap\t[xfs]\n";
        static const char hidden[] =
                "0000000000000000 T _stext\n"
                "0000000000000000 t do_one_initcall\n"
                "0000000000000000 t ext4_fill_super\t[ext4]\n";
        static const char replacement[] = "ffffffff82000000 T schedule\n";
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        _cleanup_free_ char *path = tmp_path("kallsyms"), *hidden_path = tmp_path("kallsyms-hidden"),
                            *replacement_path = tmp_path("kallsyms-replacement"),
                            *missing = tmp_path("kallsyms-missing");
        const char *module = "unset";

        write_file(path, table, strlen(table));
        write_file(hidden_path, hidden, strlen(hidden));
        write_file(replacement_path, replacement, strlen(replacement));
        CHECK_INT_EQ(symbolizer_new(&s), 0);

        /* Nothing loaded yet. */
        CHECK(!symbolizer_lookup_kernel(s, 0xffffffff81000000, &module));
        CHECK(!module);

        CHECK_INT_EQ(symbolizer_load_kallsyms(s, path), 0);
        CHECK_STR_EQ(symbolizer_lookup_kernel(s, 0xffffffff81000100, &module), "do_one_initcall");
        CHECK(!module);
        CHECK_STR_EQ(symbolizer_lookup_kernel(s, 0xffffffff81000150, &module), "do_one_initcall");
        /* Two names for one address: the one without the underscore. */
        CHECK_STR_EQ(symbolizer_lookup_kernel(s, 0xffffffff81000010, &module), "startup_64");
        CHECK_STR_EQ(symbolizer_lookup_kernel(s, 0xffffffff81000210, &module), "weak_hook");
        CHECK(!symbolizer_lookup_kernel(s, 0xffffffff80ffffff, &module));
        CHECK(!module);

        CHECK_STR_EQ(symbolizer_lookup_kernel(s, 0xffffffffc0a01010, &module), "ext4_fill_super");
        CHECK_STR_EQ(module, "ext4");
        CHECK_STR_EQ(symbolizer_lookup_kernel(s, 0xffffffffc0a01080, &module), "ext4_iget");
        CHECK_STR_EQ(module, "ext4");
        CHECK_STR_EQ(symbolizer_lookup_kernel(s, 0xffffffffc0b00004, &module), "xfs_bmap");
        CHECK_STR_EQ(module, "xfs");
        /* Far past the last symbol is not that symbol. */
        CHECK(!symbolizer_lookup_kernel(s, 0xffffffffc0b00000 + 2 * 1024 * 1024, &module));
        CHECK(!module);

        /* Hidden addresses (not root) are refused and the old table stays. */
        CHECK_INT_EQ(symbolizer_load_kallsyms(s, hidden_path), -ENODATA);
        CHECK_INT_EQ(symbolizer_load_kallsyms(s, missing), -ENOENT);
        CHECK_STR_EQ(symbolizer_lookup_kernel(s, 0xffffffff81000150, &module), "do_one_initcall");

        CHECK_INT_EQ(symbolizer_load_kallsyms(s, replacement_path), 0);
        CHECK(!symbolizer_lookup_kernel(s, 0xffffffff81000150, &module));
        CHECK_STR_EQ(symbolizer_lookup_kernel(s, 0xffffffff82000040, &module), "schedule");
        CHECK(!module);

        /* Named symbols of the image: data too, never a module's. */
        {
                static const char *const names[] = { "some_data", "ext4_iget", "weak_hook", "absent", "_stext" };
                uint64_t addrs[ELEMENTSOF(names)];

                CHECK_INT_EQ(kallsyms_find(path, names, ELEMENTSOF(names), addrs), 0);
                CHECK(addrs[0] == 0xffffffff81000180);
                CHECK(addrs[1] == 0);
                CHECK(addrs[2] == 0xffffffff81000200);
                CHECK(addrs[3] == 0);
                CHECK(addrs[4] == 0xffffffff81000000);
                CHECK_INT_EQ(kallsyms_find(hidden_path, names, ELEMENTSOF(names), addrs), -ENODATA);
                CHECK(addrs[4] == 0);
                CHECK_INT_EQ(kallsyms_find(missing, names, ELEMENTSOF(names), addrs), -ENOENT);
        }
        /* Their ends: the next higher address of the image's (an alias at
         * the same address is no end; a module's symbol is none; the last
         * has none) */
        {
                static const char *const names[] = { "_stext", "do_one_initcall", "weak_hook", "ext4_iget" };
                uint64_t addrs[ELEMENTSOF(names)], ends[ELEMENTSOF(names)];

                CHECK_INT_EQ(kallsyms_find_ranges(path, names, ELEMENTSOF(names), addrs, ends), 0);
                CHECK(addrs[0] == 0xffffffff81000000 && ends[0] == 0xffffffff81000100);
                CHECK(addrs[1] == 0xffffffff81000100 && ends[1] == 0xffffffff81000180);
                CHECK(addrs[2] == 0xffffffff81000200 && ends[2] == 0);
                CHECK(addrs[3] == 0 && ends[3] == 0);
        }
}

/* Every lookup of test_kallsyms's first table, wherever the table is. */
static void check_kernel_lookups(struct kernel_table *t) {
        const char *module = "unset";

        CHECK_STR_EQ(kernel_table_lookup(t, 0xffffffff81000150, &module), "do_one_initcall");
        CHECK(!module);
        CHECK_STR_EQ(kernel_table_lookup(t, 0xffffffff81000010, &module), "startup_64");
        CHECK_STR_EQ(kernel_table_lookup(t, 0xffffffffc0a01080, &module), "ext4_iget");
        CHECK_STR_EQ(module, "ext4");
        CHECK_STR_EQ(kernel_table_lookup(t, 0xffffffffc0b00004, &module), "xfs_bmap");
        CHECK_STR_EQ(module, "xfs");
        CHECK(!kernel_table_lookup(t, 0xffffffff80ffffff, &module));
}

/* A table of several index blocks, written in reverse order, with aliases
 * on the blocks' edges that lose by their type (local against global) or
 * by a leading underscore: every address finds its own symbol, in the heap
 * and mapped. */
static void check_kernel_blocks(struct kernel_table *t, size_t n, uint64_t base) {
        const char *module = "unset";
        char want[32];

        CHECK(!kernel_table_lookup(t, base - 1, &module));
        for (size_t i = 0; i < n; i++) {
                snprintf(want, sizeof(want), "fn_%04zu", i);
                CHECK_STR_EQ(kernel_table_lookup(t, base + 0x40 * i, &module), want);
                CHECK_STR_EQ(kernel_table_lookup(t, base + 0x40 * i + 0x3f, &module), want);
                if (i < n / 2)
                        CHECK(!module);
                else
                        CHECK_STR_EQ(module, "mod");
        }
}

/* Which frames the table still names after kernel code came or went: the
 * image's text, [_stext, _etext), and the ranges given (profd's own
 * programs); not a module, nor another program's code. */
static void test_kernel_covers(void) {
        static const char table[] =
                "ffffffff81000000 T _stext\n"
                "ffffffff81000100 t do_one_initcall\n"
                "ffffffff82000000 T _etext\n"
                "ffffffff82000040 D after_text\n"
                "ffffffffc0001000 t bpf_prog_0123456789abcdef_profd_waking\t[bpf]\n"
                "ffffffffc0003000 t bpf_prog_fedcba9876543210_other\t[bpf]\n"
                "ffffffffc0a01000 t ext4_fill_super\t[ext4]\n";
        static const char no_etext[] = "ffffffff81000000 T _stext\nffffffff81000100 t do_one_initcall\n";
        struct kernel_range own[] = { { 0xffffffffc0002000, 0xffffffffc0002100 },
                                      { 0xffffffffc0001000, 0xffffffffc0001400 } };
        _cleanup_free_ char *path = tmp_path("kallsyms-covers"), *path2 = tmp_path("kallsyms-no-etext");
        struct kernel_table t = {};

        write_file(path, table, strlen(table));
        write_file(path2, no_etext, strlen(no_etext));
        /* nothing read: only the ranges given */
        CHECK(!kernel_table_covers(&t, NULL, 0, 0xffffffff81000100));
        kernel_ranges_sort(own, ELEMENTSOF(own));
        CHECK(own[0].start == 0xffffffffc0001000);
        CHECK(kernel_table_covers(&t, own, ELEMENTSOF(own), 0xffffffffc0001000));

        CHECK_INT_EQ(kernel_table_load(&t, path), 0);
        CHECK(t.text.start == 0xffffffff81000000 && t.text.end == 0xffffffff82000000);
        CHECK(kernel_table_covers(&t, NULL, 0, 0xffffffff81000000));
        CHECK(kernel_table_covers(&t, NULL, 0, 0xffffffff81ffffff));
        CHECK(!kernel_table_covers(&t, NULL, 0, 0xffffffff82000000));
        CHECK(!kernel_table_covers(&t, NULL, 0, 0xffffffff80ffffff));
        /* a module's code may have come since, as may any program's */
        CHECK(!kernel_table_covers(&t, own, ELEMENTSOF(own), 0xffffffffc0a01010));
        CHECK(!kernel_table_covers(&t, own, ELEMENTSOF(own), 0xffffffffc0003010));
        /* profd's own, to the end of each range, not past it */
        CHECK(kernel_table_covers(&t, own, ELEMENTSOF(own), 0xffffffffc0001000));
        CHECK(kernel_table_covers(&t, own, ELEMENTSOF(own), 0xffffffffc00013ff));
        CHECK(!kernel_table_covers(&t, own, ELEMENTSOF(own), 0xffffffffc0001400));
        CHECK(kernel_table_covers(&t, own, ELEMENTSOF(own), 0xffffffffc0002080));
        CHECK(!kernel_table_covers(&t, own, ELEMENTSOF(own), 0xffffffffc0002100));
        CHECK(!kernel_table_covers(&t, own, ELEMENTSOF(own), 0xffffffffc0000fff));
        /* the text's bounds kept when the table is mapped (unless the
         * disk has no room: then it stays in the heap) */
        if (kernel_table_map(&t, tmpdir) != -ENOSPC)
                CHECK(t.map);
        CHECK(kernel_table_covers(&t, NULL, 0, 0xffffffff81000100));

        /* a file without _etext: no text known, every frame asks */
        CHECK_INT_EQ(kernel_table_load(&t, path2), 0);
        CHECK(!kernel_table_covers(&t, NULL, 0, 0xffffffff81000100));
        kernel_table_done(&t);
}

static void test_kallsyms_blocks(void) {
        enum { N = 1000 };
        const uint64_t base = 0xffffffff81000000;
        _cleanup_free_ char *path = tmp_path("kallsyms-blocks"), *text = NULL;
        struct kernel_table t = {};
        size_t len = 0, allocated = 0;
        int r;

        for (size_t j = N; j-- > 0;) {
                char line[128];
                int n = 0;

                if (j % 256 == 0 || j % 256 == 255)
                        n += snprintf(line + n, sizeof(line) - (size_t) n, "%016" PRIx64 " t alias_%zu%s\n"
                                      "%016" PRIx64 " T __under_%zu%s\n",
                                      base + 0x40 * j, j, j < N / 2 ? "" : "\t[mod]",
                                      base + 0x40 * j, j, j < N / 2 ? "" : "\t[mod]");
                n += snprintf(line + n, sizeof(line) - (size_t) n, "%016" PRIx64 " T fn_%04zu%s\n",
                              base + 0x40 * j, j, j < N / 2 ? "" : "\t[mod]");
                CHECK_INT_EQ(array_grow((void **) &text, &allocated, len + (size_t) n + 1, 1), 0);
                memcpy(text + len, line, (size_t) n + 1);
                len += (size_t) n;
        }
        write_file(path, text, len);
        CHECK_INT_EQ(kernel_table_load(&t, path), 0);
        CHECK_INT_EQ(t.n_syms, N);
        check_kernel_blocks(&t, N, base);
        /* answered again from the memo, which starts over when full */
        check_kernel_blocks(&t, N, base);
        for (size_t j = 0; j < KERNEL_MEMO_MAX + 10; j++) {
                const char *module = "unset";
                char want[32];

                snprintf(want, sizeof(want), "fn_%04zu", (size_t) (j / 0x40));
                CHECK_STR_EQ(kernel_table_lookup(&t, base + j, &module), want);
                CHECK(hashmap_size(t.memo) <= KERNEL_MEMO_MAX);
        }
        CHECK(hashmap_bytes(t.memo) > 0 && kernel_table_bytes(&t) > hashmap_bytes(t.memo));
        check_kernel_blocks(&t, N, base);
        r = kernel_table_map(&t, tmpdir);
        if (r != -ENOSPC) {
                CHECK_INT_EQ(r, 0);
                /* the memo's answers, from before it was mapped, hold */
                check_kernel_blocks(&t, N, base);
        }
        kernel_table_done(&t);
}

/* A table's heap without its memo, which lookups fill. */
static uint64_t kernel_table_own_bytes(const struct kernel_table *t) {
        return kernel_table_bytes(t) - hashmap_bytes(t->memo);
}

/* The table moved out of the heap into a mapped private file and back
 * (the store's disk full) answers the same; a directory that cannot hold
 * it leaves it whole in the heap. */
static void test_kallsyms_mapped(void) {
        static const char table[] =
                "ffffffff81000000 T _stext\n"
                "ffffffff81000000 T startup_64\n"
                "ffffffff81000100 t do_one_initcall\n"
                "ffffffffc0a01000 t ext4_fill_super\t[ext4]\n"
                "ffffffffc0a01080 T ext4_iget\t[ext4]\n"
                "ffffffffc0b00000 t xfs_bmap\t[xfs]\n";
        _cleanup_free_ char *path = tmp_path("kallsyms-mapped"), *missing_dir = tmp_path("no-such-dir");
        struct kernel_table t = {};
        uint64_t heap, index;
        int r;

        write_file(path, table, strlen(table));
        CHECK_INT_EQ(kernel_table_load(&t, path), 0);
        heap = kernel_table_own_bytes(&t);
        CHECK(heap > 0);
        CHECK_INT_EQ(kernel_table_mapped_bytes(&t), 0);

        CHECK(kernel_table_map(&t, missing_dir) < 0);
        CHECK_INT_EQ(kernel_table_own_bytes(&t), heap);
        check_kernel_lookups(&t);

        r = kernel_table_map(&t, tmpdir);
        if (r == -ENOSPC) {
                fprintf(stderr, "test_kallsyms_mapped: %s has no room to keep free; the mapping was not tried\n",
                        tmpdir);
                kernel_table_done(&t);
                return;
        }
        CHECK_INT_EQ(r, 0);
        index = kernel_table_own_bytes(&t); /* the lookup index stays in the heap */
        CHECK(index > 0 && index < heap);
        CHECK_INT_EQ(kernel_table_mapped_bytes(&t), heap - index);
        check_kernel_lookups(&t);
        kernel_table_drop_pages(&t); /* faulted in again from the file */
        check_kernel_lookups(&t);
        CHECK_INT_EQ(kernel_table_map(&t, tmpdir), 0); /* already mapped */

        CHECK_INT_EQ(kernel_table_unmap(&t), (int64_t) (heap - index));
        CHECK_INT_EQ(kernel_table_own_bytes(&t), heap);
        CHECK_INT_EQ(kernel_table_mapped_bytes(&t), 0);
        check_kernel_lookups(&t);
        CHECK_INT_EQ(kernel_table_unmap(&t), 0);

        /* through the symbolizer: mapped at load when it has a scratch dir */
        {
                _cleanup_(symbolizer_freep) symbolizer *s = NULL;
                const char *module = NULL;

                CHECK_INT_EQ(symbolizer_new(&s), 0);
                CHECK_INT_EQ(symbolizer_set_scratch_dir(s, tmpdir), 0);
                CHECK_INT_EQ(symbolizer_load_kallsyms(s, path), 0);
                CHECK_INT_EQ(symbolizer_mapped_bytes(s), heap - index);
                CHECK_STR_EQ(symbolizer_lookup_kernel(s, 0xffffffffc0a01010, &module), "ext4_fill_super");
                CHECK_STR_EQ(module, "ext4");
                CHECK_INT_EQ(symbolizer_release_copies(s), (int64_t) (heap - index));
                CHECK_INT_EQ(symbolizer_mapped_bytes(s), 0);
                CHECK_STR_EQ(symbolizer_lookup_kernel(s, 0xffffffffc0a01010, &module), "ext4_fill_super");
        }
        kernel_table_done(&t);
}

static void test_errors(const char *full_path) {
        _cleanup_(symbolizer_freep) symbolizer *s = NULL;
        _cleanup_free_ char *missing = tmp_path("missing"), *text = tmp_path("not-elf"),
                            *empty = tmp_path("empty"), *truncated = tmp_path("truncated.so"),
                            *bare = tmp_path("bare-header");
        _cleanup_free_ unsigned char *fixture = NULL;
        const sym_file *f = NULL;
        size_t size = 0;
        Elf64_Ehdr ehdr = {
                .e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
                             __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB,
                             EV_CURRENT },
                .e_type = ET_EXEC,
                .e_machine = EM_X86_64,
                .e_version = EV_CURRENT,
                .e_ehsize = sizeof(Elf64_Ehdr),
        };

        CHECK_INT_EQ(symbolizer_new(&s), 0);
        CHECK_INT_EQ(symbolizer_load_file(s, missing, &f), -ENOENT);
        write_file(text, "#!/bin/sh\necho not elf\n", 23);
        CHECK_INT_EQ(symbolizer_load_file(s, text, &f), -ENOEXEC);
        write_file(empty, "", 0);
        CHECK_INT_EQ(symbolizer_load_file(s, empty, &f), -ENOEXEC);
        CHECK_INT_EQ(symbolizer_load_file(s, tmpdir, &f), -EISDIR);

        /* A valid header whose section headers lie beyond the end of file. */
        fixture = read_file(full_path, &size);
        if (fixture && size > sizeof(Elf64_Ehdr)) {
                write_file(truncated, fixture, sizeof(Elf64_Ehdr));
                CHECK_INT_EQ(symbolizer_load_file(s, truncated, &f), -ENOEXEC);
        }

        /* ELF without sections, segments or notes: loads, resolves nothing. */
        f = NULL;
        write_file(bare, &ehdr, sizeof(ehdr));
        CHECK_INT_EQ(symbolizer_load_file(s, bare, &f), 0);
        CHECK(f);
        CHECK(!sym_file_build_id(f));
        CHECK(!sym_file_lookup(f, 0));
        CHECK(!sym_file_lookup(f, 64));
}

/* Corrupts random bytes of the unstripped fixture many times over: every load
 * must come back with 0 or -ENOEXEC, and valgrind sees no bad access. */
static void test_corrupted_files_never_crash(const char *full_path) {
        _cleanup_free_ unsigned char *orig = NULL, *buf = NULL;
        uint64_t rng = 0x9e3779b97f4a7c15ULL; /* fixed seed: failures reproduce */
        size_t size = 0;
        int bad = 0;

        orig = read_file(full_path, &size);
        buf = malloc(size ? size : 1);
        if (!orig || !buf)
                return;
        for (int round = 0; round < 200; round++) {
                _cleanup_(symbolizer_freep) symbolizer *s = NULL;
                _cleanup_free_ char *path = NULL;
                const sym_file *f = NULL;
                int r;

                if (asprintf(&path, "%s/corrupt-%d.so", tmpdir, round) < 0)
                        abort();
                memcpy(buf, orig, size);
                /* Keep the ELF magic most of the time, so the parser goes deep. */
                for (int k = 0; k < 24; k++) {
                        size_t pos;

                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        pos = (size_t) (rng % size);
                        if (pos >= 4 || round % 10 == 0)
                                buf[pos] ^= (unsigned char) (rng >> 32 | 1);
                }
                write_file(path, buf, size);
                if (symbolizer_new(&s) < 0)
                        abort();
                r = symbolizer_load_file(s, path, &f);
                if (r != 0 && r != -ENOEXEC)
                        bad++;
                if (r == 0)
                        for (uint64_t off = 0; off < size; off += 61)
                                (void) sym_file_lookup(f, off);
                unlink(path);
        }
        CHECK_INT_EQ(bad, 0);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        remove(path);
        return 0;
}

int main(int argc, char *argv[]) {
        _cleanup_free_ char *full_path = NULL, *stripped_path = NULL;
        struct fixture stripped = {}, full = {};

        if (argc != 3) {
                fprintf(stderr, "usage: %s UNSTRIPPED-FIXTURE STRIPPED-FIXTURE\n", argv[0]);
                return 2;
        }
        /* meson passes paths relative to the build dir; symlinks made in the
         * temp dir need absolute targets. */
        full_path = realpath(argv[1], NULL);
        stripped_path = realpath(argv[2], NULL);
        if (!full_path || !stripped_path) {
                perror("realpath");
                return 1;
        }
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }

        /* Keep the test functions and aliases referenced. */
        CHECK(test_static_function(argc) != 0 || test_global_function(argc) != 0 ||
              __test_global_alias(0) != 0 || test_weak_alias(0) != 0);

        test_own_functions_resolve_by_name();
        if (fixture_open(stripped_path, &stripped) && fixture_open(full_path, &full)) {
                test_stripped_library_resolves_exports_only(&stripped, &full, stripped_path, full_path);
                test_build_id_matches_loader_and_dedups(&stripped, stripped_path, full_path);
                test_cache_survives_deletion(&stripped, stripped_path);
                test_load_through_fd(&stripped, stripped_path);
                test_unmapped_files_close_dwarf(&full, full_path);
        }
        test_unmapped_files_evicted(full_path);
        test_func_table_pack();
        test_func_names_mapped();
        test_names_mapped_in_symbolizer();
        test_kallsyms();
        test_kallsyms_mapped();
        test_kallsyms_blocks();
        test_kernel_covers();
        test_errors(full_path);
        test_corrupted_files_never_crash(full_path);

        if (stripped.handle)
                dlclose(stripped.handle);
        if (full.handle)
                dlclose(full.handle);
        nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        TESTS_DONE();
}

#endif
