/* Maps and helpers shared by profd's BPF programs (oncpu, offcpu, proc). The
 * objects are linked into one (bpftool gen object): maps are declared __weak
 * here so every object sees the same map. Sizes are placeholders: the daemon
 * sets max_entries (and stack value sizes) from the machine before load. */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "profd.h"

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h */
#define EEXIST 17
#define ENOMEM 12
#define E2BIG 7

/* Which generation of counts_* and frames*_* the programs write: its
 * parity (GEN_MAPS). Defined in proc.bpf.c. Only the daemon changes it
 * (through the mmapped .bss), adding one at every flip, then waits for an
 * RCU grace period (see `barrier`) before it reads the other generation.
 * The whole value names one generation's maps between two drains: the
 * node cache (frames_store) keeps it with each node it remembers. */
extern __u32 generation __weak;
#define GEN_MAPS(gen) ((gen) & 1)

/* Aggregation, one map per generation: key -> samples (cpu) or ns. Sized
 * from frequency x CPUs x interval; a key that finds no room is counted in
 * PROFD_DROP_MAP_FULL. */
struct counts_map {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 1);
        __type(key, struct profd_sample_key);
        __type(value, __u64);
};
struct counts_map counts_0 SEC(".maps") __weak;
struct counts_map counts_1 SEC(".maps") __weak;

/* The sampler's log: its keys, one per sample, each counted 1, where the
 * counts map would take an insert per sample (its keys are mostly new:
 * the leaf is in them, PROFD_KEY_LEAF), i.e. a bucket, its lock, the free
 * list and an element, all cold at 49 Hz. Here a sample writes its CPU's
 * region head and the next slot. A region per CPU (only the sampler
 * writes it, and it does not interrupt itself: no lock) and generation
 * parity, region (GEN_MAPS(gen) * samples_log_cpus + cpu) of
 * samples_log_slots slots (struct profd_log_slot; the daemon sizes both,
 * daemon/collect/samplelog.c). The drain sums the regions of the old
 * generation into keys and counts and empties them. A full region (a
 * drain very late) or no log: the counts map takes the sample. */
extern __u32 samples_log_slots __weak;
extern __u32 samples_log_cpus __weak;
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct profd_log_slot);
} samples_log SEC(".maps") __weak;

/* Stack nodes (see "Stack nodes" in profd.h), one map per class and
 * generation: id -> node. Every sample and block refers to its stacks by
 * the id of their innermost node. Preallocated (the sampler runs in NMI
 * context), so the daemon sizes them from its kernel_memory budget (see
 * daemon/collect/mapsize.c); a node that finds no room in its class or a
 * larger one is counted in PROFD_DROP_STACK_MAP_FULL and its stack kept as
 * lost. */
#define DEFINE_FRAMES_MAP(K)                                     \
        struct frames##K##_map {                                 \
                __uint(type, BPF_MAP_TYPE_HASH);                 \
                __uint(max_entries, 1);                          \
                __type(key, __u64);                              \
                __type(value, struct profd_node##K);             \
        };                                                       \
        struct frames##K##_map frames##K##_0 SEC(".maps") __weak; \
        struct frames##K##_map frames##K##_1 SEC(".maps") __weak;
DEFINE_FRAMES_MAP(8)
DEFINE_FRAMES_MAP(16)
DEFINE_FRAMES_MAP(32)

/* Per-CPU scratch for stacks too large for the 512-byte BPF stack, one slot
 * per user so that programs which can interrupt each other never share one:
 * the sampler may run in NMI context in the middle of a scheduler hook.
 * A slot's scratch is its walk window (struct walk_window, below): the
 * frames, the walk's state and the node cache, one lookup. */
enum scratch_slot {
        SCRATCH_SWITCH_KERNEL,
        SCRATCH_SWITCH_USER,
        SCRATCH_WAKER_USER,
        SCRATCH_WAKER_KERNEL,
        SCRATCH_ONCPU_USER,
        SCRATCH_ONCPU_KERNEL,
        SCRATCH__MAX,
};
/* Cumulative counters and drop reasons (enum profd_counter), per CPU so the
 * hot paths need no atomics; the daemon sums them. One element: struct
 * profd_counters. */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct profd_counters);
} counters SEC(".maps") __weak;

/* Process announcements for the daemon. 256 KiB holds ~8000 events: more than
 * one drain interval of process births on a busy host. */
struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, 256 * 1024);
} events SEC(".maps") __weak;

/* tgid -> start of the instance already announced, so each process instance
 * is announced once. LRU: an evicted entry only costs a repeated event. The
 * daemon sizes it to pid_max, at most 64 Ki entries. */
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct profd_seen);
} seen SEC(".maps") __weak;

/* Unwind tables (see bpf/unwind.bpf.h). The daemon sizes the two arrays
 * before load, maps them into its memory and writes rows and mappings in
 * place; a process's entry in unwind_procs, updated last, publishes them.
 *
 * unwind_rows: the rows of every file's table, each file a slice.
 * max_entries = the setting unwind_memory / 8 (8 MiB: 1 Mi rows by default). */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct profd_unwind_row);
} unwind_rows SEC(".maps") __weak;

/* unwind_maps: every process's executable mappings, one slice each, sorted
 * by start. 32 Ki entries (1.25 MiB): a few hundred processes of a hundred
 * executable mappings each. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct profd_unwind_mapping);
} unwind_maps SEC(".maps") __weak;

/* unwind_procs: tgid -> the process's slice of unwind_maps. As many entries
 * as `seen`; not preallocated (most pids are never used). Whoever changes
 * it (the daemon; profd_exec, which deletes an entry) adds one to
 * unwind_epoch (defined in proc.bpf.c) after the change, atomically: a
 * walker may reuse what its last lookup found while the epoch is the same
 * (user_stack_unwind in unwind.bpf.h). */
extern __u32 unwind_epoch __weak;
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct profd_unwind_proc);
} unwind_procs SEC(".maps") __weak;

static __always_inline void counter_add(__u32 idx, __u64 n) {
        __u32 zero = 0;
        struct profd_counters *c = bpf_map_lookup_elem(&counters, &zero);

        /* the check where the verifier sees it: clang drops it when the
         * caller bounded idx already, on a register the access does not use */
        barrier_var(idx);
        if (c && idx < PROFD_COUNTER__MAX)
                c->v[idx] += n;
}


/* The node cache: the nodes frames_store stored lately, per CPU and
 * scratch slot (a program interrupted in the middle of storing a stack
 * must find its entries intact), in the slot's walk window (struct
 * walk_window): the BPF stack has no room for them. An entry is a node
 * stored under id in the generation gen (valid), at the index its hash
 * gives. A node equal to it in every field hashed (parent, n, end,
 * frames) has that id, and the node is in the map still (nothing deletes
 * nodes during a generation): no lookup and no insert. The sampler's
 * stacks without their leaf (PROFD_KEY_LEAF) repeat sample after sample
 * in a few shapes (stress-ng's callers: five); one memo of the last node
 * held only the shape of the sample before, and a miss cost a lookup in
 * the frames map, whose bucket and element are on pages of their own.
 * Direct-mapped: an entry is replaced by the next node of its index. */
#define NODE_CACHE_ENTRIES 16 /* VERIFIER_MASK(h, 15) in frames_store */
struct node_cache_entry {
        __u64 id;
        __u32 gen;
        __u32 valid;
        struct profd_node32 nd;
};

/* node_tryK: stores nd under id in framesK_<gen>, or finds it there.
 * 0: the id names nd's contents now. -EEXIST: the id holds another node
 * (a hash collision). Else the map's error: -E2BIG when it is full. The
 * comparison covers everything the id was hashed from. */
#define DEFINE_NODE_TRY(K)                                                                      \
        static __always_inline long node_try##K(__u32 gen, __u64 id, const struct profd_node32 *nd) { \
                void *map = GEN_MAPS(gen) ? (void *) &frames##K##_1 : (void *) &frames##K##_0;   \
                struct profd_node##K *v = bpf_map_lookup_elem(map, &id);                       \
                long err;                                                                       \
                                                                                                \
                if (!v) {                                                                       \
                        err = bpf_map_update_elem(map, &id, nd, BPF_NOEXIST);                   \
                        if (err != -EEXIST)                                                     \
                                return err;                                                     \
                        /* another CPU stored this id in between */                             \
                        v = bpf_map_lookup_elem(map, &id);                                      \
                        if (!v)                                                                 \
                                return -EEXIST;                                                 \
                }                                                                               \
                if (v->h.parent != nd->h.parent || v->h.n != nd->h.n || v->h.end != nd->h.end)  \
                        return -EEXIST;                                                         \
                for (__u32 i = 0; i < K; i++) {                                                 \
                        if (i >= nd->h.n)                                                       \
                                break;                                                          \
                        if (v->ips[i] != nd->ips[i])                                            \
                                return -EEXIST;                                                 \
                }                                                                               \
                return 0;                                                                       \
        }
DEFINE_NODE_TRY(8)
DEFINE_NODE_TRY(16)
DEFINE_NODE_TRY(32)

/* Stores the node in the smallest class that holds its frames, else in
 * the next larger one with room, or whose slot for it is not taken by
 * another node: lookups go through the classes in the same order, so a
 * node is found where it was stored. Returns its id, or PROFD_STACK_LOST
 * (counted) when no class took it. */
static __always_inline __u64 node_put(__u32 gen, const struct profd_node32 *nd, __u64 h) {
        __u32 n = nd->h.n;

        h &= PROFD_ID_HASH_MASK;
        if (n <= PROFD_CLASS_FRAMES(PROFD_CLASS_8) &&
            node_try8(gen, h | ((__u64) PROFD_CLASS_8 << PROFD_ID_CLASS_SHIFT), nd) == 0)
                return h | ((__u64) PROFD_CLASS_8 << PROFD_ID_CLASS_SHIFT);
        if (n <= PROFD_CLASS_FRAMES(PROFD_CLASS_16) &&
            node_try16(gen, h | ((__u64) PROFD_CLASS_16 << PROFD_ID_CLASS_SHIFT), nd) == 0)
                return h | ((__u64) PROFD_CLASS_16 << PROFD_ID_CLASS_SHIFT);
        if (node_try32(gen, h | ((__u64) PROFD_CLASS_32 << PROFD_ID_CLASS_SHIFT), nd) == 0)
                return h | ((__u64) PROFD_CLASS_32 << PROFD_ID_CLASS_SHIFT);
        counter_add(PROFD_DROP_STACK_MAP_FULL, 1);
        return PROFD_STACK_LOST;
}

/* Copies bytes written by bpf_get_stack/bpf_get_task_stack into n; on error
 * counts it and returns false. */
static __always_inline bool frames_set(struct profd_frames *f, long bytes, __u32 error_counter) {
        f->end = 0;
        if (bytes <= 0) {
                f->n = 0;
                counter_add(error_counter, 1);
                return false;
        }
        f->n = bytes / sizeof(__u64);
        return true;
}

/* A frame pointer further than this above the stack pointer is not one: the
 * largest thread stacks are a few MiB. */
#define USER_STACK_SPAN (64ULL << 20)
/* The user stack is read in windows, never across a page boundary. Each read
 * costs a fixed ~100 ns here, more than copying a few hundred bytes more
 * (docs/performance.md), so the fewer reads the better: a caller that knows
 * how far the chain reached the last time (the off-CPU walk keeps it per
 * thread) reads that much at once, up to WALK_WINDOW; otherwise WALK_FIRST
 * bytes per read. Only how much is read at a time depends on the hint, never
 * which frames are found. */
#define WALK_FIRST 512
#define WALK_WINDOW 2048
/* The buffer: the sampler's span read (span_read in bpf/unwind.bpf.h)
 * reads up to this much at once into the same window. In the walk state's
 * map value, not a map of its own: a separate per-CPU buffer was slower
 * (a further map lookup per word, further pages), -2% against -7%. */
#define WALK_SPAN 8192

/* The user walk between bpf_loop iterations (bpf/unwind.bpf.h). Kept in
 * the map value, not on the BPF stack: the verifier tracks no values in
 * map memory, so every iteration starts from the same state and it
 * verifies the frame step once, not once per combination of constants. */
struct ustack_state {
        __u64 ip, sp, bp;       /* registers of the frame being unwound */
        __u64 win_base;         /* user address of the window's first byte */
        __u64 win_len;          /* bytes of the window read; 0: none */
        __u32 maps_off, maps_n; /* the process's mappings, if tables are used (p_version) */
        /* the mapping of the last lookup: frames mostly stay in one file */
        __u64 m_start, m_end, m_bias;
        __u32 m_rows_off, m_rows_n, m_kind;
        __u32 n;                /* frames recorded */
        __u8 end;               /* enum profd_stack_end, END_WALKING while walking */
        __u8 fp_only;           /* no unwind entry: frame pointers all the way */
        __u8 exact_ip;          /* ip is not a return address (frame 0, after a signal frame) */
        __u8 m_index_shift;     /* the mapping's table index (profd_unwind_mapping.index_shift) */
        __u8 p_announced;       /* the entry (p_version) has the instance's exact start: see
                                 * user_stack_unwind */
        __u8 pad[3];
        __u64 version;          /* the process's profd_unwind_proc.version; 0: no row cache */
        __u32 r_next;           /* find_row: the index of the first row above the pc looked up */
        /* the walk memo (sampler only, bpf/unwind.bpf.h) */
        __u8 memo_slot;         /* the slot of this thread */
        __u8 memo_ok;           /* the slot holds a walk of this version */
        __u8 memo_dirty;        /* a frame missed it: rewrite it */
        __u8 memo_pos;          /* where the next frame is looked for first */
        __u32 memo_n;           /* frames of this walk in memo_cur */
        __u32 pad2;
        __u64 read_hi;          /* the end of the highest stack word read by this walk */
        /* what the last lookup in unwind_procs found (user_stack_unwind):
         * maps_off and maps_n above, and */
        __u64 p_start;          /* for the process instance (tgid, start) */
        __u32 p_tgid;           /* 0: nothing (no walk was of pid 0) */
        __u32 p_epoch;          /* unwind_epoch before it */
        __u64 p_version;        /* 0: no entry of this instance */
};

/* One frame of the walk memo (bpf/unwind.bpf.h): a row cache tag and its
 * rule. */
#define WALK_MEMO_DEPTH 32
struct walk_memo_frame {
        __u64 tag;
        __u16 cfa_off;
        __u8 kind;
        __s8 rbp_off;
        __u32 pad;
};

struct walk_window {
        struct ustack_state s;
        struct walk_memo_frame memo_cur[WALK_MEMO_DEPTH]; /* this walk's frames, for the memo */
        struct profd_node32 stage; /* frames_store's node being stored */
        struct node_cache_entry node[NODE_CACHE_ENTRIES]; /* frames_store's */
        struct profd_frames frames; /* the slot's stack (scratch_get) */
        union {
                __u8 bytes[WALK_SPAN];
                __u64 words[WALK_SPAN / 8]; /* one load per word, not eight byte loads */
        };
};

/* Per-CPU windows, one per scratch slot (enum scratch_slot). */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, SCRATCH__MAX);
        __type(key, __u32);
        __type(value, struct walk_window);
} walk_windows SEC(".maps") __weak;

/* The slot's frames: stacks are walked and stored from there. */
static __always_inline struct profd_frames *scratch_get(__u32 slot) {
        struct walk_window *w = bpf_map_lookup_elem(&walk_windows, &slot);

        return w ? &w->frames : NULL;
}

/* v & mask where the verifier sees it: clang drops a mask it proves
 * useless after a bounds check, and the verifier may not have followed
 * that check on the register the index ends up in. */
#define VERIFIER_MASK(v, mask)                            \
        ({                                                \
                __u64 __v = (v);                          \
                asm volatile("%0 &= " #mask : "+r"(__v)); \
                __v;                                      \
        })

/* Does the cache entry e hold the node nd of the generation gen? Both in
 * map memory: the verifier follows the comparison once, not once per
 * count of frames it could know from the caller. */
static __always_inline bool node_cache_hit(const struct node_cache_entry *e, __u32 gen,
                                           const struct profd_node32 *nd) {
        if (!e->valid || e->gen != gen || e->nd.h.parent != nd->h.parent || e->nd.h.n != nd->h.n ||
            e->nd.h.end != nd->h.end)
                return false;
        for (__u32 i = 0; i < PROFD_NODE_CHUNK; i++) {
                if (i >= nd->h.n)
                        break;
                if (e->nd.ips[i] != nd->ips[i])
                        return false;
        }
        return true;
}

/* Stores a stack, the frames of f from index first (0, or 1 when the
 * caller keeps the leaf apart), as its chain of nodes, outermost first
 * (see profd.h), and returns its id: that of the innermost node.
 * PROFD_STACK_LOST (counted) if a node found no room; an empty stack is
 * PROFD_STACK_NONE. slot is the caller's scratch slot. A node is built in
 * the slot's stage, and one found in the node cache is not looked up. A
 * BPF subprogram: one copy of its code for the kernel and the user stack
 * (see win_read in unwind.bpf.h on cold code). */
static __noinline __attribute__((unused)) __u64 frames_store(__u32 gen, struct profd_frames *f, __u32 slot,
                                                             __u32 first) {
        struct walk_window *w = bpf_map_lookup_elem(&walk_windows, &slot);
        struct profd_node32 *nd;
        __u64 parent = PROFD_NODE_ROOT;
        __u32 top; /* frames [first, first + top) are still to store */

        if (f->n <= first)
                return PROFD_STACK_NONE;
        if (!w) {
                counter_add(PROFD_DROP_STACK_MAP_FULL, 1);
                return PROFD_STACK_LOST;
        }
        nd = &w->stage;
        first &= 1;
        top = f->n - first;
        if (top > PROFD_MAX_FRAMES - first)
                top = PROFD_MAX_FRAMES - first;
        for (__u32 k = 0; k < (PROFD_MAX_FRAMES + PROFD_NODE_CHUNK - 1) / PROFD_NODE_CHUNK; k++) {
                /* full nodes from the outermost frame, then the rest */
                __u32 start = top > PROFD_NODE_CHUNK ? top - PROFD_NODE_CHUNK : 0;
                __u32 cnt = top - start;
                __u8 end = start == 0 ? f->end : 0;
                __u64 h = 0xcbf29ce484222325ULL ^ cnt ^ ((__u64) end << 32);
                struct node_cache_entry *e;

                h = (h ^ parent) * 0x100000001b3ULL;
                h ^= h >> 29;
                nd->h.parent = parent;
                nd->h.n = cnt;
                nd->h.end = end;
                for (__u32 i = 0; i < PROFD_NODE_CHUNK; i++) {
                        __u32 idx = first + start + i;
                        __u64 ip;

                        if (i >= cnt || idx >= PROFD_MAX_FRAMES)
                                break;
                        /* index here, after the check: clang would else
                         * step a pointer the verifier cannot bound */
                        barrier_var(idx);
                        ip = f->ips[idx];
                        nd->ips[i] = ip;
                        h = (h ^ ip) * 0x100000001b3ULL;
                        h ^= h >> 29;
                }
                e = &w->node[VERIFIER_MASK(h, 15)];
                if (!node_cache_hit(e, gen, nd)) {
                        __u64 id = node_put(gen, nd, h);

                        if (id == PROFD_STACK_LOST)
                                return id;
                        e->valid = 0; /* e->nd changes below */
                        e->nd.h = nd->h;
                        for (__u32 i = 0; i < PROFD_NODE_CHUNK; i++) {
                                if (i >= nd->h.n)
                                        break;
                                e->nd.ips[i] = nd->ips[i];
                        }
                        e->id = id;
                        e->gen = gen;
                        e->valid = 1;
                }
                if (start == 0)
                        return e->id;
                parent = e->id;
                top = start;
        }
        return PROFD_STACK_LOST; /* not reached: 127 frames make at most 4 nodes */
}

/* Walks the user stack of the current task (which must be `task`) by frame
 * pointers, from the registers saved when it entered the kernel, into f.
 * Unlike the kernel's walker it follows a frame pointer only if it points
 * into the stack above the stack pointer, each next one higher still: code
 * built without frame pointers uses the register for data, and reading such
 * a value as an address mostly faults, which costs microseconds. The walk
 * ends at the first frame that is not plausible. slot picks the window.
 * Returns false (and counts it) if there are no user registers. */
static __always_inline bool user_stack_walk(struct task_struct *task, struct profd_frames *f, __u32 slot,
                                            __u16 *span) {
        struct pt_regs *regs = (struct pt_regs *) bpf_task_pt_regs(task);
        struct walk_window *w = bpf_map_lookup_elem(&walk_windows, &slot);
        __u64 ip, sp, fp, lo, first_fp, base = 0, len = 0, cap = WALK_FIRST;

        f->n = 0;
        f->end = PROFD_END_COMPLETE;
        if (!regs || !w) {
                counter_add(PROFD_DROP_USER_STACK_ERROR, 1);
                return false;
        }
        /* direct loads from the BTF-typed registers: no helper call */
        ip = PT_REGS_IP(regs);
        sp = PT_REGS_SP(regs);
        fp = PT_REGS_FP(regs);
        if (ip == 0) {
                counter_add(PROFD_DROP_USER_STACK_ERROR, 1);
                return false;
        }
        f->ips[0] = ip;
        f->n = 1;
        lo = sp;
        first_fp = fp;
        /* the same cap for every read of this walk: a cap that changed
         * between iterations would multiply the verifier's states */
        if (span && *span > WALK_FIRST)
                cap = *span <= WALK_WINDOW ? *span : WALK_WINDOW;
        for (__u32 i = 1; i < PROFD_MAX_FRAMES; i++) {
                __u64 off, next, ret;

                if (fp < lo || fp - sp >= USER_STACK_SPAN || (fp & 7))
                        break;
                if (fp < base || fp + 16 > base + len) {
                        /* refill: from fp to the end of its page, at most a window */
                        len = 4096 - (fp & 4095);
                        if (len < 16)
                                len = 16; /* a frame straddling two pages */
                        if (len > cap)
                                len = cap;
                        if (len > WALK_WINDOW)
                                len = WALK_WINDOW;
                        base = fp;
                        if (bpf_probe_read_user(w->bytes, len, (void *) fp))
                                break;
                }
                off = fp - base;
                if (off > WALK_WINDOW - 16)
                        break;
                next = *(__u64 *) &w->bytes[off];
                ret = *(__u64 *) &w->bytes[off + 8];
                if (ret < 4096)
                        break; /* not a code address: the end of the chain */
                f->ips[i] = ret;
                f->n = i + 1;
                lo = fp + 16;
                fp = next;
        }
        if (span)
                *span = lo > first_fp && lo - first_fp <= WALK_WINDOW ? lo - first_fp : 0;
        return true;
}

static __always_inline __u64 process_start_ns(struct task_struct *task) {
        /* direct loads through the BTF-typed pointer (fault-guarded, CO-RE
         * relocated): cheaper than a bpf_probe_read_kernel call per pointer */
        return task->group_leader->start_boottime;
}

static __always_inline void *counts_map(__u32 gen) {
        return GEN_MAPS(gen) ? (void *) &counts_1 : (void *) &counts_0;
}

/* Adds n to the value of key, inserting it if new. Returns true if the key
 * was there already (counted before in this generation). A caller whose
 * keys are mostly new (the sampler's: the leaf is in them) says so
 * (likely_new): the insertion is tried first, without the lookup that
 * would miss. */
static __always_inline bool count_key(__u32 gen, struct profd_sample_key *key, __u64 n, bool likely_new) {
        void *counts = counts_map(gen);
        __u64 *v = likely_new ? NULL : bpf_map_lookup_elem(counts, key);
        long err;

        if (v) {
                __sync_fetch_and_add(v, n);
                return true;
        }
        err = bpf_map_update_elem(counts, key, &n, BPF_NOEXIST);
        if (err == -EEXIST) {
                /* there before (likely_new), or another CPU inserted it in
                 * between: counted before, announced by whoever inserted it */
                v = bpf_map_lookup_elem(counts, key);
                if (v)
                        __sync_fetch_and_add(v, n);
                return true;
        } else if (err) {
                counter_add(PROFD_DROP_MAP_FULL, 1);
        }
        return false;
}

/* Logs key as one sample in the sampler's log; false if there is no log
 * or the CPU's region is full (then the caller counts it in the counts
 * map). Only the sampler calls it. */
static __always_inline bool log_sample(__u32 gen, const struct profd_sample_key *key) {
        __u32 slots = *(volatile __u32 *) &samples_log_slots;
        __u32 head_idx, idx;
        struct profd_log_slot *h, *r;
        __u64 n;

        if (slots < 2)
                return false;
        head_idx = (GEN_MAPS(gen) * samples_log_cpus + bpf_get_smp_processor_id()) * slots;
        h = bpf_map_lookup_elem(&samples_log, &head_idx);
        if (!h)
                return false;
        n = h->n;
        if (n >= slots - 1)
                return false;
        idx = head_idx + 1 + (__u32) n;
        r = bpf_map_lookup_elem(&samples_log, &idx);
        if (!r)
                return false;
        r->key = *key;
        h->n = n + 1;
        return true;
}

/* Tells the daemon about a process instance; false if the ring buffer was full
 * (counted), so the caller can try again on a later event. Out of line:
 * rare, and its code (the comm's copy) would else sit between a sample's
 * common paths, which at 49 Hz find the program's code cold. */
static __noinline bool announce(__u32 type, struct task_struct *task, __u32 tgid, __u64 start_ns) {
        struct profd_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
        if (!e) {
                counter_add(PROFD_DROP_RINGBUF_FULL, 1);
                return false;
        }
        e->type = type;
        e->tgid = tgid;
        e->start_ns = start_ns;
        BPF_CORE_READ_STR_INTO(&e->comm, task, group_leader, comm);
        bpf_ringbuf_submit(e, 0);
        return true;
}

static __always_inline void announce_if_new(struct task_struct *task, __u32 tgid, __u64 start_ns) {
        struct profd_seen *s = bpf_map_lookup_elem(&seen, &tgid);
        struct profd_seen v = { .start_ns = start_ns };

        if (s && s->start_ns == start_ns)
                return;
        if (announce(PROFD_EVENT_NEW_PROCESS, task, tgid, start_ns))
                bpf_map_update_elem(&seen, &tgid, &v, BPF_ANY);
}
