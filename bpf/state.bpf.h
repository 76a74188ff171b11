/* The layouts of the programs' own state in maps, which the daemon never
 * reads (the ABI is profd.h): the scratch slots and their walk window (the
 * walk's state between bpf_loop iterations, the node cache), the entries of
 * the sampler's caches (cache.bpf.h says what each holds and why), and
 * offcpu's per-thread state. maps.bpf.h defines the maps that hold them. */
#pragma once

#include "vmlinux.h"

#include "profd.h"

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
        __u8 m_pad;
        __u8 p_announced;       /* the entry (p_version) has the instance's exact start: see
                                 * user_stack_unwind */
        /* the runtime walk (bpf/runtime.bpf.h) of this walk, in the lines
         * every walk touches: the rest of its state (below) only for a
         * process with a runtime */
        __u8 rt_state;          /* enum rt_state */
        __u8 rt_replace;        /* the native frame at ips[n - 1] is the loop's: the first
                                 * pseudo-frame takes its place */
        __u8 rt_met;            /* HotSpot: this walk met the code cache (counted once) */
        __u64 version;          /* the process's profd_unwind_proc.version; 0: no caches */
        __u32 cache;            /* this walk's element of row_cache (enum walk_cache) */
        /* the walk memo (bpf/cache.bpf.h) */
        __u8 memo_slot;         /* the slot of this thread */
        __u8 memo_ok;           /* the slot holds a walk of this version */
        __u8 memo_dirty;        /* a frame missed it: rewrite it */
        __u8 memo_pos;          /* where the next frame is looked for first */
        __u32 memo_n;           /* frames of this walk in memo_cur */
        __u32 rt_slot;          /* the entry's runtime (struct profd_unwind_proc.rt_slot,
                                 * kept with p_version); 0: none */
        __u64 read_hi;          /* the end of the highest stack word read by this walk */
        /* what the last lookup in unwind_procs found (user_stack_unwind):
         * maps_off and maps_n above, and */
        __u64 p_start;          /* for the process instance (tgid, start) */
        __u32 p_tgid;           /* 0: nothing (no walk was of pid 0) */
        __u32 p_epoch;          /* unwind_epoch before it */
        __u64 p_version;        /* 0: no entry of this instance */
        /* with rt_slot: the entry's runtime (struct profd_unwind_proc.rt_*),
         * kept with p_version, and this walk's */
        __u64 rt_lo, rt_hi, rt_cold_lo, rt_cold_hi, rt_bias;
        __u32 rt_frames;        /* pseudo-frames emitted */
        __u64 rt_frame;         /* the runtime's next frame to emit (CPython: _PyInterpreterFrame *) */
        __u64 fsbase;           /* the thread pointer (read when the process has a runtime) */
        __u64 r13;              /* the leaf's r13 (HotSpot's interpreter keeps its bcp there) */
        /* HotSpot: the JVM's name strings of nmethods and of the
         * interpreter, as its blobs point to them (static strings of
         * libjvm: a blob naming one of these needs no read of its name),
         * for the process of p_tgid, p_start; 0: not met yet */
        __u64 hs_name_nmethod, hs_name_interp;
        /* the runtime's frame being read (one read per frame) */
        union {
                __u8 rt_buf[136];
                __u64 rt_words[17];
        };
};

/* The runtime walk's state (struct ustack_state.rt_state). */
enum rt_state {
        RT_IDLE = 0,            /* native; the next loop frame starts (or continues) the chain */
        RT_EMIT = 1,            /* emitting the frames of one loop frame */
        RT_OFF = 2,             /* the runtime cannot be walked in this walk: native only */
};

/* The code objects announced (maps.bpf.h, runtime_seen). */
#define RUNTIME_SEEN_SLOTS 1024
struct runtime_seen {
        __u64 tag[RUNTIME_SEEN_SLOTS];
};

/* The blobs HotSpot's walker found through a code heap's segment map
 * (maps.bpf.h, hotspot_blobs): per CPU, direct-mapped by a tag of the
 * process and the pc. An entry is a hint: the blob's head is read and
 * checked again on every use (bpf/hotspot.bpf.h, hs_blob_head). */
#define HOTSPOT_BLOB_SLOTS 256
struct hotspot_blob_entry {
        __u64 tag;      /* rt_seen_tag of the pc; 0: empty */
        __u64 blob;
        __u64 name;     /* the blob's name pointer when it was found */
        __u64 kind;     /* the name's first 8 bytes */
};

struct hotspot_blobs {
        struct hotspot_blob_entry e[HOTSPOT_BLOB_SLOTS];
};

/* One frame of the walk memo (bpf/cache.bpf.h): a row cache tag and its
 * rule. */
#define WALK_MEMO_DEPTH 32
struct walk_memo_frame {
        __u64 tag;
        __u16 cfa_off;
        __u8 kind;
        __s8 rbp_off;
        __u32 pad;
};

/* An entry of the node cache (cache.bpf.h): a node stored under id in the
 * generation gen (valid), at the index its hash gives. */
#define NODE_CACHE_ENTRIES 16 /* VERIFIER_MASK(h, 15) in frames_store */
struct node_cache_entry {
        __u64 id;
        __u32 gen;
        __u32 valid;
        struct profd_node32 nd;
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

#if defined(__TARGET_ARCH_x86)

/* The row cache (cache.bpf.h): 128 sets of one cache line, two ways, the
 * newer first. */
#define ROW_CACHE_SETS 128
struct row_cache_entry {
        __u64 tag;     /* ip | exact_ip << 63 (user addresses are below 2^63) */
        __u64 version; /* 0: empty (versions start at 1) */
        __u16 cfa_off; /* the row's rule, as in struct profd_unwind_row */
        __u8 kind;     /* PROFD_UNWIND_GAP: a frame-pointer step */
        __s8 rbp_off;
        __u32 pad[3];  /* a set is one 64-byte line */
};

struct row_cache_set {
        struct row_cache_entry way[2];
};

/* The leaf cache (cache.bpf.h): sets by version, two ways. */
#define LEAF_CACHE_SETS 16
struct leaf_cache_entry {
        __u64 version; /* 0: empty */
        __u64 lo, hi;  /* exact ips with this rule */
        __u16 cfa_off; /* the rule, as in row_cache_entry */
        __u8 kind;
        __s8 rbp_off;
        __u32 pad;
};

struct leaf_cache_set {
        struct leaf_cache_entry way[2];
};

/* The walk memo (cache.bpf.h): a slot per tid hash. */
#define WALK_MEMO_SLOTS 16 /* VERIFIER_MASK(s->memo_slot, 15) in walk_memo_slot */
struct walk_memo_slot {
        __u64 version; /* 0: empty */
        __u32 n;       /* frames in f */
        __u32 pad;
        __u64 read_hi; /* the last walk's s->read_hi: a hint, see span_read */
        struct walk_memo_frame f[WALK_MEMO_DEPTH]; /* VERIFIER_MASK(j, 31) in walk_memo_hit */
};

struct walk_memo {
        struct walk_memo_slot slot[WALK_MEMO_SLOTS];
};

/* The walkers that have caches of their own (the key of row_cache): a
 * program that interrupts another on the same CPU must not find an entry
 * the other half wrote, and these can (the sampler runs from the timer
 * interrupt, or an NMI, over anything; a wake-up from an interrupt runs
 * profd_waking within profd_switch_done), while a walker never interrupts
 * itself (a tracing program does not run nested in its own run). */
enum walk_cache {
        WALK_CACHE_ONCPU,       /* the sampler (SCRATCH_ONCPU_USER) */
        WALK_CACHE_SWITCH,      /* the block's own stack (SCRATCH_SWITCH_USER) */
        WALK_CACHE_WAKER,       /* its waker's (SCRATCH_WAKER_USER) */
        WALK_CACHE__MAX,
};

/* The row cache, the leaf cache and the walk memo: one map value, one
 * lookup and one allocation for the three. */
struct row_cache {
        struct row_cache_set set[ROW_CACHE_SETS];
        struct leaf_cache_set leaf[LEAF_CACHE_SETS];
        struct walk_memo memo;
};

#endif

/* Per-thread state between switch-out and switch-in. */
struct profd_task {
        __u64 switch_out_ns;   /* 0: on a CPU, or its block already counted */
        __u8 state;            /* enum profd_state at switch-out */
        __u8 woken;            /* its waker was counted for this block */
        __u8 user_error;       /* the user stack walk failed (walk at switch-out) */
        __u8 pad;
        /* offcpu_sample's draw for this block, in us, 1 to the setting; 0:
         * not drawn yet. The wake-up and the switch-in share it, so a block
         * whose waker was walked is walked too. */
        __u32 sample_us;
};

/* A kept block between sched_switch (kernel stack, in the scratch slot
 * SCRATCH_SWITCH_KERNEL) and sched_exit_tp on the same CPU (user stack,
 * counting). Nothing but NMIs runs in between, and the sampler uses
 * other slots. The generation is read once, at sched_exit_tp, so the key
 * and both stacks land in the same one. */
struct offcpu_park {
        __u32 tid;             /* 0: nothing parked */
        __u32 tgid;
        __u64 start_ns, cgroup_id;
        __u64 weight;          /* the time counted (and logged): the block's, or offcpu_sample's */
        __u64 end_ns;          /* the switch-in: the block's end (the off-CPU log) */
        __u8 state;
        __u8 kernel_error;     /* no kernel stack: PROFD_STACK_LOST */
};
