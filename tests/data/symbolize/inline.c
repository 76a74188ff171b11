/* Fixture of the symbolizer oracle test: C with static inline functions,
 * three levels deep and across a header, compiled at -O2 -g so that most
 * code is inlined somewhere. It runs (quickly) when executed, but only the
 * binary matters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inline-helpers.h"

struct bucket {
        char key[32];
        uint32_t hash;
        int count;
        struct bucket *next;
};

#define N_BUCKETS 64

static struct bucket *table[N_BUCKETS];

static inline uint32_t key_hash(const char *key) {
        return helper_hash_bytes((const unsigned char *) key, strlen(key));
}

static inline struct bucket *bucket_find(const char *key, uint32_t h) {
        for (struct bucket *b = table[h % N_BUCKETS]; b; b = b->next)
                if (b->hash == h && strcmp(b->key, key) == 0)
                        return b;
        return NULL;
}

static inline int bucket_add(const char *key) {
        uint32_t h = key_hash(key);
        struct bucket *b = bucket_find(key, h);

        if (b)
                return ++b->count;
        b = calloc(1, sizeof(*b));
        if (!b)
                abort();
        snprintf(b->key, sizeof(b->key), "%s", key);
        b->hash = h;
        b->count = 1;
        b->next = table[h % N_BUCKETS];
        table[h % N_BUCKETS] = b;
        return 1;
}

static __attribute__((noinline)) int count_words(const char *text) {
        char word[32];
        size_t n = 0;
        int distinct = 0;

        for (const char *p = text;; p++) {
                if (*p && *p != ' ' && n + 1 < sizeof(word)) {
                        word[n++] = *p;
                        continue;
                }
                if (n > 0) {
                        word[n] = '\0';
                        if (bucket_add(word) == 1)
                                distinct++;
                        n = 0;
                }
                if (!*p)
                        break;
        }
        return distinct;
}

static inline double smooth(double prev, double next, double alpha) {
        return prev + alpha * (next - prev);
}

static inline int quantize(double v, int levels) {
        return helper_clamp((int) (v * levels), 0, levels - 1);
}

static __attribute__((noinline)) void histogram(const double *v, size_t n, int *bins, int levels) {
        double s = v[0];

        for (size_t i = 0; i < n; i++) {
                s = smooth(s, v[i], 0.25);
                bins[quantize(s, levels)]++;
        }
}

static int compare_buckets(const void *a, const void *b) {
        const struct bucket *x = *(const struct bucket *const *) a, *y = *(const struct bucket *const *) b;

        if (x->count != y->count)
                return y->count - x->count;
        return strcmp(x->key, y->key);
}

static __attribute__((noinline)) void report(FILE *out) {
        struct bucket *all[256];
        size_t n = 0;

        for (int i = 0; i < N_BUCKETS; i++)
                for (struct bucket *b = table[i]; b && n < 256; b = b->next)
                        all[n++] = b;
        qsort(all, n, sizeof(all[0]), compare_buckets);
        for (size_t i = 0; i < n && i < 5; i++)
                fprintf(out, "%s %d %08x\n", all[i]->key, all[i]->count, helper_rotate(all[i]->hash, (unsigned) i));
}

static void free_table(void) {
        for (int i = 0; i < N_BUCKETS; i++)
                while (table[i]) {
                        struct bucket *b = table[i];

                        table[i] = b->next;
                        free(b);
                }
}

int main(int argc, char **argv) {
        static const char text[] = "the quick brown fox jumps over the lazy dog and the dog sleeps";
        double samples[128];
        int bins[16] = { 0 };
        int distinct = 0;

        for (int i = 0; i < argc; i++)
                distinct += count_words(argv[i]);
        distinct += count_words(text);
        for (size_t i = 0; i < 128; i++)
                samples[i] = (double) (helper_hash_bytes((const unsigned char *) &i, sizeof(i)) % 1000) / 1000.0;
        histogram(samples, 128, bins, 16);
        report(stdout);
        printf("%d distinct, bin0 %d\n", distinct, bins[0]);
        free_table();
        return 0;
}
