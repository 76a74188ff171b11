/* CPython's walker, a runtime walker of bpf/runtime.bpf.h: the thread's
 * frame chain, and one frame of it at a time. The offsets are the
 * interpreter's (struct profd_python, found by the daemon in the file,
 * daemon/unwind/python.c); everything read is the process's memory,
 * untrusted: a read that fails ends the runtime walk (counted), and a
 * chain that loops ends at the walk's depth. */
#pragma once

#include "state.bpf.h"
#include "maps.bpf.h"

/* Bytes of an _PyInterpreterFrame read at once: every field the walker
 * reads is below (frame_size is 72 in 3.11 and 3.12); the offsets are
 * masked to the buffer (struct ustack_state.rt_buf, 136 bytes). */
#define PYTHON_FRAME_READ 80
#define PYTHON_NO_FIELD16 0xffff

/* The thread's current frame: the thread's PyThreadState is the value of
 * the interpreter's TSS key in glibc's per-thread table (at the thread
 * pointer), then tstate->cframe->current_frame (3.11, 3.12) or
 * tstate->current_frame. 0 with the reason counted when not found. */
static __always_inline __u64 python_first_frame(struct ustack_state *s, const struct profd_python *py) {
        __u32 key;
        __u64 tstate, cframe, frame;

        if (bpf_probe_read_user(&key, sizeof(key), (void *) (py->tss_key + s->rt_bias))) {
                counter_add(PROFD_RT_READ_FAULT, 1);
                return 0;
        }
        if (key >= 32 || !s->fsbase) {
                counter_add(PROFD_RT_NO_THREAD_STATE, 1);
                return 0;
        }
        if (bpf_probe_read_user(&tstate, sizeof(tstate),
                                (void *) (s->fsbase + py->glibc_specific + 16 * key + 8))) {
                counter_add(PROFD_RT_READ_FAULT, 1);
                return 0;
        }
        if (!tstate) {
                /* a thread the interpreter never ran (a C library's) */
                counter_add(PROFD_RT_NO_THREAD_STATE, 1);
                return 0;
        }
        cframe = tstate;
        if (py->tstate_cframe != PYTHON_NO_FIELD16 &&
            bpf_probe_read_user(&cframe, sizeof(cframe), (void *) (tstate + py->tstate_cframe)))
                goto fault;
        if (bpf_probe_read_user(&frame, sizeof(frame), (void *) (cframe + py->current_frame)))
                goto fault;
        if (!frame)
                counter_add(PROFD_RT_NO_FRAME, 1);
        return frame;
fault:
        counter_add(PROFD_RT_READ_FAULT, 1);
        return 0;
}

static __always_inline __u64 python_word(struct ustack_state *s, __u16 off) {
        return *(__u64 *) &s->rt_buf[VERIFIER_MASK(off, 127)];
}

/* The frame at s->rt_frame: its code object and instruction offset into
 * *code and *offset, and its role; s->rt_frame moves to the previous one.
 * Returns RT_STEP_FRAME (a Python frame, more of this loop frame's to
 * come), RT_STEP_LAST (a Python frame, the last of this loop frame: 3.11's
 * is_entry), RT_STEP_END (no frame: 3.12's C stack shim, which ends this
 * loop frame's), or RT_STEP_FAULT. */
static __always_inline int python_next(struct ustack_state *s, const struct profd_python *py, __u64 *code,
                                       __u32 *offset) {
        __u64 instr, first;
        __u8 owner;

        if (bpf_probe_read_user(s->rt_buf, PYTHON_FRAME_READ, (void *) s->rt_frame))
                return RT_STEP_FAULT;
        owner = s->rt_buf[VERIFIER_MASK(py->frame_owner, 127)];
        s->rt_frame = python_word(s, py->frame_previous);
        if (py->owner_cstack != 0xff && owner == py->owner_cstack)
                return RT_STEP_END;
        *code = python_word(s, py->frame_code);
        instr = python_word(s, py->frame_instr);
        first = *code + py->code_adaptive;
        /* a frame being set up points before its first instruction */
        *offset = instr > first && instr - first < 2 * PROFD_RT_FRAME_OFFSET_MAX ? (instr - first) / 2 : 0;
        if (py->frame_is_entry != PYTHON_NO_FIELD16 && s->rt_buf[VERIFIER_MASK(py->frame_is_entry, 127)])
                return RT_STEP_LAST;
        return RT_STEP_FRAME;
}
