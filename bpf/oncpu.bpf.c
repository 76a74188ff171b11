/* On-CPU sampling: a perf_event timer on every CPU; each run counts one
 * sample under its process, thread, cgroup and stacks. */
#include "maps.bpf.h"

static __always_inline void count_stack_error(long err, __u32 walk_error) {
        if (err == -EEXIST)
                counter_add(PROFD_DROP_STACK_COLLISION, 1);
        else if (err == -ENOMEM)
                counter_add(PROFD_DROP_STACK_MAP_FULL, 1);
        else
                counter_add(walk_error, 1);
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
                key.kernel_stack = PROFD_STACK_NONE;
        } else {
                id = gen ? bpf_get_stackid(ctx, &stacks_kernel_1, 0) : bpf_get_stackid(ctx, &stacks_kernel_0, 0);
                if (id < 0) {
                        count_stack_error(id, PROFD_DROP_KERNEL_STACK_ERROR);
                        key.kernel_stack = PROFD_STACK_LOST;
                } else
                        key.kernel_stack = id;
        }

        if (task->flags & PF_KTHREAD) {
                key.user_stack = PROFD_STACK_NONE;
        } else {
                id = gen ? bpf_get_stackid(ctx, &stacks_user_1, BPF_F_USER_STACK)
                         : bpf_get_stackid(ctx, &stacks_user_0, BPF_F_USER_STACK);
                if (id < 0) {
                        count_stack_error(id, PROFD_DROP_USER_STACK_ERROR);
                        key.user_stack = PROFD_STACK_LOST;
                } else
                        key.user_stack = id;
        }

        count_key(gen, &key, 1);
        announce_if_new(task, key.tgid, key.start_ns);
        return 0;
}
