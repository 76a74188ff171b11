/* Ground-truth off-CPU workload: threads block in distinct named functions and
 * measure how long each really was blocked (CLOCK_MONOTONIC around the
 * blocking call):
 *   block_nanosleep   sleeps 20 ms at a time
 *   block_pipe_read   reads a pipe that feed_pipe_writer writes every 15 ms
 *   block_mutex_lock  waits for a futex mutex that hold_mutex keeps 10 ms
 * Prints {"pid":N,"functions":{name: blocked_ns,...},"tids":{name: tid,...},
 * "run_delay":{"block_pipe_read": ns}}: the reader's time on a run queue.
 *
 * The system calls are issued inline, inside the named functions, and the
 * mutex is the workload's own: libc's wrappers have no frame pointers, and a
 * frame-pointer walk from inside one skips its caller, which would hide the
 * very function under test (a limit of frame-pointer unwinding, not of the
 * measurement). */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>

#define NOINLINE __attribute__((noinline))
#define INLINE static inline __attribute__((always_inline))

INLINE long raw_syscall4(long n, long a, long b, long c, long d) {
#if defined(__x86_64__)
        long ret;
        register long r10 __asm__("r10") = d;
        __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
        return ret;
#elif defined(__aarch64__)
        register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b, x2 __asm__("x2") = c,
                                         x3 __asm__("x3") = d;
        __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
        return x0;
#else
#error "offcpu_truth needs an inline system call for this architecture"
#endif
}

INLINE void raw_sleep_ms(long ms) {
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
        while (raw_syscall4(SYS_nanosleep, (long) &ts, (long) &ts, 0, 0) == -4 /* EINTR */)
                ;
}

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static atomic_bool stop;
static int pipe_fds[2];
static atomic_int mutex_word; /* 0 free, 1 locked, 2 locked with waiters */

enum { F_SLEEP, F_PIPE, F_MUTEX, F_MAX };
static const char *const names[F_MAX] = { "block_nanosleep", "block_pipe_read", "block_mutex_lock" };
static uint64_t blocked[F_MAX];
static long tids[F_MAX];
static uint64_t run_delay[F_MAX];

/* The calling thread's time waiting on a run queue so far, in ns (the
 * second field of /proc/thread-self/schedstat; 0 if unreadable). */
static uint64_t own_run_delay(void) {
        unsigned long long on_cpu = 0, waiting = 0;
        FILE *f = fopen("/proc/thread-self/schedstat", "re");

        if (f) {
                if (fscanf(f, "%llu %llu", &on_cpu, &waiting) != 2)
                        waiting = 0;
                fclose(f);
        }
        return waiting;
}

/* Drepper's futex mutex ("Futexes Are Tricky", mutex 2), inlined into its
 * callers so the futex wait is their own instruction. */
INLINE void fmutex_lock(atomic_int *m) {
        int c = 0;
        if (atomic_compare_exchange_strong(m, &c, 1))
                return;
        if (c != 2)
                c = atomic_exchange(m, 2);
        while (c != 0) {
                raw_syscall4(SYS_futex, (long) m, FUTEX_WAIT_PRIVATE, 2, 0);
                c = atomic_exchange(m, 2);
        }
}

INLINE void fmutex_unlock(atomic_int *m) {
        if (atomic_fetch_sub(m, 1) != 1) {
                atomic_store(m, 0);
                raw_syscall4(SYS_futex, (long) m, FUTEX_WAKE_PRIVATE, 1, 0);
        }
}

static NOINLINE void block_nanosleep(void) {
        struct timespec ts = { 0, 20 * 1000000L };
        uint64_t t0 = now_ns();
        raw_syscall4(SYS_nanosleep, (long) &ts, 0, 0, 0);
        blocked[F_SLEEP] += now_ns() - t0;
}

static NOINLINE char block_pipe_read(void) {
        char c = 0;
        uint64_t t0 = now_ns();
        raw_syscall4(SYS_read, pipe_fds[0], (long) &c, 1, 0);
        blocked[F_PIPE] += now_ns() - t0;
        return c;
}

static NOINLINE void block_mutex_lock(void) {
        uint64_t t0 = now_ns();
        fmutex_lock(&mutex_word);
        blocked[F_MUTEX] += now_ns() - t0;
}

static NOINLINE void feed_pipe_writer(char c) {
        raw_syscall4(SYS_write, pipe_fds[1], (long) &c, 1, 0);
}

/* Pauses of the helper threads, in functions of their own so their blocked
 * time is not mistaken for the measured functions'. */
static NOINLINE void writer_pause(void) {
        raw_sleep_ms(15);
}
static NOINLINE void hold_mutex(void) {
        fmutex_lock(&mutex_word);
        raw_sleep_ms(10); /* holding it */
        fmutex_unlock(&mutex_word);
}
static NOINLINE void holder_rest(void) {
        raw_sleep_ms(2);
}
static NOINLINE void contender_rest(void) {
        raw_sleep_ms(3);
}

static void *sleeper_main(void *arg) {
        tids[F_SLEEP] = syscall(SYS_gettid);
        while (!atomic_load(&stop))
                block_nanosleep();
        return NULL;
}

static void *reader_main(void *arg) {
        uint64_t delay0 = own_run_delay();

        tids[F_PIPE] = syscall(SYS_gettid);
        while (block_pipe_read() != 'q')
                ;
        run_delay[F_PIPE] = own_run_delay() - delay0;
        return NULL;
}

static void *writer_main(void *arg) {
        while (!atomic_load(&stop)) {
                writer_pause();
                feed_pipe_writer('x');
        }
        feed_pipe_writer('q');
        return NULL;
}

static void *holder_main(void *arg) {
        while (!atomic_load(&stop)) {
                hold_mutex();
                holder_rest();
        }
        return NULL;
}

static void *contender_main(void *arg) {
        tids[F_MUTEX] = syscall(SYS_gettid);
        raw_sleep_ms(1); /* let the holder take it first */
        while (!atomic_load(&stop)) {
                block_mutex_lock();
                fmutex_unlock(&mutex_word);
                contender_rest();
        }
        return NULL;
}

int main(int argc, char *argv[]) {
        void *(*mains[])(void *) = { sleeper_main, reader_main, writer_main, holder_main, contender_main };
        pthread_t threads[5];
        double seconds = 4;
        char *end;

        if (argc > 2 || (argc == 2 && (seconds = strtod(argv[1], &end), *end != '\0' || seconds <= 0))) {
                fprintf(stderr, "Usage: %s [SECONDS]\n", argv[0]);
                return 2;
        }
        if (pipe(pipe_fds) < 0) {
                perror("pipe");
                return 1;
        }
        for (int i = 0; i < 5; i++)
                if (pthread_create(&threads[i], NULL, mains[i], NULL) != 0) {
                        fprintf(stderr, "pthread_create failed\n");
                        return 1;
                }
        usleep((useconds_t) (seconds * 1e6));
        atomic_store(&stop, true);
        for (int i = 0; i < 5; i++)
                pthread_join(threads[i], NULL);

        printf("{\"pid\":%d,\"functions\":{", (int) getpid());
        for (int i = 0; i < F_MAX; i++)
                printf("%s\"%s\":%" PRIu64, i ? "," : "", names[i], blocked[i]);
        printf("},\"tids\":{");
        for (int i = 0; i < F_MAX; i++)
                printf("%s\"%s\":%ld", i ? "," : "", names[i], tids[i]);
        /* how long the reader, once woken, waited for a CPU: part of its
         * blocked time, but after the writer's wakeup */
        printf("},\"run_delay\":{\"%s\":%" PRIu64, names[F_PIPE], run_delay[F_PIPE]);
        printf("}}\n");
        return 0;
}
