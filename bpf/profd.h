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
        PROFD_KIND_OFFCPU = 1, /* value: nanoseconds blocked (reserved) */
        PROFD_KIND_WAKEUP = 2, /* value: nanoseconds of blocked time ended (reserved) */
};

/* Stack id sentinels stored in profd_sample_key when no stack id exists.
 * Real ids are >= 0. */
#define PROFD_STACK_NONE (-1) /* nothing to walk: kernel thread, or user mode */
#define PROFD_STACK_LOST (-2) /* walk failed or its map slot was taken; counted */

/* Key of the aggregation maps (counts_0 / counts_1). One entry per distinct
 * (process instance, thread, cgroup, stacks, kind, state). */
struct profd_sample_key {
        __u64 start_ns;        /* process start, boot-time ns: identity with tgid */
        __u64 cgroup_id;       /* cgroup v2 id of the thread */
        __u32 tgid;
        __u32 tid;
        __s32 user_stack_id;   /* in stacks_user_<gen>, or PROFD_STACK_* */
        __s32 kernel_stack_id; /* in stacks_kernel_<gen>, or PROFD_STACK_* */
        __u8 kind;             /* enum profd_kind */
        __u8 state;            /* task state for off-CPU kinds, 0 for cpu */
        __u8 pad[6];
};

/* Counters in the per-CPU array "counters": cumulative since load, summed over
 * CPUs by the daemon, which stores per-drain deltas. The PROFD_DROP_* ones
 * count data that was lost, one reason each. */
enum profd_counter {
        PROFD_CNT_SAMPLES = 0,          /* perf_event program runs */
        PROFD_CNT_IDLE,                 /* runs that hit the idle task (not stored) */
        PROFD_DROP_MAP_FULL,            /* aggregation map had no room for a new key */
        PROFD_DROP_USER_STACK_ERROR,    /* user stack walk failed (-EFAULT, ...) */
        PROFD_DROP_KERNEL_STACK_ERROR,  /* kernel stack walk failed */
        PROFD_DROP_STACK_COLLISION,     /* stack map bucket held another stack */
        PROFD_DROP_STACK_MAP_FULL,      /* stack map had no free entry */
        PROFD_DROP_RINGBUF_FULL,        /* process event could not be sent */
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
_Static_assert(sizeof(struct profd_sample_key) == 40, "profd_sample_key layout");
_Static_assert(sizeof(struct profd_event) == 32, "profd_event layout");
_Static_assert(sizeof(struct profd_seen) == 8, "profd_seen layout");
#endif

#endif
