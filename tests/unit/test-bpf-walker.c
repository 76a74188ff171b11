/* Unit test of the BPF walker, without root: bpf/unwind.bpf.h and the
 * headers under it compiled in user space against a shim (bpf-shim/, first
 * on the include path: map definitions stay plain variables, and the
 * helpers are defined in bpf-shim/shim.c over arrays and a small hash, user
 * reads over a recorded stack, bpf_loop a loop, one CPU). The stacks are recorded from a
 * fixture (tests/data/unwind/stopped.c, with and without frame pointers)
 * stopped at a known call chain: its registers by ptrace, its stack and
 * mappings from /proc. The tables come from the daemon's table builder,
 * laid out in unwind_rows, unwind_maps and unwind_procs as the daemon's
 * unwinder writes them. Asserted: the known frames, symbolized, down to
 * main and _start; the same frames from each walker's caches (the
 * sampler's, the blocked thread's, the waker's: each its own), cold, warm,
 * and filled by another stack; after
 * the process's entry changed (a new version with other rules, a table in
 * a new slice and the old one overwritten, another process instance), no
 * stale cache entry used; the node cache across generations; a runtime in
 * the entry (bpf/runtime.bpf.h) changes none of the native frames.
 *
 * Usage: test-bpf-walker FIXTURE_NOFP FIXTURE_FP (WALKER_VERBOSE=1: print
 * the frames of each stack) */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../bpf/unwind.bpf.h"
#include "procmaps.h"
#include "recording.h"
#include "shim.h"
#include "tests.h"
#include "unwind-table.h"

/* --- stacks recorded from the fixture -------------------------------------- */


static const char *const chain_raise[] = { "inner", "middle", "outer", "main", NULL };
static const char *const chain_spin[] = { "spin_leaf", "inner", "middle", "outer", "main", NULL };


static bool stopped_in(const struct recording *r, const char *function) {
        return strcmp(symbolize(r, r->regs.ip), function) == 0;
}

/* The child's exit: 77 if it could not be traced, else -ECHILD. */
static int child_exited(struct recording *r, int status) {
        r->pid = 0; /* reaped */
        return WIFEXITED(status) && WEXITSTATUS(status) == 77 ? 77 : -ECHILD;
}

/* Waits for the child to stop and takes its registers: 0, -EAGAIN when
 * it was not yet where the recording wants it (then it runs on), 77 if
 * it could not be traced, or a negative errno. */
static int record_regs(struct recording *r) {
        struct user_regs_struct regs;
        int status;

        if (waitpid(r->pid, &status, 0) != r->pid)
                return -ECHILD;
        if (!WIFSTOPPED(status))
                return child_exited(r, status);
        if (ptrace(PTRACE_GETREGS, r->pid, NULL, &regs) < 0)
                return -errno;
        r->regs = (struct pt_regs) { .ip = regs.rip, .sp = regs.rsp, .bp = regs.rbp };
        if (!r->dwfl) {
                r->dwfl = dwfl_begin(&recording_dwfl_callbacks);
                if (!r->dwfl || dwfl_linux_proc_report(r->dwfl, r->pid) != 0 ||
                    dwfl_report_end(r->dwfl, NULL, NULL) != 0)
                        return -EIO;
        }
        if (r->from_leaf && !stopped_in(r, r->chain[0])) {
                ptrace(PTRACE_CONT, r->pid, NULL, NULL);
                return -EAGAIN;
        }
        return 0;
}

/* Runs the fixture until it stops where the recording wants it, and
 * records it. The child stays stopped (its mappings are symbolized
 * through it) until recording_done. Returns 0, 77 if it may not be
 * traced here, or a negative errno. */
static int record(struct recording *r, const char *fixture, bool spin) {
        int out[2], tries = 0, status, k = 0;
        char ready[8];

        r->from_leaf = spin;
        r->chain = spin ? chain_spin : chain_raise;
        if (pipe(out) < 0)
                return -errno;
        r->pid = fork();
        if (r->pid < 0)
                return -errno;
        if (r->pid == 0) {
                dup2(out[1], STDOUT_FILENO);
                execl(fixture, fixture, spin ? "spin" : "raise", (char *) NULL);
                _exit(127);
        }
        close(out[1]);
        if (spin && read(out[0], ready, sizeof(ready)) <= 0)
                k = waitpid(r->pid, &status, 0) == r->pid ? child_exited(r, status) : -ECHILD;
        close(out[0]);
        do {
                if (k != 0 && k != -EAGAIN)
                        return k;
                if (spin) {
                        nanosleep(&(struct timespec) { .tv_nsec = 20 * 1000 * 1000 }, NULL);
                        kill(r->pid, SIGSTOP);
                }
                k = record_regs(r);
        } while (k != 0 && ++tries < 200);
        if (k != 0)
                return k;
        r->start = 1000000 + (uint64_t) r->pid;
        return record_memory(r);
}


/* --- walks -------------------------------------------------------------------- */

static size_t table_lookups(void) {
        return shim_map_of(&unwind_rows)->lookups + shim_map_of(&unwind_maps)->lookups;
}

/* Walks the recorded stack from slot (each walker has its caches: enum
 * walk_cache), as the process instance start. */
static struct profd_frames walk_as(const struct recording *r, __u32 slot, uint64_t start) {
        struct task_struct task = { .pid = r->pid, .tgid = r->pid, .start_boottime = start };
        struct profd_frames *f = scratch_get(slot);
        bool announced;

        task.group_leader = &task;
        shim_regs = r->regs;
        shim_mem.base = r->stack_base;
        shim_mem.bytes = r->stack;
        shim_mem.len = r->stack_len;
        CHECK(f && user_stack_unwind(&task, f, slot, &announced));
        return *f;
}

static struct profd_frames walk(const struct recording *r, __u32 slot) {
        return walk_as(r, slot, r->start);
}

/* The walk with every cache empty: each rule from the tables. */
static struct profd_frames walk_cold(const struct recording *r, __u32 slot) {
        shim_map_clear(&row_cache);
        return walk(r, slot);
}

/* Empties every walker's walk memo, not its row and leaf caches. */
static void memo_clear(void) {
        for (__u32 k = 0; k < WALK_CACHE__MAX; k++) {
                struct row_cache *c = bpf_map_lookup_elem(&row_cache, &k);

                CHECK(c != NULL);
                if (c)
                        memset(&c->memo, 0, sizeof(c->memo));
        }
}

/* The slots of the walkers, each with caches of its own. */
static const __u32 walkers[] = { SCRATCH_SWITCH_USER, SCRATCH_WAKER_USER, SCRATCH_ONCPU_USER };
#define N_WALKERS (sizeof(walkers) / sizeof(walkers[0]))

static bool same_frames(const struct profd_frames *a, const struct profd_frames *b) {
        return a->n == b->n && a->end == b->end && memcmp(a->ips, b->ips, a->n * sizeof(a->ips[0])) == 0;
}

static void print_frames(const struct recording *r, const char *title, const struct profd_frames *f) {
        fprintf(stderr, "%s, %s: %u frames, end %u\n", r->what, title, f->n, f->end);
        for (__u32 i = 0; i < f->n && i < PROFD_MAX_FRAMES; i++)
                fprintf(stderr, "  #%u %#" PRIx64 " %s\n", i, (uint64_t) f->ips[i],
                        symbolize(r, i ? f->ips[i] - 1 : f->ips[i]));
}

/* The walk found the known chain, then main's callers down to _start,
 * and ended there complete. */
static bool known_frames(const struct recording *r, const struct profd_frames *f) {
        __u32 i = 0, k;

        if (f->end != PROFD_END_COMPLETE || f->n < 2)
                return false;
        if (!r->from_leaf)
                while (i < f->n && strcmp(symbolize(r, f->ips[i] - (i ? 1 : 0)), r->chain[0]) != 0)
                        i++;
        for (k = 0; r->chain[k]; k++, i++)
                if (i >= f->n || strcmp(symbolize(r, f->ips[i] - (i ? 1 : 0)), r->chain[k]) != 0)
                        return false;
        return strcmp(symbolize(r, f->ips[f->n - 1] - 1), "_start") == 0;
}

#define CHECK_SAME(r, a, b)                                \
        do {                                               \
                if (!same_frames(a, b)) {                  \
                        print_frames(r, #a, a);            \
                        print_frames(r, #b, b);            \
                }                                          \
                CHECK(same_frames(a, b));                  \
        } while (0)

/* The frames, for each walker: with its caches cold, warm (every rule
 * from them: no lookup in the tables), and after another stack filled
 * them, and from the row and leaf caches without the memo; and a
 * walker's caches are its own (another walker's walk after
 * it finds its caches cold and looks its rules up). */
static void test_frames(struct recording *r, struct recording *other) {
        struct profd_frames cold, on, again;
        size_t lookups;

        publish(r, PUBLISH_TABLES);
        cold = walk_cold(r, SCRATCH_SWITCH_USER);
        if (!known_frames(r, &cold) || getenv("WALKER_VERBOSE"))
                print_frames(r, "caches cold", &cold);
        CHECK(known_frames(r, &cold));

        for (size_t w = 0; w < N_WALKERS; w++) {
                on = walk_cold(r, walkers[w]);
                CHECK_SAME(r, &on, &cold);
                lookups = table_lookups();
                on = walk(r, walkers[w]);
                CHECK_SAME(r, &on, &cold);
                CHECK_INT_EQ(table_lookups() - lookups, 0);
                /* the same from the row and leaf caches alone */
                memo_clear();
                on = walk(r, walkers[w]);
                CHECK_SAME(r, &on, &cold);
                CHECK_INT_EQ(table_lookups() - lookups, 0);
                for (size_t v = 0; v < N_WALKERS; v++) {
                        if (v == w)
                                continue;
                        lookups = table_lookups();
                        again = walk(r, walkers[v]);
                        CHECK_SAME(r, &again, &cold);
                        CHECK(table_lookups() > lookups);
                }
        }

        publish(other, PUBLISH_TABLES);
        for (size_t w = 0; w < N_WALKERS; w++) {
                again = walk(other, walkers[w]);
                CHECK(known_frames(other, &again));
                on = walk(r, walkers[w]);
                CHECK_SAME(r, &on, &cold);
        }
}

static uint64_t counter_value(enum profd_counter k) {
        __u32 zero = 0;
        struct profd_counters *c = bpf_map_lookup_elem(&counters, &zero);

        return c ? c->v[k] : 0;
}

/* A native process's stacks are the same, byte for byte, with the runtime
 * walk in the walker: with a runtime in its entry whose loop none of its
 * frames is in, and with one whose loop holds a frame of the chain but
 * whose thread state cannot be read (counted; the frame kept native). */
static void test_runtime_keeps_native(struct recording *r) {
        struct profd_runtime rt = { .id = PROFD_RUNTIME_PYTHON, .version = 0x030b0000 };
        struct profd_frames off, on;
        uint64_t walks, faults;
        uint32_t idx = 0;
        size_t k;

        r->rt = (struct profd_unwind_proc) {};
        publish(r, PUBLISH_TABLES);
        off = walk_cold(r, SCRATCH_SWITCH_USER);
        /* the loop elsewhere */
        rt.python.tss_key = 0x1000; /* no such memory */
        CHECK(bpf_map_update_elem(&unwind_runtimes, &idx, &rt, BPF_ANY) == 0);
        r->rt = (struct profd_unwind_proc) { .rt_lo = 0x1000, .rt_hi = 0x2000, .rt_slot = 1 };
        walks = counter_value(PROFD_CNT_RT_WALKS);
        publish(r, PUBLISH_TABLES);
        on = walk(r, SCRATCH_SWITCH_USER);
        CHECK_SAME(r, &on, &off);
        on = walk(r, SCRATCH_ONCPU_USER);
        CHECK_SAME(r, &on, &off);
        CHECK_INT_EQ(counter_value(PROFD_CNT_RT_WALKS), walks);
        /* the loop around a frame of the chain (a return address: the call
         * before it), its thread state unreadable */
        for (k = 1; k < off.n && strcmp(symbolize(r, off.ips[k] - 1), "middle") != 0; k++)
                ;
        CHECK(k < off.n);
        r->rt = (struct profd_unwind_proc) { .rt_lo = off.ips[k] - 1, .rt_hi = off.ips[k], .rt_slot = 1 };
        faults = counter_value(PROFD_RT_READ_FAULT);
        publish(r, PUBLISH_TABLES);
        on = walk(r, SCRATCH_SWITCH_USER);
        CHECK_SAME(r, &on, &off);
        on = walk(r, SCRATCH_ONCPU_USER);
        CHECK_SAME(r, &on, &off);
        CHECK_INT_EQ(counter_value(PROFD_CNT_RT_WALKS), walks + 2);
        CHECK_INT_EQ(counter_value(PROFD_RT_READ_FAULT), faults + 2);
        r->rt = (struct profd_unwind_proc) {};
        publish(r, PUBLISH_TABLES);
}

/* The leaf cache set of a version (the same in every walker's caches). */
static struct leaf_cache_set *leaf_set_of(uint64_t version) {
        struct ustack_state s = { .version = version, .cache = WALK_CACHE_ONCPU };

        return leaf_cache_set(&s);
}

/* A new entry for the process: every walker's walks follow it, whatever
 * its caches hold from the one before. The new version is one whose leaf
 * cache set and walk memo slot are those of the old one, so that an entry
 * of the old version is there to be (wrongly) found. */
static void test_versions(struct recording *r) {
        struct profd_frames tables, fp[N_WALKERS], fp_cold, moved, none, other_start;
        uint32_t tgid = (uint32_t) r->pid;
        uint64_t v1, v2;
        int tries = 0;

        v1 = publish(r, PUBLISH_TABLES);
        tables = walk_cold(r, SCRATCH_SWITCH_USER);
        for (size_t w = 0; w < N_WALKERS; w++) {
                /* the caches hold the tables' rules */
                (void) walk(r, walkers[w]);
                (void) walk(r, walkers[w]);
        }

        /* other rules for the fixture's code */
        do
                v2 = publish(r, PUBLISH_FIXTURE_FP);
        while (leaf_set_of(v2) != leaf_set_of(v1) && ++tries < 256);
        CHECK(leaf_set_of(v2) == leaf_set_of(v1));
        for (size_t w = 0; w < N_WALKERS; w++)
                fp[w] = walk(r, walkers[w]);
        fp_cold = walk_cold(r, SCRATCH_SWITCH_USER);
        for (size_t w = 0; w < N_WALKERS; w++)
                CHECK_SAME(r, &fp[w], &fp_cold);
        if (!r->fp)
                CHECK(!same_frames(&fp_cold, &tables)); /* the test sees a change */

        /* the tables again, in new slices, the old ones scribbled over */
        for (size_t w = 0; w < N_WALKERS; w++)
                (void) walk(r, walkers[w]);
        scribble_published();
        publish(r, PUBLISH_MOVED);
        for (size_t w = 0; w < N_WALKERS; w++) {
                moved = walk(r, walkers[w]);
                CHECK_SAME(r, &moved, &tables);
        }

        /* another instance of the pid: the entry is not its own */
        other_start = walk_as(r, SCRATCH_ONCPU_USER, r->start + 1);
        CHECK(bpf_map_delete_elem(&unwind_procs, &tgid) == 0);
        __sync_fetch_and_add(&unwind_epoch, 1);
        none = walk(r, SCRATCH_ONCPU_USER);
        CHECK_SAME(r, &other_start, &none);
        CHECK(none.end == PROFD_END_COMPLETE || none.end == PROFD_END_NO_PROCESS);
        publish(r, PUBLISH_TABLES);
}

/* The stack as the maps of the generation gen hold it under id. */
static bool stored_frames(__u32 gen, __u64 id, struct profd_frames *ret) {
        ret->n = 0;
        ret->end = 0;
        for (int depth = 0; id != PROFD_NODE_ROOT && depth < 8; depth++) {
                void *maps[3][2] = { { &frames8_0, &frames8_1 }, { &frames16_0, &frames16_1 },
                                     { &frames32_0, &frames32_1 } };
                const struct profd_node32 *nd;

                if (PROFD_ID_CLASS(id) >= 3)
                        return false;
                nd = bpf_map_lookup_elem(maps[PROFD_ID_CLASS(id)][GEN_MAPS(gen)], &id);
                if (!nd || ret->n + nd->h.n > PROFD_MAX_FRAMES)
                        return false;
                if (ret->n == 0)
                        ret->end = nd->h.end;
                memcpy(&ret->ips[ret->n], nd->ips, nd->h.n * sizeof(nd->ips[0]));
                ret->n += nd->h.n;
                id = nd->h.parent;
        }
        return id == PROFD_NODE_ROOT;
}

static size_t frames_updates(void) {
        size_t n = 0;

        for (size_t i = 0; i < n_shim_maps; i++)
                if (shim_maps[i].value_size == sizeof(struct profd_node8) ||
                    shim_maps[i].value_size == sizeof(struct profd_node16) ||
                    shim_maps[i].value_size == sizeof(struct profd_node32))
                        n += shim_maps[i].updates;
        return n;
}

static void clear_frames_maps(void) {
        void *maps[] = { &frames8_0, &frames8_1, &frames16_0, &frames16_1, &frames32_0, &frames32_1 };

        for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
                shim_map_clear(maps[i]);
}

/* frames_store and its node cache: a stack stored again in the same
 * generation is found in the cache (no update), and stored again in a
 * later generation whose maps the drain emptied, never taken from the
 * cache of the one before. */
static void test_node_cache(const struct recording *r) {
        struct profd_frames f = walk(r, SCRATCH_SWITCH_USER), got;
        __u64 id, id2;
        size_t updates;

        clear_frames_maps();
        id = frames_store(0, &f, SCRATCH_ONCPU_USER, 0);
        CHECK(id != PROFD_STACK_LOST && id != PROFD_STACK_NONE);
        CHECK(stored_frames(0, id, &got));
        CHECK_SAME(r, &got, &f);

        updates = frames_updates();
        id2 = frames_store(0, &f, SCRATCH_ONCPU_USER, 0);
        CHECK(id2 == id);
        CHECK_INT_EQ(frames_updates() - updates, 0);

        clear_frames_maps(); /* the drain of generation 0 */
        id2 = frames_store(2, &f, SCRATCH_ONCPU_USER, 0);
        CHECK(id2 == id);
        CHECK(frames_updates() > updates);
        CHECK(stored_frames(2, id2, &got));
        CHECK_SAME(r, &got, &f);

        id2 = frames_store(3, &f, SCRATCH_ONCPU_USER, 0);
        CHECK(stored_frames(3, id2, &got));
        CHECK_SAME(r, &got, &f);
}

int main(int argc, char *argv[]) {
        struct recording rec[4] = {
                { .what = "nofp raise" }, { .what = "nofp spin" },
                { .what = "fp raise", .fp = true }, { .what = "fp spin", .fp = true },
        };
        int r = 0;

        if (argc != 3) {
                fprintf(stderr, "Usage: %s FIXTURE_NOFP FIXTURE_FP\n", argv[0]);
                return 2;
        }
        /* names from the files' own symbol tables: never a download */
        unsetenv("DEBUGINFOD_URLS");
        elf_version(EV_CURRENT);
        shim_init();
        for (size_t i = 0; i < 4 && r == 0; i++) {
                r = record(&rec[i], argv[1 + rec[i].fp], i % 2 == 1);
                if (r < 0)
                        fprintf(stderr, "Recording %s failed: %s\n", rec[i].what, strerror(-r));
        }
        if (r == 77)
                fprintf(stderr, "The fixture may not be traced here: skipped.\n");
        for (size_t i = 0; i < 4 && r == 0; i++) {
                test_frames(&rec[i], &rec[(i + 1) % 4]);
                test_runtime_keeps_native(&rec[i]);
                test_versions(&rec[i]);
                test_node_cache(&rec[i]);
        }
        for (size_t i = 0; i < 4; i++)
                recording_done(&rec[i]);
        if (r == 77)
                return 77;
        CHECK(r == 0);
        TESTS_DONE();
}
