/* Compact unwind tables (issue 43): a file's rows (unwind-table.h) as
 * 4-byte slots, rows of (pc within a 64 KiB page, rule id), the file's
 * distinct rules once, and a per-page index in place of a search of the
 * whole table (layout: struct profd_pack_head in bpf/profd.h). Pure: the
 * packer, written to take rows in pieces as the reader gives them, and
 * the reference lookup the BPF walker mirrors. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../bpf/profd.h"
#include "unwind-table.h"

/* Slots the packed table of at most bound rows, whose first and last rows
 * are at pcs first and last (unwind_reader_bound, unwind_reader_span),
 * can take: head, index, rows, rules. A table needs no more; what it
 * needs is known at table_pack_end. */
size_t table_pack_plan(size_t bound, uint32_t first, uint32_t last);

/* The packer. It writes the head and index into out as it goes and the
 * rows as they come; it keeps the rule dictionary in its heap (at most
 * PROFD_PACK_RULES_MAX entries) and writes it after the rows at the end.
 * Rows must come sorted by pc: a row at the pc of the one before replaces
 * it (only the last of equal pcs is ever found), and a row whose rules
 * repeat the one before is dropped (that row covers it). */
struct table_pack {
        uint32_t *out;
        size_t capacity; /* slots of out */
        uint32_t first, last; /* the span the rows must lie in */
        uint32_t first_page, pages;
        size_t rows;     /* rows written */
        uint32_t next;   /* the next index entry to write */
        /* the last row taken, written when a row at another pc comes */
        struct {
                uint32_t pc;
                uint16_t rule;
        } pending;
        bool have_pending;
        /* the rule dictionary: open addressing on the rule's 4 bytes,
         * slot_ids[i] = its id + 1 (0: empty) */
        uint32_t *slot_ids;
        size_t mask;
        struct profd_pack_rule *rules; /* by id */
        size_t n_rules;
};

/* Begins a table whose rows lie in [first, last] (unwind_reader_span),
 * writing into out, capacity slots. Returns 0, -E2BIG when the head and
 * index alone do not fit, -ENOMEM. */
int table_pack_begin(struct table_pack *p, uint32_t first, uint32_t last, uint32_t *out, size_t capacity);
/* Takes the next rows (an unwind_sink_t with userdata = the packer).
 * Returns 0; -EINVAL for a row out of order or outside [first, last];
 * -E2BIG when the table outgrows capacity or has more distinct rules than
 * a row can name; -ENOMEM. Nothing is written past capacity. */
int table_pack_add(void *userdata, const struct profd_unwind_row *rows, size_t n);
/* Completes the index, writes the rules and the head. *ret_slots: the
 * slots the table takes. Returns 0 or -E2BIG (no room for the rules). */
int table_pack_end(struct table_pack *p, size_t *ret_slots);
void table_pack_done(struct table_pack *p);

/* A whole table at once: *ret (malloc'd), *ret_slots. Returns 0, -ENODATA
 * for a table without rows, -E2BIG, -ENOMEM. */
int table_pack_table(const struct unwind_table *t, uint32_t **ret, size_t *ret_slots);

/* The reference lookup, step for step what the BPF walker does: the rules
 * covering pc into *ret (pc = the start below) and the addresses [*ret_lo,
 * *ret_hi) around pc they cover for certain (the row's extent, cut at
 * pc's page where the row starts before it or the next starts after it).
 * Returns true; false below the first row or when the slots do not hold
 * a well-formed table (an index, row or rule outside n slots, a search
 * that did not end within PROFD_PACK_PAGE_STEPS). */
bool table_pack_lookup(const uint32_t *slots, size_t n, uint32_t pc, struct profd_unwind_row *ret,
                       uint64_t *ret_lo, uint64_t *ret_hi);
