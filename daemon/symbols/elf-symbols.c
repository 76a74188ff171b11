/* ELF reading: load segments, function symbols as libdwfl ranks them, build-id notes, .gnu_debuglink. */
#include "elf-symbols.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bsearch.h"
#include "dwarf-copy.h"
#include "helpers.h"
#include "macro.h"

void func_table_done(struct func_table *t) {
        if (t->mapped)
                munmap(t->syms, func_table_bytes(t));
        else {
                free(t->syms);
                free(t->names);
        }
        *t = (struct func_table) {};
}

int func_table_map(struct func_table *t, const char *dir, size_t min_bytes) {
        /* the names after the 16-byte symbols: both stay aligned */
        size_t syms_size = t->n_syms * sizeof(*t->syms);
        const void *bufs[] = { t->syms, t->names };
        size_t sizes[] = { syms_size, t->names_len }, size;
        void *map;
        int r;

        if (t->mapped || t->n_syms == 0 || func_table_bytes(t) < min_bytes)
                return 0;
        r = scratch_map(dir, bufs, sizes, ELEMENTSOF(bufs), &map, &size);
        if (r < 0)
                return r;
        free(t->syms);
        free(t->names);
        t->syms = map;
        t->names = (char *) map + syms_size;
        t->mapped = true;
        return 0;
}

int64_t func_table_unmap(struct func_table *t) {
        size_t syms_size = t->n_syms * sizeof(*t->syms);
        struct func_sym *syms;
        char *names;

        if (!t->mapped)
                return 0;
        syms = malloc(MAX(syms_size, (size_t) 1));
        names = malloc(MAX(t->names_len, (size_t) 1));
        if (!syms || !names) {
                free(syms);
                free(names);
                return -ENOMEM;
        }
        memcpy(syms, t->syms, syms_size);
        memcpy(names, t->names, t->names_len);
        munmap(t->syms, func_table_bytes(t));
        t->syms = syms;
        t->names = names;
        t->mapped = false;
        return (int64_t) func_table_bytes(t);
}

void func_table_drop_pages(const struct func_table *t) {
        /* a private read-only file mapping never written: the pages only
         * leave us, the file keeps them */
        if (t->mapped)
                (void) madvise(t->syms, func_table_bytes(t), MADV_DONTNEED);
}

int elf_check_headers(Elf *e, const GElf_Ehdr *ehdr) {
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

int elf_read_build_id(Elf *e, char **ret) {
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

int elf_read_segments(Elf *e, struct load_segment **ret, size_t *ret_n) {
        _cleanup_free_ struct load_segment *segments = NULL;
        size_t n_phdrs, n = 0, allocated = 0;

        *ret = NULL;
        *ret_n = 0;
        if (elf_getphdrnum(e, &n_phdrs) < 0)
                return 0;
        for (size_t i = 0; i < n_phdrs; i++) {
                GElf_Phdr phdr;
                int r;

                if (!gelf_getphdr(e, (int) i, &phdr) || phdr.p_type != PT_LOAD || phdr.p_filesz == 0)
                        continue;
                r = array_grow((void **) &segments, &allocated, n + 1, sizeof(*segments));
                if (r < 0)
                        return r;
                segments[n++] = (struct load_segment) {
                        .offset = phdr.p_offset,
                        .vaddr = phdr.p_vaddr,
                        .filesz = phdr.p_filesz,
                };
        }
        *ret = TAKE_PTR(segments);
        *ret_n = n;
        return 0;
}

bool load_segments_vaddr(const struct load_segment *segments, size_t n, uint64_t file_offset,
                         uint64_t *ret_vaddr, const struct load_segment **ret_seg) {
        /* A handful of segments in program header order, which need not be
         * sorted by offset: a scan, as before any search. */
        for (size_t i = 0; i < n; i++)
                if (file_offset >= segments[i].offset && file_offset - segments[i].offset < segments[i].filesz) {
                        *ret_vaddr = file_offset - segments[i].offset + segments[i].vaddr;
                        *ret_seg = &segments[i];
                        return true;
                }
        return false;
}

/* A function symbol while the Elf is still open: name points into libelf's
 * copy of the string table. 32 bytes: libjvm's symbol table has 58 k of
 * them, collected while libelf holds 5 MiB of its tables, the peak of the
 * daemon's heap on a host that starts JVMs. */
struct raw_sym {
        uint64_t start;
        uint64_t size;
        const char *name;
        uint32_t index; /* in its symbol table (the table's size is an int for gelf_getsym) */
        uint8_t rank;
        uint8_t dwfl_rank; /* libdwfl's order: global part first, then GLOBAL over WEAK, lower is better */
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
                        .index = (uint32_t) i,
                        .dwfl_rank = dwfl_binding_rank(GELF_ST_BIND(sym.st_info)),
                };
        }
        return 0;
}

int elf_read_functions(Elf *e, bool symtab_only, struct func_table *t) {
        _cleanup_free_ struct raw_sym *raw = NULL;
        _cleanup_free_ struct func_entry *entries = NULL;
        size_t n_raw = 0, allocated = 0, n_kept = 0;
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
         * them too. */
        entries = reallocarray(NULL, n_raw, sizeof(*entries));
        if (!entries)
                return -ENOMEM;
        for (size_t i = 0; i < n_raw;) {
                size_t j = i + 1, pick = i;
                uint64_t alias_size = 0;

                for (; j < n_raw && raw[j].start == raw[i].start; j++) {
                        alias_size = MAX(alias_size, raw[j].size);
                        if (raw_sym_dwfl_better(&raw[j], &raw[pick]))
                                pick = j;
                }
                entries[n_kept++] = (struct func_entry) {
                        .start = raw[i].start,
                        .size = raw[i].size ? raw[i].size : alias_size,
                        .name = raw[i].name,
                        .dwfl_name = raw[pick].name,
                };
                i = j;
        }
        /* before the table is packed, which copies the names */
        free(TAKE_PTR(raw));
        r = func_table_pack(t, entries, n_kept);
        if (r < 0)
                return r == -E2BIG ? 0 : r;
        t->kind = kind;
        return 0;
}

int func_table_pack(struct func_table *t, const struct func_entry *e, size_t n) {
        size_t names_len = 0, pos = 0;

        if (n == 0)
                return 0;
        /* sorted: those too far above the first are at the end */
        for (size_t i = 0; i < n; i++) {
                if (e[i].start - e[0].start > UINT32_MAX) {
                        n = i;
                        break;
                }
                names_len += strlen(e[i].name) + 1;
                if (e[i].dwfl_name != e[i].name)
                        names_len += strlen(e[i].dwfl_name) + 1;
        }
        if (names_len > UINT32_MAX)
                return -E2BIG;
        t->names = malloc(names_len);
        t->syms = reallocarray(NULL, n, sizeof(*t->syms));
        if (!t->names || !t->syms) {
                func_table_done(t);
                return -ENOMEM;
        }
        t->base = e[0].start;
        for (size_t i = 0; i < n; i++) {
                size_t len = strlen(e[i].name) + 1;

                memcpy(t->names + pos, e[i].name, len);
                t->syms[i] = (struct func_sym) {
                        .start = (uint32_t) (e[i].start - t->base),
                        .size = (uint32_t) MIN(e[i].size, (uint64_t) UINT32_MAX),
                        .name = (uint32_t) pos,
                        .dwfl_name = (uint32_t) pos,
                };
                pos += len;
                if (e[i].dwfl_name != e[i].name) {
                        len = strlen(e[i].dwfl_name) + 1;
                        memcpy(t->names + pos, e[i].dwfl_name, len);
                        t->syms[i].dwfl_name = (uint32_t) pos;
                        pos += len;
                }
        }
        t->n_syms = n;
        t->names_len = names_len;
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

bool elf_has_dwarf(Elf *e) {
        GElf_Shdr shdr;

        if (elf_find_section(e, ".debug_info", &shdr) && shdr.sh_type != SHT_NOBITS && shdr.sh_size > 0)
                return true;
        return elf_find_section(e, ".zdebug_info", &shdr) && shdr.sh_type != SHT_NOBITS && shdr.sh_size > 0;
}

int elf_read_debuglink(Elf *e, char **ret_name, uint32_t *ret_crc) {
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

const struct func_sym *func_table_find(const struct func_table *t, uint64_t vaddr,
                                       const struct load_segment *seg) {
        uint64_t rel = vaddr - t->base;
        size_t lo;
        const struct func_sym *sym;

        if (t->n_syms == 0 || vaddr < t->base)
                return NULL;
        lo = UPPER_BOUND_BY(t->syms, t->n_syms, start, rel);
        if (lo == 0)
                return NULL;
        sym = &t->syms[lo - 1];

        if (sym->size > 0)
                return rel - sym->start < sym->size ? sym : NULL;
        /* Without a size the symbol is taken to run up to the next one (which
         * starts after vaddr, by the search) but not across segments. */
        return func_sym_start(t, sym) >= seg->vaddr ? sym : NULL;
}
