/* The names of runtime pseudo-frames (CPython's code objects, HotSpot's
 * methods and compiled code): a cache of the code objects read from
 * processes, by (process instance, address), with a check against reuse,
 * names kept after the process exits, objects in a file mapping that a
 * runtime says are the file's (HotSpot's CDS archive, CPython's deep-frozen
 * code) read once for every process mapping it, and a byte budget. Pure:
 * processes are read through the reader it is given, code objects through
 * the runtime's hooks (runtime.h), so unit tests feed it fakes. The writer
 * owns one and uses it on its thread, and the event loop reads objects at
 * their events through it (runtime_names_read). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "remote-pages.h"
#include "runtime.h"

/* How a process's memory is read. `open` returns a handle (>= 0) for the
 * instance (pid, start_ns), -ESRCH when it is gone, or another negative
 * errno; `read` returns 0 when all `size` bytes at `addr` were read, -ESRCH
 * when the process is gone, another negative errno when that memory could
 * not be read; `close` gives the handle back. */
struct runtime_names_file;
struct runtime_names_reader {
        int (*open)(void *userdata, uint32_t pid, uint64_t start_ns);
        int (*read)(void *userdata, int handle, uint64_t addr, void *buf, size_t size);
        void (*close)(void *userdata, int handle);
        /* Optional (NULL: no object is shared between processes): the
         * private file mappings of instance (pid, start_ns), in address
         * order, into *ret (malloc'd) and *ret_n (the writer's: at most
         * 4096). Returns 0, -ESRCH when it is gone, or another negative
         * errno. */
        int (*files)(void *userdata, uint32_t pid, uint64_t start_ns, struct runtime_names_file **ret,
                     size_t *ret_n);
        void *userdata;
};

/* A file a process maps, where: what tells a runtime's code object in it
 * (runtime.h, code_in_files_shared) by file and offset. */
struct runtime_names_file {
        uint64_t start, end;           /* [start, end) in the process */
        uint64_t offset;               /* the file's offset at start */
        struct file_ident id;
};

/* Code objects read once for every process that maps their file
 * (code_in_files_shared), kept while a process's entry refers to one and
 * after, until the budget needs the room. Opaque. */
typedef struct runtime_names_shared runtime_names_shared;

/* What became of a pseudo-frame's name. */
enum runtime_names_status {
        RUNTIME_NAMES_NAMED,         /* name.function and name.file known (the line may not be) */
        RUNTIME_NAMES_NO_RUNTIME,    /* no event told which runtime the process runs, or it is
                                      * not one whose discovery the frame's runtime goes with */
        RUNTIME_NAMES_EXITED,        /* the process exited before the code object was read */
        RUNTIME_NAMES_UNREADABLE,    /* the code object could not be read: `reason` says why */
};

struct runtime_names_frame {
        enum runtime_names_status status;
        const struct unwind_runtime *runtime;  /* the frame's (PROFD_RT_FRAME_ID); NULL with NO_RUNTIME */
        /* NAMED: strings live until runtime_names_end_drain */
        struct unwind_runtime_name name;
        /* the runtime's reason: UNREADABLE, why; NAMED, why the line is 0
         * (0 when it is not) */
        unsigned reason;
};

struct runtime_names_stats {
        uint64_t processes;       /* remembered (runtime and bias learnt from events) */
        uint64_t codes;           /* code objects cached, read or not */
        uint64_t bytes;           /* what they and the processes hold */
        uint64_t reads;           /* full reads of a code object, since start */
        uint64_t reused;          /* reuse checks that found another object at the address */
        uint64_t evicted;         /* code objects dropped for the budget */
        uint64_t shared;          /* code objects kept for every process mapping their file (in bytes too) */
        uint64_t shared_hits;     /* reads spared: an object another process had read, since start */
};

/* Drains a process is remembered after it was found gone: the writer may
 * be a few drains behind the kernel, and each may hold its samples. */
#define RUNTIME_NAMES_KEEP_DRAINS 4

/* How long, and how many bytes of, the shared objects no process holds
 * are kept for the next process that maps their file: the processes of a
 * burst (a build's scripts, a test suite's JVMs) follow one another within
 * seconds. Kept a minute and up to the budget, they cost a build host
 * 2.8 MiB of median RSS for no CPU it could measure
 * (docs/performance.md). */
#define RUNTIME_NAMES_SHARED_IDLE_NS (10ull * 1000000000ull)
#define RUNTIME_NAMES_SHARED_IDLE_BYTES (1024ull * 1024ull)

typedef struct runtime_names runtime_names;

/* runtimes: indexed by enum unwind_runtime_id, n_runtimes entries (NULL:
 * not named). budget: bytes kept (least recently used evicted first, at
 * the end of a drain and when events are learnt). Returns 0 or -ENOMEM. */
int runtime_names_new(const struct unwind_runtime *const *runtimes, size_t n_runtimes,
                      const struct runtime_names_reader *reader, uint64_t budget, runtime_names **ret);
/* Closes every handle. NULL is fine. */
runtime_names *runtime_names_free(runtime_names *c);
void runtime_names_set_budget(runtime_names *c, uint64_t budget);

/* A code event (PROFD_EVENT_RUNTIME_CODE): process (pid, start_ns) runs
 * the runtime `found` (in a file loaded at `bias`), remembered for its
 * other frames; and the code object at `code`, of runtime `rt_id` (the
 * event's: which of the process's runtimes' frames met it, HotSpot's
 * Method* or CodeBlob*; 0: found->id's), is read now, while the process
 * lives (or checked against reuse if it was read before). A read that
 * fails is kept with its reason and tried again at the next use while the
 * process lives. Returns 0, -EPROTONOSUPPORT for a runtime it has no hooks
 * for (or rt_id not one that goes with found), or -ENOMEM. */
int runtime_names_learn(runtime_names *c, uint32_t pid, uint64_t start_ns, const struct unwind_runtime_found *found,
                        uint64_t bias, unsigned rt_id, uint64_t code);

/* A code object read apart from the cache, at the moment its event comes
 * (on the event loop), so that a process that lives a few hundred
 * milliseconds is read before it exits even while the writer is busy with
 * a drain: runtime_names_learn_read puts it in the cache later. */
struct runtime_names_read {
        const struct unwind_runtime *runtime;
        /* the object named once for every process mapping its file, held
         * (code NULL); or NULL: */
        runtime_names_shared *shared;
        bool shared_hit;               /* shared was known before: nothing read */
        unwind_runtime_code *code;     /* NULL: not read; then: */
        bool gone;                     /* the process was gone */
        unsigned reason;               /* else the runtime's reason */
        size_t bytes;
        uint64_t at_ns;                /* when (CLOCK_MONOTONIC): an older read never replaces a newer look */
};

/* The handles of processes' memory kept between runtime_names_read calls
 * on one thread (the event loop's), with that thread's pages: a JVM meets
 * its methods in bursts, and opening /proc/PID/mem and checking it is the
 * instance cost more system calls than the method's reads. A handle is
 * kept while its process lives and it was used within the idle time the
 * owner closes by (runtime_names_session_close); the one used longest ago
 * makes room for another process's. */
#define RUNTIME_NAMES_SESSION_HANDLES 4

struct runtime_names_held {
        uint32_t pid;
        uint64_t start_ns;
        int handle;            /* the reader's; -1: empty */
        uint64_t used_ns;      /* CLOCK_MONOTONIC */
        /* its file mappings, read at the first object that may be in one
         * (files_read: asked, whether it worked or not); an object shared
         * lies in a file mapped since the JVM started, so a list a second
         * old still finds it */
        struct runtime_names_file *files;
        size_t n_files;
        bool files_read;
};

struct runtime_names_session {
        struct runtime_names_held held[RUNTIME_NAMES_SESSION_HANDLES];
        struct remote_pages pages;
};

void runtime_names_session_init(struct runtime_names_session *s);
/* Closes the handles unused for idle_ns or longer (0: all), through c's reader. */
void runtime_names_session_close(const runtime_names *c, struct runtime_names_session *s, uint64_t idle_ns);
/* Closes every handle and frees the pages. */
void runtime_names_session_done(const runtime_names *c, struct runtime_names_session *s);

/* Reads the code object at `code` of process (pid, start_ns) into *ret,
 * through the cache's reader: with session s (NULL: none), through the
 * handle it holds for the process, or one opened and kept there; without,
 * one opened and closed for this read. Reads go through a few whole pages
 * of the process (remote-pages.h). With a session, an object of a runtime
 * whose code_in_files_shared says so, in a file the process maps, is
 * looked up by (file, offset) first: one another process read is taken
 * (ret->shared, ret->shared_hit) and nothing is read; one read here is
 * kept there for the next (ret->shared). Uses only what runtime_names_new
 * was given, s, and the shared objects under their own lock: safe on
 * another thread than the cache's, as far as the reader is, with a session
 * of that thread's own. Returns 0 (a failed read is a result too: see
 * ret), -EPROTONOSUPPORT for a runtime without hooks, -ENOMEM. */
int runtime_names_read(runtime_names *c, struct runtime_names_session *s, uint32_t pid, uint64_t start_ns,
                       const struct unwind_runtime_found *found, uint64_t bias, unsigned rt_id, uint64_t code,
                       struct runtime_names_read *ret);
/* Frees the object read, or lets go of the shared one (any thread). */
void runtime_names_read_done(struct runtime_names_read *r);

/* runtime_names_learn with the object read by runtime_names_read (its
 * code taken over, freed on failure): an object read replaces what the
 * cache had at that address, unless the cache looked at it since (a drain
 * between the event and this call may have found another object there);
 * a failed read replaces no name.
 * Returns 0, -EPROTONOSUPPORT or -ENOMEM. */
int runtime_names_learn_read(runtime_names *c, uint32_t pid, uint64_t start_ns,
                             const struct unwind_runtime_found *found, uint64_t bias, unsigned rt_id, uint64_t code,
                             struct runtime_names_read *read);

/* A drain starts: the first use of each code object in it checks reuse. */
void runtime_names_begin_drain(runtime_names *c);

/* The name of pseudo-frame `ip` (PROFD_RT_FRAME_IS) of process (pid,
 * start_ns), by the hooks of the frame's runtime (PROFD_RT_FRAME_ID), one
 * that goes with the process's discovery. live: the caller does not know the process to be gone (then
 * the first use in a drain re-reads the object's head, and a different
 * object is read in full: another code object there replaces the name, no
 * code object there (freed since the sample) keeps it; a gone process's
 * names are what was read). A
 * read that finds the process gone marks it gone too. Returns 0 with *ret,
 * or -ENOMEM. */
int runtime_names_lookup(runtime_names *c, uint32_t pid, uint64_t start_ns, bool live, uint64_t ip,
                         struct runtime_names_frame *ret);

/* A drain ends: processes alive() says are gone are marked so, those gone
 * for RUNTIME_NAMES_KEEP_DRAINS drains dropped with their code objects,
 * shared objects no process holds dropped (runtime_names_shared_expire),
 * and the least recently used code objects evicted down to the budget. */
/* Drops the shared objects no process held since RUNTIME_NAMES_SHARED_IDLE_NS
 * before `now` (CLOCK_MONOTONIC ns), and those let go of longest ago past
 * RUNTIME_NAMES_SHARED_IDLE_BYTES: runtime_names_end_drain's, with the clock. */
void runtime_names_shared_expire(runtime_names *c, uint64_t now);

void runtime_names_end_drain(runtime_names *c, bool (*alive)(void *userdata, uint32_t pid, uint64_t start_ns),
                             void *userdata);

void runtime_names_get_stats(const runtime_names *c, struct runtime_names_stats *ret);

/* The address to look user frame `ip` up at: a return address minus
 * one, so it falls inside the call rather than maybe past the function's
 * end; the innermost frame (where the thread was) and a pseudo-frame
 * (PROFD_RT_FRAME_IS: no address at all) as they are. */
static inline uint64_t runtime_names_lookup_ip(uint64_t ip, bool innermost) {
        return innermost || PROFD_RT_FRAME_IS(ip) ? ip : ip - 1;
}

/* The store's build_id of a named frame: "<runtime>-" and the identity's
 * 16 lowercase hex digits ("python-0123456789abcdef"), into buf. */
const char *runtime_names_build_id(const struct unwind_runtime *runtime, uint64_t identity, char *buf, size_t size);
