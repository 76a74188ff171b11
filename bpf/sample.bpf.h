/* The sample path: what every program does with its stacks and its key.
 * A stack walked into the slot's scratch (scratch_get) is stored as a chain
 * of nodes (frames_store, through the node cache of cache.bpf.h); the key
 * is counted (count_key) or, by the sampler, logged (log_sample); and a
 * process instance the daemon has not heard of is announced on the ring
 * buffer (announce_if_new). Included by every program; the user stack's
 * walk is in unwind.bpf.h. */
#pragma once

#include "cache.bpf.h"

static __always_inline __u64 process_start_ns(struct task_struct *task) {
        /* direct loads through the BTF-typed pointer (fault-guarded, CO-RE
         * relocated): cheaper than a bpf_probe_read_kernel call per pointer */
        return task->group_leader->start_boottime;
}

/* The slot's frames: stacks are walked and stored from there. */
static __always_inline struct profd_frames *scratch_get(__u32 slot) {
        struct walk_window *w = bpf_map_lookup_elem(&walk_windows, &slot);

        return w ? &w->frames : NULL;
}

/* Copies bytes written by bpf_get_stack/bpf_get_task_stack into n; on error
 * counts it and returns false. */
static __always_inline bool frames_set(struct profd_frames *f, long bytes, __u32 error_counter) {
        f->end = 0;
        if (bytes <= 0) {
                f->n = 0;
                counter_add(error_counter, 1);
                return false;
        }
        f->n = bytes / sizeof(__u64);
        return true;
}

/* node_tryK: stores nd under id in framesK_<gen>, or finds it there.
 * 0: the id names nd's contents now. -EEXIST: the id holds another node
 * (a hash collision). Else the map's error: -E2BIG when it is full. The
 * comparison covers everything the id was hashed from. A node inserted is
 * counted (PROFD_CNT_NODES_NEW_K: the daemon's fill check). */
#define DEFINE_NODE_TRY(K)                                                                      \
        static __always_inline long node_try##K(__u32 gen, __u64 id, const struct profd_node32 *nd) { \
                void *map = GEN_MAPS(gen) ? (void *) &frames##K##_1 : (void *) &frames##K##_0;   \
                struct profd_node##K *v = bpf_map_lookup_elem(map, &id);                       \
                long err;                                                                       \
                                                                                                \
                if (!v) {                                                                       \
                        err = bpf_map_update_elem(map, &id, nd, BPF_NOEXIST);                   \
                        if (err == 0)                                                           \
                                counter_add(PROFD_CNT_NODES_NEW_##K, 1);                        \
                        if (err != -EEXIST)                                                     \
                                return err;                                                     \
                        /* another CPU stored this id in between */                             \
                        v = bpf_map_lookup_elem(map, &id);                                      \
                        if (!v)                                                                 \
                                return -EEXIST;                                                 \
                }                                                                               \
                if (v->h.parent != nd->h.parent || v->h.n != nd->h.n || v->h.end != nd->h.end)  \
                        return -EEXIST;                                                         \
                for (__u32 i = 0; i < K; i++) {                                                 \
                        if (i >= nd->h.n)                                                       \
                                break;                                                          \
                        if (v->ips[i] != nd->ips[i])                                            \
                                return -EEXIST;                                                 \
                }                                                                               \
                return 0;                                                                       \
        }
DEFINE_NODE_TRY(8)
DEFINE_NODE_TRY(16)
DEFINE_NODE_TRY(32)

/* Stores the node in the smallest class that holds its frames, else in
 * the next larger one with room, or whose slot for it is not taken by
 * another node: lookups go through the classes in the same order, so a
 * node is found where it was stored. Returns its id, or PROFD_STACK_LOST
 * (counted) when no class took it. */
static __always_inline __u64 node_put(__u32 gen, const struct profd_node32 *nd, __u64 h) {
        __u32 n = nd->h.n;

        h &= PROFD_ID_HASH_MASK;
        if (n <= PROFD_CLASS_FRAMES(PROFD_CLASS_8) &&
            node_try8(gen, h | ((__u64) PROFD_CLASS_8 << PROFD_ID_CLASS_SHIFT), nd) == 0)
                return h | ((__u64) PROFD_CLASS_8 << PROFD_ID_CLASS_SHIFT);
        if (n <= PROFD_CLASS_FRAMES(PROFD_CLASS_16) &&
            node_try16(gen, h | ((__u64) PROFD_CLASS_16 << PROFD_ID_CLASS_SHIFT), nd) == 0)
                return h | ((__u64) PROFD_CLASS_16 << PROFD_ID_CLASS_SHIFT);
        if (node_try32(gen, h | ((__u64) PROFD_CLASS_32 << PROFD_ID_CLASS_SHIFT), nd) == 0)
                return h | ((__u64) PROFD_CLASS_32 << PROFD_ID_CLASS_SHIFT);
        counter_add(PROFD_DROP_STACK_MAP_FULL, 1);
        return PROFD_STACK_LOST;
}

/* Stores a stack, the frames of f from index first (0, or 1 when the
 * caller keeps the leaf apart), as its chain of nodes, outermost first
 * (see profd.h), and returns its id: that of the innermost node.
 * PROFD_STACK_LOST (counted) if a node found no room; an empty stack is
 * PROFD_STACK_NONE. slot is the caller's scratch slot. A node is built in
 * the slot's stage, and one found in the node cache is not looked up. A
 * BPF subprogram: one copy of its code for the kernel and the user stack
 * (see win_read in unwind.bpf.h on cold code). The node cache is in
 * cache.bpf.h. */
static __noinline __attribute__((unused)) __u64 frames_store(__u32 gen, struct profd_frames *f, __u32 slot,
                                                             __u32 first) {
        struct walk_window *w = bpf_map_lookup_elem(&walk_windows, &slot);
        struct profd_node32 *nd;
        __u64 parent = PROFD_NODE_ROOT;
        __u32 top; /* frames [first, first + top) are still to store */

        if (f->n <= first)
                return PROFD_STACK_NONE;
        if (!w) {
                counter_add(PROFD_DROP_STACK_MAP_FULL, 1);
                return PROFD_STACK_LOST;
        }
        nd = &w->stage;
        first &= 1;
        top = f->n - first;
        if (top > PROFD_MAX_FRAMES - first)
                top = PROFD_MAX_FRAMES - first;
        for (__u32 k = 0; k < (PROFD_MAX_FRAMES + PROFD_NODE_CHUNK - 1) / PROFD_NODE_CHUNK; k++) {
                /* full nodes from the outermost frame, then the rest */
                __u32 start = top > PROFD_NODE_CHUNK ? top - PROFD_NODE_CHUNK : 0;
                __u32 cnt = top - start;
                __u8 end = start == 0 ? f->end : 0;
                __u64 h = 0xcbf29ce484222325ULL ^ cnt ^ ((__u64) end << 32);
                struct node_cache_entry *e;

                h = (h ^ parent) * 0x100000001b3ULL;
                h ^= h >> 29;
                nd->h.parent = parent;
                nd->h.n = cnt;
                nd->h.end = end;
                for (__u32 i = 0; i < PROFD_NODE_CHUNK; i++) {
                        __u32 idx = first + start + i;
                        __u64 ip;

                        if (i >= cnt || idx >= PROFD_MAX_FRAMES)
                                break;
                        /* index here, after the check: clang would else
                         * step a pointer the verifier cannot bound */
                        barrier_var(idx);
                        ip = f->ips[idx];
                        nd->ips[i] = ip;
                        h = (h ^ ip) * 0x100000001b3ULL;
                        h ^= h >> 29;
                }
                e = &w->node[VERIFIER_MASK(h, 15)];
                if (!node_cache_hit(e, gen, nd)) {
                        __u64 id = node_put(gen, nd, h);

                        if (id == PROFD_STACK_LOST)
                                return id;
                        node_cache_put(e, gen, nd, id);
                }
                if (start == 0)
                        return e->id;
                parent = e->id;
                top = start;
        }
        return PROFD_STACK_LOST; /* not reached: 127 frames make at most 4 nodes */
}

static __always_inline void *counts_map(__u32 gen) {
        return GEN_MAPS(gen) ? (void *) &counts_1 : (void *) &counts_0;
}

/* Adds n to the value of key, inserting it if new. Returns true if the key
 * was there already (counted before in this generation). A caller whose
 * keys are mostly new (the sampler's: the leaf is in them) says so
 * (likely_new): the insertion is tried first, without the lookup that
 * would miss. */
static __always_inline bool count_key(__u32 gen, struct profd_sample_key *key, __u64 n, bool likely_new) {
        void *counts = counts_map(gen);
        __u64 *v = likely_new ? NULL : bpf_map_lookup_elem(counts, key);
        long err;

        if (v) {
                __sync_fetch_and_add(v, n);
                return true;
        }
        err = bpf_map_update_elem(counts, key, &n, BPF_NOEXIST);
        if (err == 0) {
                counter_add(PROFD_CNT_KEYS_NEW, 1);
        } else if (err == -EEXIST) {
                /* there before (likely_new), or another CPU inserted it in
                 * between: counted before, announced by whoever inserted it */
                v = bpf_map_lookup_elem(counts, key);
                if (v)
                        __sync_fetch_and_add(v, n);
                return true;
        } else if (err) {
                counter_add(PROFD_DROP_MAP_FULL, 1);
        }
        return false;
}

/* Logs key as one sample in the sampler's log, with its time; false if
 * there is no log or the CPU's region is full (then the caller counts it
 * in the counts map, untimed). Only the sampler calls it. */
static __always_inline bool log_sample(__u32 gen, const struct profd_sample_key *key) {
        __u32 slots = *(volatile __u32 *) &samples_log_slots;
        __u32 head_idx, idx;
        struct profd_log_slot *h, *r;
        __u64 n;

        if (slots < 2)
                return false;
        head_idx = (GEN_MAPS(gen) * samples_log_cpus + bpf_get_smp_processor_id()) * slots;
        h = bpf_map_lookup_elem(&samples_log, &head_idx);
        if (!h)
                return false;
        n = h->n;
        if (n >= slots - 1)
                return false;
        idx = head_idx + 1 + (__u32) n;
        r = bpf_map_lookup_elem(&samples_log, &idx);
        if (!r)
                return false;
        r->key = *key;
        r->time_ns = bpf_ktime_get_ns();
        h->n = n + 1;
        return true;
}

/* What the snapshot would read from /proc/PID/status and cgroup, of the
 * leader: its effective uid and its pid in its innermost pid namespace
 * (ns_pid 0 when either cannot be read: the daemon reads status then),
 * and its cgroup v2 id (0 when unread), which the daemon names once per
 * cgroup. Reads through CO-RE, so that the sampler's perf_event program
 * can call it as the tracepoints do. */
static __always_inline void announce_ids(struct profd_event *e, struct task_struct *leader) {
        const struct cred *cred = BPF_CORE_READ(leader, cred);
        struct pid *pid = BPF_CORE_READ(leader, thread_pid);
        unsigned int level = BPF_CORE_READ(pid, level);
        __u64 off = bpf_core_field_offset(struct pid, numbers) +
                (__u64) (level & 63) * bpf_core_type_size(struct upid) + bpf_core_field_offset(struct upid, nr);
        int nr = 0;

        e->ns_pid = 0;
        e->euid = 0;
        if (cred && pid && level < 64 && bpf_core_read(&e->euid, sizeof(e->euid), &cred->euid.val) == 0 &&
            bpf_probe_read_kernel(&nr, sizeof(nr), (const char *) pid + off) == 0 && nr > 0)
                e->ns_pid = (__u32) nr;
        e->cgroup_id = BPF_CORE_READ(leader, cgroups, dfl_cgrp, kn, id);
}

/* Tells the daemon about a process instance; false if the ring buffer was full
 * (counted), so the caller can try again on a later event. Out of line:
 * rare, and its code (the comm's copy) would else sit between a sample's
 * common paths, which at 49 Hz find the program's code cold. */
static __noinline bool announce(__u32 type, struct task_struct *task, __u32 tgid, __u64 start_ns) {
        struct profd_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
        if (!e) {
                counter_add(PROFD_DROP_RINGBUF_FULL, 1);
                return false;
        }
        e->type = type;
        e->tgid = tgid;
        e->start_ns = start_ns;
        e->rt_slot = e->rt_id = 0;
        BPF_CORE_READ_STR_INTO(&e->comm, task, group_leader, comm);
        announce_ids(e, BPF_CORE_READ(task, group_leader));
        bpf_ringbuf_submit(e, *(volatile __u64 *) &events_submit_flags);
        return true;
}

static __always_inline void announce_if_new(struct task_struct *task, __u32 tgid, __u64 start_ns) {
        struct profd_seen *s = bpf_map_lookup_elem(&seen, &tgid);
        struct profd_seen v = { .start_ns = start_ns };

        if (s && s->start_ns == start_ns)
                return;
        if (announce(PROFD_EVENT_NEW_PROCESS, task, tgid, start_ns))
                bpf_map_update_elem(&seen, &tgid, &v, BPF_ANY);
}
