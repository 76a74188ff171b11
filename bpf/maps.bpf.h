/* Every map of profd's BPF programs (oncpu, offcpu, proc), the globals they
 * share, and the two helpers every program uses (counter_add, VERIFIER_MASK).
 * The objects are linked into one (bpftool gen object): maps are declared
 * __weak here so every object sees the same map. Sizes are placeholders: the
 * daemon sets max_entries (and stack value sizes) from the machine before
 * load. The values' layouts that are not the ABI (profd.h) are in
 * state.bpf.h. */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "profd.h"
#include "state.bpf.h"

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

/* The flags of the process events' submits (announce, rt_announce): 0, the
 * ring buffer's own choice (it wakes the reader when it had read all
 * before), or BPF_RB_NO_WAKEUP while the daemon takes the events by a
 * timer (daemon/manager.c, on_events): then they wake no one, which here
 * saves the program some 30 us. Set by the daemon through the mmapped .bss.
 * Defined in proc.bpf.c. */
extern __u64 events_submit_flags __weak;

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
 * drain very late) or no log: the counts map takes the sample, without
 * its time (PROFD_CNT_UNTIMED). */
extern __u32 samples_log_slots __weak;
extern __u32 samples_log_cpus __weak;
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct profd_log_slot);
} samples_log SEC(".maps") __weak;

/* The off-CPU log: each kept block's key (as counted in the counts map),
 * end and duration, the timeline of off-CPU blocks (issue 44). Regions as
 * in samples_log, region (GEN_MAPS(gen) * offcpu_log_cpus + cpu) of
 * offcpu_log_slots slots (struct profd_block_slot), written by the
 * programs that end blocks (profd_switch, profd_switch_done), which run in
 * the scheduler with preemption off and never interrupt one another on a
 * CPU: no lock. Sized by the daemon from timeline_offcpu_rate; a block
 * that finds its region full is counted (PROFD_CNT_OFFCPU_UNLOGGED), and
 * its time stays in the counts map. */
extern __u32 offcpu_log_slots __weak;
extern __u32 offcpu_log_cpus __weak;
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct profd_block_slot);
} offcpu_log SEC(".maps") __weak;

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
 * is announced once. Not preallocated: an entry is made at a process's
 * announcement and deleted when its leader is freed, after its last thread
 * (profd_free in proc.bpf.c), so the map holds the live processes met (an
 * LRU hash sized to pid_max took 2.5 MiB of kernel memory at pid_max 32768,
 * 5.2 MiB at 4194304, whatever the host ran). The daemon sizes it to
 * pid_max, at most 64 Ki entries; when full, a process is announced again
 * at its next event (a repeated event, as an LRU's eviction was). */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct profd_seen);
} seen SEC(".maps") __weak;

/* Unwind tables (see bpf/unwind.bpf.h). The daemon sizes the two arrays
 * before load, maps them into its memory and writes rows and mappings in
 * place; a process's entry in unwind_procs, updated last, publishes them.
 *
 * unwind_rows: every file's compact table (struct profd_pack_head in
 * profd.h), each a slice of values, two 4-byte slots to a value (the even
 * one first): the kernel rounds an array's values up to 8 bytes, so a map
 * of 4-byte values would take as much memory. max_entries = the setting
 * unwind_memory / 8. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, __u64);
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

/* unwind_runtimes: the runtimes the daemon found in files (struct
 * profd_runtime, PROFD_RUNTIME_SLOTS of them), each process's entry naming
 * its interpreter's slot (struct profd_unwind_proc.rt_slot, 1-based). The
 * daemon writes a slot before any entry names it. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, PROFD_RUNTIME_SLOTS);
        __type(key, __u32);
        __type(value, struct profd_runtime);
} unwind_runtimes SEC(".maps") __weak;

/* The code objects a runtime walk announced (PROFD_EVENT_RUNTIME_CODE),
 * per CPU, a direct-mapped set of tags (struct runtime_seen in
 * state.bpf.h): a code object met again is not announced again while its
 * tag stays. */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct runtime_seen);
} runtime_seen SEC(".maps") __weak;

/* The blob of a JVM's code cache pc, found once through the segment map:
 * per CPU, direct-mapped (struct hotspot_blobs in state.bpf.h). */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct hotspot_blobs);
} hotspot_blobs SEC(".maps") __weak;

/* Per-CPU windows, one per scratch slot (enum scratch_slot): each the
 * slot's frames, its walk's state and its node cache (struct walk_window in
 * state.bpf.h). */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, SCRATCH__MAX);
        __type(key, __u32);
        __type(value, struct walk_window);
} walk_windows SEC(".maps") __weak;

#if defined(__TARGET_ARCH_x86)
/* The walks' caches (cache.bpf.h): the row cache, the leaf cache and the
 * walk memo, one map value, one lookup and one allocation for the three;
 * one value per walker that may interrupt another (enum walk_cache). */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, WALK_CACHE__MAX);
        __type(key, __u32);
        __type(value, struct row_cache);
} row_cache SEC(".maps") __weak;
#endif

/* offcpu.bpf.c's: per-thread state between switch-out and switch-in, in
 * task-local storage: no lookup by pid, and freed with the task, so exited
 * threads never leak entries. */
struct {
        __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, int);
        __type(value, struct profd_task);
} tasks SEC(".maps") __weak;

/* The user stack at switch-out, only without sched_exit_tp. */
struct {
        __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, int);
        __type(value, struct profd_frames);
} task_stacks SEC(".maps") __weak;

/* A kept block between sched_switch and sched_exit_tp on the same CPU
 * (struct offcpu_park). */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct offcpu_park);
} offcpu_parked SEC(".maps") __weak;

/* Updating an ARRAY_OF_MAPS makes the kernel wait for an RCU grace period
 * (maybe_wait_bpf_programs), i.e. for every running BPF program to finish.
 * The daemon updates it after flipping `generation`: then no program is still
 * writing the old generation. No program reads it. Defined in one object
 * only (proc.bpf.c defines PROFD_DEFINE_BARRIER): the linker cannot merge
 * the initial value of a weak map of maps. */
#ifdef PROFD_DEFINE_BARRIER
struct barrier_inner {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, __u32);
} barrier_inner SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
        __uint(max_entries, 1);
        __type(key, __u32);
        __array(values, struct barrier_inner);
} barrier SEC(".maps") = {
        .values = { &barrier_inner },
};
#endif

static __always_inline void counter_add(__u32 idx, __u64 n) {
        __u32 zero = 0;
        struct profd_counters *c = bpf_map_lookup_elem(&counters, &zero);

        /* the check where the verifier sees it: clang drops it when the
         * caller bounded idx already, on a register the access does not use */
        barrier_var(idx);
        if (c && idx < PROFD_COUNTER__MAX)
                c->v[idx] += n;
}

/* v & mask where the verifier sees it: clang drops a mask it proves
 * useless after a bounds check, and the verifier may not have followed
 * that check on the register the index ends up in. (The walker's test in
 * user space, tests/unit/test-bpf-walker.c, has a mask of its own.) */
#ifndef VERIFIER_MASK
#define VERIFIER_MASK(v, mask)                            \
        ({                                                \
                __u64 __v = (v);                          \
                asm volatile("%0 &= " #mask : "+r"(__v)); \
                __v;                                      \
        })
#endif
