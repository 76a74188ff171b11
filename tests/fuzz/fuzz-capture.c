/* libFuzzer target: capture conditions (a client's request, a setting)
 * and pressure files (the kernel's, or a cgroup's a user can shape). The
 * input is both a condition and a pressure file's text. Invariants: a
 * refused condition has a message; an accepted one is written back in the
 * grammar and that text parses to the same writing; an accepted pressure
 * file has its some line and averages of at most 100%. The same bytes as
 * /proc/PID/stat, a cgroup's cpu.stat and /proc/self/mounts: parsed
 * within their bounds (ASan), a mount path found is a path. */
#include <errno.h>

#include "capture-util.h"
#include "capture.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = fuzz_strndup(data, size), first[CAPTURE_CGROUP_MAX + 64], second[sizeof(first)];
        struct capture_cond c, again;
        struct psi_reading r;
        const char *err;

        if (!s)
                return 0;
        if (capture_cond_parse(s, &c, &err) == 0) {
                int n = capture_cond_format(&c, first, sizeof(first));

                FUZZ_CHECK(n > 0 && (size_t) n < sizeof(first));
                FUZZ_CHECK(capture_cond_parse(first, &again, &err) == 0);
                capture_cond_format(&again, second, sizeof(second));
                FUZZ_CHECK(strcmp(first, second) == 0);
                FUZZ_CHECK(again.kind == c.kind && again.above_centi == c.above_centi);
                capture_cond_done(&again);
                capture_cond_done(&c);
        } else
                FUZZ_CHECK(err && *err);
        if (psi_parse((const char *) data, size, &r) == 0) {
                FUZZ_CHECK(r.has[CAPTURE_PSI_SOME]);
                for (int l = 0; l < 2; l++)
                        for (int w = 0; w < 3; w++)
                                FUZZ_CHECK(r.avg_centi[l][w] <= 10000);
        }
        {
                uint64_t cpu, start;
                char *path = NULL;

                (void) capture_parse_stat((const char *) data, size, 100, &cpu, &start);
                (void) capture_parse_cpu_stat((const char *) data, size, &cpu);
                if (capture_cgroup2_mount((const char *) data, size, &path) == 0) {
                        FUZZ_CHECK(path && path[0] == '/');
                        free(path);
                }
        }
        free(s);
        return 0;
}
