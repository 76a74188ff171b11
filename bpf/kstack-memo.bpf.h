/* Kernel stacks remembered by the words that decide them (the kernel
 * stack memo). The off-CPU programs take a kernel stack for every kept
 * block (the blocked thread's, at its switch-in) and every kept wake-up
 * (the waker's); the kernel's own walk of it (ORC, through
 * bpf_get_stack and bpf_get_task_stack) was most of those programs' cost
 * on a build host: about 2.3 us of a wake-up's 3 us, 0.8 of a switch's 0.9
 * (docs/performance.md). A busy host blocks and wakes through a few paths
 * over and over: the same pipe write, futex wake, wait4.
 *
 * The kernel walk of a stack reads only that stack's words: return
 * addresses, and saved frame pointers, which point at the same place
 * relative to the walk's start whenever the frames between are the same.
 * So two walks that start alike (the same program) over stacks whose
 * words in the kernel's half above _stext (code: every return address;
 * and the kernel's static data) are the same at the same places from the
 * start give the same frames. The signature is a hash of those words with
 * their places and of the walker; the memo maps it to a walk's frames. A
 * hit costs a read of the live stack, a scan of its words and a hash
 * lookup instead of the walk. Other words (pointers to tasks, files;
 * counters) are left out. Words left stale in a frame's unused slots may
 * make two walks of one path differ in signature: a miss, never a wrong
 * stack.
 *
 * System calls: the kernel (CONFIG_RANDOMIZE_KSTACK_OFFSET, on in Debian's
 * and most distributions' kernels) moves the stack down by a random
 * amount (up to 1 KiB, not written) in do_syscall_64 before it calls the
 * call's function, at each call. The scan stops at the first word that is
 * an address in do_syscall_64: from there up the frames are
 * do_syscall_64's and the entry code's, at the stack's top whatever the
 * gap, and the walk reaches them through the frame pointer do_syscall_64
 * keeps (its frame holds the gap), the same for every call. Without the
 * stop the signature of a system call's stack almost never repeated (4%
 * hits, docs/performance.md). A stack that never meets do_syscall_64
 * (a kernel thread's, an interrupt's or a fault's from user mode) is
 * hashed whole, with its depth.
 *
 * A stale address in do_syscall_64 left in an unused slot of a lower
 * frame stops the scan early, and two paths that differ only above it
 * share a signature (a timer interrupt's wake-up and a system call's did,
 * in the e2e verify test). So an entry also holds where its walk found
 * each frame among the words (in order; from the start up to the frame in
 * do_syscall_64, from the top after it), and a hit is used only if this
 * stack holds each frame at its place: the walk reads each return address
 * from where the frames below it put it, so equal frames at equal places
 * are an equal walk.
 *
 * The pure part (the signature, the memo's entries) is unit-tested in user
 * space (tests/unit/test-kstack-memo.c); offcpu.bpf.c reads the stacks and
 * walks. Setting kernel_stack_memo (docs/man/profd.conf.5.scd): off, on,
 * or verify, where every hit is walked as well, compared and counted
 * (PROFD_CNT_KSTACK_MEMO_MISMATCHES), and the walk's frames kept. */
#pragma once

#include "maps.bpf.h"

/* The deepest live stack scanned, in words: deeper ones are walked. */
#define KSTACK_MEMO_WORDS 512
/* The longest stack remembered: longer ones are walked each time. */
#define KSTACK_MEMO_FRAMES 32
_Static_assert((KSTACK_MEMO_FRAMES & (KSTACK_MEMO_FRAMES - 1)) == 0, "a power of 2: kstack_place_word's mask");
#define KSTACK_MEMO_ENTRIES 2048
/* The end of x86-64's module space (MODULES_END), where the kernel's code
 * (and profd's and others' BPF programs) ends: above are the fixmap and
 * small negative numbers (-1, -EAGAIN) that a stack's data holds too. */
#define KSTACK_MEMO_TEXT_END 0xffffffffff000000ULL

/* Which program's start the walk has (a signature's seed). */
enum kstack_walker {
        KSTACK_WALKER_WAKER = 1,   /* profd_waking: bpf_get_stack of the waker */
        KSTACK_WALKER_SWITCH_IN,   /* profd_switch: bpf_get_task_stack of the task switched in */
};

/* A frame's place among the words: from the walk's start, or with
 * KSTACK_PLACE_TOP, from the stack's top (the frames above the random gap
 * of a system call); KSTACK_PLACE_NONE: below the words (the program's
 * own frames, the same each time). */
#define KSTACK_PLACE_TOP 0x8000
#define KSTACK_PLACE_NONE 0xffff

/* An entry: its signature, then the frames and where the walk that made
 * it found each. An entry may be reused for another signature by the LRU
 * map (which recycles entries at once) while a program copies it. An
 * insert writes the entry from its start, so sig first: a copy that took
 * any frame of the new entry then reads the new sig after it, and is told
 * from a hit. */
struct kstack_memo_entry {
        __u64 sig;
        __u32 n;
        __u32 pad;
        __u64 ips[KSTACK_MEMO_FRAMES];
        __u16 place[KSTACK_MEMO_FRAMES];
};

struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, KSTACK_MEMO_ENTRIES);
        __type(key, __u64);
        __type(value, struct kstack_memo_entry);
} kstack_memo SEC(".maps") __weak;

/* The live stack's words, per CPU and walker that may interrupt another
 * (a wake-up's program can run in an interrupt that arrives while a
 * switch's runs): [0] the switch programs', [1] the waker's. */
struct kstack_words {
        __u64 w[KSTACK_MEMO_WORDS];
        struct kstack_memo_entry e; /* an insert's */
};
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 2);
        __type(key, __u32);
        __type(value, struct kstack_words);
} kstack_words SEC(".maps") __weak;

/* One word into the signature: its value and its place. */
static __always_inline __u64 kstack_sig_mix(__u64 h, __u64 word, __u32 i) {
        h ^= word + (__u64) i * 0x9e3779b97f4a7c15ULL;
        h *= 0xff51afd7ed558ccdULL;
        return h ^ (h >> 32);
}

/* Where the kernel's text starts and where the scan stops (do_syscall_64). */
struct kstack_text {
        __u64 start;                /* _stext: words from it to KSTACK_MEMO_TEXT_END are hashed */
        __u64 stop_start, stop_end; /* do_syscall_64's code; {0, 0}: none */
};

struct kstack_sig_scan {
        const struct kstack_words *words;
        struct kstack_text text;
        __u32 n;
        bool stopped;
        __u64 h;
};

static long kstack_sig_word(__u32 i, void *ctx) {
        struct kstack_sig_scan *s = ctx;
        __u64 w;

        if (i >= s->n)
                return 1;
        barrier_var(i); /* the verifier must see this bound on its own */
        if (i >= KSTACK_MEMO_WORDS)
                return 1;
        w = s->words->w[i];
        if (w < s->text.start || w >= KSTACK_MEMO_TEXT_END)
                return 0;
        s->h = kstack_sig_mix(s->h, w, i);
        if (w >= s->text.stop_start && w < s->text.stop_end) {
                s->stopped = true;
                return 1;
        }
        return 0;
}

/* The signature of a stack whose live words are words->w[0..n) (the walk's
 * start first, up to the stack's top), walked by walker: its words in the
 * kernel's half with their places, up to and with the first in
 * do_syscall_64; without one, the depth n too. Never 0 (0: none). */
static __always_inline __u64 kstack_sig(const struct kstack_words *words, __u32 n, const struct kstack_text *text,
                                        enum kstack_walker walker) {
        struct kstack_sig_scan s = { .words = words, .text = *text, .n = n };

        s.h = kstack_sig_mix(0x6b737461636b6d65ULL, walker, 0);
        bpf_loop(KSTACK_MEMO_WORDS, kstack_sig_word, &s, 0);
        if (!s.stopped)
                s.h = kstack_sig_mix(s.h, n, KSTACK_MEMO_WORDS);
        return s.h ? s.h : 1;
}

/* The index among n words of a frame's place; n when it has none there. */
static __always_inline __u32 kstack_place_index(__u16 place, __u32 n) {
        __u32 back = place & ~KSTACK_PLACE_TOP;

        if (!(place & KSTACK_PLACE_TOP))
                return place < n ? place : n;
        return back >= 1 && back <= n ? n - back : n;
}

struct kstack_check {
        const struct kstack_words *words;
        const struct profd_frames *k; /* the copy: frames, and places after KSTACK_MEMO_FRAMES */
        __u32 n_words;
        bool ok;
};

static long kstack_check_frame(__u32 i, void *ctx) {
        struct kstack_check *c = ctx;
        const __u16 *places = (const __u16 *) &c->k->ips[KSTACK_MEMO_FRAMES];
        __u32 j;

        if (i >= c->k->n)
                return 1;
        barrier_var(i);
        if (i >= KSTACK_MEMO_FRAMES)
                return 1;
        if (places[i] == KSTACK_PLACE_NONE)
                return 0;
        j = kstack_place_index(places[i], c->n_words);
        /* a place past this stack's words is no place in it */
        if (j >= c->n_words) {
                c->ok = false;
                return 1;
        }
        barrier_var(j); /* the verifier must see the bound below on its own */
        if (j >= KSTACK_MEMO_WORDS || c->words->w[j] != c->k->ips[i]) {
                c->ok = false;
                return 1;
        }
        return 0;
}

/* Copies the memo's frames of sig into k, if every frame is where the walk
 * that made the entry found it among the n_words words of this stack.
 * The signature covers the words up to where its scan stopped; a stale
 * address in do_syscall_64 left in a frame below the real one stops it
 * early, and two paths that differ only above it share a signature: their
 * frames' places tell them apart. False: no entry, another path, or an
 * entry reused for another signature while it was copied. */
static __always_inline bool kstack_memo_get(__u64 sig, struct profd_frames *k, const struct kstack_words *words,
                                            __u32 n_words) {
        struct kstack_memo_entry *e = bpf_map_lookup_elem(&kstack_memo, &sig);
        struct kstack_check c = { .words = words, .k = k, .n_words = n_words, .ok = true };
        __u32 n;

        if (!e)
                return false;
        n = *(volatile __u32 *) &e->n;
        __builtin_memcpy(k->ips, e->ips, sizeof(e->ips));
        __builtin_memcpy(&k->ips[KSTACK_MEMO_FRAMES], e->place, sizeof(e->place));
        if (*(volatile __u64 *) &e->sig != sig || n == 0 || n > KSTACK_MEMO_FRAMES)
                return false;
        k->n = n;
        k->end = 0;
        bpf_loop(KSTACK_MEMO_FRAMES, kstack_check_frame, &c, 0);
        return c.ok;
}

struct kstack_place_scan {
        const struct kstack_words *words;
        struct kstack_memo_entry *e;
        __u64 stop_start, stop_end;
        __u32 n_words;
        __u32 i;        /* the next frame to find */
        __u32 unplaced; /* frames that may lie below the words, first ones only */
        bool top;       /* past the frame in do_syscall_64: places from the top */
};

/* Word j: the next frame's if it holds it; before any frame is placed, it
 * may be a later one's, up to unplaced frames on (those before it lie
 * below the words). */
static long kstack_place_word(__u32 j, void *ctx) {
        struct kstack_place_scan *s = ctx;
        __u32 i = s->i, at;
        __u64 w, ip;

        if (j >= s->n_words)
                return 1;
        barrier_var(j); /* the verifier must see this bound on its own */
        if (j >= KSTACK_MEMO_WORDS)
                return 1;
        w = s->words->w[j];
        if (i >= s->e->n)
                return 1;
        barrier_var(i);
        if (i >= KSTACK_MEMO_FRAMES)
                return 1;
        ip = s->e->ips[i];
        if (w != ip && i == 0) {
                /* nothing placed yet: a later frame, within unplaced */
                for (__u32 skip = 1; skip <= 2; skip++) {
                        if (skip > s->unplaced || skip >= s->e->n)
                                return 0;
                        if (w == s->e->ips[skip]) {
                                i = skip;
                                ip = w;
                                break;
                        }
                }
        }
        if (w != ip || i >= KSTACK_MEMO_FRAMES)
                return 0;
        /* opaque to the compiler, masked: the bound the verifier needs
         * (FRAMES is a power of 2) */
        at = i;
        barrier_var(at);
        at &= KSTACK_MEMO_FRAMES - 1;
        s->e->place[at] = s->top ? KSTACK_PLACE_TOP | (s->n_words - j) : j;
        if (ip >= s->stop_start && ip < s->stop_end)
                s->top = true;
        s->i = i + 1;
        return 0;
}

/* Remembers k, a walk's frames, under sig, with where each frame is among
 * the n_words words (found in order; the first unplaced ones, at most 2,
 * may lie below them: the program's own call of the walk). Not remembered
 * when another frame is not found, or k is longer than an entry. An entry
 * already there stays. */
static __always_inline void kstack_memo_put(__u64 sig, const struct profd_frames *k, struct kstack_words *words,
                                            __u32 n_words, const struct kstack_text *text, __u32 unplaced) {
        struct kstack_memo_entry *e = &words->e;
        struct kstack_place_scan s = { .words = words, .e = e, .stop_start = text->stop_start,
                                       .stop_end = text->stop_end, .n_words = n_words, .unplaced = unplaced };
        __u32 n = k->n;

        if (n == 0 || n > KSTACK_MEMO_FRAMES)
                return;
        e->sig = sig;
        e->n = n;
        e->pad = 0;
        __builtin_memcpy(e->ips, k->ips, sizeof(e->ips));
        __builtin_memset(e->place, 0xff, sizeof(e->place)); /* KSTACK_PLACE_NONE */
        bpf_loop(KSTACK_MEMO_WORDS, kstack_place_word, &s, 0);
        if (s.i == n)
                bpf_map_update_elem(&kstack_memo, &sig, e, BPF_NOEXIST);
}

/* Whether k (a hit) holds the n frames of a walk, ips, from the frame
 * first on (verify). */
static __always_inline bool kstack_memo_same(const struct profd_frames *k, const __u64 *ips, long n, __u32 first) {
        if (n != (long) k->n)
                return false;
        for (__u32 i = first; i < KSTACK_MEMO_FRAMES; i++) {
                if (i >= k->n)
                        break;
                if (k->ips[i] != ips[i])
                        return false;
        }
        return true;
}
