/* Tests of the kernel's stack storage as the daemon sees it: the sizes of
 * the aggregation maps (bounded by kernel_memory whatever the CPU count,
 * the kernel's own memory figures reproduced) and stacks put back together
 * from chains of nodes (order, missing links, cycles), the sampler's
 * leaf put back in front of its callers, and the fill check that drains
 * early. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "mapsize.h"
#include "stacknodes.h"
#include "tests.h"

#define MIB (1ULL << 20)

static struct mapsize_input defaults(unsigned cpus) {
        return (struct mapsize_input) {
                .cpus = cpus,
                .frequency_hz = 49,
                .interval_ns = 10ULL * 1000000000ULL,
                .cpu = true,
                .blocks = true,
                .kernel_memory = 64 * MIB,
        };
}

static void test_hash_bytes_as_the_kernel_reports(void) {
        /* bytes_memlock that bpftool showed for profd's maps on 6.18,
         * 2 possible CPUs: counts_0 (32768 keys of 48 bytes, 8-byte values)
         * and the old frames_0 (8192 stacks of 1024 bytes) */
        CHECK_INT_EQ(mapsize_hash_bytes(32768, 48, 8, 2), 3933280);
        CHECK_INT_EQ(mapsize_hash_bytes(8192, 8, 1024, 2), 8981504);
}

static void test_two_cpus_fit_in_twelve_mib(void) {
        struct mapsize_input in = defaults(2);
        struct mapsize_plan p;

        mapsize_plan(&in, &p);
        /* 49 Hz x 2 CPUs x 10 s samples, plus room for blocks and wakers */
        CHECK_INT_EQ(p.keys, 980 + 18432);
        CHECK_INT_EQ(p.stacks, 2 * 980 + 11264);
        CHECK_INT_EQ(p.nodes[PROFD_CLASS_8] + p.nodes[PROFD_CLASS_16] + p.nodes[PROFD_CLASS_32], p.stacks);
        for (unsigned c = 0; c < PROFD_CLASS__MAX; c++)
                CHECK(p.nodes[c] >= p.stacks / 4);
        CHECK(!p.capped);
        CHECK(p.bytes <= 12 * MIB);
        CHECK_INT_EQ(p.bytes, p.demand_bytes);
}

static void test_bounded_whatever_the_cpus(void) {
        uint64_t last = 0;

        for (unsigned cpus = 1; cpus <= 256; cpus++) {
                struct mapsize_input in = defaults(cpus);
                struct mapsize_plan p;

                mapsize_plan(&in, &p);
                CHECK(p.bytes <= in.kernel_memory);
                /* more CPUs get larger maps until the budget, then about
                 * the budget (buckets come in powers of two)... */
                if (p.capped)
                        CHECK(p.bytes >= in.kernel_memory - 4 * MIB);
                else
                        CHECK(p.bytes >= last);
                last = p.bytes;
                if (cpus == 256) {
                        /* ...and the budget still holds a busy host's interval */
                        CHECK(p.capped);
                        CHECK(p.demand_bytes > 2 * in.kernel_memory);
                        CHECK(p.keys >= 40000);
                        CHECK(p.stacks >= 80000);
                        CHECK(p.bytes >= in.kernel_memory - 2 * MIB);
                }
        }
}

static void test_small_budget_and_overrides(void) {
        struct mapsize_input in = defaults(64);
        struct mapsize_plan p;

        in.kernel_memory = 1 * MIB;
        mapsize_plan(&in, &p);
        CHECK(p.capped);
        CHECK(p.bytes <= 1 * MIB);
        CHECK(p.keys >= 64);

        /* explicit sizes are taken as they are, also over the budget */
        in = defaults(2);
        in.max_keys = 64;
        in.max_stacks = 64;
        mapsize_plan(&in, &p);
        CHECK_INT_EQ(p.keys, 64);
        CHECK_INT_EQ(p.stacks, 64);
        CHECK(!p.capped);
        in.max_stacks = 3;
        mapsize_plan(&in, &p);
        CHECK_INT_EQ(p.stacks, 3);
        for (unsigned c = 0; c < PROFD_CLASS__MAX; c++)
                CHECK_INT_EQ(p.nodes[c], 1);
        in = defaults(2);
        in.max_keys = 1 << 20;
        in.kernel_memory = 8 * MIB;
        mapsize_plan(&in, &p);
        CHECK_INT_EQ(p.keys, 1 << 20);
        CHECK(p.bytes > in.kernel_memory);
}

/* The off-CPU log (blocklog.h) is sized like the sampler's, from
 * timeline_offcpu_rate, and counted in the plan's bytes, within the
 * budget like the rest. */
static void test_offcpu_log_in_the_plan(void) {
        struct mapsize_input in = defaults(2);
        struct mapsize_plan without, with;

        mapsize_plan(&in, &without);
        CHECK_INT_EQ(without.block_slots, 0);
        in.offcpu_rate = 200;
        mapsize_plan(&in, &with);
        /* 200 blocks x 10 s x 1.5, slack and the head */
        CHECK_INT_EQ(with.block_slots, 3000 + 16 + 1);
        CHECK_INT_EQ(with.keys, without.keys);
        /* 64 bytes a slot, 2 CPUs, 2 generations, and the array's own */
        CHECK_INT_EQ(with.bytes - without.bytes, 2 * 2 * 3017 * 64 + 320);
        /* at most the counts map's keys per CPU */
        in.offcpu_rate = 100000;
        mapsize_plan(&in, &with);
        CHECK_INT_EQ(with.block_slots, with.keys / 2 + 1);
        for (unsigned cpus = 1; cpus <= 256; cpus *= 2) {
                in = defaults(cpus);
                in.offcpu_rate = 200;
                mapsize_plan(&in, &with);
                CHECK(with.bytes <= in.kernel_memory);
                CHECK(with.block_slots > 1);
        }
        in = defaults(64);
        in.offcpu_rate = 200;
        in.kernel_memory = 1 * MIB;
        mapsize_plan(&in, &with);
        CHECK(with.bytes <= 1 * MIB);
}

/* node as the kernel map holds it: head then frames */
static struct stack_node *node(uint64_t parent, uint32_t n, uint8_t end, uint64_t first_ip, size_t value_size) {
        _cleanup_free_ char *v = calloc(1, value_size);
        struct profd_node_head h = { .parent = parent, .n = n, .end = end };

        CHECK(v);
        memcpy(v, &h, sizeof(h));
        for (uint32_t i = 0; i < n && sizeof(h) + (i + 1) * 8 <= value_size; i++) {
                uint64_t ip = first_ip + i;
                memcpy(v + sizeof(h) + i * 8, &ip, 8);
        }
        return stack_node_from_value(v, value_size);
}

static void nodes_free(hashmap *m) {
        const void *k;
        void *v;
        size_t i = 0;

        while (hashmap_iterate(m, &i, &k, &v))
                free(v);
        hashmap_free(m);
}

static void test_chain_assembled_innermost_first(void) {
        hashmap *m = hashmap_new_u64();
        struct stack_trace *t;

        /* a 70-frame stack: 32 outermost (ips 1000..), 32 more (2000..),
         * and 6 innermost (3000..) whose walk ended at depth */
        CHECK(m);
        CHECK_INT_EQ(hashmap_put(m, UINT64_TO_KEY(0x8000000000000001ULL),
                                 node(PROFD_NODE_ROOT, 32, 0, 1000, sizeof(struct profd_node32))), 0);
        CHECK_INT_EQ(hashmap_put(m, UINT64_TO_KEY(0x8000000000000002ULL),
                                 node(0x8000000000000001ULL, 32, 0, 2000, sizeof(struct profd_node32))), 0);
        CHECK_INT_EQ(hashmap_put(m, UINT64_TO_KEY(7), node(0x8000000000000002ULL, 6, PROFD_END_DEPTH, 3000,
                                                          sizeof(struct profd_node8))), 0);
        CHECK_INT_EQ(stack_nodes_assemble(m, 7, &t), 0);
        CHECK_INT_EQ(t->n, 70);
        CHECK_INT_EQ(t->end, PROFD_END_DEPTH);
        CHECK_INT_EQ(t->ips[0], 3000);
        CHECK_INT_EQ(t->ips[5], 3005);
        CHECK_INT_EQ(t->ips[6], 2000);
        CHECK_INT_EQ(t->ips[37], 2031);
        CHECK_INT_EQ(t->ips[38], 1000);
        CHECK_INT_EQ(t->ips[69], 1031);
        free(t);
        /* an outer node is a stack of its own too (shared prefix) */
        CHECK_INT_EQ(stack_nodes_assemble(m, 0x8000000000000002ULL, &t), 0);
        CHECK_INT_EQ(t->n, 64);
        CHECK_INT_EQ(t->ips[0], 2000);
        free(t);
        nodes_free(m);
}

static void test_broken_chains_refused(void) {
        hashmap *m = hashmap_new_u64();
        struct stack_trace *t = NULL;

        CHECK(m);
        /* parent missing */
        CHECK_INT_EQ(hashmap_put(m, UINT64_TO_KEY(1), node(99, 4, 0, 10, sizeof(struct profd_node8))), 0);
        CHECK_INT_EQ(stack_nodes_assemble(m, 1, &t), -ENOENT);
        CHECK_INT_EQ(stack_nodes_assemble(m, 42, &t), -ENOENT);
        /* a cycle ends at the frame limit */
        CHECK_INT_EQ(hashmap_put(m, UINT64_TO_KEY(2), node(3, 32, 0, 10, sizeof(struct profd_node32))), 0);
        CHECK_INT_EQ(hashmap_put(m, UINT64_TO_KEY(3), node(2, 32, 0, 10, sizeof(struct profd_node32))), 0);
        CHECK_INT_EQ(stack_nodes_assemble(m, 2, &t), -ELOOP);
        /* a self-loop of a single frame too */
        CHECK_INT_EQ(hashmap_put(m, UINT64_TO_KEY(4), node(4, 1, 0, 10, sizeof(struct profd_node8))), 0);
        CHECK_INT_EQ(stack_nodes_assemble(m, 4, &t), -ELOOP);
        CHECK(!t);
        nodes_free(m);

        /* a count the class cannot hold, or none, is no node */
        errno = 0;
        CHECK(!node(PROFD_NODE_ROOT, 9, 0, 1, sizeof(struct profd_node8)));
        CHECK_INT_EQ(errno, EINVAL);
        CHECK(!node(PROFD_NODE_ROOT, 0, 0, 1, sizeof(struct profd_node8)));
}

static void test_leaf_put_back_in_front(void) {
        hashmap *m = hashmap_new_u64();
        struct stack_trace *callers, *t, *u;
        uint64_t ids[4];

        /* the sampler's callers (3 frames, a walk ended by frame pointers)
         * and the leaf its key kept */
        CHECK(m);
        CHECK_INT_EQ(hashmap_put(m, UINT64_TO_KEY(5), node(PROFD_NODE_ROOT, 3, PROFD_END_FP_END, 100,
                                                          sizeof(struct profd_node8))), 0);
        CHECK_INT_EQ(stack_nodes_assemble(m, 5, &callers), 0);
        t = stack_trace_with_leaf(callers, 0x401234);
        CHECK(t);
        CHECK_INT_EQ(t->n, 4);
        CHECK_INT_EQ(t->end, PROFD_END_FP_END);
        CHECK_INT_EQ(t->ips[0], 0x401234);
        CHECK_INT_EQ(t->ips[1], 100);
        CHECK_INT_EQ(t->ips[3], 102);
        CHECK(!stack_trace_equal(t, callers));
        u = stack_trace_with_leaf(callers, 0x401234);
        CHECK(u && stack_trace_equal(t, u));
        free(u);
        u = stack_trace_with_leaf(callers, 0x401235);
        CHECK(u && !stack_trace_equal(t, u));
        free(u);
        /* the same comparison without building the stack */
        CHECK(stack_trace_is_leaf_and(t, 0x401234, callers));
        CHECK(!stack_trace_is_leaf_and(t, 0x401235, callers));
        CHECK(!stack_trace_is_leaf_and(callers, 0x401234, callers));
        callers->end = PROFD_END_COMPLETE;
        CHECK(!stack_trace_is_leaf_and(t, 0x401234, callers));
        callers->end = PROFD_END_FP_END;
        callers->ips[2] = 7;
        CHECK(!stack_trace_is_leaf_and(t, 0x401234, callers));
        callers->ips[2] = 102;
        CHECK(stack_trace_is_leaf_and(t, 0x401234, callers));
        /* no stack the sampler stores has more frames than the walk */
        callers->n = PROFD_MAX_FRAMES;
        errno = 0;
        CHECK(!stack_trace_with_leaf(callers, 1));
        CHECK_INT_EQ(errno, ELOOP);
        free(callers);
        free(t);
        nodes_free(m);

        /* the ids: in class 3, which no node has, never a sentinel, and
         * different for another leaf, other callers, another attempt */
        ids[0] = stack_leaf_id(5, 0x401234, 0);
        ids[1] = stack_leaf_id(5, 0x401235, 0);
        ids[2] = stack_leaf_id(6, 0x401234, 0);
        ids[3] = stack_leaf_id(5, 0x401234, 1);
        CHECK_INT_EQ(stack_leaf_id(5, 0x401234, 0), ids[0]);
        for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                CHECK_INT_EQ(PROFD_ID_CLASS(ids[i]), 3);
                CHECK(ids[i] != PROFD_STACK_NONE && ids[i] != PROFD_STACK_LOST);
                for (size_t j = 0; j < i; j++)
                        CHECK(ids[i] != ids[j]);
        }
        for (uint64_t leaf = 1; leaf < 100000; leaf++) {
                uint64_t id = stack_leaf_id(leaf * 0x1000, leaf, leaf & 3);

                CHECK(id != PROFD_STACK_NONE && id != PROFD_STACK_LOST && PROFD_ID_CLASS(id) == 3);
        }
}

static void test_leaf_stacks_get_ids_of_their_own(void) {
        hashmap *stacks = hashmap_new_u64();
        struct stack_trace *callers = malloc(sizeof(*callers) + 2 * sizeof(uint64_t)), *other;
        uint64_t sid = 0, sid2 = 0;
        void *v;

        CHECK(stacks && callers);
        callers->n = 2;
        callers->end = PROFD_END_COMPLETE;
        callers->ips[0] = 20;
        callers->ips[1] = 30;
        /* a different stack took the first id already: the next one */
        other = stack_trace_with_leaf(callers, 99);
        CHECK(other);
        CHECK_INT_EQ(hashmap_put(stacks, UINT64_TO_KEY(stack_leaf_id(5, 10, 0)), other), 0);
        CHECK_INT_EQ(stacks_put_with_leaf(stacks, 5, callers, 10, &sid), 0);
        CHECK_INT_EQ(sid, stack_leaf_id(5, 10, 1));
        CHECK_INT_EQ(hashmap_get(stacks, UINT64_TO_KEY(sid), &v), 0);
        CHECK_INT_EQ(((struct stack_trace *) v)->n, 3);
        CHECK_INT_EQ(((struct stack_trace *) v)->ips[0], 10);
        CHECK_INT_EQ(((struct stack_trace *) v)->ips[2], 30);
        /* the same stack again: the same id, nothing added */
        CHECK_INT_EQ(stacks_put_with_leaf(stacks, 5, callers, 10, &sid2), 0);
        CHECK_INT_EQ(sid2, sid);
        CHECK_INT_EQ(hashmap_size(stacks), 2);
        /* every id taken by other stacks: refused, nothing added */
        for (unsigned a = 0; a < STACK_LEAF_ATTEMPTS; a++) {
                struct stack_trace *t = stack_trace_with_leaf(callers, 1000 + a);

                CHECK(t);
                if (hashmap_put(stacks, UINT64_TO_KEY(stack_leaf_id(6, 11, a)), t) < 0)
                        free(t);
        }
        sid = 0;
        CHECK_INT_EQ(stacks_put_with_leaf(stacks, 6, callers, 11, &sid), -EEXIST);
        CHECK_INT_EQ(sid, 0);
        /* callers as deep as a walk goes: no room for the leaf */
        CHECK_INT_EQ(hashmap_size(stacks), 2 + STACK_LEAF_ATTEMPTS);
        callers->n = PROFD_MAX_FRAMES;
        CHECK_INT_EQ(stacks_put_with_leaf(stacks, 7, callers, 12, &sid), -ELOOP);
        CHECK_INT_EQ(hashmap_size(stacks), 2 + STACK_LEAF_ATTEMPTS);
        free(callers);
        nodes_free(stacks);
}

static void test_key_leaf_fields(void) {
        struct profd_sample_key k = { .kind = PROFD_KIND_CPU };

        /* 48 bits of leaf in the bytes a cpu key does not use otherwise */
        k.leaf_lo = 0x89abcdefU;
        k.leaf_hi = 0x7fff;
        CHECK_INT_EQ(PROFD_KEY_LEAF(&k), 0x7fff89abcdefULL);
        CHECK(PROFD_KEY_LEAF(&k) < PROFD_KEY_LEAF_MAX);
        CHECK_INT_EQ(k.peer_tid, 0x89abcdefU); /* the same bytes: a wakeup key's */
        CHECK_INT_EQ(sizeof(k), 48);
}

/* The fill check (the daemon drains early at 3/4): each class of nodes
 * and the keys on their own, at and just below the threshold, and maps
 * not in use (no entries) never full. */
static void test_fill_high(void) {
        struct mapsize_plan p;
        struct mapsize_input in = defaults(2);
        struct mapsize_fill f = {};

        mapsize_plan(&in, &p);
        for (unsigned c = 0; c < PROFD_CLASS__MAX; c++)
                f.nodes_max[c] = p.nodes[c];
        f.keys_max = p.keys;
        CHECK(!mapsize_fill_high(&f));
        for (unsigned c = 0; c < PROFD_CLASS__MAX; c++) {
                /* the others all but full does not count for this one */
                for (unsigned o = 0; o < PROFD_CLASS__MAX; o++)
                        f.nodes[o] = o == c ? 0 : (f.nodes_max[o] * MAPSIZE_FILL_HIGH_PCT + 99) / 100 - 1;
                f.keys = (f.keys_max * MAPSIZE_FILL_HIGH_PCT + 99) / 100 - 1;
                CHECK(!mapsize_fill_high(&f));
                f.nodes[c] = (f.nodes_max[c] * MAPSIZE_FILL_HIGH_PCT + 99) / 100;
                CHECK(mapsize_fill_high(&f));
                f.nodes[c]--;
                CHECK(!mapsize_fill_high(&f));
                f.nodes[c] = 0;
        }
        f.keys = (f.keys_max * MAPSIZE_FILL_HIGH_PCT + 99) / 100;
        CHECK(mapsize_fill_high(&f));
        f.keys = 0;
        /* 3 of 4 entries, exactly the threshold */
        f = (struct mapsize_fill) { .keys = 3, .keys_max = 4 };
        CHECK(mapsize_fill_high(&f));
        f.keys = 2;
        CHECK(!mapsize_fill_high(&f));
        /* no map: never full, whatever was counted */
        f = (struct mapsize_fill) { .nodes = { 7, 7, 7 }, .keys = 7 };
        CHECK(!mapsize_fill_high(&f));
}

int main(void) {
        test_hash_bytes_as_the_kernel_reports();
        test_two_cpus_fit_in_twelve_mib();
        test_bounded_whatever_the_cpus();
        test_small_budget_and_overrides();
        test_offcpu_log_in_the_plan();
        test_chain_assembled_innermost_first();
        test_broken_chains_refused();
        test_leaf_put_back_in_front();
        test_leaf_stacks_get_ids_of_their_own();
        test_key_leaf_fields();
        test_fill_high();
        TESTS_DONE();
}
