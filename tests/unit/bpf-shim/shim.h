/* The BPF shim (shim.c): the maps and helpers bpf/'s headers call when
 * compiled in user space by the walker's tests (test-bpf-walker.c,
 * test-bpf-python.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../../bpf/maps.bpf.h"

/* A map as the helpers see it: its definition's address (what the headers
 * pass), its type, and its entries (a hash keeps a used flag per slot). */
struct shim_map {
        const void *def;
        int type;
        size_t key_size, value_size, max;
        uint8_t *keys, *values;
        bool *used;
        size_t lookups, updates; /* counted: which memory a walk touched */
};

#define SHIM_MAPS_MAX 24
extern struct shim_map shim_maps[SHIM_MAPS_MAX];
extern size_t n_shim_maps;

void shim_map_add(const void *def, int type, size_t key_size, size_t value_size, size_t max);
/* The type, key and value sizes as a map definition's members declare them. */
#define SHIM_MAP(m, max) \
        shim_map_add(&(m), sizeof(*(m).type) / sizeof(int), sizeof(*(m).key), sizeof(*(m).value), max)
struct shim_map *shim_map_of(const void *def);
void shim_map_clear(const void *def);

/* unwind_rows and unwind_maps as shim_init sizes them. */
#define ROWS_MAX (1u << 21)
#define MAPS_MAX 4096u
/* Every map of maps.bpf.h. */
void shim_init(void);

/* The user memory the walk may read: a recorded stack, and where it does
 * not cover an address, the memory of a stopped process (live_fd: its
 * /proc/PID/mem; -1: none, the read faults). */
struct shim_mem {
        uint64_t base;
        const uint8_t *bytes;
        size_t len;
        int live_fd;
};
extern struct shim_mem shim_mem;
extern struct pt_regs shim_regs;

/* The last event submitted, and how many of each type. */
#define SHIM_EVENT_TYPES (PROFD_EVENT_RUNTIME_CODE + 1)
extern struct profd_event shim_event;
extern unsigned shim_events[SHIM_EVENT_TYPES];
