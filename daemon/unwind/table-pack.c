/* Compact unwind tables (table-pack.h): rows packed as they come, their
 * rules numbered through a small hash table, and the lookup the BPF walker
 * mirrors. */
#include "table-pack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

#define PACK_HEAD_SLOTS (sizeof(struct profd_pack_head) / sizeof(uint32_t))
#define PAGE_BYTES ((uint64_t) 1 << PROFD_PACK_PAGE_SHIFT)

_Static_assert(sizeof(struct profd_pack_rule) == sizeof(uint32_t), "a rule is a slot");
_Static_assert(sizeof(struct profd_pack_row) == sizeof(uint32_t), "a row is a slot");

static uint32_t pages_of(uint32_t first, uint32_t last) {
        return (last >> PROFD_PACK_PAGE_SHIFT) - (first >> PROFD_PACK_PAGE_SHIFT) + 1;
}

size_t table_pack_plan(size_t bound, uint32_t first, uint32_t last, size_t rules) {
        if (last < first)
                last = first;
        /* no more rules than rows, nor than a row can name */
        rules = MIN(rules, MIN(bound, (size_t) PROFD_PACK_RULES_MAX));
        return PACK_HEAD_SLOTS + (size_t) pages_of(first, last) + 1 + bound + rules;
}

static size_t rows_at(uint32_t pages) {
        return PACK_HEAD_SLOTS + (size_t) pages + 1;
}

int table_pack_buffer(void *userdata, size_t at, const uint32_t *slots, size_t n) {
        struct table_pack_buffer *b = userdata;

        if (at > b->capacity || n > b->capacity - at)
                return -E2BIG;
        memcpy(b->out + at, slots, n * sizeof(*slots));
        return 0;
}

int table_pack_begin(struct table_pack *p, uint32_t first, uint32_t last, size_t capacity, table_pack_write_t write,
                     void *userdata) {
        *p = (struct table_pack) {};
        if (last < first)
                return -EINVAL;
        if (rows_at(pages_of(first, last)) > capacity)
                return -E2BIG;
        p->mask = 255;
        p->slot_ids = calloc(p->mask + 1, sizeof(*p->slot_ids));
        p->index = calloc((size_t) pages_of(first, last) + 1, sizeof(*p->index));
        if (!p->slot_ids || !p->index) {
                table_pack_done(p);
                return -ENOMEM;
        }
        p->write = write;
        p->userdata = userdata;
        p->capacity = capacity;
        p->first = first;
        p->last = last;
        p->first_page = first >> PROFD_PACK_PAGE_SHIFT;
        p->pages = pages_of(first, last);
        return 0;
}

static uint32_t rule_key(const struct profd_unwind_row *r) {
        struct profd_pack_rule rule = { .cfa_off = r->cfa_off, .kind = r->kind, .rbp_off = r->rbp_off };
        uint32_t k;

        memcpy(&k, &rule, sizeof(k));
        return k;
}

static size_t key_hash(uint32_t k) {
        /* Knuth's multiplicative hash: the rules differ in few bits */
        return (size_t) ((k * 2654435761u) ^ (k >> 16));
}

static int dict_grow(struct table_pack *p) {
        size_t mask = p->mask * 2 + 1;
        uint32_t *ids = calloc(mask + 1, sizeof(*ids));

        if (!ids)
                return -ENOMEM;
        for (size_t id = 0; id < p->n_rules; id++) {
                uint32_t k;
                size_t i;

                memcpy(&k, &p->rules[id], sizeof(k));
                for (i = key_hash(k) & mask; ids[i]; i = (i + 1) & mask)
                        ;
                ids[i] = (uint32_t) id + 1;
        }
        free(p->slot_ids);
        p->slot_ids = ids;
        p->mask = mask;
        return 0;
}

/* The id of r's rules, numbered on first sight. */
static int dict_id(struct table_pack *p, const struct profd_unwind_row *r, uint16_t *ret) {
        uint32_t k = rule_key(r);
        size_t i;
        int e;

        for (i = key_hash(k) & p->mask; p->slot_ids[i]; i = (i + 1) & p->mask) {
                uint32_t have;

                memcpy(&have, &p->rules[p->slot_ids[i] - 1], sizeof(have));
                if (have == k) {
                        *ret = (uint16_t) (p->slot_ids[i] - 1);
                        return 0;
                }
        }
        if (p->n_rules == PROFD_PACK_RULES_MAX)
                return -E2BIG;
        if ((p->n_rules + 1) * 2 > p->mask + 1) {
                e = dict_grow(p);
                if (e < 0)
                        return e;
                for (i = key_hash(k) & p->mask; p->slot_ids[i]; i = (i + 1) & p->mask)
                        ;
        }
        /* the rules array grows in doublings alongside */
        if ((p->n_rules & (p->n_rules - 1)) == 0) {
                struct profd_pack_rule *rules = reallocarray(p->rules, MAX(p->n_rules * 2, (size_t) 16),
                                                             sizeof(*rules));

                if (!rules)
                        return -ENOMEM;
                p->rules = rules;
        }
        memcpy(&p->rules[p->n_rules], &k, sizeof(k));
        p->slot_ids[i] = (uint32_t) ++p->n_rules;
        *ret = (uint16_t) (p->n_rules - 1);
        return 0;
}

/* Writes the piece of rows after those written before it. */
static int piece_write(struct table_pack *p) {
        int e;

        if (p->n_piece == 0)
                return 0;
        e = p->write(p->userdata, rows_at(p->pages) + p->rows - p->n_piece, p->piece, p->n_piece);
        p->n_piece = 0;
        return e;
}

/* Keeps the pending row unless the row before has its rules (which then
 * covers it too). */
static int pending_flush(struct table_pack *p) {
        struct profd_pack_row row;
        uint64_t pc = p->pending.pc;
        int e;

        if (!p->have_pending)
                return 0;
        p->have_pending = false;
        if (p->have_last && p->last_rule == p->pending.rule)
                return 0;
        /* index[q] for the pages that begin at or below this pc: the rows
         * below them, all kept */
        while (p->next <= p->pages && ((uint64_t) p->first_page + p->next) * PAGE_BYTES <= pc)
                p->index[p->next++] = (uint32_t) p->rows;
        if (rows_at(p->pages) + p->rows + 1 > p->capacity)
                return -E2BIG;
        if (p->n_piece == TABLE_PACK_PIECE) {
                e = piece_write(p);
                if (e < 0)
                        return e;
        }
        row = (struct profd_pack_row) { .pc_lo = (uint16_t) pc, .rule = p->pending.rule };
        memcpy(&p->piece[p->n_piece++], &row, sizeof(row));
        p->rows++;
        p->have_last = true;
        p->last_rule = p->pending.rule;
        return 0;
}

int table_pack_add(void *userdata, const struct profd_unwind_row *rows, size_t n) {
        struct table_pack *p = userdata;

        for (size_t i = 0; i < n; i++) {
                const struct profd_unwind_row *r = &rows[i];
                uint16_t id;
                int e;

                if (r->pc < p->first || r->pc > p->last)
                        return -EINVAL;
                if (p->have_pending && r->pc < p->pending.pc)
                        return -EINVAL;
                e = dict_id(p, r, &id);
                if (e < 0)
                        return e;
                /* a row at the pending row's pc replaces it: only the last
                 * of equal pcs is ever found */
                if (p->have_pending && r->pc != p->pending.pc) {
                        e = pending_flush(p);
                        if (e < 0)
                                return e;
                }
                p->pending.pc = r->pc;
                p->pending.rule = id;
                p->have_pending = true;
        }
        return 0;
}

int table_pack_end(struct table_pack *p, size_t *ret_slots) {
        struct profd_pack_head head;
        size_t at;
        int e;

        e = pending_flush(p);
        if (e >= 0)
                e = piece_write(p);
        if (e < 0)
                return e;
        while (p->next <= p->pages)
                p->index[p->next++] = (uint32_t) p->rows;
        at = rows_at(p->pages) + p->rows;
        if (at + p->n_rules > p->capacity)
                return -E2BIG;
        _Static_assert(sizeof(struct profd_pack_rule) == sizeof(uint32_t), "rules are slots");
        e = p->write(p->userdata, at, (const uint32_t *) p->rules, p->n_rules);
        if (e < 0)
                return e;
        /* the head and index last: a table is whole once it has them */
        head = (struct profd_pack_head) {
                .first_page = p->first_page,
                .pages = p->pages,
                .rows = (uint32_t) p->rows,
                .rules = (uint32_t) p->n_rules,
        };
        e = p->write(p->userdata, 0, (const uint32_t *) &head, PACK_HEAD_SLOTS);
        if (e >= 0)
                e = p->write(p->userdata, PACK_HEAD_SLOTS, p->index, (size_t) p->pages + 1);
        if (e < 0)
                return e;
        *ret_slots = at + p->n_rules;
        return 0;
}

void table_pack_done(struct table_pack *p) {
        if (!p)
                return;
        free(p->slot_ids);
        free(p->rules);
        free(p->index);
        /* only what must be reset: the piece is large */
        p->slot_ids = NULL;
        p->rules = NULL;
        p->index = NULL;
        p->n_rules = p->rows = p->n_piece = 0;
}

int table_pack_table(const struct unwind_table *t, uint32_t **ret, size_t *ret_slots) {
        _cleanup_free_ uint32_t *out = NULL;
        _cleanup_free_ struct table_pack *p = NULL;
        struct table_pack_buffer buf;
        size_t cap, slots;
        int e;

        *ret = NULL;
        *ret_slots = 0;
        if (t->n == 0)
                return -ENODATA;
        cap = table_pack_plan(t->n, t->rows[0].pc, t->rows[t->n - 1].pc, PROFD_PACK_RULES_MAX);
        out = calloc(cap, sizeof(*out));
        p = malloc(sizeof(*p));
        if (!out || !p)
                return -ENOMEM;
        buf = (struct table_pack_buffer) { .out = out, .capacity = cap };
        e = table_pack_begin(p, t->rows[0].pc, t->rows[t->n - 1].pc, cap, table_pack_buffer, &buf);
        if (e >= 0)
                e = table_pack_add(p, t->rows, t->n);
        if (e >= 0)
                e = table_pack_end(p, &slots);
        table_pack_done(p);
        if (e < 0)
                return e;
        /* give back what the plan's room for rules left unused */
        *ret = reallocarray(out, slots, sizeof(*out)) ?: out;
        out = NULL;
        *ret_slots = slots;
        return 0;
}

bool table_pack_lookup(const uint32_t *slots, size_t n, uint32_t pc, struct profd_unwind_row *ret,
                       uint64_t *ret_lo, uint64_t *ret_hi) {
        const struct profd_pack_head *head = (const struct profd_pack_head *) slots;
        const struct profd_pack_row *row, *next;
        struct profd_pack_rule rule;
        size_t base, rows_base, rules_base, lo, hi, first_of_page;
        uint32_t page = pc >> PROFD_PACK_PAGE_SHIFT, p;
        uint64_t page_start;

        if (n < PACK_HEAD_SLOTS)
                return false;
        if (page < head->first_page)
                return false;
        rows_base = rows_at(head->pages);
        rules_base = rows_base + head->rows;
        if (head->pages == 0 || head->rows == 0 || rules_base + head->rules > n || rules_base < rows_base)
                return false;
        p = page - head->first_page;
        page_start = (uint64_t) page << PROFD_PACK_PAGE_SHIFT;
        if (p >= head->pages) {
                /* above the last page: the last row, cut at pc's page */
                lo = hi = head->rows;
                first_of_page = head->rows;
        } else {
                base = PACK_HEAD_SLOTS + p;
                lo = slots[base];
                hi = slots[base + 1];
                if (lo > hi || hi > head->rows)
                        return false;
                first_of_page = lo;
                /* the first row of the page above pc's offset */
                for (int k = 0; k < PROFD_PACK_PAGE_STEPS; k++) {
                        size_t mid;

                        if (lo >= hi)
                                break;
                        mid = lo + (hi - lo) / 2;
                        row = (const struct profd_pack_row *) &slots[rows_base + mid];
                        if (row->pc_lo <= (pc & (PAGE_BYTES - 1)))
                                lo = mid + 1;
                        else
                                hi = mid;
                }
                if (lo < hi)
                        return false;
        }
        if (lo == 0)
                return false; /* below the first row */
        row = (const struct profd_pack_row *) &slots[rows_base + lo - 1];
        if (row->rule >= head->rules)
                return false;
        memcpy(&rule, &slots[rules_base + row->rule], sizeof(rule));
        *ret = (struct profd_unwind_row) {
                .kind = rule.kind,
                .cfa_off = rule.cfa_off,
                .rbp_off = rule.rbp_off,
        };
        /* the row starts in pc's page, else before it: cut at its start */
        *ret_lo = lo - 1 >= first_of_page && p < head->pages ? page_start + row->pc_lo : page_start;
        /* the next row is in pc's page, else later: cut at its end */
        if (p < head->pages && lo < slots[PACK_HEAD_SLOTS + p + 1]) {
                next = (const struct profd_pack_row *) &slots[rows_base + lo];
                *ret_hi = page_start + next->pc_lo;
        } else
                *ret_hi = page_start + PAGE_BYTES;
        ret->pc = (uint32_t) *ret_lo;
        return true;
}
