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
 * can take with at most `rules` distinct rules (never more than bound or
 * PROFD_PACK_RULES_MAX): head, index, rows, rules. With rules =
 * PROFD_PACK_RULES_MAX a table needs no more; with fewer, table_pack_end
 * says -E2BIG when its rules do not fit. What it needs is known at
 * table_pack_end. */
size_t table_pack_plan(size_t bound, uint32_t first, uint32_t last, size_t rules);

/* The rules the daemon's first plan for a table sets aside room for. The
 * rows are bounded by the FDEs (1-3% above those kept in large files),
 * the rules only by the rows: a plan for as many rules as rows is twice
 * what a table keeps. Files have far fewer: at most 852 (libaom) of the 1,907
 * files with CFI under /usr/lib/x86_64-linux-gnu and /usr/bin here. A
 * table with more is packed again with a plan for PROFD_PACK_RULES_MAX. */
#define TABLE_PACK_PLAN_RULES 2048

/* Where a packed table goes: n slots at slot `at` of the table. The
 * packer writes the rows in order as they fill a piece, then at the end
 * the rules after them and last the head and index at slot 0 (the
 * daemon writes into the kernel's array through windows of it, never
 * holding a large table in its heap). A negative return ends the packing
 * and is returned. table_pack_buffer is a writer into a struct
 * table_pack_buffer. */
typedef int (*table_pack_write_t)(void *userdata, size_t at, const uint32_t *slots, size_t n);
struct table_pack_buffer {
        uint32_t *out;
        size_t capacity;
};
int table_pack_buffer(void *userdata, size_t at, const uint32_t *slots, size_t n);

/* The packer. It keeps in its heap the index (a slot per 64 KiB page of
 * the span), the rule dictionary (at most PROFD_PACK_RULES_MAX entries)
 * and a piece of rows. Rows must come sorted by pc: a row at the pc of
 * the one before replaces it (only the last of equal pcs is ever found),
 * and a row whose rules repeat the one before is dropped (that row covers
 * it). */
#define TABLE_PACK_PIECE 4096 /* rows written at once: 16 KiB */
struct table_pack {
        table_pack_write_t write;
        void *userdata;
        size_t capacity; /* slots the table may take */
        uint32_t first, last; /* the span the rows must lie in */
        uint32_t first_page, pages;
        uint32_t *index;  /* pages + 1 */
        uint32_t next;    /* the next index entry to fill */
        size_t rows;      /* rows kept, written or in the piece */
        uint32_t piece[TABLE_PACK_PIECE];
        size_t n_piece;
        bool have_last;   /* rows > 0: last_rule is the last kept row's */
        uint16_t last_rule;
        /* the last row taken, kept when a row at another pc comes */
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

/* Begins a table whose rows lie in [first, last] (unwind_reader_span), of
 * at most capacity slots, written through write. Returns 0, -EINVAL for
 * last < first, -E2BIG when the head and index alone do not fit,
 * -ENOMEM. */
int table_pack_begin(struct table_pack *p, uint32_t first, uint32_t last, size_t capacity, table_pack_write_t write,
                     void *userdata);
/* Takes the next rows (an unwind_sink_t with userdata = the packer).
 * Returns 0; -EINVAL for a row out of order or outside [first, last];
 * -E2BIG when the table outgrows capacity or has more distinct rules than
 * a row can name; -ENOMEM; the writer's error. Nothing is written past
 * capacity. */
int table_pack_add(void *userdata, const struct profd_unwind_row *rows, size_t n);
/* Writes the last rows, the rules, the head and the index. *ret_slots:
 * the slots the table takes. Returns 0, -E2BIG (no room for the rules),
 * the writer's error. */
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
