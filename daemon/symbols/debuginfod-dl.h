/* libdebuginfod for the debug-file search, loaded when debuginfod is
 * enabled (see dynlib.h): the functions debug-file.c calls. */
#pragma once

#include <elfutils/debuginfod.h>

#include "dynlib.h"

DYNLIB_FUNCTION(debuginfod_begin);
DYNLIB_FUNCTION(debuginfod_end);
DYNLIB_FUNCTION(debuginfod_find_debuginfo);

/* Loads libdebuginfod once per process; later calls return the first
 * one's result. Thread-safe. Returns 0 or a negative errno, logged. */
int debuginfod_dl_open(void);
