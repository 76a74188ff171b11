/* The BPF walker's test shim: libbpf's bpf_helpers.h in user space. Map
 * definitions (SEC(".maps") with __uint and __type) stay what they are in
 * C, plain variables whose members' types carry the map's type, key and
 * value; the helpers are functions the test defines over its own memory
 * (tests/unit/test-bpf-walker.c). */
#pragma once

#include <linux/types.h>

#define SEC(name)
#define __weak __attribute__((weak))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) __typeof__(val) *name
#define __array(name, val) __typeof__(val) *name[]
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#define __noinline __attribute__((noinline))
#define barrier_var(var) __asm__ volatile("" : "+r"(var))
/* the BPF one is an instruction the verifier sees; here a mask */
#define VERIFIER_MASK(v, mask) ((__u64) (v) & (mask))

struct task_struct;

void *bpf_map_lookup_elem(void *map, const void *key);
long bpf_map_update_elem(void *map, const void *key, const void *value, __u64 flags);
long bpf_map_delete_elem(void *map, const void *key);
long bpf_probe_read_user(void *dst, __u32 size, const void *unsafe_ptr);
long bpf_probe_read_kernel(void *dst, __u32 size, const void *unsafe_ptr);
long bpf_loop(__u32 nr_loops, long (*callback_fn)(__u32 index, void *ctx), void *ctx, __u64 flags);
__u32 bpf_get_smp_processor_id(void);
__u64 bpf_ktime_get_ns(void);
void *bpf_ringbuf_reserve(void *ringbuf, __u64 size, __u64 flags);
void bpf_ringbuf_submit(void *data, __u64 flags);
long bpf_task_pt_regs(struct task_struct *task);
