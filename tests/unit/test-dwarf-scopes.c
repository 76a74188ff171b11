/* Specifies dwarf-scopes.c on every CU of real files: for addresses of the
 * CU's line rows, the innermost scope must be the one libdw's
 * dwarf_getscopes returns first, and each enclosing node up to the CU the
 * DIEs a plain descent through libdw finds (the first child containing the
 * address, then its first child containing it, ...: the definition in
 * dwarf-scopes.h; dwarf_getscopes itself continues an inlined instance's
 * chain in its abstract origin). Whichever order the lookups grow the tree
 * in: rows in address order, then scrambled on a fresh tree. And the tree
 * must be grown, not read whole: one lookup per CU must read fewer than
 * half the DIEs that lookups of every row read.
 *
 * usage: test-dwarf-scopes FILE... (files with DWARF; libc's debug file
 * from libc6-dbg is added when installed, fewer addresses per CU) */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "dwarf-scopes.h"
#include "macro.h"
#include "tests.h"

struct totals {
        size_t files, cus, lookups, mismatches;
        size_t dies_one, dies_all; /* DIEs read: one lookup per CU; every address */
};

#define CHAIN_MAX 1100

static bool may_have_scopes(int tag) {
        return tag == DW_TAG_compile_unit || tag == DW_TAG_module || tag == DW_TAG_lexical_block ||
                tag == DW_TAG_with_stmt || tag == DW_TAG_catch_block || tag == DW_TAG_try_block ||
                tag == DW_TAG_entry_point || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram;
}

static bool has_pc(Dwarf_Die *die, uint64_t pc) {
        Dwarf_Addr base, start, end;
        ptrdiff_t off = 0;

        while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0)
                if (start < end && pc >= start && pc < end)
                        return true;
        return false;
}

/* The first child of parent (the children of imported partial units
 * among them) containing pc, into *ret. */
static bool first_child_with(Dwarf_Die *parent, uint64_t pc, Dwarf_Die *ret) {
        Dwarf_Die child;

        if (dwarf_child(parent, &child) != 0)
                return false;
        do {
                Dwarf_Attribute attr;
                Dwarf_Die unit;

                if (dwarf_tag(&child) == DW_TAG_imported_unit) {
                        if (dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &attr), &unit) &&
                            dwarf_tag(&unit) != DW_TAG_compile_unit && first_child_with(&unit, pc, ret))
                                return true;
                        continue;
                }
                if (has_pc(&child, pc)) {
                        *ret = child;
                        return true;
                }
        } while (dwarf_siblingof(&child, &child) == 0);
        return false;
}

/* The descent from the CU, innermost first, into chain; its length. */
static size_t descent(Dwarf_Die *cudie, uint64_t pc, Dwarf_Die *chain) {
        Dwarf_Die at = *cudie;
        size_t n = 0;

        while (n < CHAIN_MAX && (n == 0 || may_have_scopes(dwarf_tag(&at))) && first_child_with(&at, pc, &at))
                chain[n++] = at;
        for (size_t i = 0; i < n / 2; i++) {
                Dwarf_Die tmp = chain[i];

                chain[i] = chain[n - 1 - i];
                chain[n - 1 - i] = tmp;
        }
        return n;
}

/* Does the chain from node outwards equal want[0..n-1]? */
static bool chain_equal(const struct cu_scopes *c, uint32_t node, const Dwarf_Die *want, size_t n) {
        size_t i = 0;

        for (; node != SCOPE_NONE && i < n; node = cu_scopes_parent(c, node), i++)
                if (dwarf_dieoffset(cu_scopes_die(c, node)) != dwarf_dieoffset((Dwarf_Die *) &want[i]))
                        return false;
        return node == SCOPE_NONE && i == n;
}

/* Looks up addrs[order[i]] in a fresh tree of cudie, each against libdw;
 * returns the DIEs the tree read. */
static size_t check_order(const char *path, Dwarf_Die *cudie, const uint64_t *addrs, const size_t *order, size_t n,
                          struct totals *t) {
        _cleanup_(cu_scopes_freep) struct cu_scopes *c = NULL;

        CHECK_INT_EQ(cu_scopes_build(cudie, &c), 0);
        if (!c)
                return 0;
        for (size_t i = 0; i < n; i++) {
                uint64_t pc = addrs[order[i]];
                static Dwarf_Die chain[CHAIN_MAX];
                Dwarf_Die *scopes = NULL;
                uint32_t node = 0;
                int n_scopes = dwarf_getscopes(cudie, pc, &scopes);
                size_t n_chain = descent(cudie, pc, chain);
                /* libdw's innermost: none when it found only the CU */
                uint64_t want = n_scopes > 1 ? (uint64_t) dwarf_dieoffset(&scopes[0]) : 0;
                uint64_t got;

                CHECK_INT_EQ(cu_scopes_innermost(c, pc, &node), 0);
                got = node != SCOPE_NONE ? (uint64_t) dwarf_dieoffset(cu_scopes_die(c, node)) : 0;
                if ((got != want || !chain_equal(c, node, chain, n_chain)) && t->mismatches++ < 5)
                        fprintf(stderr, "%s: CU %#" PRIx64 " at %#" PRIx64 ": libdw innermost %#" PRIx64
                                ", this %#" PRIx64 "; descent %zu deep\n",
                                path, (uint64_t) dwarf_dieoffset(cudie), pc, want, got, n_chain);
                free(scopes);
                t->lookups++;
        }
        return cu_scopes_dies_read(c);
}

/* Every CU of path: at most per_cu addresses, spread over its rows. */
static void check_file(const char *path, size_t per_cu, struct totals *t) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        Dwarf_CU *cu = NULL;
        Dwarf_Die cudie;
        uint8_t unit_type;
        size_t cus = 0, before = t->mismatches, one = t->dies_one, all = t->dies_all;
        Dwarf *dwarf;
        Elf *e;

        e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
        dwarf = e ? dwarf_begin_elf(e, DWARF_C_READ, NULL) : NULL;
        if (!dwarf) {
                fprintf(stderr, "%s: no DWARF\n", path);
                CHECK(!"a file to compare has DWARF");
                return;
        }
        while (dwarf_get_units(dwarf, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
                _cleanup_free_ uint64_t *addrs = NULL;
                _cleanup_free_ size_t *order = NULL;
                Dwarf_Lines *lines;
                size_t n_lines, n = 0;

                if (unit_type != DW_UT_compile || dwarf_getsrclines(&cudie, &lines, &n_lines) != 0 || n_lines == 0)
                        continue;
                addrs = calloc(MIN(n_lines, per_cu), sizeof(*addrs));
                order = calloc(MIN(n_lines, per_cu), sizeof(*order));
                CHECK(addrs && order);
                if (!addrs || !order)
                        return;
                for (size_t i = 0; i < n_lines && n < per_cu; i += MAX(n_lines / per_cu, (size_t) 1)) {
                        Dwarf_Addr a;

                        if (dwarf_lineaddr(dwarf_onesrcline(lines, i), &a) == 0)
                                addrs[n++] = a;
                }
                if (n == 0)
                        continue;
                cus++;
                for (size_t i = 0; i < n; i++)
                        order[i] = i;
                /* the first lookup alone: what one sampled address costs */
                t->dies_one += check_order(path, &cudie, addrs, order, 1, t);
                t->dies_all += check_order(path, &cudie, addrs, order, n, t);
                /* scrambled: another growth of the tree, the same answers */
                for (size_t i = n - 1; i > 0; i--) {
                        size_t j = (i * 2654435761u + 7) % (i + 1), tmp = order[i];

                        order[i] = order[j];
                        order[j] = tmp;
                }
                check_order(path, &cudie, addrs, order, n, t);
        }
        printf("%-60s %5zu CUs; DIEs read: %zu for one address a CU, %zu for all\n", path, cus,
               t->dies_one - one, t->dies_all - all);
        CHECK(cus > 0);
        CHECK_INT_EQ(t->mismatches - before, 0);
        t->files++;
        t->cus += cus;
        dwarf_end(dwarf);
        elf_end(e);
}

static int find_libc_debug(struct dl_phdr_info *info, size_t size, void *userdata) {
        const ElfW(Phdr) *ph = info->dlpi_phdr;
        char **ret = userdata;

        if (!info->dlpi_name || !strstr(info->dlpi_name, "/libc.so"))
                return 0;
        for (int i = 0; i < info->dlpi_phnum; i++) {
                const uint8_t *p, *end;

                if (ph[i].p_type != PT_NOTE)
                        continue;
                p = (const uint8_t *) (info->dlpi_addr + ph[i].p_vaddr);
                end = p + ph[i].p_memsz;
                while (p + sizeof(ElfW(Nhdr)) <= end) {
                        const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *) p;
                        const uint8_t *desc = p + sizeof(*nh) + ((nh->n_namesz + 3) & ~3u);

                        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_descsz >= 2 && nh->n_descsz <= 64) {
                                char hex[129];

                                for (size_t k = 0; k < nh->n_descsz; k++)
                                        sprintf(hex + 2 * k, "%02x", desc[k]);
                                if (asprintf(ret, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2) < 0)
                                        *ret = NULL;
                                return 1;
                        }
                        p = desc + ((nh->n_descsz + 3) & ~3u);
                }
        }
        return 1;
}

int main(int argc, char *argv[]) {
        _cleanup_free_ char *libc_debug = NULL;
        struct totals t = {};

        CHECK(elf_version(EV_CURRENT) != EV_NONE);
        for (int i = 1; i < argc; i++)
                check_file(argv[i], 400, &t);
        /* grown, not read whole: one address a CU reads much less (in
         * libc's CUs most DIEs are the CU's own children: types) */
        CHECK(t.dies_one * 2 < t.dies_all);
        dl_iterate_phdr(find_libc_debug, &libc_debug);
        if (libc_debug && access(libc_debug, R_OK) == 0)
                check_file(libc_debug, 8, &t);
        else
                printf("libc: no debug file (install libc6-dbg)\n");
        printf("total: %zu files, %zu CUs, %zu lookups, %zu disagree; DIEs read %zu (one a CU), %zu (all)\n",
               t.files, t.cus, t.lookups, t.mismatches, t.dies_one, t.dies_all);
        CHECK_INT_EQ(t.mismatches, 0);
        TESTS_DONE();
}
