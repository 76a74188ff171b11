/* The user stack walker: DWARF CFI tables the daemon built (compact
 * tables, read by table-pack.bpf.h; unwind_rows, unwind_maps, unwind_procs
 * in maps.bpf.h), frame pointers where a mapping has no table. Included by the programs that walk user stacks (oncpu,
 * offcpu). Every walk ends with a reason (enum profd_stack_end), counted.
 *
 * A walk (user_stack_unwind) is set up (walk_start, walk_find_proc,
 * walk_use_proc, the sampler's caches), runs as a bpf_loop of one frame per
 * iteration (unwind_frame_cb: unwind_one, which finds the frame's rule in
 * the caches of cache.bpf.h or the tables, row_lookup, and takes the step,
 * row_step or fp_step), and ends (walk_end, walk_report_miss).
 *
 * x86-64 only; elsewhere user_stack_unwind is the frame-pointer walk. */
#pragma once

#include "sample.bpf.h"

#if defined(__TARGET_ARCH_x86)

#include "runtime.bpf.h"
#include "table-pack.bpf.h"

/* Binary search bound: 2^16 mappings per process are more than the daemon
 * ever publishes. A table's rows are found in their 64 KiB page
 * (pack_lookup, PROFD_PACK_PAGE_STEPS). */
#define UNWIND_MAPS_STEPS 16
/* Where the kernel's rt_sigframe keeps the interrupted registers: the
 * trampoline's rsp points at its struct ucontext (pretcode was popped),
 * uc_mcontext is at offset 40, and in struct sigcontext rbp, rsp and rip
 * are at 80, 120 and 128. */
#define UC_RBP (40 + 80)
#define UC_RSP (40 + 120)
#define UC_RIP (40 + 128)
#define END_WALKING 0xff

/* What a window miss reads: from the address to the end of its page, at
 * most this much. Stack walks go upwards and each read has a fixed cost,
 * but the bytes cost too: the stacks sampled here span 4 KiB or more (10-15
 * frames; stress-ng keeps buffers on its stack), and a walk that read
 * up to 2 KiB at a time copied ~4.5 KiB per sample. Concurrent runs under
 * stress-ng, ns per sample against 2 KiB: 1 KiB -3%, 512 bytes -8%, 384
 * the same as 512, 256 and 128 worse again (more reads). */
#define UNWIND_READ 512

/* Reads the 8 bytes at addr through the window: a miss reads from addr
 * towards the end of its page (UNWIND_READ bytes at most) in one call.
 * Stack slots are 8-byte aligned; anything else (corruption) is read on
 * its own. The sampler's window may start as the span (span_read), which
 * crosses pages: it is one copy of the memory there, like a window.
 *
 * win_read, fp_step, row_step and row_lookup are BPF subprograms, not
 * inlined: at 49 Hz a sample finds the program's code as cold as its data
 * (a walk done twice in a row took 0.6 us the second time, 2.6 us the
 * first, and reading its data lines in advance did not shorten it), and
 * inlined at every call site, win_read made up half of the callback's 1,400
 * instructions. Out of line, the callback and the steps are 360
 * instructions, each frame runs through the same few. */
static __noinline bool win_read(struct ustack_state *s, struct walk_window *w, __u64 addr, __u64 *ret) {
        __u64 off = addr - s->win_base, idx;

        if (addr & 7)
                return bpf_probe_read_user(ret, sizeof(*ret), (void *) addr) == 0;
        if (addr < s->win_base || off + 8 > s->win_len) {
                __u64 len = 4096 - (addr & 4095);

                if (len > UNWIND_READ)
                        len = UNWIND_READ;
                s->win_len = 0;
                if (bpf_probe_read_user(w->bytes, len, (void *) addr))
                        return false;
                s->win_base = addr;
                s->win_len = len;
                off = 0;
        }
        idx = off / 8;
        barrier_var(idx); /* else clang checks off, the verifier cannot bound idx */
        if (idx >= WALK_SPAN / 8)
                return false;
        if (addr + 8 > s->read_hi)
                s->read_hi = addr + 8;
        *ret = w->words[idx];
        return true;
}

/* The span read, before the sampler's walk: the stack from the stack
 * pointer up to hi, where the last walk of this thread (its memo slot's
 * read_hi) read its highest word, in one call into the window (at most
 * WALK_SPAN bytes), where the walk would else read it UNWIND_READ bytes at
 * a time, ~3 calls per walk at a fixed cost each (~200 ns under load for
 * 512 bytes against ~450 ns for a span of ~2.2 KiB). The top of a thread's
 * stack stays where it is from sample to sample, so the span mostly holds
 * every word the walk reads. hi is only a hint (the slot may be another
 * thread's, the stack may have grown): the bytes are the memory at their
 * addresses now, read at sample time like the window's; a word outside
 * them goes to the window as before, and a failed read (a page not
 * present: nothing is kept) leaves the window empty. */
static __always_inline void span_read(struct ustack_state *s, struct walk_window *w, __u64 hi) {
        __u64 len;

        if (hi <= s->sp || hi - s->sp > WALK_SPAN || (s->sp & 7))
                return;
        len = hi - s->sp;
        if (len <= UNWIND_READ) /* the first window read does as well */
                return;
        len = VERIFIER_MASK(len, 0x3fff);
        if (len > WALK_SPAN)
                return;
        if (bpf_probe_read_user(w->bytes, len, (void *) s->sp))
                return;
        s->win_base = s->sp;
        s->win_len = len;
}

/* Finds the mapping of s->ip in the process's slice into s->m_*. */
static __always_inline bool find_mapping(struct ustack_state *s) {
        __u32 lo = 0, hi = s->maps_n, idx;
        struct profd_unwind_mapping *m;

        if (s->ip >= s->m_start && s->ip < s->m_end)
                return true;
        for (int k = 0; k < UNWIND_MAPS_STEPS; k++) {
                __u32 mid;

                if (lo >= hi)
                        break;
                mid = (lo + hi) / 2;
                idx = s->maps_off + mid;
                m = bpf_map_lookup_elem(&unwind_maps, &idx);
                if (!m)
                        return false;
                if (m->start <= s->ip)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == 0 || lo < hi)
                return false;
        idx = s->maps_off + lo - 1;
        m = bpf_map_lookup_elem(&unwind_maps, &idx);
        if (!m || s->ip >= m->end)
                return false;
        s->m_start = m->start;
        s->m_end = m->end;
        s->m_bias = m->bias;
        s->m_rows_off = m->rows_off;
        s->m_rows_n = m->rows_n;
        s->m_kind = m->kind;
        return true;
}

/* One frame by frame pointer: the caller's rbp and return address are at
 * rbp. Returns false with s->end set when the chain ends. */
static __noinline bool fp_step(struct ustack_state *s, struct walk_window *w) {
        __u64 fp = s->bp, next, ret;

        if (fp == 0) {
                s->end = PROFD_END_COMPLETE; /* _start and thread starts clear rbp */
                return false;
        }
        /* code without frame pointers uses rbp for data: follow it only if
         * it points into the stack above sp */
        if (fp < s->sp || fp - s->sp >= USER_STACK_SPAN || (fp & 7)) {
                s->end = PROFD_END_FP_END;
                return false;
        }
        if (!win_read(s, w, fp, &next) || !win_read(s, w, fp + 8, &ret)) {
                s->end = PROFD_END_READ_FAULT;
                return false;
        }
        s->sp = fp + 16;
        s->bp = next;
        s->ip = ret;
        return true;
}

/* One frame by a CFI row. Returns false with s->end set when the walk ends. */
static __noinline bool row_step(struct ustack_state *s, struct walk_window *w,
                                struct profd_unwind_row *r) {
        __u64 cfa, ra, v;
        __u8 kind = r->kind;

        if (kind == PROFD_UNWIND_CFA_SP) {
                cfa = s->sp + r->cfa_off;
        } else if (kind == PROFD_UNWIND_CFA_FP) {
                cfa = s->bp + r->cfa_off;
        } else if (kind == PROFD_UNWIND_PLT) {
                cfa = s->sp + 8 + ((s->ip & 15) >= r->cfa_off ? 8 : 0);
        } else if (kind == PROFD_UNWIND_END) {
                s->end = PROFD_END_COMPLETE;
                return false;
        } else if (kind == PROFD_UNWIND_SIGNAL) {
                __u64 uc = s->sp, bp, sp, ip;

                if (!win_read(s, w, uc + UC_RBP, &bp) || !win_read(s, w, uc + UC_RSP, &sp) ||
                    !win_read(s, w, uc + UC_RIP, &ip)) {
                        s->end = PROFD_END_READ_FAULT;
                        return false;
                }
                /* the interrupted frame may be anywhere (sigaltstack): no
                 * growth check, bpf_loop bounds the walk */
                s->bp = bp;
                s->sp = sp;
                s->ip = ip;
                s->exact_ip = 1;
                return true;
        } else if (kind == PROFD_UNWIND_GAP) {
                return fp_step(s, w);
        } else {
                s->end = PROFD_END_UNSUPPORTED;
                return false;
        }
        if (cfa <= s->sp || cfa - s->sp >= USER_STACK_SPAN) {
                s->end = PROFD_END_CFA_STUCK;
                return false;
        }
        /* lower address first: one window read covers both */
        if (r->rbp_off < 0) {
                if (!win_read(s, w, cfa + 8 * (__s64) r->rbp_off, &v))
                        goto fault;
                s->bp = v;
        }
        if (!win_read(s, w, cfa - 8, &ra))
                goto fault;
        if (r->rbp_off > 0) {
                if (!win_read(s, w, cfa + 8 * (__s64) r->rbp_off, &v))
                        goto fault;
                s->bp = v;
        }
        s->sp = cfa;
        s->ip = ra;
        return true;
fault:
        s->end = PROFD_END_READ_FAULT;
        return false;
}

/* The rule for tag (s->ip, and whether it is exact) in the process's
 * tables, into *ret, remembered in the row cache set c (NULL: none). False with s->end set if the walk ends here.
 * Out of line, like the steps: at 49 Hz a sample finds the program's code
 * cold too, and the common frame (a row cache hit) then runs through
 * fewer lines of it.
 *
 * In the scheduler programs (bpf/offcpu.bpf.c defines
 * UNWIND_ROW_LOOKUP_GLOBAL) a global function, weak as the maps are: the
 * verifier checks it once per program, for any arguments, and at each
 * call only that the arguments fit, where a static subprogram is verified
 * again for every state the walk calls it in: profd_switch_done 150 k ->
 * 87 k instructions, profd_waking 185 k -> 122 k (docs/performance.md,
 * Start-up). Its arguments are memory the verifier assumes may be NULL,
 * hence the check; it takes no row cache set (a pointer into a map value
 * as an argument would be checked as any memory): unwind_one fills the set
 * after it returns. The sampler keeps the static subprogram:
 * there an A/B measured about 10% more BPF time per sample with it global
 * (3.2 -> 3.5 us, in the noise of single rounds but in both runs), and a
 * sample is taken 98 times a second where the programs are verified once. */
#ifdef UNWIND_ROW_LOOKUP_GLOBAL
#define ROW_LOOKUP(s, c, tag, ret) row_lookup(s, tag, ret)
int row_lookup(struct ustack_state *s, __u64 tag, struct profd_unwind_row *ret);
__weak __noinline int row_lookup(struct ustack_state *s, __u64 tag, struct profd_unwind_row *ret) {
        struct row_cache_set *c = NULL;
        __u64 pc, lo = 0, hi = 0;

        if (!s || !ret)
                return false;
#else
#define ROW_LOOKUP(s, c, tag, ret) row_lookup(s, c, tag, ret)
static __noinline bool row_lookup(struct ustack_state *s, struct row_cache_set *c, __u64 tag,
                                  struct profd_unwind_row *ret) {
        __u64 pc, lo = 0, hi = 0;
#endif

        if (!find_mapping(s)) {
                s->end = PROFD_END_NO_MAPPING;
                return false;
        }
        ret->pc = 0;
        ret->cfa_off = 0;
        ret->kind = PROFD_UNWIND_GAP;
        ret->rbp_off = 0;
        if (s->m_kind == PROFD_MAPPING_TABLE) {
                /* a return address points after the call, maybe past the
                 * end of the caller's function: look up the call
                 * instruction itself */
                pc = s->ip - s->m_bias - (tag >> 63 ? 0 : 1);
                if (pc > 0xffffffffULL) {
                        s->end = PROFD_END_NO_MAPPING;
                        return false;
                }
                /* the rules and the ips they hold for: the row's extent,
                 * cut at pc's 64 KiB page, clamped to the mapping below;
                 * below the first row (no CFI there) a gap, as for a
                 * table that is not well formed */
                if (pack_lookup(&unwind_rows, s->m_rows_off, s->m_rows_n, (__u32) pc, ret, &lo, &hi)) {
                        lo += s->m_bias;
                        hi += s->m_bias;
                } else {
                        ret->pc = 0;
                        ret->cfa_off = 0;
                        ret->kind = PROFD_UNWIND_GAP;
                        ret->rbp_off = 0;
                        lo = hi = 0;
                }
        } else if (s->m_kind == PROFD_MAPPING_FP) {
                lo = s->m_start;
                hi = s->m_end;
        } else {
                s->end = PROFD_END_PENDING;
                return false;
        }
        if (lo < s->m_start)
                lo = s->m_start;
        if (hi > s->m_end)
                hi = s->m_end;
        if ((tag >> 63) && s->version && lo < hi)
                leaf_cache_put(s, lo, hi, ret);
        if (c)
                row_cache_put(c, s, tag, ret);
        return true;
}

/* Unwinds the frame of s->ip, frame i of the walk, into its caller's
 * registers. */
static __always_inline bool unwind_one(struct ustack_state *s, struct walk_window *w, __u32 i) {
        struct profd_unwind_row row = {};
        struct row_cache_set *c = NULL;
        __u8 exact = s->exact_ip;
        __u64 tag = s->ip | ((__u64) exact << 63);

        /* the caller's ip is a return address, unless a signal frame sets it */
        s->exact_ip = 0;
        if (s->fp_only)
                return fp_step(s, w);
        if (!s->version)
                goto lookup;
        if (s->memo_ok && walk_memo_hit(s, tag, &row))
                goto found;
        /* the leaf is rarely where it was: no reason to rewrite the slot */
        if (i > 0)
                s->memo_dirty = 1;
        if (exact) {
                struct leaf_cache_set *l = leaf_cache_set(s);

                if (l && (leaf_cache_hit(&l->way[0], s->ip, s->version, &row) ||
                          leaf_cache_hit(&l->way[1], s->ip, s->version, &row)))
                        goto found;
        }
        c = row_cache_set(s, tag);
        if (c && (row_cache_hit(&c->way[0], tag, s->version, &row) ||
                  row_cache_hit(&c->way[1], tag, s->version, &row)))
                goto found;
lookup:
        if (!ROW_LOOKUP(s, c, tag, &row))
                return false;
#ifdef UNWIND_ROW_LOOKUP_GLOBAL
        /* the global row_lookup has no set to fill (see there) */
        if (c)
                row_cache_put(c, s, tag, &row);
#endif
found:
        walk_memo_add(s, w, i, tag, &row);
        return row_step(s, w, &row);
}

/* One frame of the walk in slot's window, frame i: 0 to go on, 1 to stop.
 *
 * A global function: the verifier checks it once per program, for any slot
 * and i, where the body of a bpf_loop callback is checked again for every
 * state a previous iteration can leave, and a static subprogram again for
 * every state it is called in. Static, the walk with its runtime frames
 * took profd_switch_done and profd_waking to 976 k of the verifier's 1 M
 * instructions on kernel 6.18.44 (fc-v1252) and the sampler past it, where
 * an earlier build of the same kernel verified each in 130-370 k
 * (docs/performance.md, Start-up). The sampler and the scheduler programs
 * are separate objects before they are linked, and their walks differ
 * (ROW_LOOKUP): each has its own name. */
#ifdef UNWIND_ROW_LOOKUP_GLOBAL
#define UNWIND_FRAME unwind_frame_sched
#else
#define UNWIND_FRAME unwind_frame_sampler
#endif
int UNWIND_FRAME(__u32 slot, __u32 i);
__noinline int UNWIND_FRAME(__u32 slot, __u32 i) {
        struct walk_window *w = bpf_map_lookup_elem(&walk_windows, &slot);
        struct profd_frames *f;
        struct ustack_state *s;
        __u32 n;

        if (!w)
                return 1;
        f = &w->frames;
        s = &w->s;
        if (s->rt_slot) {
                int r = runtime_frame(s, w);

                if (r == RT_STOP)
                        return 1;
                if (r == RT_EMITTED || r == RT_STEPPED) {
                        /* no native frame in the memo at this position */
                        if (s->version && i < WALK_MEMO_DEPTH) {
                                w->memo_cur[VERIFIER_MASK(i, 31)].tag = 0;
                                s->memo_dirty = 1;
                        }
                        if (r == RT_EMITTED)
                                return 0;
                        goto stepped; /* the caller's registers are in s */
                }
        }
        if (!unwind_one(s, w, i))
                return 1;
stepped:
        if (s->ip == 0) {
                s->end = PROFD_END_COMPLETE;
                return 1;
        }
        if (s->ip < 4096) {
                /* not a code address */
                s->end = s->fp_only ? PROFD_END_FP_END : PROFD_END_NO_MAPPING;
                return 1;
        }
        /* the frame count is in s, map memory, whose values the verifier
         * does not track: it verifies the append once, not once per frame
         * number (runtime frames make it differ from the iteration's) */
        n = s->n;
        if (n >= PROFD_MAX_FRAMES) {
                s->end = PROFD_END_DEPTH;
                return 1;
        }
        f->ips[VERIFIER_MASK(n, 127)] = s->ip;
        s->n = n + 1;
        return 0;
}

static long unwind_frame_cb(__u32 i, void *ctx) {
        return UNWIND_FRAME(*(__u32 *) ctx, i) ? 1 : 0;
}

/* The walk's set-up: the registers saved when the task entered the kernel
 * (regs) into the walk state in w, frame 0 into f. NULL (counted as
 * user_stack_error) without them. */
static __always_inline struct ustack_state *walk_start(struct pt_regs *regs, struct walk_window *w,
                                                       struct profd_frames *f) {
        struct ustack_state *s;

        if (!regs || !w) {
                counter_add(PROFD_DROP_USER_STACK_ERROR, 1);
                return NULL;
        }
        s = &w->s;
        s->ip = PT_REGS_IP(regs);
        s->sp = PT_REGS_SP(regs);
        s->bp = PT_REGS_FP(regs);
        if (s->ip == 0) {
                counter_add(PROFD_DROP_USER_STACK_ERROR, 1);
                return NULL;
        }
        f->ips[0] = s->ip;
        s->win_base = 0;
        s->win_len = 0;
        s->read_hi = 0;
        s->n = 1;
        s->end = END_WALKING;
        s->exact_ip = 1;
        s->rt_state = RT_IDLE;
        s->rt_replace = 0;
        s->rt_met = 0;
        return s;
}

/* The process's unwind entry: what this walker's last lookup found, if it
 * was for the same process instance (tgid, start) and unwind_epoch did not
 * move since (no entry changed: the slice it names is the one a lookup
 * would find now), else looked up. Read before the lookup: an entry
 * changed in between is looked up again next time. A cold hash lookup
 * cost the sampler ~1 us a sample here (docs/performance.md); the epoch is
 * next to `generation` in .bss, which the program has read already.
 * Leaves the entry's slice and version (0: none of this instance) in s;
 * returns the entry if this walk looked it up, else NULL. */
static __always_inline struct profd_unwind_proc *walk_find_proc(struct ustack_state *s, __u32 tgid, __u64 start) {
        struct profd_unwind_proc *p = NULL;
        __u32 epoch = *(volatile __u32 *) &unwind_epoch;

        if (s->p_tgid != tgid || s->p_start != start || s->p_epoch != epoch) {
                p = bpf_map_lookup_elem(&unwind_procs, &tgid);
                s->p_tgid = tgid;
                s->p_start = start;
                s->p_epoch = epoch;
                s->p_version = 0;
                s->p_announced = 0;
                s->rt_slot = 0;
                s->hs_name_nmethod = s->hs_name_interp = 0;
                if (p && (p->start_tick_ns ? p->start_ns == start / p->start_tick_ns : p->start_ns == start)) {
                        /* kept for the next walks while p_version is */
                        s->maps_off = p->maps_off;
                        s->maps_n = p->maps_n;
                        s->p_version = p->version; /* versions start at 1 */
                        s->p_announced = p->start_tick_ns == 0;
                        if (p->rt_slot && p->rt_slot <= PROFD_RUNTIME_SLOTS) {
                                s->rt_lo = p->rt_lo;
                                s->rt_hi = p->rt_hi;
                                s->rt_cold_lo = p->rt_cold_lo;
                                s->rt_cold_hi = p->rt_cold_hi;
                                s->rt_bias = p->rt_bias;
                                s->rt_slot = p->rt_slot;
                        }
                }
        }
        return p;
}

/* How the walk uses the entry: its tables, under its version, by which
 * the caches of the slot's walker (enum walk_cache) are keyed; frame
 * pointers all the way without an entry. */
static __always_inline void walk_use_proc(struct ustack_state *s, __u32 slot) {
        s->cache = slot == SCRATCH_ONCPU_USER ? WALK_CACHE_ONCPU
                   : slot == SCRATCH_WAKER_USER ? WALK_CACHE_WAKER : WALK_CACHE_SWITCH;
        if (s->p_version) {
                __u64 version = s->p_version;

                /* the last walk's mapping, found in this same version of
                 * the process's mappings, is still the one it was */
                if (!version || version != s->version)
                        s->m_start = s->m_end = 0;
                s->fp_only = 0;
                s->version = version;
        } else {
                s->m_start = s->m_end = 0;
                s->fp_only = 1;
                s->version = 0;
        }
}

/* The walk's end: the memo slot saved, the frames and the
 * reason the walk ended into f, *announced (if asked for) and the
 * counters. Returns the reason. */
static __always_inline __u8 walk_end(struct ustack_state *s, struct walk_window *w, struct profd_frames *f,
                                     bool *announced) {
        __u8 end;

        if (s->version)
                walk_memo_save(s, w);
        end = s->end;
        if (end == END_WALKING)
                end = PROFD_END_DEPTH;
        if (s->fp_only && end != PROFD_END_COMPLETE)
                end = PROFD_END_NO_PROCESS;
        f->n = s->n;
        f->end = end;
        if (announced)
                *announced = s->p_announced; /* set with p_version only */

        counter_add(PROFD_CNT_USER_WALKS, 1);
        if (s->rt_slot && s->rt_frames)
                counter_add(s->rt_met ? PROFD_HS_FRAMES : PROFD_CNT_RT_FRAMES, s->rt_frames);
        if (end != PROFD_END_COMPLETE && end < PROFD_END__MAX)
                counter_add(PROFD_TRUNC_NO_PROCESS + end - 1, 1);
        return end;
}

/* A walk that met an ip in no mapping of the process's entry tells the
 * daemon, once per process until the daemon looked at its mappings again.
 * p: the entry if the walk looked it up. */
static __always_inline void walk_report_miss(struct task_struct *task, struct ustack_state *s,
                                             struct profd_unwind_proc *p, __u32 tgid, __u64 start) {
        if (!p)
                p = bpf_map_lookup_elem(&unwind_procs, &tgid);
        if (p && p->version == s->p_version && !p->miss_sent) {
                p->miss_sent = 1;
                announce(PROFD_EVENT_UNWIND_MISS, task, tgid, start);
        }
}

/* Walks the user stack of the current task (which must be `task`) from the
 * registers saved when it entered the kernel into the scratch frames of
 * slot (f, from scratch_get(slot)), and sets f->end. A process without an
 * unwind entry (or with one of an earlier instance) is walked by frame
 * pointers and ends PROFD_END_NO_PROCESS unless the chain reached its end.
 * Each slot's walker has its own caches (enum walk_cache).
 * *announced (if asked for): the daemon has an entry for this process
 * instance made after its announcement (one with the exact start: the
 * daemon makes those only from an event, and drops them when the process
 * goes), so it knows the process and announce_if_new has nothing to do.
 * Returns false (counted as user_stack_error) if there are no user
 * registers. */
static __always_inline bool user_stack_unwind(struct task_struct *task, struct profd_frames *f, __u32 slot,
                                              bool *announced) {
        struct pt_regs *regs = (struct pt_regs *) bpf_task_pt_regs(task);
        struct walk_window *w = bpf_map_lookup_elem(&walk_windows, &slot);
        struct profd_unwind_proc *p;
        struct ustack_state *s;
        __u32 tgid = task->tgid;
        __u64 start;

        f->n = 0;
        f->end = PROFD_END_COMPLETE;
        if (announced)
                *announced = false;
        s = walk_start(regs, w, f);
        if (!s)
                return false;
        start = process_start_ns(task);
        p = walk_find_proc(s, tgid, start);
        walk_use_proc(s, slot);
        if (s->rt_slot) {
                /* the runtime walk's own state, set apart from the lines every walk touches */
                s->rt_frames = 0;
                s->rt_frame = 0;
                s->fsbase = task->thread.fsbase; /* the runtime's thread state is found from it */
                s->r13 = regs->r13;
        }
        if (s->version) {
                struct walk_memo_slot *m = walk_memo_begin(s, task->pid);

                if (m)
                        span_read(s, w, m->read_hi);
        }
        bpf_loop(PROFD_MAX_FRAMES, unwind_frame_cb, &slot, 0);
        if (walk_end(s, w, f, announced) == PROFD_END_NO_MAPPING && !s->fp_only)
                walk_report_miss(task, s, p, tgid, start);
        return true;
}

#else

/* Walks the user stack of the current task (which must be `task`) by frame
 * pointers, from the registers saved when it entered the kernel, into f.
 * Unlike the kernel's walker it follows a frame pointer only if it points
 * into the stack above the stack pointer, each next one higher still: code
 * built without frame pointers uses the register for data, and reading such
 * a value as an address mostly faults, which costs microseconds. The walk
 * ends at the first frame that is not plausible. slot picks the window.
 * Returns false (and counts it) if there are no user registers. */
static __always_inline bool user_stack_walk(struct task_struct *task, struct profd_frames *f, __u32 slot,
                                            __u16 *span) {
        struct pt_regs *regs = (struct pt_regs *) bpf_task_pt_regs(task);
        struct walk_window *w = bpf_map_lookup_elem(&walk_windows, &slot);
        __u64 ip, sp, fp, lo, first_fp, base = 0, len = 0, cap = WALK_FIRST;

        f->n = 0;
        f->end = PROFD_END_COMPLETE;
        if (!regs || !w) {
                counter_add(PROFD_DROP_USER_STACK_ERROR, 1);
                return false;
        }
        /* direct loads from the BTF-typed registers: no helper call */
        ip = PT_REGS_IP(regs);
        sp = PT_REGS_SP(regs);
        fp = PT_REGS_FP(regs);
        if (ip == 0) {
                counter_add(PROFD_DROP_USER_STACK_ERROR, 1);
                return false;
        }
        f->ips[0] = ip;
        f->n = 1;
        lo = sp;
        first_fp = fp;
        /* the same cap for every read of this walk: a cap that changed
         * between iterations would multiply the verifier's states */
        if (span && *span > WALK_FIRST)
                cap = *span <= WALK_WINDOW ? *span : WALK_WINDOW;
        for (__u32 i = 1; i < PROFD_MAX_FRAMES; i++) {
                __u64 off, next, ret;

                if (fp < lo || fp - sp >= USER_STACK_SPAN || (fp & 7))
                        break;
                if (fp < base || fp + 16 > base + len) {
                        /* refill: from fp to the end of its page, at most a window */
                        len = 4096 - (fp & 4095);
                        if (len < 16)
                                len = 16; /* a frame straddling two pages */
                        if (len > cap)
                                len = cap;
                        if (len > WALK_WINDOW)
                                len = WALK_WINDOW;
                        base = fp;
                        if (bpf_probe_read_user(w->bytes, len, (void *) fp))
                                break;
                }
                off = fp - base;
                if (off > WALK_WINDOW - 16)
                        break;
                next = *(__u64 *) &w->bytes[off];
                ret = *(__u64 *) &w->bytes[off + 8];
                if (ret < 4096)
                        break; /* not a code address: the end of the chain */
                f->ips[i] = ret;
                f->n = i + 1;
                lo = fp + 16;
                fp = next;
        }
        if (span)
                *span = lo > first_fp && lo - first_fp <= WALK_WINDOW ? lo - first_fp : 0;
        return true;
}

/* Other architectures: frame pointers (see user_stack_walk). */
static __always_inline bool user_stack_unwind(struct task_struct *task, struct profd_frames *f, __u32 slot,
                                              bool *announced) {
        if (announced)
                *announced = false;
        counter_add(PROFD_CNT_USER_WALKS, 1);
        return user_stack_walk(task, f, slot, NULL);
}

#endif
