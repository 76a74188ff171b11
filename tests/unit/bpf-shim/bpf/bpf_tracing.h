/* The BPF walker's test shim: libbpf's bpf_tracing.h, the register
 * accessors of the shim's struct pt_regs (vmlinux.h). */
#pragma once

#define PT_REGS_IP(x) ((x)->ip)
#define PT_REGS_SP(x) ((x)->sp)
#define PT_REGS_FP(x) ((x)->bp)
