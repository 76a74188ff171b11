/* Tests of the CFI interpreter (cfi-rows.h) on hand-written programs:
 * every instruction it runs, every rule the classification reads, the
 * states remembered and restored, the rows clipped to [lo, hi), and every
 * way a program stops (one UNSUPPORTED row where the row being made
 * begins). Real files' rows are compared with binutils' reading of them by
 * test-unwind-table.c. */
#include <dwarf.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "cfi-rows.h"
#include "macro.h"
#include "tests.h"

#define MAX_ROWS 16

struct emitted {
        uint64_t pc[MAX_ROWS];
        struct profd_unwind_row row[MAX_ROWS];
        size_t n;
        int fail_at; /* return -E2BIG for this row (-1: never) */
};

static int sink(void *userdata, uint64_t pc, const struct profd_unwind_row *rule) {
        struct emitted *e = userdata;

        if ((int) e->n == e->fail_at)
                return -E2BIG;
        if (e->n == MAX_ROWS)
                abort();
        e->pc[e->n] = pc;
        e->row[e->n++] = *rule;
        return 0;
}

/* gcc's x86-64 CIE: CFA = rsp + 8, return address at CFA - 8. */
static const uint8_t std_cie[] = { DW_CFA_def_cfa, 7, 8, DW_CFA_offset | 16, 1 };

static struct cfi_cie cie_of(const uint8_t *initial, size_t n) {
        return (struct cfi_cie) {
                .initial = initial, .initial_end = initial + n, .code_align = 1, .data_align = -8, .ra_reg = 16,
        };
}

static struct emitted run_with(const struct cfi_cie *cie, const uint8_t *prog, size_t n, uint64_t lo, uint64_t hi) {
        struct emitted e = { .fail_at = -1 };

        CHECK_INT_EQ(cfi_rows(cie, 0x1000, prog, prog + n, lo, hi, sink, &e), 0);
        return e;
}

/* The FDE [0x1000, 0x1040) with gcc's CIE. */
static struct emitted run(const uint8_t *prog, size_t n) {
        struct cfi_cie cie = cie_of(std_cie, sizeof(std_cie));

        return run_with(&cie, prog, n, 0x1000, 0x1040);
}

#define ROW(e, i, pc_, kind_, cfa_, rbp_)                                                                 \
        do {                                                                                           \
                CHECK((e).n > (i));                                                                    \
                if ((e).n > (i)) {                                                                     \
                        CHECK_INT_EQ((e).pc[i], (uint64_t) (pc_));                                     \
                        CHECK_INT_EQ((e).row[i].kind, (unsigned) (kind_));                             \
                        CHECK_INT_EQ((e).row[i].cfa_off, (unsigned) (cfa_));                           \
                        CHECK_INT_EQ((e).row[i].rbp_off, (int) (rbp_));                                \
                }                                                                                      \
        } while (0)

/* The first row of prog (an array) run with gcc's CIE. */
#define FIRST(prog, kind_, cfa_, rbp_)                                                                    \
        do {                                                                                           \
                struct emitted e_ = run(prog, sizeof(prog));                                           \
                ROW(e_, 0, 0x1000, kind_, cfa_, rbp_);                                                 \
        } while (0)

/* prog (an array) stops with its rows'th row, UNSUPPORTED at pc. */
#define STOPS(prog, rows, pc_)                                                                            \
        do {                                                                                           \
                struct emitted e_ = run(prog, sizeof(prog));                                           \
                CHECK_INT_EQ(e_.n, (size_t) (rows));                                                   \
                ROW(e_, (rows) - 1, pc_, PROFD_UNWIND_UNSUPPORTED, 0, 0);                              \
        } while (0)

#define SP PROFD_UNWIND_CFA_SP
#define FP PROFD_UNWIND_CFA_FP
#define UNSUP PROFD_UNWIND_UNSUPPORTED

/* push rbp; mov rbp, rsp; ...; leave; ret */
static void test_frame_pointer_function(void) {
        const uint8_t prog[] = {
                DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16, DW_CFA_offset | 6, 2,
                DW_CFA_advance_loc | 3, DW_CFA_def_cfa_register, 6,
                DW_CFA_advance_loc | 10, DW_CFA_def_cfa, 7, 8,
        };
        struct emitted e = run(prog, sizeof(prog));

        CHECK_INT_EQ(e.n, 4u);
        ROW(e, 0, 0x1000, SP, 8, 0);
        ROW(e, 1, 0x1001, SP, 16, -2);
        ROW(e, 2, 0x1004, FP, 16, -2);
        ROW(e, 3, 0x100e, SP, 8, -2); /* to the FDE's end */
}

/* Every advance form, scaled by the code alignment; an advance of 0 makes
 * no row of its own. */
static void test_advances(void) {
        const uint8_t prog[] = {
                DW_CFA_advance_loc1, 2, DW_CFA_def_cfa_offset, 16,
                DW_CFA_advance_loc2, 1, 0, DW_CFA_def_cfa_offset, 24,
                DW_CFA_advance_loc | 0, DW_CFA_def_cfa_offset, 32,
                DW_CFA_advance_loc4, 1, 0, 0, 0, DW_CFA_def_cfa_offset, 40,
                DW_CFA_MIPS_advance_loc8, 1, 0, 0, 0, 0, 0, 0, 0, DW_CFA_def_cfa_offset, 48,
        };
        struct cfi_cie cie = cie_of(std_cie, sizeof(std_cie));
        struct emitted e;

        cie.code_align = 4;
        e = run_with(&cie, prog, sizeof(prog), 0x1000, 0x1100);
        CHECK_INT_EQ(e.n, 5u);
        ROW(e, 0, 0x1000, SP, 8, 0);
        ROW(e, 1, 0x1008, SP, 16, 0);
        ROW(e, 2, 0x100c, SP, 32, 0); /* 24 lasted no byte */
        ROW(e, 3, 0x1010, SP, 40, 0);
        ROW(e, 4, 0x1014, SP, 48, 0);
}

/* remember_state keeps the CFA rule too; restore_state brings it back. */
static void test_remember_restore(void) {
        const uint8_t prog[] = {
                DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16, DW_CFA_offset | 6, 2,
                DW_CFA_remember_state,
                DW_CFA_advance_loc | 2, DW_CFA_def_cfa, 7, 8, DW_CFA_restore | 6,
                DW_CFA_advance_loc | 1, DW_CFA_restore_state,
        };
        struct emitted e = run(prog, sizeof(prog));

        CHECK_INT_EQ(e.n, 4u);
        ROW(e, 0, 0x1000, SP, 8, 0);
        ROW(e, 1, 0x1001, SP, 16, -2);
        ROW(e, 2, 0x1003, SP, 8, 0); /* DW_CFA_restore: the CIE's rbp (unchanged) */
        ROW(e, 3, 0x1004, SP, 16, -2);
}

/* The return address: undefined ends the stack; same value, another slot,
 * another register or another column are nothing BPF evaluates. */
static void test_return_address(void) {
        const uint8_t undefined[] = { DW_CFA_undefined, 16 };
        const uint8_t same[] = { DW_CFA_same_value, 16 };
        const uint8_t slot16[] = { DW_CFA_offset | 16, 2 };
        const uint8_t in_reg[] = { DW_CFA_register, 16, 0 };
        const uint8_t expr[] = { DW_CFA_expression, 16, 1, DW_OP_lit0 };
        const uint8_t window[] = { DW_CFA_GNU_window_save };
        const uint8_t ok_ext[] = { DW_CFA_offset_extended, 16, 1, DW_CFA_offset_extended_sf, 6, 0x7e };
        struct cfi_cie cie = cie_of(std_cie, sizeof(std_cie));
        struct emitted e;

        FIRST(undefined, PROFD_UNWIND_END, 0, 0);
        FIRST(same, UNSUP, 0, 0);
        FIRST(slot16, UNSUP, 0, 0);
        FIRST(in_reg, UNSUP, 0, 0);
        FIRST(expr, UNSUP, 0, 0);
        FIRST(window, UNSUP, 0, 0);
        /* the extended forms: RA at CFA - 8, rbp at CFA + (-2 * -8) */
        FIRST(ok_ext, SP, 8, 2);
        /* a CIE naming another return-address column */
        cie.ra_reg = 30;
        e = run_with(&cie, NULL, 0, 0x1000, 0x1010);
        ROW(e, 0, 0x1000, UNSUP, 0, 0);
}

/* The CFA: rsp or rbp plus 0-65535; other registers, negative or larger
 * offsets, an invalid rule and no rule at all are not evaluated. */
static void test_cfa(void) {
        const uint8_t negative[] = { DW_CFA_def_cfa_sf, 7, 1 };          /* 1 * -8 */
        const uint8_t large[] = { DW_CFA_def_cfa, 7, 0x80, 0x80, 0x04 }; /* 65536 */
        const uint8_t largest[] = { DW_CFA_def_cfa, 6, 0xff, 0xff, 0x03 };
        const uint8_t other_reg[] = { DW_CFA_def_cfa, 0, 8 };
        const uint8_t offset_sf[] = { DW_CFA_def_cfa_offset_sf, 0x7e };  /* -2 * -8 */
        const uint8_t no_cfa_cie[] = { DW_CFA_offset | 16, 1 };
        struct cfi_cie cie = cie_of(no_cfa_cie, sizeof(no_cfa_cie));
        struct emitted e;

        FIRST(negative, UNSUP, 0, 0);
        FIRST(large, UNSUP, 0, 0);
        FIRST(largest, FP, 65535, 0);
        FIRST(other_reg, UNSUP, 0, 0);
        FIRST(offset_sf, SP, 16, 0);
        e = run_with(&cie, NULL, 0, 0x1000, 0x1010);
        ROW(e, 0, 0x1000, UNSUP, 0, 0);
        /* def_cfa_offset on no rule leaves the CFA invalid */
        e = run_with(&cie, offset_sf, sizeof(offset_sf), 0x1000, 0x1010);
        ROW(e, 0, 0x1000, UNSUP, 0, 0);
}

/* A CFA expression: the PLT stubs' form (classic and IBT), one breg, and
 * anything else; def_cfa_register on an expression invalidates the CFA
 * until the next def_cfa. */
static void test_cfa_expression(void) {
        const uint8_t plt[] = {
                DW_CFA_def_cfa_expression, 11, DW_OP_breg7, 8, DW_OP_breg16, 0, DW_OP_lit15, DW_OP_and,
                DW_OP_lit11, DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus,
                DW_CFA_advance_loc | 4, DW_CFA_def_cfa_register, 6,
                DW_CFA_advance_loc | 4, DW_CFA_def_cfa, 7, 16,
        };
        const uint8_t ibt[] = {
                DW_CFA_def_cfa_expression, 11, DW_OP_breg7, 8, DW_OP_breg16, 0, DW_OP_lit15, DW_OP_and,
                DW_OP_lit10, DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus,
        };
        const uint8_t not_plt[] = {
                DW_CFA_def_cfa_expression, 11, DW_OP_breg7, 16, DW_OP_breg16, 0, DW_OP_lit15, DW_OP_and,
                DW_OP_lit11, DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus,
        };
        const uint8_t breg[] = { DW_CFA_def_cfa_expression, 2, DW_OP_breg6, 24 };
        const uint8_t bregx[] = { DW_CFA_def_cfa_expression, 3, DW_OP_bregx, 7, 40 };
        const uint8_t deref[] = { DW_CFA_def_cfa_expression, 3, DW_OP_breg7, 8, DW_OP_deref };
        const uint8_t lit[] = { DW_CFA_def_cfa_expression, 1, DW_OP_lit0 };
        const uint8_t truncated[] = { DW_CFA_def_cfa_expression, 2, DW_OP_bregx, 7 };
        struct emitted e;

        e = run(plt, sizeof(plt));
        CHECK_INT_EQ(e.n, 3u);
        ROW(e, 0, 0x1000, PROFD_UNWIND_PLT, 11, 0);
        ROW(e, 1, 0x1004, UNSUP, 0, 0);
        ROW(e, 2, 0x1008, SP, 16, 0);
        FIRST(ibt, PROFD_UNWIND_PLT, 10, 0);
        FIRST(not_plt, UNSUP, 0, 0);
        FIRST(breg, FP, 24, 0);
        FIRST(bregx, SP, 40, 0);
        FIRST(deref, UNSUP, 0, 0);
        FIRST(lit, UNSUP, 0, 0);
        FIRST(truncated, UNSUP, 0, 0);
}

/* The caller's rsp must be the CFA; its rbp unchanged or in a word at
 * CFA + 8n (n a non-zero int8). */
static void test_rsp_rbp(void) {
        const uint8_t rsp_val0[] = { DW_CFA_val_offset, 7, 0 };
        const uint8_t rsp_val8[] = { DW_CFA_val_offset_sf, 7, 0x7f }; /* -1 * -8 */
        const uint8_t rsp_saved[] = { DW_CFA_offset | 7, 1 };
        const uint8_t rsp_undefined[] = { DW_CFA_undefined, 7 };
        const uint8_t rbp_zero[] = { DW_CFA_offset | 6, 0 };
        const uint8_t rbp_far[] = { DW_CFA_offset | 6, 0x81, 0x01 };  /* 129 * -8 */
        const uint8_t rbp_farthest[] = { DW_CFA_offset | 6, 0x80, 0x01 }; /* 128 * -8 */
        const uint8_t rbp_val[] = { DW_CFA_val_offset, 6, 2 };
        const uint8_t rbp_reg[] = { DW_CFA_register, 6, 3 };
        const uint8_t rbp_expr[] = { DW_CFA_val_expression, 6, 0 };
        const uint8_t rbp_negative[] = { DW_CFA_GNU_negative_offset_extended, 6, 2 }; /* -2 * -8 */
        const uint8_t rbp_undefined[] = { DW_CFA_offset | 6, 2, DW_CFA_undefined, 6 };
        const uint8_t rbp_unaligned[] = { DW_CFA_offset | 6, 1 };
        struct cfi_cie cie = cie_of(std_cie, sizeof(std_cie));
        struct emitted e;

        FIRST(rsp_val0, SP, 8, 0);
        FIRST(rsp_val8, UNSUP, 0, 0);
        FIRST(rsp_saved, UNSUP, 0, 0);
        FIRST(rsp_undefined, SP, 8, 0);
        FIRST(rbp_zero, UNSUP, 0, 0);
        FIRST(rbp_far, UNSUP, 0, 0);
        FIRST(rbp_farthest, SP, 8, -128);
        FIRST(rbp_val, UNSUP, 0, 0);
        FIRST(rbp_reg, UNSUP, 0, 0);
        FIRST(rbp_expr, UNSUP, 0, 0);
        FIRST(rbp_negative, SP, 8, 2);
        FIRST(rbp_undefined, SP, 8, 0);
        cie.data_align = -4;
        e = run_with(&cie, rbp_unaligned, sizeof(rbp_unaligned), 0x1000, 0x1010);
        ROW(e, 0, 0x1000, UNSUP, 0, 0);
}

/* A signal frame's rows are SIGNAL whatever the rules say. */
static void test_signal(void) {
        const uint8_t prog[] = { DW_CFA_advance_loc | 4, DW_CFA_def_cfa_expression, 1, DW_OP_lit0 };
        struct cfi_cie cie = cie_of(std_cie, sizeof(std_cie));
        struct emitted e;

        cie.signal = true;
        e = run_with(&cie, prog, sizeof(prog), 0x1000, 0x1010);
        CHECK_INT_EQ(e.n, 2u);
        ROW(e, 0, 0x1000, PROFD_UNWIND_SIGNAL, 0, 0);
        ROW(e, 1, 0x1004, PROFD_UNWIND_SIGNAL, 0, 0);
}

/* Rows are handed on within [lo, hi): the one covering lo at lo, none at
 * or past hi, and the program is not read past hi. */
static void test_clipping(void) {
        const uint8_t prog[] = {
                DW_CFA_advance_loc | 4, DW_CFA_def_cfa_offset, 16,
                DW_CFA_advance_loc | 4, DW_CFA_def_cfa_offset, 24,
                DW_CFA_advance_loc | 4, DW_CFA_def_cfa_offset, 32,
                DW_CFA_advance_loc | 4, 0x3f, /* an unknown opcode, past hi */
        };
        struct cfi_cie cie = cie_of(std_cie, sizeof(std_cie));
        struct emitted e;

        e = run_with(&cie, prog, sizeof(prog), 0x1006, 0x100c);
        CHECK_INT_EQ(e.n, 2u);
        ROW(e, 0, 0x1006, SP, 16, 0);
        ROW(e, 1, 0x1008, SP, 24, 0);
        e = run_with(&cie, prog, sizeof(prog), 0x1000, 0x1010);
        CHECK_INT_EQ(e.n, 4u);
        ROW(e, 3, 0x100c, SP, 32, 0);
        /* hi past the program's last advance: the error row */
        e = run_with(&cie, prog, sizeof(prog), 0x1000, 0x1020);
        CHECK_INT_EQ(e.n, 5u);
        ROW(e, 4, 0x1010, UNSUP, 0, 0);
        /* lo past the program's last advance: the row it stopped in
         * covers lo */
        e = run_with(&cie, prog, sizeof(prog), 0x1040, 0x1050);
        CHECK_INT_EQ(e.n, 1u);
        ROW(e, 0, 0x1040, UNSUP, 0, 0);
}

/* Every way a program stops: one UNSUPPORTED row where the row being made
 * began (at lo at the earliest), and nothing after it. */
static void test_errors(void) {
        const uint8_t unknown[] = { DW_CFA_advance_loc | 4, DW_CFA_offset | 6, 2, DW_CFA_advance_loc | 4, 0x30,
                                    DW_CFA_advance_loc | 4 };
        const uint8_t no_state[] = { DW_CFA_advance_loc | 2, DW_CFA_restore_state };
        const uint8_t set_loc[] = { DW_CFA_advance_loc | 2, DW_CFA_set_loc, 0, 0x20, 0, 0, 0, 0, 0, 0 };
        const uint8_t truncated[] = { DW_CFA_advance_loc | 2, DW_CFA_def_cfa, 7 };
        const uint8_t truncated_block[] = { DW_CFA_expression, 6, 4, DW_OP_lit0 };
        const uint8_t wraps[] = { DW_CFA_advance_loc | 2, DW_CFA_MIPS_advance_loc8, 0xff, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff };
        const uint8_t scaled_wraps[] = { DW_CFA_advance_loc | 1, DW_CFA_MIPS_advance_loc8, 0, 0, 0, 0,
                                         0, 0, 0, 0x40 }; /* 2^62 x 4 */
        const uint8_t restore_in_cie[] = { DW_CFA_def_cfa, 7, 8, DW_CFA_offset | 16, 1, DW_CFA_restore | 6 };
        const uint8_t advance_in_cie[] = { DW_CFA_def_cfa, 7, 8, DW_CFA_advance_loc | 1 };
        uint8_t deep[CFI_ROWS_MAX_REMEMBER + 3];
        struct cfi_cie cie;
        struct emitted e;

        e = run(unknown, sizeof(unknown));
        CHECK_INT_EQ(e.n, 3u);
        ROW(e, 1, 0x1004, SP, 8, -2);
        ROW(e, 2, 0x1008, UNSUP, 0, 0);
        STOPS(no_state, 2, 0x1002);
        STOPS(set_loc, 2, 0x1002);
        STOPS(truncated, 2, 0x1002);
        STOPS(truncated_block, 1, 0x1000);
        STOPS(wraps, 2, 0x1002);
        /* an advance whose scaling by the code alignment passes 2^64 */
        cie = cie_of(std_cie, sizeof(std_cie));
        cie.code_align = 4;
        e = run_with(&cie, scaled_wraps, sizeof(scaled_wraps), 0x1000, 0x1040);
        CHECK_INT_EQ(e.n, 2u);
        ROW(e, 1, 0x1004, UNSUP, 0, 0);
        /* the CIE's own: every FDE of it one UNSUPPORTED row, at lo */
        cie = cie_of(restore_in_cie, sizeof(restore_in_cie));
        e = run_with(&cie, unknown, sizeof(unknown), 0x1004, 0x1040);
        CHECK_INT_EQ(e.n, 1u);
        ROW(e, 0, 0x1004, UNSUP, 0, 0);
        cie = cie_of(advance_in_cie, sizeof(advance_in_cie));
        e = run_with(&cie, NULL, 0, 0x1000, 0x1040);
        CHECK_INT_EQ(e.n, 1u);
        ROW(e, 0, 0x1000, UNSUP, 0, 0);
        /* remember_state one deeper than the states kept */
        deep[0] = DW_CFA_advance_loc | 1;
        memset(deep + 1, DW_CFA_remember_state, CFI_ROWS_MAX_REMEMBER + 1);
        deep[CFI_ROWS_MAX_REMEMBER + 2] = DW_CFA_advance_loc | 1;
        STOPS(deep, 2, 0x1001);
        deep[CFI_ROWS_MAX_REMEMBER] = DW_CFA_nop; /* exactly as deep as kept */
        e = run(deep, sizeof(deep));
        CHECK_INT_EQ(e.n, 3u);
        ROW(e, 2, 0x1002, SP, 8, 0);
}

/* What the CIE remembered is not the FDE's to restore; nops and
 * DW_CFA_GNU_args_size change nothing; the sink's error ends the run. */
static void test_cie_state_and_sink(void) {
        const uint8_t cie_remembers[] = { DW_CFA_def_cfa, 7, 8, DW_CFA_offset | 16, 1, DW_CFA_remember_state };
        const uint8_t restore[] = { DW_CFA_nop, DW_CFA_GNU_args_size, 16, DW_CFA_restore_state };
        const uint8_t prog[] = { DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16, DW_CFA_advance_loc | 1 };
        struct cfi_cie cie = cie_of(cie_remembers, sizeof(cie_remembers));
        struct emitted e = { .fail_at = 1 };

        e = run_with(&cie, restore, sizeof(restore), 0x1000, 0x1010);
        CHECK_INT_EQ(e.n, 1u);
        ROW(e, 0, 0x1000, UNSUP, 0, 0);
        cie = cie_of(std_cie, sizeof(std_cie));
        e = (struct emitted) { .fail_at = 1 };
        CHECK_INT_EQ(cfi_rows(&cie, 0x1000, prog, prog + sizeof(prog), 0x1000, 0x1010, sink, &e), -E2BIG);
        CHECK_INT_EQ(e.n, 1u);
}

int main(void) {
        test_frame_pointer_function();
        test_advances();
        test_remember_restore();
        test_return_address();
        test_cfa();
        test_cfa_expression();
        test_rsp_rbp();
        test_signal();
        test_clipping();
        test_errors();
        test_cie_state_and_sink();
        TESTS_DONE();
}
