/* The layouts and the code reader on real interpreters: starts a Python
 * process running a known chain of functions (walk-target.py), finds its
 * interpreter by discovery, its thread state through _PyRuntime's
 * interpreters and threads lists, and walks the frame chain through
 * /proc/PID/mem, as the BPF walker will, checking the qualified names, the
 * file and the lines, the spinning one included. Then names the same
 * frames as the daemon does (python.c's hooks through the runtime-names
 * cache), and again once the process has exited; and stores them through
 * the writer (its code events, a drain of pseudo-frames) as rules.md's
 * convention says. No root: a parent may read its child's memory. Each interpreter absent here is skipped. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "macro.h"
#include "procmaps.h"
#include "python-code.h"
#include "python-discover.h"
#include "python-layout.h"
#include "python.h"
#include "runtime-names.h"
#include "store.h"
#include "tests.h"
#include "writer-fixture.h"
#include "writer.h"

#define MAX_FRAMES 64

struct target {
        pid_t pid;
        int mem_fd;
};

static int mem_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        const struct target *t = userdata;
        ssize_t n = pread(t->mem_fd, buf, size, (off_t) addr);

        return n == (ssize_t) size ? 0 : -EIO;
}

static int mem_ptr(const struct target *t, uint64_t addr, uint64_t *ret) {
        return mem_read((void *) t, addr, ret, sizeof *ret);
}

/* The interpreter mapped in `pid` (the executable or libpython), and its
 * load bias: the mapping at file offset 0 minus the first PT_LOAD's page. */
static int find_interpreter(pid_t pid, struct python_binary *ret, uint64_t *ret_bias) {
        char path[64], line[PATH_MAX + 128];
        _cleanup_fclose_ FILE *f = NULL;

        snprintf(path, sizeof path, "/proc/%d/maps", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof line, f)) {
                unsigned long start, offset;
                char file[PATH_MAX];
                int fd;
                Elf *elf;
                size_t n;
                uint64_t first = UINT64_MAX;

                if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %4095s", &start, &offset, file) != 3 || offset != 0 ||
                    file[0] != '/' || python_discover_file(file, ret) < 0)
                        continue;
                fd = open(file, O_RDONLY | O_CLOEXEC);
                elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
                if (elf && elf_getphdrnum(elf, &n) == 0)
                        for (size_t i = 0; i < n; i++) {
                                GElf_Phdr ph;

                                if (gelf_getphdr(elf, (int) i, &ph) && ph.p_type == PT_LOAD)
                                        first = MIN(first, ph.p_vaddr & ~(uint64_t) 0xfff);
                        }
                if (elf)
                        elf_end(elf);
                safe_close(fd);
                if (first == UINT64_MAX)
                        return -EBADMSG;
                *ret_bias = start - first;
                printf("interpreter %s, version 0x%08x, bias 0x%" PRIx64 "\n", file, ret->version, *ret_bias);
                return 0;
        }
        return -ENOENT;
}

struct frame_seen {
        char name[256];
        char file[PATH_MAX];
        int32_t line;
        uint64_t code;         /* the code object, and the instruction's offset in it */
        uint32_t offset;
};

/* glibc 2.36 (x86_64), as runtimes.md measured it: a key below 32 has its
 * value in struct pthread's specific_1stblock, 16-byte entries (seq, data)
 * from 0x310 of the thread pointer (pthread_self()). */
#define GLIBC_SPECIFIC_1STBLOCK 0x310
#define GLIBC_KEY_2NDLEVEL_SIZE 32

/* The thread state the TSS key gives the thread at `tp` is `tstate`. */
static void check_tss(const struct target *t, const struct python_binary *b, uint64_t bias,
                      const struct python_layout *l, uint64_t tp, uint64_t tstate) {
        uint32_t key = UINT32_MAX;
        uint64_t value = 0;

        if (l->runtime_tss_key == PYTHON_NO_FIELD || tp == 0) {
                printf("  TSS key: not checked (%s)\n", tp ? "no offset for this version" : "no thread pointer");
                return;
        }
        CHECK_INT_EQ(mem_read((void *) t, b->runtime + bias + l->runtime_tss_key, &key, sizeof key), 0);
        CHECK(key < GLIBC_KEY_2NDLEVEL_SIZE);
        if (key >= GLIBC_KEY_2NDLEVEL_SIZE)
                return;
        CHECK_INT_EQ(mem_ptr(t, tp + GLIBC_SPECIFIC_1STBLOCK + 16 * key + 8, &value), 0);
        CHECK_INT_EQ(value, tstate);
        printf("  TSS key %u: thread state 0x%" PRIx64 "\n", key, value);
}

/* The first thread's Python frames, innermost first, down to the frame
 * that entered the interpreter loop. Returns how many, or -errno. */
static int walk(const struct target *t, const struct python_binary *b, uint64_t bias,
                const struct python_layout *l, uint64_t tp, struct frame_seen *frames) {
        uint64_t interp, tstate, cframe, frame;
        int n = 0;

        if (mem_ptr(t, b->runtime + bias + l->runtime_interpreters_head, &interp) < 0 ||
            mem_ptr(t, interp + l->interp_threads_head, &tstate) < 0)
                return -EIO;
        check_tss(t, b, bias, l, tp, tstate);
        if (l->tstate_cframe == PYTHON_NO_FIELD)
                cframe = tstate;
        else if (mem_ptr(t, tstate + l->tstate_cframe, &cframe) < 0)
                return -EIO;
        if (mem_ptr(t, cframe + l->current_frame, &frame) < 0)
                return -EIO;
        while (frame && n < MAX_FRAMES) {
                uint8_t bytes[256];
                uint64_t code, instr, previous;
                uint32_t offset;
                struct python_code pc;
                enum python_code_reason reason;
                enum python_frame_role role;
                int r;

                if (l->frame_size > sizeof bytes || mem_read((void *) t, frame, bytes, l->frame_size) < 0)
                        return -EIO;
                role = python_layout_frame_role(l, bytes);
                if (role == PYTHON_FRAME_SHIM)
                        break;
                memcpy(&code, bytes + l->frame_code, 8);
                memcpy(&instr, bytes + l->frame_instr, 8);
                memcpy(&previous, bytes + l->frame_previous, 8);
                r = python_code_read(l, mem_read, (void *) t, b->code_type + bias, code, &pc, &reason);
                if (r < 0) {
                        fprintf(stderr, "frame %d: code object 0x%" PRIx64 ": %s\n", n, code,
                                python_code_reason_name(reason));
                        return r;
                }
                snprintf(frames[n].name, sizeof frames[n].name, "%s", pc.qualname);
                snprintf(frames[n].file, sizeof frames[n].file, "%s", pc.filename);
                frames[n].line = -1;
                frames[n].code = code;
                frames[n].offset = UINT32_MAX;
                if (python_layout_instr_offset(l, code, instr, &offset) == 0)
                        frames[n].offset = offset;
                if (frames[n].offset != UINT32_MAX &&
                    python_code_line(&pc, offset, &frames[n].line, &reason) < 0)
                        fprintf(stderr, "frame %d: no line at %u: %s\n", n, offset, python_code_reason_name(reason));
                printf("  %s (%s:%d)\n", frames[n].name, frames[n].file, frames[n].line);
                python_code_done(&pc);
                n++;
                if (role == PYTHON_FRAME_ENTRY)
                        break;
                frame = previous;
        }
        return n;
}

/* The naming cache's reader on the child: its /proc/PID/mem (the
 * daemon's checks the instance; here there is one). */
static int names_open(void *userdata, uint32_t pid, uint64_t start_ns) {
        const struct target *t = userdata;
        int fd = (pid_t) pid == t->pid ? fcntl(t->mem_fd, F_DUPFD_CLOEXEC, 3) : -1;

        return fd >= 0 ? fd : -ESRCH;
}

static int names_read(void *userdata, int handle, uint64_t addr, void *buf, size_t size) {
        ssize_t n = pread(handle, buf, size, (off_t) addr);

        return n == (ssize_t) size ? 0 : n == 0 ? -ESRCH : -EIO;
}

static void names_close(void *userdata, int handle) {
        close(handle);
}

/* Each frame as the daemon names it: the code event read, the lookup of
 * its pseudo-frame in a drain. */
static void check_names(runtime_names *c, const struct target *t, const struct frame_seen *frames, int n) {
        for (int i = 0; i < n; i++) {
                struct runtime_names_frame f;

                CHECK(frames[i].offset != UINT32_MAX);
                CHECK_INT_EQ(runtime_names_lookup(c, (uint32_t) t->pid, 1, true,
                                                  PROFD_RT_FRAME(UNWIND_RUNTIME_PYTHON, frames[i].code,
                                                                 frames[i].offset), &f), 0);
                CHECK_INT_EQ(f.status, RUNTIME_NAMES_NAMED);
                if (f.status != RUNTIME_NAMES_NAMED)
                        continue;
                CHECK_STR_EQ(f.name.function, frames[i].name);
                CHECK_STR_EQ(f.name.file, frames[i].file);
                CHECK_INT_EQ(f.name.line, frames[i].line);
                CHECK_INT_EQ(f.reason, 0);
        }
}

/* The daemon's whole naming path for these frames: the writer gets a code
 * event for each (as the loop hands them over), then a drain of one
 * sample whose user stack is the walked chain as pseudo-frames, and one of
 * a process no event named. The store then has each frame as rules.md
 * says: module the file, build_id "python-" and 16 hex digits, address the
 * line, the qualified name, one line; the other "[python]", unresolved
 * for want of a runtime. */
static void check_writer(const struct target *t, const struct unwind_runtime_found *found, uint64_t bias,
                         const struct frame_seen *frames, int n) {
        uint64_t start = start_ns_of(t->pid), ips[MAX_FRAMES], seq = 0;
        struct writer_fixture fx;
        struct writer_stats ws;
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        int rows = 0, unnamed = 0;

        CHECK_INT_EQ(writer_fixture_open(&fx, "/tmp/profd-pywalk"), 0);
        if (!fx.w) {
                writer_fixture_close(&fx);
                return;
        }
        for (int i = 0; i < n; i++) {
                CHECK_INT_EQ(writer_runtime_code(fx.w, (uint32_t) t->pid, start, bias, 0, frames[i].code, found), 0);
                ips[i] = PROFD_RT_FRAME(UNWIND_RUNTIME_PYTHON, frames[i].code, frames[i].offset);
        }
        CHECK_INT_EQ(writer_fixture_drain(&fx, t->pid, start, ips, (size_t) n,
                                          PROFD_RT_FRAME(UNWIND_RUNTIME_PYTHON, frames[0].code, 0), &seq), 0);
        writer_get_stats(fx.w, &ws);
        CHECK_INT_EQ(ws.unresolved.python_no_runtime, 1);
        CHECK_INT_EQ(ws.unresolved.python_exited, 0);
        CHECK_INT_EQ(ws.runtime_names.reads, n);
        CHECK_INT_EQ(ws.runtime_names.processes, 1);
        writer_free(fx.w);
        fx.w = NULL;

        CHECK_INT_EQ(sqlite3_open_v2(fx.path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        CHECK_INT_EQ(sqlite3_prepare_v2(db,
                "SELECT m.path, m.build_id, l.address, f.name, ll.file, ll.line, l.unresolved, "
                "(SELECT count(*) FROM location_lines x WHERE x.location_id = l.id) "
                "FROM locations l JOIN mappings m ON m.id = l.mapping_id "
                "LEFT JOIN functions f ON f.id = l.function_id "
                "LEFT JOIN location_lines ll ON ll.location_id = l.id AND ll.depth = 0 "
                "WHERE m.build_id LIKE 'python-%' OR m.path = '[python]'", -1, &st, NULL), SQLITE_OK);
        while (st && sqlite3_step(st) == SQLITE_ROW) {
                const char *module = (const char *) sqlite3_column_text(st, 0);
                const char *build_id = (const char *) sqlite3_column_text(st, 1);
                const char *name = (const char *) sqlite3_column_text(st, 3);
                const struct frame_seen *f = NULL;

                printf("  stored %s %s %s+%lld\n", name ? name : "(unnamed)", build_id, module,
                       (long long) sqlite3_column_int64(st, 2));
                if (streq(module, "[python]")) {
                        unnamed++;
                        CHECK(sqlite3_column_type(st, 3) == SQLITE_NULL);
                        CHECK_INT_EQ(sqlite3_column_int64(st, 6), STORE_UNRESOLVED_PYTHON_NO_RUNTIME);
                        CHECK((uint64_t) sqlite3_column_int64(st, 2) == frames[0].code);
                        continue;
                }
                rows++;
                for (int i = 0; name && i < n; i++)
                        if (streq(frames[i].name, name))
                                f = &frames[i];
                CHECK(f != NULL);
                if (!f)
                        continue;
                CHECK_STR_EQ(module, f->file);
                CHECK_INT_EQ(strlen(build_id), strlen("python-") + 16);
                CHECK(strspn(build_id + 7, "0123456789abcdef") == 16);
                CHECK_INT_EQ(sqlite3_column_int64(st, 2), f->line);
                CHECK_STR_EQ((const char *) sqlite3_column_text(st, 4), f->file);
                CHECK_INT_EQ(sqlite3_column_int64(st, 5), f->line);
                CHECK(sqlite3_column_type(st, 6) == SQLITE_NULL);
                CHECK_INT_EQ(sqlite3_column_int64(st, 7), 1);
        }
        CHECK_INT_EQ(rows, n);
        CHECK_INT_EQ(unnamed, 1);
        sqlite3_finalize(st);
        sqlite3_close(db);
        writer_fixture_close(&fx);
}

static void test_interpreter(const char *python, const char *script) {
        int out[2];
        char ready[64] = {};
        unsigned long long tp = 0;
        struct target t = { .mem_fd = -1 };
        struct python_binary b;
        struct python_layout l;
        struct frame_seen frames[MAX_FRAMES];
        uint64_t bias = 0;
        char mem[64];
        bool reaped = false;
        int n;

        if (access(python, X_OK) < 0) {
                fprintf(stderr, "%s absent, skipped\n", python);
                return;
        }
        printf("%s\n", python);
        if (pipe2(out, O_CLOEXEC) < 0)
                abort();
        t.pid = fork();
        if (t.pid == 0) {
                dup2(out[1], STDOUT_FILENO);
                execl(python, python, "-S", script, (char *) NULL);
                _exit(127);
        }
        close(out[1]);
        /* "ready\n": the chain is built and leaf is about to spin. */
        CHECK(read(out[0], ready, sizeof ready - 1) > 0);
        CHECK(sscanf(ready, "ready %llu", &tp) == 1);

        snprintf(mem, sizeof mem, "/proc/%d/mem", (int) t.pid);
        t.mem_fd = open(mem, O_RDONLY | O_CLOEXEC);
        CHECK(t.mem_fd >= 0);
        CHECK_INT_EQ(find_interpreter(t.pid, &b, &bias), 0);
        CHECK_INT_EQ(python_layout_get(b.version, b.runtime_head, b.runtime_head_size, &l), 0);
        /* Until leaf spins (a loaded machine may take a while to get there). */
        for (int tries = 0; tries < 50; tries++) {
                n = t.mem_fd >= 0 ? walk(&t, &b, bias, &l, tp, frames) : -EBADF;
                if (n < 0 || (n > 0 && streq(frames[0].name, "leaf")))
                        break;
                usleep(100 * 1000);
        }
        CHECK_INT_EQ(n, 4);
        if (n == 4) {
                CHECK_STR_EQ(frames[0].name, "leaf");
                CHECK_INT_EQ(frames[0].line, 11);
                CHECK_STR_EQ(frames[1].name, "Outer.middle");
                CHECK_INT_EQ(frames[1].line, 18);
                CHECK_STR_EQ(frames[2].name, "root");
                CHECK_INT_EQ(frames[2].line, 22);
                CHECK_STR_EQ(frames[3].name, "<module>");
                CHECK_INT_EQ(frames[3].line, 35);
                CHECK_STR_EQ(frames[0].file, script);
        }
        if (n > 0) {
                const struct unwind_runtime *runtimes[] = { [UNWIND_RUNTIME_PYTHON] = &python_runtime };
                struct runtime_names_reader reader = { .open = names_open, .read = names_read, .close = names_close, .userdata = &t };
                struct unwind_runtime_found found;
                struct runtime_names_stats st;
                runtime_names *c = NULL;

                int r = python_found_make(&b, &l, &found);

                /* 3.13: no TSS key, no BPF walk yet; naming needs only the
                 * layout and PyCode_Type, as discovery would keep them */
                if (r == -EPROTONOSUPPORT) {
                        struct python_names names = { .layout = l, .code_type = b.code_type };

                        found = (struct unwind_runtime_found) { .id = UNWIND_RUNTIME_PYTHON };
                        memcpy(found.names, &names, sizeof(names));
                } else
                        CHECK_INT_EQ(r, 0);
                CHECK_INT_EQ(runtime_names_new(runtimes, ELEMENTSOF(runtimes), &reader, 1 << 20, &c), 0);
                for (int i = 0; c && i < n; i++)
                        CHECK_INT_EQ(runtime_names_learn(c, (uint32_t) t.pid, 1, &found, bias, 0, frames[i].code), 0);
                check_writer(&t, &found, bias, frames, n);
                if (c) {
                        runtime_names_begin_drain(c);
                        check_names(c, &t, frames, n);
                        runtime_names_end_drain(c, NULL, NULL);
                        /* gone: the reuse check finds no memory, the names stay */
                        kill(t.pid, SIGKILL);
                        waitpid(t.pid, NULL, 0);
                        reaped = true;
                        runtime_names_begin_drain(c);
                        check_names(c, &t, frames, n);
                        runtime_names_get_stats(c, &st);
                        CHECK_INT_EQ(st.reads, n);
                        CHECK_INT_EQ(st.reused, 0);
                        runtime_names_free(c);
                }
        }
        safe_close(t.mem_fd);
        close(out[0]);
        if (!reaped) {
                kill(t.pid, SIGKILL);
                waitpid(t.pid, NULL, 0);
        }
}

int main(int argc, char **argv) {
        static const char *const pyenv[] = {
                "/.pyenv/versions/3.11.*/bin/python3.11",
                "/.pyenv/versions/3.12.*/bin/python3.12",
                "/.pyenv/versions/3.13.*/bin/python3.13",
        };
        char script[PATH_MAX];
        const char *home = getenv("HOME");

        if (argc != 2 || !realpath(argv[1], script)) {
                fprintf(stderr, "usage: %s walk-target.py\n", argv[0]);
                return 2;
        }
        elf_version(EV_CURRENT);
        test_interpreter("/usr/bin/python3.11", script);
        for (size_t i = 0; home && i < ELEMENTSOF(pyenv); i++) {
                char pattern[PATH_MAX];
                glob_t g;

                snprintf(pattern, sizeof pattern, "%s%s", home, pyenv[i]);
                if (glob(pattern, 0, NULL, &g) != 0) {
                        fprintf(stderr, "%s: none, skipped\n", pattern);
                        continue;
                }
                for (size_t k = 0; k < g.gl_pathc; k++)
                        test_interpreter(g.gl_pathv[k], script);
                globfree(&g);
        }
        TESTS_DONE();
}
