/* Kept blocks and their wakers, for the off-CPU programs' cost
 * (tests/bench/offcpu_ab.py): PAIRS pairs of threads (default 4) for
 * SECONDS (default 15). In each pair a writer sleeps 1.2 ms and writes a
 * byte into a pipe, and its reader waits in read() until then: every
 * round is two kept blocks (over profd's 1 ms default), the reader's
 * woken by the writer's write (its user and kernel stacks walked), the
 * writer's by its timer (an interrupt). Both block 12 calls deep, so a
 * walk has some frames to find. Built without frame pointers, as
 * Debian's binaries are: the DWARF tables walk it.
 * Usage: pipe_wakes [PAIRS [SECONDS]] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define DEPTH 12
#define MAX_PAIRS 32

static volatile int sink;
static double end_at;

static double now(void) {
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

/* One round at the bottom of d calls: the writer's sleep and write, or
 * the reader's read. */
__attribute__((noinline)) static void deep(int d, int fd, int writer) {
        if (d > 0) {
                deep(d - 1, fd, writer);
                sink++; /* not a tail call: each level stays a frame */
                return;
        }
        if (writer) {
                struct timespec ts = { 0, 1200000 };

                nanosleep(&ts, NULL);
                if (write(fd, "x", 1) != 1)
                        exit(1);
        } else {
                char c;

                if (read(fd, &c, 1) < 0)
                        exit(1);
        }
}

static void *writer(void *arg) {
        int fd = (int) (long) arg;

        while (now() < end_at)
                deep(DEPTH, fd, 1);
        close(fd); /* the reader's read returns 0: it ends */
        return NULL;
}

static void *reader(void *arg) {
        int fd = (int) (long) arg;

        while (now() < end_at)
                deep(DEPTH, fd, 0);
        return NULL;
}

int main(int argc, char *argv[]) {
        int pairs = argc > 1 ? atoi(argv[1]) : 4;
        double seconds = argc > 2 ? atof(argv[2]) : 15;
        pthread_t t[2 * MAX_PAIRS];

        if (pairs < 1 || pairs > MAX_PAIRS || seconds <= 0) {
                fprintf(stderr, "Usage: %s [PAIRS (1-%d) [SECONDS]]\n", argv[0], MAX_PAIRS);
                return 2;
        }
        end_at = now() + seconds;
        for (int i = 0; i < pairs; i++) {
                int p[2];

                if (pipe(p) != 0) {
                        perror("pipe");
                        return 1;
                }
                if (pthread_create(&t[2 * i], NULL, writer, (void *) (long) p[1]) != 0 ||
                    pthread_create(&t[2 * i + 1], NULL, reader, (void *) (long) p[0]) != 0) {
                        fprintf(stderr, "pthread_create failed\n");
                        return 1;
                }
        }
        for (int i = 0; i < 2 * pairs; i++)
                pthread_join(t[i], NULL);
        return 0;
}
