/* libFuzzer target: perf map lines, which any process can write to
 * /tmp/perf-PID.map. What the parser accepts must hold its documented
 * promises and read back the same when written out again. */
#include <errno.h>
#include <inttypes.h>

#include "fuzz.h"
#include "macro.h"
#include "perfmap.h"

/* Writes e the way node does (bare hex), parses that, and expects e again:
 * a parser that accepts a line must agree with the format it accepted. */
static void check_round_trip(const struct perfmap_entry *e) {
        _cleanup_free_ char *line = NULL;
        struct perfmap_entry again;

        if (asprintf(&line, "%" PRIx64 " %" PRIx64 " %s\n", e->start, e->size, e->name) < 0)
                abort();
        FUZZ_CHECK(perfmap_parse_line(line, &again) == 0);
        FUZZ_CHECK(again.start == e->start && again.size == e->size);
        FUZZ_CHECK(streq(again.name, e->name));
        perfmap_entry_done(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = fuzz_strndup(data, size);
        struct perfmap_entry e;
        uint64_t end;
        int r;

        r = perfmap_parse_line(s, &e);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r < 0)
                return 0;
        FUZZ_CHECK(e.size > 0);
        FUZZ_CHECK(!__builtin_add_overflow(e.start, e.size, &end));
        FUZZ_CHECK(e.name && e.name[0] != '\0' && e.name[0] != ' ' && !strchr(e.name, '\n'));
        FUZZ_CHECK(strlen(e.name) < strlen(s));
        check_round_trip(&e);
        perfmap_entry_done(&e);
        FUZZ_CHECK(e.name == NULL);
        return 0;
}
