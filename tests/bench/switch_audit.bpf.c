/* switch-audit's BPF half: replays profd's off-CPU switch logic
 * (bpf/offcpu.bpf.c: a block opens at a thread's switch-out and closes at
 * its switch-in, seen at sched_switch or, failing that, at sched_exit_tp)
 * and counts, per thread, the switches the sched_switch tracepoint does
 * not report and what each costs profd (switch_audit.h). A switch is
 * known to be unreported when sched_exit_tp, which ends every __schedule
 * that switched, runs as a task other than the one the last report (or
 * exit) on this CPU switched to. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "switch_audit.h"

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h */

/* the fields read, relocated by CO-RE against the running kernel */
struct task_struct___audit {
        unsigned int flags;
        int pid;
        int tgid;
        char comm[16];
} __attribute__((preserve_access_index));

/* Rows by thread name, process and kind; a few hundred on a busy host. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 16384);
        __type(key, struct switch_audit_key);
        __type(value, struct switch_audit_value);
} counts SEC(".maps");

/* tid -> time of its open switch-out, as profd's task storage holds it;
 * LRU: threads that exit while out are forgotten, never refused */
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 65536);
        __type(key, __u32);
        __type(value, __u64);
} open_out SEC(".maps");

/* tid -> time of a switch-out sched_switch did not report */
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 65536);
        __type(key, __u32);
        __type(value, __u64);
} unseen_out SEC(".maps");

/* tid -> its key's name and process: the thread an unreported switch
 * took off the CPU is known only by its tid */
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 65536);
        __type(key, __u32);
        __type(value, struct switch_audit_key);
} idents SEC(".maps");

struct cpu_current {
        __u32 tid;
        __u32 known;
};

/* the task this CPU runs according to the last report or exit seen */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct cpu_current);
} cpu_current SEC(".maps");

static void ident_of(struct task_struct___audit *t, struct switch_audit_key *k) {
        bpf_probe_read_kernel(k->comm, sizeof(k->comm), t->comm);
        k->tgid = t->tgid;
        k->kthread = !!(t->flags & PF_KTHREAD);
}

static void add_key(struct switch_audit_key *k, __u8 kind, __u64 ns) {
        static const struct switch_audit_value zero;
        struct switch_audit_value *v;

        k->kind = kind;
        v = bpf_map_lookup_elem(&counts, k);
        if (!v) {
                bpf_map_update_elem(&counts, k, &zero, BPF_NOEXIST);
                v = bpf_map_lookup_elem(&counts, k);
                if (!v)
                        return;
        }
        __sync_fetch_and_add(&v->n, 1);
        __sync_fetch_and_add(&v->ns, ns);
}

static void add(struct task_struct___audit *t, __u8 kind, __u64 ns) {
        struct switch_audit_key k = {};

        ident_of(t, &k);
        add_key(&k, kind, ns);
}

static void remember(struct task_struct___audit *t) {
        struct switch_audit_key k = {};
        __u32 tid = t->pid;

        ident_of(t, &k);
        bpf_map_update_elem(&idents, &tid, &k, BPF_ANY);
}

/* t was switched in at now; reported: by sched_switch */
static void switched_in(struct task_struct___audit *t, __u64 now, bool reported) {
        __u32 tid = t->pid;
        __u64 *out;

        out = bpf_map_lookup_elem(&unseen_out, &tid);
        if (out) {
                add(t, SWITCH_AUDIT_UNSEEN_BLOCK, now - *out);
                bpf_map_delete_elem(&unseen_out, &tid);
        }
        out = bpf_map_lookup_elem(&open_out, &tid);
        if (!out)
                return;
        if (!reported)
                add(t, SWITCH_AUDIT_HIDDEN_IN, now - *out);
        bpf_map_delete_elem(&open_out, &tid);
}

static void cpu_runs(__u32 tid) {
        __u32 zero = 0;
        struct cpu_current *c = bpf_map_lookup_elem(&cpu_current, &zero);

        if (c) {
                c->tid = tid;
                c->known = 1;
        }
}

SEC("tp_btf/sched_switch")
int BPF_PROG(audit_switch, bool preempt, struct task_struct___audit *prev, struct task_struct___audit *next,
             unsigned int prev_state) {
        __u64 now = bpf_ktime_get_ns();
        __u32 tid;

        if (prev->pid != 0) {
                tid = prev->pid;
                if (bpf_map_lookup_elem(&open_out, &tid))
                        add(prev, SWITCH_AUDIT_MISSED, 0);
                bpf_map_update_elem(&open_out, &tid, &now, BPF_ANY);
                remember(prev);
        }
        add(next, SWITCH_AUDIT_REPORTED, 0);
        if (next->pid != 0) {
                remember(next);
                switched_in(next, now, true);
        }
        cpu_runs(next->pid);
        return 0;
}

SEC("tp_btf/sched_exit_tp")
int BPF_PROG(audit_switch_done, bool is_switch) {
        struct task_struct___audit *task = (void *) bpf_get_current_task_btf();
        __u64 now = bpf_ktime_get_ns();
        __u32 zero = 0, tid = task->pid, prev_tid;
        struct switch_audit_key idle = { .comm = "<idle>", .kthread = 1 };
        /* the thread switched out, by name if a switch of it was seen */
        struct switch_audit_key out = { .comm = "<unknown>" };
        struct switch_audit_key *prev;
        struct cpu_current *c;

        if (!is_switch)
                return 0;
        add(task, SWITCH_AUDIT_SWITCHES, 0);
        c = bpf_map_lookup_elem(&cpu_current, &zero);
        if (!c)
                return 0;
        if (c->known && c->tid != tid) {
                prev_tid = c->tid;
                if (prev_tid == 0) {
                        add_key(&idle, SWITCH_AUDIT_HIDDEN_BY, 0);
                } else {
                        prev = bpf_map_lookup_elem(&idents, &prev_tid);
                        if (prev)
                                __builtin_memcpy(&out, prev, sizeof(out));
                        add_key(&out, SWITCH_AUDIT_HIDDEN_BY, 0);
                        bpf_map_update_elem(&unseen_out, &prev_tid, &now, BPF_ANY);
                }
                if (tid != 0) {
                        remember(task);
                        switched_in(task, now, false);
                }
        }
        cpu_runs(tid);
        return 0;
}

char LICENSE[] SEC("license") = "GPL";
