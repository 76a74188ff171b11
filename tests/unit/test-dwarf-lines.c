/* Specifies dwarf-lines.c: line programs written here byte by byte (DWARF 4
 * and 5, rows at one address, sequences meeting, a program without its last
 * end, what it leaves to libdw), then agreement with libdw itself on every
 * CU of real files: for every row address and its neighbours the row, file
 * and line libdw's dwarf_getsrc_die finds, and every file of
 * dwarf_getsrcfiles, with no CU left to libdw.
 *
 * usage: test-dwarf-lines FILE... (files with DWARF; libc's debug file from
 * libc6-dbg is added when installed) */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dwarf-lines.h"
#include "macro.h"
#include "tests.h"

/* A line program being written. */
struct prog {
        uint8_t b[512];
        size_t n;
};

static void put(struct prog *p, const void *data, size_t n) {
        CHECK(p->n + n <= sizeof(p->b));
        memcpy(p->b + p->n, data, n);
        p->n += n;
}

static void put_u8(struct prog *p, uint8_t v) {
        put(p, &v, 1);
}

static void put_le(struct prog *p, uint64_t v, size_t n) {
        for (size_t i = 0; i < n; i++)
                put_u8(p, (uint8_t) (v >> (8 * i)));
}

static void put_uleb(struct prog *p, uint64_t v) {
        do {
                uint8_t b = v & 0x7f;

                v >>= 7;
                put_u8(p, b | (v ? 0x80 : 0));
        } while (v);
}

static void put_sleb(struct prog *p, int64_t v) {
        for (;;) {
                uint8_t b = v & 0x7f;

                v >>= 7;
                if ((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40))) {
                        put_u8(p, b);
                        return;
                }
                put_u8(p, b | 0x80);
        }
}

static void put_str(struct prog *p, const char *s) {
        put(p, s, strlen(s) + 1);
}

#define LINE_BASE (-5)
#define LINE_RANGE 14
#define OPCODE_BASE 13

static const uint8_t std_lengths[OPCODE_BASE - 1] = { 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1 };

/* The header up to the directories; returns where header_length goes. */
static size_t put_header_start(struct prog *p, unsigned version) {
        size_t at;

        put_le(p, 0, 4); /* unit_length, set by prog_finish */
        put_le(p, version, 2);
        if (version >= 5) {
                put_u8(p, 8); /* address_size */
                put_u8(p, 0); /* segment_selector_size */
        }
        at = p->n;
        put_le(p, 0, 4); /* header_length, set by header_finish */
        put_u8(p, 1); /* minimum_instruction_length */
        if (version >= 4)
                put_u8(p, 1); /* maximum_operations_per_instruction */
        put_u8(p, 1); /* default_is_stmt */
        put_u8(p, (uint8_t) LINE_BASE);
        put_u8(p, LINE_RANGE);
        put_u8(p, OPCODE_BASE);
        put(p, std_lengths, sizeof(std_lengths));
        return at;
}

static void header_finish(struct prog *p, size_t at) {
        uint32_t len = (uint32_t) (p->n - (at + 4));

        memcpy(p->b + at, &len, 4);
}

static void prog_finish(struct prog *p) {
        uint32_t len = (uint32_t) (p->n - 4);

        memcpy(p->b, &len, 4);
}

/* Finishes p and reads it as .debug_line alone. */
static int prog_read(struct prog *p, const char *comp_dir, struct line_table **ret) {
        struct line_sections s = { .line = p->b, .line_size = p->n };

        prog_finish(p);
        *ret = line_table_free(*ret);
        return line_table_read(&s, 0, comp_dir, 8, ret);
}

/* A DWARF 4 header without directories and with the one file a.c. */
static size_t put_header4_one_file(struct prog *p) {
        size_t at = put_header_start(p, 4);

        put_u8(p, 0);
        put_str(p, "a.c");
        put_uleb(p, 0);
        put_uleb(p, 0);
        put_uleb(p, 0);
        put_u8(p, 0);
        header_finish(p, at);
        return at;
}

static void op_set_address(struct prog *p, uint64_t addr) {
        put_u8(p, 0);
        put_u8(p, 9);
        put_u8(p, DW_LNE_set_address);
        put_le(p, addr, 8);
}

static void op_end_sequence(struct prog *p) {
        put_u8(p, 0);
        put_u8(p, 1);
        put_u8(p, DW_LNE_end_sequence);
}

static void op_advance_line(struct prog *p, int64_t n) {
        put_u8(p, DW_LNS_advance_line);
        put_sleb(p, n);
}

static void op_advance_pc(struct prog *p, uint64_t n) {
        put_u8(p, DW_LNS_advance_pc);
        put_uleb(p, n);
}

static void op_set_file(struct prog *p, uint64_t n) {
        put_u8(p, DW_LNS_set_file);
        put_uleb(p, n);
}

/* A special opcode: line += dline, address += daddr, and a row. */
static void op_special(struct prog *p, int dline, unsigned daddr) {
        put_u8(p, (uint8_t) ((dline - LINE_BASE) + LINE_RANGE * daddr + OPCODE_BASE));
}

static void check_find(const struct line_table *t, uint64_t addr, const char *file, int line) {
        const char *found_file = NULL;
        int found_line = 0, r;

        r = line_table_find(t, addr, &found_file, &found_line);
        if (!file) {
                CHECK_INT_EQ(r, 0);
                return;
        }
        CHECK_INT_EQ(r, 1);
        CHECK_STR_EQ(found_file, file);
        CHECK_INT_EQ(found_line, line);
}

/* DWARF 4: directory 0 is the compilation directory, file 0 libdw's
 * placeholder; rows at one address (the last counts); one sequence ending
 * where the next begins. */
static void test_version4(void) {
        _cleanup_(line_table_freep) struct line_table *t = NULL;
        struct prog p = {};
        struct line_sections s;
        size_t at;

        at = put_header_start(&p, 4);
        put_str(&p, "inc");
        put_u8(&p, 0);
        put_str(&p, "a.c");
        put_uleb(&p, 0);
        put_uleb(&p, 0);
        put_uleb(&p, 0);
        put_str(&p, "b.h");
        put_uleb(&p, 1);
        put_uleb(&p, 0);
        put_uleb(&p, 0);
        put_str(&p, "/abs/c.h");
        put_uleb(&p, 1);
        put_uleb(&p, 0);
        put_uleb(&p, 0);
        put_u8(&p, 0);
        header_finish(&p, at);

        op_set_address(&p, 0x1000);
        op_advance_line(&p, 9);
        put_u8(&p, DW_LNS_copy); /* 0x1000 a.c:10 */
        op_special(&p, 1, 4); /* 0x1004 a.c:11 */
        op_set_file(&p, 2);
        put_u8(&p, DW_LNS_copy); /* 0x1004 inc/b.h:11, the one that counts */
        op_advance_pc(&p, 8);
        op_end_sequence(&p); /* 0x100c */
        op_set_address(&p, 0x100c);
        op_advance_line(&p, 99);
        op_set_file(&p, 3);
        put_u8(&p, DW_LNS_copy); /* 0x100c /abs/c.h:100, after the end at the same address */
        op_advance_pc(&p, 4);
        op_end_sequence(&p); /* 0x1010 */
        prog_finish(&p);

        s = (struct line_sections) { .line = p.b, .line_size = p.n };
        CHECK_INT_EQ(line_table_read(&s, 0, "/src", 8, &t), 0);
        CHECK_INT_EQ(line_table_rows(t), 4);
        check_find(t, 0xfff, NULL, 0);
        check_find(t, 0x1000, "/src/a.c", 10);
        check_find(t, 0x1003, "/src/a.c", 10);
        check_find(t, 0x1004, "inc/b.h", 11);
        check_find(t, 0x100b, "inc/b.h", 11);
        check_find(t, 0x100c, "/abs/c.h", 100);
        check_find(t, 0x100f, "/abs/c.h", 100);
        check_find(t, 0x1010, NULL, 0);
        check_find(t, UINT64_MAX, NULL, 0);
        CHECK_STR_EQ(line_table_file(t, 0), "???");
        CHECK_STR_EQ(line_table_file(t, 1), "/src/a.c");
        CHECK_STR_EQ(line_table_file(t, 2), "inc/b.h");
        CHECK_STR_EQ(line_table_file(t, 3), "/abs/c.h");
        CHECK(!line_table_file(t, 4));
        CHECK(line_table_bytes(t) >= 4 * 16);
        t = line_table_free(t);

        /* Without a compilation directory a relative name stays relative. */
        CHECK_INT_EQ(line_table_read(&s, 0, NULL, 8, &t), 0);
        CHECK_STR_EQ(line_table_file(t, 1), "a.c");
}

/* DWARF 5: directories and files described by entry formats, names in
 * .debug_line_str, file 0 the CU's own file, a file index past the list. */
static void test_version5(void) {
        _cleanup_(line_table_freep) struct line_table *t = NULL;
        static const char line_str[] = "/src\0inc";
        struct prog p = {};
        struct line_sections s;
        size_t at;

        at = put_header_start(&p, 5);
        put_u8(&p, 1);
        put_uleb(&p, DW_LNCT_path);
        put_uleb(&p, DW_FORM_line_strp);
        put_uleb(&p, 2);
        put_le(&p, 0, 4); /* "/src" */
        put_le(&p, 5, 4); /* "inc" */
        put_u8(&p, 3);
        put_uleb(&p, DW_LNCT_path);
        put_uleb(&p, DW_FORM_string);
        put_uleb(&p, DW_LNCT_directory_index);
        put_uleb(&p, DW_FORM_udata);
        put_uleb(&p, DW_LNCT_MD5);
        put_uleb(&p, DW_FORM_data16);
        put_uleb(&p, 2);
        put_str(&p, "a.c");
        put_uleb(&p, 0);
        put_le(&p, 0, 8);
        put_le(&p, 0, 8);
        put_str(&p, "b.h");
        put_uleb(&p, 1);
        put_le(&p, 0, 8);
        put_le(&p, 0, 8);
        header_finish(&p, at);

        op_set_address(&p, 0x2000);
        put_u8(&p, DW_LNS_copy); /* 0x2000 file 1 (inc/b.h):1 */
        op_set_file(&p, 0);
        op_special(&p, 4, 2); /* 0x2002 /src/a.c:5 */
        op_set_file(&p, 7);
        op_special(&p, 1, 2); /* 0x2004 file 7: no such file */
        op_advance_pc(&p, 2);
        op_end_sequence(&p); /* 0x2006 */
        prog_finish(&p);

        s = (struct line_sections) {
                .line = p.b,
                .line_size = p.n,
                .line_str = line_str,
                .line_str_size = sizeof(line_str),
        };
        CHECK_INT_EQ(line_table_read(&s, 0, "/ignored", 8, &t), 0);
        check_find(t, 0x2000, "inc/b.h", 1);
        check_find(t, 0x2003, "/src/a.c", 5);
        {
                const char *file = "x";
                int line = 0;

                CHECK_INT_EQ(line_table_find(t, 0x2005, &file, &line), 1);
                CHECK(!file);
                CHECK_INT_EQ(line, 6);
        }
        check_find(t, 0x2006, NULL, 0);
        CHECK_STR_EQ(line_table_file(t, 0), "/src/a.c");
        CHECK_STR_EQ(line_table_file(t, 1), "inc/b.h");
        CHECK(!line_table_file(t, 2));
        /* The address size must be the CU's. */
        CHECK_INT_EQ(line_table_read(&s, 0, NULL, 4, &t), -EINVAL);
}

/* A program whose last row is no end of sequence: libdw makes the highest
 * row one. */
static void test_last_row_ends(void) {
        _cleanup_(line_table_freep) struct line_table *t = NULL;
        struct prog p = {};

        put_header4_one_file(&p);
        op_set_address(&p, 0x3000);
        put_u8(&p, DW_LNS_copy);
        op_special(&p, 1, 4);
        CHECK_INT_EQ(prog_read(&p, "/d", &t), 0);
        check_find(t, 0x3000, "/d/a.c", 1);
        check_find(t, 0x3003, "/d/a.c", 1);
        check_find(t, 0x3004, NULL, 0);
}

/* Sequences out of address order (a function in .text.startup or
 * .text.unlikely after those of .text): the rows are sorted all the same. */
static void test_sequences_out_of_order(void) {
        _cleanup_(line_table_freep) struct line_table *t = NULL;
        struct prog p = {};

        put_header4_one_file(&p);
        op_set_address(&p, 0x5000);
        op_advance_line(&p, 49);
        put_u8(&p, DW_LNS_copy); /* 0x5000 a.c:50 */
        op_special(&p, 1, 4);    /* 0x5004 a.c:51 */
        op_advance_pc(&p, 4);
        op_end_sequence(&p);     /* 0x5008 */
        op_set_address(&p, 0x4000);
        op_advance_line(&p, 9);
        put_u8(&p, DW_LNS_copy); /* 0x4000 a.c:10 */
        op_special(&p, 2, 8);    /* 0x4008 a.c:12 */
        op_advance_pc(&p, 8);
        op_end_sequence(&p);     /* 0x4010 */
        CHECK_INT_EQ(prog_read(&p, "/d", &t), 0);
        CHECK_INT_EQ(line_table_rows(t), 6);
        check_find(t, 0x3fff, NULL, 0);
        check_find(t, 0x4000, "/d/a.c", 10);
        check_find(t, 0x4009, "/d/a.c", 12);
        check_find(t, 0x4010, NULL, 0);
        check_find(t, 0x4fff, NULL, 0);
        check_find(t, 0x5000, "/d/a.c", 50);
        check_find(t, 0x5007, "/d/a.c", 51);
        check_find(t, 0x5008, NULL, 0);
}

/* What the reader leaves to libdw: -EINVAL, never a guess. */
static void test_left_to_libdw(void) {
        _cleanup_(line_table_freep) struct line_table *t = NULL;
        struct line_sections s;
        struct prog p = {};
        size_t at;

        /* DW_LNE_define_file */
        put_header4_one_file(&p);
        op_set_address(&p, 0x1000);
        put_u8(&p, 0);
        put_u8(&p, 6);
        put_u8(&p, DW_LNE_define_file);
        put_str(&p, "x.c");
        put_uleb(&p, 0);
        put_uleb(&p, 0);
        put_uleb(&p, 0);
        put_u8(&p, DW_LNS_copy);
        op_end_sequence(&p);
        CHECK_INT_EQ(prog_read(&p, NULL, &t), -EINVAL);

        /* A version libdw does not read. */
        p = (struct prog) {};
        at = put_header_start(&p, 6);
        put_u8(&p, 0);
        put_u8(&p, 0);
        header_finish(&p, at);
        CHECK_INT_EQ(prog_read(&p, NULL, &t), -EINVAL);

        /* A string form this reader does not read (strx1). */
        p = (struct prog) {};
        at = put_header_start(&p, 5);
        put_u8(&p, 1);
        put_uleb(&p, DW_LNCT_path);
        put_uleb(&p, DW_FORM_strx1);
        put_uleb(&p, 1);
        put_u8(&p, 0);
        put_u8(&p, 0);
        put_uleb(&p, 0);
        header_finish(&p, at);
        CHECK_INT_EQ(prog_read(&p, NULL, &t), -EINVAL);

        /* Cut short: every prefix of a good program that ends inside its
         * header is refused; a cut inside the program reads what is there. */
        p = (struct prog) {};
        at = put_header4_one_file(&p);
        op_set_address(&p, 0x1000);
        put_u8(&p, DW_LNS_copy);
        op_advance_pc(&p, 2);
        op_end_sequence(&p);
        CHECK_INT_EQ(prog_read(&p, NULL, &t), 0);
        check_find(t, 0x1000, "a.c", 1);
        t = line_table_free(t);
        for (size_t n = 0; n < at + 4 + 20; n++) {
                s = (struct line_sections) { .line = p.b, .line_size = n };
                CHECK_INT_EQ(line_table_read(&s, 0, NULL, 8, &t), -EINVAL);
        }
        /* Past the section. */
        s = (struct line_sections) { .line = p.b, .line_size = p.n };
        CHECK_INT_EQ(line_table_read(&s, p.n, NULL, 8, &t), -EINVAL);
}

/* A program with one row at 0x1000 + 2 whose advance_pc operand is the
 * given LEB128 bytes, or (sleb) whose advance_line operand is. */
static int prog_with_leb(struct prog *p, uint8_t op, const uint8_t *leb, size_t n, struct line_table **t) {
        *p = (struct prog) {};
        put_header4_one_file(p);
        op_set_address(p, 0x1000);
        put_u8(p, op);
        put(p, leb, n);
        if (op == DW_LNS_advance_line)
                op_advance_pc(p, 2);
        put_u8(p, DW_LNS_copy);
        op_advance_pc(p, 4);
        op_end_sequence(p);
        return prog_read(p, NULL, t);
}

/* LEB128 operands as libdw reads them: up to 10 bytes, zero padding
 * included; a longer one, or one whose value does not fit in 64 bits, is
 * left to libdw. */
static void test_leb128_limits(void) {
        _cleanup_(line_table_freep) struct line_table *t = NULL;
        uint8_t leb[11];
        struct prog p;

        /* 2, padded to 10 bytes, as linkers write fixed-width LEB128 */
        memset(leb, 0x80, sizeof(leb));
        leb[0] = 0x82;
        leb[9] = 0x00;
        CHECK_INT_EQ(prog_with_leb(&p, DW_LNS_advance_pc, leb, 10, &t), 0);
        check_find(t, 0x1002, "a.c", 1);
        check_find(t, 0x1001, NULL, 0);
        /* padded to 11 bytes: libdw stops after 10 */
        leb[9] = 0x80;
        leb[10] = 0x00;
        CHECK_INT_EQ(prog_with_leb(&p, DW_LNS_advance_pc, leb, 11, &t), -EINVAL);
        /* a tenth byte with bits past 2^64 */
        leb[0] = 0x82;
        leb[9] = 0x02;
        CHECK_INT_EQ(prog_with_leb(&p, DW_LNS_advance_pc, leb, 10, &t), -EINVAL);

        /* line += 3 in 10 bytes: the padding of a positive number */
        memset(leb, 0x80, sizeof(leb));
        leb[0] = 0x83;
        leb[9] = 0x00;
        CHECK_INT_EQ(prog_with_leb(&p, DW_LNS_advance_line, leb, 10, &t), 0);
        check_find(t, 0x1002, "a.c", 4);
        /* line -= 1 in 10 bytes: the padding of a negative number */
        memset(leb, 0xff, sizeof(leb));
        leb[9] = 0x7f;
        CHECK_INT_EQ(prog_with_leb(&p, DW_LNS_advance_line, leb, 10, &t), 0);
        check_find(t, 0x1002, "a.c", 0);
        /* a tenth byte whose bits past 2^63 are not all the sign's */
        memset(leb, 0x80, sizeof(leb));
        leb[9] = 0x02;
        CHECK_INT_EQ(prog_with_leb(&p, DW_LNS_advance_line, leb, 10, &t), -EINVAL);
        /* 11 bytes */
        leb[0] = 0x83;
        leb[9] = 0x80;
        leb[10] = 0x00;
        CHECK_INT_EQ(prog_with_leb(&p, DW_LNS_advance_line, leb, 11, &t), -EINVAL);
}

struct totals {
        size_t files, cus, libdw_rows, rows, fallbacks, lookups;
        uint64_t bytes;
};

static bool streq_null(const char *a, const char *b) {
        return a == b || (a && b && streq(a, b));
}

/* Every CU of path against libdw. */
static void check_against_libdw(const char *path, struct totals *totals) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct line_sections s;
        Dwarf_CU *cu = NULL;
        Dwarf_Die cudie;
        uint8_t unit_type;
        size_t cus = 0, rows = 0, libdw_rows = 0, mismatches = 0;
        uint64_t bytes = 0;
        Dwarf *dwarf;
        Elf *e;

        e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
        dwarf = e ? dwarf_begin_elf(e, DWARF_C_READ, NULL) : NULL;
        s = line_sections_of(e);
        if (!dwarf || !s.line) {
                fprintf(stderr, "%s: no DWARF line table\n", path);
                CHECK(!"a file to compare has DWARF");
                return;
        }

        while (dwarf_get_units(dwarf, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
                _cleanup_(line_table_freep) struct line_table *t = NULL;
                Dwarf_Attribute attr;
                Dwarf_Word stmt_list;
                Dwarf_Lines *lines;
                Dwarf_Files *files;
                size_t n_lines, n_files;
                uint8_t address_size;
                int r;

                if (unit_type != DW_UT_compile ||
                    dwarf_formudata(dwarf_attr(&cudie, DW_AT_stmt_list, &attr), &stmt_list) != 0)
                        continue;
                CHECK(dwarf_diecu(&cudie, &(Dwarf_Die) {}, &address_size, NULL));
                r = line_table_read(&s, stmt_list, dwarf_formstring(dwarf_attr(&cudie, DW_AT_comp_dir, &attr)),
                                    address_size, &t);
                CHECK_INT_EQ(dwarf_getsrclines(&cudie, &lines, &n_lines), 0);
                if (r == -EINVAL) {
                        fprintf(stderr, "%s: CU at %#" PRIx64 " left to libdw\n", path,
                                (uint64_t) dwarf_dieoffset(&cudie));
                        totals->fallbacks++;
                        continue;
                }
                CHECK_INT_EQ(r, 0);
                cus++;
                libdw_rows += n_lines;
                rows += line_table_rows(t);
                bytes += line_table_bytes(t);
                for (size_t i = 0; i < n_lines; i++) {
                        Dwarf_Addr row_addr;

                        CHECK_INT_EQ(dwarf_lineaddr(dwarf_onesrcline(lines, i), &row_addr), 0);
                        for (uint64_t a = row_addr - 1; a != row_addr + 2; a++) {
                                Dwarf_Line *dl = dwarf_getsrc_die(&cudie, a);
                                const char *file = NULL, *want_file = NULL;
                                int line = 0, want_line = 0;

                                if (dl) {
                                        want_file = dwarf_linesrc(dl, NULL, NULL);
                                        CHECK_INT_EQ(dwarf_lineno(dl, &want_line), 0);
                                }
                                r = line_table_find(t, a, &file, &line);
                                if ((r != !!dl || !streq_null(file, want_file) || line != want_line) &&
                                    mismatches++ < 5)
                                        fprintf(stderr, "%s: CU %#" PRIx64 " at %#" PRIx64 ": libdw %s:%d, this %s:%d\n",
                                                path, (uint64_t) dwarf_dieoffset(&cudie), a, want_file ?: "-",
                                                want_line, file ?: "-", line);
                                totals->lookups++;
                        }
                }
                CHECK_INT_EQ(dwarf_getsrcfiles(&cudie, &files, &n_files), 0);
                for (size_t i = 0; i <= n_files; i++)
                        if (!streq_null(line_table_file(t, i), dwarf_filesrc(files, i, NULL, NULL)) &&
                            mismatches++ < 5)
                                fprintf(stderr, "%s: CU %#" PRIx64 " file %zu: libdw %s, this %s\n", path,
                                        (uint64_t) dwarf_dieoffset(&cudie), i,
                                        dwarf_filesrc(files, i, NULL, NULL) ?: "-", line_table_file(t, i) ?: "-");
        }
        CHECK_INT_EQ(mismatches, 0);
        printf("%-60s %5zu CUs, libdw %8zu rows, kept %8zu rows, %9" PRIu64 " bytes (libdw about %9zu)\n", path,
               cus, libdw_rows, rows, bytes, libdw_rows * 80);
        CHECK(cus > 0);
        totals->files++;
        totals->cus += cus;
        totals->rows += rows;
        totals->libdw_rows += libdw_rows;
        totals->bytes += bytes;
        dwarf_end(dwarf);
        elf_end(e);
}

/* libc as this test maps it, for its debug file by build-id. */
static int find_libc(struct dl_phdr_info *info, size_t size, void *userdata) {
        char **ret = userdata;

        if (info->dlpi_name && strstr(info->dlpi_name, "/libc.so")) {
                *ret = strdup(info->dlpi_name);
                return 1;
        }
        return 0;
}

/* /usr/lib/debug/.build-id/xx/yyyy.debug of path, or NULL. */
static char *debug_file_of(const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        Elf_Scn *scn = NULL;
        char *ret = NULL;
        Elf *e;

        if (fd < 0 || !(e = elf_begin(fd, ELF_C_READ, NULL)))
                return NULL;
        while (!ret && (scn = elf_nextscn(e, scn))) {
                GElf_Shdr shdr;
                GElf_Nhdr nhdr;
                size_t off = 0, name_off, desc_off;
                Elf_Data *data;

                if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE || !(data = elf_getdata(scn, NULL)))
                        continue;
                while (!ret && (off = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
                        const uint8_t *id = (const uint8_t *) data->d_buf + desc_off;
                        char hex[2 * 64 + 1];

                        if (nhdr.n_type != NT_GNU_BUILD_ID || nhdr.n_descsz < 2 || nhdr.n_descsz > 64)
                                continue;
                        for (size_t i = 0; i < nhdr.n_descsz; i++)
                                sprintf(hex + 2 * i, "%02x", id[i]);
                        if (asprintf(&ret, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2) < 0)
                                ret = NULL;
                }
        }
        elf_end(e);
        return ret;
}

int main(int argc, char *argv[]) {
        _cleanup_free_ char *libc = NULL, *libc_debug = NULL;
        struct totals totals = {};

        test_version4();
        test_version5();
        test_last_row_ends();
        test_sequences_out_of_order();
        test_left_to_libdw();
        test_leb128_limits();

        CHECK(elf_version(EV_CURRENT) != EV_NONE);
        for (int i = 1; i < argc; i++)
                check_against_libdw(argv[i], &totals);
        dl_iterate_phdr(find_libc, &libc);
        if (libc)
                libc_debug = debug_file_of(libc);
        if (libc_debug && access(libc_debug, R_OK) == 0)
                check_against_libdw(libc_debug, &totals);
        else
                printf("libc: no debug file (install libc6-dbg)\n");
        printf("total: %zu files, %zu CUs, %zu lookups agree; libdw %zu rows, kept %zu, %" PRIu64
               " bytes (libdw about %zu); %zu CUs left to libdw\n",
               totals.files, totals.cus, totals.lookups, totals.libdw_rows, totals.rows, totals.bytes,
               totals.libdw_rows * 80, totals.fallbacks);
        CHECK_INT_EQ(totals.fallbacks, 0);
        TESTS_DONE();
}
