/* Specification of profctl's views on answers of known content: the top
 * table's self and total by function, line and module, the caller/callee
 * tree with focus, hide and depth, the diff's normalisation, the series. */
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "profile.h"
#include "protocol.h"
#include "render.h"
#include "tests.h"
#include "views.h"

#define APP "/usr/bin/app"
#define LIBM "/usr/lib/x86_64-linux-gnu/libm.so.6"
#define KERNEL "[kernel.kallsyms]"

/* Collects what a writer printed; aborts when the stream can't be made. */
struct capture {
        char *text;
        size_t size;
        FILE *f;
};

static FILE *capture_start(struct capture *c) {
        *c = (struct capture) {};
        c->f = open_memstream(&c->text, &c->size);
        if (!c->f)
                abort();
        return c->f;
}

static char *capture_end(struct capture *c) {
        fclose(c->f);
        return c->text;
}

static struct profile_frame fr(const char *name, const char *module) {
        return (struct profile_frame) {
                .name = name,
                .module = module,
                .flags = streq(module, KERNEL) ? PROFILE_FRAME_KERNEL : 0,
        };
}

static struct profile_frame fr_line(const char *name, const char *module, const char *file, uint32_t line) {
        struct profile_frame f = fr(name, module);

        f.file = file;
        f.line = line;
        return f;
}

/* The fixture every test reads, 1000 samples:
 *   main;work;compute              500   (compute at compute.c:10)
 *   main;work                      100
 *   main;helper;work;compute       200   (compute at compute.c:12)
 *   main;helper                    150
 *   main;do_syscall_64 (kernel)     50
 * compute is in libm, the kernel frame in the kernel, the rest in the app. */
static profile *fixture(void) {
        profile *p = profile_new();
        struct profile_frame s1[] = { fr("main", APP), fr("work", APP), fr_line("compute", LIBM, "/src/compute.c", 10) };
        struct profile_frame s2[] = { fr("main", APP), fr("work", APP) };
        struct profile_frame s3[] = { fr("main", APP), fr("helper", APP), fr("work", APP),
                                      fr_line("compute", LIBM, "/src/compute.c", 12) };
        struct profile_frame s4[] = { fr("main", APP), fr("helper", APP) };
        struct profile_frame s5[] = { fr("main", APP), fr("do_syscall_64", KERNEL) };

        if (!p ||
            profile_add_stack(p, s1, ELEMENTSOF(s1), 500, NULL) < 0 ||
            profile_add_stack(p, s2, ELEMENTSOF(s2), 100, NULL) < 0 ||
            profile_add_stack(p, s3, ELEMENTSOF(s3), 200, NULL) < 0 ||
            profile_add_stack(p, s4, ELEMENTSOF(s4), 150, NULL) < 0 ||
            profile_add_stack(p, s5, ELEMENTSOF(s5), 50, NULL) < 0 ||
            profile_set_kind(p, "cpu", "samples") < 0)
                abort();
        /* 1970-01-01 00:01:40 .. 00:02:40 UTC; the tests print in UTC */
        p->from_ns = 100 * NSEC_PER_SEC;
        p->to_ns = 160 * NSEC_PER_SEC;
        return p;
}

/* ---- top table ---- */

/* Feeds p's stacks to a top table the way query's stream does. */
static top_table *table_of(const profile *p, TopBy by) {
        top_table *t = top_table_new(by);
        struct stack s = {};

        if (!t)
                abort();
        for (size_t i = 0; i < p->n_stacks; i++) {
                const struct profile_stack *st = &p->stacks[i];

                if (stack_reserve(&s, st->n_frames) < 0)
                        abort();
                for (size_t k = 0; k < st->n_frames; k++) {
                        const struct profile_frame *f = &p->frames[st->frames[k]];

                        if (by == TOP_BY_LINE && frame_name_with_line(f->name, f->file, f->line, &s.owned[k]) < 0)
                                abort();
                        s.frames[k] = (struct folded_frame) { .name = s.owned[k] ? s.owned[k] : f->name,
                                                              .kernel = f->flags & PROFILE_FRAME_KERNEL };
                        s.modules[k] = f->module;
                        s.n_frames = k + 1;
                }
                s.value = st->value;
                if (top_table_add(t, &s) < 0)
                        abort();
        }
        stack_done(&s);
        return t;
}

/* stack_parse() decodes through the profile's decoder: it names lines from
 * "file" and "line", and refuses what the profile refuses. */
static void test_stack_parse_names_lines_and_refuses_what_the_profile_refuses(void) {
        static const char *const bad[] = {
                "{\"type\":\"stack\",\"value\":1,\"frames\":[{\"name\":\"f\"}]}",
                "{\"type\":\"stack\",\"value\":1,\"frames\":[{\"name\":\"f\",\"kernel\":false,\"line\":\"7\"}]}",
                "{\"type\":\"stack\",\"value\":1,\"frames\":[{\"name\":\"f\",\"kernel\":false,\"address\":\"12\"}]}",
                "{\"type\":\"stack\",\"value\":1,\"frames\":[{\"name\":\"f\",\"kernel\":false,\"module\":5}]}",
                "{\"type\":\"stack\",\"value\":1,\"group\":3,\"frames\":[]}",
        };
        _cleanup_(stack_done) struct stack s = {};
        json_t *j;

        j = json_loads("{\"type\":\"stack\",\"value\":7,\"group\":\"app-1\",\"frames\":["
                       "{\"name\":\"main\",\"module\":\"/bin/app\",\"kernel\":false,"
                       "\"file\":\"/src/app.c\",\"line\":12},"
                       "{\"name\":\"[lost]\",\"kernel\":false}]}", 0, NULL);
        if (!j)
                abort();
        CHECK_INT_EQ(stack_parse(&s, j, true), 0);
        CHECK_INT_EQ(s.value, 7);
        CHECK_STR_EQ(s.group, "app-1");
        CHECK_INT_EQ(s.n_frames, 2);
        CHECK_STR_EQ(s.frames[0].name, "main (app.c:12)");
        CHECK_STR_EQ(s.modules[0], "/bin/app");
        CHECK_STR_EQ(s.frames[1].name, "[lost]");
        CHECK_STR_EQ(s.modules[1], "");
        json_decref(j);

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_profile_ profile *p = profile_new();

                j = json_loads(bad[i], 0, NULL);
                if (!j || !p)
                        abort();
                CHECK_INT_EQ(stack_parse(&s, j, false), -EBADMSG);
                CHECK_INT_EQ(profile_add_stack_line(p, j), -EBADMSG);
                json_decref(j);
        }
}

/* frame_shown_name() names a frame as stack_parse() names it in the line
 * stackline_append() writes of it: a fleet's table is made of the one and
 * profd's of the other. */
static void test_frame_shown_name_is_stack_parse_of_its_line(void) {
        const struct store_frame_out frames[] = {
                { .name = "main", .raw_name = "main", .module = "/bin/app", .file = "/src/app.c", .line = 12,
                  .has_address = true, .address = 0x1130, .resolved = true },
                { .name = "ns::run(int)", .raw_name = "_ZN2ns3runEi", .module = "/bin/app", .file = "lib.h",
                  .line = 0, .has_address = true, .resolved = true, .inlined = true },
                { .name = "app+0x99", .module = "/bin/app", .has_address = true, .address = 0x99 },
                { .name = "do_syscall_64", .module = KERNEL, .kernel = true, .has_address = true, .resolved = true,
                  .address = 0xffffffff81000100ULL },
                { .name = "[lost]", .module = "[lost]" },
        };
        struct store_stack_out so = { .frames = frames, .n_frames = ELEMENTSOF(frames), .value = 9 };

        for (int lines = 0; lines < 2; lines++)
                for (int raw = 0; raw < 2; raw++) {
                        _cleanup_(stack_done) struct stack want = {};
                        struct stackline_buf b = {};
                        json_t *j;

                        CHECK_INT_EQ(stackline_append(&b, &so, &(struct stack_style) { .raw_names = raw }), 0);
                        j = json_loadb(b.data, b.len, 0, NULL);
                        if (!j)
                                abort();
                        CHECK_INT_EQ(stack_parse(&want, j, lines), 0);
                        CHECK_INT_EQ(want.n_frames, ELEMENTSOF(frames));
                        for (size_t i = 0; i < want.n_frames; i++) {
                                _cleanup_free_ char *owned = NULL;
                                const char *name;

                                CHECK_INT_EQ(frame_shown_name(&frames[i], lines, raw, &name, &owned), 0);
                                CHECK_STR_EQ(name, want.frames[i].name);
                                CHECK_STR_EQ(frames[i].module, want.modules[i]);
                                CHECK_INT_EQ(frames[i].kernel, want.frames[i].kernel);
                        }
                        json_decref(j);
                        stackline_buf_done(&b);
                }
}

/* A stack added as the rows of its frames counts as the stack itself. */
static void test_table_add_funcs_is_table_add(void) {
        for (TopBy by = TOP_BY_FUNCTION; by <= TOP_BY_MODULE; by++) {
                _cleanup_top_table_ top_table *a = top_table_new(by), *b = top_table_new(by);
                struct folded_frame fr[] = { { .name = "main" }, { .name = "f" }, { .name = "g" }, { .name = "f" },
                                             { .name = "[lost]" }, { .name = "sys", .kernel = true } };
                const char *mods[] = { APP, APP, LIBM, APP, "", KERNEL };
                _cleanup_free_ struct top_row *ra = NULL, *rb = NULL;
                size_t na, nb;

                for (size_t n = 0; n <= ELEMENTSOF(fr); n++) {
                        struct stack st = { .value = 10 + n, .n_frames = n, .frames = fr, .modules = mods };
                        struct top_func *funcs[ELEMENTSOF(fr)];
                        struct func_key key;

                        CHECK_INT_EQ(top_table_add(a, &st), 0);
                        for (size_t i = 0; i < n; i++) {
                                key = top_table_key(b, fr[i].name, mods[i], fr[i].kernel);
                                CHECK_INT_EQ(top_table_func(b, &key, &funcs[i]), 0);
                        }
                        if (n == 0) {
                                key = top_table_key(b, "[unknown]", "", false);
                                CHECK_INT_EQ(top_table_func(b, &key, &funcs[0]), 0);
                        }
                        CHECK_INT_EQ(top_table_add_funcs(b, funcs, MAX(n, (size_t) 1), st.value), 0);
                }
                CHECK_INT_EQ(top_table_rows(a, false, &ra, &na), 0);
                CHECK_INT_EQ(top_table_rows(b, false, &rb, &nb), 0);
                CHECK_INT_EQ(na, nb);
                for (size_t i = 0; i < na && i < nb; i++) {
                        CHECK_STR_EQ(ra[i].name, rb[i].name);
                        CHECK_STR_EQ(ra[i].module, rb[i].module);
                        CHECK(ra[i].kernel == rb[i].kernel && ra[i].self == rb[i].self && ra[i].total == rb[i].total);
                }
        }
}

struct want_row {
        const char *name;
        uint64_t self, total;
};

static void check_rows(const top_table *t, bool children, const struct want_row *want, size_t n) {
        _cleanup_free_ struct top_row *rows = NULL;
        size_t got;

        CHECK_INT_EQ(top_table_rows(t, children, &rows, &got), 0);
        CHECK_INT_EQ(got, n);
        for (size_t i = 0; i < MIN(got, n); i++) {
                CHECK_STR_EQ(rows[i].name, want[i].name);
                CHECK_INT_EQ(rows[i].self, want[i].self);
                CHECK_INT_EQ(rows[i].total, want[i].total);
        }
}

static void test_table_by_function_self_and_total(void) {
        _cleanup_profile_ profile *p = fixture();
        _cleanup_top_table_ top_table *t = table_of(p, TOP_BY_FUNCTION);
        /* self: where the sample hit; total: every stack it is on, once */
        static const struct want_row by_self[] = {
                { "compute", 700, 700 },
                { "helper", 150, 350 },
                { "work", 100, 800 },
                { "do_syscall_64", 50, 50 },
                { "main", 0, 1000 },
        };
        static const struct want_row by_total[] = {
                { "main", 0, 1000 },
                { "work", 100, 800 },
                { "compute", 700, 700 },
                { "helper", 150, 350 },
                { "do_syscall_64", 50, 50 },
        };

        check_rows(t, false, by_self, ELEMENTSOF(by_self));
        check_rows(t, true, by_total, ELEMENTSOF(by_total));
}

static void test_table_by_line_splits_a_function_by_its_lines(void) {
        _cleanup_profile_ profile *p = fixture();
        _cleanup_top_table_ top_table *t = table_of(p, TOP_BY_LINE);
        static const struct want_row want[] = {
                { "compute (compute.c:10)", 500, 500 },
                { "compute (compute.c:12)", 200, 200 },
                { "helper", 150, 350 },
                { "work", 100, 800 },
                { "do_syscall_64", 50, 50 },
                { "main", 0, 1000 },
        };

        check_rows(t, false, want, ELEMENTSOF(want));
}

/* --by line of Python frames: profd answers a named one with its .py file
 * and line (common/protocol.h), so its rows are "qualname (file.py:line)"
 * as a native function's, from a local answer (stack_parse) as from a
 * fleet's (frame_shown_name); an unnamed one keeps its name. */
static void test_table_by_line_names_python_lines(void) {
#define PY(q, file, l) "{\"name\":\"" q "\",\"module\":\"" file "\",\"kernel\":false,\"resolved\":true," \
                       "\"address\":" #l ",\"build_id\":\"python-0123456789abcdef\",\"file\":\"" file "\"," \
                       "\"line\":" #l "}"
        static const char *const lines[] = {
                "{\"type\":\"stack\",\"value\":60,\"frames\":[{\"name\":\"main\",\"module\":\"/usr/bin/python3\","
                "\"kernel\":false}," PY("<module>", "/srv/app/main.py", 3) "," PY("Worker.run", "/srv/app/work.py", 41) "]}",
                "{\"type\":\"stack\",\"value\":30,\"frames\":[{\"name\":\"main\",\"module\":\"/usr/bin/python3\","
                "\"kernel\":false}," PY("<module>", "/srv/app/main.py", 3) "," PY("Worker.run", "/srv/app/work.py", 42) "]}",
                "{\"type\":\"stack\",\"value\":10,\"frames\":[{\"name\":\"main\",\"module\":\"/usr/bin/python3\","
                "\"kernel\":false},{\"name\":\"[python]+0x7f00\",\"module\":\"[python]\",\"kernel\":false,"
                "\"resolved\":false,\"address\":32512}]}",
        };
#undef PY
        static const struct want_row by_line[] = {
                { "Worker.run (work.py:41)", 60, 60 },
                { "Worker.run (work.py:42)", 30, 30 },
                { "[python]+0x7f00", 10, 10 },
                { "main", 0, 100 },
                { "<module> (main.py:3)", 0, 90 },
        };
        static const struct want_row by_function[] = {
                { "Worker.run", 90, 90 },
                { "[python]+0x7f00", 10, 10 },
                { "main", 0, 100 },
                { "<module>", 0, 90 },
        };
        _cleanup_top_table_ top_table *t = top_table_new(TOP_BY_LINE), *tf = top_table_new(TOP_BY_FUNCTION);
        _cleanup_(stack_done) struct stack s = {};
        _cleanup_free_ struct top_row *rows = NULL;
        const struct store_frame_out out = {
                .name = "Worker.run", .raw_name = "Worker.run", .module = "/srv/app/work.py",
                .file = "/srv/app/work.py", .build_id = "python-0123456789abcdef", .address = 41, .line = 41,
                .has_address = true, .resolved = true,
        };
        _cleanup_free_ char *owned = NULL;
        const char *shown;
        size_t n;

        if (!t || !tf)
                abort();
        for (size_t i = 0; i < ELEMENTSOF(lines); i++) {
                json_t *j = json_loads(lines[i], 0, NULL);

                if (!j)
                        abort();
                CHECK_INT_EQ(stack_parse(&s, j, true), 0);
                CHECK_INT_EQ(top_table_add(t, &s), 0);
                CHECK_INT_EQ(stack_parse(&s, j, false), 0);
                CHECK_INT_EQ(top_table_add(tf, &s), 0);
                json_decref(j);
        }
        check_rows(t, false, by_line, ELEMENTSOF(by_line));
        check_rows(tf, false, by_function, ELEMENTSOF(by_function));
        /* a row's module is the .py file */
        CHECK_INT_EQ(top_table_rows(t, false, &rows, &n), 0);
        if (n > 0)
                CHECK_STR_EQ(rows[0].module, "/srv/app/work.py");
        CHECK_INT_EQ(frame_shown_name(&out, true, false, &shown, &owned), 0);
        CHECK_STR_EQ(shown, "Worker.run (work.py:41)");
}

/* A fleet answer is encoded from frames as ClickHouse keeps them
 * (store_frame_out, through stackline_append) and read by the one frame
 * decoder: a Python frame is told apart there by its build_id or its
 * module alone, as in a local answer. */
static void test_python_frames_of_an_encoded_answer_are_flagged(void) {
        const struct store_frame_out frames[] = {
                { .name = "main", .raw_name = "main", .module = "/usr/bin/python3.11", .build_id = "aa11",
                  .address = 4096, .has_address = true, .resolved = true },
                { .name = "Worker.run", .raw_name = "Worker.run", .module = "/srv/app/work.py",
                  .file = "/srv/app/work.py", .build_id = "python-fedcba9876543210", .address = 41, .line = 41,
                  .has_address = true, .resolved = true },
                { .name = "[python]+0x7f00", .raw_name = "[python]+0x7f00", .module = "[python]",
                  .address = 0x7f00, .has_address = true },
                { .name = "do_syscall_64", .raw_name = "do_syscall_64", .module = "[kernel.kallsyms]",
                  .address = 0xffffffff81000000ULL, .has_address = true, .kernel = true, .resolved = true },
        };
        const struct store_stack_out so = { .frames = frames, .n_frames = ELEMENTSOF(frames), .value = 5 };
        const struct stack_style style = {};
        struct stackline_buf b = {};
        _cleanup_profile_ profile *p = profile_new();
        json_t *j;

        CHECK_INT_EQ(stackline_append(&b, &so, &style), 0);
        j = json_loadb(b.data, b.len, 0, NULL);
        CHECK(j);
        CHECK_INT_EQ(profile_add_stack_line(p, j), 0);
        json_decref(j);
        free(b.data);
        CHECK_INT_EQ(p->n_stacks, 1);
        if (p->n_stacks != 1 || p->stacks[0].n_frames != 4)
                return;
        {
                const struct profile_frame *f0 = &p->frames[p->stacks[0].frames[0]],
                                           *f1 = &p->frames[p->stacks[0].frames[1]],
                                           *f2 = &p->frames[p->stacks[0].frames[2]],
                                           *f3 = &p->frames[p->stacks[0].frames[3]];

                CHECK(!(f0->flags & PROFILE_FRAME_PYTHON));
                CHECK(f1->flags & PROFILE_FRAME_PYTHON);
                CHECK(!(f1->flags & PROFILE_FRAME_UNRESOLVED));
                CHECK_STR_EQ(f1->file, "/srv/app/work.py");
                CHECK_INT_EQ(f1->line, 41);
                CHECK((f2->flags & PROFILE_FRAME_PYTHON) && (f2->flags & PROFILE_FRAME_UNRESOLVED));
                CHECK(!(f3->flags & PROFILE_FRAME_PYTHON));
        }
}

static void test_table_by_module_counts_each_module_once_per_stack(void) {
        _cleanup_profile_ profile *p = fixture();
        _cleanup_top_table_ top_table *t = table_of(p, TOP_BY_MODULE);
        /* the app is on every stack (total 1000) but the leaf of only
         * main;work and main;helper (100 + 150) */
        static const struct want_row want[] = {
                { LIBM, 700, 700 },
                { APP, 250, 1000 },
                { KERNEL, 50, 50 },
        };

        check_rows(t, false, want, ELEMENTSOF(want));
}

static void test_table_recursion_counts_total_once(void) {
        _cleanup_top_table_ top_table *t = top_table_new(TOP_BY_FUNCTION);
        struct folded_frame frames[] = { { "main", false }, { "rec", false }, { "rec", false }, { "rec", false } };
        const char *modules[] = { APP, APP, APP, APP };
        struct stack s = { .value = 40, .n_frames = 4, .frames = frames, .modules = modules };
        static const struct want_row want[] = { { "rec", 40, 40 }, { "main", 0, 40 } };

        CHECK_INT_EQ(top_table_add(t, &s), 0);
        check_rows(t, false, want, ELEMENTSOF(want));
}

static void test_table_text_and_json(void) {
        _cleanup_profile_ profile *p = fixture();
        _cleanup_top_table_ top_table *t = table_of(p, TOP_BY_FUNCTION);
        struct top_table_info info = { .kind = "cpu", .total = 1000, .from_ns = p->from_ns, .to_ns = p->to_ns,
                                       .limit = 2 };
        struct capture c;
        _cleanup_free_ char *text = NULL, *json = NULL;

        CHECK_INT_EQ(top_table_write(t, capture_start(&c), &info), 0);
        text = capture_end(&c);
        CHECK_STR_EQ(text,
                     "1000 samples from 1970-01-01 00:01:40 to 1970-01-01 00:02:40 (1m)\n"
                     "\n"
                     " SELF%  TOTAL%  SELF  FUNCTION  MODULE\n"
                     " 70.0%   70.0%   700  compute   libm.so.6\n"
                     " 15.0%   35.0%   150  helper    app\n");

        info.children = true;
        CHECK_INT_EQ(top_table_write_json(t, capture_start(&c), &info), 0);
        json = capture_end(&c);
        CHECK_STR_EQ(json,
                     "{\"view\":\"table\",\"kind\":\"cpu\",\"unit\":\"samples\",\"by\":\"function\","
                     "\"total\":1000,\"from_ns\":100000000000,\"to_ns\":160000000000,\"children\":true,"
                     "\"rows\":[{\"name\":\"main\",\"module\":\"" APP "\",\"kernel\":false,\"self\":0,"
                     "\"total\":1000,\"self_pct\":0.0,\"total_pct\":100.0},"
                     "{\"name\":\"work\",\"module\":\"" APP "\",\"kernel\":false,\"self\":100,"
                     "\"total\":800,\"self_pct\":10.0,\"total_pct\":80.0}]}\n");
}

/* ---- tree ---- */

static char *tree_text(const profile *p, const char *focus, const char *hide, size_t max_depth, bool json) {
        regex_t focus_re, hide_re;
        struct tree_opts o = { .focus_text = focus, .max_depth = max_depth };
        view_tree *t = NULL;
        struct capture c;

        if (focus) {
                if (regcomp(&focus_re, focus, REG_EXTENDED | REG_NOSUB) != 0)
                        abort();
                o.focus = &focus_re;
        }
        if (hide) {
                if (regcomp(&hide_re, hide, REG_EXTENDED | REG_NOSUB) != 0)
                        abort();
                o.hide = &hide_re;
        }
        CHECK_INT_EQ(view_tree_build(p, &o, &t), 0);
        capture_start(&c);
        CHECK_INT_EQ(json ? view_tree_write_json(t, c.f) : view_tree_write(t, c.f), 0);
        view_tree_free(t);
        if (focus)
                regfree(&focus_re);
        if (hide)
                regfree(&hide_re);
        return capture_end(&c);
}

#define HEADER "1000 samples from 1970-01-01 00:01:40 to 1970-01-01 00:02:40 (1m)\n"

static void test_tree_without_focus_is_top_down(void) {
        _cleanup_profile_ profile *p = fixture();
        _cleanup_free_ char *s = tree_text(p, NULL, NULL, 0, false);

        CHECK_STR_EQ(s,
                     HEADER
                     "\n"
                     " TOTAL%    SELF%  TOTAL  FUNCTION\n"
                     " 100.0%     0.0%   1000  main\n"
                     "  60.0%    10.0%    600    work\n"
                     "  50.0%    50.0%    500      compute\n"
                     "  35.0%    15.0%    350    helper\n"
                     "  20.0%     0.0%    200      work\n"
                     "  20.0%    20.0%    200        compute\n"
                     "   5.0%     5.0%     50    do_syscall_64\n");
}

static void test_tree_focus_shows_callers_above_and_callees_below(void) {
        _cleanup_profile_ profile *p = fixture();
        _cleanup_free_ char *s = tree_text(p, "^work$", NULL, 0, false);

        /* stacks with work: 500 + 100 + 200; main called it directly in the
         * first two, through helper in the third */
        CHECK_STR_EQ(s,
                     HEADER
                     "focus '^work$': 800 samples (80.0%)\n"
                     "\n"
                     "callers (each function is called by those indented below it):\n"
                     " TOTAL%  TOTAL  FUNCTION\n"
                     "  80.0%    800  work\n"
                     "  60.0%    600    main\n"
                     "  20.0%    200    helper\n"
                     "  20.0%    200      main\n"
                     "\n"
                     "callees (each function calls those indented below it):\n"
                     " TOTAL%    SELF%  TOTAL  FUNCTION\n"
                     "  80.0%    10.0%    800  work\n"
                     "  70.0%    70.0%    700    compute\n");
}

static void test_tree_hide_drops_frames_and_keeps_samples(void) {
        _cleanup_profile_ profile *p = fixture();
        _cleanup_free_ char *s = tree_text(p, NULL, "^helper$", 0, false);

        /* main;helper;work;compute becomes main;work;compute, main;helper
         * becomes main: its 150 are main's own now */
        CHECK_STR_EQ(s,
                     HEADER
                     "\n"
                     " TOTAL%    SELF%  TOTAL  FUNCTION\n"
                     " 100.0%    15.0%   1000  main\n"
                     "  80.0%    10.0%    800    work\n"
                     "  70.0%    70.0%    700      compute\n"
                     "   5.0%     5.0%     50    do_syscall_64\n");
}

static void test_tree_max_depth_cuts_levels_and_keeps_totals(void) {
        _cleanup_profile_ profile *p = fixture();
        _cleanup_free_ char *s = tree_text(p, NULL, NULL, 2, false);

        CHECK_STR_EQ(s,
                     HEADER
                     "\n"
                     " TOTAL%    SELF%  TOTAL  FUNCTION\n"
                     " 100.0%     0.0%   1000  main\n"
                     "  60.0%    10.0%    600    work\n"
                     "  35.0%    15.0%    350    helper\n"
                     "   5.0%     5.0%     50    do_syscall_64\n");
}

static void test_tree_focus_json(void) {
        _cleanup_profile_ profile *p = fixture();
        _cleanup_free_ char *s = tree_text(p, "comp", NULL, 0, true);

        CHECK_STR_EQ(s,
                     "{\"view\":\"tree\",\"kind\":\"cpu\",\"unit\":\"samples\",\"total\":1000,"
                     "\"from_ns\":100000000000,\"to_ns\":160000000000,\"focus\":\"comp\",\"matched\":700,"
                     "\"callers\":[{\"name\":\"compute\",\"module\":\"" LIBM "\",\"kernel\":false,\"total\":700,"
                     "\"children\":[{\"name\":\"work\",\"module\":\"" APP "\",\"kernel\":false,\"total\":700,"
                     "\"children\":[{\"name\":\"main\",\"module\":\"" APP "\",\"kernel\":false,\"total\":500,"
                     "\"children\":[]},{\"name\":\"helper\",\"module\":\"" APP "\",\"kernel\":false,\"total\":200,"
                     "\"children\":[{\"name\":\"main\",\"module\":\"" APP "\",\"kernel\":false,\"total\":200,"
                     "\"children\":[]}]}]}]}],"
                     "\"callees\":[{\"name\":\"compute\",\"module\":\"" LIBM "\",\"kernel\":false,\"total\":700,"
                     "\"self\":700,\"children\":[]}]}\n");
}

static void test_tree_focus_matching_nothing(void) {
        _cleanup_profile_ profile *p = fixture();
        regex_t re;
        struct tree_opts o = { .focus = &re, .focus_text = "nothing" };
        view_tree *t = NULL;

        CHECK_INT_EQ(regcomp(&re, "nothing", REG_EXTENDED | REG_NOSUB), 0);
        CHECK_INT_EQ(view_tree_build(p, &o, &t), 0);
        CHECK_INT_EQ(view_tree_matched(t), 0);
        view_tree_free(t);
        regfree(&re);
}

/* ---- diff ---- */

/* baseline 400 samples: main;work 100, main;idle 300
 * current 1000 samples: main;work 600, main;idle 200, main;new 200 */
static void diff_fixtures(profile **ret_base, profile **ret_cur) {
        profile *b = profile_new(), *c = profile_new();
        struct profile_frame work[] = { fr("main", APP), fr("work", APP) };
        struct profile_frame idle[] = { fr("main", APP), fr("idle", APP) };
        struct profile_frame nw[] = { fr("main", APP), fr("new", APP) };

        if (!b || !c ||
            profile_add_stack(b, work, 2, 100, NULL) < 0 || profile_add_stack(b, idle, 2, 300, NULL) < 0 ||
            profile_add_stack(c, work, 2, 600, NULL) < 0 || profile_add_stack(c, idle, 2, 200, NULL) < 0 ||
            profile_add_stack(c, nw, 2, 200, NULL) < 0)
                abort();
        b->from_ns = 0;
        b->to_ns = 60 * NSEC_PER_SEC;
        c->from_ns = 100 * NSEC_PER_SEC;
        c->to_ns = 160 * NSEC_PER_SEC;
        *ret_base = b;
        *ret_cur = c;
}

static void test_diff_folded_scales_the_baseline_to_the_current_total(void) {
        _cleanup_profile_ profile *b = NULL, *c = NULL;
        struct diff_opts o = {};
        struct capture cap;
        _cleanup_free_ char *s = NULL;

        diff_fixtures(&b, &c);
        CHECK_INT_EQ(diff_write_folded(capture_start(&cap), b, c, &o), 0);
        s = capture_end(&cap);
        /* x 1000/400: 300 -> 750, 100 -> 250; absent is 0 */
        CHECK_STR_EQ(s,
                     "main;idle 750 200\n"
                     "main;new 0 200\n"
                     "main;work 250 600\n");
}

static void test_diff_table_sorts_by_change_of_share(void) {
        _cleanup_profile_ profile *b = NULL, *c = NULL;
        struct diff_opts o = {};
        struct capture cap;
        _cleanup_free_ char *s = NULL, *j = NULL;

        diff_fixtures(&b, &c);
        CHECK_INT_EQ(diff_table_write(capture_start(&cap), b, c, &o), 0);
        s = capture_end(&cap);
        /* idle 75% -> 20%, work 25% -> 60%, new 0 -> 20%; main, never a leaf,
         * has no row */
        CHECK_STR_EQ(s,
                     "baseline: 400 samples from 1970-01-01 00:00:00 to 1970-01-01 00:01:00 (1m)\n"
                     "current:  1000 samples from 1970-01-01 00:01:40 to 1970-01-01 00:02:40 (1m)\n"
                     "shares of SELF (where the sample hit); DELTA in percentage points\n"
                     "\n"
                     " BASE%    CUR%    DELTA  FUNCTION  MODULE\n"
                     " 75.0%   20.0%    -55.0  idle      app\n"
                     " 25.0%   60.0%    +35.0  work      app\n"
                     "  0.0%   20.0%    +20.0  new       app\n");

        o.children = true;
        o.limit = 1;
        CHECK_INT_EQ(diff_table_write_json(capture_start(&cap), b, c, &o), 0);
        j = capture_end(&cap);
        /* with children main is on every stack of both: no change; idle still leads */
        CHECK_STR_EQ(j,
                     "{\"view\":\"diff-table\",\"kind\":\"cpu\",\"unit\":\"samples\","
                     "\"baseline\":{\"total\":400,\"from_ns\":0,\"to_ns\":60000000000},"
                     "\"current\":{\"total\":1000,\"from_ns\":100000000000,\"to_ns\":160000000000},"
                     "\"by\":\"function\",\"children\":true,"
                     "\"rows\":[{\"name\":\"idle\",\"module\":\"" APP "\",\"kernel\":false,\"baseline\":300,"
                     "\"current\":200,\"baseline_pct\":75.0,\"current_pct\":20.0,\"delta_pct\":-55.0}]}\n");
}

static void test_diff_json_has_both_counts(void) {
        _cleanup_profile_ profile *b = NULL, *c = NULL;
        struct diff_opts o = {};
        struct capture cap;
        _cleanup_free_ char *s = NULL;

        diff_fixtures(&b, &c);
        CHECK_INT_EQ(diff_write_json(capture_start(&cap), b, c, &o), 0);
        s = capture_end(&cap);
        CHECK(strstr(s, "{\"frames\":[{\"name\":\"main\",\"module\":\"" APP "\",\"kernel\":false},"
                        "{\"name\":\"work\",\"module\":\"" APP "\",\"kernel\":false}],"
                        "\"baseline\":100,\"current\":600,\"baseline_scaled\":250}") != NULL);
        CHECK(strstr(s, "\"baseline\":0,\"current\":200,\"baseline_scaled\":0}") != NULL);
}

/* ---- series ---- */

static void test_series_fills_gaps_and_scales_bars(void) {
        struct series_point points[] = {
                { 100 * NSEC_PER_SEC, 20, 0 },
                { 102 * NSEC_PER_SEC, 40, 0 },
                { 103 * NSEC_PER_SEC, 1, 0 },
        };
        struct series s = {
                .kind = (char *) "cpu", .unit = (char *) "samples", .step_ns = NSEC_PER_SEC, .total = 61,
                .from_ns = 100 * NSEC_PER_SEC, .to_ns = 104 * NSEC_PER_SEC, .points = points, .n_points = 3,
        };
        struct capture cap;
        _cleanup_free_ char *text = NULL;

        CHECK_INT_EQ(series_write(capture_start(&cap), &s), 0);
        text = capture_end(&cap);
        /* 40 is the longest bar (40 marks), 20 half of it; 1 still shows */
        CHECK_STR_EQ(text,
                     "samples/s per 1s step, on-CPU samples from 1970-01-01 00:01:40 to 1970-01-01 00:01:44\n"
                     "\n"
                     "TIME                    SAMPLES/S\n"
                     "1970-01-01 00:01:40          20.0  ####################\n"
                     "1970-01-01 00:01:41           0.0  \n"
                     "1970-01-01 00:01:42          40.0  ########################################\n"
                     "1970-01-01 00:01:43           1.0  #\n");
}

/* A capture's event is a line after the step of its trigger; one whose
 * trigger is before the window (what it pins overlaps it) comes first and
 * says so; --json lists them as profd sent them, but their type. */
static void test_series_marks_captures(void) {
        struct series_point points[] = {
                { 100 * NSEC_PER_SEC, 20, 0 },
                { 102 * NSEC_PER_SEC, 40, 0 },
        };
        struct series s = {
                .kind = (char *) "cpu", .unit = (char *) "samples", .step_ns = NSEC_PER_SEC, .total = 60,
                .from_ns = 100 * NSEC_PER_SEC, .to_ns = 103 * NSEC_PER_SEC, .points = points, .n_points = 2,
                .events = json_loads("[{\"type\":\"event\",\"kind\":\"capture\",\"id\":1,\"cause\":\"oom\","
                                     "\"trigger_ns\":99000000000,\"from_ns\":69000000000,\"to_ns\":101000000000,"
                                     "\"state\":\"pinned\"},"
                                     "{\"type\":\"event\",\"kind\":\"capture\",\"id\":2,"
                                     "\"cause\":\"psi:cpu.some.avg10>50\",\"trigger_ns\":101500000000,"
                                     "\"from_ns\":71500000000,\"to_ns\":131500000000,\"state\":\"active\"}]",
                                     0, NULL),
        };
        struct capture cap;
        _cleanup_free_ char *text = NULL, *json = NULL;

        CHECK(s.events);
        CHECK_INT_EQ(series_write(capture_start(&cap), &s), 0);
        text = capture_end(&cap);
        CHECK_STR_EQ(text,
                     "samples/s per 1s step, on-CPU samples from 1970-01-01 00:01:40 to 1970-01-01 00:01:43\n"
                     "\n"
                     "TIME                    SAMPLES/S\n"
                     "capture 1 (oom) at 1970-01-01 00:01:39, outside the window (what it pins overlaps it)\n"
                     "1970-01-01 00:01:40          20.0  ####################\n"
                     "1970-01-01 00:01:41           0.0  \n"
                     "capture 2 (psi:cpu.some.avg10>50) at 1970-01-01 00:01:41\n"
                     "1970-01-01 00:01:42          40.0  ########################################\n");
        CHECK_INT_EQ(series_write_json(capture_start(&cap), &s), 0);
        json = capture_end(&cap);
        CHECK(strstr(json, ",\"events\":[{\"kind\":\"capture\",\"id\":1,\"cause\":\"oom\",\"trigger_ns\":99000000000,"
                           "\"from_ns\":69000000000,\"to_ns\":101000000000,\"state\":\"pinned\"},{\"kind\":"));
        json_decref(s.events);
}

static void test_series_offcpu_is_ms_per_second(void) {
        struct series_point points[] = { { 0, 500 * NSEC_PER_MSEC, 0 } };
        struct series s = {
                .kind = (char *) "offcpu", .unit = (char *) "ns", .step_ns = 2 * NSEC_PER_SEC,
                .total = 500 * NSEC_PER_MSEC, .from_ns = 0, .to_ns = 2 * NSEC_PER_SEC, .points = points, .n_points = 1,
        };
        struct capture cap;
        _cleanup_free_ char *json = NULL;

        /* 500 ms blocked in a 2 s step: 250 ms per second */
        CHECK_INT_EQ(series_write_json(capture_start(&cap), &s), 0);
        json = capture_end(&cap);
        CHECK_STR_EQ(json,
                     "{\"view\":\"series\",\"kind\":\"offcpu\",\"unit\":\"ns\",\"rate_unit\":\"ms/s\","
                     "\"step_ns\":2000000000,\"total\":500000000,\"from_ns\":0,\"to_ns\":2000000000,"
                     "\"points\":[{\"t_ns\":0,\"value\":500000000,\"rate\":250.0}],\"events\":[]}\n");
}

/* Each step says which share of it had complete stacks: a drop shows when.
 * The text and the JSON round the same way: 36 of 64 (exactly 56.25%) is
 * 56.3 in both. */
static void test_series_shows_the_complete_share_per_step(void) {
        struct series_point points[] = {
                { 100 * NSEC_PER_SEC, 20, 20 },
                { 102 * NSEC_PER_SEC, 40, 10 },
                { 103 * NSEC_PER_SEC, 64, 36 },
        };
        struct series s = {
                .kind = (char *) "cpu", .unit = (char *) "samples", .step_ns = NSEC_PER_SEC, .total = 124,
                .from_ns = 100 * NSEC_PER_SEC, .to_ns = 104 * NSEC_PER_SEC, .points = points, .n_points = 3,
                .have_complete = true,
        };
        struct capture cap;
        _cleanup_free_ char *text = NULL, *json = NULL;

        CHECK_INT_EQ(series_write(capture_start(&cap), &s), 0);
        text = capture_end(&cap);
        CHECK_STR_EQ(text,
                     "samples/s per 1s step, on-CPU samples from 1970-01-01 00:01:40 to 1970-01-01 00:01:44\n"
                     "\n"
                     "TIME                    SAMPLES/S  COMPLETE\n"
                     "1970-01-01 00:01:40          20.0    100.0%  #############\n"
                     "1970-01-01 00:01:41           0.0         -  \n"
                     "1970-01-01 00:01:42          40.0     25.0%  #########################\n"
                     "1970-01-01 00:01:43          64.0     56.3%  ########################################\n");
        CHECK_INT_EQ(series_write_json(capture_start(&cap), &s), 0);
        json = capture_end(&cap);
        CHECK(strstr(json, "{\"t_ns\":102000000000,\"value\":40,\"rate\":40.0,\"complete\":10,"
                           "\"complete_pct\":25.0}") != NULL);
        CHECK(strstr(json, "{\"t_ns\":103000000000,\"value\":64,\"rate\":64.0,\"complete\":36,"
                           "\"complete_pct\":56.3}") != NULL);
}

/* --quality: every share with its weight, every reason, the losses. */
static void test_quality_report_lists_every_reason(void) {
        struct quality q = { .total = 1000, .complete = 900, .unknown = 20, .unresolved = 30 };
        struct capture cap;
        _cleanup_free_ char *text = NULL;

        q.truncated[QUALITY_TRUNC_NO_TABLE] = 50;
        q.truncated[QUALITY_TRUNC_DEPTH] = 30;
        q.unresolved_by[QUALITY_UNRES_NO_SYMBOLS] = 30;
        q.lost[QUALITY_LOST_MAP_FULL] = 7;
        CHECK_INT_EQ(quality_write_report(capture_start(&cap), &q, "cpu", "samples", 0, 10 * NSEC_PER_SEC), 0);
        text = capture_end(&cap);
        CHECK(strstr(text, "quality of 1000 on-CPU samples from 1970-01-01 00:00:00 to 1970-01-01 00:00:10\n"
                           "complete stacks                             90.0%  900\n"
                           "truncated                                    8.0%  80\n"
                           "  no table yet                               5.0%  50\n") != NULL);
        CHECK(strstr(text, "  depth                                      3.0%  30\n") != NULL);
        CHECK(strstr(text, "end not recorded                             2.0%  20\n") != NULL);
        CHECK(strstr(text, "  no symbols                                 3.0%  30\n") != NULL);
        CHECK(strstr(text, "  map full                                      7\n") != NULL);
}

int main(void) {
        /* the text views print local time: pin it */
        setenv("TZ", "UTC", 1);
        test_series_shows_the_complete_share_per_step();
        test_quality_report_lists_every_reason();

        test_stack_parse_names_lines_and_refuses_what_the_profile_refuses();
        test_frame_shown_name_is_stack_parse_of_its_line();
        test_table_add_funcs_is_table_add();
        test_table_by_function_self_and_total();
        test_table_by_line_splits_a_function_by_its_lines();
        test_table_by_line_names_python_lines();
        test_python_frames_of_an_encoded_answer_are_flagged();
        test_table_by_module_counts_each_module_once_per_stack();
        test_table_recursion_counts_total_once();
        test_table_text_and_json();
        test_tree_without_focus_is_top_down();
        test_tree_focus_shows_callers_above_and_callees_below();
        test_tree_hide_drops_frames_and_keeps_samples();
        test_tree_max_depth_cuts_levels_and_keeps_totals();
        test_tree_focus_json();
        test_tree_focus_matching_nothing();
        test_diff_folded_scales_the_baseline_to_the_current_total();
        test_diff_table_sorts_by_change_of_share();
        test_diff_json_has_both_counts();
        test_series_fills_gaps_and_scales_bars();
        test_series_offcpu_is_ms_per_second();
        test_series_marks_captures();
        TESTS_DONE();
}
