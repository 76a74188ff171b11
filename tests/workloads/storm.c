/* Process-storm workload: forks short-lived children as fast as it can for
 * SECONDS, at most MAX_LIVE alive at once; every EXEC_EVERY-th child execs
 * this program again (an exec event for the profiler) before exiting, the
 * others burn a few microseconds of CPU and exit. Prints the truth when done:
 *   {"pid":N,"forks":F,"execs":E,"failed":X,"seconds":S,"per_second":R}
 * failed counts children that did not exit 0 (an exec that failed).
 * It stresses a profiler's process table and announcement path, not its
 * accuracy: most children live far less than one sampling period. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Bounds the children alive at once, so the storm never exhausts pids or
 * memory on a small machine; 64 keeps both CPUs busy forking. */
#define MAX_LIVE 64

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static volatile uint64_t sink;

/* A trivial amount of work: ~20 us, enough to be on a CPU when a sample
 * lands now and then. */
static void __attribute__((noinline)) child_work(void) {
        uint64_t x = sink;
        for (int i = 0; i < 20000; i++)
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        sink = x;
}

static void usage(const char *argv0) {
        fprintf(stderr, "Usage: %s SECONDS [EXEC_EVERY]\n", argv0);
        exit(2);
}

int main(int argc, char *argv[]) {
        uint64_t forks = 0, execs = 0, failed = 0, start, deadline;
        unsigned exec_every = 4;
        double seconds;
        int live = 0;
        char *end;

        if (argc == 2 && strcmp(argv[1], "--child") == 0) {
                child_work();
                return 0;
        }
        if (argc < 2 || argc > 3)
                usage(argv[0]);
        seconds = strtod(argv[1], &end);
        if (*end != '\0' || seconds <= 0)
                usage(argv[0]);
        if (argc == 3) {
                unsigned long v = strtoul(argv[2], &end, 10);
                if (*end != '\0' || v == 0 || v > 1000000)
                        usage(argv[0]);
                exec_every = v;
        }

        start = now_ns();
        deadline = start + (uint64_t) (seconds * 1e9);
        while (now_ns() < deadline) {
                while (live > 0) {
                        int status;
                        pid_t p = waitpid(-1, &status, live >= MAX_LIVE ? 0 : WNOHANG);
                        if (p <= 0)
                                break;
                        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                                failed++;
                        live--;
                }
                pid_t pid = fork();
                if (pid < 0) {
                        if (errno == EAGAIN || errno == ENOMEM)
                                continue; /* wait for children above */
                        perror("fork");
                        return 1;
                }
                if (pid == 0) {
                        if (forks % exec_every == 0) {
                                execl("/proc/self/exe", argv[0], "--child", (char *) NULL);
                                _exit(127);
                        }
                        child_work();
                        _exit(0);
                }
                live++;
                forks++;
                if (forks % exec_every == 1)
                        execs++;
        }
        while (live > 0) {
                int status;
                if (wait(&status) < 0)
                        break;
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                        failed++;
                live--;
        }

        double took = (now_ns() - start) / 1e9;
        printf("{\"pid\":%d,\"forks\":%llu,\"execs\":%llu,\"failed\":%llu,\"seconds\":%.3f,"
               "\"per_second\":%.0f}\n",
               (int) getpid(), (unsigned long long) forks, (unsigned long long) execs, (unsigned long long) failed,
               took, forks / took);
        return 0;
}
