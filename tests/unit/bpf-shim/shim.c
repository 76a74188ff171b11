/* The BPF shim's maps and helpers: the walker's headers (bpf/) compiled
 * in user space call these. Map definitions stay plain variables; the
 * helpers work over arrays and a small hash, user reads over a recorded
 * stack (and, when shim_mem.live_fd is open, a stopped process's memory),
 * bpf_loop is a loop, one CPU. See shim.h. */
#include "shim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A map as the helpers see it: its definition's address (what the headers
 * pass), its type, and its entries (a hash keeps a used flag per slot). */

struct shim_map shim_maps[SHIM_MAPS_MAX];
size_t n_shim_maps;

void shim_map_add(const void *def, int type, size_t key_size, size_t value_size, size_t max) {
        struct shim_map *m = &shim_maps[n_shim_maps++];

        *m = (struct shim_map) { .def = def, .type = type, .key_size = key_size, .value_size = value_size,
                                 .max = max };
        m->keys = calloc(max, key_size);
        m->values = calloc(max, value_size);
        m->used = calloc(max, sizeof(*m->used));
        if (!m->keys || !m->values || !m->used)
                abort();
}

struct shim_map *shim_map_of(const void *def) {
        for (size_t i = 0; i < n_shim_maps; i++)
                if (shim_maps[i].def == def)
                        return &shim_maps[i];
        fprintf(stderr, "a map the shim does not know\n");
        abort();
}

static bool shim_is_array(const struct shim_map *m) {
        return m->type == BPF_MAP_TYPE_ARRAY || m->type == BPF_MAP_TYPE_PERCPU_ARRAY;
}

/* The slot of key in a hash, or -1. */
static ssize_t shim_hash_find(const struct shim_map *m, const void *key) {
        for (size_t i = 0; i < m->max; i++)
                if (m->used[i] && memcmp(m->keys + i * m->key_size, key, m->key_size) == 0)
                        return (ssize_t) i;
        return -1;
}

void shim_map_clear(const void *def) {
        struct shim_map *m = shim_map_of(def);

        memset(m->values, 0, m->max * m->value_size);
        memset(m->used, 0, m->max * sizeof(*m->used));
}

void *bpf_map_lookup_elem(void *map, const void *key) {
        struct shim_map *m = shim_map_of(map);
        ssize_t i;

        m->lookups++;
        if (shim_is_array(m)) {
                uint32_t idx;

                memcpy(&idx, key, sizeof(idx));
                return idx < m->max ? m->values + idx * m->value_size : NULL;
        }
        i = shim_hash_find(m, key);
        return i < 0 ? NULL : m->values + (size_t) i * m->value_size;
}

long bpf_map_update_elem(void *map, const void *key, const void *value, __u64 flags) {
        struct shim_map *m = shim_map_of(map);
        ssize_t i;

        m->updates++;
        if (shim_is_array(m)) {
                uint32_t idx;

                memcpy(&idx, key, sizeof(idx));
                if (idx >= m->max)
                        return -E2BIG;
                memcpy(m->values + idx * m->value_size, value, m->value_size);
                return 0;
        }
        i = shim_hash_find(m, key);
        if (i >= 0 && flags == BPF_NOEXIST)
                return -EEXIST;
        for (size_t k = 0; i < 0 && k < m->max; k++)
                if (!m->used[k])
                        i = (ssize_t) k;
        if (i < 0)
                return -E2BIG;
        m->used[i] = true;
        memcpy(m->keys + (size_t) i * m->key_size, key, m->key_size);
        memcpy(m->values + (size_t) i * m->value_size, value, m->value_size);
        return 0;
}

long bpf_map_delete_elem(void *map, const void *key) {
        struct shim_map *m = shim_map_of(map);
        ssize_t i = shim_hash_find(m, key);

        if (i < 0)
                return -ENOENT;
        m->used[i] = false;
        return 0;
}

struct shim_mem shim_mem = { .live_fd = -1 };
struct pt_regs shim_regs;

long bpf_probe_read_user(void *dst, __u32 size, const void *unsafe_ptr) {
        uint64_t a = (uint64_t) (uintptr_t) unsafe_ptr;

        if (a < shim_mem.base || a - shim_mem.base > shim_mem.len || size > shim_mem.len - (a - shim_mem.base)) {
                /* live: the stopped process's memory, as the kernel reads it */
                if (shim_mem.live_fd >= 0 && pread(shim_mem.live_fd, dst, size, (off_t) a) == (ssize_t) size)
                        return 0;
                memset(dst, 0, size); /* as the helper does on a fault */
                return -EFAULT;
        }
        memcpy(dst, shim_mem.bytes + (a - shim_mem.base), size);
        return 0;
}

/* The kernel's memory is the test's own: the task structs it made. */
long bpf_probe_read_kernel(void *dst, __u32 size, const void *unsafe_ptr) {
        if (!unsafe_ptr) {
                memset(dst, 0, size);
                return -EFAULT;
        }
        memcpy(dst, unsafe_ptr, size);
        return 0;
}

long bpf_loop(__u32 nr_loops, long (*callback_fn)(__u32 index, void *ctx), void *ctx, __u64 flags) {
        __u32 i = 0;

        while (i < nr_loops)
                if (callback_fn(i++, ctx))
                        break;
        return i;
}

__u32 bpf_get_smp_processor_id(void) {
        return 0;
}

/* a clock that moves: the sampler's log stamps each sample with it */
__u64 bpf_ktime_get_ns(void) {
        static __u64 now = 1000000000;

        return now += 1000;
}

struct profd_event shim_event;
unsigned shim_events[SHIM_EVENT_TYPES];

void *bpf_ringbuf_reserve(void *ringbuf, __u64 size, __u64 flags) {
        return size <= sizeof(shim_event) ? &shim_event : NULL;
}

void bpf_ringbuf_submit(void *data, __u64 flags) {
        const struct profd_event *e = data;

        if (e->type < sizeof(shim_events) / sizeof(shim_events[0]))
                shim_events[e->type]++;
}

long bpf_task_pt_regs(struct task_struct *task) {
        return (long) (uintptr_t) &shim_regs;
}

/* The programs' globals (proc.bpf.c defines them there). */
__u32 generation, unwind_epoch, samples_log_slots, samples_log_cpus;
__u64 events_submit_flags;

void shim_init(void) {
        SHIM_MAP(counts_0, 256);
        SHIM_MAP(counts_1, 256);
        SHIM_MAP(frames8_0, 256);
        SHIM_MAP(frames8_1, 256);
        SHIM_MAP(frames16_0, 256);
        SHIM_MAP(frames16_1, 256);
        SHIM_MAP(frames32_0, 256);
        SHIM_MAP(frames32_1, 256);
        SHIM_MAP(counters, 1);
        SHIM_MAP(seen, 64);
        SHIM_MAP(unwind_rows, ROWS_MAX);
        SHIM_MAP(unwind_maps, MAPS_MAX);
        SHIM_MAP(unwind_procs, 64);
        SHIM_MAP(walk_windows, SCRATCH__MAX);
        SHIM_MAP(row_cache, WALK_CACHE__MAX);
        SHIM_MAP(unwind_runtimes, PROFD_RUNTIME_SLOTS);
        SHIM_MAP(runtime_seen, 1);
        SHIM_MAP(hotspot_blobs, 1);
}
