/* The BPF walker's test shim (tests/unit/test-bpf-walker.c): what
 * vmlinux.h gives the walker's headers (bpf/, .bpf.h), in user space. The
 * kernel's types the headers read, with only the fields they read; the
 * map types and flags from the UAPI. */
#ifndef __VMLINUX_H__
#define __VMLINUX_H__

#include <linux/bpf.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>

/* The user registers at kernel entry (bpf_task_pt_regs). */
struct pt_regs {
        __u64 ip, sp, bp, r13;
};

struct thread_struct {
        unsigned long fsbase;
};

struct task_struct {
        struct thread_struct thread;
        int pid, tgid;
        unsigned int flags;
        __u64 start_boottime;
        struct task_struct *group_leader;
        char comm[16];
};

typedef int pid_t;

#endif
