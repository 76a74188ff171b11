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

/* Stacks in profd_sample_key are 64-bit hashes of their frames, keys of the
 * frames_<gen> map of the same generation as the key. (Not ids of a kernel
 * stack map: a blocked thread's user stack is taken at switch-out, possibly
 * generations before it is counted.) Real hashes never take the sentinel
 * values. */
#define PROFD_STACK_NONE (~0ULL)       /* nothing to walk: kernel thread, or user mode */
#define PROFD_STACK_LOST (~0ULL - 1)   /* walk failed or its map slot was taken; counted */

/* Frames per stack in frames_<gen> and per-task storage: the kernel's
 * default perf_event_max_stack. */
#define PROFD_MAX_FRAMES 127

/* Key of the aggregation maps (counts_0 / counts_1). One entry per distinct
 * (process instance, thread, cgroup, stacks, kind, state, peer). */
struct profd_sample_key {
        __u64 start_ns;        /* process start, boot-time ns: identity with tgid */
        __u64 cgroup_id;       /* cgroup v2 id of the thread */
        __u64 user_stack;      /* see PROFD_STACK_* above */
        __u64 kernel_stack;
        __u32 tgid;
        __u32 tid;
        __u32 peer_tid;        /* wakeup: the thread whose blocked time was ended */
        __u8 kind;             /* enum profd_kind */
        __u8 state;            /* enum profd_state */
        __u8 pad[2];
};

/* A stack, innermost frame first: value of frames_<gen>, per-task storage,
 * and per-CPU scratch. */
struct profd_frames {
        __u32 n;
        __u32 pad;
        __u64 ips[PROFD_MAX_FRAMES];
};

/* Counters in the per-CPU array "counters": cumulative since load, summed over
 * CPUs by the daemon, which stores per-drain deltas. The PROFD_DROP_* ones
 * count data that was lost, one reason each. */
enum profd_counter {
        PROFD_CNT_SAMPLES = 0,          /* perf_event program runs */
        PROFD_CNT_IDLE,                 /* runs that hit the idle task (not stored) */
        PROFD_DROP_MAP_FULL,            /* aggregation map had no room for a new key */
        PROFD_DROP_USER_STACK_ERROR,    /* no user registers to start a user stack walk */
        PROFD_DROP_KERNEL_STACK_ERROR,  /* kernel stack walk failed */
        PROFD_DROP_STACK_MAP_FULL,      /* frames map had no room for a new stack */
        PROFD_DROP_RINGBUF_FULL,        /* process event could not be sent */
        PROFD_DROP_TASK_STORAGE,        /* no per-task storage for a switch-out */
        PROFD_CNT_OFFCPU_FILTERED,      /* blocks outside [min, max] block time (not stored) */
        PROFD_CNT_OFFCPU_FILTERED_NS,   /* their total nanoseconds */
        PROFD_COUNTER__MAX,
};

/* Events on the ring buffer "events", BPF -> daemon. */
enum profd_event_type {
        PROFD_EVENT_NEW_PROCESS = 1, /* first sample of a process instance */
        PROFD_EVENT_EXEC = 2,        /* the process replaced its image */
};

#define PROFD_COMM_LEN 16 /* TASK_COMM_LEN */

struct profd_event {
        __u64 start_ns; /* process start, boot-time ns */
        __u32 type;     /* enum profd_event_type */
        __u32 tgid;
        char comm[PROFD_COMM_LEN];
};

/* Value of the LRU map "seen": tgid -> start_ns of the instance announced. */
struct profd_seen {
        __u64 start_ns;
};

#ifndef __bpf__
_Static_assert(sizeof(struct profd_sample_key) == 48, "profd_sample_key layout");
_Static_assert(sizeof(struct profd_frames) == 8 + 8 * PROFD_MAX_FRAMES, "profd_frames layout");
_Static_assert(sizeof(struct profd_event) == 32, "profd_event layout");
_Static_assert(sizeof(struct profd_seen) == 8, "profd_seen layout");
#endif

#endif
