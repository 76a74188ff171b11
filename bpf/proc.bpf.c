/* Process events: every exec gets a fresh snapshot and fresh unwind
 * tables, since all mappings were replaced. Also holds the definitions every
 * object shares (the globals maps.bpf.h declares). */
/* the barrier map (maps.bpf.h) is defined here */
#define PROFD_DEFINE_BARRIER
#include "sample.bpf.h"

char LICENSE[] SEC("license") = "GPL";

__u32 generation __weak = 0;
__u32 unwind_epoch __weak = 0;
/* maps.bpf.h's events_submit_flags */
__u64 events_submit_flags __weak = 0;
/* The sampler's log (maps.bpf.h): slots per region, 0: no log; set by
 * the daemon before it attaches the sampler. Here, next to `generation`,
 * which every sample reads: the same cache line. */
__u32 samples_log_slots __weak = 0;
__u32 samples_log_cpus __weak = 0;
/* The off-CPU log (maps.bpf.h): slots per region, 0: no log. */
__u32 offcpu_log_slots __weak = 0;
__u32 offcpu_log_cpus __weak = 0;

SEC("tp_btf/sched_process_exec")
int BPF_PROG(profd_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm) {
        __u32 tgid = p->tgid;
        __u64 start_ns = process_start_ns(p);
        struct profd_seen v = { .start_ns = start_ns };

        /* the old image's mappings are gone: no tables until the daemon
         * has read the new ones (the walker falls back to frame pointers) */
        bpf_map_delete_elem(&unwind_procs, &tgid);
        /* and no walker may go on with what it found there before (the
         * instance, tgid and start, is the same after an exec): see
         * user_stack_unwind */
        __sync_fetch_and_add(&unwind_epoch, 1);
        if (announce(PROFD_EVENT_EXEC, p, tgid, start_ns))
                bpf_map_update_elem(&seen, &tgid, &v, BPF_ANY);
        return 0;
}

/* A task is freed: a leader's (pid == tgid) deletes its process's `seen`
 * entry (maps.bpf.h), if it is this instance's (its pid may have been
 * reused since it was released). Freed, not exited: an exiting task still
 * blocks, wakes its parent and may be sampled, which would announce it
 * again; a leader is freed only once its whole thread group has been
 * released. A leader replaced by an exec in another thread (de_thread)
 * is freed with another pid: its entry is the new leader's. */
SEC("tp_btf/sched_process_free")
int BPF_PROG(profd_free, struct task_struct *p) {
        __u32 tgid = p->tgid;
        struct profd_seen *s;

        if (p->pid != p->tgid)
                return 0;
        s = bpf_map_lookup_elem(&seen, &tgid);
        if (s && s->start_ns == process_start_ns(p))
                bpf_map_delete_elem(&seen, &tgid);
        return 0;
}

/* Captures (issue 44): the kernel chose an OOM victim (oom/mark_victim),
 * which a capture on "oom" waits for. A raw tracepoint, so that one
 * program loads on every kernel: the tracepoint's argument is the victim's
 * task on recent kernels and its pid on older ones, told apart by size (a
 * kernel address is above any pid). Costs nothing until an OOM kill. */
SEC("raw_tp/mark_victim")
int profd_oom(struct bpf_raw_tracepoint_args *ctx) {
        __u64 arg = ctx->args[0];
        struct profd_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

        if (!e) {
                counter_add(PROFD_DROP_RINGBUF_FULL, 1);
                return 0;
        }
        __builtin_memset(e, 0, sizeof(*e));
        e->type = PROFD_EVENT_OOM_VICTIM;
        if (arg > 0xffffffffULL) {
                struct task_struct *t = (struct task_struct *) arg;

                e->tgid = BPF_CORE_READ(t, tgid);
                e->start_ns = BPF_CORE_READ(t, group_leader, start_boottime);
                BPF_CORE_READ_STR_INTO(&e->comm, t, group_leader, comm);
        } else
                e->tgid = (__u32) arg;
        bpf_ringbuf_submit(e, 0);
        return 0;
}
