/* Fixture of the symbolizer tests whose debug info lives in a separate file:
 * built twice, once found through .gnu_debuglink (no build-id, so the CRC
 * decides) and once (-DSPLIT_BUILD_ID) only through the build-id path. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SPLIT_BUILD_ID
#define SEED 0x2545f491u
#else
#define SEED 0x9e3779b9u
#endif

struct rng {
        uint64_t state;
};

static inline uint32_t rng_next(struct rng *r) {
        r->state = r->state * 6364136223846793005ull + 1442695040888963407ull;
        return (uint32_t) (r->state >> 33) ^ SEED;
}

static inline uint32_t rng_below(struct rng *r, uint32_t n) {
        return n ? rng_next(r) % n : 0;
}

static inline void swap_ints(int *a, int *b) {
        int t = *a;

        *a = *b;
        *b = t;
}

static inline void shuffle(int *v, size_t n, struct rng *r) {
        for (size_t i = n; i > 1; i--)
                swap_ints(&v[i - 1], &v[rng_below(r, (uint32_t) i)]);
}

static __attribute__((noinline)) void insertion_sort(int *v, size_t n) {
        for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--)
                        swap_ints(&v[j - 1], &v[j]);
}

static inline size_t partition(int *v, size_t n) {
        int pivot = v[n / 2];
        size_t i = 0, j = n - 1;

        for (;;) {
                while (v[i] < pivot)
                        i++;
                while (v[j] > pivot)
                        j--;
                if (i >= j)
                        return j;
                swap_ints(&v[i++], &v[j--]);
        }
}

static void quick_sort(int *v, size_t n) {
        while (n > 16) {
                size_t p = partition(v, n) + 1;

                quick_sort(v, p);
                v += p;
                n -= p;
        }
        insertion_sort(v, n);
}

static inline int is_sorted(const int *v, size_t n) {
        for (size_t i = 1; i < n; i++)
                if (v[i - 1] > v[i])
                        return 0;
        return 1;
}

static __attribute__((noinline, noclone)) long checksum(const int *v, size_t n) {
        long sum = 0;

        for (size_t i = 0; i < n; i++)
                sum = sum * 31 + v[i];
        return sum;
}

int main(int argc, char **argv) {
        struct rng r = { .state = (uint64_t) argc };
        size_t n = 1000;
        int *v = malloc(n * sizeof(*v));

        if (!v)
                return 1;
        for (size_t i = 0; i < n; i++)
                v[i] = (int) i;
        shuffle(v, n, &r);
        quick_sort(v, n);
        printf("%s %ld\n", is_sorted(v, n) ? "sorted" : "unsorted", checksum(v, n));
        free(v);
        return argc > 1 && strcmp(argv[1], "fail") == 0;
}
