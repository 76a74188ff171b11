/* The compact tables' BPF lookup (bpf/table-pack.bpf.h) as a program the
 * unit test runs through BPF_PROG_TEST_RUN: for each pc of pack_pcs, the
 * lookup's answer into pack_out. The test fills the maps (mmapped) with a
 * packed table and the pcs, and compares each answer with the C reference,
 * table_pack_lookup. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "profd.h"
#include "table-pack.bpf.h"

/* One answer, as test-bpf-pack.c reads it. */
struct pack_answer {
        __u64 lo, hi;
        struct profd_unwind_row row;
        __u32 found;
        __u32 pad;
};

/* The table's slots (two to a value, as in unwind_rows), the pcs asked
 * and the answers: sized by the test before load, mmapped. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, __u64);
} pack_slots SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, __u64); /* a pc; 8 bytes, as the kernel stores a __u32 value anyway */
} pack_pcs SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct pack_answer);
} pack_out SEC(".maps");

/* The run's context (ctx_in): the table of n slots at element off of
 * pack_slots, the pcs [first, first + count) of pack_pcs. */
struct pack_run {
        __u32 off, n, first, count;
};

/* The lookup for pc idx into answer idx: 0, or 1 past the maps. A global
 * function, checked by the verifier once for any arguments, as the walk's
 * frame step is (bpf/unwind.bpf.h): inlined in the bpf_loop callback below,
 * the page's binary search took the kernel 6.18.44 (fc-v1252) verifier
 * past its 1 M instructions. */
int lookup_at(__u32 idx, __u32 off, __u32 n);
__noinline int lookup_at(__u32 idx, __u32 off, __u32 n) {
        __u64 *pc = bpf_map_lookup_elem(&pack_pcs, &idx);
        struct pack_answer *a = bpf_map_lookup_elem(&pack_out, &idx);
        struct profd_unwind_row row = {};
        __u64 lo = 0, hi = 0;

        if (!pc || !a)
                return 1;
        a->found = pack_lookup(&pack_slots, off, n, (__u32) *pc, &row, &lo, &hi);
        a->row = row;
        a->lo = lo;
        a->hi = hi;
        return 0;
}

static long lookup_one(__u32 i, void *userdata) {
        struct pack_run *run = userdata;

        return lookup_at(run->first + i, run->off, run->n) ? 1 : 0;
}

SEC("syscall")
int pack_lookup_batch(struct pack_run *ctx) {
        struct pack_run run = *ctx;

        bpf_loop(run.count, lookup_one, &run, 0);
        return 0;
}

char LICENSE[] SEC("license") = "GPL";
