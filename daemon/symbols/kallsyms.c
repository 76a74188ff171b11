/* Kernel frames: /proc/kallsyms read into one sorted table of text symbols, looked up by binary search. */
#include "kallsyms.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bsearch.h"
#include "dwarf-copy.h"
#include "helpers.h"
#include "macro.h"

/* No kernel function is anywhere near this long, so an address further than
 * this past the nearest symbol lies in data, a gap, or past the end of the
 * table (kallsyms gives no sizes) and is better left unresolved. */
#define KERNEL_SYMBOL_MAX_SPAN (UINT64_C(1) << 20)

/* A growing buffer of NUL-terminated strings addressed by offset, because
 * realloc moves it while it fills. */
struct string_arena {
        char *buf;
        size_t len;
        size_t allocated;
};

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

                r = array_grow(&buf, &allocated, need, 1);
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

void kernel_table_done(struct kernel_table *t) {
        if (t->map)
                munmap(t->map, t->map_size);
        else {
                free(t->syms);
                free(t->names);
        }
        *t = (struct kernel_table) {};
}

uint64_t kernel_table_bytes(const struct kernel_table *t) {
        return t->map ? 0 : t->n_syms * sizeof(*t->syms) + t->names_size;
}

uint64_t kernel_table_mapped_bytes(const struct kernel_table *t) {
        return t->map ? t->map_size : 0;
}

int kernel_table_map(struct kernel_table *t, const char *dir) {
        size_t syms_size = t->n_syms * sizeof(*t->syms), size = syms_size + t->names_size;
        _cleanup_close_ int fd = -1;
        void *map;
        int r;

        if (t->map || t->n_syms == 0)
                return 0;
        if (!dwarf_copy_fits(dir, size))
                return -ENOSPC;
        fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        /* the names after the 16-byte entries: both stay aligned */
        r = pwrite_all(fd, t->syms, syms_size, 0);
        if (r >= 0)
                r = pwrite_all(fd, t->names, t->names_size, syms_size);
        if (r < 0)
                return r;
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
                return negative_errno();
        free(t->syms);
        free(t->names);
        t->syms = map;
        t->names = (char *) map + syms_size;
        t->map = map;
        t->map_size = size;
        return 0;
}

int64_t kernel_table_unmap(struct kernel_table *t) {
        size_t syms_size = t->n_syms * sizeof(*t->syms), size;
        struct kernel_sym *syms;
        char *names;

        if (!t->map)
                return 0;
        syms = malloc(MAX(syms_size, (size_t) 1));
        names = malloc(MAX(t->names_size, (size_t) 1));
        if (!syms || !names) {
                free(syms);
                free(names);
                return -ENOMEM;
        }
        memcpy(syms, t->syms, syms_size);
        memcpy(names, t->names, t->names_size);
        munmap(t->map, t->map_size);
        t->syms = syms;
        t->names = names;
        t->map = NULL;
        size = t->map_size;
        t->map_size = 0;
        return (int64_t) size;
}

void kernel_table_drop_pages(struct kernel_table *t) {
        /* read-only and never written: the pages stay the file's */
        if (t->map)
                (void) madvise(t->map, t->map_size, MADV_DONTNEED);
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

        for (int d; (d = unhex_char(*p)) >= 0; p++) {
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

/* A kallsyms-format file, read a line at a time. */
struct kallsyms_reader {
        FILE *file;
        char *line;
        size_t line_size;
        bool any_address; /* a line read so far had a non-zero address */
};

/* One line, split in place in the reader's buffer (valid until the next). */
struct kallsyms_line {
        uint64_t addr;
        char type;
        char *name, *module; /* module: NULL for the kernel image */
};

/* Reads the next well-formed line (others are skipped). Returns 1, 0 at the
 * end of the file, or -EIO or -ENOMEM. */
static int kallsyms_next(struct kallsyms_reader *rd, struct kallsyms_line *ret) {
        for (;;) {
                errno = 0;
                if (getline(&rd->line, &rd->line_size, rd->file) < 0) {
                        if (ferror(rd->file))
                                return errno == ENOMEM ? -ENOMEM : -EIO;
                        return 0;
                }
                if (kallsyms_parse_line(rd->line, &ret->addr, &ret->type, &ret->name, &ret->module) < 0)
                        continue;
                rd->any_address = rd->any_address || ret->addr != 0;
                return 1;
        }
}

static void kallsyms_reader_done(struct kallsyms_reader *rd) {
        if (rd->file)
                fclose(rd->file);
        free(rd->line);
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

/* A symbol as read, before the table is sorted and made compact: the type
 * only orders aliases. */
struct kernel_sym_read {
        uint64_t start;
        uint32_t name_off, module_off;
        char type;
};

static int kernel_sym_compare(const void *a, const void *b, void *userdata) {
        const struct kernel_sym_read *x = a, *y = b;
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

int kernel_table_load(struct kernel_table *t, const char *path) {
        _cleanup_(string_arena_done) struct string_arena names = {};
        _cleanup_free_ struct kernel_sym_read *syms = NULL;
        _cleanup_(kallsyms_reader_done) struct kallsyms_reader rd = {};
        size_t n_syms = 0, allocated = 0, n_kept = 0;
        size_t last_module_off = SIZE_MAX;
        struct kallsyms_line l;
        struct kernel_sym *table;
        uint64_t last_start = 0;
        char *names_fit;
        int r;

        rd.file = fopen(path, "re");
        if (!rd.file)
                return negative_errno();

        while ((r = kallsyms_next(&rd, &l)) > 0) {
                const char *name = l.name, *module = l.module;
                size_t name_off, module_off = SIZE_MAX;
                uint64_t addr = l.addr;
                char type = l.type;

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

                /* offsets are 32-bit in the table (names are ~3 MiB) */
                if (names.len >= UINT32_MAX)
                        return -ENOMEM;
                r = array_grow((void **) &syms, &allocated, n_syms + 1, sizeof(*syms));
                if (r < 0)
                        return r;
                syms[n_syms++] = (struct kernel_sym_read) {
                        .start = addr,
                        .name_off = (uint32_t) name_off,
                        .module_off = module_off == SIZE_MAX ? UINT32_MAX : (uint32_t) module_off,
                        .type = type,
                };
        }
        if (r < 0)
                return r;
        if (!rd.any_address)
                return -ENODATA;

        qsort_r(syms, n_syms, sizeof(*syms), kernel_sym_compare, names.buf);
        /* One symbol per address, written compact over the array read: the
         * i-th 16-byte entry ends before the i-th read entry does, so
         * nothing not yet read is overwritten. */
        table = (struct kernel_sym *) (void *) syms;
        for (size_t i = 0; i < n_syms; i++) {
                struct kernel_sym_read s = syms[i];

                if (n_kept > 0 && last_start == s.start)
                        continue;
                last_start = s.start;
                memcpy(&table[n_kept++], &(struct kernel_sym) {
                        .start = s.start, .name_off = s.name_off, .module_off = s.module_off,
                }, sizeof(struct kernel_sym));
        }
        /* Both arrays grew by doubling: give back what they did not fill
         * (~4 MiB of the ~10 MiB a kernel's table took). */
        table = n_kept > 0 ? realloc(syms, n_kept * sizeof(*table)) : NULL;
        if (table)
                syms = NULL;
        else
                table = (struct kernel_sym *) (void *) TAKE_PTR(syms);
        names_fit = realloc(names.buf, MAX(names.len, (size_t) 1));
        if (names_fit)
                names.buf = names_fit;

        kernel_table_done(t);
        *t = (struct kernel_table) {
                .syms = table,
                .n_syms = n_kept,
                .names = TAKE_PTR(names.buf),
                .names_size = names.len,
        };
        return 0;
}

int kallsyms_find(const char *path, const char *const *names, size_t n, uint64_t *ret) {
        _cleanup_(kallsyms_reader_done) struct kallsyms_reader rd = {};
        struct kallsyms_line l;
        int r;

        for (size_t i = 0; i < n; i++)
                ret[i] = 0;
        rd.file = fopen(path, "re");
        if (!rd.file)
                return negative_errno();
        while ((r = kallsyms_next(&rd, &l)) > 0)
                for (size_t i = 0; i < n && !l.module; i++)
                        if (ret[i] == 0 && streq(l.name, names[i]))
                                ret[i] = l.addr;
        if (r < 0)
                return r;
        return rd.any_address ? 0 : -ENODATA;
}

const char *kernel_table_lookup(const struct kernel_table *t, uint64_t addr, const char **ret_module) {
        size_t lo = UPPER_BOUND_BY(t->syms, t->n_syms, start, addr);
        const struct kernel_sym *sym;

        if (ret_module)
                *ret_module = NULL;
        if (lo == 0)
                return NULL;
        sym = &t->syms[lo - 1];
        if (addr - sym->start > KERNEL_SYMBOL_MAX_SPAN)
                return NULL;
        if (ret_module && sym->module_off != UINT32_MAX)
                *ret_module = t->names + sym->module_off;
        return t->names + sym->name_off;
}
