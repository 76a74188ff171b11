/* libFuzzer target: CFI programs as the table builder's interpreter meets
 * them (cfi-rows.h), CIE and FDE instructions from files profd does not
 * control, run without the checks unwind-cfi.c makes first. Input: a flags
 * byte (bit 0: a signal frame; bit 1: another return-address column), the
 * code alignment (1-4), the data alignment (a signed byte), where lo
 * starts in the FDE, the CIE program's length, that program, and the FDE's
 * program. The rows must come in [lo, hi), strictly in order, each of a
 * kind BPF knows; a PLT threshold is a nibble. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfi-rows.h"
#include "fuzz.h"

#define FDE_START 0x1000
#define FDE_LEN 0x200

struct seen {
        uint64_t lo, hi, last;
        size_t n;
};

static int sink(void *userdata, uint64_t pc, const struct profd_unwind_row *rule) {
        struct seen *s = userdata;

        FUZZ_CHECK(pc >= s->lo && pc < s->hi);
        /* the rows cover [lo, hi): the first starts at lo */
        FUZZ_CHECK(s->n > 0 ? pc > s->last : pc == s->lo);
        FUZZ_CHECK(rule->kind <= PROFD_UNWIND_UNSUPPORTED && rule->kind != PROFD_UNWIND_GAP);
        if (rule->kind == PROFD_UNWIND_PLT)
                FUZZ_CHECK(rule->cfa_off <= 15);
        if (rule->kind != PROFD_UNWIND_CFA_SP && rule->kind != PROFD_UNWIND_CFA_FP &&
            rule->kind != PROFD_UNWIND_PLT)
                FUZZ_CHECK(rule->cfa_off == 0 && rule->rbp_off == 0);
        s->last = pc;
        s->n++;
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct cfi_cie cie;
        struct seen s;
        uint8_t *cie_prog, *fde_prog;
        size_t n_cie, n_fde;
        int r;

        if (size < 5)
                return 0;
        n_cie = data[4];
        if (n_cie > size - 5)
                return 0;
        n_fde = size - 5 - n_cie;
        /* copies exactly as long as the programs: ASan sees a read past one */
        cie_prog = malloc(n_cie ? n_cie : 1);
        fde_prog = malloc(n_fde ? n_fde : 1);
        if (!cie_prog || !fde_prog)
                abort();
        memcpy(cie_prog, data + 5, n_cie);
        memcpy(fde_prog, data + 5 + n_cie, n_fde);
        cie = (struct cfi_cie) {
                .initial = cie_prog,
                .initial_end = cie_prog + n_cie,
                .code_align = 1 + (data[1] & 3),
                .data_align = (int8_t) data[2],
                .ra_reg = data[0] & 2 ? 30 : 16,
                .signal = data[0] & 1,
        };
        s = (struct seen) { .lo = FDE_START + data[3], .hi = FDE_START + FDE_LEN };
        r = cfi_rows(&cie, FDE_START, fde_prog, fde_prog + n_fde, s.lo, s.hi, sink, &s);
        FUZZ_CHECK(r == 0);
        FUZZ_CHECK(s.n > 0);
        free(cie_prog);
        free(fde_prog);
        return 0;
}
