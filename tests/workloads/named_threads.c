/* Ground-truth workload for --root thread: threads with distinct names
 * (pthread_setname_np) burn CPU at known duty cycles, two of them under one
 * name as a pool would, and measure the CPU time each really got
 * (CLOCK_THREAD_CPUTIME_ID):
 *   tn-alpha   busy 60% of every 10 ms
 *   tn-beta    busy 20%
 *   tn-pool    two threads, busy 20% each
 * The main thread only waits. Runs for SECONDS (argument, default 5), then
 * prints {"pid":N,"threads":[{"name":..,"tid":..,"cpu_ns":..},...]} and
 * keeps its threads alive, idle, until its standard input closes: profd
 * reads a thread's name when it stores the drain with its samples. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PERIOD_NS 10000000LL

struct worker {
        const char *name;
        int duty_percent;
        pthread_t thread;
        pid_t tid;
        int64_t cpu_ns;
};

static int64_t now_ns(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t deadline_ns;
/* done: every worker has measured; release: stdin closed, they may end */
static pthread_barrier_t done, release;

static __attribute__((noinline)) void burn_until(int64_t until) {
        while (now_ns(CLOCK_MONOTONIC) < until)
                ;
}

static void *work(void *arg) {
        struct worker *w = arg;

        w->tid = (pid_t) syscall(SYS_gettid);
        for (int64_t start = now_ns(CLOCK_MONOTONIC); start < deadline_ns; start = now_ns(CLOCK_MONOTONIC)) {
                int64_t busy = PERIOD_NS * w->duty_percent / 100;
                struct timespec rest = { 0, PERIOD_NS - busy };

                burn_until(start + busy);
                nanosleep(&rest, NULL);
        }
        w->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
        pthread_barrier_wait(&done);
        pthread_barrier_wait(&release);
        return NULL;
}

int main(int argc, char **argv) {
        struct worker workers[] = {
                { .name = "tn-alpha", .duty_percent = 60 }, { .name = "tn-beta", .duty_percent = 20 },
                { .name = "tn-pool", .duty_percent = 20 }, { .name = "tn-pool", .duty_percent = 20 },
        };
        double seconds = argc > 1 ? atof(argv[1]) : 5;
        size_t n = sizeof(workers) / sizeof(workers[0]);

        pthread_barrier_init(&done, NULL, (unsigned) n + 1);
        pthread_barrier_init(&release, NULL, (unsigned) n + 1);
        deadline_ns = now_ns(CLOCK_MONOTONIC) + (int64_t) (seconds * 1e9);
        for (size_t i = 0; i < n; i++) {
                if (pthread_create(&workers[i].thread, NULL, work, &workers[i]) != 0 ||
                    pthread_setname_np(workers[i].thread, workers[i].name) != 0) {
                        perror("named_threads: thread");
                        return 1;
                }
        }
        pthread_barrier_wait(&done);
        printf("{\"pid\":%d,\"threads\":[", (int) getpid());
        for (size_t i = 0; i < n; i++)
                printf("%s{\"name\":\"%s\",\"tid\":%d,\"cpu_ns\":%" PRId64 "}", i ? "," : "", workers[i].name,
                       (int) workers[i].tid, workers[i].cpu_ns);
        printf("]}\n");
        fflush(stdout);
        while (getchar() != EOF)
                ;
        pthread_barrier_wait(&release);
        for (size_t i = 0; i < n; i++)
                pthread_join(workers[i].thread, NULL);
        return 0;
}
