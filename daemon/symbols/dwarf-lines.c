/* A CU's line program run once into sorted 16-byte rows and a file list, kept instead of libdw's 80-byte rows. */
#include "dwarf-lines.h"

#include <dwarf.h>
#include <gelf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bsearch.h"
#include "bytecursor.h"
#include "helpers.h"

/* Row flag: the row ends a sequence (no line there). */
#define ROW_END (UINT32_C(1) << 31)

/* What a lookup needs of a row: libdw keeps 80 bytes (Dwarf_Line plus its
 * sorting and file list), most of it never read by a profiler. */
struct line_row {
        uint64_t addr;
        int32_t line;
        uint32_t file_end; /* file index, ROW_END when the row ends a sequence */
};

struct line_table {
        struct line_row *rows; /* sorted by addr, one per address */
        size_t n_rows;
        const char **files;
        size_t n_files;
        char **owned; /* the joined names, freed with the table */
        size_t n_owned;
        uint64_t bytes;
};

/* A row while the program runs: its place in the program breaks ties the
 * way libdw's sort does. */
struct raw_row {
        uint64_t addr;
        uint32_t seq;
        int32_t line;
        uint32_t file_end;
};

/* A ULEB128 operand for a register libdw keeps in an unsigned int: false
 * past the data, or past 32 bits (where libdw would truncate it). */
static bool read_register(struct bytecursor *c, uint64_t *reg) {
        *reg = bytecursor_uleb(c);
        return !c->bad && *reg <= UINT32_MAX;
}

/* Little-endian: dwarf-frames.c gives the reader no sections of other files. */
static uint64_t read_fixed(struct bytecursor *c, size_t n) {
        return bytecursor_fixed_le(c, n);
}

static uint8_t read_u8(struct bytecursor *c) {
        return (uint8_t) bytecursor_fixed_le(c, 1);
}

static const char *string_at(const char *section, size_t size, uint64_t offset) {
        /* The section ends with a NUL, so every offset inside it is a string. */
        return section && offset < size ? section + offset : NULL;
}

/* Reads one value of form; a string form sets *ret_string (else NULL), a
 * constant form sets *ret_value. Returns false for forms left to libdw or
 * data past the end. */
static bool read_form(struct bytecursor *c, uint64_t form, unsigned offset_size, const struct line_sections *s,
                      const char **ret_string, uint64_t *ret_value) {
        *ret_string = NULL;
        *ret_value = UINT64_MAX;
        switch (form) {
        case DW_FORM_string: {
                const uint8_t *nul = memchr(c->p, 0, bytecursor_left(c));

                if (!nul)
                        return false;
                *ret_string = (const char *) c->p;
                c->p = nul + 1;
                return true;
        }
        case DW_FORM_line_strp:
        case DW_FORM_strp: {
                bool line_str = form == DW_FORM_line_strp;

                *ret_string = string_at(line_str ? s->line_str : s->str, line_str ? s->line_str_size : s->str_size,
                                        read_fixed(c, offset_size));
                return !c->bad;
        }
        case DW_FORM_data1:
        case DW_FORM_data2:
        case DW_FORM_data4:
        case DW_FORM_data8:
                *ret_value = read_fixed(c, form == DW_FORM_data1 ? 1 :
                                           form == DW_FORM_data2 ? 2 :
                                           form == DW_FORM_data4 ? 4 : 8);
                return !c->bad;
        case DW_FORM_udata:
                *ret_value = bytecursor_uleb(c);
                return !c->bad;
        case DW_FORM_data16: /* DW_LNCT_MD5 */
                (void) read_fixed(c, 8);
                (void) read_fixed(c, 8);
                return !c->bad;
        case DW_FORM_block: {
                uint64_t n = bytecursor_uleb(c);

                return !c->bad && n <= bytecursor_left(c) && bytecursor_skip(c, (size_t) n);
        }
        default:
                return false;
        }
}

struct reader {
        const struct line_sections *s;
        struct line_table *t;
        const char **dirs;
        size_t n_dirs;
        size_t files_allocated, owned_allocated;
};

/* Appends name to the file list, or puts it at index 0 (the placeholder's
 * place). Returns 0 or -ENOMEM. */
static int reader_push_file(struct reader *r, const char *name, bool replace_first) {
        struct line_table *t = r->t;
        int k;

        if (replace_first && t->n_files > 0) {
                t->files[0] = name;
                return 0;
        }
        k = array_grow((void **) &t->files, &r->files_allocated, t->n_files + 1, sizeof(*t->files));
        if (k < 0)
                return k;
        t->files[t->n_files++] = name;
        return 0;
}

/* Adds a file as libdw names it: absolute names as they are, relative ones
 * after their directory (if it has one) and a slash. Returns 0, -ENOMEM or
 * -EINVAL (no such directory). */
static int reader_add_file(struct reader *r, const char *name, uint64_t dir_index, bool replace_first) {
        struct line_table *t = r->t;
        const char *dir;
        char *joined;
        int k;

        if (dir_index >= r->n_dirs)
                return -EINVAL;
        dir = r->dirs[dir_index];
        if (name[0] != '/') {
                if (asprintf(&joined, "%s%s%s", dir ?: "", dir ? "/" : "", name) < 0)
                        return -ENOMEM;
                k = array_grow((void **) &t->owned, &r->owned_allocated, t->n_owned + 1, sizeof(*t->owned));
                if (k < 0) {
                        free(joined);
                        return k;
                }
                t->owned[t->n_owned++] = joined;
                t->bytes += strlen(joined) + 1;
                name = joined;
        }
        return reader_push_file(r, name, replace_first);
}

/* The DWARF 5 entry formats: which entry is the path, which the directory
 * index (-1: none). */
struct entry_format {
        uint64_t forms[256];
        unsigned n;
        int path, dir;
};

/* The forms read_form reads: any other is left to libdw, which rejects
 * some of them and reads the others. */
static bool form_known(uint64_t form) {
        switch (form) {
        case DW_FORM_string:
        case DW_FORM_line_strp:
        case DW_FORM_strp:
        case DW_FORM_data1:
        case DW_FORM_data2:
        case DW_FORM_data4:
        case DW_FORM_data8:
        case DW_FORM_udata:
        case DW_FORM_data16:
        case DW_FORM_block:
                return true;
        default:
                return false;
        }
}

static bool read_entry_format(struct bytecursor *c, struct entry_format *f) {
        f->n = read_u8(c);
        f->path = f->dir = -1;
        for (unsigned i = 0; i < f->n && !c->bad; i++) {
                uint64_t type = bytecursor_uleb(c);

                f->forms[i] = bytecursor_uleb(c);
                if (!form_known(f->forms[i]))
                        return false;
                if (type == DW_LNCT_path)
                        f->path = (int) i;
                else if (type == DW_LNCT_directory_index)
                        f->dir = (int) i;
        }
        return !c->bad;
}

/* Reads one DWARF 5 directory or file entry. */
static bool read_entry(struct bytecursor *c, const struct entry_format *f, unsigned offset_size,
                       const struct line_sections *s, const char **ret_path, uint64_t *ret_dir) {
        *ret_path = NULL;
        *ret_dir = UINT64_MAX;
        for (unsigned m = 0; m < f->n; m++) {
                const char *str;
                uint64_t value;

                if (!read_form(c, f->forms[m], offset_size, s, &str, &value))
                        return false;
                if ((int) m == f->path)
                        *ret_path = str;
                else if ((int) m == f->dir)
                        *ret_dir = value;
        }
        return true;
}

/* The number of DWARF 5 entries of format f that follow, as libdw checks
 * it: none without a format, and at least a byte of each per entry. */
static bool read_entry_count(struct bytecursor *c, const struct entry_format *f, uint64_t *ret) {
        uint64_t n = bytecursor_uleb(c);

        if (c->bad || (f->n == 0 && n != 0) || (f->n > 0 && n > bytecursor_left(c) / f->n))
                return false;
        *ret = n;
        return true;
}

/* DWARF 2-4 include directories: directory 0 is the CU's compilation
 * directory (NULL when it has none). */
static int read_dirs4(struct bytecursor *c, const char *comp_dir, const char ***ret, size_t *ret_n) {
        _cleanup_free_ const char **dirs = NULL;
        size_t n_dirs = 0, allocated = 0;
        int k;

        k = array_grow((void **) &dirs, &allocated, 1, sizeof(*dirs));
        if (k < 0)
                return k;
        dirs[n_dirs++] = comp_dir;
        while (bytecursor_left(c) > 0 && *c->p) {
                const uint8_t *nul = memchr(c->p, 0, bytecursor_left(c));

                if (!nul)
                        return -EINVAL;
                k = array_grow((void **) &dirs, &allocated, n_dirs + 1, sizeof(*dirs));
                if (k < 0)
                        return k;
                dirs[n_dirs++] = (const char *) c->p;
                c->p = nul + 1;
        }
        if (read_u8(c) != 0 || c->bad)
                return -EINVAL;
        *ret = TAKE_PTR(dirs);
        *ret_n = n_dirs;
        return 0;
}

static int read_files4(struct reader *r, struct bytecursor *c) {
        int k;

        while (bytecursor_left(c) > 0 && *c->p) {
                const char *name = (const char *) c->p;
                const uint8_t *nul = memchr(c->p, 0, bytecursor_left(c));
                uint64_t dir;

                if (!nul)
                        return -EINVAL;
                c->p = nul + 1;
                dir = bytecursor_uleb(c);
                (void) bytecursor_uleb(c); /* mtime */
                (void) bytecursor_uleb(c); /* length */
                if (c->bad)
                        return -EINVAL;
                k = reader_add_file(r, name, dir, false);
                if (k < 0)
                        return k;
        }
        return read_u8(c) != 0 || c->bad ? -EINVAL : 0;
}

static int read_dirs5(struct bytecursor *c, unsigned offset_size, const struct line_sections *s, const char ***ret,
                      size_t *ret_n) {
        _cleanup_free_ const char **dirs = NULL;
        struct entry_format f;
        uint64_t n;

        if (!read_entry_format(c, &f) || (f.n > 0 && f.path < 0) || !read_entry_count(c, &f, &n))
                return -EINVAL;
        dirs = reallocarray(NULL, n ?: 1, sizeof(*dirs));
        if (!dirs)
                return -ENOMEM;
        for (uint64_t i = 0; i < n; i++) {
                uint64_t unused;

                if (!read_entry(c, &f, offset_size, s, &dirs[i], &unused) || !dirs[i])
                        return -EINVAL;
        }
        *ret = TAKE_PTR(dirs);
        *ret_n = n;
        return 0;
}

static int read_files5(struct reader *r, struct bytecursor *c, unsigned offset_size) {
        struct entry_format f;
        uint64_t n;
        int k;

        if (!read_entry_format(c, &f) || (f.n > 0 && (f.path < 0 || f.dir < 0)) || !read_entry_count(c, &f, &n))
                return -EINVAL;
        for (uint64_t i = 0; i < n; i++) {
                const char *name;
                uint64_t dir;

                if (!read_entry(c, &f, offset_size, r->s, &name, &dir) || !name || dir == UINT64_MAX)
                        return -EINVAL;
                /* Entry 0 is the CU's own file, and takes the
                 * placeholder's index. */
                k = reader_add_file(r, name, dir, i == 0);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* The include directories and file names of the header. */
static int read_dirs_and_files(struct reader *r, struct bytecursor *c, unsigned version, unsigned offset_size,
                               const char *comp_dir) {
        _cleanup_free_ const char **dirs = NULL;
        size_t n_dirs = 0;
        int k;

        k = version < 5 ? read_dirs4(c, comp_dir, &dirs, &n_dirs) : read_dirs5(c, offset_size, r->s, &dirs, &n_dirs);
        if (k < 0)
                return k;
        r->dirs = dirs;
        r->n_dirs = n_dirs;
        /* File 0: libdw's "???" before DWARF 5; in 5 the first entry
         * replaces it. */
        k = reader_push_file(r, "???", false);
        if (k >= 0)
                k = version < 5 ? read_files4(r, c) : read_files5(r, c, offset_size);
        r->dirs = NULL;
        return k;
}

static int raw_row_compare(const void *a, const void *b) {
        const struct raw_row *x = a, *y = b;
        bool x_end = x->file_end & ROW_END, y_end = y->file_end & ROW_END;

        if (x->addr != y->addr)
                return x->addr < y->addr ? -1 : 1;
        /* An end of sequence sorts before a row at the same address. */
        if (x_end != y_end)
                return x_end ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The state machine's registers that decide whether libdw keeps a row:
 * its Dwarf_Line stores them in narrower fields, and a value that does not
 * fit makes it reject the whole program. */
struct line_state {
        uint64_t addr;
        uint64_t op_index;
        uint64_t file;
        int64_t line;
        uint64_t column, isa, discriminator;
        uint8_t is_stmt, default_is_stmt;
};

static void line_state_reset(struct line_state *st, uint8_t default_is_stmt) {
        *st = (struct line_state) {
                .file = 1,
                .line = 1,
                .is_stmt = default_is_stmt,
                .default_is_stmt = default_is_stmt,
        };
}

/* What the header says about running the program. */
struct line_program {
        unsigned address_size;
        uint8_t min_inst_len, max_ops, default_is_stmt, line_range, opcode_base;
        int8_t line_base;
        const uint8_t *opcode_lengths; /* the operands of standard opcodes 1 to opcode_base - 1 */
};

/* A program being run: its header, its registers, the rows so far. */
struct line_run {
        const struct line_program *h;
        struct line_state st;
        struct raw_row *rows;
        size_t n, allocated;
};

/* The operands of each standard opcode DWARF 5 defines: libdw checks the
 * header's counts against them. */
static const uint8_t standard_operands[DW_LNS_set_isa + 1] = {
        [DW_LNS_advance_pc] = 1,
        [DW_LNS_advance_line] = 1,
        [DW_LNS_set_file] = 1,
        [DW_LNS_set_column] = 1,
        [DW_LNS_fixed_advance_pc] = 1,
        [DW_LNS_set_isa] = 1,
};

/* Appends a row for the registers. Returns 0, -EINVAL (a register libdw
 * cannot keep) or -ENOMEM. */
static int emit_row(struct line_run *run, bool end) {
        const struct line_state *st = &run->st;
        int k;

        if (st->line < INT32_MIN || st->line > INT32_MAX || st->file >= ROW_END || st->column > USHRT_MAX ||
            st->isa > UINT8_MAX || st->op_index > UINT8_MAX || st->is_stmt > 1 || st->discriminator >= (UINT64_C(1) << 24) ||
            run->n >= UINT32_MAX)
                return -EINVAL;
        /* A row right after one at the same address, both ends or neither,
         * sorts right after it and hides it from every lookup: take its
         * place (compilers emit many: views, is_stmt changes). */
        if (run->n > 0 && run->rows[run->n - 1].addr == st->addr &&
            !!(run->rows[run->n - 1].file_end & ROW_END) == end) {
                run->rows[run->n - 1].line = (int32_t) st->line;
                run->rows[run->n - 1].file_end = (uint32_t) st->file | (end ? ROW_END : 0);
                return 0;
        }
        k = array_grow((void **) &run->rows, &run->allocated, run->n + 1, sizeof(*run->rows));
        if (k < 0)
                return k;
        run->rows[run->n] = (struct raw_row) {
                .addr = st->addr,
                .seq = (uint32_t) run->n,
                .line = (int32_t) st->line,
                .file_end = (uint32_t) st->file | (end ? ROW_END : 0),
        };
        run->n++;
        return 0;
}

/* Advances the address by adv operations, in libdw's unsigned int
 * arithmetic, wrapping where it wraps. */
static void run_advance(struct line_run *run, uint64_t adv) {
        uint32_t ops = (uint32_t) run->st.op_index + (uint32_t) adv;

        run->st.addr += (uint32_t) (run->h->min_inst_len * (ops / run->h->max_ops));
        run->st.op_index = ops % run->h->max_ops;
}

/* A special opcode: the line and address advance, and a row. Returns 0,
 * -EINVAL or -ENOMEM (as all the run_ steps). */
static int run_special(struct line_run *run, uint8_t op) {
        const struct line_program *h = run->h;
        int k;

        if (h->line_range == 0)
                return -EINVAL;
        run->st.line += h->line_base + (op - h->opcode_base) % h->line_range;
        run_advance(run, (uint64_t) ((op - h->opcode_base) / h->line_range));
        k = emit_row(run, false);
        if (k < 0)
                return k;
        run->st.discriminator = 0;
        return 0;
}

/* An extended opcode: 0, its length, its sub-opcode and operands. */
static int run_extended(struct bytecursor *c, struct line_run *run) {
        const struct line_program *h = run->h;
        uint8_t len, sub;
        int k;

        /* libdw reads the length as one byte (the standard says ULEB128:
         * the same below 128). */
        if (bytecursor_left(c) < 2 || *c->p >= 0x80)
                return -EINVAL;
        len = read_u8(c);
        if (bytecursor_left(c) < len)
                return -EINVAL;
        sub = read_u8(c);
        switch (sub) {
        case DW_LNE_end_sequence:
                k = emit_row(run, true);
                if (k < 0)
                        return k;
                line_state_reset(&run->st, run->st.default_is_stmt);
                return 0;
        case DW_LNE_set_address:
                run->st.op_index = 0;
                run->st.addr = read_fixed(c, h->address_size);
                return c->bad ? -EINVAL : 0;
        case DW_LNE_set_discriminator:
                /* libdw checks the entry of standard opcode 4. */
                if (h->opcode_base <= DW_LNE_set_discriminator || h->opcode_lengths[DW_LNE_set_discriminator - 1] != 1)
                        return -EINVAL;
                return read_register(c, &run->st.discriminator) ? 0 : -EINVAL;
        case DW_LNE_define_file:
        case DW_LNE_NVIDIA_inlined_call:
        case DW_LNE_NVIDIA_set_function_name:
                return -EINVAL;
        default:
                if (len == 0)
                        return -EINVAL;
                (void) bytecursor_skip(c, len - 1u);
                return 0;
        }
}

/* A standard opcode, 1 to opcode_base - 1. */
static int run_standard(struct bytecursor *c, struct line_run *run, uint8_t op) {
        const struct line_program *h = run->h;
        struct line_state *st = &run->st;
        uint64_t u;
        int64_t s;
        int k;

        if (op <= DW_LNS_set_isa && h->opcode_lengths[op - 1] != standard_operands[op])
                return -EINVAL;
        switch (op) {
        case DW_LNS_copy:
                k = emit_row(run, false);
                if (k < 0)
                        return k;
                st->discriminator = 0;
                return 0;
        case DW_LNS_advance_pc:
                if (!read_register(c, &u))
                        return -EINVAL;
                run_advance(run, u);
                return 0;
        case DW_LNS_advance_line:
                s = bytecursor_sleb(c);
                if (c->bad || s < INT_MIN || s > INT_MAX)
                        return -EINVAL;
                st->line += s;
                return 0;
        case DW_LNS_set_file:
                return read_register(c, &st->file) ? 0 : -EINVAL;
        case DW_LNS_set_column:
                return read_register(c, &st->column) ? 0 : -EINVAL;
        case DW_LNS_negate_stmt:
                st->is_stmt = (uint8_t) (1 - st->is_stmt);
                return 0;
        case DW_LNS_set_basic_block:
        case DW_LNS_set_prologue_end:
        case DW_LNS_set_epilogue_begin:
                return 0;
        case DW_LNS_const_add_pc:
                if (h->line_range == 0)
                        return -EINVAL;
                run_advance(run, (uint64_t) ((255 - h->opcode_base) / h->line_range));
                return 0;
        case DW_LNS_fixed_advance_pc:
                st->addr += read_fixed(c, 2);
                if (c->bad)
                        return -EINVAL;
                st->op_index = 0;
                return 0;
        case DW_LNS_set_isa:
                return read_register(c, &st->isa) ? 0 : -EINVAL;
        default:
                /* A standard opcode newer than this reader: skip its
                 * operands. */
                for (unsigned i = h->opcode_lengths[op - 1]; i > 0; i--) {
                        (void) bytecursor_uleb(c);
                        if (c->bad)
                                return -EINVAL;
                }
                return 0;
        }
}

/* Runs the program from the cursor to its end into *ret_rows. Returns 0,
 * -EINVAL (a program left to libdw) or -ENOMEM. */
static int run_program(struct bytecursor *c, const struct line_program *h, struct raw_row **ret_rows, size_t *ret_n) {
        struct line_run run = { .h = h };
        int k = 0;

        line_state_reset(&run.st, h->default_is_stmt);
        while (k >= 0 && bytecursor_left(c) > 0) {
                uint8_t op = read_u8(c);

                if (op >= h->opcode_base)
                        k = run_special(&run, op);
                else if (op == 0)
                        k = run_extended(c, &run);
                else
                        k = run_standard(c, &run, op);
        }
        if (k < 0) {
                free(run.rows);
                return k;
        }
        *ret_rows = run.rows;
        *ret_n = run.n;
        return 0;
}

/* Sorts the rows as libdw does and keeps the last of each address: the one
 * its search for the last row at or before an address ends on. */
static int table_set_rows(struct line_table *t, struct raw_row *raw, size_t n) {
        size_t k = 0;

        if (n == 0)
                return 0;
        /* A CU's program is mostly one sequence, or several in address
         * order, whose rows come sorted already: glibc's merge sort would
         * still take n log n (7% of the writer's user time on a build
         * host, docs/performance.md). raw_row_compare is a total order
         * (seq is the row's index), so skipping it changes nothing. */
        for (size_t i = 1; i < n; i++)
                if (raw_row_compare(&raw[i - 1], &raw[i]) > 0) {
                        qsort(raw, n, sizeof(*raw), raw_row_compare);
                        break;
                }
        /* libdw marks the highest row as an end, whatever the program said. */
        raw[n - 1].file_end |= ROW_END;
        t->rows = reallocarray(NULL, n, sizeof(*t->rows));
        if (!t->rows)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (i + 1 < n && raw[i + 1].addr == raw[i].addr)
                        continue;
                t->rows[k++] = (struct line_row) { raw[i].addr, raw[i].line, raw[i].file_end };
        }
        t->n_rows = k;
        if (k < n) {
                struct line_row *shrunk = reallocarray(t->rows, k, sizeof(*t->rows));

                if (shrunk)
                        t->rows = shrunk;
        }
        t->bytes += t->n_rows * sizeof(*t->rows);
        return 0;
}

struct line_sections line_sections_of(Elf *e) {
        struct line_sections s = {};
        Elf_Scn *scn = NULL;
        size_t shstrndx;

        if (!e || elf_getshdrstrndx(e, &shstrndx) < 0)
                return s;
        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr shdr;
                const char *name;
                Elf_Data *data;

                if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
                        continue;
                name = elf_strptr(e, shstrndx, shdr.sh_name);
                if (!name || strncmp(name, ".debug_", 7) != 0)
                        continue;
                data = elf_getdata(scn, NULL);
                if (!data || !data->d_buf)
                        continue;
                /* The first of each, as libdw takes it (it ignores a
                 * section that appears twice). */
                if (streq(name, ".debug_line") && !s.line) {
                        s.line = data->d_buf;
                        s.line_size = data->d_size;
                } else if (streq(name, ".debug_line_str") && !s.line_str) {
                        s.line_str = data->d_buf;
                        s.line_str_size = data->d_size;
                } else if (streq(name, ".debug_str") && !s.str) {
                        s.str = data->d_buf;
                        s.str_size = data->d_size;
                }
        }
        return s;
}

int line_table_read(const struct line_sections *s, uint64_t offset, const char *comp_dir, unsigned address_size,
                    struct line_table **ret) {
        _cleanup_(line_table_freep) struct line_table *t = NULL;
        _cleanup_free_ struct raw_row *raw = NULL;
        struct bytecursor c, header;
        struct reader r = { .s = s };
        struct line_program h = { .address_size = address_size, .max_ops = 1 };
        uint64_t unit_length, header_length;
        unsigned offset_size = 4, version;
        size_t n_raw = 0;
        int k;

        if (!s->line || offset >= s->line_size || (address_size != 4 && address_size != 8))
                return -EINVAL;
        c = bytecursor_make(s->line + offset, s->line_size - offset);
        unit_length = read_fixed(&c, 4);
        if (unit_length == UINT32_MAX) {
                unit_length = read_fixed(&c, 8);
                offset_size = 8;
        }
        if (c.bad || unit_length > bytecursor_left(&c))
                return -EINVAL;
        c.end = c.p + unit_length;
        version = (unsigned) read_fixed(&c, 2);
        if (c.bad || version < 2 || version > 5)
                return -EINVAL;
        if (version >= 5 && (read_u8(&c) != address_size || read_u8(&c) != 0))
                return -EINVAL;
        header_length = read_fixed(&c, offset_size);
        if (c.bad || header_length > bytecursor_left(&c))
                return -EINVAL;
        header = bytecursor_make(c.p, bytecursor_left(&c));
        h.min_inst_len = read_u8(&header);
        if (version >= 4)
                h.max_ops = read_u8(&header);
        h.default_is_stmt = read_u8(&header);
        h.line_base = (int8_t) read_u8(&header);
        h.line_range = read_u8(&header);
        h.opcode_base = read_u8(&header);
        if (header.bad || h.max_ops == 0 || h.opcode_base == 0 || bytecursor_left(&header) < h.opcode_base - 1u)
                return -EINVAL;
        h.opcode_lengths = header.p;
        (void) bytecursor_skip(&header, h.opcode_base - 1u);

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->bytes = sizeof(*t);
        r.t = t;
        k = read_dirs_and_files(&r, &header, version, offset_size, comp_dir);
        if (k < 0)
                return k;
        /* libdw skips a 4-byte string offset some producers (CUBINs) put
         * last, and insists the header ends where it says. */
        if (header_length >= 4 && header.p == c.p + header_length - 4)
                header.p += 4;
        if (header.p != c.p + header_length)
                return -EINVAL;
        t->bytes += r.files_allocated * sizeof(*t->files) + r.owned_allocated * sizeof(*t->owned);

        header.end = c.end;
        k = run_program(&header, &h, &raw, &n_raw);
        if (k < 0)
                return k;
        k = table_set_rows(t, raw, n_raw);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(t);
        return 0;
}

struct line_table *line_table_free(struct line_table *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_owned; i++)
                free(t->owned[i]);
        free(t->owned);
        free(t->files);
        free(t->rows);
        free(t);
        return NULL;
}

const char *line_table_file(const struct line_table *t, uint64_t index) {
        return index < t->n_files ? t->files[index] : NULL;
}

int line_table_find(const struct line_table *t, uint64_t addr, const char **ret_file, int *ret_line) {
        size_t i = UPPER_BOUND_BY(t->rows, t->n_rows, addr, addr);
        const struct line_row *row;

        if (i == 0)
                return 0;
        row = &t->rows[i - 1];
        if (row->file_end & ROW_END)
                return 0;
        *ret_file = line_table_file(t, row->file_end);
        *ret_line = row->line;
        return 1;
}

size_t line_table_rows(const struct line_table *t) {
        return t->n_rows;
}

uint64_t line_table_bytes(const struct line_table *t) {
        return t->bytes;
}
