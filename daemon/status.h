/* The status answer (docs/protocol.md, status) built from each part's stats:
 * the manager gathers them (status_stats), status_build turns them into the
 * JSON object, with no daemon behind it, so a unit test feeds it numbers
 * and reads the keys back (tests/unit/test-status.c). */
#pragma once

#include "proctable.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "capture-manager.h"
#include "collector.h"
#include "conf.h"
#include "exporter.h"
#include "query.h"
#include "store.h"
#include "unwinder.h"
#include "writer.h"

/* The daemon's resident memory, from /proc/self/status: in all, and its
 * anonymous and file-backed parts. Fields not found stay 0. */
struct status_rss {
        uint64_t total, anon, file;
};

/* Reads /proc/self/status into *ret; cannot fail (what it cannot read is 0). */
void status_rss_read(struct status_rss *ret);

/* Everything status shows, as the manager read it from its parts at one
 * request. The parts a profd does not run (serve-only: no writer, no
 * unwinder; no export configured) have their flag false and their stats
 * zero. */
/* The runtime walks' counters (PROFD_CNT_RT_WALKS and the four after it,
 * in order), in status as unwind.runtime: walks, frames, and why a walk
 * gave no runtime frames. */
#define STATUS_RUNTIME__MAX 5
extern const char *const status_runtime_names[STATUS_RUNTIME__MAX];
/* HotSpot's walker's counters (PROFD_HS_NO_HEAP and the five after it,
 * in order), in status as unwind.hotspot: why a frame in a JVM's code
 * cache was not stepped. */
#define STATUS_HOTSPOT__MAX 8
extern const char *const status_hotspot_names[STATUS_HOTSPOT__MAX];

#define STATUS_VERIFIED_MAX 16

struct status_stats {
        const struct conf *conf;      /* the running settings */
        uint64_t pid;
        uint64_t uptime_s;
        const char *event;            /* the collector's sampling event; NULL: no collector */
        unsigned sampling_hz;         /* the on-CPU rate now (a capture's raise, else frequency); 0: none */
        uint64_t raised_until_ns;     /* a capture raised the rate until then (wall clock); 0: not raised */
        uint64_t interval_now_ns;     /* the drain interval now (shorter while raised) */
        /* BPF's samples, of the drains the writer has stored or refused
         * (as the store's samples and drops are counted) */
        uint64_t samples_seen, idle_samples;
        /* the manager's own counts, from the drains' BPF counters */
        uint64_t offcpu_filtered, offcpu_filtered_ns;
        uint64_t offcpu_sample_ns;    /* offcpu_sample as drawn now (auto: the sampler's period); 0: none */
        uint64_t offcpu_unsampled, offcpu_unsampled_ns, wakeup_unsampled; /* offcpu_sample's draws */
        uint64_t wakeup_self;         /* wake-ups of profd's threads, not walked (offcpu_self_stacks off) */
        /* the off-CPU kernel stacks: from the memo, walked and remembered,
         * hits a verifying walk contradicted (bpf/kstack-memo.bpf.h) */
        uint64_t kstack_memo_hits, kstack_memo_walks, kstack_memo_mismatches;
        uint64_t user_walks;
        uint64_t drains_early;        /* drains before the interval: a kernel map was nearly full */
        uint64_t timeline_untimed;    /* on-CPU samples counted without their time (PROFD_CNT_UNTIMED) */
        /* off-CPU blocks logged with their times, and those counted without
         * (PROFD_CNT_OFFCPU_SHORT, PROFD_CNT_OFFCPU_UNLOGGED), with their ns */
        uint64_t offtime_logged, offtime_short, offtime_short_ns, offtime_unlogged, offtime_unlogged_ns;
        uint64_t runtime[STATUS_RUNTIME__MAX]; /* by status_runtime_names, from PROFD_CNT_RT_WALKS on */
        uint64_t hotspot[STATUS_HOTSPOT__MAX]; /* by status_hotspot_names, from PROFD_HS_WALKS on */
        uint64_t clients;             /* connected to the socket now */

        bool writer_running;
        struct writer_stats writer;
        struct store_stats store;

        bool unwinder_running;
        struct unwinder_stats unwind;

        bool exporter_running;
        struct exporter_status export;

        struct query_pool_stats queries;

        bool check_running;           /* false: the store's check could not start */
        struct store_check_status check;
        bool migration_read;          /* store_migration_get succeeded */
        struct store_migration migration;

        struct capture_status captures; /* running false: no capture manager */

        struct status_rss rss;
        uint64_t heap_in_use_bytes, heap_free_bytes; /* what malloc holds in use and free */
        uint64_t sqlite_bytes;                       /* SQLite's part of what is in use */
        uint64_t heap_trims, heap_trim_ns;
        /* what new processes' snapshots took from the memo, read, opened */
        struct snapshot_memo_counts snapshots;
        /* the verifier's instructions processed per loaded program
         * (collector_verified); n 0 without a collector or before 5.16 */
        struct collector_verified verified[STATUS_VERIFIED_MAX];
        size_t n_verified;
};

/* The status object ("type": "status") for s. Returns it, or NULL when out
 * of memory. */
json_t *status_build(const struct status_stats *s);
