/* The quality report: answered stacks are counted complete, unknown or
 * truncated by how their user part ended (kernel-only stacks complete,
 * stacks stored before schema 6 unknown), unresolved by every reason their
 * user frames have; only loss counters count as lost; the report survives
 * its JSON form; the summary line reads as documented. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../bpf/profd.h"
#include "macro.h"
#include "quality-sum.h"
#include "tests.h"

static struct store_frame_out user(bool resolved, uint8_t why) {
        return (struct store_frame_out) { .name = "f", .module = "/bin/app", .has_address = true,
                                          .resolved = resolved, .unresolved = why };
}

static void test_stacks_are_classified_by_their_end(void) {
        struct quality q = {};
        struct store_frame_out ok[] = { user(true, 0), user(true, 0) };
        struct store_frame_out kernel[] = { { .name = "schedule", .module = "[kernel.kallsyms]", .kernel = true,
                                              .has_address = true, .resolved = true } };
        struct store_frame_out lost[] = { { .name = "[lost]", .module = "[lost]", .has_address = false } };

        quality_add_stack(&q, &(struct store_stack_out) { .frames = ok, .n_frames = 2, .value = 100,
                                                          .user_end = PROFD_END_COMPLETE });
        /* a kernel thread: no user stack, complete */
        quality_add_stack(&q, &(struct store_stack_out) { .frames = kernel, .n_frames = 1, .value = 7,
                                                          .user_end = PROFD_END_COMPLETE });
        quality_add_stack(&q, &(struct store_stack_out) { .frames = ok, .n_frames = 2, .value = 3,
                                                          .user_end = PROFD_END_NO_PROCESS });
        quality_add_stack(&q, &(struct store_stack_out) { .frames = ok, .n_frames = 2, .value = 4,
                                                          .user_end = PROFD_END_PENDING });
        for (int e = PROFD_END_NO_MAPPING; e <= PROFD_END_CFA_STUCK; e++)
                quality_add_stack(&q, &(struct store_stack_out) { .frames = ok, .n_frames = 2, .value = 10 + e,
                                                                  .user_end = e });
        quality_add_stack(&q, &(struct store_stack_out) { .frames = lost, .n_frames = 1, .value = 5,
                                                          .user_end = STORE_END_LOST });
        quality_add_stack(&q, &(struct store_stack_out) { .frames = ok, .n_frames = 2, .value = 6,
                                                          .user_end = STORE_END_UNKNOWN });
        /* an end this profd does not know is not claimed complete */
        quality_add_stack(&q, &(struct store_stack_out) { .frames = ok, .n_frames = 2, .value = 1,
                                                          .user_end = PROFD_END__MAX });

        CHECK_INT_EQ(q.complete, 107);
        CHECK_INT_EQ(q.truncated[QUALITY_TRUNC_NO_TABLE], 7);
        CHECK_INT_EQ(q.truncated[QUALITY_TRUNC_NO_MAPPING], 13);
        CHECK_INT_EQ(q.truncated[QUALITY_TRUNC_UNSUPPORTED], 14);
        CHECK_INT_EQ(q.truncated[QUALITY_TRUNC_READ_FAULT], 15);
        CHECK_INT_EQ(q.truncated[QUALITY_TRUNC_DEPTH], 16);
        CHECK_INT_EQ(q.truncated[QUALITY_TRUNC_FP_END], 17);
        CHECK_INT_EQ(q.truncated[QUALITY_TRUNC_CFA_STUCK], 18);
        CHECK_INT_EQ(q.truncated[QUALITY_TRUNC_STACK_LOST], 5);
        CHECK_INT_EQ(q.unknown, 7);
        CHECK_INT_EQ(q.total, 107 + 7 + 13 + 14 + 15 + 16 + 17 + 18 + 5 + 7);
        CHECK_INT_EQ(q.complete + quality_truncated_total(&q) + q.unknown, q.total);
        /* the [lost] frame is a lost stack, not an unresolved frame */
        CHECK_INT_EQ(q.unresolved, 0);
}

static void test_unresolved_counts_each_reason_once_per_stack(void) {
        struct quality q = {};
        struct store_frame_out two[] = { user(true, 0), user(false, STORE_UNRESOLVED_NO_SYMBOLS),
                                         user(false, STORE_UNRESOLVED_NO_SYMBOLS),
                                         user(false, STORE_UNRESOLVED_JIT_WITHOUT_MAP) };
        struct store_frame_out old[] = { user(false, STORE_UNRESOLVED_NONE) };
        struct store_frame_out kernel_unresolved[] = { { .name = "0xffff", .module = "[kernel.kallsyms]",
                                                         .kernel = true, .has_address = true } };

        quality_add_stack(&q, &(struct store_stack_out) { .frames = two, .n_frames = 4, .value = 10 });
        quality_add_stack(&q, &(struct store_stack_out) { .frames = old, .n_frames = 1, .value = 3 });
        quality_add_stack(&q, &(struct store_stack_out) { .frames = kernel_unresolved, .n_frames = 1, .value = 2 });
        CHECK_INT_EQ(q.unresolved, 13);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_NO_SYMBOLS], 10);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_JIT_WITHOUT_MAP], 10);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_UNKNOWN], 3);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_NO_FILE], 0);
}

/* Python frames without a name count under their own reasons, by the
 * names status gives them; a named Python frame (resolved) under none. */
static void test_python_reasons(void) {
        struct quality q = {};
        struct store_frame_out frames[] = { user(true, 0), user(false, STORE_UNRESOLVED_PYTHON_NOT_CODE),
                                            user(false, STORE_UNRESOLVED_PYTHON_EXITED) };
        struct store_frame_out one[] = { user(false, STORE_UNRESOLVED_PYTHON_NO_RUNTIME),
                                         user(false, STORE_UNRESOLVED_PYTHON_READ_CODE),
                                         user(false, STORE_UNRESOLVED_PYTHON_READ_STRING),
                                         user(false, STORE_UNRESOLVED_PYTHON_BAD_STRING) };
        _cleanup_free_ char *line = NULL;
        json_t *o;

        quality_add_stack(&q, &(struct store_stack_out) { .frames = frames, .n_frames = 1, .value = 1 });
        quality_add_stack(&q, &(struct store_stack_out) { .frames = frames, .n_frames = 3, .value = 10 });
        quality_add_stack(&q, &(struct store_stack_out) { .frames = one, .n_frames = 4, .value = 5 });
        CHECK_INT_EQ(q.unresolved, 15);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_PYTHON_NOT_CODE], 10);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_PYTHON_EXITED], 10);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_PYTHON_NO_RUNTIME], 5);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_PYTHON_READ_CODE], 5);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_PYTHON_READ_STRING], 5);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_PYTHON_BAD_STRING], 5);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_UNKNOWN], 0);
        o = quality_to_json(&q);
        CHECK_INT_EQ(json_integer_value(json_object_get(json_object_get(o, "unresolved_by"), "python_not_code")), 10);
        CHECK_INT_EQ(json_integer_value(json_object_get(json_object_get(o, "unresolved_by"), "python_exited")), 10);
        json_decref(o);
        line = quality_summary(&q);
        CHECK(line && strstr(line, "Python: not code"));
}

/* Java frames without a name count under their reasons; a compiled one
 * named after its method alone (its inlined calls not known) counts
 * under hotspot_no_scope, but not as unresolved: it has a name. */
static void test_hotspot_reasons(void) {
        struct quality q = {};
        struct store_frame_out alone[] = { user(true, 0), user(true, STORE_UNRESOLVED_HOTSPOT_NO_SCOPE) };
        struct store_frame_out unnamed[] = { user(true, STORE_UNRESOLVED_HOTSPOT_NO_SCOPE),
                                             user(false, STORE_UNRESOLVED_HOTSPOT_READ),
                                             user(false, STORE_UNRESOLVED_HOTSPOT_BAD),
                                             user(false, STORE_UNRESOLVED_HOTSPOT_EXITED),
                                             user(false, STORE_UNRESOLVED_HOTSPOT_NO_RUNTIME) };
        _cleanup_free_ char *line = NULL;
        json_t *o;

        quality_add_stack(&q, &(struct store_stack_out) { .frames = alone, .n_frames = 2, .value = 7 });
        quality_add_stack(&q, &(struct store_stack_out) { .frames = unnamed, .n_frames = 5, .value = 3 });
        CHECK_INT_EQ(q.total, 10);
        CHECK_INT_EQ(q.unresolved, 3);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_HOTSPOT_NO_SCOPE], 10);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_HOTSPOT_READ], 3);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_HOTSPOT_BAD], 3);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_HOTSPOT_EXITED], 3);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_HOTSPOT_NO_RUNTIME], 3);
        CHECK_INT_EQ(q.unresolved_by[QUALITY_UNRES_UNKNOWN], 0);
        o = quality_to_json(&q);
        CHECK_INT_EQ(json_integer_value(json_object_get(json_object_get(o, "unresolved_by"), "hotspot_no_scope")), 10);
        json_decref(o);
        line = quality_summary(&q);
        CHECK(line && strstr(line, "Java: inlined calls unknown"));
}

/* A stack classified once (its end and unresolved mask) and added by
 * class adds what adding the stack itself adds: the fleet's answers add
 * each host's part of a stack that way. */
static void test_adding_by_class_is_adding_the_stack(void) {
        struct store_frame_out frames[] = { user(true, 0), user(false, STORE_UNRESOLVED_NO_FILE),
                                            user(false, STORE_UNRESOLVED_UNKNOWN_MAPPING),
                                            user(false, STORE_UNRESOLVED_NONE),
                                            { .name = "[lost]", .module = "[lost]" },
                                            { .name = "0xffff", .module = "[kernel.kallsyms]", .kernel = true,
                                              .has_address = true } };
        const int ends[] = { PROFD_END_COMPLETE, PROFD_END_DEPTH, STORE_END_LOST, STORE_END_UNKNOWN };

        CHECK_INT_EQ(quality_unresolved_mask(&(struct store_stack_out) { .frames = frames, .n_frames = 1 }), 0);
        CHECK_INT_EQ(quality_unresolved_mask(&(struct store_stack_out) { .frames = frames, .n_frames = 6 }),
                     (1u << QUALITY_UNRES_NO_FILE) | (1u << QUALITY_UNRES_UNKNOWN_MAPPING) |
                     (1u << QUALITY_UNRES_UNKNOWN));
        for (size_t e = 0; e < ELEMENTSOF(ends); e++)
                for (size_t n = 0; n <= ELEMENTSOF(frames); n++) {
                        struct store_stack_out so = { .frames = frames + (ELEMENTSOF(frames) - n), .n_frames = n,
                                                      .value = 10 + n, .user_end = ends[e] };
                        struct quality a = {}, b = {};

                        quality_add_stack(&a, &so);
                        quality_add_class(&b, so.value, so.user_end, quality_unresolved_mask(&so));
                        CHECK(memcmp(&a, &b, sizeof(a)) == 0);
                }
}

static void test_only_losses_count_as_lost(void) {
        struct quality q = {};

        quality_add_drop(&q, "map_full", 5);
        quality_add_drop(&q, "map_full", 2);
        quality_add_drop(&q, "store_write_failed", 1);
        /* the unwinder's truncation counters are counted per stack instead */
        quality_add_drop(&q, "truncated_no_table", 99);
        CHECK_INT_EQ(q.lost[QUALITY_LOST_MAP_FULL], 7);
        CHECK_INT_EQ(q.lost[QUALITY_LOST_STORE_WRITE_FAILED], 1);
        uint64_t sum = 0;
        for (size_t i = 0; i < _QUALITY_LOST_MAX; i++)
                sum += q.lost[i];
        CHECK_INT_EQ(sum, 8);
}

static void test_json_round_trip(void) {
        struct quality q = { .total = 100, .complete = 80, .unknown = 5, .unresolved = 9 }, back;
        json_t *o;

        q.truncated[QUALITY_TRUNC_DEPTH] = 15;
        q.unresolved_by[QUALITY_UNRES_NO_FILE] = 9;
        q.lost[QUALITY_LOST_RINGBUF_FULL] = 2;
        o = quality_to_json(&q);
        CHECK(o != NULL);
        CHECK_INT_EQ(json_integer_value(json_object_get(o, "truncated_total")), 15);
        CHECK_INT_EQ(json_integer_value(json_object_get(json_object_get(o, "truncated"), "depth")), 15);
        CHECK_INT_EQ(quality_from_json(o, &back), 0);
        json_t *again = quality_to_json(&back);
        CHECK(json_equal(o, again));
        CHECK_INT_EQ(back.lost[QUALITY_LOST_RINGBUF_FULL], 2);
        CHECK_INT_EQ(back.unresolved_by[QUALITY_UNRES_NO_FILE], 9);
        json_decref(again);
        json_object_set_new(o, "complete", json_integer(-1));
        CHECK_INT_EQ(quality_from_json(o, &back), -EBADMSG);
        json_decref(o);
}

static void test_summary_line(void) {
        struct quality q = { .total = 1000, .complete = 978, .unresolved = 3 };
        char *s;

        q.truncated[QUALITY_TRUNC_NO_TABLE] = 12;
        q.truncated[QUALITY_TRUNC_DEPTH] = 7;
        q.unknown = 3;
        q.unresolved_by[QUALITY_UNRES_NO_SYMBOLS] = 3;
        s = quality_summary(&q);
        CHECK_STR_EQ(s, "quality: 97.8% complete stacks; 1.9% truncated (no table yet 1.2%, depth 0.7%); "
                        "0.3% end not recorded; 0.3% unresolved (no symbols 0.3%); "
                        "lost: none");
        free(s);

        q = (struct quality) { .total = 100000, .complete = 100000 };
        q.lost[QUALITY_LOST_MAP_FULL] = 12;
        q.lost[QUALITY_LOST_STORE_WRITE_FAILED] = 1;
        s = quality_summary(&q);
        CHECK_STR_EQ(s, "quality: 100.0% complete stacks; 0.0% truncated; 0.0% unresolved; "
                        "lost: map full 12, store write failed 1 (host-wide)");
        free(s);

        /* not zero but below what one decimal shows */
        q = (struct quality) { .total = 100000, .complete = 99999 };
        q.truncated[QUALITY_TRUNC_READ_FAULT] = 1;
        s = quality_summary(&q);
        CHECK_STR_EQ(s, "quality: 100.0% complete stacks; <0.1% truncated (read fault <0.1%); 0.0% unresolved; "
                        "lost: none");
        free(s);

        q = (struct quality) { .total = 0 };
        s = quality_summary(&q);
        CHECK_STR_EQ(s, "quality: no samples; lost: none");
        free(s);

        q = (struct quality) { .total = 200, .complete = 150, .partial = true };
        s = quality_summary(&q);
        CHECK_STR_EQ(s, "quality: 75.0% complete stacks; 25.0% not complete (profctl query --quality tells why); "
                        "lost: none");
        free(s);
}

static void test_reports_add_up(void) {
        struct quality a = { .total = 10, .complete = 6, .unknown = 1, .unresolved = 2 }, b = a, sum = {};
        json_t *hosts;

        a.truncated[QUALITY_TRUNC_DEPTH] = 3;
        a.unresolved_by[QUALITY_UNRES_NO_FILE] = 2;
        a.lost[QUALITY_LOST_MAP_FULL] = 5;
        b.partial = true;
        b.lost[QUALITY_LOST_RINGBUF_FULL] = 1;
        quality_add(&sum, &a);
        quality_add(&sum, &b);
        CHECK_INT_EQ(sum.total, 20);
        CHECK_INT_EQ(sum.complete, 12);
        CHECK_INT_EQ(sum.unknown, 2);
        CHECK_INT_EQ(sum.truncated[QUALITY_TRUNC_DEPTH], 3);
        CHECK_INT_EQ(sum.unresolved, 4);
        CHECK_INT_EQ(sum.unresolved_by[QUALITY_UNRES_NO_FILE], 2);
        CHECK_INT_EQ(sum.lost[QUALITY_LOST_MAP_FULL], 5);
        CHECK_INT_EQ(sum.lost[QUALITY_LOST_RINGBUF_FULL], 1);
        CHECK(sum.partial);
        /* a fleet answer's reports per host */
        hosts = json_pack("{s:o, s:o}", "a", quality_to_json(&a), "b", quality_to_json(&b));
        CHECK_INT_EQ(quality_by_host_check(hosts), 0);
        json_object_set_new(hosts, "c", json_string("x"));
        CHECK_INT_EQ(quality_by_host_check(hosts), -EBADMSG);
        json_decref(hosts);
        CHECK_INT_EQ(quality_by_host_check(NULL), -EBADMSG);
}

int main(void) {
        test_stacks_are_classified_by_their_end();
        test_unresolved_counts_each_reason_once_per_stack();
        test_adding_by_class_is_adding_the_stack();
        test_python_reasons();
        test_hotspot_reasons();
        test_only_losses_count_as_lost();
        test_json_round_trip();
        test_summary_line();
        test_reports_add_up();
        TESTS_DONE();
}
