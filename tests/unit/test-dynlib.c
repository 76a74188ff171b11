/* Loading optional libraries (dynlib.h): every symbol resolved or none,
 * and the two errors a host without the library or with the wrong one
 * gets. Uses libm, which every host has. */
#include <errno.h>
#include <math.h>

#include "dynlib.h"
#include "tests.h"

/* what a user of dynlib.h declares: pointers typed after the prototypes */
DYNLIB_FUNCTION_DEFINE(cos);
DYNLIB_FUNCTION_DEFINE(sqrt);

static void test_every_symbol_resolved(void) {
        static const struct dynlib_symbol syms[] = { DYNLIB_SYMBOL(cos), DYNLIB_SYMBOL(sqrt) };

        sym_cos = NULL;
        sym_sqrt = NULL;
        CHECK_INT_EQ(dynlib_open("libm.so.6", "libc6", syms, 2), 0);
        CHECK(sym_cos && sym_sqrt);
        /* the pointers call the library's functions */
        CHECK(sym_cos(0.0) == 1.0);
        CHECK(sym_sqrt(16.0) == 4.0);
}

static void test_missing_symbol_sets_nothing(void) {
        static void *absent;
        static const struct dynlib_symbol syms[] = {
                DYNLIB_SYMBOL(cos),
                { "profd_no_such_function", &absent },
        };

        sym_cos = NULL;
        CHECK_INT_EQ(dynlib_open("libm.so.6", "libc6", syms, 2), -ENOSYS);
        /* all or nothing: cos was found first, and is not set either */
        CHECK(!sym_cos);
        CHECK(!absent);
}

static void test_missing_library(void) {
        static const struct dynlib_symbol syms[] = { DYNLIB_SYMBOL(cos) };

        sym_cos = NULL;
        CHECK_INT_EQ(dynlib_open("libprofd-no-such-library.so.9", "none", syms, 1), -ENOENT);
        CHECK(!sym_cos);
}

int main(void) {
        test_every_symbol_resolved();
        test_missing_symbol_sets_nothing();
        test_missing_library();
        TESTS_DONE();
}
