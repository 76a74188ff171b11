/* The compact tables' BPF lookup (bpf/table-pack.bpf.h) against the C
 * reference (table_pack_lookup): the real verifier loads it, and
 * BPF_PROG_TEST_RUN asks it, on tables packed from synthetic rows around
 * page boundaries, from a fixture, and from libc, cc1plus and libLLVM-14
 * (a loud skip where absent), at every row's first byte and the byte
 * before, every page boundary, and random pcs; on malformed tables too.
 * Every answer must equal the reference's, field for field. Needs root
 * (77 without).
 *
 * usage: test-bpf-pack NOFP */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "macro.h"
#include "table-pack.h"
#include "test-bpf-pack.skel.h"
#include "tests.h"
#include "unwind-table.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(Elf *, elf_end);

/* as in test-bpf-pack.bpf.c */
struct pack_answer {
        uint64_t lo, hi;
        struct profd_unwind_row row;
        uint32_t found;
        uint32_t pad;
};
struct pack_run {
        uint32_t off, n, first, count;
};

#define SLOTS_MAX (4u << 20) /* values of two slots: 32 MiB; the largest table here (libclang-cpp) takes 1.0 Mi slots */
#define PCS_MAX (1u << 22)
#define TABLE_OFF 7 /* the table's first value: not the map's start, as in a shared map */

static struct test_bpf_pack_bpf *skel;
static uint32_t *slots_map; /* two slots to a value */
static uint64_t *pcs_map;
static struct pack_answer *out_map;

static void *map_mmap(struct bpf_map *m, size_t bytes) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m), 0);

        return p == MAP_FAILED ? NULL : p;
}

static int setup(void) {
        int r;

        skel = test_bpf_pack_bpf__open();
        if (!skel)
                return -errno;
        bpf_map__set_max_entries(skel->maps.pack_slots, SLOTS_MAX);
        bpf_map__set_max_entries(skel->maps.pack_pcs, PCS_MAX);
        bpf_map__set_max_entries(skel->maps.pack_out, PCS_MAX);
        r = test_bpf_pack_bpf__load(skel);
        if (r < 0)
                return r;
        slots_map = map_mmap(skel->maps.pack_slots, (size_t) SLOTS_MAX * sizeof(uint64_t));
        pcs_map = map_mmap(skel->maps.pack_pcs, (size_t) PCS_MAX * sizeof(uint64_t));
        out_map = map_mmap(skel->maps.pack_out, (size_t) PCS_MAX * sizeof(struct pack_answer));
        if (!slots_map || !pcs_map || !out_map)
                return -errno;
        return 0;
}

/* Asks BPF for pcs [0, count) on the table of n slots at value TABLE_OFF
 * and compares with the reference. Returns the mismatches. */
static size_t run_and_compare(const char *what, const uint32_t *slots, size_t n, size_t count) {
        size_t bad = 0;

        memset(out_map, 0x5a, count * sizeof(*out_map));
        for (size_t first = 0; first < count; first += 1u << 20) {
                struct pack_run run = {
                        .off = TABLE_OFF,
                        .n = (uint32_t) n,
                        .first = (uint32_t) first,
                        .count = (uint32_t) MIN(count - first, (size_t) 1 << 20),
                };
                LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &run, .ctx_size_in = sizeof(run));
                int r = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.pack_lookup_batch), &opts);

                CHECK_INT_EQ(r, 0);
                if (r < 0)
                        return count;
        }
        for (size_t i = 0; i < count; i++) {
                struct profd_unwind_row want = {};
                uint64_t lo = 0, hi = 0;
                bool found = table_pack_lookup(slots, n, (uint32_t) pcs_map[i], &want, &lo, &hi);
                const struct pack_answer *a = &out_map[i];

                if (a->found != found ||
                    (found && (a->row.pc != want.pc || a->row.kind != want.kind || a->row.cfa_off != want.cfa_off ||
                               a->row.rbp_off != want.rbp_off || a->lo != lo || a->hi != hi))) {
                        if (bad++ < 5)
                                fprintf(stderr,
                                        "%s: pc 0x%x: BPF found %u kind %u cfa %u rbp %d [0x%" PRIx64 ", 0x%" PRIx64
                                        "), reference found %d kind %u cfa %u rbp %d [0x%" PRIx64 ", 0x%" PRIx64 ")\n",
                                        what, (uint32_t) pcs_map[i], a->found, a->row.kind, a->row.cfa_off, a->row.rbp_off, a->lo,
                                        a->hi, found, want.kind, want.cfa_off, want.rbp_off, lo, hi);
                }
        }
        return bad;
}

/* pcs to ask about a table of rows: each row's first byte and the byte
 * before, each page's first byte and the byte before, the ends of the
 * address space, and as many random pcs within the span. */
static size_t pcs_for(const struct unwind_table *t) {
        size_t k = 0;
        uint32_t first = t->rows[0].pc, last = t->rows[t->n - 1].pc;

        for (size_t i = 0; i < t->n && k + 2 <= PCS_MAX / 2; i++) {
                pcs_map[k++] = t->rows[i].pc;
                pcs_map[k++] = t->rows[i].pc - 1;
        }
        for (uint64_t page = first & ~(uint64_t) 0xffff; page <= (uint64_t) last + 0x20000 && k + 2 <= PCS_MAX;
             page += 0x10000) {
                pcs_map[k++] = (uint32_t) page;
                pcs_map[k++] = (uint32_t) (page - 1);
        }
        pcs_map[k++] = 0;
        pcs_map[k++] = UINT32_MAX;
        srand(43);
        for (size_t i = 0; i < t->n && k < PCS_MAX; i++)
                pcs_map[k++] = first + (uint32_t) ((uint64_t) rand() * ((uint64_t) last - first + 64) / RAND_MAX);
        return k;
}

static void check_table(const char *what, const struct unwind_table *t) {
        _cleanup_free_ uint32_t *slots = NULL;
        size_t n = 0, count, bad;
        int r;

        r = table_pack_table(t, &slots, &n);
        CHECK_INT_EQ(r, 0);
        if (r < 0)
                return;
        if (2 * TABLE_OFF + n > 2 * (size_t) SLOTS_MAX) {
                fprintf(stderr, "%s: %zu slots, more than the test's map holds\n", what, n);
                CHECK(!"table too large for the test map");
                return;
        }
        memset(slots_map, 0xff, 2 * TABLE_OFF * sizeof(uint32_t));
        memcpy(slots_map + 2 * TABLE_OFF, slots, n * sizeof(*slots));
        count = pcs_for(t);
        bad = run_and_compare(what, slots, n, count);
        fprintf(stderr, "%s: %zu slots, %zu pcs asked, %zu answers differ\n", what, n, count, bad);
        CHECK_INT_EQ(bad, 0);

        /* the same table cut short, and with an index pointing past its
         * rows: BPF refuses where the reference does */
        count = pcs_for(t);
        CHECK_INT_EQ(run_and_compare(what, slots, n - 1, count), 0);
        if (n > 6) {
                slots_map[2 * TABLE_OFF + 5] = UINT32_MAX;
                slots[5] = UINT32_MAX;
                CHECK_INT_EQ(run_and_compare(what, slots, n, count), 0);
        }
}

static struct profd_unwind_row row(uint32_t pc, unsigned kind, uint16_t cfa, int8_t rbp) {
        return (struct profd_unwind_row) { .pc = pc, .kind = (uint8_t) kind, .cfa_off = cfa, .rbp_off = rbp };
}

static void test_synthetic(void) {
        struct profd_unwind_row rows[] = {
                row(0x10010, PROFD_UNWIND_CFA_SP, 8, 0),      row(0x10020, PROFD_UNWIND_CFA_SP, 16, -2),
                row(0x1ffff, PROFD_UNWIND_CFA_FP, 16, -2),    row(0x20000, PROFD_UNWIND_CFA_SP, 8, 0),
                row(0x20001, PROFD_UNWIND_PLT, 11, 0),        row(0x40000, PROFD_UNWIND_GAP, 0, 0),
                row(0x4fff0, PROFD_UNWIND_END, 0, 0),         row(0x50000, PROFD_UNWIND_SIGNAL, 0, 0),
                row(0x5ffff, PROFD_UNWIND_UNSUPPORTED, 0, 0), row(0x7fff0, PROFD_UNWIND_CFA_SP, 65535, 127),
        };
        struct unwind_table t = { .rows = rows, .n = ELEMENTSOF(rows) };
        size_t n_full = 0x10000 + 2, k = 0;
        _cleanup_free_ struct profd_unwind_row *full = calloc(n_full, sizeof(*full));

        check_table("page boundaries", &t);
        /* a page with a row at every byte: the search's whole bound */
        CHECK(full);
        if (!full)
                return;
        full[k++] = row(0xfff0, PROFD_UNWIND_CFA_SP, 8, 0);
        for (uint32_t pc = 0x10000; pc < 0x20000; pc++)
                full[k++] = row(pc, pc & 1 ? PROFD_UNWIND_CFA_FP : PROFD_UNWIND_CFA_SP, (uint16_t) (pc % 251), 0);
        full[k++] = row(0x20005, PROFD_UNWIND_END, 0, 0);
        t = (struct unwind_table) { .rows = full, .n = k };
        check_table("full page", &t);
}

static void test_file(const char *path, bool required) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_(elf_endp) Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
        struct unwind_table t = {};
        int r = e ? unwind_table_build(e, &t) : -ENOENT;

        if (r < 0) {
                if (required)
                        CHECK_INT_EQ(r, 0);
                else
                        fprintf(stderr, "SKIP %s: %s (not compared)\n", path, strerror(-r));
                return;
        }
        check_table(path, &t);
        unwind_table_done(&t);
}

int main(int argc, char **argv) {
        int r;

        if (argc != 2) {
                fprintf(stderr, "usage: %s NOFP\n", argv[0]);
                return 2;
        }
        if (elf_version(EV_CURRENT) == EV_NONE)
                return 2;
        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: loading BPF needs root\n");
                return 77;
        }
        r = setup();
        if (r < 0) {
                fprintf(stderr, "loading the test program failed: %s\n", strerror(-r));
                return 1;
        }
        {
                /* what the lookup costs the verifier: the walker will
                 * carry it (the batch loop around it is a few more) */
                struct bpf_prog_info info = {};
                __u32 len = sizeof(info);

                if (bpf_obj_get_info_by_fd(bpf_program__fd(skel->progs.pack_lookup_batch), &info, &len) == 0)
                        fprintf(stderr, "the lookup program: %u instructions, %u verified\n", info.xlated_prog_len / 8,
                                info.verified_insns);
        }
        test_synthetic();
        test_file(argv[1], true);
        test_file("/usr/lib/x86_64-linux-gnu/libc.so.6", false);
        test_file("/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", false);
        test_file("/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1", false);
        test_bpf_pack_bpf__destroy(skel);
        TESTS_DONE();
}
