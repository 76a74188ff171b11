/* switch-audit's one shared layout, read by the BPF half (switch_audit.bpf.c)
 * and the user half (switch_audit.c): fixed-width types only. */
#pragma once

#ifdef __bpf__
/* vmlinux.h provides __u8..__u64 */
#else
#include <linux/types.h>
#endif

/* What a row of the counts map counts. */
enum switch_audit_kind {
        /* sched_switch reports, by the thread switched in (the idle task too) */
        SWITCH_AUDIT_REPORTED,
        /* switches (sched_exit_tp with is_switch), by the thread switched in */
        SWITCH_AUDIT_SWITCHES,
        /* a switch sched_switch did not report, by the thread it switched
         * out: the task the CPU ran according to the tracepoints */
        SWITCH_AUDIT_HIDDEN_BY,
        /* a switch-in sched_switch did not report, of a thread whose
         * switch-out it did: profd without its sched_exit_tp program lost
         * this block and counted switch_missed at the next switch-out;
         * value: the block's length */
        SWITCH_AUDIT_HIDDEN_IN,
        /* a switch-out that finds the thread's last switch-out still open
         * even with sched_exit_tp ending blocks: profd's switch_missed */
        SWITCH_AUDIT_MISSED,
        /* a block begun by a switch-out sched_switch did not report, ended
         * at the thread's next switch-in; value: its length. profd never
         * sees it begin: it is neither timed nor counted */
        SWITCH_AUDIT_UNSEEN_BLOCK,
        SWITCH_AUDIT__MAX,
};

struct switch_audit_key {
        char comm[16];
        __u32 tgid; /* 0: the idle task */
        __u8 kind;  /* enum switch_audit_kind */
        __u8 kthread;
        __u8 pad[2];
};

struct switch_audit_value {
        __u64 n;
        __u64 ns;
};

_Static_assert(sizeof(struct switch_audit_key) == 24, "switch_audit_key is shared with BPF");
_Static_assert(sizeof(struct switch_audit_value) == 16, "switch_audit_value is shared with BPF");
