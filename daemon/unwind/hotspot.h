/* HotSpot (the JVM), a runtime walker (runtime.h): discovery of libjvm.so
 * in a mapped file (its exported gHotSpotVM* symbols), and, per JVM
 * process, the slot its BPF walker (bpf/hotspot.bpf.h) steps the code
 * cache's frames with, made from the process's own VM structs. The
 * naming of its pseudo-frames is hotspot-code.h's. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "hotspot-vmstructs.h"
#include "runtime.h"

/* What discovery keeps in struct unwind_runtime_found.names: the file
 * addresses of libjvm's gHotSpotVM* symbols (+ the load bias: the
 * process's), from which the VM structs are read
 * (hotspot_vmstructs_read). */
struct hotspot_found_names {
        uint64_t symbols[_HOTSPOT_SYM_MAX];
};

/* Discovery (runtime.h's discover hook), from the file only: a libjvm.so
 * exporting every gHotSpotVM* symbol (hotspot_symbols_elf) is HotSpot:
 * found.id UNWIND_RUNTIME_HOTSPOT, anonymous_code (the code cache), no
 * hand-over range in the file (lo == hi: the range is the process's code
 * cache), names a struct hotspot_found_names. Returns 1, 0 when the file
 * is not one, or -EPROTONOSUPPORT when it exports only some of them (or
 * is not 64-bit little-endian). */
int hotspot_discover(Elf *elf, const struct file_key *key, struct unwind_runtime_found *ret);

/* The BPF walker's slot of one JVM (struct profd_runtime, id
 * UNWIND_RUNTIME_HOTSPOT) from its VM structs, and the code cache's
 * bounds (the process's hand-over range) into *ret_lo, *ret_hi. Returns
 * 0, or -EPROTONOSUPPORT when the JVM's layout does not fit the walker's
 * slot (more code heaps than PROFD_HOTSPOT_HEAPS, a CodeBlob field the
 * walker reads not described or past what it reads of a blob, an offset
 * over 16 bits). Pure. */
int hotspot_runtime_make(const struct hotspot_vmstructs *vs, struct profd_runtime *ret, uint64_t *ret_lo,
                         uint64_t *ret_hi);

/* Whether a hotspot_vmstructs_read that returned r (its reason and what)
 * may be of a JVM still starting, to be read again a little later: the
 * java launcher dlopens libjvm after exec, libjvm's static initialisers
 * set the tables' layout variables after ld.so mapped it, and the code
 * heaps come during the VM's start. Every failure but a missing field
 * (-EPROTONOSUPPORT) and -ENOMEM; and a read whose heaps do not cover the
 * code cache's bounds (between two heaps' set-up): `vs` (NULL: none). */
bool hotspot_vmstructs_pending(int r, enum hotspot_vmstructs_reason reason, const char *what,
                               const struct hotspot_vmstructs *vs);

/* Reads the VM structs of process pid (proc_root/PID/mem), whose libjvm
 * (found, discovery's) is loaded at bias. Returns what
 * hotspot_vmstructs_read does, -errno when the memory cannot be opened
 * (*ret_reason HOTSPOT_VMSTRUCTS_READ_LAYOUT). */
int hotspot_process_vmstructs(const char *proc_root, uint32_t pid, const struct unwind_runtime_found *found,
                              uint64_t bias, struct hotspot_vmstructs *ret, enum hotspot_vmstructs_reason *ret_reason,
                              const char **ret_what);

/* The segment map's walk of the BPF walker (hs_find_blob in
 * bpf/hotspot.bpf.h) on a copy of a heap's map of n segments: from
 * segment seg back to the first segment of its block, at most max_steps
 * hops. Returns 0 with *ret_seg; -ENOENT when the segment is free (0xff),
 * -EBADMSG when the hops do not end at a block's start within max_steps
 * or leave the map. Pure: for tests, the reference of the BPF walk. */
int hotspot_segmap_find(const uint8_t *segmap, uint64_t n, uint64_t seg, unsigned max_steps, uint64_t *ret_seg);
