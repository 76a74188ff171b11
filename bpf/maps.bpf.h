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

/* Which generation of counts_*, stacks_* and frames_* the programs write.
 * Defined in proc.bpf.c. Only the daemon changes it (through the mmapped
 * .bss), then waits for an RCU grace period (see `barrier`) before it reads
 * the other generation. */
extern __u32 generation __weak;

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

/* On-CPU stack traces, one map per generation and side, so user and kernel
 * stacks don't compete for buckets. Value size: perf_event_max_stack frames. */
struct stacks_map {
        __uint(type, BPF_MAP_TYPE_STACK_TRACE);
        __uint(max_entries, 1);
        __uint(key_size, sizeof(__u32));
        __uint(value_size, PROFD_MAX_FRAMES * sizeof(__u64));
};
struct stacks_map stacks_user_0 SEC(".maps") __weak;
struct stacks_map stacks_user_1 SEC(".maps") __weak;
struct stacks_map stacks_kernel_0 SEC(".maps") __weak;
struct stacks_map stacks_kernel_1 SEC(".maps") __weak;

/* Off-CPU and waker stacks by content hash, one map per generation. Only
 * stacks of blocks that pass the threshold are stored. */
struct frames_map {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 1);
        __type(key, __u64);
        __type(value, struct profd_frames);
};
struct frames_map frames_0 SEC(".maps") __weak;
struct frames_map frames_1 SEC(".maps") __weak;

/* Cumulative counters and drop reasons (enum profd_counter), per CPU so the
 * hot paths need no atomics; the daemon sums them. */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, PROFD_COUNTER__MAX);
        __type(key, __u32);
        __type(value, __u64);
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

static __always_inline void counter_add(__u32 idx, __u64 n) {
        __u64 *v = bpf_map_lookup_elem(&counters, &idx);
        if (v)
                *v += n;
}

static __always_inline __u64 process_start_ns(struct task_struct *task) {
        return BPF_CORE_READ(task, group_leader, start_boottime);
}

static __always_inline void *counts_map(__u32 gen) {
        return gen ? (void *) &counts_1 : (void *) &counts_0;
}

/* Adds n to the value of key, inserting it if new. */
static __always_inline void count_key(__u32 gen, struct profd_sample_key *key, __u64 n) {
        void *counts = counts_map(gen);
        __u64 *v = bpf_map_lookup_elem(counts, key);
        long err;

        if (v) {
                __sync_fetch_and_add(v, n);
                return;
        }
        err = bpf_map_update_elem(counts, key, &n, BPF_NOEXIST);
        if (err == -EEXIST) {
                /* another CPU inserted the same key in between */
                v = bpf_map_lookup_elem(counts, key);
                if (v)
                        __sync_fetch_and_add(v, n);
        } else if (err) {
                counter_add(PROFD_DROP_MAP_FULL, 1);
        }
}

/* Tells the daemon about a process instance; false if the ring buffer was full
 * (counted), so the caller can try again on a later event. */
static __always_inline bool announce(__u32 type, struct task_struct *task, __u32 tgid, __u64 start_ns) {
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
