/* HotSpot's naming hooks on a real JVM: starts Debian's java (argv[1]) on
 * Inlined.java (argv[2]) as a child, waits for C2 to compile its hot
 * method with a small callee inlined, finds that nmethod by walking the
 * code heaps block by block, and names through /proc/PID/mem, as the
 * daemon does: the Method (id HOTSPOT) with its line; the nmethod (id
 * HOTSPOT_CODE) at every offset of its code, which must give the callee
 * inlined in the caller at their source lines somewhere (the callee's
 * allocation), the caller alone somewhere (its loop's safepoint
 * poll), and never a
 * method that is not one of the two; the same through the naming cache
 * (dispatch by the frame's runtime id); a stub by its blob's name; and
 * addresses that hold no method or blob fail with a reason. No root.
 *
 * The walk to the Method* and the nmethod is the test's own, trusted,
 * with offsets looked up here by name: the hooks get only addresses. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elf-symbols.h"
#include "helpers.h"
#include "jvm-target.h"
#include "hotspot-code.h"
#include "hotspot.h"
#include "macro.h"
#include "procmaps.h"
#include "runtime-names.h"
#include "store.h"
#include "tests.h"
#include "writer-fixture.h"
#include "writer.h"

/* The Method* of the class's method `name`, by its Symbol. */
static uint64_t find_method(struct target *t, const uint64_t *sym, const struct hotspot_vmstructs *vs,
                            uint64_t klass, const char *name) {
        uint64_t methods = mem_u64(t, klass + vm_field(t, sym, "InstanceKlass", "_methods"));
        uint64_t data = vm_field(t, sym, "Array<Method*>", "_data");
        int32_t n = 0;

        if (!methods || mem_read(t, methods + vs->array_length, &n, 4) < 0)
                return 0;
        for (int32_t i = 0; i < n && i < 65536; i++) {
                uint64_t m = mem_u64(t, methods + data + 8 * (uint64_t) i);
                struct hotspot_method hm;
                enum hotspot_names_reason reason;
                bool match;

                if (hotspot_method_read(vs, mem_read, t, m, &hm, &reason) < 0)
                        continue;
                match = streq(hm.method_name, name);
                hotspot_method_done(&hm);
                if (match)
                        return m;
        }
        return 0;
}

#define BLOBS_KEPT 4096

struct blobs {
        uint64_t nmethod;      /* C2's (level 4) of the method, 0: none yet */
        uint64_t interpreter;  /* the interpreter's blob */
        unsigned n_blobs;
        /* every nmethod and native wrapper seen (the first BLOBS_KEPT) */
        uint64_t nmethods[BLOBS_KEPT], natives[BLOBS_KEPT];
        unsigned n_nmethods, n_natives;
};

/* Every used block of every code heap, from each heap's first block by
 * their lengths (HeapBlock::Header: size_t _length in segments, bool
 * _used), until a block does not read (the heap's uncommitted end). */
static void scan_heaps(struct target *t, const struct hotspot_vmstructs *vs, uint64_t method, struct blobs *ret) {
        ret->nmethod = ret->interpreter = 0;
        ret->n_blobs = ret->n_nmethods = ret->n_natives = 0;
        for (uint32_t h = 0; h < vs->n_heaps; h++)
                for (uint64_t a = vs->heaps[h].low, steps = 0; a < vs->heaps[h].high && steps < (1u << 22); steps++) {
                        uint64_t length = 0, blob = a + vs->heap_block_size;
                        uint8_t used = 0;
                        char name[64];

                        if (mem_read(t, a, &length, 8) < 0 || mem_read(t, a + 8, &used, 1) < 0 || length == 0)
                                break;
                        a += length << vs->log2_segment_size;
                        if (!used)
                                continue;
                        ret->n_blobs++;
                        mem_string(t, mem_u64(t, blob + vs->blob_name), name, sizeof name);
                        if (streq(name, "Interpreter"))
                                ret->interpreter = blob;
                        if (streq(name, "nmethod") && ret->n_nmethods < BLOBS_KEPT)
                                ret->nmethods[ret->n_nmethods++] = blob;
                        if (streq(name, "native nmethod") && ret->n_natives < BLOBS_KEPT)
                                ret->natives[ret->n_natives++] = blob;
                        if (streq(name, "nmethod") && mem_u64(t, blob + vs->nmethod_method) == method) {
                                int32_t level = 0;

                                mem_read(t, blob + vs->nmethod_comp_level, &level, 4);
                                if (level == 4)
                                        ret->nmethod = blob;
                        }
                }
}

/* The naming cache's reader over the child's memory. */
static int cache_open(void *userdata, uint32_t pid, uint64_t start_ns) {
        struct target *t = userdata;

        (void) start_ns;
        return (pid_t) pid == t->pid ? 0 : -ESRCH;
}

static int cache_read(void *userdata, int handle, uint64_t addr, void *buf, size_t size) {
        (void) handle;
        return mem_read(userdata, addr, buf, size);
}

static void cache_close(void *userdata, int handle) {
        (void) userdata;
        (void) handle;
}

static uint64_t now_us(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static void test_method(struct target *t, const struct unwind_runtime_found *found, uint64_t method) {
        unwind_runtime_code *code = NULL;
        struct unwind_runtime_name name;
        unsigned reason = 99;
        size_t bytes = 0;

        uint64_t t0 = now_us(), first, again;

        /* the first read of the build's: its VM-structs tables too */
        CHECK_INT_EQ(hotspot_runtime.code_read(found, 0, mem_read, t, method, &code, &bytes, &reason), 0);
        first = now_us() - t0;
        CHECK_INT_EQ(reason, HOTSPOT_CODE_OK);
        if (!code)
                return;
        CHECK(bytes > 100);
        hotspot_runtime.code_free(code);
        t0 = now_us();
        CHECK_INT_EQ(hotspot_runtime.code_read(found, 0, mem_read, t, method, &code, &bytes, &reason), 0);
        again = now_us() - t0;
        printf("a Method read: %" PRIu64 " us the first time (the JVM's tables read), %" PRIu64 " us after\n", first,
               again);
        if (!code)
                return;
        CHECK_INT_EQ(hotspot_runtime.code_same(found, 0, mem_read, t, method, code), 1);
        /* bci 0, `long sum = 0;` */
        hotspot_runtime.code_name(code, 0, &name, &reason);
        CHECK_STR_EQ(name.function, "demo.app.Inlined.hot");
        CHECK_STR_EQ(name.file, "Inlined.java");
        CHECK_STR_EQ(name.module, "Inlined.java");
        CHECK_INT_EQ(name.line, 11);
        CHECK_INT_EQ(reason, HOTSPOT_CODE_OK);
        CHECK_INT_EQ(name.n_lines, 0);
        CHECK(name.identity == hotspot_method_identity("demo.app.Inlined", "hot", "(I)J"));
        /* past its bytecode: named, no line */
        hotspot_runtime.code_name(code, 0xffff, &name, &reason);
        CHECK_STR_EQ(name.function, "demo.app.Inlined.hot");
        CHECK_INT_EQ(name.line, 0);
        CHECK_INT_EQ(reason, HOTSPOT_CODE_NO_LINE);
        hotspot_runtime.code_free(code);
        /* not a Method there: a reason, no name */
        code = NULL;
        CHECK(hotspot_runtime.code_read(found, 0, mem_read, t, method + 8, &code, &bytes, &reason) < 0);
        CHECK(!code);
        CHECK(reason == HOTSPOT_CODE_READ_METHOD || reason == HOTSPOT_CODE_BAD_METHOD);
}

/* The nmethod at every offset of its first 64 KiB: returns an offset
 * whose chain is square inlined in hot, 0 when none is. */
static uint32_t test_nmethod(struct target *t, const struct unwind_runtime_found *found, uint64_t nmethod) {
        unwind_runtime_code *code = NULL;
        struct unwind_runtime_name name;
        unsigned reason = 99, n_chains = 0, n_alone = 0, n_one = 0;
        uint32_t inlined_at = 0;
        size_t bytes = 0;

        CHECK_INT_EQ(hotspot_code_runtime.code_read(found, 0, mem_read, t, nmethod, &code, &bytes, &reason), 0);
        CHECK_INT_EQ(reason, HOTSPOT_CODE_OK);
        if (!code)
                return 0;
        CHECK_INT_EQ(hotspot_code_runtime.code_same(found, 0, mem_read, t, nmethod, code), 1);
        for (uint32_t off = 0; off < PROFD_RT_FRAME_OFFSET_MAX; off++) {
                hotspot_code_runtime.code_name(code, off, &name, &reason);
                /* the frame is hot's, whatever is inlined at the pc */
                CHECK_STR_EQ(name.function, "demo.app.Inlined.hot");
                CHECK_STR_EQ(name.module, "Inlined.java");
                if (reason == HOTSPOT_CODE_NO_SCOPE || reason == HOTSPOT_CODE_BAD_SCOPE) {
                        CHECK_INT_EQ(name.n_lines, 0);
                        CHECK_INT_EQ(name.line, 0);
                        n_alone++;
                        continue;
                }
                CHECK(name.line >= 11 && name.line <= 15);
                if (name.n_lines == 0) {
                        n_one++;
                        CHECK(name.identity == hotspot_method_identity("demo.app.Inlined", "hot", "(I)J"));
                        continue;
                }
                CHECK_INT_EQ(name.n_lines, 2);
                CHECK_STR_EQ(name.lines[0].function, "demo.app.Inlined.square");
                CHECK_STR_EQ(name.lines[0].file, "Inlined.java");
                CHECK(name.lines[0].line >= 5 && name.lines[0].line <= 7);
                CHECK_STR_EQ(name.lines[1].function, "demo.app.Inlined.hot");
                CHECK_INT_EQ(name.lines[1].line, 13);
                CHECK_INT_EQ(name.line, 13);
                CHECK(name.identity != hotspot_method_identity("demo.app.Inlined", "hot", "(I)J"));
                if (!inlined_at)
                        inlined_at = off;
                n_chains++;
        }
        printf("nmethod 0x%" PRIx64 ": %zu bytes kept; offsets with square inlined in hot %u, hot alone %u, "
               "no scope %u\n", nmethod, bytes, n_chains, n_one, n_alone);
        CHECK(n_chains > 0);
        CHECK(n_one > 0);
        /* the offset saturated: the method alone, counted */
        hotspot_code_runtime.code_name(code, 0xffff, &name, &reason);
        CHECK_STR_EQ(name.function, "demo.app.Inlined.hot");
        CHECK_INT_EQ(reason, HOTSPOT_CODE_FAR_OFFSET);
        hotspot_code_runtime.code_free(code);
        /* not a blob there */
        code = NULL;
        CHECK(hotspot_code_runtime.code_read(found, 0, mem_read, t, nmethod + 8, &code, &bytes, &reason) < 0);
        CHECK(!code);
        CHECK(reason == HOTSPOT_CODE_READ_BLOB || reason == HOTSPOT_CODE_BAD_BLOB);
        return inlined_at;
}


/* Every nmethod of the JVM (the JDK's and the program's, C1's and C2's):
 * read and named at every 4th offset of its first 8 KiB, its debug info
 * decoding everywhere (no bad-scope: a chain the JVM records is given);
 * every native wrapper named after its method, without a scope reason,
 * method handle intrinsics (MethodHandle.linkTo*, a pool of their own)
 * among them. */
static void test_every_nmethod(struct target *t, const struct unwind_runtime_found *found, const struct blobs *b) {
        unsigned read = 0, failed = 0, bad = 0, chains = 0, natives = 0, intrinsics = 0;
        uint64_t read_us = 0;

        for (unsigned i = 0; i < b->n_nmethods + b->n_natives; i++) {
                bool native = i >= b->n_nmethods;
                uint64_t blob = native ? b->natives[i - b->n_nmethods] : b->nmethods[i];
                unwind_runtime_code *code = NULL;
                struct unwind_runtime_name name;
                unsigned reason = 0;
                size_t bytes;
                bool chain = false, bad_here = false;

                uint64_t t0 = now_us();
                int r = hotspot_code_runtime.code_read(found, 0, mem_read, t, blob, &code, &bytes, &reason);

                read_us += now_us() - t0;
                if (r < 0) {
                        /* one being made or freed while read */
                        failed++;
                        fprintf(stderr, "  %s 0x%" PRIx64 ": %s\n", native ? "native" : "nmethod", blob,
                                hotspot_code_reason_name(reason));
                        continue;
                }
                read++;
                for (uint32_t off = 0; off < 0x2000; off += 4) {
                        hotspot_code_runtime.code_name(code, off, &name, &reason);
                        CHECK(name.function && strchr(name.function, '.'));
                        if (native)
                                CHECK(reason == HOTSPOT_CODE_OK || reason == HOTSPOT_CODE_NO_LINE);
                        /* a method handle intrinsic: a pool of its own (hotspot-names) */
                        if (native && off == 0 && strncmp(name.function, "java.lang.invoke.MethodHandle.linkTo", 36) == 0)
                                intrinsics++;
                        bad_here |= reason == HOTSPOT_CODE_BAD_SCOPE;
                        chain |= name.n_lines > 1;
                }
                natives += native;
                bad += bad_here;
                chains += chain;
                if (bad_here)
                        fprintf(stderr, "  bad scope in %s\n", name.function);
                hotspot_code_runtime.code_free(code);
        }
        printf("every nmethod: %u read (%u native wrappers, %u method handle intrinsics), %u not, %u with a chain "
               "somewhere, %u with a bad scope; %.1f us a read through /proc/PID/mem\n", read, natives, intrinsics,
               failed, chains, bad, read + failed ? (double) read_us / (read + failed) : 0.0);
        CHECK(read > 100 && natives > 10 && intrinsics > 0 && chains > 10);
        CHECK(failed * 100 <= read);
        CHECK_INT_EQ(bad, 0);
}

static void test_stub(struct target *t, const struct unwind_runtime_found *found, uint64_t blob) {
        unwind_runtime_code *code = NULL;
        struct unwind_runtime_name name;
        unsigned reason = 99;
        size_t bytes = 0;

        CHECK_INT_EQ(hotspot_code_runtime.code_read(found, 0, mem_read, t, blob, &code, &bytes, &reason), 0);
        if (!code)
                return;
        hotspot_code_runtime.code_name(code, 100, &name, &reason);
        CHECK_STR_EQ(name.function, "[jvm] Interpreter");
        CHECK_STR_EQ(name.module, "[jvm]");
        CHECK_INT_EQ(name.line, 0);
        CHECK_INT_EQ(reason, HOTSPOT_CODE_OK);
        hotspot_code_runtime.code_free(code);
}

/* The daemon's path: the naming cache, told by a code event of runtime
 * HOTSPOT_CODE, names a pseudo-frame of that runtime with its chain; a
 * frame of the interpreted runtime at the same address is another code
 * object (and no Method there). */
static void test_cache(struct target *t, const struct unwind_runtime_found *found, uint64_t nmethod, uint32_t off) {
        const struct unwind_runtime *runtimes[] = {
                [UNWIND_RUNTIME_HOTSPOT] = &hotspot_runtime,
                [UNWIND_RUNTIME_HOTSPOT_CODE] = &hotspot_code_runtime,
        };
        struct runtime_names_reader reader = { .open = cache_open, .read = cache_read, .close = cache_close, .userdata = t };
        struct runtime_names_frame nf;
        runtime_names *c = NULL;
        char build_id[64];

        CHECK_INT_EQ(runtime_names_new(runtimes, ELEMENTSOF(runtimes), &reader, 1 << 24, &c), 0);
        if (!c)
                return;
        CHECK_INT_EQ(runtime_names_learn(c, (uint32_t) t->pid, 1, found, 0, UNWIND_RUNTIME_HOTSPOT_CODE, nmethod), 0);
        runtime_names_begin_drain(c);
        CHECK_INT_EQ(runtime_names_lookup(c, (uint32_t) t->pid, 1, true,
                                          PROFD_RT_FRAME(UNWIND_RUNTIME_HOTSPOT_CODE, nmethod, off), &nf), 0);
        CHECK_INT_EQ(nf.status, RUNTIME_NAMES_NAMED);
        if (nf.status == RUNTIME_NAMES_NAMED) {
                CHECK(nf.runtime == &hotspot_code_runtime);
                CHECK_INT_EQ(nf.name.n_lines, 2);
                CHECK_STR_EQ(nf.name.lines[0].function, "demo.app.Inlined.square");
                CHECK_STR_EQ(runtime_names_build_id(nf.runtime, 0x0123456789abcdefULL, build_id, sizeof build_id),
                             "hotspot-0123456789abcdef");
        }
        CHECK_INT_EQ(runtime_names_lookup(c, (uint32_t) t->pid, 1, true,
                                          PROFD_RT_FRAME(UNWIND_RUNTIME_HOTSPOT, nmethod, 3), &nf), 0);
        CHECK_INT_EQ(nf.status, RUNTIME_NAMES_UNREADABLE);
        CHECK(nf.runtime == &hotspot_runtime);
        /* a Python frame in a JVM: no runtime names it */
        CHECK_INT_EQ(runtime_names_lookup(c, (uint32_t) t->pid, 1, true,
                                          PROFD_RT_FRAME(UNWIND_RUNTIME_PYTHON, nmethod, 3), &nf), 0);
        CHECK_INT_EQ(nf.status, RUNTIME_NAMES_NO_RUNTIME);
        runtime_names_free(c);
}

/* The daemon's whole path for compiled frames: a code event of runtime
 * HOTSPOT_CODE for the nmethod, then a drain of one sample whose stack is
 * the nmethod at the pc with square inlined (innermost) under the nmethod
 * at a pc with no scope, and one of a process no event named. The store
 * then has the first as a native frame with an inline chain (square,
 * inlined, then hot, at their lines; build_id "hotspot-"), the second as
 * hot alone at line 0 with the quality report's hotspot_no_scope, the
 * third "[hotspot]" for want of a runtime; the writer counts each. */
static void test_writer(struct target *t, const struct unwind_runtime_found *found, uint64_t nmethod, uint32_t off) {
        uint64_t start = start_ns_of(t->pid), seq = 0;
        uint64_t ips[2] = { PROFD_RT_FRAME(UNWIND_RUNTIME_HOTSPOT_CODE, nmethod, off),
                            PROFD_RT_FRAME(UNWIND_RUNTIME_HOTSPOT_CODE, nmethod, 0) };
        struct writer_fixture fx;
        struct writer_stats ws;
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        int chains = 0, alone = 0, unnamed = 0;

        CHECK_INT_EQ(writer_fixture_open(&fx, "/tmp/profd-hscode"), 0);
        if (!fx.w) {
                writer_fixture_close(&fx);
                return;
        }
        CHECK_INT_EQ(writer_runtime_code(fx.w, (uint32_t) t->pid, start, 0, UNWIND_RUNTIME_HOTSPOT_CODE, nmethod, found), 0);
        CHECK_INT_EQ(writer_fixture_drain(&fx, t->pid, start, ips, 2, ips[1], &seq), 0);
        writer_get_stats(fx.w, &ws);
        CHECK_INT_EQ(ws.unresolved.hotspot_no_runtime, 1);
        CHECK_INT_EQ(ws.unresolved.hotspot[HOTSPOT_CODE_NO_SCOPE], 1);
        CHECK_INT_EQ(ws.unresolved.python_no_runtime, 0);
        writer_free(fx.w);
        fx.w = NULL;

        CHECK_INT_EQ(sqlite3_open_v2(fx.path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        CHECK_INT_EQ(sqlite3_prepare_v2(db,
                "SELECT m.path, m.build_id, l.address, f.name, l.unresolved, "
                "(SELECT group_concat(g.name || ':' || x.line || ':' || x.inlined, ' ') FROM "
                " (SELECT * FROM location_lines WHERE location_id = l.id ORDER BY depth) x "
                " JOIN functions g ON g.id = x.function_id) "
                "FROM locations l JOIN mappings m ON m.id = l.mapping_id "
                "LEFT JOIN functions f ON f.id = l.function_id "
                "WHERE m.build_id LIKE 'hotspot-%' OR m.path = '[hotspot]'", -1, &st, NULL), SQLITE_OK);
        while (st && sqlite3_step(st) == SQLITE_ROW) {
                const char *module = (const char *) sqlite3_column_text(st, 0);
                const char *build_id = (const char *) sqlite3_column_text(st, 1);
                const char *name = (const char *) sqlite3_column_text(st, 3);
                const char *lines = (const char *) sqlite3_column_text(st, 5);

                printf("  stored %s %s %s+%lld: %s\n", name ?: "(unnamed)", build_id ?: "-", module,
                       (long long) sqlite3_column_int64(st, 2), lines ?: "-");
                if (streq(module, "[hotspot]")) {
                        unnamed++;
                        CHECK(!name);
                        CHECK_INT_EQ(sqlite3_column_int64(st, 4), STORE_UNRESOLVED_HOTSPOT_NO_RUNTIME);
                        continue;
                }
                CHECK_STR_EQ(module, "Inlined.java");
                CHECK_STR_EQ(name, "demo.app.Inlined.hot");
                CHECK(build_id && strlen(build_id) == strlen("hotspot-") + 16 &&
                      strncmp(build_id, "hotspot-", 8) == 0);
                if (sqlite3_column_int64(st, 2) == 13) {
                        chains++;
                        CHECK(sqlite3_column_type(st, 4) == SQLITE_NULL);
                        CHECK(lines && strncmp(lines, "demo.app.Inlined.square:", 24) == 0 &&
                              strstr(lines, ":1 demo.app.Inlined.hot:13:0"));
                } else {
                        alone++;
                        CHECK_INT_EQ(sqlite3_column_int64(st, 2), 0);
                        CHECK_INT_EQ(sqlite3_column_int64(st, 4), STORE_UNRESOLVED_HOTSPOT_NO_SCOPE);
                        CHECK_STR_EQ(lines, "demo.app.Inlined.hot:0:0");
                }
        }
        CHECK_INT_EQ(chains, 1);
        CHECK_INT_EQ(alone, 1);
        CHECK_INT_EQ(unnamed, 1);
        sqlite3_finalize(st);
        sqlite3_close(db);
        writer_fixture_close(&fx);
}

static uint64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
        const char *java = argc > 1 ? argv[1] : "/usr/lib/jvm/java-17-openjdk-amd64/bin/java";
        const char *program = argc > 2 ? argv[2] : "Inlined.java";
        struct target t = { .mem_fd = -1 };
        struct unwind_runtime_found found = { .id = UNWIND_RUNTIME_HOTSPOT };
        struct hotspot_found_names names;
        uint64_t symbols[_HOTSPOT_SYM_MAX], klass = 0, method = 0, start;
        struct hotspot_vmstructs vs = {};
        enum hotspot_vmstructs_reason reason;
        static struct blobs blobs;
        char ready[64] = {}, mem[64];
        int out[2], r, status;

        CHECK(elf_version(EV_CURRENT) != EV_NONE);
        if (access(java, X_OK) < 0) {
                fprintf(stderr, "%s absent: install openjdk-17-jre-headless (./setup.sh test does)\n", java);
                return 1;
        }
        if (pipe2(out, O_CLOEXEC) < 0)
                abort();
        t.pid = fork();
        if (t.pid == 0) {
                dup2(out[1], STDOUT_FILENO);
                /* the JVM's default flags but the heap's size */
                execl(java, java, "-Xmx64m", program, (char *) NULL);
                _exit(127);
        }
        close(out[1]);
        CHECK(read(out[0], ready, sizeof ready - 1) > 0);
        CHECK(strncmp(ready, "ready", 5) == 0);

        snprintf(mem, sizeof mem, "/proc/%d/mem", (int) t.pid);
        t.mem_fd = open(mem, O_RDONLY | O_CLOEXEC);
        CHECK(t.mem_fd >= 0);
        r = find_libjvm(&t, symbols);
        CHECK_INT_EQ(r, 0);
        if (r == 0) {
                r = hotspot_vmstructs_read(symbols, mem_read, &t, &vs, &reason, NULL);
                CHECK_INT_EQ(r, 0);
        }
        if (r == 0) {
                klass = find_class(&t, symbols, &vs, "demo/app/Inlined");
                CHECK(klass != 0);
        }
        if (klass) {
                method = find_method(&t, symbols, &vs, klass, "hot");
                CHECK(method != 0);
        }
        /* the symbols as discovery keeps them, the bias 0: process addresses */
        memcpy(names.symbols, symbols, sizeof(names.symbols));
        memcpy(found.names, &names, sizeof(names));
        if (method) {
                test_method(&t, &found, method);
                /* C2 compiles hot within seconds of a loop like this */
                start = now_ms();
                do {
                        scan_heaps(&t, &vs, method, &blobs);
                        if (!blobs.nmethod)
                                usleep(200 * 1000);
                } while (!blobs.nmethod && now_ms() - start < 40000);
                printf("%u blobs; C2's nmethod of hot 0x%" PRIx64 " after %" PRIu64 " ms; Interpreter 0x%" PRIx64 "\n",
                       blobs.n_blobs, blobs.nmethod, now_ms() - start, blobs.interpreter);
                CHECK(blobs.nmethod != 0);
                CHECK(blobs.interpreter != 0);
        }
        if (blobs.nmethod) {
                uint32_t off = test_nmethod(&t, &found, blobs.nmethod);

                if (off) {
                        test_cache(&t, &found, blobs.nmethod, off);
                        test_writer(&t, &found, blobs.nmethod, off);
                }
        }
        if (blobs.interpreter)
                test_stub(&t, &found, blobs.interpreter);
        if (blobs.nmethod)
                test_every_nmethod(&t, &found, &blobs);

        CHECK_INT_EQ(t.missing, 0);
        kill(t.pid, SIGKILL);
        CHECK(waitpid(t.pid, &status, 0) == t.pid);
        safe_close(t.mem_fd);
        TESTS_DONE();
}
