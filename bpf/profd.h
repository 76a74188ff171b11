/* The ABI between profd's BPF programs and the daemon: every struct and
 * constant both sides read. Fixed-width types only; layouts are asserted so a
 * change on one side can't silently misread the other. Treat it like a wire
 * format: append, never reorder. */
#ifndef PROFD_BPF_ABI_H
#define PROFD_BPF_ABI_H

#ifdef __bpf__
/* vmlinux.h provides __u8..__u64 */
#else
#include <linux/types.h>
#endif

/* What a sample's value measures. */
enum profd_kind {
        PROFD_KIND_CPU = 0,    /* value: number of timer samples */
        PROFD_KIND_OFFCPU = 1, /* value: nanoseconds the thread was off the CPU */
        PROFD_KIND_WAKEUP = 2, /* value: nanoseconds of blocked time the waker ended */
};

/* Task state at switch-out, for off-CPU kinds (0 for cpu). */
enum profd_state {
        PROFD_STATE_NONE = 0,
        PROFD_STATE_RUNNING = 1,        /* R: preempted, waiting for a CPU */
        PROFD_STATE_SLEEPING = 2,       /* S: interruptible sleep */
        PROFD_STATE_DISK = 3,           /* D: uninterruptible (usually I/O) */
        PROFD_STATE_STOPPED = 4,        /* T: stopped or traced */
        PROFD_STATE_IDLE = 5,           /* I: idle kernel thread (D + NOLOAD) */
        PROFD_STATE_OTHER = 6,
};

/* Stacks in profd_sample_key are stack ids: the id of the innermost node of
 * the stack's chain (see "Stack nodes" below) in the maps of the same
 * generation as the key. (Not ids of a kernel stack map: a blocked thread's
 * user stack is taken at switch-out, possibly generations before it is
 * counted.) Ids never take the sentinel values: their class bits are never
 * 3. */
#define PROFD_STACK_NONE (~0ULL)       /* nothing to walk: kernel thread, or user mode */
#define PROFD_STACK_LOST (~0ULL - 1)   /* walk failed or its map slot was taken; counted */

/* Frames per stack walked (scratch and per-task storage): the kernel's
 * default perf_event_max_stack. */
#define PROFD_MAX_FRAMES 127

/* --- Stack nodes (BPF -> daemon) -----------------------------------------
 * A stack is stored by its real depth, as a chain of nodes: its outermost
 * frames in full nodes of PROFD_NODE_CHUNK frames, counted from the
 * outermost frame (so stacks that share their outer frames share those
 * nodes, whatever their depth), then one innermost node of the remaining 1
 * to PROFD_NODE_CHUNK frames. Each node points to the next outer one
 * (parent). A node lives in the map of the smallest class that holds its
 * frames (8, 16 or 32 frames), or a larger one when that is full:
 * frames<class>_<gen>, keyed by its id.
 *
 * An id is a 62-bit hash of the node's contents (frames, count, end,
 * parent) with the class of the map holding it in the top 2 bits, so ids of
 * different maps never meet. A node is stored only if its id is free or
 * holds the same contents (compared in full), so an id names one node
 * and, through its parents, one stack: a hash collision is detected, the
 * stack becomes PROFD_STACK_LOST and is counted (PROFD_DROP_STACK_MAP_FULL:
 * its slot was taken). */
#define PROFD_NODE_CHUNK 32
enum profd_stack_class {
        PROFD_CLASS_8 = 0,
        PROFD_CLASS_16 = 1,
        PROFD_CLASS_32 = 2,
        PROFD_CLASS__MAX,
};
#define PROFD_CLASS_FRAMES(c) (8u << (c))
#define PROFD_ID_CLASS_SHIFT 62
#define PROFD_ID_HASH_MASK ((1ULL << PROFD_ID_CLASS_SHIFT) - 1)
#define PROFD_ID_CLASS(id) ((unsigned) ((id) >> PROFD_ID_CLASS_SHIFT))
/* parent of an outermost node */
#define PROFD_NODE_ROOT PROFD_STACK_NONE

struct profd_node_head {
        __u64 parent;          /* id of the next outer node, PROFD_NODE_ROOT for the outermost */
        __u32 n;               /* frames in this node, 1 to its class's */
        __u8 end;              /* innermost node of a user stack: enum profd_stack_end; else 0 */
        __u8 pad[3];
};
/* Values of frames8_<gen>, frames16_<gen>, frames32_<gen>: frames
 * innermost first, as in profd_frames. */
struct profd_node8 {
        struct profd_node_head h;
        __u64 ips[8];
};
struct profd_node16 {
        struct profd_node_head h;
        __u64 ips[16];
};
struct profd_node32 {
        struct profd_node_head h;
        __u64 ips[32];
};

/* Key of the aggregation maps (counts_0 / counts_1). One entry per distinct
 * (process instance, thread, cgroup, stacks, kind, state, peer). */
struct profd_sample_key {
        __u64 start_ns;        /* process start, boot-time ns: identity with tgid */
        __u64 cgroup_id;       /* cgroup v2 id of the thread */
        __u64 user_stack;      /* see PROFD_STACK_* above */
        __u64 kernel_stack;
        __u32 tgid;
        __u32 tid;
        union {
                __u32 peer_tid; /* wakeup: the thread whose blocked time was ended */
                __u32 leaf_lo;  /* cpu: the user stack's leaf, see PROFD_KEY_LEAF */
        };
        __u8 kind;             /* enum profd_kind */
        __u8 state;            /* enum profd_state */
        __u16 leaf_hi;
};

/* The sampler's user leaf (the interrupted ip) in the key, not in the
 * stack: the leaf differs almost every sample while its callers do not,
 * so the stack's nodes (its frames from the leaf's caller out) are stored
 * once, and a sample mostly finds them in the per-CPU node cache (see
 * frames_store in bpf/sample.bpf.h) instead of inserting a new node. The
 * daemon puts the leaf back in front of the stack at the drain. 0: no
 * leaf apart (other kinds; a stack of one frame; an ip of 48 bits or
 * more), the stack holds every frame. */
#define PROFD_KEY_LEAF(k) ((__u64) (k)->leaf_lo | (__u64) (k)->leaf_hi << 32)
#define PROFD_KEY_LEAF_MAX (1ULL << 48)

/* A slot of the sampler's log (samples_log in bpf/maps.bpf.h): a region
 * per CPU and generation, of samples_log_slots slots, the first its head
 * (the number of keys after it), then one key per sample, counted 1, with
 * the sample's time (the timeline, issue 44). In the slot, not in a map
 * beside it: the sampler writes the slot it has looked up already, where a
 * parallel array of times would cost a second lookup per sample. */
struct profd_log_slot {
        union {
                struct profd_sample_key key;
                __u64 n;
        };
        __u64 time_ns;  /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) of the sample; 0 in the head */
};

/* A slot of the off-CPU log (offcpu_log in bpf/maps.bpf.h): laid out like
 * the sampler's log, a region per CPU (the CPU the block ended on) and
 * generation, of offcpu_log_slots slots, the first its head (n: blocks
 * after it), then one off-CPU block each, as counted in the counts map
 * (the same key, which still holds the block's time: the log adds when,
 * it takes nothing away). Only blocks of at least offcpu_timeline_min_ns
 * are logged (the timeline of off-CPU blocks, issue 44). */
struct profd_block_slot {
        union {
                struct profd_sample_key key;
                __u64 n;
        };
        __u64 end_ns;          /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) at the switch-in; 0 in the head */
        __u64 duration_ns;     /* time off the CPU: the block began at end_ns - duration_ns */
};

/* A stack, innermost frame first, as walked: per-task storage and per-CPU
 * scratch (stored as nodes, above). */
struct profd_frames {
        __u32 n;
        __u8 end;              /* user stacks: enum profd_stack_end (part of the hash); kernel: 0 */
        __u8 pad[3];
        __u64 ips[PROFD_MAX_FRAMES];
};

/* How a user stack walk ended. Complete: an outermost-frame row (_start,
 * thread start), a zero return address, or a frame-pointer chain's end
 * (rbp == 0). Every other end is a truncation, counted in the
 * PROFD_TRUNC_* counter of the same order. */
enum profd_stack_end {
        PROFD_END_COMPLETE = 0,
        PROFD_END_NO_PROCESS = 1,  /* the process has no unwind entry yet */
        PROFD_END_PENDING = 2,     /* the mapping's table is not built yet */
        PROFD_END_NO_MAPPING = 3,  /* an ip in no mapping the daemon knows (dlopen since) */
        PROFD_END_UNSUPPORTED = 4, /* an unwind row BPF cannot evaluate */
        PROFD_END_READ_FAULT = 5,  /* reading the user stack failed */
        PROFD_END_DEPTH = 6,       /* PROFD_MAX_FRAMES reached */
        PROFD_END_FP_END = 7,      /* frame-pointer fallback met an implausible frame pointer */
        PROFD_END_CFA_STUCK = 8,   /* the stack did not grow (sigaltstack, coroutines, corruption) */
        PROFD_END__MAX,
};

/* --- Unwind tables (daemon -> BPF) --------------------------------------
 * The daemon turns each executable file's CFI (.eh_frame, else .debug_frame)
 * into rows, shared by every process that maps the file, and tells the BPF
 * walker which slice of rows covers which mapping of each process. */

/* struct profd_unwind_row.kind: how to find the caller's frame. */
enum profd_unwind_kind {
        PROFD_UNWIND_GAP = 0,         /* no CFI covers the address: walk this frame by frame pointer */
        PROFD_UNWIND_CFA_SP = 1,      /* CFA = rsp + cfa_off */
        PROFD_UNWIND_CFA_FP = 2,      /* CFA = rbp + cfa_off */
        PROFD_UNWIND_PLT = 3,         /* CFA = rsp + 8 + ((rip & 15) >= cfa_off ? 8 : 0) (PLT stubs) */
        PROFD_UNWIND_END = 4,         /* return address undefined: the outermost frame */
        PROFD_UNWIND_SIGNAL = 5,      /* signal trampoline: registers from the ucontext at rsp */
        PROFD_UNWIND_UNSUPPORTED = 6, /* a rule BPF cannot evaluate: the walk stops, counted */
};

/* Rules for the addresses [pc, next row's pc) of one file. pc is in the
 * file's own ELF address space (p_vaddr); files with code above 4 GiB get no
 * table. The return address is at CFA - 8 (x86-64); other forms are
 * UNSUPPORTED. */
struct profd_unwind_row {
        __u32 pc;
        __u16 cfa_off;  /* bytes; PLT: the threshold on rip & 15 */
        __u8 kind;      /* enum profd_unwind_kind */
        __s8 rbp_off;   /* caller's rbp is saved at CFA + 8 * rbp_off; 0: rbp unchanged */
};

/* struct profd_unwind_mapping.kind */
enum profd_mapping_kind {
        PROFD_MAPPING_FP = 0,      /* no table (anonymous or JIT code, no CFI, unreadable): frame pointers */
        PROFD_MAPPING_TABLE = 1,   /* the compact table at rows_off of unwind_rows, rows_n slots */
        PROFD_MAPPING_PENDING = 2, /* the table is being built: PROFD_END_PENDING */
};

/* One executable mapping of a process. A process's mappings are a slice of
 * unwind_maps, sorted by start and not overlapping. */
struct profd_unwind_mapping {
        __u64 start, end;  /* [start, end) in the process */
        __u64 bias;        /* ip - bias = the address in the file's table */
        /* PROFD_MAPPING_TABLE: the file's compact table (below), rows_n
         * 4-byte slots from the start of value rows_off of unwind_rows */
        __u32 rows_off, rows_n;
        __u32 kind;        /* enum profd_mapping_kind */
        __u32 pad;
};

/* Compact tables (issue 43; daemon/unwind/table-pack.h builds them and
 * holds the reference lookup, bpf/table-pack.bpf.h the same in BPF, which
 * the walker calls). A file's table is one run of 4-byte
 * slots, two to an 8-byte value of an array map (the kernel rounds an
 * array's values up to 8 bytes), starting at a value:
 *   head    struct profd_pack_head
 *   index   pages + 1 __u32: index[p] = how many rows have
 *           pc < (first_page + p) << PROFD_PACK_PAGE_SHIFT
 *   rows    struct profd_pack_row, sorted by pc, pcs distinct
 *   rules   struct profd_pack_rule, the table's distinct rules
 * A row's pc is its page's base + pc_lo; its rules are rules[rule]. The
 * row covering pc is among the rows of pc's page, else the last row of an
 * earlier page: a search of at most PROFD_PACK_PAGE_STEPS steps, since a
 * page holds at most 2^16 rows of distinct pcs. Above the last page the
 * last row covers; below first_page none. */
#define PROFD_PACK_PAGE_SHIFT 16 /* 64 KiB of text per page: the 16 bits of pc_lo */
#define PROFD_PACK_PAGE_STEPS 17 /* a binary search over 2^16 rows */
#define PROFD_PACK_RULES_MAX 65536 /* the 16 bits of profd_pack_row.rule */

struct profd_pack_head {
        __u32 first_page; /* the first row's pc >> PROFD_PACK_PAGE_SHIFT */
        __u32 pages;      /* pages of the index: first_page + pages - 1 holds the last row */
        __u32 rows;
        __u32 rules;
};

struct profd_pack_row {
        __u16 pc_lo; /* pc & 0xffff */
        __u16 rule;  /* index into the table's rules */
};

/* The rules of a row, as struct profd_unwind_row without its pc. */
struct profd_pack_rule {
        __u16 cfa_off;
        __u8 kind;
        __s8 rbp_off;
};

/* --- Runtime walkers (daemon -> BPF -> daemon) --------------------------
 * A language runtime's frames (CPython's today; HotSpot's next) join the
 * native walk: where a frame's ip is in the process's hand-over range
 * (struct profd_unwind_proc.rt_*), the runtime's walker emits one
 * pseudo-frame per frame of the runtime in place of that native frame,
 * then the native walk goes on from its caller. daemon/unwind/runtime.h
 * says what the daemon does for it. */

/* The runtimes (daemon/unwind/runtime.h, enum unwind_runtime_id): the
 * number in pseudo-frames, unwind_runtimes slots and the store's frames,
 * so it never changes meaning. */
enum profd_runtime_id {
        PROFD_RUNTIME_NONE = 0,
        PROFD_RUNTIME_PYTHON = 1,
        PROFD_RUNTIME_HOTSPOT = 2,      /* an interpreted Java frame: Method*, bytecode index */
        PROFD_RUNTIME_HOTSPOT_CODE = 3, /* compiled Java code or a stub: CodeBlob*, pc - blob */
};

/* A pseudo-frame in a user stack (struct profd_frames.ips): bit 63 set,
 * which no user address has, then the runtime (enum unwind_runtime_id, 3
 * bits), the instruction offset in the code (16 bits, saturated) and the
 * code object's address / 8 (44 bits: addresses below 2^47, all of
 * x86-64's user space with 4-level paging; HotSpot's Method* is only
 * 8-byte aligned, CPython's objects are 16-byte aligned). A walker never
 * emits a frame of a code address at or above PROFD_RT_FRAME_CODE_LIMIT
 * (the walk ends there, counted). Frames of different processes may hold
 * the same value: the daemon names them per process instance (the
 * key's). */
#define PROFD_RT_FRAME_FLAG (1ULL << 63)
#define PROFD_RT_FRAME_ID_SHIFT 60
#define PROFD_RT_FRAME_OFFSET_SHIFT 44
#define PROFD_RT_FRAME_OFFSET_MAX 0xffffULL
#define PROFD_RT_FRAME_CODE_SHIFT 3
#define PROFD_RT_FRAME_CODE_MASK ((1ULL << 44) - 1)
#define PROFD_RT_FRAME_CODE_LIMIT (1ULL << (44 + PROFD_RT_FRAME_CODE_SHIFT))
#define PROFD_RT_FRAME(id, code, offset)                                                    \
        (PROFD_RT_FRAME_FLAG | ((__u64) ((id) & 7) << PROFD_RT_FRAME_ID_SHIFT) |           \
         ((__u64) ((offset) > PROFD_RT_FRAME_OFFSET_MAX ? PROFD_RT_FRAME_OFFSET_MAX : (offset)) \
          << PROFD_RT_FRAME_OFFSET_SHIFT) |                                                 \
         (((__u64) (code) >> PROFD_RT_FRAME_CODE_SHIFT) & PROFD_RT_FRAME_CODE_MASK))
#define PROFD_RT_FRAME_IS(ip) (((ip) & PROFD_RT_FRAME_FLAG) != 0)
#define PROFD_RT_FRAME_ID(ip) ((unsigned) (((ip) >> PROFD_RT_FRAME_ID_SHIFT) & 7))
#define PROFD_RT_FRAME_OFFSET(ip) ((__u32) (((ip) >> PROFD_RT_FRAME_OFFSET_SHIFT) & PROFD_RT_FRAME_OFFSET_MAX))
#define PROFD_RT_FRAME_CODE(ip) (((ip) & PROFD_RT_FRAME_CODE_MASK) << PROFD_RT_FRAME_CODE_SHIFT)

/* The runtimes the daemon found in files (unwind_runtimes, an array of
 * this many slots; a process's entry names its interpreter's slot). */
#define PROFD_RUNTIME_SLOTS 256

/* What CPython's BPF walker needs of one interpreter file: byte offsets of
 * the interpreter's structures (python-layout.h says where each comes
 * from) and where the thread's state is. 0xffff: the version has no such
 * field. */
struct profd_python {
        __u64 tss_key;         /* file address of the pthread key of the thread's PyThreadState */
        __u16 tstate_cframe;   /* PyThreadState.cframe; 0xffff: current_frame is in PyThreadState */
        __u16 current_frame;   /* in _PyCFrame, or PyThreadState */
        __u16 frame_code, frame_previous, frame_instr;
        __u16 frame_owner;     /* char */
        __u16 frame_is_entry;  /* bool (3.11); 0xffff: none */
        __u16 code_adaptive;   /* PyCodeObject.co_code_adaptive: instruction offset 0 */
        __u8 owner_cstack;     /* frame_owner value of the C stack's entry shim (3.12+); 0xff: none */
        __u8 pad[3];
        /* glibc's struct pthread (at the thread pointer, fsbase on x86-64):
         * the offset of specific_1stblock, whose entry k is {seq, data},
         * 16 bytes: the thread's value of key k < 32 is its data. */
        __u32 glibc_specific;
};

/* What HotSpot's BPF walker (bpf/hotspot.bpf.h) needs of one JVM process
 * (a slot per process, not per file: the code heaps are the process's),
 * read by the daemon from the JVM's own tables (daemon/unwind/hotspot.c,
 * hotspot_runtime_make). Addresses are the process's. */
#define PROFD_HOTSPOT_HEAPS 4      /* JDK 17: 3 with a segmented code cache, 1 without */
#define PROFD_HOTSPOT_BLOB_READ 136 /* bytes of a CodeBlob's head read at once (rt_buf) */
#define PROFD_HOTSPOT_NO_SLOT (-128) /* an interpreter frame slot not known */
#define PROFD_HOTSPOT_NO_FIELD 0xffff /* a CodeBlob field the tables do not give */
struct profd_hotspot_heap {
        __u64 low, high;       /* the heap's reserved range (CodeHeap::_memory) */
        __u64 segmap;          /* its segment map's first byte: a byte per segment */
};

struct profd_hotspot {
        struct profd_hotspot_heap heaps[PROFD_HOTSPOT_HEAPS];
        __u64 call_stub_return; /* StubRoutines::_call_stub_return_address; 0: unknown (not read by
                                 * the walker: the call stub is stepped by its frame pointer) */
        __u32 n_heaps;
        __u8 log2_segment;     /* a segment is 1 << this many bytes */
        __u8 code_offsets;     /* 1: code_begin is an int offset from the blob (JDK 8, 23+), else an address */
        __u16 heap_block;      /* sizeof(HeapBlock): a blob starts this far into its block */
        /* CodeBlob's fields, byte offsets below PROFD_HOTSPOT_BLOB_READ - 8 */
        __u16 blob_name;       /* const char *: "nmethod", "Interpreter", a stub's name */
        __u16 blob_frame_size; /* int, words */
        __u16 blob_frame_complete; /* int, bytes from code_begin where the frame is built */
        __u16 blob_code_begin;
        __u16 blob_code_end;   /* as blob_code_begin (JDK 8, 23+: _data_offset); PROFD_HOTSPOT_NO_FIELD:
                                * not known, and no blob is remembered (hotspot_blobs) */
        __u16 method_const_method; /* Method::_constMethod */
        __u16 const_method_size;   /* sizeof(ConstMethod): the bytecodes follow it */
        /* the interpreter's frame, words from its frame pointer
         * (PROFD_HOTSPOT_NO_SLOT: none) */
        __s8 interp_sender_sp, interp_method, interp_bcp;
        __u8 pad[3];
};

/* A slot of unwind_runtimes. */
struct profd_runtime {
        __u32 id;              /* enum unwind_runtime_id; 0: empty */
        __u32 version;         /* the runtime's (CPython: PY_VERSION_HEX; HotSpot: major version) */
        union {
                struct profd_python python;
                struct profd_hotspot hotspot;
                __u8 data[136];
        };
};

/* Value of the hash unwind_procs, key: tgid. */
struct profd_unwind_proc {
        __u64 start_ns;    /* the process instance, as in profd_sample_key */
        __u32 maps_off, maps_n;
        __u16 miss_sent;   /* BPF sent PROFD_EVENT_UNWIND_MISS; cleared by the daemon's next update */
        /* The process's runtime (below): its slot of unwind_runtimes, + 1;
         * 0: none. Here, in the entry's first 32 bytes with what every
         * walk reads, so that a process without one costs no other cache
         * line. */
        __u16 rt_slot;
        /* 0: start_ns is exact. Else start_ns is in clock ticks of this many
         * ns, as /proc/PID/stat gives it: for processes found in /proc when
         * profd starts, until their first event brings the exact start. */
        __u32 start_tick_ns;
        /* Different in every entry the daemon ever writes (a count): what
         * the rows BPF found for this process may be remembered under
         * (bpf/cache.bpf.h, row cache), since its mappings and their
         * tables stay as they are until the entry is replaced. */
        __u64 version;
        /* The process's runtime (above), read only when rt_slot is set: a
         * frame whose ip is in [rt_lo, rt_hi) or [rt_cold_lo, rt_cold_hi)
         * (the interpreter's loop, hot and cold parts) is handed over to
         * the walker of the runtime in unwind_runtimes[rt_slot - 1].
         * rt_bias: the load bias of the runtime's file (its addresses in
         * struct profd_runtime + rt_bias = the process's). */
        __u64 rt_lo, rt_hi, rt_cold_lo, rt_cold_hi;
        __u64 rt_bias;
};

/* Setting kernel_stack_memo (bpf/kstack-memo.bpf.h), as the programs have it. */
enum profd_kstack_memo {
        PROFD_KSTACK_MEMO_OFF = 0,
        PROFD_KSTACK_MEMO_ON,
        PROFD_KSTACK_MEMO_VERIFY, /* kernel_stack_memo_verify: hits walked too and compared */
};

/* Counters in the per-CPU array "counters" (one element, struct
 * profd_counters): cumulative since load, summed over CPUs by the daemon,
 * which stores per-drain deltas. The PROFD_DROP_* ones count data that was
 * lost, one reason each. */
enum profd_counter {
        PROFD_CNT_SAMPLES = 0,          /* perf_event program runs */
        PROFD_CNT_IDLE,                 /* runs that hit the idle task (not stored) */
        PROFD_DROP_MAP_FULL,            /* aggregation map had no room for a new key */
        PROFD_DROP_USER_STACK_ERROR,    /* no user registers to start a user stack walk */
        PROFD_DROP_KERNEL_STACK_ERROR,  /* kernel stack walk failed */
        PROFD_DROP_STACK_MAP_FULL,      /* no room for a new stack node, or its id held another (collision) */
        PROFD_DROP_RINGBUF_FULL,        /* process event could not be sent */
        PROFD_DROP_TASK_STORAGE,        /* no per-task storage for a switch-out */
        PROFD_CNT_OFFCPU_FILTERED,      /* blocks outside [min, max] block time (not stored) */
        PROFD_CNT_OFFCPU_FILTERED_NS,   /* their total nanoseconds */
        PROFD_CNT_USER_WALKS,           /* user stack walks made */
        /* walks that ended early, one per enum profd_stack_end after COMPLETE,
         * in its order: PROFD_TRUNC_NO_PROCESS + (end - 1) */
        PROFD_TRUNC_NO_PROCESS,
        PROFD_TRUNC_PENDING,
        PROFD_TRUNC_NO_MAPPING,
        PROFD_TRUNC_UNSUPPORTED,
        PROFD_TRUNC_READ_FAULT,
        PROFD_TRUNC_DEPTH,
        PROFD_TRUNC_FP_END,
        PROFD_TRUNC_CFA_STUCK,
        /* a switch-out of a thread whose last switch-out was never followed
         * by a switch-in profd saw: the block in between is not measured */
        PROFD_DROP_SWITCH_MISSED,
        /* CPython's walks (the hand-overs of walks that met the
         * interpreter's loop), and why one gave no Python frames: the walk
         * went on natively (the interpreter's frame kept) */
        PROFD_CNT_RT_WALKS,
        PROFD_CNT_RT_FRAMES,            /* pseudo-frames emitted */
        PROFD_RT_NO_THREAD_STATE,       /* the thread's state was not found (no TSS key, key >= 32, NULL) */
        PROFD_RT_READ_FAULT,            /* reading the runtime's memory failed */
        PROFD_RT_NO_FRAME,              /* the loop ran with no frame of the runtime left to match it */
        /* on-CPU samples counted in the counts map, not logged (no log, or
         * the CPU's region full): in the aggregates, not in the timeline */
        PROFD_CNT_UNTIMED,
        /* off-CPU blocks counted in the counts map, not in the off-CPU log
         * (the timeline of blocks, issue 44): their time is in the
         * aggregates, not in the timeline. Shorter than
         * offcpu_timeline_min_ns, by choice; or unlogged: no log, or the
         * CPU's region full (a drain very late, more blocks than the log
         * was sized for), or (added by the daemon) no key in the counts
         * map to name (PROFD_DROP_MAP_FULL). Each with its ns. */
        PROFD_CNT_OFFCPU_SHORT,
        PROFD_CNT_OFFCPU_SHORT_NS,
        PROFD_CNT_OFFCPU_UNLOGGED,
        PROFD_CNT_OFFCPU_UNLOGGED_NS,
        /* HotSpot's walker (bpf/hotspot.bpf.h): the walks that met a JVM's
         * code cache, the pseudo-frames they gave (Java frames and stubs;
         * not in PROFD_CNT_RT_*, which are CPython's), then a frame in the
         * code cache it could not step, one reason each; the walk goes on
         * natively from that frame (frame pointers: mostly its end) */
        PROFD_HS_WALKS,
        PROFD_HS_FRAMES,
        PROFD_HS_NO_HEAP,               /* the pc is in no code heap */
        PROFD_HS_NO_BLOB,               /* the segment map marks the pc's segment free */
        PROFD_HS_BAD_SEGMAP,            /* the segment map's walk back did not end at a block's start */
        PROFD_HS_BAD_FRAME,             /* the frame's layout was not plausible (frame pointer,
                                         * return address, frame size) */
        PROFD_HS_READ_FAULT,            /* the JVM's memory (segment map, blob, name, Method) could not be read */
        PROFD_RT_CODE_RANGE,            /* a runtime's code address at or above PROFD_RT_FRAME_CODE_LIMIT */
        /* offcpu_sample (0: off): kept blocks shorter than it that the
         * draw left unwalked, with their ns (the walked ones are counted as
         * offcpu_sample each, so every stack's time is an unbiased
         * estimate); and wake-ups whose waker was left unwalked so */
        PROFD_CNT_OFFCPU_UNSAMPLED,
        PROFD_CNT_OFFCPU_UNSAMPLED_NS,
        PROFD_CNT_WAKEUP_UNSAMPLED,
        /* entries new in a generation's maps, counted as they are
         * inserted: stack nodes by the class that took them (8, 16, 32
         * frames), and keys of the counts map. The daemon drains early
         * when one of the maps is nearly full (mapsize_fill_high), before
         * new entries find no room */
        PROFD_CNT_NODES_NEW_8,
        PROFD_CNT_NODES_NEW_16,
        PROFD_CNT_NODES_NEW_32,
        PROFD_CNT_KEYS_NEW,
        /* the off-CPU programs' kernel stacks (bpf/kstack-memo.bpf.h): taken
         * from the memo; walked where the memo could have served (then
         * remembered); and, with kernel_stack_memo = verify, hits whose
         * walk gave other frames (the walk's are kept) */
        PROFD_CNT_KSTACK_MEMO_HITS,
        PROFD_CNT_KSTACK_MEMO_WALKS,
        PROFD_CNT_KSTACK_MEMO_MISMATCHES,
        /* wake-ups of profd's own threads, whose wakers are not walked
         * (offcpu_self_stacks off) */
        PROFD_CNT_WAKEUP_SELF,
        PROFD_COUNTER__MAX,
};

/* The one value of "counters", per CPU: every counter a program adds to
 * in a run in the same few cache lines, behind one map lookup, where an
 * element per counter was a value (and a slot of the map's table of
 * per-CPU pointers) each, cold in the sampler at 49 Hz. */
struct profd_counters {
        __u64 v[PROFD_COUNTER__MAX];
};

/* Events on the ring buffer "events", BPF -> daemon. */
enum profd_event_type {
        PROFD_EVENT_NEW_PROCESS = 1, /* first sample of a process instance */
        PROFD_EVENT_EXEC = 2,        /* the process replaced its image */
        PROFD_EVENT_UNWIND_MISS = 3, /* a user ip in no mapping the daemon told BPF of */
        PROFD_EVENT_RUNTIME_CODE = 4, /* a runtime's code object met by a walk (rt: which) */
        PROFD_EVENT_OOM_VICTIM = 5,  /* the kernel chose an OOM victim (captures, issue 44) */
};

#define PROFD_COMM_LEN 16 /* TASK_COMM_LEN */

struct profd_event {
        __u64 start_ns; /* process start, boot-time ns */
        __u32 type;     /* enum profd_event_type */
        __u32 tgid;
        union {
                char comm[PROFD_COMM_LEN];
                /* PROFD_EVENT_RUNTIME_CODE: the code object's address in
                 * the process (as PROFD_RT_FRAME_CODE gives it) and the
                 * process's rt_bias */
                struct {
                        __u64 code, bias;
                } rt;
        };
        __u32 rt_slot;  /* PROFD_EVENT_RUNTIME_CODE: the process's rt_slot */
        /* PROFD_EVENT_RUNTIME_CODE: the pseudo-frame's runtime (enum
         * profd_runtime_id): HotSpot's frames are of two (a Method*, a
         * CodeBlob*), named by different namers; else 0 */
        __u32 rt_id;
        /* PROFD_EVENT_NEW_PROCESS and _EXEC, of the thread group's leader
         * as its /proc/PID shows it: the id of its cgroup (v2; 0 when it
         * could not be read), and its effective uid and pid in its own pid
         * namespace (ns_pid 0 when they could not be read). The snapshot
         * need not read status and, for a cgroup seen before, cgroup. */
        __u64 cgroup_id;
        __u32 euid;
        __u32 ns_pid;
};

/* Value of the LRU map "seen": tgid -> start_ns of the instance announced. */
struct profd_seen {
        __u64 start_ns;
};

#ifndef __bpf__
_Static_assert(sizeof(struct profd_sample_key) == 48, "profd_sample_key layout");
_Static_assert(sizeof(struct profd_log_slot) == sizeof(struct profd_sample_key) + 8, "profd_log_slot layout");
_Static_assert(sizeof(struct profd_block_slot) == 64, "profd_block_slot layout: a cache line");
_Static_assert(sizeof(struct profd_frames) == 8 + 8 * PROFD_MAX_FRAMES, "profd_frames layout");
_Static_assert(sizeof(struct profd_node_head) == 16, "profd_node_head layout");
_Static_assert(sizeof(struct profd_node8) == 16 + 8 * PROFD_CLASS_FRAMES(PROFD_CLASS_8), "profd_node8 layout");
_Static_assert(sizeof(struct profd_node16) == 16 + 8 * PROFD_CLASS_FRAMES(PROFD_CLASS_16), "profd_node16 layout");
_Static_assert(sizeof(struct profd_node32) == 16 + 8 * PROFD_CLASS_FRAMES(PROFD_CLASS_32), "profd_node32 layout");
_Static_assert(PROFD_CLASS_FRAMES(PROFD_CLASS__MAX - 1) == PROFD_NODE_CHUNK, "full nodes are the largest class");
_Static_assert(PROFD_STACK_LOST >> PROFD_ID_CLASS_SHIFT == 3 && PROFD_CLASS__MAX <= 3, "ids never meet the sentinels");
_Static_assert(sizeof(struct profd_event) == 56, "profd_event layout");
_Static_assert(sizeof(struct profd_seen) == 8, "profd_seen layout");
_Static_assert(sizeof(struct profd_unwind_row) == 8, "profd_unwind_row layout");
_Static_assert(sizeof(struct profd_unwind_mapping) == 40, "profd_unwind_mapping layout");
_Static_assert(sizeof(struct profd_unwind_proc) == 72 && __builtin_offsetof(struct profd_unwind_proc, rt_slot) < 32,
               "profd_unwind_proc layout");
_Static_assert(sizeof(struct profd_python) <= 136 && sizeof(struct profd_hotspot) <= 136 &&
               sizeof(struct profd_runtime) == 144, "profd_runtime layout");
_Static_assert(PROFD_RT_FRAME_ID(PROFD_RT_FRAME(2, 0x7f0012345678ULL, 70000)) == 2 &&
               PROFD_RT_FRAME_CODE(PROFD_RT_FRAME(2, 0x7f0012345678ULL, 3)) == 0x7f0012345678ULL &&
               PROFD_RT_FRAME_CODE(PROFD_RT_FRAME(3, PROFD_RT_FRAME_CODE_LIMIT - 8, 3)) == PROFD_RT_FRAME_CODE_LIMIT - 8 &&
               PROFD_RT_FRAME_OFFSET(PROFD_RT_FRAME(1, 16, 70000)) == 0xffff, "pseudo-frame encoding");
_Static_assert(PROFD_RT_FRAME_CODE_LIMIT == 1ULL << 47, "pseudo-frames hold every x86-64 user address (4-level paging)");
_Static_assert(sizeof(struct profd_pack_head) == 16 && sizeof(struct profd_pack_row) == 4 &&
                       sizeof(struct profd_pack_rule) == 4, "compact table layout: 4-byte slots");
_Static_assert(1 << PROFD_PACK_PAGE_STEPS > 1 << PROFD_PACK_PAGE_SHIFT, "a page's search ends within its steps");
_Static_assert(PROFD_TRUNC_CFA_STUCK - PROFD_TRUNC_NO_PROCESS == PROFD_END_CFA_STUCK - PROFD_END_NO_PROCESS,
               "one truncation counter per stack end");
#endif

#endif
