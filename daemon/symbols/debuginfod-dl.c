/* See debuginfod-dl.h. */
#include "debuginfod-dl.h"

#include <pthread.h>

#include "macro.h"

DYNLIB_FUNCTION_DEFINE(debuginfod_begin);
DYNLIB_FUNCTION_DEFINE(debuginfod_end);
DYNLIB_FUNCTION_DEFINE(debuginfod_find_debuginfo);

static int open_result;

static void open_once(void) {
        static const struct dynlib_symbol syms[] = {
                DYNLIB_SYMBOL(debuginfod_begin),
                DYNLIB_SYMBOL(debuginfod_end),
                DYNLIB_SYMBOL(debuginfod_find_debuginfo),
        };

        open_result = dynlib_open("libdebuginfod.so.1", "libdebuginfod1", syms, ELEMENTSOF(syms));
}

int debuginfod_dl_open(void) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;

        (void) pthread_once(&once, open_once);
        return open_result;
}
