/* Fills a profd store with synthetic but realistic data: by default a day of
 * a busy 2-CPU host at profd's defaults (49 Hz, 10 s drains, kinds
 * cpu+offcpu+wakeup), written through the daemon's own store code, so the
 * file is exactly what profd would have written. For query benchmarks
 * (tests/bench/query_bench.py); deterministic for a given seed.
 *
 * What makes it realistic enough to measure queries on:
 * - processes: systemd services (each in its unit's cgroup), nginx, postgres
 *   backends, gunicorn workers, a JVM and node with JIT frames, a few docker
 *   containers, a user session, kernel threads; short-lived processes
 *   (cron jobs, shells, compilers) come and go with new pids, services
 *   restart now and then;
 * - stacks: walks through each program's call graph (every function
 *   calls a few others, always the same ones, the first ones most often),
 *   so stacks share long prefixes like real programs do (startup code,
 *   event loops, interpreter frames) and a call site is one location in
 *   every stack that passes it; mostly 10 to 60 frames deep (average 27,
 *   kernel threads fewer), ending in libc and kernel frames (syscalls, page
 *   faults, the scheduler for off-CPU, the wake-up paths for wakers);
 *   popularity is Zipf-like;
 * - symbols: demangled C++ names with their raw names, file:line and inline
 *   chains for binaries with debug info, unresolved frames of a stripped
 *   binary, build-ids;
 * - load: on-CPU samples at the frequency times CPUs times interval times a
 *   daily busy curve, aggregated per (thread, stack) like the kernel maps
 *   do; off-CPU and wake-up keys with their states and nanoseconds;
 * - with --timeline, each on-CPU sample's own time (schema 11's timeline,
 *   as profd's writer stores it), in bursts per process (below). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hashmap.h"
#include "log.h"
#include "macro.h"
#include "conf.h"
#include "retention.h"
#include "store.h"

/* The kinds and states as the store keeps them (bpf/profd.h); repeated here
 * so this tool does not need the BPF headers. */
enum { KIND_CPU = 0, KIND_OFFCPU = 1, KIND_WAKEUP = 2 };
enum { STATE_NONE = 0, STATE_R = 1, STATE_S = 2, STATE_D = 3 };

/* ---- deterministic randomness ------------------------------------------- */

static uint64_t mix64(uint64_t x) {
        x ^= x >> 30;
        x *= 0xbf58476d1ce4e5b9ULL;
        x ^= x >> 27;
        x *= 0x94d049bb133111ebULL;
        x ^= x >> 31;
        return x;
}

static uint64_t mix2(uint64_t a, uint64_t b) {
        return mix64(a ^ mix64(b + 0x9e3779b97f4a7c15ULL));
}

typedef struct {
        uint64_t s;
} rng;

static uint64_t rng_next(rng *r) {
        r->s += 0x9e3779b97f4a7c15ULL;
        return mix64(r->s);
}

static double rng_unit(rng *r) {
        return (double) (rng_next(r) >> 11) / (double) (1ULL << 53);
}

static unsigned rng_below(rng *r, unsigned n) {
        return n ? (unsigned) (rng_next(r) % n) : 0;
}

/* A branch index: 0 half the time, 1 a quarter, ...: siblings near the
 * front are taken most, so stacks share their prefixes. */
static unsigned rng_skewed(rng *r, unsigned max) {
        unsigned k = 0;
        while (k + 1 < max && rng_unit(r) < 0.45)
                k++;
        return k;
}

/* Zipf(s) over ranks 0..n-1 by inverse CDF. */
struct zipf {
        double *cdf;
        size_t n;
};

static int zipf_init(struct zipf *z, size_t n, double s) {
        double sum = 0;

        z->n = n;
        z->cdf = malloc(MAX(n, 1) * sizeof(double));
        if (!z->cdf)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                z->cdf[i] = (sum += 1.0 / pow((double) i + 1, s));
        for (size_t i = 0; i < n; i++)
                z->cdf[i] /= sum;
        return 0;
}

static size_t zipf_pick(const struct zipf *z, rng *r) {
        double u = rng_unit(r);
        size_t lo = 0, hi = z->n ? z->n - 1 : 0;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (z->cdf[mid] < u)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* ---- memory that lives as long as the run --------------------------------- */

static void **arena;
static size_t n_arena, arena_cap;

static void *keep(void *p) {
        if (!p)
                return NULL;
        if (n_arena == arena_cap) {
                size_t cap = MAX(arena_cap * 2, 1024);
                void **a = realloc(arena, cap * sizeof(void *));
                if (!a) {
                        free(p);
                        return NULL;
                }
                arena = a;
                arena_cap = cap;
        }
        arena[n_arena++] = p;
        return p;
}

static char *keep_printf(const char *fmt, ...) _printf_(1, 2);
static char *keep_printf(const char *fmt, ...) {
        va_list ap;
        char *s;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&s, fmt, ap);
        va_end(ap);
        return n < 0 ? NULL : keep(s);
}

static void arena_free(void) {
        for (size_t i = 0; i < n_arena; i++)
                free(arena[i]);
        free(arena);
}

/* ---- modules and functions ------------------------------------------------ */

struct module {
        const char *path;
        const char *build_id; /* NULL: none */
        bool kernel;
        bool debug;    /* has debug info: file:line, inline chains */
        bool stripped; /* no symbols: frames stay module+0xoffset */
        uint64_t base;
        unsigned n_functions;
        const char *src_dir;
};

struct function {
        const struct module *mod;
        const char *name, *raw;
        uint64_t address; /* start; call sites follow within 0x400 */
        const char *file;
        unsigned line;
};

static hashmap *functions; /* "module\nname" -> struct function */

static const char *build_id_for(const char *path) {
        return keep_printf("%016" PRIx64 "%016" PRIx64 "%08" PRIx32, mix64(hash_bytes(path, strlen(path))),
                           mix2(hash_bytes(path, strlen(path)), 1), (uint32_t) mix2(hash_bytes(path, strlen(path)), 2));
}

static struct module *module_new(const char *path, bool kernel, bool debug, bool stripped, bool with_build_id) {
        struct module *m = keep(calloc(1, sizeof(*m)));

        if (!m)
                return NULL;
        m->path = path;
        m->kernel = kernel;
        m->debug = debug;
        m->stripped = stripped;
        m->build_id = with_build_id ? build_id_for(path) : NULL;
        m->base = kernel ? 0xffffffff81000000ULL : 0x1000;
        m->src_dir = "src";
        return m;
}

/* The Itanium mangling of a::b::c() for the raw name of a C++ function. */
static char *mangle(const char *demangled) {
        char buf[512];
        size_t o = 0;
        const char *p = demangled, *end = strstr(demangled, "(");
        size_t parts = 0;

        if (!end)
                end = p + strlen(p);
        o += snprintf(buf + o, sizeof(buf) - o, "_ZN");
        while (p < end && o < sizeof(buf) - 32) {
                const char *sep = strstr(p, "::");
                size_t len = (sep && sep < end ? sep : end) - p;
                o += snprintf(buf + o, sizeof(buf) - o, "%zu%.*s", len, (int) len, p);
                parts++;
                p += len + (sep && sep < end ? 2 : 0);
                if (!sep || sep >= end)
                        break;
        }
        snprintf(buf + o, sizeof(buf) - o, "Ev");
        return keep(strdup(parts > 1 ? buf : demangled));
}

static const struct function *function_get(struct module *m, const char *name) {
        char key[512];
        struct function *f;
        void *v;

        snprintf(key, sizeof(key), "%s\n%s", m->path, name);
        if (hashmap_get(functions, key, &v) >= 0)
                return v;
        f = keep(calloc(1, sizeof(*f)));
        if (!f)
                return NULL;
        f->mod = m;
        f->name = keep(strdup(name));
        f->raw = strstr(name, "::") && !m->kernel ? mangle(name) : f->name;
        /* disjoint ranges: an address belongs to exactly one function */
        f->address = m->base + (uint64_t) m->n_functions++ * (m->kernel ? 0x1000 : 0x400);
        if (m->debug) {
                uint64_t h = hash_bytes(name, strlen(name));
                static const char *const files[] = { "main", "server", "worker", "util", "io", "parse", "cache",
                                                     "net", "db", "proto", "config", "alloc" };
                f->file = keep_printf("%s/%s.c", m->src_dir, files[h % ELEMENTSOF(files)]);
                f->line = 20 + (unsigned) (mix64(h) % 3000);
        }
        if (!f->name || !f->raw || (m->debug && !f->file))
                return NULL;
        char *k = strdup(key);
        if (!k || hashmap_put(functions, k, f) < 0) {
                free(k);
                return NULL;
        }
        return f;
}

/* One frame of a stack: the function's call site `site` (0..0x3ff). */
static int frame_make(struct module *m, const char *name, unsigned site, bool innermost, struct store_frame *ret) {
        const struct function *f = function_get(m, name);
        struct store_line *lines;
        uint64_t h;

        if (!f)
                return -ENOMEM;
        site %= 0x3f0;
        *ret = (struct store_frame) {
                .module = m->path,
                .build_id = m->build_id,
                /* return addresses are stored minus one, as the writer does */
                .address = f->address + 0x10 + site - (innermost ? 0 : 1),
                .function = m->stripped ? NULL : f->name,
                .raw_function = m->stripped || f->raw == f->name ? NULL : f->raw,
                .kernel = m->kernel,
        };
        if (!m->debug || m->stripped)
                return 0;
        /* debug info: the function's line, and now and then an inlined
         * helper at this call site (innermost first, the function last) */
        h = mix2(f->address, site);
        bool inlined = h % 7 == 0;
        lines = keep(calloc(2, sizeof(*lines)));
        if (!lines)
                return -ENOMEM;
        if (inlined) {
                static const char *const helpers[] = { "buf_append", "list_next", "hash_lookup", "min_size",
                                                       "ref_get", "str_eq", "bitmap_test", "vec_push" };
                const char *helper = helpers[(h >> 8) % ELEMENTSOF(helpers)];
                lines[0] = (struct store_line) { .function = helper, .file = keep_printf("%s/inline.h", m->src_dir),
                                                 .line = 40 + (unsigned) ((h >> 16) % 200), .inlined = true };
                if (!lines[0].file)
                        return -ENOMEM;
        }
        lines[inlined] = (struct store_line) { .function = f->name, .raw_function = ret->raw_function, .file = f->file,
                                               .line = f->line + site / 16, .inlined = false };
        ret->lines = lines;
        ret->n_lines = inlined + 1;
        return 0;
}

/* ---- what programs look like ---------------------------------------------- */

enum prog_type {
        PROG_C,       /* C program: generated names with a prefix */
        PROG_CXX,     /* C++: Namespace::Class::method(), mangled raw names */
        PROG_PYTHON,  /* CPython interpreter frames */
        PROG_JAVA,    /* JVM: libjvm threads and JIT frames */
        PROG_NODE,    /* node: libuv and V8 JIT frames */
        PROG_KTHREAD, /* kernel thread: kernel frames only */
};

struct program {
        const char *comm;
        const char *exe;
        const char *unit;   /* cgroup below the root, "" for the root */
        uint32_t uid;
        enum prog_type type;
        const char *prefix; /* generated function names */
        double cpu;         /* how busy one instance is, relative */
        unsigned threads;
        unsigned copies;    /* instances when the host is filled up (0: exactly one) */
        unsigned lifetime;  /* drains a short-lived instance lives; 0: long-lived */
        bool debug;
        bool stripped;
        bool container;     /* runs in a docker container's cgroup */
};

static const struct program programs[] = {
        { "systemd", "/usr/lib/systemd/systemd", "/init.scope", 0, PROG_C, "manager", 0.2, 1, 0, 0, false, false, false },
        { "systemd-journal", "/usr/lib/systemd/systemd-journald", "/system.slice/systemd-journald.service", 0, PROG_C, "journal", 0.6, 1, 0, 0, false, false, false },
        { "systemd-logind", "/usr/lib/systemd/systemd-logind", "/system.slice/systemd-logind.service", 0, PROG_C, "logind", 0.05, 1, 0, 0, false, false, false },
        { "systemd-udevd", "/usr/lib/systemd/systemd-udevd", "/system.slice/systemd-udevd.service", 0, PROG_C, "udev", 0.05, 1, 0, 0, false, false, false },
        { "dbus-daemon", "/usr/bin/dbus-daemon", "/system.slice/dbus.service", 101, PROG_C, "bus", 0.1, 1, 0, 0, false, false, false },
        { "sshd", "/usr/sbin/sshd", "/system.slice/ssh.service", 0, PROG_C, "sshd", 0.05, 1, 0, 0, false, false, false },
        { "cron", "/usr/sbin/cron", "/system.slice/cron.service", 0, PROG_C, "cron", 0.01, 1, 0, 0, false, false, false },
        { "rsyslogd", "/usr/sbin/rsyslogd", "/system.slice/rsyslog.service", 0, PROG_C, "rs", 0.3, 4, 0, 0, false, false, false },
        { "nginx", "/usr/sbin/nginx", "/system.slice/nginx.service", 33, PROG_C, "ngx", 2.0, 1, 4, 0, true, false, false },
        { "postgres", "/usr/lib/postgresql/15/bin/postgres", "/system.slice/system-postgresql.slice/postgresql@15-main.service", 106, PROG_C, "pg", 1.5, 1, 40, 0, true, false, false },
        { "gunicorn", "/usr/bin/python3.11", "/system.slice/shop-api.service", 1001, PROG_PYTHON, NULL, 2.5, 2, 12, 0, false, false, false },
        { "java", "/usr/lib/jvm/java-17-openjdk-amd64/bin/java", "/system.slice/orders.service", 1002, PROG_JAVA, "orders", 4.0, 40, 0, 0, false, false, false },
        { "node", "/usr/bin/node", "/system.slice/frontend.service", 1003, PROG_NODE, "front", 2.0, 11, 4, 0, false, false, false },
        { "envoy", "/usr/local/bin/envoy", "/system.slice/envoy.service", 1004, PROG_CXX, "Envoy", 1.5, 8, 0, 0, true, false, false },
        { "redis-server", "/usr/bin/redis-server", "/system.slice/redis-server.service", 107, PROG_C, "redis", 0.8, 4, 0, 0, false, false, false },
        { "containerd", "/usr/bin/containerd", "/system.slice/containerd.service", 0, PROG_C, "runtime", 0.3, 12, 0, 0, false, false, false },
        { "dockerd", "/usr/sbin/dockerd", "/system.slice/docker.service", 0, PROG_C, "docker", 0.2, 16, 0, 0, false, false, false },
        { "vendor-agent", "/opt/vendor/bin/vendor-agent", "/system.slice/vendor-agent.service", 0, PROG_C, "agent", 0.4, 6, 0, 0, false, true, false },
        { "containerd-shim", "/usr/bin/containerd-shim-runc-v2", "/system.slice/containerd.service", 0, PROG_C, "shim", 0.02, 10, 6, 0, false, false, false },
        { "nginx", "/usr/sbin/nginx", NULL, 101, PROG_C, "ngx", 1.0, 1, 6, 0, false, false, true },
        { "python3", "/usr/local/bin/python3.11", NULL, 1000, PROG_PYTHON, NULL, 1.5, 4, 6, 0, false, false, true },
        { "redis-server", "/usr/local/bin/redis-server", NULL, 999, PROG_C, "redis", 0.6, 4, 3, 0, false, false, true },
        { "bash", "/usr/bin/bash", "/user.slice/user-1000.slice/session-3.scope", 1000, PROG_C, "sh", 0.02, 1, 3, 0, false, false, false },
        { "tmux: server", "/usr/bin/tmux", "/user.slice/user-1000.slice/user@1000.service/app.slice/tmux-spawn.scope", 1000, PROG_C, "tmux", 0.05, 1, 0, 0, false, false, false },
        { "vim", "/usr/bin/vim.basic", "/user.slice/user-1000.slice/session-3.scope", 1000, PROG_C, "vim", 0.05, 1, 0, 0, false, false, false },
        /* short-lived: cron jobs, builds, shells, health checks */
        { "cc1", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "/user.slice/user-1000.slice/session-3.scope", 1000, PROG_C, "gcc", 3.0, 1, 2, 3, false, false, false },
        { "gzip", "/usr/bin/gzip", "/system.slice/logrotate.service", 0, PROG_C, "gz", 3.0, 1, 1, 2, false, false, false },
        { "python3", "/usr/bin/python3.11", "/system.slice/backup.service", 0, PROG_PYTHON, NULL, 1.5, 1, 1, 6, false, false, false },
        { "curl", "/usr/bin/curl", "/system.slice/healthcheck.service", 0, PROG_C, "curl", 0.3, 2, 2, 1, false, false, false },
        { "sh", "/usr/bin/dash", "/system.slice/cron.service", 0, PROG_C, "sh", 0.1, 1, 3, 1, false, false, false },
        { "psql", "/usr/lib/postgresql/15/bin/psql", "/system.slice/backup.service", 106, PROG_C, "psql", 0.4, 1, 1, 2, false, false, false },
        /* kernel threads */
        { "kworker/u4:2", NULL, "", 0, PROG_KTHREAD, NULL, 0.2, 1, 6, 0, false, false, false },
        { "ksoftirqd/0", NULL, "", 0, PROG_KTHREAD, NULL, 0.3, 1, 0, 0, false, false, false },
        { "ksoftirqd/1", NULL, "", 0, PROG_KTHREAD, NULL, 0.3, 1, 0, 0, false, false, false },
        { "rcu_preempt", NULL, "", 0, PROG_KTHREAD, NULL, 0.05, 1, 0, 0, false, false, false },
        { "jbd2/vda1-8", NULL, "", 0, PROG_KTHREAD, NULL, 0.1, 1, 0, 0, false, false, false },
};

static const char *const verbs[] = {
        "read", "write", "parse", "handle", "process", "send", "recv", "update", "init", "run", "flush",
        "alloc", "release", "lookup", "insert", "compare", "hash", "encode", "decode", "validate", "dispatch",
        "schedule", "poll", "copy", "merge", "sort", "scan", "emit", "apply", "resolve", "finish", "open",
};
static const char *const nouns[] = {
        "request", "header", "buffer", "chunk", "event", "timer", "conn", "session", "table", "index", "page",
        "tuple", "row", "node", "key", "value", "entry", "frame", "packet", "stream", "block", "record",
        "message", "query", "plan", "cache", "queue", "task", "worker", "state", "body", "upstream",
};
static const char *const python_fns[] = {
        "_PyEval_EvalFrameDefault", "_PyFunction_Vectorcall", "PyObject_Vectorcall", "method_vectorcall",
        "slot_tp_call", "_PyObject_MakeTpCall", "PyObject_Call", "cfunction_vectorcall_FASTCALL_KEYWORDS",
        "_PyObject_Call_Prepend", "vectorcall_method", "slot_tp_init", "type_call", "builtin_exec",
        "list_extend", "dict_subscript", "PyDict_SetItem", "_PyUnicode_JoinArray", "unicode_concatenate",
        "PyObject_GetAttr", "_PyObject_GenericGetAttrWithDict", "lookdict_unicode_nodummy", "long_add",
        "_PyLong_Copy", "sre_ucs1_search", "pattern_subx", "json_encode_dict" /* _json */,
        "scanstring_unicode", "_io_TextIOWrapper_write", "_bufferedwriter_flush_unlocked", "sock_recv",
        "sock_send", "gen_send_ex2", "task_step_impl", "_PyGen_Send", "PyObject_RichCompare",
};

static const char *gen_name(const struct program *p, uint64_t h) {
        const char *v = verbs[h % ELEMENTSOF(verbs)], *n = nouns[(h >> 16) % ELEMENTSOF(nouns)];

        switch (p->type) {
        case PROG_CXX: {
                static const char *const classes[] = { "Http::ConnectionManagerImpl", "Network::FilterManagerImpl",
                        "Router::Filter", "Upstream::ClusterManagerImpl", "Event::DispatcherImpl",
                        "Buffer::OwnedImpl", "Stats::ThreadLocalStoreImpl", "Http::CodecClient",
                        "Tls::SslSocket", "Config::GrpcMuxImpl" };
                return keep_printf("%s::%s::%s%c%s()", p->prefix, classes[(h >> 32) % ELEMENTSOF(classes)], v,
                                   n[0] - 32, n + 1);
        }
        case PROG_JAVA:
                return keep_printf("Lcom/acme/%s/%c%sService;::%s%c%s", p->prefix, n[0] - 32, n + 1, v,
                                   nouns[(h >> 40) % ELEMENTSOF(nouns)][0] - 32, nouns[(h >> 40) % ELEMENTSOF(nouns)] + 1);
        case PROG_NODE:
                return keep_printf("LazyCompile:*%s%c%s /srv/%s/lib/%s.js:%u", v, n[0] - 32, n + 1, p->prefix, n,
                                   (unsigned) ((h >> 24) % 900) + 1);
        case PROG_PYTHON:
                return python_fns[h % ELEMENTSOF(python_fns)];
        default:
                return keep_printf("%s_%s_%s", p->prefix, v, n);
        }
}

/* ---- libc and kernel paths ------------------------------------------------ */

struct path {
        const char *const libc[3];    /* outermost first */
        const char *const kernel[14]; /* outermost first */
        int state;                    /* offcpu: the state a thread blocks in there */
};

/* on-CPU leaves: user code only, libc, or into the kernel */
static const struct path cpu_paths[] = {
        { { NULL }, { NULL }, 0 },
        { { NULL }, { NULL }, 0 },
        { { "__memmove_avx_unaligned_erms" }, { NULL }, 0 },
        { { "malloc", "_int_malloc" }, { NULL }, 0 },
        { { "free", "_int_free" }, { NULL }, 0 },
        { { "__strlen_avx2" }, { NULL }, 0 },
        { { "__memcmp_avx2_movbe" }, { NULL }, 0 },
        { { "__libc_write" }, { "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "ksys_write", "vfs_write",
                                "ext4_buffered_write_iter", "generic_perform_write", "copy_page_from_iter_atomic",
                                "rep_movs_alternative" }, 0 },
        { { "__libc_send" }, { "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_sendto",
                               "__sys_sendto", "tcp_sendmsg", "tcp_sendmsg_locked", "tcp_push",
                               "__tcp_push_pending_frames", "tcp_write_xmit", "__tcp_transmit_skb",
                               "__ip_queue_xmit", "ip_finish_output2", "__dev_queue_xmit", "start_xmit" }, 0 },
        { { NULL }, { "asm_exc_page_fault", "exc_page_fault", "do_user_addr_fault", "handle_mm_fault",
                      "__handle_mm_fault", "do_anonymous_page", "clear_page_erms" }, 0 },
        { { "__libc_read" }, { "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "ksys_read", "vfs_read",
                               "filemap_read", "copy_page_to_iter", "rep_movs_alternative" }, 0 },
        { { "epoll_wait" }, { "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_epoll_wait",
                              "do_epoll_wait", "ep_poll", "ep_send_events" }, 0 },
};

static const struct path offcpu_paths[] = {
        { { "epoll_wait" }, { "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_epoll_wait",
                              "do_epoll_wait", "ep_poll", "schedule_hrtimeout_range_clock", "schedule",
                              "__schedule" }, STATE_S },
        { { "pthread_cond_wait", "__futex_abstimed_wait_common" },
          { "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_futex", "do_futex", "futex_wait",
            "futex_wait_queue", "schedule", "__schedule" }, STATE_S },
        { { "__libc_recv" }, { "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_recvfrom",
                               "__sys_recvfrom", "inet_recvmsg", "tcp_recvmsg", "tcp_recvmsg_locked",
                               "sk_wait_data", "wait_woken", "schedule_timeout", "schedule", "__schedule" }, STATE_S },
        { { "__libc_pread64" }, { "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_pread64",
                                  "vfs_read", "ext4_file_read_iter", "filemap_read", "filemap_get_pages",
                                  "filemap_update_page", "folio_wait_bit_common", "io_schedule", "schedule",
                                  "__schedule" }, STATE_D },
        { { "fdatasync" }, { "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_fdatasync",
                             "ext4_sync_file", "file_write_and_wait_range", "__filemap_fdatawait_range",
                             "folio_wait_bit_common", "io_schedule", "schedule", "__schedule" }, STATE_D },
        { { "__clock_nanosleep" }, { "entry_SYSCALL_64_after_hwframe", "do_syscall_64",
                                     "__x64_sys_clock_nanosleep", "common_nsleep", "hrtimer_nanosleep",
                                     "do_nanosleep", "schedule", "__schedule" }, STATE_S },
        { { "__poll" }, { "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_poll", "do_sys_poll",
                          "do_poll", "poll_schedule_timeout", "schedule_hrtimeout_range_clock", "schedule",
                          "__schedule" }, STATE_S },
        { { NULL }, { "asm_sysvec_apic_timer_interrupt", "sysvec_apic_timer_interrupt",
                      "irqentry_exit_to_user_mode", "exit_to_user_mode_loop", "schedule", "__schedule" }, STATE_R },
        { { NULL }, { "asm_exc_page_fault", "exc_page_fault", "do_user_addr_fault", "handle_mm_fault",
                      "__handle_mm_fault", "do_read_fault", "filemap_fault", "__folio_lock_or_retry",
                      "folio_wait_bit_common", "io_schedule", "schedule", "__schedule" }, STATE_D },
};

static const struct path wakeup_paths[] = {
        { { "__libc_write" }, { "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "ksys_write", "vfs_write",
                                "pipe_write", "__wake_up_sync_key", "__wake_up_common",
                                "autoremove_wake_function", "try_to_wake_up" }, STATE_S },
        { { "pthread_cond_signal", "__futex_wake" }, { "entry_SYSCALL_64_after_hwframe", "do_syscall_64",
                                                       "__x64_sys_futex", "do_futex", "futex_wake", "wake_up_q",
                                                       "try_to_wake_up" }, STATE_S },
        { { "__libc_send" }, { "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_sendto",
                               "__sys_sendto", "tcp_sendmsg", "__tcp_push_pending_frames", "tcp_write_xmit",
                               "ip_finish_output2", "__dev_queue_xmit", "__local_bh_enable_ip", "tcp_v4_rcv",
                               "sock_def_readable", "ep_poll_callback", "try_to_wake_up" }, STATE_S },
        { { "epoll_ctl" }, { "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_epoll_ctl",
                             "do_epoll_ctl", "ep_insert", "ep_poll_callback", "__wake_up_common",
                             "try_to_wake_up" }, STATE_S },
};

/* waking an I/O waiter: from an interrupt, on whatever task it hit */
static const char *const irq_wake[] = { "asm_common_interrupt", "common_interrupt", "__common_interrupt",
                                        "handle_edge_irq", "handle_irq_event", "vring_interrupt",
                                        "blk_mq_complete_request", "blk_mq_end_request", "folio_end_writeback",
                                        "folio_wake_bit", "__wake_up_common", "wake_page_function",
                                        "try_to_wake_up", NULL };
static const char *const kthread_start[] = { "ret_from_fork_asm", "ret_from_fork", "kthread", NULL };
static const char *const kthread_work[][8] = {
        { "worker_thread", "process_one_work", "wb_workfn", "wb_writeback", "writeback_sb_inodes",
          "__writeback_single_inode", "do_writepages", "ext4_writepages" },
        { "worker_thread", "process_one_work", "vmstat_update", "refresh_cpu_vm_stats" },
        { "worker_thread", "process_one_work", "blk_mq_run_work_fn", "__blk_mq_run_hw_queue",
          "blk_mq_sched_dispatch_requests", "virtio_queue_rq", "virtqueue_add_split" },
        { "smpboot_thread_fn", "run_ksoftirqd", "handle_softirqs", "net_rx_action", "__napi_poll",
          "virtnet_poll", "napi_gro_receive", "netif_receive_skb_list_internal" },
        { "rcu_gp_kthread", "rcu_gp_fqs_loop", "force_qs_rnp", "rcu_implicit_dynticks_qs" },
        { "kjournald2", "jbd2_journal_commit_transaction", "jbd2_journal_write_metadata_buffer",
          "submit_bh_wbc", "submit_bio_noacct" },
};
static const char *const kthread_wait[] = { "worker_thread", "schedule", "__schedule", NULL };

/* ---- stacks --------------------------------------------------------------- */

struct stack {
        struct store_frame *frames;
        size_t n;
        int state; /* offcpu */
};

struct stack_set {
        struct stack *stacks;
        size_t n;
        struct zipf popularity;
};

struct program_data {
        const struct program *p;
        struct module *exe, *app; /* app: where generated functions live (exe, or [jit]) */
        struct stack_set sets[3]; /* per kind */
};

static struct module *libc_mod, *kernel_mod, *ld_mod, *libpthread_mod, *libstdcxx_mod, *libjvm_mod,
        *libssl_mod, *libuv_mod;

struct builder {
        struct store_frame *f;
        struct module **mods;
        const char **names;
        unsigned leaf_site;
        size_t n, cap;
        int r;
};

/* Adds a frame; its address is decided when the stack is complete
 * (builder_finish). `site` varies the innermost frame's address only. */
static void push(struct builder *b, struct module *m, const char *name, unsigned site) {
        if (b->r < 0)
                return;
        if (b->n == b->cap) {
                size_t cap = MAX(b->cap * 2, 64);
                struct module **mods = realloc(b->mods, cap * sizeof(*mods));
                const char **names = mods ? realloc(b->names, cap * sizeof(*names)) : NULL;
                if (mods)
                        b->mods = mods;
                if (!names) {
                        b->r = -ENOMEM;
                        return;
                }
                b->names = names;
                b->cap = cap;
        }
        b->mods[b->n] = m;
        b->names[b->n] = name;
        b->leaf_site = site;
        b->n++;
}

/* The frames: a caller's return address is its call site of the callee, so
 * the same call (function A calling B) is the same location in every stack,
 * as in a real program; the innermost frame is the sampled address, one of
 * a few in the function. */
static int builder_finish(struct builder *b) {
        if (b->r < 0)
                return b->r;
        b->f = calloc(MAX(b->n, 1u), sizeof(*b->f));
        if (!b->f)
                return -ENOMEM;
        for (size_t i = 0; i < b->n; i++) {
                bool innermost = i + 1 == b->n;
                unsigned site = innermost ? b->leaf_site % 8
                                          : (unsigned) mix2(hash_bytes(b->names[i], strlen(b->names[i])),
                                                            hash_bytes(b->names[i + 1], strlen(b->names[i + 1])));
                int r = frame_make(b->mods[i], b->names[i], site, innermost, &b->f[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The frames from the thread's start to the program's main loop. */
static void push_startup(struct builder *b, const struct program_data *pd, bool main_thread, unsigned variant) {
        const struct program *p = pd->p;

        if (p->type == PROG_KTHREAD) {
                for (size_t i = 0; kthread_start[i]; i++)
                        push(b, kernel_mod, kthread_start[i], 3);
                return;
        }
        if (!main_thread || p->type == PROG_JAVA) {
                push(b, libc_mod, "clone3", 0);
                push(b, libc_mod, "start_thread", 1);
        } else {
                push(b, pd->exe, "_start", 0);
                push(b, libc_mod, "__libc_start_main_impl", 2);
                push(b, libc_mod, "__libc_start_call_main", 4);
        }
        switch (p->type) {
        case PROG_PYTHON:
                if (main_thread) {
                        static const char *const chain[] = { "main", "Py_BytesMain", "Py_RunMain",
                                "pymain_run_python", "_PyRun_AnyFileObject", "_PyRun_SimpleFileObject",
                                "pyrun_file", "run_mod", "run_eval_code_obj", "PyEval_EvalCode" };
                        for (size_t i = 0; i < ELEMENTSOF(chain); i++)
                                push(b, pd->exe, chain[i], 1);
                } else {
                        push(b, pd->exe, "thread_run", 0);
                        push(b, pd->exe, "PyObject_Call", 3);
                }
                break;
        case PROG_JAVA: {
                static const char *const chain[] = { "thread_native_entry", "Thread::call_run()",
                        "JavaThread::thread_main_inner()", "JavaThread::invoke()",
                        "JavaCalls::call_helper()" };
                for (size_t i = 0; i < ELEMENTSOF(chain); i++)
                        push(b, libjvm_mod, chain[i], 5);
                if (variant % 5 == 4) { /* GC workers: all in libjvm */
                        static const char *const gc[] = { "WorkerThread::run()", "G1EvacuateRegionsTask::work()",
                                "G1ParEvacuateFollowersClosure::do_void()", "G1ParScanThreadState::trim_queue()",
                                "G1ParScanThreadState::do_copy_to_survivor_space()" };
                        for (size_t i = 0; i < ELEMENTSOF(gc); i++)
                                push(b, libjvm_mod, gc[i], 2);
                } else {
                        push(b, pd->app, "call_stub", 0);
                        push(b, pd->app, "Interpreter", 7);
                }
                break;
        }
        case PROG_NODE:
                if (main_thread) {
                        static const char *const chain[] = { "main", "node::Start(int, char**)",
                                "node::NodeMainInstance::Run()", "node::SpinEventLoop(node::Environment*)" };
                        for (size_t i = 0; i < ELEMENTSOF(chain); i++)
                                push(b, pd->exe, chain[i], 1);
                        push(b, libuv_mod, "uv_run", 2);
                        push(b, libuv_mod, "uv__io_poll", 3);
                        push(b, pd->exe, "node::StreamBase::CallJSOnreadMethod()", 0);
                        push(b, pd->exe, "v8::internal::Execution::Call()", 0);
                        push(b, pd->app, "Builtins_JSEntryTrampoline", 0);
                } else {
                        push(b, pd->exe, "node::worker::Worker::Run()", 1);
                        push(b, libuv_mod, "uv__work_thread", 0);
                }
                break;
        default:
                push(b, pd->exe, main_thread ? "main" : (p->type == PROG_CXX ? "Thread::ThreadImplPosix::start()"
                                                                            : "worker_thread_main"), 1);
                if (p->type == PROG_CXX)
                        push(b, libstdcxx_mod, "std::thread::_State_impl::_M_run()", 0);
                break;
        }
}

static void push_path(struct builder *b, const struct path *path) {
        for (size_t i = 0; i < ELEMENTSOF(path->libc) && path->libc[i]; i++)
                push(b, libc_mod, path->libc[i], 1 + (unsigned) i);
        for (size_t i = 0; i < ELEMENTSOF(path->kernel) && path->kernel[i]; i++)
                push(b, kernel_mod, path->kernel[i], 1 + (unsigned) i);
}

/* One stack of program pd for kind, number i of its set. */
static int stack_build(const struct program_data *pd, int kind, size_t i, uint64_t seed, struct stack *ret) {
        const struct program *p = pd->p;
        struct builder b = {};
        rng r = { mix2(seed, mix2(hash_bytes(p->exe ? p->exe : p->comm, strlen(p->exe ? p->exe : p->comm)),
                                  (uint64_t) kind * 1000003 + i)) };
        int state = STATE_NONE;

        if (p->type == PROG_KTHREAD) {
                unsigned w = (unsigned) (hash_bytes(p->comm, strlen(p->comm)) % ELEMENTSOF(kthread_work));
                /* kworkers do many kinds of work; the others one */
                if (strncmp(p->comm, "kworker", 7) == 0)
                        w = rng_below(&r, 3);
                push_startup(&b, pd, true, 0);
                if (kind == KIND_OFFCPU) {
                        for (size_t k = 0; kthread_wait[k]; k++)
                                push(&b, kernel_mod, kthread_wait[k], (unsigned) k);
                        state = STATE_S;
                } else {
                        unsigned depth = 2 + rng_below(&r, 7);
                        for (size_t k = 0; k < depth && kthread_work[w][k]; k++)
                                push(&b, kernel_mod, kthread_work[w][k], (unsigned) i % 3);
                        if (kind == KIND_WAKEUP) {
                                push(&b, kernel_mod, "__wake_up_common", 0);
                                push(&b, kernel_mod, "try_to_wake_up", 0);
                        }
                }
        } else if (kind == KIND_WAKEUP && i % 10 == 9) {
                /* an interrupt that ends an I/O wait, on the task it hit */
                push_startup(&b, pd, true, (unsigned) i);
                for (size_t k = 0; irq_wake[k]; k++)
                        push(&b, kernel_mod, irq_wake[k], 0);
                state = STATE_D;
        } else {
                /* threads: the main one, or one of a few worker entry points */
                bool main_thread = rng_unit(&r) < 0.5;
                unsigned variant = rng_below(&r, 5);
                /* 10-60 frames in all: startup, then the program's own code,
                 * then libc and the kernel */
                unsigned depth = 4 + (unsigned) (rng_unit(&r) * rng_unit(&r) * 36);
                /* the program's call graph: each function calls a few
                 * others, always the same ones (chosen by its name), and a
                 * stack is a walk through it */
                uint64_t fn = mix2(hash_bytes(p->comm, strlen(p->comm)), main_thread * 8 + variant);
                const struct path *path;

                if (p->type == PROG_PYTHON || p->type == PROG_JAVA)
                        depth += 8; /* interpreters: deeper */
                push_startup(&b, pd, main_thread, variant);
                for (unsigned d = 0; d < depth && b.r >= 0; d++) {
                        uint64_t callee = mix2(fn, rng_skewed(&r, 5));
                        const char *name;

                        /* python alternates eval-frame and call frames */
                        if (p->type == PROG_PYTHON && d % 2 == 0)
                                name = "_PyEval_EvalFrameDefault";
                        else
                                name = gen_name(p, callee);
                        push(&b, p->type == PROG_PYTHON ? pd->exe : pd->app, name, (unsigned) (callee >> 40));
                        /* the eval loop calls out from many places */
                        fn = p->type == PROG_PYTHON && d % 2 == 0 ? mix2(callee, 1) : hash_bytes(name, strlen(name));
                        /* now and then through a library */
                        if (p->type == PROG_C && d == depth / 2 && (callee & 7) == 0)
                                push(&b, libssl_mod, (callee & 8) ? "SSL_read" : "ssl3_write_bytes", 1);
                }
                if (kind == KIND_CPU)
                        path = &cpu_paths[rng_below(&r, ELEMENTSOF(cpu_paths))];
                else if (kind == KIND_OFFCPU)
                        path = &offcpu_paths[rng_skewed(&r, ELEMENTSOF(offcpu_paths))];
                else
                        path = &wakeup_paths[rng_below(&r, ELEMENTSOF(wakeup_paths))];
                push_path(&b, path);
                state = kind == KIND_CPU ? STATE_NONE : path->state;
        }
        b.r = builder_finish(&b);
        free(b.mods);
        free(b.names);
        if (b.r < 0) {
                free(b.f);
                return b.r;
        }
        *ret = (struct stack) { .frames = keep(b.f), .n = b.n, .state = state };
        return ret->frames ? 0 : -ENOMEM;
}

/* ---- processes ------------------------------------------------------------ */

struct thread {
        uint32_t tid;
        double weight;
};

struct proc {
        const struct program_data *pd;
        struct store_process sp;
        char *cgroup;
        uint64_t cgroup_id;
        struct thread *threads;
        size_t n_threads;
        struct zipf thread_pop;
        double cpu;
        unsigned ends_at;   /* drain index at which it exits; 0: never */
        unsigned slot;      /* which place of the host it fills */
        bool alive;
};

struct host {
        struct program_data *pd;
        size_t n_programs;
        struct proc *procs;
        size_t n_procs, procs_cap;
        uint32_t next_pid;
        uint64_t boot_ns;   /* boot time, boot-clock ns since boot at the first drain */
        char **containers;
        size_t n_containers;
        rng r;
};

static char *container_id(rng *r) {
        char id[65];

        for (int i = 0; i < 64; i += 16)
                snprintf(id + i, 17, "%016" PRIx64, rng_next(r));
        return keep(strdup(id));
}

static int proc_start(struct host *h, size_t prog, unsigned slot, unsigned drain, uint64_t uptime_ns) {
        const struct program_data *pd = &h->pd[prog];
        const struct program *p = pd->p;
        struct proc *pr;
        unsigned threads;

        if (h->n_procs == h->procs_cap) {
                size_t cap = MAX(h->procs_cap * 2, 256);
                struct proc *n = realloc(h->procs, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                h->procs = n;
                h->procs_cap = cap;
        }
        pr = &h->procs[h->n_procs];
        *pr = (struct proc) { .pd = pd, .slot = slot, .alive = true };
        if (p->container)
                pr->cgroup = keep_printf("/system.slice/docker-%s.scope", h->containers[slot % h->n_containers]);
        else
                pr->cgroup = keep(strdup(p->unit));
        if (!pr->cgroup)
                return -ENOMEM;
        pr->cgroup_id = 1000 + hash_bytes(pr->cgroup, strlen(pr->cgroup)) % 100000;
        pr->sp = (struct store_process) {
                .pid = h->next_pid,
                .start_ns = uptime_ns,
                .comm = p->comm,
                .exe = p->exe,
                .cgroup = pr->cgroup,
                .uid = p->uid,
                .have_uid = true,
        };
        /* pids climb as processes come, like the kernel's, and wrap */
        threads = p->threads + (p->threads > 2 ? rng_below(&h->r, p->threads / 2 + 1) : 0);
        h->next_pid += threads + 1 + rng_below(&h->r, 4);
        if (h->next_pid > 4000000)
                h->next_pid = 300;
        pr->threads = calloc(threads, sizeof(*pr->threads));
        if (!pr->threads || zipf_init(&pr->thread_pop, threads, 0.8) < 0)
                return -ENOMEM;
        for (unsigned t = 0; t < threads; t++)
                pr->threads[t] = (struct thread) { .tid = pr->sp.pid + t };
        pr->n_threads = threads;
        pr->cpu = p->cpu * (0.3 + 1.4 * rng_unit(&h->r));
        if (p->lifetime)
                pr->ends_at = drain + 1 + rng_below(&h->r, 2 * p->lifetime);
        h->n_procs++;
        return 0;
}

static void proc_free(struct proc *pr) {
        free(pr->threads);
        free(pr->thread_pop.cdf);
}

/* ---- one drain ------------------------------------------------------------ */

struct key {
        uint32_t proc, thread, stack;
        uint8_t kind, state;
        uint32_t peer;
        uint64_t value;
        uint64_t time_ns; /* --timeline: an on-CPU sample's time; not part of the key */
};

static int key_cmp(const void *a, const void *b) {
        const struct key *x = a, *y = b;
#define CMP(f) if (x->f != y->f) return x->f < y->f ? -1 : 1
        CMP(proc);
        CMP(thread);
        CMP(kind);
        CMP(stack);
        CMP(state);
        CMP(peer);
#undef CMP
        return 0;
}

struct options {
        double hours;
        unsigned processes;
        unsigned stacks;
        unsigned frequency;
        unsigned cpus;
        unsigned interval_s;
        unsigned offcpu_keys, wakeup_keys;
        uint64_t seed;
        uint64_t end_s;
        bool quiet;
        bool no_retention;
        bool timeline;
};

/* When an on-CPU sample of process proc was taken within its drain
 * (--timeline), in ns after the drain's start. Real processes do not run
 * evenly: a process works in a burst of its own each drain, from a few
 * milliseconds (a request, a cron job) to the whole interval (a busy
 * service), centred anywhere in it. Drawn from hashes, not from the host's
 * generator, so the aggregates are the same with and without --timeline. */
static uint64_t sample_offset_ns(const struct options *o, unsigned drain, uint32_t proc, size_t i) {
        uint64_t span = (uint64_t) o->interval_s * NSEC_PER_SEC;
        uint64_t hp = mix2(mix2(o->seed, drain), proc), hs = mix2(hp, i);
        double u = (double) (hp >> 11) / (double) (1ULL << 53);
        double centre = (double) ((hp >> 3) % span);
        /* widths from 5 ms up, mostly short: u^3 of the interval */
        double width = MAX(5e6, u * u * u * (double) span);
        double v = (double) (hs >> 11) / (double) (1ULL << 53);
        double t = centre + (v - 0.5) * width;

        return (uint64_t) MIN(MAX(t, 0.0), (double) (span - 1));
}

/* How busy the host is at a time of day: a daily curve with noise. */
static double busy_at(double hours_into_day, rng *r) {
        double base = 0.6 + 0.25 * sin((hours_into_day - 9) / 24 * 2 * M_PI);
        return MIN(0.97, MAX(0.1, base + 0.1 * (rng_unit(r) - 0.5)));
}

/* Picks a live process by weight: its CPU share, or for waits its threads. */
static size_t pick_proc(struct host *h, const size_t *live, const double *cdf, size_t n, rng *r) {
        double u = rng_unit(r) * cdf[n - 1];
        size_t lo = 0, hi = n - 1;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (cdf[mid] < u)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        (void) h;
        return live[lo];
}

static int write_drain(store *st, struct host *h, const struct options *o, unsigned drain, uint64_t start_ns,
                       uint64_t end_ns, double busy, struct key **keys, size_t *keys_cap, uint64_t *ret_rows) {
        _cleanup_free_ size_t *live = NULL;
        _cleanup_free_ struct store_timed *timed = NULL;
        size_t n_timed = 0;
        _cleanup_free_ double *cpu_cdf = NULL, *wait_cdf = NULL;
        size_t n_live = 0, n_keys = 0, n_cpu = (size_t) (o->frequency * o->cpus * o->interval_s * busy);
        double cs = 0, ws = 0;
        size_t want = n_cpu + o->offcpu_keys + o->wakeup_keys;
        int r;

        live = calloc(h->n_procs, sizeof(*live));
        cpu_cdf = calloc(h->n_procs, sizeof(double));
        wait_cdf = calloc(h->n_procs, sizeof(double));
        if (!live || !cpu_cdf || !wait_cdf)
                return -ENOMEM;
        for (size_t i = 0; i < h->n_procs; i++)
                if (h->procs[i].alive) {
                        live[n_live] = i;
                        cpu_cdf[n_live] = (cs += h->procs[i].cpu);
                        wait_cdf[n_live] = (ws += (double) h->procs[i].n_threads + h->procs[i].cpu);
                        n_live++;
                }
        if (n_live == 0)
                return 0;
        if (o->timeline) {
                timed = malloc(MAX(n_cpu, (size_t) 1) * sizeof(*timed));
                if (!timed)
                        return -ENOMEM;
        }
        if (want > *keys_cap) {
                struct key *k = realloc(*keys, want * sizeof(**keys));
                if (!k)
                        return -ENOMEM;
                *keys = k;
                *keys_cap = want;
        }
        for (int kind = KIND_CPU; kind <= KIND_WAKEUP; kind++) {
                size_t n = kind == KIND_CPU ? n_cpu : kind == KIND_OFFCPU ? o->offcpu_keys : o->wakeup_keys;
                for (size_t i = 0; i < n; i++) {
                        size_t pi = pick_proc(h, live, kind == KIND_CPU ? cpu_cdf : wait_cdf, n_live, &h->r);
                        struct proc *pr = &h->procs[pi];
                        const struct stack_set *set = &pr->pd->sets[kind];
                        size_t s = zipf_pick(&set->popularity, &h->r);
                        struct key *k = &(*keys)[n_keys++];

                        *k = (struct key) {
                                .proc = (uint32_t) pi,
                                .thread = (uint32_t) zipf_pick(&pr->thread_pop, &h->r),
                                .stack = (uint32_t) s,
                                .kind = (uint8_t) kind,
                                .state = (uint8_t) set->stacks[s].state,
                                .value = 1,
                        };
                        if (kind == KIND_CPU && o->timeline)
                                k->time_ns = start_ns + sample_offset_ns(o, drain, k->proc, i);
                        if (kind != KIND_CPU) {
                                /* blocked from a millisecond (the default
                                 * threshold) to the whole interval, mostly short */
                                double e = rng_unit(&h->r);
                                k->value = (uint64_t) (1e6 * pow(1e4 * o->interval_s / 10.0, e * e));
                        }
                        if (kind == KIND_WAKEUP) {
                                /* woke a thread of a busy process, often its own */
                                struct proc *peer = rng_unit(&h->r) < 0.5
                                                            ? pr
                                                            : &h->procs[pick_proc(h, live, wait_cdf, n_live, &h->r)];
                                k->peer = peer->threads[rng_below(&h->r, (unsigned) peer->n_threads)].tid;
                        }
                }
        }
        /* aggregate like the kernel maps: one key per (thread, stack, kind, state, peer) */
        qsort(*keys, n_keys, sizeof(**keys), key_cmp);

        r = store_drain_begin(st, start_ns, end_ns);
        if (r < 0)
                return r;
        size_t rows = 0;
        for (size_t i = 0; i < n_keys;) {
                struct key k = (*keys)[i];
                size_t j = i + 1;
                for (; j < n_keys && key_cmp(&k, &(*keys)[j]) == 0; j++)
                        k.value += (*keys)[j].value;
                /* every on-CPU sample aggregated into this add keeps its
                 * time, naming the add (this drain's rows-th call) */
                if (timed && k.kind == KIND_CPU)
                        for (size_t m = i; m < j; m++)
                                timed[n_timed++] = (struct store_timed) { .time_ns = (*keys)[m].time_ns,
                                                                          .sample = (uint32_t) rows };
                i = j;

                struct proc *pr = &h->procs[k.proc];
                const struct stack *stk = &pr->pd->sets[k.kind].stacks[k.stack];
                struct store_sample smp = {
                        .process = &pr->sp,
                        .tid = pr->threads[k.thread].tid,
                        .cgroup_id = pr->cgroup_id,
                        .kind = k.kind,
                        .state = k.state,
                        .peer_tid = k.peer,
                        .frames = stk->frames,
                        .n_frames = stk->n,
                        .value = k.value,
                };
                r = store_drain_add(st, &smp);
                if (r < 0)
                        goto fail;
                rows++;
        }
        r = store_drain_timeline(st, timed, n_timed);
        if (r < 0)
                goto fail;
        /* the drops a busy host sees now and then */
        if (drain % 97 == 13 && (r = store_drain_drop(st, "user_stack_error", 1 + drain % 5)) < 0)
                goto fail;
        r = store_drain_commit(st, NULL, NULL, NULL);
        if (r < 0)
                goto fail;
        *ret_rows = rows;
        return 0;
fail:
        store_drain_abort(st);
        return r;
}

/* ---- the day -------------------------------------------------------------- */

static int setup_programs(struct host *h, const struct options *o) {
        double weight_sum = 0;

        libc_mod = module_new("/usr/lib/x86_64-linux-gnu/libc.so.6", false, false, false, true);
        ld_mod = module_new("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", false, false, false, true);
        libpthread_mod = module_new("/usr/lib/x86_64-linux-gnu/libpthread.so.0", false, false, false, true);
        libstdcxx_mod = module_new("/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30", false, false, false, true);
        libjvm_mod = module_new("/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so", false, false, false, true);
        libssl_mod = module_new("/usr/lib/x86_64-linux-gnu/libssl.so.3", false, false, false, true);
        libuv_mod = module_new("/usr/lib/x86_64-linux-gnu/libuv.so.1.0.0", false, false, false, true);
        kernel_mod = module_new("[kernel.kallsyms]", true, false, false, false);
        if (!libc_mod || !ld_mod || !libpthread_mod || !libstdcxx_mod || !libjvm_mod || !libssl_mod || !libuv_mod ||
            !kernel_mod)
                return -ENOMEM;

        h->n_programs = ELEMENTSOF(programs);
        h->pd = calloc(h->n_programs, sizeof(*h->pd));
        if (!h->pd)
                return -ENOMEM;
        for (size_t i = 0; i < h->n_programs; i++)
                weight_sum += 0.5 + sqrt(programs[i].cpu * (programs[i].copies + 1));
        for (size_t i = 0; i < h->n_programs; i++) {
                struct program_data *pd = &h->pd[i];
                const struct program *p = &programs[i];
                /* more stacks for programs with more code running */
                size_t share = (size_t) (o->stacks * (0.5 + sqrt(p->cpu * (p->copies + 1))) / weight_sum);

                pd->p = p;
                if (p->exe) {
                        /* the same binary in several programs is one module */
                        for (size_t j = 0; j < i && !pd->exe; j++)
                                if (streq(programs[j].exe, p->exe))
                                        pd->exe = h->pd[j].exe;
                        if (!pd->exe) {
                                pd->exe = module_new(p->exe, false, p->debug, p->stripped, !p->stripped);
                                if (!pd->exe)
                                        return -ENOMEM;
                                if (p->debug)
                                        pd->exe->src_dir = keep_printf("/usr/src/%s", p->comm);
                        }
                }
                pd->app = pd->exe;
                if (p->type == PROG_JAVA || p->type == PROG_NODE) {
                        /* JIT code: a [jit] mapping per process instance; these
                         * programs run one long-lived instance each, so one tag */
                        pd->app = module_new("[jit]", false, false, false, false);
                        if (!pd->app)
                                return -ENOMEM;
                        pd->app->build_id = keep_printf("jit-%s-%zu-0", p->comm, i);
                        pd->app->base = 0x7f0000000000ULL + i * 0x10000000ULL;
                }
                for (int kind = KIND_CPU; kind <= KIND_WAKEUP; kind++) {
                        struct stack_set *set = &pd->sets[kind];
                        static const double kind_share[] = { 0.5, 0.3, 0.2 };
                        size_t n = MAX((size_t) 3, (size_t) (share * kind_share[kind]));
                        if (p->type == PROG_KTHREAD)
                                n = MIN(n, (size_t) 12);
                        set->stacks = calloc(n, sizeof(*set->stacks));
                        if (!set->stacks)
                                return -ENOMEM;
                        for (size_t s = 0; s < n; s++) {
                                int r = stack_build(pd, kind, s, o->seed, &set->stacks[s]);
                                if (r < 0)
                                        return r;
                        }
                        set->n = n;
                        /* a few stacks take most samples, like real profiles */
                        if (zipf_init(&set->popularity, n, 1.1) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

/* Fills the host's places: every program once (or its copies), then more
 * copies of the programs that have copies until there are `processes`. */
static int setup_processes(struct host *h, const struct options *o, uint64_t uptime_ns) {
        unsigned slot = 0;
        int r;

        h->n_containers = 4;
        h->containers = keep(calloc(h->n_containers, sizeof(char *)));
        if (!h->containers)
                return -ENOMEM;
        for (size_t i = 0; i < h->n_containers; i++)
                if (!(h->containers[i] = container_id(&h->r)))
                        return -ENOMEM;
        /* pid 1 and the kernel threads come first, then the rest in order */
        for (size_t i = 0; i < h->n_programs && slot < o->processes; i++) {
                unsigned copies = MAX(programs[i].copies, 1u);
                for (unsigned c = 0; c < copies && slot < o->processes; c++) {
                        r = proc_start(h, i, slot++, 0, uptime_ns - (uint64_t) rng_below(&h->r, 3600) * NSEC_PER_SEC);
                        if (r < 0)
                                return r;
                }
        }
        for (size_t i = 0; slot < o->processes; i = (i + 1) % h->n_programs)
                if (programs[i].copies > 1 && !programs[i].lifetime) {
                        r = proc_start(h, i, slot++, 0, uptime_ns);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* Processes exit and are replaced: short-lived ones when their time is up,
 * services now and then (a restart: same program, new pid). */
static int churn(struct host *h, const struct options *o, unsigned drain, uint64_t uptime_ns) {
        size_t n = h->n_procs;
        /* a long-lived process restarts about once in two days */
        double restart = (double) o->interval_s / (48 * 3600.0);
        int r;

        for (size_t i = 0; i < n; i++) {
                struct proc *pr = &h->procs[i];
                bool ends;

                if (!pr->alive || pr->pd->p->type == PROG_KTHREAD || pr->sp.pid == 1)
                        continue;
                ends = pr->ends_at ? drain >= pr->ends_at : rng_unit(&h->r) < restart;
                if (!ends)
                        continue;
                pr->alive = false;
                r = proc_start(h, (size_t) (pr->pd - h->pd), pr->slot, drain, uptime_ns);
                if (r < 0)
                        return r;
                pr = &h->procs[i]; /* procs may have moved */
                proc_free(pr);
                pr->threads = NULL;
                pr->thread_pop.cdf = NULL;
                pr->n_threads = 0;
        }
        return 0;
}

/* Every connection this process opens (the store's) gets a page cache large
 * enough for the indexes of a day of samples: with SQLite's default 2 MiB
 * each insert into the stack and process indexes reads pages back from the
 * OS, and writing a day slows down hour by hour. Only this tool: profd
 * writes one drain per interval. Nothing else: store_open itself makes a
 * new file with its page size and incremental auto-vacuum, which SQLite
 * sets only while the file has no page yet (a pragma here, such as
 * auto_vacuum, would write the first page and keep the default size). */
static int bulk_cache(sqlite3 *db, char **err, const struct sqlite3_api_routines *api) {
        return sqlite3_exec(db, "PRAGMA cache_size = -1048576", /* 1 GiB, at most */ NULL, NULL, err);
}

static uint64_t now_s(void) {
        return (uint64_t) time(NULL);
}

static double mono_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static void help(void) {
        printf("gen_store [OPTIONS] STORE\n\n"
               "Fills (creates or extends) a profd store with synthetic, realistic data ending now:\n"
               "by default 24 hours of a busy 2-CPU host at profd's defaults.\n\n"
               "  --hours H           hours of data (default 24; fractions allowed)\n"
               "  --processes N       processes running at once (default 300)\n"
               "  --stacks N          distinct stacks, about (default 6000)\n"
               "  --frequency HZ      on-CPU sampling frequency (default 49)\n"
               "  --cpus N            CPUs (default 2)\n"
               "  --interval S        seconds per drain (default 10)\n"
               "  --offcpu-keys N     off-CPU keys per drain (default 400)\n"
               "  --wakeup-keys N     wake-up keys per drain (default 250)\n"
               "  --seed N            random seed (default 1)\n"
               "  --end EPOCH_S       time of the last drain (default now)\n"
               "  --no-retention      no retention steps between drains, so no spans:\n"
               "                      every block holds one drain (schema 8's layout)\n"
               "  --timeline          also each on-CPU sample's own time (the timeline), in\n"
               "                      bursts per process, kept as profd does by default (1h,\n"
               "                      256M); the aggregates are those made without it\n"
               "  --quiet             no progress line\n");
}

static int parse_u64(const char *name, const char *s, uint64_t *ret) {
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s || *end || s[0] == '-') {
                fprintf(stderr, "gen_store: --%s: not a number: %s\n", name, s);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

int main(int argc, char **argv) {
        static const struct option longopts[] = {
                { "hours", required_argument, NULL, 'H' },   { "processes", required_argument, NULL, 'p' },
                { "stacks", required_argument, NULL, 's' },  { "frequency", required_argument, NULL, 'F' },
                { "cpus", required_argument, NULL, 'c' },    { "interval", required_argument, NULL, 'i' },
                { "offcpu-keys", required_argument, NULL, 'o' }, { "wakeup-keys", required_argument, NULL, 'w' },
                { "seed", required_argument, NULL, 'S' },    { "end", required_argument, NULL, 'e' },
                { "quiet", no_argument, NULL, 'q' },         { "help", no_argument, NULL, 'h' },
                { "no-retention", no_argument, NULL, 'R' },  { "timeline", no_argument, NULL, 'T' },
                {},
        };
        struct options o = { .hours = 24, .processes = 300, .stacks = 6000, .frequency = 49, .cpus = 2,
                             .interval_s = 10, .offcpu_keys = 400, .wakeup_keys = 250, .seed = 1 };
        struct host h = {};
        store *st = NULL;
        retention *ret = NULL;
        struct key *keys = NULL;
        size_t keys_cap = 0;
        uint64_t rows = 0, samples_total = 0, v;
        unsigned n_drains;
        double t0, last_progress = 0;
        int c, longindex = 0, r = 0;

        while ((c = getopt_long(argc, argv, "h", longopts, &longindex)) >= 0) {
                switch (c) {
                case 'H': {
                        char *end;
                        o.hours = strtod(optarg, &end);
                        if (*end || end == optarg || !(o.hours > 0)) {
                                fprintf(stderr, "gen_store: --hours: not a positive number: %s\n", optarg);
                                return 2;
                        }
                        continue;
                }
                case 'h':
                        help();
                        return 0;
                case 'R':
                        o.no_retention = true;
                        continue;
                case 'q':
                        o.quiet = true;
                        continue;
                case 'T':
                        o.timeline = true;
                        continue;
                case '?':
                        return 2;
                }
                if (parse_u64(longopts[longindex].name, optarg, &v) < 0)
                        return 2;
                switch (c) {
                case 'p': o.processes = (unsigned) v; break;
                case 's': o.stacks = (unsigned) v; break;
                case 'F': o.frequency = (unsigned) v; break;
                case 'c': o.cpus = (unsigned) v; break;
                case 'i': o.interval_s = (unsigned) v; break;
                case 'o': o.offcpu_keys = (unsigned) v; break;
                case 'w': o.wakeup_keys = (unsigned) v; break;
                case 'S': o.seed = v; break;
                case 'e': o.end_s = v; break;
                }
        }
        if (optind + 1 != argc) {
                fprintf(stderr, "gen_store: expected one argument, the store file (see --help)\n");
                return 2;
        }
        if (o.processes < 1 || o.interval_s < 1 || o.stacks < 1 || o.cpus < 1) {
                fprintf(stderr, "gen_store: --processes, --stacks, --cpus and --interval must be at least 1\n");
                return 2;
        }
        if (!o.end_s)
                o.end_s = now_s();
        log_set_max_level(LOG_WARNING);
        h.r.s = mix64(o.seed);
        h.next_pid = 300;
        n_drains = (unsigned) (o.hours * 3600 / o.interval_s);
        if (n_drains < 1)
                n_drains = 1;

        functions = hashmap_new_string();
        if (!functions) {
                r = -ENOMEM;
                goto out;
        }
        r = setup_programs(&h, &o);
        if (r < 0)
                goto out;
        /* boot-clock start times: the host booted a week before the first drain */
        uint64_t uptime0 = 7 * 24 * 3600 * NSEC_PER_SEC;
        r = setup_processes(&h, &o, uptime0);
        if (r < 0)
                goto out;
        sqlite3_auto_extension((void (*)(void)) bulk_cache);
        r = store_open(argv[optind], &st);
        if (r < 0)
                goto out;
        /* retention at profd's defaults, stepped after each drain as
         * profd's writer does: it packs closed runs of drains into spans */
        if (!o.no_retention) {
                r = retention_open(argv[optind], &(struct retention_settings) {
                        .raw_ns = CONF_DEFAULT_RETENTION_RAW_NS, .m1_ns = CONF_DEFAULT_RETENTION_1M_NS,
                        .all_ns = CONF_DEFAULT_RETENTION_NS,
                        .timeline_ns = o.timeline ? CONF_DEFAULT_TIMELINE_RETENTION_NS : 0,
                        .timeline_max_bytes = o.timeline ? CONF_DEFAULT_TIMELINE_MAX_SIZE : 0 }, &ret);
                if (r < 0)
                        goto out;
        }

        t0 = mono_s();
        for (unsigned d = 0; d < n_drains; d++) {
                uint64_t end_ns = (o.end_s - (uint64_t) (n_drains - 1 - d) * o.interval_s) * NSEC_PER_SEC;
                uint64_t uptime = uptime0 + (uint64_t) d * o.interval_s * NSEC_PER_SEC;
                double hour = fmod((double) (end_ns / NSEC_PER_SEC) / 3600.0, 24.0);
                double busy = busy_at(hour, &h.r);
                uint64_t drain_rows = 0;

                r = churn(&h, &o, d, uptime);
                if (r < 0)
                        goto out;
                r = write_drain(st, &h, &o, d, end_ns - o.interval_s * NSEC_PER_SEC, end_ns, busy, &keys, &keys_cap,
                                &drain_rows);
                if (r < 0) {
                        fprintf(stderr, "\ngen_store: writing drain %u failed: %s\n", d, strerror(-r));
                        goto out;
                }
                while (ret) {
                        bool forget = false;

                        r = retention_step(ret, end_ns, &forget);
                        if (forget)
                                store_forget_ids(st);
                        if (r <= 0)
                                break;
                }
                if (r < 0) {
                        fprintf(stderr, "\ngen_store: retention after drain %u failed: %s\n", d, strerror(-r));
                        goto out;
                }
                rows += drain_rows;
                samples_total += (uint64_t) (o.frequency * o.cpus * o.interval_s * busy);
                if (!o.quiet && (mono_s() - last_progress >= 1 || d + 1 == n_drains)) {
                        double el = mono_s() - t0;
                        last_progress = mono_s();
                        fprintf(stderr, "\rgen_store: %.1f of %.1f h, %u drains, %" PRIu64 " rows, %.0f rows/s, "
                                "%zu processes so far   ", (d + 1) * o.interval_s / 3600.0, o.hours, d + 1, rows,
                                el > 0 ? rows / el : 0.0, h.n_procs);
                }
        }
        if (!o.quiet) {
                double el = mono_s() - t0;
                size_t n_stacks = 0;
                for (size_t i = 0; i < h.n_programs; i++)
                        for (int k = 0; k < 3; k++)
                                n_stacks += h.pd[i].sets[k].n;
                fprintf(stderr, "\ngen_store: %u drains (%.1f h), %" PRIu64 " sample rows (%" PRIu64
                        " on-CPU samples), %zu process instances, %zu stack templates, in %.1f s "
                        "(%.0f rows/s, %.1f h of data per minute)\n",
                        n_drains, o.hours, rows, samples_total, h.n_procs, n_stacks, el, el > 0 ? rows / el : 0.0,
                        el > 0 ? o.hours / el * 60 : 0.0);
        }
out:
        if (r < 0 && r != -EINVAL)
                fprintf(stderr, "gen_store: %s\n", strerror(-r));
        retention_close(ret);
        store_close(st);
        free(keys);
        for (size_t i = 0; i < h.n_procs; i++)
                proc_free(&h.procs[i]);
        free(h.procs);
        for (size_t i = 0; h.pd && i < h.n_programs; i++)
                for (int k = 0; k < 3; k++) {
                        free(h.pd[i].sets[k].stacks);
                        free(h.pd[i].sets[k].popularity.cdf);
                }
        free(h.pd);
        hashmap_free_with_keys(functions);
        arena_free();
        return r < 0 ? 1 : 0;
}
