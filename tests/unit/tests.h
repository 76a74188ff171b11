/* Minimal assertions for unit tests: a failed check prints where and what,
 * and the test exits 1 at the end (meson counts it failed). */
#pragma once

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int tests_failed;

#define CHECK(cond)                                                              \
        do {                                                                     \
                if (!(cond)) {                                                   \
                        fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__,   \
                                __LINE__, #cond);                                \
                        tests_failed++;                                          \
                }                                                                \
        } while (0)

#define CHECK_INT_EQ(a, b)                                                       \
        do {                                                                     \
                long long _a = (long long) (a), _b = (long long) (b);            \
                if (_a != _b) {                                                  \
                        fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", \
                                __FILE__, __LINE__, #a, _a, #b, _b);             \
                        tests_failed++;                                          \
                }                                                                \
        } while (0)

#define CHECK_STR_EQ(a, b)                                                       \
        do {                                                                     \
                const char *_a = (a), *_b = (b);                                 \
                if (!_a || !_b || strcmp(_a, _b) != 0) {                         \
                        fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n",  \
                                __FILE__, __LINE__, #a, _a ? _a : "(null)",      \
                                _b ? _b : "(null)");                             \
                        tests_failed++;                                          \
                }                                                                \
        } while (0)

#define TESTS_DONE()                                                             \
        do {                                                                     \
                if (tests_failed)                                                \
                        fprintf(stderr, "%d check(s) failed\n", tests_failed);   \
                return tests_failed ? 1 : 0;                                     \
        } while (0)
