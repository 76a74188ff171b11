/* Wakeups that a timer interrupt does over another thread (tests/e2e/
 * test_offcpu.py): two threads pinned to one CPU, spin_in_user burning
 * CPU in user mode and sleep_briefly sleeping 5 ms at a time. Each of the
 * sleeper's timers expires while the CPU runs the spinner, so the interrupt
 * that wakes the sleeper arrives in the spinner's user mode and runs on the
 * spinner's kernel stack; the spinner did not wake anyone.
 * Prints {"pid":N,"sleeps":N,"spinner_tid":N,"sleeper_tid":N}. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static atomic_bool stop;
static long spinner_tid, sleeper_tid, sleeps;
static cpu_set_t one_cpu;

static NOINLINE unsigned long spin_in_user(unsigned long x) {
        for (int i = 0; i < 100000; i++)
                x = x * 6364136223846793005UL + 1442695040888963407UL;
        return x;
}

static NOINLINE void sleep_briefly(void) {
        struct timespec ts = { 0, 5 * 1000 * 1000 };

        nanosleep(&ts, NULL);
}

static void *spinner_main(void *arg) {
        volatile unsigned long sink = 1;

        spinner_tid = syscall(SYS_gettid);
        while (!atomic_load(&stop))
                sink = spin_in_user(sink);
        return NULL;
}

static void *sleeper_main(void *arg) {
        sleeper_tid = syscall(SYS_gettid);
        while (!atomic_load(&stop)) {
                sleep_briefly();
                sleeps++;
        }
        return NULL;
}

int main(int argc, char *argv[]) {
        double seconds = argc > 1 ? strtod(argv[1], NULL) : 2;
        pthread_attr_t attr;
        pthread_t spinner, sleeper;
        int cpu = sched_getcpu();

        if (seconds <= 0 || cpu < 0) {
                fprintf(stderr, "Usage: %s [SECONDS]\n", argv[0]);
                return 2;
        }
        CPU_ZERO(&one_cpu);
        CPU_SET(cpu, &one_cpu);
        pthread_attr_init(&attr);
        pthread_attr_setaffinity_np(&attr, sizeof(one_cpu), &one_cpu);
        if (pthread_create(&spinner, &attr, spinner_main, NULL) != 0 ||
            pthread_create(&sleeper, &attr, sleeper_main, NULL) != 0) {
                fprintf(stderr, "pthread_create failed\n");
                return 1;
        }
        usleep((useconds_t) (seconds * 1e6));
        atomic_store(&stop, true);
        pthread_join(spinner, NULL);
        pthread_join(sleeper, NULL);
        printf("{\"pid\":%d,\"sleeps\":%ld,\"spinner_tid\":%ld,\"sleeper_tid\":%ld}\n", (int) getpid(), sleeps,
               spinner_tid, sleeper_tid);
        return 0;
}
