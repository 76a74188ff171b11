/* Unit test of HotSpot's BPF walker (bpf/hotspot.bpf.h through
 * runtime.bpf.h's hand-over), without root: the walker compiled in user
 * space against the shim (bpf-shim/), on a real JVM (Debian's openjdk-17,
 * argv[1]) whose Java main thread spins in a known chain,
 * main -> outer -> middle -> leaf (inlining off for them only, so that
 * each is a frame of its own). The thread is stopped by ptrace a few
 * times while it runs (interpreted first, then C1 and C2 code: the chain
 * changes tier as it warms up; and once under -Xint, once under
 * -XX:TieredStopAtLevel=1), its registers taken, and every read of the
 * walk goes to the live process. libjvm is found in its mappings and its
 * walker slot made as the daemon makes them (hotspot_discover,
 * hotspot_process_vmstructs, hotspot_runtime_make).
 *
 * Asserted for each stop: the walk ends complete at the thread's start
 * (start_thread), through JavaCalls::call_helper; it holds HotSpot
 * pseudo-frames, and those naming a method (interpreted: the Method*;
 * compiled: the nmethod's Method*, read with the VM structs' offset) name,
 * innermost first, a run of leaf, middle, outer, main (leaf maybe absent:
 * the thread may stop in middle) with nothing else of Spin's between;
 * the code cache's native frames are gone (none is left in it). A second
 * walk, with the blobs the first remembered (hotspot_blobs), and a third,
 * with each remembered blob spoiled (another's, or moved into its code),
 * give the same frames.
 *
 * Usage: test-bpf-hotspot JAVA (77: no JAVA, or it may not be traced) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../bpf/unwind.bpf.h"
#include "hotspot-names.h"
#include "hotspot.h"
#include "recording.h"
#include "shim.h"
#include "tests.h"

static const char source[] =
        "public class Spin {\n"
        "    static volatile long sink;\n"
        "    static long leaf(long x) {\n"
        "        long s = x;\n"
        "        for (int i = 0; i < 20000; i++)\n"
        "            s = s * 31 + (s >>> 7) + i;\n"
        "        return s;\n"
        "    }\n"
        "    static long middle(long x) { return leaf(x) + 1; }\n"
        "    static long outer(long x) { return middle(x) + 1; }\n"
        "    public static void main(String[] args) {\n"
        "        System.out.println(\"ready\");\n"
        "        System.out.flush();\n"
        "        for (long i = 0;; i++)\n"
        "            sink += outer(i);\n"
        "    }\n"
        "}\n";

static const char *const chain[] = { "Spin.leaf", "Spin.middle", "Spin.outer", "Spin.main" };
#define CHAIN_N 4

struct jvm {
        struct recording r;            /* r.pid: the JVM; regs of the thread */
        pid_t tid;                     /* its Java main thread, traced */
        int mem_fd;
        struct hotspot_vmstructs vs;
        struct profd_runtime rt;
        uint64_t bias, lo, hi;
};

static int read_mem(void *userdata, uint64_t addr, void *buf, size_t size) {
        struct jvm *j = userdata;

        return pread(j->mem_fd, buf, size, (off_t) addr) == (ssize_t) size ? 0 : -EIO;
}

/* Starts java on Spin.java (the source launcher) with `flag` (NULL:
 * none), reading its stdout until "ready". */
static int start(struct jvm *j, const char *java, const char *dir, const char *flag) {
        char src[512], line[64];
        int pipefd[2];
        FILE *out;

        snprintf(src, sizeof(src), "%s/Spin.java", dir);
        if (pipe(pipefd) < 0)
                return -errno;
        j->r.pid = fork();
        if (j->r.pid < 0)
                return -errno;
        if (j->r.pid == 0) {
                dup2(pipefd[1], 1);
                close(pipefd[0]);
                if (flag)
                        execl(java, java, "-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,Spin::*", flag,
                              src, (char *) NULL);
                else
                        execl(java, java, "-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,Spin::*", src,
                              (char *) NULL);
                _exit(127);
        }
        close(pipefd[1]);
        out = fdopen(pipefd[0], "r");
        if (!out)
                return -errno;
        if (!fgets(line, sizeof(line), out) || strncmp(line, "ready", 5) != 0) {
                fclose(out);
                return -ECHILD;
        }
        fclose(out);
        return 0;
}

/* The thread that spins: the one with the most CPU time of the JVM's. */
static pid_t busiest_thread(pid_t pid) {
        char path[64], buf[1024];
        unsigned long long best = 0;
        pid_t tid = 0;
        struct dirent *de;
        DIR *d;

        snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                unsigned long long ut = 0;
                char *p;
                FILE *f;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(buf, sizeof(buf), "/proc/%d/task/%s/stat", (int) pid, de->d_name);
                f = fopen(buf, "re");
                if (!f)
                        continue;
                if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) &&
                    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu", &ut) == 1 && ut >= best) {
                        best = ut;
                        tid = (pid_t) atoi(de->d_name);
                }
                fclose(f);
        }
        closedir(d);
        return tid;
}

/* libjvm in the recorded mappings, as the unwinder finds it: discovery on
 * its file, the VM structs from the process, the walker's slot 1 and the
 * entry's hand-over range. */
static int discover(struct jvm *j) {
        for (size_t i = 0; i < j->r.n_maps; i++) {
                struct unwind_runtime_found found;
                enum hotspot_vmstructs_reason reason;
                uint32_t idx = 0;
                Elf *elf;
                int fd, r;

                if (!j->r.paths[i] || j->r.maps[i].kind != PROFD_MAPPING_TABLE || !strstr(j->r.paths[i], "libjvm.so"))
                        continue;
                fd = open(j->r.paths[i], O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                elf = elf_begin(fd, ELF_C_READ, NULL);
                r = elf ? hotspot_discover(elf, NULL, &found) : -EBADMSG;
                if (elf)
                        elf_end(elf);
                close(fd);
                if (r <= 0)
                        return r < 0 ? r : -ENOENT;
                j->bias = j->r.maps[i].bias;
                r = hotspot_process_vmstructs("/proc", (uint32_t) j->r.pid, &found, j->bias, &j->vs, &reason, NULL);
                if (r < 0)
                        return r;
                r = hotspot_runtime_make(&j->vs, &j->rt, &j->lo, &j->hi);
                if (r < 0)
                        return r;
                j->r.rt = (struct profd_unwind_proc) { .rt_lo = j->lo, .rt_hi = j->hi, .rt_bias = j->bias, .rt_slot = 1 };
                return bpf_map_update_elem(&unwind_runtimes, &idx, &j->rt, BPF_ANY);
        }
        return -ENOENT;
}

/* Stops the thread, takes its registers. */
static int stop_thread(struct jvm *j) {
        struct user_regs_struct regs;
        int status;

        if (ptrace(PTRACE_INTERRUPT, j->tid, NULL, NULL) < 0)
                return -errno;
        if (waitpid(j->tid, &status, __WALL) != j->tid)
                return -ECHILD;
        if (ptrace(PTRACE_GETREGS, j->tid, NULL, &regs) < 0)
                return -errno;
        j->r.regs = (struct pt_regs) { .ip = regs.rip, .sp = regs.rsp, .bp = regs.rbp, .r13 = regs.r13 };
        j->r.fsbase = regs.fs_base;
        return 0;
}

static struct profd_frames walk(struct jvm *j, __u32 slot) {
        struct task_struct task = { .pid = j->tid, .tgid = j->r.pid, .start_boottime = j->r.start };
        struct profd_frames *f = scratch_get(slot);
        bool announced;

        task.group_leader = &task;
        task.thread.fsbase = j->r.fsbase;
        shim_regs = j->r.regs;
        shim_mem.len = 0;
        shim_mem.live_fd = j->mem_fd;
        CHECK(f && user_stack_unwind(&task, f, slot, &announced));
        return *f;
}

/* The method a pseudo-frame names ("Spin.leaf"), or NULL: a stub, or a
 * method of the JDK's. */
static char *frame_method(struct jvm *j, __u64 ip) {
        enum hotspot_names_reason reason;
        struct hotspot_method m = {};
        uint64_t method = PROFD_RT_FRAME_CODE(ip);
        char name[16] = {}, *ret = NULL;

        if (PROFD_RT_FRAME_ID(ip) == PROFD_RUNTIME_HOTSPOT_CODE) {
                uint64_t name_addr = 0;

                if (read_mem(j, method + j->vs.blob_name, &name_addr, 8) < 0 ||
                    read_mem(j, name_addr, name, 8) < 0 || strncmp(name, "nmethod", 8) != 0 ||
                    read_mem(j, method + j->vs.nmethod_method, &method, 8) < 0)
                        return NULL;
        }
        if (hotspot_method_read(&j->vs, read_mem, j, method, &m, &reason) == 0 && m.function)
                ret = strdup(m.function);
        hotspot_method_done(&m);
        return ret;
}

static void print_frames(struct jvm *j, const char *title, const struct profd_frames *f) {
        if (!getenv("WALKER_VERBOSE"))
                return;
        fprintf(stderr, "%s: %u frames, end %u\n", title, f->n, f->end);
        for (__u32 i = 0; i < f->n && i < PROFD_MAX_FRAMES; i++) {
                char *m = PROFD_RT_FRAME_IS(f->ips[i]) ? frame_method(j, f->ips[i]) : NULL;

                fprintf(stderr, "  #%u %#" PRIx64 " %s\n", i, (uint64_t) f->ips[i],
                        PROFD_RT_FRAME_IS(f->ips[i]) ? (m ?: "(hotspot)")
                                                      : symbolize(&j->r, i ? f->ips[i] - 1 : f->ips[i]));
                free(m);
        }
}

static bool any_native(const struct jvm *j, const struct profd_frames *f, const char *name) {
        for (size_t i = 0; i < f->n && i < PROFD_MAX_FRAMES; i++)
                if (!PROFD_RT_FRAME_IS(f->ips[i]) && strstr(symbolize(&j->r, f->ips[i] - (i ? 1 : 0)), name))
                        return true;
        return false;
}

static uint64_t counter(enum profd_counter k) {
        __u32 zero = 0;
        struct profd_counters *c = bpf_map_lookup_elem(&counters, &zero);

        return c ? c->v[k] : 0;
}

/* The blobs the walks remembered (hotspot_blobs): how many, and each
 * made one that no longer checks out, in turn: another's blob (its name
 * pointer may be the same, its code does not hold the pc) or its own
 * moved by a segment (its head is then code, not a blob's). */
static unsigned spoil_blobs(void) {
        struct hotspot_blobs *c = (struct hotspot_blobs *) shim_map_of(&hotspot_blobs)->values;
        unsigned n = 0;
        __u64 other = 0;

        for (unsigned i = 0; i < HOTSPOT_BLOB_SLOTS; i++) {
                struct hotspot_blob_entry *e = &c->e[i];

                if (!e->tag)
                        continue;
                if (n++ % 2 && other && other != e->blob) {
                        __u64 b = e->blob;

                        e->blob = other;
                        other = b;
                } else {
                        other = e->blob;
                        e->blob += 64;
                }
        }
        return n;
}

/* One stop: the walk's checks (see the top). Returns whether the chain's
 * methods were found (the thread may have stopped outside them: in the
 * JDK's code or the VM's). */
static bool check_stop(struct jvm *j, const char *label) {
        uint64_t walks = counter(PROFD_HS_WALKS), frames = counter(PROFD_HS_FRAMES);
        uint64_t rt_walks = counter(PROFD_CNT_RT_WALKS), rt_frames = counter(PROFD_CNT_RT_FRAMES);
        struct profd_frames f = walk(j, SCRATCH_ONCPU_USER), g;
        size_t next = 0, found = 0, pseudo = 0;
        bool in_order = true;

        print_frames(j, label, &f);
        CHECK_INT_EQ(f.end, PROFD_END_COMPLETE);
        CHECK(any_native(j, &f, "start_thread"));
        CHECK(any_native(j, &f, "call_helper"));
        for (size_t i = 0; i < f.n && i < PROFD_MAX_FRAMES; i++) {
                char *m;

                if (!PROFD_RT_FRAME_IS(f.ips[i])) {
                        /* no native frame left in the code cache */
                        CHECK(f.ips[i] < j->lo || f.ips[i] >= j->hi);
                        continue;
                }
                pseudo++;
                m = frame_method(j, f.ips[i]);
                if (m && strncmp(m, "Spin.", 5) == 0) {
                        size_t k = next;

                        while (k < CHAIN_N && strcmp(chain[k], m) != 0)
                                k++;
                        /* the first may be middle (stopped there); after
                         * it, each the next of the chain */
                        if (k == CHAIN_N || (found > 0 && k != next))
                                in_order = false;
                        next = k + 1;
                        found++;
                }
                free(m);
        }
        CHECK(pseudo > 0);
        CHECK(in_order);
        /* HotSpot's own counters, none of CPython's: one walk, its frames */
        CHECK_INT_EQ(counter(PROFD_HS_WALKS), walks + 1);
        CHECK_INT_EQ(counter(PROFD_HS_FRAMES), frames + pseudo);
        CHECK_INT_EQ(counter(PROFD_CNT_RT_WALKS), rt_walks);
        CHECK_INT_EQ(counter(PROFD_CNT_RT_FRAMES), rt_frames);
        if (found > 0)
                CHECK(next == CHAIN_N); /* main reached */
        /* a scheduler's walk (no row caches; the blobs the first walk
         * remembered): the same frames */
        g = walk(j, SCRATCH_SWITCH_USER);
        CHECK(g.n == f.n && memcmp(g.ips, f.ips, f.n * sizeof(f.ips[0])) == 0);
        /* remembered blobs that no longer check out are found again */
        CHECK(spoil_blobs() > 0);
        g = walk(j, SCRATCH_SWITCH_USER);
        CHECK(g.n == f.n && memcmp(g.ips, f.ips, f.n * sizeof(f.ips[0])) == 0);
        if (!in_order || f.end != PROFD_END_COMPLETE)
                fprintf(stderr, "%s: end %u, %zu HotSpot frames, %zu of Spin's (WALKER_VERBOSE=1 shows them)\n", label,
                        f.end, pseudo, found);
        return found >= 3;
}

/* 0 when tested, 77 when the JVM could not be traced, else a negative
 * errno. */
static int test_jvm(const char *java, const char *dir, const char *flag, unsigned stops) {
        struct jvm j = { .mem_fd = -1 };
        unsigned chains = 0;
        char path[64];
        int r, status;

        r = start(&j, java, dir, flag);
        if (r < 0) {
                recording_done(&j.r);
                return r;
        }
        usleep(300 * 1000);
        j.tid = busiest_thread(j.r.pid);
        if (!j.tid || ptrace(PTRACE_SEIZE, j.tid, NULL, NULL) < 0) {
                fprintf(stderr, "cannot trace the JVM's thread %d: %m\n", (int) j.tid);
                recording_done(&j.r);
                return 77;
        }
        j.r.start = 3000000 + (uint64_t) j.r.pid;
        j.r.dwfl = dwfl_begin(&recording_dwfl_callbacks);
        r = stop_thread(&j);
        if (r == 0 && (!j.r.dwfl || dwfl_linux_proc_report(j.r.dwfl, j.r.pid) != 0 ||
                       dwfl_report_end(j.r.dwfl, NULL, NULL) != 0))
                r = -EIO;
        /* the mappings (a thread's stack is no "[stack]": -ENOENT, every
         * read goes to the live process) */
        if (r == 0 && (r = record_memory(&j.r)) == -ENOENT)
                r = 0;
        if (r == 0) {
                snprintf(path, sizeof(path), "/proc/%d/mem", (int) j.r.pid);
                j.mem_fd = open(path, O_RDONLY | O_CLOEXEC);
                r = j.mem_fd < 0 ? -errno : discover(&j);
        }
        if (r == 0) {
                publish(&j.r, PUBLISH_TABLES);
                for (unsigned s = 0; s < stops; s++) {
                        char label[64];

                        if (s > 0) {
                                /* run a while: the chain warms up to C1, then C2 */
                                CHECK(ptrace(PTRACE_CONT, j.tid, NULL, NULL) == 0);
                                usleep(400 * 1000);
                                CHECK(stop_thread(&j) == 0);
                        }
                        snprintf(label, sizeof(label), "%s stop %u", flag ?: "default", s);
                        chains += check_stop(&j, label);
                }
                /* most stops land in the chain: it spins in leaf */
                CHECK(chains * 2 >= stops);
                printf("%s: %u of %u stops in Spin's chain, each walked to start_thread\n", flag ?: "default flags",
                       chains, stops);
        } else
                fprintf(stderr, "%s: %s\n", java, strerror(-r));
        shim_mem.live_fd = -1;
        if (j.mem_fd >= 0)
                close(j.mem_fd);
        (void) ptrace(PTRACE_DETACH, j.tid, NULL, NULL);
        recording_done(&j.r);
        (void) waitpid(j.tid, &status, __WALL | WNOHANG);
        return r;
}

int main(int argc, char *argv[]) {
        char dir[] = "/tmp/profd-bpf-hotspot-XXXXXX", path[256];
        FILE *f;
        int r;

        if (argc < 2) {
                fprintf(stderr, "Usage: %s JAVA\n", argv[0]);
                return 2;
        }
        if (access(argv[1], X_OK) < 0) {
                fprintf(stderr, "%s: %m; skipped\n", argv[1]);
                return 77;
        }
        unsetenv("DEBUGINFOD_URLS");
        unsetenv("JAVA_TOOL_OPTIONS");
        elf_version(EV_CURRENT);
        shim_init();
        if (!mkdtemp(dir))
                return 1;
        snprintf(path, sizeof(path), "%s/Spin.java", dir);
        f = fopen(path, "we");
        if (!f || fputs(source, f) < 0 || fclose(f) != 0)
                return 1;
        r = test_jvm(argv[1], dir, "-Xint", 3);
        if (r == 0)
                r = test_jvm(argv[1], dir, "-XX:TieredStopAtLevel=1", 4);
        if (r == 0)
                r = test_jvm(argv[1], dir, NULL, 8);
        unlink(path);
        rmdir(dir);
        if (r == 77)
                return 77;
        CHECK_INT_EQ(r, 0);
        TESTS_DONE();
}
