/* libFuzzer target: the /proc/PID/{maps,stat,status,cgroup} parsers, each fed
 * every input, since a process controls what its own files contain (comm,
 * mapped file names, cgroup names). */
#include <errno.h>

#include "fuzz.h"
#include "macro.h"
#include "procmaps.h"

static void fuzz_maps_line(const char *s) {
        struct procmap m = {};
        int r;

        r = procmap_parse_line(s, &m);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r < 0)
                return;
        FUZZ_CHECK(m.start <= m.end);
        /* a path is never empty and holds no newline: both would break the
         * maps line it is written back into */
        if (m.path)
                FUZZ_CHECK(m.path[0] != '\0' && !strchr(m.path, '\n'));
        procmap_done(&m);
        FUZZ_CHECK(m.path == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = fuzz_strndup(data, size);
        _cleanup_free_ char *cgroup = NULL;
        uint64_t ticks;
        uint32_t uid;
        int r;

        fuzz_maps_line(s);

        r = procstat_parse_starttime(s, &ticks);
        FUZZ_CHECK(r == 0 || r == -EINVAL);

        r = procstatus_parse_uid(s, &uid);
        FUZZ_CHECK(r == 0 || r == -EINVAL);

        r = proccgroup_parse_v2(s, &cgroup);
        FUZZ_CHECK(r == 0 || r == -ENOENT || r == -ENOMEM);
        if (r == 0)
                FUZZ_CHECK(cgroup && !strchr(cgroup, '\n'));
        return 0;
}
