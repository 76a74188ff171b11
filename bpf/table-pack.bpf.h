/* The compact unwind tables' lookup in BPF (issue 43): step for step
 * table_pack_lookup in daemon/unwind/table-pack.c, on a table of 4-byte
 * slots (struct profd_pack_head in profd.h), n slots from the start of
 * element off of an array map of 8-byte values, two slots to a value (the
 * even one first): the kernel rounds an array's values up to 8 bytes, so
 * a map of 4-byte values would take as much memory.
 * Bounded: the head's four slots, two index entries, at most
 * PROFD_PACK_PAGE_STEPS rows, the row found, its rule and the next row: 26
 * map reads at most. The walker's row_lookup (bpf/unwind.bpf.h) calls it
 * on unwind_rows; checked against the C reference by
 * tests/unit/test-bpf-pack.c through BPF_PROG_TEST_RUN. */
#pragma once

#include "profd.h"

#define PACK_HEAD_SLOTS 4
#define PACK_PAGE_BYTES ((__u64) 1 << PROFD_PACK_PAGE_SHIFT)

/* Slot i of the table at element off of map, when i < n; NULL otherwise. */
static __always_inline __u32 *pack_slot(void *map, __u32 off, __u32 n, __u64 i) {
        __u32 idx, *v;

        if (i >= n)
                return NULL;
        idx = off + (__u32) (i / 2);
        v = bpf_map_lookup_elem(map, &idx);
        return v ? v + (i & 1) : NULL;
}

/* The rules covering pc into *ret (ret->pc: the start of *ret_lo), and
 * [*ret_lo, *ret_hi) around pc where they hold for certain. Returns true;
 * false below the first row, or for slots that do not hold a well-formed
 * table, as table_pack_lookup. map: an array of 8-byte values. */
static __always_inline bool pack_lookup(void *map, __u32 off, __u32 n, __u32 pc, struct profd_unwind_row *ret,
                                        __u64 *ret_lo, __u64 *ret_hi) {
        __u32 first_page, pages, rows, rules, page = pc >> PROFD_PACK_PAGE_SHIFT, p, *v;
        __u64 rows_base, rules_base, lo, hi, first_of_page, page_end, page_start;
        struct profd_pack_row row, next;
        struct profd_pack_rule rule;

        if (n < PACK_HEAD_SLOTS)
                return false;
        /* the head: four slots, four reads (a map value is one slot) */
        v = pack_slot(map, off, n, 0);
        if (!v)
                return false;
        first_page = *v;
        v = pack_slot(map, off, n, 1);
        if (!v)
                return false;
        pages = *v;
        v = pack_slot(map, off, n, 2);
        if (!v)
                return false;
        rows = *v;
        v = pack_slot(map, off, n, 3);
        if (!v)
                return false;
        rules = *v;

        if (page < first_page)
                return false;
        rows_base = PACK_HEAD_SLOTS + (__u64) pages + 1;
        rules_base = rows_base + rows;
        if (pages == 0 || rows == 0 || rules_base + rules > n)
                return false;
        p = page - first_page;
        page_start = (__u64) page << PROFD_PACK_PAGE_SHIFT;
        page_end = rows; /* the page's end in rows: index[p + 1] */
        if (p >= pages) {
                lo = hi = rows;
                first_of_page = rows;
        } else {
                v = pack_slot(map, off, n, PACK_HEAD_SLOTS + (__u64) p);
                if (!v)
                        return false;
                lo = *v;
                v = pack_slot(map, off, n, PACK_HEAD_SLOTS + (__u64) p + 1);
                if (!v)
                        return false;
                hi = *v;
                if (lo > hi || hi > rows)
                        return false;
                first_of_page = lo;
                page_end = hi;
                for (int k = 0; k < PROFD_PACK_PAGE_STEPS; k++) {
                        __u64 mid;

                        if (lo >= hi)
                                break;
                        mid = lo + (hi - lo) / 2;
                        v = pack_slot(map, off, n, rows_base + mid);
                        if (!v)
                                return false;
                        __builtin_memcpy(&row, v, sizeof(row));
                        if (row.pc_lo <= (pc & (PACK_PAGE_BYTES - 1)))
                                lo = mid + 1;
                        else
                                hi = mid;
                }
                if (lo < hi)
                        return false;
        }
        if (lo == 0)
                return false;
        v = pack_slot(map, off, n, rows_base + lo - 1);
        if (!v)
                return false;
        __builtin_memcpy(&row, v, sizeof(row));
        if (row.rule >= rules)
                return false;
        v = pack_slot(map, off, n, rules_base + row.rule);
        if (!v)
                return false;
        __builtin_memcpy(&rule, v, sizeof(rule));
        ret->kind = rule.kind;
        ret->cfa_off = rule.cfa_off;
        ret->rbp_off = rule.rbp_off;
        *ret_lo = lo - 1 >= first_of_page && p < pages ? page_start + row.pc_lo : page_start;
        if (p < pages && lo < page_end) {
                v = pack_slot(map, off, n, rows_base + lo);
                if (!v)
                        return false;
                __builtin_memcpy(&next, v, sizeof(next));
                *ret_hi = page_start + next.pc_lo;
        } else
                *ret_hi = page_start + PACK_PAGE_BYTES;
        ret->pc = (__u32) *ret_lo;
        return true;
}
