/* What captures (issue 44) decide from, pure: the kernel's pressure files
 * read into numbers, a process's or cgroup's CPU share from two readings,
 * the rising edge of a condition, and the gate every capture passes: one
 * per cool-down, within a budget of pinned bytes; who may ask for which
 * condition; what a capture pins. The capture manager (capture-manager.c)
 * reads the files and acts; this decides, and is unit-tested. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"

/* /proc/pressure/RESOURCE (or a cgroup's RESOURCE.pressure):
 *   some avg10=0.00 avg60=0.00 avg300=0.00 total=0
 *   full avg10=0.00 avg60=0.00 avg300=0.00 total=0
 * averages in hundredths of a percent, totals in microseconds stalled. */
struct psi_reading {
        uint32_t avg_centi[2][3]; /* [enum capture_psi_line][enum capture_psi_window] */
        uint64_t total_us[2];
        bool has[2];              /* the line was there (no "full" before 5.13 for cpu) */
};

/* Parses a pressure file's text (n bytes, not NUL-terminated). -EBADMSG
 * when a line is not as above or its numbers are out of range; a "some"
 * line is required. */
int psi_parse(const char *text, size_t n, struct psi_reading *ret);

/* The value a PSI condition compares, or -ENODATA when the reading has
 * not its line. */
int psi_value(const struct psi_reading *r, const struct capture_cond *c, uint32_t *ret_centi);

/* The CPU share between two readings of a task's or cgroup's CPU time
 * (ns) wall_ns apart, in hundredths of a percent of one CPU. 0 when the
 * time went backwards (a pid reused, a cgroup recreated) or no time
 * passed; saturates at UINT32_MAX. */
uint32_t capture_cpu_centi(uint64_t cpu_before_ns, uint64_t cpu_after_ns, uint64_t wall_ns);

/* A condition's edge: true once when value rises above the threshold,
 * then not again until it has fallen to it or below. */
bool capture_edge(bool *above, uint32_t value_centi, uint32_t threshold_centi);

enum capture_verdict {
        CAPTURE_GRANTED,
        CAPTURE_COOLING,   /* the last capture began less than the cool-down ago */
        CAPTURE_OVER_BUDGET, /* its pins would pass the budget of pinned bytes */
        _CAPTURE_VERDICT_MAX,
};

struct capture_gate {
        uint64_t cooldown_ns;
        uint64_t budget_bytes;     /* pinned bytes at most, every capture's together */
        uint64_t pinned_bytes;     /* what pins hold now (capture_gate_unpin gives back) */
        uint64_t last_ns;          /* when the last granted capture began */
        bool any;                  /* one was granted */
        uint64_t refused[_CAPTURE_VERDICT_MAX]; /* counted, for status */
};

/* May a capture that expects to pin bytes_estimate begin at now_ns? A
 * grant takes the bytes and starts the cool-down; a refusal is counted by
 * its reason. */
enum capture_verdict capture_gate_ask(struct capture_gate *g, uint64_t now_ns, uint64_t bytes_estimate);

/* A pin removed (or found smaller): its bytes go back to the budget. */
void capture_gate_unpin(struct capture_gate *g, uint64_t bytes);

const char *capture_verdict_name(enum capture_verdict v);

/* A process's CPU time from /proc/PID/stat (n bytes, not NUL-terminated):
 * utime + stime of all its threads, in clock ticks (ticks_per_s, the
 * kernel's USER_HZ), as ns; and its start time in ticks since boot, which
 * tells a reused pid apart. -EBADMSG when the text is not such a line
 * (the comm, in parentheses, may hold spaces and parentheses itself). */
int capture_parse_stat(const char *text, size_t n, uint64_t ticks_per_s, uint64_t *ret_cpu_ns,
                       uint64_t *ret_start_ticks);

/* A cgroup's CPU time from its cpu.stat ("usage_usec N" among other
 * lines), as ns. -EBADMSG without that line. */
int capture_parse_cpu_stat(const char *text, size_t n, uint64_t *ret_cpu_ns);

/* Who may start a capture on c. Root and profd's admin group
 * (privileged) start any; others only cpu:pid= of a process of their own
 * (owner_uid, the owner of /proc/PID; UINT32_MAX when it could not be
 * read), since every other condition (pressure, a cgroup, an OOM kill,
 * by hand) pins the whole machine's data on a host-wide event. Returns 0
 * or -EPERM with *ret_error saying why (static). */
int capture_may_start(const struct capture_cond *c, bool privileged, uint32_t uid, uint32_t owner_uid,
                      const char **ret_error);

/* The range a capture triggered at trigger_ns pins: [trigger - before,
 * trigger + duration], saturating at the clock's ends. */
void capture_range(uint64_t trigger_ns, uint64_t before_ns, uint64_t duration_ns, uint64_t *ret_from_ns,
                   uint64_t *ret_to_ns);

/* How a capture raises the on-CPU sampler's rate (capture_frequency)
 * without outgrowing the kernel maps, which were sized at start for
 * base_hz over interval_ns on every CPU: drains come more often while
 * raised, so a drain holds at most the samples of a base drain, and the
 * rate is what that allows when the interval would fall below
 * min_interval_ns. */
struct capture_raise {
        unsigned hz;            /* the rate while raised; base_hz: no raise */
        uint64_t interval_ns;   /* the drain interval while raised */
};
/* raised_hz 0, or not above base_hz: no raise (hz base_hz, interval
 * interval_ns). */
void capture_raise_plan(unsigned base_hz, unsigned raised_hz, uint64_t interval_ns, uint64_t min_interval_ns,
                        struct capture_raise *ret);

/* What a capture will pin, estimated at its trigger from what the store
 * holds of the last seen_ns (seen_bytes): the same rate over before +
 * duration. 0 when nothing was seen. Saturates. */
uint64_t capture_estimate_bytes(uint64_t seen_bytes, uint64_t seen_ns, uint64_t before_ns, uint64_t duration_ns);

/* Where cgroup2 is mounted, from /proc/self/mounts' text (n bytes): the
 * first line of type cgroup2 (/sys/fs/cgroup, or /sys/fs/cgroup/unified on
 * a hybrid host), its octal escapes (\040 for a space) decoded, into
 * *ret (malloc'd). -ENOENT when there is none, -ENOMEM. */
int capture_cgroup2_mount(const char *text, size_t n, char **ret);
