/* The collector owns profd's BPF programs: it sizes and loads them, attaches
 * the sampler to every online CPU, forwards process events, and drains one
 * generation of the kernel maps while the programs write the other. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../bpf/profd.h"
#include "conf.h"
#include "blocklog.h"
#include "hashmap.h"
#include "kallsyms.h"
#include "mapsize.h"

/* Executable mappings the kernel holds for all processes: a few hundred
 * processes of a hundred executable mappings each (1.25 MiB). */
#define COLLECTOR_UNWIND_MAPPINGS 32768

/* The unwind maps as the daemon writes them (see bpf/maps.bpf.h), by fd:
 * the two mmapable arrays (the writer maps only the slice it writes, while
 * it writes it) and the hash. Valid until collector_free. */
struct collector_unwind_maps {
        int rows_fd;
        uint32_t rows_cap;
        int maps_fd;
        uint32_t maps_cap;
        int procs_fd;
        int runtimes_fd;       /* unwind_runtimes (struct profd_runtime slots) */
        uint32_t *procs_epoch; /* unwind_epoch in the programs' .bss: one more after every change
                                * to procs_fd's entries (bpf/maps.bpf.h) */
};

/* One drained key and its value. */
struct drain_entry {
        struct profd_sample_key key;
        uint64_t value;
};

/* A stack as the kernel recorded it: ips[0] is the innermost frame. */
struct stack_trace {
        size_t n;
        uint8_t end;     /* user stacks: how the walk ended (enum profd_stack_end); kernel: 0 */
        uint64_t ips[];
};

/* One logged on-CPU sample's time (the timeline, issue 44): when, and
 * which of the batch's entries holds its key. */
struct drain_timed {
        uint64_t mono_ns;       /* CLOCK_MONOTONIC */
        uint32_t entry;         /* index in drain_batch.entries */
};

/* Everything one drain took out of the kernel. */
struct drain_batch {
        struct drain_entry *entries;
        size_t n_entries;
        struct drain_timed *timeline; /* every logged sample, in no order; the others are
                                       * counters[PROFD_CNT_UNTIMED] */
        size_t n_timeline;
        struct drain_block *blocks;   /* every logged off-CPU block, in no order; the others are
                                       * counters[PROFD_CNT_OFFCPU_SHORT] and [..._UNLOGGED] */
        size_t n_blocks;
        unsigned frequency_hz;        /* set by the caller: the rate the sampler ran at since the
                                       * previous drain (it flips a drain at every change) */
        int64_t wall_minus_mono_ns;   /* set by the caller: a timeline time's wall-clock time
                                       * (the drains' clock) is mono_ns plus this */
        hashmap *frames;        /* frames hash -> struct stack_trace* */
        uint64_t counters[PROFD_COUNTER__MAX]; /* increase since the previous drain */
        bool user_ends_known;   /* the user walker reports how each walk ended (stack_trace.end);
                                 * false: every end reads 0 whatever happened (frame-pointer walker
                                 * before the DWARF unwinder) */
};

typedef struct collector collector;

/* Called for every process event from the BPF programs. */
typedef void (*collector_event_fn)(const struct profd_event *e, void *userdata);

/* Loads and attaches everything, sized and set from the settings (kinds,
 * frequency, interval, off-CPU thresholds, map sizes, kernel memory), read
 * here only. Returns 0 or a negative errno with the reason
 * logged (-EPERM without CAP_BPF/CAP_PERFMON, ...). */
int collector_new(const struct conf *cfg, collector_event_fn on_event, void *userdata,
                  collector **ret);
collector *collector_free(collector *c);

/* Changes the sampling frequency of every CPU's perf event in place: no
 * sample is lost. Returns 0 or a negative errno from the ioctl (-EINVAL
 * above kernel.perf_event_max_sample_rate); then every CPU keeps the old
 * frequency. */
int collector_set_frequency(collector *c, unsigned frequency_hz);
/* The rate every CPU samples at now. */
unsigned collector_frequency(const collector *c);

/* Changes which blocks are attributed to stacks, and which of those the
 * off-CPU log keeps with their times (timeline_min_ns and longer); the
 * programs see it at their next run. sample_ns is the setting
 * offcpu_sample (CONF_OFFCPU_SAMPLE_AUTO: the sampler's period, which
 * collector_set_frequency then moves with it). */
void collector_set_offcpu_thresholds(collector *c, uint64_t min_ns, uint64_t max_ns, uint64_t sample_ns,
                                     uint64_t timeline_min_ns);
/* offcpu_sample as the programs draw by now (0: every block walked). */
uint64_t collector_offcpu_sample_ns(const collector *c);

/* The unwind maps, for the unwinder. */
const struct collector_unwind_maps *collector_unwind_maps(const collector *c);

/* "cycles" or "cpu-clock": the perf event the sampler runs on; NULL when
 * on-CPU sampling is off. */
const char *collector_event_name(const collector *c);

/* A file descriptor that becomes readable when process events are pending. */
int collector_events_fd(const collector *c);
/* Delivers pending process events to on_event. Returns the number delivered
 * or a negative errno. */
int collector_poll_events(collector *c);
/* Whether the programs' process events wake the reader of events_fd (the
 * ring buffer's own choice: when it had read all before), or wake no one
 * while the daemon takes them by a timer. The change is seen by programs
 * running from now on; one already past its read of it may still submit
 * the other way. */
void collector_events_wake(collector *c, bool wake);

/* How full the maps of the generation being written are (the entries BPF
 * inserted since the last drain; mapsize_fill_high tells whether to drain
 * early). Reads the counters, changes nothing. Returns 0 or a negative
 * errno from the bpf() syscall. */
int collector_fill(collector *c, struct mapsize_fill *ret);

/* Flips the generation, waits until no program still writes the old one,
 * and takes its contents out (the maps are left empty). Returns 0, -ENOMEM,
 * or a negative errno from the bpf() syscall. */
int collector_drain(collector *c, struct drain_batch *ret);
void drain_batch_done(struct drain_batch *b);

/* Where the kernel runs profd's own BPF programs: each loaded program's
 * functions (its subprograms too) by their JIT addresses and lengths, into
 * *ret (malloc'd, sorted by start, for kernel_table_covers). Wake-ups'
 * kernel stacks are taken inside profd_waking, so nearly every drain has a
 * frame there. Returns 0 (*ret_n 0 where the kernel hides the addresses),
 * or -ENOMEM. */
int collector_own_code(const collector *c, struct kernel_range **ret, size_t *ret_n);

/* The verifier's instructions processed for one loaded program
 * (bpf_prog_info.verified_insns, kernel 5.16 and later). */
struct collector_verified {
        char name[32];
        uint32_t insns;
};

/* The kernel refuses a program whose verification processes more than
 * this many instructions (BPF_COMPLEXITY_LIMIT_INSNS), with E2BIG. */
#define COLLECTOR_VERIFIER_LIMIT 1000000u

/* How many instructions the verifier processed for each loaded program,
 * into ret (at most max, in the object's order); the kernel has no
 * figure before 5.16: then 0 programs. The same program verifies in 3-4
 * times more instructions on some builds of one kernel version than on
 * others (docs/performance.md, Start-up), so this is the margin to watch.
 * Returns how many were written. */
size_t collector_verified(const collector *c, struct collector_verified *ret, size_t max);

/* Whether OOM victims are announced (PROFD_EVENT_OOM_VICTIM): the
 * kernel's oom/mark_victim could be attached. NULL: false. */
bool collector_watches_oom(const collector *c);
