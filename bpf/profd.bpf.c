/* profd's BPF programs: on-CPU stack sampling from a perf_event timer, and the
 * process events that let the daemon snapshot a process while it lives. All
 * aggregation happens here; the daemon drains one generation while the
 * programs write the other. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "profd.h"

char LICENSE[] SEC("license") = "GPL";

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h */
#define EEXIST 17
#define ENOMEM 12

/* Which generation of counts_* / stacks_* the programs write. Only the daemon
 * changes it (through the mmapped .bss), then waits for an RCU grace period
 * (see `barrier`) before it reads the other generation. */
__u32 generation = 0;

/* Aggregation, one map per generation: key -> sample count. The daemon sets
 * max_entries from frequency x CPUs x interval before load; a key that finds
 * no room is counted in PROFD_DROP_MAP_FULL. */
struct counts_map {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 1);
        __type(key, struct profd_sample_key);
        __type(value, __u64);
};
struct counts_map counts_0 SEC(".maps");
struct counts_map counts_1 SEC(".maps");

/* Stack traces, one map per generation and side, so user and kernel stacks
 * don't compete for buckets. The daemon sets max_entries, and value_size to
 * perf_event_max_stack frames, before load. */
struct stacks_map {
        __uint(type, BPF_MAP_TYPE_STACK_TRACE);
        __uint(max_entries, 1);
        __uint(key_size, sizeof(__u32));
        __uint(value_size, 127 * sizeof(__u64));
};
struct stacks_map stacks_user_0 SEC(".maps");
struct stacks_map stacks_user_1 SEC(".maps");
struct stacks_map stacks_kernel_0 SEC(".maps");
struct stacks_map stacks_kernel_1 SEC(".maps");

/* Cumulative counters and drop reasons (enum profd_counter), per CPU so the
 * hot path needs no atomics; the daemon sums them. */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, PROFD_COUNTER__MAX);
        __type(key, __u32);
        __type(value, __u64);
} counters SEC(".maps");

/* Process announcements for the daemon. 256 KiB holds ~8000 events: more than
 * one drain interval of process births on a busy host. */
struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* tgid -> start of the instance already announced, so each process instance
 * is announced once. LRU: an evicted entry only costs a repeated event. The
 * daemon sizes it to pid_max, at most 64 Ki entries. */
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct profd_seen);
} seen SEC(".maps");

/* Updating an ARRAY_OF_MAPS makes the kernel wait for an RCU grace period
 * (maybe_wait_bpf_programs), i.e. for every running BPF program to finish.
 * The daemon updates it after flipping `generation`: then no program is still
 * writing the old generation. No program reads it. */
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

static __always_inline void counter_add(__u32 idx, __u64 n) {
        __u64 *v = bpf_map_lookup_elem(&counters, &idx);
        if (v)
                *v += n;
}

static __always_inline void count_stack_error(long err, __u32 walk_error) {
        if (err == -EEXIST)
                counter_add(PROFD_DROP_STACK_COLLISION, 1);
        else if (err == -ENOMEM)
                counter_add(PROFD_DROP_STACK_MAP_FULL, 1);
        else
                counter_add(walk_error, 1);
}

static __always_inline __u64 process_start_ns(struct task_struct *task) {
        return BPF_CORE_READ(task, group_leader, start_boottime);
}

/* Tells the daemon about a process instance; false if the ring buffer was full
 * (counted), so the caller can try again on a later sample. */
static __always_inline bool announce(__u32 type, __u32 tgid, __u64 start_ns) {
        struct profd_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
        if (!e) {
                counter_add(PROFD_DROP_RINGBUF_FULL, 1);
                return false;
        }
        e->type = type;
        e->tgid = tgid;
        e->start_ns = start_ns;
        bpf_get_current_comm(e->comm, sizeof(e->comm));
        bpf_ringbuf_submit(e, 0);
        return true;
}

static __always_inline void announce_if_new(__u32 tgid, __u64 start_ns) {
        struct profd_seen *s = bpf_map_lookup_elem(&seen, &tgid);
        struct profd_seen v = { .start_ns = start_ns };

        if (s && s->start_ns == start_ns)
                return;
        if (announce(PROFD_EVENT_NEW_PROCESS, tgid, start_ns))
                bpf_map_update_elem(&seen, &tgid, &v, BPF_ANY);
}

static __always_inline void count_key(void *counts, struct profd_sample_key *key, __u64 n) {
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

/* Was the interrupted context in user mode? Then there is no kernel stack. */
static __always_inline bool in_user_mode(struct bpf_perf_event_data *ctx) {
#if defined(__TARGET_ARCH_x86)
        /* The verifier only allows word-sized loads of perf_event regs; the
         * kernel's pt_regs overlays a 16-bit cs on that word. */
        __u64 cs = *(__u64 *) ((char *) &ctx->regs + __builtin_offsetof(struct pt_regs, cs));
        return (cs & 3) == 3;
#elif defined(__TARGET_ARCH_arm64)
        return (ctx->regs.pstate & 0xf) == 0; /* PSR_MODE_EL0t */
#else
        return false; /* walk the kernel stack; an empty one counts as an error */
#endif
}

SEC("perf_event")
int profd_oncpu(struct bpf_perf_event_data *ctx) {
        struct task_struct *task = bpf_get_current_task_btf();
        __u64 pid_tgid = bpf_get_current_pid_tgid();
        struct profd_sample_key key = {};
        __u32 gen = *(volatile __u32 *) &generation;
        long id;

        counter_add(PROFD_CNT_SAMPLES, 1);
        key.tid = (__u32) pid_tgid;
        if (key.tid == 0) {
                /* the idle task: the CPU had nothing to run */
                counter_add(PROFD_CNT_IDLE, 1);
                return 0;
        }
        key.tgid = pid_tgid >> 32;
        key.start_ns = process_start_ns(task);
        key.cgroup_id = bpf_get_current_cgroup_id();
        key.kind = PROFD_KIND_CPU;

        if (in_user_mode(ctx)) {
                key.kernel_stack_id = PROFD_STACK_NONE;
        } else {
                id = gen ? bpf_get_stackid(ctx, &stacks_kernel_1, 0)
                         : bpf_get_stackid(ctx, &stacks_kernel_0, 0);
                if (id < 0) {
                        count_stack_error(id, PROFD_DROP_KERNEL_STACK_ERROR);
                        id = PROFD_STACK_LOST;
                }
                key.kernel_stack_id = id;
        }

        if (task->flags & PF_KTHREAD) {
                key.user_stack_id = PROFD_STACK_NONE;
        } else {
                id = gen ? bpf_get_stackid(ctx, &stacks_user_1, BPF_F_USER_STACK)
                         : bpf_get_stackid(ctx, &stacks_user_0, BPF_F_USER_STACK);
                if (id < 0) {
                        count_stack_error(id, PROFD_DROP_USER_STACK_ERROR);
                        id = PROFD_STACK_LOST;
                }
                key.user_stack_id = id;
        }

        count_key(gen ? (void *) &counts_1 : (void *) &counts_0, &key, 1);
        announce_if_new(key.tgid, key.start_ns);
        return 0;
}

/* Every exec gets a fresh snapshot: the mappings were all replaced. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(profd_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm) {
        __u32 tgid = BPF_CORE_READ(p, tgid);
        __u64 start_ns = process_start_ns(p);
        struct profd_seen v = { .start_ns = start_ns };

        if (announce(PROFD_EVENT_EXEC, tgid, start_ns))
                bpf_map_update_elem(&seen, &tgid, &v, BPF_ANY);
        return 0;
}
