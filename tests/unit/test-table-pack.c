/* Tests of the compact unwind tables (table-pack.h): the packed table's
 * reference lookup must give, at every pc where a row starts or ends and
 * at every page boundary, the rules unwind_table_lookup gives on the rows
 * it was packed from, and an extent over which those rules hold; on the
 * fixture with every CFI form (REALIGN), on synthetic rows at and around
 * page boundaries, on full and over-full pages, and on the big files of
 * this machine (libc, cc1plus, libLLVM-14: a loud skip where absent).
 * Tables that do not fit their budget or name too many rules are refused,
 * and nothing is written past the budget.
 *
 * usage: test-table-pack NOFP REALIGN */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bsearch.h"
#include "macro.h"
#include "table-pack.h"
#include "tests.h"
#include "unwind-table.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(Elf *, elf_end);

#define PAGE ((uint32_t) 1 << PROFD_PACK_PAGE_SHIFT)

static bool rule_eq(const struct profd_unwind_row *a, const struct profd_unwind_row *b) {
        return a->kind == b->kind && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off;
}

static int mismatches_shown;

/* The packed lookup at pc against the rows: the same rules (or none on
 * both sides), and over [lo, hi) no row of the original starts with other
 * rules. Returns whether it agreed. */
static bool check_pc(const char *what, const struct unwind_table *t, const uint32_t *slots, size_t n, uint64_t pc) {
        const struct profd_unwind_row *want;
        struct profd_unwind_row got;
        uint64_t lo, hi;
        bool found;

        if (pc > UINT32_MAX)
                return true;
        want = unwind_table_lookup(t, pc);
        found = table_pack_lookup(slots, n, (uint32_t) pc, &got, &lo, &hi);
        if (!want || !found) {
                if (!want == !found)
                        return true;
                if (mismatches_shown++ < 10)
                        fprintf(stderr, "%s: pc 0x%" PRIx64 ": %s by the rows, %s packed\n", what, pc,
                                want ? "a row" : "none", found ? "a row" : "none");
                return false;
        }
        if (!rule_eq(want, &got) || got.pc != lo || !(lo <= pc && pc < hi)) {
                if (mismatches_shown++ < 10)
                        fprintf(stderr,
                                "%s: pc 0x%" PRIx64 ": kind %u cfa %u rbp %d by the rows, kind %u cfa %u rbp %d "
                                "[0x%" PRIx64 ", 0x%" PRIx64 ") packed\n",
                                what, pc, want->kind, want->cfa_off, want->rbp_off, got.kind, got.cfa_off,
                                got.rbp_off, lo, hi);
                return false;
        }
        /* every row of the original that starts inside the extent has
         * the same rules, and so has the one covering its start */
        for (size_t i = UPPER_BOUND_BY(t->rows, t->n, pc, lo); i < t->n && t->rows[i].pc < hi; i++)
                if (!rule_eq(&t->rows[i], &got)) {
                        if (mismatches_shown++ < 10)
                                fprintf(stderr, "%s: pc 0x%" PRIx64 ": extent [0x%" PRIx64 ", 0x%" PRIx64
                                        ") spans a row of other rules at 0x%x\n", what, pc, lo, hi, t->rows[i].pc);
                        return false;
                }
        want = unwind_table_lookup(t, lo);
        if (!want || !rule_eq(want, &got)) {
                if (mismatches_shown++ < 10)
                        fprintf(stderr, "%s: pc 0x%" PRIx64 ": extent starts at 0x%" PRIx64 " outside its row\n",
                                what, pc, lo);
                return false;
        }
        return true;
}

/* Every row's first byte and the byte before, every page's first byte
 * and the byte before, below the first row and far above the last.
 * Returns the pcs compared; mismatches are counted as failures. */
static size_t check_table(const char *what, const struct unwind_table *t, const uint32_t *slots, size_t n) {
        size_t checked = 0, bad = 0;

        for (size_t i = 0; i < t->n; i++) {
                bad += !check_pc(what, t, slots, n, t->rows[i].pc);
                bad += !check_pc(what, t, slots, n, (uint64_t) t->rows[i].pc - 1);
                checked += 2;
        }
        if (t->n > 0) {
                for (uint64_t page = t->rows[0].pc & ~(uint64_t) (PAGE - 1);
                     page <= (uint64_t) t->rows[t->n - 1].pc + 2 * PAGE; page += PAGE) {
                        bad += !check_pc(what, t, slots, n, page);
                        bad += !check_pc(what, t, slots, n, page - 1);
                        checked += 2;
                }
                bad += !check_pc(what, t, slots, n, 0);
                bad += !check_pc(what, t, slots, n, UINT32_MAX);
                checked += 2;
        }
        if (bad)
                fprintf(stderr, "%s: %zu of %zu pcs differ\n", what, bad, checked);
        CHECK_INT_EQ(bad, 0);
        return checked;
}

/* Packs t whole and in pieces of 1, 7 and UNWIND_PIECE_ROWS rows: the
 * same slots each time. Returns the whole table's slots (*ret_n). */
static uint32_t *pack_checked(const char *what, const struct unwind_table *t, size_t *ret_n) {
        _cleanup_free_ uint32_t *whole = NULL;
        size_t n = 0;
        int r;

        r = table_pack_table(t, &whole, &n);
        CHECK_INT_EQ(r, 0);
        if (r < 0) {
                fprintf(stderr, "%s: packing failed: %s\n", what, strerror(-r));
                return NULL;
        }
        for (size_t piece = 1; piece <= UNWIND_PIECE_ROWS; piece = piece == 1 ? 7 : UNWIND_PIECE_ROWS) {
                size_t cap = table_pack_plan(t->n, t->rows[0].pc, t->rows[t->n - 1].pc, PROFD_PACK_RULES_MAX), slots = 0;
                _cleanup_free_ uint32_t *out = calloc(cap, sizeof(*out));
                struct table_pack_buffer buf = { .out = out, .capacity = cap };
                struct table_pack p;

                CHECK(out);
                if (!out)
                        break;
                r = table_pack_begin(&p, t->rows[0].pc, t->rows[t->n - 1].pc, cap, table_pack_buffer, &buf);
                for (size_t i = 0; r >= 0 && i < t->n; i += piece)
                        r = table_pack_add(&p, t->rows + i, MIN(piece, t->n - i));
                if (r >= 0)
                        r = table_pack_end(&p, &slots);
                table_pack_done(&p);
                CHECK_INT_EQ(r, 0);
                CHECK_INT_EQ(slots, n);
                CHECK(slots == n && memcmp(out, whole, n * sizeof(*out)) == 0);
                if (piece == UNWIND_PIECE_ROWS)
                        break;
        }
        *ret_n = n;
        return TAKE_PTR(whole);
}

static const struct profd_pack_head *head_of(const uint32_t *slots) {
        return (const struct profd_pack_head *) slots;
}

/* --- real files -------------------------------------------------------- */

static int file_table(const char *path, struct unwind_table *t) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_(elf_endp) Elf *e = NULL;

        if (fd < 0)
                return -errno;
        e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!e)
                return -EINVAL;
        return unwind_table_build(e, t);
}

/* A file's table packed and compared at every boundary; required files
 * (the fixtures) fail when missing, the machine's big files skip loudly. */
static void test_file(const char *path, bool required) {
        _cleanup_free_ uint32_t *slots = NULL;
        struct unwind_table t = {};
        size_t n = 0, checked;
        int r;

        r = file_table(path, &t);
        if (r < 0) {
                if (required) {
                        fprintf(stderr, "%s: %s\n", path, strerror(-r));
                        CHECK_INT_EQ(r, 0);
                } else
                        fprintf(stderr, "SKIP %s: %s (its table is not compared)\n", path, strerror(-r));
                return;
        }
        slots = pack_checked(path, &t, &n);
        if (slots) {
                checked = check_table(path, &t, slots, n);
                fprintf(stderr, "%s: %zu rows (%zu bytes as 8-byte rows) packed into %zu slots (%zu bytes: "
                        "%u rows, %u pages, %u rules); %zu pcs compared\n",
                        path, t.n, t.n * 8, n, n * 4,
                        head_of(slots)->rows, head_of(slots)->pages, head_of(slots)->rules, checked);
                /* the builder merged equal neighbours already: none more */
                CHECK_INT_EQ(head_of(slots)->rows, t.n);
        }
        unwind_table_done(&t);
}

/* The fixture with every CFI form: every kind is in its table and comes
 * back through the packed lookup. */
static void test_every_kind(const char *path) {
        _cleanup_free_ uint32_t *slots = NULL;
        struct unwind_table t = {};
        unsigned seen = 0;
        size_t n;

        CHECK_INT_EQ(file_table(path, &t), 0);
        slots = pack_checked(path, &t, &n);
        for (size_t i = 0; slots && i < t.n; i++) {
                struct profd_unwind_row got;
                uint64_t lo, hi;

                if (table_pack_lookup(slots, n, t.rows[i].pc, &got, &lo, &hi))
                        seen |= 1u << got.kind;
        }
        /* GAP .. UNSUPPORTED: every kind but those the fixture cannot
         * have (none: forms.S writes each) */
        CHECK_INT_EQ(seen, (1u << (PROFD_UNWIND_UNSUPPORTED + 1)) - 1);
        if (slots)
                check_table(path, &t, slots, n);
        unwind_table_done(&t);
}

/* --- synthetic rows ---------------------------------------------------- */

static struct profd_unwind_row row(uint32_t pc, unsigned kind, uint16_t cfa, int8_t rbp) {
        return (struct profd_unwind_row) { .pc = pc, .kind = (uint8_t) kind, .cfa_off = cfa, .rbp_off = rbp };
}

static void check_rows(const char *what, struct profd_unwind_row *rows, size_t n_rows) {
        struct unwind_table t = { .rows = rows, .n = n_rows };
        _cleanup_free_ uint32_t *slots = NULL;
        size_t n;

        slots = pack_checked(what, &t, &n);
        if (slots)
                check_table(what, &t, slots, n);
}

/* Rows on a page's first byte and on its last, a page without rows
 * between two with rows, the last row alone in its page, rows of every
 * kind with negative and positive rbp offsets. */
static void test_page_boundaries(void) {
        struct profd_unwind_row rows[] = {
                row(0x10010, PROFD_UNWIND_CFA_SP, 8, 0),
                row(0x10020, PROFD_UNWIND_CFA_SP, 16, -2),
                row(0x1ffff, PROFD_UNWIND_CFA_FP, 16, -2), /* the byte before a page */
                row(0x20000, PROFD_UNWIND_CFA_SP, 8, 0),   /* exactly on a page */
                row(0x20001, PROFD_UNWIND_PLT, 11, 0),
                /* page 0x3 has no row */
                row(0x40000, PROFD_UNWIND_GAP, 0, 0),
                row(0x4fff0, PROFD_UNWIND_END, 0, 0),
                row(0x50000, PROFD_UNWIND_SIGNAL, 0, 0),
                row(0x5ffff, PROFD_UNWIND_UNSUPPORTED, 0, 0),
                row(0x7fff0, PROFD_UNWIND_CFA_SP, 65535, 127), /* after an empty page, alone */
        };
        _cleanup_free_ uint32_t *slots = NULL;
        struct unwind_table t = { .rows = rows, .n = ELEMENTSOF(rows) };
        struct profd_unwind_row got;
        uint64_t lo, hi;
        size_t n;

        check_rows("page boundaries", rows, ELEMENTSOF(rows));
        slots = pack_checked("page boundaries", &t, &n);
        if (!slots)
                return;
        CHECK_INT_EQ(head_of(slots)->first_page, 1);
        CHECK_INT_EQ(head_of(slots)->pages, 7);
        CHECK_INT_EQ(head_of(slots)->rules, ELEMENTSOF(rows) - 1); /* CFA_SP 8 twice */
        /* in the empty page: the row before it, cut to the page */
        CHECK(table_pack_lookup(slots, n, 0x38000, &got, &lo, &hi));
        CHECK_INT_EQ(got.kind, PROFD_UNWIND_PLT);
        CHECK_INT_EQ(lo, 0x30000);
        CHECK_INT_EQ(hi, 0x40000);
        /* on the boundary: the row of the page, up to the next */
        CHECK(table_pack_lookup(slots, n, 0x20000, &got, &lo, &hi));
        CHECK_INT_EQ(got.kind, PROFD_UNWIND_CFA_SP);
        CHECK_INT_EQ(lo, 0x20000);
        CHECK_INT_EQ(hi, 0x20001);
        /* the byte before it: a one-byte row */
        CHECK(table_pack_lookup(slots, n, 0x1ffff, &got, &lo, &hi));
        CHECK_INT_EQ(got.kind, PROFD_UNWIND_CFA_FP);
        CHECK_INT_EQ(got.rbp_off, -2);
        CHECK_INT_EQ(lo, 0x1ffff);
        CHECK_INT_EQ(hi, 0x20000);
        /* below the first row, in its page */
        CHECK(!table_pack_lookup(slots, n, 0x1000f, &got, &lo, &hi));
        /* far above: the last row */
        CHECK(table_pack_lookup(slots, n, 0xfffffff0, &got, &lo, &hi));
        CHECK_INT_EQ(got.cfa_off, 65535);
        CHECK_INT_EQ(got.rbp_off, 127);
}

/* A page with a row at each of its 2^16 bytes, the most a page can hold,
 * then the same page given twice as many rows (each pc twice: the later
 * replaces the earlier) and rows that repeat the rules before them: the
 * packed page stays within the search's bound and every byte is found. */
static void test_full_page(void) {
        size_t n_rows = 2 * (size_t) PAGE + 2, k = 0;
        _cleanup_free_ struct profd_unwind_row *rows = calloc(n_rows, sizeof(*rows));
        _cleanup_free_ struct profd_unwind_row *twice = calloc(2 * n_rows, sizeof(*twice));
        _cleanup_free_ uint32_t *slots = NULL;
        struct unwind_table t;
        size_t n, bad = 0;

        CHECK(rows && twice);
        if (!rows || !twice)
                return;
        rows[k++] = row(0x0fff0, PROFD_UNWIND_CFA_SP, 8, 0);
        for (uint32_t pc = PAGE; pc < 2 * PAGE; pc++)
                rows[k++] = row(pc, pc & 1 ? PROFD_UNWIND_CFA_FP : PROFD_UNWIND_CFA_SP, (uint16_t) (pc % 251), 0);
        rows[k++] = row(2 * PAGE + 5, PROFD_UNWIND_END, 0, 0);
        t = (struct unwind_table) { .rows = rows, .n = k };
        slots = pack_checked("full page", &t, &n);
        if (slots) {
                CHECK_INT_EQ(head_of(slots)->rows, k);
                for (uint32_t pc = PAGE - 1; pc <= 2 * PAGE; pc++)
                        bad += !check_pc("full page", &t, slots, n, pc);
                CHECK_INT_EQ(bad, 0);
        }

        /* each pc twice, the first with rules the second overrides; and a
         * row repeating the rules before it */
        for (size_t i = 0, j = 0; i < k; i++) {
                twice[j++] = row(rows[i].pc, PROFD_UNWIND_UNSUPPORTED, 0, 0);
                twice[j++] = rows[i];
                if (i == k - 1)
                        t = (struct unwind_table) { .rows = twice, .n = j };
        }
        free(slots);
        slots = pack_checked("over-full page", &t, &n);
        if (slots) {
                /* only the later of each pair is kept */
                CHECK_INT_EQ(head_of(slots)->rows, k);
                bad = 0;
                for (uint32_t pc = PAGE - 1; pc <= 2 * PAGE; pc++)
                        bad += !check_pc("over-full page", &t, slots, n, pc);
                CHECK_INT_EQ(bad, 0);
        }
}

/* A crafted table whose index claims more rows in a page than a search
 * of PROFD_PACK_PAGE_STEPS can reach: no answer rather than a wrong one. */
static void test_crafted_page_over_bound(void) {
        size_t rows = (size_t) 1 << (PROFD_PACK_PAGE_STEPS + 1), n = 4 + 2 + rows + 1;
        _cleanup_free_ uint32_t *slots = calloc(n, sizeof(*slots));
        struct profd_pack_head *head = (struct profd_pack_head *) slots;
        struct profd_unwind_row got;
        uint64_t lo, hi;

        CHECK(slots);
        if (!slots)
                return;
        *head = (struct profd_pack_head) { .first_page = 1, .pages = 1, .rows = (uint32_t) rows, .rules = 1 };
        slots[4] = 0;
        slots[5] = (uint32_t) rows;
        /* every row at pc_lo 0: the search for the last byte goes right
         * all the way, and does not end within its steps */
        CHECK(!table_pack_lookup(slots, n, PAGE + 0xffff, &got, &lo, &hi));
        /* an index past the rows, rows past the slots */
        slots[5] = (uint32_t) rows + 1;
        CHECK(!table_pack_lookup(slots, n, PAGE, &got, &lo, &hi));
        slots[5] = 1;
        head->rules = 2;
        CHECK(!table_pack_lookup(slots, n, PAGE, &got, &lo, &hi));
        head->rules = 1;
        CHECK(table_pack_lookup(slots, n, PAGE, &got, &lo, &hi));
        CHECK(!table_pack_lookup(slots, 3, PAGE, &got, &lo, &hi));
}

/* Out of order, outside the span, too many rules, too small a budget:
 * refused, and nothing written past the budget. */
/* The plan: head, index, rows and rules, the rules no more than the rows
 * or PROFD_PACK_RULES_MAX; a table packed into a plan for exactly its
 * rules fits, into one for a rule fewer (the daemon's first plan, when a
 * file has more rules than TABLE_PACK_PLAN_RULES) -E2BIG at the end. */
static void test_plan(void) {
        enum { N_ROWS = 40 };
        struct profd_unwind_row rows[N_ROWS];
        uint32_t out[64];
        struct table_pack_buffer buf = { .out = out, .capacity = ELEMENTSOF(out) };
        struct table_pack p;
        size_t slots = 0;

        /* 4 head slots, pages 0x1 to 0x3 (3, index of 4), rows, rules */
        CHECK_INT_EQ(table_pack_plan(100, 0x10000, 0x3ffff, 0), 4 + 4 + 100);
        CHECK_INT_EQ(table_pack_plan(100, 0x10000, 0x3ffff, 7), 4 + 4 + 100 + 7);
        CHECK_INT_EQ(table_pack_plan(100, 0x10000, 0x3ffff, TABLE_PACK_PLAN_RULES), 4 + 4 + 100 + 100);
        CHECK_INT_EQ(table_pack_plan(1000000, 0, 0, SIZE_MAX), 4 + 2 + 1000000 + PROFD_PACK_RULES_MAX);

        /* 40 rows, 10 distinct rules, none repeating the one before */
        for (size_t i = 0; i < N_ROWS; i++)
                rows[i] = row(0x1000 + 16 * (uint32_t) i, PROFD_UNWIND_CFA_SP, (uint16_t) (8 * (i % 10 + 1)), 0);
        for (size_t rules = 10; rules >= 9; rules--) {
                size_t cap = table_pack_plan(N_ROWS, rows[0].pc, rows[N_ROWS - 1].pc, rules);
                int r;

                CHECK(cap <= ELEMENTSOF(out));
                r = table_pack_begin(&p, rows[0].pc, rows[N_ROWS - 1].pc, cap, table_pack_buffer, &buf);
                if (r >= 0)
                        r = table_pack_add(&p, rows, N_ROWS);
                if (r >= 0)
                        r = table_pack_end(&p, &slots);
                table_pack_done(&p);
                CHECK_INT_EQ(r, rules == 10 ? 0 : -E2BIG);
                if (r >= 0)
                        CHECK_INT_EQ(slots, cap); /* the plan was exact: every row kept */
        }
}

static void test_refused(const char *big) {
        struct profd_unwind_row rows[] = { row(0x1000, 1, 8, 0), row(0x900, 1, 16, 0) };
        uint32_t out[64];
        struct table_pack_buffer buf = { .out = out, .capacity = ELEMENTSOF(out) };
        struct table_pack p;
        size_t slots;

        CHECK_INT_EQ(table_pack_begin(&p, 0x1000, 0x900, ELEMENTSOF(out), table_pack_buffer, &buf), -EINVAL);
        table_pack_done(&p);
        CHECK_INT_EQ(table_pack_begin(&p, 0x900, 0x1000, ELEMENTSOF(out), table_pack_buffer, &buf), 0);
        CHECK_INT_EQ(table_pack_add(&p, rows, 2), -EINVAL);
        table_pack_done(&p);
        CHECK_INT_EQ(table_pack_begin(&p, 0x1000, 0x1000, ELEMENTSOF(out), table_pack_buffer, &buf), 0);
        CHECK_INT_EQ(table_pack_add(&p, rows + 1, 1), -EINVAL);
        table_pack_done(&p);
        CHECK_INT_EQ(table_pack_begin(&p, 0x1000, 0x1000, 5, table_pack_buffer, &buf), -E2BIG); /* no room for the index */
        table_pack_done(&p);

        /* PROFD_PACK_RULES_MAX + 1 distinct rules */
        {
                size_t n_rows = PROFD_PACK_RULES_MAX + 1;
                _cleanup_free_ struct profd_unwind_row *many = calloc(n_rows, sizeof(*many));
                _cleanup_free_ uint32_t *packed = NULL;
                struct unwind_table t = { .rows = many, .n = n_rows };

                CHECK(many);
                if (!many)
                        return;
                for (size_t i = 0; i < n_rows; i++)
                        many[i] = row((uint32_t) i * 4, i & 1 ? PROFD_UNWIND_CFA_FP : PROFD_UNWIND_CFA_SP,
                                      (uint16_t) (i / 2), 0);
                CHECK_INT_EQ(table_pack_table(&t, &packed, &slots), -E2BIG);
                CHECK(!packed);
                t.n--; /* exactly the most a row can name */
                CHECK_INT_EQ(table_pack_table(&t, &packed, &slots), 0);
                if (packed)
                        CHECK_INT_EQ(head_of(packed)->rules, PROFD_PACK_RULES_MAX);
        }

        /* a real file's table into exactly its room, then one slot less
         * and half: -E2BIG, and the canary past the budget untouched */
        {
                struct unwind_table t = {};
                _cleanup_free_ uint32_t *whole = NULL;
                size_t need = 0;

                if (file_table(big, &t) < 0) {
                        CHECK(!"no table for the budget test");
                        return;
                }
                CHECK_INT_EQ(table_pack_table(&t, &whole, &need), 0);
                for (size_t cap = need; whole && cap > need / 2; cap = cap == need ? need - 1 : need / 2) {
                        _cleanup_free_ uint32_t *out_big = malloc((cap + 16) * sizeof(*out_big));
                        /* the buffer claims more room than the budget: the
                         * packer's own bound must hold */
                        struct table_pack_buffer big_buf = { .out = out_big, .capacity = cap + 16 };
                        int r;

                        CHECK(out_big);
                        if (!out_big)
                                break;
                        memset(out_big + cap, 0xa5, 16 * sizeof(*out_big));
                        r = table_pack_begin(&p, t.rows[0].pc, t.rows[t.n - 1].pc, cap, table_pack_buffer, &big_buf);
                        if (r >= 0)
                                r = table_pack_add(&p, t.rows, t.n);
                        if (r >= 0)
                                r = table_pack_end(&p, &slots);
                        table_pack_done(&p);
                        CHECK_INT_EQ(r, cap == need ? 0 : -E2BIG);
                        if (r >= 0)
                                CHECK(slots == need && memcmp(out_big, whole, need * sizeof(*whole)) == 0);
                        for (size_t i = 0; i < 16; i++)
                                CHECK_INT_EQ(out_big[cap + i], 0xa5a5a5a5);
                }
                unwind_table_done(&t);
        }
}

/* A writer that checks how the packer writes: row pieces in order, each
 * slot once, nothing past the capacity; and fails on its nth call. */
struct writes {
        struct table_pack_buffer buf;
        uint8_t *written;
        size_t rows_at;       /* the first row's slot: after head and index */
        size_t next_row_slot; /* where the next write of rows or rules must start */
        size_t calls, fail_at;
};

static int writes_check(void *userdata, size_t at, const uint32_t *slots, size_t n) {
        struct writes *w = userdata;

        if (++w->calls == w->fail_at)
                return -EIO;
        CHECK(at + n <= w->buf.capacity);
        for (size_t i = at; i < at + n && i < w->buf.capacity; i++) {
                CHECK(!w->written[i]);
                w->written[i] = 1;
        }
        /* rows, then rules, come in order, one piece after another */
        if (at >= w->rows_at) {
                CHECK_INT_EQ(at, w->next_row_slot);
                w->next_row_slot = at + n;
        }
        return table_pack_buffer(&w->buf, at, slots, n);
}

static void test_writer(const char *path) {
        _cleanup_free_ uint32_t *whole = NULL;
        struct unwind_table t = {};
        size_t need = 0, slots = 0, calls;
        struct table_pack p;
        int r;

        CHECK_INT_EQ(file_table(path, &t), 0);
        if (t.n == 0)
                return;
        CHECK_INT_EQ(table_pack_table(&t, &whole, &need), 0);
        for (size_t fail_at = 0;; fail_at++) {
                _cleanup_free_ uint32_t *out = calloc(need, sizeof(*out));
                _cleanup_free_ uint8_t *written = calloc(need, 1);
                size_t rows_at = 4 + (t.rows[t.n - 1].pc >> PROFD_PACK_PAGE_SHIFT) -
                                 (t.rows[0].pc >> PROFD_PACK_PAGE_SHIFT) + 2;
                struct writes w = { .buf = { out, need }, .written = written, .rows_at = rows_at,
                                    .next_row_slot = rows_at, .fail_at = fail_at };

                CHECK(out && written);
                if (!out || !written)
                        break;
                r = table_pack_begin(&p, t.rows[0].pc, t.rows[t.n - 1].pc, need, writes_check, &w);
                for (size_t i = 0; r >= 0 && i < t.n; i += 5)
                        r = table_pack_add(&p, t.rows + i, MIN((size_t) 5, t.n - i));
                if (r >= 0)
                        r = table_pack_end(&p, &slots);
                table_pack_done(&p);
                calls = w.calls;
                if (fail_at == 0) {
                        /* every slot written once, as the whole table */
                        CHECK_INT_EQ(r, 0);
                        CHECK_INT_EQ(slots, need);
                        for (size_t i = 0; i < need; i++)
                                CHECK(written[i]);
                        CHECK(memcmp(out, whole, need * sizeof(*out)) == 0);
                        CHECK_INT_EQ(w.next_row_slot, need);
                        CHECK(calls >= 4); /* rows, rules, head, index */
                        continue;
                }
                /* the writer's error, whichever call fails */
                CHECK_INT_EQ(r, -EIO);
                if (fail_at >= calls)
                        break;
        }
        unwind_table_done(&t);
}

int main(int argc, char **argv) {
        if (argc != 3) {
                fprintf(stderr, "usage: %s NOFP REALIGN\n", argv[0]);
                return 2;
        }
        if (elf_version(EV_CURRENT) == EV_NONE)
                return 2;

        test_page_boundaries();
        test_full_page();
        test_crafted_page_over_bound();
        test_plan();
        test_refused(argv[1]);
        test_writer(argv[2]);
        if (access("/usr/lib/x86_64-linux-gnu/libc.so.6", R_OK) == 0)
                test_writer("/usr/lib/x86_64-linux-gnu/libc.so.6"); /* rows in several pieces */
        else
                fprintf(stderr, "SKIP the writer on libc: /usr/lib/x86_64-linux-gnu/libc.so.6 absent\n");
        test_every_kind(argv[2]);
        test_file(argv[1], true);
        test_file("/usr/lib/x86_64-linux-gnu/libc.so.6", false);
        test_file("/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", false);
        test_file("/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1", false);
        TESTS_DONE();
}
