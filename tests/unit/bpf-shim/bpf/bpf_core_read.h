/* The BPF walker's test shim: libbpf's bpf_core_read.h, plain reads
 * through the pointers. */
#pragma once

#include <stdio.h>

#define BPF_CORE_READ_STR_INTO(dst, src, a, b) snprintf((char *) (dst), sizeof(*(dst)), "%s", (src)->a->b)
