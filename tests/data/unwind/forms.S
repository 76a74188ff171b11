/* Fixture of test-unwind-table: one function per call-frame rule the
 * unwind table must classify, written with explicit CFI directives so the
 * forms do not depend on what a compiler chooses. The functions are never
 * called. In each, the rule under test starts at the function's address + 1
 * (after a one-byte nop) and holds to its end. With -DDEBUG_FRAME_ONLY
 * the CFI goes to .debug_frame instead of .eh_frame. */
#ifdef DEBUG_FRAME_ONLY
        .cfi_sections .debug_frame
#endif
        .text

/* DEFUN name: starts the function and its FDE, then a one-byte nop. */
        .macro DEFUN name
        .p2align 4
        .globl \name
        .type \name, @function
\name:
        .cfi_startproc
        nop
        .endm
        .macro ENDFUN name
        nop
        ret
        .cfi_endproc
        .size \name, . - \name
        .endm

/* CFA in r10, as gcc's dynamic realignment argument pointer (DRAP) does
 * before it can express the CFA through rbp: UNSUPPORTED. */
DEFUN form_cfa_r10
        .cfi_def_cfa %r10, 0
ENDFUN form_cfa_r10

/* CFA = *(rbp - 8): DW_CFA_def_cfa_expression (DW_OP_breg6 -8; DW_OP_deref),
 * the DRAP function body's rule: UNSUPPORTED. */
DEFUN form_cfa_deref
        .cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06
ENDFUN form_cfa_deref

/* The return address saved 16 bytes below the CFA, not 8: UNSUPPORTED. */
DEFUN form_ra_offset
        .cfi_offset %rip, -16
ENDFUN form_ra_offset

/* The largest CFA offset a row holds: CFA_SP 65535. */
DEFUN form_cfa_max
        .cfi_def_cfa_offset 65535
ENDFUN form_cfa_max

/* One more: UNSUPPORTED. */
DEFUN form_cfa_too_big
        .cfi_def_cfa_offset 65536
ENDFUN form_cfa_too_big

/* rbp's location as an expression (DW_CFA_expression rbp, DW_OP_breg7 0):
 * UNSUPPORTED. (An offset off a multiple of 8 cannot be written with the
 * data alignment factor -8 every x86-64 CIE has.) */
DEFUN form_rbp_expression
        .cfi_def_cfa_offset 16
        .cfi_escape 0x10, 0x06, 0x02, 0x77, 0x00
ENDFUN form_rbp_expression

/* rbp at CFA-1024: rbp_off -128, the lowest that fits. */
DEFUN form_rbp_far
        .cfi_def_cfa_offset 1040
        .cfi_offset %rbp, -1024
ENDFUN form_rbp_far

/* rbp at CFA-1032: beyond a signed byte of words: UNSUPPORTED. */
DEFUN form_rbp_too_far
        .cfi_def_cfa_offset 1040
        .cfi_offset %rbp, -1032
ENDFUN form_rbp_too_far

/* rbp kept in rbx: UNSUPPORTED. */
DEFUN form_rbp_register
        .cfi_register %rbp, %rbx
ENDFUN form_rbp_register

/* rbp saved as a value (val_offset), not in memory: UNSUPPORTED. */
DEFUN form_rbp_val_offset
        .cfi_val_offset %rbp, -16
ENDFUN form_rbp_val_offset

/* rbp declared unchanged: CFA_SP 8, rbp_off 0. */
DEFUN form_rbp_same
        .cfi_same_value %rbp
ENDFUN form_rbp_same

/* rsp saved in memory (context switches): UNSUPPORTED. */
DEFUN form_rsp_saved
        .cfi_offset %rsp, -16
ENDFUN form_rsp_saved

/* Return address undefined: the outermost frame, END. */
DEFUN form_end
        .cfi_undefined %rip
ENDFUN form_end

/* A signal frame (augmentation 'S'): every row SIGNAL. */
DEFUN form_signal
        .cfi_signal_frame
        .cfi_def_cfa_offset 16
ENDFUN form_signal

/* An IBT PLT stub's rule: CFA = rsp + 8 + ((rip & 15) >= 10) << 3: PLT 10. */
DEFUN form_plt10
        .cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x22
ENDFUN form_plt10

/* The same expression ending in DW_OP_minus: not the PLT form, UNSUPPORTED. */
DEFUN form_plt_minus
        .cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x1c
ENDFUN form_plt_minus

/* Code without CFI between two FDEs: a GAP row at the end of the FDE
 * before it, so that FDE's rule does not cover it. */
        .p2align 4
        .globl form_no_cfi
        .type form_no_cfi, @function
form_no_cfi:
        nop
        nop
        ret
        .size form_no_cfi, . - form_no_cfi

/* An epilogue in the middle of a function, as gcc writes it: the state
 * before it is remembered and restored after it. libdw may report the
 * restored row as starting below the address asked for. */
DEFUN form_remember
        push %rbx
        .cfi_def_cfa_offset 16
        .cfi_offset %rbx, -16
        test %rdi, %rdi
        jz 1f
        .cfi_remember_state
        pop %rbx
        .cfi_def_cfa_offset 8
        ret
1:
        .cfi_restore_state
        xor %eax, %eax
        pop %rbx
        .cfi_def_cfa_offset 8
ENDFUN form_remember

#ifdef HUGE_REGISTER
/* DW_CFA_undefined for register 2^30 - 1: libdw would allocate a frame
 * state for 2^30 registers (16 GiB). The whole file must be refused. */
DEFUN form_huge_register
        .cfi_escape 0x07, 0xff, 0xff, 0xff, 0xff, 0x03
ENDFUN form_huge_register
#endif

        .section .note.GNU-stack, "", @progbits
