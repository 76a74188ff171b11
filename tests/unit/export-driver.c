/* Test driver for the exports: reads a query answer as profd sends it (stack
 * lines, then the end line) and writes it as an SVG flame graph or a pprof
 * profile, so tests/unit/test_flame.py can check them without a daemon.
 *
 *   export-driver svg [WIDTH [MIN_WIDTH]] < answer.jsonl
 *   export-driver icicle < answer.jsonl
 *   export-driver diff BASELINE.jsonl < answer.jsonl
 *   export-driver pprof < answer.jsonl */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "pprof.h"
#include "profile.h"
#include "util.h"

static int load(FILE *in, profile **ret) {
        _cleanup_profile_ profile *p = profile_new();
        char *line = NULL;
        size_t size = 0;
        int r = 0;

        if (!p)
                return -ENOMEM;
        while (getline(&line, &size, in) > 0) {
                json_error_t e;
                json_t *j = json_loads(line, 0, &e);
                const char *type = json_string_value(json_object_get(j, "type"));

                if (!j) {
                        fprintf(stderr, "bad input line: %s", line);
                        r = -EINVAL;
                } else if (streq(type, "stack"))
                        r = profile_add_stack_line(p, j);
                else if (streq(type, "end"))
                        r = profile_set_end(p, j);
                json_decref(j);
                if (r < 0)
                        break;
        }
        free(line);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

int main(int argc, char **argv) {
        _cleanup_profile_ profile *p = NULL, *base = NULL;
        struct flame_opts o = {};
        int r;

        if (argc < 2)
                return 2;
        r = load(stdin, &p);
        if (r < 0)
                return 1;
        if (streq(argv[1], "svg")) {
                if (argc > 2)
                        o.width = (unsigned) atoi(argv[2]);
                if (argc > 3)
                        o.min_width = atof(argv[3]);
                r = flame_svg_write(stdout, p, &o);
        } else if (streq(argv[1], "icicle")) {
                o.icicle = true;
                o.title = "icicle <&> \"test\"";
                r = flame_svg_write(stdout, p, &o);
        } else if (streq(argv[1], "diff") && argc > 2) {
                _cleanup_fclose_ FILE *f = fopen(argv[2], "re");

                if (!f || load(f, &base) < 0)
                        return 1;
                r = flame_svg_write_diff(stdout, base, p, &o);
        } else if (streq(argv[1], "pprof"))
                r = pprof_write(stdout, p);
        else
                return 2;
        if (r < 0) {
                fprintf(stderr, "export-driver: %s\n", strerror(-r));
                return 1;
        }
        return 0;
}
