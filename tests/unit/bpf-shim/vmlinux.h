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

typedef struct {
        __u32 val;
} kuid_t;

struct cred {
        kuid_t euid;
};

struct upid {
        int nr;
        void *ns;
};

struct pid {
        unsigned int level;
        struct upid numbers[2];
};

struct kernfs_node {
        __u64 id;
};

struct cgroup {
        struct kernfs_node *kn;
};

struct css_set {
        struct cgroup *dfl_cgrp;
};

struct task_struct {
        struct thread_struct thread;
        int pid, tgid;
        unsigned int flags;
        __u64 start_boottime;
        struct task_struct *group_leader;
        char comm[16];
        const struct cred *cred;
        struct pid *thread_pid;
        struct css_set *cgroups;
};

typedef int pid_t;

#endif
