/* The unwinder's per-process entries (unwind-procs.h). */
#include "unwind-procs.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/sysmacros.h>

#include <bpf/bpf.h>

#include "hotspot.h"
#include "log.h"
#include "macro.h"
#include "mapfile.h"
#include "procmaps.h"
#include "unwind-files.h"
#include "unwind-table.h"

static uint32_t *mfree_u32(uint32_t *p) {
        free(p);
        return NULL;
}

static void proc_release_refs(unwinder *u, struct ufile **files, size_t n, uint64_t now) {
        for (size_t i = 0; i < n; i++)
                if (files[i])
                        ufile_unref(u, files[i], now);
        free(files);
}

/* After every change to unwind_procs, before the slice an entry named
 * is released: a walker that found the epoch unchanged reuses what its
 * last lookup found (bpf/maps.bpf.h), and it can only be a slice still
 * in its grace. */
static void procs_changed(unwinder *u) {
        if (u->maps.procs_epoch)
                __atomic_add_fetch(u->maps.procs_epoch, 1, __ATOMIC_SEQ_CST);
}

/* A JVM's VM structs are read again this long after its code cache was
 * found not set up, then at doubling intervals, HOTSPOT_TRIES reads in all
 * (10 s): the java launcher dlopens libjvm after its exec, and the VM
 * makes its code heaps some tens of milliseconds later. */
#define HOTSPOT_RETRY_FIRST_NS (10ULL * NSEC_PER_MSEC)
#define HOTSPOT_TRIES 10

/* Forgets a process: its entry, its slice (after the grace), its files,
 * its JVM's walker slot. */
static void proc_drop(unwinder *u, struct uproc *p, bool delete_entry) {
        uint64_t now = mono_ns();

        if (delete_entry) {
                (void) bpf_map_delete_elem(u->maps.procs_fd, &p->tgid);
                procs_changed(u);
        }
        unwinder_runtime_remove(u, p->hs_slot);
        if (p->maps_n > 0)
                rangealloc_release(u->maps_alloc, p->maps_off, p->maps_n, now);
        proc_release_refs(u, p->files, p->n_files, now);
        (void) hashmap_remove(u->procs, UINT64_TO_KEY(p->tgid));
        free(p);
}

/* The start of process tgid in clock ticks (/proc/PID/stat). Returns 0 or
 * a negative errno (gone). */
static int proc_start_ticks(const unwinder *u, uint32_t tgid, uint64_t *ret_ticks) {
        _cleanup_free_ char *text = NULL;
        char path[PATH_MAX];
        int r;

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/stat", u->proc_root, tgid);
        r = read_full_file(path, &text);
        if (r < 0)
                return r;
        return procstat_parse_starttime(text, ret_ticks);
}

/* Is the process in /proc still the instance (start, tick_ns)? */
static bool proc_alive(const unwinder *u, uint32_t tgid, uint64_t start, uint32_t tick_ns) {
        uint64_t ticks;

        if (proc_start_ticks(u, tgid, &ticks) < 0)
                return false;
        return (tick_ns ? start : start / u->tick_ns) == ticks;
}

/* A process's executable mappings as read from its maps file, each with
 * the file whose table it uses (a reference, or NULL: frame pointers). */
struct proc_mappings {
        unwinder *u;
        struct profd_unwind_mapping *out;
        struct ufile **files;
        size_t n, cap;
        char *text;            /* the maps file as read, for the event loop (notify_loaded) */
};

/* Drops the references the mappings still hold and frees the arrays. */
static void proc_mappings_done(struct proc_mappings *pm) {
        for (size_t i = 0; pm->files && i < pm->n; i++)
                if (pm->files[i])
                        ufile_unref(pm->u, pm->files[i], mono_ns());
        free(pm->files);
        free(pm->out);
        free(pm->text);
        *pm = (struct proc_mappings) {};
}

/* Room for one more mapping. Returns 0 or -ENOMEM. */
static int proc_mappings_grow(struct proc_mappings *pm) {
        size_t nc;
        void *a, *b;

        if (pm->n < pm->cap)
                return 0;
        nc = pm->cap ? pm->cap * 2 : 32;
        a = realloc(pm->out, nc * sizeof(*pm->out));
        if (!a)
                return -ENOMEM;
        pm->out = a;
        b = realloc(pm->files, nc * sizeof(*pm->files));
        if (!b)
                return -ENOMEM;
        pm->files = b;
        pm->cap = nc;
        return 0;
}

/* One executable mapping of a process, and its file's identity (keyed:
 * the file was found; only for mappings of a file). */
struct exec_mapping {
        struct procmap m;
        struct file_key key;
        bool keyed;
};

/* A process's executable mappings, parsed and their files found once,
 * and references held on the cached files among them until the mappings
 * are read: room made for one of its tables must not evict the table of
 * another of its files, unused until this process maps it a moment later
 * (clang's libstdc++ evicted for its libz3, then built again and found no
 * room). */
struct exec_mappings {
        unwinder *u;
        struct exec_mapping *items;
        size_t n, cap;
        struct ufile **pins;
        size_t n_pins, cap_pins;
};

static void exec_mappings_done(struct exec_mappings *em) {
        for (size_t i = 0; i < em->n; i++)
                procmap_done(&em->items[i].m);
        free(em->items);
        for (size_t i = 0; i < em->n_pins; i++)
                ufile_unref(em->u, em->pins[i], mono_ns());
        free(em->pins);
}

static bool is_file_mapping(const struct procmap *m) {
        return m->path && m->path[0] == '/' && m->inode != 0;
}

/* Parses the executable mappings of maps text (a process's
 * /proc/PID/maps, cut into lines on the way; at most MAX_PROC_MAPPINGS),
 * finds their files and pins the cached ones. Returns 0 or -ENOMEM. */
static int exec_mappings_read(unwinder *u, uint32_t tgid, char *text, struct exec_mappings *em) {
        for (char *line = text, *next; line && *line && em->n < MAX_PROC_MAPPINGS; line = next) {
                struct exec_mapping *e;
                struct ufile *f;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (array_grow((void **) &em->items, &em->cap, em->n + 1, sizeof(*em->items)) < 0)
                        return -ENOMEM;
                e = &em->items[em->n];
                *e = (struct exec_mapping) {};
                if (procmap_parse_exec_line(line, &e->m) <= 0)
                        continue; /* unparsable, or not executable (no path copied) */
                em->n++;
                if (is_file_mapping(&e->m)) {
                        struct file_ident id = { makedev(e->m.dev_major, e->m.dev_minor), e->m.inode };
                        struct mapfile_paths paths;

                        e->keyed = mapfile_key_at_path(e->m.path, &id, &e->key) >= 0;
                        if (!e->keyed) {
                                mapfile_paths(u->proc_root, tgid, e->m.start, e->m.end, e->m.path, &paths);
                                e->keyed = mapfile_key(&paths, &e->key) >= 0;
                        }
                }
                if (e->keyed && hashmap_get(u->files, &e->key, (void **) &f) == 0) {
                        if (array_grow((void **) &em->pins, &em->cap_pins, em->n_pins + 1, sizeof(*em->pins)) < 0)
                                return -ENOMEM;
                        ufile_ref(u, f);
                        em->pins[em->n_pins++] = f;
                }
        }
        return 0;
}

/* The file (a reference) whose table serves mapping m, and the file
 * address the mapping starts at; *ret NULL for anonymous (JIT) and other
 * special mappings, and a vDSO whose bias is unknown: frame pointers.
 * Returns 0 or a negative errno. */
static int proc_mapping_file(unwinder *u, uint32_t tgid, const struct exec_mapping *e, struct ufile **ret,
                             uint64_t *ret_vaddr_at) {
        const struct procmap *m = &e->m;
        struct ufile *f = NULL;
        uint64_t bias;

        *ret = NULL;
        *ret_vaddr_at = 0;
        if (m->path && streq(m->path, "[vdso]")) {
                f = ufile_vdso(u);
                if (!f)
                        return 0;
                ufile_ref(u, f);
                if (unwind_mapping_bias(u->vdso_elf, m->start, 0, &bias) < 0) {
                        ufile_unref(u, f, mono_ns());
                        return 0;
                }
                *ret_vaddr_at = m->start - bias;
                *ret = f;
                return 0;
        }
        if (is_file_mapping(m))
                return ufile_for_mapping(u, tgid, m, e->keyed ? &e->key : NULL, ret, ret_vaddr_at);
        return 0;
}

/* Reads /proc/PID/maps into pm (or takes maps, the file as the event
 * loop's snapshot read it): every executable mapping with its table.
 * Returns 0 (also for a process already gone: pm->n 0) or a negative
 * errno. */
static int proc_read_mappings(unwinder *u, uint32_t tgid, const char *maps, struct proc_mappings *pm) {
        _cleanup_free_ char *text = NULL;
        _cleanup_(exec_mappings_done) struct exec_mappings em = { .u = u };
        char path[PATH_MAX];
        int r;

        if (maps) {
                /* the event loop has it: nothing to hand back */
                text = strdup(maps);
                if (!text)
                        return -ENOMEM;
        } else {
                snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", u->proc_root, tgid);
                if (read_full_file(path, &text) < 0)
                        return 0; /* gone already */
                /* kept whole for the event loop, which would read it again
                 * otherwise (notify_loaded); the parse below cuts it into lines */
                pm->text = strdup(text);
                if (!pm->text)
                        return -ENOMEM;
        }
        r = exec_mappings_read(u, tgid, text, &em);
        if (r < 0)
                return r;
        for (size_t i = 0; i < em.n; i++) {
                const struct procmap *m = &em.items[i].m;
                struct ufile *f;
                uint64_t vaddr_at;

                r = proc_mappings_grow(pm);
                if (r >= 0)
                        r = proc_mapping_file(u, tgid, &em.items[i], &f, &vaddr_at);
                if (r < 0)
                        return r;
                pm->out[pm->n] = (struct profd_unwind_mapping) {
                        .start = m->start,
                        .end = m->end,
                        .bias = m->start - vaddr_at,
                        .kind = f && f->pending ? PROFD_MAPPING_PENDING
                                : f && f->n > 0 ? PROFD_MAPPING_TABLE : PROFD_MAPPING_FP,
                        .rows_off = f ? f->off : 0,
                        .rows_n = f ? f->n : 0,
                };
                pm->files[pm->n++] = f; /* the reference taken above */
        }
        return 0;
}

/* A JVM's libjvm among a process's mappings: what discovery found in the
 * file, and its load bias. */
struct jvm_file {
        bool present;
        struct unwind_runtime_found found;
        uint64_t bias;
};

/* The process's runtime, into entry's rt_* fields: the first mapping of a
 * file where discovery found one (runtime_discover in unwind-files.c); a
 * process with two (an interpreter embedding another) hands over to the
 * first only. A JVM's (HotSpot's) walker slot is the process's, not the
 * file's: its libjvm into *jvm, for proc_jvm. */
static void proc_entry_runtime(unwinder *u, const struct proc_mappings *pm, struct profd_unwind_proc *entry,
                               struct jvm_file *jvm) {
        for (size_t i = 0; i < pm->n; i++) {
                const struct ufile *f = pm->files[i];
                struct unwind_runtime_found found;
                uint64_t bias = pm->out[i].bias;

                if (!f || !f->rt_slot || unwinder_runtime(u, f->rt_slot, &found) < 0)
                        continue;
                if (found.id == UNWIND_RUNTIME_HOTSPOT) {
                        *jvm = (struct jvm_file) { .present = true, .found = found, .bias = bias };
                        return;
                }
                entry->rt_slot = f->rt_slot;
                entry->rt_bias = bias;
                entry->rt_lo = found.lo + bias;
                entry->rt_hi = found.hi + bias;
                if (found.cold_lo < found.cold_hi) {
                        entry->rt_cold_lo = found.cold_lo + bias;
                        entry->rt_cold_hi = found.cold_hi + bias;
                }
                return;
        }
}

/* A JVM's walker slot as proc_jvm leaves it for the process's next
 * struct uproc. */
struct jvm_state {
        uint32_t slot;             /* 0: none */
        uint64_t bias, lo, hi;
        unsigned tries;
        bool done;
        bool carried;              /* the slot is old's (the process's last load): old gives it up */
        bool retry;                /* read again later (a follow-up) */
};

static void count_hotspot(unwinder *u, enum hotspot_vmstructs_reason reason) {
        pthread_mutex_lock(&u->lock);
        if ((unsigned) reason < _HOTSPOT_VMSTRUCTS_REASON_MAX)
                u->stats.hotspot_tables[reason]++;
        u->stats.failures[UNWINDER_FAIL_HOTSPOT_TABLES]++;
        pthread_mutex_unlock(&u->lock);
}

/* The walker slot of process tgid's JVM (libjvm jvm, its last load old):
 * old's while libjvm stays where it was, else made from the VM structs
 * read from the process now (hotspot_process_vmstructs). A JVM whose code
 * cache is not set up yet is read again later (js->retry), HOTSPOT_TRIES
 * times; one whose tables do not read, or describe a layout the walker
 * does not take, is counted and walked natively (its JIT frames end the
 * walk as before). Into *js; the entry's rt_* when there is a slot. */
static void proc_jvm(unwinder *u, uint32_t tgid, const struct uproc *old, const struct jvm_file *jvm,
                     struct profd_unwind_proc *entry, struct jvm_state *js) {
        enum hotspot_vmstructs_reason reason = HOTSPOT_VMSTRUCTS_OK;
        struct unwind_runtime_found found = jvm->found;
        struct hotspot_vmstructs vs;
        const char *what = NULL;
        int r;

        *js = (struct jvm_state) { .bias = jvm->bias };
        if (old && old->hs_bias == jvm->bias && old->hs_done) {
                *js = (struct jvm_state) {
                        .slot = old->hs_slot, .bias = old->hs_bias, .lo = old->hs_lo, .hi = old->hs_hi,
                        .tries = old->hs_tries, .done = true, .carried = old->hs_slot != 0,
                };
                goto entry;
        }
        if (old && old->hs_bias == jvm->bias)
                js->tries = old->hs_tries;
        r = hotspot_process_vmstructs(u->proc_root, tgid, &found, jvm->bias, &vs, &reason, &what);
        if (r == -ENOMEM)
                return; /* not the process's doing: read again at its next load */
        if (hotspot_vmstructs_pending(r, reason, what, r >= 0 ? &vs : NULL) && js->tries + 1 < HOTSPOT_TRIES) {
                log_debug("The code cache of JVM %" PRIu32 " is not set up yet (%s), reading it again later.", tgid,
                          what ?: "heaps");
                js->tries++;
                js->retry = true;
                pthread_mutex_lock(&u->lock);
                u->stats.hotspot_retries++;
                pthread_mutex_unlock(&u->lock);
                return;
        }
        js->done = true;
        if (r < 0) {
                log_debug_errno(r, "The VM structs of JVM %" PRIu32 " do not read (%s, %s), walking it natively: %m",
                                tgid, hotspot_vmstructs_reason_name(reason), what ?: "-");
                count_hotspot(u, reason);
                return;
        }
        r = hotspot_runtime_make(&vs, &found.bpf, &js->lo, &js->hi);
        if (r < 0) {
                log_debug("JVM %" PRIu32 " (JDK %d) has a layout HotSpot's walker does not take, walking it natively.",
                          tgid, vs.version_major);
                count_failure(u, UNWINDER_FAIL_RUNTIME_UNSUPPORTED);
                return;
        }
        found.lo = found.hi = found.cold_lo = found.cold_hi = 0;
        if (unwinder_runtime_add(u, &found, &js->slot) < 0)
                return; /* counted */
        log_debug("JVM %" PRIu32 " (JDK %d.%d.%d): code cache [0x%" PRIx64 ", 0x%" PRIx64 "), %u heaps, walker slot %"
                  PRIu32 ".", tgid, vs.version_major, vs.version_minor, vs.version_security, js->lo, js->hi, vs.n_heaps,
                  js->slot);
        pthread_mutex_lock(&u->lock);
        u->stats.hotspot_jvms++;
        pthread_mutex_unlock(&u->lock);
entry:
        if (js->slot) {
                entry->rt_slot = (uint16_t) js->slot;
                entry->rt_bias = js->bias;
                entry->rt_lo = js->lo;
                entry->rt_hi = js->hi;
        }
}

/* Copies the runtime part of a process's entry (proc_entry_runtime). */
static void entry_copy_runtime(struct profd_unwind_proc *to, const struct profd_unwind_proc *from) {
        to->rt_lo = from->rt_lo;
        to->rt_hi = from->rt_hi;
        to->rt_cold_lo = from->rt_cold_lo;
        to->rt_cold_hi = from->rt_cold_hi;
        to->rt_bias = from->rt_bias;
        to->rt_slot = from->rt_slot;
}

/* Writes pm's mappings into the shared array and publishes the process's
 * entry to the BPF programs. Returns 1 and the mappings' offset, 0 when
 * there was no room (counted), or a negative errno. */
static int proc_publish(unwinder *u, uint32_t tgid, struct profd_unwind_proc *entry,
                        const struct proc_mappings *pm, uint32_t *ret_off) {
        uint32_t off;
        int r;

        rangealloc_reclaim(u->maps_alloc, mono_ns());
        if (rangealloc_alloc(u->maps_alloc, (uint32_t) pm->n, &off) < 0) {
                count_failure(u, UNWINDER_FAIL_MAPS_FULL);
                return 0;
        }
        r = unwinder_array_update(u, u->maps.maps_fd, sizeof(*pm->out), off, pm->out, pm->n);
        if (r < 0) {
                rangealloc_release(u->maps_alloc, off, (uint32_t) pm->n, mono_ns());
                log_debug_errno(r, "Failed to write the unwind mappings of pid %" PRIu32 ": %m", tgid);
                return r;
        }
        entry->maps_off = off;
        entry->maps_n = (uint32_t) pm->n;
        /* the update is a syscall: the rows and mappings written above are
         * visible before any program finds the entry */
        if (bpf_map_update_elem(u->maps.procs_fd, &tgid, entry, BPF_ANY) < 0) {
                r = negative_errno();
                rangealloc_release(u->maps_alloc, off, (uint32_t) pm->n, mono_ns());
                count_failure(u, UNWINDER_FAIL_PROCS_FULL);
                log_debug_errno(r, "Failed to publish the unwind tables of pid %" PRIu32 ", ignoring: %m", tgid);
                return 0;
        }
        procs_changed(u);
        *ret_off = off;
        return 1;
}

/* Which address ranges a process maps executable: a load whose signature
 * differs from the last one's found mappings added or removed. */
static uint64_t maps_signature(const struct proc_mappings *pm) {
        uint64_t sig = 0;

        for (size_t i = 0; i < pm->n; i++)
                sig = procmap_signature_add(sig, pm->out[i].start, pm->out[i].end);
        return sig;
}

/* Why 4096: the event loop takes the list at its next turn, milliseconds
 * later; even a host starting a thousand processes a second leaves it far
 * from full. Beyond it a process keeps its announcement's mappings, and
 * frames in libraries mapped since then are counted unresolved. */
#define LOADED_MAX 4096

/* Lists instance (tgid, start) for the event loop (unwinder_take_loaded) as
 * mapping code it may not have seen, with *text, the maps file as read
 * (taken; freed if the list is full). */
static void notify_loaded(unwinder *u, uint32_t tgid, uint64_t start, uint64_t sig, char **text) {
        pthread_mutex_lock(&u->lock);
        if (u->n_loaded == u->cap_loaded && u->cap_loaded < LOADED_MAX) {
                size_t nc = u->cap_loaded ? u->cap_loaded * 2 : 64;
                struct unwinder_loaded *l = realloc(u->loaded, nc * sizeof(*l));

                if (l) {
                        u->loaded = l;
                        u->cap_loaded = nc;
                }
        }
        if (u->n_loaded < u->cap_loaded) {
                u->loaded[u->n_loaded++] = (struct unwinder_loaded) {
                        .tgid = tgid, .start_ns = start, .maps_sig = sig, .maps = TAKE_PTR(*text),
                };
                /* said once for the pass's requests (unwinder.c loaded_say):
                 * one wake-up of the event loop, not one per process */
                u->loaded_unsaid = true;
        }
        pthread_mutex_unlock(&u->lock);
        free(*text);
        *text = NULL;
}

/* How many files a process maps code of, the vDSO left out (its mappings
 * come sorted by address; a file's are next to each other). */
static unsigned count_objects(const unwinder *u, const struct proc_mappings *pm) {
        unsigned n = 0;

        for (size_t i = 0; i < pm->n; i++)
                if (pm->files[i] && pm->files[i] != u->vdso && (i == 0 || pm->files[i] != pm->files[i - 1]))
                        n++;
        return n;
}

static void followup_add(unwinder *u, uint32_t tgid, uint64_t start, unsigned tries, bool jvm);

int uproc_load(unwinder *u, uint32_t tgid, uint64_t start, uint32_t tick_ns, const char *maps) {
        _cleanup_(proc_mappings_done) struct proc_mappings pm = { .u = u };
        struct profd_unwind_proc entry = { .start_ns = start, .start_tick_ns = tick_ns, .version = ++u->versions };
        struct jvm_file jvm = {};
        struct jvm_state js = {};
        struct uproc *p, *old = NULL;
        uint64_t miss_ns = 0, miss_interval_ns = 0, sig;
        bool changed = true;
        uint32_t off;
        int r;

        r = proc_read_mappings(u, tgid, maps, &pm);
        if (r < 0 || pm.n == 0)
                return r; /* a kernel thread, or gone */
        proc_entry_runtime(u, &pm, &entry, &jvm);
        if (hashmap_get(u->procs, UINT64_TO_KEY(tgid), (void **) &old) < 0)
                old = NULL;
        if (jvm.present)
                proc_jvm(u, tgid, old && (old->tick_ns ? old->start == start / old->tick_ns || old->start == start
                                                       : old->start == start) ? old : NULL,
                         &jvm, &entry, &js);
        r = proc_publish(u, tgid, &entry, &pm, &off);
        if (r <= 0) {
                if (!js.carried)
                        unwinder_runtime_remove(u, js.slot);
                return r;
        }

        sig = maps_signature(&pm);
        if (old) {
                miss_ns = old->miss_ns;
                miss_interval_ns = old->miss_interval_ns;
                changed = old->maps_sig != sig;
                if (js.carried)
                        old->hs_slot = 0; /* the new entry's now */
                proc_drop(u, old, false);
        }
        /* An instance announced by an event (its start exact) got a snapshot
         * of its maps from the event loop then, maybe before the dynamic
         * loader had mapped its libraries: the event loop reads them again,
         * unless these are that snapshot's (pm.text NULL). */
        if (changed && tick_ns == 0 && pm.text)
                notify_loaded(u, tgid, start, sig, &pm.text);
        p = calloc(1, sizeof(*p));
        if (p) {
                *p = (struct uproc) {
                        .tgid = tgid, .start = start, .tick_ns = tick_ns,
                        .maps_off = off, .maps_n = (uint32_t) pm.n,
                        .files = pm.files, .n_files = pm.n, .loaded_ns = mono_ns(), .maps_sig = sig,
                        .n_objects = count_objects(u, &pm), .miss_ns = miss_ns, .miss_interval_ns = miss_interval_ns,
                        .hs_slot = js.slot, .hs_bias = js.bias, .hs_lo = js.lo, .hs_hi = js.hi,
                        .hs_tries = js.tries, .hs_done = js.done,
                };
                entry_copy_runtime(&p->rt, &entry);
                r = hashmap_put(u->procs, UINT64_TO_KEY(tgid), p);
                if (r >= 0) {
                        pm.files = NULL; /* the process holds the references now */
                        pm.n = 0;
                } else
                        free(p);
        } else
                r = -ENOMEM;
        if (r < 0) {
                (void) bpf_map_delete_elem(u->maps.procs_fd, &tgid);
                procs_changed(u);
                unwinder_runtime_remove(u, js.slot);
                rangealloc_release(u->maps_alloc, off, (uint32_t) pm.n, mono_ns());
                return r;
        }
        if (js.retry)
                followup_add(u, tgid, start, js.tries, true);
        pthread_mutex_lock(&u->lock);
        u->stats.requests++;
        if (maps)
                u->stats.maps_given++;
        else
                u->stats.maps_read++;
        pthread_mutex_unlock(&u->lock);
        return 0;
}

int uproc_republish(unwinder *u, uint32_t tgid) {
        struct uproc *p;
        uint64_t loaded;
        int r;

        if (hashmap_get(u->procs, UINT64_TO_KEY(tgid), (void **) &p) < 0)
                return 0;
        loaded = p->loaded_ns;
        r = uproc_load(u, tgid, p->start, p->tick_ns, NULL);
        /* not replaced: its entry still names the old rows */
        if (hashmap_get(u->procs, UINT64_TO_KEY(tgid), (void **) &p) == 0 && p->loaded_ns == loaded)
                proc_drop(u, p, true);
        return r;
}

static uint64_t miss_interval(const struct uproc *p) {
        return p->miss_interval_ns ? p->miss_interval_ns : MISS_FIRST_INTERVAL_NS;
}

/* After a reload for a miss at now: misses coming within the interval
 * double it (up to MISS_INTERVAL_NS); a miss after a quiet spell of
 * MISS_INTERVAL_NS starts again from the first interval. */
static void miss_reloaded(struct uproc *p, uint64_t now) {
        if (p->miss_ns && now - p->miss_ns < MISS_INTERVAL_NS)
                p->miss_interval_ns = MIN(2 * miss_interval(p), MISS_INTERVAL_NS);
        else
                p->miss_interval_ns = MISS_FIRST_INTERVAL_NS;
        p->miss_ns = now;
}

/* Whether a process still shows only what exec maps: its binary and the
 * dynamic loader. */
static bool awaits_libraries(const struct uproc *p) {
        return p->n_objects == 2;
}

/* jvm: its JVM's code cache is read again (tries: reads done). */
static void followup_add(unwinder *u, uint32_t tgid, uint64_t start, unsigned tries, bool jvm) {
        if (array_grow((void **) &u->followups, &u->cap_followups, u->n_followups + 1, sizeof(*u->followups)) < 0)
                return; /* a miss reads it again instead */
        u->followups[u->n_followups++] = (struct followup) {
                .tgid = tgid, .start = start, .tries = tries, .jvm = jvm,
                .due_ns = mono_ns() + (jvm ? HOTSPOT_RETRY_FIRST_NS << (tries - 1) : FOLLOWUP_FIRST_NS << tries),
        };
}

/* The earliest follow-up, or UINT64_MAX. */
uint64_t uproc_followup_next_ns(const unwinder *u) {
        uint64_t next = UINT64_MAX;

        for (size_t i = 0; i < u->n_followups; i++)
                next = MIN(next, u->followups[i].due_ns);
        return next;
}

/* Reads again the processes whose follow-up is due, unless they mapped
 * more since (a miss read them) or are gone; one still awaiting its
 * libraries is followed up again, FOLLOWUP_TRIES times at most. */
int uproc_followups_run(unwinder *u) {
        uint64_t now = mono_ns();
        size_t n = u->n_followups;

        for (size_t i = 0; i < n;) {
                struct followup f = u->followups[i];
                struct uproc *p = NULL;
                uint64_t loaded_ns;
                int r;

                if (f.due_ns > now) {
                        i++;
                        continue;
                }
                u->followups[i] = u->followups[--n];
                u->n_followups = n;
                if (f.jvm) {
                        /* uproc_load reads it, and follows it up again if need be */
                        if (hashmap_get(u->procs, UINT64_TO_KEY(f.tgid), (void **) &p) < 0 || p->start != f.start ||
                            p->hs_done)
                                continue;
                        r = uproc_load(u, f.tgid, p->start, p->tick_ns, NULL);
                        if (r < 0)
                                return r;
                        n = u->n_followups;
                        continue;
                }
                if (hashmap_get(u->procs, UINT64_TO_KEY(f.tgid), (void **) &p) < 0 || p->tick_ns ||
                    p->start != f.start || !awaits_libraries(p))
                        continue;
                loaded_ns = p->loaded_ns;
                r = uproc_load(u, f.tgid, f.start, 0, NULL);
                if (r < 0)
                        return r;
                if (hashmap_get(u->procs, UINT64_TO_KEY(f.tgid), (void **) &p) < 0 || p->loaded_ns == loaded_ns)
                        continue; /* gone: its maps could not be read */
                log_debug("Unwind tables of pid %" PRIu32 " read again after its exec's: %u files.", f.tgid,
                          p->n_objects);
                if (awaits_libraries(p) && f.tries + 1 < FOLLOWUP_TRIES)
                        followup_add(u, f.tgid, f.start, f.tries + 1, false);
                n = u->n_followups;
        }
        return 0;
}

/* One request, on the worker. */
int uproc_request(unwinder *u, const struct request *q) {
        struct uproc *p = NULL;
        bool same = false;

        if (hashmap_get(u->procs, UINT64_TO_KEY(q->tgid), (void **) &p) == 0)
                same = p->tick_ns ? p->start == q->start_ns / p->tick_ns : p->start == q->start_ns;
        if (p && !same) {
                /* pid reuse: the old instance is gone */
                proc_drop(u, p, false);
                p = NULL;
        }
        if (q->type == PROFD_EVENT_UNWIND_MISS) {
                pthread_mutex_lock(&u->lock);
                u->stats.misses++;
                pthread_mutex_unlock(&u->lock);
        }
        if (p) {
                if (q->type == PROFD_EVENT_NEW_PROCESS) {
                        struct profd_unwind_proc entry = {
                                .start_ns = q->start_ns, .maps_off = p->maps_off, .maps_n = p->maps_n,
                                .version = ++u->versions,
                        };

                        entry_copy_runtime(&entry, &p->rt);

                        if (!p->tick_ns)
                                return 0; /* known */
                        /* found in /proc at start: now its exact start is known */
                        if (bpf_map_update_elem(u->maps.procs_fd, &q->tgid, &entry, BPF_ANY) == 0) {
                                procs_changed(u);
                                p->start = q->start_ns;
                                p->tick_ns = 0;
                        }
                        return 0;
                }
                /* a new image: its first miss is a first one again (a miss
                 * taken between the exec and its event, with the old
                 * image's mappings, must not hold back the new image's) */
                if (q->type == PROFD_EVENT_EXEC) {
                        p->miss_ns = p->miss_interval_ns = 0;
                        p->miss_deferred = false;
                }
                /* the first miss is reloaded at once: at exec only the
                 * binary and the dynamic linker were mapped, the libraries
                 * come moments later */
                if (q->type == PROFD_EVENT_UNWIND_MISS && p->miss_ns && mono_ns() - p->miss_ns < miss_interval(p)) {
                        /* the sweep does it, brought forward to when it is due */
                        p->miss_deferred = true;
                        if (u->next_sweep_ns > p->miss_ns + miss_interval(p))
                                u->next_sweep_ns = p->miss_ns + miss_interval(p);
                        return 0;
                }
        }
        {
                uint64_t t0 = mono_ns();
                /* A process found in /proc at start keeps its start in
                 * ticks until its announcement (NEW_PROCESS, above) gives
                 * the exact one: the sampler takes an entry with the exact
                 * start as a sign that the process was announced, and
                 * announces it no more (user_stack_unwind in
                 * bpf/unwind.bpf.h). A miss is no announcement. */
                bool ticks = p && p->tick_ns && q->type == PROFD_EVENT_UNWIND_MISS;
                int r = uproc_load(u, q->tgid, ticks ? p->start : q->start_ns, ticks ? p->tick_ns : 0, q->maps);

                if (r >= 0 && q->type == PROFD_EVENT_UNWIND_MISS &&
                    hashmap_get(u->procs, UINT64_TO_KEY(q->tgid), (void **) &p) == 0)
                        miss_reloaded(p, mono_ns());
                if (r >= 0 && q->type == PROFD_EVENT_EXEC &&
                    hashmap_get(u->procs, UINT64_TO_KEY(q->tgid), (void **) &p) == 0 && awaits_libraries(p))
                        followup_add(u, q->tgid, q->start_ns, 0, false);

                log_debug("Unwind tables of pid %" PRIu32 " (event %" PRIu32 ") published %" PRIu64 " ms after the "
                          "request, in %" PRIu64 " ms.", q->tgid, q->type, (uint64_t) ((mono_ns() - q->queued_ns) / NSEC_PER_MSEC),
                          (uint64_t) ((mono_ns() - t0) / NSEC_PER_MSEC));
                return r;
        }
}

/* Forgets processes that exited; does deferred misses. */
int uproc_sweep(unwinder *u) {
        _cleanup_free_ uint32_t *gone = NULL, *due = NULL;
        size_t n_gone = 0, n_due = 0, i = 0, n = hashmap_size(u->procs);
        uint64_t now = mono_ns();
        const void *k;
        void *v;
        int r;

        gone = calloc(n + 1, sizeof(*gone));
        due = calloc(n + 1, sizeof(*due));
        if (!gone || !due)
                return -ENOMEM;
        while (hashmap_iterate(u->procs, &i, &k, &v)) {
                struct uproc *p = v;

                if (!proc_alive(u, p->tgid, p->start, p->tick_ns))
                        gone[n_gone++] = p->tgid;
                else if (p->miss_deferred && now - p->miss_ns >= miss_interval(p))
                        due[n_due++] = p->tgid;
        }
        for (i = 0; i < n_gone; i++)
                if (hashmap_get(u->procs, UINT64_TO_KEY(gone[i]), &v) == 0)
                        proc_drop(u, v, true);
        for (i = 0; i < n_due; i++) {
                struct uproc *p;

                if (hashmap_get(u->procs, UINT64_TO_KEY(due[i]), (void **) &p) < 0)
                        continue;
                r = uproc_load(u, p->tgid, p->start, p->tick_ns, NULL);
                if (r < 0)
                        return r;
                if (hashmap_get(u->procs, UINT64_TO_KEY(due[i]), (void **) &p) == 0)
                        miss_reloaded(p, now);
        }
        while (u->n_unused > UNUSED_FILES_MAX)
                ufile_evict(u, DLIST_ENTRY(u->unused.head, struct ufile, unused));
        rangealloc_reclaim(u->rows_alloc, now);
        rangealloc_reclaim(u->maps_alloc, now);
        return 0;
}

/* Lists every process running when profd starts, to be loaded a few at a
 * time between requests (a new process's request never waits for the whole
 * host). */
int uproc_scan_list(unwinder *u) {
        DIR *d = opendir(u->proc_root);
        struct dirent *de;
        size_t cap = 0;

        if (!d) {
                log_warning_errno(negative_errno(), "Failed to list %s, ignoring: %m", u->proc_root);
                return 0;
        }
        while ((de = readdir(d))) {
                uint64_t pid;

                if (parse_uint_strict(de->d_name, UINT32_MAX, &pid) < 0 || pid == 0)
                        continue;
                if (u->n_scan == cap) {
                        uint32_t *a = realloc(u->scan, (cap = cap ? cap * 2 : 256) * sizeof(*a));

                        if (!a) {
                                closedir(d);
                                return -ENOMEM;
                        }
                        u->scan = a;
                }
                u->scan[u->n_scan++] = (uint32_t) pid;
        }
        closedir(d);
        return 0;
}

/* Loads the next few listed processes, by their start in clock ticks until
 * their first event gives the exact one. */
int uproc_scan_some(unwinder *u, size_t max) {
        void *v;
        int r = 0;

        for (size_t k = 0; r >= 0 && k < max && u->scan_next < u->n_scan; k++) {
                uint32_t pid = u->scan[u->scan_next++];
                uint64_t ticks;

                if (hashmap_get(u->procs, UINT64_TO_KEY(pid), &v) == 0)
                        continue; /* an event was quicker */
                if (proc_start_ticks(u, pid, &ticks) < 0)
                        continue;
                r = uproc_load(u, pid, ticks, (uint32_t) u->tick_ns, NULL);
        }
        if (u->scan_next >= u->n_scan) {
                u->scan = mfree_u32(u->scan);
                u->n_scan = u->scan_next = 0;
        }
        return r;
}
