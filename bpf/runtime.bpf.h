/* Runtime walkers: a language runtime's frames in the native walk
 * (bpf/unwind.bpf.h). Where a native frame's ip is in the process's
 * hand-over range (the interpreter's loop: struct profd_unwind_proc.rt_*),
 * the runtime's walker emits the runtime's frames that this native frame
 * runs, one pseudo-frame (PROFD_RT_FRAME in profd.h) per bpf_loop
 * iteration, in place of the native frame; then the native walk goes on
 * from the loop frame's caller. A later loop frame (a C function that
 * called back into the runtime) goes on with the chain where the last
 * stopped, so runtime and native frames interleave in their true order.
 *
 * A runtime plugs in by two functions: its first frame (the thread's
 * current one) and its next (one frame: code, offset, role). CPython's are
 * in python.bpf.h; the daemon's half is daemon/unwind/runtime.h.
 *
 * HotSpot's walker (hotspot.bpf.h) plugs in at the same place, per frame:
 * its hand-over range is the JVM's code cache, where every frame is one of
 * the runtime's, and it steps the frame itself (one pseudo-frame in place
 * of the native one, and the caller's registers), where CPython's frames
 * ride on the native frames of the interpreter's loop. */
#pragma once

#include "state.bpf.h"
#include "maps.bpf.h"

/* What a runtime's next-frame function found (python_next). */
enum rt_step {
        RT_STEP_FRAME,          /* a frame; this loop frame has more */
        RT_STEP_LAST,           /* a frame, the last of this loop frame */
        RT_STEP_END,            /* no frame: this loop frame's are done */
        RT_STEP_FAULT,          /* its memory could not be read */
};

/* What runtime_frame tells the walk's iteration. */
enum rt_result {
        RT_NATIVE,              /* unwind the native frame at s->ip now */
        RT_EMITTED,             /* a pseudo-frame was appended; the native frame waits */
        RT_STOP,                /* the walk ends (s->end set) */
        RT_STEPPED,             /* the frame was replaced by a pseudo-frame and stepped: s holds its
                                 * caller's registers, to be appended as a native step's */
};

#include "python.bpf.h"

/* Is ip (a frame's, a return address unless exact) in the loop? */
static __always_inline bool rt_in_loop(const struct ustack_state *s, __u64 ip) {
        if (!s->exact_ip)
                ip--; /* a call at the end of the function returns past it */
        return (ip >= s->rt_lo && ip < s->rt_hi) || (ip >= s->rt_cold_lo && ip < s->rt_cold_hi);
}

/* Tells the daemon of a code object a walk met, unless this CPU told it
 * lately (runtime_seen): the daemon reads it while the process lives. */
static __always_inline __u64 rt_seen_tag(__u32 tgid, __u64 start_ns, __u64 code, __u32 id) {
        return (code ^ ((__u64) tgid << 48) ^ ((__u64) id << 60) ^ start_ns) | 1;
}

/* The tag's slot in the set: two code objects whose slots are one evict
 * each other, and each is announced again when met after the other. */
static __always_inline __u32 rt_seen_slot(__u64 tag) {
        return (__u32) ((tag * 0x9e3779b97f4a7c15ULL) >> 54); /* RUNTIME_SEEN_SLOTS = 2^10 */
}

static __always_inline void rt_announce(struct ustack_state *s, __u64 code, __u32 id) {
        __u32 zero = 0;
        struct runtime_seen *set = bpf_map_lookup_elem(&runtime_seen, &zero);
        __u64 tag = rt_seen_tag(s->p_tgid, s->p_start, code, id), h;
        struct profd_event *e;

        if (!set)
                return;
        h = rt_seen_slot(tag);
        if (set->tag[VERIFIER_MASK(h, 1023)] == tag)
                return;
        e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
        if (!e) {
                counter_add(PROFD_DROP_RINGBUF_FULL, 1);
                return;
        }
        set->tag[VERIFIER_MASK(h, 1023)] = tag;
        e->type = PROFD_EVENT_RUNTIME_CODE;
        e->tgid = s->p_tgid;
        e->start_ns = s->p_start;
        e->rt.code = code;
        e->rt.bias = s->rt_bias;
        e->rt_slot = s->rt_slot;
        e->rt_id = id;
        bpf_ringbuf_submit(e, *(volatile __u64 *) &events_submit_flags);
}

/* Appends a pseudo-frame (in place of the loop's native frame, for the
 * first of it). False with s->end set at the walk's depth. */
static __always_inline bool rt_append(struct ustack_state *s, struct profd_frames *f, __u64 ip, __u64 code) {
        __u32 n = s->n;

        if (s->rt_replace) {
                s->rt_replace = 0;
                n--;
        }
        if (n >= PROFD_MAX_FRAMES) {
                s->end = PROFD_END_DEPTH;
                return false;
        }
        if (PROFD_RT_FRAME_CODE(ip) != code) {
                /* above what a pseudo-frame holds (5-level paging) */
                counter_add(PROFD_RT_CODE_RANGE, 1);
                s->end = PROFD_END_UNSUPPORTED;
                return false;
        }
        f->ips[VERIFIER_MASK(n, 127)] = ip;
        s->n = n + 1;
        s->rt_frames++;
        return true;
}

#include "hotspot.bpf.h"

/* The runtime's part of a walk's iteration, for a process with a runtime
 * (s->rt_slot): begins the runtime's frames at a loop frame, or emits the
 * next; HotSpot's: steps a frame in the code cache. Out of line: the
 * native frames of such a process pass through it too, and the programs
 * that are verified once per state keep one copy. */
static __noinline int runtime_frame(struct ustack_state *s, struct walk_window *w) {
        struct profd_frames *f = &w->frames;
        struct profd_runtime *rt;
        __u32 idx = s->rt_slot - 1, offset = 0;
        __u64 code = 0;
        int step;

        if (s->rt_state == RT_OFF)
                return RT_NATIVE;
        if (s->rt_state == RT_IDLE) {
                if (!rt_in_loop(s, s->ip))
                        return RT_NATIVE;
        }
        rt = bpf_map_lookup_elem(&unwind_runtimes, &idx);
        if (rt && rt->id == PROFD_RUNTIME_HOTSPOT) {
                /* each frame on its own: no state between them */
                if (!s->rt_met) {
                        counter_add(PROFD_HS_WALKS, 1);
                        s->rt_met = 1;
                }
                return hotspot_frame(s, w, &rt->hotspot);
        }
        if (!rt || rt->id != PROFD_RUNTIME_PYTHON) {
                s->rt_state = RT_OFF;
                return RT_NATIVE;
        }
        if (s->rt_state == RT_IDLE) {
                if (!s->rt_frames && !s->rt_frame) {
                        /* the first loop frame of this walk */
                        counter_add(PROFD_CNT_RT_WALKS, 1);
                        s->rt_frame = python_first_frame(s, &rt->python);
                        if (!s->rt_frame) {
                                s->rt_state = RT_OFF;
                                return RT_NATIVE;
                        }
                } else if (!s->rt_frame) {
                        /* a loop frame with none of the runtime's left */
                        counter_add(PROFD_RT_NO_FRAME, 1);
                        return RT_NATIVE;
                }
                s->rt_state = RT_EMIT;
                s->rt_replace = 1;
        }
        step = python_next(s, &rt->python, &code, &offset);
        if (step == RT_STEP_FAULT) {
                counter_add(PROFD_RT_READ_FAULT, 1);
                s->rt_state = RT_OFF;
                s->rt_replace = 0;
                return RT_NATIVE;
        }
        if (step == RT_STEP_END) {
                s->rt_state = RT_IDLE;
                s->rt_replace = 0; /* no frame of it: the native frame stays */
                return RT_NATIVE;
        }
        if (!rt_append(s, f, PROFD_RT_FRAME(PROFD_RUNTIME_PYTHON, code, offset), code))
                return RT_STOP;
        rt_announce(s, code, PROFD_RUNTIME_PYTHON);
        if (step == RT_STEP_LAST || !s->rt_frame) {
                s->rt_state = RT_IDLE;
                return RT_NATIVE;
        }
        return RT_EMITTED;
}
