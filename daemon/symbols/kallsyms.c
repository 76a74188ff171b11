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
#include "hashmap.h"
#include "helpers.h"
#include "macro.h"

/* No kernel function is anywhere near this long, so an address further than
 * this past the nearest symbol lies in data, a gap, or past the end of the
 * table (kallsyms gives no sizes) and is better left unresolved. */
#define KERNEL_SYMBOL_MAX_SPAN (UINT64_C(1) << 20)

/* Symbols in a block of the lookup index: 4 KiB of entries, so that a
 * lookup in a mapped table reads one run of the entries' pages (a fault
 * maps up to 64 KiB around the page read, where a binary search over all
 * of them would fault in pages across the whole array: ~2 MiB). */
#define KERNEL_BLOCK_SYMS 256

void kernel_table_done(struct kernel_table *t) {
        if (t->map)
                munmap(t->map, t->map_size);
        else {
                free(t->syms);
                free(t->names);
        }
        free(t->block_starts);
        hashmap_free(t->memo);
        *t = (struct kernel_table) {};
}

static size_t n_blocks_for(size_t n_syms) {
        return (n_syms + KERNEL_BLOCK_SYMS - 1) / KERNEL_BLOCK_SYMS;
}

static size_t kernel_table_n_blocks(const struct kernel_table *t) {
        return n_blocks_for(t->n_syms);
}

uint64_t kernel_table_bytes(const struct kernel_table *t) {
        uint64_t index = kernel_table_n_blocks(t) * sizeof(*t->block_starts);

        return index + hashmap_bytes(t->memo) + (t->map ? 0 : t->n_syms * sizeof(*t->syms) + t->names_size);
}

uint64_t kernel_table_mapped_bytes(const struct kernel_table *t) {
        return t->map ? t->map_size : 0;
}

int kernel_table_map(struct kernel_table *t, const char *dir) {
        /* the names after the 16-byte entries: both stay aligned */
        const void *bufs[] = { t->syms, t->names };
        size_t sizes[] = { t->n_syms * sizeof(*t->syms), t->names_size }, size;
        void *map;
        int r;

        if (t->map || t->n_syms == 0)
                return 0;
        r = scratch_map(dir, bufs, sizes, ELEMENTSOF(bufs), &map, &size);
        if (r < 0)
                return r;
        free(t->syms);
        free(t->names);
        t->syms = map;
        t->names = (char *) map + sizes[0];
        t->map = map;
        t->map_size = size;
        t->map_read = true; /* whatever writing it left */
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
        if (t->map && t->map_read)
                (void) madvise(t->map, t->map_size, MADV_DONTNEED);
        t->map_read = false;
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

/* While the table is read and sorted, the top two bits of an entry's
 * name_off hold its type's rank (names take ~3 MiB, far below 1 GiB), so
 * that symbols are read straight into their 16-byte entries. */
#define NAME_OFF_BITS 30
#define NAME_OFF_MASK ((UINT32_C(1) << NAME_OFF_BITS) - 1)

static int kernel_sym_compare(const void *a, const void *b, void *userdata) {
        const struct kernel_sym *x = a, *y = b;
        const char *names = userdata;
        const char *nx = names + (x->name_off & NAME_OFF_MASK), *ny = names + (y->name_off & NAME_OFF_MASK);
        int rx = (int) (x->name_off >> NAME_OFF_BITS), ry = (int) (y->name_off >> NAME_OFF_BITS), ux, uy;

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

/* The text symbols of a kallsyms file: counted (syms NULL), or read into
 * arrays sized by the count. */
struct text_syms {
        struct kernel_sym *syms;
        char *names;
        size_t max_syms, max_names; /* room in syms and names */
        size_t n_syms, names_size;  /* found */
        struct kernel_range text;   /* _stext and _etext, when found */
};

/* Returns 0, -ENOMEM past the offsets' range, or -EAGAIN when the file
 * holds more than counted before. */
static int text_syms_add_name(struct text_syms *ts, const char *name, uint32_t *ret_off) {
        size_t n = strlen(name) + 1;

        if (n > NAME_OFF_MASK - ts->names_size)
                return -ENOMEM;
        if (ts->names) {
                if (n > ts->max_names - ts->names_size)
                        return -EAGAIN;
                memcpy(ts->names + ts->names_size, name, n);
        }
        *ret_off = (uint32_t) ts->names_size;
        ts->names_size += n;
        return 0;
}

/* One pass over the file. Returns 0, a negative errno from opening it,
 * -EIO or -ENOMEM from reading it, -EAGAIN (above), or -ENODATA when every
 * address in it is zero. */
static int kallsyms_read_text(const char *path, struct text_syms *ts) {
        _cleanup_(kallsyms_reader_done) struct kallsyms_reader rd = {};
        _cleanup_free_ char *last_module = NULL;
        uint32_t last_module_off = UINT32_MAX;
        struct kallsyms_line l;
        int r;

        rd.file = fopen(path, "re");
        if (!rd.file)
                return negative_errno();
        while ((r = kallsyms_next(&rd, &l)) > 0) {
                uint32_t name_off, module_off = UINT32_MAX;

                if (l.addr == 0 || !kallsyms_type_is_text(l.type))
                        continue;
                if (!l.module && l.name[0] == '_') {
                        if (streq(l.name, "_stext"))
                                ts->text.start = l.addr;
                        else if (streq(l.name, "_etext"))
                                ts->text.end = l.addr;
                }
                r = text_syms_add_name(ts, l.name, &name_off);
                if (r < 0)
                        return r;
                if (l.module) {
                        /* A module's symbols come in one run: its name is stored once per run. */
                        if (!last_module || !streq(last_module, l.module)) {
                                free(last_module);
                                last_module = strdup(l.module);
                                if (!last_module)
                                        return -ENOMEM;
                                r = text_syms_add_name(ts, l.module, &last_module_off);
                                if (r < 0)
                                        return r;
                        }
                        module_off = last_module_off;
                }
                if (ts->syms) {
                        if (ts->n_syms == ts->max_syms)
                                return -EAGAIN;
                        ts->syms[ts->n_syms] = (struct kernel_sym) {
                                .start = l.addr,
                                .name_off = name_off | (uint32_t) kernel_type_rank(l.type) << NAME_OFF_BITS,
                                .module_off = module_off,
                        };
                }
                ts->n_syms++;
        }
        if (r < 0)
                return r;
        return rd.any_address ? 0 : -ENODATA;
}

/* Reads the file twice, counting and then filling arrays of the exact
 * size: the first drain reads kallsyms, and arrays grown by doubling took
 * 12 MiB of heap at once there (names 6, symbols 3, the sort's copy 3),
 * where these take 7. Kernel code that grew in between (a module loaded)
 * is read again. */
int kernel_table_load(struct kernel_table *t, const char *path) {
        for (unsigned attempt = 0;; attempt++) {
                _cleanup_free_ struct kernel_sym *syms = NULL;
                _cleanup_free_ uint64_t *block_starts = NULL;
                _cleanup_free_ char *names = NULL;
                struct text_syms count = {}, fill;
                size_t n_kept = 0, n_blocks;
                int r;

                r = kallsyms_read_text(path, &count);
                if (r < 0)
                        return r;
                syms = malloc(MAX(count.n_syms, (size_t) 1) * sizeof(*syms));
                names = malloc(MAX(count.names_size, (size_t) 1));
                if (!syms || !names)
                        return -ENOMEM;
                fill = (struct text_syms) {
                        .syms = syms, .names = names, .max_syms = count.n_syms, .max_names = count.names_size,
                };
                r = kallsyms_read_text(path, &fill);
                if (r == -EAGAIN && attempt < 2)
                        continue;
                if (r < 0)
                        return r;

                qsort_r(syms, fill.n_syms, sizeof(*syms), kernel_sym_compare, names);
                /* one symbol per address, the first in that order */
                for (size_t i = 0; i < fill.n_syms; i++) {
                        if (n_kept > 0 && syms[n_kept - 1].start == syms[i].start)
                                continue;
                        syms[n_kept] = syms[i];
                        syms[n_kept++].name_off &= NAME_OFF_MASK;
                }
                n_blocks = n_blocks_for(n_kept);
                block_starts = malloc(MAX(n_blocks, (size_t) 1) * sizeof(*block_starts));
                if (!block_starts)
                        return -ENOMEM;
                for (size_t b = 0; b < n_blocks; b++)
                        block_starts[b] = syms[b * KERNEL_BLOCK_SYMS].start;
                if (n_kept < count.n_syms && n_kept > 0) {
                        struct kernel_sym *fit = realloc(syms, n_kept * sizeof(*syms));

                        if (fit)
                                syms = fit;
                }

                kernel_table_done(t);
                *t = (struct kernel_table) {
                        .syms = TAKE_PTR(syms),
                        .n_syms = n_kept,
                        .names = TAKE_PTR(names),
                        .names_size = fill.names_size,
                        .text = fill.text.start < fill.text.end ? fill.text : (struct kernel_range) {},
                        .block_starts = TAKE_PTR(block_starts),
                };
                return 0;
        }
}

int kallsyms_find_ranges(const char *path, const char *const *names, size_t n, uint64_t *ret, uint64_t *ret_end) {
        _cleanup_(kallsyms_reader_done) struct kallsyms_reader rd = {};
        struct kallsyms_line l;
        size_t open = 0; /* found, end not yet */
        int r;

        for (size_t i = 0; i < n; i++) {
                ret[i] = 0;
                if (ret_end)
                        ret_end[i] = 0;
        }
        rd.file = fopen(path, "re");
        if (!rd.file)
                return negative_errno();
        while ((r = kallsyms_next(&rd, &l)) > 0) {
                if (l.module)
                        continue;
                for (size_t i = 0; ret_end && open > 0 && i < n; i++)
                        if (ret[i] && !ret_end[i] && l.addr > ret[i]) {
                                ret_end[i] = l.addr;
                                open--;
                        }
                for (size_t i = 0; i < n; i++)
                        if (ret[i] == 0 && streq(l.name, names[i])) {
                                ret[i] = l.addr;
                                open++;
                        }
        }
        if (r < 0)
                return r;
        return rd.any_address ? 0 : -ENODATA;
}

int kallsyms_find(const char *path, const char *const *names, size_t n, uint64_t *ret) {
        return kallsyms_find_ranges(path, names, n, ret, NULL);
}

static int kernel_range_compare(const void *a, const void *b) {
        const struct kernel_range *x = a, *y = b;

        return x->start < y->start ? -1 : x->start > y->start;
}

void kernel_ranges_sort(struct kernel_range *r, size_t n) {
        if (n > 0)
                qsort(r, n, sizeof(*r), kernel_range_compare);
}

bool kernel_table_covers(const struct kernel_table *t, const struct kernel_range *own, size_t n_own, uint64_t addr) {
        size_t k;

        if (addr >= t->text.start && addr < t->text.end)
                return true;
        /* the last range starting at or before addr */
        k = UPPER_BOUND_BY(own, n_own, start, addr);
        return k > 0 && addr < own[k - 1].end;
}

/* A memo's value: the symbol's name and module offsets, or MEMO_NONE for
 * an address in no function. */
#define MEMO_NONE UINT64_MAX

/* the values are kept in the map's value pointers */
_Static_assert(sizeof(void *) >= sizeof(uint64_t), "64-bit pointers");

static uint64_t memo_value(const struct kernel_sym *sym) {
        return sym ? (uint64_t) sym->module_off << 32 | sym->name_off : MEMO_NONE;
}

/* The symbol of the table containing addr, or NULL. */
static const struct kernel_sym *kernel_table_find(const struct kernel_table *t, uint64_t addr) {
        size_t b = UPPER_BOUND(t->block_starts, kernel_table_n_blocks(t), addr), n, k;
        const struct kernel_sym *block, *sym;

        if (b == 0)
                return NULL;
        /* in the block the index names, whose first symbol starts at or
         * before addr: k >= 1 */
        block = t->syms + (b - 1) * KERNEL_BLOCK_SYMS;
        n = MIN(t->n_syms - (b - 1) * KERNEL_BLOCK_SYMS, (size_t) KERNEL_BLOCK_SYMS);
        k = UPPER_BOUND_BY(block, n, start, addr);
        sym = &block[k - 1];
        return addr - sym->start > KERNEL_SYMBOL_MAX_SPAN ? NULL : sym;
}

const char *kernel_table_lookup(struct kernel_table *t, uint64_t addr, const char **ret_module) {
        uint64_t value;
        void *v;

        if (ret_module)
                *ret_module = NULL;
        if (t->n_syms == 0)
                return NULL;
        if (t->memo && hashmap_get(t->memo, UINT64_TO_KEY(addr), &v) >= 0)
                value = (uint64_t) (uintptr_t) v;
        else {
                value = memo_value(kernel_table_find(t, addr));
                t->map_read = true; /* its syms, and its name when the caller stores it */
                /* full: start over (the next drain's addresses are mostly
                 * this one's, and come back within a key or two) */
                if (t->memo && hashmap_size(t->memo) >= KERNEL_MEMO_MAX)
                        t->memo = hashmap_free(t->memo);
                if (!t->memo)
                        t->memo = hashmap_new_u64();
                if (t->memo)
                        (void) hashmap_put(t->memo, UINT64_TO_KEY(addr), (void *) (uintptr_t) value);
        }
        if (value == MEMO_NONE)
                return NULL;
        if (ret_module && (uint32_t) (value >> 32) != UINT32_MAX)
                *ret_module = t->names + (uint32_t) (value >> 32);
        return t->names + (uint32_t) value;
}
