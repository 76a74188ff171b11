/* Off-CPU time by stack, and who ended it. On sched_switch the thread that
 * leaves the CPU notes the time and its state. When it comes back, the time
 * away is known; only then, and only if it passes the threshold, are its
 * stacks walked: the kernel stack at sched_switch (still intact while it was
 * away: bpf_get_task_stack), the user stack at sched_exit_tp, the end of
 * __schedule, which runs as the thread switched in, whose user memory can
 * be read and whose user registers are those it blocked with. A kept block
 * is parked in a per-CPU slot between the two; every other switch costs the
 * exit program one load. Kernels without sched_exit_tp (before ~6.16) walk
 * the user stack at every switch-out instead, into per-task storage. On
 * sched_waking, the waker's stacks are counted with the blocked time it
 * ended. With offcpu_sample set, blocks shorter than it are walked by a
 * draw and counted as offcpu_sample (block_weight). Some kernels do not report every switch to the sched_switch
 * tracepoint: the program on sched_exit_tp then ends the block. */
/* row_lookup verified once per program (bpf/unwind.bpf.h) */
#define UNWIND_ROW_LOOKUP_GLOBAL
#include "unwind.bpf.h"
#include "kstack-memo.bpf.h"

/* Settings (defaults: see daemon/conf.h). The thresholds live in .data, not
 * .rodata, so a reload (SIGHUP) can change them while the programs run; the
 * daemon writes them through the memory-mapped map. The switches are fixed
 * at load, where the verifier prunes what they turn off. */
volatile __u64 offcpu_min_ns = 1000000;
volatile __u64 offcpu_max_ns = ~0ULL;
/* The shortest kept block the off-CPU log records with its start and end
 * (the timeline); shorter ones are counted in PROFD_CNT_OFFCPU_SHORT. */
volatile __u64 offcpu_timeline_min_ns = 1000000;
/* offcpu_sample: kept blocks shorter than it are walked by a draw
 * (block_weight); 0: every kept block is walked. */
volatile __u64 offcpu_sample_ns SEC(".data") = 0;
const volatile __u8 offcpu_enabled = 1;
const volatile __u8 wakeup_enabled = 1;
/* 0: the timeline is off (setting timeline): no block is logged, timed or
 * counted as left out of the timeline; the counts map has them all. */
const volatile __u8 offcpu_timeline_enabled = 1;
/* 0 (setting offcpu_preempted_stacks off, the default): a preempted wait
 * (state R) is counted and logged without its stacks; 1: walked like any
 * other block. */
const volatile __u8 offcpu_preempted_stacks = 0;
/* profd's own process, and 0 (setting offcpu_self_stacks off, the
 * default): its threads' blocks are counted and logged without their
 * stacks, and the wake-ups of them only counted (PROFD_CNT_WAKEUP_SELF);
 * 1: walked like any other. Its threads wake for every batch of process
 * events and every drain: on the build loop they were 40% of the kept
 * blocks, each walked at the switch-in and at its waker, to tell where
 * profd waits (docs/performance.md). */
const volatile __u32 self_tgid = 0;
const volatile __u8 offcpu_self_stacks = 0;
/* 1: the kernel has no sched_exit_tp: walk user stacks at switch-out. */
const volatile __u8 offcpu_walk_at_switch_out = 0;

/* The numeric value of a kernel pointer (profd runs with CAP_PERFMON, for
 * which the verifier lets a program read pointers as numbers). */
static __always_inline __u64 pointer_value(const void *ptr) {
        const void *volatile slot = ptr;
        __u64 v = 0;

        bpf_probe_read_kernel(&v, sizeof(v), (const void *) &slot);
        return v;
}

/* Setting kernel_stack_memo (kstack-memo.bpf.h): enum profd_kstack_memo. */
const volatile __u8 kstack_memo_mode = PROFD_KSTACK_MEMO_ON;
/* _stext and do_syscall_64's code, from /proc/kallsyms; start 0: unknown,
 * every stack is walked. */
const volatile __u64 kstack_text_start = 0, kstack_stop_start = 0, kstack_stop_end = 0;

/* Where the words read below the tracepoint's arguments (ctx) start: they
 * hold the return address into bpf_trace_run1, the walk's second frame,
 * which is another when kernel.bpf_stats_enabled is on (the program is
 * called from another place then). */
#define KSTACK_BELOW_CTX 64

/* The memo's lookup of a stack whose live words are the len bytes at from
 * (kstack-memo.bpf.h), read into slot's buffer (0: the switch programs',
 * 1: the waker's): 1, k holds the memo's frames; 0, a miss, the signature
 * kept in the buffer for kstack_memo_remember; -1, the memo cannot serve
 * it. A global function, as kstack_memo_remember: the verifier checks each
 * once per program, where inlined they had the scheduler programs' user
 * walks after them checked again for every state they left (+110 k
 * instructions in profd_switch_done and profd_waking, over half the
 * verifier's limit). */
int kstack_memo_lookup(__u64 from, __u64 len, __u32 slot, __u32 walker, struct profd_frames *k);
__weak __noinline int kstack_memo_lookup(__u64 from, __u64 len, __u32 slot, __u32 walker, struct profd_frames *k) {
        struct kstack_text text = { kstack_text_start, kstack_stop_start, kstack_stop_end };
        struct kstack_words *words;
        __u64 sig;

        if (!k || (len & 7))
                return -1;
        words = bpf_map_lookup_elem(&kstack_words, &slot);
        if (!words)
                return -1;
        barrier_var(len);
        if (len == 0 || len > sizeof(words->w))
                return -1;
        if (bpf_probe_read_kernel(words->w, len, (const void *) from))
                return -1;
        sig = kstack_sig(words, len / 8, &text, walker);
        words->e.sig = sig;
        return kstack_memo_get(sig, k, words, len / 8) ? 1 : 0;
}

/* Remembers k, the walk of the stack kstack_memo_lookup missed last in
 * slot's buffer (unplaced: see kstack_memo_put). */
int kstack_memo_remember(__u64 len, __u32 slot, __u32 unplaced, const struct profd_frames *k);
__weak __noinline int kstack_memo_remember(__u64 len, __u32 slot, __u32 unplaced, const struct profd_frames *k) {
        struct kstack_text text = { kstack_text_start, kstack_stop_start, kstack_stop_end };
        struct kstack_words *words = bpf_map_lookup_elem(&kstack_words, &slot);

        if (!words || !k || len > sizeof(words->w))
                return 0;
        kstack_memo_put(words->e.sig, k, words, len / 8, &text, unplaced);
        return 0;
}

/* The kernel stack of task into k: current's from ctx (bpf_get_stack), or
 * a task not running (crosstask: bpf_get_task_stack). Through the memo
 * (kstack-memo.bpf.h) when the task's live stack, from from (the lowest
 * address the walk's start depends on: KSTACK_BELOW_CTX below ctx, or the
 * task's saved stack pointer) to its user registers, is on its own stack
 * and at most KSTACK_MEMO_WORDS deep. Of bpf_get_stack's frames only the
 * first (this program's call of it, the same at each call) may lie below
 * the words; every other must be among them to be remembered. slot: the
 * words' buffer (0: the switch programs', 1: the waker's). False (counted)
 * if the walk failed. */
static __always_inline bool kernel_stack_get(void *ctx, struct task_struct *task, bool crosstask, __u64 from,
                                             struct profd_frames *k, enum kstack_walker walker, __u32 slot) {
        struct kstack_words *words;
        __u64 regs, bottom, len = 0;
        int memo = -1;
        long bytes;

        if (kstack_memo_mode && kstack_text_start) {
                regs = pointer_value((const void *) bpf_task_pt_regs(task));
                bottom = (__u64) BPF_CORE_READ(task, stack);
                if (from > bottom && from < regs) {
                        len = regs - from;
                        memo = kstack_memo_lookup(from, len, slot, walker, k);
                }
        }
        if (memo == 1) {
                counter_add(PROFD_CNT_KSTACK_MEMO_HITS, 1);
                if (kstack_memo_mode != PROFD_KSTACK_MEMO_VERIFY)
                        return true;
                /* verify: walk as well, into the words (no longer needed),
                 * compare, and keep the walk's frames (or its failure) */
                words = bpf_map_lookup_elem(&kstack_words, &slot);
                if (!words)
                        return true;
                bytes = crosstask ? bpf_get_task_stack(task, words->w, sizeof(k->ips), 0)
                                  : bpf_get_stack(ctx, words->w, sizeof(k->ips), 0);
                if (bytes <= 0)
                        return frames_set(k, bytes, PROFD_DROP_KERNEL_STACK_ERROR);
                /* frame 0 of bpf_get_stack's is this program's call of it,
                 * which differs from the walk's below */
                if (!kstack_memo_same(k, words->w, bytes / sizeof(__u64), crosstask ? 0 : 1)) {
                        counter_add(PROFD_CNT_KSTACK_MEMO_MISMATCHES, 1);
                        __builtin_memcpy(k->ips, words->w, sizeof(k->ips));
                        k->n = bytes / sizeof(__u64);
                }
                return true;
        }
        bytes = crosstask ? bpf_get_task_stack(task, k->ips, sizeof(k->ips), 0)
                          : bpf_get_stack(ctx, k->ips, sizeof(k->ips), 0);
        if (!frames_set(k, bytes, PROFD_DROP_KERNEL_STACK_ERROR))
                return false;
        if (memo == 0) {
                counter_add(PROFD_CNT_KSTACK_MEMO_WALKS, 1);
                kstack_memo_remember(len, slot, crosstask ? 0 : 1, k);
        }
        return true;
}

/* Its maps (tasks, task_stacks, offcpu_parked) are in maps.bpf.h, their
 * values (struct profd_task, struct offcpu_park) in state.bpf.h. */

#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2
#define TASK_STOPPED 0x4
#define TASK_TRACED 0x8
#define TASK_NOLOAD 0x400

static __always_inline __u8 state_code(unsigned int s) {
        if (s == 0)
                return PROFD_STATE_RUNNING;
        if (s & TASK_INTERRUPTIBLE)
                return PROFD_STATE_SLEEPING;
        if (s & TASK_UNINTERRUPTIBLE)
                return (s & TASK_NOLOAD) ? PROFD_STATE_IDLE : PROFD_STATE_DISK;
        if (s & (TASK_STOPPED | TASK_TRACED))
                return PROFD_STATE_STOPPED;
        return PROFD_STATE_OTHER;
}

static __always_inline void switch_out(void *ctx, struct task_struct *prev, unsigned int prev_state, __u64 now) {
        struct profd_task *t = bpf_task_storage_get(&tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
        struct profd_frames *f, *u;

        if (!t) {
                counter_add(PROFD_DROP_TASK_STORAGE, 1);
                return;
        }
        /* switch_in, or profd_switch_done for a switch the tracepoint did
         * not report, clears it: the kernel ran prev since its last
         * switch-out without either program seeing it switched in, so that
         * block's end, time and stack are unknown (docs/reliability.md) */
        if (t->switch_out_ns)
                counter_add(PROFD_DROP_SWITCH_MISSED, 1);
        t->switch_out_ns = now;
        t->state = state_code(prev_state);
        t->woken = 0;
        t->user_error = 0;
        t->sample_us = 0;
        if (!offcpu_walk_at_switch_out || !offcpu_enabled || (prev->flags & PF_KTHREAD))
                return;
        if (t->state == PROFD_STATE_RUNNING && !offcpu_preempted_stacks)
                return; /* not walked: count_unwalked */
        if ((__u32) prev->tgid == self_tgid && !offcpu_self_stacks)
                return;
        /* no sched_exit_tp: only now can prev's user memory be read */
        u = bpf_task_storage_get(&task_stacks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
        f = scratch_get(SCRATCH_SWITCH_USER);
        if (!u || !f) {
                t->user_error = 1;
                counter_add(PROFD_DROP_TASK_STORAGE, 1);
                return;
        }
        if (!user_stack_unwind(prev, f, SCRATCH_SWITCH_USER, NULL)) {
                t->user_error = 1;
                return;
        }
        if (bpf_probe_read_kernel(u, sizeof(*u), f))
                t->user_error = 1;
}

/* Logs a counted block (its key complete) in the off-CPU log with its end
 * and duration (the time it is counted for), or counts why not. Costs, per
 * kept block of at least offcpu_timeline_min_ns, two array lookups and a
 * 64-byte store into this CPU's region (docs/performance.md). */
static __always_inline void log_block(__u32 gen, const struct profd_sample_key *key, __u64 end_ns,
                                      __u64 duration) {
        __u32 slots = *(volatile __u32 *) &offcpu_log_slots;
        struct profd_block_slot *h, *r;
        __u32 head_idx, idx;
        __u64 n;

        if (!offcpu_timeline_enabled)
                return;
        if (duration < offcpu_timeline_min_ns) {
                counter_add(PROFD_CNT_OFFCPU_SHORT, 1);
                counter_add(PROFD_CNT_OFFCPU_SHORT_NS, duration);
                return;
        }
        if (slots < 2)
                goto unlogged;
        head_idx = (GEN_MAPS(gen) * offcpu_log_cpus + bpf_get_smp_processor_id()) * slots;
        h = bpf_map_lookup_elem(&offcpu_log, &head_idx);
        if (!h)
                goto unlogged;
        n = h->n;
        if (n >= slots - 1)
                goto unlogged;
        idx = head_idx + 1 + (__u32) n;
        r = bpf_map_lookup_elem(&offcpu_log, &idx);
        if (!r)
                goto unlogged;
        r->key = *key;
        r->end_ns = end_ns;
        r->duration_ns = duration;
        h->n = n + 1;
        return;
unlogged:
        counter_add(PROFD_CNT_OFFCPU_UNLOGGED, 1);
        counter_add(PROFD_CNT_OFFCPU_UNLOGGED_NS, duration);
}

/* Counts a kept block whose stacks are walked: key without its stacks,
 * kernel frames in k, user frames in u (NULL: a kernel thread); it is
 * counted for weight (block_weight) and ended at end_ns. The off-CPU log
 * holds it as what it counts for: a block walked by a draw as one
 * offcpu_sample ending where it ended, as an on-CPU sample stands for a
 * period of CPU time, so that the timeline's windows estimate blocked time
 * as the aggregates do; a block of offcpu_sample or more as itself. */
static __always_inline void count_block(struct task_struct *task, struct profd_sample_key *key,
                                        struct profd_frames *k, bool kernel_error, struct profd_frames *u,
                                        bool user_error, __u64 weight, __u64 end_ns) {
        __u32 gen = *(volatile __u32 *) &generation;

        if (!u)
                key->user_stack = PROFD_STACK_NONE;
        else if (user_error)
                key->user_stack = PROFD_STACK_LOST;
        else
                key->user_stack = frames_store(gen, u, SCRATCH_SWITCH_USER, 0);
        key->kernel_stack = kernel_error ? PROFD_STACK_LOST : frames_store(gen, k, SCRATCH_SWITCH_KERNEL, 0);
        count_key(gen, key, weight, false);
        log_block(gen, key, end_ns, weight);
        announce_if_new(task, key->tgid, key->start_ns);
}

/* A kept block whose stacks are not walked: a preempted wait (state R:
 * runnable, waiting for a CPU) with offcpu_preempted_stacks off, or a
 * block of profd's own threads with offcpu_self_stacks off. Counted under
 * the thread with no stack, which the writer stores as one frame,
 * [preempted] or [unwalked]. Where a thread was preempted is where it ran,
 * which the on-CPU samples already tell; walked, a loaded host's
 * preemptions are most of its new stacks (docs/performance.md). Returns
 * whether it counted key. */
static __always_inline bool count_unwalked(struct task_struct *task, struct profd_sample_key *key, __u64 delta,
                                           __u64 end_ns) {
        __u32 gen;

        if ((offcpu_preempted_stacks || key->state != PROFD_STATE_RUNNING) &&
            (offcpu_self_stacks || key->tgid != self_tgid))
                return false;
        gen = *(volatile __u32 *) &generation;
        key->kernel_stack = PROFD_STACK_NONE;
        key->user_stack = PROFD_STACK_NONE;
        count_key(gen, key, delta, false);
        log_block(gen, key, end_ns, delta);
        announce_if_new(task, key->tgid, key->start_ns);
        return true;
}

/* Ends the block of a thread switched in at now (t->switch_out_ns set).
 * Returns its time away if it is to be counted, else 0. */
static __always_inline __u64 block_end(struct profd_task *t, __u64 now) {
        __u64 delta = now - t->switch_out_ns;

        t->switch_out_ns = 0;
        if (delta < offcpu_min_ns || delta > offcpu_max_ns) {
                counter_add(PROFD_CNT_OFFCPU_FILTERED, 1);
                counter_add(PROFD_CNT_OFFCPU_FILTERED_NS, delta);
                return 0;
        }
        return offcpu_enabled ? delta : 0;
}

/* The time a kept block of delta, not yet walked, is counted for; 0: it
 * is left unwalked (counted in PROFD_CNT_OFFCPU_UNSAMPLED). With
 * offcpu_sample set to S, a block shorter than S is walked with
 * probability delta / S and then counted as S, so its expected count is
 * delta and every stack's total stays an unbiased estimate: like the
 * on-CPU sampler, about one walk per S of blocked time. A block of S or
 * more is always walked and counted exactly. The draw, from 1 us to S, is
 * the block's (t->sample_us): its wake-up, which comes first and sees less
 * of the block, and its switch-in use the same one, so a block whose waker
 * was walked is walked too. */
static __always_inline __u64 block_weight(struct profd_task *t, __u64 delta) {
        __u64 s = *(volatile __u64 *) &offcpu_sample_ns;

        if (s == 0 || delta >= s)
                return delta;
        if (!t->sample_us)
                t->sample_us = 1 + (__u32) (((__u64) bpf_get_prandom_u32() * (s / 1000)) >> 32);
        return delta >= (__u64) t->sample_us * 1000 ? s : 0;
}

/* A kept block left unwalked by block_weight's draw. */
static __always_inline void count_unsampled(__u64 delta) {
        counter_add(PROFD_CNT_OFFCPU_UNSAMPLED, 1);
        counter_add(PROFD_CNT_OFFCPU_UNSAMPLED_NS, delta);
}

/* A kept block's key, without its stacks. */
static __always_inline void block_key(struct task_struct *task, __u8 state, struct profd_sample_key *key) {
        key->kind = PROFD_KIND_OFFCPU;
        key->state = state;
        key->tgid = task->tgid;
        key->tid = task->pid;
        key->start_ns = process_start_ns(task);
        /* read only for kept blocks; a blocked thread rarely changes cgroup */
        key->cgroup_id = task->cgroups->dfl_cgrp->kn->id;
}

static __always_inline void switch_in(struct task_struct *next, __u64 now) {
        struct profd_task *t = bpf_task_storage_get(&tasks, next, 0, 0);
        struct profd_sample_key key = {};
        struct offcpu_park *pk;
        struct profd_frames *k;
        bool kernel_error;
        __u32 zero = 0;
        __u64 delta, weight;

        if (!t || t->switch_out_ns == 0)
                return;
        delta = block_end(t, now);
        if (!delta)
                return;
        block_key(next, t->state, &key);
        if (count_unwalked(next, &key, delta, now))
                return;
        weight = block_weight(t, delta);
        if (!weight) {
                count_unsampled(delta);
                return;
        }

        k = scratch_get(SCRATCH_SWITCH_KERNEL);
        if (!k)
                return;
        kernel_error = !kernel_stack_get(NULL, next, true, (__u64) BPF_CORE_READ(next, thread.sp), k,
                                         KSTACK_WALKER_SWITCH_IN, 0);

        if (next->flags & PF_KTHREAD) {
                count_block(next, &key, k, kernel_error, NULL, false, weight, now);
                return;
        }
        if (offcpu_walk_at_switch_out) {
                struct profd_frames *u = bpf_task_storage_get(&task_stacks, next, 0, 0);

                count_block(next, &key, k, kernel_error, u, t->user_error || !u, weight, now);
                return;
        }
        /* the user stack can be read once next runs: sched_exit_tp */
        pk = bpf_map_lookup_elem(&offcpu_parked, &zero);
        if (!pk)
                return;
        pk->tgid = key.tgid;
        pk->start_ns = key.start_ns;
        pk->cgroup_id = key.cgroup_id;
        pk->weight = weight;
        pk->end_ns = now;
        pk->state = key.state;
        pk->kernel_error = kernel_error;
        pk->tid = key.tid;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(profd_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state) {
        __u64 now = bpf_ktime_get_ns();

        /* the idle task is never attributed */
        if (prev->pid != 0)
                switch_out(ctx, prev, prev_state, now);
        if (next->pid != 0)
                switch_in(next, now);
        return 0;
}

/* Where the kernel's scheduler and lock functions are (.sched.text and
 * .lock.text, from /proc/kallsyms); 0: unknown. */
const volatile __u64 sched_text_start = 0, sched_text_end = 0;
const volatile __u64 lock_text_start = 0, lock_text_end = 0;

struct sched_trim {
        struct profd_frames *kernel;
        __u32 n;
        bool below;
};

static long sched_trim_frame(__u32 i, struct sched_trim *trim) {
        struct profd_frames *k = trim->kernel;
        __u32 to = trim->n;
        __u64 ip;

        if (i >= k->n)
                return 1;
        barrier_var(i); /* the verifier must see these bounds on their own */
        if (i >= PROFD_MAX_FRAMES)
                return 1;
        ip = k->ips[i];
        if ((ip >= sched_text_start && ip < sched_text_end) || (ip >= lock_text_start && ip < lock_text_end)) {
                trim->below = true;
                return 0;
        }
        if (!trim->below)
                return 0;
        barrier_var(to);
        if (to >= PROFD_MAX_FRAMES)
                return 1;
        k->ips[to] = ip;
        trim->n = to + 1;
        return 0;
}

/* The kernel stack the current task blocked with, as bpf_get_task_stack
 * gives it for a task that is not running (switch_in): the frames of this
 * program and of the tracepoint above __schedule dropped, and, like the
 * kernel's own walk of a sleeping task, those in scheduler and lock
 * functions. False (counted) if it cannot be had. */
static __always_inline bool blocked_kernel_stack(void *ctx, struct profd_frames *k) {
        struct sched_trim trim = { .kernel = k };

        /* walked without the memo: such switches are few (docs/reliability.md),
         * and the memo's paths cost this program's verification 110 k
         * instructions */
        if (!frames_set(k, bpf_get_stack(ctx, k->ips, sizeof(k->ips), 0), PROFD_DROP_KERNEL_STACK_ERROR))
                return false;
        bpf_loop(PROFD_MAX_FRAMES, sched_trim_frame, &trim, 0);
        k->n = trim.n;
        if (!trim.below) {
                /* no scheduler frame: its range is unknown, or the walk
                 * stopped above __schedule */
                counter_add(PROFD_DROP_KERNEL_STACK_ERROR, 1);
                return false;
        }
        return true;
}

/* The end of __schedule, as the task switched in (is_switch): walks the
 * user stack of a block parked at its switch-in and counts the block.
 *
 * It also ends blocks whose switch-in profd_switch never saw. Some kernels
 * do not report every switch to the sched_switch tracepoint: on the test
 * VM (6.18, a Firecracker guest) no switch made while a thread of its init
 * process (tgid 1, the VM's agent) or CPU 1's idle task is the current
 * task reaches ftrace, perf or BPF, while the sched_exit_tp that ends the
 * same __schedule, run as the thread switched in, does (docs/reliability.md,
 * Faults). Without this the thread switched to lost its whole block
 * (switch_missed). Here it runs as at the end of any other switch, so its
 * block is whole: time, state, and the stacks it blocked with. The check
 * costs a task storage load per real switch without a parked block. */
SEC("tp_btf/sched_exit_tp")
int BPF_PROG(profd_switch_done, bool is_switch) {
        struct offcpu_park *pk;
        struct task_struct *task;
        struct profd_sample_key key = {};
        struct profd_frames *k, *u;
        struct profd_task *t;
        bool kernel_error, user_ok;
        __u32 zero = 0, gen;
        __u64 delta, weight, end_ns;

        pk = bpf_map_lookup_elem(&offcpu_parked, &zero);
        if (!pk)
                return 0;
        task = bpf_get_current_task_btf();
        if (pk->tid == 0) {
                if (!is_switch || task->pid == 0)
                        return 0; /* no switch, or the idle task */
                t = bpf_task_storage_get(&tasks, task, 0, 0);
                if (!t || t->switch_out_ns == 0)
                        return 0; /* every short block ends here */
                /* a switch-in profd_switch did not see: end the block here */
                end_ns = bpf_ktime_get_ns();
                delta = block_end(t, end_ns);
                if (!delta)
                        return 0;
                block_key(task, t->state, &key);
                if (count_unwalked(task, &key, delta, end_ns))
                        return 0;
                weight = block_weight(t, delta);
                if (!weight) {
                        count_unsampled(delta);
                        return 0;
                }
                k = scratch_get(SCRATCH_SWITCH_KERNEL);
                if (!k)
                        return 0;
                kernel_error = !blocked_kernel_stack(ctx, k);
                if (task->flags & PF_KTHREAD) {
                        count_block(task, &key, k, kernel_error, NULL, false, weight, end_ns);
                        return 0;
                }
        } else {
                key.tid = pk->tid;
                pk->tid = 0;
                if (key.tid != (__u32) task->pid)
                        return 0; /* cannot happen: the switch-in's task runs now */
                key.kind = PROFD_KIND_OFFCPU;
                key.state = pk->state;
                key.tgid = pk->tgid;
                key.start_ns = pk->start_ns;
                key.cgroup_id = pk->cgroup_id;
                kernel_error = pk->kernel_error;
                weight = pk->weight;
                end_ns = pk->end_ns;
                k = scratch_get(SCRATCH_SWITCH_KERNEL);
                if (!k)
                        return 0;
        }
        u = scratch_get(SCRATCH_SWITCH_USER);
        if (!u)
                return 0;
        /* count_block's work, with the kernel stack stored before the
         * user stack's walk: kernel_error is then dead there, and the
         * verifier checks the walk once for both ways here, not once for
         * each (as in profd_waking) */
        gen = *(volatile __u32 *) &generation;
        key.kernel_stack = kernel_error ? PROFD_STACK_LOST : frames_store(gen, k, SCRATCH_SWITCH_KERNEL, 0);
        user_ok = user_stack_unwind(task, u, SCRATCH_SWITCH_USER, NULL);
        key.user_stack = user_ok ? frames_store(gen, u, SCRATCH_SWITCH_USER, 0) : PROFD_STACK_LOST;
        count_key(gen, &key, weight, false);
        log_block(gen, &key, end_ns, weight);
        announce_if_new(task, key.tgid, key.start_ns);
        return 0;
}

/* Where the kernel's interrupt entry code is (.irqentry.text: the entries
 * of device interrupts and system vectors), from /proc/kallsyms; 0: unknown. */
const volatile __u64 irqentry_start = 0, irqentry_end = 0;

struct interrupt_scan {
        const struct profd_frames *kernel; /* NULL: no kernel stack to scan */
        bool scanned;
        bool found;
        __u32 index; /* of the interrupt's entry, when found */
};


static long interrupt_frame(__u32 i, struct interrupt_scan *scan) {
        __u64 ip;

        if (i >= scan->kernel->n)
                return 1;
        barrier_var(i); /* the verifier must see this bound on its own */
        if (i >= PROFD_MAX_FRAMES)
                return 1;
        ip = scan->kernel->ips[i];
        if (ip >= irqentry_start && ip < irqentry_end) {
                scan->found = true;
                scan->index = i;
                return 1;
        }
        return 0;
}

/* Looks for the interrupt's entry among scan->kernel's frames, once. */
static __always_inline void interrupt_scan_run(struct interrupt_scan *scan) {
        if (scan->scanned || !scan->kernel)
                return;
        bpf_loop(PROFD_MAX_FRAMES, interrupt_frame, scan, 0);
        scan->scanned = true;
}

/* Whether this CPU runs an interrupt (hard, or softirqs) rather than the
 * current task's own work. (The kernel's preempt_count would tell, but it
 * is a per-CPU variable, and kernels without CONFIG_KALLSYMS_ALL, like this
 * test VM's, give BPF no address for it.) Two tests, each exact where the
 * other may not be:
 * - ctx, the tracepoint's arguments, is on the kernel stack this CPU runs
 *   on. Off the task's own stack (task->stack up to its saved user
 *   registers) it is an interrupt's: x86-64 runs interrupts that arrive in
 *   kernel mode, and the softirqs they or a task's local_bh_enable run, on
 *   a per-CPU stack.
 * - An interrupt that arrives in user mode runs on the task's stack, which
 *   is empty then: its kernel stack is short and has the interrupt's entry
 *   (asm_sysvec_*, asm_common_interrupt) among its frames.
 * off_stack is the first test's answer (off_task_stack). scan holds the
 * kernel stack (or NULL), and keeps what its scan found for the trim
 * below. */
static __always_inline bool in_interrupt_context(bool off_stack, struct interrupt_scan *scan) {
        if (off_stack)
                return true;
        interrupt_scan_run(scan);
        return scan->found;
}

/* A wakeup of process 0 (an interrupt's, or the idle task's) keeps its
 * kernel stack up to the interrupt's entry. Below it is whatever the
 * interrupt happened to arrive in, as varied as an on-CPU sample's kernel
 * stack and no part of the wakeup: kept, those were half of a build host's
 * new stacks (docs/performance.md). The stack is scanned only if
 * in_interrupt_context has not already. */
static __always_inline void trim_at_interrupt_entry(struct profd_frames *kernel, struct interrupt_scan *scan) {
        interrupt_scan_run(scan);
        if (scan->found && scan->index < PROFD_MAX_FRAMES)
                kernel->n = scan->index + 1;
}

/* The frames an interrupt's wake-up walks first (interrupt_kernel_stack):
 * a timer's reach their interrupt's entry in about 15, this program's own
 * and the tracepoint's included. */
#define IRQ_WALK_FRAMES 24

/* The kernel stack of a wake-up on an interrupt's stack (ctx off the
 * current task's own), which is kept only up to the interrupt's entry
 * (trim_at_interrupt_entry). The kernel's walk of it goes on past the
 * entry through whatever the interrupt arrived in, as deep as that is (on
 * the build loop such walks took 10 us on average, a wake-up by a task
 * 0.5 us), so it is walked first to IRQ_WALK_FRAMES frames and only again
 * in full when the entry is not among them: the frames kept are the
 * same. scan (interrupt_scan) is left with what it found in k. */
static __always_inline bool interrupt_kernel_stack(void *ctx, struct profd_frames *k, struct interrupt_scan *scan) {
        long bytes = bpf_get_stack(ctx, k->ips, IRQ_WALK_FRAMES * sizeof(__u64), 0);

        if (bytes > 0 && bytes < (long) (IRQ_WALK_FRAMES * sizeof(__u64)))
                return frames_set(k, bytes, PROFD_DROP_KERNEL_STACK_ERROR); /* the whole stack */
        if (bytes > 0) {
                frames_set(k, bytes, PROFD_DROP_KERNEL_STACK_ERROR);
                scan->kernel = k;
                interrupt_scan_run(scan);
                if (scan->found)
                        return true;
                scan->scanned = false;
        }
        bytes = bpf_get_stack(ctx, k->ips, sizeof(k->ips), 0);
        return frames_set(k, bytes, PROFD_DROP_KERNEL_STACK_ERROR);
}

/* Whether ctx, the tracepoint's arguments, is off task's own kernel stack:
 * on a per-CPU interrupt stack (see in_interrupt_context). */
static __always_inline bool off_task_stack(void *ctx, struct task_struct *task) {
        __u64 here = pointer_value(ctx);
        __u64 bottom = (__u64) BPF_CORE_READ(task, stack);
        __u64 top = pointer_value((const void *) bpf_task_pt_regs(task)) + bpf_core_type_size(struct pt_regs);

        return here <= bottom || here >= top;
}

/* A wakeup is credited to the task that did it. In interrupt context that is
 * not the current task, which the interrupt merely preempted (a timer that
 * expires while a thread writes to a pipe is not the writer's doing): such
 * wakeups, like those over the idle task, go to process 0 with no user
 * stack, and the kernel stack of the interrupt and of what it interrupted. */
SEC("tp_btf/sched_waking")
int BPF_PROG(profd_waking, struct task_struct *p) {
        struct task_struct *waker = bpf_get_current_task_btf();
        struct interrupt_scan scan = {};
        struct profd_sample_key key = {};
        struct profd_frames *f, *k;
        struct profd_task *t;
        bool kernel_ok, off_stack;
        __u32 gen;
        __u64 blocked, weight;

        if (p->pid == 0)
                return 0;
        t = bpf_task_storage_get(&tasks, p, 0, 0);
        if (!t || t->switch_out_ns == 0 || t->woken)
                return 0;
        blocked = bpf_ktime_get_ns() - t->switch_out_ns;
        /* only blocks that will be kept are worth walking the waker for */
        if (blocked < offcpu_min_ns || blocked > offcpu_max_ns)
                return 0;
        t->woken = 1;
        if ((__u32) p->tgid == self_tgid && !offcpu_self_stacks) {
                counter_add(PROFD_CNT_WAKEUP_SELF, 1);
                return 0;
        }
        /* the block so far, by the block's own draw (block_weight) */
        weight = block_weight(t, blocked);
        if (!weight) {
                counter_add(PROFD_CNT_WAKEUP_UNSAMPLED, 1);
                return 0;
        }

        gen = *(volatile __u32 *) &generation;
        key.kind = PROFD_KIND_WAKEUP;
        key.state = t->state;
        key.peer_tid = p->pid;
        k = scratch_get(SCRATCH_WAKER_KERNEL);
        if (!k)
                return 0;
        off_stack = off_task_stack(ctx, waker);
        if (off_stack)
                kernel_ok = interrupt_kernel_stack(ctx, k, &scan);
        else
                kernel_ok = kernel_stack_get(ctx, waker, false, pointer_value(ctx) - KSTACK_BELOW_CTX, k,
                                             KSTACK_WALKER_WAKER, 1);
        scan.kernel = kernel_ok ? k : NULL;
        if (waker->pid != 0 && !in_interrupt_context(off_stack, &scan)) {
                key.tid = waker->pid;
                key.tgid = waker->tgid;
                key.start_ns = process_start_ns(waker);
                key.cgroup_id = bpf_get_current_cgroup_id();
        }
        if (key.tid == 0 && kernel_ok)
                trim_at_interrupt_entry(k, &scan);
        /* before the user stack's walk, so that kernel_ok is dead there: the
         * verifier then checks the walk once, not once per value of it
         * (half of all of profd's verification time) */
        key.kernel_stack = kernel_ok ? frames_store(gen, k, SCRATCH_WAKER_KERNEL, 0) : PROFD_STACK_LOST;

        if (key.tid == 0 || (waker->flags & PF_KTHREAD)) {
                key.user_stack = PROFD_STACK_NONE;
        } else {
                f = scratch_get(SCRATCH_WAKER_USER);
                if (!f)
                        return 0;
                key.user_stack = user_stack_unwind(waker, f, SCRATCH_WAKER_USER, NULL) ? frames_store(gen, f, SCRATCH_WAKER_USER, 0) : PROFD_STACK_LOST;
        }

        count_key(gen, &key, weight, false);
        if (key.tgid)
                announce_if_new(waker, key.tgid, key.start_ns);
        return 0;
}
