/* Sizes of the aggregation maps: demand from the sampling rate, capped by
 * the kernel_memory budget. See docs/architecture.md, "Map sizes". */
#include "mapsize.h"

#include "macro.h"
#include "samplelog.h"

/* struct htab_elem (hash node, hash, padding) before key and value, and a
 * bucket (list head and lock) per power of two of entries: x86-64, 6.x. */
#define HTAB_ELEM_HEAD 48
#define HTAB_BUCKET 16
/* struct bpf_htab itself, and its 8 per-CPU lock counters */
#define HTAB_FIXED 848
#define HTAB_PER_CPU 32

/* Off-CPU blocks and wakers add keys and stacks per distinct (thread,
 * stack, state) in an interval, not per CPU: a busy 2-CPU host running
 * builds and test suites made up to 14 k keys and 11 k stacks in most 10 s
 * drains (one burst of thread-heavy tests: 43 k keys, counted map_full).
 * At 49 Hz the two take 11.0 MiB on 2 CPUs, which keeps all of profd's
 * maps under 40 MiB there with the default unwind_memory. */
#define BLOCK_KEYS 18432
#define BLOCK_STACKS 11264
/* Without blocks: short-lived processes and rare stacks */
#define BASE_STACKS 4096
#define MIN_KEYS 4096
#define MIN_STACKS 8192
/* The least the budget can shrink them to: a few threads' stacks */
#define FLOOR_KEYS 64
#define FLOOR_NODES 16

/* struct bpf_array before its elements */
#define ARRAY_FIXED 320

/* Node classes' shares of a generation's nodes, in percent. Stacks of this
 * machine, heads of 8 or fewer frames: 46 %, 9 to 16: 30 %, 17 to 32: 10 %,
 * deeper: 14 %; but deeper stacks also bring their outer 32-frame nodes,
 * and on a host running compilers and test suites the three classes
 * peaked at about the same number of nodes (docs/performance.md, "Kernel
 * memory"). A full class overflows into larger ones only, so the largest
 * must not be the one short. */
static const unsigned class_share[PROFD_CLASS__MAX] = { 35, 30, 35 };

static size_t roundup_pow2(size_t v) {
        size_t p = 1;
        while (p < v)
                p <<= 1;
        return p;
}

static size_t round8(size_t v) {
        return (v + 7) / 8 * 8;
}

uint64_t mapsize_hash_bytes(size_t entries, size_t key_size, size_t value_size, unsigned cpus) {
        uint64_t elem = HTAB_ELEM_HEAD + round8(key_size) + round8(value_size);

        return HTAB_FIXED + (uint64_t) HTAB_PER_CPU * cpus + (uint64_t) roundup_pow2(MAX(entries, (size_t) 1)) * HTAB_BUCKET +
               ((uint64_t) entries + cpus) * elem;
}

static size_t node_value_size(unsigned cls) {
        return sizeof(struct profd_node_head) + 8 * PROFD_CLASS_FRAMES(cls);
}

/* The largest class takes the rest, so the classes add up to stacks */
static void split_nodes(size_t stacks, size_t nodes[PROFD_CLASS__MAX]) {
        size_t given = 0;

        for (unsigned c = 0; c + 1 < PROFD_CLASS__MAX; c++) {
                nodes[c] = MAX(stacks * class_share[c] / 100, (size_t) 1);
                given += nodes[c];
        }
        nodes[PROFD_CLASS__MAX - 1] = stacks > given ? stacks - given : 1;
}

/* Sizes the sampler's log and the off-CPU log from the keys (see
 * samplelog_slots), then returns the bytes of the plan. */
static uint64_t plan_bytes(struct mapsize_plan *p, const struct mapsize_input *in) {
        uint64_t b = mapsize_hash_bytes(p->keys, sizeof(struct profd_sample_key), sizeof(uint64_t), in->cpus);

        for (unsigned c = 0; c < PROFD_CLASS__MAX; c++)
                b += mapsize_hash_bytes(p->nodes[c], sizeof(uint64_t), node_value_size(c), in->cpus);
        p->log_slots = in->cpu ? samplelog_slots(in->frequency_hz, in->interval_ns, p->keys, in->cpus) : 0;
        p->block_slots = in->offcpu_rate ? samplelog_slots(in->offcpu_rate, in->interval_ns, p->keys, in->cpus) : 0;
        /* two generations; each log is one array of both */
        return 2 * b + ARRAY_FIXED + 2 * (uint64_t) p->log_slots * in->cpus * sizeof(struct profd_log_slot) +
               (p->block_slots ? ARRAY_FIXED + 2 * (uint64_t) p->block_slots * in->cpus *
                                                       sizeof(struct profd_block_slot)
                               : 0);
}

void mapsize_plan(const struct mapsize_input *in, struct mapsize_plan *ret) {
        uint64_t interval_s = (in->interval_ns + 999999999ULL) / 1000000000ULL;
        /* at most this many samples land in one generation */
        uint64_t samples = in->cpu ? (uint64_t) in->frequency_hz * in->cpus * MAX(interval_s, (uint64_t) 1) : 0;
        uint64_t keys = MAX(samples + (in->blocks ? BLOCK_KEYS : 0), (uint64_t) MIN_KEYS);
        /* each sample brings at most two stacks (user and kernel) */
        uint64_t stacks = MAX(2 * samples + (in->blocks ? BLOCK_STACKS : BASE_STACKS), (uint64_t) MIN_STACKS);
        struct mapsize_plan p = {};

        if (in->max_keys)
                keys = in->max_keys;
        if (in->max_stacks)
                stacks = in->max_stacks;
        p.keys = keys;
        p.stacks = stacks;
        split_nodes(stacks, p.nodes);
        p.bytes = p.demand_bytes = plan_bytes(&p, in);

        /* Over budget: shrink what is not fixed by a setting, by 1/32 a
         * step (powers of two of buckets make the total step-wise) */
        while (p.bytes > in->kernel_memory && (!in->max_keys || !in->max_stacks)) {
                bool shrunk = false;

                if (!in->max_keys && p.keys > FLOOR_KEYS) {
                        p.keys = MAX(p.keys - p.keys / 32 - 1, (size_t) FLOOR_KEYS);
                        shrunk = true;
                }
                if (!in->max_stacks && p.stacks > FLOOR_NODES * PROFD_CLASS__MAX * 100 / class_share[PROFD_CLASS__MAX - 1]) {
                        p.stacks -= p.stacks / 32 + 1;
                        split_nodes(p.stacks, p.nodes);
                        shrunk = true;
                }
                if (!shrunk)
                        break;
                p.capped = true;
                p.bytes = plan_bytes(&p, in);
        }
        p.stacks = 0;
        for (unsigned c = 0; c < PROFD_CLASS__MAX; c++)
                p.stacks += p.nodes[c];
        *ret = p;
}

static bool fill_high(uint64_t used, uint64_t max) {
        return max > 0 && used * 100 >= max * MAPSIZE_FILL_HIGH_PCT;
}

bool mapsize_fill_high(const struct mapsize_fill *f) {
        for (unsigned c = 0; c < PROFD_CLASS__MAX; c++)
                if (fill_high(f->nodes[c], f->nodes_max[c]))
                        return true;
        return fill_high(f->keys, f->keys_max);
}
