/* On-CPU sampling: a perf_event timer on every CPU; each run counts one
 * sample under its process, thread, cgroup and stacks. */
#include "unwind.bpf.h"

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

/* Counts key in the counts map, for a sample the log had no room for (a
 * late drain): out of line, as it is rare (see announce in sample.bpf.h). */
static __noinline bool count_sample(__u32 gen, struct profd_sample_key *key, bool likely_new) {
        return count_key(gen, key, 1, likely_new);
}

SEC("perf_event")
int profd_oncpu(struct bpf_perf_event_data *ctx) {
        struct task_struct *task = bpf_get_current_task_btf();
        __u64 pid_tgid = bpf_get_current_pid_tgid();
        struct profd_sample_key key = {};
        __u32 gen = *(volatile __u32 *) &generation;
        __u32 first = 0; /* 1: the user leaf is in the key */
        bool announced = false;

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
                key.kernel_stack = PROFD_STACK_NONE;
        } else {
                struct profd_frames *k = scratch_get(SCRATCH_ONCPU_KERNEL);

                if (!k)
                        return 0;
                if (frames_set(k, bpf_get_stack(ctx, k->ips, sizeof(k->ips), 0), PROFD_DROP_KERNEL_STACK_ERROR))
                        key.kernel_stack = frames_store(gen, k, SCRATCH_ONCPU_KERNEL, 0);
                else
                        key.kernel_stack = PROFD_STACK_LOST;
        }

        if (task->flags & PF_KTHREAD) {
                key.user_stack = PROFD_STACK_NONE;
        } else {
                struct profd_frames *u = scratch_get(SCRATCH_ONCPU_USER);

                if (!u)
                        return 0;
                if (user_stack_unwind(task, u, SCRATCH_ONCPU_USER, &announced)) {
                        /* the leaf in the key, its callers in the nodes
                         * (see PROFD_KEY_LEAF) */
                        if (u->n > 1 && u->ips[0] < PROFD_KEY_LEAF_MAX) {
                                key.leaf_lo = (__u32) u->ips[0];
                                key.leaf_hi = (__u16) (u->ips[0] >> 32);
                                first = 1;
                        }
                        key.user_stack = frames_store(gen, u, SCRATCH_ONCPU_USER, first);
                } else {
                        key.user_stack = PROFD_STACK_LOST;
                }
        }

        /* The sample goes to the log (log_sample in sample.bpf.h), else to
         * the counts map. A process the daemon made an unwind entry for
         * after its announcement needs no announcement: no lookup in
         * `seen`. Else a key counted before in this generation was
         * followed by the announcement of its process (or its counted
         * failure, tried again with the process's next new key, at the
         * latest in the next generation): one hash lookup less. A key with
         * the leaf in it is mostly new: inserted without a lookup first. */
        if (!log_sample(gen, &key)) {
                counter_add(PROFD_CNT_UNTIMED, 1);
                announced |= count_sample(gen, &key, first != 0);
        }
        if (!announced)
                announce_if_new(task, key.tgid, key.start_ns);
        return 0;
}
