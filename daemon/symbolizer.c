/* Address-to-function lookup from ELF symbol tables and kallsyms, with a file cache shared by all processes. */
#include "symbolizer.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hashmap.h"
#include "macro.h"

/* No kernel function is anywhere near this long, so an address further than
 * this past the nearest symbol lies in data, a gap, or past the end of the
 * table (kallsyms gives no sizes) and is better left unresolved. */
#define KERNEL_SYMBOL_MAX_SPAN (UINT64_C(1) << 20)

struct func_sym {
        uint64_t start;
        uint64_t size; /* 0 for symbols without a size (hand-written assembly) */
        const char *name; /* points into sym_file.names */
};

/* A PT_LOAD program header: how file offsets map to virtual addresses. */
struct load_segment {
        uint64_t offset;
        uint64_t vaddr;
        uint64_t filesz;
};

struct sym_file {
        char *build_id;
        struct load_segment *segments;
        size_t n_segments;
        struct func_sym *syms; /* sorted by start, starts unique */
        size_t n_syms;
        char *names; /* one allocation for every name, so the Elf can be closed */
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

struct kernel_sym {
        uint64_t start;
        size_t name_off; /* into kernel_table.names */
        size_t module_off; /* into kernel_table.names, or SIZE_MAX for the kernel image */
        char type;
};

struct kernel_table {
        struct kernel_sym *syms; /* sorted by start, starts unique */
        size_t n_syms;
        char *names;
};

struct symbolizer {
        hashmap *by_stat; /* struct file_key * (owned here) -> sym_file * */
        hashmap *by_build_id; /* sym_file.build_id -> sym_file * */
        sym_file **files; /* owns every sym_file exactly once; the maps may alias one file */
        size_t n_files;
        size_t n_files_allocated;
        struct kernel_table kernel;
};

/* A growing buffer of NUL-terminated strings addressed by offset, because
 * realloc moves it while it fills. */
struct string_arena {
        char *buf;
        size_t len;
        size_t allocated;
};

static int grow_array(void **array, size_t *allocated, size_t need, size_t elem_size) {
        size_t n;
        void *p;

        if (need <= *allocated)
                return 0;
        n = MAX(need, MAX(*allocated * 2, (size_t) 16));
        p = reallocarray(*array, n, elem_size);
        if (!p)
                return -ENOMEM;
        *array = p;
        *allocated = n;
        return 0;
}

/* Returns 0 and the offset of the copy, or -ENOMEM. */
static int string_arena_add(struct string_arena *a, const char *s, size_t n, size_t *ret_off) {
        size_t need;
        int r;

        if (n >= SIZE_MAX - a->len)
                return -ENOMEM;
        need = a->len + n + 1;
        if (need > a->allocated) {
                size_t allocated = a->allocated;
                void *buf = a->buf;

                r = grow_array(&buf, &allocated, need, 1);
                if (r < 0)
                        return r;
                a->buf = buf;
                a->allocated = allocated;
        }
        memcpy(a->buf + a->len, s, n);
        a->buf[a->len + n] = '\0';
        *ret_off = a->len;
        a->len = need;
        return 0;
}

static void string_arena_done(struct string_arena *a) {
        free(a->buf);
}

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

static sym_file *sym_file_free(sym_file *f) {
        if (f) {
                free(f->build_id);
                free(f->segments);
                free(f->syms);
                free(f->names);
                free(f);
        }
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(sym_file *, sym_file_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(Elf *, elf_end);

static void kernel_table_done(struct kernel_table *t) {
        free(t->syms);
        free(t->names);
        *t = (struct kernel_table) {};
}

int symbolizer_new(symbolizer **ret) {
        symbolizer *s;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->by_stat = hashmap_new(file_key_hash, file_key_eq);
        s->by_build_id = hashmap_new_string();
        if (!s->by_stat || !s->by_build_id) {
                symbolizer_free(s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

symbolizer *symbolizer_free(symbolizer *s) {
        const void *key;
        size_t state = 0;

        if (!s)
                return NULL;
        if (s->by_stat)
                while (hashmap_iterate(s->by_stat, &state, &key, NULL))
                        free((void *) key);
        hashmap_free(s->by_stat);
        hashmap_free(s->by_build_id); /* its keys belong to the files */
        for (size_t i = 0; i < s->n_files; i++)
                sym_file_free(s->files[i]);
        free(s->files);
        kernel_table_done(&s->kernel);
        free(s);
        return NULL;
}

const char *sym_file_build_id(const sym_file *f) {
        return f ? f->build_id : NULL;
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
                r = grow_array((void **) &f->segments, &allocated, f->n_segments + 1, sizeof(*f->segments));
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
};

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

                r = grow_array((void **) syms, allocated, *n_syms + 1, sizeof(**syms));
                if (r < 0)
                        return r;
                (*syms)[(*n_syms)++] = (struct raw_sym) {
                        .start = sym.st_value,
                        .size = sym.st_size,
                        .name = name,
                        .rank = binding_rank(GELF_ST_BIND(sym.st_info)),
                };
        }
        return 0;
}

/* Reads .symtab, or .dynsym when .symtab is absent or has no functions (a
 * stripped file), sorts and deduplicates, and copies the names out of the
 * Elf. Returns 0 or -ENOMEM. */
static int elf_read_functions(Elf *e, sym_file *f) {
        _cleanup_free_ struct raw_sym *raw = NULL;
        size_t n_raw = 0, allocated = 0, n_kept = 0, names_len = 0, pos = 0;
        Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
        GElf_Shdr symtab_shdr, dynsym_shdr;
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
        }
        if (n_raw == 0 && dynsym) {
                r = symtab_collect(e, dynsym, &dynsym_shdr, &raw, &n_raw, &allocated);
                if (r < 0)
                        return r;
        }
        if (n_raw == 0)
                return 0;

        qsort(raw, n_raw, sizeof(*raw), raw_sym_compare);

        /* Keep the first of each address; if it has no size, borrow the
         * largest size among its aliases. */
        for (size_t i = 0; i < n_raw;) {
                size_t j = i + 1;
                uint64_t alias_size = 0;

                for (; j < n_raw && raw[j].start == raw[i].start; j++)
                        alias_size = MAX(alias_size, raw[j].size);
                raw[n_kept] = raw[i];
                if (raw[n_kept].size == 0)
                        raw[n_kept].size = alias_size;
                names_len += strlen(raw[i].name) + 1;
                n_kept++;
                i = j;
        }

        f->names = malloc(names_len);
        f->syms = reallocarray(NULL, n_kept, sizeof(*f->syms));
        if (!f->names || !f->syms)
                return -ENOMEM;
        for (size_t i = 0; i < n_kept; i++) {
                size_t len = strlen(raw[i].name) + 1;

                memcpy(f->names + pos, raw[i].name, len);
                f->syms[i] = (struct func_sym) {
                        .start = raw[i].start,
                        .size = raw[i].size,
                        .name = f->names + pos,
                };
                pos += len;
        }
        f->n_syms = n_kept;
        return 0;
}

/* Makes f reachable through the stat key. Returns 0 or -ENOMEM. */
static int symbolizer_index_stat(symbolizer *s, const struct file_key *key, sym_file *f) {
        _cleanup_free_ struct file_key *copy = NULL;
        int r;

        copy = malloc(sizeof(*copy));
        if (!copy)
                return -ENOMEM;
        *copy = *key;
        r = hashmap_put(s->by_stat, copy, f);
        if (r < 0)
                return r;
        TAKE_PTR(copy);
        return 0;
}

int symbolizer_load_file(symbolizer *s, const char *open_path, const sym_file **ret) {
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
                *ret = cached;
                return 0;
        }

        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->build_id = TAKE_PTR(build_id);
        r = elf_read_segments(e, f);
        if (r < 0)
                return r;
        r = elf_read_functions(e, f);
        if (r < 0)
                return r;

        r = grow_array((void **) &s->files, &s->n_files_allocated, s->n_files + 1, sizeof(*s->files));
        if (r < 0)
                return r;
        if (f->build_id) {
                r = hashmap_put(s->by_build_id, f->build_id, f);
                if (r < 0)
                        return r;
        }
        added = TAKE_PTR(f);
        s->files[s->n_files++] = added;

        /* The file stays cached even if this fails (the next load then reads
         * the build-id again), but OOM still propagates. */
        r = symbolizer_index_stat(s, &key, added);
        if (r < 0)
                return r;
        *ret = added;
        return 0;
}

const char *sym_file_lookup(const sym_file *f, uint64_t file_offset) {
        const struct load_segment *seg = NULL;
        const struct func_sym *sym;
        size_t lo = 0, hi;
        uint64_t vaddr;

        if (!f)
                return NULL;
        for (size_t i = 0; i < f->n_segments; i++)
                if (file_offset >= f->segments[i].offset &&
                    file_offset - f->segments[i].offset < f->segments[i].filesz) {
                        seg = &f->segments[i];
                        break;
                }
        if (!seg)
                return NULL;
        vaddr = file_offset - seg->offset + seg->vaddr;

        /* lo ends as the number of symbols starting at or before vaddr. */
        hi = f->n_syms;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (f->syms[mid].start <= vaddr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == 0)
                return NULL;
        sym = &f->syms[lo - 1];

        if (sym->size > 0)
                return vaddr - sym->start < sym->size ? sym->name : NULL;
        /* Without a size the symbol is taken to run up to the next one (which
         * starts after vaddr, by the search) but not across segments. */
        return sym->start >= seg->vaddr ? sym->name : NULL;
}

static int hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Splits one kallsyms line, "ADDR TYPE NAME" optionally followed by
 * "\t[MODULE]", in place. Returns 0, or -EINVAL when the line has another
 * shape. *ret_module is NULL for the kernel image. */
static int kallsyms_parse_line(char *line, uint64_t *ret_addr, char *ret_type,
                               char **ret_name, char **ret_module) {
        uint64_t addr = 0;
        char *p = line, *name, *module = NULL;
        size_t n_digits = 0;
        char type;

        for (int d; (d = hex_digit(*p)) >= 0; p++) {
                if (++n_digits > 16)
                        return -EINVAL;
                addr = addr << 4 | (uint64_t) d;
        }
        if (n_digits == 0 || *p++ != ' ')
                return -EINVAL;
        type = *p++;
        if (!isalpha((unsigned char) type) || *p++ != ' ')
                return -EINVAL;

        name = p;
        p += strcspn(p, " \t\n");
        if (p == name)
                return -EINVAL;
        if (*p == '\t') {
                *p++ = '\0';
                if (*p++ != '[')
                        return -EINVAL;
                module = p;
                p += strcspn(p, "] \t\n");
                if (p == module || *p != ']')
                        return -EINVAL;
                *p++ = '\0';
        } else if (*p == ' ')
                return -EINVAL;
        if (*p == '\n')
                *p++ = '\0';
        if (*p != '\0')
                return -EINVAL;

        *ret_addr = addr;
        *ret_type = type;
        *ret_name = name;
        *ret_module = module;
        return 0;
}

/* Functions live in text, local or global; weak symbols (w, W) are code too,
 * since kallsyms gives weak objects their own letters (v, V). */
static bool kallsyms_type_is_text(char type) {
        return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

/* Text before weak, global before local, then as for ELF aliases. */
static int kernel_type_rank(char type) {
        switch (type) {
        case 'T':
                return 0;
        case 'W':
                return 1;
        case 't':
                return 2;
        default:
                return 3;
        }
}

static int kernel_sym_compare(const void *a, const void *b, void *userdata) {
        const struct kernel_sym *x = a, *y = b;
        const char *names = userdata, *nx = names + x->name_off, *ny = names + y->name_off;
        int rx = kernel_type_rank(x->type), ry = kernel_type_rank(y->type), ux, uy;

        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        if (rx != ry)
                return rx - ry;
        ux = nx[0] == '_';
        uy = ny[0] == '_';
        if (ux != uy)
                return ux - uy;
        return strcmp(nx, ny);
}

int symbolizer_load_kallsyms(symbolizer *s, const char *path) {
        _cleanup_(string_arena_done) struct string_arena names = {};
        _cleanup_free_ struct kernel_sym *syms = NULL;
        _cleanup_fclose_ FILE *file = NULL;
        _cleanup_free_ char *line = NULL;
        size_t n_syms = 0, allocated = 0, line_size = 0, n_kept = 0;
        size_t last_module_off = SIZE_MAX;
        bool any_address = false;
        int r;

        file = fopen(path, "re");
        if (!file)
                return negative_errno();

        for (;;) {
                char *name, *module;
                size_t name_off, module_off = SIZE_MAX;
                uint64_t addr;
                char type;

                errno = 0;
                if (getline(&line, &line_size, file) < 0) {
                        if (ferror(file))
                                return errno == ENOMEM ? -ENOMEM : -EIO;
                        break;
                }
                if (kallsyms_parse_line(line, &addr, &type, &name, &module) < 0)
                        continue;
                if (addr != 0)
                        any_address = true;
                if (addr == 0 || !kallsyms_type_is_text(type))
                        continue;

                r = string_arena_add(&names, name, strlen(name), &name_off);
                if (r < 0)
                        return r;
                if (module) {
                        /* A module's symbols come in one run: store its name once per run. */
                        if (last_module_off != SIZE_MAX && streq(names.buf + last_module_off, module))
                                module_off = last_module_off;
                        else {
                                r = string_arena_add(&names, module, strlen(module), &module_off);
                                if (r < 0)
                                        return r;
                                last_module_off = module_off;
                        }
                }

                r = grow_array((void **) &syms, &allocated, n_syms + 1, sizeof(*syms));
                if (r < 0)
                        return r;
                syms[n_syms++] = (struct kernel_sym) {
                        .start = addr,
                        .name_off = name_off,
                        .module_off = module_off,
                        .type = type,
                };
        }
        if (!any_address)
                return -ENODATA;

        qsort_r(syms, n_syms, sizeof(*syms), kernel_sym_compare, names.buf);
        for (size_t i = 0; i < n_syms; i++)
                if (n_kept == 0 || syms[n_kept - 1].start != syms[i].start)
                        syms[n_kept++] = syms[i];

        kernel_table_done(&s->kernel);
        s->kernel = (struct kernel_table) {
                .syms = TAKE_PTR(syms),
                .n_syms = n_kept,
                .names = TAKE_PTR(names.buf),
        };
        return 0;
}

const char *symbolizer_lookup_kernel(const symbolizer *s, uint64_t addr, const char **ret_module) {
        const struct kernel_table *t = &s->kernel;
        const struct kernel_sym *sym;
        size_t lo = 0, hi = t->n_syms;

        if (ret_module)
                *ret_module = NULL;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (t->syms[mid].start <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == 0)
                return NULL;
        sym = &t->syms[lo - 1];
        if (addr - sym->start > KERNEL_SYMBOL_MAX_SPAN)
                return NULL;
        if (ret_module && sym->module_off != SIZE_MAX)
                *ret_module = t->names + sym->module_off;
        return t->names + sym->name_off;
}
