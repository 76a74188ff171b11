/* A query's answer as a pprof profile: gzipped profile.proto, the format of
 * `go tool pprof`, encoded with protobuf-c from the profile.proto Debian ships. */
#pragma once

#include <stdio.h>

#include "profile.h"

/* Writes p as a gzipped perftools.profiles.Profile:
 * - one mapping per module (file path, build-id; kernel frames in
 *   "[kernel.kallsyms]", Python frames in "[python]" and Java frames in
 *   "[hotspot]" without build-id or range, their locations at address 0),
 *   its range spanning the addresses seen in it;
 * - one location per distinct physical frame and its chain of inlined
 *   frames, the chain as Line entries innermost first;
 * - one function per (name, raw name, source file): a Python frame's
 *   source file is its .py file, a Java frame's its .java file (the name
 *   the class records, no directory), its Line the line that ran;
 * - sample types: cpu -> samples/count and cpu/nanoseconds (samples x
 *   p->period_ns; only samples/count while the period is unknown), offcpu ->
 *   off_cpu/nanoseconds, wakeup -> wakeup/nanoseconds;
 * - a "group" label on samples of a grouped answer; time_nanos and
 *   duration_nanos from the window.
 * Returns 0, -ENOMEM, -EOVERFLOW (a value pprof's int64 can't hold) or -EIO. */
int pprof_write(FILE *f, const profile *p);
