/* Specification of the in-memory answer model (client/profile.c): frames
 * are stored once, strings are the profile's own, profd's lines are checked. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "profile.h"
#include "tests.h"

static json_t *parse(const char *text) {
        json_error_t e;
        json_t *j = json_loads(text, 0, &e);

        if (!j) {
                fprintf(stderr, "bad fixture: %s: %s\n", e.text, text);
                abort();
        }
        return j;
}

static int add_line(profile *p, const char *text) {
        json_t *j = parse(text);
        int r = profile_add_stack_line(p, j);

        json_decref(j);
        return r;
}

static int set_end(profile *p, const char *text) {
        json_t *j = parse(text);
        int r = profile_set_end(p, j);

        json_decref(j);
        return r;
}

static void test_equal_frames_are_stored_once(void) {
        _cleanup_profile_ profile *p = profile_new();

        CHECK(p);
        CHECK_INT_EQ(add_line(p, "{\"type\":\"stack\",\"value\":3,\"frames\":["
                                 "{\"name\":\"main\",\"module\":\"/usr/bin/app\",\"kernel\":false,\"resolved\":true},"
                                 "{\"name\":\"work\",\"module\":\"/usr/bin/app\",\"kernel\":false,\"resolved\":true}]}"), 0);
        CHECK_INT_EQ(add_line(p, "{\"type\":\"stack\",\"value\":4,\"frames\":["
                                 "{\"name\":\"main\",\"module\":\"/usr/bin/app\",\"kernel\":false,\"resolved\":true},"
                                 "{\"name\":\"rest\",\"module\":\"/usr/bin/app\",\"kernel\":false,\"resolved\":true}]}"), 0);
        CHECK_INT_EQ(p->n_stacks, 2);
        CHECK_INT_EQ(p->n_frames, 3);
        CHECK_INT_EQ(p->total, 7);
        CHECK_INT_EQ(p->stacks[0].value, 3);
        CHECK_INT_EQ(p->stacks[0].n_frames, 2);
        CHECK_INT_EQ(p->stacks[1].n_frames, 2);
        /* "main" of both stacks is one frame */
        CHECK_INT_EQ(p->stacks[0].frames[0], p->stacks[1].frames[0]);
        CHECK(p->stacks[0].frames[1] != p->stacks[1].frames[1]);
        CHECK_STR_EQ(p->frames[p->stacks[1].frames[1]].name, "rest");
        /* the same text is one copy */
        CHECK(p->frames[0].module == p->frames[1].module);
        CHECK_STR_EQ(p->stacks[0].group, "");
}

static void test_frames_differing_in_any_field_are_distinct(void) {
        _cleanup_profile_ profile *p = profile_new();
        struct profile_frame base = { .name = "f", .module = "/m", .build_id = "ab", .file = "f.c",
                                      .line = 10, .address = 0x1000 };
        struct profile_frame frames[8];

        for (size_t i = 0; i < ELEMENTSOF(frames); i++)
                frames[i] = base;
        frames[1].name = "g";
        frames[2].module = "/n";
        frames[3].build_id = "cd";
        frames[4].file = "g.c";
        frames[5].line = 11;
        frames[6].address = 0x1001;
        frames[7].flags = PROFILE_FRAME_INLINED;

        CHECK_INT_EQ(profile_add_stack(p, frames, ELEMENTSOF(frames), 1, NULL), 0);
        CHECK_INT_EQ(p->n_frames, 8);
        /* and the same fields again intern to the same indexes */
        CHECK_INT_EQ(profile_add_stack(p, frames, ELEMENTSOF(frames), 2, "g"), 0);
        CHECK_INT_EQ(p->n_frames, 8);
        for (size_t i = 0; i < ELEMENTSOF(frames); i++)
                CHECK_INT_EQ(p->stacks[0].frames[i], p->stacks[1].frames[i]);
        CHECK_STR_EQ(p->stacks[1].group, "g");
        CHECK_INT_EQ(p->total, 3);
}

static void test_strings_are_copied(void) {
        _cleanup_profile_ profile *p = profile_new();
        char name[] = "main", module[] = "/usr/bin/app";
        struct profile_frame f = { .name = name, .module = module };

        CHECK_INT_EQ(profile_add_stack(p, &f, 1, 1, NULL), 0);
        name[0] = 'X';
        module[0] = 'X';
        CHECK_STR_EQ(p->frames[0].name, "main");
        CHECK_STR_EQ(p->frames[0].module, "/usr/bin/app");
        /* absent strings are "", raw_name falls back to name */
        CHECK_STR_EQ(p->frames[0].raw_name, "main");
        CHECK_STR_EQ(p->frames[0].file, "");
        CHECK_STR_EQ(p->frames[0].build_id, "");
}

static void test_all_frame_fields_are_read(void) {
        _cleanup_profile_ profile *p = profile_new();
        const struct profile_frame *f;

        CHECK_INT_EQ(add_line(p, "{\"type\":\"stack\",\"value\":5,\"group\":\"app-100\",\"frames\":["
                                 "{\"name\":\"ns::f()\",\"raw_name\":\"_ZN2ns1fEv\",\"module\":\"/usr/bin/app\","
                                 "\"build_id\":\"00ff\",\"file\":\"/src/f.cc\",\"line\":42,\"address\":4096,"
                                 "\"kernel\":false,\"resolved\":true},"
                                 "{\"name\":\"inl\",\"module\":\"/usr/bin/app\",\"kernel\":false,\"resolved\":true,\"inlined\":true},"
                                 "{\"name\":\"[jit]+0x10\",\"module\":\"[jit]\",\"kernel\":false,\"resolved\":false,\"jit\":true},"
                                 "{\"name\":\"do_syscall_64\",\"module\":\"[kernel.kallsyms]\",\"address\":-2147483648,"
                                 "\"kernel\":true,\"resolved\":true},"
                                 "{\"name\":\"[lost]\",\"module\":\"[lost]\",\"kernel\":true,\"resolved\":false}]}"), 0);
        CHECK_INT_EQ(p->n_frames, 5);
        CHECK_STR_EQ(p->stacks[0].group, "app-100");

        f = &p->frames[p->stacks[0].frames[0]];
        CHECK_STR_EQ(f->name, "ns::f()");
        CHECK_STR_EQ(f->raw_name, "_ZN2ns1fEv");
        CHECK_STR_EQ(f->build_id, "00ff");
        CHECK_STR_EQ(f->file, "/src/f.cc");
        CHECK_INT_EQ(f->line, 42);
        CHECK_INT_EQ(f->address, 4096);
        CHECK_INT_EQ(f->flags, 0);

        CHECK_INT_EQ(p->frames[p->stacks[0].frames[1]].flags, PROFILE_FRAME_INLINED);
        CHECK_INT_EQ(p->frames[p->stacks[0].frames[1]].address, 0);
        CHECK_INT_EQ(p->frames[p->stacks[0].frames[2]].flags, PROFILE_FRAME_JIT | PROFILE_FRAME_UNRESOLVED);
        f = &p->frames[p->stacks[0].frames[3]];
        CHECK_INT_EQ(f->flags, PROFILE_FRAME_KERNEL);
        CHECK(f->address == 0xffffffff80000000ULL);
        CHECK_INT_EQ(p->frames[p->stacks[0].frames[4]].flags,
                     PROFILE_FRAME_KERNEL | PROFILE_FRAME_UNRESOLVED | PROFILE_FRAME_LOST);
}

static void test_stack_without_frames_keeps_its_value(void) {
        _cleanup_profile_ profile *p = profile_new();

        CHECK_INT_EQ(add_line(p, "{\"type\":\"stack\",\"value\":9,\"frames\":[]}"), 0);
        CHECK_INT_EQ(p->n_stacks, 1);
        CHECK_INT_EQ(p->stacks[0].n_frames, 0);
        CHECK_INT_EQ(p->total, 9);
}

static void test_malformed_lines_are_rejected(void) {
        static const char *const bad[] = {
                "{\"type\":\"stack\",\"frames\":[]}",
                "{\"type\":\"stack\",\"value\":-1,\"frames\":[]}",
                "{\"type\":\"stack\",\"value\":1}",
                "{\"type\":\"stack\",\"value\":1,\"frames\":[1]}",
                "{\"type\":\"stack\",\"value\":1,\"frames\":[{\"module\":\"m\",\"kernel\":false}]}",
                "{\"type\":\"stack\",\"value\":1,\"frames\":[{\"name\":\"f\"}]}",
                "{\"type\":\"stack\",\"value\":1,\"frames\":[{\"name\":\"f\",\"kernel\":false,\"line\":\"7\"}]}",
                "{\"type\":\"stack\",\"value\":1,\"frames\":[{\"name\":\"f\",\"kernel\":false,\"line\":4294967296}]}",
                "{\"type\":\"stack\",\"value\":1,\"frames\":[{\"name\":\"f\",\"kernel\":false,\"address\":\"12\"}]}",
                "{\"type\":\"stack\",\"value\":1,\"frames\":[{\"name\":\"f\",\"kernel\":false,\"address\":\"0x12g\"}]}",
                "{\"type\":\"stack\",\"value\":1,\"frames\":[{\"name\":\"f\",\"kernel\":false,\"address\":1.5}]}",
                "{\"type\":\"stack\",\"value\":1,\"frames\":[{\"name\":\"f\",\"kernel\":false,\"inlined\":1}]}",
                "{\"type\":\"stack\",\"value\":1,\"frames\":[{\"name\":\"f\",\"kernel\":false,\"build_id\":5}]}",
                "{\"type\":\"stack\",\"value\":1,\"group\":3,\"frames\":[]}",
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_profile_ profile *p = profile_new();

                if (add_line(p, bad[i]) != -EBADMSG) {
                        fprintf(stderr, "accepted: %s\n", bad[i]);
                        tests_failed++;
                }
                CHECK_INT_EQ(p->n_stacks, 0);
                CHECK_INT_EQ(p->total, 0);
        }
}

static void test_values_that_overflow_are_rejected(void) {
        _cleanup_profile_ profile *p = profile_new();

        CHECK_INT_EQ(add_line(p, "{\"type\":\"stack\",\"value\":9223372036854775807,\"frames\":[]}"), 0);
        CHECK_INT_EQ(add_line(p, "{\"type\":\"stack\",\"value\":9223372036854775807,\"frames\":[]}"), 0);
        CHECK_INT_EQ(add_line(p, "{\"type\":\"stack\",\"value\":2,\"frames\":[]}"), -EBADMSG);
        CHECK_INT_EQ(p->n_stacks, 2);
}

static void test_end_line_sets_window_and_checks_totals(void) {
        _cleanup_profile_ profile *p = profile_new();

        CHECK_STR_EQ(p->kind, "cpu");
        CHECK_STR_EQ(p->unit, "samples");
        CHECK_INT_EQ(p->period_ns, 0);
        CHECK_INT_EQ(add_line(p, "{\"type\":\"stack\",\"value\":1500,\"frames\":[{\"name\":\"f\",\"kernel\":false}]}"), 0);
        CHECK_INT_EQ(set_end(p, "{\"type\":\"end\",\"kind\":\"offcpu\",\"unit\":\"ns\",\"stacks\":1,\"total\":1500,"
                                "\"from_ns\":1000,\"to_ns\":2000}"), 0);
        CHECK_STR_EQ(p->kind, "offcpu");
        CHECK_STR_EQ(p->unit, "ns");
        CHECK_INT_EQ(p->from_ns, 1000);
        CHECK_INT_EQ(p->to_ns, 2000);
        CHECK_INT_EQ(p->period_ns, 0);

        /* a count that does not match what was sent is profd's fault */
        CHECK_INT_EQ(set_end(p, "{\"type\":\"end\",\"kind\":\"cpu\",\"unit\":\"samples\",\"stacks\":2,\"total\":1500,"
                                "\"from_ns\":1000,\"to_ns\":2000}"), -EBADMSG);
        CHECK_INT_EQ(set_end(p, "{\"type\":\"end\",\"kind\":\"cpu\",\"unit\":\"samples\",\"stacks\":1,\"total\":1501,"
                                "\"from_ns\":1000,\"to_ns\":2000}"), -EBADMSG);
        CHECK_INT_EQ(set_end(p, "{\"type\":\"end\",\"kind\":\"cpu\",\"stacks\":1,\"total\":1500,"
                                "\"from_ns\":1000,\"to_ns\":2000}"), -EBADMSG);
        CHECK_STR_EQ(p->kind, "offcpu");

        /* the sampling frequency, when the end line carries it, gives the period */
        CHECK_INT_EQ(set_end(p, "{\"type\":\"end\",\"kind\":\"cpu\",\"unit\":\"samples\",\"stacks\":1,\"total\":1500,"
                                "\"from_ns\":1000,\"to_ns\":2000,\"frequency_hz\":49}"), 0);
        CHECK_INT_EQ(p->period_ns, 1000000000 / 49);
        profile_set_frequency(p, 100);
        CHECK_INT_EQ(p->period_ns, 10000000);
        CHECK_INT_EQ(set_end(p, "{\"type\":\"end\",\"kind\":\"cpu\",\"unit\":\"samples\",\"stacks\":1,\"total\":1500,"
                                "\"from_ns\":1000,\"to_ns\":2000,\"frequency_hz\":\"x\"}"), -EBADMSG);
}

static void test_many_frames_grow_the_arrays(void) {
        _cleanup_profile_ profile *p = profile_new();
        char name[32];

        for (unsigned i = 0; i < 5000; i++) {
                struct profile_frame f[2] = { { .name = "main" }, { .name = name } };

                snprintf(name, sizeof(name), "f%u", i % 1000);
                CHECK_INT_EQ(profile_add_stack(p, f, 2, i, NULL), 0);
        }
        CHECK_INT_EQ(p->n_stacks, 5000);
        CHECK_INT_EQ(p->n_frames, 1001);
        CHECK_STR_EQ(p->frames[p->stacks[4321].frames[1]].name, "f321");
        CHECK_INT_EQ(p->total, 4999ULL * 5000 / 2);
}

int main(void) {
        test_equal_frames_are_stored_once();
        test_frames_differing_in_any_field_are_distinct();
        test_strings_are_copied();
        test_all_frame_fields_are_read();
        test_stack_without_frames_keeps_its_value();
        test_malformed_lines_are_rejected();
        test_values_that_overflow_are_rejected();
        test_end_line_sets_window_and_checks_totals();
        test_many_frames_grow_the_arrays();
        TESTS_DONE();
}
