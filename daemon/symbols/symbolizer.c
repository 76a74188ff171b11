/* Addresses to functions: ELF symbols, DWARF (inlines, file:line, debug files), kallsyms; one bounded file cache. */
#include "symbolizer.h"

#include <dwarf.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bsearch.h"
#include "hashmap.h"
#include "helpers.h"
#include "kallsyms.h"
#include "macro.h"

/* Last: libiberty.h (which demangle.h includes) redefines basename and
 * declares helpers of its own, so nothing after it may rely on libc's. */
#include <libiberty/demangle.h>

/* Enough for the DWARF of a few large programs (a browser's is ~1 GiB, but
 * profiled daemons are mostly 1-50 MiB) plus the symbol tables of every
 * library of a busy host (a few hundred KiB each). */
#define CACHE_BUDGET_DEFAULT (UINT64_C(256) << 20)

/* What a cached file costs beyond the arrays counted exactly: the struct,
 * its hashmaps' first tables, libelf's and the kernel's per-open-file state. */
#define FILE_OVERHEAD_BYTES 4096

/* What libdw holds per line-table row once it read a CU's line program
 * (Dwarf_Line, the file list, the sorted copy), measured with mallinfo2 on
 * libc's debug file (67 bytes) and the C++ test fixture (82 bytes). The
 * section data itself is counted exactly; this is most of the rest. */
#define DWARF_LINE_BYTES 80

/* A hash slot (24 bytes) at the map's 3/4 load factor, rounded up. */
#define HASH_ENTRY_BYTES 32

/* gnu_debuglink files are read whole for their CRC; this much at a time. */
#define CRC_CHUNK_BYTES (UINT64_C(1) << 16)

struct func_sym {
        uint64_t start;
        uint64_t size; /* 0 for symbols without a size (hand-written assembly) */
        const char *name; /* points into func_table.names */
        /* The alias libdwfl (eu-addr2line) names this address with, which
         * sym_file_resolve follows: the best bound, then the smallest, then
         * the first in the table. Also into names, often == name. */
        const char *dwfl_name;
};

/* Which symbol table a function table came from, best last. */
enum symtab_kind {
        SYMTAB_NONE,
        SYMTAB_DYNSYM,
        SYMTAB_FULL,
};

struct func_table {
        struct func_sym *syms; /* sorted by start, starts unique */
        size_t n_syms;
        char *names; /* one allocation for every name, so the Elf can be closed */
        size_t names_len;
        enum symtab_kind kind;
};

/* A PT_LOAD program header: how file offsets map to virtual addresses. */
struct load_segment {
        uint64_t offset;
        uint64_t vaddr;
        uint64_t filesz;
};

/* Identity of a file's contents as far as stat can tell; every field is
 * 64-bit so the struct has no padding and can be hashed as bytes. */
struct file_key {
        uint64_t dev;
        uint64_t ino;
        uint64_t size;
        uint64_t mtime_sec;
        uint64_t mtime_nsec;
};

/* A run of address ranges that belong to one CU, as libdwfl (and so
 * eu-addr2line) groups .debug_aranges: the gaps inside a run, and up to the
 * next run, count as part of it. */
struct cu_run {
        uint64_t start;
        Dwarf_Off cu_offset;
        Dwarf_Die die; /* valid once has_die */
        bool has_die;
};

/* A resolved address: its frame chain, innermost first (n_frames 0:
 * unresolved, remembered so that asking again is cheap too). */
struct resolved {
        size_t n_frames;
        struct sym_frame frames[];
};

/* The DIEs of one CU that code addresses can fall in, as a tree: what
 * dwarf_getscopes searches, built once per CU instead of walking every DIE
 * of the CU for each address (which made C++ CUs, with thousands of DIEs,
 * resolve at a few hundred addresses per second). */
#define NO_NODE UINT32_MAX
/* DIE nesting deeper than this (real code stays under a few hundred: deep
 * template inlining) is not followed, so crafted DWARF cannot exhaust the
 * stack of the recursive walk. */
#define SCOPE_DEPTH_MAX 1024

struct scope_node {
        Dwarf_Die die;
        uint32_t parent; /* NO_NODE for a child of the CU */
        uint32_t first_child;
        uint32_t next_sibling;
        uint32_t first_range; /* into cu_scopes.ranges */
        uint32_t n_ranges;
};

struct pc_range {
        uint64_t lo, hi; /* [lo, hi) */
};

/* A range of a child of the CU, for binary search: there are thousands. */
struct top_range {
        uint64_t lo, hi;
        uint32_t node;
};

struct cu_scopes {
        struct scope_node *nodes; /* in DIE order (preorder) */
        size_t n_nodes, nodes_allocated;
        struct pc_range *ranges;
        size_t n_ranges, ranges_allocated;
        struct top_range *top; /* sorted by lo */
        uint64_t *top_max_hi; /* the largest hi of top[0..i] */
        size_t n_top;
};

static struct cu_scopes *cu_scopes_free(struct cu_scopes *c) {
        if (c) {
                free(c->nodes);
                free(c->ranges);
                free(c->top);
                free(c->top_max_hi);
                free(c);
        }
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct cu_scopes *, cu_scopes_free);

struct sym_file {
        symbolizer *owner;
        uint64_t last_used; /* owner->tick when last loaded, looked up or resolved */

        char *build_id;
        struct load_segment *segments;
        size_t n_segments;
        struct func_table funcs;

        /* The stat keys that lead here (owned, also the keys in owner->by_stat). */
        struct file_key **keys;
        size_t n_keys;
        size_t n_keys_allocated;

        /* DWARF: found at load, opened at the first resolve. The fd stays
         * open while the file is cached, so a debug file or binary deleted
         * or replaced after loading still resolves. */
        int dwarf_fd;
        char *debug_path;
        Elf *dwarf_elf;
        Dwarf *dwarf;
        bool dwarf_failed; /* opening it failed: symbol tables only */
        struct cu_run *cu_runs; /* sorted by start */
        size_t n_cu_runs;
        uint64_t cu_runs_end; /* end of the last arange */

        hashmap *resolved; /* vaddr -> struct resolved * (or &unresolved) */
        hashmap *demangled; /* raw name pointer -> demangled copy (or the raw name itself) */
        hashmap *paths; /* libdw's file name pointer -> name with the CU's comp_dir (or itself) */
        hashmap *cu_scopes; /* CU DIE offset -> struct cu_scopes * */

        uint64_t base_bytes; /* struct, tables, names, keys, paths */
        uint64_t dwarf_bytes; /* section data and libdw tables of the open Dwarf */
        uint64_t cache_bytes; /* resolved addresses, demangled names, joined paths */
};

struct symbolizer {
        hashmap *by_stat; /* struct file_key * (owned by the file) -> sym_file * */
        hashmap *by_build_id; /* sym_file.build_id -> sym_file * */
        sym_file **files; /* owns every sym_file exactly once; the maps may alias one file */
        size_t n_files;
        size_t n_files_allocated;
        char **debug_dirs; /* NULL-terminated */
        uint64_t budget;
        uint64_t tick; /* LRU clock */
        uint64_t generation; /* bumped by every trim that evicted a file */
        struct kernel_table kernel;
        debuginfod_client *debuginfod; /* NULL: not configured */
        hashmap *debuginfod_missed;    /* build-id hex (owned) -> itself: asked, not found */
};

/* The cached answer for addresses nothing covers. */
static struct resolved unresolved;

static uint64_t file_key_hash(const void *k) {
        return hash_bytes(k, sizeof(struct file_key));
}

static bool file_key_eq(const void *a, const void *b) {
        return memcmp(a, b, sizeof(struct file_key)) == 0;
}

static struct file_key file_key_from_stat(const struct stat *st) {
        return (struct file_key) {
                .dev = (uint64_t) st->st_dev,
                .ino = (uint64_t) st->st_ino,
                .size = (uint64_t) st->st_size,
                .mtime_sec = (uint64_t) st->st_mtim.tv_sec,
                .mtime_nsec = (uint64_t) st->st_mtim.tv_nsec,
        };
}

static void func_table_done(struct func_table *t) {
        free(t->syms);
        free(t->names);
        *t = (struct func_table) {};
}

static sym_file *sym_file_free(sym_file *f) {
        const void *key;
        void *value;
        size_t state = 0;

        if (!f)
                return NULL;
        if (f->resolved)
                while (hashmap_iterate(f->resolved, &state, NULL, &value))
                        if (value != &unresolved)
                                free(value);
        hashmap_free(f->resolved);
        state = 0;
        if (f->demangled)
                while (hashmap_iterate(f->demangled, &state, &key, &value))
                        if (value != key)
                                free(value);
        hashmap_free(f->demangled);
        state = 0;
        if (f->paths)
                while (hashmap_iterate(f->paths, &state, &key, &value))
                        if (value != key)
                                free(value);
        hashmap_free(f->paths);
        state = 0;
        if (f->cu_scopes)
                while (hashmap_iterate(f->cu_scopes, &state, NULL, &value))
                        cu_scopes_free(value);
        hashmap_free(f->cu_scopes);
        /* libdw's strings and line tables go with it, after our copies of
         * pointers into them above. */
        if (f->dwarf)
                dwarf_end(f->dwarf);
        if (f->dwarf_elf)
                elf_end(f->dwarf_elf);
        safe_close(f->dwarf_fd);
        free(f->cu_runs);
        free(f->debug_path);
        for (size_t i = 0; i < f->n_keys; i++)
                free(f->keys[i]);
        free(f->keys);
        free(f->build_id);
        free(f->segments);
        func_table_done(&f->funcs);
        free(f);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(sym_file *, sym_file_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(Elf *, elf_end);

static char **strv_free(char **v) {
        if (v)
                for (char **p = v; *p; p++)
                        free(*p);
        free(v);
        return NULL;
}

/* Returns a deep copy of the NULL-terminated list, or NULL on OOM. */
static char **strv_copy(const char *const *v) {
        size_t n = 0;
        char **copy;

        while (v[n])
                n++;
        copy = calloc(n + 1, sizeof(*copy));
        if (!copy)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                copy[i] = strdup(v[i]);
                if (!copy[i])
                        return strv_free(copy);
        }
        return copy;
}

int symbolizer_new(symbolizer **ret) {
        static const char *const default_debug_dirs[] = { "/usr/lib/debug", NULL };
        symbolizer *s;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->budget = CACHE_BUDGET_DEFAULT;
        s->by_stat = hashmap_new(file_key_hash, file_key_eq);
        s->by_build_id = hashmap_new_string();
        s->debug_dirs = strv_copy(default_debug_dirs);
        if (!s->by_stat || !s->by_build_id || !s->debug_dirs) {
                symbolizer_free(s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

symbolizer *symbolizer_free(symbolizer *s) {
        if (!s)
                return NULL;
        hashmap_free(s->by_stat); /* its keys belong to the files */
        hashmap_free(s->by_build_id); /* and so do these */
        for (size_t i = 0; i < s->n_files; i++)
                sym_file_free(s->files[i]);
        free(s->files);
        strv_free(s->debug_dirs);
        kernel_table_done(&s->kernel);
        if (s->debuginfod)
                debuginfod_end(s->debuginfod);
        hashmap_free_with_keys(s->debuginfod_missed);
        free(s);
        return NULL;
}

int symbolizer_enable_debuginfod(symbolizer *s) {
        if (s->debuginfod)
                return 0;
        s->debuginfod_missed = hashmap_new_string();
        if (!s->debuginfod_missed)
                return -ENOMEM;
        s->debuginfod = debuginfod_begin();
        if (!s->debuginfod) {
                s->debuginfod_missed = hashmap_free(s->debuginfod_missed);
                return -ENOMEM;
        }
        return 0;
}

int symbolizer_set_debug_dirs(symbolizer *s, const char *const *dirs) {
        static const char *const none[] = { NULL };
        char **copy = strv_copy(dirs ? dirs : none);

        if (!copy)
                return -ENOMEM;
        strv_free(s->debug_dirs);
        s->debug_dirs = copy;
        return 0;
}

void symbolizer_set_cache_budget(symbolizer *s, uint64_t bytes) {
        s->budget = bytes;
}

uint64_t symbolizer_generation(const symbolizer *s) {
        return s->generation;
}

const char *sym_file_build_id(const sym_file *f) {
        return f ? f->build_id : NULL;
}

/* Marks f as just used, for the LRU order. f is const to callers that only
 * read it; the clock is the one thing that changes. */
static void sym_file_touch(const sym_file *f) {
        sym_file *m = (sym_file *) f;

        m->last_used = ++m->owner->tick;
}

/* Returns 0 when the program and section header tables the ELF header
 * promises can be read, else -ENOEXEC: such a file is truncated (maybe still
 * being written) and should not be cached as a file without symbols. */
static int elf_check_headers(Elf *e, const GElf_Ehdr *ehdr) {
        size_t n;

        if (elf_getphdrnum(e, &n) < 0)
                return -ENOEXEC;
        for (size_t i = 0; i < n; i++) {
                GElf_Phdr phdr;

                if (!gelf_getphdr(e, (int) i, &phdr))
                        return -ENOEXEC;
        }
        /* libelf reports no sections when the table lies past the end. */
        if (elf_getshdrnum(e, &n) < 0 || (n == 0 && ehdr->e_shoff != 0))
                return -ENOEXEC;
        return 0;
}

/* Returns 1 and the build-id as hex if one of the notes in data is
 * NT_GNU_BUILD_ID, 0 if none is, -ENOMEM. gelf_getnote checks every note
 * against the data size, so a malformed note just ends the walk. */
static int notes_find_build_id(Elf_Data *data, char **ret) {
        static const char hex[] = "0123456789abcdef";
        size_t offset = 0, next, name_off, desc_off;
        GElf_Nhdr nhdr;

        while (offset < data->d_size &&
               (next = gelf_getnote(data, offset, &nhdr, &name_off, &desc_off)) > 0) {
                const unsigned char *desc = (const unsigned char *) data->d_buf + desc_off;
                char *s;

                offset = next;
                if (nhdr.n_type != NT_GNU_BUILD_ID || nhdr.n_descsz == 0 ||
                    nhdr.n_namesz != sizeof(ELF_NOTE_GNU) ||
                    memcmp((const char *) data->d_buf + name_off, ELF_NOTE_GNU, sizeof(ELF_NOTE_GNU)) != 0)
                        continue;

                s = malloc((size_t) nhdr.n_descsz * 2 + 1);
                if (!s)
                        return -ENOMEM;
                for (size_t i = 0; i < nhdr.n_descsz; i++) {
                        s[2 * i] = hex[desc[i] >> 4];
                        s[2 * i + 1] = hex[desc[i] & 0xf];
                }
                s[nhdr.n_descsz * 2] = '\0';
                *ret = s;
                return 1;
        }
        return 0;
}

/* Looks in SHT_NOTE sections first and falls back to PT_NOTE segments, which
 * survive even when the section headers were stripped. Sets *ret to NULL when
 * there is no build-id. Returns 0 or -ENOMEM. */
static int elf_read_build_id(Elf *e, char **ret) {
        Elf_Scn *scn = NULL;
        size_t n_phdrs;
        int r;

        *ret = NULL;
        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr shdr;
                Elf_Data *data;

                if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
                        continue;
                data = elf_getdata(scn, NULL);
                if (!data || !data->d_buf)
                        continue;
                r = notes_find_build_id(data, ret);
                if (r < 0)
                        return r;
                if (r > 0)
                        return 0;
        }

        if (elf_getphdrnum(e, &n_phdrs) < 0)
                return 0;
        for (size_t i = 0; i < n_phdrs; i++) {
                GElf_Phdr phdr;
                Elf_Data *data;

                if (!gelf_getphdr(e, (int) i, &phdr) || phdr.p_type != PT_NOTE)
                        continue;
                /* Notes aligned to 8 (GNU properties) pad names and descriptors to 8. */
                data = elf_getdata_rawchunk(e, (int64_t) phdr.p_offset, phdr.p_filesz,
                                            phdr.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
                if (!data || !data->d_buf)
                        continue;
                r = notes_find_build_id(data, ret);
                if (r < 0)
                        return r;
                if (r > 0)
                        return 0;
        }
        return 0;
}

/* Returns 0 or -ENOMEM. Segments without file contents (.bss only) are left
 * out: no file offset can point into them. */
static int elf_read_segments(Elf *e, sym_file *f) {
        size_t n_phdrs, allocated = 0;

        if (elf_getphdrnum(e, &n_phdrs) < 0)
                return 0;
        for (size_t i = 0; i < n_phdrs; i++) {
                GElf_Phdr phdr;
                int r;

                if (!gelf_getphdr(e, (int) i, &phdr) || phdr.p_type != PT_LOAD || phdr.p_filesz == 0)
                        continue;
                r = array_grow((void **) &f->segments, &allocated, f->n_segments + 1, sizeof(*f->segments));
                if (r < 0)
                        return r;
                f->segments[f->n_segments++] = (struct load_segment) {
                        .offset = phdr.p_offset,
                        .vaddr = phdr.p_vaddr,
                        .filesz = phdr.p_filesz,
                };
        }
        return 0;
}

/* A function symbol while the Elf is still open: name points into libelf's
 * copy of the string table. */
struct raw_sym {
        uint64_t start;
        uint64_t size;
        const char *name;
        int rank;
        size_t index; /* in its symbol table */
        int dwfl_rank; /* libdwfl's order: global part first, then GLOBAL over WEAK, lower is better */
};

/* libdwfl searches the global part of a table (after sh_info) first and
 * only then the locals, and within a part prefers GLOBAL to WEAK to the
 * rest (dwfl_module_addrsym.c). */
static int dwfl_binding_rank(unsigned char bind) {
        switch (bind) {
        case STB_GLOBAL:
                return 0;
        case STB_WEAK:
                return 1;
        case STB_LOCAL:
                return 3;
        default:
                return 2;
        }
}

/* Whether alias a is libdwfl's better pick than b at the same address:
 * better bound, else sized and smaller, else earlier in the table. */
static bool raw_sym_dwfl_better(const struct raw_sym *a, const struct raw_sym *b) {
        if (a->dwfl_rank != b->dwfl_rank)
                return a->dwfl_rank < b->dwfl_rank;
        if ((a->size == 0) != (b->size == 0))
                return a->size != 0;
        if (a->size != b->size)
                return a->size < b->size;
        return a->index < b->index;
}

static int binding_rank(unsigned char bind) {
        switch (bind) {
        case STB_GLOBAL:
        case STB_GNU_UNIQUE:
                return 0;
        case STB_WEAK:
                return 1;
        default:
                return 2;
        }
}

/* Orders by address, and at equal addresses puts the alias to keep first:
 * global over weak over local, then a name without a leading underscore
 * (memcpy over __memcpy), then by name, so the choice does not depend on the
 * symbol table's order. */
static int raw_sym_compare(const void *a, const void *b) {
        const struct raw_sym *x = a, *y = b;
        int ux, uy;

        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        if (x->rank != y->rank)
                return x->rank < y->rank ? -1 : 1;
        ux = x->name[0] == '_';
        uy = y->name[0] == '_';
        if (ux != uy)
                return ux - uy;
        return strcmp(x->name, y->name);
}

/* Appends the defined, named, nonzero function symbols of one symbol table.
 * Returns 0 or -ENOMEM; an unreadable table adds nothing. */
static int symtab_collect(Elf *e, Elf_Scn *scn, const GElf_Shdr *shdr,
                          struct raw_sym **syms, size_t *n_syms, size_t *allocated) {
        size_t entsize = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
        Elf_Data *data;

        data = elf_getdata(scn, NULL);
        if (!data || !data->d_buf || entsize == 0)
                return 0;

        for (size_t i = 0; i < data->d_size / entsize; i++) {
                unsigned char type;
                const char *name;
                GElf_Sym sym;
                int r;

                if (!gelf_getsym(data, (int) i, &sym))
                        continue;
                type = GELF_ST_TYPE(sym.st_info);
                if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_value == 0 ||
                    sym.st_shndx == SHN_UNDEF)
                        continue;
                name = elf_strptr(e, shdr->sh_link, sym.st_name);
                if (!name || !name[0])
                        continue;

                r = array_grow((void **) syms, allocated, *n_syms + 1, sizeof(**syms));
                if (r < 0)
                        return r;
                (*syms)[(*n_syms)++] = (struct raw_sym) {
                        .start = sym.st_value,
                        .size = sym.st_size,
                        .name = name,
                        .rank = binding_rank(GELF_ST_BIND(sym.st_info)),
                        .index = i,
                        .dwfl_rank = dwfl_binding_rank(GELF_ST_BIND(sym.st_info)),
                };
        }
        return 0;
}

/* Reads .symtab, or .dynsym when .symtab is absent or has no functions (a
 * stripped file), or with symtab_only only .symtab (a debug file, whose
 * .dynsym is a copy at best); sorts and deduplicates, and copies the names
 * out of the Elf into t (which must be empty). Returns 0 or -ENOMEM. */
static int elf_read_functions(Elf *e, bool symtab_only, struct func_table *t) {
        _cleanup_free_ struct raw_sym *raw = NULL;
        _cleanup_free_ const char **dwfl = NULL;
        size_t n_raw = 0, allocated = 0, n_kept = 0, names_len = 0, pos = 0;
        Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
        GElf_Shdr symtab_shdr, dynsym_shdr;
        enum symtab_kind kind = SYMTAB_NONE;
        int r;

        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr shdr;

                if (!gelf_getshdr(scn, &shdr))
                        continue;
                if (shdr.sh_type == SHT_SYMTAB && !symtab) {
                        symtab = scn;
                        symtab_shdr = shdr;
                } else if (shdr.sh_type == SHT_DYNSYM && !dynsym) {
                        dynsym = scn;
                        dynsym_shdr = shdr;
                }
        }

        if (symtab) {
                r = symtab_collect(e, symtab, &symtab_shdr, &raw, &n_raw, &allocated);
                if (r < 0)
                        return r;
                kind = SYMTAB_FULL;
        }
        if (n_raw == 0 && dynsym && !symtab_only) {
                r = symtab_collect(e, dynsym, &dynsym_shdr, &raw, &n_raw, &allocated);
                if (r < 0)
                        return r;
                kind = SYMTAB_DYNSYM;
        }
        if (n_raw == 0)
                return 0;

        qsort(raw, n_raw, sizeof(*raw), raw_sym_compare);

        /* Keep the first of each address; if it has no size, borrow the
         * largest size among its aliases. Remember libdwfl's pick among
         * them too (in dwfl, by index: the kept ones are compacted first). */
        dwfl = reallocarray(NULL, n_raw, sizeof(*dwfl));
        if (!dwfl)
                return -ENOMEM;
        for (size_t i = 0; i < n_raw;) {
                size_t j = i + 1, pick = i;
                uint64_t alias_size = 0;

                for (; j < n_raw && raw[j].start == raw[i].start; j++) {
                        alias_size = MAX(alias_size, raw[j].size);
                        if (raw_sym_dwfl_better(&raw[j], &raw[pick]))
                                pick = j;
                }
                dwfl[n_kept] = raw[pick].name;
                raw[n_kept] = raw[i];
                if (raw[n_kept].size == 0)
                        raw[n_kept].size = alias_size;
                names_len += strlen(raw[n_kept].name) + 1;
                if (dwfl[n_kept] != raw[n_kept].name)
                        names_len += strlen(dwfl[n_kept]) + 1;
                n_kept++;
                i = j;
        }

        t->names = malloc(names_len);
        t->syms = reallocarray(NULL, n_kept, sizeof(*t->syms));
        if (!t->names || !t->syms) {
                func_table_done(t);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_kept; i++) {
                size_t len = strlen(raw[i].name) + 1;

                memcpy(t->names + pos, raw[i].name, len);
                t->syms[i] = (struct func_sym) {
                        .start = raw[i].start,
                        .size = raw[i].size,
                        .name = t->names + pos,
                        .dwfl_name = t->names + pos,
                };
                pos += len;
                if (dwfl[i] != raw[i].name) {
                        len = strlen(dwfl[i]) + 1;
                        memcpy(t->names + pos, dwfl[i], len);
                        t->syms[i].dwfl_name = t->names + pos;
                        pos += len;
                }
        }
        t->n_syms = n_kept;
        t->names_len = names_len;
        t->kind = kind;
        return 0;
}

/* The section called name, or NULL. */
static Elf_Scn *elf_find_section(Elf *e, const char *name, GElf_Shdr *ret_shdr) {
        Elf_Scn *scn = NULL;
        size_t shstrndx;

        if (elf_getshdrstrndx(e, &shstrndx) < 0)
                return NULL;
        while ((scn = elf_nextscn(e, scn))) {
                const char *n;

                if (!gelf_getshdr(scn, ret_shdr))
                        continue;
                n = elf_strptr(e, shstrndx, ret_shdr->sh_name);
                if (n && streq(n, name))
                        return scn;
        }
        return NULL;
}

/* Whether the file carries DWARF itself: stripped files and the binaries
 * next to a debug file have no .debug_info (or only a NOBITS stub). */
static bool elf_has_dwarf(Elf *e) {
        GElf_Shdr shdr;

        if (elf_find_section(e, ".debug_info", &shdr) && shdr.sh_type != SHT_NOBITS && shdr.sh_size > 0)
                return true;
        return elf_find_section(e, ".zdebug_info", &shdr) && shdr.sh_type != SHT_NOBITS && shdr.sh_size > 0;
}

/* Reads .gnu_debuglink: a file name, NUL, padding to 4, and the CRC32 of the
 * debug file in the file's byte order. Returns 1 with *ret_name (a copy) and
 * *ret_crc, 0 when there is none or it is malformed, -ENOMEM. */
static int elf_read_debuglink(Elf *e, char **ret_name, uint32_t *ret_crc) {
        const unsigned char *p, *c;
        Elf_Data *data;
        GElf_Shdr shdr;
        Elf_Scn *scn;
        size_t len, crc_off;
        char *name;

        scn = elf_find_section(e, ".gnu_debuglink", &shdr);
        if (!scn || shdr.sh_type == SHT_NOBITS)
                return 0;
        data = elf_rawdata(scn, NULL);
        if (!data || !data->d_buf)
                return 0;
        p = data->d_buf;
        len = strnlen((const char *) p, data->d_size);
        crc_off = (len + 1 + 3) & ~(size_t) 3;
        if (len == 0 || len >= data->d_size || crc_off > data->d_size - 4 || memchr(p, '/', len))
                return 0;
        name = strndup((const char *) p, len);
        if (!name)
                return -ENOMEM;
        c = p + crc_off;
        if (elf_getident(e, NULL)[EI_DATA] == ELFDATA2MSB)
                *ret_crc = (uint32_t) c[0] << 24 | (uint32_t) c[1] << 16 | (uint32_t) c[2] << 8 | c[3];
        else
                *ret_crc = (uint32_t) c[3] << 24 | (uint32_t) c[2] << 16 | (uint32_t) c[1] << 8 | c[0];
        *ret_name = name;
        return 1;
}

/* The CRC-32 of gnu_debuglink: IEEE 802.3, reflected, as zlib's crc32().
 * Returns 0 and the CRC of the whole file, or a negative errno. */
static int file_crc32(int fd, uint32_t *ret) {
        _cleanup_free_ unsigned char *buf = NULL;
        uint32_t table[256], crc = 0xffffffffU;
        off_t off = 0;

        /* Built per call: 2 KiB of work, nothing next to reading a file. */
        for (uint32_t i = 0; i < 256; i++) {
                uint32_t c = i;

                for (int k = 0; k < 8; k++)
                        c = c & 1 ? 0xedb88320U ^ (c >> 1) : c >> 1;
                table[i] = c;
        }
        buf = malloc(CRC_CHUNK_BYTES);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n = pread(fd, buf, CRC_CHUNK_BYTES, off);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                for (ssize_t i = 0; i < n; i++)
                        crc = table[(crc ^ buf[i]) & 0xff] ^ (crc >> 8);
                off += n;
        }
        *ret = crc ^ 0xffffffffU;
        return 0;
}

/* What the debug file of one file must match. */
struct debug_query {
        const char *build_id; /* hex, or NULL */
        const char *link_name; /* .gnu_debuglink name, or NULL */
        uint32_t link_crc;
        struct stat st; /* the file itself, which is never its own debug file */
        bool want_symtab; /* the file has no .symtab of its own */
};

/* A debug file accepted for a file: the DWARF (if any) stays open through
 * fd; the full symbol table (if any, and if wanted) was read. */
struct debug_file {
        int fd;
        char *path;
        bool has_dwarf;
        struct func_table funcs;
};

static void debug_file_done(struct debug_file *d) {
        safe_close(d->fd);
        free(d->path);
        func_table_done(&d->funcs);
        *d = (struct debug_file) { .fd = -1 };
}

/* Opens path as a candidate debug file of q: by_build_id candidates must have
 * q's build-id; debuglink candidates must have it when both have one, else
 * the debuglink's CRC. Returns 1 and fills *ret, 0 when the candidate is
 * missing, unreadable or not the right file (not an error: the search goes
 * on), -ENOMEM. */
static int debug_candidate_open(const struct debug_query *q, const char *path, bool by_build_id,
                                struct debug_file *ret) {
        _cleanup_(elf_endp) Elf *e = NULL;
        _cleanup_free_ char *id = NULL;
        _cleanup_close_ int fd = -1;
        struct debug_file d = { .fd = -1 };
        GElf_Ehdr ehdr;
        struct stat st;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return errno == ENOMEM ? -ENOMEM : 0;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return 0;
        if (st.st_dev == q->st.st_dev && st.st_ino == q->st.st_ino)
                return 0;
        e = elf_begin(fd, ELF_C_READ, NULL);
        if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &ehdr) || elf_check_headers(e, &ehdr) < 0)
                return 0;
        r = elf_read_build_id(e, &id);
        if (r < 0)
                return r;
        if (by_build_id) {
                if (!id || !streq(id, q->build_id))
                        return 0;
        } else if (id && q->build_id) {
                if (!streq(id, q->build_id))
                        return 0;
        } else {
                uint32_t crc;

                r = file_crc32(fd, &crc);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 || crc != q->link_crc)
                        return 0;
        }

        d.has_dwarf = elf_has_dwarf(e);
        if (q->want_symtab) {
                r = elf_read_functions(e, true, &d.funcs);
                if (r < 0)
                        return r;
        }
        if (!d.has_dwarf && d.funcs.kind != SYMTAB_FULL) {
                func_table_done(&d.funcs);
                return 0;
        }
        d.path = strdup(path);
        if (!d.path) {
                func_table_done(&d.funcs);
                return -ENOMEM;
        }
        d.fd = TAKE_FD(fd);
        *ret = d;
        return 1;
}

/* Tries path inside the process's root, then on the host. Returns as
 * debug_candidate_open. */
static int debug_candidate_try(const struct debug_query *q, const char *root_prefix, const char *path,
                               bool by_build_id, struct debug_file *ret) {
        int r;

        if (root_prefix) {
                _cleanup_free_ char *in_root = NULL;

                if (asprintf(&in_root, "%s%s", root_prefix, path) < 0)
                        return -ENOMEM;
                r = debug_candidate_open(q, in_root, by_build_id, ret);
                if (r != 0)
                        return r;
        }
        return debug_candidate_open(q, path, by_build_id, ret);
}

/* Searches the separate debug file of a file whose path the process sees as
 * display_path, in the order the header gives. Returns 1 and fills *ret, 0
 * when there is none, -ENOMEM. */
/* Asks the configured debuginfod servers for the debug file of build_id.
 * What they don't have is remembered for the symbolizer's life, so a missing
 * file is asked for once (libdebuginfod also keeps a negative cache on disk,
 * across restarts). Returns 1 and fills *ret, 0 when not found, -ENOMEM. */
static int debug_file_from_debuginfod(symbolizer *s, const struct debug_query *q, struct debug_file *ret) {
        _cleanup_free_ char *path = NULL;
        char *copy;
        int fd, r;

        if (!s->debuginfod || !q->build_id || hashmap_get(s->debuginfod_missed, q->build_id, NULL) >= 0)
                return 0;
        fd = debuginfod_find_debuginfo(s->debuginfod, (const unsigned char *) q->build_id, 0, &path);
        if (fd >= 0) {
                close(fd); /* debug_candidate_open opens and checks it by path */
                r = debug_candidate_open(q, path, true, ret);
                if (r != 0)
                        return r;
        }
        copy = strdup(q->build_id);
        if (!copy)
                return -ENOMEM;
        r = hashmap_put(s->debuginfod_missed, copy, copy);
        if (r < 0)
                free(copy);
        return r == -ENOMEM ? r : 0;
}

static int debug_file_find(symbolizer *s, const struct debug_query *q, const char *root_prefix,
                           const char *display_path, struct debug_file *ret) {
        _cleanup_free_ char *dir = NULL;
        const char *slash;
        int r;

        if (q->build_id && strlen(q->build_id) > 2)
                for (char **d = s->debug_dirs; *d; d++) {
                        _cleanup_free_ char *path = NULL;

                        if (asprintf(&path, "%s/.build-id/%.2s/%s.debug", *d, q->build_id, q->build_id + 2) < 0)
                                return -ENOMEM;
                        r = debug_candidate_try(q, root_prefix, path, true, ret);
                        if (r != 0)
                                return r;
                }

        if (!q->link_name)
                return debug_file_from_debuginfod(s, q, ret);
        /* The directory as the process names it; "" for a bare name, so
         * the candidates are relative to the current directory as for
         * eu-addr2line. */
        slash = strrchr(display_path, '/');
        dir = strndup(display_path, slash ? (size_t) (slash - display_path) : 0);
        if (!dir)
                return -ENOMEM;

        for (int i = 0; i < 2; i++) {
                _cleanup_free_ char *path = NULL;

                if (asprintf(&path, "%s%s%s%s", dir, slash ? "/" : "", i == 0 ? "" : ".debug/", q->link_name) < 0)
                        return -ENOMEM;
                r = debug_candidate_try(q, root_prefix, path, false, ret);
                if (r != 0)
                        return r;
        }
        if (display_path[0] == '/')
                for (char **d = s->debug_dirs; *d; d++) {
                        _cleanup_free_ char *path = NULL;

                        if (asprintf(&path, "%s%s/%s", *d, dir, q->link_name) < 0)
                                return -ENOMEM;
                        r = debug_candidate_try(q, root_prefix, path, false, ret);
                        if (r != 0)
                                return r;
                }
        /* nothing on this host: the servers, last, as they are the slowest */
        return debug_file_from_debuginfod(s, q, ret);
}

/* Makes f reachable through the stat key. Returns 0 or -ENOMEM. */
static int symbolizer_index_stat(symbolizer *s, const struct file_key *key, sym_file *f) {
        _cleanup_free_ struct file_key *copy = NULL;
        int r;

        r = array_grow((void **) &f->keys, &f->n_keys_allocated, f->n_keys + 1, sizeof(*f->keys));
        if (r < 0)
                return r;
        copy = malloc(sizeof(*copy));
        if (!copy)
                return -ENOMEM;
        *copy = *key;
        r = hashmap_put(s->by_stat, copy, f);
        if (r < 0)
                return r;
        f->keys[f->n_keys++] = TAKE_PTR(copy);
        f->base_bytes += sizeof(*copy) + sizeof(*f->keys) + HASH_ENTRY_BYTES;
        return 0;
}

/* Finds where f's DWARF and best symbol table are: the file itself (whose
 * fd it then takes), else a separate debug file. Returns 0 or -ENOMEM. */
static int sym_file_find_debug_info(symbolizer *s, sym_file *f, Elf *e, int *fd, const struct stat *st,
                                    const char *root_prefix, const char *display_path) {
        _cleanup_(debug_file_done) struct debug_file d = { .fd = -1 };
        _cleanup_free_ char *link_name = NULL;
        struct debug_query q = {
                .build_id = f->build_id,
                .st = *st,
                .want_symtab = f->funcs.kind != SYMTAB_FULL,
        };
        int r;

        if (elf_has_dwarf(e)) {
                f->debug_path = strdup(display_path);
                if (!f->debug_path)
                        return -ENOMEM;
                f->dwarf_fd = TAKE_FD(*fd);
                return 0;
        }

        r = elf_read_debuglink(e, &link_name, &q.link_crc);
        if (r < 0)
                return r;
        q.link_name = link_name;
        r = debug_file_find(s, &q, root_prefix, display_path, &d);
        if (r <= 0)
                return r;

        if (d.funcs.kind == SYMTAB_FULL && f->funcs.kind != SYMTAB_FULL) {
                func_table_done(&f->funcs);
                f->funcs = d.funcs;
                d.funcs = (struct func_table) {};
        }
        if (d.has_dwarf) {
                f->debug_path = TAKE_PTR(d.path);
                f->dwarf_fd = TAKE_FD(d.fd);
        }
        return 0;
}

int symbolizer_load_file_at(symbolizer *s, const char *open_path, const char *root_prefix,
                            const char *display_path, const sym_file **ret) {
        _cleanup_(sym_file_freep) sym_file *f = NULL;
        _cleanup_(elf_endp) Elf *e = NULL;
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *build_id = NULL;
        sym_file *added;
        struct file_key key;
        GElf_Ehdr ehdr;
        struct stat st;
        void *cached;
        int r;

        if (!display_path)
                display_path = open_path;
        if (root_prefix && (!root_prefix[0] || streq(root_prefix, "/")))
                root_prefix = NULL;

        /* O_NONBLOCK so that a FIFO at this path cannot hang the daemon. */
        fd = open(open_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -ENOEXEC;

        key = file_key_from_stat(&st);
        if (hashmap_get(s->by_stat, &key, &cached) >= 0) {
                sym_file_touch(cached);
                *ret = cached;
                return 0;
        }

        if (elf_version(EV_CURRENT) == EV_NONE)
                return -EOPNOTSUPP;
        /* ELF_C_READ rather than mmap: a file truncated under us then gives
         * short reads, not SIGBUS. */
        e = elf_begin(fd, ELF_C_READ, NULL);
        if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &ehdr))
                return -ENOEXEC;
        r = elf_check_headers(e, &ehdr);
        if (r < 0)
                return r;

        r = elf_read_build_id(e, &build_id);
        if (r < 0)
                return r;
        if (build_id && hashmap_get(s->by_build_id, build_id, &cached) >= 0) {
                /* Same contents under another inode (a copy, a container's
                 * layer): remember this inode too, so next time costs a stat. */
                r = symbolizer_index_stat(s, &key, cached);
                if (r < 0)
                        return r;
                sym_file_touch(cached);
                *ret = cached;
                return 0;
        }

        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->owner = s;
        f->dwarf_fd = -1;
        f->build_id = TAKE_PTR(build_id);
        r = elf_read_segments(e, f);
        if (r < 0)
                return r;
        r = elf_read_functions(e, false, &f->funcs);
        if (r < 0)
                return r;
        r = sym_file_find_debug_info(s, f, e, &fd, &st, root_prefix, display_path);
        if (r < 0)
                return r;
        f->base_bytes += sizeof(*f) + FILE_OVERHEAD_BYTES +
                f->n_segments * sizeof(*f->segments) +
                f->funcs.n_syms * sizeof(*f->funcs.syms) + f->funcs.names_len +
                (f->build_id ? strlen(f->build_id) + 1 + HASH_ENTRY_BYTES : 0) +
                (f->debug_path ? strlen(f->debug_path) + 1 : 0);

        r = array_grow((void **) &s->files, &s->n_files_allocated, s->n_files + 1, sizeof(*s->files));
        if (r < 0)
                return r;
        if (f->build_id) {
                r = hashmap_put(s->by_build_id, f->build_id, f);
                if (r < 0)
                        return r;
        }
        added = TAKE_PTR(f);
        s->files[s->n_files++] = added;
        sym_file_touch(added);

        /* The file stays cached even if this fails (the next load then reads
         * the build-id again), but OOM still propagates. */
        r = symbolizer_index_stat(s, &key, added);
        if (r < 0)
                return r;
        *ret = added;
        return 0;
}

int symbolizer_load_file(symbolizer *s, const char *open_path, const sym_file **ret) {
        return symbolizer_load_file_at(s, open_path, NULL, open_path, ret);
}

/* The virtual address file_offset is loaded at; false when it lies in no
 * PT_LOAD segment. *ret_seg is that segment. */
static bool sym_file_vaddr(const sym_file *f, uint64_t file_offset, uint64_t *ret_vaddr,
                           const struct load_segment **ret_seg) {
        for (size_t i = 0; i < f->n_segments; i++)
                if (file_offset >= f->segments[i].offset &&
                    file_offset - f->segments[i].offset < f->segments[i].filesz) {
                        *ret_vaddr = file_offset - f->segments[i].offset + f->segments[i].vaddr;
                        *ret_seg = &f->segments[i];
                        return true;
                }
        return false;
}

/* The function symbol covering vaddr in seg, or NULL. */
static const struct func_sym *func_table_find(const struct func_table *t, uint64_t vaddr,
                                              const struct load_segment *seg) {
        size_t lo = UPPER_BOUND_BY(t->syms, t->n_syms, start, vaddr);
        const struct func_sym *sym;

        if (lo == 0)
                return NULL;
        sym = &t->syms[lo - 1];

        if (sym->size > 0)
                return vaddr - sym->start < sym->size ? sym : NULL;
        /* Without a size the symbol is taken to run up to the next one (which
         * starts after vaddr, by the search) but not across segments. */
        return sym->start >= seg->vaddr ? sym : NULL;
}

const char *sym_file_lookup(const sym_file *f, uint64_t file_offset) {
        const struct load_segment *seg;
        const struct func_sym *sym;
        uint64_t vaddr;

        if (!f || !sym_file_vaddr(f, file_offset, &vaddr, &seg))
                return NULL;
        sym_file_touch(f);
        sym = func_table_find(&f->funcs, vaddr, seg);
        return sym ? sym->name : NULL;
}

bool sym_file_has_symbols(const sym_file *f) {
        return f && (f->funcs.kind != SYMTAB_NONE || f->debug_path);
}

const char *sym_file_debug_path(const sym_file *f) {
        return f ? f->debug_path : NULL;
}

enum sym_unresolved sym_file_why_unresolved(const sym_file *f, uint64_t file_offset) {
        const struct load_segment *seg;
        uint64_t vaddr;

        if (!f || !sym_file_vaddr(f, file_offset, &vaddr, &seg))
                return SYM_NOT_MAPPED;
        if (!sym_file_has_symbols(f))
                return SYM_NO_SYMBOLS;
        if (f->funcs.kind == SYMTAB_DYNSYM && !f->debug_path)
                return SYM_EXPORTS_ONLY;
        return SYM_NO_FUNCTION;
}

const char *sym_unresolved_to_string(enum sym_unresolved reason) {
        switch (reason) {
        case SYM_NOT_MAPPED:
                return "not-mapped";
        case SYM_NO_SYMBOLS:
                return "no-symbols";
        case SYM_EXPORTS_ONLY:
                return "exports-only";
        case SYM_NO_FUNCTION:
                return "no-function";
        }
        return NULL;
}

/* Sums the section data libdw holds after dwarf_begin_elf (which
 * decompresses SHF_COMPRESSED sections in place, so sh_size is the size in
 * memory). Line tables are added per CU as they are read. */
static uint64_t dwarf_estimate_bytes(Elf *e) {
        Elf_Scn *scn = NULL;
        uint64_t total = 0;
        size_t shstrndx;

        if (elf_getshdrstrndx(e, &shstrndx) < 0)
                return 0;
        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr shdr;
                const char *name;

                if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
                        continue;
                name = elf_strptr(e, shstrndx, shdr.sh_name);
                if (name && (strncmp(name, ".debug_", 7) == 0 || strncmp(name, ".zdebug_", 8) == 0))
                        total += shdr.sh_size;
        }
        return total;
}

/* An address range of one CU, while the runs are collected. */
struct cu_range {
        uint64_t start, end;
        Dwarf_Off cu_offset;
};

static int cu_range_compare(const void *a, const void *b) {
        const struct cu_range *x = a, *y = b;

        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        return x->cu_offset < y->cu_offset ? -1 : x->cu_offset > y->cu_offset;
}

static int dwarf_off_compare(const void *a, const void *b) {
        const Dwarf_Off *x = a, *y = b;

        return *x < *y ? -1 : *x > *y;
}

/* Adds the ranges of the CUs .debug_aranges does not list (clang and rustc
 * emit no .debug_aranges by default; there libdw 0.188, and so
 * eu-addr2line, find no CU at all). listed is sorted. Returns 0 or -ENOMEM. */
static int cu_ranges_add_unlisted(Dwarf *dwarf, const Dwarf_Off *listed, size_t n_listed,
                                  struct cu_range **ranges, size_t *n_ranges, size_t *allocated) {
        Dwarf_CU *cu = NULL;
        Dwarf_Die cudie;
        uint8_t unit_type;

        while (dwarf_get_units(dwarf, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
                Dwarf_Off off = dwarf_dieoffset(&cudie);
                size_t at = LOWER_BOUND(listed, n_listed, off);
                Dwarf_Addr base, start, end;
                ptrdiff_t it = 0;

                if (unit_type != DW_UT_compile || (at < n_listed && listed[at] == off))
                        continue;
                while ((it = dwarf_ranges(&cudie, it, &base, &start, &end)) > 0) {
                        int r;

                        if (start >= end)
                                continue;
                        r = array_grow((void **) ranges, allocated, *n_ranges + 1, sizeof(**ranges));
                        if (r < 0)
                                return r;
                        (*ranges)[(*n_ranges)++] = (struct cu_range) { start, end, off };
                }
        }
        return 0;
}

/* Groups the CUs' address ranges into runs of one CU each, as libdwfl does
 * with .debug_aranges, plus the ranges of CUs missing there. Returns 0 (no
 * ranges: no CU is ever found) or -ENOMEM. */
static int sym_file_read_cu_runs(sym_file *f) {
        _cleanup_free_ struct cu_range *ranges = NULL;
        _cleanup_free_ Dwarf_Off *listed = NULL;
        size_t n_ranges = 0, ranges_allocated = 0, n_aranges = 0, runs_allocated = 0;
        Dwarf_Aranges *aranges;
        int r;

        if (dwarf_getaranges(f->dwarf, &aranges, &n_aranges) != 0)
                n_aranges = 0;
        if (n_aranges > 0) {
                ranges = reallocarray(NULL, n_aranges, sizeof(*ranges));
                listed = reallocarray(NULL, n_aranges, sizeof(*listed));
                if (!ranges || !listed)
                        return -ENOMEM;
                ranges_allocated = n_aranges;
        }
        for (size_t i = 0; i < n_aranges; i++) {
                Dwarf_Addr addr;
                Dwarf_Word length;
                Dwarf_Off offset;

                if (dwarf_getarangeinfo(dwarf_onearange(aranges, i), &addr, &length, &offset) != 0)
                        continue;
                listed[n_ranges] = offset;
                ranges[n_ranges++] = (struct cu_range) { addr, addr + length, offset };
        }
        n_aranges = n_ranges;
        if (n_aranges > 0)
                qsort(listed, n_aranges, sizeof(*listed), dwarf_off_compare);
        r = cu_ranges_add_unlisted(f->dwarf, listed, n_aranges, &ranges, &n_ranges, &ranges_allocated);
        if (r < 0)
                return r;
        /* libdw sorted the aranges; only added ranges need sorting again,
         * so a file fully listed keeps exactly libdwfl's order. */
        if (n_ranges > n_aranges)
                qsort(ranges, n_ranges, sizeof(*ranges), cu_range_compare);

        for (size_t i = 0; i < n_ranges; i++) {
                if (f->n_cu_runs > 0 && f->cu_runs[f->n_cu_runs - 1].cu_offset == ranges[i].cu_offset)
                        continue;
                r = array_grow((void **) &f->cu_runs, &runs_allocated, f->n_cu_runs + 1, sizeof(*f->cu_runs));
                if (r < 0)
                        return r;
                f->cu_runs[f->n_cu_runs++] = (struct cu_run) {
                        .start = ranges[i].start,
                        .cu_offset = ranges[i].cu_offset,
                };
        }
        if (n_ranges > 0)
                f->cu_runs_end = ranges[n_ranges - 1].end;
        f->dwarf_bytes += runs_allocated * sizeof(*f->cu_runs);
        return 0;
}

/* Whether every string section of the Elf ends with a NUL. libdw 0.188
 * (and our strlen on the names it returns) read the last string of
 * .debug_str and .debug_line_str up to a NUL, past the end of a crafted
 * section; files whose DWARF fails this are resolved without it. */
static bool elf_string_sections_terminated(Elf *e) {
        Elf_Scn *scn = NULL;
        size_t shstrndx;

        if (!e || elf_getshdrstrndx(e, &shstrndx) < 0)
                return false;
        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr shdr;
                const char *name;
                Elf_Data *data;

                if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
                        continue;
                name = elf_strptr(e, shstrndx, shdr.sh_name);
                if (!name || (!streq(name, ".debug_str") && !streq(name, ".debug_line_str")))
                        continue;
                /* libdw decompressed it already; this is the same buffer. */
                data = elf_getdata(scn, NULL);
                if (data && data->d_size > 0 &&
                    (!data->d_buf || ((const char *) data->d_buf)[data->d_size - 1] != '\0'))
                        return false;
        }
        return true;
}

/* Opens f's DWARF on first use. A file whose DWARF cannot be read resolves
 * through its symbol table alone. Returns 0 or -ENOMEM. */
static int sym_file_open_dwarf(sym_file *f) {
        int r;

        if (f->dwarf || f->dwarf_failed)
                return 0;
        if (f->dwarf_fd < 0) {
                f->dwarf_failed = true;
                return 0;
        }
        f->dwarf_elf = elf_begin(f->dwarf_fd, ELF_C_READ, NULL);
        if (f->dwarf_elf)
                f->dwarf = dwarf_begin_elf(f->dwarf_elf, DWARF_C_READ, NULL);
        if (f->dwarf) {
                /* The dwz file shared by several debug files, if any, is
                 * read through too; open it now to check it as well. */
                Dwarf *alt = dwarf_getalt(f->dwarf);

                if (!elf_string_sections_terminated(f->dwarf_elf) ||
                    (alt && !elf_string_sections_terminated(dwarf_getelf(alt)))) {
                        dwarf_end(TAKE_PTR(f->dwarf));
                        elf_end(TAKE_PTR(f->dwarf_elf));
                }
        }
        if (!f->dwarf) {
                if (f->dwarf_elf)
                        elf_end(TAKE_PTR(f->dwarf_elf));
                /* libdw does not tell OOM apart from bad DWARF here. */
                f->dwarf_failed = true;
                return 0;
        }
        f->dwarf_bytes = dwarf_estimate_bytes(f->dwarf_elf);
        r = sym_file_read_cu_runs(f);
        if (r < 0)
                return r;
        return 0;
}

/* The CU containing vaddr, by libdwfl's rule: the run starting at or before
 * it, where the last run ends with the last arange (inclusive, as there). */
static Dwarf_Die *sym_file_cu_die(sym_file *f, uint64_t vaddr) {
        size_t lo = UPPER_BOUND_BY(f->cu_runs, f->n_cu_runs, start, vaddr);
        struct cu_run *run;

        if (lo == 0)
                return NULL;
        if (lo == f->n_cu_runs && vaddr > f->cu_runs_end)
                return NULL;
        run = &f->cu_runs[lo - 1];
        if (!run->has_die) {
                if (!dwarf_offdie(f->dwarf, run->cu_offset, &run->die))
                        return NULL;
                run->has_die = true;
        }
        return &run->die;
}

/* A DIE's name as eu-addr2line takes it: the linkage name (mangled, with
 * the parameter types that tell overloads apart) else the plain name,
 * through abstract origins and specifications. NULL when it has none (or
 * an empty one). */
static const char *die_name(Dwarf_Die *die) {
        Dwarf_Attribute attr;
        const char *name;

        name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr) ?:
                                dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
        if (!name)
                name = dwarf_diename(die);
        return name && name[0] ? name : NULL;
}

/* The display form of raw: demangled when it is a C++ (_Z) or Rust (_R, and
 * legacy _ZN..17h<hash>E) name, else raw itself. Results are kept per raw
 * pointer, which stays put while the file is cached. Returns NULL on OOM. */
static const char *sym_file_demangle(sym_file *f, const char *raw) {
        char *d = NULL;
        void *cached;

        if (!(raw[0] == '_' && (raw[1] == 'Z' || raw[1] == 'R')))
                return raw;
        if (!f->demangled) {
                f->demangled = hashmap_new_u64();
                if (!f->demangled)
                        return NULL;
        }
        if (hashmap_get(f->demangled, raw, &cached) >= 0)
                return cached;
        /* DMGL_PARAMS | DMGL_ANSI is what __cxa_demangle (eu-addr2line -C)
         * prints; the default style tries Rust before GNU v3. */
        d = cplus_demangle(raw, DMGL_PARAMS | DMGL_ANSI);
        if (hashmap_put(f->demangled, raw, d ?: (char *) raw) < 0) {
                free(d);
                return NULL;
        }
        f->cache_bytes += HASH_ENTRY_BYTES + (d ? strlen(d) + 1 : 0);
        return d ?: raw;
}

/* A source file name as eu-addr2line prints it: relative names (as GCC
 * records them when given relative paths, and as -fdebug-prefix-map makes
 * them) prefixed with the CU's DW_AT_comp_dir. Kept per name pointer, which
 * stays put while the Dwarf is open. NULL for NULL; on OOM, *ret_oom. */
static const char *sym_file_source_path(sym_file *f, Dwarf_Die *cudie, const char *src, bool *ret_oom) {
        Dwarf_Attribute attr;
        const char *comp_dir;
        char *joined;
        void *cached;

        if (!src || src[0] == '/')
                return src;
        if (!f->paths) {
                f->paths = hashmap_new_u64();
                if (!f->paths)
                        goto oom;
        }
        if (hashmap_get(f->paths, src, &cached) >= 0)
                return cached;
        comp_dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
        if (!comp_dir)
                joined = (char *) src;
        else if (asprintf(&joined, "%s/%s", comp_dir, src) < 0)
                goto oom;
        if (hashmap_put(f->paths, src, joined) < 0) {
                if (joined != src)
                        free(joined);
                goto oom;
        }
        f->cache_bytes += HASH_ENTRY_BYTES + (joined != src ? strlen(joined) + 1 : 0);
        return joined;
oom:
        *ret_oom = true;
        return NULL;
}

/* The frames of one address while they are collected. */
struct frame_list {
        struct sym_frame *frames;
        size_t n_frames;
        size_t allocated;
};

static int frame_list_push(sym_file *f, struct frame_list *l, const char *raw, const char *file,
                           unsigned line, bool inlined) {
        const char *function;
        int r;

        function = sym_file_demangle(f, raw);
        if (!function)
                return -ENOMEM;
        r = array_grow((void **) &l->frames, &l->allocated, l->n_frames + 1, sizeof(*l->frames));
        if (r < 0)
                return r;
        l->frames[l->n_frames++] = (struct sym_frame) {
                .function = function,
                .raw_function = raw,
                .file = file,
                .line = line,
                .inlined = inlined,
        };
        return 0;
}

static uint64_t cu_scopes_bytes(const struct cu_scopes *c) {
        return sizeof(*c) + c->nodes_allocated * sizeof(*c->nodes) + c->ranges_allocated * sizeof(*c->ranges) +
                c->n_top * (sizeof(*c->top) + sizeof(*c->top_max_hi)) + HASH_ENTRY_BYTES;
}

/* The DIEs libdw's scope walk descends into (libdw_visit_scopes.c); those
 * without addresses of their own (namespaces, classes) are then pruned by
 * dwarf_getscopes, so only the ones with ranges matter here. */
static bool tag_may_have_scopes(int tag) {
        switch (tag) {
        case DW_TAG_compile_unit:
        case DW_TAG_module:
        case DW_TAG_lexical_block:
        case DW_TAG_with_stmt:
        case DW_TAG_catch_block:
        case DW_TAG_try_block:
        case DW_TAG_entry_point:
        case DW_TAG_inlined_subroutine:
        case DW_TAG_subprogram:
                return true;
        default:
                return false;
        }
}

/* Adds the children of parent_die that have address ranges, and theirs, as
 * children of node parent; *last is the parent's last child so far. The
 * children of an imported (dwz partial) unit count as siblings, as for
 * libdw. Returns 0 or -ENOMEM; unreadable DWARF ends the walk there. */
static int cu_scopes_walk(struct cu_scopes *c, Dwarf_Die *parent_die, uint32_t parent, uint32_t *last,
                          unsigned depth) {
        Dwarf_Die child;
        int r;

        if (depth > SCOPE_DEPTH_MAX || dwarf_child(parent_die, &child) != 0)
                return 0;
        do {
                Dwarf_Addr base, start, end;
                ptrdiff_t off = 0;
                uint32_t idx, child_last = NO_NODE;
                size_t first_range = c->n_ranges;
                int tag = dwarf_tag(&child);

                if (tag == DW_TAG_imported_unit) {
                        Dwarf_Attribute attr;
                        Dwarf_Die unit;

                        if (dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &attr), &unit) &&
                            dwarf_tag(&unit) != DW_TAG_compile_unit) {
                                r = cu_scopes_walk(c, &unit, parent, last, depth + 1);
                                if (r < 0)
                                        return r;
                        }
                        continue;
                }

                while ((off = dwarf_ranges(&child, off, &base, &start, &end)) > 0) {
                        if (start >= end)
                                continue;
                        r = array_grow((void **) &c->ranges, &c->ranges_allocated, c->n_ranges + 1,
                                       sizeof(*c->ranges));
                        if (r < 0)
                                return r;
                        c->ranges[c->n_ranges++] = (struct pc_range) { start, end };
                }
                if (c->n_ranges == first_range || c->n_nodes >= NO_NODE || c->n_ranges >= NO_NODE)
                        continue;

                r = array_grow((void **) &c->nodes, &c->nodes_allocated, c->n_nodes + 1, sizeof(*c->nodes));
                if (r < 0)
                        return r;
                idx = (uint32_t) c->n_nodes++;
                c->nodes[idx] = (struct scope_node) {
                        .die = child,
                        .parent = parent,
                        .first_child = NO_NODE,
                        .next_sibling = NO_NODE,
                        .first_range = (uint32_t) first_range,
                        .n_ranges = (uint32_t) (c->n_ranges - first_range),
                };
                if (*last == NO_NODE) {
                        if (parent != NO_NODE)
                                c->nodes[parent].first_child = idx;
                } else
                        c->nodes[*last].next_sibling = idx;
                *last = idx;

                if (tag_may_have_scopes(tag) && dwarf_haschildren(&child) > 0) {
                        r = cu_scopes_walk(c, &child, idx, &child_last, depth + 1);
                        if (r < 0)
                                return r;
                }
        } while (dwarf_siblingof(&child, &child) == 0);
        return 0;
}

static int top_range_compare(const void *a, const void *b) {
        const struct top_range *x = a, *y = b;

        if (x->lo != y->lo)
                return x->lo < y->lo ? -1 : 1;
        return x->node < y->node ? -1 : x->node > y->node;
}

/* Builds the scope tree of the CU at cudie. Returns 0 and *ret, or -ENOMEM. */
static int cu_scopes_build(Dwarf_Die *cudie, struct cu_scopes **ret) {
        _cleanup_(cu_scopes_freep) struct cu_scopes *c = NULL;
        uint32_t last = NO_NODE;
        size_t n_top_ranges = 0, k = 0;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        r = cu_scopes_walk(c, cudie, NO_NODE, &last, 0);
        if (r < 0)
                return r;

        for (size_t i = 0; i < c->n_nodes; i++)
                if (c->nodes[i].parent == NO_NODE)
                        n_top_ranges += c->nodes[i].n_ranges;
        if (n_top_ranges > 0) {
                c->top = reallocarray(NULL, n_top_ranges, sizeof(*c->top));
                c->top_max_hi = reallocarray(NULL, n_top_ranges, sizeof(*c->top_max_hi));
                if (!c->top || !c->top_max_hi)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < c->n_nodes; i++) {
                const struct scope_node *n = &c->nodes[i];

                if (n->parent != NO_NODE)
                        continue;
                for (uint32_t j = 0; j < n->n_ranges; j++)
                        c->top[k++] = (struct top_range) {
                                .lo = c->ranges[n->first_range + j].lo,
                                .hi = c->ranges[n->first_range + j].hi,
                                .node = (uint32_t) i,
                        };
        }
        c->n_top = k;
        if (k > 0)
                qsort(c->top, k, sizeof(*c->top), top_range_compare);
        for (size_t i = 0; i < k; i++)
                c->top_max_hi[i] = i == 0 ? c->top[i].hi : MAX(c->top_max_hi[i - 1], c->top[i].hi);
        *ret = TAKE_PTR(c);
        return 0;
}

static bool scope_node_contains(const struct cu_scopes *c, uint32_t node, uint64_t pc) {
        const struct scope_node *n = &c->nodes[node];

        for (uint32_t j = 0; j < n->n_ranges; j++)
                if (pc >= c->ranges[n->first_range + j].lo && pc < c->ranges[n->first_range + j].hi)
                        return true;
        return false;
}

/* The innermost scope containing pc, as dwarf_getscopes finds it: the first
 * child of the CU (in DIE order) containing pc, then its first child
 * containing pc, and so on. NO_NODE when no child of the CU contains it. */
static uint32_t cu_scopes_innermost(const struct cu_scopes *c, uint64_t pc) {
        /* lo is the number of top ranges starting at or before pc; going
         * down from there, any range containing pc has a prefix maximum
         * above pc, so the scan stops at the first that has none. */
        size_t lo = UPPER_BOUND_BY(c->top, c->n_top, lo, pc);
        uint32_t node = NO_NODE;

        for (size_t i = lo; i > 0 && c->top_max_hi[i - 1] > pc; i--)
                if (pc < c->top[i - 1].hi && c->top[i - 1].node < node)
                        node = c->top[i - 1].node;
        if (node == NO_NODE)
                return NO_NODE;

        for (;;) {
                uint32_t child = c->nodes[node].first_child;

                while (child != NO_NODE && !scope_node_contains(c, child, pc))
                        child = c->nodes[child].next_sibling;
                if (child == NO_NODE)
                        return node;
                node = child;
        }
}

/* The scope tree of the CU at cudie, built on first use. NULL and *ret_oom
 * on OOM. */
static const struct cu_scopes *sym_file_cu_scopes(sym_file *f, Dwarf_Die *cudie, bool *ret_oom) {
        _cleanup_(cu_scopes_freep) struct cu_scopes *c = NULL;
        Dwarf_Off off = dwarf_dieoffset(cudie);
        Dwarf_Lines *lines;
        size_t n_lines;
        void *cached;

        if (!f->cu_scopes) {
                f->cu_scopes = hashmap_new_u64();
                if (!f->cu_scopes)
                        goto oom;
        }
        if (hashmap_get(f->cu_scopes, UINT64_TO_KEY(off), &cached) >= 0)
                return cached;
        if (cu_scopes_build(cudie, &c) < 0 || hashmap_put(f->cu_scopes, UINT64_TO_KEY(off), c) < 0)
                goto oom;
        f->dwarf_bytes += cu_scopes_bytes(c);
        /* The first address in a CU reads its line table too. */
        if (dwarf_getsrclines(cudie, &lines, &n_lines) == 0)
                f->dwarf_bytes += (uint64_t) n_lines * DWARF_LINE_BYTES;
        return TAKE_PTR(c);
oom:
        *ret_oom = true;
        return NULL;
}

/* The frames the inlined subroutines on the path from node outwards add:
 * each names the next enclosing function (inline or not) and where it
 * called the inlined one, from DW_AT_call_file and DW_AT_call_line (as
 * eu-addr2line does from dwarf_getscopes_die). Returns 0 or -ENOMEM; broken
 * DWARF just ends the chain. */
static int dwarf_inline_chain(sym_file *f, Dwarf_Die *cudie, const struct cu_scopes *c, uint32_t node,
                              struct frame_list *l) {
        Dwarf_Files *files;

        if (dwarf_getsrcfiles(cudie, &files, NULL) != 0)
                return 0;

        for (; node != NO_NODE; node = c->nodes[node].parent) {
                Dwarf_Die *die = (Dwarf_Die *) &c->nodes[node].die, *parent = NULL;
                Dwarf_Attribute attr;
                Dwarf_Word value;
                const char *src = NULL;
                unsigned line = 0;
                bool oom = false;
                int r;

                if (dwarf_tag(die) != DW_TAG_inlined_subroutine)
                        continue;
                for (uint32_t p = c->nodes[node].parent; p != NO_NODE && !parent; p = c->nodes[p].parent) {
                        int tag = dwarf_tag((Dwarf_Die *) &c->nodes[p].die);

                        if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point ||
                            tag == DW_TAG_subprogram)
                                parent = (Dwarf_Die *) &c->nodes[p].die;
                }
                if (!parent)
                        break;
                if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &value) == 0)
                        src = sym_file_source_path(f, cudie, dwarf_filesrc(files, value, NULL, NULL), &oom);
                if (oom)
                        return -ENOMEM;
                if (src && dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &value) == 0)
                        line = (unsigned) value;
                r = frame_list_push(f, l, die_name(parent) ?: "??", src, line,
                                    dwarf_tag(parent) == DW_TAG_inlined_subroutine);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Collects the frame chain of vaddr in f's open DWARF the way eu-addr2line
 * -f -i finds it: the innermost function from the DIE scopes containing
 * vaddr, file:line from the CU's line table, then the inline chain; without
 * a DWARF function the symbol table names it. Returns 0 (no frames:
 * unresolved) or -ENOMEM. */
static int sym_file_collect(sym_file *f, uint64_t vaddr, const struct load_segment *seg, struct frame_list *l) {
        const struct cu_scopes *scopes = NULL;
        const struct func_sym *sym;
        uint32_t innermost = NO_NODE;
        Dwarf_Die *cudie;
        const char *file = NULL;
        unsigned line = 0;
        bool oom = false;
        int r;

        cudie = sym_file_cu_die(f, vaddr);
        if (cudie) {
                Dwarf_Line *dl = dwarf_getsrc_die(cudie, vaddr);
                int lineno;

                if (dl && (file = dwarf_linesrc(dl, NULL, NULL)) && dwarf_lineno(dl, &lineno) == 0 && lineno > 0)
                        line = (unsigned) lineno;
                file = sym_file_source_path(f, cudie, file, &oom);
                scopes = oom ? NULL : sym_file_cu_scopes(f, cudie, &oom);
                if (oom)
                        return -ENOMEM;
                innermost = cu_scopes_innermost(scopes, vaddr);
        }

        for (uint32_t node = innermost; node != NO_NODE; node = scopes->nodes[node].parent) {
                Dwarf_Die *die = (Dwarf_Die *) &scopes->nodes[node].die;
                int tag = dwarf_tag(die);
                const char *raw;

                if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
                        continue;
                raw = die_name(die);
                if (!raw) {
                        /* eu-addr2line says "??"; the symbol table may know. */
                        sym = func_table_find(&f->funcs, vaddr, seg);
                        raw = sym ? sym->dwfl_name : "??";
                }
                r = frame_list_push(f, l, raw, file, line, tag == DW_TAG_inlined_subroutine);
                if (r < 0)
                        return r;
                return dwarf_inline_chain(f, cudie, scopes, innermost, l);
        }

        sym = func_table_find(&f->funcs, vaddr, seg);
        if (!sym)
                return 0;
        return frame_list_push(f, l, sym->dwfl_name, file, line, false);
}

int sym_file_resolve(symbolizer *s, const sym_file *cf, uint64_t file_offset,
                     struct sym_frame *frames, size_t max) {
        _cleanup_free_ struct sym_frame *collected = NULL;
        struct frame_list l = {};
        sym_file *f = (sym_file *) cf;
        const struct load_segment *seg;
        struct resolved *res;
        uint64_t vaddr;
        void *cached;
        size_t first;
        int r;

        if (!f || max == 0 || (s && s != f->owner))
                return -EINVAL;
        if (!sym_file_vaddr(f, file_offset, &vaddr, &seg))
                return 0;
        sym_file_touch(f);

        r = sym_file_open_dwarf(f);
        if (r < 0)
                return r;
        if (!f->dwarf) {
                /* Symbol tables only: a binary search, cheaper than caching
                 * its answer per address. */
                const struct func_sym *sym = func_table_find(&f->funcs, vaddr, seg);
                const char *function;

                if (!sym)
                        return 0;
                function = sym_file_demangle(f, sym->dwfl_name);
                if (!function)
                        return -ENOMEM;
                frames[0] = (struct sym_frame) { .function = function, .raw_function = sym->dwfl_name };
                return 1;
        }

        if (!f->resolved) {
                f->resolved = hashmap_new_u64();
                if (!f->resolved)
                        return -ENOMEM;
        }
        if (hashmap_get(f->resolved, UINT64_TO_KEY(vaddr), &cached) >= 0)
                res = cached;
        else {
                r = sym_file_collect(f, vaddr, seg, &l);
                collected = l.frames;
                if (r < 0)
                        return r;
                if (l.n_frames == 0)
                        res = &unresolved;
                else {
                        res = malloc(sizeof(*res) + l.n_frames * sizeof(res->frames[0]));
                        if (!res)
                                return -ENOMEM;
                        res->n_frames = l.n_frames;
                        memcpy(res->frames, l.frames, l.n_frames * sizeof(res->frames[0]));
                }
                r = hashmap_put(f->resolved, UINT64_TO_KEY(vaddr), res);
                if (r < 0) {
                        if (res != &unresolved)
                                free(res);
                        return r;
                }
                f->cache_bytes += HASH_ENTRY_BYTES;
                if (res != &unresolved)
                        f->cache_bytes += sizeof(*res) + res->n_frames * sizeof(res->frames[0]);
        }

        /* Keep the outermost frames: the function the code belongs to
         * matters more than the deepest inlined helper. */
        first = res->n_frames > max ? res->n_frames - max : 0;
        memcpy(frames, res->frames + first, (res->n_frames - first) * sizeof(frames[0]));
        return (int) (res->n_frames - first);
}

static uint64_t sym_file_bytes(const sym_file *f) {
        return f->base_bytes + f->dwarf_bytes + f->cache_bytes;
}

uint64_t symbolizer_cache_bytes(const symbolizer *s) {
        uint64_t total = 0;

        for (size_t i = 0; i < s->n_files; i++)
                total += sym_file_bytes(s->files[i]);
        return total;
}

static int sym_file_compare_last_used(const void *a, const void *b) {
        const sym_file *x = *(const sym_file *const *) a, *y = *(const sym_file *const *) b;

        return x->last_used < y->last_used ? -1 : x->last_used > y->last_used;
}

/* Unlinks f from the symbolizer's maps and frees it. */
static void symbolizer_evict(symbolizer *s, sym_file *f) {
        void *v;

        for (size_t i = 0; i < f->n_keys; i++)
                (void) hashmap_remove(s->by_stat, f->keys[i]);
        if (f->build_id && hashmap_get(s->by_build_id, f->build_id, &v) >= 0 && v == f)
                (void) hashmap_remove(s->by_build_id, f->build_id);
        sym_file_free(f);
}

size_t symbolizer_trim(symbolizer *s) {
        uint64_t total = symbolizer_cache_bytes(s);
        size_t n_evicted = 0, n_kept = 0;

        if (total <= s->budget)
                return 0;
        /* Oldest first; the survivors stay in that order, which is as good
         * as any (the array has no order of its own). */
        qsort(s->files, s->n_files, sizeof(*s->files), sym_file_compare_last_used);
        for (size_t i = 0; i < s->n_files; i++) {
                sym_file *f = s->files[i];

                if (total > s->budget) {
                        total -= sym_file_bytes(f);
                        symbolizer_evict(s, f);
                        n_evicted++;
                } else
                        s->files[n_kept++] = f;
        }
        s->n_files = n_kept;
        s->generation++;
        return n_evicted;
}

int symbolizer_load_kallsyms(symbolizer *s, const char *path) {
        return kernel_table_load(&s->kernel, path);
}

const char *symbolizer_lookup_kernel(const symbolizer *s, uint64_t addr, const char **ret_module) {
        return kernel_table_lookup(&s->kernel, addr, ret_module);
}
