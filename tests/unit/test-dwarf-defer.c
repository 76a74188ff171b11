/* dwarf_min_samples' core (daemon/symbols/dwarf-defer.h): a file's DWARF
 * turns on once, at the sample that reaches the bound (or at once with 0);
 * its pending frames are kept once each, under one path, up to the cap,
 * and taken sorted, leaving none. */
#include <errno.h>
#include <stdlib.h>

#include "dwarf-defer.h"
#include "tests.h"

static void test_turns_on_once_at_the_bound(void) {
        struct dwarf_defer d;

        dwarf_defer_init(&d, 20);
        CHECK(!d.on);
        CHECK(!dwarf_defer_note(&d, 19, 20));
        CHECK(!d.on);
        CHECK(dwarf_defer_note(&d, 1, 20)); /* the 20th sample */
        CHECK(d.on);
        CHECK(!dwarf_defer_note(&d, 100, 20)); /* on already: not again */
        dwarf_defer_done(&d);

        /* one key past the bound at once; and a count that would wrap */
        dwarf_defer_init(&d, 20);
        CHECK(dwarf_defer_note(&d, 1000, 20));
        dwarf_defer_done(&d);
        dwarf_defer_init(&d, UINT64_MAX);
        CHECK(!dwarf_defer_note(&d, UINT64_MAX - 1, UINT64_MAX));
        CHECK(dwarf_defer_note(&d, UINT64_MAX - 1, UINT64_MAX)); /* saturates at the bound */
        dwarf_defer_done(&d);

        /* 0: every file's DWARF at its first frame */
        dwarf_defer_init(&d, 0);
        CHECK(d.on);
        CHECK(!dwarf_defer_note(&d, 5, 0));
        dwarf_defer_done(&d);
}

static void test_pending_kept_once_under_one_path_and_taken_sorted(void) {
        struct dwarf_defer d;
        uint64_t *offs;
        char *module;

        dwarf_defer_init(&d, 20);
        CHECK_INT_EQ(dwarf_defer_take(&d, &offs, &module), 0); /* none yet */
        CHECK(!offs && !module);
        CHECK_INT_EQ(dwarf_defer_pend(&d, 0x3000, "/usr/bin/t"), 1);
        CHECK_INT_EQ(dwarf_defer_pend(&d, 0x1000, "/usr/bin/t"), 1);
        CHECK_INT_EQ(dwarf_defer_pend(&d, 0x3000, "/usr/bin/t"), 0); /* kept already */
        CHECK_INT_EQ(dwarf_defer_pend(&d, 0x2000, "/usr/bin/t"), 1);
        /* the same file under another path (a hard link, another mount):
         * not kept */
        CHECK_INT_EQ(dwarf_defer_pend(&d, 0x4000, "/srv/t"), -ENOSPC);
        CHECK_INT_EQ(dwarf_defer_pending(&d), 3);
        CHECK(dwarf_defer_bytes(&d) > 3 * 8);
        CHECK_INT_EQ(dwarf_defer_take(&d, &offs, &module), 3);
        if (offs && module) {
                CHECK_INT_EQ(offs[0], 0x1000);
                CHECK_INT_EQ(offs[1], 0x2000);
                CHECK_INT_EQ(offs[2], 0x3000);
                CHECK_STR_EQ(module, "/usr/bin/t");
        }
        free(offs);
        free(module);
        /* taken: none left, and the next path is the file's first again */
        CHECK_INT_EQ(dwarf_defer_pending(&d), 0);
        CHECK_INT_EQ(dwarf_defer_bytes(&d), 0);
        CHECK_INT_EQ(dwarf_defer_take(&d, &offs, &module), 0);
        CHECK_INT_EQ(dwarf_defer_pend(&d, 0x5000, "/srv/t"), 1);
        dwarf_defer_done(&d);
}

static void test_pending_capped(void) {
        struct dwarf_defer d;
        uint64_t *offs;
        char *module;

        dwarf_defer_init(&d, 20);
        for (uint64_t i = 0; i < DWARF_DEFER_PENDING_MAX; i++)
                CHECK_INT_EQ(dwarf_defer_pend(&d, i * 4, "/t"), 1);
        CHECK_INT_EQ(dwarf_defer_pend(&d, 0, "/t"), 0); /* kept already: not a drop */
        CHECK_INT_EQ(dwarf_defer_pend(&d, 1, "/t"), -ENOSPC);
        CHECK_INT_EQ(dwarf_defer_take(&d, &offs, &module), DWARF_DEFER_PENDING_MAX);
        if (offs)
                CHECK_INT_EQ(offs[DWARF_DEFER_PENDING_MAX - 1], (uint64_t) (DWARF_DEFER_PENDING_MAX - 1) * 4);
        free(offs);
        free(module);
        dwarf_defer_done(&d);
}

int main(void) {
        test_turns_on_once_at_the_bound();
        test_pending_kept_once_under_one_path_and_taken_sorted();
        test_pending_capped();
        TESTS_DONE();
}
