/* Tests of the page cache for reads of another process's memory: a read
 * gets what the reader would give (bytes, errno) whether served from a
 * page held, a page read whole, or passed through; pages are reused least
 * recently used first; begin forgets them; a process gone stops at once;
 * a page that cannot be read whole falls back to the exact read. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "remote-pages.h"
#include "tests.h"

#define BASE 0x7f0000000000ull
#define N_PAGES 32u

/* A fake process: N_PAGES pages from BASE, byte i of page p is
 * (p * 31 + i) & 0xff; one page unreadable; the end of one page readable
 * only up to a bound (a read crossing it fails, as at a mapping's end
 * inside a page cannot, but the reader must not care). */
struct fake {
        uint8_t mem[N_PAGES * REMOTE_PAGE_SIZE];
        unsigned bad_page;       /* reads touching it fail with -EIO */
        uint64_t short_at;       /* reads reaching past it fail (0: none) */
        bool gone;
        unsigned calls;
        size_t last_size;
};

static int fake_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        struct fake *f = userdata;

        f->calls++;
        f->last_size = size;
        if (f->gone)
                return -ESRCH;
        if (addr < BASE || addr + size < addr || addr + size > BASE + sizeof(f->mem))
                return -EIO;
        if (f->short_at && addr + size > f->short_at)
                return -EIO;
        for (uint64_t a = addr; a < addr + size; a += 1)
                if ((a - BASE) / REMOTE_PAGE_SIZE == f->bad_page)
                        return -EIO;
        memcpy(buf, f->mem + (addr - BASE), size);
        return 0;
}

static struct fake *fake_new(void) {
        struct fake *f = calloc(1, sizeof(*f));

        for (size_t i = 0; i < sizeof(f->mem); i++)
                f->mem[i] = (uint8_t) ((i / REMOTE_PAGE_SIZE) * 31 + i);
        f->bad_page = N_PAGES - 1;
        return f;
}

static bool same_as_memory(const struct fake *f, uint64_t addr, const uint8_t *buf, size_t size) {
        return memcmp(buf, f->mem + (addr - BASE), size) == 0;
}

static void test_small_reads_share_a_page(void) {
        struct fake *f = fake_new();
        struct remote_pages rp;
        uint8_t b[64];

        remote_pages_init(&rp, fake_read, f);
        /* one Method's worth of reads on two pages: two fills */
        for (unsigned i = 0; i < 20; i++) {
                uint64_t a = BASE + (i % 2) * REMOTE_PAGE_SIZE + 8 * i;

                CHECK_INT_EQ(remote_pages_read(&rp, a, b, 8), 0);
                CHECK(same_as_memory(f, a, b, 8));
        }
        CHECK_INT_EQ(f->calls, 2);
        CHECK_INT_EQ(f->last_size, REMOTE_PAGE_SIZE);
        CHECK_INT_EQ(rp.stats.reads, 20);
        CHECK_INT_EQ(rp.stats.fills, 2);
        CHECK_INT_EQ(rp.stats.copies, 18);
        CHECK_INT_EQ(rp.stats.direct, 0);
        remote_pages_done(&rp);
        free(f);
}

static void test_read_across_a_page_boundary(void) {
        struct fake *f = fake_new();
        struct remote_pages rp;
        uint8_t b[REMOTE_PAGE_SIZE];
        uint64_t a = BASE + 3 * REMOTE_PAGE_SIZE - 5;

        remote_pages_init(&rp, fake_read, f);
        CHECK_INT_EQ(remote_pages_read(&rp, a, b, 10), 0);
        CHECK(same_as_memory(f, a, b, 10));
        CHECK_INT_EQ(f->calls, 2);
        /* a whole page's worth, not aligned: the second page is held */
        CHECK_INT_EQ(remote_pages_read(&rp, a + 10, b, REMOTE_PAGE_SIZE), 0);
        CHECK(same_as_memory(f, a + 10, b, REMOTE_PAGE_SIZE));
        CHECK_INT_EQ(f->calls, 3);
        remote_pages_done(&rp);
        free(f);
}

static void test_large_reads_pass_through(void) {
        struct fake *f = fake_new();
        struct remote_pages rp;
        static uint8_t b[3 * REMOTE_PAGE_SIZE];

        remote_pages_init(&rp, fake_read, f);
        CHECK_INT_EQ(remote_pages_read(&rp, BASE + 100, b, sizeof(b) - 200), 0);
        CHECK(same_as_memory(f, BASE + 100, b, sizeof(b) - 200));
        CHECK_INT_EQ(f->calls, 1);
        CHECK_INT_EQ(f->last_size, sizeof(b) - 200);
        CHECK_INT_EQ(rp.stats.direct, 1);
        /* nothing was kept of it */
        CHECK_INT_EQ(remote_pages_read(&rp, BASE + 100, b, 8), 0);
        CHECK_INT_EQ(f->calls, 2);
        /* nothing, and past the end of the address space: the reader's answer */
        CHECK_INT_EQ(remote_pages_read(&rp, UINT64_MAX - 3, b, 8), -EIO);
        CHECK_INT_EQ(f->calls, 3);
        remote_pages_done(&rp);
        free(f);
}

static void test_least_recently_used_page_goes(void) {
        struct fake *f = fake_new();
        struct remote_pages rp;
        uint8_t b[8];

        remote_pages_init(&rp, fake_read, f);
        for (unsigned p = 0; p < REMOTE_PAGES; p++)
                CHECK_INT_EQ(remote_pages_read(&rp, BASE + p * REMOTE_PAGE_SIZE, b, 8), 0);
        CHECK_INT_EQ(f->calls, REMOTE_PAGES);
        /* page 0 used again: page 1 is now the oldest */
        CHECK_INT_EQ(remote_pages_read(&rp, BASE + 16, b, 8), 0);
        CHECK_INT_EQ(f->calls, REMOTE_PAGES);
        CHECK_INT_EQ(remote_pages_read(&rp, BASE + REMOTE_PAGES * REMOTE_PAGE_SIZE, b, 8), 0);
        CHECK_INT_EQ(f->calls, REMOTE_PAGES + 1);
        CHECK_INT_EQ(remote_pages_read(&rp, BASE + 24, b, 8), 0);   /* page 0 held */
        CHECK_INT_EQ(f->calls, REMOTE_PAGES + 1);
        CHECK_INT_EQ(remote_pages_read(&rp, BASE + REMOTE_PAGE_SIZE, b, 8), 0);   /* page 1 was evicted */
        CHECK_INT_EQ(f->calls, REMOTE_PAGES + 2);
        CHECK(same_as_memory(f, BASE + REMOTE_PAGE_SIZE, b, 8));
        remote_pages_done(&rp);
        free(f);
}

static void test_begin_forgets(void) {
        struct fake *f = fake_new();
        struct remote_pages rp;
        uint8_t b[8];

        remote_pages_init(&rp, fake_read, f);
        CHECK_INT_EQ(remote_pages_read(&rp, BASE, b, 8), 0);
        /* the process wrote there since */
        f->mem[0] ^= 0xff;
        CHECK_INT_EQ(remote_pages_read(&rp, BASE, b, 8), 0);
        CHECK_INT_EQ(b[0], f->mem[0] ^ 0xff);
        remote_pages_begin(&rp, fake_read, f);
        CHECK_INT_EQ(remote_pages_read(&rp, BASE, b, 8), 0);
        CHECK_INT_EQ(b[0], f->mem[0]);
        CHECK_INT_EQ(f->calls, 2);
        remote_pages_done(&rp);
        free(f);
}

static void test_failures_are_the_readers(void) {
        struct fake *f = fake_new();
        struct remote_pages rp;
        uint8_t b[16];
        uint64_t bad = BASE + f->bad_page * REMOTE_PAGE_SIZE;

        remote_pages_init(&rp, fake_read, f);
        /* an unreadable page: the whole page and then the exact read fail */
        CHECK_INT_EQ(remote_pages_read(&rp, bad + 8, b, 8), -EIO);
        CHECK_INT_EQ(f->calls, 2);
        CHECK_INT_EQ(remote_pages_read(&rp, bad - 8, b, 16), -EIO);
        /* a page readable only in part: the exact read succeeds */
        f->short_at = BASE + 5 * REMOTE_PAGE_SIZE + 100;
        CHECK_INT_EQ(remote_pages_read(&rp, BASE + 5 * REMOTE_PAGE_SIZE + 10, b, 16), 0);
        CHECK(same_as_memory(f, BASE + 5 * REMOTE_PAGE_SIZE + 10, b, 16));
        CHECK_INT_EQ(remote_pages_read(&rp, BASE + 5 * REMOTE_PAGE_SIZE + 90, b, 16), -EIO);
        f->short_at = 0;
        /* gone: said at once, no exact read after the page's */
        f->gone = true;
        f->calls = 0;
        CHECK_INT_EQ(remote_pages_read(&rp, BASE + 9 * REMOTE_PAGE_SIZE, b, 8), -ESRCH);
        CHECK_INT_EQ(f->calls, 1);
        CHECK_INT_EQ(remote_pages_read(&rp, BASE + 9 * REMOTE_PAGE_SIZE, b, 2 * REMOTE_PAGE_SIZE), -ESRCH);
        remote_pages_done(&rp);
        free(f);
}

/* Random reads against the memory they should give, with an unreadable
 * page among the readable ones: a read touching it fails whether it comes
 * before, across or after a page held. */
static void test_random_reads(void) {
        struct fake *f = fake_new();
        struct remote_pages rp;
        static uint8_t b[2 * REMOTE_PAGE_SIZE];
        unsigned seed = 1, n_bad = 0;

        f->bad_page = N_PAGES / 2;
        remote_pages_init(&rp, fake_read, f);
        for (unsigned i = 0; i < 20000; i++) {
                size_t size = 1 + (size_t) (rand_r(&seed) % (i % 10 == 0 ? sizeof(b) : 64));
                uint64_t addr = BASE + (uint64_t) (rand_r(&seed) % (N_PAGES * REMOTE_PAGE_SIZE - size + 1));
                uint64_t first = (addr - BASE) / REMOTE_PAGE_SIZE, last = (addr + size - 1 - BASE) / REMOTE_PAGE_SIZE;
                bool bad = first <= f->bad_page && f->bad_page <= last;

                if (i % 1000 == 0)
                        remote_pages_begin(&rp, fake_read, f);
                n_bad += bad;
                CHECK_INT_EQ(remote_pages_read(&rp, addr, b, size), bad ? -EIO : 0);
                if (!bad && !same_as_memory(f, addr, b, size)) {
                        CHECK(false);
                        break;
                }
        }
        CHECK(n_bad > 100);
        CHECK(rp.stats.copies > 0 && rp.stats.fills > 0 && rp.stats.direct > 0);
        remote_pages_done(&rp);
        free(f);
}

int main(void) {
        test_small_reads_share_a_page();
        test_read_across_a_page_boundary();
        test_large_reads_pass_through();
        test_least_recently_used_page_goes();
        test_begin_forgets();
        test_failures_are_the_readers();
        test_random_reads();
        TESTS_DONE();
}
