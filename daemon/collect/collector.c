/* BPF load, attach, generation flip and drain. See docs/architecture.md for
 * why the flip is race-free. */
#include "collector.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <sys/mman.h>

#include "helpers.h"
#include "kallsyms.h"
#include "log.h"
#include "macro.h"
#include "mapsize.h"
#include "profd.skel.h"
#include "samplelog.h"
#include "stacknodes.h"

/* Bytes of the kernel BTF's string table read at a time. */
#define BTF_CHUNK (64 * 1024)

struct collector {
        struct profd_bpf *skel;
        struct ring_buffer *events;
        collector_event_fn on_event;
        void *userdata;
        struct bpf_link **links;  /* one sampler per online CPU, then the exec program */
        size_t n_links;
        int *perf_fds;            /* the samplers' perf events, owned by their links */
        size_t n_perf_fds;
        const char *event_name;
        unsigned frequency;
        uint64_t offcpu_sample;   /* the setting (conf_offcpu_sample_ns): auto follows frequency */
        unsigned n_possible_cpus; /* per-CPU map values come in this many slots */
        uint32_t gen;             /* the generation the programs write now: its maps are those of
                                   * gen & 1 (GEN_MAPS in bpf/maps.bpf.h) */
        size_t counts_max;        /* max_entries of counts_* */
        size_t nodes_max[PROFD_CLASS__MAX]; /* max_entries of frames<class>_* */
        size_t log_slots;         /* slots of a region of samples_log (head included); 0: no log */
        size_t keys_max;          /* counts_max, and every key the log can hold */
        struct profd_sample_key *keys_buf; /* drain scratch, keys_max entries */
        uint64_t *values_buf;
        __u32 *log_idx_buf;       /* drain scratch: the indexes of a region's keys */
        struct profd_log_slot *log_slot_buf; /* drain scratch: a region's slots */
        /* drain scratch, every region's worth (log_max): the logged keys,
         * their times, the sum's order and each one's index in the sum */
        size_t log_max;
        struct profd_sample_key *log_keys;
        uint64_t *log_times;
        uint32_t *log_order, *log_index;
        /* the off-CPU log (blocklog.h): slots of a region (head included;
         * 0: no log), drain scratch for a region's slots and indexes, every
         * region's blocks (block_max) and an order over the drained keys */
        size_t block_slots, block_max;
        __u32 *block_idx_buf;
        struct profd_block_slot *block_slot_buf, *block_buf;
        uint32_t *block_order;
        uint64_t counters_total[PROFD_COUNTER__MAX]; /* as of the previous drain */
        bool user_ends_known;     /* see struct drain_batch */
        bool switch_done;         /* off-CPU user stacks are walked at sched_exit_tp */
        bool oom_watched;         /* profd_oom is attached to oom/mark_victim */
        /* the setting timeline: off, the drain hands the writer no
         * sample's time (the log still sums the samples) and no block */
        bool timeline;
        struct collector_unwind_maps unwind; /* the unwind maps, by fd */
};

/* Whether the string table of the kernel's BTF (/sys/kernel/btf/vmlinux)
 * holds name. Reads only that section, in chunks, instead of parsing all of
 * the BTF (btf__load_vmlinux_btf: 50 ms here, before READY; libbpf parses it
 * again to load the programs). Strings are NUL-separated and the table
 * starts with an empty one, so "\0name\0" is name exactly. */
static bool kernel_btf_has_name(const char *name) {
        struct btf_header h;
        size_t len = strlen(name), keep = len + 1;
        _cleanup_free_ char *buf = NULL;
        _cleanup_close_ int fd = -1;
        uint64_t off, end;
        size_t have = 0;

        fd = open("/sys/kernel/btf/vmlinux", O_RDONLY | O_CLOEXEC);
        if (fd < 0 || pread_all(fd, &h, sizeof(h), 0) < 0 || h.magic != BTF_MAGIC || h.hdr_len < sizeof(h))
                return false;
        buf = malloc(BTF_CHUNK + keep + 1);
        if (!buf)
                return false;
        off = (uint64_t) h.hdr_len + h.str_off;
        end = off + h.str_len;
        while (off < end) {
                size_t n = (size_t) MIN((uint64_t) BTF_CHUNK, end - off);

                if (pread_all(fd, buf + have, n, off) < 0)
                        return false;
                have += n;
                off += n;
                for (size_t i = 0; i + len + 2 <= have; i++)
                        if (buf[i] == '\0' && buf[i + len + 1] == '\0' && memcmp(buf + i + 1, name, len) == 0)
                                return true;
                /* the last keep bytes may begin a match the next chunk ends */
                if (have > keep) {
                        memmove(buf, buf + have - keep, keep);
                        have = keep;
                }
        }
        return false;
}

/* Does the kernel have the tracepoint at the end of __schedule (about
 * 6.16)? There a blocked thread's user stack is read when it comes back,
 * only for blocks that pass the threshold; without it, at every
 * switch-out. */
static bool have_sched_exit_tp(void) {
        return kernel_btf_has_name("btf_trace_sched_exit_tp");
}

/* Checks that the daemon can map an mmapable BPF array for writing, as
 * the unwinder does slice by slice: a kernel or sandbox that refuses is
 * told at start, not found out by every table later. */
static int probe_array_mmap(struct bpf_map *map) {
        long page = sysconf(_SC_PAGESIZE);
        void *p;

        p = mmap(NULL, (size_t) page, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(map), 0);
        if (p == MAP_FAILED)
                return negative_errno();
        (void) munmap(p, (size_t) page);
        return 0;
}

/* The most of one libbpf message logged: a verifier log is one message of
 * up to megabytes, and its reason is in its last lines. */
#define LIBBPF_LOG_TAIL (16U * 1024U)

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap) {
        /* libbpf's warnings matter (a failed load explains itself there,
         * verifier log included); its info lines are rare and say what it
         * decided (a feature missing, a fallback taken): info; its debug
         * chatter (every map and relocation) only with --verbose */
        int prio = level == LIBBPF_WARN ? LOG_WARNING : level == LIBBPF_INFO ? LOG_INFO : LOG_DEBUG;
        _cleanup_free_ char *buf = NULL;
        char *text;
        int n;

        if (prio > log_get_max_level())
                return 0;
        n = vasprintf(&buf, fmt, ap);
        if (n < 0)
                return 0;
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
        text = buf;
        if ((size_t) n > LIBBPF_LOG_TAIL) {
                text = buf + n - LIBBPF_LOG_TAIL;
                text += strcspn(text, "\n");
                text += *text == '\n';
                log_internal(prio, 0, "libbpf: ... (the first %zu bytes of this message left out)",
                             (size_t) (text - buf));
        }
        /* log lines are cut at 4 KiB: the message goes out in pieces of
         * whole lines; most of libbpf's lines name it already */
        while (*text) {
                size_t len = strlen(text);
                char *end = text + len, save;

                if (len > 3072) {
                        end = memrchr(text, '\n', 3072);
                        if (!end)
                                end = text + 3072;
                }
                save = *end;
                *end = '\0';
                log_internal(prio, 0, "%s%s", strncmp(text, "libbpf: ", 8) == 0 ? "" : "libbpf: ", text);
                *end = save;
                text = end + (save == '\n');
        }
        return 0;
}

static int read_uint_file(const char *path, unsigned long *ret) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return negative_errno();
        if (fscanf(f, "%lu", ret) != 1)
                return -EINVAL;
        return 0;
}

/* Parses /sys/devices/system/cpu/online ("0-3,6,8-9") into a list of CPUs. */
static int online_cpus(int **ret, size_t *ret_n) {
        _cleanup_fclose_ FILE *f = fopen("/sys/devices/system/cpu/online", "re");
        _cleanup_free_ int *cpus = NULL;
        size_t n = 0, cap = 0;
        unsigned a, b;
        char sep;

        if (!f)
                return negative_errno();
        for (;;) {
                int k = fscanf(f, "%u", &a);
                if (k != 1)
                        break;
                b = a;
                k = fscanf(f, "%c", &sep);
                if (k == 1 && sep == '-') {
                        if (fscanf(f, "%u", &b) != 1 || b < a)
                                return -EINVAL;
                        k = fscanf(f, "%c", &sep);
                }
                for (unsigned c = a; c <= b; c++) {
                        if (n == cap) {
                                int *nc = realloc(cpus, (cap = cap ? cap * 2 : 16) * sizeof(int));
                                if (!nc)
                                        return -ENOMEM;
                                cpus = nc;
                        }
                        cpus[n++] = c;
                }
                if (k != 1 || sep != ',')
                        break;
        }
        if (n == 0)
                return -EINVAL;
        *ret = TAKE_PTR(cpus);
        *ret_n = n;
        return 0;
}

static int perf_open(uint32_t type, uint64_t config, unsigned freq, int cpu) {
        struct perf_event_attr attr = {
                .size = sizeof(attr),
                .type = type,
                .config = config,
                .sample_freq = freq,
                .freq = 1,
        };
        int fd = syscall(__NR_perf_event_open, &attr, -1 /* every task */, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        return fd < 0 ? negative_errno() : fd;
}

static int handle_event(void *ctx, void *data, size_t size) {
        collector *c = ctx;
        struct profd_event e;

        if (size < sizeof(e))
                return 0;
        memcpy(&e, data, sizeof(e));
        e.comm[sizeof(e.comm) - 1] = '\0';
        c->on_event(&e, c->userdata);
        return 0;
}

static int attach(collector *c, const struct conf *cfg) {
        _cleanup_free_ int *cpus = NULL;
        size_t n_cpus;
        uint32_t type = PERF_TYPE_HARDWARE;
        uint64_t config = PERF_COUNT_HW_CPU_CYCLES;
        int r;

        r = online_cpus(&cpus, &n_cpus);
        if (r < 0)
                return log_error_errno(r, "Failed to read the online CPUs: %m");
        c->links = calloc(n_cpus + 6, sizeof(*c->links));
        c->perf_fds = calloc(n_cpus, sizeof(*c->perf_fds));
        if (!c->links || !c->perf_fds)
                return log_oom();
        c->event_name = cfg->kind_cpu ? "cycles" : NULL;
        for (size_t i = 0; cfg->kind_cpu && i < n_cpus; i++) {
                int fd = perf_open(type, config, c->frequency, cpus[i]);
                if (fd < 0 && i == 0 && type == PERF_TYPE_HARDWARE) {
                        /* no PMU (most VMs): the software timer samples just as well */
                        log_info("Hardware cycles event unavailable (%s), sampling with cpu-clock.",
                                 strerror(-fd));
                        type = PERF_TYPE_SOFTWARE;
                        config = PERF_COUNT_SW_CPU_CLOCK;
                        c->event_name = "cpu-clock";
                        fd = perf_open(type, config, c->frequency, cpus[i]);
                }
                if (fd < 0)
                        return log_error_errno(fd, "Failed to open the %s perf event on CPU %d: %m",
                                               c->event_name, cpus[i]);
                c->links[c->n_links] = bpf_program__attach_perf_event(c->skel->progs.profd_oncpu, fd);
                if (!c->links[c->n_links]) {
                        r = negative_errno();
                        close(fd);
                        return log_error_errno(r, "Failed to attach the sampler to CPU %d: %m", cpus[i]);
                }
                c->n_links++;
                c->perf_fds[c->n_perf_fds++] = fd;
        }
        struct {
                struct bpf_program *prog;
                bool enabled;
                const char *what;
        } progs[] = {
                { c->skel->progs.profd_exec, true, "sched_process_exec" },
                { c->skel->progs.profd_free, true, "sched_process_free" },
                /* before profd_switch: no switch-out it notes can then have
                 * its switch-in missed by both */
                { c->skel->progs.profd_switch_done, (cfg->kind_offcpu || cfg->kind_wakeup) && c->switch_done, "sched_exit_tp" },
                { c->skel->progs.profd_switch, cfg->kind_offcpu || cfg->kind_wakeup, "sched_switch" },
                { c->skel->progs.profd_waking, cfg->kind_wakeup, "sched_waking" },
        };
        for (size_t i = 0; i < ELEMENTSOF(progs); i++) {
                if (!progs[i].enabled)
                        continue;
                c->links[c->n_links] = bpf_program__attach(progs[i].prog);
                if (!c->links[c->n_links])
                        return log_error_errno(negative_errno(), "Failed to attach to %s: %m", progs[i].what);
                c->n_links++;
        }
        /* captures on "oom" (issue 44): a kernel without the tracepoint
         * still profiles; such captures are refused, saying why */
        c->links[c->n_links] = bpf_program__attach(c->skel->progs.profd_oom);
        if (c->links[c->n_links]) {
                c->oom_watched = true;
                c->n_links++;
        } else
                log_warning_errno(negative_errno(), "Failed to attach to oom/mark_victim, captures on oom are "
                                 "unavailable: %m");
        return 0;
}

/* Appends the JIT ranges of the program behind fd to *r. Returns 0 (nothing
 * for a program the kernel does not say) or -ENOMEM. */
static int own_code_add(int fd, struct kernel_range **r, size_t *n) {
        struct bpf_prog_info info = {};
        __u32 len = sizeof(info), nf;
        _cleanup_free_ __u64 *ksyms = NULL;
        _cleanup_free_ __u32 *lens = NULL;
        struct kernel_range *grown;

        if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0 || info.nr_jited_ksyms == 0 ||
            info.nr_jited_ksyms != info.nr_jited_func_lens)
                return 0;
        nf = info.nr_jited_ksyms;
        ksyms = calloc(nf, sizeof(*ksyms));
        lens = calloc(nf, sizeof(*lens));
        grown = realloc(*r, (*n + nf) * sizeof(**r));
        if (!ksyms || !lens || !grown)
                return -ENOMEM;
        *r = grown;
        info = (struct bpf_prog_info) {
                .nr_jited_ksyms = nf,
                .jited_ksyms = (__u64) (uintptr_t) ksyms,
                .nr_jited_func_lens = nf,
                .jited_func_lens = (__u64) (uintptr_t) lens,
        };
        len = sizeof(info);
        if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
                return 0;
        for (__u32 i = 0; i < MIN(nf, info.nr_jited_ksyms); i++)
                if (ksyms[i] != 0)
                        (*r)[(*n)++] = (struct kernel_range) { ksyms[i], ksyms[i] + lens[i] };
        return 0;
}

int collector_own_code(const collector *c, struct kernel_range **ret, size_t *ret_n) {
        _cleanup_free_ struct kernel_range *r = NULL;
        struct bpf_program *p;
        size_t n = 0;

        bpf_object__for_each_program(p, c->skel->obj) {
                int fd = bpf_program__fd(p);

                if (fd >= 0 && own_code_add(fd, &r, &n) < 0)
                        return -ENOMEM;
        }
        kernel_ranges_sort(r, n);
        *ret = TAKE_PTR(r);
        *ret_n = n;
        return 0;
}

size_t collector_verified(const collector *c, struct collector_verified *ret, size_t max) {
        struct bpf_program *p;
        size_t n = 0;

        if (!c)
                return 0;
        bpf_object__for_each_program(p, c->skel->obj) {
                struct bpf_prog_info info = {};
                __u32 len = sizeof(info);
                int fd = bpf_program__fd(p);

                if (n == max)
                        break;
                if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) < 0 || info.verified_insns == 0)
                        continue;
                ret[n] = (struct collector_verified) { .insns = info.verified_insns };
                snprintf(ret[n].name, sizeof(ret[n].name), "%s", bpf_program__name(p));
                n++;
        }
        return n;
}

bool collector_watches_oom(const collector *c) {
        return c && c->oom_watched;
}

/* The stack node map of class cls and generation gen. */
static struct bpf_map *frames_map(const collector *c, unsigned cls, unsigned gen) {
        struct bpf_map *const m[PROFD_CLASS__MAX][2] = {
                { c->skel->maps.frames8_0, c->skel->maps.frames8_1 },
                { c->skel->maps.frames16_0, c->skel->maps.frames16_1 },
                { c->skel->maps.frames32_0, c->skel->maps.frames32_1 },
        };
        return m[cls][gen];
}

DEFINE_TRIVIAL_CLEANUP_FUNC(collector *, collector_free);

/* Tells the programs where parts of the kernel's text are, from one read
 * of /proc/kallsyms:
 * - its interrupt entry code, by which the wakeup program knows a wakeup
 *   done by an interrupt from one done by the task it interrupted
 *   (bpf/offcpu.bpf.c, in_interrupt_context). Without it, only interrupts
 *   that arrive in kernel mode are told apart.
 * - its scheduler and lock functions, by which the program on
 *   sched_exit_tp finds, in the kernel stack of a thread whose switch-in
 *   profd_switch did not see, where the thread blocked (blocked_kernel_stack).
 *   Without them such a block is counted with its kernel stack lost.
 * - the start of its text (_stext), above which the kernel stack memo
 *   (bpf/kstack-memo.bpf.h) takes a stack's words into its signature.
 *   Without it every off-CPU kernel stack is walked. */
static void kernel_text_set(collector *c, bool wakeup) {
        static const char *const names[] = { "__irqentry_text_start", "__irqentry_text_end",
                                             "__sched_text_start", "__sched_text_end",
                                             "__lock_text_start", "__lock_text_end", "_stext",
                                             "do_syscall_64" };
        uint64_t addrs[ELEMENTSOF(names)], ends[ELEMENTSOF(names)];
        /* every address 0 on failure */
        int r = kallsyms_find_ranges("/proc/kallsyms", names, ELEMENTSOF(names), addrs, ends);

        if (addrs[2] < addrs[3]) {
                c->skel->rodata->sched_text_start = addrs[2];
                c->skel->rodata->sched_text_end = addrs[3];
        } else
                log_debug("Cannot find the kernel's scheduler functions in /proc/kallsyms: blocks whose "
                          "switch-in the sched_switch tracepoint does not report are counted without "
                          "their kernel stack.");
        if (addrs[4] < addrs[5]) {
                c->skel->rodata->lock_text_start = addrs[4];
                c->skel->rodata->lock_text_end = addrs[5];
        }
        if (c->skel->rodata->kstack_memo_mode && !addrs[6])
                log_info("Cannot find _stext in /proc/kallsyms: every off-CPU kernel stack is walked "
                         "(kernel_stack_memo).");
        c->skel->rodata->kstack_text_start = addrs[6];
        /* without it a system call's stack is hashed whole: a random gap
         * makes nearly every one a miss (bpf/kstack-memo.bpf.h) */
        if (addrs[7] && ends[7] > addrs[7]) {
                c->skel->rodata->kstack_stop_start = addrs[7];
                c->skel->rodata->kstack_stop_end = ends[7];
        }
        if (!wakeup)
                return;
        if (addrs[0] >= addrs[1]) {
                log_warning_errno(r < 0 ? r : -ENOENT,
                                  "Cannot find the kernel's interrupt entry code in /proc/kallsyms (%m): "
                                  "wakeups by interrupts that arrive in user mode are credited to the "
                                  "thread they interrupted.");
                return;
        }
        c->skel->rodata->irqentry_start = addrs[0];
        c->skel->rodata->irqentry_end = addrs[1];
}

/* Opens the BPF object and sizes its maps and settings from cfg, before
 * load: keys and stack nodes per generation from the sampling rate and the
 * CPUs, within kernel_memory (mapsize.c; docs/architecture.md, "Map
 * sizes"). Returns 0 or a negative errno, logged. */
static int collector_open(collector *c, const struct conf *cfg, struct mapsize_plan *ret_plan) {
        unsigned long pid_max = 32768;
        size_t seen_max;
        int ncpus;

        ncpus = libbpf_num_possible_cpus();
        if (ncpus <= 0)
                return log_error_errno(ncpus ? ncpus : -EINVAL, "Failed to count possible CPUs: %m");
        c->n_possible_cpus = ncpus;

        (void) read_uint_file("/proc/sys/kernel/pid_max", &pid_max);

        mapsize_plan(&(struct mapsize_input) {
                             .cpus = ncpus,
                             .frequency_hz = cfg->frequency_hz,
                             .interval_ns = cfg->interval_ns,
                             .cpu = cfg->kind_cpu,
                             .blocks = cfg->kind_offcpu || cfg->kind_wakeup,
                             /* no timeline: no off-CPU log to allocate */
                             .offcpu_rate = cfg->kind_offcpu && cfg->timeline ? cfg->timeline_offcpu_rate : 0,
                             .max_keys = cfg->max_keys,
                             .max_stacks = cfg->max_stacks,
                             .kernel_memory = cfg->kernel_memory,
                     },
                     ret_plan);
        c->counts_max = ret_plan->keys;
        /* the sampler's log: a region per CPU and generation, within the
         * 32-bit indexes of an array map */
        c->log_slots = ret_plan->log_slots;
        if ((uint64_t) c->log_slots * 2 * ncpus > UINT32_MAX / 2)
                c->log_slots = 0;
        c->keys_max = c->counts_max + (c->log_slots ? ((size_t) c->log_slots - 1) * ncpus : 0);
        /* the off-CPU log: timeline_offcpu_rate blocks per CPU and second,
         * sized like the sampler's (late drains, no more than the counts
         * map's keys per CPU), within kernel_memory with the rest */
        c->block_slots = ret_plan->block_slots;
        if ((uint64_t) c->block_slots * 2 * ncpus > UINT32_MAX / 2)
                c->block_slots = 0;
        /* one entry per live process announced (allocated as they come) */
        seen_max = MIN(pid_max, 65536ul);

        c->skel = profd_bpf__open();
        if (!c->skel)
                return log_error_errno(negative_errno(), "Failed to open the BPF object: %m");
        bpf_map__set_max_entries(c->skel->maps.counts_0, c->counts_max);
        bpf_map__set_max_entries(c->skel->maps.counts_1, c->counts_max);
        for (unsigned k = 0; k < PROFD_CLASS__MAX; k++) {
                c->nodes_max[k] = ret_plan->nodes[k];
                for (unsigned g = 0; g < 2; g++)
                        bpf_map__set_max_entries(frames_map(c, k, g), ret_plan->nodes[k]);
        }
        bpf_map__set_max_entries(c->skel->maps.seen, seen_max);
        bpf_map__set_max_entries(c->skel->maps.samples_log, MAX(2 * c->log_slots * ncpus, (size_t) 1));
        c->skel->bss->samples_log_slots = c->log_slots;
        c->skel->bss->samples_log_cpus = ncpus;
        bpf_map__set_max_entries(c->skel->maps.offcpu_log, MAX(2 * c->block_slots * ncpus, (size_t) 1));
        c->skel->bss->offcpu_log_slots = c->block_slots;
        c->skel->bss->offcpu_log_cpus = ncpus;
        /* unwind tables: see maps.bpf.h (8-byte values, two slots each) */
        bpf_map__set_max_entries(c->skel->maps.unwind_rows, MAX(cfg->unwind_memory / sizeof(uint64_t), 1u));
        bpf_map__set_max_entries(c->skel->maps.unwind_maps, COLLECTOR_UNWIND_MAPPINGS);
        bpf_map__set_max_entries(c->skel->maps.unwind_procs, seen_max);

        c->skel->data->offcpu_min_ns = cfg->offcpu_min_ns;
        c->skel->data->offcpu_max_ns = cfg->offcpu_max_ns;
        c->offcpu_sample = cfg->offcpu_sample_ns;
        c->skel->data->offcpu_sample_ns = conf_offcpu_sample_ns(cfg->offcpu_sample_ns, cfg->frequency_hz);
        c->skel->data->offcpu_timeline_min_ns = cfg->timeline_offcpu_min_ns;
        c->skel->rodata->offcpu_enabled = cfg->kind_offcpu;
        c->skel->rodata->offcpu_timeline_enabled = cfg->timeline;
        c->timeline = cfg->timeline;
        c->skel->rodata->wakeup_enabled = cfg->kind_wakeup;
        c->skel->rodata->offcpu_preempted_stacks = cfg->offcpu_preempted_stacks;
        c->skel->rodata->self_tgid = (uint32_t) getpid();
        c->skel->rodata->offcpu_self_stacks = cfg->offcpu_self_stacks;
        c->skel->rodata->kstack_memo_mode = !cfg->kernel_stack_memo ? PROFD_KSTACK_MEMO_OFF
                                          : cfg->kernel_stack_memo_verify ? PROFD_KSTACK_MEMO_VERIFY
                                                                          : PROFD_KSTACK_MEMO_ON;
        if (!cfg->kernel_stack_memo)
                bpf_map__set_max_entries(c->skel->maps.kstack_memo, 1);
        c->switch_done = have_sched_exit_tp();
        if (!c->switch_done && cfg->kind_offcpu)
                log_info("The kernel has no sched_exit_tp tracepoint: off-CPU user stacks are walked at "
                         "every switch-out, which costs more per context switch.");
        c->skel->rodata->offcpu_walk_at_switch_out = !c->switch_done;
        if (cfg->kind_offcpu || cfg->kind_wakeup)
                kernel_text_set(c, cfg->kind_wakeup);
        /* also for wakeups alone: it ends the blocks profd_switch did not
         * see end, whose wakeups would else be timed from a stale switch-out */
        bpf_program__set_autoload(c->skel->progs.profd_switch_done,
                                  (cfg->kind_offcpu || cfg->kind_wakeup) && c->switch_done);
        bpf_program__set_autoload(c->skel->progs.profd_oncpu, cfg->kind_cpu);
        bpf_program__set_autoload(c->skel->progs.profd_switch, cfg->kind_offcpu || cfg->kind_wakeup);
        bpf_program__set_autoload(c->skel->progs.profd_waking, cfg->kind_wakeup);
        return 0;
}

/* Loads the programs and sets up what user space reads them through: the
 * drain barrier, the unwind maps (the arrays checked to be mappable), the
 * drain's buffers and the event ring buffer. Returns 0 or a negative errno, logged. */
static int collector_load(collector *c) {
        __u32 zero = 0;
        int inner_fd, r;

        r = profd_bpf__load(c->skel);
        if (r < 0)
                return log_error_errno(r, "Failed to load the BPF programs (profd needs root, or CAP_BPF and "
                                          "CAP_PERFMON, and a kernel with BTF): %m");
        /* The walker that sets profd_frames.end is the DWARF unwinder's,
         * which comes with its per-process map; the frame-pointer walker
         * before it leaves end 0 on every walk, also one that met a
         * garbage frame pointer, so its ends say nothing. */
        c->user_ends_known = bpf_object__find_map_by_name(c->skel->obj, "unwind_procs") != NULL;
        inner_fd = bpf_map__fd(c->skel->maps.barrier_inner);
        if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.barrier), &zero, &inner_fd, BPF_ANY) < 0)
                return log_error_errno(negative_errno(), "Failed to set up the drain barrier: %m");

        /* The arrays are not kept mapped: every page of a BPF array
         * mapping is in the mapper's RSS from mmap on (the kernel inserts
         * them all), 25 MiB of kernel memory at the defaults counted a
         * second time as profd's. The unwinder maps the slice it writes. */
        r = probe_array_mmap(c->skel->maps.unwind_rows);
        if (r >= 0)
                r = probe_array_mmap(c->skel->maps.unwind_maps);
        if (r < 0)
                return log_error_errno(r, "Failed to map the unwind tables into memory: %m");
        c->unwind.rows_fd = bpf_map__fd(c->skel->maps.unwind_rows);
        c->unwind.rows_cap = bpf_map__max_entries(c->skel->maps.unwind_rows);
        c->unwind.maps_fd = bpf_map__fd(c->skel->maps.unwind_maps);
        c->unwind.maps_cap = bpf_map__max_entries(c->skel->maps.unwind_maps);
        c->unwind.procs_fd = bpf_map__fd(c->skel->maps.unwind_procs);
        c->unwind.runtimes_fd = bpf_map__fd(c->skel->maps.unwind_runtimes);
        c->unwind.procs_epoch = &c->skel->bss->unwind_epoch;

        c->keys_buf = calloc(c->keys_max, sizeof(*c->keys_buf));
        c->values_buf = calloc(c->keys_max, sizeof(*c->values_buf));
        c->log_idx_buf = calloc(MAX(c->log_slots, (size_t) 1), sizeof(*c->log_idx_buf));
        c->log_slot_buf = calloc(MAX(c->log_slots, (size_t) 1), sizeof(*c->log_slot_buf));
        c->log_max = MAX(c->log_slots ? (c->log_slots - 1) * c->n_possible_cpus : 0, (size_t) 1);
        c->log_keys = calloc(c->log_max, sizeof(*c->log_keys));
        c->log_times = calloc(c->log_max, sizeof(*c->log_times));
        c->log_order = calloc(c->log_max, sizeof(*c->log_order));
        c->log_index = calloc(c->log_max, sizeof(*c->log_index));
        c->block_idx_buf = calloc(MAX(c->block_slots, (size_t) 1), sizeof(*c->block_idx_buf));
        c->block_slot_buf = calloc(MAX(c->block_slots, (size_t) 1), sizeof(*c->block_slot_buf));
        c->block_max = MAX(c->block_slots ? (c->block_slots - 1) * c->n_possible_cpus : 0, (size_t) 1);
        c->block_buf = calloc(c->block_max, sizeof(*c->block_buf));
        c->block_order = calloc(MAX(c->counts_max, (size_t) 1), sizeof(*c->block_order));
        if (!c->keys_buf || !c->values_buf || !c->log_idx_buf || !c->log_slot_buf || !c->log_keys ||
            !c->log_times || !c->log_order || !c->log_index || !c->block_idx_buf || !c->block_slot_buf ||
            !c->block_buf || !c->block_order)
                return log_oom();

        c->events = ring_buffer__new(bpf_map__fd(c->skel->maps.events), handle_event, c, NULL);
        if (!c->events)
                return log_error_errno(negative_errno(), "Failed to set up the event ring buffer: %m");
        return 0;
}

int collector_new(const struct conf *cfg, collector_event_fn on_event, void *userdata,
                  collector **ret) {
        _cleanup_(collector_freep) collector *c = NULL;
        struct mapsize_plan plan;
        int r;

        libbpf_set_print(libbpf_log);

        c = calloc(1, sizeof(*c));
        if (!c)
                return log_oom();
        c->on_event = on_event;
        c->userdata = userdata;
        c->frequency = cfg->frequency_hz;

        r = collector_open(c, cfg, &plan);
        if (r < 0)
                return r;
        r = collector_load(c);
        if (r < 0)
                return r;
        r = attach(c, cfg);
        if (r < 0)
                return r;

        if (cfg->kind_cpu)
                log_info("Sampling %s at %u Hz on every online CPU.", c->event_name, c->frequency);
        log_info("Kernel maps per generation: %zu keys, %zu stacks (nodes of 8, 16, 32 frames: %zu, %zu, %zu); "
                 "%.1f MiB for both generations%s.",
                 c->counts_max, plan.stacks, plan.nodes[PROFD_CLASS_8], plan.nodes[PROFD_CLASS_16],
                 plan.nodes[PROFD_CLASS_32], plan.bytes / 1048576.0,
                 plan.capped ? " (kernel_memory; the sampling rate asked for more)" : "");
        if (c->log_slots)
                log_info("Sampler's log: %zu samples per CPU and generation, %zu KiB.", c->log_slots - 1,
                         2 * c->log_slots * c->n_possible_cpus * sizeof(struct profd_log_slot) / 1024);
        if (!cfg->timeline && (cfg->kind_cpu || cfg->kind_offcpu))
                log_info("The timeline is off (setting timeline): no sample's or off-CPU block's time is "
                         "stored, only the aggregates.");
        if (c->block_slots)
                log_info("Off-CPU log: %zu blocks of %" PRIu64 " us or more per CPU and generation, %zu KiB.",
                         c->block_slots - 1, (uint64_t) (cfg->timeline_offcpu_min_ns / NSEC_PER_USEC),
                         2 * c->block_slots * c->n_possible_cpus * sizeof(struct profd_block_slot) / 1024);
        if (cfg->kind_offcpu || cfg->kind_wakeup)
                log_info("Measuring off-CPU time%s of blocks from %" PRIu64 " us%s.",
                         cfg->kind_wakeup ? (cfg->kind_offcpu ? " and wakers" : " wakers only") : "",
                         (uint64_t) (cfg->offcpu_min_ns / NSEC_PER_USEC),
                         cfg->offcpu_max_ns == UINT64_MAX ? "" : " up to a maximum");
        if ((cfg->kind_offcpu || cfg->kind_wakeup) && cfg->offcpu_sample_ns)
                log_info("Blocks shorter than %" PRIu64 " us are walked by a draw and counted as that long "
                         "(offcpu_sample%s).", (uint64_t) (collector_offcpu_sample_ns(c) / NSEC_PER_USEC),
                         cfg->offcpu_sample_ns == CONF_OFFCPU_SAMPLE_AUTO ? " auto: the on-CPU period" : "");
        *ret = TAKE_PTR(c);
        return 0;
}

collector *collector_free(collector *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n_links; i++)
                bpf_link__destroy(c->links[i]);
        free(c->links);
        free(c->perf_fds);
        ring_buffer__free(c->events);
        profd_bpf__destroy(c->skel);
        free(c->keys_buf);
        free(c->values_buf);
        free(c->log_idx_buf);
        free(c->log_slot_buf);
        free(c->log_keys);
        free(c->log_times);
        free(c->log_order);
        free(c->log_index);
        free(c->block_idx_buf);
        free(c->block_slot_buf);
        free(c->block_buf);
        free(c->block_order);
        free(c);
        return NULL;
}

/* What PERF_EVENT_IOC_PERIOD takes to sample at hz: a hardware event opened
 * with freq=1 takes the frequency (the kernel keeps re-tuning its period);
 * cpu-clock turns its frequency into a fixed period in ns when it is
 * opened (and drops freq), so it takes that period. */
static uint64_t period_arg(const collector *c, unsigned hz) {
        bool software = c->event_name && streq(c->event_name, "cpu-clock");
        return software ? NSEC_PER_SEC / hz : hz;
}

int collector_set_frequency(collector *c, unsigned frequency_hz) {
        uint64_t arg = period_arg(c, frequency_hz);

        /* The maps are untouched, so nothing sampled so far is lost; the
         * new rate applies from each CPU's next sample. */
        for (size_t i = 0; i < c->n_perf_fds; i++)
                if (ioctl(c->perf_fds[i], PERF_EVENT_IOC_PERIOD, &arg) < 0) {
                        int r = negative_errno();
                        /* the CPUs already changed keep sampling at the new rate:
                         * put them back so every CPU runs at the same one */
                        uint64_t freq = period_arg(c, c->frequency);
                        for (size_t k = 0; k < i; k++)
                                (void) ioctl(c->perf_fds[k], PERF_EVENT_IOC_PERIOD, &freq);
                        return r;
                }
        c->frequency = frequency_hz;
        /* auto: off-CPU walks as often as on-CPU samples, raised or not */
        if (c->offcpu_sample == CONF_OFFCPU_SAMPLE_AUTO)
                __atomic_store_n(&c->skel->data->offcpu_sample_ns, conf_offcpu_sample_ns(c->offcpu_sample, frequency_hz),
                                 __ATOMIC_RELAXED);
        return 0;
}

unsigned collector_frequency(const collector *c) {
        return c->frequency;
}

void collector_set_offcpu_thresholds(collector *c, uint64_t min_ns, uint64_t max_ns, uint64_t sample_ns,
                                     uint64_t timeline_min_ns) {
        /* .data is memory-mapped: the programs see the new values at their
         * next run. Each is one aligned 64-bit store, so a program reads
         * either the old or the new value of each, never a torn one. */
        __atomic_store_n(&c->skel->data->offcpu_min_ns, min_ns, __ATOMIC_RELAXED);
        __atomic_store_n(&c->skel->data->offcpu_max_ns, max_ns, __ATOMIC_RELAXED);
        c->offcpu_sample = sample_ns;
        __atomic_store_n(&c->skel->data->offcpu_sample_ns, conf_offcpu_sample_ns(sample_ns, c->frequency),
                         __ATOMIC_RELAXED);
        __atomic_store_n(&c->skel->data->offcpu_timeline_min_ns, timeline_min_ns, __ATOMIC_RELAXED);
}

uint64_t collector_offcpu_sample_ns(const collector *c) {
        return conf_offcpu_sample_ns(c->offcpu_sample, c->frequency);
}

const struct collector_unwind_maps *collector_unwind_maps(const collector *c) {
        return &c->unwind;
}

const char *collector_event_name(const collector *c) {
        return c->event_name;
}

int collector_events_fd(const collector *c) {
        return ring_buffer__epoll_fd(c->events);
}

int collector_poll_events(collector *c) {
        return ring_buffer__consume(c->events);
}

void collector_events_wake(collector *c, bool wake) {
        __atomic_store_n(&c->skel->bss->events_submit_flags, wake ? 0 : (uint64_t) BPF_RB_NO_WAKEUP, __ATOMIC_SEQ_CST);
}

/* Reads and empties a counts map with batch operations; falls back to one
 * key at a time on kernels without batch support for hash maps. */
static int drain_counts(collector *c, int fd, size_t *ret_n) {
        __u32 token = 0, count;
        void *in = NULL;
        size_t n = 0;
        int r;

        for (;;) {
                count = c->counts_max - n;
                if (count == 0)
                        break;
                r = bpf_map_lookup_and_delete_batch(fd, in, &token, c->keys_buf + n, c->values_buf + n,
                                                    &count, NULL);
                n += count;
                if (r < 0) {
                        r = negative_errno();
                        if (r == -ENOENT)
                                break;
                        if (n == 0 && (r == -EINVAL || r == -EOPNOTSUPP || r == -ENOTSUP))
                                goto one_by_one;
                        return r;
                }
                in = &token;
        }
        *ret_n = n;
        return 0;

one_by_one:
        n = 0;
        while (n < c->counts_max && bpf_map_get_next_key(fd, NULL, &c->keys_buf[n]) == 0) {
                if (bpf_map_lookup_elem(fd, &c->keys_buf[n], &c->values_buf[n]) < 0 ||
                    bpf_map_delete_elem(fd, &c->keys_buf[n]) < 0)
                        return negative_errno();
                n++;
        }
        *ret_n = n;
        return 0;
}

/* Reads and empties the sampler's log regions of generation parity gen
 * (the programs write the other one), appends their sum (keys and counts)
 * to keys_buf and values_buf at *n_io, and gives each logged sample's
 * time and entry (*ret_timeline, malloc'd, *ret_n of them). */
static int drain_log(collector *c, unsigned gen, size_t *n_io, struct drain_timed **ret_timeline, size_t *ret_n) {
        int fd = bpf_map__fd(c->skel->maps.samples_log);
        struct profd_log_slot zero = {};
        size_t n = *n_io, logged = 0, sum;
        struct drain_timed *t;

        for (unsigned cpu = 0; c->log_slots && cpu < c->n_possible_cpus; cpu++) {
                __u32 head_idx = (gen * c->n_possible_cpus + cpu) * c->log_slots, want, count;
                struct profd_log_slot head;

                if (bpf_map_lookup_elem(fd, &head_idx, &head) < 0)
                        return negative_errno();
                if (head.n == 0)
                        continue;
                want = count = (__u32) MIN(head.n, (uint64_t) c->log_slots - 1);
                /* an array's batch starts after the key given: the head's */
                if (bpf_map_lookup_batch(fd, &head_idx, &(__u32) { 0 }, c->log_idx_buf, c->log_slot_buf,
                                         &count, NULL) < 0 && errno != ENOENT)
                        return negative_errno();
                count = MIN(count, want);
                for (__u32 i = 0; i < count && logged < c->log_max; i++, logged++) {
                        c->log_keys[logged] = c->log_slot_buf[i].key;
                        c->log_times[logged] = c->log_slot_buf[i].time_ns;
                }
                if (bpf_map_update_elem(fd, &head_idx, &zero, BPF_ANY) < 0)
                        return negative_errno();
        }
        t = malloc(MAX(logged, (size_t) 1) * sizeof(*t));
        if (!t)
                return -ENOMEM;
        sum = samplelog_sum(c->log_keys, logged, c->log_order, c->keys_buf + n, c->values_buf + n, c->log_index);
        for (size_t i = 0; i < logged; i++)
                t[i] = (struct drain_timed) { c->log_times[i], (uint32_t) (n + c->log_index[i]) };
        *n_io = n + sum;
        *ret_timeline = t;
        /* the timeline off: the log has summed its samples into the
         * drain's keys, the cheaper path (docs/architecture.md), and their
         * times go no further */
        *ret_n = c->timeline ? logged : 0;
        return 0;
}

/* Reads and empties the off-CPU log's regions of generation parity gen,
 * and names each block by its key among the n_keys drained counts
 * (keys_buf): *ret_blocks (malloc'd, *ret_n of them). Blocks whose key is
 * not there are added to unmatched[0], their ns to unmatched[1]. */
static int drain_blocks(collector *c, unsigned gen, size_t n_keys, uint64_t *unmatched,
                        struct drain_block **ret_blocks, size_t *ret_n) {
        int fd = bpf_map__fd(c->skel->maps.offcpu_log);
        struct profd_block_slot zero = {};
        struct drain_block *blocks;
        size_t logged = 0;

        for (unsigned cpu = 0; c->block_slots && cpu < c->n_possible_cpus; cpu++) {
                __u32 head_idx = (gen * c->n_possible_cpus + cpu) * c->block_slots, want, count;
                struct profd_block_slot head;

                if (bpf_map_lookup_elem(fd, &head_idx, &head) < 0)
                        return negative_errno();
                if (head.n == 0)
                        continue;
                want = count = (__u32) MIN(head.n, (uint64_t) c->block_slots - 1);
                /* an array's batch starts after the key given: the head's */
                if (bpf_map_lookup_batch(fd, &head_idx, &(__u32) { 0 }, c->block_idx_buf, c->block_slot_buf,
                                         &count, NULL) < 0 && errno != ENOENT)
                        return negative_errno();
                count = MIN(count, want);
                for (__u32 i = 0; i < count && logged < c->block_max; i++)
                        c->block_buf[logged++] = c->block_slot_buf[i];
                if (bpf_map_update_elem(fd, &head_idx, &zero, BPF_ANY) < 0)
                        return negative_errno();
        }
        blocks = malloc(MAX(logged, (size_t) 1) * sizeof(*blocks));
        if (!blocks)
                return -ENOMEM;
        *ret_n = blocklog_match(c->keys_buf, n_keys, c->block_buf, logged, c->block_order, blocks,
                                &unmatched[0], &unmatched[1]);
        *ret_blocks = blocks;
        return 0;
}

static void stacks_free(hashmap *m) {
        const void *k;
        void *v;
        size_t i = 0;

        if (!m)
                return;
        while (hashmap_iterate(m, &i, &k, &v))
                free(v);
        hashmap_free(m);
}

/* Node ids are read this many at a time: a bounded buffer however large
 * the maps are. */
#define NODES_BATCH 1024

/* Reads and empties one stack node map into nodes (id -> struct
 * stack_node*), with batch operations, else one key at a time (kernels
 * without batch support for hash maps). A node whose count does not fit
 * its class cannot come from BPF and is skipped. */
static int drain_node_map(int fd, size_t value_size, hashmap *nodes) {
        _cleanup_free_ __u64 *keys = calloc(NODES_BATCH, sizeof(__u64));
        _cleanup_free_ void *values = calloc(NODES_BATCH, value_size);
        __u32 token = 0, count;
        void *in = NULL;
        bool batch = true;
        int r;

        if (!keys || !values)
                return -ENOMEM;
        for (;;) {
                bool last = false;

                count = NODES_BATCH;
                if (batch) {
                        r = bpf_map_lookup_and_delete_batch(fd, in, &token, keys, values, &count, NULL);
                        if (r < 0) {
                                r = negative_errno();
                                if (r == -ENOENT)
                                        last = true;
                                else if (!in && count == 0 && (r == -EINVAL || r == -EOPNOTSUPP || r == -ENOTSUP)) {
                                        batch = false;
                                        continue;
                                } else
                                        return r;
                        }
                        in = &token;
                } else {
                        count = 0;
                        while (count < NODES_BATCH && bpf_map_get_next_key(fd, NULL, &keys[count]) == 0) {
                                if (bpf_map_lookup_elem(fd, &keys[count], (char *) values + count * value_size) < 0 ||
                                    bpf_map_delete_elem(fd, &keys[count]) < 0)
                                        return negative_errno();
                                count++;
                        }
                        last = count < NODES_BATCH;
                }
                for (__u32 i = 0; i < count; i++) {
                        struct stack_node *s = stack_node_from_value((char *) values + i * value_size, value_size);

                        if (!s) {
                                if (errno == ENOMEM)
                                        return -ENOMEM;
                                continue;
                        }
                        r = hashmap_put(nodes, UINT64_TO_KEY(keys[i]), s);
                        if (r < 0) {
                                free(s);
                                if (r != -EEXIST)
                                        return r;
                        }
                }
                if (last)
                        return 0;
        }
}

/* The stack a key names, put together from the nodes into stacks (id ->
 * struct stack_trace*) unless it is there. A chain with a node missing
 * cannot come from BPF (parents are stored first, and nothing deletes
 * during a generation): its key keeps a [lost] stack, logged. */
static int stack_add(hashmap *stacks, const hashmap *nodes, uint64_t id) {
        struct stack_trace *t;
        void *v;
        int r;

        if (id == PROFD_STACK_NONE || id == PROFD_STACK_LOST || hashmap_get(stacks, UINT64_TO_KEY(id), &v) == 0)
                return 0;
        r = stack_nodes_assemble(nodes, id, &t);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_debug_errno(r, "Stack %016" PRIx64 " has no complete chain of nodes, keeping it as lost: %m", id);
                return 0;
        }
        r = hashmap_put(stacks, UINT64_TO_KEY(id), t);
        if (r < 0)
                free(t);
        return r;
}

/* A sampler's key with its user leaf apart (PROFD_KEY_LEAF): its stack,
 * the leaf then the callers key->user_stack names, goes into stacks under
 * an id of its own (stack_leaf_id), which the key takes instead, the leaf
 * fields cleared: past the drain a key names its whole stack, as every
 * other key does. A key whose callers were lost keeps its lost stack. */
static int stack_add_leaf(hashmap *stacks, const hashmap *nodes, struct profd_sample_key *key) {
        uint64_t leaf = PROFD_KEY_LEAF(key), id = key->user_stack, sid;
        void *v;
        int r;

        key->leaf_lo = 0;
        key->leaf_hi = 0;
        r = stack_add(stacks, nodes, id);
        if (r < 0)
                return r;
        if (hashmap_get(stacks, UINT64_TO_KEY(id), &v) < 0)
                return 0; /* none, lost, or a chain with a node missing (logged) */
        r = stacks_put_with_leaf(stacks, id, v, leaf, &sid);
        if (r == -ELOOP || r == -EEXIST) {
                log_debug_errno(r, "Stack %016" PRIx64 " with its leaf has no id of its own, keeping it as lost: %m", id);
                key->user_stack = PROFD_STACK_LOST;
                return 0;
        }
        if (r >= 0)
                key->user_stack = sid;
        return r;
}

/* Reads every node of a generation's stack maps (deleting them) and puts
 * together the stacks the n drained keys name, into a hash map id ->
 * stack_trace. */
static int drain_frames(collector *c, unsigned gen, size_t n, hashmap **ret) {
        hashmap *nodes = hashmap_new_u64(), *stacks = hashmap_new_u64();
        int r = 0;

        if (!nodes || !stacks) {
                r = -ENOMEM;
                goto done;
        }
        for (unsigned k = 0; k < PROFD_CLASS__MAX && r >= 0; k++) {
                struct bpf_map *m = frames_map(c, k, gen);
                r = drain_node_map(bpf_map__fd(m), bpf_map__value_size(m), nodes);
        }
        for (size_t i = 0; i < n && r >= 0; i++) {
                struct profd_sample_key *key = &c->keys_buf[i];

                if (key->kind == PROFD_KIND_CPU && PROFD_KEY_LEAF(key) != 0)
                        r = stack_add_leaf(stacks, nodes, key);
                else
                        r = stack_add(stacks, nodes, key->user_stack);
                if (r >= 0)
                        r = stack_add(stacks, nodes, c->keys_buf[i].kernel_stack);
        }
done:
        stacks_free(nodes);
        if (r < 0) {
                stacks_free(stacks);
                return r;
        }
        *ret = stacks;
        return 0;
}

static int read_counters(collector *c, uint64_t ret_delta[PROFD_COUNTER__MAX]) {
        _cleanup_free_ struct profd_counters *per_cpu = calloc(c->n_possible_cpus, sizeof(*per_cpu));
        int fd = bpf_map__fd(c->skel->maps.counters);
        __u32 zero = 0;

        if (!per_cpu)
                return -ENOMEM;
        if (bpf_map_lookup_elem(fd, &zero, per_cpu) < 0)
                return negative_errno();
        for (__u32 i = 0; i < PROFD_COUNTER__MAX; i++) {
                uint64_t sum = 0;

                for (unsigned cpu = 0; cpu < c->n_possible_cpus; cpu++)
                        sum += per_cpu[cpu].v[i];
                ret_delta[i] = sum - c->counters_total[i];
        }
        return 0;
}

/* Makes the programs write the other generation, then waits until none still
 * writes the old one: updating an ARRAY_OF_MAPS waits for an RCU grace
 * period, and every BPF program runs inside an RCU read-side section. */
static int flip_generation(collector *c) {
        int inner_fd = bpf_map__fd(c->skel->maps.barrier_inner);
        __u32 zero = 0;

        c->gen++;
        __atomic_store_n(&c->skel->bss->generation, c->gen, __ATOMIC_SEQ_CST);
        if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.barrier), &zero, &inner_fd, BPF_ANY) < 0)
                return negative_errno();
        return 0;
}

/* What a drain that failed after reading the maps does: the batch's
 * memory goes, the failure is logged once. Returns r. */
static int drain_failed(struct drain_batch *b, int r) {
        drain_batch_done(b);
        return log_error_errno(r, "Failed to drain the kernel maps: %m");
}

_Static_assert(PROFD_CNT_NODES_NEW_8 + PROFD_CLASS_16 == PROFD_CNT_NODES_NEW_16 &&
                       PROFD_CNT_NODES_NEW_8 + PROFD_CLASS_32 == PROFD_CNT_NODES_NEW_32,
               "a class's new nodes are counted at PROFD_CNT_NODES_NEW_8 + class");

int collector_fill(collector *c, struct mapsize_fill *ret) {
        uint64_t delta[PROFD_COUNTER__MAX];
        int r = read_counters(c, delta);

        if (r < 0)
                return r;
        *ret = (struct mapsize_fill) { .keys = delta[PROFD_CNT_KEYS_NEW], .keys_max = c->counts_max };
        for (unsigned k = 0; k < PROFD_CLASS__MAX; k++) {
                ret->nodes[k] = delta[PROFD_CNT_NODES_NEW_8 + k];
                ret->nodes_max[k] = c->nodes_max[k];
        }
        return 0;
}

int collector_drain(collector *c, struct drain_batch *ret) {
        struct drain_batch b = {};
        uint64_t unmatched[2] = {};
        uint32_t old;
        size_t n;
        int r;

        r = flip_generation(c);
        if (r < 0)
                return log_error_errno(r, "Failed to wait for BPF programs after the generation flip: %m");
        old = (c->gen & 1) ^ 1;
        /* the counters at once: every program that could still count into
         * the old generation has ended (the flip's grace period), and only
         * the few samples of the new one between the flip and this read are
         * counted a drain early. Read after the maps, they would hold every
         * sample of the new generation for as long as the drain takes. */
        r = read_counters(c, b.counters);
        if (r < 0)
                return log_error_errno(r, "Failed to read the counters: %m");

        r = drain_counts(c, bpf_map__fd(old ? c->skel->maps.counts_1 : c->skel->maps.counts_0), &n);
        /* before the sampler's log's keys join them: a block's key is
         * among the counts map's, which are distinct */
        if (r >= 0)
                r = drain_blocks(c, old, n, unmatched, &b.blocks, &b.n_blocks);
        if (r >= 0)
                r = drain_log(c, old, &n, &b.timeline, &b.n_timeline);
        if (r < 0) {
                drain_batch_done(&b);
                return log_error_errno(r, "Failed to read the aggregation map: %m");
        }
        r = drain_frames(c, old, n, &b.frames);
        if (r < 0)
                return drain_failed(&b, r);

        b.entries = calloc(n ? n : 1, sizeof(*b.entries));
        if (!b.entries)
                return drain_failed(&b, -ENOMEM);
        for (size_t i = 0; i < n; i++)
                b.entries[i] = (struct drain_entry) { c->keys_buf[i], c->values_buf[i] };
        b.n_entries = n;
        b.user_ends_known = c->user_ends_known;
        /* taken: a drain that failed leaves its counts to the next one */
        for (__u32 i = 0; i < PROFD_COUNTER__MAX; i++)
                c->counters_total[i] += b.counters[i];
        /* the daemon's own count, after the totals that mirror BPF's */
        b.counters[PROFD_CNT_OFFCPU_UNLOGGED] += unmatched[0];
        b.counters[PROFD_CNT_OFFCPU_UNLOGGED_NS] += unmatched[1];
        *ret = b;
        return 0;
}

void drain_batch_done(struct drain_batch *b) {
        stacks_free(b->frames);
        free(b->entries);
        free(b->timeline);
        free(b->blocks);
        *b = (struct drain_batch) {};
}
