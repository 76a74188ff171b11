/* HotSpot's walker, a runtime walker of bpf/runtime.bpf.h: a frame whose
 * pc is in the JVM's code cache (the process's rt_lo, rt_hi) is stepped
 * here, not by the native tables (JIT code has neither CFI nor frame
 * pointers): its blob is the one this CPU found for the pc before
 * (hotspot_blobs, its head read and checked again) or else is found
 * through the code heap's segment map, the
 * frame is replaced by one pseudo-frame (an interpreted frame: Method*,
 * bytecode index; compiled code or a stub: CodeBlob*, pc - blob) and its
 * caller's registers computed from the blob's kind:
 *   - the interpreter's frames by their frame pointer (the interpreter
 *     keeps rbp as its frame's; Method*, bcp and the sender's sp in slots
 *     below it);
 *   - compiled methods (C1, C2, native wrappers) by the blob's frame size:
 *     the caller's sp is sp + frame_size words, the return address below
 *     it and the caller's rbp below that (every compiled frame saves it
 *     there); in the prologue, before frame_complete_offset, the frame is
 *     not built yet;
 *   - stubs with a frame size like compiled code, those without by frame
 *     pointer (the call stub, StubRoutines' generated code: enter/leave),
 *     vtable and itable stubs with nothing but the return address.
 * Then the native walk goes on from the caller (libjvm's C++ by .eh_frame
 * down to the thread's start). The JVM's layout is the process's
 * (struct profd_hotspot, read by the daemon from the JVM's own tables,
 * daemon/unwind/hotspot.c); everything read is the process's memory,
 * untrusted: a frame that does not check out is counted (PROFD_HS_*) and
 * left to the native walk. */
#pragma once

#include "state.bpf.h"
#include "maps.bpf.h"

/* Hops back through a segment map, at most: a segment holds how many
 * segments back the next hop goes (0 at a block's first, 0xff free), at
 * most 254, so 16 hops reach 4,000 segments (256 KiB of 64-byte
 * segments) into a blob; C2's largest methods are well under that. */
#define HOTSPOT_SEGMAP_STEPS 16
/* Bytes of a segment map read at once, ending at the pc's segment (into
 * the walk's rt_buf, before the blob's head is read there): a blob of up
 * to 64 segments (4 KiB of 64-byte segments: most methods) is found in
 * that one read. A power of two. */
#define HOTSPOT_SEGMAP_READ 64
/* Words above a compiled frame's computed end searched for its return
 * address: x86-64 code may push a few more than the frame size says
 * (HotSpot's own sender search allows for this too). */
#define HOTSPOT_RA_SEARCH 4
/* An interpreter frame further than this above sp is not one. */
#define HOTSPOT_INTERP_SPAN (1ULL << 20)

/* A blob's kind by the first 8 bytes of its name (little-endian). */
#define HS_NAME_NMETHOD 0x00646f6874656d6eULL     /* "nmethod\0" */
#define HS_NAME_NATIVE 0x6e2065766974616eULL      /* "native n(method)" */
#define HS_NAME_INTERPRETER 0x6572707265746e49ULL /* "Interpre(ter)" */
#define HS_NAME_VTABLE 0x6320656c62617476ULL      /* "vtable c(hunks)" */
#define HS_NAME_ITABLE 0x6320656c62617469ULL      /* "itable c(hunks)" */

/* The window's reader (bpf/unwind.bpf.h): stack words. */
static __noinline bool win_read(struct ustack_state *s, struct walk_window *w, __u64 addr, __u64 *ret);

static __always_inline bool hs_in_code(const struct ustack_state *s, __u64 ip) {
        return ip >= s->rt_lo && ip < s->rt_hi;
}

static __always_inline __u64 hs_word(const struct ustack_state *s, __u16 off) {
        return *(__u64 *) &s->rt_buf[VERIFIER_MASK(off, 127)];
}

static __always_inline __s32 hs_int(const struct ustack_state *s, __u16 off) {
        return *(__s32 *) &s->rt_buf[VERIFIER_MASK(off, 127)];
}

/* Why a frame could not be stepped (the helpers below return these,
 * negative; hotspot_frame counts the last one). */
#define HS_BAD -1
#define HS_FAULT -2

/* The blob holding pc (the instruction, not a return address past it):
 * the heap holding it, then its segment map back to the first segment of
 * its block; the blob follows the block's header. 0 with the reason
 * counted when none. Uses s->rt_buf. */
static __always_inline __u64 hs_find_blob(struct ustack_state *s, const struct profd_hotspot *hs, __u64 pc) {
        __u64 low = 0, segmap = 0, seg, first;
        bool done = false;
        __u8 tag = 0xff;
        int k;

        for (__u32 h = 0; h < PROFD_HOTSPOT_HEAPS; h++)
                if (h < hs->n_heaps && pc >= hs->heaps[h].low && pc < hs->heaps[h].high) {
                        low = hs->heaps[h].low;
                        segmap = hs->heaps[h].segmap;
                        break;
                }
        if (!low) {
                counter_add(PROFD_HS_NO_HEAP, 1);
                return 0;
        }
        seg = (pc - low) >> (hs->log2_segment & 31);
        /* the map's bytes up to the pc's segment in one read (from the
         * map's first byte when the segment is among its first: that page
         * is there), and the hops that stay in them; the rest a byte a
         * hop */
        first = seg >= HOTSPOT_SEGMAP_READ - 1 ? seg - (HOTSPOT_SEGMAP_READ - 1) : 0;
        if (bpf_probe_read_user(s->rt_buf, HOTSPOT_SEGMAP_READ, (void *) (segmap + first))) {
                counter_add(PROFD_HS_READ_FAULT, 1);
                return 0;
        }
        /* HOTSPOT_SEGMAP_STEPS hops in all, as hotspot_segmap_find */
        for (k = 0; k < HOTSPOT_SEGMAP_STEPS; k++) {
                __u64 idx = seg - first; /* wraps past the bytes read when seg < first */

                if (idx >= HOTSPOT_SEGMAP_READ)
                        break;
                tag = s->rt_buf[idx & (HOTSPOT_SEGMAP_READ - 1)];
                if (tag == 0 || tag == 0xff || tag > seg) {
                        done = true;
                        break;
                }
                seg -= tag;
        }
        for (; !done && k < HOTSPOT_SEGMAP_STEPS; k++) {
                if (bpf_probe_read_user(&tag, 1, (void *) (segmap + seg))) {
                        counter_add(PROFD_HS_READ_FAULT, 1);
                        return 0;
                }
                if (tag == 0 || tag == 0xff || tag > seg)
                        break;
                seg -= tag;
        }
        if (tag == 0xff) {
                counter_add(PROFD_HS_NO_BLOB, 1);
                return 0;
        }
        if (tag != 0) {
                counter_add(PROFD_HS_BAD_SEGMAP, 1);
                return 0;
        }
        return low + (seg << (hs->log2_segment & 31)) + hs->heap_block;
}

/* An interpreted frame, at fp = rbp: its Method* and bytecode pointer from
 * their slots (the leaf's bcp is live in r13, the slot holds it only
 * across calls), the caller's registers from the frame's links. Returns
 * 0 with *code (the Method*) and *offset (the bci), or -1 (counted). */
static __always_inline int hs_interpreted(struct ustack_state *s, struct walk_window *w,
                                          const struct profd_hotspot *hs, __u64 *code, __u32 *offset) {
        __u64 fp = s->bp, method, bcp, sender_sp, caller_fp, ra, const_method, base;

        if (hs->interp_method == PROFD_HOTSPOT_NO_SLOT || hs->interp_bcp == PROFD_HOTSPOT_NO_SLOT ||
            hs->interp_sender_sp == PROFD_HOTSPOT_NO_SLOT)
                return HS_BAD;
        if (fp < s->sp || fp - s->sp >= HOTSPOT_INTERP_SPAN || (fp & 7))
                return HS_BAD;
        /* the slots are below fp, the links at it: one window holds them */
        if (!win_read(s, w, fp + 8 * (__s64) hs->interp_bcp, &bcp) ||
            !win_read(s, w, fp + 8 * (__s64) hs->interp_method, &method) ||
            !win_read(s, w, fp + 8 * (__s64) hs->interp_sender_sp, &sender_sp) ||
            !win_read(s, w, fp, &caller_fp) || !win_read(s, w, fp + 8, &ra))
                return HS_FAULT;
        if (!method || (method & 7) || method >= PROFD_RT_FRAME_CODE_LIMIT)
                return HS_BAD;
        /* the caller's sp: where its expression stack ended at the call,
         * above this frame's links */
        if (sender_sp < fp + 16 || sender_sp - fp >= HOTSPOT_INTERP_SPAN || (sender_sp & 7))
                return HS_BAD;
        if (bpf_probe_read_user(&const_method, sizeof(const_method), (void *) (method + hs->method_const_method)))
                return HS_FAULT;
        base = const_method + hs->const_method_size;
        if (s->exact_ip && s->n == 1 && s->r13 >= base && s->r13 - base < PROFD_RT_FRAME_OFFSET_MAX)
                bcp = s->r13;
        *code = method;
        /* 0xffff: not within the method's bytecodes (a frame being set up) */
        *offset = bcp >= base && bcp - base < PROFD_RT_FRAME_OFFSET_MAX ? (__u32) (bcp - base)
                                                                          : PROFD_RT_FRAME_OFFSET_MAX;
        s->ip = ra;
        s->sp = sender_sp;
        s->bp = caller_fp;
        return 0;
}

/* A frame whose caller's sp is csp: the return address below it, the
 * caller's rbp below that (saved by every frame that has a frame size).
 * check: the return address must be in the code cache (a compiled
 * method's caller always is: the interpreter, compiled code, a stub);
 * where it is not, up to `search` words further up are tried (see
 * HOTSPOT_RA_SEARCH). Returns 0, HS_BAD or HS_FAULT. */
static __always_inline int hs_sized(struct ustack_state *s, struct walk_window *w, __u64 csp, bool check,
                                    int search) {
        __u64 ra = 0, fp;

        if (csp <= s->sp || csp - s->sp >= USER_STACK_SPAN)
                return HS_BAD;
        for (int k = 0; k <= HOTSPOT_RA_SEARCH; k++) {
                if (!win_read(s, w, csp - 8, &ra))
                        return HS_FAULT;
                if (!check || hs_in_code(s, ra))
                        break;
                if (k >= search)
                        return HS_BAD;
                csp += 8;
        }
        if (!win_read(s, w, csp - 16, &fp))
                return HS_FAULT;
        s->ip = ra;
        s->sp = csp;
        s->bp = fp;
        return 0;
}

/* The leaf, stopped where its frame is not (or no longer) built: in the
 * prologue (before frame_complete_offset) or the epilogue (after the
 * frame was popped). The return address is then at sp (before `push rbp`,
 * after `pop rbp`) or just above the saved rbp (between them): whichever
 * is in the code cache. Returns 0, HS_BAD or HS_FAULT. */
static __always_inline int hs_unbuilt(struct ustack_state *s, struct walk_window *w) {
        __u64 w0, w1;

        if (!win_read(s, w, s->sp, &w0) || !win_read(s, w, s->sp + 8, &w1))
                return HS_FAULT;
        if (hs_in_code(s, w0)) {
                s->ip = w0;
                s->sp += 8;
                return 0;
        }
        if (hs_in_code(s, w1)) {
                s->ip = w1;
                s->bp = w0;
                s->sp += 16;
                return 0;
        }
        return HS_BAD;
}

/* The return address at sp, if it is in the code cache. Returns 0,
 * HS_BAD or HS_FAULT. */
static __always_inline int hs_ra_at_sp(struct ustack_state *s, struct walk_window *w) {
        __u64 ra;

        if (!win_read(s, w, s->sp, &ra))
                return HS_FAULT;
        if (!hs_in_code(s, ra))
                return HS_BAD;
        s->ip = ra;
        s->sp += 8;
        return 0;
}

/* A frame built by `enter` (push rbp; mov rbp, rsp): the call stub and
 * most of StubRoutines' code. Returns 0, HS_BAD or HS_FAULT. */
static __always_inline int hs_fp_frame(struct ustack_state *s, struct walk_window *w) {
        __u64 fp = s->bp, next, ra;

        if (fp < s->sp || fp - s->sp >= USER_STACK_SPAN || (fp & 7))
                return HS_BAD;
        if (!win_read(s, w, fp, &next) || !win_read(s, w, fp + 8, &ra))
                return HS_FAULT;
        s->ip = ra;
        s->sp = fp + 16;
        s->bp = next;
        return 0;
}

/* The remembered blob of look (the pc of a frame in the code cache of
 * s's process), and the entry's place and tag; 0 when none. */
static __always_inline __u64 hs_blob_remembered(const struct ustack_state *s, const struct profd_hotspot *hs,
                                                __u64 look, struct hotspot_blob_entry **ret, __u64 *tag) {
        __u32 zero = 0;
        struct hotspot_blobs *c;
        struct hotspot_blob_entry *e;

        *ret = NULL;
        if (hs->blob_code_end == PROFD_HOTSPOT_NO_FIELD)
                return 0;
        c = bpf_map_lookup_elem(&hotspot_blobs, &zero);
        if (!c)
                return 0;
        *tag = rt_seen_tag(s->p_tgid, s->p_start, look, 0);
        e = &c->e[VERIFIER_MASK((__u32) ((*tag * 0x9e3779b97f4a7c15ULL) >> 56), 255)]; /* HOTSPOT_BLOB_SLOTS */
        *ret = e;
        return e->tag == *tag ? e->blob : 0;
}

/* The head of the blob at `blob` into s->rt_buf, checked to hold look in
 * its code: *code_begin, and the name's pointer. With `hint` (a blob
 * remembered, not found now), its name pointer must be the one it had
 * then. Returns 0, HS_BAD or HS_FAULT. */
static __always_inline int hs_blob_head(struct ustack_state *s, const struct profd_hotspot *hs, __u64 blob,
                                        __u64 look, const struct hotspot_blob_entry *hint, __u64 *code_begin,
                                        __u64 *name_addr) {
        __u64 code_end;

        if (bpf_probe_read_user(s->rt_buf, PROFD_HOTSPOT_BLOB_READ, (void *) blob))
                return HS_FAULT;
        *name_addr = hs_word(s, hs->blob_name);
        if (hint && *name_addr != hint->name)
                return HS_BAD;
        *code_begin = hs->code_offsets ? blob + (__u32) hs_int(s, hs->blob_code_begin)
                                       : hs_word(s, hs->blob_code_begin);
        if (*code_begin < blob || *code_begin > look)
                return HS_BAD;
        if (hs->blob_code_end != PROFD_HOTSPOT_NO_FIELD) {
                code_end = hs->code_offsets ? blob + (__u32) hs_int(s, hs->blob_code_end)
                                            : hs_word(s, hs->blob_code_end);
                if (look >= code_end)
                        return HS_BAD;
        }
        return 0;
}

/* The frame at s->ip, in the code cache: its pseudo-frame in place of its
 * native frame (ips[n - 1]) and the caller's registers into s. Returns
 * RT_STEPPED, RT_NATIVE when the frame could not be stepped (counted) or
 * RT_STOP (s->end set). */
static __noinline int hotspot_frame(struct ustack_state *s, struct walk_window *w, const struct profd_hotspot *hs) {
        /* a return address may be just past its call, at the blob's end */
        __u64 pc = s->ip, look = s->exact_ip ? pc : pc - 1, blob, name = 0, name_addr = 0, code_begin = 0, code,
              frame_size, tag = 0;
        __u32 offset = 0, id = PROFD_RUNTIME_HOTSPOT_CODE, n = s->n;
        struct hotspot_blob_entry *e;
        bool found = false;
        __s32 complete;
        int r;

        /* the blob this CPU found for this pc before, checked again; else
         * (or if it no longer checks out) the segment map's */
        blob = hs_blob_remembered(s, hs, look, &e, &tag);
        r = blob ? hs_blob_head(s, hs, blob, look, e, &code_begin, &name_addr) : HS_BAD;
        if (r == 0 && e)
                name = e->kind;
        else {
                blob = hs_find_blob(s, hs, look);
                if (!blob)
                        return RT_NATIVE;
                r = hs_blob_head(s, hs, blob, look, NULL, &code_begin, &name_addr);
                if (r < 0) {
                        counter_add(r == HS_FAULT ? PROFD_HS_READ_FAULT : PROFD_HS_BAD_FRAME, 1);
                        return RT_NATIVE;
                }
                found = true;
        }
        /* the kind by the name's pointer when it is one met before (a
         * static string every nmethod, or the interpreter, points to),
         * else by the name's first 8 bytes */
        if (name)
                ;
        else if (name_addr && name_addr == s->hs_name_nmethod)
                name = HS_NAME_NMETHOD;
        else if (name_addr && name_addr == s->hs_name_interp)
                name = HS_NAME_INTERPRETER;
        else {
                if (bpf_probe_read_user(&name, sizeof(name), (void *) name_addr)) {
                        counter_add(PROFD_HS_READ_FAULT, 1);
                        return RT_NATIVE;
                }
                if (name == HS_NAME_NMETHOD)
                        s->hs_name_nmethod = name_addr;
                else if (name == HS_NAME_INTERPRETER)
                        s->hs_name_interp = name_addr;
        }
        frame_size = (__u64) (__u32) hs_int(s, hs->blob_frame_size);
        complete = hs_int(s, hs->blob_frame_complete);
        if (frame_size > (1u << 20)) {
                counter_add(PROFD_HS_BAD_FRAME, 1);
                return RT_NATIVE;
        }
        if (found && e) {
                e->tag = tag;
                e->blob = blob;
                e->name = name_addr;
                e->kind = name;
        }
        code = blob;
        offset = pc - blob > PROFD_RT_FRAME_OFFSET_MAX ? PROFD_RT_FRAME_OFFSET_MAX : (__u32) (pc - blob);
        if (name == HS_NAME_INTERPRETER) {
                id = PROFD_RUNTIME_HOTSPOT;
                r = hs_interpreted(s, w, hs, &code, &offset);
                if (r < 0 && s->exact_ip) {
                        /* the leaf between frames (a method's entry or
                         * return): the interpreter's blob itself, from
                         * its return address */
                        id = PROFD_RUNTIME_HOTSPOT_CODE;
                        r = hs_unbuilt(s, w);
                }
        } else if (name == HS_NAME_VTABLE || name == HS_NAME_ITABLE) {
                /* a jump to the target: nothing but the return address */
                r = hs_unbuilt(s, w);
        } else if (frame_size) {
                /* nmethods (C1, C2, native wrappers) and stubs with frames */
                bool nm = name == HS_NAME_NMETHOD || name == HS_NAME_NATIVE;

                if (s->exact_ip && complete > 0 && pc < code_begin + (__u32) complete)
                        r = hs_unbuilt(s, w);
                else if (s->exact_ip) {
                        r = hs_sized(s, w, s->sp + 8 * frame_size, nm, 0);
                        /* the leaf in its epilogue: the frame is gone */
                        if (r < 0)
                                r = hs_unbuilt(s, w);
                } else
                        r = hs_sized(s, w, s->sp + 8 * frame_size, nm, HOTSPOT_RA_SEARCH);
        } else {
                /* the leaf of a stub without a frame size: before its
                 * `enter`, or in one that makes no frame (the I2C/C2I
                 * adapters), its return address is at sp */
                r = s->exact_ip ? hs_ra_at_sp(s, w) : HS_BAD;
                if (r < 0)
                        r = hs_fp_frame(s, w);
                if (r < 0 && s->exact_ip)
                        r = hs_unbuilt(s, w);
        }
        if (r < 0) {
                counter_add(r == HS_FAULT ? PROFD_HS_READ_FAULT : PROFD_HS_BAD_FRAME, 1);
                return RT_NATIVE;
        }
        s->exact_ip = 0;
        if (code >= PROFD_RT_FRAME_CODE_LIMIT) {
                counter_add(PROFD_RT_CODE_RANGE, 1);
                s->end = PROFD_END_UNSUPPORTED;
                return RT_STOP;
        }
        /* in place of its native frame, which the walk recorded */
        if (n < 1 || n > PROFD_MAX_FRAMES) {
                s->end = PROFD_END_DEPTH;
                return RT_STOP;
        }
        w->frames.ips[VERIFIER_MASK(n - 1, 127)] = PROFD_RT_FRAME(id, code, offset);
        s->rt_frames++;
        rt_announce(s, code, id);
        return RT_STEPPED;
}
