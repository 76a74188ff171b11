/* Many-stacks workload: THREADS threads burn CPU for SECONDS at the bottom of
 * a 12-level call chain whose every level is branch_a or branch_b, chosen by
 * one bit of a pattern that changes every ~100 us: up to 4096 distinct user
 * stacks, times THREADS distinct threads, far more aggregation keys and
 * stacks per drain than small kernel maps hold. Prints when done:
 *   {"pid":N,"threads":T,"patterns":P,"calls":C}
 * Frame pointers on, sibling calls off: every level stays a real frame. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
#define LEVELS 12 /* 2^12 = 4096 distinct chains: well above any tiny map */

static atomic_bool stop;
static atomic_uint_fast64_t calls;

static NOINLINE uint64_t branch_a(unsigned pattern, int level);
static NOINLINE uint64_t branch_b(unsigned pattern, int level);

/* ~100 us of work at the leaf, so a sample lands in one chain or another. */
static NOINLINE uint64_t leaf_spin(unsigned pattern) {
        uint64_t x = pattern;
        for (int i = 0; i < 100000; i++)
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        return x;
}

static uint64_t descend(unsigned pattern, int level) {
        if (level == LEVELS)
                return leaf_spin(pattern);
        return (pattern >> level) & 1 ? branch_b(pattern, level + 1) : branch_a(pattern, level + 1);
}

/* The "+ level" after the call keeps it from being a tail call. */
static NOINLINE uint64_t branch_a(unsigned pattern, int level) {
        return descend(pattern, level) + level;
}
static NOINLINE uint64_t branch_b(unsigned pattern, int level) {
        return descend(pattern, level) ^ level;
}

static void *thread_main(void *arg) {
        unsigned pattern = (unsigned) (uintptr_t) arg * 2654435761u;
        uint64_t sum = 0, n = 0;

        while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
                sum += descend(pattern & ((1u << LEVELS) - 1), 0);
                pattern = pattern * 1103515245u + 12345u;
                n++;
        }
        atomic_fetch_add(&calls, n);
        return (void *) (uintptr_t) (sum & 1);
}

int main(int argc, char *argv[]) {
        double seconds;
        long threads;
        char *end;

        if (argc != 3 || (seconds = strtod(argv[1], &end), *end != '\0' || seconds <= 0) ||
            (threads = strtol(argv[2], &end, 10), *end != '\0' || threads < 1 || threads > 4096)) {
                fprintf(stderr, "Usage: %s SECONDS THREADS\n", argv[0]);
                return 2;
        }
        pthread_t *tids = calloc(threads, sizeof(*tids));
        if (!tids)
                return 1;
        for (long i = 0; i < threads; i++)
                if (pthread_create(&tids[i], NULL, thread_main, (void *) (uintptr_t) (i + 1)) != 0) {
                        perror("pthread_create");
                        return 1;
                }
        struct timespec ts = { (time_t) seconds, (long) ((seconds - (time_t) seconds) * 1e9) };
        while (nanosleep(&ts, &ts) != 0)
                ;
        atomic_store(&stop, true);
        for (long i = 0; i < threads; i++)
                pthread_join(tids[i], NULL);
        printf("{\"pid\":%d,\"threads\":%ld,\"patterns\":%u,\"calls\":%llu}\n", (int) getpid(), threads,
               1u << LEVELS, (unsigned long long) atomic_load(&calls));
        free(tids);
        return 0;
}
