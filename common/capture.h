/* Capture conditions (issue 44): what makes profd keep the minutes before
 * and after an incident. One grammar for the setting `capture_on`, the
 * request `capture` and profctl, so a condition means the same wherever
 * it is written:
 *
 *   psi:RESOURCE[.some|.full][.avg10|.avg60|.avg300]>PERCENT
 *                   the kernel's pressure stall information
 *                   (/proc/pressure/RESOURCE, RESOURCE cpu, memory or io):
 *                   the share of time some (or all) tasks stalled, over
 *                   the last 10 s by default; e.g. psi:memory.full>10
 *   cpu:pid=PID>PERCENT
 *   cpu:cgroup=PATH>PERCENT
 *                   a process's or a cgroup's CPU time (PATH under the
 *                   cgroup2 mount, e.g. /system.slice/nginx.service), in
 *                   percent of one CPU as top shows it (200 = two CPUs
 *                   busy), over the last second; e.g. cpu:pid=4242>80
 *   oom             the kernel chose an OOM victim (oom/mark_victim)
 *   manual          by hand (profctl capture)
 *
 * PERCENT may end in '%' and have two decimals. A condition fires when it
 * becomes true, not while it stays true. Pure: strings in, structs out. */
#pragma once

#include <stddef.h>
#include <stdint.h>

enum capture_kind {
        CAPTURE_MANUAL,
        CAPTURE_PSI,
        CAPTURE_CPU_PID,
        CAPTURE_CPU_CGROUP,
        CAPTURE_OOM,
        _CAPTURE_KIND_MAX,
};

enum capture_psi_resource {
        CAPTURE_PSI_CPU,
        CAPTURE_PSI_MEMORY,
        CAPTURE_PSI_IO,
        _CAPTURE_PSI_RESOURCE_MAX,
};

enum capture_psi_line {
        CAPTURE_PSI_SOME,
        CAPTURE_PSI_FULL,
};

enum capture_psi_window {
        CAPTURE_PSI_AVG10,
        CAPTURE_PSI_AVG60,
        CAPTURE_PSI_AVG300,
};

#define CAPTURE_CGROUP_MAX 4096 /* PATH_MAX */
#define CAPTURE_CPU_PERCENT_MAX 100000u /* 1,000 CPUs busy */

struct capture_cond {
        enum capture_kind kind;
        /* CAPTURE_PSI */
        enum capture_psi_resource resource;
        enum capture_psi_line line;
        enum capture_psi_window window;
        /* CAPTURE_PSI and CAPTURE_CPU_*: the value must rise above this,
         * in hundredths of a percent (PSI: of time, at most 100%; CPU: of
         * one CPU) */
        uint32_t above_centi;
        uint32_t pid;          /* CAPTURE_CPU_PID */
        char *cgroup;          /* CAPTURE_CPU_CGROUP: absolute, normalized, owned */
};

/* Parses s into *ret. On error returns -EINVAL and sets *ret_error to a
 * static message saying what is wrong, in words a person can act on. */
int capture_cond_parse(const char *s, struct capture_cond *ret, const char **ret_error);
void capture_cond_done(struct capture_cond *c);

/* The condition written back in the grammar, defaults spelled out
 * ("psi:cpu.some.avg10>50"): what status and the events show. Returns
 * the length that would be written, as snprintf. */
int capture_cond_format(const struct capture_cond *c, char *buf, size_t size);

const char *capture_kind_name(enum capture_kind kind);
