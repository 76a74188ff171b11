/* The naming cache of runtime pseudo-frames on a fake runtime and fake
 * process memory: a code object read once and reused, another object at
 * the same address noticed, names kept after the process exits, reasons,
 * the byte budget; and the store's naming convention for Python frames. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "macro.h"
#include "python.h"
#include "runtime-names.h"
#include "tests.h"

/* --- a fake runtime: a "code object" is a struct fake_obj in memory --- */

#define MAGIC 0xc0de
#define REASON_NOT_CODE 2

struct fake_obj {
        uint32_t magic;
        uint32_t generation;   /* another object put at the same address has another */
        char name[32];
        uint32_t firstline;
};

struct unwind_runtime_code {
        struct fake_obj obj;
};

/* What an object read holds: a round number for the budget tests. */
static size_t fake_bytes = 1000;

static int fake_code_read(const struct unwind_runtime_found *found, uint64_t bias, unwind_runtime_read_fn read,
                          void *userdata, uint64_t addr, unwind_runtime_code **ret, size_t *ret_bytes,
                          unsigned *ret_reason) {
        struct fake_obj o;

        if (read(userdata, addr, &o, sizeof(o)) < 0) {
                *ret_reason = 1;
                return -EIO;
        }
        if (o.magic != MAGIC) {
                *ret_reason = REASON_NOT_CODE;
                return -EBADMSG;
        }
        *ret = malloc(sizeof(**ret));
        if (!*ret)
                return -ENOMEM;
        (*ret)->obj = o;
        *ret_bytes = fake_bytes;
        return 0;
}

static int fake_code_same(const struct unwind_runtime_found *found, uint64_t bias, unwind_runtime_read_fn read,
                          void *userdata, uint64_t addr, const unwind_runtime_code *code) {
        struct fake_obj o;
        int r = read(userdata, addr, &o, sizeof(o));

        if (r < 0)
                return r;
        return o.magic == code->obj.magic && o.generation == code->obj.generation;
}

static void fake_code_name(const unwind_runtime_code *code, uint32_t offset, struct unwind_runtime_name *ret,
                           unsigned *ret_reason) {
        *ret = (struct unwind_runtime_name) {
                .function = code->obj.name,
                .file = "fake.py",
                .line = offset < 100 ? code->obj.firstline + offset : 0,
                .identity = code->obj.generation,
        };
        *ret_reason = offset < 100 ? 0 : 9;
}

static void fake_code_free(unwind_runtime_code *code) {
        free(code);
}

/* The fake runtime's fields, and its objects in files the files' or not. */
#define FAKE_RUNTIME(shared) {                  \
        .name = "fake",                         \
        .id = UNWIND_RUNTIME_PYTHON,            \
        .code_read = fake_code_read,            \
        .code_same = fake_code_same,            \
        .code_name = fake_code_name,            \
        .code_free = fake_code_free,            \
        .code_in_files_shared = shared,         \
        .reasons_max = 10,                      \
}

static const struct unwind_runtime fake_runtime = FAKE_RUNTIME(false);

/* --- fake processes: one memory each, objects at 0x1000 * k --- */

#define SLOTS 8

struct fake_proc {
        uint32_t pid;
        uint64_t start_ns;
        bool gone;
        struct fake_obj mem[SLOTS];
};

struct fake_host {
        struct fake_proc procs[2];
        unsigned opens, reads, closes;
};

static int host_open(void *userdata, uint32_t pid, uint64_t start_ns) {
        struct fake_host *h = userdata;

        for (int i = 0; i < 2; i++)
                if (h->procs[i].pid == pid && h->procs[i].start_ns == start_ns) {
                        if (h->procs[i].gone)
                                return -ESRCH;
                        h->opens++;
                        return i;
                }
        return -ESRCH;
}

static int host_read(void *userdata, int handle, uint64_t addr, void *buf, size_t size) {
        struct fake_host *h = userdata;
        struct fake_proc *p = &h->procs[handle];
        uint64_t slot = addr / 0x1000;

        h->reads++;
        if (p->gone)
                return -ESRCH;
        /* page k holds object k at its start, zeros after it */
        if (slot >= SLOTS || addr % 0x1000 + size > 0x1000)
                return -EIO;
        memset(buf, 0, size);
        if (addr % 0x1000 < sizeof(p->mem[0]))
                memcpy(buf, (const uint8_t *) &p->mem[slot] + addr % 0x1000,
                       MIN(size, sizeof(p->mem[0]) - addr % 0x1000));
        return 0;
}

static void host_close(void *userdata, int handle) {
        struct fake_host *h = userdata;

        h->closes++;
}

static void host_init(struct fake_host *h) {
        *h = (struct fake_host) {
                .procs = { { .pid = 100, .start_ns = 5000 }, { .pid = 200, .start_ns = 6000 } },
        };
        for (int p = 0; p < 2; p++)
                for (int i = 1; i < SLOTS; i++) {
                        h->procs[p].mem[i] = (struct fake_obj) { .magic = MAGIC, .generation = 1, .firstline = 10 * i };
                        snprintf(h->procs[p].mem[i].name, sizeof(h->procs[p].mem[i].name), "f%d_%d", p, i);
                }
}

static runtime_names *cache_new(struct fake_host *h, uint64_t budget) {
        const struct unwind_runtime *runtimes[] = { [UNWIND_RUNTIME_PYTHON] = &fake_runtime };
        struct runtime_names_reader reader = {
                .open = host_open, .read = host_read, .close = host_close, .userdata = h,
        };
        runtime_names *c = NULL;

        CHECK(runtime_names_new(runtimes, ELEMENTSOF(runtimes), &reader, budget, &c) == 0);
        return c;
}

static const struct unwind_runtime_found found = { .id = UNWIND_RUNTIME_PYTHON };

static uint64_t frame(uint64_t code, uint32_t offset) {
        return PROFD_RT_FRAME(UNWIND_RUNTIME_PYTHON, code, offset);
}

static struct runtime_names_frame lookup(runtime_names *c, uint32_t pid, uint64_t start_ns, bool live, uint64_t ip) {
        struct runtime_names_frame f;

        CHECK(runtime_names_lookup(c, pid, start_ns, live, ip, &f) == 0);
        return f;
}

static bool always_alive(void *userdata, uint32_t pid, uint64_t start_ns) {
        return true;
}

static bool never_alive(void *userdata, uint32_t pid, uint64_t start_ns) {
        return false;
}

/* Drains enough for every process, all gone, to be dropped. */
static void drop_every_process(runtime_names *c) {
        for (unsigned i = 0; i <= RUNTIME_NAMES_KEEP_DRAINS; i++) {
                runtime_names_begin_drain(c);
                runtime_names_end_drain(c, never_alive, NULL);
        }
}

/* An event reads the object once; the first use in each drain re-reads
 * its head only; later uses in the drain read nothing. */
static void test_read_once_then_hit(void) {
        struct fake_host h;
        runtime_names *c;
        struct runtime_names_frame f;
        struct runtime_names_stats st;

        host_init(&h);
        c = cache_new(&h, 1 << 20);
        CHECK(runtime_names_learn(c, 100, 5000, &found, 0, 0, 0x3000) == 0);
        CHECK_INT_EQ(h.reads, 1);
        runtime_names_begin_drain(c);
        f = lookup(c, 100, 5000, true, frame(0x3000, 4));
        CHECK_INT_EQ(f.status, RUNTIME_NAMES_NAMED);
        CHECK_STR_EQ(f.name.function, "f0_3");
        CHECK_STR_EQ(f.name.file, "fake.py");
        CHECK_INT_EQ(f.name.line, 34);
        CHECK(f.runtime == &fake_runtime);
        CHECK_INT_EQ(h.reads, 2);       /* the reuse check */
        f = lookup(c, 100, 5000, true, frame(0x3000, 5));
        CHECK_INT_EQ(f.name.line, 35);
        CHECK_INT_EQ(h.reads, 2);       /* checked once per drain */
        /* an offset the fake has no line for: named, with the reason */
        f = lookup(c, 100, 5000, true, frame(0x3000, 200));
        CHECK_INT_EQ(f.status, RUNTIME_NAMES_NAMED);
        CHECK_INT_EQ(f.name.line, 0);
        CHECK_INT_EQ(f.reason, 9);
        runtime_names_end_drain(c, always_alive, NULL);
        runtime_names_begin_drain(c);
        (void) lookup(c, 100, 5000, true, frame(0x3000, 4));
        CHECK_INT_EQ(h.reads, 3);
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.processes, 1);
        CHECK_INT_EQ(st.codes, 1);
        CHECK_INT_EQ(st.reads, 1);
        CHECK_INT_EQ(st.reused, 0);
        /* a frame of an object no event announced is read when first met */
        f = lookup(c, 100, 5000, true, frame(0x5000, 1));
        CHECK_STR_EQ(f.name.function, "f0_5");
        runtime_names_free(c);
        CHECK_INT_EQ(h.opens, h.closes);
}

/* Another object put at the same address is noticed at its first use in
 * a drain and read in full. */
static void test_reuse_detected(void) {
        struct fake_host h;
        runtime_names *c;
        struct runtime_names_frame f;
        struct runtime_names_stats st;

        host_init(&h);
        c = cache_new(&h, 1 << 20);
        CHECK(runtime_names_learn(c, 100, 5000, &found, 0, 0, 0x2000) == 0);
        runtime_names_begin_drain(c);
        CHECK_STR_EQ(lookup(c, 100, 5000, true, frame(0x2000, 0)).name.function, "f0_2");
        runtime_names_end_drain(c, always_alive, NULL);

        h.procs[0].mem[2].generation = 2;
        snprintf(h.procs[0].mem[2].name, sizeof(h.procs[0].mem[2].name), "other");
        runtime_names_begin_drain(c);
        f = lookup(c, 100, 5000, true, frame(0x2000, 0));
        CHECK_INT_EQ(f.status, RUNTIME_NAMES_NAMED);
        CHECK_STR_EQ(f.name.function, "other");
        CHECK_INT_EQ(f.name.identity, 2);
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.reused, 1);
        CHECK_INT_EQ(st.reads, 2);

        /* freed since, no code object there: the sample was of the one
         * read (a pseudo-frame points at a live code object), its name stays */
        runtime_names_end_drain(c, always_alive, NULL);
        h.procs[0].mem[2].magic = 0;
        runtime_names_begin_drain(c);
        f = lookup(c, 100, 5000, true, frame(0x2000, 0));
        CHECK_INT_EQ(f.status, RUNTIME_NAMES_NAMED);
        CHECK_STR_EQ(f.name.function, "other");
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.reused, 2);
        CHECK_INT_EQ(st.reads, 3);
        runtime_names_free(c);
}

/* A process gone keeps the names read while it lived: neither a read that
 * finds it gone nor the caller saying so changes them. What was never
 * read is "exited". */
static void test_process_gone_keeps_names(void) {
        struct fake_host h;
        runtime_names *c;
        struct runtime_names_frame f;
        unsigned reads;

        host_init(&h);
        c = cache_new(&h, 1 << 20);
        CHECK(runtime_names_learn(c, 100, 5000, &found, 0, 0, 0x1000) == 0);
        CHECK(runtime_names_learn(c, 200, 6000, &found, 0, 0, 0x1000) == 0);
        h.procs[0].gone = true;
        h.procs[1].gone = true;
        memset(h.procs[0].mem, 0, sizeof(h.procs[0].mem));

        /* the caller does not know yet: the check's read finds it gone */
        runtime_names_begin_drain(c);
        f = lookup(c, 100, 5000, true, frame(0x1000, 2));
        CHECK_INT_EQ(f.status, RUNTIME_NAMES_NAMED);
        CHECK_STR_EQ(f.name.function, "f0_1");
        CHECK_INT_EQ(f.name.line, 12);
        /* the caller knows: nothing is read */
        reads = h.reads;
        f = lookup(c, 200, 6000, false, frame(0x1000, 0));
        CHECK_STR_EQ(f.name.function, "f1_1");
        CHECK_INT_EQ(h.reads, reads);
        /* never read before it exited */
        f = lookup(c, 100, 5000, true, frame(0x4000, 0));
        CHECK_INT_EQ(f.status, RUNTIME_NAMES_EXITED);
        CHECK_INT_EQ(h.reads, reads);
        runtime_names_end_drain(c, always_alive, NULL);

        /* names survive later drains, then go with the process */
        for (int i = 1; i < RUNTIME_NAMES_KEEP_DRAINS; i++) {
                runtime_names_begin_drain(c);
                CHECK_STR_EQ(lookup(c, 100, 5000, true, frame(0x1000, 0)).name.function, "f0_1");
                runtime_names_end_drain(c, always_alive, NULL);
        }
        runtime_names_begin_drain(c);
        runtime_names_end_drain(c, always_alive, NULL);
        runtime_names_begin_drain(c);
        f = lookup(c, 100, 5000, true, frame(0x1000, 0));
        CHECK_INT_EQ(f.status, RUNTIME_NAMES_NO_RUNTIME);
        CHECK(f.runtime == NULL);
        runtime_names_free(c);
        CHECK_INT_EQ(h.opens, h.closes);
}

/* alive() saying gone stops the reuse checks; the process is dropped
 * RUNTIME_NAMES_KEEP_DRAINS drains later. */
static void test_gone_by_alive(void) {
        struct fake_host h;
        runtime_names *c;
        struct runtime_names_stats st;
        unsigned reads;

        host_init(&h);
        c = cache_new(&h, 1 << 20);
        CHECK(runtime_names_learn(c, 100, 5000, &found, 0, 0, 0x1000) == 0);
        runtime_names_begin_drain(c);
        runtime_names_end_drain(c, never_alive, NULL);
        reads = h.reads;
        runtime_names_begin_drain(c);
        CHECK_STR_EQ(lookup(c, 100, 5000, true, frame(0x1000, 0)).name.function, "f0_1");
        CHECK_INT_EQ(h.reads, reads);
        runtime_names_end_drain(c, never_alive, NULL);
        for (int i = 2; i < RUNTIME_NAMES_KEEP_DRAINS; i++) {
                runtime_names_begin_drain(c);
                runtime_names_end_drain(c, never_alive, NULL);
        }
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.processes, 1);
        runtime_names_begin_drain(c);
        runtime_names_end_drain(c, never_alive, NULL);
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.processes, 0);
        CHECK_INT_EQ(st.codes, 0);
        CHECK_INT_EQ(st.bytes, 0);
        runtime_names_free(c);
}

/* Reasons: no event for the process, an object that is not code. */
static void test_reasons(void) {
        struct fake_host h;
        runtime_names *c;
        struct runtime_names_frame f;

        host_init(&h);
        c = cache_new(&h, 1 << 20);
        runtime_names_begin_drain(c);
        f = lookup(c, 100, 5000, true, frame(0x1000, 0));
        CHECK_INT_EQ(f.status, RUNTIME_NAMES_NO_RUNTIME);
        CHECK_INT_EQ(h.reads, 0);
        runtime_names_end_drain(c, always_alive, NULL);

        h.procs[0].mem[6].magic = 1;
        CHECK(runtime_names_learn(c, 100, 5000, &found, 0, 0, 0x6000) == 0);
        runtime_names_begin_drain(c);
        f = lookup(c, 100, 5000, true, frame(0x6000, 0));
        CHECK_INT_EQ(f.status, RUNTIME_NAMES_UNREADABLE);
        CHECK_INT_EQ(f.reason, REASON_NOT_CODE);
        /* tried once per drain while the process lives */
        runtime_names_end_drain(c, always_alive, NULL);
        h.procs[0].mem[6].magic = MAGIC;
        runtime_names_begin_drain(c);
        CHECK_STR_EQ(lookup(c, 100, 5000, true, frame(0x6000, 0)).name.function, "f0_6");
        /* an unmapped address */
        f = lookup(c, 100, 5000, true, frame(0x9000, 0));
        CHECK_INT_EQ(f.status, RUNTIME_NAMES_UNREADABLE);
        CHECK_INT_EQ(f.reason, 1);
        /* an exec into another interpreter (another bias): what was read goes */
        CHECK(runtime_names_learn(c, 100, 5000, &found, 0x1000, 0, 0x2000) == 0);
        {
                struct runtime_names_stats st;

                runtime_names_get_stats(c, &st);
                CHECK_INT_EQ(st.codes, 1);
        }
        /* a runtime with no hooks */
        CHECK(runtime_names_learn(c, 100, 5000, &(struct unwind_runtime_found) { .id = UNWIND_RUNTIME_HOTSPOT }, 0, 0,
                                  0x1000) == -EPROTONOSUPPORT);
        runtime_names_free(c);
}

/* Past the budget, the least recently used objects go first; one evicted
 * is read again when met. */
static void test_budget_eviction(void) {
        struct fake_host h;
        runtime_names *c;
        struct runtime_names_stats st;
        uint64_t one, budget;

        host_init(&h);
        c = cache_new(&h, UINT64_MAX);
        CHECK(runtime_names_learn(c, 100, 5000, &found, 0, 0, 0x1000) == 0);
        runtime_names_get_stats(c, &st);
        one = st.bytes;        /* the process and one object */
        CHECK(runtime_names_learn(c, 100, 5000, &found, 0, 0, 0x2000) == 0);
        runtime_names_get_stats(c, &st);
        one = st.bytes - one;  /* one object */
        CHECK(one >= 1000);
        runtime_names_free(c);

        host_init(&h);
        c = cache_new(&h, UINT64_MAX);
        for (uint64_t k = 1; k <= 3; k++)
                CHECK(runtime_names_learn(c, 100, 5000, &found, 0, 0, 0x1000 * k) == 0);
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.codes, 3);
        /* use 1, then 3: 2 is the least recently used */
        runtime_names_begin_drain(c);
        (void) lookup(c, 100, 5000, true, frame(0x1000, 0));
        (void) lookup(c, 100, 5000, true, frame(0x3000, 0));
        budget = st.bytes - one;
        runtime_names_set_budget(c, budget);
        /* no eviction within a drain: its frames hold the names */
        (void) lookup(c, 100, 5000, true, frame(0x4000, 0));
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.codes, 4);
        CHECK_INT_EQ(st.evicted, 0);
        runtime_names_end_drain(c, always_alive, NULL);
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.codes, 2);
        CHECK_INT_EQ(st.evicted, 2);
        CHECK(st.bytes <= budget);
        /* 4 and 3 stay (read no more than their check), 2 is read again */
        runtime_names_begin_drain(c);
        (void) lookup(c, 100, 5000, true, frame(0x4000, 0));
        (void) lookup(c, 100, 5000, true, frame(0x3000, 0));
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.reads, 4);
        CHECK_STR_EQ(lookup(c, 100, 5000, true, frame(0x2000, 0)).name.function, "f0_2");
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.reads, 5);
        runtime_names_free(c);
}

/* A code object read at the event (runtime_names_read, on the loop) and
 * cached later (runtime_names_learn_read, on the writer): a process that
 * exited in between is named all the same; one gone before the read is
 * "exited"; a read replaces what was cached at the address. */
static void test_read_at_event(void) {
        struct fake_host h;
        runtime_names *c;
        struct runtime_names_read rd;
        struct runtime_names_frame f;
        unsigned reads;

        host_init(&h);
        c = cache_new(&h, 1 << 20);
        CHECK_INT_EQ(runtime_names_read(c, NULL, 100, 5000, &found, 0, 0, 0x1000, &rd), 0);
        CHECK(rd.code != NULL && !rd.gone);
        CHECK_INT_EQ(h.opens, 1);
        CHECK_INT_EQ(h.closes, 1);
        h.procs[0].gone = true;
        CHECK_INT_EQ(runtime_names_learn_read(c, 100, 5000, &found, 0, 0, 0x1000, &rd), 0);
        CHECK(rd.code == NULL);
        reads = h.reads;
        runtime_names_begin_drain(c);
        f = lookup(c, 100, 5000, true, frame(0x1000, 1));
        CHECK_INT_EQ(f.status, RUNTIME_NAMES_NAMED);
        CHECK_STR_EQ(f.name.function, "f0_1");
        CHECK_INT_EQ(f.name.line, 11);
        CHECK_INT_EQ(h.reads, reads);  /* the reuse check could not open it: gone */
        /* read after it exited */
        CHECK_INT_EQ(runtime_names_read(c, NULL, 100, 5000, &found, 0, 0, 0x2000, &rd), 0);
        CHECK(rd.code == NULL && rd.gone);
        CHECK_INT_EQ(runtime_names_learn_read(c, 100, 5000, &found, 0, 0, 0x2000, &rd), 0);
        CHECK_INT_EQ(lookup(c, 100, 5000, true, frame(0x2000, 0)).status, RUNTIME_NAMES_EXITED);
        /* and the other process: what is read replaces what was cached */
        CHECK(runtime_names_learn(c, 200, 6000, &found, 0, 0, 0x3000) == 0);
        h.procs[1].mem[3].generation = 7;
        snprintf(h.procs[1].mem[3].name, sizeof(h.procs[1].mem[3].name), "newer");
        CHECK_INT_EQ(runtime_names_read(c, NULL, 200, 6000, &found, 0, 0, 0x3000, &rd), 0);
        CHECK_INT_EQ(runtime_names_learn_read(c, 200, 6000, &found, 0, 0, 0x3000, &rd), 0);
        runtime_names_end_drain(c, always_alive, NULL);
        runtime_names_begin_drain(c);
        CHECK_STR_EQ(lookup(c, 200, 6000, true, frame(0x3000, 0)).name.function, "newer");
        /* a read taken before the cache's own look (a drain between the
         * event and its job) does not replace what that look found */
        h.procs[1].mem[5].generation = 1;
        CHECK_INT_EQ(runtime_names_read(c, NULL, 200, 6000, &found, 0, 0, 0x5000, &rd), 0);
        {
                struct runtime_names_read later;

                h.procs[1].mem[5].generation = 2;
                snprintf(h.procs[1].mem[5].name, sizeof(h.procs[1].mem[5].name), "reused");
                CHECK_INT_EQ(runtime_names_read(c, NULL, 200, 6000, &found, 0, 0, 0x5000, &later), 0);
                CHECK_INT_EQ(runtime_names_learn_read(c, 200, 6000, &found, 0, 0, 0x5000, &later), 0);
        }
        CHECK_INT_EQ(runtime_names_learn_read(c, 200, 6000, &found, 0, 0, 0x5000, &rd), 0);
        CHECK(rd.code == NULL);
        CHECK_STR_EQ(lookup(c, 200, 6000, true, frame(0x5000, 0)).name.function, "reused");
        /* unreadable now: no name is replaced by a failure */
        h.procs[1].mem[3].magic = 0;
        CHECK_INT_EQ(runtime_names_read(c, NULL, 200, 6000, &found, 0, 0, 0x3000, &rd), 0);
        CHECK(rd.code == NULL && !rd.gone && rd.reason == REASON_NOT_CODE);
        CHECK_INT_EQ(runtime_names_learn_read(c, 200, 6000, &found, 0, 0, 0x3000, &rd), 0);
        CHECK_STR_EQ(lookup(c, 200, 6000, true, frame(0x3000, 0)).name.function, "newer");
        /* an address never read that holds no code object: the reason */
        h.procs[1].mem[4].magic = 0;
        CHECK_INT_EQ(runtime_names_read(c, NULL, 200, 6000, &found, 0, 0, 0x4000, &rd), 0);
        CHECK_INT_EQ(runtime_names_learn_read(c, 200, 6000, &found, 0, 0, 0x4000, &rd), 0);
        f = lookup(c, 200, 6000, true, frame(0x4000, 0));
        CHECK_INT_EQ(f.status, RUNTIME_NAMES_UNREADABLE);
        CHECK_INT_EQ(f.reason, REASON_NOT_CODE);
        runtime_names_free(c);
        CHECK_INT_EQ(h.opens, h.closes);
}

/* Reads at events through a session: the process's handle opened once
 * and kept while it lives, the one used longest ago closed to make room,
 * a process found gone closes its own, idle ones closed by their owner;
 * one read a page, not one per field. */
static void test_session_keeps_handles(void) {
        struct fake_host h;
        struct runtime_names_session s;
        struct runtime_names_read rd;
        runtime_names *c;

        host_init(&h);
        c = cache_new(&h, 1 << 20);
        runtime_names_session_init(&s);
        for (uint64_t k = 1; k < SLOTS; k++) {
                CHECK_INT_EQ(runtime_names_read(c, &s, 100, 5000, &found, 0, 0, 0x1000 * k, &rd), 0);
                CHECK(rd.code != NULL && !rd.gone);
                CHECK_INT_EQ(runtime_names_learn_read(c, 100, 5000, &found, 0, 0, 0x1000 * k, &rd), 0);
        }
        CHECK_INT_EQ(h.opens, 1);
        CHECK_INT_EQ(h.closes, 0);
        CHECK_INT_EQ(h.reads, SLOTS - 1);
        CHECK_STR_EQ(lookup(c, 100, 5000, false, frame(0x3000, 0)).name.function, "f0_3");
        CHECK_INT_EQ(runtime_names_read(c, &s, 200, 6000, &found, 0, 0, 0x1000, &rd), 0);
        CHECK_INT_EQ(runtime_names_learn_read(c, 200, 6000, &found, 0, 0, 0x1000, &rd), 0);
        CHECK_INT_EQ(h.opens, 2);
        /* idle closes none used just now; 0 closes all */
        runtime_names_session_close(c, &s, 3600ull * 1000000000);
        CHECK_INT_EQ(h.closes, 0);
        runtime_names_session_close(c, &s, 0);
        CHECK_INT_EQ(h.closes, 2);
        /* gone: the handle held is closed at the read that finds it so */
        CHECK_INT_EQ(runtime_names_read(c, &s, 200, 6000, &found, 0, 0, 0x2000, &rd), 0);
        CHECK_INT_EQ(runtime_names_learn_read(c, 200, 6000, &found, 0, 0, 0x2000, &rd), 0);
        CHECK_INT_EQ(h.opens, 3);
        h.procs[1].gone = true;
        CHECK_INT_EQ(runtime_names_read(c, &s, 200, 6000, &found, 0, 0, 0x3000, &rd), 0);
        CHECK(rd.code == NULL && rd.gone);
        CHECK_INT_EQ(h.closes, 3);
        CHECK_INT_EQ(runtime_names_learn_read(c, 200, 6000, &found, 0, 0, 0x3000, &rd), 0);
        /* more processes than handles: the oldest gives its up */
        h.procs[1].gone = false;
        for (unsigned i = 0; i < RUNTIME_NAMES_SESSION_HANDLES + 1; i++) {
                h.procs[i % 2].start_ns = 7000 + i;
                CHECK_INT_EQ(runtime_names_read(c, &s, h.procs[i % 2].pid, 7000 + i, &found, 0, 0, 0x1000, &rd), 0);
                runtime_names_read_done(&rd);
        }
        CHECK_INT_EQ(h.opens, 3 + RUNTIME_NAMES_SESSION_HANDLES + 1);
        CHECK_INT_EQ(h.closes, 4);
        runtime_names_session_done(c, &s);
        CHECK_INT_EQ(h.opens, h.closes);
        runtime_names_free(c);
}

/* --- objects shared by the processes mapping their file --- */

static const struct unwind_runtime fake_shared_runtime = FAKE_RUNTIME(true);

/* Process 0 maps file (8, 1) at [0x2000, 0x5000) from offset 0x10000,
 * process 1 the same file at [0x4000, 0x7000), and file (8, 2) at
 * [0x1000, 0x2000): an object at 0x2000 of process 0 is the one at
 * 0x4000 of process 1 (offset 0x10000). */
struct files_host {
        struct fake_host h;
        unsigned files_calls;
        int files_error;       /* returned instead of the list when set */
        uint64_t longer;       /* process 1's mapping of (8, 1) this much longer */
};

static int host_files(void *userdata, uint32_t pid, uint64_t start_ns, struct runtime_names_file **ret,
                      size_t *ret_n) {
        struct files_host *fh = userdata;
        struct runtime_names_file *f = calloc(2, sizeof(*f));

        fh->files_calls++;
        if (!f)
                return -ENOMEM;
        if (fh->files_error) {
                free(f);
                return fh->files_error;
        }
        if (pid == 100) {
                f[0] = (struct runtime_names_file) { 0x2000, 0x5000, 0x10000, { 8, 1 } };
                *ret_n = 1;
        } else {
                f[0] = (struct runtime_names_file) { 0x1000, 0x2000, 0, { 8, 2 } };
                f[1] = (struct runtime_names_file) { 0x4000, 0x7000 + fh->longer, 0x10000, { 8, 1 } };
                *ret_n = 2;
        }
        *ret = f;
        return 0;
}

static runtime_names *shared_cache_new(struct files_host *fh, uint64_t budget) {
        const struct unwind_runtime *runtimes[] = { [UNWIND_RUNTIME_PYTHON] = &fake_shared_runtime };
        struct runtime_names_reader reader = {
                .open = host_open, .read = host_read, .close = host_close, .files = host_files, .userdata = fh,
        };
        runtime_names *c = NULL;

        CHECK(runtime_names_new(runtimes, ELEMENTSOF(runtimes), &reader, budget, &c) == 0);
        return c;
}

/* An event's read, learnt at once, and the name of the frame then. */
static const char *read_learn_name(runtime_names *c, struct runtime_names_session *s, uint32_t pid,
                                   uint64_t start_ns, uint64_t code, bool *ret_hit) {
        struct runtime_names_read rd;

        CHECK_INT_EQ(runtime_names_read(c, s, pid, start_ns, &found, 0, 0, code, &rd), 0);
        *ret_hit = rd.shared_hit;
        CHECK(!rd.shared_hit || (rd.shared && !rd.code));
        CHECK_INT_EQ(runtime_names_learn_read(c, pid, start_ns, &found, 0, 0, code, &rd), 0);
        CHECK(rd.shared == NULL);
        return lookup(c, pid, start_ns, true, frame(code, 1)).name.function;
}

/* An object in a file both processes map is read by the first and named
 * for the second without a read, wherever each maps the file; objects
 * outside files, or in another file, are each process's own; a shared
 * object is never checked against reuse, stays while a process holds it
 * and after, until the budget needs the room. */
static void test_shared_by_file(void) {
        struct files_host fh = {};
        struct runtime_names_session s;
        struct runtime_names_stats st;
        runtime_names *c;
        unsigned reads;
        bool hit;

        host_init(&fh.h);
        c = shared_cache_new(&fh, 1 << 20);
        runtime_names_session_init(&s);
        /* process 0 reads 0x2000 (file offset 0x10000) */
        CHECK_STR_EQ(read_learn_name(c, &s, 100, 5000, 0x2000, &hit), "f0_2");
        CHECK(!hit);
        CHECK_INT_EQ(fh.files_calls, 1);
        reads = fh.h.reads;
        /* process 1's 0x4000 is that object: named by process 0's read */
        CHECK_STR_EQ(read_learn_name(c, &s, 200, 6000, 0x4000, &hit), "f0_2");
        CHECK(hit);
        CHECK_INT_EQ(fh.h.reads, reads);
        CHECK_INT_EQ(fh.files_calls, 2);
        /* in a file only process 1 maps, and outside any file: their own */
        CHECK_STR_EQ(read_learn_name(c, &s, 200, 6000, 0x6000 - 0x5000, &hit), "f1_1");
        CHECK(!hit);
        CHECK_STR_EQ(read_learn_name(c, &s, 100, 5000, 0x1000, &hit), "f0_1");
        CHECK(!hit);
        /* read first by process 1 (offset 0x11000), then named for process 0 */
        CHECK_STR_EQ(read_learn_name(c, &s, 200, 6000, 0x5000, &hit), "f1_5");
        CHECK(!hit);
        CHECK_STR_EQ(read_learn_name(c, &s, 100, 5000, 0x3000, &hit), "f1_5");
        CHECK(hit);
        CHECK_INT_EQ(fh.files_calls, 2);       /* once a process while its handle is kept */
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.shared, 3);
        CHECK_INT_EQ(st.shared_hits, 2);
        CHECK_INT_EQ(st.reads, 4);
        CHECK_INT_EQ(st.codes, 6);
        /* a drain's first use checks no shared object */
        reads = fh.h.reads;
        runtime_names_begin_drain(c);
        CHECK_STR_EQ(lookup(c, 200, 6000, true, frame(0x4000, 2)).name.function, "f0_2");
        CHECK_STR_EQ(lookup(c, 100, 5000, true, frame(0x2000, 2)).name.function, "f0_2");
        CHECK_INT_EQ(fh.h.reads, reads);
        (void) lookup(c, 100, 5000, true, frame(0x1000, 2));
        CHECK_INT_EQ(fh.h.reads, reads + 1);   /* an own object is */
        runtime_names_end_drain(c, always_alive, NULL);
        /* both processes gone and dropped: the shared objects stay */
        drop_every_process(c);
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.processes, 0);
        CHECK_INT_EQ(st.codes, 0);
        CHECK_INT_EQ(st.shared, 3);
        CHECK(st.bytes >= 3000);
        /* a new instance of process 1 finds them */
        runtime_names_session_close(c, &s, 0);
        fh.h.procs[1].start_ns = 6001;
        CHECK_STR_EQ(read_learn_name(c, &s, 200, 6001, 0x4000, &hit), "f0_2");
        CHECK(hit);
        /* RUNTIME_NAMES_SHARED_IDLE_NS after no process held them, the idle ones go; the held one stays */
        {
                struct timespec ts;

                clock_gettime(CLOCK_MONOTONIC, &ts);
                runtime_names_shared_expire(c, (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec);
                runtime_names_get_stats(c, &st);
                CHECK_INT_EQ(st.shared, 3);
                runtime_names_shared_expire(c, (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec +
                                                       RUNTIME_NAMES_SHARED_IDLE_NS);
                runtime_names_get_stats(c, &st);
                CHECK_INT_EQ(st.shared, 1);
                CHECK_STR_EQ(lookup(c, 200, 6001, true, frame(0x4000, 2)).name.function, "f0_2");
        }
        /* the budget: the one no process holds goes, the held one stays */
        runtime_names_set_budget(c, 1);
        CHECK_INT_EQ(runtime_names_learn(c, 200, 6001, &found, 0, 0, 0x1000), 0);
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.shared, 0);    /* the held one went with its holder's entry */
        CHECK(st.evicted >= 2);
        runtime_names_session_done(c, &s);
        runtime_names_free(c);
        CHECK_INT_EQ(fh.h.opens, fh.h.closes);
}

/* The same inode mapped otherwise (a number a deleted file freed, taken
 * by another file): not the same objects. */
static void test_shared_other_mapping(void) {
        struct files_host fh = { .longer = 0x1000 };
        struct runtime_names_session s;
        runtime_names *c;
        bool hit;

        host_init(&fh.h);
        c = shared_cache_new(&fh, 1 << 20);
        runtime_names_session_init(&s);
        CHECK_STR_EQ(read_learn_name(c, &s, 100, 5000, 0x2000, &hit), "f0_2");
        CHECK_STR_EQ(read_learn_name(c, &s, 200, 6000, 0x4000, &hit), "f1_4");
        CHECK(!hit);
        runtime_names_session_done(c, &s);
        runtime_names_free(c);
}

/* Shared objects no process holds are kept 1 MiB at most: those let go
 * of longest ago go first, at a drain's end. */
static void test_shared_idle_bytes(void) {
        struct files_host fh = {};
        struct runtime_names_session s;
        struct runtime_names_stats st;
        runtime_names *c;
        bool hit;

        host_init(&fh.h);
        fake_bytes = 600 * 1024;
        c = shared_cache_new(&fh, 1ull << 30);
        runtime_names_session_init(&s);
        CHECK_STR_EQ(read_learn_name(c, &s, 100, 5000, 0x2000, &hit), "f0_2");
        CHECK_STR_EQ(read_learn_name(c, &s, 100, 5000, 0x3000, &hit), "f0_3");
        runtime_names_session_close(c, &s, 0);
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.shared, 2);
        drop_every_process(c);
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.processes, 0);
        CHECK_INT_EQ(st.shared, 1);
        CHECK(st.bytes < 2 * fake_bytes);
        CHECK_INT_EQ(st.evicted, 0);   /* not the budget's doing */
        runtime_names_session_done(c, &s);
        runtime_names_free(c);
        fake_bytes = 1000;
}

/* A process whose mappings cannot be listed: its objects are read as
 * any other's, and one gone by then is gone. */
static void test_shared_files_unreadable(void) {
        struct files_host fh = {};
        struct runtime_names_session s;
        struct runtime_names_read rd;
        runtime_names *c;
        bool hit;

        host_init(&fh.h);
        c = shared_cache_new(&fh, 1 << 20);
        runtime_names_session_init(&s);
        fh.files_error = -EACCES;
        CHECK_STR_EQ(read_learn_name(c, &s, 100, 5000, 0x2000, &hit), "f0_2");
        CHECK(!hit);
        CHECK_STR_EQ(read_learn_name(c, &s, 100, 5000, 0x3000, &hit), "f0_3");
        CHECK_INT_EQ(fh.files_calls, 1);
        fh.files_error = -ESRCH;
        CHECK_INT_EQ(runtime_names_read(c, &s, 200, 6000, &found, 0, 0, 0x4000, &rd), 0);
        CHECK(rd.gone && !rd.code && !rd.shared);
        CHECK_INT_EQ(runtime_names_learn_read(c, 200, 6000, &found, 0, 0, 0x4000, &rd), 0);
        CHECK_INT_EQ(lookup(c, 200, 6000, true, frame(0x4000, 0)).status, RUNTIME_NAMES_EXITED);
        runtime_names_session_done(c, &s);
        runtime_names_free(c);
        CHECK_INT_EQ(fh.h.opens, fh.h.closes);
}

/* How Python frames are stored: build_id "python-" and a hash of
 * (qualname, file, first line) that never changes; a pseudo-frame is
 * looked up as it is, never minus one. */
static void test_naming_convention(void) {
        char buf[32];
        uint64_t id = python_code_identity("Greeter.hello", "/srv/app.py", 12);
        uint64_t ip = PROFD_RT_FRAME(UNWIND_RUNTIME_PYTHON, 0x7f0012345670ULL, 7);

        /* FNV-1a of "Greeter.hello\0/srv/app.py\0" and 12 (4 bytes LE), splitmix64-mixed:
         * worked out apart from profd (in Python) */
        CHECK_STR_EQ(runtime_names_build_id(&python_runtime, id, buf, sizeof(buf)), "python-b335c3c78f466db9");
        CHECK(id != python_code_identity("Greeter.hello", "/srv/app.py", 13));
        CHECK(id != python_code_identity("Greeter.hell", "o/srv/app.py", 12));
        CHECK(id != python_code_identity("Greeter.hello", "/srv/app2.py", 12));
        CHECK_INT_EQ(strlen(buf), 7 + 16);
        CHECK(runtime_names_lookup_ip(ip, false) == ip);
        CHECK(runtime_names_lookup_ip(ip, true) == ip);
        CHECK(runtime_names_lookup_ip(0x401000, false) == 0x400fff);
        CHECK(runtime_names_lookup_ip(0x401000, true) == 0x401000);
}

/* A second fake runtime whose frames go with the first's discovery (as
 * HotSpot's compiled frames with its interpreted ones): its code objects
 * give an inline chain. */
static void fake_chain_name(const unwind_runtime_code *code, uint32_t offset, struct unwind_runtime_name *ret,
                            unsigned *ret_reason) {
        fake_code_name(code, offset, ret, ret_reason);
        ret->lines[0] = (struct unwind_runtime_line) { .function = "callee", .file = "fake.py", .line = 1 };
        ret->lines[1] = (struct unwind_runtime_line) { .function = ret->function, .file = ret->file,
                                                       .line = ret->line };
        ret->n_lines = 2;
}

static const struct unwind_runtime fake_chain_runtime = {
        .name = "fake",
        .id = UNWIND_RUNTIME_HOTSPOT_CODE,
        .found_id = UNWIND_RUNTIME_PYTHON,
        .code_read = fake_code_read,
        .code_same = fake_code_same,
        .code_name = fake_chain_name,
        .code_free = fake_code_free,
        .reasons_max = 10,
};

/* Frames are named by their own runtime's hooks (PROFD_RT_FRAME_ID), one
 * that goes with the process's discovery; the same address in two
 * runtimes is two code objects; a runtime of another discovery's does not
 * name the process's frames. */
static void test_dispatch_by_frame(void) {
        const struct unwind_runtime *runtimes[] = {
                [UNWIND_RUNTIME_PYTHON] = &fake_runtime,
                [UNWIND_RUNTIME_HOTSPOT_CODE] = &fake_chain_runtime,
        };
        struct runtime_names_reader reader = { .open = host_open, .read = host_read, .close = host_close };
        struct runtime_names_stats st;
        struct runtime_names_frame f;
        struct fake_host h;
        runtime_names *c = NULL;

        host_init(&h);
        reader.userdata = &h;
        CHECK(runtime_names_new(runtimes, ELEMENTSOF(runtimes), &reader, 1 << 20, &c) == 0);
        if (!c)
                return;
        /* the event's runtime: the chain runtime's object read */
        CHECK_INT_EQ(runtime_names_learn(c, 100, 5000, &found, 0, UNWIND_RUNTIME_HOTSPOT_CODE, 0x3000), 0);
        runtime_names_begin_drain(c);
        f = lookup(c, 100, 5000, true, PROFD_RT_FRAME(UNWIND_RUNTIME_HOTSPOT_CODE, 0x3000, 4));
        CHECK_INT_EQ(f.status, RUNTIME_NAMES_NAMED);
        CHECK(f.runtime == &fake_chain_runtime);
        CHECK_INT_EQ(f.name.n_lines, 2);
        CHECK_STR_EQ(f.name.lines[0].function, "callee");
        /* the same address as a frame of the first runtime: its own object */
        f = lookup(c, 100, 5000, true, frame(0x3000, 4));
        CHECK_INT_EQ(f.status, RUNTIME_NAMES_NAMED);
        CHECK(f.runtime == &fake_runtime);
        CHECK_INT_EQ(f.name.n_lines, 0);
        runtime_names_get_stats(c, &st);
        CHECK_INT_EQ(st.codes, 2);
        /* a frame of a runtime the cache has no hooks for, or whose
         * discovery is not the process's */
        f = lookup(c, 100, 5000, true, PROFD_RT_FRAME(UNWIND_RUNTIME_HOTSPOT, 0x3000, 4));
        CHECK_INT_EQ(f.status, RUNTIME_NAMES_NO_RUNTIME);
        CHECK(!f.runtime);
        CHECK_INT_EQ(runtime_names_learn(c, 100, 5000, &found, 0, UNWIND_RUNTIME_HOTSPOT, 0x3000), -EPROTONOSUPPORT);
        CHECK_INT_EQ(runtime_names_learn(c, 100, 5000, &(struct unwind_runtime_found) { .id = UNWIND_RUNTIME_HOTSPOT },
                                         0, UNWIND_RUNTIME_HOTSPOT_CODE, 0x3000),
                     -EPROTONOSUPPORT);
        runtime_names_free(c);
}

int main(void) {
        test_read_once_then_hit();
        test_reuse_detected();
        test_process_gone_keeps_names();
        test_gone_by_alive();
        test_reasons();
        test_budget_eviction();
        test_read_at_event();
        test_session_keeps_handles();
        test_naming_convention();
        test_dispatch_by_frame();
        test_shared_by_file();
        test_shared_other_mapping();
        test_shared_idle_bytes();
        test_shared_files_unreadable();
        TESTS_DONE();
}
