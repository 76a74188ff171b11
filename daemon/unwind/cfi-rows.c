/* One FDE's CFI program run once into classified rows (cfi-rows.h). */
#include "cfi-rows.h"

#include <dwarf.h>
#include <string.h>

#include "bytecursor.h"
#include "macro.h"

/* x86-64 DWARF register numbers (System V psABI, figure 3.36). */
#define DWARF_REG_RBP 6
#define DWARF_REG_RSP 7
#define DWARF_REG_RA 16

/* How a register of the caller is found; only the three the walker needs
 * are kept (rbp, rsp, the return address). */
enum rule_kind {
        RULE_UNDEFINED,
        RULE_SAME,       /* the callee did not change it */
        RULE_OFFSET,     /* saved in the word at CFA + value */
        RULE_VAL_OFFSET, /* its value is CFA + value */
        RULE_OTHER,      /* in another register, or an expression: nothing BPF evaluates */
};

struct rule {
        enum rule_kind kind;
        int64_t value;
};

enum cfa_kind {
        CFA_UNSET,   /* no rule yet */
        CFA_REG,     /* register + offset */
        CFA_EXPR,    /* a DWARF expression */
        CFA_INVALID, /* def_cfa_register or def_cfa_offset on a CFA that was not register + offset */
};

enum { SLOT_RBP, SLOT_RSP, SLOT_RA, N_SLOTS };

struct state {
        enum cfa_kind cfa;
        uint64_t cfa_reg;
        uint64_t cfa_off; /* an unsigned word, as DWARF leaves it; read as signed when classified */
        const uint8_t *expr;
        size_t expr_len;
        struct rule regs[N_SLOTS];
};

struct run {
        const struct cfi_cie *cie;
        struct state s;
        struct state initial;  /* after the CIE's instructions: what DW_CFA_restore goes back to */
        bool in_cie;
        struct state stack[CFI_ROWS_MAX_REMEMBER];
        size_t depth;

        uint64_t loc;          /* where the row being made begins */
        uint64_t lo, hi;
        cfi_row_sink_t sink;
        void *userdata;
};

static struct rule *slot(struct state *s, uint64_t reg) {
        switch (reg) {
        case DWARF_REG_RBP:
                return &s->regs[SLOT_RBP];
        case DWARF_REG_RSP:
                return &s->regs[SLOT_RSP];
        case DWARF_REG_RA:
                return &s->regs[SLOT_RA];
        default:
                return NULL;
        }
}

static void set_rule(struct state *s, uint64_t reg, enum rule_kind kind, int64_t value) {
        struct rule *r = slot(s, reg);

        if (r)
                *r = (struct rule) { .kind = kind, .value = value };
}

/* Multiplies a factored operand as DWARF's unsigned words do (wrapping). */
static int64_t factored(uint64_t operand, int64_t factor) {
        return (int64_t) (operand * (uint64_t) factor);
}

/* A CFA expression's two forms BPF evaluates, read op by op: one
 * DW_OP_breg (register + offset), or the PLT stubs' rule GNU ld writes
 * for x86-64:
 *   DW_OP_breg7 (rsp) 8; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and;
 *   DW_OP_litK; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * i.e. CFA = rsp + 8 + (((rip & 15) >= K) << 3): before the stub's push
 * (the first K bytes of its 16) one word is on the stack, after it two.
 * K is 11 for classic stubs, 10 for IBT stubs. Any other op, or more of
 * them, is neither form. */
#define EXPR_MAX_OPS 9
struct expr_op {
        uint8_t atom;
        uint64_t reg;
        int64_t number;
};

static size_t expr_read(const uint8_t *p, size_t len, struct expr_op ops[EXPR_MAX_OPS]) {
        struct bytecursor c = bytecursor_make(p, len);
        size_t n = 0;

        while (bytecursor_left(&c) > 0) {
                uint8_t atom = (uint8_t) bytecursor_fixed_le(&c, 1);
                struct expr_op op = { .atom = atom };

                if (n == EXPR_MAX_OPS)
                        return 0;
                if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
                        op.reg = (uint64_t) (atom - DW_OP_breg0);
                        op.number = bytecursor_sleb(&c);
                } else if (atom == DW_OP_bregx) {
                        op.reg = bytecursor_uleb(&c);
                        op.number = bytecursor_sleb(&c);
                } else if (!((atom >= DW_OP_lit0 && atom <= DW_OP_lit31) || atom == DW_OP_and || atom == DW_OP_ge ||
                             atom == DW_OP_shl || atom == DW_OP_plus))
                        return 0;
                if (c.bad)
                        return 0;
                ops[n++] = op;
        }
        return n;
}

static bool is_breg(const struct expr_op *op) {
        return op->atom == DW_OP_bregx || (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31);
}

/* The PLT threshold K, or -1. */
static int plt_threshold(const struct expr_op *ops, size_t n) {
        if (n != 9)
                return -1;
        if (!(ops[0].atom == DW_OP_breg7 && ops[0].number == 8) || !(ops[1].atom == DW_OP_breg16 && ops[1].number == 0) ||
            ops[2].atom != DW_OP_lit15 || ops[3].atom != DW_OP_and || ops[4].atom > DW_OP_lit15 ||
            ops[4].atom < DW_OP_lit0 || ops[5].atom != DW_OP_ge || ops[6].atom != DW_OP_lit3 ||
            ops[7].atom != DW_OP_shl || ops[8].atom != DW_OP_plus)
                return -1;
        return ops[4].atom - DW_OP_lit0;
}

/* CFA = register + offset into row's kind and cfa_off; false if BPF
 * cannot evaluate it. */
static bool cfa_register(uint64_t reg, int64_t off, struct profd_unwind_row *row) {
        if (off < 0 || off > UINT16_MAX)
                return false;
        if (reg == DWARF_REG_RSP)
                row->kind = PROFD_UNWIND_CFA_SP;
        else if (reg == DWARF_REG_RBP)
                row->kind = PROFD_UNWIND_CFA_FP;
        else
                return false;
        row->cfa_off = (uint16_t) off;
        return true;
}

static bool cfa_classify(const struct state *s, struct profd_unwind_row *row) {
        struct expr_op ops[EXPR_MAX_OPS];
        size_t n;
        int k;

        switch (s->cfa) {
        case CFA_REG:
                return cfa_register(s->cfa_reg, (int64_t) s->cfa_off, row);
        case CFA_EXPR:
                n = expr_read(s->expr, s->expr_len, ops);
                if (n == 1 && is_breg(&ops[0]))
                        return cfa_register(ops[0].reg, ops[0].number, row);
                k = plt_threshold(ops, n);
                if (k < 0)
                        return false;
                row->kind = PROFD_UNWIND_PLT;
                row->cfa_off = (uint16_t) k;
                return true;
        default:
                return false;
        }
}

/* The row's rules (pc left to the caller). The order is the walker's:
 * a signal frame first, then the return address (undefined ends the
 * stack; else it must be the word call pushed, at CFA - 8), the CFA, the
 * caller's rsp (the CFA itself), the caller's rbp (unchanged, or saved in
 * a word at CFA + 8 * n). */
static void classify(const struct cfi_cie *cie, const struct state *s, struct profd_unwind_row *row) {
        const struct rule *ra = &s->regs[SLOT_RA], *rsp = &s->regs[SLOT_RSP], *rbp = &s->regs[SLOT_RBP];
        const struct profd_unwind_row unsupported = { .kind = PROFD_UNWIND_UNSUPPORTED };

        *row = unsupported;
        if (cie->signal) {
                row->kind = PROFD_UNWIND_SIGNAL;
                return;
        }
        if (cie->ra_reg != DWARF_REG_RA)
                return;
        if (ra->kind == RULE_UNDEFINED) {
                row->kind = PROFD_UNWIND_END;
                return;
        }
        if (ra->kind != RULE_OFFSET || ra->value != -8)
                return;
        if (!cfa_classify(s, row)) {
                *row = unsupported;
                return;
        }
        if (!(rsp->kind == RULE_UNDEFINED || rsp->kind == RULE_SAME ||
              (rsp->kind == RULE_VAL_OFFSET && rsp->value == 0))) {
                *row = unsupported;
                return;
        }
        if (rbp->kind == RULE_UNDEFINED || rbp->kind == RULE_SAME)
                return;
        if (rbp->kind != RULE_OFFSET || rbp->value == 0 || rbp->value % 8 != 0 || rbp->value / 8 < INT8_MIN ||
            rbp->value / 8 > INT8_MAX) {
                *row = unsupported;
                return;
        }
        row->rbp_off = (int8_t) (rbp->value / 8);
}

/* Hands on the row [start, end) with rule, the part of it in [lo, hi). */
static int emit(struct run *r, uint64_t start, uint64_t end, const struct profd_unwind_row *rule) {
        if (start >= end || end <= r->lo || start >= r->hi)
                return 0;
        return r->sink(r->userdata, MAX(start, r->lo), rule);
}

enum step {
        STEP_DONE,  /* the program's end, or past hi */
        STEP_ERROR, /* cannot be run further */
};

/* The row [r->loc, to) is complete (to >= r->loc): hands it on and starts
 * the next. Returns 0 or the sink's error. */
static int advance(struct run *r, uint64_t to, bool *ret_past) {
        struct profd_unwind_row rule;
        int k;

        *ret_past = false;
        if (to > r->loc) {
                classify(r->cie, &r->s, &rule);
                k = emit(r, r->loc, to, &rule);
                if (k < 0)
                        return k;
        }
        r->loc = to;
        *ret_past = to >= r->hi;
        return 0;
}

/* Runs program bytes c to their end, or to the first advance past hi.
 * Returns STEP_DONE, STEP_ERROR, or the sink's negative error. */
static int execute(struct run *r, struct bytecursor *c) {
        const struct cfi_cie *cie = r->cie;
        struct state *s = &r->s;

        while (bytecursor_left(c) > 0) {
                uint8_t op = (uint8_t) bytecursor_fixed_le(c, 1);
                uint64_t reg = op & 0x3f, delta = 0, u, len, to;
                bool is_advance = false, past;
                int64_t sv;
                int k;

                switch (op & 0xc0) {
                case DW_CFA_advance_loc:
                        delta = op & 0x3f;
                        is_advance = true;
                        break;
                case DW_CFA_offset:
                        u = bytecursor_uleb(c);
                        set_rule(s, reg, RULE_OFFSET, factored(u, cie->data_align));
                        break;
                case DW_CFA_restore:
                        goto restore;
                default:
                        switch (op) {
                        case DW_CFA_nop:
                                break;
                        case DW_CFA_advance_loc1:
                        case DW_CFA_advance_loc2:
                        case DW_CFA_advance_loc4:
                        case DW_CFA_MIPS_advance_loc8:
                                delta = bytecursor_fixed_le(c, op == DW_CFA_advance_loc1   ? 1
                                                               : op == DW_CFA_advance_loc2 ? 2
                                                               : op == DW_CFA_advance_loc4 ? 4
                                                                                           : 8);
                                is_advance = true;
                                break;
                        case DW_CFA_def_cfa:
                                s->cfa_reg = bytecursor_uleb(c);
                                s->cfa_off = bytecursor_uleb(c);
                                s->cfa = CFA_REG;
                                break;
                        case DW_CFA_def_cfa_sf:
                                s->cfa_reg = bytecursor_uleb(c);
                                s->cfa_off = (uint64_t) factored((uint64_t) bytecursor_sleb(c), cie->data_align);
                                s->cfa = CFA_REG;
                                break;
                        case DW_CFA_def_cfa_register:
                                s->cfa_reg = bytecursor_uleb(c);
                                if (s->cfa != CFA_REG)
                                        s->cfa = CFA_INVALID;
                                break;
                        case DW_CFA_def_cfa_offset:
                                s->cfa_off = bytecursor_uleb(c);
                                if (s->cfa != CFA_REG)
                                        s->cfa = CFA_INVALID;
                                break;
                        case DW_CFA_def_cfa_offset_sf:
                                s->cfa_off = (uint64_t) factored((uint64_t) bytecursor_sleb(c), cie->data_align);
                                if (s->cfa != CFA_REG)
                                        s->cfa = CFA_INVALID;
                                break;
                        case DW_CFA_def_cfa_expression:
                                len = bytecursor_uleb(c);
                                s->expr = c->p;
                                s->expr_len = (size_t) len;
                                if (bytecursor_skip(c, (size_t) len))
                                        s->cfa = CFA_EXPR;
                                break;
                        case DW_CFA_undefined:
                                set_rule(s, bytecursor_uleb(c), RULE_UNDEFINED, 0);
                                break;
                        case DW_CFA_same_value:
                                set_rule(s, bytecursor_uleb(c), RULE_SAME, 0);
                                break;
                        case DW_CFA_offset_extended:
                                reg = bytecursor_uleb(c);
                                u = bytecursor_uleb(c);
                                set_rule(s, reg, RULE_OFFSET, factored(u, cie->data_align));
                                break;
                        case DW_CFA_offset_extended_sf:
                                reg = bytecursor_uleb(c);
                                sv = bytecursor_sleb(c);
                                set_rule(s, reg, RULE_OFFSET, factored((uint64_t) sv, cie->data_align));
                                break;
                        case DW_CFA_GNU_negative_offset_extended:
                                reg = bytecursor_uleb(c);
                                u = bytecursor_uleb(c);
                                set_rule(s, reg, RULE_OFFSET, factored(-u, cie->data_align));
                                break;
                        case DW_CFA_val_offset:
                                reg = bytecursor_uleb(c);
                                u = bytecursor_uleb(c);
                                set_rule(s, reg, RULE_VAL_OFFSET, factored(u, cie->data_align));
                                break;
                        case DW_CFA_val_offset_sf:
                                reg = bytecursor_uleb(c);
                                sv = bytecursor_sleb(c);
                                set_rule(s, reg, RULE_VAL_OFFSET, factored((uint64_t) sv, cie->data_align));
                                break;
                        case DW_CFA_register:
                                reg = bytecursor_uleb(c);
                                (void) bytecursor_uleb(c);
                                set_rule(s, reg, RULE_OTHER, 0);
                                break;
                        case DW_CFA_expression:
                        case DW_CFA_val_expression:
                                reg = bytecursor_uleb(c);
                                len = bytecursor_uleb(c);
                                if (bytecursor_skip(c, (size_t) len))
                                        set_rule(s, reg, RULE_OTHER, 0);
                                break;
                        case DW_CFA_restore_extended:
                                reg = bytecursor_uleb(c);
                        restore:
                                /* the CIE's rule; not within the CIE itself */
                                if (r->in_cie)
                                        return STEP_ERROR;
                                if (slot(s, reg))
                                        *slot(s, reg) = *slot(&r->initial, reg);
                                break;
                        case DW_CFA_remember_state:
                                if (r->depth == CFI_ROWS_MAX_REMEMBER)
                                        return STEP_ERROR;
                                r->stack[r->depth++] = *s;
                                break;
                        case DW_CFA_restore_state:
                                if (r->depth == 0)
                                        return STEP_ERROR;
                                *s = r->stack[--r->depth];
                                break;
                        case DW_CFA_GNU_window_save:
                                /* SPARC's shorthand, as libdw runs it on
                                 * any machine: among others, register 16
                                 * saved at CFA + 0 */
                                set_rule(s, DWARF_REG_RA, RULE_OFFSET, 0);
                                break;
                        case DW_CFA_GNU_args_size:
                                (void) bytecursor_uleb(c);
                                break;
                        default:
                                /* DW_CFA_set_loc among them (cfi-rows.h) */
                                return STEP_ERROR;
                        }
                }
                if (c->bad)
                        return STEP_ERROR;
                if (!is_advance)
                        continue;
                /* a row is only made by an FDE */
                if (r->in_cie)
                        return STEP_ERROR;
                /* a location moving backwards, or past 2^64 */
                if (__builtin_mul_overflow(delta, cie->code_align, &delta) ||
                    __builtin_add_overflow(r->loc, delta, &to))
                        return STEP_ERROR;
                k = advance(r, to, &past);
                if (k < 0)
                        return k;
                if (past)
                        return STEP_DONE;
        }
        return STEP_DONE;
}

int cfi_rows(const struct cfi_cie *cie, uint64_t fde_start, const uint8_t *prog, const uint8_t *prog_end,
             uint64_t lo, uint64_t hi, cfi_row_sink_t sink, void *userdata) {
        static const struct profd_unwind_row unsupported = { .kind = PROFD_UNWIND_UNSUPPORTED };
        struct run run, *r = &run; /* not zeroed: its state stack is 5 KiB */
        struct bytecursor c;
        int k;

        r->cie = cie;
        r->in_cie = true;
        r->depth = 0;
        r->loc = fde_start;
        r->lo = lo;
        r->hi = hi;
        r->sink = sink;
        r->userdata = userdata;
        /* The ABI's initial rules (libdw's x86-64 backend): rbp and the
         * return address unchanged, rsp the CFA. */
        r->s = (struct state) { .cfa = CFA_UNSET };
        r->s.regs[SLOT_RBP] = (struct rule) { .kind = RULE_SAME };
        r->s.regs[SLOT_RSP] = (struct rule) { .kind = RULE_VAL_OFFSET, .value = 0 };
        r->s.regs[SLOT_RA] = (struct rule) { .kind = RULE_SAME };

        c = bytecursor_make(cie->initial, (size_t) (cie->initial_end - cie->initial));
        k = execute(r, &c);
        if (k == STEP_ERROR)
                return emit(r, r->loc, hi, &unsupported);
        if (k < 0)
                return k;
        r->depth = 0; /* states remembered by the CIE are not the FDE's */
        r->initial = r->s;
        r->in_cie = false;

        c = bytecursor_make(prog, (size_t) (prog_end - prog));
        k = execute(r, &c);
        if (k == STEP_ERROR)
                return emit(r, r->loc, hi, &unsupported);
        if (k < 0)
                return k;
        if (r->loc < hi) {
                /* the end of the program: its last row reaches the FDE's end */
                struct profd_unwind_row rule;

                classify(cie, &r->s, &rule);
                return emit(r, r->loc, hi, &rule);
        }
        return 0;
}
