/* Capture conditions: the grammar of capture.h. */
#include "capture.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

static const char *const kind_names[_CAPTURE_KIND_MAX] = {
        [CAPTURE_MANUAL] = "manual",
        [CAPTURE_PSI] = "psi",
        [CAPTURE_CPU_PID] = "cpu",
        [CAPTURE_CPU_CGROUP] = "cpu",
        [CAPTURE_OOM] = "oom",
};
static const char *const resource_names[_CAPTURE_PSI_RESOURCE_MAX] = { "cpu", "memory", "io" };
static const char *const line_names[] = { "some", "full" };
static const char *const window_names[] = { "avg10", "avg60", "avg300" };

static bool startswith(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

const char *capture_kind_name(enum capture_kind kind) {
        return (unsigned) kind < _CAPTURE_KIND_MAX ? kind_names[kind] : "unknown";
}

/* A percentage with at most two decimals and an optional '%', the whole
 * of s, at most max percent: in hundredths. */
static int parse_percent(const char *s, uint32_t max, uint32_t *ret) {
        uint64_t v = 0;
        unsigned decimals = 0;
        bool digits = false, point = false;

        for (; *s && *s != '%'; s++) {
                if (*s == '.' && !point) {
                        point = true;
                        continue;
                }
                if (*s < '0' || *s > '9' || (point && decimals == 2))
                        return -EINVAL;
                v = v * 10 + (uint64_t) (*s - '0');
                if (point)
                        decimals++;
                digits = true;
                if (v > (uint64_t) max * 100 * 100) /* bounded before it can overflow */
                        return -EINVAL;
        }
        if (!digits || (point && decimals == 0) || (*s == '%' && s[1]))
                return -EINVAL;
        for (; decimals < 2; decimals++)
                v *= 10;
        if (v > (uint64_t) max * 100)
                return -EINVAL;
        *ret = (uint32_t) v;
        return 0;
}

static int lookup(const char *s, size_t n, const char *const *names, size_t n_names) {
        for (size_t i = 0; i < n_names; i++)
                if (strlen(names[i]) == n && memcmp(s, names[i], n) == 0)
                        return (int) i;
        return -1;
}

static int parse_psi(const char *s, struct capture_cond *c, const char **ret_error) {
        const char *gt = strchr(s, '>'), *p = s, *dot;
        int i;

        if (!gt) {
                *ret_error = "psi: needs a threshold, e.g. psi:cpu>50 (percent of time stalled)";
                return -EINVAL;
        }
        dot = memchr(p, '.', (size_t) (gt - p));
        i = lookup(p, (size_t) ((dot ? dot : gt) - p), resource_names, ELEMENTSOF(resource_names));
        if (i < 0) {
                *ret_error = "psi: the resource is cpu, memory or io (e.g. psi:memory.full>10)";
                return -EINVAL;
        }
        c->resource = (enum capture_psi_resource) i;
        c->line = CAPTURE_PSI_SOME;
        c->window = CAPTURE_PSI_AVG10;
        while (dot) {
                const char *end;

                p = dot + 1;
                dot = memchr(p, '.', (size_t) (gt - p));
                end = dot ? dot : gt;
                if ((i = lookup(p, (size_t) (end - p), line_names, ELEMENTSOF(line_names))) >= 0)
                        c->line = (enum capture_psi_line) i;
                else if ((i = lookup(p, (size_t) (end - p), window_names, ELEMENTSOF(window_names))) >= 0)
                        c->window = (enum capture_psi_window) i;
                else {
                        *ret_error = "psi: after the resource come .some or .full, and .avg10, .avg60 or .avg300";
                        return -EINVAL;
                }
        }
        if (c->resource == CAPTURE_PSI_CPU && c->line == CAPTURE_PSI_FULL) {
                /* the kernel writes a "full" line for cpu since 5.13, only
                 * meaningful for cgroups: at the system level it is 0 */
                *ret_error = "psi: cpu has no system-wide full pressure; use psi:cpu or psi:cpu.some";
                return -EINVAL;
        }
        if (parse_percent(gt + 1, 100, &c->above_centi) < 0) {
                *ret_error = "psi: the threshold is a percentage of time from 0 to 100, e.g. psi:io>30";
                return -EINVAL;
        }
        c->kind = CAPTURE_PSI;
        return 0;
}

/* An absolute cgroup path, as under the cgroup2 mount: no "." or ".."
 * component (no way out of the mount), no empty one, nothing unprintable. */
static bool cgroup_path_valid(const char *s, size_t n) {
        if (n == 0 || n >= CAPTURE_CGROUP_MAX || s[0] != '/')
                return false;
        for (size_t i = 0; i < n; i++) {
                if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f)
                        return false;
                if (s[i] == '/' && i + 1 < n) {
                        const char *comp = s + i + 1;
                        size_t len = strcspn(comp, "/");

                        if (len > n - i - 1)
                                len = n - i - 1;
                        if (len == 0 || (len == 1 && comp[0] == '.') || (len == 2 && comp[0] == '.' && comp[1] == '.'))
                                return false;
                }
        }
        return true;
}

static int parse_cpu(const char *s, struct capture_cond *c, const char **ret_error) {
        const char *gt = strrchr(s, '>');

        if (!startswith(s, "pid=") && !startswith(s, "cgroup=")) {
                *ret_error = "cpu: says whose CPU with pid= or cgroup=, e.g. cpu:pid=4242>80";
                return -EINVAL;
        }
        if (!gt) {
                *ret_error = "cpu: needs a threshold, e.g. cpu:pid=4242>80 (percent of one CPU)";
                return -EINVAL;
        }
        if (startswith(s, "pid=")) {
                uint64_t pid = 0;
                const char *p = s + 4;

                if (p == gt) {
                        *ret_error = "cpu: pid= needs a process id, e.g. cpu:pid=4242>80";
                        return -EINVAL;
                }
                for (; p < gt; p++) {
                        if (*p < '0' || *p > '9' || (pid = pid * 10 + (uint64_t) (*p - '0')) > INT32_MAX) {
                                *ret_error = "cpu: pid= needs a process id, e.g. cpu:pid=4242>80";
                                return -EINVAL;
                        }
                }
                if (pid == 0) {
                        *ret_error = "cpu: pid= needs a process id, e.g. cpu:pid=4242>80";
                        return -EINVAL;
                }
                c->kind = CAPTURE_CPU_PID;
                c->pid = (uint32_t) pid;
        } else {
                const char *p = s + 7; /* "cgroup=" */
                size_t n = (size_t) (gt - p);

                /* "/" alone is the root: the whole machine, as psi:cpu is */
                while (n > 1 && p[n - 1] == '/')
                        n--;
                if (!cgroup_path_valid(p, n)) {
                        *ret_error = "cpu: cgroup= needs an absolute path under the cgroup2 mount, without . or .., "
                                     "e.g. cpu:cgroup=/system.slice/nginx.service>80";
                        return -EINVAL;
                }
                c->cgroup = strndup(p, n);
                if (!c->cgroup)
                        return -ENOMEM;
                c->kind = CAPTURE_CPU_CGROUP;
        }
        if (parse_percent(gt + 1, CAPTURE_CPU_PERCENT_MAX, &c->above_centi) < 0) {
                capture_cond_done(c);
                *ret_error = "cpu: the threshold is a percentage of one CPU (200 = two CPUs busy), e.g. cpu:pid=4242>80";
                return -EINVAL;
        }
        return 0;
}

int capture_cond_parse(const char *s, struct capture_cond *ret, const char **ret_error) {
        struct capture_cond c = {};
        int r;

        *ret_error = NULL;
        if (!s || !*s) {
                *ret_error = "a capture condition is psi:..., cpu:..., oom or manual";
                return -EINVAL;
        }
        if (streq(s, "manual"))
                c.kind = CAPTURE_MANUAL;
        else if (streq(s, "oom"))
                c.kind = CAPTURE_OOM;
        else if (startswith(s, "psi:")) {
                r = parse_psi(s + 4, &c, ret_error);
                if (r < 0)
                        return r;
        } else if (startswith(s, "cpu:")) {
                r = parse_cpu(s + 4, &c, ret_error);
                if (r < 0)
                        return r;
        } else {
                *ret_error = "unknown capture condition: it starts with psi:, cpu:, or is oom or manual";
                return -EINVAL;
        }
        *ret = c;
        return 0;
}

void capture_cond_done(struct capture_cond *c) {
        free(c->cgroup);
        c->cgroup = NULL;
}

int capture_cond_format(const struct capture_cond *c, char *buf, size_t size) {
        char pct[32];

        snprintf(pct, sizeof(pct), "%u.%02u", c->above_centi / 100, c->above_centi % 100);
        /* "50.00" reads "50" */
        if (c->above_centi % 100 == 0)
                snprintf(pct, sizeof(pct), "%u", c->above_centi / 100);
        switch (c->kind) {
        case CAPTURE_PSI:
                return snprintf(buf, size, "psi:%s.%s.%s>%s", resource_names[c->resource], line_names[c->line],
                                window_names[c->window], pct);
        case CAPTURE_CPU_PID:
                return snprintf(buf, size, "cpu:pid=%u>%s", c->pid, pct);
        case CAPTURE_CPU_CGROUP:
                return snprintf(buf, size, "cpu:cgroup=%s>%s", c->cgroup, pct);
        default:
                return snprintf(buf, size, "%s", capture_kind_name(c->kind));
        }
}
