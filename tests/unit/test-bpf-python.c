/* Unit test of CPython's BPF walker (bpf/runtime.bpf.h, python.bpf.h),
 * without root: the walker compiled in user space against the shim
 * (bpf-shim/), on a real interpreter stopped at a known Python chain. The
 * child runs SCRIPT under ptrace and stops itself in inner(); its
 * registers, thread pointer, stack and tables are recorded
 * (bpf-shim/recording.c), the interpreter is found in its mappings as the
 * daemon finds it (python_discover_file, python_found_make), and every
 * other read of the walk goes to the stopped process's memory.
 *
 * Asserted, for each interpreter given: the four Python frames, innermost
 * first, in place of the loop's native frame, named and lined through the
 * daemon's code-object reader; the native frames on both sides (the call
 * into os.kill inside, main's outside); the same walk in a scheduler's
 * slot; one code event per code object, none again; then, with the
 * child's memory corrupted by the test: a frame chain that loops ends at
 * the walk's depth, a previous pointer into nowhere and a TSS key out of
 * range are counted, and the native walk goes on to main.
 *
 * Usage: test-bpf-python PYTHON... (77: none could be traced or walked) */
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
#include "python-code.h"
#include "python.h"
#include "recording.h"
#include "shim.h"
#include "tests.h"

/* Line numbers matter: the frames' lines are checked against them. */
static const char script[] =
        "import os, signal\n"                                   /* 1 */
        "def inner():\n"                                        /* 2 */
        "    os.kill(os.getpid(), signal.SIGSTOP)\n"            /* 3 */
        "def middle():\n"                                       /* 4 */
        "    inner()\n"                                         /* 5 */
        "def outer():\n"                                        /* 6 */
        "    middle()\n"                                        /* 7 */
        "outer()\n";                                            /* 8 */

static const char *const chain[] = { "inner", "middle", "outer", "<module>" };
static const int32_t lines[] = { 3, 5, 7, 8 };
#define CHAIN_N 4

struct child {
        struct recording r;
        int mem_fd;                    /* /proc/PID/mem, read and write */
        struct unwind_runtime_found found;
        struct python_names names;
        uint64_t bias;                 /* the interpreter file's */
};

static int read_mem(void *userdata, uint64_t addr, void *buf, size_t size) {
        struct child *c = userdata;

        return pread(c->mem_fd, buf, size, (off_t) addr) == (ssize_t) size ? 0 : -EIO;
}

static int write_u64(struct child *c, uint64_t addr, uint64_t v) {
        return pwrite(c->mem_fd, &v, sizeof(v), (off_t) addr) == sizeof(v) ? 0 : -EIO;
}

/* Starts the interpreter on the script under ptrace, lets it run until it
 * stops itself, and takes its registers. 77 when it cannot be traced. */
static int start(struct child *c, const char *python) {
        struct user_regs_struct regs;
        int status;

        c->r.pid = fork();
        if (c->r.pid < 0)
                return -errno;
        if (c->r.pid == 0) {
                if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
                        _exit(77);
                execl(python, python, "-S", "-c", script, (char *) NULL);
                _exit(127);
        }
        for (;;) {
                if (waitpid(c->r.pid, &status, 0) != c->r.pid)
                        return -ECHILD;
                if (!WIFSTOPPED(status)) {
                        c->r.pid = 0;
                        return WIFEXITED(status) && WEXITSTATUS(status) == 77 ? 77 : -ECHILD;
                }
                if (WSTOPSIG(status) == SIGSTOP)
                        break;
                /* the exec's SIGTRAP */
                if (ptrace(PTRACE_CONT, c->r.pid, NULL, NULL) < 0)
                        return -errno;
        }
        if (ptrace(PTRACE_GETREGS, c->r.pid, NULL, &regs) < 0)
                return -errno;
        c->r.regs = (struct pt_regs) { .ip = regs.rip, .sp = regs.rsp, .bp = regs.rbp };
        c->r.fsbase = regs.fs_base;
        c->r.start = 2000000 + (uint64_t) c->r.pid;
        c->r.dwfl = dwfl_begin(&recording_dwfl_callbacks);
        if (!c->r.dwfl || dwfl_linux_proc_report(c->r.dwfl, c->r.pid) != 0 ||
            dwfl_report_end(c->r.dwfl, NULL, NULL) != 0)
                return -EIO;
        return 0;
}

/* Finds the interpreter in the recorded mappings as the unwinder does, and
 * gives the process's entry its runtime in slot 1. */
static int discover(struct child *c) {
        for (size_t i = 0; i < c->r.n_maps; i++) {
                struct python_binary bin;
                struct python_layout layout;
                uint32_t idx = 0;

                if (!c->r.paths[i] || c->r.maps[i].kind != PROFD_MAPPING_TABLE ||
                    python_discover_file(c->r.paths[i], &bin) < 0)
                        continue;
                if (python_layout_get(bin.version, bin.runtime_head, bin.runtime_head_size, &layout) < 0 ||
                    python_found_make(&bin, &layout, &c->found) < 0)
                        return -EPROTONOSUPPORT;
                memcpy(&c->names, c->found.names, sizeof(c->names));
                c->bias = c->r.maps[i].bias;
                c->r.rt = (struct profd_unwind_proc) {
                        .rt_lo = c->found.lo + c->bias, .rt_hi = c->found.hi + c->bias,
                        .rt_bias = c->bias, .rt_slot = 1,
                };
                if (c->found.cold_lo < c->found.cold_hi) {
                        c->r.rt.rt_cold_lo = c->found.cold_lo + c->bias;
                        c->r.rt.rt_cold_hi = c->found.cold_hi + c->bias;
                }
                return bpf_map_update_elem(&unwind_runtimes, &idx, &c->found.bpf, BPF_ANY);
        }
        return -ENOENT;
}

static struct profd_frames walk(struct child *c, __u32 slot) {
        struct task_struct task = { .pid = c->r.pid, .tgid = c->r.pid, .start_boottime = c->r.start };
        struct profd_frames *f = scratch_get(slot);
        bool announced;

        task.group_leader = &task;
        task.thread.fsbase = c->r.fsbase;
        shim_regs = c->r.regs;
        /* everything is read live, the stack too: the test writes into
         * the process */
        shim_mem.len = 0;
        shim_mem.live_fd = c->mem_fd;
        CHECK(f && user_stack_unwind(&task, f, slot, &announced));
        return *f;
}

static uint64_t counter(enum profd_counter k) {
        __u32 zero = 0;
        struct profd_counters *c = bpf_map_lookup_elem(&counters, &zero);

        return c ? c->v[k] : 0;
}

static void print_frames(const struct child *c, const char *title, const struct profd_frames *f) {
        if (!getenv("WALKER_VERBOSE"))
                return;
        fprintf(stderr, "%s: %u frames, end %u\n", title, f->n, f->end);
        for (__u32 i = 0; i < f->n && i < PROFD_MAX_FRAMES; i++)
                fprintf(stderr, "  #%u %#" PRIx64 " %s\n", i, (uint64_t) f->ips[i],
                        PROFD_RT_FRAME_IS(f->ips[i]) ? "(python)"
                                                      : symbolize(&c->r, i ? f->ips[i] - 1 : f->ips[i]));
}

/* Where the Python frames are in f: *first and how many in a row. */
static size_t python_run(const struct profd_frames *f, size_t *first) {
        size_t n = 0;

        *first = 0;
        for (size_t i = 0; i < f->n && i < PROFD_MAX_FRAMES; i++)
                if (PROFD_RT_FRAME_IS(f->ips[i])) {
                        if (!n)
                                *first = i;
                        n++;
                }
        return n;
}

/* Is a native frame from `from` on named with `name` in it? */
static bool any_native(const struct child *c, const struct profd_frames *f, size_t from, const char *name) {
        for (size_t i = from; i < f->n && i < PROFD_MAX_FRAMES; i++)
                if (!PROFD_RT_FRAME_IS(f->ips[i]) && strstr(symbolize(&c->r, f->ips[i] - (i ? 1 : 0)), name))
                        return true;
        return false;
}

/* The chain as the daemon names it: the code objects' qualified names
 * and the lines of the offsets the walker took. */
static void check_named(struct child *c, const struct profd_frames *f, size_t first) {
        for (size_t k = 0; k < CHAIN_N; k++) {
                __u64 ip = f->ips[first + k];
                struct python_code code = {};
                enum python_code_reason why = PYTHON_CODE_OK;
                int32_t line = -1;

                CHECK(PROFD_RT_FRAME_ID(ip) == PROFD_RUNTIME_PYTHON);
                CHECK(python_code_read(&c->names.layout, read_mem, c, c->names.code_type ? c->names.code_type + c->bias : 0,
                                       PROFD_RT_FRAME_CODE(ip), &code, &why) == 0);
                if (code.qualname) {
                        CHECK_STR_EQ(code.qualname, chain[k]);
                        CHECK_STR_EQ(code.filename, "<string>");
                        CHECK(python_code_line(&code, PROFD_RT_FRAME_OFFSET(ip), &line, &why) == 0);
                        CHECK_INT_EQ(line, lines[k]);
                }
                python_code_done(&code);
        }
}

/* The current frame's address, found independently of the walker: the
 * thread state by the key, then cframe and current_frame. */
static uint64_t current_frame(struct child *c) {
        const struct profd_python *py = &c->found.bpf.python;
        uint32_t key = 0;
        uint64_t tstate = 0, cframe, frame = 0;

        CHECK(pread(c->mem_fd, &key, sizeof(key), (off_t) (py->tss_key + c->bias)) == sizeof(key));
        CHECK(read_mem(c, c->r.fsbase + py->glibc_specific + 16 * key + 8, &tstate, 8) == 0);
        cframe = tstate;
        if (py->tstate_cframe != 0xffff)
                CHECK(read_mem(c, tstate + py->tstate_cframe, &cframe, 8) == 0);
        CHECK(read_mem(c, cframe + py->current_frame, &frame, 8) == 0);
        return frame;
}

/* How many of the chain's code objects share their runtime_seen slot with
 * another of them: each is announced again when the chain is walked again
 * (the set is direct-mapped), the others are not. */
static unsigned chain_collisions(const struct profd_frames *f, size_t first) {
        __u32 slots[CHAIN_N];
        unsigned n = 0;

        for (size_t k = 0; k < CHAIN_N; k++)
                slots[k] = rt_seen_slot(rt_seen_tag(shim_event.tgid, shim_event.start_ns,
                                                    PROFD_RT_FRAME_CODE(f->ips[first + k]), PROFD_RUNTIME_PYTHON));
        for (size_t k = 0; k < CHAIN_N; k++)
                for (size_t j = 0; j < CHAIN_N; j++)
                        if (j != k && slots[j] == slots[k]) {
                                n++;
                                break;
                        }
        return n;
}

static void test_chain(struct child *c) {
        unsigned announced = shim_events[PROFD_EVENT_RUNTIME_CODE];
        uint64_t walks = counter(PROFD_CNT_RT_WALKS);
        struct profd_frames f = walk(c, SCRATCH_ONCPU_USER), g;
        size_t first = 0;

        print_frames(c, "chain", &f);
        CHECK_INT_EQ(f.end, PROFD_END_COMPLETE);
        CHECK_INT_EQ(python_run(&f, &first), CHAIN_N);
        CHECK(first > 0 && first + CHAIN_N < f.n);
        for (size_t k = 0; k < CHAIN_N; k++)
                CHECK(PROFD_RT_FRAME_IS(f.ips[first + k]));
        check_named(c, &f, first);
        /* the loop's frame is replaced, its callers and the C call inside
         * stay native */
        CHECK(!any_native(c, &f, 0, "_PyEval_EvalFrameDefault"));
        CHECK(any_native(c, &f, first + CHAIN_N, "Py_BytesMain"));
        CHECK(any_native(c, &f, 0, "kill"));
        CHECK_INT_EQ(counter(PROFD_CNT_RT_WALKS), walks + 1);
        CHECK_INT_EQ(shim_events[PROFD_EVENT_RUNTIME_CODE], announced + CHAIN_N);
        CHECK_INT_EQ(shim_event.rt_slot, 1);
        CHECK_INT_EQ(shim_event.rt.bias, c->bias);
        /* again: the same frames, every code object announced already
         * (unless another of the chain took its slot since) */
        g = walk(c, SCRATCH_ONCPU_USER);
        CHECK(g.n == f.n && memcmp(g.ips, f.ips, f.n * sizeof(f.ips[0])) == 0);
        CHECK_INT_EQ(shim_events[PROFD_EVENT_RUNTIME_CODE], announced + CHAIN_N + chain_collisions(&f, first));
        /* a scheduler's walk (no caches): the same frames */
        g = walk(c, SCRATCH_SWITCH_USER);
        CHECK(g.n == f.n && memcmp(g.ips, f.ips, f.n * sizeof(f.ips[0])) == 0);
}

/* The process's memory corrupted, as a hostile or broken process may: the
 * walk stays bounded, counts why, and goes on natively. */
static void test_hostile(struct child *c) {
        const struct profd_python *py = &c->found.bpf.python;
        uint64_t frame = current_frame(c), previous = 0, faults, no_state;
        uint32_t key = 0, bad_key = 40;
        struct profd_frames f;
        size_t first;

        CHECK(frame != 0);
        CHECK(read_mem(c, frame + py->frame_previous, &previous, 8) == 0);

        /* a loop: the frame is its own previous */
        CHECK(write_u64(c, frame + py->frame_previous, frame) == 0);
        f = walk(c, SCRATCH_SWITCH_USER);
        print_frames(c, "loop", &f);
        CHECK_INT_EQ(f.end, PROFD_END_DEPTH);
        CHECK_INT_EQ(f.n, PROFD_MAX_FRAMES);

        /* into nowhere: the second frame cannot be read */
        faults = counter(PROFD_RT_READ_FAULT);
        CHECK(write_u64(c, frame + py->frame_previous, 0x10) == 0);
        f = walk(c, SCRATCH_SWITCH_USER);
        print_frames(c, "garbage", &f);
        CHECK_INT_EQ(counter(PROFD_RT_READ_FAULT), faults + 1);
        CHECK_INT_EQ(python_run(&f, &first), 1);
        CHECK_INT_EQ(f.end, PROFD_END_COMPLETE);
        CHECK(any_native(c, &f, first + 1, "Py_BytesMain"));
        CHECK(write_u64(c, frame + py->frame_previous, previous) == 0);

        /* a TSS key out of glibc's first block: no thread state */
        no_state = counter(PROFD_RT_NO_THREAD_STATE);
        CHECK(pread(c->mem_fd, &key, sizeof(key), (off_t) (py->tss_key + c->bias)) == sizeof(key));
        CHECK(pwrite(c->mem_fd, &bad_key, sizeof(bad_key), (off_t) (py->tss_key + c->bias)) == sizeof(bad_key));
        f = walk(c, SCRATCH_SWITCH_USER);
        print_frames(c, "no state", &f);
        CHECK_INT_EQ(counter(PROFD_RT_NO_THREAD_STATE), no_state + 1);
        CHECK_INT_EQ(python_run(&f, &first), 0);
        CHECK_INT_EQ(f.end, PROFD_END_COMPLETE);
        CHECK(any_native(c, &f, 0, "Py_BytesMain"));
        CHECK(pwrite(c->mem_fd, &key, sizeof(key), (off_t) (py->tss_key + c->bias)) == sizeof(key));

        /* restored: the chain again */
        f = walk(c, SCRATCH_SWITCH_USER);
        CHECK_INT_EQ(python_run(&f, &first), CHAIN_N);
}

/* 0 when tested, 77 when this interpreter could not be (not traceable, not
 * a CPython the walker knows), else a negative errno. */
static int test_python(const char *python) {
        struct child c = { .mem_fd = -1 };
        char path[64];
        int r;

        r = start(&c, python);
        if (r == 0)
                r = record_memory(&c.r);
        if (r == 0) {
                snprintf(path, sizeof(path), "/proc/%d/mem", (int) c.r.pid);
                c.mem_fd = open(path, O_RDWR | O_CLOEXEC);
                r = c.mem_fd < 0 ? -errno : discover(&c);
        }
        if (r == 0) {
                publish(&c.r, PUBLISH_TABLES);
                test_chain(&c);
                test_hostile(&c);
        } else {
                fprintf(stderr, "%s: %s\n", python, r == 77 ? "may not be traced" : strerror(-r));
        }
        shim_mem.live_fd = -1;
        if (c.mem_fd >= 0)
                close(c.mem_fd);
        recording_done(&c.r);
        return r == -ENOENT || r == -EPROTONOSUPPORT ? 77 : r;
}

int main(int argc, char *argv[]) {
        int tested = 0;

        if (argc < 2) {
                fprintf(stderr, "Usage: %s PYTHON...\n", argv[0]);
                return 2;
        }
        unsetenv("DEBUGINFOD_URLS");
        elf_version(EV_CURRENT);
        shim_init();
        for (int i = 1; i < argc; i++) {
                int r = test_python(argv[i]);

                CHECK(r == 0 || r == 77);
                tested += r == 0;
        }
        if (!tested)
                return 77;
        TESTS_DONE();
}
