/* Specification of the pprof export (client/pprof.c): what a profile
 * becomes, read back through zlib and protobuf-c. (tests/e2e/test_exports.py
 * reads it with the real `go tool pprof`.) */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "macro.h"
#include "pprof.h"
#include "profile.h"
#include "profile.pb-c.h"
#include "tests.h"

typedef Perftools__Profiles__Profile pb_profile;

static void pb_profile_freep(pb_profile **pb) {
        if (*pb)
                perftools__profiles__profile__free_unpacked(*pb, NULL);
}

/* pprof_write into memory, gunzipped and unpacked; NULL if any step failed. */
static pb_profile *write_and_read(const profile *p) {
        _cleanup_free_ char *gz = NULL;
        _cleanup_free_ uint8_t *raw = NULL;
        size_t gz_size = 0, raw_size = 0, allocated = 0;
        z_stream z = {};
        FILE *f = open_memstream(&gz, &gz_size);
        int r, zr;

        if (!f)
                abort();
        r = pprof_write(f, p);
        fclose(f);
        CHECK_INT_EQ(r, 0);
        if (r < 0)
                return NULL;
        /* a gzip member: the magic bytes pprof looks for */
        CHECK(gz_size > 2 && (uint8_t) gz[0] == 0x1f && (uint8_t) gz[1] == 0x8b);

        if (inflateInit2(&z, 15 + 16) != Z_OK)
                abort();
        z.next_in = (uint8_t *) gz;
        z.avail_in = (uInt) gz_size;
        do {
                if (raw_size == allocated) {
                        allocated = allocated ? allocated * 2 : 4096;
                        raw = realloc(raw, allocated);
                        if (!raw)
                                abort();
                }
                z.next_out = raw + raw_size;
                z.avail_out = (uInt) (allocated - raw_size);
                zr = inflate(&z, Z_NO_FLUSH);
                raw_size = allocated - z.avail_out;
        } while (zr == Z_OK);
        inflateEnd(&z);
        CHECK_INT_EQ(zr, Z_STREAM_END);
        if (zr != Z_STREAM_END)
                return NULL;
        return perftools__profiles__profile__unpack(NULL, raw_size, raw);
}

static const char *str(const pb_profile *pb, int64_t i) {
        return i >= 0 && (size_t) i < pb->n_string_table ? pb->string_table[i] : "(out of range)";
}

static const Perftools__Profiles__Location *location(const pb_profile *pb, uint64_t id) {
        for (size_t i = 0; i < pb->n_location; i++)
                if (pb->location[i]->id == id)
                        return pb->location[i];
        return NULL;
}

static const Perftools__Profiles__Function *function(const pb_profile *pb, uint64_t id) {
        for (size_t i = 0; i < pb->n_function; i++)
                if (pb->function[i]->id == id)
                        return pb->function[i];
        return NULL;
}

static const Perftools__Profiles__Mapping *mapping(const pb_profile *pb, uint64_t id) {
        for (size_t i = 0; i < pb->n_mapping; i++)
                if (pb->mapping[i]->id == id)
                        return pb->mapping[i];
        return NULL;
}

/* Name of line j of location id, or "" */
static const char *line_name(const pb_profile *pb, uint64_t loc, size_t j) {
        const Perftools__Profiles__Location *l = location(pb, loc);
        const Perftools__Profiles__Function *fn;

        if (!l || j >= l->n_line)
                return "";
        fn = function(pb, l->line[j]->function_id);
        return fn ? str(pb, fn->name) : "";
}

static void test_cpu_profile_has_samples_and_nanoseconds(void) {
        _cleanup_profile_ profile *p = profile_new();
        _cleanup_(pb_profile_freep) pb_profile *pb = NULL;
        const struct profile_frame frames[] = {
                { .name = "main", .module = "/usr/bin/app", .build_id = "abcd", .file = "app.c", .line = 10,
                  .address = 0x1100 },
                { .name = "work", .module = "/usr/bin/app", .build_id = "abcd", .file = "app.c", .line = 20,
                  .address = 0x1200 },
                /* inlined into work, then into that: one location with three lines */
                { .name = "helper", .module = "/usr/bin/app", .file = "h.h", .line = 3, .address = 0x1200,
                  .flags = PROFILE_FRAME_INLINED },
                { .name = "leaf", .module = "/usr/bin/app", .file = "h.h", .line = 7, .address = 0x1200,
                  .flags = PROFILE_FRAME_INLINED },
                { .name = "do_syscall_64", .module = "", .address = 0xffffffff81000010ULL,
                  .flags = PROFILE_FRAME_KERNEL },
        };
        const struct profile_frame other[] = {
                { .name = "main", .module = "/usr/bin/app", .build_id = "abcd", .file = "app.c", .line = 10,
                  .address = 0x1100 },
                { .name = "_Z4calcv", .raw_name = "_Z4calcv", .module = "/usr/lib/libm.so", .build_id = "ef01",
                  .address = 0x2000 },
        };
        const Perftools__Profiles__Sample *s;
        const Perftools__Profiles__Location *l;
        const Perftools__Profiles__Mapping *m;

        CHECK_INT_EQ(profile_add_stack(p, frames, ELEMENTSOF(frames), 30, NULL), 0);
        CHECK_INT_EQ(profile_add_stack(p, other, ELEMENTSOF(other), 12, NULL), 0);
        p->from_ns = 1000000000000ULL;
        p->to_ns = 1000000000000ULL + 10 * NSEC_PER_SEC;
        profile_set_frequency(p, 100);

        pb = write_and_read(p);
        CHECK(pb);
        if (!pb)
                return;
        CHECK_STR_EQ(pb->string_table[0], "");
        CHECK_INT_EQ(pb->n_sample_type, 2);
        CHECK_STR_EQ(str(pb, pb->sample_type[0]->type), "samples");
        CHECK_STR_EQ(str(pb, pb->sample_type[0]->unit), "count");
        CHECK_STR_EQ(str(pb, pb->sample_type[1]->type), "cpu");
        CHECK_STR_EQ(str(pb, pb->sample_type[1]->unit), "nanoseconds");
        CHECK_STR_EQ(str(pb, pb->period_type->type), "cpu");
        CHECK_INT_EQ(pb->period, 10000000);
        CHECK_INT_EQ(pb->time_nanos, 1000000000000LL);
        CHECK_INT_EQ(pb->duration_nanos, 10000000000LL);

        CHECK_INT_EQ(pb->n_sample, 2);
        s = pb->sample[0];
        CHECK_INT_EQ(s->n_value, 2);
        CHECK_INT_EQ(s->value[0], 30);
        CHECK_INT_EQ(s->value[1], 30 * 10000000LL);
        /* leaf first: kernel, then work's location with its inline chain, then main */
        CHECK_INT_EQ(s->n_location_id, 3);
        CHECK_STR_EQ(line_name(pb, s->location_id[0], 0), "do_syscall_64");
        l = location(pb, s->location_id[1]);
        CHECK(l);
        if (l) {
                CHECK_INT_EQ(l->n_line, 3);
                CHECK_INT_EQ(l->address, 0x1200);
                CHECK_INT_EQ(l->line[0]->line, 7);
                CHECK_INT_EQ(l->line[2]->line, 20);
        }
        CHECK_STR_EQ(line_name(pb, s->location_id[1], 0), "leaf");
        CHECK_STR_EQ(line_name(pb, s->location_id[1], 1), "helper");
        CHECK_STR_EQ(line_name(pb, s->location_id[1], 2), "work");
        CHECK_STR_EQ(line_name(pb, s->location_id[2], 0), "main");

        /* main's location is shared by both samples */
        CHECK_INT_EQ(pb->sample[1]->n_location_id, 2);
        CHECK_INT_EQ(pb->sample[1]->location_id[1], s->location_id[2]);
        CHECK_INT_EQ(pb->sample[1]->value[0], 12);
        CHECK_INT_EQ(pb->n_location, 4);
        /* main, work, helper, leaf, do_syscall_64, _Z4calcv */
        CHECK_INT_EQ(pb->n_function, 6);

        /* one mapping per module; kernel frames in [kernel.kallsyms] */
        CHECK_INT_EQ(pb->n_mapping, 3);
        m = mapping(pb, location(pb, s->location_id[0])->mapping_id);
        CHECK(m);
        if (m) {
                CHECK_STR_EQ(str(pb, m->filename), "[kernel.kallsyms]");
                CHECK(m->memory_start == 0xffffffff81000010ULL);
        }
        m = mapping(pb, l ? l->mapping_id : 0);
        CHECK(m);
        if (m) {
                CHECK_STR_EQ(str(pb, m->filename), "/usr/bin/app");
                CHECK_STR_EQ(str(pb, m->build_id), "abcd");
                CHECK_INT_EQ(m->memory_start, 0x1100);
                CHECK_INT_EQ(m->memory_limit, 0x1201);
                CHECK_INT_EQ(m->file_offset, 0x1100);
                CHECK(m->has_functions && m->has_filenames && m->has_line_numbers && m->has_inline_frames);
        }
        m = mapping(pb, location(pb, pb->sample[1]->location_id[0])->mapping_id);
        CHECK(m);
        if (m) {
                CHECK_STR_EQ(str(pb, m->build_id), "ef01");
                CHECK(!m->has_inline_frames && !m->has_line_numbers);
        }
        /* function: name, system name and file */
        for (size_t i = 0; i < pb->n_function; i++) {
                const Perftools__Profiles__Function *fn = pb->function[i];

                if (streq(str(pb, fn->name), "work"))
                        CHECK_STR_EQ(str(pb, fn->filename), "app.c");
                if (streq(str(pb, fn->name), "_Z4calcv"))
                        CHECK_STR_EQ(str(pb, fn->system_name), "_Z4calcv");
        }
}

/* A Python stack as profd answers it (common/protocol.h): frames named by
 * qualname, module and file the .py file, address the line, build_id
 * "python-" and a hash of one function; an unnamed one in "[python]". */
#define PY_NATIVE "{\"name\":\"main\",\"module\":\"/usr/bin/python3.11\",\"kernel\":false,\"resolved\":true," \
                  "\"address\":4096,\"build_id\":\"aa11\"}"
#define PY_MODULE "{\"name\":\"<module>\",\"module\":\"/srv/app/main.py\",\"kernel\":false,\"resolved\":true," \
                  "\"address\":3,\"build_id\":\"python-0123456789abcdef\",\"file\":\"/srv/app/main.py\",\"line\":3}"
#define PY_RUN(l) "{\"name\":\"Worker.run\",\"module\":\"/srv/app/work.py\",\"kernel\":false,\"resolved\":true," \
                  "\"address\":" #l ",\"build_id\":\"python-fedcba9876543210\",\"file\":\"/srv/app/work.py\"," \
                  "\"line\":" #l "}"
#define PY_UNNAMED "{\"name\":\"[python]+0x7f0012345678\",\"module\":\"[python]\",\"kernel\":false," \
                   "\"resolved\":false,\"address\":139638129022584}"

static void add_line(profile *p, const char *text) {
        json_t *j = json_loads(text, 0, NULL);

        CHECK(j);
        CHECK_INT_EQ(profile_add_stack_line(p, j), 0);
        json_decref(j);
}

static void test_python_frames_have_file_and_line_in_one_mapping(void) {
        _cleanup_profile_ profile *p = profile_new();
        _cleanup_(pb_profile_freep) pb_profile *pb = NULL;
        const Perftools__Profiles__Mapping *m;
        const Perftools__Profiles__Location *l41, *l42;
        const Perftools__Profiles__Function *fn;

        add_line(p, "{\"type\":\"stack\",\"value\":6,\"frames\":[" PY_NATIVE "," PY_MODULE "," PY_RUN(41) "]}");
        add_line(p, "{\"type\":\"stack\",\"value\":3,\"frames\":[" PY_NATIVE "," PY_MODULE "," PY_RUN(42) "]}");
        add_line(p, "{\"type\":\"stack\",\"value\":1,\"frames\":[" PY_NATIVE "," PY_UNNAMED "]}");
        CHECK_INT_EQ(profile_set_kind(p, "cpu", "samples"), 0);

        pb = write_and_read(p);
        CHECK(pb);
        if (!pb)
                return;
        CHECK_INT_EQ(pb->n_sample, 3);
        /* the interpreter's file and one [python] mapping, not one per .py
         * file or per function; the program is the interpreter */
        CHECK_INT_EQ(pb->n_mapping, 2);
        CHECK_STR_EQ(str(pb, pb->mapping[0]->filename), "/usr/bin/python3.11");
        CHECK_STR_EQ(str(pb, pb->mapping[0]->build_id), "aa11");
        m = pb->mapping[1];
        CHECK_STR_EQ(str(pb, m->filename), "[python]");
        /* a "python-" build_id names a function, not a file to look up */
        CHECK_STR_EQ(str(pb, m->build_id), "");
        CHECK_INT_EQ(m->memory_start, 0);
        CHECK_INT_EQ(m->memory_limit, 0);
        CHECK(m->has_functions && m->has_filenames && m->has_line_numbers && !m->has_inline_frames);

        /* leaf first: Worker.run at its line, then <module>, then main */
        CHECK_INT_EQ(pb->sample[0]->n_location_id, 3);
        CHECK_INT_EQ(pb->sample[1]->n_location_id, 3);
        l41 = location(pb, pb->sample[0]->location_id[0]);
        l42 = location(pb, pb->sample[1]->location_id[0]);
        CHECK(l41 && l42 && l41 != l42);
        if (!l41 || !l42)
                return;
        CHECK_INT_EQ(l41->mapping_id, m->id);
        CHECK_INT_EQ(l41->address, 0);
        CHECK_INT_EQ(l41->n_line, 1);
        CHECK_INT_EQ(l41->line[0]->line, 41);
        CHECK_INT_EQ(l42->line[0]->line, 42);
        /* two lines of one function */
        CHECK_INT_EQ(l41->line[0]->function_id, l42->line[0]->function_id);
        fn = function(pb, l41->line[0]->function_id);
        CHECK(fn);
        if (fn) {
                CHECK_STR_EQ(str(pb, fn->name), "Worker.run");
                CHECK_STR_EQ(str(pb, fn->filename), "/srv/app/work.py");
        }
        CHECK_STR_EQ(line_name(pb, pb->sample[0]->location_id[1], 0), "<module>");
        CHECK_INT_EQ(location(pb, pb->sample[0]->location_id[1])->line[0]->line, 3);
        /* the native frame keeps its mapping and address */
        CHECK_INT_EQ(location(pb, pb->sample[0]->location_id[2])->address, 4096);
        CHECK_INT_EQ(location(pb, pb->sample[0]->location_id[2])->mapping_id, pb->mapping[0]->id);

        /* unnamed: in [python] too, its name kept, no address in a file */
        l41 = location(pb, pb->sample[2]->location_id[0]);
        CHECK(l41);
        if (l41) {
                CHECK_INT_EQ(l41->mapping_id, m->id);
                CHECK_INT_EQ(l41->address, 0);
        }
        CHECK_STR_EQ(line_name(pb, pb->sample[2]->location_id[0], 0), "[python]+0x7f0012345678");
}

static void test_cpu_profile_without_period_has_only_counts(void) {
        _cleanup_profile_ profile *p = profile_new();
        _cleanup_(pb_profile_freep) pb_profile *pb = NULL;
        const struct profile_frame f = { .name = "main", .module = "/a" };

        CHECK_INT_EQ(profile_add_stack(p, &f, 1, 5, NULL), 0);
        pb = write_and_read(p);
        CHECK(pb);
        if (!pb)
                return;
        CHECK_INT_EQ(pb->n_sample_type, 1);
        CHECK_STR_EQ(str(pb, pb->sample_type[0]->type), "samples");
        CHECK_INT_EQ(pb->sample[0]->value[0], 5);
}

static void test_offcpu_and_wakeup_are_nanoseconds(void) {
        static const char *const kinds[][2] = { { "offcpu", "off_cpu" }, { "wakeup", "wakeup" } };

        for (size_t k = 0; k < ELEMENTSOF(kinds); k++) {
                _cleanup_profile_ profile *p = profile_new();
                _cleanup_(pb_profile_freep) pb_profile *pb = NULL;
                const struct profile_frame f[] = { { .name = "main", .module = "/a" },
                                                   { .name = "schedule", .module = "[kernel.kallsyms]",
                                                     .flags = PROFILE_FRAME_KERNEL } };

                CHECK_INT_EQ(profile_set_kind(p, kinds[k][0], "ns"), 0);
                CHECK_INT_EQ(profile_add_stack(p, f, 2, 1500000, "app-7"), 0);
                CHECK_INT_EQ(profile_add_stack(p, f, 1, 500, NULL), 0);
                pb = write_and_read(p);
                CHECK(pb);
                if (!pb)
                        continue;
                CHECK_INT_EQ(pb->n_sample_type, 1);
                CHECK_STR_EQ(str(pb, pb->sample_type[0]->type), kinds[k][1]);
                CHECK_STR_EQ(str(pb, pb->sample_type[0]->unit), "nanoseconds");
                CHECK_INT_EQ(pb->sample[0]->value[0], 1500000);
                /* a grouped stack carries its group as a label */
                CHECK_INT_EQ(pb->sample[0]->n_label, 1);
                if (pb->sample[0]->n_label == 1) {
                        CHECK_STR_EQ(str(pb, pb->sample[0]->label[0]->key), "group");
                        CHECK_STR_EQ(str(pb, pb->sample[0]->label[0]->str), "app-7");
                }
                CHECK_INT_EQ(pb->sample[1]->n_label, 0);
                /* kernel frames sent with their module keep it: one mapping each */
                CHECK_INT_EQ(pb->n_mapping, 2);
        }
}

static void test_empty_stack_and_empty_profile(void) {
        _cleanup_profile_ profile *p = profile_new();
        _cleanup_(pb_profile_freep) pb_profile *pb = NULL, *empty = NULL;
        const struct profile_frame f = { .name = "main", .module = "/a" };

        /* no stacks: still a valid profile */
        empty = write_and_read(p);
        CHECK(empty);
        if (empty)
                CHECK_INT_EQ(empty->n_sample, 0);

        CHECK_INT_EQ(profile_add_stack(p, &f, 1, 3, NULL), 0);
        CHECK_INT_EQ(profile_add_stack(p, NULL, 0, 4, NULL), 0);
        pb = write_and_read(p);
        CHECK(pb);
        if (!pb)
                return;
        CHECK_INT_EQ(pb->n_sample, 2);
        CHECK_INT_EQ(pb->sample[1]->n_location_id, 1);
        CHECK_STR_EQ(line_name(pb, pb->sample[1]->location_id[0], 0), "[unknown]");
        /* the stand-in is not frame 0 ("main") */
        CHECK(pb->sample[1]->location_id[0] != pb->sample[0]->location_id[0]);
}

static void test_values_pprof_cannot_hold_are_refused(void) {
        _cleanup_profile_ profile *p = profile_new();
        const struct profile_frame f = { .name = "main", .module = "/a" };
        char *buf = NULL;
        size_t size = 0;
        FILE *out;

        CHECK_INT_EQ(profile_add_stack(p, &f, 1, (uint64_t) INT64_MAX / 1000, NULL), 0);
        profile_set_frequency(p, 1000); /* 1 ms period: the time overflows int64 */
        out = open_memstream(&buf, &size);
        CHECK_INT_EQ(pprof_write(out, p), -EOVERFLOW);
        fclose(out);
        free(buf);
}

int main(void) {
        test_cpu_profile_has_samples_and_nanoseconds();
        test_cpu_profile_without_period_has_only_counts();
        test_offcpu_and_wakeup_are_nanoseconds();
        test_empty_stack_and_empty_profile();
        test_values_pprof_cannot_hold_are_refused();
        test_python_frames_have_file_and_line_in_one_mapping();
        TESTS_DONE();
}
