/* The unwinder manager: gives the BPF stack walker the unwind tables of
 * every process's executable mappings. A worker thread reads
 * /proc/PID/maps, builds each file's table once (unwind-table.h; keyed by
 * the file's identity, shared by every process mapping it), writes rows and
 * mapping slices into the kernel's mmapped arrays (slices from
 * rangealloc.h, freed with a grace period) and publishes the process in
 * unwind_procs. Tables no live process maps stay cached until their rows
 * are needed. Requests come from the event loop and never wait for the
 * work. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "collector.h"
#include "hotspot-vmstructs.h"
#include "mapfile.h"

/* Why a mapping got no table (it is then walked by frame pointers), or a
 * process no entry. */
enum unwinder_failure {
        UNWINDER_FAIL_NO_CFI,       /* the file has no .eh_frame / .debug_frame (Go, FreePascal) */
        UNWINDER_FAIL_UNREADABLE,   /* neither map_files nor root/PATH could be opened, or not ELF */
        UNWINDER_FAIL_ABOVE_4G,     /* code above 4 GiB of ELF addresses, or too many rows for one table */
        UNWINDER_FAIL_BAD_CFI,      /* CFI libdw could not read */
        UNWINDER_FAIL_BUDGET_FULL,  /* no room in unwind_memory even after evicting unused tables */
        UNWINDER_FAIL_MAPS_FULL,    /* no room for the process's mappings in unwind_maps */
        UNWINDER_FAIL_PROCS_FULL,   /* unwind_procs had no room for the process */
        UNWINDER_FAIL_RUNTIME_UNSUPPORTED, /* a runtime (CPython) of a version profd cannot walk:
                                            * its frames stay native */
        UNWINDER_FAIL_RUNTIME_SLOTS, /* unwind_runtimes had no free slot for a runtime's file
                                      * (or a JVM process's) */
        UNWINDER_FAIL_HOTSPOT_TABLES, /* a JVM whose VM structs did not read (the reason in
                                       * unwinder_stats.hotspot_tables): its Java frames stay native */
        UNWINDER_FAIL__MAX,
};

/* Names in profctl status (unwind.failures). */
extern const char *const unwinder_failure_names[UNWINDER_FAIL__MAX];

struct unwinder_stats {
        uint64_t processes;           /* with an unwind entry */
        uint64_t files;               /* file tables cached (referenced or not) */
        uint64_t files_unused;        /* of them, mapped by no live process */
        uint64_t rows_used, rows_capacity;     /* unwind_rows' 8-byte values (two slots of the compact
                                                * tables each), counting those in their grace period */
        uint64_t mappings_used, mappings_capacity; /* unwind_maps */
        uint64_t kernel_bytes;        /* rows and mappings in use, bytes */
        uint64_t mapped_bytes;        /* the most of the arrays mapped into profd at once, to write them */
        uint64_t tables_built;        /* tables built since start */
        uint64_t build_ns;            /* time spent building them */
        uint64_t tables_evicted;      /* unused tables evicted for room (or past 1,024 unused files) */
        uint64_t tables_evicted_cold; /* tables of live processes evicted for a sampled table (table-lru.h) */
        uint64_t tables_no_room;      /* tables not built: no room in unwind_memory (rows not read) */
        uint64_t tables_kept_hot;     /* sampled tables left without room: only tables sampled within
                                       * the hot window (or of the process itself) could have given it */
        uint64_t tables_queued;       /* large tables waiting to be built, or being built */
        uint64_t requests;            /* processes (re)loaded */
        uint64_t maps_given;          /* loads from the maps the event loop's snapshot had read */
        uint64_t maps_read;           /* loads that read /proc/PID/maps themselves */
        uint64_t misses;              /* UNWIND_MISS events received */
        uint64_t failures[UNWINDER_FAIL__MAX];
        /* JVM processes (issue 42): given a slot of HotSpot's walker since
         * start; reads of one's VM structs that found its code cache not
         * set up yet (read again later); why one's did not read, by
         * enum hotspot_vmstructs_reason (HOTSPOT_VMSTRUCTS_OK: never) */
        uint64_t hotspot_jvms;
        uint64_t hotspot_retries;
        uint64_t hotspot_tables[_HOTSPOT_VMSTRUCTS_REASON_MAX];
};

typedef struct unwinder unwinder;

/* Starts the worker, which first loads every process in proc_root (in the
 * background). maps must stay valid until unwinder_free. Returns 0,
 * -ENOMEM, or the error creating the thread. */
int unwinder_new(const struct collector_unwind_maps *maps, const char *proc_root, unwinder **ret);
/* Stops the worker; the kernel maps keep what was written. */
unwinder *unwinder_free(unwinder *u);

/* Asks for the tables of process tgid (instance start_ns) because of an
 * event (enum profd_event_type): NEW_PROCESS loads it unless known, EXEC
 * reloads it, UNWIND_MISS reloads it at most every few seconds. Queued
 * only: unwinder_kick, after the batch of events, wakes the worker. Never
 * blocks on the work; a request that cannot be queued (ENOMEM) is
 * dropped, and the process stays walked by frame pointers. maps (taken,
 * may be NULL): the process's /proc/PID/maps as the event loop's snapshot
 * read it just now, which the load then uses instead of reading it again
 * (issue 43: one read of a process's maps at its exec). */
void unwinder_request(unwinder *u, uint32_t tgid, uint64_t start_ns, uint32_t event_type, char *maps);
/* Wakes the worker for the requests queued since its last pass, if any: one
 * wake-up for a batch of events. */
void unwinder_kick(unwinder *u);

void unwinder_get_stats(unwinder *u, struct unwinder_stats *ret);

/* Samples of the drain just stored went through the n files (the writer's
 * struct writer_result.sampled); a table no sample went through for hot_ns
 * is cold. The worker records when each table was last sampled, and a
 * sampled file whose table found no room gets it by evicting the least
 * recently sampled cold tables, those of live processes too (table-lru.h).
 * Copies the list; never blocks on the work; a list that cannot be queued
 * (ENOMEM, or more than a few drains' worth waiting) is dropped. */
void unwinder_note_sampled(unwinder *u, const struct file_ident *files, size_t n, uint64_t hot_ns);

/* A process instance whose executable mappings the worker found new or
 * changed (its first load, a reload after a miss or an exec). */
struct unwinder_loaded {
        uint32_t tgid;
        uint64_t start_ns;
        uint64_t maps_sig;     /* of the executable ranges it found (procmap_signature_add) */
        char *maps;            /* its /proc/PID/maps as the unwinder read it (the taker frees it), or NULL */
};

/* What discovery found in the file that holds runtime slot `slot` (1-based,
 * as struct profd_unwind_proc.rt_slot and PROFD_EVENT_RUNTIME_CODE give
 * it), copied into *ret; any thread. Returns 0, or -ENOENT when the slot
 * is free (its file was evicted: no live process maps it). */
struct unwind_runtime_found;
int unwinder_runtime(unwinder *u, uint32_t slot, struct unwind_runtime_found *ret);

/* Readable (an eventfd) while unwinder_take_loaded has instances. */
int unwinder_loaded_fd(unwinder *u);
/* The instances loaded since the last call, oldest first, into *ret (the
 * caller frees it and each one's maps; NULL when none). Returns how many. */
size_t unwinder_take_loaded(unwinder *u, struct unwinder_loaded **ret);
