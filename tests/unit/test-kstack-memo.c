/* The kernel stack memo's pure part (bpf/kstack-memo.bpf.h), compiled by
 * the host compiler against the BPF shim: which words of a live kernel
 * stack make its signature (the kernel's code and data above _stext, each
 * with its place from the walk's start, up to the first return into
 * do_syscall_64; the depth without one), and the memo's entries (kept
 * whole or not at all, never overwritten, a copy torn by a reuse told
 * from a hit). The real kernel's side, that a hit holds the frames a walk
 * gives, is the e2e offcpu test's (kernel_stack_memo_verify). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../bpf/kstack-memo.bpf.h"
#include "shim.h"
#include "tests.h"

/* A made-up kernel: text from _stext, do_syscall_64 within it. */
#define STEXT 0xffffffff81000000ULL
static const struct kstack_text text = {
        .start = STEXT,
        .stop_start = 0xffffffff8224d0d0ULL,
        .stop_end = 0xffffffff8224d360ULL,
};
#define RET_SYSCALL 0xffffffff8224d141ULL   /* a return into do_syscall_64 */
#define RET_ENTRY 0xffffffff81000130ULL     /* into entry_SYSCALL_64 */
#define DATA 0xffff888012345678ULL          /* a pointer into the direct map: not hashed */
#define STACK_PTR 0xffffc90000a3fe10ULL     /* a saved frame pointer: not hashed */

static struct kstack_words words;

/* A system call's stack as the wake-up's program reads it: the lower
 * frames (a pipe write's), the return into do_syscall_64, a random gap of
 * gap words holding fill, then do_syscall_64's frame and the entry's. */
static uint32_t syscall_stack(const uint64_t *lower, uint32_t n_lower, uint32_t gap, uint64_t fill) {
        uint32_t n = 0;

        memset(&words, 0, sizeof(words));
        for (uint32_t i = 0; i < n_lower; i++)
                words.w[n++] = lower[i];
        words.w[n++] = RET_SYSCALL;
        for (uint32_t i = 0; i < gap; i++)
                words.w[n++] = fill + i * 16;
        words.w[n++] = STACK_PTR + 0x100;
        words.w[n++] = RET_ENTRY;
        words.w[n++] = 0;
        return n;
}

static const uint64_t pipe_write[] = {
        0xffffffffc0032adbULL, DATA, 7, 0xffffffff814caa8eULL, STACK_PTR, 0xffffffff813b4b86ULL, DATA + 64,
        0xffffffff8142b639ULL, 0, 0xffffffff8142b97fULL, (uint64_t) -11 /* -EAGAIN: not hashed */,
};
#define N_PIPE (sizeof(pipe_write) / sizeof(pipe_write[0]))

static uint64_t sig_of(const uint64_t *lower, uint32_t n_lower, uint32_t gap, uint64_t fill,
                       enum kstack_walker walker) {
        uint32_t n = syscall_stack(lower, n_lower, gap, fill);

        return kstack_sig(&words, n, &text, walker);
}

static void test_signature_of_a_system_call(void) {
        uint64_t lower[N_PIPE];
        uint64_t base = sig_of(pipe_write, N_PIPE, 10, STEXT + 0x5000, KSTACK_WALKER_WAKER);

        CHECK(base != 0);
        /* the random gap: any length, any stale words (text or not) */
        CHECK(sig_of(pipe_write, N_PIPE, 0, 0, KSTACK_WALKER_WAKER) == base);
        CHECK(sig_of(pipe_write, N_PIPE, 120, STEXT + 0x9999, KSTACK_WALKER_WAKER) == base);
        CHECK(sig_of(pipe_write, N_PIPE, 33, DATA, KSTACK_WALKER_WAKER) == base);
        /* another walker starts elsewhere */
        CHECK(sig_of(pipe_write, N_PIPE, 10, STEXT + 0x5000, KSTACK_WALKER_SWITCH_IN) != base);
        /* words that are no code or static data do not count */
        memcpy(lower, pipe_write, sizeof(lower));
        lower[1] = DATA + 4096;
        lower[2] = 8;
        lower[4] = STACK_PTR + 0x2000;
        lower[8] = (uint64_t) -1;
        lower[10] = (uint64_t) -4;
        CHECK(sig_of(lower, N_PIPE, 10, STEXT + 0x5000, KSTACK_WALKER_WAKER) == base);
        /* a return address that differs, or sits elsewhere */
        memcpy(lower, pipe_write, sizeof(lower));
        lower[7] = 0xffffffff813df1d2ULL;
        CHECK(sig_of(lower, N_PIPE, 10, STEXT + 0x5000, KSTACK_WALKER_WAKER) != base);
        memcpy(lower, pipe_write, sizeof(lower));
        lower[8] = lower[7];
        lower[7] = 0;
        CHECK(sig_of(lower, N_PIPE, 10, STEXT + 0x5000, KSTACK_WALKER_WAKER) != base);
        /* a module's or a BPF program's code counts (below the end of the module space) */
        memcpy(lower, pipe_write, sizeof(lower));
        lower[0] = 0xffffffffc0032adcULL;
        CHECK(sig_of(lower, N_PIPE, 10, STEXT + 0x5000, KSTACK_WALKER_WAKER) != base);
        /* one frame more below the stop is another stack */
        CHECK(sig_of(pipe_write, N_PIPE - 1, 10, STEXT + 0x5000, KSTACK_WALKER_WAKER) != base);
        /* the call site in do_syscall_64 counts */
        {
                uint32_t n = syscall_stack(pipe_write, N_PIPE, 10, 0);

                words.w[N_PIPE] = RET_SYSCALL + 5;
                CHECK(kstack_sig(&words, n, &text, KSTACK_WALKER_WAKER) != base);
        }
}

/* A stack that never meets do_syscall_64 (a kernel thread's) is hashed
 * whole, with its depth. */
static void test_signature_without_a_system_call(void) {
        uint64_t a, b;

        memset(&words, 0, sizeof(words));
        for (uint32_t i = 0; i < 40; i++)
                words.w[i] = i % 3 ? DATA + i : STEXT + 0x100 * i;
        a = kstack_sig(&words, 40, &text, KSTACK_WALKER_WAKER);
        CHECK(kstack_sig(&words, 40, &text, KSTACK_WALKER_WAKER) == a);
        /* one word more at the top, not code: the depth differs */
        b = kstack_sig(&words, 41, &text, KSTACK_WALKER_WAKER);
        CHECK(b != a);
        /* a code word near the top counts, as any other */
        words.w[38] = STEXT + 0x42;
        CHECK(kstack_sig(&words, 40, &text, KSTACK_WALKER_WAKER) != a);
        /* no stop known (do_syscall_64 not found): the whole stack */
        {
                struct kstack_text no_stop = { .start = STEXT };
                uint64_t c, d;

                syscall_stack(pipe_write, N_PIPE, 10, STEXT + 0x5000);
                c = kstack_sig(&words, N_PIPE + 14, &no_stop, KSTACK_WALKER_WAKER);
                syscall_stack(pipe_write, N_PIPE, 11, STEXT + 0x5000);
                d = kstack_sig(&words, N_PIPE + 15, &no_stop, KSTACK_WALKER_WAKER);
                CHECK(c != d);
        }
        /* at most KSTACK_MEMO_WORDS are read */
        for (uint32_t i = 0; i < KSTACK_MEMO_WORDS; i++)
                words.w[i] = STEXT + i;
        CHECK(kstack_sig(&words, KSTACK_MEMO_WORDS, &text, KSTACK_WALKER_WAKER) != 0);
}

static struct profd_frames frames(uint32_t n, uint64_t seed) {
        struct profd_frames f = { .n = n };

        for (uint32_t i = 0; i < n && i < PROFD_MAX_FRAMES; i++)
                f.ips[i] = seed + i * 0x40;
        return f;
}

/* Words that hold the frames of f, from its frame first on, one every
 * other word, fill between; returns the count of words. */
static uint32_t words_of(const struct profd_frames *f, uint32_t first, uint64_t fill) {
        uint32_t n = 0;

        memset(&words, 0, sizeof(words));
        for (uint32_t i = first; i < f->n; i++) {
                words.w[n++] = fill + i;
                words.w[n++] = f->ips[i];
        }
        words.w[n++] = 0;
        return n;
}

static void test_memo_entries(void) {
        struct profd_frames k = frames(12, STEXT), got, other = frames(12, STEXT + 0x1000);
        struct kstack_memo_entry *e;
        uint64_t sig = 0x1234;
        uint32_t n;

        shim_map_clear(&kstack_memo);
        n = words_of(&k, 0, DATA);
        CHECK(!kstack_memo_get(sig, &got, &words, n));
        kstack_memo_put(sig, &k, &words, n, &text, 2);
        memset(&got, 0xaa, sizeof(got));
        CHECK(kstack_memo_get(sig, &got, &words, n));
        CHECK_INT_EQ(got.n, 12);
        CHECK_INT_EQ(got.end, 0);
        CHECK(memcmp(got.ips, k.ips, 12 * sizeof(k.ips[0])) == 0);
        /* the fill between differs: a hit still */
        words_of(&k, 0, DATA + 0x1000);
        CHECK(kstack_memo_get(sig, &got, &words, n));
        /* an entry stays: the same signature has the same frames */
        words_of(&other, 0, DATA);
        kstack_memo_put(sig, &other, &words, n, &text, 2);
        words_of(&k, 0, DATA);
        CHECK(kstack_memo_get(sig, &got, &words, n));
        CHECK(got.ips[0] == k.ips[0]);
        /* too long for an entry, or empty: walked each time */
        k = frames(KSTACK_MEMO_FRAMES + 1, STEXT);
        n = words_of(&k, 0, DATA);
        kstack_memo_put(sig + 1, &k, &words, n, &text, 2);
        CHECK(!kstack_memo_get(sig + 1, &got, &words, n));
        k = frames(KSTACK_MEMO_FRAMES, STEXT);
        n = words_of(&k, 0, DATA);
        kstack_memo_put(sig + 2, &k, &words, n, &text, 2);
        CHECK(kstack_memo_get(sig + 2, &got, &words, n));
        CHECK_INT_EQ(got.n, KSTACK_MEMO_FRAMES);
        CHECK(got.ips[KSTACK_MEMO_FRAMES - 1] == k.ips[KSTACK_MEMO_FRAMES - 1]);
        k = frames(0, STEXT);
        kstack_memo_put(sig + 3, &k, &words, 1, &text, 2);
        CHECK(!kstack_memo_get(sig + 3, &got, &words, 1));
        /* an entry being reused for another signature while it is copied:
         * its sig, written first, no longer matches */
        k = frames(12, STEXT);
        n = words_of(&k, 0, DATA);
        e = bpf_map_lookup_elem(&kstack_memo, &sig);
        CHECK(e != NULL);
        e->sig = sig + 99;
        CHECK(!kstack_memo_get(sig, &got, &words, n));
        e->sig = sig;
        e->n = 0;
        CHECK(!kstack_memo_get(sig, &got, &words, n));
        e->n = 12;
        CHECK(kstack_memo_get(sig, &got, &words, n));
}

/* Where each frame was: a stack whose frames are elsewhere, or other,
 * is another path although its signature is the same. */
static void test_memo_places(void) {
        struct profd_frames k = frames(10, STEXT), got;
        uint64_t sig = 0x777;
        uint32_t n;

        shim_map_clear(&kstack_memo);
        /* the program's own first two frames lie below the words */
        n = words_of(&k, 2, DATA);
        kstack_memo_put(sig, &k, &words, n, &text, 2);
        CHECK(kstack_memo_get(sig, &got, &words, n));
        CHECK_INT_EQ(got.n, 10);
        /* one frame another: another path */
        words.w[2 * (7 - 2) + 1] = STEXT + 0x99999;
        CHECK(!kstack_memo_get(sig, &got, &words, n));
        /* one frame one word higher */
        n = words_of(&k, 2, DATA);
        words.w[2 * (7 - 2)] = k.ips[7];
        words.w[2 * (7 - 2) + 1] = DATA;
        CHECK(!kstack_memo_get(sig, &got, &words, n));
        /* two below, where only the program's call of the walk may be */
        n = words_of(&k, 2, DATA);
        kstack_memo_put(sig + 3, &k, &words, n, &text, 1);
        CHECK(!kstack_memo_get(sig + 3, &got, &words, n));
        /* a shallower stack: the last frame's place is past its words,
         * whatever the buffer still holds there */
        n = words_of(&k, 2, DATA);
        kstack_memo_put(sig + 4, &k, &words, n, &text, 2);
        CHECK(kstack_memo_get(sig + 4, &got, &words, n));
        CHECK(!kstack_memo_get(sig + 4, &got, &words, n - 2));
        /* three frames below the words: not remembered */
        n = words_of(&k, 3, DATA);
        kstack_memo_put(sig + 1, &k, &words, n, &text, 2);
        CHECK(!kstack_memo_get(sig + 1, &got, &words, n));
        /* a frame not found among the words: not remembered */
        n = words_of(&k, 0, DATA);
        words.w[9] = DATA;
        kstack_memo_put(sig + 2, &k, &words, n, &text, 2);
        words.w[9] = k.ips[4];
        CHECK(!kstack_memo_get(sig + 2, &got, &words, n));
}

/* A system call's stack: the frames up to the one in do_syscall_64 have
 * their places from the start, those after it from the top, across the
 * random gap between; a stale address in do_syscall_64 below the real one
 * stops the signature early, and the places tell the paths apart. */
static void test_memo_system_calls(void) {
        static const uint64_t lower[] = { 0xffffffff814caa8eULL, DATA, 0xffffffff813b4b86ULL, 7,
                                          0xffffffff8142b639ULL, 0xffffffff8142b97fULL };
        struct profd_frames k = { .n = 8 }, got;
        uint64_t sig, sig2;
        uint32_t n;

        shim_map_clear(&kstack_memo);
        k.ips[0] = 0xffffffff814caa8eULL;
        k.ips[1] = 0xffffffff813b4b86ULL;
        k.ips[2] = 0xffffffff8142b639ULL;
        k.ips[3] = 0xffffffff8142b97fULL;
        k.ips[4] = RET_SYSCALL;
        k.ips[5] = RET_ENTRY;
        k.n = 6;
        n = syscall_stack(lower, 6, 10, DATA);
        sig = kstack_sig(&words, n, &text, KSTACK_WALKER_WAKER);
        kstack_memo_put(sig, &k, &words, n, &text, 2);
        CHECK(kstack_memo_get(sig, &got, &words, n));
        /* another gap: the same signature, the frames above it found from the top */
        n = syscall_stack(lower, 6, 77, STEXT + 0x5555);
        CHECK(kstack_sig(&words, n, &text, KSTACK_WALKER_WAKER) == sig);
        CHECK(kstack_memo_get(sig, &got, &words, n));
        CHECK_INT_EQ(got.n, 6);
        CHECK(got.ips[5] == RET_ENTRY);
        /* a stale address in do_syscall_64 in the first frame's slots: the
         * signature stops there, whatever is above */
        {
                uint64_t stale[6];

                memcpy(stale, lower, sizeof(stale));
                stale[1] = RET_SYSCALL;
                n = syscall_stack(stale, 6, 10, DATA);
                sig2 = kstack_sig(&words, n, &text, KSTACK_WALKER_WAKER);
                k.n = 6;
                kstack_memo_put(sig2, &k, &words, n, &text, 2);
                CHECK(kstack_memo_get(sig2, &got, &words, n));
                /* another path above the stale word: same signature, other places */
                stale[4] = 0xffffffff813df1d2ULL;
                n = syscall_stack(stale, 6, 10, DATA);
                CHECK(kstack_sig(&words, n, &text, KSTACK_WALKER_WAKER) == sig2);
                CHECK(!kstack_memo_get(sig2, &got, &words, n));
        }
}

static void test_verify_comparison(void) {
        struct profd_frames k = frames(10, STEXT);
        __u64 ips[PROFD_MAX_FRAMES];

        memcpy(ips, k.ips, sizeof(ips));
        CHECK(kstack_memo_same(&k, ips, 10, 0));
        CHECK(!kstack_memo_same(&k, ips, 9, 0));
        ips[9]++;
        CHECK(!kstack_memo_same(&k, ips, 10, 1));
        ips[9]--;
        /* frame 0: the program's own call of the walk, left out */
        ips[0]++;
        CHECK(!kstack_memo_same(&k, ips, 10, 0));
        CHECK(kstack_memo_same(&k, ips, 10, 1));
}

int main(void) {
        SHIM_MAP(kstack_memo, 64);
        SHIM_MAP(kstack_words, 2);
        test_signature_of_a_system_call();
        test_signature_without_a_system_call();
        test_memo_entries();
        test_memo_places();
        test_memo_system_calls();
        test_verify_comparison();
        return tests_failed ? 1 : 0;
}
