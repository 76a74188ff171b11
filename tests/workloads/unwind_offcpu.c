/* Ground-truth off-CPU workload for the DWARF unwinder (issue 12): threads
 * block through libc's own blocking calls, each from one named function, for
 * a known time, and the workload prints how long each really was blocked
 * (CLOCK_MONOTONIC around the libc call):
 *   blocked_sleep   nanosleep(BLOCK_MS)
 *   blocked_pipe    read() of a pipe that writer_thread writes BLOCK_MS later
 *   blocked_mutex   pthread_mutex_lock() of a mutex holder_thread keeps BLOCK_MS
 * Output: {"pid":N,"functions":{name: blocked_ns,...},"tids":{name: tid,...}}.
 *
 * Unlike offcpu_truth.c (which makes its system calls inline so a
 * frame-pointer walk sees its functions), the blocking happens inside libc,
 * which has no frame pointers: only an unwinder that reads libc's CFI finds
 * the function that called it. Built twice (tests/workloads/meson.build):
 * -O2 -fomit-frame-pointer and -O2 -fno-omit-frame-pointer. Everything that
 * is not the measured call (the helpers' own waits, the round handshakes)
 * blocks in other functions, so a function's off-CPU time is exactly its
 * measured block.
 * WARMUP_MS (default 0): the main thread first sleeps that long (in
 * warm_up) before the measured threads start, so a profiler that loads a
 * new process's unwind tables is measured once it has them.
 * Usage: unwind_offcpu [ROUNDS [BLOCK_MS [WARMUP_MS]]]  (default 10 rounds of 200 ms) */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "unwind_workload.h"


void blocked_sleep(void);
char blocked_pipe(void);
void blocked_mutex(void);
void writer_wait(void);
void holder_wait(void);
void round_sync(void);
void warm_up(long ms);
void *sleeper_thread(void *arg);
void *reader_thread(void *arg);
void *writer_thread(void *arg);
void *holder_thread(void *arg);
void *contender_thread(void *arg);

enum { F_SLEEP, F_PIPE, F_MUTEX, F_MAX };
static const char *const names[F_MAX] = { "blocked_sleep", "blocked_pipe", "blocked_mutex" };
static uint64_t blocked[F_MAX];
static long tids[F_MAX];

static int rounds = 10;
static long block_ms = 200;
static int pipe_fds[2];
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t round_barrier;

static struct timespec block_time(void) {
        return (struct timespec) { block_ms / 1000, (block_ms % 1000) * 1000000L };
}

NOINLINE void blocked_sleep(void) {
        struct timespec ts = block_time();
        uint64_t t0 = unwind_clock_ns(CLOCK_MONOTONIC);
        nanosleep(&ts, NULL);
        KEEP_FRAME();
        blocked[F_SLEEP] += unwind_clock_ns(CLOCK_MONOTONIC) - t0;
}

NOINLINE char blocked_pipe(void) {
        char c = 0;
        uint64_t t0 = unwind_clock_ns(CLOCK_MONOTONIC);
        if (read(pipe_fds[0], &c, 1) != 1)
                c = 'q';
        KEEP_FRAME();
        blocked[F_PIPE] += unwind_clock_ns(CLOCK_MONOTONIC) - t0;
        return c;
}

NOINLINE void blocked_mutex(void) {
        uint64_t t0 = unwind_clock_ns(CLOCK_MONOTONIC);
        pthread_mutex_lock(&mutex);
        KEEP_FRAME();
        blocked[F_MUTEX] += unwind_clock_ns(CLOCK_MONOTONIC) - t0;
}

/* The helpers' waits, each in a function of its own. */
NOINLINE void writer_wait(void) {
        struct timespec ts = block_time();
        nanosleep(&ts, NULL);
        KEEP_FRAME();
}

NOINLINE void holder_wait(void) {
        struct timespec ts = block_time();
        nanosleep(&ts, NULL);
        KEEP_FRAME();
}

NOINLINE void warm_up(long ms) {
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
        KEEP_FRAME();
}

NOINLINE void round_sync(void) {
        pthread_barrier_wait(&round_barrier);
        KEEP_FRAME();
}

NOINLINE void *sleeper_thread(void *arg) {
        tids[F_SLEEP] = syscall(SYS_gettid);
        for (int i = 0; i < rounds; i++) {
                blocked_sleep();
                KEEP_FRAME();
        }
        return arg;
}

NOINLINE void *reader_thread(void *arg) {
        tids[F_PIPE] = syscall(SYS_gettid);
        for (int i = 0; i < rounds; i++) {
                blocked_pipe();
                KEEP_FRAME();
        }
        return arg;
}

NOINLINE void *writer_thread(void *arg) {
        for (int i = 0; i < rounds; i++) {
                writer_wait();
                if (write(pipe_fds[1], "x", 1) != 1)
                        abort();
        }
        return arg;
}

/* Each round: both meet at the barrier; the holder takes the mutex; both
 * meet again (the contender now knows it is held); the contender blocks on
 * it while the holder sleeps BLOCK_MS, then releases it. */
NOINLINE void *holder_thread(void *arg) {
        for (int i = 0; i < rounds; i++) {
                round_sync();
                pthread_mutex_lock(&mutex);
                round_sync();
                holder_wait();
                pthread_mutex_unlock(&mutex);
        }
        return arg;
}

NOINLINE void *contender_thread(void *arg) {
        tids[F_MUTEX] = syscall(SYS_gettid);
        for (int i = 0; i < rounds; i++) {
                round_sync();
                round_sync();
                blocked_mutex();
                pthread_mutex_unlock(&mutex);
        }
        return arg;
}

int main(int argc, char *argv[]) {
        void *(*mains[])(void *) = { sleeper_thread, reader_thread, writer_thread, holder_thread, contender_thread };
        pthread_t threads[5];
        long warmup_ms = 0;
        char *end;

        if (argc > 4 || (argc >= 2 && (rounds = (int) strtol(argv[1], &end, 10), *end != '\0' || rounds <= 0)) ||
            (argc >= 3 && (block_ms = strtol(argv[2], &end, 10), *end != '\0' || block_ms <= 0)) ||
            (argc == 4 && (warmup_ms = strtol(argv[3], &end, 10), *end != '\0' || warmup_ms < 0))) {
                fprintf(stderr, "Usage: %s [ROUNDS [BLOCK_MS [WARMUP_MS]]]\n", argv[0]);
                return 2;
        }
        if (warmup_ms > 0)
                warm_up(warmup_ms);
        if (pipe(pipe_fds) < 0 || pthread_barrier_init(&round_barrier, NULL, 2) != 0) {
                perror("setup");
                return 1;
        }
        for (int i = 0; i < 5; i++)
                if (pthread_create(&threads[i], NULL, mains[i], NULL) != 0) {
                        fprintf(stderr, "pthread_create failed\n");
                        return 1;
                }
        for (int i = 0; i < 5; i++)
                pthread_join(threads[i], NULL);

        printf("{\"pid\":%d,\"functions\":{", (int) getpid());
        for (int i = 0; i < F_MAX; i++)
                printf("%s\"%s\":%" PRIu64, i ? "," : "", names[i], blocked[i]);
        printf("},\"tids\":{");
        for (int i = 0; i < F_MAX; i++)
                printf("%s\"%s\":%ld", i ? "," : "", names[i], tids[i]);
        printf("}}\n");
        unwind_workload_hold();
        return 0;
}
