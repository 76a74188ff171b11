/* HotSpot, a runtime walker: discovery in libjvm.so (hswalk's, issue 42). */
#pragma once

#include <gelf.h>
#include <stdint.h>

#include "hotspot-vmstructs.h"
#include "runtime.h"

/* What discovery keeps for naming (struct unwind_runtime_found.names):
 * the file addresses of libjvm's gHotSpotVM* symbols; + the load bias,
 * the process's. */
struct hotspot_found_names {
        uint64_t symbols[_HOTSPOT_SYM_MAX];
};

/* Discovery (struct unwind_runtime.discover): libjvm.so's exported tables. */
int hotspot_discover(Elf *elf, const struct file_key *key, struct unwind_runtime_found *ret);
