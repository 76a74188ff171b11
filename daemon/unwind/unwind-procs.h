/* The unwinder's per-process entries: a process's executable mappings
 * read from /proc, each given its file's table, written into a slice of
 * unwind_maps and published in unwind_procs; reloads after an exec
 * (follow-ups) and after misses (at doubling intervals); the sweep that
 * forgets exited processes. Runs on the unwinder's thread only. */
#pragma once

#include "unwinder-private.h"

struct uproc {
        uint32_t tgid;
        uint64_t start;            /* ns, or ticks if tick_ns */
        uint32_t tick_ns;
        uint32_t maps_off, maps_n; /* slice of unwind_maps; maps_n == 0: none */
        struct ufile **files;      /* one reference each */
        size_t n_files;
        uint64_t loaded_ns;        /* CLOCK_MONOTONIC of the last read of its maps */
        uint64_t maps_sig;         /* of its mappings' bounds at the last load (maps_signature) */
        unsigned n_objects;        /* files it maps code of, the vDSO left out (exe, loader, libraries) */
        uint64_t miss_ns;          /* CLOCK_MONOTONIC of the last reload for a miss */
        uint64_t miss_interval_ns; /* the next miss waits this long after miss_ns; 0: MISS_FIRST_INTERVAL_NS */
        bool miss_deferred;        /* a miss waits for miss_ns + miss_interval_ns */
        struct profd_unwind_proc rt; /* its entry's runtime part (rt_*), for rewrites of the entry */
        /* its JVM, when it maps a libjvm.so discovery found (issue 42) */
        uint32_t hs_slot;          /* its HotSpot walker's slot of unwind_runtimes (1-based); 0: none */
        uint64_t hs_bias;          /* libjvm's load bias the slot (or the failure) is of */
        uint64_t hs_lo, hs_hi;     /* its code cache: the entry's hand-over range */
        unsigned hs_tries;         /* reads that found its code cache not set up yet */
        bool hs_done;              /* read (hs_slot) or failed for good (counted): not read again */
};

struct followup {
        uint32_t tgid;
        uint64_t start;
        uint64_t due_ns;           /* CLOCK_MONOTONIC */
        unsigned tries;            /* reads done */
        bool jvm;                  /* a JVM's VM structs read again (its code cache was not set up) */
};

/* A request from the event loop (unwinder_request). */
struct request {
        uint32_t tgid, type;
        uint64_t start_ns;
        uint64_t queued_ns;        /* CLOCK_MONOTONIC */
        char *maps;                /* the maps as the event loop's snapshot read them (owned), or NULL */
};

/* Reads process tgid's mappings and publishes them, as instance start
 * (ns, or ticks if tick_ns). maps: its /proc/PID/maps as the event loop's
 * snapshot just read it (then not read again, and not handed back), or
 * NULL. Returns 0 (also for a process gone or with no room, counted) or a
 * negative errno. */
int uproc_load(unwinder *u, uint32_t tgid, uint64_t start, uint32_t tick_ns, const char *maps);
/* Publishes process tgid again from its maps, after a table it used was
 * given up; one that cannot be published again (gone, no room for its
 * mappings) loses its entry, so that none names the given-up rows once
 * their grace is over. Returns 0 or -ENOMEM. */
int uproc_republish(unwinder *u, uint32_t tgid);
/* One request, as unwinder_request describes. Returns 0 or -ENOMEM. */
int uproc_request(unwinder *u, const struct request *q);

/* The earliest follow-up, or UINT64_MAX; uproc_followups_run reads again
 * the processes whose follow-up is due. */
uint64_t uproc_followup_next_ns(const unwinder *u);
int uproc_followups_run(unwinder *u);
/* Forgets processes that exited, does the misses that were deferred and
 * evicts unused files past UNUSED_FILES_MAX. Returns 0 or -ENOMEM. */
int uproc_sweep(unwinder *u);
/* Lists the processes running at start (u->scan), then loads them at
 * most max at a time. Each returns 0 or -ENOMEM. */
int uproc_scan_list(unwinder *u);
int uproc_scan_some(unwinder *u, size_t max);
