/* The unwinder's file-table cache: one table per file (by struct
 * file_key), shared by every process mapping it, its compact table in a
 * slice of unwind_rows; unused tables kept in an LRU list until their room is
 * needed; large tables built later, from a queue. Runs on the unwinder's
 * thread only. */
#pragma once

#include "mapfile.h"
#include "procmaps.h"
#include "unwinder-private.h"

/* Where one mapping offset of the file lands: ELF address of the mapping's
 * start (bias = map_start - vaddr_at). */
struct offset_bias {
        uint64_t map_offset, vaddr_at;
};

struct ufile {
        struct file_key key;
        /* the compact table (struct profd_pack_head): n 4-byte slots from
         * the start of value off of unwind_rows, in a slice of `values`
         * 8-byte values (two slots each); n == 0: no table (frame pointers) */
        uint32_t off, n;
        uint32_t values;
        unsigned refs;             /* live processes' mappings */
        uint64_t unref_ns;         /* CLOCK_MONOTONIC when refs became 0 */
        struct dlist_node unused;  /* in the unwinder's unused list while refs == 0 */
        struct offset_bias *biases;
        size_t n_biases;
        bool retry;                /* no table for want of room (or memory): build again when next mapped */
        bool pending;              /* in the build queue: mappings of it are PROFD_MAPPING_PENDING */
        char *paths[3];            /* pending: where to open it (map_files, root/PATH, PATH) */
        uint32_t want;             /* values of unwind_rows the table needs, when it found no room */
        uint32_t resv_off, resv_n; /* values set aside for its build again (resv_n 0: none) */
        uint32_t planned;          /* values its build set aside (want, once evicted) */
        bool rules_wide;           /* more rules than TABLE_PACK_PLAN_RULES: planned for PROFD_PACK_RULES_MAX */
        uint64_t sampled_ns;       /* CLOCK_MONOTONIC when a sample last went through it (or it was built) */
        bool cold;                 /* its table was evicted for a sampled one: built again only once sampled */
        uint64_t room_due_ns;      /* rows evicted for it: built once their grace ends then (0: none) */
        uint64_t kept_hot_ns;      /* when room for it was last refused, every candidate hot (0: never) */
        bool pin;                  /* scratch of cold_room: a table of a process that maps the wanted file */
        bool mark;                 /* scratch: the processes that map a marked file are listed */
        bool rt_checked;           /* the runtimes' discovery ran on it */
        uint32_t rt_slot;          /* a runtime found in it: its unwind_runtimes slot + 1; 0: none */
};

/* A reference for a live process's mapping: takes an unused file off the
 * LRU list. ufile_unref puts it back as of now once no mapping uses it. */
void ufile_ref(unwinder *u, struct ufile *f);
void ufile_unref(unwinder *u, struct ufile *f, uint64_t now);
void ufile_free(struct ufile *f);
/* Gives back f's runtime slot (ufile_evict does; so must whoever frees a
 * file read by ufile_for_mapping otherwise). */
void ufile_release_runtime(unwinder *u, struct ufile *f);
/* Drops unused file f from the cache (the sweep, past UNUSED_FILES_MAX). */
void ufile_evict(unwinder *u, struct ufile *f);

/* The file of mapping m of process pid, whose identity is key (NULL: the
 * file could not be found), and the ELF address its start maps: from the
 * cache when the file is known, else read now, its table built now or
 * queued. Returns 0 with *ret (referenced for the caller; NULL: walk the
 * mapping by frame pointers), or -ENOMEM. */
int ufile_for_mapping(unwinder *u, uint32_t pid, const struct procmap *m, const struct file_key *key,
                      struct ufile **ret, uint64_t *ret_vaddr_at);
/* The daemon's own vDSO image's table (every 64-bit process maps the same
 * image); NULL if it cannot be read. Never evicted. */
struct ufile *ufile_vdso(unwinder *u);
/* Builds the oldest queued table and publishes again the processes that
 * map it. Returns 0 or -ENOMEM. */
int ufile_build_next(unwinder *u);

/* Samples went through files ids at now (unwinder_note_sampled): their
 * tables are sampled as of now, and each sampled file of a live process
 * whose table found no room gets room: free rows, unused tables, else the
 * least recently sampled tables not sampled for hot_ns (table-lru.h),
 * which are evicted at once (the processes that map them published again
 * without them) and give their rows after their grace (ufile_room_due).
 * Returns 0 or -ENOMEM. */
int ufile_note_sampled(unwinder *u, const struct file_ident *ids, size_t n, uint64_t hot_ns, uint64_t now);
/* The earliest time rows evicted for a file end their grace, or
 * UINT64_MAX; ufile_room_due builds the tables whose rows are due. Returns
 * 0 or -ENOMEM. */
uint64_t ufile_room_next_ns(const unwinder *u);
int ufile_room_due(unwinder *u);
