/* Finds what a CPython walker needs in an interpreter's ELF file, from .dynsym, its data and .eh_frame. */
#include "python-discover.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytecursor.h"
#include "macro.h"
#include "runtime-elf.h"

static inline void elf_endp(Elf **e) {
        if (*e)
                elf_end(*e);
}

static inline void dwarf_cfi_endp(Dwarf_CFI **cfi) {
        if (*cfi)
                dwarf_cfi_end(*cfi);
}

/* The bytes [addr, addr + size) of the file's image, when one section with
 * contents holds them all (NULL otherwise: .bss, or a bad symbol). */
static const uint8_t *elf_bytes_at(Elf *elf, uint64_t addr, uint64_t size) {
        Elf_Scn *scn = NULL;

        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr shdr;
                Elf_Data *data;

                if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS || !(shdr.sh_flags & SHF_ALLOC))
                        continue;
                if (addr < shdr.sh_addr || addr - shdr.sh_addr >= shdr.sh_size ||
                    size > shdr.sh_size - (addr - shdr.sh_addr))
                        continue;
                data = elf_getdata(scn, NULL);
                if (!data || !data->d_buf || data->d_size != shdr.sh_size)
                        return NULL;
                return (const uint8_t *) data->d_buf + (addr - shdr.sh_addr);
        }
        return NULL;
}

int python_discover_elf(Elf *elf, struct python_binary *ret) {
        struct runtime_dynsym_want want[] = {
                { .name = "_PyEval_EvalFrameDefault" }, { .name = "_PyRuntime" }, { .name = "Py_Version" },
                { .name = "PyCode_Type" },
        };
        const GElf_Sym *eval = &want[0].sym, *runtime = &want[1].sym, *version = &want[2].sym;
        GElf_Ehdr ehdr;
        const uint8_t *p;
        struct bytecursor c;
        int r;

        if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr))
                return -ENOENT;
        r = runtime_dynsym_find(elf, NULL, want, ELEMENTSOF(want));
        if (r < 0)
                return r;
        if (!want[0].found || !want[1].found || eval->st_size == 0)
                return -ENOENT;
        /* The layouts are those of 64-bit little-endian builds. */
        if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_ident[EI_DATA] != ELFDATA2LSB || !want[2].found)
                return -EPROTONOSUPPORT;

        *ret = (struct python_binary) {
                .runtime = runtime->st_value,
                .runtime_size = runtime->st_size,
                .code_type = want[3].found ? want[3].sym.st_value : 0,
                .eval_start = eval->st_value,
                .eval_end = eval->st_value + eval->st_size,
        };
        /* Py_Version is `const unsigned long`: read as the symbol says. */
        if (version->st_size != 4 && version->st_size != 8)
                return -EBADMSG;
        p = elf_bytes_at(elf, version->st_value, version->st_size);
        if (!p)
                return -EBADMSG;
        c = bytecursor_make(p, version->st_size);
        ret->version = (uint32_t) bytecursor_fixed_le(&c, version->st_size);
        /* The runtime is initialized data (its debug offsets from 3.13 on
         * are constants of the build), so its head is in the file. */
        ret->runtime_head_size = MIN(ret->runtime_size, (uint64_t) PYTHON_RUNTIME_HEAD_MAX);
        p = elf_bytes_at(elf, ret->runtime, ret->runtime_head_size);
        if (p)
                memcpy(ret->runtime_head, p, ret->runtime_head_size);
        else
                ret->runtime_head_size = 0;

        r = python_discover_cold(elf, ret->eval_start, ret->eval_end, &ret->cold_start, &ret->cold_end);
        if (r < 0 && r != -ENOENT)
                return r;
        return 0;
}

int python_discover_file(const char *path, struct python_binary *ret) {
        _cleanup_close_ int fd = -1;
        _cleanup_(elf_endp) Elf *elf = NULL;

        if (elf_version(EV_CURRENT) == EV_NONE)
                return -EIO;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        elf = elf_begin(fd, ELF_C_READ, NULL);
        if (!elf)
                return -EBADMSG;
        return python_discover_elf(elf, ret);
}

/* ---- the cold part ----
 *
 * gcc splits a function that has blocks it expects rarely run (-freorder-
 * blocks-and-partition, the default at -O2) into the function and a
 * `fn.cold` part in .text.unlikely, far from it. A stripped file has no
 * symbol for the cold part, so: the hot part reaches it with direct jumps
 * (jmp rel32 or jcc rel32) to addresses outside itself; the cold part has
 * an FDE of its own; and, unlike any function's entry, that FDE does not
 * start with the entry state (CFA = rsp + 8: only the return address on
 * the stack), because the cold code runs in the hot part's frame: its CFI
 * opens with the hot part's frame size and saved registers. So the cold
 * part is the non-entry FDE that the most jumps out of the function land
 * in. Jumps to other functions (tail calls) land in entry FDEs and are
 * left out. The code bytes are scanned at every offset rather than
 * decoded: a rel32 read from the middle of another instruction lands at
 * random and almost never inside a non-entry FDE, and the vote of the true
 * jumps (dozens in the eval loop) outweighs one that does. */

#define X86_64_RSP 7

struct fde_votes {
        uint64_t start, end;
        unsigned votes;
};

/* Skips an encoded pointer of .eh_frame's form `enc` (for the 'P'
 * augmentation); false when the form is unknown. */
static bool eh_skip_encoded(struct bytecursor *c, uint8_t enc) {
        static const uint8_t width[16] = { [0x0] = 8, [0x2] = 2, [0x3] = 4, [0x4] = 8,
                                           [0xa] = 2, [0xb] = 4, [0xc] = 8 };

        if (enc == DW_EH_PE_omit)
                return true;
        if ((enc & 0xf) == DW_EH_PE_uleb128 || (enc & 0xf) == DW_EH_PE_sleb128) {
                (void) bytecursor_uleb(c);
                return !c->bad;
        }
        return width[enc & 0xf] && bytecursor_skip(c, width[enc & 0xf]);
}

/* The encoding of a CIE's FDE addresses ('R'); -1 when not understood. */
static int eh_cie_fde_encoding(const Dwarf_CIE *cie) {
        struct bytecursor c;
        const char *a = cie->augmentation;

        if (!a || a[0] == '\0')
                return DW_EH_PE_absptr;
        if (a[0] != 'z' || !cie->augmentation_data)
                return -1;
        c = bytecursor_make(cie->augmentation_data, cie->augmentation_data_size);
        for (a++; *a; a++) {
                if (*a == 'R')
                        return (int) bytecursor_fixed_le(&c, 1);
                if (*a == 'P') {
                        uint8_t enc = (uint8_t) bytecursor_fixed_le(&c, 1);

                        if (!eh_skip_encoded(&c, enc))
                                return -1;
                } else if (*a == 'L')
                        (void) bytecursor_fixed_le(&c, 1);
                else if (*a != 'S' && *a != 'B')
                        return -1;
                if (c.bad)
                        return -1;
        }
        return DW_EH_PE_absptr;
}

/* One value of form `enc & 0xf`; pc-relative to `field_addr` when asked. */
static bool eh_read_encoded(struct bytecursor *c, uint8_t enc, bool apply, uint64_t field_addr, uint64_t *ret) {
        uint64_t v;

        switch (enc & 0xf) {
        case DW_EH_PE_absptr: case DW_EH_PE_udata8: case DW_EH_PE_sdata8:
                v = bytecursor_fixed_le(c, 8);
                break;
        case DW_EH_PE_udata4:
                v = bytecursor_fixed_le(c, 4);
                break;
        case DW_EH_PE_sdata4:
                v = (uint64_t) (int64_t) (int32_t) bytecursor_fixed_le(c, 4);
                break;
        case DW_EH_PE_udata2:
                v = bytecursor_fixed_le(c, 2);
                break;
        case DW_EH_PE_sdata2:
                v = (uint64_t) (int64_t) (int16_t) bytecursor_fixed_le(c, 2);
                break;
        default:
                return false;
        }
        if (apply && (enc & 0x70) == DW_EH_PE_pcrel)
                v += field_addr;
        else if (apply && (enc & 0x70) != 0)
                return false;
        *ret = v;
        return !c->bad;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* Targets in [lo, hi) among the sorted `targets`. */
static unsigned count_in(const uint64_t *targets, size_t n, uint64_t lo, uint64_t hi) {
        size_t a = 0, b = n;

        while (a < b) {
                size_t m = a + (b - a) / 2;

                if (targets[m] < lo)
                        a = m + 1;
                else
                        b = m;
        }
        for (b = a; b < n && targets[b] < hi; b++)
                ;
        return (unsigned) (b - a);
}

/* Is the CFI at `addr` the x86_64 entry state, CFA = rsp + 8? */
static bool cfi_entry_state(Dwarf_CFI *cfi, uint64_t addr) {
        Dwarf_Frame *frame = NULL;
        Dwarf_Op *ops = NULL;
        size_t nops = 0;
        bool entry = true;     /* what cannot be read is not taken for a cold part */

        /* libdw gives "register + offset" as DW_OP_bregx (register,
         * offset); DW_OP_breg7 (offset) is taken too. */
        if (dwarf_cfi_addrframe(cfi, addr, &frame) == 0 && dwarf_frame_cfa(frame, &ops, &nops) == 0)
                entry = nops == 1 &&
                        ((ops[0].atom == DW_OP_bregx && ops[0].number == X86_64_RSP && ops[0].number2 == 8) ||
                         (ops[0].atom == DW_OP_breg0 + X86_64_RSP && ops[0].number == 8));
        free(frame);
        return entry;
}

/* The FDEs of .eh_frame that jump targets land in, best voted first kept. */
static int eh_best_cold_fde(Elf *elf, Elf_Scn *scn, const uint64_t *targets, size_t n_targets,
                            uint64_t fn_start, uint64_t fn_end, struct fde_votes *best) {
        GElf_Ehdr ehdr;
        GElf_Shdr shdr;
        Elf_Data *data = elf_getdata(scn, NULL);
        _cleanup_(dwarf_cfi_endp) Dwarf_CFI *cfi = dwarf_getcfi_elf(elf);
        Dwarf_Off offset = 0, next;

        if (!data || !gelf_getshdr(scn, &shdr) || !gelf_getehdr(elf, &ehdr) || !cfi)
                return -EBADMSG;
        *best = (struct fde_votes) {};
        for (; offset < data->d_size; offset = next) {
                Dwarf_CFI_Entry entry, cie;
                Dwarf_Off cie_next;
                struct bytecursor c;
                uint64_t lo, len;
                int enc, r;

                r = dwarf_next_cfi(ehdr.e_ident, data, true, offset, &next, &entry);
                if (r != 0)
                        break;         /* 1: the terminator; -1: stop at what cannot be read */
                if (dwarf_cfi_cie_p(&entry))
                        continue;
                if (dwarf_next_cfi(ehdr.e_ident, data, true, entry.fde.CIE_pointer, &cie_next, &cie) != 0 ||
                    !dwarf_cfi_cie_p(&cie) || (enc = eh_cie_fde_encoding(&cie.cie)) < 0)
                        continue;
                c = bytecursor_make(entry.fde.start, (size_t) (entry.fde.end - entry.fde.start));
                if (!eh_read_encoded(&c, (uint8_t) enc, true,
                                     shdr.sh_addr + (uint64_t) (entry.fde.start - (const uint8_t *) data->d_buf), &lo) ||
                    !eh_read_encoded(&c, (uint8_t) enc, false, 0, &len) || len == 0 || lo + len < lo)
                        continue;
                if (lo < fn_end && lo + len > fn_start)
                        continue;      /* the function's own */
                unsigned votes = count_in(targets, n_targets, lo, lo + len);
                if (votes > best->votes && !cfi_entry_state(cfi, lo))
                        *best = (struct fde_votes) { lo, lo + len, votes };
        }
        return best->votes ? 0 : -ENOENT;
}

/* Targets of every jmp rel32 (e9) and jcc rel32 (0f 80..8f) read at any
 * offset of [start, end) that land outside it; sorted. */
static int jump_targets(const uint8_t *code, uint64_t start, uint64_t end, uint64_t **ret, size_t *ret_n) {
        _cleanup_free_ uint64_t *t = NULL;
        size_t n = 0, size = end - start;

        t = malloc(sizeof *t * (size / 5 + 1));
        if (!t)
                return -ENOMEM;
        for (size_t i = 0; i + 5 <= size; i++) {
                size_t rel_at;
                struct bytecursor c;
                uint64_t target;

                if (code[i] == 0xe9)
                        rel_at = i + 1;
                else if (code[i] == 0x0f && i + 6 <= size && (code[i + 1] & 0xf0) == 0x80)
                        rel_at = i + 2;
                else
                        continue;
                c = bytecursor_make(code + rel_at, 4);
                target = start + rel_at + 4 + (uint64_t) (int64_t) (int32_t) bytecursor_fixed_le(&c, 4);
                if ((target < start || target >= end) && n < size / 5 + 1)
                        t[n++] = target;
        }
        qsort(t, n, sizeof *t, cmp_u64);
        *ret = TAKE_PTR(t);
        *ret_n = n;
        return 0;
}

int python_discover_cold(Elf *elf, uint64_t start, uint64_t end, uint64_t *ret_start, uint64_t *ret_end) {
        _cleanup_free_ uint64_t *targets = NULL;
        size_t n_targets = 0, shstrndx;
        Elf_Scn *scn = NULL, *eh_frame = NULL;
        GElf_Ehdr ehdr;
        const uint8_t *code;
        struct fde_votes best;
        int r;

        *ret_start = *ret_end = 0;
        if (!gelf_getehdr(elf, &ehdr) || ehdr.e_machine != EM_X86_64 || end <= start)
                return -ENOENT;
        code = elf_bytes_at(elf, start, end - start);
        if (!code)
                return -EBADMSG;
        if (elf_getshdrstrndx(elf, &shstrndx) < 0)
                return -EBADMSG;
        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr shdr;

                if (gelf_getshdr(scn, &shdr) && streq(elf_strptr(elf, shstrndx, shdr.sh_name), ".eh_frame"))
                        eh_frame = scn;
        }
        if (!eh_frame)
                return -ENOENT;
        r = jump_targets(code, start, end, &targets, &n_targets);
        if (r < 0)
                return r;
        r = eh_best_cold_fde(elf, eh_frame, targets, n_targets, start, end, &best);
        if (r < 0)
                return r;
        *ret_start = best.start;
        *ret_end = best.end;
        return 0;
}
