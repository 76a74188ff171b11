/* Benchmark of publishing a process's unwind mappings (run by hand, not a
 * test; issue 43): the two ways unwinder.c writes n elements of
 * unwind_maps' size into an mmapable BPF array, each timed over ROUNDS
 * writes at offsets spread over the array:
 *   - mmap: the pages under them mapped, written, unmapped
 *     (unwinder_array_write), whose munmap flushes the TLB of every other
 *     CPU the process ran on;
 *   - batch: one bpf(BPF_MAP_UPDATE_BATCH) (unwinder_array_update).
 * A second thread spins on another CPU meanwhile, as the daemon's other
 * threads do, so that the munmap's flush reaches another CPU.
 *
 * usage: unwind-publish-bench [N...]   (elements per write; default 10 20 40 64 100)
 * Needs CAP_BPF (root). */
#include <bpf/bpf.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../../bpf/profd.h"

#define ROUNDS 20000
#define ELEMS (1u << 16)

static atomic_bool stop;

static void *spin(void *arg) {
        (void) arg;
        while (!atomic_load_explicit(&stop, memory_order_relaxed))
                ;
        return NULL;
}

static double now(void) {
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

static int bench(int fd, size_t n, double *ret_mmap_us, double *ret_batch_us) {
        const size_t elem = sizeof(struct profd_unwind_mapping), page = (size_t) sysconf(_SC_PAGESIZE);
        uint32_t *keys = calloc(n, sizeof(*keys));
        void *src = calloc(n, elem);
        double t0, t1, t2;
        int r = 0;

        if (!keys || !src) {
                r = -ENOMEM;
                goto out;
        }
        t0 = now();
        for (unsigned i = 0; i < ROUNDS; i++) {
                size_t off = (size_t) (i * 97u) % (ELEMS - n), begin = off * elem, end = begin + n * elem;
                size_t base = begin / page * page, len = (end - base + page - 1) / page * page;
                void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t) base);

                if (p == MAP_FAILED) {
                        r = -errno;
                        goto out;
                }
                memcpy((char *) p + (begin - base), src, n * elem);
                (void) munmap(p, len);
        }
        t1 = now();
        for (unsigned i = 0; i < ROUNDS; i++) {
                uint32_t off = (i * 97u) % (ELEMS - (uint32_t) n), count = (uint32_t) n;

                for (size_t k = 0; k < n; k++)
                        keys[k] = off + (uint32_t) k;
                r = bpf_map_update_batch(fd, keys, src, &count, NULL);
                if (r < 0)
                        goto out;
        }
        t2 = now();
        *ret_mmap_us = (t1 - t0) / ROUNDS * 1e6;
        *ret_batch_us = (t2 - t1) / ROUNDS * 1e6;
out:
        free(keys);
        free(src);
        return r;
}

int main(int argc, char **argv) {
        static const size_t defaults[] = { 10, 20, 40, 64, 100 };
        LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
        size_t n_sizes = argc > 1 ? (size_t) argc - 1 : sizeof(defaults) / sizeof(defaults[0]);
        pthread_t thread;
        int fd, r = 0;

        fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "publish_bench", sizeof(uint32_t), sizeof(struct profd_unwind_mapping),
                            ELEMS, &opts);
        if (fd < 0) {
                fprintf(stderr, "Failed to create an mmapable array (root?): %s\n", strerror(-fd));
                return 1;
        }
        if (pthread_create(&thread, NULL, spin, NULL) != 0) {
                fprintf(stderr, "Failed to start the spinning thread\n");
                return 1;
        }
        usleep(100 * 1000);
        printf("%8s %14s %14s\n", "elements", "mmap (us)", "batch (us)");
        for (size_t i = 0; i < n_sizes && r >= 0; i++) {
                size_t n = argc > 1 ? strtoul(argv[i + 1], NULL, 10) : defaults[i];
                double m = 0, b = 0;

                if (n == 0 || n >= ELEMS) {
                        fprintf(stderr, "Elements per write must be 1 to %u\n", ELEMS - 1);
                        r = -EINVAL;
                        break;
                }
                r = bench(fd, n, &m, &b);
                if (r < 0)
                        fprintf(stderr, "Failed to write %zu elements: %s\n", n, strerror(-r));
                else
                        printf("%8zu %14.2f %14.2f\n", n, m, b);
        }
        atomic_store(&stop, true);
        pthread_join(thread, NULL);
        close(fd);
        return r < 0;
}
