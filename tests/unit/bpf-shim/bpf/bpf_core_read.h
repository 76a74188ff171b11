/* The BPF walker's test shim: libbpf's bpf_core_read.h, plain reads
 * through the pointers. */
#pragma once

#include <stdio.h>

#define BPF_CORE_READ_STR_INTO(dst, src, a, b) snprintf((char *) (dst), sizeof(*(dst)), "%s", (src)->a->b)

#include <stddef.h>
#include <string.h>

/* BPF_CORE_READ(src, a, b, ...): src->a->b..., 0 where a pointer on the
 * way is NULL (the kernel's probe reads fail and give 0 there). */
#define ___CR_N(_1, _2, _3, _4, _5, N, ...) N
#define ___CRV(s, a, v) ({ __typeof__(s) v = (s); v ? v->a : (__typeof__(v->a)) 0; })
#define ___CR2(s, a) ___CRV(s, a, _p1)
#define ___CR3(s, a, b) ___CRV(___CRV(s, a, _p1), b, _p2)
#define ___CR4(s, a, b, c) ___CRV(___CRV(___CRV(s, a, _p1), b, _p2), c, _p3)
#define ___CR5(s, a, b, c, d) ___CRV(___CRV(___CRV(___CRV(s, a, _p1), b, _p2), c, _p3), d, _p4)
#define BPF_CORE_READ(...) ___CR_N(__VA_ARGS__, ___CR5, ___CR4, ___CR3, ___CR2, ___CR1)(__VA_ARGS__)
#define bpf_core_field_offset(type, field) offsetof(type, field)
#define bpf_core_type_size(type) sizeof(type)
#define bpf_core_read(dst, sz, src) (memcpy((dst), (src), (sz)), 0)
