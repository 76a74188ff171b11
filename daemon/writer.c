/* The writer thread: a work queue (workqueue.h) of jobs (process snapshots,
 * settings, drains) worked in order on one thread; drain results go back to
 * the event loop through the queue's eventfd. */
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "heap.h"
#include "helpers.h"
#include "log.h"
#include "macro.h"
#include "procmaps.h"
#include "hotspot-code.h"
#include "python.h"
#include "store.h"
#include "symbolizer.h"
#include "workqueue.h"

const char *const drop_reason_names[PROFD_COUNTER__MAX] = {
        [PROFD_DROP_MAP_FULL] = "map_full",
        [PROFD_DROP_USER_STACK_ERROR] = "user_stack_error",
        [PROFD_DROP_KERNEL_STACK_ERROR] = "kernel_stack_error",
        [PROFD_DROP_STACK_MAP_FULL] = "stack_map_full",
        [PROFD_DROP_RINGBUF_FULL] = "ringbuf_full",
        [PROFD_DROP_TASK_STORAGE] = "task_storage_full",
        [PROFD_DROP_SWITCH_MISSED] = "switch_missed",
        /* user stacks that ended early (kept, with the frames walked) */
        [PROFD_TRUNC_NO_PROCESS] = TRUNCATED_PREFIX "no_process",
        [PROFD_TRUNC_PENDING] = TRUNCATED_PREFIX "pending",
        [PROFD_TRUNC_NO_MAPPING] = TRUNCATED_PREFIX "no_mapping",
        [PROFD_TRUNC_UNSUPPORTED] = TRUNCATED_PREFIX "unsupported",
        [PROFD_TRUNC_READ_FAULT] = TRUNCATED_PREFIX "read_fault",
        [PROFD_TRUNC_DEPTH] = TRUNCATED_PREFIX "depth",
        [PROFD_TRUNC_FP_END] = TRUNCATED_PREFIX "fp_end",
        [PROFD_TRUNC_CFA_STUCK] = TRUNCATED_PREFIX "cfa_stuck",
};

const char *const writer_python_reason_names[_PYTHON_CODE_REASON_MAX] = {
        [PYTHON_CODE_READ_CODE] = "python_read_code",
        [PYTHON_CODE_NOT_CODE] = "python_not_code",
        [PYTHON_CODE_READ_STRING] = "python_read_string",
        [PYTHON_CODE_STRING_NOT_COMPACT] = "python_string_not_compact",
        [PYTHON_CODE_STRING_TOO_LONG] = "python_string_too_long",
        [PYTHON_CODE_STRING_BAD] = "python_string_bad",
        [PYTHON_CODE_READ_LINETABLE] = "python_read_linetable",
        [PYTHON_CODE_LINETABLE_TOO_BIG] = "python_linetable_too_big",
        [PYTHON_CODE_LINETABLE_BAD] = "python_linetable_bad",
        [PYTHON_CODE_NO_LINE] = "python_no_line",
        [PYTHON_CODE_OFFSET_PAST_TABLE] = "python_offset_past_table",
};

const char *const writer_hotspot_reason_names[_HOTSPOT_CODE_REASON_MAX] = {
        [HOTSPOT_CODE_NO_TABLES] = "hotspot_no_tables",
        [HOTSPOT_CODE_READ_METHOD] = "hotspot_read_method",
        [HOTSPOT_CODE_BAD_METHOD] = "hotspot_bad_method",
        [HOTSPOT_CODE_READ_BLOB] = "hotspot_read_blob",
        [HOTSPOT_CODE_BAD_BLOB] = "hotspot_bad_blob",
        [HOTSPOT_CODE_NO_LINE] = "hotspot_no_line",
        [HOTSPOT_CODE_NO_SCOPE] = "hotspot_no_scope",
        [HOTSPOT_CODE_BAD_SCOPE] = "hotspot_bad_scope",
        [HOTSPOT_CODE_FAR_OFFSET] = "hotspot_far_offset",
};

enum job_type {
        JOB_LEARN,
        JOB_DRAIN,
        JOB_SETTINGS,
        JOB_RUNTIME_CODE,
};

/* The runtimes whose frames the writer names, by enum unwind_runtime_id. */
static const struct unwind_runtime *const named_runtimes[] = {
        [UNWIND_RUNTIME_PYTHON] = &python_runtime,
        [UNWIND_RUNTIME_HOTSPOT] = &hotspot_runtime,
        [UNWIND_RUNTIME_HOTSPOT_CODE] = &hotspot_code_runtime,
};

/* Why 16 MiB: a code object kept costs some 300 bytes and its line table
 * (a few bytes per instruction), so this holds the functions of tens of
 * large Python services; a Java method or nmethod (with its debug info
 * and the methods it inlined) some 1.2 KiB on average (858 of them in
 * 1.0 MiB for seven JVMs here), so some 13,000 of those; past it, the
 * least recently used are read again when met (or, their process gone,
 * left unnamed). */
#define RUNTIME_NAMES_BUDGET (16ULL << 20)

/* "python-" and 16 hex digits, NUL: room for a longer runtime's name too */
#define RUNTIME_BUILD_ID_MAX 32

/* How long a process's record or a runtime's code object may wait for
 * the writer to be woken for others: on a build host (70 execs a second,
 * as many code objects) a wake-up per job was some 7% of the daemon's
 * CPU samples (futex calls and context switches; docs/performance.md). */
#define WRITER_BATCH_MS 100

/* How long the writer waits for a job before it gives back the heap that
 * processes' records freed (writer_idle). */
#define WRITER_IDLE_TRIM_MS 200

/* Retention work done after each drain, at most: a tenth of the default
 * interval, so the next drain is never kept waiting for long. */
#define RETENTION_BUDGET_NS (100ULL * 1000000ULL)

struct job {
        workqueue_item item;
        enum job_type type;
        struct proc *proc;         /* JOB_LEARN */
        struct drain_batch batch;  /* JOB_DRAIN */
        uint64_t start_ns, end_ns, vanished, seq;
        uint64_t symbol_cache_bytes; /* JOB_SETTINGS */
        unsigned dwarf_min_samples;
        char **debug_dirs;
        struct retention_settings retention;
        struct writer_result result; /* JOB_DRAIN, once run: what the loop pops */
        struct unwind_runtime_found *found; /* JOB_RUNTIME_CODE, with pid, start_ns, bias, code */
        uint32_t pid;
        unsigned rt_id;                     /* the event's runtime (0: found's) */
        uint64_t bias, code;
        struct runtime_names_read read;     /* the code object, read when the job was queued */
};

struct writer {
        workqueue *queue;          /* one thread; its eventfd wakes the loop for results */

        pthread_mutex_t lock;      /* guards everything below up to the marker */
        uint64_t next_seq;
        unsigned drains_queued;    /* JOB_DRAINs in the queue: retention yields to them */
        struct writer_stats stats;
        struct kernel_range *own_code; /* writer_set_own_code's */
        size_t n_own_code;
        /* --- the rest belongs to the thread alone --- */

        store *store;
        retention *ret;            /* NULL until the first settings, or if it failed to open */
        symbolizer *sym;
        proctable *procs;
        uint64_t vanished_stored;  /* vanished already written as drops */
        uint64_t kernel_code;      /* kernel_code_signature() when kallsyms was read */
        bool kallsyms_read;        /* it was, once */
        struct store_frame *frames; /* scratch for one sample's frames */
        struct store_line *lines;   /* their inline chains, MAX_INLINE per frame */
        char (*build_ids)[RUNTIME_BUILD_ID_MAX]; /* the runtime frames' build_ids, one per frame */
        size_t frames_cap;
        char *proc_root;
        runtime_names *names;       /* code objects of runtime frames (Python) */
        /* the event loop's reads of code objects at their events
         * (writer_runtime_code): its handles and pages, its thread's only */
        struct runtime_names_session names_session;
        bool trim_due;              /* the writer thread's: processes were recorded since the last heap trim */
        struct writer_unresolved unresolved; /* this drain's, added to stats once it is stored */
        struct writer_deferred deferred;     /* likewise */
        uint64_t dwarf_min_samples;          /* the setting (0: every file's DWARF read at its first frame) */
        char jit_tag[64];          /* build_id of the [jit] frames of the key being built */
        /* the files this drain's user frames are in (sampled_note) */
        hashmap *sampled_seen;     /* hash of a struct file_ident -> its index in sampled + 1 */
        struct file_ident *sampled;
        size_t n_sampled, cap_sampled;
        bool migrated;             /* no schema 7 samples left to convert */
        int statm_fd;              /* /proc/self/statm, open (negative: drops go by keys alone) */
        /* mapped files' resident bytes to grow from before pages are
         * dropped: read when a drain begins and after each drop, lowered
         * when a read finds fewer */
        uint64_t file_pages_base;
};

/* Inlined calls kept per address: deeper chains keep their outermost
 * levels (the function the code belongs to is never dropped). */
#define MAX_INLINE 16

static const char *path_or(const char *p, const char *fallback) {
        return p ? p : fallback;
}

/* JIT addresses name code only within one process, and only until the JIT
 * reuses the memory, while the store keeps one function per (mapping,
 * address) forever. So a resolved [jit] frame's mapping is made distinct
 * per process instance and perf map epoch, through its build_id (which
 * nothing else gives a [jit] mapping); unresolved ones share plain [jit]. */
static const char *jit_tag(writer *w, const struct proc *p) {
        snprintf(w->jit_tag, sizeof(w->jit_tag), "jit-%" PRIu32 "-%" PRIu64 "-%" PRIu64, p->pid, p->start_ns,
                 jitmap_epoch(p->jit));
        return w->jit_tag;
}

/* Whether the frame's location is in the store with its function already:
 * then resolving it again (maybe reopening DWARF closed since) is wasted,
 * since store_drain_add keeps a stored location as it is. The store is
 * asked only when resolving would read DWARF, and a yes is remembered in
 * the file object, per mapping path (the tag). A failed lookup counts as
 * no: the frame is resolved as before. */
static bool frame_stored(writer *w, const sym_file *file, const char *module, const char *build_id, uint64_t off) {
        uint64_t tag = hash_bytes(module, strlen(module));

        switch (sym_file_cached(file, off, tag)) {
        case SYM_CACHED_STORED:
                return true;
        case SYM_CACHED_CHEAP:
                return false;
        case SYM_CACHED_NOT:
                break;
        }
        if (store_location_resolved(w->store, module, build_id, off) <= 0)
                return false;
        (void) sym_file_mark_stored(w->sym, file, off, tag);
        return true;
}

/* Notes that a user frame is in file map maps, for the unwinder, which
 * keeps a table of a file if samples go through it (unwinder.h,
 * unwinder_note_sampled). Here, not in the BPF walker or the unwinder:
 * every frame is matched to its mapping here anyway, once per drain, so a
 * file costs one hash lookup per frame and one entry per drain, with no
 * syscall and no change to the walker; the identity is the one
 * /proc/PID/maps gives, which the unwinder's file keys hold too. A frame
 * of a mapping whose table found no room is noted like any other: the
 * frame-pointer walk (or the leaf alone) still lands in it, which is how
 * the unwinder learns that a table it refused is wanted. Out of memory
 * only loses the note. */
static void sampled_note(writer *w, const struct proc_mapping *map) {
        struct file_ident id = { makedev(map->dev_major, map->dev_minor), map->inode };
        uint64_t h = file_ident_hash(&id);
        void *v;

        if (!w->sampled_seen || map->inode == 0)
                return;
        if (hashmap_get(w->sampled_seen, UINT64_TO_KEY(h), &v) == 0) {
                const struct file_ident *seen = &w->sampled[(uintptr_t) v - 1];

                if (seen->dev == id.dev && seen->ino == id.ino)
                        return;
                /* two files, one hash: noted again, which costs nothing wrong */
        }
        if (array_grow((void **) &w->sampled, &w->cap_sampled, w->n_sampled + 1, sizeof(*w->sampled)) < 0)
                return;
        w->sampled[w->n_sampled++] = id;
        (void) hashmap_put(w->sampled_seen, UINT64_TO_KEY(h), (void *) (uintptr_t) w->n_sampled);
}

/* What debug info says is at an address, as stored: innermost first, the
 * last level the function the code belongs to. */
static void lines_of(const struct sym_frame *chain, int n, struct store_line *lines) {
        for (int i = 0; i < n; i++)
                lines[i] = (struct store_line) {
                        .function = chain[i].function,
                        .raw_function = chain[i].raw_function,
                        .file = chain[i].file,
                        .line = chain[i].line,
                        .inlined = chain[i].inlined,
                };
}

/* A user frame: the mapping it falls in, the file offset, the symbol; for
 * JIT code the absolute address and the name in the process's perf map.
 * Counts why a frame stays unresolved. */
static struct store_frame user_frame(writer *w, const struct proc *p, uint64_t ip, struct store_line *lines) {
        const struct proc_mapping *map = p && p->snapshotted ? proc_find_mapping(p, ip) : NULL;
        const char *fn = NULL;

        /* JIT code: anonymous memory, or memory mapped since the maps were
         * last read that the perf map knows */
        if (p && (!map || proc_mapping_is_anonymous(map)))
                fn = proc_jit_lookup(p, ip);
        if (fn)
                return (struct store_frame) { .module = "[jit]", .build_id = jit_tag(w, p), .address = ip,
                                              .function = fn };
        if (!map) {
                w->unresolved.unknown_mapping++;
                /* Stored at address 0: outside every known mapping the
                 * address is only where ASLR put the code in this one
                 * process, and kept, every short-lived process gone before
                 * its maps were read stored stacks of its own (issue 43:
                 * 38% of a churning host's stacks, docs/performance.md). */
                return (struct store_frame) { .module = "[unknown]", .address = 0,
                                              .unresolved = STORE_UNRESOLVED_UNKNOWN_MAPPING };
        }
        if (proc_mapping_is_anonymous(map)) {
                w->unresolved.jit_without_map++;
                return (struct store_frame) { .module = "[jit]", .address = ip,
                                              .unresolved = STORE_UNRESOLVED_JIT_WITHOUT_MAP };
        }
        sampled_note(w, map);
        uint64_t off = ip - map->start + map->offset;
        struct store_frame f = {
                .module = path_or(map->path, "[anon]"),
                .build_id = map->file ? sym_file_build_id(map->file) : NULL,
                .address = off,
        };
        struct sym_frame chain[MAX_INLINE];
        bool deferred = false;
        int n;

        if (!map->file) {
                w->unresolved.no_file++;
                f.unresolved = STORE_UNRESOLVED_NO_FILE;
                return f;
        }
        if (w->dwarf_min_samples > 0 && sym_file_defers_dwarf(map->file)) {
                /* its DWARF not read yet (dwarf_min_samples): the symbol
                 * alone, the frame kept to be given its lines when it is */
                n = sym_file_resolve_symbol(w->sym, map->file, off, chain, MAX_INLINE);
                deferred = n > 0;
                if (n > 0) {
                        int k = sym_file_pend(map->file, off, f.module);

                        if (k > 0)
                                w->deferred.frames++;
                        else if (k == -ENOSPC)
                                w->deferred.not_kept++;
                }
        } else if (frame_stored(w, map->file, f.module, f.build_id, off))
                return f;
        else
                n = sym_file_resolve(w->sym, map->file, off, chain, MAX_INLINE);
        if (n <= 0) {
                w->unresolved.no_symbols++;
                f.unresolved = STORE_UNRESOLVED_NO_SYMBOLS;
                return f;
        }
        lines_of(chain, n, lines);
        f.function = chain[n - 1].function;
        f.raw_function = chain[n - 1].raw_function;
        /* a deferred frame's location has no lines yet: they are what
         * store_location_add_lines gives it */
        f.lines = deferred ? NULL : lines;
        f.n_lines = deferred ? 0 : (size_t) n;
        return f;
}

/* Why a Python pseudo-frame has no name, as stored. */
static enum store_unresolved python_unresolved(const struct runtime_names_frame *nf) {
        switch (nf->status) {
        case RUNTIME_NAMES_NO_RUNTIME:
                return STORE_UNRESOLVED_PYTHON_NO_RUNTIME;
        case RUNTIME_NAMES_EXITED:
                return STORE_UNRESOLVED_PYTHON_EXITED;
        default:
                break;
        }
        switch (nf->reason) {
        case PYTHON_CODE_READ_CODE:
                return STORE_UNRESOLVED_PYTHON_READ_CODE;
        case PYTHON_CODE_NOT_CODE:
                return STORE_UNRESOLVED_PYTHON_NOT_CODE;
        case PYTHON_CODE_READ_STRING:
                return STORE_UNRESOLVED_PYTHON_READ_STRING;
        default:
                /* the name's string was there but not one profd reads */
                return STORE_UNRESOLVED_PYTHON_BAD_STRING;
        }
}

/* Why a HotSpot pseudo-frame has no name (or its inlined calls), as stored. */
static enum store_unresolved hotspot_unresolved(const struct runtime_names_frame *nf) {
        switch (nf->status) {
        case RUNTIME_NAMES_NO_RUNTIME:
                return STORE_UNRESOLVED_HOTSPOT_NO_RUNTIME;
        case RUNTIME_NAMES_EXITED:
                return STORE_UNRESOLVED_HOTSPOT_EXITED;
        case RUNTIME_NAMES_NAMED:
                return nf->reason == HOTSPOT_CODE_NO_SCOPE || nf->reason == HOTSPOT_CODE_BAD_SCOPE ||
                                       nf->reason == HOTSPOT_CODE_FAR_OFFSET
                               ? STORE_UNRESOLVED_HOTSPOT_NO_SCOPE
                               : STORE_UNRESOLVED_NONE;
        default:
                break;
        }
        switch (nf->reason) {
        case HOTSPOT_CODE_BAD_METHOD:
        case HOTSPOT_CODE_BAD_BLOB:
                return STORE_UNRESOLVED_HOTSPOT_BAD;
        default:
                /* the JVM's tables, a method's or a blob's memory */
                return STORE_UNRESOLVED_HOTSPOT_READ;
        }
}

static bool is_hotspot_id(unsigned id) {
        return id == UNWIND_RUNTIME_HOTSPOT || id == UNWIND_RUNTIME_HOTSPOT_CODE;
}

/* Counts a runtime frame's reason, by its runtime (the frame's id when
 * no runtime named it). */
static void runtime_count(writer *w, unsigned id, const struct runtime_names_frame *nf) {
        bool hotspot = is_hotspot_id(id);

        if (nf->status == RUNTIME_NAMES_NO_RUNTIME) {
                if (hotspot)
                        w->unresolved.hotspot_no_runtime++;
                else
                        w->unresolved.python_no_runtime++;
        } else if (nf->status == RUNTIME_NAMES_EXITED) {
                if (hotspot)
                        w->unresolved.hotspot_exited++;
                else
                        w->unresolved.python_exited++;
        } else if (nf->reason != 0) {
                if (hotspot && nf->reason < _HOTSPOT_CODE_REASON_MAX)
                        w->unresolved.hotspot[nf->reason]++;
                else if (!hotspot && nf->reason < _PYTHON_CODE_REASON_MAX)
                        w->unresolved.python[nf->reason]++;
        }
}

/* A runtime's pseudo-frame (frame n of the key being built): named from
 * the code object cache (rules in docs/architecture.md, "Runtime
 * walkers"), with the calls inlined at the pc as a native frame's, or
 * "[python]"/"[hotspot]" at the code object's address with why not.
 * Returns 0 or -ENOMEM. */
static int runtime_frame(writer *w, const struct profd_sample_key *key, const struct proc *p, uint64_t ip, size_t n,
                         struct store_frame *ret) {
        bool live = !(p && (p->gone || p->exited_seq));
        unsigned id = PROFD_RT_FRAME_ID(ip);
        struct runtime_names_frame nf;
        int r;

        r = runtime_names_lookup(w->names, key->tgid, key->start_ns, live, ip, &nf);
        if (r < 0)
                return r;
        runtime_count(w, id, &nf);
        if (nf.status == RUNTIME_NAMES_NAMED) {
                struct store_line *l = &w->lines[n * MAX_INLINE];
                size_t n_lines = 1;

                _Static_assert(UNWIND_RUNTIME_INLINE_MAX <= MAX_INLINE, "a runtime's chain fits a frame's lines");
                if (nf.name.n_lines > 0) {
                        /* innermost first, the last the frame's own function */
                        n_lines = MIN(nf.name.n_lines, (size_t) UNWIND_RUNTIME_INLINE_MAX);
                        for (size_t i = 0; i < n_lines; i++)
                                l[i] = (struct store_line) {
                                        .function = nf.name.lines[i].function,
                                        .file = nf.name.lines[i].file,
                                        .line = nf.name.lines[i].line,
                                        .inlined = i + 1 < n_lines,
                                };
                } else
                        *l = (struct store_line) { .function = nf.name.function, .file = nf.name.file,
                                                   .line = nf.name.line };
                *ret = (struct store_frame) {
                        .module = nf.name.module ?: nf.name.file,
                        .build_id = runtime_names_build_id(nf.runtime, nf.name.identity, w->build_ids[n],
                                                           sizeof(w->build_ids[n])),
                        .address = nf.name.line,
                        .function = nf.name.function,
                        .lines = l,
                        .n_lines = n_lines,
                        .unresolved = is_hotspot_id(id) ? hotspot_unresolved(&nf) : STORE_UNRESOLVED_NONE,
                };
                return 0;
        }
        *ret = (struct store_frame) {
                .module = is_hotspot_id(id) ? STORE_HOTSPOT_MODULE : STORE_PYTHON_MODULE,
                .address = PROFD_RT_FRAME_CODE(ip),
                .unresolved = is_hotspot_id(id) ? hotspot_unresolved(&nf) : python_unresolved(&nf),
        };
        return 0;
}

static struct store_frame kernel_frame(writer *w, uint64_t ip) {
        const char *module = NULL;
        const char *fn = symbolizer_lookup_kernel(w->sym, ip, &module);

        return (struct store_frame) {
                .module = module ? module : "[kernel.kallsyms]",
                .address = ip,
                .function = fn,
                .kernel = true,
        };
}

static const struct stack_trace *lookup_stack(hashmap *stacks, uint64_t id) {
        void *v;
        if (id == PROFD_STACK_NONE || id == PROFD_STACK_LOST || !stacks || hashmap_get(stacks, UINT64_TO_KEY(id), &v) < 0)
                return NULL;
        return v;
}

/* The address to look user frame i (0: innermost) up at. Every return
 * address but the innermost frame's is looked up minus one, so it falls
 * inside the call instruction rather than possibly after the end of the
 * function; never a pseudo-frame (runtime_names_lookup_ip). */
static uint64_t user_frame_ip(const struct profd_sample_key *key, const struct stack_trace *ks,
                              const struct stack_trace *us, size_t i) {
        bool innermost = i == 0 && (!ks || ks->n == 0) && key->kernel_stack == PROFD_STACK_NONE;
        return runtime_names_lookup_ip(us->ips[i], innermost);
}

/* How the user part of a drained key's stack ended, as stored
 * (stacks.user_end): no user part (a kernel thread) is complete; a user
 * stack that was not recorded is lost; else what the BPF walker said, when
 * it says it (unknown, not complete, when it cannot). */
static int user_stack_end(const struct drain_batch *b, const struct profd_sample_key *key,
                          const struct stack_trace *us) {
        if (key->user_stack == PROFD_STACK_NONE)
                return PROFD_END_COMPLETE;
        if (!us)
                return STORE_END_LOST;
        return b->user_ends_known ? us->end : STORE_END_UNKNOWN;
}

/* Builds the frames of one drained key, root first. */
static int build_frames(writer *w, const struct drain_batch *b, const struct profd_sample_key *key,
                        const struct proc *p, size_t *ret_n) {
        const struct stack_trace *ks = lookup_stack(b->frames, key->kernel_stack);
        const struct stack_trace *us = lookup_stack(b->frames, key->user_stack);
        size_t nk = ks ? ks->n : 0, nu = us ? us->n : 0, n = 0, need = nk + nu + 2;
        static const struct store_frame lost_user = { .module = "[lost]", .function = "[lost]" };
        static const struct store_frame lost_kernel = { .module = "[lost]", .function = "[lost]", .kernel = true };
        /* a preempted wait kept without stacks (offcpu_preempted_stacks off) */
        static const struct store_frame preempted = { .module = "[preempted]", .function = "[preempted]" };
        /* another block kept without stacks: profd's own (offcpu_self_stacks off) */
        static const struct store_frame unwalked = { .module = "[unwalked]", .function = "[unwalked]" };

        if (need > w->frames_cap) {
                struct store_frame *f = realloc(w->frames, need * sizeof(*f));
                struct store_line *l;
                char (*ids)[RUNTIME_BUILD_ID_MAX];

                if (!f)
                        return -ENOMEM;
                w->frames = f;
                l = realloc(w->lines, need * MAX_INLINE * sizeof(*l));
                if (!l)
                        return -ENOMEM;
                w->lines = l;
                ids = realloc(w->build_ids, need * sizeof(*ids));
                if (!ids)
                        return -ENOMEM;
                w->build_ids = ids;
                w->frames_cap = need;
        }
        /* user frames, outermost first */
        if (key->user_stack != PROFD_STACK_NONE && !us)
                w->frames[n++] = lost_user;
        for (size_t i = nu; i-- > 0; n++) {
                uint64_t ip = user_frame_ip(key, ks, us, i);

                if (PROFD_RT_FRAME_IS(ip)) {
                        int r = runtime_frame(w, key, p, ip, n, &w->frames[n]);

                        if (r < 0)
                                return r;
                } else
                        w->frames[n] = user_frame(w, p, ip, &w->lines[n * MAX_INLINE]);
        }
        if (key->kernel_stack != PROFD_STACK_NONE && !ks)
                w->frames[n++] = lost_kernel;
        for (size_t i = nk; i-- > 0;)
                w->frames[n++] = kernel_frame(w, ks->ips[i] - (i == 0 ? 0 : 1));
        if (n == 0 && key->kind == PROFD_KIND_OFFCPU && key->kernel_stack == PROFD_STACK_NONE &&
            key->user_stack == PROFD_STACK_NONE)
                w->frames[n++] = key->state == PROFD_STATE_RUNNING ? preempted : unwalked;
        *ret_n = n;
        return 0;
}

/* The frames a file's earlier drains stored by their symbol alone, given
 * their function and lines now that its DWARF is read (dwarf-defer.h).
 * Returns 0 or a negative errno (the drain fails, as for any store error). */
static int add_deferred_lines(writer *w, const sym_file *file) {
        _cleanup_free_ uint64_t *offs = NULL;
        _cleanup_free_ char *module = NULL;
        struct sym_frame chain[MAX_INLINE];
        struct store_line lines[MAX_INLINE];
        uint64_t added = 0;
        int n, r = 0;

        n = sym_file_take_pending(file, &offs, &module);
        if (n < 0)
                return n;
        for (int i = 0; i < n && r >= 0; i++) {
                int k = sym_file_resolve(w->sym, file, offs[i], chain, MAX_INLINE);

                if (k == -ENOMEM)
                        return k;
                if (k <= 0)
                        continue; /* the DWARF could not be read: the symbol stays */
                lines_of(chain, k, lines);
                r = store_location_add_lines(w->store, &(struct store_frame) {
                        .module = module,
                        .build_id = sym_file_build_id(file),
                        .address = offs[i],
                        .function = chain[k - 1].function,
                        .raw_function = chain[k - 1].raw_function,
                        .lines = lines,
                        .n_lines = (size_t) k,
                });
                if (r > 0)
                        added++;
        }
        if (r >= 0)
                r = store_locations_changed(w->store, added);
        w->deferred.lines_added += added;
        return r < 0 ? r : 0;
}

/* Files a key's user frames are in, counted once each per key. */
#define KEY_FILES_MAX 16

/* dwarf_min_samples: before a drain is symbolized, each key's samples are
 * added to the files its user frames are in (a file once per key), so a
 * file that reaches the setting has its DWARF read for every frame of
 * this drain, and the frames its earlier drains stored by their symbol
 * alone are given their lines at once. An off-CPU or wake-up key counts
 * one: its blocked time says how long a thread waited, not how many
 * stacks walked it (a test waiting a second on its child would count 49
 * otherwise). At 0 each file still deferring turns on at its first key:
 * files kept pending when the setting was reloaded to 0 get their lines.
 * Returns 0 or a negative errno. */
static int note_file_samples(writer *w, const struct drain_batch *b) {
        for (size_t i = 0; i < b->n_entries; i++) {
                const struct profd_sample_key *key = &b->entries[i].key;
                const struct stack_trace *ks = lookup_stack(b->frames, key->kernel_stack);
                const struct stack_trace *us = lookup_stack(b->frames, key->user_stack);
                const struct proc *p = proctable_get(w->procs, key->tgid, key->start_ns);
                const sym_file *seen[KEY_FILES_MAX];
                size_t n_seen = 0;
                uint64_t weight = key->kind == PROFD_KIND_CPU ? b->entries[i].value : 1;

                if (!us || !p || !p->snapshotted)
                        continue;
                for (size_t k = 0; k < us->n; k++) {
                        uint64_t ip = user_frame_ip(key, ks, us, k);
                        const struct proc_mapping *m;
                        bool dup = false;

                        if (PROFD_RT_FRAME_IS(ip))
                                continue;
                        m = proc_find_mapping(p, ip);
                        if (!m || !m->file || !sym_file_defers_dwarf(m->file))
                                continue;
                        for (size_t s = 0; s < n_seen && !dup; s++)
                                dup = seen[s] == m->file;
                        if (dup)
                                continue;
                        if (n_seen < KEY_FILES_MAX)
                                seen[n_seen++] = m->file;
                        if (sym_file_note_samples(m->file, weight, w->dwarf_min_samples)) {
                                int r = add_deferred_lines(w, m->file);

                                if (r < 0)
                                        return r;
                        }
                }
        }
        return 0;
}

/* Before a drain is symbolized: a live process with user frames in no known
 * mapping gets its maps re-read (code mapped since it was read), and one
 * with frames in anonymous memory or in no mapping gets its perf map read
 * if that changed (also after it exited, while the map is held open), each
 * at most once per drain (round). Done before any frame is built, since it
 * replaces the mapping paths and JIT names frames point to. Returns 0 or
 * -ENOMEM. */
static int refresh_processes(writer *w, const struct drain_batch *b, uint64_t round) {
        int r;

        for (size_t i = 0; i < b->n_entries; i++) {
                const struct profd_sample_key *key = &b->entries[i].key;
                const struct stack_trace *ks = lookup_stack(b->frames, key->kernel_stack);
                const struct stack_trace *us = lookup_stack(b->frames, key->user_stack);
                struct proc *p = proctable_get(w->procs, key->tgid, key->start_ns);
                bool outside = false, anonymous = false, need_maps, need_jit;

                if (!us || !p || !p->snapshotted)
                        continue;
                /* a process that exited may still have its perf map open to read */
                need_maps = p->maps_round != round && !p->gone;
                need_jit = p->jit_round != round && (!p->gone || p->jit_fd >= 0);
                if (!need_maps && !need_jit)
                        continue;
                for (size_t k = 0; k < us->n; k++) {
                        uint64_t ip = user_frame_ip(key, ks, us, k);
                        const struct proc_mapping *m;

                        if (PROFD_RT_FRAME_IS(ip))
                                continue; /* named from process memory, not from a mapping */
                        m = proc_find_mapping(p, ip);
                        if (!m)
                                outside = true;
                        else if (proc_mapping_is_anonymous(m))
                                anonymous = true;
                }
                if (outside && need_maps) {
                        p->maps_round = round;
                        r = proctable_refresh_maps(w->procs, p);
                        if (r < 0)
                                return r;
                }
                if ((outside || anonymous) && need_jit) {
                        p->jit_round = round;
                        r = proctable_refresh_jit(w->procs, p);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* A thread that ended before its drain was stored: no name (NULL). */
static char thread_ended;

static void thread_names_free(hashmap *names) {
        size_t state = 0;
        const void *k;
        void *v;

        while (names && hashmap_iterate(names, &state, &k, &v))
                if (v != &thread_ended)
                        free(v);
        hashmap_free(names);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(hashmap *, thread_names_free);

/* The name of thread tid of process pid, read from /proc once per drain
 * (names: tid -> malloc'd name, or &thread_ended). *ret is NULL when it is
 * not known: the thread ended, or tid 0 (an idle CPU). Returns 0 or
 * -ENOMEM. */
static int thread_comm(writer *w, hashmap *names, uint32_t pid, uint32_t tid, const char **ret) {
        _cleanup_free_ char *name = NULL;
        void *v;
        int r;

        *ret = NULL;
        if (tid == 0)
                return 0;
        if (hashmap_get(names, UINT64_TO_KEY(tid), &v) >= 0) {
                *ret = v == &thread_ended ? NULL : v;
                return 0;
        }
        name = malloc(16);
        if (!name)
                return -ENOMEM;
        if (proctable_thread_comm(w->procs, pid, tid, name) < 0) {
                r = hashmap_put(names, UINT64_TO_KEY(tid), &thread_ended);
                return r < 0 ? r : 0;
        }
        r = hashmap_put(names, UINT64_TO_KEY(tid), name);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(name);
        return 0;
}

/* Keys stored between two symbolizer_bound in a drain, and between two
 * looks at the pages of mapped files profd holds. */
#define DROP_PAGES_EVERY 64

/* How far the pages of mapped files profd holds may grow within a drain
 * before the symbol tables' are given back (symbolizer_drop_pages). Each
 * drop is a madvise per table touched, each a TLB flush on every CPU the
 * daemon runs on: a drop every 64 keys, whatever they had read, was 2.7%
 * of the daemon's CPU samples on a build host (1.5% by growth:
 * docs/performance.md). A drain whose addresses are mostly known reads few
 * new pages and gives them back at its end (symbolizer_trim); one that
 * reads thousands of new addresses still drops every 64 keys, its file
 * pages held within this of the last drop's. */
#define DROP_PAGES_GROWTH (UINT64_C(2) << 20)

/* Bytes of mapped files' pages resident in profd (statm's third field:
 * RssFile and RssShmem), or 0 when they cannot be read. */
static uint64_t file_pages_bytes(writer *w) {
        char buf[128];
        unsigned long long size, resident, shared;
        ssize_t n;

        if (w->statm_fd < 0)
                return 0;
        n = pread(w->statm_fd, buf, sizeof(buf) - 1, 0);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        if (sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) != 3)
                return 0;
        return (uint64_t) shared * (uint64_t) sysconf(_SC_PAGESIZE);
}

/* Gives back the symbol tables' pages read since the last drop if those
 * of mapped files grew by DROP_PAGES_GROWTH since (always when they cannot
 * be read). */
static void drop_pages_if_grown(writer *w) {
        uint64_t now = file_pages_bytes(w);

        if (now != 0 && now < w->file_pages_base + DROP_PAGES_GROWTH) {
                w->file_pages_base = MIN(w->file_pages_base, now);
                return;
        }
        symbolizer_drop_pages(w->sym);
        w->file_pages_base = file_pages_bytes(w);
}

/* Stores one drain in one transaction. Drops of drains that could not be
 * stored are kept and stored with the next one that can. */
/* The drain's timeline: every entry was added in order (store_drain_add
 * number i is entry i), so a logged sample's entry is its add. */
static int write_timeline(writer *w, const struct drain_batch *b) {
        _cleanup_free_ struct store_timed *t = NULL;

        if (b->n_timeline == 0)
                return 0;
        t = malloc(b->n_timeline * sizeof(*t));
        if (!t)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_timeline; i++)
                t[i] = (struct store_timed) {
                        .time_ns = (uint64_t) ((int64_t) b->timeline[i].mono_ns + b->wall_minus_mono_ns),
                        .sample = b->timeline[i].entry,
                };
        return store_drain_timeline(w->store, t, b->n_timeline);
}

/* The drain's off-CPU timeline: as write_timeline, each logged block's
 * entry is its add. */
static int write_offtime(writer *w, const struct drain_batch *b) {
        _cleanup_free_ struct store_block *t = NULL;

        if (b->n_blocks == 0)
                return 0;
        t = malloc(b->n_blocks * sizeof(*t));
        if (!t)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_blocks; i++)
                t[i] = (struct store_block) {
                        .end_ns = (uint64_t) ((int64_t) b->blocks[i].end_mono_ns + b->wall_minus_mono_ns),
                        .duration_ns = b->blocks[i].duration_ns,
                        .sample = b->blocks[i].entry,
                        .state = b->entries[b->blocks[i].entry].key.state,
                };
        return store_drain_offtime(w->store, t, b->n_blocks);
}

static int write_drain(writer *w, struct job *j, struct writer_result *res) {
        const struct drain_batch *b = &j->batch;
        /* tids are unique among the threads alive, so one map serves a drain */
        _cleanup_(thread_names_freep) hashmap *names = hashmap_new_u64();
        struct writer_stats stats;
        int r;

        pthread_mutex_lock(&w->lock);
        stats = w->stats;
        pthread_mutex_unlock(&w->lock);

        w->unresolved = (struct writer_unresolved) {};
        w->deferred = (struct writer_deferred) {};
        w->n_sampled = 0;
        w->sampled_seen = hashmap_free(w->sampled_seen);
        w->sampled_seen = hashmap_new_u64(); /* NULL: no notes this drain */
        runtime_names_begin_drain(w->names);
        w->file_pages_base = file_pages_bytes(w);
        r = names ? refresh_processes(w, b, j->seq) : -ENOMEM;
        if (r >= 0)
                r = store_drain_begin(w->store, j->start_ns, j->end_ns);
        if (r >= 0)
                r = store_drain_rate(w->store, b->frequency_hz);
        if (r >= 0)
                r = note_file_samples(w, b);
        for (size_t i = 0; r >= 0 && i < b->n_entries; i++) {
                const struct profd_sample_key *key = &b->entries[i].key;
                const struct proc *p = proctable_get(w->procs, key->tgid, key->start_ns);
                struct store_process sp = {
                        .pid = key->tgid,
                        .start_ns = key->start_ns,
                        /* pid 0: an interrupt woke a thread while the CPU idled */
                        .comm = p ? p->comm : key->tgid == 0 ? "swapper" : "",
                        .exe = p ? p->exe : NULL,
                        .cgroup = p ? p->cgroup : NULL,
                        .uid = p ? p->uid : 0,
                        .have_uid = p && p->have_uid,
                };
                const char *thread = NULL;
                size_t n;

                r = build_frames(w, b, key, p, &n);
                if (r < 0)
                        break;
                r = thread_comm(w, names, key->tgid, key->tid, &thread);
                if (r < 0)
                        break;
                r = store_drain_add(w->store, &(struct store_sample) {
                        .process = &sp,
                        .tid = key->tid,
                        .thread_comm = thread,
                        .cgroup_id = key->cgroup_id,
                        .kind = key->kind,
                        .state = key->state,
                        .peer_tid = key->peer_tid,
                        .frames = w->frames,
                        .n_frames = n,
                        .user_end = user_stack_end(b, key, lookup_stack(b->frames, key->user_stack)),
                        .value = b->entries[i].value,
                });
                /* a first drain resolves thousands of new addresses: the
                 * DWARF and kernel table pages they read need not all stay
                 * resident until its end; and, the frames stored, the
                 * DWARF they came from need not outlive the budget (a
                 * build host's drains meet many new -g test programs) */
                if (r >= 0 && i % DROP_PAGES_EVERY == DROP_PAGES_EVERY - 1) {
                        drop_pages_if_grown(w);
                        (void) symbolizer_bound(w->sym);
                }
        }
        if (r >= 0)
                r = write_timeline(w, b);
        if (r >= 0)
                r = write_offtime(w, b);
        for (int i = 0; r >= 0 && i < PROFD_COUNTER__MAX; i++)
                if (drop_reason_names[i])
                        r = store_drain_drop(w->store, drop_reason_names[i], stats.pending_drops[i] + b->counters[i]);
        if (r >= 0)
                r = store_drain_drop(w->store, DROP_PROCESS_VANISHED, j->vanished - w->vanished_stored);
        if (r >= 0)
                r = store_drain_drop(w->store, DROP_STORE_WRITE_FAILED, stats.failed_drains);
        if (r >= 0)
                r = store_drain_commit(w->store, &res->drain_id, &res->samples, &res->keys);

        pthread_mutex_lock(&w->lock);
        /* seen once its drain is stored or refused, as stored samples and
         * drops are: status's books balance however far behind the writer is */
        w->stats.samples_seen += b->counters[PROFD_CNT_SAMPLES];
        w->stats.idle_samples += b->counters[PROFD_CNT_IDLE];
        if (r < 0) {
                store_drain_abort(w->store);
                /* Locations of the rolled back drain may be marked stored. */
                (void) symbolizer_forget_stored(w->sym);
                w->stats.failed_drains++;
                for (int i = 0; i < PROFD_COUNTER__MAX; i++)
                        w->stats.pending_drops[i] += b->counters[i];
        } else {
                w->vanished_stored = j->vanished;
                w->stats.deferred.frames += w->deferred.frames;
                w->stats.deferred.lines_added += w->deferred.lines_added;
                w->stats.deferred.not_kept += w->deferred.not_kept;
                w->stats.unresolved.no_symbols += w->unresolved.no_symbols;
                w->stats.unresolved.no_file += w->unresolved.no_file;
                w->stats.unresolved.jit_without_map += w->unresolved.jit_without_map;
                w->stats.unresolved.unknown_mapping += w->unresolved.unknown_mapping;
                w->stats.unresolved.python_no_runtime += w->unresolved.python_no_runtime;
                w->stats.unresolved.python_exited += w->unresolved.python_exited;
                for (int i = 0; i < _PYTHON_CODE_REASON_MAX; i++)
                        w->stats.unresolved.python[i] += w->unresolved.python[i];
                w->stats.unresolved.hotspot_no_runtime += w->unresolved.hotspot_no_runtime;
                w->stats.unresolved.hotspot_exited += w->unresolved.hotspot_exited;
                for (int i = 0; i < _HOTSPOT_CODE_REASON_MAX; i++)
                        w->stats.unresolved.hotspot[i] += w->unresolved.hotspot[i];
                /* only what was stored: drains may have failed meanwhile */
                w->stats.failed_drains -= stats.failed_drains;
                for (int i = 0; i < PROFD_COUNTER__MAX; i++)
                        w->stats.pending_drops[i] -= stats.pending_drops[i];
        }
        pthread_mutex_unlock(&w->lock);
        /* the files went through whether or not the drain was stored */
        w->sampled_seen = hashmap_free(w->sampled_seen);
        if (w->n_sampled > 0) {
                res->sampled = malloc(w->n_sampled * sizeof(*w->sampled));
                if (res->sampled) {
                        memcpy(res->sampled, w->sampled, w->n_sampled * sizeof(*w->sampled));
                        res->n_sampled = w->n_sampled;
                }
        }
        /* The disk the DWARF copies take (next to the store) is the
         * store's first: give it back; DWARF is read into the heap until
         * there is room again. */
        if (r == -ENOSPC || r == -EDQUOT) {
                int64_t freed = symbolizer_release_copies(w->sym);

                if (freed > 0)
                        log_info("The store's disk is full: gave back %" PRId64 " KiB of DWARF copies.", freed >> 10);
        }
        return r;
}

/* Changes when kernel code comes or goes: BPF programs (their symbols are
 * bpf_prog_TAG_NAME in kallsyms) or modules. Cheap: a syscall per program and
 * one small file, against ~150 ms to read kallsyms itself. */
static uint64_t kernel_code_signature(void) {
        _cleanup_free_ char *modules = NULL;
        uint64_t h = 0;
        __u32 id = 0;

        while (bpf_prog_get_next_id(id, &id) == 0)
                h = hash_u64(h ^ id);
        if (read_full_file("/proc/modules", &modules) >= 0)
                h ^= hash_bytes(modules, strlen(modules));
        return h;
}

/* Whether a drain's kernel frames need the kernel's table read again, now
 * that kernel code came or went since it was read: a frame the table may
 * name wrongly (kernel_table_covers) is outside the image's text and
 * profd's own programs. */
static bool drain_needs_kallsyms(writer *w, const struct drain_batch *b) {
        const struct kernel_range *own;
        size_t n_own;

        /* set once (writer_set_own_code), never changed after */
        pthread_mutex_lock(&w->lock);
        own = w->own_code;
        n_own = w->n_own_code;
        pthread_mutex_unlock(&w->lock);
        for (size_t i = 0; i < b->n_entries; i++) {
                const struct stack_trace *ks = lookup_stack(b->frames, b->entries[i].key.kernel_stack);

                for (size_t k = 0; ks && k < ks->n; k++)
                        if (!symbolizer_kernel_covers(w->sym, own, n_own, ks->ips[k]))
                                return true;
        }
        return false;
}

/* Reads kallsyms at the first drain (which includes profd's own programs),
 * and again if kernel code changed since (a module or another BPF program
 * loaded) and the drain has a frame the table may not name: otherwise such
 * frames would be named after the nearest older symbol. Another program's
 * load (a CI host's tests, a container's device filter) changes the code
 * often, while nearly every drain's frames are in the image and in profd's
 * own programs (wake-ups' stacks are taken inside profd_waking); reading
 * kallsyms again set the heap's peak on the build loop (7 MiB at once). */
static void kallsyms_refresh(writer *w, const struct drain_batch *b) {
        uint64_t sig = kernel_code_signature();
        int r;

        if (sig == w->kernel_code)
                return;
        if (w->kallsyms_read && !drain_needs_kallsyms(w, b)) {
                pthread_mutex_lock(&w->lock);
                w->stats.kallsyms_kept++;
                pthread_mutex_unlock(&w->lock);
                return;
        }
        /* tried once per change of kernel code, failed or not */
        w->kernel_code = sig;
        r = symbolizer_load_kallsyms(w->sym, "/proc/kallsyms");
        if (r < 0 && !w->kallsyms_read)
                log_warning_errno(r, "Cannot read kernel symbols from /proc/kallsyms, kernel frames stay unresolved: %m");
        else if (r < 0)
                log_warning_errno(r, "Cannot read kernel symbols again, keeping the old ones: %m");
        else {
                w->kallsyms_read = true;
                pthread_mutex_lock(&w->lock);
                w->stats.kallsyms_reads++;
                pthread_mutex_unlock(&w->lock);
        }
}

static void job_free(struct job *j) {
        if (j) {
                free(j->result.sampled);
                free(j->found);
                runtime_names_read_done(&j->read);
                for (size_t i = 0; j->debug_dirs && j->debug_dirs[i]; i++)
                        free(j->debug_dirs[i]);
                free(j->debug_dirs);
                proc_free(j->proc);
                drain_batch_done(&j->batch);
                free(j);
        }
}

static uint64_t monotonic_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

/* Whether background work between drains (retention, the conversion of an
 * old store) must stop now: a drain is queued, profd stops, or its budget
 * (deadline, monotonic) is spent. */
static bool background_must_yield(writer *w, uint64_t deadline) {
        bool waiting;

        pthread_mutex_lock(&w->lock);
        waiting = w->drains_queued > 0;
        pthread_mutex_unlock(&w->lock);
        return waiting || workqueue_stopping(w->queue) || monotonic_ns() >= deadline;
}

/* Retention steps until nothing is due, the budget is spent, or a drain
 * waits. now_ns: the drain's end, on the clock drains are stamped with. */
static void run_retention(writer *w, uint64_t now_ns) {
        uint64_t deadline = monotonic_ns() + RETENTION_BUDGET_NS;

        if (!w->ret)
                return;
        for (;;) {
                bool forget = false;
                int r = retention_step(w->ret, now_ns, &forget);

                if (forget) {
                        store_forget_ids(w->store);
                        (void) symbolizer_forget_stored(w->sym);
                }
                if (r <= 0 || background_must_yield(w, deadline))
                        break; /* done, failed (logged) or yielding: tried again after the next drain */
        }
        pthread_mutex_lock(&w->lock);
        retention_get_totals(w->ret, &w->stats.retention);
        pthread_mutex_unlock(&w->lock);
}

/* Work on schema 8's conversion after each drain, at most: half the
 * default interval, so converting an old store takes at most half a CPU
 * while it lasts; steps stop sooner when a drain is queued, so a drain
 * waits for one step at most (about 50 ms). The first steps come after
 * the first drain, not at start: there they would compete with loading
 * the BPF programs for the CPU and delay READY (docs/performance.md). */
#define MIGRATE_BUDGET_NS (5000ULL * 1000000ULL)

/* Steps of the conversion of schema 7's samples (store_migrate_step) until
 * none is left, the budget is spent, a drain waits or profd stops. */
static void run_migration(writer *w) {
        uint64_t deadline = monotonic_ns() + MIGRATE_BUDGET_NS;

        if (w->migrated)
                return;
        for (;;) {
                int r = store_migrate_step(w->store, NULL, NULL);

                if (r == 0)
                        w->migrated = true;
                if (r <= 0 || background_must_yield(w, deadline))
                        break; /* done, failed (logged) or yielding: tried again after the next drain */
        }
}

static void apply_settings(writer *w, struct job *j) {
        symbolizer_set_cache_budget(w->sym, j->symbol_cache_bytes);
        w->dwarf_min_samples = j->dwarf_min_samples;
        if (symbolizer_set_debug_dirs(w->sym, (const char *const *) j->debug_dirs) < 0)
                log_oom();
        if (w->ret)
                retention_configure(w->ret, &j->retention);
        else if (retention_open(store_path(w->store), &j->retention, &w->ret) < 0)
                log_error("Retention is off: the store grows until profd is restarted.");
        pthread_mutex_lock(&w->lock);
        w->stats.retention_on = w->ret != NULL;
        if (w->ret)
                retention_get_totals(w->ret, &w->stats.retention);
        pthread_mutex_unlock(&w->lock);
}

/* A drain: stored, handed back to the loop (the flush waiting for it),
 * then retention's turn. */
/* The symbolizer's marks before a trim, for proctable_foreach_file. */
static void mark_mapped(const sym_file *f, void *userdata) {
        symbolizer_mark_mapped(userdata, f);
}

/* Whether the naming cache should still check a process's code objects
 * against reuse: not once the table found it gone. One the table never
 * knew is asked by its pid (a reused pid fails the reader's identity
 * check instead). */
static bool names_alive(void *userdata, uint32_t pid, uint64_t start_ns) {
        writer *w = userdata;
        const struct proc *p = proctable_get(w->procs, pid, start_ns);

        if (p)
                return !p->gone && p->exited_seq == 0;
        return kill((pid_t) pid, 0) == 0 || errno == EPERM;
}

static void run_drain(writer *w, struct job *j) {
        uint64_t end_ns = j->end_ns;
        struct writer_result *res = &j->result;
        int r;

        *res = (struct writer_result) { .seq = j->seq };
        kallsyms_refresh(w, &j->batch);
        r = write_drain(w, j, res);
        /* the drain's frames are stored: names of processes gone for a
         * while, and those past the budget, may go */
        runtime_names_end_drain(w->names, names_alive, w);
        if (r < 0) {
                res->error = r;
                log_error_errno(r, "Failed to store a drain of %zu keys (lost; counted as store_write_failed): %m",
                                j->batch.n_entries);
        } else
                log_debug("Stored drain %" PRId64 ": %zu keys.", res->drain_id, j->batch.n_entries);
        pthread_mutex_lock(&w->lock);
        uint64_t queued = w->next_seq;
        pthread_mutex_unlock(&w->lock);
        proctable_prune(w->procs, j->seq, queued);
        /* keep the symbol cache within its budget, and drop the files no
         * process still known maps; the marks keep the files of the
         * processes still known, so the generation moves only if a trim
         * ever runs without them (then their files are read again) */
        symbolizer_mark_begin(w->sym);
        proctable_foreach_file(w->procs, mark_mapped, w->sym);
        uint64_t gen = symbolizer_generation(w->sym);
        (void) symbolizer_trim(w->sym);
        if (symbolizer_generation(w->sym) != gen)
                proctable_reload_files(w->procs);
        /* the batch is done with: not held until the loop pops the result */
        drain_batch_done(&j->batch);
        workqueue_complete(w->queue, &j->item); /* the loop's from here */
        run_retention(w, end_ns);
        run_migration(w);
        /* the pages SQLite caches are worth keeping within a drain, not
         * for the next one an interval later, which reads them again
         * from the kernel's page cache (the writer's stayed at its 2 MiB
         * between drains) */
        store_release_memory(w->store);
        if (w->ret)
                retention_release_memory(w->ret);
        /* once a drain, so that profd's RSS between drains is what it
         * holds, not the most it held: the free chunks left in the middle
         * of the arenas by the drain, a symbol cache eviction, retention
         * or a batch of unwind tables stay resident until trimmed */
        heap_trim();
        w->trim_due = false;
}

/* The queue's ops->run, on the writer thread. */
static void writer_run(workqueue_item *item, void *thread_data, void *userdata) {
        struct job *j = container_of(item, struct job, item);
        writer *w = userdata;
        int r;

        if (j->type == JOB_SETTINGS)
                apply_settings(w, j);
        else if (j->type == JOB_RUNTIME_CODE) {
                r = runtime_names_learn_read(w->names, j->pid, j->start_ns, j->found, j->bias, j->rt_id, j->code,
                                             &j->read);
                if (r < 0)
                        log_debug_errno(r, "Failed to read a code object of process %" PRIu32 ", ignoring: %m", j->pid);
        } else if (j->type == JOB_LEARN) {
                r = proctable_add(w->procs, TAKE_PTR(j->proc));
                if (r < 0)
                        log_warning_errno(r, "Failed to record a process, ignoring: %m");
                w->trim_due = true;
        } else {
                pthread_mutex_lock(&w->lock);
                w->drains_queued--;
                pthread_mutex_unlock(&w->lock);
                run_drain(w, TAKE_PTR(j));
        }
        job_free(j);
        pthread_mutex_lock(&w->lock);
        w->stats.processes_tracked = proctable_size(w->procs);
        w->stats.symbol_cache_bytes = symbolizer_cache_bytes(w->sym);
        w->stats.symbol_mapped_bytes = symbolizer_mapped_bytes(w->sym);
        w->stats.symbol_peak_bytes = symbolizer_peak_bytes(w->sym);
        w->stats.jit_map_entries_dropped = proctable_jit_entries_dropped(w->procs);
        runtime_names_get_stats(w->names, &w->stats.runtime_names);
        pthread_mutex_unlock(&w->lock);
}

static void writer_release(workqueue_item *item) {
        job_free(container_of(item, struct job, item));
}

/* The queue's ops->idle, on the writer thread once it waited
 * WRITER_IDLE_TRIM_MS for a job: a batch of processes recorded reads their
 * files' symbol tables, and frees what reading them took (libelf's copies
 * of the tables, 5 MiB for libjvm's); given back now, not at the next
 * drain's trim. */
static void writer_idle(void *thread_data, void *userdata) {
        writer *w = userdata;

        if (w->trim_due && heap_trim_idle())
                w->trim_due = false;
}

static const struct workqueue_ops writer_ops = {
        .run = writer_run,
        .release = writer_release,
        .idle = writer_idle,
        .idle_ms = WRITER_IDLE_TRIM_MS,
};

/* Queues j; the writer may run and free it at once. Returns its sequence
 * number. */
/* How the process table reads a mapped file's symbols: through the
 * writer's symbolizer (proctable_new). */
static int load_file(void *userdata, int fd, const char *open_path, const char *root_prefix,
                     const char *display_path, const sym_file **ret) {
        if (fd >= 0)
                return symbolizer_load_file_fd(userdata, fd, root_prefix, display_path, ret);
        return symbolizer_load_file_at(userdata, open_path, root_prefix, display_path, ret);
}

/* How it finds the symbols of a file an earlier snapshot opened
 * (proctable_set_lookup). */
static int lookup_file(void *userdata, const struct file_key *key, const sym_file **ret) {
        return symbolizer_lookup_key(userdata, key, ret);
}

static uint64_t enqueue(writer *w, struct job *j) {
        uint64_t seq;

        pthread_mutex_lock(&w->lock);
        seq = j->seq = ++w->next_seq;
        if (j->type == JOB_DRAIN)
                w->drains_queued++;
        pthread_mutex_unlock(&w->lock);
        /* A process's record and a runtime's code object hold what they
         * need (the files open, the object read): they wait for a batch.
         * A drain or settings take them all in order at once. */
        if (j->type == JOB_LEARN || j->type == JOB_RUNTIME_CODE)
                workqueue_submit_within(w->queue, &j->item, WRITER_BATCH_MS);
        else
                workqueue_submit(w->queue, &j->item);
        return seq;
}

/* How long the event loop keeps a process's /proc/PID/mem open after its
 * last code object's read (struct runtime_names_session): a JVM starting
 * meets hundreds of methods a second, in bursts; an exited one's handle
 * holds only its mm_struct, and goes at the next drain or event. */
#define NAMES_HANDLE_IDLE_NS (1000 * NSEC_PER_MSEC)

/* The naming cache's reader (struct runtime_names_reader): the process's
 * /proc/PID/mem, held open while it is used, checked to be the instance
 * (pid, start_ns) once opened (the fd then keeps reading that process). */
/* Whether pid is the instance that started at start_ns. */
static bool is_instance(const writer *w, uint32_t pid, uint64_t start_ns) {
        char path[PATH_MAX];
        _cleanup_free_ char *stat = NULL;
        long hz = sysconf(_SC_CLK_TCK);
        uint64_t ticks;

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/stat", w->proc_root, pid);
        return hz > 0 && read_full_file(path, &stat) >= 0 && procstat_parse_starttime(stat, &ticks) >= 0 &&
               ticks == start_ns / (NSEC_PER_SEC / (uint64_t) hz);
}

static int mem_open(void *userdata, uint32_t pid, uint64_t start_ns) {
        writer *w = userdata;
        char path[PATH_MAX];
        int fd;

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/mem", w->proc_root, pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
        if (!is_instance(w, pid, start_ns)) {
                close(fd);
                return -ESRCH;
        }
        return fd;
}

/* File mappings a process's code objects are looked for in, at most: a
 * JVM maps a few hundred files; one that maps thousands (a search
 * engine's index) has its objects past these read as any other's. */
#define NAMES_FILES_MAX 4096

/* The reader's file mappings (struct runtime_names_reader.files): the
 * process's private file mappings (a runtime's objects in a file are in
 * its data, copied on write; a shared mapping is a file's bytes, written
 * by whoever maps it) from its maps, then its stat, so that the list read
 * is the instance's (a pid reused between the two would have another
 * start). */
static int mem_files(void *userdata, uint32_t pid, uint64_t start_ns, struct runtime_names_file **ret,
                     size_t *ret_n) {
        writer *w = userdata;
        char path[PATH_MAX];
        _cleanup_free_ char *maps = NULL;
        _cleanup_free_ struct runtime_names_file *files = NULL;
        size_t n = 0, cap = 0;
        int r;

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", w->proc_root, pid);
        r = read_full_file(path, &maps);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        for (char *line = maps, *next; line && *line && n < NAMES_FILES_MAX; line = next) {
                struct procmap m;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (procmap_parse_line(line, &m) < 0)
                        continue;
                if (m.path && m.inode != 0 && !m.shared) {
                        if (array_grow((void **) &files, &cap, n + 1, sizeof(*files)) < 0) {
                                procmap_done(&m);
                                return -ENOMEM;
                        }
                        files[n++] = (struct runtime_names_file) {
                                .start = m.start, .end = m.end, .offset = m.offset,
                                .id = { makedev(m.dev_major, m.dev_minor), m.inode },
                        };
                }
                procmap_done(&m);
        }
        if (!is_instance(w, pid, start_ns))
                return -ESRCH;
        *ret = TAKE_PTR(files);
        *ret_n = n;
        return 0;
}

static int mem_read(void *userdata, int handle, uint64_t addr, void *buf, size_t size) {
        size_t done = 0;

        (void) userdata;
        if (addr > INT64_MAX || size > INT64_MAX - addr)
                return -EFAULT;
        while (done < size) {
                ssize_t n = pread(handle, (uint8_t *) buf + done, size - done, (off_t) (addr + done));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == ESRCH ? -ESRCH : -EIO;
                if (n == 0)  /* its memory is gone: the process exited */
                        return -ESRCH;
                done += (size_t) n;
        }
        return 0;
}

static void mem_close(void *userdata, int handle) {
        (void) userdata;
        close(handle);
}

int writer_new(const char *store_path, const char *proc_root, uint64_t symbol_cache_budget, bool debuginfod,
               writer **ret) {
        _cleanup_(writer_freep) writer *w = calloc(1, sizeof(*w));
        int r;

        if (!w)
                return log_oom();
        w->statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
        if (w->statm_fd < 0)
                log_debug_errno(-errno, "Failed to open /proc/self/statm, pages of symbol tables are given back "
                                "every %u keys: %m", DROP_PAGES_EVERY);
        pthread_mutex_init(&w->lock, NULL);
        r = store_open(store_path, &w->store);
        if (r < 0)
                return r;
        r = symbolizer_new(&w->sym);
        if (r < 0)
                return log_oom();
        symbolizer_set_cache_budget(w->sym, symbol_cache_budget);
        /* DWARF copies go next to the store: a disk profd writes anyway. */
        {
                _cleanup_free_ char *dir = strdup(store_path);

                if (!dir || symbolizer_set_scratch_dir(w->sym, dirname(dir)) < 0)
                        return log_oom();
        }
        if (debuginfod) {
                r = symbolizer_enable_debuginfod(w->sym);
                if (r == -ENOMEM)
                        return log_oom();
                if (r < 0) /* libdebuginfod missing: said why; local files still serve */
                        log_warning_errno(r, "Debug files are looked up without debuginfod.");
        }
        /* kallsyms is read by the first drain (kallsyms_refresh), on this
         * thread: read here, before profd's own programs are loaded, it
         * was always read again there, and cost READY 50-60 ms */
        r = proctable_new(load_file, w->sym, proc_root, &w->procs);
        if (r < 0)
                return log_oom();
        proctable_set_lookup(w->procs, lookup_file);
        w->proc_root = strdup(proc_root);
        if (!w->proc_root)
                return log_oom();
        r = runtime_names_new(named_runtimes, ELEMENTSOF(named_runtimes),
                              &(struct runtime_names_reader) { mem_open, mem_read, mem_close, mem_files, w },
                              RUNTIME_NAMES_BUDGET, &w->names);
        if (r < 0)
                return log_oom();
        runtime_names_session_init(&w->names_session);
        /* one thread: jobs are worked in the order they came */
        r = workqueue_new("profd-writer", &writer_ops, w, 1, &w->queue);
        if (r < 0)
                return r;
        r = workqueue_start_thread(w->queue, NULL);
        if (r < 0)
                return log_error_errno(r, "Failed to start the writer thread: %m");
        *ret = TAKE_PTR(w);
        return 0;
}

writer *writer_free(writer *w) {
        if (!w)
                return NULL;
        /* every queued job is done first: no drain is lost at exit */
        if (w->queue)
                workqueue_stop(w->queue, true);
        /* results the loop did not pop */
        w->queue = workqueue_free(w->queue);
        proctable_free(w->procs);
        if (w->names)
                runtime_names_session_done(w->names, &w->names_session);
        runtime_names_free(w->names);
        free(w->proc_root);
        free(w->own_code);
        free(w->build_ids);
        symbolizer_free(w->sym);
        retention_close(w->ret);
        store_close(w->store);
        free(w->frames);
        free(w->lines);
        free(w->sampled);
        hashmap_free(w->sampled_seen);
        safe_close(w->statm_fd);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
}

int writer_fd(const writer *w) {
        return workqueue_fd(w->queue);
}

bool writer_result_pop(writer *w, struct writer_result *ret) {
        workqueue_item *item = workqueue_pop_done(w->queue);
        struct job *j;

        if (!item)
                return false;
        j = container_of(item, struct job, item);
        *ret = j->result;
        j->result.sampled = NULL; /* the caller's */
        job_free(j);
        return true;
}

int writer_learn(writer *w, struct proc *snapshot) {
        struct job *j = calloc(1, sizeof(*j));

        if (!j) {
                proc_free(snapshot);
                return -ENOMEM;
        }
        j->type = JOB_LEARN;
        j->proc = snapshot;
        (void) enqueue(w, j);
        return 0;
}

int writer_drain(writer *w, struct drain_batch *b, uint64_t start_ns, uint64_t end_ns, uint64_t vanished,
                 uint64_t *ret_seq) {
        struct job *j = calloc(1, sizeof(*j));

        if (!j) {
                drain_batch_done(b);
                return -ENOMEM;
        }
        /* the event loop's thread, as writer_runtime_code's */
        runtime_names_session_close(w->names, &w->names_session, NAMES_HANDLE_IDLE_NS);
        j->type = JOB_DRAIN;
        j->batch = *b;
        *b = (struct drain_batch) {};
        j->start_ns = start_ns;
        j->end_ns = end_ns;
        j->vanished = vanished;
        *ret_seq = enqueue(w, j);
        return 0;
}

int writer_runtime_code(writer *w, uint32_t pid, uint64_t start_ns, uint64_t bias, unsigned rt_id, uint64_t code,
                        const struct unwind_runtime_found *found) {
        struct job *j = calloc(1, sizeof(*j));
        int r;

        if (!j)
                return -ENOMEM;
        j->found = malloc(sizeof(*j->found));
        if (!j->found) {
                free(j);
                return -ENOMEM;
        }
        *j->found = *found;
        /* read now, on the caller's thread (a few preads): the writer may
         * be busy with a drain for longer than a short script lives */
        runtime_names_session_close(w->names, &w->names_session, NAMES_HANDLE_IDLE_NS);
        r = runtime_names_read(w->names, &w->names_session, pid, start_ns, found, bias, rt_id, code, &j->read);
        if (r < 0) {
                job_free(j);
                return r;
        }
        j->type = JOB_RUNTIME_CODE;
        j->pid = pid;
        j->start_ns = start_ns;
        j->bias = bias;
        j->rt_id = rt_id;
        j->code = code;
        (void) enqueue(w, j);
        return 0;
}

void writer_set_own_code(writer *w, struct kernel_range *ranges, size_t n) {
        pthread_mutex_lock(&w->lock);
        if (w->own_code) {
                /* the writer thread reads it without the lock */
                pthread_mutex_unlock(&w->lock);
                free(ranges);
                return;
        }
        w->own_code = ranges;
        w->n_own_code = n;
        pthread_mutex_unlock(&w->lock);
}

void writer_get_stats(writer *w, struct writer_stats *ret) {
        pthread_mutex_lock(&w->lock);
        *ret = w->stats;
        pthread_mutex_unlock(&w->lock);
}

int writer_configure(writer *w, const struct conf *settings) {
        struct job *j = calloc(1, sizeof(*j));
        size_t n = 0;

        if (!j)
                return -ENOMEM;
        j->type = JOB_SETTINGS;
        j->symbol_cache_bytes = settings->symbol_cache_bytes;
        j->dwarf_min_samples = settings->dwarf_min_samples;
        j->retention = (struct retention_settings) {
                .raw_ns = settings->retention_raw_ns,
                .m1_ns = settings->retention_1m_ns,
                .all_ns = settings->retention_ns,
                .max_bytes = settings->max_store_size,
                .fold_ppm = settings->retention_fold_ppm,
                .timeline_ns = settings->timeline_retention_ns,
                .timeline_max_bytes = settings->timeline_max_size,
        };
        while (settings->debug_dirs && settings->debug_dirs[n])
                n++;
        j->debug_dirs = calloc(n + 1, sizeof(char *));
        if (!j->debug_dirs) {
                job_free(j);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                if (!(j->debug_dirs[i] = strdup(settings->debug_dirs[i]))) {
                        job_free(j);
                        return -ENOMEM;
                }
        (void) enqueue(w, j);
        return 0;
}
