/* A process's JIT perf map: entries kept sorted by start, never overlapping,
 * the latest word on each range. */
#include "jitmap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bsearch.h"
#include "macro.h"
#include "perfmap.h"

struct jit_entry {
        uint64_t start, end;  /* [start, end) */
        uint64_t seq;         /* line number among valid lines: later lines win */
        char *name;
};

struct jitmap {
        struct jit_entry *entries; /* sorted by start, disjoint, between feeds */
        size_t n, cap, max;
        uint64_t next_seq;
        bool skipping;        /* in the middle of an overlong line */
        uint64_t epoch;
        struct jitmap_stats stats;
};

int jitmap_new(size_t max_entries, jitmap **ret) {
        jitmap *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        m->max = max_entries ? max_entries : JITMAP_MAX_ENTRIES;
        *ret = m;
        return 0;
}

static void entries_free(struct jit_entry *e, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(e[i].name);
}

jitmap *jitmap_free(jitmap *m) {
        if (m) {
                entries_free(m->entries, m->n);
                free(m->entries);
                free(m);
        }
        return NULL;
}

void jitmap_reset(jitmap *m) {
        entries_free(m->entries, m->n);
        m->n = 0;
        m->skipping = false;
        m->epoch++;
}

static int entry_cmp_start(const void *a, const void *b) {
        const struct jit_entry *x = a, *y = b;

        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int entry_cmp_seq(const void *a, const void *b) {
        const struct jit_entry *x = a, *y = b;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A binary heap of entry indices ordered by seq: the greatest on top when
 * max, else the least. */
struct seq_heap {
        size_t *idx, n;
        const struct jit_entry *e;
        bool max;
};

static bool heap_above(const struct seq_heap *h, size_t a, size_t b) {
        return h->max ? h->e[h->idx[a]].seq > h->e[h->idx[b]].seq : h->e[h->idx[a]].seq < h->e[h->idx[b]].seq;
}

static void heap_swap(struct seq_heap *h, size_t a, size_t b) {
        size_t t = h->idx[a];
        h->idx[a] = h->idx[b];
        h->idx[b] = t;
}

static void heap_push(struct seq_heap *h, size_t i) {
        size_t k = h->n++;

        h->idx[k] = i;
        while (k > 0 && heap_above(h, k, (k - 1) / 2)) {
                heap_swap(h, k, (k - 1) / 2);
                k = (k - 1) / 2;
        }
}

static void heap_pop(struct seq_heap *h) {
        size_t k = 0;

        h->idx[0] = h->idx[--h->n];
        for (;;) {
                size_t l = 2 * k + 1, r = l + 1, top = k;
                if (l < h->n && heap_above(h, l, top))
                        top = l;
                if (r < h->n && heap_above(h, r, top))
                        top = r;
                if (top == k)
                        return;
                heap_swap(h, k, top);
                k = top;
        }
}

static const struct jit_entry *heap_top(const struct seq_heap *h) {
        return h->n ? &h->e[h->idx[0]] : NULL;
}

/* Marks dead every entry that a later (greater seq) entry overlaps, in one
 * sweep over the entries sorted by start. At entry i, the entries before it
 * that are still "active" (end > start of i) are exactly those overlapping
 * it from the left. The max-heap answers "is one of them later than i?"
 * (then i dies); the min-heap pops the active ones earlier than i (they
 * die). An entry that is no longer active never will be again (starts only
 * grow), so both heaps may drop it lazily when it reaches the top. */
static void mark_overlapped(const struct jit_entry *e, size_t n, bool *dead, size_t *scratch) {
        struct seq_heap later = { .idx = scratch, .e = e, .max = true };
        struct seq_heap earlier = { .idx = scratch + n, .e = e, .max = false };
        const struct jit_entry *t;

        for (size_t i = 0; i < n; i++) {
                while ((t = heap_top(&later)) && t->end <= e[i].start)
                        heap_pop(&later);
                if (t && t->seq > e[i].seq)
                        dead[i] = true;
                while ((t = heap_top(&earlier)) && (t->end <= e[i].start || t->seq < e[i].seq)) {
                        if (t->end > e[i].start)
                                dead[t - e] = true;
                        heap_pop(&earlier);
                }
                heap_push(&later, i);
                heap_push(&earlier, i);
        }
}

/* Makes entries [0, n) (old ones sorted and disjoint, then the new ones
 * from first_new_seq on) sorted and disjoint again, within max. Returns 0,
 * or -ENOMEM before anything changed. */
static int settle(jitmap *m, uint64_t first_new_seq) {
        _cleanup_free_ bool *dead = calloc(m->n, sizeof(*dead));
        _cleanup_free_ size_t *scratch = calloc(2 * m->n, sizeof(*scratch));
        bool replaced = false;
        size_t k = 0;

        if (!dead || !scratch)
                return -ENOMEM;
        qsort(m->entries, m->n, sizeof(*m->entries), entry_cmp_start);
        mark_overlapped(m->entries, m->n, dead, scratch);
        for (size_t i = 0; i < m->n; i++) {
                if (!dead[i]) {
                        m->entries[k++] = m->entries[i];
                        continue;
                }
                if (m->entries[i].seq < first_new_seq)
                        replaced = true;
                m->stats.replaced++;
                free(m->entries[i].name);
        }
        m->n = k;
        if (replaced)
                m->epoch++;
        if (m->n > m->max) {
                /* the oldest stay: new code keeps its name once it has one */
                qsort(m->entries, m->n, sizeof(*m->entries), entry_cmp_seq);
                entries_free(m->entries + m->max, m->n - m->max);
                m->stats.dropped += m->n - m->max;
                m->n = m->max;
                qsort(m->entries, m->n, sizeof(*m->entries), entry_cmp_start);
        }
        return 0;
}

/* Drops the entries added since old_n, as if never fed. */
static void unfeed(jitmap *m, size_t old_n, uint64_t old_seq, bool old_skipping,
                   const struct jitmap_stats *old_stats) {
        entries_free(m->entries + old_n, m->n - old_n);
        m->n = old_n;
        m->next_seq = old_seq;
        m->skipping = old_skipping;
        m->stats = *old_stats;
}

static int add_line(jitmap *m, const char *line, size_t len) {
        char buf[JITMAP_MAX_LINE + 1];
        struct perfmap_entry pe;
        int r;

        m->stats.lines++;
        memcpy(buf, line, len);
        buf[len] = '\0';
        r = perfmap_parse_line(buf, &pe);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                m->stats.invalid++;
                return 0;
        }
        if (m->n == m->cap) {
                size_t cap = m->cap ? m->cap * 2 : 256;
                struct jit_entry *e = realloc(m->entries, cap * sizeof(*e));
                if (!e) {
                        perfmap_entry_done(&pe);
                        return -ENOMEM;
                }
                m->entries = e;
                m->cap = cap;
        }
        m->entries[m->n++] = (struct jit_entry) {
                .start = pe.start,
                .end = pe.start + pe.size, /* perfmap_parse_line refuses ranges that wrap */
                .seq = m->next_seq++,
                .name = TAKE_PTR(pe.name),
        };
        return 0;
}

int jitmap_feed(jitmap *m, const char *text, size_t len, size_t *ret_consumed) {
        size_t old_n = m->n, pos = 0;
        uint64_t old_seq = m->next_seq;
        bool old_skipping = m->skipping;
        struct jitmap_stats old_stats = m->stats;
        int r;

        *ret_consumed = 0;
        while (pos < len) {
                const char *nl = memchr(text + pos, '\n', len - pos);
                size_t line_len = nl ? (size_t) (nl - (text + pos)) : len - pos;

                if (m->skipping) {
                        /* the rest of an overlong line */
                        pos = nl ? pos + line_len + 1 : len;
                        m->skipping = !nl;
                        continue;
                }
                if (line_len > JITMAP_MAX_LINE) {
                        m->stats.lines++;
                        m->stats.invalid++;
                        pos = nl ? pos + line_len + 1 : len;
                        m->skipping = !nl;
                        continue;
                }
                if (!nl)
                        break; /* still being written */
                r = add_line(m, text + pos, line_len);
                if (r < 0) {
                        unfeed(m, old_n, old_seq, old_skipping, &old_stats);
                        return r;
                }
                pos += line_len + 1;
        }
        if (m->n > old_n) {
                r = settle(m, old_seq);
                if (r < 0) {
                        unfeed(m, old_n, old_seq, old_skipping, &old_stats);
                        return r;
                }
        }
        *ret_consumed = pos;
        return 0;
}

const char *jitmap_lookup(const jitmap *m, uint64_t addr) {
        /* the last entry starting at or before addr is the only candidate */
        size_t lo = UPPER_BOUND_BY(m->entries, m->n, start, addr);

        if (lo == 0 || addr >= m->entries[lo - 1].end)
                return NULL;
        return m->entries[lo - 1].name;
}

size_t jitmap_size(const jitmap *m) {
        return m->n;
}

uint64_t jitmap_epoch(const jitmap *m) {
        return m->epoch;
}

void jitmap_get_stats(const jitmap *m, struct jitmap_stats *ret) {
        *ret = m->stats;
}
