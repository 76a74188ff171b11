/* The caches of the walk and of the stack store, per CPU: what a lookup
 * found, kept so that the next sample finds it in a few lines it has
 * touched lately instead of the maps' cold ones. Each holds facts that
 * cannot change under its key, so a hit is exactly what the lookup would
 * find:
 * - the node cache (every program, per scratch slot): a node stored in a
 *   generation keeps its id until the drain empties that generation's maps;
 * - the row cache, the leaf cache and the walk memo (x86-64; one of each
 *   per walker, enum walk_cache): the rule of an address under a process's
 *   unwind entry version, which the daemon never reuses for other mappings
 *   or tables.
 * Their layouts are in state.bpf.h; their users are frames_store
 * (sample.bpf.h) and the walk (unwind.bpf.h). */
#pragma once

#include "maps.bpf.h"

/* The node cache: the nodes frames_store stored lately, per CPU and
 * scratch slot (a program interrupted in the middle of storing a stack
 * must find its entries intact), in the slot's walk window (struct
 * walk_window): the BPF stack has no room for them. An entry is a node
 * stored under id in the generation gen (valid), at the index its hash
 * gives. A node equal to it in every field hashed (parent, n, end,
 * frames) has that id, and the node is in the map still (nothing deletes
 * nodes during a generation): no lookup and no insert. The sampler's
 * stacks without their leaf (PROFD_KEY_LEAF) repeat sample after sample
 * in a few shapes (stress-ng's callers: five); one memo of the last node
 * held only the shape of the sample before, and a miss cost a lookup in
 * the frames map, whose bucket and element are on pages of their own.
 * Direct-mapped: an entry is replaced by the next node of its index
 * (NODE_CACHE_ENTRIES in state.bpf.h). */

/* Does the cache entry e hold the node nd of the generation gen? Both in
 * map memory: the verifier follows the comparison once, not once per
 * count of frames it could know from the caller. */
static __always_inline bool node_cache_hit(const struct node_cache_entry *e, __u32 gen,
                                           const struct profd_node32 *nd) {
        if (!e->valid || e->gen != gen || e->nd.h.parent != nd->h.parent || e->nd.h.n != nd->h.n ||
            e->nd.h.end != nd->h.end)
                return false;
        for (__u32 i = 0; i < PROFD_NODE_CHUNK; i++) {
                if (i >= nd->h.n)
                        break;
                if (e->nd.ips[i] != nd->ips[i])
                        return false;
        }
        return true;
}

/* Remembers in the entry e that the node nd is stored under id in the
 * generation gen. */
static __always_inline void node_cache_put(struct node_cache_entry *e, __u32 gen, const struct profd_node32 *nd,
                                           __u64 id) {
        e->valid = 0; /* e->nd changes below */
        e->nd.h = nd->h;
        for (__u32 i = 0; i < PROFD_NODE_CHUNK; i++) {
                if (i >= nd->h.n)
                        break;
                e->nd.ips[i] = nd->ips[i];
        }
        e->id = id;
        e->gen = gen;
        e->valid = 1;
}

#if defined(__TARGET_ARCH_x86)

/* The row cache: what finding the mapping and the row of an ip gave (a
 * row, or "frame pointer": no table, or no CFI there), per CPU, under the
 * process's unwind entry version. An entry's mappings and tables never
 * change (the daemon writes a new entry, a new version, to change them),
 * so a hit is exactly what the lookup would find. It pays because the
 * same return addresses come back sample after sample, and at 49 Hz each
 * lookup in the tables is a few cache and TLB misses (vmalloc'd maps, 4
 * KiB pages) while the cache is one line of a few pages. The off-CPU
 * walks (a block's stack at its switch-in, its waker's) have theirs: a
 * thread blocks again and again in the same few places, its waker wakes
 * it from the same few. Each walker has its own element of the map (enum
 * walk_cache, s->cache): a program that can interrupt another (the sampler
 * from the timer interrupt, a wake-up in an interrupt within
 * profd_switch_done) must not find an entry half written. Two ways per set, the
 * newer first: the same return address in two processes (the forked
 * workers of one program, taking turns on a CPU) keeps both. 128 sets of
 * one cache line: the distinct return addresses of a CPU's busy threads.
 *
 * The leaf cache: the frame the sample interrupted (an exact ip) is at a
 * different address almost every sample, so the row cache, keyed by
 * address, mostly misses it; but mostly in the same row as the last time
 * (a loop). So for exact ips the sampler also remembers the range of
 * addresses [lo, hi) that the row found covers (from the row's pc to the
 * next row's, cut at the 64 KiB page of the table's lookup, within the
 * mapping), per process version: every ip in it
 * finds the same mapping and the same row, so a hit is exactly what the
 * lookup would find, and spares the lookup's code and its lines of
 * unwind_maps and unwind_rows. Two ways per set (the newer first), sets
 * by version: the processes taking turns on a CPU.
 *
 * The walk memo: a walker's last walk of a thread (a slot per tid hash,
 * per CPU), frame by frame: the row cache's tag and rule of each frame, in
 * walk order. The next walk of that thread looks for frame i where the
 * last one's frame i was, or one or two further (a leaf with one callee
 * less), then goes on from where it found it. It holds the same facts as
 * the row cache (a rule is a function of the version and the tag alone, and
 * a slot is only read under the version it was written in), so a hit is
 * exactly what the lookup would find; but a walk finds its rules in a few
 * consecutive lines of one page, where the row cache, by address, cost one
 * cold line per frame: ~170 ns each, at 10-15 frames per sample. The row
 * cache stays behind it for the frames the memo misses. A slot also keeps
 * how far up the stack the walk read (read_hi), for the next walk's
 * span_read. */

static __always_inline struct row_cache_set *row_cache_set(struct ustack_state *s, __u64 tag) {
        __u32 k = s->cache;
        struct row_cache *c = bpf_map_lookup_elem(&row_cache, &k);
        __u64 h = tag * 0x9e3779b97f4a7c15ULL;

        if (!c)
                return NULL;
        return &c->set[(h >> 57) & (ROW_CACHE_SETS - 1)];
}

static __always_inline struct leaf_cache_set *leaf_cache_set(struct ustack_state *s) {
        __u32 k = s->cache;
        struct row_cache *c = bpf_map_lookup_elem(&row_cache, &k);
        __u64 h = s->version * 0x9e3779b97f4a7c15ULL;

        if (!c)
                return NULL;
        return &c->leaf[(h >> 60) & (LEAF_CACHE_SETS - 1)];
}

static __always_inline bool leaf_cache_hit(struct leaf_cache_entry *e, __u64 ip, __u64 version,
                                           struct profd_unwind_row *ret) {
        if (e->version != version || ip < e->lo || ip >= e->hi)
                return false;
        ret->cfa_off = e->cfa_off;
        ret->kind = e->kind;
        ret->rbp_off = e->rbp_off;
        return true;
}

static __always_inline bool row_cache_hit(struct row_cache_entry *e, __u64 tag, __u64 version,
                                          struct profd_unwind_row *ret) {
        if (e->tag != tag || e->version != version)
                return false;
        ret->cfa_off = e->cfa_off;
        ret->kind = e->kind;
        ret->rbp_off = e->rbp_off;
        return true;
}

/* After a lookup of an exact ip (the leaf): every ip in [lo, hi) has the
 * rule ret under s->version. */
static __always_inline void leaf_cache_put(struct ustack_state *s, __u64 lo, __u64 hi,
                                           const struct profd_unwind_row *ret) {
        struct leaf_cache_set *l = leaf_cache_set(s);

        if (l) {
                l->way[1] = l->way[0];
                l->way[0].version = s->version;
                l->way[0].lo = lo;
                l->way[0].hi = hi;
                l->way[0].cfa_off = ret->cfa_off;
                l->way[0].kind = ret->kind;
                l->way[0].rbp_off = ret->rbp_off;
        }
}

/* After a lookup: tag has the rule ret under s->version, in the set c. */
static __always_inline void row_cache_put(struct row_cache_set *c, struct ustack_state *s, __u64 tag,
                                          const struct profd_unwind_row *ret) {
        c->way[1] = c->way[0];
        c->way[0].tag = tag;
        c->way[0].version = s->version;
        c->way[0].cfa_off = ret->cfa_off;
        c->way[0].kind = ret->kind;
        c->way[0].rbp_off = ret->rbp_off;
}

static __always_inline struct walk_memo_slot *walk_memo_slot(struct ustack_state *s) {
        __u32 k = s->cache;
        struct row_cache *c = bpf_map_lookup_elem(&row_cache, &k);

        if (!c)
                return NULL;
        return &c->memo.slot[VERIFIER_MASK(s->memo_slot, 15)];
}

/* The memo's rule for tag, looked for at s->memo_pos and the two after. */
static __always_inline bool walk_memo_hit(struct ustack_state *s, __u64 tag, struct profd_unwind_row *ret) {
        struct walk_memo_slot *m = walk_memo_slot(s);
        __u32 n;

        if (!m)
                return false;
        n = m->n;
        for (__u32 d = 0; d < 3; d++) {
                __u32 j = s->memo_pos + d;
                struct walk_memo_frame *e;

                if (j >= n || j >= WALK_MEMO_DEPTH)
                        break;
                e = &m->f[VERIFIER_MASK(j, 31)];
                if (e->tag == tag) {
                        ret->cfa_off = e->cfa_off;
                        ret->kind = e->kind;
                        ret->rbp_off = e->rbp_off;
                        s->memo_pos = j + 1;
                        return true;
                }
        }
        return false;
}

/* Before a walk with caches: the thread's memo slot (NULL if the lookup
 * failed), and whether it holds a walk of this version. */
static __always_inline struct walk_memo_slot *walk_memo_begin(struct ustack_state *s, __u32 pid) {
        struct walk_memo_slot *m;

        s->memo_slot = (pid * 0x9e3779b1U) >> 28;
        m = walk_memo_slot(s);
        s->memo_ok = m && m->version == s->version;
        s->memo_pos = 0;
        s->memo_n = 0;
        s->memo_dirty = 0;
        return m;
}

/* Frame i of a walk with caches has the rule row: noted for the memo. */
static __always_inline void walk_memo_add(struct ustack_state *s, struct walk_window *w, __u32 i, __u64 tag,
                                          const struct profd_unwind_row *row) {
        if (s->version && i < WALK_MEMO_DEPTH) {
                struct walk_memo_frame *e = &w->memo_cur[VERIFIER_MASK(i, 31)];

                e->tag = tag;
                e->cfa_off = row->cfa_off;
                e->kind = row->kind;
                e->rbp_off = row->rbp_off;
                s->memo_n = i + 1;
        }
}

/* After a walk with caches: the memo slot becomes this walk, unless every
 * frame was found in it. */
static __always_inline void walk_memo_save(struct ustack_state *s, struct walk_window *w) {
        struct walk_memo_slot *m = walk_memo_slot(s);
        __u32 n = s->memo_n;

        if (!m)
                return;
        if (m->read_hi != s->read_hi)
                m->read_hi = s->read_hi;
        if (!s->memo_dirty && n == m->n)
                return;
#pragma clang loop unroll(disable)
        for (__u32 j = 0; j < WALK_MEMO_DEPTH; j++) {
                if (j >= n)
                        break;
                m->f[j] = w->memo_cur[j];
        }
        m->n = n;
        m->version = s->version;
}

#endif
