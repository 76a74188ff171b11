/* Retention and downsampling of the store: drains older than retention_raw
 * are merged into 1-minute buckets, those older than retention_1m into
 * 10-minute buckets, everything older than retention is deleted, and the
 * oldest data goes first when the file would outgrow max_bytes. Rows no
 * sample needs any more (stacks, processes, locations, functions, mappings)
 * are removed, and the space is given back to the file system (incremental
 * vacuum). Runs in the writer thread, on a connection of its own, in small
 * steps between drains. See docs/schema.md. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

#define RETENTION_1M_NS (60ULL * 1000000000ULL)
#define RETENTION_10M_NS (600ULL * 1000000000ULL)

typedef struct retention retention;

struct retention_settings {
        uint64_t raw_ns;    /* drains as drained are kept this long */
        uint64_t m1_ns;     /* 1-minute buckets until this age */
        uint64_t all_ns;    /* 10-minute buckets until this age; then deleted */
        uint64_t max_bytes; /* store file; 0: no maximum */
        uint64_t merge_rows_max; /* sample rows merged per step; 0: the default (tests set it) */
        uint64_t timeline_ns;        /* timeline blocks are kept this long; 0: as long as their drains */
        uint64_t timeline_max_bytes; /* their blobs' bytes in all; 0: no maximum */
        bool no_groups;              /* merges keep every process by pid (a benchmark's baseline) */
        /* merges fold the frames below nodes holding less than this many
         * millionths of their step's total (merge-fold.h); 0: none */
        uint32_t fold_ppm;
        /* a bucket naming more (stack, kind) is weighed per step; 0: the
         * default (tests set it) */
        uint64_t fold_bucket_stacks_max;
};

/* What retention did over the store's life (kept in the store). */
struct retention_totals {
        uint64_t merged_drains;    /* drains rows merged into coarser buckets */
        uint64_t deleted_drains;   /* drains rows deleted for their age */
        uint64_t deleted_for_size; /* drains rows deleted to stay under max_bytes */
        uint64_t deleted_stacks, deleted_processes, deleted_locations;
        uint64_t vacuumed_bytes;   /* returned to the file system */
        uint64_t spanned_drains;   /* raw drains packed into blocks that span drains */
        uint64_t damaged_blocks;   /* blocks of samples found unreadable and dropped, their entries lost */
        uint64_t deleted_timeline; /* timeline blocks deleted (their age, their size, or their drains') */
        uint64_t grouped_processes; /* short-lived processes merged into their group (process-groups.h) */
        uint64_t merged_for_size;   /* of merged_drains, merged before their age to stay under max_bytes */
        uint64_t folded_stacks;     /* (stack, kind) whose entries merges wrote under a folded stack */
        uint64_t fold_buckets_big;  /* merge steps that weighed their own entries, their bucket too big */
};

/* Opens a connection of its own to the store (already created and migrated
 * by store_open). Switches an older store to incremental auto-vacuum first,
 * which rewrites the file once (VACUUM). Returns 0 or a negative errno,
 * logged. */
int retention_open(const char *path, const struct retention_settings *settings, retention **ret);
retention *retention_close(retention *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(retention *, retention_close)

void retention_configure(retention *r, const struct retention_settings *settings);

/* Does one bounded piece of the work due at now_ns (Unix-epoch ns, the
 * clock drains are stamped with), in one transaction: a batch of deletions,
 * or the merge of one bucket, or removing a batch of unreferenced rows.
 * Returns 1 when it did something (call again for more), 0 when nothing is
 * due, or a negative errno (logged; the step is rolled back). *ret_forget
 * is set when rows another connection may have cached ids of were deleted
 * (the caller then calls store_forget_ids on its own connection). */
int retention_step(retention *r, uint64_t now_ns, bool *ret_forget);

void retention_get_totals(const retention *r, struct retention_totals *ret);
/* Gives back the pages its connection caches (see store_release_memory). */
void retention_release_memory(retention *r);

/* The bucket a drain ending at end_ns belongs to at the given width: its
 * start. Pure; exposed for tests. */
static inline uint64_t retention_bucket(uint64_t end_ns, uint64_t width_ns) {
        return end_ns - end_ns % width_ns;
}
