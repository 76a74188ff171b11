/* A vendored, minimal vmlinux.h for building profd's BPF programs on a machine
 * whose kernel has no BTF to generate one from (meson -Dvmlinux_h=vendored).
 * It declares only what bpf/ uses. Kernel structs carry preserve_access_index,
 * so libbpf relocates every field access against the running kernel's BTF
 * (CO-RE): the layouts below need the right field names and types, not the
 * right offsets. UAPI values (map types, flags) are stable ABI. */
#ifndef __VMLINUX_H__
#define __VMLINUX_H__

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef int pid_t;
typedef _Bool bool;
enum { false = 0, true = 1 };

enum bpf_map_type {
        BPF_MAP_TYPE_HASH = 1,
        BPF_MAP_TYPE_ARRAY = 2,
        BPF_MAP_TYPE_PERCPU_ARRAY = 6,
        BPF_MAP_TYPE_STACK_TRACE = 7,
        BPF_MAP_TYPE_LRU_HASH = 9,
        BPF_MAP_TYPE_ARRAY_OF_MAPS = 12,
        BPF_MAP_TYPE_RINGBUF = 27,
        BPF_MAP_TYPE_TASK_STORAGE = 29,
};

enum {
        BPF_F_NO_PREALLOC = 1,
        BPF_F_MMAPABLE = 1024,
};

enum {
        BPF_LOCAL_STORAGE_GET_F_CREATE = 1,
};

enum {
        BPF_ANY = 0,
        BPF_NOEXIST = 1,
        BPF_EXIST = 2,
};

enum {
        BPF_F_SKIP_FIELD_MASK = 255,
        BPF_F_USER_STACK = 256,
        BPF_F_FAST_STACK_CMP = 512,
        BPF_F_REUSE_STACKID = 1024,
        BPF_F_USER_BUILD_ID = 2048,
};

#if defined(__TARGET_ARCH_x86)
/* x86-64 struct pt_regs, as perf_event programs see it in their context. */
struct pt_regs {
        unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
        unsigned long ax, cx, dx, si, di, orig_ax, ip;
        unsigned long cs;
        unsigned long flags, sp, ss;
};
typedef struct pt_regs bpf_user_pt_regs_t;
#elif defined(__TARGET_ARCH_arm64)
struct user_pt_regs {
        __u64 regs[31];
        __u64 sp;
        __u64 pc;
        __u64 pstate;
};
typedef struct user_pt_regs bpf_user_pt_regs_t;
struct pt_regs {
        struct user_pt_regs user_regs;
};
#else
#error "the vendored vmlinux.h covers x86_64 and arm64; use -Dvmlinux_h=generate"
#endif

struct bpf_perf_event_data {
        bpf_user_pt_regs_t regs;
        __u64 sample_period;
        __u64 addr;
};

struct linux_binprm;

struct kernfs_node {
        u64 id;
} __attribute__((preserve_access_index));

struct cgroup {
        struct kernfs_node *kn;
} __attribute__((preserve_access_index));

struct css_set {
        struct cgroup *dfl_cgrp;
} __attribute__((preserve_access_index));

/* the process event's ids (announce_ids): effective uid, pid in its
 * namespace */
typedef struct {
        __u32 val;
} kuid_t;

struct cred {
        kuid_t euid;
} __attribute__((preserve_access_index));

struct upid {
        int nr;
} __attribute__((preserve_access_index));

struct pid {
        unsigned int level;
        struct upid numbers[1];
} __attribute__((preserve_access_index));

/* x86-64: the thread pointer, as arch_prctl(ARCH_SET_FS) and clone's TLS
 * set it (a runtime walker finds the thread's state from it) */
struct thread_struct {
        unsigned long sp; /* a task not running: its saved kernel stack pointer */
        unsigned long fsbase;
} __attribute__((preserve_access_index));

struct task_struct {
        void *stack; /* bottom of its kernel stack */
        unsigned int flags;
        pid_t pid;
        pid_t tgid;
        struct task_struct *group_leader;
        u64 start_boottime;
        char comm[16];
        struct css_set *cgroups;
        struct thread_struct thread;
        const struct cred *cred;
        struct pid *thread_pid;
} __attribute__((preserve_access_index));

/* a raw tracepoint's context: the tracepoint's arguments as u64 (profd_oom) */
struct bpf_raw_tracepoint_args {
        __u64 args[0];
};

#endif
